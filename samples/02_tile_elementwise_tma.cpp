// Sample 02: y = a * x + b on a 2-D tensor, tile by tile with TMA descriptor_load / descriptor_store.
//
// Each program moves one BM x BN tile. The tensor is not a multiple of the
// tile in either dimension: TMA handles the edges without any mask. A load
// fills the part of the box outside the tensor with zeros, and a store writes
// only the part inside it.
#include <tilejit/tilejit.h>

#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  auto axpb = tilejit::kernel("axpb", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a, Scalar<f32> b,
                                         Block<"BM"> BM, Block<"BN"> BN) {
    // Coordinates and boxes are written outermost dimension first: {row, column}.
    auto m = program_id(0) * BM;
    auto n = program_id(1) * BN;
    auto t = descriptor_load(x, {m, n}, {BM, BN});  // Value<f32, 2> of shape [BM, BN]
    descriptor_store(y, {m, n}, t * a + b);         // clipped at y's edges
  });

  // TMA needs 16-byte aligned rows: the row length (76 floats = 304 bytes) is a multiple of 16 bytes.
  const int64_t rows = 100, cols = 76, bm = 32, bn = 32;
  const float a = 1.5f, b = -2.0f;
  std::vector<float> x(rows * cols), y(rows * cols, 0.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 97) * 0.25f;

  axpb.interpret(tilejit::dim3(tilejit::cdiv(rows, bm), tilejit::cdiv(cols, bn)), tilejit::Config{{"BM", bm}, {"BN", bn}},
                 tilejit::TensorView<f32, 2>(x.data(), {rows, cols}), tilejit::TensorView<f32, 2>(y.data(), {rows, cols}),
                 a, b);

  int64_t bad = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float ax = a * x[i];  // one rounding per operation, as in the kernel
    bad += y[i] != ax + b;
  }
  std::printf("%s sample_02_tile_elementwise_tma: %lldx%lld tensor in %lldx%lld tiles, %lld mismatches\n",
              bad ? "FAIL" : "PASS", static_cast<long long>(rows), static_cast<long long>(cols),
              static_cast<long long>(bm), static_cast<long long>(bn), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_02_tile_elementwise_tma: %s\n", e.what());
  return 1;
}
