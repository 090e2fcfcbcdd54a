// The Emitter's helpers that every concern shares (see emitter.h): writing lines, naming and declaring values,
// the layout terms of register and thread indices, copies between registers and shared memory, and the
// pointers, sizes and descriptors of tensors.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/emitter.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::codegen::detail {

std::string coord(const std::string& e, const ir::Shape& s, int d) {
  const auto st = row_major(s);
  std::string x = st[static_cast<size_t>(d)] == 1 ? e : e + " / " + str(st[static_cast<size_t>(d)]);
  if (d > 0) x = (st[static_cast<size_t>(d)] == 1 ? x : "(" + x + ")") + " % " + str(s.dims[d]);
  return x;
}

std::string add_term(const std::string& acc, const std::string& term, int64_t factor) {
  if (factor == 0) return acc;
  const bool compound = term.find(' ') != std::string::npos;
  const std::string t = factor == 1 ? term : (compound ? "(" + term + ")" : term) + " * " + str(factor);
  return acc.empty() ? t : acc + " + " + t;
}

Emitter::Emitter(const passes::Lowered& l, const Options& opt, std::string entry)
    : L_(l), g_(l.graph), opt_(opt), entry_(std::move(entry)), threads_(l.layout.threads) {
  name_.resize(g_.size());
  for (const auto& [dot, m] : L_.mma.dots)
    if (m.acc == DType::f16) packed_.insert({dot, g_.operand(dot, 2)});
  plan_loads_as_f32();
  for (const Descriptor& d : L_.tma.descriptors)
    if (d.kind == DescKind::Device) builds_[d.build_at].push_back(&d);
  for (const Descriptor& d : L_.tma.descriptors) {
    if (d.kind != DescKind::Array) continue;
    std::set<NodeId> elems;
    for (NodeId u : d.uses) elems.insert(passes::detail::resolve_tensor(g_, g_.operand(u, 0)).array_elem);
    for (NodeId e : elems) array_prefetch_[e].push_back(&d);
  }
}

void Emitter::line(const std::string& s) { out_ += std::string(static_cast<size_t>(depth_) * 2, ' ') + s + "\n"; }

void Emitter::line(const std::string& s, NodeId at) { line(s + "  // " + note(at)); }

void Emitter::open(const std::string& s) {
  line(s.empty() ? "{" : s + " {");
  ++depth_;
}

void Emitter::open(const std::string& s, NodeId at) {
  line((s.empty() ? "{" : s + " {") + "  // " + note(at));
  ++depth_;
}

void Emitter::sync(const std::string& why) {
  const std::string b = consumers_only_ ? "tj::consumer_sync<" + str(threads_) + ">();" : "__syncthreads();";
  line(why.empty() ? b : b + "  // " + why);
}

void Emitter::planned_barrier(const std::unordered_map<NodeId, std::string>& where, NodeId id) {
  if (auto it = where.find(id); it != where.end()) sync(it->second);
}

void Emitter::close() {
  --depth_;
  line("}");
}

std::string Emitter::where(NodeId id) const {
  const ir::Location& l = g_.location(id);
  return l.file.empty() ? "%" + str(id) : detail::base_name(l.file) + ":" + str(l.line);
}

std::string Emitter::note(NodeId id) const { return std::string(ir::name_of(g_.node(id).op)) + "  " + where(id); }

NodeId Emitter::loop_index(NodeId f) const {
  for (NodeId b : g_.region(ir::loop_body(g_, f)).nodes)
    if (g_.node(b).op == Op::LoopIndex) return b;
  return ir::kNoNode;
}

std::string Emitter::at(NodeId id, const std::string& i) const {
  const std::string& n = name_[static_cast<size_t>(id)];
  check_internal(!n.empty(), "emitter: value used before it was emitted");
  return uniform(id) ? n : n + "[" + i + "]";
}

std::string Emitter::decl_stmt(NodeId id) { return decl(id, lay(id).padded() ? " = {}" : "") + ";"; }

std::string Emitter::decl(NodeId id, const std::string& init) {
  const std::string n = var(id);
  name_[static_cast<size_t>(id)] = n;
  const ValueLayout& v = lay(id);
  const std::string t = reg_type(g_.node(id).dtype);
  if (v.kind == ValueLayout::Uniform) return t + " " + n + init;
  if (packed_.count(id)) {
    // An f16 wgmma accumulator: its registers as wgmma sees them are `vN_p.w[j]`; `vN` names its elements.
    packed_names_.insert(n);
    return "tj::PackedF16<" + str(v.regs()) + "> " + n + "_p" + init + "; " + t + " (&" + n + ")[" + str(v.regs()) +
           "] = " + n + "_p.h";
  }
  return t + " " + n + "[" + str(v.regs()) + "]" + init;
}

bool Emitter::packed_storage(NodeId id) const { return packed_names_.count(name_[static_cast<size_t>(id)]) > 0; }

std::string Emitter::accumulator_registers(NodeId id, int* count) const {
  const std::string& n = name_[static_cast<size_t>(id)];
  const int regs = lay(id).regs();
  if (!packed_storage(id)) {
    *count = regs;
    return n;
  }
  *count = regs / 2;
  return n + "_p.w";
}

std::string Emitter::register_fence(NodeId id) const {
  int count = 0;
  const std::string r = accumulator_registers(id, &count);
  return "tj::fence_registers<" + str(count) + ">(" + r + ");";
}

std::string Emitter::digit(const layout::Term& t, const std::string& reg) {
  const bool is_reg = t.axis == layout::Axis::Reg;
  const int64_t div = t.div * (t.axis == layout::Axis::Warp ? layout::kLanes : 1);
  int64_t mod = t.mod;
  if (t.axis == layout::Axis::Lane && mod == 0) mod = layout::kLanes / t.div;  // tid also holds the warp
  std::string x = is_reg ? reg : "tid";
  if (div != 1) x += " / " + str(div);
  if (mod != 0) x += " % " + str(mod);
  return x;
}

std::string Emitter::terms(const std::vector<layout::Term>& ts, const std::string& reg) {
  std::string s;
  for (const layout::Term& t : ts) s = add_term(s, digit(t, reg), t.mul);
  return s.empty() ? "0" : s;
}

std::string Emitter::elem(const ValueLayout& v, const std::string& i) const { return terms(v.dist.linear_terms(), i); }

std::string Emitter::guard(const ValueLayout& v, const std::string& i) const { return guard_of(v.dist, i); }

std::string Emitter::guard_of(const layout::Layout& l, const std::string& i) {
  std::string g;
  for (int d : l.padded_dims()) g += (g.empty() ? "" : " && ") + terms(l.coord_terms(d), i) + " < " + str(l.shape().dims[d]);
  return g;
}

std::string Emitter::owner(const ValueLayout& v) const {
  std::string o;
  for (const layout::Term& t : v.dist.replica_terms()) o += (o.empty() ? "" : " && ") + digit(t, "i") + " == 0";
  return o;
}

bool Emitter::mentions(const std::string& text, std::string_view name) {
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  for (size_t p = text.find(name); p != std::string::npos; p = text.find(name, p + 1))
    if ((p == 0 || !ident(text[p - 1])) && (p + name.size() == text.size() || !ident(text[p + name.size()]))) return true;
  return false;
}

std::string Emitter::plus(const std::string& a, const std::string& b) {
  return a == "0" ? b : b == "0" ? a : a + " + " + b;
}

std::string Emitter::both(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + " && " + b;
}

void Emitter::element_loop(NodeId id, bool need_e, bool guarded, const std::vector<std::string>& body, bool owned) {
  const ValueLayout& v = lay(id);
  if (v.kind == ValueLayout::Uniform) {
    if (need_e) {
      open("");
      bool uses_e = false;
      for (const auto& s : body) uses_e = uses_e || mentions(s, "e");
      if (uses_e) line("const int e = 0;");
      for (const auto& s : body) line(s);
      close();
    } else {
      for (const auto& s : body) line(s);
    }
    return;
  }
  const std::string g = both(guarded ? guard(v, "i") : "", owned ? owner(v) : "");
  line("#pragma unroll");
  if (!need_e && g.empty() && body.size() == 1) {
    line("for (int i = 0; i < " + str(v.regs()) + "; ++i) " + body[0]);
    return;
  }
  open("for (int i = 0; i < " + str(v.regs()) + "; ++i)");
  if (!g.empty()) open("if (" + g + ")");
  if (need_e) line("const int e = " + elem(v, "i") + ";");
  for (const auto& s : body) line(s);
  if (!g.empty()) close();
  close();
}

void Emitter::write_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging, const std::string& sink) {
  copy_chunks(id, ptr, true, staging, sink);
}

std::string Emitter::staged_index(const layout::SharedLayout* staging, const std::string& e) {
  if (!staging) return e;
  const int64_t inner = staging->shape.dims[staging->shape.rank - 1];
  if (staging->xor_unit > 0)
    return "tj::xor_index<" + str(inner) + ", " + str(staging->xor_unit) + ", " + str(staging->xor_div) + ", " +
           str(staging->xor_mod) + ">(" + e + ")";
  if (staging->pad_elems > 0) return "tj::padded_index<" + str(inner) + ", " + str(staging->pad_elems) + ">(" + e + ")";
  return e;
}

std::string Emitter::staging_note(const layout::SharedLayout* staging) {
  if (!staging) return "";
  if (staging->xor_unit > 0)
    return "units of " + str(staging->xor_unit) + " elements XOR-swizzled by (row / " + str(staging->xor_div) + ") % " +
           str(staging->xor_mod) + " against bank conflicts";
  if (staging->pad_elems > 0) return "rows padded by " + str(staging->pad_elems) + " elements against bank conflicts";
  return "";
}

void Emitter::write_swizzled(NodeId id, const std::string& ptr, int swizzle, const layout::SwizzledWrites& w,
                             const std::string& sink) {
  check_internal(w.per_thread_xor, "write_swizzled: a swizzled store whose XOR is not per thread");
  const ValueLayout& v = lay(id);
  const int vw = v.dist.vector_width();
  const int eb = ir::size_of(g_.node(id).dtype);
  const int64_t rows = layout::SharedLayout{v.dist.shape(), eb, swizzle, 0}.row_count();
  const std::string g = both(guard(v, "i"), owner(v));
  open("");
  line("const int tj_sw_row = " + terms(w.row_thread, "i") + ", tj_sw_col = " + terms(w.col_thread, "i") +
       ";  // this thread's part of the tile row and column");
  const std::string col_bytes = "tj_sw_col * " + str(eb);
  line("const int tj_sw_base = tj_sw_row * " + str(swizzle) + (w.col_thread_in_xor ? "" : " + " + col_bytes) +
       ", tj_sw_xor = tj::swizzle_xor<" + str(swizzle) + ">(tj_sw_row);");
  line("unsigned char* const tj_sw_tile = reinterpret_cast<unsigned char*>(" + ptr + ") + tj_sw_base;");
  line("#pragma unroll");
  std::string dst = "reinterpret_cast<" + mem_type(g_.node(id).dtype) + "*>(tj_sw_tile + tj::swizzled_register_offset<" + str(rows) +
                    ", " + str(eb) + ", " + str(swizzle) + ">(" + terms(w.row_reg, "i") + ", " + terms(w.col_reg, "i") + ", tj_sw_xor" +
                    (w.col_thread_in_xor ? ", " + col_bytes : std::string()) + "))";
  const bool to_sink = !sink.empty() && !g.empty();
  if (to_sink) dst = "(" + g + " ? " + dst + " : " + sink + ")";
  line("for (int i = 0; i < " + str(v.regs()) + "; i += " + str(vw) + ") " + (g.empty() || to_sink ? "" : "if (" + g + ") ") +
       "tj::sts<" + str(vw) + ">(" + dst + ", &" + name_[static_cast<size_t>(id)] + "[i]);");
  close();
}

void Emitter::read_chunks(NodeId id, const std::string& ptr, const std::string& comment, const layout::SharedLayout* staging) {
  line(decl_stmt(id) + "  // " + comment);
  fill_chunks(id, ptr, staging);
}

void Emitter::fill_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging) {
  copy_chunks(id, ptr, false, staging);
}

void Emitter::copy_chunks(NodeId id, const std::string& ptr, bool to_shared, const layout::SharedLayout* staging,
                          const std::string& sink) {
  const ValueLayout& v = lay(id);
  const std::string n = name_[static_cast<size_t>(id)];
  // A swizzled tile keeps only the elements of one unit consecutive: a longer run of registers is
  // copied a unit at a time, each unit at its own swizzled place.
  const int vw = staging && staging->xor_unit > 0 ? static_cast<int>(std::min<int64_t>(v.dist.vector_width(), staging->xor_unit))
                                                  : v.dist.vector_width();
  const std::string g = both(guard(v, "i"), to_shared ? owner(v) : "");
  const std::string at = staged_index(staging, elem(v, "i"));
  const bool to_sink = to_shared && !sink.empty() && !g.empty();
  const std::string dst = to_sink ? "(" + g + " ? " + ptr + " + " + at + " : " + sink + ")" : ptr + " + " + at;
  const std::string call = to_shared ? "tj::sts<" + str(vw) + ">(" + dst + ", &" + n + "[i]);"
                                     : "tj::lds<" + str(vw) + ">(&" + n + "[i], " + ptr + " + " + at + ");";
  line("#pragma unroll");
  line("for (int i = 0; i < " + str(v.regs()) + "; i += " + str(vw) + ") " + (g.empty() || to_sink ? "" : "if (" + g + ") ") + call);
}

std::string Emitter::buffer_ptr(int buffer, DType t) const {
  const passes::SmemBuffer& b = L_.smem.buffers[static_cast<size_t>(buffer)];
  const DType own = g_.node(b.node).dtype;
  const std::string n = "tj_buf" + str(buffer);
  if (mem_type(own) == mem_type(t)) return n;
  return "reinterpret_cast<" + mem_type(t) + "*>(" + n + ")";
}

std::string Emitter::scratch_ptr(int offset, DType t) const {
  return "reinterpret_cast<" + mem_type(t) + "*>(tj_scratch" + (offset ? " + " + str(offset) : std::string()) + ")";
}

void Emitter::scratch_barrier(NodeId user) {
  check_internal(L_.barriers.scratch_users.count(user) > 0, "emitter: an op the barrier plan does not know writes the scratch arena");
  planned_barrier(L_.barriers.before_scratch, user);
}

std::pair<std::string, bool> Emitter::shared_source(NodeId user, NodeId v, int offset, const layout::SharedLayout* staging,
                                             bool first) {
  const DType t = g_.node(v).dtype;
  auto it = L_.smem.resident.find(v);
  if (it != L_.smem.resident.end()) return {buffer_ptr(it->second, t), false};
  if (first) scratch_barrier(user);
  const std::string p = scratch_ptr(offset, t);
  if (uniform(v)) {
    line("if (tid == 0) " + p + "[0] = " + at(v) + ";");
  } else {
    write_chunks(v, p, staging);
  }
  return {p, true};
}

std::string Emitter::load_elem(const std::string& ptr, const std::string& idx, DType t) const {
  return t == DType::i1 ? "(" + ptr + "[" + idx + "] != 0)" : ptr + "[" + idx + "]";
}

std::string Emitter::hinted_load_elem(const std::string& ptr, const std::string& idx, DType t, const std::string& evict) const {
  const std::string e = "tj::ldg1<" + evict + ">(" + ptr + " + " + idx + ")";
  return t == DType::i1 ? "(" + e + " != 0)" : e;
}

std::string Emitter::tensor_ptr(NodeId tensor) const {
  const ir::Node& n = g_.node(tensor);
  switch (n.op) {
    case Op::ParamTensor: {
      const int p = ir::attrs<ir::ParamAttrs>(g_, tensor).param;
      return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, passes::TensorField::base, 0))];
    }
    case Op::MergeView: return tensor_ptr(g_.operand(tensor, 0));
    case Op::MakeView: return var(tensor);
    // The elements of a TensorArray are reached through TMA only (plan_arguments rejects pointer accesses).
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE) TILEJIT_MOVEMENT_OPS(TILEJIT_CASE)
    TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE)
    TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::ParamTensorArray: case Op::ArrayElem: case Op::Dot:
      break;
  }
  throw InternalError("emitter: no pointer for tensor node %" + str(tensor));
}

std::string Emitter::tensor_field(NodeId tensor, passes::TensorField field, int d) const {
  using F = passes::TensorField;
  check_internal(field != F::base, "emitter: tensor_field of a base address");
  const ir::Node& n = g_.node(tensor);
  switch (n.op) {
    case Op::ParamTensor: {
      const int p = ir::attrs<ir::ParamAttrs>(g_, tensor).param;
      return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, field, d))];
    }
    case Op::MakeView: {
      const int rank = ir::attrs<ir::MakeViewAttrs>(g_, tensor).rank;
      return at(g_.operand(tensor, (field == F::size ? 2 : 2 + rank) + d));
    }
    case Op::MergeView: {
      const NodeId src = g_.operand(tensor, 0);
      int first = 0;
      const std::vector<int64_t> groups = ir::attrs<ir::MergeViewAttrs>(g_, tensor).groups;
      for (int k = 0; k < d; ++k) first += static_cast<int>(groups[static_cast<size_t>(k)]);
      const int count = static_cast<int>(groups[static_cast<size_t>(d)]);
      if (field == F::stride) return tensor_field(src, F::stride, first + count - 1);
      std::string prod;
      for (int k = 0; k < count; ++k) prod += (k ? " * " : "") + tensor_field(src, F::size, first + k);
      return count == 1 ? prod : "(" + prod + ")";
    }
    // The elements of a TensorArray are reached through TMA only (plan_arguments rejects size and stride reads).
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_LEAF_OPS(TILEJIT_CASE) TILEJIT_MOVEMENT_OPS(TILEJIT_CASE)
    TILEJIT_REDUCTION_OPS(TILEJIT_CASE) TILEJIT_MEMORY_OPS(TILEJIT_CASE) TILEJIT_TMA_OPS(TILEJIT_CASE)
    TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
    case Op::ParamTensorArray: case Op::ArrayElem: case Op::Dot:
      break;
  }
  throw InternalError("emitter: no size or stride for tensor node %" + str(tensor));
}

std::string Emitter::desc_addr(NodeId op) const {
  const Descriptor& d = L_.tma.descriptors[static_cast<size_t>(L_.tma.of.at(op))];
  switch (d.kind) {
    case DescKind::Host: return "&d" + str(d.slot);
    case DescKind::Device: return "tj_desc" + str(d.slot);
    case DescKind::Array: {
      const auto s = passes::detail::resolve_tensor(g_, g_.operand(op, 0));
      return "&d" + str(d.slot) + "[" + at(g_.operand(s.array_elem, 1)) + "]";
    }
  }
  return "";
}

std::string Emitter::coords(NodeId op, int rank) const {
  std::string s;
  for (int i = rank; i >= 1; --i) s += ", " + at(g_.operand(op, i));
  return s;
}

const layout::SharedLayout* Emitter::staging_of(NodeId id) const {
  const auto it = L_.smem.staging.find(id);
  return it == L_.smem.staging.end() ? nullptr : &it->second;
}

}  // namespace tilejit::codegen::detail
