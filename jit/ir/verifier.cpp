// Checks the structural and typing invariants documented in ir.h.
#include <string>
#include <vector>

#include "tilejit/error.h"
#include "tilejit/ir/ir.h"

namespace tilejit::ir {

namespace {
struct Verifier {
  const Graph& g;
  std::vector<int> defined;           // 1 when a node has been visited (defined before use)
  std::vector<uint32_t> region_parent;  // enclosing region of each region

  [[noreturn]] void fail(NodeId id, const std::string& why) const {
    throw InternalError("IR verifier: %" + std::to_string(id) + " (" + std::string(name_of(g.node(id).op)) +
                        "): " + why);
  }
  bool visible(uint32_t from, uint32_t def_region) const {
    for (uint32_t r = from;; r = region_parent[r]) {
      if (r == def_region) return true;
      if (r == 0) return false;
    }
  }
  void expect(bool c, NodeId id, const char* why) const {
    if (!c) fail(id, why);
  }
  /// A schedule op: its attribute count, and the kind of each node it names.
  void schedule_op(NodeId id) const {
    const Node& n = g.node(id);
    expect(g.operands(id).empty(), id, "a schedule op takes no operands");
    const auto names = [&](NodeId x, Op op) { return x >= 0 && static_cast<size_t>(x) < g.size() && g.node(x).op == op; };
    const ScheduleAttrs a = attrs<ScheduleAttrs>(g, id);
    if (n.op == Op::TmaIssue) {
      expect(names(a.node, Op::DescLoad), id, "names no TMA load");
    } else if (n.op == Op::WgmmaWait) {
      for (NodeId d : a.dots) expect(names(d, Op::Dot) || names(d, Op::LoopArg), id, "names no dot or loop-carried value");
      expect(a.pending >= 0 && a.pending <= 8 && static_cast<int>(a.when) <= 2, id, "pending or when out of range");
    } else if (n.op == Op::CtaBarrier) {
      expect(static_cast<int>(a.reason) <= 1, id, "barrier reason out of range");
    } else if (n.op == Op::ReuseFence) {
      expect(a.node >= 0 && static_cast<size_t>(a.node) < g.size(), id, "names no node");
    } else {  // the pipe.*, turn.* ops and warp.producer name their loop
      expect(names(a.node, Op::For), id, "names no loop");
      const bool without_stages = n.op == Op::PipeAdvance || n.op == Op::PipeEnd || n.op == Op::TurnStart ||
                                  n.op == Op::TurnWait || n.op == Op::TurnPass;
      expect(without_stages || a.stages >= 2, id, "a pipeline has at least 2 stages");
      expect(n.op != Op::PipeWait || names(a.load, Op::DescLoad), id, "names no TMA load");
    }
  }

  void node(NodeId id, uint32_t region) {
    const Node& n = g.node(id);
    expect(n.region == region, id, "listed in a region it does not belong to");
    for (NodeId o : g.operands(id)) {
      expect(o < id || defined[static_cast<size_t>(o)], id, "operand used before it is defined");
      expect(defined[static_cast<size_t>(o)] != 0, id, "operand not defined on this path");
      expect(visible(region, g.node(o).region), id, "operand defined in a region not enclosing this use");
    }
    const size_t no = g.operands(id).size();
    expect(operand_count(n.op) == kVariadic || no == static_cast<size_t>(operand_count(n.op)), id,
           "wrong number of operands (ops.def)");
    expect(well_formed(n.op, g.ints(id)), id, "attributes do not have the op's layout (attributes.h)");
    switch (category_of(n.op)) {
      case OpCategory::binary: {
        const Node& a = g.node(g.operand(id, 0));
        const Node& b = g.node(g.operand(id, 1));
        expect(a.dtype == n.dtype && b.dtype == n.dtype, id, "binary op operand dtypes differ from result");
        expect(a.shape == n.shape && b.shape == n.shape, id, "binary op operand shapes differ from result");
        break;
      }
      case OpCategory::compare: {
        const Node& a = g.node(g.operand(id, 0));
        const Node& b = g.node(g.operand(id, 1));
        expect(n.dtype == DType::i1, id, "comparison must yield i1");
        expect(a.dtype == b.dtype, id, "comparison operand dtypes differ");
        expect(a.shape == n.shape && b.shape == n.shape, id, "comparison operand shapes differ");
        break;
      }
      case OpCategory::select:
        expect(g.node(g.operand(id, 0)).dtype == DType::i1, id, "where condition must be i1");
        for (int k = 0; k < 3; ++k) expect(g.node(g.operand(id, k)).shape == n.shape, id, "where shapes differ");
        break;
      case OpCategory::ternary:
        expect(is_float(n.dtype), id, "fma takes floats");
        for (int k = 0; k < 3; ++k) {
          const Node& x = g.node(g.operand(id, k));
          expect(x.dtype == n.dtype && x.shape == n.shape, id, "fma operand dtypes or shapes differ from the result");
        }
        break;
      case OpCategory::movement: {
        const Node& x = g.node(g.operand(id, 0));
        if (n.op == Op::ConvertLayout)
          expect(x.dtype == n.dtype && x.shape == n.shape, id, "layout conversion changes the dtype or shape");
        if (n.op == Op::Reshape) expect(x.shape.numel() == n.shape.numel(), id, "reshape changes the element count");
        break;
      }
      case OpCategory::tma: {
        const TmaAttrs a = attrs<TmaAttrs>(g, id);
        const size_t want = n.op == Op::DescLoad ? 1 + a.rank : n.op == Op::DescStore ? 2 + a.rank : 1;
        expect(no == want, id, "TMA op has the wrong number of operands");
        if (n.op == Op::DescLoad || n.op == Op::DescStore) {
          Shape tile;
          tile.rank = static_cast<uint8_t>(a.rank);
          for (int i = 0; i < a.rank; ++i) tile.dims[i] = (a.box[i] + a.estride[i] - 1) / a.estride[i];
          if (n.op == Op::DescLoad)
            expect(n.shape.rank <= a.rank && n.shape.squeezed() == tile.squeezed(), id,
                   "TMA load shape is not ceil(box / estride), unit dimensions aside");
          else
            expect(g.node(g.operands(id).back()).shape == tile, id, "TMA store value shape is not the box");
        }
        break;
      }
      case OpCategory::reduction:
        if (n.op == Op::CombineArg || n.op == Op::ReduceResult) {
          const NodeId r = g.operand(id, 0);
          expect(g.node(r).op == Op::Reduce, id, "takes a reduce and an index");
          const size_t values = g.operands(r).size(), k = static_cast<size_t>(attrs<IndexAttrs>(g, id).index);
          expect(k < (n.op == Op::CombineArg ? 2 * values : values), id, "index out of range");
          expect(n.dtype == g.node(g.operand(r, static_cast<int>(k % values))).dtype, id, "dtype differs from the reduced value's");
          expect(n.op == Op::CombineArg ? n.shape.rank == 0 : n.shape == g.node(r).shape, id, "wrong shape");
          expect(n.op == Op::ReduceResult || n.region == combine_region(g, r), id, "combine argument outside its combine region");
        }
        break;
      case OpCategory::product: {
        const Shape& a = g.node(g.operand(id, 0)).shape;
        const Shape& b = g.node(g.operand(id, 1)).shape;
        const Shape& c = g.node(g.operand(id, 2)).shape;
        expect(a.rank == 2 && b.rank == 2 && c.rank == 2 && a[1] == b[0] && c[0] == a[0] && c[1] == b[1], id,
               "dot shapes are not MxK, KxN, MxN");
        expect(!attrs<DotAttrs>(g, id).precision || g.node(g.operand(id, 0)).dtype == DType::f32, id,
               "a precision needs f32 operands");
        break;
      }
      case OpCategory::schedule: schedule_op(id); break;
      case OpCategory::tensor: case OpCategory::leaf: case OpCategory::cast: case OpCategory::unary:
      case OpCategory::memory: case OpCategory::control:
        break;  // their operand counts and attributes, checked above, are all there is to check
    }
    defined[static_cast<size_t>(id)] = 1;
    if (n.op == Op::Reduce) reduce(id);
    if (n.op == Op::For) {
      const uint32_t body = attrs<ForAttrs>(g, id).body;
      walk(body);
      const auto& nodes = g.region(body).nodes;
      expect(!nodes.empty() && g.node(nodes.back()).op == Op::Yield, id, "loop body must end with yield");
      expect(g.operands(nodes.back()).size() + 3 == no, id, "loop yields a different number of values than it carries");
    } else if (n.op == Op::If) {
      for (uint32_t r : regions_of(g, id)) {
        walk(r);
        const auto& nodes = g.region(r).nodes;
        expect(!nodes.empty() && g.node(nodes.back()).op == Op::Yield, id, "if branch must end with yield");
      }
    }
  }
  /// A Reduce: n operands of one shape, the result shape without the axis, a combine region of pure
  /// rank-0 ops ending with a yield of n values of the operands' dtypes.
  void reduce(NodeId id) {
    const Node& n = g.node(id);
    const auto xs = g.operands(id);
    expect(!xs.empty(), id, "reduce takes values, an axis and a combine region");
    const Shape& s = g.node(xs[0]).shape;
    const int axis = attrs<ReduceAttrs>(g, id).axis;
    expect(axis >= 0 && axis < s.rank && n.shape.rank + 1 == s.rank, id, "axis outside the values' rank");
    for (int d = 0, j = 0; d < s.rank; ++d)
      if (d != axis) expect(n.shape.dims[j++] == s.dims[d], id, "result shape is not the values' shape without the axis");
    for (NodeId x : xs) expect(g.node(x).shape == s, id, "reduced values differ in shape");
    const auto& body = g.region(combine_region(g, id)).nodes;
    expect(!body.empty() && g.node(body.back()).op == Op::Yield, id, "combine region must end with yield");
    const auto ys = g.operands(body.back());
    expect(ys.size() == xs.size(), id, "combine yields a different number of values than it reduces");
    for (size_t k = 0; k < ys.size(); ++k) {
      const Node& y = g.node(ys[k]);
      expect(y.shape.rank == 0 && y.dtype == g.node(xs[k]).dtype, id, "combine yields a value of the wrong dtype or rank");
    }
    for (NodeId b : body) {
      const Node& bn = g.node(b);
      if (b == body.back()) break;
      expect((kind_of(bn.op) == OpKind::Pure || bn.op == Op::CombineArg) && bn.shape.rank == 0, b,
             "combine region holds an op that is not a pure rank-0 op");
      if (bn.op != Op::CombineArg)
        for (NodeId o : g.operands(b)) expect(g.node(o).shape.rank == 0, b, "combine region op reads a block");
    }
    walk(combine_region(g, id));
  }
  void walk(uint32_t r) {
    for (NodeId id : g.region(r).nodes) node(id, r);
  }
};
}  // namespace

void verify(const Graph& g) {
  Verifier v{g, std::vector<int>(g.size(), 0), std::vector<uint32_t>(g.num_regions(), 0)};
  for (size_t id = 0; id < g.size(); ++id)
    for (uint32_t r : regions_of(g, static_cast<NodeId>(id))) v.region_parent[r] = g.node(static_cast<NodeId>(id)).region;
  v.walk(0);
}

}  // namespace tilejit::ir
