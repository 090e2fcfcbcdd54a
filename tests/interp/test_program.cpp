// Interpreter tests of programs and block construction: grid order, shape ops, the scale example, determinism, speed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "../../samples/sample_kernels.h"
#include "interp_test_util.h"
#include "tilejit/passes/rewrites.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

TEST_CASE("programs run in order, x fastest, with program_id and num_programs") {
  auto k = tilejit::kernel("order", [](dsl::Tensor<dsl::i32, 1> counter, dsl::Tensor<dsl::i32, 1> order, dsl::Tensor<dsl::i32, 1> dims) {
    using namespace tilejit::dsl;
    const Scalar<i32> z = 0;
    auto linear = program_id(0) + num_programs(0) * (program_id(1) + num_programs(1) * program_id(2));
    auto c = load(counter, z);
    store(order, linear, c);
    store(counter, z, c + 1);
    store(dims, linear * 3 + arange(0, 3),
          where(arange(0, 3) == 0, num_programs(0), where(arange(0, 3) == 1, num_programs(1), num_programs(2))));
  });
  const dim3 grids[] = {dim3(1), dim3(7), dim3(3, 5), dim3(2, 3, 4), dim3(1, 1, 6)};
  for (const dim3& g : grids) {
    SUBCASE((std::to_string(g.x) + "x" + std::to_string(g.y) + "x" + std::to_string(g.z)).c_str()) {
      const auto n = static_cast<int64_t>(g.count());
      Buffer counter(DType::i32, 1), order(DType::i32, n), dims(DType::i32, 3 * n);
      tilejit::interp::run(*k.trace(Config{}), g,
                           std::vector<KernelArg>{tensor_arg(counter.arg1()), tensor_arg(order.arg1()), tensor_arg(dims.arg1())});
      CHECK(counter.geti(0) == n);
      for (int64_t i = 0; i < n; ++i) {
        CHECK(order.geti(i) == i);
        CHECK(dims.geti(3 * i) == g.x);
        CHECK(dims.geti(3 * i + 1) == g.y);
        CHECK(dims.geti(3 * i + 2) == g.z);
      }
    }
  }
  SUBCASE("a grid with a zero dimension is refused and runs nothing") {
    Buffer counter(DType::i32, 1), order(DType::i32, 1), dims(DType::i32, 3);
    expect_user_error(
        [&] {
          tilejit::interp::run(*k.trace(Config{}), dim3(4, 0, 2),
                               std::vector<KernelArg>{tensor_arg(counter.arg1()), tensor_arg(order.arg1()), tensor_arg(dims.arg1())});
        },
        {"grid.y of kernel 'order' is zero"});
    CHECK(counter.geti(0) == 0);
  }
}

// ---- shape ops built directly: broadcast, reshape, permute, arange, constants --------------------------------

namespace {
std::vector<int64_t> dims_of(const ir::Shape& s) { return std::vector<int64_t>(s.dims.begin(), s.dims.begin() + s.rank); }

/// Runs y = op(load(x as `in`)) and returns y as int64 values (x[k] = k * 3 + 1, i32 or f64).
std::vector<double> run_shape_op(DType t, const ir::Shape& in, const ir::Shape& out, Op op, std::initializer_list<int64_t> ints) {
  Buffer x(t, in.numel()), y(t, out.numel());
  for (int64_t k = 0; k < x.size(); ++k) {
    if (ir::is_float(t)) x.setf(k, ref_round(t, static_cast<double>(k) * 3 + 1));
    else x.seti(k, k * 3 + 1);
  }
  Builder B;
  const NodeId tx = B.tensor(t), ty = B.tensor(t);
  const NodeId v = B.load(tx, B.iota(in));
  B.store(ty, B.iota(out), B.op(op, t, out, {v}, ints));
  B.run(dim3(1), {tensor_arg(x.arg1()), tensor_arg(y.arg1())});
  std::vector<double> r;
  for (int64_t k = 0; k < y.size(); ++k) r.push_back(y.value(k));
  return r;
}

int64_t row_major_offset(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t o = 0;
  for (size_t d = 0; d < dims.size(); ++d) o = o * dims[d] + idx[d];
  return o;
}
}  // namespace

TEST_CASE("broadcast follows numpy rules from every lower rank") {
  struct Case {
    ir::Shape in, out;
  };
  const Case cases[] = {{ir::Shape{}, ir::Shape{5}},          {ir::Shape{1}, ir::Shape{4, 3}},       {ir::Shape{3}, ir::Shape{4, 3}},
                        {ir::Shape{4, 1}, ir::Shape{4, 3}},    {ir::Shape{1, 3}, ir::Shape{2, 4, 3}}, {ir::Shape{2, 1, 3}, ir::Shape{2, 5, 3}},
                        {ir::Shape{5, 1, 1}, ir::Shape{2, 5, 3, 2}}, {ir::Shape{1, 2, 1, 2, 1}, ir::Shape{3, 2, 2, 2, 3}},
                        {ir::Shape{7}, ir::Shape{1, 1, 1, 1, 7}}};
  for (const Case& c : cases) {
    for (DType t : {DType::i32, DType::f64, DType::bf16}) {
      SUBCASE((c.in.str() + " -> " + c.out.str() + " " + name(t)).c_str()) {
        const auto got = run_shape_op(t, c.in, c.out, Op::Broadcast, {});
        const auto od = dims_of(c.out), id = dims_of(c.in);
        int64_t bad = 0;
        for_each_index(od, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> src(id.size());
          for (size_t d = 0; d < id.size(); ++d) {
            const size_t od_i = d + od.size() - id.size();
            src[d] = id[d] == 1 ? 0 : idx[od_i];
          }
          const double want = ref_round(t, static_cast<double>(row_major_offset(src, id) * 3 + 1));
          bad += got[static_cast<size_t>(row_major_offset(idx, od))] != want;
        });
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("permute puts input dimension perm[d] at result dimension d") {
  const std::vector<int64_t> shapes[] = {{3, 5}, {2, 3, 4}, {2, 1, 3, 5}, {2, 3, 1, 2, 3}};
  for (const auto& sh : shapes) {
    std::vector<int64_t> perm(sh.size());
    std::iota(perm.begin(), perm.end(), 0);
    int count = 0;
    do {
      if (count++ % (sh.size() == 5 ? 17 : 1)) continue;  // every permutation up to rank 4, a sample of rank 5
      std::string pn;
      for (int64_t p : perm) pn += std::to_string(p);
      SUBCASE((ir::Shape::of(sh).str() + " perm " + pn).c_str()) {
        std::vector<int64_t> od(sh.size());
        for (size_t d = 0; d < sh.size(); ++d) od[d] = sh[static_cast<size_t>(perm[d])];
        const ir::Shape out = ir::Shape::of(od);
        Buffer x(DType::i64, ir::Shape::of(sh).numel()), y(DType::i64, out.numel());
        for (int64_t k = 0; k < x.size(); ++k) x.seti(k, k * 3 + 1);
        Builder B;
        const NodeId tx = B.tensor(DType::i64), ty = B.tensor(DType::i64);
        const NodeId v = B.load(tx, B.iota(ir::Shape::of(sh)));
        B.store(ty, B.iota(out), B.g.add(Op::Permute, DType::i64, out, {v}, std::span<const int64_t>(perm)));
        B.run(dim3(1), {tensor_arg(x.arg1()), tensor_arg(y.arg1())});
        int64_t bad = 0;
        for_each_index(od, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> src(sh.size());
          for (size_t d = 0; d < sh.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
          bad += y.geti(row_major_offset(idx, od)) != row_major_offset(src, sh) * 3 + 1;
        });
        CHECK(bad == 0);
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST_CASE("reshape keeps row-major order; arange and constants of every type") {
  SUBCASE("reshape [2, 3, 4] -> [4, 6] -> [24]") {
    const auto got = run_shape_op(DType::i32, ir::Shape{2, 3, 4}, ir::Shape{4, 6}, Op::Reshape, {});
    for (size_t k = 0; k < got.size(); ++k) CHECK(got[k] == static_cast<double>(k * 3 + 1));
  }
  SUBCASE("arange with an offset start") {
    Buffer y(DType::i32, 9);
    Builder B;
    const NodeId ty = B.tensor(DType::i32);
    B.store(ty, B.iota(ir::Shape{9}), B.g.add(Op::Arange, DType::i32, ir::Shape{9}, {}, {-4}));
    B.run(dim3(1), {tensor_arg(y.arg1())});
    for (int64_t k = 0; k < 9; ++k) CHECK(y.geti(k) == k - 4);
  }
  for (DType t : kAllTypes) {
    SUBCASE(("const " + name(t)).c_str()) {
      Buffer y(t, 3);
      Builder B;
      const NodeId ty = B.tensor(t);
      const NodeId c = ir::is_float(t) ? B.cf(t, ref_round(t, -2.75)) : B.ci(t, ref_wrap(t, -3));
      B.store(ty, B.iota(ir::Shape{3}), B.bcast(c, ir::Shape{3}));
      B.run(dim3(1), {tensor_arg(y.arg1())});
      for (int64_t k = 0; k < 3; ++k) {
        if (ir::is_float(t)) CHECK(y.getf(k) == ref_round(t, -2.75));
        else CHECK(y.geti(k) == ref_wrap(t, -3));
      }
    }
  }
}

TEST_CASE("DSL block construction: arange, full, zeros, expand_dims, broadcast_to, reshape, permute, trans, where") {
  auto k = tilejit::kernel("shapes", [](dsl::Tensor<dsl::f32, 1> out) {
    using namespace tilejit::dsl;
    auto col = arange(2, 5).expand_dims<1>();               // [3, 1]: 2, 3, 4
    auto row = arange(0, 4).expand_dims<0>();               // [1, 4]
    auto grid = (col * 10 + row).to<f32>();                 // [3, 4]
    auto t = grid.trans();                                  // [4, 3]
    auto p = grid.reshape({3, 2, 2}).permute({2, 0, 1});    // [2, 3, 2]
    auto b = full<f32>({3}, 0.5f).broadcast_to({2, 3});     // [2, 3]
    auto w = where(grid > 25.0f, grid, zeros<f32>({3, 4}) - 1.0f);
    store(out, arange(0, 12), t.reshape({12}));
    store(out, arange(12, 24), p.reshape({12}));
    store(out, arange(24, 30), b.reshape({6}) + arange(0, 6).to<f32>());
    store(out, arange(30, 42), w.reshape({12}));
  });
  Buffer y(DType::f32, 42);
  tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(y.arg1())});
  auto grid = [](int64_t i, int64_t j) { return static_cast<double>((i + 2) * 10 + j); };
  for (int64_t j = 0; j < 4; ++j)
    for (int64_t i = 0; i < 3; ++i) CHECK(y.getf(j * 3 + i) == grid(i, j));
  // reshape [3, 4] -> [3, 2, 2]: element (a, b, c) = grid flat a*4 + b*2 + c; permute {2, 0, 1}: out (c, a, b).
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t a = 0; a < 3; ++a)
      for (int64_t b = 0; b < 2; ++b) {
        const int64_t flat = a * 4 + b * 2 + c;
        CHECK(y.getf(12 + c * 6 + a * 2 + b) == grid(flat / 4, flat % 4));
      }
  for (int64_t k2 = 0; k2 < 6; ++k2) CHECK(y.getf(24 + k2) == 0.5 + static_cast<double>(k2));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) CHECK(y.getf(30 + i * 4 + j) == (grid(i, j) > 25 ? grid(i, j) : -1.0));
}

namespace {
/// A kernel generic over its element type: cast<f32>(x) and expand_dims<0>(x) need no `.template`, and load and
/// store take literal offsets (a number or a Meta value).
template <class T>
auto generic_kernel() {
  return tilejit::kernel("generic", [](dsl::Tensor<T, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::i32, 1> n, dsl::Meta<"B"> B) {
    using namespace tilejit::dsl;
    auto i = arange(0, B);
    auto v = cast<f32>(load(x, i));
    store(y, 0, sum(v * expand_dims<0>(v).reshape({B}), 0) + cast<f32>(load(n, 0)));
    store(n, B, load(n, 1) + 1);
    store(n, int64_t{2}, load(n, int64_t{3}) * 2);
  });
}
}  // namespace

TEST_CASE("DSL in a template: cast<T>(x) and expand_dims<A>(x) as free functions; load and store at literal offsets") {
  auto k = generic_kernel<dsl::bf16>();
  Buffer x(DType::bf16, 16), y(DType::f32, 1), n(DType::i32, 17);
  for (int64_t j = 0; j < 16; ++j) x.setf(j, static_cast<double>(j % 4));
  for (int64_t j = 0; j < 17; ++j) n.seti(j, 5 + j);
  KernelArg block;
  block.kind = KernelArg::Config;
  tilejit::interp::run(*k.trace(Config{{"B", 16}}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), tensor_arg(n.arg1()), block});
  CHECK(y.getf(0) == 4 * (0 + 1 + 4 + 9) + 5);  // the sum of squares plus n[0]
  CHECK(n.geti(16) == 6 + 1);                     // n[1] + 1 at offset B
  CHECK(n.geti(2) == 8 * 2);                      // n[3] * 2, i64 offsets
}

TEST_CASE("DSL where between two literals: integers give an i32 block, floats an f32 one, Meta values count as integers") {
  auto k = tilejit::kernel("where_literals", [](dsl::Tensor<dsl::i32, 1> oi, dsl::Tensor<dsl::f32, 1> of, dsl::Tensor<dsl::i64, 1> ol,
                                                dsl::Meta<"B"> B) {
    using namespace tilejit::dsl;
    auto i = arange(0, 8);
    auto ones = where(i < 3, 1, 0);  // Value<i32, 1>
    static_assert(std::is_same_v<decltype(ones), Value<i32, 1>>);
    store(oi, i, ones + where(i >= 6, B, 0));
    store(of, i, where(i % 2 == 0, 1.5f, -0.25));
    store(ol, i, where(i == 7, int64_t{1} << 40, int64_t{0}));
  });
  Buffer oi(DType::i32, 8), of(DType::f32, 8), ol(DType::i64, 8);
  KernelArg block;
  block.kind = KernelArg::Config;
  tilejit::interp::run(*k.trace(Config{{"B", 100}}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(oi.arg1()), tensor_arg(of.arg1()), tensor_arg(ol.arg1()), block});
  for (int64_t j = 0; j < 8; ++j) {
    CHECK(oi.geti(j) == (j < 3 ? 1 : 0) + (j >= 6 ? 100 : 0));
    CHECK(of.getf(j) == (j % 2 == 0 ? 1.5 : -0.25));
    CHECK(ol.geti(j) == (j == 7 ? int64_t{1} << 40 : 0));
  }
}

TEST_CASE("DSL integer promotion and literals: i8 + i32 is i32, u8 wraps, i64 arithmetic") {
  auto k = tilejit::kernel("promote", [](dsl::Tensor<dsl::i8, 1> a, dsl::Tensor<dsl::u8, 1> b, dsl::Tensor<dsl::i32, 1> o32,
                                         dsl::Tensor<dsl::u8, 1> o8, dsl::Tensor<dsl::i64, 1> o64) {
    using namespace tilejit::dsl;
    auto i = arange(0, 8);
    auto va = load(a, i);
    auto vb = load(b, i);
    store(o32, i, va + i * 1000);        // i8 + i32 -> i32
    store(o8, i, vb * 3 + 7);            // u8 arithmetic wraps modulo 256
    store(o64, i, va.to<i64>() * 4000000000LL - 1);
  });
  Buffer a(DType::i8, 8), b(DType::u8, 8), o32(DType::i32, 8), o8(DType::u8, 8), o64(DType::i64, 8);
  for (int64_t i = 0; i < 8; ++i) {
    a.seti(i, i * 37 - 128);
    b.seti(i, i * 41 + 3);
  }
  tilejit::interp::run(*k.trace(Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(a.arg1()), tensor_arg(b.arg1()), tensor_arg(o32.arg1()), tensor_arg(o8.arg1()),
                                              tensor_arg(o64.arg1())});
  for (int64_t i = 0; i < 8; ++i) {
    CHECK(o32.geti(i) == a.geti(i) + i * 1000);
    CHECK(o8.geti(i) == ((b.geti(i) * 3 + 7) & 0xff));
    CHECK(o64.geti(i) == a.geti(i) * 4000000000LL - 1);
  }
}

// ---- the README example, determinism, speed ----------------------------------------------------------------

namespace {
auto scale_kernel() {
  return tilejit::kernel("scale", [](dsl::Tensor<dsl::bf16, 2> x, dsl::Tensor<dsl::bf16, 2> y, dsl::Scalar<dsl::f32> alpha,
                                     dsl::Meta<"BM"> BM, dsl::Meta<"BN"> BN) {
    using namespace tilejit::dsl;
    auto m = program_id(0) * BM;
    auto n = program_id(1) * BN;
    auto t = descriptor_load(x, {m, n}, {BM, BN});
    descriptor_store(y, {m, n}, (t.to<f32>() * alpha).to<bf16>());
  });
}
}  // namespace

TEST_CASE("the scale example through interpret(), with sizes that are not multiples of the tile") {
  const int64_t shapes[][2] = {{100, 200}, {64, 128}, {1, 8}, {130, 264}};
  for (const auto& mn : shapes) {
    const int64_t M = mn[0], N = mn[1];
    SUBCASE((std::to_string(M) + "x" + std::to_string(N)).c_str()) {
      std::vector<tilejit::bfloat16> X(static_cast<size_t>(M * N)), Y(static_cast<size_t>(M * N), tilejit::bfloat16(-1.0f));
      for (size_t i = 0; i < X.size(); ++i) X[i] = tilejit::bfloat16(static_cast<float>(i % 251) * 0.37f - 40.0f);
      auto k = scale_kernel();
      k.interpret(dim3(static_cast<uint32_t>(tilejit::cdiv(M, 64)), static_cast<uint32_t>(tilejit::cdiv(N, 128))), Config{{"BM", 64}, {"BN", 128}},
                  tilejit::TensorView<dsl::bf16, 2>(X.data(), {M, N}), tilejit::TensorView<dsl::bf16, 2>(Y.data(), {M, N}), 2.5f);
      int64_t bad = 0;
      for (size_t i = 0; i < X.size(); ++i) bad += Y[i].bits != tilejit::bfloat16(static_cast<float>(X[i]) * 2.5f).bits;
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("TensorView deduces the element type and rank from a typed pointer; a const one is read-only") {
  std::vector<tilejit::bfloat16> X(64 * 128, tilejit::bfloat16(1.5f)), Y(64 * 128);
  const std::vector<tilejit::bfloat16>& cx = X;
  const int64_t M = 64;
  const int N = 128;
  tilejit::TensorView x(cx.data(), {M, N});
  tilejit::TensorView y(Y.data(), {M, N});
  tilejit::TensorView strided(Y.data(), {M, 64}, {128, 1});
  static_assert(std::is_same_v<decltype(x), tilejit::TensorView<tilejit::bfloat16, 2>>);
  static_assert(std::is_same_v<decltype(x)::dtype, dsl::bf16>);
  static_assert(decltype(strided)::rank == 2);
  CHECK(x.read_only());
  CHECK_FALSE(y.read_only());
  CHECK(strided.strides()[0] == 128);
  scale_kernel().interpret(dim3(1, 1), Config{{"BM", 64}, {"BN", 128}}, x, y, 2.0f);
  CHECK(static_cast<float>(Y[5]) == 3.0f);
  // A kernel that writes a view deduced from a const pointer is refused before anything runs.
  CHECK_THROWS_AS(scale_kernel().interpret(dim3(1, 1), Config{{"BM", 64}, {"BN", 128}}, y, x, 2.0f), tilejit::UserError);
}

namespace {
/// A kernel mixing TMA, reductions, transcendentals, atomics and a loop, for the determinism check.
auto busy_kernel() {
  return tilejit::kernel("busy", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 1> rows, dsl::Tensor<dsl::f32, 1> total) {
    using namespace tilejit::dsl;
    auto m = program_id(0) * 16;
    auto t = descriptor_load(x, {m, 0}, {16, 32});
    auto s = for_range(0, 4, 1, zeros<f32>({16}), [&](Scalar<i32> i, Value<f32, 1> acc) {
      return acc + sum(exp(t * (i.to<f32>() * 0.1f)) / (abs(t) + 1.0f), 1);
    });
    auto r = m + arange(0, 16);
    store(rows, r, tanh(s) + sqrt(abs(s)), r < rows.size(0).to<i32>());
    atomic_add(total, program_id(0) % 3, sum(s, 0));
  });
}
}  // namespace

TEST_CASE("two runs give identical bits") {
  const int64_t M = 200;
  Buffer x(DType::f32, M * 32);
  auto r = rng(77);
  for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(static_cast<float>(static_cast<double>(r() % 2000) / 1000.0 - 1.0)));
  auto k = busy_kernel();
  const auto g = k.trace(Config{});
  Buffer rows1(DType::f32, M), rows2(DType::f32, M), tot1(DType::f32, 3), tot2(DType::f32, 3);
  const auto grid = dim3(static_cast<uint32_t>(tilejit::cdiv(M, 16)));
  tilejit::interp::run(*g, grid, std::vector<KernelArg>{tensor_arg(x.arg({M, 32})), tensor_arg(rows1.arg1()), tensor_arg(tot1.arg1())});
  tilejit::interp::run(*g, grid, std::vector<KernelArg>{tensor_arg(x.arg({M, 32})), tensor_arg(rows2.arg1()), tensor_arg(tot2.arg1())});
  CHECK(std::memcmp(rows1.data(), rows2.data(), static_cast<size_t>(M) * 4) == 0);
  CHECK(std::memcmp(tot1.data(), tot2.data(), 12) == 0);
  // And the result is not trivial: every row was written, the totals are finite and nonzero.
  for (int64_t i = 0; i < M; ++i) CHECK(std::isfinite(rows1.getf(i)));
  for (int64_t i = 0; i < 3; ++i) CHECK(tot1.getf(i) != 0.0);
}

TEST_CASE("a 64x128 elementwise TMA kernel over 1024x1024 interprets in well under a second") {
  const int64_t M = 1024, N = 1024;
  std::vector<tilejit::bfloat16> X(static_cast<size_t>(M * N)), Y(static_cast<size_t>(M * N));
  for (size_t i = 0; i < X.size(); ++i) X[i] = tilejit::bfloat16(static_cast<float>(i % 1000) * 0.01f);
  auto k = scale_kernel();
  const Config cfg{{"BM", 64}, {"BN", 128}};
  const dim3 grid(static_cast<uint32_t>(M / 64), static_cast<uint32_t>(N / 128));
  const tilejit::TensorView<dsl::bf16, 2> xv(X.data(), {M, N}), yv(Y.data(), {M, N});
  k.interpret(grid, cfg, xv, yv, 2.0f);  // traces once
  const auto t0 = std::chrono::steady_clock::now();
  k.interpret(grid, cfg, xv, yv, 2.0f);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("1024x1024 bf16 scale: " << secs * 1000 << " ms");
  CHECK(secs < 1.0);
  CHECK(static_cast<float>(Y[12345]) == static_cast<float>(X[12345]) * 2.0f);
}

TEST_CASE("the samples' attention kernel computes softmax(q k^T * scale) v for every head (interpreter)") {
  // Two heads of 128 positions, head dimension 64: blocks of 64 queries and 64 keys (two loop iterations).
  const int64_t heads = 2, S = 128, D = 64;
  std::vector<tilejit::bfloat16> q(static_cast<size_t>(heads * S * D)), k(q.size()), v(q.size()), o(q.size());
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = tilejit::bfloat16(static_cast<float>((i * 37) % 101) / 50.0f - 1.0f);
    k[i] = tilejit::bfloat16(static_cast<float>((i * 53) % 97) / 48.0f - 1.0f);
    v[i] = tilejit::bfloat16(static_cast<float>((i * 29) % 89) / 44.0f - 1.0f);
  }
  const float scale = 0.125f;
  auto kern = tilejit::samples::attention_kernel();
  using TV = tilejit::TensorView<dsl::bf16, 2>;
  kern.interpret(dim3(static_cast<uint32_t>(S / 64), static_cast<uint32_t>(heads)), Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2),
                 TV(q.data(), {heads * S, D}), TV(k.data(), {heads * S, D}), TV(v.data(), {heads * S, D}), TV(o.data(), {heads * S, D}),
                 static_cast<int32_t>(S), scale);
  double err2 = 0, ref2 = 0;
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = 0; r < S; ++r) {
      std::vector<double> s(static_cast<size_t>(S));
      double mx = -INFINITY, total = 0;
      for (int64_t j = 0; j < S; ++j) {
        double d = 0;
        for (int64_t c = 0; c < D; ++c)
          d += static_cast<double>(static_cast<float>(q[static_cast<size_t>((h * S + r) * D + c)])) *
               static_cast<double>(static_cast<float>(k[static_cast<size_t>((h * S + j) * D + c)]));
        s[static_cast<size_t>(j)] = d * scale;
        mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      for (auto& x : s) total += (x = std::exp(x - mx));
      for (int64_t c = 0; c < D; ++c) {
        double want = 0;
        for (int64_t j = 0; j < S; ++j)
          want += s[static_cast<size_t>(j)] * static_cast<double>(static_cast<float>(v[static_cast<size_t>((h * S + j) * D + c)]));
        want /= total;
        const double got = static_cast<float>(o[static_cast<size_t>((h * S + r) * D + c)]);
        err2 += (got - want) * (got - want);
        ref2 += want * want;
      }
    }
  // P and O are rounded to bf16 (2^-9 relative each), and O is a sum of terms of both signs much larger than it
  // (measured: 8.0e-3); a wrong scale, maximum or head offset moves O by its own size.
  CHECK(std::sqrt(err2 / ref2) < 3e-2);

  // The same loop over [heads, S, D] tensors with {1, BM, D} tiles reshaped to 2-D gives the same bits, as
  // traced and after canonicalize (which loads the tiles as [BM, D]).
  const Config cfg = Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2);
  const dim3 grid(static_cast<uint32_t>(S / 64), static_cast<uint32_t>(heads));
  auto bhsd = tilejit::samples::attention_bhsd_kernel();
  using TV3 = tilejit::TensorView<dsl::bf16, 3>;
  std::vector<tilejit::bfloat16> o3(o.size());
  bhsd.interpret(grid, cfg, TV3(q.data(), {heads, S, D}), TV3(k.data(), {heads, S, D}), TV3(v.data(), {heads, S, D}),
                 TV3(o3.data(), {heads, S, D}), scale);
  CHECK(std::memcmp(o3.data(), o.data(), o.size() * sizeof(o[0])) == 0);
  const ir::Graph canon = tilejit::passes::canonicalize(*bhsd.trace(cfg));
  int reshaped_loads = 0;
  for (size_t i = 0; i < canon.size(); ++i)
    reshaped_loads += canon.node(static_cast<NodeId>(i)).op == Op::DescLoad && canon.node(static_cast<NodeId>(i)).shape.rank == 2;
  CHECK(reshaped_loads == 3);
  auto tensor = [&](std::vector<tilejit::bfloat16>& x) {
    tilejit::TensorArg a;
    a.data = x.data();
    a.dtype = DType::bf16;
    a.rank = 3;
    a.sizes[0] = heads, a.sizes[1] = S, a.sizes[2] = D;
    a.strides[0] = S * D, a.strides[1] = D, a.strides[2] = 1;
    return tensor_arg(a);
  };
  std::vector<tilejit::bfloat16> oc(o.size());
  KernelArg cf;
  cf.kind = KernelArg::Config;  // the traced graph holds BM, BN and D; the arguments only take their places
  const std::vector<KernelArg> args{tensor(q), tensor(k), tensor(v), tensor(oc), scalar_arg(DType::f32, scale), cf, cf, cf};
  tilejit::interp::run(canon, grid, args);
  CHECK(std::memcmp(oc.data(), o.data(), o.size() * sizeof(o[0])) == 0);
}

TEST_CASE("sample 12's attention, causal, with query and key blocks of different sizes (interpreter)") {
  // BN larger than BM (the diagonal's masked loop starts before the query block) and smaller; S = 200 ends in a
  // partial block either way. Then more queries than keys (causal: the first S_q - S_k rows see no key, so their
  // output is 0 and their lse +inf, and no NaN anywhere) and fewer (every query sees S_k - S_q keys more than its
  // index), dense and causal. Against a double reference, with the log-sum-exp.
  const int64_t heads = 2, D = 64;
  const float scale = 0.125f;
  auto kern = tilejit::samples::attention_forward_kernel();
  using TV3 = tilejit::TensorView<dsl::bf16, 3>;
  struct Case {
    int64_t bm, bn, sq, sk;
    int causal;
  };
  for (const Case& c : {Case{64, 128, 200, 200, 1}, Case{128, 32, 200, 200, 1}, Case{64, 64, 200, 77, 1}, Case{128, 32, 200, 77, 1},
                        Case{64, 64, 77, 200, 1}, Case{64, 64, 200, 77, 0}, Case{64, 128, 77, 200, 0}, Case{64, 64, 130, 1, 1}}) {
    INFO("BM " << c.bm << " BN " << c.bn << " S_q " << c.sq << " S_k " << c.sk << (c.causal ? " causal" : " dense"));
    std::vector<tilejit::bfloat16> q(static_cast<size_t>(heads * c.sq * D)), o(q.size()), k(static_cast<size_t>(heads * c.sk * D)), v(k.size());
    std::vector<float> lse(static_cast<size_t>(heads * c.sq));
    for (size_t i = 0; i < q.size(); ++i) q[i] = tilejit::bfloat16(std::sin(0.37f * static_cast<float>(i)));
    for (size_t i = 0; i < k.size(); ++i) {
      k[i] = tilejit::bfloat16(std::cos(0.23f * static_cast<float>(i)));
      v[i] = tilejit::bfloat16(0.5f + 0.5f * std::sin(0.11f * static_cast<float>(i)));
    }
    kern.interpret(dim3(static_cast<uint32_t>(tilejit::cdiv(c.sq, c.bm)), static_cast<uint32_t>(heads)),
                   Config{{"BM", c.bm}, {"BN", c.bn}, {"D", D}, {"CAUSAL", c.causal}}.num_warps(4).num_stages(2),
                   TV3(q.data(), {heads, c.sq, D}), TV3(k.data(), {heads, c.sk, D}), TV3(v.data(), {heads, c.sk, D}),
                   TV3(o.data(), {heads, c.sq, D}), tilejit::TensorView<dsl::f32, 2>(lse.data(), {heads, c.sq}), scale);
    double err2 = 0, ref2 = 0, lse_err = 0;
    int64_t unseen = 0, nonzero_unseen = 0, nan = 0;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < c.sq; ++r) {
        auto at = [&](const std::vector<tilejit::bfloat16>& t, int64_t rows, int64_t j, int64_t col) {
          return static_cast<double>(static_cast<float>(t[static_cast<size_t>((h * rows + j) * D + col)]));
        };
        const float row_lse = lse[static_cast<size_t>(h * c.sq + r)];
        for (int64_t col = 0; col < D; ++col) nan += std::isnan(at(o, c.sq, r, col));
        nan += std::isnan(row_lse);
        // Bottom-right aligned: query r sees the keys up to r + S_k - S_q.
        const int64_t keys = c.causal ? std::clamp<int64_t>(r + c.sk - c.sq + 1, 0, c.sk) : c.sk;
        if (keys == 0) {
          ++unseen;
          for (int64_t col = 0; col < D; ++col) nonzero_unseen += at(o, c.sq, r, col) != 0.0;
          CHECK(row_lse == std::numeric_limits<float>::infinity());
          continue;
        }
        std::vector<double> s(static_cast<size_t>(keys));
        double mx = -INFINITY, total = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double d = 0;
          for (int64_t col = 0; col < D; ++col) d += at(q, c.sq, r, col) * at(k, c.sk, j, col);
          mx = std::max(mx, s[static_cast<size_t>(j)] = d * scale);
        }
        for (auto& x : s) total += (x = std::exp(x - mx));
        lse_err = std::max(lse_err, std::abs(row_lse - (mx + std::log(total))));
        for (int64_t col = 0; col < D; ++col) {
          double want = 0;
          for (int64_t j = 0; j < keys; ++j) want += s[static_cast<size_t>(j)] * at(v, c.sk, j, col);
          want /= total;
          err2 += (at(o, c.sq, r, col) - want) * (at(o, c.sq, r, col) - want);
          ref2 += want * want;
        }
      }
    // P and O are rounded to bf16; a key after its query let through, or one dropped, moves the rows near the
    // diagonal by far more (and their log-sum-exp by more than 1e-3).
    CHECK(std::sqrt(err2 / ref2) < 1e-2);
    CHECK(lse_err < 1e-3);
    CHECK(nan == 0);
    CHECK(nonzero_unseen == 0);
    CHECK(unseen == (c.causal ? heads * std::max<int64_t>(c.sq - c.sk, 0) : 0));
  }
}

TEST_CASE("a run rejected in a later program leaves the tensors it writes as they were") {
  // Programs 0-2 store inside y; program 3 stores past its end. A rejected run writes nothing,
  // as on the GPU, whose launch is refused before the kernel starts.
  auto k = tilejit::kernel("late_failure", [](dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::i32, 1> counts) {
    using namespace tilejit::dsl;
    const Scalar<i32> z = 0;
    atomic_add(counts, z, 1);
    store(y, program_id(0) * 4 + arange(0, 4), 1.0f);
  });
  std::vector<float> y(12, 0.0f);
  std::vector<int32_t> counts(1, 7);
  CHECK_THROWS_AS(k.interpret(dim3(4), Config{}, tilejit::TensorView<dsl::f32, 1>(y.data(), {12}),
                              tilejit::TensorView<dsl::i32, 1>(counts.data(), {1})),
                  tilejit::UserError);
  for (float v : y) CHECK(v == 0.0f);
  CHECK(counts[0] == 7);
  // The same kernel over a grid that fits writes every program's part.
  k.interpret(dim3(3), Config{}, tilejit::TensorView<dsl::f32, 1>(y.data(), {12}), tilejit::TensorView<dsl::i32, 1>(counts.data(), {1}));
  for (float v : y) CHECK(v == 1.0f);
  CHECK(counts[0] == 10);
}

// The former spellings of Meta and StoreReduce keep compiling (with a deprecation warning, silenced here).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("deprecated spellings: Block<\"B\"> is Meta<\"B\">, Reduce is StoreReduce") {
  static_assert(std::is_same_v<tilejit::dsl::Block<"B">, tilejit::dsl::Meta<"B">>);
  static_assert(std::is_same_v<tilejit::dsl::Reduce, tilejit::dsl::StoreReduce>);
  auto k = tilejit::kernel("old_names", [](tilejit::dsl::Tensor<tilejit::dsl::f32, 1> y, tilejit::dsl::Block<"B"> B) {
    using namespace tilejit::dsl;
    descriptor_store(y, {0}, full<f32>({B}, 1.0f), Reduce::add);
  });
  std::vector<float> y(8, 1.0f);
  k.interpret(tilejit::dim3(1), tilejit::Config{{"B", 8}}, tilejit::TensorView<float, 1>(y.data(), {8}));
  CHECK(y[7] == 2.0f);
}
#pragma GCC diagnostic pop
