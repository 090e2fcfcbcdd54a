// NVRTC's version and target architectures (the compile path lives elsewhere).
#include <nvrtc.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "log_internal.h"
#include "tilejit/error.h"
#include "tilejit/runtime/nvrtc.h"

namespace tilejit {
namespace {

void check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw CudaError(call, static_cast<int>(r), nvrtcGetErrorString(r));
}

bool probe(const std::string& arch) {
  nvrtcProgram prog = nullptr;
  if (nvrtcCreateProgram(&prog, "", "tilejit_arch_probe.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    return false;
  }
  std::string option = "--gpu-architecture=" + arch;
  const char* options[] = {option.c_str()};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, options);
  nvrtcDestroyProgram(&prog);
  detail::logger().debug("NVRTC {} {}", option, r == NVRTC_SUCCESS ? "accepted" : nvrtcGetErrorString(r));
  return r == NVRTC_SUCCESS;
}

}  // namespace

std::pair<int, int> nvrtc_version() {
  int major = 0, minor = 0;
  check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
  int n = 0;
  check(nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
  std::vector<int> archs(static_cast<std::size_t>(std::max(n, 0)));
  if (n > 0) check(nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
  std::sort(archs.begin(), archs.end());
  return archs;
}

bool nvrtc_supports_arch(std::string_view arch) noexcept {
  try {
    static std::mutex mutex;
    static std::map<std::string, bool, std::less<>> known;
    std::lock_guard lock(mutex);
    auto it = known.find(arch);
    if (it == known.end()) it = known.emplace(std::string(arch), probe(std::string(arch))).first;
    return it->second;
  } catch (...) {
    return false;
  }
}

}  // namespace tilejit
