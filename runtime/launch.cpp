// The public entry points of the launcher (runtime/launch.h): launch, warm-up, resource checks, workspace
// sizes, generate and compile_only. The jobs behind them live beside this file: the compile chain
// (compile_chain.cpp), the per-kernel entry cache (kernel_entries.h/.cpp), argument checks and packing
// (arg_packing.h/.cpp), the workspace pool (workspace_pool.h/.cpp), the interpreter fallback
// (interpreter_launch.cpp) and the device target (device_target.cpp). launch() is the hot path: it
// packs the parameters on the stack and reuses the entry it launched last without taking a lock.
#include "tilejit/runtime/launch.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#include "arg_packing.h"
#include "compile_chain.h"
#include "driver_api.h"
#include "interpreter_launch.h"
#include "kernel_entries.h"
#include "launch_internal.h"
#include "tensor_map.h"
#include "tilejit/arg_rules.h"
#include "tilejit/error.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/tma_rules.h"
#include "workspace_pool.h"

namespace tilejit {
namespace runtime {

using namespace detail;

codegen::GeneratedKernel generate(const KernelBase& kernel, const Config& config) {
  return generate_for(*kernel.graph(config));
}

std::string compile_only(const KernelBase& kernel, const Config& config, const std::string& arch) {
  const codegen::GeneratedKernel gen = generate(kernel, config);
  const CompiledBinary bin = compile_cuda(gen, kernel.name(), compile_options(arch));
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %d registers, %d bytes spill stores, %d bytes spill loads, %d + %d bytes shared, %.1f ms",
                gen.entry.c_str(), bin.registers, bin.spill_stores, bin.spill_loads, bin.shared_static, gen.plan.shared_bytes,
                bin.compile_ms);
  return buf;
}

void warmup(const KernelBase& kernel, const Config& config) {
  if (knobs().interpret || !driver_available()) {
    // Nothing can be loaded: make sure the binary exists (in the disk cache) for a later run.
    KernelRuntime& rt = runtime_of(kernel);
    std::lock_guard lock(rt.m);  // one compile per configuration, however many threads ask
    for (const Config& c : rt.compiled_without_gpu)
      if (c == config) return;
    variant_for(kernel, *traced(kernel, config), {}, "sm_90a");
    rt.compiled_without_gpu.push_back(config);
    return;
  }
  ensure_context();
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(driver().cuCtxGetCurrent(&ctx));
  // The variant for tensors that satisfy every fact: 16-byte aligned, sizes and strides multiples of 16.
  const std::vector<codegen::Specialization::Bits> all(kernel.graph(config)->params.size(), codegen::Specialization::kAll);
  entry_for(kernel, config, all, ctx, nullptr, {}, nullptr);
}

void warmup(const KernelBase& kernel, const Config& config, std::span<const KernelArg> args,
            const std::source_location& where) {
  const args::CallSite at = args::CallSite::of(where);
  const DeviceTarget target = current_target();
  if (!target.gpu) {
    compile_variant(kernel, config, args, target, at);
    return;
  }
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(driver().cuCtxGetCurrent(&ctx));
  std::vector<codegen::Specialization::Bits> facts;
  for (const KernelArg& a : args) facts.push_back(specialization_bits(a));
  const Entry& e = entry_for(kernel, config, facts, ctx, nullptr, args, &at);
  // A variant compiled earlier was found without a check: the same checks as a launch.
  args::check_launch_args(*e.graph, e.arg_facts, args, at, args::Mode{.gpu = true});
}

void check_resources(const KernelBase& kernel, const Config& config, const std::source_location& where) {
  KernelRuntime& rt = runtime_of(kernel);
  {
    std::lock_guard lock(rt.m);
    for (const Config& c : rt.resources_checked)
      if (c == config) return;
  }
  const auto g = kernel.graph(config);
  warn_unused_config_values(kernel, *g, config);
  const codegen::LaunchPlan plan = codegen::generate(*g, codegen_options()).plan;
  if (plan.shared_bytes > tma::kMaxSharedBytes)
    throw UserError("kernel '" + kernel.name() + "' needs more shared memory per program than a Hopper GPU offers per block "
                    "(launch() would refuse it; the interpreter applies the same limit)",
                    std::to_string(plan.shared_bytes) + " bytes with configuration {" + config.str() + "}",
                    std::to_string(tma::kMaxSharedBytes) + " bytes (227 KiB)", where);
  if (plan.threads > kMaxThreadsPerBlock)
    throw UserError("kernel '" + kernel.name() + "' needs more threads per program than a GPU block holds "
                    "(launch() would refuse it; the interpreter applies the same limit)",
                    std::to_string(plan.threads) + " threads with configuration {" + config.str() + "}",
                    std::to_string(kMaxThreadsPerBlock), where);
  std::lock_guard lock(rt.m);
  rt.resources_checked.push_back(config);
}

size_t workspace_bytes(const KernelBase& kernel, dim3 grid, const Config& config) {
  // The per-program size is a property of the generated code: from a loaded entry when there is
  // one, else generated once per configuration and remembered.
  KernelRuntime& rt = runtime_of(kernel);
  int64_t per_program = -1;
  {
    std::lock_guard lock(rt.m);
    for (const auto& e : rt.entries)
      if (e->config == config) per_program = e->gen.plan.workspace_bytes_per_program;
    for (const auto& [c, bytes] : rt.workspace_per_program)
      if (c == config) per_program = bytes;
  }
  if (per_program < 0) {
    per_program = codegen::generate(*kernel.graph(config), codegen_options()).plan.workspace_bytes_per_program;
    std::lock_guard lock(rt.m);
    rt.workspace_per_program.emplace_back(config, per_program);
  }
  return static_cast<size_t>(per_program) * grid.count();
}

void launch(const KernelBase& kernel, Stream stream, dim3 grid, const Config& config, std::span<const KernelArg> args,
            const LaunchOptions& options, const std::source_location& where) {
  const args::CallSite at = args::CallSite::of(where);
  check_grid(kernel.name(), grid, at.file, at.line, config.cluster_x(), config.cluster_y());
  check_persistent(kernel.name(), grid, config.persistent_programs(), config.tile_group(), config.cluster_size(), at.file, at.line);
  if (knobs().interpret || !driver_available()) {
    check_args(*kernel.graph(config), args, at);
    interpret_launch(kernel, stream, grid, config, args, at);
    return;
  }
  auto& d = driver();
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(d.cuCtxGetCurrent(&ctx));
  if (!ctx) {
    ensure_context();
    TILEJIT_CHECK_CU(d.cuCtxGetCurrent(&ctx));
  }
  const auto s = reinterpret_cast<CUstream>(stream);
  // The argument specialisation of this launch: alignment of bases, sizes and strides divisible by 16.
  constexpr size_t kInlineArgs = 64;
  codegen::Specialization::Bits inline_facts[kInlineArgs];
  std::unique_ptr<codegen::Specialization::Bits[]> heap_facts;
  codegen::Specialization::Bits* facts = inline_facts;
  if (args.size() > kInlineArgs) facts = (heap_facts = std::make_unique<codegen::Specialization::Bits[]>(args.size())).get();
  for (size_t i = 0; i < args.size(); ++i) facts[i] = specialization_bits(args[i]);
  Entry& e = entry_for(kernel, config, std::span<const codegen::Specialization::Bits>(facts, args.size()), ctx, s, args, &at);
  args::check_launch_args(*e.graph, e.arg_facts, args, at, args::Mode{.gpu = true});
  const codegen::LaunchPlan& plan = e.gen.plan;
  // Persistent programs: as many as the GPU holds at once (or the grid's, when fewer) run the grid's programs.
  const dim3 launched = plan.persistent ? dim3(static_cast<uint32_t>(std::min<uint64_t>(grid.count(), e.resident_programs)), 1, 1) : grid;

  // The parameters, packed in one aligned buffer (on the stack unless the kernel has unusually
  // many); params[k] points at slot k.
  constexpr size_t kInlineBytes = 4096, kInlineSlots = 128;
  alignas(64) unsigned char inline_storage[kInlineBytes];
  void* inline_params[kInlineSlots];
  std::unique_ptr<unsigned char[]> heap_storage;
  std::unique_ptr<void*[]> heap_params;
  unsigned char* storage = inline_storage;
  void** params = inline_params;
  if (e.param_bytes > kInlineBytes) {
    heap_storage.reset(new (std::align_val_t(64)) unsigned char[e.param_bytes]);
    storage = heap_storage.get();
  }
  if (plan.slots.size() > kInlineSlots) {
    heap_params.reset(new void*[plan.slots.size()]);
    params = heap_params.get();
  }

  CUdeviceptr workspace_ptr = 0;
  if (plan.workspace_bytes_per_program > 0) {
    const size_t need = static_cast<size_t>(plan.workspace_bytes_per_program) * launched.count();
    if (options.workspace) {
      if (options.workspace_bytes < need)
        throw UserError("the workspace given to kernel '" + kernel.name() + "' is too small", std::to_string(options.workspace_bytes) + " bytes",
                        std::to_string(need) + " bytes (workspace_bytes())");
      if (reinterpret_cast<uintptr_t>(options.workspace) % 128 != 0)
        throw UserError("the workspace given to kernel '" + kernel.name() + "' must be 128-byte aligned",
                        "address % 128 = " + std::to_string(reinterpret_cast<uintptr_t>(options.workspace) % 128), "0");
      workspace_ptr = reinterpret_cast<CUdeviceptr>(options.workspace);
    } else {
      workspace_ptr = stream_workspace(ctx, s, need);
    }
  }

  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const codegen::ArgSlot& slot = plan.slots[i];
    unsigned char* dst = storage + e.offset[i];
    params[i] = dst;
    const KernelArg* a = slot.param >= 0 ? &args[static_cast<size_t>(slot.param)] : nullptr;
    switch (slot.kind) {
      case codegen::ArgSlot::TensorBase: std::memcpy(dst, &a->tensor.data, sizeof(void*)); break;
      case codegen::ArgSlot::TensorSize: std::memcpy(dst, &a->tensor.sizes[static_cast<size_t>(slot.index)], 8); break;
      case codegen::ArgSlot::TensorStride: std::memcpy(dst, &a->tensor.strides[static_cast<size_t>(slot.index)], 8); break;
      case codegen::ArgSlot::Scalar: write_scalar(dst, *a); break;
      case codegen::ArgSlot::HostDesc: {
        const auto& hd = plan.descriptors[static_cast<size_t>(slot.index)];
        const TensorMapBytes b = host_descriptor(e, slot.index, args[static_cast<size_t>(hd.param)].tensor);
        std::memcpy(dst, b.bytes.data(), 128);
        break;
      }
      case codegen::ArgSlot::DescArray: {
        const auto& hd = plan.descriptors[static_cast<size_t>(slot.index)];
        const std::vector<TensorArg>& tensors = args[static_cast<size_t>(hd.param)].array;
        CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
        TILEJIT_CHECK_CU(d.cuStreamIsCapturing(s, &capture));
        const CUdeviceptr ptr = e.desc_cache[static_cast<size_t>(slot.index)].array.prepare(
            tensors, s, capture != CU_STREAM_CAPTURE_STATUS_NONE, [&] { return encode_array(e, slot.index, tensors); },
            kernel.name(), hd.param);
        std::memcpy(dst, &ptr, 8);
        break;
      }
      case codegen::ArgSlot::Workspace: std::memcpy(dst, &workspace_ptr, 8); break;
      case codegen::ArgSlot::TileGrid: {
        const uint32_t extents[3] = {grid.x, grid.y, grid.z};
        const auto extent = static_cast<int32_t>(extents[slot.index]);
        std::memcpy(dst, &extent, 4);
        break;
      }
    }
  }
  TILEJIT_CHECK_CU(d.cuLaunchKernel(e.fn, launched.x, launched.y, launched.z, static_cast<unsigned>(plan.threads), 1, 1,
                                    static_cast<unsigned>(plan.shared_bytes), s, params, nullptr));
}

}  // namespace runtime
}  // namespace tilejit
