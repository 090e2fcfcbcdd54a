// MmaPlan: which dots run on tensor cores (wgmma), with their tiling and operand tiles, and why the others do not.
//
// Filled by: plan_mma (jit/passes/mma.cpp), the lowering step "plan_mma" (lowering.h).
// Read by: collect_descriptors (operand swizzles), plan_loop_pipeline, allocate_shared and place_buffers, the barrier
// and schedule steps, the describe functions and performance notes, and the emitter (emit_mma.cpp).
#pragma once

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tilejit/passes/graph_info.h"
#include "tilejit/ir/ir.h"
#include "tilejit/layout/mma.h"

namespace tilejit::passes {

using ir::NodeId;

/// One operand of a dot on tensor cores: the TMA tile it reads in place in shared memory.
struct MmaOperand {
  NodeId load = ir::kNoNode;     ///< the DescLoad whose buffer holds the tile; kNoNode: a in registers
  NodeId value = ir::kNoNode;    ///< a in registers: the value, in layout::wgmma_a_fragment
  NodeId permute = ir::kNoNode;  ///< the transpose between the tile and the dot, if any (absorbed: never emitted)
  bool mn_major = false;         ///< the tile's inner dimension is M (for a) or N (for b): wgmma's transpose bit
  layout::OperandTile tile;      ///< the tile wgmma reads: as TMA lays it out (swizzle, pieces), or the K-major copy
  /// A tf32 or 8-bit tile loaded MN-major, which wgmma reads K-major only: the threads copy `source` (the
  /// tile as TMA wrote it, unswizzled, [K, M or N]) into a K-major swizzled buffer laid out as `tile`
  /// before the products (tj::copy_k_major), and the instructions read that copy.
  bool k_major_copy = false;
  layout::OperandTile source;
};

/// A dot lowered to wgmma.mma_async.
struct MmaDot {
  layout::MmaTiling tiling;
  MmaOperand a, b;
  ir::DType in = ir::DType::bf16, acc = ir::DType::f32;
  bool a_in_registers() const { return a.load == ir::kNoNode; }
  /// The PTX instruction without its operands, e.g. "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16".
  std::string instruction() const;
};

struct MmaPlan {
  std::unordered_map<NodeId, MmaDot> dots;     ///< Dot -> its wgmma lowering
  std::unordered_map<NodeId, int> swizzle;     ///< DescLoad -> swizzle bytes of its tile (wgmma operands only)
  /// DescLoad -> bytes past the end of its tile (of its last stage) that wgmma reads: the operand a of a dot
  /// with M below 64, whose m64 instructions read 64 rows. Its buffer is that much longer; what they read there
  /// (the next stage's rows, or nothing written) lands in the accumulator's padding rows only.
  std::unordered_map<NodeId, int> overrun;
  std::unordered_set<NodeId> absorbed;         ///< Permute nodes read in place by wgmma (not emitted)
  std::vector<std::pair<NodeId, std::string>> cuda_cores;  ///< dots left on CUDA cores, and why
};

/// Decides which dots run on tensor cores: both operands are 2-D TMA tiles (or transposes of them)
/// that nothing but such dots reads, of a type wgmma takes (bf16, f16, fp8 with f32 accumulators; f16
/// and fp8 with f16 ones; f32 with Precision::tf32, as tf32; i8 with i32), with a tiling over the program's warpgroups
/// (layout::tile_mma). Where the type must be K-major (fp8, tf32, i8) and the tile is not, the
/// operand is copied K-major in shared memory (MmaOperand::k_major_copy). M below 64 (a multiple of 8)
/// is padded to one m64 instruction when a is a K-major TMA tile (MmaPlan::overrun). Every other dot
/// stays on CUDA cores, with the reason.
MmaPlan plan_mma(const ir::Graph& g, const GraphInfo& info, int warps);

}  // namespace tilejit::passes
