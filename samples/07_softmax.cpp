// Sample 07: row softmax, with masked pointer loads (rows of any length) and with TMA tiles.
//
// The kernels are softmax_kernel(), softmax_tma_kernel(), softmax_online_kernel() and
// softmax_online_combine_kernel() in sample_kernels.h (the online forms walk rows of any length in blocks,
// carrying the running maximum and sum; the second reduces each block's pair at once with a combine function).
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
  const bool ok = e1 < 1e-5 && e2 < 1e-5 && e3 < 1e-5 && e4 < 1e-5;
  std::printf("%s sample_07_softmax on %s\n", ok ? "PASS" : "FAIL", run_target().c_str());
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_07_softmax: %s\n", e.what());
  return 1;
}
