// Sample 05: CuTe-style tile views (seed 003): index a tensor by tile, get TMA coordinates; a blocked transpose.
//
// tile_view(t, {BM, BN}) sees t as a grid of BM x BN boxes. Indexing it with
// tile indices (i, j) does not compute an address: like CuTe's TMA tensors,
// whose strides are basis vectors, it yields the TMA *coordinate* (i * BM, j * BN)
// that descriptor_load / descriptor_store pass to the hardware.
#include <tilejit/tilejit.h>

#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  auto transpose = tilejit::kernel("transpose", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Block<"T"> T) {
    auto xt = tile_view(x, {T, T});  // x as tiles of T x T
    auto yt = tile_view(y, {T, T});
    auto i = program_id(0), j = program_id(1);
    auto tile = descriptor_load(xt(i, j));  // x[i*T : i*T+T, j*T : j*T+T], zeros outside x
    descriptor_store(yt(j, i), tile.trans());  // y[j*T .., i*T ..] = its transpose, clipped at y's edges
  });

  // Neither dimension is a multiple of the tile; both are multiples of 4 floats
  // (16 bytes) so that every row starts 16-byte aligned, as TMA requires.
  const int64_t rows = 72, cols = 52, tile = 32;
  std::vector<float> x(rows * cols), y(cols * rows, -1.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i);

  transpose.interpret(tilejit::dim3(tilejit::cdiv(rows, tile), tilejit::cdiv(cols, tile)), tilejit::Config{{"T", tile}},
                      tilejit::TensorView<f32, 2>(x.data(), {rows, cols}),
                      tilejit::TensorView<f32, 2>(y.data(), {cols, rows}));

  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) bad += y[c * rows + r] != x[r * cols + c];
  std::printf("%s sample_05_tile_view: %lldx%lld transpose in %lldx%lld tiles, %lld mismatches\n", bad ? "FAIL" : "PASS",
              static_cast<long long>(rows), static_cast<long long>(cols), static_cast<long long>(tile),
              static_cast<long long>(tile), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_05_tile_view: %s\n", e.what());
  return 1;
}
