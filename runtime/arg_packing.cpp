// The out-of-line parts of argument packing: the extent of a tensor argument and the encoding of a
// descriptor array's tensors (done only when an array argument's tensors change).
#include <cstddef>
#include <vector>

#include "arg_packing.h"
#include "launch_internal.h"

namespace tilejit::detail {

int64_t extent_bytes(const TensorArg& t) {
  int64_t last = 0;
  for (int d = 0; d < t.rank; ++d) last += (t.sizes[static_cast<size_t>(d)] - 1) * t.strides[static_cast<size_t>(d)];
  return (last + 1) * ir::size_of(t.dtype);
}

// The descriptors of the tensors of array argument `index`, encoded with that argument's rules.
std::vector<TensorMapBytes> encode_array(const Entry& e, int index, const std::vector<TensorArg>& arr) {
  const auto& hd = e.gen.plan.descriptors[static_cast<size_t>(index)];
  const auto& loc = e.desc_loc[static_cast<size_t>(index)];
  std::vector<TensorMapBytes> maps(arr.size());
  for (size_t t = 0; t < arr.size(); ++t) maps[t] = encode_tensor_map(hd, arr[t], loc.file, loc.line);
  return maps;
}

}  // namespace tilejit::detail
