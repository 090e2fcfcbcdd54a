// Shared-memory allocation: TMA tile buffers, mbarriers, the scratch arena, descriptor staging; how loads and stores use them.
// allocate_shared runs in two halves: TileUsePlanner decides which buffers the tiles take and how every load and
// store uses them; allocate_regions sizes the scratch arena and places everything.
#include <algorithm>
#include <deque>
#include <unordered_set>

#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/layout/shared_layout.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/passes/warp_roles.h"
#include "tilejit/tma_rules.h"

namespace tilejit::passes {

using ir::Op;

namespace {

constexpr int kTileAlign = 128;  // TMA destination / source alignment without swizzle

int align_up(int v, int a) { return (v + a - 1) / a * a; }

int tile_bytes(const ir::Graph& g, NodeId value, ir::DType dtype) {
  return static_cast<int>(g.node(value).shape.numel()) * ir::size_of(dtype);
}

/// Operand slots of `user` that name `value`.
std::vector<size_t> slots_of(const ir::Graph& g, NodeId user, NodeId value) {
  std::vector<size_t> s;
  const auto ops = g.operands(user);
  for (size_t k = 0; k < ops.size(); ++k)
    if (ops[k] == value) s.push_back(k);
  return s;
}

}  // namespace

bool reads_registers(const ir::Graph& g, NodeId user, size_t slot) {
  switch (g.node(user).op) {
    case Op::Permute: case Op::Reshape: case Op::ConvertLayout:
      return false;
    case Op::Dot:
      return slot == 2;
    case Op::DescStore:
      return slot + 1 != g.operands(user).size();
    // The other ops read their operands from registers.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::Broadcast: case Op::DescLoad: case Op::DescPrefetch:
      return true;
  }
  return true;
}

std::vector<int> reduction_scratch(const ir::Graph& g, const ValueLayouts& layout, NodeId id) {
  const ir::Node& n = g.node(id);
  const NodeId x0 = g.operand(id, 0);
  const ValueLayout& x = layout.of[static_cast<size_t>(x0)];
  if (x.kind != ValueLayout::Distributed) return {};
  const bool whole = n.shape.numel() == 1;  // every thread keeps the one result
  const int warps = layout::plan_reduction(x.dist, ir::reduction_axis(g, id), whole).warps;
  if (warps == 1) return {};
  const int slots = static_cast<int>(n.shape.numel()) * warps;
  std::vector<ir::DType> types;
  for (NodeId v : g.operands(id)) types.push_back(g.node(v).dtype);
  if (n.op == Op::ArgMax) types.push_back(ir::DType::i32);
  std::vector<int> offsets;
  int at = 0;
  for (ir::DType t : types) {
    offsets.push_back(at);
    at = align_up(at + slots * ir::size_of(t), 16);
  }
  if (n.op == Op::Reduce && x.dist.padded()) {
    offsets.push_back(at);
    at = align_up(at + slots, 16);
  }
  offsets.push_back(at);
  return offsets;
}

int scratch_bytes_of(const ir::Graph& g, const ValueLayouts& layout, const SmemPlan& smem, const MmaPlan& mma, NodeId id) {
  const ir::Node& n = g.node(id);
  auto staged = [&](NodeId v) -> int {
    if (layout.of[static_cast<size_t>(v)].kind != ValueLayout::Distributed) return 0;
    if (smem.resident.count(v)) return 0;
    return tile_bytes(g, v, g.node(v).dtype);
  };
  switch (n.op) {
    case Op::Permute:
    case Op::ConvertLayout: {
      const NodeId x = g.operand(id, 0);
      const auto st = smem.staging.find(id);
      if (st == smem.staging.end()) return staged(x);
      return static_cast<int>(st->second.bytes());
    }
    case Op::Reshape: {
      const ValueLayout &x = layout.of[static_cast<size_t>(g.operand(id, 0))], &y = layout.of[static_cast<size_t>(id)];
      if (smem.resident.count(id) || x.kind != ValueLayout::Distributed || y.kind != ValueLayout::Distributed) return 0;
      return layout::same_registers(x.dist, y.dist) ? 0 : staged(g.operand(id, 0));
    }
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax: case Op::Reduce: {
      const std::vector<int> parts = reduction_scratch(g, layout, id);
      return parts.empty() ? 0 : parts.back();
    }
    case Op::Dot: {
      if (mma.dots.count(id)) return 0;  // wgmma reads its tiles in place and a from registers
      const int a = staged(g.operand(id, 0)), b = staged(g.operand(id, 1));
      return a ? align_up(a, 16) + b : b;
    }
    // The other ops do not stage values through the scratch arena.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::Broadcast: case Op::CombineArg: case Op::ReduceResult:
      return 0;
  }
  return 0;
}

namespace {

/// The first half of allocate_shared: which buffers the tiles take and how every TMA load and store uses them,
/// the mbarriers, and the tiles staged through the scratch arena. Buffers are numbered in the order they are
/// added (loads, K-major copies, stores), which is the order the emitter names them in (tj_buf<k>).
class TileUsePlanner {
 public:
  TileUsePlanner(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma, const MmaPlan& mma,
                 const LoopPipelinePlan& pipe, const WarpRoles& roles)
      : g_(g), info_(info), layout_(layout), tma_(tma), mma_(mma), pipe_(pipe), roles_(roles) {
    for (size_t i = 0; i < g.size(); ++i)
      if (info.position[i] >= 0) order_.push_back(static_cast<NodeId>(i));
    std::sort(order_.begin(), order_.end(), [&](NodeId a, NodeId b) {
      return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)];
    });
  }

  /// Every decision in order; the plan's offsets and sizes are left to allocate_regions.
  SmemPlan run() {
    plan_loads();
    plan_k_major_copies();
    plan_ring_barriers();
    plan_tile_readers();
    plan_stores();
    plan_staging();
    return std::move(plan_);
  }

  /// The reachable nodes in program order.
  const std::vector<NodeId>& order() const { return order_; }

 private:
  int add_buffer(NodeId node, int bytes, std::string role) {
    plan_.buffers.push_back(SmemBuffer{0, bytes, kTileAlign, node, std::move(role), ir::kNoNode, {}});
    return static_cast<int>(plan_.buffers.size() - 1);
  }

  void plan_loads();
  void plan_load(NodeId id);
  NodeId shared_ring_load(NodeId load) const;
  void plan_k_major_copies();
  void plan_ring_barriers();
  void plan_tile_readers();
  void plan_stores();
  /// A store's tile written in place over the tile it was computed from, or kNoNode (see plan_stores).
  NodeId in_place_source(NodeId store, NodeId value) const;
  void plan_staging();

  const ir::Graph& g_;
  const GraphInfo& info_;
  const ValueLayouts& layout_;
  const TmaPlan& tma_;
  const MmaPlan& mma_;
  /// Whether value `v` is laid out as the accumulator of a dot with M below 64, padding rows included.
  bool padded_accumulator(NodeId v) const {
    const layout::Layout& lv = layout_.of[static_cast<size_t>(v)].dist;
    if (layout_.of[static_cast<size_t>(v)].kind != ValueLayout::Distributed || !lv.padded()) return false;
    for (const auto& [d, m] : mma_.dots)
      if (m.tiling.m < 64 && layout_.of[static_cast<size_t>(d)].dist == lv) return true;
    return false;
  }
  /// The bytes wgmma reads past the end of load `id`'s tile (MmaPlan::overrun).
  int overrun(NodeId id) const {
    const auto it = mma_.overrun.find(id);
    return it == mma_.overrun.end() ? 0 : it->second;
  }
  const LoopPipelinePlan& pipe_;
  const WarpRoles& roles_;
  std::vector<NodeId> order_;
  SmemPlan plan_;
  std::unordered_map<NodeId, NodeId> root_load_;      // resident value -> its DescLoad
  std::unordered_map<NodeId, int> other_readers_;     // load -> readers of its buffer besides its own register copy
  std::unordered_set<NodeId> in_place_taken_;         // loads whose buffer an in-place store already writes
};

// Loads and the values readable in place from their tiles (the tile and reshapes of it).
void TileUsePlanner::plan_loads() {
  for (NodeId id : order_) {
    const ir::Node& n = g_.node(id);
    if (n.op == Op::DescLoad) {
      if (!plan_.loads.count(id)) plan_load(id);  // a ring's load may be planned early, for a load outside it
    } else if (mma_.absorbed.count(id)) {  // a transpose wgmma reads in place (its transpose bit)
      plan_.resident[id] = plan_.resident.at(g_.operand(id, 0));
      root_load_[id] = root_load_[g_.operand(id, 0)];
    } else if (n.op == Op::Reshape && plan_.resident.count(g_.operand(id, 0)) &&
               layout_.of[static_cast<size_t>(id)].kind == ValueLayout::Distributed) {
      plan_.resident[id] = plan_.resident[g_.operand(id, 0)];
      root_load_[id] = root_load_[g_.operand(id, 0)];
    }
  }
}

// The buffer (a ring's, shared or its own) and barrier of TMA load `id`.
void TileUsePlanner::plan_load(NodeId id) {
  const ir::Node& n = g_.node(id);
  LoadPlan lp;
  const bool ring = pipe_.loop_of.count(id) > 0;
  lp.stages = ring ? pipe_.loops.at(pipe_.loop_of.at(id)).stages : 1;
  if (const auto twin = pipe_.ring_twin.find(id); twin != pipe_.ring_twin.end()) {
    // A load outside its loop that reads a ring position (overlap_products' first or last block): the plan of
    // the loop's load it repeats (its buffer and the ring's barriers), made here when the loop comes later.
    if (!plan_.loads.count(twin->second)) plan_load(twin->second);
    lp = plan_.loads.at(twin->second);
  } else if (const NodeId owner = ring ? shared_ring_load(id) : ir::kNoNode; owner != ir::kNoNode) {
    if (!plan_.loads.count(owner)) plan_load(owner);
    lp.buffer = plan_.loads.at(owner).buffer;  // a loop sharing an earlier loop's ring: that load's buffer
    check_internal(overrun(id) <= overrun(owner), "smem_alloc: a loop sharing a ring reads further past its tiles");
  } else {
    const int past = overrun(id);
    lp.buffer = add_buffer(id, tile_bytes(g_, id, n.dtype) * lp.stages + past, ring ? "tma.load ring" : "tma.load");
    // A swizzled tile (a wgmma operand) starts on its swizzle's repeat: 8 rows of the swizzle width.
    if (const int sw = tma_.descriptors[static_cast<size_t>(tma_.of.at(id))].swizzle; sw > 0)
      plan_.buffers[static_cast<size_t>(lp.buffer)].align = 8 * sw;
  }
  lp.barrier = ring ? -1 : plan_.num_barriers++;  // a ring uses its loop's barriers
  lp.repeated = info_.in_loop(id);
  plan_.loads[id] = lp;
  plan_.resident[id] = lp.buffer;
  root_load_[id] = id;
}

// The load of the ring's own loop whose buffer a load of a loop sharing that ring takes (the one in the same
// place among the loop's loads), or kNoNode when the load's loop owns its ring.
NodeId TileUsePlanner::shared_ring_load(NodeId load) const {
  const NodeId f = pipe_.loop_of.at(load);
  const PipelinedLoop& p = pipe_.loops.at(f);
  if (p.ring == f) return ir::kNoNode;
  const auto k = std::find(p.loads.begin(), p.loads.end(), load) - p.loads.begin();
  return pipe_.loops.at(p.ring).loads.at(static_cast<size_t>(k));
}

// K-major copies of wgmma operands that wgmma cannot read as loaded (tf32 / 8-bit, M/N-major).
void TileUsePlanner::plan_k_major_copies() {
  for (NodeId id : order_) {
    const auto d = mma_.dots.find(id);
    if (d == mma_.dots.end()) continue;
    for (const MmaOperand* o : {&d->second.a, &d->second.b}) {
      if (!o->k_major_copy || plan_.k_major_copies.count(o->load)) continue;
      const int copies = pipe_.loop_of.count(o->load) ? 2 : 1;
      const int buffer = add_buffer(o->load, static_cast<int>(o->tile.bytes()) * copies, "K-major copy");
      plan_.buffers[static_cast<size_t>(buffer)].align = 8 * o->tile.swizzle;  // the swizzle's repeat
      plan_.k_major_copies[o->load] = buffer;
    }
  }
}

// The "full" barriers of every pipelined loop's ring and, with warp roles, the "empty" ones of the producer's loop.
void TileUsePlanner::plan_ring_barriers() {
  for (NodeId id : order_) {
    auto it = pipe_.loops.find(id);
    if (it == pipe_.loops.end()) continue;
    if (const NodeId owner = it->second.ring; owner != id) {  // the barriers of the ring it shares
      plan_.ring_barriers[id] = plan_.ring_barriers.at(owner);
      if (roles_.serves(id)) plan_.empty_barriers[id] = plan_.empty_barriers.at(owner);
      continue;
    }
    plan_.ring_barriers[id] = plan_.num_barriers;
    plan_.num_barriers += it->second.stages;
    if (!roles_.serves(id)) continue;
    plan_.empty_barriers[id] = plan_.num_barriers;
    for (int k = 0; k < it->second.stages; ++k) plan_.barrier_arrivals[plan_.num_barriers++] = roles_.consumer_threads / 32;
  }
}

// Register copies and readers of each tile.
void TileUsePlanner::plan_tile_readers() {
  std::unordered_map<NodeId, bool> needs_regs;  // resident value -> some user wants registers
  for (NodeId id : order_) {
    if (!plan_.resident.count(id)) continue;
    bool regs = false;
    for (NodeId u : info_.users[static_cast<size_t>(id)])
      for (size_t k : slots_of(g_, u, id)) regs = regs || reads_registers(g_, u, k);
    needs_regs[id] = regs;
    if (regs) plan_.register_copies.insert(id);
    const NodeId load = root_load_[id];
    if (id != load) other_readers_[load] += 1;  // an alias reads the tile (its own copy or its users)
    for (NodeId u : info_.users[static_cast<size_t>(id)])
      for (size_t k : slots_of(g_, u, id))
        if (!reads_registers(g_, u, k) && !(g_.node(u).op == Op::Reshape && plan_.resident.count(u))) other_readers_[load] += 1;
  }
  for (auto& [id, lp] : plan_.loads) {
    lp.registers = needs_regs[id];
    bool others = false;
    for (auto& [v, l] : root_load_)
      if (l == id && v != id) others = true;
    for (NodeId u : info_.users[static_cast<size_t>(id)]) {
      const Op op = g_.node(u).op;
      for (size_t k : slots_of(g_, u, id))
        if (!reads_registers(g_, u, k) && op != Op::DescStore) others = true;
    }
    lp.all_threads_wait = lp.registers || others;
  }
}

// Stores.
void TileUsePlanner::plan_stores() {
  for (NodeId id : order_) {
    const ir::Node& n = g_.node(id);
    if (n.op != Op::DescStore) continue;
    StorePlan sp;
    const NodeId v = g_.operands(id).back();
    sp.repeated = info_.in_loop(id);
    // A swizzled store tile is written by the threads in its own buffer (collect_descriptors chose it).
    const int swizzle = tma_.descriptors[static_cast<size_t>(tma_.of.at(id))].swizzle;
    if (swizzle > 0) {
      sp.mode = StorePlan::Staged;
      sp.padding_sink = padded_accumulator(v);
      sp.buffer = add_buffer(id, tile_bytes(g_, v, n.dtype) + (sp.padding_sink ? StorePlan::kPaddingSink : 0), "tma.store");
      plan_.buffers[static_cast<size_t>(sp.buffer)].align = 8 * swizzle;  // the swizzle's repeat
      const layout::Layout& lv = layout_.of[static_cast<size_t>(v)].dist;
      sp.swizzled = layout::split_swizzled_writes(lv, layout::SharedLayout{lv.shape(), ir::size_of(n.dtype), swizzle, 0});
      plan_.stores[id] = sp;
      continue;
    }
    if (plan_.resident.count(v)) {
      sp.mode = StorePlan::FromLoad;
      sp.load = root_load_[v];
      sp.buffer = plan_.resident[v];
      plan_.loads[sp.load].read_by_tma_store = true;
      plan_.stores[id] = sp;
      continue;
    }
    const NodeId chosen = in_place_source(id, v);
    if (chosen != ir::kNoNode) {
      sp.mode = StorePlan::InPlace;
      sp.load = chosen;
      sp.buffer = plan_.loads[chosen].buffer;
      in_place_taken_.insert(chosen);
      plan_.loads[chosen].read_by_tma_store = true;
    } else {
      sp.mode = StorePlan::Staged;
      sp.padding_sink = padded_accumulator(v);
      sp.buffer = add_buffer(id, tile_bytes(g_, v, n.dtype) + (sp.padding_sink ? StorePlan::kPaddingSink : 0), "tma.store");
    }
    plan_.stores[id] = sp;
  }
  // A FromLoad store of a tile chosen for an in-place store before it was seen
  // cannot happen: in-place needs a tile without other readers, stores included.
}

// In place: the value is an elementwise function of a tile loaded in the same
// region, with the same shape, element size and register layout, and that
// tile's buffer is read by nothing else.
NodeId TileUsePlanner::in_place_source(NodeId store, NodeId v) const {
  const ir::Node& n = g_.node(store);
  NodeId chosen = ir::kNoNode;
  std::deque<NodeId> work{v};
  std::unordered_set<NodeId> seen{v};
  const ValueLayout& lv = layout_.of[static_cast<size_t>(v)];
  while (!work.empty() && chosen == ir::kNoNode && lv.kind == ValueLayout::Distributed) {
    const NodeId x = work.front();
    work.pop_front();
    const ir::Node& xn = g_.node(x);
    if (xn.op == Op::DescLoad) {
      const auto lp = plan_.loads.find(x);
      const ValueLayout& lx = layout_.of[static_cast<size_t>(x)];
      const auto readers = other_readers_.find(x);
      const bool ok = lp != plan_.loads.end() && xn.region == n.region && xn.shape == g_.node(v).shape &&
                      ir::size_of(xn.dtype) == ir::size_of(n.dtype) && lx.dist == lv.dist && lp->second.registers &&
                      (readers == other_readers_.end() || readers->second == 0) && !lp->second.read_by_tma_store &&
                      !in_place_taken_.count(x);
      if (ok) chosen = x;
      continue;
    }
    if (!is_elementwise(xn.op)) continue;
    for (NodeId o : g_.operands(x))
      if (g_.node(o).shape == g_.node(v).shape && seen.insert(o).second) work.push_back(o);
  }
  return chosen;
}

// Conversions and permutes staged through the scratch arena: rows padded or units swizzled where that removes
// bank conflicts (a transpose read down the columns of its staged tile hits one bank from every lane without it).
void TileUsePlanner::plan_staging() {
  for (NodeId id : order_) {
    const Op op = g_.node(id).op;
    if (op != Op::ConvertLayout && op != Op::Permute) continue;
    const NodeId x = g_.operand(id, 0);
    const ValueLayout &from = layout_.of[static_cast<size_t>(x)], &to = layout_.of[static_cast<size_t>(id)];
    if (from.kind != ValueLayout::Distributed || to.kind != ValueLayout::Distributed || plan_.resident.count(x) ||
        plan_.resident.count(id) || (op == Op::ConvertLayout && from.dist == to.dist))
      continue;
    const layout::Layout readers =
        op == Op::Permute ? layout::permute_sources(to.dist, ir::attrs<ir::PermuteAttrs>(g_, id).perm, g_.node(x).shape) : to.dist;
    const layout::SharedLayout tile = layout::staging_layout(from.dist, readers, ir::size_of(g_.node(x).dtype));
    if (tile.pad_elems > 0 || tile.xor_unit > 0) plan_.staging[id] = tile;
  }
}

/// The second half of allocate_shared: the scratch arena's size, every offset (tiles by liveness, descriptor
/// staging, scratch, barriers) and the total, refused when it exceeds what one program may have.
void allocate_regions(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma, const MmaPlan& mma,
                      const LoopPipelinePlan& pipe, const std::vector<NodeId>& order, SmemPlan& plan) {
  for (NodeId id : order) plan.scratch_bytes = std::max(plan.scratch_bytes, scratch_bytes_of(g, layout, plan, mma, id));

  // Offsets: tiles (by liveness), descriptor staging, scratch, barriers.
  int offset = place_buffers(g, info, mma, pipe, plan);
  if (tma.num_device > 0) {
    offset = align_up(offset, 128);
    plan.desc_stage_offset = offset;
    offset += 128 * tma.num_device;
  }
  if (plan.scratch_bytes > 0) {
    offset = align_up(offset, 128);
    plan.scratch_offset = offset;
    offset += plan.scratch_bytes;
  }
  if (plan.exchange_offset >= 0) {  // its size, until placed here
    const int bytes = plan.exchange_offset;
    offset = align_up(offset, 8);
    plan.exchange_offset = offset;
    offset += bytes;
  }
  if (plan.num_barriers > 0) {
    offset = align_up(offset, 8);
    plan.barrier_offset = offset;
    offset += 8 * plan.num_barriers;
  }
  plan.total_bytes = align_up(offset, 16);
  if (plan.total_bytes > tma::kMaxSharedBytes) {
    // Name the op with the largest share.
    NodeId culprit = ir::kNoNode;
    int most = plan.scratch_bytes;
    std::string what = "the scratch memory of block operations";
    for (const SmemBuffer& b : plan.buffers)
      if (b.bytes > most) most = b.bytes, culprit = b.node, what = b.role + " tiles";
    if (culprit == ir::kNoNode)
      for (NodeId id : order)
        if (scratch_bytes_of(g, layout, plan, mma, id) == plan.scratch_bytes) {
          culprit = id;
          break;
        }
    const ir::Location& l = culprit == ir::kNoNode ? g.kernel_location : g.location(culprit);
    throw UserError("shared memory: the kernel needs more than one sm_90 program can have (largest: " + what + ", " +
                        std::to_string(most) + " bytes); use smaller blocks",
                    std::to_string(plan.total_bytes) + " bytes", std::to_string(tma::kMaxSharedBytes) + " bytes", l.file,
                    l.line);
  }
}

}  // namespace

SmemPlan allocate_shared(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma,
                         const MmaPlan& mma, const LoopPipelinePlan& pipe, const WarpRoles& roles, const ClusterPlan& cluster) {
  TileUsePlanner tiles(g, info, layout, tma, mma, pipe, roles);
  SmemPlan plan = tiles.run();
  if (cluster.multicast()) {
    const int stages = pipe.loops.at(cluster.loop).stages;
    if (roles.serves(cluster.loop)) {
      // The producer's empty barriers count both programs' consumer warps (ClusterPlan: the consumers arrive on
      // the issuing program's barrier themselves).
      for (int k = 0; k < stages; ++k) plan.barrier_arrivals[plan.empty_barriers.at(cluster.loop) + k] = 2 * (roles.consumer_threads / 32);
    } else {
      plan.cluster_empty = plan.num_barriers;
      for (int k = 0; k < stages; ++k) plan.barrier_arrivals[plan.num_barriers++] = 2;
    }
    plan.exchange_barrier = plan.num_barriers++;
    plan.exchange_offset = 8 * static_cast<int>(std::max<size_t>(1, cluster.keys.size()));  // placed by allocate_regions
  }
  if (roles.on() && !roles.awaited_builds.empty()) {
    plan.built_barrier = plan.num_barriers++;
    plan.barrier_arrivals[plan.built_barrier] = static_cast<int>(roles.awaited_builds.size());
  }
  allocate_regions(g, info, layout, tma, mma, pipe, tiles.order(), plan);
  return plan;
}

}  // namespace tilejit::passes
