// A performance note: one finding about a kernel's speed that the user may act on.
//
// passes::performance_notes makes them (passes/describe.h); codegen::generate returns them with the kernel
// and the runtime logs them. The type depends on nothing, so that both the passes and the emitter can include it.
#pragma once

#include <string>

namespace tilejit::codegen {

/// Something about a kernel's speed the user may want to change, one sentence naming the source line. A
/// warning (a dot left on CUDA cores, a loop with products left unpipelined) costs a large factor and is
/// logged at warn level; the rest (e.g. an operand copied K-major) at info level.
struct PerformanceNote {
  bool warning = false;
  std::string text;
};

}  // namespace tilejit::codegen
