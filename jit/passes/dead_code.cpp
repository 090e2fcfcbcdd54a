// Dead-code elimination: pure nodes whose value nothing uses are dropped.
#include "passes/rewrite.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using ir::Op;

ir::Graph eliminate_dead_code(const ir::Graph& g) {
  // Operands always precede their users in id order, so one backward sweep finds every live node.
  // A Reduce lives while one of its results does (its combine region is copied, or dropped, with it;
  // the combine arguments do not keep it alive).
  std::vector<char> live(g.size(), 0);
  for (size_t i = g.size(); i-- > 0;) {
    const auto id = static_cast<NodeId>(i);
    const Op op = g.node(id).op;
    if (ir::kind_of(op) != ir::OpKind::Pure && op != Op::Reduce) live[i] = 1;
    if (!live[i] || op == Op::CombineArg) continue;
    for (NodeId o : g.operands(id)) live[static_cast<size_t>(o)] = 1;
  }
  detail::Rewriter rw(g);
  return rw.run([&](detail::Rewriter&, NodeId old) -> NodeId {
    return live[static_cast<size_t>(old)] ? ir::kNoNode : detail::Rewriter::kDrop;
  });
}

}  // namespace tilejit::passes
