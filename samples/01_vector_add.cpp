// Sample 01: vector addition with masked pointer-style loads and stores, on the GPU or in the CPU interpreter.
//
// The kernel is vector_add_kernel() in sample_kernels.h: each program adds B
// consecutive elements, and a mask switches off the lanes of the last program
// that lie past the end of the vectors. The host side below is the same with
// and without a GPU: SampleBuffer keeps a host copy and, on a GPU machine, a
// device copy; launch() runs on the GPU there and in the interpreter here.
#include <cstdio>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto add = vector_add_kernel();

  const int64_t n = 1000;  // 7 full blocks of 128 and one partial block
  SampleBuffer<float> x(n), y(n), out(n + 8, -1.0f);  // 8 guard elements after `out`
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i);
    y[i] = 1000.0f - static_cast<float>(i);
  }
  x.to_device();
  y.to_device();
  out.to_device();  // the guard elements too: the kernel must leave them at -1

  const int64_t block = 128;
  add.launch(nullptr, tilejit::dim3(tilejit::cdiv(n, block)), tilejit::Config{{"B", block}},
             tilejit::TensorView<f32, 1>(x.kernel_ptr(), {n}), tilejit::TensorView<f32, 1>(y.kernel_ptr(), {n}),
             tilejit::TensorView<f32, 1>(out.kernel_ptr(), {n}));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  out.to_host();

  // The same computation as a plain loop; the guard elements must be untouched.
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += out[i] != x[i] + y[i];
  for (int64_t i = n; i < n + 8; ++i) bad += out[i] != -1.0f;
  std::printf("%s sample_01_vector_add on %s: %lld elements, %lld mismatches\n", bad ? "FAIL" : "PASS",
              run_target().c_str(), static_cast<long long>(n), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_01_vector_add: %s\n", e.what());
  return 1;
}
