// NVRTC compilation of generated kernels: options, the cubin (or PTX), the log and ptxas's resource report.
#pragma once

#include <string>
#include <vector>

#include "tilejit/codegen/codegen.h"

namespace tilejit {

struct CompileOptions {
  /// Target: "sm_90a" (default) produces a cubin. An architecture NVRTC cannot
  /// build a cubin for is compiled to PTX for the matching compute_XX instead.
  std::string arch = "sm_90a";
  bool line_info = false;             ///< -lineinfo (profilers map SASS to the generated source)
  /// Hand the device prelude to NVRTC as a header and let NVRTC precompile it (-pch): the first
  /// compile in a process creates the precompiled header, later ones skip parsing the prelude
  /// and NVRTC's built-in declarations (about a quarter of a small kernel's compile time). The
  /// binary is the same either way. The header lives in precompiled_header_folder().
  bool precompiled_prelude = true;
  std::vector<std::string> extra;     ///< further NVRTC options, passed last
  /// Where the source is written when compilation fails; empty: a directory under the system temp dir.
  std::string dump_dir;
};

struct CompiledBinary {
  std::string arch;            ///< what was compiled for, e.g. "sm_90a" or "compute_100"
  std::vector<char> cubin;     ///< empty when only PTX was produced
  std::string ptx_or_empty;    ///< the PTX to load when no cubin could be built for `arch`, else empty
  std::string ptx;             ///< the PTX NVRTC produced (also next to a cubin; for TILEJIT_DUMP=ptx)
  std::string log;             ///< NVRTC's log (including ptxas --verbose)
  int registers = -1;          ///< per thread, from ptxas; -1 when not reported
  int spill_stores = -1;       ///< bytes
  int spill_loads = -1;        ///< bytes
  int shared_static = -1;      ///< bytes of static shared memory (the dynamic size is in the launch plan)
  /// ptxas serialized the kernel's wgmma instructions (its info C7515: something other than a wgmma
  /// writes an accumulator while a wgmma group is in flight), which costs most of their overlap.
  bool wgmma_serialized = false;
  enum class Pch { none, created, used };
  Pch pch = Pch::none;         ///< what NVRTC did with the precompiled prelude
  double compile_ms = 0;
};

/// This process's folder for NVRTC's precompiled header: $TMPDIR/tilejit-pch-<pid>-XXXXXX, made at
/// the first compile (which also removes the folders of processes that are gone, killed ones
/// included) and removed at exit. Empty when it could not be made; NVRTC then uses its own
/// default, $TMPDIR/__nvrtc_auto_pch_<pid>_<n>, which a killed process leaves behind.
std::string precompiled_header_folder();

/// What NVRTC is asked for: the architecture actually compiled for (`options.arch`, or compute_NN
/// when NVRTC cannot build a cubin for it) and every NVRTC option, in order, except --pch-dir (where
/// the precompiled header lives, which changes no binary). The compile cache's key holds these
/// options, so whatever changes them changes the key.
struct NvrtcInvocation {
  std::string arch;
  bool cubin = true;  ///< false: PTX only
  std::vector<std::string> options;
  std::string joined() const;  ///< the options separated by spaces
};
NvrtcInvocation nvrtc_invocation(const CompileOptions& options);

/// The name of the header holding the device prelude in what NVRTC compiles (and in the dumped
/// source of a failed compile, which is written next to it).
inline constexpr const char* kPreludeHeader = "tilejit_prelude.cuh";

/// Compiles a generated kernel with NVRTC (the options of nvrtc_invocation: -std=c++17, --minimal,
/// --ptxas-options=--verbose, ...). NVRTC sees `kernel.source` with its prelude moved into the
/// header kPreludeHeader (same text), so its line numbers are those of the dumped source.
/// Throws CompileError(kernel_name, log, path of the dumped source) when NVRTC
/// rejects the program, CudaError when NVRTC itself fails. Thread-safe.
CompiledBinary compile_cuda(const codegen::GeneratedKernel& kernel, const std::string& kernel_name,
                            const CompileOptions& options = {});

/// The ptxas resource lines of an NVRTC log, parsed into `out` (registers, spills, shared memory).
void parse_ptxas_report(const std::string& log, CompiledBinary& out);

}  // namespace tilejit
