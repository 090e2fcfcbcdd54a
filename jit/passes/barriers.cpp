// Where the threads of a program meet at a CTA barrier between ops: before an op overwrites the scratch
// arena that an earlier op's threads may still be reading, and before a repeated TMA load overwrites a
// tile every thread reads. The emitter prints what BarrierPlan says; the barriers inside one op's own
// protocol (write its tile, barrier, read it) are part of that op.

#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/lowering.h"
#include "passes/scratch_use.h"

namespace tilejit::passes {

using ir::Op;

namespace {

bool uniform(const ValueLayouts& layout, NodeId v) { return layout.of[static_cast<size_t>(v)].kind == ValueLayout::Uniform; }

}  // namespace

bool stages_through_scratch(const Lowered& l, NodeId id) {
  const ir::Graph& g = l.graph;
  const auto resident = [&](NodeId v) { return l.smem.resident.count(v) > 0; };
  switch (g.node(id).op) {
    case Op::ConvertLayout: {
      const NodeId x = g.operand(id, 0);
      if (uniform(l.layout, x) || uniform(l.layout, id)) return false;
      if (resident(x)) return false;  // read in place from its tile
      return !(l.layout.of[static_cast<size_t>(x)].dist == l.layout.of[static_cast<size_t>(id)].dist);
    }
    case Op::Reshape: {
      const NodeId x = g.operand(id, 0);
      if (resident(id) || resident(x)) return false;
      const ValueLayout &lx = l.layout.of[static_cast<size_t>(x)], &ly = l.layout.of[static_cast<size_t>(id)];
      if (lx.kind == ValueLayout::Uniform && ly.kind == ValueLayout::Uniform) return false;
      return !(lx.kind == ly.kind && layout::same_registers(lx.dist, ly.dist));
    }
    case Op::Permute: {
      const NodeId x = g.operand(id, 0);
      return !l.mma.absorbed.count(id) && !uniform(l.layout, x) && !resident(x);
    }
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax: case Op::Reduce:
      return !reduction_scratch(g, l.layout, id).empty();
    case Op::Dot:
      return !l.mma.dots.count(id) && (!resident(g.operand(id, 0)) || !resident(g.operand(id, 1)));
    // The other ops do not stage values through the scratch arena.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::Broadcast: case Op::CombineArg: case Op::ReduceResult:
      return false;
  }
  return false;
}

namespace {

/// Walks the program in emission order, keeping what a barrier decision depends on: whether the scratch
/// arena may still be read by some thread, and per enclosing loop whether this iteration has already
/// passed a barrier that every thread reaches.
class Planner {
 public:
  Planner(const Lowered& l, BarrierPlan& plan) : l_(l), g_(l.graph), plan_(plan) {
    for (const Descriptor& d : l.tma.descriptors)
      if (d.kind == DescKind::Device && d.build_at != ir::kNoNode) builds_.insert(d.build_at);
  }

  void region(uint32_t r) {
    for (NodeId id : g_.region(r).nodes) node(id);
  }

 private:
  struct LoopFrame {
    bool barrier = false;  ///< this iteration has passed a barrier outside any if
    int if_depth = 0;      ///< ifs entered since the body began
  };

  /// A barrier here: every thread has finished the reads of the scratch arena before it (an if's condition
  /// is the same in every thread, so this holds on the branch's path too), and when it is not inside an
  /// if, every thread of the innermost loop's iteration passes it.
  void passed_barrier() {
    scratch_read_pending_ = false;
    if (!loops_.empty() && loops_.back().if_depth == 0) loops_.back().barrier = true;
  }

  void scratch_write(NodeId id) {
    plan_.scratch_users.insert(id);
    if (scratch_read_pending_) {
      plan_.before_scratch.emplace(id, "the previous user of the scratch arena is done");
      passed_barrier();
    }
    passed_barrier();  // between this op's writes and its reads
    scratch_read_pending_ = true;
  }

  /// Thread 0 issues TMA load `id` outside a ring: a tile every thread reads, loaded again in each
  /// iteration, overwrites what the previous iteration's threads read unless they all passed a barrier.
  void issue(NodeId id) {
    const LoadPlan& lp = l_.smem.loads.at(id);
    if (!lp.repeated || !lp.all_threads_wait) return;
    if (!loops_.empty() && loops_.back().barrier) return;
    plan_.before_issue.emplace(id, "every thread is done with the previous tile");
    passed_barrier();
  }

  void node(NodeId id) {
    const ir::Node& n = g_.node(id);
    if (stages_through_scratch(l_, id)) scratch_write(id);
    switch (n.op) {
      case Op::ReuseFence: case Op::CtaBarrier: passed_barrier(); break;
      case Op::TmaIssue: issue(ir::attrs<ir::ScheduleAttrs>(g_, id).node); break;
      case Op::Dot:
        if (auto m = l_.mma.dots.find(id); m != l_.mma.dots.end() && (m->second.a.k_major_copy || m->second.b.k_major_copy))
          passed_barrier();  // the threads' K-major copies are complete before wgmma reads them
        break;
      case Op::DescLoad:
        if (!l_.pipe.loop_of.count(id) && !l_.pipe.early.count(id)) issue(id);
        break;
      case Op::DescStore:
        if (l_.smem.stores.at(id).mode != StorePlan::FromLoad) passed_barrier();  // the tile is written
        break;
      case Op::For: loop(id); break;
      case Op::If: branches(id); break;
      // No other op is a barrier, issues a TMA load or writes a tile the threads read.
      TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
      TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE)
      case Op::DescPrefetch: case Op::LoopIndex: case Op::LoopArg: case Op::LoopResult: case Op::IfResult:
      case Op::Yield: case Op::PipeBegin: case Op::PipePrologue: case Op::PipeStage: case Op::PipeWait:
      case Op::PipeRefill: case Op::PipeRelease: case Op::PipeAdvance: case Op::PipeEnd: case Op::WgmmaWait:
      case Op::WarpProducer: case Op::TurnStart: case Op::TurnWait: case Op::TurnPass:
        break;
    }
    if (builds_.count(id)) passed_barrier();  // a device-built descriptor is published
  }

  void loop(NodeId id) {
    // The body begins again after any iteration, whose ops may still be reading the scratch arena.
    scratch_read_pending_ = true;
    loops_.push_back(LoopFrame{});
    region(ir::loop_body(g_, id));
    loops_.pop_back();
    scratch_read_pending_ = true;
  }

  void branches(NodeId id) {
    const bool before = scratch_read_pending_;
    bool after = false;  // either branch's path (an empty else is the path around the then-branch)
    for (uint32_t branch : ir::regions_of(g_, id)) {  // then, else
      scratch_read_pending_ = before;
      if (!loops_.empty()) ++loops_.back().if_depth;
      region(branch);
      if (!loops_.empty()) --loops_.back().if_depth;
      after = after || scratch_read_pending_;
    }
    scratch_read_pending_ = after;
  }

  const Lowered& l_;
  const ir::Graph& g_;
  BarrierPlan& plan_;
  std::unordered_set<NodeId> builds_;
  bool scratch_read_pending_ = false;
  std::vector<LoopFrame> loops_;
};

}  // namespace

BarrierPlan plan_barriers(const Lowered& l) {
  BarrierPlan plan;
  Planner(l, plan).region(0);
  return plan;
}

}  // namespace tilejit::passes
