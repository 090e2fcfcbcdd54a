// Sample 09: a matrix product with a fused epilogue, C = GELU(A @ B + bias), bf16 in and out.
//
// The kernel is matmul_bias_gelu_kernel() in sample_kernels.h. On a Hopper GPU its dot runs on the tensor
// cores (wgmma) in a software-pipelined K loop; without one, the CPU interpreter runs the same kernel. The
// shape is not a multiple of the tiles, so the TMA loads fill past the edges with zeros and the store clips.
// The result is checked against a plain C++ loop in double precision, within bf16's rounding.
#include <cmath>
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto matmul = matmul_bias_gelu_kernel();
  const int64_t M = 300, N = 200, K = 256;
  SampleBuffer<tilejit::bfloat16> a(M * K), b(K * N), bias(N), c(M * N);
  for (int64_t i = 0; i < M * K; ++i) a[i] = tilejit::bfloat16(std::sin(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < K * N; ++i) b[i] = tilejit::bfloat16(std::cos(0.11f * static_cast<float>(i)) * 0.25f);
  for (int64_t j = 0; j < N; ++j) bias[j] = tilejit::bfloat16(0.01f * static_cast<float>(j % 50) - 0.25f);
  a.to_device();
  b.to_device();
  bias.to_device();
  c.to_device();
  // 128 x 128 tiles on two warpgroups, 64-deep K steps, 3 stages of TMA buffers in flight.
  const tilejit::Config config = tilejit::Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3);
  matmul.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(M, 128)), static_cast<uint32_t>(tilejit::cdiv(N, 128))),
                config, tilejit::TensorView<bf16, 2>(a.kernel_ptr(), {M, K}), tilejit::TensorView<bf16, 2>(b.kernel_ptr(), {K, N}),
                tilejit::TensorView<bf16, 1>(bias.kernel_ptr(), {N}), tilejit::TensorView<bf16, 2>(c.kernel_ptr(), {M, N}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  c.to_host();
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double x = static_cast<float>(bias[j]);
      for (int64_t k = 0; k < K; ++k) x += static_cast<double>(static_cast<float>(a[i * K + k])) * static_cast<float>(b[k * N + j]);
      const double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      const double got = static_cast<float>(c[i * N + j]);
      err2 += (got - want) * (got - want);
      ref2 += want * want;
    }
  const double rel = std::sqrt(err2 / ref2);
  const bool ok = rel < 1.0 / 256;  // bf16 keeps 8 significant bits
  std::printf("%s sample_09_matmul on %s: GELU(A @ B + bias), %lld x %lld x %lld, relative error %.2e\n", ok ? "PASS" : "FAIL",
              run_target().c_str(), static_cast<long long>(M), static_cast<long long>(N), static_cast<long long>(K), rel);
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_09_matmul: %s\n", e.what());
  return 1;
}
