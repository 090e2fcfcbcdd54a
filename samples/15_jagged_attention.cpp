// Sample 15: jagged (variable-length) softmax attention: sequences of different lengths packed one after
// another, o = softmax(q k^T / sqrt(D)) v for every sequence and head, dense and causal, with the log-sum-exp
// of each row.
//
// The kernel is jagged_attention_kernel() in sample_kernels.h. Each program reads its own sequence through
// views rows(start, end) of q, k, v and o, whose TMA descriptors are built on the device; the programs take
// the sequences longest first (the order tensor, sorted here on the host), so that sequences of very
// different lengths keep the GPU busy to the end. On a Hopper GPU both products run on the tensor cores and
// the K and V tiles stream through a ring of TMA buffers; without one, the CPU interpreter runs the same
// kernel. One sequence is empty, one has a single token, and the others are not multiples of the tiles. The
// result is checked against a plain C++ loop in double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto attention = jagged_attention_kernel();
  const std::vector<int32_t> lengths = {100, 257, 1, 0, 190, 31};
  const int64_t H = 2, D = 64, HD = H * D, seqs = static_cast<int64_t>(lengths.size());
  SampleBuffer<int32_t> offsets(lengths.size() + 1), order(lengths.size());
  for (size_t s = 0; s < lengths.size(); ++s) offsets[s + 1] = offsets[s] + lengths[s];
  std::iota(&order[0], &order[0] + seqs, 0);
  std::stable_sort(&order[0], &order[0] + seqs, [&](int32_t a, int32_t b) {
    return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
  });
  const int64_t tokens = offsets[lengths.size()];
  const int32_t max_len = *std::max_element(lengths.begin(), lengths.end());
  const size_t n = static_cast<size_t>(tokens * HD);
  SampleBuffer<tilejit::bfloat16> q(n), k(n), v(n), o(n);
  SampleBuffer<float> lse(static_cast<size_t>(H * tokens));
  for (size_t i = 0; i < n; ++i) {
    q[i] = tilejit::bfloat16(2.0f * std::sin(0.37f * static_cast<float>(i)));
    k[i] = tilejit::bfloat16(2.0f * std::cos(0.23f * static_cast<float>(i)));
    v[i] = tilejit::bfloat16(std::sin(0.11f * static_cast<float>(i) + 1.0f));
  }
  offsets.to_device();
  order.to_device();
  q.to_device();
  k.to_device();
  v.to_device();
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  using T2 = tilejit::TensorView<bf16, 2>;
  bool ok = true;
  for (int causal : {0, 1}) {
    // 64 queries x 64 keys per block on one warpgroup; K and V tiles in a ring of 2 stages.
    const tilejit::Config config =
        tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", D}, {"CAUSAL", causal}}.num_warps(4).num_stages(2);
    const auto grid = tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(max_len, 64)),
                                    static_cast<uint32_t>(H), static_cast<uint32_t>(seqs));
    for (size_t i = 0; i < n; ++i) o[i] = tilejit::bfloat16(-7.0f);  // rows no program writes would show
    for (size_t i = 0; i < lse.size(); ++i) lse[i] = -7.0f;
    o.to_device();
    lse.to_device();
    attention.launch(nullptr, grid, config, tilejit::TensorView<i32, 1>(offsets.kernel_ptr(), {seqs + 1}),
                     tilejit::TensorView<i32, 1>(order.kernel_ptr(), {seqs}),
                     T2(q.kernel_ptr(), {tokens, HD}), T2(k.kernel_ptr(), {tokens, HD}),
                     T2(v.kernel_ptr(), {tokens, HD}), T2(o.kernel_ptr(), {tokens, HD}),
                     tilejit::TensorView<f32, 2>(lse.kernel_ptr(), {H, tokens}), scale);
    if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
    o.to_host();
    lse.to_host();
    double err2 = 0, ref2 = 0, lse_err = 0;
    for (int64_t s = 0; s < seqs; ++s)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t r = 0; r < lengths[static_cast<size_t>(s)]; ++r) {
          const int64_t row = offsets[static_cast<size_t>(s)] + r;
          const int64_t keys = causal ? r + 1 : lengths[static_cast<size_t>(s)];
          std::vector<double> x(static_cast<size_t>(keys));  // scale q k per key
          double top = -INFINITY;
          for (int64_t j = 0; j < keys; ++j) {
            const int64_t key = offsets[static_cast<size_t>(s)] + j;
            double dotp = 0;
            for (int64_t e = 0; e < D; ++e)
              dotp += static_cast<double>(static_cast<float>(q[static_cast<size_t>(row * HD + h * D + e)])) *
                      static_cast<double>(static_cast<float>(k[static_cast<size_t>(key * HD + h * D + e)]));
            x[static_cast<size_t>(j)] = dotp * scale;
            top = std::max(top, x[static_cast<size_t>(j)]);
          }
          double total = 0;
          for (double& e : x) total += (e = std::exp(e - top));
          lse_err =
              std::max(lse_err, std::abs(static_cast<double>(lse[static_cast<size_t>(h * tokens + row)]) -
                                         (top + std::log(total))));
          for (int64_t c = 0; c < D; ++c) {
            double want = 0;
            for (int64_t j = 0; j < keys; ++j)
              want += x[static_cast<size_t>(j)] / total *
                      static_cast<double>(static_cast<float>(
                          v[static_cast<size_t>((offsets[static_cast<size_t>(s)] + j) * HD + h * D + c)]));
            const double got = static_cast<float>(o[static_cast<size_t>(row * HD + h * D + c)]);
            err2 += (got - want) * (got - want);
            ref2 += want * want;
          }
        }
    const double rel = std::sqrt(err2 / ref2);
    const bool good = rel < 1e-2 && lse_err < 1e-3;  // P and O are rounded to bf16 (2^-9 relative each)
    std::printf(
        "%s sample_15_jagged_attention on %s: %s, %lld sequences of 0-%d tokens, H %lld x D %lld, relative "
        "error %.2e, "
        "largest lse error %.2e\n",
        good ? "PASS" : "FAIL", run_target().c_str(), causal ? "causal" : "dense",
        static_cast<long long>(seqs), max_len, static_cast<long long>(H), static_cast<long long>(D), rel,
        lse_err);
    ok = ok && good;
  }
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_15_jagged_attention: %s\n", e.what());
  return 1;
}
