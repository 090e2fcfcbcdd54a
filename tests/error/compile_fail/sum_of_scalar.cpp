// Must not compile: sum() of a rank-0 value (there is no axis to reduce).
// expect: reductions need a block of rank >= 1
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("sum_scalar", [](Tensor<f32, 1> x, Scalar<f32> s) {
  auto r = sum(s, 0);
  (void)r;
  (void)x;
});
