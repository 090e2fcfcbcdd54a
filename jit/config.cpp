// Configuration lookup, validation and printing.
#include "tilejit/config.h"

#include <algorithm>
#include <climits>

#include "tilejit/error.h"

namespace tilejit {

Config::Config(std::initializer_list<std::pair<std::string, int64_t>> values, int num_warps, int num_stages,
               std::source_location loc) {
  for (const auto& [k, v] : values) {
    // set() replaces a value on purpose; in one literal list a repeated name is a mistake.
    if (has(k))
      throw UserError("the configuration names '" + k + "' twice", k + "=" + std::to_string(get(k)) + " and " + k + "=" + std::to_string(v),
                      "each name once", loc);
    set(k, v, loc);
  }
  this->num_warps(num_warps, loc);
  this->num_stages(num_stages, loc);
}

bool Config::has(std::string_view name) const {
  return std::any_of(values_.begin(), values_.end(), [&](const auto& p) { return p.first == name; });
}

int64_t Config::get(std::string_view name, std::source_location loc) const {
  for (const auto& [k, v] : values_)
    if (k == name) return v;
  std::string known;
  for (const auto& [k, v] : values_) known += (known.empty() ? "" : ", ") + k;
  throw UserError("the configuration has no value named '" + std::string(name) + "'", "configuration {" + str() + "}",
                  known.empty() ? "no names defined" : "names defined: " + known, loc);
}

int64_t Config::operator[](std::string_view name) const { return get(name); }

Config& Config::set(std::string_view name, int64_t value, std::source_location loc) {
  if (name.empty()) throw UserError("configuration names must not be empty", "\"\"", "a non-empty name", loc);
  for (auto& [k, v] : values_)
    if (k == name) {
      v = value;
      return *this;
    }
  values_.emplace_back(std::string(name), value);
  std::sort(values_.begin(), values_.end());
  return *this;
}

Config& Config::num_warps(int n, std::source_location loc) {
  if (n < 1 || n > 32 || (n & (n - 1)) != 0)
    throw UserError("num_warps must be a power of two between 1 and 32", std::to_string(n), "1, 2, 4, 8, 16, 32", loc);
  if (programs_per_sm_ * n * 32 > 2048)
    throw UserError("num_warps: with programs_per_sm=" + std::to_string(programs_per_sm_) +
                        " an SM would need more than 2048 threads",
                    std::to_string(n), std::to_string(2048 / (programs_per_sm_ * 32)), loc);
  num_warps_ = n;
  return *this;
}

Config& Config::num_stages(int n, std::source_location loc) {
  if (n < 0 || n > 8)
    throw UserError("num_stages must be between 1 and 8, or 0 to let tilejit choose", std::to_string(n), "0..8", loc);
  num_stages_ = n;
  return *this;
}

Config& Config::warps(int n, std::source_location loc) { return num_warps(n, loc); }

Config& Config::stages(int n, std::source_location loc) { return num_stages(n, loc); }

Config& Config::programs_per_sm(int n, std::source_location loc) {
  if (n < 0 || n > 32) throw UserError("programs_per_sm must be between 0 (no target) and 32", std::to_string(n), "0..32", loc);
  if (n * num_warps_ * 32 > 2048)
    throw UserError("programs_per_sm: an SM holds at most 2048 threads; with num_warps=" + std::to_string(num_warps_) +
                        " at most " + std::to_string(2048 / (num_warps_ * 32)) + " programs fit",
                    std::to_string(n), std::to_string(2048 / (num_warps_ * 32)), loc);
  programs_per_sm_ = n;
  return *this;
}

Config& Config::warp_specialize(bool on) {
  warp_specialize_ = on ? WarpSpecialize::on : WarpSpecialize::off;
  return *this;
}

Config& Config::overlap_products(bool on) {
  overlap_products_ = on ? OverlapProducts::on : OverlapProducts::off;
  return *this;
}

Config& Config::pingpong(bool on) {
  pingpong_ = on ? Pingpong::on : Pingpong::off;
  return *this;
}

Config& Config::cluster(int x, int y, std::source_location loc) {
  for (int v : {x, y})
    if (v < 1 || v > 2)
      throw UserError("cluster: each extent is 1 or 2", std::to_string(x) + " x " + std::to_string(y), "1 or 2", loc);
  if (x * y > 2)
    throw UserError("cluster: at most 2 programs per cluster (x * y)", std::to_string(x) + " x " + std::to_string(y),
                    "2 x 1 or 1 x 2", loc);
  cluster_x_ = x;
  cluster_y_ = y;
  return *this;
}

Config& Config::fp_contract(bool on) {
  fp_contract_ = on;
  return *this;
}

Config& Config::producer_registers(int n, std::source_location loc) {
  if (n != 0 && n != 24 && n != 32 && n != 40)
    throw UserError("producer_registers is 24, 32 or 40 (the producer's setmaxnreg target), or 0 to let tilejit choose",
                    std::to_string(n), "0, 24, 32, 40", loc);
  producer_registers_ = n;
  return *this;
}

Config& Config::persistent(bool on) {
  persistent_ = on;
  return *this;
}

Config& Config::tile_group(int rows, std::source_location loc) {
  if (rows < 0 || rows > 65536)
    throw UserError("tile_group is the number of grid rows (x indices) per group of persistent programs, or 0 for the "
                    "launch order",
                    std::to_string(rows), "0 to 65536", loc);
  tile_group_ = rows;
  return *this;
}

std::span<const std::string_view> Config::field_names() {
  static constexpr std::string_view kFields[] = {"num_warps",        "num_stages", "programs_per_sm", "warp_specialize",
                                                 "overlap_products", "pingpong",   "cluster_x",       "cluster_y",
                                                 "fp_contract",      "producer_registers", "persistent",
                                                 "tile_group"};
  return kFields;
}

bool Config::is_field(std::string_view name) {
  const auto fields = field_names();
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}

Config& Config::set_field(std::string_view name, int64_t value, std::source_location loc) {
  if (!is_field(name)) return set(name, value, loc);
  // The on/off fields (left to tilejit until set): 0 or 1.
  if (name == "warp_specialize" || name == "overlap_products" || name == "pingpong" || name == "fp_contract" ||
      name == "persistent") {
    if (value != 0 && value != 1) throw UserError(std::string(name) + " is 0 or 1", std::to_string(value), "0, 1", loc);
    if (name == "persistent") return persistent(value == 1);
    if (name == "warp_specialize") return warp_specialize(value == 1);
    if (name == "overlap_products") return overlap_products(value == 1);
    if (name == "fp_contract") return fp_contract(value == 1);
    return pingpong(value == 1);
  }
  if (value < INT_MIN || value > INT_MAX)
    throw UserError(std::string(name) + " is out of range", std::to_string(value), "a small positive integer", loc);
  const int v = static_cast<int>(value);
  if (name == "cluster_x") return cluster(v, cluster_y_, loc);
  if (name == "cluster_y") return cluster(cluster_x_, v, loc);
  if (name == "num_warps") return num_warps(v, loc);
  if (name == "num_stages") return num_stages(v, loc);
  if (name == "producer_registers") return producer_registers(v, loc);
  if (name == "tile_group") return tile_group(v, loc);
  return programs_per_sm(v, loc);
}

std::string Config::str() const {
  std::string s;
  for (const auto& [k, v] : values_) s += k + "=" + std::to_string(v) + ", ";
  s += "num_warps=" + std::to_string(num_warps_) +
       ", num_stages=" + (num_stages_ == kAutoStages ? std::string("auto") : std::to_string(num_stages_));
  if (programs_per_sm_ > 0) s += ", programs_per_sm=" + std::to_string(programs_per_sm_);
  if (warp_specialize_ != WarpSpecialize::automatic)
    s += warp_specialize_ == WarpSpecialize::on ? ", warp_specialize" : ", warp_specialize=0";
  if (overlap_products_ != OverlapProducts::automatic)
    s += overlap_products_ == OverlapProducts::on ? ", overlap_products" : ", overlap_products=0";
  if (pingpong_ != Pingpong::automatic) s += pingpong_ == Pingpong::on ? ", pingpong" : ", pingpong=0";
  if (cluster_size() > 1) s += ", cluster=" + std::to_string(cluster_x_) + "x" + std::to_string(cluster_y_);
  if (!fp_contract_) s += ", fp_contract=0";
  if (producer_registers_ > 0) s += ", producer_registers=" + std::to_string(producer_registers_);
  if (persistent_) s += ", persistent";
  if (tile_group_ > 0) s += ", tile_group=" + std::to_string(tile_group_);
  return s;
}

uint64_t Config::hash() const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  };
  for (const auto& [k, v] : values_) {
    for (char c : k) mix(static_cast<unsigned char>(c));
    mix(static_cast<uint64_t>(v));
  }
  mix(static_cast<uint64_t>(num_warps_));
  mix(static_cast<uint64_t>(num_stages_));
  if (programs_per_sm_ > 0) mix(static_cast<uint64_t>(programs_per_sm_) + 0x5000);
  if (warp_specialize_ != WarpSpecialize::automatic) mix(0x5753 + static_cast<uint64_t>(warp_specialize_));
  if (overlap_products_ != OverlapProducts::automatic) mix(0x4f50 + static_cast<uint64_t>(overlap_products_));
  if (pingpong_ != Pingpong::automatic) mix(0x5050 + static_cast<uint64_t>(pingpong_));
  if (cluster_size() > 1) mix(0x434c00 + static_cast<uint64_t>(cluster_x_ * 16 + cluster_y_));
  if (!fp_contract_) mix(0x4643);
  if (producer_registers_ > 0) mix(0x505200 + static_cast<uint64_t>(producer_registers_));
  if (persistent_) mix(0x505253);
  if (tile_group_ > 0) mix(0x544700000 + static_cast<uint64_t>(tile_group_));
  return h;
}

}  // namespace tilejit
