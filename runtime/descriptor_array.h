// The device copy of a descriptor-array argument: uploaded when its tensors change, reused by every
// later launch, capturable in CUDA graphs (private to runtime/).
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "driver_api.h"
#include "tensor_map.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// One TensorArray parameter of one compiled kernel in one CUDA context.
///
/// Each distinct list of tensors gets its own device buffer of descriptors, written once (from
/// pinned staging, stream-ordered on the launching stream) and never modified, so a kernel in
/// flight or a captured graph always reads the descriptors it was launched with. A launch with the
/// same tensors as the previous one does no allocation, no encoding and no copy, so it can be
/// captured in a CUDA graph. When the tensors change, the previous buffer is released
/// stream-ordered after every launch that used it, unless a graph captured a launch with it: then
/// it stays allocated for the life of the context (a graph may be replayed at any time).
class DescriptorArraySlot {
 public:
  DescriptorArraySlot() = default;
  DescriptorArraySlot(const DescriptorArraySlot&) = delete;
  DescriptorArraySlot& operator=(const DescriptorArraySlot&) = delete;
  // Frees nothing: kernels may still be running, and at process exit the driver may be gone.
  ~DescriptorArraySlot() = default;

  /// The device address of the descriptors of `tensors` for a kernel launched next on `stream`.
  /// `encode` encodes them (UserError for a tensor that breaks a rule: nothing changes then).
  /// `capturing`: `stream` is being captured; a change of tensors is then refused with a UserError
  /// naming `kernel` and `argument`, since the upload would become part of the graph.
  CUdeviceptr prepare(const std::vector<TensorArg>& tensors, CUstream stream, bool capturing,
                      const std::function<std::vector<TensorMapBytes>()>& encode, const std::string& kernel, int argument);

 private:
  struct Buffer {
    CUdeviceptr ptr = 0;
    CUevent ready = nullptr;        ///< recorded after its upload; null once seen complete
    std::vector<CUstream> streams;  ///< every stream a launch used it on
    bool captured = false;          ///< a captured graph holds its address
  };
  void upload(const std::vector<TensorMapBytes>& maps, CUstream stream);
  void retire(Buffer& b, CUstream stream);
  void use_on(CUstream stream, bool capturing);

  std::mutex m_;
  std::vector<TensorArg> key_;  ///< the tensors of `current_`
  Buffer current_;
  void* staging_ = nullptr;  ///< pinned host memory the uploads copy from
  size_t staging_bytes_ = 0;
  CUevent staging_done_ = nullptr;  ///< recorded after the last copy out of staging_
};

}  // namespace tilejit::detail
