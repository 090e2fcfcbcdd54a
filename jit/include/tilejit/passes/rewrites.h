// The graph-rewriting passes that run before any plan is made: each returns a new graph (the input is never
// modified), and the lowering (lowering.h) runs them as its first steps.
//
// canonicalize.cpp, contract_fma.cpp, persistent_programs.cpp, hoist_invariants.cpp, early_views.cpp and dead_code.cpp
// define them; prefetch_loads
// (jit/passes/prefetch_loads.h) and insert_layout_conversions (value_layouts.h) are rewriting steps too.
#pragma once

#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// Local simplifications: casts to the same type, identity reshapes and
/// permutations, reshape/broadcast chains, integer arithmetic on constants, and
/// x + dot(a, b, zeros) as dot(a, b, x) where the product has no other user.
ir::Graph canonicalize(const ir::Graph& g);

/// `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` of f32 / f64 blocks as one fma (rounded once), where
/// the product has no other use and is computed in the sum's region (Config::fp_contract). Not a lowering
/// step: it changes the kernel's results, so KernelBase::graph applies it to the traced graph, which the
/// interpreter runs too.
ir::Graph contract_fma(const ir::Graph& g);

/// Config::persistent: the kernel body in a loop over the launch grid's programs, `for (t = program_id(0); t <
/// tiles; t += num_programs(0))`, which the launch runs on as many programs as the GPU holds at once
/// (LaunchPlan::persistent). Inside it program_id(a) is the grid program t stands for (in the launch order, or in
/// Triton's grouped order with Config::tile_group) and num_programs(a) the grid's extent (TileGrid). Kernel
/// parameters stay outside the loop; every other node moves into it. The graph is returned unchanged when the
/// configuration does not ask for it.
ir::Graph persistent_programs(const ir::Graph& g);

/// Moves pure scalar nodes (and tensor views) whose operands are all defined
/// outside a loop to just before the loop, so that a device-built descriptor
/// of a loop-invariant view is built once.
ir::Graph hoist_invariants(const ir::Graph& g);

/// Moves a tensor view made after a loop, outside every loop, in front of the first loop of its region that
/// starts after the values it is computed from, with the scalars of its region it needs: its device-built
/// descriptor is then built before the loop, not between the loop's products and their epilogue.
ir::Graph early_views(const ir::Graph& g);

/// Removes pure nodes whose value is never used.
ir::Graph eliminate_dead_code(const ir::Graph& g);

}  // namespace tilejit::passes
