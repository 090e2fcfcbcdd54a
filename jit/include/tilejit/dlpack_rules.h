// The checks behind tilejit/dlpack.h: a DLPack tensor's fields against what a TensorView needs.
//
// This header does not include dlpack.h: tilejit/dlpack.h copies the fields of a DLTensor into
// DLPackFields, so that the checks (and their messages) are compiled once into the library and
// programs that never include tilejit/dlpack.h need no DLPack header at all.
#pragma once

#include <cstdint>
#include <source_location>
#include <string_view>

#include "tilejit/ir/dtype.h"
#include "tilejit/launch_args.h"

namespace tilejit {

/// Where the kernel reads a tensor given through DLPack.
enum class DLPackDevice : uint8_t {
  cuda,  ///< kernel.launch(): CUDA device memory (kDLCUDA) or managed memory (kDLCUDAManaged)
  host,  ///< kernel.interpret(): host memory (kDLCPU, kDLCUDAHost pinned, kDLCUDAManaged)
};

/// What from_dlpack checks besides the dtype and rank of the C++ type.
struct DLPackOptions {
  DLPackDevice device = DLPackDevice::cuda;
  /// Check the rules of a TMA tensor (docs/tma_hardware.md): base address 16-byte aligned,
  /// innermost dimension contiguous, other strides positive multiples of 16 bytes, at most 5
  /// dimensions, sizes of at least 1. Leave it on for tensors read or written with
  /// descriptor_load / descriptor_store; turn it off for tensors only used by pointer loads.
  bool tma = true;
  /// The kernel only reads the tensor: accept one its producer marks read-only (DLPack 1.x flag).
  /// The view is then read-only: a launch whose kernel writes it is a UserError before it runs.
  bool read_only = false;
};

namespace dlpack {
/// The DLPack ABI version tilejit reads (the layout of DLManagedTensorVersioned).
inline constexpr uint32_t kMajorVersion = 1;
/// DLPACK_FLAG_BITMASK_READ_ONLY of DLManagedTensorVersioned::flags.
inline constexpr uint64_t kFlagReadOnly = 1;

/// DLDataTypeCode values of the DLPack specification (1.1): spelled here so that older
/// dlpack.h headers (Debian's 0.6 has no fp8 codes) still accept fp8 tensors.
enum Code : uint8_t {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kBfloat = 4,
  kBool = 6,
  kFloat8_e4m3fn = 10,
  kFloat8_e5m2 = 12,
};
/// DLDeviceType values of the specification.
enum Device : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3, kCUDAManaged = 13 };

/// The fields of a DLTensor (dlpack.h is not included here).
struct Fields {
  void* data = nullptr;
  int32_t device_type = 0;
  int32_t device_id = 0;
  int32_t ndim = 0;
  uint8_t code = 0;
  uint8_t bits = 0;
  uint16_t lanes = 0;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;  ///< null: row-major
  uint64_t byte_offset = 0;
};

/// The DLPack (code, bits) of a tilejit element type.
struct TypeCode {
  uint8_t code, bits;
};
TypeCode type_code(ir::DType t);

/// The tensor `f` as a tilejit tensor argument of element type `want` and rank `rank`, its
/// base address advanced by the byte offset and null strides made row-major. Each mismatch is a
/// UserError at `loc` naming the tensor `name`, the field, its value and what tilejit needs.
TensorArg tensor_arg(const Fields& f, ir::DType want, int rank, std::string_view name, const DLPackOptions& opt,
                     std::source_location loc);

/// The checks of a DLManagedTensorVersioned before its tensor is read: the major version (a
/// different one has a different layout) and the read-only flag.
void check_versioned(uint32_t major, uint32_t minor, uint64_t flags, std::string_view name, const DLPackOptions& opt,
                     std::source_location loc);

/// A null DLTensor / DLManagedTensor pointer.
[[noreturn]] void null_tensor(std::string_view name, std::source_location loc);
}  // namespace dlpack

}  // namespace tilejit
