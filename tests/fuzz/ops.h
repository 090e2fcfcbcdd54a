// Runtime-typed doors into the DSL for the program generator: each function takes IR node ids whose
// element type and rank are known only at run time and calls the typed DSL function a user would call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::fuzz {

/// A block value while a generated kernel is traced: its node (element type and rank are read from it).
struct Val {
  ir::NodeId id = ir::kNoNode;
  ir::DType dtype = ir::DType::f32;
  int rank = 0;
};
/// A tensor while a generated kernel is traced: a parameter or a view of one.
struct TensorRef {
  ir::NodeId id = ir::kNoNode;
  ir::DType dtype = ir::DType::f32;
  int rank = 1;
  int placement = 0;  ///< dsl::Placement
};

Val as_val(ir::NodeId id);

enum class Unary { neg, abs, logical_not, exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, sigmoid, erf };
enum class Binary { add, sub, mul, div, rem, bit_and, bit_or, bit_xor, minimum, maximum, eq, ne, lt, le, gt, ge };
enum class Reduction { sum, max, min, argmax };

// Parameters (tilejit::detail::make_param, as a kernel lambda's parameter list makes them).
TensorRef param_tensor(ir::Graph& g, int index, ir::DType dtype, int rank);
Val param_scalar(ir::Graph& g, int index, ir::DType dtype);
/// A Meta<"name"> parameter (its value comes from the Config; it adds no node).
void param_block(ir::Graph& g, const std::string& name);

// Values.
Val program_id(int axis);
Val int_literal(ir::DType dtype, int64_t v);  ///< Scalar<T>(v)
Val unary(Unary op, const Val& x);
/// x op y; y has x's rank or rank 0. Element types must be equal, or both integers (promotion).
Val binary(Binary op, const Val& x, const Val& y);
/// x op literal (the literal adopts x's type: an int for integer x, a double for float x).
Val binary_literal(Binary op, const Val& x, double literal);
Val cast(const Val& x, ir::DType to);
Val where(const Val& cond, const Val& a, const Val& b);
Val reduce(Reduction op, const Val& x, int axis);
/// The same reduction written with dsl::reduce and a combine function (argmax of (value, index) pairs).
Val reduce_combine(Reduction op, const Val& x, int axis);
/// The C++ text of reduce_combine's function for `op`.
std::string combine_text(Reduction op);
Val expand_dims(const Val& x, int axis);
/// x.permute(perm): dimension d of the result is dimension perm[d] of x.
Val permute(const Val& x, const std::vector<int64_t>& perm);
/// arange(0, n).reshape({1, .., n, .., 1}): n at `axis` of a rank-`rank` block.
Val arange_along(int64_t n, int rank, int axis);
/// full<T>(shape, v).
Val full(ir::DType dtype, const std::vector<int64_t>& shape, double v);
/// full<T>(shape, s) for a scalar value s of type T.
Val full_of(const std::vector<int64_t>& shape, const Val& s);
/// num_programs(axis).
Val num_programs(int axis);
/// x.reshape(shape) (the same number of elements, any rank 1-5).
Val reshape(const Val& x, const std::vector<int64_t>& shape);
/// where(cond, a, literal): cond and a of one rank (broadcast), the literal of a's type.
Val where_literal(const Val& cond, const Val& a, double literal);
/// dot(a, b, acc) for 2-D blocks: a and b of one element type, acc of the product's accumulator type;
/// `precision` applies to f32 operands only (Precision::ieee multiplies them exactly, on CUDA cores).
Val dot(const Val& a, const Val& b, const Val& acc, ir::DotPrecision precision = ir::DotPrecision::tf32);

// Tensors.
Val tensor_size(const TensorRef& t, int d);
Val tensor_stride(const TensorRef& t, int d);
TensorRef with_placement(const TensorRef& t, int placement);
TensorRef rows(const TensorRef& t, const Val& start, const Val& end);
TensorRef make_view(const TensorRef& t, const Val& offset, const std::vector<Val>& sizes, const std::vector<Val>& strides);
Val descriptor_load(const TensorRef& t, const std::vector<Val>& coords, const std::vector<int64_t>& box,
                    const std::vector<int64_t>& estride, int fill);
void descriptor_store(const TensorRef& t, const std::vector<Val>& coords, const Val& v, int reduce);
void prefetch_descriptor(const TensorRef& t, const std::vector<int64_t>& box, const std::vector<int64_t>& estride, int fill);
/// load(t, offsets, mask, other) (no mask when mask.id is kNoNode).
Val load(const TensorRef& t, const Val& offsets, const Val& mask, double other);
void store(const TensorRef& t, const Val& offsets, const Val& v, const Val& mask);

// Control flow: the bodies trace the region's statements; they return the yielded value.
Val for_range(const Val& lo, const Val& hi, int64_t step, const Val& init, const std::function<Val(const Val&, const Val&)>& body);
/// for_range(lo, hi, step, ...) carrying 0-3 values (a tuple for two or more): the body gets the loop index and
/// the carried values and returns their next values (of the same types and shapes); returns the final values.
std::vector<Val> for_range_n(const Val& lo, const Val& hi, const Val& step, const std::vector<Val>& init,
                             const std::function<std::vector<Val>(const Val&, const std::vector<Val>&)>& body);
/// Both branches return a value of element type `dtype` and rank `rank`.
Val if_else(const Val& cond, ir::DType dtype, int rank, const std::function<Val()>& then_fn,
            const std::function<Val()>& else_fn);
void if_then(const Val& cond, const std::function<void()>& then_fn);

}  // namespace tilejit::fuzz
