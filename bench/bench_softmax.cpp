// Row-reduction benchmarks on the GPU over 32768 rows of N columns, N in {256, 1024, 4096, 16384}:
// the Triton tutorial's softmax (pointer loads with a mask) in fp32 and bf16, the TMA form (rows over
// 256 are one box split into 256-wide operations), the online forms over blocks of a row (two reductions per
// block, one combine reduction, and two reductions with cache hints: Evict::last on the first read, Evict::first
// on the second and on the store), layer normalisation forward (bf16, fp32 statistics) and an fp32 row sum.
// Prints one JSON line per result (the best warp count); bench/peers.py times torch and Triton.
// Every result is checked on 64 rows against a double-precision reference.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "../samples/sample_kernels.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {
constexpr int64_t kRows = 32768;
constexpr float kEps = 1e-5f;

template <class F>
double time_ms(F&& f) {
  return tilejit::time_median_ms(nullptr, 5, 20, [](void* u) { (*static_cast<F*>(u))(); }, &f);
}

std::vector<double> softmax_ref(const float* x, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t c = 0; c < n; ++c) m = std::max(m, static_cast<double>(x[c]));
  for (int64_t c = 0; c < n; ++c) s += std::exp(x[c] - m);
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) y[static_cast<size_t>(c)] = std::exp(x[c] - m) / s;
  return y;
}
std::vector<double> layernorm_ref(const float* x, int64_t n) {  // weight 1.5, bias -0.25
  double mean = 0, var = 0;
  for (int64_t c = 0; c < n; ++c) mean += x[c];
  mean /= static_cast<double>(n);
  for (int64_t c = 0; c < n; ++c) var += (x[c] - mean) * (x[c] - mean);
  var /= static_cast<double>(n);
  std::vector<double> y(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) y[static_cast<size_t>(c)] = (x[c] - mean) / std::sqrt(var + kEps) * 1.5 - 0.25;
  return y;
}
std::vector<double> rowsum_ref(const float* x, int64_t n) {
  double s = 0;
  for (int64_t c = 0; c < n; ++c) s += x[c];
  return {s};
}

auto softmax_bf16_kernel() {
  return tilejit::kernel("softmax_bf16", [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Meta<"BN"> BN) {
    auto row = program_id(0).to<i64>();
    auto cols = arange(0, BN);
    auto mask = cols < x.size(1);
    auto v = load(x, row * x.stride(0) + cols, mask, -std::numeric_limits<float>::infinity()).to<f32>();
    auto e = exp(v - max(v, 0));
    store(y, row * y.stride(0) + cols, (e / sum(e, 0)).to<bf16>(), mask);
  });
}
auto rowsum_kernel() {
  return tilejit::kernel("rowsum", [](Tensor<f32, 2> x, Tensor<f32, 1> y, Meta<"BN"> BN) {
    auto row = program_id(0);
    auto cols = arange(0, BN);
    auto v = load(x, row.to<i64>() * x.stride(0) + cols, cols < x.size(1));
    store(y, row, sum(v, 0));
  });
}
}  // namespace

int main(int argc, char** argv) {
  // Optional filters, to time a few workloads in a short call: --n N (repeatable) picks row lengths of the
  // sweep, --only NAME (repeatable) the benches (softmax, softmax_tma, softmax_online, ...), --stages S sets
  // num_stages in every configuration (1: no pipelining, the loads of a loop issued where they are used).
  std::vector<int64_t> ns;
  std::vector<std::string> only;
  int stages = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") ns.push_back(std::stoll(argv[i + 1]));
    else if (a == "--only") only.emplace_back(argv[i + 1]);
    else if (a == "--stages") stages = std::stoi(argv[i + 1]);
    else return std::fprintf(stderr, "bench_softmax: unknown argument %s (accepted: --n N, --only NAME, --stages S)\n", a.c_str()), 2;
  }
  if (ns.empty()) ns = {256, 1024, 4096, 16384};
  if (!tilejit::has_gpu()) {
    std::printf("bench_softmax: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  auto softmax = tilejit::samples::softmax_kernel();
  auto softmax_tma = tilejit::samples::softmax_tma_kernel();
  auto softmax_online = tilejit::samples::softmax_online_kernel();
  auto softmax_online_combine = tilejit::samples::softmax_online_combine_kernel();
  auto softmax_online_evict = tilejit::samples::softmax_online_evict_kernel();
  auto softmax_bf16 = softmax_bf16_kernel();
  auto layernorm = tilejit::samples::layernorm_kernel();
  auto rowsum = rowsum_kernel();
  bool ok = true;
  for (int64_t n : ns) {
    // Inputs: reproducible values in [-4, 4), exactly representable in bf16.
    std::vector<float> xf(static_cast<size_t>(kRows * n));
    std::vector<tilejit::bfloat16> xh(xf.size());
    uint32_t state = 12345;
    for (size_t i = 0; i < xf.size(); ++i) {
      state = state * 1664525u + 1013904223u;
      xh[i] = tilejit::bfloat16(static_cast<float>(state >> 8) / 16777216.0f * 8.0f - 4.0f);
      xf[i] = static_cast<float>(xh[i]);
    }
    const size_t f32_bytes = xf.size() * 4, bf16_bytes = xf.size() * 2;
    tilejit::DeviceBuffer x32(f32_bytes), y32(f32_bytes), x16(bf16_bytes), y16(bf16_bytes), wb(static_cast<size_t>(n) * 2),
        bb(static_cast<size_t>(n) * 2), sums(kRows * 4);
    x32.upload(xf.data());
    x16.upload(xh.data());
    std::vector<tilejit::bfloat16> w(static_cast<size_t>(n), tilejit::bfloat16(1.5f)), b(static_cast<size_t>(n), tilejit::bfloat16(-0.25f));
    wb.upload(w.data());
    bb.upload(b.data());
    tilejit::TensorView<f32, 2> X(x32.data(), {kRows, n}), Y(y32.data(), {kRows, n});
    tilejit::TensorView<bf16, 2> XH(x16.data(), {kRows, n}), YH(y16.data(), {kRows, n});
    tilejit::TensorView<bf16, 1> W(wb.data(), {n}), B(bb.data(), {n});
    tilejit::TensorView<f32, 1> S(sums.data(), {kRows});
    const dim3 rows(static_cast<uint32_t>(kRows));

    // Times `launch` for every config, then clears the output, runs the best once more and checks 64 rows.
    auto run = [&](const char* bench, const char* dtype, double bytes, const std::vector<Config>& configs,
                   const std::function<void(const Config&)>& launch, tilejit::DeviceBuffer& out, bool out_bf16, int64_t out_cols,
                   std::vector<double> (*ref)(const float*, int64_t), double tol, double floor) {
      if (!only.empty() && std::find(only.begin(), only.end(), bench) == only.end()) return;
      double best = 1e30;
      Config best_c;
      for (Config c : configs) {
        if (stages >= 0) c.num_stages(stages);
        double ms;
        try {
          ms = time_ms([&] { launch(c); });
        } catch (const tilejit::UserError&) {
          continue;  // a block that does not fit in registers with these warps: tilejit refuses it
        }
        if (ms < best) best = ms, best_c = c;
      }
      out.fill_bytes(0);
      launch(best_c);
      tilejit::synchronize(nullptr);
      std::vector<float> got(static_cast<size_t>(kRows * out_cols));
      if (out_bf16) {
        std::vector<tilejit::bfloat16> h(got.size());
        out.download(h.data(), h.size() * 2);
        for (size_t i = 0; i < h.size(); ++i) got[i] = static_cast<float>(h[i]);
      } else {
        out.download(got.data(), got.size() * 4);
      }
      int bad = 0;
      for (int64_t r = 0; r < kRows; r += kRows / 64) {
        const auto want = ref(&xf[static_cast<size_t>(r * n)], n);
        for (int64_t c = 0; c < out_cols; ++c) {
          const double g = got[static_cast<size_t>(r * out_cols + c)], v = want[static_cast<size_t>(c)];
          if (!(std::fabs(g - v) <= tol * std::max(std::fabs(v), floor) + 1e-30)) {  // NaN fails too
            ++bad;
            break;
          }
        }
      }
      std::printf("{\"bench\": \"%s\", \"dtype\": \"%s\", \"n\": %lld, \"impl\": \"tilejit\", \"config\": \"%s\", \"ms\": %.4f, "
                  "\"gbps\": %.1f%s}\n",
                  bench, dtype, static_cast<long long>(n), best_c.str().c_str(), best, bytes / best / 1e6,
                  bad ? ", \"error\": \"wrong rows\"" : "");
      std::fflush(stdout);
      ok &= bad == 0;
    };
    // Warp counts that keep at most 128 elements per thread (tilejit refuses more) and at least one.
    // Each also with an occupancy target of two programs per SM where two fit (fewer registers, maybe spills).
    auto warps_for = [&](std::initializer_list<std::pair<const char*, int64_t>> cfg) {
      std::vector<Config> out;
      for (int wp : {1, 2, 4, 8, 16, 32}) {
        if (n / (32 * wp) > 128 || n / (32 * wp) < 1) continue;
        Config c;
        for (auto [k, v] : cfg) c.set(k, v);
        out.push_back(c.num_warps(wp));
        if (wp <= 16) out.push_back(Config(c).programs_per_sm(2));  // two programs of 32 warps never fit
      }
      return out;
    };
    const double fp32_rw = 2.0 * static_cast<double>(f32_bytes), bf16_rw = 2.0 * static_cast<double>(bf16_bytes);
    run("softmax", "fp32", fp32_rw, warps_for({{"BN", n}}), [&](const Config& c) { softmax.launch(nullptr, rows, c, X, Y); }, y32,
        false, n, softmax_ref, 1e-5, 0);
    {
      // Rows of up to 256 several per program; longer rows one per program, in 256-wide TMA operations.
      std::vector<Config> tma;
      for (int64_t bm : {1, 2, 4, 8, 16, 32})
        for (int wp : {1, 2, 4, 8, 16})
          if (bm * n <= 16384 && (n <= 256 || bm == 1)) tma.push_back(Config{{"BM", bm}, {"BN", n}}.num_warps(wp));
      run("softmax_tma", "fp32", fp32_rw, tma,
          [&](const Config& c) { softmax_tma.launch(nullptr, dim3(static_cast<uint32_t>(tilejit::cdiv(kRows, c["BM"]))), c, X, Y); },
          y32, false, n, softmax_ref, 1e-5, 0);
    }
    {
      // Online: blocks of 256 to 16384 columns, at most the row, a loop over them (the row is read twice, counted
      // once); with two reductions per block, and with one combine reduction of (maximum, sum) pairs.
      std::vector<Config> blocks;
      for (int64_t bn : {256, 512, 1024, 2048, 4096, 8192, 16384})
        for (int wp : {2, 4, 8, 16, 32})
          if (bn <= n && bn / (32 * wp) >= 2 && bn / (32 * wp) <= 32) {
            blocks.push_back(Config{{"BN", bn}}.num_warps(wp));
            // num_stages=1: the reduction loop's loads are not issued an iteration ahead (prefetch_loads), which
            // saves the registers of the carried block: better where a row is one block and programs are small.
            blocks.push_back(Config{{"BN", bn}}.num_warps(wp).num_stages(1));
          }
      run("softmax_online", "fp32", fp32_rw, blocks, [&](const Config& c) { softmax_online.launch(nullptr, rows, c, X, Y); }, y32,
          false, n, softmax_ref, 1e-5, 0);
      run("softmax_online_combine", "fp32", fp32_rw, blocks,
          [&](const Config& c) { softmax_online_combine.launch(nullptr, rows, c, X, Y); }, y32, false, n, softmax_ref, 1e-5, 0);
      // The two-reduction form with cache hints: the first read kept in L2 for the second, the output streamed.
      run("softmax_online_evict", "fp32", fp32_rw, blocks,
          [&](const Config& c) { softmax_online_evict.launch(nullptr, rows, c, X, Y); }, y32, false, n, softmax_ref, 1e-5, 0);
    }
    run("softmax", "bf16", bf16_rw, warps_for({{"BN", n}}), [&](const Config& c) { softmax_bf16.launch(nullptr, rows, c, XH, YH); },
        y16, true, n, softmax_ref, 1.0 / 128, 0);
    run("layernorm", "bf16", bf16_rw, warps_for({{"BN", n}}),
        [&](const Config& c) { layernorm.launch(nullptr, rows, c, XH, W, B, YH, kEps); }, y16, true, n, layernorm_ref, 1.0 / 64, 1);
    run("rowsum", "fp32", static_cast<double>(f32_bytes), warps_for({{"BN", n}}),
        [&](const Config& c) { rowsum.launch(nullptr, rows, c, X, S); }, sums, false, 1, rowsum_ref, 1e-4, 1);
  }
  return ok ? 0 : 1;
}
