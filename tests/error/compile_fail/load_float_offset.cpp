// Must not compile: a floating-point literal as an element offset.
// expect: an element offset must be an integer, not a floating-point number
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("float_offset", [](Tensor<f32, 1> x) { store(x, 1, load(x, 0.5)); });
