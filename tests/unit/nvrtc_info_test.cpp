// Unit tests of the NVRTC information: version and architectures.
#include <doctest/doctest.h>

#include <algorithm>

#include "tilejit/runtime/nvrtc.h"

TEST_CASE("NVRTC version is that of a CUDA 12+ toolkit") {
  auto [major, minor] = tilejit::nvrtc_version();
  CHECK(major >= 12);
  CHECK(major < 100);
  CHECK(minor >= 0);
  CHECK(minor < 100);
}

TEST_CASE("NVRTC targets Hopper") {
  auto archs = tilejit::nvrtc_supported_archs();
  REQUIRE_FALSE(archs.empty());
  CHECK(std::is_sorted(archs.begin(), archs.end()));
  CHECK(std::find(archs.begin(), archs.end(), 90) != archs.end());
  CHECK(tilejit::nvrtc_supports_arch("sm_90a"));
  CHECK(tilejit::nvrtc_supports_arch("sm_90a"));  // remembered
  CHECK(tilejit::nvrtc_supports_arch("compute_90"));
  CHECK_FALSE(tilejit::nvrtc_supports_arch("sm_1"));
  CHECK_FALSE(tilejit::nvrtc_supports_arch("not an arch"));
}
