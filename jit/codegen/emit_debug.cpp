// Checked kernels (Options::debug_checks, TILEJIT_DEBUG=1): device-built descriptors, TMA coordinates and
// pointer accesses validated on the GPU. A failed check prints one line, in the interpreter's words (kernel,
// the op's file and line, rule, value, limit, program id), and traps.
#include "codegen/emitter.h"
#include "tilejit/ir/effects.h"
#include "tilejit/tma_rules.h"

namespace tilejit::codegen::detail {

namespace {

// `text` as the inside of a printf format literal: quotes and backslashes escaped, % doubled.
std::string format_literal(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '%') out += '%';
    out += c;
  }
  return out;
}

const char* op_name(Op op) { return op == Op::DescStore ? "descriptor_store" : "descriptor_load"; }

}  // namespace

std::string Emitter::debug_check(const std::string& cond, NodeId op, const std::string& rule, const std::string& value_fmt,
                                 const std::string& limit_fmt, const std::string& args) const {
  const std::string fmt = "tilejit: kernel " + format_literal(entry_) + ", " + format_literal(where(op)) + ": " +
                          format_literal(rule) + ": " + value_fmt + " (limit: " + limit_fmt + ") in program (%u, %u, %u)\\n";
  return "if (" + cond + ") tj::debug_fail(\"" + fmt + "\"" + (args.empty() ? "" : ", " + args) + ");";
}

std::string Emitter::mbarrier_wait(const std::string& index, const std::string& phase, NodeId op, const std::string& what) const {
  const std::string bar = "&tj_bar[" + index + "]";
  if (!opt_.debug_checks) return "tj::mbarrier_wait_parity(" + bar + ", " + phase + ");";
  const std::string fmt = "tilejit: kernel " + format_literal(entry_) + ", " + format_literal(where(op)) + ": watchdog: " +
                          format_literal(what) + ": mbarrier %u, phase %u, not complete after " + str(opt_.watchdog_ms) +
                          " ms (TILEJIT_DEBUG_WATCHDOG_MS) in program (%u, %u, %u)\\n";
  return "tj::mbarrier_wait_parity_watchdog(" + bar + ", " + phase + ", " + str(static_cast<int64_t>(opt_.watchdog_ms) * 1000000) +
         "ull, \"" + fmt + "\", static_cast<unsigned>(" + index + "));";
}

void Emitter::debug_descriptor(const Descriptor& d, const std::string& base) {
  const int r = d.rank;
  const NodeId op = d.first_use;
  line("// checked: the fields of this descriptor (TILEJIT_DEBUG)");
  line(debug_check("reinterpret_cast<unsigned long long>(" + base + ") % 16 != 0", op,
              "the base address of a TMA tensor must be 16-byte aligned", "address %% 16 = %llu", "0",
              "reinterpret_cast<unsigned long long>(" + base + ") % 16"));
  // size<i> / stride<i> are innermost first; the messages count dimensions outermost first, as the DSL does.
  const auto outer = [&](int i) { return str(r - 1 - i); };
  if (d.view != ir::kNoNode && ir::is_rows_view(g_, d.view)) {
    const size_t n = g_.operands(d.view).size();
    const std::string start = at(g_.operand(d.view, static_cast<int>(n) - 2)), end = at(g_.operand(d.view, static_cast<int>(n) - 1));
    line(debug_check("size" + str(r - 1) + " < 0", d.view, "rows(start, end): end is before start", "start %lld, end %lld",
                "end >= start", "static_cast<long long>(" + start + "), static_cast<long long>(" + end + ")"));
  }
  for (int i = 0; i < r; ++i) {
    const std::string s = "size" + str(i);
    if (d.view != ir::kNoNode && !ir::is_rows_view(g_, d.view))
      line(debug_check(s + " < 0", d.view, "make_view: the size of dimension " + outer(i) + " is negative", "%lld", ">= 0", s));
    // The host rule's limit (tma::check_global), not the descriptor's 2^32: see kMaxCoordinateExtent.
    line(debug_check(s + " > " + str(tma::kMaxCoordinateExtent) + "ll", op,
                     "TMA tensor size out of range in dimension " + outer(i) + ": " + tma::kCoordinateExtentRule, "%lld",
                     tma::kSizeRange, s));
  }
  for (int i = 1; i < r; ++i) {
    const std::string s = "stride" + str(i);
    line(debug_check(s + " % 16 != 0 || " + s + " <= 0", op,
                "TMA tensor strides must be positive multiples of 16 bytes (dimension " + outer(i) + ")", "%lld bytes",
                "a multiple of 16 bytes", s));
    line(debug_check(s + " >= (1ll << 40)", op, "TMA tensor stride too large in dimension " + outer(i), "%lld bytes",
                "< 2^40 bytes", s));
  }
  for (int i = 0; i < r; ++i)
    line("static_assert(" + str(d.box[static_cast<size_t>(r - 1 - i)]) + " <= 256, \"box_dim[" + str(i) +
         "] must be at most 256\");");
}

void Emitter::debug_tma(NodeId id) {
  const Descriptor& d = L_.tma.descriptors[static_cast<size_t>(L_.tma.of.at(id))];
  const Op op = g_.node(id).op;
  const int r = d.rank;
  const int64_t esize = ir::size_of(d.dtype);
  const std::string what = op_name(op);
  line("// checked: the TMA rules of this operation (TILEJIT_DEBUG)");
  // A constant coordinate that keeps a rule needs no check.
  const auto known = [&](NodeId c, auto&& ok) { return g_.node(c).op == Op::Const && ok(ir::attrs<ir::ConstAttrs>(g_, c).bits); };
  // An i64 index became this i32 coordinate while tracing: the i64 value must fit, else it wrapped.
  for (int k = 0; k < r; ++k) {
    const NodeId c = g_.operand(id, 1 + k);
    if (g_.node(c).op != Op::Cast || g_.node(g_.operand(c, 0)).dtype != DType::i64) continue;
    const std::string v = "static_cast<long long>(" + at(g_.operand(c, 0)) + ")";
    line(debug_check(v + " < " + str(tma::kMinCoordinate) + "ll || " + v + " > " + str(tma::kMaxCoordinate) + "ll", id,
                     what + ": " + tma::kCoordinateRule, "coordinate " + str(k) + " = %lld", tma::kCoordinateRange, v));
  }
  const NodeId inner_node = g_.operand(id, r);
  const std::string inner = "static_cast<long long>(" + at(inner_node) + ")";
  if (!known(inner_node, [&](int64_t v) { return v * esize % 16 == 0; }))
    line(debug_check("(" + inner + " * " + str(esize) + ") % 16 != 0", id, what + ": " + tma::kInnerCoordinateRule,
                     "%lld x " + str(esize) + " bytes = %lld bytes", "a multiple of 16 bytes",
                     inner + ", " + inner + " * " + str(esize)));
  if (op == Op::DescStore)
    for (int k = 0; k < r; ++k) {
      if (known(g_.operand(id, 1 + k), [](int64_t v) { return v >= 0; })) continue;
      const std::string c = "static_cast<long long>(" + at(g_.operand(id, 1 + k)) + ")";
      line(debug_check(c + " < 0", id, std::string("descriptor_store: ") + tma::kStoreCoordinateRule,
                  "coordinate " + str(k) + " = %lld", ">= 0", c));
    }
  if (d.kind != DescKind::Device) return;  // host-encoded descriptors were checked when they were encoded
  for (int k = 0; k < r; ++k) {
    const std::string s = "static_cast<long long>(" + tensor_field(d.tensor, passes::TensorField::size, k) + ")";
    line(debug_check(s + " < 1", id, what + ": TMA tensor size out of range in dimension " + str(k) + " (an empty view)", "%lld",
                tma::kSizeRange, s));
  }
  if (op == Op::DescStore) {
    const std::string s = "static_cast<long long>(" + tensor_field(d.tensor, passes::TensorField::size, r - 1) + ")";
    line(debug_check("(" + s + " * " + str(esize) + ") % 16 != 0", id, std::string("descriptor_store: ") + tma::kStoreExtentRule,
                "%lld x " + str(esize) + " bytes = %lld bytes", "a multiple of 16 bytes", s + ", " + s + " * " + str(esize)));
  }
}

std::string Emitter::debug_last_offset(NodeId tensor) const {
  const int rank = passes::detail::resolve_tensor(g_, tensor).rank();
  std::string empty, last;
  for (int k = 0; k < rank; ++k) {
    const std::string size = "static_cast<long long>(" + tensor_field(tensor, passes::TensorField::size, k) + ")";
    empty += (k ? " || " : "") + size + " < 1";
    last += (k ? " + " : "") + std::string("(") + size + " - 1) * static_cast<long long>(" + tensor_field(tensor, passes::TensorField::stride, k) + ")";
  }
  return "((" + empty + ") ? -1ll : " + last + ")";
}

void Emitter::debug_pointer(NodeId id) {
  const auto ops = g_.operands(id);
  const Op op = g_.node(id).op;
  const bool masked = ir::attrs<ir::AccessAttrs>(g_, id).masked;
  const NodeId t = ops[0], offs = ops[1];
  const NodeId mask = !masked ? ir::kNoNode : op == Op::Load ? ops[2] : ops[3];
  const NodeId root = ir::view_base(g_, t);
  const std::string what = op == Op::Load ? "load" : op == Op::Store ? "store" : "atomic_add";
  line("// checked: the elements this access touches lie in its tensor (TILEJIT_DEBUG)");
  open("");
  // Allowed element offsets from the tensor's pointer: inside the view and inside the argument it views.
  if (root == t) {
    line("const long long tj_lo = 0, tj_hi = " + debug_last_offset(t) + ";  // the tensor's last element");
  } else {
    line("const long long tj_view_last = " + debug_last_offset(t) + ";");
    line("const long long tj_root_last = " + debug_last_offset(root) + ";  // of the argument it views");
    line("const long long tj_delta = " + tensor_ptr(t) + " - " + tensor_ptr(root) + ";  // the view's start in the argument");
    line("const long long tj_lo = tj_delta < 0 ? -tj_delta : 0;");
    line("const long long tj_hi = tj_view_last < tj_root_last - tj_delta ? tj_view_last : tj_root_last - tj_delta;");
  }
  const std::string off = "static_cast<long long>(" + at(offs) + ")";
  std::string cond = off + " < tj_lo || " + off + " > tj_hi";
  if (mask != ir::kNoNode) cond = at(mask) + " && (" + cond + ")";
  const std::string rule = what + ": unmasked access outside " +
                           (root == t ? "tensor argument " : "a view of tensor argument ") +
                           g_.params[static_cast<size_t>(ir::attrs<ir::ParamAttrs>(g_, root).param)].name;
  const std::string check =
      debug_check(cond, id, rule, "element offset %lld", "offsets %lld..%lld", off + ", tj_lo, tj_hi");
  element_loop(offs, false, true, {check});
  close();
}

}  // namespace tilejit::codegen::detail
