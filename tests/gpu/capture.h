// A CUDA graph capture on one stream that ends on every path and destroys what it produced (GPU tests).
#pragma once

#include <doctest/doctest.h>

#include <string>

#include "driver_api.h"
#include "tilejit/error.h"
#include "tilejit/config.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"

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

/// Without a GPU: compiles `k` for `cfg` with NVRTC (there is nothing to capture on) and returns true.
template <class K>
bool compiled_only(const K& k, const tilejit::Config& cfg) {
  if (tilejit::has_gpu()) return false;
  k.warmup({cfg});
  MESSAGE("no GPU: compiled only");
  return true;
}

/// A new non-blocking stream in the current context (made current first when there is none).
inline CUstream new_stream() {
  tilejit::ensure_context();
  CUstream s = nullptr;
  TILEJIT_CHECK_CU(tilejit::detail::driver().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}

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
