// Compiling and launching traced kernels on the GPU (or in the interpreter when asked or when there is no GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <source_location>
#include <span>
#include <string>

#include "tilejit/codegen/codegen.h"
#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"
#include "tilejit/runtime/memory.h"

namespace tilejit {

/// Per-launch choices.
struct LaunchOptions {
  /// Caller-owned global memory for device-built descriptors (needed under CUDA
  /// graph capture, where tilejit cannot allocate). At least workspace_bytes()
  /// bytes, 128-byte aligned. nullptr: tilejit allocates stream-ordered memory.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

namespace runtime {

/// Launches the kernel for `config` over `grid` on `stream`. Tensor arguments
/// are device pointers. Arguments are checked (TMA alignment and stride rules,
/// grid limits) before anything reaches the driver; a violation is a
/// UserError. Compiles on first use for a configuration and device.
/// With TILEJIT_INTERPRET=1, or on a machine without a CUDA driver, runs the
/// interpreter instead (tensor data is copied to the host and back when it is
/// device memory).
/// UserErrors about the call (grid, arguments) name `where`, the user's call.
void launch(const KernelBase& kernel, Stream stream, dim3 grid, const Config& config,
            std::span<const KernelArg> args, const LaunchOptions& options = {},
            const std::source_location& where = std::source_location::current());

/// Compiles and loads the kernel for `config` on the current device without launching it (so
/// that a later launch, e.g. under CUDA graph capture, finds it ready). Without a GPU driver it
/// compiles for sm_90a into the disk cache, which still reports any compile error. Threads
/// warming up the same kernel and configuration compile it once.
void warmup(const KernelBase& kernel, const Config& config);

/// Like warmup(kernel, config), for the variant that a launch with `args` uses (the one that
/// matches their alignment and the divisibility of their sizes and strides by 16). The arguments
/// are checked as launch() checks them, before anything is compiled; UserErrors name `where`.
void warmup(const KernelBase& kernel, const Config& config, std::span<const KernelArg> args,
            const std::source_location& where = std::source_location::current());

/// Where the time of first launches and warm-ups went, summed over every kernel of the process
/// since it started. Launches of already loaded code add nothing.
struct CompileTimes {
  uint64_t compiles = 0;   ///< NVRTC compilations (disk-cache hits and reused loaded code do not count)
  uint64_t disk_hits = 0;  ///< binaries found in the disk cache
  double trace_ms = 0;     ///< running the kernel function to build its IR
  double codegen_ms = 0;   ///< passes and CUDA emission
  double nvrtc_ms = 0;     ///< NVRTC: front end, optimizer and ptxas
  double disk_ms = 0;      ///< disk-cache lookups and stores
  double load_ms = 0;      ///< loading the binary into the context (cuLibraryLoadData)
  double total_ms() const { return trace_ms + codegen_ms + nvrtc_ms + disk_ms + load_ms; }
};
CompileTimes compile_times();

/// compile_times().compiles: NVRTC compilations this process has run for launches and warm-ups.
uint64_t compile_count();

/// Threads one program (CUDA block) may have on every CUDA GPU.
inline constexpr int kMaxThreadsPerBlock = 1024;

/// The GPU's per-block limits applied without a GPU (by interpret()): shared memory (227 KiB on
/// sm_90) and threads, from the generated code of `config`, so that a configuration the interpreter
/// accepts also launches. UserError naming `where`. Checked once per configuration.
void check_resources(const KernelBase& kernel, const Config& config,
                     const std::source_location& where = std::source_location::current());

/// Bytes of workspace a launch over `grid` needs (0 when every descriptor is host-encoded; persistent programs,
/// Config::persistent, need this much at most).
size_t workspace_bytes(const KernelBase& kernel, dim3 grid, const Config& config);

/// The generated CUDA of the kernel for `config` (no GPU needed).
codegen::GeneratedKernel generate(const KernelBase& kernel, const Config& config);

/// Generates and compiles the kernel for `config` with NVRTC for `arch`
/// ("sm_90a" by default) without loading it; returns a one-line resource report
/// (registers, spills, shared memory, compile time). No GPU needed.
std::string compile_only(const KernelBase& kernel, const Config& config, const std::string& arch = "sm_90a");

}  // namespace runtime
}  // namespace tilejit
