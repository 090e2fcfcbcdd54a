// Graph construction, hash-consing, structural hashing and the TMA attribute layout.
#include <algorithm>
#include <bit>
#include <cstring>

#include "tilejit/error.h"
#include "tilejit/ir/ir.h"

namespace tilejit::ir {

namespace {
constexpr OpKind kKinds[] = {
#define TILEJIT_OP(Name, Kind, Text) OpKind::Kind,
#include "tilejit/ir/ops.def"
};
constexpr std::string_view kNames[] = {
#define TILEJIT_OP(Name, Kind, Text) Text,
#include "tilejit/ir/ops.def"
};

// FNV-1a over 64-bit words followed by a murmur-style finaliser: cheap and stable.
struct Hasher {
  uint64_t h = 1469598103934665603ull;
  void add(uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  void add(std::string_view s) {
    add(s.size());
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  uint64_t done() const {
    uint64_t x = h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
  }
};
}  // namespace

OpKind kind_of(Op op) { return kKinds[static_cast<int>(op)]; }
std::string_view name_of(Op op) { return kNames[static_cast<int>(op)]; }

Shape::Shape(std::initializer_list<int64_t> d) {
  check_internal(d.size() <= kMaxRank, "shape rank above 5");
  rank = static_cast<uint8_t>(d.size());
  int i = 0;
  for (int64_t v : d) dims[i++] = static_cast<int32_t>(v);
}

Shape Shape::of(std::span<const int64_t> d) {
  check_internal(d.size() <= kMaxRank, "shape rank above 5");
  Shape s;
  s.rank = static_cast<uint8_t>(d.size());
  for (size_t i = 0; i < d.size(); ++i) s.dims[i] = static_cast<int32_t>(d[i]);
  return s;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != o.dims[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

Graph::Graph() {
  regions_.push_back(Region{});
  region_stack_.push_back(0);
  locations_.push_back(Location{});
}

uint32_t Graph::new_region(NodeId owner) {
  regions_.push_back(Region{{}, owner});
  return static_cast<uint32_t>(regions_.size() - 1);
}

NodeId Graph::insert(Op op, std::span<const int64_t> ints, NodeId anchor, bool after) {
  check_internal(anchor >= 0 && static_cast<size_t>(anchor) < nodes_.size(), "insert: anchor out of range");
  const Node& a = nodes_[static_cast<size_t>(anchor)];
  const uint32_t region = a.region;
  Node n{op, DType::i32, Shape{}, region, static_cast<uint32_t>(operands_.size()), 0,
         static_cast<uint32_t>(ints_.size()), static_cast<uint32_t>(ints.size()), a.loc};
  ints_.insert(ints_.end(), ints.begin(), ints.end());
  const auto id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(n);
  auto& list = regions_[region].nodes;
  auto at = std::find(list.begin(), list.end(), anchor);
  check_internal(at != list.end(), "insert: anchor not in its region");
  list.insert(after ? at + 1 : at, id);
  return id;
}

void Graph::set_location(const char* file, uint32_t line) {
  const Location& cur = locations_[current_loc_];
  if (cur.line == line && cur.file == file) return;
  for (uint32_t i = 0; i < locations_.size(); ++i) {
    if (locations_[i].line == line && locations_[i].file == file) {
      current_loc_ = i;
      return;
    }
  }
  locations_.push_back(Location{file, line});
  current_loc_ = static_cast<uint32_t>(locations_.size() - 1);
}

NodeId Graph::add(Op op, DType dtype, const Shape& shape, std::span<const NodeId> operands,
                  std::span<const int64_t> ints) {
  const uint32_t region = current_region();
  const bool pure = kind_of(op) == OpKind::Pure;
  uint64_t key = 0;
  if (pure) {
    Hasher h;
    h.add(region);
    h.add(static_cast<uint64_t>(op));
    h.add(static_cast<uint64_t>(dtype));
    h.add(shape.rank);
    for (int i = 0; i < shape.rank; ++i) h.add(static_cast<uint64_t>(shape.dims[i]));
    h.add(operands.size());
    for (NodeId o : operands) h.add(static_cast<uint64_t>(o));
    h.add(ints.size());
    for (int64_t v : ints) h.add(static_cast<uint64_t>(v));
    key = h.done();
    auto it = cse_.find(key);
    if (it != cse_.end()) {
      for (NodeId cand : it->second) {
        const Node& c = nodes_[static_cast<size_t>(cand)];
        if (c.op == op && c.dtype == dtype && c.region == region && c.shape == shape &&
            std::equal(operands.begin(), operands.end(), this->operands(cand).begin(),
                       this->operands(cand).end()) &&
            std::equal(ints.begin(), ints.end(), this->ints(cand).begin(), this->ints(cand).end()))
          return cand;
      }
    }
  }
  for (NodeId o : operands)
    check_internal(o >= 0 && static_cast<size_t>(o) < nodes_.size(), "operand id out of range");
  Node n{op, dtype, shape, region,
         static_cast<uint32_t>(operands_.size()), static_cast<uint32_t>(operands.size()),
         static_cast<uint32_t>(ints_.size()), static_cast<uint32_t>(ints.size()), current_loc_};
  operands_.insert(operands_.end(), operands.begin(), operands.end());
  ints_.insert(ints_.end(), ints.begin(), ints.end());
  const auto id = static_cast<NodeId>(nodes_.size());
  nodes_.push_back(n);
  regions_[region].nodes.push_back(id);
  if (pure) cse_[key].push_back(id);
  return id;
}

double Graph::const_f(NodeId id) const {
  const Node& n = node(id);
  check_internal(n.op == Op::Const, "const_f of a non-constant");
  const int64_t bits = int_at(id, 0);
  return is_float(n.dtype) ? std::bit_cast<double>(bits) : static_cast<double>(bits);
}

int64_t Graph::const_i(NodeId id) const {
  const Node& n = node(id);
  check_internal(n.op == Op::Const, "const_i of a non-constant");
  const int64_t bits = int_at(id, 0);
  return is_float(n.dtype) ? static_cast<int64_t>(std::bit_cast<double>(bits)) : bits;
}

uint64_t Graph::hash() const {
  Hasher h;
  h.add(kernel_name);
  h.add(params.size());
  for (const Param& p : params) {
    h.add(p.kind);
    h.add(static_cast<uint64_t>(p.dtype));
    h.add(static_cast<uint64_t>(p.rank));
    h.add(p.name);
  }
  h.add(config.size());
  for (const auto& [k, v] : config) {
    h.add(k);
    h.add(static_cast<uint64_t>(v));
  }
  h.add(static_cast<uint64_t>(num_warps));
  h.add(static_cast<uint64_t>(num_stages));
  if (min_programs_per_sm > 0) h.add(static_cast<uint64_t>(min_programs_per_sm) + 0x5000);
  if (warp_specialize != WarpSpecialize::automatic) h.add(0x5753 + static_cast<uint64_t>(warp_specialize));
  h.add(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    h.add(static_cast<uint64_t>(n.op));
    h.add(static_cast<uint64_t>(n.dtype));
    h.add(n.region);
    h.add(n.shape.rank);
    for (int d = 0; d < n.shape.rank; ++d) h.add(static_cast<uint64_t>(n.shape.dims[d]));
    for (NodeId o : operands(static_cast<NodeId>(i))) h.add(static_cast<uint64_t>(o));
    h.add(0xfeedull);
    for (int64_t v : ints(static_cast<NodeId>(i))) h.add(static_cast<uint64_t>(v));
  }
  h.add(regions_.size());
  for (const Region& r : regions_) {
    h.add(static_cast<uint64_t>(r.owner));
    for (NodeId id : r.nodes) h.add(static_cast<uint64_t>(id));
  }
  return h.done();
}

std::vector<uint32_t> regions_of(const Graph& g, NodeId id) {
  switch (g.node(id).op) {
    case Op::For: return {static_cast<uint32_t>(g.int_at(id, 0))};
    case Op::If: return {static_cast<uint32_t>(g.int_at(id, 0)), static_cast<uint32_t>(g.int_at(id, 1))};
    case Op::Reduce: return {combine_region(g, id)};
    default: return {};
  }
}

TmaAttrs tma_attrs(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  auto v = g.ints(id);
  TmaAttrs a;
  a.rank = static_cast<int>(v[0]);
  size_t k = 1;
  for (int i = 0; i < a.rank; ++i) a.box[i] = static_cast<int32_t>(v[k++]);
  if (n.op == Op::DescLoad || n.op == Op::DescPrefetch) {
    for (int i = 0; i < a.rank; ++i) a.estride[i] = static_cast<int32_t>(v[k++]);
    a.fill = static_cast<int>(v[k++]);
  } else if (n.op == Op::DescStore) {
    a.reduce = static_cast<int>(v[k++]);
  } else {
    throw InternalError("tma_attrs of a non-TMA node");
  }
  a.placement = static_cast<int>(v[k++]);
  return a;
}

bool is_schedule_op(Op op) {
  switch (op) {
    case Op::TmaIssue: case Op::PipeBegin: case Op::PipePrologue: case Op::PipeStage: case Op::PipeWait:
    case Op::PipeRefill: case Op::PipeAdvance: case Op::PipeEnd: case Op::WgmmaWait: case Op::CtaBarrier:
    case Op::ReuseFence: case Op::PipeRelease: case Op::WarpProducer:
      return true;
    default:
      return false;
  }
}

ScheduleAttrs schedule_attrs(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  const auto v = g.ints(id);
  ScheduleAttrs a;
  if (op == Op::WgmmaWait) {
    check_internal(v.size() >= 3, "schedule_attrs: a wgmma.wait without its dots");
    a.pending = static_cast<int>(v[0]), a.when = static_cast<WaitFor>(v[1]);
    for (size_t k = 2; k < v.size(); ++k) a.dots.push_back(static_cast<NodeId>(v[k]));
    return a;
  }
  check_internal(v.size() == encode_schedule_attrs(op, {}).size(), "schedule_attrs: wrong attribute count");
  if (op == Op::CtaBarrier) {
    a.reason = static_cast<BarrierReason>(v[0]);
    return a;
  }
  a.node = static_cast<NodeId>(v[0]);
  if (v.size() > 1) a.stages = static_cast<int>(v[1]);
  if (op == Op::PipeWait) a.load = static_cast<NodeId>(v[2]);
  else if (v.size() > 2) a.ring_persists = v[2] != 0;
  return a;
}

std::vector<int64_t> encode_schedule_attrs(Op op, const ScheduleAttrs& a) {
  switch (op) {
    case Op::TmaIssue: case Op::PipeAdvance: case Op::PipeEnd: case Op::ReuseFence: return {a.node};
    case Op::PipeBegin: case Op::PipePrologue: case Op::PipeRefill: case Op::PipeRelease:
      return {a.node, a.stages, a.ring_persists ? 1 : 0};
    case Op::PipeStage: case Op::WarpProducer: return {a.node, a.stages};
    case Op::PipeWait: return {a.node, a.stages, a.load};
    case Op::WgmmaWait: {
      std::vector<int64_t> v{a.pending, static_cast<int64_t>(a.when)};
      v.insert(v.end(), a.dots.begin(), a.dots.end());
      return v;
    }
    case Op::CtaBarrier: return {static_cast<int64_t>(a.reason)};
    default: throw InternalError("encode_schedule_attrs of " + std::string(name_of(op)) + ", not a schedule op");
  }
}

std::vector<int64_t> encode_tma_attrs(Op op, const TmaAttrs& a) {
  std::vector<int64_t> v;
  v.push_back(a.rank);
  for (int i = 0; i < a.rank; ++i) v.push_back(a.box[i]);
  if (op == Op::DescStore) {
    v.push_back(a.reduce);
  } else {
    for (int i = 0; i < a.rank; ++i) v.push_back(a.estride[i]);
    v.push_back(a.fill);
  }
  v.push_back(a.placement);
  return v;
}

}  // namespace tilejit::ir
