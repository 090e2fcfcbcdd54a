// Relaxed, device-scope atomic additions (red.global.add), one helper per element type.
namespace tj {

__device__ __forceinline__ void red_add(float* p, float v) {
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void red_add(double* p, double v) {
  asm volatile("red.relaxed.gpu.global.add.f64 [%0], %1;" ::"l"(p), "d"(v) : "memory");
}
__device__ __forceinline__ void red_add(int* p, int v) {
  asm volatile("red.relaxed.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
// Two's complement addition is the same operation for signed and unsigned 64-bit integers.
__device__ __forceinline__ void red_add(long long* p, long long v) {
  asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void red_add_f16(f16_t* p, f16_t v) {
  asm volatile("red.relaxed.gpu.global.add.noftz.f16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}
__device__ __forceinline__ void red_add_bf16(bf16_t* p, bf16_t v) {
  asm volatile("red.relaxed.gpu.global.add.noftz.bf16 [%0], %1;" ::"l"(p), "h"(v) : "memory");
}

}  // namespace tj
