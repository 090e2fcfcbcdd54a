// The "tilejit" spdlog logger: a swappable sink (stderr or the application's callback) and the level.
#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/dist_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "knobs_internal.h"
#include "log_internal.h"

namespace tilejit {
namespace detail {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

LogLevel from_spdlog(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return LogLevel::trace;
    case spdlog::level::debug: return LogLevel::debug;
    case spdlog::level::info: return LogLevel::info;
    case spdlog::level::warn: return LogLevel::warn;
    case spdlog::level::err:
    case spdlog::level::critical: return LogLevel::error;
    default: return LogLevel::off;
  }
}

// Hands each message, undecorated, to the application's callback. base_sink's mutex makes
// the calls one at a time.
class CallbackSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit CallbackSink(std::function<void(LogLevel, std::string_view)> callback)
      : callback_(std::move(callback)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    callback_(from_spdlog(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  std::function<void(LogLevel, std::string_view)> callback_;
};

std::shared_ptr<spdlog::sinks::sink> make_stderr_sink() {
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  sink->set_pattern("[%n] [%^%l%$] %v");
  return sink;
}

// The logger routes through a dist_sink so that set_log_callback can swap the real sink
// while other threads log (dist_sink locks; spdlog::logger's own sink list does not).
struct LogState {
  std::shared_ptr<spdlog::sinks::dist_sink_mt> router;
  std::shared_ptr<spdlog::logger> logger;
};

// The logger is deliberately not registered with spdlog's global registry: the host
// application may use spdlog itself, with a logger of the same name.
LogState& state() {
  static LogState s = [] {
    LogState st;
    st.router = std::make_shared<spdlog::sinks::dist_sink_mt>();
    st.router->add_sink(make_stderr_sink());
    st.logger = std::make_shared<spdlog::logger>("tilejit", st.router);
    st.logger->set_level(to_spdlog(parsed_knobs().knobs.log_level));
    st.logger->flush_on(spdlog::level::warn);
    return st;
  }();
  return s;
}

}  // namespace

spdlog::logger& logger() {
  spdlog::logger& lg = *state().logger;
  // The knob warnings wait for the first use of the logger, so that an application can
  // install its callback (which does not go through here) before they are printed.
  static std::atomic<bool> reported{false};
  if (!reported.load(std::memory_order_acquire) && !reported.exchange(true)) {
    for (const auto& w : parsed_knobs().warnings) lg.warn("{}", w);
  }
  return lg;
}

}  // namespace detail

std::string_view to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::trace: return "trace";
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
    case LogLevel::off: return "off";
  }
  return "warn";
}

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
  for (LogLevel level : {LogLevel::trace, LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error,
                         LogLevel::off}) {
    std::string_view want = to_string(level);
    if (want.size() != name.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < name.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == want[i];
    }
    if (same) return level;
  }
  return std::nullopt;
}

void set_log_level(LogLevel level) { detail::state().logger->set_level(detail::to_spdlog(level)); }

LogLevel log_level() { return detail::from_spdlog(detail::state().logger->level()); }

void set_log_callback(std::function<void(LogLevel, std::string_view)> callback) {
  std::shared_ptr<spdlog::sinks::sink> sink;
  if (callback) {
    sink = std::make_shared<detail::CallbackSink>(std::move(callback));
  } else {
    sink = detail::make_stderr_sink();
  }
  detail::state().router->set_sinks({std::move(sink)});
}

void log_message(LogLevel level, std::string_view message) {
  if (level == LogLevel::off) return;
  detail::logger().log(detail::to_spdlog(level), "{}", message);
}

}  // namespace tilejit
