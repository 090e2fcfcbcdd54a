// Sample 10: autotuning sample 02's y = a * x + b for several shapes, then shipping the decisions.
//
// kernel.autotune(space) makes a tuner; its grid function says how many programs a configuration
// needs for the launch's arguments. The first launch of each *tuning key* (by default each
// tensor's element type and sizes rounded up to powers of two) compiles every candidate on a thread
// pool, times them on the GPU and launches the fastest; later launches with the same key launch it
// at once. Decisions are kept in the cache folder, so the next run of this program times nothing.
//
// An application can ship them: this sample exports its kernel's decisions to a JSON file
// (`tilejit-cache decisions export FILE` does the same for a whole folder) and loads them as a
// deployment would, with tilejit::autotune::load_decisions(FILE), before its first launch.
// Without a GPU nothing is timed: each key gets the first candidate, and there is nothing to ship.
#include <cstdio>
#include <filesystem>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto axpb = axpb_kernel();
  auto tuned = axpb.autotune({{"BM", {32, 64, 128}}, {"BN", {32, 64}}, {"num_warps", {4, 8}}})
                   .grid([](const tilejit::Config& c, const tilejit::TuneArgs& args) {
                     return tilejit::dim3(tilejit::cdiv(args.size(0, 0), c["BM"]),
                                          tilejit::cdiv(args.size(0, 1), c["BN"]));
                   })
                   // Tiles taller than the tensor only move zeros: leave them out before compiling.
                   .prune([](const tilejit::Config& c, const tilejit::TuneArgs& args) {
                     return c["BM"] > 2 * args.size(0, 0);
                   });

  const float a = 1.5f, b = -2.0f;
  int64_t bad = 0;
  // Rows of 16-byte multiples, as TMA requires. The last two shapes share a key (300 and 500 rows both round
  // up to 512).
  const int64_t shapes[][2] = {{24, 64}, {1000, 76}, {300, 128}, {500, 128}};
  for (const auto& [rows, cols] : shapes) {
    SampleBuffer<float> x(static_cast<size_t>(rows * cols)), y(static_cast<size_t>(rows * cols), 7.0f);
    for (int64_t i = 0; i < rows * cols; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i % 97) * 0.25f;
    x.to_device();
    y.to_device();
    const tilejit::TensorView<f32, 2> X(x.kernel_ptr(), {rows, cols}), Y(y.kernel_ptr(), {rows, cols});
    tuned.launch(nullptr, X, Y, a, b);
    if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
    y.to_host();
    int64_t wrong = 0;
    for (int64_t i = 0; i < rows * cols; ++i)
      wrong += y[static_cast<size_t>(i)] != x[static_cast<size_t>(i)] * a + b;
    bad += wrong;
    std::printf("  %lld x %lld: %s, %lld mismatches\n", static_cast<long long>(rows),
                static_cast<long long>(cols), tuned.tune(nullptr, X, Y, a, b).str().c_str(),
                static_cast<long long>(wrong));
  }

  // Ship the decisions: export this kernel's from the cache folder, then load them as a deployment would.
  const tilejit::DecisionStore store(tilejit::knobs().cache_dir);
  std::vector<tilejit::Decision> mine;
  for (const auto& f : store.list())
    if (f.decision && f.decision->id.kernel == axpb.name()) mine.push_back(*f.decision);
  if (!mine.empty()) {
    const auto file = std::filesystem::path(tilejit::knobs().cache_dir) / "axpb_decisions.json";
    tilejit::write_decisions_file(file, mine);
    std::printf("  shipped %zu decisions in %s; loaded back: %zu\n", mine.size(), file.c_str(),
                tilejit::autotune::load_decisions(file));
  } else {
    std::printf("  no decisions to ship: %s\n",
                runs_on_gpu() ? "none kept (TILEJIT_CACHE=off?)" : "nothing is timed without a GPU");
  }
  std::printf("%s sample_10_autotune on %s: %lld mismatches\n", bad ? "FAIL" : "PASS", run_target().c_str(),
              static_cast<long long>(bad));
  return bad ? 1 : 0;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_10_autotune: %s\n", e.what());
  return 1;
}
