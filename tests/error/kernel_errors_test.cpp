// Errors in control flow, configurations and the kernel boundary: loops, if_else, Config values, ops outside a kernel.
#include <doctest/doctest.h>

#include <tuple>

#include "error_check.h"

using namespace tilejit::dsl;
using tilejit::test::bad_line;
using tilejit::test::catch_user_error;
using tilejit::test::check_user_error;
using tilejit::test::trace_error;

namespace {
const std::string kFile = "kernel_errors_test.cpp";
}  // namespace

TEST_SUITE("error") {
TEST_CASE("for_range: step 0") {
  auto k = tilejit::kernel("for_step0", [](Tensor<f32, 1>) {
    bad_line = __LINE__; for_range(0, 8, 0, [&](Scalar<i32>) {});
  });
  check_user_error(trace_error(k), {"for_range: the step must be positive", "0", "> 0"}, kFile);
}

TEST_CASE("for_range: negative step") {
  auto k = tilejit::kernel("for_step_negative", [](Tensor<f32, 1>) {
    bad_line = __LINE__; for_range(8, 0, -2, [&](Scalar<i32>) {});
  });
  check_user_error(trace_error(k), {"for_range: the step must be positive", "-2", "> 0"}, kFile);
}

TEST_CASE("for_range: a loop-carried value that changes shape") {
  auto k = tilejit::kernel("for_shape", [](Tensor<f32, 1>) {
    auto init = zeros<f32>({4});
    bad_line = __LINE__; for_range(0, 8, 1, init, [&](Scalar<i32>, Value<f32, 1>) { return zeros<f32>({8}); });
  });
  check_user_error(trace_error(k), {"for_range: value 0 changes shape in the loop body", "[4] -> [8]",
                                    "the same shape"}, kFile);
}

TEST_CASE("for_range: the second of two loop-carried values changes shape") {
  auto k = tilejit::kernel("for_tuple_shape", [](Tensor<f32, 1>) {
    auto init = std::tuple{zeros<f32>({4}), zeros<i32>({2, 2})};
    bad_line = __LINE__; for_range(0, 8, 1, init, [&](Scalar<i32>, Value<f32, 1> a, Value<i32, 2>) { return std::tuple{a, zeros<i32>({2, 4})}; });
  });
  check_user_error(trace_error(k), {"for_range: value 1 changes shape in the loop body", "[2, 2] -> [2, 4]",
                                    "the same shape"}, kFile);
}

TEST_CASE("if_else: branches returning different shapes") {
  auto k = tilejit::kernel("if_else_shape", [](Tensor<f32, 1>) {
    auto c = program_id(0) == 0;
    bad_line = __LINE__; if_else(c, [&] { return zeros<f32>({4}); }, [&] { return zeros<f32>({8}); });
  });
  check_user_error(trace_error(k), {"if_else: value 0 has different shapes in the two branches (then -> else)", "[4] -> [8]",
                                    "the same shape"}, kFile);
}

TEST_CASE("configuration without a value the kernel needs") {
  // The error names the kernel's definition (where Meta<"BM"> is declared),
  // the missing name and the names the configuration does define.
  bad_line = __LINE__; auto k = tilejit::kernel("missing_config", [](Tensor<f32, 2> x, Meta<"BM"> BM, Meta<"BN"> BN) {
    descriptor_load(x, {0, 0}, {BM, BN});
  });
  const unsigned line = bad_line;
  const auto e = trace_error(k, tilejit::Config{{"BN", 64}, {"BK", 32}});
  check_user_error(e, {"the configuration has no value named 'BM'", "configuration {BK=32, BN=64, num_warps=4, num_stages=auto}",
                       "names defined: BK, BN"}, kFile, line);
}

TEST_CASE("configuration with no values at all") {
  bad_line = __LINE__; auto k = tilejit::kernel("empty_config", [](Tensor<f32, 1>, Meta<"BLOCK"> B) { (void)B; });
  const unsigned line = bad_line;
  check_user_error(trace_error(k), {"the configuration has no value named 'BLOCK'", "configuration {num_warps=4, num_stages=auto}",
                                    "no names defined"}, kFile, line);
}

TEST_CASE("a DSL operation called outside a kernel") {
  const auto e = catch_user_error([] {
    bad_line = __LINE__; program_id(0);
  });
  check_user_error(e, {"DSL operations may only be called while a kernel is being traced",
                       "called outside a tilejit::kernel body", ""}, kFile);
}

TEST_CASE("arange called outside a kernel") {
  const auto e = catch_user_error([] {
    bad_line = __LINE__; arange(0, 16);
  });
  check_user_error(e, {"DSL operations may only be called while a kernel is being traced",
                       "called outside a tilejit::kernel body", ""}, kFile);
}

TEST_CASE("Config.warps(3)") {
  const auto e = catch_user_error([] {
    tilejit::Config c{{"BM", 64}};
    bad_line = __LINE__; c.warps(3);
  });
  check_user_error(e, {"num_warps must be a power of two between 1 and 32", "3", "1, 2, 4, 8, 16, 32"}, kFile);
}

TEST_CASE("Config.stages(9)") {
  const auto e = catch_user_error([] {
    tilejit::Config c{{"BM", 64}};
    bad_line = __LINE__; c.stages(9);
  });
  check_user_error(e, {"num_stages must be between 1 and 8, or 0 to let tilejit choose", "9", "0..8"}, kFile);
}

TEST_CASE("Config.num_warps(3) and Config.num_stages(9), the setters named as the getters") {
  const auto w = catch_user_error([] {
    tilejit::Config c{{"BM", 64}};
    bad_line = __LINE__; c.num_warps(3);
  });
  check_user_error(w, {"num_warps must be a power of two between 1 and 32", "3", "1, 2, 4, 8, 16, 32"}, kFile);
  const auto s = catch_user_error([] {
    tilejit::Config c{{"BM", 64}};
    bad_line = __LINE__; c.num_stages(9);
  });
  check_user_error(s, {"num_stages must be between 1 and 8, or 0 to let tilejit choose", "9", "0..8"}, kFile);
  const tilejit::Config c = tilejit::Config{{"BM", 128}, {"BN", 256}}.num_warps(8).num_stages(4).programs_per_sm(1);
  CHECK(c.num_warps() == 8);
  CHECK(c.num_stages() == 4);
  CHECK(c.programs_per_sm() == 1);
  // The older spellings still compile and mean the same.
  CHECK(tilejit::Config({{"BM", 128}, {"BN", 256}}, 8, 4).programs_per_sm(1) == c);
  CHECK(tilejit::Config{{"BM", 128}, {"BN", 256}}.warps(8).stages(4).programs_per_sm(1) == c);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  CHECK(c.min_programs_per_sm() == 1);
#pragma GCC diagnostic pop
}

TEST_CASE("Config constructed with 64 warps") {
  const auto e = catch_user_error([] {
    bad_line = __LINE__; tilejit::Config c({{"BM", 64}}, 64);
  });
  check_user_error(e, {"num_warps must be a power of two between 1 and 32", "64", "1, 2, 4, 8, 16, 32"}, kFile);
}

TEST_CASE("Config with an empty name") {
  const auto e = catch_user_error([] {
    tilejit::Config c;
    bad_line = __LINE__; c.set("", 4);
  });
  check_user_error(e, {"configuration names must not be empty", "\"\"", "a non-empty name"}, kFile);
}

TEST_CASE("Config lookup of a name it does not have") {
  const auto e = catch_user_error([] {
    const tilejit::Config c{{"BM", 64}};
    bad_line = __LINE__; (void)c.get("BN");
  });
  check_user_error(e, {"the configuration has no value named 'BN'", "configuration {BM=64, num_warps=4, num_stages=auto}",
                       "names defined: BM"}, kFile);
}

TEST_CASE("a failed trace is not cached: the next trace fails the same way") {
  auto k = tilejit::kernel("retrace", [](Tensor<f32, 2> x) {
    bad_line = __LINE__; descriptor_load(x, {0, 0}, {2, 512});
  });
  check_user_error(trace_error(k), {"box size out of range", "512 (with 2 in dimension 0)", "1..256"}, kFile);
  check_user_error(trace_error(k), {"box size out of range", "512 (with 2 in dimension 0)", "1..256"}, kFile);
}

TEST_CASE("a block value too large for the registers of the chosen warps is refused at its line") {
  auto k = tilejit::kernel("row_too_long", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    bad_line = __LINE__; auto offs = arange(0, 32768);  // the first value that does not fit
    auto v = load(x, offs);
    store(y, offs, v * 2.0f);
  });
  // 32768 f32 over 4 warps: 256 registers per thread; 16 warps bring it to 64.
  const auto e = catch_user_error([&] { (void)k.cuda_source(tilejit::Config{}); });
  check_user_error(e, {"does not fit in registers with num_warps=4: use num_warps=8 or more", "256 32-bit registers per thread", "128"}, kFile);
  CHECK(!catch_user_error([&] { (void)k.cuda_source(tilejit::Config{}.num_warps(8)); }).has_value());
  // A TMA tile that is only stored back from shared memory never occupies registers: no limit applies.
  auto copy = tilejit::kernel("big_copy", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    descriptor_store(y, {0, 0}, descriptor_load(x, {0, 0}, {128, 64}));
  });
  CHECK(!catch_user_error([&] { (void)copy.cuda_source(tilejit::Config{}.num_warps(1)); }).has_value());
}
}  // TEST_SUITE
