// Descriptor arrays on the device: one immutable buffer per list of tensors, uploaded on change.
#include "descriptor_array.h"

#include <algorithm>
#include <cstring>

#include "tilejit/error.h"
#include "tilejit/runtime/driver.h"

namespace tilejit::detail {

namespace {

bool same_tensors(const std::vector<TensorArg>& a, const std::vector<TensorArg>& b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_tensor);
}

CUevent new_event() {
  CUevent e = nullptr;
  TILEJIT_CHECK_CU(driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  return e;
}

}  // namespace

CUdeviceptr DescriptorArraySlot::prepare(const std::vector<TensorArg>& tensors, CUstream stream, bool capturing,
                                         const std::function<std::vector<TensorMapBytes>()>& encode,
                                         const std::string& kernel, int argument) {
  std::lock_guard lock(m_);
  if (current_.ptr == 0 || !same_tensors(tensors, key_)) {
    if (capturing)
      throw UserError("kernel '" + kernel + "': the tensors of array argument " + std::to_string(argument) +
                          " changed during CUDA graph capture (their descriptors would be uploaded inside the graph)",
                      std::to_string(tensors.size()) + " tensors that the last launch did not use",
                      "launch the kernel once with these tensors before capturing");
    const std::vector<TensorMapBytes> maps = encode();  // a rejected tensor leaves everything as it was
    Buffer old = current_;
    upload(maps, stream);
    key_ = tensors;
    if (old.ptr) retire(old, stream);
  }
  use_on(stream, capturing);
  return current_.ptr;
}

void DescriptorArraySlot::upload(const std::vector<TensorMapBytes>& maps, CUstream stream) {
  auto& d = driver();
  const size_t bytes = maps.size() * sizeof(TensorMapBytes);
  // The staging memory is reused once the previous copy out of it has run (normally long ago).
  if (staging_done_) TILEJIT_CHECK_CU(d.cuEventSynchronize(staging_done_));
  if (staging_bytes_ < bytes) {
    const size_t grow = std::max(bytes, 2 * staging_bytes_);
    if (staging_) TILEJIT_CHECK_CU(d.cuMemFreeHost(staging_));
    staging_ = nullptr;
    staging_bytes_ = 0;
    TILEJIT_CHECK_CU(d.cuMemHostAlloc(&staging_, grow, 0));
    staging_bytes_ = grow;
  }
  if (!staging_done_) staging_done_ = new_event();
  std::memcpy(staging_, maps.data(), bytes);
  Buffer fresh;
  TILEJIT_CHECK_CU(d.cuMemAllocAsync(&fresh.ptr, bytes, stream));
  TILEJIT_CHECK_CU(d.cuMemcpyHtoDAsync_v2(fresh.ptr, staging_, bytes, stream));
  TILEJIT_CHECK_CU(d.cuEventRecord(staging_done_, stream));
  fresh.ready = new_event();
  TILEJIT_CHECK_CU(d.cuEventRecord(fresh.ready, stream));
  fresh.streams.push_back(stream);
  current_ = fresh;
}

void DescriptorArraySlot::retire(Buffer& b, CUstream stream) {
  auto& d = driver();
  if (b.captured) return;  // a graph may replay with it (and wait for its `ready`): both stay
  if (b.ready) d.cuEventDestroy_v2(b.ready);  // a recorded event may be destroyed; waits on it stay valid
  // Free it on `stream` after every launch that used it, whichever stream it ran on.
  for (CUstream other : b.streams) {
    if (other == stream) continue;
    CUevent e = new_event();
    const CUresult rec = d.cuEventRecord(e, other);
    if (rec == CUDA_SUCCESS) {
      TILEJIT_CHECK_CU(d.cuStreamWaitEvent(stream, e, 0));
    } else {
      TILEJIT_CHECK_CU(d.cuCtxSynchronize());  // that stream is gone: wait for all its work
    }
    d.cuEventDestroy_v2(e);
  }
  TILEJIT_CHECK_CU(d.cuMemFreeAsync(b.ptr, stream));
}

void DescriptorArraySlot::use_on(CUstream stream, bool capturing) {
  Buffer& b = current_;
  if (capturing) b.captured = true;
  if (std::find(b.streams.begin(), b.streams.end(), stream) != b.streams.end()) return;
  auto& d = driver();
  // A first launch on another stream must not read the buffer before its upload has landed.
  if (capturing) {
    // Querying an event is not allowed during capture: the graph waits for the upload instead.
    if (b.ready) TILEJIT_CHECK_CU(d.cuStreamWaitEvent(stream, b.ready, CU_EVENT_WAIT_EXTERNAL));
  } else if (b.ready) {
    if (d.cuEventQuery(b.ready) == CUDA_SUCCESS) {
      if (!b.captured) {
        d.cuEventDestroy_v2(b.ready);
        b.ready = nullptr;
      }
    } else {
      TILEJIT_CHECK_CU(d.cuStreamWaitEvent(stream, b.ready, 0));
    }
  }
  b.streams.push_back(stream);
}

}  // namespace tilejit::detail
