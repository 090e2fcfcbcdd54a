// Which ops exchange values between threads through the scratch arena (defined in barriers.cpp, where the
// barriers before such exchanges are planned; insert_schedule_ops asks it too, for the warpgroups' turns).
#pragma once

#include "tilejit/passes/lowering.h"

namespace tilejit::passes {

/// Whether op `id` stages an operand through the scratch arena (and so writes it, passes a barrier of the
/// threads and reads it back): a layout conversion, reshape or permute that moves data between threads from
/// registers, a reduction combining several warps, a dot on CUDA cores whose operands are in registers.
bool stages_through_scratch(const Lowered& l, NodeId id);

}  // namespace tilejit::passes
