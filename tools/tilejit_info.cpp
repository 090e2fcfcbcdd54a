// tilejit-info: reports the tilejit version, NVRTC, the CUDA driver, the GPUs, the cache and the knobs.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "tilejit/error.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/nvrtc.h"
#include "tilejit/version.h"

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: tilejit-info [--help] [--version]\n"
               "Prints what tilejit finds on this machine: NVRTC, the CUDA driver, the GPUs, the\n"
               "cache directory and the TILEJIT_* knobs in effect. Exits 0 with or without a GPU.\n");
}

void row(std::string_view key, const std::string& value) {
  std::printf("  %-14.*s %s\n", static_cast<int>(key.size()), key.data(), value.c_str());
}

void print_nvrtc() {
  std::printf("NVRTC\n");
  try {
    auto [major, minor] = tilejit::nvrtc_version();
    row("version", std::to_string(major) + "." + std::to_string(minor));
    std::string archs;
    for (int sm : tilejit::nvrtc_supported_archs()) archs += (archs.empty() ? "sm_" : " sm_") + std::to_string(sm);
    row("archs", archs);
    bool sm90a = tilejit::nvrtc_supports_arch("sm_90a");
    row("sm_90a", sm90a ? "supported (Hopper TMA / wgmma code can be compiled)"
                        : "NOT supported: tilejit needs NVRTC from CUDA 12.0 or newer");
  } catch (const std::exception& e) {
    row("error", e.what());
  }
}

void print_driver() {
  std::printf("CUDA driver\n");
  int v = tilejit::driver_version();
  if (tilejit::driver_available()) {
    row("status", "found, CUDA " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10));
  } else {
    row("status", "not usable");
    row("reason", tilejit::driver_error());
    row("note", "code generation and the CPU interpreter work without a driver");
  }
  std::printf("GPUs\n");
  try {
    auto devs = tilejit::devices();
    if (devs.empty()) row("-", "none");
    for (const auto& d : devs) {
      char mem[32];
      std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(d.total_mem) / (1024.0 * 1024.0 * 1024.0));
      std::string text = d.name + ", sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
                         std::to_string(d.sm_count) + " SMs, " + mem;
      if (d.cc_major != 9) text += " (tilejit targets Hopper, sm_90)";
      row("#" + std::to_string(d.ordinal), text);
    }
  } catch (const std::exception& e) {
    row("error", e.what());
  }
}

void print_knobs() {
  const tilejit::Knobs& k = tilejit::knobs();
  std::printf("Cache\n");
  row("directory", k.cache_dir.string() + (k.cache ? "" : " (disabled by TILEJIT_CACHE)"));
  std::printf("Knobs (effective values; * = set in the environment)\n");
  for (const auto& [name, value] : tilejit::describe(k)) {
    const char* env = std::getenv(name.c_str());
    std::string shown = value.empty() ? "(unset)" : value;
    std::printf("  %c %-22s %s\n", env != nullptr && *env != '\0' ? '*' : ' ', name.c_str(), shown.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("tilejit %s\n", TILEJIT_VERSION_STRING);
      return 0;
    }
    std::fprintf(stderr, "tilejit-info: unknown argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }
  try {
    std::printf("tilejit %s\n", TILEJIT_VERSION_STRING);
    print_nvrtc();
    print_driver();
    print_knobs();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilejit-info: %s\n", e.what());
    return 1;
  }
  return 0;
}
