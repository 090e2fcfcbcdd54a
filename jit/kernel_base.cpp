// Tracing on demand and the per-configuration graph cache.
#include "tilejit/kernel_base.h"

#include "tilejit/error.h"
#include "tilejit/passes/rewrites.h"

namespace tilejit {

void check_grid(const std::string& kernel, dim3 grid, const std::string& file, unsigned line, int cluster_x, int cluster_y) {
  const uint32_t dims[3] = {grid.x, grid.y, grid.z};
  const uint32_t limits[3] = {0x7fffffffu, 65535u, 65535u};
  static const char* names[3] = {"grid.x", "grid.y", "grid.z"};
  for (int a = 0; a < 3; ++a) {
    if (dims[a] == 0)
      throw UserError(std::string(names[a]) + " of kernel '" + kernel + "' is zero: a grid runs at least one program per dimension",
                      "0", "1.." + std::to_string(limits[a]), file, line);
    if (dims[a] > limits[a])
      throw UserError(std::string(names[a]) + " of kernel '" + kernel + "' is too large", std::to_string(dims[a]),
                      std::to_string(limits[a]), file, line);
  }
  if (!grid.whole_clusters(cluster_x, cluster_y))
    throw UserError("the grid of kernel '" + kernel + "' must be whole clusters: its configuration runs clusters of " +
                        std::to_string(cluster_x) + " x " + std::to_string(cluster_y) + " programs (Config::cluster)",
                    "grid (" + std::to_string(grid.x) + ", " + std::to_string(grid.y) + ", " + std::to_string(grid.z) + ")",
                    "grid.x a multiple of " + std::to_string(cluster_x) + ", grid.y a multiple of " + std::to_string(cluster_y),
                    file, line);
}

void check_persistent(const std::string& kernel, dim3 grid, bool persistent, int tile_group, int cluster_size,
                      const std::string& file, unsigned line) {
  if (tile_group > 0 && !persistent)
    throw UserError("Config::tile_group of kernel '" + kernel + "' orders persistent programs: it needs Config::persistent()",
                    "tile_group=" + std::to_string(tile_group) + " without persistent", "persistent(), or tile_group 0", file, line);
  if (!persistent) return;
  if (cluster_size > 1)
    throw UserError("kernel '" + kernel + "': persistent programs (Config::persistent) do not run in clusters",
                    "cluster of " + std::to_string(cluster_size) + " programs", "cluster(1, 1)", file, line);
  if (grid.count() > kMaxPersistentGridPrograms)
    throw UserError("the grid of kernel '" + kernel + "' has too many programs for persistent programs (Config::persistent)",
                    std::to_string(grid.count()) + " programs", std::to_string(kMaxPersistentGridPrograms), file, line);
}

namespace {

// The name as a C string literal would spell it, so that an error shows exactly what was given.
std::string escaped(const std::string& name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const unsigned char c : name) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == ':' || c == '-';
}

}  // namespace

void check_kernel_name(const std::string& name, std::source_location where) {
  const std::string limit = "1 to " + std::to_string(kMaxKernelNameLength) +
                            " characters from A-Z a-z 0-9 _ . : - (the name goes into generated source, file "
                            "names and logs)";
  if (name.empty() || name.size() > kMaxKernelNameLength)
    throw UserError("a kernel name has 1 to " + std::to_string(kMaxKernelNameLength) + " characters",
                    escaped(name.size() > 64 ? name.substr(0, 64) : name) +
                        (name.size() > 64 ? "... (" + std::to_string(name.size()) + " characters)" : ""),
                    limit, where);
  for (size_t i = 0; i < name.size(); ++i)
    if (!is_name_char(name[i]))
      throw UserError("a kernel name may hold only ASCII letters, digits and _ . : -",
                      escaped(name) + " (character " + std::to_string(i) + " is " + escaped(name.substr(i, 1)) + ")",
                      limit, where);
}

KernelBase::KernelBase(std::string name, std::source_location where, Tracer tracer)
    : name_(std::move(name)), where_(where), tracer_(std::move(tracer)) {
  check_kernel_name(name_, where_);
}

void* KernelBase::make_runtime_state(std::shared_ptr<void> (*make)()) const {
  std::lock_guard lock(runtime_mutex_);
  if (!runtime_state_) {
    runtime_state_ = make();
    runtime_state_ptr_.store(runtime_state_.get(), std::memory_order_release);
  }
  return runtime_state_.get();
}

std::shared_ptr<const ir::Graph> KernelBase::graph(const Config& config) const {
  const uint64_t key = config.hash();
  {
    std::lock_guard lock(mutex_);
    auto it = graphs_.find(key);
    if (it != graphs_.end())
      for (const auto& [c, g] : it->second)
        if (c == config) return g;
  }
  auto g = std::make_shared<ir::Graph>();
  g->kernel_name = name_;
  g->kernel_location = ir::Location{where_.file_name(), static_cast<uint32_t>(where_.line())};
  g->config = config.values();
  g->num_warps = config.num_warps();
  g->num_stages = config.num_stages();
  g->min_programs_per_sm = config.programs_per_sm();
  g->warp_specialize = config.warp_specialization();
  g->overlap_products = config.product_overlap();
  g->pingpong = config.warpgroup_pingpong();
  g->cluster_x = config.cluster_x();
  g->cluster_y = config.cluster_y();
  g->fp_contract = config.fp_contract();
  g->producer_registers = config.producer_registers();
  g->persistent = config.persistent_programs();
  g->tile_group = config.tile_group();
  tracer_(*g, config);
  ir::verify(*g);
  // Contraction changes the results (one rounding less), so it is part of what the kernel means: the
  // interpreter and the lowering both start from the contracted graph.
  if (g->fp_contract) {
    *g = passes::contract_fma(*g);
    ir::verify(*g);
  }
  std::lock_guard lock(mutex_);
  auto& bucket = graphs_[key];
  for (const auto& [c, existing] : bucket)
    if (c == config) return existing;
  bucket.emplace_back(config, g);
  return g;
}

}  // namespace tilejit
