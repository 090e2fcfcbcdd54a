// Kernels with a wrong block shape, axis or index (arange, zeros, reshape, permute, sum, dot, store) that must fail while tracing.
#include <doctest/doctest.h>

#include "error_check.h"

using namespace tilejit::dsl;
using tilejit::test::bad_line;
using tilejit::test::check_user_error;
using tilejit::test::trace_error;

namespace {
const std::string kFile = "block_errors_test.cpp";
}  // namespace

TEST_SUITE("error") {
TEST_CASE("operator +: block shapes that do not broadcast") {
  // Operators cannot take a std::source_location argument, so their errors
  // name the line of the last operation that could: here the second arange.
  auto k = tilejit::kernel("broadcast_add", [](Tensor<i32, 1> x) {
    auto a = arange(0, 16);
    bad_line = __LINE__; auto b = arange(0, 8);
    auto c = a + b;
    store(x, a, c);
  });
  check_user_error(trace_error(k), {"add: block shapes cannot be broadcast together", "[16] and [8]",
                                    "each dimension equal or 1"}, kFile);
}

TEST_CASE("operator *: an operand made on the same line gives that line") {
  auto k = tilejit::kernel("broadcast_mul", [](Tensor<i32, 2> x) {
    auto a = arange(0, 16).expand_dims<1>() * arange(0, 4).expand_dims<0>();  // [16, 4]
    bad_line = __LINE__; auto c = a * arange(0, 8);
    store(x, a, c);
  });
  check_user_error(trace_error(k), {"mul: block shapes cannot be broadcast together", "[16, 4] and [8]",
                                    "each dimension equal or 1"}, kFile);
}

TEST_CASE("arange: end equal to start") {
  auto k = tilejit::kernel("arange_empty", [](Tensor<i32, 1>) {
    bad_line = __LINE__; arange(5, 5);
  });
  check_user_error(trace_error(k), {"arange: end must be greater than start", "start 5, end 5", "end > start"}, kFile);
}

TEST_CASE("arange: end below start") {
  auto k = tilejit::kernel("arange_reversed", [](Tensor<i32, 1>) {
    bad_line = __LINE__; arange(8, 2);
  });
  check_user_error(trace_error(k), {"arange: end must be greater than start", "start 8, end 2", "end > start"}, kFile);
}

TEST_CASE("zeros: block too large") {
  auto k = tilejit::kernel("block_too_large", [](Tensor<f32, 1>) {
    bad_line = __LINE__; zeros<f32>({2048, 1024});
  });
  check_user_error(trace_error(k), {"block too large", "2097152 elements", "1048576"}, kFile);
}

TEST_CASE("arange: block too large") {
  auto k = tilejit::kernel("arange_too_large", [](Tensor<f32, 1>) {
    bad_line = __LINE__; arange(0, (1 << 20) + 1);
  });
  check_user_error(trace_error(k), {"arange: block too large", "1048577 elements", "1048576"}, kFile);
}

TEST_CASE("zeros: a dimension of 0") {
  auto k = tilejit::kernel("zeros_dim0", [](Tensor<f32, 1>) {
    bad_line = __LINE__; zeros<f32>({4, 0});
  });
  check_user_error(trace_error(k), {"block dimensions must be positive", "dimension 1 = 0", ">= 1"}, kFile);
}

TEST_CASE("reshape: a different element count") {
  auto k = tilejit::kernel("reshape_count", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8});
    bad_line = __LINE__; z.reshape({5, 6});
  });
  check_user_error(trace_error(k), {"reshape: the new shape must have the same number of elements", "[4, 8] -> [5, 6]",
                                    "32 elements"}, kFile);
}

TEST_CASE("permute: an axis named twice") {
  auto k = tilejit::kernel("permute_repeat", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8, 2});
    bad_line = __LINE__; z.permute({0, 2, 0});
  });
  check_user_error(trace_error(k), {"permute: the permutation must name each dimension once", "perm[2] = 0", "0..2"}, kFile);
}

TEST_CASE("permute: an axis out of range") {
  auto k = tilejit::kernel("permute_range", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8});
    bad_line = __LINE__; z.permute({1, 2});
  });
  check_user_error(trace_error(k), {"permute: the permutation must name each dimension once", "perm[1] = 2", "0..1"}, kFile);
}

TEST_CASE("sum: reduction axis out of range") {
  auto k = tilejit::kernel("sum_axis", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8});
    bad_line = __LINE__; sum(z, 2);
  });
  check_user_error(trace_error(k), {"sum: axis out of range", "2", "0..1"}, kFile);
}

TEST_CASE("argmax: negative reduction axis") {
  auto k = tilejit::kernel("argmax_axis", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8});
    bad_line = __LINE__; argmax(z, -1);
  });
  check_user_error(trace_error(k), {"argmax: axis out of range", "-1", "0..1"}, kFile);
}

TEST_CASE("dot: inner dimensions differ") {
  auto k = tilejit::kernel("dot_inner", [](Tensor<f32, 1>) {
    auto a = zeros<f16>({16, 32});
    auto b = zeros<f16>({16, 8});
    auto acc = zeros<f32>({16, 8});
    bad_line = __LINE__; dot(a, b, acc);
  });
  check_user_error(trace_error(k), {"dot: inner dimensions differ", "a is [16, 32], b is [16, 8]",
                                    "a.shape[1] == b.shape[0]"}, kFile);
}

TEST_CASE("dot: accumulator of the wrong shape") {
  auto k = tilejit::kernel("dot_acc", [](Tensor<f32, 1>) {
    auto a = zeros<f16>({16, 32});
    auto b = zeros<f16>({32, 8});
    auto acc = zeros<f32>({8, 16});
    bad_line = __LINE__; dot(a, b, acc);
  });
  check_user_error(trace_error(k), {"dot: accumulator shape must be [M, N]", "acc is [8, 16], expected [16, 8]",
                                    "[M, N]"}, kFile);
}

TEST_CASE("program_id: axis 3") {
  auto k = tilejit::kernel("program_id_axis", [](Tensor<f32, 1>) {
    bad_line = __LINE__; program_id(3);
  });
  check_user_error(trace_error(k), {"program_id: axis must be 0, 1 or 2", "3", "0..2"}, kFile);
}

TEST_CASE("num_programs: axis -1") {
  auto k = tilejit::kernel("num_programs_axis", [](Tensor<f32, 1>) {
    bad_line = __LINE__; num_programs(-1);
  });
  check_user_error(trace_error(k), {"num_programs: axis must be 0, 1 or 2", "-1", "0..2"}, kFile);
}

TEST_CASE("broadcast_to: a target shape smaller than the block") {
  auto k = tilejit::kernel("broadcast_to_shape", [](Tensor<f32, 1>) {
    auto z = zeros<f32>({4, 8});
    bad_line = __LINE__; z.broadcast_to({1, 8});
  });
  check_user_error(trace_error(k), {"broadcast_to: the block does not broadcast to the target shape",
                                    "[4, 8] -> [1, 8]", "each dimension equal or 1"},
                   kFile);
}

TEST_CASE("store: a value whose shape does not broadcast to the offsets") {
  auto k = tilejit::kernel("store_shape", [](Tensor<f32, 1> x) {
    auto offs = arange(0, 16);
    auto v = zeros<f32>({8});
    bad_line = __LINE__; store(x, offs, v);
  });
  check_user_error(trace_error(k), {"store: block shapes cannot be broadcast together", "[8] and [16]",
                                    "each dimension equal or 1"}, kFile);
}

TEST_CASE("store: a value larger than the offsets block") {
  auto k = tilejit::kernel("store_larger", [](Tensor<f32, 2> x) {
    auto offs = arange(0, 16).expand_dims<0>();  // [1, 16]
    auto v = zeros<f32>({4, 16});
    bad_line = __LINE__; store(x, offs, v);
  });
  check_user_error(trace_error(k), {"store: the value does not broadcast to the offsets' shape", "[4, 16] vs [1, 16]", ""}, kFile);
}

TEST_CASE("load: a mask larger than the offsets block") {
  auto k = tilejit::kernel("load_mask", [](Tensor<f32, 2> x) {
    auto offs = arange(0, 16).expand_dims<0>();                          // [1, 16]
    auto mask = arange(0, 4).expand_dims<1>() < arange(0, 16).expand_dims<0>();  // [4, 16]
    bad_line = __LINE__; load(x, offs, mask);
  });
  check_user_error(trace_error(k), {"load: the mask does not broadcast to the offsets' shape", "[4, 16] vs [1, 16]", ""}, kFile);
}

TEST_CASE("tensor.size: dimension out of range") {
  auto k = tilejit::kernel("size_dim", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; x.size(2);
  });
  check_user_error(trace_error(k), {"tensor.size: dimension out of range", "2", "0..1"}, kFile);
}

TEST_CASE("tensor.stride: negative dimension") {
  auto k = tilejit::kernel("stride_dim", [](Tensor<f32, 3> x) {
    bad_line = __LINE__; x.stride(-1);
  });
  check_user_error(trace_error(k), {"tensor.stride: dimension out of range", "-1", "0..2"}, kFile);
}
}  // TEST_SUITE
