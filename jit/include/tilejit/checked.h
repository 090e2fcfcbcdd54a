// Overflow-checked int64 arithmetic for sizes, strides, offsets and byte counts formed from user values.
#pragma once

#include <cstdint>
#include <optional>

namespace tilejit::checked {

/// a + b, or nullopt when the sum does not fit in int64.
inline std::optional<int64_t> add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a - b, or nullopt when the difference does not fit in int64.
inline std::optional<int64_t> sub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a * b, or nullopt when the product does not fit in int64.
inline std::optional<int64_t> mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Largest number of elements in one block value (a program's tile), the DSL's limit.
inline constexpr int64_t kMaxBlockElements = int64_t{1} << 20;

}  // namespace tilejit::checked
