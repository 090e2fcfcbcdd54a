// A CUDA graph capture on one stream that ends on every path and destroys what it produced (GPU tests).
#pragma once

#include "driver_api.h"
#include "tilejit/runtime/driver.h"

namespace gpu_test {

struct Capture {
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  explicit Capture(CUstream s) : stream(s) {
    TILEJIT_CHECK_CU(
        tilejit::detail::driver().cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  void end() {
    if (stream) TILEJIT_CHECK_CU(tilejit::detail::driver().cuStreamEndCapture(stream, &graph));
    stream = nullptr;
  }
  ~Capture() {
    auto& d = tilejit::detail::driver();
    if (stream) d.cuStreamEndCapture(stream, &graph);
    if (exec) d.cuGraphExecDestroy(exec);
    if (graph) d.cuGraphDestroy(graph);
  }
};

}  // namespace gpu_test
