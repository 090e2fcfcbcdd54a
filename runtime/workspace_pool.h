// The workspace pool for device-built descriptors: one grow-only buffer per (context, stream), reused by
// every launch on that stream. Launches on one stream run in order, so a kernel never sees its slots
// rewritten by a later one; a buffer that grows is released stream-ordered, after the kernels that still
// use it. Per-launch stream-ordered allocation instead would hand the pages back to the driver at every
// synchronisation when the pool keeps nothing (its default). The lookup is inline: launches that need
// workspace run it every time (private to runtime/).
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <utility>

#include "driver_api.h"

namespace tilejit::detail {

struct WorkspacePool {
  struct Slot {
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
  };
  std::mutex m;
  std::map<std::pair<CUcontext, CUstream>, Slot> by_stream;
};

inline WorkspacePool& workspace_pool() {
  static auto* pool = new WorkspacePool;  // lives until process exit, like the driver's own state
  return *pool;
}

/// Replaces `slot`'s buffer by one of at least `need` bytes (and at least twice its size), allocated on
/// stream `s`; the old buffer is freed on `s`, after the kernels that use it.
void grow_workspace(WorkspacePool::Slot& slot, CUstream s, size_t need);

/// The workspace of at least `need` bytes for launches on stream `s` of context `ctx`.
inline CUdeviceptr stream_workspace(CUcontext ctx, CUstream s, size_t need) {
  WorkspacePool& pool = workspace_pool();
  std::lock_guard lock(pool.m);
  WorkspacePool::Slot& slot = pool.by_stream[{ctx, s}];
  if (slot.bytes < need) grow_workspace(slot, s, need);
  return slot.ptr;
}

}  // namespace tilejit::detail
