// The TILEJIT_* environment variables: their list, parsing with validation, and the values in effect.
#pragma once

#include <array>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilejit/runtime/log.h"

namespace tilejit {

/// One environment variable tilejit reads.
struct KnobSpec {
  std::string_view name;           ///< e.g. "TILEJIT_LOG"
  std::string_view values;         ///< the accepted values, as shown in warnings and docs
  std::string_view default_value;  ///< the value used when unset, empty or invalid
  std::string_view meaning;        ///< one line for docs and `tilejit-info`
  /// True when the knob changes the generated code or the compiled binary. Every such knob
  /// must be part of the compile-cache key: see `codegen_fingerprint`.
  bool affects_codegen;
};

/// Every knob, in the order `describe` and the README list them. This is the only list:
/// a variable not named here is never read, and one that is named here is read only by
/// `parse_knobs`.
inline constexpr auto kKnobSpecs = std::to_array<KnobSpec>({
    {"TILEJIT_CACHE_DIR", "a directory path", "$XDG_CACHE_HOME/tilejit, else ~/.cache/tilejit",
     "where compiled kernels and autotuning decisions are kept", false},
    {"TILEJIT_CACHE", "on, off, 1, 0", "on", "use the on-disk cache (off: compile every time)", false},
    {"TILEJIT_LOG", "off, error, warn, info, debug, trace", "warn", "least severe message printed",
     false},
    {"TILEJIT_DUMP", "a comma-separated list of ir, cuda, ptx, all (or none)", "none",
     "print the IR and the plans after each lowering step, the generated CUDA C++, the PTX", false},
    {"TILEJIT_DUMP_DIR", "a directory path", "unset (dumps go to stderr)",
     "write the TILEJIT_DUMP output to files in this directory instead of stderr", false},
    {"TILEJIT_INTERPRET", "1, 0, on, off", "0", "run kernels in the CPU interpreter instead of the GPU",
     false},
    {"TILEJIT_AUTOTUNE", "on, off, 1, 0", "on",
     "autotune on first launch per key (off: launch the first candidate, never time)", false},
    {"TILEJIT_AUTOTUNE_PRINT", "1, 0, on, off", "0",
     "print each tuning: the key, every candidate's time or failure, the winner", false},
    {"TILEJIT_LINEINFO", "1, 0, on, off", "0",
     "compile with -lineinfo so profilers map SASS to the generated source", true},
    {"TILEJIT_DEBUG", "1, 0, on, off", "0",
     "checked kernels: device-built descriptors, TMA coordinates and unmasked pointer accesses are validated "
     "on the GPU; a violation prints the kernel, line, rule, value, limit and program, then traps",
     true},
    {"TILEJIT_DEBUG_WATCHDOG_MS", "milliseconds, 0 to 600000", "2000",
     "checked kernels (TILEJIT_DEBUG=1): a wait on an mbarrier (a TMA load's, a pipeline stage's) longer than this "
     "prints the kernel, line, barrier, phase and program, then traps, instead of hanging",
     true},
});

/// The names of `kKnobSpecs`, in the same order.
inline constexpr auto kKnobNames = [] {
  std::array<std::string_view, kKnobSpecs.size()> names{};
  for (std::size_t i = 0; i < kKnobSpecs.size(); ++i) names[i] = kKnobSpecs[i].name;
  return names;
}();

/// Variables with the TILEJIT_ prefix that belong to the build scripts, not to the library;
/// they draw no "unknown variable" warning.
inline constexpr std::array<std::string_view, 1> kScriptVariables{{"TILEJIT_BUILD_DIR"}};

/// The knob values in effect.
struct Knobs {
  std::filesystem::path cache_dir;  ///< absolute
  bool cache = true;
  LogLevel log_level = LogLevel::warn;
  bool dump_ir = false;
  bool dump_cuda = false;
  bool dump_ptx = false;
  std::filesystem::path dump_dir;  ///< empty: dumps go to stderr; else absolute
  bool interpret = false;
  bool autotune = true;
  bool autotune_print = false;
  bool lineinfo = false;
  bool debug = false;
  int debug_watchdog_ms = 2000;

  /// True when any of dump_ir, dump_cuda, dump_ptx is set.
  bool dumping() const noexcept { return dump_ir || dump_cuda || dump_ptx; }
  friend bool operator==(const Knobs&, const Knobs&) = default;
};

/// Parses the knobs from `getenv` (which returns nullptr for unset variables). A set but empty
/// variable counts as unset. Values are trimmed; keywords are case-insensitive. An invalid value
/// leaves the default in place and appends to `warnings` (when not null) a message naming the
/// variable, the value and the accepted values. HOME, XDG_CACHE_HOME and TMPDIR are read through
/// `getenv` too, for the default cache directory. Pure apart from making relative paths absolute.
Knobs parse_knobs(const std::function<const char*(const char*)>& getenv,
                  std::vector<std::string>* warnings);

/// A warning for each name in `env_names` that starts with TILEJIT_ but is neither a knob nor
/// a script variable (a typo would otherwise be silently ignored).
std::vector<std::string> unknown_knob_warnings(const std::vector<std::string>& env_names);

/// The knobs of this process, read from the environment on first use (thread-safe). Warnings
/// about invalid values go to the log once.
const Knobs& knobs();

/// (name, effective value) for every knob, in `kKnobSpecs` order; values use the spelling the
/// parser accepts ("on", "warn", "ir,cuda", "none"); an unset TILEJIT_DUMP_DIR is "".
std::vector<std::pair<std::string, std::string>> describe(const Knobs& knobs);

/// "NAME=value;..." over the knobs whose `affects_codegen` is set: the part of a compile-cache
/// key that comes from the environment.
std::string codegen_fingerprint(const Knobs& knobs);

}  // namespace tilejit
