// Checked kernels (TILEJIT_DEBUG=1) on the GPU: a bad jagged view, an off-grid TMA coordinate, an
// out-of-bounds pointer load and an mbarrier wait past the watchdog's bound each stop their kernel with one line naming the kernel, the line of the
// op, the rule, the value, the limit and the program. Each case runs in its own process
// (gpu_debug_child), because the trap leaves the CUDA context unusable.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "gpu_harness.h"

using namespace gpu_test;

namespace {

struct ChildResult {
  int status = -1;  // exit status, or -1 when it did not exit normally
  std::string output;
};

// Runs gpu_debug_child (next to this test's binary) for `which` with TILEJIT_DEBUG=1.
ChildResult run_child(const std::string& which) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string cmd = "TILEJIT_DEBUG=1 '" + (self.parent_path() / "gpu_debug_child").string() + "' " + which + " 2>&1";
  ChildResult r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  if (WIFEXITED(st)) r.status = WEXITSTATUS(st);
  return r;
}

void expect_stopped(const std::string& which, std::initializer_list<std::string> parts) {
  const ChildResult r = run_child(which);
  INFO("case " << which << ", output:\n" << r.output);
  CHECK(r.status == 1);  // the launch or the synchronisation failed
  for (const std::string& p : parts) CHECK_MESSAGE(r.output.find(p) != std::string::npos, "missing: " << p);
  // One line per launch, however many threads failed.
  size_t lines = 0;
  for (size_t at = r.output.find("tilejit: kernel "); at != std::string::npos; at = r.output.find("tilejit: kernel ", at + 1)) ++lines;
  CHECK(lines == 1);
}

}  // namespace

TEST_CASE("gpu: checked kernels (TILEJIT_DEBUG=1) name the line, rule, value, limit and program of a fault") {
  if (!on_gpu()) {
    MESSAGE("no GPU: the checked kernels' code is covered by the codegen test debug_checks");
    return;
  }
  ++g_cases;
  {
    const ChildResult ok = run_child("valid");
    INFO("output:\n" << ok.output);
    CHECK(ok.status == 0);
    CHECK(ok.output.find("completed") != std::string::npos);
    CHECK(ok.output.find("tilejit: kernel") == std::string::npos);
  }
  expect_stopped("jagged_view", {"tilejit: kernel tj_checked_jagged_", "debug_child.cpp:",
                                 ": rows(start, end): end is before start: start 16, end 4 (limit: end >= start) in program (1, 0, 0)"});
  expect_stopped("off_grid", {"tilejit: kernel tj_checked_columns_", "debug_child.cpp:",
                              "descriptor_load: the innermost coordinate must be a multiple of 16 bytes",
                              ": 3 x 4 bytes = 12 bytes (limit: a multiple of 16 bytes) in program (1, 0, 0)"});
  expect_stopped("pointer_oob", {"tilejit: kernel tj_checked_gather_", "debug_child.cpp:",
                                 "load: unmasked access outside tensor argument",
                                 ": element offset 5000 (limit: offsets 0..2047) in program (0, 0, 0)"});
  {
    // The same persistent GEMM (warp roles, a pipelined K loop) with the watchdog's default bound completes.
    const ChildResult ok = run_child("watchdog_valid");
    INFO("output:\n" << ok.output);
    CHECK(ok.status == 0);
    CHECK(ok.output.find("completed") != std::string::npos);
  }
  // With TILEJIT_DEBUG_WATCHDOG_MS=0 the first wait not complete at once is reported as a hang would be.
  expect_stopped("watchdog", {"tilejit: kernel tj_persistent_matmul_", "sample_kernels.h:", ": watchdog: ",
                              ": mbarrier ", ", not complete after 0 ms (TILEJIT_DEBUG_WATCHDOG_MS) in program ("});
  ++g_matched;
}
