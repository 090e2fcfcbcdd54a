// Kernel arguments as the interpreter and the launcher see them: grid, tensors, scalars.
#pragma once

#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tilejit/ir/dtype.h"

namespace tilejit {

/// Grid of programs (CUDA blocks).
struct dim3 {
  uint32_t x = 1, y = 1, z = 1;
  constexpr dim3() = default;
  constexpr dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr uint64_t count() const { return uint64_t{x} * y * z; }
  /// Whether the grid is made of whole clusters of cluster_x by cluster_y programs (Config::cluster): x and y
  /// multiples of the cluster's extents.
  constexpr bool whole_clusters(int cluster_x, int cluster_y) const {
    return x % static_cast<uint32_t>(cluster_x) == 0 && y % static_cast<uint32_t>(cluster_y) == 0;
  }
};

/// Throws UserError unless every dimension of `grid` is at least 1 and within the limits of
/// every CUDA GPU (x < 2^31, y and z <= 65535), and x and y are multiples of the configuration's
/// cluster extents (Config::cluster): checked by launch() and interpret() alike. The error names
/// `file`:`line`, the call that gave the grid.
void check_grid(const std::string& kernel, dim3 grid, const std::string& file, unsigned line, int cluster_x = 1,
                int cluster_y = 1);

/// The grid programs persistent programs (Config::persistent) run at most: their index is an i32 that steps past
/// the last one by the number of programs launched.
inline constexpr uint64_t kMaxPersistentGridPrograms = 0x7fffffffull - 0x10000ull;

/// Throws UserError when a configuration's persistent programs cannot run `grid`: more than
/// kMaxPersistentGridPrograms programs, clusters (Config::cluster) or tile_group without persistent. Checked by
/// launch() on the GPU and in the interpreter alike; the error names `file`:`line`.
void check_persistent(const std::string& kernel, dim3 grid, bool persistent, int tile_group, int cluster_size,
                      const std::string& file, unsigned line);

/// A parameter that also records the line of the call it is passed to, for calls whose last
/// parameters are a pack (launch(stream, ...), interpret(grid, ...)) and so cannot end with a
/// defaulted std::source_location. Converts implicitly from anything convertible to T.
template <class T>
struct Located {
  T value;
  std::source_location where;
  template <class U>
    requires std::is_convertible_v<U&&, T>
  Located(U&& v, std::source_location w = std::source_location::current())  // NOLINT: implicit by design
      : value(std::forward<U>(v)), where(w) {}
};

/// ceil(a / b) for positive b.
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Largest tensor rank accepted at a kernel boundary. TMA addresses at most 5
/// dimensions; higher ranks must be merged into a view of rank <= 5 in the kernel.
inline constexpr int kMaxTensorRank = 8;

/// A tensor argument: base address (host or device), sizes and strides in elements,
/// outermost dimension first. A read-only one (from a const pointer or a read-only DLPack
/// tensor) may not be passed for a parameter the kernel writes.
struct TensorArg {
  void* data = nullptr;
  ir::DType dtype = ir::DType::f32;
  int rank = 0;
  std::array<int64_t, kMaxTensorRank> sizes{};
  std::array<int64_t, kMaxTensorRank> strides{};
  bool read_only = false;
};

/// One kernel argument, in the order of the kernel lambda's parameters
/// (configuration parameters included; their value comes from the Config).
struct KernelArg {
  enum Kind : uint8_t { Tensor, TensorArray, Scalar, Config } kind = Scalar;
  TensorArg tensor;                ///< Tensor
  std::vector<TensorArg> array;    ///< TensorArray
  ir::DType dtype = ir::DType::i32;  ///< Scalar
  int64_t i = 0;                   ///< Scalar (integer types and bool)
  double f = 0;                    ///< Scalar (float types)
};

}  // namespace tilejit
