// Must not compile: f32 + bf16 without an explicit .to<T>() (floats of different types never mix).
// expect: the operands of this operator have different element types; convert one with .to<T>()
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("mixed", [](Tensor<f32, 1> x, Tensor<bf16, 1> y) {
  auto offs = arange(0, 16);
  auto s = load(x, offs) + load(y, offs);
  store(x, offs, s);
});
