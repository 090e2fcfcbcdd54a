// Descriptors built on the device: tensormap.replace on a shared-memory copy, then a release copy to global memory.
//
// ptxas wants the field ordinal and the enum values as immediates, hence the
// template parameters. PTX element type codes: u8 0, u16 1, u32 2, s32 3,
// u64 4, s64 5, f16 6, f32 7, f32.ftz 8, f64 9, bf16 10, tf32 11.
namespace tj {

__device__ __forceinline__ void tensormap_replace_global_address(void* smem, const void* global) {
  asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;"
               ::"r"(smem_addr(smem)), "l"(reinterpret_cast<unsigned long long>(global))
               : "memory");
}

/// `rank_minus_one` is the tensor rank minus one, as the instruction wants.
__device__ __forceinline__ void tensormap_replace_rank(void* smem, unsigned rank_minus_one) {
  asm volatile("tensormap.replace.tile.rank.shared::cta.b1024.b32 [%0], %1;" ::"r"(smem_addr(smem)), "r"(rank_minus_one)
               : "memory");
}

template <int Ordinal>
__device__ __forceinline__ void tensormap_replace_box_dim(void* smem, unsigned value) {
  asm volatile("tensormap.replace.tile.box_dim.shared::cta.b1024.b32 [%0], %1, %2;"
               ::"r"(smem_addr(smem)), "n"(Ordinal), "r"(value)
               : "memory");
}

template <int Ordinal>
__device__ __forceinline__ void tensormap_replace_global_dim(void* smem, unsigned value) {
  asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], %1, %2;"
               ::"r"(smem_addr(smem)), "n"(Ordinal), "r"(value)
               : "memory");
}

/// Ordinal i is the stride of dimension i + 1 (innermost first), in bytes.
template <int Ordinal>
__device__ __forceinline__ void tensormap_replace_global_stride(void* smem, unsigned long long bytes) {
  asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], %1, %2;"
               ::"r"(smem_addr(smem)), "n"(Ordinal), "l"(bytes)
               : "memory");
}

template <int Ordinal>
__device__ __forceinline__ void tensormap_replace_element_stride(void* smem, unsigned value) {
  asm volatile("tensormap.replace.tile.element_stride.shared::cta.b1024.b32 [%0], %1, %2;"
               ::"r"(smem_addr(smem)), "n"(Ordinal), "r"(value)
               : "memory");
}

template <int Code>
__device__ __forceinline__ void tensormap_replace_elemtype(void* smem) {
  asm volatile("tensormap.replace.tile.elemtype.shared::cta.b1024.b32 [%0], %1;" ::"r"(smem_addr(smem)), "n"(Code)
               : "memory");
}

template <int Layout>
__device__ __forceinline__ void tensormap_replace_interleave_layout(void* smem) {
  asm volatile("tensormap.replace.tile.interleave_layout.shared::cta.b1024.b32 [%0], %1;" ::"r"(smem_addr(smem)),
               "n"(Layout)
               : "memory");
}

template <int Mode>
__device__ __forceinline__ void tensormap_replace_swizzle_mode(void* smem) {
  asm volatile("tensormap.replace.tile.swizzle_mode.shared::cta.b1024.b32 [%0], %1;" ::"r"(smem_addr(smem)), "n"(Mode)
               : "memory");
}

template <int Mode>
__device__ __forceinline__ void tensormap_replace_fill_mode(void* smem) {
  asm volatile("tensormap.replace.tile.fill_mode.shared::cta.b1024.b32 [%0], %1;" ::"r"(smem_addr(smem)), "n"(Mode)
               : "memory");
}

/// All 32 lanes of a warp: copies the 128-byte descriptor from shared to global
/// memory and releases it to the tensormap proxy.
__device__ __forceinline__ void tensormap_cp_fenceproxy(TensorMap* global, const void* smem) {
  asm volatile(
      "tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
      ::"l"(reinterpret_cast<unsigned long long>(global)), "r"(smem_addr(smem))
      : "memory");
}

/// Acquires a descriptor written through the generic proxy before TMA uses it.
__device__ __forceinline__ void fence_proxy_tensormap_acquire(const TensorMap* global) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(desc_addr(global)) : "memory");
}

}  // namespace tj
