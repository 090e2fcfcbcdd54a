// Tensor-core dots (wgmma) against the interpreter: 16-bit operands with either major-ness, a 16-bit operand a in
// registers (attention's P x V), fp8, tf32 and int8 (K-major, or copied K-major by the threads), f16 accumulators
// (f16 and fp8 operands), one or two warpgroups, 1 to 4 pipeline stages, M / N / K at and off the tile multiples.
// fp8 products are compared at 2e-2 of max(1, |c|) with inputs in [-1, 1]: sm_90 tensor cores accumulate fp8
// products with fewer mantissa bits than f32, an error that scales with the partial sums, not with the result
// (measured on an H100 over K = 256 with inputs in [-2, 2]: -24.910156 vs -24.913879, and 0.309570 vs 0.297211 on
// a result near zero). A wrong fragment, swizzle or descriptor moves whole products: errors of the size of the
// values.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "../../samples/sample_kernels.h"
#include "gpu_harness.h"
#include "schedule_cases.h"

using namespace gpu_test;
using tilejit::cdiv;
using tilejit::Config;

namespace {

/// C[M, N] = A[M, K] @ B[K, N] (b_kn) or A @ Bt[N, K]^T, through TMA tiles, a K loop and dot; with
/// ATransposed, A is stored as At[K, M] and loaded through .trans().
template <class In, class Acc, bool BTransposed, bool ATransposed = false>
auto matmul_kernel() {
  return tilejit::kernel(ATransposed ? (BTransposed ? "mma_tt" : "mma_tn") : (BTransposed ? "mma_nt" : "mma_nn"),
                         [](Tensor<In, 2> a, Tensor<In, 2> b, Tensor<Acc, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
                           auto m = program_id(0) * BM, n = program_id(1) * BN;
                           auto acc = for_range(0, a.size(ATransposed ? 0 : 1).template to<i32>(), BK, zeros<Acc>({BM, BN}),
                                                [&](Scalar<i32> k, Value<Acc, 2> acc) {
                                                  auto ta = [&] {
                                                    if constexpr (ATransposed) return descriptor_load(a, {k, m}, {BK, BM}).trans();
                                                    else return descriptor_load(a, {m, k}, {BM, BK});
                                                  }();
                                                  if constexpr (BTransposed)
                                                    return dot(ta, descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
                                                  else
                                                    return dot(ta, descriptor_load(b, {k, n}, {BK, BN}), acc);
                                                });
                           descriptor_store(c, {m, n}, acc);
                         });
}

struct Tiles {
  int bm, bn, bk, warps, stages;
};

template <class In, class Acc, bool BT, bool AT = false>
void check(int64_t M, int64_t N, int64_t K, Tiles t, double tol, double lo, double hi) {
  auto k = matmul_kernel<In, Acc, BT, AT>();
  Twin<In, 2> a(AT ? std::array<int64_t, 2>{K, M} : std::array<int64_t, 2>{M, K});
  Twin<In, 2> b(BT ? std::array<int64_t, 2>{N, K} : std::array<int64_t, 2>{K, N});
  Twin<Acc, 2> c({M, N});
  a.randomize(11, lo, hi);
  b.randomize(12, lo, hi);
  c.fill_byte(0);
  const Config cfg({{"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}}, t.warps, t.stages);
  run_both(k, tilejit::dim3(static_cast<uint32_t>(cdiv(M, t.bm)), static_cast<uint32_t>(cdiv(N, t.bn))), cfg, tol, a, b, c);
}

/// Attention's two products: O = (Q @ K^T as bf16) @ V, the second with its a (P) in registers.
auto two_products_kernel() {
  return tilejit::kernel("two_products", [](Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<bf16, 2> v, Tensor<f32, 2> o, Meta<"BM"> BM,
                                            Meta<"BN"> BN, Meta<"D"> D) {
    auto m = program_id(0) * BM;
    auto s = dot(descriptor_load(q, {m, 0}, {BM, D}), descriptor_load(k, {0, 0}, {BN, D}).trans(), zeros<f32>({BM, BN}));
    descriptor_store(o, {m, 0}, dot(s.to<bf16>(), descriptor_load(v, {0, 0}, {BN, D}), zeros<f32>({BM, D})));
  });
}

/// C = A @ B (as matmul_kernel<bf16, f32, false>) and the column sums of C over each program's rows, added into
/// colsum by TMA: a reduction over the accumulator's rows, whose padding (M below 64) must not count.
auto matmul_colsum_kernel() {
  return tilejit::kernel("mma_colsum", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Tensor<f32, 1> colsum, Meta<"BM"> BM,
                                          Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
    descriptor_store(colsum, {n}, sum(acc, 0), StoreReduce::add);
  });
}

std::string name(const char* what, int64_t M, int64_t N, int64_t K, Tiles t) {
  return std::string(what) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) + " tiles " +
         std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + " warps " + std::to_string(t.warps) +
         " stages " + std::to_string(t.stages);
}

/// Sample 09's GEMM with a bias row and a GELU epilogue (bf16 out) on M x N x K, against the interpreter.
void check_bias_gelu(int64_t M, int64_t N, int64_t K, const Config& config, uint32_t seed) {
  auto kern = tilejit::samples::matmul_bias_gelu_kernel();
  Twin<bf16, 2> a({M, K}), b({K, N}), c({M, N});
  Twin<bf16, 1> bias({N});
  a.randomize(seed, -1, 1);
  b.randomize(seed + 1, -1, 1);
  bias.randomize(seed + 2, -1, 1);
  c.fill_byte(0);
  run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(M, config.get("BM"))), static_cast<uint32_t>(N / config.get("BN"))), config,
           2e-2, a, b, bias, c);
}

/// samples::fused_mlp_kernel on M token rows, hidden width H, model width D, against the interpreter.
void check_fused_mlp(int64_t M, int64_t H, int64_t D, const Config& config, uint32_t seed) {
  auto kern = tilejit::samples::fused_mlp_kernel();
  Twin<bf16, 2> x({M, D}), w1({D, H}), w2({H, D}), y({M, D});
  x.randomize(seed, -1, 1);
  w1.randomize(seed + 1, -0.2, 0.2);
  w2.randomize(seed + 2, -0.2, 0.2);
  y.fill_byte(0);
  // The hidden block's bf16 rounding may move by a unit where the first product's sums come in another order.
  run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(M, config.get("BM")))), config, 2e-2, x, w1, w2, y);
}

}  // namespace

TEST_CASE("gpu: the tutorial GEMM written acc + dot(a, b) (no accumulator passed) matches the interpreter") {
  // What a Triton user writes first (`acc += tl.dot(a, b)`): each K step's product from zero, then added.
  auto kern = tilejit::kernel("gemm_add_dot", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                 Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return acc + dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}));
    });
    descriptor_store(c, {m, n}, acc);
  });
  for (int stages : {1, 3}) {
    SUBCASE(("stages " + std::to_string(stages)).c_str()) {
      Twin<bf16, 2> a({200, 256}), b({256, 136});
      Twin<f32, 2> c({200, 136});
      a.randomize(31, -2, 2);
      b.randomize(32, -2, 2);
      c.fill_byte(0);
      run_both(kern, tilejit::dim3(2, 2), Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(stages), 1e-4, a, b, c);
    }
  }
}

TEST_CASE("gpu: wgmma dots match the interpreter") {
  const Tiles tiles[] = {{64, 64, 32, 4, 1}, {64, 64, 64, 4, 2}, {128, 128, 64, 8, 3}, {128, 64, 128, 4, 4},
                         {64, 128, 64, 8, 2}, {128, 256, 64, 8, 2}, {64, 32, 16, 4, 2}};
  const int64_t shapes[][3] = {{256, 256, 256}, {200, 136, 200}, {64, 64, 64}};
  for (const Tiles& t : tiles)
    for (const auto& s : shapes) {
      SUBCASE(name("bf16 nn", s[0], s[1], s[2], t).c_str()) { check<bf16, f32, false>(s[0], s[1], s[2], t, 1e-4, -2, 2); }
      SUBCASE(name("f16 nt", s[0], s[1], s[2], t).c_str()) { check<f16, f32, true>(s[0], s[1], s[2], t, 1e-4, -2, 2); }
    }
  // tf32 (f32 operands, the default Precision): 2e-4 of max(1, |c|) tells the interpreter's truncation of the
  // operands from rounding them (an error of about 1e-2 at K = 256), and the wgmma path from the CUDA-core one.
  for (const Tiles& t : {Tiles{64, 64, 32, 4, 2}, Tiles{128, 128, 32, 8, 3}, Tiles{32, 64, 32, 4, 2}}) {
    SUBCASE(name("tf32 nt", 192, 128, 256, t).c_str()) { check<f32, f32, true>(192, 128, 256, t, 2e-4, -1, 1); }
  }
  // tf32 and 8-bit operands loaded M/N-major: the threads copy them K-major before the products (in a pipelined
  // loop into one of two buffers, alternating; with one stage into one buffer behind a barrier).
  for (const Tiles& t : {Tiles{64, 64, 32, 4, 2}, Tiles{128, 128, 32, 8, 3}, Tiles{128, 256, 32, 8, 1}, Tiles{64, 128, 32, 4, 4}}) {
    SUBCASE(name("tf32 nn", 200, 136, 256, t).c_str()) { check<f32, f32, false>(200, 136, 256, t, 2e-4, -1, 1); }
    SUBCASE(name("tf32 tt", 192, 128, 256, t).c_str()) { check<f32, f32, true, true>(192, 128, 256, t, 2e-4, -1, 1); }
  }
  for (const Tiles& t : {Tiles{64, 64, 64, 4, 2}, Tiles{128, 128, 128, 8, 3}, Tiles{128, 64, 64, 4, 1}}) {
    SUBCASE(name("e4m3 nn", 192, 136, 256, t).c_str()) { check<f8e4m3, f32, false>(192, 136, 256, t, 2e-2, -1, 1); }
    SUBCASE(name("i8 tn", 192, 128, 256, t).c_str()) { check<i8, i32, false, true>(192, 128, 256, t, 0, -100, 100); }
  }
  // a in registers: P's bf16 rounding of S may differ by one unit where the sums' order moves S across a
  // rounding boundary, hence 2e-2 of max(1, |o|); a wrong fragment would be off by whole products.
  for (auto [bm, bn, d, warps] : {std::tuple{128, 64, 64, 8}, {64, 128, 64, 4}, {128, 256, 128, 8}, {64, 64, 32, 4}}) {
    SUBCASE(("bf16 register a, BM " + std::to_string(bm) + " BN " + std::to_string(bn) + " D " + std::to_string(d) + " warps " +
             std::to_string(warps)).c_str()) {
      const int64_t M = 256;
      auto kern = two_products_kernel();
      Twin<bf16, 2> q({M, d}), k({bn, d}), v({bn, d});
      Twin<f32, 2> o({M, d});
      q.randomize(21, -1, 1);
      k.randomize(22, -1, 1);
      v.randomize(23, -1, 1);
      o.fill_byte(0);
      run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(M, bm))), Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(warps).num_stages(1), 2e-2,
               q, k, v, o);
    }
  }
  // f16 accumulators: the interpreter rounds the sum to f16 after every product, the tensor cores at most once per
  // instruction (K = 16 or 32), so they differ by some units of f16's last place at |c| ~ 5 (2^-8 each): 5e-2 of
  // max(1, |c|) over K = 256 with inputs in [-1, 1]. A wrong packing or fragment moves whole products.
  for (const Tiles& t : {Tiles{64, 64, 64, 4, 2}, Tiles{128, 256, 64, 8, 3}, Tiles{128, 64, 32, 4, 1}}) {
    SUBCASE(name("f16 acc nn", 192, 128, 256, t).c_str()) { check<f16, f16, false>(192, 128, 256, t, 5e-2, -1, 1); }
    SUBCASE(name("f16 acc nt", 200, 136, 256, t).c_str()) { check<f16, f16, true>(200, 136, 256, t, 5e-2, -1, 1); }
  }
  // Attention's loop: two products per iteration, the K and V tiles in a ring of num_stages.
  for (auto [bm, bn, d, warps, stages] : {std::tuple{128, 64, 64, 8, 2}, {64, 64, 128, 4, 3}, {128, 128, 64, 8, 3}, {64, 128, 64, 4, 1}}) {
    SUBCASE(("attention loop, BM " + std::to_string(bm) + " BN " + std::to_string(bn) + " D " + std::to_string(d) + " warps " +
             std::to_string(warps) + " stages " + std::to_string(stages)).c_str()) {
      // Two heads of 384 keys each; the rows of a head from h * 384.
      run_attention(2, 384, d, Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(warps).num_stages(stages), 31);
    }
    // The same loop over [heads, S, D] tensors, tiles loaded as {1, BM, D} and reshaped: still on tensor cores.
    SUBCASE(("attention loop over [heads, S, D] ({1, BM, D} tiles), BM " + std::to_string(bm) + " BN " + std::to_string(bn) + " D " +
             std::to_string(d) + " warps " + std::to_string(warps) + " stages " + std::to_string(stages)).c_str()) {
      run_attention_bhsd(3, 384, d, Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(warps).num_stages(stages), 37);
    }
  }
  // 128 x 128 blocks on 8 warps get roles and turns from tilejit (their loop is rotated); rotated without them too.
  SUBCASE("attention loop, BM 128 BN 128 D 64 warps 8 stages 3, rotated without warp roles") {
    run_attention(2, 384, 64, Config{{"BM", 128}, {"BN", 128}, {"D", 64}}.num_warps(8).num_stages(3).warp_specialize(false), 33);
  }
  // Sample 09's GEMM with a bias row (loaded before the K loop, awaited after it) and a GELU epilogue, bf16 out.
  for (const Tiles& t : {Tiles{128, 128, 64, 8, 3}, Tiles{64, 128, 64, 4, 2}}) {
    SUBCASE(name("bias + GELU epilogue", 256, 256, 256, t).c_str()) {
      check_bias_gelu(256, 256, 256, Config{{"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}}.num_warps(t.warps).num_stages(t.stages), 41);
    }
  }
  for (const Tiles& t : {Tiles{64, 64, 64, 4, 2}, Tiles{128, 128, 128, 8, 3}}) {
    SUBCASE(name("e4m3 acc f16 nt", 192, 128, 256, t).c_str()) { check<f8e4m3, f16, true>(192, 128, 256, t, 5e-2, -1, 1); }
    SUBCASE(name("e4m3 nt", 192, 128, 256, t).c_str()) { check<f8e4m3, f32, true>(192, 128, 256, t, 2e-2, -1, 1); }
    SUBCASE(name("i8 nt", 192, 128, 256, t).c_str()) { check<i8, i32, true>(192, 128, 256, t, 0, -100, 100); }
  }
}

TEST_CASE("gpu: dots with M below 64 (one m64 instruction, its rows past M padding) match the interpreter") {
  // The a tile is read 64 rows deep (past its stage into the next one, or into the bytes after the ring), and
  // the padding rows of the accumulator are neither stored nor summed. M = 40 and 200 leave the last program
  // part of a tile; 8-row tiles are the smallest.
  const Tiles tiles[] = {{16, 128, 64, 4, 4}, {32, 64, 64, 8, 3}, {16, 64, 32, 4, 1}, {48, 128, 64, 4, 2}, {8, 256, 64, 8, 6}};
  const int64_t shapes[][3] = {{40, 256, 256}, {16, 136, 200}, {200, 136, 200}};
  for (const Tiles& t : tiles)
    for (const auto& s : shapes) {
      SUBCASE(name("bf16 nn", s[0], s[1], s[2], t).c_str()) { check<bf16, f32, false>(s[0], s[1], s[2], t, 1e-4, -2, 2); }
      SUBCASE(name("f16 nt", s[0], s[1], s[2], t).c_str()) { check<f16, f32, true>(s[0], s[1], s[2], t, 1e-4, -2, 2); }
    }
  for (const Tiles& t : {Tiles{16, 128, 128, 4, 3}, Tiles{32, 128, 128, 8, 2}}) {
    SUBCASE(name("e4m3 nt", 40, 256, 256, t).c_str()) { check<f8e4m3, f32, true>(40, 256, 256, t, 2e-2, -1, 1); }
    SUBCASE(name("i8 nt", 40, 256, 256, t).c_str()) { check<i8, i32, true>(40, 256, 256, t, 0, -100, 100); }
  }
  for (const Tiles& t : {Tiles{16, 64, 32, 4, 3}, Tiles{32, 128, 32, 8, 2}}) {
    SUBCASE(name("tf32 nt", 40, 128, 256, t).c_str()) { check<f32, f32, true>(40, 128, 256, t, 2e-4, -1, 1); }
  }
  // Sample 09's epilogue (bias row, GELU, bf16), with and without a producer warpgroup.
  for (const bool roles : {false, true}) {
    SUBCASE((std::string("bias + GELU epilogue, 16 x 128 tiles, 4 warps, 4 stages") + (roles ? ", warp roles" : "")).c_str()) {
      check_bias_gelu(40, 256, 320, Config{{"BM", 16}, {"BN", 128}, {"BK", 64}}.num_warps(4).num_stages(4).warp_specialize(roles), 51);
    }
  }
  for (const Tiles& t : {Tiles{16, 128, 64, 4, 3}, Tiles{32, 64, 64, 8, 2}}) {
    SUBCASE(name("column sums of the accumulator", 40, 256, 256, t).c_str()) {
      const int64_t M = 40, N = 256, K = 256;
      auto kern = matmul_colsum_kernel();
      Twin<bf16, 2> a({M, K}), b({K, N});
      Twin<f32, 2> c({M, N});
      Twin<f32, 1> colsum({N});
      a.randomize(61, -1, 1);
      b.randomize(62, -1, 1);
      c.fill_byte(0);
      colsum.fill_byte(0);
      run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(M, t.bm)), static_cast<uint32_t>(N / t.bn)),
               Config({{"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}}, t.warps, t.stages), 1e-3, a, b, c, colsum);
    }
  }
}

TEST_CASE("gpu: products with M below 64 and the operand a in registers (attention's P x V, a fused MLP) match the interpreter") {
  // The register a pads as the accumulator does: its rows past M come from the first product's padding rows
  // (read from past the Q / x tile) and reach only the second product's padding rows, which are never stored.
  for (int64_t bm : {16, 32})
    for (int64_t d : {64, 128})
      for (const bool roles : {false, true}) {
        const Config c = Config({{"BM", bm}, {"BN", 64}, {"D", d}}, 4, 3).warp_specialize(roles);
        SUBCASE(("attention 2 heads x 192 keys, " + c.str()).c_str()) { run_attention(2, 192, d, c, 71); }
      }
  for (const int64_t M : {16, 40})
    for (int64_t bm : {16, 32})
      for (const bool roles : {false, true}) {
        const Config c = Config({{"BM", bm}, {"BH", 64}, {"D", 128}}, 4, 2).warp_specialize(roles);
        SUBCASE(("fused MLP M=" + std::to_string(M) + " H=320 D=128, " + c.str()).c_str()) { check_fused_mlp(M, 320, 128, c, 81); }
      }
}
