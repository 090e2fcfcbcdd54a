// What the code-motion passes (hoist_invariants, early_views) may move: a node whose position does not change
// what it computes.
#pragma once

#include "tilejit/ir/ir.h"

namespace tilejit::passes::detail {

/// Pure scalars and tensor views (a view's fields are scalars; a device-built descriptor is built where the
/// view is). Loop and branch results stay where their region ends; loads and other effects never move.
inline bool movable(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (ir::kind_of(n.op) != ir::OpKind::Pure) return false;
  switch (n.op) {
    case ir::Op::LoopResult: case ir::Op::IfResult: return false;
    case ir::Op::MakeView: case ir::Op::MergeView: case ir::Op::ArrayElem: case ir::Op::TensorSize: case ir::Op::TensorStride:
      return true;
    default:
      return n.shape.rank == 0;
  }
}

}  // namespace tilejit::passes::detail
