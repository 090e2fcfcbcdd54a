// Internal header of the CUDA C++ emitter (not installed): the Emitter class, which walks the lowered
// graph and writes one readable translation unit per kernel, and the text helpers its methods share.
// Its methods are defined by concern:
//   emit_cuda.cpp     header comment, signature, prologue, node dispatch, elementwise ops, generate()
//   emit_control.cpp  for loops and ifs: loop-carried values, parallel assignment
//   emit_memory.cpp   loads and stores through pointers
//   emit_tma.cpp      TMA: descriptors built on the device, tile loads and stores
//   emit_layout.cpp   data exchanged between threads: broadcast, convert, gather, reshape, permute, reduce
//   emit_mma.cpp      matrix products (dot)
//   emit_schedule.cpp the schedule ops: pipelines, waits, barriers, reuse fences
//
// Conventions of the emitted code (see also the prelude in jit/codegen/prelude/):
//  - `tid` is threadIdx.x; thread 0 issues every TMA operation and owns the bulk groups.
//  - A rank-0 (or one-element) value is a scalar every thread computes; a block
//    value is an array of registers per thread, laid out as its layout::Layout
//    (chosen by passes::assign_layout) says: register i of thread tid holds the
//    element whose coordinates are sums of digits of i, tid % 32 and tid / 32.
//  - Elementwise ops, reductions within a warp and broadcasts of reduction results
//    never leave registers; conversions between layouts, permutes and the partial
//    results of several warps go through the shared scratch arena, bracketed by
//    __syncthreads(); a TMA tile that is still in shared memory is read in place.
#pragma once

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/cuda_text.h"
#include "passes/tensor_source.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/error.h"
#include "tilejit/layout/layout.h"
#include "tilejit/passes/lowering.h"

namespace tilejit::codegen::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using passes::DescKind;
using passes::Descriptor;
using passes::ValueLayout;

inline std::string str(int64_t v) { return std::to_string(v); }

using layout::row_major;

/// Coordinate d of linear element `e` of shape `s`.
inline std::string coord(const std::string& e, const ir::Shape& s, int d) {
  const auto st = row_major(s);
  std::string x = st[static_cast<size_t>(d)] == 1 ? e : e + " / " + str(st[static_cast<size_t>(d)]);
  if (d > 0) x = (st[static_cast<size_t>(d)] == 1 ? x : "(" + x + ")") + " % " + str(s.dims[d]);
  return x;
}

/// a + b * c, leaving out zero and one factors.
inline std::string add_term(const std::string& acc, const std::string& term, int64_t factor) {
  if (factor == 0) return acc;
  const bool compound = term.find(' ') != std::string::npos;
  const std::string t = factor == 1 ? term : (compound ? "(" + term + ")" : term) + " * " + str(factor);
  return acc.empty() ? t : acc + " + " + t;
}

class Emitter {
 public:
  Emitter(const passes::Lowered& l, const Options& opt, std::string entry)
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

  void run(GeneratedKernel& k);  // fills k.source and the prelude range

 private:
  // ---- text -------------------------------------------------------------
  void line(const std::string& s) { out_ += std::string(static_cast<size_t>(depth_) * 2, ' ') + s + "\n"; }
  void line(const std::string& s, NodeId at) { line(s + "  // " + note(at)); }
  void open(const std::string& s) {
    line(s.empty() ? "{" : s + " {");
    ++depth_;
  }
  void open(const std::string& s, NodeId at) {
    line((s.empty() ? "{" : s + " {") + "  // " + note(at));
    ++depth_;
  }
  /// A barrier of every thread that runs the kernel's ops: __syncthreads(), or once the producer warpgroup has
  /// split off (warp roles) a named barrier of the consumer threads.
  void sync(const std::string& why = "") {
    const std::string b = consumers_only_ ? "tj::consumer_sync<" + str(threads_) + ">();" : "__syncthreads();";
    line(why.empty() ? b : b + "  // " + why);
  }
  /// The barrier passes::plan_barriers put before op `id` (BarrierPlan::before_scratch or before_issue), if any.
  void planned_barrier(const std::unordered_map<NodeId, std::string>& where, NodeId id) {
    if (auto it = where.find(id); it != where.end()) sync(it->second);
  }
  /// Appends to the line just closed ("}" -> "} else {").
  void line_tail(const std::string& s) { out_ += s + "\n"; }
  void close() {
    --depth_;
    line("}");
  }
  std::string where(NodeId id) const {
    const ir::Location& l = g_.location(id);
    return l.file.empty() ? "%" + str(id) : detail::base_name(l.file) + ":" + str(l.line);
  }
  std::string note(NodeId id) const { return std::string(ir::name_of(g_.node(id).op)) + "  " + where(id); }
  /// The LoopIndex node of For `f`'s body, or kNoNode when the body never reads its index.
  NodeId loop_index(NodeId f) const {
    for (NodeId b : g_.region(static_cast<uint32_t>(g_.int_at(f, 0))).nodes)
      if (g_.node(b).op == Op::LoopIndex) return b;
    return ir::kNoNode;
  }

  // ---- values -----------------------------------------------------------
  const ValueLayout& lay(NodeId id) const { return L_.layout.of[static_cast<size_t>(id)]; }
  bool uniform(NodeId id) const { return lay(id).kind == ValueLayout::Uniform; }
  std::string var(NodeId id) const { return "v" + str(id); }
  /// Element `i` of value `id` (the whole value when it is uniform).
  std::string at(NodeId id, const std::string& i = "i") const {
    const std::string& n = name_[static_cast<size_t>(id)];
    check_internal(!n.empty(), "emitter: value used before it was emitted");
    return uniform(id) ? n : n + "[" + i + "]";
  }
  /// "T vN[n];" (zero-initialised when some registers hold no element, so that no register is read unset).
  std::string decl_stmt(NodeId id) { return decl(id, lay(id).padded() ? " = {}" : "") + ";"; }
  /// The declaration of value `id` (without the final semicolon), `init` after the declarator.
  std::string decl(NodeId id, const std::string& init = "") {
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
  /// Whether value `id` lives in a tj::PackedF16 (declared by decl(), or updated in place in one).
  bool packed_storage(NodeId id) const { return packed_names_.count(name_[static_cast<size_t>(id)]) > 0; }
  /// The registers of `id` as a wgmma instruction reads them: its array, or the 32-bit view of a
  /// packed f16 accumulator; `count` is set to their number.
  std::string accumulator_registers(NodeId id, int* count) const {
    const std::string& n = name_[static_cast<size_t>(id)];
    const int regs = lay(id).regs();
    if (!packed_storage(id)) {
      *count = regs;
      return n;
    }
    *count = regs / 2;
    return n + "_p.w";
  }
  /// Keeps the compiler from moving reads or writes of the accumulator `id` across this point.
  std::string register_fence(NodeId id) const {
    int count = 0;
    const std::string r = accumulator_registers(id, &count);
    return "tj::fence_registers<" + str(count) + ">(" + r + ");";
  }
  /// The digit of one layout term: `reg` stands for the register number, `tid` gives lane and warp.
  static std::string digit(const layout::Term& t, const std::string& reg) {
    const bool is_reg = t.axis == layout::Axis::Reg;
    const int64_t div = t.div * (t.axis == layout::Axis::Warp ? layout::kLanes : 1);
    int64_t mod = t.mod;
    if (t.axis == layout::Axis::Lane && mod == 0) mod = layout::kLanes / t.div;  // tid also holds the warp
    std::string x = is_reg ? reg : "tid";
    if (div != 1) x += " / " + str(div);
    if (mod != 0) x += " % " + str(mod);
    return x;
  }
  /// The sum of layout terms as C++ (compile-time constant parts fold once `reg` is an unrolled index).
  static std::string terms(const std::vector<layout::Term>& ts, const std::string& reg) {
    std::string s;
    for (const layout::Term& t : ts) s = add_term(s, digit(t, reg), t.mul);
    return s.empty() ? "0" : s;
  }
  /// Linear (row-major) element index held by register `i` (an expression) of a value with layout v.
  std::string elem(const ValueLayout& v, const std::string& i) const { return terms(v.dist.linear_terms(), i); }
  /// True when register `i` holds an element (only dimensions that the layout pads are tested).
  std::string guard(const ValueLayout& v, const std::string& i) const { return guard_of(v.dist, i); }
  static std::string guard_of(const layout::Layout& l, const std::string& i) {
    std::string g;
    for (int d : l.padded_dims()) g += (g.empty() ? "" : " && ") + terms(l.coord_terms(d), i) + " < " + str(l.shape().dims[d]);
    return g;
  }
  /// True in the one thread of each group of threads that hold the same elements ("" when no two do).
  std::string owner(const ValueLayout& v) const {
    std::string o;
    for (const layout::Term& t : v.dist.replica_terms()) o += (o.empty() ? "" : " && ") + digit(t, "i") + " == 0";
    return o;
  }
  /// True when `text` holds `name` as a whole C identifier (not as part of a longer one).
  static bool mentions(const std::string& text, std::string_view name) {
    const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
    for (size_t p = text.find(name); p != std::string::npos; p = text.find(name, p + 1))
      if ((p == 0 || !ident(text[p - 1])) && (p + name.size() == text.size() || !ident(text[p + name.size()]))) return true;
    return false;
  }
  /// a + b for index expressions, leaving out zeros.
  static std::string plus(const std::string& a, const std::string& b) {
    return a == "0" ? b : b == "0" ? a : a + " + " + b;
  }
  static std::string both(const std::string& a, const std::string& b) {
    return a.empty() ? b : b.empty() ? a : a + " && " + b;
  }

  /// Emits `for (int i = 0; i < regs; ++i) { [const int e = ...;] body }`, or a
  /// single statement for uniform values (with `e` = 0). `guarded`: registers that hold
  /// no element skip the body; `owned`: so do threads that merely replicate another's elements.
  void element_loop(NodeId id, bool need_e, bool guarded, const std::vector<std::string>& body, bool owned = false) {
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

  /// Copies the registers of `id` to shared memory at `ptr` (row-major, typed by its memory type),
  /// one vector of consecutive elements at a time; replicas and padding write nothing.
  /// `staging`: the layout of a tile staged through the scratch arena (padded or swizzled rows,
  /// SmemPlan::staging), or null for plain row-major.
  void write_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging = nullptr) {
    copy_chunks(id, ptr, true, staging);
  }
  /// Row-major element `e` of a staged tile: where `staging` puts it (tj::padded_index, tj::xor_index).
  static std::string staged_index(const layout::SharedLayout* staging, const std::string& e) {
    if (!staging) return e;
    const int64_t inner = staging->shape.dims[staging->shape.rank - 1];
    if (staging->xor_unit > 0)
      return "tj::xor_index<" + str(inner) + ", " + str(staging->xor_unit) + ", " + str(staging->xor_div) + ", " +
             str(staging->xor_mod) + ">(" + e + ")";
    if (staging->pad_elems > 0) return "tj::padded_index<" + str(inner) + ", " + str(staging->pad_elems) + ">(" + e + ")";
    return e;
  }
  /// What a staged tile's layout does against bank conflicts, for a comment ("" when nothing).
  static std::string staging_note(const layout::SharedLayout* staging) {
    if (!staging) return "";
    if (staging->xor_unit > 0)
      return "units of " + str(staging->xor_unit) + " elements XOR-swizzled by (row / " + str(staging->xor_div) + ") % " +
             str(staging->xor_mod) + " against bank conflicts";
    if (staging->pad_elems > 0) return "rows padded by " + str(staging->pad_elems) + " elements against bank conflicts";
    return "";
  }
  /// write_chunks into a tile stored as swizzled pieces `swizzle` bytes wide (layout::SharedLayout),
  /// with the address split that allocate_shared planned (`w`): the swizzle's XOR depends on the
  /// thread alone, and every register adds a constant.
  void write_swizzled(NodeId id, const std::string& ptr, int swizzle, const layout::SwizzledWrites& w) {
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
    line("for (int i = 0; i < " + str(v.regs()) + "; i += " + str(vw) + ") " + (g.empty() ? "" : "if (" + g + ") ") + "tj::sts<" +
         str(vw) + ">(reinterpret_cast<" + mem_type(g_.node(id).dtype) + "*>(tj_sw_tile + tj::swizzled_register_offset<" +
         str(rows) + ", " + str(eb) + ", " + str(swizzle) + ">(" + terms(w.row_reg, "i") + ", " + terms(w.col_reg, "i") +
         ", tj_sw_xor" + (w.col_thread_in_xor ? ", " + col_bytes : std::string()) + ")), &" +
         name_[static_cast<size_t>(id)] + "[i]);");
    close();
  }
  /// Declares the registers of `id` and fills them from shared memory at `ptr`.
  void read_chunks(NodeId id, const std::string& ptr, const std::string& comment, const layout::SharedLayout* staging = nullptr) {
    line(decl_stmt(id) + "  // " + comment);
    fill_chunks(id, ptr, staging);
  }
  /// Fills the (declared) registers of `id` from shared memory at `ptr` (row-major, or laid out as `staging`).
  void fill_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging = nullptr) {
    copy_chunks(id, ptr, false, staging);
  }
  void copy_chunks(NodeId id, const std::string& ptr, bool to_shared, const layout::SharedLayout* staging = nullptr) {
    const ValueLayout& v = lay(id);
    const std::string n = name_[static_cast<size_t>(id)];
    // A swizzled tile keeps only the elements of one unit consecutive: a longer run of registers is
    // copied a unit at a time, each unit at its own swizzled place.
    const int vw = staging && staging->xor_unit > 0 ? static_cast<int>(std::min<int64_t>(v.dist.vector_width(), staging->xor_unit))
                                                    : v.dist.vector_width();
    const std::string g = both(guard(v, "i"), to_shared ? owner(v) : "");
    const std::string at = staged_index(staging, elem(v, "i"));
    const std::string call = to_shared ? "tj::sts<" + str(vw) + ">(" + ptr + " + " + at + ", &" + n + "[i]);"
                                       : "tj::lds<" + str(vw) + ">(&" + n + "[i], " + ptr + " + " + at + ");";
    line("#pragma unroll");
    line("for (int i = 0; i < " + str(v.regs()) + "; i += " + str(vw) + ") " + (g.empty() ? "" : "if (" + g + ") ") + call);
  }

  // ---- shared memory ------------------------------------------------------
  std::string buffer_ptr(int buffer, DType t) const {
    const passes::SmemBuffer& b = L_.smem.buffers[static_cast<size_t>(buffer)];
    const DType own = g_.node(b.node).dtype;
    const std::string n = "tj_buf" + str(buffer);
    if (mem_type(own) == mem_type(t)) return n;
    return "reinterpret_cast<" + mem_type(t) + "*>(" + n + ")";
  }
  std::string scratch_ptr(int offset, DType t) const {
    return "reinterpret_cast<" + mem_type(t) + "*>(tj_scratch" + (offset ? " + " + str(offset) : std::string()) + ")";
  }
  /// Before op `user` first writes the scratch arena: the barrier the plan put there, if any.
  void scratch_barrier(NodeId user) {
    check_internal(L_.barriers.scratch_users.count(user) > 0, "emitter: an op the barrier plan does not know writes the scratch arena");
    planned_barrier(L_.barriers.before_scratch, user);
  }
  /// Where the elements of block value `v` (an operand of `user`) can be read by any thread: its TMA
  /// tile, or the scratch arena at `offset` after this call stages it there (after the barrier planned
  /// before `user`'s first write, when `first`). Returns the pointer and whether it was staged (the op
  /// then passes a barrier before reading it).
  std::pair<std::string, bool> shared_source(NodeId user, NodeId v, int offset, const layout::SharedLayout* staging = nullptr,
                                             bool first = true) {
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
  std::string load_elem(const std::string& ptr, const std::string& idx, DType t) const {
    return t == DType::i1 ? "(" + ptr + "[" + idx + "] != 0)" : ptr + "[" + idx + "]";
  }

  // ---- tensors and descriptors ----------------------------------------------
  std::string tensor_ptr(NodeId tensor) const {
    const ir::Node& n = g_.node(tensor);
    switch (n.op) {
      case Op::ParamTensor: {
        const int p = static_cast<int>(g_.int_at(tensor, 0));
        return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, passes::TensorField::base, 0))];
      }
      case Op::MergeView: return tensor_ptr(g_.operand(tensor, 0));
      case Op::MakeView: return var(tensor);
      default: break;
    }
    throw InternalError("emitter: no pointer for tensor node %" + str(tensor));
  }
  /// The size or stride (`field`) of dimension d of a tensor, in elements, as an i64 expression.
  std::string tensor_field(NodeId tensor, passes::TensorField field, int d) const {
    using F = passes::TensorField;
    check_internal(field != F::base, "emitter: tensor_field of a base address");
    const ir::Node& n = g_.node(tensor);
    switch (n.op) {
      case Op::ParamTensor: {
        const int p = static_cast<int>(g_.int_at(tensor, 0));
        return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, field, d))];
      }
      case Op::MakeView: {
        const int rank = static_cast<int>(g_.int_at(tensor, 0));
        return at(g_.operand(tensor, (field == F::size ? 2 : 2 + rank) + d));
      }
      case Op::MergeView: {
        const NodeId src = g_.operand(tensor, 0);
        int first = 0;
        for (int k = 0; k < d; ++k) first += static_cast<int>(g_.int_at(tensor, 1 + k));
        const int count = static_cast<int>(g_.int_at(tensor, 1 + d));
        if (field == F::stride) return tensor_field(src, F::stride, first + count - 1);
        std::string prod;
        for (int k = 0; k < count; ++k) prod += (k ? " * " : "") + tensor_field(src, F::size, first + k);
        return count == 1 ? prod : "(" + prod + ")";
      }
      default: break;
    }
    throw InternalError("emitter: no size or stride for tensor node %" + str(tensor));
  }
  /// Address of the descriptor TMA op `op` uses.
  std::string desc_addr(NodeId op) const {
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
  /// TMA coordinates of op `op` (operands 1..rank), innermost first.
  std::string coords(NodeId op, int rank) const {
    std::string s;
    for (int i = rank; i >= 1; --i) s += ", " + at(g_.operand(op, i));
    return s;
  }
  void build_descriptors(const std::vector<const Descriptor*>& ds);

  // ---- checked kernels (Options::debug_checks; emit_debug.cpp) ----------------
  /// The statement `if (cond) tj::debug_fail(...)`: one line naming the kernel, op `op`'s source line, the
  /// rule, the value (printf format `value_fmt`) and the limit (`limit_fmt`), with `args` for both formats.
  std::string debug_check(const std::string& cond, NodeId op, const std::string& rule, const std::string& value_fmt,
                          const std::string& limit_fmt, const std::string& args) const;
  /// The statement that waits for the phase `phase` of mbarrier tj_bar[index]: tj::mbarrier_wait_parity, or in a
  /// checked kernel its watchdog, which names op `op`'s line, `what` the wait is for, the barrier and the phase when
  /// the wait lasts longer than Options::watchdog_ms, and traps.
  std::string mbarrier_wait(const std::string& index, const std::string& phase, NodeId op, const std::string& what) const;
  /// Checks of a device-built descriptor's fields (size<i> / stride<i> in scope, innermost first).
  void debug_descriptor(const Descriptor& d, const std::string& base);
  /// Checks of TMA op `id`'s coordinates against the hardware's rules, and of the descriptor it uses.
  void debug_tma(NodeId id);
  /// Checks that pointer load / store / atomic `id` touches only elements of its tensor.
  void debug_pointer(NodeId id);
  /// The offset of the last element of `tensor` from its pointer (-1 when it is empty), as an expression.
  std::string debug_last_offset(NodeId tensor) const;
  /// Calls `issue(buffer offset, coordinates)` once per TMA operation of op `id`: once, or once per
  /// piece of a box that the planner split (tma::split_box), piece k at k * piece elements of the
  /// tile and k * piece coordinates along the split dimension.
  void tma_pieces(NodeId id, const std::function<void(const std::string&, const std::string&)>& issue);

  // ---- ops ------------------------------------------------------------------
  void emit_region(uint32_t r);
  void emit_node(NodeId id);
  void emit_elementwise(NodeId id);
  void emit_broadcast(NodeId id);
  /// Element i of `id` reads element `src` (row-major, of x's shape) of `x` through shared memory; `staging`:
  /// the staged tile's layout (SmemPlan::staging), null for plain row-major.
  void emit_gather(NodeId id, NodeId x, const std::string& src, const layout::SharedLayout* staging = nullptr);
  /// The layout SmemPlan::staging gives the tile through which `id` moves its operand, or null.
  const layout::SharedLayout* staging_of(NodeId id) const {
    const auto it = L_.smem.staging.find(id);
    return it == L_.smem.staging.end() ? nullptr : &it->second;
  }
  void emit_reshape(NodeId id);
  void emit_convert(NodeId id);
  void emit_permute(NodeId id);
  void emit_reduce(NodeId id);
  /// A Reduce: the user's combine function as a lambda, applied in the steps of emit_reduce.
  void emit_combine(NodeId id);
  void emit_reduce_result(NodeId id);
  /// One value a reduction combines: its array of partial results (one register per result
  /// register j), its type, and the name a partial received from another thread takes.
  struct Partial {
    std::string acc;
    DType type;
    std::string other;
  };
  /// Steps 2 and 3 of a reduction planned by `plan`: the partials are combined across lanes by
  /// butterfly shuffles, then across warps through the scratch arena (passes::reduction_scratch).
  /// `take(other)` is the statement that combines the values named `other` into the partials' [j].
  /// `flag`: a bool array saying which partials hold an element (a combine without identity over a
  /// padded layout), or "" when all do.
  void reduce_across_threads(NodeId id, const layout::ReductionPlan& plan, const std::vector<Partial>& parts,
                             const std::string& flag, const std::function<std::string(const std::vector<std::string>&)>& take);
  /// `take`, or with flags: combine when both hold an element, copy when only the other does.
  std::string take_flagged(const std::vector<Partial>& parts, const std::string& flag, const std::string& other_flag,
                           const std::vector<std::string>& other, const std::string& take) const;
  void emit_dot(NodeId id);
  void emit_wgmma(NodeId id, const passes::MmaDot& m);
  /// The device function issuing every wgmma instruction of one K tile of `m` in one asm statement.
  std::string wgmma_helper(const passes::MmaDot& m) const;
  std::string tile_address(NodeId load) const;
  /// The shared address of the tile an operand's instructions read: its TMA tile, or its K-major copy.
  std::string operand_address(const passes::MmaOperand& o) const;
  /// Copies a tf32 / 8-bit operand tile K-major (passes::MmaOperand::k_major_copy), all threads.
  void copy_k_major(const passes::MmaOperand& o, const char* which);
  /// The schedule ops (ir.h; emit_schedule.cpp), each printed where it stands.
  void emit_schedule_op(NodeId id);
  /// Issues the loads of the iteration whose loop index is `index` into stage `stage` of pipelined loop `f`'s
  /// ring (by one thread), when that iteration exists.
  void issue_stage(NodeId f, const std::string& stage, const std::string& index);
  /// The producer warpgroup's code (warp.producer): the scalars its loads need, then every load of loop `f`.
  void emit_producer(NodeId f, int stages);
  void emit_load(NodeId id);
  /// Fills load_as_f32_ (emit_memory.cpp).
  void plan_loads_as_f32();
  /// A masked vector load's fill is one value over each vector (merged word by word, tj::ldg_or).
  bool one_fill(NodeId load, int v) const;
  void emit_store(NodeId id);
  /// `for (i = 0; i < regs; i += v) [if (element)] body` over the registers of `id`, v at a time.
  void vector_loop(NodeId id, int v, const std::function<void()>& body);
  void emit_desc_load(NodeId id);
  /// Thread 0 issues the TMA load `id` (its expect-tx and copies), without waiting.
  void issue_desc_load(NodeId id);
  void emit_desc_store(NodeId id);
  void emit_for(NodeId id);
  void emit_if(NodeId id);
  void assign_all(const std::vector<std::pair<NodeId, NodeId>>& dst_src);

  std::string header() const;
  std::string signature() const;
  void prologue();

  const passes::Lowered& L_;
  const ir::Graph& g_;
  const Options& opt_;
  std::string entry_;
  int threads_;
  std::string out_;
  int depth_ = 1;
  std::vector<std::string> name_;
  /// Values stored as tj::PackedF16: the f16 accumulators of wgmma dots (and the values they update in place).
  std::unordered_set<NodeId> packed_;
  /// bf16 vector loads whose only use is a cast to f32 in the same layout: load -> the cast, which the load
  /// fills directly (tj::ldg_bf16_f32) and which then emits nothing.
  std::unordered_map<NodeId, NodeId> load_as_f32_;
  std::set<std::string> packed_names_;  ///< the names of the arrays decl() declared in a tj::PackedF16
  std::map<std::string, std::string> helpers_;  ///< per-kernel device functions (wgmma instructions), by name
  bool stores_ = false;
  bool consumers_only_ = false;  ///< printing past warp.producer: only the consumer threads run what follows
  std::map<NodeId, std::vector<const Descriptor*>> builds_;
  std::map<NodeId, std::vector<const Descriptor*>> array_prefetch_;
  std::map<NodeId, std::string> loop_bounds_;  ///< pipelined For -> "lo, hi, step" names
};

}  // namespace tilejit::codegen::detail
