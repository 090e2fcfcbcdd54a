// What a tensor node of the IR refers to: a kernel parameter, an element of a tensor array, or a view made in the kernel.
#pragma once

#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::passes::detail {

struct TensorSource {
  enum Kind : uint8_t { Param, Array, View } kind = Param;
  int param = -1;                   ///< Param / Array: graph parameter index
  ir::NodeId view = ir::kNoNode;    ///< View: the MakeView node
  ir::NodeId array_elem = ir::kNoNode;  ///< Array: the ArrayElem node
  int root_rank = 0;                ///< rank of the parameter tensor or of the view
  std::vector<int> groups;          ///< merged view: root dimensions per dimension (empty: not merged)

  int rank() const { return groups.empty() ? root_rank : static_cast<int>(groups.size()); }
  /// First root dimension of dimension d and the number of root dimensions it covers.
  int first_root_dim(int d) const;
  int root_dims(int d) const { return groups.empty() ? 1 : groups[static_cast<size_t>(d)]; }
};

/// Follows MergeView nodes down to the parameter, array element or view a tensor node names.
TensorSource resolve_tensor(const ir::Graph& g, ir::NodeId tensor);

}  // namespace tilejit::passes::detail
