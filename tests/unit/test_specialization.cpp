// The argument specialisation a launch computes from its arguments (runtime/arg_packing.h): which facts a
// tensor argument satisfies (alignment, sizes and strides divisible by 16, memory apart from every other
// tensor argument), and that no two facts share a bit at any rank.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "arg_packing.h"

using tilejit::KernelArg;
using tilejit::TensorArg;
using S = tilejit::codegen::Specialization;

namespace {

KernelArg tensor(void* data, std::vector<int64_t> sizes, std::vector<int64_t> strides = {}) {
  KernelArg a;
  a.kind = KernelArg::Tensor;
  a.tensor.data = data;
  a.tensor.dtype = tilejit::ir::DType::f32;
  a.tensor.rank = static_cast<int>(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    a.tensor.sizes[d] = sizes[d];
    a.tensor.strides[d] = strides.empty() ? stride : strides[d];
    stride *= sizes[d];
  }
  return a;
}

std::vector<S::Bits> facts(const std::vector<KernelArg>& args) {
  std::vector<S::Bits> out(args.size());
  tilejit::detail::specialization_facts(args, out.data());
  return out;
}

bool apart(S::Bits b) { return (b & S::kDisjoint) != 0; }

}  // namespace

TEST_CASE("specialisation: every fact has its own bit at every rank") {
  std::vector<S::Bits> bits{S::kBaseAligned, S::kDisjoint};
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
  // A rank-6 tensor whose last stride divides by 16 and whose first size does not: no size fact.
  std::vector<float> mem(4096);
  const KernelArg t = tensor(mem.data(), {3, 2, 2, 2, 2, 16}, {512, 256, 128, 64, 32, 16});
  const S::Bits b = tilejit::detail::specialization_bits(t);
  CHECK((b & S::stride_div16(5)) != 0);
  CHECK((b & S::size_div16(0)) == 0);
  CHECK((b & S::size_div16(5)) != 0);
}

TEST_CASE("specialisation: a tensor is apart when its bytes overlap no other tensor argument's") {
  std::vector<float> a(1024), b(1024);
  KernelArg scalar;
  scalar.kind = KernelArg::Scalar;
  SUBCASE("two buffers, and a scalar") {
    const auto f = facts({tensor(a.data(), {32, 32}), tensor(b.data(), {32, 32}), scalar});
    CHECK(apart(f[0]));
    CHECK(apart(f[1]));
    CHECK(f[2] == 0);
  }
  SUBCASE("the same buffer twice (in place)") {
    const auto f = facts({tensor(a.data(), {32, 32}), tensor(a.data(), {32, 32})});
    CHECK_FALSE(apart(f[0]));
    CHECK_FALSE(apart(f[1]));
  }
  SUBCASE("halves of one buffer touch but do not overlap; one element more does") {
    CHECK(apart(facts({tensor(a.data(), {512}), tensor(a.data() + 512, {512})})[0]));
    CHECK_FALSE(apart(facts({tensor(a.data(), {513}), tensor(a.data() + 512, {512})})[0]));
  }
  SUBCASE("interleaved columns overlap by their span, as the checks see them") {
    const auto f = facts({tensor(a.data(), {32, 16}, {32, 1}), tensor(a.data() + 16, {32, 16}, {32, 1})});
    CHECK_FALSE(apart(f[0]));
  }
  SUBCASE("a tensor of a TensorArray argument counts") {
    KernelArg arr;
    arr.kind = KernelArg::TensorArray;
    arr.array = {tensor(b.data(), {16}).tensor, tensor(a.data() + 100, {16}).tensor};
    const auto f = facts({tensor(a.data(), {1024}), arr, tensor(b.data() + 512, {16})});
    CHECK_FALSE(apart(f[0]));  // overlaps the array's second tensor
    CHECK(f[1] == 0);          // array arguments carry no facts of their own
    CHECK(apart(f[2]));        // past the array's first tensor
  }
  SUBCASE("an empty tensor overlaps nothing and nothing overlaps it") {
    const auto f = facts({tensor(a.data(), {0, 32}), tensor(a.data(), {32, 32})});
    CHECK(apart(f[0]));
    CHECK(apart(f[1]));
  }
}
