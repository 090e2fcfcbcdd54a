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
  using C = ir::OpCategory;
  switch (ir::category_of(n.op)) {
    case C::tensor: return true;     // the pure tensor ops are the views: ArrayElem, MergeView, MakeView
    case C::control: return false;   // the pure control ops are the results: LoopResult, IfResult
    case C::leaf: case C::movement: case C::cast: case C::unary: case C::binary: case C::compare: case C::select: case C::ternary:
    case C::reduction: case C::product:
      return n.shape.rank == 0;
    case C::memory: case C::tma: case C::schedule: return false;  // effects
  }
  return false;
}

}  // namespace tilejit::passes::detail
