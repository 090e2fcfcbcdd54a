// Helpers shared by the benchmarks: host time per launch of two launchers measured side by side, and the sweep of
// kernel configurations the GEMM and attention benchmarks print, and the sequence lengths of the jagged ones.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/config.h"
#include "tilejit/dsl/dtypes.h"
#include "tilejit/error.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/runtime/memory.h"

namespace bench {

inline constexpr int kLaunches = 20000;

// Microseconds per launch of `a` and of `b` (medians of 7 batches of kLaunches), the batches of
// the two interleaved so that clock and queue drift treat both alike.
template <class A, class B>
std::pair<double, double> us_per_launch(A&& a, B&& b) {
  for (int i = 0; i < 1000; ++i) a(), b();  // warm-up
  tilejit::synchronize(nullptr);
  const auto batch = [](auto& launch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) launch();
    tilejit::synchronize(nullptr);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
           kLaunches;
  };
  std::vector<double> ta, tb;
  for (int r = 0; r < 7; ++r) {
    ta.push_back(batch(a));
    tb.push_back(batch(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

/// Times `launch(config)` for every configuration and prints one JSON line each: `head(config)` (an open
/// object) followed by the median time, TFLOP/s for `flops`, and where the first launch went (trace + codegen,
/// NVRTC, load and disk-cache time, from runtime::compile_times() before and after), or the reason a
/// configuration was refused (a UserError). Returns the fastest configuration's index and time (-1 when none ran).
inline std::pair<int, double> sweep(const std::vector<tilejit::Config>& configs, double flops,
                                    const std::function<std::string(const tilejit::Config&)>& head,
                                    const std::function<void(const tilejit::Config&)>& launch) {
  int best = -1;
  double best_ms = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const tilejit::Config& c = configs[i];
    auto run = [&] { launch(c); };
    double ms = 0, first_ms = 0;
    tilejit::runtime::CompileTimes before, after;
    try {
      // The first launch traces, generates and compiles (NVRTC) the kernel, unless a cache has it.
      before = tilejit::runtime::compile_times();
      const auto t0 = std::chrono::steady_clock::now();
      run();
      first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      after = tilejit::runtime::compile_times();
      ms = tilejit::time_median_ms(nullptr, 3, 10, [](void* u) { (*static_cast<decltype(run)*>(u))(); }, &run);
    } catch (const tilejit::UserError& e) {
      std::string why = e.what();
      for (char& ch : why)
        if (ch == '"' || ch == '\n') ch = '\'';
      std::printf("%s, \"refused\": \"%s\"}\n", head(c).c_str(), why.c_str());
      continue;
    }
    std::printf("%s, \"ms\": %.4f, \"tflops\": %.1f, \"first_launch_ms\": %.1f, \"first_nvrtc_ms\": %.1f, \"first_trace_codegen_ms\": %.1f, "
                "\"first_load_ms\": %.1f, \"first_disk_ms\": %.1f}\n",
                head(c).c_str(), ms, flops / ms / 1e9, first_ms, after.nvrtc_ms - before.nvrtc_ms,
                after.trace_ms + after.codegen_ms - before.trace_ms - before.codegen_ms, after.load_ms - before.load_ms,
                after.disk_ms - before.disk_ms);
    std::fflush(stdout);
    if (best < 0 || ms < best_ms) best = static_cast<int>(i), best_ms = ms;
  }
  return {best, best_ms};
}

/// Prints the checked line of the best configuration: `head` (impl "tilejit" becomes "tilejit_best"), its time,
/// TFLOP/s, the relative error of its output and whether that is within the benchmark's bound.
inline void print_best(std::string head, double ms, double flops, double rel, bool good) {
  head.replace(head.find("\"tilejit\""), 9, "\"tilejit_best\"");
  std::printf("%s, \"ms\": %.4f, \"tflops\": %.1f, \"rel_err\": %.2e%s}\n", head.c_str(), ms, flops / ms / 1e9, rel,
              good ? "" : ", \"error\": \"wrong result\"");
  std::fflush(stdout);
}

/// Fills each vector, in order, with reproducible values in [-1, 1] in steps of 1/1000 (one LCG for all of them).
inline void fill_random(std::initializer_list<std::vector<tilejit::bfloat16>*> vs) {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (auto* v : vs)
    for (auto& x : *v) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      x = tilejit::bfloat16(static_cast<float>(static_cast<int>(state >> 40) % 2001 - 1000) / 1000.0f);
    }
}

/// The jagged attention benchmarks' sequence lengths (bench_hstu, bench_jagged_attention; peers.py's
/// sequence_lengths()): "uniform", 32 sequences of 256 + (s * 7919) % 3840 tokens, or "skewed", 60 short ones of
/// 128 + (s * 7919) % 384 tokens packed first and then 4 of 8192 (most of the work, in the last programs).
inline std::vector<int32_t> sequence_lengths(const std::string& set) {
  std::vector<int32_t> l;
  if (set == "uniform")
    for (int64_t s = 0; s < 32; ++s) l.push_back(static_cast<int32_t>(256 + (s * 7919) % 3840));
  else
    for (int64_t s = 0; s < 64; ++s) l.push_back(s < 60 ? static_cast<int32_t>(128 + (s * 7919) % 384) : 8192);
  return l;
}

}  // namespace bench
