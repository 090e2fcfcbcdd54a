// Kernel argument checks shared by the GPU launcher and the interpreter, with overflow-checked extents.
#include "tilejit/arg_rules.h"

#include "tilejit/checked.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"

namespace tilejit::args {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

const char* kind_name(int kind) {
  static constexpr const char* kNames[] = {"a tensor", "a tensor array", "a scalar", "a configuration value"};
  return kind >= 0 && kind < 4 ? kNames[kind] : "an unknown kind";
}

[[noreturn]] void fail(const CallSite& at, const std::string& rule, const std::string& value, const std::string& limit) {
  throw UserError(rule, value, limit, at.file, at.line);
}

// "kernel 'k': argument 2 (arg2)" or "... argument 2 (arg2) element 5"; built only for a message.
std::string arg_name(const ir::Graph& g, size_t p, int64_t element = -1) {
  std::string n = "kernel '" + g.kernel_name + "': argument " + s(static_cast<int64_t>(p)) + " (" + g.params[p].name + ")";
  if (element >= 0) n += " element " + s(element);
  return n;
}

std::string where(const ir::Graph& g, ir::NodeId id) {
  const ir::Location& l = g.location(id);
  return l.file + ":" + std::to_string(l.line);
}

void check_tensor(const ir::Graph& g, const TensorArg& t, size_t p, int64_t element, const CallSite& at, Mode mode) {
  const ir::Param& param = g.params[p];
  if (t.dtype != param.dtype)
    fail(at, arg_name(g, p, element) + " has the wrong element type", std::string(ir::name_of(t.dtype)),
         std::string(ir::name_of(param.dtype)));
  if (t.rank != param.rank) fail(at, arg_name(g, p, element) + " has the wrong rank", s(t.rank), s(param.rank));
  Extent e;
  if (auto v = tensor_extent(t, e)) fail(at, arg_name(g, p, element) + ": " + v->rule, v->value, v->limit);
  if (t.data == nullptr && (mode.gpu || !e.empty()))
    fail(at, arg_name(g, p, element) + " is a null pointer", "nullptr",
         mode.gpu ? "a device address" : "an address (the tensor has elements)");
}

void check_tma_extent(const ir::Graph& g, const TensorArg& t, size_t p, int64_t element, ir::NodeId use, const CallSite& at) {
  for (int d = 0; d < t.rank; ++d) {
    const int64_t n = t.sizes[static_cast<size_t>(d)];
    if (n > kMaxTmaCoordinateExtent)
      fail(at,
           arg_name(g, p, element) + " is used through TMA (at " + where(g, use) +
               "), whose coordinates are signed 32-bit: every size must be reachable by one",
           "size[" + s(d) + "] = " + s(n), "<= 2^31 = " + s(kMaxTmaCoordinateExtent));
  }
}

// The parameter a TMA access uses directly (a tensor parameter or an element of a tensor array
// parameter), or -1 for views made in the kernel (checked where they are used).
int direct_tma_param(const ir::Graph& g, ir::NodeId t) {
  const ir::Node& n = g.node(t);
  if (n.op == ir::Op::ParamTensor) return ir::attrs<ir::ParamAttrs>(g, t).param;
  if (n.op == ir::Op::ArrayElem) return ir::attrs<ir::ParamAttrs>(g, g.operand(t, 0)).param;
  return -1;
}

}  // namespace

std::optional<tma::Violation> tensor_extent(const TensorArg& t, Extent& out) {
  out = Extent{0, 0};
  bool empty = false;
  for (int d = 0; d < t.rank; ++d) {
    const int64_t n = t.sizes[static_cast<size_t>(d)];
    if (n < 0) return tma::Violation{"negative size", "size[" + s(d) + "] = " + s(n), ">= 0"};
    if (n == 0) empty = true;
  }
  if (empty) {
    out = Extent{};
    return std::nullopt;
  }
  for (int d = 0; d < t.rank; ++d) {
    const int64_t n = t.sizes[static_cast<size_t>(d)], st = t.strides[static_cast<size_t>(d)];
    const std::optional<int64_t> span = checked::mul(n - 1, st);
    int64_t& bound = span && *span < 0 ? out.lo : out.hi;
    const std::optional<int64_t> next = span ? checked::add(bound, *span) : std::nullopt;
    if (!next)
      return tma::Violation{"the tensor's element offsets overflow 64 bits",
                            "size[" + s(d) + "] = " + s(n) + ", stride[" + s(d) + "] = " + s(st),
                            "offsets (size - 1) x stride, summed over the dimensions, within 64 bits"};
    bound = *next;
  }
  // The bytes [lo * es, (hi + 1) * es) from the base must be addressable: no int64 overflow and no
  // wrap around the address space from the base pointer.
  const int64_t es = ir::size_of(t.dtype);
  const std::optional<int64_t> lo_bytes = checked::mul(out.lo, es);
  const std::optional<int64_t> hi1 = checked::add(out.hi, 1);
  const std::optional<int64_t> hi_bytes = hi1 ? checked::mul(*hi1, es) : std::nullopt;
  const auto base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data));
  const bool wraps = lo_bytes && hi_bytes &&
                     ((*lo_bytes < 0 && static_cast<uint64_t>(0) - static_cast<uint64_t>(*lo_bytes) > base) ||
                      static_cast<uint64_t>(*hi_bytes) > UINT64_MAX - base);
  if (!lo_bytes || !hi_bytes || wraps)
    return tma::Violation{"the tensor's bytes do not fit in the address space",
                          "element offsets " + s(out.lo) + ".." + s(out.hi) + " of " + s(es) + " bytes from address " +
                              std::to_string(base),
                          "byte offsets and end address within 64 bits"};
  return std::nullopt;
}

GraphFacts graph_facts(const ir::Graph& g) {
  GraphFacts f;
  for (ir::NodeId id = 0; id < static_cast<ir::NodeId>(g.size()); ++id) {
    const ir::Op op = g.node(id).op;
    if (op != ir::Op::DescLoad && op != ir::Op::DescStore && op != ir::Op::DescPrefetch) continue;
    const int p = direct_tma_param(g, g.operand(id, 0));
    bool seen = p < 0;
    for (const auto& [q, n] : f.tma) seen = seen || q == p;
    if (!seen) f.tma.emplace_back(p, id);
  }
  for (int p : ir::written_params(g)) f.writes.emplace_back(p, ir::first_write(g, p));
  return f;
}

void check_launch_args(const ir::Graph& g, const GraphFacts& facts, std::span<const KernelArg> args, const CallSite& at,
                       Mode mode) {
  if (args.size() != g.params.size())
    fail(at, "kernel '" + g.kernel_name + "': wrong number of kernel arguments (configuration parameters included)",
         s(static_cast<int64_t>(args.size())), s(static_cast<int64_t>(g.params.size())));
  for (size_t p = 0; p < args.size(); ++p) {
    const ir::Param& param = g.params[p];
    const KernelArg& a = args[p];
    if (static_cast<int>(a.kind) != static_cast<int>(param.kind))
      fail(at, arg_name(g, p) + " has the wrong kind: expected " + kind_name(param.kind) + ", got " + kind_name(a.kind),
           kind_name(a.kind), kind_name(param.kind));
    if (param.kind == ir::Param::Tensor) check_tensor(g, a.tensor, p, -1, at, mode);
    if (param.kind == ir::Param::TensorArray) {
      if (mode.gpu && a.array.empty()) fail(at, arg_name(g, p) + ", a tensor array, is empty", "0 tensors", ">= 1");
      for (size_t k = 0; k < a.array.size(); ++k) check_tensor(g, a.array[k], p, static_cast<int64_t>(k), at, mode);
    }
  }
  for (const auto& [p, use] : facts.tma) {
    const KernelArg& a = args[static_cast<size_t>(p)];
    if (a.kind == KernelArg::Tensor) check_tma_extent(g, a.tensor, static_cast<size_t>(p), -1, use, at);
    for (size_t k = 0; k < a.array.size(); ++k)
      check_tma_extent(g, a.array[k], static_cast<size_t>(p), static_cast<int64_t>(k), use, at);
  }
  for (const auto& [p, write] : facts.writes) {
    const KernelArg& a = args[static_cast<size_t>(p)];
    bool read_only = a.kind == KernelArg::Tensor && a.tensor.read_only;
    for (const TensorArg& t : a.array) read_only = read_only || t.read_only;
    if (read_only)
      fail(at,
           arg_name(g, static_cast<size_t>(p)) + " is a read-only view, and the kernel writes it" +
               (write == ir::kNoNode ? std::string() : " (at " + where(g, write) + ")"),
           "a const pointer or a read-only DLPack tensor", "a writable tensor (a non-const pointer)");
  }
}

}  // namespace tilejit::args
