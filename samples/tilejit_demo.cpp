// tilejit-demo: a tour of the sample kernels, on the GPU (checked and timed) or in the CPU interpreter.
//
// Every kernel runs through the same host code on both kinds of machine:
// SampleBuffer (sample_buffer.h) keeps a host copy and, with a GPU, a device
// copy; launch() compiles with NVRTC and runs on the GPU, or runs the CPU
// interpreter where there is no GPU. Each result is checked against a plain C++
// loop. With a GPU the tensors are large and each kernel is timed; without one
// they are small, and the demo shows the CUDA generated for the TMA a*x+b
// kernel and compiles every kernel of the tour for sm_90a with NVRTC.
// Exit code 1 when a result is wrong or a kernel fails to compile.
#include <tilejit/runtime/launch.h>
#include <tilejit/runtime/nvrtc.h>
#include <tilejit/version.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

namespace {

using namespace tilejit::samples;

/// A plain TMA tile copy, the reference point for the bandwidth of the other kernels.
auto tile_copy_kernel() {
  return tilejit::kernel("tile_copy", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"BN"> BN) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    descriptor_store(y, {m, n}, descriptor_load(x, {m, n}, {BM, BN}));
  });
}

constexpr int64_t kGuard = 8;  // elements after each output that no kernel may write
constexpr float kUnwritten = -1.0f;

/// One line of the result table.
struct Row {
  std::string kernel;
  std::string size;
  bool correct = false;
  double ms = -1;    ///< median time of one launch; GPU only
  double gbps = -1;  ///< bytes read and written / time; GPU only
  std::string error;
};

/// A kernel of the tour and the configuration it runs with, for compile_only().
struct Compiled {
  const tilejit::KernelBase* kernel;
  tilejit::Config config;
};

/// Runs `launch` once and counts wrong elements with `count_bad` (which copies results back to the host).
/// On the GPU, then times `launch` and turns `bytes` moved per launch into GB/s.
Row run_case(std::string kernel, std::string size, double bytes, const std::function<void()>& launch,
             const std::function<int64_t()>& count_bad) {
  Row row;
  row.kernel = std::move(kernel);
  row.size = std::move(size);
  try {
    launch();
    if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
    const int64_t bad = count_bad();
    row.correct = bad == 0;
    if (bad) row.error = std::to_string(bad) + " wrong elements";
    if (runs_on_gpu()) {
      // Batches of launches, so that the host's launch overhead between the timing events averages out.
      constexpr int kBatch = 10;
      auto batch = [](void* user) {
        for (int i = 0; i < kBatch; ++i) (*static_cast<const std::function<void()>*>(user))();
      };
      row.ms = tilejit::time_median_ms(nullptr, 2, 10, batch, const_cast<std::function<void()>*>(&launch)) / kBatch;
      row.gbps = bytes / (row.ms * 1e6);
    }
  } catch (const tilejit::Error& e) {
    row.correct = false;
    row.error = e.what();
  }
  return row;
}

std::string dims(int64_t a, int64_t b) { return std::to_string(a) + "x" + std::to_string(b); }

/// Bit-exact equality (bf16 values by their bits).
bool same(float a, float b) { return a == b; }
bool same(tilejit::bfloat16 a, tilejit::bfloat16 b) { return a.bits == b.bits; }

/// Copies `out` to the host; counts elements [0, n) that differ from `want(i)` and guard elements
/// (those after n) that no longer hold kUnwritten.
template <class T, class Want>
int64_t count_mismatches(SampleBuffer<T>& out, int64_t n, Want want) {
  out.to_host();
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += !same(out[i], want(i));
  for (int64_t i = n; i < static_cast<int64_t>(out.size()); ++i) bad += !same(out[i], T(kUnwritten));
  return bad;
}

Row vector_add_case(const auto& kernel, const tilejit::Config& cfg, bool big) {
  const int64_t n = big ? (int64_t{1} << 26) + 300 : 5000;  // a partial last block either way
  SampleBuffer<float> x(n), y(n), out(n + kGuard, kUnwritten);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = 0.5f * static_cast<float>(i % 1000);
    y[i] = static_cast<float>(i % 777);
  }
  x.to_device();
  y.to_device();
  out.to_device();
  const auto b = cfg.get("B");
  return run_case(
      "vector_add", std::to_string(n) + " f32", 3.0 * 4 * static_cast<double>(n),
      [&] {
        kernel.launch(nullptr, tilejit::dim3(tilejit::cdiv(n, b)), cfg, tilejit::TensorView<f32, 1>(x.kernel_ptr(), {n}),
                      tilejit::TensorView<f32, 1>(y.kernel_ptr(), {n}), tilejit::TensorView<f32, 1>(out.kernel_ptr(), {n}));
      },
      [&] { return count_mismatches(out, n, [&](int64_t i) { return x[i] + y[i]; }); });
}

/// A 2-D f32 tile kernel y = f(x): the TMA a*x+b one (`copy` false) or the tile copy (`copy` true).
/// `launch_tiles(grid, x, y, a, b)` launches it.
template <class Launch>
Row tile_case(std::string name, const tilejit::Config& cfg, bool big, bool copy, Launch launch_tiles) {
  const int64_t rows = big ? 8192 : 300, cols = big ? 8192 : 200;  // small: neither a multiple of the tile
  const float a = 1.5f, b = -2.0f;
  SampleBuffer<float> x(rows * cols), y(rows * cols + kGuard, kUnwritten);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 97) * 0.25f;
  x.to_device();
  y.to_device();
  const tilejit::dim3 grid(tilejit::cdiv(rows, cfg.get("BM")), tilejit::cdiv(cols, cfg.get("BN")));
  const tilejit::TensorView<f32, 2> xv(x.kernel_ptr(), {rows, cols}), yv(y.kernel_ptr(), {rows, cols});
  const auto want = [&](int64_t i) {
    if (copy) return x[i];
    const float ax = a * x[i];  // one rounding per operation, as in the kernel
    return ax + b;
  };
  return run_case(
      std::move(name), dims(rows, cols) + " f32", 2.0 * 4 * static_cast<double>(rows * cols),
      [&] { launch_tiles(grid, xv, yv, a, b); }, [&] { return count_mismatches(y, rows * cols, want); });
}

Row jagged_case(const auto& kernel, const tilejit::Config& cfg, bool big) {
  const int64_t seqs = big ? 2048 : 6, max_len = big ? 1024 : 100, d = cfg.get("D"), bm = cfg.get("BM");
  std::vector<int32_t> starts{0};  // sequence lengths 1 .. max_len, spread by a multiplicative hash
  for (int64_t s = 0; s < seqs; ++s) starts.push_back(starts.back() + 1 + static_cast<int32_t>((s * 7919 + 13) % max_len));
  const int64_t rows = starts.back();
  int64_t longest = 0;
  for (int64_t s = 0; s < seqs; ++s) longest = std::max<int64_t>(longest, starts[s + 1] - starts[s]);
  const int64_t tiles = tilejit::cdiv(longest, bm);

  SampleBuffer<int32_t> offsets(starts.size());
  std::copy(starts.begin(), starts.end(), offsets.data());
  SampleBuffer<tilejit::bfloat16> values(rows * d), out(rows * d + kGuard, tilejit::bfloat16(kUnwritten));
  for (int64_t i = 0; i < rows * d; ++i) values[i] = static_cast<float>(i % 13 - 6);  // exact in bf16
  SampleBuffer<float> sums(seqs * tiles, kUnwritten);
  offsets.to_device();
  values.to_device();
  out.to_device();
  sums.to_device();

  const auto count_bad = [&] {
    int64_t bad = count_mismatches(out, rows * d, [&](int64_t i) {
      return tilejit::bfloat16(static_cast<float>(values[i]) * 2.0f + 1.0f);
    });
    sums.to_host();
    for (int64_t s = 0; s < seqs; ++s)
      for (int64_t t = 0; t < tiles; ++t) {
        float want = 0;  // only rows of sequence s count (small integers: exact in any order)
        for (int64_t r = starts[s] + t * bm; r < starts[s + 1] && r < starts[s] + (t + 1) * bm; ++r)
          for (int64_t c = 0; c < d; ++c) want += static_cast<float>(values[r * d + c]);
        bad += sums[s * tiles + t] != want;
      }
    return bad;
  };
  return run_case(
      "jagged_scale (device TMA)", std::to_string(seqs) + " seqs, " + dims(rows, d) + " bf16",
      2.0 * 2 * static_cast<double>(rows * d),
      [&] {
        kernel.launch(nullptr, tilejit::dim3(tiles, seqs), cfg, tilejit::TensorView<i32, 1>(offsets.kernel_ptr(), {seqs + 1}),
                      tilejit::TensorView<bf16, 2>(values.kernel_ptr(), {rows, d}),
                      tilejit::TensorView<bf16, 2>(out.kernel_ptr(), {rows, d}),
                      tilejit::TensorView<f32, 2>(sums.kernel_ptr(), {seqs, tiles}));
      },
      count_bad);
}

Row every_third_row_case(const auto& kernel, const tilejit::Config& cfg, bool big) {
  const int64_t rows = big ? 24578 : 98, cols = big ? 1024 : 64;  // the last 6-row box runs past the end
  const int64_t boxes = tilejit::cdiv(rows, 6), out_rows = boxes * 2;
  SampleBuffer<float> x(rows * cols), y(out_rows * cols + kGuard, kUnwritten);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 4099);
  x.to_device();
  y.to_device();
  return run_case(
      "every_third_row (strided)", dims(rows, cols) + " f32", 2.0 * 4 * static_cast<double>(out_rows * cols),
      [&] {
        kernel.launch(nullptr, tilejit::dim3(boxes, cols / 4), cfg, tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}),
                      tilejit::TensorView<f32, 2>(y.kernel_ptr(), {out_rows, cols}));
      },
      [&] {
        return count_mismatches(y, out_rows * cols, [&](int64_t i) {
          const int64_t r = i / cols, c = i % cols;
          return 3 * r < rows ? x[3 * r * cols + c] : 0.0f;  // rows past x's end are zero-filled
        });
      });
}

Row transpose_case(const auto& kernel, const tilejit::Config& cfg, bool big) {
  const int64_t rows = big ? 8192 : 100, cols = big ? 8192 : 68, t = cfg.get("T");
  SampleBuffer<float> x(rows * cols), y(cols * rows + kGuard, kUnwritten);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = static_cast<float>(i % 65521);
  x.to_device();
  y.to_device();
  return run_case(
      "transpose (tile views)", dims(rows, cols) + " f32", 2.0 * 4 * static_cast<double>(rows * cols),
      [&] {
        kernel.launch(nullptr, tilejit::dim3(tilejit::cdiv(rows, t), tilejit::cdiv(cols, t)), cfg,
                      tilejit::TensorView<f32, 2>(x.kernel_ptr(), {rows, cols}),
                      tilejit::TensorView<f32, 2>(y.kernel_ptr(), {cols, rows}));
      },
      [&] { return count_mismatches(y, cols * rows, [&](int64_t i) { return x[(i % rows) * cols + i / rows]; }); });
}

Row scale_levels_case(const auto& kernel, const tilejit::Config& cfg, bool big) {
  const int64_t s = big ? 8192 : 64;  // level l is (s >> l) x (s >> l) * 3 / 2
  std::vector<std::array<int64_t, 2>> shapes;
  for (int l = 0; l < 4; ++l) shapes.push_back({s >> l, (s >> l) * 3 / 2});
  std::vector<SampleBuffer<float>> ins, outs;
  tilejit::TensorArrayView<f32, 2> in_views, out_views;
  double bytes = 0;
  for (const auto& shape : shapes) {
    const int64_t n = shape[0] * shape[1];
    ins.emplace_back(n);
    outs.emplace_back(n + kGuard, kUnwritten);
    for (int64_t i = 0; i < n; ++i) ins.back()[i] = static_cast<float>(i % 101) - 50.0f;
    ins.back().to_device();
    outs.back().to_device();
    bytes += 2.0 * 4 * static_cast<double>(n);
  }
  for (size_t l = 0; l < shapes.size(); ++l) {
    in_views.tensors.emplace_back(ins[l].kernel_ptr(), shapes[l]);
    out_views.tensors.emplace_back(outs[l].kernel_ptr(), shapes[l]);
  }
  const tilejit::dim3 grid(tilejit::cdiv(shapes[0][0], cfg.get("BM")), tilejit::cdiv(shapes[0][1], cfg.get("BN")),
                           static_cast<uint32_t>(shapes.size()));
  return run_case(
      "scale_levels (descriptor array)", "4 levels from " + dims(shapes[0][0], shapes[0][1]) + " f32", bytes,
      [&] { kernel.launch(nullptr, grid, cfg, in_views, out_views); },
      [&] {
        int64_t bad = 0;
        for (size_t l = 0; l < shapes.size(); ++l)
          bad += count_mismatches(outs[l], shapes[l][0] * shapes[l][1],
                                  [&](int64_t i) { return ins[l][i] * static_cast<float>(l + 1); });
        return bad;
      });
}

void print_banner() {
  std::string nvrtc;
  try {
    const auto [major, minor] = tilejit::nvrtc_version();
    nvrtc = std::to_string(major) + "." + std::to_string(minor);
  } catch (const tilejit::Error& e) {
    nvrtc = std::string("unavailable (") + e.what() + ")";
  }
  std::printf("tilejit %s: Triton-style tile kernels in C++, TMA on Hopper (sm_90a)\n", TILEJIT_VERSION_STRING);
  std::printf("  NVRTC   %s\n", nvrtc.c_str());
  if (runs_on_gpu()) {
    const tilejit::DeviceInfo dev = tilejit::devices().at(0);
    std::printf("  GPU     %s, sm_%d%d, %d SMs, %.1f GiB\n", dev.name.c_str(), dev.cc_major, dev.cc_minor, dev.sm_count,
                static_cast<double>(dev.total_mem) / (1024.0 * 1024.0 * 1024.0));
  } else if (tilejit::has_gpu()) {
    std::printf("  GPU     present, but TILEJIT_INTERPRET=1: running in the CPU interpreter\n");
  } else {
    std::printf("  GPU     no GPU: running in the CPU interpreter\n");
  }
}

/// A generated translation unit without its shared prelude: the header comment (configuration,
/// descriptors, shared memory plan), then the kernel from its signature on.
std::string without_prelude(const std::string& source, const std::string& entry) {
  const size_t header_end = source.find("\n\n");
  const size_t at = source.find(entry + "(");
  if (header_end == std::string::npos || at == std::string::npos || at < header_end) return source;
  const size_t kernel_begin = source.rfind('\n', at) + 1;
  const auto prelude_lines = std::count(source.begin() + static_cast<std::ptrdiff_t>(header_end),
                                        source.begin() + static_cast<std::ptrdiff_t>(kernel_begin), '\n');
  return source.substr(0, header_end + 1) + "\n// ... " + std::to_string(prelude_lines) +
         " lines of the tj:: prelude (TILEJIT_DUMP=cuda prints the whole file)\n\n" + source.substr(kernel_begin);
}

}  // namespace

int main() {
  print_banner();
  const bool gpu = runs_on_gpu();

  // The kernels of the tour and their configurations, the same on both paths.
  const auto vector_add = vector_add_kernel();
  const auto axpb = axpb_kernel();
  const auto copy = tile_copy_kernel();
  const auto jagged = jagged_scale_kernel();
  const auto every_third_row = every_third_row_kernel();
  const auto transpose = transpose_kernel();
  const auto scale_levels = scale_levels_kernel();
  const tilejit::Config vector_add_cfg{{"B", 1024}};
  const tilejit::Config tile_cfg{{"BM", 32}, {"BN", 128}};
  const tilejit::Config jagged_cfg{{"BM", 64}, {"D", 128}};
  const tilejit::Config no_cfg{};
  const tilejit::Config transpose_cfg{{"T", 32}};

  std::vector<Row> rows;
  rows.push_back(vector_add_case(vector_add, vector_add_cfg, gpu));
  rows.push_back(tile_case("axpb (TMA a*x+b)", tile_cfg, gpu, false, [&](auto grid, auto x, auto y, float a, float b) {
    axpb.launch(nullptr, grid, tile_cfg, x, y, a, b);
  }));
  rows.push_back(tile_case("tile_copy (TMA)", tile_cfg, gpu, true, [&](auto grid, auto x, auto y, float, float) {
    copy.launch(nullptr, grid, tile_cfg, x, y);
  }));
  rows.push_back(jagged_case(jagged, jagged_cfg, gpu));
  rows.push_back(every_third_row_case(every_third_row, no_cfg, gpu));
  rows.push_back(transpose_case(transpose, transpose_cfg, gpu));
  rows.push_back(scale_levels_case(scale_levels, tile_cfg, gpu));

  bool ok = true;
  std::printf("\n%-32s %-30s %-12s %-8s %10s %10s\n", "kernel", "size", "ran on", "correct", "ms", "GB/s");
  for (const Row& r : rows) {
    char ms[32] = "-", gbps[32] = "-";
    if (r.ms >= 0) std::snprintf(ms, sizeof ms, "%.3f", r.ms);
    if (r.gbps >= 0) std::snprintf(gbps, sizeof gbps, "%.0f", r.gbps);
    std::printf("%-32s %-30s %-12s %-8s %10s %10s\n", r.kernel.c_str(), r.size.c_str(), gpu ? "GPU" : "interpreter",
                r.correct ? "yes" : "NO", ms, gbps);
    ok = ok && r.correct;
  }
  for (const Row& r : rows)
    if (!r.error.empty()) std::printf("  %s: %s\n", r.kernel.c_str(), r.error.c_str());

  if (!gpu) {
    // Without a GPU, show what the GPU would run: the generated CUDA and an NVRTC build of every kernel.
    try {
      const tilejit::codegen::GeneratedKernel gen = tilejit::runtime::generate(axpb.base(), tile_cfg);
      std::printf("\nGenerated CUDA of axpb {%s}:\n%s", tile_cfg.str().c_str(), without_prelude(gen.source, gen.entry).c_str());
    } catch (const tilejit::Error& e) {
      std::printf("\nGenerated CUDA of axpb: FAILED: %s\n", e.what());
      ok = false;
    }
    const std::vector<Compiled> all = {{&vector_add.base(), vector_add_cfg}, {&axpb.base(), tile_cfg},
                                       {&copy.base(), tile_cfg},             {&jagged.base(), jagged_cfg},
                                       {&every_third_row.base(), no_cfg},    {&transpose.base(), transpose_cfg},
                                       {&scale_levels.base(), tile_cfg}};
    std::printf("\nNVRTC compile for sm_90a (no GPU needed):\n");
    for (const Compiled& c : all) {
      try {
        std::printf("  ok   %s\n", tilejit::runtime::compile_only(*c.kernel, c.config, "sm_90a").c_str());
      } catch (const tilejit::Error& e) {
        std::printf("  FAIL %s {%s}: %s\n", c.kernel->name().c_str(), c.config.str().c_str(), e.what());
        ok = false;
      }
    }
  }

  std::printf("\n%s\n", ok ? "PASS tilejit-demo: every result correct" : "FAIL tilejit-demo");
  return ok ? 0 : 1;
}
