// TMA descriptor prefetch: 48 batches x 4 pyramid levels, 192 descriptors in one TensorArray, one
// program per (query tile, batch) reading its batch's four levels, in each prefetch variant. Prints one JSON
// line per variant and tile size; with --print-source, the generated CUDA of every variant (no GPU needed).
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <tuple>
#include <string>
#include <vector>

#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {
constexpr int64_t kBatches = 48, kLevels = 4;
constexpr int64_t kRows = 2048, kCols = 128;  // level l of a batch: (kRows >> l) x kCols fp32

enum Variant { kNone, kUpfront, kJustInTime, kL2 };
constexpr const char* kNames[] = {"none", "upfront_tensormap", "just_in_time_tensormap", "upfront_l2"};

// out[b, q*BT : q*BT+BT, :] = sum over l of level[b][l] rows (q*BT >> l) + [0, BT), all C columns.
template <Variant V>
auto pyramid_kernel() {
  return tilejit::kernel(kNames[V], [](TensorArray<f32, 2> levels, Tensor<f32, 3> out, Meta<"BT"> BT, Meta<"C"> C) {
    auto q = program_id(0);
    auto b = program_id(1);
    auto first = b * static_cast<int32_t>(kLevels);
    // The elements are taken where their descriptors should be prefetched: all four before the first
    // load (up front), or each one just before its load.
    std::vector<Tensor<f32, 2>> taken;
    if constexpr (V == kUpfront || V == kL2)
      for (int l = 0; l < kLevels; ++l) taken.push_back(V == kL2 ? levels.at(first + l, Prefetch::l2) : levels[first + l]);
    auto level = [&](int l) {
      if constexpr (V == kUpfront || V == kL2) return taken[static_cast<size_t>(l)];
      else if constexpr (V == kNone) return levels.at(first + l, Prefetch::none);
      else return levels[first + l];
    };
    auto tile = [&](int l) { return descriptor_load(level(l), {(q * BT) / (1 << l), 0}, {BT, C}); };
    auto t0 = tile(0);
    auto t1 = tile(1);
    auto t2 = tile(2);
    auto t3 = tile(3);
    descriptor_store(out, {b, q * BT, 0}, (((t0 + t1) + t2) + t3).template expand_dims<0>());
  });
}

float value(int64_t b, int64_t l, int64_t r, int64_t c) {
  return static_cast<float>((b * 131 + l * 31 + r * 7 + c) % 97) * 0.125f - 6.0f;
}
}  // namespace

int main(int argc, char** argv) {
  const bool print_source = argc > 1 && std::strcmp(argv[1], "--print-source") == 0;
  const auto kernels = std::make_tuple(pyramid_kernel<kNone>(), pyramid_kernel<kUpfront>(), pyramid_kernel<kJustInTime>(),
                                       pyramid_kernel<kL2>());
  if (print_source) {
    std::apply([](const auto&... k) { ((std::printf("%s\n", k.cuda_source(Config{{"BT", 64}, {"C", kCols}}).c_str())), ...); },
               kernels);
    return 0;
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_prefetch: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }

  // 192 tensors: batch b, level l is element 4b + l, each its own allocation.
  std::vector<tilejit::DeviceBuffer> bufs;
  tilejit::TensorArrayView<f32, 2> levels;
  for (int64_t b = 0; b < kBatches; ++b)
    for (int64_t l = 0; l < kLevels; ++l) {
      const int64_t rows = kRows >> l;
      std::vector<float> h(static_cast<size_t>(rows * kCols));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < kCols; ++c) h[static_cast<size_t>(r * kCols + c)] = value(b, l, r, c);
      bufs.emplace_back(h.size() * sizeof(float));
      bufs.back().upload(h.data());
      levels.tensors.emplace_back(bufs.back().data(), std::array<int64_t, 2>{rows, kCols});
    }
  tilejit::DeviceBuffer ob(static_cast<size_t>(kBatches * kRows * kCols) * sizeof(float));
  tilejit::TensorView<f32, 3> out(ob.data(), {kBatches, kRows, kCols});

  // The reference, as the kernel sums: ((l0 + l1) + l2) + l3, rows past a level's end read as zero.
  const size_t out_elems = static_cast<size_t>(kBatches * kRows * kCols);
  auto expected = [&](int64_t bt, int64_t b, int64_t r, int64_t c) {
    const int64_t q = r / bt, i = r % bt;
    float s = 0;
    for (int64_t l = 0; l < kLevels; ++l) {
      const int64_t lr = ((q * bt) >> l) + i;
      const float v = lr < (kRows >> l) ? value(b, l, lr, c) : 0.0f;
      s = l == 0 ? v : s + v;
    }
    return s;
  };

  bool ok = true;
  for (int64_t bt : {16, 64}) {
    const Config cfg = Config{{"BT", bt}, {"C", kCols}}.num_warps(4);
    const dim3 grid(static_cast<uint32_t>(kRows / bt), static_cast<uint32_t>(kBatches));
    // Bytes the boxes cover: four level tiles read and one tile written per program.
    const double bytes = 5.0 * static_cast<double>(kBatches * kRows * kCols) * sizeof(float);
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    // Three rounds over the variants, the best median of each kept, so that clock drift treats all alike.
    for (int round = 0; round < 3; ++round) {
      int v = 0;
      std::apply(
          [&](const auto&... k) {
            (([&] {
               auto launch = [&] { k.launch(nullptr, grid, cfg, levels, out); };
               const double ms = tilejit::time_median_ms(nullptr, 5, 20, [](void* u) { (*static_cast<decltype(launch)*>(u))(); }, &launch);
               best[v] = std::min(best[v], ms);
               ++v;
             }()),
             ...);
          },
          kernels);
    }
    // Every variant's output checked in full (each launch rewrites all of it).
    int v = 0;
    std::apply(
        [&](const auto&... k) {
          (([&] {
             ob.fill_bytes(0xff);
             k.launch(nullptr, grid, cfg, levels, out);
             tilejit::synchronize(nullptr);
             std::vector<float> h(out_elems);
             ob.download(h.data());
             size_t bad = 0;
             for (int64_t b = 0; b < kBatches; ++b)
               for (int64_t r = 0; r < kRows; ++r)
                 for (int64_t c = 0; c < kCols; ++c)
                   bad += h[static_cast<size_t>((b * kRows + r) * kCols + c)] != expected(bt, b, r, c);
             std::printf("{\"bench\": \"prefetch\", \"impl\": \"%s\", \"config\": \"%s\", \"descriptors\": %lld, "
                         "\"programs\": %u, \"ms\": %.5f, \"gbps\": %.1f%s}\n",
                         kNames[v], cfg.str().c_str(), static_cast<long long>(kBatches * kLevels), grid.x * grid.y,
                         best[v], bytes / best[v] / 1e6,
                         bad ? (", \"error\": \"" + std::to_string(bad) + " wrong elements\"").c_str() : "");
             std::fflush(stdout);
             ok &= bad == 0;
             ++v;
           }()),
           ...);
        },
        kernels);
  }
  return ok ? 0 : 1;
}
