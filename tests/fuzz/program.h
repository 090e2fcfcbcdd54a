// Random, well-typed tilejit kernels reproducible from a seed, for differential testing of the
// interpreter against NVRTC-compiled code (tests/fuzz/README in docs/testing.md).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "tilejit/config.h"
#include "tilejit/kernel_base.h"
#include "tilejit/launch_args.h"

namespace tilejit::fuzz {

/// A tensor parameter: element type, rank, sizes and strides (elements, outermost first).
struct TensorSpec {
  ir::DType dtype = ir::DType::f32;
  int rank = 1;
  std::array<int64_t, 5> sizes{}, strides{};
  bool output = false;     ///< written by the kernel (inputs are only read)
  bool tma_store = false;  ///< an output written with descriptor_store (else with a masked store)
  std::string name;
  double lo = -4, hi = 4;  ///< the contents: floats uniform in [lo, hi), integers their floor
  /// Elements from the first to the last one (padding included).
  size_t elems() const;
  size_t bytes() const;
  std::string cpp_type() const;  ///< "Tensor<f32, 2>"
};

/// A scalar parameter and the value the program passes.
struct ScalarSpec {
  ir::DType dtype = ir::DType::f32;
  double value = 0;
  std::string name;
};

/// What tracing a program records: its C++ text and how closely each tensor must match.
struct TraceRecord {
  std::string body;                ///< the lambda body, as a user would write it
  std::vector<double> tolerance;   ///< per tensor parameter: 0 = bit-exact, else gpu_test::compare_elements' tol
};

/// One generated program: parameters, launch shape, the kernel and (once traced) its source.
struct Program {
  uint64_t seed = 0;
  std::string name;                 ///< the kernel's name: fuzz_<seed>, or fuzz_dot_<seed> for a program with products
  std::vector<TensorSpec> tensors;  ///< the kernel's first parameters
  std::vector<ScalarSpec> scalars;  ///< then these
  std::vector<std::string> blocks;  ///< then Meta<"NAME"> parameters, whose values are in `config`
  dim3 grid;
  Config config;
  int rank = 1;                     ///< rank of the working tile
  std::array<int64_t, 5> tile{};    ///< shape of the working tile
  std::array<int, 2> pid_dim{{-1, -1}};  ///< tile dimension indexed by program_id(0) / program_id(1), -1 for none
  std::shared_ptr<KernelBase> kernel;
  std::shared_ptr<TraceRecord> record;

  /// Traces the kernel (once) and returns its record.
  const TraceRecord& traced() const;
  /// The program as C++: the kernel definition a user would write and how it is launched.
  std::string cpp() const;
  /// Arguments for a launch over `data` (one buffer per tensor parameter, of tensors[i].bytes()).
  std::vector<KernelArg> args(const std::vector<void*>& data) const;
  /// Fills `data[i]` with the seed's contents of tensor i (inputs and outputs alike).
  void fill(const std::vector<void*>& data) const;
};

/// Host memory for a program's tensors (128-byte aligned, as TMA wants), filled with the seed's contents.
class HostTensors {
 public:
  explicit HostTensors(const Program& p);
  const std::vector<void*>& data() const { return data_; }

 private:
  struct Free {
    void operator()(unsigned char* q) const { ::operator delete[](q, std::align_val_t(128)); }
  };
  std::vector<std::unique_ptr<unsigned char[], Free>> bytes_;
  std::vector<void*> data_;
};

/// The program of `seed` (the same program on every machine and every run).
Program make_program(uint64_t seed);

/// The program with products of `seed` (tests/fuzz/products.cpp): tensor-core dots in pipelined K loops, loop
/// nests, two products per loop and accumulator epilogues. A family of its own: its seeds are not make_program's.
Program make_product_program(uint64_t seed);

}  // namespace tilejit::fuzz
