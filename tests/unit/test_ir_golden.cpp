// Golden tests of the IR printer: the text of seven traced kernels, compared with tests/unit/golden/*.ir.
//
// The files are printed without source locations so that they do not change when
// this file is edited. Each statement of the kernels below makes at most one
// operand that records nodes, so that the node order does not depend on the
// compiler's (unspecified) order of evaluating function arguments. To rewrite them after an intended change of the IR or the
// printer, run the test with TILEJIT_UPDATE_GOLDEN=1 and review the diff.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;

namespace {

std::string golden_path(const std::string& name) { return std::string(TILEJIT_GOLDEN_DIR) + "/" + name + ".ir"; }

bool update_golden() {
  const char* v = std::getenv("TILEJIT_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

/// Compares the printed IR of `k` for `config` with golden file `name`.ir, or rewrites it.
template <class K>
void check_golden(const std::string& name, const K& k, const Config& config) {
  const auto g = k.trace(config);
  const std::string text = tilejit::ir::print(*g);
  const std::string path = golden_path(name);
  if (update_golden()) {
    std::ofstream(path, std::ios::binary) << text;
    MESSAGE("rewrote " << path);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "missing golden file " << path << " (create it with TILEJIT_UPDATE_GOLDEN=1)");
  std::stringstream want;
  want << in.rdbuf();
  INFO("golden file: " << path << " (rewrite with TILEJIT_UPDATE_GOLDEN=1)");
  INFO("printed IR:\n" << text);
  CHECK(text == want.str());
}

}  // namespace

TEST_SUITE("ir") {
TEST_CASE("golden: vector add (masked pointer-style load and store)") {
  auto k = tilejit::kernel("vector_add", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<f32, 1> out, Meta<"B"> B) {
    auto start = program_id(0) * B;
    auto offs = start + arange(0, B);
    auto mask = offs < x.size(0);
    auto a = load(x, offs, mask);
    auto b = load(y, offs, mask);
    store(out, offs, a + b, mask);
  });
  check_golden("vector_add", k, Config{{"B", 128}});
}

TEST_CASE("golden: TMA scale (descriptor_load, cast, scalar multiply, descriptor_store)") {
  auto k = tilejit::kernel("scale", [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Scalar<float> alpha, Meta<"BM"> BM,
                                       Meta<"BN"> BN) {
    auto m = program_id(0) * BM;
    auto n = program_id(1) * BN;
    auto t = descriptor_load(x, {m, n}, {BM, BN});
    descriptor_store(y, {m, n}, (t.to<f32>() * alpha).to<bf16>());
  });
  check_golden("tma_scale", k, Config{{"BM", 64}, {"BN", 128}});
}

TEST_CASE("golden: jagged rows view (device-built descriptors)") {
  auto k = tilejit::kernel("jagged_copy", [](Tensor<i32, 1> offsets, Tensor<f16, 2> values, Tensor<f16, 2> out,
                                             Meta<"BM"> BM, Meta<"D"> D) {
    auto b = program_id(1);
    auto start = load(offsets, b);
    auto end = load(offsets, b + 1);
    auto m = program_id(0) * BM;
    auto t = descriptor_load(values.rows(start, end), {m, 0}, {BM, D});
    descriptor_store(out.rows(start, end), {m, 0}, t);
  });
  check_golden("jagged_rows", k, Config{{"BM", 32}, {"D", 64}});
}

TEST_CASE("golden: loop with a carried value (row sums over K tiles)") {
  auto k = tilejit::kernel("row_sum", [](Tensor<f16, 2> x, Tensor<f32, 1> out, Scalar<i32> k_tiles, Meta<"BM"> BM,
                                         Meta<"BK"> BK) {
    auto m = program_id(0) * BM;
    auto acc = for_range(0, k_tiles, 1, zeros<f32>({BM}), [&](Scalar<i32> i, Value<f32, 1> a) {
      auto t = descriptor_load(x, {m, i * BK}, {BM, BK});
      return a + sum(t.to<f32>(), 1);
    });
    auto rows = m + arange(0, BM);
    store(out, rows, acc, rows < out.size(0));
  });
  check_golden("loop_carried", k, Config{{"BM", 64}, {"BK", 32}});
}

TEST_CASE("golden: if_else producing a value, and if_then with a side effect") {
  auto k = tilejit::kernel("branches", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Meta<"B"> B) {
    auto pid = program_id(0);
    auto start = pid * B;
    auto offs = start + arange(0, B);
    auto v = load(x, offs);
    auto r = if_else(pid % 2 == 0, [&] { return v * 2.0f; }, [&] { return -v; });
    store(y, offs, r);
    if_then(pid == 0, [&] { store(y, arange(0, B), 0.0f); });
  });
  check_golden("if_else", k, Config{{"B", 64}});
}

TEST_CASE("golden: tensor array with a per-program index and prefetch_descriptor") {
  auto k = tilejit::kernel("array_copy", [](TensorArray<f32, 2> in, Tensor<f32, 3> out, Meta<"BM"> BM, Meta<"BN"> BN) {
    auto which = program_id(1);
    auto t = in[which];
    prefetch_descriptor(t, {BM, BN});
    auto m = program_id(0) * BM;
    descriptor_store(out, {which, m, 0}, descriptor_load(t, {m, 0}, {BM, BN}).expand_dims<0>());
  });
  check_golden("tensor_array_prefetch", k, Config{{"BM", 16}, {"BN", 32}});
}

TEST_CASE("golden: strided tile and tile_view indexing") {
  auto k = tilejit::kernel("strided_tiles", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto tv = tile_view(y, {2, 4});
    auto t = descriptor_load(x, {program_id(0) * 6, 0}, {6, 4}, {3, 1}, Fill::nan);
    descriptor_store(tv(program_id(0), 0), t, StoreReduce::add);
  });
  check_golden("strided_tile_view", k, Config{});
}
}  // TEST_SUITE
