// The CPU interpreter: checks the arguments, then runs the graph once per program of the grid.
#include "tilejit/interp/interp.h"

#include <bit>

#include "interp_internal.h"
#include "tilejit/arg_rules.h"
#include "tilejit/error.h"
#include "tilejit/ir/effects.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/tma_rules.h"

namespace tilejit::interp {

namespace {

using namespace detail;
using ir::NodeId;
using ir::Op;

std::string str(int64_t v) { return std::to_string(v); }

/// What a For node needs while it runs.
struct LoopInfo {
  NodeId index = ir::kNoNode;  ///< its LoopIndex node (kNoNode when the body never reads it)
  std::vector<NodeId> args;    ///< its LoopArg nodes by position (kNoNode when unused)
  NodeId yield = ir::kNoNode;
  uint32_t body = 0;
  std::vector<Block> carried, next;
};

/// What a Reduce node needs while it runs.
struct CombineInfo {
  std::vector<NodeId> args;  ///< its CombineArg nodes by position (kNoNode when unused)
  NodeId yield = ir::kNoNode;
  uint32_t region = 0;
  std::vector<Block> acc, next;  ///< the partial results of one output element
  std::vector<Block> results;    ///< the reduced blocks
};

struct IfInfo {
  NodeId yield[2] = {ir::kNoNode, ir::kNoNode};
  int taken = 0;
};

class Machine {
 public:
  Machine(const ir::Graph& g, dim3 grid, std::span<const KernelArg> args, dim3 tile_grid)
      : g_(g), grid_(grid), tile_grid_(tile_grid), args_(args), vals_(g.size()), tens_(g.size()), aux_(g.size(), -1), invariant_(g.size(), 0) {}

  void run(const args::CallSite& at) {
    check_grid(g_.kernel_name, grid_, at.file, at.line, g_.cluster_x, g_.cluster_y);
    check_persistent(g_.kernel_name, grid_, g_.persistent, g_.tile_group, g_.cluster_x * g_.cluster_y, at.file, at.line);
    args::check_launch_args(g_, args_, at, args::Mode{});
    prepare();
    snapshot_written();
    try {
      for (uint32_t z = 0; z < grid_.z; ++z)
        for (uint32_t y = 0; y < grid_.y; ++y)
          for (uint32_t x = 0; x < grid_.x; ++x) {
            pid_[0] = x;
            pid_[1] = y;
            pid_[2] = z;
            eval_region(0);
            invariants_ready_ = true;
          }
    } catch (const UserError&) {
      restore_written();
      throw;
    }
  }

 private:
  // ---- errors -------------------------------------------------------------------------
  [[noreturn]] void fail(NodeId id, const std::string& rule, std::string value, const std::string& limit) const {
    const ir::Location& loc = g_.location(id);
    value += (value.empty() ? "" : " ") + std::string("in program (") + str(pid_[0]) + ", " + str(pid_[1]) + ", " +
             str(pid_[2]) + ")";
    throw UserError(rule, value, limit, loc.file, loc.line);
  }

  // ---- once per run -------------------------------------------------------------------
  /// Copies the bytes of every tensor argument the kernel may write, so that a program that fails
  /// leaves the arguments as they were: a rejected launch writes nothing, as on the GPU, where the
  /// same rules are checked before the kernel starts.
  void snapshot_written() {
    for (int p : ir::written_params(g_)) {
      const KernelArg& a = args_[static_cast<size_t>(p)];
      auto save = [&](const TensorArg& t) {
        const TensorValue v = tensor_of_arg(t, p, -1);
        if (v.root_hi <= v.root_lo) return;
        Saved s{const_cast<std::byte*>(v.root_lo), std::vector<std::byte>(v.root_lo, v.root_hi)};
        saved_.push_back(std::move(s));
      };
      if (a.kind == KernelArg::Tensor) save(a.tensor);
      for (const TensorArg& t : a.array) save(t);
    }
  }
  void restore_written() {
    // In reverse, so that overlapping arguments end with the oldest bytes.
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) std::copy(it->bytes.begin(), it->bytes.end(), it->at);
  }

  static bool is_tensor_op(Op op) {
    return op == Op::ParamTensor || op == Op::ArrayElem || op == Op::MergeView || op == Op::MakeView;
  }

  void prepare() {
    for (size_t i = 0; i < g_.size(); ++i) {
      const auto id = static_cast<NodeId>(i);
      const ir::Node& n = g_.node(id);
      // An op that reads a tensor takes it as its first operand.
      const auto check_tensor_operand = [&] {
        if (!is_tensor_op(g_.node(g_.operand(id, 0)).op))
          throw InternalError("interpreter: %" + str(id) + " (" + std::string(ir::name_of(n.op)) + ") reads a tensor from %" +
                              str(g_.operand(id, 0)) + ", which is not a tensor");
      };
      switch (n.op) {
        case Op::TensorSize: case Op::TensorStride: case Op::MergeView: case Op::MakeView: case Op::Load: case Op::Store:
        case Op::AtomicAdd:
          check_tensor_operand();
          break;
        case Op::ArrayElem:
          check_internal(g_.node(g_.operand(id, 0)).op == Op::ParamTensorArray, "interpreter: tensor_array.elem of a non-array");
          break;
        case Op::DescLoad:
        case Op::DescStore:
        case Op::DescPrefetch: {
          check_tensor_operand();
          const ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g_, id);
          std::vector<int64_t> box(a.box.begin(), a.box.begin() + a.rank), est;
          if (n.op != Op::DescStore) est.assign(a.estride.begin(), a.estride.begin() + a.rank);
          const char* what = n.op == Op::DescLoad ? "descriptor_load" : n.op == Op::DescStore ? "descriptor_store" : "prefetch_descriptor";
          if (auto v = tma::check_box(what, n.dtype, box, est, a.fill)) {
            const ir::Location& loc = g_.location(id);
            throw UserError(v->rule, v->value, v->limit, loc.file, loc.line);
          }
          if (n.op == Op::DescStore) {
            const ir::Shape& vs = g_.node(g_.operand(id, 1 + a.rank)).shape;
            bool same = vs.rank == a.rank;
            for (int d = 0; same && d < a.rank; ++d) same = vs.dims[d] == a.box[static_cast<size_t>(d)];
            check_internal(same, "interpreter: descriptor_store value shape differs from its box");
          }
          aux_[i] = static_cast<int32_t>(tma_.size());
          tma_.push_back(a);
          break;
        }
        case Op::For: {
          LoopInfo L;
          L.body = ir::attrs<ir::ForAttrs>(g_, id).body;
          L.args.assign(g_.operands(id).size() - 3, ir::kNoNode);
          for (NodeId b : g_.region(L.body).nodes) {
            const ir::Node& bn = g_.node(b);
            if (bn.op == Op::LoopIndex && g_.operand(b, 0) == id) L.index = b;
            if (bn.op == Op::LoopArg && g_.operand(b, 0) == id) L.args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, b).index)] = b;
          }
          const auto& body = g_.region(L.body).nodes;
          check_internal(!body.empty() && g_.node(body.back()).op == Op::Yield, "interpreter: loop body without yield");
          L.yield = body.back();
          L.carried.resize(L.args.size());
          L.next.resize(L.args.size());
          aux_[i] = static_cast<int32_t>(loops_.size());
          loops_.push_back(std::move(L));
          break;
        }
        case Op::Reduce: {
          CombineInfo c;
          c.region = ir::combine_region(g_, id);
          c.args.assign(2 * g_.operands(id).size(), ir::kNoNode);
          for (NodeId b : g_.region(c.region).nodes)
            if (g_.node(b).op == Op::CombineArg) c.args[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, b).index)] = b;
          c.yield = g_.region(c.region).nodes.back();
          c.acc.resize(g_.operands(id).size());
          c.next.resize(c.acc.size());
          c.results.resize(c.acc.size());
          aux_[i] = static_cast<int32_t>(combines_.size());
          combines_.push_back(std::move(c));
          break;
        }
        case Op::If: {
          IfInfo info;
          const std::vector<uint32_t> branches = ir::regions_of(g_, id);  // then, else
          for (int k = 0; k < 2; ++k) {
            const auto& nodes = g_.region(branches[static_cast<size_t>(k)]).nodes;
            check_internal(!nodes.empty() && g_.node(nodes.back()).op == Op::Yield, "interpreter: if branch without yield");
            info.yield[k] = nodes.back();
          }
          aux_[i] = static_cast<int32_t>(ifs_.size());
          ifs_.push_back(info);
          break;
        }
        // Nothing to check or prepare.
        TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
        case Op::ParamTensor: case Op::ParamTensorArray: case Op::ParamScalar: case Op::Const:
        case Op::ProgramId: case Op::NumPrograms: case Op::TileGrid: case Op::Arange: case Op::ReduceSum: case Op::ReduceMax:
        case Op::ReduceMin: case Op::ArgMax: case Op::CombineArg: case Op::ReduceResult: case Op::Dot:
        case Op::LoopIndex: case Op::LoopArg: case Op::LoopResult: case Op::IfResult: case Op::Yield:
          break;
      }
    }
    // Nodes of the kernel body whose value is the same in every program are computed by the first one only.
    for (NodeId id : g_.region(0).nodes) {
      const ir::Node& n = g_.node(id);
      const ir::OpKind k = ir::kind_of(n.op);
      bool inv = (k == ir::OpKind::Pure || n.op == Op::ParamTensor || n.op == Op::ParamTensorArray || n.op == Op::ParamScalar) &&
                 n.op != Op::ProgramId && n.op != Op::LoopResult && n.op != Op::IfResult;
      for (NodeId o : g_.operands(id)) inv = inv && invariant_[static_cast<size_t>(o)];
      invariant_[static_cast<size_t>(id)] = inv;
    }
  }

  // ---- evaluation ------------------------------------------------------------------------
  void eval_region(uint32_t r) {
    const bool skip_invariant = r == 0 && invariants_ready_;
    for (NodeId id : g_.region(r).nodes) {
      if (skip_invariant && invariant_[static_cast<size_t>(id)]) continue;
      try {
        eval(id);
      } catch (const OpError& e) {
        fail(id, e.rule, e.value, e.limit);
      }
    }
  }

  const Block& val(NodeId id) const { return vals_[static_cast<size_t>(id)]; }
  int64_t scalar_i(NodeId id) const { return vals_[static_cast<size_t>(id)].i[0]; }
  const TensorValue& tensor(NodeId id) const { return tens_[static_cast<size_t>(id)]; }

  // One case per op of ops.def, with no default: a new op is a build error here (-Werror=switch) until it has
  // semantics. Long for that reason; each case is a few lines, the work is in interp_compute.cpp and
  // interp_memory.cpp.
  void eval(NodeId id) {
    const ir::Node& n = g_.node(id);
    const auto ops = g_.operands(id);
    Block& out = vals_[static_cast<size_t>(id)];
    switch (n.op) {
      // ---- parameters and tensors
      case Op::ParamTensor: {
        const auto p = static_cast<size_t>(ir::attrs<ir::ParamAttrs>(g_, id).param);
        tens_[static_cast<size_t>(id)] = tensor_of_arg(args_[p].tensor, static_cast<int>(p), -1);
        return;
      }
      case Op::ParamTensorArray: return;
      case Op::ParamScalar: {
        const KernelArg& a = args_[static_cast<size_t>(ir::attrs<ir::ParamAttrs>(g_, id).param)];
        out.reset(n.dtype, n.shape);
        if (is_float(n.dtype)) {
          out.f[0] = round_once(n.dtype, is_float(a.dtype) ? a.f : static_cast<double>(a.i));
        } else {
          out.i[0] = is_float(a.dtype) ? float_to_int(n.dtype, a.f) : wrap(n.dtype, a.i);
        }
        return;
      }
      case Op::TensorSize:
      case Op::TensorStride: {
        const TensorValue& t = tensor(ops[0]);
        const auto d = static_cast<size_t>(ir::attrs<ir::DimAttrs>(g_, id).dim);
        out.reset(n.dtype, n.shape);
        out.i[0] = n.op == Op::TensorSize ? t.sizes[d] : t.strides[d];
        return;
      }
      case Op::ArrayElem: {
        const auto p = static_cast<size_t>(ir::attrs<ir::ParamAttrs>(g_, ops[0]).param);
        const int64_t idx = scalar_i(ops[1]);
        const auto& arr = args_[p].array;
        if (idx < 0 || idx >= static_cast<int64_t>(arr.size()))
          throw OpError{"tensor array index out of range (" + g_.params[p].name + ")", "index " + str(idx),
                        arr.empty() ? "the array is empty" : "0.." + str(static_cast<int64_t>(arr.size()) - 1)};
        tens_[static_cast<size_t>(id)] = tensor_of_arg(arr[static_cast<size_t>(idx)], static_cast<int>(p), idx);
        return;
      }
      case Op::MergeView:
        tens_[static_cast<size_t>(id)] = merge_view(g_, tensor(ops[0]), ir::attrs<ir::MergeViewAttrs>(g_, id).groups);
        return;
      case Op::MakeView: {
        const auto rank = static_cast<size_t>(ir::attrs<ir::MakeViewAttrs>(g_, id).rank);
        int64_t sz[kMaxTensorRank] = {}, st[kMaxTensorRank] = {};
        for (size_t d = 0; d < rank; ++d) {
          sz[d] = scalar_i(ops[2 + d]);
          st[d] = scalar_i(ops[2 + rank + d]);
        }
        if (ir::is_rows_view(g_, id) && sz[0] < 0) {
          const int64_t start = scalar_i(ops[2 + 2 * rank]), end = scalar_i(ops[3 + 2 * rank]);
          throw OpError{"rows(start, end): end is before start", "start " + str(start) + ", end " + str(end),
                        "end >= start"};
        }
        for (size_t d = 0; d < rank; ++d)
          if (sz[d] < 0)
            throw OpError{"make_view: the size of dimension " + str(static_cast<int64_t>(d)) + " is negative", str(sz[d]),
                          ">= 0"};
        tens_[static_cast<size_t>(id)] =
            make_view(tensor(ops[0]), scalar_i(ops[1]), std::span<const int64_t>(sz, rank), std::span<const int64_t>(st, rank));
        return;
      }
      // ---- block construction
      case Op::Const:
        out.reset(n.dtype, n.shape);
        if (is_float(n.dtype)) {
          out.f[0] = std::bit_cast<double>(ir::attrs<ir::ConstAttrs>(g_, id).bits);
        } else {
          out.i[0] = wrap(n.dtype, ir::attrs<ir::ConstAttrs>(g_, id).bits);
        }
        return;
      case Op::ProgramId:
      case Op::NumPrograms:
      case Op::TileGrid: {
        const auto axis = static_cast<size_t>(ir::attrs<ir::AxisAttrs>(g_, id).axis);
        const dim3 d = n.op == Op::TileGrid ? tile_grid_ : grid_;
        const uint32_t dims[3] = {d.x, d.y, d.z};
        out.reset(n.dtype, n.shape);
        out.i[0] = wrap(n.dtype, n.op == Op::ProgramId ? pid_[axis] : dims[axis]);
        return;
      }
      case Op::Arange: {
        out.reset(n.dtype, n.shape);
        const int64_t start = ir::attrs<ir::ArangeAttrs>(g_, id).start;
        for (size_t k = 0; k < out.i.size(); ++k) out.i[k] = wrap(n.dtype, start + static_cast<int64_t>(k));
        return;
      }
      case Op::Broadcast:
        out.reset(n.dtype, n.shape);
        eval_broadcast(val(ops[0]), out);
        return;
      case Op::Reshape: case Op::ConvertLayout: {  // the same elements in row-major order
        const Block& x = val(ops[0]);
        out.reset(n.dtype, n.shape);
        if (is_float(n.dtype)) {
          out.f = x.f;
        } else {
          out.i = x.i;
        }
        return;
      }
      case Op::Permute:
        out.reset(n.dtype, n.shape);
        eval_permute(val(ops[0]), ir::attrs<ir::PermuteAttrs>(g_, id).perm, out);
        return;
      case Op::Cast:
        out.reset(n.dtype, n.shape);
        eval_cast(val(ops[0]), out);
        return;
      // ---- elementwise
      TILEJIT_BINARY_OPS(TILEJIT_CASE)
        out.reset(n.dtype, n.shape);
        eval_binary(n.op, val(ops[0]), val(ops[1]), out);
        return;
      TILEJIT_COMPARE_OPS(TILEJIT_CASE)
        out.reset(n.dtype, n.shape);
        eval_compare(n.op, val(ops[0]), val(ops[1]), out);
        return;
      TILEJIT_UNARY_OPS(TILEJIT_CASE)
        out.reset(n.dtype, n.shape);
        eval_unary(n.op, val(ops[0]), out);
        return;
      case Op::Where:
        out.reset(n.dtype, n.shape);
        eval_where(val(ops[0]), val(ops[1]), val(ops[2]), out);
        return;
      case Op::Fma:
        out.reset(n.dtype, n.shape);
        eval_fma(val(ops[0]), val(ops[1]), val(ops[2]), out);
        return;
      case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax:
        out.reset(n.dtype, n.shape);
        eval_reduce(n.op, val(ops[0]), ir::attrs<ir::AxisAttrs>(g_, id).axis, out);
        return;
      case Op::Reduce: run_combine(id, ops); return;
      case Op::CombineArg: return;  // set by the Reduce that owns it
      case Op::ReduceResult:
        out = combines_[static_cast<size_t>(aux_[static_cast<size_t>(ops[0])])].results[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, id).index)];
        return;
      case Op::Dot:
        out.reset(n.dtype, n.shape);
        eval_dot(val(ops[0]), val(ops[1]), val(ops[2]), out, ir::dot_precision(g_, id) == ir::DotPrecision::tf32);
        return;
      // ---- memory
      case Op::Load: {
        const bool masked = ir::attrs<ir::AccessAttrs>(g_, id).masked;
        out.reset(n.dtype, n.shape);
        eval_load(g_, tensor(ops[0]), val(ops[1]), masked ? &val(ops[2]) : nullptr, masked ? &val(ops[3]) : nullptr, out);
        return;
      }
      case Op::Store:
      case Op::AtomicAdd: {
        const bool masked = ir::attrs<ir::AccessAttrs>(g_, id).masked;
        eval_store(g_, tensor(ops[0]), val(ops[1]), val(ops[2]), masked ? &val(ops[3]) : nullptr, n.op == Op::AtomicAdd);
        return;
      }
      case Op::DescLoad:
      case Op::DescStore: {
        const ir::TmaAttrs& a = tma_[static_cast<size_t>(aux_[static_cast<size_t>(id)])];
        int64_t coords[ir::kMaxRank];
        for (int d = 0; d < a.rank; ++d) coords[d] = scalar_i(ops[static_cast<size_t>(1 + d)]);
        const std::span<const int64_t> c(coords, static_cast<size_t>(a.rank));
        const TensorValue& t = tensor(ops[0]);
        const char* what = n.op == Op::DescLoad ? "descriptor_load" : "descriptor_store";
        // An i64 index became an i32 coordinate while tracing: the value before that conversion must
        // fit (tma::kCoordinateRule), else the coordinate wrapped.
        for (int d = 0; d < a.rank; ++d) {
          const NodeId c = ops[static_cast<size_t>(1 + d)];
          if (g_.node(c).op != Op::Cast || g_.node(g_.operand(c, 0)).dtype != DType::i64) continue;
          if (auto v = tma::check_coordinate(what, static_cast<size_t>(d), static_cast<size_t>(a.rank), scalar_i(g_.operand(c, 0))))
            throw OpError{v->rule, v->value, v->limit};
        }
        if (auto v = tma::check_inner_coordinate(what, t.dtype, coords[a.rank - 1])) throw OpError{v->rule, v->value, v->limit};
        if (n.op == Op::DescStore)
          if (auto v = tma::check_store_coordinates(c)) throw OpError{v->rule, v->value, v->limit};
        if (n.op == Op::DescLoad) {
          check_tma_global(g_, "descriptor_load", t, a.rank);
          out.reset(n.dtype, n.shape);
          eval_tma_load(g_, t, c, a, out);
        } else {
          check_tma_global(g_, "descriptor_store", t, a.rank);  // also checks t.rank == a.rank (merged views included)
          if (auto v = tma::check_store_extent(t.dtype, t.sizes[static_cast<size_t>(a.rank - 1)]))
            throw OpError{v->rule + " (" + tensor_name(g_, t) + ")", v->value, v->limit};
          eval_tma_store(g_, t, c, a, val(ops[static_cast<size_t>(1 + a.rank)]));
        }
        return;
      }
      case Op::DescPrefetch: {
        const ir::TmaAttrs& a = tma_[static_cast<size_t>(aux_[static_cast<size_t>(id)])];
        check_tma_global(g_, "prefetch_descriptor", tensor(ops[0]), a.rank);
        return;
      }
      // ---- control flow
      case Op::For: run_loop(id, ops); return;
      case Op::LoopIndex:
      case Op::LoopArg:
      case Op::Yield: return;  // set by the enclosing loop / read by the enclosing region op
      // ---- the schedule: the interpreter runs every op to completion where it stands
      TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
        return;
      case Op::LoopResult: {
        const LoopInfo& L = loops_[static_cast<size_t>(aux_[static_cast<size_t>(ops[0])])];
        out = L.carried[static_cast<size_t>(ir::attrs<ir::IndexAttrs>(g_, id).index)];
        return;
      }
      case Op::If: {
        IfInfo& info = ifs_[static_cast<size_t>(aux_[static_cast<size_t>(id)])];
        info.taken = scalar_i(ops[0]) ? 0 : 1;
        const ir::IfAttrs branches = ir::attrs<ir::IfAttrs>(g_, id);
        eval_region(info.taken == 0 ? branches.then_region : branches.else_region);
        return;
      }
      case Op::IfResult: {
        const IfInfo& info = ifs_[static_cast<size_t>(aux_[static_cast<size_t>(ops[0])])];
        out = val(g_.operand(info.yield[info.taken], ir::attrs<ir::IndexAttrs>(g_, id).index));
        return;
      }
    }
    throw InternalError("interpreter: unknown op " + std::string(ir::name_of(n.op)));
  }

  void run_loop(NodeId id, std::span<const NodeId> ops) {
    LoopInfo& L = loops_[static_cast<size_t>(aux_[static_cast<size_t>(id)])];
    const int64_t lo = scalar_i(ops[0]), hi = scalar_i(ops[1]), step = scalar_i(ops[2]);
    if (step <= 0) throw OpError{"for_range: the step must be positive", "step " + str(step), "> 0"};
    const size_t nargs = L.args.size();
    for (size_t k = 0; k < nargs; ++k) L.carried[k] = val(ops[3 + k]);
    const auto yielded = g_.operands(L.yield);
    for (int64_t i = lo; i < hi; i += step) {
      if (L.index != ir::kNoNode) {
        Block& b = vals_[static_cast<size_t>(L.index)];
        b.reset(DType::i32, ir::Shape{});
        b.i[0] = i;
      }
      for (size_t k = 0; k < nargs; ++k)
        if (L.args[k] != ir::kNoNode) vals_[static_cast<size_t>(L.args[k])] = L.carried[k];
      eval_region(L.body);
      // Copy every yielded value before replacing any (a body may yield its arguments swapped).
      for (size_t k = 0; k < nargs; ++k) L.next[k] = val(yielded[k]);
      std::swap(L.carried, L.next);
    }
  }

  /// A Reduce: for each result element, folds its elements along the axis from the first, left to
  /// right, by running the combine region on (partial results, next elements).
  void run_combine(NodeId id, std::span<const NodeId> xs) {
    CombineInfo& c = combines_[static_cast<size_t>(aux_[static_cast<size_t>(id)])];
    const size_t n = xs.size();
    const auto [outer, len, inner] = reduce_geometry(g_.node(xs[0]).shape, ir::attrs<ir::ReduceAttrs>(g_, id).axis);
    auto copy = [](Block& dst, int64_t di, const Block& src, int64_t si) {
      if (is_float(dst.dtype)) dst.f[static_cast<size_t>(di)] = src.f[static_cast<size_t>(si)];
      else dst.i[static_cast<size_t>(di)] = src.i[static_cast<size_t>(si)];
    };
    for (size_t k = 0; k < n; ++k) {
      const DType t = g_.node(xs[k]).dtype;
      c.results[k].reset(t, g_.node(id).shape);
      c.acc[k].reset(t, ir::Shape{});
      c.next[k].reset(t, ir::Shape{});
    }
    for (size_t k = 0; k < c.args.size(); ++k)
      if (c.args[k] != ir::kNoNode) vals_[static_cast<size_t>(c.args[k])].reset(g_.node(xs[k % n]).dtype, ir::Shape{});
    const auto ys = g_.operands(c.yield);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t first = o * len * inner + i;
        for (size_t k = 0; k < n; ++k) copy(c.acc[k], 0, val(xs[k]), first);
        for (int64_t l = 1; l < len; ++l) {
          for (size_t k = 0; k < n; ++k) {
            if (c.args[k] != ir::kNoNode) copy(vals_[static_cast<size_t>(c.args[k])], 0, c.acc[k], 0);
            if (c.args[n + k] != ir::kNoNode) copy(vals_[static_cast<size_t>(c.args[n + k])], 0, val(xs[k]), first + l * inner);
          }
          eval_region(c.region);
          for (size_t k = 0; k < n; ++k) copy(c.next[k], 0, val(ys[k]), 0);
          std::swap(c.acc, c.next);
        }
        for (size_t k = 0; k < n; ++k) copy(c.results[k], o * inner + i, c.acc[k], 0);
      }
  }

  const ir::Graph& g_;
  dim3 grid_;
  dim3 tile_grid_;  // TileGrid's values
  std::span<const KernelArg> args_;
  std::vector<Block> vals_;
  std::vector<TensorValue> tens_;
  std::vector<int32_t> aux_;
  std::vector<uint8_t> invariant_;
  std::vector<LoopInfo> loops_;
  std::vector<IfInfo> ifs_;
  std::vector<CombineInfo> combines_;
  std::vector<ir::TmaAttrs> tma_;
  bool invariants_ready_ = false;
  uint32_t pid_[3] = {0, 0, 0};
  struct Saved {
    std::byte* at;
    std::vector<std::byte> bytes;
  };
  std::vector<Saved> saved_;
};

}  // namespace

void run(const ir::Graph& g, dim3 grid, std::span<const KernelArg> args, const args::CallSite* call_site,
         const dim3* tile_grid) {
  Machine m(g, grid, args, tile_grid ? *tile_grid : grid);
  m.run(call_site ? *call_site : args::CallSite::of(g.kernel_location));
}

}  // namespace tilejit::interp
