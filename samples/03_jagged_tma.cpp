// Sample 03: jagged sequences with TMA, on the GPU or in the CPU interpreter.
//
// The kernel is jagged_scale_kernel() in sample_kernels.h: each program takes a
// view of its own sequence with values.rows(start, end), a descriptor that
// tilejit builds on the device, so that loads past the sequence end read zeros
// and stores stop at its end. It writes out = 2 * values + 1 and, per tile, the
// sum of the tile as loaded (which shows the zero fill).
#include <cstdio>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto jagged = jagged_scale_kernel();

  const std::vector<int32_t> starts = {0, 5, 45, 46, 110};  // 4 sequences of 5, 40, 1 and 64 rows
  const int64_t seqs = 4, total_rows = 110, d = 16, bm = 32, max_tiles = 2;  // cdiv(64, 32) tiles at most
  SampleBuffer<int32_t> offsets(starts.size());
  for (size_t s = 0; s < starts.size(); ++s) offsets[s] = starts[s];
  SampleBuffer<tilejit::bfloat16> values(total_rows * d), out(total_rows * d, tilejit::bfloat16(-1.0f));
  for (int64_t i = 0; i < total_rows * d; ++i) values[i] = static_cast<float>(i % 13 - 6);  // exact in bf16
  SampleBuffer<float> sums(seqs * max_tiles, -1.0f);
  offsets.to_device();
  values.to_device();
  out.to_device();
  sums.to_device();

  jagged.launch(nullptr, tilejit::dim3(max_tiles, seqs), tilejit::Config{{"BM", bm}, {"D", d}},
                tilejit::TensorView<i32, 1>(offsets.kernel_ptr(), {seqs + 1}),
                tilejit::TensorView<bf16, 2>(values.kernel_ptr(), {total_rows, d}),
                tilejit::TensorView<bf16, 2>(out.kernel_ptr(), {total_rows, d}),
                tilejit::TensorView<f32, 2>(sums.kernel_ptr(), {seqs, max_tiles}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  out.to_host();
  sums.to_host();

  int64_t bad = 0;
  for (int64_t i = 0; i < total_rows * d; ++i)
    bad += out[i].bits != tilejit::bfloat16(static_cast<float>(values[i]) * 2.0f + 1.0f).bits;
  for (int64_t s = 0; s < seqs; ++s)
    for (int64_t tile = 0; tile < max_tiles; ++tile) {
      float want = 0;  // only rows of sequence s count (small integers: the sum is exact in any order)
      for (int64_t r = starts[s] + tile * bm; r < starts[s + 1] && r < starts[s] + (tile + 1) * bm; ++r)
        for (int64_t c = 0; c < d; ++c) want += static_cast<float>(values[r * d + c]);
      bad += sums[s * max_tiles + tile] != want;
    }
  std::printf("%s sample_03_jagged_tma on %s: %lld sequences, %lld rows, %lld mismatches\n", bad ? "FAIL" : "PASS",
              run_target().c_str(), static_cast<long long>(seqs), static_cast<long long>(total_rows),
              static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_03_jagged_tma: %s\n", e.what());
  return 1;
}
