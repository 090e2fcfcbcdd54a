// A program using the installed tilejit headers and libraries; prints what it finds.
#include <cstdio>

#include <tilejit/error.h>
#include <tilejit/runtime/driver.h>
#include <tilejit/runtime/knobs.h>
#include <tilejit/version.h>

int main() {
  int n = tilejit::device_count();
  std::printf("tilejit %s: %d GPU(s), cache %s\n", TILEJIT_VERSION_STRING, n,
              tilejit::knobs().cache_dir.c_str());
  try {
    tilejit::ensure_driver();
  } catch (const tilejit::CudaError& e) {
    std::printf("no usable driver (expected on CPU machines): %s\n", e.what());
  }
  return n >= 0 ? 0 : 1;
}
