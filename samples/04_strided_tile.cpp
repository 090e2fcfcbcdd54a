// Sample 04: a strided TMA tile: every third row of a 6x4 box, on the GPU or in the CPU interpreter.
//
// The kernel is every_third_row_kernel() in sample_kernels.h: element strides
// {3, 1} on a box {6, 4} read rows m and m + 3 of x as a 2 x 4 tile, which is
// stored as rows 2 i and 2 i + 1 of y. The innermost element stride must be 1
// on Hopper, and the stride must divide the box; tilejit checks both when the
// kernel is traced.
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto gather = every_third_row_kernel();

  const int64_t rows = 20, cols = 12;                        // 20 rows: the last box reaches row 21
  const int64_t boxes = tilejit::cdiv(rows, 6), out_rows = boxes * 2;
  SampleBuffer<float> x(rows * cols), y(out_rows * cols, -1.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i);
  x.to_device();
  y.to_device();

  gather.launch(nullptr, tilejit::dim3(boxes, cols / 4), tilejit::Config{},
                tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}),
                tilejit::TensorView<f32, 2>(y.kernel_ptr(), {out_rows, cols}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  y.to_host();

  // Rows of x past its end (row 21 here) were zero-filled by the load: -1 would mean "not written".
  int64_t bad = 0;
  for (int64_t r = 0; r < out_rows; ++r)
    for (int64_t c = 0; c < cols; ++c) bad += y[r * cols + c] != (3 * r < rows ? x[3 * r * cols + c] : 0.0f);
  std::printf("%s sample_04_strided_tile on %s: %lld boxes of 6x4 read as 2x4 tiles, %lld mismatches\n",
              bad ? "FAIL" : "PASS", run_target().c_str(), static_cast<long long>(boxes * (cols / 4)),
              static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_04_strided_tile: %s\n", e.what());
  return 1;
}
