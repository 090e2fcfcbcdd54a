// Resolution of tensor nodes to their parameter, array element or view.
#include "passes/tensor_source.h"

#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::passes::detail {

using ir::Op;

int TensorSource::first_root_dim(int d) const {
  if (groups.empty()) return d;
  int r = 0;
  for (int k = 0; k < d; ++k) r += groups[static_cast<size_t>(k)];
  return r;
}

TensorSource resolve_tensor(const ir::Graph& g, ir::NodeId tensor) {
  const ir::Node& n = g.node(tensor);
  TensorSource s;
  switch (n.op) {
    case Op::ParamTensor:
      s.kind = TensorSource::Param;
      s.param = ir::attrs<ir::ParamAttrs>(g, tensor).param;
      s.root_rank = ir::attrs<ir::ParamAttrs>(g, tensor).rank;
      return s;
    case Op::ArrayElem: {
      const ir::NodeId arr = g.operand(tensor, 0);
      s.kind = TensorSource::Array;
      s.param = ir::attrs<ir::ParamAttrs>(g, arr).param;
      s.array_elem = tensor;
      s.root_rank = ir::attrs<ir::ArrayElemAttrs>(g, tensor).rank;
      return s;
    }
    case Op::MakeView:
      s.kind = TensorSource::View;
      s.view = tensor;
      s.root_rank = ir::attrs<ir::MakeViewAttrs>(g, tensor).rank;
      return s;
    case Op::MergeView: {
      s = resolve_tensor(g, g.operand(tensor, 0));
      const std::vector<int64_t> merged = ir::attrs<ir::MergeViewAttrs>(g, tensor).groups;
      std::vector<int> groups;
      int d = 0;
      bool identity = true;
      for (int64_t count : merged) {
        int root = 0;
        for (int64_t j = 0; j < count; ++j, ++d) root += s.root_dims(d);
        groups.push_back(root);
        identity = identity && root == 1;
      }
      s.groups = identity ? std::vector<int>{} : groups;
      return s;
    }
    // A TensorArray is resolved through its elements; every other op yields no tensor.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE) TILEJIT_MOVEMENT_OPS(TILEJIT_CASE)
    TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE)
    TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::ParamTensorArray: case Op::Dot:
      break;
  }
  throw InternalError("resolve_tensor: node %" + std::to_string(tensor) + " is not a tensor");
}

}  // namespace tilejit::passes::detail
