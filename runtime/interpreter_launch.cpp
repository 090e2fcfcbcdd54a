// The interpreter fallback of launch(): runs the kernel's IR in the CPU interpreter, copying tensors that
// live in device memory to the host before the run and back after it (host memory is read in place).
#include "interpreter_launch.h"

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "driver_api.h"
#include "launch_internal.h"
#include "tilejit/interp/interp.h"
#include "tilejit/runtime/driver.h"

namespace tilejit::detail {

void interpret_launch(const KernelBase& k, Stream stream, dim3 grid, const Config& config, std::span<const KernelArg> args,
                      const args::CallSite& at) {
  auto g = k.graph(config);
  std::vector<KernelArg> host(args.begin(), args.end());
  struct Staged {
    TensorArg* arg;
    CUdeviceptr dev;
    size_t bytes;
    std::unique_ptr<unsigned char[]> buf;
  };
  std::vector<Staged> staged;
  const bool have_driver = driver_available();
  auto stage = [&](TensorArg& t) {
    if (!have_driver) return;
    unsigned int mem_type = 0;
    const auto ptr = reinterpret_cast<CUdeviceptr>(t.data);
    if (driver().cuPointerGetAttribute(&mem_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != CUDA_SUCCESS ||
        mem_type != CU_MEMORYTYPE_DEVICE)
      return;  // host memory: the interpreter reads it directly
    const auto bytes = static_cast<size_t>(extent_bytes(t));
    Staged s{&t, ptr, bytes, std::unique_ptr<unsigned char[]>(new (std::align_val_t(128)) unsigned char[bytes])};
    TILEJIT_CHECK_CU(driver().cuMemcpyDtoH_v2(s.buf.get(), ptr, bytes));
    t.data = s.buf.get();
    staged.push_back(std::move(s));
  };
  if (have_driver) synchronize(stream);
  for (auto& a : host) {
    if (a.kind == KernelArg::Tensor) stage(a.tensor);
    if (a.kind == KernelArg::TensorArray)
      for (auto& t : a.array) stage(t);
  }
  interp::run(*g, grid, host, &at);
  for (auto& s : staged) TILEJIT_CHECK_CU(driver().cuMemcpyHtoD_v2(s.dev, s.buf.get(), s.bytes));
}

}  // namespace tilejit::detail
