// Overlapped products (see overlap_products.h): the last product of a loop's iteration moves into the next one.
#include "passes/overlap_products.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "passes/motion.h"
#include "passes/rewrite.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/passes/graph_info.h"

namespace tilejit::passes {

using ir::DType;
using ir::Op;

namespace {

/// A loop to rewrite: its body split into A (kept in place) and B (one iteration later).
struct Target {
  NodeId first_dot = ir::kNoNode;  ///< A's first product: B is issued right after it
  NodeId dot = ir::kNoNode;        ///< B's product
  int acc_slot = -1;               ///< the loop-carried slot B's product accumulates into
  std::vector<NodeId> deferred;    ///< B, in body order
  std::vector<NodeId> slice;       ///< body nodes B's coordinates are computed from with the index (cloned for B)
  std::vector<NodeId> crossing;    ///< A's values B reads: carried from one iteration to the next
};

bool movement(Op op) { return op == Op::Broadcast || op == Op::Reshape || op == Op::Permute; }

class Planner {
 public:
  explicit Planner(const ir::Graph& g) : g_(g), info_(analyze(g)) {}

  std::unordered_map<NodeId, Target> targets() const {
    std::unordered_map<NodeId, Target> out;
    if (g_.overlap_products == OverlapProducts::off || g_.num_stages == 1) return out;
    for (size_t i = 0; i < g_.size(); ++i) {
      const auto f = static_cast<NodeId>(i);
      if (info_.position[i] < 0 || g_.node(f).op != Op::For) continue;
      auto t = consider(f);
      if (t && (g_.overlap_products == OverlapProducts::on || worth_it(*t))) out.emplace(f, std::move(*t));
    }
    return out;
  }

 private:
  bool in_body(NodeId x, uint32_t body) const { return g_.node(x).region == body; }

  /// Left to tilejit: rotated when the first product is at least kMinOverlapWidth wide (each warpgroup's
  /// softmax then runs long enough to hide P V) and no programs_per_sm target caps the registers that P and
  /// the rescale factor take while they are carried.
  bool worth_it(const Target& t) const {
    return g_.node(t.first_dot).shape.rank == 2 && g_.node(t.first_dot).shape[1] >= kMinOverlapWidth && g_.min_programs_per_sm == 0;
  }

  std::optional<Target> consider(NodeId f) const {
    const uint32_t body = ir::loop_body(g_, f);
    const auto& nodes = g_.region(body).nodes;
    const NodeId yield = nodes.back();
    std::vector<NodeId> dots;
    for (NodeId x : nodes) {
      const Op op = g_.node(x).op;
      if (!ir::regions_of(g_, x).empty() || ir::writes_memory(op)) return std::nullopt;
      if (op == Op::Dot) dots.push_back(x);
    }
    if (dots.size() < 2) return std::nullopt;
    Target t;
    t.first_dot = dots.front();
    t.dot = dots.back();
    // B's product: only the yield reads it, in one slot, and it accumulates into that slot's value.
    const auto& users = info_.users[static_cast<size_t>(t.dot)];
    if (users.size() != 1 || users[0] != yield) return std::nullopt;
    const auto slots = g_.operands(yield);
    if (std::count(slots.begin(), slots.end(), t.dot) != 1) return std::nullopt;
    t.acc_slot = static_cast<int>(std::find(slots.begin(), slots.end(), t.dot) - slots.begin());
    NodeId acc_arg = ir::kNoNode;
    for (NodeId x : nodes)
      if (g_.node(x).op == Op::LoopArg && ir::attrs<ir::IndexAttrs>(g_, x).index == t.acc_slot) acc_arg = x;
    if (acc_arg == ir::kNoNode) return std::nullopt;
    const auto only_user = [&](NodeId v, NodeId u) {
      const auto& us = info_.users[static_cast<size_t>(v)];
      return us.size() == 1 && us[0] == u;
    };
    std::unordered_set<NodeId> b{t.dot};
    // Its accumulator: the carried value itself, or one elementwise update of it that only the product reads.
    const NodeId acc = g_.operand(t.dot, 2);
    if (acc != acc_arg) {
      if (!in_body(acc, body) || !ir::is_elementwise(g_.node(acc).op) || g_.node(acc).op == Op::Cast ||
          !only_user(acc, t.dot) || !only_user(acc_arg, acc))
        return std::nullopt;
      const auto ops = g_.operands(acc);
      if (std::find(ops.begin(), ops.end(), acc_arg) == ops.end()) return std::nullopt;
      b.insert(acc);
    } else if (!only_user(acc_arg, t.dot)) {
      return std::nullopt;
    }
    // Its operand a: a 16-bit value computed in A (registers), which becomes the carried operand.
    const NodeId a = g_.operand(t.dot, 0);
    if (!in_body(a, body) || g_.node(a).op != Op::Cast || ir::size_of(g_.node(a).dtype) != 2) return std::nullopt;
    // Its operand b: a TMA load of this iteration, through views only the product reads.
    NodeId v = g_.operand(t.dot, 1);
    for (NodeId reader = t.dot;; reader = v, v = g_.operand(v, 0)) {
      if (!in_body(v, body) || !only_user(v, reader)) return std::nullopt;
      b.insert(v);
      if (g_.node(v).op == Op::DescLoad) break;
      if (!movement(g_.node(v).op)) return std::nullopt;
    }
    if (in_body(g_.operand(v, 0), body)) return std::nullopt;  // a view made in the loop
    // Movement ops only B reads join it (an expanded rescale factor is carried as its vector).
    for (bool grew = true; grew;) {
      grew = false;
      for (NodeId x : nodes) {
        if (b.count(x) || !movement(g_.node(x).op)) continue;
        const auto& us = info_.users[static_cast<size_t>(x)];
        if (!us.empty() && std::all_of(us.begin(), us.end(), [&](NodeId u) { return b.count(u) > 0; }))
          b.insert(x), grew = true;
      }
    }
    if (b.count(t.first_dot)) return std::nullopt;
    // What B reads from the body: the accumulator, the index (through the slice), or A's values (crossing).
    const NodeId index = nodes.front();
    std::unordered_set<NodeId> slice, crossing;
    for (NodeId x : nodes) {
      if (!b.count(x)) continue;
      t.deferred.push_back(x);
      for (NodeId o : g_.operands(x)) {
        if (!in_body(o, body) || b.count(o) || o == acc_arg || o == index) continue;
        if (g_.node(o).op == Op::LoopArg) return std::nullopt;  // would need the value of two iterations ago
        if (!collect_slice(o, index, body, slice)) crossing.insert(o);
      }
    }
    for (NodeId x : nodes) {
      if (slice.count(x)) t.slice.push_back(x);
      if (crossing.count(x)) t.crossing.push_back(x);
    }
    return t;
  }

  /// Adds to `slice` the pure body nodes `x` is computed from when they all lead to the loop index only (not to
  /// loop-carried values or other body values); false when x is not such a function of the index.
  bool collect_slice(NodeId x, NodeId index, uint32_t body, std::unordered_set<NodeId>& slice) const {
    std::unordered_set<NodeId> seen;
    std::vector<NodeId> work{x};
    bool uses_index = false;
    while (!work.empty()) {
      const NodeId y = work.back();
      work.pop_back();
      if (!in_body(y, body) || seen.count(y)) continue;
      if (y == index) {
        uses_index = true;
        continue;
      }
      if (!detail::movable(g_, y) || g_.node(y).shape.rank != 0) return false;
      seen.insert(y);
      for (NodeId o : g_.operands(y)) work.push_back(o);
    }
    if (!uses_index) return false;
    slice.insert(seen.begin(), seen.end());
    return true;
  }

  const ir::Graph& g_;
  GraphInfo info_;
};

/// Builds the rewritten graph: for each target loop the first block's A before it, the rotated loop, the last
/// block's B after it.
class Rotator {
 public:
  Rotator(const ir::Graph& g, std::unordered_map<NodeId, Target> targets) : g_(g), targets_(std::move(targets)) {}

  ir::Graph run() {
    detail::Rewriter rw(g_);
    return rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId { return visit(r, old); });
  }

 private:
  using Map = std::unordered_map<NodeId, NodeId>;

  NodeId visit(detail::Rewriter& r, NodeId old) {
    if (auto t = targets_.find(old); t != targets_.end()) {
      rotate(r, old, t->second);
      return detail::Rewriter::kDrop;
    }
    const ir::Node& n = g_.node(old);
    if (n.op == Op::LoopResult && targets_.count(g_.operand(old, 0)))
      return results_.at(g_.operand(old, 0)).at(static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, old).index));
    return ir::kNoNode;
  }

  NodeId add(detail::Rewriter& r, NodeId loc, Op op, DType dtype, const ir::Shape& shape, const std::vector<NodeId>& ops,
             const std::vector<int64_t>& ints = {}) {
    return r.add_at(loc, op, dtype, shape, ops, ints);
  }

  /// Clones old body node `x` into the current region, its operands through `m` (else the rewriter's map). A TMA
  /// load cloned outside the loop is marked with the ring position it reads (`ring`), so that the loop's
  /// pipeline serves it from its ring (loop_pipeline.h, PipelinedLoop::first and last).
  void clone(detail::Rewriter& r, Map& m, NodeId x, ir::RingPosition ring = ir::RingPosition::none) {
    std::vector<NodeId> ops;
    for (NodeId o : g_.operands(x)) {
      auto it = m.find(o);
      ops.push_back(it != m.end() ? it->second : r.map(o));
    }
    const ir::Node& n = g_.node(x);
    std::vector<int64_t> ints(g_.ints(x).begin(), g_.ints(x).end());
    if (n.op == Op::DescLoad && ring != ir::RingPosition::none) {
      ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g_, x);
      a.ring = ring;
      ints = a.encode(Op::DescLoad);
    }
    m[x] = add(r, x, n.op, n.dtype, n.shape, ops, ints);
  }

  NodeId at(detail::Rewriter& r, const Map& m, NodeId x) const {
    auto it = m.find(x);
    return it != m.end() ? it->second : r.map(x);
  }

  /// B (with its slice) for the block whose index is `index`, into the current region.
  void emit_b(detail::Rewriter& r, Map& m, const Target& t, NodeId index, NodeId old_index,
              ir::RingPosition ring = ir::RingPosition::none) {
    m[old_index] = index;
    for (NodeId x : t.slice) clone(r, m, x);
    for (NodeId x : t.deferred) clone(r, m, x, ring);
  }

  std::vector<NodeId> if_results(detail::Rewriter& r, NodeId loc, NodeId branch, const std::vector<NodeId>& like) {
    std::vector<NodeId> out;
    for (size_t k = 0; k < like.size(); ++k) {
      const ir::Node& n = r.out().node(like[k]);
      out.push_back(add(r, loc, Op::IfResult, n.dtype, n.shape, {branch}, ir::IndexAttrs{static_cast<int>(k)}.encode(Op::IfResult)));
    }
    return out;
  }

  void rotate(detail::Rewriter& r, NodeId f, const Target& t) {
    ir::Graph& dst = r.out();
    const uint32_t body = ir::loop_body(g_, f);
    const auto& nodes = g_.region(body).nodes;
    const NodeId old_index = nodes.front();
    const NodeId old_yield = nodes.back();
    const auto fops = g_.operands(f);
    const size_t slots = fops.size() - 3;
    const NodeId lo = r.map(fops[0]), hi = r.map(fops[1]), step = r.map(fops[2]);
    std::vector<NodeId> init;
    for (size_t k = 3; k < fops.size(); ++k) init.push_back(r.map(fops[k]));
    std::vector<NodeId> old_args(slots, ir::kNoNode);
    for (NodeId x : nodes)
      if (g_.node(x).op == Op::LoopArg) old_args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, x).index)] = x;
    std::unordered_set<NodeId> skip(t.deferred.begin(), t.deferred.end());
    const auto a_nodes = [&] {
      std::vector<NodeId> out;
      for (NodeId x : nodes)
        if (ir::kind_of(g_.node(x).op) != ir::OpKind::Arg && x != old_yield && !skip.count(x)) out.push_back(x);
      return out;
    }();
    const auto acc = static_cast<size_t>(t.acc_slot);

    // The first block's A, when the loop runs at all. The rotated loop's first index comes before it: the ring's
    // prologue, placed before this block, needs it.
    const NodeId runs = add(r, f, Op::Lt, DType::i1, {}, {lo, hi});
    const NodeId lo2 = add(r, f, Op::Add, DType::i32, {}, {lo, step});
    const NodeId first = r.add_if(f, runs);
    const auto then_region = ir::attrs<ir::IfAttrs>(dst, first).then_region;
    std::vector<NodeId> yielded, otherwise;
    {
      dst.push_region(then_region);
      Map m{{old_index, lo}};
      for (size_t k = 0; k < slots; ++k)
        if (old_args[k] != ir::kNoNode) m[old_args[k]] = init[k];
      for (NodeId x : a_nodes) clone(r, m, x, ir::RingPosition::before_next_loop);
      for (size_t k = 0; k < slots; ++k)
        if (k != acc) yielded.push_back(at(r, m, g_.operand(old_yield, static_cast<int>(k))));
      for (NodeId c : t.crossing) yielded.push_back(m.at(c));
      add(r, f, Op::Yield, DType::i32, {}, yielded);
      dst.pop_region();
      dst.push_region(then_region + 1);
      for (size_t k = 0; k < slots; ++k)
        if (k != acc) otherwise.push_back(init[k]);
      for (NodeId c : t.crossing) {
        const ir::Node& n = g_.node(c);
        const NodeId zero = add(r, c, Op::Const, n.dtype, {}, {}, ir::ConstAttrs{0}.encode(Op::Const));
        otherwise.push_back(n.shape.rank == 0 ? zero : add(r, c, Op::Broadcast, n.dtype, n.shape, {zero}));
      }
      add(r, f, Op::Yield, DType::i32, {}, otherwise);
      dst.pop_region();
    }
    const std::vector<NodeId> after_first = if_results(r, f, first, yielded);

    // The rotated loop over the other blocks: its slots as the loop's, then the crossing values, then the index
    // of the block whose B is pending.
    std::vector<NodeId> loop_ops{lo2, hi, step};
    for (size_t k = 0, a = 0; k < slots; ++k) loop_ops.push_back(k == acc ? init[k] : after_first[a++]);
    for (size_t c = 0; c < t.crossing.size(); ++c) loop_ops.push_back(after_first[slots - 1 + c]);
    loop_ops.push_back(lo);
    const auto body_region = static_cast<uint32_t>(dst.num_regions());
    const NodeId loop = add(r, f, Op::For, DType::i32, {}, loop_ops, ir::ForAttrs{body_region}.encode(Op::For));
    check_internal(dst.new_region(loop) == body_region, "overlap_products: loop region numbering");
    const size_t carried = loop_ops.size() - 3;
    std::vector<NodeId> results;
    {
      dst.push_region(body_region);
      const NodeId j = add(r, old_index, Op::LoopIndex, DType::i32, {}, {loop});
      std::vector<NodeId> args;
      for (size_t k = 0; k < carried; ++k) {
        const ir::Node& n = dst.node(loop_ops[3 + k]);
        args.push_back(add(r, f, Op::LoopArg, n.dtype, n.shape, {loop}, ir::IndexAttrs{static_cast<int>(k)}.encode(Op::LoopArg)));
      }
      Map m{{old_index, j}};
      for (size_t k = 0; k < slots; ++k)
        if (old_args[k] != ir::kNoNode) m[old_args[k]] = args[k];
      for (NodeId x : a_nodes) {
        clone(r, m, x);
        if (x != t.first_dot) continue;
        Map mb = m;  // B reads the previous block's crossing values and index
        for (size_t c = 0; c < t.crossing.size(); ++c) mb[t.crossing[c]] = args[slots + c];
        emit_b(r, mb, t, add(r, f, Op::Sub, DType::i32, {}, {j, step}), old_index);
        m[t.dot] = mb.at(t.dot);
      }
      std::vector<NodeId> next;
      for (size_t k = 0; k < slots; ++k) next.push_back(at(r, m, g_.operand(old_yield, static_cast<int>(k))));
      for (NodeId c : t.crossing) next.push_back(m.at(c));
      next.push_back(j);
      add(r, old_yield, Op::Yield, DType::i32, {}, next);
      dst.pop_region();
      for (size_t k = 0; k < carried; ++k) {
        const ir::Node& n = dst.node(loop_ops[3 + k]);
        results.push_back(add(r, f, Op::LoopResult, n.dtype, n.shape, {loop}, ir::IndexAttrs{static_cast<int>(k)}.encode(Op::LoopResult)));
      }
    }

    // The last block's B, when the loop ran.
    const NodeId last = r.add_if(f, runs);
    const auto last_region = ir::attrs<ir::IfAttrs>(dst, last).then_region;
    std::vector<NodeId> acc_out;
    {
      dst.push_region(last_region);
      Map m{{old_args[acc], results[acc]}};
      for (size_t c = 0; c < t.crossing.size(); ++c) m[t.crossing[c]] = results[slots + c];
      emit_b(r, m, t, results.back(), old_index, ir::RingPosition::after_previous_loop);
      acc_out.push_back(m.at(t.dot));
      add(r, f, Op::Yield, DType::i32, {}, acc_out);
      dst.pop_region();
      dst.push_region(last_region + 1);
      add(r, f, Op::Yield, DType::i32, {}, {results[acc]});
      dst.pop_region();
    }
    std::vector<NodeId> out(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(slots));
    out[acc] = if_results(r, f, last, acc_out).front();
    results_[f] = out;
  }

  const ir::Graph& g_;
  std::unordered_map<NodeId, Target> targets_;
  std::unordered_map<NodeId, std::vector<NodeId>> results_;  ///< old loop -> the values of its results
};

}  // namespace

ir::Graph overlap_products(const ir::Graph& g) {
  auto targets = Planner(g).targets();
  if (targets.empty()) return g;
  return Rotator(g, std::move(targets)).run();
}

}  // namespace tilejit::passes
