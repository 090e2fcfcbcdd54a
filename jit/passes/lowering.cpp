// The lowering: the table of its steps in their fixed order, and the runners that walk it.

#include <algorithm>
#include <iterator>

#include "passes/overlap_products.h"
#include "passes/prefetch_loads.h"
#include "tilejit/config.h"
#include "tilejit/error.h"
#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/passes/register_budget.h"
#include "tilejit/passes/rewrites.h"
#include "tilejit/passes/schedule_ops.h"

namespace tilejit::passes {

namespace {
/// Ring sizes tried in turn when the configuration leaves num_stages to tilejit (Config::kAutoStages): three,
/// Triton's default, was the best or close to it for tilejit's GEMM tiles on an H100 (bf16 8192^3, 128 x 128
/// x 64, 8 warps: 501 / 555 / 528 / 549 TFLOP/s at 2 / 3 / 4 / 5 stages; 128 x 256 x 64: best at 3); fewer
/// when the tiles of three do not fit, one (no pipeline) as the last resort.
constexpr int kAutoStageChoices[] = {3, 2, 1};

/// Pipelines the loops, decides the warp roles and allocates shared memory: with the configuration's num_stages, or with the first
/// stage count of kAutoStageChoices whose buffers fit (a kernel without a pipelined loop takes the first).
void plan_stages(Lowered& l) {
  const auto plan = [&](int stages) {
    l.pipe = plan_loop_pipeline(l.graph, l.info, l.mma, l.tma, l.layout, l.axes, stages);
    l.roles = plan_warp_roles(l.graph, l.info, l.layout, l.tma, l.pipe);
    l.turns = plan_warpgroup_turns(l.graph, l.mma, l.pipe, l.roles);
    l.cluster = plan_cluster(l.graph, l.info, l.tma, l.pipe);
    l.smem = allocate_shared(l.graph, l.info, l.layout, l.tma, l.mma, l.pipe, l.roles, l.cluster);
  };
  if (l.graph.num_stages != Config::kAutoStages) return plan(l.graph.num_stages);
  const int last = static_cast<int>(std::size(kAutoStageChoices)) - 1;
  for (int k = 0;; ++k) {
    try {
      plan(kAutoStageChoices[k]);
      l.pipe.stages_chosen = true;
      return;
    } catch (const UserError&) {
      // Only shared memory depends on the stage count: fewer stages may fit; nothing else can change.
      if (k == last || l.pipe.loops.empty()) throw;
    }
  }
}

int threads(const Lowered& l) { return l.graph.num_warps * 32; }

using Options = codegen::Options;

/// A plan's text, or "<title>: (none)" when the plan is empty.
std::string or_none(std::string text, std::string_view title) {
  return text.empty() ? std::string(title) + ": (none)\n" : text;
}

std::string mma_plan(const Lowered& l) {
  std::string out = or_none(describe_mma(l), "matrix products");
  if (l.mma.absorbed.empty()) return out;
  std::vector<NodeId> ids(l.mma.absorbed.begin(), l.mma.absorbed.end());
  std::sort(ids.begin(), ids.end());
  out += "transposes read in place by wgmma (not emitted):";
  for (NodeId id : ids) out += " %" + std::to_string(id);
  return out + "\n";
}

std::string stage_plan(const Lowered& l) {
  std::string choices;
  for (int c : kAutoStageChoices) choices += (choices.empty() ? "" : ", ") + std::to_string(c);
  const std::string stages = std::to_string(l.pipe.stages);
  std::string out = !l.pipe.stages_chosen ? "stages: " + stages + " (num_stages)\n"
                    : l.pipe.loops.empty()
                        ? std::string("stages: auto (no pipelined loop)\n")
                        : "stages: " + stages + " (chosen: the first of " + choices + " whose buffers fit)\n";
  return out + or_none(describe_loop_pipeline(l), "software pipeline") + describe_warp_roles(l) + describe_turns(l) +
         describe_cluster(l) + describe_shared_memory(l);
}

// The table. Rewriting steps come first: the plans are keyed by the node ids of the graph they leave. The
// one exception, insert_schedule_ops, only adds nodes (no id changes) once the plans it writes down exist.
constexpr LoweringStep kSteps[] = {
    {"canonicalize", "folds casts to the same type, identity reshapes and permutes, integer constants, x + dot(a, b) into the dot", true,
     [](Lowered& l, const Options&) { l.graph = canonicalize(l.graph); }, nullptr},
    {"persistent_programs", "Config::persistent: the kernel body in a loop over the launch grid's programs", true,
     [](Lowered& l, const Options&) { l.graph = persistent_programs(l.graph); }, nullptr},
    {"hoist_invariants", "moves loop-invariant scalars and views before their loop", true,
     [](Lowered& l, const Options&) { l.graph = hoist_invariants(l.graph); }, nullptr},
    {"early_views", "moves views made after a loop from values defined before it in front of the loop", true,
     [](Lowered& l, const Options&) { l.graph = early_views(l.graph); }, nullptr},
    {"prefetch_loads", "issues the pointer loads of loops without stores or dots one iteration ahead", true,
     [](Lowered& l, const Options&) { l.graph = prefetch_loads(l.graph); }, nullptr},
    {"overlap_products",
     "issues a loop's last product (P V) in the next iteration, after its first (S), to overlap the softmax", true,
     [](Lowered& l, const Options&) { l.graph = overlap_products(l.graph); }, nullptr},
    {"eliminate_dead_code", "removes pure nodes whose value is never used", true,
     [](Lowered& l, const Options&) { l.graph = eliminate_dead_code(l.graph); }, nullptr},
    {"plan_tma",
     "decides where each TMA descriptor lives (host, array, device) and records it in the TMA ops", true,
     [](Lowered& l, const Options&) { l.graph = plan_tma(l.graph, l.tma); }, describe_descriptors},
    {"insert_layout_conversions",
     "inserts a layout conversion wherever a producer's and a consumer's layouts differ", true,
     [](Lowered& l, const Options&) { l.graph = insert_layout_conversions(l.graph, threads(l)); }, nullptr},
    {"analyze", "program order, users and the enclosing loop of every node", false,
     [](Lowered& l, const Options&) { l.info = analyze(l.graph); }, describe_graph_info},
    {"plan_mma", "decides which dots run on tensor cores (wgmma) and how, and why the others do not", false,
     [](Lowered& l, const Options&) { l.mma = plan_mma(l.graph, l.info, l.graph.num_warps); }, mma_plan},
    {"assign_layout", "chooses every value's register layout", false,
     [](Lowered& l, const Options&) { l.layout = assign_layout(l.graph, l.info, threads(l)); },
     describe_value_layouts},
    {"collect_descriptors",
     "the final descriptors: swizzles of wgmma operands and stored tiles, boxes split in pieces", false,
     [](Lowered& l, const Options&) { l.tma = collect_descriptors(l.graph, l.info, &l.mma, &l.layout); },
     describe_descriptors},
    {"analyze_axes", "contiguity, divisibility and constancy of integer values (vector widths)", false,
     [](Lowered& l, const Options&) { l.axes = analyze_axes(l.graph, l.info, l.spec); }, describe_axes},
    {"plan_stages",
     "software-pipelines the K loops, decides the warp roles, the warpgroups' turns and the loads a cluster "
     "multicasts, and places every shared-memory buffer (the stage count that fits)",
     false, [](Lowered& l, const Options&) { plan_stages(l); }, stage_plan},
    {"check_register_budget", "refuses a value that needs more registers per thread than kMaxValueRegisters",
     false, [](Lowered& l, const Options&) { check_register_budget(l.graph, l.info, l.layout, l.smem); },
     describe_register_budget},
    {"plan_arguments", "the kernel's parameters and the descriptors the runtime encodes", false,
     [](Lowered& l, const Options& o) {
       l.args = plan_arguments(l.graph, l.tma, l.smem, l.roles.on() ? l.roles.threads() : threads(l), o.debug_checks);
     },
     describe_arguments},
    {"insert_schedule_ops",
     "writes the schedule into the graph: TMA issues, pipeline stages, waits, barriers, reuse fences", true,
     [](Lowered& l, const Options&) { insert_schedule_ops(l); }, nullptr, true},
    {"plan_barriers", "the CTA barriers before scratch-arena writes and before reissued TMA loads", false,
     [](Lowered& l, const Options&) { l.barriers = plan_barriers(l); }, describe_barriers},
};

/// Runs the first `count` steps of kSteps on `g`.
Lowered run_steps(const ir::Graph& g, const Options& options, const DumpHook& hook, size_t count) {
  const DumpHook& dump = hook ? hook : options.dump_ir;
  ir::verify(g);
  if (dump) dump("input", g);
  Lowered l;
  l.graph = g;
  l.spec = options.spec;
  for (size_t k = 0; k < count; ++k) {
    const LoweringStep& step = kSteps[k];
    step.run(l, options);
    if (step.rewrites_graph) {
      ir::verify(l.graph);
      if (dump) dump(step.name, l.graph);
    }
    if (step.plan && options.dump_plan) options.dump_plan(step.name, step.plan(l));
  }
  return l;
}
}  // namespace

std::span<const LoweringStep> lowering_steps() { return kSteps; }

Lowered lower(const ir::Graph& g, const codegen::Options& options, const DumpHook& dump) {
  return run_steps(g, options, dump, std::size(kSteps));
}

Lowered lower_until(const ir::Graph& g, const codegen::Options& options, std::string_view last_step,
                    const DumpHook& dump, std::source_location where) {
  const auto it = std::find_if(std::begin(kSteps), std::end(kSteps),
                               [&](const LoweringStep& s) { return s.name == last_step; });
  if (it == std::end(kSteps)) {
    std::string names;
    for (const LoweringStep& s : kSteps) names += (names.empty() ? "" : ", ") + std::string(s.name);
    throw UserError("lower_until: the last step must name a lowering step",
                    "'" + std::string(last_step) + "'", "one of " + names, where);
  }
  return run_steps(g, options, dump, static_cast<size_t>(it - std::begin(kSteps)) + 1);
}

}  // namespace tilejit::passes
