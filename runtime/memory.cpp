// Device buffers, context setup, synchronisation and event timing through the dlopen'ed driver.
#include "tilejit/runtime/memory.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "driver_api.h"
#include "tilejit/runtime/driver.h"

namespace tilejit {

using detail::driver;

void ensure_context(int ordinal) {
  auto& d = driver();
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(d.cuCtxGetCurrent(&ctx));
  if (ctx) return;
  CUdevice dev;
  TILEJIT_CHECK_CU(d.cuDeviceGet(&dev, ordinal));
  TILEJIT_CHECK_CU(d.cuDevicePrimaryCtxRetain(&ctx, dev));
  TILEJIT_CHECK_CU(d.cuCtxSetCurrent(ctx));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  ensure_context();
  CUdeviceptr p = 0;
  TILEJIT_CHECK_CU(driver().cuMemAlloc_v2(&p, std::max<size_t>(bytes, 1)));
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) driver().cuMemFree_v2(ptr_);  // errors at teardown are not actionable
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, 0)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) driver().cuMemFree_v2(ptr_);
    ptr_ = std::exchange(o.ptr_, 0);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > bytes_) throw UserError("DeviceBuffer::upload: more bytes than the buffer holds", std::to_string(bytes), std::to_string(bytes_));
  TILEJIT_CHECK_CU(driver().cuMemcpyHtoD_v2(ptr_, host, bytes ? bytes : bytes_));
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > bytes_) throw UserError("DeviceBuffer::download: more bytes than the buffer holds", std::to_string(bytes), std::to_string(bytes_));
  TILEJIT_CHECK_CU(driver().cuMemcpyDtoH_v2(host, ptr_, bytes ? bytes : bytes_));
}

void DeviceBuffer::fill_bytes(unsigned char value) { TILEJIT_CHECK_CU(driver().cuMemsetD8_v2(ptr_, value, bytes_)); }

void synchronize(Stream stream) {
  ensure_context();
  TILEJIT_CHECK_CU(driver().cuStreamSynchronize(reinterpret_cast<CUstream>(stream)));
}

double time_median_ms(Stream stream, int warmup, int reps, void (*fn)(void*), void* user) {
  ensure_context();
  auto& d = driver();
  auto s = reinterpret_cast<CUstream>(stream);
  for (int i = 0; i < warmup; ++i) fn(user);
  CUevent start, stop;
  TILEJIT_CHECK_CU(d.cuEventCreate(&start, CU_EVENT_DEFAULT));
  TILEJIT_CHECK_CU(d.cuEventCreate(&stop, CU_EVENT_DEFAULT));
  std::vector<float> times;
  for (int i = 0; i < reps; ++i) {
    TILEJIT_CHECK_CU(d.cuEventRecord(start, s));
    fn(user);
    TILEJIT_CHECK_CU(d.cuEventRecord(stop, s));
    TILEJIT_CHECK_CU(d.cuEventSynchronize(stop));
    float ms = 0;
    TILEJIT_CHECK_CU(d.cuEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  d.cuEventDestroy_v2(start);
  d.cuEventDestroy_v2(stop);
  std::sort(times.begin(), times.end());
  return times.empty() ? 0.0 : static_cast<double>(times[times.size() / 2]);
}

}  // namespace tilejit
