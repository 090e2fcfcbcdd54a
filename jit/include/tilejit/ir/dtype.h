// Element types of the IR: sizes, names, classes, and the conversions between them.
#pragma once

#include <cstdint>
#include <string_view>

namespace tilejit::ir {

/// Element type of a value or a tensor. fp8 types are storage types: they are
/// loaded, stored and converted, but arithmetic on them is rejected (convert first).
enum class DType : uint8_t {
  i1,      ///< bool; stored as one byte in memory
  i8,
  u8,
  i32,
  i64,
  f16,
  bf16,
  f32,
  f64,
  f8e4m3,  ///< OCP fp8 E4M3FN (no infinities, NaN = S.1111.111), max 448
  f8e5m2,  ///< OCP fp8 E5M2 (IEEE-like, has inf and NaN), max 57344
};

inline constexpr int kNumDTypes = 11;

constexpr int size_of(DType t) {
  switch (t) {
    case DType::i1: case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return 1;
    case DType::f16: case DType::bf16: return 2;
    case DType::i32: case DType::f32: return 4;
    case DType::i64: case DType::f64: return 8;
  }
  return 0;
}
constexpr bool is_float(DType t) {
  return t == DType::f16 || t == DType::bf16 || t == DType::f32 || t == DType::f64 ||
         t == DType::f8e4m3 || t == DType::f8e5m2;
}
constexpr bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }
constexpr bool is_int(DType t) { return !is_float(t) && t != DType::i1; }
constexpr bool is_signed_int(DType t) { return t == DType::i8 || t == DType::i32 || t == DType::i64; }
constexpr bool is_bool(DType t) { return t == DType::i1; }

constexpr std::string_view name_of(DType t) {
  switch (t) {
    case DType::i1: return "i1";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::f8e4m3: return "f8e4m3";
    case DType::f8e5m2: return "f8e5m2";
  }
  return "?";
}

// Bit-exact conversions (round to nearest even; NaN preserved as a quiet NaN;
// overflow to inf where the format has one, to NaN for e4m3, matching the
// saturate-free cvt.rn instructions of sm_90).
// Inputs are doubles so that a conversion from f64 rounds once, as cvt.rn does.
uint16_t to_f16_bits(double x);
uint16_t to_bf16_bits(double x);
uint8_t to_e4m3_bits(double x);
uint8_t to_e5m2_bits(double x);
double f16_bits_to_double(uint16_t h);
double bf16_bits_to_double(uint16_t h);
double e4m3_bits_to_double(uint8_t b);
double e5m2_bits_to_double(uint8_t b);
/// Rounds `x` once to the nearest value representable in float type `t`.
double round_to(DType t, double x);
/// The f32 value `x` as tensor cores read an f32 operand (tf32): its 13 low mantissa bits cleared
/// (truncation toward zero); NaN stays NaN.
double to_tf32(double x);

}  // namespace tilejit::ir
