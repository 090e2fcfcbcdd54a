// Unit tests of the lowering's step table: lower_until stops after the named step (each plan is filled by its
// step and not before), an unknown name is a UserError listing the steps, every plan is dumped after its
// step, and docs/schedules.md lists the steps as the table has them.
#include <doctest/doctest.h>
#include <tilejit/tilejit.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/passes/register_budget.h"
#include "tilejit/passes/rewrites.h"
#include "tilejit/passes/schedule_ops.h"

using namespace tilejit::dsl;
using tilejit::Config;
namespace passes = tilejit::passes;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// A GEMM K loop (tensor cores, a pipelined ring) whose accumulator is summed over its rows (the warps'
/// partial sums meet in the scratch arena), so that every step has a plan to make.
std::shared_ptr<const tilejit::ir::Graph> gemm_graph() {
  static auto k =
      tilejit::kernel("steps", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 1> c, Scalar<i32> K) {
        auto acc = for_range(0, K, 32, zeros<f32>({64, 64}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          auto ta = descriptor_load(a, {0, k}, {64, 32});
          auto tb = descriptor_load(b, {k, 0}, {32, 64});
          return dot(ta, tb, acc);
        });
        descriptor_store(c, {0}, sum(acc, 0));
      });
  return k.trace(Config{}.num_warps(4).num_stages(2));
}

/// Each plan of Lowered with the step that fills it and a test of whether it is filled.
struct PlanCheck {
  const char* plan;
  std::string_view step;
  std::function<bool(const passes::Lowered&)> filled;
};

std::vector<PlanCheck> plan_checks() {
  return {
      {"TMA descriptors", "plan_tma", [](const passes::Lowered& l) { return !l.tma.descriptors.empty(); }},
      {"graph info", "analyze",
       [](const passes::Lowered& l) { return l.info.position.size() == l.graph.size(); }},
      {"MMA plan", "plan_mma", [](const passes::Lowered& l) { return !l.mma.dots.empty(); }},
      {"layouts", "assign_layout", [](const passes::Lowered& l) { return !l.layout.of.empty(); }},
      {"operand swizzles", "collect_descriptors",
       [](const passes::Lowered& l) {
         for (const passes::Descriptor& d : l.tma.descriptors)
           if (d.swizzle > 0) return true;
         return false;
       }},
      {"axis info", "analyze_axes", [](const passes::Lowered& l) { return l.axes.size() == l.graph.size(); }},
      {"pipeline", "plan_stages", [](const passes::Lowered& l) { return !l.pipe.loops.empty(); }},
      {"shared memory", "plan_stages", [](const passes::Lowered& l) { return l.smem.total_bytes > 0; }},
      {"arguments", "plan_arguments", [](const passes::Lowered& l) { return !l.args.plan.slots.empty(); }},
      {"schedule ops", "insert_schedule_ops",
       [](const passes::Lowered& l) {
         for (size_t i = 0; i < l.graph.size(); ++i)
           if (tilejit::ir::is_schedule_op(l.graph.node(static_cast<tilejit::ir::NodeId>(i)).op)) return true;
         return false;
       }},
      {"barriers", "plan_barriers",
       [](const passes::Lowered& l) { return !l.barriers.scratch_users.empty(); }},
  };
}

size_t index_of(std::string_view step) {
  const auto steps = passes::lowering_steps();
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].name == step) return i;
  FAIL("no lowering step named " << step);
  return 0;
}

}  // namespace

TEST_CASE("lowering steps: the table names every step once, rewriting steps first") {
  const auto steps = passes::lowering_steps();
  REQUIRE(steps.size() == 19);
  CHECK(steps.front().name == "canonicalize");
  CHECK(steps.back().name == "plan_barriers");
  bool rewriting = true;
  for (size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(steps[i].name);
    CHECK(!steps[i].what.empty());
    CHECK((steps[i].run != nullptr));
    CHECK((steps[i].rewrites_graph || steps[i].plan != nullptr));  // every step shows what it did
    CHECK((!steps[i].adds_only || steps[i].rewrites_graph));
    // Plans are keyed by the final graph's node ids: after the first plan, a step may only add nodes.
    CHECK((!steps[i].rewrites_graph || rewriting || steps[i].adds_only));
    if (!steps[i].adds_only) rewriting = steps[i].rewrites_graph;
    for (size_t j = 0; j < i; ++j) CHECK(steps[j].name != steps[i].name);
  }
}

TEST_CASE("lower_until: each plan is filled by its step and by no earlier one") {
  const auto g = gemm_graph();
  const auto steps = passes::lowering_steps();
  for (size_t i = 0; i < steps.size(); ++i) {
    const passes::Lowered l = passes::lower_until(*g, tilejit::codegen::Options{}, steps[i].name);
    for (const PlanCheck& c : plan_checks()) {
      CAPTURE(steps[i].name);
      CAPTURE(c.plan);
      CHECK(c.filled(l) == (index_of(c.step) <= i));
    }
  }
  // Up to the last step is the whole lowering.
  const passes::Lowered whole = passes::lower(*g, tilejit::codegen::Options{});
  const passes::Lowered until = passes::lower_until(*g, tilejit::codegen::Options{}, "plan_barriers");
  CHECK(passes::describe(until) == passes::describe(whole));
  CHECK(tilejit::ir::print(until.graph) == tilejit::ir::print(whole.graph));
}

TEST_CASE(
    "lower_until: an unknown step is a UserError naming the value, the valid steps and the caller's line") {
  const auto g = gemm_graph();
  const int line = __LINE__ + 2;
  try {
    passes::lower_until(*g, tilejit::codegen::Options{}, "plan_mmma");
    FAIL("no error");
  } catch (const tilejit::UserError& e) {
    const std::string what = e.what();
    CHECK(contains(what, "'plan_mmma'"));
    CHECK(contains(what, "canonicalize, persistent_programs, hoist_invariants"));
    CHECK(contains(what, "plan_mma, assign_layout"));
    CHECK(contains(what, "lowering_steps_test.cpp:" + std::to_string(line)));
  }
}

TEST_CASE("lowering steps: the plan hook sees every plan after its step; the graph hook is unchanged") {
  const auto g = gemm_graph();
  std::vector<std::string> graphs, plans;
  std::string text;
  tilejit::codegen::Options o;
  o.dump_plan = [&](std::string_view step, const std::string& plan) {
    plans.emplace_back(step);
    text += "== " + std::string(step) + "\n" + plan;
  };
  passes::lower(*g, o, [&](std::string_view step, const tilejit::ir::Graph&) { graphs.emplace_back(step); });
  CHECK(graphs == std::vector<std::string>{"input", "canonicalize", "persistent_programs", "hoist_invariants", "early_views", "prefetch_loads", "overlap_products",
                                           "eliminate_dead_code", "plan_tma", "insert_layout_conversions",
                                           "insert_schedule_ops"});
  std::vector<std::string> want;
  for (const passes::LoweringStep& s : passes::lowering_steps())
    if (s.plan) want.emplace_back(s.name);
  CHECK(plans == want);
  INFO(text);
  CHECK(contains(text, "== plan_tma\ndescriptors:\n  d0: host-encoded, param arg0, bf16, box [64, 32]"));
  CHECK(contains(text, "== analyze\nprogram order: "));
  CHECK(contains(text, "== plan_mma\nmatrix products:\n  %"));
  CHECK(contains(text, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
  CHECK(contains(text, "== assign_layout\nvalue layouts (128 threads):\n"));
  CHECK(contains(text, "128B swizzle (a wgmma operand)"));
  CHECK(contains(text, "== analyze_axes\naxis info"));
  CHECK(contains(text, "== plan_stages\nstages: 2 (num_stages)\nsoftware pipeline: loop %"));
  CHECK(contains(text, "shared memory: "));
  CHECK(contains(text, "== check_register_budget\nregisters: the largest value held in registers is %"));
  CHECK(contains(text, "== plan_arguments\nkernel parameters (128 threads, "));
  CHECK(contains(text,
                 "descriptor of arg0, encoded on the host (__grid_constant__) (128 bytes, aligned to 64)"));
  CHECK(contains(text, "== plan_barriers\nbarriers between ops:\n  scratch arena users: %"));
}

TEST_CASE("lowering steps: the printed graph names the TMA attributes") {
  const auto g = gemm_graph();
  const std::string text =
      tilejit::ir::print(passes::lower_until(*g, tilejit::codegen::Options{}, "plan_tma").graph);
  INFO(text);
  CHECK(contains(text, "tma.load %0, %"));
  CHECK(contains(text, "{box=[64, 32], estride=[1, 1], fill=zero, placement=host}"));
  CHECK(contains(text, "{box=[64], reduce=none, placement=host}"));
  CHECK(contains(text, "reduce.sum %"));
  CHECK(contains(text, "{axis=0}"));
}

TEST_CASE("docs/schedules.md lists the lowering steps as the table has them") {
  std::ifstream in(TILEJIT_SCHEDULES_DOC);
  REQUIRE(in.good());
  std::vector<std::string> rows;
  std::string line;
  bool section = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) section = line == "## The lowering steps";
    if (section && line.rfind("| `", 0) == 0) rows.push_back(line);
  }
  std::vector<std::string> want;
  for (const passes::LoweringStep& s : passes::lowering_steps())
    want.push_back("| `" + std::string(s.name) + "` | " + std::string(s.what) + " |");
  CHECK(rows == want);
}
