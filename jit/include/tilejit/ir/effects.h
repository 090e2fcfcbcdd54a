// What a kernel does to memory, read off its IR: the parameters it may write.
#pragma once

#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::ir {

/// Whether op writes memory: Store, AtomicAdd and DescStore (plain or reducing). Its tensor operand is
/// operand 0. The one definition of "a write" for the analyses below and the passes.
inline bool writes_memory(Op op) { return op == Op::Store || op == Op::AtomicAdd || op == Op::DescStore; }

/// The tensor that tensor node `t` is a view of: MergeView and MakeView are followed to the node they start
/// from (a ParamTensor, an ArrayElem of a TensorArray, ...); any other node is its own base.
NodeId view_base(const Graph& g, NodeId t);

/// The parameter (index into Graph::params) tensor node `t` derives from, through views and TensorArray
/// elements; -1 when it does not derive from one (which the front end does not produce).
int tensor_param(const Graph& g, NodeId t);

/// The indices (into Graph::params) of the Tensor and TensorArray parameters whose memory the
/// kernel may write: the tensors a Store, AtomicAdd or DescStore (plain or reducing) reaches,
/// directly or through views (MergeView, MakeView, ArrayElem), in any region, whether or not the
/// write is masked or conditional. Sorted, without duplicates. The autotuner restores exactly
/// these tensors between timed runs.
std::vector<int> written_params(const Graph& g);

/// The first Store, AtomicAdd or DescStore (in node order) that writes parameter `param`, for
/// messages that point at the write; kNoNode when none reaches it by a known path.
NodeId first_write(const Graph& g, int param);

}  // namespace tilejit::ir
