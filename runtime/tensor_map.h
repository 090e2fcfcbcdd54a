// Host encoding of TMA descriptors with tilejit's own rule checks first (private to runtime/).
#pragma once

#include <array>
#include <cstdint>

#include "tilejit/codegen/codegen.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// The 128 bytes of a CUtensorMap.
struct alignas(64) TensorMapBytes {
  std::array<unsigned char, 128> bytes{};
};

/// True when `a` and `b` describe the same memory the same way (their descriptors are equal).
inline bool same_tensor(const TensorArg& a, const TensorArg& b) {
  return a.data == b.data && a.dtype == b.dtype && a.rank == b.rank && a.sizes == b.sizes && a.strides == b.strides;
}

/// Encodes descriptor `d` for tensor `t` with cuTensorMapEncodeTiled. The tensor
/// is first merged (d.merge_groups) and checked against every rule of
/// tma_rules.h; a violation is a UserError located at the op that uses the
/// descriptor (`file`, `line`). Driver failures are CudaErrors.
TensorMapBytes encode_tensor_map(const codegen::HostDescriptor& d, const TensorArg& t, const std::string& file, unsigned line);

/// The tensor after applying d.merge_groups (a UserError when not contiguous).
TensorArg descriptor_view(const codegen::HostDescriptor& d, const TensorArg& t, const std::string& file, unsigned line);

}  // namespace tilejit::detail
