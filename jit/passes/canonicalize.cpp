// Local simplifications: no-op casts, reshapes and permutations, op chains, integer constant folding, a sum
// with a product from zero folded into the product's accumulator, TMA tiles without the unit dimensions their
// users reshape away.
#include <optional>
#include <string>

#include "passes/rewrite.h"
#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using ir::DType;
using ir::Op;

namespace {

/// Wraps an integer to the width of `t` (two's complement), as the IR's integer ops do.
int64_t wrap(DType t, int64_t v) {
  switch (t) {
    case DType::i1: return v != 0;
    case DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(v & 0xff));
    case DType::u8: return static_cast<uint8_t>(v & 0xff);
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(v & 0xffffffff));
    default: return v;
  }
}

std::optional<int64_t> fold_binary(Op op, DType t, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (op) {
    case Op::Add: return wrap(t, static_cast<int64_t>(ua + ub));
    case Op::Sub: return wrap(t, static_cast<int64_t>(ua - ub));
    case Op::Mul: return wrap(t, static_cast<int64_t>(ua * ub));
    case Op::Div:
      if (b == 0) return std::nullopt;
      if (b == -1) return wrap(t, static_cast<int64_t>(0 - ua));
      return wrap(t, a / b);
    case Op::Rem:
      if (b == 0) return std::nullopt;
      if (b == -1) return 0;
      return wrap(t, a % b);
    case Op::Min: return a < b ? a : b;
    case Op::Max: return a < b ? b : a;
    case Op::And: return wrap(t, a & b);
    case Op::Or: return wrap(t, a | b);
    case Op::Xor: return wrap(t, a ^ b);
    case Op::Eq: return a == b;
    case Op::Ne: return a != b;
    case Op::Lt: return a < b;
    case Op::Le: return a <= b;
    case Op::Gt: return a > b;
    case Op::Ge: return a >= b;
    // visit folds binary ops and comparisons only.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_UNARY_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError("canonicalize: " + std::string(ir::name_of(op)) + " is not a binary op or a comparison");
}

bool is_int_const(const ir::Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  return n.op == Op::Const && n.shape.rank == 0 && !ir::is_float(n.dtype);
}

/// `x + dot(a, b, zeros)` (the product computed from zero, then added: Triton's `acc += tl.dot(a, b)`) as
/// `dot(a, b, x)`, when the product has no other user and is made where the sum is: a Dot accumulates in an
/// unspecified order from its accumulator (ir.h), so this is one of the orders the sum already allowed, and
/// the tensor cores accumulate into x's registers instead of fresh ones added afterwards.
NodeId fold_into_dot(detail::Rewriter& rw, NodeId add, const GraphInfo& info) {
  const ir::Graph& in = rw.in();
  const ir::Node& n = in.node(add);
  for (int side : {0, 1}) {
    const NodeId d = in.operand(add, side), x = in.operand(add, 1 - side);
    const ir::Node& dn = in.node(d);
    // One user, the sum, which adds something else (p + p has one user too: info.users lists a user once).
    if (dn.op != Op::Dot || dn.dtype != n.dtype || dn.region != n.region || x == d ||
        info.users[static_cast<size_t>(d)].size() != 1)
      continue;
    const NodeId acc = in.operand(d, 2);
    if (in.node(acc).op != Op::Broadcast) continue;
    const NodeId c = in.operand(acc, 0);
    if (in.node(c).op != Op::Const || in.node(c).shape.rank != 0) continue;
    if (ir::is_float(n.dtype) ? in.const_f(c) != 0.0 : in.const_i(c) != 0) continue;
    const NodeId ops[] = {rw.map(in.operand(d, 0)), rw.map(in.operand(d, 1)), rw.map(x)};
    return rw.add_at(add, Op::Dot, n.dtype, n.shape, ops, in.ints(d));
  }
  return ir::kNoNode;
}

/// A TMA tile whose every user reshapes it to the same shape without some of its unit dimensions (the
/// `[B*H, S, D]` tile loaded as `{1, BM, D}` and reshaped to `[BM, D]`) is loaded in that shape: the bytes TMA
/// writes are the same (ir.h), and the tile is then a 2-D operand the tensor cores read in place. The
/// reshapes become no-ops (the Reshape case).
NodeId squeeze_tma_load(detail::Rewriter& rw, NodeId old, const GraphInfo& info) {
  const ir::Graph& in = rw.in();
  const ir::Node& n = in.node(old);
  const std::vector<NodeId>& users = info.users[static_cast<size_t>(old)];
  if (users.empty()) return ir::kNoNode;
  const ir::Shape want = in.node(users.front()).shape;
  if (want.rank == 0 || want.rank >= n.shape.rank || want.squeezed() != n.shape.squeezed()) return ir::kNoNode;
  for (NodeId u : users)
    if (in.node(u).op != Op::Reshape || !(in.node(u).shape == want)) return ir::kNoNode;
  std::vector<NodeId> ops;
  for (NodeId x : in.operands(old)) ops.push_back(rw.map(x));
  return rw.add_at(old, Op::DescLoad, n.dtype, want, ops, in.ints(old));
}

NodeId visit(detail::Rewriter& rw, NodeId old, const GraphInfo& info) {
  const ir::Graph& in = rw.in();
  ir::Graph& out = rw.out();
  const ir::Node& n = in.node(old);
  auto same = [&](NodeId x) { return rw.map(x); };
  switch (n.op) {
    case Op::Cast: {
      const NodeId x = in.operand(old, 0);
      if (in.node(x).dtype == n.dtype) return same(x);
      const NodeId mx = rw.map(x);
      // A constant that the narrower type cannot hold keeps its conversion: the checked kernels
      // (TILEJIT_DEBUG=1) test the value before it, e.g. that of an i64 TMA coordinate.
      if (is_int_const(out, mx) && !ir::is_float(n.dtype) && wrap(n.dtype, out.const_i(mx)) == out.const_i(mx)) {
        const int64_t v = wrap(n.dtype, out.const_i(mx));
        return rw.add_at(old, Op::Const, n.dtype, n.shape, {}, ir::ConstAttrs{v}.encode(Op::Const));
      }
      return ir::kNoNode;
    }
    case Op::Reshape:
    case Op::Broadcast: {
      NodeId x = rw.map(in.operand(old, 0));
      if (out.node(x).shape == n.shape) return x;
      if (out.node(x).op == n.op) x = out.operand(x, 0);  // chains of the same op compose
      if (out.node(x).shape == n.shape) return x;
      const NodeId ops[] = {x};
      return rw.add_at(old, n.op, n.dtype, n.shape, ops, {});
    }
    case Op::Permute: {
      const std::vector<int64_t> perm = ir::attrs<ir::PermuteAttrs>(in, old).perm;
      bool identity = true;
      for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
      if (identity) return same(in.operand(old, 0));
      const NodeId x = rw.map(in.operand(old, 0));
      if (out.node(x).op == Op::Permute) {
        // result dim d = mid dim perm[d] = source dim inner[perm[d]]
        const std::vector<int64_t> inner = ir::attrs<ir::PermuteAttrs>(out, x).perm;
        std::vector<int64_t> composed(perm.size());
        bool id2 = true;
        for (size_t d = 0; d < perm.size(); ++d) {
          composed[d] = inner[static_cast<size_t>(perm[d])];
          id2 = id2 && composed[d] == static_cast<int64_t>(d);
        }
        const NodeId src = out.operand(x, 0);
        if (id2) return src;
        const NodeId ops[] = {src};
        return rw.add_at(old, Op::Permute, n.dtype, n.shape, ops, ir::PermuteAttrs{composed}.encode(Op::Permute));
      }
      return ir::kNoNode;
    }
    TILEJIT_BINARY_OPS(TILEJIT_CASE)
    case Op::Eq: case Op::Ne: case Op::Lt: case Op::Le:
    case Op::Gt: case Op::Ge: {
      if (n.op == Op::Add && n.shape.rank == 2) return fold_into_dot(rw, old, info);
      if (n.shape.rank != 0) return ir::kNoNode;
      const NodeId a = rw.map(in.operand(old, 0)), b = rw.map(in.operand(old, 1));
      const DType t = in.node(in.operand(old, 0)).dtype;
      if (ir::is_float(t)) return ir::kNoNode;
      const bool ca = is_int_const(out, a), cb = is_int_const(out, b);
      if (ca && cb) {
        if (auto v = fold_binary(n.op, t, out.const_i(a), out.const_i(b)))
          return rw.add_at(old, Op::Const, n.dtype, n.shape, {}, ir::ConstAttrs{*v}.encode(Op::Const));
        return ir::kNoNode;
      }
      // x + 0, x - 0, x * 1, x / 1 and their mirror images.
      const int64_t va = ca ? out.const_i(a) : -7, vb = cb ? out.const_i(b) : -7;
      if ((n.op == Op::Add && cb && vb == 0) || (n.op == Op::Sub && cb && vb == 0) ||
          (n.op == Op::Mul && cb && vb == 1) || (n.op == Op::Div && cb && vb == 1))
        return a;
      if ((n.op == Op::Add && ca && va == 0) || (n.op == Op::Mul && ca && va == 1)) return b;
      if (n.op == Op::Mul && ((ca && va == 0) || (cb && vb == 0)))
        return rw.add_at(old, Op::Const, n.dtype, n.shape, {}, ir::ConstAttrs{0}.encode(Op::Const));
      return ir::kNoNode;
    }
    case Op::DescLoad: return squeeze_tma_load(rw, old, info);
    // Nothing to simplify: the node is copied.
    TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE) TILEJIT_UNARY_OPS(TILEJIT_CASE)
    TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::DescStore: case Op::DescPrefetch: case Op::ConvertLayout: case Op::Where: case Op::Fma: case Op::Dot:
      return ir::kNoNode;
  }
  return ir::kNoNode;
}

}  // namespace

ir::Graph canonicalize(const ir::Graph& g) {
  const GraphInfo info = analyze(g);  // the users of a product folded into a sum
  detail::Rewriter rw(g);
  return rw.run([&](detail::Rewriter& r, NodeId old) { return visit(r, old, info); });
}

}  // namespace tilejit::passes
