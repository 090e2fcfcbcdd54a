// Kernel compilation per configuration and device, argument packing, descriptor encoding and launch.
#include "tilejit/runtime/launch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <vector>

#include "descriptor_array.h"
#include "driver_api.h"
#include "launch_internal.h"
#include "log_internal.h"
#include "tensor_map.h"
#include "tilejit/arg_rules.h"
#include "tilejit/error.h"
#include "tilejit/interp/interp.h"
#include "tilejit/tma_rules.h"
#include "tilejit/passes/passes.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/disk_cache.h"
#include "tilejit/runtime/nvrtc.h"
#include "tilejit/version.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"

namespace tilejit {
namespace detail {

int64_t extent_bytes(const TensorArg& t) {
  int64_t last = 0;
  for (int d = 0; d < t.rank; ++d) last += (t.sizes[static_cast<size_t>(d)] - 1) * t.strides[static_cast<size_t>(d)];
  return (last + 1) * ir::size_of(t.dtype);
}

namespace {

// A loaded CUlibrary, shared by every kernel object whose generated source is identical.
struct Library {
  CUlibrary lib = nullptr;
  CUkernel kernel = nullptr;
  ~Library() = default;  // libraries live until process exit: the driver may be gone at teardown
};

struct LibraryCache {
  std::mutex m;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Library>> by_source;  // (arch, source)
};
LibraryCache& library_cache() {
  static auto* cache = new LibraryCache;  // never destroyed, see Library
  return *cache;
}

// The last encoding of one descriptor slot: a host descriptor, or the device copy of an array's.
struct CachedDescriptor {
  std::mutex m;
  bool valid = false;
  TensorArg key;
  TensorMapBytes bytes;
  DescriptorArraySlot array;
};

// One compiled configuration of one kernel in one context.
struct Entry {
  Config config;
  CUcontext ctx = nullptr;
  std::vector<uint16_t> relevant;  // per argument: the specialisation bits the generated code may use
  std::vector<uint16_t> spec;      // per argument: the bits it was compiled with (a subset of relevant)
  std::shared_ptr<const ir::Graph> graph;
  codegen::GeneratedKernel gen;
  std::shared_ptr<Library> lib;
  CUfunction fn = nullptr;
  std::vector<ir::Location> desc_loc;
  std::unique_ptr<CachedDescriptor[]> desc_cache;
  std::vector<size_t> offset;  // byte offset of each parameter slot in the packed buffer
  size_t param_bytes = 0;
  args::GraphFacts arg_facts;  // what the argument checks need of the graph, found once
};

struct KernelRuntime {
  std::mutex m;
  std::vector<std::unique_ptr<Entry>> entries;  // entries are never removed, so pointers stay valid
  std::atomic<Entry*> last{nullptr};            // the most recently launched entry: the hot path
  std::vector<Config> compiled_without_gpu;     // configurations warmed up where no GPU can load them
  std::vector<std::pair<Config, int64_t>> workspace_per_program;  // workspace_bytes() without an entry
  std::vector<Config> resources_checked;  // configurations check_resources() accepted
};

KernelRuntime& runtime_of(const KernelBase& k) {
  return *static_cast<KernelRuntime*>(k.runtime_state([] { return std::shared_ptr<void>(std::make_shared<KernelRuntime>()); }));
}

std::string arch_of_current_device() {
  auto& d = driver();
  CUdevice dev;
  TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
  int major = 0, minor = 0;
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  if (major < 9)
    throw UserError("tilejit kernels use TMA, which needs a Hopper (sm_90) or newer GPU",
                    "compute capability " + std::to_string(major) + "." + std::to_string(minor), "9.0 or newer");
  // The architecture-specific variant unlocks tensormap.replace and wgmma.
  return "sm_" + std::to_string(major) + std::to_string(minor) + (major == 9 ? "a" : "");
}

// NVRTC options from the knobs; a failed compile leaves its source in TILEJIT_DUMP_DIR when set.
CompileOptions compile_options(const std::string& arch) {
  CompileOptions o;
  o.arch = arch;
  o.line_info = knobs().lineinfo;
  if (!knobs().dump_dir.empty()) o.dump_dir = knobs().dump_dir.string();
  return o;
}

codegen::Options codegen_options() {
  codegen::Options o;
  o.line_info = knobs().lineinfo;
  o.debug_checks = knobs().debug;
  o.watchdog_ms = knobs().debug_watchdog_ms;
  return o;
}

void dump(const std::string& what, const std::string& name, const std::string& ext, const std::string& text) {
  const Knobs& k = knobs();
  if (k.dump_dir.empty()) {
    std::fprintf(stderr, "// ---- %s of %s ----\n%s\n", what.c_str(), name.c_str(), text.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::create_directories(k.dump_dir, ec);
  const auto path = k.dump_dir / (name + ext);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  } else {
    logger().warn("TILEJIT_DUMP_DIR: cannot write {}", path.string());
  }
}

codegen::GeneratedKernel generate_for(const ir::Graph& g, const codegen::Specialization& spec = {}) {
  codegen::Options o = codegen_options();
  o.spec = spec;
  if (knobs().dump_ir) {  // the graph as traced and after every rewriting step; each plan after its step
    o.dump_ir = [&g](std::string_view pass, const ir::Graph& after) {
      std::string title = "IR after ", ext = ".";
      title.append(pass);
      ext.append(pass).append(".ir");
      dump(title, g.kernel_name, ext, ir::print(after, true));
    };
    o.dump_plan = [&g](std::string_view step, const std::string& plan) {
      std::string title = "plan after ", ext = ".";
      title.append(step);
      ext.append(step).append(".plan");
      dump(title, g.kernel_name, ext, plan);
    };
  }
  codegen::GeneratedKernel gen = codegen::generate(g, o);
  if (knobs().dump_cuda) dump("CUDA", gen.entry, ".cu", gen.source);
  for (size_t i = 0; i < gen.plan.descriptors.size(); ++i) {
    const auto& d = gen.plan.descriptors[i];
    logger().info("{}: descriptor {} of parameter {} encoded on the host{}", gen.entry, i, d.param,
                  d.used_by_store ? " (stored through)" : "");
  }
  if (gen.plan.workspace_bytes_per_program > 0)
    logger().info("{}: {} bytes of device-built descriptors per program", gen.entry, gen.plan.workspace_bytes_per_program);
  for (const codegen::PerformanceNote& note : gen.notes) {
    if (note.warning)
      logger().warn("kernel '{}' ({}), performance: {}", g.kernel_name, gen.entry, note.text);
    else
      logger().info("kernel '{}' ({}): {}", g.kernel_name, gen.entry, note.text);
  }
  return gen;
}

DiskCache& disk_cache() {
  static auto* cache = new DiskCache(knobs().cache_dir);  // lives until process exit
  return *cache;
}

// The counters behind runtime::compile_times(); times in nanoseconds.
struct Timers {
  std::atomic<uint64_t> compiles{0}, disk_hits{0};
  std::atomic<int64_t> trace{0}, codegen{0}, nvrtc{0}, disk{0}, load{0};
};
Timers g_timers;

// Adds the time from its construction to its destruction to one of the Timers.
class Timed {
 public:
  explicit Timed(std::atomic<int64_t>& sink) : sink_(sink), start_(std::chrono::steady_clock::now()) {}
  ~Timed() {
    sink_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count(),
                    std::memory_order_relaxed);
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  std::atomic<int64_t>& sink_;
  std::chrono::steady_clock::time_point start_;
};

std::shared_ptr<const ir::Graph> traced(const KernelBase& k, const Config& config) {
  Timed t(g_timers.trace);
  return k.graph(config);
}

codegen::GeneratedKernel generated(const ir::Graph& g, const codegen::Specialization& spec = {}) {
  Timed t(g_timers.codegen);
  return generate_for(g, spec);
}

// The binary of generated kernel `gen` for `arch`: from the disk cache when it has it, else from
// NVRTC (and then stored on disk). A new process finds yesterday's binaries instead of compiling.
CacheEntry binary_for(const KernelBase& k, const codegen::GeneratedKernel& gen, const std::string& arch) {
  const CompileOptions opts = compile_options(arch);
  const auto [nv_major, nv_minor] = nvrtc_version();
  const CacheKey cache_key{gen.source, std::to_string(nv_major) + "." + std::to_string(nv_minor),
                           nvrtc_invocation(opts).joined(), arch, TILEJIT_VERSION_STRING, codegen_fingerprint(knobs())};
  if (knobs().cache) {
    std::optional<CacheEntry> hit;
    {
      Timed t(g_timers.disk);
      hit = disk_cache().load(cache_key);
    }
    if (hit) {
      g_timers.disk_hits.fetch_add(1, std::memory_order_relaxed);
      logger().info("loaded {} for {} from the disk cache", gen.entry, arch);
      return std::move(*hit);
    }
  }
  CompiledBinary bin;
  {
    Timed t(g_timers.nvrtc);
    bin = compile_cuda(gen, k.name(), opts);
  }
  g_timers.compiles.fetch_add(1, std::memory_order_relaxed);
  if (knobs().dump_ptx && !bin.ptx.empty()) dump("PTX", gen.entry, ".ptx", bin.ptx);
  logger().info("compiled {} for {} in {:.1f} ms: {} registers, {} bytes spilled, {} bytes static shared", gen.entry, arch,
                bin.compile_ms, bin.registers, bin.spill_stores, bin.shared_static);
  if (bin.spill_stores > 0)
    logger().warn("kernel '{}' ({}) spills {} bytes of registers to local memory and will run slowly; more warps "
                  "(Config::warps) or smaller blocks keep it in registers",
                  k.name(), gen.entry, bin.spill_stores);
  // A checked kernel's failure path (TILEJIT_DEBUG) is a call, which ptxas does not let a wgmma pipeline cross: expected.
  if (bin.wgmma_serialized && !knobs().debug)
    logger().warn("kernel '{}' ({}): ptxas serialized its wgmma instructions; the matrix products run without "
                  "overlap (ptxas log: {})",
                  k.name(), gen.entry, bin.log);
  // An empty cubin means the driver gets PTX (an architecture NVRTC cannot build a cubin for).
  std::string ptx = bin.cubin.empty() ? std::move(bin.ptx_or_empty) : std::string();
  // The resources ride along in the metadata, so that a disk-cache hit knows them too (compile_variant).
  CacheEntry entry{std::move(bin.cubin), std::move(ptx),
                   "kernel=" + k.name() + "\nentry=" + gen.entry + "\nregisters=" + std::to_string(bin.registers) +
                       "\nshared_static=" + std::to_string(bin.shared_static) + "\nspill_stores=" +
                       std::to_string(bin.spill_stores) + "\n"};
  if (knobs().cache) {
    Timed t(g_timers.disk);
    disk_cache().store(cache_key, entry, bin.compile_ms);
  }
  return entry;
}

// The integer on the line "<name>=<value>" of a cache entry's metadata; -1 when absent.
int metadata_int(const std::string& metadata, std::string_view name) {
  const std::string tag = "\n" + std::string(name) + "=";
  const size_t at = ("\n" + metadata).find(tag);
  if (at == std::string::npos) return -1;
  return std::atoi(metadata.c_str() + at + tag.size() - 1);
}

std::shared_ptr<Library> load_library(const KernelBase& k, const codegen::GeneratedKernel& gen, const std::string& arch) {
  auto& cache = library_cache();
  const auto key = std::make_pair(arch, gen.source);
  {
    std::lock_guard lock(cache.m);
    auto it = cache.by_source.find(key);
    if (it != cache.by_source.end()) return it->second;
  }
  const CacheEntry binary = binary_for(k, gen, arch);
  auto lib = std::make_shared<Library>();
  auto& d = driver();
  const void* image = binary.cubin.empty() ? static_cast<const void*>(binary.ptx.c_str()) : static_cast<const void*>(binary.cubin.data());
  {
    Timed t(g_timers.load);
    TILEJIT_CHECK_CU(d.cuLibraryLoadData(&lib->lib, image, nullptr, nullptr, 0, nullptr, nullptr, 0));
    TILEJIT_CHECK_CU(d.cuLibraryGetKernel(&lib->kernel, lib->lib, gen.entry.c_str()));
  }
  std::lock_guard lock(cache.m);
  auto [it, inserted] = cache.by_source.emplace(key, lib);
  if (!inserted) d.cuLibraryUnload(lib->lib);  // another thread won the race; use its library
  return it->second;
}

// A configuration value that no Block parameter reads is most likely a misspelt name: warned once
// per compiled or interpreted configuration (a grid function may read a value the kernel does not).
void warn_unused_config_values(const KernelBase& k, const ir::Graph& g, const Config& config) {
  for (const auto& [name, value] : config.values()) {
    bool used = false;
    for (const ir::Param& p : g.params) used = used || (p.kind == ir::Param::Config && p.name == name);
    if (used) continue;
    std::string names;
    for (const ir::Param& p : g.params)
      if (p.kind == ir::Param::Config) names += (names.empty() ? "" : ", ") + p.name;
    logger().warn("kernel '{}' ({}:{}): configuration value {}={} is not one of its Block parameters ({}); it is ignored",
                  k.name(), g.kernel_location.file, g.kernel_location.line, name, value,
                  names.empty() ? "it has none" : "Block names: " + names);
  }
}

// True when entry `e` was compiled for this configuration, context and the argument facts `facts`
// (it assumed only facts that hold).
bool matches(const Entry& e, const Config& config, CUcontext ctx, std::span<const uint16_t> facts) {
  if (e.ctx != ctx || !(e.config == config) || facts.size() != e.spec.size()) return false;
  for (size_t i = 0; i < facts.size(); ++i)
    if ((facts[i] & e.relevant[i]) != e.spec[i]) return false;
  return true;
}

// `facts`: the argument specialisation bits of the launch (codegen::Specialization), one per argument.
// `args`, unless `at` is null (a warm-up without arguments, whose facts are one per parameter), are
// checked at `at` before anything is compiled or loaded: a wrong count or kind never reaches the driver.
Entry& entry_for(const KernelBase& k, const Config& config, std::span<const uint16_t> facts, CUcontext ctx, CUstream stream,
                 std::span<const KernelArg> args, const args::CallSite* at) {
  KernelRuntime& rt = runtime_of(k);
  if (Entry* last = rt.last.load(std::memory_order_acquire); last && matches(*last, config, ctx, facts)) return *last;
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
  e->gen = generated(*e->graph, codegen::Specialization{e->spec});
  e->lib = load_library(k, e->gen, arch_of_current_device());
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

// The codegen::Specialization bits of one argument (0 for arguments that are not tensors).
uint16_t specialization_bits(const KernelArg& a) {
  if (a.kind != KernelArg::Tensor) return 0;
  const TensorArg& t = a.tensor;
  uint16_t b = reinterpret_cast<uintptr_t>(t.data) % 16 == 0 ? codegen::Specialization::kBaseAligned : 0;
  for (int d = 0; d < t.rank; ++d) {
    if (t.sizes[static_cast<size_t>(d)] % 16 == 0) b |= codegen::Specialization::size_div16(d);
    if (t.strides[static_cast<size_t>(d)] % 16 == 0) b |= codegen::Specialization::stride_div16(d);
  }
  return b;
}


// The descriptors of the tensors of array argument `index`, encoded with that argument's rules.
std::vector<TensorMapBytes> encode_array(const Entry& e, int index, const std::vector<TensorArg>& arr) {
  const auto& hd = e.gen.plan.descriptors[static_cast<size_t>(index)];
  const auto& loc = e.desc_loc[static_cast<size_t>(index)];
  std::vector<TensorMapBytes> maps(arr.size());
  for (size_t t = 0; t < arr.size(); ++t) maps[t] = encode_tensor_map(hd, arr[t], loc.file, loc.line);
  return maps;
}

TensorMapBytes host_descriptor(Entry& e, int index, const TensorArg& t) {
  CachedDescriptor& c = e.desc_cache[static_cast<size_t>(index)];
  std::lock_guard lock(c.m);
  if (c.valid && same_tensor(c.key, t)) return c.bytes;
  const auto& loc = e.desc_loc[static_cast<size_t>(index)];
  c.bytes = encode_tensor_map(e.gen.plan.descriptors[static_cast<size_t>(index)], t, loc.file, loc.line);
  c.key = t;
  c.valid = true;
  return c.bytes;
}

void check_args(const ir::Graph& g, std::span<const KernelArg> args, const args::CallSite& at) {
  args::check_launch_args(g, args, at, args::Mode{.gpu = true});
}

// The bytes of a scalar argument in the kernel's parameter type.
void write_scalar(unsigned char* dst, const KernelArg& a) {
  switch (a.dtype) {
    case ir::DType::f32: { const float v = static_cast<float>(a.f); std::memcpy(dst, &v, 4); break; }
    case ir::DType::f64: std::memcpy(dst, &a.f, 8); break;
    case ir::DType::f16: { const uint16_t v = ir::to_f16_bits(a.f); std::memcpy(dst, &v, 2); break; }
    case ir::DType::bf16: { const uint16_t v = ir::to_bf16_bits(a.f); std::memcpy(dst, &v, 2); break; }
    case ir::DType::f8e4m3: dst[0] = ir::to_e4m3_bits(a.f); break;
    case ir::DType::f8e5m2: dst[0] = ir::to_e5m2_bits(a.f); break;
    case ir::DType::i32: { const auto v = static_cast<int32_t>(a.i); std::memcpy(dst, &v, 4); break; }
    case ir::DType::i64: std::memcpy(dst, &a.i, 8); break;
    case ir::DType::i1: dst[0] = a.i != 0; break;
    case ir::DType::i8: case ir::DType::u8: dst[0] = static_cast<unsigned char>(a.i); break;
  }
}


// Workspace for device-built descriptors: one grow-only buffer per (context, stream), reused by
// every launch on that stream. Launches on one stream run in order, so a kernel never sees its
// slots rewritten by a later one; a buffer that grows is released stream-ordered, after the
// kernels that still use it. Per-launch stream-ordered allocation instead would hand the pages
// back to the driver at every synchronisation when the pool keeps nothing (its default).
struct WorkspacePool {
  struct Slot {
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
  };
  std::mutex m;
  std::map<std::pair<CUcontext, CUstream>, Slot> by_stream;
};
WorkspacePool& workspace_pool() {
  static auto* pool = new WorkspacePool;  // lives until process exit, like the driver's own state
  return *pool;
}

CUdeviceptr stream_workspace(CUcontext ctx, CUstream s, size_t need) {
  WorkspacePool& pool = workspace_pool();
  std::lock_guard lock(pool.m);
  WorkspacePool::Slot& slot = pool.by_stream[{ctx, s}];
  if (slot.bytes < need) {
    const size_t bytes = std::max(need, slot.bytes * 2);
    CUdeviceptr fresh = 0;
    TILEJIT_CHECK_CU(driver().cuMemAllocAsync(&fresh, bytes, s));
    if (slot.ptr) TILEJIT_CHECK_CU(driver().cuMemFreeAsync(slot.ptr, s));
    slot = {fresh, bytes};
  }
  return slot.ptr;
}

// Runs the interpreter on launch arguments, staging device memory through the host.
void interpret_launch(const KernelBase& k, Stream stream, dim3 grid, const Config& config, std::span<const KernelArg> args,
                      const args::CallSite& at) {
  auto g = k.graph(config);
  std::vector<KernelArg> host(args.begin(), args.end());
  struct Staged {
    TensorArg* arg;
    CUdeviceptr dev;
    size_t bytes;
    std::unique_ptr<unsigned char[]> buf;
  };
  std::vector<Staged> staged;
  const bool have_driver = driver_available();
  auto stage = [&](TensorArg& t) {
    if (!have_driver) return;
    unsigned int mem_type = 0;
    const auto ptr = reinterpret_cast<CUdeviceptr>(t.data);
    if (driver().cuPointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS ||
        mem_type != CU_MEMORYTYPE_DEVICE)
      return;  // host memory: the interpreter reads it directly
    const auto bytes = static_cast<size_t>(extent_bytes(t));
    Staged s{&t, ptr, bytes, std::unique_ptr<unsigned char[]>(new (std::align_val_t(128)) unsigned char[bytes])};
    TILEJIT_CHECK_CU(driver().cuMemcpyDtoH_v2(s.buf.get(), ptr, bytes));
    t.data = s.buf.get();
    staged.push_back(std::move(s));
  };
  if (have_driver) synchronize(stream);
  for (auto& a : host) {
    if (a.kind == KernelArg::Tensor) stage(a.tensor);
    if (a.kind == KernelArg::TensorArray)
      for (auto& t : a.array) stage(t);
  }
  interp::run(*g, grid, host, &at);
  for (auto& s : staged) TILEJIT_CHECK_CU(driver().cuMemcpyHtoD_v2(s.dev, s.buf.get(), s.bytes));
}

}  // namespace

DeviceTarget current_target() {
  DeviceTarget t;
  if (knobs().interpret || !driver_available()) return t;
  ensure_context();
  auto& d = driver();
  CUdevice dev;
  TILEJIT_CHECK_CU(d.cuCtxGetDevice(&dev));
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(d.cuCtxGetCurrent(&ctx));
  t.gpu = true;
  t.context = ctx;
  t.arch = arch_of_current_device();
  t.device = static_cast<int>(dev);
  char name[256] = {};
  TILEJIT_CHECK_CU(d.cuDeviceGetName(name, sizeof name, dev));
  t.name = name;
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_registers, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.max_shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  TILEJIT_CHECK_CU(d.cuDeviceGetAttribute(&t.l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  return t;
}

VariantResources compile_variant(const KernelBase& k, const Config& config, std::span<const KernelArg> args,
                                 const DeviceTarget& target, const args::CallSite& at) {
  const auto graph = traced(k, config);
  check_args(*graph, args, at);
  const std::vector<uint16_t> relevant = passes::relevant_specialization(*graph);
  codegen::Specialization spec;
  for (size_t i = 0; i < args.size(); ++i) spec.tensors.push_back(specialization_bits(args[i]) & relevant[i]);
  const codegen::GeneratedKernel gen = generated(*graph, spec);
  VariantResources r;
  r.threads = gen.plan.threads;
  r.shared_dynamic = gen.plan.shared_bytes;
  if (target.gpu) {
    auto& d = driver();
    TILEJIT_CHECK_CU(d.cuCtxSetCurrent(static_cast<CUcontext>(target.context)));
    // Loaded into the process-wide library cache: the launch that follows finds it there.
    const std::shared_ptr<Library> lib = load_library(k, gen, target.arch);
    const auto attribute = [&](CUfunction_attribute a) {
      int v = -1;
      TILEJIT_CHECK_CU(d.cuKernelGetAttribute(&v, a, lib->kernel, static_cast<CUdevice>(target.device)));
      return v;
    };
    r.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
    r.shared_static = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    r.spill_bytes = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    r.max_threads = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  } else {
    const CacheEntry binary = binary_for(k, gen, target.arch);
    r.registers = metadata_int(binary.metadata, "registers");
    r.shared_static = metadata_int(binary.metadata, "shared_static");
    r.spill_bytes = metadata_int(binary.metadata, "spill_stores");
  }
  return r;
}

}  // namespace detail

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

CompileTimes compile_times() {
  const auto ms = [](const std::atomic<int64_t>& ns) { return static_cast<double>(ns.load(std::memory_order_relaxed)) / 1e6; };
  CompileTimes t;
  t.compiles = g_timers.compiles.load(std::memory_order_relaxed);
  t.disk_hits = g_timers.disk_hits.load(std::memory_order_relaxed);
  t.trace_ms = ms(g_timers.trace);
  t.codegen_ms = ms(g_timers.codegen);
  t.nvrtc_ms = ms(g_timers.nvrtc);
  t.disk_ms = ms(g_timers.disk);
  t.load_ms = ms(g_timers.load);
  return t;
}

uint64_t compile_count() { return g_timers.compiles.load(std::memory_order_relaxed); }

void warmup(const KernelBase& kernel, const Config& config) {
  if (knobs().interpret || !driver_available()) {
    // Nothing can be loaded: make sure the binary exists (in the disk cache) for a later run.
    KernelRuntime& rt = runtime_of(kernel);
    std::lock_guard lock(rt.m);  // one compile per configuration, however many threads ask
    for (const Config& c : rt.compiled_without_gpu)
      if (c == config) return;
    binary_for(kernel, generated(*traced(kernel, config)), "sm_90a");
    rt.compiled_without_gpu.push_back(config);
    return;
  }
  ensure_context();
  CUcontext ctx = nullptr;
  TILEJIT_CHECK_CU(driver().cuCtxGetCurrent(&ctx));
  // The variant for tensors that satisfy every fact: 16-byte aligned, sizes and strides multiples of 16.
  const std::vector<uint16_t> all(kernel.graph(config)->params.size(), uint16_t{0xffff});
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
  std::vector<uint16_t> facts;
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
  check_grid(kernel.name(), grid, at.file, at.line);
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
  uint16_t inline_facts[kInlineArgs];
  std::unique_ptr<uint16_t[]> heap_facts;
  uint16_t* facts = inline_facts;
  if (args.size() > kInlineArgs) facts = (heap_facts = std::make_unique<uint16_t[]>(args.size())).get();
  for (size_t i = 0; i < args.size(); ++i) facts[i] = specialization_bits(args[i]);
  Entry& e = entry_for(kernel, config, std::span<const uint16_t>(facts, args.size()), ctx, s, args, &at);
  args::check_launch_args(*e.graph, e.arg_facts, args, at, args::Mode{.gpu = true});
  const codegen::LaunchPlan& plan = e.gen.plan;

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
    const size_t need = static_cast<size_t>(plan.workspace_bytes_per_program) * grid.count();
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
    }
  }
  TILEJIT_CHECK_CU(d.cuLaunchKernel(e.fn, grid.x, grid.y, grid.z, static_cast<unsigned>(plan.threads), 1, 1,
                                    static_cast<unsigned>(plan.shared_bytes), s, params, nullptr));
}

}  // namespace runtime
}  // namespace tilejit
