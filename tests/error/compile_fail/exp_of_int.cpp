// Must not compile: exp() of an i32 block (transcendentals need a float block).
// expect: exp() needs a f16/bf16/f32/f64 block; convert with .to<f32>()
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("exp_int", [](Tensor<i32, 1> x) {
  auto offs = arange(0, 16);
  store(x, offs, exp(load(x, offs)));
});
