// Sample 05: CuTe-style tile views: a blocked transpose, on the GPU or in the CPU interpreter.
//
// The kernel is transpose_kernel() in sample_kernels.h: tile_view(x, {T, T})
// indexed by tile indices (i, j) gives the TMA coordinate (i * T, j * T), not an
// address; the tile loaded there is stored, transposed, at tile (j, i) of y.
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto transpose = transpose_kernel();

  // Neither dimension is a multiple of the tile; both are multiples of 4 floats
  // (16 bytes) so that every row starts 16-byte aligned, as TMA requires.
  const int64_t rows = 72, cols = 52, tile = 32;
  SampleBuffer<float> x(rows * cols), y(cols * rows + 8, -1.0f);  // 8 guard elements after y
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i);
  x.to_device();
  y.to_device();

  transpose.launch(nullptr, tilejit::dim3(tilejit::cdiv(rows, tile), tilejit::cdiv(cols, tile)),
                   tilejit::Config{{"T", tile}}, tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}),
                   tilejit::TensorView<f32, 2>(y.kernel_ptr(), {cols, rows}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  y.to_host();

  // The stores of edge tiles are clipped at y's edges: the guard elements stay -1.
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) bad += y[c * rows + r] != x[r * cols + c];
  for (int64_t i = cols * rows; i < cols * rows + 8; ++i) bad += y[i] != -1.0f;
  std::printf("%s sample_05_tile_view on %s: %lldx%lld transpose in %lldx%lld tiles, %lld mismatches\n",
              bad ? "FAIL" : "PASS", run_target().c_str(), static_cast<long long>(rows), static_cast<long long>(cols),
              static_cast<long long>(tile), static_cast<long long>(tile), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_05_tile_view: %s\n", e.what());
  return 1;
}
