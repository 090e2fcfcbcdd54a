// Sample 04: a strided TMA tile (seed 001, figure 1 right): every third row of a box, gathered by the hardware.
//
// In seed 001 the box is (6, 4) and the element strides (1, 3): the tile takes
// every third element of the *innermost* dimension. On Hopper the innermost
// element stride is ignored by the hardware, so tilejit refuses anything but 1
// there. The same picture transposed is allowed: element strides {3, 1} on a
// box {6, 4} (outermost first) read rows m and m + 3, columns n .. n + 3, as a
// tile of ceil(6 / 3) x 4 = 2 x 4 elements.
//
// The stride must divide the box (6 % 3 == 0). With box 6 and stride 4, the
// hardware would leave the elements after the last strided one unfilled near
// the tensor's edge (the "fundamental theorem of TMA correctness"), so
// tilejit rejects that box when the kernel is traced.
#include <tilejit/tilejit.h>

#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  auto gather = tilejit::kernel("every_third_row", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto i = program_id(0), j = program_id(1);
    auto t = descriptor_load(x, {i * 6, j * 4}, {6, 4}, {3, 1});  // Value<f32, 2> of shape [2, 4]
    descriptor_store(y, {i * 2, j * 4}, t);                       // y row r holds x row 3 r
  });

  const int64_t rows = 20, cols = 12;                        // 20 rows: the last box reaches row 21
  const int64_t boxes = tilejit::cdiv(rows, 6), out_rows = boxes * 2;
  std::vector<float> x(rows * cols), y(out_rows * cols, -1.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i);

  gather.interpret(tilejit::dim3(boxes, cols / 4), tilejit::Config{},
                   tilejit::TensorView<f32, 2>(x.data(), {rows, cols}),
                   tilejit::TensorView<f32, 2>(y.data(), {out_rows, cols}));

  // Rows of x past its end (row 21 here) were zero-filled by the load.
  int64_t bad = 0;
  for (int64_t r = 0; r < out_rows; ++r)
    for (int64_t c = 0; c < cols; ++c) bad += y[r * cols + c] != (3 * r < rows ? x[3 * r * cols + c] : 0.0f);
  std::printf("%s sample_04_strided_tile: %lld boxes of 6x4 read as 2x4 tiles, %lld mismatches\n", bad ? "FAIL" : "PASS",
              static_cast<long long>(boxes * (cols / 4)), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_04_strided_tile: %s\n", e.what());
  return 1;
}
