// The parameters a kernel writes, found by following each store's tensor operand back to a parameter.
#include "tilejit/ir/effects.h"

#include <algorithm>

namespace tilejit::ir {
NodeId view_base(const Graph& g, NodeId t) {
  while (g.node(t).op == Op::MergeView || g.node(t).op == Op::MakeView) t = g.operand(t, 0);
  return t;
}

int tensor_param(const Graph& g, NodeId t) {
  for (t = view_base(g, t); g.node(t).op == Op::ArrayElem;) t = view_base(g, g.operand(t, 0));
  const Op op = g.node(t).op;
  return op == Op::ParamTensor || op == Op::ParamTensorArray ? attrs<ParamAttrs>(g, t).param : -1;
}

std::vector<int> written_params(const Graph& g) {
  std::vector<int> out;
  bool unknown = false;
  for (NodeId id = 0; id < static_cast<NodeId>(g.size()); ++id) {
    if (!writes_memory(g.node(id).op)) continue;
    const int p = tensor_param(g, g.operand(id, 0));
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
    if (writes_memory(g.node(id).op) && tensor_param(g, g.operand(id, 0)) == param) return id;
  }
  return kNoNode;
}

}  // namespace tilejit::ir
