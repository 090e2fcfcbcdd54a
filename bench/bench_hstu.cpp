// Jagged HSTU attention benchmark on the GPU (sample 13's jagged_hstu_kernel): o = (silu(alpha q k^T) / max_len) v
// per sequence and head, 32 sequences of 256-4095 tokens packed one after another, H = 8 heads of D = 128, bf16,
// dense and causal. Each program reads its sequence through views whose TMA descriptors it builds on the device.
// Prints one JSON line per (mask, configuration) in TFLOP/s (4 * H * D * sum of L^2 flops dense, half causal) and
// checks 32 output rows of the best configuration against a double-precision reference. bench/peers.py --hstu
// times a plain Triton HSTU kernel (pointer loads, the same loop) on the same sequences.
//
// bench_hstu [causal BM BN num_warps num_stages [ws]]: one configuration (under a profiler); ws 1: with a producer
// warpgroup (warp_specialize).
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

constexpr int64_t kSeqs = 32, kHeads = 8, kDim = 128;

/// peers.py's hstu_lengths(): 256 + (s * 7919) % 3840 tokens for sequence s.
std::vector<int32_t> lengths() {
  std::vector<int32_t> l;
  for (int64_t s = 0; s < kSeqs; ++s) l.push_back(static_cast<int32_t>(256 + (s * 7919) % 3840));
  return l;
}

Config cfg(int64_t bm, int64_t bn, int warps, int stages, int causal) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", kDim}, {"CAUSAL", causal}}.num_warps(warps).num_stages(stages);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 6 && argc != 7) {
    std::fprintf(stderr, "usage: bench_hstu [causal BM BN num_warps num_stages [ws]]\n");
    return 2;
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_hstu: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  const std::vector<int32_t> len = lengths();
  std::vector<int32_t> offsets(len.size() + 1, 0);
  for (size_t s = 0; s < len.size(); ++s) offsets[s + 1] = offsets[s] + len[s];
  const int64_t tokens = offsets.back(), HD = kHeads * kDim;
  const int32_t max_len = *std::max_element(len.begin(), len.end());
  std::vector<tilejit::bfloat16> hq(static_cast<size_t>(tokens * HD)), hk(hq.size()), hv(hq.size()), ho(hq.size());
  bench::fill_random({&hq, &hk, &hv});
  const size_t bytes = hq.size() * sizeof(tilejit::bfloat16);
  tilejit::DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes), doff(offsets.size() * sizeof(int32_t));
  dq.upload(hq.data());
  dk.upload(hk.data());
  dv.upload(hv.data());
  doff.upload(offsets.data());
  tilejit::TensorView<bf16, 2> Q(dq.data(), {tokens, HD}), K(dk.data(), {tokens, HD}), V(dv.data(), {tokens, HD}), O(dout.data(), {tokens, HD});
  tilejit::TensorView<i32, 1> OFF(doff.data(), {kSeqs + 1});
  const float alpha = 1.0f / std::sqrt(static_cast<float>(kDim)), inv_max_len = 1.0f / static_cast<float>(max_len);
  double squares = 0;
  for (int32_t l : len) squares += static_cast<double>(l) * l;
  const auto kern = tilejit::samples::jagged_hstu_kernel();
  bool ok = true;
  for (int causal : {0, 1}) {
    if (argc >= 6 && std::atoi(argv[1]) != causal) continue;
    // 128 x 128 blocks on two consumer warpgroups get roles from tilejit (their loop is rotated): here also without.
    std::vector<Config> configs = {cfg(128, 64, 8, 2, causal), cfg(128, 64, 8, 3, causal), cfg(128, 128, 8, 2, causal).warp_specialize(false),
                                   cfg(64, 64, 4, 3, causal), cfg(64, 64, 4, 2, causal), cfg(128, 32, 8, 3, causal)};
    // With a producer warpgroup (the consumers build the views' descriptors, one warp each, the producer awaits them): at
    // 128 x 128 tilejit rotates the loop and the two consumer warpgroups take turns at the products.
    for (const Config& c : {cfg(128, 128, 8, 2, causal), cfg(128, 128, 8, 3, causal), cfg(128, 64, 8, 3, causal), cfg(128, 64, 8, 2, causal)})
      configs.push_back(Config(c).warp_specialize());
    configs.push_back(cfg(64, 64, 4, 3, causal).warp_specialize().programs_per_sm(2));
    if (argc >= 6) {
      configs = {cfg(std::atoll(argv[2]), std::atoll(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), causal)};
      if (argc == 7) configs[0].warp_specialize(std::atoi(argv[6]) != 0);
    }
    // Each configuration also with the other choice of overlap_products than tilejit's (on where BN >= 128).
    if (argc < 6)
      for (size_t k = 0, n = configs.size(); k < n; ++k) configs.push_back(Config(configs[k]).overlap_products(configs[k].get("BN") < 128));
    const double flops = (causal ? 2.0 : 4.0) * kHeads * kDim * squares;
    auto head = [&](const Config& c) {
      return "{\"bench\": \"hstu\", \"impl\": \"tilejit\", \"causal\": " + std::to_string(causal) + ", \"seqs\": " + std::to_string(kSeqs) +
             ", \"heads\": " + std::to_string(kHeads) + ", \"d\": " + std::to_string(kDim) + ", \"config\": \"" + c.str() + "\"";
    };
    auto launch = [&](const Config& c) {
      const dim3 grid(static_cast<uint32_t>(tilejit::cdiv(max_len, c.get("BM"))), static_cast<uint32_t>(kSeqs), static_cast<uint32_t>(kHeads));
      kern.launch(nullptr, grid, c, OFF, Q, K, V, O, alpha, inv_max_len);
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
      const int64_t s = (i * 5) % kSeqs, h = (i * 3) % kHeads, r = (i * 104729) % len[static_cast<size_t>(s)];
      const int64_t row = offsets[static_cast<size_t>(s)] + r, keys = causal ? r + 1 : len[static_cast<size_t>(s)];
      std::vector<double> out(static_cast<size_t>(kDim), 0.0);
      for (int64_t j = 0; j < keys; ++j) {
        const int64_t key = offsets[static_cast<size_t>(s)] + j;
        double x = 0;
        for (int64_t e = 0; e < kDim; ++e)
          x += static_cast<double>(static_cast<float>(hq[static_cast<size_t>(row * HD + h * kDim + e)])) *
               static_cast<double>(static_cast<float>(hk[static_cast<size_t>(key * HD + h * kDim + e)]));
        x *= alpha;
        const double p = x / (1.0 + std::exp(-x)) / max_len;
        for (int64_t c = 0; c < kDim; ++c)
          out[static_cast<size_t>(c)] += p * static_cast<double>(static_cast<float>(hv[static_cast<size_t>(key * HD + h * kDim + c)]));
      }
      for (int64_t c = 0; c < kDim; ++c) {
        const double got = static_cast<float>(ho[static_cast<size_t>(row * HD + h * kDim + c)]), want = out[static_cast<size_t>(c)];
        err2 += (got - want) * (got - want);
        ref2 += want * want;
      }
    }
    const double rel = std::sqrt(err2 / ref2);
    const bool good = rel < 2e-2;  // P and O are rounded to bf16
    bench::print_best(head(best_c), best, flops, rel, good);
    ok = ok && good;
  }
  return ok ? 0 : 1;
}
