// Every header of the lowering passes, for code that wants them all: each plan has its own header next to this
// one (graph_info.h, mma_plan.h, tma_plan.h, value_layouts.h, axis_info.h, loop_pipeline.h, warp_roles.h,
// smem_plan.h, register_budget.h, barrier_plan.h, argument_plan.h), as have the rewriting passes (rewrites.h),
// the schedule ops (schedule_ops.h), the lowering that runs them all (lowering.h) and the plans in readable
// text (describe.h). Code in this repository includes the headers it uses.
#pragma once

#include "tilejit/passes/argument_plan.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/barrier_plan.h"
#include "tilejit/passes/describe.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/register_budget.h"
#include "tilejit/passes/rewrites.h"
#include "tilejit/passes/schedule_ops.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/passes/warp_roles.h"
