// CUDA C++ spelling of IR types, constants and elementwise operations, as the emitter writes them.
#pragma once

#include <string>

#include "tilejit/ir/ir.h"

namespace tilejit::codegen::detail {

/// Register type of an element: f16/bf16/fp8 values are held as their bit patterns.
std::string reg_type(ir::DType t);
/// Memory (global / shared) type of an element: as reg_type, but i1 is one byte.
std::string mem_type(ir::DType t);
/// PTX tensormap element type code (fp8, i8, u8 and bool move as u8).
int ptx_elemtype(ir::DType t);

/// A constant of type `t` (the Const node's value as stored in the IR).
std::string literal(const ir::Graph& g, ir::NodeId konst);
std::string int_literal(ir::DType t, int64_t v);

/// Element `x` (a register value) converted from `from` to `to` with the IR's rounding rules.
std::string cast(const std::string& x, ir::DType from, ir::DType to);

/// Type in which arithmetic on `t` is done (f16/bf16 -> f32, else t).
ir::DType compute_type(ir::DType t);
/// Register value -> compute type, and back (rounding once).
std::string to_compute(const std::string& x, ir::DType t);
std::string from_compute(const std::string& x, ir::DType t);

/// Elementwise op on register values of type `t` (operand type for comparisons), giving a register value.
std::string binary(ir::Op op, ir::DType t, const std::string& a, const std::string& b);
std::string unary(ir::Op op, ir::DType t, const std::string& a);
/// fma(a, b, c) of float type t: a * b + c rounded once (f16 / bf16 in f32, then to t).
std::string fma(ir::DType t, const std::string& a, const std::string& b, const std::string& c);
/// True when `a` is "greater" than `b` for argmax: NaN above everything, so the first NaN wins.
std::string argmax_greater(ir::DType t, const std::string& a, const std::string& b);

/// The last path component of a file name.
std::string base_name(const std::string& file);
/// Characters outside [A-Za-z0-9_] become '_'.
std::string sanitize(const std::string& name);

}  // namespace tilejit::codegen::detail
