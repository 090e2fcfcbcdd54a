// Private parts of the CPU interpreter: block values, tensor values, element access and rounding functions.
#pragma once

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "tilejit/ir/dtype.h"
#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::interp::detail {

using ir::DType;

/// A block value. Float types keep their elements as doubles already rounded to
/// the type; integer types and bool keep int64 values wrapped to the type's width
/// (bool is 0 or 1). Only the vector matching the type is used.
struct Block {
  DType dtype = DType::f32;
  ir::Shape shape;
  std::vector<double> f;
  std::vector<int64_t> i;

  size_t size() const { return is_float(dtype) ? f.size() : i.size(); }
  /// Sets type and shape and sizes the element vector (keeping its capacity).
  void reset(DType t, const ir::Shape& s) {
    dtype = t;
    shape = s;
    const auto n = static_cast<size_t>(s.numel());
    if (is_float(t)) {
      f.resize(n);
    } else {
      i.resize(n);
    }
  }
};

/// A global tensor seen by the program: a kernel argument, an element of a tensor
/// array argument, or a view of one of those.
struct TensorValue {
  std::byte* base = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::array<int64_t, kMaxTensorRank> sizes{};
  std::array<int64_t, kMaxTensorRank> strides{};
  /// The bytes the kernel argument this tensor derives from may touch: [root_lo, root_hi).
  const std::byte* root_lo = nullptr;
  const std::byte* root_hi = nullptr;
  int param = -1;              ///< parameter index of that argument
  int64_t array_index = -1;    ///< index into a tensor array argument, or -1
  bool view = false;           ///< made by make_view / rows (its base and extent are computed in the kernel)
};

/// A failure found by an operation; the interpreter adds the op's source line and the program id.
struct OpError {
  std::string rule, value, limit;
};

// ---- integers -------------------------------------------------------------------

/// Wraps `v` to the width of integer type `t` (bool: nonzero -> 1).
inline int64_t wrap(DType t, int64_t v) {
  switch (t) {
    case DType::i1: return v != 0;
    case DType::i8: return static_cast<int8_t>(v);
    case DType::u8: return static_cast<uint8_t>(v);
    case DType::i32: return static_cast<int32_t>(v);
    default: return v;
  }
}
inline int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrapping_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

/// int64 -> double rounded to odd at 53 bits: a second rounding to any format of
/// at most 51 significant bits then gives the correctly rounded result.
inline double int_to_double_odd(int64_t v) {
  const bool neg = v < 0;
  uint64_t u = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const int width = std::bit_width(u);
  double d;
  if (width <= 53) {
    d = static_cast<double>(u);
  } else {
    const int shift = width - 53;
    uint64_t top = u >> shift;
    if (u & ((uint64_t{1} << shift) - 1)) top |= 1;
    d = std::ldexp(static_cast<double>(top), shift);
  }
  return neg ? -d : d;
}

/// float -> integer type `t`: truncate toward zero, saturate, NaN -> 0 (cvt.rzi.sat); bool: x != 0.
inline int64_t float_to_int(DType t, double x) {
  if (t == DType::i1) return x != 0;
  if (std::isnan(x)) return 0;
  double lo, hi;
  switch (t) {
    case DType::i8: lo = -128.0; hi = 127.0; break;
    case DType::u8: lo = 0.0; hi = 255.0; break;
    case DType::i32: lo = -2147483648.0; hi = 2147483647.0; break;
    default:
      if (x >= 9223372036854775808.0) return std::numeric_limits<int64_t>::max();
      if (x < -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(std::trunc(x));
  }
  const double v = std::trunc(x);
  if (v <= lo) return static_cast<int64_t>(lo);
  if (v >= hi) return static_cast<int64_t>(hi);
  return static_cast<int64_t>(v);
}

// ---- floats ----------------------------------------------------------------------------

/// NaN-propagating min / max (a NaN operand gives NaN); -0 orders below +0.
inline double fmin_nan(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x == y) return std::signbit(x) ? x : y;
  return x < y ? x : y;
}
inline double fmax_nan(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
  if (x == y) return std::signbit(x) ? y : x;
  return x > y ? x : y;
}

/// minNum / maxNum: a NaN operand gives the other operand (two NaNs give NaN); -0 orders below +0.
/// What the TMA unit's min and max reductions do (measured on an H100, docs/tma_hardware.md).
inline double fmin_num(double x, double y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  return fmin_nan(x, y);
}
inline double fmax_num(double x, double y) {
  if (std::isnan(x)) return y;
  if (std::isnan(y)) return x;
  return fmax_nan(x, y);
}

// ---- narrow floats ----------------------------------------------------------------

/// f16 bit pattern -> value (table built once from ir::f16_bits_to_double).
const float* f16_table();
inline double f16_value(uint16_t bits) { return f16_table()[bits]; }
inline double bf16_value(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

/// Round-to-nearest-even float -> bf16 bits; NaN gives the canonical 0x7fff.
inline uint16_t bf16_bits_of_float(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// Round-to-nearest-even float -> f16 bits; NaN gives the canonical 0x7fff.
inline uint16_t f16_bits_of_float(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return 0x7fff;
  if (ax >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 (and inf) rounds to inf
  if (ax < 0x38800000u) {                         // below 2^-14: subnormal f16 (quantum 2^-24) or zero
    const float scaled = std::bit_cast<float>(ax) * 16777216.0f;  // exact: a power-of-two scaling
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
  r -= (127u - 15u) << 23;
  return sign | static_cast<uint16_t>(r >> 13);
}

/// Canonical quiet NaN of a float type as the double that represents it (written back
/// to memory it gives 0x7fffffff for f32, 0x7fff for f16/bf16, all ones for f64).
inline double canonical_nan(DType t) {
  if (t == DType::f32) return static_cast<double>(std::bit_cast<float>(0x7fffffffu));
  if (t == DType::f64) return std::bit_cast<double>(uint64_t{0x7fffffffffffffffull});
  return std::numeric_limits<double>::quiet_NaN();
}

/// The result of an arithmetic op in type t from its exact (or double) value:
/// f16 and bf16 go through f32 first, as the GPU evaluates them in f32.
inline double round_arith(DType t, double x) {
  switch (t) {
    case DType::f64: return x;
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::bf16: return bf16_value(bf16_bits_of_float(static_cast<float>(x)));
    case DType::f16: return f16_value(f16_bits_of_float(static_cast<float>(x)));
    default: return ir::round_to(t, x);
  }
}

/// Rounds a double once to float type t (conversions).
inline double round_once(DType t, double x) {
  switch (t) {
    case DType::f64: return x;
    case DType::f32: return static_cast<double>(static_cast<float>(x));
    case DType::bf16:
    case DType::f16: {
      const auto fl = static_cast<float>(x);
      if (static_cast<double>(fl) == x || std::isnan(x))
        return t == DType::bf16 ? bf16_value(bf16_bits_of_float(fl)) : f16_value(f16_bits_of_float(fl));
      return ir::round_to(t, x);
    }
    default: return ir::round_to(t, x);
  }
}

// ---- element access in memory ---------------------------------------------------------

template <DType T>
using dtype_constant = std::integral_constant<DType, T>;

/// Calls f(dtype_constant<t>{}) for the runtime type t.
template <class F>
decltype(auto) dispatch(DType t, F&& f) {
  switch (t) {
    case DType::i1: return f(dtype_constant<DType::i1>{});
    case DType::i8: return f(dtype_constant<DType::i8>{});
    case DType::u8: return f(dtype_constant<DType::u8>{});
    case DType::i32: return f(dtype_constant<DType::i32>{});
    case DType::i64: return f(dtype_constant<DType::i64>{});
    case DType::f16: return f(dtype_constant<DType::f16>{});
    case DType::bf16: return f(dtype_constant<DType::bf16>{});
    case DType::f32: return f(dtype_constant<DType::f32>{});
    case DType::f64: return f(dtype_constant<DType::f64>{});
    case DType::f8e4m3: return f(dtype_constant<DType::f8e4m3>{});
    case DType::f8e5m2: return f(dtype_constant<DType::f8e5m2>{});
  }
  return f(dtype_constant<DType::f32>{});
}

template <class U>
inline U load_raw(const std::byte* p) {
  U v;
  std::memcpy(&v, p, sizeof(U));
  return v;
}
template <class U>
inline void store_raw(std::byte* p, U v) {
  std::memcpy(p, &v, sizeof(U));
}

/// Reads a float element of type T at p.
template <DType T>
inline double read_float(const std::byte* p) {
  if constexpr (T == DType::f32) return load_raw<float>(p);
  else if constexpr (T == DType::f64) return load_raw<double>(p);
  else if constexpr (T == DType::f16) return f16_value(load_raw<uint16_t>(p));
  else if constexpr (T == DType::bf16) return bf16_value(load_raw<uint16_t>(p));
  else if constexpr (T == DType::f8e4m3) return ir::e4m3_bits_to_double(load_raw<uint8_t>(p));
  else return ir::e5m2_bits_to_double(load_raw<uint8_t>(p));
}
/// Writes a float element of type T (the value is already representable in T).
template <DType T>
inline void write_float(std::byte* p, double v) {
  if constexpr (T == DType::f32) store_raw<float>(p, static_cast<float>(v));
  else if constexpr (T == DType::f64) store_raw<double>(p, v);
  else if constexpr (T == DType::f16) store_raw<uint16_t>(p, f16_bits_of_float(static_cast<float>(v)));
  else if constexpr (T == DType::bf16) store_raw<uint16_t>(p, bf16_bits_of_float(static_cast<float>(v)));
  else if constexpr (T == DType::f8e4m3) store_raw<uint8_t>(p, ir::to_e4m3_bits(v));
  else store_raw<uint8_t>(p, ir::to_e5m2_bits(v));
}
/// Reads an integer or bool element of type T at p.
template <DType T>
inline int64_t read_int(const std::byte* p) {
  if constexpr (T == DType::i1) return load_raw<uint8_t>(p) != 0;
  else if constexpr (T == DType::i8) return load_raw<int8_t>(p);
  else if constexpr (T == DType::u8) return load_raw<uint8_t>(p);
  else if constexpr (T == DType::i32) return load_raw<int32_t>(p);
  else return load_raw<int64_t>(p);
}
template <DType T>
inline void write_int(std::byte* p, int64_t v) {
  if constexpr (T == DType::i1) store_raw<uint8_t>(p, static_cast<uint8_t>(v != 0));
  else if constexpr (T == DType::i8) store_raw<int8_t>(p, static_cast<int8_t>(v));
  else if constexpr (T == DType::u8) store_raw<uint8_t>(p, static_cast<uint8_t>(v));
  else if constexpr (T == DType::i32) store_raw<int32_t>(p, static_cast<int32_t>(v));
  else store_raw<int64_t>(p, v);
}

// ---- formatting -------------------------------------------------------------------------

/// "[3, 7]": the multi-index of element `lane` of a block of shape s ("" for scalars).
std::string lane_str(const ir::Shape& s, int64_t lane);

// ---- block computations (interp_compute.cpp); `out` has its dtype and shape set ------------

void eval_binary(ir::Op op, const Block& a, const Block& b, Block& out);
void eval_compare(ir::Op op, const Block& a, const Block& b, Block& out);
void eval_unary(ir::Op op, const Block& x, Block& out);
void eval_cast(const Block& x, Block& out);
void eval_where(const Block& c, const Block& a, const Block& b, Block& out);
/// a * b + c rounded once (f16 / bf16: once to f32, then to the storage type).
void eval_fma(const Block& a, const Block& b, const Block& c, Block& out);
void eval_broadcast(const Block& x, Block& out);
void eval_permute(const Block& x, std::span<const int64_t> perm, Block& out);
/// A reduction of `axis` as [outer, len, inner]: element (o, k, i) is at (o * len + k) * inner + i.
struct ReduceGeom {
  int64_t outer = 1, len = 1, inner = 1;
};
ReduceGeom reduce_geometry(const ir::Shape& s, int axis);
void eval_reduce(ir::Op op, const Block& x, int axis, Block& out);
/// `tf32`: f32 operands are first truncated to tf32 (ir::to_tf32), as Precision::tf32 asks.
void eval_dot(const Block& a, const Block& b, const Block& acc, Block& out, bool tf32);

// ---- memory (interp_memory.cpp) --------------------------------------------------------------

/// The name of the tensor in messages: "arg0", "arg2[5]", "a view of arg0".
std::string tensor_name(const ir::Graph& g, const TensorValue& t);
/// The tensor value of a kernel argument (its root range is the argument's own extent).
TensorValue tensor_of_arg(const TensorArg& a, int param, int64_t array_index);
/// Merges groups of consecutive dimensions (MergeView); OpError when a merged pair is not contiguous.
TensorValue merge_view(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> groups);
/// base + offset elements with the given sizes and strides (MakeView).
TensorValue make_view(const TensorValue& t, int64_t offset, std::span<const int64_t> sizes,
                      std::span<const int64_t> strides);

/// Pointer-style access. `mask` may be null; `other` is used for masked-off loads.
void eval_load(const ir::Graph& g, const TensorValue& t, const Block& offsets, const Block* mask, const Block* other,
               Block& out);
void eval_store(const ir::Graph& g, const TensorValue& t, const Block& offsets, const Block& value, const Block* mask,
                bool atomic_add);

/// TMA tile access with the hardware's semantics. `what` names the op in messages.
void eval_tma_load(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> coords, const ir::TmaAttrs& a,
                   Block& out);
void eval_tma_store(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> coords, const ir::TmaAttrs& a,
                    const Block& value);
/// Validates the global side of a TMA access (alignment, sizes, strides, and that a view stays inside its argument).
void check_tma_global(const ir::Graph& g, const char* what, const TensorValue& t, int rank);

}  // namespace tilejit::interp::detail
