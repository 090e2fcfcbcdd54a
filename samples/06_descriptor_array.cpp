// Sample 06: an array of TMA descriptors, one tensor per program, on the GPU or in the CPU interpreter.
//
// The kernel is scale_levels_kernel() in sample_kernels.h: a TensorArray<f32, 2>
// parameter takes several tensors of different shapes; tilejit encodes one TMA
// descriptor per tensor, and program_id(2) picks the tensor. Here it writes
// out[l] = (l + 1) * in[l] for four levels of decreasing size.
#include <array>
#include <cstdio>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto scale_levels = scale_levels_kernel();

  // Four levels of decreasing size (every row a multiple of 16 bytes).
  const std::vector<std::array<int64_t, 2>> shapes = {{64, 96}, {32, 48}, {16, 24}, {8, 12}};
  const int64_t bm = 16, bn = 32;
  std::vector<SampleBuffer<float>> ins, outs;
  for (const auto& s : shapes) {
    ins.emplace_back(s[0] * s[1]);
    outs.emplace_back(s[0] * s[1] + 8, -1.0f);  // 8 guard elements after each output
    for (size_t i = 0; i < ins.back().size(); ++i) ins.back()[i] = static_cast<float>(i % 101) - 50.0f;
    ins.back().to_device();
    outs.back().to_device();
  }
  // A TensorArrayView lists the tensors with the pointers the kernel reads (device ones on a GPU).
  tilejit::TensorArrayView<f32, 2> in_views, out_views;
  for (size_t l = 0; l < shapes.size(); ++l) {
    in_views.tensors.emplace_back(ins[l].kernel_ptr(), shapes[l]);
    out_views.tensors.emplace_back(outs[l].kernel_ptr(), shapes[l]);
  }

  // The grid covers the largest level; programs past a smaller level's edge do nothing visible.
  const auto levels = static_cast<uint32_t>(shapes.size());
  scale_levels.launch(nullptr, tilejit::dim3(tilejit::cdiv(64, bm), tilejit::cdiv(96, bn), levels),
                      tilejit::Config{{"BM", bm}, {"BN", bn}}, in_views, out_views);
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  for (auto& o : outs) o.to_host();

  int64_t bad = 0;
  for (size_t l = 0; l < shapes.size(); ++l) {
    const SampleBuffer<float>& in = ins[l];
    const SampleBuffer<float>& out = outs[l];
    for (size_t i = 0; i < in.size(); ++i) bad += out[i] != in[i] * static_cast<float>(l + 1);
    for (size_t i = in.size(); i < out.size(); ++i) bad += out[i] != -1.0f;  // guards untouched
  }
  std::printf("%s sample_06_descriptor_array on %s: %u tensors, %lld mismatches\n", bad ? "FAIL" : "PASS",
              run_target().c_str(), levels, static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_06_descriptor_array: %s\n", e.what());
  return 1;
}
