// Sample 13: jagged HSTU attention, the workload of seed 002: sequences of different lengths packed one after
// another, o = (silu(alpha q k^T + rab) / max_len) v for every sequence and head, dense and causal, with and
// without the relative attention bias rab (a learned value per head and relative position, key - query,
// clamped to +-R).
//
// The kernel is jagged_hstu_kernel() in sample_kernels.h. Each program reads its own sequence through views
// rows(start, end) of q, k, v and o, whose TMA descriptors are built on the device (their extent is known
// only in the kernel): keys past the sequence's end read zeros, and the store stops at the end. On a Hopper
// GPU both products run on the tensor cores, the K and V tiles stream through a ring of TMA buffers and P V
// stays in flight; without one, the CPU interpreter runs the same kernel. One sequence is empty and the
// others are not multiples of the tiles. The result is checked against a plain C++ loop in double precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  // The silu's sigmoid as written (Accuracy::precise) and through the hardware's tanh (Accuracy::fast: one
  // special-function instruction per score instead of two, within 2^-11.9 of the exact sigmoid).
  const auto precise = jagged_hstu_kernel(), fast = jagged_hstu_kernel(Accuracy::fast);
  const std::vector<int32_t> lengths = {100, 257, 31, 0, 190};
  const int64_t H = 2, D = 64, HD = H * D, seqs = static_cast<int64_t>(lengths.size());
  SampleBuffer<int32_t> offsets(lengths.size() + 1);
  for (size_t s = 0; s < lengths.size(); ++s) offsets[s + 1] = offsets[s] + lengths[s];
  const int64_t tokens = offsets[lengths.size()];
  const int32_t max_len = *std::max_element(lengths.begin(), lengths.end());
  const size_t n = static_cast<size_t>(tokens * HD);
  SampleBuffer<tilejit::bfloat16> q(n), k(n), v(n), o(n);
  const int64_t R = 64;  // relative positions -64 .. 64 have a bias of their own; farther ones share the ends
  SampleBuffer<float> rab(static_cast<size_t>(H * (2 * R + 1)));
  for (size_t i = 0; i < rab.size(); ++i) rab[i] = 0.5f * std::cos(0.05f * static_cast<float>(i));
  for (size_t i = 0; i < n; ++i) {
    q[i] = tilejit::bfloat16(std::sin(0.37f * static_cast<float>(i)));
    k[i] = tilejit::bfloat16(std::cos(0.23f * static_cast<float>(i)));
    v[i] = tilejit::bfloat16(0.5f + 0.5f * std::sin(0.11f * static_cast<float>(i) + 1.0f));
  }
  offsets.to_device();
  q.to_device();
  k.to_device();
  v.to_device();
  rab.to_device();
  const float alpha = 1.0f / std::sqrt(static_cast<float>(D)),
              inv_max_len = 1.0f / static_cast<float>(max_len);
  using T2 = tilejit::TensorView<bf16, 2>;
  bool ok = true;
  for (const bool fast_silu : {false, true})
  for (int causal : {0, 1})
    for (int bias : {0, 1}) {
      const auto& hstu = fast_silu ? fast : precise;
      // 64 queries x 64 keys per block on one warpgroup; K and V tiles in a ring of 2 stages.
      const tilejit::Config config =
          tilejit::Config{{"BM", 64}, {"BN", 64}, {"D", D}, {"CAUSAL", causal}, {"BIAS", bias}}
              .num_warps(4)
              .num_stages(2);
      const auto grid = tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(max_len, 64)),
                                      static_cast<uint32_t>(seqs), static_cast<uint32_t>(H));
      for (size_t i = 0; i < n; ++i) o[i] = tilejit::bfloat16(-7.0f);  // rows no program writes would show
      o.to_device();
      hstu.launch(nullptr, grid, config, tilejit::TensorView<i32, 1>(offsets.kernel_ptr(), {seqs + 1}),
                  T2(q.kernel_ptr(), {tokens, HD}), T2(k.kernel_ptr(), {tokens, HD}),
                  T2(v.kernel_ptr(), {tokens, HD}), T2(o.kernel_ptr(), {tokens, HD}),
                  tilejit::TensorView<f32, 2>(rab.kernel_ptr(), {H, 2 * R + 1}), alpha, inv_max_len);
      if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
      o.to_host();
      double err2 = 0, ref2 = 0;
      for (int64_t s = 0; s < seqs; ++s)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t r = 0; r < lengths[static_cast<size_t>(s)]; ++r) {
            const int64_t row = offsets[static_cast<size_t>(s)] + r;
            const int64_t keys = causal ? r + 1 : lengths[static_cast<size_t>(s)];
            std::vector<double> p(static_cast<size_t>(keys));  // silu(alpha q k) / max_len per key
            for (int64_t j = 0; j < keys; ++j) {
              const int64_t key = offsets[static_cast<size_t>(s)] + j;
              double x = 0;
              for (int64_t e = 0; e < D; ++e)
                x += static_cast<double>(static_cast<float>(q[static_cast<size_t>(row * HD + h * D + e)])) *
                     static_cast<double>(static_cast<float>(k[static_cast<size_t>(key * HD + h * D + e)]));
              x *= alpha;
              if (bias) x += rab[static_cast<size_t>(h * (2 * R + 1) + std::clamp(j - r, -R, R) + R)];
              p[static_cast<size_t>(j)] = x / (1.0 + std::exp(-x)) / max_len;
            }
            for (int64_t c = 0; c < D; ++c) {
              double want = 0;
              for (int64_t j = 0; j < keys; ++j)
                want += p[static_cast<size_t>(j)] *
                        static_cast<double>(static_cast<float>(
                            v[static_cast<size_t>((offsets[static_cast<size_t>(s)] + j) * HD + h * D + c)]));
              const double got = static_cast<float>(o[static_cast<size_t>(row * HD + h * D + c)]);
              err2 += (got - want) * (got - want);
              ref2 += want * want;
            }
          }
      const double rel = std::sqrt(err2 / ref2);
      const bool good = rel < 1e-2;  // P and O are rounded to bf16 (2^-9 relative each)
      std::printf(
          "%s sample_13_jagged_hstu on %s: %s%s%s, %lld sequences of 0-%d tokens, H %lld x D %lld, relative "
          "error %.2e\n",
          good ? "PASS" : "FAIL", run_target().c_str(), causal ? "causal" : "dense",
          bias ? ", relative bias" : "", fast_silu ? ", fast sigmoid" : "", static_cast<long long>(seqs), max_len, static_cast<long long>(H),
          static_cast<long long>(D), rel);
      ok = ok && good;
    }
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_13_jagged_hstu: %s\n", e.what());
  return 1;
}
