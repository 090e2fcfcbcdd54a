// The typed attribute structs of attributes.h: how each reads and writes a node's integer pool, which pools
// are well formed, and how the printer names their fields ("box=[64, 32], fill=zero").
#include <initializer_list>
#include <string>

#include "tilejit/error.h"
#include "tilejit/ir/ir.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::ir {

namespace {
std::string list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The attributes as the pool holds them, for a layout the names below do not cover (a malformed node).
std::string positional(std::span<const int64_t> v) { return list(v).substr(1, list(v).size() - 2); }

/// `names[i]=v[i]`, one per attribute; positional when the counts differ.
std::string fixed(std::span<const int64_t> v, std::initializer_list<const char*> names) {
  if (v.size() != names.size()) return positional(v);
  std::string s;
  size_t i = 0;
  for (const char* n : names) s += (i ? ", " : "") + std::string(n) + "=" + std::to_string(v[i]), ++i;
  return s;
}

/// The spelling of `value` among `names` (indexed by value), or the number.
std::string word(int64_t value, std::initializer_list<const char*> names) {
  return value >= 0 && static_cast<size_t>(value) < names.size() ? names.begin()[value] : std::to_string(value);
}

std::string placement(int64_t p) { return "placement=" + word(p, {"auto", "host", "device"}); }

/// DescLoad / DescPrefetch: box, estride, fill, placement; DescStore: box, reduce, placement.
std::string tma(Op op, std::span<const int64_t> v) {
  const TmaAttrs a = TmaAttrs::decode(op, v);
  const auto r = static_cast<size_t>(a.rank);
  std::string s = "box=" + list(v.subspan(1, r));
  if (op == Op::DescStore) return s + ", reduce=" + word(static_cast<int64_t>(a.reduce), {"none", "add", "min", "max"}) + ", " + placement(a.placement);
  s += ", estride=" + list(v.subspan(1 + r, r)) + ", fill=" + word(a.fill, {"zero", "nan"}) + ", " + placement(a.placement);
  if (a.ring != RingPosition::none)
    s += ", ring=" + word(static_cast<int64_t>(a.ring), {"none", "before_next_loop", "after_previous_loop"});
  return s;
}
std::string ref(NodeId n) { return "%" + std::to_string(n); }

/// A schedule op's attributes (ScheduleAttrs), the nodes it names as %ids.
std::string schedule(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  const ScheduleAttrs a = attrs<ScheduleAttrs>(g, id);
  const std::string loop = "loop=" + ref(a.node), stages = ", stages=" + std::to_string(a.stages);
  if (op == Op::TmaIssue) return "load=" + ref(a.node);
  if (op == Op::ReuseFence)  // the node it precedes may be an effect, printed without its id
    return "before=" + ref(a.node) + " " + std::string(name_of(g.node(a.node).op));
  if (op == Op::WgmmaWait) {
    std::string dots;
    for (NodeId d : a.dots) dots += (dots.empty() ? "" : ", ") + ref(d);
    return "of=[" + dots + "], pending=" + std::to_string(a.pending) +
           ", ends=" + word(static_cast<int64_t>(a.when), {"this", "previous_iteration", "last_iteration"});
  }
  if (op == Op::CtaBarrier) return "reason=" + word(static_cast<int64_t>(a.reason), {"stage_free_in_flight", "stage_free"});
  if (op == Op::PipeAdvance || op == Op::PipeEnd || op == Op::TurnStart || op == Op::TurnWait || op == Op::TurnPass) return loop;
  if (op == Op::PipeStage || op == Op::WarpProducer) return loop + stages;
  if (op == Op::PipeWait)
    return loop + stages + ", phase=(position / " + std::to_string(a.stages) + ") & 1, first=" + ref(a.load);
  return loop + stages + ", ring=" + (a.ring_persists ? "kernel" : "run");  // PipeBegin, PipePrologue, PipeRefill, PipeRelease
}
}  // namespace


// ---- reading and writing pools ------------------------------------------------------------------

namespace {
int to_int(int64_t v) { return static_cast<int>(v); }
/// The pool's k-th value; an InternalError naming the op when the pool is shorter.
int64_t at(Op op, std::span<const int64_t> v, size_t k) {
  if (k >= v.size()) throw InternalError("attributes of " + std::string(name_of(op)) + ": fewer than the op's layout");
  return v[k];
}
bool in(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }
}  // namespace

void attrs_mismatch(Op op, AttrsKind asked) {
  throw InternalError("attributes of " + std::string(name_of(op)) + " read as another op's (kind " +
                      std::to_string(static_cast<int>(asked)) + ")");
}

ParamAttrs ParamAttrs::decode(Op op, std::span<const int64_t> v) {
  return {to_int(at(op, v, 0)), op == Op::ParamScalar ? 0 : to_int(at(op, v, 1))};
}
std::vector<int64_t> ParamAttrs::encode(Op op) const {
  if (op == Op::ParamScalar) return {param};
  return {param, rank};
}
DimAttrs DimAttrs::decode(Op op, std::span<const int64_t> v) { return {to_int(at(op, v, 0))}; }
ArrayElemAttrs ArrayElemAttrs::decode(Op op, std::span<const int64_t> v) {
  return {to_int(at(op, v, 0)), static_cast<ArrayPrefetch>(at(op, v, 1))};
}
MergeViewAttrs MergeViewAttrs::decode(Op op, std::span<const int64_t> v) {
  return {to_int(at(op, v, 0)), {v.begin() + 1, v.end()}};
}
std::vector<int64_t> MergeViewAttrs::encode(Op) const {
  std::vector<int64_t> v{rank};
  v.insert(v.end(), groups.begin(), groups.end());
  return v;
}
MakeViewAttrs MakeViewAttrs::decode(Op op, std::span<const int64_t> v) {
  return {to_int(at(op, v, 0)), v.size() > 1 && v[1] == 1};
}
std::vector<int64_t> MakeViewAttrs::encode(Op) const {
  if (rows) return {rank, 1};
  return {rank};
}
ConstAttrs ConstAttrs::decode(Op op, std::span<const int64_t> v) { return {at(op, v, 0)}; }
AxisAttrs AxisAttrs::decode(Op op, std::span<const int64_t> v) { return {to_int(at(op, v, 0))}; }
ArangeAttrs ArangeAttrs::decode(Op op, std::span<const int64_t> v) { return {at(op, v, 0)}; }
PermuteAttrs PermuteAttrs::decode(Op, std::span<const int64_t> v) { return {{v.begin(), v.end()}}; }
ReduceAttrs ReduceAttrs::decode(Op op, std::span<const int64_t> v) {
  return {to_int(at(op, v, 0)), static_cast<uint32_t>(at(op, v, 1))};
}
IndexAttrs IndexAttrs::decode(Op op, std::span<const int64_t> v) { return {to_int(at(op, v, 0))}; }
DotAttrs DotAttrs::decode(Op, std::span<const int64_t> v) {
  if (v.empty()) return {};
  return {static_cast<DotPrecision>(v[0])};
}
std::vector<int64_t> DotAttrs::encode(Op) const {
  if (!precision) return {};
  return {static_cast<int64_t>(*precision)};
}
AccessAttrs AccessAttrs::decode(Op op, std::span<const int64_t> v) {
  AccessAttrs a{at(op, v, 0) != 0};
  if (op == Op::Load) {
    if (v.size() > 1) a.ahead = static_cast<LoadAhead>(v[1]);
    if (v.size() > 2) a.evict = static_cast<Evict>(v[2]);
  } else if (op == Op::Store && v.size() > 1) {
    a.evict = static_cast<Evict>(v[1]);
  }
  return a;
}
std::vector<int64_t> AccessAttrs::encode(Op op) const {
  std::vector<int64_t> v{masked ? 1 : 0};
  if (op == Op::Load && (ahead != LoadAhead::none || evict != Evict::normal)) v.push_back(static_cast<int64_t>(ahead));
  if ((op == Op::Load || op == Op::Store) && evict != Evict::normal) v.push_back(static_cast<int64_t>(evict));
  return v;
}
TmaAttrs TmaAttrs::decode(Op op, std::span<const int64_t> v) {
  TmaAttrs a;
  a.rank = to_int(at(op, v, 0));
  check_internal(in(a.rank, 1, kMaxRank), "tma attributes: rank outside 1..5");
  size_t k = 1;
  for (int i = 0; i < a.rank; ++i) a.box[static_cast<size_t>(i)] = static_cast<int32_t>(at(op, v, k++));
  if (op == Op::DescStore) {
    a.reduce = static_cast<StoreReduce>(at(op, v, k++));
  } else {
    for (int i = 0; i < a.rank; ++i) a.estride[static_cast<size_t>(i)] = static_cast<int32_t>(at(op, v, k++));
    a.fill = to_int(at(op, v, k++));
  }
  a.placement = to_int(at(op, v, k++));
  if (op == Op::DescLoad && k < v.size()) a.ring = static_cast<RingPosition>(at(op, v, k++));
  return a;
}
std::vector<int64_t> TmaAttrs::encode(Op op) const {
  std::vector<int64_t> v;
  v.push_back(rank);
  for (int i = 0; i < rank; ++i) v.push_back(box[static_cast<size_t>(i)]);
  if (op == Op::DescStore) {
    v.push_back(static_cast<int64_t>(reduce));
  } else {
    for (int i = 0; i < rank; ++i) v.push_back(estride[static_cast<size_t>(i)]);
    v.push_back(fill);
  }
  v.push_back(placement);
  if (op == Op::DescLoad && ring != RingPosition::none) v.push_back(static_cast<int64_t>(ring));
  return v;
}
ForAttrs ForAttrs::decode(Op op, std::span<const int64_t> v) { return {static_cast<uint32_t>(at(op, v, 0))}; }
IfAttrs IfAttrs::decode(Op op, std::span<const int64_t> v) {
  return {static_cast<uint32_t>(at(op, v, 0)), static_cast<uint32_t>(at(op, v, 1))};
}

namespace {
/// The number of attributes of schedule op `op` (a WgmmaWait: without the products it ends).
size_t schedule_count(Op op) {
  switch (op) {
    case Op::TmaIssue: case Op::PipeAdvance: case Op::PipeEnd: case Op::ReuseFence: case Op::CtaBarrier: return 1;
    case Op::TurnStart: case Op::TurnWait: case Op::TurnPass: return 1;
    case Op::PipeStage: case Op::WarpProducer: case Op::WgmmaWait: return 2;
    // [loop, stages, ring]; PipeWait: [loop, stages, load].
    case Op::PipeBegin: case Op::PipePrologue: case Op::PipeRefill: case Op::PipeRelease: case Op::PipeWait: return 3;
    // Not schedule ops.
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_TENSOR_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE)
    TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE)
    TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE)
    case Op::Dot:
      break;
  }
  throw InternalError("schedule attributes of " + std::string(name_of(op)) + ", not a schedule op");
}
}  // namespace

ScheduleAttrs ScheduleAttrs::decode(Op op, std::span<const int64_t> v) {
  ScheduleAttrs a;
  if (op == Op::WgmmaWait) {
    check_internal(v.size() >= 3, "schedule attributes: a wgmma.wait without its dots");
    a.pending = to_int(v[0]), a.when = static_cast<WaitFor>(v[1]);
    for (size_t k = 2; k < v.size(); ++k) a.dots.push_back(static_cast<NodeId>(v[k]));
    return a;
  }
  check_internal(v.size() == schedule_count(op), "schedule attributes: wrong attribute count");
  if (op == Op::CtaBarrier) {
    a.reason = static_cast<BarrierReason>(v[0]);
    return a;
  }
  a.node = static_cast<NodeId>(v[0]);
  if (v.size() > 1) a.stages = to_int(v[1]);
  if (op == Op::PipeWait) a.load = static_cast<NodeId>(v[2]);
  else if (v.size() > 2) a.ring_persists = v[2] != 0;
  return a;
}
std::vector<int64_t> ScheduleAttrs::encode(Op op) const {
  if (op == Op::WgmmaWait) {
    std::vector<int64_t> v{pending, static_cast<int64_t>(when)};
    v.insert(v.end(), dots.begin(), dots.end());
    return v;
  }
  if (op == Op::CtaBarrier) return {static_cast<int64_t>(reason)};
  // [loop, stages, ring] (PipeWait: [loop, stages, load]), or as many of them as the op has.
  std::vector<int64_t> v{node, stages, op == Op::PipeWait ? load : (ring_persists ? 1 : 0)};
  v.resize(schedule_count(op));
  return v;
}

bool well_formed(Op op, std::span<const int64_t> v) {
  const size_t n = v.size();
  switch (attrs_kind_of(op)) {
    case AttrsKind::NoAttrs: return n == 0;
    case AttrsKind::ParamAttrs: return n == (op == Op::ParamScalar ? 1u : 2u) && v[0] >= 0;
    case AttrsKind::DimAttrs: return n == 1 && in(v[0], 0, kMaxRank - 1);
    case AttrsKind::ArrayElemAttrs: return n == 2 && in(v[0], 1, kMaxRank) && in(v[1], 0, 2);
    case AttrsKind::MergeViewAttrs: return n >= 1 && n == static_cast<size_t>(v[0]) + 1 && in(v[0], 1, kMaxRank);
    case AttrsKind::MakeViewAttrs: return (n == 1 || (n == 2 && v[1] == 1)) && in(v[0], 1, kMaxRank);
    case AttrsKind::ConstAttrs: return n == 1;
    case AttrsKind::AxisAttrs: return n == 1 && in(v[0], 0, kMaxRank - 1);
    case AttrsKind::ArangeAttrs: return n == 1;
    case AttrsKind::PermuteAttrs: return n <= static_cast<size_t>(kMaxRank);
    case AttrsKind::ReduceAttrs: return n == 2 && in(v[0], 0, kMaxRank - 1) && v[1] > 0;
    case AttrsKind::IndexAttrs: return n == 1 && v[0] >= 0;
    case AttrsKind::DotAttrs: return n == 0 || (n == 1 && in(v[0], 0, 1));
    case AttrsKind::AccessAttrs:
      if (n < 1 || !in(v[0], 0, 1)) return false;
      if (op == Op::Load) return n == 1 || (n == 2 && in(v[1], 0, 2)) || (n == 3 && in(v[1], 0, 2) && in(v[2], 1, 2));
      if (op == Op::Store) return n == 1 || (n == 2 && in(v[1], 1, 2));
      return n == 1;
    case AttrsKind::TmaAttrs: {
      if (n < 1 || !in(v[0], 1, kMaxRank)) return false;
      const auto r = static_cast<size_t>(v[0]);
      if (op == Op::DescLoad && n == 2 * r + 4) return in(v[n - 1], 1, 2);  // a ring position
      return n == (op == Op::DescStore ? r + 3 : 2 * r + 3);
    }
    case AttrsKind::ForAttrs: return n == 1 && v[0] > 0;
    case AttrsKind::IfAttrs: return n == 2 && v[0] > 0 && v[1] > 0;
    case AttrsKind::ScheduleAttrs: return op == Op::WgmmaWait ? n > schedule_count(op) : n == schedule_count(op);
  }
  return false;
}

std::string attributes_text(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  const std::span<const int64_t> v = g.ints(id);
  if (!well_formed(op, v)) return positional(v);
  switch (attrs_kind_of(op)) {
    case AttrsKind::NoAttrs: return {};
    case AttrsKind::ConstAttrs: case AttrsKind::ForAttrs: case AttrsKind::IfAttrs:
      return {};  // the value is printed instead; region numbers are not shown
    case AttrsKind::ParamAttrs: return op == Op::ParamScalar ? fixed(v, {"param"}) : fixed(v, {"param", "rank"});
    case AttrsKind::DimAttrs: return fixed(v, {"dim"});
    case AttrsKind::ArrayElemAttrs: return "rank=" + std::to_string(v[0]) + ", prefetch=" + word(v[1], {"tensormap", "l2", "none"});
    case AttrsKind::MergeViewAttrs: return "rank=" + std::to_string(v[0]) + ", groups=" + list(v.subspan(1));
    case AttrsKind::MakeViewAttrs: return "rank=" + std::to_string(v[0]) + (attrs<MakeViewAttrs>(g, id).rows ? ", rows" : "");
    case AttrsKind::AxisAttrs: return fixed(v, {"axis"});
    case AttrsKind::ArangeAttrs: return fixed(v, {"start"});
    case AttrsKind::PermuteAttrs: return v.empty() ? std::string() : "perm=" + list(v);
    case AttrsKind::ReduceAttrs: return fixed(v.first(1), {"axis"});  // then the combine region
    case AttrsKind::IndexAttrs: return fixed(v, {"index"});
    case AttrsKind::DotAttrs: return v.empty() ? std::string() : "precision=" + word(v[0], {"ieee", "tf32"});
    case AttrsKind::AccessAttrs: {
      const AccessAttrs a = attrs<AccessAttrs>(g, id);
      return word(v[0], {"unmasked", "masked"}) +
             (a.ahead != LoadAhead::none ? ", ahead=" + word(static_cast<int64_t>(a.ahead), {"", "next", "first"}) : "") +
             (a.evict != Evict::normal ? ", evict=" + word(static_cast<int64_t>(a.evict), {"normal", "first", "last"}) : "");
    }
    case AttrsKind::TmaAttrs: return tma(op, v);
    case AttrsKind::ScheduleAttrs: return schedule(g, id);
  }
  return positional(v);
}

}  // namespace tilejit::ir
