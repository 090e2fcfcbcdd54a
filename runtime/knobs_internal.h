// Access to the knobs without logging, for the logger that the knobs themselves configure (not installed).
#pragma once

#include <string>
#include <vector>

#include "tilejit/runtime/knobs.h"

namespace tilejit::detail {

/// The knobs of this process and the warnings found while reading them.
struct ParsedKnobs {
  Knobs knobs;
  std::vector<std::string> warnings;
};

/// Reads the environment once (thread-safe) and logs nothing: the logger needs the knobs
/// before it can report on them, so `logger()` logs `warnings` on its first use.
const ParsedKnobs& parsed_knobs();

}  // namespace tilejit::detail
