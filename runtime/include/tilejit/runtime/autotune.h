// Autotuning: the configurations to search, the callbacks that shape a tuning, and the type-erased tuner
// behind Kernel::autotune.
//
// A tuner launches a kernel with the configuration it chose for the launch's *tuning key* (by
// default each tensor's element type and sizes rounded up to powers of two). The first launch for
// a key tunes: every candidate configuration is compiled on a thread pool, checked against the
// GPU's limits, and timed with CUDA events on the caller's stream, the tensors the kernel writes
// being restored after each run, so that the caller's data ends up as after one launch of the
// winner. Decisions are kept per process and in the cache folder (see decisions.h); a later
// launch with the same key, in this process or a new one, launches the winner at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <source_location>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"
#include "tilejit/runtime/decisions.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/runtime/memory.h"

namespace tilejit {

/// The arguments of a launch as the tuner's callbacks see them. Argument i is the i-th argument
/// given to launch() (configuration parameters such as Meta<"BM"> do not count).
class TuneArgs {
 public:
  explicit TuneArgs(std::span<const KernelArg> bound) : bound_(bound) {}

  /// Number of arguments.
  size_t count() const;
  /// Argument i; UserError (naming the caller's line) when there is none.
  const KernelArg& arg(size_t i, std::source_location loc = std::source_location::current()) const;
  /// Tensor argument i; UserError when argument i is not a tensor.
  const TensorArg& tensor(size_t i, std::source_location loc = std::source_location::current()) const;
  /// Size `dim` (outermost first) of tensor argument i.
  int64_t size(size_t i, int dim, std::source_location loc = std::source_location::current()) const;
  /// The value of scalar argument i (integers converted to double).
  double scalar(size_t i, std::source_location loc = std::source_location::current()) const;

 private:
  std::span<const KernelArg> bound_;
};

/// Configurations to search. Either named value lists, whose cartesian product is searched in
/// order (the first name varies slowest), or an explicit list of configurations. The names
/// "num_warps", "num_stages", "programs_per_sm", "warp_specialize", "overlap_products", "pingpong", "fp_contract" (0 or 1),
/// "cluster_x", "cluster_y" and "producer_registers" set those fields instead of a Meta value.
///
///   TuneSpace{{"BM", {64, 128}}, {"BN", {64, 128, 256}}, {"num_warps", {4, 8}}}   // 12 configurations
///   TuneSpace{Config{{"BM", 64}}, Config{{"BM", 128}}.num_warps(8)}               // 2 configurations
class TuneSpace {
 public:
  using Values = std::pair<std::string, std::vector<int64_t>>;
  TuneSpace(std::initializer_list<Values> values, std::source_location loc = std::source_location::current());
  TuneSpace(std::vector<Config> configs, std::source_location loc = std::source_location::current());
  TuneSpace(std::initializer_list<Config> configs, std::source_location loc = std::source_location::current())
      : TuneSpace(std::vector<Config>(configs), loc) {}

  /// Adds a named value list (multiplying the space by its length).
  TuneSpace& add(std::string name, std::vector<int64_t> values,
                 std::source_location loc = std::source_location::current());

  /// Every configuration, in search order; UserError when a value is invalid (num_warps 3, say).
  std::vector<Config> configs() const;

  /// A rule of the space itself: which of its configurations suit a launch's arguments (true keeps one). The
  /// tuner drops the others before its own pruning (Autotuned::prune), which it does not replace.
  using Rule = std::function<bool(const Config&, const TuneArgs&)>;
  TuneSpace& keep_if(Rule rule);
  /// Whether `config` suits arguments `args` (true without a rule).
  bool keeps(const Config& config, const TuneArgs& args) const { return !rule_ || rule_(config, args); }

  /// The space Kernel::autotune() searches when given none, for a matrix-product kernel whose Block
  /// parameters are BM, BN and BK (the tutorial GEMM): 15 tilings measured best or close on an H100 for
  /// bf16, fp8 and tf32 at large and mid-sized shapes (README, "Autotuning"), most with the stage count left
  /// to tilejit, three with warp roles, two in clusters of 2 x 1 (skipped where the grid is not whole clusters);
  /// and 2 tilings of 16 and 32 rows for skinny products, which its rule keeps only where a 2-D tensor
  /// argument has an extent below 64 (a decode step's M).
  static TuneSpace matmul();

 private:
  std::vector<Config> base_;
  std::vector<Values> axes_;
  Rule rule_;
};

/// Sets the configuration field `name` (a Meta name, or num_warps / num_stages / programs_per_sm / warp_specialize / overlap_products /
/// pingpong / cluster_x / cluster_y / fp_contract / producer_registers).
void set_config_value(Config& config, std::string_view name, int64_t value,
                      std::source_location loc = std::source_location::current());

/// How candidates are timed.
struct TuneOptions {
  double budget_ms = 25;  ///< GPU time spent on the timed runs of one candidate (after one warm-up run)
  int min_runs = 5;       ///< timed runs per candidate, at least ...
  int max_runs = 100;     ///< ... and at most
  /// Evict the L2 cache before every timed run when the tensors of the launch fit in a few times
  /// the L2 (larger ones evict each other anyway), so that a memory-bound kernel is timed as it
  /// runs from DRAM.
  bool flush_l2 = true;
};

/// One candidate as a TuneTimer drives it.
class TuneRun {
 public:
  virtual ~TuneRun() = default;
  /// Launches the candidate once on stream().
  virtual void launch() = 0;
  /// Puts back the tensors the kernel writes as they were before the tuning (ordered on stream()).
  virtual void restore() = 0;
  /// Evicts the L2 cache when TuneOptions::flush_l2 asks for it (ordered on stream()).
  virtual void flush_l2() = 0;
  virtual Stream stream() const = 0;
};

/// Measures candidates. The default, on a GPU, runs each candidate once, then times runs with
/// CUDA events (restore, flush, launch) within TuneOptions::budget_ms and takes the median. Tests
/// inject their own to check the selection without a GPU.
class TuneTimer {
 public:
  virtual ~TuneTimer() = default;
  /// Milliseconds per launch of `candidate`. Throwing marks the candidate unusable, the
  /// exception's message being the reason.
  virtual double measure(const Config& candidate, TuneRun& run) = 0;
  /// The device the measurements describe, named in decisions. The default (empty name) is the
  /// GPU of the current context, or "interpreter" without one.
  virtual std::pair<std::string, int> device() const { return {}; }
};

/// The default timer on a GPU (CUDA events on the tuning stream; see TuneTimer).
std::shared_ptr<TuneTimer> cuda_event_timer(const TuneOptions& options);

namespace autotune {

/// Loads an export file (written by `tilejit-cache decisions export` or write_decisions_file) into
/// this process: a tuner whose kernel, search space, key and device match a decision in it
/// launches that decision without tuning, provided its configuration is one of the tuner's
/// candidates (else a warning naming the file, and a tuning). Returns how many decisions were
/// loaded; UserError at the caller's line when the file cannot be read or holds an invalid decision
/// (see read_decisions_file).
size_t load_decisions(const std::filesystem::path& path,
                      std::source_location where = std::source_location::current());

/// Forgets the decisions this process made or loaded (those in the cache folder stay). Tuners keep
/// what they already chose.
void forget_decisions();

/// Counters of this process's tunings, for tests and tools.
struct Counters {
  uint64_t tunings = 0;         ///< tunings run (candidates compiled and timed)
  uint64_t disk_decisions = 0;  ///< decisions found in the cache folder
  uint64_t timed_runs = 0;      ///< candidates measured
};
Counters counters();

}  // namespace autotune

namespace detail {
struct DeviceTarget;
}

namespace runtime {

/// The type-erased tuner of one kernel and search space (Kernel::autotune returns a typed handle
/// to one). Its options are set before its first launch; launch() and tune() are thread-safe.
class Autotuner {
 public:
  using GridFn = std::function<dim3(const Config&, const TuneArgs&)>;
  using KeyFn = std::function<std::vector<int64_t>(const TuneArgs&)>;
  using PruneFn = std::function<bool(const Config&, const TuneArgs&)>;
  using HeuristicFn = std::function<int64_t(const Config&, const TuneArgs&)>;

  Autotuner(std::shared_ptr<const KernelBase> kernel, TuneSpace space);
  ~Autotuner();
  Autotuner(const Autotuner&) = delete;
  Autotuner& operator=(const Autotuner&) = delete;

  // Options are set before the first launch; a UserError names the caller's line.
  void set_grid(GridFn grid, std::source_location loc = std::source_location::current());
  void set_key(KeyFn key, std::source_location loc = std::source_location::current());
  void add_key_scalar(size_t arg, std::source_location loc = std::source_location::current());
  void set_prune(PruneFn prune, std::source_location loc = std::source_location::current());
  void add_heuristic(std::string name, HeuristicFn fn, std::source_location loc = std::source_location::current());
  void set_options(const TuneOptions& options, std::source_location loc = std::source_location::current());
  void set_timer(std::shared_ptr<TuneTimer> timer, std::source_location loc = std::source_location::current());

  /// Launches the configuration chosen for the key of `args`, tuning first when there is none.
  /// UserErrors about the call (the arguments, a tuning that finds no usable configuration) name
  /// `where`.
  void launch(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options = {},
              std::source_location where = std::source_location::current());
  /// Chooses (tuning when needed) and compiles the configuration for the key of `args`, and
  /// returns it, without launching: afterwards a launch with arguments of the same key compiles
  /// nothing, so it can be captured in a CUDA graph. The arguments' data is left as it was.
  /// UserErrors about the call name `where`, as launch()'s do.
  Config tune(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options = {},
              std::source_location where = std::source_location::current());

  /// The candidates for `args`: the search space with the heuristics applied, duplicates removed,
  /// pruned. UserError at `where` when pruning leaves none.
  std::vector<Config> candidates(std::span<const KernelArg> args,
                                 std::source_location where = std::source_location::current()) const;
  /// The tuning key of `args`, as numbers and as text.
  void key(std::span<const KernelArg> args, std::vector<int64_t>& out) const;
  std::string key_text(std::span<const KernelArg> args) const;

  const KernelBase& kernel() const { return *kernel_; }

 private:
  struct Decided;
  // `where`: the user's call (launch, tune) that needs the decision, named by its UserErrors.
  const Decided& decide(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                        const std::source_location& where);
  Config choose(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                const std::source_location& where);
  Config resolve(Stream stream, std::span<const KernelArg> args, const LaunchOptions& options,
                 const detail::DeviceTarget& target, const DecisionId& id, bool measured,
                 std::vector<Config> configs, const std::source_location& where);
  void check_settable(const char* what, const std::source_location& loc) const;

  std::shared_ptr<const KernelBase> kernel_;
  TuneSpace space_;
  GridFn grid_;
  KeyFn key_fn_;
  std::vector<size_t> key_scalars_;
  PruneFn prune_;
  std::vector<std::pair<std::string, HeuristicFn>> heuristics_;
  std::vector<std::source_location> heuristic_locs_;  // where each heuristic was added
  TuneOptions options_;
  std::shared_ptr<TuneTimer> timer_;

  std::mutex mutex_;
  std::vector<std::unique_ptr<Decided>> decided_;  // never shrinks: `last_` may point into it
  std::atomic<const Decided*> last_{nullptr};
  std::atomic<bool> started_{false};
};

}  // namespace runtime
}  // namespace tilejit
