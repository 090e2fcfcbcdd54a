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
  for (int i = 0; i < Shape::kCount; ++i) {
    union {
      typename Shape::V v;
      S e[Shape::kPer];
    } u;
#pragma unroll
    for (int j = 0; j < Shape::kPer; ++j) u.e[j] = static_cast<S>(src[i * Shape::kPer + j]);
    reinterpret_cast<typename Shape::V*>(dst)[i] = u.v;
  }
}

/// Global-memory vector reads and writes: the copies of lds / sts through a global address
/// (ld.global.v4 / st.global.v4 for 16 bytes); the address is aligned to the vector's size.
template <int N, class T, class S>
__device__ __forceinline__ void ldg(T* dst, const S* src) {
  lds<N>(dst, src);
}
template <int N, class T, class S>
__device__ __forceinline__ void stg(S* dst, const T* src) {
  sts<N>(dst, src);
}

/// A masked ldg: the N elements when `pred`, else N copies of `other` (a storage bit pattern). The choice is
/// made on whole vector words, so narrow elements are never merged one at a time. The fill is written into
/// the union and overwritten by the load on purpose: the same choice made on a separate vector variable
/// (or built by a helper shared with sts) compiles differently, e.g. 8 bytes of spills in layer norm
/// over 16384 columns at 8 warps x 2 programs per SM, where this form has none.
template <int N, class T, class S>
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
    if (pred) u.v = reinterpret_cast<const typename Shape::V*>(src)[i];
    unpack<Shape::kPer, T, S>(dst + i * Shape::kPer, u.v);
  }
}

/// ldg / ldg_or of bf16 storage straight into f32 registers (a load whose only use is `.to<f32>()`): each
/// 32-bit word gives its low element as w << 16 and its high one as w & 0xffff0000, one instruction each
/// (through 16-bit registers the high one takes an extract and a shift). The fill of ldg_or is a word of two
/// `other`s.
template <int N>
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
    if (pred) u.v = reinterpret_cast<const typename Shape::V*>(src)[i];
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
