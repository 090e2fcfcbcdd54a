// TMA: descriptors built on the device, and tiles loaded and stored by the TMA unit.
#include <algorithm>
#include <set>

#include "codegen/emitter.h"

namespace tilejit::codegen::detail {

// ---- descriptors built on the device ----------------------------------------------------

void Emitter::build_descriptors(NodeId at, const std::vector<const Descriptor*>& ds) {
  const bool wait_stores = std::any_of(ds.begin(), ds.end(), [](const Descriptor* d) { return d->waits_for_stores(); });
  std::set<int> warps;  // the warps that write (Descriptor::build_warp)
  for (const Descriptor* d : ds) warps.insert(d->build_warp);
  line(std::string("// device-built TMA descriptor(s): ") + (warps.size() > 1 ? "each warp below writes its own" : "warp " + str(*warps.begin()) + " writes each one") +
       " in shared memory, then releases it to its workspace slot");
  for (int w : warps) {
    open(w == 0 ? "if (tid < 32)" : "if (tid / 32 == " + str(w) + ")");
    if (w == 0 && wait_stores) line("if (tid == 0) tj::bulk_wait_group<0>();  // stores of the previous iteration no longer use the slot");
    for (const Descriptor* d : ds) {
      if (d->build_warp != w) continue;
      const std::string stage = "tj_desc_stage" + (d->slot ? " + " + str(128 * d->slot) : std::string());
      const std::string slot = "tj_desc" + str(d->slot);
      const int r = d->rank;
      const int64_t esize = ir::size_of(d->dtype);
      // Fields, outermost first.
      std::vector<std::string> size(static_cast<size_t>(r)), stride(static_cast<size_t>(r));
      const NodeId t = d->tensor;
      const std::string base = tensor_ptr(t);
      for (int k = 0; k < r; ++k) {
        size[static_cast<size_t>(k)] = tensor_field(t, passes::TensorField::size, k);
        stride[static_cast<size_t>(k)] = tensor_field(t, passes::TensorField::stride, k);
      }
      const std::string source = d->view != ir::kNoNode ? "view %" + str(d->view)
                                                        : "param " + g_.params[static_cast<size_t>(d->param)].name;
      line("reinterpret_cast<unsigned*>(" + stage + ")[tid % 32] = 0u;  // " + slot + ": " + std::string(ir::name_of(d->dtype)) +
           " " + source + ", first used at " + where(d->first_use));
      line("__syncwarp();");
      open("if (tid % 32 == 0)");
      for (int i = 0; i < r; ++i)
        line("const long long size" + str(i) + " = " + size[static_cast<size_t>(r - 1 - i)] + ";  // innermost first");
      for (int i = 0; i + 1 < r; ++i)
        line("const long long stride" + str(i + 1) + " = " + stride[static_cast<size_t>(r - 2 - i)] + " * " + str(esize) +
             ";  // bytes");
      if (opt_.debug_checks) debug_descriptor(*d, base);
      line("tj::tensormap_replace_global_address(" + stage + ", " + base + ");");
      line("tj::tensormap_replace_rank(" + stage + ", " + str(r - 1) + ");");
      for (int i = 0; i < r; ++i)
        line("tj::tensormap_replace_box_dim<" + str(i) + ">(" + stage + ", " + str(d->box[static_cast<size_t>(r - 1 - i)]) + ");");
      for (int i = 0; i < r; ++i)
        line("tj::tensormap_replace_global_dim<" + str(i) + ">(" + stage + ", static_cast<unsigned>(size" + str(i) + "));");
      for (int i = 0; i + 1 < r; ++i)
        line("tj::tensormap_replace_global_stride<" + str(i) + ">(" + stage + ", static_cast<unsigned long long>(stride" +
             str(i + 1) + "));");
      for (int i = 0; i < r; ++i)
        line("tj::tensormap_replace_element_stride<" + str(i) + ">(" + stage + ", " +
             str(d->estride[static_cast<size_t>(r - 1 - i)]) + ");");
      line("tj::tensormap_replace_elemtype<" + str(detail::ptx_elemtype(d->dtype)) + ">(" + stage + ");  // " +
           std::string(ir::name_of(d->dtype)));
      line("tj::tensormap_replace_interleave_layout<0>(" + stage + ");");
      line("tj::tensormap_replace_swizzle_mode<" + str(d->swizzle_code()) + ">(" + stage + ");");
      line("tj::tensormap_replace_fill_mode<" + str(d->fill) + ">(" + stage + ");  // " + (d->fill ? "NaN" : "zero"));
      close();
      line("__syncwarp();");
      line("tj::tensormap_cp_fenceproxy(" + slot + ", " + stage + ");");
    }
    line("tj::bulk_commit_group();");
    line("tj::bulk_wait_group_read<0>();");
    close();
  }
  sync("every descriptor written and released");
  // Warp 0 issues the consumers' TMA operations (thread 0): it acquires every descriptor of the step; the producer
  // warpgroup acquires those it loads with itself, after waiting for its arrival below.
  open("if (tid < 32)");
  for (const Descriptor* d : ds) line("tj::fence_proxy_tensormap_acquire(tj_desc" + str(d->slot) + ");");
  const std::vector<NodeId>& awaited = L_.roles.awaited_builds;
  if (L_.roles.on() && std::find(awaited.begin(), awaited.end(), at) != awaited.end())
    line("if (tid == 0) tj::mbarrier_arrive(&tj_bar[" + str(L_.smem.built_barrier) +
         "]);  // released: the producer warpgroup loads with them");
  close();
}

// ---- tiles loaded and stored by TMA --------------------------------------------------------

void Emitter::tma_pieces(NodeId id, const std::function<void(const std::string&, const std::string&)>& issue) {
  const Descriptor& d = L_.tma.descriptors[static_cast<size_t>(L_.tma.of.at(id))];
  const int rank = d.rank;
  if (opt_.debug_checks) debug_tma(id);
  if (d.pieces == 1) return issue("", coords(id, rank));
  int64_t piece_elems = 1;
  for (int i = 0; i < rank; ++i) piece_elems *= d.box[static_cast<size_t>(i)] / d.estride[static_cast<size_t>(i)];
  const int64_t piece = d.box[static_cast<size_t>(d.split_dim)];
  line("// " + str(d.pieces) + " operations of " + str(piece) + " along dimension " + str(d.split_dim) +
       ", into consecutive parts of the tile");
  line("#pragma unroll 1");
  open("for (int p = 0; p < " + str(d.pieces) + "; ++p)");
  std::string crd;
  for (int i = rank; i >= 1; --i)
    crd += ", " + (i - 1 == d.split_dim ? at(g_.operand(id, i)) + " + p * " + str(piece) : at(g_.operand(id, i)));
  issue(" + p * " + str(piece_elems), crd);
  close();
}

void Emitter::emit_desc_load(NodeId id) {
  const passes::LoadPlan& lp = L_.smem.loads.at(id);
  if (auto pl = L_.pipe.loop_of.find(id); pl != L_.pipe.loop_of.end()) {
    // Issued ahead by the software pipeline; the pipe.wait before the stage's first load waits for all of them.
    const NodeId f = pl->second;
    const std::string sv = str(f);
    if (L_.pipe.ring_twin.count(id))
      line("// read from the stage of this block's ring position (loop at " + where(f) + ")", id);
    else if (L_.pipe.loops.at(f).loads.front() != id)
      line("// issued ahead with the stage's other loads", id);
    if (L_.smem.register_copies.count(id)) {
      // A tile read from registers (not by a tensor-core dot): copied out of this iteration's stage, which
      // is refilled only after the next iteration's barrier.
      const int64_t elems = g_.node(id).shape.numel();
      read_chunks(id, "(" + buffer_ptr(lp.buffer, g_.node(id).dtype) + " + tj_stage" + sv + " * " + str(elems) + ")",
                  "tile elements of this thread, from this iteration's stage");
    }
    return;
  }
  const std::string buf = "tj_buf" + str(lp.buffer);
  if (L_.pipe.early.count(id)) {
    line("// issued before the loop above", id);
  } else {
    issue_desc_load(id);
  }
  const std::string phase = lp.repeated ? "tj_phase" + str(lp.barrier) : "0";
  const std::string wait = mbarrier_wait(str(lp.barrier), phase, id, "a TMA load");
  line(lp.all_threads_wait ? wait : "if (tid == 0) " + wait);
  if (lp.repeated) line("tj_phase" + str(lp.barrier) + " ^= 1u;");
  if (L_.smem.register_copies.count(id)) read_chunks(id, buf, "tile elements of this thread");
}

void Emitter::issue_desc_load(NodeId id) {
  const ir::Node& n = g_.node(id);
  const passes::LoadPlan& lp = L_.smem.loads.at(id);
  const ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g_, id);
  const std::string bar = "&tj_bar[" + str(lp.barrier) + "]";
  const std::string buf = "tj_buf" + str(lp.buffer);
  const int64_t bytes = n.shape.numel() * ir::size_of(n.dtype);
  std::string shape;  // the tile as TMA writes it (the value may leave out unit dimensions)
  for (int i = 0; i < a.rank; ++i) shape += (i ? "x" : "") + str((a.box[i] + a.estride[i] - 1) / a.estride[i]);
  line("// " + note(id) + ": " + shape + " " + std::string(ir::name_of(n.dtype)) + " tile, " + str(bytes) + " bytes" +
       (L_.pipe.early.count(id) ? " (issued before the loop that precedes its use: it needs nothing from it)" : ""));
  planned_barrier(L_.barriers.before_issue, id);
  open("if (tid == 0)");
  if (lp.repeated && lp.read_by_tma_store)
    line("tj::bulk_wait_group_read<0>();  // the TMA store of the previous tile has read the buffer");
  line("tj::mbarrier_arrive_expect_tx(" + bar + ", " + str(bytes) + ");");
  tma_pieces(id, [&](const std::string& offset, const std::string& crd) {
    line("tj::tma_load_" + str(a.rank) + "d(" + buf + offset + ", " + desc_addr(id) + ", " + bar + crd + ");");
  });
  close();
}

void Emitter::emit_desc_store(NodeId id) {
  const ir::Node& n = g_.node(id);
  const passes::StorePlan& sp = L_.smem.stores.at(id);
  const ir::TmaAttrs a = ir::attrs<ir::TmaAttrs>(g_, id);
  const NodeId v = g_.operands(id).back();
  stores_ = true;
  static const char* kinds[] = {"store", "reduce_add", "reduce_min", "reduce_max"};
  const std::string buf = buffer_ptr(sp.buffer, n.dtype);
  const char* how = sp.mode == passes::StorePlan::FromLoad ? "straight from the loaded tile"
                    : sp.mode == passes::StorePlan::InPlace ? "computed in place in the loaded tile's buffer"
                                                           : "staged in its own buffer";
  line("// " + note(id) + ": " + kinds[static_cast<int>(a.reduce)] + ", " + how);
  if (sp.mode != passes::StorePlan::FromLoad) {
    if (sp.mode == passes::StorePlan::Staged && sp.repeated) {
      line("if (tid == 0) tj::bulk_wait_group_read<0>();  // the previous store has read the buffer");
      sync();
    }
    const int swizzle = L_.tma.descriptors[static_cast<size_t>(L_.tma.of.at(id))].swizzle;
    // The padding rows of a dot's accumulator with M below 64 go to the bytes after the tile.
    const std::string sink = !sp.padding_sink ? ""
                             : "reinterpret_cast<" + mem_type(n.dtype) + "*>(reinterpret_cast<unsigned char*>(tj_buf" + str(sp.buffer) +
                                   ") + " + str(g_.node(v).shape.numel() * ir::size_of(n.dtype)) + ")";
    if (!sink.empty()) line("// the accumulator's padding rows (M below 64) write into the " + str(passes::StorePlan::kPaddingSink) + " bytes after the tile");
    if (swizzle > 0)
      write_swizzled(v, buf, swizzle, sp.swizzled, sink);
    else
      write_chunks(v, buf, nullptr, sink);
    line("tj::fence_proxy_async_shared();  // make the writes visible to the TMA unit");
    sync();
  }
  open("if (tid == 0)");
  tma_pieces(id, [&](const std::string& offset, const std::string& crd) {
    const std::string src = offset.empty() ? "tj_buf" + str(sp.buffer) : buffer_ptr(sp.buffer, n.dtype) + offset;
    line("tj::tma_" + std::string(kinds[static_cast<int>(a.reduce)]) + "_" + str(a.rank) + "d(" + desc_addr(id) + ", " + src + crd + ");");
  });
  line("tj::bulk_commit_group();");
  close();
}

}  // namespace tilejit::codegen::detail
