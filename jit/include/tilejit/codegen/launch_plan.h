// The launch plan: the kernel parameters of generated code and the TMA descriptors the runtime encodes for them.
//
// The plan is the ABI between generated code and the runtime: the kernel's parameters are exactly
// `LaunchPlan::slots`, in order, each passed by value. passes::plan_arguments fills it (passes/argument_plan.h);
// the emitter prints the kernel signature from it and the runtime (launch, tensor maps) follows it.
// It depends on nothing but the IR, so that both the passes and the emitter can include it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::codegen {

/// What a TMA descriptor (CUtensorMap) is encoded from, apart from the tensor's address, sizes and strides
/// (known at launch on the host, or in the kernel for a device-built one). The planner's descriptors
/// (passes::Descriptor) and the runtime's (HostDescriptor) are both these fields and more.
struct TensorMapFields {
  int param = -1;                  ///< graph parameter index of the Tensor or TensorArray (-1 for a view)
  std::vector<int> merge_groups;   ///< group sizes when the source is a merged view; empty otherwise
  ir::DType dtype = ir::DType::f32;
  int rank = 0;                    ///< rank after merging (1..5)
  std::array<int32_t, ir::kMaxRank> box{};                   ///< the hardware box, outermost first
  std::array<int32_t, ir::kMaxRank> estride{1, 1, 1, 1, 1};  ///< element strides, outermost first
  int fill = 0;                    ///< 0 zero, 1 NaN-request-zero-FMA
  int swizzle = 0;                 ///< bytes: 0 (none), 32, 64 or 128
  bool used_by_store = false;      ///< a TMA store uses it (the store extent rule applies)

  /// The swizzle as CUtensorMapSwizzle / tensormap.replace codes it: 0 none, 1 32B, 2 64B, 3 128B.
  int swizzle_code() const { return swizzle == 32 ? 1 : swizzle == 64 ? 2 : swizzle == 128 ? 3 : 0; }
};

/// A TMA descriptor the runtime encodes on the host (cuTensorMapEncodeTiled) for
/// every launch (reused while the tensor's address, sizes and strides are unchanged).
struct HostDescriptor : TensorMapFields {
  /// The source line of the op that first uses it (error messages). A location, not a node id: the
  /// node ids of the lowered graph the plan was made from are not those of the traced graph.
  ir::Location first_use;
};

/// One kernel parameter.
struct ArgSlot {
  enum Kind : uint8_t {
    TensorBase,    ///< void*: the tensor's base address                      (param)
    TensorSize,    ///< int64_t: size of dimension `index`                     (param, index)
    TensorStride,  ///< int64_t: stride of dimension `index` in elements       (param, index)
    Scalar,        ///< the scalar in its type (bool and 8-bit: 1 byte, 16-bit floats: their bits)  (param)
    HostDesc,      ///< 128-byte, 64-byte aligned __grid_constant__ descriptor  (index = descriptor)
    DescArray,     ///< const void*: device array of one 128-byte descriptor per tensor of a
                   ///< TensorArray, encoded on the host                      (index = descriptor)
    Workspace,     ///< void*: 128-byte aligned global memory for device-built descriptors,
                   ///< workspace_bytes_per_program bytes per program
    TileGrid,      ///< int: the extent of the launch's grid along axis `index`, which persistent programs run
                   ///< (LaunchPlan::persistent)
  } kind;
  int param = -1;
  int index = 0;
  int size = 8;    ///< bytes
  int align = 8;   ///< bytes
};

struct LaunchPlan {
  std::vector<ArgSlot> slots;
  std::vector<HostDescriptor> descriptors;  ///< HostDesc and DescArray slots index this
  int threads = 128;                        ///< threads per program (num_warps * 32)
  int shared_bytes = 0;                     ///< dynamic shared memory per program
  int64_t workspace_bytes_per_program = 0;  ///< 0 when no descriptor is built on the device
  int device_descriptors = 0;               ///< descriptors each program builds in its workspace (128 bytes each)
  /// Config::persistent: the launch starts min(grid programs, SMs x programs_per_sm) programs along x (at least one
  /// per SM), which run the grid's programs in turn; TileGrid slots carry the grid.
  bool persistent = false;
};

}  // namespace tilejit::codegen
