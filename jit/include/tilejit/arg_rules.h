// Checks of kernel arguments that the GPU launcher and the interpreter share, run before any program.
//
// Every check here forms sizes, offsets and byte counts with overflow checks (tilejit/checked.h)
// and reports a UserError located at the caller's call site: the rule, the value and the limit.
// A launch that passes allocates nothing here (the launch hot path).
#pragma once

#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"
#include "tilejit/tma_rules.h"

namespace tilejit::args {

/// Where a failing call was written: the user's file and line (the file outlives the check).
struct CallSite {
  const char* file = "";
  unsigned line = 0;
  static CallSite of(const std::source_location& w) { return {w.file_name(), static_cast<unsigned>(w.line())}; }
  static CallSite of(const ir::Location& l) { return {l.file.c_str(), l.line}; }
};

/// Element offsets, relative to the base, that the sizes and strides of a tensor reach: [lo, hi].
struct Extent {
  int64_t lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
};

/// The extent of `t`, or the Violation of a tensor whose offsets, byte offsets or end address do
/// not fit in 64 bits (a TensorView of 2^62 elements with stride 4 would otherwise wrap to offsets
/// before its base). Negative sizes are a Violation too.
std::optional<tma::Violation> tensor_extent(const TensorArg& t, Extent& out);

/// Every size of a tensor the kernel accesses through TMA must be reachable by a signed 32-bit
/// coordinate: at most 2^31 elements per dimension.
inline constexpr int64_t kMaxTmaCoordinateExtent = tma::kMaxCoordinateExtent;

/// What the checks need to know of a graph, computed once per graph: the parameters read or
/// written through TMA directly (parameter, first such op), and those the kernel writes
/// (parameter, first write).
struct GraphFacts {
  std::vector<std::pair<int, ir::NodeId>> tma;
  std::vector<std::pair<int, ir::NodeId>> writes;
};
GraphFacts graph_facts(const ir::Graph& g);

/// How a check is run: on the GPU (`gpu`) tensors must be non-null and tensor arrays non-empty.
struct Mode {
  bool gpu = false;
};

/// Checks `args` against the parameters of `g` before anything runs: their number, each one's kind
/// (expected and actual), tensors' element type, rank, non-negative sizes, extent (overflow-checked),
/// null bases (with elements, or any on the GPU) and empty arrays (on the GPU), the sizes of tensors
/// used through TMA (2^31 at most), and that no read-only view is one the kernel writes.
/// Throws UserError located at `at`.
void check_launch_args(const ir::Graph& g, const GraphFacts& facts, std::span<const KernelArg> args, const CallSite& at,
                       Mode mode);
inline void check_launch_args(const ir::Graph& g, std::span<const KernelArg> args, const CallSite& at, Mode mode) {
  check_launch_args(g, graph_facts(g), args, at, mode);
}

}  // namespace tilejit::args
