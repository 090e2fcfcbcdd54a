// Host cost of tilejit's JIT: the first launches in a process (trace, generate, NVRTC or a disk-cache
// hit, load), split by phase, and the launch of an already compiled kernel against cuLaunchKernel
// of the same cubin at several grid sizes (Triton's launch of the same kernels is in bench/peers.py).
// Prints one JSON line per result.
//
//   bench_launch [--nonce N] [--first-launch-only]
//
// The kernels embed the nonce as a constant, so that neither tilejit's disk cache nor NVRTC's own
// cache has seen them unless a previous run used the same nonce: device_run.sh passes one nonce to
// two runs, the first compiling (cold) and the second finding every kernel on disk. Without a GPU
// the first-launch part runs through kernel.warmup(), which compiles but loads nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "driver_api.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;

namespace {
constexpr int kNextKernels = 7;

// The tiny kernel of every measurement: 128 threads store one value. `salt` becomes a constant of
// the generated code (a different salt, a different kernel for every cache).
auto tiny_kernel(const std::string& name, float salt) {
  return tilejit::kernel(name, [salt](Tensor<f32, 1> y, Scalar<f32> v) { store(y, arange(0, 128), v + salt); });
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string phases_json(const tilejit::runtime::CompileTimes& a, const tilejit::runtime::CompileTimes& b) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "{\"trace_ms\": %.3f, \"codegen_ms\": %.3f, \"nvrtc_ms\": %.3f, \"disk_ms\": %.3f, \"load_ms\": %.3f, "
                "\"compiles\": %llu, \"disk_hits\": %llu}",
                b.trace_ms - a.trace_ms, b.codegen_ms - a.codegen_ms, b.nvrtc_ms - a.nvrtc_ms, b.disk_ms - a.disk_ms,
                b.load_ms - a.load_ms, static_cast<unsigned long long>(b.compiles - a.compiles),
                static_cast<unsigned long long>(b.disk_hits - a.disk_hits));
  return buf;
}
}  // namespace

int main(int argc, char** argv) {
  long nonce = static_cast<long>(std::chrono::system_clock::now().time_since_epoch().count() % 1000003);
  bool first_launch_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--nonce") == 0 && i + 1 < argc) {
      nonce = std::atol(argv[++i]);
    } else if (std::strcmp(argv[i], "--first-launch-only") == 0) {
      first_launch_only = true;
    } else {
      std::fprintf(stderr, "usage: bench_launch [--nonce N] [--first-launch-only]\n");
      return 2;
    }
  }
  const bool gpu = tilejit::has_gpu();
  const float salt = static_cast<float>(nonce) * 0.25f;
  tilejit::DeviceBuffer yb;
  if (gpu) yb = tilejit::DeviceBuffer(128 * 4);
  std::vector<float> host_y(128);
  const tilejit::TensorView<f32, 1> Y(gpu ? yb.data() : host_y.data(), {128});
  const tilejit::Config cfg;
  const float v = 1.0f;

  // First launch in the process: trace, generate, NVRTC (or a disk-cache hit), load, launch.
  // Then kNextKernels different kernels, each new to the process: NVRTC is initialised now.
  auto first_use = [&](auto& k) {
    if (gpu) k.launch(nullptr, tilejit::dim3(1), cfg, Y, v);
    else k.warmup({cfg});
  };
  if (gpu) tilejit::ensure_context();
  auto tiny = tiny_kernel("tiny", salt);
  auto before = tilejit::runtime::compile_times();
  auto t0 = std::chrono::steady_clock::now();
  first_use(tiny);
  const double first_ms = ms_since(t0);
  auto after = tilejit::runtime::compile_times();
  const std::string first_phases = phases_json(before, after);
  if (gpu) tilejit::synchronize(nullptr);

  std::vector<double> next_ms;
  std::vector<std::string> next_phases;
  for (int i = 1; i <= kNextKernels; ++i) {
    auto k = tiny_kernel("tiny" + std::to_string(i), salt + static_cast<float>(i) * 1024.0f);
    before = tilejit::runtime::compile_times();
    t0 = std::chrono::steady_clock::now();
    first_use(k);
    next_ms.push_back(ms_since(t0));
    next_phases.push_back(phases_json(before, tilejit::runtime::compile_times()));
    if (gpu) tilejit::synchronize(nullptr);
  }
  std::vector<size_t> order(next_ms.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return next_ms[a] < next_ms[b]; });
  const size_t median = order[order.size() / 2];
  std::printf("{\"bench\": \"first_launch\", \"impl\": \"tilejit\", \"gpu\": %s, \"nonce\": %ld, \"first_kernel_ms\": %.2f, "
              "\"first_phases\": %s, \"next_kernel_ms_median\": %.2f, \"next_kernel_ms_min\": %.2f, "
              "\"next_kernel_ms_max\": %.2f, \"next_kernels\": %d, \"median_phases\": %s}\n",
              gpu ? "true" : "false", nonce, first_ms, first_phases.c_str(), next_ms[median], next_ms[order.front()],
              next_ms[order.back()], kNextKernels, next_phases[median].c_str());
  if (first_launch_only) return 0;
  if (!gpu) {
    std::printf("bench_launch: no GPU (%s): the launch measurements need one\n", tilejit::driver_error().c_str());
    return 0;
  }

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
  float value = v;
  std::vector<void*> params;
  for (const auto& slot : gen.plan.slots) {
    if (slot.kind == tilejit::codegen::ArgSlot::TensorBase) params.push_back(&ptr);
    else if (slot.kind == tilejit::codegen::ArgSlot::Scalar) params.push_back(&value);
    else {
      std::printf("bench_launch: unexpected parameter kind in the tiny kernel\n");
      return 1;
    }
  }
  // Grids from one program (pure host cost) to enough programs that the GPU's own time shows.
  for (const unsigned grid : {1u, 132u, 1024u, 8192u}) {
    const auto [raw, ours] = bench::us_per_launch(
        [&] {
          TILEJIT_CHECK_CU(d.cuLaunchKernel(fn, grid, 1, 1, static_cast<unsigned>(gen.plan.threads), 1, 1,
                                            static_cast<unsigned>(gen.plan.shared_bytes), nullptr, params.data(), nullptr));
        },
        [&] { tiny.launch(nullptr, tilejit::dim3(grid), cfg, Y, v); });
    std::printf("{\"bench\": \"launch\", \"impl\": \"raw_cuLaunchKernel\", \"grid\": %u, \"us\": %.3f}\n", grid, raw);
    std::printf("{\"bench\": \"launch\", \"impl\": \"tilejit\", \"grid\": %u, \"us\": %.3f, \"vs_raw\": %.3f}\n", grid, ours,
                ours / raw);
  }
  std::vector<float> out(128);
  TILEJIT_CHECK_CU(d.cuMemcpyDtoH_v2(out.data(), reinterpret_cast<CUdeviceptr>(yb.data()), 512));
  if (out[0] != v + salt || out[127] != v + salt) {
    std::printf("bench_launch: the tiny kernel stored %g, expected %g\n", out[0], v + salt);
    return 1;
  }
  return 0;
}
