// Hostile inputs at the kernel boundary: overflowing sizes, TMA extents, read-only views, scalars out of range, call sites.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "error_check.h"
#include "tilejit/runtime/log.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::TensorView;
using tilejit::test::bad_line;
using tilejit::test::catch_user_error;
using tilejit::test::check_user_error;
using tilejit::test::trace_error;

namespace {
const std::string kFile = "hostile_errors_test.cpp";
constexpr int64_t k2p32 = int64_t{1} << 32;
}  // namespace

TEST_SUITE("error") {
TEST_CASE("zeros({2^32, 2^32}): the element count does not wrap to 0") {
  auto k = tilejit::kernel("zeros_wrap", [](Tensor<f32, 1> y, Meta<"M"> M) {
    bad_line = __LINE__; auto z = zeros<f32>({M, M});
    store(y, arange(0, 1), sum(sum(z, 1), 0).reshape({1}));
  });
  const Config c{{"M", k2p32}};
  check_user_error(trace_error(k, c), {"full: block too large", "4294967296 x 4294967296 (over 2^63) elements", "1048576"}, kFile);
  // warmup traces the kernel first, so it refuses the configuration too.
  check_user_error(catch_user_error([&] { k.warmup({c}); }),
                   {"full: block too large", "4294967296 x 4294967296 (over 2^63) elements", "1048576"}, kFile);
}

TEST_CASE("a product of dimensions that stays in 64 bits but exceeds the block limit") {
  auto k = tilejit::kernel("zeros_big", [](Tensor<f32, 1>) {
    bad_line = __LINE__; (void)full<i32>({65536, 65536, 16}, 1);
  });
  check_user_error(trace_error(k), {"full: block too large", "68719476736 elements", "1048576"}, kFile);
}

TEST_CASE("reshape to dimensions beyond 32 bits is refused instead of truncated") {
  auto k = tilejit::kernel("reshape_wrap", [](Tensor<f32, 1>) {
    auto a = zeros<f32>({4});
    bad_line = __LINE__; (void)a.reshape({k2p32 + 4});
  });
  check_user_error(trace_error(k), {"reshape: block too large", "4294967300 elements", "1048576"}, kFile);
}

TEST_CASE("broadcasting two blocks into more than 2^20 elements") {
  auto k = tilejit::kernel("broadcast_big", [](Tensor<f32, 1>) {
    auto a = zeros<i32>({2048}).reshape({2048, 1});
    // An operator has no source_location of its own: its errors name the line of the last DSL call.
    bad_line = __LINE__; auto b = zeros<i32>({2048}).reshape({1, 2048}); (void)(a + b);
  });
  check_user_error(trace_error(k), {"add: block too large", "[2048, 1] and [1, 2048] broadcast to [2048, 2048] = 4194304 elements",
                                    "1048576"}, kFile);
}

TEST_CASE("arange whose length overflows 64 bits") {
  auto k = tilejit::kernel("arange_wrap", [](Tensor<f32, 1>) {
    bad_line = __LINE__; (void)arange(INT64_MIN + 1, INT64_MAX);
  });
  check_user_error(trace_error(k), {"arange: block too large",
                                    "9223372036854775807 - (-9223372036854775807), over 2^63 elements", "1048576"}, kFile);
}

TEST_CASE("a tensor whose offsets overflow 64 bits cannot write before its base") {
  // 2^62 elements with stride 4: (2^62 - 1) * 4 wraps to -4, which let a store at offset -4 pass.
  auto k = tilejit::kernel("offset_wrap", [](Tensor<f32, 1> y) { store(y, arange(0, 4) - 4, 1.0f); });
  alignas(16) float buf[16] = {};
  const TensorView<f32, 1> y(buf + 8, {int64_t{1} << 62}, {4});
  const auto e = catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, y); });
  check_user_error(e, {"kernel 'offset_wrap': argument 0 (arg0): the tensor's element offsets overflow 64 bits",
                       "size[0] = 4611686018427387904, stride[0] = 4",
                       "offsets (size - 1) x stride, summed over the dimensions, within 64 bits"}, kFile);
  for (float v : buf) CHECK(v == 0.0f);
}

TEST_CASE("a TMA tensor with more rows than a 32-bit coordinate reaches") {
  // [2^31 + 64, 16] u8: a load at row 2^31 + 8 read zero fill. The sizes are refused before any
  // program runs, so the buffer behind them is never read.
  auto k = tilejit::kernel("tma_rows", [](Tensor<u8, 2> x, Tensor<u8, 2> y) {
    descriptor_store(y, {0, 0}, descriptor_load(x, {program_id(0) * 16, 0}, {16, 16}));
  });
  alignas(16) static uint8_t xs[256], ys[256];
  const int64_t rows = (int64_t{1} << 31) + 64;
  const TensorView<u8, 2> X(xs, {rows, 16}), Y(ys, {16, 16});
  const auto e = catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, X, Y); });
  REQUIRE(e.has_value());
  CHECK(std::string(e->rule()).find("whose coordinates are signed 32-bit") != std::string::npos);
  check_user_error(e, {"kernel 'tma_rows': argument 0 (arg0) is used through TMA", "size[0] = 2147483712", "<= 2^31 = 2147483648"},
                   kFile);
}

TEST_CASE("a kernel that stores through a view of a const vector is refused before it runs") {
  auto k = tilejit::kernel("store_const", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    store(y, arange(0, 16), load(x, arange(0, 16)));
  });
  const std::vector<float> in(16, 2.0f);
  std::vector<float> out(16, 0.0f);
  // Reading through a const view is fine.
  k.interpret(tilejit::dim3(1), Config{}, TensorView<f32, 1>(in.data(), {16}), TensorView<f32, 1>(out.data(), {16}));
  CHECK(out[15] == 2.0f);
  const std::vector<float> frozen(16, 1.0f);
  const auto e = catch_user_error([&] {
    bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, TensorView<f32, 1>(in.data(), {16}), TensorView<f32, 1>(frozen.data(), {16}));
  });
  REQUIRE(e.has_value());
  CHECK(std::string(e->rule()).find(kFile) != std::string::npos);  // names the store's line
  check_user_error(e, {"kernel 'store_const': argument 1 (arg1) is a read-only view, and the kernel writes it",
                       "a const pointer or a read-only DLPack tensor", "a writable tensor (a non-const pointer)"}, kFile);
  for (float v : frozen) CHECK(v == 1.0f);
  // launch() without a GPU interprets, with the same check at the launch line.
  const auto l = catch_user_error([&] {
    bad_line = __LINE__; k.launch(nullptr, tilejit::dim3(1), Config{}, TensorView<f32, 1>(in.data(), {16}), TensorView<f32, 1>(frozen.data(), {16}));
  });
  check_user_error(l, {"is a read-only view, and the kernel writes it", "a const pointer or a read-only DLPack tensor",
                       "a writable tensor (a non-const pointer)"}, kFile);
}

TEST_CASE("a scalar argument out of its type's range") {
  auto k = tilejit::kernel("scalar_range", [](Tensor<i64, 1> y, Scalar<i32> a, Scalar<f16> h) {
    store(y, arange(0, 1), (a.to<i64>() + h.to<i32>().to<i64>()).reshape({1}));
  });
  std::vector<int64_t> ys(1);
  const TensorView<i64, 1> Y(ys.data(), {1});
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, Y, 5e9, 1.0f); }),
                   {"kernel 'scalar_range': scalar argument 1 (parameter arg1, Scalar<i32>) is out of its type's range",
                    "5000000000", "-2147483648..2147483647"}, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, Y, int64_t{-5000000000}, 1.0f); }),
                   {"scalar argument 1 (parameter arg1, Scalar<i32>) is out of its type's range", "-5000000000",
                    "-2147483648..2147483647"}, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, Y, 1, 1e5); }),
                   {"scalar argument 2 (parameter arg2, Scalar<f16>) is out of its type's range", "100000",
                    "a number that rounds to a finite f16"}, kFile);
  k.interpret(tilejit::dim3(1), Config{}, Y, INT32_MAX, 65504.0);
  CHECK(ys[0] == int64_t{INT32_MAX} + 65504);
}

TEST_CASE("call-site errors name the user's line: grid, null pointer, empty tensor array") {
  auto k = tilejit::kernel("sites", [](Tensor<f32, 1> y) { store(y, arange(0, 4), 1.0f); });
  std::vector<float> ys(4);
  const TensorView<f32, 1> Y(ys.data(), {4});
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(0), Config{}, Y); }),
                   {"grid.x of kernel 'sites' is zero", "0", "1..2147483647"}, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.launch(nullptr, tilejit::dim3(1, 70000), Config{}, Y); }),
                   {"grid.y of kernel 'sites' is too large", "70000", "65535"}, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(1), Config{}, TensorView<f32, 1>(nullptr, {4})); }),
                   {"kernel 'sites': argument 0 (arg0) is a null pointer", "nullptr", "an address (the tensor has elements)"}, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; k.launch(nullptr, tilejit::dim3(1), Config{}, TensorView<f32, 1>(nullptr, {4})); }),
                   {"kernel 'sites': argument 0 (arg0) is a null pointer", "nullptr", "a device address"}, kFile);
  auto a = tilejit::kernel("sites_array", [](TensorArray<f32, 1> xs, Tensor<f32, 1> y) {
    store(y, arange(0, 4), load(xs[0], arange(0, 4)));
  });
  check_user_error(catch_user_error([&] { bad_line = __LINE__; a.launch(nullptr, tilejit::dim3(1), Config{}, tilejit::TensorArrayView<f32, 1>{}, Y); }),
                   {"kernel 'sites_array': argument 0 (arg0), a tensor array, is empty", "0 tensors", ">= 1"}, kFile);
}

TEST_CASE("raw runtime::launch and runtime::warmup: a wrong argument count or kind names the caller's line") {
  auto k = tilejit::kernel("raw_args", [](Tensor<f32, 1> y, Scalar<f32> a) { store(y, arange(0, 4), 1.0f); (void)a; });
  std::vector<float> ys(4);
  const auto bound = k.bind(TensorView<f32, 1>(ys.data(), {4}), 2.0f);
  const std::vector<tilejit::KernelArg> one(bound.begin(), bound.begin() + 1), swapped{bound[1], bound[0]};
  const tilejit::test::Expected count{"kernel 'raw_args': wrong number of kernel arguments", "1", "2"};
  const tilejit::test::Expected kind{"kernel 'raw_args': argument 0 (arg0) has the wrong kind: expected a tensor, got a scalar",
                                     "a scalar", "a tensor"};
  check_user_error(catch_user_error([&] { bad_line = __LINE__; tilejit::runtime::launch(k.base(), nullptr, tilejit::dim3(1), Config{}, one); }),
                   count, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; tilejit::runtime::launch(k.base(), nullptr, tilejit::dim3(1), Config{}, swapped); }),
                   kind, kFile);
  // A warm-up for given arguments checks them as a launch does, before compiling anything.
  check_user_error(catch_user_error([&] { bad_line = __LINE__; tilejit::runtime::warmup(k.base(), Config{}, one); }), count, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; tilejit::runtime::warmup(k.base(), Config{}, swapped); }), kind, kFile);
}

TEST_CASE("autotuner errors found while choosing name the launch / tune / candidates line, not the kernel") {
  auto k = tilejit::kernel("tuned_calls", [](Tensor<f32, 1> y, Scalar<i32> n, Meta<"B"> B) {
    store(y, arange(0, 4), 1.0f); (void)n; (void)B;
  });
  std::vector<float> ys(4);
  const TensorView<f32, 1> Y(ys.data(), {4}), null(nullptr, {4});
  auto none = k.autotune({{"B", {4, 8}}}).grid([](const Config&) { return tilejit::dim3(1); }).prune([](const Config&, const tilejit::TuneArgs&) {
    return true;
  });
  const tilejit::test::Expected pruned{"autotune: the pruning function of kernel 'tuned_calls' dropped every configuration",
                                       "2 configurations for key f32[4]", "at least one left"};
  check_user_error(catch_user_error([&] { bad_line = __LINE__; (void)none.candidates(nullptr, Y, 1); }), pruned, kFile);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; none.launch(nullptr, Y, 1); }), pruned, kFile);
  // The scalar range check of candidates() names its line too.
  check_user_error(catch_user_error([&] { bad_line = __LINE__; (void)none.candidates(nullptr, Y, 5e9); }),
                   {"scalar argument 1 (parameter arg1, Scalar<i32>) is out of its type's range", "5000000000", "-2147483648..2147483647"},
                   kFile);
  auto no_grid = k.autotune({{"B", {4}}});
  check_user_error(catch_user_error([&] { bad_line = __LINE__; no_grid.launch(nullptr, Y, 1); }),
                   {"autotuned kernel 'tuned_calls' has no grid function", "none",
                    ".grid([](const tilejit::Config& c, const tilejit::TuneArgs& args) { return tilejit::dim3(...); })"}, kFile);
  // tune() compiles each candidate for its arguments: a null tensor makes every one unusable, each
  // problem and the error naming the tune() line.
  auto t = k.autotune({{"B", {4}}}).grid([](const Config&) { return tilejit::dim3(1); });
  const auto e = catch_user_error([&] { bad_line = __LINE__; (void)t.tune(nullptr, null, 1); });
  check_user_error(e, {"autotune: no configuration of kernel 'tuned_calls' is usable", "1 candidates for key f32[4]",
                       "at least one that compiles, fits the GPU and runs"}, kFile);
  CHECK(e->rule().find(kFile + ":" + std::to_string(e->line()) + ": kernel 'tuned_calls': argument 0 (arg0) is a null pointer") !=
        std::string::npos);
}

TEST_CASE("an i64 TMA coordinate that i32 cannot hold is refused, not wrapped") {
  constexpr int64_t k2p31 = int64_t{1} << 31;
  // Known while tracing: a literal, a Meta value, a constant i64 scalar, a tile index x box.
  auto literal = tilejit::kernel("coord_literal", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    bad_line = __LINE__; descriptor_store(y, {0, 0}, descriptor_load(x, {k2p31, 0}, {16, 16}));
  });
  const tilejit::test::Expected at_2p31{"descriptor_load: TMA coordinates are signed 32-bit (an i64 index is converted to i32",
                                        "coordinate 0 (dimension 0) = 2147483648", "-2147483648..2147483647"};
  check_user_error(trace_error(literal), at_2p31, kFile);
  auto block = tilejit::kernel("coord_block", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"R"> R) {
    bad_line = __LINE__; descriptor_store(y, {0, 0}, descriptor_load(x, {R, 0}, {16, 16}));
  });
  check_user_error(trace_error(block, Config{{"R", k2p31}}), at_2p31, kFile);
  auto store_neg = tilejit::kernel("coord_store", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    const Scalar<i64> row = -k2p31 - 1;
    bad_line = __LINE__; descriptor_store(y, {row, 0}, descriptor_load(x, {0, 0}, {16, 16}));
  });
  check_user_error(trace_error(store_neg), {"descriptor_store: TMA coordinates are signed 32-bit", "coordinate 0 (dimension 0) = -2147483649",
                                            "-2147483648..2147483647"}, kFile);
  auto tiles = tilejit::kernel("coord_tiles", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto tv = tile_view(x, {16, 16});
    bad_line = __LINE__; descriptor_store(y, {0, 0}, descriptor_load(tv(int64_t{1} << 27, 0)));
  });
  check_user_error(trace_error(tiles), {"descriptor_load: TMA coordinates are signed 32-bit", "coordinate 0 (dimension 0) = 2147483648",
                                        "-2147483648..2147483647"}, kFile);
  // Known only when the kernel runs: the interpreter checks the i64 value before its conversion (on
  // the GPU, the checked kernels of TILEJIT_DEBUG=1 do).
  auto runtime_row = tilejit::kernel("coord_runtime", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<i64> row) {
    bad_line = __LINE__; descriptor_store(y, {0, 0}, descriptor_load(x, {row, 0}, {16, 16}));
  });
  alignas(16) static float xs[16 * 16], ys[16 * 16];
  const TensorView<f32, 2> X(xs, {16, 16}), Y(ys, {16, 16});
  runtime_row.interpret(tilejit::dim3(1), Config{}, X, Y, int64_t{0});
  const unsigned op_line = bad_line;
  const auto e = catch_user_error([&] { runtime_row.interpret(tilejit::dim3(1), Config{}, X, Y, k2p31); });
  check_user_error(e, {"descriptor_load: TMA coordinates are signed 32-bit", "coordinate 0 (dimension 0) = 2147483648 in program (0, 0, 0)",
                       "-2147483648..2147483647"}, kFile, op_line);
}

TEST_CASE("a configuration literal that names a value twice") {
  const auto e = catch_user_error([] { bad_line = __LINE__; tilejit::Config c{{"BM", 64}, {"BM", 128}}; });
  check_user_error(e, {"the configuration names 'BM' twice", "BM=64 and BM=128", "each name once"}, kFile);
}

TEST_CASE("autotuner misuse names the user's line") {
  auto k = tilejit::kernel("tuned_sites", [](Tensor<f32, 1> y, Meta<"B"> B) { store(y, arange(0, 4), 1.0f); (void)B; });
  std::vector<float> ys(4);
  const TensorView<f32, 1> Y(ys.data(), {4});
  auto bad_index = k.autotune({{"B", {4}}}).grid([](const Config&, const tilejit::TuneArgs& a) {
    bad_line = __LINE__; return tilejit::dim3(static_cast<uint32_t>(a.size(3, 0)));
  });
  const auto e = catch_user_error([&] { bad_index.launch(nullptr, Y); });
  // bad_line was set inside the grid function, after catch_user_error reset it.
  check_user_error(e, {"autotune: there is no launch argument 3", "3", "1 arguments, numbered from 0"}, kFile);

  auto t = k.autotune({{"B", {4}}}).grid([](const Config&) { return tilejit::dim3(1); });
  t.launch(nullptr, Y);
  check_user_error(catch_user_error([&] { bad_line = __LINE__; t.options(tilejit::TuneOptions{}); }),
                   {"autotune: the timing options of kernel 'tuned_sites' set after its first launch", "the timing options",
                    "set every option before the first launch or tune()"}, kFile);

  unsigned heuristic_line = 0;
  auto h = k.autotune({{"B", {4}}}).grid([](const Config&) { return tilejit::dim3(1); });
  heuristic_line = __LINE__; h.heuristic("BN", [](const Config&, const tilejit::TuneArgs&) { return 8; });
  check_user_error(catch_user_error([&] { (void)h.candidates(nullptr, Y); }),
                   {"autotune: a heuristic of kernel 'tuned_sites' sets 'BN', which is not one of its Meta parameters", "BN",
                    "Meta names: B, num_warps, num_stages, programs_per_sm, warp_specialize, overlap_products, pingpong, cluster_x, cluster_y, fp_contract, producer_registers, persistent, tile_group"}, kFile, heuristic_line);
}

TEST_CASE("interpret() refuses what launch() would refuse: shared memory over 227 KiB") {
  // Two f32 tiles of 256 x 128 staged through shared memory: 256 KiB.
  auto k = tilejit::kernel("smem_big", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto a = descriptor_load(x, {0, 0}, {256, 128});
    auto b = descriptor_load(x, {256, 0}, {256, 128});
    descriptor_store(y, {0, 0}, a + b);
  });
  alignas(16) static float xs[16 * 128], ys[16 * 128];
  const TensorView<f32, 2> X(xs, {16, 128}), Y(ys, {16, 128});
  const auto e = catch_user_error([&] { k.interpret(tilejit::dim3(1), Config{}, X, Y); });
  // The error of launch(): the shared-memory plan of the generated code, located in the kernel.
  REQUIRE(e.has_value());
  CHECK(std::string(e->rule()).find("shared memory: the kernel needs more than one sm_90 program can have") != std::string::npos);
  CHECK(e->limit() == "232448 bytes");
  CHECK(e->file().ends_with("/" + kFile));
  for (float v : ys) CHECK(v == 0.0f);
}
}  // TEST_SUITE

namespace {
std::vector<std::string> g_warnings;
}  // namespace

TEST_CASE("a configuration value that no Meta parameter reads is a warning naming it") {
  auto k = tilejit::kernel("extra_value", [](Tensor<f32, 1> y, Meta<"B"> B) { store(y, arange(0, 4), 1.0f); (void)B; });
  std::vector<float> ys(4);
  g_warnings.clear();
  tilejit::set_log_level(tilejit::LogLevel::warn);
  tilejit::set_log_callback([](tilejit::LogLevel level, std::string_view message) {
    if (level >= tilejit::LogLevel::warn) g_warnings.emplace_back(message);
  });
  k.interpret(tilejit::dim3(1), Config{{"B", 4}, {"BX", 8}}, TensorView<f32, 1>(ys.data(), {4}));
  tilejit::set_log_callback(nullptr);
  bool found = false;
  for (const std::string& w : g_warnings)
    found = found || w.find("configuration value BX=8 is not one of its Meta parameters (Meta names: B)") != std::string::npos;
  CHECK(found);
  CHECK(ys[3] == 1.0f);
}

TEST_CASE("a clustered configuration: extents 1 or 2, at most two programs, and a grid of whole clusters") {
  const auto bad = [](int x, int y) {
    return catch_user_error([&] {
      bad_line = __LINE__; (void)Config{{"B", 16}}.cluster(x, y);
    });
  };
  check_user_error(bad(3, 1), {"cluster: each extent is 1 or 2", "3 x 1", "1 or 2"}, kFile);
  check_user_error(bad(2, 2), {"cluster: at most 2 programs per cluster (x * y)", "2 x 2", "2 x 1 or 1 x 2"}, kFile);
  CHECK(Config{{"B", 16}}.cluster(1, 2).str() == "B=16, num_warps=4, num_stages=auto, cluster=1x2");
  CHECK(Config{{"B", 16}}.set_field("cluster_x", 2).cluster_size() == 2);
  CHECK(Config{{"B", 16}}.cluster(2).hash() != Config{{"B", 16}}.cluster(1, 2).hash());
  CHECK(Config{{"B", 16}}.cluster(1, 1) == Config{{"B", 16}});

  // The interpreter refuses what launch() refuses: a grid that is not whole clusters, before any program runs.
  auto k = tilejit::kernel("cluster_grid", [](Tensor<f32, 1> y, Meta<"B"> B) {
    store(y, program_id(0) * B + arange(0, B), full<f32>({B}, 1.0f));
  });
  std::vector<float> out(48, 0.0f);
  const TensorView<f32, 1> Y(out.data(), {48});
  const auto e = catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(3), Config{{"B", 16}}.cluster(2, 1), Y); });
  check_user_error(e, {"the grid of kernel 'cluster_grid' must be whole clusters: its configuration runs clusters of 2 x 1 programs",
                       "grid (3, 1, 1)", "grid.x a multiple of 2, grid.y a multiple of 1"}, kFile);
  for (float v : out) CHECK(v == 0.0f);
  k.interpret(tilejit::dim3(2), Config{{"B", 16}}.cluster(2, 1), Y);  // whole clusters: the interpreter runs it as usual
  CHECK(out[31] == 1.0f);
  CHECK(out[32] == 0.0f);
}

TEST_CASE("persistent programs: tile_group 0 to 65536 and only with persistent(), no clusters, and the same results") {
  const auto bad_group = [](int rows) {
    return catch_user_error([&] {
      bad_line = __LINE__; (void)Config{{"B", 16}}.persistent().tile_group(rows);
    });
  };
  check_user_error(bad_group(-1), {"tile_group is the number of grid rows (x indices) per group of persistent programs", "-1", "0 to 65536"},
                   kFile);
  check_user_error(bad_group(65537), {"tile_group", "65537", "0 to 65536"}, kFile);
  CHECK(Config{{"B", 16}}.persistent().tile_group(8).str() == "B=16, num_warps=4, num_stages=auto, persistent, tile_group=8");
  CHECK(Config{{"B", 16}}.set_field("persistent", 1) == Config{{"B", 16}}.persistent());
  CHECK(Config{{"B", 16}}.set_field("tile_group", 4).tile_group() == 4);
  CHECK(Config{{"B", 16}}.persistent().hash() != Config{{"B", 16}}.hash());
  CHECK(Config{{"B", 16}}.persistent().tile_group(2).hash() != Config{{"B", 16}}.persistent().hash());
  CHECK_THROWS_AS((Config{{"B", 16}}.set_field("persistent", 2)), tilejit::UserError);

  auto k = tilejit::kernel("persistent_grid", [](Tensor<f32, 1> y, Meta<"B"> B) {
    store(y, (program_id(1) * num_programs(0) + program_id(0)) * B + arange(0, B), full<f32>({B}, 1.0f) + program_id(1).to<f32>());
  });
  std::vector<float> out(96, 0.0f);
  const TensorView<f32, 1> Y(out.data(), {96});
  // Refused before any program runs, naming the caller's line: tile_group without persistent, and clusters.
  auto e = catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(3, 2), Config{{"B", 16}}.tile_group(2), Y); });
  check_user_error(e, {"Config::tile_group of kernel 'persistent_grid' orders persistent programs: it needs Config::persistent()",
                       "tile_group=2 without persistent", "persistent(), or tile_group 0"}, kFile);
  e = catch_user_error([&] { bad_line = __LINE__; k.interpret(tilejit::dim3(4, 2), Config{{"B", 16}}.persistent().cluster(2, 1), Y); });
  check_user_error(e, {"kernel 'persistent_grid': persistent programs (Config::persistent) do not run in clusters", "cluster of 2 programs",
                       "cluster(1, 1)"}, kFile);
  for (float v : out) CHECK(v == 0.0f);
  // The interpreter runs the kernel as traced: the grid's programs, each once.
  k.interpret(tilejit::dim3(3, 2), Config{{"B", 16}}.persistent().tile_group(2), Y);
  for (int i = 0; i < 96; ++i) CHECK(out[static_cast<size_t>(i)] == (i < 48 ? 1.0f : 2.0f));
}
