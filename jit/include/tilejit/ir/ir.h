// The tilejit IR: a flat, hash-consed SSA graph of block values with structured regions.
//
// # Semantics
//
// A kernel is run as a grid of independent *programs* (CUDA blocks). Every IR
// value is a *block*: a dense array of one element type (DType) with a static
// shape of rank 0..5 (rank 0 is a scalar). Shapes are fixed when the kernel is
// traced for one configuration; they are compile-time constants of the emitted
// code. The order of dimensions is row-major: dimension 0 is the outermost,
// the last dimension is the contiguous one.
//
// Integers. i32 and i64 arithmetic wraps modulo 2^32 / 2^64 (two's complement).
// Div truncates toward zero, Rem takes the sign of the dividend; x / 0 is -1
// and x % 0 is x (what the hardware's integer division gives, fixed here so
// that zero-filled TMA lanes never fault and GPU and interpreter agree). Shifts are not part of
// the IR. Comparisons yield i1.
//
// Floats. f32 and f64 ops are IEEE-754 with round-to-nearest-even and no
// flush-to-zero. f16 and bf16 arithmetic is evaluated in f32 and rounded once
// to the storage type after every op; Fma (a * b + c) rounds once. fp8 types are storage only: the front end
// rejects arithmetic on them. Cast rounds to nearest even; float -> int casts
// truncate toward zero and saturate (NaN -> 0), as cvt.rzi.sat does.
// Transcendentals (exp, log, sin, tanh, erf, ...) are not correctly rounded on
// the GPU: results agree with the interpreter within a few ulp. Exp2 below f64
// is the hardware's approximation (ex2.approx.ftz.f32, 2 ulp): a result below
// 2^-126 (an argument below -126) is flushed to +0, as the interpreter does too;
// so is a Sigmoid result below 2^-126 (an argument below about -87.3). TanhApprox is the hardware's tanh
// (tanh.approx.f32), within 2^-10.987 of tanh relative; the interpreter computes tanh exactly.
//
// Reductions. ReduceMax / ReduceMin (NaN-propagating for floats), ArgMax (the
// first maximum wins; a NaN counts as the maximum) and integer ReduceSum
// (wrapping) give the same result in any order: the GPU and the interpreter
// agree bit for bit. A float ReduceSum is evaluated in an unspecified order
// (the GPU combines each thread's registers, then lanes by butterfly shuffles,
// then warps in warp order; the interpreter adds left to right), each partial
// sum rounded to the element type (f16 / bf16 through f32). Results agree
// within n * eps * sum(|x|) for n summands (eps of the element type); when
// every partial sum is exact (small integers, say) they are identical.
// A Reduce with a combine region (several blocks reduced together by a user
// function, Triton's tl.reduce) combines the elements of each result pairwise
// in an unspecified order and grouping, as a float sum does (the interpreter
// folds left to right along the axis): the function must be associative and
// commutative. When it is exactly so (integer arithmetic, min / max, selections
// with a tie-break) the GPU and the interpreter agree bit for bit; float
// arithmetic in it agrees within its rounding.
//
// Memory. Tensors are described by a base address, sizes and strides in
// elements (the innermost stride of a TMA-accessed tensor must be 1).
// Load/Store/AtomicAdd address elements by linear offsets from the base; an
// access whose mask is false does nothing (loads yield `other`, default 0).
// An unmasked out-of-bounds access is undefined behaviour (the interpreter
// raises UserError).
//
// TMA. DescLoad reads the tile of the TMA tile mode (cp.async.bulk.tensor): for dimension i the tile
// has ceil(box[i] / estride[i]) elements (the value's shape is the tile's, or the tile's with some unit
// dimensions left out: canonicalize drops those its users reshape away); element j reads coordinate
// coord[i] + j * estride[i]. Elements whose coordinate is outside [0, size[i])
// in any dimension are filled with zero (fill = 0) or NaN (fill = 1, float
// types only). Coordinates are signed 32-bit and may be negative. DescStore
// writes a tile back (its value has the box's shape); out-of-bounds elements are not written. The innermost
// element stride must be 1 (the hardware ignores it). Coordinates, boxes and
// shapes in the IR are stored outermost-first like everything else; the code
// generator reverses them for the hardware (innermost first).
//
// # Representation
//
// Graph::nodes is a flat table; a value is a NodeId (index). Operands and
// integer attributes of a node live in the shared pools Graph::operands and
// Graph::ints, addressed by (begin, count). Pure nodes are hash-consed per
// region: building the same pure node twice in one region returns the same id.
// Every node belongs to one region; a region lists its nodes in program order.
// Region 0 is the kernel body.
//
// Operands (o) and ints (i) per op ("..." means a variable count). ops.def lists each op's operand count
// and the struct of attributes.h that reads its ints; code reads them through that struct (ir::attrs<A>):
//   ParamTensor       o: -            i: [param index, tensor rank]          dtype = element type
//   ParamTensorArray  o: -            i: [param index, tensor rank]
//   ParamScalar       o: -            i: [param index]
//   TensorSize        o: [tensor]     i: [dim]                               i64 scalar
//   TensorStride      o: [tensor]     i: [dim]                               i64 scalar (elements)
//   ArrayElem         o: [array, index(i32 scalar)]  i: [tensor rank, prefetch]  a tensor; prefetch
//                     (ArrayPrefetch) says how its descriptors are prefetched where the element is taken
//   MergeView         o: [tensor]     i: [new rank, group sizes...]          a tensor; consecutive dims merged
//   MakeView          o: [tensor, offset(i64), sizes(rank)..., strides(rank)..., (start, end)]
//                     i: [rank, (1)]
//                     a tensor whose base is tensor.base + offset elements, with runtime sizes and
//                     strides (innermost stride must be 1); its TMA descriptor is built on the device.
//                     The 1 when made by tensor.rows(start, end), which appends its start and end (i64)
//                     so that errors can name them. Sizes are >= 0 (0: an empty view, which no TMA
//                     operation may use); a negative size (end < start) is an error of the program:
//                     the interpreter throws UserError, TILEJIT_DEBUG=1 traps on the GPU
//   Const             o: -            i: [bits]  (int64 value, or the bit pattern of a double for floats)
//   ProgramId         o: -            i: [axis]                              i32 scalar
//   NumPrograms       o: -            i: [axis]                              i32 scalar
//   TileGrid          o: -            i: [axis]                              i32 scalar: the launch's grid extent when
//                                                                           persistent programs run it (num_programs is theirs)
//   Arange            o: -            i: [start]  shape = [end - start]      i32
//   Broadcast         o: [x]          i: -        numpy rules, result shape given
//   Reshape           o: [x]          i: -        same element count, row-major order
//   Permute           o: [x]          i: [perm...]  result dim d = input dim perm[d]
//   Cast              o: [x]          i: -        to the node's dtype
//   ConvertLayout     o: [x]          i: -        the same value; inserted by the layout pass where the
//                                                 register layouts of a producer and a consumer differ
//   binary/compare    o: [a, b]       same shape (front end inserts Broadcast)
//   unary             o: [x]
//   Where             o: [cond(i1), a, b]
//   Fma               o: [a, b, c]    floats, same dtype and shape: a * b + c rounded once (f16 / bf16: computed
//                     in f32 with one rounding, then rounded to the storage type); made by the front end's fma()
//                     and by passes::contract_fma from a product and a sum (Config::fp_contract)
//   Reduce*/ArgMax    o: [x]          i: [axis]   axis removed from the shape; ArgMax gives i32, first max wins
//   Reduce            o: [x_0..x_n-1]  i: [axis, combine region]   n blocks of one shape reduced together; the
//                     node's shape is the result shape (axis removed); its values are ReduceResult nodes.
//                     The combine region starts with 2n CombineArg nodes and ends with a Yield of n values;
//                     every node in it is a pure rank-0 op (it may read rank-0 values defined outside)
//   CombineArg        o: [reduce]     i: [k]   rank 0, x_(k mod n)'s dtype: the accumulated values (k < n),
//                                              then the values combined into them (k >= n)
//   ReduceResult      o: [reduce]     i: [k]   the k-th result: x_k's dtype, the reduce's shape
//   Dot               o: [a(MxK), b(KxN), acc(MxN)]  i: [(precision)]   acc += a @ b, accumulated in acc's
//                     dtype from acc in an unspecified order (floats agree within the sum's rounding, as a
//                     ReduceSum; canonicalize folds x + dot(a, b, 0) into dot(a, b, x)); precision
//                     (DotPrecision, f32 operands only, absent = ieee; the front end writes it for every
//                     f32 dot): tf32 truncates the operands to tf32 (10 mantissa bits) before the products
//   Load              o: [tensor, offsets, (mask, other)]  i: [has_mask, (ahead)]   ahead (a hint for readers, same
//                     semantics): issued by passes::prefetch_loads, 1 = in a loop body for the next iteration,
//                     2 = before the loop for its first iteration
//   Store             o: [tensor, offsets, value, (mask)]  i: [has_mask]
//   AtomicAdd         o: [tensor, offsets, value, (mask)]  i: [has_mask]   relaxed, device scope
//   DescLoad          o: [tensor, coords(rank)...]   i: [rank, box(rank)..., estride(rank)..., fill, placement]
//                     result shape = tile = ceil(box/estride), outermost first
//   DescStore         o: [tensor, coords(rank)..., value]  i: [rank, box(rank)..., reduce, placement]
//                     reduce: 0 = plain store, 1 = add, 2 = min, 3 = max
//   DescPrefetch      o: [tensor]     i: [rank, box(rank)..., estride(rank)..., fill, placement]
//   For               o: [lo, hi, step, inits...]  i: [body region]   i32 induction variable
//   LoopIndex         o: [for]        (first node of the body)
//   LoopArg           o: [for]        i: [k]   k-th loop-carried value inside the body
//   LoopResult        o: [for]        i: [k]   k-th loop-carried value after the loop
//   If                o: [cond, ...]  i: [then region, else region]
//   IfResult          o: [if]         i: [k]
//   Yield             o: [values...]  last node of a loop body / if branch / combine region
//
// Schedule ops (ScheduleAttrs): passes::insert_schedule_ops adds them after every plan is made, to say
// where the asynchronous work of a kernel is issued, awaited and released. They take no operands and
// yield no value; they name the nodes they order by id in their attributes (no pass renumbers the
// graph after them). The interpreter, which has no asynchronous units, skips them.
//   TmaIssue          i: [load]     thread 0 issues TMA load `load` here (before the loop that precedes
//                                   its use); the load itself then only waits for it
//   PipeBegin         i: [loop, stages, ring]   the software pipeline of For `loop` starts: its bounds and
//                                   its ring position (0, or where the previous run of the loop ended
//                                   when ring = 1: the loop runs more than once per program)
//   PipePrologue      i: [loop, stages, ring]   thread 0 issues the loads of the first stages - 1 iterations
//   PipeStage         i: [loop, stages]          first in the body: the stage of this iteration
//   PipeWait          i: [loop, stages, load]    every thread waits for the stage's loads (the phase of
//                                   its barrier is (position / stages) & 1); `load` is the first of them
//   PipeRefill        i: [loop, stages, ring]    thread 0 issues the loads of iteration i + stages - 1 into
//                                   the stage the previous iteration used
//   PipeRelease       i: [loop, stages, ring]    with warp roles, instead of a CTA barrier and pipe.refill: each
//                                   consumer warp arrives on the "empty" barrier of the stage the previous
//                                   iteration used, which lets the producer refill it
//   PipeAdvance       i: [loop]     last before the yield: the ring position moves on
//   PipeEnd           i: [loop]     after a loop with ring = 1: the position is kept for its next run
//   WgmmaWait         i: [pending, when, of...]   waits until at most `pending` wgmma groups of this
//                                   warpgroup are in flight, which ends the products `of` names: dots, or
//                                   for a product carried from the previous iteration the loop-carried value
//                                   it accumulates into (WaitFor `when` says of which iteration); their
//                                   registers are the threads' again
//   CtaBarrier        i: [reason]   every thread of the program meets here (BarrierReason)
//   ReuseFence        i: [at]       before the first use of buffers that take bytes earlier tiles held
//                                   (SmemPlan::reuse_fences[at]): every thread and TMA store is done with them
//   TurnStart         i: [loop]     in the consumers' code before loop `loop` (passes::WarpgroupTurns): the first
//                                   consumer warpgroup takes the first turn at the tensor cores
//   TurnWait          i: [loop]     in the body of `loop`, before a group of products: this warpgroup waits
//                                   for its turn (the previous warpgroup in turn order has issued its group)
//   TurnPass          i: [loop]     after the group's last product is issued: the next warpgroup's turn
//   WarpProducer      i: [loop, stages]   first in the kernel body (passes::WarpRoles): the producer
//                                   warpgroup splits off, issues every TMA load of pipelined loop `loop`
//                                   (waiting for each stage's "empty" barrier before it refills the stage)
//                                   and leaves; only the consumers run the ops after it
// `placement` (descriptor placement request): 0 = automatic, 1 = host-encoded, 2 = device-built.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "tilejit/config.h"
#include "tilejit/ir/attributes.h"
#include "tilejit/ir/dtype.h"
#include "tilejit/ir/op.h"

namespace tilejit::ir {

/// Static block shape, outermost dimension first. Rank 0 is a scalar.
struct Shape {
  uint8_t rank = 0;
  std::array<int32_t, kMaxRank> dims{};

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  static Shape of(std::span<const int64_t> d);
  int64_t numel() const;
  int32_t operator[](int i) const { return dims[i]; }
  bool operator==(const Shape& o) const;
  std::string str() const;  ///< "[64, 32]"
  /// The same dimensions in order without those of size 1 ([1, 64, 32] -> [64, 32]): a TMA load's value
  /// may leave out unit dimensions of its tile (DescLoad).
  Shape squeezed() const;
};

/// One IR value. Operands and ints are spans into Graph's pools.
struct Node {
  Op op;
  DType dtype;
  Shape shape;
  uint32_t region;
  uint32_t operand_begin, operand_count;
  uint32_t int_begin, int_count;
  uint32_t loc;  ///< index into Graph::locations (user source line of the op)
};

/// A user source location recorded for every node.
struct Location {
  std::string file;
  uint32_t line = 0;
  bool operator==(const Location& o) const { return line == o.line && file == o.file; }
};

/// Parameter of the kernel, in lambda order.
struct Param {
  enum Kind : uint8_t { Tensor, TensorArray, Scalar, Config } kind;
  DType dtype;
  int rank;          ///< tensor rank (0 for scalars)
  std::string name;  ///< configuration name for Config parameters, else "arg<i>"
  NodeId node = kNoNode;
};

/// A structured region: nodes in program order.
struct Region {
  std::vector<NodeId> nodes;
  NodeId owner = kNoNode;  ///< the For / If / Reduce node, or kNoNode for the kernel body
};

class Graph {
 public:
  Graph();

  // --- construction -------------------------------------------------------
  /// Adds a node (or returns an existing identical pure node of the same region).
  NodeId add(Op op, DType dtype, const Shape& shape, std::span<const NodeId> operands,
             std::span<const int64_t> ints = {});
  NodeId add(Op op, DType dtype, const Shape& shape, std::initializer_list<NodeId> operands,
             std::initializer_list<int64_t> ints = {}) {
    return add(op, dtype, shape, std::span<const NodeId>(operands.begin(), operands.size()),
               std::span<const int64_t>(ints.begin(), ints.size()));
  }
  NodeId add(Op op, DType dtype, const Shape& shape, std::span<const NodeId> operands,
             std::initializer_list<int64_t> ints) {
    return add(op, dtype, shape, operands, std::span<const int64_t>(ints.begin(), ints.size()));
  }
  NodeId add(Op op, DType dtype, const Shape& shape, std::initializer_list<NodeId> operands,
             std::span<const int64_t> ints) {
    return add(op, dtype, shape, std::span<const NodeId>(operands.begin(), operands.size()), ints);
  }
  /// Adds a node with attributes `a`, written by their struct: the one ops.def names for `op` (attributes.h),
  /// an InternalError for another.
  template <AttrsStruct A>
  NodeId add(Op op, DType dtype, const Shape& shape, std::span<const NodeId> operands, const A& a) {
    if (attrs_kind_of(op) != A::kind) attrs_mismatch(op, A::kind);
    const std::vector<int64_t> ints = a.encode(op);
    return add(op, dtype, shape, operands, std::span<const int64_t>(ints));
  }
  template <AttrsStruct A>
  NodeId add(Op op, DType dtype, const Shape& shape, std::initializer_list<NodeId> operands, const A& a) {
    return add(op, dtype, shape, std::span<const NodeId>(operands.begin(), operands.size()), a);
  }
  uint32_t new_region(NodeId owner);
  /// Adds a node without operands right before (or after) `anchor`, in its region, with its source location:
  /// how passes::insert_schedule_ops places schedule ops. Ids of existing nodes do not change.
  NodeId insert(Op op, std::span<const int64_t> ints, NodeId anchor, bool after);
  void push_region(uint32_t r) { region_stack_.push_back(r); }
  void pop_region() { region_stack_.pop_back(); }
  uint32_t current_region() const { return region_stack_.back(); }
  void set_location(const char* file, uint32_t line);
  const Location& current_location() const { return locations_[current_loc_]; }

  // --- access -------------------------------------------------------------
  const Node& node(NodeId id) const { return nodes_[static_cast<size_t>(id)]; }
  std::span<const NodeId> operands(NodeId id) const {
    const Node& n = node(id);
    return {operands_.data() + n.operand_begin, n.operand_count};
  }
  NodeId operand(NodeId id, int k) const { return operands(id)[static_cast<size_t>(k)]; }
  std::span<const int64_t> ints(NodeId id) const {
    const Node& n = node(id);
    return {ints_.data() + n.int_begin, n.int_count};
  }
  int64_t int_at(NodeId id, int k) const { return ints(id)[static_cast<size_t>(k)]; }
  size_t size() const { return nodes_.size(); }
  const Region& region(uint32_t r) const { return regions_[r]; }
  size_t num_regions() const { return regions_.size(); }
  const Location& location(NodeId id) const { return locations_[node(id).loc]; }

  /// Constant value of a Const node as a double / int64.
  double const_f(NodeId id) const;
  int64_t const_i(NodeId id) const;
  bool is_const(NodeId id) const { return node(id).op == Op::Const; }

  // --- kernel metadata ----------------------------------------------------
  std::string kernel_name;
  Location kernel_location;
  std::vector<Param> params;
  std::vector<std::pair<std::string, int64_t>> config;  ///< name -> value, incl. num_warps/num_stages
  int num_warps = 4;
  int num_stages = 2;  ///< ring buffers of pipelined loops; 0: the lowering chooses (LoopPipelinePlan::stages)
  int min_programs_per_sm = 0;  ///< occupancy target of __launch_bounds__ (0: none)
  WarpSpecialize warp_specialize = WarpSpecialize::automatic;  ///< Config::warp_specialize (passes::WarpRoles)
  OverlapProducts overlap_products = OverlapProducts::automatic;  ///< Config::overlap_products (passes::overlap_products)
  Pingpong pingpong = Pingpong::automatic;  ///< Config::pingpong (passes::WarpgroupTurns)
  int cluster_x = 1, cluster_y = 1;  ///< Config::cluster: programs per cluster along x and y (passes::ClusterPlan)
  bool fp_contract = true;  ///< Config::fp_contract: products and sums contracted into fma (passes::contract_fma)
  int producer_registers = 0;  ///< Config::producer_registers: the producer's setmaxnreg target (0: passes::WarpRoles chooses)
  bool persistent = false;  ///< Config::persistent: the programs of the grid run in a loop of fewer programs (passes::persistent_programs)
  int tile_group = 0;       ///< Config::tile_group: that loop's order (0: the launch order)

  /// Structural hash: equal for graphs built by the same sequence of operations,
  /// independent of source locations and of the process.
  uint64_t hash() const;

 private:
  std::vector<Node> nodes_;
  std::vector<NodeId> operands_;
  std::vector<int64_t> ints_;
  std::vector<Region> regions_;
  std::vector<Location> locations_;
  std::vector<uint32_t> region_stack_;
  uint32_t current_loc_ = 0;
  std::unordered_map<uint64_t, std::vector<NodeId>> cse_;
};

/// The regions region op `id` owns, in order: a For's body, an If's then and else branches, a
/// Reduce's combine function (empty for any other op). They are the op's last attributes.
std::vector<uint32_t> regions_of(const Graph& g, NodeId id);


/// Readable text of the whole graph (stable: used by golden tests and TILEJIT_DUMP=ir). Each node reads
/// "%id: dtype[shape] = op %operands... {attributes}", the attributes by name (attributes_text).
std::string print(const Graph& g, bool with_locations = false);

/// The integer attributes of node `id` by name, as the printer shows them between braces, e.g.
/// "box=[64, 32], estride=[1, 1], fill=zero, placement=auto" for a DescLoad or "axis=1" for a reduction;
/// empty when the node has none to show (a Const's value and region numbers are not attributes here).
/// A pool that does not match the op's documented layout is shown by position ("2, 64, 32").
std::string attributes_text(const Graph& g, NodeId id);

/// Checks the invariants documented above; throws InternalError naming the node.
void verify(const Graph& g);

/// The attributes of node `id`, read by its op's struct (ops.def's Attrs column): `attrs<AxisAttrs>(g, id).axis`.
/// An InternalError when the op's attributes are another struct.
template <class A>
A attrs(const Graph& g, NodeId id) {
  const Op op = g.node(id).op;
  if (attrs_kind_of(op) != A::kind) attrs_mismatch(op, A::kind);
  return A::decode(op, g.ints(id));
}

// Shorthands for the attributes read most often.
/// The body region of For node `f`.
inline uint32_t loop_body(const Graph& g, NodeId f) { return attrs<ForAttrs>(g, f).body; }
/// The axis a reduction reduces: ReduceSum / ReduceMax / ReduceMin / ArgMax, or Reduce.
inline int reduction_axis(const Graph& g, NodeId id) {
  return g.node(id).op == Op::Reduce ? attrs<ReduceAttrs>(g, id).axis : attrs<AxisAttrs>(g, id).axis;
}
/// The combine region of Reduce node `id`.
inline uint32_t combine_region(const Graph& g, NodeId id) { return attrs<ReduceAttrs>(g, id).combine; }
/// How Dot node `id` multiplies: its precision, ieee when its pool has none.
inline DotPrecision dot_precision(const Graph& g, NodeId id) {
  return attrs<DotAttrs>(g, id).precision.value_or(DotPrecision::ieee);
}
/// True when MakeView node `id` was made by tensor.rows(start, end) (its start and end are its last operands).
inline bool is_rows_view(const Graph& g, NodeId id) { return attrs<MakeViewAttrs>(g, id).rows; }
inline ArrayPrefetch array_prefetch(const Graph& g, NodeId id) { return attrs<ArrayElemAttrs>(g, id).prefetch; }

}  // namespace tilejit::ir
