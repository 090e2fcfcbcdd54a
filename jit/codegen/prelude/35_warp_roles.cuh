// Warp roles (a producer warpgroup and consumer warpgroups): a barrier of the consumers alone, the named barriers
// of the consumer warpgroups' turns, and registers moved between warpgroups.
namespace tj {

/// A barrier of the first `Threads` threads of the program (the consumer warps): named barrier 1, since the
/// producer warpgroup, which has left, never reaches __syncthreads' barrier 0.
template <int Threads>
__device__ __forceinline__ void consumer_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(Threads) : "memory");
}

/// Waits at named barrier `id` until `threads` threads have arrived or waited there (this warpgroup's turn, when
/// the warpgroup before it has passed it: passes::WarpgroupTurns).
__device__ __forceinline__ void named_barrier_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// Arrives at named barrier `id` without waiting (passes the turn to the warpgroup that waits there).
__device__ __forceinline__ void named_barrier_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// This warpgroup gives up registers down to `Regs` per thread (every warp of it runs this).
template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}

/// This warpgroup takes registers up to `Regs` per thread, once other warpgroups have given them up.
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}

}  // namespace tj
