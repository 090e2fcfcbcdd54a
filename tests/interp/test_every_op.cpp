// Every elementwise op of ops.def is evaluated by the interpreter and printed by the CUDA emitter. Their
// dispatch lists every op (a build error otherwise), but the spelling of one unary or binary op, and its
// evaluation, is decided inside its category: this test walks the categories so that an op added to
// ops.def and forgotten there fails here, not in a user's kernel.
#include "interp_test_util.h"

#include "tilejit/codegen/codegen.h"

using namespace itest;

namespace {

/// A kernel y[i] = op(x[i] (, x[i])) over 16 elements of `t`, the result cast to f32 when it is not `t`.
ir::Graph kernel_of(Op op, DType t) {
  ir::Graph g;
  g.kernel_name = "each_op";
  const NodeId x = g.add(Op::ParamTensor, t, ir::Shape{}, {}, {0, 1});
  const NodeId y = g.add(Op::ParamTensor, DType::f32, ir::Shape{}, {}, {1, 1});
  g.params.push_back(ir::Param{ir::Param::Tensor, t, 1, "x", x});
  g.params.push_back(ir::Param{ir::Param::Tensor, DType::f32, 1, "y", y});
  const ir::Shape s{16};
  const NodeId offs = g.add(Op::Arange, DType::i32, s, {}, {0});
  const NodeId a = g.add(Op::Load, t, s, {x, offs}, {0});
  NodeId v = ir::kNoNode;
  switch (ir::category_of(op)) {
    case ir::OpCategory::unary: v = g.add(op, t, s, {a}); break;
    case ir::OpCategory::binary: v = g.add(op, t, s, {a, a}); break;
    case ir::OpCategory::compare: v = g.add(op, DType::i1, s, {a, a}); break;
    case ir::OpCategory::select: {
      const NodeId c = g.add(Op::Eq, DType::i1, s, {a, a});
      v = g.add(op, t, s, {c, a, a});
      break;
    }
    case ir::OpCategory::ternary: v = g.add(op, t, s, {a, a, a}); break;
    case ir::OpCategory::cast: v = g.add(op, DType::f64, s, {a}); break;
    default: FAIL("not an elementwise op: " << ir::name_of(op));
  }
  if (g.node(v).dtype != DType::f32) v = g.add(Op::Cast, DType::f32, s, {v});
  g.add(Op::Store, DType::f32, s, {y, offs, v}, {0});
  return g;
}

/// The type an op is tried with: bitwise ops and the remainder (integer-only in the front end) on integers,
/// every other op on floats.
DType type_for(Op op) {
  return op == Op::And || op == Op::Or || op == Op::Xor || op == Op::Not || op == Op::Rem ? DType::i32 : DType::f32;
}

}  // namespace

TEST_CASE("every elementwise op of ops.def: the interpreter evaluates it and the emitter prints it") {
  int ops = 0;
  for (int k = 0; k <= static_cast<int>(Op::WarpProducer); ++k) {
    const auto op = static_cast<Op>(k);
    if (!ir::is_elementwise(op)) continue;
    ++ops;
    const DType t = type_for(op);
    INFO(ir::name_of(op) << " on " << name(t));
    const ir::Graph g = kernel_of(op, t);
    REQUIRE_NOTHROW(ir::verify(g));
    std::vector<int32_t> xi(16);
    std::vector<float> xf(16), y(16, 12345.0f);
    for (int i = 0; i < 16; ++i) xi[static_cast<size_t>(i)] = i + 1, xf[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i + 1);
    tilejit::KernelArg ax, ay;
    ax.kind = ay.kind = tilejit::KernelArg::Tensor;
    ax.tensor = {t == DType::i32 ? static_cast<void*>(xi.data()) : static_cast<void*>(xf.data()), t, 1, {16}, {1}};
    ay.tensor = {y.data(), DType::f32, 1, {16}, {1}};
    const tilejit::KernelArg args[] = {ax, ay};
    CHECK_NOTHROW(tilejit::interp::run(g, tilejit::dim3(1), args));
    CHECK(y[3] != 12345.0f);  // written
    std::string cuda;
    CHECK_NOTHROW(cuda = tilejit::codegen::generate(g).source);
    CHECK(cuda.find("each_op") != std::string::npos);
  }
  CHECK(ops >= 30);
}
