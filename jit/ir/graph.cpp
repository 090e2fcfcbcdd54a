// Graph construction, hash-consing, structural hashing, and the tables of ops.def.
#include <algorithm>
#include <bit>
#include <cstring>

#include "tilejit/error.h"
#include "tilejit/ir/ir.h"

namespace tilejit::ir {

namespace {
// ops.def's columns as tables indexed by Op.
constexpr int Variadic = kVariadic;
constexpr bool value = true, none = false;
struct OpRow {
  OpKind kind;
  OpCategory category;
  int operands;
  AttrsKind attrs;
  bool yields_value;
  std::string_view name;
};
constexpr OpRow kOps[] = {
#define TILEJIT_OP(Name, Kind, Category, Operands, Attrs, Result, Text) \
  {OpKind::Kind, OpCategory::Category, Operands, AttrsKind::Attrs, Result, Text},
#include "tilejit/ir/ops.def"
};
const OpRow& row(Op op) { return kOps[static_cast<size_t>(op)]; }

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

OpKind kind_of(Op op) { return row(op).kind; }
OpCategory category_of(Op op) { return row(op).category; }
AttrsKind attrs_kind_of(Op op) { return row(op).attrs; }
int operand_count(Op op) { return row(op).operands; }
bool yields_value(Op op) { return row(op).yields_value; }
std::string_view name_of(Op op) { return row(op).name; }
std::string_view name_of(OpCategory c) {
  switch (c) {
    case OpCategory::tensor: return "tensor";
    case OpCategory::leaf: return "leaf";
    case OpCategory::movement: return "movement";
    case OpCategory::cast: return "cast";
    case OpCategory::unary: return "unary";
    case OpCategory::binary: return "binary";
    case OpCategory::compare: return "compare";
    case OpCategory::select: return "select";
    case OpCategory::ternary: return "ternary";
    case OpCategory::reduction: return "reduction";
    case OpCategory::product: return "product";
    case OpCategory::memory: return "memory";
    case OpCategory::tma: return "tma";
    case OpCategory::control: return "control";
    case OpCategory::schedule: return "schedule";
  }
  return "?";
}

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

Shape Shape::squeezed() const {
  Shape s;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != 1) s.dims[s.rank++] = dims[i];
  return s;
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
  if (overlap_products != OverlapProducts::automatic) h.add(0x4f50 + static_cast<uint64_t>(overlap_products));
  if (pingpong != Pingpong::automatic) h.add(0x5050 + static_cast<uint64_t>(pingpong));
  if (cluster_x * cluster_y > 1) h.add(0x434c00 + static_cast<uint64_t>(cluster_x * 16 + cluster_y));
  if (!fp_contract) h.add(0x4643);
  if (producer_registers > 0) h.add(0x505200 + static_cast<uint64_t>(producer_registers));
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
  const Op op = g.node(id).op;
  if (op == Op::For) return {attrs<ForAttrs>(g, id).body};
  if (op == Op::If) return {attrs<IfAttrs>(g, id).then_region, attrs<IfAttrs>(g, id).else_region};
  if (op == Op::Reduce) return {combine_region(g, id)};
  return {};
}

}  // namespace tilejit::ir
