// The integer attributes of a node by name ("box=[64, 32], fill=zero"), as the printer shows them.
#include <initializer_list>

#include "tilejit/ir/ir.h"

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

/// DescLoad / DescPrefetch [rank, box..., estride..., fill, placement]; DescStore [rank, box..., reduce, placement].
std::string tma(Op op, std::span<const int64_t> v) {
  const int64_t rank = v.empty() ? 0 : v[0];
  const bool store = op == Op::DescStore;
  const size_t want = store ? static_cast<size_t>(rank) + 3 : 2 * static_cast<size_t>(rank) + 3;
  if (rank < 1 || rank > kMaxRank || v.size() != want) return positional(v);
  const auto r = static_cast<size_t>(rank);
  std::string s = "box=" + list(v.subspan(1, r));
  if (store) return s + ", reduce=" + word(v[1 + r], {"none", "add", "min", "max"}) + ", " + placement(v[2 + r]);
  return s + ", estride=" + list(v.subspan(1 + r, r)) + ", fill=" + word(v[1 + 2 * r], {"zero", "nan"}) + ", " +
         placement(v[2 + 2 * r]);
}
std::string ref(NodeId n) { return "%" + std::to_string(n); }

/// A schedule op's attributes (ScheduleAttrs), the nodes it names as %ids.
std::string schedule(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  const size_t want = encode_schedule_attrs(op, {}).size();
  if (op == Op::WgmmaWait ? g.ints(id).size() <= want : g.ints(id).size() != want) return positional(g.ints(id));
  const ScheduleAttrs a = schedule_attrs(g, id);
  switch (op) {
    case Op::TmaIssue: return "load=" + ref(a.node);
    case Op::ReuseFence:  // the node it precedes may be an effect, printed without its id
      return "before=" + ref(a.node) + " " + std::string(name_of(g.node(a.node).op));
    case Op::WgmmaWait: {
      std::string dots;
      for (NodeId d : a.dots) dots += (dots.empty() ? "" : ", ") + ref(d);
      return "of=[" + dots + "], pending=" + std::to_string(a.pending) +
             ", ends=" + word(static_cast<int64_t>(a.when), {"this", "previous_iteration", "last_iteration"});
    }
    case Op::CtaBarrier:
      return "reason=" + word(static_cast<int64_t>(a.reason), {"stage_free_in_flight", "stage_free"});
    case Op::PipeAdvance: case Op::PipeEnd: return "loop=" + ref(a.node);
    case Op::PipeStage: case Op::WarpProducer: return "loop=" + ref(a.node) + ", stages=" + std::to_string(a.stages);
    case Op::PipeWait:
      return "loop=" + ref(a.node) + ", stages=" + std::to_string(a.stages) + ", phase=(position / " +
             std::to_string(a.stages) + ") & 1, first=" + ref(a.load);
    default:
      return "loop=" + ref(a.node) + ", stages=" + std::to_string(a.stages) + ", ring=" + (a.ring_persists ? "kernel" : "run");
  }
}
}  // namespace

std::string attributes_text(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  const std::span<const int64_t> v = g.ints(id);
  switch (op) {
    case Op::Const: case Op::For: case Op::If: return {};  // the value is printed instead; region numbers are not shown
    case Op::ParamTensor: case Op::ParamTensorArray: return fixed(v, {"param", "rank"});
    case Op::ParamScalar: return fixed(v, {"param"});
    case Op::TensorSize: case Op::TensorStride: return fixed(v, {"dim"});
    case Op::ArrayElem:
      if (v.size() != 2) return positional(v);
      return "rank=" + std::to_string(v[0]) + ", prefetch=" + word(v[1], {"tensormap", "l2", "none"});
    case Op::MergeView:
      if (v.empty()) return {};
      return "rank=" + std::to_string(v[0]) + ", groups=" + list(v.subspan(1));
    case Op::MakeView:
      if (v.size() == 2 && v[1] == 1) return "rank=" + std::to_string(v[0]) + ", rows";
      return v.size() == 2 && v[1] == 0 ? fixed(v.first(1), {"rank"}) : fixed(v, {"rank"});
    case Op::ProgramId: case Op::NumPrograms: return fixed(v, {"axis"});
    case Op::Arange: return fixed(v, {"start"});
    case Op::Permute: return v.empty() ? std::string() : "perm=" + list(v);
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax: return fixed(v, {"axis"});
    case Op::Reduce: return v.empty() ? std::string() : fixed(v.first(1), {"axis"});  // then the combine region
    case Op::CombineArg: case Op::ReduceResult: case Op::LoopArg: case Op::LoopResult: case Op::IfResult:
      return fixed(v, {"index"});
    case Op::Dot: return v.size() == 1 ? "precision=" + word(v[0], {"ieee", "tf32"}) : positional(v);
    case Op::Load: case Op::Store: case Op::AtomicAdd: {
      const size_t most = op == Op::Load ? 2 : 1;  // [has_mask], a Load [has_mask, (ahead)]
      const auto flag = [](int64_t x) { return x == 0 || x == 1; };
      if (v.empty() || v.size() > most || !flag(v[0]) || (v.size() == 2 && (v[1] < 0 || v[1] > 2))) return positional(v);
      return word(v[0], {"unmasked", "masked"}) + (v.size() == 2 && v[1] > 0 ? ", ahead=" + word(v[1], {"", "next", "first"}) : "");
    }
    case Op::DescLoad: case Op::DescStore: case Op::DescPrefetch: return tma(op, v);
    default:
      if (is_schedule_op(op)) return schedule(g, id);
      return positional(v);
  }
}

}  // namespace tilejit::ir
