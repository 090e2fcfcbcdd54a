// Interpreter tests of pointer-style memory access: load/store of every type, masks at edges, atomics, argument checks.
#include <algorithm>

#include "interp_test_util.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

TEST_CASE("load and store move every element type bit-exactly") {
  uint64_t seed = 1500;
  for (DType t : kAllTypes) {
    ++seed;
    SUBCASE(name(t).c_str()) {
      const int64_t n = 257;
      Buffer x(t, n), y(t, n);
      auto r = rng(seed);
      for (int64_t k = 0; k < n; ++k) x.set_bits(k, random_bits(t, r));
      Builder B;
      const NodeId tx = B.tensor(t), ty = B.tensor(t);
      // Two programs copy the whole tensor through one [n] block (the second rewrites the same values).
      const ir::Shape s{n};
      const NodeId offs = B.iota(s);
      B.store(ty, offs, B.load(tx, offs));
      B.run(dim3(2), {tensor_arg(x.arg1()), tensor_arg(y.arg1())});
      int64_t bad = 0;
      for (int64_t k = 0; k < n; ++k) bad += x.bits(k) != y.bits(k);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("bool tensors hold one byte per element; any nonzero byte reads as true") {
  Buffer x(DType::u8, 8), y(DType::i1, 8);
  const uint8_t raw[8] = {0, 1, 2, 255, 0, 7, 0, 128};
  for (int64_t k = 0; k < 8; ++k) x.seti(k, raw[k]);
  tilejit::TensorArg xa = x.arg1();
  xa.dtype = DType::i1;  // the same bytes seen as bools
  Builder B;
  const NodeId tx = B.tensor(DType::i1), ty = B.tensor(DType::i1);
  const NodeId offs = B.iota(ir::Shape{8});
  B.store(ty, offs, B.op(Op::Not, DType::i1, ir::Shape{8}, {B.load(tx, offs)}));
  B.run(dim3(1), {tensor_arg(xa), tensor_arg(y.arg1())});
  for (int64_t k = 0; k < 8; ++k) CHECK(y.bits(k) == (raw[k] ? 0u : 1u));
}

namespace {
/// y[i, j] = x[i, j] + 1 for a [BM, BN] tile per program, masked at the edges; masked-off loads read -1.
auto masked_kernel() {
  return tilejit::kernel("masked", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 2> y, dsl::Meta<"BM"> BM, dsl::Meta<"BN"> BN) {
    using namespace tilejit::dsl;
    auto rows = program_id(0) * BM + arange(0, BM);
    auto cols = program_id(1) * BN + arange(0, BN);
    auto r = rows.expand_dims<1>();
    auto c = cols.expand_dims<0>();
    auto mask = (r < x.size(0).to<i32>()) & (c < x.size(1).to<i32>());
    auto v = load(x, r * x.stride(0).to<i32>() + c, mask, -1.0f);
    store(y, r * y.stride(0).to<i32>() + c, v + 1.0f, mask);
  });
}
}  // namespace

TEST_CASE("masked loads and stores at the edges of odd-sized tensors") {
  const int64_t shapes[][2] = {{13, 29}, {1, 1}, {16, 32}, {17, 33}, {5, 64}};
  for (const auto& mn : shapes) {
    const int64_t M = mn[0], N = mn[1], BM = 8, BN = 16, ld = N + 3;
    SUBCASE((std::to_string(M) + "x" + std::to_string(N)).c_str()) {
      Buffer x(DType::f32, M * ld), y(DType::f32, M * ld);
      for (int64_t k = 0; k < x.size(); ++k) {
        x.setf(k, static_cast<double>(k) * 0.25);
        y.setf(k, -9.0);
      }
      auto k = masked_kernel();
      const auto g = k.trace(Config{{"BM", BM}, {"BN", BN}});
      KernelArg cfg;
      cfg.kind = KernelArg::Config;
      const dim3 grid(static_cast<uint32_t>(tilejit::cdiv(M, BM)), static_cast<uint32_t>(tilejit::cdiv(N, BN)));
      tilejit::interp::run(*g, grid, std::vector<KernelArg>{tensor_arg(x.arg({M, N}, {ld, 1})), tensor_arg(y.arg({M, N}, {ld, 1})), cfg, cfg});
      int64_t bad = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ld; ++j) bad += y.getf(i * ld + j) != (j < N ? x.getf(i * ld + j) + 1.0 : -9.0);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("masked-off lanes read `other` and touch no memory, even far out of bounds") {
  Buffer x(DType::i32, 10), y(DType::i32, 16);
  for (int64_t k = 0; k < 10; ++k) x.seti(k, 100 + k);
  for (int64_t k = 0; k < 16; ++k) y.seti(k, -1);
  auto k = tilejit::kernel("far_mask", [](dsl::Tensor<dsl::i32, 1> a, dsl::Tensor<dsl::i32, 1> b, dsl::Scalar<dsl::i32> other) {
    using namespace tilejit::dsl;
    auto i = arange(0, 16);
    auto offs = where(i < 10, i, i * 1000000 - 5000000);  // lanes 10..15 point far away
    auto v = load(a, offs, i < 10, other);
    store(b, i, v);
    store(a, offs, v * 2, i < 10);
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), scalar_arg(DType::i32, 77)});
  for (int64_t i = 0; i < 16; ++i) CHECK(y.geti(i) == (i < 10 ? 100 + i : 77));
  for (int64_t i = 0; i < 10; ++i) CHECK(x.geti(i) == 2 * (100 + i));
}

TEST_CASE("unmasked out-of-bounds access is a UserError naming the op's line and the program") {
  int load_line = 0, store_line = 0, atomic_line = 0;
  auto k = tilejit::kernel("oob", [&](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 1> b, dsl::Scalar<dsl::i32> shift, dsl::Scalar<dsl::i32> which) {
    using namespace tilejit::dsl;
    auto offs = program_id(0) * 8 + arange(0, 8) + shift;
    if_then(which == 0, [&] {
      load_line = __LINE__ + 1;
      store(b, arange(0, 8), load(a, offs));
    });
    if_then(which == 1, [&] {
      store_line = __LINE__ + 1;
      store(a, offs, 1.0f);
    });
    if_then(which == 2, [&] {
      atomic_line = __LINE__ + 1;
      atomic_add(a, offs, 1.0f);
    });
  });
  const auto g = k.trace(Config{});
  Buffer a(DType::f32, 6 * 4), b(DType::f32, 8);
  auto run = [&](int shift, int which) {
    tilejit::interp::run(*g, dim3(3), std::vector<KernelArg>{tensor_arg(a.arg({6, 4})), tensor_arg(b.arg1()),
                                                             scalar_arg(DType::i32, shift), scalar_arg(DType::i32, which)});
  };
  SUBCASE("in bounds") {
    run(0, 0);
    run(0, 1);
    run(0, 2);
    for (int64_t i = 0; i < 24; ++i) CHECK(a.getf(i) == 2.0);
  }
  SUBCASE("load past the end") {
    expect_user_error([&] { run(1, 0); }, {"test_memory.cpp:" + std::to_string(load_line), "load: unmasked access outside arg0",
                                           "element offset 24", "element [7]", "program (2, 0, 0)", "offsets 0..23"});
  }
  SUBCASE("negative offset") {
    expect_user_error([&] { run(-3, 1); }, {"test_memory.cpp:" + std::to_string(store_line), "store: unmasked access outside arg0",
                                            "element offset -3", "program (0, 0, 0)"});
    for (int64_t i = 0; i < 24; ++i) CHECK(a.getf(i) == 0.0);  // the failing store wrote nothing
  }
  SUBCASE("atomic_add past the end") {
    expect_user_error([&] { run(5, 2); }, {"test_memory.cpp:" + std::to_string(atomic_line), "atomic_add: unmasked access outside arg0",
                                           "program (2, 0, 0)"});
  }
}

TEST_CASE("strided and transposed tensors: offsets from size() and stride()") {
  // A [5, 7] matrix stored transposed (column-major): strides [1, 5]; and a padded one: strides [9, 1].
  for (int layout = 0; layout < 2; ++layout) {
    SUBCASE(layout ? "padded rows" : "column-major") {
      const int64_t M = 5, N = 7;
      const std::vector<int64_t> st = layout ? std::vector<int64_t>{9, 1} : std::vector<int64_t>{1, 5};
      const int64_t ext = layout ? 9 * M : M * N;
      Buffer x(DType::f64, ext), y(DType::f64, M * N);
      for (int64_t k = 0; k < ext; ++k) x.setf(k, static_cast<double>(k) + 0.5);
      auto k = tilejit::kernel("strided", [](dsl::Tensor<dsl::f64, 2> a, dsl::Tensor<dsl::f64, 2> b) {
        using namespace tilejit::dsl;
        auto r = arange(0, 8).expand_dims<1>().to<i64>();
        auto c = arange(0, 8).expand_dims<0>().to<i64>();
        auto mask = (r < a.size(0)) & (c < a.size(1));
        auto v = load(a, r * a.stride(0) + c * a.stride(1), mask);
        store(b, r * b.stride(0) + c * b.stride(1), v, mask);
      });
      tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(x.arg({M, N}, st)), tensor_arg(y.arg({M, N}))});
      int64_t bad = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) bad += y.getf(i * N + j) != x.getf(i * st[0] + j * st[1]);
      CHECK(bad == 0);
    }
  }
}

TEST_CASE("tensor sizes and strides are runtime values of every argument") {
  Buffer x(DType::bf16, 3 * 40), out(DType::i64, 6);
  auto k = tilejit::kernel("sizes", [](dsl::Tensor<dsl::bf16, 3> a, dsl::Tensor<dsl::i64, 1> o) {
    using namespace tilejit::dsl;
    const Scalar<i32> z = 0, one = 1, two = 2, three = 3, four = 4, five = 5;
    store(o, z, a.size(0));
    store(o, one, a.size(1));
    store(o, two, a.size(2));
    store(o, three, a.stride(0));
    store(o, four, a.stride(1));
    store(o, five, a.stride(2));
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(x.arg({3, 4, 5}, {40, 10, 1})), tensor_arg(out.arg1())});
  const int64_t want[] = {3, 4, 5, 40, 10, 1};
  for (int64_t i = 0; i < 6; ++i) CHECK(out.geti(i) == want[i]);
}

namespace {
/// Sequential reference of atomic adds: programs in order, lanes in order.
template <class F>
void ref_atomic(std::vector<double>& mem, int64_t programs, int64_t lanes, F&& lane_fn) {
  for (int64_t p = 0; p < programs; ++p)
    for (int64_t l = 0; l < lanes; ++l) lane_fn(mem, p, l);
}
}  // namespace

TEST_CASE("atomic_add accumulates across programs, in program order") {
  const DType types[] = {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i32, DType::i64};
  for (DType t : types) {
    SUBCASE(name(t).c_str()) {
      // A histogram: 37 programs add value (p + l) * 0.125 + 1 to bin (p * 5 + l * 3) % 11, lanes with l % 4 == 3 masked off.
      const int64_t bins = 11, programs = 37, lanes = 16;
      Buffer h(t, bins);
      for (int64_t b = 0; b < bins; ++b) h.setf(b, ir::is_float(t) ? 1000.0 : 0.0);
      if (!ir::is_float(t))
        for (int64_t b = 0; b < bins; ++b) h.seti(b, 1000);
      Builder B;
      const NodeId th = B.tensor(t);
      const ir::Shape s{lanes};
      const NodeId lane = B.iota(s);
      const NodeId pid = B.bcast(B.op(Op::ProgramId, DType::i32, ir::Shape{}, {}, {0}), s);
      auto c32 = [&](int64_t v) { return B.bcast(B.ci(DType::i32, v), s); };
      const NodeId bin = B.op(Op::Rem, DType::i32, s,
                              {B.op(Op::Add, DType::i32, s, {B.op(Op::Mul, DType::i32, s, {pid, c32(5)}), B.op(Op::Mul, DType::i32, s, {lane, c32(3)})}), c32(bins)});
      const NodeId pl = B.op(Op::Add, DType::i32, s, {pid, lane});
      NodeId val;
      if (ir::is_float(t)) {
        const NodeId plf = B.op(Op::Cast, t, s, {pl});
        val = B.op(Op::Add, t, s, {B.op(Op::Mul, t, s, {plf, B.bcast(B.cf(t, 0.125), s)}), B.bcast(B.cf(t, 1.0), s)});
      } else {
        val = B.op(Op::Cast, t, s, {B.op(Op::Mul, DType::i32, s, {pl, c32(1000003)})});
      }
      const NodeId mask = B.op(Op::Ne, DType::i1, s, {B.op(Op::Rem, DType::i32, s, {lane, c32(4)}), c32(3)});
      B.g.add(Op::AtomicAdd, t, s, {th, bin, val, mask}, {1});
      B.run(dim3(programs), {tensor_arg(h.arg1())});
      std::vector<double> ref(static_cast<size_t>(bins), 1000.0);
      std::vector<int64_t> iref(static_cast<size_t>(bins), 1000);
      ref_atomic(ref, programs, lanes, [&](std::vector<double>& m, int64_t p, int64_t l) {
        if (l % 4 == 3) return;
        const auto b = static_cast<size_t>((p * 5 + l * 3) % bins);
        if (ir::is_float(t)) {
          const double v = ref_round(t, static_cast<double>(p + l) * 0.125 + 1.0);
          m[b] = t == DType::f64 ? m[b] + v : ref_round(t, static_cast<float>(m[b]) + static_cast<float>(v));
        } else {
          const int64_t v = ref_wrap(DType::i32, (p + l) * 1000003);
          iref[b] = ref_wrap(t, iref[b] + v);
        }
      });
      for (int64_t b = 0; b < bins; ++b) {
        if (ir::is_float(t)) CHECK(h.getf(b) == ref[static_cast<size_t>(b)]);
        else CHECK(h.geti(b) == iref[static_cast<size_t>(b)]);
      }
    }
  }
}

TEST_CASE("atomic_add through the DSL: a sum of every program's tile into one row") {
  Buffer x(DType::f32, 64 * 16), total(DType::f32, 16);
  for (int64_t k = 0; k < x.size(); ++k) x.setf(k, static_cast<double>(k % 13) - 6.0);
  auto k = tilejit::kernel("colsum", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 1> out) {
    using namespace tilejit::dsl;
    auto rows = program_id(0) * 4 + arange(0, 4);
    auto tile = load(a, rows.expand_dims<1>() * 16 + arange(0, 16).expand_dims<0>());
    atomic_add(out, arange(0, 16), sum(tile, 0));
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(16), std::vector<KernelArg>{tensor_arg(x.arg({64, 16})), tensor_arg(total.arg1())});
  for (int64_t j = 0; j < 16; ++j) {
    float want = 0;
    for (int64_t p = 0; p < 16; ++p) {
      float part = static_cast<float>(x.getf((p * 4) * 16 + j));
      for (int64_t i = 1; i < 4; ++i) part += static_cast<float>(x.getf((p * 4 + i) * 16 + j));
      want += part;
    }
    CHECK(total.getf(j) == static_cast<double>(want));
  }
}

TEST_CASE("scalar arguments of every type") {
  for (DType t : kAllTypes) {
    SUBCASE(name(t).c_str()) {
      const double fv = 2.7182818284590452;
      const int64_t iv = -1234567;
      Builder B;
      const NodeId s = B.scalar(t), ty = B.tensor(t);
      B.store(ty, B.ci(DType::i32, 0), s);
      Buffer y(t, 1);
      KernelArg a;
      a.kind = KernelArg::Scalar;
      a.dtype = t;
      a.f = fv;
      a.i = iv;
      B.run(dim3(1), {a, tensor_arg(y.arg1())});
      if (ir::is_float(t)) CHECK(y.getf(0) == ref_round(t, fv));  // rounded once to the parameter's type
      else CHECK(y.geti(0) == ref_wrap(t, iv));
    }
  }
}

TEST_CASE("kernel arguments are checked against the parameters before any program runs") {
  auto k = tilejit::kernel("args", [](dsl::Tensor<dsl::f32, 2> a, dsl::Scalar<dsl::f32> s, dsl::TensorArray<dsl::f32, 1> arr) {
    using namespace tilejit::dsl;
    (void)arr;
    const Scalar<i32> z = 0;
    store(a, z, s);
  });
  const auto g = k.trace(Config{});
  Buffer x(DType::f32, 16);
  KernelArg arr;
  arr.kind = KernelArg::TensorArray;
  const KernelArg good_t = tensor_arg(x.arg({4, 4})), good_s = scalar_arg(DType::f32, 3.0);
  auto run = [&](std::vector<KernelArg> args) { tilejit::interp::run(*g, dim3(1), args); };
  SUBCASE("valid") {
    run({good_t, good_s, arr});
    CHECK(x.getf(0) == 3.0);
  }
  SUBCASE("too few") { expect_user_error([&] { run({good_t, good_s}); }, {"wrong number of kernel arguments", "2", "limit: 3"}); }
  SUBCASE("wrong kind") {
    expect_user_error([&] { run({good_s, good_s, arr}); }, {"argument 0 (arg0) has the wrong kind", "a scalar", "a tensor"});
  }
  SUBCASE("wrong dtype") {
    KernelArg t = good_t;
    t.tensor.dtype = DType::f64;
    expect_user_error([&] { run({t, good_s, arr}); }, {"argument 0 (arg0) has the wrong element type", "f64", "f32"});
  }
  SUBCASE("wrong rank") {
    expect_user_error([&] { run({tensor_arg(x.arg({16})), good_s, arr}); }, {"argument 0 (arg0) has the wrong rank", "1", "limit: 2"});
  }
  SUBCASE("negative size") {
    expect_user_error([&] { run({tensor_arg(x.arg({-1, 4})), good_s, arr}); }, {"negative size", "size[0] = -1"});
  }
  CHECK(x.getf(1) == 0.0);
}

TEST_CASE("make_view for pointer access: offsets relative to the view's base") {
  Buffer x(DType::i32, 48), y(DType::i32, 12);
  for (int64_t k = 0; k < 48; ++k) x.seti(k, k * 10);
  auto k = tilejit::kernel("view_ptr", [](dsl::Tensor<dsl::i32, 1> a, dsl::Tensor<dsl::i32, 1> b) {
    using namespace tilejit::dsl;
    // Elements 7, 10, 13, ... of a as a [4, 3] view with strides [9, 3].
    auto v = make_view(a, 7, {Index(4), Index(3)}, {Index(9), Index(3)});
    auto r = arange(0, 4).expand_dims<1>();
    auto c = arange(0, 3).expand_dims<0>();
    store(b, r * 3 + c, load(v, r * v.stride(0).to<i32>() + c * v.stride(1).to<i32>()));
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1())});
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j) CHECK(y.geti(i * 3 + j) == (7 + i * 9 + j * 3) * 10);
}

TEST_CASE("a graph that reads a tensor from a non-tensor node is refused before it touches memory") {
  Builder B;
  const NodeId s = B.scalar(DType::f32), y = B.tensor(DType::f32);
  const NodeId offs = B.iota(ir::Shape{4});
  B.store(y, offs, B.g.add(Op::Load, DType::f32, ir::Shape{4}, {s, offs}, {0}));
  Buffer out(DType::f32, 4);
  CHECK_THROWS_AS(tilejit::interp::run(B.g, dim3(1), std::vector<KernelArg>{scalar_arg(DType::f32, 1.0), tensor_arg(out.arg1())}),
                  tilejit::InternalError);
}
