// The per-kernel entry cache: each kernel object keeps one entry per compiled (configuration, context,
// specialisation facts), with its loaded function, parameter layout and last-encoded descriptors. The
// lookup of the entry a launch used last is lock-free and inline here: it is the launch hot path
// (private to runtime/).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "compile_chain.h"
#include "descriptor_array.h"
#include "driver_api.h"
#include "tensor_map.h"
#include "tilejit/arg_rules.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/config.h"
#include "tilejit/ir/ir.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// The last encoding of one descriptor slot: a host descriptor, or the device copy of an array's.
struct CachedDescriptor {
  std::mutex m;
  bool valid = false;
  TensorArg key;
  TensorMapBytes bytes;
  DescriptorArraySlot array;
};

/// One compiled configuration of one kernel in one context.
struct Entry {
  Config config;
  CUcontext ctx = nullptr;
  std::vector<codegen::Specialization::Bits> relevant;  // per argument: the specialisation bits the generated code may use
  std::vector<codegen::Specialization::Bits> spec;      // per argument: the bits it was compiled with (a subset of relevant)
  std::shared_ptr<const ir::Graph> graph;
  codegen::GeneratedKernel gen;
  std::shared_ptr<Library> lib;
  CUfunction fn = nullptr;
  std::vector<ir::Location> desc_loc;
  std::unique_ptr<CachedDescriptor[]> desc_cache;
  std::vector<size_t> offset;  // byte offset of each parameter slot in the packed buffer
  size_t param_bytes = 0;
  args::GraphFacts arg_facts;  // what the argument checks need of the graph, found once
  uint32_t resident_programs = 0;  // persistent programs (LaunchPlan::persistent): the programs the GPU holds at once
};

/// The runtime's state of one kernel object (KernelBase::runtime_state).
struct KernelRuntime {
  std::mutex m;
  std::vector<std::unique_ptr<Entry>> entries;  // entries are never removed, so pointers stay valid
  std::atomic<Entry*> last{nullptr};            // the most recently launched entry: the hot path
  std::vector<Config> compiled_without_gpu;     // configurations warmed up where no GPU can load them
  std::vector<std::pair<Config, int64_t>> workspace_per_program;  // workspace_bytes() without an entry
  std::vector<Config> resources_checked;  // configurations check_resources() accepted
};

inline KernelRuntime& runtime_of(const KernelBase& k) {
  return *static_cast<KernelRuntime*>(k.runtime_state([] { return std::shared_ptr<void>(std::make_shared<KernelRuntime>()); }));
}

/// True when entry `e` was compiled for this configuration, context and the argument facts `facts`
/// (it assumed only facts that hold).
inline bool matches(const Entry& e, const Config& config, CUcontext ctx, std::span<const codegen::Specialization::Bits> facts) {
  if (e.ctx != ctx || !(e.config == config) || facts.size() != e.spec.size()) return false;
  for (size_t i = 0; i < facts.size(); ++i)
    if ((facts[i] & e.relevant[i]) != e.spec[i]) return false;
  return true;
}

/// entry_for() past its lock-free check of the last entry: another entry of `rt` that matches, under
/// the lock, else a new one (traced, checked, compiled and loaded).
Entry& find_or_compile_entry(KernelRuntime& rt, const KernelBase& k, const Config& config, std::span<const codegen::Specialization::Bits> facts,
                             CUcontext ctx, CUstream stream, std::span<const KernelArg> args, const args::CallSite* at);

/// The entry of `k` for `config`, context `ctx` and `facts`, the argument specialisation bits of the
/// launch (codegen::Specialization), one per argument. `args`, unless `at` is null (a warm-up without
/// arguments, whose facts are one per parameter), are checked at `at` before anything is compiled or
/// loaded: a wrong count or kind never reaches the driver.
inline Entry& entry_for(const KernelBase& k, const Config& config, std::span<const codegen::Specialization::Bits> facts, CUcontext ctx,
                        CUstream stream, std::span<const KernelArg> args, const args::CallSite* at) {
  KernelRuntime& rt = runtime_of(k);
  if (Entry* last = rt.last.load(std::memory_order_acquire); last && matches(*last, config, ctx, facts)) return *last;
  return find_or_compile_entry(rt, k, config, facts, ctx, stream, args, at);
}

}  // namespace tilejit::detail
