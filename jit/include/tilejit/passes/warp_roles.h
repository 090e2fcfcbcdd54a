// WarpRoles: warp specialization of a kernel's pipelined loop (a producer warpgroup that issues its loads,
// the consumers that run everything else).
//
// Filled by: plan_warp_roles (jit/passes/warp_roles.cpp), within the lowering step "plan_stages" (lowering.h).
// Read by: allocate_shared (the "empty" barriers), plan_arguments (threads per program), insert_schedule_ops,
// the describe functions and performance notes, and the emitter (emit_schedule.cpp).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// Warp specialization of a kernel's pipelined loop (Config::warp_specialize): one producer warpgroup, after
/// the num_warps warps of the kernel (the consumers, tid 0 .. consumer_threads - 1, which run every op as
/// without roles), splits off at the kernel's start. One thread of it issues every TMA load of the loop's
/// ring, waiting for a stage's "empty" barrier before refilling it; the consumers wait for its "full"
/// barrier, run the products and arrive on the "empty" barrier of the previous iteration's stage (one
/// arrival per consumer warp) where the CTA barrier and the refill stood without roles. No CTA barrier is
/// left in the loop, and `setmaxnreg` gives the registers the producer does not need to the consumers.
struct WarpRoles {
  NodeId loop = ir::kNoNode;   ///< the pipelined For whose ring the producer fills; kNoNode: no roles
  /// Every loop that uses that ring (PipelinedLoop::ring), in program order: `loop`, and the loops after it
  /// that share its ring (causal attention's masked loop after its unmasked one). The producer issues their
  /// loads in that order, one ring position after the other.
  std::vector<NodeId> loops;
  int consumer_threads = 0;    ///< num_warps * 32
  int producer_threads = 128;  ///< one warpgroup (setmaxnreg works on whole warpgroups); thread consumer_threads issues
  int producer_registers = 0;  ///< setmaxnreg.dec target of the producer (0: none)
  int consumer_registers = 0;  ///< setmaxnreg.inc target of the consumers (0: none)
  /// The producer target to compile the kernel again with if ptxas spills the consumers' registers: the leanest
  /// producer (24) when the configuration names none and that gives the consumers more registers; 0: none. The
  /// runtime keeps the binary that spills less (detail::variant_for).
  int spill_retry_producer_registers = 0;
  /// The loops and branches around `loop`, outermost first (a persistent kernel's tile loop; a grouped GEMM's
  /// `if` that skips unused tiles): the producer runs the loops and takes the branches too (whose conditions are
  /// uniform), and its ring position runs on from one run of `loop` to the next (PipelinedLoop::ring_persists).
  std::vector<NodeId> enclosing;
  /// Nodes before the loop, in the kernel body or the bodies of `enclosing`, that the loads' coordinates and
  /// the loops' bounds need (uniform scalars, loaded or computed), in program order: the producer computes
  /// them itself.
  std::vector<NodeId> producer_nodes;
  /// The build points (Descriptor::build_at) of the device-built descriptors that the producer's loads use and
  /// that are built after the kernel's start, in program order. Consumer warp 0 arrives on
  /// SmemPlan::built_barrier after each (build_descriptors); the producer waits for every arrival before its
  /// first load. They lie in the kernel body or in the `if`s around the loop, never in a loop, so each is built at
  /// most once per program and the barrier's phase 0 is the only one.
  std::vector<NodeId> awaited_builds;
  /// The workspace slots of every device-built descriptor the producer's loads use (also those built at the
  /// kernel's start): the producer acquires them (fence.proxy.tensormap) before its first load.
  std::vector<int> acquired_slots;
  /// Why Config::warp_specialize was not applied ("" when it was, or was not asked for): a performance note.
  std::string not_applied;
  bool on() const { return loop != ir::kNoNode; }
  /// Whether the producer issues the loads of pipelined loop `f`.
  bool serves(NodeId f) const { return on() && std::find(loops.begin(), loops.end(), f) != loops.end(); }
  /// Threads per program: the consumers, and the producer warpgroup when the roles are on.
  int threads() const { return consumer_threads + (on() ? producer_threads : 0); }
};

/// The registers each consumer thread of `roles` (roles.on()) gets when the producer warpgroup keeps `producer`
/// (setmaxnreg): what the program's pool (the launch bounds' count times its threads) has left, rounded down to
/// 8, at most 240; 0 when that is not more than the launch bounds give (then no registers move).
int consumer_register_share(const ir::Graph& g, const WarpRoles& roles, int producer);

/// Decides the warp roles of a kernel whose configuration asks for them, or leaves them to tilejit and whose
/// pipelined loop lies in other loops (a persistent kernel, at most one program per SM). They apply to one
/// ring of pipelined loops (one loop, or loops that share a ring), in the kernel body or in loops and ifs,
/// num_warps a multiple of 4, the loads' descriptors host-encoded or built once per program (at the kernel's
/// start, or after it outside any loop: WarpRoles::awaited_builds), and their
/// coordinates and the loops' bounds computed from uniform scalars (arithmetic, and loads from tensors the
/// kernel does not write; no values of other loops or ifs).
WarpRoles plan_warp_roles(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma,
                          const LoopPipelinePlan& pipe);

}  // namespace tilejit::passes
