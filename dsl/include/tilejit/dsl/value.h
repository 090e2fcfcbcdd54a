// Block values of the DSL: Value<T, R>, constants, arithmetic, math, casts, shapes, reductions.
//
// Every operation records one or more IR nodes into the graph being traced. The
// element type and the rank are part of the C++ type, so misuse is a compile
// error; block extents are known at trace time and checked there (UserError).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>
#include <source_location>
#include <string>
#include <type_traits>

#include "tilejit/dsl/dtypes.h"
#include "tilejit/checked.h"
#include "tilejit/dsl/trace.h"

namespace tilejit::dsl {

template <class T, int R>
class Value;

/// A kernel scalar (a rank-0 block).
template <class T>
using Scalar = Value<T, 0>;

namespace detail {
/// Selects the constructor of a value from an IR node.
struct NodeTag {};
inline constexpr NodeTag node{};

template <class X> struct is_value : std::false_type {};
template <class T, int R> struct is_value<Value<T, R>> : std::true_type {};
template <class X> inline constexpr bool is_value_v = is_value<std::remove_cvref_t<X>>::value;

/// Marks configuration integers (Meta<"BM">) that act as integer literals.
template <class X> struct is_config_int : std::false_type {};
template <class X> inline constexpr bool is_config_int_v = is_config_int<std::remove_cvref_t<X>>::value;

template <class X>
inline constexpr bool is_literal_v = (std::is_arithmetic_v<std::remove_cvref_t<X>> && !std::is_same_v<std::remove_cvref_t<X>, bool>) ||
                                     is_config_int_v<X>;
template <class X>
inline constexpr bool is_float_literal_v = std::is_floating_point_v<std::remove_cvref_t<X>>;

template <class X> struct value_traits { using tag = void; static constexpr int rank = 0; };
template <class T, int R> struct value_traits<Value<T, R>> { using tag = tag_t<T>; static constexpr int rank = R; };

inline int64_t float_bits(double v) { return std::bit_cast<int64_t>(v); }

/// A constant scalar node of dtype `d`.
inline ir::NodeId constant(ir::DType d, double fv, int64_t iv) {
  ir::Graph& g = graph();
  if (ir::is_float(d)) return g.add(ir::Op::Const, d, ir::Shape{}, {}, ir::ConstAttrs{float_bits(ir::round_to(d, fv))});
  if (d == ir::DType::i1) iv = iv != 0;
  return g.add(ir::Op::Const, d, ir::Shape{}, {}, ir::ConstAttrs{iv});
}

/// The shape `dims` of a new block; UserError unless every dimension is positive and the element
/// count (formed with overflow checks) is at most checked::kMaxBlockElements.
template <size_t N>
ir::Shape block_shape(const int64_t (&dims)[N], const char* what, const std::source_location& loc);

/// Result shape of numpy-style broadcasting; throws UserError on a mismatch.
inline ir::Shape broadcast_shape(const ir::Shape& a, const ir::Shape& b, const char* what) {
  ir::Shape r;
  r.rank = std::max(a.rank, b.rank);
  for (int i = 0; i < r.rank; ++i) {
    const int ia = i - (r.rank - a.rank), ib = i - (r.rank - b.rank);
    const int32_t da = ia >= 0 ? a.dims[ia] : 1, db = ib >= 0 ? b.dims[ib] : 1;
    if (da != db && da != 1 && db != 1)
      user_error_here(std::string(what) + ": block shapes cannot be broadcast together", a.str() + " and " + b.str(),
                      "each dimension equal or 1");
    r.dims[i] = da == 1 ? db : da;
  }
  // Dimensions are at most 2^20 each, so the product of five fits in int64.
  if (r.numel() > checked::kMaxBlockElements)
    user_error_here(std::string(what) + ": block too large", a.str() + " and " + b.str() + " broadcast to " + r.str() + " = " +
                                                                std::to_string(r.numel()) + " elements",
                    std::to_string(checked::kMaxBlockElements));
  return r;
}

/// Broadcasts node `id` to `shape` (no node when already that shape).
inline ir::NodeId broadcast_to(ir::NodeId id, const ir::Shape& shape) {
  ir::Graph& g = graph();
  const ir::Node& n = g.node(id);
  if (n.shape == shape) return id;
  return g.add(ir::Op::Broadcast, n.dtype, shape, {id});
}

inline ir::NodeId cast_node(ir::NodeId id, ir::DType to) {
  ir::Graph& g = graph();
  const ir::Node& n = g.node(id);
  if (n.dtype == to) return id;
  if (n.op == ir::Op::Const && n.shape.rank == 0)
    return constant(to, g.const_f(id), ir::is_float(n.dtype) ? static_cast<int64_t>(g.const_f(id)) : g.const_i(id));
  return g.add(ir::Op::Cast, to, n.shape, {id});
}
}  // namespace detail

/// A block of `R` dimensions with elements of type T (a tag or a C++ type).
template <class T, int R>
class Value {
  static_assert(is_dtype_v<T>, "tilejit: Value<T, R>: T must be an element type (f32, bf16, i32, ... or float, int32_t, ...)");
  static_assert(R >= 0 && R <= ir::kMaxRank, "tilejit: block rank must be between 0 and 5");

 public:
  using dtype = tag_t<T>;
  static constexpr int rank = R;

  Value() = default;
  /// The value of IR node `id` (tag first, so that Scalar<i32>(0) means the constant 0).
  Value(detail::NodeTag, ir::NodeId id) : id_(id) {}
  /// A scalar constant (only for rank 0): Scalar<f32> x = 1.5f;
  template <class L>
    requires(R == 0 && detail::is_literal_v<L>)
  Value(L v) : id_(detail::constant(dtype_v<T>, static_cast<double>(v), static_cast<int64_t>(v))) {}  // NOLINT

  ir::NodeId id() const { return id_; }
  const ir::Shape& shape() const { return detail::graph().node(id_).shape; }
  int64_t dim(int d) const { return shape().dims[d]; }

  /// Converts the element type (round to nearest even; float -> int truncates and saturates).
  template <class U>
  Value<tag_t<U>, R> to(std::source_location loc = std::source_location::current()) const {
    static_assert(is_dtype_v<U>, "tilejit: .to<U>(): U must be an element type");
    detail::graph_at(loc);
    return Value<tag_t<U>, R>(detail::node, detail::cast_node(id_, dtype_v<U>));
  }

  /// Inserts a dimension of extent 1 at `axis` (like x[None, :] / x[:, None]).
  template <int Axis>
  Value<T, R + 1> expand_dims(std::source_location loc = std::source_location::current()) const {
    static_assert(Axis >= 0 && Axis <= R, "tilejit: expand_dims<Axis>: Axis must be in 0..rank");
    static_assert(R + 1 <= ir::kMaxRank, "tilejit: expand_dims: blocks have at most 5 dimensions");
    ir::Graph& g = detail::graph_at(loc);
    const ir::Shape& s = shape();
    ir::Shape r;
    r.rank = R + 1;
    for (int i = 0, j = 0; i < R + 1; ++i) r.dims[i] = i == Axis ? 1 : s.dims[j++];
    return Value<T, R + 1>(detail::node, g.add(ir::Op::Reshape, dtype_v<T>, r, {id_}));
  }

  /// Reinterprets the block with a new shape of the same element count (row-major order).
  template <size_t N>
  Value<T, static_cast<int>(N)> reshape(const int64_t (&dims)[N],
                                       std::source_location loc = std::source_location::current()) const {
    static_assert(N <= ir::kMaxRank, "tilejit: reshape: blocks have at most 5 dimensions");
    ir::Graph& g = detail::graph_at(loc);
    const ir::Shape r = detail::block_shape(dims, "reshape", loc);
    if (r.numel() != shape().numel())
      detail::user_error("reshape: the new shape must have the same number of elements",
                         shape().str() + " -> " + r.str(), std::to_string(shape().numel()) + " elements", loc);
    return Value<T, static_cast<int>(N)>(detail::node, g.add(ir::Op::Reshape, dtype_v<T>, r, {id_}));
  }

  /// Reorders dimensions: result dimension d is input dimension perm[d].
  Value<T, R> permute(const int64_t (&perm)[R], std::source_location loc = std::source_location::current()) const
    requires(R >= 1)
  {
    ir::Graph& g = detail::graph_at(loc);
    const ir::Shape& s = shape();
    ir::Shape r;
    r.rank = R;
    bool seen[ir::kMaxRank] = {};
    for (int d = 0; d < R; ++d) {
      if (perm[d] < 0 || perm[d] >= R || seen[perm[d]])
        detail::user_error("permute: the permutation must name each dimension once", "perm[" + std::to_string(d) + "] = " + std::to_string(perm[d]),
                           "0.." + std::to_string(R - 1), loc);
      seen[perm[d]] = true;
      r.dims[d] = s.dims[perm[d]];
    }
    return Value<T, R>(detail::node, g.add(ir::Op::Permute, dtype_v<T>, r, {id_}, ir::PermuteAttrs{{perm, perm + R}}));
  }

  /// The transpose of a 2-D block.
  Value<T, R> trans(std::source_location loc = std::source_location::current()) const
    requires(R == 2)
  {
    return permute({1, 0}, loc);
  }

  /// Broadcasts to a larger shape (numpy rules).
  template <size_t N>
  Value<T, static_cast<int>(N)> broadcast_to(const int64_t (&dims)[N],
                                            std::source_location loc = std::source_location::current()) const {
    static_assert(static_cast<int>(N) >= R, "tilejit: broadcast_to: the target rank must not be smaller");
    ir::Graph& g = detail::graph_at(loc);
    const ir::Shape r = detail::block_shape(dims, "broadcast_to", loc);
    const ir::Shape b = detail::broadcast_shape(shape(), r, "broadcast_to");
    if (!(b == r))
      detail::user_error("broadcast_to: the block does not broadcast to the target shape", shape().str() + " -> " + r.str(),
                         "each dimension equal or 1", loc);
    (void)g;
    return Value<T, static_cast<int>(N)>(detail::node, detail::broadcast_to(id_, r));
  }

  template <class B> Value& operator+=(const B& b) { return *this = *this + b; }
  template <class B> Value& operator-=(const B& b) { return *this = *this - b; }
  template <class B> Value& operator*=(const B& b) { return *this = *this * b; }
  template <class B> Value& operator/=(const B& b) { return *this = *this / b; }

 private:
  ir::NodeId id_ = ir::kNoNode;
};

namespace detail {

/// Result tag of a binary op between A and B (values or literals), with readable errors.
template <class A, class B>
struct binary_result {
  static constexpr bool av = is_value_v<A>, bv = is_value_v<B>;
  using ta = typename value_traits<std::remove_cvref_t<A>>::tag;
  using tb = typename value_traits<std::remove_cvref_t<B>>::tag;
  // A literal takes the type of the block it is combined with.
  using la = std::conditional_t<av, ta, tb>;
  using lb = std::conditional_t<bv, tb, ta>;
  static constexpr bool float_literal_on_int =
      (!av && is_float_literal_v<A> && !is_float_v<lb>) || (!bv && is_float_literal_v<B> && !is_float_v<la>);
  using tag = typename promote<la, lb>::type;
  static constexpr bool ok = promote<la, lb>::ok && !float_literal_on_int;
  static constexpr int rank = std::max(value_traits<std::remove_cvref_t<A>>::rank, value_traits<std::remove_cvref_t<B>>::rank);
};

template <class Tag, class X>
ir::NodeId operand_node(const X& x) {
  if constexpr (is_value_v<X>) {
    return cast_node(x.id(), dtype_v<Tag>);
  } else if constexpr (is_config_int_v<X>) {
    return constant(dtype_v<Tag>, static_cast<double>(static_cast<int64_t>(x)), static_cast<int64_t>(x));
  } else {
    return constant(dtype_v<Tag>, static_cast<double>(x), static_cast<int64_t>(x));
  }
}

enum class BinKind { Arith, IntOnly, Logic, Compare };

template <ir::Op OP, BinKind K, class A, class B>
auto binary(const A& a, const B& b) {
  using BR = binary_result<A, B>;
  static_assert(BR::ok || BR::float_literal_on_int,
                "tilejit: the operands of this operator have different element types; "
                "convert one with .to<T>() (integers of different widths promote automatically, "
                "floats and mixed int/float never do)");
  static_assert(!BR::float_literal_on_int,
                "tilejit: a floating-point literal cannot be combined with an integer or bool block; "
                "convert the block with .to<f32>() first");
  using Tag = typename BR::tag;
  static_assert(!is_fp8_v<Tag>, "tilejit: fp8 is a storage type; convert with .to<f32>() before arithmetic");
  if constexpr (K == BinKind::Arith) {
    static_assert(!is_bool_v<Tag>, "tilejit: arithmetic on bool blocks is not allowed; use & | ^ or convert with .to<i32>()");
  } else if constexpr (K == BinKind::IntOnly) {
    static_assert(is_int_v<Tag>, "tilejit: % needs integer operands; use fmod-free math (a - floor(a/b)*b) for floats");
  } else if constexpr (K == BinKind::Logic) {
    static_assert(is_int_v<Tag> || is_bool_v<Tag>, "tilejit: & | ^ need integer or bool operands");
  }
  ir::Graph& g = graph();
  ir::NodeId na = operand_node<Tag>(a);
  ir::NodeId nb = operand_node<Tag>(b);
  const ir::Shape s = broadcast_shape(g.node(na).shape, g.node(nb).shape, ir::name_of(OP).data());
  na = broadcast_to(na, s);
  nb = broadcast_to(nb, s);
  if constexpr (K == BinKind::Compare) {
    return Value<i1, BR::rank>(detail::node, g.add(OP, ir::DType::i1, s, {na, nb}));
  } else {
    return Value<Tag, BR::rank>(detail::node, g.add(OP, dtype_v<Tag>, s, {na, nb}));
  }
}

template <class A, class B>
concept BinaryOperands = (is_value_v<A> || is_value_v<B>) && (is_value_v<A> || is_literal_v<A>) &&
                         (is_value_v<B> || is_literal_v<B>);

template <ir::Op OP, class T, int R>
Value<T, R> unary(const Value<T, R>& x) {
  ir::Graph& g = graph();
  return Value<T, R>(detail::node, g.add(OP, dtype_v<T>, x.shape(), {x.id()}));
}
}  // namespace detail

// ---- operators ----------------------------------------------------------------
#define TILEJIT_BINARY_OPERATOR(sym, OP, KIND)                                  \
  template <class A, class B>                                                   \
    requires detail::BinaryOperands<A, B>                                       \
  auto operator sym(const A& a, const B& b) {                                   \
    return detail::binary<ir::Op::OP, detail::BinKind::KIND>(a, b);             \
  }
TILEJIT_BINARY_OPERATOR(+, Add, Arith)
TILEJIT_BINARY_OPERATOR(-, Sub, Arith)
TILEJIT_BINARY_OPERATOR(*, Mul, Arith)
TILEJIT_BINARY_OPERATOR(/, Div, Arith)
TILEJIT_BINARY_OPERATOR(%, Rem, IntOnly)
TILEJIT_BINARY_OPERATOR(&, And, Logic)
TILEJIT_BINARY_OPERATOR(|, Or, Logic)
TILEJIT_BINARY_OPERATOR(^, Xor, Logic)
TILEJIT_BINARY_OPERATOR(&&, And, Logic)
TILEJIT_BINARY_OPERATOR(||, Or, Logic)
TILEJIT_BINARY_OPERATOR(==, Eq, Compare)
TILEJIT_BINARY_OPERATOR(!=, Ne, Compare)
TILEJIT_BINARY_OPERATOR(<, Lt, Compare)
TILEJIT_BINARY_OPERATOR(<=, Le, Compare)
TILEJIT_BINARY_OPERATOR(>, Gt, Compare)
TILEJIT_BINARY_OPERATOR(>=, Ge, Compare)
#undef TILEJIT_BINARY_OPERATOR

/// Elementwise minimum / maximum (NaN-propagating for floats, as min.NaN / fmin would not be).
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto minimum(const A& a, const B& b) {
  return detail::binary<ir::Op::Min, detail::BinKind::Arith>(a, b);
}
template <class A, class B>
  requires detail::BinaryOperands<A, B>
auto maximum(const A& a, const B& b) {
  return detail::binary<ir::Op::Max, detail::BinKind::Arith>(a, b);
}

template <class T, int R>
Value<T, R> operator-(const Value<T, R>& x) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: unary minus needs a numeric, non-fp8 block");
  return detail::unary<ir::Op::Neg>(x);
}
template <class T, int R>
Value<T, R> operator!(const Value<T, R>& x) {
  static_assert(is_bool_v<T>, "tilejit: ! needs a bool block; compare with 0 first");
  return detail::unary<ir::Op::Not>(x);
}

// ---- math ---------------------------------------------------------------------
// Within a few ulp of the exact value (ir.h). exp2 below f64 is one hardware instruction and flushes
// results under 2^-126 (arguments under -126) to +0; f64 does not.
#define TILEJIT_FLOAT_UNARY(fn, OP)                                                               \
  template <class T, int R>                                                                       \
  Value<T, R> fn(const Value<T, R>& x, std::source_location loc = std::source_location::current()) { \
    static_assert(is_float_v<T> && !is_fp8_v<T>,                                                  \
                  "tilejit: " #fn "() needs a f16/bf16/f32/f64 block; convert with .to<f32>()");   \
    detail::graph_at(loc);                                                                        \
    return detail::unary<ir::Op::OP>(x);                                                          \
  }
TILEJIT_FLOAT_UNARY(exp, Exp)
TILEJIT_FLOAT_UNARY(exp2, Exp2)
TILEJIT_FLOAT_UNARY(log, Log)
TILEJIT_FLOAT_UNARY(log2, Log2)
TILEJIT_FLOAT_UNARY(sqrt, Sqrt)
TILEJIT_FLOAT_UNARY(rsqrt, Rsqrt)
TILEJIT_FLOAT_UNARY(sin, Sin)
TILEJIT_FLOAT_UNARY(cos, Cos)
TILEJIT_FLOAT_UNARY(tanh, Tanh)
TILEJIT_FLOAT_UNARY(sigmoid, Sigmoid)
TILEJIT_FLOAT_UNARY(erf, Erf)
#undef TILEJIT_FLOAT_UNARY

/// How closely tanh() and sigmoid() follow the exact function. `precise`, the default: within a few ulp (ir.h).
/// `fast`: the hardware's tanh (tanh.approx.f32, one special-function instruction, where tanhf takes about twenty
/// and the precise sigmoid two special-function instructions and ten others), within 2^-10.98 of tanh(x) relative;
/// sigmoid(x) is then 0.5 + 0.5 tanh(x / 2), within 2^-11.9 of the exact value absolute, which is coarse where the
/// result is small (x below about -6). For silu-gated products whose result is rounded to bf16 or f16 anyway (HSTU
/// attention's silu(q k^T), SwiGLU's gate), bound by the special-function unit. f16 / bf16 compute in f32 and round
/// once; f64 ignores `fast`. The interpreter computes the exact function: the GPU's result differs by up to the bound.
enum class Accuracy { precise, fast };

template <class T, int R>
Value<T, R> tanh(const Value<T, R>& x, Accuracy accuracy, std::source_location loc = std::source_location::current()) {
  if (std::is_same_v<tag_t<T>, f64> || accuracy == Accuracy::precise) return tanh(x, loc);
  detail::graph_at(loc);
  if constexpr (std::is_same_v<tag_t<T>, f32>)
    return detail::unary<ir::Op::TanhApprox>(x);
  else
    return detail::unary<ir::Op::TanhApprox>(x.template to<f32>(loc)).template to<T>(loc);
}

template <class T, int R>
Value<T, R> sigmoid(const Value<T, R>& x, Accuracy accuracy, std::source_location loc = std::source_location::current()) {
  if (std::is_same_v<tag_t<T>, f64> || accuracy == Accuracy::precise) return sigmoid(x, loc);
  detail::graph_at(loc);
  if constexpr (std::is_same_v<tag_t<T>, f32>)
    return detail::unary<ir::Op::TanhApprox>(x * 0.5f) * 0.5f + 0.5f;
  else
    return (detail::unary<ir::Op::TanhApprox>(x.template to<f32>(loc) * 0.5f) * 0.5f + 0.5f).template to<T>(loc);
}

template <class T, int R>
Value<T, R> abs(const Value<T, R>& x, std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: abs() needs a numeric, non-fp8 block");
  detail::graph_at(loc);
  return detail::unary<ir::Op::Abs>(x);
}

/// x.to<U>() as a free function: inside a template (a kernel generic over its element types) the member form
/// must be written x.template to<U>(), and GCC says only "expected primary-expression" when it is not.
template <class U, class T, int R>
Value<tag_t<U>, R> cast(const Value<T, R>& x, std::source_location loc = std::source_location::current()) {
  return x.template to<U>(loc);
}

/// x.expand_dims<Axis>() as a free function, for templates as cast<U>(x).
template <int Axis, class T, int R>
Value<T, R + 1> expand_dims(const Value<T, R>& x, std::source_location loc = std::source_location::current()) {
  return x.template expand_dims<Axis>(loc);
}

/// Elementwise select: cond ? a : b (a and b may be literals).
template <int RC, class A, class B>
  requires(detail::is_value_v<A> || detail::is_value_v<B>)
auto where(const Value<i1, RC>& cond, const A& a, const B& b,
           std::source_location loc = std::source_location::current()) {
  using BR = detail::binary_result<A, B>;
  static_assert(BR::ok, "tilejit: where(): the two branches have different element types; convert one with .to<T>()");
  using Tag = typename BR::tag;
  constexpr int R = std::max(RC, BR::rank);
  ir::Graph& g = detail::graph_at(loc);
  ir::NodeId na = detail::operand_node<Tag>(a), nb = detail::operand_node<Tag>(b);
  ir::Shape s = detail::broadcast_shape(g.node(na).shape, g.node(nb).shape, "where");
  s = detail::broadcast_shape(s, cond.shape(), "where");
  return Value<Tag, R>(detail::node, g.add(ir::Op::Where, dtype_v<Tag>, s,
                             {detail::broadcast_to(cond.id(), s), detail::broadcast_to(na, s), detail::broadcast_to(nb, s)}));
}

namespace detail {
/// The element type of fma's operands: that of its first block (literals take it).
template <class A, class B, class C>
using fma_tag = typename value_traits<std::remove_cvref_t<
    std::conditional_t<is_value_v<A>, A, std::conditional_t<is_value_v<B>, B, C>>>>::tag;
template <class Tag, class X>
inline constexpr bool fma_operand_ok = !is_value_v<X> || std::is_same_v<typename value_traits<std::remove_cvref_t<X>>::tag, Tag>;
template <class X>
inline constexpr int rank_of = value_traits<std::remove_cvref_t<X>>::rank;
}  // namespace detail

/// Fused multiply-add, elementwise: a * b + c rounded once (f16 / bf16: in f32, then rounded to the element
/// type), the GPU's fma.rn. Operands are float blocks of one element type or literals, broadcast together.
/// tilejit also writes `a * b + c` and `a * b - c` this way by itself where the product has no other use
/// (Config::fp_contract, on by default); fma() says so explicitly, whatever the configuration.
template <class A, class B, class C>
  requires((detail::is_value_v<A> || detail::is_value_v<B> || detail::is_value_v<C>) &&
           (detail::is_value_v<A> || detail::is_literal_v<A>) && (detail::is_value_v<B> || detail::is_literal_v<B>) &&
           (detail::is_value_v<C> || detail::is_literal_v<C>))
auto fma(const A& a, const B& b, const C& c, std::source_location loc = std::source_location::current()) {
  using Tag = detail::fma_tag<A, B, C>;
  static_assert(is_float_v<Tag> && !is_fp8_v<Tag>, "tilejit: fma() needs f16/bf16/f32/f64 blocks; convert with .to<f32>()");
  static_assert(detail::fma_operand_ok<Tag, A> && detail::fma_operand_ok<Tag, B> && detail::fma_operand_ok<Tag, C>,
                "tilejit: fma(): the blocks have different element types; convert one with .to<T>()");
  constexpr int R = std::max({detail::rank_of<A>, detail::rank_of<B>, detail::rank_of<C>});
  ir::Graph& g = detail::graph_at(loc);
  const ir::NodeId na = detail::operand_node<Tag>(a), nb = detail::operand_node<Tag>(b), nc = detail::operand_node<Tag>(c);
  ir::Shape s = detail::broadcast_shape(g.node(na).shape, g.node(nb).shape, "fma");
  s = detail::broadcast_shape(s, g.node(nc).shape, "fma");
  return Value<Tag, R>(detail::node, g.add(ir::Op::Fma, dtype_v<Tag>, s,
                                           {detail::broadcast_to(na, s), detail::broadcast_to(nb, s), detail::broadcast_to(nc, s)}));
}

/// Elementwise select between two literals (numbers or Meta values), which then give the block's type: integers
/// an i32 block (where(c, 1, 0), as Triton's tl.where), or i64 when either is a 64-bit C++ integer; floating-point
/// numbers an f32 block.
template <int RC, class A, class B>
  requires(detail::is_literal_v<A> && detail::is_literal_v<B>)
auto where(const Value<i1, RC>& cond, A a, B b, std::source_location loc = std::source_location::current()) {
  constexpr bool fa = detail::is_float_literal_v<A>, fb = detail::is_float_literal_v<B>;
  static_assert(fa == fb,
                "tilejit: where(): one literal is an integer and the other a floating-point number; write both alike (1 and 0 "
                "give an i32 block, 1.0f and 0.0f an f32 one) or make one a block of the type you want (Scalar<f16>(1))");
  constexpr bool wide = (std::is_arithmetic_v<std::remove_cvref_t<A>> && sizeof(A) > 4) ||
                        (std::is_arithmetic_v<std::remove_cvref_t<B>> && sizeof(B) > 4);
  using T = std::conditional_t<fa, f32, std::conditional_t<wide, i64, i32>>;
  detail::graph_at(loc);
  return where(cond, Scalar<T>(a), Scalar<T>(b), loc);
}

// ---- construction -------------------------------------------------------------

/// The index of this program along `axis` (0, 1 or 2).
inline Scalar<i32> program_id(int axis, std::source_location loc = std::source_location::current()) {
  if (axis < 0 || axis > 2) detail::user_error("program_id: axis must be 0, 1 or 2", std::to_string(axis), "0..2", loc);
  ir::Graph& g = detail::graph_at(loc);
  return Scalar<i32>(detail::node, g.add(ir::Op::ProgramId, ir::DType::i32, ir::Shape{}, {}, ir::AxisAttrs{axis}));
}

/// The number of programs along `axis` (0, 1 or 2).
inline Scalar<i32> num_programs(int axis, std::source_location loc = std::source_location::current()) {
  if (axis < 0 || axis > 2) detail::user_error("num_programs: axis must be 0, 1 or 2", std::to_string(axis), "0..2", loc);
  ir::Graph& g = detail::graph_at(loc);
  return Scalar<i32>(detail::node, g.add(ir::Op::NumPrograms, ir::DType::i32, ir::Shape{}, {}, ir::AxisAttrs{axis}));
}

/// The i32 block [start, start + 1, ..., end - 1].
inline Value<i32, 1> arange(int64_t start, int64_t end, std::source_location loc = std::source_location::current()) {
  if (end <= start)
    detail::user_error("arange: end must be greater than start", "start " + std::to_string(start) + ", end " + std::to_string(end),
                       "end > start", loc);
  const std::optional<int64_t> count = checked::sub(end, start);
  if (!count || *count > checked::kMaxBlockElements)
    detail::user_error("arange: block too large",
                       (count ? std::to_string(*count) : std::to_string(end) + " - (" + std::to_string(start) + "), over 2^63") +
                           " elements",
                       std::to_string(checked::kMaxBlockElements), loc);
  ir::Graph& g = detail::graph_at(loc);
  return Value<i32, 1>(detail::node, g.add(ir::Op::Arange, ir::DType::i32, ir::Shape{end - start}, {}, ir::ArangeAttrs{start}));
}

namespace detail {
template <size_t N>
ir::Shape block_shape(const int64_t (&dims)[N], const char* what, const std::source_location& loc) {
  static_assert(N >= 1 && N <= ir::kMaxRank, "tilejit: blocks have 1 to 5 dimensions");
  for (size_t i = 0; i < N; ++i)
    if (dims[i] < 1)
      user_error(std::string(what) + ": block dimensions must be positive", "dimension " + std::to_string(i) + " = " + std::to_string(dims[i]),
                 ">= 1", loc);
  // The element count is formed with overflow checks: {2^32, 2^32} must not wrap to 0 and pass.
  std::optional<int64_t> total = 1;
  std::string product;
  for (size_t i = 0; i < N; ++i) {
    product += (i ? " x " : "") + std::to_string(dims[i]);
    if (total) total = checked::mul(*total, dims[i]);
  }
  if (!total || *total > checked::kMaxBlockElements)
    user_error(std::string(what) + ": block too large",
               (total ? std::to_string(*total) : product + " (over 2^63)") + " elements",
               std::to_string(checked::kMaxBlockElements), loc);
  return ir::Shape::of(std::span<const int64_t>(dims, N));
}
}  // namespace detail

/// A block of the given shape filled with `value`.
template <class T, size_t N, class V>
Value<tag_t<T>, static_cast<int>(N)> full(const int64_t (&dims)[N], V value,
                                          std::source_location loc = std::source_location::current()) {
  static_assert(is_dtype_v<T>, "tilejit: full<T>: T must be an element type");
  const ir::Shape s = detail::block_shape(dims, "full", loc);
  ir::Graph& g = detail::graph_at(loc);
  ir::NodeId c;
  if constexpr (detail::is_value_v<V>) {
    static_assert(std::remove_cvref_t<V>::rank == 0, "tilejit: full(): the fill value must be a scalar");
    c = detail::cast_node(value.id(), dtype_v<T>);
  } else {
    c = detail::constant(dtype_v<T>, static_cast<double>(value), static_cast<int64_t>(value));
  }
  return Value<tag_t<T>, static_cast<int>(N)>(detail::node, g.add(ir::Op::Broadcast, dtype_v<T>, s, {c}));
}

/// A block of zeros.
template <class T, size_t N>
Value<tag_t<T>, static_cast<int>(N)> zeros(const int64_t (&dims)[N], std::source_location loc = std::source_location::current()) {
  return full<T>(dims, 0, loc);
}

// ---- reductions ---------------------------------------------------------------
namespace detail {
template <ir::Op OP, class Out, class T, int R>
Value<Out, R - 1> reduce(const Value<T, R>& x, int axis, const char* what, const std::source_location& loc) {
  static_assert(R >= 1, "tilejit: reductions need a block of rank >= 1");
  if (axis < 0 || axis >= R)
    user_error(std::string(what) + ": axis out of range", std::to_string(axis), "0.." + std::to_string(R - 1), loc);
  ir::Graph& g = graph_at(loc);
  const ir::Shape& s = x.shape();
  ir::Shape r;
  r.rank = R - 1;
  for (int i = 0, j = 0; i < R; ++i)
    if (i != axis) r.dims[j++] = s.dims[i];
  return Value<Out, R - 1>(detail::node, g.add(OP, dtype_v<Out>, r, {x.id()}, ir::AxisAttrs{axis}));
}
}  // namespace detail

/// Sum over `axis` (in the block's type; accumulate in f32 by converting first).
template <class T, int R>
Value<tag_t<T>, R - 1> sum(const Value<T, R>& x, int axis, std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: sum() needs a numeric, non-fp8 block");
  return detail::reduce<ir::Op::ReduceSum, tag_t<T>>(x, axis, "sum", loc);
}
template <class T, int R>
Value<tag_t<T>, R - 1> max(const Value<T, R>& x, int axis, std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: max() needs a numeric, non-fp8 block");
  return detail::reduce<ir::Op::ReduceMax, tag_t<T>>(x, axis, "max", loc);
}
template <class T, int R>
Value<tag_t<T>, R - 1> min(const Value<T, R>& x, int axis, std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: min() needs a numeric, non-fp8 block");
  return detail::reduce<ir::Op::ReduceMin, tag_t<T>>(x, axis, "min", loc);
}
/// Index (i32) of the maximum along `axis`; the first one wins on ties.
template <class T, int R>
Value<i32, R - 1> argmax(const Value<T, R>& x, int axis, std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<T> && !is_fp8_v<T>, "tilejit: argmax() needs a numeric, non-fp8 block");
  return detail::reduce<ir::Op::ArgMax, i32>(x, axis, "argmax", loc);
}

/// How dot multiplies f32 operands (Triton's input_precision): Precision::tf32, the default, truncates
/// them to tf32 (10 mantissa bits, as tensor cores read f32) and runs on tensor cores where the dot
/// qualifies; Precision::ieee multiplies the f32 values exactly (rounded once to f32), on CUDA cores.
/// Other operand types ignore it: their products are exact in the accumulator's type.
using Precision = ir::DotPrecision;

/// acc + a @ b for 2-D blocks a (M x K), b (K x N), acc (M x N). The product is
/// accumulated in acc's type; a and b must have the same element type.
template <class TA, class TB, class TC>
Value<tag_t<TC>, 2> dot(const Value<TA, 2>& a, const Value<TB, 2>& b, const Value<TC, 2>& acc,
                        Precision precision = Precision::tf32, std::source_location loc = std::source_location::current()) {
  static_assert(std::is_same_v<tag_t<TA>, tag_t<TB>>, "tilejit: dot(): a and b must have the same element type; convert one with .to<T>()");
  static_assert(!is_bool_v<TA> && !is_bool_v<TC>, "tilejit: dot() needs numeric blocks");
  static_assert(!(is_float_v<TA> && !is_float_v<TC>), "tilejit: dot(): a float product needs a float accumulator (e.g. zeros<f32>)");
  ir::Graph& g = detail::graph_at(loc);
  const ir::Shape &sa = a.shape(), &sb = b.shape(), &sc = acc.shape();
  if (sa[1] != sb[0])
    detail::user_error("dot: inner dimensions differ", "a is " + sa.str() + ", b is " + sb.str(), "a.shape[1] == b.shape[0]", loc);
  if (sc[0] != sa[0] || sc[1] != sb[1])
    detail::user_error("dot: accumulator shape must be [M, N]", "acc is " + sc.str() + ", expected [" + std::to_string(sa[0]) + ", " + std::to_string(sb[1]) + "]",
                       "[M, N]", loc);
  // The precision applies to f32 operands only; other dots record none.
  ir::DotAttrs how;
  if (dtype_v<TA> == ir::DType::f32) how.precision = precision;
  return Value<tag_t<TC>, 2>(detail::node, g.add(ir::Op::Dot, dtype_v<TC>, sc, {a.id(), b.id(), acc.id()}, how));
}

/// a @ b for 2-D blocks a (M x K) and b (K x N) without an accumulator of the caller's (Triton's
/// `tl.dot(a, b)`): accumulated from zero in f32 for float operands, in i32 for integer ones. A sum
/// `acc + dot(a, b)` whose product has no other use is compiled as `dot(a, b, acc)` (the tensor cores
/// accumulate into acc's registers, and a K loop keeps its product in flight).
template <class TA, class TB>
auto dot(const Value<TA, 2>& a, const Value<TB, 2>& b, Precision precision = Precision::tf32,
         std::source_location loc = std::source_location::current()) {
  static_assert(!is_bool_v<TA>, "tilejit: dot() needs numeric blocks");
  using Acc = std::conditional_t<is_float_v<TA>, f32, i32>;
  const int64_t m = a.shape()[0], n = b.shape()[1];
  return dot(a, b, zeros<Acc>({m, n}, loc), precision, loc);
}

}  // namespace tilejit::dsl
