// The CUDA C++ emitter's interface: generated source plus the launch plan the runtime follows.
//
// The launch plan (launch_plan.h) is the ABI between generated code and the runtime; the options
// (options.h) say what to generate for; the performance notes (performance_note.h) come back with the kernel.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tilejit/codegen/launch_plan.h"
#include "tilejit/codegen/options.h"
#include "tilejit/codegen/performance_note.h"
#include "tilejit/ir/ir.h"

namespace tilejit::codegen {

struct GeneratedKernel {
  std::string entry;   ///< extern "C" name: "tj_<kernel>_<16 hex digits of the graph hash>"
  std::string source;  ///< complete CUDA C++ translation unit (prelude included), no cuda.h needed
  /// Where the device prelude (the same text in every kernel) lies in `source`: [begin, end).
  /// The compiler hands it to NVRTC as a header, which NVRTC precompiles once per process.
  size_t prelude_begin = 0, prelude_end = 0;
  LaunchPlan plan;
  std::vector<PerformanceNote> notes;  ///< passes::performance_notes: what the user may change for speed
  /// passes::spill_remedy: what the user may change if ptxas spills registers (the runtime says it with the spill).
  std::string spill_remedy;
  /// passes::WarpRoles::spill_retry_producer_registers: the producer's setmaxnreg target to compile the kernel
  /// again with when ptxas spills (0: none).
  int spill_retry_producer_registers = 0;
};

/// Lowers a verified graph to CUDA C++. Throws UserError for programs the GPU
/// backend cannot run (naming the op's source line) and InternalError for bugs.
GeneratedKernel generate(const ir::Graph& g, const Options& options = {});

}  // namespace tilejit::codegen
