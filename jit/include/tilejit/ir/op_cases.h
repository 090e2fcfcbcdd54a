// The ops of each category of ops.def as X-macros, for switches over ops that treat a whole category
// alike: `TILEJIT_BINARY_OPS(TILEJIT_CASE)` is the case labels of every binary op. A switch over ops lists
// every op (no `default:`, docs/internals.md), and these keep that list one definition per category.
// tests/unit/test_ir.cpp checks that each list holds exactly the ops ops.def puts in its category.
#pragma once

#include "tilejit/ir/op.h"

/// One case label: TILEJIT_UNARY_OPS(TILEJIT_CASE) expands to `case Op::Neg: case Op::Not: ...`.
#define TILEJIT_CASE(Name) case ::tilejit::ir::Op::Name:

#define TILEJIT_TENSOR_OPS(X) X(ParamTensor) X(ParamTensorArray) X(ArrayElem) X(MergeView) X(MakeView)
#define TILEJIT_LEAF_OPS(X) X(ParamScalar) X(TensorSize) X(TensorStride) X(Const) X(ProgramId) X(NumPrograms) X(TileGrid) X(Arange)
#define TILEJIT_MOVEMENT_OPS(X) X(Broadcast) X(Reshape) X(Permute) X(ConvertLayout)
#define TILEJIT_CAST_OPS(X) X(Cast)
#define TILEJIT_BINARY_OPS(X) X(Add) X(Sub) X(Mul) X(Div) X(Rem) X(Min) X(Max) X(And) X(Or) X(Xor)
#define TILEJIT_COMPARE_OPS(X) X(Eq) X(Ne) X(Lt) X(Le) X(Gt) X(Ge)
#define TILEJIT_UNARY_OPS(X) \
  X(Neg) X(Not) X(Abs) X(Exp) X(Exp2) X(Log) X(Log2) X(Sqrt) X(Rsqrt) X(Sin) X(Cos) X(Tanh) X(Sigmoid) X(Erf) X(TanhApprox)
#define TILEJIT_SELECT_OPS(X) X(Where)
#define TILEJIT_TERNARY_OPS(X) X(Fma)
#define TILEJIT_REDUCTION_OPS(X) X(ReduceSum) X(ReduceMax) X(ReduceMin) X(ArgMax) X(Reduce) X(CombineArg) X(ReduceResult)
#define TILEJIT_PRODUCT_OPS(X) X(Dot)
#define TILEJIT_MEMORY_OPS(X) X(Load) X(Store) X(AtomicAdd)
#define TILEJIT_TMA_OPS(X) X(DescLoad) X(DescStore) X(DescPrefetch)
#define TILEJIT_CONTROL_OPS(X) X(For) X(LoopIndex) X(LoopArg) X(LoopResult) X(If) X(IfResult) X(Yield)
#define TILEJIT_SCHEDULE_OPS(X)                                                                                      \
  X(TmaIssue) X(PipeBegin) X(PipePrologue) X(PipeStage) X(PipeWait) X(PipeRefill) X(PipeRelease) X(PipeAdvance) \
  X(PipeEnd) X(WgmmaWait) X(CtaBarrier) X(ReuseFence) X(TurnStart) X(TurnWait) X(TurnPass) X(WarpProducer)

/// The elementwise categories together (ir::is_elementwise), and every other category together.
#define TILEJIT_ELEMENTWISE_OPS(X) \
  TILEJIT_CAST_OPS(X) TILEJIT_BINARY_OPS(X) TILEJIT_COMPARE_OPS(X) TILEJIT_UNARY_OPS(X) TILEJIT_SELECT_OPS(X) \
  TILEJIT_TERNARY_OPS(X)
#define TILEJIT_NON_ELEMENTWISE_OPS(X)                                                                        \
  TILEJIT_TENSOR_OPS(X) TILEJIT_LEAF_OPS(X) TILEJIT_MOVEMENT_OPS(X) TILEJIT_REDUCTION_OPS(X) TILEJIT_PRODUCT_OPS(X) \
  TILEJIT_MEMORY_OPS(X) TILEJIT_TMA_OPS(X) TILEJIT_CONTROL_OPS(X) TILEJIT_SCHEDULE_OPS(X)
