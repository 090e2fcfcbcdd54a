// Entry point of the GPU suite: says whether kernels run on a GPU or are only compiled.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "tilejit/runtime/driver.h"

int main(int argc, char** argv) {
  if (tilejit::has_gpu()) {
    std::printf("tilejit gpu suite: running on %s\n", tilejit::devices().front().name.c_str());
  } else {
    std::printf("tilejit gpu suite: no GPU (%s)\n  -> GPU comparisons skipped; every kernel is run in the interpreter "
                "and compiled with NVRTC for sm_90a instead\n",
                tilejit::driver_error().c_str());
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
