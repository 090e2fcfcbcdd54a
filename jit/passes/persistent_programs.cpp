// Persistent programs (Config::persistent): the kernel body becomes the body of a loop over the launch grid's
// programs, run by as many programs as the GPU holds at once. program_id() and num_programs() keep the grid's
// meaning inside it, so the kernel computes what it computed before; the loop around its own loops is what
// lets a producer warpgroup load the next grid program's first stages while the consumers finish the last one.
#include "passes/rewrite.h"
#include "tilejit/error.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit::passes {

using ir::DType;
using ir::NodeId;
using ir::Op;

namespace {

bool is_param(Op op) { return op == Op::ParamTensor || op == Op::ParamTensorArray || op == Op::ParamScalar; }

/// The scalar nodes of the rewritten kernel, added to the graph's current region.
struct Scalars {
  ir::Graph& g;
  NodeId c(int64_t v) { return g.add(Op::Const, DType::i32, ir::Shape{}, {}, ir::ConstAttrs{v}); }
  NodeId op(Op o, NodeId a, NodeId b) { return g.add(o, DType::i32, ir::Shape{}, {a, b}); }
  NodeId axis(Op o, int a) { return g.add(o, DType::i32, ir::Shape{}, {}, ir::AxisAttrs{a}); }
};

}  // namespace

ir::Graph persistent_programs(const ir::Graph& g) {
  if (!g.persistent) return g;
  for (size_t i = 0; i < g.size(); ++i)
    check_internal(ir::category_of(g.node(static_cast<NodeId>(i)).op) != ir::OpCategory::schedule,
                   "persistent_programs: schedule ops before the lowering's first steps");
  detail::Rewriter rw(g);
  ir::Graph& out = rw.out();
  Scalars s{out};
  NodeId pid[3] = {ir::kNoNode, ir::kNoNode, ir::kNoNode};  // the grid program the loop index stands for
  NodeId extent[3] = {ir::kNoNode, ir::kNoNode, ir::kNoNode};  // the grid's extents (TileGrid)
  bool built = false;
  const auto build_loop = [&](detail::Rewriter& r) {
    built = true;
    // The parameters stay in the kernel body, before the loop.
    for (NodeId n : g.region(0).nodes)
      if (is_param(g.node(n).op)) r.visit_node(n);
    for (int a = 0; a < 3; ++a) extent[a] = s.axis(Op::TileGrid, a);
    const NodeId plane = s.op(Op::Mul, extent[0], extent[1]);
    const NodeId tiles = s.op(Op::Mul, plane, extent[2]);
    const NodeId lo = s.axis(Op::ProgramId, 0), step = s.axis(Op::NumPrograms, 0);
    const auto body = static_cast<uint32_t>(out.num_regions());
    const NodeId loop = out.add(Op::For, DType::i32, ir::Shape{}, {lo, tiles, step}, ir::ForAttrs{body});
    check_internal(out.new_region(loop) == body, "persistent_programs: loop region numbering");
    out.push_region(body);
    const NodeId t = out.add(Op::LoopIndex, DType::i32, ir::Shape{}, {loop});
    // z over whole planes of x * y programs; within a plane the launch order (x fastest) or groups of
    // tile_group x indices, each walked with x fastest, then y (Triton's grouped order).
    pid[2] = s.op(Op::Div, t, plane);
    const NodeId in_plane = s.op(Op::Rem, t, plane);
    if (g.tile_group <= 0) {
      pid[0] = s.op(Op::Rem, in_plane, extent[0]);
      pid[1] = s.op(Op::Div, in_plane, extent[0]);
    } else {
      const NodeId rows = s.c(g.tile_group);
      const NodeId width = s.op(Op::Mul, rows, extent[1]);  // programs per group
      const NodeId first = s.op(Op::Mul, s.op(Op::Div, in_plane, width), rows);
      const NodeId size = s.op(Op::Min, s.op(Op::Sub, extent[0], first), rows);  // the last group may be shorter
      const NodeId in_group = s.op(Op::Rem, in_plane, width);
      pid[0] = s.op(Op::Add, first, s.op(Op::Rem, in_group, size));
      pid[1] = s.op(Op::Div, in_group, size);
    }
    for (NodeId n : g.region(0).nodes)
      if (!is_param(g.node(n).op)) r.visit_node(n);
    out.add(Op::Yield, DType::i32, ir::Shape{}, {});
    out.pop_region();
  };
  ir::Graph result = rw.run([&](detail::Rewriter& r, NodeId old) -> NodeId {
    const ir::Node& n = g.node(old);
    if (!built) {
      build_loop(r);
      return ir::kNoNode;  // visited by build_loop
    }
    if (n.op == Op::ProgramId) return pid[ir::attrs<ir::AxisAttrs>(g, old).axis];
    if (n.op == Op::NumPrograms) return extent[ir::attrs<ir::AxisAttrs>(g, old).axis];
    return ir::kNoNode;
  });
  ir::verify(result);
  return result;
}

}  // namespace tilejit::passes
