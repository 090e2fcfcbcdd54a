// Graph copying for the rewriting passes.
#include "passes/rewrite.h"

#include "tilejit/error.h"

namespace tilejit::passes::detail {

using ir::NodeId;
using ir::Op;

Rewriter::Rewriter(const ir::Graph& src) : src_(src), map_(src.size(), ir::kNoNode) {
  dst_.kernel_name = src.kernel_name;
  dst_.kernel_location = src.kernel_location;
  dst_.config = src.config;
  dst_.num_warps = src.num_warps;
  dst_.num_stages = src.num_stages;
  dst_.min_programs_per_sm = src.min_programs_per_sm;
  dst_.warp_specialize = src.warp_specialize;
  dst_.overlap_products = src.overlap_products;
  dst_.pingpong = src.pingpong;
  dst_.cluster_x = src.cluster_x;
  dst_.cluster_y = src.cluster_y;
  dst_.fp_contract = src.fp_contract;
  dst_.producer_registers = src.producer_registers;
  dst_.persistent = src.persistent;
  dst_.tile_group = src.tile_group;
}

NodeId Rewriter::map(NodeId old) const {
  const NodeId n = map_[static_cast<size_t>(old)];
  check_internal(n != ir::kNoNode, "rewriter: operand used before it was visited");
  return n;
}

void Rewriter::locate(NodeId old) {
  const ir::Location& l = src_.location(old);
  dst_.set_location(l.file.c_str(), l.line);
}

NodeId Rewriter::add_at(NodeId loc_of, Op op, ir::DType dtype, const ir::Shape& shape,
                        std::span<const NodeId> operands, std::span<const int64_t> ints) {
  locate(loc_of);
  return dst_.add(op, dtype, shape, operands, ints);
}

NodeId Rewriter::add_if(NodeId loc_of, NodeId cond) {
  const auto then_region = static_cast<uint32_t>(dst_.num_regions());
  const NodeId branch = add_at(loc_of, Op::If, ir::DType::i1, {}, std::span<const NodeId>(&cond, 1),
                               ir::IfAttrs{then_region, then_region + 1}.encode(Op::If));
  check_internal(dst_.new_region(branch) == then_region && dst_.new_region(branch) == then_region + 1,
                 "rewriter: region numbering of an if");
  return branch;
}

NodeId Rewriter::copy(NodeId old) { return copy_with_ints(old, src_.ints(old)); }

NodeId Rewriter::copy_with_ints(NodeId old, std::span<const int64_t> ints, std::span<const NodeId> extra) {
  const ir::Node& n = src_.node(old);
  std::vector<NodeId> ops;
  ops.reserve(n.operand_count + extra.size());
  for (NodeId o : src_.operands(old)) ops.push_back(map(o));
  ops.insert(ops.end(), extra.begin(), extra.end());
  locate(old);
  const std::vector<uint32_t> regions = ir::regions_of(src_, old);
  if (!regions.empty()) {
    // A region op gets fresh regions: its last attributes, which number them, are renumbered.
    const auto first = static_cast<uint32_t>(dst_.num_regions());
    std::vector<int64_t> renumbered(ints.begin(), ints.end());
    for (size_t k = 0; k < regions.size(); ++k) renumbered[renumbered.size() - regions.size() + k] = first + k;
    const NodeId id = dst_.add(n.op, n.dtype, n.shape, ops, renumbered);
    for (size_t k = 0; k < regions.size(); ++k)
      check_internal(dst_.new_region(id) == first + k, "rewriter: region numbering");
    map_[static_cast<size_t>(old)] = id;
    for (size_t k = 0; k < regions.size(); ++k) {
      dst_.push_region(static_cast<uint32_t>(first + k));
      walk(regions[k]);
      dst_.pop_region();
    }
    return id;
  }
  const NodeId id = dst_.add(n.op, n.dtype, n.shape, ops, ints);
  map_[static_cast<size_t>(old)] = id;
  return id;
}

void Rewriter::visit_node(NodeId old) {
  if (mapped(old)) return;
  NodeId now = ir::kNoNode;
  if (visit_ && *visit_) now = (*visit_)(*this, old);
  if (now == kDrop) return;
  if (now == ir::kNoNode && !mapped(old)) now = copy(old);
  if (now != ir::kNoNode) map_[static_cast<size_t>(old)] = now;
}

void Rewriter::walk(uint32_t r) {
  for (NodeId old : src_.region(r).nodes) visit_node(old);
}

ir::Graph Rewriter::run(const Visit& visit) {
  visit_ = &visit;
  walk(0);
  visit_ = nullptr;
  dst_.params = src_.params;
  for (ir::Param& p : dst_.params)
    if (p.node != ir::kNoNode) p.node = mapped(p.node) ? map(p.node) : ir::kNoNode;
  return std::move(dst_);
}

}  // namespace tilejit::passes::detail
