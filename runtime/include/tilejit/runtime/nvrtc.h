// What the NVRTC library in this process can do: its version and its target architectures.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace tilejit {

/// NVRTC's (major, minor) version, e.g. (13, 0). Throws CudaError if NVRTC fails.
std::pair<int, int> nvrtc_version();

/// The SM versions NVRTC can target, ascending, e.g. {75, 80, 86, 87, 89, 90, 100, ...}.
/// Architecture-specific variants (sm_90a) are not listed: see `nvrtc_supports_arch`.
std::vector<int> nvrtc_supported_archs();

/// True when NVRTC accepts `--gpu-architecture=<arch>` (e.g. "sm_90a", "compute_90"), found by
/// compiling an empty program once per arch; the answer is remembered. Never throws.
bool nvrtc_supports_arch(std::string_view arch) noexcept;

}  // namespace tilejit
