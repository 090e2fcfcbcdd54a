// Warp-specialized kernels (Config::warp_specialize: a producer warpgroup issues the pipelined loop's TMA loads,
// the consumer warps run the products and release each stage through its "empty" barrier) against the
// interpreter: the tutorial GEMM at 2-5 stages and K-step counts of every residue, one and two consumer
// warpgroups, fp8 and tf32 operands (the threads' K-major copies synchronise the consumers alone), SwiGLU's two
// products, an accumulator scaled in place, a block-scaled GEMM, attention's loop with two products, a persistent
// GEMM (the producer runs the tile loop too), tile schedules read from memory, consumer warpgroups taking turns
// (pingpong) in attention, jagged HSTU (descriptors built on the device, awaited by the producer), and kernels
// the roles do not apply to (they run without them).
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>

#include "../../samples/sample_kernels.h"
#include "gpu_harness.h"
#include "schedule_cases.h"

using namespace gpu_test;
using tilejit::cdiv;
using tilejit::Config;

namespace {

Config roles(int64_t bm, int64_t bn, int64_t bk, int warps, int stages) {
  return Config{{"BM", bm}, {"BN", bn}, {"BK", bk}}.num_warps(warps).num_stages(stages).warp_specialize();
}

std::string tiles(int64_t bm, int64_t bn, int64_t bk, int warps, int stages) {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " tiles, " + std::to_string(warps) +
         " consumer warps, " + std::to_string(stages) + " stages";
}

/// A GEMM over bf16 A [M, K] and B (`b` its sizes: [K, N] or [N, K]) into f32 C [M, N], operands random from
/// `seed`, against the interpreter; `lead` are arguments before A (a tile schedule).
template <class Kern, class... Lead>
void run_gemm(const Kern& kern, tilejit::dim3 grid, const Config& cfg, int64_t M, int64_t N, int64_t K, bool b_nk, uint32_t seed,
              Lead&... lead) {
  Twin<bf16, 2> a({M, K}), b(b_nk ? std::array<int64_t, 2>{N, K} : std::array<int64_t, 2>{K, N});
  Twin<f32, 2> c({M, N});
  a.randomize(seed, -1, 1);
  b.randomize(seed + 1, -1, 1);
  c.fill_byte(0);
  run_both(kern, grid, cfg, 1e-4, lead..., a, b, c);
}

}  // namespace

TEST_CASE("gpu: a warp-specialized GEMM matches the interpreter at every stage count and K-step residue") {
  // The tutorial GEMM, B stored [K, N]: the producer waits for a stage's empty barrier from the stages-th load
  // on; K-step counts below, at and above the stage count, and K off the tile multiple (zero fill past K).
  auto kern = tutorial_gemm<bf16>("gemm_roles");
  for (int warps : {4, 8}) {
    for (int stages = 2; stages <= 5; ++stages) {
      for (int steps : {1, stages - 1, stages, stages + 1, 2 * stages + 1}) {
        if (steps < 1) continue;
        const int64_t M = 256, N = 256, K = 64 * steps - (steps % 2 ? 24 : 0);
        SUBCASE(("M 256 N 256 K " + std::to_string(K) + ", " + tiles(128, 128, 64, warps, stages)).c_str()) {
          run_gemm(kern, tilejit::dim3(2, 2), roles(128, 128, 64, warps, stages), M, N, K, false, 201);
        }
      }
    }
  }
  SUBCASE("M 256 N 512 K 1024, 128x256x64 tiles, 8 consumer warps, 4 stages (the benchmark's tiles)") {
    run_gemm(kern, tilejit::dim3(2, 2), roles(128, 256, 64, 8, 4), 256, 512, 1024, false, 203);
  }
}

TEST_CASE("gpu: warp-specialized fp8 and tf32 GEMMs (K-major copies among the consumers) match the interpreter") {
  // e4m3 with B stored [N, K] (read through .trans()); tf32 with B stored [K, N], which the consumer threads copy
  // K-major in every iteration between barriers of their own (the producer never reaches them).
  auto e4m3 = tilejit::kernel("gemm_roles_e4m3", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<f32, 2> c,
                                                    Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  auto tf32 = tutorial_gemm<f32>("gemm_roles_tf32_kn");
  for (int stages : {2, 3, 4}) {
    SUBCASE(("e4m3, M 256 N 256 K 640, " + tiles(128, 128, 128, 8, stages)).c_str()) {
      Twin<f8e4m3, 2> a({256, 640}), b({256, 640});
      Twin<f32, 2> c({256, 256});
      a.randomize(211, -1, 1);
      b.randomize(212, -1, 1);
      c.fill_byte(0);
      // 2e-2 as the other fp8 products: wgmma's fp8 accumulation is not exactly the interpreter's f32 sum.
      run_both(e4m3, tilejit::dim3(2, 2), roles(128, 128, 128, 8, stages), 2e-2, a, b, c);
    }
    SUBCASE(("tf32, B [K, N], M 128 N 256 K 288, " + tiles(64, 128, 32, 4, stages)).c_str()) {
      Twin<f32, 2> a({128, 288}), b({288, 256}), c({128, 256});
      a.randomize(213, -1, 1);
      b.randomize(214, -1, 1);
      c.fill_byte(0);
      run_both(tf32, tilejit::dim3(2, 2), roles(64, 128, 32, 4, stages), 2e-3, a, b, c);
    }
  }
}

TEST_CASE("gpu: warp-specialized loops with several products, in-place updates and block scales match the interpreter") {
  for (int stages : {2, 3, 4}) {
    SUBCASE(("SwiGLU, two products per K step, M 256 N 128 K 456, " + tiles(128, 64, 64, 8, stages)).c_str()) {
      auto kern = tilejit::samples::swiglu_two_products_kernel();
      Twin<bf16, 2> x({256, 456}), wg({128, 456}), wu({128, 456}), out({256, 128});
      x.randomize(221, -1, 1);
      wg.randomize(222, -1, 1);
      wu.randomize(223, -1, 1);
      out.fill_byte(0);
      run_both(kern, tilejit::dim3(2, 2), roles(128, 64, 64, 8, stages), 1e-2, x, wg, wu, out);
    }
    SUBCASE(("block-scaled GEMM, M 256 N 256 K 456, " + tiles(128, 128, 64, 8, stages)).c_str()) {
      run_block_scaled(256, 256, 456, roles(128, 128, 64, 8, stages), 224);
    }
  }
  for (int per_sm : {1, 2}) {
    // Two programs per SM halve each program's registers: the consumers take what the producer gives up of half
    // the pool (setmaxnreg.inc would wait forever for more). 8 and 4 consumer warps.
    for (const auto& [bm, warps] : {std::pair{int64_t{128}, 8}, std::pair{int64_t{64}, 4}}) {
      SUBCASE(("attention, S 256 D 64, " + std::to_string(bm) + "x64 tiles, " + std::to_string(warps) + " consumer warps, 3 stages, " +
               std::to_string(per_sm) + " program(s) per SM").c_str()) {
        run_attention(2, 256, 64, Config{{"BM", bm}, {"BN", 64}, {"D", 64}}.num_warps(warps).num_stages(3).programs_per_sm(per_sm).warp_specialize(), 234);
      }
    }
  }
  for (int stages : {2, 3}) {
    for (int64_t d : {64, 128}) {
      // Attention's loop: S awaited before the softmax, P V before the yield; the previous stage is released after
      // P V's issue. Sequence lengths of 1, 3 and 8 key blocks.
      for (int64_t S : {64, 192, 512}) {
        SUBCASE(("attention, S " + std::to_string(S) + " D " + std::to_string(d) + ", 64x64 tiles, 4 consumer warps, " +
                 std::to_string(stages) + " stages").c_str()) {
          run_attention(2, S, d, Config{{"BM", 64}, {"BN", 64}, {"D", d}}.num_warps(4).num_stages(stages).warp_specialize(), 231);
        }
        SUBCASE(("attention over [heads, S, D] ({1, BM, D} tiles), S " + std::to_string(S) + " D " + std::to_string(d) +
                 ", 64x64 tiles, 4 consumer warps, " + std::to_string(stages) + " stages").c_str()) {
          run_attention_bhsd(2, S, d, Config{{"BM", 64}, {"BN", 64}, {"D", d}}.num_warps(4).num_stages(stages).warp_specialize(), 232);
        }
      }
    }
  }
}

TEST_CASE("gpu: a warp-specialized persistent GEMM matches the interpreter at every stage count and K-step residue") {
  // The producer runs the tile loop too; its ring position and the consumers' run on from tile to tile, and the
  // consumers release the previous tile's last stage in the next tile's first K step.
  auto kern = tilejit::samples::persistent_matmul_kernel();
  for (int stages = 2; stages <= 6; ++stages) {
    for (int residue = 0; residue < stages; ++residue) {
      const int64_t M = 192, N = 128, steps = stages + residue, K = 32 * steps - (residue % 2 ? 8 : 0);
      for (uint32_t grid : {4u, 8u}) {  // 6 tiles: some programs take two, or none
        SUBCASE(("64x64x32 tiles, 4 consumer warps, " + std::to_string(stages) + " stages, " + std::to_string(steps) +
                 " K steps, " + std::to_string(grid) + " programs").c_str()) {
          run_gemm(kern, tilejit::dim3(grid), roles(64, 64, 32, 4, stages), M, N, K, true, 251);
        }
      }
    }
  }
  for (int stages : {2, 3, 4}) {
    SUBCASE(("256x512x512, 128x128x64 tiles, 8 consumer warps, 3 programs, " + std::to_string(stages) + " stages").c_str()) {
      run_gemm(kern, tilejit::dim3(3), roles(128, 128, 64, 8, stages), 256, 512, 512, true, 253);
    }
  }
  SUBCASE("256x512x512, 128x128x64 tiles, 8 warps, 3 programs, 3 stages, roles left to tilejit (the consumers load)") {
    run_gemm(kern, tilejit::dim3(3), Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3), 256, 512, 512, true, 255);
  }
}

TEST_CASE("gpu: warp roles with a tile schedule read from memory (MoE-style) match the interpreter") {
  // Each tile's first row is read from `tile_rows` (as a grouped GEMM finds its tiles from expert offsets): the
  // producer reads it too. Tiled (one program per tile) and persistent (a tile loop reading the schedule).
  auto tiled = tilejit::kernel("schedule_gemm", [](Tensor<i32, 1> tile_rows, Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c,
                                                   Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = load(tile_rows, program_id(0)), n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  auto persistent = tilejit::kernel("schedule_gemm_persistent", [](Tensor<i32, 1> tile_rows, Tensor<bf16, 2> a, Tensor<bf16, 2> b,
                                                                   Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto tiles_n = (c.size(1).to<i32>() + BN - 1) / BN;
    auto tiles = tile_rows.size(0).to<i32>() * tiles_n;
    for_range(program_id(0), tiles, num_programs(0), [&](Scalar<i32> t) {
      auto m = load(tile_rows, t / tiles_n), n = t % tiles_n * BN;
      auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
      });
      descriptor_store(c, {m, n}, acc);
    });
  });
  // Rows 0..447 in tiles of 64, listed out of order; K of 5 steps and a partial one.
  const int64_t M = 448, N = 128, K = 296;
  Twin<i32, 1> rows({7});
  const int32_t order[] = {192, 0, 384, 64, 320, 128, 256};
  for (int i = 0; i < 7; ++i) rows.host_data()[i] = order[i];
  for (int stages : {2, 3, 4}) {
    for (bool roles_on : {true, false}) {
      const Config cfg = Config{{"BM", 64}, {"BN", 64}, {"BK", 64}}.num_warps(4).num_stages(stages).warp_specialize(roles_on);
      SUBCASE(("tiled, " + std::to_string(stages) + " stages, roles " + (roles_on ? "on" : "off")).c_str()) {
        run_gemm(tiled, tilejit::dim3(7, 2), cfg, M, N, K, true, 261, rows);
      }
      SUBCASE(("persistent, 5 programs, " + std::to_string(stages) + " stages, roles " + (roles_on ? "on" : "off")).c_str()) {
        run_gemm(persistent, tilejit::dim3(5), cfg, M, N, K, true, 263, rows);
      }
    }
  }
}

TEST_CASE("gpu: two sequential K loops sharing one ring, filled by one producer warpgroup, match the interpreter") {
  // The producer runs through both loops' positions; the second loop's consumers go on from the first one's.
  // K-step counts below, at and above the stage count, in each loop.
  auto kern = two_k_loops_kernel();
  for (int stages : {2, 3, 4})
    for (int64_t K : {64, 192, 200, 320}) {
      SUBCASE(("K " + std::to_string(K) + ", " + std::to_string(stages) + " stages").c_str()) {
        Twin<bf16, 2> a({256, K}), b0({256, K}), b1({256, K}), c({256, 256});
        a.randomize(245, -1, 1);
        b0.randomize(246, -1, 1);
        b1.randomize(247, -1, 1);
        c.fill_byte(0);
        run_both(kern, tilejit::dim3(2, 2), roles(128, 128, 64, 8, stages).set("BK2", 64), 1e-2, a, b0, b1, c);
      }
    }
}

TEST_CASE("gpu: causal attention forward and backward (two loops sharing one ring) with a producer warpgroup match the interpreter") {
  // Sample 12's forward and sample 14's dK/dV and dQ kernels, causal: the unmasked and the masked loop load the
  // same tiles, so one ring serves both and one producer warpgroup fills it, running ahead from one loop into
  // the next. Sequences of one partial block, of full blocks only, and with a partial last block.
  auto forward = tilejit::samples::attention_forward_kernel();
  const int64_t heads = 3;
  // (D, consumer warps, stages, the BM and BN of the forward and dQ kernels, those of the dK/dV kernel): with 8 warps
  // the products' rows (BM for the forward and dQ, BN for dK/dV) are 128, so that operand a stays in registers.
  struct Case {
    int d, warps, stages;
    int64_t bm, bn, kv_bm, kv_bn;
  };
  for (const Case& c : {Case{128, 8, 3, 128, 64, 64, 128}, Case{64, 4, 2, 64, 64, 64, 64}, Case{128, 8, 4, 128, 32, 32, 128}})
    for (int64_t S : {40, 256, 200}) {
      // The forward with overlap_products too: its P V an iteration later, the loops rotated around one ring.
      const bool overlap = S != 256;
      const auto [d, warps, stages, bm, bn, kv_bm, kv_bn] = c;
      SUBCASE(("S " + std::to_string(S) + " D " + std::to_string(d) + ", BM " + std::to_string(bm) + " BN " + std::to_string(bn) +
               " (dK/dV: " + std::to_string(kv_bm) + " x " + std::to_string(kv_bn) + "), " + std::to_string(warps) + " consumer warps, " +
               std::to_string(stages) + " stages" + (overlap ? ", forward with overlap_products" : "")).c_str()) {
        AttentionBackwardTensors t(heads, S, d, 251);
        auto cfg = [&](int64_t m, int64_t n) {
          return Config{{"BM", m}, {"BN", n}, {"D", d}, {"CAUSAL", 1}}.num_warps(warps).num_stages(stages).warp_specialize();
        };
        Twin<f32, 2> lse_out({heads, S});
        lse_out.fill_byte(0);
        run_both(forward, t.grid(bm), Config(cfg(bm, bn)).overlap_products(overlap), 2e-2, t.q, t.k, t.v, t.g1, lse_out, t.scale);
        t.run_dkdv(cfg(kv_bm, kv_bn));
        t.run_dq(cfg(bm, bn));
      }
    }
}

TEST_CASE("gpu: consumer warpgroups taking turns at the tensor cores (pingpong) in attention match the interpreter") {
  // The overlapped loop (S and the previous block's P V in one turn) and the loop as written (a turn per product),
  // on two and four consumer warpgroups; sequences of one block (no iteration takes a turn: the first turn stays
  // given), two blocks and more. Then sample 12's causal kernel, whose two loops take turns in one order.
  struct Case {
    int64_t bm, bn, d;
    int warps, stages;
  };
  for (const Case& c : {Case{128, 128, 64, 8, 2}, Case{128, 64, 128, 8, 3}, Case{256, 32, 64, 16, 2}, Case{128, 128, 128, 8, 3}})
    for (int64_t blocks : {1, 2, 5})
      for (bool overlap : {true, false}) {
        const int64_t S = blocks * c.bm;
        SUBCASE(("S " + std::to_string(S) + " D " + std::to_string(c.d) + ", BM " + std::to_string(c.bm) + " BN " +
                 std::to_string(c.bn) + ", " + std::to_string(c.warps) + " consumer warps, " + std::to_string(c.stages) +
                 " stages" + (overlap ? ", overlap_products" : "")).c_str()) {
          run_attention(2, S, c.d,
                        Config{{"BM", c.bm}, {"BN", c.bn}, {"D", c.d}}.num_warps(c.warps).num_stages(c.stages).overlap_products(overlap).pingpong(),
                        271);
        }
      }
  auto forward = tilejit::samples::attention_forward_kernel();
  for (int64_t S : {40, 256, 200})
    SUBCASE(("causal, S " + std::to_string(S) + " D 128, BM 128 BN 128, 8 consumer warps, 2 stages").c_str()) {
      AttentionBackwardTensors t(2, S, 128, 273);
      Twin<f32, 2> lse_out({2, S});
      lse_out.fill_byte(0);
      run_both(forward, t.grid(128), Config{{"BM", 128}, {"BN", 128}, {"D", 128}, {"CAUSAL", 1}}.num_warps(8).num_stages(2).pingpong(),
               2e-2, t.q, t.k, t.v, t.g1, lse_out, t.scale);
    }
}

TEST_CASE("gpu: jagged HSTU with a producer warpgroup awaiting the descriptors the consumers build matches the interpreter") {
  // Sample 13: each program builds its sequence's views on the device (the consumers, one warp per view); the producer waits for
  // those builds on an mbarrier before its first load. Sequences of 0, 1 and 17 tokens (one partial block, or
  // none: the program does nothing, and neither role waits), and longer; dense (one loop) and causal (two loops
  // sharing the ring); 128 x 128 blocks rotated with turns (tilejit's choice), 128 x 64 at 3 stages, and two
  // programs per SM; each without and with the relative attention bias (a [H, 81] table: keys more than 40
  // positions away from the query share its end entries, which lengths of 130 and 200 reach). The 128 x 128
  // blocks with the bias keep the producer at 24 registers (Config::producer_registers): at tilejit's 40 the
  // consumers' 232 registers spill 44 bytes (the bias's index registers), and the harness wants none.
  auto kern = tilejit::samples::jagged_hstu_kernel();
  const std::vector<int32_t> lengths = {1, 17, 130, 0, 64, 200};
  const int64_t H = 2, seqs = static_cast<int64_t>(lengths.size()), max_len = 200;
  Twin<i32, 1> offsets({seqs + 1});
  offsets.host_data()[0] = 0;
  for (int64_t s = 0; s < seqs; ++s) offsets.host_data()[s + 1] = offsets.host_data()[s] + lengths[static_cast<size_t>(s)];
  const int64_t tokens = offsets.host_data()[seqs];
  struct Case {
    int64_t bm, bn, d;
    int warps, stages, per_sm;
  };
  for (const Case& c : {Case{128, 128, 128, 8, 2, 0}, Case{128, 64, 64, 8, 3, 0}, Case{64, 64, 64, 4, 3, 2}})
    for (int causal : {0, 1})
      for (int bias : {0, 1}) {
        const bool lean = bias && c.bm == 128 && c.bn == 128;
        SUBCASE(("D " + std::to_string(c.d) + (causal ? " causal" : " dense") + (bias ? " with bias" : "") + ", BM " + std::to_string(c.bm) +
                 " BN " + std::to_string(c.bn) + ", " + std::to_string(c.warps) + " consumer warps, " + std::to_string(c.stages) + " stages, " +
                 (c.per_sm ? std::to_string(c.per_sm) + " per SM" : std::string("no occupancy target")) +
                 (lean ? ", producer keeping 24 registers" : "")).c_str()) {
          const int64_t hd = H * c.d;
          Twin<bf16, 2> q({tokens, hd}), k({tokens, hd}), v({tokens, hd}), o({tokens, hd});
          Twin<f32, 2> rab({H, 81});
          q.randomize(281, -1, 1);
          k.randomize(282, -1, 1);
          v.randomize(283, -1, 1);
          rab.randomize(284, -2, 2);
          o.fill_byte(0x55);
          const float alpha = 1.0f / std::sqrt(static_cast<float>(c.d)), inv_max_len = 1.0f / static_cast<float>(max_len);
          const Config cfg = Config{{"BM", c.bm}, {"BN", c.bn}, {"D", c.d}, {"CAUSAL", causal}, {"BIAS", bias}}
                                 .num_warps(c.warps)
                                 .num_stages(c.stages)
                                 .programs_per_sm(c.per_sm)
                                 .warp_specialize()
                                 .producer_registers(lean ? 24 : 0);
          run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(max_len, c.bm)), static_cast<uint32_t>(seqs), static_cast<uint32_t>(H)),
                   cfg, 2e-2, offsets, q, k, v, o, rab, alpha, inv_max_len);
        }
      }
}

TEST_CASE("gpu: jagged softmax attention (sample 15) matches the interpreter, with and without a producer warpgroup") {
  // The online softmax over device-built views of each sequence, the last block of keys masked at the sequence's
  // end, lse stored by row; the programs take the sequences longest first (order) and, causal, the query blocks
  // from the last. Sequences of 0, 1 and 17 tokens and longer; dense (two loops: the unmasked blocks and the last
  // one) and causal; 128 x 128 blocks (roles, rotated, turns: tilejit's choice), 128 x 64 at 3 stages with roles,
  // 64 x 64 on one warpgroup without roles and with roles at two programs per SM.
  auto kern = tilejit::samples::jagged_attention_kernel();
  const std::vector<int32_t> lengths = {1, 17, 130, 0, 64, 200};
  const int64_t H = 2, seqs = static_cast<int64_t>(lengths.size()), max_len = 200;
  Twin<i32, 1> offsets({seqs + 1}), order({seqs});
  offsets.host_data()[0] = 0;
  for (int64_t s = 0; s < seqs; ++s) offsets.host_data()[s + 1] = offsets.host_data()[s] + lengths[static_cast<size_t>(s)];
  const int32_t longest_first[] = {5, 2, 4, 1, 0, 3};
  for (int64_t s = 0; s < seqs; ++s) order.host_data()[s] = longest_first[s];
  const int64_t tokens = offsets.host_data()[seqs];
  struct Case {
    int64_t bm, bn, d;
    int warps, stages, per_sm, roles;
  };
  for (const Case& c : {Case{128, 128, 128, 8, 3, 0, -1}, Case{128, 64, 64, 8, 3, 0, 1}, Case{64, 64, 64, 4, 2, 0, 0}, Case{64, 64, 128, 4, 3, 2, 1}})
    for (int causal : {0, 1})
      SUBCASE(("D " + std::to_string(c.d) + (causal ? " causal" : " dense") + ", BM " + std::to_string(c.bm) + " BN " +
               std::to_string(c.bn) + ", " + std::to_string(c.warps) + " consumer warps, " + std::to_string(c.stages) + " stages, " +
               (c.per_sm ? std::to_string(c.per_sm) + " per SM" : std::string("no occupancy target")) + ", roles " + (c.roles < 0 ? "tilejit's choice" : std::to_string(c.roles))).c_str()) {
        const int64_t hd = H * c.d;
        Twin<bf16, 2> q({tokens, hd}), k({tokens, hd}), v({tokens, hd}), o({tokens, hd});
        Twin<f32, 2> lse({H, tokens});
        q.randomize(291, -2, 2);
        k.randomize(292, -2, 2);
        v.randomize(293, -1, 1);
        o.fill_byte(0x55);
        lse.fill_byte(0x55);
        const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
        Config cfg = Config{{"BM", c.bm}, {"BN", c.bn}, {"D", c.d}, {"CAUSAL", causal}}.num_warps(c.warps).num_stages(c.stages).programs_per_sm(c.per_sm);
        if (c.roles >= 0) cfg.warp_specialize(c.roles == 1);
        run_both(kern, tilejit::dim3(static_cast<uint32_t>(cdiv(max_len, c.bm)), static_cast<uint32_t>(H), static_cast<uint32_t>(seqs)),
                 cfg, 2e-2, offsets, order, q, k, v, o, lse, scale);
      }
}

TEST_CASE("gpu: kernels warp_specialize does not apply to run without roles and match the interpreter") {
  // Two sequential K loops with rings of their own (a producer fills one ring) and a GEMM at one stage (no
  // pipelined loop).
  SUBCASE("two sequential K loops with different tiles, 3 stages") {
    auto kern = two_k_loops_kernel();
    Twin<bf16, 2> a({128, 200}), b0({128, 200}), b1({128, 200}), c({128, 128});
    a.randomize(241, -1, 1);
    b0.randomize(242, -1, 1);
    b1.randomize(243, -1, 1);
    c.fill_byte(0);
    run_both(kern, tilejit::dim3(1, 1), roles(128, 128, 64, 8, 3).set("BK2", 32), 1e-2, a, b0, b1, c);
  }
  SUBCASE("block-scaled GEMM, 1 stage") { run_block_scaled(128, 128, 192, roles(128, 128, 64, 8, 1), 244); }
}
