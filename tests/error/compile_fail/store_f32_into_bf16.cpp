// Must not compile: descriptor_store of an f32 block into a bf16 tensor (no implicit narrowing).
// expect: descriptor_store: the value's element type differs from the tensor's; convert with .to<T>()
#include <tilejit/tilejit.h>

using namespace tilejit::dsl;

auto k = tilejit::kernel("store_f32_bf16", [](Tensor<bf16, 2> y) {
  descriptor_store(y, {0, 0}, zeros<f32>({16, 16}));
});
