// NVRTC's precompiled header lives in a folder of the process's own, which later processes remove once it is gone.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "child_processes.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/tilejit.h"

namespace fs = std::filesystem;
using namespace tilejit::dsl;

namespace {

// Names in `dir` that start with `prefix`.
std::vector<std::string> names(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with(prefix)) out.push_back(e.path().filename().string());
  return out;
}

bool holds_pch(const fs::path& dir) {
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().extension() == ".pch") return true;
  return false;
}

// Compiles two new kernels (the first creates the precompiled header, the second uses it), as a
// process with TMPDIR=`tmp` whose statics are all fresh: this test's parent compiles nothing.
void compile_two(const fs::path& tmp) {
  ::setenv("TMPDIR", tmp.c_str(), 1);
  std::random_device rd;
  for (int i = 0; i < 2; ++i) {
    const float f = 1.0f + static_cast<float>(rd() % 1000003) * 1e-7f;  // new code: no cache hit
    auto k = tilejit::kernel("pch_probe", [f](Tensor<f32, 1> x, Meta<"B"> B) {
      auto offs = arange(0, B);
      store(x, offs, load(x, offs) * f);
    });
    k.warmup({tilejit::Config{{"B", 128}}});
  }
}

}  // namespace

TEST_CASE("a killed process's precompiled header is removed by the next process; nothing lands in __nvrtc_auto_pch_*") {
  const fs::path tmp = fs::temp_directory_path() / ("tilejit_pch_test_" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);

  // A process that dies without exiting (_exit: no destructors, no NVRTC clean-up, as a kill).
  tilejit::testing::run_in_children(1, [&](int) {
    compile_two(tmp);
    const std::string own = tilejit::precompiled_header_folder();
    const bool ok = !own.empty() && fs::path(own).parent_path() == tmp && holds_pch(own) &&
                    fs::path(own).filename().string().starts_with("tilejit-pch-" + std::to_string(::getpid()) + "-");
    return ok ? 0 : 1;
  });
  CHECK(names(tmp, "__nvrtc_auto_pch_").empty());
  const std::vector<std::string> leaked = names(tmp, "tilejit-pch-");
  REQUIRE(leaked.size() == 1);
  CHECK(holds_pch(tmp / leaked[0]));

  // The next process sweeps it, and keeps its own while alive.
  tilejit::testing::run_in_children(1, [&](int) {
    compile_two(tmp);
    const std::vector<std::string> now = names(tmp, "tilejit-pch-");
    const std::string own = fs::path(tilejit::precompiled_header_folder()).filename().string();
    return now.size() == 1 && now[0] == own && own != leaked[0] && holds_pch(tmp / own) ? 0 : 1;
  });
  std::error_code ec;
  fs::remove_all(tmp, ec);
}
