// Checked kernels (Options::debug_checks, TILEJIT_DEBUG=1): a failed check prints one line and stops the kernel.
namespace tj {

/// Set by the first failed check of a launch, so that one line is printed however many threads fail.
__device__ unsigned debug_reported = 0u;
/// Set once that line is out.
__device__ unsigned debug_printed = 0u;

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Prints `fmt` (the kernel, the op's source line, the rule, the value and the limit, ending with the
/// program id) with `args` and the program's coordinates, once per launch, then traps. A thread that fails
/// while another one prints waits for that line (a second at most) before its trap, which would cut it off.
template <class... A>
__device__ __noinline__ void debug_fail(const char* fmt, A... args) {
  if (atomicExch(&debug_reported, 1u) == 0u) {
    printf(fmt, args..., blockIdx.x, blockIdx.y, blockIdx.z);
    __threadfence_system();
    atomicExch(&debug_printed, 1u);
  } else {
    const unsigned long long start = global_ns();
    while (atomicAdd(&debug_printed, 0u) == 0u && global_ns() - start < 1000000000ull) {
    }
  }
  __threadfence_system();
  __trap();
}

/// The watchdog of checked kernels: waits as mbarrier_wait_parity does, but one that lasts longer than `limit_ns`
/// (on the global timer) prints `fmt` with the barrier's index and the phase and traps, instead of hanging the launch.
__device__ __forceinline__ void mbarrier_wait_parity_watchdog(unsigned long long* bar, unsigned phase, unsigned long long limit_ns,
                                                           const char* fmt, unsigned index) {
  const unsigned long long start = global_ns();
  for (;;) {
    unsigned done;
    asm volatile(
        "{\n"
        "  .reg .pred p;\n"
        "  mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "  selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(phase)
        : "memory");
    if (done) return;
    if (global_ns() - start >= limit_ns) debug_fail(fmt, index, phase);
  }
}

}  // namespace tj
