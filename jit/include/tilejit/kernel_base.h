// The type-erased part of a kernel object: name, source location, tracer and per-configuration graphs.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <vector>

#include "tilejit/config.h"
#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit {

/// The longest kernel name (generated file names hold a shortened form with a hash of the name).
inline constexpr size_t kMaxKernelNameLength = 256;

/// Kernel names are 1 to kMaxKernelNameLength characters from A-Z a-z 0-9 _ . : - : they go
/// unescaped into the generated source's header comment, into the names of the files NVRTC writes,
/// into cache metadata and into logs. Throws UserError at `where` naming the first other character.
void check_kernel_name(const std::string& name, std::source_location where);

/// What the typed Kernel<F> shares with the runtime: it traces on demand and
/// caches one graph per configuration. The runtime keeps its compiled state here,
/// through runtime_state() (opaque in this layer, which needs no CUDA).
class KernelBase {
 public:
  using Tracer = std::function<void(ir::Graph&, const Config&)>;

  /// Throws UserError at `where` when `name` breaks check_kernel_name's rule.
  KernelBase(std::string name, std::source_location where, Tracer tracer);

  const std::string& name() const { return name_; }
  const std::source_location& where() const { return where_; }

  /// The graph of this kernel for `config` (traced once, then cached; thread-safe).
  std::shared_ptr<const ir::Graph> graph(const Config& config) const;

  /// The runtime's per-kernel state (compiled functions, caches): made by `make` on first use, kept as long as
  /// the kernel. Thread-safe; once made, a lock-free read (the launch path).
  void* runtime_state(std::shared_ptr<void> (*make)()) const {
    if (void* p = runtime_state_ptr_.load(std::memory_order_acquire)) return p;
    return make_runtime_state(make);
  }

 private:
  void* make_runtime_state(std::shared_ptr<void> (*make)()) const;

  mutable std::shared_ptr<void> runtime_state_;
  mutable std::mutex runtime_mutex_;
  /// runtime_state_.get(), published once it is set.
  mutable std::atomic<void*> runtime_state_ptr_{nullptr};
  std::string name_;
  std::source_location where_;
  Tracer tracer_;
  mutable std::mutex mutex_;
  mutable std::map<uint64_t, std::vector<std::pair<Config, std::shared_ptr<const ir::Graph>>>> graphs_;
};

}  // namespace tilejit
