// The integer attributes of IR nodes as typed structs. A node keeps its attributes as integers in the graph's
// pool (that is what hashing and hash-consing compare); each op's row in ops.def names the struct that reads
// and writes them (AttrsKind), and code reads them only through it: `ir::attrs<AxisAttrs>(g, id).axis`, never
// by position. Each struct decodes a pool (`decode`), encodes itself (`encode`) and the printer names its
// fields (attributes_text in ir.h). A new pool is written by `encode` (the front end's Graph::add takes the
// struct), so that one set of attributes has one pool: hashing and hash-consing compare pools.
// `well_formed` says whether a pool has the layout its op's struct expects: the verifier checks every node
// with it, and the printer shows a malformed pool by position.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tilejit/ir/op.h"

namespace tilejit::ir {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;
inline constexpr int kMaxRank = 5;

/// How a dot of f32 operands multiplies (Triton's input_precision): ieee multiplies the f32 values
/// (CUDA cores), tf32 first truncates each operand to tf32 (tensor cores' f32 input format).
enum class DotPrecision : int64_t { ieee = 0, tf32 = 1 };

/// How the descriptors of a TensorArray element are prefetched where the element is taken (ArrayElem's
/// second attribute): prefetch.tensormap (the default), a generic L2 prefetch of the descriptor's 128
/// bytes (prefetch.L2), or not at all (the first TMA access fetches it; an explicit
/// prefetch_descriptor still prefetches). A hint only: values are the same either way.
enum class ArrayPrefetch : int64_t { tensormap = 0, l2 = 1, none = 2 };

/// Where a pointer load was issued by passes::prefetch_loads (a hint for readers: same semantics).
enum class LoadAhead : int64_t {
  none = 0,             ///< where the program put it
  next_iteration = 1,   ///< in a loop body, for the next iteration
  first_iteration = 2,  ///< before the loop, for its first iteration
};

/// Where a pointer load or store asks the caches to keep its lines (Triton's eviction_policy): as usual, evicted
/// first (data read or written once: streaming), or evicted last (data read again soon, e.g. a row read twice).
/// A hint only: values are the same either way (the interpreter ignores it).
enum class Evict : int64_t { normal = 0, first = 1, last = 2 };

/// What a TMA store (DescStore) does with the values already in memory: overwrite them, or combine the tile
/// with them (cp.reduce.async.bulk .add / .min / .max).
enum class StoreReduce : int { none = 0, add = 1, min = 2, max = 3 };

/// Which products a WgmmaWait ends.
enum class WaitFor : uint8_t {
  issued = 0,              ///< the dot's own group, right after it is issued
  previous_iteration = 1,  ///< the previous iteration's (the dot's group stays in flight into the next one)
  last_iteration = 2,      ///< after the loop: the last iteration's, which stayed in flight
};

/// Why a CtaBarrier is there.
enum class BarrierReason : uint8_t {
  stage_free_in_flight = 0,  ///< after each warpgroup's wait for the previous iteration's products: its stage is free
  stage_free = 1,            ///< every thread has awaited the previous iteration's products (none stayed in flight to here)
};

/// No attributes.
struct NoAttrs {
  static constexpr AttrsKind kind = AttrsKind::NoAttrs;
  static NoAttrs decode(Op, std::span<const int64_t>) { return {}; }
  std::vector<int64_t> encode(Op) const { return {}; }
};

/// ParamTensor / ParamTensorArray [param, rank], ParamScalar [param].
struct ParamAttrs {
  static constexpr AttrsKind kind = AttrsKind::ParamAttrs;
  int param = 0;  ///< the parameter's index in lambda order
  int rank = 0;   ///< the tensor's rank (0 for a scalar)
  static ParamAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// TensorSize / TensorStride [dim].
struct DimAttrs {
  static constexpr AttrsKind kind = AttrsKind::DimAttrs;
  int dim = 0;
  static DimAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {dim}; }
};

/// ArrayElem [rank, prefetch].
struct ArrayElemAttrs {
  static constexpr AttrsKind kind = AttrsKind::ArrayElemAttrs;
  int rank = 0;
  ArrayPrefetch prefetch = ArrayPrefetch::tensormap;
  static ArrayElemAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {rank, static_cast<int64_t>(prefetch)}; }
};

/// MergeView [new rank, group sizes...]: consecutive dimensions merged, `groups[i]` of them into dimension i.
struct MergeViewAttrs {
  static constexpr AttrsKind kind = AttrsKind::MergeViewAttrs;
  int rank = 0;
  std::vector<int64_t> groups;
  static MergeViewAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// MakeView [rank], or [rank, 1] when made by tensor.rows(start, end).
struct MakeViewAttrs {
  static constexpr AttrsKind kind = AttrsKind::MakeViewAttrs;
  int rank = 0;
  bool rows = false;
  static MakeViewAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// Const [bits]: the int64 value, or the bit pattern of a double for float types.
struct ConstAttrs {
  static constexpr AttrsKind kind = AttrsKind::ConstAttrs;
  int64_t bits = 0;
  static ConstAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {bits}; }
};

/// ProgramId / NumPrograms (0 x, 1 y, 2 z) and ReduceSum / ReduceMax / ReduceMin / ArgMax [axis].
struct AxisAttrs {
  static constexpr AttrsKind kind = AttrsKind::AxisAttrs;
  int axis = 0;
  static AxisAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {axis}; }
};

/// Arange [start].
struct ArangeAttrs {
  static constexpr AttrsKind kind = AttrsKind::ArangeAttrs;
  int64_t start = 0;
  static ArangeAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {start}; }
};

/// Permute [perm...]: result dimension d is input dimension perm[d].
struct PermuteAttrs {
  static constexpr AttrsKind kind = AttrsKind::PermuteAttrs;
  std::vector<int64_t> perm;
  static PermuteAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return perm; }
};

/// Reduce [axis, combine region].
struct ReduceAttrs {
  static constexpr AttrsKind kind = AttrsKind::ReduceAttrs;
  int axis = 0;
  uint32_t combine = 0;
  static ReduceAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {axis, combine}; }
};

/// CombineArg / ReduceResult / LoopArg / LoopResult / IfResult [k]: which value of the owner.
struct IndexAttrs {
  static constexpr AttrsKind kind = AttrsKind::IndexAttrs;
  int index = 0;
  static IndexAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {index}; }
};

/// Dot [(precision)]: f32 operands only, the type it applies to (the front end writes it for every f32 dot,
/// ieee included); absent = ieee.
struct DotAttrs {
  static constexpr AttrsKind kind = AttrsKind::DotAttrs;
  std::optional<DotPrecision> precision;
  static DotAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// Load [has_mask, (ahead, (evict))], Store [has_mask, (evict)], AtomicAdd [has_mask]: the optional fields are
/// written only when not their defaults (ahead when evict is), so a plain access has the pool it always had.
struct AccessAttrs {
  static constexpr AttrsKind kind = AttrsKind::AccessAttrs;
  bool masked = false;
  LoadAhead ahead = LoadAhead::none;  ///< Load only
  Evict evict = Evict::normal;        ///< Load and Store
  static AccessAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// Which ring position of a pipelined loop a TMA load outside it reads (passes::overlap_products): none (a
/// load of its own), the position before the loop that follows it (the loop's first block, peeled before it),
/// or the one after the loop it follows (the last block, finished after it).
enum class RingPosition : uint8_t { none = 0, before_next_loop = 1, after_previous_loop = 2 };

/// DescLoad / DescPrefetch [rank, box(rank)..., estride(rank)..., fill, placement]; a DescLoad may add
/// [ring_position] (when not none); DescStore [rank, box(rank)..., reduce, placement].
struct TmaAttrs {
  static constexpr AttrsKind kind = AttrsKind::TmaAttrs;
  int rank = 0;
  std::array<int32_t, kMaxRank> box{};
  std::array<int32_t, kMaxRank> estride{1, 1, 1, 1, 1};
  int fill = 0;       ///< 0 zero, 1 NaN
  StoreReduce reduce = StoreReduce::none;  ///< DescStore only
  int placement = 0;  ///< 0 auto, 1 host, 2 device
  RingPosition ring = RingPosition::none;  ///< DescLoad only
  static TmaAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// For [body region].
struct ForAttrs {
  static constexpr AttrsKind kind = AttrsKind::ForAttrs;
  uint32_t body = 0;
  static ForAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {body}; }
};

/// If [then region, else region].
struct IfAttrs {
  static constexpr AttrsKind kind = AttrsKind::IfAttrs;
  uint32_t then_region = 0, else_region = 0;
  static IfAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op) const { return {then_region, else_region}; }
};

/// The attributes of a schedule op (ir.h's table says which each op has).
struct ScheduleAttrs {
  static constexpr AttrsKind kind = AttrsKind::ScheduleAttrs;
  NodeId node = kNoNode;  ///< the loop (Pipe*), the load (TmaIssue), the node (ReuseFence)
  int stages = 0;
  bool ring_persists = false;
  NodeId load = kNoNode;  ///< PipeWait: the stage's first load
  int pending = 0;
  WaitFor when = WaitFor::issued;
  BarrierReason reason = BarrierReason::stage_free;
  std::vector<NodeId> dots = {};  ///< WgmmaWait: the products it ends (dots or loop-carried values), in issue order
  static ScheduleAttrs decode(Op op, std::span<const int64_t> v);
  std::vector<int64_t> encode(Op op) const;
};

/// True when pool `v` has the layout op's struct reads (counts, and values in the ranges of its enums).
bool well_formed(Op op, std::span<const int64_t> v);

/// One of the structs above: its AttrsKind, and the pool it writes for an op.
template <class A>
concept AttrsStruct = requires(const A& a, Op op) {
  { A::kind } -> std::convertible_to<AttrsKind>;
  { a.encode(op) } -> std::same_as<std::vector<int64_t>>;
};

/// An InternalError: op's attributes were read or written as struct `asked`, not the one ops.def names.
[[noreturn]] void attrs_mismatch(Op op, AttrsKind asked);

}  // namespace tilejit::ir
