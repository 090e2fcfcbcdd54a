// Cross-entropy over a language model's vocabulary on the GPU: 8192 rows of bf16 logits, V in {32000, 128256}
// (Llama 2 and Llama 3), int64 targets (one row in 16 ignored, -100): the loss alone (samples::cross_entropy_kernel,
// the logits read once) and the loss with its gradient (samples::cross_entropy_grad_kernel, as Liger's fused kernel:
// the row read twice, the second time from L2, counted once, and the gradient written).
// Prints one JSON line per result (the best configuration); bench/peers.py --cross-entropy times torch and Triton.
// The loss of 64 rows and their gradient are checked against a double-precision reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "../samples/sample_kernels.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {
constexpr int64_t kRows = 8192, kIgnore = -100;

template <class F>
double time_ms(F&& f) {
  return tilejit::time_median_ms(nullptr, 5, 20, [](void* u) { (*static_cast<F*>(u))(); }, &f);
}

/// The targets of bench/peers.py: (r * 7919 + 13) % V, every 16th row ignored.
int64_t target_of(int64_t r, int64_t v) { return r % 16 == 5 ? kIgnore : (r * 7919 + 13) % v; }
}  // namespace

int main(int argc, char** argv) {
  // --v V (repeatable) picks vocabulary sizes.
  std::vector<int64_t> vs;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--v") vs.push_back(std::stoll(argv[i + 1]));
    else return std::fprintf(stderr, "bench_cross_entropy: unknown argument %s (accepted: --v V)\n", a.c_str()), 2;
  }
  if (vs.empty()) vs = {32000, 128256};
  if (!tilejit::has_gpu()) {
    std::printf("bench_cross_entropy: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  auto loss_only = tilejit::samples::cross_entropy_kernel();
  auto fused = tilejit::samples::cross_entropy_grad_kernel();
  int64_t counted = 0;
  for (int64_t r = 0; r < kRows; ++r) counted += target_of(r, 2) != kIgnore;
  const float scale = 1.0f / static_cast<float>(counted);  // the gradient of the mean loss
  bool ok = true;
  for (int64_t v : vs) {
    // Logits: reproducible values in [-8, 8), exactly representable in bf16.
    std::vector<tilejit::bfloat16> xh(static_cast<size_t>(kRows * v));
    uint32_t state = 12345;
    for (auto& x : xh) {
      state = state * 1664525u + 1013904223u;
      x = tilejit::bfloat16(static_cast<float>(state >> 8) / 16777216.0f * 16.0f - 8.0f);
    }
    std::vector<int64_t> t(static_cast<size_t>(kRows));
    for (int64_t r = 0; r < kRows; ++r) t[static_cast<size_t>(r)] = target_of(r, v);
    const size_t bytes = xh.size() * 2;
    tilejit::DeviceBuffer xb(bytes), gb(bytes), tb(static_cast<size_t>(kRows) * 8), lb(static_cast<size_t>(kRows) * 4);
    xb.upload(xh.data());
    tb.upload(t.data());
    tilejit::TensorView<bf16, 2> X(xb.data(), {kRows, v}), G(gb.data(), {kRows, v});
    tilejit::TensorView<i64, 1> T(tb.data(), {kRows});
    tilejit::TensorView<f32, 1> L(lb.data(), {kRows});
    const dim3 rows(static_cast<uint32_t>(kRows));

    // Times `launch` for every config, then clears the outputs, runs the best once more and checks 64 rows.
    auto run = [&](const char* bench, double nbytes, bool with_grad, const std::function<void(const Config&)>& launch) {
      std::vector<Config> configs;
      for (int64_t bn : {2048, 4096, 8192, 16384, 32768})
        for (int wp : {4, 8, 16, 32}) {
          const int64_t per_thread = bn / (32 * wp);
          if (per_thread < 8 || per_thread > 64) continue;
          configs.push_back(Config{{"BN", bn}}.num_warps(wp));
          configs.push_back(Config{{"BN", bn}}.num_warps(wp).num_stages(1));  // no block loaded an iteration ahead
        }
      double best = 1e30;
      Config best_c;
      for (const Config& c : configs) {
        double ms;
        try {
          ms = time_ms([&] { launch(c); });
        } catch (const tilejit::UserError&) {
          continue;
        }
        if (ms < best) best = ms, best_c = c;
      }
      lb.fill_bytes(0);
      gb.fill_bytes(0);
      launch(best_c);
      tilejit::synchronize(nullptr);
      std::vector<float> loss(static_cast<size_t>(kRows));
      lb.download(loss.data(), loss.size() * 4);
      std::vector<tilejit::bfloat16> grad(with_grad ? xh.size() : 0);
      if (with_grad) gb.download(grad.data(), bytes);
      int bad = 0;
      for (int64_t r = 0; r < kRows; r += kRows / 64 + 1) {
        const auto* x = &xh[static_cast<size_t>(r * v)];
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < v; ++c) m = std::max(m, static_cast<double>(x[c]));
        for (int64_t c = 0; c < v; ++c) s += std::exp(static_cast<double>(x[c]) - m);
        const int64_t tr = t[static_cast<size_t>(r)];
        const double want = tr == kIgnore ? 0.0 : m + std::log(s) - static_cast<double>(x[tr]);
        bool row_ok = std::fabs(loss[static_cast<size_t>(r)] - want) <= 1e-5 * std::max(1.0, std::fabs(want));
        for (int64_t c = 0; with_grad && row_ok && c < v; ++c) {
          const double p = std::exp(static_cast<double>(x[c]) - m) / s;
          const double g = tr == kIgnore ? 0.0 : (p - (c == tr ? 1.0 : 0.0)) * scale;
          row_ok = std::fabs(static_cast<float>(grad[static_cast<size_t>(r * v + c)]) - g) <= std::max(std::fabs(g), 1e-9) / 128;
        }
        bad += !row_ok;
      }
      std::printf("{\"bench\": \"%s\", \"dtype\": \"bf16\", \"rows\": %lld, \"v\": %lld, \"impl\": \"tilejit\", \"config\": \"%s\", "
                  "\"ms\": %.4f, \"gbps\": %.1f%s}\n",
                  bench, static_cast<long long>(kRows), static_cast<long long>(v), best_c.str().c_str(), best, nbytes / best / 1e6,
                  bad ? ", \"error\": \"wrong rows\"" : "");
      std::fflush(stdout);
      ok &= bad == 0;
    };
    run("cross_entropy", static_cast<double>(bytes), false, [&](const Config& c) { loss_only.launch(nullptr, rows, c, X, T, L, kIgnore); });
    run("cross_entropy_grad", 2.0 * static_cast<double>(bytes), true,
        [&](const Config& c) { fused.launch(nullptr, rows, c, X, T, L, G, scale, kIgnore); });
  }
  return ok ? 0 : 1;
}
