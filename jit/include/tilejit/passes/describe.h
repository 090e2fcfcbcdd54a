// The plans of a lowered kernel in readable text, and the performance notes drawn from them.
//
// Defined in jit/passes/describe.cpp (what the generated header prints), describe_plans.cpp (what only
// TILEJIT_DUMP=ir prints) and performance_notes.cpp. Read by: the lowering's dump (LoweringStep::plan), the
// emitter's header comment, and codegen::generate, which returns the performance notes with the kernel.
#pragma once

#include <string>
#include <vector>

#include "tilejit/codegen/performance_note.h"

namespace tilejit::passes {

struct Lowered;

/// The descriptors (TmaPlan), one line each: placement, source, box, element strides, fill, swizzle.
std::string describe_descriptors(const Lowered& l);
/// Each dot: its wgmma instruction, tiling and operands (major-ness, swizzle, K-major copies), or why it
/// stays on CUDA cores. Empty when the kernel has no dot.
std::string describe_mma(const Lowered& l);
/// The pipelined loops (stages, loads, products in flight, loads issued before them), the loops with
/// products left unpipelined, with the reason, and the pointer loads issued one iteration ahead
/// (prefetch_loads). Empty when there are none.
std::string describe_loop_pipeline(const Lowered& l);
/// The warp roles (WarpRoles): threads, registers and barriers of the producer and the consumers, or why
/// warp_specialize was not applied. Empty when the configuration does not ask for roles.
std::string describe_warp_roles(const Lowered& l);
/// The consumer warpgroups' turns (WarpgroupTurns): the loops, the warpgroups and their named barriers, or why
/// pingpong was not applied. Empty when the warpgroups take no turns and none were asked for.
std::string describe_turns(const Lowered& l);
/// The cluster (ClusterPlan): its shape, the loads that may be multicast with their issuing program and the
/// values the programs compare, or why none may be. Empty when the kernel is not clustered.
std::string describe_cluster(const Lowered& l);
/// The shared-memory map: tile buffers with their offsets and reuse, staging, scratch, mbarriers.
std::string describe_shared_memory(const Lowered& l);
/// The distinct register layouts, each with the values that have it.
std::string describe_register_layouts(const Lowered& l);
/// Human-readable plan, as the generated header prints it: descriptors, matrix products, pipelines,
/// the shared-memory map and the register layouts.
std::string describe(const Lowered& l);

/// Program order and loops (GraphInfo): how many nodes are reachable, each loop with its body's size.
std::string describe_graph_info(const Lowered& l);
/// Each value with its dtype, shape and register layout (ValueLayouts), the values every thread holds whole
/// on one line.
std::string describe_value_layouts(const Lowered& l);
/// The values whose contiguity, divisibility or constancy (AxisInfo) is not the default of 1.
std::string describe_axes(const Lowered& l);
/// The value that takes the most registers per thread, against kMaxValueRegisters.
std::string describe_register_budget(const Lowered& l);
/// The kernel parameters (ArgumentPlan), one line per slot.
std::string describe_arguments(const Lowered& l);
/// The barriers between ops (BarrierPlan): the scratch-arena users and each planned barrier with why.
std::string describe_barriers(const Lowered& l);

/// What the user may want to change for speed, one sentence each, naming the source line: warnings for a
/// dot left on CUDA cores and for a loop with tensor-core dots left unpipelined (and why), notes for an
/// operand copied K-major. The runtime logs them (warn / info) when it generates the kernel.
std::vector<codegen::PerformanceNote> performance_notes(const Lowered& l);
/// What keeps a kernel in registers if ptxas spills (known only after compiling, so the runtime adds it to its
/// warning): more warps or smaller blocks, and where WarpRoles::spill_retry_producer_registers names a leaner
/// producer, Config::producer_registers with it (which the runtime tries by itself first).
std::string spill_remedy(const Lowered& l);

}  // namespace tilejit::passes
