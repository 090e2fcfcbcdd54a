// A CUDA graph capture on one stream that ends on every path and destroys what it produced (GPU tests).
#pragma once

#include <string>

#include "driver_api.h"
#include "tilejit/error.h"
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

/// Runs `launch` while stream `s` is being captured and ends the capture. Returns the message of the
/// UserError that refused the launch, or "" when it was not refused (the capture stays valid either way).
template <class F>
std::string refused_under_capture(CUstream s, F launch) {
  Capture cap(s);
  std::string what;
  try {
    launch();
  } catch (const tilejit::UserError& e) {
    what = e.what();
  }
  cap.end();
  return what;
}

}  // namespace gpu_test
