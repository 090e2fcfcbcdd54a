// The TMA descriptor rules, shared by the front end and the runtime.
#include "tilejit/tma_rules.h"

namespace tilejit::tma {

namespace {
std::string s(int64_t v) { return std::to_string(v); }
std::string dim_name(size_t i, size_t rank) {
  return "dimension " + s(static_cast<int64_t>(i)) + (i + 1 == rank ? " (innermost)" : "");
}
}  // namespace

bool fttc_hazard(int64_t box, int64_t estride) { return estride > 1 && estride < box && box % estride != 0; }

std::optional<BoxSplit> split_box(ir::DType dtype, std::span<const int64_t> box, std::span<const int64_t> estride,
                                  std::optional<Violation>* why) {
  const size_t rank = box.size();
  int over = -1;
  for (size_t i = 0; i < rank; ++i) {
    if (box[i] <= kMaxBox) continue;
    if (over >= 0) {
      if (why) *why = Violation{"box larger than " + s(kMaxBox) + " in two dimensions (" + dim_name(static_cast<size_t>(over), rank) +
                                    " and " + dim_name(i, rank) + "); only one may exceed it",
                                s(box[static_cast<size_t>(over)]) + " and " + s(box[i]), "1.." + s(kMaxBox)};
      return std::nullopt;
    }
    over = static_cast<int>(i);
  }
  if (over < 0) return std::nullopt;
  const auto d = static_cast<size_t>(over);
  for (size_t i = 0; i < d; ++i)
    if (box[i] != 1) {
      if (why) *why = Violation{"box size out of range in " + dim_name(d, rank) + ": a box over " + s(kMaxBox) +
                                    " is split into several TMA operations, which needs a box of 1 in every outer dimension",
                                s(box[d]) + " (with " + s(box[i]) + " in " + dim_name(i, rank) + ")", "1.." + s(kMaxBox)};
      return std::nullopt;
    }
  if (!estride.empty() && estride[d] != 1) {
    if (why) *why = Violation{"box size out of range in " + dim_name(d, rank) + ": a box over " + s(kMaxBox) +
                                  " is split into several TMA operations, which needs element stride 1 there",
                              s(box[d]) + " with element stride " + s(estride[d]), "1.." + s(kMaxBox)};
    return std::nullopt;
  }
  const int64_t esize = ir::size_of(dtype);
  for (int64_t p = kMaxBox; p * kMaxBoxPieces >= box[d]; --p)
    if (box[d] % p == 0 && (d + 1 < rank || (p * esize) % kInnerBoxBytesMultiple == 0)) return BoxSplit{over, p, box[d] / p};
  if (why) *why = Violation{"box size out of range in " + dim_name(d, rank) + ": no piece of at most " + s(kMaxBox) +
                                " elements" + (d + 1 == rank ? " spanning a multiple of 16 bytes" : std::string()) +
                                " divides it into at most " + s(kMaxBoxPieces) + " TMA operations",
                            s(box[d]), "1.." + s(kMaxBox)};
  return std::nullopt;
}

std::optional<Violation> check_box(const char* what, ir::DType dtype, std::span<const int64_t> box,
                                   std::span<const int64_t> estride, int fill) {
  const std::string w = what;
  const size_t rank = box.size();
  if (rank < 1 || rank > kMaxRank)
    return Violation{w + ": TMA tensors have 1 to 5 dimensions", s(static_cast<int64_t>(rank)) + " dimensions", "1..5"};
  if (!estride.empty() && estride.size() != rank)
    return Violation{w + ": one element stride per dimension", s(static_cast<int64_t>(estride.size())) + " element strides",
                     s(static_cast<int64_t>(rank))};
  for (size_t i = 0; i < rank; ++i)
    if (box[i] < 1) return Violation{w + ": box size out of range in " + dim_name(i, rank), s(box[i]), "1.." + s(kMaxBox)};
  std::optional<Violation> unsplittable;
  split_box(dtype, box, estride, &unsplittable);
  if (unsplittable) return Violation{w + ": " + unsplittable->rule, unsplittable->value, unsplittable->limit};
  const int64_t esize = ir::size_of(dtype);
  if ((box[rank - 1] * esize) % kInnerBoxBytesMultiple != 0)
    return Violation{w + ": the innermost box dimension must span a multiple of 16 bytes",
                     s(box[rank - 1]) + " x " + s(esize) + " bytes = " + s(box[rank - 1] * esize) + " bytes",
                     "a multiple of 16 bytes"};
  int64_t tile_bytes = esize;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t e = estride.empty() ? 1 : estride[i];
    if (e < 1 || e > kMaxElementStride)
      return Violation{w + ": element stride out of range in " + dim_name(i, rank), s(e), "1.." + s(kMaxElementStride)};
    if (i + 1 == rank && e != 1)
      return Violation{w + ": the innermost element stride must be 1 (the hardware ignores it, so any other value "
                           "would read different elements than asked)",
                       s(e), "1"};
    if (fttc_hazard(box[i], e))
      return Violation{w + ": element stride " + s(e) + " does not divide box size " + s(box[i]) + " in " + dim_name(i, rank) +
                           "; the elements between the last strided element and the box end would not be zero-filled "
                           "(the 'fundamental theorem of TMA correctness'). Use a box that is a multiple of the element "
                           "stride",
                       "box " + s(box[i]) + ", element stride " + s(e), "box % element stride == 0"};
    tile_bytes *= (box[i] + e - 1) / e;
  }
  if (tile_bytes > kMaxSharedBytes)
    return Violation{w + ": the tile does not fit in shared memory", s(tile_bytes) + " bytes", s(kMaxSharedBytes) + " bytes"};
  if (fill != 0 && !ir::is_float(dtype))
    return Violation{w + ": NaN fill needs a floating-point tensor", std::string(ir::name_of(dtype)), "f16, bf16, f32, f64"};
  if (fill != 0 && ir::is_fp8(dtype))
    return Violation{w + ": NaN fill is not available for fp8 tensors (they move as bytes)", std::string(ir::name_of(dtype)),
                     "f16, bf16, f32, f64"};
  return std::nullopt;
}

std::optional<Violation> check_global(ir::DType dtype, uint64_t address, std::span<const int64_t> sizes,
                                      std::span<const int64_t> strides) {
  const size_t rank = sizes.size();
  if (rank < 1 || rank > kMaxRank)
    return Violation{"TMA tensors have 1 to 5 dimensions", s(static_cast<int64_t>(rank)) + " dimensions", "1..5"};
  if (address % kGlobalAddressAlign != 0)
    return Violation{"the base address of a TMA tensor must be 16-byte aligned", "address % 16 = " + s(static_cast<int64_t>(address % 16)),
                     "0"};
  const int64_t esize = ir::size_of(dtype);
  for (size_t i = 0; i < rank; ++i) {
    if (sizes[i] < 1)
      return Violation{"TMA tensor size out of range in " + dim_name(i, rank), s(sizes[i]), kSizeRange};
    // The descriptor takes sizes up to 2^32, but coordinates are signed 32-bit: rows from 2^31 on
    // could not be addressed (a load there would read zero fill, a store write nothing).
    if (sizes[i] > kMaxCoordinateExtent)
      return Violation{"TMA tensor size out of range in " + dim_name(i, rank) + ": " + kCoordinateExtentRule, s(sizes[i]),
                       kSizeRange};
  }
  if (strides[rank - 1] != 1)
    return Violation{"the innermost dimension of a TMA tensor must be contiguous", "stride " + s(strides[rank - 1]), "1"};
  for (size_t i = 0; i + 1 < rank; ++i) {
    const int64_t bytes = strides[i] * esize;
    if (strides[i] < 1 || bytes % kGlobalStrideAlign != 0)
      return Violation{"TMA tensor strides must be positive multiples of 16 bytes (" + dim_name(i, rank) + ")",
                       s(strides[i]) + " elements = " + s(bytes) + " bytes", "a multiple of 16 bytes"};
    if (static_cast<uint64_t>(bytes) >= kMaxGlobalStrideBytes)
      return Violation{"TMA tensor stride too large in " + dim_name(i, rank), s(bytes) + " bytes", "< 2^40 bytes"};
  }
  return std::nullopt;
}

std::optional<Violation> check_inner_coordinate(const char* what, ir::DType dtype, int64_t coord) {
  const int64_t bytes = coord * ir::size_of(dtype);
  if (bytes % 16 == 0) return std::nullopt;
  return Violation{std::string(what) + ": " + kInnerCoordinateRule,
                   s(coord) + " x " + s(ir::size_of(dtype)) + " bytes = " + s(bytes) + " bytes", "a multiple of 16 bytes"};
}

std::optional<Violation> check_coordinate(const char* what, size_t k, size_t rank, int64_t coord) {
  if (coord >= kMinCoordinate && coord <= kMaxCoordinate) return std::nullopt;
  return Violation{std::string(what) + ": " + kCoordinateRule,
                   "coordinate " + s(static_cast<int64_t>(k)) + " (" + dim_name(k, rank) + ") = " + s(coord), kCoordinateRange};
}

std::optional<Violation> check_store_coordinates(std::span<const int64_t> coords) {
  for (size_t i = 0; i < coords.size(); ++i)
    if (coords[i] < 0)
      return Violation{std::string("descriptor_store: ") + kStoreCoordinateRule,
                       "coordinate " + s(static_cast<int64_t>(i)) + " (" + dim_name(i, coords.size()) + ") = " + s(coords[i]),
                       ">= 0"};
  return std::nullopt;
}

std::optional<Violation> check_store_extent(ir::DType dtype, int64_t inner_size) {
  const int64_t bytes = inner_size * ir::size_of(dtype);
  if (bytes % 16 == 0) return std::nullopt;
  return Violation{std::string("descriptor_store: ") + kStoreExtentRule,
                   s(inner_size) + " x " + s(ir::size_of(dtype)) + " bytes = " + s(bytes) + " bytes", "a multiple of 16 bytes"};
}

std::optional<Violation> merge_dims(const TensorArg& in, std::span<const int> groups, TensorArg& out) {
  int total = 0;
  for (int g : groups) total += g;
  if (total != in.rank || groups.empty())
    return Violation{"merge: the group sizes must add up to the tensor rank", s(total), s(in.rank)};
  out = in;
  out.rank = static_cast<int>(groups.size());
  int d = 0;
  for (size_t k = 0; k < groups.size(); ++k) {
    int64_t size = 1;
    for (int j = 0; j < groups[k]; ++j, ++d) {
      if (j + 1 < groups[k]) {
        const int64_t want = in.strides[static_cast<size_t>(d + 1)] * in.sizes[static_cast<size_t>(d + 1)];
        if (in.strides[static_cast<size_t>(d)] != want)
          return Violation{"merge: dimensions " + s(d) + " and " + s(d + 1) + " are not contiguous, so they cannot form one TMA dimension",
                           "stride[" + s(d) + "] = " + s(in.strides[static_cast<size_t>(d)]) + ", stride[" + s(d + 1) + "] * size[" +
                               s(d + 1) + "] = " + s(want),
                           "stride[" + s(d) + "] == stride[" + s(d + 1) + "] * size[" + s(d + 1) + "]"};
      }
      size *= in.sizes[static_cast<size_t>(d)];
    }
    out.sizes[k] = size;
    out.strides[k] = in.strides[static_cast<size_t>(d - 1)];
  }
  for (size_t k = groups.size(); k < out.sizes.size(); ++k) out.sizes[k] = out.strides[k] = 0;
  return std::nullopt;
}

}  // namespace tilejit::tma
