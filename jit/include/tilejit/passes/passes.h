// The lowering passes between a traced graph and the CUDA emitter, and the pipeline that runs them.
//
// Every pass is a pure function of its inputs. Rewriting passes return a new
// graph (the input is never modified); analysis passes return a plan keyed by
// the node ids of the final graph. The pipeline (`lower`) runs them as the steps
// of one table, `lowering_steps()`, in its order (docs/schedules.md lists it; a
// test keeps that list equal to the table); TILEJIT_DUMP=ir prints the graph
// after every rewriting step and the plan after every step that makes one.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tilejit/codegen/launch_plan.h"
#include "tilejit/codegen/options.h"
#include "tilejit/codegen/performance_note.h"
#include "tilejit/ir/ir.h"
#include "tilejit/layout/layout.h"
#include "tilejit/layout/mma.h"

namespace tilejit::passes {

using ir::NodeId;

// ---- structure of a graph -------------------------------------------------------

/// Facts about a graph every later pass needs: users, program order, loops.
struct GraphInfo {
  std::vector<std::vector<NodeId>> users;  ///< per node: the nodes that use it, in program order
  std::vector<int> position;               ///< per node: index in program order (nested regions inline), -1 if unreachable
  std::vector<NodeId> loop;                ///< per node: the innermost For whose body holds it, or kNoNode

  /// True when `id` may run more than once per program (it is inside a loop body).
  bool in_loop(NodeId id) const { return loop[static_cast<size_t>(id)] != ir::kNoNode; }
  /// True when `id` lies in the body of loop `f`, directly or in a nested region or loop.
  bool inside(NodeId id, NodeId f) const {
    for (NodeId l = loop[static_cast<size_t>(id)]; l != ir::kNoNode; l = loop[static_cast<size_t>(l)])
      if (l == f) return true;
    return false;
  }
};

GraphInfo analyze(const ir::Graph& g);

/// "file.cpp:12": the base name of the file and the line a node was traced at ("%7" when it has none), as
/// performance notes, plan descriptions and pass diagnostics name the user's code.
std::string source_line(const ir::Graph& g, NodeId id);

/// True for nodes that hold a block value (as opposed to tensors, effects and regions).
bool is_value(const ir::Graph& g, NodeId id);

/// True for ops computed element by element from operands of the result's shape
/// (arithmetic, comparisons, math, casts, where).
bool is_elementwise(ir::Op op);

// ---- rewriting passes ---------------------------------------------------------

/// Local simplifications: casts to the same type, identity reshapes and
/// permutations, reshape/broadcast chains, integer arithmetic on constants.
ir::Graph canonicalize(const ir::Graph& g);

/// Moves pure scalar nodes (and tensor views) whose operands are all defined
/// outside a loop to just before the loop, so that a device-built descriptor
/// of a loop-invariant view is built once.
ir::Graph hoist_invariants(const ir::Graph& g);

/// Moves a tensor view made after a loop, outside every loop, in front of the first loop of its region that
/// starts after the values it is computed from, with the scalars of its region it needs: its device-built
/// descriptor is then built before the loop, not between the loop's products and their epilogue.
ir::Graph early_views(const ir::Graph& g);

/// Removes pure nodes whose value is never used.
ir::Graph eliminate_dead_code(const ir::Graph& g);

// ---- tensor cores ------------------------------------------------------------------

/// One operand of a dot on tensor cores: the TMA tile it reads in place in shared memory.
struct MmaOperand {
  NodeId load = ir::kNoNode;     ///< the DescLoad whose buffer holds the tile; kNoNode: a in registers
  NodeId value = ir::kNoNode;    ///< a in registers: the value, in layout::wgmma_a_fragment
  NodeId permute = ir::kNoNode;  ///< the transpose between the tile and the dot, if any (absorbed: never emitted)
  bool mn_major = false;         ///< the tile's inner dimension is M (for a) or N (for b): wgmma's transpose bit
  layout::OperandTile tile;      ///< the tile wgmma reads: as TMA lays it out (swizzle, pieces), or the K-major copy
  /// A tf32 or 8-bit tile loaded MN-major, which wgmma reads K-major only: the threads copy `source` (the
  /// tile as TMA wrote it, unswizzled, [K, M or N]) into a K-major swizzled buffer laid out as `tile`
  /// before the products (tj::copy_k_major), and the instructions read that copy.
  bool k_major_copy = false;
  layout::OperandTile source;
};

/// A dot lowered to wgmma.mma_async.
struct MmaDot {
  layout::MmaTiling tiling;
  MmaOperand a, b;
  ir::DType in = ir::DType::bf16, acc = ir::DType::f32;
  bool a_in_registers() const { return a.load == ir::kNoNode; }
  /// The PTX instruction without its operands, e.g. "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16".
  std::string instruction() const;
};

struct MmaPlan {
  std::unordered_map<NodeId, MmaDot> dots;     ///< Dot -> its wgmma lowering
  std::unordered_map<NodeId, int> swizzle;     ///< DescLoad -> swizzle bytes of its tile (wgmma operands only)
  std::unordered_set<NodeId> absorbed;         ///< Permute nodes read in place by wgmma (not emitted)
  std::vector<std::pair<NodeId, std::string>> cuda_cores;  ///< dots left on CUDA cores, and why
};

/// Decides which dots run on tensor cores: both operands are 2-D TMA tiles (or transposes of them)
/// that nothing but such dots reads, of a type wgmma takes (bf16, f16, fp8 with f32 accumulators; f16
/// and fp8 with f16 ones; f32 with Precision::tf32, as tf32; i8 with i32), with a tiling over the program's warpgroups
/// (layout::tile_mma). Where the type must be K-major (fp8, tf32, i8) and the tile is not, the
/// operand is copied K-major in shared memory (MmaOperand::k_major_copy). Every other dot stays on
/// CUDA cores, with the reason.
MmaPlan plan_mma(const ir::Graph& g, const GraphInfo& info, int warps);

// ---- TMA planning ---------------------------------------------------------------

/// Where a descriptor lives.
enum class DescKind : uint8_t {
  Host,    ///< encoded on the host, a __grid_constant__ kernel parameter
  Array,   ///< encoded on the host into device memory, one per tensor of a TensorArray
  Device,  ///< built by the kernel in a workspace slot (tensormap.replace + fences)
};
std::string_view name_of(DescKind k);

/// One distinct TMA descriptor: same source tensor, box, element strides and fill.
/// A descriptor of the plan: the encoded fields (codegen::TensorMapFields; merge groups relative to `param` or
/// `view`; the box the user's or one piece of a split box; a swizzled tile, a wgmma operand or a stored
/// accumulator, cut along its inner dimension into pieces as wide as the swizzle) and where it lives and is used.
struct Descriptor : codegen::TensorMapFields {
  DescKind kind = DescKind::Host;
  NodeId tensor = ir::kNoNode;   ///< the tensor node the TMA ops name (first one seen)
  NodeId view = ir::kNoNode;     ///< Device: the MakeView node whose fields are used, kNoNode for a parameter
  int split_dim = -1;            ///< a user box over 256 is issued as `pieces` operations along this dimension
  int pieces = 1;                ///< (tma::split_box), into consecutive parts of one shared-memory tile
  int slot = -1;                 ///< Host/Array: index in LaunchPlan::descriptors; Device: workspace slot
  NodeId first_use = ir::kNoNode;
  NodeId build_at = ir::kNoNode; ///< Device: the node after which it is built; kNoNode: kernel start
  bool rebuilt_in_loop = false;  ///< Device: the build runs once per loop iteration
  std::vector<NodeId> uses;      ///< the TMA ops using it, in program order
};

struct TmaPlan {
  std::vector<Descriptor> descriptors;
  std::unordered_map<NodeId, int> of;  ///< TMA op (DescLoad / DescStore / DescPrefetch) -> descriptor
  int num_host = 0, num_array = 0, num_device = 0;
};

/// Decides every descriptor (see the automatic rules in ARCHITECTURE.md: a kernel
/// parameter -> host, an element of a tensor array -> array, a MakeView -> device;
/// the op's placement attribute overrides). Returns the graph with every TMA op's
/// placement attribute set to the decision (1 host, 2 device) and fills `plan`
/// with the descriptors of that graph. Throws UserError for impossible requests.
ir::Graph plan_tma(const ir::Graph& g, TmaPlan& plan);

struct Layout;

/// The plan of a graph whose placements are already decided (what plan_tma fills); the tiles of
/// wgmma operands (`mma`, optional) get their swizzle and are cut into pieces as wide as it, and so do
/// stored tiles that threads write to shared memory with fewer bank conflicts under a swizzle
/// (layout::staging_swizzle of the stored value's layout, when `layout` is given).
TmaPlan collect_descriptors(const ir::Graph& g, const GraphInfo& info, const MmaPlan* mma = nullptr,
                            const Layout* layout = nullptr);

// ---- register layout -------------------------------------------------------------

/// How a block value is spread over the threads of a program (see tilejit/layout/layout.h).
struct ValueLayout {
  enum Kind : uint8_t {
    None,         ///< not a value (tensor, effect, region)
    Uniform,      ///< one element: every thread holds it
    Distributed,  ///< spread over the threads by `dist`
  } kind = None;
  int64_t numel = 1;
  layout::Layout dist;
  /// Registers per thread.
  int regs() const { return kind == Distributed ? dist.regs() : 1; }
  /// True when some register of some thread holds no element (it needs a guard).
  bool padded() const { return kind == Distributed && dist.padded(); }
};

struct Layout {
  int threads = 128;
  std::vector<ValueLayout> of;  ///< per node
};

/// Where two layouts meet: `node`'s value must be converted, for every user
/// (user == kNoNode) or for the one operand slot of `user` that names it.
struct LayoutConflict {
  NodeId node = ir::kNoNode;
  NodeId user = ir::kNoNode;
};

/// Chooses each value's layout:
///  - values combined elementwise (and the values of one loop-carried or
///    if-result slot, a load and its offsets, a store and its value) form a
///    group that shares one layout, so those ops never move data between threads;
///  - a reduction's result takes the slice of its operand's layout, a reshape
///    that only adds or removes unit dimensions keeps its operand's registers;
///  - the operand of a broadcast takes the layout in which the broadcast is
///    free (each thread already holds the source of each of its elements); a
///    tensor-core dot's result takes the accumulator fragment, and its operand a,
///    when read from registers, layout::wgmma_a_fragment;
///  - any other group is blocked (layout::blocked): 16 bytes per vector along
///    the innermost dimension, of the narrowest element type the group loads or
///    stores (so that memory moves in 16-byte accesses), else of its widest
///    element type; lanes and then warps from the innermost dimension outwards.
/// Throws InternalError when two of these rules disagree (insert_layout_conversions
/// first removes every such conflict).
Layout assign_layout(const ir::Graph& g, const GraphInfo& info, int threads);

/// The places where assign_layout's rules disagree, for the graph as it is.
std::vector<LayoutConflict> layout_conflicts(const ir::Graph& g, const GraphInfo& info, int threads);

/// Inserts a ConvertLayout node wherever two layouts meet (layout_conflicts),
/// so that every remaining op reads its operands in the layout it needs.
ir::Graph insert_layout_conversions(const ir::Graph& g, int threads);

// ---- contiguity and divisibility of integer values -----------------------------

/// Per dimension of an integer block (Triton's axis analysis): `contiguity` c: in every
/// aligned run of c elements along the dimension, consecutive elements differ by +1;
/// `divisibility` v: the first element of every such run is a multiple of v; `constancy` k:
/// every aligned run of k elements along the dimension holds one value. All are powers of two.
/// For a scalar only divisibility is meaningful (in dimension 0).
struct AxisInfo {
  std::array<int64_t, ir::kMaxRank> contiguity{1, 1, 1, 1, 1};
  std::array<int64_t, ir::kMaxRank> divisibility{1, 1, 1, 1, 1};
  std::array<int64_t, ir::kMaxRank> constancy{1, 1, 1, 1, 1};
};

/// Per kernel parameter, the codegen::Specialization bits that generated code may rely on: base
/// alignment of tensors read or written with pointer loads and stores, and the divisibility of the
/// sizes and strides the kernel reads. A launch compiles one variant per value of (its facts & these).
std::vector<uint16_t> relevant_specialization(const ir::Graph& g);

/// The largest divisibility the analysis tracks (elements).
inline constexpr int64_t kMaxDivisibility = 1 << 12;

/// Axis facts of every node of `g` (default facts for non-integer values), given what the
/// launch's argument specialisation guarantees about tensor sizes and strides.
std::vector<AxisInfo> analyze_axes(const ir::Graph& g, const GraphInfo& info, const codegen::Specialization& spec);

/// How many consecutive elements each vector access of a Load / Store / AtomicAdd `id` moves (1: scalar
/// accesses): the largest power of two that the offsets' layout holds in consecutive registers, that
/// the offsets are contiguous and divisible by, that the mask is constant over, that fits 16 bytes, and
/// only when the base address is 16-byte aligned. AtomicAdd is never vectorised.
int vector_width(const ir::Graph& g, const Layout& layout, const std::vector<AxisInfo>& axes,
                 const codegen::Specialization& spec, NodeId id);

/// How many consecutive registers of the block value `id` provably hold one value (1 when none do): the
/// largest power of two that its innermost dimension is constant over (constancy) and that the layout
/// holds in consecutive registers along that dimension. The emitter computes such a value once per run
/// (a mask `cols < n` with n divisible by 16 is one compare per vector, not one per element).
int register_constancy(const Layout& layout, const std::vector<AxisInfo>& axes, const ir::Graph& g, NodeId id);

// ---- software pipelining -----------------------------------------------------------

/// A K loop whose TMA loads are issued `stages - 1` iterations ahead of their use, into a ring of
/// `stages` buffers per load with a "full" mbarrier per stage (the loads landed). A stage is refilled
/// after a CTA barrier that follows every warpgroup's wait for its previous products (all of them
/// are done reading it): cheaper than per-stage "empty" mbarriers, which cost 10-15% of a 128 x 256
/// bf16 GEMM on an H100 in a single-thread-producer loop (measured).
/// A product of a pipelined loop that stays in flight into the next iteration: its result is only yielded, and
/// it accumulates in place into the registers of its loop-carried value `arg`, directly (a GEMM's K loop) or
/// through `update`, an elementwise op that the threads compute in place into those registers before the
/// product (attention's acc * alpha). The next iteration awaits it right before `update` reads the registers
/// (or before the barrier that frees its stage, whichever comes first); the loop's end awaits the last one.
struct CarriedProduct {
  NodeId dot = ir::kNoNode;
  NodeId arg = ir::kNoNode;     ///< the LoopArg whose registers it accumulates into
  NodeId update = ir::kNoNode;  ///< the elementwise op between arg and the dot's accumulator, or kNoNode
};

struct PipelinedLoop {
  int stages = 2;
  std::vector<NodeId> loads;          ///< DescLoads of the body, in program order, issued ahead
  std::vector<NodeId> address_nodes;  ///< body nodes their coordinates need (pure scalars), in program order
  std::vector<NodeId> dots;           ///< the body's wgmma dots, in program order (attention has two)
  NodeId dot = ir::kNoNode;           ///< the last of them: after its wait the previous iteration's stage is free
  /// The products that stay in flight into the next iteration (CarriedProduct); every other one is awaited
  /// before its first use in its own iteration. The stage of the previous iteration is refilled right after
  /// the last product's issue, once the previous iteration's carried products are awaited.
  std::vector<CarriedProduct> carried;
  /// Every product is carried (a GEMM's K loop, SwiGLU's gate and up).
  bool in_flight() const { return carried.size() == dots.size(); }
  int64_t stage_bytes = 0;            ///< bytes every stage's loads bring (the full barrier's transaction count)
  /// The loop runs more than once per program (it lies in another loop: a persistent GEMM's K loop inside
  /// its tile loop). Its stage barriers then keep their phases from one run to the next, so the ring
  /// position (iterations done, which selects the stage and the phase to wait for) is a kernel-wide
  /// counter that each run starts from where the previous one ended, not 0.
  bool ring_persists = false;
};

struct PipelinePlan {
  /// Ring buffers of every pipelined loop: the graph's num_stages, or when that is 0 (Config::kAutoStages)
  /// the first count of 3, 2, 1 whose shared memory fits (passes::lower).
  int stages = 2;
  bool stages_chosen = false;  ///< true when the lowering chose `stages`
  std::unordered_map<NodeId, PipelinedLoop> loops;  ///< For -> its pipeline
  /// Loops with tensor-core dots and TMA loads that are not pipelined (num_stages >= 2), with the reason
  /// ("its TMA load at f.cpp:12 ..."): a performance warning names it.
  std::unordered_map<NodeId, std::string> not_pipelined;
  std::unordered_map<NodeId, NodeId> loop_of;       ///< pipelined DescLoad -> its For
  /// TMA loads after a pipelined loop (in its region, outside any loop) that need nothing the loop computes:
  /// For -> those loads, in program order. Thread 0 issues them before the loop's prologue; their waits stay
  /// where they are (a GEMM's bias row lands while the K loop runs).
  std::unordered_map<NodeId, std::vector<NodeId>> issued_before;
  std::unordered_set<NodeId> early;                 ///< the loads of issued_before
  /// Elementwise ops computed in place into the registers of one operand (CarriedProduct::update): op -> the
  /// index of that operand. The emitter names the result as the operand and writes it element by element.
  std::unordered_map<NodeId, int> in_place;
};

/// Pipelines every For loop (with num_stages >= 2) whose body holds tensor-core dots (mma) directly (none
/// in nested loops), whose TMA loads directly in the body are read only by those dots or only from registers
/// (a block scale multiplied into a product: the threads copy it out of its stage of the ring), and whose load
/// coordinates depend only on the loop index and values from outside the loop (through pure scalar
/// arithmetic); their descriptors must not be rebuilt in the loop. Host-encoded TMA loads after such a loop
/// whose operands all come before it are issued before it (PipelinePlan::issued_before).
PipelinePlan plan_pipeline(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const TmaPlan& tma,
                           const Layout& layout, const std::vector<AxisInfo>& axes, int stages);

// ---- shared memory ---------------------------------------------------------------

/// How a DescLoad's tile is consumed.
struct LoadPlan {
  int buffer = -1;             ///< index in SmemPlan::buffers
  int barrier = -1;            ///< mbarrier index
  bool registers = false;      ///< threads copy their elements into registers after the wait
  bool all_threads_wait = false;  ///< false: only the issuing thread waits (the tile is only stored back)
  bool repeated = false;       ///< inside a loop: the buffer is refilled, the phase bit flips per use
  bool read_by_tma_store = false;  ///< a TMA store reads the buffer (direct or in place)
  int stages = 1;              ///< pipelined: the buffer holds this many tiles, one per stage
};

/// How a DescStore gets its tile into shared memory.
struct StorePlan {
  enum Mode : uint8_t {
    Staged,    ///< threads write the value into the store's own buffer
    FromLoad,  ///< the value is a loaded tile: stored straight from the load's buffer
    InPlace,   ///< threads write the value over the tile it was computed from (load buffer)
  } mode = Staged;
  NodeId load = ir::kNoNode;  ///< FromLoad / InPlace: the DescLoad whose buffer is used
  int buffer = -1;            ///< index in SmemPlan::buffers
  bool repeated = false;      ///< inside a loop: the buffer is rewritten while an older store may read it
  /// A swizzled tile (its descriptor's swizzle): how the threads' writes split into per-thread and
  /// per-register parts (per_thread_xor false: each address is computed whole).
  layout::SwizzledWrites swizzled;
};

struct SmemBuffer {
  int offset = 0;
  int bytes = 0;
  int align = 128;
  NodeId node = ir::kNoNode;
  std::string role;  ///< "tma.load", "tma.store", "descriptor staging"
  NodeId live_from = ir::kNoNode;  ///< the node (or outermost loop) where the buffer's lifetime starts
  std::vector<int> reuses;         ///< buffers whose bytes it takes after their lifetimes end (place_buffers)
};

/// Before a node: the buffers that start there take bytes of buffers whose lifetimes have ended, so every
/// thread must be done with those (a barrier) and, when a TMA store read one, the store must have read it.
struct ReuseFence {
  std::vector<int> buffers;
  bool wait_tma_stores = false;
};

struct SmemPlan {
  std::vector<SmemBuffer> buffers;
  int barrier_offset = 0;
  int num_barriers = 0;
  int scratch_offset = 0;
  int scratch_bytes = 0;       ///< one arena shared by every op that exchanges data between threads
  int desc_stage_offset = -1;  ///< 128-byte staging for device-built descriptors, -1 if none
  int total_bytes = 0;         ///< dynamic shared memory per program
  std::unordered_map<NodeId, LoadPlan> loads;
  std::unordered_map<NodeId, StorePlan> stores;
  std::unordered_map<NodeId, int> resident;  ///< values readable in place from a buffer: node -> buffer
  std::unordered_set<NodeId> register_copies;  ///< resident values whose elements are also copied to registers
  std::unordered_map<NodeId, int> ring_barriers;  ///< pipelined For -> its first mbarrier: full[s] = first + s
  /// The loop of WarpRoles -> its first "empty" mbarrier: empty[s] = first + s, one arrival per consumer warp.
  std::unordered_map<NodeId, int> empty_barriers;
  std::unordered_map<int, int> barrier_arrivals;  ///< mbarrier -> its arrival count when not 1
  /// DescLoad of a wgmma operand copied K-major (MmaOperand::k_major_copy) -> the buffer of its copies: two
  /// when its loop is pipelined (the products of one iteration read one while the next is written), else one.
  std::unordered_map<NodeId, int> k_major_copies;
  /// ConvertLayout and Permute nodes whose tile through the scratch arena has padded or swizzled rows
  /// against bank conflicts: node -> the tile's layout (layout::staging_layout; for a permute, with its
  /// readers' layout::permute_sources; absent: plain row-major).
  std::unordered_map<NodeId, layout::SharedLayout> staging;
  std::unordered_map<NodeId, ReuseFence> reuse_fences;  ///< node -> the fence printed before it
};

// ---- warp roles -------------------------------------------------------------------

/// Warp specialization of a kernel's pipelined loop (Config::warp_specialize): one producer warpgroup, after
/// the num_warps warps of the kernel (the consumers, tid 0 .. consumer_threads - 1, which run every op as
/// without roles), splits off at the kernel's start. One thread of it issues every TMA load of the loop's
/// ring, waiting for a stage's "empty" barrier before refilling it; the consumers wait for its "full"
/// barrier, run the products and arrive on the "empty" barrier of the previous iteration's stage (one
/// arrival per consumer warp) where the CTA barrier and the refill stood without roles. No CTA barrier is
/// left in the loop, and `setmaxnreg` gives the registers the producer does not need to the consumers.
struct WarpRoles {
  NodeId loop = ir::kNoNode;   ///< the pipelined For whose loads the producer issues; kNoNode: no roles
  int consumer_threads = 0;    ///< num_warps * 32
  int producer_threads = 128;  ///< one warpgroup (setmaxnreg works on whole warpgroups); thread consumer_threads issues
  int producer_registers = 0;  ///< setmaxnreg.dec target of the producer (0: none)
  int consumer_registers = 0;  ///< setmaxnreg.inc target of the consumers (0: none)
  /// The loops and branches around `loop`, outermost first (a persistent kernel's tile loop; a grouped GEMM's
  /// `if` that skips unused tiles): the producer runs the loops and takes the branches too (whose conditions are
  /// uniform), and its ring position runs on from one run of `loop` to the next (PipelinedLoop::ring_persists).
  std::vector<NodeId> enclosing;
  /// Nodes before the loop, in the kernel body or the bodies of `enclosing`, that the loads' coordinates and
  /// the loops' bounds need (uniform scalars, loaded or computed), in program order: the producer computes
  /// them itself.
  std::vector<NodeId> producer_nodes;
  /// Why Config::warp_specialize was not applied ("" when it was, or was not asked for): a performance note.
  std::string not_applied;
  bool on() const { return loop != ir::kNoNode; }
  /// Threads per program: the consumers, and the producer warpgroup when the roles are on.
  int threads() const { return consumer_threads + (on() ? producer_threads : 0); }
};

/// Decides the warp roles of a kernel whose configuration asks for them, or leaves them to tilejit and whose
/// pipelined loop lies in other loops (a persistent kernel, at most one program per SM). They apply to one
/// pipelined loop, in the kernel body or in loops but not in an if, num_warps a multiple of 4, the loads'
/// descriptors host-encoded or built at the kernel's start, and their coordinates and the loops' bounds
/// computed from uniform scalars (arithmetic, and loads from tensors the kernel does not write; no values of
/// other loops or ifs).
WarpRoles plan_warp_roles(const ir::Graph& g, const GraphInfo& info, const Layout& layout, const TmaPlan& tma,
                          const PipelinePlan& pipe);

/// Allocates TMA tile buffers (128-byte aligned), mbarriers (8-byte aligned),
/// the scratch arena and the descriptor staging area, and chooses how every
/// TMA load and store uses them. Throws UserError when the total exceeds 227 KiB.
/// The transposes of tiles that tensor-core dots read (`mma.absorbed`) are resident too; the loads of
/// pipelined loops get a ring of `stages` tiles and the loop one "full" barrier per stage.
/// With warp roles, the producer's loop also gets one "empty" barrier per stage (SmemPlan::empty_barriers).
SmemPlan allocate_shared(const ir::Graph& g, const GraphInfo& info, const Layout& layout, const TmaPlan& tma,
                         const MmaPlan& mma, const PipelinePlan& pipe, const WarpRoles& roles = {});

/// Whether `user` reads its operand slot `slot` from registers (false: it can read a shared-memory tile in
/// place: a permute, reshape or layout conversion, a dot's operands a and b, the value a TMA store writes).
bool reads_registers(const ir::Graph& g, NodeId user, size_t slot);

/// Places the tile buffers (SmemBuffer::offset) by liveness: buffers alive at the same time get disjoint
/// bytes, and a buffer whose lifetime starts after another's ended may take its bytes (the tiles of two
/// sequential loops, a store's staging after the loop that fed it), with a ReuseFence before its first use.
/// A lifetime runs from the first node that writes or reads the buffer to the last one, a use in a loop
/// covering the whole outermost loop. Returns the end of the last buffer.
int place_buffers(const ir::Graph& g, const GraphInfo& info, const MmaPlan& mma, const PipelinePlan& pipe, SmemPlan& plan);

/// Bytes of the scratch arena op `id` needs (0 when it exchanges no data).
int scratch_bytes_of(const ir::Graph& g, const Layout& layout, const SmemPlan& smem, const MmaPlan& mma, NodeId id);

/// Where a reduction over several warps keeps their partial results in the scratch arena, for
/// reduction node `id` (ReduceSum/Max/Min, ArgMax, Reduce) whose operand has layout `x` (slots: result
/// elements times the warps that hold parts of each). The byte offset of each combined value's array
/// (an ArgMax combines its value and an i32 index; a Reduce its operands), each 16-byte aligned; then,
/// for a Reduce over a padded layout (no identity to fill empty registers with), of one byte per slot
/// saying whether the warp held an element; the total bytes last. Empty when the warps need no scratch.
std::vector<int> reduction_scratch(const ir::Graph& g, const Layout& layout, NodeId id);

/// 32-bit registers one block value may take per thread: half of the 255 a thread has. A larger
/// value would spill and run at a small fraction of its speed.
inline constexpr int64_t kMaxValueRegisters = 128;

/// Refuses (UserError at the value's source line, naming the value, the registers it needs, the
/// limit and the warp count that would fit) a value held in registers that exceeds kMaxValueRegisters.
/// TMA tiles read only in place in shared memory are exempt.
void check_register_budget(const ir::Graph& g, const GraphInfo& info, const Layout& layout, const SmemPlan& smem);

// ---- barriers between ops ---------------------------------------------------------

/// Where the threads of a program meet at a CTA barrier between ops (passes/barriers.cpp). Every op that
/// exchanges data between threads through the scratch arena writes it, passes a barrier and reads it
/// back (its own protocol, printed with it); what this plan decides is the barrier before such an op's
/// first write, needed when an earlier op's threads may still be reading the arena (an op before it since
/// the last such barrier, or any op of the previous iteration of an enclosing loop), and the barrier
/// before thread 0 reissues a TMA load outside a ring whose tile every thread reads, needed unless every
/// thread has already passed a barrier in this iteration of the innermost loop.
struct BarrierPlan {
  std::unordered_set<NodeId> scratch_users;  ///< the ops that stage data through the scratch arena
  std::unordered_map<NodeId, std::string> before_scratch;  ///< op -> why a barrier precedes its first write
  std::unordered_map<NodeId, std::string> before_issue;    ///< repeated DescLoad -> why a barrier precedes its issue
};

struct Lowered;

/// Plans the barriers of a lowered kernel (its layouts, shared-memory, tensor-core and pipeline plans).
BarrierPlan plan_barriers(const Lowered& l);

/// Writes the schedule the plans decided into the graph as schedule ops (ir.h): for every pipelined loop its
/// early TMA issues, pipe.begin and pipe.prologue before it, pipe.stage first in its body, pipe.wait before its
/// ring's first load, pipe.advance before its yield, and after its last product the wait, the barrier that
/// frees the previous iteration's stage and pipe.refill (with warp roles: no prologue, pipe.release instead of
/// the barrier and the refill, and warp.producer first in the kernel body); a wgmma.wait after every other
/// tensor-core dot; a smem.reuse_fence before each node SmemPlan::reuse_fences names. Nodes are only added (ids stay); the
/// graph's analysis, layouts and axes are extended to the new nodes.
void insert_schedule_ops(Lowered& l);

// ---- kernel parameters -----------------------------------------------------------

/// What a tensor parameter's slot carries: its base address, or the size or stride (in elements) of a dimension.
enum class TensorField : uint8_t { base = 0, size = 1, stride = 2 };

/// The kernel's parameters (LaunchPlan::slots) and the descriptors the runtime
/// encodes (LaunchPlan::descriptors), plus the C++ name of each parameter.
struct ArgumentPlan {
  codegen::LaunchPlan plan;
  std::vector<std::string> names;  ///< per slot
  /// (param, field, dimension) -> slot (find_tensor).
  std::unordered_map<int64_t, int> tensor_slot;
  std::unordered_map<int, int> scalar_slot;  ///< param -> slot
  std::unordered_map<int, int> desc_slot;    ///< Host/Array descriptor index -> slot
  int workspace_slot = -1;
  /// The slot of tensor parameter `param`'s `field` (of dimension `index`; 0 for the base).
  int find_tensor(int param, TensorField field, int index) const;
};

/// `checked` (Options::debug_checks): the kernel also receives every size and stride of each tensor it
/// reads or writes through pointers, for the bounds checks of its accesses.
ArgumentPlan plan_arguments(const ir::Graph& g, const TmaPlan& tma, const SmemPlan& smem, int threads, bool checked = false);

// ---- the pipeline ------------------------------------------------------------------

using DumpHook = std::function<void(std::string_view pass, const ir::Graph&)>;

/// Everything the emitter needs.
struct Lowered {
  ir::Graph graph;
  GraphInfo info;
  TmaPlan tma;
  MmaPlan mma;
  PipelinePlan pipe;
  Layout layout;
  WarpRoles roles;
  SmemPlan smem;
  ArgumentPlan args;
  std::vector<AxisInfo> axes;
  BarrierPlan barriers;
  codegen::Specialization spec;
};

/// One step of the lowering. The steps run in the order of `lowering_steps()`, each on the `Lowered` the
/// previous ones filled: rewriting steps replace its graph, the others fill one plan.
struct LoweringStep {
  std::string_view name;  ///< "canonicalize", ..., "plan_barriers"
  std::string_view what;  ///< what it does, one line
  bool rewrites_graph;    ///< it replaces `Lowered::graph` (the dump then prints the new graph)
  void (*run)(Lowered& l, const codegen::Options& options);
  /// The plan the step made, in readable text (TILEJIT_DUMP=ir prints it after the step); nullptr when it
  /// only rewrites the graph.
  std::string (*plan)(const Lowered& l);
  /// It only adds nodes to the graph, so that the ids the plans are keyed by stay valid: such a step may
  /// follow the planning steps (insert_schedule_ops); every other rewriting step precedes them.
  bool adds_only = false;
};

/// Every step of the lowering, in the order `lower` runs them.
std::span<const LoweringStep> lowering_steps();

/// Runs every step in order on a copy of `g`; `dump` (optional, else `options.dump_ir`) sees the graph as given
/// and after each rewriting step, `options.dump_plan` (optional) the plan of each step that makes one.
Lowered lower(const ir::Graph& g, const codegen::Options& options, const DumpHook& dump = {});

/// Runs the steps up to and including `last_step` (a name of lowering_steps()) and returns the partial
/// result: the plans of later steps are left empty. For tests of one pass on a graph lowered that far.
/// Throws UserError (at `where`) naming `last_step` and the valid names when no step has that name.
Lowered lower_until(const ir::Graph& g, const codegen::Options& options, std::string_view last_step,
                    const DumpHook& dump = {}, std::source_location where = std::source_location::current());

// ---- plans in readable text (passes/describe.cpp) ------------------------------------

/// The descriptors (TmaPlan), one line each: placement, source, box, element strides, fill, swizzle.
std::string describe_descriptors(const Lowered& l);
/// Each dot: its wgmma instruction, tiling and operands (major-ness, swizzle, K-major copies), or why it
/// stays on CUDA cores. Empty when the kernel has no dot.
std::string describe_mma(const Lowered& l);
/// The pipelined loops (stages, loads, products in flight, loads issued before them), the loops with
/// products left unpipelined, with the reason, and the pointer loads issued one iteration ahead
/// (prefetch_loads). Empty when there are none.
std::string describe_pipeline(const Lowered& l);
/// The warp roles (WarpRoles): threads, registers and barriers of the producer and the consumers, or why
/// warp_specialize was not applied. Empty when the configuration does not ask for roles.
std::string describe_warp_roles(const Lowered& l);
/// The shared-memory map: tile buffers with their offsets and reuse, staging, scratch, mbarriers.
std::string describe_shared_memory(const Lowered& l);
/// The distinct register layouts, each with the values that have it.
std::string describe_register_layouts(const Lowered& l);
/// Human-readable plan, as the generated header prints it: descriptors, matrix products, pipelines,
/// the shared-memory map and the register layouts.
std::string describe(const Lowered& l);

/// Program order and loops (GraphInfo): how many nodes are reachable, each loop with its body's size.
std::string describe_graph_info(const Lowered& l);
/// Each value with its dtype, shape and register layout (Layout), the values every thread holds whole
/// on one line.
std::string describe_value_layouts(const Lowered& l);
/// The values whose contiguity, divisibility or constancy (AxisInfo) is not the default of 1.
std::string describe_axes(const Lowered& l);
/// The value that takes the most registers per thread, against kMaxValueRegisters.
std::string describe_register_budget(const Lowered& l);
/// The kernel parameters (ArgumentPlan), one line per slot.
std::string describe_arguments(const Lowered& l);
/// The barriers between ops (BarrierPlan): the scratch-arena users and each planned barrier with why.
std::string describe_barriers(const Lowered& l);

/// What the user may want to change for speed, one sentence each, naming the source line: warnings for a
/// dot left on CUDA cores and for a loop with tensor-core dots left unpipelined (and why), notes for an
/// operand copied K-major. The runtime logs them (warn / info) when it generates the kernel.
std::vector<codegen::PerformanceNote> performance_notes(const Lowered& l);

}  // namespace tilejit::passes
