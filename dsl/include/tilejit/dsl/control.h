// Structured control flow: counted loops with loop-carried values, if / if-else, and reductions with
// a combine function of the user's.
//
// The C++ body lambdas run once, at trace time, recording a structured region;
// they are not unrolled. Values flowing out of a region must be returned from it.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>

#include "tilejit/dsl/tensor.h"

namespace tilejit::dsl {

namespace detail {
template <class X> struct is_tuple : std::false_type {};
template <class... X> struct is_tuple<std::tuple<X...>> : std::true_type {};

template <class X>
auto as_tuple(X&& x) {
  if constexpr (is_tuple<std::remove_cvref_t<X>>::value) {
    return std::forward<X>(x);
  } else {
    return std::tuple<std::remove_cvref_t<X>>(std::forward<X>(x));
  }
}

template <class Tuple, size_t... K>
std::vector<ir::NodeId> tuple_ids(const Tuple& t, std::index_sequence<K...>) {
  return {std::get<K>(t).id()...};
}

/// Builds a tuple of values of the types in Tuple from nodes made by make(k, template value).
template <class Tuple, class Make, size_t... K>
Tuple make_tuple_of(const Tuple& like, Make&& make, std::index_sequence<K...>) {
  return Tuple{std::tuple_element_t<K, Tuple>(node, make(K, std::get<K>(like).id()))...};
}

template <class Tuple>
void check_same_shapes(const Tuple& a, const std::vector<ir::NodeId>& b, const char* what, const char* problem,
                       const std::source_location& loc) {
  ir::Graph& g = graph();
  const auto ia = tuple_ids(a, std::make_index_sequence<std::tuple_size_v<Tuple>>{});
  for (size_t k = 0; k < ia.size(); ++k) {
    const ir::Shape &sa = g.node(ia[k]).shape, &sb = g.node(b[k]).shape;
    if (!(sa == sb))
      user_error(std::string(what) + ": value " + std::to_string(k) + " " + problem, sa.str() + " -> " + sb.str(),
                 "the same shape", loc);
  }
}

template <class Init, class Body>
auto for_impl(Index lo, Index hi, Index step, const Init& init, Body&& body, const std::source_location& loc) {
  ir::Graph& g = graph_at(loc);
  constexpr size_t N = std::tuple_size_v<Init>;
  std::vector<ir::NodeId> ops{lo.node(ir::DType::i32), hi.node(ir::DType::i32), step.node(ir::DType::i32)};
  if (g.is_const(ops[2]) && g.const_i(ops[2]) <= 0)
    user_error("for_range: the step must be positive", std::to_string(g.const_i(ops[2])), "> 0", loc);
  const auto inits = tuple_ids(init, std::make_index_sequence<N>{});
  ops.insert(ops.end(), inits.begin(), inits.end());
  const auto body_region = static_cast<uint32_t>(g.num_regions());
  const ir::NodeId loop = g.add(ir::Op::For, ir::DType::i32, ir::Shape{}, ops, ir::ForAttrs{body_region});
  check_internal(g.new_region(loop) == body_region, "loop region numbering");
  g.push_region(body_region);
  const Scalar<i32> index(node, g.add(ir::Op::LoopIndex, ir::DType::i32, ir::Shape{}, {loop}));
  const Init args = make_tuple_of(
      init,
      [&](size_t k, ir::NodeId like) {
        const ir::Node& n = g.node(like);
        return g.add(ir::Op::LoopArg, n.dtype, n.shape, {loop}, ir::IndexAttrs{static_cast<int>(k)});
      },
      std::make_index_sequence<N>{});
  std::vector<ir::NodeId> yielded;
  if constexpr (N == 0) {
    body(index);
  } else {
    auto out = as_tuple(std::apply([&](const auto&... a) { return body(index, a...); }, args));
    static_assert(std::is_same_v<decltype(out), Init>,
                  "tilejit: for_range: the body must return values of the same types as the initial values");
    yielded = tuple_ids(out, std::make_index_sequence<N>{});
    check_same_shapes(init, yielded, "for_range", "changes shape in the loop body", loc);
  }
  g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, yielded);
  g.pop_region();
  return make_tuple_of(
      init,
      [&](size_t k, ir::NodeId like) {
        const ir::Node& n = g.node(like);
        return g.add(ir::Op::LoopResult, n.dtype, n.shape, {loop}, ir::IndexAttrs{static_cast<int>(k)});
      },
      std::make_index_sequence<N>{});
}
}  // namespace detail

/// for (i = lo; i < hi; i += step) body(i). `step` must be positive.
template <class Body>
  requires std::is_invocable_v<Body, Scalar<i32>>
void for_range(Index lo, Index hi, Index step, Body&& body, std::source_location loc = std::source_location::current()) {
  detail::for_impl(lo, hi, step, std::tuple<>{}, std::forward<Body>(body), loc);
}

/// A loop carrying one value: acc = body(i, acc) for each i; returns the final acc.
template <class T, int R, class Body>
Value<T, R> for_range(Index lo, Index hi, Index step, const Value<T, R>& init, Body&& body,
                      std::source_location loc = std::source_location::current()) {
  return std::get<0>(detail::for_impl(lo, hi, step, std::tuple<Value<T, R>>(init), std::forward<Body>(body), loc));
}

/// A loop carrying several values: body(i, a, b, ...) returns std::tuple{a', b', ...}.
template <class... V, class Body>
std::tuple<V...> for_range(Index lo, Index hi, Index step, const std::tuple<V...>& init, Body&& body,
                           std::source_location loc = std::source_location::current()) {
  return detail::for_impl(lo, hi, step, init, std::forward<Body>(body), loc);
}

namespace detail {
template <class Then, class Else>
auto if_impl(const Scalar<i1>& cond, Then&& then_fn, Else&& else_fn, const std::source_location& loc) {
  ir::Graph& g = graph_at(loc);
  const auto then_region = static_cast<uint32_t>(g.num_regions());
  const ir::NodeId node =
      g.add(ir::Op::If, ir::DType::i1, ir::Shape{}, {cond.id()}, ir::IfAttrs{then_region, then_region + 1});
  check_internal(g.new_region(node) == then_region, "if region numbering");
  check_internal(g.new_region(node) == then_region + 1, "if region numbering");
  using R = decltype(then_fn());
  g.push_region(then_region);
  std::vector<ir::NodeId> then_ids, else_ids;
  if constexpr (std::is_void_v<R>) {
    then_fn();
    g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, {});
    g.pop_region();
    g.push_region(then_region + 1);
    else_fn();
    g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, {});
    g.pop_region();
    return;
  } else {
    auto t = as_tuple(then_fn());
    using Tup = decltype(t);
    constexpr size_t N = std::tuple_size_v<Tup>;
    then_ids = tuple_ids(t, std::make_index_sequence<N>{});
    g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, then_ids);
    g.pop_region();
    g.push_region(then_region + 1);
    auto e = as_tuple(else_fn());
    static_assert(std::is_same_v<decltype(e), Tup>, "tilejit: if_else: both branches must return values of the same types");
    else_ids = tuple_ids(e, std::make_index_sequence<N>{});
    check_same_shapes(t, else_ids, "if_else", "has different shapes in the two branches (then -> else)", loc);
    g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, else_ids);
    g.pop_region();
    auto results = make_tuple_of(
        t,
        [&](size_t k, ir::NodeId like) {
          const ir::Node& n = g.node(like);
          return g.add(ir::Op::IfResult, n.dtype, n.shape, {node}, ir::IndexAttrs{static_cast<int>(k)});
        },
        std::make_index_sequence<N>{});
    if constexpr (is_tuple<std::remove_cvref_t<R>>::value) {
      return results;
    } else {
      return std::get<0>(results);
    }
  }
}
}  // namespace detail

/// if (cond) then_fn();
template <class Then>
void if_then(const Scalar<i1>& cond, Then&& then_fn, std::source_location loc = std::source_location::current()) {
  static_assert(std::is_void_v<decltype(then_fn())>, "tilejit: if_then: the branch returns nothing; use if_else to produce values");
  detail::if_impl(cond, std::forward<Then>(then_fn), [] {}, loc);
}

/// cond ? then_fn() : else_fn(), both branches returning a value (or a std::tuple of values) of the same types.
template <class Then, class Else>
auto if_else(const Scalar<i1>& cond, Then&& then_fn, Else&& else_fn, std::source_location loc = std::source_location::current()) {
  return detail::if_impl(cond, std::forward<Then>(then_fn), std::forward<Else>(else_fn), loc);
}

namespace detail {
/// Checks what the combine function of reduce() recorded in region `r`: pure operations on single
/// elements only (each error names the line of the offending operation).
inline void check_combine(const ir::Graph& g, uint32_t r) {
  for (ir::NodeId b : g.region(r).nodes) {
    const ir::Node& n = g.node(b);
    if (n.op == ir::Op::CombineArg || n.op == ir::Op::Yield) continue;
    const ir::Location& l = g.location(b);
    const std::string op(ir::name_of(n.op));
    if (ir::kind_of(n.op) != ir::OpKind::Pure)
      throw UserError("reduce: the combine function may only compute on its arguments (no memory access, loop or if)", op,
                      "pure operations on scalars", l.file, l.line);
    if (n.shape.rank != 0)
      throw UserError("reduce: the combine function works on single elements", op + " makes a " + n.shape.str() + " block",
                      "scalars", l.file, l.line);
    for (ir::NodeId o : g.operands(b))
      if (g.node(o).shape.rank != 0)
        throw UserError("reduce: the combine function reads a block from outside it", op + " reads a " + g.node(o).shape.str() + " block",
                        "scalars (its arguments, constants, kernel scalars)", l.file, l.line);
  }
}

template <class Xs, class Combine, size_t... K>
auto reduce_impl(const Xs& xs, int axis, Combine& combine, const std::source_location& loc, std::index_sequence<K...>) {
  constexpr size_t N = sizeof...(K);
  constexpr int R = std::tuple_element_t<0, Xs>::rank;
  static_assert(R >= 1, "tilejit: reduce needs blocks of rank >= 1");
  using Args = std::tuple<Scalar<typename std::tuple_element_t<K, Xs>::dtype>...>;
  using Results = std::tuple<Value<typename std::tuple_element_t<K, Xs>::dtype, R - 1>...>;
  ir::Graph& g = graph_at(loc);
  if (axis < 0 || axis >= R) user_error("reduce: axis out of range", std::to_string(axis), "0.." + std::to_string(R - 1), loc);
  const std::vector<ir::NodeId> ops{std::get<K>(xs).id()...};
  const ir::Shape& s = g.node(ops[0]).shape;
  for (size_t k = 1; k < N; ++k)
    if (!(g.node(ops[k]).shape == s))
      user_error("reduce: the reduced blocks differ in shape", "block 0 is " + s.str() + ", block " + std::to_string(k) + " is " +
                 g.node(ops[k]).shape.str(), "one shape", loc);
  ir::Shape r;
  r.rank = R - 1;
  for (int i = 0, j = 0; i < R; ++i)
    if (i != axis) r.dims[j++] = s.dims[i];
  const auto region = static_cast<uint32_t>(g.num_regions());
  const ir::NodeId red = g.add(ir::Op::Reduce, ir::DType::i32, r, ops, ir::ReduceAttrs{axis, region});
  check_internal(g.new_region(red) == region, "reduce region numbering");
  g.push_region(region);
  auto arg = [&](size_t k) {
    return g.add(ir::Op::CombineArg, g.node(ops[k % N]).dtype, ir::Shape{}, {red}, ir::IndexAttrs{static_cast<int>(k)});
  };
  // Braced initialisation: the accumulated values' arguments are made first, in order.
  const Args a{std::tuple_element_t<K, Args>(node, arg(K))...};
  const Args b{std::tuple_element_t<K, Args>(node, arg(N + K))...};
  auto out = as_tuple(std::apply([&](const auto&... x) { return std::apply([&](const auto&... y) { return combine(x..., y...); }, b); }, a));
  static_assert(std::is_same_v<decltype(out), Args>,
                "tilejit: reduce: the combine function must return scalars of the reduced blocks' element types, in order "
                "(a std::tuple of them when several blocks are reduced)");
  g.add(ir::Op::Yield, ir::DType::i32, ir::Shape{}, tuple_ids(out, std::make_index_sequence<N>{}));
  g.pop_region();
  check_combine(g, region);
  graph_at(loc);
  return Results{std::tuple_element_t<K, Results>(node, g.add(ir::Op::ReduceResult, g.node(ops[K]).dtype, r, {red},
                                                                 ir::IndexAttrs{static_cast<int>(K)}))...};
}
}  // namespace detail

/// Reduces several blocks of one shape along `axis` together (Triton's tl.reduce): for n blocks,
/// combine(a0, ..., an-1, b0, ..., bn-1) receives two partial results as scalars and returns their
/// combination as a std::tuple of n scalars. It is traced once; it may use only its arguments,
/// constants and scalars from outside, and must be associative and commutative (the elements are
/// combined in threads, then across lanes and warps, in no fixed order). Returns the n results.
///
///   // the maximum and its column, ties to the smaller column
///   auto [best, col] = reduce(std::tuple{x, cols}, 1, [](Scalar<f32> v, Scalar<i32> i, Scalar<f32> w, Scalar<i32> j) {
///     const auto take = w > v || (w == v && j < i);
///     return std::tuple{where(take, w, v), where(take, j, i)};
///   });
template <class... T, int R, class Combine>
std::tuple<Value<tag_t<T>, R - 1>...> reduce(const std::tuple<Value<T, R>...>& xs, int axis, Combine&& combine,
                                             std::source_location loc = std::source_location::current()) {
  static_assert(sizeof...(T) >= 1, "tilejit: reduce needs at least one block");
  return detail::reduce_impl(xs, axis, combine, loc, std::index_sequence_for<T...>{});
}

/// Reduces one block along `axis` with combine(a, b) -> scalar (associative and commutative).
template <class T, int R, class Combine>
Value<tag_t<T>, R - 1> reduce(const Value<T, R>& x, int axis, Combine&& combine,
                              std::source_location loc = std::source_location::current()) {
  return std::get<0>(detail::reduce_impl(std::tuple<Value<T, R>>(x), axis, combine, loc, std::index_sequence<0>{}));
}

}  // namespace tilejit::dsl
