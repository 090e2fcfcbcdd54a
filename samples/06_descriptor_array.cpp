// Sample 06: an array of TMA descriptors (seed 004): one tensor per program, chosen at run time, prefetched.
//
// A TensorArray<T, R> parameter is several tensors of one type and rank, each
// with its own shape (seed 004's batches x levels). tilejit encodes one TMA
// descriptor per tensor on the host into device memory; arr[k] picks one by a
// runtime index. prefetch_descriptor() issues prefetch.tensormap so that the
// descriptor is in cache by the time the load needs it.
#include <tilejit/tilejit.h>

#include <array>
#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  auto scale_levels = tilejit::kernel("scale_levels", [](TensorArray<f32, 2> in, TensorArray<f32, 2> out,
                                                         Block<"BM"> BM, Block<"BN"> BN) {
    auto level = program_id(2);  // which tensor of the arrays this program works on
    auto src = in[level];
    auto dst = out[level];
    prefetch_descriptor(src, {BM, BN});  // same box as the load below
    prefetch_descriptor(dst, {BM, BN});
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto t = descriptor_load(src, {m, n}, {BM, BN});  // tiles past a small level's edge read zeros
    auto factor = (level + 1).to<f32>();
    descriptor_store(dst, {m, n}, t * factor);  // and store nothing
  });

  // Four levels of decreasing size (every row a multiple of 16 bytes).
  const std::vector<std::array<int64_t, 2>> shapes = {{64, 96}, {32, 48}, {16, 24}, {8, 12}};
  const int64_t bm = 16, bn = 32;
  std::vector<std::vector<float>> ins, outs;
  tilejit::TensorArrayView<f32, 2> in_views, out_views;
  for (const auto& s : shapes) {
    ins.emplace_back(s[0] * s[1]);
    outs.emplace_back(s[0] * s[1], -1.0f);
    for (size_t i = 0; i < ins.back().size(); ++i) ins.back()[i] = static_cast<float>(i % 101) - 50.0f;
    in_views.tensors.emplace_back(ins.back().data(), s);
    out_views.tensors.emplace_back(outs.back().data(), s);
  }

  // The grid covers the largest level; programs past a smaller level's edge do nothing visible.
  const auto levels = static_cast<uint32_t>(shapes.size());
  scale_levels.interpret(tilejit::dim3(tilejit::cdiv(64, bm), tilejit::cdiv(96, bn), levels),
                         tilejit::Config{{"BM", bm}, {"BN", bn}}, in_views, out_views);

  int64_t bad = 0;
  for (size_t l = 0; l < shapes.size(); ++l)
    for (size_t i = 0; i < ins[l].size(); ++i) bad += outs[l][i] != ins[l][i] * static_cast<float>(l + 1);
  std::printf("%s sample_06_descriptor_array: %u tensors, %lld mismatches\n", bad ? "FAIL" : "PASS", levels,
              static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_06_descriptor_array: %s\n", e.what());
  return 1;
}
