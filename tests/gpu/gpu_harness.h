// Runs one kernel in the interpreter and on the GPU with the same inputs and compares every tensor.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/runtime/memory.h"
#include "compare.h"
#include "tilejit/tilejit.h"

namespace gpu_test {

using namespace tilejit::dsl;

/// Cases run and cases whose every tensor matched, for the suite's closing line.
inline int g_cases = 0;
inline int g_matched = 0;

/// True when the suite runs kernels on a GPU; otherwise it compiles them with
/// NVRTC for sm_90a and runs only the interpreter side.
inline bool on_gpu() {
  static const bool v = tilejit::has_gpu();
  return v;
}

/// Bytes aligned for TMA (128) on the host.
struct HostBytes {
  std::unique_ptr<unsigned char[]> p;
  size_t n = 0;
  explicit HostBytes(size_t bytes) : p(new (std::align_val_t(128)) unsigned char[bytes ? bytes : 1]()), n(bytes) {}
};

/// A tensor with a host copy (interpreter) and a device copy (GPU).
template <class T, int R>
class Twin {
 public:
  using Host = typename tag_t<T>::host;
  Twin(std::array<int64_t, R> sizes, std::array<int64_t, R> strides) : sizes_(sizes), strides_(strides), host_(bytes()) {
    if (on_gpu()) dev_ = std::make_unique<tilejit::DeviceBuffer>(bytes());
  }
  explicit Twin(std::array<int64_t, R> sizes) : Twin(sizes, padded(sizes)) {}

  /// Row-major strides with every row padded to a multiple of 16 bytes, as TMA requires.
  static std::array<int64_t, R> padded(const std::array<int64_t, R>& s) {
    const int64_t per16 = 16 / tilejit::ir::size_of(dtype_v<T>);
    std::array<int64_t, R> st{};
    int64_t m = 1;
    for (int d = R - 1; d >= 0; --d) {
      st[static_cast<size_t>(d)] = m;
      m *= s[static_cast<size_t>(d)];
      if (d == R - 1) m = (m + per16 - 1) / per16 * per16;
    }
    return st;
  }
  size_t elems() const {
    int64_t last = 0;
    for (int d = 0; d < R; ++d) last += (sizes_[static_cast<size_t>(d)] - 1) * strides_[static_cast<size_t>(d)];
    return static_cast<size_t>(last + 1);
  }
  size_t bytes() const { return elems() * tilejit::ir::size_of(dtype_v<T>); }

  /// Fills every element (padding included) with reproducible random values.
  void randomize(uint32_t seed, double lo = -4, double hi = 4) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    Host* h = reinterpret_cast<Host*>(host_.p.get());
    for (size_t i = 0; i < elems(); ++i) {
      const double v = u(rng);
      if constexpr (is_float_v<T>) {
        h[i] = Host(static_cast<float>(v));
      } else if constexpr (is_bool_v<T>) {
        h[i] = v > 0;
      } else {
        h[i] = static_cast<Host>(static_cast<int64_t>(std::floor(v)));
      }
    }
  }
  void fill_byte(unsigned char b) { std::memset(host_.p.get(), b, host_.n); }
  Host* host_data() { return reinterpret_cast<Host*>(host_.p.get()); }
  /// The device copy's address (nullptr without a GPU).
  void* device_data() { return dev_ ? dev_->data() : nullptr; }

  tilejit::TensorView<T, R> host() { return tilejit::TensorView<T, R>(host_.p.get(), sizes_, strides_); }
  tilejit::TensorView<T, R> device() { return tilejit::TensorView<T, R>(dev_->data(), sizes_, strides_); }
  void upload() {
    if (dev_) dev_->upload(host_.p.get());
  }
  /// Compares the device copy with the host copy: bit-exact when tol == 0, else
  /// |a - b| <= tol * max(1, |b|); NaN matches NaN. Returns the number of mismatches.
  size_t compare(double tol, std::string* first = nullptr) const {
    if (!dev_) return 0;
    HostBytes d(bytes());
    dev_->download(d.p.get());
    return compare_elements(dtype_v<T>, d.p.get(), host_.p.get(), elems(), tol, first);
  }

 private:
  std::array<int64_t, R> sizes_, strides_;
  HostBytes host_;
  std::unique_ptr<tilejit::DeviceBuffer> dev_;
};

/// Fills every byte of each twin's host copy with `b` (outputs before a run).
template <class... X>
void fill_bytes(unsigned char b, X&... twins) {
  (twins.fill_byte(b), ...);
}

template <class X> struct is_twin : std::false_type {};
template <class T, int R> struct is_twin<Twin<T, R>> : std::true_type {};

template <class X>
decltype(auto) host_arg(X& x) {
  if constexpr (is_twin<std::remove_cvref_t<X>>::value) return x.host(); else return (x);
}
template <class X>
decltype(auto) dev_arg(X& x) {
  if constexpr (is_twin<std::remove_cvref_t<X>>::value) return x.device(); else return (x);
}
template <class X>
void upload_arg(X& x) {
  if constexpr (is_twin<std::remove_cvref_t<X>>::value) x.upload();
}
template <class X>
bool compare_arg(X& x, double tol, int index) {
  if constexpr (is_twin<std::remove_cvref_t<X>>::value) {
    std::string first;
    const size_t bad = x.compare(tol, &first);
    INFO("tensor argument " << index << ": " << first);
    CHECK(bad == 0);
    return bad == 0;
  }
  return true;
}

/// Runs `k` in the interpreter (host copies) and on the GPU (device copies) from
/// the same inputs, then compares every tensor argument. Without a GPU the
/// kernel is compiled with NVRTC for sm_90a instead of launched.
template <class K, class... A>
void run_both(const K& k, tilejit::dim3 grid, const tilejit::Config& cfg, double tol, A&... args) {
  (upload_arg(args), ...);
  ++g_cases;
  k.interpret(grid, cfg, host_arg(args)...);
  if (!on_gpu()) {
    const std::string report = tilejit::runtime::compile_only(k.base(), cfg);
    const bool no_spills = report.find("0 bytes spill stores") != std::string::npos;
    if (!no_spills) MESSAGE(report);  // ptxas's resources name the kernel and the spilled bytes
    CHECK(no_spills);
    return;
  }
  k.launch(nullptr, grid, cfg, dev_arg(args)...);
  tilejit::synchronize(nullptr);
  int index = 0;
  bool all = true;
  ((all = compare_arg(args, tol, index++) && all), ...);  // comma fold: left to right
  g_matched += all;
}

}  // namespace gpu_test
