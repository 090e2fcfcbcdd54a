// Must not compile: arithmetic on fp8 blocks (fp8 is a storage type).
// expect: fp8 is a storage type; convert with .to<f32>() before arithmetic
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("fp8_add", [](Tensor<f8e4m3, 2> x) {
  auto t = descriptor_load(x, {0, 0}, {16, 16});
  descriptor_store(x, {0, 0}, t + t);
});
