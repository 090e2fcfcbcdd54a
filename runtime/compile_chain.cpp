// The compile chain of the launcher: a kernel object's graph for a configuration is traced, generated
// into CUDA (dumped and logged as the knobs ask), compiled by NVRTC or found in the disk cache, and
// loaded once per (architecture, source) into a process-wide library cache; each step adds its time to
// the counters behind runtime::compile_times(). compile_variant() runs the chain for the autotuner.
#include "compile_chain.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <utility>

#include "arg_packing.h"
#include "launch_internal.h"
#include "log_internal.h"
#include "tilejit/error.h"
#include "tilejit/passes/passes.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/launch.h"
#include "tilejit/runtime/nvrtc.h"
#include "tilejit/version.h"

namespace tilejit {
namespace detail {

namespace {

struct LibraryCache {
  std::mutex m;
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Library>> by_source;  // (arch, source)
};
LibraryCache& library_cache() {
  static auto* cache = new LibraryCache;  // never destroyed, see Library
  return *cache;
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

}  // namespace

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

codegen::GeneratedKernel generate_for(const ir::Graph& g, const codegen::Specialization& spec) {
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

std::shared_ptr<const ir::Graph> traced(const KernelBase& k, const Config& config) {
  Timed t(g_timers.trace);
  return k.graph(config);
}

codegen::GeneratedKernel generated(const ir::Graph& g, const codegen::Specialization& spec) {
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

bool library_loaded(const std::string& arch, const std::string& source) {
  auto& cache = library_cache();
  std::lock_guard lock(cache.m);
  return cache.by_source.count(std::make_pair(arch, source)) > 0;
}

std::shared_ptr<Library> load_library(const KernelBase& k, const codegen::GeneratedKernel& gen, const std::string& arch,
                                      std::optional<CacheEntry> binary) {
  auto& cache = library_cache();
  const auto key = std::make_pair(arch, gen.source);
  {
    std::lock_guard lock(cache.m);
    auto it = cache.by_source.find(key);
    if (it != cache.by_source.end()) return it->second;
  }
  if (!binary) binary = binary_for(k, gen, arch);
  auto lib = std::make_shared<Library>();
  auto& d = driver();
  const void* image = binary->cubin.empty() ? static_cast<const void*>(binary->ptx.c_str()) : static_cast<const void*>(binary->cubin.data());
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

namespace {

// The generated sources (hashed, per architecture) whose binaries spilled and were compiled again with a leaner
// producer: a later variant_for of the same source goes to the retry without compiling or loading the first.
struct RetriedSources {
  std::mutex m;
  std::map<std::pair<std::string, size_t>, bool> lean_chosen;  // (arch, source hash) -> the retry spilled less
};
RetriedSources& retried_sources() {
  static auto* r = new RetriedSources;
  return *r;
}

int spilled_bytes(const std::optional<CacheEntry>& binary) {
  return binary ? std::max(0, metadata_int(binary->metadata, "spill_stores")) : 0;
}

}  // namespace

Variant variant_for(const KernelBase& k, const ir::Graph& g, const codegen::Specialization& spec, const std::string& arch) {
  const auto compiled = [&](const ir::Graph& graph) {  // generated, and its binary unless its library is loaded
    Variant v{generated(graph, spec), std::nullopt};
    if (!library_loaded(arch, v.gen.source)) v.binary = binary_for(k, v.gen, arch);
    return v;
  };
  const auto warn_spills = [&](const Variant& v, const std::string& tried, const std::string& remedy) {
    if (const int bytes = spilled_bytes(v.binary))
      logger().warn("kernel '{}' ({}) spills {} bytes of registers to local memory and will run slowly{}; {}", k.name(),
                    v.gen.entry, bytes, tried, remedy);
  };
  const auto lean_graph = [&](int lean) {
    ir::Graph again = g;
    again.producer_registers = lean;
    return again;
  };
  codegen::GeneratedKernel gen = generated(g, spec);
  const int lean = gen.spill_retry_producer_registers;
  const auto retry_key = std::make_pair(arch, std::hash<std::string>{}(gen.source));
  std::optional<bool> lean_chosen;  // what an earlier variant_for of this source chose
  if (lean > 0) {
    auto& r = retried_sources();
    std::lock_guard lock(r.m);
    if (auto it = r.lean_chosen.find(retry_key); it != r.lean_chosen.end()) lean_chosen = it->second;
  }
  if (lean_chosen == true) return compiled(lean_graph(lean));
  Variant first{std::move(gen), std::nullopt};
  if (!library_loaded(arch, first.gen.source)) first.binary = binary_for(k, first.gen, arch);
  const int before = spilled_bytes(first.binary);
  if (lean == 0 || before == 0 || lean_chosen == false) {
    warn_spills(first, "", first.gen.spill_remedy);
    return first;
  }
  // The consumers spilled with the default producer: the same kernel with the leaner one gives them more registers.
  Variant second = compiled(lean_graph(lean));
  const int after = spilled_bytes(second.binary);
  const bool take = after < before;
  {
    auto& r = retried_sources();
    std::lock_guard lock(r.m);
    r.lean_chosen[retry_key] = take;
  }
  logger().info("kernel '{}' ({}) spilled {} bytes of registers; compiled again with Config::producer_registers({}), which leaves "
                "its consumer warpgroups more, as {}, it spills {} bytes: {} is used",
                k.name(), first.gen.entry, before, lean, second.gen.entry, after, take ? "the second" : "the first");
  // The retry's remedy: the leaner producer is tried already.
  warn_spills(take ? second : first, " (also with Config::producer_registers(" + std::to_string(lean) + "))",
              second.gen.spill_remedy);
  return take ? std::move(second) : std::move(first);
}

// A configuration value that no Meta parameter reads is most likely a misspelt name: warned once
// per compiled or interpreted configuration (a grid function may read a value the kernel does not).
void warn_unused_config_values(const KernelBase& k, const ir::Graph& g, const Config& config) {
  for (const auto& [name, value] : config.values()) {
    bool used = false;
    for (const ir::Param& p : g.params) used = used || (p.kind == ir::Param::Config && p.name == name);
    if (used) continue;
    std::string names;
    for (const ir::Param& p : g.params)
      if (p.kind == ir::Param::Config) names += (names.empty() ? "" : ", ") + p.name;
    logger().warn("kernel '{}' ({}:{}): configuration value {}={} is not one of its Meta parameters ({}); it is ignored",
                  k.name(), g.kernel_location.file, g.kernel_location.line, name, value,
                  names.empty() ? "it has none" : "Meta names: " + names);
  }
}

VariantResources compile_variant(const KernelBase& k, const Config& config, std::span<const KernelArg> args,
                                 const DeviceTarget& target, const args::CallSite& at) {
  const auto graph = traced(k, config);
  check_args(*graph, args, at);
  const std::vector<codegen::Specialization::Bits> relevant = passes::relevant_specialization(*graph);
  codegen::Specialization spec;
  for (size_t i = 0; i < args.size(); ++i) spec.tensors.push_back(specialization_bits(args[i]) & relevant[i]);
  Variant v = variant_for(k, *graph, spec, target.arch);
  const codegen::GeneratedKernel& gen = v.gen;
  VariantResources r;
  r.threads = gen.plan.threads;
  r.shared_dynamic = gen.plan.shared_bytes;
  if (target.gpu) {
    auto& d = driver();
    TILEJIT_CHECK_CU(d.cuCtxSetCurrent(static_cast<CUcontext>(target.context)));
    // Loaded into the process-wide library cache: the launch that follows finds it there.
    const std::shared_ptr<Library> lib = load_library(k, gen, target.arch, std::move(v.binary));
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
    const CacheEntry binary = v.binary ? std::move(*v.binary) : binary_for(k, gen, target.arch);
    r.registers = metadata_int(binary.metadata, "registers");
    r.shared_static = metadata_int(binary.metadata, "shared_static");
    r.spill_bytes = metadata_int(binary.metadata, "spill_stores");
  }
  return r;
}

}  // namespace detail

namespace runtime {

using namespace detail;

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

}  // namespace runtime
}  // namespace tilejit
