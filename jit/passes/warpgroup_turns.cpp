// Warpgroup turns (see warpgroup_turns.h): whether the consumer warpgroups issue their products in turns.
#include "tilejit/passes/warpgroup_turns.h"

#include "tilejit/passes/graph_info.h"

namespace tilejit::passes {

// Named barriers 0-15 exist and 0 and 1 are taken: the 8 consumer warpgroups of num_warps 32 (its largest value)
// fit, so no kernel can have more warpgroups than barriers.
static_assert(32 / 4 <= 16 - WarpgroupTurns::first_barrier, "a named barrier per consumer warpgroup");

WarpgroupTurns plan_warpgroup_turns(const ir::Graph& g, const MmaPlan& mma, const LoopPipelinePlan& pipe,
                                    const WarpRoles& roles) {
  WarpgroupTurns turns;
  if (g.pingpong == Pingpong::off) return turns;
  // Asked for: a refusal is a performance note. Left to tilejit: turns where they clearly pay (below), silently.
  const bool asked = g.pingpong == Pingpong::on;
  const auto refuse = [&](std::string why) {
    if (asked) turns.not_applied = std::move(why);
    return turns;
  };
  if (!roles.on())
    return refuse(roles.not_applied.empty()
                      ? std::string("the kernel has no producer warpgroup (warp_specialize=0)")
                      : "the kernel has no producer warpgroup (" + roles.not_applied + ")");
  const int warpgroups = roles.consumer_threads / 128;
  if (warpgroups < 2)
    return refuse("num_warps=" + std::to_string(g.num_warps) +
                  " makes one consumer warpgroup; turns need two or more (num_warps 8 or more)");
  bool rotated = false;
  for (NodeId f : roles.loops) {
    const PipelinedLoop& p = pipe.loops.at(f);
    if (p.dots.size() < 2)
      return refuse("the loop at " + source_line(g, f) +
                    " issues one product per iteration: the warpgroups have no work between products to overlap");
    for (NodeId d : p.dots) {
      if (g.node(d).region != ir::loop_body(g, f))
        return refuse("the dot at " + source_line(g, d) + " lies inside an if_then of the loop at " + source_line(g, f) +
                      " (turns are taken around products of the loop body itself)");
      const MmaDot& m = mma.dots.at(d);
      if (m.a.k_major_copy || m.b.k_major_copy)
        return refuse("the dot at " + source_line(g, d) +
                      " copies an operand K-major before its products, which ends with a barrier of every consumer");
    }
    rotated = rotated || p.first != ir::kNoNode;
  }
  // Left to tilejit: where overlap_products rotated the loop (its S and the previous block's P V issued in one
  // turn, then the softmax), which is FlashAttention-3's schedule (warpgroup_turns.h: what was measured).
  if (!asked && !rotated) return turns;
  turns.loops = roles.loops;
  turns.warpgroups = warpgroups;
  return turns;
}

}  // namespace tilejit::passes
