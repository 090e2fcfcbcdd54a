// What the parts of the autotuner share (search space, tuning keys, benchmarking, the tuner): a candidate
// of a tuning and the timing of the usable ones (private to runtime/).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "launch_internal.h"
#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"
#include "tilejit/runtime/autotune.h"
#include "tilejit/runtime/launch.h"

namespace tilejit::detail {

/// One configuration of a tuning and what became of it.
struct Candidate {
  Config config;
  std::string problem;  // empty while usable
  VariantResources resources;
  double ms = -1;
};

/// The first line of `text`.
inline std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

/// Times each of the `usable` candidates of kernel `kernel` (named `name` in messages) with `timer`,
/// launching it over `grid` on `stream`, restoring between runs the tensors any candidate writes and
/// evicting the L2 cache as `tune_options` ask. A candidate that fails or measures no finite time gets its
/// problem (and a warning); a fault that leaves the context unusable is rethrown. Each measurement adds
/// one to `timed_runs`. Returns the fastest usable candidate, or nullptr when none is left.
const Candidate* time_candidates(const KernelBase& kernel, const std::string& name, TuneTimer& timer,
                                 const std::vector<Candidate*>& usable, Stream stream, std::span<const KernelArg> args,
                                 const LaunchOptions& options, const runtime::Autotuner::GridFn& grid,
                                 const TuneOptions& tune_options, const DeviceTarget& target,
                                 std::atomic<uint64_t>& timed_runs, const std::source_location& where);

}  // namespace tilejit::detail
