// Checked kernels (Options::debug_checks, TILEJIT_DEBUG=1): a failed check prints one line and stops the kernel.
namespace tj {

/// Set by the first failed check of a launch, so that one line is printed however many threads fail.
__device__ unsigned debug_reported = 0u;

/// Prints `fmt` (the kernel, the op's source line, the rule, the value and the limit, ending with the
/// program id) with `args` and the program's coordinates, once per launch, then traps.
template <class... A>
__device__ __noinline__ void debug_fail(const char* fmt, A... args) {
  if (atomicExch(&debug_reported, 1u) == 0u) printf(fmt, args..., blockIdx.x, blockIdx.y, blockIdx.z);
  __threadfence_system();
  __trap();
}

}  // namespace tj
