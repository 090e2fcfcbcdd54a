// Arithmetic with the IR's semantics where C++ differs: wrapping division, NaN-propagating min and max.
namespace tj {

// i32 / i64 arithmetic wraps modulo 2^32 / 2^64: done on unsigned values, where overflow is defined.
__device__ __forceinline__ int add_wrap(int a, int b) { return static_cast<int>(static_cast<unsigned>(a) + static_cast<unsigned>(b)); }
__device__ __forceinline__ int sub_wrap(int a, int b) { return static_cast<int>(static_cast<unsigned>(a) - static_cast<unsigned>(b)); }
__device__ __forceinline__ int mul_wrap(int a, int b) { return static_cast<int>(static_cast<unsigned>(a) * static_cast<unsigned>(b)); }
__device__ __forceinline__ int neg_wrap(int a) { return static_cast<int>(0u - static_cast<unsigned>(a)); }
__device__ __forceinline__ long long add_wrap(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long sub_wrap(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) - static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long mul_wrap(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}
__device__ __forceinline__ long long neg_wrap(long long a) { return static_cast<long long>(0ull - static_cast<unsigned long long>(a)); }

// Integer min and max (i32, and i8 / u8 computed in int). Each operand first passes a byte permute that
// changes nothing (PRMT with selector 0x3210), which ptxas keeps: CUDA 13.0's ptxas folds the negation of
// an operand into the three-input VIMNMX3 it forms from two min / max and then drops it, so
// max(max(-x, y), z) computed max(max(x, y), z) on an H100 (products seed 5448, docs/testing.md). A PRMT
// result has no negation to fold. One PRMT per operand.
__device__ __forceinline__ int keep_b32(int a) {
  int d;
  asm("prmt.b32 %0, %1, 0, 0x3210;" : "=r"(d) : "r"(a));
  return d;
}
__device__ __forceinline__ int min_i32(int a, int b) {
  a = keep_b32(a);
  b = keep_b32(b);
  return a < b ? a : b;
}
__device__ __forceinline__ int max_i32(int a, int b) {
  a = keep_b32(a);
  b = keep_b32(b);
  return a < b ? b : a;
}

// Division truncates toward zero; INT_MIN / -1 wraps (it is undefined in C++); x / 0 is -1 and
// x % 0 is x, as the interpreter defines them (ir.h).
__device__ __forceinline__ int div_i32(int a, int b) {
  return b == 0 ? -1 : b == -1 ? static_cast<int>(0u - static_cast<unsigned>(a)) : a / b;
}
__device__ __forceinline__ int rem_i32(int a, int b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
__device__ __forceinline__ long long div_i64(long long a, long long b) {
  return b == 0 ? -1 : b == -1 ? static_cast<long long>(0ull - static_cast<unsigned long long>(a)) : a / b;
}
__device__ __forceinline__ long long rem_i64(long long a, long long b) { return b == 0 ? a : b == -1 ? 0 : a % b; }
__device__ __forceinline__ int div_narrow(int a, int b) { return b == 0 ? -1 : a / b; }
__device__ __forceinline__ int rem_narrow(int a, int b) { return b == 0 ? a : a % b; }

// 2^x in one MUFU.EX2 (2 ulp; ir.h): results below 2^-126 flush to +0. exp2f's subnormal results
// cost a compare and two multiplies around it, a tenth of attention's time at head dimension 64.
__device__ __forceinline__ float exp2_f32(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

// min/max of floats propagate NaN (fminf/fmaxf would drop it).
__device__ __forceinline__ float min_f32(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float max_f32(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ double min_f64(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7fffffffffffffffll) : fmin(a, b);
}
__device__ __forceinline__ double max_f64(double a, double b) {
  return (a != a || b != b) ? __longlong_as_double(0x7fffffffffffffffll) : fmax(a, b);
}

// 1 / (1 + e^-x) in twelve instructions (IEEE expf and division took twenty and a branch; silu-gated products such as
// HSTU attention and SwiGLU are bound by them): e^-x = 2^h (1 + l ln 2), h = -x log2(e) rounded and l its rounding
// error (log2(e) split in two), 2^h by MUFU.EX2 and the reciprocal by MUFU.RCP. A few ulp (ir.h); a result below
// 2^-126 (x below about -87.3) is flushed to +0, as the interpreter does too. x is first clamped to [-88, 88]
// (NaN kept), where the result is already 0 or 1, so that 2^h and its correction stay finite.
__device__ __forceinline__ float sigmoid_f32(float x) {
  x = max_f32(min_f32(x, 88.0f), -88.0f);
  const float h = __fmul_rn(x, -1.4426950408889634f);
  const float l = __fadd_rn(__fmaf_rn(x, -1.4426950408889634f, -h), __fmul_rn(x, -1.925963033500011e-08f));
  const float t = exp2_f32(h);
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(__fadd_rn(1.0f, __fmaf_rn(t, __fmul_rn(l, 0.6931471805599453f), t))));
  return r;
}
// The hardware's tanh: one MUFU.TANH, within 2^-10.987 of tanh(x) relative (PTX ISA, tanh.approx.f32); +-1 beyond
// about |x| = 9, NaN kept. What dsl::tanh / dsl::sigmoid with Accuracy::fast compute with.
__device__ __forceinline__ float tanh_approx_f32(float x) {
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ double sigmoid_f64(double x) { return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-x))); }

}  // namespace tj
