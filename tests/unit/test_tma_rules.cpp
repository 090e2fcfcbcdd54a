// The TMA descriptor rules (jit/tma_rules.cpp), each at its limit and one past it.
#include <doctest/doctest.h>

#include <array>
#include <string>
#include <vector>

#include "tilejit/tma_rules.h"

using tilejit::ir::DType;
namespace tma = tilejit::tma;

namespace {
// The rule of a violation, or "" when the check passes.
std::string rule(const std::optional<tma::Violation>& v) { return v ? v->rule : std::string(); }

std::optional<tma::Violation> box(DType t, std::vector<int64_t> b, std::vector<int64_t> e = {}, int fill = 0) {
  return tma::check_box("descriptor_load", t, b, e, fill);
}

std::optional<tma::Violation> global(DType t, uint64_t addr, std::vector<int64_t> sizes, std::vector<int64_t> strides) {
  return tma::check_global(t, addr, sizes, strides);
}
}  // namespace

TEST_CASE("box rules: rank 1..5") {
  CHECK(rule(box(DType::f32, {4})).empty());
  CHECK(rule(box(DType::f32, {1, 1, 1, 1, 4})).empty());
  CHECK(rule(box(DType::f32, {1, 1, 1, 1, 1, 4})).find("1 to 5 dimensions") != std::string::npos);
  CHECK(rule(box(DType::f32, {})).find("1 to 5 dimensions") != std::string::npos);
}

TEST_CASE("box rules: box size 1..256 per dimension, or one dimension split into pieces of at most 256") {
  CHECK(rule(box(DType::f32, {256, 4})).empty());
  CHECK(rule(box(DType::f32, {257, 4})).find("box size out of range") != std::string::npos);  // 257 is prime
  CHECK(rule(box(DType::f32, {0, 4})).find("box size out of range") != std::string::npos);
  CHECK(rule(box(DType::u8, {1, 256})).empty());
  const auto v = box(DType::u8, {1, 264});  // no piece of 16-byte multiples divides 264
  REQUIRE(v);
  CHECK(v->value == "264");
  CHECK(v->limit == "1..256");
  CHECK(rule(box(DType::u8, {1, 272})).empty());  // 17 pieces of 16
  // Splits: the one dimension over 256, all outer dimensions 1.
  std::vector<int64_t> row{1, 4096}, tall{512, 64}, est{1, 1};
  const auto a = tilejit::tma::split_box(DType::f32, row, est);
  REQUIRE(a);
  CHECK(a->dim == 1);
  CHECK(a->piece == 256);
  CHECK(a->pieces == 16);
  const auto b = tilejit::tma::split_box(DType::f32, tall, est);
  REQUIRE(b);
  CHECK(b->dim == 0);
  CHECK(b->pieces == 2);
  std::vector<int64_t> small{64, 64};
  CHECK(!tilejit::tma::split_box(DType::f32, small, est));
  CHECK(rule(box(DType::f32, {2, 512})).find("a box of 1 in every outer dimension") != std::string::npos);
  CHECK(rule(box(DType::f32, {300, 300})).find("in two dimensions") != std::string::npos);
  CHECK(rule(box(DType::f32, {1, 256 * 65})).find("at most 64 TMA operations") != std::string::npos);
}

TEST_CASE("box rules: innermost box bytes a multiple of 16") {
  CHECK(rule(box(DType::f32, {2, 4})).empty());
  CHECK(rule(box(DType::f32, {2, 5})).find("multiple of 16 bytes") != std::string::npos);
  CHECK(rule(box(DType::bf16, {2, 8})).empty());
  CHECK(rule(box(DType::bf16, {2, 12})).find("multiple of 16 bytes") != std::string::npos);
  CHECK(rule(box(DType::f64, {2, 2})).empty());
  CHECK(rule(box(DType::f64, {2, 1})).find("multiple of 16 bytes") != std::string::npos);
}

TEST_CASE("box rules: element strides 1..8, innermost 1, no FTTC hazard") {
  CHECK(rule(box(DType::f32, {16, 4}, {8, 1})).empty());
  CHECK(rule(box(DType::f32, {18, 4}, {9, 1})).find("element stride out of range") != std::string::npos);
  CHECK(rule(box(DType::f32, {16, 4}, {0, 1})).find("element stride out of range") != std::string::npos);
  CHECK(rule(box(DType::f32, {16, 8}, {1, 2})).find("innermost element stride must be 1") != std::string::npos);
  CHECK(rule(box(DType::f32, {12, 4}, {4, 1})).empty());                      // 4 divides 12
  CHECK(rule(box(DType::f32, {6, 4}, {4, 1})).find("fundamental theorem") != std::string::npos);  // 4 < 6, 4 does not divide 6
  CHECK(rule(box(DType::f32, {3, 4}, {4, 1})).empty());                       // stride larger than the box: one element
  CHECK(rule(box(DType::f32, {16, 4}, {1, 1, 1})).find("one element stride per dimension") != std::string::npos);
}

TEST_CASE("box rules: shared memory and fill") {
  CHECK(rule(box(DType::f32, {227, 256})).empty());                        // 232448 bytes = 227 KiB
  CHECK(rule(box(DType::f32, {228, 256})).find("does not fit in shared memory") != std::string::npos);
  CHECK(rule(box(DType::f32, {8, 8}, {}, 1)).empty());
  CHECK(rule(box(DType::i32, {8, 8}, {}, 1)).find("NaN fill needs a floating-point tensor") != std::string::npos);
  CHECK(rule(box(DType::f8e4m3, {8, 16}, {}, 1)).find("NaN fill is not available for fp8") != std::string::npos);
}

TEST_CASE("global rules: address, sizes, strides") {
  CHECK(rule(global(DType::f32, 4096, {8, 4}, {4, 1})).empty());
  CHECK(rule(global(DType::f32, 4096 + 8, {8, 4}, {4, 1})).find("16-byte aligned") != std::string::npos);
  // The descriptor admits sizes up to 2^32, but coordinates are signed 32-bit: 2^31 is the last size
  // whose every element has a coordinate.
  CHECK(rule(global(DType::f32, 4096, {8, int64_t{1} << 31}, {int64_t{1} << 31, 1})).empty());
  CHECK(rule(global(DType::f32, 4096, {(int64_t{1} << 31) + 1, 4}, {4, 1})).find("coordinates are signed 32-bit") !=
        std::string::npos);
  CHECK(rule(global(DType::f32, 4096, {8, (int64_t{1} << 32) + 1}, {(int64_t{1} << 32) + 4, 1})).find("size out of range") !=
        std::string::npos);
  CHECK(rule(global(DType::f32, 4096, {0, 4}, {4, 1})).find("size out of range") != std::string::npos);
  CHECK(rule(global(DType::f32, 4096, {8, 4}, {4, 2})).find("innermost dimension of a TMA tensor must be contiguous") !=
        std::string::npos);
  CHECK(rule(global(DType::f32, 4096, {8, 3}, {3, 1})).find("multiples of 16 bytes") != std::string::npos);  // 12-byte rows
  CHECK(rule(global(DType::u8, 4096, {8, 16}, {16, 1})).empty());
  CHECK(rule(global(DType::u8, 4096, {8, 16}, {(int64_t{1} << 40) - 16, 1})).empty());  // just under 2^40 bytes
  CHECK(rule(global(DType::u8, 4096, {8, 16}, {int64_t{1} << 40, 1})).find("stride too large") != std::string::npos);
}

TEST_CASE("hardware rules measured on the GPU") {
  CHECK(rule(tma::check_inner_coordinate("descriptor_load", DType::f32, -4)).empty());
  CHECK(rule(tma::check_inner_coordinate("descriptor_load", DType::f32, 4)).empty());
  CHECK(rule(tma::check_inner_coordinate("descriptor_load", DType::f32, 3)).find("multiple of 16 bytes") != std::string::npos);
  CHECK(rule(tma::check_inner_coordinate("descriptor_store", DType::bf16, -1)).find("multiple of 16 bytes") != std::string::npos);
  const std::array<int64_t, 2> ok{0, 0}, neg_outer{-1, 0}, neg_inner{0, -4};
  CHECK(rule(tma::check_store_coordinates(ok)).empty());
  CHECK(rule(tma::check_store_coordinates(neg_outer)).find("must not be negative") != std::string::npos);
  CHECK(rule(tma::check_store_coordinates(neg_inner)).find("must not be negative") != std::string::npos);
  CHECK(rule(tma::check_store_extent(DType::f32, 132)).empty());
  CHECK(rule(tma::check_store_extent(DType::f32, 130)).find("whole 16-byte units") != std::string::npos);
  CHECK(rule(tma::check_store_extent(DType::u8, 16)).empty());
  CHECK(rule(tma::check_store_extent(DType::u8, 17)).find("whole 16-byte units") != std::string::npos);
}

TEST_CASE("merged views: contiguous groups merge, others name the dimensions") {
  tilejit::TensorArg t;
  t.rank = 4;
  t.dtype = DType::f32;
  t.sizes = {3, 5, 4, 16};
  t.strides = {320, 64, 16, 1};
  tilejit::TensorArg out;
  const std::array<int, 2> groups{2, 2};
  CHECK(!tma::merge_dims(t, groups, out));
  CHECK(out.rank == 2);
  CHECK(out.sizes[0] == 15);
  CHECK(out.sizes[1] == 64);
  CHECK(out.strides[0] == 64);
  CHECK(out.strides[1] == 1);
  t.strides = {400, 64, 16, 1};  // dimension 0 padded: not contiguous with dimension 1
  const auto v = tma::merge_dims(t, groups, out);
  REQUIRE(v);
  CHECK(v->rule.find("dimensions 0 and 1 are not contiguous") != std::string::npos);
  CHECK(v->value == "stride[0] = 400, stride[1] * size[1] = 320");
}
