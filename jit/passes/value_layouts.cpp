// Register layout assignment: which (register, lane, warp) holds which element of every block value.
#include <numeric>

#include "tilejit/error.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/register_budget.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"

namespace tilejit::passes {

using ir::Op;

namespace {

struct UnionFind {
  std::vector<NodeId> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  NodeId find(NodeId x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  }
  void unite(NodeId a, NodeId b) {
    a = find(a), b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
};

/// The LoopArg nodes of loop `f`, by slot.
std::vector<NodeId> loop_args(const ir::Graph& g, NodeId f) {
  std::vector<NodeId> args(g.operands(f).size() - 3, ir::kNoNode);
  for (NodeId id : g.region(ir::loop_body(g, f)).nodes)
    if (g.node(id).op == Op::LoopArg && g.operand(id, 0) == f) args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g, id).index)] = id;
  return args;
}

bool is_reduce(Op op) { return op == Op::ReduceSum || op == Op::ReduceMax || op == Op::ReduceMin || op == Op::ArgMax; }

/// The solver behind assign_layout and layout_conflicts.
class Solver {
 public:
  Solver(const ir::Graph& g, const GraphInfo& info, int threads)
      : g_(g), info_(info), warps_(threads / 32), uf_(g.size()), decided_(g.size()) {
    check_internal(threads >= 32 && threads % 32 == 0 && threads <= 1024, "assign_layout: bad thread count");
    mma_ = plan_mma(g, info, warps_);
    for (size_t i = 0; i < g.size(); ++i)
      if (info.position[i] >= 0) order_.push_back(static_cast<NodeId>(i));
    std::sort(order_.begin(), order_.end(), [&](NodeId a, NodeId b) {
      return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)];
    });
    group();
    decide();
  }

  ValueLayouts result() const {
    ValueLayouts out;
    out.threads = warps_ * 32;
    out.of.resize(g_.size());
    for (NodeId id : order_) {
      if (!ir::yields_value(g_.node(id).op)) continue;
      ValueLayout& v = out.of[static_cast<size_t>(id)];
      v.numel = g_.node(id).shape.numel();
      if (!distributed(id)) {
        v.kind = ValueLayout::Uniform;
        continue;
      }
      v.kind = ValueLayout::Distributed;
      v.dist = *decided_[root(id)];
    }
    return out;
  }

  std::vector<LayoutConflict> conflicts() const {
    std::vector<LayoutConflict> out;
    for (NodeId id : order_) {
      if (!distributed(id)) continue;
      const ir::Node& n = g_.node(id);
      if (auto want = imposed(id); want && !agrees(n.op, *want, *decided_[root(id)])) out.push_back({id, ir::kNoNode});
      if (n.op == Op::Broadcast) {
        const NodeId x = g_.operand(id, 0);
        if (distributed(x) && !(layout::unbroadcast(*decided_[root(id)], g_.node(x).shape) == *decided_[root(x)]))
          out.push_back({x, id});
      }
      if (auto a = register_a(id); a && !(*a == *decided_[root(g_.operand(id, 0))])) out.push_back({g_.operand(id, 0), id});
    }
    return out;
  }

 private:
  size_t root(NodeId id) const { return static_cast<size_t>(const_cast<UnionFind&>(uf_).find(id)); }
  bool distributed(NodeId id) const { return ir::yields_value(g_.node(id).op) && g_.node(id).shape.numel() > 1; }

  void unite(NodeId a, NodeId b) {
    if (distributed(a) && distributed(b)) uf_.unite(a, b);
  }

  /// Groups of values that must share a layout.
  void group() {
    for (NodeId id : order_) {
      const ir::Node& n = g_.node(id);
      const auto ops = g_.operands(id);
      if (is_elementwise(n.op)) {
        for (NodeId o : ops) unite(id, o);
      } else if (n.op == Op::Reduce) {
        for (NodeId o : ops) unite(ops[0], o);  // reduced together: one layout
      } else if (n.op == Op::Dot) {
        unite(id, ops[2]);
      } else if (n.op == Op::Load) {
        unite(id, ops[1]);
        if (ops.size() > 2) unite(id, ops[2]), unite(id, ops[3]);
      } else if (n.op == Op::Store || n.op == Op::AtomicAdd) {
        for (size_t k = 2; k < ops.size(); ++k) unite(ops[1], ops[k]);
      } else if (n.op == Op::For) {
        const auto args = loop_args(g_, id);
        const NodeId yield = g_.region(ir::loop_body(g_, id)).nodes.back();
        for (size_t k = 0; k < args.size(); ++k) {
          const NodeId init = ops[3 + k];
          unite(init, g_.operand(yield, static_cast<int>(k)));
          if (args[k] != ir::kNoNode) unite(init, args[k]);
        }
        for (NodeId u : info_.users[static_cast<size_t>(id)])
          if (g_.node(u).op == Op::LoopResult) unite(u, ops[3 + static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, u).index)]);
      } else if (n.op == Op::If) {
        const ir::IfAttrs branches = ir::attrs<ir::IfAttrs>(g_, id);
        const NodeId y0 = g_.region(branches.then_region).nodes.back();
        const NodeId y1 = g_.region(branches.else_region).nodes.back();
        for (size_t k = 0; k < g_.operands(y0).size(); ++k)
          unite(g_.operand(y0, static_cast<int>(k)), g_.operand(y1, static_cast<int>(k)));
        for (NodeId u : info_.users[static_cast<size_t>(id)])
          if (g_.node(u).op == Op::IfResult) unite(u, g_.operand(y0, ir::attrs<ir::IndexAttrs>(g_, u).index));
      }
    }
    // The vector width follows the narrowest element a group reads or writes in memory (16 bytes of
    // it per access); a group that touches no memory follows its widest element.
    widest_.assign(g_.size(), 1);
    narrowest_access_.assign(g_.size(), 0);
    auto accessed = [&](NodeId v, ir::DType t) {
      if (!distributed(v)) return;
      int& a = narrowest_access_[root(v)];
      a = a == 0 ? ir::size_of(t) : std::min(a, ir::size_of(t));
    };
    for (NodeId id : order_) {
      const ir::Node& n = g_.node(id);
      if (distributed(id)) widest_[root(id)] = std::max(widest_[root(id)], ir::size_of(n.dtype));
      if (n.op == Op::Load || n.op == Op::DescLoad) accessed(id, n.dtype);
      if (n.op == Op::Store || n.op == Op::AtomicAdd) accessed(g_.operand(id, 2), n.dtype);
      if (n.op == Op::DescStore) accessed(g_.operands(id).back(), n.dtype);
    }
  }

  int element_bytes(size_t group) const { return narrowest_access_[group] ? narrowest_access_[group] : widest_[group]; }

  /// The layout a value's producer dictates (a reduction's slice, a unit reshape's, once its operand
  /// is decided; a tensor-core dot's accumulator fragment).
  std::optional<layout::Layout> imposed(NodeId id) const {
    const ir::Node& n = g_.node(id);
    if (n.op == Op::Dot) {
      const auto it = mma_.dots.find(id);
      if (it == mma_.dots.end()) return std::nullopt;
      return layout::wgmma_accumulator(it->second.tiling, warps_);
    }
    if (!is_reduce(n.op) && n.op != Op::ReduceResult && n.op != Op::Reshape) return std::nullopt;
    const NodeId reduce = n.op == Op::ReduceResult ? g_.operand(id, 0) : id;  // a Reduce's values take its slice
    const NodeId x = g_.operand(reduce, 0);
    if (!distributed(x) || !decided_[root(x)]) return std::nullopt;
    const layout::Layout& lx = *decided_[root(x)];
    if (n.op != Op::Reshape) return layout::slice(lx, ir::reduction_axis(g_, reduce));
    if (auto l = layout::reshape_units(lx, n.shape)) return l;
    // Any other reshape is free when the blocked layout of the new shape with the same vectors
    // holds the same elements in the same registers (row-major order is kept).
    const int vec = lx.vector_width();
    if (n.shape.dims[n.shape.rank - 1] % vec != 0) return std::nullopt;
    layout::Layout l = layout::blocked(n.shape, vec, warps_);
    if (layout::same_registers(lx, l)) return l;
    return std::nullopt;
  }

  /// True when a value produced by `op` in layout `want` may stand in `have` with no data moved: for a
  /// reshape, the same elements in the same registers (padding may lie in other dimensions; the emitter
  /// renames such a reshape); for any other producer, the same layout.
  static bool agrees(Op op, const layout::Layout& want, const layout::Layout& have) {
    return op == Op::Reshape ? layout::same_registers(want, have) : want == have;
  }

  bool decide_group(NodeId member, layout::Layout l) {
    auto& d = decided_[root(member)];
    if (d) return false;
    d = std::move(l);
    return true;
  }

  /// Decides every group: producers' dictates and broadcasts' wishes first, then blocked layouts in program order.
  void decide() {
    for (;;) {
      bool changed = true;
      while (changed) {
        changed = false;
        for (NodeId id : order_) {
          if (!distributed(id)) continue;
          if (!decided_[root(id)])
            if (auto want = imposed(id)) changed = decide_group(id, *want) || changed;
          if (auto want = wished(id)) changed = decide_group(g_.operand(id, 0), *want) || changed;
        }
      }
      // The first undecided group that no consumer or producer is waiting to decide gets a blocked layout.
      NodeId pick = ir::kNoNode, fallback = ir::kNoNode;
      for (NodeId id : order_) {
        if (!distributed(id) || decided_[root(id)]) continue;
        if (fallback == ir::kNoNode) fallback = id;
        if (!waits_for_consumer(root(id)) && !waits_for_producer(root(id))) {
          pick = id;
          break;
        }
      }
      if (pick == ir::kNoNode) pick = fallback;
      if (pick == ir::kNoNode) return;
      const ir::Shape& s = g_.node(pick).shape;
      const int vec = layout::choose_vector(s, 16 / element_bytes(root(pick)), warps_);
      decide_group(pick, layout::blocked(s, vec, warps_));
    }
  }

  /// The layout a tensor-core dot that reads its operand a from registers needs a in.
  std::optional<layout::Layout> register_a(NodeId id) const {
    if (g_.node(id).op != Op::Dot) return std::nullopt;
    const auto it = mma_.dots.find(id);
    if (it == mma_.dots.end() || !it->second.a_in_registers() || !distributed(g_.operand(id, 0))) return std::nullopt;
    return layout::wgmma_a_fragment(it->second.tiling, warps_);
  }

  /// A unit reshape's or a broadcast's consumer-side wish for its operand's layout: the layout in which
  /// it moves no data, once its own group is decided and while the operand's is not; a dot's for its
  /// operand a in registers.
  std::optional<layout::Layout> wished(NodeId id) const {
    const ir::Node& n = g_.node(id);
    if (auto a = register_a(id)) {
      if (decided_[root(g_.operand(id, 0))]) return std::nullopt;
      return a;
    }
    if ((n.op != Op::Broadcast && n.op != Op::Reshape) || !distributed(id) || !decided_[root(id)]) return std::nullopt;
    const NodeId x = g_.operand(id, 0);
    if (!distributed(x) || decided_[root(x)]) return std::nullopt;
    if (n.op == Op::Broadcast) return layout::unbroadcast(*decided_[root(id)], g_.node(x).shape);
    return layout::reshape_units(*decided_[root(id)], g_.node(x).shape);
  }

  /// True when a member of group `r` is the operand of a broadcast or unit reshape whose result is
  /// still undecided (that consumer will choose the layout in which it is free).
  bool waits_for_consumer(size_t r) const {
    for (NodeId id : order_) {
      const Op op = g_.node(id).op;
      if (register_a(id) && root(g_.operand(id, 0)) == r) return true;
      if ((op != Op::Broadcast && op != Op::Reshape) || !distributed(id) || decided_[root(id)]) continue;
      const NodeId x = g_.operand(id, 0);
      if (!distributed(x) || root(x) != r) continue;
      if (op == Op::Reshape && !layout::unit_reshape_dims(g_.node(x).shape, g_.node(id).shape)) continue;
      return true;
    }
    return false;
  }

  /// True when a member of group `r` is a unit reshape of an undecided value that another reshape also
  /// reads (one arange made a row and a column). The two cannot both decide the value's layout for
  /// free; this member waits for the value to be decided and then takes its reshape of it, so that
  /// only one of the two needs a conversion (a blocked layout chosen here first costs one each).
  bool waits_for_producer(size_t r) const {
    for (NodeId id : order_) {
      if (g_.node(id).op != Op::Reshape || !distributed(id) || root(id) != r) continue;
      const NodeId x = g_.operand(id, 0);
      if (!distributed(x) || root(x) == r || decided_[root(x)]) continue;
      for (NodeId u : info_.users[static_cast<size_t>(x)])
        if (u != id && g_.node(u).op == Op::Reshape) return true;
    }
    return false;
  }

  const ir::Graph& g_;
  const GraphInfo& info_;
  int warps_;
  MmaPlan mma_;
  UnionFind uf_;
  std::vector<NodeId> order_;
  std::vector<int> widest_;
  std::vector<int> narrowest_access_;  ///< per group root: bytes of the narrowest element it moves to or from memory (0: none)
  std::vector<std::optional<layout::Layout>> decided_;  ///< per group root
};

}  // namespace

std::vector<LayoutConflict> layout_conflicts(const ir::Graph& g, const GraphInfo& info, int threads) {
  return Solver(g, info, threads).conflicts();
}

ValueLayouts assign_layout(const ir::Graph& g, const GraphInfo& info, int threads) {
  Solver s(g, info, threads);
  const auto c = s.conflicts();
  if (!c.empty())
    throw InternalError("assign_layout: the layouts of %" + std::to_string(c.front().node) +
                        " disagree; insert_layout_conversions must run first");
  return s.result();
}

void check_register_budget(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const SmemPlan& smem) {
  const int warps = layout.threads / 32;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const ValueLayout& v = layout.of[i];
    if (info.position[i] < 0 || v.kind != ValueLayout::Distributed) continue;
    if (smem.resident.count(id) && !smem.register_copies.count(id)) continue;  // read in place, never in registers
    const ir::Node& n = g.node(id);
    const int64_t words = (static_cast<int64_t>(v.regs()) * ir::size_of(n.dtype) + 3) / 4;
    if (words <= kMaxValueRegisters) continue;
    const int64_t per_warp = (v.numel * ir::size_of(n.dtype) + 3) / 4 / 32;
    std::string hint = "use more warps (num_warps up to 32)";
    for (int w = warps * 2; w <= 32; w *= 2)
      if (per_warp / w <= kMaxValueRegisters) {
        hint = "use num_warps=" + std::to_string(w) + " or more";
        break;
      }
    const ir::Location& l = g.location(id);
    throw UserError("block value " + n.shape.str() + " " + std::string(ir::name_of(n.dtype)) + " (" +
                        std::string(ir::name_of(n.op)) + ") does not fit in registers with num_warps=" + std::to_string(warps) +
                        ": " + hint + ", or a smaller block",
                    std::to_string(words) + " 32-bit registers per thread", std::to_string(kMaxValueRegisters), l.file, l.line);
  }
}

}  // namespace tilejit::passes
