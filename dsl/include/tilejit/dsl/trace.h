// The tracing context: which graph the DSL operations of the current thread record into.
#pragma once

#include <source_location>
#include <string>

#include "tilejit/error.h"
#include "tilejit/ir/ir.h"

namespace tilejit::dsl::detail {

struct TraceState {
  ir::Graph* graph = nullptr;
};

inline thread_local TraceState* g_trace = nullptr;

/// The graph being traced; a DSL op called outside a kernel is a UserError.
inline ir::Graph& graph(std::source_location loc = std::source_location::current()) {
  if (!g_trace || !g_trace->graph)
    throw UserError("DSL operations may only be called while a kernel is being traced",
                    "called outside a tilejit::kernel body", "", loc);
  return *g_trace->graph;
}

/// The graph, with the current source location set to `loc` for the nodes that follow.
inline ir::Graph& graph_at(const std::source_location& loc) {
  ir::Graph& g = graph(loc);
  g.set_location(loc.file_name(), loc.line());
  return g;
}

/// RAII: makes `g` the graph of this thread while tracing.
class TraceScope {
 public:
  explicit TraceScope(ir::Graph& g) : prev_(g_trace) {
    state_.graph = &g;
    g_trace = &state_;
  }
  ~TraceScope() { g_trace = prev_; }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  TraceState state_;
  TraceState* prev_;
};

[[noreturn]] inline void user_error(std::string rule, std::string value, std::string limit,
                                    const std::source_location& loc) {
  throw UserError(std::move(rule), std::move(value), std::move(limit), loc);
}

/// A UserError located at the last user line an operation was recorded for
/// (for operators, which cannot take a source_location argument).
[[noreturn]] inline void user_error_here(std::string rule, std::string value, std::string limit) {
  const ir::Location& l = graph().current_location();
  throw UserError(std::move(rule), std::move(value), std::move(limit), l.file, l.line);
}

}  // namespace tilejit::dsl::detail
