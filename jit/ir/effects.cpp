// The parameters a kernel writes, found by following each store's tensor operand back to a parameter.
#include "tilejit/ir/effects.h"

#include <algorithm>

namespace tilejit::ir {
namespace {

// The parameter a tensor value is a view of, or -1 when it is not derived from one (which the
// front end does not produce).
int root_param(const Graph& g, NodeId t) {
  for (;;) {
    const Node& n = g.node(t);
    switch (n.op) {
      case Op::ParamTensor:
      case Op::ParamTensorArray:
        return static_cast<int>(g.int_at(t, 0));
      case Op::ArrayElem:
      case Op::MergeView:
      case Op::MakeView:
        t = g.operand(t, 0);
        break;
      default:
        return -1;
    }
  }
}

}  // namespace

std::vector<int> written_params(const Graph& g) {
  std::vector<int> out;
  bool unknown = false;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Op op = g.node(id).op;
    if (op != Op::Store && op != Op::AtomicAdd && op != Op::DescStore) continue;
    const int p = root_param(g, g.operand(id, 0));
    if (p < 0)
      unknown = true;
    else
      out.push_back(p);
  }
  if (unknown)  // a store whose tensor cannot be traced back: assume every tensor may be written
    for (size_t i = 0; i < g.params.size(); ++i)
      if (g.params[i].kind == Param::Tensor || g.params[i].kind == Param::TensorArray)
        out.push_back(static_cast<int>(i));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

NodeId first_write(const Graph& g, int param) {
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    const Op op = g.node(id).op;
    if ((op == Op::Store || op == Op::AtomicAdd || op == Op::DescStore) && root_param(g, g.operand(id, 0)) == param) return id;
  }
  return kNoNode;
}

}  // namespace tilejit::ir
