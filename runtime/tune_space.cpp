// The autotuner's search space: TuneSpace (value lists expanded as an odometer, or a list of
// configurations, checked where the caller names them), the default matmul space, and the candidates of
// a tuning (Autotuner::candidates: heuristics applied, duplicates removed, pruned, heuristic names
// validated against the traced kernel).
#include <algorithm>
#include <string>
#include <vector>

#include "tilejit/error.h"
#include "tilejit/runtime/autotune.h"

namespace tilejit {

void set_config_value(Config& config, std::string_view name, int64_t value, std::source_location loc) {
  config.set_field(name, value, loc);
}

TuneSpace TuneSpace::matmul() {
  const auto tile = [](int64_t bm, int64_t bn, int64_t bk, int warps, int stages = Config::kAutoStages) {
    return Config{{"BM", bm}, {"BN", bn}, {"BK", bk}}.num_warps(warps).num_stages(stages);
  };
  return TuneSpace(std::vector<Config>{
      // Large problems: two consumer warpgroups on 128 x 256 (bf16 and fp8's best, cuBLAS's level on an H100).
      tile(128, 256, 64, 8), tile(128, 256, 64, 8, 4).warp_specialize(), tile(256, 128, 64, 8), tile(128, 256, 128, 8, 3),
      tile(128, 256, 32, 8, 3),  // tf32's best (32 f32 elements are 128 bytes, one swizzle row)
      // Persistent programs in groups of 8 row blocks, the consumers loading (no roles): 785 against 740 TFLOP/s
      // tiled at bf16 8192^3 on an H100, 751 against 743 at 4096^3 (docs/schedules.md).
      tile(128, 256, 64, 8, 3).warp_specialize(false).persistent().tile_group(8),
      // Mid-sized ones: more programs.
      tile(128, 128, 64, 8), tile(128, 128, 128, 8), tile(128, 128, 64, 4),
      tile(128, 128, 64, 4, 3).programs_per_sm(2).warp_specialize(), tile(64, 256, 64, 4), tile(128, 64, 64, 4),
      tile(64, 128, 64, 4),
      // Small ones.
      tile(64, 64, 64, 4),
      // Clusters of two programs sharing B's tile by multicast: +10-18% over the same tiles without at 8192^3 and
      // 4000 x 3000 x 2000 on an H100, -2-4% at 4096^3 (docs/schedules.md). Grids of odd x are skipped.
      tile(128, 256, 64, 8, 4).warp_specialize().cluster(2, 1), tile(128, 128, 64, 4).cluster(2, 1),
      // Skinny ones (M = 16 to 64 rows of tokens, one padded m64 instruction): narrow tiles and deep rings, so that
      // enough programs stream B at the memory's speed; +5-8% over 64-row tiles at M = 16 on an H100
      // (docs/tensor_cores.md, "M below 64").
      tile(16, 64, 64, 4, 8), tile(32, 128, 64, 4, 6)})
      .keep_if([](const Config& c, const TuneArgs& a) {
        if (!c.has("BM") || c["BM"] >= 64) return true;
        for (size_t i = 0; i < a.count(); ++i) {
          const KernelArg& arg = a.arg(i);
          if (arg.kind == KernelArg::Tensor && arg.tensor.rank == 2 && std::min(arg.tensor.sizes[0], arg.tensor.sizes[1]) < 64)
            return true;
        }
        return false;
      });
}

TuneSpace& TuneSpace::keep_if(Rule rule) {
  rule_ = std::move(rule);
  return *this;
}

TuneSpace::TuneSpace(std::initializer_list<Values> values, std::source_location loc) : base_{Config{}} {
  for (const auto& [name, list] : values) add(name, list, loc);
}

TuneSpace::TuneSpace(std::vector<Config> configs, std::source_location loc) : base_(std::move(configs)) {
  if (base_.empty())
    throw UserError("autotune: the list of configurations is empty", "0 configurations", "at least 1", loc);
}

TuneSpace& TuneSpace::add(std::string name, std::vector<int64_t> values, std::source_location loc) {
  if (values.empty())
    throw UserError("autotune: the value list of '" + name + "' is empty", "{}", "at least one value", loc);
  for (const auto& axis : axes_)
    if (axis.first == name)
      throw UserError("autotune: '" + name + "' has two value lists", name, "one list per name", loc);
  // Checked now, where the caller's line is known, rather than when the space is expanded.
  Config probe;
  for (int64_t v : values) set_config_value(probe, name, v, loc);
  axes_.emplace_back(std::move(name), std::move(values));
  return *this;
}

std::vector<Config> TuneSpace::configs() const {
  std::vector<Config> out;
  for (const Config& base : base_) {
    std::vector<size_t> at(axes_.size(), 0);
    for (bool more = true; more;) {
      Config c = base;
      for (size_t k = 0; k < axes_.size(); ++k) set_config_value(c, axes_[k].first, axes_[k].second[at[k]]);
      out.push_back(std::move(c));
      more = false;  // an odometer over the value lists, the last one turning fastest
      for (size_t k = axes_.size(); k-- > 0;) {
        if (++at[k] < axes_[k].second.size()) {
          more = true;
          break;
        }
        at[k] = 0;
      }
    }
  }
  return out;
}

namespace runtime {

std::vector<Config> Autotuner::candidates(std::span<const KernelArg> args, std::source_location where) const {
  const TuneArgs targs(args);
  const std::vector<Config> space = space_.configs();
  std::vector<Config> out;
  for (Config c : space) {
    if (!space_.keeps(c, targs)) continue;
    for (const auto& [name, fn] : heuristics_) set_config_value(c, name, fn(c, targs));
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (prune_ && prune_(c, targs)) continue;
    out.push_back(std::move(c));
  }
  if (out.empty())
    throw UserError(
        "autotune: the pruning function of kernel '" + kernel_->name() + "' dropped every configuration",
        std::to_string(space.size()) + " configurations for key " + key_text(args), "at least one left", where);
  // A heuristic must set a value the kernel has: a Meta name of the traced kernel or a field. The
  // names come from the first candidate that traces (the others are reported as unusable later).
  std::shared_ptr<const ir::Graph> graph;
  for (size_t c = 0; c < out.size() && !heuristics_.empty() && !graph; ++c) {
    try {
      graph = kernel_->graph(out[c]);
    } catch (const UserError&) {
    }
  }
  for (size_t h = 0; graph && h < heuristics_.size(); ++h) {
    const std::string& name = heuristics_[h].first;
    if (Config::is_field(name)) continue;
    const bool known = std::any_of(graph->params.begin(), graph->params.end(),
                                   [&](const ir::Param& p) { return p.kind == ir::Param::Config && p.name == name; });
    if (!known) {
      std::string names, fields;
      for (const ir::Param& p : graph->params)
        if (p.kind == ir::Param::Config) names += (names.empty() ? "" : ", ") + p.name;
      for (std::string_view f : Config::field_names()) fields += ", " + std::string(f);
      throw UserError("autotune: a heuristic of kernel '" + kernel_->name() + "' sets '" + name +
                          "', which is not one of its Meta parameters",
                      name, (names.empty() ? std::string("no Meta parameters") : "Meta names: " + names) + fields,
                      heuristic_locs_[h]);
    }
  }
  return out;
}

}  // namespace runtime
}  // namespace tilejit
