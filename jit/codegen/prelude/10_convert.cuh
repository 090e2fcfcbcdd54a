// Conversions between the element types, with the IR's rounding rules (cvt.rn, single rounding).
namespace tj {

__device__ __forceinline__ float bf16_to_f32(bf16_t x) { return __uint_as_float(static_cast<unsigned>(x) << 16); }

__device__ __forceinline__ float f16_to_f32(f16_t x) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x));
  return r;
}

/// An f32 value as tensor cores read it (tf32): the 13 low mantissa bits cleared; NaN stays NaN.
__device__ __forceinline__ float to_tf32(float x) { return x != x ? x : __uint_as_float(__float_as_uint(x) & 0xffffe000u); }

__device__ __forceinline__ bf16_t f32_to_bf16(float x) {
  bf16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ f16_t f32_to_f16(float x) {
  f16_t r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ bf16_t f64_to_bf16(double x) {
  bf16_t r;
  asm("cvt.rn.bf16.f64 %0, %1;" : "=h"(r) : "d"(x));
  return r;
}

__device__ __forceinline__ f16_t f64_to_f16(double x) {
  f16_t r;
  asm("cvt.rn.f16.f64 %0, %1;" : "=h"(r) : "d"(x));
  return r;
}

// fp8 -> f32 is exact: widen to f16 with cvt, then to f32.
__device__ __forceinline__ float e4m3_to_f32(e4m3_t x) {
  unsigned h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(static_cast<unsigned short>(x)));
  return f16_to_f32(static_cast<f16_t>(h2 & 0xffffu));
}

__device__ __forceinline__ float e5m2_to_f32(e5m2_t x) {
  unsigned h2;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(static_cast<unsigned short>(x)));
  return f16_to_f32(static_cast<f16_t>(h2 & 0xffffu));
}

// sm_90 only has the saturating f32 -> fp8 conversion. The IR rounds to nearest
// even without saturation: values that round past the largest finite number
// become NaN (e4m3, which has no infinity) or infinity (e5m2).
__device__ __forceinline__ e4m3_t f32_to_e4m3(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  if (fabsf(x) > 464.0f) r = (__float_as_uint(x) >> 24 & 0x80u) | 0x7fu;
  return static_cast<e4m3_t>(r & 0xffu);
}

__device__ __forceinline__ e5m2_t f32_to_e5m2(float x) {
  unsigned short r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(x));
  if (fabsf(x) >= 61440.0f) r = (__float_as_uint(x) >> 24 & 0x80u) | 0x7cu;
  return static_cast<e5m2_t>(r & 0xffu);
}

/// f64 -> f32 rounded to odd: rounding the result again to a format of at most
/// 22 mantissa bits gives the correctly rounded f64 result (no double rounding).
__device__ __forceinline__ float f64_to_f32_odd(double x) {
  float r = __double2float_rz(x);
  if (static_cast<double>(r) != x && r == r && fabsf(r) != __int_as_float(0x7f800000))
    r = __uint_as_float(__float_as_uint(r) | 1u);
  return r;
}

__device__ __forceinline__ e4m3_t f64_to_e4m3(double x) { return f32_to_e4m3(f64_to_f32_odd(x)); }
__device__ __forceinline__ e5m2_t f64_to_e5m2(double x) { return f32_to_e5m2(f64_to_f32_odd(x)); }

/// Integer -> f32 rounded to odd (the sticky bit of the dropped low bits): rounding the result again to a
/// format of at most 22 mantissa bits (f16, bf16, fp8) gives the correctly rounded integer.
__device__ __forceinline__ float i32_to_f32_odd(int x) {
  float r = __int2float_rz(x);
  if (__float2int_rz(r) != x) r = __uint_as_float(__float_as_uint(r) | 1u);
  return r;
}
__device__ __forceinline__ float i64_to_f32_odd(long long x) {
  float r = __ll2float_rz(x);
  if (__float2ll_rz(r) != x) r = __uint_as_float(__float_as_uint(r) | 1u);
  return r;
}

/// i64 -> f64 rounded to odd, for a later single rounding to a narrower float.
__device__ __forceinline__ double i64_to_f64_odd(long long x) {
  double r = __ll2double_rz(x);
  if (static_cast<long long>(r) != x) r = __longlong_as_double(__double_as_longlong(r) | 1ll);
  return r;
}

// Float -> integer: truncate toward zero and saturate, NaN -> 0. The conversion instructions
// saturate but give the most negative integer for NaN (measured on an H100), hence the test.
__device__ __forceinline__ int f32_to_i32(float x) { return x != x ? 0 : __float2int_rz(x); }
__device__ __forceinline__ int f64_to_i32(double x) { return x != x ? 0 : __double2int_rz(x); }
__device__ __forceinline__ long long f32_to_i64(float x) { return x != x ? 0ll : __float2ll_rz(x); }
__device__ __forceinline__ long long f64_to_i64(double x) { return x != x ? 0ll : __double2ll_rz(x); }
// 8-bit results come from one saturating conversion (cvt.rzi.sat.s8 / .u8), not from a clamp of the i32
// result: ptxas (CUDA 13.0) fused "clamp to [0, 255], then compare with 255" (a u8 divided by 255) into
// VIMNMX.RELU and a predicate that was wrong on an H100 for zero: 0 / 255 gave 1 (random-program seed 73438;
// docs/testing.md).
__device__ __forceinline__ signed char f32_to_i8(float x) {
  short r;
  asm("cvt.rzi.sat.s8.f32 %0, %1;" : "=h"(r) : "f"(x));
  return x != x ? static_cast<signed char>(0) : static_cast<signed char>(r);
}
__device__ __forceinline__ unsigned char f32_to_u8(float x) {
  unsigned short r;
  asm("cvt.rzi.sat.u8.f32 %0, %1;" : "=h"(r) : "f"(x));
  return x != x ? static_cast<unsigned char>(0) : static_cast<unsigned char>(r);
}
__device__ __forceinline__ signed char f64_to_i8(double x) {
  short r;
  asm("cvt.rzi.sat.s8.f64 %0, %1;" : "=h"(r) : "d"(x));
  return x != x ? static_cast<signed char>(0) : static_cast<signed char>(r);
}
__device__ __forceinline__ unsigned char f64_to_u8(double x) {
  unsigned short r;
  asm("cvt.rzi.sat.u8.f64 %0, %1;" : "=h"(r) : "d"(x));
  return x != x ? static_cast<unsigned char>(0) : static_cast<unsigned char>(r);
}

}  // namespace tj
