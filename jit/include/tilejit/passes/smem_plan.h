// SmemPlan: the shared memory of a program (tile buffers and their offsets, mbarriers, the scratch arena,
// descriptor staging) and how every TMA load and store uses it.
//
// Filled by: allocate_shared (jit/passes/smem_alloc.cpp), which places the buffers with place_buffers
// (jit/passes/smem_liveness.cpp), within the lowering step "plan_stages" (lowering.h).
// Read by: check_register_budget, plan_arguments (the shared bytes), plan_barriers, insert_schedule_ops,
// the describe functions and the emitter (emit_tma.cpp, emit_layout.cpp, emit_mma.cpp, emit_schedule.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilejit/passes/cluster_plan.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/passes/warp_roles.h"
#include "tilejit/ir/ir.h"
#include "tilejit/layout/layout.h"
#include "tilejit/layout/shared_layout.h"

namespace tilejit::passes {

using ir::NodeId;

/// How a DescLoad's tile is consumed.
struct LoadPlan {
  int buffer = -1;             ///< index in SmemPlan::buffers
  int barrier = -1;            ///< mbarrier index
  bool registers = false;      ///< threads copy their elements into registers after the wait
  bool all_threads_wait = false;  ///< false: only the issuing thread waits (the tile is only stored back)
  bool repeated = false;       ///< inside a loop: the buffer is refilled, the phase bit flips per use
  bool read_by_tma_store = false;  ///< a TMA store reads the buffer (direct or in place)
  int stages = 1;              ///< pipelined: the buffer holds this many tiles, one per stage
};

/// How a DescStore gets its tile into shared memory.
struct StorePlan {
  enum Mode : uint8_t {
    Staged,    ///< threads write the value into the store's own buffer
    FromLoad,  ///< the value is a loaded tile: stored straight from the load's buffer
    InPlace,   ///< threads write the value over the tile it was computed from (load buffer)
  } mode = Staged;
  NodeId load = ir::kNoNode;  ///< FromLoad / InPlace: the DescLoad whose buffer is used
  int buffer = -1;            ///< index in SmemPlan::buffers
  bool repeated = false;      ///< inside a loop: the buffer is rewritten while an older store may read it
  /// A swizzled tile (its descriptor's swizzle): how the threads' writes split into per-thread and
  /// per-register parts (per_thread_xor false: each address is computed whole).
  layout::SwizzledWrites swizzled;
  /// Staged: the value is the accumulator of a dot with M below 64 (MmaPlan::overrun), whose padding rows its
  /// threads write unconditionally into the `kPaddingSink` bytes after the tile instead of skipping them: a
  /// write of those registers under a per-thread condition made ptxas (CUDA 13.0) serialize every wgmma of the
  /// kernel (C7514).
  bool padding_sink = false;
  static constexpr int kPaddingSink = 16;
};

struct SmemBuffer {
  int offset = 0;
  int bytes = 0;
  int align = 128;
  NodeId node = ir::kNoNode;
  std::string role;  ///< "tma.load", "tma.store", "descriptor staging"
  NodeId live_from = ir::kNoNode;  ///< the node (or outermost loop) where the buffer's lifetime starts
  std::vector<int> reuses;         ///< buffers whose bytes it takes after their lifetimes end (place_buffers)
};

/// Before a node: the buffers that start there take bytes of buffers whose lifetimes have ended, so every
/// thread must be done with those (a barrier) and, when a TMA store read one, the store must have read it.
struct ReuseFence {
  std::vector<int> buffers;
  bool wait_tma_stores = false;
};

struct SmemPlan {
  std::vector<SmemBuffer> buffers;
  int barrier_offset = 0;
  int num_barriers = 0;
  int scratch_offset = 0;
  int scratch_bytes = 0;       ///< one arena shared by every op that exchanges data between threads
  int desc_stage_offset = -1;  ///< 128-byte staging for device-built descriptors, -1 if none
  int total_bytes = 0;         ///< dynamic shared memory per program
  std::unordered_map<NodeId, LoadPlan> loads;
  std::unordered_map<NodeId, StorePlan> stores;
  std::unordered_map<NodeId, int> resident;  ///< values readable in place from a buffer: node -> buffer
  std::unordered_set<NodeId> register_copies;  ///< resident values whose elements are also copied to registers
  std::unordered_map<NodeId, int> ring_barriers;  ///< pipelined For -> its first mbarrier: full[s] = first + s
  /// The loop of WarpRoles -> its first "empty" mbarrier: empty[s] = first + s, one arrival per consumer warp.
  std::unordered_map<NodeId, int> empty_barriers;
  std::unordered_map<int, int> barrier_arrivals;  ///< mbarrier -> its arrival count when not 1
  /// A cluster's multicast loop without warp roles (ClusterPlan::loop): its first "cluster empty" barrier,
  /// cluster_empty + s per stage, two arrivals (one per program of the cluster) per phase; -1 when no load may be
  /// multicast or when a producer warpgroup fills the loop (its empty barriers then count both programs' warps).
  int cluster_empty = -1;
  /// With WarpRoles::awaited_builds: consumer warp 0 arrives on it after each of those builds (its arrival count
  /// is their number) and the producer waits for its phase 0 before its first load; else -1.
  int built_barrier = -1;
  int exchange_barrier = -1;  ///< the barrier the other program arrives on once its keys are written, or -1
  int exchange_offset = -1;   ///< 8 bytes per ClusterPlan::keys entry, written by the other program, or -1
  /// DescLoad of a wgmma operand copied K-major (MmaOperand::k_major_copy) -> the buffer of its copies: two
  /// when its loop is pipelined (the products of one iteration read one while the next is written), else one.
  std::unordered_map<NodeId, int> k_major_copies;
  /// ConvertLayout and Permute nodes whose tile through the scratch arena has padded or swizzled rows
  /// against bank conflicts: node -> the tile's layout (layout::staging_layout; for a permute, with its
  /// readers' layout::permute_sources; absent: plain row-major).
  std::unordered_map<NodeId, layout::SharedLayout> staging;
  std::unordered_map<NodeId, ReuseFence> reuse_fences;  ///< node -> the fence printed before it
};

/// Allocates TMA tile buffers (128-byte aligned), mbarriers (8-byte aligned),
/// the scratch arena and the descriptor staging area, and chooses how every
/// TMA load and store uses them. Throws UserError when the total exceeds 227 KiB.
/// The transposes of tiles that tensor-core dots read (`mma.absorbed`) are resident too; the loads of
/// pipelined loops get a ring of `stages` tiles and the loop one "full" barrier per stage.
/// With warp roles, the producer's loop also gets one "empty" barrier per stage (SmemPlan::empty_barriers); with
/// multicast loads (`cluster`), the loop's cluster empty barriers, the exchange barrier and slots.
SmemPlan allocate_shared(const ir::Graph& g, const GraphInfo& info, const ValueLayouts& layout, const TmaPlan& tma,
                         const MmaPlan& mma, const LoopPipelinePlan& pipe, const WarpRoles& roles = {},
                         const ClusterPlan& cluster = {});

/// Whether `user` reads its operand slot `slot` from registers (false: it can read a shared-memory tile in
/// place: a permute, reshape or layout conversion, a dot's operands a and b, the value a TMA store writes).
bool reads_registers(const ir::Graph& g, NodeId user, size_t slot);

/// Places the tile buffers (SmemBuffer::offset) by liveness: buffers alive at the same time get disjoint
/// bytes, and a buffer whose lifetime starts after another's ended may take its bytes (the tiles of two
/// sequential loops, a store's staging after the loop that fed it), with a ReuseFence before its first use.
/// A lifetime runs from the first node that writes or reads the buffer to the last one, a use in a loop
/// covering the whole outermost loop. Returns the end of the last buffer.
int place_buffers(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const LoopPipelinePlan& pipe, SmemPlan& plan);

/// Bytes of the scratch arena op `id` needs (0 when it exchanges no data).
int scratch_bytes_of(const ir::Graph& g, const ValueLayouts& layout, const SmemPlan& smem, const MmaPlan& mma, NodeId id);

/// Where a reduction over several warps keeps their partial results in the scratch arena, for
/// reduction node `id` (ReduceSum/Max/Min, ArgMax, Reduce) whose operand has layout `x` (slots: result
/// elements times the warps that hold parts of each). The byte offset of each combined value's array
/// (an ArgMax combines its value and an i32 index; a Reduce its operands), each 16-byte aligned; then,
/// for a Reduce over a padded layout (no identity to fill empty registers with), of one byte per slot
/// saying whether the warp held an element; the total bytes last. Empty when the warps need no scratch.
std::vector<int> reduction_scratch(const ir::Graph& g, const ValueLayouts& layout, NodeId id);

}  // namespace tilejit::passes
