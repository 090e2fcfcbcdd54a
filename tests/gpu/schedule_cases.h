// Kernels and runs that several GPU test files share: the tutorial GEMM, attention over a few heads, the attention backward pass's
// kernels, the block-scaled GEMM, and a kernel with two sequential K loops.
#pragma once

#include <cmath>
#include <cstdint>

#include "../../samples/sample_kernels.h"
#include "gpu_harness.h"

namespace gpu_test {

/// The tutorial GEMM with operands of type T, B stored [K, N], f32 C, one output tile per program at
/// (program_id(0), program_id(1)).
template <class T>
auto tutorial_gemm(const char* name) {
  return tilejit::kernel(name, [](Tensor<T, 2> a, Tensor<T, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).template to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
}

/// samples::attention_kernel over `heads` heads of `S` keys of width `d` (BM of `config` divides S), against the
/// interpreter. P's bf16 rounding may differ by a unit where the sums' order moves S, hence 2e-2.
inline void run_attention(int64_t heads, int64_t S, int64_t d, const tilejit::Config& config, uint32_t seed) {
  auto kern = tilejit::samples::attention_kernel();
  Twin<bf16, 2> q({heads * S, d}), k({heads * S, d}), v({heads * S, d}), o({heads * S, d});
  q.randomize(seed, -1, 1);
  k.randomize(seed + 1, -1, 1);
  v.randomize(seed + 2, -1, 1);
  o.fill_byte(0);
  int32_t seq = static_cast<int32_t>(S);
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  run_both(kern, tilejit::dim3(static_cast<uint32_t>(S / config.get("BM")), static_cast<uint32_t>(heads)), config, 2e-2, q, k, v, o,
           seq, scale);
}

/// samples::attention_bhsd_kernel: the same loop over [heads, S, D] tensors with {1, BM, D} tiles.
inline void run_attention_bhsd(int64_t heads, int64_t S, int64_t d, const tilejit::Config& config, uint32_t seed) {
  auto kern = tilejit::samples::attention_bhsd_kernel();
  Twin<bf16, 3> q({heads, S, d}), k({heads, S, d}), v({heads, S, d}), o({heads, S, d});
  q.randomize(seed, -1, 1);
  k.randomize(seed + 1, -1, 1);
  v.randomize(seed + 2, -1, 1);
  o.fill_byte(0);
  float scale = 1.0f / std::sqrt(static_cast<float>(d));
  run_both(kern, tilejit::dim3(static_cast<uint32_t>(S / config.get("BM")), static_cast<uint32_t>(heads)), config, 2e-2, q, k, v, o,
           scale);
}

/// samples::block_scaled_matmul_kernel on M x N x K (tiles of `config`, BK 64), against the interpreter.
inline void run_block_scaled(int64_t M, int64_t N, int64_t K, const tilejit::Config& config, uint32_t seed) {
  auto kern = tilejit::samples::block_scaled_matmul_kernel();
  const int64_t blocks = tilejit::cdiv(K, 64);
  Twin<bf16, 2> a({M, K}), b({N, K});
  Twin<f32, 2> sa({blocks, M}), sb({blocks, N}), c({M, N});
  a.randomize(seed, -1, 1);
  b.randomize(seed + 1, -1, 1);
  sa.randomize(seed + 2, 0.5, 2);
  sb.randomize(seed + 3, 0.5, 2);
  c.fill_byte(0);
  run_both(kern, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(M, config.get("BM"))), static_cast<uint32_t>(tilejit::cdiv(N, config.get("BN")))),
           config, 1e-4, a, b, sa, sb, c);
}

/// The tensors of sample 14's backward kernels over `heads` heads of Sq queries and Sk keys of width d: q, k, v and
/// do in [-1, 1], lse in [0, 2] and delta in [-1, 1] (any values: the GPU and the interpreter compute the same
/// function of them), and zeroed outputs: g1 of q's shape (dQ, or the forward pass's o), dk and dv of k's.
struct AttentionBackwardTensors {
  AttentionBackwardTensors(int64_t heads, int64_t S, int64_t d, uint32_t seed) : AttentionBackwardTensors(heads, S, S, d, seed) {}
  AttentionBackwardTensors(int64_t heads, int64_t Sq, int64_t Sk, int64_t d, uint32_t seed)
      : heads(heads), S(Sq), Sk(Sk), q({heads, Sq, d}), k({heads, Sk, d}), v({heads, Sk, d}), dout({heads, Sq, d}), g1({heads, Sq, d}),
        dk({heads, Sk, d}), dv({heads, Sk, d}), lse({heads, Sq}), delta({heads, Sq}), scale(1.0f / std::sqrt(static_cast<float>(d))) {
    q.randomize(seed, -1, 1);
    k.randomize(seed + 1, -1, 1);
    v.randomize(seed + 2, -1, 1);
    dout.randomize(seed + 3, -1, 1);
    lse.randomize(seed + 4, 0, 2);
    delta.randomize(seed + 5, -1, 1);
    g1.fill_byte(0);
    dk.fill_byte(0);
    dv.fill_byte(0);
  }
  /// One program per `block` queries of every head.
  tilejit::dim3 grid(int64_t block) const { return grid(block, S); }
  /// One program per `block` of `rows` rows of every head.
  tilejit::dim3 grid(int64_t block, int64_t rows) const {
    return tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(rows, block)), static_cast<uint32_t>(heads));
  }
  /// samples::attention_backward_dkdv_kernel (programs per BN keys) against the interpreter.
  void run_dkdv(const tilejit::Config& c) {
    run_both(tilejit::samples::attention_backward_dkdv_kernel(), grid(c.get("BN"), Sk), c, 2e-2, q, k, v, dout, lse, delta, dk, dv, scale);
  }
  /// samples::attention_backward_dq_kernel (programs per BM queries) against the interpreter.
  void run_dq(const tilejit::Config& c) {
    run_both(tilejit::samples::attention_backward_dq_kernel(), grid(c.get("BM")), c, 2e-2, q, k, v, dout, lse, delta, g1, scale);
  }

  int64_t heads, S, Sk;
  Twin<bf16, 3> q, k, v, dout, g1, dk, dv;
  Twin<f32, 2> lse, delta;
  float scale;
};

/// C = A @ B0^T + A @ B1^T with one K loop each (bf16 out): two sequential pipelined loops, the first over K in
/// steps of BK, the second in steps of BK2. With BK2 = BK both loops load the same tiles and share one ring.
inline auto two_k_loops_kernel() {
  using namespace tilejit::dsl;
  return tilejit::kernel("two_loops", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b0, Tensor<bf16, 2> b1, Tensor<bf16, 2> c, Meta<"BM"> BM,
                                         Meta<"BN"> BN, Meta<"BK"> BK, Meta<"BK2"> BK2) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto loop = [&](const Tensor<bf16, 2>& b, int64_t bk) {
      return for_range(0, a.size(1).to<i32>(), bk, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {m, k}, {BM, bk}), descriptor_load(b, {n, k}, {BN, bk}).trans(), acc);
      });
    };
    auto first = loop(b0, BK);
    auto second = loop(b1, BK2);
    descriptor_store(c, {m, n}, (first + second).to<bf16>());
  });
}

}  // namespace gpu_test
