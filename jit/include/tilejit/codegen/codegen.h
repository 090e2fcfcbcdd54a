// The CUDA C++ emitter's interface: generated source plus the launch plan the runtime follows.
//
// The plan is the ABI between generated code and the runtime: the kernel's
// parameters are exactly `slots`, in order, each passed by value.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
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
};

/// What the generated code may assume about the tensor arguments of a launch (argument
/// specialisation, as Triton's): per kernel parameter, bit 0 = the base address is 16-byte
/// aligned, bit 1 + d = stride d (in elements) is a multiple of 16, bit 6 + d = size d is a
/// multiple of 16. Launches compute it from their arguments and keep one compiled kernel per
/// value, so a misaligned tensor runs correctly (in a kernel that assumes less). Unset (empty):
/// every tensor is assumed aligned with every size and stride a multiple of 16 (what warmup()
/// and cuda_source() compile).
struct Specialization {
  std::vector<uint16_t> tensors;  ///< per parameter (0 for parameters that are not tensors)
  static constexpr uint16_t kBaseAligned = 1;
  static constexpr uint16_t stride_div16(int d) { return static_cast<uint16_t>(1u << (1 + d)); }
  static constexpr uint16_t size_div16(int d) { return static_cast<uint16_t>(1u << (6 + d)); }
  /// The bits of parameter `param` (all set when unset).
  uint16_t of(int param) const {
    return tensors.empty() ? uint16_t{0xffff} : tensors[static_cast<size_t>(param)];
  }
  bool operator==(const Specialization&) const = default;
};

struct Options {
  std::string arch = "sm_90a";
  Specialization spec;
  bool line_info = false;
  bool debug_checks = false;  ///< validate device-built descriptors in the kernel and trap with a message
  /// With debug_checks: an mbarrier wait longer than this many milliseconds prints which and traps (the watchdog).
  int watchdog_ms = 2000;
  /// When set, called with the graph as given ("input") and after every lowering step that rewrites it
  /// (the step's name first: "canonicalize", ..., "insert_layout_conversions"); TILEJIT_DUMP=ir connects here.
  std::function<void(std::string_view pass, const ir::Graph&)> dump_ir;
  /// When set, called after every lowering step that makes a plan ("plan_tma", "analyze", ..., "plan_barriers")
  /// with the step's name and the plan in readable text (passes::LoweringStep::plan); TILEJIT_DUMP=ir too.
  std::function<void(std::string_view step, const std::string& plan)> dump_plan;
};

/// Something about a kernel's speed the user may want to change, one sentence naming the source line. A
/// warning (a dot left on CUDA cores, a loop with products left unpipelined) costs a large factor and is
/// logged at warn level; the rest (e.g. an operand copied K-major) at info level.
struct PerformanceNote {
  bool warning = false;
  std::string text;
};

struct GeneratedKernel {
  std::string entry;   ///< extern "C" name: "tj_<kernel>_<16 hex digits of the graph hash>"
  std::string source;  ///< complete CUDA C++ translation unit (prelude included), no cuda.h needed
  /// Where the device prelude (the same text in every kernel) lies in `source`: [begin, end).
  /// The compiler hands it to NVRTC as a header, which NVRTC precompiles once per process.
  size_t prelude_begin = 0, prelude_end = 0;
  LaunchPlan plan;
  std::vector<PerformanceNote> notes;  ///< passes::performance_notes: what the user may change for speed
};

/// Lowers a verified graph to CUDA C++. Throws UserError for programs the GPU
/// backend cannot run (naming the op's source line) and InternalError for bugs.
GeneratedKernel generate(const ir::Graph& g, const Options& options = {});

}  // namespace tilejit::codegen
