// Reading and validating the TILEJIT_* environment variables, once per process.
#include "tilejit/runtime/knobs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <optional>
#include <system_error>

#include "knobs_internal.h"
#include "log_internal.h"
#include "tilejit/error.h"

extern char** environ;

namespace tilejit {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

const KnobSpec& spec(std::string_view name) {
  for (const auto& k : kKnobSpecs) {
    if (k.name == name) return k;
  }
  throw InternalError("no knob named " + std::string(name));
}

class Reader {
 public:
  Reader(const std::function<const char*(const char*)>& getenv, std::vector<std::string>* warnings)
      : getenv_(getenv), warnings_(warnings) {}

  // The trimmed value of `name`, or nullopt when unset or empty.
  std::optional<std::string> get(const char* name) const {
    const char* v = getenv_(name);
    if (v == nullptr) return std::nullopt;
    std::string_view t = trim(v);
    if (t.empty()) return std::nullopt;
    return std::string(t);
  }

  void warn_invalid(std::string_view name, std::string_view value) const {
    const KnobSpec& k = spec(name);
    warn(std::string(name) + "='" + std::string(value) + "' is not valid (accepted: " + std::string(k.values) +
         "); using the default (" + std::string(k.default_value) + ")");
  }

  void warn(std::string message) const {
    if (warnings_ != nullptr) warnings_->push_back(std::move(message));
  }

  void read_bool(const char* name, bool& out) const {
    auto v = get(name);
    if (!v) return;
    std::string l = lower(*v);
    if (l == "1" || l == "on") {
      out = true;
    } else if (l == "0" || l == "off") {
      out = false;
    } else {
      warn_invalid(name, *v);
    }
  }

  // A whole number in [lo, hi].
  void read_int(const char* name, int& out, int lo, int hi) const {
    auto v = get(name);
    if (!v) return;
    char* end = nullptr;
    errno = 0;
    const long long x = std::strtoll(v->c_str(), &end, 10);
    if (errno != 0 || end == v->c_str() || *end != '\0' || x < lo || x > hi) {
      warn_invalid(name, *v);
      return;
    }
    out = static_cast<int>(x);
  }

  // A directory path: "~/..." is expanded with HOME, a relative path made absolute.
  void read_path(const char* name, std::filesystem::path& out) const {
    auto v = get(name);
    if (!v) return;
    std::string s = *v;
    if (s == "~" || s.rfind("~/", 0) == 0) {
      auto home = get("HOME");
      if (!home) {
        warn(std::string(name) + "='" + s + "': cannot expand '~' because HOME is not set; ignoring it");
        return;
      }
      s = *home + s.substr(1);
    }
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(std::filesystem::path(s), ec);
    if (ec) {
      warn(std::string(name) + "='" + s + "' is not a usable path (" + ec.message() + "); ignoring it");
      return;
    }
    out = p.lexically_normal();
  }

 private:
  const std::function<const char*(const char*)>& getenv_;
  std::vector<std::string>* warnings_;
};

std::filesystem::path default_cache_dir(const Reader& r) {
  // XDG base directory spec: a relative XDG_CACHE_HOME is invalid and must be ignored.
  if (auto xdg = r.get("XDG_CACHE_HOME"); xdg && std::filesystem::path(*xdg).is_absolute()) {
    return std::filesystem::path(*xdg) / "tilejit";
  }
  if (auto home = r.get("HOME"); home && std::filesystem::path(*home).is_absolute()) {
    return std::filesystem::path(*home) / ".cache" / "tilejit";
  }
  auto tmp = r.get("TMPDIR");
  return std::filesystem::path(tmp && std::filesystem::path(*tmp).is_absolute() ? *tmp : "/tmp") /
         "tilejit-cache";
}

bool is_knob_or_script_variable(std::string_view name) {
  return std::find(kKnobNames.begin(), kKnobNames.end(), name) != kKnobNames.end() ||
         std::find(kScriptVariables.begin(), kScriptVariables.end(), name) != kScriptVariables.end();
}

}  // namespace

Knobs parse_knobs(const std::function<const char*(const char*)>& getenv, std::vector<std::string>* warnings) {
  Reader r(getenv, warnings);
  Knobs k;

  k.cache_dir = default_cache_dir(r);
  r.read_path("TILEJIT_CACHE_DIR", k.cache_dir);
  r.read_bool("TILEJIT_CACHE", k.cache);

  if (auto v = r.get("TILEJIT_LOG")) {
    if (auto level = parse_log_level(*v)) {
      k.log_level = *level;
    } else {
      r.warn_invalid("TILEJIT_LOG", *v);
    }
  }

  if (auto v = r.get("TILEJIT_DUMP")) {
    std::string_view rest = *v;
    while (true) {
      std::size_t comma = rest.find(',');
      std::string_view item = trim(rest.substr(0, comma));
      std::string l = lower(item);
      if (l == "ir") {
        k.dump_ir = true;
      } else if (l == "cuda") {
        k.dump_cuda = true;
      } else if (l == "ptx") {
        k.dump_ptx = true;
      } else if (l == "all") {
        k.dump_ir = k.dump_cuda = k.dump_ptx = true;
      } else if (l != "none" && !l.empty()) {
        r.warn("TILEJIT_DUMP='" + *v + "': '" + std::string(item) + "' is not valid (accepted: " +
               std::string(spec("TILEJIT_DUMP").values) + "); ignoring it");
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }

  r.read_path("TILEJIT_DUMP_DIR", k.dump_dir);
  if (!k.dump_dir.empty() && !k.dumping()) {
    r.warn("TILEJIT_DUMP_DIR is set but TILEJIT_DUMP selects nothing to dump (accepted: " +
           std::string(spec("TILEJIT_DUMP").values) + "); nothing will be written");
  }

  r.read_bool("TILEJIT_INTERPRET", k.interpret);
  r.read_bool("TILEJIT_AUTOTUNE", k.autotune);
  r.read_bool("TILEJIT_AUTOTUNE_PRINT", k.autotune_print);
  r.read_bool("TILEJIT_LINEINFO", k.lineinfo);
  r.read_bool("TILEJIT_DEBUG", k.debug);
  r.read_int("TILEJIT_DEBUG_WATCHDOG_MS", k.debug_watchdog_ms, 0, 600000);
  return k;
}

std::vector<std::string> unknown_knob_warnings(const std::vector<std::string>& env_names) {
  std::vector<std::string> out;
  for (const auto& name : env_names) {
    if (name.rfind("TILEJIT_", 0) != 0 || is_knob_or_script_variable(name)) continue;
    std::string known;
    for (auto k : kKnobNames) known += (known.empty() ? "" : ", ") + std::string(k);
    out.push_back("unknown variable " + name + " is ignored (tilejit reads: " + known + ")");
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> describe(const Knobs& k) {
  auto on_off = [](bool b) { return std::string(b ? "on" : "off"); };
  auto one_zero = [](bool b) { return std::string(b ? "1" : "0"); };
  std::string dump;
  if (k.dump_ir && k.dump_cuda && k.dump_ptx) {
    dump = "all";
  } else {
    for (auto [on, name] : {std::pair{k.dump_ir, "ir"}, {k.dump_cuda, "cuda"}, {k.dump_ptx, "ptx"}}) {
      if (on) dump += (dump.empty() ? "" : ",") + std::string(name);
    }
    if (dump.empty()) dump = "none";
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& spec : kKnobSpecs) {
    std::string value;
    if (spec.name == "TILEJIT_CACHE_DIR") value = k.cache_dir.string();
    else if (spec.name == "TILEJIT_CACHE") value = on_off(k.cache);
    else if (spec.name == "TILEJIT_LOG") value = std::string(to_string(k.log_level));
    else if (spec.name == "TILEJIT_DUMP") value = dump;
    else if (spec.name == "TILEJIT_DUMP_DIR") value = k.dump_dir.string();
    else if (spec.name == "TILEJIT_INTERPRET") value = one_zero(k.interpret);
    else if (spec.name == "TILEJIT_AUTOTUNE") value = on_off(k.autotune);
    else if (spec.name == "TILEJIT_AUTOTUNE_PRINT") value = one_zero(k.autotune_print);
    else if (spec.name == "TILEJIT_LINEINFO") value = one_zero(k.lineinfo);
    else if (spec.name == "TILEJIT_DEBUG") value = one_zero(k.debug);
    else if (spec.name == "TILEJIT_DEBUG_WATCHDOG_MS") value = std::to_string(k.debug_watchdog_ms);
    else throw InternalError("describe() misses knob " + std::string(spec.name));
    out.emplace_back(std::string(spec.name), std::move(value));
  }
  return out;
}

std::string codegen_fingerprint(const Knobs& k) {
  std::string out;
  auto described = describe(k);
  for (std::size_t i = 0; i < kKnobSpecs.size(); ++i) {
    if (!kKnobSpecs[i].affects_codegen) continue;
    out += described[i].first + "=" + described[i].second + ";";
  }
  return out;
}

namespace detail {

const ParsedKnobs& parsed_knobs() {
  static const ParsedKnobs parsed = [] {
    ParsedKnobs p;
    p.knobs = parse_knobs([](const char* name) -> const char* { return std::getenv(name); }, &p.warnings);
    std::vector<std::string> names;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      names.emplace_back(entry.substr(0, entry.find('=')));
    }
    for (auto& w : unknown_knob_warnings(names)) p.warnings.push_back(std::move(w));
    return p;
  }();
  return parsed;
}

}  // namespace detail

const Knobs& knobs() {
  const Knobs& k = detail::parsed_knobs().knobs;
  detail::logger();  // reports the knob warnings, once
  return k;
}

}  // namespace tilejit
