// WarpgroupTurns: the consumer warpgroups of a warp-specialized loop with several products per iteration take
// turns at the tensor cores (Config::pingpong; FlashAttention-3's "ping-pong" of two consumer warpgroups).
//
// In attention's loop every warpgroup issues its products (S = Q K^T, P V) and then computes the softmax of its
// rows on the CUDA cores, during which the tensor cores have nothing of that warpgroup's to do. When the
// warpgroups run in step, they all issue at once and all compute the softmax at once, and the tensor cores idle
// during it. With turns, warpgroup w waits for its turn before it issues a group of products and passes the turn
// to warpgroup w + 1 (mod the count) right after issuing them: the groups reach the tensor cores in a fixed
// order, so one warpgroup's products run while the others compute their softmax.
//
// Each turn is a named barrier of 256 threads (bar.sync by the warpgroup whose turn it is, bar.arrive by the
// warpgroup that passes it); the first warpgroup gives itself the first turn (an arrival on its own barrier)
// before the loop. Every warpgroup runs the same loops for the same trip counts (the bounds are the program's),
// so each wait is matched by one pass; the last pass of a run is taken by the first wait of the next run (a
// persistent kernel's next tile, the second loop of a causal kernel), and one arrival stays pending when the
// program ends, which is allowed. No other barrier of the consumers may lie between a wait and its pass (the
// next warpgroup would wait for its turn while this one waits for it): insert_schedule_ops ends a group before
// any statement other than products, their waits and register arithmetic.
//
// Filled by: plan_warpgroup_turns (jit/passes/warpgroup_turns.cpp), within the lowering step "plan_stages".
// Read by: insert_schedule_ops (the turn ops), the describe functions and performance notes, the emitter.
#pragma once

#include <string>
#include <vector>

#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/warp_roles.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

struct WarpgroupTurns {
  /// The pipelined loops whose products the warpgroups issue in turns (the loops of the producer's ring), in
  /// program order; empty: no turns.
  std::vector<NodeId> loops;
  int warpgroups = 0;  ///< consumer warpgroups taking turns (num_warps / 4)
  /// The named barrier of warpgroup 0's turn; warpgroup w's is first_barrier + w (0 is __syncthreads', 1 the
  /// consumers' barrier).
  static constexpr int first_barrier = 2;
  /// The threads of one turn's barrier: the warpgroup that waits and the one that passes.
  static constexpr int barrier_threads = 256;
  /// Why Config::pingpong was not applied ("" when it was, or was not asked for): a performance note.
  std::string not_applied;
  bool on() const { return !loops.empty(); }
};

/// Decides whether the consumer warpgroups take turns: the configuration asks (Config::pingpong) or leaves it to
/// tilejit, the kernel has warp roles and two or more consumer warpgroups (at most 14: one named barrier each),
/// and the producer's loops have two or more products per iteration, none of whose operands the threads copy
/// K-major (that copy ends with a barrier of every consumer). Left to tilejit, turns are taken where the loop's
/// products were rotated by overlap_products (attention's loop at blocks of 128 keys): measured on an H200, each
/// such attention kernel ran 0-4.5% faster with them, and loops as written (a turn per product) 3% slower.
WarpgroupTurns plan_warpgroup_turns(const ir::Graph& g, const MmaPlan& mma, const LoopPipelinePlan& pipe,
                                    const WarpRoles& roles);

}  // namespace tilejit::passes
