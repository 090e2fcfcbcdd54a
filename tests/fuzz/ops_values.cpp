// Runtime-typed doors into the DSL: parameters, arithmetic, casts, where, reductions, shapes, dot.
#include "dispatch.h"
#include "ops.h"

namespace tilejit::fuzz {

using namespace tilejit::dsl;

namespace {
/// f(Value<T, R>) for a value whose type and rank are known only at run time; f returns a node id.
template <class F>
Val on_value(const Val& v, F&& f) {
  return with_dtype(v.dtype, [&](auto t) {
    return with_rank<0>(v.rank, [&](auto r) {
      return as_val(f(Value<decltype(t), decltype(r)::value>(dsl::detail::node, v.id)));
    });
  });
}

template <class T>
constexpr bool numeric_v = !is_bool_v<T> && !is_fp8_v<T>;

template <class A, class B>
ir::NodeId apply_binary(Binary op, const A& x, const B& y) {
  using TA = typename A::dtype;
  using TB = typename B::dtype;
  if constexpr (promote<TA, TB>::ok && !is_fp8_v<TA> && !is_fp8_v<TB>) {
    using T = typename promote<TA, TB>::type;
    switch (op) {
      case Binary::eq: return (x == y).id();
      case Binary::ne: return (x != y).id();
      case Binary::lt: return (x < y).id();
      case Binary::le: return (x <= y).id();
      case Binary::gt: return (x > y).id();
      case Binary::ge: return (x >= y).id();
      default: break;
    }
    if constexpr (is_int_v<T> || is_bool_v<T>) {
      switch (op) {
        case Binary::bit_and: return (x & y).id();
        case Binary::bit_or: return (x | y).id();
        case Binary::bit_xor: return (x ^ y).id();
        default: break;
      }
    }
    if constexpr (is_int_v<T>) {
      if (op == Binary::rem) return (x % y).id();
    }
    if constexpr (numeric_v<T>) {
      switch (op) {
        case Binary::add: return (x + y).id();
        case Binary::sub: return (x - y).id();
        case Binary::mul: return (x * y).id();
        case Binary::div: return (x / y).id();
        case Binary::minimum: return minimum(x, y).id();
        case Binary::maximum: return maximum(x, y).id();
        default: break;
      }
    }
  }
  throw InternalError("fuzz: binary operator not defined for these types");
}
}  // namespace

Val as_val(ir::NodeId id) {
  const ir::Node& n = dsl::detail::graph().node(id);
  return Val{id, n.dtype, n.shape.rank};
}

TensorRef param_tensor(ir::Graph& g, int index, ir::DType dtype, int rank) {
  return with_dtype(dtype, [&](auto t) {
    return with_rank<1>(rank, [&](auto r) {
      const auto p = tilejit::detail::make_param<Tensor<decltype(t), decltype(r)::value>>(g, index, Config{});
      return TensorRef{p.id(), dtype, rank, 0};
    });
  });
}

Val param_scalar(ir::Graph& g, int index, ir::DType dtype) {
  return with_dtype(dtype, [&](auto t) {
    return as_val(tilejit::detail::make_param<Scalar<decltype(t)>>(g, index, Config{}).id());
  });
}

void param_block(ir::Graph& g, const std::string& name) {
  ir::Param p;
  p.kind = ir::Param::Config;
  p.dtype = ir::DType::i64;
  p.rank = 0;
  p.name = name;
  g.params.push_back(p);
}

Val program_id(int axis) { return as_val(dsl::program_id(axis).id()); }

Val int_literal(ir::DType dtype, int64_t v) {
  return with_dtype(dtype, [&](auto t) { return as_val(Scalar<decltype(t)>(v).id()); });
}

Val unary(Unary op, const Val& x) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    using T = typename decltype(v)::dtype;
    if constexpr (is_bool_v<T>) {
      if (op == Unary::logical_not) return (!v).id();
    } else if constexpr (numeric_v<T>) {
      if (op == Unary::neg) return (-v).id();
      if (op == Unary::abs) return abs(v).id();
      if constexpr (is_float_v<T>) {
        switch (op) {
          case Unary::exp: return exp(v).id();
          case Unary::exp2: return exp2(v).id();
          case Unary::log: return log(v).id();
          case Unary::log2: return log2(v).id();
          case Unary::sqrt: return sqrt(v).id();
          case Unary::rsqrt: return rsqrt(v).id();
          case Unary::sin: return sin(v).id();
          case Unary::cos: return cos(v).id();
          case Unary::tanh: return tanh(v).id();
          case Unary::sigmoid: return sigmoid(v).id();
          case Unary::erf: return erf(v).id();
          default: break;
        }
      }
    }
    throw InternalError("fuzz: unary operator not defined for this type");
  });
}

Val binary(Binary op, const Val& x, const Val& y) {
  check_internal(y.rank == x.rank || y.rank == 0, "fuzz: binary operands of different ranks");
  return on_value(x, [&](auto a) -> ir::NodeId {
    using TA = typename decltype(a)::dtype;
    constexpr int R = decltype(a)::rank;
    const auto other = [&](auto tb) -> ir::NodeId {
      using TB = decltype(tb);
      if (y.rank == 0) return apply_binary(op, a, Scalar<TB>(dsl::detail::node, y.id));
      return apply_binary(op, a, Value<TB, R>(dsl::detail::node, y.id));
    };
    if (y.dtype == x.dtype) return other(TA{});
    if constexpr (is_int_v<TA>) {
      switch (y.dtype) {
        case ir::DType::i8: return other(i8{});
        case ir::DType::u8: return other(u8{});
        case ir::DType::i32: return other(i32{});
        case ir::DType::i64: return other(i64{});
        default: break;
      }
    }
    throw InternalError("fuzz: binary operands of different element types");
  });
}

Val binary_literal(Binary op, const Val& x, double literal) {
  return on_value(x, [&](auto a) -> ir::NodeId {
    using TA = typename decltype(a)::dtype;
    if constexpr (is_float_v<TA>) {
      return apply_binary(op, a, Scalar<TA>(literal));
    } else {
      return apply_binary(op, a, Scalar<TA>(static_cast<int64_t>(literal)));
    }
  });
}

Val cast(const Val& x, ir::DType to) {
  return on_value(x, [&](auto v) { return with_dtype(to, [&](auto u) { return v.template to<decltype(u)>().id(); }); });
}

Val where(const Val& cond, const Val& a, const Val& b) {
  check_internal(a.dtype == b.dtype && a.rank == b.rank && cond.dtype == ir::DType::i1, "fuzz: where operands");
  return on_value(a, [&](auto x) -> ir::NodeId {
    using T = typename decltype(x)::dtype;
    constexpr int R = decltype(x)::rank;
    const Value<T, R> y(dsl::detail::node, b.id);
    if (cond.rank == 0) return dsl::where(Scalar<i1>(dsl::detail::node, cond.id), x, y).id();
    return dsl::where(Value<i1, R>(dsl::detail::node, cond.id), x, y).id();
  });
}

/// argmax as a combine function of (value, index) pairs: the larger value wins, a NaN counts as the
/// largest, and between equal values (or two NaNs) the smaller index.
template <class T>
std::tuple<Scalar<T>, Scalar<i32>> argmax_combine(Scalar<T> a, Scalar<i32> ai, Scalar<T> b, Scalar<i32> bi) {
  const Scalar<i1> a_nan = a != a, b_nan = b != b;
  const Scalar<i1> tie = b == a || (a_nan && b_nan);
  const Scalar<i1> take = b > a || (b_nan && !a_nan) || (tie && bi < ai);
  return {where(take, b, a), where(take, bi, ai)};
}

Val reduce(Reduction op, const Val& x, int axis) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    using T = typename decltype(v)::dtype;
    if constexpr (decltype(v)::rank >= 1 && numeric_v<T>) {
      switch (op) {
        case Reduction::sum: return sum(v, axis).id();
        case Reduction::max: return max(v, axis).id();
        case Reduction::min: return min(v, axis).id();
        case Reduction::argmax: return argmax(v, axis).id();
      }
    }
    throw InternalError("fuzz: reduction not defined for this value");
  });
}

Val reduce_combine(Reduction op, const Val& x, int axis) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    using T = typename decltype(v)::dtype;
    constexpr int R = decltype(v)::rank;
    if constexpr (R >= 1 && numeric_v<T>) {
      switch (op) {
        case Reduction::sum: return dsl::reduce(v, axis, [](Scalar<T> a, Scalar<T> b) { return a + b; }).id();
        case Reduction::max: return dsl::reduce(v, axis, [](Scalar<T> a, Scalar<T> b) { return maximum(a, b); }).id();
        case Reduction::min: return dsl::reduce(v, axis, [](Scalar<T> a, Scalar<T> b) { return minimum(a, b); }).id();
        case Reduction::argmax: {
          int64_t dims[R];
          for (int d = 0; d < R; ++d) dims[d] = v.dim(d);
          const Value<i32, R> idx(dsl::detail::node, arange_along(v.dim(axis), R, axis).id);
          return std::get<1>(dsl::reduce(std::tuple{v, idx.broadcast_to(dims)}, axis, argmax_combine<T>)).id();
        }
      }
    }
    throw InternalError("fuzz: reduction not defined for this value");
  });
}

std::string combine_text(Reduction op) {
  switch (op) {
    case Reduction::sum: return "[](auto a, auto b) { return a + b; }";
    case Reduction::max: return "[](auto a, auto b) { return maximum(a, b); }";
    case Reduction::min: return "[](auto a, auto b) { return minimum(a, b); }";
    case Reduction::argmax: break;
  }
  return "argmax_combine /* (value, index): larger value, NaN largest, then smaller index */";
}

Val expand_dims(const Val& x, int axis) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    constexpr int R = decltype(v)::rank;
    if constexpr (R < ir::kMaxRank) {
      return with_rank<0>(axis, [&](auto a) -> ir::NodeId {
        if constexpr (decltype(a)::value <= R) return v.template expand_dims<decltype(a)::value>().id();
        throw InternalError("fuzz: expand_dims axis out of range");
      });
    }
    throw InternalError("fuzz: expand_dims of a rank-5 value");
  });
}

Val permute(const Val& x, const std::vector<int64_t>& perm) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    constexpr int R = decltype(v)::rank;
    if constexpr (R >= 2) {
      int64_t p[R];
      for (int d = 0; d < R; ++d) p[d] = perm.at(static_cast<size_t>(d));
      return v.permute(p).id();
    }
    throw InternalError("fuzz: permute of a value of rank < 2");
  });
}

Val arange_along(int64_t n, int rank, int axis) {
  const auto a = dsl::arange(0, n);
  if (rank == 1) return as_val(a.id());
  return with_rank<1>(rank, [&](auto r) {
    int64_t dims[decltype(r)::value];
    for (int i = 0; i < decltype(r)::value; ++i) dims[i] = i == axis ? n : 1;
    return as_val(a.reshape(dims).id());
  });
}

Val full(ir::DType dtype, const std::vector<int64_t>& shape, double v) {
  return with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    return with_rank<1>(static_cast<int>(shape.size()), [&](auto r) {
      int64_t dims[decltype(r)::value];
      for (int i = 0; i < decltype(r)::value; ++i) dims[i] = shape[static_cast<size_t>(i)];
      if constexpr (is_float_v<T>) return as_val(dsl::full<T>(dims, v).id());
      else return as_val(dsl::full<T>(dims, static_cast<int64_t>(v)).id());
    });
  });
}

Val full_of(const std::vector<int64_t>& shape, const Val& s) {
  check_internal(s.rank == 0, "fuzz: full_of needs a scalar");
  return with_dtype(s.dtype, [&](auto t) {
    using T = decltype(t);
    return with_rank<1>(static_cast<int>(shape.size()), [&](auto r) {
      int64_t dims[decltype(r)::value];
      for (int i = 0; i < decltype(r)::value; ++i) dims[i] = shape[static_cast<size_t>(i)];
      return as_val(dsl::full<T>(dims, Scalar<T>(dsl::detail::node, s.id)).id());
    });
  });
}

Val num_programs(int axis) { return as_val(dsl::num_programs(axis).id()); }

Val reshape(const Val& x, const std::vector<int64_t>& shape) {
  return on_value(x, [&](auto v) -> ir::NodeId {
    if constexpr (decltype(v)::rank >= 1) {
      return with_rank<1>(static_cast<int>(shape.size()), [&](auto r) {
        int64_t dims[decltype(r)::value];
        for (int i = 0; i < decltype(r)::value; ++i) dims[i] = shape[static_cast<size_t>(i)];
        return v.reshape(dims).id();
      });
    }
    throw InternalError("fuzz: reshape of a scalar");
  });
}

Val where_literal(const Val& cond, const Val& a, double literal) {
  check_internal(cond.dtype == ir::DType::i1 && cond.rank == a.rank, "fuzz: where_literal operands");
  return on_value(a, [&](auto x) -> ir::NodeId {
    using T = typename decltype(x)::dtype;
    constexpr int R = decltype(x)::rank;
    if constexpr (R >= 1 && numeric_v<T>) {
      const Value<i1, R> c(dsl::detail::node, cond.id);
      if constexpr (is_float_v<T>) return dsl::where(c, x, Scalar<T>(literal)).id();
      else return dsl::where(c, x, Scalar<T>(static_cast<int64_t>(literal))).id();
    }
    throw InternalError("fuzz: where_literal of a scalar or a bool / fp8 block");
  });
}

namespace {
template <class In, class Acc>
ir::NodeId dot_of(const Val& a, const Val& b, const Val& acc, ir::DotPrecision precision = ir::DotPrecision::tf32) {
  return dsl::dot(Value<In, 2>(dsl::detail::node, a.id), Value<In, 2>(dsl::detail::node, b.id), Value<Acc, 2>(dsl::detail::node, acc.id),
                  precision)
      .id();
}
}  // namespace

Val dot(const Val& a, const Val& b, const Val& acc, ir::DotPrecision precision) {
  check_internal(a.rank == 2 && b.rank == 2 && acc.rank == 2 && a.dtype == b.dtype, "fuzz: dot operands");
  using D = ir::DType;
  // The pairs wgmma has (tilejit::passes' accumulator_ok) and f64 on CUDA cores.
  switch (a.dtype) {
    case D::bf16:
      if (acc.dtype == D::f32) return as_val(dot_of<bf16, f32>(a, b, acc));
      break;
    case D::f16:
      if (acc.dtype == D::f32) return as_val(dot_of<f16, f32>(a, b, acc));
      if (acc.dtype == D::f16) return as_val(dot_of<f16, f16>(a, b, acc));
      break;
    case D::f32:
      if (acc.dtype == D::f32) return as_val(dot_of<f32, f32>(a, b, acc, precision));
      break;
    case D::f64:
      if (acc.dtype == D::f64) return as_val(dot_of<f64, f64>(a, b, acc));
      break;
    case D::f8e4m3:
      if (acc.dtype == D::f32) return as_val(dot_of<f8e4m3, f32>(a, b, acc));
      if (acc.dtype == D::f16) return as_val(dot_of<f8e4m3, f16>(a, b, acc));
      break;
    case D::f8e5m2:
      if (acc.dtype == D::f32) return as_val(dot_of<f8e5m2, f32>(a, b, acc));
      if (acc.dtype == D::f16) return as_val(dot_of<f8e5m2, f16>(a, b, acc));
      break;
    case D::i8:
      if (acc.dtype == D::i32) return as_val(dot_of<i8, i32>(a, b, acc));
      break;
    case D::u8:
      if (acc.dtype == D::i32) return as_val(dot_of<u8, i32>(a, b, acc));
      break;
    default: break;
  }
  throw InternalError("fuzz: no dot for these operand and accumulator types");
}

}  // namespace tilejit::fuzz
