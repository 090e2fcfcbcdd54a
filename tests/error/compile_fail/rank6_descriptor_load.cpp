// Must not compile: descriptor_load on a rank-6 tensor (TMA has at most 5 dimensions; merge first).
// expect: descriptor_load: TMA addresses at most 5 dimensions; view the tensor with t.merge({...})
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("rank6", [](Tensor<f32, 6> x) {
  descriptor_load(x, {0, 0, 0, 0, 0, 0}, {2, 2, 2, 2, 2, 4});
});
