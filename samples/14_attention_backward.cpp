// Sample 14: the attention backward pass, dQ, dK and dV of o = softmax(q k^T scale) v over [B * H, S, D] tensors,
// dense and causal, as FlashAttention-2 computes them: from the forward pass's output and log-sum-exp (sample 12),
// in three kernels (sample_kernels.h):
//   1. attention_backward_delta_kernel: delta = rowsum(o * do), one value per query;
//   2. attention_backward_dkdv_kernel:  per block of keys, dK and dV over every query block that sees them;
//   3. attention_backward_dq_kernel:    per block of queries, dQ over every key block they see.
// Every product runs on the tensor cores from TMA tiles or registers, and the probabilities are rebuilt from the
// log-sum-exp instead of being stored. The sequences are not multiples of the tiles (64): 200 queries over 200
// keys, then 200 over 77 (causal: the first 123 queries see no key, their output is 0, their lse +inf, and their
// gradients 0) and 77 over 200 (each query sees 123 keys more than its index). The gradients are checked against a
// plain C++ loop in double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

namespace {

using Bf16Buffer = SampleBuffer<tilejit::bfloat16>;

struct Gradients {
  double dq = 0, dk = 0, dv = 0;  // relative root-mean-square errors
};

/// The gradients in double precision, from the same q, k, v and do (Sq queries, Sk keys), and their errors in dq,
/// dk and dv.
Gradients check(const Bf16Buffer& q, const Bf16Buffer& k, const Bf16Buffer& v, const Bf16Buffer& dout, const Bf16Buffer& dq,
                const Bf16Buffer& dk, const Bf16Buffer& dv, int64_t heads, int64_t Sq, int64_t Sk, int64_t D, bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto idx = [&](int64_t rows, int64_t h, int64_t r, int64_t c) { return static_cast<size_t>((h * rows + r) * D + c); };
  auto atq = [&](const Bf16Buffer& t, int64_t h, int64_t r, int64_t c) { return static_cast<double>(static_cast<float>(t[idx(Sq, h, r, c)])); };
  auto atk = [&](const Bf16Buffer& t, int64_t h, int64_t r, int64_t c) { return static_cast<double>(static_cast<float>(t[idx(Sk, h, r, c)])); };
  std::vector<double> want_dq(static_cast<size_t>(heads * Sq * D)), want_dk(static_cast<size_t>(heads * Sk * D)), want_dv(want_dk.size());
  std::vector<double> p(static_cast<size_t>(Sq * Sk)), o(static_cast<size_t>(Sq * D));
  for (int64_t h = 0; h < heads; ++h) {
    // P (zero where causal hides a key; a row that sees none is all zeros) and O = P V.
    for (int64_t r = 0; r < Sq; ++r) {
      const int64_t keys = causal ? std::clamp<int64_t>(r + Sk - Sq + 1, 0, Sk) : Sk;
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < Sk; ++j) {
        double d = 0;
        if (j < keys)
          for (int64_t c = 0; c < D; ++c) d += atq(q, h, r, c) * atk(k, h, j, c);
        p[static_cast<size_t>(r * Sk + j)] = d * scale;
        if (j < keys) mx = std::max(mx, d * scale);
      }
      for (int64_t j = 0; j < Sk; ++j) {
        double& x = p[static_cast<size_t>(r * Sk + j)];
        x = j < keys ? std::exp(x - mx) : 0.0;
        total += x;
      }
      for (int64_t j = 0; j < Sk; ++j) p[static_cast<size_t>(r * Sk + j)] /= keys ? total : 1.0;
      for (int64_t c = 0; c < D; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j) acc += p[static_cast<size_t>(r * Sk + j)] * atk(v, h, j, c);
        o[static_cast<size_t>(r * D + c)] = acc;
      }
    }
    for (int64_t r = 0; r < Sq; ++r) {
      double delta = 0;
      for (int64_t c = 0; c < D; ++c) delta += atq(dout, h, r, c) * o[static_cast<size_t>(r * D + c)];
      for (int64_t j = 0; j < Sk; ++j) {
        const double pj = p[static_cast<size_t>(r * Sk + j)];
        if (pj == 0) continue;
        double dp = 0;
        for (int64_t c = 0; c < D; ++c) dp += atq(dout, h, r, c) * atk(v, h, j, c);
        const double ds = pj * (dp - delta) * scale;
        for (int64_t c = 0; c < D; ++c) {
          want_dv[idx(Sk, h, j, c)] += pj * atq(dout, h, r, c);
          want_dq[idx(Sq, h, r, c)] += ds * atk(k, h, j, c);
          want_dk[idx(Sk, h, j, c)] += ds * atq(q, h, r, c);
        }
      }
    }
  }
  // A NaN anywhere makes the error NaN, which fails every comparison with a bound.
  auto error = [&](const Bf16Buffer& got, const std::vector<double>& want) {
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const double d = static_cast<double>(static_cast<float>(got[i])) - want[i];
      err2 += d * d;
      ref2 += want[i] * want[i];
    }
    return std::sqrt(err2 / ref2);
  };
  return Gradients{error(dq, want_dq), error(dk, want_dk), error(dv, want_dv)};
}

}  // namespace

int main() try {
  auto forward = attention_forward_kernel();
  auto delta_kernel = attention_backward_delta_kernel();
  auto dkdv_kernel = attention_backward_dkdv_kernel();
  auto dq_kernel = attention_backward_dq_kernel();
  const int64_t B = 2, H = 2, D = 64, heads = B * H;
  using T3 = tilejit::TensorView<bf16, 3>;
  using T2 = tilejit::TensorView<f32, 2>;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto heads32 = static_cast<uint32_t>(heads);
  // Uniform in [-2, 2): scores spread enough that every row's softmax has large and small probabilities.
  uint32_t state = 12345;
  auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) * (4.0f / 16777216.0f) - 2.0f;
  };
  bool ok = true;
  for (auto [Sq, Sk] : {std::pair<int64_t, int64_t>{200, 200}, {200, 77}, {77, 200}}) {
    const size_t nq = static_cast<size_t>(heads * Sq * D), nk = static_cast<size_t>(heads * Sk * D);
    Bf16Buffer q(nq), o(nq), dout(nq), dq(nq), k(nk), v(nk), dk(nk), dv(nk);
    // lse and delta: one row of Sq floats per head, each row starting 16-byte aligned (the dK/dV kernel reads
    // them as TMA tiles, whose row strides must be multiples of 16 bytes).
    const int64_t row = (Sq + 3) / 4 * 4;
    SampleBuffer<float> lse(static_cast<size_t>(heads * row)), delta(static_cast<size_t>(heads * row));
    auto t2 = [&](SampleBuffer<float>& b) { return T2(b.kernel_ptr(), {heads, Sq}, {row, 1}); };
    for (auto* b : {&q, &k, &v, &dout}) {
      for (size_t i = 0; i < b->size(); ++i) (*b)[i] = tilejit::bfloat16(uniform());
      b->to_device();
    }
    auto tq = [&](Bf16Buffer& b) { return T3(b.kernel_ptr(), {heads, Sq, D}); };
    auto tk = [&](Bf16Buffer& b) { return T3(b.kernel_ptr(), {heads, Sk, D}); };
    const auto query_blocks = static_cast<uint32_t>(tilejit::cdiv(Sq, 64)), key_blocks = static_cast<uint32_t>(tilejit::cdiv(Sk, 64));
    for (int causal : {0, 1}) {
      // 64 x 64 blocks on one warpgroup (4 warps), TMA tiles in a ring of 2 stages.
      const tilejit::Config config =
          tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", D}, {"CAUSAL", causal}}.num_warps(4).num_stages(2);
      forward.launch(nullptr, tilejit::dim3(query_blocks, heads32), config, tq(q), tk(k), tk(v), tq(o), t2(lse),
                     scale);
      delta_kernel.launch(nullptr, tilejit::dim3(query_blocks, heads32), tilejit::Config{{"BM", 64}, {"D", D}}.num_warps(4), tq(o),
                          tq(dout), t2(delta));
      dkdv_kernel.launch(nullptr, tilejit::dim3(key_blocks, heads32), config, tq(q), tk(k), tk(v), tq(dout), t2(lse),
                         t2(delta), tk(dk), tk(dv), scale);
      dq_kernel.launch(nullptr, tilejit::dim3(query_blocks, heads32), config, tq(q), tk(k), tk(v), tq(dout), t2(lse),
                       t2(delta), tq(dq), scale);
      if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
      for (auto* b : {&dq, &dk, &dv}) b->to_host();
      const Gradients e = check(q, k, v, dout, dq, dk, dv, heads, Sq, Sk, D, causal != 0);
      // P, dS and the gradients are rounded to bf16 (2^-9 relative each), o too before delta is computed.
      const bool good = e.dq < 1e-2 && e.dk < 1e-2 && e.dv < 1e-2;
      std::printf("%s sample_14_attention_backward on %s: %s, B %lld x H %lld x S_q %lld x S_k %lld x D %lld, relative error of dq %.2e, dk "
                  "%.2e, dv %.2e\n",
                  good ? "PASS" : "FAIL", run_target().c_str(), causal ? "causal" : "dense", static_cast<long long>(B),
                  static_cast<long long>(H), static_cast<long long>(Sq), static_cast<long long>(Sk), static_cast<long long>(D), e.dq, e.dk,
                  e.dv);
      ok = ok && good;
    }
  }
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_14_attention_backward: %s\n", e.what());
  return 1;
}
