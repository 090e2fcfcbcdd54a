// The registry of named test kernels whose generated CUDA the codegen tests check.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/codegen/codegen.h"
#include "tilejit/config.h"
#include "tilejit/ir/ir.h"

namespace tilejit::testing {

struct EmitCase {
  std::string name;
  std::string what;  ///< one line: the feature the case covers
  Config config;  ///< the configuration the case is registered with
  std::function<std::shared_ptr<const ir::Graph>(const Config&)> trace_with;
  codegen::Options options;

  /// The kernel traced with its registered configuration.
  std::shared_ptr<const ir::Graph> trace() const { return trace_with(config); }
};

/// Every registered case, in registration order.
const std::vector<EmitCase>& emit_cases();

/// The case called `name`, or nullptr.
const EmitCase* find_emit_case(std::string_view name);

}  // namespace tilejit::testing
