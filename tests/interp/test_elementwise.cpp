// Interpreter tests of every elementwise op and cast, for every element type, against plain C++ references.
#include <algorithm>
#include <cmath>

#include "interp_test_util.h"

using namespace itest;
using tilejit::dim3;

namespace {

// ---- references ------------------------------------------------------------------------------

/// f32 / f16 / bf16: the op in float, then one rounding to the type; f64: the op in double.
double ref_float_binary(Op op, DType t, double a, double b) {
  if (t == DType::f64) {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Div: return a / b;
      case Op::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
      case Op::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
      default: FAIL("op"); return 0;
    }
  }
  const auto fa = static_cast<float>(a), fb = static_cast<float>(b);
  float r = 0;
  switch (op) {
    case Op::Add: r = fa + fb; break;
    case Op::Sub: r = fa - fb; break;
    case Op::Mul: r = fa * fb; break;
    case Op::Div: r = fa / fb; break;
    case Op::Min: r = std::isnan(fa) || std::isnan(fb) ? NAN : std::min(fa, fb); break;
    case Op::Max: r = std::isnan(fa) || std::isnan(fb) ? NAN : std::max(fa, fb); break;
    default: FAIL("op");
  }
  if (t == DType::f32) return r;
  if (t == DType::f16) return static_cast<double>(static_cast<_Float16>(r));
  return ref_round(t, r);
}

/// Integer ops in a wider type, converted back to T (which wraps).
template <class T>
int64_t ref_int_typed(Op op, T x, T y) {
  if constexpr (std::is_same_v<T, int64_t>) {
    const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
    switch (op) {
      case Op::Add: return static_cast<int64_t>(ux + uy);
      case Op::Sub: return static_cast<int64_t>(ux - uy);
      case Op::Mul: return static_cast<int64_t>(ux * uy);
      case Op::Div: return (x == std::numeric_limits<int64_t>::min() && y == -1) ? x : x / y;
      case Op::Rem: return (x == std::numeric_limits<int64_t>::min() && y == -1) ? 0 : x % y;
      default: break;
    }
  } else {
    const int64_t a = x, b = y;
    switch (op) {
      case Op::Add: return static_cast<T>(a + b);
      case Op::Sub: return static_cast<T>(a - b);
      case Op::Mul: return static_cast<T>(a * b);
      case Op::Div: return static_cast<T>(a / b);
      case Op::Rem: return static_cast<T>(a % b);
      default: break;
    }
  }
  switch (op) {
    case Op::Min: return std::min(x, y);
    case Op::Max: return std::max(x, y);
    case Op::And: return static_cast<T>(x & y);
    case Op::Or: return static_cast<T>(x | y);
    case Op::Xor: return static_cast<T>(x ^ y);
    default: FAIL("op"); return 0;
  }
}

int64_t ref_int_binary(Op op, DType t, int64_t a, int64_t b) {
  switch (t) {
    case DType::i8: return ref_int_typed<int8_t>(op, static_cast<int8_t>(a), static_cast<int8_t>(b));
    case DType::u8: return ref_int_typed<uint8_t>(op, static_cast<uint8_t>(a), static_cast<uint8_t>(b));
    case DType::i32: return ref_int_typed<int32_t>(op, static_cast<int32_t>(a), static_cast<int32_t>(b));
    case DType::i64: return ref_int_typed<int64_t>(op, a, b);
    case DType::i1: {
      const bool x = a != 0, y = b != 0;
      return op == Op::And ? (x && y) : op == Op::Or ? (x || y) : (x != y);
    }
    default: FAIL("type"); return 0;
  }
}

bool ref_compare(Op op, double a, double b) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    default: return a >= b;
  }
}
bool ref_compare_i(Op op, int64_t a, int64_t b) {
  switch (op) {
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    default: return a >= b;
  }
}

/// Exact (long double) value of a transcendental.
long double ref_math(Op op, long double x) {
  switch (op) {
    case Op::Exp: return std::exp(x);
    case Op::Exp2: return std::exp2(x);
    case Op::Log: return std::log(x);
    case Op::Log2: return std::log2(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1.0L / std::sqrt(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tanh:
    case Op::TanhApprox: return std::tanh(x);  // the interpreter's value is the exact one (ir.h)
    case Op::Sigmoid: return 1.0L / (1.0L + std::exp(-x));
    case Op::Erf: return std::erf(x);
    default: FAIL("op"); return 0;
  }
}

// ---- inputs ----------------------------------------------------------------------------------

/// Fills a and b with every pair of interesting values of t plus random pairs.
int64_t fill_pairs(DType t, Buffer& a, Buffer& b, bool nonzero_b, uint64_t seed) {
  std::vector<std::pair<double, double>> fp;
  std::vector<std::pair<int64_t, int64_t>> ip;
  if (ir::is_float(t)) {
    const auto s = float_samples(t, 6, seed);
    for (double x : s)
      for (double y : s) fp.emplace_back(x, y);
    const auto r1 = float_samples(t, 200, seed + 1), r2 = float_samples(t, 200, seed + 2);
    for (size_t k = 0; k < r1.size(); ++k) fp.emplace_back(r1[k], r2[r2.size() - 1 - k]);
  } else if (t == DType::i1) {
    for (int x = 0; x < 2; ++x)
      for (int y = 0; y < 2; ++y) ip.emplace_back(x, y);
  } else {
    const auto s = int_samples(t, 4, seed);
    for (int64_t x : s)
      for (int64_t y : s) ip.emplace_back(x, nonzero_b && y == 0 ? 3 : y);
    const auto r1 = int_samples(t, 300, seed + 1), r2 = int_samples(t, 300, seed + 2);
    for (size_t k = 0; k < r1.size(); ++k) {
      int64_t y = r2[r2.size() - 1 - k];
      if (nonzero_b && y == 0) y = -5;
      ip.emplace_back(r1[k], ref_wrap(t, y));
    }
  }
  const auto n = static_cast<int64_t>(ir::is_float(t) ? fp.size() : ip.size());
  a = Buffer(t, n);
  b = Buffer(t, n);
  for (int64_t k = 0; k < n; ++k) {
    if (ir::is_float(t)) {
      a.setf(k, fp[static_cast<size_t>(k)].first);
      b.setf(k, fp[static_cast<size_t>(k)].second);
    } else {
      a.seti(k, ip[static_cast<size_t>(k)].first);
      b.seti(k, ip[static_cast<size_t>(k)].second);
    }
  }
  return n;
}

/// y = op(a, b) through Load / op / Store, as a [n] block in one program.
void run_binary(Op op, DType t, DType out_t, const Buffer& a, const Buffer& b, const Buffer& y) {
  Builder B;
  const NodeId x0 = B.tensor(t), x1 = B.tensor(t), yo = B.tensor(out_t);
  const ir::Shape s{a.size()};
  const NodeId offs = B.iota(s);
  const NodeId r = B.op(op, out_t, s, {B.load(x0, offs), B.load(x1, offs)});
  B.store(yo, offs, r);
  B.run(dim3(1), {tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(y.arg1())});
}

void run_unary(Op op, DType t, DType out_t, const Buffer& a, const Buffer& y) {
  Builder B;
  const NodeId x0 = B.tensor(t), yo = B.tensor(out_t);
  const ir::Shape s{a.size()};
  const NodeId offs = B.iota(s);
  B.store(yo, offs, B.op(op, out_t, s, {B.load(x0, offs)}));
  B.run(dim3(1), {tensor_arg(a.arg1()), tensor_arg(y.arg1())});
}

std::string label(Op op, DType t) { return std::string(ir::name_of(op)) + " " + name(t); }

}  // namespace

TEST_CASE("arithmetic ops on every numeric type match C++ references") {
  const Op ops[] = {Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem, Op::Min, Op::Max};
  uint64_t seed = 1;
  for (Op op : ops)
    for (DType t : kNumericTypes) {
      ++seed;
      if (op == Op::Rem && ir::is_float(t)) continue;  // the front end has no float %
      SUBCASE(label(op, t).c_str()) {
        Buffer a, b;
        const bool divides = op == Op::Div || op == Op::Rem;
        const int64_t n = fill_pairs(t, a, b, divides && !ir::is_float(t), seed);
        Buffer y(t, n);
        run_binary(op, t, t, a, b, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < n && bad < 5; ++k) {
          if (ir::is_float(t)) {
            const double want = ref_float_binary(op, t, a.getf(k), b.getf(k));
            const double got = y.getf(k);
            // min/max of +0 and -0 may return either zero.
            const bool ok = same(got, want) || ((op == Op::Min || op == Op::Max) && got == 0 && want == 0);
            if (!ok) {
              ++bad;
              CHECK_MESSAGE(ok, label(op, t) << " of " << a.getf(k) << ", " << b.getf(k) << ": got " << got << ", want " << want);
            }
          } else {
            const int64_t want = ref_int_binary(op, t, a.geti(k), b.geti(k));
            if (y.geti(k) != want) {
              ++bad;
              CHECK_MESSAGE(y.geti(k) == want, label(op, t) << " of " << a.geti(k) << ", " << b.geti(k) << ": got " << y.geti(k));
            }
          }
        }
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("bitwise and logical ops on integers and bool") {
  const Op ops[] = {Op::And, Op::Or, Op::Xor};
  const DType types[] = {DType::i1, DType::i8, DType::u8, DType::i32, DType::i64};
  uint64_t seed = 100;
  for (Op op : ops)
    for (DType t : types) {
      ++seed;
      SUBCASE(label(op, t).c_str()) {
        Buffer a, b;
        const int64_t n = fill_pairs(t, a, b, false, seed);
        Buffer y(t, n);
        run_binary(op, t, t, a, b, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < n; ++k) bad += y.geti(k) != ref_int_binary(op, t, a.geti(k), b.geti(k));
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("comparisons on every type yield i1 (NaN compares unordered)") {
  const Op ops[] = {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge};
  const DType types[] = {DType::i1, DType::i8, DType::u8, DType::i32, DType::i64, DType::f16, DType::bf16, DType::f32, DType::f64};
  uint64_t seed = 200;
  for (Op op : ops)
    for (DType t : types) {
      ++seed;
      SUBCASE(label(op, t).c_str()) {
        Buffer a, b;
        const int64_t n = fill_pairs(t, a, b, false, seed);
        Buffer y(DType::i1, n);
        run_binary(op, t, DType::i1, a, b, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < n; ++k) {
          const bool want = ir::is_float(t) ? ref_compare(op, a.getf(k), b.getf(k)) : ref_compare_i(op, a.geti(k), b.geti(k));
          bad += y.geti(k) != static_cast<int64_t>(want);
        }
        CHECK(bad == 0);
        // The stored bool bytes are exactly 0 or 1.
        for (int64_t k = 0; k < n; ++k) REQUIRE(y.bits(k) <= 1);
      }
    }
}

TEST_CASE("neg and abs on every numeric type, not on bool") {
  uint64_t seed = 300;
  for (Op op : {Op::Neg, Op::Abs})
    for (DType t : kNumericTypes) {
      ++seed;
      SUBCASE(label(op, t).c_str()) {
        Buffer a, b;
        const int64_t n = fill_pairs(t, a, b, false, seed);
        Buffer y(t, n);
        run_unary(op, t, t, a, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < n; ++k) {
          if (ir::is_float(t)) {
            const double x = a.getf(k);
            const double want = op == Op::Neg ? -x : std::fabs(x);
            bad += !same(y.getf(k), want);
          } else {
            const int64_t x = a.geti(k);
            // Two's complement: -MIN == MIN, |MIN| == MIN.
            const auto neg = ref_wrap(t, static_cast<int64_t>(0 - static_cast<uint64_t>(x)));
            const int64_t want = op == Op::Neg ? neg : (x < 0 ? neg : x);
            bad += y.geti(k) != want;
          }
        }
        CHECK(bad == 0);
      }
    }
  SUBCASE("not i1") {
    Buffer a(DType::i1, 4), y(DType::i1, 4);
    a.seti(0, 0);
    a.seti(1, 1);
    a.seti(2, 1);
    a.seti(3, 0);
    run_unary(Op::Not, DType::i1, DType::i1, a, y);
    CHECK(y.geti(0) == 1);
    CHECK(y.geti(1) == 0);
    CHECK(y.geti(2) == 0);
    CHECK(y.geti(3) == 1);
  }
}

TEST_CASE("transcendentals on f16, bf16, f32 and f64 within one ulp of the exact value") {
  const Op ops[] = {Op::Exp, Op::Exp2, Op::Log, Op::Log2, Op::Sqrt, Op::Rsqrt, Op::Sin, Op::Cos, Op::Tanh, Op::Sigmoid, Op::Erf, Op::TanhApprox};
  uint64_t seed = 400;
  for (Op op : ops)
    for (DType t : kFloatTypes) {
      ++seed;
      SUBCASE(label(op, t).c_str()) {
        auto s = float_samples(t, 400, seed);
        const auto n = static_cast<int64_t>(s.size());
        Buffer a(t, n), y(t, n);
        for (int64_t k = 0; k < n; ++k) a.setf(k, s[static_cast<size_t>(k)]);
        run_unary(op, t, t, a, y);
        // f64 results come from the C library in double: allow 2 ulp; narrower types are rounded from double.
        const double tol = t == DType::f64 ? 2.0 : 1.0;
        int64_t bad = 0;
        for (int64_t k = 0; k < n && bad < 5; ++k) {
          const double x = a.getf(k);
          auto want = static_cast<double>(ref_math(op, static_cast<long double>(x)));
          if ((op == Op::Exp2 || op == Op::Sigmoid) && t != DType::f64 && want < 0x1p-126) want = 0;  // flushed, as on the GPU (ir.h)
          const bool ok = close_ulps(t, y.getf(k), want, tol);
          if (!ok) {
            ++bad;
            CHECK_MESSAGE(ok, label(op, t) << "(" << x << "): got " << y.getf(k) << ", want " << want);
          }
        }
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("exp2 below f64 flushes results under 2^-126 to +0 (the GPU's ex2.approx.ftz); f64 does not") {
  const double xs[] = {-126.0, -126.5, -127.0, -149.0, -2000.0, -0.0, 1.5};
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f64}) {
    CAPTURE(ir::name_of(t));
    const auto n = static_cast<int64_t>(std::size(xs));
    Buffer a(t, n), y(t, n);
    for (int64_t k = 0; k < n; ++k) a.setf(k, xs[k]);
    run_unary(Op::Exp2, t, t, a, y);
    if (t == DType::f64) {
      CHECK(y.getf(1) > 0.0);  // 2^-126.5: f64 does not flush
      CHECK(y.getf(1) < 0x1p-126);
      CHECK(y.getf(2) == 0x1p-127);
      CHECK(y.getf(3) == 0x1p-149);
    } else {
      CHECK(y.getf(1) == 0.0);
      CHECK(y.getf(2) == 0.0);
      CHECK(y.getf(3) == 0.0);
      CHECK_FALSE(std::signbit(y.getf(3)));
    }
    CHECK(y.getf(0) == (t == DType::f16 ? 0.0 : 0x1p-126));  // f16's least subnormal is 2^-24
    CHECK(y.getf(4) == 0.0);
    CHECK(y.getf(5) == 1.0);
    CHECK(y.getf(6) == doctest::Approx(std::exp2(1.5)).epsilon(1e-2));
  }
}

namespace {
/// Values of type t to convert from: interesting ones, out-of-range ones for integer targets, random ones.
void fill_cast_source(DType from, Buffer& a, uint64_t seed) {
  if (from == DType::i1) {
    a = Buffer(from, 2);
    a.seti(0, 0);
    a.seti(1, 1);
    return;
  }
  if (ir::is_float(from)) {
    auto s = float_samples(from, 300, seed);
    for (double v : {127.9, -128.9, 200.7, -0.99, 255.5, 256.0, -1.0, 2147483647.0, -2147483648.0, 3e9, -3e9, 1e19, -1e19,
                     9.3e18, 65519.9, 65520.0, 1e6 + 0.5, 2.5, 3.5, -2.5, 0.75})
      s.push_back(ref_round(from, v));
    a = Buffer(from, static_cast<int64_t>(s.size()));
    for (size_t k = 0; k < s.size(); ++k) a.setf(static_cast<int64_t>(k), s[k]);
    return;
  }
  auto s = int_samples(from, 300, seed);
  for (int64_t v : {int64_t{1} << 53, (int64_t{1} << 53) + 1, (int64_t{1} << 62) + 12345, -(int64_t{1} << 60) - 7,
                    int64_t{16777217}, int64_t{-16777219}, int64_t{65520}, int64_t{65535}, int64_t{2049}, int64_t{257}})
    s.push_back(ref_wrap(from, v));
  a = Buffer(from, static_cast<int64_t>(s.size()));
  for (size_t k = 0; k < s.size(); ++k) a.seti(static_cast<int64_t>(k), s[k]);
}

int64_t ref_float_to_int(DType to, double x) {
  if (to == DType::i1) return x != 0;
  if (std::isnan(x)) return 0;
  const double t = std::trunc(x);
  if (t <= static_cast<double>(int_min(to))) return int_min(to);
  if (t >= static_cast<double>(int_max(to))) return int_max(to);
  return static_cast<int64_t>(t);
}
}  // namespace

TEST_CASE("casts between every pair of types") {
  uint64_t seed = 500;
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      ++seed;
      SUBCASE((name(from) + " -> " + name(to)).c_str()) {
        Buffer a;
        fill_cast_source(from, a, seed);
        Buffer y(to, a.size());
        run_unary(Op::Cast, from, to, a, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < a.size() && bad < 5; ++k) {
          bool ok;
          std::string want_s;
          if (ir::is_float(to)) {
            const long double src = ir::is_float(from) ? static_cast<long double>(a.getf(k)) : static_cast<long double>(a.geti(k));
            const double want = to == DType::f64 ? static_cast<double>(src) : ref_round(to, src);
            ok = same(y.getf(k), want);
            want_s = std::to_string(want);
          } else {
            const int64_t want = ir::is_float(from) ? ref_float_to_int(to, a.getf(k)) : ref_wrap(to, a.geti(k));
            ok = y.geti(k) == want;
            want_s = std::to_string(want);
          }
          if (!ok) {
            ++bad;
            CHECK_MESSAGE(ok, name(from) << " " << a.value(k) << " -> " << name(to) << ": got " << y.value(k) << ", want " << want_s);
          }
        }
        CHECK(bad == 0);
      }
    }
}

TEST_CASE("where selects per element for every type") {
  uint64_t seed = 700;
  for (DType t : kAllTypes) {
    ++seed;
    SUBCASE(("where " + name(t)).c_str()) {
      const int64_t n = 61;
      Buffer c(DType::i1, n), a(t, n), b(t, n), y(t, n);
      auto r = rng(seed);
      for (int64_t k = 0; k < n; ++k) {
        c.seti(k, static_cast<int64_t>(r() % 2));
        a.set_bits(k, encode(t, ir::is_float(t) ? ref_round(t, static_cast<double>(k) * 0.25) : static_cast<double>(ref_wrap(t, k))));
        b.set_bits(k, encode(t, ir::is_float(t) ? ref_round(t, -static_cast<double>(k)) : static_cast<double>(ref_wrap(t, 3 * k + 1))));
      }
      Builder B;
      const NodeId tc = B.tensor(DType::i1), ta = B.tensor(t), tb = B.tensor(t), ty = B.tensor(t);
      const ir::Shape s{n};
      const NodeId offs = B.iota(s);
      B.store(ty, offs, B.op(Op::Where, t, s, {B.load(tc, offs), B.load(ta, offs), B.load(tb, offs)}));
      B.run(dim3(1), {tensor_arg(c.arg1()), tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(y.arg1())});
      int64_t bad = 0;
      for (int64_t k = 0; k < n; ++k) bad += y.bits(k) != (c.geti(k) ? a.bits(k) : b.bits(k));
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("integer division and remainder by zero are defined: x / 0 = -1, x % 0 = x") {
  for (DType t : kIntTypes) {
    for (Op op : {Op::Div, Op::Rem}) {
      SUBCASE(label(op, t).c_str()) {
        Buffer a(t, 8), b(t, 8), y(t, 8);
        for (int64_t k = 0; k < 8; ++k) {
          a.seti(k, 10 + k);
          b.seti(k, k == 5 ? 0 : 2);
        }
        Builder B;
        const NodeId x0 = B.tensor(t), x1 = B.tensor(t), yo = B.tensor(t);
        const ir::Shape s{8};
        const NodeId offs = B.iota(s);
        const NodeId va = B.load(x0, offs), vb = B.load(x1, offs);
        const NodeId r = B.op(op, t, s, {va, vb});
        B.store(yo, offs, r);
        B.run(dim3(1), {tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(y.arg1())});
        for (int64_t k = 0; k < 8; ++k) {
          int64_t want = op == Op::Div ? (10 + k) / 2 : (10 + k) % 2;
          if (k == 5) want = op == Op::Div ? (t == DType::u8 ? 255 : -1) : 10 + k;
          CHECK(y.geti(k) == want);
        }
      }
    }
  }
}

TEST_CASE("f32 arithmetic has no fused multiply-add and no flush to zero") {
  // a * b = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 in f32, so (a * b) + c = 2^-11 while fma gives 2^-11 + 2^-24.
  const float a = 1.0f + 0x1p-12f, b = 1.0f + 0x1p-12f, c = -1.0f;
  Buffer A(DType::f32, 1), Bb(DType::f32, 1), C(DType::f32, 1), Y(DType::f32, 1), Z(DType::f32, 1);
  A.setf(0, a);
  Bb.setf(0, b);
  C.setf(0, c);
  Builder B;
  const NodeId ta = B.tensor(DType::f32), tb = B.tensor(DType::f32), tc = B.tensor(DType::f32), ty = B.tensor(DType::f32),
               tz = B.tensor(DType::f32);
  const ir::Shape s{1};
  const NodeId offs = B.iota(s);
  const NodeId prod = B.op(Op::Mul, DType::f32, s, {B.load(ta, offs), B.load(tb, offs)});
  B.store(ty, offs, B.op(Op::Add, DType::f32, s, {prod, B.load(tc, offs)}));
  // Subnormal results survive: min_normal / 4.
  const NodeId sub = B.op(Op::Div, DType::f32, s, {B.bcast(B.cf(DType::f32, 0x1p-126), s), B.bcast(B.cf(DType::f32, 4.0), s)});
  B.store(tz, offs, sub);
  B.run(dim3(1), {tensor_arg(A.arg1()), tensor_arg(Bb.arg1()), tensor_arg(C.arg1()), tensor_arg(Y.arg1()), tensor_arg(Z.arg1())});
  volatile float p = a * b;
  const float want = p + c;
  CHECK(Y.getf(0) == static_cast<double>(want));
  CHECK(Y.getf(0) == 0x1p-11);
  CHECK(Y.getf(0) != static_cast<double>(std::fma(a, b, c)));
  CHECK(Z.getf(0) == 0x1p-128);
}

TEST_CASE("bf16 and f16 arithmetic rounds through f32 after every op") {
  for (DType t : {DType::bf16, DType::f16}) {
    SUBCASE(name(t).c_str()) {
      // 1 + 2^-9 + 2^-9: per-op rounding loses both small terms in bf16 (8 bits) but not in f16 (11 bits).
      Buffer X(t, 3), Y(t, 1);
      X.setf(0, 1.0);
      X.setf(1, ref_round(t, 0x1p-9));
      X.setf(2, ref_round(t, 0x1p-9));
      Builder B;
      const NodeId tx = B.tensor(t), ty = B.tensor(t);
      const ir::Shape s{};
      const NodeId x0 = B.load(tx, B.ci(DType::i32, 0)), x1 = B.load(tx, B.ci(DType::i32, 1)), x2 = B.load(tx, B.ci(DType::i32, 2));
      const NodeId sum = B.op(Op::Add, t, s, {B.op(Op::Add, t, s, {x0, x1}), x2});
      B.store(ty, B.ci(DType::i32, 0), sum);
      B.run(dim3(1), {tensor_arg(X.arg1()), tensor_arg(Y.arg1())});
      CHECK(Y.getf(0) == (t == DType::bf16 ? 1.0 : 1.0 + 0x1p-8));
    }
  }
}

TEST_CASE("integer results wrap to their width before they feed the next op") {
  for (DType t : kIntTypes) {
    SUBCASE(name(t).c_str()) {
      // (a + b) / 3 and (a * b) % 7 with operands near the type's limits.
      const std::vector<int64_t> av = {int_max(t), int_max(t) - 5, int_min(t), int_min(t) + 3, 100, -77};
      const std::vector<int64_t> bv = {1, 17, -1, -9, int_max(t), int_min(t)};
      const auto n = static_cast<int64_t>(av.size());
      Buffer a(t, n), b(t, n), q(t, n), m(t, n), neg(DType::i1, n);
      for (int64_t k = 0; k < n; ++k) {
        a.seti(k, av[static_cast<size_t>(k)]);
        b.seti(k, bv[static_cast<size_t>(k)]);
      }
      Builder B;
      const NodeId ta = B.tensor(t), tb = B.tensor(t), tq = B.tensor(t), tm = B.tensor(t), tn = B.tensor(DType::i1);
      const ir::Shape s{n};
      const NodeId offs = B.iota(s);
      const NodeId x = B.load(ta, offs), y = B.load(tb, offs);
      const NodeId sum = B.op(Op::Add, t, s, {x, y}), prod = B.op(Op::Mul, t, s, {x, y});
      B.store(tq, offs, B.op(Op::Div, t, s, {sum, B.bcast(B.ci(t, 3), s)}));
      B.store(tm, offs, B.op(Op::Rem, t, s, {prod, B.bcast(B.ci(t, 7), s)}));
      B.store(tn, offs, B.op(Op::Lt, DType::i1, s, {sum, B.bcast(B.ci(t, 0), s)}));
      B.run(dim3(1), {tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(q.arg1()), tensor_arg(m.arg1()), tensor_arg(neg.arg1())});
      for (int64_t k = 0; k < n; ++k) {
        const int64_t sw = ref_int_binary(Op::Add, t, a.geti(k), b.geti(k));
        const int64_t pw = ref_int_binary(Op::Mul, t, a.geti(k), b.geti(k));
        CHECK(q.geti(k) == ref_int_binary(Op::Div, t, sw, 3));
        CHECK(m.geti(k) == ref_int_binary(Op::Rem, t, pw, 7));
        CHECK(neg.geti(k) == (sw < 0 ? 1 : 0));
      }
    }
  }
}
