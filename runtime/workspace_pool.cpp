// Growing a stream's buffer in the workspace pool (see workspace_pool.h): a new stream-ordered
// allocation, the old one freed behind the launches that still read it.
#include "workspace_pool.h"

#include <algorithm>

#include "tilejit/runtime/driver.h"

namespace tilejit::detail {

void grow_workspace(WorkspacePool::Slot& slot, CUstream s, size_t need) {
  const size_t bytes = std::max(need, slot.bytes * 2);
  CUdeviceptr fresh = 0;
  TILEJIT_CHECK_CU(driver().cuMemAllocAsync(&fresh, bytes, s));
  if (slot.ptr) TILEJIT_CHECK_CU(driver().cuMemFreeAsync(slot.ptr, s));
  slot = {fresh, bytes};
}

}  // namespace tilejit::detail
