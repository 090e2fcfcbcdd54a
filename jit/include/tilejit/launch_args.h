// Kernel arguments as the interpreter and the launcher see them: grid, tensors, scalars.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tilejit/ir/dtype.h"

namespace tilejit {

/// Grid of programs (CUDA blocks).
struct dim3 {
  uint32_t x = 1, y = 1, z = 1;
  constexpr dim3() = default;
  constexpr dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr uint64_t count() const { return uint64_t{x} * y * z; }
};

/// Throws UserError unless every dimension of `grid` is at least 1 and within the limits of
/// every CUDA GPU (x < 2^31, y and z <= 65535): checked by launch() and interpret() alike.
void check_grid(const std::string& kernel, dim3 grid);

/// ceil(a / b) for positive b.
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Largest tensor rank accepted at a kernel boundary. TMA addresses at most 5
/// dimensions; higher ranks must be merged into a view of rank <= 5 in the kernel.
inline constexpr int kMaxTensorRank = 8;

/// A tensor argument: base address (host or device), sizes and strides in elements,
/// outermost dimension first.
struct TensorArg {
  void* data = nullptr;
  ir::DType dtype = ir::DType::f32;
  int rank = 0;
  std::array<int64_t, kMaxTensorRank> sizes{};
  std::array<int64_t, kMaxTensorRank> strides{};
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
