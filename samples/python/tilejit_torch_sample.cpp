// A Python extension module that runs a tilejit kernel on PyTorch (or any DLPack) tensors.
//
//   import torch, tilejit_torch_sample as tj
//   tj.scale(x, y, 2.0, torch.cuda.current_stream().cuda_stream)   # y = bf16(f32(x) * 2)
//
// The tensors arrive through their __dlpack__ method: the consumer (this module) passes the
// stream it will launch on, so that the producer orders its pending writes before it, then reads
// the DLPack capsule, checks it with tilejit::from_dlpack and launches on that same stream. No
// PyTorch header or library is involved: the module links tilejit and nanobind only.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cstdint>
#include <string>

#include "tilejit/dlpack.h"
#include "tilejit/tilejit.h"

namespace nb = nanobind;
using namespace tilejit::dsl;

namespace {

// y = bf16(f32(x) * alpha), one BM x BN tile per program, TMA in and out.
const auto& scale_kernel() {
  static const auto k = tilejit::kernel(
      "torch_scale", [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Scalar<float> alpha, Meta<"BM"> BM, Meta<"BN"> BN) {
        auto m = program_id(0) * BM;
        auto n = program_id(1) * BN;
        auto t = descriptor_load(x, {m, n}, {BM, BN});
        descriptor_store(y, {m, n}, (t.to<f32>() * alpha).to<bf16>());
      });
  return k;
}

// The DLPack tensor behind a Python object's __dlpack__, owned until destruction (which calls the
// producer's deleter). With a DLPack 1.x header the versioned capsule is asked for.
class Borrowed {
 public:
#ifdef DLPACK_MAJOR_VERSION
  using Managed = DLManagedTensorVersioned;
  static constexpr const char* kName = "dltensor_versioned";
  static constexpr const char* kUsed = "used_dltensor_versioned";
#else
  using Managed = DLManagedTensor;
  static constexpr const char* kName = "dltensor";
  static constexpr const char* kUsed = "used_dltensor";
#endif

  // `stream` is the CUDA stream the kernel will run on (the DLPack protocol's 1 stands for the
  // legacy default stream, whose handle is 0).
  Borrowed(const nb::handle& tensor, uintptr_t stream) {
    const int64_t dl_stream = stream == 0 ? 1 : static_cast<int64_t>(stream);
#ifdef DLPACK_MAJOR_VERSION
    nb::object capsule = tensor.attr("__dlpack__")(nb::arg("stream") = dl_stream,
                                                   nb::arg("max_version") = nb::make_tuple(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION));
#else
    nb::object capsule = tensor.attr("__dlpack__")(nb::arg("stream") = dl_stream);
#endif
    void* p = PyCapsule_GetPointer(capsule.ptr(), kName);
    if (p == nullptr) throw nb::python_error();
    managed_ = static_cast<Managed*>(p);
    PyCapsule_SetName(capsule.ptr(), kUsed);  // the capsule's destructor now leaves the tensor to us
  }
  ~Borrowed() {
    if (managed_ && managed_->deleter) managed_->deleter(managed_);
  }
  Borrowed(const Borrowed&) = delete;
  Borrowed& operator=(const Borrowed&) = delete;
  const Managed& operator*() const { return *managed_; }

 private:
  Managed* managed_ = nullptr;
};

void scale(const nb::handle& x, const nb::handle& y, float alpha, uintptr_t stream, int64_t bm, int64_t bn) {
  const Borrowed bx(x, stream), by(y, stream);
  const auto xv = tilejit::from_dlpack<bf16, 2>(*bx, "x", {.read_only = true});
  const auto yv = tilejit::from_dlpack<bf16, 2>(*by, "y");
  const auto grid = tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(yv.sizes()[0], bm)),
                                  static_cast<uint32_t>(tilejit::cdiv(yv.sizes()[1], bn)));
  nb::gil_scoped_release unlocked;  // the first launch of a configuration compiles it
  scale_kernel().launch(reinterpret_cast<tilejit::Stream>(stream), grid, tilejit::Config{{"BM", bm}, {"BN", bn}},
                        xv, yv, alpha);
}

}  // namespace

NB_MODULE(tilejit_torch_sample, m) {
  m.doc() = "A tilejit kernel on DLPack tensors (PyTorch's among them)";
  m.def("scale", &scale, nb::arg("x"), nb::arg("y"), nb::arg("alpha"), nb::arg("stream"), nb::arg("bm") = 64,
        nb::arg("bn") = 128,
        "y = bf16(f32(x) * alpha) for 2-D bf16 CUDA tensors, launched on `stream` (a cudaStream_t as an int: "
        "torch.cuda.current_stream().cuda_stream). Mismatched tensors raise RuntimeError with tilejit's message.");
  m.def("cuda_source", [](int64_t bm, int64_t bn) { return scale_kernel().cuda_source(tilejit::Config{{"BM", bm}, {"BN", bn}}); },
        nb::arg("bm") = 64, nb::arg("bn") = 128, "The generated CUDA C++ of the kernel for one configuration.");
}
