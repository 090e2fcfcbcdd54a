// Message formatting of the error types.
#include "tilejit/error.h"

namespace tilejit {
namespace {
std::string located(const std::string& file, unsigned line) { return file + ":" + std::to_string(line); }
std::string located(const std::source_location& w) { return located(w.file_name(), w.line()); }
std::string user_message(const std::string& rule, const std::string& value, const std::string& limit,
                         const std::string& file, unsigned line) {
  std::string s = (file.empty() ? std::string("<unknown>") : located(file, line)) + ": " + rule;
  if (!value.empty()) s += ": " + value;
  if (!limit.empty()) s += " (limit: " + limit + ")";
  return s;
}
}  // namespace

UserError::UserError(std::string rule, std::string value, std::string limit, std::source_location where)
    : UserError(std::move(rule), std::move(value), std::move(limit), where.file_name(), where.line()) {}

UserError::UserError(std::string rule, std::string value, std::string limit, std::string file, unsigned line)
    : Error(user_message(rule, value, limit, file, line)),
      rule_(std::move(rule)),
      value_(std::move(value)),
      limit_(std::move(limit)),
      file_(std::move(file)),
      line_(line) {}

CompileError::CompileError(std::string kernel, std::string log, std::string source_path)
    : Error("compiling kernel '" + kernel + "' failed" +
            (source_path.empty() ? std::string() : " (source: " + source_path + ")") + ":\n" + log),
      log_(std::move(log)),
      source_path_(std::move(source_path)) {}

// Negative codes are tilejit's own (no driver library at all), not CUDA's: only the name is shown.
CudaError::CudaError(std::string call, int code, std::string name, std::string detail)
    : Error(call + " failed: " + name + (code >= 0 ? " (" + std::to_string(code) + ")" : std::string()) +
            (detail.empty() ? std::string() : ": " + detail)),
      call_(std::move(call)),
      code_(code),
      name_(std::move(name)) {}

InternalError::InternalError(const std::string& what, std::source_location where)
    : Error("tilejit internal error at " + located(where) + ": " + what +
            " (please report this with TILEJIT_DUMP=all output)") {}

}  // namespace tilejit
