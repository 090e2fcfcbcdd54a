// ArgumentPlan: the kernel's parameters (the launch plan's slots), the descriptors the runtime encodes, and
// the C++ name of each parameter.
//
// Filled by: plan_arguments (jit/passes/arguments.cpp), the lowering step "plan_arguments" (lowering.h).
// Read by: describe_arguments, the emitter (the kernel signature and every parameter it reads) and, through
// codegen::GeneratedKernel::plan, the runtime.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilejit/codegen/launch_plan.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// What a tensor parameter's slot carries: its base address, or the size or stride (in elements) of a dimension.
enum class TensorField : uint8_t { base = 0, size = 1, stride = 2 };

/// The kernel's parameters (LaunchPlan::slots) and the descriptors the runtime
/// encodes (LaunchPlan::descriptors), plus the C++ name of each parameter.
struct ArgumentPlan {
  codegen::LaunchPlan plan;
  std::vector<std::string> names;  ///< per slot
  /// (param, field, dimension) -> slot (find_tensor).
  std::unordered_map<int64_t, int> tensor_slot;
  std::unordered_map<int, int> scalar_slot;  ///< param -> slot
  std::unordered_map<int, int> desc_slot;    ///< Host/Array descriptor index -> slot
  int workspace_slot = -1;
  int tile_grid_slot[3] = {-1, -1, -1};  ///< axis -> slot of the launch grid's extent (persistent programs)
  /// The slot of tensor parameter `param`'s `field` (of dimension `index`; 0 for the base).
  int find_tensor(int param, TensorField field, int index) const;
};

/// `checked` (Options::debug_checks): the kernel also receives every size and stride of each tensor it
/// reads or writes through pointers, for the bounds checks of its accesses.
ArgumentPlan plan_arguments(const ir::Graph& g, const TmaPlan& tma, const SmemPlan& smem, int threads, bool checked = false);

}  // namespace tilejit::passes
