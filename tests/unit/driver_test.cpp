// Unit tests of the driver loader; they check whichever branch applies: no driver here, a GPU elsewhere.
#include <doctest/doctest.h>

#include <string>

#include "driver_api.h"
#include "tilejit/runtime/driver.h"

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("driver queries agree with each other") {
  const bool available = tilejit::driver_available();
  CHECK(tilejit::driver_available() == available);  // stable across calls
  CHECK(tilejit::has_gpu() == (tilejit::device_count() > 0));
  CHECK(tilejit::devices().size() == static_cast<std::size_t>(tilejit::device_count()));
  CHECK(tilejit::driver_error().empty() == available);
  MESSAGE("driver available: " << available << ", devices: " << tilejit::device_count());
}

TEST_CASE("without a usable driver every GPU call explains what is missing") {
  if (tilejit::driver_available()) {
    MESSAGE("a CUDA driver is present: the no-driver branch does not apply here");
    return;
  }
  CHECK(tilejit::device_count() == 0);
  CHECK_FALSE(tilejit::has_gpu());
  CHECK(tilejit::devices().empty());

  std::string reason = tilejit::driver_error();
  INFO(reason);
  CHECK(contains(reason, "libcuda.so.1"));
  CHECK(contains(reason, "nvidia-smi"));
  CHECK(contains(reason, "ldconfig -p | grep libcuda"));

  // The public check and the internal accessor every GPU operation goes through throw the same.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      if (attempt == 0) {
        tilejit::ensure_driver();
      } else {
        tilejit::detail::driver();
      }
      FAIL("no exception");
    } catch (const tilejit::CudaError& e) {
      CHECK(std::string(e.what()) == reason);
      if (e.code() == tilejit::kNoDriverCode) {  // the library itself is missing
        CHECK(e.call() == "dlopen(\"libcuda.so.1\")");
        CHECK(contains(reason, "no CUDA driver found"));
        CHECK(contains(reason, "libcuda.so.1 could not be loaded: "));
        CHECK(tilejit::driver_version() == 0);
      } else if (e.code() == CUDA_ERROR_STUB_LIBRARY) {  // the toolkit's stub posing as the driver
        CHECK(e.call() == "cuInit(0)");
        CHECK(e.name() == "CUDA_ERROR_STUB_LIBRARY");
        CHECK(contains(reason, "stub"));
      } else {
        MESSAGE("driver present but unusable: " << reason);
      }
    }
  }
}

TEST_CASE("with a driver, the devices are described") {
  if (!tilejit::driver_available()) {
    MESSAGE("no CUDA driver: " << tilejit::driver_error());
    return;
  }
  CHECK(tilejit::driver_version() >= 12000);
  CHECK_NOTHROW(tilejit::ensure_driver());
  auto& d = tilejit::detail::driver();
  CHECK((d.cuLaunchKernelEx != nullptr));
  CHECK((d.cuTensorMapEncodeTiled != nullptr));
  int i = 0;
  for (const auto& dev : tilejit::devices()) {
    CAPTURE(dev.name);
    CHECK(dev.ordinal == i++);
    CHECK_FALSE(dev.name.empty());
    CHECK(dev.cc_major >= 3);
    CHECK(dev.sm_count > 0);
    CHECK(dev.total_mem > 0);
  }
  int version = 0;
  TILEJIT_CHECK_CU(d.cuDriverGetVersion(&version));
  CHECK(version == tilejit::driver_version());
}

TEST_CASE("check_cuda throws CudaError naming the call") {
  CHECK_NOTHROW(tilejit::check_cuda(0, "cuInit(0)"));
  try {
    TILEJIT_CHECK_CU(CUDA_ERROR_INVALID_VALUE);
    FAIL("no exception");
  } catch (const tilejit::CudaError& e) {
    CHECK(e.code() == 1);
    CHECK(e.call() == "CUDA_ERROR_INVALID_VALUE");
    if (tilejit::driver_available()) CHECK(e.name() == "CUDA_ERROR_INVALID_VALUE");
    CHECK(contains(e.what(), "failed"));
  }
}
