// Kernels that break a TMA rule (box, element strides, fill, shared memory, reductions) and must fail while tracing.
#include <doctest/doctest.h>

#include "error_check.h"

using namespace tilejit::dsl;
using tilejit::test::bad_line;
using tilejit::test::check_user_error;
using tilejit::test::trace_error;

namespace {
const std::string kFile = "tma_errors_test.cpp";
}  // namespace

TEST_SUITE("error") {
TEST_CASE("descriptor_load: a box above 256 with an outer box dimension above 1 cannot be split") {
  auto k = tilejit::kernel("box_above_256", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {2, 512});
  });
  check_user_error(trace_error(k), {"descriptor_load: box size out of range in dimension 1 (innermost): a box over 256 is split",
                                    "512 (with 2 in dimension 0)", "1..256"}, kFile);
}

TEST_CASE("descriptor_load: box size 0") {
  auto k = tilejit::kernel("box_zero", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {0, 64});
  });
  check_user_error(trace_error(k), {"box size out of range in dimension 0", "0", "1..256"}, kFile);
}

TEST_CASE("descriptor_load: box size above 256 in the innermost dimension") {
  auto k = tilejit::kernel("box_above_256_inner", [](Tensor<bf16, 1> x) {
    bad_line = __LINE__; descriptor_load(x, {0}, {260});  // no piece of 8 bf16 (16 bytes) multiples divides 260
  });
  check_user_error(trace_error(k), {"box size out of range in dimension 0 (innermost)", "260", "1..256"}, kFile);
}

TEST_CASE("descriptor_load: innermost box of 3 x f32 is not a multiple of 16 bytes") {
  auto k = tilejit::kernel("inner_box_bytes", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {8, 3});
  });
  check_user_error(trace_error(k),
                   {"the innermost box dimension must span a multiple of 16 bytes", "3 x 4 bytes = 12 bytes",
                    "a multiple of 16 bytes"}, kFile);
}

TEST_CASE("descriptor_load: two coordinates for a 3-D tensor") {
  auto k = tilejit::kernel("coord_rank", [](Tensor<f32, 3> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {4, 4, 4});
  });
  check_user_error(trace_error(k), {"descriptor_load: one coordinate per tensor dimension", "2 coordinates", "3"}, kFile);
}

TEST_CASE("descriptor_load: two box sizes for a 3-D tensor") {
  auto k = tilejit::kernel("box_count", [](Tensor<f32, 3> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0, 0}, {4, 4});
  });
  check_user_error(trace_error(k), {"descriptor_load: one box size per tensor dimension", "2 box sizes", "3"}, kFile);
}

TEST_CASE("descriptor_load: element stride 9") {
  auto k = tilejit::kernel("estride_9", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {18, 4}, {9, 1});
  });
  check_user_error(trace_error(k), {"element stride out of range in dimension 0", "9", "1..8"}, kFile);
}

TEST_CASE("descriptor_load: element stride 0") {
  auto k = tilejit::kernel("estride_0", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {8, 4}, {0, 1});
  });
  check_user_error(trace_error(k), {"element stride out of range in dimension 0", "0", "1..8"}, kFile);
}

TEST_CASE("descriptor_load: innermost element stride other than 1") {
  auto k = tilejit::kernel("inner_estride", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {8, 8}, {1, 2});
  });
  check_user_error(trace_error(k), {"the innermost element stride must be 1 (the hardware ignores it", "2", "1"}, kFile);
}

TEST_CASE("descriptor_load: one element stride per dimension") {
  auto k = tilejit::kernel("estride_count", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {8, 8}, {1});
  });
  check_user_error(trace_error(k), {"one element stride per dimension", "1 element strides", "2"}, kFile);
}

TEST_CASE("descriptor_load: box 6 with element stride 4 leaves holes (FTTC)") {
  auto k = tilejit::kernel("fttc", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {6, 4}, {4, 1});
  });
  const auto e = trace_error(k);
  check_user_error(e, {"element stride 4 does not divide box size 6 in dimension 0", "box 6, element stride 4",
                       "box % element stride == 0"}, kFile);
  // The message says why: the elements past the last strided one are not zero-filled.
  REQUIRE(e.has_value());
  CHECK(e->rule().find("would not be zero-filled") != std::string::npos);
  CHECK(e->rule().find("fundamental theorem of TMA correctness") != std::string::npos);
  CHECK(e->rule().find("Use a box that is a multiple of the element stride") != std::string::npos);
}

TEST_CASE("descriptor_load: NaN fill on an integer tensor") {
  auto k = tilejit::kernel("nan_fill_int", [](Tensor<i32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {4, 4}, {}, Fill::nan);
  });
  check_user_error(trace_error(k), {"NaN fill needs a floating-point tensor", "i32", "f16, bf16, f32, f64"}, kFile);
}

TEST_CASE("descriptor_load: NaN fill on an fp8 tensor") {
  auto k = tilejit::kernel("nan_fill_fp8", [](Tensor<f8e4m3, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {4, 16}, {}, Fill::nan);
  });
  check_user_error(trace_error(k), {"NaN fill is not available for fp8 tensors", "f8e4m3", "f16, bf16, f32, f64"}, kFile);
}

TEST_CASE("descriptor_load: tile too large for shared memory") {
  auto k = tilejit::kernel("tile_too_large", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {256, 256});
  });
  check_user_error(trace_error(k), {"the tile does not fit in shared memory", "262144 bytes", "232448 bytes"}, kFile);
}

TEST_CASE("descriptor_store: add reduction into a u8 tensor") {
  auto k = tilejit::kernel("reduce_u8", [](Tensor<u8, 2> y) {
    auto v = zeros<u8>({16, 16});
    bad_line = __LINE__; descriptor_store(y, {0, 0}, v, StoreReduce::add);
  });
  check_user_error(trace_error(k),
                   {"descriptor_store: reductions need a 16-bit or wider element type", "u8",
                    "f16, bf16, f32, f64, i32, i64"}, kFile);
}

TEST_CASE("descriptor_store: add reduction into an f64 tensor") {
  auto k = tilejit::kernel("reduce_add_f64", [](Tensor<f64, 2> y) {
    auto v = zeros<f64>({4, 2});
    bad_line = __LINE__; descriptor_store(y, {0, 0}, v, StoreReduce::add);
  });
  check_user_error(trace_error(k),
                   {"the TMA add reduction does not support f64", "f64", "f16, bf16, f32, i32"}, kFile);
}

TEST_CASE("descriptor_store: add reduction into an i64 tensor (the TMA unit faults on it)") {
  auto k = tilejit::kernel("reduce_add_i64", [](Tensor<i64, 1> y) {
    auto v = zeros<i64>({16});
    bad_line = __LINE__; descriptor_store(y, {0}, v, StoreReduce::add);
  });
  check_user_error(trace_error(k), {"the TMA add reduction does not support i64", "i64", "f16, bf16, f32, i32"}, kFile);
  // min and max into i64 stay allowed
  auto m = tilejit::kernel("reduce_max_i64", [](Tensor<i64, 1> y) { descriptor_store(y, {0}, zeros<i64>({16}), StoreReduce::max); });
  CHECK_FALSE(trace_error(m).has_value());
}

TEST_CASE("descriptor_store: the stored block's shape is the box, checked like a load's") {
  auto k = tilejit::kernel("store_box", [](Tensor<f32, 2> y) {
    auto v = zeros<f32>({4, 6});
    bad_line = __LINE__; descriptor_store(y, {0, 0}, v);
  });
  check_user_error(trace_error(k),
                   {"descriptor_store: the innermost box dimension must span a multiple of 16 bytes",
                    "6 x 4 bytes = 24 bytes", "a multiple of 16 bytes"}, kFile);
}

TEST_CASE("prefetch_descriptor: the same box rules as the load it prepares") {
  auto k = tilejit::kernel("prefetch_box", [](Tensor<bf16, 2> x) {
    bad_line = __LINE__; prefetch_descriptor(x, {300, 264});
  });
  check_user_error(trace_error(k), {"prefetch_descriptor: box larger than 256 in two dimensions", "300 and 264", "1..256"}, kFile);
}

TEST_CASE("tile_view: one box size per tensor dimension") {
  auto k = tilejit::kernel("tile_view_count", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; tile_view(x, {64});
  });
  check_user_error(trace_error(k), {"tile_view: one box size per tensor dimension", "1 box sizes", "2"}, kFile);
}

TEST_CASE("tile_view: a stored value must have the view's box shape") {
  auto k = tilejit::kernel("tile_view_store", [](Tensor<f32, 2> x) {
    auto tv = tile_view(x, {8, 16});
    auto v = zeros<f32>({8, 32});
    bad_line = __LINE__; descriptor_store(tv(0, 1), v);
  });
  check_user_error(trace_error(k),
                   {"descriptor_store: the value's shape must equal the tile view's box", "[8, 32]", "the view's box"}, kFile);
}

TEST_CASE("tensor.merge: group sizes must add up to the rank") {
  auto k = tilejit::kernel("merge_sum", [](Tensor<f32, 6> x) {
    bad_line = __LINE__; x.merge({2, 2});
  });
  check_user_error(trace_error(k), {"merge: the group sizes must add up to the tensor rank", "4", "6"}, kFile);
}

TEST_CASE("tensor.merge: a group of zero dimensions") {
  auto k = tilejit::kernel("merge_zero_group", [](Tensor<f32, 6> x) {
    bad_line = __LINE__; x.merge({0, 6});
  });
  check_user_error(trace_error(k), {"merge: each group must hold at least one dimension", "group 0 has 0", ">= 1"}, kFile);
}
}  // TEST_SUITE
