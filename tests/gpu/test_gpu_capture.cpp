// CUDA graph capture: a launch that would compile during capture is refused with a clear error and
// leaves the capture usable; after kernel.warmup() the same launch is captured, and the graph runs.
#include "capture.h"
#include "gpu_harness.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;

TEST_CASE("gpu: a compile during CUDA graph capture is refused; after warmup the captured graph runs") {
  auto k = tilejit::kernel("captured_scale", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a, Meta<"B"> B) {
    auto t = descriptor_load(x, {program_id(0) * B, 0}, {B, 64});
    descriptor_store(y, {program_id(0) * B, 0}, t * a);
  });
  const Config cfg{{"B", 32}};
  if (compiled_only(k, cfg)) return;
  auto& d = tilejit::detail::driver();
  CUstream s = new_stream();
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

TEST_CASE("gpu: a TensorArray kernel is captured after one launch; graphs keep their descriptors when tensors change") {
  auto k = tilejit::kernel("captured_array", [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
    auto t = descriptor_load(xs[program_id(0)], {0, 0}, {8, 32});
    descriptor_store(y, {program_id(0) * 8, 0}, t * 2.0f);
  });
  const Config cfg{};
  if (compiled_only(k, cfg)) return;
  auto& d = tilejit::detail::driver();
  CUstream s = new_stream();
  const auto stream = reinterpret_cast<tilejit::Stream>(s);
  constexpr int64_t kTileElems = 8 * 32;
  // Four source tiles (the fourth replaces the third later) and one output of three tiles.
  std::vector<std::vector<float>> src(4, std::vector<float>(kTileElems));
  std::vector<tilejit::DeviceBuffer> xb;
  for (size_t t = 0; t < src.size(); ++t) {
    for (int64_t i = 0; i < kTileElems; ++i) src[t][static_cast<size_t>(i)] = static_cast<float>(100 * t + i % 37);
    xb.emplace_back(kTileElems * 4);
    xb.back().upload(src[t].data());
  }
  tilejit::DeviceBuffer yb(3 * kTileElems * 4);
  const tilejit::TensorView<f32, 2> Y(yb.data(), {24, 32});
  const auto array_of = [&](std::initializer_list<size_t> which) {
    tilejit::TensorArrayView<f32, 2> a;
    for (size_t t : which) a.tensors.emplace_back(xb[t].data(), std::array<int64_t, 2>{8, 32});
    return a;
  };
  // y must hold 2 * the tiles `which`, in order.
  const auto check_y = [&](std::initializer_list<size_t> which, const char* when) {
    std::vector<float> out(3 * kTileElems);
    yb.download(out.data());
    int wrong = 0, p = 0;
    for (size_t t : which) {
      for (int64_t i = 0; i < kTileElems; ++i) wrong += out[static_cast<size_t>(p * kTileElems + i)] != 2.0f * src[t][static_cast<size_t>(i)];
      ++p;
    }
    INFO(when);
    CHECK(wrong == 0);
  };
  const auto run_graph = [&](CUgraphExec exec, int times) {
    for (int i = 0; i < times; ++i) TILEJIT_CHECK_CU(d.cuGraphLaunch(exec, s));
    TILEJIT_CHECK_CU(d.cuStreamSynchronize(s));
  };

  const auto first = array_of({0, 1, 2});
  k.launch(stream, dim3(3), cfg, first, Y);  // compiles and uploads the descriptors
  TILEJIT_CHECK_CU(d.cuStreamSynchronize(s));
  check_y({0, 1, 2}, "first launch");

  const uint64_t compiles = tilejit::runtime::compile_count();
  Capture g1(s);
  k.launch(stream, dim3(3), cfg, first, Y);
  g1.end();
  REQUIRE(g1.graph != nullptr);
  TILEJIT_CHECK_CU(d.cuGraphInstantiateWithFlags(&g1.exec, g1.graph, 0));
  CHECK(tilejit::runtime::compile_count() == compiles);
  yb.fill_bytes(0);
  run_graph(g1.exec, 100);
  check_y({0, 1, 2}, "100 replays");

  // New data in a tensor of the array: the graph reads it (the descriptors hold addresses, not data).
  for (auto& v : src[1]) v = -v - 1.0f;
  xb[1].upload(src[1].data());
  run_graph(g1.exec, 1);
  check_y({0, 1, 2}, "replay after new data in tensor 1");

  // A changed array under capture is refused, and the capture stays usable.
  const auto changed = array_of({0, 1, 3});
  {
    const std::string what = refused_under_capture(s, [&] { k.launch(stream, dim3(3), cfg, changed, Y); });
    REQUIRE_FALSE(what.empty());
    CHECK(what.find("captured_array") != std::string::npos);
    CHECK(what.find("changed during CUDA graph capture") != std::string::npos);
  }

  // One tensor replaced: an eager launch uploads the new descriptors, a new graph captures them,
  // and the first graph still reads the tensors it was captured with.
  k.launch(stream, dim3(3), cfg, changed, Y);
  TILEJIT_CHECK_CU(d.cuStreamSynchronize(s));
  check_y({0, 1, 3}, "eager launch with tensor 2 replaced by tensor 3");
  Capture g2(s);
  k.launch(stream, dim3(3), cfg, changed, Y);
  g2.end();
  TILEJIT_CHECK_CU(d.cuGraphInstantiateWithFlags(&g2.exec, g2.graph, 0));
  yb.fill_bytes(0);
  run_graph(g2.exec, 100);
  check_y({0, 1, 3}, "second graph");
  run_graph(g1.exec, 1);
  check_y({0, 1, 2}, "first graph after the change");

  // Back and forth between two arrays on two streams: every launch reads its own descriptors.
  CUstream s2 = new_stream();
  for (int i = 0; i < 20; ++i) {
    const bool odd = i % 2 != 0;
    k.launch(odd ? reinterpret_cast<tilejit::Stream>(s2) : stream, dim3(3), cfg, odd ? first : changed, Y);
    TILEJIT_CHECK_CU(d.cuStreamSynchronize(odd ? s2 : s));
    if (odd) {
      check_y({0, 1, 2}, "alternating launches, first array");
    } else {
      check_y({0, 1, 3}, "alternating launches, changed array");
    }
  }
  TILEJIT_CHECK_CU(d.cuStreamDestroy_v2(s2));
  TILEJIT_CHECK_CU(d.cuStreamDestroy_v2(s));
}
