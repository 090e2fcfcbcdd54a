// The CPU interpreter: runs a traced graph over a grid on host memory, with exact TMA semantics.
#pragma once

#include <span>

#include "tilejit/arg_rules.h"
#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::interp {

/// Runs every program of `grid` in order (x fastest, then y, then z) on the host
/// buffers named by `args` (one per graph parameter). Deterministic. Errors in
/// the program (out-of-bounds unmasked access, a TMA
/// descriptor rule broken by the runtime sizes) raise UserError naming the
/// op's source line and the program id. The grid and the arguments are checked before any
/// program runs (UserErrors located at `call_site`, or at the kernel's definition when null), and
/// a UserError raised by a program restores the tensors the kernel writes, so a rejected run
/// leaves them as they were. `tile_grid` is what TileGrid nodes read (a graph lowered for persistent programs:
/// passes::persistent_programs); `grid` when null.
void run(const ir::Graph& g, dim3 grid, std::span<const KernelArg> args, const args::CallSite* call_site = nullptr,
         const dim3* tile_grid = nullptr);

}  // namespace tilejit::interp
