// Unit tests of logging: the callback hook, levels, and knob warnings arriving through the log.
// ctest runs this with TILEJIT_LOG=loud and TILEJIT_DUMPS=ir, two mistakes the log must report.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "tilejit/runtime/knobs.h"
#include "tilejit/runtime/log.h"

using tilejit::LogLevel;

namespace {
std::vector<std::pair<LogLevel, std::string>> g_messages;

bool logged(LogLevel level, const std::string& part) {
  for (const auto& [l, m] : g_messages) {
    if (l == level && m.find(part) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

// One test case: the knob warnings are reported once per process, on first use.
TEST_CASE("log callback, levels and knob warnings") {
  tilejit::set_log_callback([](LogLevel l, std::string_view m) { g_messages.emplace_back(l, std::string(m)); });

  tilejit::knobs();
  const bool env_set = std::getenv("TILEJIT_LOG") != nullptr;
  if (env_set) {
    INFO("messages: " << g_messages.size());
    CHECK(logged(LogLevel::warn, "TILEJIT_LOG='loud' is not valid"));
    CHECK(logged(LogLevel::warn, "off, error, warn, info, debug, trace"));
    CHECK(logged(LogLevel::warn, "unknown variable TILEJIT_DUMPS"));
    CHECK(tilejit::knobs().log_level == LogLevel::warn);  // the default, kept
  }
  const std::size_t after_knobs = g_messages.size();
  tilejit::knobs();
  CHECK(g_messages.size() == after_knobs);  // reported once

  CHECK(tilejit::log_level() == LogLevel::warn);
  tilejit::log_message(LogLevel::info, "hidden at warn");
  CHECK(g_messages.size() == after_knobs);
  tilejit::log_message(LogLevel::warn, "shown at warn");
  CHECK(logged(LogLevel::warn, "shown at warn"));

  tilejit::set_log_level(LogLevel::debug);
  CHECK(tilejit::log_level() == LogLevel::debug);
  tilejit::log_message(LogLevel::debug, "debug message {}");  // not a format string
  CHECK(logged(LogLevel::debug, "debug message {}"));
  tilejit::log_message(LogLevel::error, "an error");
  CHECK(logged(LogLevel::error, "an error"));

  tilejit::set_log_level(LogLevel::off);
  const std::size_t before_off = g_messages.size();
  tilejit::log_message(LogLevel::error, "silenced");
  CHECK(g_messages.size() == before_off);

  // Back to stderr: the callback hears nothing more.
  tilejit::set_log_callback(nullptr);
  tilejit::set_log_level(LogLevel::warn);
  tilejit::log_message(LogLevel::warn, "to stderr");
  CHECK(g_messages.size() == before_off);
}

TEST_CASE("level names") {
  for (LogLevel l : {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error,
                     LogLevel::off}) {
    CHECK(tilejit::parse_log_level(tilejit::to_string(l)) == l);
  }
  CHECK(tilejit::parse_log_level("INFO") == LogLevel::info);
  CHECK_FALSE(tilejit::parse_log_level("verbose").has_value());
  CHECK_FALSE(tilejit::parse_log_level("").has_value());
}
