// The schedule as IR ops: where each pipelined loop's TMA loads are issued, awaited and refilled, where each
// tensor-core product is waited for, where every thread meets to free a stage, and where shared-memory bytes
// pass from one tile to another. The plans decide these (software_pipeline.cpp, smem_liveness.cpp); this step
// writes their decisions into the graph, where TILEJIT_DUMP=ir shows them and the emitter prints each op.
#include "tilejit/error.h"
#include "tilejit/passes/passes.h"

namespace tilejit::passes {

using ir::Op;
using ir::ScheduleAttrs;

namespace {

NodeId put(ir::Graph& g, Op op, const ScheduleAttrs& a, NodeId anchor, bool after) {
  return g.insert(op, ir::encode_schedule_attrs(op, a), anchor, after);
}

/// The first node of loop `f`'s body after its index and loop-carried arguments.
NodeId first_statement(const ir::Graph& g, NodeId f) {
  for (NodeId id : g.region(static_cast<uint32_t>(g.int_at(f, 0))).nodes)
    if (g.node(id).op != Op::LoopIndex && g.node(id).op != Op::LoopArg) return id;
  throw InternalError("insert_schedule_ops: a loop body without a yield");
}

/// The ops of pipelined loop `f`: before it, in its body, after its products and after it.
void pipeline_ops(ir::Graph& g, const PipelinePlan& pipe, NodeId f, const PipelinedLoop& p) {
  ScheduleAttrs ring;
  ring.node = f;
  ring.stages = p.stages;
  ring.ring_persists = p.ring_persists;
  if (auto early = pipe.issued_before.find(f); early != pipe.issued_before.end())
    for (NodeId load : early->second) put(g, Op::TmaIssue, {.node = load}, f, false);
  put(g, Op::PipeBegin, ring, f, false);
  put(g, Op::PipePrologue, ring, f, false);
  put(g, Op::PipeStage, {.node = f, .stages = p.stages}, first_statement(g, f), false);
  put(g, Op::PipeWait, {.node = f, .stages = p.stages, .load = p.loads.front()}, p.loads.front(), false);
  // After the last product: the previous iteration's stage is free once every warpgroup's products that read
  // it are done (with one group in flight: the previous iteration's; else this one's), then it is refilled.
  ScheduleAttrs wait{.node = p.dot};
  if (p.in_flight) wait.pending = 1, wait.when = ir::WaitFor::previous_iteration;
  NodeId at = put(g, Op::WgmmaWait, wait, p.dot, true);
  const auto why = p.in_flight ? ir::BarrierReason::stage_free_in_flight : ir::BarrierReason::stage_free;
  at = put(g, Op::CtaBarrier, {.reason = why}, at, true);
  put(g, Op::PipeRefill, ring, at, true);
  put(g, Op::PipeAdvance, {.node = f}, g.region(static_cast<uint32_t>(g.int_at(f, 0))).nodes.back(), false);
  at = f;
  if (p.in_flight) at = put(g, Op::WgmmaWait, {.node = p.dot, .when = ir::WaitFor::last_iteration}, at, true);
  if (p.ring_persists) put(g, Op::PipeEnd, {.node = f}, at, true);
}

}  // namespace

void insert_schedule_ops(Lowered& l) {
  ir::Graph& g = l.graph;
  for (const auto& [at, fence] : l.smem.reuse_fences) put(g, Op::ReuseFence, {.node = at}, at, false);
  std::unordered_set<NodeId> ring_dots;
  for (const auto& [f, p] : l.pipe.loops) {
    pipeline_ops(g, l.pipe, f, p);
    ring_dots.insert(p.dot);
  }
  // Every other product is waited for where it is issued.
  for (const auto& [dot, m] : l.mma.dots)
    if (!ring_dots.count(dot)) put(g, Op::WgmmaWait, {.node = dot}, dot, true);
  l.info = analyze(g);
  l.layout.of.resize(g.size());
  l.axes.resize(g.size());
}

}  // namespace tilejit::passes
