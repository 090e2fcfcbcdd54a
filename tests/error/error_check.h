// Shared helpers of the error tests: run code that must throw a UserError and check rule, value, limit and line.
#pragma once

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>

#include "tilejit/tilejit.h"

namespace tilejit::test {

/// The line of the call that must fail. A test stores __LINE__ here on the same
/// line as the bad call (`bad_line = __LINE__; descriptor_load(...)`), so the
/// expected line is written next to the code that produces it.
inline unsigned bad_line = 0;

/// What a UserError must say: a fragment of the rule, the exact value and limit.
struct Expected {
  std::string rule;
  std::string value;
  std::string limit;
};

/// Runs `fn` and returns the UserError it throws, or nothing when it returns normally.
template <class Fn>
std::optional<UserError> catch_user_error(Fn&& fn) {
  bad_line = 0;
  try {
    std::forward<Fn>(fn)();
  } catch (const UserError& e) {
    return e;
  }
  return std::nullopt;
}

/// Traces kernel `k` for `config` (the step that turns a lambda into IR) and
/// returns the UserError tracing raised.
template <class K>
std::optional<UserError> trace_error(const K& k, const Config& config = Config{}) {
  return catch_user_error([&] { (void)k.trace(config); });
}

/// Checks the error's rule, value and limit, that it names `file` (a file name
/// without folders) at `line`, and that what() starts with "file:line: rule".
inline void check_user_error(const std::optional<UserError>& e, const Expected& want, const std::string& file,
                             unsigned line) {
  REQUIRE_MESSAGE(e.has_value(), "no UserError was thrown; expected: " << want.rule);
  const std::string what = e->what();
  INFO("what(): " << what);
  CHECK_MESSAGE(e->rule().find(want.rule) != std::string::npos, "rule: " << e->rule());
  CHECK(e->value() == want.value);
  CHECK(e->limit() == want.limit);
  CHECK(line != 0);
  CHECK(e->line() == line);
  CHECK_MESSAGE(e->file().ends_with("/" + file), "file: " << e->file());
  const std::string prefix = e->file() + ":" + std::to_string(line) + ": ";
  CHECK(what.starts_with(prefix));
  CHECK(what.find(e->rule()) != std::string::npos);
}

/// The same, at the line the failing code stored in bad_line. (bad_line is read
/// here, after `e` was computed, not as an argument evaluated before it.)
inline void check_user_error(const std::optional<UserError>& e, const Expected& want, const std::string& file) {
  check_user_error(e, want, file, bad_line);
}

}  // namespace tilejit::test
