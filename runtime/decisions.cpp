// Autotuning decisions as JSON: one file per decision in the cache folder, and export files that applications
// ship.
#include "tilejit/runtime/decisions.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <system_error>

#include <nlohmann/json.hpp>

#include "log_internal.h"
#include "storage.h"
#include "tilejit/error.h"

namespace fs = std::filesystem;

namespace tilejit {
namespace {

// Members keep the order they are written in (a decision file reads top-down).
using Json = nlohmann::ordered_json;

/// `text` as JSON, or nullopt with `error` saying where it stops being JSON (or holds a number no
/// double can hold, such as 1e999).
std::optional<Json> parse_json(const std::string& text, std::string& error) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    error = "not JSON at byte " + std::to_string(e.byte) + " (" + e.what() + ")";
  } catch (const Json::exception& e) {
    error = std::string("not usable JSON (") + e.what() + ")";
  }
  return std::nullopt;
}

/// JSON text that survives any string (invalid UTF-8 is replaced rather than thrown on).
std::string dump(const Json& j, int indent) { return j.dump(indent, ' ', false, Json::error_handler_t::replace); }

constexpr std::string_view kDecisionFormat = "tilejit-autotune-decision";
constexpr std::string_view kExportFormat = "tilejit-autotune-decisions";
// Version 2 added "checksum"; version 1 files have none and are not trusted.
constexpr int64_t kFormatVersion = 2;
constexpr std::string_view kChecksum = "checksum";
// A decision is about 600 bytes; an export file of every decision of a large application stays far
// below these bounds, and a file above them is refused unread.
constexpr std::uint64_t kMaxDecisionBytes = std::uint64_t{1} << 20;
constexpr std::uint64_t kMaxExportBytes = std::uint64_t{64} << 20;
constexpr std::string_view kSuffix = ".json";
constexpr auto kStaleTempAge = std::chrono::hours(1);

// The configuration fields that are not named values.
constexpr std::string_view kWarps = "num_warps", kStages = "num_stages", kProgramsPerSm = "programs_per_sm",
                           kWarpSpecialize = "warp_specialize", kOverlapProducts = "overlap_products",
                           kPingpong = "pingpong", kClusterX = "cluster_x", kClusterY = "cluster_y",
                           kFpContract = "fp_contract", kProducerRegisters = "producer_registers",
                           kPersistent = "persistent", kTileGroup = "tile_group";

Json config_json(const Config& c) {
  Json o = Json::object();
  for (const auto& [name, value] : c.values()) o[name] = value;
  o[std::string(kWarps)] = c.num_warps();
  o[std::string(kStages)] = c.num_stages();
  o[std::string(kProgramsPerSm)] = c.programs_per_sm();
  // Absent: tilejit decides (as in files written before the field existed).
  if (c.warp_specialization() != WarpSpecialize::automatic) o[std::string(kWarpSpecialize)] = c.warp_specialized() ? 1 : 0;
  if (c.product_overlap() != OverlapProducts::automatic)
    o[std::string(kOverlapProducts)] = c.product_overlap() == OverlapProducts::on ? 1 : 0;
  if (c.warpgroup_pingpong() != Pingpong::automatic) o[std::string(kPingpong)] = c.warpgroup_pingpong() == Pingpong::on ? 1 : 0;
  if (!c.fp_contract()) o[std::string(kFpContract)] = 0;  // absent: contracted
  if (c.producer_registers() > 0) o[std::string(kProducerRegisters)] = c.producer_registers();  // absent: tilejit's
  if (c.persistent_programs()) o[std::string(kPersistent)] = 1;  // absent: one program per grid program
  if (c.tile_group() > 0) o[std::string(kTileGroup)] = c.tile_group();  // absent: the launch order
  if (c.cluster_size() > 1) {  // absent: one program per cluster
    o[std::string(kClusterX)] = c.cluster_x();
    o[std::string(kClusterY)] = c.cluster_y();
  }
  return o;
}

// The checksum of a decision object: a hash of its compact text without the "checksum" member, so
// that any edit of a value (by hand or by a damaged disk) is seen, whatever the indentation.
std::string checksum_of(const Json& o) {
  Json copy = o;
  copy.erase(std::string(kChecksum));
  return detail::hex64(detail::hash64(dump(copy, -1), 0x6465636973696f6eull));
}

Json decision_json(const Decision& d) {
  Json o = Json::object();
  o["format"] = std::string(kDecisionFormat);
  o["version"] = kFormatVersion;
  o["kernel"] = d.id.kernel;
  o["source_hash"] = d.id.source_hash;
  o["space_hash"] = d.id.space_hash;
  o["key"] = d.id.key;
  o["device"] = d.id.device;
  o["sm_count"] = d.id.sm_count;
  o["tilejit_version"] = d.id.tilejit_version;
  o["config"] = config_json(d.config);
  o["time_ms"] = d.time_ms >= 0 ? Json(d.time_ms) : Json(nullptr);
  o["candidates"] = d.candidates;
  o["tuned_at"] = d.tuned_at;
  o[std::string(kChecksum)] = checksum_of(o);
  return o;
}

// `v` (an integer) as an int64_t within lo..hi; false with `error` naming `what`, the value and the
// range otherwise. Unsigned values above INT64_MAX are out of every range rather than wrapped.
bool in_range(const Json& v, const std::string& what, int64_t lo, int64_t hi, int64_t& out, std::string& error) {
  const bool too_large_for_int64 = v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX);
  const int64_t value = too_large_for_int64 ? 0 : v.get<int64_t>();
  if (too_large_for_int64 || value < lo || value > hi) {
    error = what + " is " + (too_large_for_int64 ? std::to_string(v.get<uint64_t>()) : std::to_string(value)) +
            ", outside " + std::to_string(lo) + ".." + std::to_string(hi);
    return false;
  }
  out = value;
  return true;
}

// Reads the members of a decision object; false with `error` naming the first bad member.
bool parse_decision_members(const Json& o, Decision& d, std::string& error) {
  if (!o.is_object()) {
    error = "not a JSON object";
    return false;
  }
  const auto text = [&](const char* name, std::string& out) {
    const auto v = o.find(name);
    if (v == o.end() || !v->is_string()) {
      error = std::string("member \"") + name + "\" is missing or not a string";
      return false;
    }
    out = v->get<std::string>();
    return true;
  };
  const auto integer = [&](const char* name, int64_t& out, int64_t lo, int64_t hi) {
    const auto v = o.find(name);
    if (v == o.end() || !v->is_number_integer()) {
      error = std::string("member \"") + name + "\" is missing or not an integer";
      return false;
    }
    return in_range(*v, std::string("member \"") + name + "\"", lo, hi, out, error);
  };
  std::string format, checksum;
  int64_t version = 0, sm_count = 0, candidates = 0;
  if (!text("format", format) || !integer("version", version, INT64_MIN, INT64_MAX)) return false;
  if (format != kDecisionFormat || version != kFormatVersion) {
    error = "format \"" + format + "\" version " + std::to_string(version) + ", expected \"" +
            std::string(kDecisionFormat) + "\" version " + std::to_string(kFormatVersion);
    if (format == kDecisionFormat && version == 1) error += " (version 1 files carry no checksum)";
    return false;
  }
  if (!text("kernel", d.id.kernel) || !text("source_hash", d.id.source_hash) ||
      !text("space_hash", d.id.space_hash) || !text("key", d.id.key) || !text("device", d.id.device) ||
      !integer("sm_count", sm_count, 0, INT_MAX) || !text("tilejit_version", d.id.tilejit_version) ||
      !integer("candidates", candidates, 0, INT_MAX) || !integer("tuned_at", d.tuned_at, 0, INT64_MAX))
    return false;
  d.id.sm_count = static_cast<int>(sm_count);
  d.candidates = static_cast<int>(candidates);
  const auto time = o.find("time_ms");
  d.time_ms = time != o.end() && time->is_number() ? time->get<double>() : -1;
  const auto config = o.find("config");
  if (config == o.end() || !config->is_object()) {
    error = "member \"config\" is missing or not an object";
    return false;
  }
  // Warps before programs_per_sm: Config checks the pair whenever either is set.
  std::optional<int64_t> warps, stages, per_sm;
  int cluster_x = 1, cluster_y = 1;
  try {
    Config c;
    for (const auto& [name, value] : config->items()) {
      if (!value.is_number_integer()) {
        error = "configuration value \"" + name + "\" is not an integer";
        return false;
      }
      // The Config checks the fields' own rules; these bounds keep a value from being cut to an int.
      const std::string what = "configuration value \"" + name + "\"";
      int64_t v = 0;
      if (name == kWarps) {
        if (!in_range(value, what, 1, 32, v, error)) return false;
        warps = v;
      } else if (name == kStages) {
        if (!in_range(value, what, 0, 8, v, error)) return false;  // 0: tilejit chooses
        stages = v;
      } else if (name == kProgramsPerSm) {
        if (!in_range(value, what, 0, 32, v, error)) return false;
        per_sm = v;
      } else if (name == kWarpSpecialize) {
        if (!in_range(value, what, 0, 1, v, error)) return false;
        c.warp_specialize(v == 1);
      } else if (name == kOverlapProducts) {
        if (!in_range(value, what, 0, 1, v, error)) return false;
        c.overlap_products(v == 1);
      } else if (name == kPingpong) {
        if (!in_range(value, what, 0, 1, v, error)) return false;
        c.pingpong(v == 1);
      } else if (name == kFpContract) {
        if (!in_range(value, what, 0, 1, v, error)) return false;
        c.fp_contract(v == 1);
      } else if (name == kProducerRegisters) {
        if (!in_range(value, what, 0, 40, v, error)) return false;
        c.producer_registers(static_cast<int>(v));  // UserError for values other than 0, 24, 32, 40
      } else if (name == kPersistent) {
        if (!in_range(value, what, 0, 1, v, error)) return false;
        c.persistent(v == 1);
      } else if (name == kTileGroup) {
        if (!in_range(value, what, 0, 65536, v, error)) return false;
        c.tile_group(static_cast<int>(v));
      } else if (name == kClusterX || name == kClusterY) {
        if (!in_range(value, what, 1, 2, v, error)) return false;
        (name == kClusterX ? cluster_x : cluster_y) = static_cast<int>(v);
      } else {
        if (!in_range(value, what, INT64_MIN, INT64_MAX, v, error)) return false;
        c.set(name, v);
      }
    }
    if (warps) c.num_warps(static_cast<int>(*warps));
    if (stages) c.num_stages(static_cast<int>(*stages));
    if (per_sm) c.programs_per_sm(static_cast<int>(*per_sm));
    c.cluster(cluster_x, cluster_y);  // both extents together: Config checks their product
    d.config = std::move(c);
  } catch (const UserError& e) {
    error = "invalid configuration: " + e.rule() + ": " + e.value();
    return false;
  }
  // Last, so that a value that breaks a rule of its own is reported as such.
  if (!text(kChecksum.data(), checksum)) return false;
  if (checksum != checksum_of(o)) {
    error = "checksum mismatch: the file says " + checksum + ", its contents hash to " + checksum_of(o) +
            " (edited or damaged)";
    return false;
  }
  return true;
}

// parse_decision_members, with whatever the JSON library throws turned into a false and a reason.
bool parse_decision(const Json& o, Decision& d, std::string& error) {
  try {
    return parse_decision_members(o, d, error);
  } catch (const Json::exception& e) {
    error = e.what();
    return false;
  }
}

bool is_decision_name(const std::string& name) {
  return name.size() > kSuffix.size() && name.ends_with(kSuffix) &&
         name.find(detail::kTempMarker) == std::string::npos;
}

}  // namespace

std::string DecisionId::file_id() const {
  std::string s;
  for (const std::string* field : {&kernel, &source_hash, &space_hash, &key, &device, &tilejit_version})
    s.append(std::to_string(field->size())).append(":").append(*field);
  s.append(std::to_string(sm_count));
  return detail::hex64(detail::fnv1a64(s)) + detail::hex64(detail::hash64(s, 0x6175746f74756e65ull));
}

std::string decision_to_json(const Decision& d) { return dump(decision_json(d), 2) + "\n"; }

std::optional<Decision> decision_from_json(const std::string& text, std::string& error) {
  const std::optional<Json> doc = parse_json(text, error);
  if (!doc) return std::nullopt;
  Decision d;
  if (!parse_decision(*doc, d, error)) return std::nullopt;
  return d;
}

std::vector<Decision> read_decisions_file(const fs::path& path, std::source_location where) {
  std::string text, error;
  if (!detail::read_file(path, text, error, kMaxExportBytes))
    throw UserError("cannot read the decisions file " + path.string(), error.empty() ? "no such file" : error,
                    "an existing regular file of at most " + std::to_string(kMaxExportBytes) + " bytes", where);
  const std::optional<Json> doc = parse_json(text, error);
  if (!doc) throw UserError("the decisions file " + path.string() + " is not valid JSON", error, "JSON text", where);
  std::vector<Decision> out;
  auto member = [&](const char* name) -> const Json* {
    if (!doc->is_object()) return nullptr;
    const auto it = doc->find(name);
    return it == doc->end() ? nullptr : &*it;
  };
  const Json* format = member("format");
  if (format && format->is_string() && format->get<std::string>() == kDecisionFormat) {  // a single decision file
    Decision d;
    if (!parse_decision(*doc, d, error))
      throw UserError("invalid decision file " + path.string(), error, "a decision written by this tilejit", where);
    out.push_back(std::move(d));
    return out;
  }
  const Json* version = member("version");
  const Json* list = member("decisions");
  const std::string expected = "an object with \"format\": \"" + std::string(kExportFormat) + "\", \"version\": " +
                               std::to_string(kFormatVersion) + " and a \"decisions\" array";
  if (!format || !format->is_string() || format->get<std::string>() != kExportFormat || !version ||
      !version->is_number_integer() || !list || !list->is_array())
    throw UserError("not a tilejit decisions file: " + path.string(), "its top-level members", expected, where);
  if (*version != kFormatVersion)
    throw UserError("the decisions file " + path.string() + " has another format version",
                    "version " + dump(*version, -1) +
                        (*version == 1 ? " (version 1 carries no checksums: export the decisions again)" : ""),
                    expected, where);
  for (size_t i = 0; i < list->size(); ++i) {
    Decision d;
    if (!parse_decision((*list)[i], d, error))
      throw UserError("invalid decision " + std::to_string(i) + " in the decisions file " + path.string(), error,
                      "decisions written by this tilejit", where);
    out.push_back(std::move(d));
  }
  return out;
}

void write_decisions_file(const fs::path& path, const std::vector<Decision>& decisions, std::source_location where) {
  Json doc = Json::object();
  doc["format"] = std::string(kExportFormat);
  doc["version"] = kFormatVersion;
  doc["decisions"] = Json::array();
  for (const Decision& d : decisions) doc["decisions"].push_back(decision_json(d));
  const fs::path absolute = fs::absolute(path);
  if (std::string error = detail::write_atomically(absolute, dump(doc, 2) + "\n"); !error.empty())
    throw UserError("cannot write the decisions file " + path.string(), error, "a writable folder", where);
}

DecisionStore::DecisionStore(fs::path root) : dir_(std::move(root) / "decisions") {}

fs::path DecisionStore::path_of(const DecisionId& id) const { return dir_ / (id.file_id() + std::string(kSuffix)); }

std::optional<Decision> DecisionStore::load(const DecisionId& id) const {
  const fs::path path = path_of(id);
  std::string text, error;
  if (!detail::read_file(path, text, error, kMaxDecisionBytes)) {
    if (!error.empty())
      detail::logger().warn("autotune: ignoring the decision file {}: {}; tuning again replaces it", path.string(),
                            error);
    return std::nullopt;
  }
  std::optional<Decision> d = decision_from_json(text, error);
  if (!d) {
    detail::logger().warn("autotune: ignoring the decision file {}: {}; tuning again replaces it", path.string(),
                          error);
    return std::nullopt;
  }
  if (!(d->id == id)) {
    detail::logger().warn(
        "autotune: ignoring the decision file {}: it belongs to another kernel, key or device",
        path.string());
    return std::nullopt;
  }
  return d;
}

bool DecisionStore::store(const Decision& d) const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  std::string error =
      ec ? "cannot create " + dir_.string() + ": " + ec.message()
         : detail::write_atomically(dir_ / (d.id.file_id() + std::string(kSuffix)), decision_to_json(d));
  if (error.empty()) return true;
  detail::logger().warn("autotune: the decision for kernel '{}' is not kept: {}", d.id.kernel, error);
  return false;
}

std::vector<DecisionFile> DecisionStore::list() const {
  std::vector<DecisionFile> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_decision_name(name)) continue;
    DecisionFile f;
    f.file = name;
    std::string text;
    if (detail::read_file(it->path(), text, f.error, kMaxDecisionBytes))
      f.decision = decision_from_json(text, f.error);
    else if (f.error.empty())
      continue;  // removed meanwhile
    out.push_back(std::move(f));
  }
  const auto order = [](const DecisionFile& f) {
    return f.decision ? std::tie(f.decision->id.kernel, f.decision->id.key, f.file)
                      : std::tie(f.file, f.file, f.file);
  };
  std::sort(out.begin(), out.end(), [&](const DecisionFile& a, const DecisionFile& b) {
    if (a.decision.has_value() != b.decision.has_value()) return a.decision.has_value();
    return order(a) < order(b);
  });
  return out;
}

std::size_t DecisionStore::clear(std::string* error) const {
  std::vector<fs::path> victims;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code tec;
    const bool stale_temp = name.find(detail::kTempMarker) != std::string::npos &&
                            now - fs::last_write_time(it->path(), tec) > kStaleTempAge && !tec;
    if (is_decision_name(name) || stale_temp) victims.push_back(it->path());
  }
  std::string first_error;
  if (ec && ec != std::errc::no_such_file_or_directory) first_error = "cannot read " + dir_.string() + ": " + ec.message();
  std::size_t removed = 0;
  for (const fs::path& p : victims) {
    std::error_code rec;
    if (fs::remove(p, rec))
      ++removed;
    else if (rec && first_error.empty())
      first_error = "cannot remove " + p.string() + ": " + rec.message();
  }
  if (error) *error = first_error;
  return removed;
}

}  // namespace tilejit
