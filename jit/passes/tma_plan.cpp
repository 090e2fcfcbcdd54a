// TMA planning: one decision per distinct descriptor (host-encoded, tensor array, or built on the device).
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "passes/rewrite.h"
#include "passes/tensor_source.h"
#include "tilejit/error.h"
#include "tilejit/layout/shared_layout.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"
#include "tilejit/tma_rules.h"

namespace tilejit::passes {

using detail::TensorSource;
using ir::Op;

std::string_view name_of(DescKind k) {
  switch (k) {
    case DescKind::Host: return "host-encoded";
    case DescKind::Array: return "array";
    case DescKind::Device: return "device-built";
  }
  return "?";
}

namespace {

bool is_tma(Op op) { return op == Op::DescLoad || op == Op::DescStore || op == Op::DescPrefetch; }

[[noreturn]] void fail(const ir::Graph& g, NodeId op, std::string rule, std::string value, std::string limit) {
  const ir::Location& l = g.location(op);
  throw UserError(std::move(rule), std::move(value), std::move(limit), l.file, l.line);
}

const char* op_word(Op op) {
  return op == Op::DescLoad ? "descriptor_load" : op == Op::DescStore ? "descriptor_store" : "prefetch_descriptor";
}

/// The placement an op gets: 1 host (a parameter's own or a tensor array's), 2 device.
int decide(const ir::Graph& g, NodeId op) {
  const ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g, op);
  const TensorSource s = detail::resolve_tensor(g, g.operand(op, 0));
  const std::string w = op_word(g.node(op).op);
  if (g.node(op).op == Op::DescStore && (a.reduce == ir::StoreReduce::min || a.reduce == ir::StoreReduce::max) &&
      (g.node(op).dtype == ir::DType::f32 || g.node(op).dtype == ir::DType::f64))
    fail(g, op, w + ": the TMA min/max reduction of sm_90 supports f16, bf16, i32 and i64 elements only",
         std::string(ir::name_of(g.node(op).dtype)), "f16, bf16, i32, i64");
  switch (s.kind) {
    case TensorSource::Param:
      return a.placement == 2 ? 2 : 1;
    case TensorSource::Array:
      if (a.placement == 2)
        fail(g, op, w + ": tensor array elements have host-encoded descriptors only (the kernel does not know their addresses)",
             "Placement::device", "Placement::automatic or Placement::host");
      return 1;
    case TensorSource::View:
      if (a.placement == 1)
        fail(g, op, w + ": a view made in the kernel (make_view / rows) has no host-encoded descriptor; its extent is only known on the device",
             "Placement::host", "Placement::automatic or Placement::device");
      return 2;
  }
  return 1;
}

}  // namespace

namespace {

/// The descriptors built at one point, spread over the program's warps (Descriptor::build_warp).
void assign_build_warps(const ir::Graph& g, const std::vector<Descriptor*>& group) {
  const bool wait_stores = std::any_of(group.begin(), group.end(), [](const Descriptor* d) { return d->waits_for_stores(); });
  for (size_t k = 0; k < group.size(); ++k) group[k]->build_warp = wait_stores ? 0 : static_cast<int>(k) % std::max(1, g.num_warps);
}

/// Builds views' descriptors together: a descriptor is built after the last of the views made in its region before
/// the first use of any of them, so that views made one after another (a jagged sequence's q, k, v and output) are
/// built in one step, by different warps at once, with one barrier (build_descriptors), instead of one step each.
void group_builds(const ir::Graph& g, const GraphInfo& info, TmaPlan& plan) {
  const auto pos = [&](NodeId n) { return info.position[static_cast<size_t>(n)]; };
  std::vector<Descriptor*> views, at_start;
  for (Descriptor& d : plan.descriptors)
    if (d.kind == DescKind::Device) (d.build_at != ir::kNoNode ? views : at_start).push_back(&d);
  assign_build_warps(g, at_start);
  std::sort(views.begin(), views.end(), [&](const Descriptor* a, const Descriptor* b) { return pos(a->build_at) < pos(b->build_at); });
  const auto first_use = [&](const Descriptor* d) {
    int first = std::numeric_limits<int>::max();
    for (NodeId u : d->uses) first = std::min(first, pos(u));
    return first;
  };
  for (size_t i = 0; i < views.size();) {
    // The group of views[i]: the views after it in its region made before any member is used.
    const uint32_t region = g.node(views[i]->build_at).region;
    int deadline = first_use(views[i]);
    size_t j = i + 1;
    for (; j < views.size() && pos(views[j]->build_at) < deadline && g.node(views[j]->build_at).region == region; ++j)
      deadline = std::min(deadline, first_use(views[j]));
    const NodeId last = views[j - 1]->build_at;
    for (size_t k = i; k < j; ++k) views[k]->build_at = last;
    assign_build_warps(g, std::vector<Descriptor*>(views.begin() + static_cast<std::ptrdiff_t>(i), views.begin() + static_cast<std::ptrdiff_t>(j)));
    i = j;
  }
}

}  // namespace

TmaPlan collect_descriptors(const ir::Graph& g, const GraphInfo& info, const MmaPlan* mma, const ValueLayouts* layout) {
  std::vector<NodeId> ops;
  for (size_t i = 0; i < g.size(); ++i)
    if (is_tma(g.node(static_cast<NodeId>(i)).op) && info.position[i] >= 0) ops.push_back(static_cast<NodeId>(i));
  std::sort(ops.begin(), ops.end(), [&](NodeId a, NodeId b) {
    return info.position[static_cast<size_t>(a)] < info.position[static_cast<size_t>(b)];
  });

  using Key = std::tuple<int, int, NodeId, std::vector<int>, int, std::array<int32_t, ir::kMaxRank>,
                         std::array<int32_t, ir::kMaxRank>, int, int>;
  std::map<Key, int> index;
  TmaPlan plan;
  int next_table = 0;
  for (NodeId op : ops) {
    const ir::Node& n = g.node(op);
    ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g, op);
    const NodeId tensor = g.operand(op, 0);
    const TensorSource s = detail::resolve_tensor(g, tensor);
    if (n.op == Op::DescStore) {
      const ir::Shape& vs = g.node(g.operands(op).back()).shape;
      for (int i = 0; i < a.rank; ++i) {
        a.box[i] = vs.dims[i];
        a.estride[i] = 1;
      }
      a.fill = 0;
    }
    for (int i = a.rank; i < ir::kMaxRank; ++i) a.box[i] = 0, a.estride[i] = 1;
    DescKind kind = DescKind::Host;
    if (a.placement == 2) kind = DescKind::Device;
    else if (s.kind == TensorSource::Array) kind = DescKind::Array;
    check_internal(a.placement == 1 || a.placement == 2, "collect_descriptors: placement not decided");
    check_internal(!(kind == DescKind::Host && s.kind == TensorSource::View), "host descriptor of a view");
    // Views are identified by the tensor node (its fields are values of this program);
    // parameters and arrays by the parameter and the merge groups.
    const bool by_node = s.kind == TensorSource::View;
    int swizzle = 0;
    if (mma)
      if (auto sw = mma->swizzle.find(op); sw != mma->swizzle.end()) swizzle = sw->second;
    if (layout && n.op == Op::DescStore && a.reduce == ir::StoreReduce::none) {
      // A tile that registers write to shared memory for the store (not a loaded tile stored as it is):
      // swizzled when that makes the writes conflict-free, e.g. a wgmma accumulator's rows.
      const NodeId v = g.operands(op).back();
      const ValueLayout& lv = layout->of[static_cast<size_t>(v)];
      if (lv.kind == ValueLayout::Distributed && g.node(v).op != Op::DescLoad)
        swizzle = layout::staging_swizzle(lv.dist, ir::size_of(n.dtype));
    }
    const Key key{static_cast<int>(kind), s.param, by_node ? tensor : ir::kNoNode, s.groups,
                  static_cast<int>(n.dtype), a.box, a.estride, a.fill, swizzle};
    auto [it, fresh] = index.emplace(key, static_cast<int>(plan.descriptors.size()));
    if (fresh) {
      Descriptor d;
      d.kind = kind;
      d.tensor = tensor;
      d.view = s.view;
      d.param = s.param;
      d.merge_groups = s.groups;
      d.dtype = n.dtype;
      d.rank = a.rank;
      d.box = a.box;
      d.estride = a.estride;
      // A box over the hardware's 256 is issued as several operations of the piece box.
      std::vector<int64_t> box(a.box.begin(), a.box.begin() + a.rank), est(a.estride.begin(), a.estride.begin() + a.rank);
      d.swizzle = swizzle;
      if (swizzle > 0) {
        // A wgmma operand or a swizzled store: pieces as wide as the swizzle along the inner dimension
        // (layout::SharedLayout).
        const int inner = a.rank - 1;
        const int32_t piece = swizzle / ir::size_of(n.dtype);
        d.split_dim = inner;
        d.pieces = a.box[static_cast<size_t>(inner)] / piece;
        d.box[static_cast<size_t>(inner)] = piece;
      } else if (auto split = tma::split_box(n.dtype, box, est)) {
        d.split_dim = split->dim;
        d.pieces = static_cast<int>(split->pieces);
        d.box[static_cast<size_t>(split->dim)] = static_cast<int32_t>(split->piece);
      }
      d.fill = a.fill;
      d.first_use = op;
      if (kind == DescKind::Device) {
        d.slot = plan.num_device++;
        d.build_at = by_node ? tensor : ir::kNoNode;
        d.rebuilt_in_loop = by_node && info.in_loop(tensor);
      } else {
        d.slot = next_table++;
        (kind == DescKind::Host ? plan.num_host : plan.num_array)++;
      }
      plan.descriptors.push_back(std::move(d));
    }
    Descriptor& d = plan.descriptors[static_cast<size_t>(it->second)];
    d.uses.push_back(op);
    d.used_by_store = d.used_by_store || n.op == Op::DescStore;
    plan.of[op] = it->second;
  }
  group_builds(g, info, plan);
  return plan;
}

ir::Graph plan_tma(const ir::Graph& g, TmaPlan& plan) {
  detail::Rewriter rw(g);
  ir::Graph out = rw.run([](detail::Rewriter& r, NodeId old) -> NodeId {
    const ir::Graph& in = r.in();
    if (!is_tma(in.node(old).op)) return ir::kNoNode;
    ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(in, old);
    a.placement = decide(in, old);
    return r.copy_with_ints(old, a.encode(in.node(old).op));
  });
  plan = collect_descriptors(out, analyze(out));
  return out;
}

}  // namespace tilejit::passes
