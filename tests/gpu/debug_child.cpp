// Runs one faulty kernel in checked mode (TILEJIT_DEBUG=1, set by the caller) and reports how it ended.
// A checked kernel that traps leaves the CUDA context unusable, so test_gpu_debug.cpp starts this
// program once per case and reads what it printed. Cases: jagged_view, off_grid, pointer_oob, valid.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {

// Each program copies the rows [offsets[p], offsets[p + 1]) of x to y through a device-built view.
auto jagged_copy() {
  return tilejit::kernel("checked_jagged", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Tensor<i64, 1> offsets) {
    auto start = load(offsets, program_id(0));
    auto end = load(offsets, program_id(0) + 1);
    auto t = descriptor_load(x.rows(start, end), {0, 0}, {8, 32});
    descriptor_store(y.rows(start, end), {0, 0}, t);
  });
}

// Loads a tile at a column read from memory (coordinates computed from data).
auto column_copy() {
  return tilejit::kernel("checked_columns", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Tensor<i32, 1> cols) {
    auto c = load(cols, program_id(0));
    descriptor_store(y, {0, 0}, descriptor_load(x, {0, c}, {8, 32}));
  });
}

// Gathers x at indices read from memory, without a mask.
auto gather() {
  return tilejit::kernel("checked_gather", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<i32, 1> idx) {
    auto i = arange(0, 64);
    store(y, i, load(x, load(idx, i)));
  });
}

template <class T>
tilejit::DeviceBuffer upload(const std::vector<T>& v) {
  tilejit::DeviceBuffer b(v.size() * sizeof(T));
  b.upload(v.data());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything reads the knobs (has_gpu does): a bound of 0 ms, so that the first wait that is not complete
  // when first tested (the K loop's first stage) trips the watchdog.
  if (argc == 2 && std::strcmp(argv[1], "watchdog") == 0) setenv("TILEJIT_DEBUG_WATCHDOG_MS", "0", 1);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s jagged_view|off_grid|pointer_oob|valid|watchdog|watchdog_valid\n", argv[0]);
    return 2;
  }
  if (!tilejit::has_gpu()) {
    std::printf("no GPU\n");
    return 77;
  }
  const std::string which = argv[1];
  std::vector<float> data(64 * 32, 1.0f);
  tilejit::DeviceBuffer x = upload(data), y = upload(data);
  try {
    if (which == "jagged_view" || which == "valid") {
      // Sequence 1 ends before it starts (16 > 4) unless the case is the valid one.
      const std::vector<int64_t> offs = which == "valid" ? std::vector<int64_t>{0, 16, 40, 64} : std::vector<int64_t>{0, 16, 4, 64};
      tilejit::DeviceBuffer o = upload(offs);
      jagged_copy().launch(nullptr, dim3(3), Config{}, tilejit::TensorView<f32, 2>(x.data(), {64, 32}),
                           tilejit::TensorView<f32, 2>(y.data(), {64, 32}), tilejit::TensorView<i64, 1>(o.data(), {4}));
      tilejit::synchronize();
    } else if (which == "off_grid") {
      const std::vector<int32_t> cols{0, 3};  // column 3 of f32 is 12 bytes: off the 16-byte grid
      tilejit::DeviceBuffer c = upload(cols);
      column_copy().launch(nullptr, dim3(2), Config{}, tilejit::TensorView<f32, 2>(x.data(), {64, 32}),
                           tilejit::TensorView<f32, 2>(y.data(), {64, 32}), tilejit::TensorView<i32, 1>(c.data(), {2}));
      tilejit::synchronize();
    } else if (which == "pointer_oob") {
      std::vector<int32_t> idx(64);
      for (int i = 0; i < 64; ++i) idx[static_cast<size_t>(i)] = i;
      idx[40] = 5000;  // x has 2048 elements
      tilejit::DeviceBuffer ib = upload(idx);
      gather().launch(nullptr, dim3(1), Config{}, tilejit::TensorView<f32, 1>(x.data(), {2048}),
                      tilejit::TensorView<f32, 1>(y.data(), {2048}), tilejit::TensorView<i32, 1>(ib.data(), {64}));
      tilejit::synchronize();
    } else if (which == "watchdog" || which == "watchdog_valid") {
      const std::vector<uint16_t> ones(256 * 512, 0x3f80);  // bf16 1.0
      tilejit::DeviceBuffer a = upload(ones), b = upload(ones), c(256 * 256 * 4);
      // samples::persistent_matmul_kernel: a tile loop around a pipelined K loop, with warp roles; every wait is an
      // mbarrier wait.
      tilejit::samples::persistent_matmul_kernel().launch(nullptr, dim3(2), Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3), tilejit::TensorView<bf16, 2>(a.data(), {256, 512}),
                    tilejit::TensorView<bf16, 2>(b.data(), {256, 512}), tilejit::TensorView<f32, 2>(c.data(), {256, 256}));
      tilejit::synchronize();
      std::vector<float> hc(256 * 256);
      c.download(hc.data(), hc.size() * 4);
      for (float v : hc)
        if (v != 512.0f) {
          std::printf("wrong product: %g (expected 512)\n", static_cast<double>(v));
          return 3;
        }
    } else {
      std::fprintf(stderr, "unknown case %s\n", which.c_str());
      return 2;
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::printf("launch failed: %s\n", e.what());
    return 1;
  }
  std::printf("completed\n");
  return 0;
}
