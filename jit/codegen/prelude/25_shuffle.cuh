// Warp shuffles: exchanging registers between the lanes of a warp (reductions).
namespace tj {

/// The value of `v` in lane (lane ^ mask): shfl.sync.bfly over all 32 lanes, one 32-bit word.
__device__ __forceinline__ unsigned shfl_bfly_b32(unsigned v, int mask) {
  unsigned r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}

/// shfl_bfly_b32 for any register type: narrow types widen to one word, 8-byte types move as two.
template <class T>
__device__ __forceinline__ T shfl_xor(T v, int mask) {
  if constexpr (sizeof(T) == 8) {
    union { T t; unsigned w[2]; } u;
    u.t = v;
    u.w[0] = shfl_bfly_b32(u.w[0], mask);
    u.w[1] = shfl_bfly_b32(u.w[1], mask);
    return u.t;
  } else if constexpr (sizeof(T) == 4) {
    union { T t; unsigned w; } u;
    u.t = v;
    u.w = shfl_bfly_b32(u.w, mask);
    return u.t;
  } else {
    return static_cast<T>(shfl_bfly_b32(static_cast<unsigned>(v), mask));
  }
}

}  // namespace tj
