// The CUDA driver as seen from tilejit's public API: is there one, which GPUs, and error checks.
//
// tilejit never links libcuda: it loads libcuda.so.1 with dlopen on first use, so programs built
// with tilejit start, trace, generate code and run the CPU interpreter on machines without a GPU
// driver. Every GPU operation then throws a CudaError that explains what is missing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tilejit/error.h"

namespace tilejit {

/// CudaError::code() when no usable driver library was found (CUDA's own codes are >= 0).
inline constexpr int kNoDriverCode = -1;

/// One GPU as the driver reports it.
struct DeviceInfo {
  int ordinal = 0;         ///< the CUdevice ordinal
  std::string name;        ///< e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0;        ///< compute capability, e.g. 9 ...
  int cc_minor = 0;        ///< ... and 0 for sm_90
  int sm_count = 0;        ///< streaming multiprocessors
  std::size_t total_mem = 0;  ///< bytes of device memory
};

/// True when libcuda.so.1 was loaded, has every entry point tilejit needs, and cuInit succeeded.
/// Loads the driver on first call; never throws.
bool driver_available() noexcept;

/// Why the driver is unusable (the message `ensure_driver` would throw); empty when it is usable.
std::string driver_error();

/// Throws the CudaError that explains why the driver is unusable; returns when it is usable.
void ensure_driver();

/// The driver's CUDA version, e.g. 12040 for 12.4; 0 when libcuda.so.1 cannot be loaded.
int driver_version() noexcept;

/// Number of GPUs; 0 without a usable driver. Never throws.
int device_count() noexcept;

/// device_count() > 0.
bool has_gpu() noexcept;

/// Every GPU; empty without a usable driver. Throws CudaError when a query fails.
std::vector<DeviceInfo> devices();

/// Throws CudaError(call, result, <CUDA error name>, <CUDA error description>) when `result`
/// (a CUresult) is not CUDA_SUCCESS.
void check_cuda(int result, const char* call);

}  // namespace tilejit

/// Evaluates a driver API call and throws CudaError naming the call when it fails.
#define TILEJIT_CHECK_CU(expr) ::tilejit::check_cuda(static_cast<int>(expr), #expr)
