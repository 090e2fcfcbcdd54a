// Sample 07: row softmax, with masked pointer loads (rows of any length) and with TMA tiles.
//
// The kernels are softmax_kernel(), softmax_tma_kernel(), softmax_online_kernel() and
// softmax_online_combine_kernel() in sample_kernels.h (the online forms walk rows of any length in blocks,
// carrying the running maximum and sum; the second reduces each block's pair at once with a combine function),
// and cross_entropy_grad_kernel(), a language model's loss over its vocabulary with the logits' gradient.
// Each row's maximum and sum are computed by the whole program at once: every
// thread combines its own elements, then the lanes of each warp exchange
// partial results with shuffles, then the warps through shared memory. The
// result is checked against a plain C++ softmax in double precision.
#include <cmath>
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

namespace {
/// Largest relative difference from a double-precision softmax of each row.
double worst_error(const SampleBuffer<float>& x, const SampleBuffer<float>& y, int64_t rows, int64_t cols) {
  double worst = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) s += std::exp(x[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c) {
      const double want = std::exp(x[r * cols + c] - m) / s;
      worst = std::max(worst, std::fabs(y[r * cols + c] - want) / want);
    }
  }
  return worst;
}

/// The fused cross-entropy over 16 rows of 5000 bf16 logits (one target ignored, -100): the largest error of the
/// loss and of the gradient (relative, above 1e-6) against double precision.
double cross_entropy_case() {
  constexpr int64_t kRows = 16, kV = 5000, kIgnore = -100;
  SampleBuffer<tilejit::bfloat16> x(kRows * kV), grad(kRows * kV);
  SampleBuffer<int64_t> target(kRows);
  SampleBuffer<float> loss(kRows);
  for (int64_t i = 0; i < kRows * kV; ++i) x[i] = tilejit::bfloat16(std::sin(0.7f * static_cast<float>(i)) * 6.0f);
  for (int64_t r = 0; r < kRows; ++r) target[r] = r == 3 ? kIgnore : (r * 977) % kV;
  x.to_device();
  target.to_device();
  const float scale = 1.0f / (kRows - 1);  // the mean over the counted rows
  auto ce = cross_entropy_grad_kernel();
  ce.launch(nullptr, tilejit::dim3(kRows), tilejit::Config{{"BN", 2048}}.num_warps(8),
            tilejit::TensorView<bf16, 2>(x.kernel_ptr(), {kRows, kV}), tilejit::TensorView<i64, 1>(target.kernel_ptr(), {kRows}),
            tilejit::TensorView<f32, 1>(loss.kernel_ptr(), {kRows}), tilejit::TensorView<bf16, 2>(grad.kernel_ptr(), {kRows, kV}),
            scale, kIgnore);
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  loss.to_host();
  grad.to_host();
  double worst = 0;
  for (int64_t r = 0; r < kRows; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < kV; ++c) m = std::max(m, static_cast<double>(x[r * kV + c]));
    for (int64_t c = 0; c < kV; ++c) s += std::exp(static_cast<double>(x[r * kV + c]) - m);
    const int64_t t = target[r];
    const double want = t == kIgnore ? 0.0 : m + std::log(s) - static_cast<double>(x[r * kV + t]);
    worst = std::max(worst, std::fabs(loss[r] - want) / std::max(1.0, std::fabs(want)));
    for (int64_t c = 0; c < kV; ++c) {
      const double g = t == kIgnore ? 0.0 : (std::exp(static_cast<double>(x[r * kV + c]) - m) / s - (c == t)) * scale;
      worst = std::max(worst, std::fabs(static_cast<float>(grad[r * kV + c]) - g) / std::max(std::fabs(g), 1e-6));
    }
  }
  std::printf("  cross-entropy with its gradient, %lld x %lld bf16: largest relative error %.2e (the gradient is bf16)\n",
              static_cast<long long>(kRows), static_cast<long long>(kV), worst);
  return worst;
}
}  // namespace

/// Fills x with `value(i)`, runs `launch(x, y)`, and prints and returns the largest error.
template <class Value, class Launch>
double run_case(const char* what, int64_t rows, int64_t cols, Value value, Launch launch) {
  SampleBuffer<float> x(rows * cols), y(rows * cols, -1.0f);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = value(static_cast<float>(i));
  x.to_device();
  y.to_device();
  launch(tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}), tilejit::TensorView<f32, 2>(y.kernel_ptr(), {rows, cols}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  y.to_host();
  const double err = worst_error(x, y, rows, cols);
  std::printf("  %s, %lld x %lld: largest relative error %.2e\n", what, static_cast<long long>(rows),
              static_cast<long long>(cols), err);
  return err;
}

int main() try {
  auto softmax = softmax_kernel();
  auto softmax_tma = softmax_tma_kernel();
  // Pointer form: 100 rows of 781 columns; BN = 1024 covers a row, the mask the last 243 columns.
  const double e1 = run_case("pointer loads", 100, 781, [](float i) { return std::sin(0.37f * i) * 8.0f; },
                             [&](auto x, auto y) {
                               softmax.launch(nullptr, tilejit::dim3(100), tilejit::Config{{"BN", 1024}}.num_warps(4), x, y);
                             });
  // TMA form: 300 rows of 256 columns, 16 rows per program (the last program's tile is clipped).
  const double e2 = run_case("TMA tiles", 300, 256, [](float i) { return std::cos(0.11f * i) * 5.0f; },
                             [&](auto x, auto y) {
                               softmax_tma.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(300, 16))),
                                                  tilejit::Config{{"BM", 16}, {"BN", 256}}.num_warps(4), x, y);
                             });
  // Online form: 64 rows of 3000 columns in blocks of 1024 (the last block of each row masked).
  auto softmax_online = softmax_online_kernel();
  const double e3 = run_case("online, blocks of 1024", 64, 3000, [](float i) { return std::sin(0.013f * i) * 12.0f; },
                             [&](auto x, auto y) {
                               softmax_online.launch(nullptr, tilejit::dim3(64), tilejit::Config{{"BN", 1024}}.num_warps(4), x, y);
                             });
  // The same with one reduction of (maximum, sum) pairs per block, 3000 columns in blocks of 512.
  auto softmax_combine = softmax_online_combine_kernel();
  const double e4 = run_case("online, one combine reduction per block of 512", 64, 3000,
                             [](float i) { return std::sin(0.013f * i) * 12.0f; }, [&](auto x, auto y) {
                               softmax_combine.launch(nullptr, tilejit::dim3(64), tilejit::Config{{"BN", 512}}.num_warps(4), x, y);
                             });
  const double e5 = cross_entropy_case();
  const bool ok = e1 < 1e-5 && e2 < 1e-5 && e3 < 1e-5 && e4 < 1e-5 && e5 < 1.0 / 128;
  std::printf("%s sample_07_softmax on %s\n", ok ? "PASS" : "FAIL", run_target().c_str());
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_07_softmax: %s\n", e.what());
  return 1;
}
