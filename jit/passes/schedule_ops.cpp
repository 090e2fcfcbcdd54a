// The schedule as IR ops: where each pipelined loop's TMA loads are issued, awaited and refilled, where each
// tensor-core product is waited for, where every thread meets to free a stage, and where shared-memory bytes
// pass from one tile to another. The plans decide these (software_pipeline.cpp, smem_liveness.cpp); this step
// writes their decisions into the graph, where TILEJIT_DUMP=ir shows them and the emitter prints each op.
#include <algorithm>

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

/// The node of region `r` that holds `id` (itself, or the loop or if it lies in), or kNoNode.
NodeId statement_in(const ir::Graph& g, uint32_t r, NodeId id) {
  for (NodeId x = id;;) {
    const uint32_t in = g.node(x).region;
    if (in == r) return x;
    x = g.region(in).owner;
    if (x == ir::kNoNode) return ir::kNoNode;
  }
}

/// The waits for the products of a loop body that keeps none in flight into the next iteration: each product
/// is awaited right before the first statement that reads its value (the yield when only the next iteration
/// does), by a wait that lets the products issued after it run on. Products are awaited in the order they
/// were issued (wgmma groups complete in order), so one wait may end several.
void waits_before_use(ir::Graph& g, const GraphInfo& info, const PipelinedLoop& p, uint32_t body) {
  const std::vector<NodeId> nodes = g.region(body).nodes;  // a copy: the waits go into the region
  std::vector<NodeId> outstanding;  // issued, not yet awaited, in issue order
  for (NodeId x : nodes) {
    // The last outstanding product that x (or an op nested in it) reads.
    int last = -1;
    for (size_t k = 0; k < outstanding.size(); ++k)
      for (NodeId u : info.users[static_cast<size_t>(outstanding[k])])
        if (statement_in(g, body, u) == x) last = static_cast<int>(k);
    if (last >= 0) {
      ScheduleAttrs wait{.pending = static_cast<int>(outstanding.size()) - 1 - last};
      wait.dots.assign(outstanding.begin(), outstanding.begin() + last + 1);
      put(g, Op::WgmmaWait, wait, x, false);
      outstanding.erase(outstanding.begin(), outstanding.begin() + last + 1);
    }
    if (std::find(p.dots.begin(), p.dots.end(), x) != p.dots.end()) outstanding.push_back(x);
  }
  check_internal(outstanding.empty(), "insert_schedule_ops: a product of a pipelined loop is never read");
}

/// The ops of pipelined loop `f`: before it, in its body, after its products and after it.
void pipeline_ops(ir::Graph& g, const GraphInfo& info, const PipelinePlan& pipe, NodeId f, const PipelinedLoop& p) {
  const auto body = static_cast<uint32_t>(g.int_at(f, 0));
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
  // The refill writes the stage of the previous iteration: free once every warpgroup is done with that
  // iteration's products. In flight, this iteration's products run on while the previous ones are awaited;
  // otherwise the previous ones were awaited in their own iteration, and only the barrier is needed.
  NodeId at = p.dot;
  if (p.in_flight) {
    ScheduleAttrs wait{.pending = static_cast<int>(p.dots.size()), .when = ir::WaitFor::previous_iteration};
    wait.dots = p.dots;
    at = put(g, Op::WgmmaWait, wait, at, true);
  }
  const auto why = p.in_flight ? ir::BarrierReason::stage_free_in_flight : ir::BarrierReason::stage_free;
  at = put(g, Op::CtaBarrier, {.reason = why}, at, true);
  put(g, Op::PipeRefill, ring, at, true);
  if (!p.in_flight) waits_before_use(g, info, p, body);
  put(g, Op::PipeAdvance, {.node = f}, g.region(body).nodes.back(), false);
  at = f;
  if (p.in_flight) {
    ScheduleAttrs wait{.when = ir::WaitFor::last_iteration};
    wait.dots = p.dots;
    at = put(g, Op::WgmmaWait, wait, at, true);
  }
  if (p.ring_persists) put(g, Op::PipeEnd, {.node = f}, at, true);
}

}  // namespace

void insert_schedule_ops(Lowered& l) {
  ir::Graph& g = l.graph;
  for (const auto& [at, fence] : l.smem.reuse_fences) put(g, Op::ReuseFence, {.node = at}, at, false);
  std::unordered_set<NodeId> ring_dots;
  for (const auto& [f, p] : l.pipe.loops) {
    pipeline_ops(g, l.info, l.pipe, f, p);
    ring_dots.insert(p.dots.begin(), p.dots.end());
  }
  // Every other product is waited for where it is issued.
  for (const auto& [dot, m] : l.mma.dots)
    if (!ring_dots.count(dot)) put(g, Op::WgmmaWait, {.dots = {dot}}, dot, true);
  l.info = analyze(g);
  l.layout.of.resize(g.size());
  l.axes.resize(g.size());
}

}  // namespace tilejit::passes
