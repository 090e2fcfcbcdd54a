// Schedules users write around products, against the interpreter: the tutorial GEMM made persistent by its
// configuration, a persistent GEMM (a tile loop around a
// pipelined K loop) at 1-6 stages with K-step counts of every residue and grids smaller and larger than the tile
// count, a persistent jagged GEMM whose views are rebuilt per tile, a fused SwiGLU (one product split into two halves by reshape, where and sum), SwiGLU with two products
// per K step kept in flight together, an accumulator scaled in place before each product, and loops without
// products whose loads are issued one iteration ahead.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <string>
#include <utility>

#include "../../samples/sample_kernels.h"
#include "gpu_harness.h"
#include "schedule_cases.h"

using namespace gpu_test;
using tilejit::cdiv;
using tilejit::Config;

TEST_CASE("gpu: a persistent GEMM matches the interpreter at every stage count and K-step residue") {
  // The K loop's stage barriers keep their phases from one tile to the next: a K-step count that is not a multiple
  // of the stages used to drift them (a hang at M = 256, N = K = 512, 3 stages; a fault at 8192^3).
  auto kern = tilejit::samples::persistent_matmul_kernel();
  for (int stages = 1; stages <= 6; ++stages) {
    for (int residue = 0; residue < stages; ++residue) {
      const int64_t M = 192, N = 128, steps = stages + residue, K = 32 * steps - (residue % 2 ? 8 : 0);  // zero fill past K
      for (uint32_t grid : {4u, 8u}) {  // 6 tiles: some programs take two, or none
        SUBCASE(("64x64x32 tiles, 4 warps, " + std::to_string(stages) + " stages, " + std::to_string(steps) + " K steps, " +
                 std::to_string(grid) + " programs").c_str()) {
          Twin<bf16, 2> a({M, K}), b({N, K});
          Twin<f32, 2> c({M, N});
          a.randomize(51, -1, 1);
          b.randomize(52, -1, 1);
          c.fill_byte(0);
          // Without warp roles, which tilejit would add to this loop nest (test_gpu_warp_roles.cpp runs it with them).
          run_both(kern, tilejit::dim3(grid), Config{{"BM", 64}, {"BN", 64}, {"BK", 32}}.num_warps(4).num_stages(stages).warp_specialize(false), 1e-4,
                   a, b, c);
        }
      }
    }
  }
  // The shapes of the reported hang (3 programs over 4 tiles, 8 K steps of 64 at 3 stages) and two warpgroups.
  for (int stages : {2, 3, 4}) {
    SUBCASE(("256x512x512, 128x128x64 tiles, 8 warps, 3 programs, " + std::to_string(stages) + " stages").c_str()) {
      const int64_t M = 256, N = 512, K = 512;
      Twin<bf16, 2> a({M, K}), b({N, K});
      Twin<f32, 2> c({M, N});
      a.randomize(53, -1, 1);
      b.randomize(54, -1, 1);
      c.fill_byte(0);
      run_both(kern, tilejit::dim3(3), Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(stages).warp_specialize(false), 1e-4, a, b,
               c);
    }
  }
}

TEST_CASE("gpu: the tutorial GEMM made persistent by its configuration (Config::persistent) matches the interpreter") {
  // 256 tiles of 64 x 64 on at most one program per SM (132 on an H100): most programs run two tiles, in the launch
  // order and in groups of 8 row blocks, with the producer warpgroup tilejit adds to the loop nest and without it.
  auto kern = tilejit::kernel("gemm_tutorial_persistent", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                             Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  const int64_t M = 1024, N = 1024;
  for (int64_t K : {96, 160}) {  // 3 and 5 K steps
    for (int stages : {2, 3}) {
      for (int group : {0, 8}) {
        for (bool roles : {true, false}) {
          SUBCASE(("K " + std::to_string(K) + ", " + std::to_string(stages) + " stages, tile_group " + std::to_string(group) +
                   (roles ? ", roles" : ", no roles")).c_str()) {
            Twin<bf16, 2> a({M, K}), b({K, N});
            Twin<f32, 2> c({M, N});
            a.randomize(61, -1, 1);
            b.randomize(62, -1, 1);
            c.fill_byte(0);
            Config cfg = Config{{"BM", 64}, {"BN", 64}, {"BK", 32}}.num_warps(4).num_stages(stages).programs_per_sm(1).persistent().tile_group(group);
            if (!roles) cfg.warp_specialize(false);
            run_both(kern, tilejit::dim3(static_cast<uint32_t>(M / 64), static_cast<uint32_t>(N / 64)), cfg, 1e-4, a, b, c);
          }
        }
      }
    }
  }
}

TEST_CASE("gpu: a persistent jagged GEMM (a view made per tile, its descriptor rebuilt before each K loop) matches the interpreter") {
  // Each tile is one sequence's rows of A (at most BM of them) times a column block of B; the program walks the
  // tiles and makes the sequence's views in the tile loop, so the program rebuilds both descriptors before
  // each run of the pipelined K loop, while no load of the ring is in flight. Empty sequences are skipped (a view
  // of no rows has no descriptor).
  auto kern = tilejit::kernel("jagged_persistent_gemm", [](Tensor<i32, 1> offsets, Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c,
                                                           Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto seqs = offsets.size(0).to<i32>() - 1;
    auto n_tiles = (b.size(0).to<i32>() + BN - 1) / BN;
    for_range(program_id(0), seqs * n_tiles, num_programs(0), [&](Scalar<i32> t) {
      auto s = t / n_tiles, n = t % n_tiles * BN;
      auto start = load(offsets, s), end = load(offsets, s + 1);
      if_then(end > start, [&] {
        auto as = a.rows(start, end);
        auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
          return dot(descriptor_load(as, {0, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
        });
        descriptor_store(c.rows(start, end), {0, n}, acc);
      });
    });
  });
  const std::vector<int32_t> lengths = {5, 64, 0, 1, 64, 37, 0, 50};
  const int64_t seqs = static_cast<int64_t>(lengths.size()), N = 128;
  Twin<i32, 1> offsets({seqs + 1});
  offsets.host_data()[0] = 0;
  for (int64_t s = 0; s < seqs; ++s) offsets.host_data()[s + 1] = offsets.host_data()[s] + lengths[static_cast<size_t>(s)];
  const int64_t tokens = offsets.host_data()[seqs];
  for (int stages : {2, 3, 4})
    for (int64_t K : {96, 160, 256})  // 3, 5 and 8 K steps of 32
      for (uint32_t grid : {3u, 20u}) {  // 16 tiles: programs take several, or none
        SUBCASE((std::to_string(stages) + " stages, K " + std::to_string(K) + ", " + std::to_string(grid) + " programs").c_str()) {
          Twin<bf16, 2> a({tokens, K}), b({N, K});
          Twin<f32, 2> c({tokens, N});
          a.randomize(55, -1, 1);
          b.randomize(56, -1, 1);
          c.fill_byte(0);
          const Config cfg = Config{{"BM", 64}, {"BN", 64}, {"BK", 32}}.num_warps(4).num_stages(stages);
          run_both(kern, tilejit::dim3(grid), cfg, 1e-4, offsets, a, b, c);
        }
      }
}

TEST_CASE("gpu: a fused SwiGLU (reshape, where and sum of an accumulator) matches the interpreter") {
  // arange(0, 2) == 0 was taken to be constant over the pair of registers holding a gate and an up value, so both
  // read the gate's comparison: 80% of the outputs were wrong on the GPU.
  auto kern = tilejit::samples::swiglu_kernel();
  for (int stages : {2, 3, 4}) {
    SUBCASE(("M 256 N 256 K 512, 128x64x64 tiles, 8 warps, " + std::to_string(stages) + " stages").c_str()) {
      const int64_t M = 256, N = 256, K = 512;
      Twin<bf16, 2> x({M, K}), w({2 * N, K}), out({M, N});
      x.randomize(61, -1, 1);
      w.randomize(62, -1, 1);
      out.fill_byte(0);
      // bf16 out: the GPU's and the interpreter's f32 sums differ in order, which may move a result across a bf16
      // rounding boundary (one unit, 2^-8 relative); a wrong half of a pair is off by whole values.
      run_both(kern, tilejit::dim3(static_cast<uint32_t>(M / 128), static_cast<uint32_t>(N / 64)),
               Config{{"BM", 128}, {"BN", 64}, {"BK", 64}}.num_warps(8).num_stages(stages), 1e-2, x, w, out);
    }
  }
}

TEST_CASE("gpu: SwiGLU with two products per K step (one x tile, both kept in flight) matches the interpreter") {
  // Both accumulators stay in flight into the next K step: the wait for the previous step's two groups frees its
  // stage. K steps of every residue of the stage count, and K off the tile multiple (zero fill).
  auto kern = tilejit::samples::swiglu_two_products_kernel();
  for (int stages = 1; stages <= 4; ++stages) {
    for (int64_t K : {int64_t{64} * (stages + 1), int64_t{64} * (stages + 2) - 24}) {
      SUBCASE(("M 256 N 128 K " + std::to_string(K) + ", 128x64x64 tiles, 8 warps, " + std::to_string(stages) + " stages").c_str()) {
        const int64_t M = 256, N = 128;
        Twin<bf16, 2> x({M, K}), wg({N, K}), wu({N, K}), out({M, N});
        x.randomize(91, -1, 1);
        wg.randomize(92, -1, 1);
        wu.randomize(93, -1, 1);
        out.fill_byte(0);
        run_both(kern, tilejit::dim3(static_cast<uint32_t>(M / 128), static_cast<uint32_t>(N / 64)),
                 Config{{"BM", 128}, {"BN", 64}, {"BK", 64}}.num_warps(8).num_stages(stages), 1e-2, x, wg, wu, out);
      }
    }
  }
}

TEST_CASE("gpu: a K loop that scales its accumulator before each product (in place, kept in flight) matches the interpreter") {
  // acc = dot(a_k, b_k^T, acc * decay): the previous step's product is awaited right before the threads scale its
  // registers in place; each step's product stays in flight into the next.
  auto kern = tilejit::kernel("gemm_decayed_acc", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Scalar<f32> decay,
                                                     Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc * decay);
    });
    descriptor_store(c, {m, n}, acc);
  });
  for (int stages = 1; stages <= 4; ++stages) {
    for (int64_t K : {int64_t{64} * (stages + 2), int64_t{64} * (stages + 1) - 40}) {
      SUBCASE(("M 256 N 256 K " + std::to_string(K) + ", 128x128x64 tiles, 8 warps, " + std::to_string(stages) + " stages").c_str()) {
        const int64_t M = 256, N = 256;
        Twin<bf16, 2> a({M, K}), b({N, K});
        Twin<f32, 2> c({M, N});
        a.randomize(95, -1, 1);
        b.randomize(96, -1, 1);
        c.fill_byte(0);
        float decay = 0.75f;
        run_both(kern, tilejit::dim3(static_cast<uint32_t>(M / 128), static_cast<uint32_t>(N / 128)),
                 Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(stages), 1e-4, a, b, c, decay);
      }
    }
  }
}

TEST_CASE("gpu: a block-scaled GEMM (a TMA scale tile and a pointer load in the K loop) matches the interpreter") {
  // The scale tile feeds no dot: it rides in the ring of stages with the operand tiles and is read from the
  // current stage. K off the tile multiple: the last block's tiles are zero-filled past K.
  auto kern = tilejit::samples::block_scaled_matmul_kernel();
  for (int stages : {1, 2, 3, 4}) {
    for (int64_t K : {512, 456}) {
      SUBCASE(("M 256 N 256 K " + std::to_string(K) + ", 128x128x64 tiles, 8 warps, " + std::to_string(stages) + " stages").c_str()) {
        run_block_scaled(256, 256, K, Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(stages), 71);
      }
    }
  }
}

TEST_CASE("gpu: two sequential pipelined K loops sharing their ring or their shared memory match the interpreter") {
  // C = A @ B0^T + A @ B1^T with one K loop each. With the same tiles (BK2 = BK) the loops share one ring, the
  // second going on from the first one's ring position; with other tiles the second loop's rings take the first
  // loop's bytes (a barrier between them). The staged output tile takes them after both.
  auto kern = two_k_loops_kernel();
  for (int stages : {2, 3, 4})
    for (int64_t K : {320, 200, 64})
      for (int64_t bk2 : {64, 32}) {
      SUBCASE(("M 256 N 256 K " + std::to_string(K) + ", 128x128x64 tiles then BK " + std::to_string(bk2) + ", 8 warps, " +
               std::to_string(stages) + " stages").c_str()) {
        const int64_t M = 256, N = 256;
        Twin<bf16, 2> a({M, K}), b0({N, K}), b1({N, K}), c({M, N});
        a.randomize(81, -1, 1);
        b0.randomize(82, -1, 1);
        b1.randomize(83, -1, 1);
        c.fill_byte(0);
        run_both(kern, tilejit::dim3(static_cast<uint32_t>(M / 128), static_cast<uint32_t>(N / 128)),
                 Config{{"BM", 128}, {"BN", 128}, {"BK", 64}, {"BK2", bk2}}.num_warps(8).num_stages(stages), 1e-2, a, b0, b1, c);
      }
    }
}

TEST_CASE("gpu: sample 12's attention (dense and causal, two loops, rank-3 tiles, log-sum-exp) matches the interpreter") {
  // The unmasked blocks' loop, then the masked one (the causal diagonal, the last partial block): both rings in
  // the same bytes. Sequences of one partial block, of full blocks only, and with a partial last block.
  auto kern = tilejit::samples::attention_forward_kernel();
  for (auto [bm, bn, d, warps, stages] :
       {std::tuple{64, 64, 64, 4, 2}, {128, 64, 128, 8, 3}, {128, 32, 64, 8, 3}, {64, 64, 128, 4, 1}, {64, 128, 64, 4, 2}})
    for (int causal : {0, 1})
      for (int64_t S : {40, 256, 200})
        for (bool overlap : {false, true})
          SUBCASE(("S " + std::to_string(S) + " D " + std::to_string(d) + (causal ? " causal" : " dense") + ", BM " + std::to_string(bm) +
                   " BN " + std::to_string(bn) + ", " + std::to_string(warps) + " warps, " + std::to_string(stages) + " stages" +
                   (overlap ? ", overlap_products" : "")).c_str()) {
            const int64_t heads = 3;
            Twin<bf16, 3> q({heads, S, d}), k({heads, S, d}), v({heads, S, d}), o({heads, S, d});
            Twin<f32, 2> lse({heads, S});
            q.randomize(91, -1, 1);
            k.randomize(92, -1, 1);
            v.randomize(93, -1, 1);
            o.fill_byte(0);
            lse.fill_byte(0);
            float scale = 1.0f / std::sqrt(static_cast<float>(d));
            run_both(kern, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(S, bm)), static_cast<uint32_t>(heads)),
                     Config{{"BM", bm}, {"BN", bn}, {"D", d}, {"CAUSAL", causal}}.num_warps(warps).num_stages(stages).overlap_products(overlap),
                     2e-2, q, k, v, o, lse, scale);
          }
}

TEST_CASE("gpu: sample 12's attention with more queries than keys (rows that see no key) and fewer matches the interpreter") {
  // Causal masks aligned at the bottom right: with S_q > S_k the first S_q - S_k queries see no key (output 0, lse
  // +inf, no NaN: checked on the interpreter's copies, which the GPU's match), and whole query blocks run no loop
  // at all; with S_q < S_k every query sees S_k - S_q keys more. On one warpgroup, on two with tilejit's schedule
  // (128 x 128 blocks at D = 128: a producer warpgroup, the loops rotated, consumers taking turns), and pingpong.
  auto kern = tilejit::samples::attention_forward_kernel();
  struct Case {
    int64_t bm, bn, d;
    int warps, stages;
    bool pingpong;
  };
  for (const Case& c : {Case{64, 64, 64, 4, 2, false}, Case{128, 128, 128, 8, 2, false}, Case{128, 64, 128, 8, 3, true}})
    for (auto [sq, sk] : {std::pair<int64_t, int64_t>{200, 77}, {77, 200}, {300, 1}, {256, 128}})
      for (int causal : {0, 1})
        SUBCASE(("S_q " + std::to_string(sq) + " S_k " + std::to_string(sk) + " D " + std::to_string(c.d) + (causal ? " causal" : " dense") +
                 ", BM " + std::to_string(c.bm) + " BN " + std::to_string(c.bn) + ", " + std::to_string(c.warps) + " warps, " +
                 std::to_string(c.stages) + " stages" + (c.pingpong ? ", pingpong" : "")).c_str()) {
          const int64_t heads = 3;
          Twin<bf16, 3> q({heads, sq, c.d}), k({heads, sk, c.d}), v({heads, sk, c.d}), o({heads, sq, c.d});
          Twin<f32, 2> lse({heads, sq});
          q.randomize(94, -1, 1);
          k.randomize(95, -1, 1);
          v.randomize(96, -1, 1);
          o.fill_byte(0xff);  // NaN: every element must be written
          lse.fill_byte(0);
          Config cfg = Config{{"BM", c.bm}, {"BN", c.bn}, {"D", c.d}, {"CAUSAL", causal}}.num_warps(c.warps).num_stages(c.stages);
          if (c.pingpong) cfg.pingpong();
          float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
          run_both(kern, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(sq, c.bm)), static_cast<uint32_t>(heads)), cfg, 2e-2, q, k, v, o, lse,
                   scale);
          const int64_t unseen = causal ? std::max<int64_t>(sq - sk, 0) : 0;
          int64_t nan = 0, bad_unseen = 0;
          const auto os = o.host().strides();
          const auto ls = lse.host().strides();
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t r = 0; r < sq; ++r) {
              const float row_lse = lse.host_data()[h * ls[0] + r * ls[1]];
              nan += std::isnan(row_lse);
              if (r < unseen) bad_unseen += row_lse != std::numeric_limits<float>::infinity();
              for (int64_t col = 0; col < c.d; ++col) {
                const float x = static_cast<float>(o.host_data()[h * os[0] + r * os[1] + col * os[2]]);
                nan += std::isnan(x);
                if (r < unseen) bad_unseen += x != 0.0f;
              }
            }
          CHECK(nan == 0);
          CHECK(bad_unseen == 0);
        }
}

TEST_CASE("gpu: sample 14's attention backward (delta, dK/dV and dQ; tiles read by two products) matches the interpreter") {
  // dK/dV reads Q and dO, dQ reads K, each from one TMA tile by two products (once transposed); causal kernels run
  // the masked loop and then the unmasked one. Sequences of one partial block, of full blocks only, and with a
  // partial last block; lse and delta as the forward pass and step 1 would give them (any values: both sides
  // compute the same function of them); the queries and keys of different counts.
  auto delta_kernel = tilejit::samples::attention_backward_delta_kernel();
  const int64_t heads = 3;
  for (int64_t S : {40, 256, 200})
    for (int d : {64, 128}) {
      SUBCASE(("delta, S " + std::to_string(S) + " D " + std::to_string(d)).c_str()) {
        Twin<bf16, 3> o({heads, S, d}), dout({heads, S, d});
        Twin<f32, 2> delta({heads, S});
        o.randomize(111, -1, 1);
        dout.randomize(112, -1, 1);
        delta.fill_byte(0);
        run_both(delta_kernel, tilejit::dim3(static_cast<uint32_t>(cdiv(S, 64)), static_cast<uint32_t>(heads)),
                 Config{{"BM", 64}, {"D", d}}.num_warps(4), 1e-4, o, dout, delta);
      }
    }
  // (which kernel, BM, BN, D, warps, stages)
  for (auto [kernel, bm, bn, d, warps, stages] :
       {std::tuple{0, 64, 64, 64, 4, 2}, {0, 64, 128, 128, 8, 2}, {0, 32, 128, 64, 8, 3}, {0, 64, 64, 128, 4, 1},
        {1, 64, 64, 64, 4, 2}, {1, 128, 64, 128, 8, 2}, {1, 128, 32, 64, 8, 3}, {1, 64, 128, 64, 4, 1}})
    for (int causal : {0, 1})
      // S_q = S_k, then more queries than keys (causal: the first ones see none) and fewer.
      for (auto [S, Sk] : {std::pair<int64_t, int64_t>{40, 40}, {256, 256}, {200, 200}, {200, 77}, {77, 200}}) {
        SUBCASE(((kernel == 0 ? "dK/dV" : "dQ") + std::string(", S_q ") + std::to_string(S) + " S_k " + std::to_string(Sk) + " D " +
                 std::to_string(d) + (causal ? " causal" : " dense") + ", BM " + std::to_string(bm) + " BN " + std::to_string(bn) + ", " +
                 std::to_string(warps) + " warps, " + std::to_string(stages) + " stages").c_str()) {
          AttentionBackwardTensors t(heads, S, Sk, d, 121);
          const Config cfg = Config{{"BM", bm}, {"BN", bn}, {"D", d}, {"CAUSAL", causal}}.num_warps(warps).num_stages(stages);
          if (kernel == 0)
            t.run_dkdv(cfg);
          else
            t.run_dq(cfg);
        }
      }
}

TEST_CASE("gpu: sample 13's jagged HSTU attention (device-built views, an empty sequence, dense and causal) matches the interpreter") {
  auto kern = tilejit::samples::jagged_hstu_kernel();
  const std::vector<int32_t> lengths = {100, 257, 31, 0, 190, 64};
  const int64_t H = 2, seqs = static_cast<int64_t>(lengths.size());
  Twin<i32, 1> offsets({seqs + 1});
  offsets.host_data()[0] = 0;
  for (int64_t s = 0; s < seqs; ++s) offsets.host_data()[s + 1] = offsets.host_data()[s] + lengths[static_cast<size_t>(s)];
  const int64_t tokens = offsets.host_data()[seqs];
  for (auto [bm, bn, d, warps, stages] : {std::tuple{64, 64, 64, 4, 2}, {128, 64, 128, 8, 3}, {128, 32, 64, 8, 1}, {64, 128, 64, 4, 2}})
    for (int causal : {0, 1})
      for (bool overlap : {false, true})
        SUBCASE(("D " + std::to_string(d) + (causal ? " causal" : " dense") + ", BM " + std::to_string(bm) + " BN " + std::to_string(bn) + ", " +
                 std::to_string(warps) + " warps, " + std::to_string(stages) + " stages" + (overlap ? ", overlap_products" : "")).c_str()) {
          Twin<bf16, 2> q({tokens, H * d}), k({tokens, H * d}), v({tokens, H * d}), o({tokens, H * d});
          q.randomize(101, -1, 1);
          k.randomize(102, -1, 1);
          v.randomize(103, -1, 1);
          o.fill_byte(0x55);  // rows no program writes keep this on both sides
          Twin<f32, 2> rab({H, 1});  // BIAS 0: not read
          rab.fill_byte(0);
          float alpha = 1.0f / std::sqrt(static_cast<float>(d)), inv_max_len = 1.0f / 257;
          run_both(kern, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(257, bm)), static_cast<uint32_t>(seqs), static_cast<uint32_t>(H)),
                   Config{{"BM", bm}, {"BN", bn}, {"D", d}, {"CAUSAL", causal}, {"BIAS", 0}}.num_warps(warps).num_stages(stages).overlap_products(overlap),
                   2e-2, offsets, q, k, v, o, rab, alpha, inv_max_len);
        }
}

TEST_CASE("gpu: 8-bit M/N-major GEMMs at 2 stages with split-K bounds, a bias or a reducing store alone match the interpreter") {
  // Each ingredient of products seeds 1416 and 2893 (below) on its own, at the stage count where their combination
  // fails: loop bounds from program_id and minimum, a bias tile issued before the loop, a TMA reduce-max store.
  auto v1 = tilejit::kernel("diag_bounds", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<f32, 2> c, Scalar<i32> KS, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto k0 = program_id(2) * KS;
    auto k1 = minimum(k0 + KS, a.size(0).to<i32>());
    auto acc = for_range(k0, k1, BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {kk, m}, {BK, BM}).trans(), descriptor_load(b, {kk, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  auto v2 = tilejit::kernel("diag_bias", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<f32, 1> bias, Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(0).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {kk, m}, {BK, BM}).trans(), descriptor_load(b, {kk, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc + descriptor_load(bias, {m}, {BM}).expand_dims<1>());
  });
  auto v3 = tilejit::kernel("diag_redmax", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(0).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {kk, m}, {BK, BM}).trans(), descriptor_load(b, {kk, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>(), StoreReduce::max);
  });
  const Config cfg({{"BM", 128}, {"BN", 128}, {"BK", 128}}, 4, 2);
  Twin<f8e4m3, 2> a({288, 256}, {288, 1}), b({288, 330}, {368, 1});
  a.randomize(61, -1, 1);
  b.randomize(62, -1, 1);
  { INFO("v1 runtime bounds"); Twin<f32, 2> c({256, 336}); fill_bytes(0, c); int ks = 288; run_both(v1, tilejit::dim3(2, 3, 1), cfg, 0.1, a, b, c, ks); }
  { INFO("v2 bias"); Twin<f32, 1> bias({256}); bias.randomize(63, -1, 1); Twin<f32, 2> c({256, 336}); fill_bytes(0, c); run_both(v2, tilejit::dim3(2, 3), cfg, 0.1, a, b, bias, c); }
  { INFO("v3 reduce max"); Twin<bf16, 2> c({256, 336}); c.randomize(64, -2, 2); run_both(v3, tilejit::dim3(2, 3), cfg, 0.1, a, b, c); }
}

TEST_CASE("gpu: split-K GEMMs of 8-bit M/N-major operands (copied K-major) reduced into the output by TMA (products seeds 1416, 2893)") {
  // C = max(C, A^T B + bias) over K parts of KS from program_id(2), each part a pipelined K loop that starts at k0;
  // a is stored [K, M] and read .trans(), b stored [K, N]: both copied K-major by the threads (e4m3).
  // At 2 stages thread 0 ran the K loop apart from its warp (ptxas closed the prologue's divergent region after the
  // loop): the barrier after the K-major copies let wgmma read unfinished copies. A __syncwarp after the prologue.
  auto k = tilejit::kernel("splitk_e4m3", [](Tensor<f8e4m3, 2> a, Tensor<f8e4m3, 2> b, Tensor<f32, 1> bias, Tensor<bf16, 2> c,
                                             Scalar<i32> KS, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto k0 = program_id(2) * KS;
    auto k1 = minimum(k0 + KS, a.size(0).to<i32>());
    auto acc = for_range(k0, k1, BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {kk, m}, {BK, BM}).trans(), descriptor_load(b, {kk, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, (acc + descriptor_load(bias, {m}, {BM}).expand_dims<1>()).to<bf16>(), StoreReduce::max);
  });
  for (int stages = 1; stages <= 3; ++stages)
    for (int parts : {1, 3}) {
      CAPTURE(stages);
      CAPTURE(parts);
      Twin<f8e4m3, 2> a({288, 256}, {288, 1}), b({288, 330}, {368, 1});
      Twin<f32, 1> bias({256});
      Twin<bf16, 2> c({256, 336});
      a.randomize(61, -1, 1);
      b.randomize(62, -1, 1);
      bias.randomize(63, -1, 1);
      c.randomize(64, -2, 2);
      const int ks = parts == 1 ? 288 : 128;
      run_both(k, tilejit::dim3(2, 3, static_cast<uint32_t>(parts)), Config{{"BM", 128}, {"BN", 128}, {"BK", 128}}.num_warps(4).num_stages(stages),
               0.1, a, b, bias, c, ks);
    }
}

TEST_CASE("gpu: loops without products load one iteration ahead (prefetch_loads) and match the interpreter") {
  // The online softmax's reduction loop carries the next block of its row; the normalising loop (it stores) does not.
  // Rows of every residue of the block, shorter than one block, and with 1 stage (no prefetch) for comparison.
  auto online = tilejit::samples::softmax_online_kernel();
  auto combine = tilejit::samples::softmax_online_combine_kernel();
  auto hinted = tilejit::samples::softmax_online_evict_kernel();  // with cache hints: the same results
  for (int64_t n : {1, 700, 1024, 3000, 4096, 5000}) {
    for (int stages : {0, 1}) {
      for (int warps : {4, 8}) {
        SUBCASE(("online softmax, n " + std::to_string(n) + ", BN 1024, " + std::to_string(warps) + " warps, stages " +
                 (stages ? std::to_string(stages) : std::string("auto"))).c_str()) {
          const int64_t rows = 5;
          Twin<f32, 2> x({rows, n}), y({rows, n}), y2({rows, n});
          x.randomize(71, -8, 8);
          y.fill_byte(0);
          y2.fill_byte(0);
          const Config cfg = Config{{"BN", 1024}}.num_warps(warps).num_stages(stages);
          run_both(online, tilejit::dim3(static_cast<uint32_t>(rows)), cfg, 1e-5, x, y);
          run_both(combine, tilejit::dim3(static_cast<uint32_t>(rows)), cfg, 1e-5, x, y2);
          run_both(hinted, tilejit::dim3(static_cast<uint32_t>(rows)), cfg, 1e-5, x, y);
          Twin<f32, 2> z({rows, n}), z2({rows, n});
          z.randomize(74, -8, 8);
          z2.randomize(74, -8, 8);
          run_both(online, tilejit::dim3(static_cast<uint32_t>(rows)), cfg, 1e-5, z, z);  // in place: y = x
          run_both(hinted, tilejit::dim3(static_cast<uint32_t>(rows)), cfg, 1e-5, z2, z2);
        }
      }
    }
  }
  // Unmasked block and scalar loads: the prefetch past the last block must read nothing (x holds exactly the blocks).
  auto sum_blocks = tilejit::kernel("sum_blocks_ahead", [](Tensor<f32, 1> x, Tensor<f32, 1> w, Tensor<f32, 1> out, Scalar<i32> lo,
                                                           Scalar<i32> hi, Scalar<i32> step) {
    auto acc = for_range(lo, hi, step, zeros<f32>({256}), [&](Scalar<i32> i, Value<f32, 1> a) {
      return a + load(x, i * 256 + arange(0, 256)) * load(w, i);
    });
    store(out, program_id(0) * 256 + arange(0, 256), acc);
  });
  const int ranges[][3] = {{0, 9, 1}, {0, 9, 2}, {1, 9, 3}, {4, 4, 1}, {0, 1, 1}};
  for (const auto& r : ranges) {
    SUBCASE(("unmasked blocks [" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ") step " + std::to_string(r[2])).c_str()) {
      Twin<f32, 1> x({9 * 256}), w({9}), out({2 * 256});
      x.randomize(72, -1, 1);
      w.randomize(73, -1, 1);
      out.fill_byte(0);
      run_both(sum_blocks, tilejit::dim3(2), Config{}.num_warps(2), 1e-5, x, w, out, r[0], r[1], r[2]);
    }
  }
}

TEST_CASE("gpu: prefetched loads in a loop nest and in a loop inside an if match the interpreter") {
  // Both loops of the nest carry their next loads (the outer one a scalar per row, the inner one a block); the
  // loop in the else branch starts from the nest's result. Row counts of 0, 1 and 3, row lengths around the block.
  auto k = tilejit::kernel("nest_ahead", [](Tensor<f32, 2> x, Tensor<f32, 1> out, Scalar<i32> rows, Scalar<i32> flag) {
    auto n = x.size(1).to<i32>();
    auto cols = arange(0, 128);
    auto total = for_range(0, rows, 1, zeros<f32>({128}), [&](Scalar<i32> r, Value<f32, 1> t) {
      auto scale = load(x, r.to<i64>() * x.stride(0));
      auto inner = for_range(0, n, 128, zeros<f32>({128}), [&](Scalar<i32> c, Value<f32, 1> a) {
        auto cc = c + cols;
        return a + load(x, r.to<i64>() * x.stride(0) + cc, cc < n);
      });
      return t + inner * scale;
    });
    auto picked = if_else(flag > 0, [&] { return total; }, [&] {
      return for_range(0, n, 128, total, [&](Scalar<i32> c, Value<f32, 1> a) {
        auto cc = c + cols;
        return maximum(a, load(x, cc, cc < n, -1.0f));
      });
    });
    store(out, program_id(0) * 128 + cols, picked);
  });
  for (int rows : {0, 1, 3})
    for (int64_t n : {1, 127, 128, 129, 384}) {
      SUBCASE(("rows " + std::to_string(rows) + ", n " + std::to_string(n)).c_str()) {
        Twin<f32, 2> x({3, n});
        Twin<f32, 1> out0({2 * 128}), out1({2 * 128});
        x.randomize(74, -1, 1);
        out0.fill_byte(0);
        out1.fill_byte(0);
        int r = rows, off = 0, on = 1;
        run_both(k, tilejit::dim3(2), Config{}.num_warps(2), 1e-5, x, out0, r, off);
        run_both(k, tilejit::dim3(2), Config{}.num_warps(2), 1e-5, x, out1, r, on);
      }
    }
}

TEST_CASE("gpu: the MoE grouped GEMM of sample 11 (a schedule built from expert offsets, a jagged store) matches the interpreter") {
  // Experts with no rows, one row, and rows that end inside a tile; N not a multiple of BN (the last column tile
  // reads the next expert's weights, which the store clips); K of 5 steps of 64 and a partial one.
  auto schedule = tilejit::samples::moe_tile_schedule_kernel();
  auto matmul = tilejit::samples::moe_grouped_matmul_kernel();
  const int32_t rows_per_expert[] = {70, 0, 1, 130, 64, 35, 0, 200};
  const int64_t E = 8, N = 192, K = 328;
  Twin<i32, 1> offsets({E + 1});
  offsets.host_data()[0] = 0;
  for (int64_t e = 0; e < E; ++e) offsets.host_data()[e + 1] = offsets.host_data()[e] + rows_per_expert[e];
  const int64_t T = offsets.host_data()[E];
  struct Case {
    int64_t bm, bn;
    int warps, stages;
    bool roles;
    bool persistent = false;  // Config::persistent: the slots walked by fewer programs, the K loop in an if in the tile loop
  };
  for (const Case& c : {Case{64, 128, 4, 2, false}, Case{64, 128, 4, 3, false}, Case{64, 64, 4, 4, false}, Case{128, 128, 8, 3, false},
                        Case{128, 256, 8, 4, false}, Case{128, 128, 8, 3, true}, Case{64, 128, 4, 2, true}, Case{128, 256, 8, 4, true},
                        Case{128, 256, 8, 3, false, true}, Case{64, 128, 4, 3, false, true}, Case{128, 128, 8, 3, true, true}}) {
    SUBCASE((std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x64 tiles, " + std::to_string(c.warps) + " warps, " +
             std::to_string(c.stages) + " stages" + (c.roles ? ", warp roles (the producer takes the if around the K loop too)" : "") +
             (c.persistent ? ", persistent programs" : ""))
                .c_str()) {
      const int64_t slots = cdiv(T, c.bm) + E;
      Twin<i32, 1> tile_rows({slots}), tile_ends({slots}), tile_experts({slots});
      fill_bytes(0x5a, tile_rows, tile_ends, tile_experts);
      run_both(schedule, tilejit::dim3(static_cast<uint32_t>(cdiv(slots, 8))), Config{{"BM", c.bm}, {"EP", 8}, {"BJ", 8}}, 0, offsets,
               tile_rows, tile_ends, tile_experts);
      Twin<bf16, 2> x({T, K}), w({E * N, K}), y({T, N});
      x.randomize(301, -1, 1);
      w.randomize(302, -1, 1);
      y.fill_byte(0x3f);
      const Config cfg = Config{{"BM", c.bm}, {"BN", c.bn}, {"BK", 64}, {"GM", 4}}.num_warps(c.warps).num_stages(c.stages).warp_specialize(c.roles).persistent(c.persistent);
      run_both(matmul, tilejit::dim3(static_cast<uint32_t>(slots * cdiv(N, c.bn))), cfg, 1e-2, x, w, y, tile_rows, tile_ends,
               tile_experts);
    }
  }
}
