// Element-by-element comparison of a GPU result with the interpreter's, shared by the GPU suite and the fuzzer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <string>

#include "tilejit/tilejit.h"

namespace gpu_test {

/// Compares `n` elements of type `Host`: bit-exact when tol == 0 (NaN matches NaN), else
/// a == b (infinities of one sign match) or |a - b| <= tol * max(1, |b|). Returns the number of
/// mismatches; the first one goes to `first`.
template <class Host, bool IsFloat>
size_t compare_host(const void* gpu, const void* interp, size_t n, double tol, std::string* first) {
  const Host* a = static_cast<const Host*>(gpu);
  const Host* b = static_cast<const Host*>(interp);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    bool ok;
    if (tol == 0 || !IsFloat) {
      ok = std::memcmp(&a[i], &b[i], sizeof(Host)) == 0;
      if constexpr (IsFloat)
        if (!ok) ok = std::isnan(static_cast<double>(a[i])) && std::isnan(static_cast<double>(b[i]));
    } else {
      const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
      ok = (std::isnan(x) && std::isnan(y)) || x == y || std::fabs(x - y) <= tol * std::max(1.0, std::fabs(y));  // x == y: equal infinities
    }
    if (!ok && bad++ == 0 && first)
      *first = "element " + std::to_string(i) + ": gpu " + std::to_string(static_cast<double>(a[i])) + ", interpreter " +
               std::to_string(static_cast<double>(b[i]));
  }
  return bad;
}

/// compare_host for an element type known only at run time.
inline size_t compare_elements(tilejit::ir::DType d, const void* gpu, const void* interp, size_t n, double tol,
                               std::string* first) {
  using tilejit::ir::DType;
  switch (d) {
    case DType::i1: return compare_host<bool, false>(gpu, interp, n, tol, first);
    case DType::i8: return compare_host<int8_t, false>(gpu, interp, n, tol, first);
    case DType::u8: return compare_host<uint8_t, false>(gpu, interp, n, tol, first);
    case DType::i32: return compare_host<int32_t, false>(gpu, interp, n, tol, first);
    case DType::i64: return compare_host<int64_t, false>(gpu, interp, n, tol, first);
    case DType::f16: return compare_host<tilejit::half, true>(gpu, interp, n, tol, first);
    case DType::bf16: return compare_host<tilejit::bfloat16, true>(gpu, interp, n, tol, first);
    case DType::f32: return compare_host<float, true>(gpu, interp, n, tol, first);
    case DType::f64: return compare_host<double, true>(gpu, interp, n, tol, first);
    case DType::f8e4m3: return compare_host<tilejit::float8_e4m3, true>(gpu, interp, n, tol, first);
    case DType::f8e5m2: return compare_host<tilejit::float8_e5m2, true>(gpu, interp, n, tol, first);
  }
  return n;
}

}  // namespace gpu_test
