// Structural facts about a graph: users, program order, enclosing loops.
#include "tilejit/error.h"
#include "tilejit/passes/passes.h"

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
      if (n.op == Op::For) {
        const auto body = static_cast<uint32_t>(g.int_at(id, 0));
        info.region_parent[body] = r;
        walk(body, id);
        info.region_end[i] = next - 1;
      } else if (n.op == Op::If) {
        for (int k = 0; k < 2; ++k) {
          const auto b = static_cast<uint32_t>(g.int_at(id, k));
          info.region_parent[b] = r;
          walk(b, loop);
        }
        info.region_end[i] = next - 1;
      }
    }
  }
};
}  // namespace

GraphInfo analyze(const ir::Graph& g) {
  GraphInfo info;
  info.users.resize(g.size());
  info.position.assign(g.size(), -1);
  info.loop.assign(g.size(), ir::kNoNode);
  info.region_end.assign(g.size(), -1);
  info.region_parent.assign(g.num_regions(), 0);
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

bool is_value(const ir::Graph& g, NodeId id) {
  switch (g.node(id).op) {
    case Op::ParamTensor: case Op::ParamTensorArray: case Op::ArrayElem: case Op::MergeView: case Op::MakeView:
    case Op::Store: case Op::AtomicAdd: case Op::DescStore: case Op::DescPrefetch:
    case Op::For: case Op::If: case Op::Yield:
      return false;
    default:
      return true;
  }
}

}  // namespace tilejit::passes
