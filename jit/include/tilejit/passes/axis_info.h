// AxisInfo: contiguity, divisibility and constancy of integer values (Triton's axis analysis), and what the
// emitter derives from them: vector widths of pointer accesses and registers that hold one value.
//
// Filled by: analyze_axes (jit/passes/axis_info.cpp), the lowering step "analyze_axes" (lowering.h).
// Read by: plan_loop_pipeline, insert_schedule_ops, the describe functions and the emitter (emit_memory.cpp);
// relevant_specialization by the runtime, which specialises launches on those facts.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tilejit/codegen/options.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// Per dimension of an integer block (Triton's axis analysis): `contiguity` c: in every
/// aligned run of c elements along the dimension, consecutive elements differ by +1;
/// `divisibility` v: the first element of every such run is a multiple of v; `constancy` k:
/// every aligned run of k elements along the dimension holds one value. All are powers of two.
/// For a scalar only divisibility is meaningful (in dimension 0).
struct AxisInfo {
  std::array<int64_t, ir::kMaxRank> contiguity{1, 1, 1, 1, 1};
  std::array<int64_t, ir::kMaxRank> divisibility{1, 1, 1, 1, 1};
  std::array<int64_t, ir::kMaxRank> constancy{1, 1, 1, 1, 1};
};

/// Per kernel parameter, the codegen::Specialization bits that generated code may rely on: base
/// alignment of tensors read or written with pointer loads and stores, and the divisibility of the
/// sizes and strides the kernel reads. A launch compiles one variant per value of (its facts & these).
std::vector<codegen::Specialization::Bits> relevant_specialization(const ir::Graph& g);

/// The largest divisibility the analysis tracks (elements).
inline constexpr int64_t kMaxDivisibility = 1 << 12;

/// Axis facts of every node of `g` (default facts for non-integer values), given what the
/// launch's argument specialisation guarantees about tensor sizes and strides.
std::vector<AxisInfo> analyze_axes(const ir::Graph& g, const GraphInfo& info, const codegen::Specialization& spec);

/// How many consecutive elements each vector access of a Load / Store / AtomicAdd `id` moves (1: scalar
/// accesses): the largest power of two that the offsets' layout holds in consecutive registers, that
/// the offsets are contiguous and divisible by, that the mask is constant over, that fits 16 bytes, and
/// only when the base address is 16-byte aligned. AtomicAdd is never vectorised.
int vector_width(const ir::Graph& g, const ValueLayouts& layout, const std::vector<AxisInfo>& axes,
                 const codegen::Specialization& spec, NodeId id);

/// How many consecutive registers of the block value `id` provably hold one value (1 when none do): the
/// largest power of two that its innermost dimension is constant over (constancy) and that the layout
/// holds in consecutive registers along that dimension. The emitter computes such a value once per run
/// (a mask `cols < n` with n divisible by 16 is one compare per vector, not one per element).
int register_constancy(const ValueLayouts& layout, const std::vector<AxisInfo>& axes, const ir::Graph& g, NodeId id);

}  // namespace tilejit::passes
