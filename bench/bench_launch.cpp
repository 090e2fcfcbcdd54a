// Host cost of launching an already compiled kernel: tilejit's launch() versus cuLaunchKernel of the
// same cubin (and Triton in bench/peers.py). Prints one JSON line per result.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include "driver_api.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;

namespace {
constexpr int kLaunches = 20000;

template <class F>
double us_per_launch(F&& launch) {
  for (int i = 0; i < 1000; ++i) launch();  // warm-up
  tilejit::synchronize(nullptr);
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) launch();
    tilejit::synchronize(nullptr);
    runs.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kLaunches);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}
}  // namespace

int main() {
  if (!tilejit::has_gpu()) {
    std::printf("bench_launch: no GPU (%s); nothing to measure\n", tilejit::driver_error().c_str());
    return 0;
  }
  auto tiny = tilejit::kernel("tiny", [](Tensor<f32, 1> y, Scalar<f32> v) { store(y, arange(0, 128), v); });
  tilejit::DeviceBuffer yb(128 * 4);
  const tilejit::TensorView<f32, 1> Y(yb.data(), {128});
  const tilejit::Config cfg;
  float v = 1.0f;
  // First launch in the process: trace, generate, NVRTC (or a disk-cache hit), load, launch.
  tilejit::ensure_context();
  auto t0 = std::chrono::steady_clock::now();
  tiny.launch(nullptr, tilejit::dim3(1), cfg, Y, v);
  const double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  tilejit::synchronize(nullptr);
  // A second, different kernel: NVRTC is warm now.
  auto tiny2 = tilejit::kernel("tiny2", [](Tensor<f32, 1> y, Scalar<f32> v) { store(y, arange(0, 64), v * 2.0f); });
  t0 = std::chrono::steady_clock::now();
  tiny2.launch(nullptr, tilejit::dim3(1), cfg, Y, v);
  const double second_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  tilejit::synchronize(nullptr);
  std::printf("{\"bench\": \"first_launch\", \"impl\": \"tilejit\", \"first_kernel_ms\": %.2f, \"second_kernel_ms\": %.2f}\n",
              first_ms, second_ms);
  const double ours = us_per_launch([&] { tiny.launch(nullptr, tilejit::dim3(1), cfg, Y, v); });

  // The same generated kernel, compiled and launched by hand.
  auto& d = tilejit::detail::driver();
  const tilejit::codegen::GeneratedKernel gen = tilejit::runtime::generate(tiny.base(), cfg);
  const tilejit::CompiledBinary bin = tilejit::compile_cuda(gen, "tiny");
  CUlibrary lib;
  CUkernel kern;
  CUfunction fn;
  TILEJIT_CHECK_CU(d.cuLibraryLoadData(&lib, bin.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  TILEJIT_CHECK_CU(d.cuLibraryGetKernel(&kern, lib, gen.entry.c_str()));
  TILEJIT_CHECK_CU(d.cuKernelGetFunction(&fn, kern));
  void* ptr = yb.data();
  std::vector<void*> params;
  for (const auto& slot : gen.plan.slots) {
    if (slot.kind == tilejit::codegen::ArgSlot::TensorBase) params.push_back(&ptr);
    else if (slot.kind == tilejit::codegen::ArgSlot::Scalar) params.push_back(&v);
    else {
      std::printf("bench_launch: unexpected parameter kind in the tiny kernel\n");
      return 1;
    }
  }
  const double raw = us_per_launch([&] {
    TILEJIT_CHECK_CU(d.cuLaunchKernel(fn, 1, 1, 1, static_cast<unsigned>(gen.plan.threads), 1, 1,
                                      static_cast<unsigned>(gen.plan.shared_bytes), nullptr, params.data(), nullptr));
  });
  std::printf("{\"bench\": \"launch\", \"impl\": \"raw_cuLaunchKernel\", \"us\": %.3f}\n", raw);
  std::printf("{\"bench\": \"launch\", \"impl\": \"tilejit\", \"us\": %.3f, \"vs_raw\": %.3f}\n", ours, ours / raw);
  return 0;
}
