// The autotuner: search spaces, tuning keys, candidates compiled in parallel and timed, decisions kept per
// process and on disk.
#include "tilejit/runtime/autotune.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>

#include "driver_api.h"
#include "launch_internal.h"
#include "log_internal.h"
#include "storage.h"
#include "thread_pool.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/version.h"

namespace tilejit {

using detail::driver;

// ---- TuneArgs --------------------------------------------------------------------------------

namespace {

const char* kind_name(const KernelArg& a) {
  switch (a.kind) {
    case KernelArg::Tensor:
      return "a tensor";
    case KernelArg::TensorArray:
      return "a tensor array";
    case KernelArg::Scalar:
      return "a scalar";
    case KernelArg::Config:
      return "a configuration value";
  }
  return "?";
}

}  // namespace

size_t TuneArgs::count() const {
  return static_cast<size_t>(std::count_if(bound_.begin(), bound_.end(),
                                           [](const KernelArg& a) { return a.kind != KernelArg::Config; }));
}

const KernelArg& TuneArgs::arg(size_t i, std::source_location loc) const {
  size_t host = 0;
  for (const KernelArg& a : bound_) {
    if (a.kind == KernelArg::Config) continue;
    if (host++ == i) return a;
  }
  throw UserError("autotune: there is no launch argument " + std::to_string(i), std::to_string(i),
                  std::to_string(count()) + " arguments, numbered from 0", loc);
}

const TensorArg& TuneArgs::tensor(size_t i, std::source_location loc) const {
  const KernelArg& a = arg(i, loc);
  if (a.kind != KernelArg::Tensor)
    throw UserError("autotune: launch argument " + std::to_string(i) + " is not a tensor", kind_name(a),
                    "a TensorView argument", loc);
  return a.tensor;
}

int64_t TuneArgs::size(size_t i, int dim, std::source_location loc) const {
  const TensorArg& t = tensor(i, loc);
  if (dim < 0 || dim >= t.rank)
    throw UserError(
        "autotune: tensor argument " + std::to_string(i) + " has no dimension " + std::to_string(dim),
        std::to_string(dim), "0.." + std::to_string(t.rank - 1), loc);
  return t.sizes[static_cast<size_t>(dim)];
}

double TuneArgs::scalar(size_t i, std::source_location loc) const {
  const KernelArg& a = arg(i, loc);
  if (a.kind != KernelArg::Scalar)
    throw UserError("autotune: launch argument " + std::to_string(i) + " is not a scalar", kind_name(a),
                    "a number", loc);
  return ir::is_float(a.dtype) ? a.f : static_cast<double>(a.i);
}

// ---- TuneSpace -------------------------------------------------------------------------------

void set_config_value(Config& config, std::string_view name, int64_t value, std::source_location loc) {
  config.set_field(name, value, loc);
}

TuneSpace TuneSpace::matmul() {
  const auto tile = [](int64_t bm, int64_t bn, int64_t bk, int warps, int stages = Config::kAutoStages) {
    return Config({{"BM", bm}, {"BN", bn}, {"BK", bk}}, warps, stages);
  };
  return TuneSpace(std::vector<Config>{
      // Large problems: two consumer warpgroups on 128 x 256 (bf16 and fp8's best, cuBLAS's level on an H100).
      tile(128, 256, 64, 8), tile(128, 256, 64, 8, 4).warp_specialize(), tile(256, 128, 64, 8), tile(128, 256, 128, 8, 3),
      tile(128, 256, 32, 8, 3),  // tf32's best (32 f32 elements are 128 bytes, one swizzle row)
      // Mid-sized ones: more programs.
      tile(128, 128, 64, 8), tile(128, 128, 128, 8), tile(128, 128, 64, 4),
      tile(128, 128, 64, 4, 3).programs_per_sm(2).warp_specialize(), tile(64, 256, 64, 4), tile(128, 64, 64, 4),
      tile(64, 128, 64, 4),
      // Small ones.
      tile(64, 64, 64, 4)});
}

TuneSpace::TuneSpace(std::initializer_list<Values> values, std::source_location loc) : base_{Config{}} {
  for (const auto& [name, list] : values) add(name, list, loc);
}

TuneSpace::TuneSpace(std::vector<Config> configs, std::source_location loc) : base_(std::move(configs)) {
  if (base_.empty())
    throw UserError("autotune: the list of configurations is empty", "0 configurations", "at least 1", loc);
}

TuneSpace& TuneSpace::add(std::string name, std::vector<int64_t> values, std::source_location loc) {
  if (values.empty())
    throw UserError("autotune: the value list of '" + name + "' is empty", "{}", "at least one value", loc);
  for (const auto& axis : axes_)
    if (axis.first == name)
      throw UserError("autotune: '" + name + "' has two value lists", name, "one list per name", loc);
  // Checked now, where the caller's line is known, rather than when the space is expanded.
  Config probe;
  for (int64_t v : values) set_config_value(probe, name, v, loc);
  axes_.emplace_back(std::move(name), std::move(values));
  return *this;
}

std::vector<Config> TuneSpace::configs() const {
  std::vector<Config> out;
  for (const Config& base : base_) {
    std::vector<size_t> at(axes_.size(), 0);
    for (bool more = true; more;) {
      Config c = base;
      for (size_t k = 0; k < axes_.size(); ++k) set_config_value(c, axes_[k].first, axes_[k].second[at[k]]);
      out.push_back(std::move(c));
      more = false;  // an odometer over the value lists, the last one turning fastest
      for (size_t k = axes_.size(); k-- > 0;) {
        if (++at[k] < axes_[k].second.size()) {
          more = true;
          break;
        }
        at[k] = 0;
      }
    }
  }
  return out;
}

// ---- process-wide state ----------------------------------------------------------------------

namespace {

struct AtomicCounters {
  std::atomic<uint64_t> tunings{0}, disk_decisions{0}, timed_runs{0};
};
AtomicCounters g_counters;

// A tuning in progress: threads that need the same decision wait for its outcome.
struct Pending {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  Config config;
  std::exception_ptr error;
};

// A decision of this process: tuned here (no origin), or loaded from the export file `origin`.
struct ProcessDecision {
  Config config;
  std::string origin;
};

// The decisions of this process (tuned, read from disk or loaded from an export file) by file id,
// and the tunings in progress.
struct ProcessDecisions {
  std::mutex m;
  std::map<std::string, ProcessDecision> decided;
  std::map<std::string, std::shared_ptr<Pending>> pending;
};
ProcessDecisions& process_decisions() {
  static auto* p = new ProcessDecisions;  // lives until process exit, like the kernels that use it
  return *p;
}

bool launches_on_gpu() { return !knobs().interpret && driver_available(); }

// The current context (the hot path tells decisions of different GPUs apart by it); nullptr
// where kernels run in the interpreter.
void* current_context() {
  if (!launches_on_gpu()) return nullptr;
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(driver().cuCtxGetCurrent(&ctx));
  return ctx;
}

int64_t round_up_pow2(int64_t v) {
  return v <= 1 ? v : static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v)));
}

bool is_candidate(const Config& c, const std::vector<Config>& candidates) {
  return std::find(candidates.begin(), candidates.end(), c) != candidates.end();
}

// Why a stored configuration is refused: the rule, the value and what is allowed.
std::string not_a_candidate(const Config& c, const std::vector<Config>& candidates) {
  std::string list;
  for (size_t i = 0; i < candidates.size() && i < 8; ++i) list += (i ? "}, {" : "{") + candidates[i].str();
  list += candidates.size() > 8 ? "}, ... (" + std::to_string(candidates.size()) + " in all)" : "}";
  return "its configuration {" + c.str() + "} is not one of the current candidates (" + list + ")";
}

std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

// The first line of an NVRTC log that reports an error, else its first line.
std::string compile_problem(const CompileError& e) {
  std::string_view log = e.log();
  std::string_view line = log.substr(0, log.find('\n'));
  for (size_t at = 0; at < log.size();) {
    const size_t end = std::min(log.find('\n', at), log.size());
    if (log.substr(at, end - at).find("error") != std::string_view::npos) {
      line = log.substr(at, end - at);
      break;
    }
    at = end + 1;
  }
  return "does not compile (source: " + e.source_path() + "): " + std::string(line);
}

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

// One configuration of a tuning and what became of it.
struct Candidate {
  Config config;
  std::string problem;  // empty while usable
  detail::VariantResources resources;
  double ms = -1;
};

// The UserError of a tuning in which no candidate is usable, listing each and why, at `where`, the
// call that needed the tuning (each problem names its own line where it has one).
[[noreturn]] void throw_all_unusable(const KernelBase& k, const std::string& key,
                                     const std::vector<Candidate>& candidates, const std::source_location& where) {
  std::string list;
  for (const Candidate& c : candidates) list += "\n  {" + c.config.str() + "}: " + c.problem;
  throw UserError("autotune: no configuration of kernel '" + k.name() + "' is usable:" + list,
                  std::to_string(candidates.size()) + " candidates for key " + key,
                  "at least one that compiles, fits the GPU and runs", where);
}

}  // namespace

namespace detail {

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

}  // namespace detail

std::shared_ptr<TuneTimer> cuda_event_timer(const TuneOptions& options) {
  return std::make_shared<CudaEventTimer>(options);
}

namespace autotune {

size_t load_decisions(const std::filesystem::path& path, std::source_location where) {
  const std::vector<Decision> decisions = read_decisions_file(path, where);
  ProcessDecisions& p = process_decisions();
  std::lock_guard lock(p.m);
  for (const Decision& d : decisions) p.decided[d.id.file_id()] = {d.config, path.string()};
  return decisions.size();
}

void forget_decisions() {
  ProcessDecisions& p = process_decisions();
  std::lock_guard lock(p.m);
  p.decided.clear();
}

Counters counters() {
  return {g_counters.tunings.load(), g_counters.disk_decisions.load(), g_counters.timed_runs.load()};
}

}  // namespace autotune

// ---- the tuner -------------------------------------------------------------------------------

namespace runtime {

struct Autotuner::Decided {
  std::vector<int64_t> key;
  void* context = nullptr;
  Config config;
};

namespace {

// The default tuning key: per tensor its element type and sizes rounded up to powers of two, per
// tensor array its element type and length (rounded likewise), and the value of each scalar
// marked as part of the key. Fills `values`, `text` or both.
void default_key(std::span<const KernelArg> args, const std::vector<size_t>& key_scalars,
                 std::vector<int64_t>* values, std::string* text) {
  size_t host = 0;
  for (const KernelArg& a : args) {
    if (a.kind == KernelArg::Config) continue;
    const size_t index = host++;
    std::string part;
    switch (a.kind) {
      case KernelArg::Tensor:
        if (values) values->push_back(static_cast<int64_t>(a.tensor.dtype));
        if (text) part = std::string(ir::name_of(a.tensor.dtype)) + "[";
        for (int d = 0; d < a.tensor.rank; ++d) {
          const int64_t s = round_up_pow2(a.tensor.sizes[static_cast<size_t>(d)]);
          if (values) values->push_back(s);
          if (text) part += (d ? ", " : "") + std::to_string(s);
        }
        if (text) part += "]";
        break;
      case KernelArg::TensorArray: {
        const ir::DType dtype = a.array.empty() ? ir::DType::i1 : a.array.front().dtype;
        const int64_t n = round_up_pow2(static_cast<int64_t>(a.array.size()));
        if (values) values->insert(values->end(), {static_cast<int64_t>(dtype), n});
        if (text) part = std::to_string(n) + " x " + std::string(ir::name_of(dtype)) + " tensors";
        break;
      }
      case KernelArg::Scalar: {
        if (std::find(key_scalars.begin(), key_scalars.end(), index) == key_scalars.end()) break;
        const bool is_float = ir::is_float(a.dtype);
        if (values) values->push_back(is_float ? std::bit_cast<int64_t>(a.f) : a.i);
        if (text)
          part =
              "arg" + std::to_string(index) + "=" + (is_float ? fmt::format("{}", a.f) : std::to_string(a.i));
        break;
      }
      case KernelArg::Config:
        break;
    }
    if (text && !part.empty()) *text += (text->empty() ? "" : ", ") + part;
  }
}

std::string join(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

void print_line(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Autotuner::Autotuner(std::shared_ptr<const KernelBase> kernel, TuneSpace space)
    : kernel_(std::move(kernel)), space_(std::move(space)) {}

Autotuner::~Autotuner() = default;

void Autotuner::check_settable(const char* what, const std::source_location& loc) const {
  if (started_.load())
    throw UserError(
        "autotune: " + std::string(what) + " of kernel '" + kernel_->name() + "' set after its first launch",
        what, "set every option before the first launch or tune()", loc);
}

void Autotuner::set_grid(GridFn grid, std::source_location loc) {
  check_settable("the grid function", loc);
  grid_ = std::move(grid);
}
void Autotuner::set_key(KeyFn key, std::source_location loc) {
  check_settable("the key function", loc);
  key_fn_ = std::move(key);
}
void Autotuner::add_key_scalar(size_t arg, std::source_location loc) {
  check_settable("a key scalar", loc);
  key_scalars_.push_back(arg);
}
void Autotuner::set_prune(PruneFn prune, std::source_location loc) {
  check_settable("the pruning function", loc);
  prune_ = std::move(prune);
}
void Autotuner::add_heuristic(std::string name, HeuristicFn fn, std::source_location loc) {
  check_settable("a heuristic", loc);
  heuristics_.emplace_back(std::move(name), std::move(fn));
  heuristic_locs_.push_back(loc);
}
void Autotuner::set_options(const TuneOptions& options, std::source_location loc) {
  check_settable("the timing options", loc);
  if (!(options.budget_ms > 0) || options.min_runs < 1 || options.max_runs < options.min_runs)
    throw UserError("autotune: the timing options must have a positive budget and 1 <= min_runs <= max_runs",
                    fmt::format("budget_ms={}, min_runs={}, max_runs={}", options.budget_ms, options.min_runs,
                                options.max_runs),
                    "budget_ms > 0, 1 <= min_runs <= max_runs", loc);
  options_ = options;
}
void Autotuner::set_timer(std::shared_ptr<TuneTimer> timer, std::source_location loc) {
  check_settable("the timer", loc);
  timer_ = std::move(timer);
}

void Autotuner::key(std::span<const KernelArg> args, std::vector<int64_t>& out) const {
  out.clear();
  if (key_fn_)
    out = key_fn_(TuneArgs(args));
  else
    default_key(args, key_scalars_, &out, nullptr);
}

std::string Autotuner::key_text(std::span<const KernelArg> args) const {
  if (key_fn_) return join(key_fn_(TuneArgs(args)));
  std::string text;
  default_key(args, key_scalars_, nullptr, &text);
  return text.empty() ? "()" : text;
}

std::vector<Config> Autotuner::candidates(std::span<const KernelArg> args, std::source_location where) const {
  const TuneArgs targs(args);
  const std::vector<Config> space = space_.configs();
  std::vector<Config> out;
  for (Config c : space) {
    for (const auto& [name, fn] : heuristics_) set_config_value(c, name, fn(c, targs));
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (prune_ && prune_(c, targs)) continue;
    out.push_back(std::move(c));
  }
  if (out.empty())
    throw UserError(
        "autotune: the pruning function of kernel '" + kernel_->name() + "' dropped every configuration",
        std::to_string(space.size()) + " configurations for key " + key_text(args), "at least one left", where);
  // A heuristic must set a value the kernel has: a Block name of the traced kernel or a field. The
  // names come from the first candidate that traces (the others are reported as unusable later).
  std::shared_ptr<const ir::Graph> graph;
  for (size_t c = 0; c < out.size() && !heuristics_.empty() && !graph; ++c) {
    try {
      graph = kernel_->graph(out[c]);
    } catch (const UserError&) {
    }
  }
  for (size_t h = 0; graph && h < heuristics_.size(); ++h) {
    const std::string& name = heuristics_[h].first;
    if (Config::is_field(name)) continue;
    const bool known = std::any_of(graph->params.begin(), graph->params.end(),
                                   [&](const ir::Param& p) { return p.kind == ir::Param::Config && p.name == name; });
    if (!known) {
      std::string names;
      for (const ir::Param& p : graph->params)
        if (p.kind == ir::Param::Config) names += (names.empty() ? "" : ", ") + p.name;
      throw UserError("autotune: a heuristic of kernel '" + kernel_->name() + "' sets '" + name +
                          "', which is not one of its Block parameters",
                      name, (names.empty() ? std::string("no Block parameters") : "Block names: " + names) +
                                ", num_warps, num_stages, programs_per_sm, warp_specialize",
                      heuristic_locs_[h]);
    }
  }
  return out;
}

void Autotuner::launch(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                       std::source_location where) {
  const Decided& d = decide(stream, args, options, where);
  runtime::launch(*kernel_, stream, grid_(d.config, TuneArgs(args)), d.config, args, options, where);
}

Config Autotuner::tune(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                       std::source_location where) {
  const Decided& d = decide(stream, args, options, where);
  runtime::warmup(*kernel_, d.config, args, where);
  return d.config;
}

const Autotuner::Decided& Autotuner::decide(Stream stream, std::span<const KernelArg> args,
                                            const LaunchOptions& options, const std::source_location& where) {
  // The hot path: the key of these arguments, compared with the last decision used.
  thread_local std::vector<int64_t> scratch;
  key(args, scratch);
  void* ctx = current_context();
  if (const Decided* last = last_.load(std::memory_order_acquire);
      last && last->context == ctx && last->key == scratch)
    return *last;
  const auto find = [&](void* context, const std::vector<int64_t>& k) -> const Decided* {
    for (const auto& d : decided_)
      if (d->context == context && d->key == k) {
        last_.store(d.get(), std::memory_order_release);
        return d.get();
      }
    return nullptr;
  };
  {
    std::lock_guard lock(mutex_);
    if (const Decided* d = find(ctx, scratch)) return *d;
  }
  // A copy: the callbacks run while choosing may launch other tuners on this thread.
  std::vector<int64_t> k = scratch;
  Config chosen = choose(stream, args, options, where);
  ctx = current_context();  // choosing makes a context current when none was
  std::lock_guard lock(mutex_);
  if (const Decided* d = find(ctx, k)) return *d;  // another thread chose meanwhile (the same)
  decided_.push_back(std::make_unique<Decided>(Decided{std::move(k), ctx, std::move(chosen)}));
  last_.store(decided_.back().get(), std::memory_order_release);
  return *decided_.back();
}

Config Autotuner::choose(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                         const std::source_location& where) {
  started_.store(true);
  if (!grid_)
    throw UserError(
        "autotuned kernel '" + kernel_->name() + "' has no grid function", "none",
        ".grid([](const tilejit::Config& c, const tilejit::TuneArgs& args) { return tilejit::dim3(...); })", where);
  std::vector<Config> configs = candidates(args, where);
  if (!knobs().autotune) return configs.front();

  const detail::DeviceTarget target = detail::current_target();
  const bool measured =
      timer_ != nullptr || target.gpu;  // else: the first usable candidate, kept in this process only
  DecisionId id;
  id.kernel = kernel_->name();
  id.key = key_text(args);
  id.tilejit_version = TILEJIT_VERSION_STRING;
  {
    std::string space;
    for (const Config& c : space_.configs()) space += c.str() + ";";
    id.space_hash = detail::hex64(detail::hash64(space, 0x7370616365ull));
  }
  // The structural hashes of every candidate that traces (a change of the kernel that only some
  // configurations see is a new decision); none tracing: the tuning reports why.
  {
    std::string hashes;
    for (const Config& c : configs) {
      try {
        hashes += detail::hex64(kernel_->graph(c)->hash());
      } catch (const UserError&) {
        hashes += "-";
      }
    }
    id.source_hash = detail::hex64(detail::hash64(hashes, 0x736f75726365ull));
  }
  const auto timer_device = timer_ ? timer_->device() : std::pair<std::string, int>{};
  if (!timer_device.first.empty()) {
    id.device = timer_device.first;
    id.sm_count = timer_device.second;
  } else {
    id.device = target.gpu ? target.name : "interpreter";
    id.sm_count = target.sm_count;
  }

  // One tuning per decision in the process: later askers wait for the first.
  ProcessDecisions& table = process_decisions();
  const std::string fid = id.file_id();
  std::shared_ptr<Pending> pending;
  bool mine = false;
  {
    std::lock_guard lock(table.m);
    if (auto it = table.decided.find(fid); it != table.decided.end()) {
      // Tuned here, or loaded with load_decisions: the latter is used only if it is a candidate.
      if (is_candidate(it->second.config, configs)) return it->second.config;
      detail::logger().warn("autotune: ignoring the decision for kernel '{}', key {} {}: {}; tuning again", id.kernel,
                            id.key,
                            it->second.origin.empty() ? "tuned earlier in this process"
                                                      : "loaded from " + it->second.origin,
                            not_a_candidate(it->second.config, configs));
      table.decided.erase(it);
    }
    if (auto it = table.pending.find(fid); it != table.pending.end()) {
      pending = it->second;
    } else {
      pending = table.pending[fid] = std::make_shared<Pending>();
      mine = true;
    }
  }
  if (!mine) {
    std::unique_lock lock(pending->m);
    pending->cv.wait(lock, [&] { return pending->done; });
    if (pending->error) std::rethrow_exception(pending->error);
    return pending->config;
  }
  const auto finish = [&](const Config* config, std::exception_ptr error) {
    {
      std::lock_guard lock(table.m);
      if (config) table.decided[fid] = {*config, {}};
      table.pending.erase(fid);
    }
    std::lock_guard lock(pending->m);
    pending->done = true;
    if (config) pending->config = *config;
    pending->error = std::move(error);
    pending->cv.notify_all();
  };
  try {
    Config chosen = resolve(stream, args, options, target, id, measured, std::move(configs), where);
    finish(&chosen, nullptr);
    return chosen;
  } catch (...) {
    finish(nullptr, std::current_exception());
    throw;
  }
}

Config Autotuner::resolve(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                          const detail::DeviceTarget& target, const DecisionId& id, bool measured,
                          std::vector<Config> configs, const std::source_location& where) {
  const bool print = knobs().autotune_print;
  const std::string header =
      fmt::format("tilejit autotune: kernel '{}', key {} on {}{}", id.kernel, id.key,
                  target.gpu || timer_ ? id.device : "the CPU interpreter",
                  id.sm_count > 0 ? fmt::format(" ({} SMs)", id.sm_count) : std::string());
  const bool keep = measured && knobs().cache;
  if (keep) {
    const DecisionStore store(knobs().cache_dir);
    if (std::optional<Decision> d = store.load(id)) {
      // A file that passed its checksum may still name a configuration this tuner would never
      // launch (written by hand with a valid checksum, or by another build): used only if it is
      // a candidate, else tuned again, which replaces the file.
      if (is_candidate(d->config, configs)) {
        g_counters.disk_decisions.fetch_add(1);
        if (print)
          print_line(header + ": decided earlier (" + store.path_of(id).string() + "): {" + d->config.str() + "}");
        return d->config;
      }
      detail::logger().warn("autotune: ignoring the decision file {}: {}; tuning again replaces it",
                            store.path_of(id).string(), not_a_candidate(d->config, configs));
    }
  }
  if (target.gpu) {
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    TILEJIT_CHECK_CU(driver().cuStreamIsCapturing(reinterpret_cast<CUstream>(stream), &status));
    if (status != CU_STREAM_CAPTURE_STATUS_NONE)
      throw UserError("kernel '" + kernel_->name() + "' would be autotuned during CUDA graph capture",
                      "key " + id.key,
                      "call tune(stream, args...) with arguments of this key before capturing", where);
  }
  g_counters.tunings.fetch_add(1);
  const auto t0 = std::chrono::steady_clock::now();

  // Compile every candidate in parallel (into the caches), and check it against the GPU's limits.
  std::vector<Candidate> candidates;
  for (Config& c : configs) candidates.push_back(Candidate{std::move(c), {}, {}, -1});
  detail::ThreadPool::shared().parallel_for(candidates.size(), [&](size_t i) {
    Candidate& c = candidates[i];
    try {
      c.resources = detail::compile_variant(*kernel_, c.config, args, target, args::CallSite::of(where));
      c.problem = detail::resource_problem(c.resources, target);
    } catch (const CompileError& e) {
      c.problem = compile_problem(e);
    } catch (const std::exception& e) {
      c.problem = first_line(e.what());
    } catch (...) {
      c.problem = "unknown exception";
    }
  });
  const double compile_ms = ms_since(t0);
  std::vector<Candidate*> usable;
  for (Candidate& c : candidates) {
    if (c.problem.empty())
      usable.push_back(&c);
    else
      detail::logger().warn("autotune: kernel '{}': configuration {{{}}} is unusable: {}", id.kernel,
                            c.config.str(), c.problem);
  }
  if (usable.empty()) throw_all_unusable(*kernel_, id.key, candidates, where);

  // Time the usable ones (with more than one to choose from), restoring what the kernel writes.
  std::shared_ptr<TuneTimer> timer = timer_ ? timer_ : target.gpu ? cuda_event_timer(options_) : nullptr;
  const Candidate* winner = usable.front();
  const auto t1 = std::chrono::steady_clock::now();
  if (timer && usable.size() > 1) {
    std::vector<int> written;
    for (const Candidate* c : usable)
      for (int p : ir::written_params(*kernel_->graph(c->config))) written.push_back(p);
    std::sort(written.begin(), written.end());
    written.erase(std::unique(written.begin(), written.end()), written.end());
    Snapshot snapshot(args, written, stream, target.gpu);
    int64_t tensor_bytes = 0;
    for (const KernelArg& a : args) {
      if (a.kind == KernelArg::Tensor) tensor_bytes += detail::extent_bytes(a.tensor);
      for (const TensorArg& t : a.array) tensor_bytes += detail::extent_bytes(t);
    }
    L2Flusher flusher(options_.flush_l2 && tensor_bytes <= 4 * static_cast<int64_t>(target.l2_bytes), target,
                      stream);
    const TuneArgs targs(args);
    for (Candidate* c : usable) {
      try {
        CandidateRun run(*kernel_, stream, grid_(c->config, targs), c->config, args, options, snapshot,
                         flusher, where);
        c->ms = timer->measure(c->config, run);
        g_counters.timed_runs.fetch_add(1);
        if (!std::isfinite(c->ms) || c->ms < 0) c->problem = fmt::format("the timer measured {} ms", c->ms);
      } catch (const CudaError& e) {
        if (is_sticky(e)) {
          detail::logger().error(
              "autotune: kernel '{}' faulted with configuration {{{}}}; the CUDA context is unusable",
              id.kernel, c->config.str());
          throw;
        }
        c->problem = first_line(e.what());
      } catch (const std::exception& e) {
        c->problem = first_line(e.what());
      }
      snapshot.restore();
      if (!c->problem.empty())
        detail::logger().warn("autotune: kernel '{}': configuration {{{}}} is unusable: {}", id.kernel,
                              c->config.str(), c->problem);
    }
    winner = nullptr;
    for (const Candidate* c : usable)
      if (c->problem.empty() && (!winner || c->ms < winner->ms)) winner = c;
    if (!winner) throw_all_unusable(*kernel_, id.key, candidates, where);
  }
  const double timing_ms = ms_since(t1);

  if (print) {
    print_line(fmt::format("{}: {} candidates", header, candidates.size()));
    for (const Candidate& c : candidates)
      print_line(fmt::format("  {:<56} {}", c.config.str(),
                             !c.problem.empty() ? "unusable: " + c.problem
                             : c.ms >= 0        ? fmt::format("{:.4f} ms", c.ms)
                                                : std::string("compiled")));
    print_line(fmt::format("  winner: {}{} (compiling {:.0f} ms, timing {:.0f} ms){}", winner->config.str(),
                           winner->ms >= 0 ? fmt::format(", {:.4f} ms", winner->ms) : std::string(),
                           compile_ms, timing_ms,
                           timer ? "" : " -- not timed: no GPU, the first usable candidate"));
  }
  if (keep) {
    Decision d;
    d.id = id;
    d.config = winner->config;
    d.time_ms = winner->ms;
    d.candidates = static_cast<int>(candidates.size());
    d.tuned_at = static_cast<int64_t>(std::time(nullptr));
    DecisionStore(knobs().cache_dir).store(d);
  }
  return winner->config;
}

}  // namespace runtime
}  // namespace tilejit
