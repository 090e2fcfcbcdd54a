// Sample 02: y = a * x + b on a 2-D tensor, tile by tile with TMA, on the GPU or in the CPU interpreter.
//
// The kernel is axpb_kernel() in sample_kernels.h: each program moves one
// BM x BN tile with descriptor_load / descriptor_store. The tensor here is not
// a multiple of the tile in either dimension: TMA handles the edges without any
// mask (loads zero-fill outside the tensor, stores are clipped to it).
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto axpb = axpb_kernel();

  // TMA needs 16-byte aligned rows: the row length (76 floats = 304 bytes) is a multiple of 16 bytes.
  const int64_t rows = 100, cols = 76, bm = 32, bn = 32;
  const float a = 1.5f, b = -2.0f;
  SampleBuffer<float> x(rows * cols), y(rows * cols, 0.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 97) * 0.25f;
  x.to_device();
  y.to_device();

  axpb.launch(nullptr, tilejit::dim3(tilejit::cdiv(rows, bm), tilejit::cdiv(cols, bn)),
              tilejit::Config{{"BM", bm}, {"BN", bn}}, tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}),
              tilejit::TensorView<f32, 2>(y.kernel_ptr(), {rows, cols}), a, b);
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  y.to_host();

  int64_t bad = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float ax = a * x[i];  // one rounding per operation, as in the kernel
    bad += y[i] != ax + b;
  }
  std::printf("%s sample_02_tile_elementwise_tma on %s: %lldx%lld tensor in %lldx%lld tiles, %lld mismatches\n",
              bad ? "FAIL" : "PASS", run_target().c_str(), static_cast<long long>(rows), static_cast<long long>(cols),
              static_cast<long long>(bm), static_cast<long long>(bn), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_02_tile_elementwise_tma: %s\n", e.what());
  return 1;
}
