// Matrix product benchmark on the GPU, through TMA tiles, a software-pipelined K loop and wgmma (the Triton
// tutorial's matmul in tilejit), f32 accumulation, with and without a producer warpgroup (warp_specialize):
//   bf16: C (bf16) = A ([M, K]) @ B ([K, N]), both row-major;
//   bf16_persistent: the same as a persistent kernel (a tile loop around the K loop, one program per SM);
//   bf16_grouped: the same with Triton's tutorial tile order (a 1-D grid, GM row blocks of tiles per group);
//   fp8 e4m3: C (bf16) = A ([M, K]) @ B^T with B stored [N, K] (K-major, as wgmma needs fp8 operands;
//   torch._scaled_mm's layout);
//   tf32: C (f32) = A ([M, K], f32) @ B^T with B stored [N, K], f32 operands read as tf32 (dot's default precision);
//   tf32_kn: the same with B stored [K, N] (row-major), which the threads copy K-major per tile for wgmma.
// Prints one JSON line per (type, shape, configuration) tried, in TFLOP/s, with the time of its first launch (trace,
// code generation, NVRTC and load, unless a cache holds the binary) and those phases apart, and checks 256 entries of the best
// configuration's C against a double-precision reference (relative error of the bf16 result).
// bench/peers.py --gemm times torch (cuBLAS: matmul, _scaled_mm) and a Triton TMA matmul on the same shapes.
//
// bench_gemm [bf16|e4m3|tf32|tf32_kn [M N K [BM BN BK num_warps num_stages [warp_specialize [programs_per_sm]]]]]: one
// type, shape or configuration (under a profiler). num_stages 0 lets tilejit choose; warp_specialize 1 adds the
// producer warpgroup; programs_per_sm 0 sets no occupancy target.
// The bf16 sweep includes clusters of two programs (Config::cluster, TMA multicast of the tile both load) and persistent
// programs (Config::persistent, with and without Config::tile_group); BENCH_PERSISTENT=G makes a configuration given on
// the command line persistent, in groups of G row blocks (0: the launch order).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {

auto gemm_bf16() {
  return tilejit::kernel("gemm_bf16", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM, Meta<"BN"> BN,
                                          Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
}

/// The bf16 GEMM as a persistent kernel (Triton's tutorial 09): fewer programs than output tiles, program p
/// computing tiles p, p + programs, ... (row by row) in a loop around the same K loop; launched with one
/// program per SM (two at programs_per_sm=2).
auto gemm_bf16_persistent() {
  return tilejit::kernel("gemm_bf16_persistent", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM,
                                                     Meta<"BN"> BN, Meta<"BK"> BK) {
    auto tiles_n = (c.size(1).to<i32>() + BN - 1) / BN;
    auto tiles = (c.size(0).to<i32>() + BM - 1) / BM * tiles_n;
    for_range(program_id(0), tiles, num_programs(0), [&](Scalar<i32> t) {
      auto m = t / tiles_n * BM, n = t % tiles_n * BN;
      auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
      });
      descriptor_store(c, {m, n}, acc.to<bf16>());
    });
  });
}

/// The bf16 GEMM as Triton's tutorial orders its tiles: a 1-D grid, program pid computing the tiles of GM row blocks
/// column by column, so that the programs running at once share the columns of B and the rows of A in L2.
auto gemm_bf16_grouped() {
  return tilejit::kernel("gemm_bf16_grouped", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM,
                                                  Meta<"BN"> BN, Meta<"BK"> BK, Meta<"GM"> GM) {
    auto pid = program_id(0);
    auto tiles_m = (a.size(0).to<i32>() + BM - 1) / BM, tiles_n = (b.size(1).to<i32>() + BN - 1) / BN;
    auto first = pid / (GM * tiles_n) * GM;     // the group's first row block
    auto group = minimum(tiles_m - first, GM);  // the last group may be smaller
    auto m = (first + pid % group) * BM, n = pid % (GM * tiles_n) / group * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
}

auto gemm_e4m3() {
  return tilejit::kernel("gemm_e4m3", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM,
                                          Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
}

/// tf32 with B stored [N, K] (read through .trans()), or with `b_kn` stored [K, N] (a row-major f32 matrix):
/// wgmma reads tf32 K-major only, so then the threads copy each B tile K-major in shared memory first.
auto gemm_tf32(bool b_kn) {
  return tilejit::kernel(b_kn ? "gemm_tf32_kn" : "gemm_tf32", [b_kn](Tensor<f32, 2> a, Tensor<f32, 2> b, Tensor<f32, 2> c,
                                                                     Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      auto tb = b_kn ? descriptor_load(b, {k, n}, {BK, BN}) : descriptor_load(b, {n, k}, {BN, BK}).trans();
      return dot(descriptor_load(a, {m, k}, {BM, BK}), tb, acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
}

Config cfg(int64_t bm, int64_t bn, int64_t bk, int warps, int stages) {
  return Config{{"BM", bm}, {"BN", bn}, {"BK", bk}}.num_warps(warps).num_stages(stages);
}

/// The same tiles with a producer warpgroup (Config::warp_specialize): `warps` consumer warps and 4 more.
Config ws(int64_t bm, int64_t bn, int64_t bk, int warps, int stages) { return cfg(bm, bn, bk, warps, stages).warp_specialize(); }

/// Runs every configuration on one shape, prints its TFLOP/s, checks the best one. `b_nk`: B is stored [N, K].
template <class H, class T, class OutH, class OutT, class K>
bool run_shape(const char* dtype, const K& gemm, int64_t M, int64_t N, int64_t Kd, bool b_nk, const std::vector<Config>& configs,
               bool persistent = false, bool one_d = false) {
  std::vector<H> ha(static_cast<size_t>(M * Kd)), hb(static_cast<size_t>(Kd * N));
  uint32_t state = 777;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return H(static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f);
  };
  for (auto& v : ha) v = next();
  for (auto& v : hb) v = next();
  tilejit::DeviceBuffer da(ha.size() * sizeof(H)), db(hb.size() * sizeof(H)), dc(static_cast<size_t>(M * N) * sizeof(OutH));
  da.upload(ha.data());
  db.upload(hb.data());
  tilejit::TensorView<T, 2> A(da.data(), {M, Kd});
  tilejit::TensorView<T, 2> B(db.data(), b_nk ? std::array<int64_t, 2>{N, Kd} : std::array<int64_t, 2>{Kd, N});
  tilejit::TensorView<OutT, 2> C(dc.data(), {M, N});
  const double flops = 2.0 * static_cast<double>(M) * static_cast<double>(N) * static_cast<double>(Kd);
  auto head = [&](const Config& c) {
    return std::string("{\"bench\": \"gemm\", \"dtype\": \"") + dtype + "\", \"impl\": \"tilejit\", \"m\": " + std::to_string(M) +
           ", \"n\": " + std::to_string(N) + ", \"k\": " + std::to_string(Kd) + ", \"config\": \"" + c.str() + "\"";
  };
  const int sms = tilejit::devices().front().sm_count;
  auto grid_of = [&](const Config& c) {
    const int64_t tm = (M + c.get("BM") - 1) / c.get("BM"), tn = (N + c.get("BN") - 1) / c.get("BN");
    if (persistent) return dim3(static_cast<uint32_t>(std::min<int64_t>(tm * tn, int64_t{sms} * std::max(1, c.programs_per_sm()))));
    if (one_d) return dim3(static_cast<uint32_t>(tm * tn));
    return dim3(static_cast<uint32_t>(tm), static_cast<uint32_t>(tn));
  };
  const auto [best_i, best] = bench::sweep(configs, flops, head, [&](const Config& c) { gemm.launch(nullptr, grid_of(c), c, A, B, C); });
  if (best_i < 0) return false;
  const Config& best_c = configs[static_cast<size_t>(best_i)];
  // Check the best configuration's output.
  dc.fill_bytes(0);
  gemm.launch(nullptr, grid_of(best_c), best_c, A, B, C);
  tilejit::synchronize(nullptr);
  std::vector<OutH> hc(static_cast<size_t>(M * N));
  dc.download(hc.data(), hc.size() * sizeof(OutH));
  double err2 = 0, ref2 = 0;
  for (int i = 0; i < 256; ++i) {
    const int64_t r = (i * 7919) % M, col = (i * 104729) % N;
    double want = 0;
    for (int64_t k = 0; k < Kd; ++k) {
      const size_t bi = static_cast<size_t>(b_nk ? col * Kd + k : k * N + col);
      want += static_cast<double>(static_cast<float>(ha[static_cast<size_t>(r * Kd + k)])) * static_cast<double>(static_cast<float>(hb[bi]));
    }
    const double got = static_cast<float>(hc[static_cast<size_t>(r * N + col)]);
    err2 += (got - want) * (got - want);
    ref2 += want * want;
  }
  const double rel = std::sqrt(err2 / ref2);
  const bool good = rel < 1e-2;  // bf16 output rounding is 2^-9 relative, tf32 operands 2^-10
  bench::print_best(head(best_c), best, flops, rel, good);
  return good;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 1 && argc != 2 && argc != 5 && argc != 10 && argc != 11 && argc != 12) {
    std::fprintf(stderr, "usage: bench_gemm [bf16|bf16_persistent|bf16_grouped|e4m3|tf32|tf32_kn [M N K [BM BN BK num_warps num_stages [warp_specialize "
                         "[programs_per_sm]]]]]\n");
    return 2;
  }
  const std::string only = argc > 1 ? argv[1] : "";
  if (!only.empty() && only != "bf16" && only != "bf16_persistent" && only != "bf16_grouped" && only != "e4m3" && only != "tf32" && only != "tf32_kn") {
    std::fprintf(stderr, "bench_gemm: unknown type '%s' (bf16, bf16_persistent, bf16_grouped, e4m3, tf32 or tf32_kn)\n", only.c_str());
    return 2;
  }
  std::vector<int64_t> arg;
  for (int i = 2; i < argc; ++i) arg.push_back(std::atoll(argv[i]));
  if (!tilejit::has_gpu()) {
    std::printf("bench_gemm: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  using Shapes = std::vector<std::array<int64_t, 3>>;
  auto pick = [&](Shapes shapes, std::vector<Config> configs, auto&& run) {
    if (arg.size() >= 3) shapes = {{arg[0], arg[1], arg[2]}};
    if (arg.size() >= 8) {
      configs = {cfg(arg[3], arg[4], arg[5], static_cast<int>(arg[6]), static_cast<int>(arg[7]))
                     .warp_specialize(arg.size() >= 9 && arg[8] != 0)
                     .programs_per_sm(arg.size() >= 10 ? static_cast<int>(arg[9]) : 0)};
      // BENCH_PERSISTENT=G: the same configuration as persistent programs in groups of G row blocks (0: launch order).
      if (const char* p = std::getenv("BENCH_PERSISTENT"); p && *p) configs[0].persistent().tile_group(std::atoi(p));
    }
    bool ok = true;
    for (const auto& s : shapes) ok &= run(s[0], s[1], s[2], configs);
    return ok;
  };
  bool ok = true;
  if (only.empty() || only == "bf16") {
    const auto k = gemm_bf16();
    const auto run = [&](int64_t M, int64_t N, int64_t K, const std::vector<Config>& c) {
      return run_shape<tilejit::bfloat16, bf16, tilejit::bfloat16, bf16>("bf16", k, M, N, K, false, c);
    };
    // Skinny shapes (a decode step's tokens) also try tiles of 16 and 32 rows (one m64 wgmma, the rest padding) and
    // narrow ones, which give 8192 / BN programs enough of them to stream B at the memory's speed.
    if (arg.size() < 3 || arg[0] <= 64)
      ok &= pick({{16, 8192, 8192}, {64, 8192, 8192}},
                 {cfg(64, 128, 64, 4, 6), cfg(64, 64, 64, 4, 8), cfg(16, 128, 64, 4, 6), cfg(16, 64, 64, 4, 8), cfg(16, 64, 128, 4, 6),
                  cfg(32, 64, 64, 4, 8), cfg(32, 128, 64, 4, 6), ws(16, 64, 64, 4, 8), ws(16, 128, 64, 4, 6), ws(64, 64, 64, 4, 8)},
                 run);
    if (arg.size() < 3 || arg[0] > 64)
      ok &= pick({{4096, 4096, 4096}, {8192, 8192, 8192}, {4000, 3000, 2000}, {256, 8192, 8192}, {1024, 8192, 8192}},
                 {cfg(128, 256, 64, 8, 3), cfg(128, 128, 64, 8, 4), cfg(128, 128, 64, 4, 4), cfg(128, 256, 64, 8, 2),
                  cfg(64, 256, 64, 4, 4), cfg(256, 128, 64, 8, 3), cfg(64, 128, 64, 4, 6), ws(128, 256, 64, 8, 3),
                  ws(128, 256, 64, 8, 4), ws(128, 128, 64, 8, 4), ws(128, 128, 64, 4, 4), ws(128, 128, 64, 4, 3).programs_per_sm(2),
                  // Clusters of two programs (B multicast along x, A along y), each beside its tiles without; the first
                  // is the tutorial GEMM's default (tiles only). A grid that is not whole clusters is refused.
                  cfg(128, 128, 64, 4, 0), cfg(128, 128, 64, 4, 0).cluster(2, 1), cfg(128, 128, 64, 4, 4).cluster(2, 1),
                  cfg(128, 128, 64, 8, 4).cluster(2, 1), cfg(128, 256, 64, 8, 3).cluster(2, 1), cfg(128, 256, 64, 8, 3).cluster(1, 2),
                  ws(128, 256, 64, 8, 4).cluster(2, 1), ws(128, 128, 64, 4, 4).cluster(2, 1), ws(128, 128, 64, 4, 0).cluster(2, 1),
                  ws(128, 128, 64, 4, 6).cluster(2, 1),
                  // Persistent programs (Config::persistent: the same lambda, one program per SM walking the tiles, a
                  // producer warpgroup added to the loop nest), in the launch order and in groups of 8 row blocks.
                  cfg(128, 256, 64, 8, 3).persistent(), cfg(128, 256, 64, 8, 3).persistent().tile_group(8),
                  cfg(128, 128, 64, 4, 0).persistent().tile_group(8),
                  cfg(128, 128, 64, 8, 4).persistent().tile_group(8)},
                 run);
  }
  if (only.empty() || only == "bf16_persistent") {
    const auto k = gemm_bf16_persistent();
    ok &= pick({{4096, 4096, 4096}, {8192, 8192, 8192}},
               // Without roles (set off: tilejit adds them to this loop nest by itself), then with them.
               {cfg(128, 256, 64, 8, 3).warp_specialize(false), cfg(128, 128, 64, 8, 4).warp_specialize(false),
                cfg(128, 256, 64, 8, 3), cfg(128, 256, 32, 8, 6), ws(128, 128, 64, 8, 4), ws(128, 128, 64, 4, 3).programs_per_sm(2)},
               [&](int64_t M, int64_t N, int64_t K, const std::vector<Config>& c) {
                 return run_shape<tilejit::bfloat16, bf16, tilejit::bfloat16, bf16>("bf16_persistent", k, M, N, K, false, c, true);
               });
  }
  if (only.empty() || only == "bf16_grouped") {
    const auto k = gemm_bf16_grouped();
    const auto g = [](Config c, int64_t gm) { return c.set("GM", gm); };
    // The tutorial GEMM's default (tiles only) at several group heights, then the best tiles; 32 row blocks of 128 at
    // 4096 is the 2-D grid's order (bf16 above).
    ok &= pick({{4096, 4096, 4096}, {8192, 8192, 8192}},
               {g(cfg(128, 128, 64, 4, 0), 4), g(cfg(128, 128, 64, 4, 0), 8), g(cfg(128, 128, 64, 4, 0), 16),
                g(cfg(128, 128, 64, 4, 0).cluster(2, 1), 8), g(ws(128, 128, 64, 4, 0).cluster(2, 1), 8), g(cfg(128, 128, 64, 8, 4), 8),
                g(cfg(128, 256, 64, 8, 3), 8), g(cfg(128, 256, 64, 8, 3), 16), g(ws(128, 256, 64, 8, 4), 8),
                g(ws(128, 256, 64, 8, 4).cluster(2, 1), 8)},
               [&](int64_t M, int64_t N, int64_t K, std::vector<Config> c) {
                 for (Config& x : c)
                   if (!x.has("GM")) x.set("GM", 8);  // a configuration from the command line
                 return run_shape<tilejit::bfloat16, bf16, tilejit::bfloat16, bf16>("bf16_grouped", k, M, N, K, false, c, false, true);
               });
  }
  if (only.empty() || only == "e4m3") {
    const auto k = gemm_e4m3();
    ok &= pick({{8192, 8192, 8192}, {4096, 4096, 4096}},
               {cfg(128, 256, 128, 8, 3), cfg(128, 128, 128, 8, 4), cfg(256, 128, 128, 8, 3), cfg(128, 128, 128, 4, 4),
                ws(128, 256, 128, 8, 3), ws(128, 256, 128, 8, 4), ws(128, 128, 128, 8, 4)},
               [&](int64_t M, int64_t N, int64_t K, const std::vector<Config>& c) {
                 return run_shape<tilejit::float8_e4m3, f8e4m3, tilejit::bfloat16, bf16>("e4m3", k, M, N, K, true, c);
               });
  }
  for (const bool kn : {false, true}) {
    const char* type = kn ? "tf32_kn" : "tf32";
    if (!only.empty() && only != type) continue;
    // The K-major copies of B (two tiles) leave no room for the 128 x 256 and 256 x 128 tiles with B stored [K, N].
    const auto k = gemm_tf32(kn);
    ok &= pick({{4096, 4096, 4096}},
               kn ? std::vector<Config>{cfg(128, 128, 32, 8, 4), cfg(128, 128, 32, 4, 4), cfg(128, 128, 32, 8, 3), cfg(128, 64, 32, 4, 4),
                                        ws(128, 128, 32, 8, 4), ws(128, 128, 32, 8, 3)}
                  : std::vector<Config>{cfg(128, 128, 32, 8, 4), cfg(128, 128, 32, 4, 4), cfg(128, 256, 32, 8, 2), cfg(256, 128, 32, 8, 2), cfg(128, 256, 32, 8, 3),
                                        ws(128, 128, 32, 8, 4), ws(128, 256, 32, 8, 3), ws(128, 256, 32, 8, 2)},
               [&](int64_t M, int64_t N, int64_t K, const std::vector<Config>& c) {
                 return run_shape<float, f32, float, f32>(type, k, M, N, K, !kn, c);
               });
  }
  return ok ? 0 : 1;
}
