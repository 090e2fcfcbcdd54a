// Internal header of the CUDA C++ emitter (not installed): the Emitter class, which walks the lowered
// graph and writes one readable translation unit per kernel, and the text helpers its methods share.
// Its methods are defined by concern:
//   emitter.cpp       the helpers the others share: text, values, layout terms, copies between registers
//                     and shared memory, tensors and descriptors
//   emit_cuda.cpp     header comment, signature, prologue, node dispatch, elementwise ops, generate()
//   emit_control.cpp  for loops and ifs: loop-carried values, parallel assignment
//   emit_memory.cpp   loads and stores through pointers
//   emit_tma.cpp      TMA: descriptors built on the device, tile loads and stores
//   emit_layout.cpp   data exchanged between threads: broadcast, convert, gather, reshape, permute, reduce
//   emit_mma.cpp      matrix products (dot)
//   emit_schedule.cpp the schedule ops: pipelines, waits, barriers, reuse fences
//
// Conventions of the emitted code (see also the prelude in jit/codegen/prelude/):
//  - `tid` is threadIdx.x; thread 0 issues every TMA operation and owns the bulk groups.
//  - A rank-0 (or one-element) value is a scalar every thread computes; a block
//    value is an array of registers per thread, laid out as its layout::Layout
//    (chosen by passes::assign_layout) says: register i of thread tid holds the
//    element whose coordinates are sums of digits of i, tid % 32 and tid / 32.
//  - Elementwise ops, reductions within a warp and broadcasts of reduction results
//    never leave registers; conversions between layouts, permutes and the partial
//    results of several warps go through the shared scratch arena, bracketed by
//    __syncthreads(); a TMA tile that is still in shared memory is read in place.
#pragma once

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "codegen/cuda_text.h"
#include "passes/tensor_source.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/error.h"
#include "tilejit/layout/layout.h"
#include "tilejit/layout/shared_layout.h"
#include "tilejit/passes/lowering.h"

namespace tilejit::codegen::detail {

using ir::DType;
using ir::NodeId;
using ir::Op;
using passes::DescKind;
using passes::Descriptor;
using passes::ValueLayout;

inline std::string str(int64_t v) { return std::to_string(v); }

using layout::row_major;

/// Coordinate d of linear element `e` of shape `s`.
std::string coord(const std::string& e, const ir::Shape& s, int d);

/// a + b * c, leaving out zero and one factors.
std::string add_term(const std::string& acc, const std::string& term, int64_t factor);

class Emitter {
 public:
  Emitter(const passes::Lowered& l, const Options& opt, std::string entry);

  void run(GeneratedKernel& k);  // fills k.source and the prelude range

 private:
  // ---- text -------------------------------------------------------------
  void line(const std::string& s);
  void line(const std::string& s, NodeId at);
  void open(const std::string& s);
  void open(const std::string& s, NodeId at);
  /// A barrier of every thread that runs the kernel's ops: __syncthreads(), or once the producer warpgroup has
  /// split off (warp roles) a named barrier of the consumer threads.
  void sync(const std::string& why = "");
  /// The barrier passes::plan_barriers put before op `id` (BarrierPlan::before_scratch or before_issue), if any.
  void planned_barrier(const std::unordered_map<NodeId, std::string>& where, NodeId id);
  /// Appends to the line just closed ("}" -> "} else {").
  void line_tail(const std::string& s) { out_ += s + "\n"; }
  void close();
  std::string where(NodeId id) const;
  std::string note(NodeId id) const;
  /// The LoopIndex node of For `f`'s body, or kNoNode when the body never reads its index.
  NodeId loop_index(NodeId f) const;

  // ---- values -----------------------------------------------------------
  const ValueLayout& lay(NodeId id) const { return L_.layout.of[static_cast<size_t>(id)]; }
  bool uniform(NodeId id) const { return lay(id).kind == ValueLayout::Uniform; }
  std::string var(NodeId id) const { return "v" + str(id); }
  /// Element `i` of value `id` (the whole value when it is uniform).
  std::string at(NodeId id, const std::string& i = "i") const;
  /// "T vN[n];" (zero-initialised when some registers hold no element, so that no register is read unset).
  std::string decl_stmt(NodeId id);
  /// The declaration of value `id` (without the final semicolon), `init` after the declarator.
  std::string decl(NodeId id, const std::string& init = "");
  /// Whether value `id` lives in a tj::PackedF16 (declared by decl(), or updated in place in one).
  bool packed_storage(NodeId id) const;
  /// The registers of `id` as a wgmma instruction reads them: its array, or the 32-bit view of a
  /// packed f16 accumulator; `count` is set to their number.
  std::string accumulator_registers(NodeId id, int* count) const;
  /// Keeps the compiler from moving reads or writes of the accumulator `id` across this point.
  std::string register_fence(NodeId id) const;
  /// The digit of one layout term: `reg` stands for the register number, `tid` gives lane and warp.
  static std::string digit(const layout::Term& t, const std::string& reg);
  /// The sum of layout terms as C++ (compile-time constant parts fold once `reg` is an unrolled index).
  static std::string terms(const std::vector<layout::Term>& ts, const std::string& reg);
  /// Linear (row-major) element index held by register `i` (an expression) of a value with layout v.
  std::string elem(const ValueLayout& v, const std::string& i) const;
  /// True when register `i` holds an element (only dimensions that the layout pads are tested).
  std::string guard(const ValueLayout& v, const std::string& i) const;
  static std::string guard_of(const layout::Layout& l, const std::string& i);
  /// True in the one thread of each group of threads that hold the same elements ("" when no two do).
  std::string owner(const ValueLayout& v) const;
  /// True when `text` holds `name` as a whole C identifier (not as part of a longer one).
  static bool mentions(const std::string& text, std::string_view name);
  /// a + b for index expressions, leaving out zeros.
  static std::string plus(const std::string& a, const std::string& b);
  static std::string both(const std::string& a, const std::string& b);

  /// Emits `for (int i = 0; i < regs; ++i) { [const int e = ...;] body }`, or a
  /// single statement for uniform values (with `e` = 0). `guarded`: registers that hold
  /// no element skip the body; `owned`: so do threads that merely replicate another's elements.
  void element_loop(NodeId id, bool need_e, bool guarded, const std::vector<std::string>& body, bool owned = false);

  /// Copies the registers of `id` to shared memory at `ptr` (row-major, typed by its memory type),
  /// one vector of consecutive elements at a time; replicas and padding write nothing.
  /// `staging`: the layout of a tile staged through the scratch arena (padded or swizzled rows,
  /// SmemPlan::staging), or null for plain row-major.
  /// `sink` (an address of the same type, StorePlan::padding_sink): padding registers write there instead of
  /// nothing, so that the writes take no per-thread branch.
  void write_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging = nullptr, const std::string& sink = "");
  /// Row-major element `e` of a staged tile: where `staging` puts it (tj::padded_index, tj::xor_index).
  static std::string staged_index(const layout::SharedLayout* staging, const std::string& e);
  /// What a staged tile's layout does against bank conflicts, for a comment ("" when nothing).
  static std::string staging_note(const layout::SharedLayout* staging);
  /// write_chunks into a tile stored as swizzled pieces `swizzle` bytes wide (layout::SharedLayout),
  /// with the address split that allocate_shared planned (`w`): the swizzle's XOR depends on the
  /// thread alone, and every register adds a constant.
  void write_swizzled(NodeId id, const std::string& ptr, int swizzle, const layout::SwizzledWrites& w, const std::string& sink = "");
  /// Declares the registers of `id` and fills them from shared memory at `ptr`.
  void read_chunks(NodeId id, const std::string& ptr, const std::string& comment, const layout::SharedLayout* staging = nullptr);
  /// Fills the (declared) registers of `id` from shared memory at `ptr` (row-major, or laid out as `staging`).
  void fill_chunks(NodeId id, const std::string& ptr, const layout::SharedLayout* staging = nullptr);
  void copy_chunks(NodeId id, const std::string& ptr, bool to_shared, const layout::SharedLayout* staging = nullptr,
                   const std::string& sink = "");

  // ---- shared memory ------------------------------------------------------
  std::string buffer_ptr(int buffer, DType t) const;
  std::string scratch_ptr(int offset, DType t) const;
  /// Before op `user` first writes the scratch arena: the barrier the plan put there, if any.
  void scratch_barrier(NodeId user);
  /// Where the elements of block value `v` (an operand of `user`) can be read by any thread: its TMA
  /// tile, or the scratch arena at `offset` after this call stages it there (after the barrier planned
  /// before `user`'s first write, when `first`). Returns the pointer and whether it was staged (the op
  /// then passes a barrier before reading it).
  std::pair<std::string, bool> shared_source(NodeId user, NodeId v, int offset, const layout::SharedLayout* staging = nullptr,
                                             bool first = true);
  std::string load_elem(const std::string& ptr, const std::string& idx, DType t) const;
  /// load_elem through the prelude's ldg1 with eviction hint `evict` (tj::kEvictFirst or tj::kEvictLast).
  std::string hinted_load_elem(const std::string& ptr, const std::string& idx, DType t, const std::string& evict) const;

  // ---- tensors and descriptors ----------------------------------------------
  std::string tensor_ptr(NodeId tensor) const;
  /// The size or stride (`field`) of dimension d of a tensor, in elements, as an i64 expression.
  std::string tensor_field(NodeId tensor, passes::TensorField field, int d) const;
  /// Address of the descriptor TMA op `op` uses.
  std::string desc_addr(NodeId op) const;
  /// TMA coordinates of op `op` (operands 1..rank), innermost first.
  std::string coords(NodeId op, int rank) const;
  /// Builds the device descriptors `ds` after node `at` (kNoNode: at the kernel's start); with warp roles, a
  /// build the producer awaits (WarpRoles::awaited_builds) ends with an arrival on SmemPlan::built_barrier.
  void build_descriptors(NodeId at, const std::vector<const Descriptor*>& ds);

  // ---- checked kernels (Options::debug_checks; emit_debug.cpp) ----------------
  /// The statement `if (cond) tj::debug_fail(...)`: one line naming the kernel, op `op`'s source line, the
  /// rule, the value (printf format `value_fmt`) and the limit (`limit_fmt`), with `args` for both formats.
  std::string debug_check(const std::string& cond, NodeId op, const std::string& rule, const std::string& value_fmt,
                          const std::string& limit_fmt, const std::string& args) const;
  /// The statement that waits for the phase `phase` of mbarrier tj_bar[index]: tj::mbarrier_wait_parity, or in a
  /// checked kernel its watchdog, which names op `op`'s line, `what` the wait is for, the barrier and the phase when
  /// the wait lasts longer than Options::watchdog_ms, and traps.
  std::string mbarrier_wait(const std::string& index, const std::string& phase, NodeId op, const std::string& what) const;
  /// Checks of a device-built descriptor's fields (size<i> / stride<i> in scope, innermost first).
  void debug_descriptor(const Descriptor& d, const std::string& base);
  /// Checks of TMA op `id`'s coordinates against the hardware's rules, and of the descriptor it uses.
  void debug_tma(NodeId id);
  /// Checks that pointer load / store / atomic `id` touches only elements of its tensor.
  void debug_pointer(NodeId id);
  /// The offset of the last element of `tensor` from its pointer (-1 when it is empty), as an expression.
  std::string debug_last_offset(NodeId tensor) const;
  /// Calls `issue(buffer offset, coordinates)` once per TMA operation of op `id`: once, or once per
  /// piece of a box that the planner split (tma::split_box), piece k at k * piece elements of the
  /// tile and k * piece coordinates along the split dimension.
  void tma_pieces(NodeId id, const std::function<void(const std::string&, const std::string&)>& issue);

  // ---- ops ------------------------------------------------------------------
  void emit_region(uint32_t r);
  void emit_node(NodeId id);
  void emit_elementwise(NodeId id);
  void emit_broadcast(NodeId id);
  /// Element i of `id` reads element `src` (row-major, of x's shape) of `x` through shared memory; `staging`:
  /// the staged tile's layout (SmemPlan::staging), null for plain row-major.
  void emit_gather(NodeId id, NodeId x, const std::string& src, const layout::SharedLayout* staging = nullptr);
  /// The layout SmemPlan::staging gives the tile through which `id` moves its operand, or null.
  const layout::SharedLayout* staging_of(NodeId id) const;
  void emit_reshape(NodeId id);
  void emit_convert(NodeId id);
  void emit_permute(NodeId id);
  void emit_reduce(NodeId id);
  /// A Reduce: the user's combine function as a lambda, applied in the steps of emit_reduce.
  void emit_combine(NodeId id);
  void emit_reduce_result(NodeId id);
  /// One value a reduction combines: its array of partial results (one register per result
  /// register j), its type, and the name a partial received from another thread takes.
  struct Partial {
    std::string acc;
    DType type;
    std::string other;
  };
  /// Steps 2 and 3 of a reduction planned by `plan`: the partials are combined across lanes by
  /// butterfly shuffles, then across warps through the scratch arena (passes::reduction_scratch).
  /// `take(other)` is the statement that combines the values named `other` into the partials' [j].
  /// `flag`: a bool array saying which partials hold an element (a combine without identity over a
  /// padded layout), or "" when all do.
  void reduce_across_threads(NodeId id, const layout::ReductionPlan& plan, const std::vector<Partial>& parts,
                             const std::string& flag, const std::function<std::string(const std::vector<std::string>&)>& take);
  /// `take`, or with flags: combine when both hold an element, copy when only the other does.
  std::string take_flagged(const std::vector<Partial>& parts, const std::string& flag, const std::string& other_flag,
                           const std::vector<std::string>& other, const std::string& take) const;
  void emit_dot(NodeId id);
  void emit_wgmma(NodeId id, const passes::MmaDot& m);
  /// The device function issuing every wgmma instruction of one K tile of `m` in one asm statement.
  std::string wgmma_helper(const passes::MmaDot& m) const;
  std::string tile_address(NodeId load) const;
  /// The shared address of the tile an operand's instructions read: its TMA tile, or its K-major copy.
  std::string operand_address(const passes::MmaOperand& o) const;
  /// Copies a tf32 / 8-bit operand tile K-major (passes::MmaOperand::k_major_copy), all threads.
  void copy_k_major(const passes::MmaOperand& o, const char* which);
  /// The schedule ops (ir.h; emit_schedule.cpp), each printed where it stands.
  void emit_schedule_op(NodeId id);
  /// Issues the loads of the iteration whose loop index is `index` into stage `stage` of pipelined loop `f`'s
  /// ring (by one thread), when that iteration exists. `refill`: the ring position of a refill (the stage was
  /// used before), whose multicast loads wait until both programs of the cluster are done with the stage; ""
  /// for the prologue's first fills.
  void issue_stage(NodeId f, const std::string& stage, const std::string& index, const std::string& refill = "");
  /// The exchange with the other program of the cluster (passes::ClusterPlan): which loads of loop `f` are
  /// multicast (tj_mc<f>) and which ranks issue them (tj_issuers<f>). `send`: the issuing thread, which also
  /// sends this program's keys; else a consumer of a producer-filled loop, which only reads the other's. Nothing
  /// unless `f` is the cluster's loop.
  void cluster_exchange(NodeId f, bool send);
  /// Declares what cluster_exchange fills and the program's rank, where the issuing thread's code can see them.
  void cluster_state(NodeId f);
  /// Whether `f` is the loop of the cluster's multicast loads.
  bool multicasts(NodeId f) const { return L_.cluster.multicast() && L_.cluster.loop == f; }
  /// The loop indices pipelined loop f's ring serves, as expressions: the loop's range, or with the positions
  /// of the blocks before and after it (PipelinedLoop::first, last).
  struct RingRange {
    std::string lo, hi, step;
  };
  RingRange ring_range(NodeId f);
  /// The producer warpgroup's code (warp.producer): the scalars its loads need, then every load of loop `f`.
  void emit_producer(NodeId f, int stages);
  /// The loop whose ring pipelined loop `f` uses (PipelinedLoop::ring), as a name suffix: tj_ring<it>.
  std::string ring_of(NodeId f) const { return str(L_.pipe.loops.at(f).ring); }
  void emit_load(NodeId id);
  /// Fills load_as_f32_ (emit_memory.cpp).
  void plan_loads_as_f32();
  /// A masked vector load's fill is one value over each vector (merged word by word, tj::ldg_or).
  bool one_fill(NodeId load, int v) const;
  void emit_store(NodeId id);
  /// `for (i = 0; i < regs; i += v) [if (element)] body` over the registers of `id`, v at a time.
  void vector_loop(NodeId id, int v, const std::function<void()>& body);
  void emit_desc_load(NodeId id);
  /// Thread 0 issues the TMA load `id` (its expect-tx and copies), without waiting.
  void issue_desc_load(NodeId id);
  void emit_desc_store(NodeId id);
  void emit_for(NodeId id);
  void emit_if(NodeId id);
  void assign_all(const std::vector<std::pair<NodeId, NodeId>>& dst_src);

  std::string header() const;
  std::string signature() const;
  void prologue();

  const passes::Lowered& L_;
  const ir::Graph& g_;
  const Options& opt_;
  std::string entry_;
  int threads_;
  std::string out_;
  int depth_ = 1;
  std::vector<std::string> name_;
  /// Values stored as tj::PackedF16: the f16 accumulators of wgmma dots (and the values they update in place).
  std::unordered_set<NodeId> packed_;
  /// bf16 vector loads whose only use is a cast to f32 in the same layout: load -> the cast, which the load
  /// fills directly (tj::ldg_bf16_f32) and which then emits nothing.
  std::unordered_map<NodeId, NodeId> load_as_f32_;
  std::set<std::string> packed_names_;  ///< the names of the arrays decl() declared in a tj::PackedF16
  std::map<std::string, std::string> helpers_;  ///< per-kernel device functions (wgmma instructions), by name
  bool stores_ = false;
  bool consumers_only_ = false;  ///< printing past warp.producer: only the consumer threads run what follows
  std::map<NodeId, std::vector<const Descriptor*>> builds_;
  std::map<NodeId, std::vector<const Descriptor*>> array_prefetch_;
  std::map<NodeId, std::string> loop_bounds_;  ///< pipelined For -> "lo, hi, step" names
};

}  // namespace tilejit::codegen::detail
