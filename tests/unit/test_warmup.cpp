// kernel.warmup(): compiles ahead of launch (with NVRTC only, where there is no GPU) and reports errors early.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/log.h"
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

// The attention backward's dK/dV kernel (sample 14), causal, D = 128, 64 x 128 blocks at 4 stages with warp roles:
// its consumer warpgroups spill at the 232 registers that tilejit's default producer (40) leaves them, and not at
// the 240 a producer of 24 leaves. The runtime compiles it again with the leaner producer and keeps that binary.
TEST_CASE("a warp-specialized kernel whose consumers spill is compiled again with a leaner producer, and that binary kept") {
  std::vector<std::pair<tilejit::LogLevel, std::string>> messages;
  tilejit::set_log_callback([&](tilejit::LogLevel l, std::string_view m) { messages.emplace_back(l, std::string(m)); });
  tilejit::set_log_level(tilejit::LogLevel::info);
  const auto dkdv = tilejit::samples::attention_backward_dkdv_kernel();
  const auto config = tilejit::Config{{"BM", 64}, {"BN", 128}, {"D", 128}, {"CAUSAL", 1}}.num_warps(8).num_stages(4).warp_specialize();
  CHECK_NOTHROW(dkdv.warmup({config}));
  tilejit::set_log_callback(nullptr);
  tilejit::set_log_level(tilejit::LogLevel::warn);
  bool retried = false, warned = false;
  for (const auto& [level, text] : messages) {
    if (text.find("compiled again with Config::producer_registers(24)") != std::string::npos) {
      retried = true;
      CHECK_MESSAGE(text.find("it spills 0 bytes: the second is used") != std::string::npos, text);
    }
    warned = warned || (level == tilejit::LogLevel::warn && text.find("spills") != std::string::npos);
  }
  CHECK(retried);
  CHECK_FALSE(warned);
  // Named by the user, the producer's registers are kept: no retry, and the spill warning names the remedy.
  messages.clear();
  tilejit::set_log_callback([&](tilejit::LogLevel l, std::string_view m) { messages.emplace_back(l, std::string(m)); });
  tilejit::set_log_level(tilejit::LogLevel::info);
  CHECK_NOTHROW(dkdv.warmup({tilejit::Config(config).producer_registers(40)}));
  tilejit::set_log_callback(nullptr);
  tilejit::set_log_level(tilejit::LogLevel::warn);
  retried = warned = false;
  for (const auto& [level, text] : messages) {
    retried = retried || text.find("compiled again") != std::string::npos;
    warned = warned || (level == tilejit::LogLevel::warn && text.find("spills") != std::string::npos &&
                        text.find("more warps (Config::num_warps)") != std::string::npos);
  }
  CHECK_FALSE(retried);
  CHECK(warned);
}
