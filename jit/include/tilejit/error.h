// The error types every layer of tilejit throws; the library never exits.
#pragma once

#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <string>

namespace tilejit {

/// Base of every exception tilejit throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A mistake in the user's program or arguments. `what()` reads
/// "file:line: <rule>: <value> (limit: <limit>)" so an editor can jump to it.
class UserError : public Error {
 public:
  UserError(std::string rule, std::string value, std::string limit,
            std::source_location where = std::source_location::current());
  /// For errors found after tracing, located by a recorded file and line.
  UserError(std::string rule, std::string value, std::string limit, std::string file, unsigned line);

  const std::string& rule() const noexcept { return rule_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& limit() const noexcept { return limit_; }
  const std::string& file() const noexcept { return file_; }
  unsigned line() const noexcept { return line_; }

 private:
  std::string rule_, value_, limit_, file_;
  unsigned line_ = 0;
};

/// NVRTC (or the driver's JIT) rejected generated code.
class CompileError : public Error {
 public:
  CompileError(std::string kernel, std::string log, std::string source_path);
  const std::string& log() const noexcept { return log_; }
  const std::string& source_path() const noexcept { return source_path_; }

 private:
  std::string log_, source_path_;
};

/// A CUDA driver or NVRTC call failed (or no driver is installed).
class CudaError : public Error {
 public:
  CudaError(std::string call, int code, std::string name, std::string detail = {});
  const std::string& call() const noexcept { return call_; }
  int code() const noexcept { return code_; }
  const std::string& name() const noexcept { return name_; }

 private:
  std::string call_;
  int code_;
  std::string name_;
};

/// A broken invariant inside tilejit: a bug to report, not a user mistake.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& what,
                         std::source_location where = std::source_location::current());
};

/// Throws InternalError when `cond` is false.
inline void check_internal(bool cond, const char* what,
                           std::source_location where = std::source_location::current()) {
  if (!cond) throw InternalError(what, where);
}

}  // namespace tilejit
