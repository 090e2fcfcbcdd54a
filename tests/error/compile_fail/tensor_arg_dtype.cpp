// Must not compile: a bf16 host tensor given to an f32 kernel parameter.
// expect: tensor argument's element type differs from the kernel parameter's
#include <tilejit/tilejit.h>

#include <vector>

using namespace tilejit::dsl;

void run_it() {
  auto k = tilejit::kernel("copy", [](Tensor<f32, 1> x) { (void)x; });
  std::vector<tilejit::bfloat16> X(64);
  k.interpret(tilejit::dim3(1), tilejit::Config{}, tilejit::TensorView<bf16, 1>(X.data(), {64}));
}
