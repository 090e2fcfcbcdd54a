// The plans only TILEJIT_DUMP=ir prints, in readable text: program order, value layouts, axis facts, the
// register budget, the kernel parameters and the barriers between ops.
#include <algorithm>

#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/passes/register_budget.h"

namespace tilejit::passes {

namespace {
/// The reachable nodes of `l.graph` in program order.
std::vector<NodeId> program_order(const Lowered& l) {
  std::vector<NodeId> ids;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (l.info.position[i] >= 0) ids.push_back(static_cast<NodeId>(i));
  std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
    return l.info.position[static_cast<size_t>(a)] < l.info.position[static_cast<size_t>(b)];
  });
  return ids;
}

/// "%12 (file.cpp:40)".
std::string named(const ir::Graph& g, NodeId id) {
  return "%" + std::to_string(id) + " (" + source_line(g, id) + ")";
}

/// "f32[64, 32]", or "i32" for a scalar.
std::string type_of(const ir::Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  return std::string(ir::name_of(n.dtype)) + (n.shape.rank ? n.shape.str() : "");
}

std::string facts(const std::array<int64_t, ir::kMaxRank>& a, int rank) {
  std::string s = "[";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(a[static_cast<size_t>(d)]);
  return s + "]";
}

std::string slot_text(const Lowered& l, const codegen::ArgSlot& s) {
  const auto param = [&] { return l.graph.params[static_cast<size_t>(s.param)].name; };
  switch (s.kind) {
    case codegen::ArgSlot::TensorBase:
      return "base address of " + param();
    case codegen::ArgSlot::TensorSize:
      return "size " + std::to_string(s.index) + " of " + param();
    case codegen::ArgSlot::TensorStride:
      return "stride " + std::to_string(s.index) + " of " + param() + " (elements)";
    case codegen::ArgSlot::Scalar:
      return "scalar " + param() + ", " +
             std::string(ir::name_of(l.graph.params[static_cast<size_t>(s.param)].dtype));
    case codegen::ArgSlot::HostDesc:
      return "descriptor of " + param() + ", encoded on the host (__grid_constant__)";
    case codegen::ArgSlot::DescArray:
      return "device array of one descriptor per tensor of " + param() + ", encoded on the host";
    case codegen::ArgSlot::Workspace:
      return "workspace for device-built descriptors, " +
             std::to_string(l.args.plan.workspace_bytes_per_program) + " bytes per program";
    case codegen::ArgSlot::TileGrid:
      return std::string("the launch grid's extent along ") + "xyz"[s.index] + ", which the persistent programs run";
  }
  return "?";
}

/// `why` per node of `reasons`, in program order.
std::string reasons_text(const Lowered& l, const std::unordered_map<NodeId, std::string>& reasons,
                         const char* before) {
  std::vector<NodeId> ids;
  for (const auto& [id, why] : reasons) ids.push_back(id);
  std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
    return l.info.position[static_cast<size_t>(a)] < l.info.position[static_cast<size_t>(b)];
  });
  std::string out;
  for (NodeId id : ids)
    out += std::string("  before ") + before + named(l.graph, id) + ": " + reasons.at(id) + "\n";
  return out;
}
}  // namespace

std::string describe_graph_info(const Lowered& l) {
  const std::vector<NodeId> order = program_order(l);
  std::string out = "program order: " + std::to_string(order.size()) + " of " +
                    std::to_string(l.graph.size()) + " nodes reachable\nloops:\n";
  bool any = false;
  for (NodeId f : order) {
    if (l.graph.node(f).op != ir::Op::For) continue;
    const auto body = std::count(l.info.loop.begin(), l.info.loop.end(), f);
    out += "  " + named(l.graph, f) + ": " + std::to_string(body) + " nodes directly in its body";
    if (l.info.in_loop(f)) out += ", inside loop %" + std::to_string(l.info.loop[static_cast<size_t>(f)]);
    out += "\n";
    any = true;
  }
  if (!any) out += "  (none)\n";
  return out;
}

std::string describe_value_layouts(const Lowered& l) {
  std::string out = "value layouts (" + std::to_string(l.layout.threads) + " threads):\n", uniform;
  for (NodeId id : program_order(l)) {
    const ValueLayout& v = l.layout.of[static_cast<size_t>(id)];
    if (v.kind == ValueLayout::Uniform) uniform += " %" + std::to_string(id);
    if (v.kind != ValueLayout::Distributed) continue;
    out += "  %" + std::to_string(id) + " " + std::string(ir::name_of(l.graph.node(id).dtype)) + ": " +
           v.dist.str() + "; " + std::to_string(v.regs()) + " register(s) per thread" +
           (v.padded() ? ", some padding" : "") + "\n";
  }
  if (!uniform.empty()) out += "  one element, held by every thread:" + uniform + "\n";
  return out;
}

std::string describe_axes(const Lowered& l) {
  std::string out = "axis info (values whose facts are not all 1):\n";
  bool any = false;
  for (NodeId id : program_order(l)) {
    if (!ir::yields_value(l.graph.node(id).op)) continue;
    const AxisInfo& a = l.axes[static_cast<size_t>(id)];
    const int rank = l.graph.node(id).shape.rank;
    std::string line;
    if (rank == 0) {
      if (a.divisibility[0] != 1) line = "divisibility " + std::to_string(a.divisibility[0]);
    } else {
      bool trivial = true;
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d)
        trivial = trivial && a.contiguity[d] == 1 && a.divisibility[d] == 1 && a.constancy[d] == 1;
      if (!trivial)
        line = "contiguity " + facts(a.contiguity, rank) + ", divisibility " + facts(a.divisibility, rank) +
               ", constancy " + facts(a.constancy, rank);
    }
    if (line.empty()) continue;
    out += "  %" + std::to_string(id) + " " + type_of(l.graph, id) + ": " + line + "\n";
    any = true;
  }
  if (!any) out += "  (none)\n";
  return out;
}

std::string describe_register_budget(const Lowered& l) {
  // The values check_register_budget weighs: held in registers (not only read in place in shared memory).
  NodeId most = ir::kNoNode;
  int64_t most_words = 0;
  for (NodeId id : program_order(l)) {
    const ValueLayout& v = l.layout.of[static_cast<size_t>(id)];
    if (v.kind != ValueLayout::Distributed) continue;
    if (l.smem.resident.count(id) && !l.smem.register_copies.count(id)) continue;
    const int64_t words = (static_cast<int64_t>(v.regs()) * ir::size_of(l.graph.node(id).dtype) + 3) / 4;
    if (words > most_words) most = id, most_words = words;
  }
  if (most == ir::kNoNode) return "registers: no value is spread over the threads\n";
  return "registers: the largest value held in registers is " + named(l.graph, most) + ", " +
         type_of(l.graph, most) + ", " + std::to_string(most_words) +
         " registers (32-bit) per thread, of at most " + std::to_string(kMaxValueRegisters) + "\n";
}

std::string describe_arguments(const Lowered& l) {
  const codegen::LaunchPlan& p = l.args.plan;
  std::string out = "kernel parameters (" + std::to_string(p.threads) + " threads, " +
                    std::to_string(p.shared_bytes) + " bytes of dynamic shared memory):\n";
  if (p.slots.empty()) out += "  (none)\n";
  for (size_t k = 0; k < p.slots.size(); ++k) {
    const codegen::ArgSlot& s = p.slots[k];
    out += "  " + std::to_string(k) + " " + l.args.names[k] + ": " + slot_text(l, s) + " (" +
           std::to_string(s.size) + " bytes" +
           (s.align != s.size ? ", aligned to " + std::to_string(s.align) : "") + ")\n";
  }
  return out;
}

std::string describe_barriers(const Lowered& l) {
  std::string out = "barriers between ops:\n  scratch arena users:";
  if (l.barriers.scratch_users.empty()) out += " (none)";
  std::vector<NodeId> users(l.barriers.scratch_users.begin(), l.barriers.scratch_users.end());
  std::sort(users.begin(), users.end(), [&](NodeId a, NodeId b) {
    return l.info.position[static_cast<size_t>(a)] < l.info.position[static_cast<size_t>(b)];
  });
  for (NodeId id : users) out += " %" + std::to_string(id);
  out += "\n";
  out += reasons_text(l, l.barriers.before_scratch, "the first scratch write of ");
  out += reasons_text(l, l.barriers.before_issue, "thread 0 reissues ");
  if (l.barriers.before_scratch.empty() && l.barriers.before_issue.empty()) out += "  no barrier planned\n";
  return out;
}

}  // namespace tilejit::passes
