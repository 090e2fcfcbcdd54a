// Shared-memory placement by liveness: the offset of every tile buffer, sharing bytes between buffers whose
// lifetimes do not overlap, and the barriers that make such a reuse safe.
#include <algorithm>
#include <unordered_set>

#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/loop_pipeline.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/smem_plan.h"

namespace tilejit::passes {

namespace {

int align_up(int v, int a) { return (v + a - 1) / a * a; }

/// When each buffer is in use, in program positions: from the first node that writes or reads it to the last,
/// a use inside a loop covering the whole outermost loop around it (every iteration uses the buffer again).
struct Lifetimes {
  std::vector<int> first, last;
  std::vector<NodeId> first_node;  ///< the node at `first`: where a reuse fence goes
  std::vector<bool> read_by_tma_store;  ///< a TMA store reads the buffer asynchronously (until a bulk wait)
};

Lifetimes lifetimes(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const LoopPipelinePlan& pipe,
                    const SmemPlan& plan) {
  const size_t n = plan.buffers.size();
  Lifetimes t{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<NodeId>(n, ir::kNoNode), std::vector<bool>(n, false)};
  // The last position inside each loop.
  std::vector<int> loop_end(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    if (info.position[i] < 0) continue;
    for (NodeId l = info.loop[i]; l != ir::kNoNode; l = info.loop[static_cast<size_t>(l)])
      loop_end[static_cast<size_t>(l)] = std::max(loop_end[static_cast<size_t>(l)], info.position[i]);
  }
  auto use = [&](int buffer, NodeId id) {
    if (buffer < 0 || info.position[static_cast<size_t>(id)] < 0) return;
    NodeId at = id;
    int end = info.position[static_cast<size_t>(id)];
    for (NodeId l = info.loop[static_cast<size_t>(id)]; l != ir::kNoNode; l = info.loop[static_cast<size_t>(l)]) {
      at = l;
      end = loop_end[static_cast<size_t>(l)];
    }
    const auto b = static_cast<size_t>(buffer);
    const int begin = info.position[static_cast<size_t>(at)];
    if (t.first[b] < 0 || begin < t.first[b]) t.first[b] = begin, t.first_node[b] = at;
    t.last[b] = std::max(t.last[b], end);
  };
  // Tiles and the values read in place from them, with every reader.
  for (const auto& [v, buffer] : plan.resident) {
    use(buffer, v);
    for (NodeId u : info.users[static_cast<size_t>(v)]) use(buffer, u);
  }
  // Loads issued before a pipelined loop (a GEMM's bias row) are written from the loop's start.
  for (const auto& [f, loads] : pipe.issued_before)
    for (NodeId l : loads) use(plan.loads.at(l).buffer, f);
  // A ring that also serves the block peeled before its loop is written from that block's if on (its prologue
  // comes before it).
  for (const auto& [x, twin] : pipe.ring_twin) {
    const PipelinedLoop& p = pipe.loops.at(pipe.loop_of.at(x));
    use(plan.loads.at(x).buffer, p.first);
  }
  for (const auto& [id, sp] : plan.stores) {
    use(sp.buffer, id);
    if (sp.buffer >= 0) t.read_by_tma_store[static_cast<size_t>(sp.buffer)] = true;
  }
  for (const auto& [load, buffer] : plan.k_major_copies)
    for (const auto& [d, m] : mma.dots)
      if (m.a.load == load || m.b.load == load) use(buffer, d);
  for (size_t b = 0; b < n; ++b)
    if (t.first[b] < 0) use(static_cast<int>(b), plan.buffers[b].node);  // never read: lives where it is made
  return t;
}

}  // namespace

int place_buffers(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const LoopPipelinePlan& pipe, SmemPlan& plan) {
  const Lifetimes t = lifetimes(g, info, mma, pipe, plan);
  const size_t n = plan.buffers.size();
  // Bytes are shared only after a loop: the barrier a reuse needs then runs once per run of the loop, not in
  // a streaming kernel's few statements, where it would be a measurable cost for bytes that do not matter.
  // (The if of a block peeled before a loop, whose ring it reads, counts as the loop.)
  std::unordered_set<NodeId> peeled;
  for (const auto& [f, p] : pipe.loops)
    if (p.first != ir::kNoNode) peeled.insert(p.first);
  auto after_loop = [&](size_t earlier, size_t later) {
    return t.first_node[earlier] != ir::kNoNode && t.last[earlier] < t.first[later] &&
           (g.node(t.first_node[earlier]).op == ir::Op::For || peeled.count(t.first_node[earlier]));
  };
  auto overlap_in_time = [&](size_t a, size_t b) { return !after_loop(a, b) && !after_loop(b, a); };
  // In order of creation, each buffer at the lowest aligned offset whose bytes no buffer alive at the same time
  // holds: with every lifetime overlapping, that is one buffer after the other.
  int end = 0;
  for (size_t b = 0; b < n; ++b) {
    SmemBuffer& buf = plan.buffers[b];
    std::vector<int> candidates{0};
    for (size_t o = 0; o < b; ++o)
      if (overlap_in_time(b, o)) candidates.push_back(plan.buffers[o].offset + plan.buffers[o].bytes);
    int best = -1;
    for (int c : candidates) {
      const int at = align_up(c, buf.align);
      bool free = true;
      for (size_t o = 0; o < b && free; ++o) {
        const SmemBuffer& other = plan.buffers[o];
        free = !overlap_in_time(b, o) || at + buf.bytes <= other.offset || other.offset + other.bytes <= at;
      }
      if (free && (best < 0 || at < best)) best = at;
    }
    buf.offset = best;
    buf.live_from = t.first_node[b];
    end = std::max(end, best + buf.bytes);
  }
  // A buffer that takes bytes an earlier one held: before its first use, every thread is done with the earlier
  // one (a barrier), and the TMA stores that read it have read it (a bulk wait).
  for (size_t b = 0; b < n; ++b) {
    const SmemBuffer& buf = plan.buffers[b];
    for (size_t o = 0; o < n; ++o) {
      const SmemBuffer& other = plan.buffers[o];
      const bool bytes = buf.offset < other.offset + other.bytes && other.offset < buf.offset + buf.bytes;
      if (o == b || !bytes || !after_loop(o, b)) continue;
      ReuseFence& f = plan.reuse_fences[t.first_node[b]];
      f.wait_tma_stores = f.wait_tma_stores || t.read_by_tma_store[o];
      if (std::find(f.buffers.begin(), f.buffers.end(), static_cast<int>(b)) == f.buffers.end())
        f.buffers.push_back(static_cast<int>(b));
      plan.buffers[b].reuses.push_back(static_cast<int>(o));
    }
  }
  return end;
}

}  // namespace tilejit::passes
