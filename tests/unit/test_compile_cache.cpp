// The compile caches seen from a kernel: one compile per configuration under concurrency, disk-cache
// hits across kernel objects and processes, and a cache folder that many processes share unharmed.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <random>
#include <thread>
#include <vector>

#include "child_processes.h"
#include "tilejit/runtime/disk_cache.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;

namespace {
// A kernel whose generated source is new to the cache folder: `salt` is baked into the code.
auto salted_kernel(float salt) {
  return tilejit::kernel("salted", [salt](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM) {
    auto m = program_id(0) * BM;
    descriptor_store(y, {m, 0}, descriptor_load(x, {m, 0}, {BM, 32}) * salt);
  });
}

float fresh_salt() {
  std::random_device rd;
  return 1.0f + static_cast<float>(rd() % 1000003) * 1e-7f;
}
}  // namespace

TEST_CASE("16 threads warming up one cold kernel compile it once; other objects hit the disk cache") {
  const float salt = fresh_salt();
  auto k = salted_kernel(salt);
  const tilejit::Config cfg{{"BM", 16}};
  const uint64_t before = tilejit::runtime::compile_count();
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) threads.emplace_back([&] { k.warmup({cfg}); });
  for (auto& t : threads) t.join();
  CHECK(tilejit::runtime::compile_count() - before == 1);

  k.warmup({cfg});  // already compiled for this kernel object
  CHECK(tilejit::runtime::compile_count() - before == 1);

  auto again = salted_kernel(salt);  // another object, same code: found on disk
  again.warmup({cfg});
  CHECK(tilejit::runtime::compile_count() - before == 1);

  again.warmup({tilejit::Config{{"BM", 32}}});  // a new configuration is new code
  CHECK(tilejit::runtime::compile_count() - before == 2);
}

TEST_CASE("8 processes x 50 rounds sharing one cache folder leave only valid entries") {
  const float base = fresh_salt();
  tilejit::testing::run_in_children(8, [&](int p) {
    try {
      for (int round = 0; round < 50; ++round) {
        auto k = salted_kernel(base + static_cast<float>((round + p) % 5));
        k.warmup({tilejit::Config{{"BM", 16}}});
      }
    } catch (...) {
      return 1;
    }
    return 0;
  });
  tilejit::DiskCache cache(tilejit::knobs().cache_dir);
  const auto entries = cache.list();
  CHECK(entries.size() >= 5);
  for (const auto& e : entries) {
    INFO(e.file);
    CHECK(e.valid);
  }
  // The five kernels are now on disk: warming them up in this process compiles nothing.
  const uint64_t before = tilejit::runtime::compile_count();
  for (int i = 0; i < 5; ++i) salted_kernel(base + static_cast<float>(i)).warmup({tilejit::Config{{"BM", 16}}});
  CHECK(tilejit::runtime::compile_count() == before);
}
