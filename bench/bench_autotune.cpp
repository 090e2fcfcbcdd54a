// The autotuner on the GPU: host cost of an autotuned launch against a plain launch of the same
// configuration, and the cost of tuning 8 configurations of the bf16 GEMM (bench_gemm's kernel, 4096^3) in
// three new processes: cold (empty caches), with the binaries on disk but no decision, and with the decision
// on disk. Also the tuned GEMM's speed against the best configuration timed by hand, and the GEMM tuned over
// the default space (gemm.autotune() with none: TuneSpace::matmul()) in a fourth process. Prints one JSON line per
// result; bench/peers.py --autotune measures Triton's @autotune on the same 8 configurations the same three
// ways.
//
//   bench_autotune                      everything (runs itself in new processes for the tuning cost)
//   bench_autotune --phase P --nonce N  one tuning-cost process: P is cold, warm_binaries, decided, default_space or
//                                       default_space_skinny (16 x 8192 x 8192)
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tilejit/runtime/autotune.h"
#include "tilejit/runtime/decisions.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::TuneArgs;

namespace {

constexpr int64_t kSize = 4096;  // M = N = K

// bench_gemm's kernel with its result scaled by 1 + nonce * 2^-22: a constant of the generated code, so that
// a new nonce is a kernel no cache has seen (the scale changes the bf16 result by less than its rounding).
auto gemm_kernel(long nonce) {
  const float scale = 1.0f + static_cast<float>(nonce % 1000) * 0x1p-22f;
  return tilejit::kernel("gemm_bf16_tuned", [scale](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c,
                                                    Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc =
        for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
        });
    descriptor_store(c, {m, n}, (acc * scale).to<bf16>());
  });
}

// 8 configurations of Triton's tutorial tiles, also bench/peers.py's AUTOTUNE_CONFIGS.
std::vector<Config> gemm_configs() {
  return {Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(3),
          Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(4),
          Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(4).num_stages(4),
          Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(2),
          Config{{"BM", 64}, {"BN", 256}, {"BK", 64}}.num_warps(4).num_stages(4),
          Config{{"BM", 256}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3),
          Config{{"BM", 64}, {"BN", 128}, {"BK", 64}}.num_warps(4).num_stages(4),
          Config{{"BM", 128}, {"BN", 64}, {"BK", 64}}.num_warps(4).num_stages(4)};
}

dim3 gemm_grid(const Config& c, const TuneArgs& a) {
  return dim3(static_cast<uint32_t>(tilejit::cdiv(a.size(2, 0), c["BM"])),
              static_cast<uint32_t>(tilejit::cdiv(a.size(2, 1), c["BN"])));
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One new process: the first autotuned launch of the GEMM (tuning, or reading the decision) until its
// result is ready; in the "decided" phase also the tuned kernel's speed against every configuration by hand.
int tuning_phase(const std::string& phase, long nonce) {
  tilejit::ensure_context();
  // gemm.autotune() with no space (TuneSpace::matmul()): at 4096^3, and at a decode step's 16 x 8192 x 8192, where
  // the space's rule adds its 16- and 32-row tilings.
  const bool skinny = phase == "default_space_skinny";
  const bool default_space = phase == "default_space" || skinny;
  const int64_t M = skinny ? 16 : kSize, N = skinny ? 8192 : kSize, K = skinny ? 8192 : kSize;
  tilejit::DeviceBuffer da(static_cast<size_t>(M * K) * 2), db(static_cast<size_t>(K * N) * 2), dc(static_cast<size_t>(M * N) * 2);
  da.fill_bytes(0x3c);  // bf16 0x3c3c: about 0.0115
  db.fill_bytes(0x3c);
  const tilejit::TensorView<bf16, 2> A(da.data(), {M, K}), B(db.data(), {K, N}), C(dc.data(), {M, N});
  auto gemm = gemm_kernel(nonce);
  auto tuned = (default_space ? gemm.autotune() : gemm.autotune(tilejit::TuneSpace(gemm_configs()))).grid(gemm_grid);
  const auto before = tilejit::autotune::counters();
  const auto t0 = std::chrono::steady_clock::now();
  tuned.launch(nullptr, A, B, C);
  tilejit::synchronize(nullptr);
  const double first_ms = ms_since(t0);
  const auto after = tilejit::autotune::counters();
  const Config chosen = tuned.tune(nullptr, A, B, C);
  std::printf(
      "{\"bench\": \"autotune_first_call\", \"impl\": \"tilejit\", \"phase\": \"%s\", \"configs\": %zu, "
      "\"ms\": %.2f, "
      "\"tunings\": %llu, \"decisions_from_disk\": %llu, \"nvrtc_compiles\": %llu, \"chosen\": \"%s\"}\n",
      phase.c_str(), default_space ? tuned.candidates(nullptr, A, B, C).size() : gemm_configs().size(), first_ms,
      static_cast<unsigned long long>(after.tunings - before.tunings),
      static_cast<unsigned long long>(after.disk_decisions - before.disk_decisions),
      static_cast<unsigned long long>(tilejit::runtime::compile_times().compiles), chosen.str().c_str());
  std::fflush(stdout);
  if (default_space) {
    auto tuned_launch = [&] { tuned.launch(nullptr, A, B, C); };
    const double ms = tilejit::time_median_ms(
        nullptr, 3, 20, [](void* u) { (*static_cast<decltype(&tuned_launch)>(u))(); }, &tuned_launch);
    std::printf("{\"bench\": \"autotune_default_space\", \"impl\": \"tilejit\", \"m\": %lld, \"n\": %lld, \"k\": %lld, "
                "\"tuned_ms\": %.4f, \"tuned_tflops\": %.1f, \"tuned\": \"%s\"}\n",
                static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), ms,
                2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(K) / ms / 1e9, chosen.str().c_str());
    return 0;
  }
  if (phase != "decided") return 0;

  // The tuned launch against each configuration launched by hand, timed alike (CUDA events, median).
  const auto time_ms = [](auto& launch) {
    return tilejit::time_median_ms(
        nullptr, 3, 20, [](void* u) { (*static_cast<decltype(&launch)>(u))(); }, &launch);
  };
  auto tuned_launch = [&] { tuned.launch(nullptr, A, B, C); };
  const double tuned_ms = time_ms(tuned_launch);
  double best_ms = 1e30;
  Config best;
  for (const Config& c : gemm_configs()) {
    const dim3 grid = gemm_grid(c, TuneArgs(gemm.bind(A, B, C)));
    auto by_hand = [&] { gemm.launch(nullptr, grid, c, A, B, C); };
    try {
      const double ms = time_ms(by_hand);
      if (ms < best_ms) best_ms = ms, best = c;
    } catch (const tilejit::UserError&) {
      // a configuration the GPU cannot run: the tuner found it unusable too
    }
  }
  const double flops =
      2.0 * static_cast<double>(kSize) * static_cast<double>(kSize) * static_cast<double>(kSize);
  std::printf(
      "{\"bench\": \"autotune_speed\", \"impl\": \"tilejit\", \"m\": %lld, \"tuned_ms\": %.4f, "
      "\"tuned_tflops\": %.1f, "
      "\"tuned\": \"%s\", \"best_by_hand_ms\": %.4f, \"best_by_hand_tflops\": %.1f, \"best_by_hand\": "
      "\"%s\", "
      "\"tuned_vs_best\": %.3f}\n",
      static_cast<long long>(kSize), tuned_ms, flops / tuned_ms / 1e9, chosen.str().c_str(), best_ms,
      flops / best_ms / 1e9, best.str().c_str(), tuned_ms / best_ms);
  return 0;
}

// Host cost of an autotuned launch (key, decision lookup, grid function) against a plain launch of the chosen
// configuration, at one program (host cost alone) and at 1024.
void launch_overhead(long nonce) {
  tilejit::ensure_context();
  tilejit::DeviceBuffer yb(128 * 4);
  const tilejit::TensorView<f32, 1> Y(yb.data(), {128});
  const float salt = static_cast<float>(nonce) * 0.25f;
  auto tiny = tilejit::kernel(
      "tiny_tuned", [salt](Tensor<f32, 1> y, Scalar<f32> v) { store(y, arange(0, 128), v + salt); });
  uint32_t programs = 1;
  auto tuned = tiny.autotune({{"num_warps", {4, 8}}}).grid([&](const Config&) { return dim3(programs); });
  const Config chosen = tuned.tune(nullptr, Y, 1.0f);
  for (const uint32_t grid : {1u, 1024u}) {
    programs = grid;
    const auto [plain, autotuned] = bench::us_per_launch(
        [&] { tiny.launch(nullptr, dim3(grid), chosen, Y, 1.0f); }, [&] { tuned.launch(nullptr, Y, 1.0f); });
    std::printf(
        "{\"bench\": \"autotune_launch\", \"impl\": \"tilejit\", \"grid\": %u, \"plain_us\": %.3f, "
        "\"autotuned_us\": %.3f, "
        "\"autotuned_vs_plain\": %.3f}\n",
        grid, plain, autotuned, autotuned / plain);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) try {
  long nonce = static_cast<long>(std::chrono::system_clock::now().time_since_epoch().count() % 1000003);
  std::string phase;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--nonce") == 0 && i + 1 < argc) {
      nonce = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--phase") == 0 && i + 1 < argc) {
      phase = argv[++i];
    } else {
      std::fprintf(stderr, "usage: bench_autotune [--phase cold|warm_binaries|decided|default_space|default_space_skinny --nonce N]\n");
      return 2;
    }
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_autotune: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  if (!phase.empty()) return tuning_phase(phase, nonce);

  launch_overhead(nonce);
  // Three new processes on a cache folder of their own: the first compiles and tunes, the second finds the
  // binaries but not the decision (removed in between), the third finds both.
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("tilejit-bench-autotune-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache);
  char self[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0)
    throw tilejit::UserError("bench_autotune: cannot find its own executable", "/proc/self/exe", "readable");
  for (const char* p : {"cold", "warm_binaries", "decided", "default_space", "default_space_skinny"}) {
    if (std::strcmp(p, "warm_binaries") == 0) tilejit::DecisionStore(cache).clear();
    const std::string cmd = "TILEJIT_CACHE_DIR='" + cache.string() + "' '" + self + "' --phase " + p +
                            " --nonce " + std::to_string(nonce);
    std::fflush(stdout);
    if (std::system(cmd.c_str()) != 0) {
      std::printf("bench_autotune: the %s phase failed\n", p);
      return 1;
    }
  }
  std::filesystem::remove_all(cache);
  return 0;
} catch (const tilejit::Error& e) {
  std::printf("bench_autotune: %s\n", e.what());
  return 1;
}
