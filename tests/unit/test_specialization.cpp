// The argument specialisation a launch computes from a tensor argument (runtime/arg_packing.h): no two facts
// share a bit at any rank, and a tensor's facts are its own.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "arg_packing.h"

using tilejit::KernelArg;
using S = tilejit::codegen::Specialization;

namespace {

KernelArg tensor(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  KernelArg a;
  a.kind = KernelArg::Tensor;
  a.tensor.data = data;
  a.tensor.dtype = tilejit::ir::DType::f32;
  a.tensor.rank = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    a.tensor.sizes[d] = sizes[d];
    a.tensor.strides[d] = strides[d];
  }
  return a;
}

}  // namespace

TEST_CASE("specialisation: every fact has its own bit at every rank") {
  std::vector<S::Bits> bits{S::kBaseAligned};
  for (int d = 0; d < tilejit::kMaxTensorRank; ++d) {
    bits.push_back(S::stride_div16(d));
    bits.push_back(S::size_div16(d));
  }
  S::Bits seen = 0;
  for (S::Bits b : bits) {
    CHECK((seen & b) == 0);
    CHECK((S::kAll & b) == b);
    seen |= b;
  }
  CHECK(seen == S::kAll);
}

TEST_CASE("specialisation: the facts of a rank-8 tensor are its own (its last strides share no bit with its sizes)") {
  // Every stride a multiple of 16, no size: the sizes' bits stay clear. With 16-bit facts the strides of
  // dimensions 5-7 took the bits of sizes 0-2, and a kernel compiled for such a launch assumed sizes it did not have.
  alignas(16) static float mem[4096];
  const KernelArg t = tensor(mem, {3, 3, 3, 3, 3, 3, 3, 3}, {16, 16, 16, 16, 16, 16, 16, 16});
  const S::Bits b = tilejit::detail::specialization_bits(t);
  CHECK((b & S::kBaseAligned) != 0);
  for (int d = 0; d < 8; ++d) {
    CHECK((b & S::stride_div16(d)) != 0);
    CHECK((b & S::size_div16(d)) == 0);
  }
  // And the other way round: sizes of 16, strides of 3.
  const S::Bits c = tilejit::detail::specialization_bits(tensor(mem, {16, 16, 16, 16, 16, 16, 16, 16}, {3, 3, 3, 3, 3, 3, 3, 3}));
  for (int d = 0; d < 8; ++d) {
    CHECK((c & S::stride_div16(d)) == 0);
    CHECK((c & S::size_div16(d)) != 0);
  }
}
