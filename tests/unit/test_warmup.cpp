// kernel.warmup(): compiles ahead of launch (with NVRTC only, where there is no GPU) and reports errors early.
#include <doctest/doctest.h>

#include "tilejit/runtime/driver.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;

TEST_CASE("warmup compiles every configuration and surfaces tracing errors") {
  auto k = tilejit::kernel("warm", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM) {
    descriptor_store(y, {program_id(0) * BM, 0}, descriptor_load(x, {program_id(0) * BM, 0}, {BM, 32}));
  });
  CHECK_NOTHROW(k.warmup({tilejit::Config{{"BM", 32}}, tilejit::Config{{"BM", 64}}}));
  // BM = 512 is split into two TMA operations; BM = 4096 makes a tile larger than shared memory,
  // refused while tracing, before any compiler runs.
  CHECK_NOTHROW(k.warmup({tilejit::Config{{"BM", 512}}}));
  CHECK_THROWS_AS(k.warmup({tilejit::Config{{"BM", 4096}}}), tilejit::UserError);
  // A configuration without BM is a UserError naming the missing value.
  CHECK_THROWS_WITH_AS(k.warmup({tilejit::Config{{"BN", 8}}}), doctest::Contains("BM"), tilejit::UserError);
}
