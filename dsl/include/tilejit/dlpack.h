// DLPack interop: TensorView / TensorArrayView from a DLTensor, DLManagedTensor or DLManagedTensorVersioned.
//
// Not included by tilejit/tilejit.h: include it where tensors arrive through DLPack (PyTorch,
// JAX, CuPy, NumPy...). It includes <dlpack/dlpack.h> (Debian: libdlpack-dev) unless a dlpack.h
// was included before it (PyTorch's ATen/dlpack.h, a newer copy of your own).
//
//   DLManagedTensorVersioned* m = ...;   // from a __dlpack__ capsule
//   auto x = tilejit::from_dlpack<bf16, 2>(*m, "x");                      // checked, on the GPU
//   auto w = tilejit::from_dlpack<f32, 1>(*m2, "w", {.tma = false, .read_only = true});
//
// device.device_id is not checked: kernel.launch runs on the device of the current CUDA context.
// The views borrow the memory: the tensor's owner (or the managed tensor, until its deleter is
// called) must keep it alive until the kernel has run.
#pragma once

#ifndef DLPACK_DLPACK_H_
#include <dlpack/dlpack.h>
#endif

#include <concepts>
#include <cstddef>
#include <source_location>
#include <ranges>
#include <string>
#include <string_view>

#include "tilejit/dlpack_rules.h"
#include "tilejit/dsl/kernel.h"

namespace tilejit {

namespace detail {
inline dlpack::Fields dlpack_fields(const DLTensor& t) {
  dlpack::Fields f;
  f.data = t.data;
  f.device_type = static_cast<int32_t>(t.device.device_type);
  f.device_id = static_cast<int32_t>(t.device.device_id);
  f.ndim = static_cast<int32_t>(t.ndim);
  f.code = t.dtype.code;
  f.bits = t.dtype.bits;
  f.lanes = t.dtype.lanes;
  f.shape = t.shape;
  f.strides = t.strides;
  f.byte_offset = t.byte_offset;
  return f;
}

template <class T, int R>
TensorView<T, R> view_of(const TensorArg& a) {
  std::array<int64_t, R> sizes{}, strides{};
  for (size_t d = 0; d < static_cast<size_t>(R); ++d) {
    sizes[d] = a.sizes[d];
    strides[d] = a.strides[d];
  }
  if (a.read_only) return TensorView<T, R>(static_cast<const void*>(a.data), sizes, strides);
  return TensorView<T, R>(a.data, sizes, strides);
}

/// A managed tensor of either DLPack generation: DLManagedTensor (0.x) or DLManagedTensorVersioned (1.x,
/// recognised by its version and flags fields, so that headers without it still compile).
template <class M>
concept dlpack_managed = requires(const M& m) {
  { m.dl_tensor } -> std::convertible_to<const DLTensor&>;
};
template <class M>
concept dlpack_versioned = dlpack_managed<M> && requires(const M& m) {
  m.version.major;
  m.version.minor;
  m.flags;
};
}  // namespace detail

/// A TensorView<T, R> of the DLPack tensor `t`, checked: device type (opt.device), dtype (T, one lane;
/// bf16 is kDLBfloat, fp8 kDLFloat8_e4m3fn / kDLFloat8_e5m2, bool kDLBool), rank R, shape, byte
/// offset (a whole number of elements; added to the base), strides (null: row-major; never
/// negative) and, with opt.tma, the TMA rules. `name` names the tensor in the UserError of a mismatch.
template <class T, int R>
TensorView<T, R> from_dlpack(const DLTensor& t, std::string_view name, const DLPackOptions& opt = {},
                             std::source_location loc = std::source_location::current()) {
  return detail::view_of<T, R>(dlpack::tensor_arg(detail::dlpack_fields(t), dsl::dtype_v<T>, R, name, opt, loc));
}

/// The same for a DLManagedTensor or DLManagedTensorVersioned (whose major version must be 1, and
/// whose read-only flag needs opt.read_only). The managed tensor stays the caller's: call its
/// deleter once the kernel has run.
template <class T, int R, detail::dlpack_managed M>
TensorView<T, R> from_dlpack(const M& m, std::string_view name, const DLPackOptions& opt = {},
                             std::source_location loc = std::source_location::current()) {
  if constexpr (detail::dlpack_versioned<M>)
    dlpack::check_versioned(m.version.major, m.version.minor, static_cast<uint64_t>(m.flags), name, opt, loc);
  return from_dlpack<T, R>(m.dl_tensor, name, opt, loc);
}

/// Pointer forms: a null pointer is a UserError.
template <class T, int R, class P>
  requires std::same_as<P, DLTensor> || detail::dlpack_managed<P>
TensorView<T, R> from_dlpack(const P* p, std::string_view name, const DLPackOptions& opt = {},
                             std::source_location loc = std::source_location::current()) {
  if (p == nullptr) dlpack::null_tensor(name, loc);
  return from_dlpack<T, R>(*p, name, opt, loc);
}

/// A TensorArrayView<T, R> of several DLPack tensors (a range of DLTensor or managed-tensor pointers),
/// each checked as from_dlpack does and named "name[i]" in messages.
template <class T, int R, std::ranges::input_range Range>
TensorArrayView<T, R> from_dlpack_array(const Range& tensors, std::string_view name, const DLPackOptions& opt = {},
                                        std::source_location loc = std::source_location::current()) {
  TensorArrayView<T, R> out;
  size_t i = 0;
  for (const auto* p : tensors)
    out.tensors.push_back(from_dlpack<T, R>(p, std::string(name) + "[" + std::to_string(i++) + "]", opt, loc));
  return out;
}

}  // namespace tilejit
