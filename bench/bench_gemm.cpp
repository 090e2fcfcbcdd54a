// Matrix product benchmark on the GPU: C (bf16) = A (bf16, [M, K]) @ B (bf16, [K, N]), both row-major, with f32
// accumulation, through TMA tiles, a software-pipelined K loop and wgmma (the Triton tutorial's matmul in tilejit).
// Prints one JSON line per (shape, configuration) tried, in TFLOP/s, and checks 256 entries of the best
// configuration's C against a double-precision reference (relative error of the bf16 result).
// bench/peers.py --gemm times torch.matmul (cuBLAS) and a Triton TMA matmul on the same shapes.
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <vector>

#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {

auto gemm_kernel() {
  return tilejit::kernel("gemm_bf16", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Block<"BM"> BM, Block<"BN"> BN,
                                          Block<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
}

}  // namespace

int main(int argc, char** argv) {
  // bench_gemm [M N K [BM BN BK num_warps num_stages]]: one shape (and one configuration), e.g. under a profiler.
  if (argc != 1 && argc != 4 && argc != 9) {
    std::fprintf(stderr, "usage: bench_gemm [M N K [BM BN BK num_warps num_stages]]\n");
    return 2;
  }
  std::vector<int64_t> arg;
  for (int i = 1; i < argc; ++i) arg.push_back(std::atoll(argv[i]));
  if (!tilejit::has_gpu()) {
    std::printf("bench_gemm: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  auto gemm = gemm_kernel();
  std::vector<Config> configs = {
      Config({{"BM", 128}, {"BN", 256}, {"BK", 64}}, 8, 3), Config({{"BM", 128}, {"BN", 128}, {"BK", 64}}, 8, 4),
      Config({{"BM", 128}, {"BN", 128}, {"BK", 64}}, 4, 4), Config({{"BM", 128}, {"BN", 256}, {"BK", 64}}, 8, 2),
      Config({{"BM", 64}, {"BN", 256}, {"BK", 64}}, 4, 4),  Config({{"BM", 256}, {"BN", 128}, {"BK", 64}}, 8, 3),
  };
  if (arg.size() == 8)
    configs = {Config({{"BM", arg[3]}, {"BN", arg[4]}, {"BK", arg[5]}}, static_cast<int>(arg[6]), static_cast<int>(arg[7]))};
  bool ok = true;
  std::vector<std::array<int64_t, 3>> shapes = {{4096, 4096, 4096}, {8192, 8192, 8192}, {4000, 3000, 2000}, {1024, 8192, 8192}};
  if (!arg.empty()) shapes = {{arg[0], arg[1], arg[2]}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    std::vector<tilejit::bfloat16> ha(static_cast<size_t>(M * K)), hb(static_cast<size_t>(K * N));
    uint32_t state = 777;
    auto next = [&] {
      state = state * 1664525u + 1013904223u;
      return tilejit::bfloat16(static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f);
    };
    for (auto& v : ha) v = next();
    for (auto& v : hb) v = next();
    tilejit::DeviceBuffer da(ha.size() * 2), db(hb.size() * 2), dc(static_cast<size_t>(M * N) * 2);
    da.upload(ha.data());
    db.upload(hb.data());
    tilejit::TensorView<bf16, 2> A(da.data(), {M, K}), B(db.data(), {K, N}), C(dc.data(), {M, N});
    const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K);
    double best = 1e30;
    Config best_c = configs.front();
    for (const Config& c : configs) {
      const dim3 grid(static_cast<uint32_t>((M + c.get("BM") - 1) / c.get("BM")), static_cast<uint32_t>((N + c.get("BN") - 1) / c.get("BN")));
      auto launch = [&] { gemm.launch(nullptr, grid, c, A, B, C); };
      double ms;
      try {
        launch();  // compile (timed below as first-launch compile)
        ms = tilejit::time_median_ms(nullptr, 3, 10, [](void* u) { (*static_cast<decltype(launch)*>(u))(); }, &launch);
      } catch (const tilejit::UserError& e) {
        std::printf("{\"bench\": \"gemm\", \"impl\": \"tilejit\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"config\": \"%s\", \"refused\": \"%s\"}\n",
                    static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), c.str().c_str(), e.what());
        continue;
      }
      std::printf("{\"bench\": \"gemm\", \"dtype\": \"bf16\", \"impl\": \"tilejit\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"config\": \"%s\", "
                  "\"ms\": %.4f, \"tflops\": %.1f}\n",
                  static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), c.str().c_str(), ms, flops / ms / 1e9);
      std::fflush(stdout);
      if (ms < best) best = ms, best_c = c;
    }
    // Check the best configuration's output.
    dc.fill_bytes(0);
    const dim3 grid(static_cast<uint32_t>((M + best_c.get("BM") - 1) / best_c.get("BM")),
                    static_cast<uint32_t>((N + best_c.get("BN") - 1) / best_c.get("BN")));
    gemm.launch(nullptr, grid, best_c, A, B, C);
    tilejit::synchronize(nullptr);
    std::vector<tilejit::bfloat16> hc(static_cast<size_t>(M * N));
    dc.download(hc.data(), hc.size() * 2);
    double err2 = 0, ref2 = 0;
    for (int i = 0; i < 256; ++i) {
      const int64_t r = (i * 7919) % M, col = (i * 104729) % N;
      double want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += static_cast<double>(static_cast<float>(ha[static_cast<size_t>(r * K + k)])) *
                static_cast<double>(static_cast<float>(hb[static_cast<size_t>(k * N + col)]));
      const double got = static_cast<float>(hc[static_cast<size_t>(r * N + col)]);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
    const double rel = std::sqrt(err2 / ref2);
    const bool good = rel < 1e-2;  // bf16 output rounding is 2^-9 relative
    ok &= good;
    std::printf("{\"bench\": \"gemm\", \"dtype\": \"bf16\", \"impl\": \"tilejit_best\", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"config\": \"%s\", "
                "\"ms\": %.4f, \"tflops\": %.1f, \"rel_err\": %.2e%s}\n",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), best_c.str().c_str(), best,
                flops / best / 1e9, rel, good ? "" : ", \"error\": \"wrong result\"");
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}
