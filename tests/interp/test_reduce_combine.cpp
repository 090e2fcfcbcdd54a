// Interpreter tests of reductions with a combine function (dsl::reduce): one, two and three values over
// every axis of odd shapes against sequential C++ references, kernel scalars read by the function, the
// errors of functions that are not pure scalar code, and the IR the trace records.
#include <array>
#include <cmath>

#include "interp_test_util.h"
#include "tilejit/passes/lowering.h"

using namespace itest;
using tilejit::dim3;
using tilejit::KernelArg;
namespace dsl = tilejit::dsl;

namespace {

template <int R>
int64_t numel(const std::array<int64_t, R>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// outer / len / inner of reducing `axis` of `shape`.
struct Geom {
  int64_t outer = 1, len = 1, inner = 1;
};
template <int R>
Geom geom(const std::array<int64_t, R>& shape, int axis) {
  Geom g;
  for (int d = 0; d < R; ++d) {
    const int64_t e = shape[static_cast<size_t>(d)];
    if (d < axis) g.outer *= e;
    if (d == axis) g.len = e;
    if (d > axis) g.inner *= e;
  }
  return g;
}

/// The reduced block's shape as a C array for reshape (rank R - 1; [1] for R == 1).
template <int R>
std::array<int64_t, (R > 1 ? R - 1 : 1)> out_dims(const std::array<int64_t, R>& shape, int axis) {
  std::array<int64_t, (R > 1 ? R - 1 : 1)> o{};
  o[0] = 1;
  for (int d = 0, k = 0; d < R; ++d)
    if (d != axis) o[static_cast<size_t>(k++)] = shape[static_cast<size_t>(d)];
  return o;
}

/// Stores `v` (rank R - 1) to `y` in row-major order.
template <int R, class T>
void store_result(const dsl::Tensor<T, 1>& y, const dsl::Value<T, R - 1>& v, const std::array<int64_t, (R > 1 ? R - 1 : 1)>& od) {
  using namespace tilejit::dsl;
  if constexpr (R == 1) {
    store(y, Scalar<i32>(0), v);
  } else {
    int64_t dims[R - 1];
    int64_t n = 1;
    for (int d = 0; d < R - 1; ++d) n *= dims[d] = od[static_cast<size_t>(d)];
    store(y, arange(0, n).reshape(dims), v);
  }
}

/// argmin with ties to the smaller index, and the (sum, max) pair, of i32 values over `axis`; the
/// index along the axis is computed from the element offset.
template <int R>
void pairs_case(const std::array<int64_t, R>& shape, int axis) {
  const Geom g = geom<R>(shape, axis);
  const int64_t n = numel<R>(shape), m = g.outer * g.inner;
  const auto od = out_dims<R>(shape, axis);
  auto k = tilejit::kernel("combine_pairs", [&](dsl::Tensor<dsl::i32, 1> x, dsl::Tensor<dsl::i32, 1> vmin, dsl::Tensor<dsl::i32, 1> imin,
                                               dsl::Tensor<dsl::i32, 1> vsum, dsl::Tensor<dsl::i32, 1> vmax) {
    using namespace tilejit::dsl;
    int64_t dims[R];
    for (int d = 0; d < R; ++d) dims[d] = shape[static_cast<size_t>(d)];
    auto offs = arange(0, n).reshape(dims);
    auto v = load(x, offs);
    auto idx = offs / static_cast<int32_t>(g.inner) % static_cast<int32_t>(g.len);
    auto [best, at] = reduce(std::tuple{v, idx}, axis, [](Scalar<i32> a, Scalar<i32> ai, Scalar<i32> b, Scalar<i32> bi) {
      auto take = b < a || (b == a && bi < ai);
      return std::tuple{where(take, b, a), where(take, bi, ai)};
    });
    auto [total, most] = reduce(std::tuple{v, v}, axis, [](Scalar<i32> s, Scalar<i32> mx, Scalar<i32> t, Scalar<i32> my) {
      return std::tuple{s + t, maximum(mx, my)};
    });
    store_result<R>(vmin, best, od);
    store_result<R>(imin, at, od);
    store_result<R>(vsum, total, od);
    store_result<R>(vmax, most, od);
  });
  Buffer x(DType::i32, n), vmin(DType::i32, m), imin(DType::i32, m), vsum(DType::i32, m), vmax(DType::i32, m);
  auto r = rng(static_cast<uint32_t>(n * 7 + axis));
  for (int64_t i = 0; i < n; ++i) x.seti(i, static_cast<int64_t>(r() % 9) - 4);  // many ties
  tilejit::interp::run(*k.trace(tilejit::Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(vmin.arg1()), tensor_arg(imin.arg1()),
                                              tensor_arg(vsum.arg1()), tensor_arg(vmax.arg1())});
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      int64_t best = 0, total = 0, most = INT64_MIN;
      for (int64_t l = 0; l < g.len; ++l) {
        const int64_t v = x.geti((o * g.len + l) * g.inner + i);
        if (v < x.geti((o * g.len + best) * g.inner + i)) best = l;
        total += v;
        most = std::max(most, v);
      }
      const int64_t e = o * g.inner + i;
      CHECK(vmin.geti(e) == x.geti((o * g.len + best) * g.inner + i));
      CHECK(imin.geti(e) == best);
      CHECK(vsum.geti(e) == total);
      CHECK(vmax.geti(e) == most);
    }
}

/// Welford's (count, mean, M2) of f64 values over `axis`, merged pairwise (Chan et al.).
template <int R>
void welford_case(const std::array<int64_t, R>& shape, int axis) {
  const Geom g = geom<R>(shape, axis);
  const int64_t n = numel<R>(shape), m = g.outer * g.inner;
  const auto od = out_dims<R>(shape, axis);
  auto k = tilejit::kernel("combine_welford", [&](dsl::Tensor<dsl::f64, 1> x, dsl::Tensor<dsl::f64, 1> mean, dsl::Tensor<dsl::f64, 1> var) {
    using namespace tilejit::dsl;
    int64_t dims[R];
    for (int d = 0; d < R; ++d) dims[d] = shape[static_cast<size_t>(d)];
    auto v = load(x, arange(0, n).reshape(dims));
    auto [cnt, mu, m2] = reduce(std::tuple{v * 0.0 + 1.0, v, v * 0.0}, axis,
                                [](Scalar<f64> na, Scalar<f64> ma, Scalar<f64> qa, Scalar<f64> nb, Scalar<f64> mb, Scalar<f64> qb) {
                                  auto nn = na + nb;
                                  auto delta = mb - ma;
                                  return std::tuple{nn, ma + delta * (nb / nn), qa + qb + delta * delta * (na * nb / nn)};
                                });
    store_result<R>(mean, mu, od);
    store_result<R>(var, m2 / cnt, od);
  });
  Buffer x(DType::f64, n), mean(DType::f64, m), var(DType::f64, m);
  auto r = rng(static_cast<uint32_t>(n * 5 + axis));
  for (int64_t i = 0; i < n; ++i) x.setf(i, static_cast<double>(r() % 2000) / 100.0 - 7.0);
  tilejit::interp::run(*k.trace(tilejit::Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(mean.arg1()), tensor_arg(var.arg1())});
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      long double s = 0, q = 0;
      for (int64_t l = 0; l < g.len; ++l) s += x.getf((o * g.len + l) * g.inner + i);
      const long double mu = s / static_cast<long double>(g.len);
      for (int64_t l = 0; l < g.len; ++l) {
        const long double d = x.getf((o * g.len + l) * g.inner + i) - mu;
        q += d * d;
      }
      const int64_t e = o * g.inner + i;
      CHECK(mean.getf(e) == doctest::Approx(static_cast<double>(mu)).epsilon(1e-12));
      CHECK(var.getf(e) == doctest::Approx(static_cast<double>(q / static_cast<long double>(g.len))).epsilon(1e-10));
    }
}

/// The message of the UserError that tracing `k` throws (the kernel records the line it expects first).
template <class K>
std::string trace_error(K& k) {
  try {
    k.trace(tilejit::Config{});
  } catch (const tilejit::UserError& e) {
    return e.what();
  }
  FAIL("tracing did not throw a UserError");
  return "";
}

void check_parts(const std::string& what, std::initializer_list<std::string> parts) {
  for (const std::string& p : parts) {
    INFO("message: ", what, "\n missing: ", p);
    CHECK(what.find(p) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("reduce with a combine function: argmin with ties and (sum, max) pairs over every axis of odd shapes") {
  pairs_case<1>({1}, 0);
  pairs_case<1>({37}, 0);
  pairs_case<2>({3, 5}, 0);
  pairs_case<2>({3, 5}, 1);
  pairs_case<2>({7, 1}, 1);
  pairs_case<3>({2, 3, 5}, 0);
  pairs_case<3>({2, 3, 5}, 1);
  pairs_case<3>({2, 3, 5}, 2);
  pairs_case<4>({3, 1, 4, 2}, 2);
  pairs_case<4>({2, 3, 2, 3}, 3);
}

TEST_CASE("reduce with a combine function: Welford's mean and variance, three values merged pairwise") {
  welford_case<1>({100}, 0);
  welford_case<2>({6, 33}, 1);
  welford_case<2>({31, 3}, 0);
  welford_case<3>({2, 5, 7}, 1);
}

TEST_CASE("reduce with a combine function: one value, and a kernel scalar read inside the function") {
  Buffer x(DType::f32, 4 * 9), y(DType::f32, 4), p(DType::i32, 4);
  for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(i % 9) * 0.5 - 1.0);
  auto k = tilejit::kernel("combine_one", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::i32, 1> p,
                                            dsl::Scalar<dsl::f32> cap) {
    using namespace tilejit::dsl;
    auto v = load(x, arange(0, 36).reshape({4, 9}));
    // The largest value, capped: min(max(a, b), cap) is associative and commutative.
    auto capped = reduce(v, 1, [&](Scalar<f32> a, Scalar<f32> b) { return minimum(maximum(a, b), cap); });
    // A product of small integers (exact).
    auto prod = reduce((v * 2.0f + 3.0f).to<i32>(), 1, [](Scalar<i32> a, Scalar<i32> b) { return a * b; });
    store(y, arange(0, 4), capped);
    store(p, arange(0, 4), prod);
  });
  tilejit::interp::run(*k.trace(tilejit::Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), tensor_arg(p.arg1()), scalar_arg(DType::f32, 1.75)});
  for (int64_t r = 0; r < 4; ++r) {
    CHECK(y.getf(r) == 1.75);  // the row's maximum, 3.0, capped
    int64_t want = 1;
    for (int64_t c = 0; c < 9; ++c) want *= static_cast<int64_t>(x.getf(r * 9 + c) * 2.0 + 3.0);
    CHECK(p.geti(r) == static_cast<int32_t>(want));
  }
}

TEST_CASE("reduce with a combine function: the trace records one region; an unused reduce is dropped") {
  auto k = tilejit::kernel("combine_ir", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y) {
    using namespace tilejit::dsl;
    auto v = load(x, arange(0, 64).reshape({4, 16}));
    auto unused = reduce(v, 0, [](Scalar<f32> a, Scalar<f32> b) { return a + b; });
    (void)unused;
    auto [s, m] = reduce(std::tuple{v, v}, 1, [](Scalar<f32> a, Scalar<f32> am, Scalar<f32> b, Scalar<f32> bm) {
      return std::tuple{a + b, maximum(am, bm)};
    });
    store(y, arange(0, 4), s - m);
  });
  const auto g = k.trace(tilejit::Config{});
  const std::string text = ir::print(*g);
  CHECK(text.find("reduce %") != std::string::npos);
  CHECK(text.find("combine {") != std::string::npos);
  CHECK(text.find("reduce.arg %") != std::string::npos);
  CHECK(text.find("reduce.result %") != std::string::npos);
  const tilejit::passes::Lowered l = tilejit::passes::lower(*g, tilejit::codegen::Options{}, {});
  int reduces = 0;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (l.graph.node(static_cast<NodeId>(i)).op == Op::Reduce) ++reduces;
  CHECK(reduces == 1);
}

TEST_CASE("reduce with a combine function: errors name the rule, the value and the user's line") {
  int line = 0;
  SUBCASE("a load inside the function") {
    auto k = tilejit::kernel("combine_load", [&](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y) {
      using namespace tilejit::dsl;
      auto v = load(x, arange(0, 16));
      store(y, Scalar<i32>(0), reduce(v, 0, [&](Scalar<f32> a, Scalar<f32> b) {
              line = __LINE__ + 1;
              return a + b + load(x, Scalar<i32>(0));
            }));
    });
    const std::string msg = trace_error(k);
    check_parts(msg,
                {"test_reduce_combine.cpp:" + std::to_string(line),
                       "reduce: the combine function may only compute on its arguments (no memory access, loop or if)", "load"});
  }
  SUBCASE("a block from outside") {
    auto k = tilejit::kernel("combine_block", [&](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y) {
      using namespace tilejit::dsl;
      auto v = load(x, arange(0, 16));
      auto s = sum(v.reshape({4, 4}), 1);  // a [4] block
      // An operator has no source location of its own: its error names the last line recorded, the reduce's.
      line = __LINE__ + 1;
      store(y, Scalar<i32>(0), reduce(v, 0, [&](Scalar<f32> a, Scalar<f32> b) { return sum(s + a, 0) + b; }));
    });
    const std::string msg = trace_error(k);
    check_parts(msg,
                {"test_reduce_combine.cpp:" + std::to_string(line), "reduce: the combine function works on single elements",
                       "broadcast makes a [4] block"});
  }
  SUBCASE("blocks of different shapes, an axis out of range") {
    auto k = tilejit::kernel("combine_shapes", [&](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y) {
      using namespace tilejit::dsl;
      auto v = load(x, arange(0, 16)).reshape({4, 4});
      auto w = load(x, arange(0, 8)).reshape({2, 4});
      line = __LINE__ + 1;
      auto [a, b] = reduce(std::tuple{v, w}, 1, [](Scalar<f32> p, Scalar<f32> q, Scalar<f32> r, Scalar<f32> s) {
        return std::tuple{p + r, q + s};
      });
      store(y, arange(0, 4), a);
      (void)b;
    });
    const std::string msg = trace_error(k);
    check_parts(msg,
                {"test_reduce_combine.cpp:" + std::to_string(line), "reduce: the reduced blocks differ in shape",
                       "block 0 is [4, 4], block 1 is [2, 4]"});
    auto k2 = tilejit::kernel("combine_axis", [&](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y) {
      using namespace tilejit::dsl;
      auto v = load(x, arange(0, 16));
      line = __LINE__ + 1;
      store(y, Scalar<i32>(0), reduce(v, 1, [](Scalar<f32> a, Scalar<f32> b) { return a + b; }));
    });
    const std::string msg2 = trace_error(k2);
    check_parts(msg2,
                {"test_reduce_combine.cpp:" + std::to_string(line), "reduce: axis out of range", "0..0"});
  }
}
