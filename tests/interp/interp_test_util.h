// Shared utilities of the interpreter tests: aligned host buffers, element encoding, IR building, references.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tilejit/interp/interp.h"
#include "tilejit/ir/ir.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/tilejit.h"

namespace itest {

namespace ir = tilejit::ir;
using ir::DType;
using ir::NodeId;
using ir::Op;

inline constexpr DType kAllTypes[] = {DType::i1,  DType::i8,  DType::u8,  DType::i32,    DType::i64,   DType::f16,
                                      DType::bf16, DType::f32, DType::f64, DType::f8e4m3, DType::f8e5m2};
/// Types with arithmetic (not bool, not fp8).
inline constexpr DType kNumericTypes[] = {DType::i8, DType::u8, DType::i32, DType::i64,
                                          DType::f16, DType::bf16, DType::f32, DType::f64};
inline constexpr DType kIntTypes[] = {DType::i8, DType::u8, DType::i32, DType::i64};
inline constexpr DType kFloatTypes[] = {DType::f16, DType::bf16, DType::f32, DType::f64};

inline std::string name(DType t) { return std::string(ir::name_of(t)); }

// ---- reference rounding (independent of the library: long double arithmetic) -------------

/// Parameters of a binary float format: significand bits (with the implicit one), minimum
/// normal exponent, largest finite value, and whether it has infinities.
struct FloatFormat {
  int p;
  int emin;
  long double max;
  bool has_inf;
};
inline FloatFormat format_of(DType t) {
  switch (t) {
    case DType::f16: return {11, -14, 65504.0L, true};
    case DType::bf16: return {8, -126, 0x1.fep127L, true};
    case DType::f32: return {24, -126, 0x1.fffffep127L, true};
    case DType::f8e4m3: return {4, -6, 448.0L, false};
    case DType::f8e5m2: return {3, -14, 57344.0L, true};
    default: return {53, -1022, static_cast<long double>(std::numeric_limits<double>::max()), true};
  }
}

/// Rounds x (exact in long double) to the nearest value of format f, ties to even;
/// overflow gives inf (or NaN for formats without infinities).
inline double ref_round(DType t, long double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  const FloatFormat f = format_of(t);
  const bool neg = std::signbit(x);
  long double a = std::fabs(x);
  if (std::isinf(a)) return f.has_inf ? (neg ? -INFINITY : INFINITY) : std::numeric_limits<double>::quiet_NaN();
  if (a == 0) return neg ? -0.0 : 0.0;
  int e = std::ilogb(a);
  if (e < f.emin) e = f.emin;
  const long double q = std::ldexp(1.0L, e - (f.p - 1));
  const long double m = a / q;  // exact: power-of-two scaling
  long double r = std::floor(m);
  const long double frac = m - r;
  if (frac > 0.5L || (frac == 0.5L && std::fmod(r, 2.0L) != 0)) r += 1;
  const long double v = r * q;
  if (v > f.max) {
    return f.has_inf ? (neg ? -INFINITY : INFINITY) : std::numeric_limits<double>::quiet_NaN();
  }
  return static_cast<double>(neg ? -v : v);
}

/// Wraps an integer to the width of type t (bool: nonzero -> 1), by C++ conversions.
inline int64_t ref_wrap(DType t, int64_t v) {
  switch (t) {
    case DType::i1: return v != 0;
    case DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint64_t>(v) & 0xff));
    case DType::u8: return static_cast<uint8_t>(static_cast<uint64_t>(v) & 0xff);
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v) & 0xffffffffu));
    default: return v;
  }
}
inline int64_t int_min(DType t) {
  switch (t) {
    case DType::i1: return 0;
    case DType::i8: return -128;
    case DType::u8: return 0;
    case DType::i32: return std::numeric_limits<int32_t>::min();
    default: return std::numeric_limits<int64_t>::min();
  }
}
inline int64_t int_max(DType t) {
  switch (t) {
    case DType::i1: return 1;
    case DType::i8: return 127;
    case DType::u8: return 255;
    case DType::i32: return std::numeric_limits<int32_t>::max();
    default: return std::numeric_limits<int64_t>::max();
  }
}

// ---- host buffers -------------------------------------------------------------------------

/// Raw bit pattern of a value of type t, for host memory (values must be representable in t).
inline uint64_t encode(DType t, double v) {
  switch (t) {
    case DType::f16: return ir::to_f16_bits(v);
    case DType::bf16: return ir::to_bf16_bits(v);
    case DType::f32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DType::f64: return std::bit_cast<uint64_t>(v);
    case DType::f8e4m3: return ir::to_e4m3_bits(v);
    case DType::f8e5m2: return ir::to_e5m2_bits(v);
    case DType::i1: return v != 0;
    default: return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
}
inline double decode_float(DType t, uint64_t b) {
  switch (t) {
    case DType::f16: return ir::f16_bits_to_double(static_cast<uint16_t>(b));
    case DType::bf16: return ir::bf16_bits_to_double(static_cast<uint16_t>(b));
    case DType::f32: return std::bit_cast<float>(static_cast<uint32_t>(b));
    case DType::f64: return std::bit_cast<double>(b);
    case DType::f8e4m3: return ir::e4m3_bits_to_double(static_cast<uint8_t>(b));
    case DType::f8e5m2: return ir::e5m2_bits_to_double(static_cast<uint8_t>(b));
    default: return 0;
  }
}
inline int64_t decode_int(DType t, uint64_t b) {
  switch (t) {
    case DType::i1: return (b & 0xff) != 0;
    case DType::i8: return static_cast<int8_t>(static_cast<uint8_t>(b));
    case DType::u8: return static_cast<uint8_t>(b);
    case DType::i32: return static_cast<int32_t>(static_cast<uint32_t>(b));
    default: return static_cast<int64_t>(b);
  }
}

/// A 64-byte aligned host buffer of `n` elements of one type, zero-initialised.
class Buffer {
 public:
  Buffer() = default;
  Buffer(DType t, int64_t n) : dtype_(t), n_(n) {
    const size_t bytes = (static_cast<size_t>(std::max<int64_t>(n, 1)) * static_cast<size_t>(ir::size_of(t)) + 63) / 64 * 64;
    mem_.reset(static_cast<std::byte*>(std::aligned_alloc(64, bytes)));
    std::memset(mem_.get(), 0, bytes);
  }
  DType dtype() const { return dtype_; }
  int64_t size() const { return n_; }
  std::byte* data() const { return mem_.get(); }
  std::byte* at(int64_t k) const { return mem_.get() + k * ir::size_of(dtype_); }

  uint64_t bits(int64_t k) const {
    uint64_t v = 0;
    std::memcpy(&v, at(k), static_cast<size_t>(ir::size_of(dtype_)));
    return v;
  }
  void set_bits(int64_t k, uint64_t v) { std::memcpy(at(k), &v, static_cast<size_t>(ir::size_of(dtype_))); }
  double getf(int64_t k) const { return decode_float(dtype_, bits(k)); }
  int64_t geti(int64_t k) const { return decode_int(dtype_, bits(k)); }
  void setf(int64_t k, double v) { set_bits(k, encode(dtype_, v)); }
  void seti(int64_t k, int64_t v) { set_bits(k, static_cast<uint64_t>(ref_wrap(dtype_, v))); }
  /// The value as a double (ints converted).
  double value(int64_t k) const { return ir::is_float(dtype_) ? getf(k) : static_cast<double>(geti(k)); }

  tilejit::TensorArg arg(std::vector<int64_t> sizes, std::vector<int64_t> strides = {}, int64_t offset = 0) const {
    tilejit::TensorArg a;
    a.data = at(offset);
    a.dtype = dtype_;
    a.rank = static_cast<int>(sizes.size());
    if (strides.empty()) {
      strides.resize(sizes.size());
      int64_t st = 1;
      for (size_t d = sizes.size(); d-- > 0;) {
        strides[d] = st;
        st *= sizes[d];
      }
    }
    for (size_t d = 0; d < sizes.size(); ++d) {
      a.sizes[d] = sizes[d];
      a.strides[d] = strides[d];
    }
    return a;
  }
  tilejit::TensorArg arg1() const { return arg({n_}); }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  DType dtype_ = DType::f32;
  int64_t n_ = 0;
  std::unique_ptr<std::byte, Free> mem_;
};

inline tilejit::KernelArg tensor_arg(const tilejit::TensorArg& t) {
  tilejit::KernelArg k;
  k.kind = tilejit::KernelArg::Tensor;
  k.tensor = t;
  return k;
}
inline tilejit::KernelArg scalar_arg(DType t, double v) {
  tilejit::KernelArg k;
  k.kind = tilejit::KernelArg::Scalar;
  k.dtype = t;
  if (ir::is_float(t)) k.f = v;
  else k.i = static_cast<int64_t>(v);
  return k;
}

// ---- building graphs directly ------------------------------------------------------------

/// Builds small IR graphs without the DSL, so that every op and type can be swept at run time.
struct Builder {
  ir::Graph g;
  static constexpr const char* kFile = "builder_graph.cpp";

  Builder() {
    g.kernel_name = "builder";
    g.kernel_location = ir::Location{kFile, 1};
    g.set_location(kFile, 1);
  }
  void line(uint32_t l) { g.set_location(kFile, l); }

  NodeId tensor(DType t, int rank = 1) {
    const auto idx = static_cast<int64_t>(g.params.size());
    const NodeId n = g.add(Op::ParamTensor, t, ir::Shape{}, {}, {idx, rank});
    g.params.push_back(ir::Param{ir::Param::Tensor, t, rank, "arg" + std::to_string(idx), n});
    return n;
  }
  NodeId scalar(DType t) {
    const auto idx = static_cast<int64_t>(g.params.size());
    const NodeId n = g.add(Op::ParamScalar, t, ir::Shape{}, {}, {idx});
    g.params.push_back(ir::Param{ir::Param::Scalar, t, 0, "arg" + std::to_string(idx), n});
    return n;
  }
  NodeId ci(DType t, int64_t v) { return g.add(Op::Const, t, ir::Shape{}, {}, {v}); }
  NodeId cf(DType t, double v) { return g.add(Op::Const, t, ir::Shape{}, {}, {std::bit_cast<int64_t>(v)}); }
  /// i32 offsets 0..numel-1 shaped as `s`.
  NodeId iota(const ir::Shape& s) {
    const NodeId a = g.add(Op::Arange, DType::i32, ir::Shape{s.numel()}, {}, {0});
    return s.rank == 1 ? a : g.add(Op::Reshape, DType::i32, s, {a});
  }
  NodeId load(NodeId t, NodeId offs) {
    return g.add(Op::Load, g.node(t).dtype, g.node(offs).shape, {t, offs}, {0});
  }
  NodeId load_masked(NodeId t, NodeId offs, NodeId mask, NodeId other) {
    return g.add(Op::Load, g.node(t).dtype, g.node(offs).shape, {t, offs, mask, other}, {1});
  }
  void store(NodeId t, NodeId offs, NodeId v) { g.add(Op::Store, g.node(t).dtype, g.node(offs).shape, {t, offs, v}, {0}); }
  NodeId op(Op o, DType t, const ir::Shape& s, std::initializer_list<NodeId> operands, std::initializer_list<int64_t> ints = {}) {
    return g.add(o, t, s, operands, ints);
  }
  NodeId bcast(NodeId x, const ir::Shape& s) { return g.add(Op::Broadcast, g.node(x).dtype, s, {x}); }

  /// Verifies the graph and runs it.
  void run(tilejit::dim3 grid, const std::vector<tilejit::KernelArg>& args) {
    ir::verify(g);
    tilejit::interp::run(g, grid, args);
  }
};

// ---- comparison ------------------------------------------------------------------------------

/// Same value, NaN equal to NaN, signed zeros distinguished.
inline bool same(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

/// Distance between adjacent values of float type t around x.
inline double ulp(DType t, double x) {
  const FloatFormat f = format_of(t);
  int e = std::isfinite(x) && x != 0 ? std::ilogb(x) : f.emin;
  if (e < f.emin) e = f.emin;
  return std::ldexp(1.0, e - (f.p - 1));
}

/// got is within `ulps` units in the last place of the exact value `want` (inf and NaN must match).
inline bool close_ulps(DType t, double got, double want, double ulps) {
  if (std::isnan(want)) return std::isnan(got);
  const double r = ref_round(t, want);
  if (std::isinf(r) || std::isinf(got)) return got == r || std::fabs(got - want) <= ulps * ulp(t, want);
  return std::fabs(got - want) <= ulps * ulp(t, want);
}

/// Expects `f` to throw tilejit::UserError whose message contains every string of `parts`.
template <class F>
void expect_user_error(F&& f, std::initializer_list<std::string> parts) {
  bool thrown = false;
  try {
    f();
  } catch (const tilejit::UserError& e) {
    thrown = true;
    const std::string what = e.what();
    INFO("message: " << what);
    for (const std::string& p : parts) CHECK_MESSAGE(what.find(p) != std::string::npos, "missing: " << p);
  }
  CHECK_MESSAGE(thrown, "no UserError was thrown");
}

/// A deterministic random generator per test.
inline std::mt19937_64 rng(uint64_t seed) { return std::mt19937_64(seed * 0x9e3779b97f4a7c15ull + 12345); }

/// A random bit pattern of type t that is not a NaN (so that it survives any value round trip exactly).
inline uint64_t random_bits(DType t, std::mt19937_64& r) {
  uint64_t b = r();
  switch (t) {
    case DType::f32:
      b &= 0xffffffffull;
      if (((b >> 23) & 0xff) == 0xff) b ^= 1ull << 30;
      break;
    case DType::f64:
      if (((b >> 52) & 0x7ff) == 0x7ff) b ^= 1ull << 62;
      break;
    case DType::bf16:
      b &= 0xffff;
      if (((b >> 7) & 0xff) == 0xff) b ^= 1ull << 14;
      break;
    case DType::f16:
      b &= 0xffff;
      if (((b >> 10) & 0x1f) == 0x1f) b ^= 1ull << 14;
      break;
    case DType::f8e4m3:
      b &= 0xff;
      if ((b & 0x7f) == 0x7f) b ^= 1;
      break;
    case DType::f8e5m2:
      b &= 0xff;
      if (((b >> 2) & 0x1f) == 0x1f) b ^= 1ull << 6;
      break;
    case DType::i1: b &= 1; break;
    default: {
      const int bits = 8 * ir::size_of(t);
      if (bits < 64) b &= (1ull << bits) - 1;
    }
  }
  return b;
}

/// Calls f(idx) for every multi-index of `dims` in row-major order (an odometer, outermost first).
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  for (int64_t d : dims)
    if (d <= 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  while (true) {
    f(idx);
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (dims.empty()) return;
  }
}

/// Interesting values of float type t (rounded to t) followed by `extra` random ones.
inline std::vector<double> float_samples(DType t, size_t extra, uint64_t seed) {
  const FloatFormat f = format_of(t);
  const double maxv = static_cast<double>(f.max);
  const double min_normal = std::ldexp(1.0, f.emin);
  const double min_sub = std::ldexp(1.0, f.emin - (f.p - 1));
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -7.25, 0.1, -0.3, 100.0, 1e-3,
                           maxv, -maxv, min_normal, -min_normal, min_sub, -min_sub, 1.0 + std::ldexp(1.0, 1 - f.p),
                           std::numeric_limits<double>::quiet_NaN()};
  if (f.has_inf) {
    v.push_back(INFINITY);
    v.push_back(-INFINITY);
  }
  auto r = rng(seed);
  std::uniform_real_distribution<double> mant(-2.0, 2.0);
  std::uniform_int_distribution<int> ex(-12, 12);
  for (size_t k = 0; k < extra; ++k) v.push_back(std::ldexp(mant(r), ex(r)));
  for (double& x : v) x = ref_round(t, x);
  return v;
}

/// Interesting values of integer type t followed by `extra` random ones (all wrapped to t).
inline std::vector<int64_t> int_samples(DType t, size_t extra, uint64_t seed) {
  std::vector<int64_t> v = {0, 1, -1, 2, -2, 7, -7, 100, int_min(t), int_max(t), int_min(t) + 1, int_max(t) - 1, 127, 128, 255, 256};
  auto r = rng(seed);
  for (size_t k = 0; k < extra; ++k) v.push_back(static_cast<int64_t>(r()));
  for (int64_t& x : v) x = ref_wrap(t, x);
  return v;
}

// ---- rewriting passes: the rewritten graph against the traced one ---------------------------

/// Runs `g` over `grid` and `h` over `h_grid` (`grid` when null; its TileGrid nodes read `grid`: a graph lowered for
/// persistent programs) on copies of the same inputs; every output buffer must match bit for bit.
inline void same_results(const ir::Graph& g, const ir::Graph& h, tilejit::dim3 grid, const std::vector<Buffer*>& inputs,
                  const std::vector<Buffer*>& outputs, const std::function<std::vector<tilejit::KernelArg>(const std::vector<Buffer>&)>& args,
                  const tilejit::dim3* h_grid = nullptr) {
  std::vector<Buffer> a, b;
  for (const auto* set : {&inputs, &outputs})
    for (const Buffer* x : *set) {
      a.emplace_back(x->dtype(), x->size());
      b.emplace_back(x->dtype(), x->size());
      std::memcpy(a.back().data(), x->data(), static_cast<size_t>(x->size() * ir::size_of(x->dtype())));
      std::memcpy(b.back().data(), x->data(), static_cast<size_t>(x->size() * ir::size_of(x->dtype())));
    }
  tilejit::interp::run(g, grid, args(a));
  tilejit::interp::run(h, h_grid ? *h_grid : grid, args(b), nullptr, &grid);
  for (size_t k = inputs.size(); k < a.size(); ++k)
    for (int64_t i = 0; i < a[k].size(); ++i) {
      if (a[k].bits(i) == b[k].bits(i)) continue;
      FAIL_CHECK("output " << k - inputs.size() << " element " << i << ": " << a[k].value(i) << " traced, " << b[k].value(i)
                           << " rewritten");
      return;
    }
}

inline void fill_random(Buffer& x, uint64_t seed) {
  auto r = rng(seed);
  for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(static_cast<int64_t>(r() % 2001) - 1000) / 64.0);
}

/// The number of values each reachable loop carries, in program order.
inline std::vector<size_t> carried_per_loop(const ir::Graph& g) {
  const auto info = tilejit::passes::analyze(g);
  std::vector<std::pair<int, size_t>> v;
  for (size_t i = 0; i < g.size(); ++i)
    if (info.position[i] >= 0 && g.node(static_cast<NodeId>(i)).op == Op::For)
      v.push_back({info.position[i], g.operands(static_cast<NodeId>(i)).size() - 3});
  std::sort(v.begin(), v.end());
  std::vector<size_t> out;
  for (const auto& [p, n] : v) out.push_back(n);
  return out;
}

}  // namespace itest
