// What the autotuner needs from the launcher beyond the public API: compile targets and per-variant resources
// (private to runtime/).
#pragma once

#include <span>
#include <string>

#include "tilejit/arg_rules.h"
#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// Bytes from a tensor's base to the end of its last element.
int64_t extent_bytes(const TensorArg& t);

/// Where launches from the calling thread run and what the GPU allows a program.
struct DeviceTarget {
  bool gpu = false;  ///< kernels run on a GPU (else in the interpreter; code is compiled for sm_90a)
  std::string arch = "sm_90a";
  void* context = nullptr;  ///< the current CUcontext (gpu only)
  int device = 0;           ///< its CUdevice
  std::string name;         ///< the GPU's name; empty without one
  int sm_count = 0;
  // Per-program limits: the GPU's, or those of every sm_90 GPU when there is none.
  int max_threads = 1024;
  int max_registers = 65536;        ///< 32-bit registers per program
  int max_shared = 232448;          ///< bytes of shared memory per program, opted in (227 KiB)
  int l2_bytes = 50 * 1024 * 1024;  ///< L2 cache size
};

/// The architecture to compile for on the current context's device ("sm_90a"); a UserError before Hopper.
std::string arch_of_current_device();

/// The target of the current context (made current if none is), or the sm_90a fallback without a GPU
/// or with TILEJIT_INTERPRET=1.
DeviceTarget current_target();

/// What one compiled variant asks of the GPU per program.
struct VariantResources {
  int threads = 0;         ///< num_warps * 32
  int shared_dynamic = 0;  ///< bytes of dynamic shared memory (the launch plan's)
  int shared_static = -1;  ///< bytes of static shared memory in the binary; -1 when unknown
  int registers = -1;      ///< per thread; -1 when unknown
  int spill_bytes = -1;    ///< local memory per thread (spills); -1 when unknown
  int max_threads =
      -1;  ///< the most threads per program the loaded function can run (gpu only); -1 when unknown
};

/// Traces, generates and compiles the variant of `kernel` for `config` that a launch with `args`
/// would use, into the caches (on a GPU target it is also loaded, so the next launch only binds it),
/// without launching anything. Makes the target's context current on the calling thread (pool
/// threads have none). Thread-safe; different configurations compile concurrently. Throws
/// what tracing (UserError) and compiling (CompileError, CudaError) throw; a UserError about the
/// arguments names `at`, the user's call (launch, tune) that needed the variant.
VariantResources compile_variant(const KernelBase& kernel, const Config& config,
                                 std::span<const KernelArg> args, const DeviceTarget& target,
                                 const args::CallSite& at);

/// Why a compiled variant cannot run on `target` (too many threads, shared memory or registers per
/// program), naming the need and the limit; empty when it can.
std::string resource_problem(const VariantResources& resources, const DeviceTarget& target);

}  // namespace tilejit::detail
