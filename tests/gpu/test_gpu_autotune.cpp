// Autotuned launches on the GPU: results against the interpreter, in-place safety of an accumulating kernel,
// decisions reused from disk without timing, the hot path, and tuning refused under CUDA graph capture.
#include <random>

#include "capture.h"
#include "gpu_harness.h"
#include "tilejit/runtime/autotune.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;
using tilejit::TuneArgs;

namespace {

// y += x + salt: accumulates into its output. Inputs are small integers, so every sum is exact and
// the GPU must match the interpreter bit for bit.
auto accumulate_kernel(float salt) {
  return tilejit::kernel("gpu_accumulate", [salt](Tensor<f32, 1> x, Tensor<f32, 1> y, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    auto mask = offs < x.size(0);
    store(y, offs, load(y, offs, mask) + (load(x, offs, mask) + salt), mask);
  });
}

// An integer-valued salt that makes the kernel new to every cache (and to every decision).
float fresh_salt() {
  std::random_device rd;
  return static_cast<float>(1 + rd() % 100000);
}

dim3 grid_1d(const Config& c, const TuneArgs& a) {
  return dim3(static_cast<uint32_t>(tilejit::cdiv(a.size(0, 0), c["B"])));
}

void fill_integers(Twin<f32, 1>& t, int64_t n, int modulus, int offset) {
  for (int64_t i = 0; i < n; ++i) t.host_data()[i] = static_cast<float>(i % modulus - offset);
  t.upload();
}

}  // namespace

TEST_CASE(
    "gpu: autotuned launches match the interpreter, restore what they write, reuse decisions, refuse "
    "capture") {
  const float salt = fresh_salt();
  auto k = accumulate_kernel(salt);
  const tilejit::TuneSpace space{{"B", {128, 256, 512, 1024}}, {"num_warps", {4, 8}}};  // 8 candidates
  auto tuned = k.autotune(space).grid(grid_1d);
  const int64_t n = 3'000'017;
  Twin<f32, 1> x({n}), y({n});
  fill_integers(x, n, 17, 8);
  fill_integers(y, n, 29, 14);
  if (!on_gpu()) {
    // Compiles all 8 candidates with NVRTC and picks the first; the interpreter runs the launch.
    CHECK(tuned.tune(nullptr, x.host(), y.host()) == Config{{"B", 128}}.num_warps(4));
    MESSAGE("no GPU: candidates compiled only");
    return;
  }
  ++g_cases;
  bool all = true;
  const auto matches = [&](Twin<f32, 1>& t, const char* what) {
    std::string first;
    const size_t bad = t.compare(0, &first);
    INFO(what << ": " << first);
    CHECK(bad == 0);
    all = all && bad == 0;
  };

  // The first launch tunes: every timed run accumulates into y, and y must end as after one launch.
  const auto before = tilejit::autotune::counters();
  tuned.launch(nullptr, x.device(), y.device());
  tilejit::synchronize(nullptr);
  const auto after = tilejit::autotune::counters();
  CHECK(after.tunings == before.tunings + 1);
  CHECK(after.timed_runs == before.timed_runs + 8);
  const Config chosen = tuned.tune(nullptr, x.device(), y.device());
  MESSAGE("tuned configuration: " << chosen.str());
  k.interpret(grid_1d(chosen, TuneArgs(k.bind(x.host(), y.host()))), chosen, x.host(), y.host());
  matches(y, "after the tuning launch");

  // The hot path: launches of the chosen configuration.
  for (int i = 0; i < 3; ++i) {
    tuned.launch(nullptr, x.device(), y.device());
    k.interpret(grid_1d(chosen, TuneArgs(k.bind(x.host(), y.host()))), chosen, x.host(), y.host());
  }
  tilejit::synchronize(nullptr);
  matches(y, "after 3 more launches");
  CHECK(tilejit::autotune::counters().tunings == after.tunings);

  // A new kernel object and tuner, with this process's decisions forgotten: the decision comes from disk.
  tilejit::autotune::forget_decisions();
  auto again = accumulate_kernel(salt).autotune(space).grid(grid_1d);
  const auto before_disk = tilejit::autotune::counters();
  CHECK(again.tune(nullptr, x.device(), y.device()) == chosen);
  CHECK(tilejit::autotune::counters().tunings == before_disk.tunings);
  CHECK(tilejit::autotune::counters().disk_decisions == before_disk.disk_decisions + 1);
  matches(y, "after tune(), which launches nothing");

  // Under CUDA graph capture a launch that needs a tuning is refused and leaves the capture usable;
  // after tune() the launch is captured, compiles nothing, and the graph runs it.
  auto& d = tilejit::detail::driver();
  CUstream s = nullptr;
  TILEJIT_CHECK_CU(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const auto stream = reinterpret_cast<tilejit::Stream>(s);
  const int64_t m = 5000;  // another key
  Twin<f32, 1> x2({m}), y2({m});
  fill_integers(x2, m, 13, 6);
  fill_integers(y2, m, 7, 3);
  {
    const std::string what = refused_under_capture(s, [&] { again.launch(stream, x2.device(), y2.device()); });
    REQUIRE_FALSE(what.empty());
    CHECK(what.find("gpu_accumulate") != std::string::npos);
    CHECK(what.find("CUDA graph capture") != std::string::npos);
    CHECK(what.find("tune(") != std::string::npos);
  }
  const Config small = again.tune(stream, x2.device(), y2.device());
  const uint64_t compiles = tilejit::runtime::compile_count();
  {
    Capture cap(s);
    again.launch(stream, x2.device(), y2.device());
    cap.end();
    CHECK(tilejit::runtime::compile_count() == compiles);
    REQUIRE(cap.graph != nullptr);
    TILEJIT_CHECK_CU(d.cuGraphInstantiateWithFlags(&cap.exec, cap.graph, 0));
    TILEJIT_CHECK_CU(d.cuGraphLaunch(cap.exec, s));
    TILEJIT_CHECK_CU(d.cuStreamSynchronize(s));
  }
  k.interpret(grid_1d(small, TuneArgs(k.bind(x2.host(), y2.host()))), small, x2.host(), y2.host());
  matches(y2, "the captured launch");
  TILEJIT_CHECK_CU(d.cuStreamDestroy_v2(s));
  g_matched += all;
}
