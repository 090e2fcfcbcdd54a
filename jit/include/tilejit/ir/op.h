// The IR's operations and their static properties, all generated from ops.def: how passes may treat an op
// (its kind), what it does (its category), how many operands it takes, how its integer attributes are laid
// out (the typed struct of attributes.h that reads them) and whether it yields a value. Nothing else lists
// ops by hand: a predicate over ops is written on these properties, and a switch over Op lists every op.
#pragma once

#include <cstdint>
#include <string_view>

namespace tilejit::ir {

enum class Op : uint8_t {
#define TILEJIT_OP(Name, Kind, Category, Operands, Attrs, Result, Text) Name,
#include "tilejit/ir/ops.def"
};

/// How passes may treat an op.
enum class OpKind : uint8_t {
  Pure,    ///< a function of its operands: hash-consed, freely moved, removed when unused
  Effect,  ///< ordered with the other effects, never merged
  Region,  ///< owns nested regions (a loop body, an if's branches, a reduction's combine function)
  Arg,     ///< a parameter of the kernel or of a region
};

/// What an op does: which family of passes reads it and which part of the emitter prints it.
enum class OpCategory : uint8_t {
  tensor,     ///< a tensor handle (parameter, array element, view): an address and sizes, not a register value
  leaf,       ///< a value made from no other value (constant, program id, scalar parameter, tensor size)
  movement,   ///< the same elements in another shape or register layout (broadcast, reshape, permute)
  cast,       ///< elementwise: a conversion to the node's dtype
  unary,      ///< elementwise: one operand
  binary,     ///< elementwise: two operands of the result's dtype
  compare,    ///< elementwise: two operands, an i1 result
  select,     ///< elementwise: where(cond, a, b)
  ternary,    ///< elementwise: three operands of the result's dtype (fma(a, b, c) = a * b + c, rounded once)
  reduction,  ///< along one axis, with a built-in or a user-written combine function
  product,    ///< a matrix product (dot)
  memory,     ///< pointer-style loads, stores and atomics
  tma,        ///< tensor-memory-accelerator tile loads, stores and prefetches
  control,    ///< structured control flow: loops, ifs, their arguments, results and yields
  schedule,   ///< where asynchronous work is issued, awaited and released (passes::insert_schedule_ops)
};

/// The typed attribute struct (attributes.h) that reads an op's integer attributes.
enum class AttrsKind : uint8_t {
  NoAttrs, ParamAttrs, DimAttrs, ArrayElemAttrs, MergeViewAttrs, MakeViewAttrs, ConstAttrs, AxisAttrs,
  ArangeAttrs, PermuteAttrs, ReduceAttrs, IndexAttrs, DotAttrs, AccessAttrs, TmaAttrs, ForAttrs, IfAttrs,
  ScheduleAttrs,
};

/// The operand count of an op that takes a variable number (its layout is in ir.h's table).
inline constexpr int kVariadic = -1;

OpKind kind_of(Op op);
OpCategory category_of(Op op);
AttrsKind attrs_kind_of(Op op);
/// The fixed operand count of `op`, or kVariadic.
int operand_count(Op op);
/// True when `op` yields a register value (false for tensor handles, stores, region ops, yields and schedule ops).
bool yields_value(Op op);
/// The printer's name of `op` ("tma.load").
std::string_view name_of(Op op);
/// The printer's name of a category ("binary").
std::string_view name_of(OpCategory c);

/// Elementwise ops: cast, unary, binary, compare, select and ternary (the categories the elementwise emitter
/// prints).
constexpr bool is_elementwise(OpCategory c) {
  return c == OpCategory::cast || c == OpCategory::unary || c == OpCategory::binary || c == OpCategory::compare ||
         c == OpCategory::select || c == OpCategory::ternary;
}
inline bool is_elementwise(Op op) { return is_elementwise(category_of(op)); }
/// True for the schedule ops (TmaIssue ... WarpProducer).
inline bool is_schedule_op(Op op) { return category_of(op) == OpCategory::schedule; }

}  // namespace tilejit::ir
