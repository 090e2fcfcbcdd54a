// Contraction of a float product and a sum into one fused multiply-add (Config::fp_contract).
//
// `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` of f32 or f64 blocks become fma(a, b, c),
// fma(a, b, -c) and fma(-a, b, c): one instruction and one rounding instead of two, as nvcc and Triton
// contract by default. Only where the product has no other use and is computed where the sum is (the same
// region): then the product disappears and no instruction is added, and a product hoisted out of a loop
// stays there. f16 and bf16 keep their two roundings (the IR rounds those after every op).
//
// This rewrite changes what a kernel computes (one rounding less), so it runs on the traced graph itself
// (KernelBase::graph), before the interpreter and the lowering see it: both then compute the same fma.
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "passes/rewrite.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using ir::DType;
using ir::NodeId;
using ir::Op;

namespace {

bool contractible_type(DType t) { return t == DType::f32 || t == DType::f64; }

/// The sums of `g` that take a product into an fma, each with the side of its product (0: the first operand).
std::unordered_map<NodeId, int> find_contractions(const ir::Graph& g) {
  const GraphInfo info = analyze(g);
  std::unordered_map<NodeId, int> out;
  for (size_t k = 0; k < g.size(); ++k) {
    const auto id = static_cast<NodeId>(k);
    const ir::Node& n = g.node(id);
    if ((n.op != Op::Add && n.op != Op::Sub) || !contractible_type(n.dtype) || info.position[k] < 0) continue;
    for (int side : {0, 1}) {
      const NodeId p = g.operand(id, side);
      const ir::Node& pn = g.node(p);
      // The product's only user is this sum, which adds something else to it (p + p lists one user).
      if (pn.op != Op::Mul || pn.dtype != n.dtype || pn.region != n.region || g.operand(id, 1 - side) == p ||
          info.users[static_cast<size_t>(p)].size() != 1)
        continue;
      out.emplace(id, side);
      break;
    }
  }
  return out;
}

/// -x, negating the smaller block where x is a broadcast (a row's maximum subtracted from every score), and a
/// constant in place (its sign bit: a float constant holds the bits of a double).
NodeId negated(detail::Rewriter& rw, NodeId at, NodeId x_new) {
  ir::Graph& out = rw.out();
  const ir::Node& x = out.node(x_new);
  if (x.op == Op::Neg) return out.operand(x_new, 0);
  if (x.op == Op::Const) {
    const int64_t bits = ir::attrs<ir::ConstAttrs>(out, x_new).bits ^ std::numeric_limits<int64_t>::min();
    return rw.add_at(at, Op::Const, x.dtype, x.shape, {}, ir::ConstAttrs{bits}.encode(Op::Const));
  }
  if (x.op == Op::Broadcast) {
    const NodeId b_ops[] = {negated(rw, at, out.operand(x_new, 0))};
    return rw.add_at(at, Op::Broadcast, x.dtype, x.shape, b_ops, {});
  }
  const NodeId ops[] = {x_new};
  return rw.add_at(at, Op::Neg, x.dtype, x.shape, ops, {});
}

}  // namespace

ir::Graph contract_fma(const ir::Graph& g) {
  const std::unordered_map<NodeId, int> sums = find_contractions(g);
  std::unordered_set<NodeId> absorbed;  // the products the sums take in
  for (const auto& [sum, side] : sums) absorbed.insert(g.operand(sum, side));
  detail::Rewriter rw(g);
  return rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId {
    if (absorbed.count(old)) return detail::Rewriter::kDrop;  // its one user, the sum, becomes the fma
    const auto it = sums.find(old);
    if (it == sums.end()) return ir::kNoNode;
    const ir::Graph& in = r.in();
    const ir::Node& n = in.node(old);
    const int side = it->second;
    const NodeId p = in.operand(old, side);
    NodeId a = r.map(in.operand(p, 0));
    const NodeId b = r.map(in.operand(p, 1));
    NodeId c = r.map(in.operand(old, 1 - side));
    if (n.op == Op::Sub) {
      if (side == 0) c = negated(r, old, c);  // a * b - c = fma(a, b, -c)
      else a = negated(r, old, a);            // c - a * b = fma(-a, b, c)
    }
    const NodeId ops[] = {a, b, c};
    return r.add_at(old, Op::Fma, n.dtype, n.shape, ops, {});
  });
}

}  // namespace tilejit::passes
