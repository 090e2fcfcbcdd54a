// Warp roles: whether a kernel's pipelined loop gets a producer warpgroup (Config::warp_specialize), what the
// producer computes before its loop, and how many registers each role keeps (setmaxnreg).
#include <algorithm>

#include "passes/overlap_products.h"
#include "passes/tensor_source.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/passes/warp_roles.h"

namespace tilejit::passes {

namespace {

/// Registers per SM (one program per SM with roles: the launch bounds ask for at least one).
constexpr int kRegistersPerSm = 65536;
/// The producer issues TMA loads and counts stages: CUTLASS's and FlashAttention-3's producers keep 24-40.
/// Config::producer_registers chooses another value of that range.
constexpr int kProducerRegisters = 40;
/// The fewest setmaxnreg allows: what a kernel whose consumers spill at kProducerRegisters is compiled again with
/// (measured on an H100, 2026-12-07: the attention backward's dK/dV kernel at 64 x 128, 4 stages, 1-3% faster).
constexpr int kLeanProducerRegisters = 24;
/// setmaxnreg takes multiples of 8 in [24, 256]; ptxas gives a thread at most 255.
constexpr int kMaxRegisters = 240;

int round_down_8(int r) { return r / 8 * 8; }

/// Ops the producer may compute before its loop: uniform scalar arithmetic, uniform scalar loads (from tensors the
/// kernel does not write: checked by the caller) and the tensor views its descriptors come from (no value of a loop
/// or an if, nothing that needs other threads).
bool producer_can_compute(ir::Op op) {
  using ir::Op;
  switch (op) {
    // Kernel parameters, tensor views and uniform scalars.
    case Op::ParamTensor: case Op::ParamTensorArray: case Op::ArrayElem: case Op::MergeView: case Op::MakeView:
    case Op::ParamScalar: case Op::TensorSize: case Op::TensorStride: case Op::Const: case Op::ProgramId:
    case Op::NumPrograms: case Op::TileGrid:
    // Scalar arithmetic, comparisons and selection.
    TILEJIT_BINARY_OPS(TILEJIT_CASE) TILEJIT_COMPARE_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Neg: case Op::Not: case Op::Abs: case Op::Where:
    // Scalar loads.
    case Op::Load:
      return true;
    // Blocks: aranges, movement, reductions, products.
    TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE)
    case Op::Arange: case Op::Dot:
    // Float functions.
    case Op::Exp: case Op::Exp2: case Op::Log: case Op::Log2: case Op::Sqrt: case Op::Rsqrt: case Op::Sin:
    case Op::Cos: case Op::Tanh: case Op::Sigmoid: case Op::Erf: case Op::TanhApprox: case Op::Fma:
    // Writes and TMA operations, loops and ifs and their values, the schedule.
    TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::Store: case Op::AtomicAdd:
      return false;
  }
  return false;
}

}  // namespace

WarpRoles plan_warp_roles(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma,
                          const LoopPipelinePlan& pipe) {
  WarpRoles roles;
  roles.consumer_threads = g.num_warps * 32;
  if (g.warp_specialize == WarpSpecialize::off) return roles;
  // Asked for (or implied by Config::pingpong, whose turns need them): a refusal is a performance note. Left to
  // tilejit: roles where they clearly pay (below), silently.
  const bool asked = g.warp_specialize == WarpSpecialize::on || g.pingpong == Pingpong::on;
  const auto refuse = [&](std::string why) {
    if (asked) roles.not_applied = std::move(why);
    return roles;
  };
  if (pipe.loops.empty() && g.num_stages == 1) return refuse("num_stages=1 pipelines no loop");
  if (pipe.loops.empty())
    return refuse("the kernel has no software-pipelined loop (a loop of TMA loads feeding tensor-core dots)");
  // One ring: a single pipelined loop, or loops that share the first one's ring.
  const NodeId f = pipe.loops.begin()->second.ring;
  std::vector<NodeId> loops;
  for (const auto& [l, lp] : pipe.loops) {
    if (lp.ring != f)
      return refuse("the kernel has " + std::to_string(pipe.loops.size()) +
                    " pipelined loops with rings of their own; a producer warpgroup fills one ring (loops one after "
                    "another in the same block with the same TMA loads share one)");
    loops.push_back(l);
  }
  const auto earlier = [&](NodeId a, NodeId b) { return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)]; };
  std::sort(loops.begin(), loops.end(), earlier);
  const auto inside_loops = [&](NodeId n) {
    return std::any_of(loops.begin(), loops.end(), [&](NodeId l) { return info.inside(n, l); });
  };
  // The loops and branches around it (a persistent kernel's tile loop, an `if` that skips unused tiles), outermost
  // first: the producer runs the loops and takes the branches too, on the same uniform conditions.
  std::vector<NodeId> outer;
  std::vector<uint32_t> bodies{0};  // the regions the producer's nodes may lie in: the kernel body and theirs
  for (NodeId inner = f, x = g.region(g.node(f).region).owner; x != ir::kNoNode;
       inner = x, x = g.region(g.node(x).region).owner) {
    const ir::Op op = g.node(x).op;
    if (op != ir::Op::For && op != ir::Op::If)
      return refuse("its pipelined loop at " + source_line(g, f) + " lies inside " + std::string(ir::name_of(op)) + " at " +
                    source_line(g, x) + " (only loops and branches around it are run by the producer warpgroup too)");
    outer.insert(outer.begin(), x);
    bodies.push_back(g.node(inner).region);
  }
  const bool loop_nest = std::any_of(outer.begin(), outer.end(), [&](NodeId x) { return g.node(x).op == ir::Op::For; });
  // A loop overlap_products rotated (attention's S_j issued before P_{j-1} V_{j-1}) on two consumer warpgroups:
  // with roles they also take turns at the tensor cores (plan_warpgroup_turns), which is FlashAttention-3's
  // schedule (H200, S = 4096, 128 x 128 blocks, 8 warps: D = 128 attention 525 -> 601 TFLOP/s at 3 stages, HSTU
  // 355 -> 395; docs/schedules.md). With more consumer warpgroups the producer's registers would come out of
  // fewer per consumer thread (112 instead of 128 at 16 warps), which was not measured: there it is asked for.
  // Blocks of fewer keys rotated by request at two stages lost with roles (HSTU, 128 x 64: 348 -> 299): only the
  // width overlap_products itself rotates at (kMinOverlapWidth) counts.
  const bool rotated = std::any_of(loops.begin(), loops.end(), [&](NodeId l) {
    const PipelinedLoop& p = pipe.loops.at(l);
    if (p.first == ir::kNoNode || p.dots.empty()) return false;
    const ir::Shape& s = g.node(p.dots.front()).shape;  // S_j, the first product of an iteration
    return s.rank == 2 && s[1] >= kMinOverlapWidth;
  });
  // Left to tilejit, a rotated loop gets roles on two consumer warpgroups, at one program per SM, which such
  // kernels are launched for, and in a loop nest (attention over the sequences of a jagged batch). A loop nest
  // of products alone (a persistent or grouped GEMM) does not: without roles it once ran 23-26% slower only
  // because ptxas serialized its wgmma (PipelinedLoop::skip_when_empty); since then, on an H100 on 2026-12-07,
  // roles lost in 11 of 16 persistent and MoE grouped GEMMs (by up to 11%; 684 against 745 TFLOP/s at bf16
  // 8192^3) and won the other 5 by at most 1.7% (docs/schedules.md). A loop that runs once per program gains
  // little either.
  const bool worth_it = rotated && (g.num_warps == 8 || loop_nest);
  if (!asked && (!worth_it || g.min_programs_per_sm > 1)) return roles;
  if (g.num_warps % 4 != 0)
    return refuse("the consumers are whole warpgroups: num_warps must be a multiple of 4, not " +
                  std::to_string(g.num_warps));
  if (roles.consumer_threads + roles.producer_threads > 1024)
    return refuse("num_warps=" + std::to_string(g.num_warps) + " and the producer warpgroup make " +
                  std::to_string(roles.consumer_threads + roles.producer_threads) + " threads, more than 1024");
  if (g.min_programs_per_sm * (roles.consumer_threads + roles.producer_threads) > 2048)
    return refuse("programs_per_sm=" + std::to_string(g.min_programs_per_sm) + " programs of " +
                  std::to_string(roles.consumer_threads + roles.producer_threads) +
                  " threads (the producer warpgroup included) exceed an SM's 2048");
  // Descriptors built on the device after the kernel's start: the consumers build them, the producer awaits them
  // before its first load, which is the block before the first loop when overlap_products peeled one.
  NodeId earliest = loops.front();
  if (const NodeId first = pipe.loops.at(loops.front()).first;
      first != ir::kNoNode && info.position[static_cast<size_t>(first)] < info.position[static_cast<size_t>(earliest)])
    earliest = first;
  std::vector<NodeId> builds;
  std::vector<int> slots;
  for (NodeId l : loops)
    for (NodeId load : pipe.loops.at(l).loads) {
      const Descriptor& d = tma.descriptors[static_cast<size_t>(tma.of.at(load))];
      if (d.kind != DescKind::Device) continue;
      if (std::find(slots.begin(), slots.end(), d.slot) == slots.end()) slots.push_back(d.slot);
      if (d.build_at == ir::kNoNode) continue;  // built before the roles part: the producer only acquires it
      for (NodeId x = g.region(g.node(d.build_at).region).owner; x != ir::kNoNode; x = g.region(g.node(x).region).owner)
        if (g.node(x).op == ir::Op::For)
          return refuse("the descriptor of the TMA load at " + source_line(g, load) + " is built on the device in the loop at " +
                        source_line(g, x) + ", once per iteration; the producer warpgroup awaits descriptors built once " +
                        "per program (make the view outside the loop)");
      // The producer waits for every build before its first loop: a build after it (between two loops of the ring)
      // would wait for consumers that wait for the producer's loads.
      if (info.position[static_cast<size_t>(d.build_at)] > info.position[static_cast<size_t>(earliest)] ||
          std::find(bodies.begin(), bodies.end(), g.node(d.build_at).region) == bodies.end())
        return refuse("the descriptor of the TMA load at " + source_line(g, load) + " is built on the device at " +
                      source_line(g, d.build_at) + ", after the loop at " + source_line(g, loops.front()) +
                      " or in a branch the loop is not in; the producer warpgroup awaits descriptors built before its "
                      "first loop (make the view before it)");
      if (std::find(builds.begin(), builds.end(), d.build_at) == builds.end()) builds.push_back(d.build_at);
    }
  std::sort(builds.begin(), builds.end(), earlier);
  std::sort(slots.begin(), slots.end());
  // What the producer computes: every node outside the loop that its bounds and its loads' coordinates and
  // descriptors need, through the nodes of the loop that issue_stage prints (its index and address nodes).
  const std::vector<int> written = ir::written_params(g);
  std::vector<char> needed(g.size(), 0);
  std::vector<NodeId> worklist;
  for (NodeId x : outer)  // a loop's lo, hi and step (not its carried values); a branch's condition
    worklist.insert(worklist.end(), g.operands(x).begin(), g.operands(x).begin() + (g.node(x).op == ir::Op::For ? 3 : 1));
  for (NodeId l : loops) {
    const PipelinedLoop& p = pipe.loops.at(l);
    worklist.insert(worklist.end(), g.operands(l).begin(), g.operands(l).begin() + 3);  // lo, hi, step (not the carried values)
    for (NodeId n : p.loads) {
      // A device-built descriptor is named by its workspace slot: the producer needs none of its view's fields.
      const bool device = tma.descriptors[static_cast<size_t>(tma.of.at(n))].kind == DescKind::Device;
      worklist.insert(worklist.end(), g.operands(n).begin() + (device ? 1 : 0), g.operands(n).end());
    }
    for (NodeId n : p.address_nodes) worklist.insert(worklist.end(), g.operands(n).begin(), g.operands(n).end());
  }
  while (!worklist.empty()) {
    const NodeId n = worklist.back();
    worklist.pop_back();
    if (needed[static_cast<size_t>(n)] || inside_loops(n)) continue;
    needed[static_cast<size_t>(n)] = 1;
    const ir::Node& node = g.node(n);
    if (node.op == ir::Op::LoopIndex && std::find(outer.begin(), outer.end(), g.region(node.region).owner) != outer.end())
      continue;  // the producer's copy of that loop declares it
    if (node.op == ir::Op::Load) {  // a tile schedule read from memory: not from a tensor the kernel writes
      const int param = detail::resolve_tensor(g, g.operand(n, 0)).param;
      if (param < 0 || std::find(written.begin(), written.end(), param) != written.end())
        return refuse("the TMA loads of the loop at " + source_line(g, f) + " need the load at " + source_line(g, n) +
                      ", from a tensor the kernel writes (the producer warpgroup could read it before it is written)");
    }
    const bool value = ir::yields_value(g.node(n).op);
    if (std::find(bodies.begin(), bodies.end(), node.region) == bodies.end() || !producer_can_compute(node.op) ||
        (value && layout.of[static_cast<size_t>(n)].kind != ValueLayout::Uniform))
      return refuse("the TMA loads of the loop at " + source_line(g, f) + " need " +
                    std::string(ir::name_of(node.op)) + " at " + source_line(g, n) +
                    ", which the producer warpgroup cannot compute on its own (only uniform scalar arithmetic and "
                    "loads of the kernel body and of the loops around the pipelined loop, before it)");
    worklist.insert(worklist.end(), g.operands(n).begin(), g.operands(n).end());
  }
  for (size_t n = 0; n < g.size(); ++n)
    if (needed[n] && ir::yields_value(g.node(static_cast<NodeId>(n)).op) && g.node(static_cast<NodeId>(n)).op != ir::Op::LoopIndex)
      roles.producer_nodes.push_back(static_cast<NodeId>(n));
  std::sort(roles.producer_nodes.begin(), roles.producer_nodes.end(), earlier);
  // The consumers build every device descriptor: the producer's nodes (which skip the views of device-built
  // descriptors, above) hold no build point, whose barrier the producer would never reach.
  for (const Descriptor& d : tma.descriptors)
    check_internal(d.kind != DescKind::Device || d.build_at == ir::kNoNode ||
                       std::find(roles.producer_nodes.begin(), roles.producer_nodes.end(), d.build_at) == roles.producer_nodes.end(),
                   "plan_warp_roles: a descriptor build point among the producer's nodes");
  roles.loop = f;
  roles.loops = std::move(loops);
  roles.enclosing = std::move(outer);
  roles.awaited_builds = std::move(builds);
  roles.acquired_slots = std::move(slots);
  const int producer = g.producer_registers > 0 ? g.producer_registers : kProducerRegisters;
  if (const int consumers = consumer_register_share(g, roles, producer)) {
    roles.producer_registers = producer;
    roles.consumer_registers = consumers;
    if (g.producer_registers == 0 && consumer_register_share(g, roles, kLeanProducerRegisters) > consumers)
      roles.spill_retry_producer_registers = kLeanProducerRegisters;
  }
  return roles;
}

int consumer_register_share(const ir::Graph& g, const WarpRoles& roles, int producer) {
  // The launch bounds (threads, programs per SM) make ptxas give every thread `start` registers, so a program
  // holds start x threads of them. The producer keeps `producer` and the consumers take what it gives up, when
  // that is more than they start with: setmaxnreg.inc waits until the program's pool has the registers, so
  // asking for more than the pool holds would hang the consumers.
  const int programs = std::max(1, g.min_programs_per_sm);
  const int start = round_down_8(std::min(255, kRegistersPerSm / programs / roles.threads()));
  const int pool = start * roles.threads();
  const int consumers = std::min(kMaxRegisters, round_down_8((pool - producer * roles.producer_threads) / roles.consumer_threads));
  return start > producer && consumers > start ? consumers : 0;
}

}  // namespace tilejit::passes
