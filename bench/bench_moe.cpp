// Mixture-of-experts grouped GEMM benchmark on the GPU (sample 11's kernels): y = x @ w_e^T for the rows of x
// routed to expert e, bf16 in and out, f32 accumulation, tokens sorted by expert, the weights of all experts in
// one [E * N, K] tensor. Each timed launch runs both kernels, as a user's MoE layer would: the tile schedule
// built on the device from the expert offsets, then the grouped GEMM (one output tile per program, unused
// slots idle). Shapes (the first expert weight matrix, w1, of each model):
//   mixtral: Mixtral-8x7B, E = 8, 16384 routed rows, N = 14336, K = 4096;
//   deepseek: DeepSeek-V2-Lite's routed experts, E = 64, 24576 routed rows (4096 tokens, top 6), N = 1408, K = 2048.
// The rows per expert are uneven and reproducible: expert e gets a share proportional to 1 + (7 e mod 5), the
// remainder going to expert 0 (bench/peers.py --moe uses the same counts). Prints one JSON line per configuration
// in TFLOP/s (2 * rows * N * K flops) and checks 256 entries of the best configuration's y against a
// double-precision reference. bench/peers.py --moe times torch._grouped_mm and a loop of torch matmuls.
//
// bench_moe [mixtral|deepseek [BM BN num_warps num_stages GM [warp_specialize]]]: one shape or configuration (under a
// profiler); warp_specialize 1 adds the producer warpgroup.
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

struct Shape {
  const char* name;
  int64_t experts, rows, n, k;
};

/// Rows per expert: shares proportional to 1 + (7 e mod 5), the remainder to expert 0.
std::vector<int64_t> rows_per_expert(int64_t experts, int64_t rows) {
  std::vector<int64_t> w(static_cast<size_t>(experts)), c(w.size());
  int64_t total_w = 0, given = 0;
  for (int64_t e = 0; e < experts; ++e) total_w += w[static_cast<size_t>(e)] = 1 + (7 * e) % 5;
  for (int64_t e = 0; e < experts; ++e) given += c[static_cast<size_t>(e)] = rows * w[static_cast<size_t>(e)] / total_w;
  c[0] += rows - given;
  return c;
}

Config cfg(int64_t bm, int64_t bn, int warps, int stages, int64_t gm) {
  return Config{{"BM", bm}, {"BN", bn}, {"BK", 64}, {"GM", gm}}.num_warps(warps).num_stages(stages);
}

bool run_shape(const Shape& s, const std::vector<Config>& configs) {
  const auto schedule = tilejit::samples::moe_tile_schedule_kernel();
  const auto matmul = tilejit::samples::moe_grouped_matmul_kernel();
  const int64_t E = s.experts, T = s.rows, N = s.n, K = s.k;
  const std::vector<int64_t> counts = rows_per_expert(E, T);
  std::vector<int32_t> offsets(static_cast<size_t>(E + 1), 0);
  for (int64_t e = 0; e < E; ++e) offsets[static_cast<size_t>(e + 1)] = offsets[static_cast<size_t>(e)] + static_cast<int32_t>(counts[static_cast<size_t>(e)]);
  std::vector<tilejit::bfloat16> hx(static_cast<size_t>(T * K)), hw(static_cast<size_t>(E * N * K));
  uint32_t state = 777;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return tilejit::bfloat16(static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f);
  };
  for (auto& v : hx) v = next();
  for (auto& v : hw) v = next();
  tilejit::DeviceBuffer dx(hx.size() * 2), dw(hw.size() * 2), dy(static_cast<size_t>(T * N) * 2), doff(offsets.size() * 4);
  dx.upload(hx.data());
  dw.upload(hw.data());
  doff.upload(offsets.data());
  const double flops = 2.0 * static_cast<double>(T) * static_cast<double>(N) * static_cast<double>(K);
  auto head = [&](const Config& c) {
    return std::string("{\"bench\": \"moe\", \"shape\": \"") + s.name + "\", \"impl\": \"tilejit\", \"experts\": " + std::to_string(E) +
           ", \"rows\": " + std::to_string(T) + ", \"n\": " + std::to_string(N) + ", \"k\": " + std::to_string(K) + ", \"config\": \"" +
           c.str() + "\"";
  };
  // Schedule buffers for the smallest BM listed (the most slots); a larger BM uses a prefix of them.
  int64_t max_slots = 0;
  for (const Config& c : configs) max_slots = std::max(max_slots, tilejit::cdiv(T, c.get("BM")) + E);
  tilejit::DeviceBuffer drows(static_cast<size_t>(max_slots) * 4), dends(drows.size()), dexperts(drows.size());
  const int64_t EP = std::max<int64_t>(16, int64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(E)))));
  auto run = [&](const Config& c) {
    const int64_t slots = tilejit::cdiv(T, c.get("BM")) + E;
    tilejit::TensorView<i32, 1> rows(drows.data(), {slots}), ends(dends.data(), {slots}), experts(dexperts.data(), {slots});
    schedule.launch(nullptr, dim3(static_cast<uint32_t>(tilejit::cdiv(slots, 64))), Config{{"BM", c.get("BM")}, {"EP", EP}, {"BJ", 64}},
                    tilejit::TensorView<i32, 1>(doff.data(), {E + 1}), rows, ends, experts);
    matmul.launch(nullptr, dim3(static_cast<uint32_t>(slots * tilejit::cdiv(N, c.get("BN")))), c,
                  tilejit::TensorView<bf16, 2>(dx.data(), {T, K}), tilejit::TensorView<bf16, 2>(dw.data(), {E * N, K}),
                  tilejit::TensorView<bf16, 2>(dy.data(), {T, N}), rows, ends, experts);
  };
  const auto [best_i, best] = bench::sweep(configs, flops, head, run);
  if (best_i < 0) return false;
  const Config& best_c = configs[static_cast<size_t>(best_i)];
  dy.fill_bytes(0);
  run(best_c);
  tilejit::synchronize(nullptr);
  std::vector<tilejit::bfloat16> hy(static_cast<size_t>(T * N));
  dy.download(hy.data(), hy.size() * 2);
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < 256; ++i) {
    const int64_t r = (i * 7919) % T, col = (i * 104729) % N;
    int64_t e = 0;
    while (offsets[static_cast<size_t>(e + 1)] <= r) ++e;
    double want = 0;
    for (int64_t k = 0; k < K; ++k)
      want += static_cast<double>(static_cast<float>(hx[static_cast<size_t>(r * K + k)])) *
              static_cast<double>(static_cast<float>(hw[static_cast<size_t>((e * N + col) * K + k)]));
    const double got = static_cast<float>(hy[static_cast<size_t>(r * N + col)]);
    err2 += (got - want) * (got - want);
    ref2 += want * want;
  }
  const double rel = std::sqrt(err2 / ref2);
  const bool good = rel < 1e-2;  // bf16 output rounding is 2^-9 relative
  bench::print_best(head(best_c), best, flops, rel, good);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Shape> shapes = {{"mixtral", 8, 16384, 14336, 4096}, {"deepseek", 64, 24576, 1408, 2048}};
  if (argc != 1 && argc != 2 && argc != 7 && argc != 8) {
    std::fprintf(stderr, "usage: bench_moe [mixtral|deepseek [BM BN num_warps num_stages GM [warp_specialize]]]\n");
    return 2;
  }
  const std::string only = argc > 1 ? argv[1] : "";
  if (!only.empty() && only != "mixtral" && only != "deepseek") {
    std::fprintf(stderr, "bench_moe: unknown shape '%s' (mixtral or deepseek)\n", only.c_str());
    return 2;
  }
  if (!tilejit::has_gpu()) {
    std::printf("bench_moe: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  std::vector<Config> configs = {cfg(128, 256, 8, 3, 8), cfg(128, 256, 8, 4, 8), cfg(128, 128, 8, 4, 8), cfg(128, 128, 4, 4, 8),
                                 cfg(64, 256, 4, 4, 8),  cfg(128, 128, 8, 4, 4), cfg(128, 256, 8, 4, 16), cfg(64, 128, 4, 4, 8),
                                 // With a producer warpgroup (warp_specialize): it takes the if around the K loop too.
                                 cfg(128, 256, 8, 3, 8).warp_specialize(), cfg(128, 256, 8, 4, 8).warp_specialize(),
                                 cfg(128, 128, 8, 4, 8).warp_specialize(), cfg(128, 128, 4, 4, 8).warp_specialize().programs_per_sm(2),
                                 // As persistent programs (Config::persistent: one per SM walking the slots, an idle slot
                                 // costing a few instructions), with the consumers loading and with a producer warpgroup.
                                 cfg(128, 256, 8, 3, 8).warp_specialize(false).persistent(), cfg(128, 256, 8, 3, 8).persistent(),
                                 cfg(128, 128, 8, 4, 8).warp_specialize(false).persistent()};
  if (argc >= 7)
    configs = {cfg(std::atoll(argv[2]), std::atoll(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]), std::atoll(argv[6]))
                   .warp_specialize(argc == 8 && std::atoi(argv[7]) != 0)};
  bool ok = true;
  for (const Shape& s : shapes)
    if (only.empty() || only == s.name) ok &= run_shape(s, configs);
  return ok ? 0 : 1;
}
