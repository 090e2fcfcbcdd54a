// Interpreter tests of reductions (sum, max, min, argmax) on odd shapes and of dot with odd shapes and every input type.
#include <algorithm>
#include <cmath>

#include "interp_test_util.h"

using namespace itest;
using tilejit::dim3;

namespace {

struct ShapeAxis {
  std::vector<int64_t> shape;
  int axis;
};
const ShapeAxis kShapes[] = {{{1}, 0},          {{7}, 0},          {{13}, 0},           {{3, 5}, 0},          {{3, 5}, 1},
                             {{1, 9}, 0},       {{7, 1}, 1},       {{2, 3, 5}, 0},      {{2, 3, 5}, 1},       {{2, 3, 5}, 2},
                             {{3, 1, 4, 2}, 2}, {{2, 3, 1, 2, 3}, 4}, {{2, 3, 1, 2, 3}, 0}, {{5, 33}, 1}, {{31, 3}, 0}};

ir::Shape to_shape(const std::vector<int64_t>& v) { return ir::Shape::of(v); }

/// One sequential step of a sum in type t (f16/bf16 in f32, then rounded).
double ref_sum_step(DType t, double acc, double x) {
  switch (t) {
    case DType::f64: return acc + x;
    case DType::f32: return static_cast<float>(acc) + static_cast<float>(x);
    case DType::f16: return static_cast<double>(static_cast<_Float16>(static_cast<float>(acc) + static_cast<float>(x)));
    default: return ref_round(t, static_cast<float>(acc) + static_cast<float>(x));
  }
}

/// Reference reduction of `x` (row-major values of `shape`) over `axis`.
template <class V>
std::vector<V> ref_reduce(Op op, DType t, const std::vector<V>& x, const std::vector<int64_t>& shape, int axis) {
  int64_t outer = 1, len = shape[static_cast<size_t>(axis)], inner = 1;
  for (int d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  std::vector<V> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t k) { return x[static_cast<size_t>((o * len + k) * inner + i)]; };
      if (op == Op::ArgMax) {
        int64_t best = 0;
        for (int64_t k = 1; k < len; ++k) {
          const V v = at(k), b = at(best);
          if constexpr (std::is_floating_point_v<V>) {
            if (std::isnan(b)) break;  // the first NaN is the maximum
            if (std::isnan(v) || v > b) best = k;
          } else {
            if (v > b) best = k;
          }
        }
        out.push_back(static_cast<V>(best));
        continue;
      }
      V acc = at(0);
      bool nan = false;
      for (int64_t k = 0; k < len; ++k) {
        const V v = at(k);
        if constexpr (std::is_floating_point_v<V>) nan = nan || std::isnan(v);
        if (k == 0) continue;
        if (op == Op::ReduceSum) {
          if constexpr (std::is_floating_point_v<V>) acc = ref_sum_step(t, acc, v);
          else acc = ref_wrap(t, static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v)));
        } else if (op == Op::ReduceMax) {
          acc = std::max(acc, v);
        } else {
          acc = std::min(acc, v);
        }
      }
      if constexpr (std::is_floating_point_v<V>)
        if (nan && op != Op::ReduceSum) acc = NAN;
      out.push_back(acc);
    }
  return out;
}

/// Runs y = op(load(x) as `shape`, axis) and returns the result buffer.
Buffer run_reduce(Op op, DType t, const Buffer& x, const std::vector<int64_t>& shape, int axis) {
  std::vector<int64_t> rs;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int>(d) != axis) rs.push_back(shape[d]);
  const DType rt = op == Op::ArgMax ? DType::i32 : t;
  int64_t rn = 1;
  for (int64_t v : rs) rn *= v;
  Buffer y(rt, rn);
  Builder B;
  const NodeId tx = B.tensor(t), ty = B.tensor(rt);
  const NodeId v = B.load(tx, B.iota(to_shape(shape)));
  const NodeId r = B.op(op, rt, to_shape(rs), {v}, {axis});
  B.store(ty, B.iota(to_shape(rs)), r);
  B.run(dim3(1), {tensor_arg(x.arg1()), tensor_arg(y.arg1())});
  return y;
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

TEST_CASE("reductions over every axis of odd shapes, every numeric type, sequential order") {
  const Op ops[] = {Op::ReduceSum, Op::ReduceMax, Op::ReduceMin, Op::ArgMax};
  uint64_t seed = 900;
  for (Op op : ops)
    for (DType t : kNumericTypes) {
      ++seed;
      SUBCASE((std::string(ir::name_of(op)) + " " + name(t)).c_str()) {
        auto r = rng(seed);
        for (const ShapeAxis& sa : kShapes) {
          INFO("shape " << shape_str(sa.shape) << " axis " << sa.axis);
          int64_t n = 1;
          for (int64_t v : sa.shape) n *= v;
          Buffer x(t, n);
          // Few distinct values, so that ties (argmax) and rounding in long sums both happen.
          for (int64_t k = 0; k < n; ++k) {
            if (ir::is_float(t)) {
              const double v = static_cast<double>(static_cast<int64_t>(r() % 41) - 20) * 0.375 +
                               (r() % 3 == 0 ? std::ldexp(1.0, -static_cast<int>(r() % 12)) : 0.0);
              x.setf(k, ref_round(t, v));
            } else {
              x.seti(k, r() % 4 == 0 ? static_cast<int64_t>(r()) : static_cast<int64_t>(r() % 9) - 4);
            }
          }
          const Buffer y = run_reduce(op, t, x, sa.shape, sa.axis);
          int64_t bad = 0;
          if (ir::is_float(t) && op != Op::ArgMax) {
            std::vector<double> xv(static_cast<size_t>(n));
            for (int64_t k = 0; k < n; ++k) xv[static_cast<size_t>(k)] = x.getf(k);
            const auto want = ref_reduce(op, t, xv, sa.shape, sa.axis);
            for (size_t k = 0; k < want.size(); ++k) bad += !same(y.getf(static_cast<int64_t>(k)), want[k]) && !(want[k] == 0 && y.getf(static_cast<int64_t>(k)) == 0);
          } else if (ir::is_float(t)) {
            std::vector<double> xv(static_cast<size_t>(n));
            for (int64_t k = 0; k < n; ++k) xv[static_cast<size_t>(k)] = x.getf(k);
            const auto want = ref_reduce(op, t, xv, sa.shape, sa.axis);
            for (size_t k = 0; k < want.size(); ++k) bad += y.geti(static_cast<int64_t>(k)) != static_cast<int64_t>(want[k]);
          } else {
            std::vector<int64_t> xv(static_cast<size_t>(n));
            for (int64_t k = 0; k < n; ++k) xv[static_cast<size_t>(k)] = x.geti(k);
            const auto want = ref_reduce(op, t, xv, sa.shape, sa.axis);
            for (size_t k = 0; k < want.size(); ++k) bad += y.geti(static_cast<int64_t>(k)) != want[k];
          }
          CHECK(bad == 0);
        }
      }
    }
}

TEST_CASE("reductions with NaN and infinity") {
  const double nan = NAN, inf = INFINITY;
  struct Row {
    std::vector<double> x;
    double sum, max, min;
    int argmax;
  };
  const Row rows[] = {
      {{1.0, nan, 3.0, 5.0}, nan, nan, nan, 1},
      {{-inf, -1.0, -inf}, -inf, -1.0, -inf, 1},
      {{inf, 2.0, -inf}, nan, inf, -inf, 0},
      {{2.0, 7.0, 7.0, -1.0}, 15.0, 7.0, -1.0, 1},  // the first maximum wins
      {{3.0, 1.0, nan, nan}, nan, nan, nan, 2},     // the first NaN is the maximum
  };
  for (DType t : kFloatTypes) {
    SUBCASE(name(t).c_str()) {
      for (const Row& row : rows) {
        const auto n = static_cast<int64_t>(row.x.size());
        Buffer x(t, n);
        for (int64_t k = 0; k < n; ++k) x.setf(k, row.x[static_cast<size_t>(k)]);
        CHECK(same(run_reduce(Op::ReduceSum, t, x, {n}, 0).getf(0), row.sum));
        CHECK(same(run_reduce(Op::ReduceMax, t, x, {n}, 0).getf(0), row.max));
        CHECK(same(run_reduce(Op::ReduceMin, t, x, {n}, 0).getf(0), row.min));
        CHECK(run_reduce(Op::ArgMax, t, x, {n}, 0).geti(0) == row.argmax);
      }
    }
  }
}

TEST_CASE("an f32 sum is accumulated sequentially in f32") {
  // 2^24 + 1 + 1 + ... : each +1 is lost in f32 when added one at a time.
  const int64_t n = 9;
  Buffer x(DType::f32, n);
  x.setf(0, 16777216.0);
  for (int64_t k = 1; k < n; ++k) x.setf(k, 1.0);
  CHECK(run_reduce(Op::ReduceSum, DType::f32, x, {n}, 0).getf(0) == 16777216.0);
  // In the other order the small terms add up first.
  Buffer z(DType::f32, n);
  for (int64_t k = 0; k + 1 < n; ++k) z.setf(k, 1.0);
  z.setf(n - 1, 16777216.0);
  CHECK(run_reduce(Op::ReduceSum, DType::f32, z, {n}, 0).getf(0) == 16777224.0);
}

// ---- dot ---------------------------------------------------------------------------------------------------

namespace {
struct DotTypes {
  DType in, acc;
};
const DotTypes kDotTypes[] = {{DType::f32, DType::f32},    {DType::bf16, DType::f32},   {DType::f16, DType::f32},
                              {DType::f8e4m3, DType::f32}, {DType::f8e5m2, DType::f32}, {DType::f64, DType::f64},
                              {DType::i8, DType::i32},     {DType::i32, DType::i32},    {DType::bf16, DType::bf16},
                              {DType::f16, DType::f16},    {DType::u8, DType::i32},     {DType::i8, DType::f32}};
const int64_t kDotShapes[][3] = {{1, 1, 1}, {3, 5, 7}, {17, 13, 11}, {16, 32, 8}, {5, 1, 3}, {1, 31, 1}, {64, 64, 64}};

/// One step c + a * b of the documented dot semantics, computed with C++ types.
double ref_dot_step(DType in, DType acc, double c, double a, double b) {
  if (in == DType::f64) return c + a * b;
  const float p = static_cast<float>(a) * static_cast<float>(b);  // products in f32
  if (acc == DType::f32) return static_cast<float>(c) + p;
  if (acc == DType::f16) return static_cast<double>(static_cast<_Float16>(static_cast<float>(c) + p));
  return ref_round(acc, static_cast<float>(c) + p);
}
}  // namespace

TEST_CASE("dot: odd shapes, every input type, accumulated in the accumulator's type") {
  uint64_t seed = 1200;
  for (const DotTypes& dt : kDotTypes) {
    for (const auto& mkn : kDotShapes) {
      ++seed;
      const int64_t M = mkn[0], K = mkn[1], N = mkn[2];
      SUBCASE((name(dt.in) + " -> " + name(dt.acc) + " " + std::to_string(M) + "x" + std::to_string(K) + "x" + std::to_string(N)).c_str()) {
        auto r = rng(seed);
        Buffer a(dt.in, M * K), b(dt.in, K * N), c(dt.acc, M * N), y(dt.acc, M * N);
        auto fill = [&](Buffer& buf) {
          for (int64_t k = 0; k < buf.size(); ++k) {
            if (buf.dtype() == DType::f32 || buf.dtype() == DType::f64) {
              // Full mantissas: products are not exact in f32, so a fused multiply-add would show.
              buf.setf(k, ref_round(buf.dtype(), static_cast<double>(static_cast<int64_t>(r() % 2000001) - 1000000) / 777777.0));
            } else if (ir::is_float(buf.dtype())) {
              buf.setf(k, ref_round(buf.dtype(), static_cast<double>(static_cast<int64_t>(r() % 33) - 16) * 0.1875));
            } else {
              buf.seti(k, static_cast<int64_t>(r() % 200) - 100);
            }
          }
        };
        fill(a);
        fill(b);
        fill(c);
        Builder B;
        const NodeId ta = B.tensor(dt.in), tb = B.tensor(dt.in), tc = B.tensor(dt.acc), ty = B.tensor(dt.acc);
        const ir::Shape sa{M, K}, sb{K, N}, sc{M, N};
        const NodeId d = B.op(Op::Dot, dt.acc, sc, {B.load(ta, B.iota(sa)), B.load(tb, B.iota(sb)), B.load(tc, B.iota(sc))});
        B.store(ty, B.iota(sc), d);
        B.run(dim3(1), {tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(c.arg1()), tensor_arg(y.arg1())});
        int64_t bad = 0, far = 0;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            if (ir::is_float(dt.acc)) {
              double want = c.getf(m * N + n);
              long double exact = want;
              for (int64_t k = 0; k < K; ++k) {
                const double av = a.value(m * K + k), bv = b.value(k * N + n);
                want = ref_dot_step(ir::is_float(dt.in) ? dt.in : DType::f32, dt.acc, want, av, bv);
                exact += static_cast<long double>(av) * bv;
              }
              const double got = y.getf(m * N + n);
              bad += !same(got, want);
              // The documented order is one choice; every order stays close to the exact result.
              const double tol = (dt.acc == DType::f32 ? 1e-5 : dt.acc == DType::f64 ? 1e-12 : 0.02) * (1.0 + std::fabs(static_cast<double>(exact))) * static_cast<double>(K);
              far += std::fabs(got - static_cast<double>(exact)) > tol;
            } else {
              int64_t want = c.geti(m * N + n);
              for (int64_t k = 0; k < K; ++k) want = ref_wrap(dt.acc, want + a.geti(m * K + k) * b.geti(k * N + n));
              bad += y.geti(m * N + n) != want;
            }
          }
        CHECK(bad == 0);
        CHECK(far == 0);
      }
    }
  }
}

TEST_CASE("dot through the DSL: a @ b + acc, with a transposed operand") {
  namespace dsl = tilejit::dsl;
  const int64_t M = 5, K = 7, N = 3;
  Buffer a(DType::f32, M * K), bt(DType::f32, N * K), y(DType::f32, M * N);
  for (int64_t k = 0; k < a.size(); ++k) a.setf(k, static_cast<double>(k % 7) - 3.0);
  for (int64_t k = 0; k < bt.size(); ++k) bt.setf(k, static_cast<double>(k % 5) * 0.5);
  auto kern = tilejit::kernel("dot_dsl", [](dsl::Tensor<dsl::f32, 1> A, dsl::Tensor<dsl::f32, 1> BT, dsl::Tensor<dsl::f32, 1> Y) {
    using namespace tilejit::dsl;
    auto rm = arange(0, 5).expand_dims<1>();
    auto rk = arange(0, 7).expand_dims<0>();
    auto rn = arange(0, 3).expand_dims<1>();
    auto av = load(A, rm * 7 + rk);   // [5, 7]
    auto bv = load(BT, rn * 7 + rk);  // [3, 7], used transposed
    auto acc = full<f32>({5, 3}, 1.0f);
    auto c = dot(av, bv.trans(), acc);
    store(Y, arange(0, 5).expand_dims<1>() * 3 + arange(0, 3).expand_dims<0>(), c);
  });
  tilejit::interp::run(*kern.trace(tilejit::Config{}), dim3(1),
                       std::vector<tilejit::KernelArg>{tensor_arg(a.arg1()), tensor_arg(bt.arg1()), tensor_arg(y.arg1())});
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float want = 1.0f;
      for (int64_t k = 0; k < K; ++k) want += static_cast<float>(a.getf(m * K + k)) * static_cast<float>(bt.getf(n * K + k));
      CHECK(y.getf(m * N + n) == static_cast<double>(want));
    }
}

TEST_CASE("dot(a, b) without an accumulator: from zero, in f32 for float operands and i32 for integer ones") {
  namespace dsl = tilejit::dsl;
  Buffer a(DType::bf16, 4 * 8), b(DType::bf16, 8 * 2), y(DType::f32, 4 * 2);
  Buffer ai(DType::i8, 4 * 8), bi(DType::i8, 8 * 2), yi(DType::i32, 4 * 2);
  for (int64_t k = 0; k < a.size(); ++k) a.setf(k, static_cast<double>(k % 5) - 2.0), ai.seti(k, k % 7 - 3);
  for (int64_t k = 0; k < b.size(); ++k) b.setf(k, static_cast<double>(k % 3) * 0.5), bi.seti(k, 5 - k % 11);
  auto kern = tilejit::kernel("dot_two_args", [](dsl::Tensor<dsl::bf16, 1> A, dsl::Tensor<dsl::bf16, 1> B, dsl::Tensor<dsl::f32, 1> Y,
                                                 dsl::Tensor<dsl::i8, 1> AI, dsl::Tensor<dsl::i8, 1> BI, dsl::Tensor<dsl::i32, 1> YI) {
    using namespace tilejit::dsl;
    auto ra = arange(0, 4).expand_dims<1>() * 8 + arange(0, 8).expand_dims<0>();
    auto rb = arange(0, 8).expand_dims<1>() * 2 + arange(0, 2).expand_dims<0>();
    auto ry = arange(0, 4).expand_dims<1>() * 2 + arange(0, 2).expand_dims<0>();
    Value<f32, 2> c = dot(load(A, ra), load(B, rb));
    Value<i32, 2> ci = dot(load(AI, ra), load(BI, rb));
    store(Y, ry, c);
    store(YI, ry, ci);
  });
  tilejit::interp::run(*kern.trace(tilejit::Config{}), dim3(1),
                       std::vector<tilejit::KernelArg>{tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(y.arg1()),
                                                       tensor_arg(ai.arg1()), tensor_arg(bi.arg1()), tensor_arg(yi.arg1())});
  for (int64_t m = 0; m < 4; ++m)
    for (int64_t n = 0; n < 2; ++n) {
      double want = 0;
      int64_t want_i = 0;
      for (int64_t k = 0; k < 8; ++k) {
        want += a.getf(m * 8 + k) * b.getf(k * 2 + n);
        want_i += ai.geti(m * 8 + k) * bi.geti(k * 2 + n);
      }
      CHECK(y.getf(m * 2 + n) == want);  // small integers and halves: exact in f32
      CHECK(yi.geti(m * 2 + n) == want_i);
    }
}

TEST_CASE("dot of f32 operands: Precision::tf32 (the default) truncates the operands to tf32, ieee multiplies them as they are") {
  namespace dsl = tilejit::dsl;
  // 1 + 2^-12 is not a tf32 value (10 mantissa bits): tf32 reads it as 1; 1 + 2^-10 is one.
  const double fine = 1.0 + std::ldexp(1.0, -12), coarse = 1.0 + std::ldexp(1.0, -10);
  for (auto [precision, want] : {std::pair{dsl::Precision::tf32, 1.0 * coarse}, std::pair{dsl::Precision::ieee, fine * coarse}}) {
    Buffer a(DType::f32, 1), b(DType::f32, 1), y(DType::f32, 1);
    a.setf(0, fine);
    b.setf(0, coarse);
    auto kern = tilejit::kernel("dot_precision", [precision](dsl::Tensor<dsl::f32, 1> A, dsl::Tensor<dsl::f32, 1> B, dsl::Tensor<dsl::f32, 1> Y) {
      using namespace tilejit::dsl;
      auto zero = arange(0, 1).expand_dims<1>();
      auto c = dot(load(A, zero), load(B, zero), zeros<f32>({1, 1}), precision);
      store(Y, zero, c);
    });
    tilejit::interp::run(*kern.trace(tilejit::Config{}), dim3(1),
                         std::vector<tilejit::KernelArg>{tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(y.arg1())});
    CHECK(y.getf(0) == static_cast<double>(static_cast<float>(want)));
  }
  CHECK(tilejit::ir::to_tf32(-1.0 - std::ldexp(1.0, -11)) == -1.0);  // toward zero
  CHECK(std::isnan(tilejit::ir::to_tf32(std::nan(""))));
}
