// Graph copying for the rewriting passes: nodes are re-added one by one with their ids remapped.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::passes::detail {

/// Copies `src` into a new graph, region by region, in program order. For each
/// node, `visit` may build a replacement (returning its new id), return kDrop
/// to leave it out, or return kNoNode to have the node copied unchanged. Operands of copied nodes are
/// remapped; region ops (For, If) get fresh regions.
class Rewriter {
 public:
  using Visit = std::function<ir::NodeId(Rewriter&, ir::NodeId)>;
  /// Returned by a visitor to drop the node (nothing may use it).
  static constexpr ir::NodeId kDrop = -2;

  explicit Rewriter(const ir::Graph& src);

  /// Runs the copy and returns the new graph (call once).
  ir::Graph run(const Visit& visit);

  const ir::Graph& in() const { return src_; }
  ir::Graph& out() { return dst_; }
  /// The new id of an already visited old node.
  ir::NodeId map(ir::NodeId old) const;
  bool mapped(ir::NodeId old) const { return map_[static_cast<size_t>(old)] != ir::kNoNode; }
  /// Declares that old node `old` is represented by new node `now` (no node is added).
  void set_map(ir::NodeId old, ir::NodeId now) { map_[static_cast<size_t>(old)] = now; }
  /// Copies `old` with remapped operands (and `ints`, when given, instead of its own; `extra` new operands
  /// appended to the remapped ones, as a loop's added carried values).
  ir::NodeId copy(ir::NodeId old);
  ir::NodeId copy_with_ints(ir::NodeId old, std::span<const int64_t> ints, std::span<const ir::NodeId> extra = {});
  /// Adds a node at the source location of old node `loc_of`.
  ir::NodeId add_at(ir::NodeId loc_of, ir::Op op, ir::DType dtype, const ir::Shape& shape,
                    std::span<const ir::NodeId> operands, std::span<const int64_t> ints);
  /// Adds an If on `cond` at old node `loc_of`'s source line, with two fresh regions (then: the returned
  /// node's IfAttrs::then_region, else: the one after it), each to be filled and ended with a yield.
  ir::NodeId add_if(ir::NodeId loc_of, ir::NodeId cond);
  /// Visits (copies or replaces) every node of old region `r` into the current region.
  void walk(uint32_t r);
  /// Visits one node (as walk does), unless it was already visited.
  void visit_node(ir::NodeId old);

 private:
  void locate(ir::NodeId old);
  const ir::Graph& src_;
  ir::Graph dst_;
  std::vector<ir::NodeId> map_;
  const Visit* visit_ = nullptr;
};

}  // namespace tilejit::passes::detail
