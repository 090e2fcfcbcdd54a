// Sample 01: vector addition with masked pointer-style loads and stores, run in the CPU interpreter.
//
// The Triton "hello world": each program (CUDA block) adds B consecutive
// elements. The vectors are not a multiple of B long, so the last program's
// block runs past their end; a mask switches those lanes off (masked loads
// read 0 and touch no memory, masked stores write nothing).
#include <tilejit/tilejit.h>

#include <cstdio>
#include <vector>

using namespace tilejit::dsl;

int main() try {
  // Block<"B"> is a configuration value: a constant of the traced kernel, chosen per launch.
  auto add = tilejit::kernel("vector_add", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<f32, 1> out, Block<"B"> B) {
    auto start = program_id(0) * B;     // Scalar<i32>: first element of this program
    auto offs = start + arange(0, B);   // Value<i32, 1>: [start, start + B)
    auto mask = offs < x.size(0);       // Value<i1, 1>: lanes inside the vector
    auto a = load(x, offs, mask);       // masked lanes read 0
    auto b = load(y, offs, mask);
    store(out, offs, a + b, mask);      // masked lanes are not written
  });

  const int64_t n = 1000;  // 7 full blocks of 128 and one partial block
  std::vector<float> x(n), y(n), out(n + 8, -1.0f);  // 8 guard elements after `out`
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i);
    y[i] = 1000.0f - static_cast<float>(i);
  }

  const int64_t block = 128;
  add.interpret(tilejit::dim3(tilejit::cdiv(n, block)), tilejit::Config{{"B", block}},
                tilejit::TensorView<f32, 1>(x.data(), {n}), tilejit::TensorView<f32, 1>(y.data(), {n}),
                tilejit::TensorView<f32, 1>(out.data(), {n}));

  // The same computation as a plain loop; the guard elements must be untouched.
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += out[i] != x[i] + y[i];
  for (int64_t i = n; i < n + 8; ++i) bad += out[i] != -1.0f;
  std::printf("%s sample_01_vector_add: %lld elements, %lld mismatches\n", bad ? "FAIL" : "PASS",
              static_cast<long long>(n), static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_01_vector_add: %s\n", e.what());
  return 1;
}
