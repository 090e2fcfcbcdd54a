// Interpreter tests of structured control flow: loops with carried values, if / if-else, nesting, a TMA GEMM.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "interp_test_util.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

TEST_CASE("for_range with runtime bounds and steps, including empty ranges") {
  auto k = tilejit::kernel("loop_store", [](dsl::Tensor<dsl::i32, 1> y, dsl::Scalar<dsl::i32> lo, dsl::Scalar<dsl::i32> hi,
                                            dsl::Scalar<dsl::i32> step) {
    using namespace tilejit::dsl;
    for_range(lo, hi, step, [&](Scalar<i32> i) { store(y, i + 8, i * i - 1); });
  });
  const auto g = k.trace(Config{});
  const int ranges[][3] = {{0, 10, 1}, {3, 17, 4}, {5, 5, 1}, {10, 3, 1}, {-4, 4, 3}, {-8, 20, 7}, {0, 1, 100}};
  for (const auto& r : ranges) {
    SUBCASE(("[" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ") step " + std::to_string(r[2])).c_str()) {
      Buffer y(DType::i32, 32);
      for (int64_t i = 0; i < 32; ++i) y.seti(i, 12345);
      tilejit::interp::run(*g, dim3(1),
                           std::vector<KernelArg>{tensor_arg(y.arg1()), scalar_arg(DType::i32, r[0]), scalar_arg(DType::i32, r[1]),
                                                  scalar_arg(DType::i32, r[2])});
      std::vector<int64_t> want(32, 12345);
      for (int i = r[0]; i < r[1]; i += r[2]) want[static_cast<size_t>(i + 8)] = i * i - 1;
      for (int64_t i = 0; i < 32; ++i) CHECK(y.geti(i) == want[static_cast<size_t>(i)]);
    }
  }
}

TEST_CASE("a non-positive runtime step is a UserError at the loop's line") {
  int line = 0;
  auto k = tilejit::kernel("bad_step", [&](dsl::Tensor<dsl::i32, 1> y, dsl::Scalar<dsl::i32> step) {
    using namespace tilejit::dsl;
    line = __LINE__ + 1;
    for_range(0, 4, step, [&](Scalar<i32> i) { store(y, i, i); });
  });
  const auto g = k.trace(Config{});  // records `line`
  Buffer y(DType::i32, 4);
  for (int s : {0, -2}) {
    SUBCASE(("step " + std::to_string(s)).c_str()) {
      expect_user_error(
          [&] { tilejit::interp::run(*g, dim3(2), std::vector<KernelArg>{tensor_arg(y.arg1()), scalar_arg(DType::i32, s)}); },
          {"test_control.cpp:" + std::to_string(line), "for_range: the step must be positive", "step " + std::to_string(s),
           "program (0, 0, 0)"});
    }
  }
}

TEST_CASE("loop-carried block: column sums accumulated in order") {
  const int64_t rows = 23;
  Buffer x(DType::f32, rows * 8), y(DType::f32, 8);
  auto r = rng(3);
  for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(static_cast<float>(std::ldexp(static_cast<double>(r() % 1000), -static_cast<int>(r() % 20)))));
  auto k = tilejit::kernel("colsum_loop", [](dsl::Tensor<dsl::f32, 1> a, dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> n) {
    using namespace tilejit::dsl;
    auto acc = for_range(0, n, 1, zeros<f32>({8}), [&](Scalar<i32> i, Value<f32, 1> s) { return s + load(a, i * 8 + arange(0, 8)); });
    store(out, arange(0, 8), acc);
  });
  for (int64_t n : {rows, int64_t{1}, int64_t{0}}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      tilejit::interp::run(*k.trace(Config{}), dim3(1),
                           std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), scalar_arg(DType::i32, static_cast<double>(n))});
      for (int64_t j = 0; j < 8; ++j) {
        float want = 0;
        for (int64_t i = 0; i < n; ++i) want += static_cast<float>(x.getf(i * 8 + j));
        CHECK(y.getf(j) == static_cast<double>(want));
      }
    }
  }
}

TEST_CASE("tuple-carried values yielded swapped (Fibonacci) and of mixed types") {
  auto k = tilejit::kernel("fib", [](dsl::Tensor<dsl::i64, 1> out, dsl::Tensor<dsl::f32, 1> out2, dsl::Scalar<dsl::i32> n) {
    using namespace tilejit::dsl;
    const Scalar<i64> a0 = 0, b0 = 1;
    auto [a, b] = for_range(0, n, 1, std::tuple{a0, b0}, [&](Scalar<i32>, Scalar<i64> x, Scalar<i64> y) { return std::tuple{y, x + y}; });
    const Scalar<i32> z = 0, one = 1;
    store(out, z, a);
    store(out, one, b);
    // A float block and an integer block carried together.
    auto [v, c] = for_range(0, n, 2, std::tuple{full<f32>({4}, 0.5f), zeros<i32>({4})},
                            [&](Scalar<i32> i, Value<f32, 1> fv, Value<i32, 1> iv) {
                              return std::tuple{fv * 2.0f, iv + arange(0, 4) * i};
                            });
    store(out2, arange(0, 4), v + c.to<f32>());
  });
  for (int n : {0, 1, 2, 10, 50, 91}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      Buffer out(DType::i64, 2), out2(DType::f32, 4);
      tilejit::interp::run(*k.trace(Config{}), dim3(1),
                           std::vector<KernelArg>{tensor_arg(out.arg1()), tensor_arg(out2.arg1()), scalar_arg(DType::i32, n)});
      int64_t fa = 0, fb = 1;
      for (int i = 0; i < n; ++i) {
        const int64_t t = fa + fb;
        fa = fb;
        fb = t;
      }
      CHECK(out.geti(0) == fa);
      CHECK(out.geti(1) == fb);
      float v = 0.5f;
      int64_t isum = 0;
      for (int i = 0; i < n; i += 2) {
        v *= 2.0f;
        isum += i;
      }
      for (int64_t j = 0; j < 4; ++j) CHECK(out2.getf(j) == static_cast<double>(v + static_cast<float>(j * isum)));
    }
  }
}

TEST_CASE("a loop that yields its own arguments swapped") {
  auto k = tilejit::kernel("swap", [](dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> n) {
    using namespace tilejit::dsl;
    auto [a, b, c] = for_range(0, n, 1, std::tuple{full<f32>({3}, 1.0f), full<f32>({3}, 2.0f), full<f32>({3}, 3.0f)},
                               [&](Scalar<i32>, Value<f32, 1> x, Value<f32, 1> y, Value<f32, 1> z) { return std::tuple{z, x, y}; });
    store(out, arange(0, 3), a);
    store(out, arange(3, 6), b);
    store(out, arange(6, 9), c);
  });
  for (int n : {0, 1, 2, 3, 7}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      Buffer out(DType::f32, 9);
      tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(out.arg1()), scalar_arg(DType::i32, n)});
      double v[3] = {1, 2, 3};
      for (int i = 0; i < n; ++i) {
        const double t[3] = {v[2], v[0], v[1]};
        std::copy(t, t + 3, v);
      }
      for (int64_t j = 0; j < 9; ++j) CHECK(out.getf(j) == v[j / 3]);
    }
  }
}

TEST_CASE("nested loops and values recomputed on every iteration") {
  // out[j] = sum over i < n of sum over k <= i of (k * 4 + j): the inner loop's bound depends on the outer index,
  // and the block arange(0, 4) + k * 4 is rebuilt inside the inner body each time.
  auto k = tilejit::kernel("nested", [](dsl::Tensor<dsl::i32, 1> out, dsl::Scalar<dsl::i32> n) {
    using namespace tilejit::dsl;
    auto total = for_range(0, n, 1, zeros<i32>({4}), [&](Scalar<i32> i, Value<i32, 1> acc) {
      auto inner = for_range(0, i + 1, 1, zeros<i32>({4}), [&](Scalar<i32> kk, Value<i32, 1> s) { return s + (arange(0, 4) + kk * 4); });
      return acc + inner;
    });
    store(out, arange(0, 4), total);
  });
  for (int n : {0, 1, 5, 12}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      Buffer out(DType::i32, 4);
      tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(out.arg1()), scalar_arg(DType::i32, n)});
      for (int64_t j = 0; j < 4; ++j) {
        int64_t want = 0;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t kk = 0; kk <= i; ++kk) want += kk * 4 + j;
        CHECK(out.geti(j) == want);
      }
    }
  }
}

TEST_CASE("if_then and if_else with values, tuples and nesting") {
  auto k = tilejit::kernel("branches", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::i32, 1> z) {
    using namespace tilejit::dsl;
    auto pid = program_id(0);
    auto offs = pid * 4 + arange(0, 4);
    auto v = load(x, offs);
    // A value chosen by a branch.
    auto w = if_else(pid % 3 == 0, [&] { return v * 2.0f; }, [&] { return v - 1.0f; });
    store(y, offs, w);
    // A tuple from a branch, with a nested branch inside the else side.
    auto [a, b] = if_else(
        pid < 2, [&] { return std::tuple{pid * 10, arange(0, 4)}; },
        [&] {
          auto inner = if_else(pid == 4, [&] { return pid * 100; }, [&] { return -pid; });
          return std::tuple{inner, arange(0, 4) * 2};
        });
    store(z, offs, b + a);
    // Side effects only in the branch taken.
    if_then(pid == 1, [&] { store(y, offs, zeros<f32>({4})); });
  });
  Buffer x(DType::f32, 24), y(DType::f32, 24), z(DType::i32, 24);
  for (int64_t i = 0; i < 24; ++i) x.setf(i, static_cast<double>(i) + 0.5);
  tilejit::interp::run(*k.trace(Config{}), dim3(6), std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), tensor_arg(z.arg1())});
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t i = p * 4 + j;
      const double w = p == 1 ? 0.0 : (p % 3 == 0 ? x.getf(i) * 2 : x.getf(i) - 1);
      CHECK(y.getf(i) == w);
      const int64_t a = p < 2 ? p * 10 : (p == 4 ? p * 100 : -p);
      const int64_t b = p < 2 ? j : 2 * j;
      CHECK(z.geti(i) == a + b);
    }
}

TEST_CASE("a branch inside a loop and a loop inside a branch") {
  auto k = tilejit::kernel("mixed", [](dsl::Tensor<dsl::i32, 1> out) {
    using namespace tilejit::dsl;
    auto pid = program_id(0);
    const Scalar<i32> zero = 0;
    // Count the multiples of 3 below 20 + pid, with an if_else inside the loop.
    auto count = for_range(0, pid + 20, 1, zero, [&](Scalar<i32> i, Scalar<i32> c) {
      return if_else(i % 3 == 0, [&] { return c + 1; }, [&] { return c; });
    });
    store(out, pid * 2, count);
    // A loop only on odd programs.
    if_then(pid % 2 == 1, [&] {
      for_range(0, 3, 1, [&](Scalar<i32> i) { atomic_add(out, pid * 2 + 1, i + 1); });
    });
  });
  Buffer out(DType::i32, 10);
  tilejit::interp::run(*k.trace(Config{}), dim3(5), std::vector<KernelArg>{tensor_arg(out.arg1())});
  for (int64_t p = 0; p < 5; ++p) {
    CHECK(out.geti(2 * p) == (20 + p + 2) / 3);
    CHECK(out.geti(2 * p + 1) == (p % 2 == 1 ? 6 : 0));
  }
}

namespace {
/// C = A @ B with bf16 inputs and an f32 accumulator: TMA tiles, a K loop, zero fill at every edge.
auto gemm_kernel() {
  return tilejit::kernel("gemm", [](dsl::Tensor<dsl::bf16, 2> A, dsl::Tensor<dsl::bf16, 2> B, dsl::Tensor<dsl::f32, 2> C,
                                    dsl::Meta<"BM"> BM, dsl::Meta<"BN"> BN, dsl::Meta<"BK"> BK) {
    using namespace tilejit::dsl;
    auto m = program_id(0) * BM;
    auto n = program_id(1) * BN;
    prefetch_descriptor(A, {BM, BK});
    auto acc = for_range(0, A.size(1), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> c) {
      auto a = descriptor_load(A, {m, kk}, {BM, BK});
      auto b = descriptor_load(B, {kk, n}, {BK, BN});
      return dot(a, b, c);
    });
    descriptor_store(C, {m, n}, acc);
  });
}
}  // namespace

TEST_CASE("a blocked GEMM with TMA tiles, a K loop and dot matches a sequential reference") {
  const int64_t shapes[][3] = {{50, 36, 70}, {16, 16, 16}, {7, 9, 5}, {33, 40, 129}};
  for (const auto& s : shapes) {
    const int64_t M = s[0], N = s[1], K = s[2];
    SUBCASE((std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K)).c_str()) {
      // A and B may have any row length (loads); C, being stored to, has rows of whole 16-byte units
      // (Nc >= N columns, the ones past N computed from B's zero fill) and 4 columns of padding.
      const int64_t lda = (K + 7) / 8 * 8, ldb = (N + 7) / 8 * 8, Nc = (N + 3) / 4 * 4, ldc = Nc + 4;
      Buffer a(DType::bf16, M * lda), b(DType::bf16, K * ldb), c(DType::f32, M * ldc);
      auto r = rng(static_cast<uint64_t>(M * 1000 + K));
      for (int64_t i = 0; i < a.size(); ++i) a.setf(i, ref_round(DType::bf16, static_cast<double>(static_cast<int64_t>(r() % 200) - 100) / 37.0));
      for (int64_t i = 0; i < b.size(); ++i) b.setf(i, ref_round(DType::bf16, static_cast<double>(static_cast<int64_t>(r() % 200) - 100) / 53.0));
      for (int64_t i = 0; i < c.size(); ++i) c.setf(i, -5.0);
      auto k = gemm_kernel();
      const int64_t BM = 16, BN = 16, BK = 16;
      KernelArg cfg;
      cfg.kind = KernelArg::Config;
      tilejit::interp::run(*k.trace(Config{{"BM", BM}, {"BN", BN}, {"BK", BK}}),
                           dim3(static_cast<uint32_t>(tilejit::cdiv(M, BM)), static_cast<uint32_t>(tilejit::cdiv(Nc, BN))),
                           std::vector<KernelArg>{tensor_arg(a.arg({M, K}, {lda, 1})), tensor_arg(b.arg({K, N}, {ldb, 1})),
                                                  tensor_arg(c.arg({M, Nc}, {ldc, 1})), cfg, cfg, cfg});
      int64_t bad = 0, far = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          if (j >= Nc) {
            bad += c.getf(i * ldc + j) != -5.0;  // row padding untouched
            continue;
          }
          if (j >= N) {
            bad += c.getf(i * ldc + j) != 0.0;  // columns past B's end: zero fill times A
            continue;
          }
          float want = 0;
          double exact = 0;
          for (int64_t kk = 0; kk < K; ++kk) {
            const double av = a.getf(i * lda + kk), bv = b.getf(kk * ldb + j);
            want += static_cast<float>(av * bv);
            exact += av * bv;
          }
          bad += c.getf(i * ldc + j) != static_cast<double>(want);
          far += std::fabs(c.getf(i * ldc + j) - exact) > 1e-4 * (1 + std::fabs(exact));
        }
      CHECK(bad == 0);
      CHECK(far == 0);
    }
  }
}
