// Must not compile: a float literal times an i32 block (literals adopt the block's type, and 0.5 is no i32).
// expect: a floating-point literal cannot be combined with an integer or bool block
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("float_literal", [](Tensor<i32, 1> x) {
  auto offs = arange(0, 16);
  store(x, offs, offs * 0.5);
});
