// The typed attribute structs (attributes.h) against the pools of real kernels: for every node of the codegen
// suite's kernels, traced and lowered, A::encode(A::decode(pool)) is the node's pool, A being the struct
// ops.def names for its op. The front end and the passes write pools through these structs; a pool written
// another way (a second encoding of the same attributes) does not come back the same and fails here.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "../codegen/emit_kernels.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/tilejit.h"

namespace ir = tilejit::ir;
using ir::AttrsKind;
using ir::Op;

namespace {

template <class A>
std::vector<int64_t> reencode_as(Op op, std::span<const int64_t> pool) {
  return A::decode(op, pool).encode(op);
}

/// The pool of an `op` node decoded and encoded again by the op's struct.
std::vector<int64_t> reencode(Op op, std::span<const int64_t> pool) {
  switch (ir::attrs_kind_of(op)) {
    case AttrsKind::NoAttrs: return reencode_as<ir::NoAttrs>(op, pool);
    case AttrsKind::ParamAttrs: return reencode_as<ir::ParamAttrs>(op, pool);
    case AttrsKind::DimAttrs: return reencode_as<ir::DimAttrs>(op, pool);
    case AttrsKind::ArrayElemAttrs: return reencode_as<ir::ArrayElemAttrs>(op, pool);
    case AttrsKind::MergeViewAttrs: return reencode_as<ir::MergeViewAttrs>(op, pool);
    case AttrsKind::MakeViewAttrs: return reencode_as<ir::MakeViewAttrs>(op, pool);
    case AttrsKind::ConstAttrs: return reencode_as<ir::ConstAttrs>(op, pool);
    case AttrsKind::AxisAttrs: return reencode_as<ir::AxisAttrs>(op, pool);
    case AttrsKind::ArangeAttrs: return reencode_as<ir::ArangeAttrs>(op, pool);
    case AttrsKind::PermuteAttrs: return reencode_as<ir::PermuteAttrs>(op, pool);
    case AttrsKind::ReduceAttrs: return reencode_as<ir::ReduceAttrs>(op, pool);
    case AttrsKind::IndexAttrs: return reencode_as<ir::IndexAttrs>(op, pool);
    case AttrsKind::DotAttrs: return reencode_as<ir::DotAttrs>(op, pool);
    case AttrsKind::AccessAttrs: return reencode_as<ir::AccessAttrs>(op, pool);
    case AttrsKind::TmaAttrs: return reencode_as<ir::TmaAttrs>(op, pool);
    case AttrsKind::ForAttrs: return reencode_as<ir::ForAttrs>(op, pool);
    case AttrsKind::IfAttrs: return reencode_as<ir::IfAttrs>(op, pool);
    case AttrsKind::ScheduleAttrs: return reencode_as<ir::ScheduleAttrs>(op, pool);
  }
  return {};
}

std::string text(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Round-trips every node of `g`; counts the attribute structs seen and the pool sizes of each op.
struct RoundTrip {
  std::set<AttrsKind> kinds;
  std::set<std::pair<Op, size_t>> sizes;

  void check(const ir::Graph& g, const std::string& what) {
    for (size_t i = 0; i < g.size(); ++i) {
      const auto id = static_cast<ir::NodeId>(i);
      const Op op = g.node(id).op;
      const std::span<const int64_t> pool = g.ints(id);
      INFO(what << ": %" << id << " " << ir::name_of(op) << " " << text(pool));
      CHECK(reencode(op, pool) == std::vector<int64_t>(pool.begin(), pool.end()));
      kinds.insert(ir::attrs_kind_of(op));
      sizes.insert({op, pool.size()});
    }
  }
};

}  // namespace

TEST_CASE("typed attributes: every node of the codegen suite's kernels, traced and lowered, round-trips") {
  RoundTrip rt;
  for (const tilejit::testing::EmitCase& c : tilejit::testing::emit_cases()) {
    const auto traced = c.trace();
    rt.check(*traced, c.name + " (traced)");
    rt.check(tilejit::passes::lower(*traced, c.options).graph, c.name + " (lowered)");
  }
  // The suite has no dot of f32 operands multiplied exactly (Precision::ieee): one more kernel.
  using namespace tilejit::dsl;
  auto k = tilejit::kernel("precisions", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto a = descriptor_load(x, {0, 0}, {16, 16});
    auto exact = dot(a, a, zeros<f32>({16, 16}), Precision::ieee);
    descriptor_store(y, {0, 0}, dot(a, a, exact));
  });
  rt.check(*k.trace(tilejit::Config{}), "precisions (traced)");

  // The suite covers every struct and both forms of the two whose fields may be absent from the pool.
  for (int a = 0; a <= static_cast<int>(AttrsKind::ScheduleAttrs); ++a) {
    INFO("AttrsKind " << a);
    CHECK(rt.kinds.count(static_cast<AttrsKind>(a)));
  }
  CHECK(rt.sizes.count({Op::MakeView, 1}));  // make_view
  CHECK(rt.sizes.count({Op::MakeView, 2}));  // tensor.rows
  CHECK(rt.sizes.count({Op::Dot, 0}));       // operands other than f32
  CHECK(rt.sizes.count({Op::Dot, 1}));       // f32 operands: their precision
  CHECK(rt.sizes.count({Op::Load, 1}));      // a plain load
  CHECK(rt.sizes.count({Op::Load, 2}));      // issued ahead (prefetch_loads)
  CHECK(rt.sizes.count({Op::Load, 3}));      // with a cache hint (evict_hints, softmax_online_evict)
  CHECK(rt.sizes.count({Op::Store, 2}));     // a store with a cache hint
}

TEST_CASE("typed attributes: one encoding each") {
  // A plain view records its rank alone, a rows view a 1 after it; [rank, 0] is not a pool of MakeView.
  CHECK(ir::MakeViewAttrs{2, false}.encode(Op::MakeView) == std::vector<int64_t>{2});
  CHECK(ir::MakeViewAttrs{2, true}.encode(Op::MakeView) == std::vector<int64_t>{2, 1});
  CHECK_FALSE(ir::well_formed(Op::MakeView, std::vector<int64_t>{2, 0}));
  // A dot's precision is in the pool when it has one (the front end gives one to every f32 dot), ieee included.
  CHECK(ir::DotAttrs{}.encode(Op::Dot).empty());
  CHECK(ir::DotAttrs{ir::DotPrecision::ieee}.encode(Op::Dot) == std::vector<int64_t>{0});
  CHECK(ir::DotAttrs{ir::DotPrecision::tf32}.encode(Op::Dot) == std::vector<int64_t>{1});
  // A cache hint is written after `ahead` on a load (which then writes ahead too), after the mask flag on a
  // store; an atomic takes none, and a pool with the default hint written out is not the one encoding.
  CHECK(ir::AccessAttrs{true, ir::LoadAhead::none, ir::Evict::last}.encode(Op::Load) == std::vector<int64_t>{1, 0, 2});
  CHECK(ir::AccessAttrs{false, ir::LoadAhead::next_iteration, ir::Evict::first}.encode(Op::Load) == std::vector<int64_t>{0, 1, 1});
  CHECK(ir::AccessAttrs{false, ir::LoadAhead::none, ir::Evict::first}.encode(Op::Store) == std::vector<int64_t>{0, 1});
  CHECK(ir::AccessAttrs{true}.encode(Op::AtomicAdd) == std::vector<int64_t>{1});
  CHECK(ir::AccessAttrs::decode(Op::Load, std::vector<int64_t>{0, 2, 2}).evict == ir::Evict::last);
  CHECK(ir::AccessAttrs::decode(Op::Store, std::vector<int64_t>{1, 1}).evict == ir::Evict::first);
  CHECK(ir::well_formed(Op::Load, std::vector<int64_t>{1, 0, 1}));
  CHECK_FALSE(ir::well_formed(Op::Load, std::vector<int64_t>{1, 0, 0}));   // the default written out
  CHECK_FALSE(ir::well_formed(Op::Load, std::vector<int64_t>{1, 0, 3}));   // no such hint
  CHECK_FALSE(ir::well_formed(Op::Store, std::vector<int64_t>{1, 0}));
  CHECK(ir::well_formed(Op::Store, std::vector<int64_t>{1, 2}));
  CHECK_FALSE(ir::well_formed(Op::AtomicAdd, std::vector<int64_t>{1, 1}));
}
