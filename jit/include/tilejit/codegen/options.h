// What a kernel is generated for: the compile options and the argument specialisation of a launch.
//
// The runtime fills them (one Options per compile, one Specialization per launch variant); the lowering
// (passes/lowering.h) and the emitter read them. They depend on nothing but the IR, so that both the
// passes and the emitter can include them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::codegen {

/// What the generated code may assume about the tensor arguments of a launch (argument
/// specialisation, as Triton's): per kernel parameter, bit 0 = the base address is 16-byte
/// aligned, bit 1 + d = stride d (in elements) is a multiple of 16, bit 9 + d = size d is a
/// multiple of 16 (d < 8, the largest rank). Launches compute it from their arguments and keep
/// one compiled kernel per value, so a misaligned tensor runs correctly (in a kernel that assumes
/// less). Unset (empty): every tensor is assumed aligned with every size and stride a multiple of
/// 16 (what warmup() and cuda_source() compile).
struct Specialization {
  using Bits = uint32_t;
  std::vector<Bits> tensors;  ///< per parameter (0 for parameters that are not tensors)
  static constexpr Bits kBaseAligned = 1;
  static constexpr Bits stride_div16(int d) { return Bits{1} << (1 + d); }
  static constexpr Bits size_div16(int d) { return Bits{1} << (9 + d); }
  static constexpr Bits kAll = (Bits{1} << 17) - 1;
  /// The bits of parameter `param` (all set when unset).
  Bits of(int param) const { return tensors.empty() ? kAll : tensors[static_cast<size_t>(param)]; }
  bool operator==(const Specialization&) const = default;
};
static_assert(kMaxTensorRank <= 8, "Specialization has 8 bits for the strides and 8 for the sizes of a tensor");

struct Options {
  std::string arch = "sm_90a";
  Specialization spec;
  bool line_info = false;
  bool debug_checks = false;  ///< validate device-built descriptors in the kernel and trap with a message
  /// With debug_checks: an mbarrier wait longer than this many milliseconds prints which and traps (the watchdog).
  int watchdog_ms = 2000;
  /// When set, called with the graph as given ("input") and after every lowering step that rewrites it
  /// (the step's name first: "canonicalize", ..., "insert_layout_conversions"); TILEJIT_DUMP=ir connects here.
  std::function<void(std::string_view pass, const ir::Graph&)> dump_ir;
  /// When set, called after every lowering step that makes a plan ("plan_tma", "analyze", ..., "plan_barriers")
  /// with the step's name and the plan in readable text (passes::LoweringStep::plan); TILEJIT_DUMP=ir too.
  std::function<void(std::string_view step, const std::string& plan)> dump_plan;
};

}  // namespace tilejit::codegen
