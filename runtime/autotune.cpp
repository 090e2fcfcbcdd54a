// The tuner: the decision logic of Autotuner (the lock-free reuse of the last decision, one tuning per
// decision in the process, decisions from disk or from an export file used only when they are
// candidates, candidates compiled in parallel and checked against the GPU, timed, the winner kept in
// the process and on disk), its options, and the process-wide entry points of tilejit::autotune.
#include "tilejit/runtime/autotune.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>

#include "autotune_internal.h"
#include "driver_api.h"
#include "launch_internal.h"
#include "log_internal.h"
#include "storage.h"
#include "thread_pool.h"
#include "tilejit/error.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/version.h"

namespace tilejit {

using detail::Candidate;
using detail::driver;
using detail::first_line;

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
    winner = detail::time_candidates(*kernel_, id.kernel, *timer, usable, stream, args, options, grid_, options_, target,
                                     g_counters.timed_runs, where);
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
