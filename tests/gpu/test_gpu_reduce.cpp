// GPU suite: reductions over every axis of ranks 1-4, every numeric dtype and warp counts 1-16, odd and power-of-two
// extents, bit-exact against the interpreter (values chosen so that float sums are exact in any order); reductions
// with a combine function of the user's, bit-exact where the function is exact and within a tolerance where not.
#include <string>

#include "../../samples/sample_kernels.h"
#include "gpu_harness.h"

namespace gpu_test {
namespace {

using tilejit::Config;
using tilejit::dim3;

enum class Red { sum, max, min, argmax };
const char* name_of(Red r) { return r == Red::sum ? "sum" : r == Red::max ? "max" : r == Red::min ? "min" : "argmax"; }

template <int R>
std::array<int64_t, R> contiguous(const std::array<int64_t, R>& s) {
  std::array<int64_t, R> st{};
  int64_t m = 1;
  for (int d = R - 1; d >= 0; --d) {
    st[static_cast<size_t>(d)] = m;
    m *= s[static_cast<size_t>(d)];
  }
  return st;
}

template <int N>
int64_t numel(const std::array<int64_t, N>& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}

/// Reduces axis `axis` of a block loaded with pointer loads (so that any shape works) and stores the result.
template <class T, int R>
void reduce_case(Red red, const std::array<int64_t, R>& shape, int axis, int warps) {
  constexpr int RO = R > 1 ? R - 1 : 1;
  std::array<int64_t, RO> out_shape{};
  if constexpr (R > 1)
    for (int d = 0, k = 0; d < R; ++d)
      if (d != axis) out_shape[static_cast<size_t>(k++)] = shape[static_cast<size_t>(d)];
  if constexpr (R == 1) out_shape[0] = 1;
  auto k = tilejit::kernel("reduce", [shape, out_shape, red, axis](Tensor<T, R> x, Tensor<i32, 1> yi, Tensor<T, 1> yv) {
    int64_t dims[R];
    for (int d = 0; d < R; ++d) dims[d] = shape[static_cast<size_t>(d)];
    auto offs = arange(0, numel<R>(shape)).reshape(dims);
    auto v = load(x, offs);
    auto apply = [&](auto&& f) {
      if constexpr (R == 1) {
        f(program_id(0), 0);  // one program: offset 0
      } else {
        int64_t od[R - 1];
        for (int d = 0; d < R - 1; ++d) od[d] = out_shape[static_cast<size_t>(d)];
        f(arange(0, numel<RO>(out_shape)).reshape(od), 0);
      }
    };
    apply([&](auto out_offs, int) {
      if (red == Red::argmax) {
        store(yi, out_offs, argmax(v, axis));
      } else if (red == Red::sum) {
        store(yv, out_offs, sum(v, axis));
      } else if (red == Red::max) {
        store(yv, out_offs, max(v, axis));
      } else {
        store(yv, out_offs, min(v, axis));
      }
    });
  });
  Twin<T, R> x(shape, contiguous<R>(shape));
  const int64_t n_out = numel<RO>(out_shape);
  Twin<i32, 1> yi({n_out}, {1});
  Twin<T, 1> yv({n_out}, {1});
  // Small integers (and halves) keep every partial sum exact in bf16 / f32, so any summation order gives
  // the interpreter's result bit for bit; ties make argmax's first-index rule matter.
  x.randomize(static_cast<uint32_t>(numel<R>(shape) * 31 + axis * 7 + warps), -3, 3);
  if constexpr (is_float_v<T>) {
    auto* h = x.host_data();
    for (int64_t i = 0; i < numel<R>(shape); ++i)
      h[i] = typename tag_t<T>::host(std::round(static_cast<float>(h[i]) * 2) / 2);
  }
  yi.fill_byte(0);
  yv.fill_byte(0);
  run_both(k, dim3(1), Config{}.num_warps(warps), 0, x, yi, yv);
}

template <class T, int R>
void sweep(const char* type, const std::vector<std::array<int64_t, R>>& shapes, int& counter) {
  static const int kWarps[] = {1, 2, 4, 8, 16};
  for (const auto& shape : shapes)
    for (int axis = 0; axis < R; ++axis)
      for (Red red : {Red::sum, Red::max, Red::min, Red::argmax}) {
        if (!is_float_v<T> && red == Red::min) continue;
        const int warps = kWarps[counter++ % 5];
        std::string name = std::string(type) + " " + name_of(red) + " axis " + std::to_string(axis) + " of [";
        for (int d = 0; d < R; ++d) name += (d ? ", " : "") + std::to_string(shape[static_cast<size_t>(d)]);
        name += "], " + std::to_string(warps) + " warps";
        SUBCASE(name.c_str()) { reduce_case<T, R>(red, shape, axis, warps); }
      }
}

/// Reductions with a combine function over `axis`: an argmin of (value, index) with ties to the smaller
/// index, a (sum, max) pair and a logical or, bit-exact (small integers and halves keep every sum exact).
template <class T, int R>
void combine_case(const std::array<int64_t, R>& shape, int axis, int warps) {
  constexpr int RO = R > 1 ? R - 1 : 1;
  std::array<int64_t, RO> out_shape{};
  out_shape[0] = 1;
  if constexpr (R > 1)
    for (int d = 0, k = 0; d < R; ++d)
      if (d != axis) out_shape[static_cast<size_t>(k++)] = shape[static_cast<size_t>(d)];
  int64_t inner = 1;
  for (int d = axis + 1; d < R; ++d) inner *= shape[static_cast<size_t>(d)];
  const auto len = static_cast<int32_t>(shape[static_cast<size_t>(axis)]);
  auto k = tilejit::kernel("reduce_combine", [shape, out_shape, axis, inner, len](Tensor<T, R> x, Tensor<T, 1> ymin, Tensor<i32, 1> yi,
                                                                                   Tensor<T, 1> ysum, Tensor<T, 1> ymax, Tensor<i1, 1> yany) {
    int64_t dims[R];
    for (int d = 0; d < R; ++d) dims[d] = shape[static_cast<size_t>(d)];
    auto offs = arange(0, numel<R>(shape)).reshape(dims);
    auto v = load(x, offs);
    auto idx = offs / static_cast<int32_t>(inner) % len;
    auto [best, at] = reduce(std::tuple{v, idx}, axis, [](Scalar<T> a, Scalar<i32> ai, Scalar<T> b, Scalar<i32> bi) {
      auto take = b < a || (b == a && bi < ai);
      return std::tuple{where(take, b, a), where(take, bi, ai)};
    });
    auto [total, most] = reduce(std::tuple{v, v}, axis, [](Scalar<T> s, Scalar<T> m, Scalar<T> t, Scalar<T> n) {
      return std::tuple{s + t, maximum(m, n)};
    });
    auto any = reduce(v > 2, axis, [](Scalar<i1> a, Scalar<i1> b) { return a || b; });
    auto out = [&] {
      if constexpr (R == 1) {
        return program_id(0);  // one program: offset 0
      } else {
        int64_t od[R - 1];
        for (int d = 0; d < R - 1; ++d) od[d] = out_shape[static_cast<size_t>(d)];
        return arange(0, numel<RO>(out_shape)).reshape(od);
      }
    }();
    store(ymin, out, best);
    store(yi, out, at);
    store(ysum, out, total);
    store(ymax, out, most);
    store(yany, out, any);
  });
  Twin<T, R> x(shape, contiguous<R>(shape));
  const int64_t n_out = numel<RO>(out_shape);
  Twin<T, 1> ymin({n_out}, {1}), ysum({n_out}, {1}), ymax({n_out}, {1});
  Twin<i32, 1> yi({n_out}, {1});
  Twin<i1, 1> yany({n_out}, {1});
  x.randomize(static_cast<uint32_t>(numel<R>(shape) * 13 + axis * 5 + warps), -3, 3);
  if constexpr (is_float_v<T>) {
    auto* h = x.host_data();
    for (int64_t i = 0; i < numel<R>(shape); ++i) h[i] = typename tag_t<T>::host(std::round(static_cast<float>(h[i]) * 2) / 2);
  }
  for (auto* t : {&ymin, &ysum, &ymax}) t->fill_byte(0);
  yi.fill_byte(0);
  yany.fill_byte(0);
  run_both(k, dim3(1), Config{}.num_warps(warps), 0, x, ymin, yi, ysum, ymax, yany);
}

template <class T, int R>
void combine_sweep(const char* type, const std::vector<std::array<int64_t, R>>& shapes, int& counter) {
  static const int kWarps[] = {1, 2, 4, 8, 16};
  for (const auto& shape : shapes)
    for (int axis = 0; axis < R; ++axis) {
      const int warps = kWarps[counter++ % 5];
      std::string name = std::string(type) + " axis " + std::to_string(axis) + " of [";
      for (int d = 0; d < R; ++d) name += (d ? ", " : "") + std::to_string(shape[static_cast<size_t>(d)]);
      name += "], " + std::to_string(warps) + " warps";
      SUBCASE(name.c_str()) { combine_case<T, R>(shape, axis, warps); }
    }
}

}  // namespace

TEST_CASE("gpu: reductions with a combine function (argmin with ties, sum and max together, any) over every axis") {
  int counter = 0;
  combine_sweep<f32, 1>("f32", {{4096}, {37}}, counter);
  combine_sweep<f32, 2>("f32", {{8, 64}, {5, 33}, {1, 300}, {64, 3}}, counter);
  combine_sweep<f32, 3>("f32", {{4, 8, 16}, {3, 5, 7}}, counter);
  combine_sweep<i32, 2>("i32", {{16, 128}, {7, 9}}, counter);
  combine_sweep<bf16, 2>("bf16", {{32, 64}, {3, 40}}, counter);
  combine_sweep<i64, 2>("i64", {{5, 40}}, counter);
}

TEST_CASE("gpu: the online softmax's (max, sum) and Welford's (count, mean, M2) as combine reductions") {
  SUBCASE("(max, sum of exp(x - max)) pairs of rows") {
    auto k = tilejit::kernel("online_pairs", [](Tensor<f32, 2> x, Tensor<f32, 1> mo, Tensor<f32, 1> so) {
      auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 256});
      auto [m, s] = reduce(std::tuple{t, full<f32>({16, 256}, 1.0f)}, 1, [](Scalar<f32> ma, Scalar<f32> sa, Scalar<f32> mb, Scalar<f32> sb) {
        auto mm = maximum(ma, mb);
        return std::tuple{mm, sa * exp(ma - mm) + sb * exp(mb - mm)};
      });
      store(mo, program_id(0) * 16 + arange(0, 16), m);
      store(so, program_id(0) * 16 + arange(0, 16), s);
    });
    Twin<f32, 2> x({64, 256});
    Twin<f32, 1> m({64}, {1}), s({64}, {1});
    x.randomize(21, -8, 8);
    m.fill_byte(0);
    s.fill_byte(0);
    for (int w : {4, 8}) run_both(k, dim3(4), Config{}.num_warps(w), 1e-5, x, m, s);
  }
  SUBCASE("Welford's mean and variance of columns") {
    auto k = tilejit::kernel("welford_cols", [](Tensor<f32, 2> x, Tensor<f32, 1> mean, Tensor<f32, 1> var) {
      auto t = descriptor_load(x, {0, program_id(0) * 32}, {96, 32});
      auto [n, mu, m2] = reduce(std::tuple{full<f32>({96, 32}, 1.0f), t, zeros<f32>({96, 32})}, 0,
                                [](Scalar<f32> na, Scalar<f32> ma, Scalar<f32> qa, Scalar<f32> nb, Scalar<f32> mb, Scalar<f32> qb) {
                                  auto nn = na + nb;
                                  auto d = mb - ma;
                                  return std::tuple{nn, ma + d * (nb / nn), qa + qb + d * d * (na * nb / nn)};
                                });
      store(mean, program_id(0) * 32 + arange(0, 32), mu);
      store(var, program_id(0) * 32 + arange(0, 32), m2 / n);
    });
    Twin<f32, 2> x({96, 128});
    Twin<f32, 1> mean({128}, {1}), var({128}, {1});
    x.randomize(22, -4, 4);
    mean.fill_byte(0);
    var.fill_byte(0);
    for (int w : {2, 4, 8}) run_both(k, dim3(4), Config{}.num_warps(w), 1e-4, x, mean, var);
  }
}

TEST_CASE("gpu: reductions over every axis of ranks 1-4") {
  int counter = 0;
  sweep<f32, 1>("f32", {{4096}, {37}, {1000}}, counter);
  sweep<f32, 2>("f32", {{8, 64}, {5, 33}, {1, 300}, {64, 3}}, counter);
  sweep<f32, 3>("f32", {{4, 8, 16}, {3, 5, 7}}, counter);
  sweep<f32, 4>("f32", {{2, 4, 4, 8}, {3, 2, 5, 3}}, counter);
  sweep<i32, 2>("i32", {{16, 128}, {7, 9}}, counter);
  sweep<i32, 3>("i32", {{2, 3, 64}}, counter);
  sweep<bf16, 2>("bf16", {{32, 64}, {3, 40}}, counter);
  sweep<f16, 1>("f16", {{512}}, counter);
  sweep<i8, 2>("i8", {{4, 64}}, counter);
  sweep<u8, 2>("u8", {{3, 48}}, counter);
  sweep<i64, 2>("i64", {{5, 40}}, counter);
  sweep<f64, 2>("f64", {{6, 20}}, counter);
}

TEST_CASE("gpu: reductions of reductions, broadcasts of their results, and loop-carried row statistics") {
  SUBCASE("sum of row maxima, and x - rowmax broadcast back") {
    auto k = tilejit::kernel("red2", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Tensor<f32, 1> total) {
      auto t = descriptor_load(x, {0, 0}, {32, 64});
      auto m = max(t, 1);
      store(total, program_id(0), sum(m, 0));
      descriptor_store(y, {0, 0}, t - m.expand_dims<1>() + min(t, 0).expand_dims<0>());
    });
    Twin<f32, 2> x({32, 64}), y({32, 64});
    Twin<f32, 1> total({1}, {1});
    x.randomize(3);
    for (int i = 0; i < 32 * 64; ++i) x.host_data()[i] = std::round(x.host_data()[i] * 4) / 4;
    y.fill_byte(0);
    total.fill_byte(0);
    for (int w : {1, 4, 8}) run_both(k, dim3(1), Config{}.num_warps(w), 0, x, y, total);
  }
  SUBCASE("online softmax statistics carried through a loop over column blocks") {
    auto k = tilejit::kernel("online", [](Tensor<f32, 2> x, Tensor<f32, 1> mo, Tensor<f32, 1> lo) {
      auto init_m = full<f32>({16}, -1e30f);
      auto init_l = zeros<f32>({16});
      auto [m, l] = for_range(0, 4, 1, std::tuple{init_m, init_l}, [&](Scalar<i32> j, Value<f32, 1> m, Value<f32, 1> l) {
        auto t = descriptor_load(x, {0, j * 32}, {16, 32});
        auto mn = maximum(m, max(t, 1));
        auto p = exp(t - mn.expand_dims<1>());
        return std::tuple{mn, l * exp(m - mn) + sum(p, 1)};
      });
      store(mo, arange(0, 16), m);
      store(lo, arange(0, 16), l);
    });
    Twin<f32, 2> x({16, 128});
    Twin<f32, 1> m({16}, {1}), l({16}, {1});
    x.randomize(5);
    m.fill_byte(0);
    l.fill_byte(0);
    run_both(k, dim3(1), Config{}.num_warps(4), 1e-5, x, m, l);
  }
}

TEST_CASE("gpu: TMA boxes over 256 split into several operations") {
  SUBCASE("1 x 4096 rows: sample 07's TMA softmax") {
    auto k = tilejit::samples::softmax_tma_kernel();
    Twin<f32, 2> x({5, 4096}), y({5, 4096});
    x.randomize(21);
    y.fill_byte(0);
    run_both(k, dim3(5), Config{{"BM", 1}, {"BN", 4096}}.num_warps(8), 1e-6, x, y);
  }
  SUBCASE("512 x 32 tiles (split along the outer dimension), zero fill, partial last tile") {
    auto k = tilejit::kernel("split_tall", [](Tensor<bf16, 2> x, Tensor<bf16, 2> y) {
      auto t = descriptor_load(x, {program_id(0) * 512, 0}, {512, 32});
      descriptor_store(y, {program_id(0) * 512, 0}, (t.to<f32>() * 2.0f + 1.0f).to<bf16>());
    });
    Twin<bf16, 2> x({1000, 32}), y({1000, 32});
    x.randomize(22);
    y.fill_byte(0);
    run_both(k, dim3(2), Config{}.num_warps(4), 0, x, y);
  }
  SUBCASE("a 1-D box of 2048 bf16 copied straight from the load's buffer") {
    auto k = tilejit::kernel("split_copy", [](Tensor<bf16, 1> x, Tensor<bf16, 1> y) {
      descriptor_store(y, {program_id(0) * 2048}, descriptor_load(x, {program_id(0) * 2048}, {2048}));
    });
    Twin<bf16, 1> x({5000}), y({5000});
    x.randomize(23);
    y.fill_byte(0);
    run_both(k, dim3(3), Config{}.num_warps(1), 0, x, y);
  }
}

TEST_CASE("gpu: pointer accesses specialised on alignment and divisibility by 16, and the variants that are not") {
  // Softmax rows with masked loads: 16-byte vectors when the launch's tensors allow it, scalar accesses
  // in the variant a launch with a misaligned base, an odd row length or an odd row stride compiles.
  auto k = tilejit::samples::softmax_kernel();
  struct Case { const char* what; int64_t rows, cols, stride, offset; };
  for (const Case c : {Case{"aligned", 24, 512, 512, 0}, Case{"base off by one element", 24, 512, 512, 1},
                       Case{"odd row length", 24, 500, 512, 0}, Case{"odd row stride", 24, 512, 520 + 1, 0},
                       Case{"aligned again", 24, 512, 512, 0}}) {
    SUBCASE(c.what) {
      const int64_t total = c.rows * c.stride + c.offset + 16;
      Twin<f32, 1> xb({total}, {1}), yb({total}, {1});
      xb.randomize(11, -6, 6);
      yb.fill_byte(0);
      auto view = [&](void* base) {
        return tilejit::TensorView<f32, 2>(static_cast<float*>(base) + c.offset, {c.rows, c.cols}, {c.stride, 1});
      };
      const Config cfg = Config{{"BN", 512}}.num_warps(4);
      xb.upload();
      yb.upload();
      ++g_cases;
      k.interpret(dim3(static_cast<uint32_t>(c.rows)), cfg, view(xb.host_data()), view(yb.host_data()));
      if (!on_gpu()) {
        CHECK(tilejit::runtime::compile_only(k.base(), cfg).find("0 bytes spill stores") != std::string::npos);
        continue;
      }
      k.launch(nullptr, dim3(static_cast<uint32_t>(c.rows)), cfg, view(xb.device_data()), view(yb.device_data()));
      tilejit::synchronize(nullptr);
      std::string first;
      const size_t bad = yb.compare(1e-6, &first);
      INFO(first);
      CHECK(bad == 0);
      g_matched += bad == 0;
    }
  }
}

}  // namespace gpu_test
