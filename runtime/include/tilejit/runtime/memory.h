// Device memory and streams for host applications and tests that do not bring their own.
#pragma once

#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace tilejit {

/// A CUDA stream handle (CUstream and cudaStream_t are this type); nullptr is the legacy default stream.
using Stream = CUstream_st*;

/// Makes a context current on this thread if none is: the primary context of
/// device `ordinal` (the one the CUDA runtime and PyTorch use). Throws CudaError.
void ensure_context(int ordinal = 0);

/// Owning device allocation (cuMemAlloc in the current or primary context).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return reinterpret_cast<void*>(ptr_); }
  uint64_t address() const { return ptr_; }
  size_t size() const { return bytes_; }

  /// Synchronous copies (the whole buffer when `bytes` is 0).
  void upload(const void* host, size_t bytes = 0);
  void download(void* host, size_t bytes = 0) const;
  void fill_bytes(unsigned char value);

 private:
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
};

/// Waits for all work on `stream`.
void synchronize(Stream stream = nullptr);

/// CUDA-event timing of a callable that enqueues work on `stream`: `warmup`
/// untimed runs, then the median of `reps` timed runs, in milliseconds.
double time_median_ms(Stream stream, int warmup, int reps, void (*fn)(void*), void* user);

}  // namespace tilejit
