// Views made after a loop from values defined before it move in front of that loop, so that their device-built
// descriptors are built before the loop rather than between its last products and the epilogue.
//
// A user writes the view where it is used: `descriptor_store(y.rows(0, end), {m, n}, acc)` after a K loop, with
// `end` loaded before it (sample 11's grouped GEMM). Built there, the descriptor's global writes and proxy fences
// sit between the loop's last wgmma and the epilogue, where ptxas then serialized every wgmma of the loop (C7514:
// 405 / 672 TFLOP/s on the grouped GEMM's two shapes); built before the loop they are not. Only views outside
// every loop move: one rebuilt per iteration first waits for the previous iteration's stores through it
// (emit_tma.cpp), a wait that must stay after this iteration's loop.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "passes/motion.h"
#include "passes/rewrite.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using detail::movable;
using ir::Op;

namespace {

bool is_view(Op op) { return op == Op::MakeView || op == Op::MergeView; }

/// The view and the movable nodes of its region it is computed from, in program order.
std::vector<NodeId> view_group(const ir::Graph& g, const GraphInfo& info, NodeId view) {
  const uint32_t r = g.node(view).region;
  std::vector<NodeId> group{view}, worklist{view};
  std::unordered_set<NodeId> seen{view};
  while (!worklist.empty()) {
    const NodeId x = worklist.back();
    worklist.pop_back();
    for (NodeId o : g.operands(x)) {
      if (g.node(o).region != r || !movable(g, o) || !seen.insert(o).second) continue;
      group.push_back(o);
      worklist.push_back(o);
    }
  }
  std::sort(group.begin(), group.end(), [&](NodeId a, NodeId b) { return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)]; });
  return group;
}

}  // namespace

ir::Graph early_views(const ir::Graph& g) {
  const GraphInfo info = analyze(g);
  auto pos = [&](NodeId id) { return info.position[static_cast<size_t>(id)]; };
  std::unordered_map<NodeId, std::vector<NodeId>> before;  // For -> nodes to visit in front of it, in program order
  std::unordered_map<NodeId, NodeId> moving;                // node -> the loop it moves in front of
  for (size_t i = 0; i < g.size(); ++i) {
    const auto view = static_cast<NodeId>(i);
    if (!is_view(g.node(view).op) || pos(view) < 0 || info.in_loop(view) || moving.count(view)) continue;
    const std::vector<NodeId> group = view_group(g, info, view);
    const std::unordered_set<NodeId> in_group(group.begin(), group.end());
    int ready = -1;  // the position after which every value the group reads from outside it exists
    for (NodeId x : group)
      for (NodeId o : g.operands(x))
        if (!in_group.count(o)) ready = std::max(ready, pos(o));
    // The first loop of the view's region that starts after `ready` and before the view.
    NodeId target = ir::kNoNode;
    for (NodeId l : g.region(g.node(view).region).nodes) {
      if (pos(l) >= pos(view)) break;
      if (g.node(l).op == Op::For && pos(l) > ready) {
        target = l;
        break;
      }
    }
    if (target == ir::kNoNode) continue;
    // A scalar another view already moves in front of a later loop would be defined after this view: leave it.
    const bool clash = std::any_of(group.begin(), group.end(), [&](NodeId x) {
      const auto it = moving.find(x);
      return it != moving.end() && pos(it->second) > pos(target);
    });
    if (clash) continue;
    for (NodeId x : group)
      if (pos(x) > pos(target) && moving.emplace(x, target).second) before[target].push_back(x);
  }
  if (moving.empty()) return g;
  detail::Rewriter rw(g);
  return rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId {
    if (auto it = before.find(old); it != before.end())
      for (NodeId x : it->second) r.visit_node(x);
    return ir::kNoNode;
  });
}

}  // namespace tilejit::passes
