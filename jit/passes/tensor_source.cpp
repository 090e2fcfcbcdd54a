// Resolution of tensor nodes to their parameter, array element or view.
#include "passes/tensor_source.h"

#include "tilejit/error.h"

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
    case Op::ParamTensorArray:
    case Op::ParamScalar: case Op::TensorSize: case Op::TensorStride:
    case Op::Const: case Op::ProgramId: case Op::NumPrograms: case Op::Arange:
    case Op::Broadcast: case Op::Reshape: case Op::Permute: case Op::ConvertLayout: case Op::Cast:
    case Op::Neg: case Op::Not: case Op::Abs: case Op::Exp: case Op::Exp2: case Op::Log: case Op::Log2:
    case Op::Sqrt: case Op::Rsqrt: case Op::Sin: case Op::Cos: case Op::Tanh: case Op::Sigmoid: case Op::Erf:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Rem:
    case Op::Min: case Op::Max: case Op::And: case Op::Or: case Op::Xor:
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le: case Op::Gt: case Op::Ge: case Op::Where:
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax:
    case Op::Reduce: case Op::CombineArg: case Op::ReduceResult:
    case Op::Dot: case Op::Load: case Op::Store: case Op::AtomicAdd:
    case Op::DescLoad: case Op::DescStore: case Op::DescPrefetch:
    case Op::For: case Op::LoopIndex: case Op::LoopArg:
    case Op::LoopResult: case Op::If: case Op::IfResult: case Op::Yield:
    case Op::TmaIssue: case Op::PipeBegin: case Op::PipePrologue: case Op::PipeStage: case Op::PipeWait:
    case Op::PipeRefill: case Op::PipeRelease: case Op::PipeAdvance: case Op::PipeEnd:
    case Op::WgmmaWait: case Op::CtaBarrier: case Op::ReuseFence: case Op::WarpProducer:
      break;
  }
  throw InternalError("resolve_tensor: node %" + std::to_string(tensor) + " is not a tensor");
}

}  // namespace tilejit::passes::detail
