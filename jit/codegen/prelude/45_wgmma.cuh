// Tensor-core (wgmma) helpers: the warpgroup fence / commit / wait, register fences for accumulators, the
// storage of f16 accumulators, and the shared-memory matrix descriptor. The instructions themselves (one
// per shape and type, with the accumulator's registers as operands) are printed into each kernel that
// uses them.
namespace tj {

/// Orders earlier register and shared-memory writes before the wgmma instructions that follow.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }

/// Closes the group of wgmma instructions issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }

/// Waits until at most N committed groups of this warpgroup are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

/// Keeps the compiler from moving reads or writes of accumulator registers across a fence or wait
/// (the registers are written asynchronously by the tensor cores between issue and wait).
template <int N>
__device__ __forceinline__ void fence_registers(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_registers(int* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_registers(unsigned* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

/// An f16 accumulator of N elements: the elements (h) as wgmma's N / 2 registers (w), two per
/// register, the first in the low half.
template <int N>
union PackedF16 {
  f16_t h[N];
  unsigned w[N / 2];
};

/// Two 16-bit values (bf16 / f16 bit patterns) as one 32-bit register of a wgmma operand a, the first
/// in the low half.
__device__ __forceinline__ unsigned pack_b16x2(unsigned short lo, unsigned short hi) {
  return static_cast<unsigned>(lo) | (static_cast<unsigned>(hi) << 16);
}

/// The 64-bit wgmma matrix descriptor of an operand at shared address `addr`: leading and stride
/// byte offsets (multiples of 16) and the swizzle mode (1: 128 B, 2: 64 B, 3: 32 B); base offset 0,
/// so the operand's swizzle repeat starts on a 1024 / 512 / 256-byte boundary.
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned mode) {
  return static_cast<unsigned long long>((addr & 0x3FFFFu) >> 4) | (static_cast<unsigned long long>(lbo >> 4) << 16) |
         (static_cast<unsigned long long>(sbo >> 4) << 32) | (static_cast<unsigned long long>(mode) << 62);
}

}  // namespace tj
