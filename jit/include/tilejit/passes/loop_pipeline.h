// LoopPipelinePlan: software pipelining of loops with tensor-core products (which loops, their rings of stages,
// the loads issued ahead and the products left in flight).
//
// A K loop whose TMA loads are issued `stages - 1` iterations ahead of their use, into a ring of
// `stages` buffers per load with a "full" mbarrier per stage (the loads landed). A stage is refilled
// after a CTA barrier that follows every warpgroup's wait for its previous products (all of them
// are done reading it): cheaper than per-stage "empty" mbarriers, which cost 10-15% of a 128 x 256
// bf16 GEMM on an H100 in a single-thread-producer loop (measured).
//
// Filled by: plan_loop_pipeline (jit/passes/loop_pipeline.cpp), within the lowering step "plan_stages" (lowering.h).
// Read by: plan_warp_roles, allocate_shared and place_buffers, insert_schedule_ops, the describe functions and
// performance notes, and the emitter (emit_schedule.cpp, emit_control.cpp, emit_tma.cpp, emit_mma.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// A product of a pipelined loop that stays in flight into the next iteration: its result is only yielded, and
/// it accumulates in place into the registers of its loop-carried value `arg`, directly (a GEMM's K loop) or
/// through `update`, an elementwise op that the threads compute in place into those registers before the
/// product (attention's acc * alpha). The next iteration awaits it right before `update` reads the registers
/// (or before the barrier that frees its stage, whichever comes first); the loop's end awaits the last one.
struct CarriedProduct {
  NodeId dot = ir::kNoNode;
  NodeId arg = ir::kNoNode;     ///< the LoopArg whose registers it accumulates into
  NodeId update = ir::kNoNode;  ///< the elementwise op between arg and the dot's accumulator, or kNoNode
};

struct PipelinedLoop {
  int stages = 2;
  std::vector<NodeId> loads;          ///< DescLoads of the body, in program order, issued ahead
  std::vector<NodeId> address_nodes;  ///< body nodes their coordinates need (pure scalars), in program order
  std::vector<NodeId> dots;           ///< the body's wgmma dots, in program order (attention has two)
  NodeId dot = ir::kNoNode;           ///< the last of them: after its wait the previous iteration's stage is free
  /// The products that stay in flight into the next iteration (CarriedProduct); every other one is awaited
  /// before its first use in its own iteration. The stage of the previous iteration is refilled right after
  /// the last product's issue, once the previous iteration's carried products are awaited.
  std::vector<CarriedProduct> carried;
  /// Every product is carried (a GEMM's K loop, SwiGLU's gate and up).
  bool in_flight() const { return carried.size() == dots.size(); }
  int64_t stage_bytes = 0;            ///< bytes every stage's loads bring (the full barrier's transaction count)
  /// The loop runs more than once per program (it lies in another loop: a persistent GEMM's K loop inside
  /// its tile loop), or shares its ring with other loops (`ring`). Its stage barriers then keep their phases
  /// from one run to the next, so the ring position (iterations done, which selects the stage and the phase
  /// to wait for) is a kernel-wide counter that each run starts from where the previous one ended, not 0.
  bool ring_persists = false;
  /// The loop whose ring (tile buffers, mbarriers, ring position) this one uses: itself, or the first of
  /// pipelined loops that follow one another in one region with the same loads (types, tiles, swizzles):
  /// causal attention's unmasked and masked loops over the keys. Their runs go on from one ring position
  /// (ring_persists), so one producer warpgroup can fill the ring for all of them, running ahead from one
  /// loop into the next.
  NodeId ring = ir::kNoNode;
  /// The ifs right before and after the loop whose TMA loads read the ring positions just outside its range
  /// (overlap_products' first block, peeled before the loop, and last block, finished after it), or kNoNode.
  /// The ring then serves one position before the loop's first iteration and one after its last: its range is
  /// [lo - step, hi + step) when the loop's first block runs (lo - step < hi), and those two blocks wait for,
  /// read and free their stage as an iteration does. Both or neither.
  NodeId first = ir::kNoNode, last = ir::kNoNode;
  /// The loop and the wait for its carried products after it are skipped together when it runs no iteration
  /// (lo >= hi). Set for a loop with carried products that lies in another loop and has no first or last
  /// block: where the path that skips such a loop reaches that wait, ptxas serializes every wgmma of the
  /// kernel (C7514; a persistent GEMM's K loop inside its tile loop ran 25% slower).
  bool skip_when_empty = false;
};

struct LoopPipelinePlan {
  /// Ring buffers of every pipelined loop: the graph's num_stages, or when that is 0 (Config::kAutoStages)
  /// the first count of 3, 2, 1 whose shared memory fits (passes::lower).
  int stages = 2;
  bool stages_chosen = false;  ///< true when the lowering chose `stages`
  std::unordered_map<NodeId, PipelinedLoop> loops;  ///< For -> its pipeline
  /// Loops with tensor-core dots and TMA loads that are not pipelined (num_stages >= 2), with the reason
  /// ("its TMA load at f.cpp:12 ..."): a performance warning names it.
  std::unordered_map<NodeId, std::string> not_pipelined;
  std::unordered_map<NodeId, NodeId> loop_of;       ///< pipelined DescLoad -> its For (or the For whose ring it reads)
  /// A DescLoad outside its loop that reads a ring position (PipelinedLoop::first, last) -> the loop's load whose
  /// buffer, barriers and coordinates it shares (the same tensor, box and swizzle).
  std::unordered_map<NodeId, NodeId> ring_twin;
  /// TMA loads after a pipelined loop (in its region, outside any loop) that need nothing the loop computes:
  /// For -> those loads, in program order. Thread 0 issues them before the loop's prologue; their waits stay
  /// where they are (a GEMM's bias row lands while the K loop runs).
  std::unordered_map<NodeId, std::vector<NodeId>> issued_before;
  std::unordered_set<NodeId> early;                 ///< the loads of issued_before
  /// Elementwise ops computed in place into the registers of one operand (CarriedProduct::update): op -> the
  /// index of that operand. The emitter names the result as the operand and writes it element by element.
  std::unordered_map<NodeId, int> in_place;
};

/// Pipelines every For loop (with num_stages >= 2) whose body holds tensor-core dots (mma) directly (none
/// in nested loops), whose TMA loads directly in the body are read only by those dots or only from registers
/// (a block scale multiplied into a product: the threads copy it out of its stage of the ring), and whose load
/// coordinates depend only on the loop index and values from outside the loop (through pure scalar
/// arithmetic); their descriptors must not be rebuilt in the loop. Host-encoded TMA loads after such a loop
/// whose operands all come before it are issued before it (LoopPipelinePlan::issued_before).
LoopPipelinePlan plan_loop_pipeline(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const TmaPlan& tma,
                                    const ValueLayouts& layout, const std::vector<AxisInfo>& axes, int stages);

}  // namespace tilejit::passes
