// GraphInfo: the structure of a graph every later pass needs (users, program order, enclosing loops), and
// small predicates on nodes.
//
// Filled by: analyze (jit/passes/analysis.cpp), the lowering step "analyze" (lowering.h).
// Read by: every planning step after it, the describe functions and the emitter.
#pragma once

#include <string>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::passes {

using ir::NodeId;

/// Facts about a graph every later pass needs: users, program order, loops.
struct GraphInfo {
  std::vector<std::vector<NodeId>> users;  ///< per node: the nodes that use it, in program order
  std::vector<int> position;               ///< per node: index in program order (nested regions inline), -1 if unreachable
  std::vector<NodeId> loop;                ///< per node: the innermost For whose body holds it, or kNoNode

  /// True when `id` may run more than once per program (it is inside a loop body).
  bool in_loop(NodeId id) const { return loop[static_cast<size_t>(id)] != ir::kNoNode; }
  /// True when `id` lies in the body of loop `f`, directly or in a nested region or loop.
  bool inside(NodeId id, NodeId f) const {
    for (NodeId l = loop[static_cast<size_t>(id)]; l != ir::kNoNode; l = loop[static_cast<size_t>(l)])
      if (l == f) return true;
    return false;
  }
};

GraphInfo analyze(const ir::Graph& g);

/// "file.cpp:12": the base name of the file and the line a node was traced at ("%7" when it has none), as
/// performance notes, plan descriptions and pass diagnostics name the user's code.
std::string source_line(const ir::Graph& g, NodeId id);

}  // namespace tilejit::passes
