// Attention forward benchmark on the GPU, bf16, batch x heads = 64, sequence 1024, 4096 and 16384, head dim 64 and 128:
// - dense: the samples' attention_kernel (one head per program column, q, k, v and o as [heads * S, D]): per block
//   of BM queries, a loop over the keys in blocks of BN with two wgmma products per iteration (S = Q K^T, then
//   O += P V with P in registers) and the online softmax in between; the K and V tiles of the next iterations are
//   loaded by TMA into a ring of num_stages buffers. At the best configuration, samples::attention_bhsd_kernel (the
//   same loop over [heads, S, D] tensors, {1, BM, D} tiles) is timed too and its output compared bit for bit.
// - causal: sample 12's attention_forward_kernel (CAUSAL 1, [heads, S, D] tensors, two loops: unmasked blocks,
//   then the diagonal), TFLOP/s counting half the dense flops.
// Prints one JSON line per (shape, configuration) in TFLOP/s and checks 64 output rows of the best configuration
// against a double-precision reference. bench/peers.py --attention times torch.nn.functional.scaled_dot_product_attention
// (dense and causal) and a Triton kernel of the dense loop.
//
// bench_attention [S D [BM BN num_warps num_stages [warp_specialize [overlap_products [pingpong [persistent]]]]]]: one
// shape or configuration (under a profiler); pingpong -1 leaves the choice to tilejit.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

constexpr int64_t kHeads = 64;  // batch x heads, stacked along the rows of q, k, v and o

Config cfg(int64_t bm, int64_t bn, int64_t d, int warps, int stages) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(warps).num_stages(stages);
}

/// Every configuration on one shape; prints TFLOP/s per configuration and the checked best. Dense: the samples'
/// attention_kernel over [heads * S, D]; causal: sample 12's attention_forward_kernel (CAUSAL 1) over [heads, S, D].
bool run_shape(int64_t S, int64_t D, const std::vector<Config>& configs, bool causal) {
  const int64_t rows = kHeads * S;
  std::vector<tilejit::bfloat16> hq(static_cast<size_t>(rows * D)), hk(hq.size()), hv(hq.size()), ho(hq.size());
  bench::fill_random({&hq, &hk, &hv});
  const size_t bytes = hq.size() * sizeof(tilejit::bfloat16);
  tilejit::DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes);
  dq.upload(hq.data());
  dk.upload(hk.data());
  dv.upload(hv.data());
  tilejit::TensorView<bf16, 2> Q(dq.data(), {rows, D}), K(dk.data(), {rows, D}), V(dv.data(), {rows, D}), O(dout.data(), {rows, D});
  tilejit::TensorView<bf16, 3> Q3(dq.data(), {kHeads, S, D}), K3(dk.data(), {kHeads, S, D}), V3(dv.data(), {kHeads, S, D}),
      O3(dout.data(), {kHeads, S, D});
  tilejit::DeviceBuffer dlse(static_cast<size_t>(rows) * sizeof(float));
  tilejit::TensorView<f32, 2> LSE(dlse.data(), {kHeads, S});
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // A causal row attends to the keys up to itself: half the products (the diagonal blocks' masked half aside).
  const double flops = (causal ? 2.0 : 4.0) * static_cast<double>(kHeads) * static_cast<double>(S) * static_cast<double>(S) *
                       static_cast<double>(D);
  // The open JSON object of one configuration's line, for the benchmark named `bench`.
  auto head_of = [&](std::string bench) {
    return [&, bench](const Config& c) {
      return "{\"bench\": \"" + bench + "\", \"impl\": \"tilejit\", \"s\": " + std::to_string(S) + ", \"d\": " +
             std::to_string(D) + ", \"heads\": " + std::to_string(kHeads) + ", \"config\": \"" + c.str() + "\"";
    };
  };
  const auto head = head_of(causal ? "attention_causal" : "attention");
  std::vector<Config> mine;
  for (const Config& c : configs)
    if (c.get("D") == D) mine.push_back(causal ? Config(c).set("CAUSAL", 1) : c);
  const auto dense = tilejit::samples::attention_kernel();
  const auto forward = tilejit::samples::attention_forward_kernel();
  auto grid_of = [&](const Config& c) { return dim3(static_cast<uint32_t>(S / c.get("BM")), static_cast<uint32_t>(kHeads)); };
  auto launch = [&](const Config& c) {
    if (causal)
      forward.launch(nullptr, grid_of(c), c, Q3, K3, V3, O3, LSE, scale);
    else
      dense.launch(nullptr, grid_of(c), c, Q, K, V, O, static_cast<int32_t>(S), scale);
  };
  const auto [best_i, best] = bench::sweep(mine, flops, head, launch);
  if (best_i < 0) return false;
  const Config& best_c = mine[static_cast<size_t>(best_i)];
  // Check 64 rows (spread over heads and positions) of the best configuration against a double reference.
  launch(best_c);
  tilejit::synchronize(nullptr);
  dout.download(ho.data(), bytes);
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < 64; ++i) {
    const int64_t h = (i * 7) % kHeads, r = (i * 104729) % S, row = h * S + r;
    const int64_t keys = causal ? r + 1 : S;
    std::vector<double> s(static_cast<size_t>(keys)), out(static_cast<size_t>(D), 0.0);
    double mx = -INFINITY, total = 0;
    for (int64_t j = 0; j < keys; ++j) {
      double dotp = 0;
      for (int64_t d = 0; d < D; ++d)
        dotp += static_cast<double>(static_cast<float>(hq[static_cast<size_t>(row * D + d)])) *
                static_cast<double>(static_cast<float>(hk[static_cast<size_t>((h * S + j) * D + d)]));
      s[static_cast<size_t>(j)] = dotp * scale;
      mx = std::max(mx, s[static_cast<size_t>(j)]);
    }
    for (int64_t j = 0; j < keys; ++j) {
      const double p = std::exp(s[static_cast<size_t>(j)] - mx);
      total += p;
      for (int64_t d = 0; d < D; ++d) out[static_cast<size_t>(d)] += p * static_cast<double>(static_cast<float>(hv[static_cast<size_t>((h * S + j) * D + d)]));
    }
    for (int64_t d = 0; d < D; ++d) {
      const double want = out[static_cast<size_t>(d)] / total, got = static_cast<float>(ho[static_cast<size_t>(row * D + d)]);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  }
  const double rel = std::sqrt(err2 / ref2);
  const bool good = rel < 2e-2;  // P and O are rounded to bf16 (2^-9 relative each)
  bench::print_best(head(best_c), best, flops, rel, good);
  if (causal) return good;
  // The same loop over [heads, S, D] tensors (samples::attention_bhsd_kernel, {1, BM, D} tiles reshaped) at the best
  // configuration: the same code with rank-3 boxes, so the same speed and the same bits.
  tilejit::DeviceBuffer dout3(bytes);
  tilejit::TensorView<bf16, 3> O3b(dout3.data(), {kHeads, S, D});
  const auto bhsd = tilejit::samples::attention_bhsd_kernel();
  bench::sweep({best_c}, flops, head_of("attention_bhsd"), [&](const Config& c) { bhsd.launch(nullptr, grid_of(c), c, Q3, K3, V3, O3b, scale); });
  tilejit::synchronize(nullptr);
  std::vector<tilejit::bfloat16> ho3(ho.size());
  dout3.download(ho3.data(), bytes);
  const bool same = std::memcmp(ho3.data(), ho.data(), bytes) == 0;
  std::printf("{\"bench\": \"attention_bhsd\", \"s\": %lld, \"d\": %lld, \"same_bits_as_2d\": %s}\n", static_cast<long long>(S),
              static_cast<long long>(D), same ? "true" : "false");
  return good && same;
}

/// Without a GPU: each configuration of head size D compiled with NVRTC for sm_90a, dense (attention_kernel) and
/// causal (attention_forward_kernel, CAUSAL 1), one line each with ptxas's resources and the compile's time, so
/// that a change can be checked for spills and compile time before a GPU run.
void compile_every_configuration(const std::vector<Config>& configs, int64_t D) {
  const auto dense = tilejit::samples::attention_kernel();
  const auto causal = tilejit::samples::attention_forward_kernel();
  for (const Config& c : configs) {
    if (c.get("D") != D) continue;
    std::printf("dense %s: %s\n", c.str().c_str(), tilejit::runtime::compile_only(dense.base(), c).c_str());
    const Config cc = Config(c).set("CAUSAL", 1);
    std::printf("causal %s: %s\n", cc.str().c_str(), tilejit::runtime::compile_only(causal.base(), cc).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 3 && (argc < 7 || argc > 11)) {
    std::fprintf(stderr, "usage: bench_attention [S D [BM BN num_warps num_stages [warp_specialize [overlap_products [pingpong [persistent]]]]]]\n"
                         "       (pingpong -1: tilejit decides; persistent: 0 a program per block, 1 persistent programs)\n");
    return 2;
  }
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1024, 64}, {4096, 64}, {16384, 64}, {1024, 128}, {4096, 128}, {16384, 128}};
  // 128 x 128 blocks on two consumer warpgroups get roles from tilejit (their loop is rotated): here without, to compare.
  std::vector<Config> configs = {cfg(128, 64, 64, 8, 2), cfg(128, 128, 64, 8, 2).warp_specialize(false), cfg(128, 64, 64, 8, 3), cfg(64, 64, 64, 4, 3),
                                 cfg(128, 64, 128, 8, 2), cfg(128, 64, 128, 8, 3), cfg(128, 128, 128, 8, 2).warp_specialize(false), cfg(64, 64, 128, 4, 3),
                                 cfg(128, 32, 128, 8, 3), cfg(128, 64, 64, 8, 3).warp_specialize(),
                                 cfg(128, 64, 128, 8, 2).warp_specialize(), cfg(128, 64, 128, 8, 3).warp_specialize(),
                                 cfg(128, 64, 64, 8, 3).warp_specialize().programs_per_sm(2),
                                 cfg(64, 64, 64, 4, 3).warp_specialize().programs_per_sm(2),
                                 cfg(64, 64, 128, 4, 3).warp_specialize().programs_per_sm(2)};
  // Each configuration also with the other choice of overlap_products (P V issued in the next iteration, after its
  // S) than tilejit's own: on where BN < 128, off where BN >= 128 (passes::kMinOverlapWidth).
  configs.push_back(cfg(128, 128, 128, 8, 2).warp_specialize());
  configs.push_back(cfg(128, 128, 64, 8, 2).warp_specialize());
  // Three stages of 128 x 128 blocks (229,440 bytes of shared memory at D = 128): the producer a whole iteration ahead.
  configs.push_back(cfg(128, 128, 128, 8, 3).warp_specialize());
  configs.push_back(cfg(128, 128, 64, 8, 3).warp_specialize());
  for (size_t k = 0, n = configs.size(); k < n; ++k)
    configs.push_back(Config(configs[k]).overlap_products(configs[k].get("BN") < 128 || configs[k].programs_per_sm() > 0));
  // The two consumer warpgroups of 128 x 128 blocks with roles take turns at the tensor cores (pingpong, tilejit's
  // choice for an overlapped loop with roles): also without.
  for (int64_t d : {64, 128}) configs.push_back(cfg(128, 128, d, 8, 2).warp_specialize().pingpong(false));
  // The softmax's qk * scale - m as one fma per score is tilejit's default (Config::fp_contract); the fastest
  // configurations also with every product and sum rounded on its own.
  for (int64_t d : {64, 128}) {
    configs.push_back(cfg(128, 128, d, 8, 2).warp_specialize().fp_contract(false));
    configs.push_back(cfg(128, 64, d, 8, 3).warp_specialize().fp_contract(false));
    configs.push_back(cfg(64, 64, d, 4, 3).warp_specialize().programs_per_sm(2).fp_contract(false));
  }
  if (argc >= 3) shapes = {{std::atoll(argv[1]), std::atoll(argv[2])}};
  if (argc >= 7) {
    configs = {cfg(std::atoll(argv[3]), std::atoll(argv[4]), std::atoll(argv[2]), std::atoi(argv[5]), std::atoi(argv[6]))
                   .warp_specialize(argc >= 8 && std::atoi(argv[7]) != 0)
                   .overlap_products(argc >= 9 && std::atoi(argv[8]) != 0)};
    if (argc >= 10 && std::atoi(argv[9]) >= 0) configs[0].pingpong(std::atoi(argv[9]) != 0);  // else tilejit decides
    if (argc == 11) configs[0].persistent(std::atoi(argv[10]) != 0);
  }
  if (!tilejit::has_gpu()) {
    // Without arguments (the ctest run) nothing; with S and D, every configuration compiled for sm_90a instead.
    std::printf("bench_attention: no GPU (%s); nothing to measure%s\n", tilejit::driver_error().c_str(),
                argc >= 3 ? ": every configuration of D compiled for sm_90a instead" : "");
    if (argc >= 3) compile_every_configuration(configs, std::atoll(argv[2]));
    return 0;
  }
  bool ok = true;
  for (auto [s, d] : shapes) ok &= run_shape(s, d, configs, false);
  // Causal: sample 12's kernel at the same configurations.
  for (auto [s, d] : shapes) ok &= run_shape(s, d, configs, true);
  return ok ? 0 : 1;
}
