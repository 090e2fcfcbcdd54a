// Attention backward benchmark on the GPU, bf16, batch x heads = 64, sequence 1024, 4096 and 16384, head dim 64 and 128,
// dense and causal: sample 14's three kernels (delta = rowsum(o * do); dK and dV per block of keys; dQ per block of
// queries) from the output and log-sum-exp of sample 12's forward kernel. Each kernel's configurations are swept on
// their own (one JSON line each, TFLOP/s of the products that kernel runs: 4 per block pair for dK/dV, 3 for dQ);
// then one line per shape for the whole backward pass at the best configuration of each kernel, in TFLOP/s of the
// usual convention (2.5 times the forward pass's flops: 10 S^2 D per head, half of it causal), with dQ, dK and dV
// of 32 rows each checked against a double-precision reference computed from the same q, k, v, do, o and lse.
// bench/peers.py --attention-backward times torch's scaled_dot_product_attention backward (cuDNN and flash
// backends) and Triton kernels of the same three loops.
//
// bench_attention_backward [S D [causal]]: one shape, dense and causal or only one of them. Without a GPU it compiles
// every configuration (of head dim D when given) with NVRTC and prints ptxas's registers and spills.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../samples/sample_kernels.h"
#include "bench_util.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {

constexpr int64_t kHeads = 64;  // batch x heads

Config cfg(int64_t bm, int64_t bn, int64_t d, int causal, int warps, int stages) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", d}, {"CAUSAL", causal}}.num_warps(warps).num_stages(stages);
}

/// The configurations swept for the dK/dV kernel (a program per BN keys) and for the dQ kernel (per BM queries).
std::vector<Config> dkdv_configs(int64_t D, int c) {
  return {cfg(64, 128, D, c, 8, 2), cfg(64, 128, D, c, 8, 3), cfg(64, 128, D, c, 8, 4), cfg(32, 128, D, c, 8, 2),
          cfg(32, 128, D, c, 8, 3), cfg(64, 64, D, c, 4, 2),  cfg(64, 64, D, c, 4, 3),  cfg(128, 128, D, c, 8, 2),
          cfg(64, 128, D, c, 8, 3).warp_specialize(), cfg(64, 128, D, c, 8, 4).warp_specialize(),
          // The consumers at 240 registers instead of 232: the causal kernel at D = 128 spills 12-20 bytes at 232.
          cfg(64, 128, D, c, 8, 3).warp_specialize().producer_registers(24),
          cfg(64, 128, D, c, 8, 4).warp_specialize().producer_registers(24)};
}
std::vector<Config> dq_configs(int64_t D, int c) {
  return {cfg(128, 64, D, c, 8, 2), cfg(128, 64, D, c, 8, 3), cfg(128, 64, D, c, 8, 4), cfg(128, 128, D, c, 8, 2),
          cfg(64, 64, D, c, 4, 2),  cfg(64, 64, D, c, 4, 3),  cfg(128, 32, D, c, 8, 3),
          cfg(128, 64, D, c, 8, 3).warp_specialize(), cfg(128, 64, D, c, 8, 4).warp_specialize()};
}

/// Without a GPU: every configuration of both kernels compiled with NVRTC for sm_90a, one line each with ptxas's
/// resources (registers, spills), so that a change to the kernels can be checked for spills before a GPU run.
void compile_every_configuration(const std::vector<int64_t>& dims, const std::vector<bool>& masks) {
  const auto dkdv = tilejit::samples::attention_backward_dkdv_kernel();
  const auto dq = tilejit::samples::attention_backward_dq_kernel();
  auto report = [](const char* what, const tilejit::KernelBase& k, const Config& c) {
    std::printf("%s %s: %s\n", what, c.str().c_str(), tilejit::runtime::compile_only(k, c).c_str());
  };
  for (bool causal : masks)
    for (int64_t D : dims) {
      for (const Config& c : dkdv_configs(D, causal)) report("dkdv", dkdv.base(), c);
      for (const Config& c : dq_configs(D, causal)) report("dq", dq.base(), c);
    }
}

using Host = std::vector<tilejit::bfloat16>;

double f(const Host& h, size_t i) { return static_cast<double>(static_cast<float>(h[i])); }

/// The relative error (root mean square) of dq, dk and dv on 32 rows each, against double precision from the same
/// inputs and the forward pass's o and lse: P = exp(scale q k^T - lse), dP = do v^T, dS = P (dP - rowsum(do o)).
double check(const Host& q, const Host& k, const Host& v, const Host& dout, const Host& o, const std::vector<float>& lse,
             const Host& dq, const Host& dk, const Host& dv, int64_t S, int64_t D, bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto at = [&](int64_t h, int64_t r, int64_t c) { return static_cast<size_t>((h * S + r) * D + c); };
  auto delta = [&](int64_t h, int64_t r) {
    double s = 0;
    for (int64_t c = 0; c < D; ++c) s += f(dout, at(h, r, c)) * f(o, at(h, r, c));
    return s;
  };
  // P_ij (dP_ij - delta_i), that is dS_ij before the scale, with P_ij in `p` (0 where causal hides key j from query i).
  auto ds_p = [&](int64_t h, int64_t i, int64_t j, double di, double& p) {
    if (causal && j > i) return p = 0.0;
    double s = 0, dp = 0;
    for (int64_t c = 0; c < D; ++c) {
      s += f(q, at(h, i, c)) * f(k, at(h, j, c));
      dp += f(dout, at(h, i, c)) * f(v, at(h, j, c));
    }
    p = std::exp(s * scale - static_cast<double>(lse[static_cast<size_t>(h * S + i)]));
    return p * (dp - di);
  };
  double err2 = 0, ref2 = 0;
  auto add = [&](const Host& got, size_t i, double want) {
    err2 += (f(got, i) - want) * (f(got, i) - want);
    ref2 += want * want;
  };
  for (int n = 0; n < 32; ++n) {
    const int64_t h = (n * 7) % kHeads, r = (n * 104729) % S;
    // dq of query r: over the keys.
    std::vector<double> acc(static_cast<size_t>(D), 0.0);
    const double dr = delta(h, r);
    for (int64_t j = 0; j < S; ++j) {
      double p = 0;
      const double ds = ds_p(h, r, j, dr, p) * scale;
      for (int64_t c = 0; c < D; ++c) acc[static_cast<size_t>(c)] += ds * f(k, at(h, j, c));
    }
    for (int64_t c = 0; c < D; ++c) add(dq, at(h, r, c), acc[static_cast<size_t>(c)]);
    // dk and dv of key r: over the queries.
    std::vector<double> ak(static_cast<size_t>(D), 0.0), av(static_cast<size_t>(D), 0.0);
    for (int64_t i = 0; i < S; ++i) {
      double p = 0;
      const double ds = ds_p(h, i, r, delta(h, i), p) * scale;
      for (int64_t c = 0; c < D; ++c) {
        ak[static_cast<size_t>(c)] += ds * f(q, at(h, i, c));
        av[static_cast<size_t>(c)] += p * f(dout, at(h, i, c));
      }
    }
    for (int64_t c = 0; c < D; ++c) {
      add(dk, at(h, r, c), ak[static_cast<size_t>(c)]);
      add(dv, at(h, r, c), av[static_cast<size_t>(c)]);
    }
  }
  return std::sqrt(err2 / ref2);
}

bool run_shape(int64_t S, int64_t D, bool causal) {
  const int c = causal ? 1 : 0;
  const size_t n = static_cast<size_t>(kHeads * S * D);
  Host hq(n), hk(n), hv(n), hdo(n), ho(n), hdq(n), hdk(n), hdv(n);
  std::vector<float> hlse(static_cast<size_t>(kHeads * S));
  bench::fill_random({&hq, &hk, &hv, &hdo});
  const size_t bytes = n * sizeof(tilejit::bfloat16), row_bytes = hlse.size() * sizeof(float);
  tilejit::DeviceBuffer q(bytes), k(bytes), v(bytes), dout(bytes), o(bytes), dq(bytes), dk(bytes), dv(bytes), lse(row_bytes),
      delta(row_bytes);
  q.upload(hq.data());
  k.upload(hk.data());
  v.upload(hv.data());
  dout.upload(hdo.data());
  using T3 = tilejit::TensorView<bf16, 3>;
  using T2 = tilejit::TensorView<f32, 2>;
  auto t3 = [&](tilejit::DeviceBuffer& b) { return T3(b.data(), {kHeads, S, D}); };
  auto t2 = [&](tilejit::DeviceBuffer& b) { return T2(b.data(), {kHeads, S}); };
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto heads = static_cast<uint32_t>(kHeads);
  // The forward pass once, for o and lse.
  const Config fwd_c = cfg(128, 64, D, c, 8, 2);
  tilejit::samples::attention_forward_kernel().launch(nullptr, dim3(static_cast<uint32_t>(S / 128), heads), fwd_c, t3(q), t3(k), t3(v),
                                                      t3(o), t2(lse), scale);
  const double pairs = static_cast<double>(kHeads) * static_cast<double>(S) * static_cast<double>(S) * static_cast<double>(D) *
                       (causal ? 0.5 : 1.0);  // query-key pairs x D
  const std::string suffix = causal ? "_causal" : "";
  auto head_of = [&](std::string bench) {
    return [&, bench](const Config& cf) {
      return "{\"bench\": \"" + bench + "\", \"impl\": \"tilejit\", \"s\": " + std::to_string(S) + ", \"d\": " + std::to_string(D) +
             ", \"heads\": " + std::to_string(kHeads) + ", \"config\": \"" + cf.str() + "\"";
    };
  };
  // Step 1: delta (memory-bound: two reads of [S, D] per head).
  const auto delta_k = tilejit::samples::attention_backward_delta_kernel();
  const std::vector<Config> delta_cs = {Config{{"BM", 64}, {"D", D}}.num_warps(4), Config{{"BM", 128}, {"D", D}}.num_warps(8)};
  auto run_delta = [&](const Config& cf) {
    delta_k.launch(nullptr, dim3(static_cast<uint32_t>(S / cf.get("BM")), heads), cf, t3(o), t3(dout), t2(delta));
  };
  const auto [di, delta_ms] = bench::sweep(delta_cs, 2.0 * static_cast<double>(n), head_of("attention_backward_delta" + suffix), run_delta);
  // Step 2: dK and dV, program per block of BN keys.
  const auto dkdv_k = tilejit::samples::attention_backward_dkdv_kernel();
  const std::vector<Config> dkdv_cs = dkdv_configs(D, c);
  auto run_dkdv = [&](const Config& cf) {
    dkdv_k.launch(nullptr, dim3(static_cast<uint32_t>(S / cf.get("BN")), heads), cf, t3(q), t3(k), t3(v), t3(dout), t2(lse), t2(delta),
                  t3(dk), t3(dv), scale);
  };
  const auto [ki, dkdv_ms] = bench::sweep(dkdv_cs, 8.0 * pairs, head_of("attention_backward_dkdv" + suffix), run_dkdv);
  // Step 3: dQ, program per block of BM queries.
  const auto dq_k = tilejit::samples::attention_backward_dq_kernel();
  const std::vector<Config> dq_cs = dq_configs(D, c);
  auto run_dq = [&](const Config& cf) {
    dq_k.launch(nullptr, dim3(static_cast<uint32_t>(S / cf.get("BM")), heads), cf, t3(q), t3(k), t3(v), t3(dout), t2(lse), t2(delta),
                t3(dq), scale);
  };
  const auto [qi, dq_ms] = bench::sweep(dq_cs, 6.0 * pairs, head_of("attention_backward_dq" + suffix), run_dq);
  if (di < 0 || ki < 0 || qi < 0) return false;
  // The whole pass at the best configuration of each kernel, checked.
  const Config &bd = delta_cs[static_cast<size_t>(di)], &bk = dkdv_cs[static_cast<size_t>(ki)], &bq = dq_cs[static_cast<size_t>(qi)];
  run_delta(bd);
  run_dkdv(bk);
  run_dq(bq);
  tilejit::synchronize(nullptr);
  o.download(ho.data(), bytes);
  lse.download(hlse.data(), row_bytes);
  dq.download(hdq.data(), bytes);
  dk.download(hdk.data(), bytes);
  dv.download(hdv.data(), bytes);
  const double rel = check(hq, hk, hv, hdo, ho, hlse, hdq, hdk, hdv, S, D, causal);
  const bool good = rel < 2e-2;  // P, dS and the gradients are rounded to bf16
  const double ms = delta_ms + dkdv_ms + dq_ms;
  std::printf("{\"bench\": \"attention_backward%s\", \"impl\": \"tilejit_best\", \"s\": %lld, \"d\": %lld, \"heads\": %lld, "
              "\"config\": \"dkdv %s; dq %s\", \"ms\": %.4f, \"tflops\": %.1f, \"delta_ms\": %.4f, \"dkdv_ms\": %.4f, \"dq_ms\": %.4f, "
              "\"rel_err\": %.2e%s}\n",
              suffix.c_str(), static_cast<long long>(S), static_cast<long long>(D), static_cast<long long>(kHeads), bk.str().c_str(),
              bq.str().c_str(), ms, 10.0 * pairs / ms / 1e9, delta_ms, dkdv_ms, dq_ms, rel, good ? "" : ", \"error\": \"wrong result\"");
  std::fflush(stdout);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: bench_attention_backward [S D [causal]]\n");
    return 2;
  }
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1024, 64}, {4096, 64}, {16384, 64}, {1024, 128}, {4096, 128}, {16384, 128}};
  if (argc >= 3) shapes = {{std::atoll(argv[1]), std::atoll(argv[2])}};
  std::vector<bool> masks = {false, true};
  if (argc == 4) masks = {std::atoi(argv[3]) != 0};
  if (!tilejit::has_gpu()) {
    std::printf("bench_attention_backward: no GPU (%s); nothing to measure: every configuration compiled for sm_90a instead\n",
                tilejit::driver_error().c_str());
    compile_every_configuration(argc >= 3 ? std::vector<int64_t>{std::atoll(argv[2])} : std::vector<int64_t>{64, 128}, masks);
    return 0;
  }
  bool ok = true;
  for (bool causal : masks)
    for (auto [s, d] : shapes) ok &= run_shape(s, d, causal);
  return ok ? 0 : 1;
}
