// The CPU interpreter: runs a traced graph over a grid on host memory, with exact TMA semantics.
#pragma once

#include <span>

#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::interp {

/// Runs every program of `grid` in order (x fastest, then y, then z) on the host
/// buffers named by `args` (one per graph parameter). Deterministic. Errors in
/// the program (out-of-bounds unmasked access, a TMA
/// descriptor rule broken by the runtime sizes) raise UserError naming the
/// op's source line and the program id.
void run(const ir::Graph& g, dim3 grid, std::span<const KernelArg> args);

}  // namespace tilejit::interp
