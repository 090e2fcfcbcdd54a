// Register prefetch of pointer loads in loops without products (see prefetch_loads.h).
#include "passes/prefetch_loads.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "passes/rewrite.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/passes/graph_info.h"

namespace tilejit::passes {

using ir::DType;
using ir::Op;

namespace {

/// Nodes an address computation may be made of: pure ops that compute a value from their operands (not a
/// product, nor the result of a loop, an if or a reduce, which exists only where its region has run).
bool clonable(Op op) {
  if (ir::kind_of(op) != ir::OpKind::Pure) return false;
  using C = ir::OpCategory;
  switch (ir::category_of(op)) {
    case C::tensor: case C::leaf: case C::movement: case C::cast: case C::unary: case C::binary: case C::compare:
    case C::select: case C::ternary:
      return true;
    case C::reduction: return op != Op::ReduceResult;
    case C::product: return false;
    case C::control: return false;  // the pure control ops are the results: LoopResult, IfResult
    case C::memory: case C::tma: case C::schedule: return false;  // effects
  }
  return false;
}

/// Adds a node at old node `loc`'s source line.
NodeId add(detail::Rewriter& r, NodeId loc, Op op, DType dtype, const ir::Shape& shape, const std::vector<NodeId>& ops,
           const std::vector<int64_t>& ints = {}) {
  return r.add_at(loc, op, dtype, shape, ops, ints);
}

/// A loop whose loads are prefetched: the loads in body order, and the body's nodes their operands need
/// (in program order), which are cloned for the next iteration.
struct Target {
  std::vector<NodeId> loads;
  std::vector<NodeId> slice;
  std::unordered_set<NodeId> moves;  ///< the slice nodes the loop index reaches: computed only when the iteration runs
};

class Planner {
 public:
  explicit Planner(const ir::Graph& g) : g_(g), info_(analyze(g)) {}

  std::unordered_map<NodeId, Target> targets() {
    std::unordered_map<NodeId, Target> out;
    if (g_.num_stages == 1) return out;  // num_stages=1: nothing is pipelined
    std::unordered_set<NodeId> blocked;  // loops with a write or a dot anywhere in their body
    for (size_t i = 0; i < g_.size(); ++i) {
      if (info_.position[i] < 0) continue;
      const Op op = g_.node(static_cast<NodeId>(i)).op;
      if (!ir::writes_memory(op) && op != Op::Dot) continue;
      for (NodeId f = info_.loop[i]; f != ir::kNoNode; f = info_.loop[static_cast<size_t>(f)]) blocked.insert(f);
    }
    for (size_t i = 0; i < g_.size(); ++i) {
      const auto loop = static_cast<NodeId>(i);
      if (info_.position[i] < 0 || g_.node(loop).op != Op::For || blocked.count(loop)) continue;
      Target t;
      std::unordered_set<NodeId> slice;
      int64_t bytes = 0;
      const int threads = g_.num_warps * 32;
      for (NodeId id : g_.region(ir::loop_body(g_, loop)).nodes) {
        if (g_.node(id).op != Op::Load) continue;
        std::unordered_set<NodeId> need;
        if (!collect(loop, id, need)) continue;
        const ir::Node& n = g_.node(id);
        const int64_t per_thread = (n.shape.numel() + threads - 1) / threads * ir::size_of(n.dtype);
        if (bytes + per_thread > kMaxPrefetchBytesPerThread) continue;
        bytes += per_thread;
        t.loads.push_back(id);
        slice.insert(need.begin(), need.end());
      }
      if (t.loads.empty()) continue;
      t.slice.assign(slice.begin(), slice.end());
      std::sort(t.slice.begin(), t.slice.end(), [&](NodeId a, NodeId b) {
        return info_.position[static_cast<size_t>(a)] < info_.position[static_cast<size_t>(b)];
      });
      for (NodeId x : t.slice)  // program order: operands first
        for (NodeId o : g_.operands(x))
          if (g_.node(o).op == Op::LoopIndex || t.moves.count(o)) {
            t.moves.insert(x);
            break;
          }
      out.emplace(loop, std::move(t));
    }
    return out;
  }

 private:
  /// Collects the body nodes load `id`'s offsets, mask and fill value are computed from; false when one of
  /// them is not a pure function of the loop index and of values defined before the loop, or when the
  /// loaded tensor itself is made in the loop.
  bool collect(NodeId loop, NodeId id, std::unordered_set<NodeId>& need) const {
    const auto ops = g_.operands(id);
    if (info_.inside(ops[0], loop)) return false;
    bool uses_index = false;
    std::vector<NodeId> work(ops.begin() + 1, ops.end());
    while (!work.empty()) {
      const NodeId x = work.back();
      work.pop_back();
      if (!info_.inside(x, loop) || need.count(x)) continue;
      const Op op = g_.node(x).op;
      if (op == Op::LoopIndex) {
        uses_index = true;
        continue;
      }
      if (!clonable(op) || g_.node(x).region != g_.node(id).region) return false;
      need.insert(x);
      for (NodeId o : g_.operands(x)) work.push_back(o);
    }
    return uses_index;  // a load the index does not move reads the same elements every iteration
  }

  const ir::Graph& g_;
  GraphInfo info_;
};

/// Builds the rewritten graph: the prologue loads before each target loop, the next iteration's loads at the
/// top of its body, the loaded values carried by the loop.
class Prefetcher {
 public:
  Prefetcher(const ir::Graph& g, std::unordered_map<NodeId, Target> targets) : g_(g), targets_(std::move(targets)) {
    for (const auto& [loop, t] : targets_) {
      const auto& body = g_.region(ir::loop_body(g_, loop)).nodes;
      NodeId anchor = ir::kNoNode;  // the last region argument at the top of the body
      for (NodeId b : body) {
        if (ir::kind_of(g_.node(b).op) != ir::OpKind::Arg) break;
        anchor = b;
      }
      check_internal(anchor != ir::kNoNode && g_.node(body.front()).op == Op::LoopIndex,
                     "prefetch_loads: a loop body without its index");
      anchor_[anchor] = loop;
      yield_[body.back()] = loop;
      index_[loop] = body.front();
      for (size_t k = 0; k < t.loads.size(); ++k) carried_load_[t.loads[k]] = {loop, k};
    }
  }

  ir::Graph run() {
    detail::Rewriter rw(g_);
    return rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId { return visit(r, old); });
  }

 private:
  NodeId visit(detail::Rewriter& r, NodeId old) {
    if (targets_.count(old)) {
      // The prologue: iteration lo's loads, issued before the loop under if (lo < hi); the loop carries them in.
      const std::vector<NodeId> first = issue(r, old, r.map(g_.operand(old, 0)));
      return r.copy_with_ints(old, g_.ints(old), first);
    }
    if (auto a = anchor_.find(old); a != anchor_.end()) {
      const NodeId loop = a->second;
      const NodeId now = r.copy(old);
      r.set_map(old, now);
      const Target& t = targets_.at(loop);
      const NodeId new_loop = r.map(loop);
      const int carried = static_cast<int>(g_.operands(loop).size()) - 3;
      std::vector<NodeId>& args = args_[loop];
      for (size_t k = 0; k < t.loads.size(); ++k) {
        const ir::Node& n = g_.node(t.loads[k]);
        args.push_back(add(r, t.loads[k], Op::LoopArg, n.dtype, n.shape, {new_loop},
                           ir::IndexAttrs{carried + static_cast<int>(k)}.encode(Op::LoopArg)));
      }
      // The next iteration's loads, issued before anything of this iteration runs.
      const auto ops = g_.operands(loop);
      const ir::Shape scalar;
      const NodeId next = add(r, loop, Op::Add, DType::i32, scalar, {r.map(index_.at(loop)), r.map(ops[2])});
      next_[loop] = issue(r, loop, next, args);
      return now;
    }
    if (auto c = carried_load_.find(old); c != carried_load_.end()) return args_.at(c->second.first)[c->second.second];
    if (auto y = yield_.find(old); y != yield_.end()) {
      std::vector<NodeId> ops;
      for (NodeId o : g_.operands(old)) ops.push_back(r.map(o));
      for (NodeId l : next_.at(y->second)) ops.push_back(l);
      return add(r, old, Op::Yield, g_.node(old).dtype, g_.node(old).shape, ops, {g_.ints(old).begin(), g_.ints(old).end()});
    }
    return ir::kNoNode;
  }

  /// The loads of `loop` for the iteration whose index is `index` (a new node), issued in the current region
  /// under `if (index < hi)`; when that iteration does not run, the results are `fallback` (the values the
  /// loop carries now: no work) or, without it, zeros (the loop is not entered: nothing reads them). Slice
  /// nodes the index does not reach are computed before the if, where they merge with the body's own.
  std::vector<NodeId> issue(detail::Rewriter& r, NodeId loop, NodeId index, const std::vector<NodeId>& fallback = {}) {
    const Target& t = targets_.at(loop);
    const ir::Shape scalar;
    ir::Graph& dst = r.out();
    std::unordered_map<NodeId, NodeId> clone{{index_.at(loop), index}};
    auto mapped = [&](NodeId o) {
      auto it = clone.find(o);
      return it != clone.end() ? it->second : r.map(o);
    };
    auto clone_node = [&](NodeId x) {
      std::vector<NodeId> ops;
      for (NodeId o : g_.operands(x)) ops.push_back(mapped(o));
      const ir::Node& n = g_.node(x);
      clone[x] = add(r, x, n.op, n.dtype, n.shape, ops, {g_.ints(x).begin(), g_.ints(x).end()});
    };
    for (NodeId x : t.slice)
      if (!t.moves.count(x)) clone_node(x);
    const NodeId runs = add(r, loop, Op::Lt, DType::i1, scalar, {index, r.map(g_.operand(loop, 1))});
    const NodeId branch = r.add_if(loop, runs);
    const uint32_t then_region = ir::attrs<ir::IfAttrs>(dst, branch).then_region;
    dst.push_region(then_region);
    for (NodeId x : t.slice)
      if (t.moves.count(x)) clone_node(x);
    std::vector<NodeId> loads, otherwise;
    for (NodeId l : t.loads) {
      const ir::Node& n = g_.node(l);
      const auto ops = g_.operands(l);
      std::vector<NodeId> load_ops{mapped(ops[0]), mapped(ops[1])};
      if (ir::attrs<ir::AccessAttrs>(g_, l).masked) load_ops.insert(load_ops.end(), {mapped(ops[2]), mapped(ops[3])});
      ir::AccessAttrs access = ir::attrs<ir::AccessAttrs>(g_, l);  // masked and evict as the program wrote them
      access.ahead = fallback.empty() ? ir::LoadAhead::first_iteration : ir::LoadAhead::next_iteration;
      loads.push_back(add(r, l, Op::Load, n.dtype, n.shape, load_ops, access.encode(Op::Load)));
    }
    add(r, loop, Op::Yield, DType::i32, scalar, loads);
    dst.pop_region();
    dst.push_region(then_region + 1);
    for (size_t k = 0; k < t.loads.size(); ++k) {
      const ir::Node& n = g_.node(t.loads[k]);
      if (!fallback.empty()) {
        otherwise.push_back(fallback[k]);
      } else {
        const NodeId zero = add(r, t.loads[k], Op::Const, n.dtype, scalar, {}, ir::ConstAttrs{0}.encode(Op::Const));
        otherwise.push_back(n.shape.rank == 0 ? zero : add(r, t.loads[k], Op::Broadcast, n.dtype, n.shape, {zero}));
      }
    }
    add(r, loop, Op::Yield, DType::i32, scalar, otherwise);
    dst.pop_region();
    std::vector<NodeId> results;
    for (size_t k = 0; k < t.loads.size(); ++k) {
      const ir::Node& n = g_.node(t.loads[k]);
      results.push_back(add(r, t.loads[k], Op::IfResult, n.dtype, n.shape, {branch},
                            ir::IndexAttrs{static_cast<int>(k)}.encode(Op::IfResult)));
    }
    return results;
  }

  const ir::Graph& g_;
  std::unordered_map<NodeId, Target> targets_;
  std::unordered_map<NodeId, NodeId> anchor_, yield_, index_;                  // -> loop
  std::unordered_map<NodeId, std::pair<NodeId, size_t>> carried_load_;         // load -> (loop, k)
  std::unordered_map<NodeId, std::vector<NodeId>> args_, next_;                // loop -> new nodes
};

}  // namespace

ir::Graph prefetch_loads(const ir::Graph& g) {
  auto targets = Planner(g).targets();
  if (targets.empty()) return g;
  return Prefetcher(g, std::move(targets)).run();
}

}  // namespace tilejit::passes
