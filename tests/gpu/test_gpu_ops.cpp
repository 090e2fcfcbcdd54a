// GPU vs interpreter: math ops, pointer loads/stores, jagged device-built descriptors, descriptor arrays, control flow.
#include "gpu_harness.h"

#include <algorithm>

#include "../../samples/sample_kernels.h"

using namespace gpu_test;
using tilejit::Config;
using tilejit::dim3;
using tilejit::cdiv;

namespace {
constexpr int64_t kM = 37, kN = 80;

// One unary float op on a TMA tile, per dtype.
template <class T, class F>
void unary_case(const char* name, F f, double tol) {
  auto k = tilejit::kernel(name, [f](Tensor<T, 2> x, Tensor<T, 2> y) {
    // The box is wider than the tensor (96 > 80 columns): TMA fills the extra columns and clips them on store.
    auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 96});
    descriptor_store(y, {program_id(0) * 16, 0}, f(t));
  });
  Twin<T, 2> x({kM, kN}), y({kM, kN});
  x.randomize(21, 0.125, 3);
  y.fill_byte(0);
  run_both(k, dim3(static_cast<uint32_t>(cdiv(kM, 16))), Config{}, tol, x, y);
}

template <class T, class F>
void binary_case(const char* name, F f, double tol, const Config& config = Config{}) {
  auto k = tilejit::kernel(name, [f](Tensor<T, 2> x, Tensor<T, 2> y, Tensor<T, 2> z) {
    auto a = descriptor_load(x, {program_id(0) * 16, 0}, {16, 96});
    auto b = descriptor_load(y, {program_id(0) * 16, 0}, {16, 96});
    descriptor_store(z, {program_id(0) * 16, 0}, f(a, b));
  });
  Twin<T, 2> x({kM, kN}), y({kM, kN}), z({kM, kN});
  x.randomize(22, -5, 5);
  y.randomize(23, 1, 5);
  z.fill_byte(0);
  run_both(k, dim3(static_cast<uint32_t>(cdiv(kM, 16))), config, tol, x, y, z);
}
}  // namespace

#define UNARY(T, fn, tol) \
  SUBCASE(#fn " " #T) { unary_case<T>(#fn, [](auto t) { return fn(t); }, tol); }

TEST_CASE("gpu: unary math") {
  UNARY(f32, exp, 2e-6) UNARY(f32, exp2, 2e-6) UNARY(f32, log, 2e-6) UNARY(f32, log2, 2e-6) UNARY(f32, sqrt, 0)
  UNARY(f32, rsqrt, 2e-6) UNARY(f32, sin, 2e-6) UNARY(f32, cos, 2e-6) UNARY(f32, tanh, 2e-6) UNARY(f32, sigmoid, 2e-6)
  UNARY(f32, erf, 2e-6) UNARY(f32, abs, 0)
  // exp2 below f64 flushes results under 2^-126 to zero on both sides (ir.h); scaled back up by 2^126, a
  // subnormal on one side only would differ by at least 2^-14.
  SUBCASE("exp2 f32 flush") { unary_case<f32>("exp2ftz", [](auto t) { return exp2(t * -5.0f - 125.0f) * 0x1p126f; }, 2e-6); }
  UNARY(f64, exp, 1e-14) UNARY(f64, sqrt, 0) UNARY(f64, log, 1e-14) UNARY(f64, sin, 1e-14)
  UNARY(bf16, exp, 1e-2) UNARY(bf16, sqrt, 1e-2) UNARY(bf16, abs, 0) UNARY(bf16, tanh, 1e-2)
  UNARY(f16, exp, 1e-3) UNARY(f16, sqrt, 1e-3) UNARY(f16, sigmoid, 1e-3) UNARY(f16, log2, 1e-3)
  // Accuracy::fast (the hardware's tanh): within 2^-10.987 of tanh relative, the sigmoid within 2^-11.9 absolute; the
  // interpreter computes both exactly. Arguments over [-11, 12] (t is in [0.125, 3]), past where tanh saturates.
  SUBCASE("tanh fast f32") { unary_case<f32>("tanhfast", [](auto t) { return tanh(t * 8.0f - 12.0f, Accuracy::fast); }, 5e-4); }
  SUBCASE("sigmoid fast f32") { unary_case<f32>("sigfast", [](auto t) { return sigmoid(t * 8.0f - 12.0f, Accuracy::fast); }, 2.7e-4); }
  SUBCASE("silu fast bf16") {
    unary_case<bf16>("silufast", [](auto t) { auto x = t * 4.0f - 6.0f; return x * sigmoid(x, Accuracy::fast); }, 1e-2);
  }
  SUBCASE("neg i32") { unary_case<i32>("neg", [](auto t) { return -t; }, 0); }
  SUBCASE("abs i32") { unary_case<i32>("absi", [](auto t) { return abs(t); }, 0); }
  SUBCASE("cast f32->i32->f32") { unary_case<f32>("casts", [](auto t) { return (t * 3.7f).template to<i32>().template to<f32>(); }, 0); }
  SUBCASE("cast f32->bf16->f32") { unary_case<f32>("castbf", [](auto t) { return t.template to<bf16>().template to<f32>(); }, 0); }
  SUBCASE("cast f32->f8e4m3->f32") { unary_case<f32>("castf8", [](auto t) { return t.template to<f8e4m3>().template to<f32>(); }, 0); }
  SUBCASE("cast f32->f8e5m2->f32") { unary_case<f32>("castf8b", [](auto t) { return t.template to<f8e5m2>().template to<f32>(); }, 0); }
  SUBCASE("cast f32->f16->f32") { unary_case<f32>("castf16", [](auto t) { return t.template to<f16>().template to<f32>(); }, 0); }
}

#define BINARY(T, name, expr, tol) \
  SUBCASE(name " " #T) { binary_case<T>(name, [](auto a, auto b) { return expr; }, tol); }

TEST_CASE("gpu: binary ops and comparisons") {
  BINARY(f32, "add", a + b, 0) BINARY(f32, "sub", a - b, 0) BINARY(f32, "mul", a * b, 0) BINARY(f32, "div", a / b, 0)
  BINARY(f32, "min", minimum(a, b), 0) BINARY(f32, "max", maximum(a, b), 0)
  BINARY(f32, "where", where(a < b, a, b * 2.0f), 0) BINARY(f32, "lt", where(a <= b && a > 0.5f, a, 0.0f), 0)
  BINARY(bf16, "add", a + b, 0) BINARY(bf16, "mul", a * b, 0) BINARY(bf16, "div", a / b, 0) BINARY(bf16, "max", maximum(a, b), 0)
  BINARY(f16, "add", a + b, 0) BINARY(f16, "mul", a * b, 0) BINARY(f16, "sub", a - b, 0)
  BINARY(f64, "add", a + b, 0) BINARY(f64, "div", a / b, 0)
  BINARY(i32, "add", a + b, 0) BINARY(i32, "mul", a * b * 7919, 0) BINARY(i32, "div", a / b, 0) BINARY(i32, "rem", a % b, 0)
  BINARY(i32, "and", a & b, 0) BINARY(i32, "or", a | b, 0) BINARY(i32, "xor", a ^ b, 0) BINARY(i32, "min", minimum(a, b), 0)
  BINARY(i32, "eq", where(a == b || a != 2, a, b), 0)
  BINARY(i64, "add", a + b * 100000007LL, 0) BINARY(i64, "mul", a * b, 0)
  BINARY(u8, "add", a + b, 0) BINARY(u8, "max", maximum(a, b), 0) BINARY(i8, "sub", a - b, 0)
}

// Bit for bit: fma.rn rounds once on both sides, and a product and a sum contracted into one (Config::fp_contract,
// on by default) are one fma on both sides; with fp_contract(false) each rounds on its own on both sides.
TEST_CASE("gpu: fused multiply-add: fma() and products contracted into sums") {
  BINARY(f32, "fma", fma(a, b, a), 0) BINARY(f32, "fma_literal", fma(a, 3.0f, b), 0)
  BINARY(f32, "mul_add", a * b + a, 0) BINARY(f32, "mul_sub", a * b - b, 0) BINARY(f32, "sub_mul", b - a * b, 0)
  BINARY(f32, "add_mul", b + a * 0.1f, 0)
  BINARY(f64, "fma", fma(a, b, a), 0) BINARY(f64, "mul_add", a * b + a, 0)
  BINARY(bf16, "fma", fma(a, b, b), 0) BINARY(bf16, "mul_add", a * b + a, 0) BINARY(f16, "fma", fma(a, b, a), 0)
  SUBCASE("mul_add f32, fp_contract(false)") {
    binary_case<f32>("mul_add_rounded", [](auto a, auto b) { return a * b + a; }, 0, Config{}.fp_contract(false));
  }
  // Triton tutorial 06's softmax numerator: the scaled score minus its row's scaled maximum, one fma per score.
  SUBCASE("exp2(s * scale - max(s) * scale) f32") {
    binary_case<f32>("scaled_softmax", [](auto a, auto b) {
      auto s = a * b;
      return exp2(s * 0.18f - (max(s, 1) * 0.18f).template expand_dims<1>());
    }, 2e-6);
  }
}

TEST_CASE("gpu: a negative literal negated, contracted or not, compiles and matches the interpreter (random-program seed 3479)") {
  for (const bool contract : {true, false}) {
    CAPTURE(contract);
    auto k = tilejit::kernel("neg_literal", [](Tensor<f64, 1> y0, Tensor<bf16, 1> y1) {
      auto v0 = full<f64>({16}, -0.75);
      auto v2 = v0 + -2.0;
      descriptor_store(y0, {program_id(0) * 16}, v0 - v0 * -1.25 + -Scalar<f64>(-0.5));
      descriptor_store(y1, {program_id(0) * 16 + 8}, v2.to<bf16>(), StoreReduce::add);
    });
    Twin<f64, 1> y0({22});
    Twin<bf16, 1> y1({40});
    y0.fill_byte(0);
    y1.fill_byte(0);
    run_both(k, dim3(2), Config{}.fp_contract(contract), 0, y0, y1);
  }
}

TEST_CASE("gpu: masked pointer loads and stores (vector add)") {
  for (int64_t n : {1, 127, 128, 1000, 4099}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      auto k = tilejit::kernel("vadd", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<f32, 1> z, Meta<"B"> B) {
        auto offs = program_id(0) * B + arange(0, B);
        auto mask = offs < x.size(0);
        store(z, offs, load(x, offs, mask) + load(y, offs, mask), mask);
      });
      Twin<f32, 1> x({n}), y({n}), z({n});
      x.randomize(1);
      y.randomize(2);
      z.fill_byte(0);
      run_both(k, dim3(static_cast<uint32_t>(cdiv(n, 256))), Config{{"B", 256}}, 0, x, y, z);
    }
  }
}

TEST_CASE("gpu: pointer accesses with cache hints (Evict) give the values plain ones give") {
  // Each width of the prelude's hinted accesses: 16-byte vectors of f32 (masked, the fill merged), 8- and 4-byte
  // vectors of bf16 and i64, and element gathers and scatters of f32, bf16, u8 and i1 through a permutation.
  auto k = tilejit::kernel("hinted_access", [](Tensor<i32, 1> perm, Tensor<f32, 1> x, Tensor<bf16, 1> h, Tensor<u8, 1> u,
                                               Tensor<i1, 1> b, Tensor<i64, 1> w, Tensor<f32, 1> y, Tensor<bf16, 1> hy,
                                               Tensor<u8, 1> uy, Tensor<i1, 1> by, Tensor<i64, 1> wy, Meta<"B"> B) {
    auto offs = program_id(0) * B + arange(0, B);
    auto mask = offs < x.size(0).to<i32>();
    auto p = load(perm, offs, mask, 0, Evict::first);
    auto xv = load(x, offs, mask, -1.5f, Evict::last);
    auto hv = load(h, offs, mask, 0, Evict::first).to<f32>();
    auto xg = load(x, p, mask, 0.0f, Evict::first);
    auto hg = load(h, p, Evict::last).to<f32>();
    auto ug = load(u, p, mask, 3, Evict::last);
    auto bg = load(b, p, Evict::first);
    store(y, offs, where(bg, xv + hg, xg - hv), mask, Evict::first);
    store(hy, p, (xv * 0.5f).to<bf16>(), mask, Evict::last);
    store(uy, p, ug + ug, mask, Evict::first);
    store(by, p, !bg, mask, Evict::last);
    store(wy, offs, load(w, offs, mask, 0, Evict::last) * 3, mask, Evict::first);
  });
  for (int64_t n : {1, 300, 1024, 4099}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      Twin<i32, 1> perm({n});
      for (int64_t i = 0; i < n; ++i) perm.host_data()[i] = static_cast<int32_t>((i * 37 + 11) % n);  // 37 is prime to every n here
      Twin<f32, 1> x({n}), y({n});
      Twin<bf16, 1> h({n}), hy({n});
      Twin<u8, 1> u({n}), uy({n});
      Twin<i1, 1> b({n}), by({n});
      Twin<i64, 1> w({n}), wy({n});
      x.randomize(11);
      h.randomize(12);
      u.randomize(13, 0, 100);
      b.randomize(14, 0, 2);
      w.randomize(15, -1000, 1000);
      fill_bytes(0x5a, y, hy, uy, by, wy);
      run_both(k, dim3(static_cast<uint32_t>(cdiv(n, 256))), Config{{"B", 256}}, 1e-6, perm, x, h, u, b, w, y, hy, uy, by, wy);
    }
  }
}

TEST_CASE("gpu: cross-entropy loss and gradient (samples::cross_entropy_*) match the interpreter and a float64 reference") {
  // Vocabularies shorter than a block, of every residue of it and a GPT-2-sized one; targets at both ends, ignored
  // (-100), and out of range (NaN loss, the gradient of an ignored target is its softmax times scale).
  auto loss_only = tilejit::samples::cross_entropy_kernel();
  auto fused = tilejit::samples::cross_entropy_grad_kernel();
  constexpr int64_t kRows = 6, kIgnore = -100;
  const float scale = 0.25f;
  for (int64_t v : {1, 700, 2048, 5000, 50257}) {
    for (int64_t bn : {1024, 4096}) {
      SUBCASE(("V " + std::to_string(v) + ", BN " + std::to_string(bn)).c_str()) {
        Twin<bf16, 2> logits({kRows, v}), grad({kRows, v});
        Twin<i64, 1> target({kRows});
        Twin<f32, 1> loss({kRows}), loss2({kRows});
        logits.randomize(81, -6, 6);
        const int64_t t[kRows] = {0, v - 1, kIgnore, v / 2, v, (v * 7) / 11};
        for (int64_t r = 0; r < kRows; ++r) target.host_data()[r] = t[r];
        loss.fill_byte(0);
        loss2.fill_byte(0);
        grad.fill_byte(0);
        const Config cfg = Config{{"BN", bn}}.num_warps(bn / 256);
        run_both(loss_only, dim3(kRows), cfg, 1e-5, logits, target, loss, kIgnore);
        run_both(fused, dim3(kRows), cfg, 1e-2, logits, target, loss2, grad, scale, kIgnore);
        // In place (grad is the logits, as Liger's kernel writes it): the same gradient.
        Twin<bf16, 2> in_place({kRows, v});
        Twin<f32, 1> loss3({kRows});
        in_place.randomize(81, -6, 6);
        loss3.fill_byte(0);
        run_both(fused, dim3(kRows), cfg, 1e-2, in_place, target, loss3, in_place, scale, kIgnore);
        const int64_t ld = Twin<bf16, 2>::padded({kRows, v})[0];  // rows padded to 16 bytes: the padding is not written
        for (int64_t r = 0; r < kRows; ++r)
          CHECK(std::memcmp(in_place.host_data() + r * ld, grad.host_data() + r * ld, static_cast<size_t>(v) * 2) == 0);
        CHECK(std::memcmp(loss3.host_data(), loss2.host_data(), loss2.bytes()) == 0);
        // The interpreter's results against float64.
        for (int64_t r = 0; r < kRows; ++r) {
          CAPTURE(r);
          const auto* x = logits.host_data() + r * ld;
          double m = -INFINITY, s = 0;
          for (int64_t c = 0; c < v; ++c) m = std::max(m, static_cast<double>(x[c]));
          for (int64_t c = 0; c < v; ++c) s += std::exp(static_cast<double>(x[c]) - m);
          const bool counted = t[r] != kIgnore, valid = t[r] >= 0 && t[r] < v;
          const double want = !counted ? 0.0 : valid ? m + std::log(s) - static_cast<double>(x[t[r]]) : NAN;
          for (const float got : {loss.host_data()[r], loss2.host_data()[r]}) {
            if (std::isnan(want)) CHECK(std::isnan(got));
            else CHECK(std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
          }
          int bad = 0;
          for (int64_t c = 0; c < v; ++c) {
            const double p = std::exp(static_cast<double>(x[c]) - m) / s;
            const double g = counted ? (p - (c == t[r] ? 1.0 : 0.0)) * scale : 0.0;
            bad += !(std::fabs(static_cast<float>(grad.host_data()[r * ld + c]) - g) <= 1.0 / 128 * std::max(std::fabs(g), 1e-3));
          }
          CHECK(bad == 0);
        }
      }
    }
  }
}

TEST_CASE("gpu: jagged sequences with device-built descriptors") {
  const std::vector<std::vector<int32_t>> layouts = {{0, 5, 5, 70, 71, 200}, {0, 64, 128}, {0, 1}, {0, 300, 301, 333}};
  for (size_t li = 0; li < layouts.size(); ++li) {
    SUBCASE(("layout " + std::to_string(li)).c_str()) {
      const auto& offs = layouts[li];
      auto k = tilejit::kernel("jagged", [](Tensor<i32, 1> offsets, Tensor<bf16, 2> x, Tensor<bf16, 2> y, Meta<"BM"> BM, Meta<"D"> D) {
        auto b = program_id(1);
        auto start = load(offsets, b);
        auto end = load(offsets, b + 1);
        auto m = program_id(0) * BM;
        // A view must not be empty (a TMA dimension has at least one element): skip empty sequences
        // and the programs past the end of shorter ones.
        if_then(m < end - start, [&] {
          auto t = descriptor_load(x.rows(start, end), {m, 0}, {BM, D});
          descriptor_store(y.rows(start, end), {m, 0}, (t.to<f32>() * 2.0f + 1.0f).to<bf16>());
        });
      });
      const int64_t total = offs.back(), D = 64;
      Twin<i32, 1> o({static_cast<int64_t>(offs.size())});
      for (size_t i = 0; i < offs.size(); ++i) o.host_data()[i] = offs[i];
      Twin<bf16, 2> x({total, D}), y({total, D});
      x.randomize(9);
      y.fill_byte(0x3c);
      int64_t longest = 0;
      for (size_t i = 0; i + 1 < offs.size(); ++i) longest = std::max<int64_t>(longest, offs[i + 1] - offs[i]);
      run_both(k, dim3(static_cast<uint32_t>(std::max<int64_t>(1, cdiv(longest, 32))), static_cast<uint32_t>(offs.size() - 1)),
               Config{{"BM", 32}, {"D", D}}, 0, o, x, y);
    }
  }
}

TEST_CASE("gpu: descriptor arrays with prefetch") {
  for (int count : {1, 3, 8}) {
    SUBCASE(("tensors = " + std::to_string(count)).c_str()) {
      auto k = tilejit::kernel("desc_array", [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
        auto b = program_id(0);
        auto x = xs[b];
        prefetch_descriptor(x, {16, 32});
        descriptor_store(y, {b * 16, 0}, descriptor_load(x, {0, 0}, {16, 32}) * 3.0f);
      });
      std::vector<std::unique_ptr<Twin<f32, 2>>> xs;
      tilejit::TensorArrayView<f32, 2> hv, dv;
      for (int i = 0; i < count; ++i) {
        xs.push_back(std::make_unique<Twin<f32, 2>>(std::array<int64_t, 2>{10 + i, 24 + 4 * i}));
        xs.back()->randomize(static_cast<uint32_t>(i));
        xs.back()->upload();
        hv.tensors.push_back(xs.back()->host());
        if (on_gpu()) dv.tensors.push_back(xs.back()->device());
      }
      Twin<f32, 2> y({16 * count, 32});
      y.fill_byte(0);
      y.upload();
      ++g_cases;
      k.interpret(dim3(static_cast<uint32_t>(count)), Config{}, hv, y.host());
      if (!on_gpu()) {
        CHECK(tilejit::runtime::compile_only(k.base(), Config{}).find("0 bytes spill stores") != std::string::npos);
      } else {
        k.launch(nullptr, dim3(static_cast<uint32_t>(count)), Config{}, dv, y.device());
        tilejit::synchronize(nullptr);
        const bool ok = y.compare(0) == 0;
        CHECK(ok);
        g_matched += ok;
      }
    }
  }
}

TEST_CASE("gpu: one kernel object launched with changing descriptor arrays") {
  // The encoded descriptors of an array are cached per kernel object and reused while the array
  // is unchanged: a different array, a changed tensor and the first array again must all be seen.
  auto k = tilejit::kernel("desc_array_reuse", [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
    auto b = program_id(0);
    descriptor_store(y, {b * 16, 0}, descriptor_load(xs[b], {0, 0}, {16, 32}) + 1.0f);
  });
  constexpr int kCount = 3;
  std::vector<std::unique_ptr<Twin<f32, 2>>> a, b;
  for (int i = 0; i < kCount; ++i) {
    a.push_back(std::make_unique<Twin<f32, 2>>(std::array<int64_t, 2>{16, 32}));
    b.push_back(std::make_unique<Twin<f32, 2>>(std::array<int64_t, 2>{12 + i, 28}));
    a.back()->randomize(static_cast<uint32_t>(40 + i));
    b.back()->randomize(static_cast<uint32_t>(50 + i));
    a.back()->upload();
    b.back()->upload();
  }
  const auto views = [](const std::vector<std::unique_ptr<Twin<f32, 2>>>& ts, bool device) {
    tilejit::TensorArrayView<f32, 2> v;
    for (const auto& t : ts) v.tensors.push_back(device ? t->device() : t->host());
    return v;
  };
  tilejit::TensorArrayView<f32, 2> mixed_h = views(a, false), mixed_d;
  mixed_h.tensors[1] = b[1]->host();
  if (on_gpu()) {
    mixed_d = views(a, true);
    mixed_d.tensors[1] = b[1]->device();
  }
  if (!on_gpu()) {
    k.warmup({Config{}});
    MESSAGE("no GPU: compiled only");
    return;
  }
  int step = 0;
  for (const auto& [h, d] : {std::pair{views(a, false), views(a, true)}, std::pair{views(b, false), views(b, true)},
                             std::pair{mixed_h, mixed_d}, std::pair{views(a, false), views(a, true)}}) {
    INFO("launch " << step++);
    Twin<f32, 2> y({16 * kCount, 32});
    y.fill_byte(0);
    y.upload();
    ++g_cases;
    k.interpret(dim3(kCount), Config{}, h, y.host());
    k.launch(nullptr, dim3(kCount), Config{}, d, y.device());
    tilejit::synchronize(nullptr);
    const bool ok = y.compare(0) == 0;
    CHECK(ok);
    g_matched += ok;
  }
}

TEST_CASE("gpu: reductions and dot and control flow") {
  SUBCASE("row sums / max / argmax") {
    auto k = tilejit::kernel("rowred", [](Tensor<f32, 2> x, Tensor<f32, 1> s, Tensor<f32, 1> mx, Tensor<i32, 1> am) {
      auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 64});
      auto rows = program_id(0) * 16 + arange(0, 16);
      store(s, rows, sum(t, 1), rows < 40);
      store(mx, rows, max(t, 1), rows < 40);
      store(am, rows, argmax(t, 1), rows < 40);
    });
    Twin<f32, 2> x({40, 64});
    Twin<f32, 1> s({40}), mx({40});
    Twin<i32, 1> am({40});
    x.randomize(4);
    for (size_t i = 0; i < 40 * 64; ++i) x.host_data()[i] = std::round(x.host_data()[i] * 8) / 8;  // exact sums
    s.fill_byte(0);
    mx.fill_byte(0);
    am.fill_byte(0);
    run_both(k, dim3(3), Config{}, 0, x, s, mx, am);
  }
  for (int64_t K : {16, 48, 100}) {
    SUBCASE(("dot with a K loop, K = " + std::to_string(K)).c_str()) {
      auto k = tilejit::kernel("matmul", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
        auto m = program_id(0) * BM;
        auto n = program_id(1) * BN;
        auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
          return dot(descriptor_load(a, {m, kk}, {BM, BK}), descriptor_load(b, {kk, n}, {BK, BN}), acc);
        });
        descriptor_store(c, {m, n}, acc);
      });
      Twin<bf16, 2> a({50, K}), b({K, 40});
      Twin<f32, 2> c({50, 40});
      a.randomize(1, -2, 2);
      b.randomize(2, -2, 2);
      c.fill_byte(0);
      run_both(k, dim3(static_cast<uint32_t>(cdiv(50, 32)), static_cast<uint32_t>(cdiv(40, 32))), Config{{"BM", 32}, {"BN", 32}, {"BK", 16}},
               1e-5, a, b, c);
    }
  }
  SUBCASE("if_else on program id with loop-carried tuple") {
    auto k = tilejit::kernel("branchy", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
      auto t = descriptor_load(x, {program_id(0) * 8, 0}, {8, 32});
      auto [a, b] = for_range(0, 3, 1, std::tuple{t, t * 0.5f}, [&](Scalar<i32> i, Value<f32, 2> a, Value<f32, 2> b) {
        return std::tuple{a + b * i.to<f32>(), b * 0.5f};
      });
      auto r = if_else(program_id(0) % 2 == 0, [&] { return a; }, [&] { return b - a; });
      descriptor_store(y, {program_id(0) * 8, 0}, r);
    });
    Twin<f32, 2> x({30, 32}), y({30, 32});
    x.randomize(8);
    y.fill_byte(0);
    run_both(k, dim3(4), Config{}, 0, x, y);
  }
  SUBCASE("atomic_add across programs") {
    auto k = tilejit::kernel("atomics", [](Tensor<i32, 1> x, Tensor<i32, 1> hist) {
      auto offs = program_id(0) * 128 + arange(0, 128);
      auto v = load(x, offs, offs < x.size(0));
      atomic_add(hist, (v & 15), 1, offs < x.size(0));
    });
    Twin<i32, 1> x({1000}), h({16});
    x.randomize(6, 0, 1000);
    for (int i = 0; i < 16; ++i) h.host_data()[i] = 0;
    run_both(k, dim3(8), Config{}, 0, x, h);
  }
  SUBCASE("merged TMA view of a rank-4 tensor") {
    auto k = tilejit::kernel("merged", [](Tensor<f32, 4> x, Tensor<f32, 4> y) {
      auto xv = x.merge({2, 2});
      auto yv = y.merge({2, 2});
      descriptor_store(yv, {program_id(0) * 8, 0}, descriptor_load(xv, {program_id(0) * 8, 0}, {8, 64}) + 1.0f);
    });
    Twin<f32, 4> x({3, 5, 4, 16}), y({3, 5, 4, 16});
    x.randomize(10);
    y.fill_byte(0);
    run_both(k, dim3(2), Config{}, 0, x, y);
  }
}

TEST_CASE("gpu: floats to 8-bit integers saturate, and a u8 of 0 divided by 255 is 0 (random-program seed 73438)") {
  // ptxas fused the old clamp of the i32 conversion with the comparison that x / 255 becomes into VIMNMX.RELU and a
  // predicate that gave 1 for 0 on an H100. Values in [-300, 300] with zeros, in a 16 x 32 tile per program.
  auto k = tilejit::kernel("to_u8_div", [](Tensor<f32, 2> x, Tensor<u8, 2> o1, Tensor<u8, 2> o2, Tensor<i8, 2> o3,
                                           Tensor<i8, 2> o4, Tensor<u8, 2> o5) {
    auto m = program_id(0) * 16;
    auto t = descriptor_load(x, {m, 0}, {16, 32});
    auto u = t.to<u8>();
    auto i = t.to<i8>();
    descriptor_store(o1, {m, 0}, u);
    descriptor_store(o2, {m, 0}, u / -1);  // the literal is the u8 255
    descriptor_store(o3, {m, 0}, i);
    descriptor_store(o4, {m, 0}, i / 127);
    descriptor_store(o5, {m, 0}, t.to<f64>().to<u8>() / 255);
  });
  Twin<f32, 2> x({64, 32});
  Twin<u8, 2> o1({64, 32}), o2({64, 32}), o5({64, 32});
  Twin<i8, 2> o3({64, 32}), o4({64, 32});
  x.randomize(41, -300, 300);
  for (int r = 0; r < 64; r += 3)
    for (int c = 0; c < 32; c += 2) x.host_data()[r * 32 + c] = 0.0f;  // zeros, as the seed's zero-filled tiles
  fill_bytes(7, o1, o2, o3, o4, o5);
  run_both(k, dim3(4), Config{}.num_warps(2), 0, x, o1, o2, o3, o4, o5);
}

TEST_CASE("gpu: integer min and max of negated values, elementwise and over rows (products seed 5448)") {
  // ptxas (CUDA 13.0) folded a negation into the three-input VIMNMX3 it formed from two max and dropped it: the
  // row maximum of -(acc + bias) was that of acc + bias. Two warps, 16 x 96 tiles: each row maximum combines
  // 24 registers per thread (VIMNMX3 trees) before the shuffles; u8 and i8 compute in int the same way.
  auto k = tilejit::kernel("neg_minmax", [](Tensor<i32, 2> x, Tensor<i32, 2> y, Tensor<u8, 2> z, Tensor<i32, 2> o1,
                                            Tensor<i32, 1> o2, Tensor<i32, 1> o3, Tensor<u8, 2> o4, Tensor<i8, 2> o5) {
    auto m = program_id(0) * 16;
    auto a = descriptor_load(x, {m, 0}, {16, 96});
    auto b = descriptor_load(y, {m, 0}, {16, 96});
    auto u = descriptor_load(z, {m, 0}, {16, 96});
    auto v = (a + b) * -1;
    descriptor_store(o1, {m, 0}, maximum(maximum(-a, b), -b));
    descriptor_store(o2, {m}, max(v, 1));
    descriptor_store(o3, {m}, min(-v, 1));
    descriptor_store(o4, {m, 0}, maximum(maximum(-u, u / 3), u * -1));
    auto i = u.to<i8>();
    descriptor_store(o5, {m, 0}, minimum(minimum(-i, i * 2), -(i / 2)));
  });
  Twin<i32, 2> x({64, 96}), y({64, 96}), o1({64, 96});
  Twin<i32, 1> o2({64}), o3({64});
  Twin<u8, 2> z({64, 96}), o4({64, 96});
  Twin<i8, 2> o5({64, 96});
  x.randomize(51, -1000, 1000);
  y.randomize(52, -1000, 1000);
  z.randomize(53, 0, 255);
  fill_bytes(9, o1, o2, o3, o4, o5);
  run_both(k, dim3(4), Config{}.num_warps(2), 0, x, y, z, o1, o2, o3, o4, o5);
}

TEST_CASE("gpu: integers and bools to f16, bf16 and fp8 round once (random-program seed 19684)") {
  // 8 elements per thread (two warps, a 16 x 32 tile), as in the program where ptxas gave one element of a
  // bool -> f8e5m2 conversion its neighbour's value in the old f64 path. Integers up to 3e6 in magnitude
  // round in every target type; f16 and fp8 overflow.
  auto k = tilejit::kernel("int_to_narrow", [](Tensor<i32, 2> x, Tensor<i64, 2> xl, Tensor<f16, 2> o1, Tensor<bf16, 2> o2,
                                               Tensor<f8e5m2, 2> o3, Tensor<f8e4m3, 2> o4, Tensor<bf16, 2> o5) {
    auto m = program_id(0) * 16;
    auto t = descriptor_load(x, {m, 0}, {16, 32});
    descriptor_store(o1, {m, 0}, t.to<f16>());
    descriptor_store(o2, {m, 0}, t.to<bf16>());
    descriptor_store(o3, {m, 0}, (t < 0).to<f8e5m2>());
    descriptor_store(o4, {m, 0}, t.to<i8>().to<f8e4m3>());
    descriptor_store(o5, {m, 0}, (descriptor_load(xl, {m, 0}, {16, 32}) * 1000003).to<bf16>());
  });
  Twin<i32, 2> x({64, 32});
  Twin<i64, 2> xl({64, 32});
  Twin<f16, 2> o1({64, 32});
  Twin<bf16, 2> o2({64, 32}), o5({64, 32});
  Twin<f8e5m2, 2> o3({64, 32});
  Twin<f8e4m3, 2> o4({64, 32});
  x.randomize(31, -3e6, 3e6);
  xl.randomize(32, -3e6, 3e6);
  fill_bytes(0, o1, o2, o3, o4, o5);
  run_both(k, dim3(4), Config{}.num_warps(2), 0, x, xl, o1, o2, o3, o4, o5);
}
