// Clustered kernels (Config::cluster: two programs per cluster, a tile both load multicast into both) against the
// interpreter: the tutorial GEMM in clusters of 2 x 1 (B shared) and 1 x 2 (A shared), with and without a
// producer warpgroup, at 2-4 stages and K-step counts of every residue; Triton's grouped tile order, where some
// pairs of programs share B and the pairs across a group's edge do not; a K loop whose bounds differ between
// the two programs (nothing multicast, each loads its own); and a 1-D grid whose programs never share a tile.
#include <doctest/doctest.h>

#include <array>
#include <string>

#include "gpu_harness.h"
#include "schedule_cases.h"

using namespace gpu_test;
using tilejit::Config;

namespace {

/// Triton's tutorial order: a 1-D grid, programs walking GM row blocks of a column block before the next column.
auto grouped_gemm() {
  return tilejit::kernel("cluster_grouped_gemm", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                    Meta<"BN"> BN, Meta<"BK"> BK, Meta<"GM"> GM) {
    auto pid = program_id(0);
    auto tiles_m = (a.size(0).to<i32>() + BM - 1) / BM, tiles_n = (b.size(1).to<i32>() + BN - 1) / BN;
    auto in_group = GM * tiles_n;
    auto first_m = pid / in_group * GM;
    auto group = minimum(tiles_m - first_m, GM);
    auto m = (first_m + pid % in_group % group) * BM, n = (pid % in_group / group) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
}

/// A lower-triangular product: row block i sums over the first (i + 1) K blocks only, so the two programs of a
/// 2 x 1 cluster run loops of different lengths and must not share a tile.
auto triangular_gemm() {
  return tilejit::kernel("cluster_triangular_gemm", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                       Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, minimum(m + BM, a.size(1).to<i32>()), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
}

Config cluster_cfg(int x, int y, int warps, int stages, bool roles) {
  Config c = Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(warps).num_stages(stages).cluster(x, y);
  return roles ? c.warp_specialize() : c.warp_specialize(false);
}

template <class Kern>
void run_gemm(const Kern& kern, tilejit::dim3 grid, const Config& cfg, int64_t M, int64_t N, int64_t K, uint32_t seed) {
  Twin<bf16, 2> a({M, K}), b({K, N});
  Twin<f32, 2> c({M, N});
  a.randomize(seed, -1, 1);
  b.randomize(seed + 1, -1, 1);
  c.fill_byte(0);
  run_both(kern, grid, cfg, 1e-4, a, b, c);
}

}  // namespace

TEST_CASE("gpu: clustered GEMMs (tiles multicast to both programs) match the interpreter at every stage count and K-step residue") {
  auto kern = tutorial_gemm<bf16>("cluster_gemm");
  for (const auto [x, y] : {std::array<int, 2>{2, 1}, std::array<int, 2>{1, 2}}) {
    for (bool roles : {false, true}) {
      for (int stages = 2; stages <= 4; ++stages) {
        // Every residue for 2 x 1; 1 x 2 shares the protocol (A multicast instead of B): fewer K (the interpreter's
        // time counts in CI, which compiles these kernels without a GPU).
        for (int steps : {1, stages - 1, stages, stages + 1, 2 * stages + 1}) {
          if (steps < 1 || (y == 2 && steps != stages && steps != 2 * stages + 1)) continue;
          const int64_t K = 64 * steps - (steps % 2 ? 24 : 0);
          const std::string name = "cluster " + std::to_string(x) + "x" + std::to_string(y) + (roles ? ", roles, " : ", ") +
                                   std::to_string(stages) + " stages, K " + std::to_string(K);
          SUBCASE(name.c_str()) { run_gemm(kern, tilejit::dim3(2, 2), cluster_cfg(x, y, 4, stages, roles), 256, 256, K, 301); }
        }
      }
    }
  }
  SUBCASE("cluster 2x1, 8 warps, 128 x 256 tiles, 3 stages, M 512 N 512 K 1000") {
    Config c = Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(3).cluster(2, 1);
    run_gemm(kern, tilejit::dim3(4, 2), c, 512, 512, 1000, 303);
  }
}

TEST_CASE("gpu: clustered GEMMs whose two programs load different tiles (some or all) match the interpreter") {
  SUBCASE("Triton's grouped order, GM 3: pairs across a group's edge load different B tiles") {
    // 5 row blocks x 4 column blocks = 20 programs, groups of 3 row blocks: (0, 1) share B, (2, 3) do not.
    auto kern = grouped_gemm();
    for (bool roles : {false, true}) {
      Config c = cluster_cfg(2, 1, 4, 3, roles).set("GM", 3);
      run_gemm(kern, tilejit::dim3(20), c, 5 * 128, 4 * 128, 448, 305);
    }
  }
  SUBCASE("a triangular product: the two programs' loops differ in length, nothing is multicast") {
    auto kern = triangular_gemm();
    for (bool roles : {false, true}) run_gemm(kern, tilejit::dim3(4, 2), cluster_cfg(2, 1, 4, 3, roles), 512, 256, 512, 307);
  }
}
