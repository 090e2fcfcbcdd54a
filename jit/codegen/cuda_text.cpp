// CUDA C++ spelling of IR types, constants and elementwise operations.
#include "codegen/cuda_text.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"

namespace tilejit::codegen::detail {

using ir::DType;
using ir::Op;

std::string reg_type(DType t) {
  switch (t) {
    case DType::i1: return "bool";
    case DType::i8: return "signed char";
    case DType::u8: return "unsigned char";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::f16: return "tj::f16_t";
    case DType::bf16: return "tj::bf16_t";
    case DType::f32: return "float";
    case DType::f64: return "double";
    case DType::f8e4m3: return "tj::e4m3_t";
    case DType::f8e5m2: return "tj::e5m2_t";
  }
  return "?";
}

std::string mem_type(DType t) { return t == DType::i1 ? "unsigned char" : reg_type(t); }

int ptx_elemtype(DType t) {
  switch (t) {
    case DType::i1: case DType::i8: case DType::u8: case DType::f8e4m3: case DType::f8e5m2: return 0;  // u8
    case DType::f16: return 6;
    case DType::bf16: return 10;
    case DType::i32: return 3;
    case DType::i64: return 5;
    case DType::f32: return 7;
    case DType::f64: return 9;
  }
  return 0;
}

std::string int_literal(DType t, int64_t v) {
  switch (t) {
    case DType::i1: return v ? "true" : "false";
    case DType::i64:
      if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807ll - 1)";
      return std::to_string(v) + "ll";
    case DType::i32:
      if (v == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return std::to_string(v);
    default:
      return std::to_string(v);
  }
}

namespace {
std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string float_literal(double v, bool single) {
  if (std::isnan(v)) return single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000ll)";
  if (std::isinf(v))
    return single ? (v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)")
                  : (v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__longlong_as_double(0xfff0000000000000ll)");
  char buf[64];
  for (int prec = single ? 6 : 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    const double back = std::strtod(buf, nullptr);
    if (single ? static_cast<float>(back) == static_cast<float>(v) && std::signbit(back) == std::signbit(v)
               : back == v && std::signbit(back) == std::signbit(v))
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return single ? s + "f" : s;
}
}  // namespace

std::string literal(const ir::Graph& g, ir::NodeId konst) {
  const DType t = g.node(konst).dtype;
  if (!ir::is_float(t)) return int_literal(t, g.const_i(konst));
  const double v = g.const_f(konst);
  switch (t) {
    case DType::f32: return float_literal(v, true);
    case DType::f64: return float_literal(v, false);
    case DType::f16: return "tj::f16_t(" + hex(ir::to_f16_bits(v)) + ")";
    case DType::bf16: return "tj::bf16_t(" + hex(ir::to_bf16_bits(v)) + ")";
    case DType::f8e4m3: return "tj::e4m3_t(" + hex(ir::to_e4m3_bits(v)) + ")";
    case DType::f8e5m2: return "tj::e5m2_t(" + hex(ir::to_e5m2_bits(v)) + ")";
    default: break;
  }
  throw InternalError("literal: unexpected type");
}

DType compute_type(DType t) { return t == DType::f16 || t == DType::bf16 ? DType::f32 : t; }

std::string to_compute(const std::string& x, DType t) {
  if (t == DType::f16) return "tj::f16_to_f32(" + x + ")";
  if (t == DType::bf16) return "tj::bf16_to_f32(" + x + ")";
  return x;
}

std::string from_compute(const std::string& x, DType t) {
  if (t == DType::f16) return "tj::f32_to_f16(" + x + ")";
  if (t == DType::bf16) return "tj::f32_to_bf16(" + x + ")";
  return x;
}

namespace {
/// A value of float type `from` as an f32 or f64 expression (exact).
std::string widen_float(const std::string& x, DType from) {
  switch (from) {
    case DType::f16: return "tj::f16_to_f32(" + x + ")";
    case DType::bf16: return "tj::bf16_to_f32(" + x + ")";
    case DType::f8e4m3: return "tj::e4m3_to_f32(" + x + ")";
    case DType::f8e5m2: return "tj::e5m2_to_f32(" + x + ")";
    default: return x;
  }
}
}  // namespace

std::string cast(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  if (to == DType::i1) {
    if (ir::is_float(from)) return "(" + widen_float(x, from) + " != 0)";
    return "(" + x + " != 0)";
  }
  if (from == DType::i1) {
    if (to == DType::f64) return "(" + x + " ? 1.0 : 0.0)";
    if (ir::is_float(to)) return cast("(" + x + " ? 1.0f : 0.0f)", DType::f32, to);
    return "static_cast<" + reg_type(to) + ">(" + x + ")";
  }
  if (!ir::is_float(from) && !ir::is_float(to)) return "static_cast<" + reg_type(to) + ">(" + x + ")";
  if (ir::is_float(from) && !ir::is_float(to)) {
    // Float -> integer: truncate toward zero, saturate, NaN -> 0.
    const bool dbl = from == DType::f64;
    const std::string w = widen_float(x, from);
    switch (to) {
      case DType::i8: return std::string(dbl ? "tj::f64_to_i8(" : "tj::f32_to_i8(") + w + ")";
      case DType::u8: return std::string(dbl ? "tj::f64_to_u8(" : "tj::f32_to_u8(") + w + ")";
      case DType::i32: return std::string(dbl ? "tj::f64_to_i32(" : "tj::f32_to_i32(") + w + ")";
      case DType::i64: return std::string(dbl ? "tj::f64_to_i64(" : "tj::f32_to_i64(") + w + ")";
      default: break;
    }
    throw InternalError("cast: unexpected integer type");
  }
  if (!ir::is_float(from)) {
    // Integer -> float, rounding once. A narrower float goes through f32 rounded to odd (exact for 8-bit
    // integers), never through f64: no double arithmetic, and ptxas of CUDA 13.0 was seen to reuse one
    // element's f64 -> f32 conversion for the next one in that path (docs/testing.md, seed 19684).
    const bool wide = from == DType::i64;
    switch (to) {
      case DType::f32: return std::string(wide ? "__ll2float_rn(" : "static_cast<float>(") + x + ")";
      case DType::f64: return std::string(wide ? "__ll2double_rn(" : "static_cast<double>(") + x + ")";
      default: {
        const std::string f = from == DType::i32 ? "tj::i32_to_f32_odd(" + x + ")"
                              : wide             ? "tj::i64_to_f32_odd(" + x + ")"
                                                 : "static_cast<float>(" + x + ")";
        return cast(f, DType::f32, to);
      }
    }
  }
  // Float -> float.
  if (from == DType::f64) {
    switch (to) {
      case DType::f32: return "__double2float_rn(" + x + ")";
      case DType::f16: return "tj::f64_to_f16(" + x + ")";
      case DType::bf16: return "tj::f64_to_bf16(" + x + ")";
      case DType::f8e4m3: return "tj::f64_to_e4m3(" + x + ")";
      case DType::f8e5m2: return "tj::f64_to_e5m2(" + x + ")";
      default: break;
    }
  }
  const std::string f = widen_float(x, from);  // exact f32
  switch (to) {
    case DType::f32: return f;
    case DType::f64: return "static_cast<double>(" + f + ")";
    case DType::f16: return "tj::f32_to_f16(" + f + ")";
    case DType::bf16: return "tj::f32_to_bf16(" + f + ")";
    case DType::f8e4m3: return "tj::f32_to_e4m3(" + f + ")";
    case DType::f8e5m2: return "tj::f32_to_e5m2(" + f + ")";
    default: break;
  }
  throw InternalError("cast: unexpected float conversion");
}

std::string binary(Op op, DType t, const std::string& a0, const std::string& b0) {
  const DType ct = compute_type(t);
  const std::string a = to_compute(a0, t), b = to_compute(b0, t);
  // Floats (f16 and bf16 compute in f32) round each operation once. Integers: i32 / i64 wrap through unsigned
  // arithmetic; 8-bit types compute in int and truncate.
  const bool fp = ct == DType::f32 || ct == DType::f64, s = ct == DType::f32;
  const bool narrow = t == DType::i8 || t == DType::u8;
  const std::string rt = reg_type(t);
  auto wrap = [&](const std::string& e) { return from_compute(e, t); };
  auto call = [](const char* f, const std::string& x, const std::string& y) {
    return std::string(f) + "(" + x + ", " + y + ")";
  };
  auto truncate = [&](const std::string& e) { return "static_cast<" + rt + ">(" + e + ")"; };
  switch (op) {
    case Op::Add:
      if (fp) return wrap(call(s ? "__fadd_rn" : "__dadd_rn", a, b));
      return narrow ? truncate(a + " + " + b) : call("tj::add_wrap", a, b);
    case Op::Sub:
      if (fp) return wrap(call(s ? "__fsub_rn" : "__dsub_rn", a, b));
      return narrow ? truncate(a + " - " + b) : call("tj::sub_wrap", a, b);
    case Op::Mul:
      if (fp) return wrap(call(s ? "__fmul_rn" : "__dmul_rn", a, b));
      return narrow ? truncate(a + " * " + b) : call("tj::mul_wrap", a, b);
    case Op::Div:
      if (fp) return wrap(call(s ? "__fdiv_rn" : "__ddiv_rn", a, b));
      if (narrow) return truncate(call("tj::div_narrow", a, b));
      return call(t == DType::i32 ? "tj::div_i32" : "tj::div_i64", a, b);
    case Op::Rem:
      if (fp) break;
      if (narrow) return truncate(call("tj::rem_narrow", a, b));
      return call(t == DType::i32 ? "tj::rem_i32" : "tj::rem_i64", a, b);
    case Op::Min:
    case Op::Max: {
      const bool min = op == Op::Min;
      if (fp) {
        const char* f = min ? (s ? "tj::min_f32" : "tj::min_f64") : (s ? "tj::max_f32" : "tj::max_f64");
        return wrap(call(f, a, b));
      }
      // i64 and bool have no min / max instruction for ptxas to fuse; the other integers go through
      // tj::min_i32 / max_i32.
      if (t == DType::i64 || t == DType::i1)
        return min ? "(" + a + " < " + b + " ? " + a + " : " + b + ")" : "(" + a + " < " + b + " ? " + b + " : " + a + ")";
      const std::string m = call(min ? "tj::min_i32" : "tj::max_i32", a, b);
      return narrow ? truncate(m) : m;
    }
    case Op::And: return t == DType::i1 ? "(" + a + " && " + b + ")" : truncate(a + " & " + b);
    case Op::Or: return t == DType::i1 ? "(" + a + " || " + b + ")" : truncate(a + " | " + b);
    case Op::Xor: return t == DType::i1 ? "(" + a + " != " + b + ")" : truncate(a + " ^ " + b);
    case Op::Eq: return "(" + a + " == " + b + ")";
    case Op::Ne: return "(" + a + " != " + b + ")";
    case Op::Lt: return "(" + a + " < " + b + ")";
    case Op::Le: return "(" + a + " <= " + b + ")";
    case Op::Gt: return "(" + a + " > " + b + ")";
    case Op::Ge: return "(" + a + " >= " + b + ")";
    // The emitter prints the other ops elsewhere.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_UNARY_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError(std::string("binary: unexpected ") + (fp ? "float" : "integer") + " op " +
                      std::string(ir::name_of(op)));
}

std::string unary(Op op, DType t, const std::string& a0) {
  const DType ct = compute_type(t);
  const std::string a = to_compute(a0, t);
  const bool fp = ct == DType::f32 || ct == DType::f64, s = ct == DType::f32;
  const bool narrow = t == DType::i8 || t == DType::u8;
  const std::string rt = reg_type(t);
  // The operand through function f32 or f64, after the compute type.
  auto fn = [&](const char* f32, const char* f64) { return from_compute(std::string(s ? f32 : f64) + "(" + a + ")", t); };
  switch (op) {
    case Op::Not: return "!" + a0;
    case Op::Neg: {
      // A negative literal operand is parenthesised: "--0.75" would be a decrement.
      const std::string neg = a.front() == '-' ? "-(" + a + ")" : "-" + a;
      if (fp) return from_compute(neg, t);
      return narrow ? "static_cast<" + rt + ">(" + neg + ")" : "tj::neg_wrap(" + a + ")";
    }
    case Op::Abs:
      if (fp) return fn("fabsf", "fabs");
      if (t == DType::u8) return a;
      if (narrow) return "static_cast<" + rt + ">(" + a + " < 0 ? -" + a + " : " + a + ")";
      return "(" + a + " < 0 ? tj::neg_wrap(" + a + ") : " + a + ")";
    // Float functions.
    case Op::Exp: if (fp) return fn("expf", "exp"); break;
    case Op::Exp2: if (fp) return fn("tj::exp2_f32", "exp2"); break;
    case Op::Log: if (fp) return fn("logf", "log"); break;
    case Op::Log2: if (fp) return fn("log2f", "log2"); break;
    case Op::Sqrt: if (fp) return fn("__fsqrt_rn", "__dsqrt_rn"); break;
    case Op::Rsqrt: if (fp) return fn("rsqrtf", "rsqrt"); break;
    case Op::Sin: if (fp) return fn("sinf", "sin"); break;
    case Op::Cos: if (fp) return fn("cosf", "cos"); break;
    case Op::Tanh: if (fp) return fn("tanhf", "tanh"); break;
    case Op::Sigmoid: if (fp) return fn("tj::sigmoid_f32", "tj::sigmoid_f64"); break;
    case Op::Erf: if (fp) return fn("erff", "erf"); break;
    case Op::TanhApprox: if (fp) return fn("tj::tanh_approx_f32", "tanh"); break;
    // The emitter prints the other ops elsewhere.
    TILEJIT_NON_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_BINARY_OPS(TILEJIT_CASE) TILEJIT_COMPARE_OPS(TILEJIT_CASE)
    case Op::Cast: case Op::Where: case Op::Fma:
      break;
  }
  throw InternalError(std::string("unary: unexpected ") + (fp ? "float" : "integer") + " op " +
                      std::string(ir::name_of(op)));
}

std::string fma(DType t, const std::string& a, const std::string& b, const std::string& c) {
  if (compute_type(t) == DType::f64) return "__fma_rn(" + a + ", " + b + ", " + c + ")";
  if (compute_type(t) != DType::f32) throw InternalError("fma: not a float type");
  return from_compute("__fmaf_rn(" + to_compute(a, t) + ", " + to_compute(b, t) + ", " + to_compute(c, t) + ")", t);
}

std::string argmax_greater(DType t, const std::string& a0, const std::string& b0) {
  const std::string a = to_compute(a0, t), b = to_compute(b0, t);
  if (ir::is_float(t)) return "(" + a + " > " + b + " || (" + a + " != " + a + " && " + b + " == " + b + "))";
  return "(" + a + " > " + b + ")";
}

std::string base_name(const std::string& file) {
  const auto slash = file.find_last_of('/');
  return slash == std::string::npos ? file : file.substr(slash + 1);
}

std::string sanitize(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) c = '_';
  return s;
}

}  // namespace tilejit::codegen::detail
