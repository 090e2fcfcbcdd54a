// The schedule as IR ops: where each pipelined loop's TMA loads are issued, awaited and refilled, where each
// tensor-core product is waited for, where every thread meets to free a stage, where the consumer warpgroups take
// and pass their turns at the tensor cores, and where shared-memory bytes pass from one tile to another. The
// plans decide these (loop_pipeline.cpp, warpgroup_turns.cpp, smem_liveness.cpp); this step writes their
// decisions into the graph, where TILEJIT_DUMP=ir shows them and the emitter prints each op.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tilejit/error.h"
#include "tilejit/passes/lowering.h"
#include "passes/scratch_use.h"
#include "tilejit/passes/schedule_ops.h"

namespace tilejit::passes {

using ir::Op;
using ir::ScheduleAttrs;

namespace {

NodeId put(ir::Graph& g, Op op, const ScheduleAttrs& a, NodeId anchor, bool after) {
  return g.insert(op, a.encode(op), anchor, after);
}

/// The first node of loop `f`'s body after its index and loop-carried arguments.
NodeId first_statement(const ir::Graph& g, NodeId f) {
  for (NodeId id : g.region(ir::loop_body(g, f)).nodes)
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

/// After `at`, the ops that hand the previous iteration's stage back: each consumer warp's release to the
/// producer warpgroup (`roles`), or a CTA barrier and the refill of that stage by thread 0.
void free_previous_stage(ir::Graph& g, const ScheduleAttrs& ring, NodeId at, bool roles, ir::BarrierReason why) {
  if (roles)
    put(g, Op::PipeRelease, ring, at, true);
  else
    put(g, Op::PipeRefill, ring, put(g, Op::CtaBarrier, {.reason = why}, at, true), true);
}

/// The waits for the products of pipelined loop `f`, each right before the first statement that needs it done:
///  - a product of this iteration, before the first statement that reads its value (the yield, when only the
///    next iteration does) unless it is carried into the next iteration;
///  - a carried product of the previous iteration (its registers are its loop-carried value's), before the first
///    statement other than itself that reads that value (its in-place update), and at the latest right after the
///    last product's issue, before the barrier that frees the previous iteration's stage.
/// wgmma groups complete in the order they were issued: a wait lets the groups issued after the last product it
/// ends run on (pending), and ends every earlier one with it. After the last product (and that wait, if any)
/// come the barrier and the refill of the stage (`ring`), or with warp roles the consumers' release of it.
void place_waits(ir::Graph& g, const GraphInfo& info, const PipelinedLoop& p, uint32_t body, const ScheduleAttrs& ring,
                 bool roles) {
  struct Outstanding {
    NodeId registers;  ///< what the wait fences: this iteration's dot, or a carried product's loop-carried value
    std::vector<NodeId> readers;  ///< the values whose users need it done
    bool previous;     ///< a carried product of the previous iteration
  };
  const auto carried_dot = [&](NodeId arg) {
    for (const CarriedProduct& c : p.carried)
      if (c.arg == arg) return c.dot;
    return ir::kNoNode;
  };
  const auto is_carried = [&](NodeId dot) {
    return std::any_of(p.carried.begin(), p.carried.end(), [&](const CarriedProduct& c) { return c.dot == dot; });
  };
  std::vector<Outstanding> outstanding;
  for (const CarriedProduct& c : p.carried) outstanding.push_back({c.arg, {c.arg}, true});
  const NodeId yield = g.region(body).nodes.back();
  // A product whose operand a is a loop-carried register value (overlap_products' P of the previous block)
  // reads those registers until it completes: it is awaited before the statement that computes the value
  // carried into them next, so that the compiler may give the new value the same registers.
  std::unordered_map<NodeId, NodeId> refills_operand;  // dot -> the statement computing its next operand a
  for (NodeId d : p.dots) {
    const NodeId a = g.operand(d, 0);
    if (g.node(a).op != Op::LoopArg || g.node(a).region != body) continue;
    const NodeId next = g.operand(yield, ir::attrs<ir::IndexAttrs>(g, a).index);
    if (g.node(next).region == body) refills_operand[d] = next;
  }
  const std::vector<NodeId> nodes = g.region(body).nodes;  // a copy: the waits go into the region
  for (NodeId x : nodes) {
    int last = -1;  // the last outstanding product x needs done
    for (size_t k = 0; k < outstanding.size(); ++k) {
      const Outstanding& o = outstanding[k];
      bool needs = !o.previous && x == yield;
      if (auto r = refills_operand.find(o.registers); !o.previous && r != refills_operand.end()) needs = needs || r->second == x;
      for (NodeId v : o.readers)
        for (NodeId u : info.users[static_cast<size_t>(v)])
          needs = needs || (statement_in(g, body, u) == x && !(o.previous && u == carried_dot(o.registers)));
      if (needs) last = static_cast<int>(k);
    }
    if (x == yield) {  // a product carried into the next iteration is not awaited here
      bool carried_only = true;
      for (int k = 0; k <= last; ++k) carried_only = carried_only && is_carried(outstanding[static_cast<size_t>(k)].registers);
      if (carried_only) last = -1;
    }
    if (last >= 0) {
      ScheduleAttrs wait{.pending = static_cast<int>(outstanding.size()) - 1 - last};
      bool previous = true;
      for (int k = 0; k <= last; ++k) {
        wait.dots.push_back(outstanding[static_cast<size_t>(k)].registers);
        previous = previous && outstanding[static_cast<size_t>(k)].previous;
      }
      if (previous) wait.when = ir::WaitFor::previous_iteration;
      put(g, Op::WgmmaWait, wait, x, false);
      outstanding.erase(outstanding.begin(), outstanding.begin() + last + 1);
    }
    if (std::find(p.dots.begin(), p.dots.end(), x) != p.dots.end()) outstanding.push_back({x, {x}, false});
    if (x != p.dot) continue;
    // The previous iteration's stage is free once every warpgroup is done with its products: the ones awaited
    // in it, and its carried ones, awaited here if nothing needed them earlier (this iteration's run on).
    NodeId at = x;
    int previous = -1;
    for (size_t k = 0; k < outstanding.size(); ++k)
      if (outstanding[k].previous) previous = static_cast<int>(k);
    if (previous >= 0) {
      ScheduleAttrs wait{.pending = static_cast<int>(outstanding.size()) - 1 - previous, .when = ir::WaitFor::previous_iteration};
      for (int k = 0; k <= previous; ++k) wait.dots.push_back(outstanding[static_cast<size_t>(k)].registers);
      at = put(g, Op::WgmmaWait, wait, at, true);
      outstanding.erase(outstanding.begin(), outstanding.begin() + previous + 1);
    }
    free_previous_stage(g, ring, at, roles,
                        previous >= 0 ? ir::BarrierReason::stage_free_in_flight : ir::BarrierReason::stage_free);
  }
  for (const Outstanding& o : outstanding)
    check_internal(!o.previous && is_carried(o.registers), "insert_schedule_ops: a product of a pipelined loop is never awaited");
}

/// Whether statement `x` of pipelined loop `p` may stand between two products of one turn (WarpgroupTurns): it
/// involves no thread of another warpgroup and waits for none of the turn's own products (`issued`).
bool fits_in_turn(const Lowered& l, const PipelinedLoop& p, NodeId x, const std::vector<NodeId>& issued) {
  const ir::Graph& g = l.graph;
  const Op op = g.node(x).op;
  // A load of the ring reads a stage the loop's wait already covers.
  if (std::find(p.loads.begin(), p.loads.end(), x) != p.loads.end()) return true;
  if (op == Op::WgmmaWait) {
    const ScheduleAttrs w = ir::attrs<ScheduleAttrs>(g, x);
    return std::none_of(w.dots.begin(), w.dots.end(),
                        [&](NodeId d) { return std::find(issued.begin(), issued.end(), d) != issued.end(); });
  }
  // Arithmetic in each thread's registers, values that stay in their registers (a broadcast, a reshape that
  // keeps them), and the wait for a stage's loads (the producer, which fills it, takes no turns). Anything else
  // ends the turn: it might need the other warpgroups (a reduction or a layout change through the scratch
  // arena, a barrier of the consumers).
  if (ir::is_elementwise(op) || op == Op::Const || op == Op::PipeWait) return true;
  return ir::category_of(op) == ir::OpCategory::movement && !stages_through_scratch(l, x);
}

/// The turns of loop `f`'s products: each group of products issued one after another (nothing between them but
/// what fits_in_turn allows) is preceded by its warpgroup's wait for the turn and followed by the pass to the next.
void place_turns(Lowered& l, const PipelinedLoop& p, NodeId f, uint32_t body) {
  ir::Graph& g = l.graph;
  const std::vector<NodeId> nodes = g.region(body).nodes;  // a copy: the turn ops go into the region
  std::vector<NodeId> issued;  // the products of the open turn
  NodeId first = ir::kNoNode;
  const auto close = [&] {
    put(g, Op::TurnWait, {.node = f}, first, false);
    put(g, Op::TurnPass, {.node = f}, issued.back(), true);
    issued.clear();
  };
  for (NodeId x : nodes) {
    if (std::find(p.dots.begin(), p.dots.end(), x) != p.dots.end()) {
      if (issued.empty()) first = x;
      issued.push_back(x);
    } else if (!issued.empty() && !fits_in_turn(l, p, x, issued)) {
      close();
    }
  }
  check_internal(issued.empty(), "insert_schedule_ops: a turn open at the end of a loop body");
  for (NodeId d : p.dots)
    check_internal(g.node(d).region == body, "insert_schedule_ops: a product of a loop with turns lies in a nested region");
}

/// The ops of a block outside loop `f` that reads one of its ring's positions (PipelinedLoop::first or last, the
/// if `branch`): as an iteration of the loop, it takes the next position, waits for its stage, frees the
/// previous one after its product (a barrier and a refill, or with warp roles each warp's release) and moves on.
void ring_block_ops(ir::Graph& g, const LoopPipelinePlan& pipe, NodeId f, const PipelinedLoop& p, NodeId branch,
                    const ScheduleAttrs& ring, bool roles) {
  const std::vector<NodeId> nodes = g.region(ir::attrs<ir::IfAttrs>(g, branch).then_region).nodes;  // a copy
  NodeId load = ir::kNoNode, dot = ir::kNoNode;
  for (NodeId x : nodes) {
    if (load == ir::kNoNode && pipe.ring_twin.count(x)) load = x;
    if (g.node(x).op == Op::Dot) dot = x;
  }
  check_internal(load != ir::kNoNode, "insert_schedule_ops: a block served by a ring without its load");
  put(g, Op::PipeStage, {.node = f, .stages = p.stages}, nodes.front(), false);
  put(g, Op::PipeWait, {.node = f, .stages = p.stages, .load = load}, load, false);
  if (dot != ir::kNoNode) free_previous_stage(g, ring, dot, roles, ir::BarrierReason::stage_free);
  put(g, Op::PipeAdvance, {.node = f}, nodes.back(), false);
}

/// The ops of pipelined loop `f`: before it, in its body, after its products and after it.
void pipeline_ops(ir::Graph& g, const GraphInfo& info, const LoopPipelinePlan& pipe, NodeId f, const PipelinedLoop& p,
                  bool roles) {
  const uint32_t body = ir::loop_body(g, f);
  ScheduleAttrs ring;
  ring.node = f;
  ring.stages = p.stages;
  ring.ring_persists = p.ring_persists;
  if (auto early = pipe.issued_before.find(f); early != pipe.issued_before.end())
    for (NodeId load : early->second) put(g, Op::TmaIssue, {.node = load}, f, false);
  // The ring starts before the block peeled before the loop when it serves that block.
  const NodeId begin = p.first != ir::kNoNode ? p.first : f;
  put(g, Op::PipeBegin, ring, begin, false);
  if (!roles) put(g, Op::PipePrologue, ring, begin, false);  // else the producer warpgroup issues every stage
  put(g, Op::PipeStage, {.node = f, .stages = p.stages}, first_statement(g, f), false);
  put(g, Op::PipeWait, {.node = f, .stages = p.stages, .load = p.loads.front()}, p.loads.front(), false);
  place_waits(g, info, p, body, ring, roles);
  put(g, Op::PipeAdvance, {.node = f}, g.region(body).nodes.back(), false);
  for (NodeId branch : {p.first, p.last})
    if (branch != ir::kNoNode) ring_block_ops(g, pipe, f, p, branch, ring, roles);
  NodeId at = f;
  if (!p.carried.empty()) {
    ScheduleAttrs wait{.when = ir::WaitFor::last_iteration};
    for (const CarriedProduct& c : p.carried) wait.dots.push_back(c.dot);
    at = put(g, Op::WgmmaWait, wait, at, true);
  }
  if (p.last != ir::kNoNode) at = p.last;  // the block after the loop takes the ring's last position
  if (p.ring_persists) put(g, Op::PipeEnd, {.node = f}, at, true);
}

}  // namespace

void insert_schedule_ops(Lowered& l) {
  ir::Graph& g = l.graph;
  // The keys of a plan's map in node order: the new ops' ids do not depend on the maps' hashing.
  const auto in_order = [](const auto& map) {
    std::vector<NodeId> keys;
    for (const auto& entry : map) keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    return keys;
  };
  for (NodeId at : in_order(l.smem.reuse_fences)) put(g, Op::ReuseFence, {.node = at}, at, false);
  std::unordered_set<NodeId> ring_dots;
  for (NodeId f : in_order(l.pipe.loops)) {
    const PipelinedLoop& p = l.pipe.loops.at(f);
    pipeline_ops(g, l.info, l.pipe, f, p, l.roles.serves(f));
    if (std::find(l.turns.loops.begin(), l.turns.loops.end(), f) != l.turns.loops.end())
      place_turns(l, p, f, ir::loop_body(g, f));
    ring_dots.insert(p.dots.begin(), p.dots.end());
  }
  // The first consumer warpgroup's first turn, in the consumers' code (after the producer's split).
  if (l.turns.on()) put(g, Op::TurnStart, {.node = l.turns.loops.front()}, g.region(0).nodes.front(), false);
  if (l.roles.on())
    put(g, Op::WarpProducer, {.node = l.roles.loop, .stages = l.pipe.loops.at(l.roles.loop).stages}, g.region(0).nodes.front(), false);
  // Every other product is waited for where it is issued.
  for (NodeId dot : in_order(l.mma.dots))
    if (!ring_dots.count(dot)) put(g, Op::WgmmaWait, {.dots = {dot}}, dot, true);
  l.info = analyze(g);
  l.layout.of.resize(g.size());
  l.axes.resize(g.size());
}

}  // namespace tilejit::passes
