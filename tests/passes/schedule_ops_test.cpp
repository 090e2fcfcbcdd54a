// Tests of insert_schedule_ops: where each schedule op lands in the graphs of the codegen suite's kernels
// (a GEMM K loop with its products in flight, a persistent GEMM's ring that carries over between runs,
// attention's two products each awaited before its first use, a decayed accumulator updated in place and
// carried, SwiGLU's two products in flight together, warp roles (a producer warpgroup, in a tiled and a
// persistent GEMM, and refused), consumer warpgroups taking turns at the tensor cores (pingpong), a
// bias load issued before the K loop, a dot outside any loop),
// that the ops name the right nodes, that the printed graph shows them by name, and that the verifier
// refuses malformed ones.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "../../jit/passes/scratch_use.h"
#include "../codegen/emit_kernels.h"
#include "tilejit/error.h"
#include "tilejit/ir/ir.h"
#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/tilejit.h"

namespace passes = tilejit::passes;
namespace ir = tilejit::ir;
using ir::NodeId;
using ir::Op;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

passes::Lowered lowered(const char* name) {
  const tilejit::testing::EmitCase* c = tilejit::testing::find_emit_case(name);
  REQUIRE(c != nullptr);
  return passes::lower(*c->trace(), c->options);
}

/// The ops of region `r` that a schedule is about (schedule ops, TMA loads, dots, loops, the yield), by name.
std::vector<std::string> sequence(const ir::Graph& g, uint32_t r) {
  std::vector<std::string> out;
  for (NodeId id : g.region(r).nodes) {
    const Op op = g.node(id).op;
    if (ir::is_schedule_op(op) || op == Op::DescLoad || op == Op::Dot || op == Op::For || op == Op::Yield)
      out.emplace_back(ir::name_of(op));
  }
  return out;
}

/// The one pipelined loop of `l`.
NodeId only_loop(const passes::Lowered& l) {
  REQUIRE(l.pipe.loops.size() == 1);
  return l.pipe.loops.begin()->first;
}

uint32_t body(const ir::Graph& g, NodeId f) { return ir::loop_body(g, f); }

/// The schedule ops of `op` in the whole graph.
std::vector<NodeId> all(const ir::Graph& g, Op op) {
  std::vector<NodeId> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(static_cast<NodeId>(i)).op == op) out.push_back(static_cast<NodeId>(i));
  return out;
}

/// The names of the nodes right before and after `f` in its region, from `before` back and `after` on.
std::vector<std::string> around(const ir::Graph& g, NodeId f, int before, int after) {
  const auto& nodes = g.region(g.node(f).region).nodes;
  const auto at = std::find(nodes.begin(), nodes.end(), f) - nodes.begin();
  std::vector<std::string> out;
  for (auto i = at - before; i <= at + after; ++i)
    if (i >= 0 && static_cast<size_t>(i) < nodes.size()) out.emplace_back(ir::name_of(g.node(nodes[static_cast<size_t>(i)]).op));
  return out;
}

}  // namespace

TEST_CASE("schedule ops: a GEMM K loop keeps its last product in flight; the stage is freed after the previous one") {
  const passes::Lowered l = lowered("gemm_dot");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  CHECK(l.pipe.loops.at(f).in_flight());
  CHECK(sequence(g, body(g, f)) == std::vector<std::string>{"pipe.stage", "pipe.wait", "tma.load", "tma.load", "dot",
                                                           "wgmma.wait", "barrier.cta", "pipe.refill", "pipe.advance",
                                                           "yield"});
  // Before the loop its bounds and prologue, after it the wait for the last products (the ring runs once).
  CHECK(around(g, f, 2, 1) == std::vector<std::string>{"pipe.begin", "pipe.prologue", "for", "wgmma.wait"});
  const auto waits = all(g, Op::WgmmaWait);
  REQUIRE(waits.size() == 2);
  const passes::PipelinedLoop& p = l.pipe.loops.at(f);
  REQUIRE(p.carried.size() == 1);
  CHECK(p.carried[0].dot == p.dot);
  CHECK(p.carried[0].update == ir::kNoNode);
  for (NodeId w : waits) {
    const ir::ScheduleAttrs a = ir::attrs<ir::ScheduleAttrs>(g, w);
    if (l.info.loop[static_cast<size_t>(w)] == f) {
      CHECK(a.dots == std::vector<NodeId>{p.carried[0].arg});  // the previous iteration's product: its registers
      CHECK(a.pending == 1);
      CHECK(a.when == ir::WaitFor::previous_iteration);
    } else {
      CHECK(a.dots == std::vector<NodeId>{p.dot});
      CHECK(a.pending == 0);
      CHECK(a.when == ir::WaitFor::last_iteration);
    }
  }
  const auto barriers = all(g, Op::CtaBarrier);
  REQUIRE(barriers.size() == 1);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, barriers[0]).reason == ir::BarrierReason::stage_free_in_flight);
  const auto waits_for_stage = all(g, Op::PipeWait);
  REQUIRE(waits_for_stage.size() == 1);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, waits_for_stage[0]).load == l.pipe.loops.at(f).loads.front());
  CHECK(all(g, Op::PipeEnd).empty());
  // Every node has its analysis, layout and axis entry.
  CHECK(l.info.position.size() == g.size());
  CHECK(l.layout.of.size() == g.size());
  CHECK(l.axes.size() == g.size());
}

TEST_CASE("schedule ops: a K loop inside a tile loop keeps its ring position between runs") {
  const passes::Lowered l = lowered("persistent_gemm");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  CHECK(l.info.in_loop(f));
  for (Op op : {Op::PipeBegin, Op::PipePrologue, Op::PipeRefill}) {
    const auto ops = all(g, op);
    REQUIRE(ops.size() == 1);
    CHECK(ir::attrs<ir::ScheduleAttrs>(g, ops[0]).ring_persists);
    CHECK(ir::attrs<ir::ScheduleAttrs>(g, ops[0]).stages == 3);
  }
  CHECK(around(g, f, 0, 2) == std::vector<std::string>{"for", "wgmma.wait", "pipe.end"});
  const std::string text = ir::print(g);
  INFO(text);
  CHECK(contains(text, "pipe.begin {loop=%" + std::to_string(f) + ", stages=3, ring=kernel}"));
  CHECK(contains(text, "pipe.wait {loop=%" + std::to_string(f) + ", stages=3, phase=(position / 3) & 1, first=%"));
  CHECK(contains(text, "pending=1, ends=previous_iteration}"));
  CHECK(contains(text, "barrier.cta {reason=stage_free_in_flight}"));
  CHECK(contains(text, "pipe.end {loop=%" + std::to_string(f) + "}"));
}

TEST_CASE("schedule ops: with warp roles the producer splits off first and each consumer warp releases the stage") {
  const passes::Lowered l = lowered("gemm_warp_roles");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  REQUIRE(l.roles.on());
  CHECK(l.roles.loop == f);
  CHECK(l.roles.enclosing.empty());
  CHECK(l.roles.consumer_threads == 256);
  CHECK(l.roles.threads() == 384);
  CHECK(l.roles.producer_registers == 40);
  CHECK(l.roles.consumer_registers == 232);
  CHECK(l.args.plan.threads == 384);
  // The producer's scalars: the tile's coordinates and the loop's bound, no register block.
  for (NodeId n : l.roles.producer_nodes) CHECK(l.layout.of[static_cast<size_t>(n)].kind == passes::ValueLayout::Uniform);
  CHECK(g.node(g.region(0).nodes.front()).op == Op::WarpProducer);
  CHECK(sequence(g, body(g, f)) == std::vector<std::string>{"pipe.stage", "pipe.wait", "tma.load", "tma.load", "dot",
                                                           "wgmma.wait", "pipe.release", "pipe.advance", "yield"});
  CHECK(around(g, f, 1, 1) == std::vector<std::string>{"pipe.begin", "for", "wgmma.wait"});
  CHECK(all(g, Op::PipePrologue).empty());
  CHECK(all(g, Op::PipeRefill).empty());
  CHECK(all(g, Op::CtaBarrier).empty());
  // Four empty barriers after the four full ones, each expecting one arrival per consumer warp.
  CHECK(l.smem.ring_barriers.at(f) == 0);
  CHECK(l.smem.empty_barriers.at(f) == 4);
  CHECK(l.smem.num_barriers == 8);
  for (int b = 4; b < 8; ++b) CHECK(l.smem.barrier_arrivals.at(b) == 8);
  const std::string text = ir::print(g);
  INFO(text);
  CHECK(contains(text, "warp.producer {loop=%" + std::to_string(f) + ", stages=4}"));
  CHECK(contains(text, "pipe.release {loop=%" + std::to_string(f) + ", stages=4, ring=run}"));
  CHECK(contains(passes::describe(l), "warp roles: producer warpgroup, threads 256-383, 40 registers"));
}

TEST_CASE("schedule ops: the producer of a persistent kernel runs its tile loop; refused roles leave the schedule as it was") {
  const passes::Lowered l = lowered("persistent_gemm_warp_roles");
  REQUIRE(l.roles.on());
  const NodeId f = only_loop(l);
  REQUIRE(l.roles.enclosing.size() == 1);
  CHECK(l.graph.node(l.roles.enclosing[0]).op == Op::For);
  CHECK(l.info.inside(f, l.roles.enclosing[0]));
  CHECK(l.pipe.loops.at(f).ring_persists);
  // Some of the producer's scalars lie in the tile loop's body (the tile's row and column).
  CHECK(std::any_of(l.roles.producer_nodes.begin(), l.roles.producer_nodes.end(),
                    [&](NodeId n) { return l.info.loop[static_cast<size_t>(n)] == l.roles.enclosing[0]; }));
  CHECK(all(l.graph, Op::PipeRelease).size() == 1);
  CHECK(all(l.graph, Op::PipeEnd).size() == 1);

  // Two pipelined loops: no roles, the ordinary schedule, and the reason in a performance note.
  const tilejit::testing::EmitCase* c = tilejit::testing::find_emit_case("gemm_dot");
  REQUIRE(c != nullptr);
  tilejit::Config two_stage = c->config;
  const passes::Lowered plain = passes::lower(*c->trace_with(two_stage.num_stages(1).warp_specialize()), c->options);
  CHECK_FALSE(plain.roles.on());
  CHECK(plain.roles.not_applied == "num_stages=1 pipelines no loop");
  const auto notes = passes::performance_notes(plain);
  CHECK(std::any_of(notes.begin(), notes.end(), [](const auto& n) {
    return n.warning && contains(n.text, "warp_specialize is not applied") && contains(n.text, "num_stages=1");
  }));
  CHECK(all(plain.graph, Op::WarpProducer).empty());
  CHECK(plain.args.plan.threads == c->config.num_warps() * 32);
  // 4 programs of 16 warps fill an SM's 2048 threads; the producer warpgroups would not fit.
  const tilejit::testing::EmitCase* big = tilejit::testing::find_emit_case("gemm_warp_roles");
  REQUIRE(big != nullptr);
  tilejit::Config crowded = big->config;
  const passes::Lowered full = passes::lower(*big->trace_with(crowded.num_warps(16).programs_per_sm(4)), big->options);
  CHECK_FALSE(full.roles.on());
  CHECK(contains(full.roles.not_applied, "exceed an SM's 2048"));

  // Left to tilejit: a K loop gets no roles and no note, whether it runs once per program or in a tile loop (the
  // persistent GEMM as persistent_gemm_warp_roles, warp_specialize unset).
  CHECK(c->config.warp_specialization() == tilejit::WarpSpecialize::automatic);
  const passes::Lowered tiled = lowered("gemm_dot");
  CHECK_FALSE(tiled.roles.on());
  CHECK(tiled.roles.not_applied.empty());
  CHECK(l.graph.warp_specialize == tilejit::WarpSpecialize::on);
  const tilejit::testing::EmitCase* nest = tilejit::testing::find_emit_case("persistent_gemm_warp_roles");
  REQUIRE(nest != nullptr);
  tilejit::Config unset = tilejit::Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3);
  const passes::Lowered automatic = passes::lower(*nest->trace_with(unset), nest->options);
  CHECK(automatic.graph.warp_specialize == tilejit::WarpSpecialize::automatic);
  CHECK_FALSE(automatic.roles.on());
  CHECK(automatic.roles.not_applied.empty());
  CHECK(automatic.pipe.loops.at(only_loop(automatic)).skip_when_empty);
  const passes::Lowered off = lowered("persistent_gemm");
  CHECK(off.graph.warp_specialize == tilejit::WarpSpecialize::off);
  CHECK_FALSE(off.roles.on());
  CHECK(off.roles.not_applied.empty());
}

TEST_CASE("schedule ops: a producer reads a tile schedule from memory, not from a tensor the kernel writes") {
  using namespace tilejit::dsl;
  const auto lower_roles = [](auto kernel) {
    return passes::lower(*kernel.trace(tilejit::Config{{"BM", 64}, {"BN", 64}, {"BK", 64}}.num_warps(4).num_stages(3).warp_specialize()), {});
  };
  // The tile's first row is loaded from `rows` (a grouped GEMM's schedule): the producer loads it too.
  const passes::Lowered read = lower_roles(tilejit::kernel("schedule_read", [](Tensor<i32, 1> rows, Tensor<bf16, 2> a, Tensor<bf16, 2> b,
                                                                               Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = load(rows, program_id(0)), n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc);
  }));
  REQUIRE(read.roles.on());
  CHECK(std::any_of(read.roles.producer_nodes.begin(), read.roles.producer_nodes.end(),
                    [&](NodeId n) { return read.graph.node(n).op == Op::Load; }));
  // The same schedule in a tensor the kernel also writes: the producer could read it before the write lands.
  const passes::Lowered written = lower_roles(tilejit::kernel("schedule_written", [](Tensor<i32, 1> rows, Tensor<bf16, 2> a,
                                                                                     Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                                                     Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = load(rows, program_id(0)), n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc);
    store(rows, program_id(0), m + 1);
  }));
  CHECK_FALSE(written.roles.on());
  CHECK(contains(written.roles.not_applied, "from a tensor the kernel writes"));
}

TEST_CASE("schedule ops: a K loop inside an if (a grouped GEMM skipping unused slots) gets roles when asked; the producer takes the branch") {
  const auto cfg = tilejit::Config{{"BM", 128}, {"BN", 128}, {"BK", 64}, {"GM", 8}}.num_warps(8).num_stages(3);
  const auto moe = tilejit::samples::moe_grouped_matmul_kernel();
  const passes::Lowered asked = passes::lower(*moe.trace(tilejit::Config(cfg).warp_specialize()), {});
  REQUIRE(asked.roles.on());
  CHECK(asked.roles.not_applied.empty());
  REQUIRE(asked.roles.enclosing.size() == 1);
  const NodeId branch = asked.roles.enclosing[0];
  CHECK(asked.graph.node(branch).op == Op::If);
  // The producer computes the branch's condition (the slot's first row, loaded) and, inside the branch, the expert.
  int loads_outside = 0, loads_inside = 0;
  for (NodeId n : asked.roles.producer_nodes)
    if (asked.graph.node(n).op == Op::Load)
      (asked.graph.node(n).region == 0 ? loads_outside : loads_inside)++;
  CHECK(loads_outside == 1);
  CHECK(loads_inside == 1);
  // Left to tilejit: one run of the K loop per program, so no roles and no note.
  const passes::Lowered automatic = passes::lower(*moe.trace(cfg), {});
  CHECK_FALSE(automatic.roles.on());
  CHECK(automatic.roles.not_applied.empty());
}

TEST_CASE("schedule ops: attention's products are each awaited before their first use; the stage is freed after the last's issue") {
  const passes::Lowered l = lowered("attention_loop");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  const passes::PipelinedLoop& p = l.pipe.loops.at(f);
  REQUIRE(p.dots.size() == 2);
  CHECK_FALSE(p.in_flight());
  CHECK(p.carried.empty());  // P V reads its operand a from registers: it is not carried into the next iteration
  const auto seq = sequence(g, body(g, f));
  const std::vector<std::string> want{"pipe.stage", "pipe.wait", "tma.load",    "dot",         "wgmma.wait", "tma.load",
                                      "dot",        "barrier.cta", "pipe.refill", "wgmma.wait", "pipe.advance", "yield"};
  CHECK(seq == want);
  // S's wait comes right before its first reader (the scaling), P V's before the yield, after the row sum.
  const auto waits = all(g, Op::WgmmaWait);
  REQUIRE(waits.size() == 2);
  for (NodeId w : waits) {
    const ir::ScheduleAttrs a = ir::attrs<ir::ScheduleAttrs>(g, w);
    REQUIRE(a.dots.size() == 1);
    CHECK(a.pending == 0);
    CHECK(a.when == ir::WaitFor::issued);
    const auto& nodes = g.region(body(g, f)).nodes;
    const auto at = std::find(nodes.begin(), nodes.end(), w);
    REQUIRE(at + 1 != nodes.end());
    if (a.dots[0] == p.dots[0]) {
      const auto next = g.operands(at[1]);
      CHECK(std::find(next.begin(), next.end(), p.dots[0]) != next.end());  // the next statement reads S
    } else {
      CHECK(a.dots[0] == p.dots[1]);
      CHECK(g.node(at[1]).op == Op::PipeAdvance);
      CHECK(g.node(at[-1]).op != Op::Dot);  // something (the row sum) runs while P V is in flight
    }
  }
  const auto barriers = all(g, Op::CtaBarrier);
  REQUIRE(barriers.size() == 1);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, barriers[0]).reason == ir::BarrierReason::stage_free);
  // Nothing stays in flight past the loop.
  CHECK(around(g, f, 0, 1).back() != "wgmma.wait");
}

TEST_CASE("schedule ops: consumer warpgroups take turns issuing attention's products (pingpong)") {
  const tilejit::testing::EmitCase* c = tilejit::testing::find_emit_case("attention_pingpong");
  REQUIRE(c != nullptr);
  const auto lower_with = [&](const tilejit::Config& config) { return passes::lower(*c->trace_with(config), c->options); };
  const tilejit::Config base = tilejit::Config{{"BM", 128}, {"BN", 128}, {"D", 64}}.num_warps(8).num_stages(2);
  const auto turn_ops = [](const ir::Graph& g) {
    return std::vector<size_t>{all(g, Op::TurnStart).size(), all(g, Op::TurnWait).size(), all(g, Op::TurnPass).size()};
  };
  SUBCASE("the rotated loop: S and the previous block's P V issued in one turn; roles implied") {
    const passes::Lowered l = lowered("attention_pingpong");
    const ir::Graph& g = l.graph;
    const NodeId f = only_loop(l);
    REQUIRE(l.roles.on());  // pingpong() asks for the producer warpgroup the turns need
    REQUIRE(l.turns.on());
    CHECK(l.turns.warpgroups == 2);
    CHECK(l.turns.loops == std::vector<NodeId>{f});
    CHECK(l.turns.not_applied.empty());
    // The producer splits off first; the consumers' first op gives warpgroup 0 its first turn.
    CHECK(g.node(g.region(0).nodes[0]).op == Op::WarpProducer);
    CHECK(g.node(g.region(0).nodes[1]).op == Op::TurnStart);
    CHECK(turn_ops(g) == std::vector<size_t>{1, 1, 1});
    const auto seq = sequence(g, body(g, f));
    const std::vector<std::string> want{"pipe.stage", "pipe.wait",  "tma.load", "turn.wait",    "dot",        "tma.load",
                                        "dot",        "turn.pass", "pipe.release", "wgmma.wait", "wgmma.wait", "pipe.advance",
                                        "yield"};
    CHECK(seq == want);
    // Between the turn's two products only the accumulator's rescaling in registers (alpha reshaped to a column
    // and broadcast, kept in its registers) and V's load from the ring.
    const auto& nodes = g.region(body(g, f)).nodes;
    const auto wait = std::find(nodes.begin(), nodes.end(), all(g, Op::TurnWait)[0]);
    const auto pass = std::find(nodes.begin(), nodes.end(), all(g, Op::TurnPass)[0]);
    for (auto it = wait + 2; it < pass - 1; ++it) {
      const Op op = g.node(*it).op;
      CHECK((ir::is_elementwise(op) || op == Op::Broadcast || op == Op::Reshape || op == Op::DescLoad));
      CHECK_FALSE(passes::stages_through_scratch(l, *it));
    }
    CHECK(contains(ir::print(g), "turn.wait {loop=%" + std::to_string(f) + "}"));
    CHECK(contains(passes::describe(l), "warpgroup turns: the 2 consumer warpgroups issue the products of loop %" + std::to_string(f)));
  }
  SUBCASE("the loop as written: S and P V in turns of their own (the softmax between them needs S)") {
    const passes::Lowered l = lower_with(tilejit::Config(base).overlap_products(false).pingpong());
    REQUIRE(l.turns.on());
    const NodeId f = only_loop(l);
    CHECK(turn_ops(l.graph) == std::vector<size_t>{1, 2, 2});
    const auto seq = sequence(l.graph, body(l.graph, f));
    const std::vector<std::string> want{"pipe.stage", "pipe.wait", "tma.load",  "turn.wait",    "dot",        "turn.pass",
                                        "wgmma.wait", "tma.load",  "turn.wait", "dot",          "turn.pass",  "pipe.release",
                                        "wgmma.wait", "pipe.advance", "yield"};
    CHECK(seq == want);
  }
  SUBCASE("left to tilejit: turns where the loop was rotated and roles are on, silently nowhere else") {
    const passes::Lowered rotated = lower_with(tilejit::Config(base).warp_specialize());
    CHECK(rotated.turns.on());
    CHECK(turn_ops(rotated.graph) == std::vector<size_t>{1, 1, 1});
    // Nothing asked: tilejit rotates the loop of 128-key blocks, which brings the roles (two consumer warpgroups)
    // and so the turns: FlashAttention-3's schedule.
    const passes::Lowered chosen = lower_with(base);
    CHECK(chosen.roles.on());
    CHECK(chosen.turns.on());
    CHECK(turn_ops(chosen.graph) == std::vector<size_t>{1, 1, 1});
    // One consumer warpgroup (no turns to take) keeps the rotated loop without roles, and so do four (the
    // producer's registers would leave each consumer thread fewer: not measured, so left to the user).
    const passes::Lowered one = lower_with(tilejit::Config(base).num_warps(4));
    CHECK(one.pipe.loops.at(only_loop(one)).first != tilejit::ir::kNoNode);
    CHECK_FALSE(one.roles.on());
    CHECK(one.roles.not_applied.empty());
    const passes::Lowered four = lower_with(tilejit::Config{{"BM", 256}, {"BN", 128}, {"D", 64}}.num_warps(16).num_stages(2));
    CHECK(four.pipe.loops.at(only_loop(four)).first != tilejit::ir::kNoNode);
    CHECK_FALSE(four.roles.on());
    // Blocks of 64 keys rotated by request: no roles either (they lost there at two stages).
    const passes::Lowered narrow = lower_with(tilejit::Config{{"BM", 128}, {"BN", 64}, {"D", 64}}.num_warps(8).num_stages(2).overlap_products());
    CHECK(narrow.pipe.loops.at(only_loop(narrow)).first != tilejit::ir::kNoNode);
    CHECK_FALSE(narrow.roles.on());
    for (const tilejit::Config& c : {tilejit::Config(base).warp_specialize().overlap_products(false), tilejit::Config(base).warp_specialize(false)}) {
      const passes::Lowered l = lower_with(c);
      CHECK_FALSE(l.turns.on());
      CHECK(l.turns.not_applied.empty());
      CHECK(turn_ops(l.graph) == std::vector<size_t>{0, 0, 0});
    }
  }
  SUBCASE("refused, with the reason; or not asked") {
    const auto refused = [&](const passes::Lowered& l, const std::string& why) {
      CHECK_FALSE(l.turns.on());
      CHECK(contains(l.turns.not_applied, why));
      CHECK(turn_ops(l.graph) == std::vector<size_t>{0, 0, 0});
      const auto notes = passes::performance_notes(l);
      CHECK(std::any_of(notes.begin(), notes.end(), [&](const auto& n) {
        return n.warning && contains(n.text, "pingpong is not applied") && contains(n.text, why);
      }));
    };
    refused(lower_with(tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2).pingpong()),
            "num_warps=4 makes one consumer warpgroup");
    refused(lower_with(tilejit::Config(base).warp_specialize(false).pingpong()), "no producer warpgroup");
    const tilejit::testing::EmitCase* gemm = tilejit::testing::find_emit_case("gemm_warp_roles");
    REQUIRE(gemm != nullptr);
    refused(passes::lower(*gemm->trace_with(tilejit::Config(gemm->config).pingpong()), gemm->options),
            "issues one product per iteration");
    const passes::Lowered off = lower_with(tilejit::Config(base).overlap_products().warp_specialize().pingpong(false));
    CHECK(off.roles.on());
    CHECK_FALSE(off.turns.on());
    CHECK(off.turns.not_applied.empty());
    CHECK(turn_ops(off.graph) == std::vector<size_t>{0, 0, 0});
  }
}

TEST_CASE("schedule ops: a product into acc * decay stays in flight; the threads scale the accumulator in place") {
  const passes::Lowered l = lowered("gemm_decayed_acc");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  const passes::PipelinedLoop& p = l.pipe.loops.at(f);
  REQUIRE(p.carried.size() == 1);
  const passes::CarriedProduct& c = p.carried[0];
  CHECK(p.in_flight());
  REQUIRE(c.update != ir::kNoNode);
  CHECK(g.node(c.update).op == Op::Mul);
  REQUIRE(l.pipe.in_place.count(c.update));
  CHECK(g.operand(c.update, l.pipe.in_place.at(c.update)) == c.arg);
  // The previous iteration's product is awaited right before the threads scale its registers (not before the
  // barrier, which then needs no wait of its own), and this iteration's stays in flight.
  CHECK(sequence(g, body(g, f)) == std::vector<std::string>{"pipe.stage", "wgmma.wait", "pipe.wait", "tma.load", "tma.load",
                                                           "dot", "barrier.cta", "pipe.refill", "pipe.advance", "yield"});
  const auto waits = all(g, Op::WgmmaWait);
  REQUIRE(waits.size() == 2);
  const ir::ScheduleAttrs in_body = ir::attrs<ir::ScheduleAttrs>(g, waits[0]);
  CHECK(in_body.dots == std::vector<NodeId>{c.arg});
  CHECK(in_body.pending == 0);
  CHECK(in_body.when == ir::WaitFor::previous_iteration);
  const auto& nodes = g.region(body(g, f)).nodes;
  const auto at = std::find(nodes.begin(), nodes.end(), waits[0]);
  CHECK(at[1] == c.update);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, all(g, Op::CtaBarrier)[0]).reason == ir::BarrierReason::stage_free);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, waits[1]).when == ir::WaitFor::last_iteration);
}

TEST_CASE("schedule ops: two products that accumulate in place stay in flight together") {
  const passes::Lowered l = lowered("swiglu_two_products");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  const passes::PipelinedLoop& p = l.pipe.loops.at(f);
  REQUIRE(p.dots.size() == 2);
  CHECK(p.in_flight());
  CHECK(sequence(g, body(g, f)) == std::vector<std::string>{"pipe.stage", "pipe.wait", "tma.load", "tma.load", "dot",
                                                           "tma.load", "dot", "wgmma.wait", "barrier.cta",
                                                           "pipe.refill", "pipe.advance", "yield"});
  const auto waits = all(g, Op::WgmmaWait);
  REQUIRE(waits.size() == 2);
  std::vector<NodeId> args;
  for (const passes::CarriedProduct& c : p.carried) args.push_back(c.arg);
  for (NodeId w : waits) {
    const ir::ScheduleAttrs a = ir::attrs<ir::ScheduleAttrs>(g, w);
    const bool in_body = l.info.loop[static_cast<size_t>(w)] == f;
    CHECK(a.dots == (in_body ? args : p.dots));
    CHECK(a.pending == (in_body ? 2 : 0));
    CHECK(a.when == (in_body ? ir::WaitFor::previous_iteration : ir::WaitFor::last_iteration));
  }
  const std::string text = ir::print(g);
  CHECK(contains(text, "wgmma.wait {of=[%" + std::to_string(args[0]) + ", %" + std::to_string(args[1]) +
                           "], pending=2, ends=previous_iteration}"));
}

TEST_CASE("schedule ops: a load the K loop does not feed is issued before the loop's prologue") {
  const passes::Lowered l = lowered("gemm_bias_gelu");
  const ir::Graph& g = l.graph;
  const NodeId f = only_loop(l);
  REQUIRE(l.pipe.issued_before.count(f));
  CHECK(around(g, f, 3, 0) == std::vector<std::string>{"tma.issue", "pipe.begin", "pipe.prologue", "for"});
  const auto issues = all(g, Op::TmaIssue);
  REQUIRE(issues.size() == 1);
  CHECK(ir::attrs<ir::ScheduleAttrs>(g, issues[0]).node == l.pipe.issued_before.at(f).front());
}

TEST_CASE("schedule ops: a dot outside any loop is awaited right after it") {
  const passes::Lowered l = lowered("dot_register_a");
  const ir::Graph& g = l.graph;
  CHECK(l.pipe.loops.empty());
  REQUIRE(l.mma.dots.size() == 2);
  for (const auto& [dot, m] : l.mma.dots) {
    const auto& nodes = g.region(g.node(dot).region).nodes;
    const auto at = std::find(nodes.begin(), nodes.end(), dot);
    REQUIRE(at + 1 != nodes.end());
    CHECK(g.node(at[1]).op == Op::WgmmaWait);
    CHECK(ir::attrs<ir::ScheduleAttrs>(g, at[1]).dots == std::vector<NodeId>{dot});
  }
  CHECK(all(g, Op::PipeBegin).empty());
  CHECK(all(g, Op::CtaBarrier).empty());
}

TEST_CASE("schedule ops: the verifier refuses one that names the wrong node or has the wrong attributes") {
  const passes::Lowered l = lowered("gemm_dot");
  const NodeId f = only_loop(l);
  const NodeId dot = l.pipe.loops.at(f).dot;
  auto refused = [&](Op op, std::vector<int64_t> ints, NodeId anchor, const char* why) {
    ir::Graph g = l.graph;
    g.insert(op, ints, anchor, false);
    try {
      ir::verify(g);
      FAIL("accepted: " << why);
    } catch (const tilejit::InternalError& e) {
      CHECK_MESSAGE(contains(e.what(), why), e.what());
    }
  };
  refused(Op::PipeBegin, {dot, 2, 0}, f, "names no loop");
  refused(Op::PipeBegin, {f, 1, 0}, f, "at least 2 stages");
  refused(Op::PipeBegin, {f, 2}, f, "attributes do not have the op's layout");
  refused(Op::WgmmaWait, {0, 0, f}, f, "names no dot");
  refused(Op::WgmmaWait, {0, 0}, f, "attributes do not have the op's layout");
  refused(Op::WgmmaWait, {9, 0, dot}, f, "pending or when out of range");
  refused(Op::WgmmaWait, {0, 3, dot}, f, "pending or when out of range");
  refused(Op::TmaIssue, {dot}, f, "names no TMA load");
  refused(Op::PipeWait, {f, 2, dot}, f, "names no TMA load");
  refused(Op::CtaBarrier, {7}, f, "barrier reason out of range");
  // The lowered graph itself verifies.
  CHECK_NOTHROW(ir::verify(l.graph));
}
