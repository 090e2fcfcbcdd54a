// CUDA graph capture: a launch that would compile during capture is refused with a clear error and
// leaves the capture usable; after kernel.warmup() the same launch is captured, and the graph runs.
#include "capture.h"
#include "gpu_harness.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;

TEST_CASE("gpu: a compile during CUDA graph capture is refused; after warmup the captured graph runs") {
  auto k = tilejit::kernel("captured_scale", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a, Block<"B"> B) {
    auto t = descriptor_load(x, {program_id(0) * B, 0}, {B, 64});
    descriptor_store(y, {program_id(0) * B, 0}, t * a);
  });
  const Config cfg{{"B", 32}};
  if (!on_gpu()) {
    k.warmup({cfg});  // compiles with NVRTC; there is nothing to capture on
    MESSAGE("no GPU: compiled only");
    return;
  }
  auto& d = tilejit::detail::driver();
  tilejit::ensure_context();
  CUstream s = nullptr;
  TILEJIT_CHECK_CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const int64_t rows = 96, cols = 64;
  std::vector<float> host(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 97) - 40.0f;
  tilejit::DeviceBuffer xb(host.size() * 4), yb(host.size() * 4);
  xb.upload(host.data());
  yb.fill_bytes(0);
  const tilejit::TensorView<f32, 2> X(xb.data(), {rows, cols}), Y(yb.data(), {rows, cols});
  const dim3 grid(static_cast<uint32_t>(rows / 32));
  const auto stream = reinterpret_cast<tilejit::Stream>(s);

  {
    // The capture stays valid: the refused launch touched nothing.
    const std::string what = refused_under_capture(s, [&] { k.launch(stream, grid, cfg, X, Y, 2.0f); });
    REQUIRE_FALSE(what.empty());
    CHECK(what.find("captured_scale") != std::string::npos);
    CHECK(what.find("CUDA graph capture") != std::string::npos);
    CHECK(what.find("warmup") != std::string::npos);
    CHECK(what.find("B=32") != std::string::npos);
  }

  k.warmup({cfg});
  const uint64_t compiles = tilejit::runtime::compile_count();
  {
    Capture cap(s);
    k.launch(stream, grid, cfg, X, Y, 3.0f);
    cap.end();
    CHECK(tilejit::runtime::compile_count() == compiles);  // nothing compiled under capture
    REQUIRE(cap.graph != nullptr);
    TILEJIT_CHECK_CU(d.cuGraphInstantiateWithFlags(&cap.exec, cap.graph, 0));
    std::vector<float> out(host.size(), -1.0f);
    yb.download(out.data());
    CHECK(out[0] == 0.0f);  // captured, not run
    TILEJIT_CHECK_CU(d.cuGraphLaunch(cap.exec, s));
    TILEJIT_CHECK_CU(d.cuStreamSynchronize(s));
    yb.download(out.data());
    int wrong = 0;
    for (size_t i = 0; i < host.size(); ++i) wrong += out[i] != host[i] * 3.0f;
    CHECK(wrong == 0);
  }
  TILEJIT_CHECK_CU(d.cuStreamDestroy_v2(s));
}
