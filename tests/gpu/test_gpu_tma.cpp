// GPU vs interpreter: TMA copies over dtypes, ranks 1-5, edges, negative coordinates, element strides, fills.
#include "gpu_harness.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;
using tilejit::cdiv;

namespace {

// y[i][j] = x[i - s][j - si] tile by tile: every load starts before x (negative
// coordinates, zero fill) and the last tiles hang over the far edges (clipping).
// TMA stores need non-negative coordinates and loads need innermost coordinates
// that are multiples of 16 bytes, so only the loads are shifted, by 16 bytes innermost.
template <class T>
void copy_2d(int64_t M, int64_t N, int64_t BM, int64_t BN, int shift) {
  auto k = tilejit::kernel("copy2d", [](Tensor<T, 2> x, Tensor<T, 2> y, Scalar<i32> s, Scalar<i32> si, Meta<"BM"> bm, Meta<"BN"> bn) {
    auto m = program_id(0) * bm;
    auto n = program_id(1) * bn;
    descriptor_store(y, {m, n}, descriptor_load(x, {m - s, n - si}, {bm, bn}));
  });
  Twin<T, 2> x({M, N}), y({M, N});
  x.randomize(static_cast<uint32_t>(M * 131 + N));
  y.fill_byte(0x5a);
  int32_t s = shift, si = shift ? static_cast<int32_t>(16 / tilejit::ir::size_of(dtype_v<T>)) : 0;
  run_both(k, dim3(static_cast<uint32_t>(cdiv(M, BM)), static_cast<uint32_t>(cdiv(N, BN))), Config{{"BM", BM}, {"BN", BN}}, 0, x, y,
           s, si);
}

// z = x * a + b elementwise over TMA tiles.
template <class T>
void axpb_2d(int64_t M, int64_t N, int64_t BM, int64_t BN) {
  auto k = tilejit::kernel("axpb", [](Tensor<T, 2> x, Tensor<T, 2> z, Scalar<float> a, Scalar<float> b, Meta<"BM"> bm, Meta<"BN"> bn) {
    auto m = program_id(0) * bm;
    auto n = program_id(1) * bn;
    auto t = descriptor_load(x, {m, n}, {bm, bn}).template to<f32>();
    descriptor_store(z, {m, n}, (t * a + b).template to<T>());
  });
  Twin<T, 2> x({M, N}), z({M, N});
  x.randomize(7);
  z.fill_byte(0);
  float a = 1.5f, b = -0.25f;
  run_both(k, dim3(static_cast<uint32_t>(cdiv(M, BM)), static_cast<uint32_t>(cdiv(N, BN))), Config{{"BM", BM}, {"BN", BN}}, 0, x, z,
           a, b);
}

}  // namespace

TEST_CASE("gpu: 2-D TMA copy sweep (dtypes x shapes x boxes with tiles over every edge)") {
  // Innermost sizes span multiples of 16 bytes for every dtype (a TMA store writes whole 16-byte units).
  const int64_t shapes[][2] = {{1, 16}, {7, 48}, {64, 64}, {100, 272}, {129, 1008}, {300, 32}};
  for (auto [M, N] : shapes) {
    for (int shift : {0, 3}) {
      SUBCASE(("f32 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<f32>(M, N, 32, 32, shift);
      }
      SUBCASE(("bf16 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<bf16>(M, N, 16, 64, shift);
      }
      SUBCASE(("f16 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<f16>(M, N, 64, 8, shift);
      }
      SUBCASE(("u8 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<u8>(M, N, 8, 32, shift);
      }
      SUBCASE(("i32 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<i32>(M, N, 8, 4, shift);
      }
      SUBCASE(("f64 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<f64>(M, N, 16, 2, shift);
      }
      SUBCASE(("i8 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<i8>(M, N, 4, 16, shift);
      }
      SUBCASE(("f8e4m3 " + std::to_string(M) + "x" + std::to_string(N) + " shift " + std::to_string(shift)).c_str()) {
        copy_2d<f8e4m3>(M, N, 16, 16, shift);
      }
    }
  }
}

TEST_CASE("gpu: elementwise a*x+b over TMA tiles") {
  const int64_t shapes[][2] = {{64, 64}, {65, 136}, {3, 528}};
  for (auto [M, N] : shapes) {
    const std::string s = std::to_string(M) + "x" + std::to_string(N);
    SUBCASE(("f32 " + s).c_str()) { axpb_2d<f32>(M, N, 64, 64); }
    SUBCASE(("bf16 " + s).c_str()) { axpb_2d<bf16>(M, N, 32, 128); }
    SUBCASE(("f16 " + s).c_str()) { axpb_2d<f16>(M, N, 16, 64); }
  }
}

namespace {
template <int R>
void copy_rank(std::array<int64_t, R> sizes, std::array<int64_t, R> box) {
  auto k = tilejit::kernel("copy_rank", [box](Tensor<f32, R> x, Tensor<f32, R> y) {
    // Program p stores the box at p * box[0] loaded from one row earlier (16 bytes earlier for
    // rank 1), so every load reads before the tensor at program 0.
    auto c0 = program_id(0) * static_cast<int32_t>(box[0]);
    auto l0 = c0 - (R == 1 ? 4 : 1);
    if constexpr (R == 1) {
      descriptor_store(y, {c0}, descriptor_load(x, {l0}, {box[0]}));
    } else if constexpr (R == 2) {
      descriptor_store(y, {c0, 0}, descriptor_load(x, {l0, 0}, {box[0], box[1]}));
    } else if constexpr (R == 3) {
      descriptor_store(y, {c0, 0, 0}, descriptor_load(x, {l0, 0, 0}, {box[0], box[1], box[2]}));
    } else if constexpr (R == 4) {
      descriptor_store(y, {c0, 0, 0, 0}, descriptor_load(x, {l0, 0, 0, 0}, {box[0], box[1], box[2], box[3]}));
    } else {
      descriptor_store(y, {c0, 0, 0, 0, 0}, descriptor_load(x, {l0, 0, 0, 0, 0}, {box[0], box[1], box[2], box[3], box[4]}));
    }
  });
  Twin<f32, R> x(sizes), y(sizes);
  x.randomize(11);
  y.fill_byte(0x11);
  run_both(k, dim3(static_cast<uint32_t>(cdiv(sizes[0], box[0]))), Config{}, 0, x, y);
}
}  // namespace

TEST_CASE("gpu: TMA ranks 1-5 with odd sizes") {
  SUBCASE("rank 1, 1000") { copy_rank<1>({1000}, {128}); }
  SUBCASE("rank 1, 12") { copy_rank<1>({12}, {8}); }
  SUBCASE("rank 1, 260") { copy_rank<1>({260}, {256}); }
  SUBCASE("rank 2, 37x12") { copy_rank<2>({37, 12}, {8, 16}); }
  SUBCASE("rank 2, 5x200") { copy_rank<2>({5, 200}, {2, 200}); }
  SUBCASE("rank 3, 9x5x12") { copy_rank<3>({9, 5, 12}, {4, 5, 12}); }
  SUBCASE("rank 3, 2x3x64") { copy_rank<3>({2, 3, 64}, {1, 3, 64}); }
  SUBCASE("rank 4, 5x3x7x8") { copy_rank<4>({5, 3, 7, 8}, {2, 3, 7, 12}); }
  SUBCASE("rank 4, 3x2x2x32") { copy_rank<4>({3, 2, 2, 32}, {3, 2, 2, 32}); }
  SUBCASE("rank 5, 3x2x3x5x8") { copy_rank<5>({3, 2, 3, 5, 8}, {2, 2, 3, 5, 8}); }
  SUBCASE("rank 5, 7x1x2x3x20") { copy_rank<5>({7, 1, 2, 3, 20}, {3, 1, 2, 3, 20}); }
}

TEST_CASE("gpu: element strides in outer dimensions") {
  for (int64_t e : {1, 2, 3, 4, 5, 6, 7, 8}) {
    SUBCASE(("estride " + std::to_string(e)).c_str()) {
      auto k = tilejit::kernel("strided", [e](Tensor<f32, 2> x, Tensor<f32, 2> y) {
        auto m = program_id(0) * static_cast<int32_t>(8 * e);
        auto t = descriptor_load(x, {m, 0}, {8 * e, 32}, {e, 1});  // 8 rows taken every e rows
        descriptor_store(y, {program_id(0) * 8, 0}, t);
      });
      const int64_t M = 8 * e * 5 - 3;
      Twin<f32, 2> x({M, 28}), y({cdiv(M, 8 * e) * 8, 28});
      x.randomize(static_cast<uint32_t>(e));
      y.fill_byte(0);
      run_both(k, dim3(static_cast<uint32_t>(cdiv(M, 8 * e))), Config{}, 0, x, y);
    }
  }
  for (int64_t e : {2, 3, 4}) {
    SUBCASE(("3-D estride " + std::to_string(e)).c_str()) {
      auto k = tilejit::kernel("strided3", [e](Tensor<bf16, 3> x, Tensor<bf16, 3> y) {
        auto t = descriptor_load(x, {program_id(0) * static_cast<int32_t>(2 * e), -1, 0}, {2 * e, 3 * e, 16}, {e, e, 1});
        descriptor_store(y, {program_id(0) * 2, 0, 0}, t);
      });
      Twin<bf16, 3> x({4 * e + 1, 3 * e, 16}), y({6, 3, 16});
      x.randomize(3);
      y.fill_byte(0);
      run_both(k, dim3(3), Config{}, 0, x, y);
    }
  }
}

TEST_CASE("gpu: NaN fill versus zero fill") {
  auto k = tilejit::kernel("nanfill", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Tensor<f32, 2> z) {
    auto a = descriptor_load(x, {-2, -4}, {8, 16}, {}, Fill::nan);
    auto b = descriptor_load(x, {-2, -4}, {8, 16});
    descriptor_store(y, {0, 0}, a);
    descriptor_store(z, {0, 0}, b);
  });
  Twin<f32, 2> x({5, 9}), y({8, 16}), z({8, 16});
  x.randomize(1);
  y.fill_byte(0);
  z.fill_byte(0);
  run_both(k, dim3(1), Config{}, 0, x, y, z);
}

TEST_CASE("gpu: NaN converts to integer 0 (f32 and f64 to i8, u8, i32, i64), as the interpreter does") {
  // The conversion instructions give the most negative integer for NaN; the IR says 0.
  auto k = tilejit::kernel("nan_to_int", [](Tensor<f32, 2> x, Tensor<f64, 2> xd, Tensor<i32, 2> a, Tensor<i64, 2> b,
                                            Tensor<i8, 2> c, Tensor<u8, 2> d, Tensor<i32, 2> e, Tensor<i64, 2> f) {
    auto t = descriptor_load(x, {-2, -4}, {8, 16}, {}, Fill::nan);
    auto td = descriptor_load(xd, {-2, -4}, {8, 16}, {}, Fill::nan);
    descriptor_store(a, {0, 0}, t.to<i32>());
    descriptor_store(b, {0, 0}, t.to<i64>());
    descriptor_store(c, {0, 0}, t.to<i8>());
    descriptor_store(d, {0, 0}, td.to<u8>());
    descriptor_store(e, {0, 0}, td.to<i32>());
    descriptor_store(f, {0, 0}, td.to<i64>());
  });
  Twin<f32, 2> x({5, 9});
  Twin<f64, 2> xd({5, 9});
  Twin<i32, 2> a({8, 16}), e({8, 16});
  Twin<i64, 2> b({8, 16}), f({8, 16});
  Twin<i8, 2> c({8, 16});
  Twin<u8, 2> d({8, 16});
  x.randomize(1, -300, 300);
  xd.randomize(2, -300, 300);
  fill_bytes(7, a, b, c, d, e, f);
  run_both(k, dim3(1), Config{}, 0, x, xd, a, b, c, d, e, f);
}

TEST_CASE("gpu: TMA reduce-add store accumulates across programs") {
  auto k = tilejit::kernel("reduce_add", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    descriptor_store(y, {0, 0}, descriptor_load(x, {program_id(0) * 16, 0}, {16, 32}), StoreReduce::add);
  });
  Twin<f32, 2> x({64, 32}), y({16, 32});
  x.randomize(5, -2, 2);
  for (size_t i = 0; i < 16 * 32; ++i) y.host_data()[i] = 0.0f;
  // Values are small integers so that the order of the additions does not matter.
  for (size_t i = 0; i < 64 * 32; ++i) x.host_data()[i] = std::floor(x.host_data()[i]);
  run_both(k, dim3(4), Config{}, 0, x, y);
}

namespace {
// y = min or max(y, x) through a TMA reduction, NaN on either side: x holds NaN in every fifth element and
// its box hangs 32 columns past the tensor (NaN fill); y holds NaN in every third element.
template <class T, StoreReduce Red>
void nan_reduce_case() {
  auto k = tilejit::kernel("nan_reduce", [](Tensor<T, 2> x, Tensor<T, 2> y) {
    descriptor_store(y, {0, 0}, descriptor_load(x, {0, 32}, {8, 64}, {}, Fill::nan), Red);
  });
  Twin<T, 2> x({8, 64}), y({8, 64});
  x.randomize(11);
  y.randomize(12);
  using Host = std::remove_pointer_t<decltype(x.host_data())>;
  const Host nan = Host(std::numeric_limits<float>::quiet_NaN());
  for (size_t i = 0; i < 8 * 64; i += 5) x.host_data()[i] = nan;
  for (size_t i = 0; i < 8 * 64; i += 3) y.host_data()[i] = nan;
  run_both(k, dim3(1), Config{}, 0, x, y);
  // The interpreter's side, checked on its own: a number survives next to a NaN, two NaNs stay NaN.
  const auto v = [&](size_t i) { return static_cast<double>(y.host_data()[i]); };
  CHECK(!std::isnan(v(6)));   // y NaN, x (element 38) a number
  CHECK(!std::isnan(v(8)));   // y a number, x (element 40) NaN
  CHECK(!std::isnan(v(40)));  // y a number, x's column 72 is past the tensor: NaN fill
  CHECK(std::isnan(v(3)));    // both NaN (x element 35)
  CHECK(std::isnan(v(45)));   // both NaN (fill)
}
}  // namespace

TEST_CASE("gpu: TMA float min and max reductions ignore a NaN operand (minNum / maxNum)") {
  // sm_90's TMA min / max take f16 and bf16 among the floats (f32 is a UserError).
  SUBCASE("bf16 min") { nan_reduce_case<bf16, StoreReduce::min>(); }
  SUBCASE("bf16 max") { nan_reduce_case<bf16, StoreReduce::max>(); }
  SUBCASE("f16 min") { nan_reduce_case<f16, StoreReduce::min>(); }
  SUBCASE("f16 max") { nan_reduce_case<f16, StoreReduce::max>(); }
}
