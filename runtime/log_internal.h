// The spdlog logger behind tilejit's logging, for the library's own .cpp files (not installed).
#pragma once

#include <spdlog/logger.h>

#include "tilejit/runtime/log.h"

namespace tilejit::detail {

/// The logger named "tilejit". Its level comes from TILEJIT_LOG (or set_log_level); its output
/// goes to stderr or to the callback given to set_log_callback. On first use it also logs the
/// warnings found while reading the knobs.
spdlog::logger& logger();

}  // namespace tilejit::detail
