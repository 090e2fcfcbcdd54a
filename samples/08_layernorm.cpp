// Sample 08: layer normalisation forward (bf16 in and out, fp32 statistics), one program per row.
//
// The kernel is layernorm_kernel() in sample_kernels.h: two row reductions (the mean, then the
// variance of the centred row) and an elementwise epilogue with a weight and a bias. The result
// is checked against a plain C++ loop in double precision, within bf16's rounding.
#include <cmath>
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto layernorm = layernorm_kernel();
  const int64_t rows = 64, cols = 1000;  // BN = 1024 covers a row; the mask the last 24 columns
  const float eps = 1e-5f;
  SampleBuffer<tilejit::bfloat16> x(rows * cols), y(rows * cols), w(cols), b(cols);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = tilejit::bfloat16(std::sin(0.01f * static_cast<float>(i)) * 3.0f + 1.0f);
  for (int64_t c = 0; c < cols; ++c) {
    w[c] = tilejit::bfloat16(1.0f + 0.001f * static_cast<float>(c));
    b[c] = tilejit::bfloat16(0.5f - 0.0005f * static_cast<float>(c));
  }
  x.to_device();
  w.to_device();
  b.to_device();
  y.to_device();
  layernorm.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(rows)), tilejit::Config{{"BN", 1024}}.num_warps(4),
                   tilejit::TensorView<bf16, 2>(x.kernel_ptr(), {rows, cols}), tilejit::TensorView<bf16, 1>(w.kernel_ptr(), {cols}),
                   tilejit::TensorView<bf16, 1>(b.kernel_ptr(), {cols}),
                   tilejit::TensorView<bf16, 2>(y.kernel_ptr(), {rows, cols}), eps);
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  y.to_host();
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += static_cast<float>(x[r * cols + c]);
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += std::pow(static_cast<float>(x[r * cols + c]) - mean, 2);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c) {
      const double want = (static_cast<float>(x[r * cols + c]) - mean) / std::sqrt(var + eps) * static_cast<float>(w[c]) +
                          static_cast<float>(b[c]);
      worst = std::max(worst, std::fabs(static_cast<float>(y[r * cols + c]) - want) / std::max(1.0, std::fabs(want)));
    }
  }
  const bool ok = worst < 1.0 / 128;  // bf16 keeps 8 significant bits
  std::printf("%s sample_08_layernorm on %s: %lld x %lld, largest relative error %.2e\n", ok ? "PASS" : "FAIL",
              run_target().c_str(), static_cast<long long>(rows), static_cast<long long>(cols), worst);
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_08_layernorm: %s\n", e.what());
  return 1;
}
