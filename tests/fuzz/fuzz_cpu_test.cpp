// Random programs on the CPU: each one of a fixed seed range (of both families: make_program's and the programs
// with products) is traced, run in the interpreter and compiled by NVRTC for sm_90a; anything but success or a
// UserError fails, with the seed and the program's C++.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <regex>
#include <string>

#include "program.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/interp/interp.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/tilejit.h"

using tilejit::fuzz::make_product_program;
using tilejit::fuzz::make_program;
using tilejit::fuzz::Program;

namespace {
// The seed range of the CI run (about a minute on two cores), and a wall-clock cap in case a slow machine
// cannot finish it: the programs not run are reported, never failed.
constexpr uint64_t kSeeds = 400;
constexpr double kBudgetSeconds = 90;
// The same for the programs with products (each takes longer to compile: tensor-core loops and epilogues).
constexpr uint64_t kProductSeeds = 150;
constexpr double kProductBudgetSeconds = 60;
/// Runs `body` (interpret and compile seed `seed`'s program `p`), counting a UserError as a refusal (allowed: the
/// generator stays inside the rules, so it should be rare, which the callers check) and any other exception as a
/// failure, reported with the program's C++.
template <class F>
void run_classified(const Program& p, uint64_t seed, int& refused, int& failed, F&& body) {
  try {
    body();
  } catch (const tilejit::UserError& e) {
    ++refused;
    MESSAGE("seed " << seed << " refused: " << std::string(e.what()));
  } catch (const std::exception& e) {
    ++failed;
    FAIL_CHECK("seed " << seed << ": " << std::string(e.what()) << "\n" << p.cpp());
  }
}

}  // namespace

TEST_CASE("fuzz: a seed always makes the same program") {
  for (uint64_t seed : {0ull, 7ull, 123456789ull}) {
    const Program a = make_program(seed), b = make_program(seed);
    CHECK(a.cpp() == b.cpp());
    CHECK(a.kernel->graph(a.config)->hash() == b.kernel->graph(b.config)->hash());
  }
  CHECK(make_program(1).cpp() != make_program(2).cpp());
  for (uint64_t seed : {0ull, 7ull, 123456789ull}) {
    const Program a = make_product_program(seed), b = make_product_program(seed);
    CHECK(a.cpp() == b.cpp());
    CHECK(a.kernel->graph(a.config)->hash() == b.kernel->graph(b.config)->hash());
  }
  CHECK(make_product_program(1).cpp() != make_product_program(2).cpp());
}

TEST_CASE("fuzz: random programs interpret and compile for sm_90a") {
  const auto start = std::chrono::steady_clock::now();
  int run = 0, refused = 0, failed = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kBudgetSeconds) break;
    ++run;
    const Program p = make_program(seed);
    run_classified(p, seed, refused, failed, [&] {
      tilejit::fuzz::HostTensors host(p);
      const auto g = p.kernel->graph(p.config);
      const auto args = p.args(host.data());
      tilejit::interp::run(*g, p.grid, args);
      (void)tilejit::runtime::compile_only(*p.kernel, p.config);
    });
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz: %d programs interpreted and compiled in %.1f s, %d refused (UserError), %d failed\n", run, secs, refused,
              failed);
  CHECK(failed == 0);
  CHECK(refused * 20 <= run);  // at most 5% of the programs may break a rule
  if (run < static_cast<int>(kSeeds)) MESSAGE("time budget reached after " << run << " of " << kSeeds << " programs");
}

TEST_CASE("fuzz: random programs with products interpret and compile for sm_90a, almost all without spills") {
  // TILEJIT_FUZZ_PRODUCTS=BEGIN-END runs seeds [BEGIN, END) instead, without a time budget (a sweep on the CPU).
  uint64_t begin = 0, end = kProductSeeds;
  double budget = kProductBudgetSeconds;
  if (const char* range = std::getenv("TILEJIT_FUZZ_PRODUCTS")) {
    char* dash = nullptr;
    begin = std::strtoull(range, &dash, 10);
    end = dash && *dash == '-' ? std::strtoull(dash + 1, nullptr, 10) : begin + 1;
    budget = 1e9;
  }
  const auto start = std::chrono::steady_clock::now();
  int run = 0, refused = 0, failed = 0, wgmma = 0, spilled = 0;
  for (uint64_t seed = begin; seed < end; ++seed) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > budget) break;
    ++run;
    const Program p = make_product_program(seed);
    run_classified(p, seed, refused, failed, [&] {
      tilejit::fuzz::HostTensors host(p);
      const auto g = p.kernel->graph(p.config);
      tilejit::interp::run(*g, p.grid, p.args(host.data()));
      const std::string log = tilejit::runtime::compile_only(*p.kernel, p.config);
      // Accumulators, a second product and epilogues fit in registers (as the GPU suite's run_both checks): a spill
      // is reported with the program, and may happen to few of them (checked below).
      if (log.find("0 bytes spill stores") == std::string::npos) {
        ++spilled;
        MESSAGE("seed " << seed << " spills: " << log << "\n" << p.cpp());
      }
      wgmma += tilejit::codegen::generate(*g).source.find("wgmma_m64n") != std::string::npos;
    });
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz: %d programs with products interpreted and compiled in %.1f s (%d on tensor cores), %d refused, %d spilled, %d failed\n",
              run, secs, wgmma, refused, spilled, failed);
  CHECK(failed == 0);
  CHECK(refused * 20 <= run);
  CHECK(spilled * 20 <= run);
  CHECK(wgmma * 10 >= run * 8);  // the family is about tensor cores: most products must take the wgmma path
  if (run < static_cast<int>(end - begin)) MESSAGE("time budget reached after " << run << " of " << end - begin << " programs");
}

TEST_CASE("fuzz: the seeds docs/testing.md names take the products' later choices") {
  // CUDA-core dots (Precision::ieee f32, f64), TMA-reduce stores and split-K: drawn from a second random stream, so
  // the other seeds keep their programs; these seeds are the examples docs/testing.md gives.
  const auto has = [](uint64_t seed, const char* text) { return make_product_program(seed).cpp().find(text) != std::string::npos; };
  for (uint64_t seed : {4ull, 70ull, 74ull}) CHECK_MESSAGE(has(seed, "Precision::ieee"), seed);
  for (uint64_t seed : {19ull, 20ull, 71ull}) CHECK_MESSAGE(has(seed, "Tensor<f64, 2> a"), seed);
  for (uint64_t seed : {1ull, 5ull, 10ull}) CHECK_MESSAGE(has(seed, ", StoreReduce::"), seed);
  for (uint64_t seed : {68ull, 147ull, 198ull}) CHECK_MESSAGE(has(seed, "program_id(2)"), seed);
  CHECK_FALSE(has(0, "StoreReduce::"));
  CHECK_FALSE(has(0, "Precision::ieee"));
}

namespace {
/// Each seed's program stages a conversion as `note` says and addresses the tile through `index` (its emitted
/// code names both); it interprets and compiles without spills.
void check_staged_seeds(std::initializer_list<uint64_t> seeds, const char* note, const char* index) {
  for (uint64_t seed : seeds) {
    CAPTURE(seed);
    const Program p = make_program(seed);
    const auto g = p.kernel->graph(p.config);
    const std::string src = tilejit::codegen::generate(*g).source;
    CHECK(src.find(note) != std::string::npos);
    CHECK(src.find(index) != std::string::npos);
    // A vector copy into or out of a swizzled tile stays within one unit: only a unit's elements are
    // consecutive there (a run of 8 from one xor_index read the next unit, past the tile's end on the last row).
    static const std::regex swizzled_copy(R"(tj::(?:lds|sts)<(\d+)>\([^;]*tj::xor_index<\d+, (\d+),)");
    for (auto it = std::sregex_iterator(src.begin(), src.end(), swizzled_copy); it != std::sregex_iterator(); ++it)
      CHECK_MESSAGE(std::stoi((*it)[1]) <= std::stoi((*it)[2]), it->str());
    tilejit::fuzz::HostTensors host(p);
    tilejit::interp::run(*g, p.grid, p.args(host.data()));
    CHECK(tilejit::runtime::compile_only(*p.kernel, p.config).find("0 bytes spill stores") != std::string::npos);
  }
}
}  // namespace

TEST_CASE("fuzz: programs whose layout conversions pad their rows interpret and compile") {
  // The seeds of 0-29999 whose conversion goes through a padded tile (layout::conversion_padding).
  check_staged_seeds({1985ull, 2181ull, 7881ull, 13216ull}, "rows padded by", "tj::padded_index<");
}

TEST_CASE("fuzz: programs whose layout conversions swizzle their staged tile interpret and compile") {
  // The seeds of 0-29999 whose conversion goes through an XOR-swizzled tile (layout::staging_layout: no padding
  // of whole vectors removed their conflicts).
  check_staged_seeds({9246ull, 22270ull, 25950ull, 26112ull}, "XOR-swizzled by", "tj::xor_index<");
}
