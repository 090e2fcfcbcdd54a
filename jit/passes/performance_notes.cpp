// What the user may change for a kernel's speed: one sentence per finding, naming the source line.
#include <algorithm>

#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"

namespace tilejit::passes {

std::vector<codegen::PerformanceNote> performance_notes(const Lowered& l) {
  std::vector<codegen::PerformanceNote> notes;
  for (const auto& [id, why] : l.mma.cuda_cores)
    notes.push_back({true, "dot at " + source_line(l.graph, id) +
                               " runs on CUDA cores, not tensor cores, because " + why});
  std::vector<std::pair<NodeId, std::string>> loops(l.pipe.not_pipelined.begin(), l.pipe.not_pipelined.end());
  std::sort(loops.begin(), loops.end());
  for (const auto& [f, why] : loops)
    notes.push_back(
        {true, "the loop at " + source_line(l.graph, f) +
                   " is not software-pipelined (its TMA loads are issued " +
                   "and awaited where they are used, and the tensor cores wait for them) because " + why});
  if (!l.roles.not_applied.empty())
    notes.push_back({true, "warp_specialize is not applied to kernel '" + l.graph.kernel_name + "' (it runs without a producer "
                           "warpgroup) because " + l.roles.not_applied});
  if (!l.turns.not_applied.empty())
    notes.push_back({true, "pingpong is not applied to kernel '" + l.graph.kernel_name + "' (its consumer warpgroups issue "
                           "their products without taking turns) because " + l.turns.not_applied});
  if (!l.cluster.not_applied.empty())
    notes.push_back({true, "kernel '" + l.graph.kernel_name + "' runs in clusters of " + std::to_string(l.cluster.x) + " x " +
                               std::to_string(l.cluster.y) + " programs (Config::cluster) but multicasts no load because " +
                               l.cluster.not_applied});
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto it = l.mma.dots.find(static_cast<NodeId>(i));
    if (it == l.mma.dots.end()) continue;
    for (const auto& [o, name] : {std::pair{&it->second.a, "a"}, std::pair{&it->second.b, "b"}})
      if (o->k_major_copy)
        notes.push_back(
            {false,
             "dot at " + source_line(l.graph, it->first) + ": its " + name + " tile (" +
                 std::string(it->second.in == ir::DType::f32 ? "tf32" : ir::name_of(it->second.in)) +
                 ") is loaded M/N-major, which wgmma does not read for this type: the threads copy it " +
                 "K-major before every product (a pass over the tile and a barrier); a tile loaded " +
                 "K-major (b as [N, K] with .trans(), a as [M, K]) avoids the copy"});
  }
  return notes;
}

std::string spill_remedy(const Lowered& l) {
  const std::string plain = "more warps (Config::num_warps) or smaller blocks keep it in registers";
  const WarpRoles& r = l.roles;
  if (r.spill_retry_producer_registers == 0) return plain;
  const int lean = consumer_register_share(l.graph, r, r.spill_retry_producer_registers);
  return "Config::producer_registers(" + std::to_string(r.spill_retry_producer_registers) +
         ") gives its consumer warpgroups " + std::to_string(lean) + " registers instead of " +
         std::to_string(r.consumer_registers) + "; " + plain;
}

}  // namespace tilejit::passes
