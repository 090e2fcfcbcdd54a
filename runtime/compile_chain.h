// The compile chain of the launcher, from a kernel object to loaded code: trace -> generate (with the
// TILEJIT_DUMP dumps and the plan's log lines) -> disk cache or NVRTC -> library load, each step timed for
// runtime::compile_times() (private to runtime/).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "driver_api.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/config.h"
#include "tilejit/ir/ir.h"
#include "tilejit/kernel_base.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/disk_cache.h"

namespace tilejit::detail {

/// A loaded CUlibrary, shared by every kernel object whose generated source is identical.
struct Library {
  CUlibrary lib = nullptr;
  CUkernel kernel = nullptr;
  ~Library() = default;  // libraries live until process exit: the driver may be gone at teardown
};

/// NVRTC options from the knobs; a failed compile leaves its source in TILEJIT_DUMP_DIR when set.
CompileOptions compile_options(const std::string& arch);

/// Code generation options from the knobs (line info, debug checks, watchdog).
codegen::Options codegen_options();

/// Generates the CUDA of `g` with the knobs' options, dumping the IR, plans and CUDA as TILEJIT_DUMP asks
/// and logging the launch plan and the performance notes.
codegen::GeneratedKernel generate_for(const ir::Graph& g, const codegen::Specialization& spec = {});

/// The graph of `k` for `config` (timed as tracing).
std::shared_ptr<const ir::Graph> traced(const KernelBase& k, const Config& config);

/// generate_for(), timed as code generation.
codegen::GeneratedKernel generated(const ir::Graph& g, const codegen::Specialization& spec = {});

/// The binary of generated kernel `gen` for `arch`: from the disk cache when it has it, else from
/// NVRTC (and then stored on disk). A new process finds yesterday's binaries instead of compiling.
CacheEntry binary_for(const KernelBase& k, const codegen::GeneratedKernel& gen, const std::string& arch);

/// The integer on the line "<name>=<value>" of a cache entry's metadata; -1 when absent.
int metadata_int(const std::string& metadata, std::string_view name);

/// The library of `gen` for `arch` loaded into the current context, from the process-wide cache keyed by
/// (arch, source), else from `binary` (when given: variant_for's) or compiled (binary_for), and loaded.
std::shared_ptr<Library> load_library(const KernelBase& k, const codegen::GeneratedKernel& gen, const std::string& arch,
                                      std::optional<CacheEntry> binary = std::nullopt);

/// Whether the library of `source` for `arch` is loaded (in the process-wide cache).
bool library_loaded(const std::string& arch, const std::string& source);

/// A generated kernel and, unless its library is loaded already, its binary.
struct Variant {
  codegen::GeneratedKernel gen;
  std::optional<CacheEntry> binary;
};

/// The kernel of `g` for `spec` that is loaded for `arch`: the generated kernel (generated()) and its binary
/// (binary_for()), unless ptxas spilled its registers and the generated kernel names a leaner producer
/// warpgroup (GeneratedKernel::spill_retry_producer_registers): then the kernel is generated and compiled again
/// with that producer, and the binary that spills fewer bytes is kept (logged; a process remembers the choice per
/// source). Warns when the kept binary spills, with the generated kernel's remedy.
Variant variant_for(const KernelBase& k, const ir::Graph& g, const codegen::Specialization& spec, const std::string& arch);

/// A configuration value that no Meta parameter reads is most likely a misspelt name: warned once
/// per compiled or interpreted configuration (a grid function may read a value the kernel does not).
void warn_unused_config_values(const KernelBase& k, const ir::Graph& g, const Config& config);

}  // namespace tilejit::detail
