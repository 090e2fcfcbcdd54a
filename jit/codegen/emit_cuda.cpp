// The kernel around its ops (header comment, signature, prologue), the walk over its nodes, elementwise ops.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "codegen/emitter.h"
#include "codegen/prelude.h"
#include "tilejit/ir/effects.h"
#include "tilejit/ir/op_cases.h"
#include "tilejit/passes/describe.h"

namespace tilejit::codegen::detail {

// ---- header and signature ------------------------------------------------------

std::string Emitter::header() const {
  std::string h;
  h += "// tilejit kernel \"" + g_.kernel_name + "\" (entry " + entry_ + ")\n";
  const ir::Location& loc = g_.kernel_location;
  h += "//   source: " + (loc.file.empty() ? std::string("(unknown)") : loc.file + ":" + str(loc.line)) + "\n";
  std::string cfg;
  for (const auto& [k, v] : g_.config) cfg += (cfg.empty() ? "" : ", ") + k + "=" + str(v);
  h += "//   config: " + (cfg.empty() ? std::string("(none)") : cfg) + "; num_warps=" + str(g_.num_warps) +
       ", num_stages=" +
       (!L_.pipe.stages_chosen ? str(g_.num_stages) : L_.pipe.loops.empty() ? "auto" : "auto (" + str(L_.pipe.stages) + ")") +
       (g_.min_programs_per_sm > 0 ? ", programs_per_sm=" + str(g_.min_programs_per_sm) : std::string()) +
       (g_.warp_specialize == WarpSpecialize::on ? ", warp_specialize" : g_.warp_specialize == WarpSpecialize::off ? ", warp_specialize=0" : "") +
       (g_.overlap_products == OverlapProducts::on    ? ", overlap_products"
        : g_.overlap_products == OverlapProducts::off ? ", overlap_products=0"
                                                      : "") +
       (g_.pingpong == Pingpong::on ? ", pingpong" : g_.pingpong == Pingpong::off ? ", pingpong=0" : "") +
       (L_.cluster.size() > 1 ? ", cluster=" + str(L_.cluster.x) + "x" + str(L_.cluster.y) : std::string()) +
       (g_.fp_contract ? "" : ", fp_contract=0") +
       (g_.producer_registers > 0 ? ", producer_registers=" + str(g_.producer_registers) : std::string()) +
       (g_.persistent ? ", persistent" : "") + (g_.tile_group > 0 ? ", tile_group=" + str(g_.tile_group) : std::string()) + "\n";
  if (g_.persistent)
    h += "//   persistent programs: min(grid programs, SMs x programs per SM) programs, each running the grid's programs " +
         std::string("p, p + programs, ... in ") +
         (g_.tile_group > 0 ? "groups of " + str(g_.tile_group) + " x indices (Triton's grouped order)" : std::string("the launch order")) +
         "; the grid's extents are parameters tj_grid_x/y/z\n";
  h += "//   threads: " + str(L_.roles.on() ? L_.roles.threads() : threads_) + ", dynamic shared memory: " + str(L_.smem.total_bytes) +
       " bytes, workspace: " + str(L_.args.plan.workspace_bytes_per_program) + " bytes per program\n";
  std::string d = passes::describe(L_);
  size_t pos = 0;
  while (pos < d.size()) {
    const size_t nl = d.find('\n', pos);
    h += "//   " + d.substr(pos, nl - pos) + "\n";
    pos = nl == std::string::npos ? d.size() : nl + 1;
  }
  std::string spec;
  const std::vector<codegen::Specialization::Bits> relevant = passes::relevant_specialization(g_);
  for (size_t p = 0; p < g_.params.size(); ++p) {
    if (g_.params[p].kind != ir::Param::Tensor || relevant[p] == 0) continue;
    const codegen::Specialization::Bits bits = L_.spec.of(static_cast<int>(p)) & relevant[p];
    std::string facts;
    if (relevant[p] & codegen::Specialization::kBaseAligned)
      facts = (bits & codegen::Specialization::kBaseAligned) ? "base 16-byte aligned" : "base not known to be aligned";
    for (int d = 0; d < g_.params[p].rank; ++d) {
      if (bits & codegen::Specialization::size_div16(d)) facts += (facts.empty() ? "" : ", ") + std::string("size") + str(d) + " % 16 == 0";
      if (bits & codegen::Specialization::stride_div16(d)) facts += (facts.empty() ? "" : ", ") + std::string("stride") + str(d) + " % 16 == 0";
    }
    spec += "//     " + g_.params[p].name + ": " + facts + "\n";
  }
  if (!spec.empty()) h += "//   argument specialisation (what this variant assumes of its launch's tensors):\n" + spec;
  bool loop_load = false;
  for (size_t i = 0; i < g_.size(); ++i) {
    if (L_.info.position[i] < 0) continue;
    const auto id = static_cast<NodeId>(i);
    loop_load = loop_load || (g_.node(id).op == Op::DescLoad && L_.info.in_loop(id) && !L_.pipe.loop_of.count(id));
  }
  if (loop_load)
    h += "//   note: TMA loads in loops without a software pipeline are issued and awaited once per iteration.\n";
  return h;
}

std::string Emitter::signature() const {
  // With warp roles the launch bounds name every thread and at least one program per SM: ptxas then gives each
  // thread the registers setmaxnreg moves between the roles (65536 / threads / programs).
  const int programs = L_.roles.on() ? std::max(1, g_.min_programs_per_sm) : g_.min_programs_per_sm;
  const std::string bounds = str(L_.roles.on() ? L_.roles.threads() : threads_) + (programs > 0 ? ", " + str(programs) : "");
  const std::string cluster =
      L_.cluster.size() > 1 ? "__cluster_dims__(" + str(L_.cluster.x) + ", " + str(L_.cluster.y) + ", 1) " : std::string();
  std::string s = "extern \"C\" __global__ void " + cluster + "__launch_bounds__(" + bounds + ") " + entry_ + "(";
  const auto& slots = L_.args.plan.slots;
  // Pointers declared without const: the tensors the kernel writes (ir::written_params), and the bases of
  // views, whose device-built descriptors and pointers are made from them.
  const std::vector<int> writes = ir::written_params(g_);
  std::set<int> written(writes.begin(), writes.end());
  for (size_t i = 0; i < g_.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (g_.node(id).op != Op::MakeView || L_.info.position[i] < 0) continue;
    if (const int p = ir::tensor_param(g_, id); p >= 0) written.insert(p);
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    const ArgSlot& a = slots[k];
    const std::string& n = L_.args.names[k];
    std::string p;
    switch (a.kind) {
      case ArgSlot::TensorBase: {
        const DType t = g_.params[static_cast<size_t>(a.param)].dtype;
        p = (written.count(a.param) ? "" : "const ") + mem_type(t) + "* " + n;
        break;
      }
      case ArgSlot::TensorSize: case ArgSlot::TensorStride: p = "long long " + n; break;
      case ArgSlot::Scalar: p = reg_type(g_.params[static_cast<size_t>(a.param)].dtype) + " " + n; break;
      case ArgSlot::HostDesc: p = "const __grid_constant__ tj::TensorMap " + n; break;
      case ArgSlot::DescArray: p = "const tj::TensorMap* __restrict__ " + n; break;
      case ArgSlot::Workspace: p = "unsigned char* " + n; break;
      case ArgSlot::TileGrid: p = "int " + n; break;
    }
    s += "\n    " + p + (k + 1 < slots.size() ? "," : "");
  }
  return s + ")";
}

// ---- prologue: shared memory, barriers, descriptors built at kernel start ------------

void Emitter::prologue() {
  const passes::SmemPlan& sm = L_.smem;
  line("const int tid = threadIdx.x;");
  if (sm.total_bytes > 0) line("extern __shared__ __align__(1024) unsigned char tj_smem[];");
  for (size_t b = 0; b < sm.buffers.size(); ++b) {
    const passes::SmemBuffer& buf = sm.buffers[b];
    const std::string t = mem_type(g_.node(buf.node).dtype);
    line(t + "* const tj_buf" + str(static_cast<int64_t>(b)) + " = reinterpret_cast<" + t + "*>(tj_smem + " +
         str(buf.offset) + ");  // " + buf.role + " " + where(buf.node) + ", " + str(buf.bytes) + " bytes");
  }
  if (sm.num_barriers > 0)
    line("unsigned long long* const tj_bar = reinterpret_cast<unsigned long long*>(tj_smem + " +
         str(sm.barrier_offset) + ");  // " + str(sm.num_barriers) + " mbarrier(s)");
  if (sm.scratch_bytes > 0)
    line("unsigned char* const tj_scratch = tj_smem + " + str(sm.scratch_offset) + ";  // " + str(sm.scratch_bytes) +
         " bytes of scratch");
  if (sm.desc_stage_offset >= 0)
    line("unsigned char* const tj_desc_stage = tj_smem + " + str(sm.desc_stage_offset) +
         ";  // 128 bytes per device-built descriptor");
  for (const Descriptor& d : L_.tma.descriptors) {
    if (d.kind != DescKind::Device) continue;
    line("tj::TensorMap* const tj_desc" + str(d.slot) +
         " = reinterpret_cast<tj::TensorMap*>(workspace + (static_cast<unsigned long long>(tj::linear_program_id()) * " +
         str(L_.tma.num_device) + " + " + str(d.slot) + ") * 128);");
  }
  std::vector<NodeId> repeated;
  for (const auto& [id, lp] : sm.loads)
    if (lp.repeated && lp.barrier >= 0) repeated.push_back(id);
  std::sort(repeated.begin(), repeated.end(), [&](NodeId a, NodeId b) { return sm.loads.at(a).barrier < sm.loads.at(b).barrier; });
  for (NodeId id : repeated)
    line("unsigned tj_phase" + str(sm.loads.at(id).barrier) + " = 0;  // parity of the next use of mbarrier " +
         str(sm.loads.at(id).barrier) + " (" + where(id) + ")");
  std::vector<NodeId> persistent_rings;
  for (const auto& [f, p] : L_.pipe.loops)
    if (p.ring_persists && p.ring == f) persistent_rings.push_back(f);  // one counter per ring
  std::sort(persistent_rings.begin(), persistent_rings.end());
  for (NodeId f : persistent_rings) {
    std::vector<NodeId> others;  // the loops that use this loop's ring too
    for (const auto& [l, p] : L_.pipe.loops)
      if (p.ring == f && l != f) others.push_back(l);
    std::sort(others.begin(), others.end());
    std::string sharing;
    for (NodeId l : others) sharing += ", " + where(l);
    line("int tj_ring" + str(f) + " = 0;  // iterations of the pipelined loop" + (sharing.empty() ? " " : "s ") + where(f) + sharing +
         " done in earlier runs: its stage barriers' phases carry over");
  }

  bool host_prefetch = false;
  for (const Descriptor& d : L_.tma.descriptors) host_prefetch = host_prefetch || d.kind == DescKind::Host;
  if (host_prefetch || sm.num_barriers > 0) {
    open("if (tid == 0)");
    for (const Descriptor& d : L_.tma.descriptors)
      if (d.kind == DescKind::Host) line("tj::prefetch_tensormap(&d" + str(d.slot) + ");");
    for (int b = 0; b < sm.num_barriers; ++b) {
      const auto arrivals = sm.barrier_arrivals.find(b);
      const bool cluster_empty = sm.cluster_empty >= 0 && b >= sm.cluster_empty && b < sm.exchange_barrier;
      const bool both = L_.cluster.multicast() && sm.cluster_empty < 0 && L_.roles.serves(L_.cluster.loop);  // ClusterPlan
      line("tj::mbarrier_init(&tj_bar[" + str(b) + "], " +
           (b == sm.built_barrier ? str(sm.barrier_arrivals.at(b)) + ");  // descriptors built: one arrival per build the producer warpgroup awaits"
            : arrivals == sm.barrier_arrivals.end() ? "1);"
            : cluster_empty ? str(arrivals->second) + ");  // a cluster empty barrier: one arrival per program of the cluster"
            : both          ? str(arrivals->second) + ");  // an empty barrier: one arrival per consumer warp of the cluster's two programs"
                            : str(arrivals->second) + ");  // an empty barrier: one arrival per consumer warp"));
    }
    if (sm.num_barriers > 0) line("tj::fence_mbarrier_init();");
    close();
  }
  bool others_wait = false;
  for (const auto& [id, lp] : sm.loads) others_wait = others_wait || lp.all_threads_wait;
  auto it = builds_.find(ir::kNoNode);
  if (it != builds_.end()) {
    build_descriptors(ir::kNoNode, it->second);  // ends with __syncthreads()
  } else if (others_wait || L_.roles.on()) {
    sync("barriers initialised before any thread waits on them");
  }
  if (L_.cluster.multicast())
    line("tj::cluster_sync();  // both programs' barriers initialised before either arrives on the other's or multicasts into it");
}

// ---- regions and nodes --------------------------------------------------------------------

void Emitter::emit_region(uint32_t r) {
  for (NodeId id : g_.region(r).nodes) emit_node(id);
}

void Emitter::emit_node(NodeId id) {
  const ir::Node& n = g_.node(id);
  switch (n.op) {
    case Op::ParamTensor: case Op::ParamTensorArray: case Op::MergeView:
      break;
    case Op::ParamScalar: {
      auto it = L_.args.scalar_slot.find(ir::attrs<ir::ParamAttrs>(g_, id).param);
      if (it != L_.args.scalar_slot.end()) name_[static_cast<size_t>(id)] = L_.args.names[static_cast<size_t>(it->second)];
      break;
    }
    case Op::Const:
      name_[static_cast<size_t>(id)] = detail::literal(g_, id);
      break;
    case Op::TensorSize: case Op::TensorStride:
      line("const " + decl(id) + " = " +
               tensor_field(g_.operand(id, 0), n.op == Op::TensorSize ? passes::TensorField::size : passes::TensorField::stride,
                            ir::attrs<ir::DimAttrs>(g_, id).dim) + ";",
           id);
      break;
    case Op::ArrayElem: {
      auto it = array_prefetch_.find(id);
      const ir::ArrayPrefetch how = ir::array_prefetch(g_, id);
      if (it != array_prefetch_.end() && how != ir::ArrayPrefetch::none)
        for (const Descriptor* d : it->second)
          line(std::string("if (tid == 0) tj::") + (how == ir::ArrayPrefetch::l2 ? "prefetch_l2" : "prefetch_tensormap") +
                   "(&d" + str(d->slot) + "[" + at(g_.operand(id, 1)) + "]);",
               id);
      break;
    }
    case Op::MakeView: {
      const std::string t = mem_type(n.dtype);
      line(t + "* const " + var(id) + " = " + tensor_ptr(g_.operand(id, 0)) + " + " + at(g_.operand(id, 1)) + ";", id);
      name_[static_cast<size_t>(id)] = var(id);
      break;
    }
    case Op::ProgramId: case Op::NumPrograms: {
      static const char* axes[] = {"x", "y", "z"};
      line("const " + decl(id) + " = static_cast<int>(" + (n.op == Op::ProgramId ? "blockIdx." : "gridDim.") +
               axes[ir::attrs<ir::AxisAttrs>(g_, id).axis] + ");",
           id);
      break;
    }
    case Op::TileGrid: {
      const int slot = L_.args.tile_grid_slot[ir::attrs<ir::AxisAttrs>(g_, id).axis];
      check_internal(slot >= 0, "emitter: tile_grid without its parameter");
      name_[static_cast<size_t>(id)] = L_.args.names[static_cast<size_t>(slot)];
      break;
    }
    case Op::Arange: {
      const int64_t start = ir::attrs<ir::ArangeAttrs>(g_, id).start;
      if (uniform(id)) {
        line("const " + decl(id) + " = " + str(start) + ";", id);
        break;
      }
      line(decl_stmt(id), id);
      const ValueLayout& v = lay(id);
      line("#pragma unroll");
      line("for (int i = 0; i < " + str(v.regs()) + "; ++i) " + var(id) + "[i] = " + (start ? str(start) + " + " : "") +
           elem(v, "i") + ";");
      break;
    }
    case Op::Broadcast: emit_broadcast(id); break;
    case Op::Reshape: emit_reshape(id); break;
    case Op::ConvertLayout: emit_convert(id); break;
    case Op::Permute:
      if (!L_.mma.absorbed.count(id)) emit_permute(id);  // else wgmma reads the tile with its transpose bit
      break;
    case Op::ReduceSum: case Op::ReduceMax: case Op::ReduceMin: case Op::ArgMax: case Op::Reduce: emit_reduce(id); break;
    case Op::ReduceResult: emit_reduce_result(id); break;
    case Op::CombineArg: break;  // a parameter of the combine function the Reduce emits
    case Op::Dot: emit_dot(id); break;
    case Op::Load: emit_load(id); break;
    case Op::Store: case Op::AtomicAdd: emit_store(id); break;
    case Op::DescLoad: emit_desc_load(id); break;
    case Op::DescStore: emit_desc_store(id); break;
    case Op::DescPrefetch:
      line("if (tid == 0) tj::prefetch_tensormap(" + desc_addr(id) + ");", id);
      break;
    case Op::For: emit_for(id); break;
    case Op::If: emit_if(id); break;
    case Op::LoopIndex: case Op::LoopArg: case Op::LoopResult: case Op::IfResult: case Op::Yield:
      break;  // named and assigned by the For / If that owns them
    TILEJIT_SCHEDULE_OPS(TILEJIT_CASE)
      emit_schedule_op(id);
      break;
    TILEJIT_ELEMENTWISE_OPS(TILEJIT_CASE)
      emit_elementwise(id);
      break;
  }
  auto b = builds_.find(id);
  if (b != builds_.end()) build_descriptors(id, b->second);
}

void Emitter::emit_elementwise(NodeId id) {
  const ir::Node& n = g_.node(id);
  const auto ops = g_.operands(id);
  if (n.op == Op::Cast && load_as_f32_.count(ops[0])) return;  // the load filled it
  // A value constant over runs of k registers is computed from the operands of each run's first
  // register: the compiler then folds the k copies into one (one compare per vector of a mask).
  const int k = uniform(id) ? 1 : passes::register_constancy(L_.layout, L_.axes, g_, id);
  const std::string i = k > 1 ? "i - i % " + str(k) : "i";
  const auto arg = [&](int j) { return at(ops[static_cast<size_t>(j)], i); };
  std::string e;
  if (n.op == Op::Cast) {
    e = cast(arg(0), g_.node(ops[0]).dtype, n.dtype);
  } else if (n.op == Op::Where) {
    e = "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  } else if (n.op == Op::Fma) {
    e = detail::fma(n.dtype, arg(0), arg(1), arg(2));
  } else if (ops.size() == 2) {
    e = detail::binary(n.op, g_.node(ops[0]).dtype, arg(0), arg(1));
  } else if (ops.size() == 1) {
    e = detail::unary(n.op, n.dtype, arg(0));
  } else {
    throw InternalError("emitter: unexpected op " + std::string(ir::name_of(n.op)));
  }
  if (uniform(id)) {
    line("const " + decl(id) + " = " + e + ";", id);
    return;
  }
  if (auto in_place = L_.pipe.in_place.find(id); in_place != L_.pipe.in_place.end()) {
    // Written into the registers of the operand it updates (passes::CarriedProduct::update): each register
    // is computed from the operands' same register only.
    const std::string& into = name_[static_cast<size_t>(ops[static_cast<size_t>(in_place->second)])];
    name_[static_cast<size_t>(id)] = into;
    line("// " + note(id) + ": in place into " + into);
    element_loop(id, false, false, {into + "[i] = " + e + ";"});
    return;
  }
  line(decl_stmt(id) + "  // " + note(id) + (k > 1 ? ", constant over runs of " + str(k) + " registers" : ""));
  element_loop(id, false, false, {var(id) + "[i] = " + e + ";"});
}

void Emitter::run(GeneratedKernel& k) {
  std::string kernel = signature() + " {\n";
  prologue();
  emit_region(0);
  if (stores_) line("if (tid == 0) tj::bulk_wait_group_read<0>();  // TMA stores have read shared memory before exit");
  kernel += out_ + "}\n";
  k.source = header();
  k.source += "\n";
  k.prelude_begin = k.source.size();
  k.source += detail::prelude_source();
  k.prelude_end = k.source.size();
  for (const auto& [name, text] : helpers_) k.source += "\n" + text;
  k.source += "\n" + kernel;
}

}  // namespace tilejit::codegen::detail

namespace tilejit::codegen {

namespace {
// The most characters of the kernel's name in its entry (and file names): "tj_", these, "_" and 16
// hex digits stay far below the 255 bytes of a file name, with room for NVRTC's suffixes.
constexpr size_t kEntryNameChars = 64;
}  // namespace

GeneratedKernel generate(const ir::Graph& g, const Options& options) {
  const passes::Lowered l = passes::lower(g, options, options.dump_ir);
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016" PRIx64, g.hash());
  GeneratedKernel k;
  // The entry names the files NVRTC writes (its precompiled header, a failed compile's source):
  // a long kernel name is cut, and a hash of the whole name keeps cut names apart.
  std::string name = detail::sanitize(g.kernel_name);
  if (name.size() > kEntryNameChars) {
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (const unsigned char c : g.kernel_name) h = (h ^ c) * 0x100000001b3ull;
    char name_hash[9];
    std::snprintf(name_hash, sizeof name_hash, "%08" PRIx32, static_cast<uint32_t>(h ^ (h >> 32)));
    name = name.substr(0, kEntryNameChars - 9) + "_" + name_hash;
  }
  k.entry = "tj_" + name + "_" + hash;
  detail::Emitter e(l, options, k.entry);
  e.run(k);
  k.plan = l.args.plan;
  k.notes = passes::performance_notes(l);
  k.spill_remedy = passes::spill_remedy(l);
  k.spill_retry_producer_registers = l.roles.spill_retry_producer_registers;
  return k;
}

}  // namespace tilejit::codegen
