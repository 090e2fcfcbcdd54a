// Must not compile: where() between an integer and a floating-point literal (which type would the block have?).
// expect: one literal is an integer and the other a floating-point number
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("where_mixed", [](Tensor<f32, 1> x) {
  auto offs = arange(0, 16);
  store(x, offs, where(offs < 8, 1, 0.5f));
});
