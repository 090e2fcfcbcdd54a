// Loading libcuda.so.1 at run time, resolving its entry points, and the device queries built on them.
#include "tilejit/runtime/driver.h"

#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <optional>
#include <string>

#include "driver_api.h"
#include "log_internal.h"

namespace tilejit {
namespace detail {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";
constexpr const char* kHowToCheck =
    "Check the driver with `nvidia-smi` (it should list the GPU) and `ldconfig -p | grep libcuda` "
    "(it should show libcuda.so.1).";

// The outcome of the one attempt to load the driver.
struct DriverState {
  Driver driver;
  void* handle = nullptr;        // dlopen handle, kept open for the life of the process
  std::string path;              // where libcuda.so.1 was found
  int version = 0;               // cuDriverGetVersion, when the library loaded
  std::optional<CudaError> error;  // set when the driver is unusable
};

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return kLibrary;
}

// Resolves every entry point of TILEJIT_DRIVER_ENTRY_POINTS; returns the first one missing.
std::optional<std::string> resolve(void* handle, Driver& d) {
  using GetProcAddress = PFN_cuGetProcAddress_v12000;
  // cuGetProcAddress_v2 exists from CUDA 12.0 on; older drivers only get the dlsym path.
  auto get_proc = reinterpret_cast<GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
  auto lookup = [&](const char* symbol, int abi, const char* exported) -> void* {
    if (get_proc != nullptr) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult found{};
      if (get_proc(symbol, &fn, abi, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS &&
          found == CU_GET_PROC_ADDRESS_SUCCESS && fn != nullptr) {
        return fn;
      }
    }
    return dlsym(handle, exported);
  };
#define TILEJIT_DRIVER_RESOLVE(member, symbol, abi)                                 \
  d.member = reinterpret_cast<PFN_##symbol##_v##abi>(lookup(#symbol, abi, #member)); \
  if (d.member == nullptr) return std::string(#symbol);
  TILEJIT_DRIVER_ENTRY_POINTS(TILEJIT_DRIVER_RESOLVE)
#undef TILEJIT_DRIVER_RESOLVE
  return std::nullopt;
}

std::string result_name(const Driver& d, CUresult r) {
  const char* name = nullptr;
  if (d.cuGetErrorName != nullptr && d.cuGetErrorName(r, &name) == CUDA_SUCCESS && name != nullptr) {
    return name;
  }
  // A driver that cannot name its errors is usually no working driver: name the usual suspects.
  switch (r) {
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    default: return "CUresult " + std::to_string(static_cast<int>(r));
  }
}

std::string result_text(const Driver& d, CUresult r) {
  const char* text = nullptr;
  if (d.cuGetErrorString != nullptr && d.cuGetErrorString(r, &text) == CUDA_SUCCESS && text != nullptr) {
    return text;
  }
  return {};
}

void load(DriverState& s) {
  dlerror();
  s.handle = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (s.handle == nullptr) {
    const char* why = dlerror();
    s.error.emplace("dlopen(\"libcuda.so.1\")", kNoDriverCode, "no CUDA driver found",
                    std::string("libcuda.so.1 could not be loaded: ") + (why ? why : "unknown reason") +
                        ". " + kHowToCheck);
    return;
  }
  s.path = loaded_path(s.handle);
  if (auto missing = resolve(s.handle, s.driver)) {
    int v = 0;
    if (s.driver.cuDriverGetVersion != nullptr && s.driver.cuDriverGetVersion(&v) == CUDA_SUCCESS) {
      s.version = v;
    }
    s.error.emplace("cuGetProcAddress(\"" + *missing + "\")", static_cast<int>(CUDA_ERROR_NOT_FOUND),
                    "CUDA_ERROR_NOT_FOUND",
                    "the CUDA driver in " + s.path +
                        (v > 0 ? " (CUDA " + version_text(v) + ")" : std::string()) + " lacks " + *missing +
                        "; tilejit needs a driver for CUDA 12.0 or newer");
    return;
  }
  if (s.driver.cuDriverGetVersion(&s.version) != CUDA_SUCCESS) s.version = 0;
  CUresult r = s.driver.cuInit(0);
  if (r != CUDA_SUCCESS) {
    std::string detail = result_text(s.driver, r);
    detail += (detail.empty() ? "" : " ") + std::string("(libcuda.so.1 loaded from ") + s.path +
              (s.version > 0 ? ", CUDA " + version_text(s.version) : std::string()) + ").";
    if (r == CUDA_ERROR_STUB_LIBRARY) {
      detail += " This is the CUDA toolkit's link stub, not a driver: remove its 'stubs' directory "
                "from LD_LIBRARY_PATH.";
    }
    s.error.emplace("cuInit(0)", static_cast<int>(r), result_name(s.driver, r), detail + " " + kHowToCheck);
    return;
  }
  logger().debug("loaded the CUDA driver from {} (CUDA {})", s.path, version_text(s.version));
}

DriverState& state() {
  static DriverState s;
  static std::once_flag once;
  std::call_once(once, [] { load(s); });
  return s;
}

}  // namespace

Driver& driver() {
  DriverState& s = state();
  if (s.error) throw *s.error;
  return s.driver;
}

}  // namespace detail

bool driver_available() noexcept {
  try {
    return !detail::state().error.has_value();
  } catch (...) {
    return false;
  }
}

std::string driver_error() {
  const auto& s = detail::state();
  return s.error ? std::string(s.error->what()) : std::string();
}

void ensure_driver() { detail::driver(); }

int driver_version() noexcept {
  try {
    return detail::state().version;
  } catch (...) {
    return 0;
  }
}

int device_count() noexcept {
  try {
    if (!driver_available()) return 0;
    int n = 0;
    CUresult r = detail::driver().cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
      detail::logger().warn("cuDeviceGetCount failed ({}); reporting no GPU",
                            detail::result_name(detail::driver(), r));
      return 0;
    }
    return n;
  } catch (...) {
    return 0;
  }
}

bool has_gpu() noexcept { return device_count() > 0; }

std::vector<DeviceInfo> devices() {
  std::vector<DeviceInfo> out;
  if (!driver_available()) return out;
  auto& d = detail::driver();
  int n = 0;
  TILEJIT_CHECK_CU(d.cuDeviceGetCount(&n));
  for (int i = 0; i < n; ++i) {
    CUdevice dev{};
    TILEJIT_CHECK_CU(d.cuDeviceGet(&dev, i));
    DeviceInfo info;
    info.ordinal = i;
    char name[256] = {};
    TILEJIT_CHECK_CU(d.cuDeviceGetName(name, sizeof(name), dev));
    info.name = name;
    TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&info.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&info.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&info.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    TILEJIT_CHECK_CU(d.cuDeviceTotalMem_v2(&info.total_mem, dev));
    out.push_back(std::move(info));
  }
  return out;
}

void check_cuda(int result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  auto r = static_cast<CUresult>(result);
  auto& s = detail::state();
  throw CudaError(call, result, detail::result_name(s.driver, r), detail::result_text(s.driver, r));
}

}  // namespace tilejit
