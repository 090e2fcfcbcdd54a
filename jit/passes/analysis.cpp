// Structural facts about a graph: users, program order, enclosing loops.
#include "tilejit/error.h"
#include "tilejit/passes/graph_info.h"

namespace tilejit::passes {

using ir::Op;

namespace {
struct Walker {
  const ir::Graph& g;
  GraphInfo& info;
  int next = 0;
  void walk(uint32_t r, NodeId loop) {
    for (NodeId id : g.region(r).nodes) {
      const auto i = static_cast<size_t>(id);
      info.position[i] = next++;
      info.loop[i] = loop;
      const ir::Node& n = g.node(id);
      for (uint32_t sub : ir::regions_of(g, id)) walk(sub, n.op == Op::For ? id : loop);
    }
  }
};
}  // namespace

GraphInfo analyze(const ir::Graph& g) {
  GraphInfo info;
  info.users.resize(g.size());
  info.position.assign(g.size(), -1);
  info.loop.assign(g.size(), ir::kNoNode);
  Walker w{g, info};
  w.walk(0, ir::kNoNode);
  std::vector<NodeId> by_position(g.size(), ir::kNoNode);
  for (size_t id = 0; id < g.size(); ++id)
    if (info.position[id] >= 0) by_position[static_cast<size_t>(info.position[id])] = static_cast<NodeId>(id);
  for (NodeId id : by_position) {
    if (id == ir::kNoNode) continue;
    for (NodeId o : g.operands(id)) {
      auto& u = info.users[static_cast<size_t>(o)];
      if (u.empty() || u.back() != id) u.push_back(id);
    }
  }
  return info;
}

std::string source_line(const ir::Graph& g, NodeId id) {
  const ir::Location& l = g.location(id);
  if (l.file.empty()) return "%" + std::to_string(id);
  const auto slash = l.file.find_last_of('/');
  return (slash == std::string::npos ? l.file : l.file.substr(slash + 1)) + ":" + std::to_string(l.line);
}

bool is_value(const ir::Graph& g, NodeId id) {
  if (ir::is_schedule_op(g.node(id).op)) return false;
  switch (g.node(id).op) {
    case Op::ParamTensor: case Op::ParamTensorArray: case Op::ArrayElem: case Op::MergeView: case Op::MakeView:
    case Op::Store: case Op::AtomicAdd: case Op::DescStore: case Op::DescPrefetch:
    case Op::For: case Op::If: case Op::Reduce: case Op::Yield:
      return false;
    default:
      return true;
  }
}

bool is_elementwise(Op op) {
  switch (op) {
    case Op::Cast: case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem: case Op::Min: case Op::Max:
    case Op::And: case Op::Or: case Op::Xor: case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt:
    case Op::Ge: case Op::Neg: case Op::Not: case Op::Abs: case Op::Exp: case Op::Exp2: case Op::Log: case Op::Log2:
    case Op::Sqrt: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Sigmoid: case Op::Erf:
    case Op::Where:
      return true;
    default:
      return false;
  }
}

}  // namespace tilejit::passes
