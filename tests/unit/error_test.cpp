// Unit tests of the error types: what() of each, and the call site a UserError carries.
#include <doctest/doctest.h>

#include <string>

#include "tilejit/error.h"

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("UserError carries the caller's file:line, the rule, the value and the limit") {
  const int line = __LINE__ + 1;
  tilejit::UserError e("box dimension exceeds the TMA limit", "box[0] = 512", "256");
  std::string what = e.what();
  INFO(what);
  CHECK(contains(what, std::string("error_test.cpp:") + std::to_string(line) + ": "));
  CHECK(contains(what, "box dimension exceeds the TMA limit: box[0] = 512 (limit: 256)"));
  CHECK(e.rule() == "box dimension exceeds the TMA limit");
  CHECK(e.value() == "box[0] = 512");
  CHECK(e.limit() == "256");
  CHECK(e.line() == static_cast<unsigned>(line));
  CHECK(contains(e.file(), "error_test.cpp"));

  // Empty value and limit are left out rather than printed empty.
  tilejit::UserError bare("kernel has no outputs", "", "");
  CHECK(std::string(bare.what()).ends_with(": kernel has no outputs"));
}

TEST_CASE("UserError located by a recorded file and line") {
  tilejit::UserError e("block size must be a power of two", "BM = 48", "", "model.cpp", 42);
  CHECK(std::string(e.what()) == "model.cpp:42: block size must be a power of two: BM = 48");
  CHECK(e.file() == "model.cpp");
  CHECK(e.line() == 42);
}

TEST_CASE("UserError is a tilejit::Error") {
  auto thrower = [] { throw tilejit::UserError("rule", "v", "l"); };
  CHECK_THROWS_AS(thrower(), tilejit::Error);
  CHECK_THROWS_AS(thrower(), std::runtime_error);
}

TEST_CASE("CompileError carries the kernel, the log and the dumped source") {
  tilejit::CompileError e("scale", "kernel.cu(3): error: identifier \"x\" is undefined", "/tmp/k.cu");
  std::string what = e.what();
  CHECK(contains(what, "'scale'"));
  CHECK(contains(what, "/tmp/k.cu"));
  CHECK(contains(what, "identifier \"x\" is undefined"));
  CHECK(e.log() == "kernel.cu(3): error: identifier \"x\" is undefined");
  CHECK(e.source_path() == "/tmp/k.cu");
  tilejit::CompileError no_path("scale", "log", "");
  CHECK_FALSE(contains(no_path.what(), "source:"));
}

TEST_CASE("CudaError carries the call, the code, the name and the detail") {
  tilejit::CudaError e("cuMemAlloc(&p, 1 << 40)", 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory");
  std::string what = e.what();
  CHECK(what == "cuMemAlloc(&p, 1 << 40) failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  CHECK(e.call() == "cuMemAlloc(&p, 1 << 40)");
  CHECK(e.code() == 2);
  CHECK(e.name() == "CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(std::string(tilejit::CudaError("nvrtcVersion", 1, "NVRTC_ERROR_OUT_OF_MEMORY").what()) ==
        "nvrtcVersion failed: NVRTC_ERROR_OUT_OF_MEMORY (1)");
  // A negative code is not a CUDA code (no driver at all) and is not printed.
  CHECK(std::string(tilejit::CudaError("dlopen(\"libcuda.so.1\")", -1, "no CUDA driver found", "x").what()) ==
        "dlopen(\"libcuda.so.1\") failed: no CUDA driver found: x");
}

TEST_CASE("InternalError and check_internal point at the broken invariant") {
  const int line = __LINE__ + 1;
  tilejit::InternalError e("node id out of range");
  std::string what = e.what();
  CHECK(contains(what, "internal error"));
  CHECK(contains(what, "error_test.cpp:" + std::to_string(line)));
  CHECK(contains(what, "node id out of range"));
  CHECK(contains(what, "report"));
  CHECK_NOTHROW(tilejit::check_internal(true, "fine"));
  CHECK_THROWS_WITH_AS(tilejit::check_internal(false, "invariant"), doctest::Contains("invariant"),
                       tilejit::InternalError);
}
