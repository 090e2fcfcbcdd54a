// The program generator: a plan of parameters and launch shape from the seed, then a body traced through
// the DSL (tests/fuzz/ops.h) while the same statements are printed as the C++ a user would write.
#include "program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>

#include "common.h"
#include "ops.h"
#include "tilejit/dsl/trace.h"
#include "tilejit/error.h"
#include "tilejit/tilejit.h"

namespace tilejit::fuzz {

namespace {

using ir::DType;

const std::vector<DType> kTensorTypes = {DType::f32, DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32,
                                         DType::i64, DType::i8,  DType::u8,   DType::f8e4m3, DType::f8e5m2};
const std::vector<DType> kArithTypes = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64, DType::i8, DType::u8};

// ---- error bounds -------------------------------------------------------------
// Each value carries a bound on how far the GPU's result may be from the interpreter's, in the units of
// gpu_test::compare_elements (|gpu - interp| <= err * max(1, |interp|)), and a bound on its magnitude.
// Exact operations on exact values give err = 0 (bit-exact); transcendentals and float sums start an
// error, which arithmetic carries; operations that are not continuous (casts to integers, comparisons,
// division, argmax) take exact operands only.

/// A value of the body: its node, the name or expression that denotes it in the printed C++, and bounds.
struct E {
  Val v;
  std::string s;
  double err = 0;
  double mag = 0;
  bool exact() const { return err == 0; }
};

const char* unary_name(Unary u) {
  switch (u) {
    case Unary::neg: return "-";
    case Unary::abs: return "abs";
    case Unary::logical_not: return "!";
    case Unary::exp: return "exp";
    case Unary::exp2: return "exp2";
    case Unary::log: return "log";
    case Unary::log2: return "log2";
    case Unary::sqrt: return "sqrt";
    case Unary::rsqrt: return "rsqrt";
    case Unary::sin: return "sin";
    case Unary::cos: return "cos";
    case Unary::tanh: return "tanh";
    case Unary::sigmoid: return "sigmoid";
    case Unary::erf: return "erf";
  }
  return "?";
}
const char* binary_name(Binary b) {
  switch (b) {
    case Binary::add: return "+";
    case Binary::sub: return "-";
    case Binary::mul: return "*";
    case Binary::div: return "/";
    case Binary::rem: return "%";
    case Binary::bit_and: return "&";
    case Binary::bit_or: return "|";
    case Binary::bit_xor: return "^";
    case Binary::minimum: return "minimum";
    case Binary::maximum: return "maximum";
    case Binary::eq: return "==";
    case Binary::ne: return "!=";
    case Binary::lt: return "<";
    case Binary::le: return "<=";
    case Binary::gt: return ">";
    case Binary::ge: return ">=";
  }
  return "?";
}
bool is_compare(Binary b) { return b >= Binary::eq; }
/// `s` in parentheses when it is a compound expression (so that it stays one operand in C++).
std::string paren(const std::string& s) { return s.find(' ') == std::string::npos ? s : "(" + s + ")"; }
std::string apply_text(Binary b, const std::string& x, const std::string& y) {
  if (b == Binary::minimum || b == Binary::maximum) return std::string(binary_name(b)) + "(" + x + ", " + y + ")";
  return paren(x) + " " + binary_name(b) + " " + paren(y);
}

/// The element type of `a op b` (README "Type rules": integers of different widths promote).
DType result_type(Binary op, DType a, DType b) {
  if (is_compare(op)) return DType::i1;
  if (a == b || !ir::is_int(a) || !ir::is_int(b)) return a;
  if (ir::size_of(a) != ir::size_of(b)) return ir::size_of(a) > ir::size_of(b) ? a : b;
  return ir::is_signed_int(a) ? a : b;
}

/// A tensor the body can access: a parameter or a view of one, with what the generator knows of it.
struct T {
  TensorRef ref;
  std::string s;
  int spec = 0;  ///< index of the parameter in Program::tensors
};

// ---- the body -----------------------------------------------------------------
class Body {
 public:
  Body(const Program& p, TraceRecord& rec)
      : p_(p), rec_(rec), rng_(p.seed ^ 0xB0D1ull), extra_(p.seed ^ 0x7E3Full), combine_(p.seed ^ 0xC0B1ull) {}

  void run(ir::Graph& g) {
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const TensorSpec& t = p_.tensors[i];
      params_.push_back(T{param_tensor(g, static_cast<int>(i), t.dtype, t.rank), t.name, static_cast<int>(i)});
    }
    for (size_t i = 0; i < p_.scalars.size(); ++i) {
      const ScalarSpec& s = p_.scalars[i];
      const Val v = param_scalar(g, static_cast<int>(p_.tensors.size() + i), s.dtype);
      scalars_.push_back(E{v, s.name, 0, ir::is_float(s.dtype) ? std::fabs(s.value) : 0});
    }
    rec_.tolerance.assign(p_.tensors.size(), 0.0);
    scopes_.emplace_back();
    source();
    const int steps = static_cast<int>(rng_.range(2, 7));
    for (int i = 0; i < steps; ++i) step(0, nullptr);
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      if (p_.tensors[i].output) output(static_cast<int>(i));
  }
  std::string text() const { return text_; }

 private:
  // ---- printing ----
  void line(const std::string& s) { text_ += std::string(static_cast<size_t>(2 * indent_), ' ') + s + "\n"; }
  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }
  /// Names the value of expression `e` in a new statement.
  E bind(E e) {
    const std::string name = fresh("v");
    line("auto " + name + " = " + e.s + ";");
    e.s = name;
    scopes_.back().push_back(e);
    return e;
  }

  // ---- scalars ----
  /// program_id(axis) * mult + add (a literal when mult is 0), as an i32 scalar.
  E affine(int axis, int64_t mult, const E* loop_index, int64_t loop_mult, int64_t add) {
    E e;
    bool have = false;
    if (axis >= 0 && mult != 0) {
      e.v = binary_literal(Binary::mul, program_id(axis), static_cast<double>(mult));
      e.s = "program_id(" + int_str(axis) + ") * " + int_str(mult);
      have = true;
    }
    if (loop_index && loop_mult != 0) {
      const Val t = binary_literal(Binary::mul, loop_index->v, static_cast<double>(loop_mult));
      const std::string ts = loop_index->s + " * " + int_str(loop_mult);
      if (have) {
        e.v = binary(Binary::add, e.v, t);
        e.s += " + " + ts;
      } else {
        e.v = t;
        e.s = ts;
        have = true;
      }
    }
    if (!have) return E{int_literal(DType::i32, add), int_str(add)};
    if (add > 0) {
      e.v = binary_literal(Binary::add, e.v, static_cast<double>(add));
      e.s += " + " + int_str(add);
    } else if (add < 0) {
      e.v = binary_literal(Binary::sub, e.v, static_cast<double>(-add));
      e.s += " - " + int_str(-add);
    }
    return e;
  }

  // ---- picking values ----
  std::vector<E> visible(const std::function<bool(const E&)>& pred) const {
    std::vector<E> out;
    for (const auto& sc : scopes_)
      for (const E& e : sc)
        if (pred(e)) out.push_back(e);
    return out;
  }
  bool full_shape(const E& e) const {
    if (e.v.rank != p_.rank) return false;
    const ir::Shape& s = dsl::detail::graph().node(e.v.id).shape;
    for (int i = 0; i < p_.rank; ++i)
      if (s.dims[i] != p_.tile[i]) return false;
    return true;
  }
  /// A value of the tile's shape (the most recent ones more often).
  E pick_tile(const std::function<bool(const E&)>& pred) {
    auto c = visible([&](const E& e) { return full_shape(e) && pred(e); });
    if (c.empty()) return source();
    if (rng_.chance(0.5)) return c.back();
    return rng_.pick(c);
  }
  E pick_tile() {
    return pick_tile([](const E&) { return true; });
  }

  /// `e` converted to `d` (no statement: an expression), with the error of the rounding.
  E convert(const E& e, DType d) {
    if (e.v.dtype == d) return e;
    E r{cast(e.v, d), paren(e.s) + ".to<" + tag(d) + ">()", e.err, e.mag};
    if (ir::is_float(d)) {
      if (!ir::is_float(e.v.dtype)) r.mag = e.v.dtype == DType::i1 ? 1 : std::max(e.mag, 1e19);
      if (!e.exact()) r.err = e.err + ulp(d);
      r.mag = std::min(r.mag, max_finite(d));
    } else {
      r.mag = 0;
    }
    return r;
  }
  /// True when an inexact value of magnitude `mag` stays clear of overflow in `d`.
  static bool safe(DType d, double err, double mag) {
    return err == 0 || (err < 0.05 && mag < max_finite(d) / 16);
  }
  /// `e` made ready for arithmetic: fp8 and bool blocks are converted to f32 / i32 first.
  E arith(const E& e) {
    if (ir::is_fp8(e.v.dtype)) return bind(convert(e, DType::f32));
    if (e.v.dtype == DType::i1) return bind(convert(e, DType::i32));
    return e;
  }

  // ---- statements ----
  /// One random statement; inside a loop body `loop_index` is its index.
  void step(int depth, const E* loop_index) {
    const int64_t k = rng_.range(0, 99);
    if (k < 22) source(loop_index);
    else if (k < 42) binary_step();
    else if (k < 52) unary_step();
    else if (k < 60) cast_step();
    else if (k < 70) where_step();
    else if (k < 80) reduce_step();
    else if (k < 86) literal_step();
    else if (k < 93 && depth < 2) loop_step(depth);
    else if (depth < 2) if_step(depth, loop_index);
    else binary_step();
  }

  E source(const E* loop_index = nullptr) {
    std::vector<int> inputs;
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      if (!p_.tensors[i].output) inputs.push_back(static_cast<int>(i));
    const int64_t k = rng_.range(0, 99);
    if (k < 60) return tma_load(rng_.pick(inputs), loop_index);
    if (k < 88) return pointer_load(rng_.pick(inputs), loop_index);
    if (k < 94 && !scalars_.empty()) {
      // A scalar parameter broadcast over the tile.
      const E& s = rng_.pick(scalars_);
      std::vector<int64_t> shape(p_.tile.begin(), p_.tile.begin() + p_.rank);
      return bind(E{full_of(shape, s.v), "full<" + tag(s.v.dtype) + ">(" + list(shape) + ", " + s.s + ")", 0, s.mag});
    }
    const DType d = rng_.pick(kArithTypes);
    std::vector<int64_t> shape(p_.tile.begin(), p_.tile.begin() + p_.rank);
    const double c = static_cast<double>(rng_.range(-8, 8)) / (ir::is_float(d) ? 4 : 1);
    const std::string cs = ir::is_float(d) ? float_str(c, DType::f64) : int_str(static_cast<int64_t>(c));
    return bind(E{full(d, shape, c), "full<" + tag(d) + ">(" + list(shape) + ", " + cs + ")", 0, std::fabs(c)});
  }

  /// The tensor to read `spec` through: the parameter, with a forced device placement, or a device-built view.
  T reader(int spec) {
    const TensorSpec& t = p_.tensors[static_cast<size_t>(spec)];
    const T& param = params_[static_cast<size_t>(spec)];
    const int64_t k = rng_.range(0, 99);
    if (k < 10) return T{with_placement(param.ref, 2), param.s + ".with_placement(Placement::device)", spec};
    if (k < 25) {
      // Rows [start, end) of dimension 0 with start = program_id(0) * a + b.
      const int64_t q = t.rank == 1 ? per16(t.dtype) : 1, gx = p_.grid.x, n = t.sizes[0];
      int64_t a = q * rng_.range(0, 2), b = q * rng_.range(0, std::max<int64_t>(0, n / 2 / q));
      if ((gx - 1) * a + b >= n) a = b = 0;
      const int64_t len = rng_.range(1, n - ((gx - 1) * a + b));
      const E start = affine(0, a, nullptr, 0, b), end = affine(0, a, nullptr, 0, b + len);
      const std::string name = fresh("w");
      line("auto " + name + " = " + param.s + ".rows(" + start.s + ", " + end.s + ");");
      return T{rows(param.ref, start.v, end.v), name, spec};
    }
    if (k < 35) {
      // A sub-block (every other row of dimension 0 at times) starting at a program-dependent offset.
      const int64_t q = per16(t.dtype), gx = p_.grid.x;
      std::vector<int64_t> off(static_cast<size_t>(t.rank)), size(off.size()), stride(off.size());
      // Programs start `step` rows apart (16 bytes apart for a rank-1 tensor, to keep the base aligned).
      int64_t step = rng_.range(0, 1) * (t.rank == 1 ? q : 1), c = 0;
      for (int i = 0; i < t.rank; ++i) {
        const int64_t grain = i == t.rank - 1 ? q : 1;
        int64_t o = grain * rng_.range(0, t.sizes[i] / 2 / grain);
        if (i == 0 && o + (gx - 1) * step >= t.sizes[0]) step = 0;
        if (o + (i == 0 ? (gx - 1) * step : 0) >= t.sizes[i]) o = 0;
        off[i] = o;
        stride[i] = t.strides[i];
        size[i] = rng_.range(1, t.sizes[i] - o - (i == 0 ? (gx - 1) * step : 0));
        c += o * t.strides[i];
      }
      if (t.rank >= 2 && rng_.chance(0.3)) {
        stride[0] *= 2;
        size[0] = (size[0] + 1) / 2;
      }
      const E offset = affine(0, step * t.strides[0], nullptr, 0, c);
      std::vector<Val> sv, tv;
      for (int i = 0; i < t.rank; ++i) {
        sv.push_back(int_literal(DType::i64, size[i]));
        tv.push_back(int_literal(DType::i64, stride[i]));
      }
      const std::string name = fresh("w");
      line("auto " + name + " = make_view(" + param.s + ", " + offset.s + ", " + list(size) + ", " + list(stride) + ");");
      return T{make_view(param.ref, offset.v, sv, tv), name, spec};
    }
    return param;
  }

  E tma_load(int spec, const E* loop_index) {
    const TensorSpec& t = p_.tensors[static_cast<size_t>(spec)];
    const T x = reader(spec);
    const int r = p_.rank;
    const int64_t q = per16(t.dtype);
    std::vector<int64_t> box(static_cast<size_t>(r)), est(box.size());
    bool strided = false;
    for (int i = 0; i < r; ++i) {
      int64_t e = 1;
      if (i < r - 1 && rng_.chance(0.3)) e = rng_.range(2, 4);
      while (p_.tile[i] * e > 256) --e;
      est[i] = e;
      box[i] = p_.tile[i] == 1 ? rng_.range(1, e) : p_.tile[i] * e;
      strided |= e != 1;
    }
    const int fill = ir::is_float(t.dtype) && !ir::is_fp8(t.dtype) && rng_.chance(0.2) ? 1 : 0;
    std::vector<Val> coords;
    std::string cs;
    for (int i = 0; i < r; ++i) {
      const int64_t grain = i == r - 1 ? q : 1;
      int axis = -1;
      for (int a = 0; a < 2; ++a)
        if (p_.pid_dim[a] == i && rng_.chance(0.8)) axis = a;
      const int64_t mult = axis >= 0 ? box[i] * rng_.range(0, 1) : 0;
      const int64_t lmult = loop_index && rng_.chance(0.5) ? round_up(box[i], grain) : 0;
      const int64_t add = grain * rng_.range(-box[i] / grain - 1, t.sizes[i] / grain);
      const E c = affine(axis, round_up(mult, grain), loop_index, lmult, add);
      coords.push_back(c.v);
      cs += (i ? ", " : "") + c.s;
    }
    if (rng_.chance(0.1)) {
      prefetch_descriptor(x.ref, box, strided ? est : std::vector<int64_t>{}, fill);
      line("prefetch_descriptor(" + x.s + ", " + list(box) + (strided ? ", " + list(est) : std::string(fill ? ", {}" : "")) +
           (fill ? ", Fill::nan" : "") + ");");
    }
    const Val v = descriptor_load(x.ref, coords, box, strided ? est : std::vector<int64_t>{}, fill);
    const std::string s = "descriptor_load(" + x.s + ", {" + cs + "}, " + list(box) +
                          (strided ? ", " + list(est) : std::string(fill ? ", {}" : "")) + (fill ? ", Fill::nan" : "") + ")";
    return bind(E{v, s, 0, ir::is_float(t.dtype) ? 4.0 : 0.0});
  }

  /// Index blocks, offsets and mask of a pointer access to tensor `x` over the tile at `origin`.
  struct Access {
    E offsets, mask;
  };
  Access pointer_access(const T& x, const std::vector<E>& origin) {
    const int r = p_.rank;
    E off, mask;
    for (int i = 0; i < r; ++i) {
      std::vector<int64_t> shape(static_cast<size_t>(r), 1);
      shape[static_cast<size_t>(i)] = p_.tile[i];
      const Val ar = arange_along(p_.tile[i], r, i);
      const std::string ars = r == 1 ? "arange(0, " + int_str(p_.tile[i]) + ")"
                                     : "arange(0, " + int_str(p_.tile[i]) + ").reshape(" + list(shape) + ")";
      const E idx = bind(E{binary(Binary::add, ar, origin[static_cast<size_t>(i)].v), ars + " + " + paren(origin[static_cast<size_t>(i)].s)});
      const E term{binary(Binary::mul, idx.v, tensor_stride(x.ref, i)), idx.s + " * " + x.s + ".stride(" + int_str(i) + ")"};
      const Val lo = binary_literal(Binary::ge, idx.v, 0);
      const E in{binary(Binary::bit_and, lo, binary(Binary::lt, idx.v, tensor_size(x.ref, i))),
                 "(" + idx.s + " >= 0) & (" + idx.s + " < " + x.s + ".size(" + int_str(i) + "))"};
      if (i == 0) {
        off = term;
        mask = in;
      } else {
        off = E{binary(Binary::add, off.v, term.v), off.s + " + " + term.s};
        mask = E{binary(Binary::bit_and, mask.v, in.v), mask.s + " & " + in.s};
      }
    }
    return Access{bind(off), bind(mask)};
  }

  E pointer_load(int spec, const E* loop_index) {
    const TensorSpec& t = p_.tensors[static_cast<size_t>(spec)];
    const T& x = params_[static_cast<size_t>(spec)];
    std::vector<E> origin;
    for (int i = 0; i < p_.rank; ++i) {
      int axis = -1;
      for (int a = 0; a < 2; ++a)
        if (p_.pid_dim[a] == i && rng_.chance(0.8)) axis = a;
      const int64_t lmult = loop_index && rng_.chance(0.5) ? p_.tile[i] : 0;
      origin.push_back(affine(axis, axis >= 0 ? p_.tile[i] : 0, loop_index, lmult, rng_.range(-p_.tile[i], t.sizes[i])));
    }
    const Access a = pointer_access(x, origin);
    const bool flt = ir::is_float(t.dtype);
    const double other = flt ? static_cast<double>(rng_.range(-8, 8)) / 4 : static_cast<double>(rng_.range(-3, 3));
    const std::string os = flt ? float_str(other, DType::f64) : int_str(static_cast<int64_t>(other));
    return bind(E{load(x.ref, a.offsets.v, a.mask.v, other), "load(" + x.s + ", " + a.offsets.s + ", " + a.mask.s + ", " + os + ")", 0,
                  flt ? 4.0 : 0.0});
  }

  /// x op y for tile values, when the bounds allow it.
  bool binary_step() {
    static const std::vector<Binary> ops = {Binary::add, Binary::sub, Binary::mul, Binary::div, Binary::rem,
                                            Binary::bit_and, Binary::bit_or, Binary::bit_xor, Binary::minimum, Binary::maximum,
                                            Binary::eq, Binary::ne, Binary::lt, Binary::le, Binary::gt, Binary::ge};
    const Binary op = rng_.pick(ops);
    E x = pick_tile(), y = rng_.chance(0.15) && !scalars_.empty() ? rng_.pick(scalars_) : pick_tile();
    const bool logic = op == Binary::bit_and || op == Binary::bit_or || op == Binary::bit_xor;
    const bool both_bool = x.v.dtype == DType::i1 && y.v.dtype == DType::i1;
    if (!(logic && both_bool)) {
      x = arith(x);
      y = arith(y);
    }
    if ((logic || op == Binary::rem) && !both_bool) {
      if (!ir::is_int(x.v.dtype)) x = bind(convert(x, rng_.pick(std::vector<DType>{DType::i32, DType::i8, DType::u8, DType::i64})));
      if (!ir::is_int(y.v.dtype)) y = convert(y, x.v.dtype);
    } else if (!(ir::is_int(x.v.dtype) && ir::is_int(y.v.dtype)) && x.v.dtype != y.v.dtype) {
      y = convert(y, x.v.dtype);
    }
    if (!x.exact() || !y.exact()) {
      if (!(op == Binary::add || op == Binary::sub || op == Binary::mul || op == Binary::minimum || op == Binary::maximum)) return false;
    }
    E r{Val{}, apply_text(op, x.s, y.s)};
    const double ea = x.err * std::max(1.0, x.mag), eb = y.err * std::max(1.0, y.mag);
    const DType d = result_type(op, x.v.dtype, y.v.dtype);
    if (op == Binary::add || op == Binary::sub) {
      r.err = ea + eb;
      r.mag = x.mag + y.mag;
    } else if (op == Binary::mul) {
      r.err = x.mag * eb + y.mag * ea + ea * eb;
      r.mag = x.mag * y.mag;
    } else if (op == Binary::minimum || op == Binary::maximum) {
      r.err = std::max(ea, eb);
      r.mag = std::max(x.mag, y.mag);
    } else if (op == Binary::div) {
      r.mag = ir::is_float(d) ? max_finite(d) : 0;
    } else {
      r.mag = 0;
    }
    if (!r.exact()) r.err += ulp(d);
    if (!safe(d, r.err, r.mag)) return false;
    r.v = binary(op, x.v, y.v);
    bind(r);
    return true;
  }

  void literal_step() {
    E x = arith(pick_tile());
    const bool flt = ir::is_float(x.v.dtype);
    static const std::vector<Binary> ops = {Binary::add, Binary::sub, Binary::mul, Binary::maximum, Binary::lt, Binary::div};
    const Binary op = rng_.pick(ops);
    if (!x.exact() && (op == Binary::lt || op == Binary::div)) return;
    const double c = flt ? static_cast<double>(rng_.range(-12, 12)) / 4 : static_cast<double>(rng_.range(-5, 5));
    const std::string cs = flt ? float_str(c, x.v.dtype) : int_str(static_cast<int64_t>(c));
    E r{Val{}, apply_text(op, x.s, cs), 0, 0};
    if (flt) {
      const double ea = x.err * std::max(1.0, x.mag);
      r.mag = op == Binary::mul ? x.mag * std::fabs(c) : op == Binary::div ? max_finite(x.v.dtype) : x.mag + std::fabs(c);
      r.err = op == Binary::mul ? ea * std::fabs(c) : ea;
      if (!r.exact()) r.err += ulp(x.v.dtype);
      if (!safe(x.v.dtype, r.err, r.mag)) return;
    }
    r.v = binary_literal(op, x.v, c);
    bind(r);
  }

  void unary_step() {
    E x = pick_tile();
    if (x.v.dtype == DType::i1) {
      bind(E{unary(Unary::logical_not, x.v), "!" + x.s});
      return;
    }
    x = arith(x);
    static const std::vector<Unary> math = {Unary::exp, Unary::exp2, Unary::log, Unary::log2, Unary::sqrt, Unary::rsqrt,
                                            Unary::sin, Unary::cos, Unary::tanh, Unary::sigmoid, Unary::erf};
    if (ir::is_float(x.v.dtype) && x.exact() && rng_.chance(0.7)) {
      const Unary u = rng_.pick(math);
      E r{unary(u, x.v), std::string(unary_name(u)) + "(" + x.s + ")"};
      const DType d = x.v.dtype;
      const bool ieee = u == Unary::sqrt && (d == DType::f32 || d == DType::f64);
      r.err = ieee ? 0 : math_tol(d);
      switch (u) {
        case Unary::exp: case Unary::exp2: r.mag = std::min(std::exp2(std::min(x.mag * 1.5, 2000.0)), max_finite(d)); break;
        case Unary::sin: case Unary::cos: case Unary::tanh: case Unary::sigmoid: case Unary::erf: r.mag = 1; break;
        case Unary::sqrt: r.mag = std::sqrt(x.mag); break;
        default: r.mag = max_finite(d); break;
      }
      if (!safe(d, r.err, r.mag)) r.mag = max_finite(d);
      bind(r);
      return;
    }
    const Unary u = rng_.chance(0.5) ? Unary::neg : Unary::abs;
    bind(round_trip(E{unary(u, x.v), u == Unary::neg ? "-" + x.s : "abs(" + x.s + ")", x.err, x.mag}));
  }

  /// Sometimes `e` permuted and permuted back (a transpose through shared memory and its inverse, each
  /// in its own layout); the value and its bounds are unchanged.
  E round_trip(E e) {
    if (e.v.rank < 2 || !extra_.chance(0.3)) return e;
    std::vector<int64_t> perm(static_cast<size_t>(e.v.rank));
    for (int d = 0; d < e.v.rank; ++d) perm[static_cast<size_t>(d)] = d;
    for (int d = e.v.rank - 1; d > 0; --d) std::swap(perm[static_cast<size_t>(d)], perm[static_cast<size_t>(extra_.range(0, d))]);
    if (std::is_sorted(perm.begin(), perm.end())) std::swap(perm[0], perm[1]);
    std::vector<int64_t> inverse(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) inverse[static_cast<size_t>(perm[d])] = static_cast<int64_t>(d);
    e.v = permute(permute(e.v, perm), inverse);
    e.s = "(" + e.s + ").permute(" + list(perm) + ").permute(" + list(inverse) + ")";
    return e;
  }

  void cast_step() {
    const E x = pick_tile();
    static const std::vector<DType> to = {DType::f32, DType::bf16, DType::f16, DType::f64, DType::i32, DType::i64,
                                          DType::i8,  DType::u8,   DType::i1,  DType::f8e4m3, DType::f8e5m2};
    const DType d = rng_.pick(to);
    if (!x.exact() && (!ir::is_float(d) || !safe(d, x.err + ulp(d), x.mag))) return;
    bind(convert(x, d));
  }

  void where_step() {
    E c = pick_tile([](const E& e) { return e.v.dtype == DType::i1; });
    if (c.v.dtype != DType::i1) {
      E a = arith(c);
      if (!a.exact()) return;
      const double lim = ir::is_float(a.v.dtype) ? 0.5 : 1;
      c = bind(E{binary_literal(Binary::gt, a.v, lim), a.s + " > " + (ir::is_float(a.v.dtype) ? float_str(lim, a.v.dtype) : "1")});
    }
    const E a = pick_tile();
    const E b0 = pick_tile();
    if (b0.v.dtype != a.v.dtype && !b0.exact() && !(ir::is_float(a.v.dtype) && safe(a.v.dtype, b0.err + ulp(a.v.dtype), b0.mag))) return;
    const E b = convert(b0, a.v.dtype);
    const double ea = a.err * std::max(1.0, a.mag), eb = b.err * std::max(1.0, b.mag);
    bind(E{where(c.v, a.v, b.v), "where(" + c.s + ", " + a.s + ", " + b.s + ")", std::max(ea, eb), std::max(a.mag, b.mag)});
  }

  /// A reduction over a random axis, broadcast back over the tile and combined with a tile value.
  void reduce_step() {
    E x = arith(pick_tile());
    const int axis = static_cast<int>(rng_.range(0, p_.rank - 1));
    const int64_t n = p_.tile[axis];
    static const std::vector<Reduction> ops = {Reduction::sum, Reduction::max, Reduction::min, Reduction::argmax};
    const Reduction op = rng_.pick(ops);
    if (op == Reduction::argmax && !x.exact()) return;
    if (op == Reduction::sum && (x.v.dtype == DType::f16 || x.v.dtype == DType::bf16)) x = bind(convert(x, DType::f32));
    static const char* names[] = {"sum", "max", "min", "argmax"};
    // Sometimes the same reduction through reduce() and a combine function (its own random stream, so
    // that the programs of earlier seeds keep their structure).
    const bool with_combine = combine_.chance(0.3);
    E r{Val{}, std::string(names[static_cast<int>(op)]) + "(" + x.s + ", " + int_str(axis) + ")", x.err, x.mag};
    if (with_combine)
      r.s = op == Reduction::argmax ? "std::get<1>(reduce(std::tuple{" + x.s + ", arange(0, " + int_str(n) + ") along axis " +
                                          int_str(axis) + "}, " + int_str(axis) + ", " + combine_text(op) + "))"
                                    : "reduce(" + x.s + ", " + int_str(axis) + ", " + combine_text(op) + ")";
    DType rd = x.v.dtype;
    if (op == Reduction::argmax) {
      r.err = 0;
      r.mag = 0;
      rd = DType::i32;
    } else if (op == Reduction::sum && ir::is_float(x.v.dtype)) {
      const double ea = x.err * std::max(1.0, x.mag);
      r.mag = static_cast<double>(n) * x.mag;
      r.err = static_cast<double>(n) * ea + static_cast<double>(n * n) * ulp(x.v.dtype) * std::max(1.0, x.mag);
      if (!safe(x.v.dtype, r.err, r.mag)) return;
    } else if (op == Reduction::sum) {
      r.mag = 0;
    }
    // Combine the reduction, broadcast back over the tile, with a tile value of a type the operator accepts.
    const E y = arith(pick_tile());
    const bool to_y = !(ir::is_int(y.v.dtype) && ir::is_int(rd)) && y.v.dtype != rd;
    const DType cd = to_y ? y.v.dtype : rd;
    if (to_y && !r.exact() && !(ir::is_float(cd) && safe(cd, r.err + ulp(cd), r.mag))) return;
    const Binary op2 = rng_.pick(std::vector<Binary>{Binary::add, Binary::sub, Binary::maximum, Binary::minimum});
    const double rerr = to_y && !r.exact() ? r.err + ulp(cd) : r.err;
    const double ea = y.err * std::max(1.0, y.mag), eb = rerr * std::max(1.0, r.mag);
    const bool additive = op2 == Binary::add || op2 == Binary::sub;
    const DType od = result_type(op2, y.v.dtype, cd);
    double err = additive ? ea + eb : std::max(ea, eb);
    const double mag = additive ? y.mag + r.mag : std::max(y.mag, r.mag);
    if (err != 0) err += ulp(od);
    if (!safe(od, err, mag)) return;
    r.v = with_combine ? reduce_combine(op, x.v, axis) : reduce(op, x.v, axis);
    E rr = bind(E{expand_dims(r.v, axis), r.s + ".expand_dims<" + int_str(axis) + ">()", r.err, r.mag});
    if (to_y) rr = convert(rr, cd);
    bind(E{binary(op2, y.v, rr.v), apply_text(op2, y.s, rr.s), err, mag});
  }

  /// A scalar condition: on program ids, a scalar parameter or the loop index.
  E condition(const E* loop_index) {
    const int64_t k = rng_.range(0, 3);
    if (k == 0 && loop_index) {
      const Val m = binary_literal(Binary::rem, loop_index->v, 2);
      return E{binary_literal(Binary::eq, m, 0), loop_index->s + " % 2 == 0"};
    }
    if (k == 1) {
      for (const E& s : scalars_)
        if (ir::is_float(s.v.dtype) || ir::is_int(s.v.dtype)) {
          const bool f = ir::is_float(s.v.dtype);
          return E{binary_literal(Binary::gt, s.v, f ? 0.5 : 1), s.s + " > " + (f ? float_str(0.5, s.v.dtype) : "1")};
        }
    }
    const int axis = p_.grid.y > 1 && rng_.chance(0.5) ? 1 : 0;
    const Binary op = rng_.chance(0.5) ? Binary::eq : Binary::lt;
    const int64_t c = rng_.range(0, 2);
    return E{binary_literal(op, program_id(axis), static_cast<double>(c)),
             "program_id(" + int_str(axis) + ") " + binary_name(op) + " " + int_str(c)};
  }

  void loop_step(int depth) {
    const E init = pick_tile([](const E& e) { return !ir::is_fp8(e.v.dtype) && e.v.dtype != DType::i1; });
    if (ir::is_fp8(init.v.dtype) || init.v.dtype == DType::i1) return;
    const bool runtime_trip = rng_.chance(0.4);
    const int64_t trips = runtime_trip ? p_.grid.x : rng_.range(1, 3);
    const E hi = runtime_trip ? E{binary_literal(Binary::add, program_id(0), 1), "program_id(0) + 1"}
                              : E{int_literal(DType::i32, trips), int_str(trips)};
    const Binary op = rng_.pick(std::vector<Binary>{Binary::add, Binary::maximum, Binary::minimum});
    const std::string index = fresh("i"), acc = fresh("v"), name = fresh("v");
    line("auto " + name + " = for_range(0, " + hi.s + ", 1, " + init.s + ", [&](Scalar<i32> " + index + ", Value<" +
         tag(init.v.dtype) + ", " + int_str(init.v.rank) + "> " + acc + ") {");
    double err = 0, mag = 0;
    const Val result = for_range(int_literal(DType::i32, 0), hi.v, 1, init.v, [&](const Val& i, const Val& a) {
      ++indent_;
      scopes_.emplace_back();
      const E ie{i, index};
      const int steps = static_cast<int>(rng_.range(1, 3));
      source(&ie);
      for (int s = 0; s < steps; ++s) step(depth + 1, &ie);
      const E x = convert(pick_convertible(init.v.dtype), init.v.dtype);
      const E a_e{a, acc, 0, 0};
      const E next{binary(op, a_e.v, x.v), apply_text(op, acc, x.s)};
      const double n = static_cast<double>(trips), ei = init.err * std::max(1.0, init.mag), ex = x.err * std::max(1.0, x.mag);
      if (op == Binary::add) {
        mag = init.mag + n * x.mag;
        err = ei + n * ex + (ex + ei > 0 ? n * ulp(init.v.dtype) * std::max(1.0, mag) : 0);
      } else {
        mag = std::max(init.mag, x.mag);
        err = std::max(ei, ex);
      }
      line("return " + next.s + ";");
      scopes_.pop_back();
      --indent_;
      return next.v;
    });
    line("});");
    E r{result, name, err, mag};
    if (!safe(r.v.dtype, r.err, r.mag)) r.mag = max_finite(r.v.dtype);  // kept, but unused below
    if (safe(r.v.dtype, r.err, r.mag)) scopes_.back().push_back(r);
  }

  /// A tile value that converts to `d` within the error bounds (a new load when none does).
  E pick_convertible(DType d) {
    const auto ok = [&](const E& e) {
      return e.exact() || (ir::is_float(d) && safe(d, e.v.dtype == d ? e.err : e.err + ulp(d), e.mag));
    };
    const E e = pick_tile(ok);
    return ok(e) ? e : source();
  }

  std::vector<int64_t> tile_shape() const { return std::vector<int64_t>(p_.tile.begin(), p_.tile.begin() + p_.rank); }

  void if_step(int depth, const E* loop_index) {
    const E cond = condition(loop_index);
    const E like = pick_tile();
    const DType d = like.v.dtype;
    const std::string name = fresh("v");
    line("auto " + name + " = if_else(" + cond.s + ", [&] {");
    double err = 0, mag = 0;
    const auto branch = [&](bool first) {
      ++indent_;
      scopes_.emplace_back();
      const int steps = static_cast<int>(rng_.range(0, 2));
      for (int s = 0; s < steps; ++s) step(depth + 1, loop_index);
      const E x = convert(pick_convertible(d), d);
      err = std::max(err, x.err * std::max(1.0, x.mag));
      mag = std::max(mag, x.mag);
      line("return " + x.s + ";");
      scopes_.pop_back();
      --indent_;
      if (first) line("}, [&] {");
      return x.v;
    };
    const Val v = if_else(cond.v, d, p_.rank, [&] { return branch(true); }, [&] { return branch(false); });
    line("});");
    scopes_.back().push_back(E{v, name, err == 0 ? 0 : err + ulp(d), mag});
  }

  /// Writes output `spec` once per program, over the program's own tile.
  void output(int spec) {
    const TensorSpec& t = p_.tensors[static_cast<size_t>(spec)];
    const T& y = params_[static_cast<size_t>(spec)];
    const E v = convert(pick_convertible(t.dtype), t.dtype);
    const bool guarded = rng_.chance(0.2);
    E cond;
    if (guarded) {
      cond = condition(nullptr);
      line("if_then(" + cond.s + ", [&] {");
      ++indent_;
    }
    const auto body = [&] {
      std::vector<E> origin;
      const int64_t q = t.tma_store ? per16(t.dtype) : 1;
      for (int i = 0; i < p_.rank; ++i) {
        const int axis = p_.pid_dim[0] == i ? 0 : p_.pid_dim[1] == i ? 1 : -1;
        const int64_t grain = i == p_.rank - 1 ? q : 1;
        origin.push_back(affine(axis, axis >= 0 ? p_.tile[i] : 0, nullptr, 0, grain * rng_.range(0, (t.sizes[i] / 2) / grain)));
      }
      if (t.tma_store) {
        int reduce = 0;
        const bool narrow = ir::is_fp8(t.dtype) || t.dtype == DType::i8 || t.dtype == DType::u8;
        if (!narrow && rng_.chance(0.25)) reduce = static_cast<int>(rng_.range(1, 3));
        // sm_90's TMA reductions: add for f16, bf16, f32, i32, i64; min / max for f16, bf16, i32, i64.
        if (reduce == 1 && (t.dtype == DType::f64 || t.dtype == DType::i64)) reduce = 0;  // no TMA add for these
        if (reduce > 1 && (t.dtype == DType::f32 || t.dtype == DType::f64)) reduce = 0;
        std::vector<Val> coords;
        std::string cs;
        for (size_t i = 0; i < origin.size(); ++i) {
          coords.push_back(origin[i].v);
          cs += (i ? ", " : "") + origin[i].s;
        }
        static const char* reduces[] = {"", ", StoreReduce::add", ", StoreReduce::min", ", StoreReduce::max"};
        const E& val = v;
        descriptor_store(y.ref, coords, val.v, reduce);
        line("descriptor_store(" + y.s + ", {" + cs + "}, " + val.s + reduces[reduce] + ");");
        // An add reduction of a float tile rounds once more in memory.
        rec_.tolerance[static_cast<size_t>(spec)] = val.exact() ? 0 : val.err * std::max(1.0, val.mag) + (reduce == 1 ? ulp(t.dtype) : 0);
      } else {
        const Access a = pointer_access(y, origin);
        store(y.ref, a.offsets.v, v.v, a.mask.v);
        line("store(" + y.s + ", " + a.offsets.s + ", " + v.s + ", " + a.mask.s + ");");
        rec_.tolerance[static_cast<size_t>(spec)] = v.exact() ? 0 : v.err * std::max(1.0, v.mag);
      }
    };
    if (guarded) {
      if_then(cond.v, [&] {
        scopes_.emplace_back();
        body();
        scopes_.pop_back();
      });
      --indent_;
      line("});");
    } else {
      body();
    }
  }

  const Program& p_;
  TraceRecord& rec_;
  Rng rng_;
  /// Choices added after the generator's first release draw from their own stream, so that the programs of
  /// earlier seeds (the ones docs/testing.md names) keep their structure.
  Rng extra_;
  Rng combine_;  ///< a third stream: whether a reduction is written with a combine function
  std::string text_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<T> params_;
  std::vector<E> scalars_;
  std::vector<std::vector<E>> scopes_;
};

// ---- the plan -----------------------------------------------------------------

Program plan(uint64_t seed) {
  Rng rng(seed);
  Program p;
  p.seed = seed;
  static const std::vector<int> ranks = {1, 1, 2, 2, 2, 2, 3, 3, 3, 4, 4, 5};
  p.rank = rng.pick(ranks);
  const int n_in = static_cast<int>(rng.range(1, 3)), n_out = static_cast<int>(rng.range(1, 2));
  for (int i = 0; i < n_in + n_out; ++i) {
    TensorSpec t;
    t.dtype = rng.pick(kTensorTypes);
    t.rank = p.rank;
    t.output = i >= n_in;
    t.tma_store = t.output && rng.chance(0.65);
    t.name = t.output ? "y" + std::to_string(i - n_in) : "x" + std::to_string(i);
    p.tensors.push_back(t);
  }
  // The tile: innermost extent a multiple of 16 bytes for every element type the program accesses.
  int64_t grain = 1;
  for (const TensorSpec& t : p.tensors) grain = std::max(grain, per16(t.dtype));
  const int r = p.rank;
  p.tile[r - 1] = grain * rng.range(1, grain >= 8 ? 2 : 4);
  int64_t numel = p.tile[r - 1];
  static const std::vector<int64_t> outer = {1, 2, 3, 4, 5, 6, 8, 16};
  for (int i = r - 2; i >= 0; --i) {
    int64_t s = rng.pick(outer);
    while (numel * s > 512 && s > 1) s /= 2;
    p.tile[i] = s;
    numel *= s;
  }
  p.grid = dim3(static_cast<uint32_t>(rng.range(1, 3)), static_cast<uint32_t>(r >= 2 ? rng.range(1, 2) : 1));
  p.pid_dim[0] = static_cast<int>(rng.range(0, r - 1));
  if (r >= 2) {
    do p.pid_dim[1] = static_cast<int>(rng.range(0, r - 1));
    while (p.pid_dim[1] == p.pid_dim[0]);
  }
  for (TensorSpec& t : p.tensors) {
    for (int i = 0; i < r; ++i) {
      const int64_t programs = p.pid_dim[0] == i ? p.grid.x : p.pid_dim[1] == i ? p.grid.y : 1;
      t.sizes[i] = std::max<int64_t>(1, p.tile[i] * programs + rng.range(-p.tile[i] + 1, p.tile[i]));
    }
    const int64_t q = per16(t.dtype);
    if (t.tma_store) t.sizes[r - 1] = round_up(t.sizes[r - 1], q);
    t.strides[r - 1] = 1;
    for (int i = r - 2; i >= 0; --i) {
      const int64_t dense = i == r - 2 ? round_up(t.sizes[r - 1], q) : t.strides[i + 1] * t.sizes[i + 1];
      t.strides[i] = dense + (rng.chance(0.25) ? q * rng.range(1, 2) : 0);
    }
  }
  const int n_scalars = static_cast<int>(rng.range(0, 2));
  for (int i = 0; i < n_scalars; ++i) {
    ScalarSpec s;
    s.dtype = rng.pick(std::vector<DType>{DType::f32, DType::i32, DType::bf16, DType::i64});
    s.value = ir::is_float(s.dtype) ? static_cast<double>(rng.range(-8, 8)) / 4 : static_cast<double>(rng.range(-4, 4));
    s.name = "s" + std::to_string(i);
    p.scalars.push_back(s);
  }
  p.config = Config{}.num_warps(static_cast<int>(rng.pick(std::vector<int64_t>{1, 2, 4, 4, 8})));
  // A quarter of the programs round every product and sum on its own (the rest contract them into fma); drawn
  // from a stream of its own, so that each seed's program is the one it was before the draw existed.
  if (Rng(seed ^ 0xF3A0ull).chance(0.25)) p.config.fp_contract(false);
  return p;
}

template <class Host>
void fill_typed(void* data, size_t n, Rng& rng, const TensorSpec& t) {
  const DType d = t.dtype;
  Host* h = static_cast<Host*>(data);
  for (size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53 * (t.hi - t.lo) + t.lo;
    if (ir::is_float(d)) h[i] = Host(static_cast<float>(u));
    else h[i] = static_cast<Host>(static_cast<int64_t>(std::floor(u)));
  }
}

}  // namespace

size_t TensorSpec::elems() const {
  int64_t last = 0;
  for (int d = 0; d < rank; ++d) last += (sizes[static_cast<size_t>(d)] - 1) * strides[static_cast<size_t>(d)];
  return static_cast<size_t>(last + 1);
}
size_t TensorSpec::bytes() const { return elems() * static_cast<size_t>(ir::size_of(dtype)); }
std::string TensorSpec::cpp_type() const { return "Tensor<" + tag(dtype) + ", " + std::to_string(rank) + ">"; }

Program make_program(uint64_t seed) {
  Program p = plan(seed);
  p.name = "fuzz_" + std::to_string(seed);
  p.record = std::make_shared<TraceRecord>();
  const Program shape = p;  // the tracer's copy: everything but the kernel
  auto record = p.record;
  p.kernel = std::make_shared<KernelBase>(p.name, std::source_location::current(),
                                          [shape, record](ir::Graph& g, const Config&) {
                                            dsl::detail::TraceScope scope(g);
                                            g.set_location(g.kernel_location.file.c_str(), g.kernel_location.line);
                                            TraceRecord rec;
                                            Body body(shape, rec);
                                            body.run(g);
                                            rec.body = body.text();
                                            *record = std::move(rec);
                                          });
  return p;
}

const TraceRecord& Program::traced() const {
  (void)kernel->graph(config);
  return *record;
}

std::string Program::cpp() const {
  const TraceRecord& r = traced();
  std::string s = "// seed " + std::to_string(seed) + "\n";
  s += "auto k = tilejit::kernel(\"" + name + "\", [](";
  bool first = true;
  for (const TensorSpec& t : tensors) {
    s += (first ? "" : ", ") + t.cpp_type() + " " + t.name;
    first = false;
  }
  for (const ScalarSpec& c : scalars) {
    s += (first ? "" : ", ") + std::string("Scalar<") + tag(c.dtype) + "> " + c.name;
    first = false;
  }
  for (const std::string& b : blocks) {
    s += (first ? "" : ", ") + std::string("Meta<\"") + b + "\"> " + b;
    first = false;
  }
  s += ") {\n" + r.body + "});\n";
  s += "k.launch(stream, tilejit::dim3(" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + (grid.z != 1 ? ", " + std::to_string(grid.z) : "") + "), ";
  if (blocks.empty() && config.num_stages() == Config{}.num_stages()) {
    s += "tilejit::Config{}.num_warps(" + std::to_string(config.num_warps()) + ")";
  } else {
    s += "tilejit::Config{";
    for (size_t i = 0; i < blocks.size(); ++i)
      s += (i ? ", " : "") + std::string("{\"") + blocks[i] + "\", " + std::to_string(config[blocks[i]]) + "}";
    s += "}.num_warps(" + std::to_string(config.num_warps()) + ").num_stages(" + std::to_string(config.num_stages()) + ")";
  }
  if (config.warp_specialized()) s += ".warp_specialize()";
  if (config.product_overlap() == tilejit::OverlapProducts::on) s += ".overlap_products()";
  if (config.warpgroup_pingpong() == tilejit::Pingpong::on) s += ".pingpong()";
  if (config.cluster_size() > 1) s += ".cluster(" + std::to_string(config.cluster_x()) + ", " + std::to_string(config.cluster_y()) + ")";
  if (!config.fp_contract()) s += ".fp_contract(false)";
  for (const TensorSpec& t : tensors) {
    std::vector<int64_t> sz(t.sizes.begin(), t.sizes.begin() + t.rank), st(t.strides.begin(), t.strides.begin() + t.rank);
    s += ",\n         tilejit::TensorView<" + tag(t.dtype) + ", " + std::to_string(t.rank) + ">(" + t.name + "_data, " + list(sz) +
         ", " + list(st) + ")";
  }
  for (const ScalarSpec& c : scalars)
    s += ", " + (ir::is_float(c.dtype) ? float_str(c.value, c.dtype == DType::f64 ? DType::f64 : DType::f32) : int_str(static_cast<int64_t>(c.value)));
  s += ");\n";
  return s;
}

std::vector<KernelArg> Program::args(const std::vector<void*>& data) const {
  std::vector<KernelArg> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    KernelArg k;
    k.kind = KernelArg::Tensor;
    k.tensor.data = data[i];
    k.tensor.dtype = t.dtype;
    k.tensor.rank = t.rank;
    std::copy(t.sizes.begin(), t.sizes.begin() + t.rank, k.tensor.sizes.begin());
    std::copy(t.strides.begin(), t.strides.begin() + t.rank, k.tensor.strides.begin());
    out.push_back(k);
  }
  for (const ScalarSpec& s : scalars) {
    KernelArg k;
    k.kind = KernelArg::Scalar;
    k.dtype = s.dtype;
    if (ir::is_float(s.dtype)) k.f = ir::round_to(s.dtype, s.value);
    else k.i = static_cast<int64_t>(s.value);
    out.push_back(k);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    KernelArg k;
    k.kind = KernelArg::Config;
    out.push_back(k);
  }
  return out;
}

HostTensors::HostTensors(const Program& p) {
  for (const TensorSpec& t : p.tensors) {
    bytes_.emplace_back(static_cast<unsigned char*>(::operator new[](t.bytes(), std::align_val_t(128))));
    data_.push_back(bytes_.back().get());
  }
  p.fill(data_);
}

void Program::fill(const std::vector<void*>& data) const {
  Rng rng(seed ^ 0xDA7Aull);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorSpec& t = tensors[i];
    const size_t n = t.elems();
    switch (t.dtype) {
      case DType::i1: fill_typed<bool>(data[i], n, rng, t); break;
      case DType::i8: fill_typed<int8_t>(data[i], n, rng, t); break;
      case DType::u8: fill_typed<uint8_t>(data[i], n, rng, t); break;
      case DType::i32: fill_typed<int32_t>(data[i], n, rng, t); break;
      case DType::i64: fill_typed<int64_t>(data[i], n, rng, t); break;
      case DType::f16: fill_typed<half>(data[i], n, rng, t); break;
      case DType::bf16: fill_typed<bfloat16>(data[i], n, rng, t); break;
      case DType::f32: fill_typed<float>(data[i], n, rng, t); break;
      case DType::f64: fill_typed<double>(data[i], n, rng, t); break;
      case DType::f8e4m3: fill_typed<float8_e4m3>(data[i], n, rng, t); break;
      case DType::f8e5m2: fill_typed<float8_e5m2>(data[i], n, rng, t); break;
    }
  }
}

}  // namespace tilejit::fuzz
