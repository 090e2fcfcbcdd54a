// The interpreter fallback of launch(): where TILEJIT_INTERPRET=1 or no CUDA driver is present, a launch
// runs the kernel's IR in the CPU interpreter (private to runtime/).
#pragma once

#include <span>

#include "tilejit/arg_rules.h"
#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"
#include "tilejit/runtime/memory.h"

namespace tilejit::detail {

/// Runs the interpreter on launch arguments, staging device memory through the host (and back).
void interpret_launch(const KernelBase& k, Stream stream, dim3 grid, const Config& config, std::span<const KernelArg> args,
                      const args::CallSite& at);

}  // namespace tilejit::detail
