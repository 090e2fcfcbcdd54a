// Axis analysis: contiguity, divisibility and constancy of integer values, and the vector width of pointer accesses.
#include <algorithm>

#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/value_layouts.h"

namespace tilejit::passes {

using ir::Op;

namespace {

int64_t pow2_factor(int64_t v) {
  if (v == 0) return kMaxDivisibility;
  int64_t p = 1;
  while (p < kMaxDivisibility && v % (p * 2) == 0) p *= 2;
  return p;
}
int64_t gcd2(int64_t a, int64_t b) { return std::min(a, b); }  // both powers of two
int64_t clamp_div(int64_t v) { return std::min(v, kMaxDivisibility); }
int64_t pow2_floor(int64_t v) {
  int64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

/// The facts of a value that is the same everywhere (a scalar, or a block of one value).
AxisInfo uniform_value(const ir::Shape& s, int64_t div) {
  AxisInfo a;
  for (int d = 0; d < ir::kMaxRank; ++d) {
    a.divisibility[static_cast<size_t>(d)] = div;
    a.constancy[static_cast<size_t>(d)] = d < s.rank ? pow2_floor(s.dims[d]) : 1;
  }
  return a;
}

/// A power of two dividing every element along dimension k (not only the first of each run).
int64_t element_div(const AxisInfo& a, size_t k) { return a.contiguity[k] == 1 ? a.divisibility[k] : 1; }

/// A power of two dividing every element of the value.
int64_t every_element_div(const AxisInfo& a, int rank) {
  int64_t v = rank == 0 ? a.divisibility[0] : kMaxDivisibility;
  for (int d = 0; d < rank; ++d) v = std::min(v, element_div(a, static_cast<size_t>(d)));
  return v;
}

/// The parameter index of a tensor node that is a kernel parameter (-1 for views).
int param_of(const ir::Graph& g, NodeId t) {
  return g.node(t).op == Op::ParamTensor ? ir::attrs<ir::ParamAttrs>(g, t).param : -1;
}

}  // namespace

// One pass over the program in order with a case per op that has axis facts to propagate (Triton's
// AxisInfo visitors, written as one switch): long for that reason, each case a few lines.
std::vector<AxisInfo> analyze_axes(const ir::Graph& g, const GraphInfo& info, const codegen::Specialization& spec) {
  std::vector<AxisInfo> ax(g.size());
  std::vector<NodeId> order;
  for (size_t i = 0; i < g.size(); ++i)
    if (info.position[i] >= 0) order.push_back(static_cast<NodeId>(i));
  std::sort(order.begin(), order.end(), [&](NodeId a, NodeId b) {
    return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)];
  });
  for (NodeId id : order) {
    const ir::Node& n = g.node(id);
    const auto ops = g.operands(id);
    const int r = n.shape.rank;
    AxisInfo& a = ax[static_cast<size_t>(id)];
    auto of = [&](int k) -> const AxisInfo& { return ax[static_cast<size_t>(ops[static_cast<size_t>(k)])]; };
    switch (n.op) {
      case Op::Const:
        a = ir::is_float(n.dtype) ? AxisInfo{} : uniform_value(n.shape, pow2_factor(g.const_i(id)));
        break;
      case Op::LoopIndex: {  // lo + t * step: divisible by whatever divides both
        const auto loop = g.operands(ops[0]);
        const int64_t lo = ax[static_cast<size_t>(loop[0])].divisibility[0], step = ax[static_cast<size_t>(loop[2])].divisibility[0];
        a = uniform_value(n.shape, std::min(lo, step));
        break;
      }
      case Op::TensorSize: case Op::TensorStride: {
        const int p = param_of(g, ops[0]);
        const int d = ir::attrs<ir::DimAttrs>(g, id).dim;
        const codegen::Specialization::Bits bit = n.op == Op::TensorSize ? codegen::Specialization::size_div16(d)
                                                    : codegen::Specialization::stride_div16(d);
        a = uniform_value(n.shape, p >= 0 && (spec.of(p) & bit) ? 16 : 1);
        break;
      }
      case Op::Arange:  // runs of c start at start + k * c
        a.contiguity[0] = pow2_floor(n.shape.dims[0]);
        a.divisibility[0] = std::min(pow2_factor(ir::attrs<ir::ArangeAttrs>(g, id).start), a.contiguity[0]);
        break;
      case Op::Cast: case Op::ConvertLayout:
        if (!ir::is_float(n.dtype) && !ir::is_float(g.node(ops[0]).dtype)) a = of(0);
        break;
      case Op::Broadcast: {
        const ir::Shape& sx = g.node(ops[0]).shape;
        const int lead = r - sx.rank;
        for (int d = 0; d < r; ++d) {
          const auto k = static_cast<size_t>(d);
          const int dx = d - lead;
          if (dx >= 0 && sx.dims[dx] == n.shape.dims[d]) {
            a.contiguity[k] = of(0).contiguity[static_cast<size_t>(dx)];
            a.divisibility[k] = of(0).divisibility[static_cast<size_t>(dx)];
            a.constancy[k] = of(0).constancy[static_cast<size_t>(dx)];
          } else {  // expanded: one value repeated
            a.contiguity[k] = 1;
            a.divisibility[k] = every_element_div(of(0), sx.rank);
            a.constancy[k] = pow2_floor(n.shape.dims[d]);
          }
        }
        break;
      }
      case Op::Reshape: {
        // Unit dimensions added or removed: the other dimensions keep their facts.
        const ir::Shape& sx = g.node(ops[0]).shape;
        const auto where = layout::unit_reshape_dims(sx, n.shape);
        if (!where) break;
        const int64_t every = every_element_div(of(0), sx.rank);  // a unit dimension's one element
        for (int d = 0; d < r; ++d) a.divisibility[static_cast<size_t>(d)] = every;
        for (int d = 0; d < sx.rank; ++d) {
          const auto s = static_cast<size_t>(d);
          if ((*where)[s] < 0) continue;
          const auto t = static_cast<size_t>((*where)[s]);
          a.contiguity[t] = of(0).contiguity[s];
          a.divisibility[t] = of(0).divisibility[s];
          a.constancy[t] = of(0).constancy[s];
        }
        break;
      }
      case Op::Add: case Op::Sub: {
        if (ir::is_float(n.dtype)) break;
        const AxisInfo &x = of(0), &y = of(1);
        for (int d = 0; d < std::max(r, 1); ++d) {
          const auto k = static_cast<size_t>(d);
          a.contiguity[k] = n.op == Op::Add ? std::max(gcd2(x.contiguity[k], y.constancy[k]), gcd2(y.contiguity[k], x.constancy[k]))
                                            : gcd2(x.contiguity[k], y.constancy[k]);
          if (a.contiguity[k] > 1) {
            // A run of the result lies inside a run of the contiguous operand, at a multiple of its length
            // from that run's start, while the other operand is constant over it.
            a.divisibility[k] = std::min({x.divisibility[k], y.divisibility[k], a.contiguity[k]});
          } else {  // every element is its own run: only what divides every element of both counts
            a.divisibility[k] = gcd2(element_div(x, k), element_div(y, k));
          }
          a.constancy[k] = gcd2(x.constancy[k], y.constancy[k]);
        }
        break;
      }
      case Op::Mul: {
        if (ir::is_float(n.dtype)) break;
        const AxisInfo &x = of(0), &y = of(1);
        for (int d = 0; d < std::max(r, 1); ++d) {
          const auto k = static_cast<size_t>(d);
          a.divisibility[k] = clamp_div(element_div(x, k) * element_div(y, k));  // contiguity 1: every element
          a.constancy[k] = gcd2(x.constancy[k], y.constancy[k]);
        }
        break;
      }
      case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Eq: case Op::Ne: {
        if (ir::is_float(g.node(ops[0]).dtype)) break;
        // A contiguous run r, r + 1, ... from a multiple of g = gcd(contiguity, divisibilities), compared
        // with a value c constant over it (a multiple of g), is constant over runs of g only when the
        // comparison is "r < c" or "r >= c": c lies on a run's boundary, so every element of a run is on
        // the same side of it. "r <= c", "r > c", "r == c" and "r != c" change inside a run when c is its
        // first element (arange(0, 2) == 0 is {true, false}).
        const AxisInfo &x = of(0), &y = of(1);
        const bool x_runs = n.op == Op::Lt || n.op == Op::Ge;  // x contiguous, y constant: x < y, x >= y
        const bool y_runs = n.op == Op::Gt || n.op == Op::Le;  // y contiguous, x constant: y < x, y >= x
        for (int d = 0; d < r; ++d) {
          const auto k = static_cast<size_t>(d);
          int64_t c = gcd2(x.constancy[k], y.constancy[k]);
          if (x_runs && y.constancy[k] >= x.contiguity[k])
            c = std::max(c, gcd2(x.contiguity[k], gcd2(x.divisibility[k], y.divisibility[k])));
          if (y_runs && x.constancy[k] >= y.contiguity[k])
            c = std::max(c, gcd2(y.contiguity[k], gcd2(x.divisibility[k], y.divisibility[k])));
          a.constancy[k] = c;
        }
        break;
      }
      case Op::And: case Op::Or: case Op::Xor: case Op::Not:
        for (int d = 0; d < r; ++d) {
          const auto k = static_cast<size_t>(d);
          a.constancy[k] = of(0).constancy[k];
          if (ops.size() > 1) a.constancy[k] = gcd2(a.constancy[k], of(1).constancy[k]);
        }
        break;
      // Nothing known: every element its own run, divisible by 1 (AxisInfo's defaults).
      TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE)
      TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
      case Op::ParamScalar: case Op::ProgramId: case Op::NumPrograms: case Op::TileGrid: case Op::Permute: case Op::Div:
      case Op::Rem: case Op::Min: case Op::Max: case Op::Neg: case Op::Abs: case Op::Exp: case Op::Exp2:
      case Op::Log: case Op::Log2: case Op::Sqrt: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Tanh:
      case Op::Sigmoid: case Op::Erf: case Op::TanhApprox: case Op::Where: case Op::Fma: case Op::Dot: case Op::For: case Op::LoopArg:
      case Op::LoopResult: case Op::If: case Op::IfResult: case Op::Yield:
        break;
    }
  }
  return ax;
}

std::vector<codegen::Specialization::Bits> relevant_specialization(const ir::Graph& g) {
  std::vector<codegen::Specialization::Bits> bits(g.params.size(), 0);
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const ir::Node& n = g.node(id);
    if (n.op == Op::Load || n.op == Op::Store) {
      const int p = param_of(g, g.operand(id, 0));
      if (p >= 0) bits[static_cast<size_t>(p)] |= codegen::Specialization::kBaseAligned;
    } else if (n.op == Op::TensorSize || n.op == Op::TensorStride) {
      const int p = param_of(g, g.operand(id, 0));
      const int d = ir::attrs<ir::DimAttrs>(g, id).dim;
      if (p >= 0)
        bits[static_cast<size_t>(p)] |= n.op == Op::TensorSize ? codegen::Specialization::size_div16(d)
                                                                : codegen::Specialization::stride_div16(d);
    }
  }
  return bits;
}

int vector_width(const ir::Graph& g, const ValueLayouts& layout, const std::vector<AxisInfo>& axes,
                 const codegen::Specialization& spec, NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op != Op::Load && n.op != Op::Store) return 1;
  const auto ops = g.operands(id);
  const NodeId offs = ops[1];
  const ValueLayout& lo = layout.of[static_cast<size_t>(offs)];
  if (lo.kind != ValueLayout::Distributed || lo.dist.replicated()) return 1;
  const int p = param_of(g, ops[0]);
  if (p < 0 || !(spec.of(p) & codegen::Specialization::kBaseAligned)) return 1;
  const int last = g.node(offs).shape.rank - 1;
  const AxisInfo& ao = axes[static_cast<size_t>(offs)];
  int64_t v = std::min<int64_t>(lo.dist.vector_width(), 16 / ir::size_of(n.dtype));
  v = std::min({v, ao.contiguity[static_cast<size_t>(last)], ao.divisibility[static_cast<size_t>(last)]});
  const bool masked = ir::attrs<ir::AccessAttrs>(g, id).masked;
  if (masked) v = std::min(v, axes[static_cast<size_t>(ops[n.op == Op::Load ? 2 : 3])].constancy[static_cast<size_t>(last)]);
  return static_cast<int>(pow2_floor(std::max<int64_t>(v, 1)));
}

int register_constancy(const ValueLayouts& layout, const std::vector<AxisInfo>& axes, const ir::Graph& g, NodeId id) {
  const ValueLayout& lo = layout.of[static_cast<size_t>(id)];
  if (lo.kind != ValueLayout::Distributed) return 1;
  const int last = g.node(id).shape.rank - 1;
  if (last < 0) return 1;
  const int64_t k = std::min<int64_t>(lo.dist.vector_width(), axes[static_cast<size_t>(id)].constancy[static_cast<size_t>(last)]);
  return static_cast<int>(pow2_floor(std::max<int64_t>(k, 1)));
}

}  // namespace tilejit::passes
