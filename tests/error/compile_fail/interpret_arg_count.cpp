// Must not compile: interpret() with one kernel argument too few (Block<> parameters are not passed).
// expect: wrong number of kernel arguments
#include <tilejit/tilejit.h>

#include <vector>

using namespace tilejit::dsl;

void run_it() {
  auto k = tilejit::kernel("scale", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<f32> a, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    store(y, offs, load(x, offs) * a);
  });
  std::vector<float> X(64), Y(64);
  k.interpret(tilejit::dim3(1), tilejit::Config{{"B", 64}}, tilejit::TensorView<f32, 1>(X.data(), {64}),
              tilejit::TensorView<f32, 1>(Y.data(), {64}));
}
