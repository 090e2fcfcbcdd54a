// Layout conversions: a ConvertLayout node wherever a producer's register layout is not the one its consumer reads.
#include <map>
#include <set>

#include "passes/rewrite.h"
#include "tilejit/error.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/value_layouts.h"

namespace tilejit::passes {

using ir::Op;

ir::Graph insert_layout_conversions(const ir::Graph& g, int threads) {
  // Each round removes the conflicts it sees; a conversion can only reveal a conflict further on
  // (its group is new), so this ends after a few rounds.
  ir::Graph cur = g;
  for (int round = 0; round < 8; ++round) {
    const GraphInfo info = analyze(cur);
    const std::vector<LayoutConflict> conflicts = layout_conflicts(cur, info, threads);
    if (conflicts.empty()) return cur;
    std::set<NodeId> all_users;                  // convert the node's value for every user
    std::map<NodeId, std::set<NodeId>> for_user;  // user -> operands to convert for it
    for (const LayoutConflict& c : conflicts) {
      if (c.user == ir::kNoNode) all_users.insert(c.node);
      else for_user[c.user].insert(c.node);
    }
    detail::Rewriter rw(cur);
    cur = rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId {
      const ir::Graph& in = r.in();
      const ir::Node& n = in.node(old);
      NodeId now = ir::kNoNode;
      auto it = for_user.find(old);
      if (it != for_user.end()) {
        check_internal(ir::kind_of(n.op) != ir::OpKind::Region, "layout conversions: a region op reads a conversion");
        std::vector<NodeId> ops;
        for (NodeId o : in.operands(old)) {
          NodeId m = r.map(o);
          if (it->second.count(o)) {
            const ir::Node& on = in.node(o);
            const NodeId x[] = {m};
            m = r.add_at(old, Op::ConvertLayout, on.dtype, on.shape, x, {});
          }
          ops.push_back(m);
        }
        now = r.add_at(old, n.op, n.dtype, n.shape, ops, in.ints(old));
      }
      if (all_users.count(old)) {
        if (now == ir::kNoNode) now = r.copy(old);
        const NodeId x[] = {now};
        return r.add_at(old, Op::ConvertLayout, n.dtype, n.shape, x, {});
      }
      return now;
    });
  }
  throw InternalError("insert_layout_conversions: layouts still disagree after 8 rounds");
}

}  // namespace tilejit::passes
