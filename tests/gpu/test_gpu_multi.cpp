// Several GPUs: one kernel object launched concurrently from one thread per GPU (each with its own
// current context), and from one thread switching between GPUs. Compiled kernels, host descriptors,
// device-built descriptors' workspaces, descriptor arrays and autotuning decisions are all per
// context. With one GPU the same code runs with two threads on it.
#include <thread>

#include "driver_api.h"
#include "gpu_harness.h"
#include "tilejit/runtime/autotune.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;

namespace {

constexpr int64_t kRows = 64, kCols = 32;

// The kernels every thread shares: a host descriptor, device-built descriptors (workspace), a
// descriptor array, and an autotuned pointer kernel.
auto scale_kernel() {
  return tilejit::kernel("multi_scale", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a) {
    descriptor_store(y, {program_id(0) * 16, 0}, descriptor_load(x, {program_id(0) * 16, 0}, {16, 32}) * a);
  });
}
auto rows_kernel() {
  return tilejit::kernel("multi_rows", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto v = x.rows(program_id(0) * 16, program_id(0) * 16 + 16);
    auto w = y.rows(program_id(0) * 16, program_id(0) * 16 + 16);
    descriptor_store(w, {0, 0}, descriptor_load(v, {0, 0}, {16, 32}) + 1.0f);
  });
}
auto array_kernel() {
  return tilejit::kernel("multi_array", [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
    descriptor_store(y, {program_id(0) * 16, 0}, descriptor_load(xs[program_id(0)], {0, 0}, {16, 32}) - 1.0f);
  });
}

auto add_kernel() {
  return tilejit::kernel("multi_add", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    auto mask = offs < x.size(0);
    store(y, offs, load(x, offs, mask) * 3.0f, mask);
  });
}

// Runs every kernel `rounds` times in the current context and returns the number of wrong elements.
template <class S, class R, class A, class T>
int64_t run_all(const S& scale, const R& rows, const A& array, const T& tuned, float salt, int rounds) {
  const int64_t n = kRows * kCols;
  std::vector<float> host(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) host[static_cast<size_t>(i)] = static_cast<float>(i % 53) + salt;
  tilejit::DeviceBuffer xb(n * 4), yb(n * 4);
  xb.upload(host.data());
  const tilejit::TensorView<f32, 2> X(xb.data(), {kRows, kCols}), Y(yb.data(), {kRows, kCols});
  tilejit::TensorArrayView<f32, 2> parts;
  for (int64_t p = 0; p < kRows / 16; ++p)
    parts.tensors.emplace_back(static_cast<float*>(xb.data()) + p * 16 * kCols, std::array<int64_t, 2>{16, kCols});
  int64_t wrong = 0;
  const auto check = [&](auto&& want) {
    tilejit::synchronize();
    yb.download(out.data());
    for (int64_t i = 0; i < n; ++i) wrong += out[static_cast<size_t>(i)] != want(host[static_cast<size_t>(i)]);
  };
  for (int r = 0; r < rounds; ++r) {
    const dim3 grid(static_cast<uint32_t>(kRows / 16));
    scale.launch(nullptr, grid, Config{}, X, Y, 2.0f);
    check([](float v) { return v * 2.0f; });
    rows.launch(nullptr, grid, Config{}, X, Y);
    check([](float v) { return v + 1.0f; });
    array.launch(nullptr, grid, Config{}, parts, Y);
    check([](float v) { return v - 1.0f; });
    tuned.launch(nullptr, tilejit::TensorView<f32, 1>(xb.data(), {n}), tilejit::TensorView<f32, 1>(yb.data(), {n}));
    check([](float v) { return v * 3.0f; });
  }
  return wrong;
}

CUcontext primary_context(int ordinal) {
  auto& d = tilejit::detail::driver();
  CUdevice dev = 0;
  TILEJIT_CHECK_CU(d.cuDeviceGet(&dev, ordinal));
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  return ctx;
}

}  // namespace

TEST_CASE("gpu: one kernel object on several GPUs at once, and from one thread switching GPUs") {
  if (!on_gpu()) {
    MESSAGE("no GPU: nothing to run");
    return;
  }
  ++g_cases;
  auto& d = tilejit::detail::driver();
  const int gpus = std::min(tilejit::device_count(), 2);
  MESSAGE("GPUs used: " << gpus << (gpus == 1 ? " (two threads on the one GPU)" : ""));
  const auto scale = scale_kernel();
  const auto rows = rows_kernel();
  const auto array = array_kernel();
  auto add = add_kernel();
  auto tuned = add.autotune({{"B", {256, 512}}}).grid([](const Config& c, const tilejit::TuneArgs& a) {
    return dim3(static_cast<uint32_t>(tilejit::cdiv(a.size(0, 0), c["B"])));
  });
  std::vector<CUcontext> ctx;
  for (int g = 0; g < 2; ++g) ctx.push_back(primary_context(g % gpus));

  // One thread per GPU, concurrently.
  std::vector<int64_t> wrong(2, -1);
  std::vector<std::string> failed(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      try {
        TILEJIT_CHECK_CU(d.cuCtxSetCurrent(ctx[static_cast<size_t>(t)]));
        wrong[static_cast<size_t>(t)] = run_all(scale, rows, array, tuned, static_cast<float>(t), 10);
      } catch (const std::exception& e) {
        failed[static_cast<size_t>(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 2; ++t) {
    INFO("thread " << t << " on GPU " << t % gpus << ": " << failed[static_cast<size_t>(t)]);
    CHECK(failed[static_cast<size_t>(t)].empty());
    CHECK(wrong[static_cast<size_t>(t)] == 0);
  }

  // One thread switching between the GPUs every round.
  int64_t switched = 0;
  for (int r = 0; r < 6; ++r) {
    TILEJIT_CHECK_CU(d.cuCtxSetCurrent(ctx[static_cast<size_t>(r % 2)]));
    switched += run_all(scale, rows, array, tuned, 10.0f + static_cast<float>(r), 1);
  }
  CHECK(switched == 0);
  TILEJIT_CHECK_CU(d.cuCtxSetCurrent(ctx[0]));
  for (int g = 0; g < 2; ++g) {  // one release per primary_context() above
    CUdevice dev = 0;
    TILEJIT_CHECK_CU(d.cuDeviceGet(&dev, g % gpus));
    TILEJIT_CHECK_CU(d.cuDevicePrimaryCtxRelease_v2(dev));
  }
  if (failed[0].empty() && failed[1].empty() && wrong[0] == 0 && wrong[1] == 0 && switched == 0) ++g_matched;
}
