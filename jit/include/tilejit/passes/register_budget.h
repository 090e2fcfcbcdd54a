// The register budget: how many registers one block value may take per thread, and the check that refuses more.
//
// Run by: check_register_budget (jit/passes/value_layouts.cpp), the lowering step "check_register_budget" (lowering.h).
// Read by: describe_register_budget (describe.h).
#pragma once

#include <cstdint>

#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// 32-bit registers one block value may take per thread: half of the 255 a thread has. A larger
/// value would spill and run at a small fraction of its speed.
inline constexpr int64_t kMaxValueRegisters = 128;

/// Refuses (UserError at the value's source line, naming the value, the registers it needs, the
/// limit and the warp count that would fit) a value held in registers that exceeds kMaxValueRegisters.
/// TMA tiles read only in place in shared memory are exempt.
void check_register_budget(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const SmemPlan& smem);

}  // namespace tilejit::passes
