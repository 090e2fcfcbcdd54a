// Kernel parameters: which tensor bases, sizes, strides, scalars and descriptors the kernel takes, in order.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "passes/tensor_source.h"
#include "tilejit/error.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/argument_plan.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/smem_plan.h"
#include "tilejit/passes/tma_plan.h"

namespace tilejit::passes {

using codegen::ArgSlot;
using detail::TensorSource;
using ir::Op;

namespace {
int64_t tensor_key(int param, TensorField field, int index) {
  return (static_cast<int64_t>(param) << 8) | (static_cast<int>(field) << 4) | index;
}

[[noreturn]] void fail_array(const ir::Graph& g, NodeId at, const std::string& what) {
  const ir::Location& l = g.location(at);
  throw UserError(what + ": the elements of a TensorArray are reachable through TMA only (descriptor_load / "
                         "descriptor_store / prefetch_descriptor); the kernel does not receive their addresses",
                  "an element of a TensorArray", "a Tensor parameter or a view of one", l.file, l.line);
}
}  // namespace

int ArgumentPlan::find_tensor(int param, TensorField field, int index) const {
  auto it = tensor_slot.find(tensor_key(param, field, index));
  check_internal(it != tensor_slot.end(), "plan_arguments: tensor slot missing");
  return it->second;
}

namespace {

/// What the kernel reads of its parameters: per tensor parameter the fields it needs ({field, index}), and
/// the scalar parameters it uses.
struct Needs {
  std::map<int, std::set<std::pair<TensorField, int>>> fields;
  std::set<int> scalars;
};

Needs collect_needs(const ir::Graph& g, const TmaPlan& tma, bool checked) {
  using F = TensorField;
  Needs needs;
  auto& need = needs.fields;
  std::set<int>& scalars = needs.scalars;
  std::function<void(NodeId, NodeId)> need_pointer = [&](NodeId tensor, NodeId at) {
    const TensorSource s = detail::resolve_tensor(g, tensor);
    if (s.kind == TensorSource::Array) fail_array(g, at, "pointer access");
    if (s.kind == TensorSource::View) return need_pointer(g.operand(s.view, 0), at);
    need[s.param].insert({F::base, 0});
    if (checked && g.node(at).op != Op::MakeView)  // the bounds of the access (emit_debug.cpp)
      for (int k = 0; k < s.root_rank; ++k) need[s.param].insert({F::size, k}), need[s.param].insert({F::stride, k});
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    const ir::Node& n = g.node(id);
    switch (n.op) {
      case Op::Load: case Op::Store: case Op::AtomicAdd:
        need_pointer(g.operand(id, 0), id);
        break;
      case Op::MakeView:
        if (detail::resolve_tensor(g, g.operand(id, 0)).kind == TensorSource::Array)
          fail_array(g, id, "make_view / rows");
        need_pointer(g.operand(id, 0), id);
        break;
      case Op::TensorSize: case Op::TensorStride: {
        const TensorSource s = detail::resolve_tensor(g, g.operand(id, 0));
        const int d = ir::attrs<ir::DimAttrs>(g, id).dim;
        if (s.kind == TensorSource::Array) fail_array(g, id, n.op == Op::TensorSize ? "tensor.size" : "tensor.stride");
        if (s.kind == TensorSource::View) break;
        const int first = s.first_root_dim(d), count = s.root_dims(d);
        if (n.op == Op::TensorSize) {
          for (int k = 0; k < count; ++k) need[s.param].insert({F::size, first + k});
        } else {
          need[s.param].insert({F::stride, first + count - 1});
        }
        break;
      }
      case Op::ParamScalar:
        scalars.insert(ir::attrs<ir::ParamAttrs>(g, id).param);
        break;
      // No other op reads a tensor's pointer, sizes or strides or a scalar (TMA operations: descriptors, below).
      TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE) TILEJIT_MOVEMENT_OPS(TILEJIT_CASE) TILEJIT_REDUCTION_OPS(TILEJIT_CASE)
      TILEJIT_TMA_OPS(TILEJIT_CASE) TILEJIT_CONTROL_OPS(TILEJIT_CASE) TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
      case Op::ParamTensor: case Op::ParamTensorArray: case Op::ArrayElem: case Op::MergeView:
      case Op::Const: case Op::ProgramId: case Op::NumPrograms: case Op::TileGrid: case Op::Arange: case Op::Dot:
        break;
    }
  }
  // ParamScalar nodes without users are not parameters of the kernel.
  {
    std::set<int> used;
    for (size_t i = 0; i < g.size(); ++i)
      for (NodeId o : g.operands(static_cast<NodeId>(i)))
        if (g.node(o).op == Op::ParamScalar) used.insert(ir::attrs<ir::ParamAttrs>(g, o).param);
    scalars = used;
  }
  for (const Descriptor& d : tma.descriptors) {
    if (d.kind != DescKind::Device) continue;
    if (d.view != ir::kNoNode) continue;  // fields come from the view's operands
    const int rank = g.params[static_cast<size_t>(d.param)].rank;
    need[d.param].insert({F::base, 0});
    for (int k = 0; k < rank; ++k) need[d.param].insert({F::size, k}), need[d.param].insert({F::stride, k});
  }
  return needs;
}

}  // namespace

ArgumentPlan plan_arguments(const ir::Graph& g, const TmaPlan& tma, const SmemPlan& smem, int threads, bool checked) {
  using F = TensorField;
  Needs needs = collect_needs(g, tma, checked);
  auto& need = needs.fields;
  const std::set<int>& scalars = needs.scalars;
  ArgumentPlan ap;
  codegen::LaunchPlan& plan = ap.plan;
  auto add = [&](ArgSlot s, std::string name) {
    plan.slots.push_back(s);
    ap.names.push_back(std::move(name));
    return static_cast<int>(plan.slots.size() - 1);
  };
  std::vector<const Descriptor*> table;  // host and array descriptors by table index
  for (const Descriptor& d : tma.descriptors)
    if (d.kind != DescKind::Device) table.push_back(&d);
  std::sort(table.begin(), table.end(), [](const Descriptor* a, const Descriptor* b) { return a->slot < b->slot; });
  for (const Descriptor* d : table) {
    codegen::HostDescriptor h;
    static_cast<codegen::TensorMapFields&>(h) = *d;
    if (d->first_use != ir::kNoNode) h.first_use = g.location(d->first_use);
    plan.descriptors.push_back(h);
  }
  for (size_t p = 0; p < g.params.size(); ++p) {
    const ir::Param& prm = g.params[p];
    const int pi = static_cast<int>(p);
    if (prm.kind == ir::Param::Tensor) {
      for (auto [field, index] : need[pi]) {
        ArgSlot s{field == F::base ? ArgSlot::TensorBase : field == F::size ? ArgSlot::TensorSize : ArgSlot::TensorStride, pi,
                  index, 8, 8};
        const std::string name =
            field == F::base ? prm.name : prm.name + (field == F::size ? "_size" : "_stride") + std::to_string(index);
        ap.tensor_slot[tensor_key(pi, field, index)] = add(s, name);
      }
    }
    if (prm.kind == ir::Param::Tensor || prm.kind == ir::Param::TensorArray) {
      for (const Descriptor* d : table) {
        if (d->param != pi) continue;
        const bool array = d->kind == DescKind::Array;
        ArgSlot s{array ? ArgSlot::DescArray : ArgSlot::HostDesc, pi, d->slot, array ? 8 : 128, array ? 8 : 64};
        ap.desc_slot[d->slot] = add(s, "d" + std::to_string(d->slot));
      }
    }
    if (prm.kind == ir::Param::Scalar && scalars.count(pi)) {
      const int bytes = ir::size_of(prm.dtype);
      ap.scalar_slot[pi] = add(ArgSlot{ArgSlot::Scalar, pi, 0, bytes, bytes}, prm.name);
    }
  }
  if (tma.num_device > 0) ap.workspace_slot = add(ArgSlot{ArgSlot::Workspace, -1, 0, 8, 8}, "workspace");
  // The launch grid's extents that persistent programs read (passes::persistent_programs).
  bool tile_axis[3] = {false, false, false};
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(static_cast<NodeId>(i)).op == Op::TileGrid) tile_axis[ir::attrs<ir::AxisAttrs>(g, static_cast<NodeId>(i)).axis] = true;
  static const char* const kAxes[] = {"x", "y", "z"};
  for (int a = 0; a < 3; ++a)
    if (tile_axis[a]) ap.tile_grid_slot[a] = add(ArgSlot{ArgSlot::TileGrid, -1, a, 4, 4}, std::string("tj_grid_") + kAxes[a]);
  plan.persistent = g.persistent;
  plan.threads = threads;
  plan.shared_bytes = smem.total_bytes;
  plan.device_descriptors = tma.num_device;
  plan.workspace_bytes_per_program = int64_t{128} * tma.num_device;
  return ap;
}

}  // namespace tilejit::passes
