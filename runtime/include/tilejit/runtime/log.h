// tilejit's logging: levels, the level setting and a hook that routes messages to the host application.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace tilejit {

/// Severity of a log message, from most to least verbose. `off` silences everything.
enum class LogLevel { trace, debug, info, warn, error, off };

/// The lower-case name of `level`: "trace", "debug", "info", "warn", "error" or "off".
std::string_view to_string(LogLevel level) noexcept;

/// Parses the names `to_string` returns (case-insensitive); nullopt for anything else.
std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;

/// Messages below `level` are dropped. Overrides TILEJIT_LOG (whose default is `warn`).
void set_log_level(LogLevel level);

/// The level in effect.
LogLevel log_level();

/// Routes every message at or above the log level to `callback` instead of stderr; the callback
/// receives the level and the message text without decoration. It may be called from any thread
/// (one call at a time) and must not log through tilejit itself. `nullptr` restores the default
/// (colored when stderr is a terminal) stderr output.
void set_log_callback(std::function<void(LogLevel, std::string_view)> callback);

/// Logs `message` at `level` through tilejit's logger (e.g. to interleave application messages).
void log_message(LogLevel level, std::string_view message);

}  // namespace tilejit
