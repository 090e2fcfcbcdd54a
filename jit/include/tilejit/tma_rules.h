// The TMA descriptor rules (cuTensorMapEncodeTiled, PTX tensormap), checked before anything reaches the driver.
//
// Each check returns the first broken rule with the offending value and the
// limit, so that the front end (at trace time) and the runtime (at launch, for
// host-encoded descriptors) report the same rule in the same words. All arrays
// are outermost dimension first, as in the DSL.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "tilejit/ir/dtype.h"
#include "tilejit/launch_args.h"

namespace tilejit::tma {

struct Violation {
  std::string rule, value, limit;
};

inline constexpr int kMaxRank = 5;
inline constexpr int kMaxBox = 256;
/// A box over kMaxBox is issued as at most this many TMA operations (split_box).
inline constexpr int kMaxBoxPieces = 64;
inline constexpr int kMaxElementStride = 8;
inline constexpr uint64_t kMaxGlobalDim = uint64_t{1} << 32;
/// Largest size tilejit accepts per TMA dimension: coordinates are signed 32-bit, so elements at
/// 2^31 and beyond (which kMaxGlobalDim would admit) have no coordinate.
inline constexpr int64_t kMaxCoordinateExtent = int64_t{1} << 31;
/// kMaxCoordinateExtent as the messages write it, and why: the host rule (check_global) and the
/// checked kernels' test of device-built descriptors (TILEJIT_DEBUG=1) say the same.
inline constexpr const char* kSizeRange = "1..2^31";
inline constexpr const char* kCoordinateExtentRule =
    "TMA coordinates are signed 32-bit, so every element must have a coordinate below 2^31";
inline constexpr uint64_t kMaxGlobalStrideBytes = uint64_t{1} << 40;
inline constexpr int kGlobalAddressAlign = 16;
inline constexpr int kGlobalStrideAlign = 16;
inline constexpr int kInnerBoxBytesMultiple = 16;
/// Shared memory one CTA may use on sm_90 (227 KiB).
inline constexpr int64_t kMaxSharedBytes = 227 * 1024;

/// The three rules the hardware adds to the seed model (docs/tma_hardware.md), in the words the
/// interpreter and the checked kernels (TILEJIT_DEBUG=1) both use.
inline constexpr const char* kInnerCoordinateRule =
    "the innermost coordinate must be a multiple of 16 bytes (the TMA unit faults with 'illegal instruction' otherwise)";
inline constexpr const char* kStoreCoordinateRule =
    "TMA store coordinates must not be negative (the TMA unit faults with 'illegal instruction'; loads may start before "
    "the tensor, stores may not)";
/// TMA coordinates are signed 32-bit: tracing converts an index of another integer type (i64) to
/// i32, which would wrap a value outside kCoordinateRange. The DSL refuses known values while
/// tracing; a value known only when the kernel runs is checked by the interpreter and by the
/// checked kernels (TILEJIT_DEBUG=1) on the i64 value before its conversion.
inline constexpr const char* kCoordinateRule =
    "TMA coordinates are signed 32-bit (an i64 index is converted to i32, which would wrap)";
inline constexpr int64_t kMinCoordinate = INT32_MIN, kMaxCoordinate = INT32_MAX;
inline constexpr const char* kCoordinateRange = "-2147483648..2147483647";
inline constexpr const char* kStoreExtentRule =
    "the innermost size of the tensor must span a multiple of 16 bytes (a TMA store writes whole 16-byte units and "
    "would overwrite the bytes after each row's last element)";

/// How one user-level box larger than the hardware's 256 per dimension is issued: as `pieces`
/// TMA operations of `piece` coordinates each along dimension `dim`, into (or from) consecutive
/// parts of one shared-memory tile. Possible when only one dimension exceeds 256, every dimension
/// outside it has a box of 1 (so that the parts are contiguous in the row-major tile), its element
/// stride is 1, and some piece of at most 256 divides the box (spanning a multiple of 16 bytes for
/// the innermost dimension).
struct BoxSplit {
  int dim = -1;
  int64_t piece = 0;
  int64_t pieces = 1;
};

/// The split of a box (nullopt when every dimension is within 256); a Violation when the box
/// exceeds 256 in a way that cannot be split.
std::optional<BoxSplit> split_box(ir::DType dtype, std::span<const int64_t> box, std::span<const int64_t> estride,
                                  std::optional<Violation>* why = nullptr);

/// Rules on the box, element strides and fill of one TMA access (known at trace time).
/// `what` names the operation in the messages ("descriptor_load"). A box over 256 in one
/// dimension is accepted when split_box can split it.
std::optional<Violation> check_box(const char* what, ir::DType dtype, std::span<const int64_t> box,
                                   std::span<const int64_t> estride, int fill);

/// Rules on the global side of a descriptor (known when the kernel runs): the
/// base address, sizes (elements) and strides (elements) of the tensor.
std::optional<Violation> check_global(ir::DType dtype, uint64_t address, std::span<const int64_t> sizes,
                                      std::span<const int64_t> strides);

/// Rules the hardware adds at run time (measured on H100/H200, see docs/tma_hardware.md):
/// the innermost coordinate of every TMA access, times the element size, must
/// be a multiple of 16 bytes (otherwise the instruction faults with "illegal
/// instruction"), whatever its sign.
std::optional<Violation> check_inner_coordinate(const char* what, ir::DType dtype, int64_t coord);

/// Coordinate `k` of `rank` (outermost first) within kMinCoordinate..kMaxCoordinate (kCoordinateRule).
std::optional<Violation> check_coordinate(const char* what, size_t k, size_t rank, int64_t coord);

/// A TMA store faults ("illegal instruction") when any coordinate is negative,
/// although loads accept negative coordinates (measured on H200).
std::optional<Violation> check_store_coordinates(std::span<const int64_t> coords);

/// A TMA store writes whole 16-byte units along the innermost dimension, so a
/// tensor whose innermost extent is not a multiple of 16 bytes would get the
/// bytes after its last element of each row overwritten. tilejit refuses such
/// stores rather than write memory the tensor does not own.
std::optional<Violation> check_store_extent(ir::DType dtype, int64_t inner_size);

/// The TMA domain: `in` viewed with consecutive dimensions merged,
/// group k holding groups[k] dimensions (outermost first). A merged dimension
/// has the product of the sizes and the stride of its innermost member. Merged
/// neighbours must be contiguous (stride[d] == stride[d+1] * size[d+1]); the
/// first pair that is not is returned as a Violation naming both dimensions.
std::optional<Violation> merge_dims(const TensorArg& in, std::span<const int> groups, TensorArg& out);

/// The "fundamental theorem of TMA correctness" (nvFuser): a strided tile whose
/// element stride is smaller than the box but does not divide it leaves holes
/// that are not zero-filled once the tensor is larger than the box.
bool fttc_hazard(int64_t box, int64_t estride);

}  // namespace tilejit::tma
