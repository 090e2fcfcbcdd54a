// DSL element-type tags (f32, bf16, ...), their host storage types and the type rules.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

#include "tilejit/ir/dtype.h"

namespace tilejit {

/// Host storage for bf16 (bit pattern; conversions round to nearest even).
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(ir::to_bf16_bits(f)) {}  // NOLINT: implicit like a float
  operator float() const { return static_cast<float>(ir::bf16_bits_to_double(bits)); }
  static bfloat16 from_bits(uint16_t b) { bfloat16 r; r.bits = b; return r; }
};
/// Host storage for IEEE half.
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(ir::to_f16_bits(f)) {}  // NOLINT
  operator float() const { return static_cast<float>(ir::f16_bits_to_double(bits)); }
  static half from_bits(uint16_t b) { half r; r.bits = b; return r; }
};
/// Host storage for fp8 E4M3FN.
struct float8_e4m3 {
  uint8_t bits = 0;
  float8_e4m3() = default;
  float8_e4m3(float f) : bits(ir::to_e4m3_bits(f)) {}  // NOLINT
  operator float() const { return static_cast<float>(ir::e4m3_bits_to_double(bits)); }
  static float8_e4m3 from_bits(uint8_t b) { float8_e4m3 r; r.bits = b; return r; }
};
/// Host storage for fp8 E5M2.
struct float8_e5m2 {
  uint8_t bits = 0;
  float8_e5m2() = default;
  float8_e5m2(float f) : bits(ir::to_e5m2_bits(f)) {}  // NOLINT
  operator float() const { return static_cast<float>(ir::e5m2_bits_to_double(bits)); }
  static float8_e5m2 from_bits(uint8_t b) { float8_e5m2 r; r.bits = b; return r; }
};

namespace dsl {

// Element-type tags used in kernel signatures: Tensor<bf16, 2>, Scalar<f32>, ...
// Plain C++ types name the same tags: float = f32, double = f64, int32_t = i32,
// int64_t = i64, int8_t = i8, uint8_t = u8, bool = i1.
#define TILEJIT_DTYPE_TAG(Tag, Code, Host)                  \
  struct Tag {                                              \
    static constexpr ir::DType code = ir::DType::Code;      \
    using host = Host;                                      \
  };
TILEJIT_DTYPE_TAG(i1, i1, bool)
TILEJIT_DTYPE_TAG(i8, i8, int8_t)
TILEJIT_DTYPE_TAG(u8, u8, uint8_t)
TILEJIT_DTYPE_TAG(i32, i32, int32_t)
TILEJIT_DTYPE_TAG(i64, i64, int64_t)
TILEJIT_DTYPE_TAG(f16, f16, ::tilejit::half)
TILEJIT_DTYPE_TAG(bf16, bf16, ::tilejit::bfloat16)
TILEJIT_DTYPE_TAG(f32, f32, float)
TILEJIT_DTYPE_TAG(f64, f64, double)
TILEJIT_DTYPE_TAG(f8e4m3, f8e4m3, ::tilejit::float8_e4m3)
TILEJIT_DTYPE_TAG(f8e5m2, f8e5m2, ::tilejit::float8_e5m2)
#undef TILEJIT_DTYPE_TAG

namespace detail {
template <class T> struct tag_of { using type = void; };
template <> struct tag_of<i1> { using type = i1; };
template <> struct tag_of<i8> { using type = i8; };
template <> struct tag_of<u8> { using type = u8; };
template <> struct tag_of<i32> { using type = i32; };
template <> struct tag_of<i64> { using type = i64; };
template <> struct tag_of<f16> { using type = f16; };
template <> struct tag_of<bf16> { using type = bf16; };
template <> struct tag_of<f32> { using type = f32; };
template <> struct tag_of<f64> { using type = f64; };
template <> struct tag_of<f8e4m3> { using type = f8e4m3; };
template <> struct tag_of<f8e5m2> { using type = f8e5m2; };
template <> struct tag_of<bool> { using type = i1; };
template <> struct tag_of<int8_t> { using type = i8; };
template <> struct tag_of<uint8_t> { using type = u8; };
template <> struct tag_of<int32_t> { using type = i32; };
template <> struct tag_of<int64_t> { using type = i64; };
template <> struct tag_of<float> { using type = f32; };
template <> struct tag_of<double> { using type = f64; };
template <> struct tag_of<::tilejit::half> { using type = f16; };
template <> struct tag_of<::tilejit::bfloat16> { using type = bf16; };
template <> struct tag_of<::tilejit::float8_e4m3> { using type = f8e4m3; };
template <> struct tag_of<::tilejit::float8_e5m2> { using type = f8e5m2; };
}  // namespace detail

/// The tag of an element type, whether spelled as a tag or as a C++ type.
template <class T>
using tag_t = typename detail::tag_of<std::remove_cvref_t<T>>::type;

template <class T>
inline constexpr bool is_dtype_v = !std::is_void_v<tag_t<T>>;

template <class T>
inline constexpr ir::DType dtype_v = tag_t<T>::code;

template <class T>
inline constexpr bool is_float_v = ir::is_float(dtype_v<T>);
template <class T>
inline constexpr bool is_int_v = ir::is_int(dtype_v<T>);
template <class T>
inline constexpr bool is_bool_v = ir::is_bool(dtype_v<T>);
template <class T>
inline constexpr bool is_fp8_v = ir::is_fp8(dtype_v<T>);

/// Type rules of binary arithmetic (written down in README "Type rules"):
///  - equal types give that type;
///  - two integer types give the wider one (signed when widths tie);
///  - anything else (int with float, two different float types, bool with non-bool)
///    is a compile error asking for an explicit .to<T>().
template <class A, class B>
struct promote {
  using a = tag_t<A>;
  using b = tag_t<B>;
  static constexpr bool same = std::is_same_v<a, b>;
  static constexpr bool both_int = is_int_v<a> && is_int_v<b>;
  static constexpr bool ok = same || both_int;
  using type = std::conditional_t<
      same, a,
      std::conditional_t<(ir::size_of(dtype_v<a>) > ir::size_of(dtype_v<b>)), a,
                         std::conditional_t<(ir::size_of(dtype_v<b>) > ir::size_of(dtype_v<a>)), b,
                                            std::conditional_t<ir::is_signed_int(dtype_v<a>), a, b>>>>;
};

}  // namespace dsl
}  // namespace tilejit
