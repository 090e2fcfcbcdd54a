// Jagged softmax attention benchmark on the GPU (sample 15's jagged_attention_kernel): o = softmax(q k^T /
// sqrt(D)) v per sequence and head, sequences packed one after another, H = 8 heads of D = 128, bf16, dense
// and causal, on two sets of lengths:
// - uniform: 32 sequences of 256-4095 tokens (bench_hstu's);
// - skewed: 60 short sequences of 128-511 tokens packed first, then 4 long ones of 8192 (most of the work).
// The programs take the sequences longest first (the kernel's order tensor); each configuration is also timed
// with the sequences in their packed order ("order": "packed"), which shows what the order is worth. Prints
// one JSON line per (lengths, mask, configuration) in TFLOP/s (4 * H * D * sum of L^2 flops dense, half
// causal) and checks 32 output rows and their log-sum-exp of the best configuration against a
// double-precision reference. bench/peers.py --jagged-attention times torch's varlen attention (flash) and
// SDPA on padded sequences (cuDNN where it applies) on the same sequences.
//
// bench_jagged_attention [uniform|skewed causal BM BN num_warps num_stages [ws]]: one configuration (under a
// profiler); ws 1: with a producer warpgroup (warp_specialize).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
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

constexpr int64_t kHeads = 8, kDim = 128;

Config cfg(int64_t bm, int64_t bn, int warps, int stages, int causal) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", kDim}, {"CAUSAL", causal}}.num_warps(warps).num_stages(stages);
}

bool run_set(const std::string& set, int argc, char** argv) {
  const std::vector<int32_t> len = bench::sequence_lengths(set);
  const int64_t seqs = static_cast<int64_t>(len.size());
  std::vector<int32_t> offsets(len.size() + 1, 0), longest_first(len.size()), packed(len.size());
  for (size_t s = 0; s < len.size(); ++s) offsets[s + 1] = offsets[s] + len[s];
  std::iota(packed.begin(), packed.end(), 0);
  longest_first = packed;
  std::stable_sort(longest_first.begin(), longest_first.end(), [&](int32_t a, int32_t b) {
    return len[static_cast<size_t>(a)] > len[static_cast<size_t>(b)];
  });
  const int64_t tokens = offsets.back(), HD = kHeads * kDim;
  const int32_t max_len = *std::max_element(len.begin(), len.end());
  std::vector<tilejit::bfloat16> hq(static_cast<size_t>(tokens * HD)), hk(hq.size()), hv(hq.size()),
      ho(hq.size());
  std::vector<float> hlse(static_cast<size_t>(kHeads * tokens));
  bench::fill_random({&hq, &hk, &hv});
  const size_t bytes = hq.size() * sizeof(tilejit::bfloat16);
  tilejit::DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes), dlse(hlse.size() * sizeof(float)),
      doff(offsets.size() * sizeof(int32_t)), dlong(len.size() * sizeof(int32_t)),
      dpacked(len.size() * sizeof(int32_t));
  dq.upload(hq.data());
  dk.upload(hk.data());
  dv.upload(hv.data());
  doff.upload(offsets.data());
  dlong.upload(longest_first.data());
  dpacked.upload(packed.data());
  tilejit::TensorView<bf16, 2> Q(dq.data(), {tokens, HD}), K(dk.data(), {tokens, HD}),
      V(dv.data(), {tokens, HD}), O(dout.data(), {tokens, HD});
  tilejit::TensorView<f32, 2> LSE(dlse.data(), {kHeads, tokens});
  tilejit::TensorView<i32, 1> OFF(doff.data(), {seqs + 1}), LONGEST(dlong.data(), {seqs}),
      PACKED(dpacked.data(), {seqs});
  const float scale = 1.0f / std::sqrt(static_cast<float>(kDim));
  double squares = 0;
  for (int32_t l : len) squares += static_cast<double>(l) * l;
  const auto kern = tilejit::samples::jagged_attention_kernel();
  bool ok = true;
  for (int causal : {0, 1}) {
    if (argc >= 7 && std::atoi(argv[2]) != causal) continue;
    // 128 x 128 blocks on two consumer warpgroups get roles, the rotated loop and turns from tilejit.
    std::vector<Config> configs = {cfg(128, 128, 8, 3, causal),
                                   cfg(128, 128, 8, 2, causal),
                                   cfg(128, 128, 8, 3, causal).warp_specialize(false),
                                   cfg(128, 64, 8, 3, causal).warp_specialize(),
                                   cfg(128, 64, 8, 2, causal),
                                   cfg(64, 64, 4, 3, causal).warp_specialize().programs_per_sm(2),
                                   cfg(64, 64, 4, 3, causal)};
    if (argc >= 7) {
      configs = {
          cfg(std::atoll(argv[3]), std::atoll(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]), causal)};
      if (argc == 8) configs[0].warp_specialize(std::atoi(argv[7]) != 0);
    }
    const double flops = (causal ? 2.0 : 4.0) * kHeads * kDim * squares;
    for (bool by_length : {true, false}) {
      if (argc >= 7 && !by_length) continue;
      auto head = [&](const Config& c) {
        return "{\"bench\": \"jagged_attention\", \"impl\": \"tilejit\", \"lengths\": \"" + set +
               "\", \"causal\": " + std::to_string(causal) + ", \"order\": \"" +
               (by_length ? "longest_first" : "packed") + "\", \"seqs\": " + std::to_string(seqs) +
               ", \"heads\": " + std::to_string(kHeads) + ", \"d\": " + std::to_string(kDim) +
               ", \"config\": \"" + c.str() + "\"";
      };
      auto launch = [&](const Config& c) {
        const dim3 grid(static_cast<uint32_t>(tilejit::cdiv(max_len, c.get("BM"))),
                        static_cast<uint32_t>(kHeads), static_cast<uint32_t>(seqs));
        kern.launch(nullptr, grid, c, OFF, by_length ? LONGEST : PACKED, Q, K, V, O, LSE, scale);
      };
      const auto [best_i, best] = bench::sweep(configs, flops, head, launch);
      if (best_i < 0) {
        ok = false;
        continue;
      }
      if (!by_length) continue;  // the same kernels, checked once
      const Config& best_c = configs[static_cast<size_t>(best_i)];
      launch(best_c);
      tilejit::synchronize(nullptr);
      dout.download(ho.data(), bytes);
      dlse.download(hlse.data(), hlse.size() * sizeof(float));
      // 32 rows spread over sequences, heads and positions against a double reference, and their lse.
      double err2 = 0, ref2 = 0, lse_err = 0;
      for (int i = 0; i < 32; ++i) {
        const int64_t s = (i * 5) % seqs, h = (i * 3) % kHeads,
                      r = (i * 104729) % len[static_cast<size_t>(s)];
        const int64_t row = offsets[static_cast<size_t>(s)] + r,
                      keys = causal ? r + 1 : len[static_cast<size_t>(s)];
        std::vector<double> x(static_cast<size_t>(keys)), out(static_cast<size_t>(kDim), 0.0);
        double top = -INFINITY, total = 0;
        for (int64_t j = 0; j < keys; ++j) {
          const int64_t key = offsets[static_cast<size_t>(s)] + j;
          double d = 0;
          for (int64_t e = 0; e < kDim; ++e)
            d += static_cast<double>(static_cast<float>(hq[static_cast<size_t>(row * HD + h * kDim + e)])) *
                 static_cast<double>(static_cast<float>(hk[static_cast<size_t>(key * HD + h * kDim + e)]));
          x[static_cast<size_t>(j)] = d * scale;
          top = std::max(top, x[static_cast<size_t>(j)]);
        }
        for (double& e : x) total += (e = std::exp(e - top));
        for (int64_t j = 0; j < keys; ++j) {
          const int64_t key = offsets[static_cast<size_t>(s)] + j;
          for (int64_t c = 0; c < kDim; ++c)
            out[static_cast<size_t>(c)] +=
                x[static_cast<size_t>(j)] / total *
                static_cast<double>(static_cast<float>(hv[static_cast<size_t>(key * HD + h * kDim + c)]));
        }
        for (int64_t c = 0; c < kDim; ++c) {
          const double got = static_cast<float>(ho[static_cast<size_t>(row * HD + h * kDim + c)]),
                       want = out[static_cast<size_t>(c)];
          err2 += (got - want) * (got - want);
          ref2 += want * want;
        }
        lse_err =
            std::max(lse_err, std::abs(static_cast<double>(hlse[static_cast<size_t>(h * tokens + row)]) -
                                       (top + std::log(total))));
      }
      const double rel = std::sqrt(err2 / ref2);
      const bool good = rel < 2e-2 && lse_err < 1e-3;  // P and O are rounded to bf16
      if (lse_err >= 1e-3) std::fprintf(stderr, "bench_jagged_attention: lse off by %.3e\n", lse_err);
      bench::print_best(head(best_c), best, flops, rel, good);
      ok = ok && good;
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 7 && argc != 8) {
    std::fprintf(stderr,
                 "usage: bench_jagged_attention [uniform|skewed causal BM BN num_warps num_stages [ws]]\n");
    return 2;
  }
  if (argc > 1 && std::string(argv[1]) != "uniform" && std::string(argv[1]) != "skewed") {
    std::fprintf(stderr, "bench_jagged_attention: unknown set of lengths '%s' (uniform or skewed)\n",
                 argv[1]);
    return 2;
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_jagged_attention: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  bool ok = true;
  for (const char* set : {"uniform", "skewed"})
    if (argc == 1 || argv[1] == std::string(set)) ok = run_set(set, argc, argv) && ok;
  return ok ? 0 : 1;
}
