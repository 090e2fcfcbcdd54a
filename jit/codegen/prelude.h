// The device prelude of generated kernels (jit/codegen/prelude/*.cuh, embedded at build time).
#pragma once

#include <string_view>

namespace tilejit::codegen::detail {

/// Every prelude file, concatenated in file-name order: the `tj::` helpers the emitted code calls.
std::string_view prelude_source();

}  // namespace tilejit::codegen::detail
