// Must compile: the control case of the compile-fail tests (same flags, valid uses of what the others misuse).
#include <tilejit/tilejit.h>

#include <vector>

using namespace tilejit::dsl;

void run_it() {
  auto k = tilejit::kernel("ok", [](Tensor<f32, 1> x, Tensor<bf16, 2> y, Tensor<f32, 6> z, Scalar<f32> a, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    auto v = load(x, offs) + load(x, offs).to<bf16>().to<f32>();
    store(x, offs, exp(offs.to<f32>()) * a + v + (offs * 2).to<f32>() * 0.5f + (offs % 3).to<f32>());
    descriptor_store(y, {0, 0}, zeros<f32>({16, 16}).to<bf16>());
    auto t = descriptor_load(z.merge({3, 3}), {0, 0}, {8, 8});
    auto s = sum(sum(t, 1), 0);
    (void)s;
  });
  std::vector<float> X(64), Z(64);
  std::vector<tilejit::bfloat16> Y(64);
  (void)k.bind(tilejit::TensorView<f32, 1>(X.data(), {64}), tilejit::TensorView<bf16, 2>(Y.data(), {8, 8}),
               tilejit::TensorView<f32, 6>(Z.data(), {1, 1, 1, 1, 8, 8}), 2.0f);
}
