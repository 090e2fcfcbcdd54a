// Argument checks and packing for a launch: the specialisation bits of an argument, the launch checks,
// the bytes of a scalar in its parameter type and the host-encoded descriptors of a tensor (cached in the
// entry). Inline: every launch runs them (private to runtime/).
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>
#include <span>
#include <vector>

#include "kernel_entries.h"
#include "tensor_map.h"
#include "tilejit/arg_rules.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/ir/ir.h"
#include "tilejit/launch_args.h"

namespace tilejit::detail {

/// The codegen::Specialization bits of one argument that depend on it alone (0 for arguments that are not
/// tensors): alignment of the base, sizes and strides divisible by 16.
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

/// The bytes [lo, hi) tensor `t` spans (empty for a tensor without elements); nullopt when its extent
/// does not fit in 64 bits (the launch checks refuse it).
inline std::optional<std::pair<uintptr_t, uintptr_t>> byte_span(const TensorArg& t) {
  args::Extent e;
  if (args::tensor_extent(t, e)) return std::nullopt;
  if (e.empty()) return std::pair<uintptr_t, uintptr_t>{0, 0};
  const auto es = static_cast<intptr_t>(ir::size_of(t.dtype));
  const auto base = reinterpret_cast<uintptr_t>(t.data);
  return std::pair<uintptr_t, uintptr_t>{base + static_cast<uintptr_t>(e.lo * es), base + static_cast<uintptr_t>((e.hi + 1) * es)};
}

/// The specialisation bits of every argument of a launch into `out` (one per argument): specialization_bits,
/// plus Specialization::kDisjoint for each tensor whose bytes overlap those of no other tensor argument
/// (the tensors of TensorArray arguments included). Quadratic in the number of tensors, which is small.
inline void specialization_facts(std::span<const KernelArg> args, codegen::Specialization::Bits* out) {
  using Span = std::pair<uintptr_t, uintptr_t>;
  constexpr size_t kInline = 32;
  Span inline_spans[kInline];
  std::vector<Span> heap;
  size_t count = 0;
  for (const KernelArg& a : args) count += a.kind == KernelArg::Tensor ? 1 : a.kind == KernelArg::TensorArray ? a.array.size() : 0;
  Span* spans = inline_spans;
  if (count > kInline) spans = (heap = std::vector<Span>(count)).data();
  // Every tensor's bytes in argument order; a tensor whose extent is unknown spans everything.
  size_t k = 0;
  const auto span_of = [](const TensorArg& t) { return byte_span(t).value_or(Span{0, UINTPTR_MAX}); };
  for (const KernelArg& a : args) {
    if (a.kind == KernelArg::Tensor) spans[k++] = span_of(a.tensor);
    if (a.kind == KernelArg::TensorArray)
      for (const TensorArg& t : a.array) spans[k++] = span_of(t);
  }
  k = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    out[i] = specialization_bits(args[i]);
    if (args[i].kind == KernelArg::TensorArray) k += args[i].array.size();
    if (args[i].kind != KernelArg::Tensor) continue;
    const Span self = spans[k];
    bool apart = true;
    for (size_t j = 0; j < count && apart; ++j)
      apart = j == k || self.first == self.second || spans[j].first == spans[j].second ||
              self.second <= spans[j].first || spans[j].second <= self.first;
    if (apart) out[i] |= codegen::Specialization::kDisjoint;
    ++k;
  }
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
