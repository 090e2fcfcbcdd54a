// Exhaustive tests of the narrow float conversions (ir::to_*_bits and back) and of the interpreter's casts.
#include <algorithm>
#include <cmath>

#include "interp_test_util.h"

using namespace itest;
using tilejit::dim3;

namespace {

/// A narrow format as the tests see it: bit layout plus the library's conversions.
struct Narrow {
  DType t;
  int ebits, mbits;
  bool ieee;  // has infinities; e4m3fn has none and one NaN per sign
  uint32_t count() const { return 1u << (1 + ebits + mbits); }
  uint32_t encode(double x) const {
    switch (t) {
      case DType::f16: return ir::to_f16_bits(x);
      case DType::bf16: return ir::to_bf16_bits(x);
      case DType::f8e4m3: return ir::to_e4m3_bits(x);
      default: return ir::to_e5m2_bits(x);
    }
  }
  double decode(uint32_t b) const {
    switch (t) {
      case DType::f16: return ir::f16_bits_to_double(static_cast<uint16_t>(b));
      case DType::bf16: return ir::bf16_bits_to_double(static_cast<uint16_t>(b));
      case DType::f8e4m3: return ir::e4m3_bits_to_double(static_cast<uint8_t>(b));
      default: return ir::e5m2_bits_to_double(static_cast<uint8_t>(b));
    }
  }
  uint32_t nan() const { return t == DType::f16 || t == DType::bf16 ? 0x7fffu : 0x7fu; }
  /// Reference decoding written from the format definition.
  double ref_decode(uint32_t b) const {
    const uint32_t sign = b >> (ebits + mbits);
    const uint32_t e = (b >> mbits) & ((1u << ebits) - 1);
    const uint32_t m = b & ((1u << mbits) - 1);
    const int bias = (1 << (ebits - 1)) - 1;
    double v;
    if (ieee && e == (1u << ebits) - 1) {
      v = m ? NAN : INFINITY;
    } else if (!ieee && e == (1u << ebits) - 1 && m == (1u << mbits) - 1) {
      v = NAN;
    } else if (e == 0) {
      v = static_cast<double>(m) * std::pow(2.0, 1 - bias - mbits);
    } else {
      v = (1.0 + static_cast<double>(m) / static_cast<double>(1u << mbits)) * std::pow(2.0, static_cast<int>(e) - bias);
    }
    return sign ? -v : v;
  }
};

const Narrow kNarrow[] = {{DType::f16, 5, 10, true}, {DType::bf16, 8, 7, true}, {DType::f8e4m3, 4, 3, false}, {DType::f8e5m2, 5, 2, true}};

/// The non-negative finite codes of a format in increasing value order, with their values.
std::vector<std::pair<uint32_t, double>> finite_codes(const Narrow& f) {
  std::vector<std::pair<uint32_t, double>> v;
  for (uint32_t b = 0; b < f.count() / 2; ++b) {
    const double x = f.ref_decode(b);
    if (std::isfinite(x)) v.emplace_back(b, x);
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return v;
}

}  // namespace

TEST_CASE("decoding every bit pattern of the narrow formats") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      int64_t bad = 0;
      for (uint32_t b = 0; b < f.count(); ++b) bad += !same(f.decode(b), f.ref_decode(b));
      CHECK(bad == 0);
    }
  }
  SUBCASE("bf16 is the top half of an f32") {
    int64_t bad = 0;
    for (uint32_t b = 0; b < 65536; ++b) bad += !same(ir::bf16_bits_to_double(static_cast<uint16_t>(b)), std::bit_cast<float>(b << 16));
    CHECK(bad == 0);
  }
  SUBCASE("f16 agrees with the compiler's _Float16") {
    int64_t bad = 0;
    for (uint32_t b = 0; b < 65536; ++b) {
      const auto bits = static_cast<uint16_t>(b);
      const auto h = std::bit_cast<_Float16>(bits);
      bad += !same(ir::f16_bits_to_double(bits), static_cast<double>(h));
    }
    CHECK(bad == 0);
  }
  SUBCASE("known values") {
    CHECK(ir::e4m3_bits_to_double(0x7e) == 448.0);
    CHECK(ir::e4m3_bits_to_double(0x08) == 0x1p-6);
    CHECK(ir::e4m3_bits_to_double(0x01) == 0x1p-9);
    CHECK(std::isnan(ir::e4m3_bits_to_double(0x7f)));
    CHECK(std::isnan(ir::e4m3_bits_to_double(0xff)));
    CHECK(ir::e4m3_bits_to_double(0x78) == 256.0);  // exponent field 15 is finite in e4m3fn
    CHECK(same(ir::e4m3_bits_to_double(0x80), -0.0));
    CHECK(ir::e5m2_bits_to_double(0x7b) == 57344.0);
    CHECK(ir::e5m2_bits_to_double(0x7c) == INFINITY);
    CHECK(ir::e5m2_bits_to_double(0xfc) == -INFINITY);
    CHECK(std::isnan(ir::e5m2_bits_to_double(0x7d)));
    CHECK(ir::e5m2_bits_to_double(0x01) == 0x1p-16);
    CHECK(ir::f16_bits_to_double(0x7bff) == 65504.0);
    CHECK(ir::f16_bits_to_double(0x0001) == 0x1p-24);
    CHECK(ir::bf16_bits_to_double(0x0001) == 0x1p-133);
    CHECK(ir::bf16_bits_to_double(0x7f7f) == 0x1.fep127);
  }
}

TEST_CASE("every bit pattern round-trips through double (NaN becomes the canonical NaN)") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      int64_t bad = 0;
      for (uint32_t b = 0; b < f.count(); ++b) {
        const double x = f.decode(b);
        const uint32_t want = std::isnan(x) ? f.nan() : b;
        bad += f.encode(x) != want;
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("encoding rounds to nearest even at every midpoint, both signs") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      const auto codes = finite_codes(f);
      const uint32_t sign_bit = 1u << (f.ebits + f.mbits);
      int64_t bad = 0;
      for (size_t k = 0; k + 1 < codes.size(); ++k) {
        const auto [ca, va] = codes[k];
        const auto [cb, vb] = codes[k + 1];
        const double mid = (va + vb) / 2;  // exact in double
        const uint32_t even = (ca & 1) == 0 ? ca : cb;
        for (int s = 0; s < 2; ++s) {
          const double sg = s ? -1.0 : 1.0;
          const uint32_t sb = s ? sign_bit : 0;
          bad += f.encode(sg * mid) != (sb | even);
          bad += f.encode(sg * std::nextafter(mid, 0.0)) != (sb | ca);
          bad += f.encode(sg * std::nextafter(mid, INFINITY)) != (sb | cb);
          bad += f.encode(sg * va) != (sb | ca);
        }
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("overflow goes to infinity, or to NaN for e4m3") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      const auto codes = finite_codes(f);
      const double maxv = codes.back().second;
      const double quantum = maxv - codes[codes.size() - 2].second;
      const double threshold = maxv + quantum / 2;  // the tie above the largest value
      const uint32_t inf = f.ieee ? ((1u << f.ebits) - 1) << f.mbits : f.nan();
      const uint32_t max_code = codes.back().first;
      const uint32_t sign_bit = 1u << (f.ebits + f.mbits);
      // The largest value has an odd code in every format but e5m2, whose next code is the (even) infinity;
      // the tie above it goes to the even side: infinity (NaN for e4m3) unless max is even.
      const uint32_t at_tie = (max_code & 1) == 0 ? max_code : inf;
      CHECK(f.encode(threshold) == at_tie);
      CHECK(f.encode(std::nextafter(threshold, 0.0)) == max_code);
      CHECK(f.encode(std::nextafter(threshold, INFINITY)) == inf);
      CHECK(f.encode(maxv * 4) == inf);
      CHECK(f.encode(1e300) == inf);
      CHECK(f.encode(INFINITY) == inf);
      if (f.ieee) {
        CHECK(f.encode(-INFINITY) == (sign_bit | inf));
        CHECK(f.encode(-maxv * 4) == (sign_bit | inf));
      } else {
        CHECK(std::isnan(f.decode(f.encode(-INFINITY))));
        CHECK(std::isnan(f.decode(f.encode(-1e300))));
      }
      CHECK(f.encode(NAN) == f.nan());
      CHECK(f.encode(-NAN) == f.nan());
    }
  }
}

TEST_CASE("subnormals and signed zeros") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      const double min_sub = f.ref_decode(1);
      const uint32_t sign_bit = 1u << (f.ebits + f.mbits);
      CHECK(f.encode(0.0) == 0u);
      CHECK(f.encode(-0.0) == sign_bit);
      CHECK(f.encode(min_sub) == 1u);
      CHECK(f.encode(min_sub / 2) == 0u);                    // tie -> even (zero)
      CHECK(f.encode(-min_sub / 2) == sign_bit);             // keeps the sign
      CHECK(f.encode(min_sub * 0.75) == 1u);
      CHECK(f.encode(min_sub * 1.5) == 2u);                  // tie between 1 and 2 -> 2
      CHECK(f.encode(min_sub * 2.5) == 2u);                  // tie between 2 and 3 -> 2
      CHECK(f.encode(min_sub * 1e-3) == 0u);
      // The largest subnormal and the smallest normal.
      const uint32_t largest_sub = (1u << f.mbits) - 1;
      CHECK(f.encode(f.ref_decode(largest_sub)) == largest_sub);
      CHECK(f.encode(f.ref_decode(largest_sub) + min_sub / 2) == (largest_sub + 1));  // tie -> even (the normal)
      CHECK(f.decode(largest_sub + 1) == std::ldexp(1.0, 2 - (1 << (f.ebits - 1))));
    }
  }
}

TEST_CASE("random doubles round like the reference (and like _Float16 for f16)") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      auto r = rng(static_cast<uint64_t>(f.t) + 11);
      std::uniform_real_distribution<double> mant(1.0, 2.0);
      const int lo = f.t == DType::bf16 ? -140 : -30, hi = f.t == DType::bf16 ? 130 : 20;
      std::uniform_int_distribution<int> ex(lo, hi);
      int64_t bad = 0;
      for (int k = 0; k < 200000; ++k) {
        double x = std::ldexp(mant(r), ex(r));
        if (k & 1) x = -x;
        const double want = ref_round(f.t, x);
        bad += !same(f.decode(f.encode(x)), want);
        bad += !same(ir::round_to(f.t, x), want);
        if (f.t == DType::f16) bad += !same(static_cast<double>(static_cast<_Float16>(x)), want);
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("a conversion from double rounds once") {
  // 1 + 2^-8 + 2^-30 is just above the bf16 midpoint 1 + 2^-8; rounding through f32 would land on the tie.
  CHECK(ir::to_bf16_bits(1.0 + 0x1p-8 + 0x1p-30) == 0x3f81);
  CHECK(ir::to_bf16_bits(1.0 + 0x1p-8) == 0x3f80);
  CHECK(ir::to_f16_bits(1.0 + 0x1p-11 + 0x1p-40) == 0x3c01);
  CHECK(ir::to_f16_bits(1.0 + 0x1p-11) == 0x3c00);
  CHECK(ir::to_e4m3_bits(1.0 + 0x1p-4 + 0x1p-40) == 0x39);
  CHECK(ir::to_e5m2_bits(1.0 + 0x1p-3 + 0x1p-40) == 0x3d);
  CHECK(ir::round_to(DType::f32, 1.0 + 0x1p-24 + 0x1p-52) == 1.0 + 0x1p-23);
  CHECK(ir::round_to(DType::f64, 0.1) == 0.1);
}

TEST_CASE("host storage types convert like the IR") {
  SUBCASE("bfloat16") {
    CHECK(tilejit::bfloat16(1.0f).bits == 0x3f80);
    CHECK(static_cast<float>(tilejit::bfloat16::from_bits(0xc0a0)) == -5.0f);
    CHECK(tilejit::bfloat16(3.0e38f * 2).bits == 0x7f80);
  }
  SUBCASE("half") {
    CHECK(tilejit::half(1.0f).bits == 0x3c00);
    CHECK(tilejit::half(65520.0f).bits == 0x7c00);
    CHECK(static_cast<float>(tilejit::half::from_bits(0x0001)) == 0x1p-24f);
  }
  SUBCASE("float8") {
    CHECK(tilejit::float8_e4m3(448.0f).bits == 0x7e);
    CHECK(tilejit::float8_e4m3(1000.0f).bits == 0x7f);
    CHECK(tilejit::float8_e5m2(1.0f).bits == 0x3c);
    CHECK(static_cast<float>(tilejit::float8_e5m2::from_bits(0x7b)) == 57344.0f);
  }
}

namespace {
/// Runs y = cast<to>(x) for every element of x in the interpreter.
void interp_cast(const Buffer& x, const Buffer& y) {
  Builder B;
  const NodeId tx = B.tensor(x.dtype()), ty = B.tensor(y.dtype());
  const ir::Shape s{x.size()};
  const NodeId offs = B.iota(s);
  B.store(ty, offs, B.op(Op::Cast, y.dtype(), s, {B.load(tx, offs)}));
  B.run(dim3(1), {tensor_arg(x.arg1()), tensor_arg(y.arg1())});
}
}  // namespace

TEST_CASE("interpreter casts: every narrow pattern to f32 and back") {
  for (const Narrow& f : kNarrow) {
    SUBCASE(name(f.t).c_str()) {
      const auto n = static_cast<int64_t>(f.count());
      Buffer x(f.t, n), mid(DType::f32, n), back(f.t, n);
      for (int64_t k = 0; k < n; ++k) x.set_bits(k, static_cast<uint64_t>(k));
      interp_cast(x, mid);
      interp_cast(mid, back);
      int64_t bad = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double v = f.ref_decode(static_cast<uint32_t>(k));
        bad += !same(mid.getf(k), v);
        bad += back.bits(k) != (std::isnan(v) ? f.nan() : static_cast<uint64_t>(k));
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("interpreter casts: f32 and f64 to the narrow formats at ties, subnormals and overflow") {
  for (const Narrow& f : kNarrow) {
    for (DType src : {DType::f32, DType::f64}) {
      SUBCASE((name(src) + " -> " + name(f.t)).c_str()) {
        std::vector<double> v;
        const auto codes = finite_codes(f);
        for (size_t k = 0; k + 1 < codes.size(); k += (codes.size() > 1000 ? 7 : 1)) {
          const double mid = (codes[k].second + codes[k + 1].second) / 2;
          for (double x : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, INFINITY), codes[k].second})
            for (double sg : {1.0, -1.0}) v.push_back(ref_round(src, sg * x));
        }
        v.push_back(1e300);
        v.push_back(-1e300);
        v.push_back(INFINITY);
        v.push_back(NAN);
        v.push_back(1.0 + 0x1p-8 + 0x1p-30);  // f64 only: rounding through f32 would differ
        v.push_back(1.0 + 0x1p-11 + 0x1p-40);
        for (double& x : v) x = ref_round(src, x);
        const auto n = static_cast<int64_t>(v.size());
        Buffer x(src, n), y(f.t, n);
        for (int64_t k = 0; k < n; ++k) x.setf(k, v[static_cast<size_t>(k)]);
        interp_cast(x, y);
        int64_t bad = 0;
        for (int64_t k = 0; k < n && bad < 5; ++k) {
          const double want = ref_round(f.t, v[static_cast<size_t>(k)]);
          const bool ok = same(y.getf(k), want);
          if (!ok) {
            ++bad;
            CHECK_MESSAGE(ok, v[static_cast<size_t>(k)] << " -> " << y.getf(k) << ", want " << want);
          }
        }
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("interpreter casts: every f32 exponent and random mantissas to f16 and bf16") {
  for (DType t : {DType::f16, DType::bf16}) {
    SUBCASE(name(t).c_str()) {
      auto r = rng(static_cast<uint64_t>(t) + 99);
      const int64_t n = 256 * 256;
      Buffer x(DType::f32, n), y(t, n);
      for (int64_t k = 0; k < n; ++k) {
        // Every exponent and sign, with random mantissas (finite only: exponent 255 skipped).
        auto bits = static_cast<uint32_t>((k % 255) << 23) | static_cast<uint32_t>(r() & 0x7fffff);
        if ((k / 255) & 1) bits |= 0x80000000u;
        x.set_bits(k, bits);
      }
      interp_cast(x, y);
      int64_t bad = 0;
      for (int64_t k = 0; k < n; ++k) {
        const double v = x.getf(k);
        const double want = t == DType::f16 ? static_cast<double>(static_cast<_Float16>(static_cast<float>(v))) : ref_round(t, v);
        bad += !same(y.getf(k), want);
      }
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("interpreter casts: i64 to narrow floats round once") {
  // 2^60 + 2^52 + 1: exact in long double; rounding to double first would lose the final 1 and create a tie.
  const int64_t vals[] = {(int64_t{1} << 60) + (int64_t{1} << 52) + 1, (int64_t{1} << 60) + (int64_t{1} << 52),
                          -((int64_t{1} << 62) + (int64_t{1} << 54) + 3), (int64_t{1} << 24) + 1, std::numeric_limits<int64_t>::max(),
                          std::numeric_limits<int64_t>::min()};
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::f8e4m3, DType::f8e5m2}) {
    SUBCASE(name(t).c_str()) {
      Buffer x(DType::i64, 6), y(t, 6);
      for (int64_t k = 0; k < 6; ++k) x.seti(k, vals[k]);
      interp_cast(x, y);
      for (int64_t k = 0; k < 6; ++k) CHECK(same(y.getf(k), ref_round(t, static_cast<long double>(vals[k]))));
    }
  }
}
