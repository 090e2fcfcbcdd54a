// Loop-invariant code motion for scalars and tensor views (a view built once is a descriptor built once).
#include <unordered_map>
#include <unordered_set>

#include "passes/motion.h"
#include "passes/rewrite.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using ir::Op;

namespace {

using detail::movable;

/// One level of hoisting: nodes of each loop body that depend only on values
/// defined before the loop move in front of it. Returns false when none moves.
bool hoist_once(const ir::Graph& g, ir::Graph& out) {
  const GraphInfo info = analyze(g);
  std::unordered_map<NodeId, std::vector<NodeId>> hoisted;  // For -> body nodes to move, in order
  std::unordered_set<NodeId> moving;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto loop = static_cast<NodeId>(i);
    if (g.node(loop).op != Op::For || info.position[i] < 0) continue;
    const int start = info.position[i];
    for (NodeId id : g.region(ir::loop_body(g, loop)).nodes) {
      if (!movable(g, id)) continue;
      bool invariant = true;
      for (NodeId o : g.operands(id))
        invariant = invariant && (info.position[static_cast<size_t>(o)] < start || moving.count(o));
      if (!invariant) continue;
      hoisted[loop].push_back(id);
      moving.insert(id);
    }
  }
  if (moving.empty()) return false;
  detail::Rewriter rw(g);
  out = rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId {
    auto it = hoisted.find(old);
    if (it != hoisted.end())
      for (NodeId h : it->second) r.visit_node(h);
    return ir::kNoNode;
  });
  return true;
}

}  // namespace

ir::Graph hoist_invariants(const ir::Graph& g) {
  ir::Graph cur = g;
  for (int round = 0; round < 16; ++round) {
    ir::Graph next;
    if (!hoist_once(cur, next)) break;
    cur = std::move(next);
  }
  return cur;
}

}  // namespace tilejit::passes
