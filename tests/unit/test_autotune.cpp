// The autotuner without a GPU: search spaces, keys, pruning and heuristics, selection with an injected timer,
// unusable candidates, in-place safety in the interpreter, one tuning per key under threads, decisions on
// disk.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "child_processes.h"
#include "launch_internal.h"
#include "tilejit/ir/effects.h"
#include "tilejit/runtime/autotune.h"
#include "tilejit/runtime/decisions.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/log.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::TuneArgs;

namespace {

// A different salt makes a different kernel for every cache (source hash, compile cache).
float fresh_salt() {
  std::random_device rd;
  return 1.0f + static_cast<float>(rd() % 1000003) * 1e-7f;
}

// y[i] += x[i] * salt: a kernel that accumulates into its output.
auto accumulate_kernel(float salt, const char* name = "accumulate") {
  return tilejit::kernel(name, [salt](Tensor<f32, 1> x, Tensor<f32, 1> y, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    auto mask = offs < x.size(0);
    store(y, offs, load(y, offs, mask) + load(x, offs, mask) * salt, mask);
  });
}

// A timer with scripted times that runs each candidate `runs` times, as a real timer would.
class ScriptedTimer : public tilejit::TuneTimer {
 public:
  explicit ScriptedTimer(std::map<int64_t, double> ms_by_b, int runs = 3)
      : ms_by_b_(std::move(ms_by_b)), runs_(runs) {}
  double measure(const Config& c, tilejit::TuneRun& run) override {
    calls.fetch_add(1);
    for (int r = 0; r < runs_; ++r) {
      run.restore();
      run.flush_l2();
      run.launch();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // lets concurrent callers pile up
    const auto it = ms_by_b_.find(c["B"]);
    if (it == ms_by_b_.end()) throw tilejit::UserError("no scripted time", c.str(), "");
    return it->second;
  }
  std::pair<std::string, int> device() const override { return {"test device", 4}; }
  std::atomic<int> calls{0};

 private:
  std::map<int64_t, double> ms_by_b_;
  int runs_;
};

tilejit::dim3 grid_1d(const Config& c, const TuneArgs& a) {
  return tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(a.size(0, 0), c["B"])));
}

std::vector<std::string> strs(const std::vector<Config>& configs) {
  std::vector<std::string> out;
  for (const Config& c : configs) out.push_back(c.str());
  return out;
}

}  // namespace

TEST_CASE("search spaces expand in order; bad spaces are UserErrors at the caller's line") {
  const tilejit::TuneSpace s{{"BM", {64, 128}}, {"BN", {32, 64}}, {"num_warps", {4, 8}}};
  const auto c = s.configs();
  REQUIRE(c.size() == 8);
  CHECK(c[0] == Config{{"BM", 64}, {"BN", 32}}.num_warps(4));
  CHECK(c[1] == Config{{"BM", 64}, {"BN", 32}}.num_warps(8));  // the last list turns fastest
  CHECK(c[2] == Config{{"BM", 64}, {"BN", 64}}.num_warps(4));
  CHECK(c[7] == Config{{"BM", 128}, {"BN", 64}}.num_warps(8));
  const tilejit::TuneSpace e{{Config{{"B", 1}}, Config{{"B", 2}}.num_warps(8).num_stages(3)}};
  CHECK(e.configs() == std::vector<Config>{Config{{"B", 1}}, Config{{"B", 2}}.num_warps(8).num_stages(3)});

  CHECK_THROWS_WITH_AS((tilejit::TuneSpace{{"num_warps", {4, 3}}}),
                       doctest::Contains("num_warps must be a power of two"), tilejit::UserError);
  CHECK_THROWS_WITH_AS((tilejit::TuneSpace{{"BM", {}}}), doctest::Contains("value list of 'BM' is empty"),
                       tilejit::UserError);
  CHECK_THROWS_WITH_AS((tilejit::TuneSpace{{"BM", {1}}, {"BM", {2}}}), doctest::Contains("two value lists"),
                       tilejit::UserError);
  CHECK_THROWS_WITH_AS(tilejit::TuneSpace(std::vector<Config>{}), doctest::Contains("test_autotune.cpp"),
                       tilejit::UserError);
}

TEST_CASE("the default key buckets sizes to powers of two and names dtypes; key scalars and custom keys") {
  auto k = tilejit::kernel(
      "keyed", [](Tensor<f32, 2> x, Tensor<bf16, 1> y, Scalar<i32> n, Scalar<f32> a, Meta<"B">) {
        store(y, arange(0, 16), load(x, arange(0, 16)).to<bf16>() * a.to<bf16>() + n.to<f32>().to<bf16>());
      });
  std::vector<float> xs(2048);
  std::vector<uint16_t> ys(2048);
  const auto X = [&](int64_t r, int64_t c) { return tilejit::TensorView<f32, 2>(xs.data(), {r, c}); };
  const tilejit::TensorView<bf16, 1> Y(ys.data(), {1000});
  auto t = k.autotune({{"B", {16}}}).grid([](const Config&) { return tilejit::dim3(1); });
  CHECK(t.tuner().key_text(k.bind(X(3, 17), Y, 5, 1.5f)) == "f32[4, 32], bf16[1024]");
  std::vector<int64_t> a, b;
  t.tuner().key(k.bind(X(3, 17), Y, 5, 1.5f), a);
  t.tuner().key(k.bind(X(4, 32), Y, 6, 2.5f), b);
  CHECK(a == b);  // same bucket, scalars not part of the key
  t.tuner().key(k.bind(X(5, 32), Y, 6, 2.5f), b);
  CHECK(a != b);  // 5 rows round up to 8

  auto s = k.autotune({{"B", {16}}}).key_scalars({2}).grid([](const Config&) { return tilejit::dim3(1); });
  CHECK(s.tuner().key_text(k.bind(X(3, 17), Y, 5, 1.5f)) == "f32[4, 32], bf16[1024], arg2=5");
  s.tuner().key(k.bind(X(3, 17), Y, 5, 1.5f), a);
  s.tuner().key(k.bind(X(3, 17), Y, 6, 1.5f), b);
  CHECK(a != b);

  auto c = k.autotune({{"B", {16}}}).key([](const TuneArgs& args) {
    return std::vector<int64_t>{args.size(0, 1) / 100, static_cast<int64_t>(args.scalar(3))};
  });
  CHECK(c.tuner().key_text(k.bind(X(3, 250), Y, 5, 1.5f)) == "(2, 1)");
}

TEST_CASE("TuneArgs reports misuse with the argument, the value and the limit") {
  auto k = tilejit::kernel("args",
                           [](Tensor<f32, 1> x, Scalar<f32> a, Meta<"B">) { store(x, arange(0, 16), a); });
  std::vector<float> xs(16);
  const auto bound = k.bind(tilejit::TensorView<f32, 1>(xs.data(), {16}), 2.0f);
  const TuneArgs args(bound);
  CHECK(args.count() == 2);
  CHECK(args.size(0, 0) == 16);
  CHECK(args.scalar(1) == 2.0);
  CHECK_THROWS_WITH_AS(args.size(0, 1), doctest::Contains("tensor argument 0 has no dimension 1"),
                       tilejit::UserError);
  CHECK_THROWS_WITH_AS(args.tensor(1), doctest::Contains("launch argument 1 is not a tensor"),
                       tilejit::UserError);
  CHECK_THROWS_WITH_AS(args.arg(2), doctest::Contains("there is no launch argument 2"), tilejit::UserError);
}

TEST_CASE("autotune() without a space: the matrix-product space for BM / BN / BK kernels, an error naming the line for others") {
  auto gemm = tilejit::kernel("default_space_gemm", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BN"> BN,
                                                       Meta<"BM"> BM, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
  std::vector<tilejit::bfloat16> host(16 * 16);
  const tilejit::TensorView<bf16, 2> A(host.data(), {16, 16});
  auto tuned = gemm.autotune().grid([](const Config& c, const TuneArgs& a) {
    return tilejit::dim3(tilejit::cdiv(a.size(0, 0), c["BM"]), tilejit::cdiv(a.size(1, 1), c["BN"]));
  });
  const std::vector<std::string> want = strs(tilejit::TuneSpace::matmul().configs());
  CHECK(want.size() == 18);
  CHECK(std::count_if(want.begin(), want.end(), [](const std::string& c) { return c.find("cluster=2x1") != std::string::npos; }) == 2);
  CHECK(strs(tuned.candidates(nullptr, A, A, A)) == want);  // 16 x 16 operands: the skinny tilings too
  // Operands of 64 rows and columns or more: the 16- and 32-row tilings are dropped by the space's rule; a prune of
  // the caller's own applies besides it.
  const tilejit::TensorView<bf16, 2> big(host.data(), {64, 4096}), skinny(host.data(), {4096, 48});
  std::vector<std::string> large = want;
  std::erase_if(large, [](const std::string& c) { return c.find("BM=16,") != std::string::npos || c.find("BM=32,") != std::string::npos; });
  CHECK(large.size() == 16);
  CHECK(strs(tuned.candidates(nullptr, big, big, big)) == large);
  CHECK(strs(tuned.candidates(nullptr, big, skinny, big)) == want);  // an extent of 48 in any 2-D tensor
  auto pruned = gemm.autotune().prune([](const Config& c, const TuneArgs&) { return c["BN"] != 64; });
  for (const std::string& c : strs(pruned.candidates(nullptr, big, big, big))) {
    CHECK(c.find("BM=16,") == std::string::npos);
    CHECK(c.find("BN=64,") != std::string::npos);
  }
  CHECK(std::set<std::string>(want.begin(), want.end()).size() == want.size());  // no two alike
  CHECK(std::count_if(want.begin(), want.end(), [](const std::string& c) {
          return c.find("warp_specialize") != std::string::npos && c.find("warp_specialize=0") == std::string::npos;
        }) == 3);
  CHECK(std::count_if(want.begin(), want.end(), [](const std::string& c) { return c.find("persistent") != std::string::npos; }) == 1);

  auto other = accumulate_kernel(fresh_salt());
  const int line = __LINE__ + 3;
  bool thrown = false;
  try {
    (void)other.autotune();
  } catch (const tilejit::UserError& e) {
    thrown = true;
    const std::string what = e.what();
    CHECK(what.find("test_autotune.cpp:" + std::to_string(line)) != std::string::npos);
    CHECK(what.find("BM, BN and BK") != std::string::npos);
    CHECK(e.value() == "Meta parameters B");
  }
  CHECK(thrown);
}

TEST_CASE("heuristics derive values, duplicates collapse, pruning drops candidates before compiling") {
  auto k = accumulate_kernel(fresh_salt());
  std::vector<float> xs(1000), ys(1000);
  const tilejit::TensorView<f32, 1> X(xs.data(), {1000}), Y(ys.data(), {1000});
  auto t = k.autotune({{"B", {64, 128, 256, 512}}, {"num_warps", {1, 2}}})
               .grid(grid_1d)
               .heuristic("num_warps", [](const Config& c, const TuneArgs&) { return c["B"] >= 256 ? 8 : 4; })
               .prune([](const Config& c, const TuneArgs& a) { return c["B"] > a.size(0, 0) / 2; });
  CHECK(strs(t.candidates(nullptr, X, Y)) == std::vector<std::string>{"B=64, num_warps=4, num_stages=auto",
                                                             "B=128, num_warps=4, num_stages=auto",
                                                             "B=256, num_warps=8, num_stages=auto"});
  auto listed = k.autotune({Config{{"B", 64}}, Config{{"B", 128}}.num_warps(8)}).grid(grid_1d);
  CHECK(strs(listed.candidates(nullptr, X, Y)) ==
        std::vector<std::string>{"B=64, num_warps=4, num_stages=auto", "B=128, num_warps=8, num_stages=auto"});
  auto none =
      k.autotune({{"B", {64}}}).grid(grid_1d).prune([](const Config&, const TuneArgs&) { return true; });
  CHECK_THROWS_WITH_AS(none.candidates(nullptr, X, Y), doctest::Contains("dropped every configuration"),
                       tilejit::UserError);
}

TEST_CASE("selection: the fastest candidate by the injected timer wins; outputs equal one launch of it") {
  auto k = accumulate_kernel(fresh_salt());
  const int64_t n = 1000;
  std::vector<float> xs(n), ys(n);
  for (int64_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i % 13), ys[i] = static_cast<float>(i % 7) - 3;
  const tilejit::TensorView<f32, 1> X(xs.data(), {n}), Y(ys.data(), {n});
  const std::vector<float> y0 = ys;
  auto timer = std::make_shared<ScriptedTimer>(
      std::map<int64_t, double>{{32, 0.5}, {64, 0.2}, {128, 0.3}, {256, 0.9}});
  auto t = k.autotune({{"B", {32, 64, 128, 256}}}).grid(grid_1d).timer(timer);
  const uint64_t tunings = tilejit::autotune::counters().tunings;
  t.launch(nullptr, X, Y);  // tunes (12 launches in all, each undone), then launches the winner once
  CHECK(timer->calls == 4);
  CHECK(tilejit::autotune::counters().tunings == tunings + 1);
  CHECK(t.tune(nullptr, X, Y) == Config{{"B", 64}});
  // In-place safety: every timed run accumulated into y, and y is as after one launch of the winner.
  std::vector<float> expect = y0;
  k.interpret(tilejit::dim3(16), Config{{"B", 64}}, X, tilejit::TensorView<f32, 1>(expect.data(), {n}));
  CHECK(ys == expect);
  t.launch(nullptr, X, Y);  // the same key: no new tuning
  CHECK(timer->calls == 4);
}

TEST_CASE("unusable candidates are warnings; when all are unusable the error lists each and why") {
  const float salt = fresh_salt();  // new code: no decision from an earlier run
  auto k = tilejit::kernel("tiles", [salt](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"B"> B) {
    descriptor_store(y, {program_id(0) * B, 0}, descriptor_load(x, {program_id(0) * B, 0}, {B, 64}) * salt);
  });
  std::vector<float> xs(512 * 64), ys(512 * 64);
  const tilejit::TensorView<f32, 2> X(xs.data(), {512, 64}), Y(ys.data(), {512, 64});
  auto grid = [](const Config& c, const TuneArgs& a) {
    return tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(a.size(0, 0), c["B"])));
  };
  // B = 4096 and 8192 make tiles larger than shared memory: refused while tracing, before any compiler runs.
  auto timer = std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{32, 1.0}, {64, 2.0}, {4096, 0.1}});
  auto some = k.autotune({{"B", {4096, 64, 32}}}).grid(grid).timer(timer);
  CHECK(some.tune(nullptr, X, Y) == Config{{"B", 32}});
  CHECK(timer->calls == 2);  // the unusable one is never run

  auto all = k.autotune({{"B", {4096, 8192}}}).grid(grid).timer(timer);
  try {
    all.launch(nullptr, X, Y);
    FAIL("expected a UserError");
  } catch (const tilejit::UserError& e) {
    const std::string what = e.what();
    CHECK(what.find("no configuration of kernel 'tiles' is usable") != std::string::npos);
    CHECK(what.find("{B=4096, num_warps=4, num_stages=auto}: ") != std::string::npos);
    CHECK(what.find("{B=8192, num_warps=4, num_stages=auto}: ") != std::string::npos);
    CHECK(what.find("shared memory") != std::string::npos);
    CHECK(e.value().find("2 candidates") != std::string::npos);
  }
}

TEST_CASE("without a GPU or a timer, tuning compiles every candidate and picks the first usable one") {
  if (tilejit::has_gpu() && !tilejit::knobs().interpret) return;  // a GPU times candidates instead
  const float salt = fresh_salt();
  auto k = accumulate_kernel(salt);
  std::vector<float> xs(300, 1.0f), ys(300, 0.0f);
  const tilejit::TensorView<f32, 1> X(xs.data(), {300}), Y(ys.data(), {300});
  auto t = k.autotune({{"B", {256, 128, 64}}}).grid(grid_1d);
  const uint64_t compiles = tilejit::runtime::compile_count();
  CHECK(t.tune(nullptr, X, Y) == Config{{"B", 256}});
  CHECK(tilejit::runtime::compile_count() - compiles == 3);  // every candidate, so that errors surface
  t.launch(nullptr, X, Y);
  CHECK(ys[0] == salt);
  CHECK(ys[299] == salt);
}

TEST_CASE("16 threads asking for one key share one tuning and one decision") {
  const float salt = fresh_salt();
  auto k = accumulate_kernel(salt);
  auto timer =
      std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{64, 0.4}, {128, 0.2}, {256, 0.3}}, 1);
  auto t = k.autotune({{"B", {64, 128, 256}}}).grid(grid_1d).timer(timer);
  const uint64_t tunings = tilejit::autotune::counters().tunings;
  std::vector<std::vector<float>> xs(16, std::vector<float>(500, 1.0f)),
      ys(16, std::vector<float>(500, 2.0f));
  std::vector<Config> chosen(16);
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&, i] {
      const tilejit::TensorView<f32, 1> X(xs[static_cast<size_t>(i)].data(), {500}),
          Y(ys[static_cast<size_t>(i)].data(), {500});
      t.launch(nullptr, X, Y);
      chosen[static_cast<size_t>(i)] = t.tune(nullptr, X, Y);
    });
  for (auto& th : threads) th.join();
  CHECK(tilejit::autotune::counters().tunings == tunings + 1);
  CHECK(timer->calls == 3);
  for (size_t i = 0; i < 16; ++i) {
    CHECK(chosen[i] == Config{{"B", 128}});
    CHECK(ys[i][0] == 2.0f + salt);  // one launch each, whoever tuned
    CHECK(ys[i][499] == 2.0f + salt);
  }
}

TEST_CASE("decisions persist: a new tuner in a process that forgot them reads the file and times nothing") {
  const float salt = fresh_salt();
  std::vector<float> xs(700, 1.0f), ys(700, 0.0f);
  const tilejit::TensorView<f32, 1> X(xs.data(), {700}), Y(ys.data(), {700});
  auto timer = std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{64, 0.4}, {128, 0.5}, {256, 0.1}});
  auto first = accumulate_kernel(salt);
  auto t1 = first.autotune({{"B", {64, 128, 256}}}).grid(grid_1d).timer(timer);
  CHECK(t1.tune(nullptr, X, Y) == Config{{"B", 256}});
  CHECK(timer->calls == 3);

  tilejit::DecisionStore store(tilejit::knobs().cache_dir);
  bool found = false;
  for (const auto& f : store.list())
    if (f.decision && f.decision->id.kernel == "accumulate" && f.decision->config == Config{{"B", 256}} &&
        f.decision->id.device == "test device" && f.decision->id.key == "f32[1024], f32[1024]") {
      found = true;
      CHECK(f.decision->time_ms == doctest::Approx(0.1));
      CHECK(f.decision->candidates == 3);
    }
  CHECK(found);

  tilejit::autotune::forget_decisions();
  const uint64_t disk = tilejit::autotune::counters().disk_decisions;
  auto second = accumulate_kernel(salt);  // another kernel object with the same code
  auto t2 = second.autotune({{"B", {64, 128, 256}}}).grid(grid_1d).timer(timer);
  CHECK(t2.tune(nullptr, X, Y) == Config{{"B", 256}});
  CHECK(timer->calls == 3);
  CHECK(tilejit::autotune::counters().disk_decisions == disk + 1);

  // A different search space is a different decision.
  auto t3 = second.autotune({{"B", {64, 128}}}).grid(grid_1d).timer(timer);
  CHECK(t3.tune(nullptr, X, Y) == Config{{"B", 64}});
  CHECK(timer->calls == 5);
}

TEST_CASE("a change of the kernel that only a later candidate sees is a new decision") {
  const float salt = fresh_salt();
  std::vector<float> xs(700, 1.0f), ys(700, 0.0f);
  const tilejit::TensorView<f32, 1> X(xs.data(), {700}), Y(ys.data(), {700});
  // Two versions of one kernel that trace alike for B = 64 and differ for B = 256.
  auto version = [salt](float large_b_factor) {
    return tilejit::kernel("versioned", [salt, large_b_factor](Tensor<f32, 1> x, Tensor<f32, 1> y, Meta<"B"> B) {
      auto offs = program_id(0) * B + arange(0, B);
      auto mask = offs < x.size(0);
      const float f = static_cast<int64_t>(B) > 64 ? large_b_factor : salt;
      store(y, offs, load(x, offs, mask) * f, mask);
    });
  };
  auto timer = std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{64, 0.4}, {256, 0.1}});
  auto v1 = version(2.0f);
  CHECK(v1.autotune({{"B", {64, 256}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y) == Config{{"B", 256}});
  CHECK(timer->calls == 2);
  tilejit::autotune::forget_decisions();
  auto v2 = version(3.0f);
  CHECK(v2.autotune({{"B", {64, 256}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y) == Config{{"B", 256}});
  CHECK(timer->calls == 4);  // tuned again: the decision of the first version is not taken
}

TEST_CASE("export and load: an application that ships the decisions never tunes") {
  const float salt = fresh_salt();
  std::vector<float> xs(100, 1.0f), ys(100, 0.0f);
  const tilejit::TensorView<f32, 1> X(xs.data(), {100}), Y(ys.data(), {100});
  auto timer = std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{32, 0.4}, {64, 0.1}});
  auto k = accumulate_kernel(salt, "shipped");
  CHECK(k.autotune({{"B", {32, 64}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y) == Config{{"B", 64}});
  CHECK(timer->calls == 2);

  // Export this kernel's decision, then remove every trace of it from the folder and the process.
  tilejit::DecisionStore store(tilejit::knobs().cache_dir);
  std::vector<tilejit::Decision> shipped;
  for (const auto& f : store.list())
    if (f.decision && f.decision->id.kernel == "shipped") {
      shipped.push_back(*f.decision);
      std::filesystem::remove(store.directory() / f.file);
    }
  REQUIRE(shipped.size() >= 1);
  const auto file = std::filesystem::path(tilejit::knobs().cache_dir) / "shipped_decisions.json";
  tilejit::write_decisions_file(file, shipped);
  tilejit::autotune::forget_decisions();

  CHECK(tilejit::autotune::load_decisions(file) == shipped.size());
  const uint64_t disk = tilejit::autotune::counters().disk_decisions;
  auto again = accumulate_kernel(salt, "shipped");
  CHECK(again.autotune({{"B", {32, 64}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y) ==
        Config{{"B", 64}});
  CHECK(timer->calls == 2);                                     // not timed
  CHECK(tilejit::autotune::counters().disk_decisions == disk);  // not read from the folder either

  CHECK(tilejit::read_decisions_file(file) == shipped);
  std::ofstream(file) << "{\"format\": \"something else\", \"version\": 1}";
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file),
                       doctest::Contains("not a tilejit decisions file"), tilejit::UserError);
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file.string() + ".missing"),
                       doctest::Contains("cannot read"), tilejit::UserError);
}

TEST_CASE("the decision store: round trip, corrupt and foreign files are misses, clear") {
  const auto root = std::filesystem::path(tilejit::knobs().cache_dir) / "store_test";
  std::filesystem::remove_all(root);
  tilejit::DecisionStore store(root);
  tilejit::Decision d;
  d.id = {
      "k",    "0123456789abcdef", "fedcba9876543210", "f32[1024], \"quoted\"\n", "NVIDIA H100 80GB HBM3", 132,
      "1.2.3"};
  d.config = Config{{"BM", 128}, {"BN", 64}}.num_warps(8).num_stages(3);
  d.config.programs_per_sm(2);
  d.time_ms = 0.123456789;
  d.candidates = 8;
  d.tuned_at = 1790000000;
  CHECK_FALSE(store.load(d.id));
  REQUIRE(store.store(d));
  CHECK(store.load(d.id) == d);

  std::string error;
  CHECK(tilejit::decision_from_json(tilejit::decision_to_json(d), error) == d);
  // warp_specialize: written only when set (files without it leave it to tilejit), and read back.
  CHECK(tilejit::decision_to_json(d).find("warp_specialize") == std::string::npos);
  tilejit::Decision roles = d;
  roles.config.warp_specialize();
  CHECK(tilejit::decision_from_json(tilejit::decision_to_json(roles), error) == roles);
  CHECK_FALSE(tilejit::decision_from_json(tilejit::decision_to_json(roles), error) == d);
  tilejit::Decision no_roles = d;
  no_roles.config.warp_specialize(false);
  CHECK(tilejit::decision_to_json(no_roles).find("\"warp_specialize\": 0") != std::string::npos);
  CHECK(tilejit::decision_from_json(tilejit::decision_to_json(no_roles), error) == no_roles);
  // overlap_products and pingpong the same way: absent unless set, 1 or 0, read back, part of the configuration's
  // identity.
  for (const std::string field : {"overlap_products", "pingpong"}) {
    CAPTURE(field);
    CHECK(tilejit::decision_to_json(d).find(field) == std::string::npos);
    for (bool on : {true, false}) {
      tilejit::Decision set = d;
      if (field == "pingpong") set.config.pingpong(on);
      else set.config.overlap_products(on);
      CHECK(tilejit::decision_to_json(set).find("\"" + field + "\": " + (on ? "1" : "0")) != std::string::npos);
      CHECK(tilejit::decision_from_json(tilejit::decision_to_json(set), error) == set);
      CHECK_FALSE(set.config == d.config);
      CHECK(set.config.hash() != d.config.hash());
      CHECK(set.config.str().find(", " + field + (on ? "" : "=0")) != std::string::npos);
      CHECK(tilejit::Config(d.config).set_field(field, on ? 1 : 0) == set.config);
    }
  }
  // fp_contract: absent while on (the default), 0 when off, read back, set by name, part of the identity.
  CHECK(tilejit::decision_to_json(d).find("fp_contract") == std::string::npos);
  tilejit::Decision rounded = d;
  rounded.config.fp_contract(false);
  CHECK(tilejit::decision_to_json(rounded).find("\"fp_contract\": 0") != std::string::npos);
  CHECK(tilejit::decision_from_json(tilejit::decision_to_json(rounded), error) == rounded);
  CHECK_FALSE(rounded.config == d.config);
  CHECK(tilejit::Config(d.config).set_field("fp_contract", 0) == rounded.config);
  CHECK(tilejit::Config(d.config).set_field("fp_contract", 1) == d.config);
  CHECK_THROWS_AS(tilejit::Config(d.config).set_field("fp_contract", 2), tilejit::UserError);
  // producer_registers: absent while tilejit chooses, the value when set, read back, set by name, part of the
  // identity; values other than 0, 24, 32, 40 refused, from a setter and from a file.
  CHECK(tilejit::decision_to_json(d).find("producer_registers") == std::string::npos);
  for (int regs : {24, 32, 40}) {
    CAPTURE(regs);
    tilejit::Decision lean = d;
    lean.config.producer_registers(regs);
    const std::string text = tilejit::decision_to_json(lean);
    CHECK(text.find("\"producer_registers\": " + std::to_string(regs)) != std::string::npos);
    CHECK(tilejit::decision_from_json(text, error) == lean);
    CHECK_FALSE(lean.config == d.config);
    CHECK(lean.config.hash() != d.config.hash());
    CHECK(lean.config.str().find(", producer_registers=" + std::to_string(regs)) != std::string::npos);
    CHECK(tilejit::Config(d.config).set_field("producer_registers", regs) == lean.config);
  }
  for (int bad : {-8, 8, 16, 28, 48, 256}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(tilejit::Config(d.config).producer_registers(bad), tilejit::UserError);
    CHECK_THROWS_AS(tilejit::Config(d.config).set_field("producer_registers", bad), tilejit::UserError);
    std::string text = tilejit::decision_to_json(d);
    const size_t at = text.find("\"num_warps\"");
    REQUIRE(at != std::string::npos);
    text.insert(at, "\"producer_registers\": " + std::to_string(bad) + ", ");
    CHECK_FALSE(tilejit::decision_from_json(text, error));
    CHECK(error.find("producer_registers") != std::string::npos);
  }
  // Persistent programs and their order: absent unless set, read back, part of the identity; a tile_group out of
  // range in a file is refused.
  CHECK(tilejit::decision_to_json(d).find("persistent") == std::string::npos);
  {
    tilejit::Decision walked = d;
    walked.config.persistent().tile_group(8);
    const std::string text = tilejit::decision_to_json(walked);
    CHECK(text.find("\"persistent\": 1") != std::string::npos);
    CHECK(text.find("\"tile_group\": 8") != std::string::npos);
    CHECK(tilejit::decision_from_json(text, error) == walked);
    CHECK_FALSE(walked.config == d.config);
    std::string bad = text;
    bad.replace(bad.find("\"tile_group\": 8"), 16, "\"tile_group\": -3");
    CHECK_FALSE(tilejit::decision_from_json(bad, error));
    CHECK(error.find("tile_group") != std::string::npos);
  }
  // Clusters: absent for one program per cluster, both extents when set, read back.
  CHECK(tilejit::decision_to_json(d).find("cluster_x") == std::string::npos);
  for (const auto [x, y] : {std::pair{2, 1}, std::pair{1, 2}}) {
    tilejit::Decision clustered = d;
    clustered.config.cluster(x, y);
    const std::string text = tilejit::decision_to_json(clustered);
    CHECK(text.find("\"cluster_x\": " + std::to_string(x)) != std::string::npos);
    CHECK(text.find("\"cluster_y\": " + std::to_string(y)) != std::string::npos);
    CHECK(tilejit::decision_from_json(text, error) == clustered);
    CHECK_FALSE(clustered.config == d.config);
  }
  tilejit::Decision untimed = d;
  untimed.time_ms = -1;
  CHECK(tilejit::decision_from_json(tilejit::decision_to_json(untimed), error) == untimed);

  const auto path = store.directory() / (d.id.file_id() + ".json");
  const std::string good = tilejit::decision_to_json(d);
  for (const std::string& bad :
       {good.substr(0, good.size() / 2), std::string("not json"), std::string("[]"),
        std::string("{\"format\": \"tilejit-autotune-decision\", \"version\": 2}")}) {
    std::ofstream(path) << bad;
    CHECK_FALSE(store.load(d.id));
  }
  // A valid decision under another decision's name (a foreign or renamed file) is not taken.
  tilejit::Decision other = d;
  other.id.key = "another key";
  std::ofstream(path) << tilejit::decision_to_json(other);
  CHECK_FALSE(store.load(d.id));
  REQUIRE(store.store(d));
  CHECK(store.load(d.id) == d);

  const auto files = store.list();
  REQUIRE(files.size() == 1);
  CHECK(files[0].decision == d);
  std::ofstream(store.directory() / "broken.json") << "{";
  CHECK(store.list().size() == 2);
  CHECK(store.list().back().error.find("at byte") != std::string::npos);
  CHECK(store.clear() == 2);
  CHECK(store.list().empty());
}

TEST_CASE("8 processes x 20 rounds writing decisions to one folder leave only whole files") {
  const auto root = std::filesystem::path(tilejit::knobs().cache_dir) / "concurrent_store";
  std::filesystem::remove_all(root);
  tilejit::testing::run_in_children(8, [&](int p) {
    int status = 0;
    tilejit::DecisionStore store(root);
    for (int round = 0; round < 20; ++round) {
      tilejit::Decision d;
      d.id = {"k", "s", "sp", "key " + std::to_string(round % 5), "dev", 1, "v"};
      d.config = Config{{"B", 16 * (p + 1)}};
      d.time_ms = p + round;
      d.candidates = p;
      if (!store.store(d)) status = 1;
      if (auto back = store.load(d.id); !back || back->id != d.id) status = 1;  // some writer's whole decision
    }
    return status;
  });
  const auto files = tilejit::DecisionStore(root).list();
  CHECK(files.size() == 5);
  for (const auto& f : files) {
    INFO(f.file << ": " << f.error);
    CHECK(f.decision.has_value());
  }
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(tilejit::DecisionStore(root).directory()))
    left += e.is_regular_file();
  CHECK(left == 5);  // no temporary files left behind
}

TEST_CASE("written_params: the tensors a kernel stores to, through views and atomics") {
  auto k = tilejit::kernel(
      "writes", [](Tensor<f32, 1> a, Tensor<f32, 2> b, Tensor<f32, 1> c, Tensor<f32, 1> d, Meta<"B"> B) {
        auto offs = arange(0, B);
        store(a, offs, load(d, offs));
        atomic_add(c, offs, load(d, offs));
        descriptor_store(b, {0, 0}, descriptor_load(b, {0, 0}, {B, B}), StoreReduce::add);
      });
  CHECK(tilejit::ir::written_params(*k.trace(Config{{"B", 16}})) == std::vector<int>{0, 1, 2});
}

TEST_CASE("TILEJIT_AUTOTUNE=off launches the first candidate, heuristics applied, and times nothing") {
  if (tilejit::knobs().autotune) return;  // run by the ctest entry unit_autotune_off, which sets the knob
  const float salt = fresh_salt();
  auto k = accumulate_kernel(salt);
  std::vector<float> xs(300, 1.0f), ys(300, 0.0f);
  const tilejit::TensorView<f32, 1> X(xs.data(), {300}), Y(ys.data(), {300});
  auto timer = std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{64, 0.4}, {128, 0.1}});
  auto t = k.autotune({{"B", {64, 128}}})
               .grid(grid_1d)
               .timer(timer)
               .heuristic("num_warps", [](const Config& c, const TuneArgs&) { return c["B"] / 32; });
  const uint64_t compiles = tilejit::runtime::compile_count();
  CHECK(t.tune(nullptr, X, Y) == Config{{"B", 64}}.num_warps(2));
  CHECK(tilejit::runtime::compile_count() - compiles <= 1);  // the first candidate only
  t.launch(nullptr, X, Y);
  CHECK(timer->calls == 0);
  CHECK(ys[0] == salt);
}

TEST_CASE(
    "resources come from the compiled binary (also on a disk-cache hit) and are checked against the GPU's "
    "limits") {
  if (tilejit::has_gpu() && !tilejit::knobs().interpret) return;  // a GPU reports them through the driver
  auto k = accumulate_kernel(fresh_salt());
  std::vector<float> xs(64), ys(64);
  const auto bound =
      k.bind(tilejit::TensorView<f32, 1>(xs.data(), {64}), tilejit::TensorView<f32, 1>(ys.data(), {64}));
  const Config c({{"B", 64}}, 8);
  const tilejit::detail::DeviceTarget sm90;
  const auto here = tilejit::args::CallSite::of(std::source_location::current());
  const auto fresh = tilejit::detail::compile_variant(k.base(), c, bound, sm90, here);
  CHECK(fresh.threads == 256);
  CHECK(fresh.registers > 0);
  CHECK(fresh.shared_static >= 0);
  CHECK(fresh.spill_bytes == 0);
  const uint64_t compiles = tilejit::runtime::compile_count();
  const auto cached = tilejit::detail::compile_variant(k.base(), c, bound, sm90, here);  // from the disk cache
  CHECK(tilejit::runtime::compile_count() == compiles);
  CHECK(cached.registers == fresh.registers);
  CHECK(cached.shared_static == fresh.shared_static);
  CHECK(tilejit::detail::resource_problem(fresh, sm90).empty());

  tilejit::detail::VariantResources r;
  r.threads = 512;
  r.shared_dynamic = 200000;
  r.shared_static = 40000;
  r.registers = 160;
  CHECK(tilejit::detail::resource_problem(r, sm90) ==
        "needs 240000 bytes of shared memory per program (200000 dynamic + 40000 static); the GPU offers "
        "232448");
  r.shared_static = 0;
  CHECK(tilejit::detail::resource_problem(r, sm90) ==
        "needs 81920 registers per program (160 per thread x 512 threads); the GPU offers 65536");
  r.registers = 64;
  r.max_threads = 384;
  CHECK(tilejit::detail::resource_problem(r, sm90).find("at most 384 threads") != std::string::npos);
  r.threads = 2048;
  CHECK(tilejit::detail::resource_problem(r, sm90) ==
        "needs 2048 threads per program; the GPU runs at most 1024");
}

namespace {

// The warnings logged while alive.
struct Warnings {
  static inline std::mutex mutex;
  static inline std::vector<std::string> seen;
  Warnings() {
    std::lock_guard lock(mutex);
    seen.clear();
    tilejit::set_log_callback([](tilejit::LogLevel level, std::string_view message) {
      if (level < tilejit::LogLevel::warn) return;
      std::lock_guard l(mutex);
      seen.emplace_back(message);
    });
  }
  ~Warnings() { tilejit::set_log_callback(nullptr); }
  bool has(const std::string& a, const std::string& b = {}) const {
    std::lock_guard lock(mutex);
    for (const std::string& w : seen)
      if (w.find(a) != std::string::npos && w.find(b) != std::string::npos) return true;
    return false;
  }
};

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// A kernel tuned once over B in {64, 128, 256} (B=256 wins); its decision file and a timer to tune
// it again with.
struct TunedOnce {
  float salt = fresh_salt();
  std::vector<float> xs = std::vector<float>(700, 1.0f), ys = std::vector<float>(700, 0.0f);
  tilejit::TensorView<f32, 1> X{xs.data(), {700}}, Y{ys.data(), {700}};
  std::shared_ptr<ScriptedTimer> timer =
      std::make_shared<ScriptedTimer>(std::map<int64_t, double>{{64, 0.4}, {128, 0.5}, {256, 0.1}});
  std::filesystem::path file;
  tilejit::Decision decision;

  TunedOnce() {
    const tilejit::DecisionStore store(tilejit::knobs().cache_dir);
    for (const auto& f : store.list())  // earlier runs' decisions of this kernel
      if (f.decision && f.decision->id.kernel == "tuned_once") std::filesystem::remove(store.directory() / f.file);
    auto k = accumulate_kernel(salt, "tuned_once");
    REQUIRE(k.autotune({{"B", {64, 128, 256}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y) ==
            Config{{"B", 256}});
    for (const auto& f : store.list())
      if (f.decision && f.decision->id.kernel == "tuned_once") {
        REQUIRE(file.empty());
        file = store.directory() / f.file;
        decision = *f.decision;
      }
    REQUIRE(!file.empty());
    tilejit::autotune::forget_decisions();
  }
  // A new kernel object with the same code, tuned (or not) through the decision on disk.
  Config tune_again() {
    auto k = accumulate_kernel(salt, "tuned_once");
    return k.autotune({{"B", {64, 128, 256}}}).grid(grid_1d).timer(timer).tune(nullptr, X, Y);
  }
};

}  // namespace

TEST_CASE("a stored decision outside the search space is a warning naming the file, a tuning and a new file") {
  for (const auto& [what, config] : std::vector<std::pair<std::string, Config>>{
           {"a value the space does not have", Config{{"B", 5}}},
           {"a missing value", Config{{"C", 64}}},
           {"other warps", Config{{"B", 256}}.num_warps(8)}}) {
    INFO(what);
    TunedOnce t;
    tilejit::Decision forged = t.decision;  // with a valid checksum: only the space can refuse it
    forged.config = config;
    std::ofstream(t.file) << tilejit::decision_to_json(forged);
    Warnings warnings;
    CHECK(t.tune_again() == Config{{"B", 256}});
    CHECK(t.timer->calls == 6);  // tuned again, rather than launching B=5 (or failing at each launch)
    CHECK(warnings.has(t.file.string(), "is not one of the current candidates"));
    CHECK(tilejit::DecisionStore(tilejit::knobs().cache_dir).load(t.decision.id)->config == Config{{"B", 256}});
  }
}

TEST_CASE("a decision file edited by hand, or of version 1, fails its checksum: a warning and a tuning") {
  TunedOnce t;
  const std::string good = slurp(t.file);
  for (const std::string& bad :
       {replaced(good, "\"B\": 256", "\"B\": 128"),  // a candidate, but not what was measured
        replaced(replaced(good, "\"version\": 2", "\"version\": 1"), "\"checksum\"", "\"old_checksum\"")}) {
    std::ofstream(t.file) << bad;
    tilejit::autotune::forget_decisions();
    Warnings warnings;
    const int calls = t.timer->calls;
    CHECK(t.tune_again() == Config{{"B", 256}});
    CHECK(t.timer->calls == calls + 3);
    CHECK(warnings.has(t.file.string(), "tuning again replaces it"));
    CHECK(tilejit::DecisionStore(tilejit::knobs().cache_dir).load(t.decision.id)->config == Config{{"B", 256}});
  }
  std::string error;
  CHECK_FALSE(tilejit::decision_from_json(replaced(good, "\"B\": 256", "\"B\": 128"), error));
  CHECK(error.find("checksum mismatch") != std::string::npos);
  CHECK_FALSE(tilejit::decision_from_json(replaced(good, "\"version\": 2", "\"version\": 1"), error));
  CHECK(error.find("version 1 files carry no checksum") != std::string::npos);
}

TEST_CASE("integers out of range and numbers no double holds are errors, never truncated or thrown past") {
  tilejit::Decision d;
  d.id = {"k", "s", "sp", "key", "dev", 1, "v"};
  d.config = Config{{"B", 16}};
  const std::string good = tilejit::decision_to_json(d);
  std::string error;
  REQUIRE(tilejit::decision_from_json(good, error));
  // Each edit keeps the checksum of the original, which is checked after the values' own rules: the
  // error names the rule of the edited value.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replaced(good, "\"num_warps\": 4", "\"num_warps\": 4294967300"), "\"num_warps\" is 4294967300, outside 1..32"},
      {replaced(good, "\"num_stages\": 0", "\"num_stages\": -1"), "\"num_stages\" is -1, outside 0..8"},
      {replaced(good, "\"B\": 16", "\"B\": 18446744073709551615"), "\"B\" is 18446744073709551615"},
      {replaced(good, "\"sm_count\": 1", "\"sm_count\": 4294967297"), "\"sm_count\" is 4294967297, outside"},
      {replaced(good, "\"time_ms\": null", "\"time_ms\": 1e999"), "number overflow"},
      {replaced(good, "\"candidates\": 0", "\"candidates\": 1e999"), "number overflow"},
      {replaced(good, "\"tuned_at\": 0", "\"tuned_at\": \"yesterday\""), "\"tuned_at\" is missing or not an integer"},
  };
  for (const auto& [text, expected] : cases) {
    INFO(expected);
    std::optional<tilejit::Decision> parsed;
    CHECK_NOTHROW(parsed = tilejit::decision_from_json(text, error));
    CHECK_FALSE(parsed);
    CHECK(error.find(expected) != std::string::npos);
  }
  // The same through an export file: a UserError naming the file (and the caller's line).
  const auto file = std::filesystem::path(tilejit::knobs().cache_dir) / "overflow_decisions.json";
  std::ofstream(file) << "{\"format\": \"tilejit-autotune-decisions\", \"version\": 2, \"decisions\": [" +
                             replaced(good, "\"num_warps\": 4", "\"num_warps\": 1e999") + "]}";
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file), doctest::Contains(file.c_str()), tilejit::UserError);
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file), doctest::Contains("test_autotune.cpp"),
                       tilejit::UserError);
  std::ofstream(file) << "{\"format\": \"tilejit-autotune-decisions\", \"version\": 2, \"decisions\": [" +
                             replaced(good, "\"num_warps\": 4", "\"num_warps\": 4294967300") + "]}";
  CHECK_THROWS_WITH_AS(tilejit::read_decisions_file(file), doctest::Contains("outside 1..32"), tilejit::UserError);
  // A folder holding such a file lists it as unreadable.
  const auto root = std::filesystem::path(tilejit::knobs().cache_dir) / "overflow_store";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "decisions");
  std::ofstream(root / "decisions" / "x.json") << replaced(good, "\"time_ms\": null", "\"time_ms\": -1e999");
  std::vector<tilejit::DecisionFile> files;
  CHECK_NOTHROW(files = tilejit::DecisionStore(root).list());
  REQUIRE(files.size() == 1);
  CHECK(files[0].error.find("number overflow") != std::string::npos);
}

TEST_CASE("shipped decisions are checked the same way: an out-of-space one is a warning and a tuning") {
  TunedOnce t;
  tilejit::Decision forged = t.decision;
  forged.config = Config{{"B", 5}};
  const auto file = std::filesystem::path(tilejit::knobs().cache_dir) / "forged_decisions.json";
  tilejit::write_decisions_file(file, {forged});
  std::filesystem::remove(t.file);
  CHECK(tilejit::autotune::load_decisions(file) == 1);
  Warnings warnings;
  CHECK(t.tune_again() == Config{{"B", 256}});
  CHECK(t.timer->calls == 6);
  CHECK(warnings.has("loaded from " + file.string(), "is not one of the current candidates"));

  // An edited export file is refused when loaded, naming the file and the decision.
  const std::string edited = replaced(slurp(file), "\"B\": 5", "\"B\": 64");
  std::ofstream(file) << edited;
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file), doctest::Contains("checksum mismatch"),
                       tilejit::UserError);
  CHECK_THROWS_WITH_AS(tilejit::autotune::load_decisions(file), doctest::Contains("invalid decision 0"),
                       tilejit::UserError);
}

TEST_CASE("a FIFO, a link to /dev/zero or a 20 GiB file as a decision is a warning and a tuning") {
  for (const std::string kind : {"fifo", "dev_zero", "huge"}) {
    INFO(kind);
    TunedOnce t;
    std::filesystem::remove(t.file);
    if (kind == "fifo") REQUIRE(::mkfifo(t.file.c_str(), 0644) == 0);
    if (kind == "dev_zero") std::filesystem::create_symlink("/dev/zero", t.file);
    if (kind == "huge") {
      std::ofstream(t.file).flush();
      std::filesystem::resize_file(t.file, std::uintmax_t{20} << 30);
    }
    // In a child that an alarm ends and whose memory is bounded: before files were checked, the
    // FIFO blocked forever and the others grew the process until std::bad_alloc.
    tilejit::testing::run_in_bounded_child([&] {
      Warnings warnings;
      int failures = 0;
      try {
        if (t.tune_again() != Config{{"B", 256}}) ++failures;
        if (t.timer->calls != 6) ++failures;
        if (!warnings.has(t.file.string(), "only regular files are read") &&
            !warnings.has(t.file.string(), "more than the limit")) ++failures;
        if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(t.file)) ||
            std::filesystem::file_size(t.file) > 4096) ++failures;  // replaced by the new decision
        for (const auto& f : tilejit::DecisionStore(tilejit::knobs().cache_dir).list()) (void)f;
        tilejit::read_decisions_file("/dev/zero");
        ++failures;
      } catch (const tilejit::UserError& e) {
        if (std::string(e.what()).find("/dev/zero") == std::string::npos) ++failures;
      } catch (...) {
        ++failures;
      }
      return failures;
    });
  }
}
