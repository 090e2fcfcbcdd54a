// Sample 14: the attention backward pass, dQ, dK and dV of o = softmax(q k^T scale) v over [B * H, S, D] tensors,
// dense and causal, as FlashAttention-2 computes them: from the forward pass's output and log-sum-exp (sample 12),
// in three kernels (sample_kernels.h):
//   1. attention_backward_delta_kernel: delta = rowsum(o * do), one value per query;
//   2. attention_backward_dkdv_kernel:  per block of keys, dK and dV over every query block that sees them;
//   3. attention_backward_dq_kernel:    per block of queries, dQ over every key block they see.
// Every product runs on the tensor cores from TMA tiles or registers, and the probabilities are rebuilt from the
// log-sum-exp instead of being stored. The sequence (200) is not a multiple of the tiles (64). The gradients are
// checked against a plain C++ loop in double precision.
#include <cmath>
#include <cstdio>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

namespace {

using Bf16Buffer = SampleBuffer<tilejit::bfloat16>;

struct Gradients {
  double dq = 0, dk = 0, dv = 0;  // relative root-mean-square errors
};

/// The gradients in double precision, from the same q, k, v and do, and their errors in dq, dk and dv.
Gradients check(const Bf16Buffer& q, const Bf16Buffer& k, const Bf16Buffer& v, const Bf16Buffer& dout, const Bf16Buffer& dq,
                const Bf16Buffer& dk, const Bf16Buffer& dv, int64_t heads, int64_t S, int64_t D, bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto idx = [&](int64_t h, int64_t r, int64_t c) { return static_cast<size_t>((h * S + r) * D + c); };
  auto at = [&](const Bf16Buffer& t, int64_t h, int64_t r, int64_t c) { return static_cast<double>(static_cast<float>(t[idx(h, r, c)])); };
  const size_t n = static_cast<size_t>(heads * S * D);
  std::vector<double> want_dq(n), want_dk(n), want_dv(n);
  std::vector<double> p(static_cast<size_t>(S * S)), o(static_cast<size_t>(S * D));
  for (int64_t h = 0; h < heads; ++h) {
    // P (zero where causal hides a key) and O = P V.
    for (int64_t r = 0; r < S; ++r) {
      const int64_t keys = causal ? r + 1 : S;
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        if (j < keys)
          for (int64_t c = 0; c < D; ++c) d += at(q, h, r, c) * at(k, h, j, c);
        p[static_cast<size_t>(r * S + j)] = d * scale;
        if (j < keys) mx = std::max(mx, d * scale);
      }
      for (int64_t j = 0; j < S; ++j) {
        double& x = p[static_cast<size_t>(r * S + j)];
        x = j < keys ? std::exp(x - mx) : 0.0;
        total += x;
      }
      for (int64_t j = 0; j < S; ++j) p[static_cast<size_t>(r * S + j)] /= total;
      for (int64_t c = 0; c < D; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < keys; ++j) acc += p[static_cast<size_t>(r * S + j)] * at(v, h, j, c);
        o[static_cast<size_t>(r * D + c)] = acc;
      }
    }
    for (int64_t r = 0; r < S; ++r) {
      double delta = 0;
      for (int64_t c = 0; c < D; ++c) delta += at(dout, h, r, c) * o[static_cast<size_t>(r * D + c)];
      for (int64_t j = 0; j < S; ++j) {
        const double pj = p[static_cast<size_t>(r * S + j)];
        if (pj == 0) continue;
        double dp = 0;
        for (int64_t c = 0; c < D; ++c) dp += at(dout, h, r, c) * at(v, h, j, c);
        const double ds = pj * (dp - delta) * scale;
        for (int64_t c = 0; c < D; ++c) {
          want_dv[idx(h, j, c)] += pj * at(dout, h, r, c);
          want_dq[idx(h, r, c)] += ds * at(k, h, j, c);
          want_dk[idx(h, j, c)] += ds * at(q, h, r, c);
        }
      }
    }
  }
  auto error = [&](const Bf16Buffer& got, const std::vector<double>& want) {
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; ++i) {
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
  const int64_t B = 2, H = 2, S = 200, D = 64, heads = B * H;
  const size_t n = static_cast<size_t>(heads * S * D);
  Bf16Buffer q(n), k(n), v(n), o(n), dout(n), dq(n), dk(n), dv(n);
  SampleBuffer<float> lse(static_cast<size_t>(heads * S)), delta(static_cast<size_t>(heads * S));
  // Uniform in [-2, 2): scores spread enough that every row's softmax has large and small probabilities.
  uint32_t state = 12345;
  auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) * (4.0f / 16777216.0f) - 2.0f;
  };
  for (auto* b : {&q, &k, &v, &dout})
    for (size_t i = 0; i < n; ++i) (*b)[i] = tilejit::bfloat16(uniform());
  for (auto* b : {&q, &k, &v, &dout}) b->to_device();
  using T3 = tilejit::TensorView<bf16, 3>;
  using T2 = tilejit::TensorView<f32, 2>;
  auto t3 = [&](Bf16Buffer& b) { return T3(b.kernel_ptr(), {heads, S, D}); };
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const auto heads32 = static_cast<uint32_t>(heads);
  const auto blocks = static_cast<uint32_t>(tilejit::cdiv(S, 64));
  bool ok = true;
  for (int causal : {0, 1}) {
    // 64 x 64 blocks on one warpgroup (4 warps), TMA tiles in a ring of 2 stages.
    const tilejit::Config config =
        tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", D}, {"CAUSAL", causal}}.num_warps(4).num_stages(2);
    forward.launch(nullptr, tilejit::dim3(blocks, heads32), config, t3(q), t3(k), t3(v), t3(o),
                   T2(lse.kernel_ptr(), {heads, S}), scale);
    delta_kernel.launch(nullptr, tilejit::dim3(blocks, heads32), tilejit::Config{{"BM", 64}, {"D", D}}.num_warps(4), t3(o),
                        t3(dout), T2(delta.kernel_ptr(), {heads, S}));
    dkdv_kernel.launch(nullptr, tilejit::dim3(blocks, heads32), config, t3(q), t3(k), t3(v), t3(dout),
                       T2(lse.kernel_ptr(), {heads, S}), T2(delta.kernel_ptr(), {heads, S}), t3(dk), t3(dv), scale);
    dq_kernel.launch(nullptr, tilejit::dim3(blocks, heads32), config, t3(q), t3(k), t3(v), t3(dout),
                     T2(lse.kernel_ptr(), {heads, S}), T2(delta.kernel_ptr(), {heads, S}), t3(dq), scale);
    if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
    for (auto* b : {&dq, &dk, &dv}) b->to_host();
    const Gradients e = check(q, k, v, dout, dq, dk, dv, heads, S, D, causal != 0);
    // P, dS and the gradients are rounded to bf16 (2^-9 relative each), o too before delta is computed.
    const bool good = e.dq < 1e-2 && e.dk < 1e-2 && e.dv < 1e-2;
    std::printf("%s sample_14_attention_backward on %s: %s, B %lld x H %lld x S %lld x D %lld, relative error of dq %.2e, dk %.2e, dv %.2e\n",
                good ? "PASS" : "FAIL", run_target().c_str(), causal ? "causal" : "dense", static_cast<long long>(B),
                static_cast<long long>(H), static_cast<long long>(S), static_cast<long long>(D), e.dq, e.dk, e.dv);
    ok = ok && good;
  }
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_14_attention_backward: %s\n", e.what());
  return 1;
}
