// Register layout: which thread holds which element of every block value.
#include <numeric>

#include "tilejit/error.h"
#include "tilejit/passes/passes.h"

namespace tilejit::passes {

using ir::Op;

namespace {

struct UnionFind {
  std::vector<NodeId> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  NodeId find(NodeId x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  }
  void unite(NodeId a, NodeId b) {
    a = find(a), b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
};

/// The LoopArg nodes of loop `f`, by slot.
std::vector<NodeId> loop_args(const ir::Graph& g, NodeId f) {
  std::vector<NodeId> args(g.operands(f).size() - 3, ir::kNoNode);
  for (NodeId id : g.region(static_cast<uint32_t>(g.int_at(f, 0))).nodes)
    if (g.node(id).op == Op::LoopArg && g.operand(id, 0) == f) args[static_cast<size_t>(g.int_at(id, 0))] = id;
  return args;
}

}  // namespace

Layout assign_layout(const ir::Graph& g, const GraphInfo& info, int threads) {
  check_internal(threads >= 32 && threads % 32 == 0 && threads <= 1024, "assign_layout: bad thread count");
  Layout layout;
  layout.threads = threads;
  layout.of.resize(g.size());
  UnionFind uf(g.size());
  auto unite_values = [&](NodeId a, NodeId b) {
    if (g.node(a).shape.numel() > 1 && g.node(b).shape.numel() > 1) uf.unite(a, b);
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (info.position[i] < 0) continue;
    const ir::Node& n = g.node(id);
    const auto ops = g.operands(id);
    if (is_elementwise(n.op) || n.op == Op::Reshape) {
      for (NodeId o : ops) unite_values(id, o);
    } else if (n.op == Op::Dot) {
      unite_values(id, ops[2]);
    } else if (n.op == Op::Load) {
      unite_values(id, ops[1]);
      if (ops.size() > 2) unite_values(id, ops[2]);
    } else if (n.op == Op::Store || n.op == Op::AtomicAdd) {
      for (size_t k = 2; k < ops.size(); ++k) unite_values(ops[1], ops[k]);
    } else if (n.op == Op::For) {
      const auto args = loop_args(g, id);
      const auto& body = g.region(static_cast<uint32_t>(g.int_at(id, 0))).nodes;
      const NodeId yield = body.back();
      for (size_t k = 0; k < args.size(); ++k) {
        const NodeId init = ops[3 + k];
        unite_values(init, g.operand(yield, static_cast<int>(k)));
        if (args[k] != ir::kNoNode) unite_values(init, args[k]);
      }
      for (NodeId u : info.users[i])
        if (g.node(u).op == Op::LoopResult) unite_values(u, ops[3 + static_cast<size_t>(g.int_at(u, 0))]);
    } else if (n.op == Op::If) {
      const NodeId y0 = g.region(static_cast<uint32_t>(g.int_at(id, 0))).nodes.back();
      const NodeId y1 = g.region(static_cast<uint32_t>(g.int_at(id, 1))).nodes.back();
      for (size_t k = 0; k < g.operands(y0).size(); ++k) unite_values(g.operand(y0, static_cast<int>(k)), g.operand(y1, static_cast<int>(k)));
      for (NodeId u : info.users[i])
        if (g.node(u).op == Op::IfResult) unite_values(u, g.operand(y0, static_cast<int>(g.int_at(u, 0))));
    }
  }
  // Widest element of each group.
  std::vector<int> widest(g.size(), 1);
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (info.position[i] < 0 || !is_value(g, id)) continue;
    const auto root = static_cast<size_t>(uf.find(id));
    widest[root] = std::max(widest[root], ir::size_of(g.node(id).dtype));
  }
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (info.position[i] < 0 || !is_value(g, id)) continue;
    ValueLayout& v = layout.of[i];
    v.numel = g.node(id).shape.numel();
    if (v.numel <= 1) {
      v.kind = ValueLayout::Uniform;
      continue;
    }
    v.kind = ValueLayout::Distributed;
    int vec = 16 / widest[static_cast<size_t>(uf.find(id))];
    while (vec > 1 && (v.numel % vec != 0 || v.numel / vec < threads)) vec /= 2;
    v.vec = vec;
    v.chunks = v.numel / vec;
    v.slots = static_cast<int>((v.chunks + threads - 1) / threads);
  }
  return layout;
}

}  // namespace tilejit::passes
