// BarrierPlan: where the threads of a program meet at a CTA barrier between ops.
//
// Filled by: plan_barriers (jit/passes/barriers.cpp), the last lowering step, "plan_barriers" (lowering.h).
// Read by: describe_barriers and the emitter (emit_cuda.cpp, emit_tma.cpp).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// Where the threads of a program meet at a CTA barrier between ops (passes/barriers.cpp). Every op that
/// exchanges data between threads through the scratch arena writes it, passes a barrier and reads it
/// back (its own protocol, printed with it); what this plan decides is the barrier before such an op's
/// first write, needed when an earlier op's threads may still be reading the arena (an op before it since
/// the last such barrier, or any op of the previous iteration of an enclosing loop), and the barrier
/// before thread 0 reissues a TMA load outside a ring whose tile every thread reads, needed unless every
/// thread has already passed a barrier in this iteration of the innermost loop.
struct BarrierPlan {
  std::unordered_set<NodeId> scratch_users;  ///< the ops that stage data through the scratch arena
  std::unordered_map<NodeId, std::string> before_scratch;  ///< op -> why a barrier precedes its first write
  std::unordered_map<NodeId, std::string> before_issue;    ///< repeated DescLoad -> why a barrier precedes its issue
};

struct Lowered;

/// Plans the barriers of a lowered kernel (its layouts, shared-memory, tensor-core and pipeline plans).
BarrierPlan plan_barriers(const Lowered& l);

}  // namespace tilejit::passes
