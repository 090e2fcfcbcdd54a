// A process-wide pool of worker threads for parallel compilation (private to runtime/).
#pragma once

#include <cstddef>
#include <functional>

namespace tilejit::detail {

/// Workers for all hardware threads but the caller's, started on first use and kept until the process exits.
class ThreadPool {
 public:
  static ThreadPool& shared();

  /// Runs fn(i) for every i in [0, n) on the workers and the calling thread, and returns when all
  /// have finished. The caller takes indices too, so the loop completes even when every worker is
  /// busy (or, in a forked child, gone). `fn` must not throw.
  void parallel_for(size_t n, const std::function<void(size_t)>& fn);

  size_t workers() const { return workers_; }

 private:
  explicit ThreadPool(size_t workers);
  struct State;
  State* state_;
  size_t workers_;
};

}  // namespace tilejit::detail
