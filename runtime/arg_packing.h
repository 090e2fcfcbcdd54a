// Argument checks and packing for a launch: the specialisation bits of an argument, the launch checks,
// the bytes of a scalar in its parameter type and the host-encoded descriptors of a tensor (cached in the
// entry). Inline: every launch runs them (private to runtime/).
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <vector>

#include "kernel_entries.h"
#include "tensor_map.h"
#include "tilejit/arg_rules.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// The codegen::Specialization bits of one argument (0 for arguments that are not tensors).
inline codegen::Specialization::Bits specialization_bits(const KernelArg& a) {
  using S = codegen::Specialization;
  if (a.kind != KernelArg::Tensor) return 0;
  const TensorArg& t = a.tensor;
  S::Bits b = reinterpret_cast<uintptr_t>(t.data) % 16 == 0 ? S::kBaseAligned : 0;
  for (int d = 0; d < t.rank && d < kMaxTensorRank; ++d) {
    if (t.sizes[static_cast<size_t>(d)] % 16 == 0) b |= S::size_div16(d);
    if (t.strides[static_cast<size_t>(d)] % 16 == 0) b |= S::stride_div16(d);
  }
  return b;
}

/// The checks of launch() on `args` against graph `g`; UserErrors name `at`.
inline void check_args(const ir::Graph& g, std::span<const KernelArg> args, const args::CallSite& at) {
  args::check_launch_args(g, args, at, args::Mode{.gpu = true});
}

/// The bytes of a scalar argument in the kernel's parameter type.
inline void write_scalar(unsigned char* dst, const KernelArg& a) {
  switch (a.dtype) {
    case ir::DType::f32: { const float v = static_cast<float>(a.f); std::memcpy(dst, &v, 4); break; }
    case ir::DType::f64: std::memcpy(dst, &a.f, 8); break;
    case ir::DType::f16: { const uint16_t v = ir::to_f16_bits(a.f); std::memcpy(dst, &v, 2); break; }
    case ir::DType::bf16: { const uint16_t v = ir::to_bf16_bits(a.f); std::memcpy(dst, &v, 2); break; }
    case ir::DType::f8e4m3: dst[0] = ir::to_e4m3_bits(a.f); break;
    case ir::DType::f8e5m2: dst[0] = ir::to_e5m2_bits(a.f); break;
    case ir::DType::i32: { const auto v = static_cast<int32_t>(a.i); std::memcpy(dst, &v, 4); break; }
    case ir::DType::i64: std::memcpy(dst, &a.i, 8); break;
    case ir::DType::i1: dst[0] = a.i != 0; break;
    case ir::DType::i8: case ir::DType::u8: dst[0] = static_cast<unsigned char>(a.i); break;
  }
}

/// The descriptors of the tensors of array argument `index`, encoded with that argument's rules.
std::vector<TensorMapBytes> encode_array(const Entry& e, int index, const std::vector<TensorArg>& arr);

/// Host descriptor `index` of entry `e` for tensor `t`: the cached encoding when `t` is the tensor it
/// was encoded for last, else encoded (and cached).
inline TensorMapBytes host_descriptor(Entry& e, int index, const TensorArg& t) {
  CachedDescriptor& c = e.desc_cache[static_cast<size_t>(index)];
  std::lock_guard lock(c.m);
  if (c.valid && same_tensor(c.key, t)) return c.bytes;
  const auto& loc = e.desc_loc[static_cast<size_t>(index)];
  c.bytes = encode_tensor_map(e.gen.plan.descriptors[static_cast<size_t>(index)], t, loc.file, loc.line);
  c.key = t;
  c.valid = true;
  return c.bytes;
}

}  // namespace tilejit::detail
