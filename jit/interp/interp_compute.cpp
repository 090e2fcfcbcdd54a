// Block computations of the interpreter: elementwise ops, casts, shape ops, reductions and dot.
#include <algorithm>
#include <cmath>

#include "interp_internal.h"
#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::interp::detail {

using ir::Op;

const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t b = 0; b < 65536; ++b) t[b] = static_cast<float>(ir::f16_bits_to_double(static_cast<uint16_t>(b)));
    return t;
  }();
  return table.data();
}

std::string lane_str(const ir::Shape& s, int64_t lane) {
  if (s.rank == 0) return "";
  int64_t idx[ir::kMaxRank];
  for (int d = s.rank - 1; d >= 0; --d) {
    idx[d] = lane % s.dims[d];
    lane /= s.dims[d];
  }
  std::string r = "[";
  for (int d = 0; d < s.rank; ++d) {
    if (d) r += ", ";
    r += std::to_string(idx[d]);
  }
  return r + "]";
}

namespace {

/// Applies f elementwise to float blocks and rounds each result to the output type
/// (f16/bf16 through f32, as the GPU evaluates them).
template <class F>
void float_map2(const Block& a, const Block& b, Block& out, F f) {
  const size_t n = out.f.size();
  const double* pa = a.f.data();
  const double* pb = b.f.data();
  double* po = out.f.data();
  switch (out.dtype) {
    case DType::f64:
      for (size_t k = 0; k < n; ++k) po[k] = f(pa[k], pb[k]);
      break;
    case DType::f32:
      for (size_t k = 0; k < n; ++k) po[k] = static_cast<float>(f(pa[k], pb[k]));
      break;
    case DType::bf16:
      for (size_t k = 0; k < n; ++k) po[k] = bf16_value(bf16_bits_of_float(static_cast<float>(f(pa[k], pb[k]))));
      break;
    case DType::f16:
      for (size_t k = 0; k < n; ++k) po[k] = f16_value(f16_bits_of_float(static_cast<float>(f(pa[k], pb[k]))));
      break;
    default:
      for (size_t k = 0; k < n; ++k) po[k] = round_arith(out.dtype, f(pa[k], pb[k]));
      break;
  }
}

template <class F>
void float_map1(const Block& x, Block& out, F f) {
  const size_t n = out.f.size();
  const double* px = x.f.data();
  double* po = out.f.data();
  switch (out.dtype) {
    case DType::f64:
      for (size_t k = 0; k < n; ++k) po[k] = f(px[k]);
      break;
    case DType::f32:
      for (size_t k = 0; k < n; ++k) po[k] = static_cast<float>(f(px[k]));
      break;
    default:
      for (size_t k = 0; k < n; ++k) po[k] = round_arith(out.dtype, f(px[k]));
      break;
  }
}

template <class F>
void int_map2(const Block& a, const Block& b, Block& out, F f) {
  const size_t n = out.i.size();
  const int64_t* pa = a.i.data();
  const int64_t* pb = b.i.data();
  int64_t* po = out.i.data();
  const DType t = out.dtype;
  for (size_t k = 0; k < n; ++k) po[k] = wrap(t, f(pa[k], pb[k]));
}

void int_divide(const Block& a, const Block& b, Block& out, bool rem) {
  const size_t n = out.i.size();
  const DType t = out.dtype;
  for (size_t k = 0; k < n; ++k) {
    const int64_t x = a.i[k], y = b.i[k];
    int64_t r;
    if (y == 0) {
      r = rem ? x : -1;  // defined in ir.h: x / 0 = -1, x % 0 = x
    } else if (y == -1) {
      r = rem ? 0 : wrapping_sub(0, x);  // avoids INT64_MIN / -1; narrower types wrap below
    } else {
      r = rem ? x % y : x / y;
    }
    out.i[k] = wrap(t, r);
  }
}

}  // namespace

void eval_binary(Op op, const Block& a, const Block& b, Block& out) {
  const bool fp = is_float(out.dtype);
  switch (op) {
    case Op::Add:
      if (fp) return float_map2(a, b, out, [](double x, double y) { return x + y; });
      return int_map2(a, b, out, wrapping_add);
    case Op::Sub:
      if (fp) return float_map2(a, b, out, [](double x, double y) { return x - y; });
      return int_map2(a, b, out, wrapping_sub);
    case Op::Mul:
      if (fp) return float_map2(a, b, out, [](double x, double y) { return x * y; });
      return int_map2(a, b, out, wrapping_mul);
    case Op::Div:
      if (fp) return float_map2(a, b, out, [](double x, double y) { return x / y; });
      return int_divide(a, b, out, false);
    case Op::Rem:
      if (fp) return float_map2(a, b, out, [](double x, double y) { return std::fmod(x, y); });
      return int_divide(a, b, out, true);
    case Op::Min:
      if (fp) return float_map2(a, b, out, fmin_nan);
      return int_map2(a, b, out, [](int64_t x, int64_t y) { return std::min(x, y); });
    case Op::Max:
      if (fp) return float_map2(a, b, out, fmax_nan);
      return int_map2(a, b, out, [](int64_t x, int64_t y) { return std::max(x, y); });
    case Op::And:
      if (fp) throw InternalError("interpreter: bitwise op on a float block");
      return int_map2(a, b, out, [](int64_t x, int64_t y) { return x & y; });
    case Op::Or:
      if (fp) throw InternalError("interpreter: bitwise op on a float block");
      return int_map2(a, b, out, [](int64_t x, int64_t y) { return x | y; });
    case Op::Xor:
      if (fp) throw InternalError("interpreter: bitwise op on a float block");
      return int_map2(a, b, out, [](int64_t x, int64_t y) { return x ^ y; });
    // The interpreter evaluates the other ops elsewhere.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_COMPARE_OPS(TILEJIT_CASE) TILEJIT_UNARY_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError("interpreter: unexpected binary op " + std::string(ir::name_of(op)));
}

namespace {
template <class V, class F>
void compare_map(const std::vector<V>& a, const std::vector<V>& b, Block& out, F f) {
  const size_t n = out.i.size();
  for (size_t k = 0; k < n; ++k) out.i[k] = f(a[k], b[k]) ? 1 : 0;
}
template <class V>
void compare_typed(Op op, const std::vector<V>& a, const std::vector<V>& b, Block& out) {
  // Ordered comparisons: with a NaN operand every comparison but != is false.
  switch (op) {
    case Op::Eq: return compare_map(a, b, out, [](V x, V y) { return x == y; });
    case Op::Ne: return compare_map(a, b, out, [](V x, V y) { return x != y; });
    case Op::Lt: return compare_map(a, b, out, [](V x, V y) { return x < y; });
    case Op::Le: return compare_map(a, b, out, [](V x, V y) { return x <= y; });
    case Op::Gt: return compare_map(a, b, out, [](V x, V y) { return x > y; });
    case Op::Ge: return compare_map(a, b, out, [](V x, V y) { return x >= y; });
    // The interpreter evaluates the other ops elsewhere.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_BINARY_OPS(TILEJIT_CASE) TILEJIT_UNARY_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError("interpreter: unexpected comparison " + std::string(ir::name_of(op)));
}
}  // namespace

void eval_compare(Op op, const Block& a, const Block& b, Block& out) {
  if (is_float(a.dtype)) {
    compare_typed(op, a.f, b.f, out);
  } else {
    compare_typed(op, a.i, b.i, out);
  }
}

void eval_unary(Op op, const Block& x, Block& out) {
  const DType t = out.dtype;
  const bool fp = is_float(t);
  switch (op) {
    case Op::Neg:
      if (fp) return float_map1(x, out, [](double v) { return -v; });
      for (size_t k = 0; k < out.i.size(); ++k) out.i[k] = wrap(t, wrapping_sub(0, x.i[k]));
      return;
    case Op::Not:
      if (fp) break;
      for (size_t k = 0; k < out.i.size(); ++k) out.i[k] = t == DType::i1 ? (x.i[k] ? 0 : 1) : wrap(t, ~x.i[k]);
      return;
    case Op::Abs:
      if (fp) return float_map1(x, out, [](double v) { return std::fabs(v); });
      for (size_t k = 0; k < out.i.size(); ++k) out.i[k] = wrap(t, x.i[k] < 0 ? wrapping_sub(0, x.i[k]) : x.i[k]);
      return;
    // Float functions.
    case Op::Exp:
      if (fp) return float_map1(x, out, [](double v) { return std::exp(v); });
      break;
    case Op::Exp2:
      if (!fp) break;
      if (out.dtype == DType::f64) return float_map1(x, out, [](double v) { return std::exp2(v); });
      // Below f64 the GPU's ex2.approx.ftz flushes results under 2^-126 (ir.h).
      return float_map1(x, out, [](double v) {
        const double r = std::exp2(v);
        return r < 0x1p-126 ? 0.0 : r;
      });
    case Op::Log:
      if (fp) return float_map1(x, out, [](double v) { return std::log(v); });
      break;
    case Op::Log2:
      if (fp) return float_map1(x, out, [](double v) { return std::log2(v); });
      break;
    case Op::Sqrt:
      if (fp) return float_map1(x, out, [](double v) { return std::sqrt(v); });
      break;
    case Op::Rsqrt:
      if (fp) return float_map1(x, out, [](double v) { return 1.0 / std::sqrt(v); });
      break;
    case Op::Sin:
      if (fp) return float_map1(x, out, [](double v) { return std::sin(v); });
      break;
    case Op::Cos:
      if (fp) return float_map1(x, out, [](double v) { return std::cos(v); });
      break;
    case Op::Tanh:
    case Op::TanhApprox:  // the exact value: the GPU's approximation is within 2^-10.9 of it, relative (ir.h)
      if (fp) return float_map1(x, out, [](double v) { return std::tanh(v); });
      break;
    case Op::Sigmoid:
      if (!fp) break;
      if (out.dtype == DType::f64) return float_map1(x, out, [](double v) { return 1.0 / (1.0 + std::exp(-v)); });
      // Below f64 the GPU's approximate reciprocal flushes results under 2^-126 (ir.h).
      return float_map1(x, out, [](double v) {
        const double r = 1.0 / (1.0 + std::exp(-v));
        return r < 0x1p-126 ? 0.0 : r;
      });
    case Op::Erf:
      if (fp) return float_map1(x, out, [](double v) { return std::erf(v); });
      break;
    // The interpreter evaluates the other ops elsewhere.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_BINARY_OPS(TILEJIT_CASE) TILEJIT_COMPARE_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError(std::string(fp ? "interpreter: unexpected unary op on a float block: "
                                     : "interpreter: unexpected unary op on an integer block: ") +
                      std::string(ir::name_of(op)));
}

void eval_cast(const Block& x, Block& out) {
  const DType from = x.dtype, to = out.dtype;
  const size_t n = out.size();
  if (is_float(from) && is_float(to)) {
    // One rounding from the exact source value (widening conversions are exact).
    for (size_t k = 0; k < n; ++k) out.f[k] = round_once(to, x.f[k]);
    return;
  }
  if (is_float(from)) {
    for (size_t k = 0; k < n; ++k) out.i[k] = float_to_int(to, x.f[k]);
    return;
  }
  if (is_float(to)) {
    if (to == DType::f64) {
      for (size_t k = 0; k < n; ++k) out.f[k] = static_cast<double>(x.i[k]);
    } else {
      for (size_t k = 0; k < n; ++k) out.f[k] = round_once(to, int_to_double_odd(x.i[k]));
    }
    return;
  }
  for (size_t k = 0; k < n; ++k) out.i[k] = wrap(to, x.i[k]);
}

void eval_where(const Block& c, const Block& a, const Block& b, Block& out) {
  const size_t n = out.size();
  if (is_float(out.dtype)) {
    for (size_t k = 0; k < n; ++k) out.f[k] = c.i[k] ? a.f[k] : b.f[k];
  } else {
    for (size_t k = 0; k < n; ++k) out.i[k] = c.i[k] ? a.i[k] : b.i[k];
  }
}

void eval_fma(const Block& a, const Block& b, const Block& c, Block& out) {
  const size_t n = out.f.size();
  if (out.dtype == DType::f64) {
    for (size_t k = 0; k < n; ++k) out.f[k] = std::fma(a.f[k], b.f[k], c.f[k]);
    return;
  }
  // f32, and f16 / bf16 through f32: one rounding to f32 (std::fmaf, as the GPU's fma.rn.f32), then the
  // storage type's. The operands are exact in f32 (an f32 value, or a narrower one widened).
  for (size_t k = 0; k < n; ++k) {
    const float r = std::fmaf(static_cast<float>(a.f[k]), static_cast<float>(b.f[k]), static_cast<float>(c.f[k]));
    switch (out.dtype) {
      case DType::f32: out.f[k] = r; break;
      case DType::bf16: out.f[k] = bf16_value(bf16_bits_of_float(r)); break;
      case DType::f16: out.f[k] = f16_value(f16_bits_of_float(r)); break;
      default: throw InternalError("fma: not a float type");
    }
  }
}

namespace {
/// Copies out[j] = in[sum_d idx_d * stride[d]] for every index of `dims` (padded to 5, row-major).
template <class V>
void gather5(const std::vector<V>& in, std::vector<V>& out, const int64_t (&dims)[5], const int64_t (&stride)[5]) {
  size_t j = 0;
  for (int64_t a = 0; a < dims[0]; ++a)
    for (int64_t b = 0; b < dims[1]; ++b)
      for (int64_t c = 0; c < dims[2]; ++c)
        for (int64_t d = 0; d < dims[3]; ++d) {
          const int64_t base = a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3];
          for (int64_t e = 0; e < dims[4]; ++e) out[j++] = in[static_cast<size_t>(base + e * stride[4])];
        }
}
void gather(const Block& x, Block& out, const int64_t (&dims)[5], const int64_t (&stride)[5]) {
  if (is_float(out.dtype)) {
    gather5(x.f, out.f, dims, stride);
  } else {
    gather5(x.i, out.i, dims, stride);
  }
}
/// Row-major strides of a shape, as 5 entries aligned to the right.
void row_major(const ir::Shape& s, int64_t (&dims)[5], int64_t (&stride)[5]) {
  for (int d = 0; d < 5; ++d) {
    dims[d] = 1;
    stride[d] = 0;
  }
  int64_t st = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    dims[5 - s.rank + d] = s.dims[d];
    stride[5 - s.rank + d] = st;
    st *= s.dims[d];
  }
}
}  // namespace

void eval_broadcast(const Block& x, Block& out) {
  if (x.size() == 1) {
    if (is_float(out.dtype)) {
      std::fill(out.f.begin(), out.f.end(), x.f[0]);
    } else {
      std::fill(out.i.begin(), out.i.end(), x.i[0]);
    }
    return;
  }
  int64_t in_dims[5], in_stride[5], dims[5], unused[5], stride[5];
  row_major(x.shape, in_dims, in_stride);
  row_major(out.shape, dims, unused);
  for (int d = 0; d < 5; ++d) stride[d] = in_dims[d] == 1 ? 0 : in_stride[d];
  gather(x, out, dims, stride);
}

void eval_permute(const Block& x, std::span<const int64_t> perm, Block& out) {
  const int r = out.shape.rank;
  int64_t in_stride[ir::kMaxRank];
  int64_t st = 1;
  for (int d = r - 1; d >= 0; --d) {
    in_stride[d] = st;
    st *= x.shape.dims[d];
  }
  int64_t dims[5], stride[5];
  for (int d = 0; d < 5; ++d) {
    dims[d] = 1;
    stride[d] = 0;
  }
  for (int d = 0; d < r; ++d) {
    dims[5 - r + d] = out.shape.dims[d];
    stride[5 - r + d] = in_stride[perm[static_cast<size_t>(d)]];
  }
  gather(x, out, dims, stride);
}

ReduceGeom reduce_geometry(const ir::Shape& s, int axis) {
  ReduceGeom g;
  for (int d = 0; d < s.rank; ++d) {
    if (d < axis) g.outer *= s.dims[d];
    else if (d == axis) g.len = s.dims[d];
    else g.inner *= s.dims[d];
  }
  return g;
}

namespace {
/// out[o, i] = fold over k of x[o, k, i], sequentially in k, starting from x[o, 0, i].
template <class V, class F>
void fold(const std::vector<V>& x, std::vector<V>& out, const ReduceGeom& g, F step) {
  for (int64_t o = 0; o < g.outer; ++o) {
    V* dst = out.data() + o * g.inner;
    const V* src = x.data() + o * g.len * g.inner;
    std::copy(src, src + g.inner, dst);
    for (int64_t k = 1; k < g.len; ++k) {
      const V* row = src + k * g.inner;
      for (int64_t i = 0; i < g.inner; ++i) dst[i] = step(dst[i], row[i]);
    }
  }
}

/// out[o, i] = the index k of the largest x[o, k, i].
void argmax_along(const Block& x, const ReduceGeom& g, Block& out) {
  const DType t = x.dtype;
  // The first maximum wins; NaN counts as larger than every number (the first NaN wins).
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      int64_t best = 0;
      const int64_t base = o * g.len * g.inner + i;
      if (is_float(t)) {
        double bv = x.f[static_cast<size_t>(base)];
        for (int64_t k = 1; k < g.len && !std::isnan(bv); ++k) {
          const double v = x.f[static_cast<size_t>(base + k * g.inner)];
          if (std::isnan(v) || v > bv) {
            bv = v;
            best = k;
          }
        }
      } else {
        int64_t bv = x.i[static_cast<size_t>(base)];
        for (int64_t k = 1; k < g.len; ++k) {
          const int64_t v = x.i[static_cast<size_t>(base + k * g.inner)];
          if (v > bv) {
            bv = v;
            best = k;
          }
        }
      }
      out.i[static_cast<size_t>(o * g.inner + i)] = best;
    }
}
}  // namespace

void eval_reduce(Op op, const Block& x, int axis, Block& out) {
  const ReduceGeom g = reduce_geometry(x.shape, axis);
  const DType t = x.dtype;
  const bool fp = is_float(t);
  switch (op) {
    case Op::ReduceSum:
      if (fp) return fold(x.f, out.f, g, [t](double a, double b) { return round_arith(t, a + b); });
      return fold(x.i, out.i, g, [t](int64_t a, int64_t b) { return wrap(t, wrapping_add(a, b)); });
    case Op::ReduceMax:
      if (fp) return fold(x.f, out.f, g, fmax_nan);
      return fold(x.i, out.i, g, [](int64_t a, int64_t b) { return std::max(a, b); });
    case Op::ReduceMin:
      if (fp) return fold(x.f, out.f, g, fmin_nan);
      return fold(x.i, out.i, g, [](int64_t a, int64_t b) { return std::min(a, b); });
    case Op::ArgMax: return argmax_along(x, g, out);
    // A Reduce runs its combine region (interp.cpp); the interpreter evaluates the other ops elsewhere.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE)
    TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::Reduce: case Op::CombineArg: case Op::ReduceResult: case Op::Dot:
      break;
  }
  throw InternalError("interpreter: unexpected reduction " + std::string(ir::name_of(op)));
}

void eval_dot(const Block& a_in, const Block& b_in, const Block& acc, Block& out, bool tf32) {
  const int64_t M = a_in.shape.dims[0], K = a_in.shape.dims[1], N = b_in.shape.dims[1];
  const DType ct = out.dtype;
  // Precision::tf32: the products of the operands as tensor cores read them (exact in f32: 11 x 11 bits).
  Block ta, tb;
  if (tf32) {
    ta = a_in;
    tb = b_in;
    for (double& v : ta.f) v = ir::to_tf32(v);
    for (double& v : tb.f) v = ir::to_tf32(v);
  }
  const Block& a = tf32 ? ta : a_in;
  const Block& b = tf32 ? tb : b_in;
  if (is_float(ct)) {
    out.f = acc.f;
    double* c = out.f.data();
    if (is_float(a.dtype)) {
      // Products are rounded to f32 (f64 when the inputs are f64), then added to the
      // accumulator in its type, sequentially over k (no fused multiply-add). Tensor cores
      // sum in another order, so GPU results agree within a tolerance, not bit for bit.
      const DType pt = a.dtype == DType::f64 ? DType::f64 : DType::f32;
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          const double av = a.f[static_cast<size_t>(m * K + k)];
          const double* brow = b.f.data() + k * N;
          double* crow = c + m * N;
          if (pt == DType::f32 && ct == DType::f32) {
            for (int64_t n = 0; n < N; ++n)
              crow[n] = static_cast<float>(crow[n] + static_cast<double>(static_cast<float>(av * brow[n])));
          } else {
            for (int64_t n = 0; n < N; ++n) crow[n] = round_arith(ct, crow[n] + round_arith(pt, av * brow[n]));
          }
        }
    } else {
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < K; ++k) {
          const int64_t av = a.i[static_cast<size_t>(m * K + k)];
          for (int64_t n = 0; n < N; ++n) {
            const int64_t p = wrapping_mul(av, b.i[static_cast<size_t>(k * N + n)]);
            c[m * N + n] = round_arith(ct, c[m * N + n] + int_to_double_odd(p));
          }
        }
    }
    return;
  }
  // Integer inputs and accumulator: products and sums wrap to the accumulator's width.
  out.i = acc.i;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t av = a.i[static_cast<size_t>(m * K + k)];
      for (int64_t n = 0; n < N; ++n) {
        int64_t& cv = out.i[static_cast<size_t>(m * N + n)];
        cv = wrap(ct, wrapping_add(cv, wrapping_mul(av, b.i[static_cast<size_t>(k * N + n)])));
      }
    }
}

}  // namespace tilejit::interp::detail
