// Clusters: which TMA loads of a clustered kernel's pipelined loop may be multicast to both programs of a
// cluster, and the values the programs compare at run time to know whether they load the same tiles.
#include <algorithm>

#include "tilejit/passes/cluster_plan.h"

namespace tilejit::passes {

namespace {

/// The values from before loop `f` that the coordinates of `load` depend on (appended to `keys`, their indices
/// to `used`), or the reason they cannot be compared.
class KeyCollector {
 public:
  KeyCollector(const ir::Graph& g, const GraphInfo& info, NodeId f, std::vector<NodeId>& keys)
      : g_(g), info_(info), f_(f), keys_(keys) {}

  /// Adds the values `value` depends on; false (with why()) when one of them is not a comparable integer.
  bool add(NodeId value, std::vector<int>& used) {
    const ir::Node& n = g_.node(value);
    if (n.op == ir::Op::Const) return true;
    if (n.op == ir::Op::LoopIndex && g_.operand(value, 0) == f_) return true;  // equal when the bounds are
    if (info_.inside(value, f_)) {
      // Pure scalar arithmetic of the loop body (plan_loop_pipeline's address nodes); a value carried from
      // one iteration to the next is not a function of the index alone.
      if (n.op == ir::Op::LoopArg || n.op == ir::Op::LoopResult || n.op == ir::Op::IfResult || n.op == ir::Op::Load) {
        why_ = "a coordinate depends on " + std::string(ir::name_of(n.op)) + " " + source_line(g_, value) + " in the loop";
        return false;
      }
      for (NodeId o : g_.operands(value))
        if (!add(o, used)) return false;
      return true;
    }
    if (n.shape.rank != 0 || !ir::is_int(n.dtype)) {
      why_ = "a coordinate depends on a value that is not an integer scalar (" + source_line(g_, value) + ")";
      return false;
    }
    const auto it = std::find(keys_.begin(), keys_.end(), value);
    const int k = static_cast<int>(it - keys_.begin());
    if (it == keys_.end()) keys_.push_back(value);
    if (std::find(used.begin(), used.end(), k) == used.end()) used.push_back(k);
    return true;
  }
  const std::string& why() const { return why_; }

 private:
  const ir::Graph& g_;
  const GraphInfo& info_;
  NodeId f_;
  std::vector<NodeId>& keys_;
  std::string why_;
};

/// Whether every program uses the same descriptor for `load`: one encoded on the host, or built at the kernel's
/// start from a kernel parameter (not from a view, whose offsets may differ).
bool same_descriptor(const TmaPlan& tma, NodeId load) {
  const Descriptor& d = tma.descriptors.at(static_cast<size_t>(tma.of.at(load)));
  return d.kind == DescKind::Host ||
         (d.kind == DescKind::Device && d.view == ir::kNoNode && d.build_at == ir::kNoNode && !d.rebuilt_in_loop);
}

}  // namespace

ClusterPlan plan_cluster(const ir::Graph& g, const GraphInfo& info, const TmaPlan& tma, const LoopPipelinePlan& pipe) {
  ClusterPlan plan;
  plan.x = g.cluster_x;
  plan.y = g.cluster_y;
  if (plan.size() == 1) return plan;

  // The first pipelined loop of the kernel body.
  NodeId f = ir::kNoNode;
  for (const auto& [loop, p] : pipe.loops)
    if (g.node(loop).region == 0 && (f == ir::kNoNode || info.position[static_cast<size_t>(loop)] < info.position[static_cast<size_t>(f)]))
      f = loop;
  if (f == ir::kNoNode) {
    plan.not_applied = pipe.loops.empty() ? "the kernel has no pipelined loop" : "its pipelined loops lie in loops or ifs";
    return plan;
  }
  const PipelinedLoop& p = pipe.loops.at(f);
  if (p.ring != f || p.ring_persists) {
    plan.not_applied = "the loop " + source_line(g, f) + " shares its ring with other loops";
    return plan;
  }
  if (p.first != ir::kNoNode) {
    plan.not_applied = "the loop " + source_line(g, f) + " has blocks peeled before and after it (overlap_products)";
    return plan;
  }

  std::vector<NodeId> keys;
  KeyCollector collect(g, info, f, keys);
  std::vector<int> bounds;
  const auto ops = g.operands(f);  // lo, hi, step, then the loop-carried values' first values
  for (size_t i = 0; i < 3; ++i)
    if (!collect.add(ops[i], bounds)) {
      plan.not_applied = "the bounds of the loop " + source_line(g, f) + ": " + collect.why();
      return plan;
    }
  const int bound_keys = static_cast<int>(keys.size());
  std::vector<MulticastLoad> loads;
  std::string why;
  for (NodeId l : p.loads) {
    if (!same_descriptor(tma, l)) {
      why = "the descriptor of the load " + source_line(g, l) + " is not the same in every program";
      continue;
    }
    std::vector<NodeId> tried = keys;
    KeyCollector c(g, info, f, tried);
    std::vector<int> used = bounds;
    const auto coords = g.operands(l);  // the tensor, then the coordinates
    bool ok = true;
    for (size_t i = 1; i < coords.size() && ok; ++i) ok = c.add(coords[i], used);
    if (!ok) {
      why = "the load " + source_line(g, l) + ": " + c.why();
      continue;
    }
    keys = std::move(tried);
    std::sort(used.begin(), used.end());
    loads.push_back(MulticastLoad{l, static_cast<int>(loads.size() % 2), std::move(used)});
  }
  if (loads.empty()) {
    plan.not_applied = why.empty() ? "the loop " + source_line(g, f) + " loads nothing" : why;
    return plan;
  }
  plan.loop = f;
  plan.keys = std::move(keys);
  plan.bound_keys = bound_keys;
  plan.loads = std::move(loads);
  return plan;
}

}  // namespace tilejit::passes
