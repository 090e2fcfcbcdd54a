// Basic types of generated kernels: the opaque TMA descriptor, element storage types, shared-memory vector copies.
//
// Generated code never includes cuda.h or cuda_runtime.h: NVRTC's built-in
// declarations (threadIdx, __syncthreads, math functions, vector types) are all
// it needs. Every helper is one PTX instruction or a few lines of C++.
namespace tj {

/// A TMA descriptor (CUtensorMap) as opaque bytes: 128 bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  unsigned char bytes[128];
};

/// Storage of the narrow float types: their bit patterns.
typedef unsigned short bf16_t;
typedef unsigned short f16_t;
typedef unsigned char e4m3_t;
typedef unsigned char e5m2_t;

/// The 32-bit shared-state-space address of a pointer into shared memory.
__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// The generic address of a descriptor (a __grid_constant__ parameter or global memory).
__device__ __forceinline__ unsigned long long desc_addr(const TensorMap* d) {
  return reinterpret_cast<unsigned long long>(d);
}

template <int Bytes> struct VecOf;
template <> struct VecOf<16> { typedef uint4 type; };
template <> struct VecOf<8> { typedef uint2 type; };
template <> struct VecOf<4> { typedef unsigned type; };
template <> struct VecOf<2> { typedef unsigned short type; };
template <> struct VecOf<1> { typedef unsigned char type; };

/// N consecutive elements of storage type S moved in accesses of at most 16 bytes: `Width` bytes
/// (a vector type V) holding `Per` elements each, `Count` of them.
template <int N, class S>
struct VecShape {
  static constexpr int kBytes = N * static_cast<int>(sizeof(S));
  static constexpr int kWidth = kBytes >= 16 ? 16 : kBytes;
  static constexpr int kPer = kWidth / static_cast<int>(sizeof(S));
  static constexpr int kCount = kBytes / kWidth;
  typedef typename VecOf<kWidth>::type V;
};

/// The Per elements of storage type S that the vector word `v` holds, as registers of type T.
template <int Per, class T, class S, class V>
__device__ __forceinline__ void unpack(T* dst, V v) {
  union {
    V v;
    S e[Per];
  } u;
  u.v = v;
#pragma unroll
  for (int j = 0; j < Per; ++j) dst[j] = static_cast<T>(u.e[j]);
}

/// The inverse of unpack: Per registers of type T as elements of storage type S in one vector word V.
template <int Per, class S, class V, class T>
__device__ __forceinline__ V pack(const T* src) {
  union {
    V v;
    S e[Per];
  } u;
#pragma unroll
  for (int j = 0; j < Per; ++j) u.e[j] = static_cast<S>(src[j]);
  return u.v;
}

/// Reads N consecutive elements of storage type S (aligned to their size, at
/// most 16 bytes per access) into registers of type T.
template <int N, class T, class S>
__device__ __forceinline__ void lds(T* dst, const S* src) {
  typedef VecShape<N, S> Shape;
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i)
    unpack<Shape::kPer, T, S>(dst + i * Shape::kPer, reinterpret_cast<const typename Shape::V*>(src)[i]);
}

/// Writes N consecutive register elements of type T as storage type S (see lds).
template <int N, class T, class S>
__device__ __forceinline__ void sts(S* dst, const T* src) {
  typedef VecShape<N, S> Shape;
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i)
    reinterpret_cast<typename Shape::V*>(dst)[i] = pack<Shape::kPer, S, typename Shape::V>(src + i * Shape::kPer);
}

/// Cache eviction hints of pointer accesses (ir::Evict, the template argument E of the global accesses below):
/// 0 none (plain C++ accesses), 1 evict first, 2 evict last. A hinted access is one PTX instruction with the
/// L1 priority and an L2 policy (createpolicy, which ptxas hoists); its "memory" clobber keeps it in
/// program order with the kernel's other memory accesses, as a plain access is to its own address.
enum : int { kEvictFirst = 1, kEvictLast = 2 };

template <int E>
__device__ __forceinline__ unsigned long long l2_policy() {
  static_assert(E == 1 || E == 2, "l2_policy: evict first (1) or last (2)");
  unsigned long long p;
  if constexpr (E == 1) asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  else asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}

/// One vector word (a VecOf type) read from global memory with eviction hint E.
template <int E, class V>
__device__ __forceinline__ V ldg_word(const V* p) {
  if constexpr (E == 0) {
    return *p;
  } else {
    const unsigned long long pol = l2_policy<E>();
    V v;
    if constexpr (sizeof(V) == 16) {
      if constexpr (E == 1)
        asm("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol) : "memory");
      else
        asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol) : "memory");
    } else if constexpr (sizeof(V) == 8) {
      if constexpr (E == 1)
        asm("ld.global.L1::evict_first.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(pol) : "memory");
      else
        asm("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(v.x), "=r"(v.y) : "l"(p), "l"(pol) : "memory");
    } else if constexpr (sizeof(V) == 4) {
      if constexpr (E == 1)
        asm("ld.global.L1::evict_first.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(pol) : "memory");
      else
        asm("ld.global.L1::evict_last.L2::cache_hint.u32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(pol) : "memory");
    } else {
      unsigned short h;  // 8- and 16-bit words through a 16-bit register
      if constexpr (sizeof(V) == 2 && E == 1)
        asm("ld.global.L1::evict_first.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(h) : "l"(p), "l"(pol) : "memory");
      else if constexpr (sizeof(V) == 2)
        asm("ld.global.L1::evict_last.L2::cache_hint.u16 %0, [%1], %2;" : "=h"(h) : "l"(p), "l"(pol) : "memory");
      else if constexpr (E == 1)
        asm("ld.global.L1::evict_first.L2::cache_hint.u8 %0, [%1], %2;" : "=h"(h) : "l"(p), "l"(pol) : "memory");
      else
        asm("ld.global.L1::evict_last.L2::cache_hint.u8 %0, [%1], %2;" : "=h"(h) : "l"(p), "l"(pol) : "memory");
      v = static_cast<V>(h);
    }
    return v;
  }
}

/// One vector word written to global memory with eviction hint E (evict first: not allocated in L1).
template <int E, class V>
__device__ __forceinline__ void stg_word(V* p, V v) {
  if constexpr (E == 0) {
    *p = v;
  } else {
    const unsigned long long pol = l2_policy<E>();
    if constexpr (sizeof(V) == 16) {
      if constexpr (E == 1)
        asm volatile("st.global.L1::no_allocate.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                     :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
      else
        asm volatile("st.global.L1::evict_last.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                     :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
    } else if constexpr (sizeof(V) == 8) {
      if constexpr (E == 1)
        asm volatile("st.global.L1::no_allocate.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;" :: "l"(p), "r"(v.x), "r"(v.y), "l"(pol) : "memory");
      else
        asm volatile("st.global.L1::evict_last.L2::cache_hint.v2.u32 [%0], {%1, %2}, %3;" :: "l"(p), "r"(v.x), "r"(v.y), "l"(pol) : "memory");
    } else if constexpr (sizeof(V) == 4) {
      if constexpr (E == 1)
        asm volatile("st.global.L1::no_allocate.L2::cache_hint.u32 [%0], %1, %2;" :: "l"(p), "r"(v), "l"(pol) : "memory");
      else
        asm volatile("st.global.L1::evict_last.L2::cache_hint.u32 [%0], %1, %2;" :: "l"(p), "r"(v), "l"(pol) : "memory");
    } else {
      const unsigned short h = static_cast<unsigned short>(v);
      if constexpr (sizeof(V) == 2 && E == 1)
        asm volatile("st.global.L1::no_allocate.L2::cache_hint.u16 [%0], %1, %2;" :: "l"(p), "h"(h), "l"(pol) : "memory");
      else if constexpr (sizeof(V) == 2)
        asm volatile("st.global.L1::evict_last.L2::cache_hint.u16 [%0], %1, %2;" :: "l"(p), "h"(h), "l"(pol) : "memory");
      else if constexpr (E == 1)
        asm volatile("st.global.L1::no_allocate.L2::cache_hint.u8 [%0], %1, %2;" :: "l"(p), "h"(h), "l"(pol) : "memory");
      else
        asm volatile("st.global.L1::evict_last.L2::cache_hint.u8 [%0], %1, %2;" :: "l"(p), "h"(h), "l"(pol) : "memory");
    }
  }
}

/// One element of storage type S read / written with eviction hint E (the accesses that are not vectors).
template <int E, class S>
__device__ __forceinline__ S ldg1(const S* p) {
  typedef typename VecOf<sizeof(S)>::type V;
  union {
    V v;
    S e;
  } u;
  u.v = ldg_word<E>(reinterpret_cast<const V*>(p));
  return u.e;
}
template <int E, class S, class T>
__device__ __forceinline__ void stg1(S* p, T value) {
  typedef typename VecOf<sizeof(S)>::type V;
  union {
    V v;
    S e;
  } u;
  u.e = static_cast<S>(value);
  stg_word<E>(reinterpret_cast<V*>(p), u.v);
}

/// Global-memory vector reads and writes: the copies of lds / sts through a global address
/// (ld.global.v4 / st.global.v4 for 16 bytes); the address is aligned to the vector's size. E: the eviction
/// hint (0: none, plain accesses as lds / sts make).
template <int N, int E = 0, class T, class S>
__device__ __forceinline__ void ldg(T* dst, const S* src) {
  typedef VecShape<N, S> Shape;
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i)
    unpack<Shape::kPer, T, S>(dst + i * Shape::kPer, ldg_word<E>(reinterpret_cast<const typename Shape::V*>(src) + i));
}
template <int N, int E = 0, class T, class S>
__device__ __forceinline__ void stg(S* dst, const T* src) {
  typedef VecShape<N, S> Shape;
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i)
    stg_word<E>(reinterpret_cast<typename Shape::V*>(dst) + i, pack<Shape::kPer, S, typename Shape::V>(src + i * Shape::kPer));
}

/// A masked ldg: the N elements when `pred`, else N copies of `other` (a storage bit pattern). The choice is
/// made on whole vector words, so narrow elements are never merged one at a time. The fill is written into
/// the union and overwritten by the load on purpose: the same choice made on a separate vector variable
/// (or built by a helper shared with sts) compiles differently, e.g. 8 bytes of spills in layer norm
/// over 16384 columns at 8 warps x 2 programs per SM, where this form has none.
template <int N, int E = 0, class T, class S>
__device__ __forceinline__ void ldg_or(T* dst, const S* src, bool pred, S other) {
  typedef VecShape<N, S> Shape;
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i) {
    union {
      typename Shape::V v;
      S e[Shape::kPer];
    } u;
#pragma unroll
    for (int j = 0; j < Shape::kPer; ++j) u.e[j] = other;
    if (pred) u.v = ldg_word<E>(reinterpret_cast<const typename Shape::V*>(src) + i);
    unpack<Shape::kPer, T, S>(dst + i * Shape::kPer, u.v);
  }
}

/// ldg / ldg_or of bf16 storage straight into f32 registers (a load whose only use is `.to<f32>()`): each
/// 32-bit word gives its low element as w << 16 and its high one as w & 0xffff0000, one instruction each
/// (through 16-bit registers the high one takes an extract and a shift). The fill of ldg_or is a word of two
/// `other`s.
template <int N, int E = 0>
__device__ __forceinline__ void ldg_bf16_f32(float* dst, const bf16_t* src, bool pred = true, bf16_t other = 0) {
  typedef VecShape<N, bf16_t> Shape;
  static_assert(Shape::kPer % 2 == 0, "ldg_bf16_f32: whole 32-bit words");
#pragma unroll
  for (int i = 0; i < Shape::kCount; ++i) {
    union {
      typename Shape::V v;
      unsigned w[Shape::kWidth / 4];
    } u;
#pragma unroll
    for (int k = 0; k < Shape::kWidth / 4; ++k) u.w[k] = static_cast<unsigned>(other) * 0x10001u;
    if (pred) u.v = ldg_word<E>(reinterpret_cast<const typename Shape::V*>(src) + i);
#pragma unroll
    for (int k = 0; k < Shape::kWidth / 4; ++k) {
      dst[i * Shape::kPer + 2 * k] = __uint_as_float(u.w[k] << 16);
      dst[i * Shape::kPer + 2 * k + 1] = __uint_as_float(u.w[k] & 0xffff0000u);
    }
  }
}

/// The index of this program in the whole grid (x fastest).
__device__ __forceinline__ unsigned linear_program_id() {
  return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}

}  // namespace tj
