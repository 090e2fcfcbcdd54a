// TMA bulk tensor copies: loads completing on an mbarrier, stores and reductions in bulk groups, fences, prefetch.
//
// Coordinates are passed innermost first, as the hardware wants (c0 is the
// contiguous dimension).
namespace tj {

__device__ __forceinline__ void tma_load_1d(void* dst, const TensorMap* desc, unsigned long long* bar, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3}], [%2];"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "r"(c0)
      : "memory");
}

__device__ __forceinline__ void tma_store_1d(const TensorMap* desc, const void* src, int c0) {
  asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.tile.bulk_group [%0, {%2}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_add_1d(const TensorMap* desc, const void* src, int c0) {
  asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%0, {%2}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_min_1d(const TensorMap* desc, const void* src, int c0) {
  asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta.min.tile.bulk_group [%0, {%2}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_max_1d(const TensorMap* desc, const void* src, int c0) {
  asm volatile("cp.reduce.async.bulk.tensor.1d.global.shared::cta.max.tile.bulk_group [%0, {%2}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0)
               : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* dst, const TensorMap* desc, unsigned long long* bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_store_2d(const TensorMap* desc, const void* src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_add_2d(const TensorMap* desc, const void* src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_min_2d(const TensorMap* desc, const void* src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.min.tile.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_max_2d(const TensorMap* desc, const void* src, int c0, int c1) {
  asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.max.tile.bulk_group [%0, {%2, %3}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_load_3d(void* dst, const TensorMap* desc, unsigned long long* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void tma_store_3d(const TensorMap* desc, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_add_3d(const TensorMap* desc, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_min_3d(const TensorMap* desc, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.min.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_max_3d(const TensorMap* desc, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.max.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void tma_load_4d(void* dst, const TensorMap* desc, unsigned long long* bar, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], [%2];"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void tma_store_4d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_add_4d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_min_4d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.min.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_max_4d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.max.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

__device__ __forceinline__ void tma_load_5d(void* dst, const TensorMap* desc, unsigned long long* bar, int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

__device__ __forceinline__ void tma_store_5d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_add_5d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_min_5d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.min.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

__device__ __forceinline__ void tma_reduce_max_5d(const TensorMap* desc, const void* src, int c0, int c1, int c2, int c3, int c4) {
  asm volatile("cp.reduce.async.bulk.tensor.5d.global.shared::cta.max.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
               ::"l"(desc_addr(desc)), "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
               : "memory");
}

// Multicast loads (clusters): the tile lands at `dst`'s offset in the shared memory of every program of the
// cluster whose bit is set in `ranks`, each completing on the mbarrier at `bar`'s offset in its own.

__device__ __forceinline__ void tma_load_1d_multicast(void* dst, const TensorMap* desc, unsigned long long* bar, unsigned short ranks,
                                                     int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4}], [%2], %3;"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "h"(ranks), "r"(c0)
      : "memory");
}

__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const TensorMap* desc, unsigned long long* bar, unsigned short ranks,
                                                     int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "h"(ranks), "r"(c0), "r"(c1)
      : "memory");
}

__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TensorMap* desc, unsigned long long* bar, unsigned short ranks,
                                                     int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "h"(ranks), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

__device__ __forceinline__ void tma_load_4d_multicast(void* dst, const TensorMap* desc, unsigned long long* bar, unsigned short ranks,
                                                     int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7}], [%2], %3;"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "h"(ranks), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

__device__ __forceinline__ void tma_load_5d_multicast(void* dst, const TensorMap* desc, unsigned long long* bar, unsigned short ranks,
                                                     int c0, int c1, int c2, int c3, int c4) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;"
      ::"r"(smem_addr(dst)), "l"(desc_addr(desc)), "r"(smem_addr(bar)), "h"(ranks), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
      : "memory");
}

/// Closes the bulk group of the stores issued so far by this thread.
__device__ __forceinline__ void bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

/// Waits until at most N bulk groups of this thread still read their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

/// Waits until at most N bulk groups of this thread are incomplete (writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

/// Orders this thread's generic-proxy shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/// Brings a descriptor into the descriptor cache (param, const or global address).
__device__ __forceinline__ void prefetch_tensormap(const TensorMap* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(desc_addr(desc)) : "memory");
}

/// Brings the 128 bytes of a descriptor in global memory into L2 with a generic prefetch (not the
/// descriptor cache): the alternative prefetch.tensormap is measured against (docs/prefetch.md).
__device__ __forceinline__ void prefetch_l2(const TensorMap* desc) {
  asm volatile("prefetch.L2 [%0];" ::"l"(desc_addr(desc)) : "memory");
}

}  // namespace tj
