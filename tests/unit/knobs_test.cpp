// Unit tests of the TILEJIT_* knobs: defaults, every accepted value, every kind of bad value, docs.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "tilejit/runtime/knobs.h"

using tilejit::Knobs;
using tilejit::LogLevel;

namespace {

using Env = std::map<std::string, std::string>;

Knobs parse(const Env& env, std::vector<std::string>* warnings = nullptr) {
  return tilejit::parse_knobs(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

// Parses `env` (plus HOME) and expects no warning.
Knobs parse_clean(Env env) {
  env.emplace("HOME", "/home/u");
  std::vector<std::string> warnings;
  Knobs k = parse(env, &warnings);
  CHECK_MESSAGE(warnings.empty(), (warnings.empty() ? "" : warnings.front()));
  return k;
}

// Parses one bad setting and checks the single warning names the variable, the value and
// the accepted values; returns the knobs (which must hold the defaults).
Knobs parse_bad(const std::string& name, const std::string& value, const std::string& accepted) {
  std::vector<std::string> warnings;
  Knobs k = parse({{"HOME", "/home/u"}, {name, value}}, &warnings);
  REQUIRE(warnings.size() == 1);
  INFO(warnings[0]);
  CHECK(warnings[0].find(name) != std::string::npos);
  CHECK(warnings[0].find("'" + value + "'") != std::string::npos);
  CHECK(warnings[0].find(accepted) != std::string::npos);
  return k;
}

bool has_defaults_except_cache_dir(Knobs k) {
  Knobs d = parse({{"HOME", "/home/u"}});
  k.cache_dir = d.cache_dir;
  return k == d;
}

}  // namespace

TEST_CASE("defaults") {
  Knobs k = parse_clean({});
  CHECK(k.cache_dir == "/home/u/.cache/tilejit");
  CHECK(k.cache);
  CHECK(k.log_level == LogLevel::warn);
  CHECK_FALSE(k.dumping());
  CHECK(k.dump_dir.empty());
  CHECK_FALSE(k.interpret);
  CHECK(k.autotune);
  CHECK_FALSE(k.autotune_print);
  CHECK_FALSE(k.lineinfo);
}

TEST_CASE("default cache directory") {
  CHECK(parse_clean({{"XDG_CACHE_HOME", "/xdg"}}).cache_dir == "/xdg/tilejit");
  // A relative XDG_CACHE_HOME is invalid by the XDG spec and ignored.
  CHECK(parse_clean({{"XDG_CACHE_HOME", "rel"}}).cache_dir == "/home/u/.cache/tilejit");
  CHECK(parse({}).cache_dir == "/tmp/tilejit-cache");
  CHECK(parse({{"TMPDIR", "/scratch"}}).cache_dir == "/scratch/tilejit-cache");
}

TEST_CASE("TILEJIT_CACHE_DIR") {
  CHECK(parse_clean({{"TILEJIT_CACHE_DIR", "/data/cache/"}}).cache_dir == "/data/cache/");
  CHECK(parse_clean({{"TILEJIT_CACHE_DIR", "  /data/x/../y  "}}).cache_dir == "/data/y");
  CHECK(parse_clean({{"TILEJIT_CACHE_DIR", "~/c"}}).cache_dir == "/home/u/c");
  auto rel = parse_clean({{"TILEJIT_CACHE_DIR", "rel/dir"}}).cache_dir;
  CHECK(rel.is_absolute());
  CHECK(rel.filename() == "dir");
  CHECK(parse_clean({{"TILEJIT_CACHE_DIR", ""}}).cache_dir == "/home/u/.cache/tilejit");

  std::vector<std::string> warnings;
  Knobs k = parse({{"TILEJIT_CACHE_DIR", "~/c"}, {"TMPDIR", "/t"}}, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("TILEJIT_CACHE_DIR='~/c'") != std::string::npos);
  CHECK(warnings[0].find("HOME") != std::string::npos);
  CHECK(k.cache_dir == "/t/tilejit-cache");
}

TEST_CASE("TILEJIT_CACHE") {
  for (const char* v : {"off", "OFF", "0", " off "}) CHECK_FALSE(parse_clean({{"TILEJIT_CACHE", v}}).cache);
  for (const char* v : {"on", "On", "1"}) CHECK(parse_clean({{"TILEJIT_CACHE", v}}).cache);
  for (const char* v : {"no", "2", "offf"}) {
    CHECK(parse_bad("TILEJIT_CACHE", v, "on, off, 1, 0").cache);
  }
}

TEST_CASE("TILEJIT_LOG") {
  const std::pair<const char*, LogLevel> good[] = {{"off", LogLevel::off},     {"error", LogLevel::error},
                                                   {"warn", LogLevel::warn},   {"info", LogLevel::info},
                                                   {"DEBUG", LogLevel::debug}, {"trace", LogLevel::trace}};
  for (auto [v, level] : good) CHECK(parse_clean({{"TILEJIT_LOG", v}}).log_level == level);
  for (const char* v : {"loud", "warning", "3"}) {
    CHECK(parse_bad("TILEJIT_LOG", v, "off, error, warn, info, debug, trace").log_level == LogLevel::warn);
  }
}

TEST_CASE("TILEJIT_DUMP") {
  Knobs k = parse_clean({{"TILEJIT_DUMP", "ir,cuda"}});
  CHECK(k.dump_ir);
  CHECK(k.dump_cuda);
  CHECK_FALSE(k.dump_ptx);
  k = parse_clean({{"TILEJIT_DUMP", " PTX , ir "}});
  CHECK(k.dump_ir);
  CHECK_FALSE(k.dump_cuda);
  CHECK(k.dump_ptx);
  k = parse_clean({{"TILEJIT_DUMP", "all"}});
  CHECK((k.dump_ir && k.dump_cuda && k.dump_ptx));
  CHECK_FALSE(parse_clean({{"TILEJIT_DUMP", "none"}}).dumping());

  // A bad item is dropped, the good ones stay.
  std::vector<std::string> warnings;
  k = parse({{"TILEJIT_DUMP", "ir,sass"}}, &warnings);
  CHECK(k.dump_ir);
  CHECK_FALSE(k.dump_cuda);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("TILEJIT_DUMP") != std::string::npos);
  CHECK(warnings[0].find("'sass'") != std::string::npos);
  CHECK(warnings[0].find("ir, cuda, ptx, all") != std::string::npos);
}

TEST_CASE("TILEJIT_DUMP_DIR") {
  Knobs k = parse_clean({{"TILEJIT_DUMP", "cuda"}, {"TILEJIT_DUMP_DIR", "/tmp/d"}});
  CHECK(k.dump_dir == "/tmp/d");
  CHECK(k.dump_cuda);
  // Without TILEJIT_DUMP there is nothing to write: say so.
  std::vector<std::string> warnings;
  k = parse({{"TILEJIT_DUMP_DIR", "/tmp/d"}}, &warnings);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("TILEJIT_DUMP_DIR") != std::string::npos);
  CHECK(warnings[0].find("ir, cuda, ptx, all") != std::string::npos);
}

TEST_CASE("boolean knobs") {
  for (const char* name : {"TILEJIT_INTERPRET", "TILEJIT_AUTOTUNE_PRINT", "TILEJIT_LINEINFO"}) {
    CAPTURE(name);
    auto get = [&](const Knobs& k) {
      std::string n = name;
      return n == "TILEJIT_INTERPRET" ? k.interpret : n == "TILEJIT_LINEINFO" ? k.lineinfo : k.autotune_print;
    };
    for (const char* v : {"1", "on", "ON"}) CHECK(get(parse_clean({{name, v}})));
    for (const char* v : {"0", "off", ""}) CHECK_FALSE(get(parse_clean({{name, v}})));
    for (const char* v : {"yes", "2", "-1"}) {
      Knobs k = parse_bad(name, v, "1, 0, on, off");
      CHECK_FALSE(get(k));
      CHECK(has_defaults_except_cache_dir(k));
    }
  }
}

TEST_CASE("TILEJIT_AUTOTUNE is on unless turned off") {
  for (const char* v : {"1", "on", "On", ""}) CHECK(parse_clean({{"TILEJIT_AUTOTUNE", v}}).autotune);
  for (const char* v : {"0", "off", "OFF"}) CHECK_FALSE(parse_clean({{"TILEJIT_AUTOTUNE", v}}).autotune);
  Knobs k = parse_bad("TILEJIT_AUTOTUNE", "never", "on, off, 1, 0");
  CHECK(k.autotune);
}

TEST_CASE("describe lists every knob, in order, in a form the parser reads back") {
  Knobs k = parse_clean({{"TILEJIT_CACHE_DIR", "/c"},
                         {"TILEJIT_CACHE", "off"},
                         {"TILEJIT_LOG", "debug"},
                         {"TILEJIT_DUMP", "ir,ptx"},
                         {"TILEJIT_DUMP_DIR", "/d"},
                         {"TILEJIT_INTERPRET", "1"},
                         {"TILEJIT_AUTOTUNE", "off"},
                         {"TILEJIT_AUTOTUNE_PRINT", "1"},
                         {"TILEJIT_LINEINFO", "1"}});
  for (const Knobs& knobs : {k, parse_clean({}), parse_clean({{"TILEJIT_DUMP", "all"}})}) {
    auto d = tilejit::describe(knobs);
    REQUIRE(d.size() == tilejit::kKnobNames.size());
    Env env{{"HOME", "/home/u"}};
    for (std::size_t i = 0; i < d.size(); ++i) {
      CHECK(d[i].first == tilejit::kKnobNames[i]);
      env[d[i].first] = d[i].second;
    }
    CHECK(parse_clean(env) == knobs);
  }
}

TEST_CASE("codegen fingerprint follows exactly the codegen knobs") {
  Knobs a = parse_clean({});
  Knobs b = parse_clean({{"TILEJIT_LINEINFO", "1"}});
  CHECK(tilejit::codegen_fingerprint(a) != tilejit::codegen_fingerprint(b));
  CHECK(tilejit::codegen_fingerprint(b).find("TILEJIT_LINEINFO=1") != std::string::npos);
  Knobs c = parse_clean({{"TILEJIT_LOG", "trace"}, {"TILEJIT_CACHE_DIR", "/x"}, {"TILEJIT_DUMP", "all"}});
  CHECK(tilejit::codegen_fingerprint(a) == tilejit::codegen_fingerprint(c));
  for (const auto& spec : tilejit::kKnobSpecs) {
    CHECK((tilejit::codegen_fingerprint(a).find(spec.name) != std::string::npos) == spec.affects_codegen);
  }
}

TEST_CASE("unknown TILEJIT_ variables are reported") {
  auto w = tilejit::unknown_knob_warnings(
      {"PATH", "TILEJIT_LOG", "TILEJIT_DUMPS", "TILEJIT_BUILD_DIR", "XTILEJIT_LOG", "TILEJIT_CACHEDIR"});
  REQUIRE(w.size() == 2);
  CHECK(w[0].find("TILEJIT_DUMPS") != std::string::npos);
  CHECK(w[0].find("TILEJIT_LINEINFO") != std::string::npos);  // lists the known ones
  CHECK(w[1].find("TILEJIT_CACHEDIR") != std::string::npos);
}

TEST_CASE("knobs() reads this process's environment once") {
  const Knobs& k = tilejit::knobs();
  CHECK(&k == &tilejit::knobs());
  // ctest gives every test its own TILEJIT_CACHE_DIR.
  if (const char* dir = std::getenv("TILEJIT_CACHE_DIR"); dir != nullptr && *dir == '/') {
    CHECK(k.cache_dir == std::filesystem::path(dir).lexically_normal());
  }
}

TEST_CASE("the README documents every knob") {
  std::ifstream in(TILEJIT_README_PATH);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (auto name : tilejit::kKnobNames) {
    CAPTURE(name);
    CHECK(text.str().find("`" + std::string(name) + "`") != std::string::npos);
  }
}
