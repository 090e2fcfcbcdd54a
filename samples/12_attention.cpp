// Sample 12: attention forward, o = softmax(q k^T / sqrt(D)) v, dense and causal, over [B * H, S, D] tensors,
// with the log-sum-exp of every row (what a backward pass needs).
//
// The kernel is attention_forward_kernel() in sample_kernels.h, written as Triton's tutorial writes it: tiles of
// the rank-3 tensors loaded as {1, BM, D} boxes and reshaped to [BM, D], S = Q K^T and O += P V on the tensor
// cores (P from registers), the online softmax in base 2 between them, and the keys visited in two loops: the
// blocks no mask touches, then the masked ones (the causal diagonal, the last partial block). On a Hopper GPU the
// K and V tiles of both loops stream through one ring of TMA buffers; without one, the CPU interpreter runs the
// same kernel. The sequences are not multiples of the tiles (64): 200 queries over 200 keys, then 200 queries over
// 77 keys, where the causal mask (aligned at the bottom right, as FlashAttention's) leaves the first 123 queries no
// key at all: their output is 0 and their log-sum-exp +inf. Both results are checked against a plain C++ loop in
// double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

namespace {

struct Error {
  double out = 0, lse = 0;
  int64_t wrong = 0;  // NaNs, and rows without keys whose o is not 0 or whose lse is not +inf
};

/// The largest relative error of o (as a root mean square over all rows) and absolute error of lse; a row that
/// sees no key must have o = 0 and lse = +inf, and no value may be NaN (counted in `wrong`).
Error check(const SampleBuffer<tilejit::bfloat16>& q, const SampleBuffer<tilejit::bfloat16>& k, const SampleBuffer<tilejit::bfloat16>& v,
            const SampleBuffer<tilejit::bfloat16>& o, const SampleBuffer<float>& lse, int64_t heads, int64_t Sq, int64_t Sk, int64_t D,
            bool causal) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto at = [&](const SampleBuffer<tilejit::bfloat16>& t, int64_t rows, int64_t h, int64_t r, int64_t c) {
    return static_cast<double>(static_cast<float>(t[static_cast<size_t>((h * rows + r) * D + c)]));
  };
  Error e;
  double err2 = 0, ref2 = 0;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < Sq; ++r) {
      // Query r sees the keys up to r + Sk - Sq when causal.
      const int64_t keys = causal ? std::clamp<int64_t>(r + Sk - Sq + 1, 0, Sk) : Sk;
      const double got_lse = lse[static_cast<size_t>(h * Sq + r)];
      if (keys == 0) {
        e.wrong += got_lse != INFINITY;
        for (int64_t c = 0; c < D; ++c) e.wrong += at(o, Sq, h, r, c) != 0.0;
        continue;
      }
      std::vector<double> s(static_cast<size_t>(keys));
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < keys; ++j) {
        double d = 0;
        for (int64_t c = 0; c < D; ++c) d += at(q, Sq, h, r, c) * at(k, Sk, h, j, c);
        s[static_cast<size_t>(j)] = d * scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      for (auto& x : s) total += (x = std::exp(x - mx));
      e.lse = std::max(e.lse, std::abs(got_lse - (mx + std::log(total))));
      e.wrong += std::isnan(got_lse);
      for (int64_t c = 0; c < D; ++c) {
        double want = 0;
        for (int64_t j = 0; j < keys; ++j) want += s[static_cast<size_t>(j)] * at(v, Sk, h, j, c);
        want /= total;
        const double got = at(o, Sq, h, r, c);
        e.wrong += std::isnan(got);
        err2 += (got - want) * (got - want);
        ref2 += want * want;
      }
    }
  e.out = std::sqrt(err2 / ref2);
  return e;
}

}  // namespace

int main() try {
  auto attention = attention_forward_kernel();
  const int64_t B = 2, H = 2, D = 64, heads = B * H;
  using T3 = tilejit::TensorView<bf16, 3>;
  bool ok = true;
  for (auto [Sq, Sk] : {std::pair<int64_t, int64_t>{200, 200}, {200, 77}}) {
    const size_t nq = static_cast<size_t>(heads * Sq * D), nk = static_cast<size_t>(heads * Sk * D);
    SampleBuffer<tilejit::bfloat16> q(nq), k(nk), v(nk), o(nq);
    SampleBuffer<float> lse(static_cast<size_t>(heads * Sq));
    for (size_t i = 0; i < nq; ++i) q[i] = tilejit::bfloat16(std::sin(0.37f * static_cast<float>(i)));
    for (size_t i = 0; i < nk; ++i) {
      k[i] = tilejit::bfloat16(std::cos(0.23f * static_cast<float>(i)));
      v[i] = tilejit::bfloat16(0.5f + 0.5f * std::sin(0.11f * static_cast<float>(i) + 1.0f));
    }
    q.to_device();
    k.to_device();
    v.to_device();
    for (int causal : {0, 1}) {
      // 64 queries x 64 keys per block on one warpgroup, K and V tiles in a ring of 2 stages.
      const tilejit::Config config = tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", D}, {"CAUSAL", causal}}.num_warps(4).num_stages(2);
      attention.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(Sq, 64)), static_cast<uint32_t>(heads)), config,
                       T3(q.kernel_ptr(), {heads, Sq, D}), T3(k.kernel_ptr(), {heads, Sk, D}), T3(v.kernel_ptr(), {heads, Sk, D}),
                       T3(o.kernel_ptr(), {heads, Sq, D}), tilejit::TensorView<f32, 2>(lse.kernel_ptr(), {heads, Sq}),
                       1.0f / std::sqrt(static_cast<float>(D)));
      if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
      o.to_host();
      lse.to_host();
      const Error e = check(q, k, v, o, lse, heads, Sq, Sk, D, causal != 0);
      // P and O are rounded to bf16 (2^-9 relative each); the log-sum-exp is summed in f32.
      const bool good = e.out < 2e-2 && e.lse < 1e-3 && e.wrong == 0;
      std::printf("%s sample_12_attention on %s: %s, B %lld x H %lld x S_q %lld x S_k %lld x D %lld, relative error of o %.2e, of lse %.2e%s\n",
                  good ? "PASS" : "FAIL", run_target().c_str(), causal ? "causal" : "dense", static_cast<long long>(B),
                  static_cast<long long>(H), static_cast<long long>(Sq), static_cast<long long>(Sk), static_cast<long long>(D), e.out, e.lse,
                  e.wrong ? (", " + std::to_string(e.wrong) + " NaNs or rows without keys not 0 / +inf").c_str() : "");
      ok = ok && good;
    }
  }
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_12_attention: %s\n", e.what());
  return 1;
}
