// The slow path of the per-kernel entry cache: finding an entry that is not the last one launched, and
// making a new one (trace, argument checks, generate, load, shared-memory opt-in, parameter layout and
// the entry's descriptor cache) when no entry matches.
#include "kernel_entries.h"

#include <algorithm>
#include <string>

#include "tilejit/error.h"
#include "tilejit/passes/passes.h"
#include "tilejit/runtime/driver.h"
#include "launch_internal.h"

namespace tilejit::detail {

Entry& find_or_compile_entry(KernelRuntime& rt, const KernelBase& k, const Config& config, std::span<const codegen::Specialization::Bits> facts,
                             CUcontext ctx, CUstream stream, std::span<const KernelArg> args, const args::CallSite* at) {
  std::lock_guard lock(rt.m);
  for (auto& e : rt.entries)
    if (matches(*e, config, ctx, facts)) {
      rt.last.store(e.get(), std::memory_order_release);
      return *e;
    }
  // Compiling during CUDA graph capture would break the capture: ask for a warm-up instead.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  TILEJIT_CHECK_CU(driver().cuStreamIsCapturing(stream, &status));
  if (status != CU_STREAM_CAPTURE_STATUS_NONE)
    throw UserError("kernel '" + k.name() + "' would compile during CUDA graph capture",
                    "configuration {" + config.str() + "} not compiled yet", "launch it once, or call kernel.warmup({config}), before capturing");
  auto e = std::make_unique<Entry>();
  e->config = config;
  e->ctx = ctx;
  e->graph = traced(k, config);
  e->relevant = passes::relevant_specialization(*e->graph);
  e->arg_facts = args::graph_facts(*e->graph);
  warn_unused_config_values(k, *e->graph, config);
  if (at) args::check_launch_args(*e->graph, e->arg_facts, args, *at, args::Mode{.gpu = true});
  for (size_t i = 0; i < facts.size(); ++i) e->spec.push_back(facts[i] & e->relevant[i]);
  const std::string arch = arch_of_current_device();
  Variant v = variant_for(k, *e->graph, codegen::Specialization{e->spec}, arch);
  e->gen = std::move(v.gen);
  e->lib = load_library(k, e->gen, arch, std::move(v.binary));
  auto& d = driver();
  TILEJIT_CHECK_CU(d.cuKernelGetFunction(&e->fn, e->lib->kernel));
  const int smem = e->gen.plan.shared_bytes;
  if (smem > 48 * 1024) {
    CUdevice dev;
    TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
    int optin = 0;
    TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
    if (smem > optin)
      throw UserError("kernel '" + k.name() + "' needs more shared memory than the GPU offers per block",
                      std::to_string(smem) + " bytes with configuration {" + config.str() + "}", std::to_string(optin) + " bytes",
                      e->graph->kernel_location.file, e->graph->kernel_location.line);
    TILEJIT_CHECK_CU(d.cuFuncSetAttribute(e->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
  }
  if (e->gen.plan.persistent) {
    // As many programs as run at once: every SM's share (by occupancy, at most programs_per_sm), at least one each.
    CUdevice dev;
    TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
    int sms = 0, per_sm = 0;
    TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    TILEJIT_CHECK_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, e->fn, e->gen.plan.threads, static_cast<size_t>(smem)));
    if (e->graph->min_programs_per_sm > 0) per_sm = std::min(per_sm, e->graph->min_programs_per_sm);
    e->resident_programs = static_cast<uint32_t>(std::max(1, sms) * std::max(1, per_sm));
  }
  for (const auto& hd : e->gen.plan.descriptors)
    e->desc_loc.push_back(hd.first_use.file.empty() ? e->graph->kernel_location : hd.first_use);
  e->desc_cache = std::make_unique<CachedDescriptor[]>(e->gen.plan.descriptors.size());
  for (const codegen::ArgSlot& slot : e->gen.plan.slots) {
    const auto align = static_cast<size_t>(slot.align);
    e->param_bytes = (e->param_bytes + align - 1) / align * align;
    e->offset.push_back(e->param_bytes);
    e->param_bytes += static_cast<size_t>(slot.size);
  }
  rt.entries.push_back(std::move(e));
  rt.last.store(rt.entries.back().get(), std::memory_order_release);
  return *rt.entries.back();
}

}  // namespace tilejit::detail
