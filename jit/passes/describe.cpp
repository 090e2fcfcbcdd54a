// The plans the generated header prints, in readable text: descriptors, matrix products, pipelines, shared
// memory and register layouts, one function per plan, and `describe`, which composes them.
#include <algorithm>

#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"

namespace tilejit::passes {

namespace {
std::string dims(const std::array<int32_t, ir::kMaxRank>& a, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(a[static_cast<size_t>(i)]);
  return s + "]";
}

std::string descriptor_line(const ir::Graph& g, const Descriptor& d) {
  std::string line = "  ";
  line +=
      d.kind == DescKind::Device ? "workspace slot " + std::to_string(d.slot) : "d" + std::to_string(d.slot);
  line += ": " + std::string(name_of(d.kind));
  if (d.param >= 0) line += ", param " + g.params[static_cast<size_t>(d.param)].name;
  if (d.view != ir::kNoNode)
    line += ", view %" + std::to_string(d.view) + " (" + source_line(g, d.view) + ")";
  if (!d.merge_groups.empty()) {
    line += ", merged {";
    for (size_t k = 0; k < d.merge_groups.size(); ++k)
      line += (k ? ", " : "") + std::to_string(d.merge_groups[k]);
    line += "}";
  }
  line += ", " + std::string(ir::name_of(d.dtype)) + ", box " + dims(d.box, d.rank) + ", estride " +
          dims(d.estride, d.rank) + ", fill " + (d.fill ? "nan" : "zero");
  if (d.swizzle > 0)
    line += ", " + std::to_string(d.swizzle) + "B swizzle (" +
            (d.used_by_store ? "conflict-free writes of the stored tile" : "a wgmma operand") + ")";
  if (d.pieces > 1)
    line += ", " + std::to_string(d.pieces) + " operations per access along dimension " +
            std::to_string(d.split_dim) + " (the box is one piece of the tile)";
  if (d.kind == DescKind::Device)
    line += d.build_at == ir::kNoNode ? ", built at kernel start"
                                      : std::string(", built at ") + source_line(g, d.build_at) +
                                            (d.rebuilt_in_loop ? " (every iteration)" : "");
  return line + "\n";
}

std::string operand_text(const MmaOperand& o) {
  if (o.load == ir::kNoNode) return "%" + std::to_string(o.value) + " in registers";
  if (o.k_major_copy)
    return "K-major " + std::to_string(o.tile.swizzle) +
           "B-swizzled copy (by the threads) of the M/N-major tile of %" + std::to_string(o.load);
  return std::string(o.mn_major ? "MN" : "K") + "-major " + std::to_string(o.tile.swizzle) +
         "B-swizzled tile of %" + std::to_string(o.load);
}

std::string pipelined_loop_line(const Lowered& l, NodeId f, const PipelinedLoop& p) {
  const ir::Graph& g = l.graph;
  std::string loads;
  for (NodeId ld : p.loads) loads += (loads.empty() ? "%" : ", %") + std::to_string(ld);
  std::string out = "software pipeline: loop %" + std::to_string(f) + " (" + source_line(g, f) + "), " +
                    std::to_string(p.stages) + " stages of {" + loads + "} (" +
                    std::to_string(p.stage_bytes) + " bytes each), issued " + std::to_string(p.stages - 1) +
                    " iteration(s) ahead; one mbarrier per stage from " +
                    std::to_string(l.smem.ring_barriers.at(f));
  out +=
      "; " + std::to_string(p.dots.size()) + " product(s), " +
      (p.in_flight()       ? (p.dots.size() == 1 ? "kept in flight into the next iteration" : "all kept in flight into the next iteration")
       : p.carried.empty() ? "each awaited before its first use"
                           : std::to_string(p.carried.size()) + " kept in flight into the next iteration, the others awaited before their first use");
  if (p.ring != f) out += "; uses the ring (buffers, mbarriers, position) of loop %" + std::to_string(p.ring);
  if (p.first != ir::kNoNode)
    out += "; the ring also serves the block before it (if %" + std::to_string(p.first) + ") and the block after it (if %" +
           std::to_string(p.last) + ")";
  if (p.ring_persists && l.info.in_loop(f)) out += "; the ring position carries over from one run of the loop to the next";
  if (p.skip_when_empty) out += "; skipped with the wait for its products when it runs no iteration";
  if (auto early = l.pipe.issued_before.find(f); early != l.pipe.issued_before.end()) {
    out += "; issued before it (used after it):";
    for (NodeId ld : early->second) out += " %" + std::to_string(ld);
  }
  return out + "\n";
}

/// The pointer loads prefetch_loads issues one iteration ahead (Load attribute `ahead`), in node order.
std::string register_prefetch(const Lowered& l) {
  const ir::Graph& g = l.graph;
  std::string out;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const NodeId f = l.info.loop[i];
    if (l.info.position[i] < 0 || f == ir::kNoNode || g.node(id).op != ir::Op::Load ||
        ir::attrs<ir::AccessAttrs>(g, id).ahead != ir::LoadAhead::next_iteration)
      continue;
    out += "register prefetch: loop %" + std::to_string(f) + " (" + source_line(g, f) + ") loads %" +
           std::to_string(id) + " (" + source_line(g, id) +
           ") one iteration ahead, the first iteration's before the loop\n";
  }
  return out;
}

std::string range(int begin, int64_t end) {
  return "  [" + std::to_string(begin) + ", " + std::to_string(end) + ") ";
}
}  // namespace

std::string describe_descriptors(const Lowered& l) {
  std::string out = "descriptors:\n";
  if (l.tma.descriptors.empty()) out += "  (none)\n";
  for (const Descriptor& d : l.tma.descriptors) out += descriptor_line(l.graph, d);
  return out;
}

std::string describe_mma(const Lowered& l) {
  const ir::Graph& g = l.graph;
  std::string out;
  if (!l.mma.dots.empty() || !l.mma.cuda_cores.empty()) out += "matrix products:\n";
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const auto it = l.mma.dots.find(id);
    if (it == l.mma.dots.end()) continue;
    const MmaDot& m = it->second;
    out += "  %" + std::to_string(id) + " (" + source_line(g, id) + "): " + m.instruction() + "; " +
           m.tiling.str() + "; a " + operand_text(m.a) + ", b " + operand_text(m.b) + "\n";
  }
  for (const auto& [id, why] : l.mma.cuda_cores)
    out += "  %" + std::to_string(id) + " (" + source_line(g, id) +
           "): CUDA cores (a scalar loop over shared memory), because " + why + "\n";
  return out;
}

std::string describe_loop_pipeline(const Lowered& l) {
  std::string out;
  std::vector<NodeId> loops;  // in node order: the text does not depend on the map's hashing
  for (const auto& [f, p] : l.pipe.loops) loops.push_back(f);
  std::sort(loops.begin(), loops.end());
  for (NodeId f : loops) out += pipelined_loop_line(l, f, l.pipe.loops.at(f));
  std::vector<std::pair<NodeId, std::string>> refused(l.pipe.not_pipelined.begin(),
                                                      l.pipe.not_pipelined.end());
  std::sort(refused.begin(), refused.end());
  for (const auto& [f, why] : refused)
    out += "not pipelined: loop %" + std::to_string(f) + " (" + source_line(l.graph, f) + "), because " +
           why + "\n";
  return out + register_prefetch(l);
}

std::string describe_warp_roles(const Lowered& l) {
  const WarpRoles& r = l.roles;
  if (!r.on()) return r.not_applied.empty() ? "" : "warp roles: none (warp_specialize not applied, because " + r.not_applied + ")\n";
  const auto regs = [](int n) { return n > 0 ? ", " + std::to_string(n) + " registers (setmaxnreg)" : std::string(); };
  const int stages = l.pipe.loops.at(r.loop).stages;
  std::string loops = r.loops.size() > 1 ? "loops" : "loop";
  for (size_t k = 0; k < r.loops.size(); ++k)
    loops += (k ? ", %" : " %") + std::to_string(r.loops[k]) + " (" + source_line(l.graph, r.loops[k]) + ")";
  std::string awaited;
  if (!r.awaited_builds.empty()) {
    awaited = "; the producer waits on mbarrier " + std::to_string(l.smem.built_barrier) + " for the consumers' build" +
              (r.awaited_builds.size() > 1 ? "s" : "") + " at";
    for (size_t k = 0; k < r.awaited_builds.size(); ++k)
      awaited += (k ? ", %" : " %") + std::to_string(r.awaited_builds[k]) + " (" + source_line(l.graph, r.awaited_builds[k]) + ")";
    awaited += " (descriptor slot" + std::string(r.acquired_slots.size() > 1 ? "s" : "");
    for (size_t k = 0; k < r.acquired_slots.size(); ++k) awaited += (k ? ", " : " ") + std::to_string(r.acquired_slots[k]);
    awaited += ")";
  }
  return "warp roles: producer warpgroup, threads " + std::to_string(r.consumer_threads) + "-" +
         std::to_string(r.threads() - 1) + regs(r.producer_registers) + ": thread " + std::to_string(r.consumer_threads) +
         " issues every TMA load of " + loops + ", refilling a stage once its empty mbarrier completes (mbarriers " + std::to_string(l.smem.empty_barriers.at(r.loop)) + "-" +
         std::to_string(l.smem.empty_barriers.at(r.loop) + stages - 1) + ", one arrival per consumer warp" +
         (l.cluster.multicast() && l.cluster.loop == r.loop ? " of both programs of the cluster" : "") + "); consumers, threads 0-" +
         std::to_string(r.consumer_threads - 1) + regs(r.consumer_registers) +
         ": every other op, no CTA barrier in the loop" + awaited + "\n";
}

std::string describe_turns(const Lowered& l) {
  const WarpgroupTurns& t = l.turns;
  if (!t.on()) return t.not_applied.empty() ? "" : "warpgroup turns: none (pingpong not applied, because " + t.not_applied + ")\n";
  std::string loops;
  for (NodeId f : t.loops) loops += (loops.empty() ? "%" : ", %") + std::to_string(f) + " (" + source_line(l.graph, f) + ")";
  return "warpgroup turns: the " + std::to_string(t.warpgroups) + " consumer warpgroups issue the products of loop" +
         (t.loops.size() > 1 ? "s " : " ") + loops + " in turns, warpgroup w waiting on named barrier " +
         std::to_string(WarpgroupTurns::first_barrier) + " + w and passing the turn to w + 1 (mod " +
         std::to_string(t.warpgroups) + ")\n";
}

std::string describe_cluster(const Lowered& l) {
  const ClusterPlan& c = l.cluster;
  if (c.size() == 1) return "";
  const std::string shape = "cluster: " + std::to_string(c.x) + " x " + std::to_string(c.y) + " programs";
  if (!c.multicast()) return shape + ", no load multicast, because " + c.not_applied + "\n";
  const auto key_names = [&](const std::vector<int>& keys) {
    std::string s;
    for (int k : keys) s += (s.empty() ? "%" : ", %") + std::to_string(c.keys[static_cast<size_t>(k)]);
    return s.empty() ? std::string("(constants only)") : s;
  };
  std::string out = shape + "; loop %" + std::to_string(c.loop) + " (" + source_line(l.graph, c.loop) +
                    "): a load is multicast when both programs' values of what its coordinates need are equal "
                    "(compared once, before the loop; " +
                    (l.smem.cluster_empty >= 0
                         ? "mbarriers " + std::to_string(l.smem.cluster_empty) + "-" +
                               std::to_string(l.smem.cluster_empty + l.pipe.loops.at(c.loop).stages - 1) +
                               ": cluster empty, two arrivals; "
                         : std::string("the producer's empty barriers count both programs' consumer warps; ")) +
                    "mbarrier " + std::to_string(l.smem.exchange_barrier) + ": the exchange)\n";
  for (const MulticastLoad& m : c.loads)
    out += "  load %" + std::to_string(m.load) + " (" + source_line(l.graph, m.load) + "): issued by rank " +
           std::to_string(m.issuer) + ", compares " + key_names(m.keys) + "\n";
  return out;
}

std::string describe_shared_memory(const Lowered& l) {
  const SmemPlan& s = l.smem;
  std::string out = "shared memory: " + std::to_string(s.total_bytes) + " bytes\n";
  for (const SmemBuffer& b : s.buffers) {
    out += range(b.offset, b.offset + b.bytes) + b.role + " %" + std::to_string(b.node) + " (" +
           source_line(l.graph, b.node) + ")";
    if (const auto past = l.mma.overrun.find(b.node); past != l.mma.overrun.end() && l.smem.loads.count(b.node) &&
                                                      l.smem.loads.at(b.node).buffer == &b - s.buffers.data())
      out += ", and " + std::to_string(past->second) + " bytes after it that the m64 wgmma reads for its padding rows";
    if (!b.reuses.empty()) {
      out += ", reusing the bytes of";
      for (size_t k = 0; k < b.reuses.size(); ++k) {
        const SmemBuffer& o = s.buffers[static_cast<size_t>(b.reuses[k])];
        out += std::string(k ? ", " : " ") + o.role + " %" + std::to_string(o.node);
      }
      out += " from %" + std::to_string(b.live_from);
    }
    out += "\n";
  }
  if (s.desc_stage_offset >= 0)
    out += range(s.desc_stage_offset, s.desc_stage_offset + 128 * l.tma.num_device) + "descriptor staging\n";
  if (s.scratch_bytes > 0) out += range(s.scratch_offset, s.scratch_offset + s.scratch_bytes) + "scratch\n";
  if (s.exchange_offset >= 0)
    out += range(s.exchange_offset, s.exchange_offset + 8 * static_cast<int>(std::max<size_t>(1, l.cluster.keys.size()))) +
           "cluster exchange (the other program's keys)\n";
  if (s.num_barriers > 0)
    out += range(s.barrier_offset, s.barrier_offset + 8 * s.num_barriers) + std::to_string(s.num_barriers) +
           " mbarrier(s)\n";
  return out;
}

std::string describe_register_layouts(const Lowered& l) {
  // In order of first use, with the values that have them.
  std::vector<std::pair<std::string, std::string>> layouts;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const ValueLayout& v = l.layout.of[i];
    if (v.kind != ValueLayout::Distributed || l.info.position[i] < 0) continue;
    const std::string text = v.dist.str();
    auto it = std::find_if(layouts.begin(), layouts.end(), [&](const auto& p) { return p.first == text; });
    if (it == layouts.end()) it = layouts.insert(layouts.end(), {text, ""});
    it->second += (it->second.empty() ? "%" : " %") + std::to_string(i);
  }
  std::string out = "register layouts:\n";
  if (layouts.empty()) out += "  (every value is one element)\n";
  for (const auto& [text, values] : layouts) out += "  " + text + ": " + values + "\n";
  return out;
}

std::string describe(const Lowered& l) {
  return describe_descriptors(l) + describe_mma(l) + describe_loop_pipeline(l) + describe_warp_roles(l) + describe_turns(l) +
         describe_cluster(l) + describe_shared_memory(l) +
         describe_register_layouts(l);
}

}  // namespace tilejit::passes
