// The device a launch or a tuning targets: the current context's GPU, the architecture tilejit compiles
// for on it and its per-program limits (or those of every sm_90 GPU where kernels run in the interpreter),
// and whether a compiled variant fits them.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <string>

#include "driver_api.h"
#include "launch_internal.h"
#include "tilejit/error.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/memory.h"

namespace tilejit::detail {

std::string arch_of_current_device() {
  auto& d = driver();
  CUdevice dev;
  TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
  int major = 0, minor = 0;
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  if (major < 9)
    throw UserError("tilejit kernels use TMA, which needs a Hopper (sm_90) or newer GPU",
                    "compute capability " + std::to_string(major) + "." + std::to_string(minor), "9.0 or newer");
  // The architecture-specific variant unlocks tensormap.replace and wgmma.
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 ? "a" : "");
}

DeviceTarget current_target() {
  DeviceTarget t;
  if (knobs().interpret || !driver_available()) return t;
  ensure_context();
  auto& d = driver();
  CUdevice dev;
  TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(d.cuCtxGetCurrent(&ctx));
  t.gpu = true;
  t.context = ctx;
  t.arch = arch_of_current_device();
  t.device = static_cast<int>(dev);
  char name[256] = {};
  TILEJIT_CHECK_CU(d.cuDeviceGetName(name, sizeof name, dev));
  t.name = name;
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_registers, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  return t;
}

std::string resource_problem(const VariantResources& r, const DeviceTarget& t) {
  if (r.threads > t.max_threads)
    return fmt::format("needs {} threads per program; the GPU runs at most {}", r.threads, t.max_threads);
  const int shared = r.shared_dynamic + std::max(r.shared_static, 0);
  if (shared > t.max_shared)
    return fmt::format(
        "needs {} bytes of shared memory per program ({} dynamic + {} static); the GPU offers {}", shared,
        r.shared_dynamic, std::max(r.shared_static, 0), t.max_shared);
  if (r.registers > 0 && r.registers * r.threads > t.max_registers)
    return fmt::format("needs {} registers per program ({} per thread x {} threads); the GPU offers {}",
                       r.registers * r.threads, r.registers, r.threads, t.max_registers);
  if (r.max_threads >= 0 && r.threads > r.max_threads)
    return fmt::format(
        "the compiled kernel runs at most {} threads per program (registers); the configuration has {}",
        r.max_threads, r.threads);
  return {};
}

}  // namespace tilejit::detail
