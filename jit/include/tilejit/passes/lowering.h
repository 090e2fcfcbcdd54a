// The lowering: the table of steps between a traced graph and the CUDA emitter, the runners that walk it, and
// Lowered, everything the steps fill and the emitter reads.
//
// Every pass is a pure function of its inputs. Rewriting passes return a new graph (the input is never
// modified); analysis passes return a plan keyed by the node ids of the final graph. The lowering (`lower`)
// runs them as the steps of one table, `lowering_steps()`, in its order (docs/schedules.md lists it; a test
// keeps that list equal to the table); TILEJIT_DUMP=ir prints the graph after every rewriting step and the
// plan after every step that makes one. jit/passes/lowering.cpp defines them.
#pragma once

#include <functional>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/codegen/options.h"
#include "tilejit/passes/argument_plan.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/barrier_plan.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/passes/warp_roles.h"
#include "tilejit/passes/warpgroup_turns.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using DumpHook = std::function<void(std::string_view pass, const ir::Graph&)>;

/// Everything the emitter needs.
struct Lowered {
  ir::Graph graph;
  GraphInfo info;
  TmaPlan tma;
  MmaPlan mma;
  LoopPipelinePlan pipe;
  ValueLayouts layout;
  WarpRoles roles;
  WarpgroupTurns turns;
  ClusterPlan cluster;
  SmemPlan smem;
  ArgumentPlan args;
  std::vector<AxisInfo> axes;
  BarrierPlan barriers;
  codegen::Specialization spec;
};

/// One step of the lowering. The steps run in the order of `lowering_steps()`, each on the `Lowered` the
/// previous ones filled: rewriting steps replace its graph, the others fill one plan.
struct LoweringStep {
  std::string_view name;  ///< "canonicalize", ..., "plan_barriers"
  std::string_view what;  ///< what it does, one line
  bool rewrites_graph;    ///< it replaces `Lowered::graph` (the dump then prints the new graph)
  void (*run)(Lowered& l, const codegen::Options& options);
  /// The plan the step made, in readable text (TILEJIT_DUMP=ir prints it after the step); nullptr when it
  /// only rewrites the graph.
  std::string (*plan)(const Lowered& l);
  /// It only adds nodes to the graph, so that the ids the plans are keyed by stay valid: such a step may
  /// follow the planning steps (insert_schedule_ops); every other rewriting step precedes them.
  bool adds_only = false;
};

/// Every step of the lowering, in the order `lower` runs them.
std::span<const LoweringStep> lowering_steps();

/// Runs every step in order on a copy of `g`; `dump` (optional, else `options.dump_ir`) sees the graph as given
/// and after each rewriting step, `options.dump_plan` (optional) the plan of each step that makes one.
Lowered lower(const ir::Graph& g, const codegen::Options& options, const DumpHook& dump = {});

/// Runs the steps up to and including `last_step` (a name of lowering_steps()) and returns the partial
/// result: the plans of later steps are left empty. For tests of one pass on a graph lowered that far.
/// Throws UserError (at `where`) naming `last_step` and the valid names when no step has that name.
Lowered lower_until(const ir::Graph& g, const codegen::Options& options, std::string_view last_step,
                    const DumpHook& dump = {}, std::source_location where = std::source_location::current());

}  // namespace tilejit::passes
