// Benchmarking for the autotuner: the timing of candidates with CUDA events (the measurement loop of the
// default timer), the in-place safety that makes repeated runs harmless (the tensors a kernel writes are
// saved before timing and restored between runs), L2 eviction between runs, and time_candidates(), which
// times every usable candidate of a tuning and picks the fastest.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "autotune_internal.h"
#include "driver_api.h"
#include "log_internal.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/memory.h"

namespace tilejit {
namespace detail {
namespace {

// Errors after which the CUDA context is unusable: a fault of the kernel itself.
bool is_sticky(const CudaError& e) {
  switch (e.code()) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
      return true;
    default:
      return false;
  }
}

// ---- in-place safety: the tensors a kernel writes, saved before tuning -----------------------

class Snapshot {
 public:
  Snapshot(std::span<const KernelArg> args, const std::vector<int>& params, Stream stream, bool gpu)
      : stream_(stream), gpu_(gpu) {
    for (int p : params) {
      const KernelArg& a = args[static_cast<size_t>(p)];
      if (a.kind == KernelArg::Tensor) save(a.tensor);
      if (a.kind == KernelArg::TensorArray)
        for (const TensorArg& t : a.array) save(t);
    }
  }
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;
  ~Snapshot() {
    if (gpu_ && !saved_.empty())
      driver().cuStreamSynchronize(reinterpret_cast<CUstream>(stream_));  // copies still reading
  }

  /// Writes the saved contents back (ordered on the stream for device memory).
  void restore() {
    bool synced = false;
    for (Saved& s : saved_) {
      if (s.device.size() > 0) {
        TILEJIT_CHECK_CU(driver().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(s.data),
                                                       s.device.address(), s.bytes,
                                                       reinterpret_cast<CUstream>(stream_)));
      } else {
        if (gpu_ && !synced) synchronize(stream_);  // kernels may still be writing the host memory
        synced = true;
        std::memcpy(s.data, s.host.data(), s.bytes);
      }
    }
  }

 private:
  struct Saved {
    void* data = nullptr;
    size_t bytes = 0;
    DeviceBuffer device;              // the copy of device memory, or empty
    std::vector<unsigned char> host;  // the copy of host memory
  };

  static bool is_device_memory(const void* p) {
    if (!driver_available()) return false;
    unsigned int type = 0;
    return driver().cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                          reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS &&
           type != CU_MEMORYTYPE_HOST;
  }

  void save(const TensorArg& t) {
    const int64_t bytes = detail::extent_bytes(t);
    if (bytes <= 0 || t.data == nullptr) return;
    Saved s;
    s.data = t.data;
    s.bytes = static_cast<size_t>(bytes);
    if (is_device_memory(t.data)) {
      s.device = DeviceBuffer(s.bytes);
      TILEJIT_CHECK_CU(driver().cuMemcpyDtoDAsync_v2(s.device.address(),
                                                     reinterpret_cast<CUdeviceptr>(t.data), s.bytes,
                                                     reinterpret_cast<CUstream>(stream_)));
    } else {
      if (gpu_) synchronize(stream_);
      s.host.assign(static_cast<const unsigned char*>(t.data),
                    static_cast<const unsigned char*>(t.data) + s.bytes);
    }
    saved_.push_back(std::move(s));
  }

  Stream stream_;
  bool gpu_;
  std::vector<Saved> saved_;
};

// Evicts the L2 cache by writing a buffer twice its size.
class L2Flusher {
 public:
  L2Flusher(bool enabled, const detail::DeviceTarget& target, Stream stream) : stream_(stream) {
    if (enabled && target.gpu) buffer_ = DeviceBuffer(2 * static_cast<size_t>(target.l2_bytes));
  }
  void flush() {
    if (buffer_.size() > 0)
      TILEJIT_CHECK_CU(driver().cuMemsetD8Async(buffer_.address(), 0, buffer_.size(),
                                                reinterpret_cast<CUstream>(stream_)));
  }

 private:
  Stream stream_;
  DeviceBuffer buffer_;
};

class CandidateRun final : public TuneRun {
 public:
  CandidateRun(const KernelBase& kernel, Stream stream, dim3 grid, const Config& config,
               std::span<const KernelArg> args, const LaunchOptions& options, Snapshot& snapshot,
               L2Flusher& flusher, const std::source_location& where)
      : kernel_(kernel),
        stream_(stream),
        grid_(grid),
        config_(config),
        args_(args),
        options_(options),
        snapshot_(snapshot),
        flusher_(flusher),
        where_(where) {}
  void launch() override { runtime::launch(kernel_, stream_, grid_, config_, args_, options_, where_); }
  void restore() override { snapshot_.restore(); }
  void flush_l2() override { flusher_.flush(); }
  Stream stream() const override { return stream_; }

 private:
  const KernelBase& kernel_;
  Stream stream_;
  dim3 grid_;
  const Config& config_;
  std::span<const KernelArg> args_;
  const LaunchOptions& options_;
  Snapshot& snapshot_;
  L2Flusher& flusher_;
  std::source_location where_;  // the user's call that tunes
};

// CUDA events created and destroyed together.
class Events {
 public:
  explicit Events(size_t n) : events_(n, nullptr) {
    for (CUevent& e : events_) TILEJIT_CHECK_CU(driver().cuEventCreate(&e, CU_EVENT_DEFAULT));
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() {
    for (CUevent e : events_)
      if (e) driver().cuEventDestroy_v2(e);
  }
  void record(size_t i, Stream s) {
    TILEJIT_CHECK_CU(driver().cuEventRecord(events_[i], reinterpret_cast<CUstream>(s)));
  }
  double ms_between(size_t a, size_t b) {
    TILEJIT_CHECK_CU(driver().cuEventSynchronize(events_[b]));
    float ms = 0;
    TILEJIT_CHECK_CU(driver().cuEventElapsedTime(&ms, events_[a], events_[b]));
    return ms;
  }

 private:
  std::vector<CUevent> events_;
};

class CudaEventTimer final : public TuneTimer {
 public:
  explicit CudaEventTimer(const TuneOptions& options) : options_(options) {}

  double measure(const Config&, TuneRun& run) override {
    const Stream s = run.stream();
    run.launch();  // warm-up: binds the compiled code, fills the instruction caches
    const int most = std::max(options_.max_runs, 1);
    Events events(2 * static_cast<size_t>(most) + 2);
    // One timed run estimates how many fit in the budget.
    run.restore();
    run.flush_l2();
    events.record(0, s);
    run.launch();
    events.record(1, s);
    const double estimate = events.ms_between(0, 1);
    const int runs = std::clamp(static_cast<int>(options_.budget_ms / std::max(estimate, 1e-3)),
                                std::min(options_.min_runs, most), most);
    for (int r = 0; r < runs; ++r) {
      run.restore();
      run.flush_l2();
      events.record(2 + 2 * static_cast<size_t>(r), s);
      run.launch();
      events.record(3 + 2 * static_cast<size_t>(r), s);
    }
    std::vector<double> times;
    for (int r = 0; r < runs; ++r)
      times.push_back(events.ms_between(2 + 2 * static_cast<size_t>(r), 3 + 2 * static_cast<size_t>(r)));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

 private:
  TuneOptions options_;
};

}  // namespace

const Candidate* time_candidates(const KernelBase& kernel, const std::string& name, TuneTimer& timer,
                                 const std::vector<Candidate*>& usable, Stream stream, std::span<const KernelArg> args,
                                 const LaunchOptions& options, const runtime::Autotuner::GridFn& grid,
                                 const TuneOptions& tune_options, const DeviceTarget& target,
                                 std::atomic<uint64_t>& timed_runs, const std::source_location& where) {
  std::vector<int> written;
  for (const Candidate* c : usable)
    for (int p : ir::written_params(*kernel.graph(c->config))) written.push_back(p);
  std::sort(written.begin(), written.end());
  written.erase(std::unique(written.begin(), written.end()), written.end());
  Snapshot snapshot(args, written, stream, target.gpu);
  int64_t tensor_bytes = 0;
  for (const KernelArg& a : args) {
    if (a.kind == KernelArg::Tensor) tensor_bytes += extent_bytes(a.tensor);
    for (const TensorArg& t : a.array) tensor_bytes += extent_bytes(t);
  }
  L2Flusher flusher(tune_options.flush_l2 && tensor_bytes <= 4 * static_cast<int64_t>(target.l2_bytes), target,
                    stream);
  const TuneArgs targs(args);
  for (Candidate* c : usable) {
    try {
      const dim3 g = grid(c->config, targs);
      if (!g.whole_clusters(c->config.cluster_x(), c->config.cluster_y())) {
        // A clustered configuration of a tuning space meant for other shapes too (TuneSpace::matmul): not run, and
        // not a warning.
        c->problem = fmt::format("its grid ({}, {}, {}) is not whole clusters of {} x {} programs", g.x, g.y, g.z,
                                 c->config.cluster_x(), c->config.cluster_y());
        logger().info("autotune: kernel '{}': configuration {{{}}} is skipped: {}", name, c->config.str(), c->problem);
        continue;
      }
      CandidateRun run(kernel, stream, g, c->config, args, options, snapshot, flusher, where);
      c->ms = timer.measure(c->config, run);
      timed_runs.fetch_add(1);
      if (!std::isfinite(c->ms) || c->ms < 0) c->problem = fmt::format("the timer measured {} ms", c->ms);
    } catch (const CudaError& e) {
      if (is_sticky(e)) {
        logger().error("autotune: kernel '{}' faulted with configuration {{{}}}; the CUDA context is unusable",
                       name, c->config.str());
        throw;
      }
      c->problem = first_line(e.what());
    } catch (const std::exception& e) {
      c->problem = first_line(e.what());
    }
    snapshot.restore();
    if (!c->problem.empty())
      logger().warn("autotune: kernel '{}': configuration {{{}}} is unusable: {}", name, c->config.str(),
                    c->problem);
  }
  const Candidate* winner = nullptr;
  for (const Candidate* c : usable)
    if (c->problem.empty() && (!winner || c->ms < winner->ms)) winner = c;
  return winner;
}

}  // namespace detail

std::shared_ptr<TuneTimer> cuda_event_timer(const TuneOptions& options) {
  return std::make_shared<detail::CudaEventTimer>(options);
}

}  // namespace tilejit
