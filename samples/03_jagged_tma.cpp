// Sample 03: jagged sequences with TMA (seed 002): per-sequence views built in the kernel, zero fill at each end.
//
// `values` packs sequences of different lengths one after the other; sequence s
// holds rows offsets[s] .. offsets[s + 1]. A TMA descriptor of the whole tensor
// would read the next sequence's rows past the end of this one, so each program
// makes a view of its own sequence with values.rows(start, end). Its extent is
// known only in the kernel, so tilejit builds that descriptor on the device.
// Loads past the sequence end then read zeros, and stores stop at its end.
#include <tilejit/tilejit.h>

#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  auto jagged = tilejit::kernel("jagged_scale", [](Tensor<i32, 1> offsets, Tensor<bf16, 2> values, Tensor<bf16, 2> out,
                                                   Tensor<f32, 2> tile_sums, Block<"BM"> BM, Block<"D"> D) {
    auto s = program_id(1);                          // the sequence
    auto start = load(offsets, s);                   // Scalar<i32> read from memory
    auto end = load(offsets, s + 1);
    auto m = program_id(0) * BM;                     // first row of this tile inside the sequence
    auto t = descriptor_load(values.rows(start, end), {m, 0}, {BM, D});  // rows past `end` read 0
    auto y = (t.to<f32>() * 2.0f + 1.0f).to<bf16>();
    descriptor_store(out.rows(start, end), {m, 0}, y);  // rows past `end` are not written
    // The sum of the loaded tile shows the zero fill: the next sequence's rows add nothing.
    auto total = sum(sum(t.to<f32>(), 1), 0);
    store(tile_sums, s * tile_sums.stride(0) + program_id(0), total);
  });

  const std::vector<int32_t> offsets = {0, 5, 45, 46, 110};  // 4 sequences of 5, 40, 1 and 64 rows
  const int64_t seqs = 4, total_rows = 110, d = 16, bm = 32, max_tiles = 2;  // cdiv(64, 32) tiles at most
  std::vector<tilejit::bfloat16> values(total_rows * d), out(total_rows * d, tilejit::bfloat16(-1.0f));
  for (int64_t i = 0; i < total_rows * d; ++i) values[i] = static_cast<float>(i % 13 - 6);  // exact in bf16
  std::vector<float> sums(seqs * max_tiles, -1.0f);

  jagged.interpret(tilejit::dim3(max_tiles, seqs), tilejit::Config{{"BM", bm}, {"D", d}},
                   tilejit::TensorView<i32, 1>(offsets.data(), {seqs + 1}),
                   tilejit::TensorView<bf16, 2>(values.data(), {total_rows, d}),
                   tilejit::TensorView<bf16, 2>(out.data(), {total_rows, d}),
                   tilejit::TensorView<f32, 2>(sums.data(), {seqs, max_tiles}));

  int64_t bad = 0;
  for (int64_t i = 0; i < total_rows * d; ++i)
    bad += out[i].bits != tilejit::bfloat16(static_cast<float>(values[i]) * 2.0f + 1.0f).bits;
  for (int64_t s = 0; s < seqs; ++s)
    for (int64_t tile = 0; tile < max_tiles; ++tile) {
      float want = 0;  // only rows of sequence s count (small integers: the sum is exact in any order)
      for (int64_t r = offsets[s] + tile * bm; r < offsets[s + 1] && r < offsets[s] + (tile + 1) * bm; ++r)
        for (int64_t c = 0; c < d; ++c) want += static_cast<float>(values[r * d + c]);
      bad += sums[s * max_tiles + tile] != want;
    }
  std::printf("%s sample_03_jagged_tma: %lld sequences, %lld rows, %lld mismatches\n", bad ? "FAIL" : "PASS",
              static_cast<long long>(seqs), static_cast<long long>(total_rows), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_03_jagged_tma: %s\n", e.what());
  return 1;
}
