// TmaPlan: every distinct TMA descriptor of a kernel, where it lives (host, array, device) and which ops use it.
//
// Filled by: plan_tma (jit/passes/tma_plan.cpp), the lowering step "plan_tma", which also writes each TMA op's
// placement into the graph; then collect_descriptors, the step "collect_descriptors", for the final graph
// (swizzles of wgmma operands and stored tiles, boxes split in pieces) (lowering.h).
// Read by: plan_loop_pipeline, plan_warp_roles, allocate_shared, plan_arguments (the descriptors the runtime
// encodes), plan_barriers, the describe functions and the emitter (emit_tma.cpp, emit_debug.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tilejit/codegen/launch_plan.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// Where a descriptor lives.
enum class DescKind : uint8_t {
  Host,    ///< encoded on the host, a __grid_constant__ kernel parameter
  Array,   ///< encoded on the host into device memory, one per tensor of a TensorArray
  Device,  ///< built by the kernel in a workspace slot (tensormap.replace + fences)
};
std::string_view name_of(DescKind k);

/// One distinct TMA descriptor: same source tensor, box, element strides and fill.
/// A descriptor of the plan: the encoded fields (codegen::TensorMapFields; merge groups relative to `param` or
/// `view`; the box the user's or one piece of a split box; a swizzled tile, a wgmma operand or a stored
/// accumulator, cut along its inner dimension into pieces as wide as the swizzle) and where it lives and is used.
struct Descriptor : codegen::TensorMapFields {
  DescKind kind = DescKind::Host;
  NodeId tensor = ir::kNoNode;   ///< the tensor node the TMA ops name (first one seen)
  NodeId view = ir::kNoNode;     ///< Device: the MakeView node whose fields are used, kNoNode for a parameter
  int split_dim = -1;            ///< a user box over 256 is issued as `pieces` operations along this dimension
  int pieces = 1;                ///< (tma::split_box), into consecutive parts of one shared-memory tile
  int slot = -1;                 ///< Host/Array: index in LaunchPlan::descriptors; Device: workspace slot
  NodeId first_use = ir::kNoNode;
  NodeId build_at = ir::kNoNode; ///< Device: the node after which it is built; kNoNode: kernel start
  bool rebuilt_in_loop = false;  ///< Device: the build runs once per loop iteration
  /// Device: the warp that writes it; the descriptors built at one point are spread over the warps, which write
  /// them at once (all on warp 0 when a store of an earlier iteration may still read one: its thread 0 waits).
  int build_warp = 0;
  std::vector<NodeId> uses;      ///< the TMA ops using it, in program order
  /// Device: a rebuild must wait until the stores of the previous iteration no longer read its slot.
  bool waits_for_stores() const { return rebuilt_in_loop && used_by_store; }
};

struct TmaPlan {
  std::vector<Descriptor> descriptors;
  std::unordered_map<NodeId, int> of;  ///< TMA op (DescLoad / DescStore / DescPrefetch) -> descriptor
  int num_host = 0, num_array = 0, num_device = 0;
};

/// Decides every descriptor (see the automatic rules in ARCHITECTURE.md: a kernel
/// parameter -> host, an element of a tensor array -> array, a MakeView -> device;
/// the op's placement attribute overrides). Returns the graph with every TMA op's
/// placement attribute set to the decision (1 host, 2 device) and fills `plan`
/// with the descriptors of that graph. Throws UserError for impossible requests.
ir::Graph plan_tma(const ir::Graph& g, TmaPlan& plan);

/// The plan of a graph whose placements are already decided (what plan_tma fills); the tiles of
/// wgmma operands (`mma`, optional) get their swizzle and are cut into pieces as wide as it, and so do
/// stored tiles that threads write to shared memory with fewer bank conflicts under a swizzle
/// (layout::staging_swizzle of the stored value's layout, when `layout` is given).
TmaPlan collect_descriptors(const ir::Graph& g, const GraphInfo& info, const MmaPlan* mma = nullptr,
                            const ValueLayouts* layout = nullptr);

}  // namespace tilejit::passes
