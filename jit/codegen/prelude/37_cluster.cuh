// Clusters: the program's rank, the cluster barrier, and the other program's shared memory (an address mapped
// into it, a store, an mbarrier arrival), for the multicast loads of a clustered kernel (passes::ClusterPlan).
namespace tj {

/// This program's rank in its cluster.
__device__ __forceinline__ unsigned cluster_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

/// A barrier of every thread of every program of the cluster: what the threads wrote before it (an mbarrier
/// initialised) is visible to the cluster's threads after it.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/// The shared::cluster address of `p` (an address of this program's shared memory) in program `rank`'s.
__device__ __forceinline__ unsigned cluster_address(const void* p, unsigned rank) {
  unsigned a;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(smem_addr(p)), "r"(rank));
  return a;
}

/// Arrives on the barrier at `bar`'s offset in program `rank`'s shared memory, releasing this thread's
/// earlier writes to the cluster.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned long long* bar, unsigned rank) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(cluster_address(bar, rank)) : "memory");
}

/// Arrives on the barrier at `bar`'s offset in program `rank`'s shared memory, with the default (CTA-scope)
/// release: what a stage's readers did is ordered by their own waits (wgmma, CTA barriers) before this thread
/// arrives, and the arrival only says the stage is free. The .release.cluster form of mbarrier_arrive_cluster
/// compiles to a GPU-scope memory barrier (MEMBAR.ALL.GPU) that waits for this thread's outstanding memory
/// operations: once per stage refill it halved a clustered GEMM's speed on an H100.
__device__ __forceinline__ void mbarrier_arrive_remote(unsigned long long* bar, unsigned rank) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_address(bar, rank)) : "memory");
}

/// Writes `v` at `p`'s offset in program `rank`'s shared memory.
__device__ __forceinline__ void store_cluster(long long* p, unsigned rank, long long v) {
  asm volatile("st.shared::cluster.b64 [%0], %1;" ::"r"(cluster_address(p, rank)), "l"(v) : "memory");
}

/// Orders this thread's memory accesses with the cluster's (after a wait on a barrier other programs arrive on).
__device__ __forceinline__ void fence_cluster() { asm volatile("fence.acq_rel.cluster;" ::: "memory"); }

}  // namespace tj
