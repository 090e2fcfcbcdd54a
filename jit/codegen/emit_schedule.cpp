// The schedule ops (ir.h, made by passes::insert_schedule_ops): each one printed where it stands. A pipelined
// loop's ring is tj_buf<b> + stage * tile elements per load and tj_bar[first + stage] per stage; its ring
// position tj_it<loop> counts the iterations whose stages were consumed (kernel-wide when the ring persists).
#include "codegen/emitter.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::codegen::detail {

void Emitter::emit_schedule_op(NodeId id) {
  const ir::ScheduleAttrs a = ir::attrs<ir::ScheduleAttrs>(g_, id);
  const std::string f = str(a.node), s = str(a.stages);
  switch (g_.node(id).op) {
    case Op::ReuseFence: {
      const passes::ReuseFence& fence = L_.smem.reuse_fences.at(a.node);
      std::string which;
      for (int b : fence.buffers) which += (which.empty() ? "tj_buf" : ", tj_buf") + str(b);
      line("// " + which + " reuse" + (fence.buffers.size() == 1 ? "s" : "") + " the bytes of tiles no longer in use:");
      if (fence.wait_tma_stores) line("if (tid == 0) tj::bulk_wait_group_read<0>();  // TMA stores have read them");
      sync("every thread is done with them");
      break;
    }
    case Op::TmaIssue: issue_desc_load(a.node); break;
    case Op::PipeBegin: {
      const auto ops = g_.operands(a.node);
      const bool producer = L_.roles.serves(a.node);
      line(producer ? "// software pipeline: " + s + " stages, filled by the producer warpgroup"
                    : "// software pipeline: " + s + " stages; the TMA loads of iteration i + " + str(a.stages - 1) +
                          " are issued while iteration i computes");
      if (!producer) {  // else only the producer warpgroup issues loads (emit_producer)
        const RingRange r = ring_range(a.node);
        line("const int tj_lo" + f + " = " + r.lo + ", tj_hi" + f + " = " + r.hi + ", tj_step" + f + " = " + r.step + ";" +
             (L_.pipe.loops.at(a.node).first != ir::kNoNode ? "  // with the blocks before and after the loop" : ""));
      }
      if (a.ring_persists) {
        // The ring position counts every iteration of every run (of this loop and of the loops sharing its ring):
        // stage = position % stages, and the phase of a stage's barrier flips once per pass over the ring,
        // whatever the trip counts of earlier runs were.
        line("int tj_it" + f + " = tj_ring" + ring_of(a.node) + ";  // ring position: iterations done, this run's and earlier runs'");
        if (!producer)  // the refills count this run's iterations from it
          line("const int tj_it0_" + f + " = tj_it" + f + ";  // ring position of this run's first iteration");
      } else {
        line("int tj_it" + f + " = 0;  // iterations done");
      }
      cluster_state(a.node);
      if (producer) cluster_exchange(a.node, false);  // the consumers read what the producer's exchange brought
      break;
    }
    case Op::PipePrologue:
      open("if (tid == 0)");
      cluster_exchange(a.node, true);
      line("#pragma unroll");
      open("for (int tj_s = 0; tj_s < " + str(a.stages - 1) + "; ++tj_s)");
      issue_stage(a.node, a.ring_persists ? "(tj_it" + f + " + tj_s) % " + s : "tj_s", "tj_lo" + f + " + tj_s * tj_step" + f);
      close();
      close();
      // Without it ptxas (CUDA 13.0) may close the prologue branch's divergent region only after the loop, and at
      // one prologue stage (2 stages) it did: thread 0 then ran the loop apart from its warp, reached the CTA
      // barrier after the threads' K-major copies on its own (synccheck: "Divergent thread(s) in warp"), and
      // wgmma read copies not yet written (products seeds 1416 and 2893, docs/testing.md).
      line("__syncwarp();  // thread 0 rejoins its warp before the loop's barriers and wgmma (.aligned: converged warps)");
      break;
    case Op::PipeStage: line("const int tj_stage" + f + " = tj_it" + f + " % " + s + ";"); break;
    case Op::PipeWait:
      line(mbarrier_wait(str(L_.smem.ring_barriers.at(a.node)) + " + tj_stage" + f, "(tj_it" + f + " / " + s + ") & 1", a.load,
                         "the TMA loads of a pipeline stage") +
               "  // the stage's loads have landed",
           a.load);
      break;
    case Op::PipeRefill: {
      open("if (tid == 0)");
      line("const int tj_next = tj_it" + f + " + " + str(a.stages - 1) + ";  // the iteration whose loads go into the freed stage");
      // With a persistent ring, tj_next is a ring position: the loop index counts from this run's first one.
      const std::string run = a.ring_persists ? "(tj_next - tj_it0_" + f + ")" : "tj_next";
      issue_stage(a.node, "tj_next % " + s, "tj_lo" + f + " + " + run + " * tj_step" + f, "tj_next");
      close();
      if (multicasts(a.node)) line("__syncwarp();  // thread 0, which may have waited for the other program, rejoins its warp");
      break;
    }
    case Op::PipeRelease: {
      // The stage of the previous iteration: every product that read it is done in this warp (its wgmma wait
      // came before), and so are the warp's register reads of it (__syncwarp orders the lanes).
      const std::string bar = "&tj_bar[" + str(L_.smem.empty_barriers.at(a.node)) + " + (tj_it" + f + " + " + str(a.stages - 1) + ") % " + s + "]";
      const std::string done = "  // this warp is done with the previous iteration's stage";
      open("if (tj_it" + f + " > 0)");
      line("__syncwarp();");
      if (multicasts(a.node)) {
        // Both programs' warps count on an issuing program's empty barrier (2 x the warps per phase): a warp arrives
        // on its own program's barrier, twice unless its program issues, and on the other's when that one issues.
        open("if (tid % 32 == 0)");
        line("tj::mbarrier_arrive_count(" + bar + ", 2u - (tj_issuers" + f + " >> tj_rank & 1u));" + done);
        line("if (tj_issuers" + f + " >> (tj_rank ^ 1u) & 1u) tj::mbarrier_arrive_remote(" + bar +
             ", tj_rank ^ 1u);  // and the other program, which multicasts into it, may refill it");
        close();
      } else {
        line("if (tid % 32 == 0) tj::mbarrier_arrive(" + bar + ");" + done);
      }
      close();
      break;
    }
    case Op::TurnStart:
      line("if (tid < 128) tj::named_barrier_arrive(" + str(passes::WarpgroupTurns::first_barrier) + ", " +
           str(passes::WarpgroupTurns::barrier_threads) + ");  // consumer warpgroup 0 takes the first turn at the tensor cores");
      break;
    case Op::TurnWait:
      line("tj::named_barrier_sync(" + str(passes::WarpgroupTurns::first_barrier) + " + tid / 128, " +
           str(passes::WarpgroupTurns::barrier_threads) + ");  // this warpgroup's turn to issue its products");
      break;
    case Op::TurnPass:
      line("tj::named_barrier_arrive(" + str(passes::WarpgroupTurns::first_barrier) + " + (tid / 128 + 1) % " +
           str(L_.turns.warpgroups) + ", " + str(passes::WarpgroupTurns::barrier_threads) +
           ");  // the next warpgroup's turn");
      break;
    case Op::WarpProducer: emit_producer(a.node, a.stages); break;
    case Op::PipeAdvance: line("++tj_it" + f + ";"); break;
    case Op::PipeEnd: line("tj_ring" + ring_of(a.node) + " = tj_it" + f + ";  // the next run goes on from here"); break;
    case Op::WgmmaWait: {
      static const char* const ends[] = {"", "  // this warpgroup's products of the previous iteration are done",
                                         "  // the last iteration's products"};
      line("tj::wgmma_wait<" + str(a.pending) + ">();" + ends[static_cast<int>(a.when)]);
      for (NodeId d : a.dots) line(register_fence(d));
      if (a.when == ir::WaitFor::last_iteration) {
        const NodeId loop = g_.region(g_.node(a.dots.front()).region).owner;
        if (const auto pipe = L_.pipe.loops.find(loop); pipe != L_.pipe.loops.end() && pipe->second.skip_when_empty) close();
      }
      break;
    }
    case Op::CtaBarrier:
      sync(a.reason == ir::BarrierReason::stage_free_in_flight
               ? "every warpgroup's are: the previous iteration's stage is free"
               : "every thread has awaited the previous iteration's products: its stage is free");
      break;
    // emit_node prints the other ops.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE)
    TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    case Op::Dot:
      throw InternalError("emitter: " + std::string(ir::name_of(g_.node(id).op)) + " is not a schedule op");
  }
}

void Emitter::emit_producer(NodeId f, int stages) {
  const passes::WarpRoles& r = L_.roles;
  const std::string s = str(stages), p = "tj_p" + str(f);
  open("if (tid >= " + str(r.consumer_threads) + ")");
  std::string at_lines;
  for (NodeId l : r.loops) at_lines += (at_lines.empty() ? "" : ", ") + where(l);
  line("// the producer warpgroup: thread " + str(r.consumer_threads) + " issues every TMA load of the loop" +
       (r.loops.size() > 1 ? "s" : "") + " at " + at_lines);
  if (r.producer_registers > 0) line("tj::setmaxnreg_dec<" + str(r.producer_registers) + ">();  // registers to the consumers");
  open("if (tid == " + str(r.consumer_threads) + ")");
  line("int " + p + " = 0;  // ring position: loads issued, in every run of the loop" + std::string(r.loops.size() > 1 ? "s" : ""));
  // The loops and branches around the pipelined loop, each with the nodes of its body that the loads need.
  const auto nodes_in = [&](uint32_t region) {
    for (NodeId n : r.producer_nodes)
      if (g_.node(n).region == region) emit_node(n);
  };
  nodes_in(0);
  for (size_t i = 0; i < r.enclosing.size(); ++i) {
    const NodeId x = r.enclosing[i];
    const auto ops = g_.operands(x);
    if (g_.node(x).op == Op::If) {
      // The branch holding the next enclosing node (or the loop): then when the condition holds, else when not.
      const NodeId inner = i + 1 < r.enclosing.size() ? r.enclosing[i + 1] : f;
      const uint32_t branch = g_.node(inner).region;
      const bool then = branch == ir::attrs<ir::IfAttrs>(g_, x).then_region;
      open(then ? "if (" + at(ops[0]) + ")" : "if (!(" + at(ops[0]) + "))", x);
      nodes_in(branch);
      continue;
    }
    const NodeId iv = loop_index(x);
    const std::string v = iv == ir::kNoNode ? "tj_outer" + str(x) : var(iv);
    if (iv != ir::kNoNode) name_[static_cast<size_t>(iv)] = v;
    open("for (int " + v + " = " + at(ops[0]) + "; " + v + " < " + at(ops[1]) + "; " + v + " += " + at(ops[2]) + ")", x);
    nodes_in(ir::loop_body(g_, x));
  }
  if (!r.awaited_builds.empty())
    line(mbarrier_wait(str(L_.smem.built_barrier), "0", f, "the producer warpgroup, for the consumers to build its descriptors") +
         "  // the consumers have built the descriptors of the loads");
  for (int slot : r.acquired_slots) line("tj::fence_proxy_tensormap_acquire(tj_desc" + str(slot) + ");  // before loading with it");
  // Each loop of the ring in turn, the ring position running on from one to the next.
  for (NodeId l : r.loops) {
    const std::string ll = str(l), k = "tj_k" + ll;
    if (r.loops.size() > 1) line("// the loop at " + where(l));
    const RingRange range = ring_range(l);
    line("const int tj_lo" + ll + " = " + range.lo + ", tj_hi" + ll + " = " + range.hi + ", tj_step" + ll + " = " + range.step + ";");
    cluster_state(l);
    cluster_exchange(l, true);
    open("for (int " + k + " = 0; tj_lo" + ll + " + " + k + " * tj_step" + ll + " < tj_hi" + ll + "; ++" + k + ", ++" + p + ")");
    line("if (" + p + " >= " + s + ") " +
         mbarrier_wait(str(L_.smem.empty_barriers.at(l)) + " + " + p + " % " + s, "(" + p + " / " + s + " + 1) & 1", l,
                       "the producer warpgroup, for the consumers to release a pipeline stage") +
         "  // the consumers are done with the stage's previous tiles");
    issue_stage(l, p + " % " + s, "tj_lo" + ll + " + " + k + " * tj_step" + ll, p);
    close();
    if (multicasts(l)) {
      // The other program's consumers arrive on this program's empty barriers up to their last iteration, also for
      // stages no refill waits for: the program may only leave once they have (else they arrive on a gone one).
      line("// the other program's last releases (positions " + p + " - " + s + " .. " + p + " - 2) arrive before this program leaves");
      open("if (tj_issuers" + ll + " >> tj_rank & 1u)");
      line("for (int tj_q = " + p + " > " + s + " ? " + p + " - " + s + " : 0; tj_q < " + p + " - 1; ++tj_q) " +
           mbarrier_wait(str(L_.smem.empty_barriers.at(l)) + " + tj_q % " + s, "(tj_q / " + s + ") & 1", l,
                         "the issuing program of a multicast load, for the other program's last releases"));
      close();
    }
  }
  for (size_t i = 0; i < r.enclosing.size(); ++i) close();
  close();
  line("return;");
  close();
  if (r.consumer_registers > 0) line("tj::setmaxnreg_inc<" + str(r.consumer_registers) + ">();  // the consumers' registers");
  consumers_only_ = true;
}

Emitter::RingRange Emitter::ring_range(NodeId f) {
  const auto ops = g_.operands(f);
  const std::string lo = at(ops[0]), hi = at(ops[1]), step = at(ops[2]);
  if (L_.pipe.loops.at(f).first == ir::kNoNode) return {lo, hi, step};
  // The block before the loop is index lo - step; the one after it, the loop's last index + step, exists when
  // the block before it runs.
  const std::string before = "(" + lo + " - " + step + ")";
  return {before, "(" + before + " < " + hi + " ? " + hi + " + " + step + " : " + hi + ")", step};
}

void Emitter::cluster_state(NodeId f) {
  if (!multicasts(f)) return;
  const std::string ff = str(f);
  line("unsigned tj_mc" + ff + " = 0, tj_issuers" + ff + " = 0;  // the loads multicast and the ranks issuing them (cluster_exchange)");
  line("const unsigned tj_rank = tj::cluster_ctarank();  // this program's rank in its cluster");
}

void Emitter::cluster_exchange(NodeId f, bool send) {
  if (!multicasts(f)) return;
  const passes::ClusterPlan& c = L_.cluster;
  const std::string ff = str(f), mc = "tj_mc" + ff, issuers = "tj_issuers" + ff;
  line("// cluster of 2: a load both programs make alike (equal values of what its coordinates need, and equal");
  line("// loop bounds) is loaded once, by one of them, and multicast into both programs' shared memory");
  const auto issuer_mask = [&] {
    std::string m;
    for (size_t i = 0; i < c.loads.size(); ++i)
      m += (m.empty() ? "" : " | ") + std::string("((") + mc + " >> " + str(static_cast<int64_t>(i)) + " & 1u) << " +
           str(c.loads[i].issuer) + ")";
    return m;
  };
  if (c.keys.empty()) {  // every coordinate is the loop index and constants: always alike
    line(mc + " = " + str((int64_t{1} << c.loads.size()) - 1) + "u;");
    line(issuers + " = " + issuer_mask() + ";");
    return;
  }
  open("");
  std::string keys;
  for (NodeId k : c.keys) keys += (keys.empty() ? "" : ", ") + std::string("static_cast<long long>(") + at(k) + ")";
  const int n = static_cast<int>(c.keys.size());
  line("const long long tj_keys[" + str(n) + "] = {" + keys + "};  // the loop's bounds, then what the coordinates need");
  line("long long* const tj_theirs = reinterpret_cast<long long*>(tj_smem + " + str(L_.smem.exchange_offset) +
       ");  // the other program writes its keys here");
  if (send) {
    line("for (int tj_k = 0; tj_k < " + str(n) + "; ++tj_k) tj::store_cluster(tj_theirs + tj_k, tj_rank ^ 1u, tj_keys[tj_k]);");
    line("tj::mbarrier_arrive_cluster(&tj_bar[" + str(L_.smem.exchange_barrier) + "], tj_rank ^ 1u);  // ours are in the other program's memory");
  } else {
    line("// the producer sends this program's keys; the consumers read the other program's, to know how to release a stage");
  }
  line(mbarrier_wait(str(L_.smem.exchange_barrier), "0", f, "the other program of the cluster, for its keys") +
       "  // its keys are in ours");
  line("tj::fence_cluster();");
  for (size_t i = 0; i < c.loads.size(); ++i) {
    std::string same;
    for (int k : c.loads[i].keys)
      same += (same.empty() ? "" : " && ") + std::string("tj_keys[") + str(k) + "] == tj_theirs[" + str(k) + "]";
    line("if (" + (same.empty() ? std::string("true") : same) + ") " + mc + " |= " + str(int64_t{1} << i) + "u;  // " +
         where(c.loads[i].load) + ", issued by rank " + str(c.loads[i].issuer));
  }
  line(issuers + " = " + issuer_mask() + ";");
  close();
}

void Emitter::issue_stage(NodeId f, const std::string& stage, const std::string& index, const std::string& refill) {
  const passes::PipelinedLoop& p = L_.pipe.loops.at(f);
  const int first = L_.smem.ring_barriers.at(f);
  const std::string bar = "&tj_bar[" + str(first) + " + " + stage + "]";
  const bool mc = multicasts(f);
  const std::string ff = str(f);
  const NodeId iv = loop_index(f);
  open("");
  if (iv != ir::kNoNode) {
    name_[static_cast<size_t>(iv)] = var(iv);  // declared here for the loads' coordinates, and again by the loop
    line("const int " + var(iv) + " = " + index + ";  // the loop index of that iteration");
    open("if (" + var(iv) + " < tj_hi" + str(f) + ")");
  } else {
    open("if (" + index + " < tj_hi" + str(f) + ")");
  }
  for (NodeId a : p.address_nodes) emit_node(a);
  if (mc && !refill.empty() && L_.smem.cluster_empty >= 0) {
    // A multicast load writes into the other program's stage too: both programs must be done with it. This one
    // is (its consumers released it); it says so to every issuing program, which waits for both.
    const std::string cbar = "&tj_bar[" + str(L_.smem.cluster_empty) + " + " + stage + "]";
    open("if (tj_mc" + ff + " != 0 && " + refill + " >= " + str(p.stages) + ")");
    for (int r = 0; r < 2; ++r)
      line("if (tj_issuers" + ff + " & " + str(1 << r) + "u) tj::mbarrier_arrive_remote(" + cbar + ", " + str(r) +
           "u);  // this program is done with the stage");
    line("if (tj_issuers" + ff + " >> tj_rank & 1u) " +
         mbarrier_wait(str(L_.smem.cluster_empty) + " + " + stage, "(" + refill + " / " + str(p.stages) + " + 1) & 1", f,
                       "the issuing program of a multicast load, for both programs of the cluster to free a stage") +
         "  // both programs are");
    close();
  }
  line("tj::mbarrier_arrive_expect_tx(" + bar + ", " + str(p.stage_bytes) + ");" +
       (mc ? "  // the whole stage, whichever program loads each tile" : ""));
  for (NodeId l : p.loads) {
    const passes::LoadPlan& lp = L_.smem.loads.at(l);
    const int rank = ir::attrs<ir::TmaAttrs>(g_, l).rank;
    const int64_t elems = g_.node(l).shape.numel();
    const passes::MulticastLoad* m = mc ? L_.cluster.find(l) : nullptr;
    const std::string bit = m ? str(int64_t{1} << (m - L_.cluster.loads.data())) + "u" : "";
    tma_pieces(l, [&](const std::string& offset, const std::string& crd) {
      const std::string dst = "tj_buf" + str(lp.buffer) + " + " + stage + " * " + str(elems) + offset;
      const std::string own = "tj::tma_load_" + str(rank) + "d(" + dst + ", " + desc_addr(l) + ", " + bar + crd + ");";
      if (!m) return line(own + "  // " + where(l));
      line("if (!(tj_mc" + ff + " & " + bit + ")) " + own + "  // " + where(l) + ", this program's own");
      line("else if (tj_rank == " + str(m->issuer) + "u) tj::tma_load_" + str(rank) + "d_multicast(" + dst + ", " + desc_addr(l) +
           ", " + bar + ", 3" + crd + ");  // into both programs");
    });
  }
  close();
  close();
}

}  // namespace tilejit::codegen::detail
