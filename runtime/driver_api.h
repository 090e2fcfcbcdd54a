// The CUDA driver entry points, resolved from libcuda.so.1 at run time (private to runtime/).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#error "tilejit resolves the legacy-default-stream entry points; do not define CUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

namespace tilejit::detail {

// X(member, symbol, abi): `member` is the name the driver exports for that ABI (used by the
// dlsym fallback), `symbol` the name cuGetProcAddress takes, `abi` the CUDA version that
// introduced the ABI; the member's type is PFN_<symbol>_v<abi> from cudaTypedefs.h. Pinning
// each ABI keeps the signatures right on any driver, older or newer than these headers
// (CUDA 13 changed cuCtxSynchronize and cuCtxGetDevice, for instance).
// cuda.h renames some members by macro (cuDevicePrimaryCtxRelease -> ..._v2,
// cuEventElapsedTime -> ..._v2, cuMemAlloc -> cuMemAlloc_v2): both spellings work.
#define TILEJIT_DRIVER_ENTRY_POINTS(X)                             \
  X(cuInit, cuInit, 2000)                                          \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020)                  \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000)                      \
  X(cuDeviceGet, cuDeviceGet, 2000)                                \
  X(cuDeviceGetName, cuDeviceGetName, 2000)                        \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)              \
  X(cuDeviceTotalMem_v2, cuDeviceTotalMem, 3020)                   \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)      \
  X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000) \
  X(cuCtxGetCurrent, cuCtxGetCurrent, 4000)                        \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000)                        \
  X(cuCtxGetDevice, cuCtxGetDevice, 2000)                          \
  X(cuCtxSynchronize, cuCtxSynchronize, 2000)                      \
  X(cuGetErrorName, cuGetErrorName, 6000)                          \
  X(cuGetErrorString, cuGetErrorString, 6000)                      \
  X(cuLibraryLoadData, cuLibraryLoadData, 12000)                   \
  X(cuLibraryUnload, cuLibraryUnload, 12000)                       \
  X(cuLibraryGetKernel, cuLibraryGetKernel, 12000)                 \
  X(cuKernelGetFunction, cuKernelGetFunction, 12000)               \
  X(cuModuleLoadData, cuModuleLoadData, 2000)                      \
  X(cuModuleUnload, cuModuleUnload, 2000)                          \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000)                \
  X(cuFuncGetAttribute, cuFuncGetAttribute, 2020)                  \
  X(cuFuncSetAttribute, cuFuncSetAttribute, 9000)                  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, 6050) \
  X(cuKernelGetAttribute, cuKernelGetAttribute, 12000)             \
  X(cuLaunchKernel, cuLaunchKernel, 4000)                          \
  X(cuLaunchKernelEx, cuLaunchKernelEx, 11060)                     \
  X(cuMemAlloc_v2, cuMemAlloc, 3020)                               \
  X(cuMemFree_v2, cuMemFree, 3020)                                 \
  X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020)                           \
  X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020)                           \
  X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020)                           \
  X(cuMemsetD8_v2, cuMemsetD8, 3020)                               \
  X(cuMemAllocAsync, cuMemAllocAsync, 11020)                       \
  X(cuMemFreeAsync, cuMemFreeAsync, 11020)                         \
  X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020)                 \
  X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020)                 \
  X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020)                 \
  X(cuMemsetD8Async, cuMemsetD8Async, 3020)                        \
  X(cuStreamCreate, cuStreamCreate, 2000)                          \
  X(cuStreamDestroy_v2, cuStreamDestroy, 4000)                     \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000)                \
  X(cuStreamIsCapturing, cuStreamIsCapturing, 10000)               \
  X(cuStreamGetCtx, cuStreamGetCtx, 9020)                          \
  X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010)          \
  X(cuStreamEndCapture, cuStreamEndCapture, 10000)                 \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphLaunch, cuGraphLaunch, 10000)                           \
  X(cuGraphExecDestroy, cuGraphExecDestroy, 10000)                 \
  X(cuGraphDestroy, cuGraphDestroy, 10000)                         \
  X(cuEventCreate, cuEventCreate, 2000)                            \
  X(cuEventDestroy_v2, cuEventDestroy, 4000)                       \
  X(cuEventRecord, cuEventRecord, 2000)                            \
  X(cuEventSynchronize, cuEventSynchronize, 2000)                  \
  X(cuEventQuery, cuEventQuery, 2000)                              \
  X(cuStreamWaitEvent, cuStreamWaitEvent, 3020)                    \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020)                          \
  X(cuMemFreeHost, cuMemFreeHost, 2000)                            \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000)                  \
  X(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled, 12000)         \
  X(cuPointerGetAttribute, cuPointerGetAttribute, 4000)

/// The resolved driver: call through these pointers, e.g.
/// `TILEJIT_CHECK_CU(driver().cuCtxSynchronize())`.
struct Driver {
#define TILEJIT_DRIVER_MEMBER(member, symbol, abi) PFN_##symbol##_v##abi member = nullptr;
  TILEJIT_DRIVER_ENTRY_POINTS(TILEJIT_DRIVER_MEMBER)
#undef TILEJIT_DRIVER_MEMBER
};

/// The driver, loaded and initialized (cuInit) once on first use, thread-safe. Throws the
/// CudaError of `tilejit::ensure_driver` when there is no usable driver.
Driver& driver();

}  // namespace tilejit::detail
