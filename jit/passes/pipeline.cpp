// The lowering pipeline: the passes in their fixed order, with a dump hook after every rewriting pass.

#include <algorithm>
#include <iterator>

#include "tilejit/config.h"
#include "tilejit/error.h"
#include "passes/prefetch_loads.h"
#include "tilejit/passes/passes.h"

namespace tilejit::passes {

namespace {
/// Ring sizes tried in turn when the configuration leaves num_stages to tilejit (Config::kAutoStages): three,
/// Triton's default, was the best or close to it for tilejit's GEMM tiles on an H100 (bf16 8192^3, 128 x 128 x 64,
/// 8 warps: 501 / 555 / 528 / 549 TFLOP/s at 2 / 3 / 4 / 5 stages; 128 x 256 x 64: best at 3); fewer when the
/// tiles of three do not fit, one (no pipeline) as the last resort.
constexpr int kAutoStageChoices[] = {3, 2, 1};

/// Pipelines the loops and allocates shared memory: with the configuration's num_stages, or with the first
/// stage count of kAutoStageChoices whose buffers fit (a kernel without a pipelined loop takes the first).
void plan_stages(Lowered& l) {
  const auto plan = [&](int stages) {
    l.pipe = plan_pipeline(l.graph, l.info, l.mma, l.tma, stages);
    l.smem = allocate_shared(l.graph, l.info, l.layout, l.tma, l.mma, l.pipe);
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
}  // namespace

Lowered lower(const ir::Graph& g, const codegen::Options& options, const DumpHook& hook) {
  const DumpHook& dump = hook ? hook : options.dump_ir;
  auto step = [&](std::string_view name, ir::Graph next) {
    ir::verify(next);
    if (dump) dump(name, next);
    return next;
  };
  ir::verify(g);
  if (dump) dump("input", g);
  ir::Graph cur = step("canonicalize", canonicalize(g));
  cur = step("hoist_invariants", hoist_invariants(cur));
  cur = step("prefetch_loads", prefetch_loads(cur));
  cur = step("eliminate_dead_code", eliminate_dead_code(cur));
  TmaPlan tma;
  cur = step("plan_tma", plan_tma(cur, tma));
  const int threads = cur.num_warps * 32;
  cur = step("insert_layout_conversions", insert_layout_conversions(cur, threads));

  Lowered l;
  l.graph = std::move(cur);
  l.spec = options.spec;
  l.info = analyze(l.graph);
  l.mma = plan_mma(l.graph, l.info, threads / 32);
  l.layout = assign_layout(l.graph, l.info, threads);
  l.tma = collect_descriptors(l.graph, l.info, &l.mma, &l.layout);  // node ids changed
  l.axes = analyze_axes(l.graph, l.info, l.spec);
  plan_stages(l);
  check_register_budget(l.graph, l.info, l.layout, l.smem);
  l.args = plan_arguments(l.graph, l.tma, l.smem, threads, options.debug_checks);
  l.barriers = plan_barriers(l);
  return l;
}

namespace {
std::string dims(const std::array<int32_t, ir::kMaxRank>& a, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) s += (i ? ", " : "") + std::to_string(a[static_cast<size_t>(i)]);
  return s + "]";
}
}  // namespace

std::vector<codegen::PerformanceNote> performance_notes(const Lowered& l) {
  std::vector<codegen::PerformanceNote> notes;
  for (const auto& [id, why] : l.mma.cuda_cores)
    notes.push_back({true, "dot at " + source_line(l.graph, id) + " runs on CUDA cores, not tensor cores, because " + why});
  std::vector<std::pair<NodeId, std::string>> loops(l.pipe.not_pipelined.begin(), l.pipe.not_pipelined.end());
  std::sort(loops.begin(), loops.end());
  for (const auto& [f, why] : loops)
    notes.push_back({true, "the loop at " + source_line(l.graph, f) + " is not software-pipelined (its TMA loads are issued " +
                               "and awaited where they are used, and the tensor cores wait for them) because " + why});
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto it = l.mma.dots.find(static_cast<NodeId>(i));
    if (it == l.mma.dots.end()) continue;
    for (const auto& [o, name] : {std::pair{&it->second.a, "a"}, std::pair{&it->second.b, "b"}})
      if (o->k_major_copy)
        notes.push_back({false, "dot at " + source_line(l.graph, it->first) + ": its " + name + " tile (" +
                                    std::string(it->second.in == ir::DType::f32 ? "tf32" : ir::name_of(it->second.in)) +
                                    ") is loaded M/N-major, which wgmma does not read for this type: the threads copy it " +
                                    "K-major before every product (a pass over the tile and a barrier); a tile loaded " +
                                    "K-major (b as [N, K] with .trans(), a as [M, K]) avoids the copy"});
  }
  return notes;
}

std::string describe(const Lowered& l) {
  const ir::Graph& g = l.graph;
  std::string out;
  out += "descriptors:\n";
  if (l.tma.descriptors.empty()) out += "  (none)\n";
  for (const Descriptor& d : l.tma.descriptors) {
    std::string line = "  ";
    line += d.kind == DescKind::Device ? "workspace slot " + std::to_string(d.slot) : "d" + std::to_string(d.slot);
    line += ": " + std::string(name_of(d.kind));
    if (d.param >= 0) line += ", param " + g.params[static_cast<size_t>(d.param)].name;
    if (d.view != ir::kNoNode) line += ", view %" + std::to_string(d.view) + " (" + source_line(g, d.view) + ")";
    if (!d.merge_groups.empty()) {
      line += ", merged {";
      for (size_t k = 0; k < d.merge_groups.size(); ++k) line += (k ? ", " : "") + std::to_string(d.merge_groups[k]);
      line += "}";
    }
    line += ", " + std::string(ir::name_of(d.dtype)) + ", box " + dims(d.box, d.rank) + ", estride " +
            dims(d.estride, d.rank) + ", fill " + (d.fill ? "nan" : "zero");
    if (d.swizzle > 0)
      line += ", " + std::to_string(d.swizzle) + "B swizzle (" +
              (d.used_by_store ? "conflict-free writes of the stored tile" : "a wgmma operand") + ")";
    if (d.pieces > 1)
      line += ", " + std::to_string(d.pieces) + " operations per access along dimension " + std::to_string(d.split_dim) +
              " (the box is one piece of the tile)";
    if (d.kind == DescKind::Device)
      line += d.build_at == ir::kNoNode ? ", built at kernel start"
                                        : std::string(", built at ") + source_line(g, d.build_at) +
                                              (d.rebuilt_in_loop ? " (every iteration)" : "");
    out += line + "\n";
  }
  if (!l.mma.dots.empty() || !l.mma.cuda_cores.empty()) out += "matrix products:\n";
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (auto it = l.mma.dots.find(id); it != l.mma.dots.end()) {
      const MmaDot& m = it->second;
      auto operand = [](const MmaOperand& o) {
        if (o.load == ir::kNoNode) return "%" + std::to_string(o.value) + " in registers";
        if (o.k_major_copy)
          return "K-major " + std::to_string(o.tile.swizzle) + "B-swizzled copy (by the threads) of the M/N-major tile of %" +
                 std::to_string(o.load);
        return std::string(o.mn_major ? "MN" : "K") + "-major " + std::to_string(o.tile.swizzle) + "B-swizzled tile of %" +
               std::to_string(o.load);
      };
      out += "  %" + std::to_string(id) + " (" + source_line(g, id) + "): " + m.instruction() + "; " + m.tiling.str() + "; a " +
             operand(m.a) + ", b " + operand(m.b) + "\n";
    }
  }
  for (const auto& [id, why] : l.mma.cuda_cores)
    out += "  %" + std::to_string(id) + " (" + source_line(g, id) + "): CUDA cores (a scalar loop over shared memory), because " + why + "\n";
  for (const auto& [f, p] : l.pipe.loops) {
    std::string loads;
    for (NodeId ld : p.loads) loads += (loads.empty() ? "%" : ", %") + std::to_string(ld);
    out += "software pipeline: loop %" + std::to_string(f) + " (" + source_line(g, f) + "), " + std::to_string(p.stages) +
           " stages of {" + loads + "} (" + std::to_string(p.stage_bytes) + " bytes each), issued " +
           std::to_string(p.stages - 1) + " iteration(s) ahead; one mbarrier per stage from " +
           std::to_string(l.smem.ring_barriers.at(f));
    out += "; " + std::to_string(p.dots.size()) + " product(s), " +
           (p.in_flight ? "the last kept in flight into the next iteration" : "each awaited where it is issued");
    if (p.ring_persists) out += "; the ring position carries over from one run of the loop to the next";
    if (auto early = l.pipe.issued_before.find(f); early != l.pipe.issued_before.end()) {
      out += "; issued before it (used after it):";
      for (NodeId ld : early->second) out += " %" + std::to_string(ld);
    }
    out += "\n";
  }
  std::vector<std::pair<NodeId, std::string>> refused(l.pipe.not_pipelined.begin(), l.pipe.not_pipelined.end());
  std::sort(refused.begin(), refused.end());
  for (const auto& [f, why] : refused)
    out += "not pipelined: loop %" + std::to_string(f) + " (" + source_line(g, f) + "), because " + why + "\n";
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const NodeId f = l.info.loop[i];
    if (l.info.position[i] < 0 || f == ir::kNoNode || g.node(id).op != ir::Op::Load || g.node(id).int_count < 2 || g.int_at(id, 1) != 1)
      continue;
    out += "register prefetch: loop %" + std::to_string(f) + " (" + source_line(g, f) + ") loads %" + std::to_string(id) + " (" +
           source_line(g, id) + ") one iteration ahead, the first iteration's before the loop\n";
  }
  out += "shared memory: " + std::to_string(l.smem.total_bytes) + " bytes\n";
  for (const SmemBuffer& b : l.smem.buffers) {
    out += "  [" + std::to_string(b.offset) + ", " + std::to_string(b.offset + b.bytes) + ") " + b.role + " %" +
           std::to_string(b.node) + " (" + source_line(g, b.node) + ")";
    if (!b.reuses.empty()) {
      out += ", reusing the bytes of";
      for (size_t k = 0; k < b.reuses.size(); ++k) {
        const SmemBuffer& o = l.smem.buffers[static_cast<size_t>(b.reuses[k])];
        out += std::string(k ? ", " : " ") + o.role + " %" + std::to_string(o.node);
      }
      out += " from %" + std::to_string(b.live_from);
    }
    out += "\n";
  }
  if (l.smem.desc_stage_offset >= 0)
    out += "  [" + std::to_string(l.smem.desc_stage_offset) + ", " +
           std::to_string(l.smem.desc_stage_offset + 128 * l.tma.num_device) + ") descriptor staging\n";
  if (l.smem.scratch_bytes > 0)
    out += "  [" + std::to_string(l.smem.scratch_offset) + ", " +
           std::to_string(l.smem.scratch_offset + l.smem.scratch_bytes) + ") scratch\n";
  if (l.smem.num_barriers > 0)
    out += "  [" + std::to_string(l.smem.barrier_offset) + ", " +
           std::to_string(l.smem.barrier_offset + 8 * l.smem.num_barriers) + ") " +
           std::to_string(l.smem.num_barriers) + " mbarrier(s)\n";
  // Register layouts, in order of first use, with the values that have them.
  std::vector<std::pair<std::string, std::string>> layouts;
  for (size_t i = 0; i < g.size(); ++i) {
    const ValueLayout& v = l.layout.of[i];
    if (v.kind != ValueLayout::Distributed || l.info.position[i] < 0) continue;
    const std::string text = v.dist.str();
    auto it = std::find_if(layouts.begin(), layouts.end(), [&](const auto& p) { return p.first == text; });
    if (it == layouts.end()) it = layouts.insert(layouts.end(), {text, ""});
    it->second += (it->second.empty() ? "%" : " %") + std::to_string(i);
  }
  out += "register layouts:\n";
  if (layouts.empty()) out += "  (every value is one element)\n";
  for (const auto& [text, values] : layouts) out += "  " + text + ": " + values + "\n";
  return out;
}

}  // namespace tilejit::passes
