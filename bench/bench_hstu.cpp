// Jagged HSTU attention benchmark on the GPU (sample 13's jagged_hstu_kernel): o = (silu(alpha q k^T) /
// max_len) v per sequence and head, sequences packed one after another, H = 8 heads of D = 128, bf16, dense
// and causal, on two sets of lengths (bench::sequence_lengths): uniform, 32 sequences of 256-4095 tokens, and
// skewed, 60 short ones of 128-511 then 4 of 8192. Each program reads its sequence through views whose TMA
// descriptors it builds on the device. Prints one JSON line per (mask, configuration) in TFLOP/s (4 * H * D *
// sum of L^2 flops dense, half causal) and checks 32 output rows of the best configuration against a
// double-precision reference. bench/peers.py --hstu times a plain Triton HSTU kernel (pointer loads, the same
// loop) on the same sequences. Five configurations also run with HSTU's relative attention bias (BIAS 1,
// "bias": 1 in the output: silu(alpha q k^T + rab[h, clamp(key - query, -128, 128) + 128]), a gathered load of
// the [H, 257] table per score). Every configuration runs twice: with the precise sigmoid and with
// Accuracy::fast ("silu": "fast": the hardware's tanh, one special-function instruction per score instead of two).
//
// bench_hstu [uniform|skewed [causal BM BN num_warps num_stages [ws]]]: one set, or one configuration on it
// (under a profiler); ws 1: with a producer warpgroup (warp_specialize).
#include <algorithm>
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

constexpr int64_t kHeads = 8, kDim = 128;

constexpr int64_t kReach = 128;  // the relative bias table: positions -128 .. 128 apart (BIAS 1)

Config cfg(int64_t bm, int64_t bn, int warps, int stages, int causal, int bias = 0) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", kDim}, {"CAUSAL", causal}, {"BIAS", bias}}
      .num_warps(warps)
      .num_stages(stages);
}

/// Every configuration (or the one of argv[2..]) on the set of lengths `set`; false when an output is wrong.
bool run_set(const std::string& set, int argc, char** argv) {
  const std::vector<int32_t> len = bench::sequence_lengths(set);
  const int64_t seqs = static_cast<int64_t>(len.size());
  std::vector<int32_t> offsets(len.size() + 1, 0);
  for (size_t s = 0; s < len.size(); ++s) offsets[s + 1] = offsets[s] + len[s];
  const int64_t tokens = offsets.back(), HD = kHeads * kDim;
  const int32_t max_len = *std::max_element(len.begin(), len.end());
  std::vector<tilejit::bfloat16> hq(static_cast<size_t>(tokens * HD)), hk(hq.size()), hv(hq.size()),
      ho(hq.size());
  bench::fill_random({&hq, &hk, &hv});
  const size_t bytes = hq.size() * sizeof(tilejit::bfloat16);
  tilejit::DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes), doff(offsets.size() * sizeof(int32_t));
  dq.upload(hq.data());
  dk.upload(hk.data());
  dv.upload(hv.data());
  doff.upload(offsets.data());
  tilejit::TensorView<bf16, 2> Q(dq.data(), {tokens, HD}), K(dk.data(), {tokens, HD}),
      V(dv.data(), {tokens, HD}), O(dout.data(), {tokens, HD});
  tilejit::TensorView<i32, 1> OFF(doff.data(), {seqs + 1});
  std::vector<float> hrab(static_cast<size_t>(kHeads * (2 * kReach + 1)));
  for (size_t i = 0; i < hrab.size(); ++i) hrab[i] = 0.5f * std::cos(0.05f * static_cast<float>(i));
  tilejit::DeviceBuffer drab(hrab.size() * sizeof(float));
  drab.upload(hrab.data());
  tilejit::TensorView<f32, 2> RAB(drab.data(), {kHeads, 2 * kReach + 1});
  const float alpha = 1.0f / std::sqrt(static_cast<float>(kDim)),
              inv_max_len = 1.0f / static_cast<float>(max_len);
  double squares = 0;
  for (int32_t l : len) squares += static_cast<double>(l) * l;
  const auto precise = tilejit::samples::jagged_hstu_kernel(),
             fast = tilejit::samples::jagged_hstu_kernel(tilejit::dsl::Accuracy::fast);
  bool ok = true;
  for (const bool fast_silu : {false, true})
  for (int causal : {0, 1})
    for (int bias : {0, 1}) {
      if (argc >= 7 && (std::atoi(argv[2]) != causal || bias)) continue;
      const auto& kern = fast_silu ? fast : precise;
      // 128 x 128 blocks on two consumer warpgroups get roles from tilejit (their loop is rotated): here also
      // without.
      std::vector<Config> configs = {cfg(128, 64, 8, 2, causal),
                                     cfg(128, 64, 8, 3, causal),
                                     cfg(128, 128, 8, 2, causal).warp_specialize(false),
                                     cfg(64, 64, 4, 3, causal),
                                     cfg(64, 64, 4, 2, causal),
                                     cfg(128, 32, 8, 3, causal)};
      // With a producer warpgroup (the consumers build the views' descriptors, one warp each, the producer
      // awaits them): at 128 x 128 tilejit rotates the loop and the two consumer warpgroups take turns at the
      // products.
      for (const Config& c : {cfg(128, 128, 8, 2, causal), cfg(128, 128, 8, 3, causal),
                              cfg(128, 64, 8, 3, causal), cfg(128, 64, 8, 2, causal)})
        configs.push_back(Config(c).warp_specialize());
      configs.push_back(cfg(64, 64, 4, 3, causal).warp_specialize().programs_per_sm(2));
      if (argc >= 7) {
        configs = {
            cfg(std::atoll(argv[3]), std::atoll(argv[4]), std::atoi(argv[5]), std::atoi(argv[6]), causal)};
        if (argc == 8) configs[0].warp_specialize(std::atoi(argv[7]) != 0);
      }
      // Each configuration also with the other choice of overlap_products than tilejit's (on where BN >=
      // 128).
      if (argc < 7)
        for (size_t k = 0, n = configs.size(); k < n; ++k)
          configs.push_back(Config(configs[k]).overlap_products(configs[k].get("BN") < 128));
      // With the relative attention bias (a gathered load of the bias table per score): five configurations.
      // 128 x 128 blocks without roles, and with them and the producer at 24 registers (at tilejit's 40 the
      // consumers' 232 registers spill 44 bytes; 240 hold the loop).
      if (bias)
        configs = {cfg(128, 128, 8, 2, causal, 1).warp_specialize(false), cfg(128, 128, 8, 2, causal, 1).warp_specialize().producer_registers(24),
                   cfg(128, 64, 8, 3, causal, 1).warp_specialize(), cfg(128, 64, 8, 2, causal, 1).warp_specialize(),
                   cfg(64, 64, 4, 3, causal, 1).warp_specialize().programs_per_sm(2)};
      const double flops = (causal ? 2.0 : 4.0) * kHeads * kDim * squares;
      auto head = [&](const Config& c) {
        return "{\"bench\": \"hstu\", \"impl\": \"tilejit\", \"lengths\": \"" + set +
               "\", \"causal\": " + std::to_string(causal) + ", \"bias\": " + std::to_string(bias) +
               ", \"seqs\": " + std::to_string(seqs) + ", \"heads\": " + std::to_string(kHeads) +
               ", \"d\": " + std::to_string(kDim) + ", \"silu\": \"" + (fast_silu ? "fast" : "precise") +
               "\", \"config\": \"" + c.str() + "\"";
      };
      auto launch = [&](const Config& c) {
        const dim3 grid(static_cast<uint32_t>(tilejit::cdiv(max_len, c.get("BM"))),
                        static_cast<uint32_t>(seqs), static_cast<uint32_t>(kHeads));
        kern.launch(nullptr, grid, c, OFF, Q, K, V, O, RAB, alpha, inv_max_len);
      };
      const auto [best_i, best] = bench::sweep(configs, flops, head, launch);
      if (best_i < 0) {
        ok = false;
        continue;
      }
      const Config& best_c = configs[static_cast<size_t>(best_i)];
      launch(best_c);
      tilejit::synchronize(nullptr);
      dout.download(ho.data(), bytes);
      // 32 rows spread over sequences, heads and positions against a double reference.
      double err2 = 0, ref2 = 0;
      for (int i = 0; i < 32; ++i) {
        const int64_t s = (i * 5) % seqs, h = (i * 3) % kHeads,
                      r = (i * 104729) % len[static_cast<size_t>(s)];
        const int64_t row = offsets[static_cast<size_t>(s)] + r,
                      keys = causal ? r + 1 : len[static_cast<size_t>(s)];
        std::vector<double> out(static_cast<size_t>(kDim), 0.0);
        for (int64_t j = 0; j < keys; ++j) {
          const int64_t key = offsets[static_cast<size_t>(s)] + j;
          double x = 0;
          for (int64_t e = 0; e < kDim; ++e)
            x += static_cast<double>(static_cast<float>(hq[static_cast<size_t>(row * HD + h * kDim + e)])) *
                 static_cast<double>(static_cast<float>(hk[static_cast<size_t>(key * HD + h * kDim + e)]));
          x *= alpha;
          if (bias)
            x +=
                hrab[static_cast<size_t>(h * (2 * kReach + 1) + std::clamp(j - r, -kReach, kReach) + kReach)];
          const double p = x / (1.0 + std::exp(-x)) / max_len;
          for (int64_t c = 0; c < kDim; ++c)
            out[static_cast<size_t>(c)] +=
                p * static_cast<double>(static_cast<float>(hv[static_cast<size_t>(key * HD + h * kDim + c)]));
        }
        for (int64_t c = 0; c < kDim; ++c) {
          const double got = static_cast<float>(ho[static_cast<size_t>(row * HD + h * kDim + c)]),
                       want = out[static_cast<size_t>(c)];
          err2 += (got - want) * (got - want);
          ref2 += want * want;
        }
      }
      const double rel = std::sqrt(err2 / ref2);
      const bool good = rel < 2e-2;  // P and O are rounded to bf16; the fast sigmoid is within 2^-11.9 absolute
      bench::print_best(head(best_c), best, flops, rel, good);
      ok = ok && good;
    }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 2 && argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: bench_hstu [uniform|skewed [causal BM BN num_warps num_stages [ws]]]\n");
    return 2;
  }
  if (argc > 1 && std::string(argv[1]) != "uniform" && std::string(argv[1]) != "skewed") {
    std::fprintf(stderr, "bench_hstu: unknown set of lengths '%s' (uniform or skewed)\n", argv[1]);
    return 2;
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_hstu: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  bool ok = true;
  for (const char* set : {"uniform", "skewed"})
    if (argc == 1 || argv[1] == std::string(set)) ok = run_set(set, argc, argv) && ok;
  return ok ? 0 : 1;
}
