// Tracing on demand and the per-configuration graph cache.
#include "tilejit/kernel_base.h"

#include "tilejit/error.h"

namespace tilejit {

void check_grid(const std::string& kernel, dim3 grid, const std::string& file, unsigned line) {
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
}

KernelBase::KernelBase(std::string name, std::source_location where, Tracer tracer)
    : name_(std::move(name)), where_(where), tracer_(std::move(tracer)) {}

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
  g->min_programs_per_sm = config.min_programs_per_sm();
  tracer_(*g, config);
  ir::verify(*g);
  std::lock_guard lock(mutex_);
  auto& bucket = graphs_[key];
  for (const auto& [c, existing] : bucket)
    if (c == config) return existing;
  bucket.emplace_back(config, g);
  return g;
}

}  // namespace tilejit
