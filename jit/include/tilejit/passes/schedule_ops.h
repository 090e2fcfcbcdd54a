// The schedule as IR ops: the rewriting step that writes what the plans decided (pipelines, waits, barriers
// that free stages, reuse fences) into the graph as schedule ops.
//
// Run by: insert_schedule_ops (jit/passes/schedule_ops.cpp), the lowering step "insert_schedule_ops" (lowering.h).
// Read by: the emitter, which prints each schedule op where it stands (emit_schedule.cpp).
#pragma once


namespace tilejit::passes {

struct Lowered;

/// Writes the schedule the plans decided into the graph as schedule ops (ir.h): for every pipelined loop its
/// early TMA issues, pipe.begin and pipe.prologue before it, pipe.stage first in its body, pipe.wait before its
/// ring's first load, pipe.advance before its yield, and after its last product the wait, the barrier that
/// frees the previous iteration's stage and pipe.refill (with warp roles: no prologue, pipe.release instead of
/// the barrier and the refill, and warp.producer first in the kernel body); a wgmma.wait after every other
/// tensor-core dot; a smem.reuse_fence before each node SmemPlan::reuse_fences names. Nodes are only added (ids stay); the
/// graph's analysis, layouts and axes are extended to the new nodes.
void insert_schedule_ops(Lowered& l);

}  // namespace tilejit::passes
