// Must not compile: % on f32 blocks (remainder is an integer operation).
// expect: % needs integer operands
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("rem_float", [](Tensor<f32, 1> x) {
  auto offs = arange(0, 16);
  auto v = load(x, offs);
  store(x, offs, v % v);
});
