// What both program generators share: the seeded random stream, element-type facts and the printing of C++ literals.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::fuzz {

/// A small deterministic generator (the standard distributions differ between libraries).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) { return hi <= lo ? lo : lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[static_cast<size_t>(range(0, static_cast<int64_t>(v.size()) - 1))]; }

 private:
  uint64_t s_;
};

/// Elements per 16 bytes: the granularity of TMA's innermost coordinates, boxes and strides.
inline int64_t per16(ir::DType d) { return 16 / ir::size_of(d); }
inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

/// The DSL's name of an element type ("f32", "bf16", ...).
inline std::string tag(ir::DType d) { return std::string(ir::name_of(d)); }

/// The spacing of floats of type `d` near 1 (0 for integers).
inline double ulp(ir::DType d) {
  switch (d) {
    case ir::DType::f64: return 0x1.0p-52;
    case ir::DType::f32: return 0x1.0p-23;
    case ir::DType::f16: return 0x1.0p-10;
    case ir::DType::bf16: return 0x1.0p-7;
    case ir::DType::f8e4m3: return 0x1.0p-3;
    case ir::DType::f8e5m2: return 0x1.0p-2;
    default: return 0;
  }
}
/// What the GPU suite allows a transcendental of each type (tests/gpu/test_gpu_ops.cpp), with a margin.
inline double math_tol(ir::DType d) {
  switch (d) {
    case ir::DType::f64: return 1e-13;
    case ir::DType::f32: return 1e-5;
    case ir::DType::f16: return 2e-3;
    default: return 2e-2;
  }
}
inline double max_finite(ir::DType d) {
  switch (d) {
    case ir::DType::f16: return 65504;
    case ir::DType::f8e4m3: return 448;
    case ir::DType::f8e5m2: return 57344;
    case ir::DType::bf16: case ir::DType::f32: return 3.3e38;
    default: return 1.7e308;
  }
}

inline std::string int_str(int64_t v) { return std::to_string(v); }
/// A float literal as C++ writes it for type `d` ("0.25f"; no suffix for f64).
inline std::string float_str(double v, ir::DType d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return d == ir::DType::f64 ? s : s + "f";
}
/// "{1, 2, 3}".
inline std::string list(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + int_str(v[i]);
  return s + "}";
}

}  // namespace tilejit::fuzz
