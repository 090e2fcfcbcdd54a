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

}  // namespace tilejit::passes
