// Bandwidth benchmarks on the GPU: TMA copy and a*x+b over 2 GiB of fp32 (host- and device-built
// descriptors), a vector add with masked pointer loads, and jagged sequences with device-built descriptors. Prints one JSON line per result.
#include <cstdio>
#include <cstring>
#include <vector>

#include "../samples/sample_kernels.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::cdiv;

namespace {
constexpr int64_t kM = 32768, kN = 16384;  // 2 GiB of fp32, as bench/peers.py
constexpr int64_t kJaggedB = 2048, kJaggedD = 128;

template <class F>
double time_ms(F&& f) {
  return tilejit::time_median_ms(nullptr, 5, 20, [](void* u) { (*static_cast<F*>(u))(); }, &f);
}

void emit(const char* bench, const char* impl, const Config& c, double ms, double bytes) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"%s\", \"config\": \"%s\", \"ms\": %.4f, \"gbps\": %.1f}\n", bench, impl,
              c.str().c_str(), ms, bytes / ms / 1e6);
  std::fflush(stdout);
}
}  // namespace

int main() {
  if (!tilejit::has_gpu()) {
    std::printf("bench_tma: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  // Every 2-D kernel walks the tensor row-major: program_id(0) picks the column tile, so programs
  // that run at the same time touch neighbouring memory (worth about 5% of bandwidth on H200).
  auto copy = tilejit::kernel("bench_copy", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"BN"> BN) {
    auto m = program_id(1) * BM;
    auto n = program_id(0) * BN;
    descriptor_store(y, {m, n}, descriptor_load(x, {m, n}, {BM, BN}));
  });
  auto copy_dev = tilejit::kernel("bench_copy_device", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"BN"> BN) {
    auto m = program_id(1) * BM;
    auto n = program_id(0) * BN;
    auto xd = x.with_placement(Placement::device);
    auto yd = y.with_placement(Placement::device);
    descriptor_store(yd, {m, n}, descriptor_load(xd, {m, n}, {BM, BN}));
  });
  auto axpb = tilejit::kernel("bench_axpb", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a, Scalar<f32> b, Meta<"BM"> BM,
                                               Meta<"BN"> BN) {
    auto m = program_id(1) * BM;
    auto n = program_id(0) * BN;
    descriptor_store(y, {m, n}, descriptor_load(x, {m, n}, {BM, BN}) * a + b);
  });
  const size_t bytes = static_cast<size_t>(kM * kN * 4);
  tilejit::DeviceBuffer xb(bytes), yb(bytes);
  xb.fill_bytes(0x3f);  // every element 0x3f3f3f3f = 0.7470...
  tilejit::TensorView<f32, 2> X(xb.data(), {kM, kN}), Y(yb.data(), {kM, kN});
  // Block shapes x warps per program (a one-box TMA copy needs a single issuing thread, so fewer
  // warps let more programs share an SM).
  std::vector<Config> configs;
  for (auto [bm, bn] : {std::pair<int64_t, int64_t>{64, 64}, {128, 64}, {64, 128}, {32, 128}, {128, 128}})
    for (int w : {1, 4}) configs.push_back(Config{{"BM", bm}, {"BN", bn}}.num_warps(w));
  auto best_of = [&](const char* name, const auto& k, auto... extra) {
    double best = 1e30;
    Config best_c;
    for (const Config& c : configs) {
      const auto gm = static_cast<uint32_t>(cdiv(kM, c["BM"])), gn = static_cast<uint32_t>(cdiv(kN, c["BN"]));
      const dim3 grid(gn, gm);
      double ms;
      try {
        ms = time_ms([&] { k.launch(nullptr, grid, c, X, Y, extra...); });
      } catch (const tilejit::UserError&) {
        continue;  // a tile that does not fit in this many warps' registers: refused, as the autotuner would prune it
      }
      if (ms < best) {
        best = ms;
        best_c = c;
      }
    }
    emit(name, "tilejit", best_c, best, 2.0 * static_cast<double>(bytes));
  };
  // Each result is checked on the first 64 MiB of the output, so a fast wrong kernel cannot score.
  auto check = [&](const char* name, float want) {
    std::vector<float> h(16 << 20);
    yb.download(h.data(), h.size() * sizeof(float));
    size_t bad = 0;
    for (float v : h) bad += v != want;
    if (bad) std::printf("{\"bench\": \"%s\", \"error\": \"%zu wrong elements\"}\n", name, bad);
    return bad == 0;
  };
  float x0;
  const uint32_t bits = 0x3f3f3f3fu;
  std::memcpy(&x0, &bits, 4);
  bool ok = true;
  yb.fill_bytes(0);
  best_of("copy", copy);
  ok &= check("copy", x0);
  yb.fill_bytes(0);
  best_of("copy_device_desc", copy_dev);
  ok &= check("copy_device_desc", x0);
  best_of("axpb", axpb, 1.5f, 0.25f);
  ok &= check("axpb", x0 * 1.5f + 0.25f);

  // Vector add (sample 01's kernel: masked pointer loads and stores of 16-byte vectors): two 1 GiB inputs
  // (the halves of x's buffer), one 1 GiB output.
  {
    auto add = tilejit::samples::vector_add_kernel();
    const int64_t n = kM * kN / 2;
    float* xs = static_cast<float*>(xb.data());
    tilejit::TensorView<f32, 1> A(xs, {n}), B(xs + n, {n}), C(yb.data(), {n});
    yb.fill_bytes(0);
    double best_ms = 1e30;
    Config best_cfg;
    for (int64_t b : {1024, 2048, 4096})
      for (int w : {4, 8}) {
        const Config c = Config{{"B", b}}.num_warps(w);
        const double ms = time_ms([&] { add.launch(nullptr, dim3(static_cast<uint32_t>(cdiv(n, b))), c, A, B, C); });
        if (ms < best_ms) {
          best_ms = ms;
          best_cfg = c;
        }
      }
    emit("vector_add", "tilejit", best_cfg, best_ms, 3.0 * static_cast<double>(n) * 4);
    ok &= check("vector_add", x0 + x0);
  }

  // Jagged: y = 2x over per-sequence row views with device-built descriptors.
  std::vector<int32_t> offs{0};
  int64_t longest = 0;
  for (int64_t b = 0; b < kJaggedB; ++b) {
    const int64_t len = 256 + (b * 7919) % 1792;
    longest = std::max(longest, len);
    offs.push_back(offs.back() + static_cast<int32_t>(len));
  }
  const int64_t total = offs.back();
  tilejit::DeviceBuffer ob(offs.size() * 4), xj(static_cast<size_t>(total * kJaggedD * 4)), yj(static_cast<size_t>(total * kJaggedD * 4));
  ob.upload(offs.data());
  xj.fill_bytes(0x3f);
  auto jagged = tilejit::kernel("bench_jagged", [](Tensor<i32, 1> offsets, Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"D"> D) {
    auto b = program_id(1);
    auto start = load(offsets, b);
    auto end = load(offsets, b + 1);
    auto m = program_id(0) * BM;
    if_then(m < end - start, [&] {
      descriptor_store(y.rows(start, end), {m, 0}, descriptor_load(x.rows(start, end), {m, 0}, {BM, D}) * 2.0f);
    });
  });
  tilejit::TensorView<i32, 1> O(ob.data(), {static_cast<int64_t>(offs.size())});
  tilejit::TensorView<f32, 2> XJ(xj.data(), {total, kJaggedD}), YJ(yj.data(), {total, kJaggedD});
  double best = 1e30;
  Config best_c;
  for (int64_t bm : {16, 32, 64})
    for (int w : {1, 4}) {
    const Config c = Config{{"BM", bm}, {"D", kJaggedD}}.num_warps(w);
    const dim3 grid(static_cast<uint32_t>(cdiv(longest, bm)), static_cast<uint32_t>(kJaggedB));
    double ms;
    try {
      ms = time_ms([&] { jagged.launch(nullptr, grid, c, O, XJ, YJ); });
    } catch (const tilejit::UserError&) {
      continue;  // does not fit in registers with these warps
    }
    if (ms < best) {
      best = ms;
      best_c = c;
    }
    }
  emit("jagged", "tilejit", best_c, best, 2.0 * static_cast<double>(total * kJaggedD * 4));
  {
    std::vector<float> h(static_cast<size_t>(total * kJaggedD));
    yj.download(h.data());
    size_t bad = 0;
    for (float v : h) bad += v != 2.0f * x0;
    if (bad) std::printf("{\"bench\": \"jagged\", \"error\": \"%zu wrong elements\"}\n", bad);
    ok &= bad == 0;
  }
  return ok ? 0 : 1;
}
