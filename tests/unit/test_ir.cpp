// Unit tests of the IR: building and hash-consing, the verifier on broken graphs, the structural hash.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "tilejit/ir/op_cases.h"
#include "tilejit/tilejit.h"

using namespace tilejit::dsl;
namespace ir = tilejit::ir;
using ir::DType;
using ir::Op;
using ir::Shape;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// A graph with one f32 2-D tensor parameter (node 0).
ir::Graph graph_with_tensor() {
  ir::Graph g;
  g.kernel_name = "hand_built";
  const ir::NodeId t = g.add(Op::ParamTensor, DType::f32, Shape{}, {}, {0, 2});
  g.params.push_back(ir::Param{ir::Param::Tensor, DType::f32, 2, "arg0", t});
  return g;
}

/// Runs the verifier and returns its message ("" when the graph is valid).
std::string verify_message(const ir::Graph& g) {
  try {
    ir::verify(g);
  } catch (const tilejit::InternalError& e) {
    return e.what();
  }
  return "";
}

ir::NodeId i32_const(ir::Graph& g, int64_t v) { return g.add(Op::Const, DType::i32, Shape{}, {}, {v}); }

}  // namespace

TEST_SUITE("ir") {
TEST_CASE("hash-consing: the same pure node twice is one node") {
  ir::Graph g;
  const ir::NodeId a = i32_const(g, 7);
  const ir::NodeId b = i32_const(g, 7);
  CHECK(a == b);
  CHECK(i32_const(g, 8) != a);  // a different attribute is a different node
  CHECK(g.add(Op::Const, DType::i64, Shape{}, {}, {7}) != a);  // a different dtype too

  const ir::NodeId pid = g.add(Op::ProgramId, DType::i32, Shape{}, {}, {0});
  const ir::NodeId sum1 = g.add(Op::Add, DType::i32, Shape{}, {pid, a});
  const ir::NodeId sum2 = g.add(Op::Add, DType::i32, Shape{}, {pid, a});
  CHECK(sum1 == sum2);
  CHECK(g.add(Op::Add, DType::i32, Shape{}, {a, pid}) != sum1);  // operand order matters
  CHECK(g.size() == 6);  // 7, 8, 7 as i64, program_id and the two different adds
}

TEST_CASE("hash-consing: effects are never merged") {
  ir::Graph g = graph_with_tensor();
  const ir::NodeId offs = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
  const ir::NodeId l1 = g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {0});
  const ir::NodeId l2 = g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {0});
  CHECK(l1 != l2);
  const ir::NodeId s1 = g.add(Op::Store, DType::f32, Shape{16}, {0, offs, l1}, {0});
  const ir::NodeId s2 = g.add(Op::Store, DType::f32, Shape{16}, {0, offs, l1}, {0});
  CHECK(s1 != s2);
  ir::TmaAttrs a;
  a.rank = 2;
  a.box = {8, 8};
  const auto ints = a.encode(Op::DescPrefetch);
  CHECK(g.add(Op::DescPrefetch, DType::f32, Shape{}, {0}, ints) != g.add(Op::DescPrefetch, DType::f32, Shape{}, {0}, ints));
  // Parameters (Arg) are not merged either.
  CHECK(g.add(Op::ParamScalar, DType::f32, Shape{}, {}, {1}) != g.add(Op::ParamScalar, DType::f32, Shape{}, {}, {1}));
}

TEST_CASE("hash-consing: a pure node in a loop body is not merged with the outer one") {
  ir::Graph g;
  const ir::NodeId outer = i32_const(g, 3);
  const ir::NodeId lo = i32_const(g, 0), hi = i32_const(g, 10), step = i32_const(g, 1);
  const auto body = static_cast<int64_t>(g.num_regions());
  const ir::NodeId loop = g.add(Op::For, DType::i32, Shape{}, {lo, hi, step}, {body});
  REQUIRE(g.new_region(loop) == static_cast<uint32_t>(body));
  g.push_region(static_cast<uint32_t>(body));
  const ir::NodeId idx = g.add(Op::LoopIndex, DType::i32, Shape{}, {loop});
  const ir::NodeId inner = i32_const(g, 3);
  CHECK(inner != outer);
  CHECK(g.node(inner).region == static_cast<uint32_t>(body));
  CHECK(i32_const(g, 3) == inner);  // merged within the body
  g.add(Op::Add, DType::i32, Shape{}, {idx, inner});
  g.add(Op::Yield, DType::i32, Shape{}, {});
  g.pop_region();
  CHECK(i32_const(g, 3) == outer);  // and the outer one is found again after the loop
  CHECK(verify_message(g).empty());
}

TEST_CASE("hash-consing through the DSL: program_id twice is one node, two loads are two") {
  auto k = tilejit::kernel("cse", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    auto a = program_id(0) * 16 + arange(0, 16);
    auto b = program_id(0) * 16 + arange(0, 16);
    CHECK(a.id() == b.id());
    auto va = load(x, a);
    auto vb = load(x, b);
    CHECK(va.id() != vb.id());
    store(y, a, va + vb);
  });
  const auto g = k.trace(tilejit::Config{});
  int loads = 0, pids = 0;
  for (size_t i = 0; i < g->size(); ++i) {
    loads += g->node(static_cast<ir::NodeId>(i)).op == Op::Load;
    pids += g->node(static_cast<ir::NodeId>(i)).op == Op::ProgramId;
  }
  CHECK(loads == 2);
  CHECK(pids == 1);
}

TEST_CASE("the verifier accepts a traced kernel and rejects broken graphs") {
  SUBCASE("a valid hand-built graph") {
    ir::Graph g = graph_with_tensor();
    const ir::NodeId offs = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
    const ir::NodeId v = g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {0});
    g.add(Op::Store, DType::f32, Shape{16}, {0, offs, g.add(Op::Add, DType::f32, Shape{16}, {v, v})}, {0});
    CHECK(verify_message(g).empty());
  }
  SUBCASE("binary op with operands of another dtype") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1);
    const ir::NodeId b = g.add(Op::Const, DType::f32, Shape{}, {}, {0});
    const ir::NodeId bad = g.add(Op::Add, DType::i32, Shape{}, {a, b});
    const std::string m = verify_message(g);
    CHECK(contains(m, "IR verifier: %" + std::to_string(bad) + " (add)"));
    CHECK(contains(m, "binary op operand dtypes differ from result"));
  }
  SUBCASE("binary op with operands of another shape") {
    ir::Graph g;
    const ir::NodeId a = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
    const ir::NodeId b = g.add(Op::Arange, DType::i32, Shape{8}, {}, {0});
    g.add(Op::Mul, DType::i32, Shape{16}, {a, b});
    CHECK(contains(verify_message(g), "binary op operand shapes differ from result"));
  }
  SUBCASE("comparison that does not yield i1") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1), b = i32_const(g, 2);
    g.add(Op::Lt, DType::i32, Shape{}, {a, b});
    CHECK(contains(verify_message(g), "comparison must yield i1"));
  }
  SUBCASE("where with a non-bool condition") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1), b = i32_const(g, 2);
    g.add(Op::Where, DType::i32, Shape{}, {a, a, b});
    CHECK(contains(verify_message(g), "where condition must be i1"));
  }
  SUBCASE("reshape that changes the element count") {
    ir::Graph g;
    const ir::NodeId a = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
    g.add(Op::Reshape, DType::i32, Shape{4, 5}, {a});
    CHECK(contains(verify_message(g), "reshape changes the element count"));
  }
  SUBCASE("dot with mismatched shapes") {
    ir::Graph g;
    const ir::NodeId z = g.add(Op::Const, DType::f32, Shape{}, {}, {0});
    const ir::NodeId a = g.add(Op::Broadcast, DType::f32, Shape{16, 32}, {z});
    const ir::NodeId b = g.add(Op::Broadcast, DType::f32, Shape{16, 8}, {z});
    const ir::NodeId c = g.add(Op::Broadcast, DType::f32, Shape{16, 8}, {z});
    g.add(Op::Dot, DType::f32, Shape{16, 8}, {a, b, c});
    CHECK(contains(verify_message(g), "dot shapes are not MxK, KxN, MxN"));
  }
  SUBCASE("TMA load whose shape is not ceil(box / estride)") {
    ir::Graph g = graph_with_tensor();
    const ir::NodeId c = i32_const(g, 0);
    ir::TmaAttrs a;
    a.rank = 2;
    a.box = {6, 8};
    a.estride = {3, 1};
    g.add(Op::DescLoad, DType::f32, Shape{6, 8}, {0, c, c}, a.encode(Op::DescLoad));
    CHECK(contains(verify_message(g), "TMA load shape is not ceil(box / estride)"));
  }
  SUBCASE("TMA load leaving out unit dimensions of its tile: accepted, but not other dimensions") {
    // [1, 64, 8] loaded as [64, 8] (what canonicalize makes of a tile its users reshape so) is the same tile.
    for (const Shape& value : {Shape{64, 8}, Shape{8, 64}, Shape{1, 64, 8, 1}}) {
      ir::Graph g;
      g.kernel_name = "hand_built";
      const ir::NodeId t = g.add(Op::ParamTensor, DType::f32, Shape{}, {}, {0, 3});
      g.params.push_back(ir::Param{ir::Param::Tensor, DType::f32, 3, "arg0", t});
      const ir::NodeId c = i32_const(g, 0);
      ir::TmaAttrs a;
      a.rank = 3;
      a.box = {1, 64, 8};
      g.add(Op::DescLoad, DType::f32, value, {0, c, c, c}, a.encode(Op::DescLoad));
      if (value == Shape{64, 8})
        CHECK(verify_message(g).empty());
      else
        CHECK(contains(verify_message(g), "TMA load shape is not ceil(box / estride), unit dimensions aside"));
    }
  }
  SUBCASE("TMA store whose value is not the box") {
    ir::Graph g = graph_with_tensor();
    const ir::NodeId c = i32_const(g, 0);
    const ir::NodeId v = g.add(Op::Broadcast, DType::f32, Shape{8, 8}, {g.add(Op::Const, DType::f32, Shape{}, {}, {0})});
    ir::TmaAttrs a;
    a.rank = 2;
    a.box = {8, 16};
    g.add(Op::DescStore, DType::f32, Shape{}, {0, c, c, v}, a.encode(Op::DescStore));
    CHECK(contains(verify_message(g), "TMA store value shape is not the box"));
  }
  SUBCASE("TMA store with a missing coordinate") {
    ir::Graph g = graph_with_tensor();
    const ir::NodeId c = i32_const(g, 0);
    const ir::NodeId v = g.add(Op::Broadcast, DType::f32, Shape{8, 8}, {g.add(Op::Const, DType::f32, Shape{}, {}, {0})});
    ir::TmaAttrs a;
    a.rank = 2;
    a.box = {8, 8};
    g.add(Op::DescStore, DType::f32, Shape{}, {0, c, v}, a.encode(Op::DescStore));
    CHECK(contains(verify_message(g), "TMA op has the wrong number of operands"));
  }
  SUBCASE("loop body without a yield") {
    ir::Graph g;
    const ir::NodeId lo = i32_const(g, 0), hi = i32_const(g, 4), step = i32_const(g, 1);
    const auto body = static_cast<int64_t>(g.num_regions());
    const ir::NodeId loop = g.add(Op::For, DType::i32, Shape{}, {lo, hi, step}, {body});
    g.new_region(loop);
    g.push_region(static_cast<uint32_t>(body));
    g.add(Op::LoopIndex, DType::i32, Shape{}, {loop});
    g.pop_region();
    CHECK(contains(verify_message(g), "loop body must end with yield"));
  }
  SUBCASE("loop that yields more values than it carries") {
    ir::Graph g;
    const ir::NodeId lo = i32_const(g, 0), hi = i32_const(g, 4), step = i32_const(g, 1);
    const auto body = static_cast<int64_t>(g.num_regions());
    const ir::NodeId loop = g.add(Op::For, DType::i32, Shape{}, {lo, hi, step}, {body});
    g.new_region(loop);
    g.push_region(static_cast<uint32_t>(body));
    const ir::NodeId i = g.add(Op::LoopIndex, DType::i32, Shape{}, {loop});
    g.add(Op::Yield, DType::i32, Shape{}, {i});
    g.pop_region();
    CHECK(contains(verify_message(g), "loop yields a different number of values than it carries"));
  }
  SUBCASE("a value of a loop body used after the loop") {
    ir::Graph g;
    const ir::NodeId lo = i32_const(g, 0), hi = i32_const(g, 4), step = i32_const(g, 1);
    const auto body = static_cast<int64_t>(g.num_regions());
    const ir::NodeId loop = g.add(Op::For, DType::i32, Shape{}, {lo, hi, step}, {body});
    g.new_region(loop);
    g.push_region(static_cast<uint32_t>(body));
    const ir::NodeId i = g.add(Op::LoopIndex, DType::i32, Shape{}, {loop});
    const ir::NodeId twice = g.add(Op::Add, DType::i32, Shape{}, {i, i});
    g.add(Op::Yield, DType::i32, Shape{}, {});
    g.pop_region();
    const ir::NodeId leak = g.add(Op::Mul, DType::i32, Shape{}, {twice, twice});
    const std::string m = verify_message(g);
    CHECK(contains(m, "%" + std::to_string(leak) + " (mul)"));
    CHECK(contains(m, "operand defined in a region not enclosing this use"));
  }
  SUBCASE("if branch without a yield") {
    ir::Graph g;
    const ir::NodeId c = g.add(Op::Const, DType::i1, Shape{}, {}, {1});
    const auto then_r = static_cast<int64_t>(g.num_regions());
    const ir::NodeId node = g.add(Op::If, DType::i1, Shape{}, {c}, {then_r, then_r + 1});
    g.new_region(node);
    g.new_region(node);
    g.push_region(static_cast<uint32_t>(then_r));
    g.add(Op::Yield, DType::i32, Shape{}, {});
    g.pop_region();
    CHECK(contains(verify_message(g), "if branch must end with yield"));
  }
  SUBCASE("an operand id that does not exist is refused while building") {
    ir::Graph g;
    CHECK_THROWS_AS(g.add(Op::Neg, DType::i32, Shape{}, {42}), tilejit::InternalError);
  }
}

TEST_CASE("structural hash: equal for two traces, different when a constant changes") {
  auto make = [](float factor) {
    return tilejit::kernel("scale", [factor](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"BN"> BN) {
      auto m = program_id(0) * BM, n = program_id(1) * BN;
      descriptor_store(y, {m, n}, descriptor_load(x, {m, n}, {BM, BN}) * factor);
    });
  };
  const tilejit::Config cfg{{"BM", 64}, {"BN", 32}};
  const auto g1 = make(2.0f).trace(cfg);
  const auto g2 = make(2.0f).trace(cfg);
  const auto g3 = make(3.0f).trace(cfg);
  CHECK(g1 != g2);  // two kernel objects, two traces
  CHECK(g1->hash() == g2->hash());
  CHECK(ir::print(*g1) == ir::print(*g2));
  CHECK(g1->hash() != g3->hash());
  CHECK(ir::print(*g1) != ir::print(*g3));
  // The configuration is part of the graph and of its hash.
  CHECK(make(2.0f).trace(tilejit::Config{{"BM", 64}, {"BN", 64}})->hash() != g1->hash());
  CHECK(make(2.0f).trace(tilejit::Config{{"BM", 64}, {"BN", 32}}.num_warps(8))->hash() != g1->hash());
  // A kernel object traces once per configuration and caches the graph.
  auto k = make(2.0f);
  CHECK(k.trace(cfg) == k.trace(cfg));
}

TEST_CASE("structural hash: independent of source locations") {
  auto a = tilejit::kernel("same", [](Tensor<f32, 1> x) { store(x, arange(0, 16), 1.0f); });
  auto b = tilejit::kernel("same", [](Tensor<f32, 1> x) {
    store(x, arange(0, 16),
          1.0f);
  });
  const auto ga = a.trace(tilejit::Config{}), gb = b.trace(tilejit::Config{});
  CHECK(ga->hash() == gb->hash());
  CHECK(ir::print(*ga) == ir::print(*gb));
  CHECK(ir::print(*ga, true) != ir::print(*gb, true));  // the locations differ
  CHECK(contains(ir::print(*ga, true), "test_ir.cpp:"));
}

TEST_CASE("printer: attributes by name; a pool that does not match its op's layout is shown by position") {
  ir::Graph g = graph_with_tensor();
  const ir::NodeId m = g.add(Op::ProgramId, DType::i32, Shape{}, {}, {0});
  const ir::NodeId t = g.add(Op::DescLoad, DType::f32, Shape{64, 32}, {0, m, m}, {2, 64, 32, 1, 1, 1, 2});
  g.add(Op::DescStore, DType::f32, Shape{}, {0, m, m, t}, {2, 64, 32, 1, 0});
  g.add(Op::ReduceMax, DType::f32, Shape{64}, {t}, {1});
  g.add(Op::DescPrefetch, DType::f32, Shape{}, {0}, {2, 64});  // too short for a rank-2 box
  const ir::NodeId offs = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
  g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {0, 1});  // issued one iteration ahead
  g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {0, 0, 2});  // evicted last
  const ir::NodeId v = g.add(Op::Arange, DType::i32, Shape{16}, {}, {1});
  g.add(Op::Store, DType::i32, Shape{16}, {0, offs, v}, {0, 1});  // evicted first
  const std::string text = ir::print(g);
  INFO(text);
  CHECK(contains(text, "param.tensor {param=0, rank=2}"));
  CHECK(contains(text, "program_id {axis=0}"));
  CHECK(contains(text, "tma.load %0, %1, %1 {box=[64, 32], estride=[1, 1], fill=nan, placement=device}"));
  CHECK(contains(text, "tma.store %0, %1, %1, %2 {box=[64, 32], reduce=add, placement=auto}"));
  CHECK(contains(text, "reduce.max %2 {axis=1}"));
  CHECK(contains(text, "tma.prefetch %0 {2, 64}"));
  CHECK(contains(text, "arange {start=0}"));
  CHECK(contains(text, "load %0, %6 {unmasked, ahead=next}"));
  CHECK(contains(text, "load %0, %6 {unmasked, evict=last}"));
  CHECK(contains(text, "store %0, %6, %9 {unmasked, evict=first}"));
}

TEST_CASE("ops.def: every op's properties agree with each other") {
  std::set<std::string_view> names;
  for (int k = 0; k <= static_cast<int>(Op::WarpProducer); ++k) {
    const auto op = static_cast<Op>(k);
    INFO(ir::name_of(op));
    CHECK(names.insert(ir::name_of(op)).second);  // printer names are unique
    if (ir::is_elementwise(op)) {
      CHECK(ir::kind_of(op) == ir::OpKind::Pure);
      CHECK(ir::yields_value(op));
      CHECK(ir::attrs_kind_of(op) == ir::AttrsKind::NoAttrs);
      CHECK(ir::operand_count(op) >= 1);
    }
    if (ir::is_schedule_op(op)) {
      CHECK(ir::kind_of(op) == ir::OpKind::Effect);
      CHECK(!ir::yields_value(op));
      CHECK(ir::operand_count(op) == 0);
      CHECK(ir::attrs_kind_of(op) == ir::AttrsKind::ScheduleAttrs);
    }
    if (ir::kind_of(op) == ir::OpKind::Region) CHECK(!ir::yields_value(op));  // their results are separate nodes
    if (ir::category_of(op) == ir::OpCategory::tensor) CHECK(!ir::yields_value(op));
  }
  CHECK(ir::category_of(Op::Where) == ir::OpCategory::select);
  CHECK(ir::operand_count(Op::Dot) == 3);
  CHECK(ir::operand_count(Op::For) == ir::kVariadic);
  CHECK(ir::name_of(ir::OpCategory::product) == "product");
}

TEST_CASE("op_cases.h: each category's list holds exactly the ops ops.def puts in that category") {
  using C = ir::OpCategory;
#define TILEJIT_ELEMENT(Name) Op::Name,
  const std::vector<std::pair<C, std::vector<Op>>> lists = {
      {C::tensor, {TILEJIT_TENSOR_OPS(TILEJIT_ELEMENT)}},         {C::leaf, {TILEJIT_LEAF_OPS(TILEJIT_ELEMENT)}},
      {C::movement, {TILEJIT_MOVEMENT_OPS(TILEJIT_ELEMENT)}},     {C::cast, {TILEJIT_CAST_OPS(TILEJIT_ELEMENT)}},
      {C::binary, {TILEJIT_BINARY_OPS(TILEJIT_ELEMENT)}},         {C::compare, {TILEJIT_COMPARE_OPS(TILEJIT_ELEMENT)}},
      {C::unary, {TILEJIT_UNARY_OPS(TILEJIT_ELEMENT)}},           {C::select, {TILEJIT_SELECT_OPS(TILEJIT_ELEMENT)}},
      {C::reduction, {TILEJIT_REDUCTION_OPS(TILEJIT_ELEMENT)}},   {C::product, {TILEJIT_PRODUCT_OPS(TILEJIT_ELEMENT)}},
      {C::memory, {TILEJIT_MEMORY_OPS(TILEJIT_ELEMENT)}},         {C::tma, {TILEJIT_TMA_OPS(TILEJIT_ELEMENT)}},
      {C::control, {TILEJIT_CONTROL_OPS(TILEJIT_ELEMENT)}},       {C::schedule, {TILEJIT_SCHEDULE_OPS(TILEJIT_ELEMENT)}},
      {C::ternary, {TILEJIT_TERNARY_OPS(TILEJIT_ELEMENT)}},
  };
#undef TILEJIT_ELEMENT
  std::set<C> seen;
  for (const auto& [category, ops] : lists) {
    INFO(ir::name_of(category));
    CHECK(seen.insert(category).second);
    std::set<Op> want, got(ops.begin(), ops.end());
    for (int k = 0; k <= static_cast<int>(Op::WarpProducer); ++k)
      if (ir::category_of(static_cast<Op>(k)) == category) want.insert(static_cast<Op>(k));
    CHECK(got.size() == ops.size());  // no op twice
    CHECK(got == want);
  }
  CHECK(seen.size() == 15);  // every category of ops.def
  // The two composites split the ops by ir::is_elementwise.
#define TILEJIT_ELEMENT(Name) Op::Name,
  const std::set<Op> elementwise{TILEJIT_ELEMENTWISE_OPS(TILEJIT_ELEMENT)}, others{TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_ELEMENT)};
#undef TILEJIT_ELEMENT
  for (int k = 0; k <= static_cast<int>(Op::WarpProducer); ++k) {
    const auto op = static_cast<Op>(k);
    INFO(ir::name_of(op));
    CHECK(elementwise.count(op) == (ir::is_elementwise(op) ? 1u : 0u));
    CHECK(others.count(op) == (ir::is_elementwise(op) ? 0u : 1u));
  }
}

TEST_CASE("the verifier checks operand counts and attribute layouts from ops.def") {
  SUBCASE("an op with too few operands") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1);
    g.add(Op::Add, DType::i32, Shape{}, {a});
    CHECK(contains(verify_message(g), "wrong number of operands"));
  }
  SUBCASE("a unary op with two") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1);
    g.add(Op::Neg, DType::i32, Shape{}, {a, a});
    CHECK(contains(verify_message(g), "wrong number of operands"));
  }
  SUBCASE("attributes the op does not have") {
    ir::Graph g;
    const ir::NodeId a = i32_const(g, 1);
    g.add(Op::Neg, DType::i32, Shape{}, {a}, {3});
    CHECK(contains(verify_message(g), "attributes do not have the op's layout"));
  }
  SUBCASE("an axis outside the ranks") {
    ir::Graph g;
    g.add(Op::ProgramId, DType::i32, Shape{}, {}, {7});
    CHECK(contains(verify_message(g), "attributes do not have the op's layout"));
  }
  SUBCASE("a load whose mask flag is not 0 or 1") {
    ir::Graph g = graph_with_tensor();
    const ir::NodeId offs = g.add(Op::Arange, DType::i32, Shape{16}, {}, {0});
    g.add(Op::Load, DType::f32, Shape{16}, {0, offs}, {2});
    CHECK(contains(verify_message(g), "attributes do not have the op's layout"));
  }
}

TEST_CASE("typed attributes: decode what the front end encoded, encode back the same pool") {
  ir::Graph g = graph_with_tensor();
  const ir::NodeId m = g.add(Op::ProgramId, DType::i32, Shape{}, {}, {1});
  const ir::NodeId t = g.add(Op::DescLoad, DType::f32, Shape{64, 16}, {0, m, m}, {2, 64, 32, 1, 2, 1, 2});
  const ir::NodeId r = g.add(Op::ReduceMax, DType::f32, Shape{64}, {t}, {1});
  CHECK(ir::attrs<ir::AxisAttrs>(g, m).axis == 1);
  CHECK(ir::attrs<ir::AxisAttrs>(g, r).axis == 1);
  CHECK(ir::attrs<ir::ParamAttrs>(g, 0).rank == 2);
  const ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g, t);
  CHECK(a.rank == 2);
  CHECK(a.box[1] == 32);
  CHECK(a.estride[1] == 2);
  CHECK(a.fill == 1);
  CHECK(a.placement == 2);
  const std::vector<int64_t> pool(g.ints(t).begin(), g.ints(t).end());
  CHECK(a.encode(Op::DescLoad) == pool);
  CHECK(ir::AccessAttrs{true, ir::LoadAhead::next_iteration}.encode(Op::Load) == std::vector<int64_t>{1, 1});
  CHECK(ir::AccessAttrs{true, ir::LoadAhead::none}.encode(Op::Store) == std::vector<int64_t>{1});
  CHECK(ir::DotAttrs{}.encode(Op::Dot).empty());
  // Reading an op's attributes as another op's struct is an internal error, not a misread.
  CHECK_THROWS_AS(ir::attrs<ir::IndexAttrs>(g, m), tilejit::InternalError);
}
}  // TEST_SUITE
