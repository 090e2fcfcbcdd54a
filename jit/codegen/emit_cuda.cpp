// The CUDA C++ emitter: walks the lowered graph and writes one readable translation unit per kernel.
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
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "codegen/cuda_text.h"
#include "codegen/prelude.h"
#include "passes/tensor_source.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/error.h"
#include "tilejit/layout/layout.h"
#include "tilejit/passes/passes.h"

namespace tilejit::codegen {

namespace {

using detail::cast;
using detail::mem_type;
using detail::reg_type;
using ir::DType;
using ir::NodeId;
using ir::Op;
using passes::DescKind;
using passes::Descriptor;
using passes::ValueLayout;

std::string str(int64_t v) { return std::to_string(v); }

using layout::row_major;

/// Coordinate d of linear element `e` of shape `s`.
std::string coord(const std::string& e, const ir::Shape& s, int d) {
  const auto st = row_major(s);
  std::string x = st[static_cast<size_t>(d)] == 1 ? e : e + " / " + str(st[static_cast<size_t>(d)]);
  if (d > 0) x = (st[static_cast<size_t>(d)] == 1 ? x : "(" + x + ")") + " % " + str(s.dims[d]);
  return x;
}

/// a + b * c, leaving out zero and one factors.
std::string add_term(const std::string& acc, const std::string& term, int64_t factor) {
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
  /// Emits __syncthreads() and remembers that the current loop iteration has passed one.
  void sync(const std::string& why = "") {
    line(why.empty() ? "__syncthreads();" : "__syncthreads();  // " + why);
    if (!loops_.empty() && loops_.back().if_depth == 0) loops_.back().barrier = true;
  }
  /// True when this iteration of the innermost loop has already passed a __syncthreads()
  /// (unconditionally), so every thread finished the previous iteration's work.
  bool synced_this_iteration() const { return !loops_.empty() && loops_.back().barrier; }
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
  std::string decl_stmt(NodeId id) { return decl(id) + (lay(id).padded() ? " = {};" : ";"); }
  std::string decl(NodeId id) {
    const std::string n = var(id);
    name_[static_cast<size_t>(id)] = n;
    const ValueLayout& v = lay(id);
    const std::string t = reg_type(g_.node(id).dtype);
    return v.kind == ValueLayout::Uniform ? t + " " + n : t + " " + n + "[" + str(v.regs()) + "]";
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
  std::string guard(const ValueLayout& v, const std::string& i) const {
    std::string g;
    for (int d : v.dist.padded_dims())
      g += (g.empty() ? "" : " && ") + terms(v.dist.coord_terms(d), i) + " < " + str(v.dist.shape().dims[d]);
    return g;
  }
  /// True in the one thread of each group of threads that hold the same elements ("" when no two do).
  std::string owner(const ValueLayout& v) const {
    std::string o;
    for (const layout::Term& t : v.dist.replica_terms()) o += (o.empty() ? "" : " && ") + digit(t, "i") + " == 0";
    return o;
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
        static const std::regex kUsesE("(^|[^A-Za-z0-9_])e([^A-Za-z0-9_]|$)");
        bool uses_e = false;
        for (const auto& s : body) uses_e = uses_e || std::regex_search(s, kUsesE);
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
  void write_chunks(NodeId id, const std::string& ptr) { copy_chunks(id, ptr, true); }
  /// Declares the registers of `id` and fills them from shared memory at `ptr`.
  void read_chunks(NodeId id, const std::string& ptr, const std::string& comment) {
    line(decl_stmt(id) + "  // " + comment);
    fill_chunks(id, ptr);
  }
  /// Fills the (declared) registers of `id` from shared memory at `ptr` (row-major).
  void fill_chunks(NodeId id, const std::string& ptr) { copy_chunks(id, ptr, false); }
  void copy_chunks(NodeId id, const std::string& ptr, bool to_shared) {
    const ValueLayout& v = lay(id);
    const std::string n = name_[static_cast<size_t>(id)];
    const int vw = v.dist.vector_width();
    const std::string g = both(guard(v, "i"), to_shared ? owner(v) : "");
    const std::string call = to_shared ? "tj::sts<" + str(vw) + ">(" + ptr + " + " + elem(v, "i") + ", &" + n + "[i]);"
                                       : "tj::lds<" + str(vw) + ">(&" + n + "[i], " + ptr + " + " + elem(v, "i") + ");";
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
  /// Before writing the scratch arena: wait until every thread has read what the previous op left there.
  void scratch_barrier() {
    if (scratch_pending_) sync("the previous user of the scratch arena is done");
    scratch_pending_ = false;
  }
  /// Where the elements of block value `v` can be read by any thread: its TMA
  /// tile, or the scratch arena at `offset` after this call stages it there.
  /// Returns the pointer and whether it was staged (a barrier is then needed).
  std::pair<std::string, bool> shared_source(NodeId v, int offset) {
    const DType t = g_.node(v).dtype;
    auto it = L_.smem.resident.find(v);
    if (it != L_.smem.resident.end()) return {buffer_ptr(it->second, t), false};
    scratch_barrier();
    const std::string p = scratch_ptr(offset, t);
    if (uniform(v)) {
      line("if (tid == 0) " + p + "[0] = " + at(v) + ";");
    } else {
      write_chunks(v, p);
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
        return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, 0, 0))];
      }
      case Op::MergeView: return tensor_ptr(g_.operand(tensor, 0));
      case Op::MakeView: return var(tensor);
      default: break;
    }
    throw InternalError("emitter: no pointer for tensor node %" + str(tensor));
  }
  /// Size (what = 1) or stride (what = 2) of dimension d of a tensor, in elements, as an i64 expression.
  std::string tensor_field(NodeId tensor, int what, int d) const {
    const ir::Node& n = g_.node(tensor);
    switch (n.op) {
      case Op::ParamTensor: {
        const int p = static_cast<int>(g_.int_at(tensor, 0));
        return L_.args.names[static_cast<size_t>(L_.args.find_tensor(p, what, d))];
      }
      case Op::MakeView: {
        const int rank = static_cast<int>(g_.int_at(tensor, 0));
        return at(g_.operand(tensor, (what == 1 ? 2 : 2 + rank) + d));
      }
      case Op::MergeView: {
        const NodeId src = g_.operand(tensor, 0);
        int first = 0;
        for (int k = 0; k < d; ++k) first += static_cast<int>(g_.int_at(tensor, 1 + k));
        const int count = static_cast<int>(g_.int_at(tensor, 1 + d));
        if (what == 2) return tensor_field(src, 2, first + count - 1);
        std::string prod;
        for (int k = 0; k < count; ++k) prod += (k ? " * " : "") + tensor_field(src, 1, first + k);
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
  /// Calls `issue(buffer offset, coordinates)` once per TMA operation of op `id`: once, or once per
  /// piece of a box that the planner split (tma::split_box), piece k at k * piece elements of the
  /// tile and k * piece coordinates along the split dimension.
  void tma_pieces(NodeId id, const std::function<void(const std::string&, const std::string&)>& issue) {
    const Descriptor& d = L_.tma.descriptors[static_cast<size_t>(L_.tma.of.at(id))];
    const int rank = d.rank;
    if (d.pieces == 1) return issue("", coords(id, rank));
    int64_t piece_elems = 1;
    for (int i = 0; i < rank; ++i) piece_elems *= d.box[static_cast<size_t>(i)] / d.estride[static_cast<size_t>(i)];
    const int64_t piece = d.box[static_cast<size_t>(d.split_dim)];
    line("// " + str(d.pieces) + " operations of " + str(piece) + " along dimension " + str(d.split_dim) +
         ", into consecutive parts of the tile");
    line("#pragma unroll 1");
    open("for (int p = 0; p < " + str(d.pieces) + "; ++p)");
    std::string crd;
    for (int i = rank; i >= 1; --i)
      crd += ", " + (i - 1 == d.split_dim ? at(g_.operand(id, i)) + " + p * " + str(piece) : at(g_.operand(id, i)));
    issue(" + p * " + str(piece_elems), crd);
    close();
  }

  // ---- ops ------------------------------------------------------------------
  void emit_region(uint32_t r);
  void emit_node(NodeId id);
  void emit_elementwise(NodeId id);
  void emit_broadcast(NodeId id);
  void emit_gather(NodeId id, NodeId x, const std::string& src);
  void emit_reshape(NodeId id);
  void emit_convert(NodeId id);
  void emit_permute(NodeId id);
  void emit_reduce(NodeId id);
  void emit_dot(NodeId id);
  void emit_load(NodeId id);
  void emit_store(NodeId id);
  /// `for (i = 0; i < regs; i += v) [if (element)] body` over the registers of `id`, v at a time.
  void vector_loop(NodeId id, int v, const std::function<void()>& body);
  void emit_desc_load(NodeId id);
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
  bool scratch_pending_ = false;
  bool stores_ = false;
  std::map<NodeId, std::vector<const Descriptor*>> builds_;
  std::map<NodeId, std::vector<const Descriptor*>> array_prefetch_;
  struct LoopFrame {
    bool barrier = false;  ///< a __syncthreads() ran since the iteration started
    int if_depth = 0;      ///< nesting of if-branches since the loop body started
  };
  std::vector<LoopFrame> loops_;
};

// ---- header and signature ------------------------------------------------------

std::string Emitter::header() const {
  std::string h;
  h += "// tilejit kernel \"" + g_.kernel_name + "\" (entry " + entry_ + ")\n";
  const ir::Location& loc = g_.kernel_location;
  h += "//   source: " + (loc.file.empty() ? std::string("(unknown)") : loc.file + ":" + str(loc.line)) + "\n";
  std::string cfg;
  for (const auto& [k, v] : g_.config) cfg += (cfg.empty() ? "" : ", ") + k + "=" + str(v);
  h += "//   config: " + (cfg.empty() ? std::string("(none)") : cfg) + "; num_warps=" + str(g_.num_warps) +
       ", num_stages=" + str(g_.num_stages) +
       (g_.min_programs_per_sm > 0 ? ", programs_per_sm=" + str(g_.min_programs_per_sm) : std::string()) + "\n";
  h += "//   threads: " + str(threads_) + ", dynamic shared memory: " + str(L_.smem.total_bytes) +
       " bytes, workspace: " + str(L_.args.plan.workspace_bytes_per_program) + " bytes per program\n";
  std::string d = passes::describe(L_);
  size_t pos = 0;
  while (pos < d.size()) {
    const size_t nl = d.find('\n', pos);
    h += "//   " + d.substr(pos, nl - pos) + "\n";
    pos = nl == std::string::npos ? d.size() : nl + 1;
  }
  std::string spec;
  const std::vector<uint16_t> relevant = passes::relevant_specialization(g_);
  for (size_t p = 0; p < g_.params.size(); ++p) {
    if (g_.params[p].kind != ir::Param::Tensor || relevant[p] == 0) continue;
    const uint16_t bits = L_.spec.of(static_cast<int>(p)) & relevant[p];
    std::string facts;
    if (relevant[p] & codegen::Specialization::kBaseAligned)
      facts = (bits & codegen::Specialization::kBaseAligned) ? "base 16-byte aligned" : "base not known to be aligned";
    for (int d = 0; d < g_.params[p].rank; ++d) {
      if (bits & codegen::Specialization::size_div16(d)) facts += (facts.empty() ? "" : ", ") + std::string("size") + str(d) + " % 16 == 0";
      if (bits & codegen::Specialization::stride_div16(d)) facts += (facts.empty() ? "" : ", ") + std::string("stride") + str(d) + " % 16 == 0";
    }
    spec += "//     " + g_.params[p].name + ": " + facts + "\n";
  }
  if (!spec.empty()) h += "//   argument specialisation (what this variant assumes of its launch's tensors):\n" + spec;
  bool dot = false, loop_load = false;
  for (size_t i = 0; i < g_.size(); ++i) {
    if (L_.info.position[i] < 0) continue;
    dot = dot || g_.node(static_cast<NodeId>(i)).op == Op::Dot;
    loop_load = loop_load || (g_.node(static_cast<NodeId>(i)).op == Op::DescLoad && L_.info.in_loop(static_cast<NodeId>(i)));
  }
  if (dot)
    h += "//   note: dot() is lowered to a scalar FMA loop over shared memory; tensor cores (wgmma) come later.\n";
  if (loop_load)
    h += "//   note: TMA loads in loops are issued and awaited once per iteration (num_stages is not used yet).\n";
  return h;
}

std::string Emitter::signature() const {
  const std::string bounds = str(threads_) + (g_.min_programs_per_sm > 0 ? ", " + str(g_.min_programs_per_sm) : "");
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + entry_ + "(";
  const auto& slots = L_.args.plan.slots;
  std::set<int> written;
  for (size_t i = 0; i < g_.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const Op op = g_.node(id).op;
    // Written through a pointer, or the base of a view (whose TMA stores write it).
    if ((op == Op::Store || op == Op::AtomicAdd || op == Op::MakeView) && L_.info.position[i] >= 0) {
      NodeId t = g_.operand(id, 0);
      while (g_.node(t).op == Op::MergeView || g_.node(t).op == Op::MakeView) t = g_.operand(t, 0);
      if (g_.node(t).op == Op::ParamTensor) written.insert(static_cast<int>(g_.int_at(t, 0)));
    }
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    const ArgSlot& a = slots[k];
    const std::string& n = L_.args.names[k];
    std::string p;
    switch (a.kind) {
      case ArgSlot::TensorBase: {
        const DType t = g_.params[static_cast<size_t>(a.param)].dtype;
        p = (written.count(a.param) ? "" : "const ") + mem_type(t) + "* " + n;
        break;
      }
      case ArgSlot::TensorSize: case ArgSlot::TensorStride: p = "long long " + n; break;
      case ArgSlot::Scalar: p = reg_type(g_.params[static_cast<size_t>(a.param)].dtype) + " " + n; break;
      case ArgSlot::HostDesc: p = "const __grid_constant__ tj::TensorMap " + n; break;
      case ArgSlot::DescArray: p = "const tj::TensorMap* __restrict__ " + n; break;
      case ArgSlot::Workspace: p = "unsigned char* " + n; break;
    }
    s += "\n    " + p + (k + 1 < slots.size() ? "," : "");
  }
  return s + ")";
}

// ---- prologue: shared memory, barriers, descriptors built at kernel start ------------

void Emitter::prologue() {
  const passes::SmemPlan& sm = L_.smem;
  line("const int tid = threadIdx.x;");
  if (sm.total_bytes > 0) line("extern __shared__ __align__(1024) unsigned char tj_smem[];");
  for (size_t b = 0; b < sm.buffers.size(); ++b) {
    const passes::SmemBuffer& buf = sm.buffers[b];
    const std::string t = mem_type(g_.node(buf.node).dtype);
    line(t + "* const tj_buf" + str(static_cast<int64_t>(b)) + " = reinterpret_cast<" + t + "*>(tj_smem + " +
         str(buf.offset) + ");  // " + buf.role + " " + where(buf.node) + ", " + str(buf.bytes) + " bytes");
  }
  if (sm.num_barriers > 0)
    line("unsigned long long* const tj_bar = reinterpret_cast<unsigned long long*>(tj_smem + " +
         str(sm.barrier_offset) + ");  // " + str(sm.num_barriers) + " mbarrier(s)");
  if (sm.scratch_bytes > 0)
    line("unsigned char* const tj_scratch = tj_smem + " + str(sm.scratch_offset) + ";  // " + str(sm.scratch_bytes) +
         " bytes of scratch");
  if (sm.desc_stage_offset >= 0)
    line("unsigned char* const tj_desc_stage = tj_smem + " + str(sm.desc_stage_offset) +
         ";  // 128 bytes per device-built descriptor");
  for (const Descriptor& d : L_.tma.descriptors) {
    if (d.kind != DescKind::Device) continue;
    line("tj::TensorMap* const tj_desc" + str(d.slot) +
         " = reinterpret_cast<tj::TensorMap*>(workspace + (static_cast<unsigned long long>(tj::linear_program_id()) * " +
         str(L_.tma.num_device) + " + " + str(d.slot) + ") * 128);");
  }
  std::vector<NodeId> repeated;
  for (const auto& [id, lp] : sm.loads)
    if (lp.repeated) repeated.push_back(id);
  std::sort(repeated.begin(), repeated.end(), [&](NodeId a, NodeId b) { return sm.loads.at(a).barrier < sm.loads.at(b).barrier; });
  for (NodeId id : repeated)
    line("unsigned tj_phase" + str(sm.loads.at(id).barrier) + " = 0;  // parity of the next use of mbarrier " +
         str(sm.loads.at(id).barrier) + " (" + where(id) + ")");

  bool host_prefetch = false;
  for (const Descriptor& d : L_.tma.descriptors) host_prefetch = host_prefetch || d.kind == DescKind::Host;
  if (host_prefetch || sm.num_barriers > 0) {
    open("if (tid == 0)");
    for (const Descriptor& d : L_.tma.descriptors)
      if (d.kind == DescKind::Host) line("tj::prefetch_tensormap(&d" + str(d.slot) + ");");
    for (int b = 0; b < sm.num_barriers; ++b) line("tj::mbarrier_init(&tj_bar[" + str(b) + "], 1);");
    if (sm.num_barriers > 0) line("tj::fence_mbarrier_init();");
    close();
  }
  bool others_wait = false;
  for (const auto& [id, lp] : sm.loads) others_wait = others_wait || lp.all_threads_wait;
  auto it = builds_.find(ir::kNoNode);
  if (it != builds_.end()) {
    build_descriptors(it->second);  // ends with __syncthreads()
  } else if (others_wait) {
    sync("barriers initialised before any thread waits on them");
  }
}

// ---- descriptors built on the device ----------------------------------------------------

void Emitter::build_descriptors(const std::vector<const Descriptor*>& ds) {
  bool wait_stores = false;
  for (const Descriptor* d : ds) wait_stores = wait_stores || (d->rebuilt_in_loop && d->used_by_store);
  line("// device-built TMA descriptor(s): warp 0 writes each one in shared memory, then releases it to its workspace slot");
  open("if (tid < 32)");
  if (wait_stores) line("if (tid == 0) tj::bulk_wait_group<0>();  // stores of the previous iteration no longer use the slot");
  for (const Descriptor* d : ds) {
    const std::string stage = "tj_desc_stage" + (d->slot ? " + " + str(128 * d->slot) : std::string());
    const std::string slot = "tj_desc" + str(d->slot);
    const int r = d->rank;
    const int64_t esize = ir::size_of(d->dtype);
    // Fields, outermost first.
    std::vector<std::string> size(static_cast<size_t>(r)), stride(static_cast<size_t>(r));
    const NodeId t = d->tensor;
    const std::string base = tensor_ptr(t);
    for (int k = 0; k < r; ++k) {
      size[static_cast<size_t>(k)] = tensor_field(t, 1, k);
      stride[static_cast<size_t>(k)] = tensor_field(t, 2, k);
    }
    const std::string source = d->view != ir::kNoNode ? "view %" + str(d->view)
                                                      : "param " + g_.params[static_cast<size_t>(d->param)].name;
    line("reinterpret_cast<unsigned*>(" + stage + ")[tid] = 0u;  // " + slot + ": " + std::string(ir::name_of(d->dtype)) +
         " " + source + ", first used at " + where(d->first_use));
    line("__syncwarp();");
    open("if (tid == 0)");
    for (int i = 0; i < r; ++i)
      line("const long long size" + str(i) + " = " + size[static_cast<size_t>(r - 1 - i)] + ";  // innermost first");
    for (int i = 0; i + 1 < r; ++i)
      line("const long long stride" + str(i + 1) + " = " + stride[static_cast<size_t>(r - 2 - i)] + " * " + str(esize) +
           ";  // bytes");
    if (opt_.debug_checks) {
      const std::string w = "\"" + where(d->first_use) + "\"";
      const std::string k = "\"" + entry_ + "\"";
      line("if (reinterpret_cast<unsigned long long>(" + base + ") % 16 != 0) tj::descriptor_check_failed(" + k + ", " + w +
           ", \"global_address\", static_cast<long long>(reinterpret_cast<unsigned long long>(" + base +
           ")), \"16-byte aligned\");");
      for (int i = 0; i < r; ++i) {
        line("if (size" + str(i) + " < 1 || size" + str(i) + " > 4294967295ll) tj::descriptor_check_failed(" + k + ", " + w +
             ", \"global_dim[" + str(i) + "]\", size" + str(i) + ", \"1 <= size < 2^32\");");
        line("static_assert(" + str(d->box[static_cast<size_t>(r - 1 - i)]) + " <= 256, \"box_dim[" + str(i) +
             "] must be at most 256\");");
      }
      for (int i = 1; i < r; ++i)
        line("if (stride" + str(i) + " % 16 != 0 || stride" + str(i) + " <= 0 || stride" + str(i) +
             " >= (1ll << 40)) tj::descriptor_check_failed(" + k + ", " + w + ", \"global_stride[" + str(i - 1) +
             "]\", stride" + str(i) + ", \"a positive multiple of 16 bytes below 2^40\");");
    }
    line("tj::tensormap_replace_global_address(" + stage + ", " + base + ");");
    line("tj::tensormap_replace_rank(" + stage + ", " + str(r - 1) + ");");
    for (int i = 0; i < r; ++i)
      line("tj::tensormap_replace_box_dim<" + str(i) + ">(" + stage + ", " + str(d->box[static_cast<size_t>(r - 1 - i)]) + ");");
    for (int i = 0; i < r; ++i)
      line("tj::tensormap_replace_global_dim<" + str(i) + ">(" + stage + ", static_cast<unsigned>(size" + str(i) + "));");
    for (int i = 0; i + 1 < r; ++i)
      line("tj::tensormap_replace_global_stride<" + str(i) + ">(" + stage + ", static_cast<unsigned long long>(stride" +
           str(i + 1) + "));");
    for (int i = 0; i < r; ++i)
      line("tj::tensormap_replace_element_stride<" + str(i) + ">(" + stage + ", " +
           str(d->estride[static_cast<size_t>(r - 1 - i)]) + ");");
    line("tj::tensormap_replace_elemtype<" + str(detail::ptx_elemtype(d->dtype)) + ">(" + stage + ");  // " +
         std::string(ir::name_of(d->dtype)));
    line("tj::tensormap_replace_interleave_layout<0>(" + stage + ");");
    line("tj::tensormap_replace_swizzle_mode<0>(" + stage + ");");
    line("tj::tensormap_replace_fill_mode<" + str(d->fill) + ">(" + stage + ");  // " + (d->fill ? "NaN" : "zero"));
    close();
    line("__syncwarp();");
    line("tj::tensormap_cp_fenceproxy(" + slot + ", " + stage + ");");
    line("tj::fence_proxy_tensormap_acquire(" + slot + ");");
  }
  line("tj::bulk_commit_group();");
  line("tj::bulk_wait_group_read<0>();");
  close();
  sync();
}

// ---- regions and nodes --------------------------------------------------------------------

void Emitter::emit_region(uint32_t r) {
  for (NodeId id : g_.region(r).nodes) emit_node(id);
}

void Emitter::emit_node(NodeId id) {
  const ir::Node& n = g_.node(id);
  switch (n.op) {
    case Op::ParamTensor: case Op::ParamTensorArray: case Op::MergeView:
      break;
    case Op::ParamScalar: {
      auto it = L_.args.scalar_slot.find(static_cast<int>(g_.int_at(id, 0)));
      if (it != L_.args.scalar_slot.end()) name_[static_cast<size_t>(id)] = L_.args.names[static_cast<size_t>(it->second)];
      break;
    }
    case Op::Const:
      name_[static_cast<size_t>(id)] = detail::literal(g_, id);
      break;
    case Op::TensorSize: case Op::TensorStride:
      line("const " + decl(id) + " = " +
               tensor_field(g_.operand(id, 0), n.op == Op::TensorSize ? 1 : 2, static_cast<int>(g_.int_at(id, 0))) + ";",
           id);
      break;
    case Op::ArrayElem: {
      auto it = array_prefetch_.find(id);
      if (it != array_prefetch_.end())
        for (const Descriptor* d : it->second)
          line("if (tid == 0) tj::prefetch_tensormap(&d" + str(d->slot) + "[" + at(g_.operand(id, 1)) + "]);", id);
      break;
    }
    case Op::MakeView: {
      const std::string t = mem_type(n.dtype);
      line(t + "* const " + var(id) + " = " + tensor_ptr(g_.operand(id, 0)) + " + " + at(g_.operand(id, 1)) + ";", id);
      name_[static_cast<size_t>(id)] = var(id);
      break;
    }
    case Op::ProgramId: case Op::NumPrograms: {
      static const char* axes[] = {"x", "y", "z"};
      line("const " + decl(id) + " = static_cast<int>(" + (n.op == Op::ProgramId ? "blockIdx." : "gridDim.") +
               axes[g_.int_at(id, 0)] + ");",
           id);
      break;
    }
    case Op::Arange: {
      const int64_t start = g_.int_at(id, 0);
      if (uniform(id)) {
        line("const " + decl(id) + " = " + str(start) + ";", id);
        break;
      }
      line(decl_stmt(id), id);
      const ValueLayout& v = lay(id);
      line("#pragma unroll");
      line("for (int i = 0; i < " + str(v.regs()) + "; ++i) " + var(id) + "[i] = " + (start ? str(start) + " + " : "") +
           elem(v, "i") + ";");
      break;
    }
    case Op::Broadcast: emit_broadcast(id); break;
    case Op::Reshape: emit_reshape(id); break;
    case Op::ConvertLayout: emit_convert(id); break;
    case Op::Permute: emit_permute(id); break;
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax: emit_reduce(id); break;
    case Op::Dot: emit_dot(id); break;
    case Op::Load: emit_load(id); break;
    case Op::Store: case Op::AtomicAdd: emit_store(id); break;
    case Op::DescLoad: emit_desc_load(id); break;
    case Op::DescStore: emit_desc_store(id); break;
    case Op::DescPrefetch:
      line("if (tid == 0) tj::prefetch_tensormap(" + desc_addr(id) + ");", id);
      break;
    case Op::For: emit_for(id); break;
    case Op::If: emit_if(id); break;
    case Op::LoopIndex: case Op::LoopArg: case Op::LoopResult: case Op::IfResult: case Op::Yield:
      break;  // named and assigned by the For / If that owns them
    default:
      emit_elementwise(id);
      break;
  }
  auto b = builds_.find(id);
  if (b != builds_.end()) build_descriptors(b->second);
}

void Emitter::emit_elementwise(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  std::string e;
  if (n.op == Op::Cast) {
    e = cast(at(ops[0]), g_.node(ops[0]).dtype, n.dtype);
  } else if (n.op == Op::Where) {
    e = "(" + at(ops[0]) + " ? " + at(ops[1]) + " : " + at(ops[2]) + ")";
  } else if (ops.size() == 2) {
    e = detail::binary(n.op, g_.node(ops[0]).dtype, at(ops[0]), at(ops[1]));
  } else if (ops.size() == 1) {
    e = detail::unary(n.op, n.dtype, at(ops[0]));
  } else {
    throw InternalError("emitter: unexpected op " + std::string(ir::name_of(n.op)));
  }
  if (uniform(id)) {
    line("const " + decl(id) + " = " + e + ";", id);
    return;
  }
  line(decl_stmt(id), id);
  element_loop(id, false, false, {var(id) + "[i] = " + e + ";"});
}

void Emitter::emit_broadcast(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  if (uniform(x)) {
    if (uniform(id)) {
      line("const " + decl(id) + " = " + at(x) + ";", id);
      return;
    }
    line(decl_stmt(id), id);
    element_loop(id, false, false, {var(id) + "[i] = " + at(x) + ";"});
    return;
  }
  // The layout pass gave x the layout in which every thread already holds the sources of its elements.
  const layout::Layout& to = lay(id).dist;
  const ir::Shape& sx = g_.node(x).shape;
  check_internal(layout::unbroadcast(to, sx) == lay(x).dist, "emitter: broadcast operand in another layout");
  // Register r of the result reads register src(r) of x: the digits of the kept register factors.
  const std::vector<layout::Term> src = layout::unbroadcast_register_terms(to, sx);
  line(decl_stmt(id) + "  // " + note(id) + ": every thread holds the sources of its elements");
  line("#pragma unroll");
  line("for (int i = 0; i < " + str(lay(id).regs()) + "; ++i) " + var(id) + "[i] = " + name_[static_cast<size_t>(x)] +
       "[" + terms(src, "i") + "];");
}

void Emitter::emit_convert(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const bool resident = L_.smem.resident.count(x) > 0;  // a TMA tile read in place has no registers
  if (uniform(x) || uniform(id) || (!resident && lay(x).dist == lay(id).dist)) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];
    return;
  }
  line("// " + note(id) + ": " + lay(x).dist.str() + " -> " + lay(id).dist.str());
  open("");
  auto [p, staged] = shared_source(x, 0);
  if (staged) sync();
  close();
  read_chunks(id, p, "through shared memory");
  if (staged) scratch_pending_ = true;
}

/// Element i of `id` (row-major coordinates e0, e1, ...) reads element `src` of `x` through shared memory.
void Emitter::emit_gather(NodeId id, NodeId x, const std::string& src) {
  line(decl_stmt(id), id);
  open("");
  auto [p, staged] = shared_source(x, 0);
  if (staged) sync();
  line("const " + mem_type(g_.node(x).dtype) + "* const src = " + p + ";");
  element_loop(id, true, true, {var(id) + "[i] = " + load_elem("src", src, g_.node(x).dtype) + ";"});
  close();
  if (staged) scratch_pending_ = true;
}

void Emitter::emit_reshape(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const ValueLayout &lx = lay(x), &ly = lay(id);
  auto res = L_.smem.resident.find(id);
  if (res != L_.smem.resident.end()) {
    // A reshaped view of a tile still in shared memory: copy to registers only if used there.
    if (L_.smem.register_copies.count(id))
      read_chunks(id, buffer_ptr(res->second, g_.node(id).dtype), note(id) + " (from the TMA tile)");
    return;
  }
  if (lx.kind == ValueLayout::Uniform && ly.kind == ValueLayout::Uniform) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];
    return;
  }
  if (lx.kind == ly.kind && layout::same_registers(lx.dist, ly.dist)) {
    name_[static_cast<size_t>(id)] = name_[static_cast<size_t>(x)];  // same elements in the same registers
    return;
  }
  emit_gather(id, x, "e");  // row-major order is kept: element e of the result is element e of x
}

void Emitter::emit_permute(NodeId id) {
  const NodeId x = g_.operand(id, 0);
  const ir::Shape &sd = g_.node(id).shape, &sx = g_.node(x).shape;
  const auto perm = g_.ints(id);
  const auto stx = row_major(sx);
  if (uniform(x)) {
    line("const " + decl(id) + " = " + at(x) + ";", id);
    return;
  }
  std::string src;
  for (int d = 0; d < sd.rank; ++d) src = add_term(src, coord("e", sd, d), stx[static_cast<size_t>(perm[static_cast<size_t>(d)])]);
  emit_gather(id, x, src.empty() ? "0" : src);
}

namespace {
/// The value every reduction of kind `op` over type `t` starts from.
std::string reduce_identity(Op op, DType t) {
  const bool sum = op == Op::ReduceSum, low = op == Op::ReduceMin;  // low: start at the top of the range
  switch (t) {
    case DType::f32: return sum ? "-0.0f" : low ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    case DType::f64: return sum ? "-0.0" : low ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(0xfff0000000000000ll)";
    case DType::bf16: return sum ? "tj::bf16_t(0x8000)" : low ? "tj::bf16_t(0x7f80)" : "tj::bf16_t(0xff80)";
    case DType::f16: return sum ? "tj::f16_t(0x8000)" : low ? "tj::f16_t(0x7c00)" : "tj::f16_t(0xfc00)";
    case DType::i32: return sum ? "0" : low ? "2147483647" : "(-2147483647 - 1)";
    case DType::i64: return sum ? "0ll" : low ? "9223372036854775807ll" : "(-9223372036854775807ll - 1)";
    case DType::i8: return sum ? "static_cast<signed char>(0)" : low ? "static_cast<signed char>(127)" : "static_cast<signed char>(-128)";
    case DType::u8: return sum ? "static_cast<unsigned char>(0)" : low ? "static_cast<unsigned char>(255)" : "static_cast<unsigned char>(0)";
    case DType::i1: return low ? "true" : "false";
    default: break;
  }
  throw InternalError("emitter: no reduction identity for " + std::string(ir::name_of(t)));
}
}  // namespace

// A reduction in three steps: each thread combines its own registers, the lanes that hold parts of one
// result combine through warp shuffles (butterfly, so every lane ends with the result), and the warps
// that do combine through a small shared buffer. The result is left in every thread that holds its
// slice: in the slice layout, or in every thread when it is one element.
void Emitter::emit_reduce(NodeId id) {
  const ir::Node& n = g_.node(id);
  const NodeId x = g_.operand(id, 0);
  const DType t = g_.node(x).dtype;
  const int axis = static_cast<int>(g_.int_at(id, 0));
  const bool argmax = n.op == Op::ArgMax;
  const std::string tt = reg_type(t);
  if (uniform(x)) {  // one element: the reduction is the element itself
    line("const " + decl(id) + " = " + (argmax ? std::string("0") : at(x)) + ";", id);
    return;
  }
  const layout::Layout& lx = lay(x).dist;
  const bool whole = uniform(id);  // one result: every dimension is reduced (the others have extent 1)
  const ValueLayout& ly = lay(id);
  check_internal(whole || ly.dist == layout::slice(lx, axis), "emitter: reduction result not in the slice layout");
  const layout::ReductionPlan plan = layout::plan_reduction(lx, axis, whole);
  const Op step_op = n.op == Op::ReduceSum ? Op::Add : n.op == Op::ReduceMin ? Op::Min : Op::Max;
  auto combine = [&](const std::string& a, const std::string& b) { return detail::binary(step_op, t, a, b); };
  const std::string ident = reduce_identity(argmax ? Op::ReduceMax : n.op, t);
  const int out_regs = plan.out_regs;
  const std::string acc = var(id) + "_acc", arg = var(id) + "_arg";
  // argmax keeps (value, index) pairs: the other pair wins when its value is greater, or equal with a smaller index.
  auto argmax_take = [&](const std::string& v, const std::string& a, const std::string& also) {
    const std::string wins = detail::argmax_greater(t, v, acc + "[j]") + " || (!" + detail::argmax_greater(t, acc + "[j]", v) +
                             " && " + a + " < " + arg + "[j])";
    return "if (" + (also.empty() ? wins : also + " && (" + wins + ")") + ") " + acc + "[j] = " + v + ", " + arg + "[j] = " + a + ";";
  };

  // 1. Within each thread: result register j combines parent registers r(j, k), k over the axis digits.
  const std::string r = plus(terms(plan.reg_of_j, "j"), terms(plan.reg_of_k, "k"));
  line("// " + note(id) + " over axis " + str(axis) + " of " + lx.str());
  line(tt + " " + acc + "[" + str(out_regs) + "];");
  if (argmax) line("int " + arg + "[" + str(out_regs) + "];");
  const std::string x_i = name_[static_cast<size_t>(x)] + "[i]";
  const std::string valid = guard(lay(x), "i");
  line("#pragma unroll");
  open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
  if (!argmax && plan.axis_regs > 2) {
    // A pairwise tree: log2(K) levels of independent combines instead of a chain of K (the IR leaves
    // the order of a float sum unspecified; max and min do not depend on it).
    const std::string K = str(plan.axis_regs);
    line(tt + " t[" + K + "];");
    line("#pragma unroll");
    open("for (int k = 0; k < " + K + "; ++k)");
    line("const int i = " + r + ";");
    line("t[k] = " + (valid.empty() ? x_i : "(" + valid + ") ? " + x_i + " : " + ident) + ";");
    close();
    line("#pragma unroll");
    open("for (int s = 1; s < " + K + "; s *= 2)");
    line("#pragma unroll");
    line("for (int k = 0; k + s < " + K + "; k += 2 * s) t[k] = " + combine("t[k]", "t[k + s]") + ";");
    close();
    line(acc + "[j] = t[0];");
    close();
  } else {
    line(acc + "[j] = " + ident + ";");
    if (argmax) line(arg + "[j] = 2147483647;");
    line("#pragma unroll");
    open("for (int k = 0; k < " + str(plan.axis_regs) + "; ++k)");
    line("const int i = " + r + ";");
    if (argmax) {
      line("const int a = " + plus(terms(plan.coord_of_k, "k"), terms(plan.coord_of_thread, "")) + ";  // coordinate along the axis");
      line(argmax_take(x_i, "a", valid.empty() ? "" : valid));
    } else {
      const std::string c = acc + "[j] = " + combine(acc + "[j]", x_i) + ";";
      line(valid.empty() ? c : "if (" + valid + ") " + c);
    }
    close();
    close();
  }

  // 2. Across lanes: butterfly shuffles over the combined lane digits.
  if (!plan.shuffle_masks.empty()) {
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    for (int m : plan.shuffle_masks) {
      // The shuffle has a statement of its own: every lane must execute it (an operand of a
      // combine written as a conditional expression might not be evaluated in some lanes).
      line("{");
      line("  const " + tt + " o = tj::shfl_xor(" + acc + "[j], " + str(m) + ");");
      if (argmax) {
        line("  const int oa = tj::shfl_xor(" + arg + "[j], " + str(m) + ");");
        line("  " + argmax_take("o", "oa", ""));
      } else {
        line("  " + acc + "[j] = " + combine(acc + "[j]", "o") + ";");
      }
      line("}");
    }
    close();
  }

  // 3. Across warps: each warp's partial through the scratch arena, then every thread combines them in warp order.
  const int nw = plan.warps;
  const std::string out_e = whole ? "0" : terms(ly.dist.linear_terms(), "j");
  const std::string out_valid = whole ? "" : guard(ly, "j");
  if (nw > 1) {
    scratch_barrier();
    const int64_t out_n = whole ? 1 : n.shape.numel();
    const std::string vals = scratch_ptr(0, t), idxs = scratch_ptr(static_cast<int>((out_n * nw * ir::size_of(t) + 15) / 16 * 16), DType::i32);
    std::string writer;
    for (const layout::Term& term : plan.writer) writer += (writer.empty() ? "" : " && ") + digit(term, "") + " == 0";
    writer = both(writer, out_valid);
    // Slot of result element e from warp w: e * nw + w (just w for a single result).
    const std::string base = out_e == "0" ? "" : "(" + out_e + ") * " + str(nw);
    const std::string slot = base.empty() ? terms(plan.warp_slot, "") : base + " + " + terms(plan.warp_slot, "");
    const std::string first = base.empty() ? "0" : base, other = base.empty() ? "w" : base + " + w";
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    open(writer.empty() ? "" : "if (" + writer + ")");
    line(vals + "[" + slot + "] = " + acc + "[j];");
    if (argmax) line(idxs + "[" + slot + "] = " + arg + "[j];");
    close();
    close();
    sync("partial results of every warp");
    line("#pragma unroll");
    open("for (int j = 0; j < " + str(out_regs) + "; ++j)");
    if (!out_valid.empty()) open("if (" + out_valid + ")");
    line(acc + "[j] = " + vals + "[" + first + "];");
    if (argmax) line(arg + "[j] = " + idxs + "[" + first + "];");
    line("#pragma unroll");
    open("for (int w = 1; w < " + str(nw) + "; ++w)");
    line("const " + tt + " o = " + vals + "[" + other + "];");
    if (argmax) {
      line("const int oa = " + idxs + "[" + other + "];");
      line(argmax_take("o", "oa", ""));
    } else {
      line(acc + "[j] = " + combine(acc + "[j]", "o") + ";");
    }
    close();
    if (!out_valid.empty()) close();
    close();
    scratch_pending_ = true;
  }
  const std::string result = argmax ? arg : acc;
  if (whole) {
    line("const " + decl(id) + " = " + result + "[0];");
  } else {
    name_[static_cast<size_t>(id)] = result;
  }
}

void Emitter::emit_dot(NodeId id) {
  const NodeId a = g_.operand(id, 0), b = g_.operand(id, 1), c = g_.operand(id, 2);
  const DType ta = g_.node(a).dtype, tc = g_.node(id).dtype;
  const ir::Shape &sa = g_.node(a).shape, &sc = g_.node(id).shape;
  const int64_t K = sa.dims[1], N = sc.dims[1];
  line(decl_stmt(id), id);
  const std::string acc = at(id);
  const std::string ea = "A[" + coord("e", sc, 0) + " * " + str(K) + " + kk]", eb = "B[kk * " + str(N) + " + " + coord("e", sc, 1) + "]";
  // acc += a * b, as the IR defines it: each product is rounded (to f32, or f64 for f64 inputs)
  // and then added to the accumulator in its type, in order k = 0, 1, ... (no fused multiply-add).
  std::string step;
  if (ir::is_float(ta)) {
    const bool wide = ta == DType::f64;
    const std::string prod = wide ? "__dmul_rn(" + ea + ", " + eb + ")"
                                  : "__fmul_rn(" + cast(ea, ta, DType::f32) + ", " + cast(eb, ta, DType::f32) + ")";
    if (tc == DType::f64) {
      step = "__dadd_rn(" + acc + ", " + (wide ? prod : "static_cast<double>(" + prod + ")") + ")";
    } else if (wide) {
      step = detail::from_compute("__double2float_rn(__dadd_rn(static_cast<double>(" + detail::to_compute(acc, tc) + "), " + prod + "))", tc);
    } else {
      step = detail::from_compute("__fadd_rn(" + detail::to_compute(acc, tc) + ", " + prod + ")", tc);
    }
  } else if (ir::is_float(tc)) {
    // Integer products (wrapping in 64 bits) added to a float accumulator with one rounding.
    const std::string prod = "tj::mul_wrap(static_cast<long long>(" + ea + "), static_cast<long long>(" + eb + "))";
    const std::string sum = "__dadd_rn(static_cast<double>(" + detail::to_compute(acc, tc) + "), tj::i64_to_f64_odd(" + prod + "))";
    step = tc == DType::f64 ? sum : detail::from_compute("__double2float_rn(" + sum + ")", tc);
  } else if (tc == DType::i32 || tc == DType::i64) {
    step = "tj::add_wrap(" + acc + ", tj::mul_wrap(" + cast(ea, ta, tc) + ", " + cast(eb, ta, tc) + "))";
  } else {
    step = "static_cast<" + reg_type(tc) + ">(" + acc + " + " + cast(ea, ta, DType::i32) + " * " + cast(eb, ta, DType::i32) + ")";
  }
  if (uniform(id)) {
    line(var(id) + " = " + at(c) + ";");
  } else {
    line("#pragma unroll");
    line("for (int i = 0; i < " + str(lay(id).regs()) + "; ++i) " + var(id) + "[i] = " + at(c) + ";");
  }
  open("");
  const bool ra = L_.smem.resident.count(a) > 0;
  const int a_bytes = ra ? 0 : static_cast<int>(sa.numel()) * ir::size_of(ta);
  auto [pa, sta] = shared_source(a, 0);
  auto [pb, stb] = shared_source(b, ra ? 0 : (a_bytes + 15) / 16 * 16);
  if (sta || stb) sync();
  line("const " + mem_type(ta) + "* const A = " + pa + ";  // [" + str(sa.dims[0]) + ", " + str(K) + "]");
  line("const " + mem_type(ta) + "* const B = " + pb + ";  // [" + str(K) + ", " + str(N) + "]");
  // k outermost: every accumulator still sums its products in order k = 0, 1, ...
  open("for (int kk = 0; kk < " + str(K) + "; ++kk)");
  element_loop(id, true, true, {acc + " = " + step + ";"});
  close();
  close();
  if (sta || stb) scratch_pending_ = true;
}

void Emitter::emit_load(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  const bool masked = g_.int_at(id, 0) != 0;
  const std::string p = tensor_ptr(ops[0]);
  std::string e = load_elem(p, at(ops[1]), n.dtype);
  if (masked) e = "(" + at(ops[2]) + " ? " + e + " : " + at(ops[3]) + ")";
  if (uniform(id)) {
    line("const " + decl(id) + " = " + e + ";", id);
    return;
  }
  const int v = passes::vector_width(g_, L_.layout, L_.axes, L_.spec, id);
  if (v > 1) {
    // Vectors of v consecutive elements: contiguous, aligned and under one mask value (axis analysis).
    line(decl_stmt(id) + "  // " + note(id) + ", " + str(v) + " elements per access");
    vector_loop(id, v, [&] {
      const std::string ld = "tj::ldg<" + str(v) + ">(&" + var(id) + "[i], " + p + " + " + at(ops[1]) + ");";
      if (!masked) return line(ld);
      line("if (" + at(ops[2]) + ") " + ld);
      line("else for (int j = 0; j < " + str(v) + "; ++j) " + var(id) + "[i + j] = " + at(ops[3], "i + j") + ";");
    });
    return;
  }
  line(decl_stmt(id), id);
  element_loop(id, false, true, {var(id) + "[i] = " + e + ";"});
}

void Emitter::vector_loop(NodeId id, int v, const std::function<void()>& body) {
  const std::string g = guard(lay(id), "i");
  line("#pragma unroll");
  open("for (int i = 0; i < " + str(lay(id).regs()) + "; i += " + str(v) + ")");
  if (!g.empty()) open("if (" + g + ")");
  body();
  if (!g.empty()) close();
  close();
}

void Emitter::emit_store(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  const bool masked = g_.int_at(id, 0) != 0;
  const std::string p = tensor_ptr(ops[0]);
  const NodeId offs = ops[1];
  std::string s;
  if (n.op == Op::Store) {
    s = p + "[" + at(offs) + "] = " +
        (n.dtype == DType::i1 ? "static_cast<unsigned char>(" + at(ops[2]) + ")" : at(ops[2])) + ";";
  } else {
    const std::string addr = p + " + " + at(offs);
    if (n.dtype == DType::f16) s = "tj::red_add_f16(" + addr + ", " + at(ops[2]) + ");";
    else if (n.dtype == DType::bf16) s = "tj::red_add_bf16(" + addr + ", " + at(ops[2]) + ");";
    else s = "tj::red_add(" + addr + ", " + at(ops[2]) + ");";
  }
  if (masked) s = "if (" + at(ops[3]) + ") " + s;
  if (uniform(offs)) {
    line("if (tid == 0) " + (masked ? "{ " + s + " }" : s), id);  // one thread performs a scalar effect
    return;
  }
  const int v = passes::vector_width(g_, L_.layout, L_.axes, L_.spec, id);
  if (v > 1) {
    line("// " + note(id) + ", " + str(v) + " elements per access");
    vector_loop(offs, v, [&] {
      const std::string st = "tj::stg<" + str(v) + ">(" + p + " + " + at(offs) + ", &" + name_[static_cast<size_t>(ops[2])] + "[i]);";
      line(masked ? "if (" + at(ops[3]) + ") " + st : st);
    });
    return;
  }
  line("// " + note(id));
  element_loop(offs, false, true, {s}, true);  // one thread per element, also where several hold it
}

// ---- TMA ------------------------------------------------------------------------------------

void Emitter::emit_desc_load(NodeId id) {
  const ir::Node& n = g_.node(id);
  const passes::LoadPlan& lp = L_.smem.loads.at(id);
  const ir::TmaAttrs a = ir::tma_attrs(g_, id);
  const std::string bar = "&tj_bar[" + str(lp.barrier) + "]";
  const std::string buf = "tj_buf" + str(lp.buffer);
  const int64_t bytes = n.shape.numel() * ir::size_of(n.dtype);
  std::string shape;
  for (int i = 0; i < a.rank; ++i) shape += (i ? "x" : "") + str(n.shape.dims[i]);
  line("// " + note(id) + ": " + shape + " " + std::string(ir::name_of(n.dtype)) + " tile, " + str(bytes) + " bytes");
  if (lp.repeated && lp.all_threads_wait && !synced_this_iteration()) sync("every thread is done with the previous tile");
  open("if (tid == 0)");
  if (lp.repeated && lp.read_by_tma_store)
    line("tj::bulk_wait_group_read<0>();  // the TMA store of the previous tile has read the buffer");
  line("tj::mbarrier_arrive_expect_tx(" + bar + ", " + str(bytes) + ");");
  tma_pieces(id, [&](const std::string& offset, const std::string& crd) {
    line("tj::tma_load_" + str(a.rank) + "d(" + buf + offset + ", " + desc_addr(id) + ", " + bar + crd + ");");
  });
  close();
  const std::string phase = lp.repeated ? "tj_phase" + str(lp.barrier) : "0";
  const std::string wait = "tj::mbarrier_wait_parity(" + bar + ", " + phase + ");";
  line(lp.all_threads_wait ? wait : "if (tid == 0) " + wait);
  if (lp.repeated) line("tj_phase" + str(lp.barrier) + " ^= 1u;");
  if (L_.smem.register_copies.count(id)) read_chunks(id, buf, "tile elements of this thread");
}

void Emitter::emit_desc_store(NodeId id) {
  const ir::Node& n = g_.node(id);
  const passes::StorePlan& sp = L_.smem.stores.at(id);
  const ir::TmaAttrs a = ir::tma_attrs(g_, id);
  const NodeId v = g_.operands(id).back();
  stores_ = true;
  static const char* kinds[] = {"store", "reduce_add", "reduce_min", "reduce_max"};
  const std::string buf = buffer_ptr(sp.buffer, n.dtype);
  const char* how = sp.mode == passes::StorePlan::FromLoad ? "straight from the loaded tile"
                    : sp.mode == passes::StorePlan::InPlace ? "computed in place in the loaded tile's buffer"
                                                           : "staged in its own buffer";
  line("// " + note(id) + ": " + kinds[a.reduce] + ", " + how);
  if (sp.mode != passes::StorePlan::FromLoad) {
    if (sp.mode == passes::StorePlan::Staged && sp.repeated) {
      line("if (tid == 0) tj::bulk_wait_group_read<0>();  // the previous store has read the buffer");
      sync();
    }
    write_chunks(v, buf);
    line("tj::fence_proxy_async_shared();  // make the writes visible to the TMA unit");
    sync();
  }
  open("if (tid == 0)");
  tma_pieces(id, [&](const std::string& offset, const std::string& crd) {
    const std::string src = offset.empty() ? "tj_buf" + str(sp.buffer) : buffer_ptr(sp.buffer, n.dtype) + offset;
    line("tj::tma_" + std::string(kinds[a.reduce]) + "_" + str(a.rank) + "d(" + desc_addr(id) + ", " + src + crd + ");");
  });
  line("tj::bulk_commit_group();");
  close();
}

// ---- control flow ------------------------------------------------------------------------------

void Emitter::assign_all(const std::vector<std::pair<NodeId, NodeId>>& dst_src) {
  // Parallel assignment: when a source is the current value of another destination, go through temporaries.
  std::set<std::string> dsts;
  bool clash = false;
  for (const auto& [d, s] : dst_src) {
    if (dsts.count(name_[static_cast<size_t>(s)])) clash = true;
    dsts.insert(name_[static_cast<size_t>(d)]);
  }
  std::vector<std::pair<NodeId, std::string>> plan;
  for (const auto& [d, s] : dst_src) {
    if (name_[static_cast<size_t>(d)] == name_[static_cast<size_t>(s)]) continue;
    if (clash) {
      const std::string tmp = name_[static_cast<size_t>(d)] + "_next";
      if (uniform(d)) {
        line("const " + reg_type(g_.node(d).dtype) + " " + tmp + " = " + at(s) + ";");
      } else {
        line(reg_type(g_.node(d).dtype) + " " + tmp + "[" + str(lay(d).regs()) + "];");
        line("#pragma unroll");
        line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + tmp + "[i] = " + at(s) + ";");
      }
      plan.push_back({d, tmp});
    } else {
      plan.push_back({d, ""});
      if (uniform(d)) {
        line(at(d) + " = " + at(s) + ";");
      } else {
        line("#pragma unroll");
        line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + at(d) + " = " + at(s) + ";");
      }
    }
  }
  if (!clash) return;
  for (const auto& [d, tmp] : plan) {
    if (uniform(d)) {
      line(at(d) + " = " + tmp + ";");
    } else {
      line("#pragma unroll");
      line("for (int i = 0; i < " + str(lay(d).regs()) + "; ++i) " + at(d) + " = " + tmp + "[i];");
    }
  }
}

void Emitter::emit_for(NodeId id) {
  const auto ops = g_.operands(id);
  const auto body = static_cast<uint32_t>(g_.int_at(id, 0));
  const size_t carried = ops.size() - 3;
  NodeId index = ir::kNoNode;
  std::vector<NodeId> args(carried, ir::kNoNode);
  for (NodeId b : g_.region(body).nodes) {
    if (g_.node(b).op == Op::LoopIndex) index = b;
    if (g_.node(b).op == Op::LoopArg) args[static_cast<size_t>(g_.int_at(b, 0))] = b;
  }
  std::vector<std::pair<NodeId, NodeId>> init;
  for (size_t k = 0; k < carried; ++k) {
    if (args[k] == ir::kNoNode) continue;
    line(decl(args[k]) + ";  // loop-carried value " + str(static_cast<int64_t>(k)));
    init.push_back({args[k], ops[3 + k]});
  }
  assign_all(init);
  const std::string iv = index == ir::kNoNode ? "tj_i" + str(id) : var(index);
  if (index != ir::kNoNode) name_[static_cast<size_t>(index)] = iv;
  open("for (int " + iv + " = " + at(ops[0]) + "; " + iv + " < " + at(ops[1]) + "; " + iv + " += " + at(ops[2]) + ")", id);
  scratch_pending_ = true;  // an earlier iteration may still be reading the scratch arena
  loops_.push_back(LoopFrame{});
  emit_region(body);
  const NodeId yield = g_.region(body).nodes.back();
  std::vector<std::pair<NodeId, NodeId>> next;
  for (size_t k = 0; k < carried; ++k)
    if (args[k] != ir::kNoNode) next.push_back({args[k], g_.operand(yield, static_cast<int>(k))});
  assign_all(next);
  loops_.pop_back();
  close();
  scratch_pending_ = true;
  for (NodeId u : L_.info.users[static_cast<size_t>(id)]) {
    if (g_.node(u).op != Op::LoopResult) continue;
    const NodeId arg = args[static_cast<size_t>(g_.int_at(u, 0))];
    check_internal(arg != ir::kNoNode, "emitter: loop result without a loop argument");
    name_[static_cast<size_t>(u)] = name_[static_cast<size_t>(arg)];
  }
}

void Emitter::emit_if(NodeId id) {
  std::vector<NodeId> results;
  for (NodeId u : L_.info.users[static_cast<size_t>(id)])
    if (g_.node(u).op == Op::IfResult) results.push_back(u);
  for (NodeId r : results) line(decl(r) + ";  // if result " + str(g_.int_at(r, 0)));
  const bool before = scratch_pending_;
  bool after = false;
  for (int k = 0; k < 2; ++k) {
    const auto region = static_cast<uint32_t>(g_.int_at(id, k));
    const auto& nodes = g_.region(region).nodes;
    if (k == 1 && nodes.size() == 1 && results.empty()) break;  // empty else
    if (k == 0) {
      open("if (" + at(g_.operand(id, 0)) + ")", id);
    } else {
      out_.erase(out_.size() - 1);  // the newline after the then-branch's "}"
      line_tail(" else {");
      ++depth_;
    }
    scratch_pending_ = before;
    if (!loops_.empty()) ++loops_.back().if_depth;
    emit_region(region);
    if (!loops_.empty()) --loops_.back().if_depth;
    std::vector<std::pair<NodeId, NodeId>> assign;
    for (NodeId r : results) assign.push_back({r, g_.operand(nodes.back(), static_cast<int>(g_.int_at(r, 0)))});
    assign_all(assign);
    after = after || scratch_pending_;
    --depth_;
    line("}");
  }
  scratch_pending_ = after || before;
}

void Emitter::run(GeneratedKernel& k) {
  std::string kernel = signature() + " {\n";
  prologue();
  emit_region(0);
  if (stores_) line("if (tid == 0) tj::bulk_wait_group_read<0>();  // TMA stores have read shared memory before exit");
  kernel += out_ + "}\n";
  k.source = header();
  k.source += "\n";
  k.prelude_begin = k.source.size();
  k.source += detail::prelude_source();
  k.prelude_end = k.source.size();
  k.source += "\n" + kernel;
}

}  // namespace

GeneratedKernel generate(const ir::Graph& g, const Options& options) {
  const passes::Lowered l = passes::lower(g, options, options.dump_ir);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, g.hash());
  GeneratedKernel k;
  k.entry = "tj_" + detail::sanitize(g.kernel_name) + "_" + hash;
  Emitter e(l, options, k.entry);
  e.run(k);
  k.plan = l.args.plan;
  return k;
}

}  // namespace tilejit::codegen
