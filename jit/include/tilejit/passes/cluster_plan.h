// ClusterPlan: the programs of a cluster (Config::cluster) and the TMA loads they share by multicast.
//
// Two programs of a cluster (2 x 1 or 1 x 2) often load the same tile in their K loop: with a 2-D grid of
// output tiles, the programs (2i, j) and (2i + 1, j) read the same B tile at every K step. With multicast,
// one of them loads it once and the TMA unit writes it into the shared memory of both, so each tile of B
// crosses from L2 to the SMs once per cluster instead of once per program (the 128 x 128 GEMM tiles are
// bound by that traffic on an H100).
//
// Whether the two programs load the same tiles is decided at run time, once per kernel, before the loop's
// prologue: a load qualifies for multicast at compile time when its coordinates are computed in the loop
// from the loop index and values from before the loop (`keys`) only, and its descriptor is the same for
// every program (encoded on the host); at run time, the issuing thread of each program sends its values of
// the keys and of the loop's bounds to the other (distributed shared memory and an mbarrier), and the load
// is multicast when every value it depends on is equal in both programs: then its coordinates are equal
// at every iteration. Loads that differ are loaded by each program as without a cluster.
//
// The protocol when a load is multicast (CUTLASS's multicast mainloops work alike):
// - The issuing program of load k is the cluster rank k % 2 (candidates alternate, so two multicast loads
//   share the issuing work). The full barrier of a stage expects the whole stage's bytes in both programs,
//   whichever program issued each load (an mbarrier's transaction count may go below zero before its
//   expect_tx arrives).
// - A stage of a program may only be refilled by the other program when both are done with it: each program,
//   once its own consumers released the stage (the CTA barrier, or the producer's wait on its empty barrier),
//   arrives on the "cluster empty" barrier of that stage in every issuing program (2 arrivals per phase), and
//   an issuing program waits on its own before the refill. Arrivals and waits happen only for refills, which
//   both programs make for the same iterations (equal bounds), so every arrival is awaited before the
//   receiving program leaves.
// - The mbarriers of both programs are initialised before either uses them: a cluster barrier after the
//   initialisation, with every thread of both programs.
//
// Filled by: plan_cluster (jit/passes/cluster_plan.cpp), within the lowering step "plan_stages" (lowering.h).
// Read by: allocate_shared (the cluster empty barriers, the exchange barrier and slots), the describe functions,
// and the emitter (emit_cuda.cpp: the cluster dims and barrier; emit_schedule.cpp: the exchange and the loads).
#pragma once

#include <string>
#include <vector>

#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/warp_roles.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// A load of the cluster's loop that may be multicast.
struct MulticastLoad {
  NodeId load = ir::kNoNode;
  int issuer = 0;         ///< the cluster rank that loads it for both when it is multicast
  std::vector<int> keys;  ///< indices into ClusterPlan::keys of the values its coordinates depend on
};

struct ClusterPlan {
  int x = 1, y = 1;  ///< programs per cluster along x and y (Config::cluster)
  /// The pipelined loop whose loads may be multicast (kNoNode: none; the kernel still runs in clusters).
  NodeId loop = ir::kNoNode;
  /// Values from before the loop that the programs compare: the loop's bounds (lo, hi, step) first, then the
  /// values the candidates' coordinates need. Constants are left out (equal everywhere).
  std::vector<NodeId> keys;
  int bound_keys = 0;  ///< the first bound_keys keys are the loop's bounds (every candidate depends on them)
  std::vector<MulticastLoad> loads;  ///< in the order of PipelinedLoop::loads
  /// Why no load of the kernel may be multicast ("" when some may, or when the kernel is not clustered).
  std::string not_applied;
  int size() const { return x * y; }
  bool multicast() const { return !loads.empty(); }
  /// The candidate entry of `load`, or nullptr.
  const MulticastLoad* find(NodeId load) const {
    for (const MulticastLoad& m : loads)
      if (m.load == load) return &m;
    return nullptr;
  }
};

/// Decides which loads of a clustered kernel (graph cluster_x * cluster_y = 2) may be multicast: those of the
/// first pipelined loop in the kernel body (not inside another loop or an if, not sharing its ring with other
/// loops, no blocks peeled around it) whose descriptors are encoded on the host and whose coordinates need
/// only the loop index, constants and integer values from before the loop.
ClusterPlan plan_cluster(const ir::Graph& g, const GraphInfo& info, const TmaPlan& tma, const LoopPipelinePlan& pipe);

}  // namespace tilejit::passes
