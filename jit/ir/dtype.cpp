// Bit-exact round-to-nearest-even conversions between double and the narrow float formats.
#include "tilejit/ir/dtype.h"

#include <bit>
#include <cmath>
#include <limits>

namespace tilejit::ir {

namespace {
// A binary float format: E exponent bits, M mantissa bits; `ieee` formats have
// infinities (all-ones exponent); e4m3fn has none and NaN only at S.1111.111.
struct Format {
  int e, m;
  bool ieee;
  uint32_t nan;  // canonical NaN produced by cvt.rn
};
constexpr Format kF16{5, 10, true, 0x7fff};
constexpr Format kBF16{8, 7, true, 0x7fff};
constexpr Format kE5M2{5, 2, true, 0x7f};
constexpr Format kE4M3{4, 3, false, 0x7f};

int bias(const Format& f) { return (1 << (f.e - 1)) - 1; }

double max_finite(const Format& f) {
  const int emax = f.ieee ? bias(f) : (1 << f.e) - 1 - bias(f);
  // e4m3fn: the top mantissa code of the top exponent is NaN, so the largest mantissa is 2^M - 2.
  const double mant = f.ieee ? 2.0 - std::ldexp(1.0, -f.m) : 1.0 + std::ldexp((1 << f.m) - 2, -f.m);
  return std::ldexp(mant, emax);
}

uint32_t encode(const Format& f, double x) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.e + f.m) : 0u;
  if (std::isnan(x)) return f.nan;
  const uint32_t inf_or_nan = f.ieee ? sign | (((1u << f.e) - 1) << f.m) : sign | f.nan;
  double a = std::fabs(x);
  if (std::isinf(a)) return inf_or_nan;
  if (a == 0) return sign;
  const int emin = 1 - bias(f);
  int e2;
  std::frexp(a, &e2);
  const int exp = std::max(e2 - 1, emin);
  const double quantum = std::ldexp(1.0, exp - f.m);
  const double r = std::nearbyint(a / quantum) * quantum;  // default rounding mode: nearest even
  const double maxf = max_finite(f);
  if (r > maxf) {
    // IEEE: values at or above max + half a quantum round to infinity; e4m3fn has none and gives NaN.
    return inf_or_nan;
  }
  if (r == 0) return sign;
  if (r < std::ldexp(1.0, emin)) return sign | static_cast<uint32_t>(r / std::ldexp(1.0, emin - f.m));
  std::frexp(r, &e2);
  const int re = e2 - 1;
  const auto mant = static_cast<uint32_t>((r / std::ldexp(1.0, re) - 1.0) * (1 << f.m));
  return sign | (static_cast<uint32_t>(re + bias(f)) << f.m) | mant;
}

double decode(const Format& f, uint32_t b) {
  const bool neg = (b >> (f.e + f.m)) & 1;
  const uint32_t ef = (b >> f.m) & ((1u << f.e) - 1);
  const uint32_t mf = b & ((1u << f.m) - 1);
  double v;
  if (f.ieee && ef == (1u << f.e) - 1) {
    v = mf ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.ieee && ef == (1u << f.e) - 1 && mf == (1u << f.m) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (ef == 0) {
    v = std::ldexp(static_cast<double>(mf), 1 - bias(f) - f.m);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mf), -f.m), static_cast<int>(ef) - bias(f));
  }
  return neg ? -v : v;
}
}  // namespace

uint16_t to_f16_bits(double x) { return static_cast<uint16_t>(encode(kF16, x)); }
uint16_t to_bf16_bits(double x) { return static_cast<uint16_t>(encode(kBF16, x)); }

double to_tf32(double x) {
  if (std::isnan(x)) return x;
  uint32_t bits = std::bit_cast<uint32_t>(static_cast<float>(x));
  bits &= 0xffffe000u;
  return static_cast<double>(std::bit_cast<float>(bits));
}
uint8_t to_e4m3_bits(double x) { return static_cast<uint8_t>(encode(kE4M3, x)); }
uint8_t to_e5m2_bits(double x) { return static_cast<uint8_t>(encode(kE5M2, x)); }
double f16_bits_to_double(uint16_t h) { return decode(kF16, h); }
double bf16_bits_to_double(uint16_t h) { return decode(kBF16, h); }
double e4m3_bits_to_double(uint8_t b) { return decode(kE4M3, b); }
double e5m2_bits_to_double(uint8_t b) { return decode(kE5M2, b); }

double round_to(DType t, double x) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::f64: return x;
    case DType::f16: return f16_bits_to_double(to_f16_bits(x));
    case DType::bf16: return bf16_bits_to_double(to_bf16_bits(x));
    case DType::f8e4m3: return e4m3_bits_to_double(to_e4m3_bits(x));
    case DType::f8e5m2: return e5m2_bits_to_double(to_e5m2_bits(x));
    default: return x;
  }
}

}  // namespace tilejit::ir
