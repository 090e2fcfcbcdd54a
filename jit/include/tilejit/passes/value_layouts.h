// The register layout of every value of a kernel (ValueLayouts: one ValueLayout per node), the rules that choose
// them, and the conversions inserted where those rules disagree.
//
// Filled by: assign_layout (jit/passes/value_layouts.cpp), the lowering step "assign_layout", after
// insert_layout_conversions (jit/passes/layout_conversions.cpp), the step of that name, removed every conflict
// (lowering.h).
// Read by: collect_descriptors, analyze_axes' users (vector_width, register_constancy), plan_loop_pipeline,
// plan_warp_roles, allocate_shared, the barrier and schedule steps, the describe functions and the emitter.
#pragma once

#include <cstdint>
#include <vector>

#include "tilejit/passes/graph_info.h"
#include "tilejit/ir/ir.h"
#include "tilejit/layout/layout.h"

namespace tilejit::passes {

using ir::NodeId;

/// How a block value is spread over the threads of a program (see tilejit/layout/layout.h).
struct ValueLayout {
  enum Kind : uint8_t {
    None,         ///< not a value (tensor, effect, region)
    Uniform,      ///< one element: every thread holds it
    Distributed,  ///< spread over the threads by `dist`
  } kind = None;
  int64_t numel = 1;
  layout::Layout dist;
  /// Registers per thread.
  int regs() const { return kind == Distributed ? dist.regs() : 1; }
  /// True when some register of some thread holds no element (it needs a guard).
  bool padded() const { return kind == Distributed && dist.padded(); }
};

struct ValueLayouts {
  int threads = 128;
  std::vector<ValueLayout> of;  ///< per node
};

/// Where two layouts meet: `node`'s value must be converted, for every user
/// (user == kNoNode) or for the one operand slot of `user` that names it.
struct LayoutConflict {
  NodeId node = ir::kNoNode;
  NodeId user = ir::kNoNode;
};

/// Chooses each value's layout:
///  - values combined elementwise (and the values of one loop-carried or
///    if-result slot, a load and its offsets, a store and its value) form a
///    group that shares one layout, so those ops never move data between threads;
///  - a reduction's result takes the slice of its operand's layout, a reshape
///    that only adds or removes unit dimensions keeps its operand's registers;
///  - the operand of a broadcast takes the layout in which the broadcast is
///    free (each thread already holds the source of each of its elements); a
///    tensor-core dot's result takes the accumulator fragment, and its operand a,
///    when read from registers, layout::wgmma_a_fragment;
///  - any other group is blocked (layout::blocked): 16 bytes per vector along
///    the innermost dimension, of the narrowest element type the group loads or
///    stores (so that memory moves in 16-byte accesses), else of its widest
///    element type; lanes and then warps from the innermost dimension outwards.
/// Throws InternalError when two of these rules disagree (insert_layout_conversions
/// first removes every such conflict).
ValueLayouts assign_layout(const ir::Graph& g, const GraphInfo& info, int threads);

/// The places where assign_layout's rules disagree, for the graph as it is.
std::vector<LayoutConflict> layout_conflicts(const ir::Graph& g, const GraphInfo& info, int threads);

/// Inserts a ConvertLayout node wherever two layouts meet (layout_conflicts),
/// so that every remaining op reads its operands in the layout it needs.
ir::Graph insert_layout_conversions(const ir::Graph& g, int threads);

}  // namespace tilejit::passes
