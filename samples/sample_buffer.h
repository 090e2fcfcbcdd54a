// SampleBuffer: host data mirrored in GPU memory when there is a GPU, so one code path runs on both.
//
// A kernel launched with tilejit's launch() reads device pointers on a machine
// with a GPU and host pointers on one without (where launch() runs the CPU
// interpreter). A SampleBuffer holds the host copy a program fills and checks,
// and, when there is a GPU, a device copy of the same size; kernel_ptr() is
// whichever of the two the kernel must be given.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <tilejit/runtime/driver.h>
#include <tilejit/runtime/knobs.h>
#include <tilejit/runtime/memory.h>

namespace tilejit::samples {

template <class T>
class SampleBuffer {
 public:
  explicit SampleBuffer(size_t n, T value = T{}) : host_(n, value), on_gpu_(tilejit::has_gpu()) {
    if (on_gpu_) device_ = tilejit::DeviceBuffer(n * sizeof(T));
  }

  T& operator[](size_t i) { return host_[i]; }
  const T& operator[](size_t i) const { return host_[i]; }
  T* data() { return host_.data(); }
  const T* data() const { return host_.data(); }
  size_t size() const { return host_.size(); }

  /// The pointer a kernel argument takes: device memory on a GPU machine, else the host copy.
  void* kernel_ptr() const { return on_gpu_ ? device_.data() : const_cast<T*>(host_.data()); }

  /// Host copy -> device copy (nothing to do without a GPU).
  void to_device() {
    if (on_gpu_) device_.upload(host_.data(), host_.size() * sizeof(T));
  }
  /// Device copy -> host copy (nothing to do without a GPU).
  void to_host() {
    if (on_gpu_) device_.download(host_.data(), host_.size() * sizeof(T));
  }

 private:
  std::vector<T> host_;
  bool on_gpu_;
  tilejit::DeviceBuffer device_;
};

/// True when launch() runs kernels on the GPU: there is one and TILEJIT_INTERPRET is not set.
inline bool runs_on_gpu() { return tilejit::has_gpu() && !tilejit::knobs().interpret; }

/// Where launch() runs kernels, for the samples' output: the GPU's name or the interpreter.
inline std::string run_target() {
  if (runs_on_gpu()) return "GPU " + tilejit::devices().at(0).name;
  return tilejit::has_gpu() ? "CPU interpreter (TILEJIT_INTERPRET=1)" : "CPU interpreter (no GPU)";
}

}  // namespace tilejit::samples
