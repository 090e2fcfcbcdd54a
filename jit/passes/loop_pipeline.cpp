// Software pipelining of K loops: which TMA loads are issued ahead of their use, and what their coordinates need.
#include <algorithm>
#include <functional>
#include <set>

#include "passes/tensor_source.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"

namespace tilejit::passes {

using ir::Op;

namespace {

/// True when every reader of `v` takes it from registers (none reads its shared-memory tile in place).
bool read_from_registers(const ir::Graph& g, const GraphInfo& info, NodeId v) {
  for (NodeId u : info.users[static_cast<size_t>(v)]) {
    const auto ops = g.operands(u);
    for (size_t k = 0; k < ops.size(); ++k)
      if (ops[k] == v && !reads_registers(g, u, k)) return false;
  }
  return true;
}

/// Product `d` of loop `f` as a CarriedProduct, when it can stay in flight into the next iteration: only the yield
/// reads it (in one slot), and it accumulates into that slot's loop-carried value, which nothing else reads,
/// directly or through one elementwise op of the same layout that only the dot reads (computed in place).
/// Not a product whose operand a is in registers (attention's P V): those registers are free for the compiler
/// to reuse once the product is issued, and when the next iteration's ops take them (ptxas gave them to the
/// next S accumulator in a generated test program) while the product still reads them, ptxas serializes every
/// wgmma of the kernel (C7514).
std::optional<CarriedProduct> carried(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const ValueLayouts& layout,
                                      const std::vector<AxisInfo>& axes, NodeId f, NodeId d) {
  if (mma.dots.at(d).a_in_registers()) return std::nullopt;
  const uint32_t body = ir::loop_body(g, f);
  const NodeId yield = g.region(body).nodes.back();
  const auto& users = info.users[static_cast<size_t>(d)];
  if (users.size() != 1 || users[0] != yield) return std::nullopt;
  const auto slots = g.operands(yield);
  if (std::count(slots.begin(), slots.end(), d) != 1) return std::nullopt;
  const auto k = static_cast<int64_t>(std::find(slots.begin(), slots.end(), d) - slots.begin());
  CarriedProduct c{d};
  for (NodeId b : g.region(body).nodes)
    if (g.node(b).op == Op::LoopArg && ir::attrs<ir::IndexAttrs>(g, b).index == k) c.arg = b;
  if (c.arg == ir::kNoNode) return std::nullopt;
  const auto only_user = [&](NodeId v, NodeId u) {
    return info.users[static_cast<size_t>(v)].size() == 1 && info.users[static_cast<size_t>(v)][0] == u;
  };
  const NodeId acc = g.operand(d, 2);
  if (acc == c.arg) return only_user(c.arg, d) ? std::optional(c) : std::nullopt;
  // acc = update(arg, ...), computed in place: an elementwise op of arg's type, shape and registers.
  const ir::Node& u = g.node(acc);
  const ValueLayout& la = layout.of[static_cast<size_t>(c.arg)];
  const ValueLayout& lu = layout.of[static_cast<size_t>(acc)];
  if (!is_elementwise(u.op) || u.op == Op::Cast || u.region != body || u.dtype != ir::DType::f32 ||
      u.dtype != g.node(c.arg).dtype || !(u.shape == g.node(c.arg).shape) || !only_user(c.arg, acc) || !only_user(acc, d))
    return std::nullopt;
  if (la.kind == ValueLayout::Uniform || lu.kind == ValueLayout::Uniform || !(la.dist == lu.dist)) return std::nullopt;
  // Each register is written from the operands' same register only (no run of equal registers read from its first).
  if (register_constancy(layout, axes, g, acc) != 1) return std::nullopt;
  c.update = acc;
  return c;
}

/// The pipeline of loop `f`, or nullopt with `why` saying what keeps it from being pipelined (empty when
/// the loop has no tensor-core dot and TMA load directly in its body: nothing to pipeline).
std::optional<PipelinedLoop> consider(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const TmaPlan& tma,
                                      const ValueLayouts& layout, const std::vector<AxisInfo>& axes, NodeId f, int stages,
                                      std::string& why) {
  const uint32_t body = ir::loop_body(g, f);
  const auto& nodes = g.region(body).nodes;
  PipelinedLoop p;
  p.stages = stages;
  p.ring_persists = info.in_loop(f);
  for (NodeId id : nodes) {
    if (g.node(id).op == Op::Dot && mma.dots.count(id)) p.dots.push_back(id);
    if (g.node(id).op == Op::DescLoad) p.loads.push_back(id);
  }
  if (p.dots.empty() || p.loads.empty()) return std::nullopt;
  p.dot = p.dots.back();
  // No tensor-core product in a nested loop or if (its waits would not be ordered with the ring's).
  for (const auto& [d, m] : mma.dots)
    if (info.inside(d, f) && std::find(p.dots.begin(), p.dots.end(), d) == p.dots.end()) {
      why = "the tensor-core dot at " + source_line(g, d) + " lies in a loop or if nested in it";
      return std::nullopt;
    }
  for (NodeId d : p.dots)
    if (auto c = carried(g, info, mma, layout, axes, f, d)) p.carried.push_back(*c);
  std::set<NodeId> address;
  std::function<bool(NodeId)> computable = [&](NodeId v) -> bool {
    const ir::Node& n = g.node(v);
    if (!info.inside(v, f)) return true;       // defined before the loop
    if (n.op == Op::LoopIndex) return true;
    if (n.region != body || n.shape.numel() != 1 || ir::kind_of(n.op) != ir::OpKind::Pure) return false;
    if (n.op == Op::LoopResult || n.op == Op::IfResult) return false;
    for (NodeId o : g.operands(v))
      if (!computable(o)) return false;
    address.insert(v);
    return true;
  };
  for (NodeId l : p.loads) {
    // Read only by the loop's dots (directly or through the transpose they absorb), or only from registers:
    // the threads copy such a tile out of its stage, which is refilled only after the next iteration's wait.
    const bool operand = std::any_of(p.dots.begin(), p.dots.end(), [&](NodeId d) {
      const MmaDot& m = mma.dots.at(d);
      return l == m.a.load || l == m.b.load;
    });
    if (!operand && !read_from_registers(g, info, l)) {
      why = "its TMA load at " + source_line(g, l) + " is read in place (by a view, a transpose, a store or a CUDA-core dot), " +
            "not only by tensor-core dots or register arithmetic";
      return std::nullopt;
    }
    const Descriptor& d = tma.descriptors[static_cast<size_t>(tma.of.at(l))];
    // A view made in a loop around this one (a persistent kernel's tile loop) is rebuilt before each run of it,
    // while no load of the ring is in flight: only one made in this loop changes under its pipeline.
    if (d.kind == DescKind::Device && d.rebuilt_in_loop && info.inside(d.build_at, f)) {
      why = "the descriptor of its TMA load at " + source_line(g, l) + " is built on the device in every iteration " +
            "(make the view before the loop)";
      return std::nullopt;
    }
    if (d.kind == DescKind::Array) {
      const auto s = detail::resolve_tensor(g, g.operand(l, 0));
      if (!computable(g.operand(s.array_elem, 1))) {
        why = "the tensor-array index of its TMA load at " + source_line(g, l) + " depends on values the loop computes";
        return std::nullopt;
      }
    }
    for (size_t k = 1; k < g.operands(l).size(); ++k)
      if (!computable(g.operand(l, static_cast<int>(k)))) {
        why = "the coordinates of its TMA load at " + source_line(g, l) +
              " depend on values the loop computes (only the loop index and values from before the loop can be " +
              "computed ahead)";
        return std::nullopt;
      }
    p.stage_bytes += g.node(l).shape.numel() * ir::size_of(g.node(l).dtype);
  }
  for (NodeId id : nodes)
    if (address.count(id)) p.address_nodes.push_back(id);
  return p;
}

/// True when loop `b` can use loop `a`'s ring: the same stages and loads, each load with the tile (type and shape)
/// and the descriptor swizzle of `a`'s, and none copied K-major by the threads (those copies alternate between
/// two buffers of their own loop).
bool same_ring(const ir::Graph& g, const MmaPlan& mma, const TmaPlan& tma, const PipelinedLoop& a, const PipelinedLoop& b) {
  if (a.stages != b.stages || a.loads.size() != b.loads.size()) return false;
  const auto swizzle = [&](NodeId l) { return tma.descriptors[static_cast<size_t>(tma.of.at(l))].swizzle; };
  for (size_t i = 0; i < a.loads.size(); ++i) {
    const ir::Node& x = g.node(a.loads[i]);
    const ir::Node& y = g.node(b.loads[i]);
    if (x.dtype != y.dtype || !(x.shape == y.shape) || swizzle(a.loads[i]) != swizzle(b.loads[i])) return false;
  }
  for (const auto& [d, m] : mma.dots)
    for (const MmaOperand* o : {&m.a, &m.b})
      if (o->k_major_copy && (std::count(a.loads.begin(), a.loads.end(), o->load) || std::count(b.loads.begin(), b.loads.end(), o->load)))
        return false;
  return true;
}

/// True when DescLoad `x` (outside the loop) loads what the loop's load `l` does: the same tensor, box, element
/// strides, fill and swizzle (its coordinates are l's at the index of the ring position it reads).
bool same_load(const ir::Graph& g, const TmaPlan& tma, NodeId x, NodeId l) {
  ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g, x), b = ir::attrs<ir::TmaAttrs>(g, l);
  a.ring = b.ring = ir::RingPosition::none;
  const auto swizzle = [&](NodeId n) { return tma.descriptors[static_cast<size_t>(tma.of.at(n))].swizzle; };
  return g.operand(x, 0) == g.operand(l, 0) && a.encode(Op::DescLoad) == b.encode(Op::DescLoad) &&
         g.node(x).dtype == g.node(l).dtype && g.node(x).shape == g.node(l).shape && swizzle(x) == swizzle(l);
}

/// The ifs around pipelined loop `f` whose loads read its ring's positions before and after it (overlap_products
/// marks them: TmaAttrs::ring), each load paired with the loop's load it repeats; both ifs or neither.
void attach_ring_positions(const ir::Graph& g, const TmaPlan& tma, NodeId f, LoopPipelinePlan& plan) {
  PipelinedLoop& p = plan.loops.at(f);
  const auto& nodes = g.region(g.node(f).region).nodes;
  const auto at = std::find(nodes.begin(), nodes.end(), f);
  NodeId before = ir::kNoNode, after = ir::kNoNode;  // the nearest region ops around the loop
  for (auto b = at; b != nodes.begin();)
    if (!ir::regions_of(g, *--b).empty()) {
      before = *b;
      break;
    }
  for (auto a = at + 1; a != nodes.end(); ++a)
    if (!ir::regions_of(g, *a).empty()) {
      after = *a;
      break;
    }
  std::vector<std::pair<NodeId, NodeId>> twins;
  const auto pair_up = [&](NodeId branch, ir::RingPosition want) {
    if (branch == ir::kNoNode || g.node(branch).op != Op::If) return false;
    bool any = false;
    for (NodeId x : g.region(ir::attrs<ir::IfAttrs>(g, branch).then_region).nodes) {
      if (g.node(x).op != Op::DescLoad || ir::attrs<ir::TmaAttrs>(g, x).ring != want) continue;
      NodeId twin = ir::kNoNode;
      int matches = 0;
      for (NodeId l : p.loads)
        if (same_load(g, tma, x, l)) twin = l, ++matches;
      if (matches != 1) return false;
      twins.push_back({x, twin});
      any = true;
    }
    return any;
  };
  if (!pair_up(before, ir::RingPosition::before_next_loop) || !pair_up(after, ir::RingPosition::after_previous_loop)) return;
  p.first = before;
  p.last = after;
  for (const auto& [x, twin] : twins) {
    plan.loop_of[x] = f;
    plan.ring_twin[x] = twin;
  }
}

}  // namespace

LoopPipelinePlan plan_loop_pipeline(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const TmaPlan& tma,
                                    const ValueLayouts& layout, const std::vector<AxisInfo>& axes, int stages) {
  LoopPipelinePlan plan;
  plan.stages = stages;
  if (stages < 2) return plan;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto f = static_cast<NodeId>(i);
    if (g.node(f).op != Op::For || info.position[i] < 0) continue;
    std::string why;
    if (auto p = consider(g, info, mma, tma, layout, axes, f, stages, why)) {
      for (NodeId l : p->loads) plan.loop_of[l] = f;
      for (const CarriedProduct& c : p->carried) {
        if (c.update == ir::kNoNode) continue;
        const auto ops = g.operands(c.update);
        plan.in_place[c.update] = static_cast<int>(std::find(ops.begin(), ops.end(), c.arg) - ops.begin());
      }
      plan.loops.emplace(f, std::move(*p));
    } else if (!why.empty()) {
      plan.not_pipelined.emplace(f, std::move(why));
    }
  }
  // Loads after a pipelined loop that need nothing from it: issued before it, awaited where they are. Loops in
  // program order, so that a load after several of them is issued (once) before the first.
  std::vector<NodeId> loops;
  for (const auto& [f, p] : plan.loops) loops.push_back(f);
  std::sort(loops.begin(), loops.end(),
            [&](NodeId a, NodeId b) { return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)]; });
  // A loop right after another pipelined loop of its region with the same loads uses that loop's ring.
  for (size_t i = 0; i < loops.size(); ++i) {
    PipelinedLoop& p = plan.loops.at(loops[i]);
    p.ring = loops[i];
    if (i == 0 || g.node(loops[i - 1]).region != g.node(loops[i]).region) continue;
    PipelinedLoop& prev = plan.loops.at(loops[i - 1]);
    if (!same_ring(g, mma, tma, prev, p)) continue;
    p.ring = prev.ring;
    p.ring_persists = plan.loops.at(p.ring).ring_persists = true;
  }
  for (NodeId f : loops) attach_ring_positions(g, tma, f, plan);
  for (NodeId f : loops) {
    PipelinedLoop& p = plan.loops.at(f);
    p.skip_when_empty = info.in_loop(f) && !p.carried.empty() && p.first == ir::kNoNode && p.last == ir::kNoNode;
  }
  for (NodeId f : loops) {
    if (info.in_loop(f)) continue;  // issued once: not for a loop that itself repeats
    const auto& nodes = g.region(g.node(f).region).nodes;
    const int at = info.position[static_cast<size_t>(f)];
    for (NodeId l : nodes) {
      if (g.node(l).op != Op::DescLoad || info.position[static_cast<size_t>(l)] <= at || plan.loop_of.count(l) || plan.early.count(l))
        continue;
      if (tma.descriptors[static_cast<size_t>(tma.of.at(l))].kind != DescKind::Host) continue;
      bool before = true;
      for (NodeId o : g.operands(l)) before = before && info.position[static_cast<size_t>(o)] >= 0 && info.position[static_cast<size_t>(o)] < at;
      if (!before) continue;
      plan.issued_before[f].push_back(l);
      plan.early.insert(l);
    }
  }
  return plan;
}

}  // namespace tilejit::passes
