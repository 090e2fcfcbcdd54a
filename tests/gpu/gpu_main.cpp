// Entry point of the GPU suite: says whether kernels run on a GPU or are only compiled.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "gpu_harness.h"

int main(int argc, char** argv) {
  if (tilejit::has_gpu()) {
    std::printf("tilejit gpu suite: running on %s\n", tilejit::devices().front().name.c_str());
  } else {
    std::printf("tilejit gpu suite: no GPU (%s)\n  -> GPU comparisons skipped; every kernel is run in the interpreter "
                "and compiled with NVRTC for sm_90a instead\n",
                tilejit::driver_error().c_str());
  }
  doctest::Context ctx(argc, argv);
  const int rc = ctx.run();
  if (!ctx.shouldExit())
    std::printf("tilejit gpu suite: %d cases, %d matched the interpreter%s\n", gpu_test::g_cases, gpu_test::g_matched,
                gpu_test::on_gpu() ? "" : " (no GPU: compiled only)");
  return rc;
}
