// DLPack tensors checked against a TensorView's element type, rank and the TMA rules.
#include "tilejit/dlpack_rules.h"

#include <string>

#include "tilejit/arg_rules.h"
#include "tilejit/checked.h"
#include "tilejit/error.h"
#include "tilejit/tma_rules.h"

namespace tilejit::dlpack {

namespace {
std::string s(int64_t v) { return std::to_string(v); }

std::string device_name(int32_t t) {
  switch (t) {
    case kCPU: return "kDLCPU (1)";
    case kCUDA: return "kDLCUDA (2)";
    case kCUDAHost: return "kDLCUDAHost (3)";
    case kCUDAManaged: return "kDLCUDAManaged (13)";
    default: return "device type " + s(t);
  }
}

std::string code_name(uint8_t c) {
  switch (c) {
    case kInt: return "kDLInt (0)";
    case kUInt: return "kDLUInt (1)";
    case kFloat: return "kDLFloat (2)";
    case 3: return "kDLOpaqueHandle (3)";
    case kBfloat: return "kDLBfloat (4)";
    case 5: return "kDLComplex (5)";
    case kBool: return "kDLBool (6)";
    case kFloat8_e4m3fn: return "kDLFloat8_e4m3fn (10)";
    case kFloat8_e5m2: return "kDLFloat8_e5m2 (12)";
    default: return "code " + s(c);
  }
}

std::string dtype_text(uint8_t code, uint8_t bits, uint16_t lanes) {
  return code_name(code) + ", " + s(bits) + " bits, " + s(lanes) + (lanes == 1 ? " lane" : " lanes");
}

bool device_ok(int32_t t, DLPackDevice want) {
  if (want == DLPackDevice::cuda) return t == kCUDA || t == kCUDAManaged;
  return t == kCPU || t == kCUDAHost || t == kCUDAManaged;
}

std::string tensor_rule(std::string_view name, const std::string& field, const std::string& rule) {
  return "DLPack tensor '" + std::string(name) + "': " + field + ": " + rule;
}
}  // namespace

TypeCode type_code(ir::DType t) {
  switch (t) {
    case ir::DType::i1: return {kBool, 8};
    case ir::DType::i8: return {kInt, 8};
    case ir::DType::u8: return {kUInt, 8};
    case ir::DType::i32: return {kInt, 32};
    case ir::DType::i64: return {kInt, 64};
    case ir::DType::f16: return {kFloat, 16};
    case ir::DType::bf16: return {kBfloat, 16};
    case ir::DType::f32: return {kFloat, 32};
    case ir::DType::f64: return {kFloat, 64};
    case ir::DType::f8e4m3: return {kFloat8_e4m3fn, 8};
    case ir::DType::f8e5m2: return {kFloat8_e5m2, 8};
  }
  throw InternalError("type_code: unknown dtype");
}

void null_tensor(std::string_view name, std::source_location loc) {
  throw UserError("DLPack tensor '" + std::string(name) + "': the DLTensor / DLManagedTensor pointer is null", "null",
                  "a tensor", loc);
}

void check_versioned(uint32_t major, uint32_t minor, uint64_t flags, std::string_view name, const DLPackOptions& opt,
                     std::source_location loc) {
  if (major != kMajorVersion)
    throw UserError(tensor_rule(name, "version", "DLManagedTensorVersioned of another DLPack ABI (its layout differs)"),
                    s(major) + "." + s(minor), "major version " + s(kMajorVersion), loc);
  if ((flags & kFlagReadOnly) && !opt.read_only)
    throw UserError(tensor_rule(name, "flags",
                                "the producer marks the tensor read-only; pass DLPackOptions{.read_only = true} if the "
                                "kernel only reads it"),
                    "DLPACK_FLAG_BITMASK_READ_ONLY set", "a writable tensor", loc);
}

TensorArg tensor_arg(const Fields& f, ir::DType want, int rank, std::string_view name, const DLPackOptions& opt,
                     std::source_location loc) {
  if (!device_ok(f.device_type, opt.device))
    throw UserError(tensor_rule(name, "device.device_type",
                                opt.device == DLPackDevice::cuda ? "kernel.launch reads GPU memory"
                                                                 : "kernel.interpret reads host memory"),
                    device_name(f.device_type),
                    opt.device == DLPackDevice::cuda ? "kDLCUDA or kDLCUDAManaged"
                                                     : "kDLCPU, kDLCUDAHost or kDLCUDAManaged",
                    loc);
  const TypeCode tc = type_code(want);
  if (f.code != tc.code || f.bits != tc.bits || f.lanes != 1)
    throw UserError(tensor_rule(name, "dtype", "does not match the TensorView's element type " +
                                                   std::string(ir::name_of(want))),
                    dtype_text(f.code, f.bits, f.lanes), dtype_text(tc.code, tc.bits, 1), loc);
  if (f.ndim != rank)
    throw UserError(tensor_rule(name, "ndim", "does not match the TensorView's rank"), s(f.ndim), s(rank), loc);
  if (rank > 0 && f.shape == nullptr)
    throw UserError(tensor_rule(name, "shape", "null with ndim > 0"), "null", "an array of " + s(rank) + " sizes", loc);
  const int64_t esize = ir::size_of(want);
  if (f.byte_offset % static_cast<uint64_t>(esize) != 0)
    throw UserError(tensor_rule(name, "byte_offset", "must be a whole number of elements"),
                    s(static_cast<int64_t>(f.byte_offset)) + " bytes", "a multiple of " + s(esize) + " bytes", loc);

  TensorArg a;
  a.dtype = want;
  a.rank = rank;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    if (f.shape[i] < 0)
      throw UserError(tensor_rule(name, "shape[" + s(d) + "]", "sizes are not negative"), s(f.shape[i]), ">= 0", loc);
    a.sizes[i] = f.shape[i];
    numel = checked::mul(numel, f.shape[i]).value_or(INT64_MAX);  // only tested against 0 below
  }
  int64_t row = 1;
  for (int d = rank - 1; d >= 0; --d) {
    const auto i = static_cast<size_t>(d);
    if (f.strides == nullptr) {
      a.strides[i] = row;
      row *= a.sizes[i];
      continue;
    }
    if (f.strides[i] < 0)
      throw UserError(tensor_rule(name, "strides[" + s(d) + "]", "tilejit addresses tensors with non-negative strides"),
                      s(f.strides[i]) + " elements", ">= 0", loc);
    a.strides[i] = f.strides[i];
  }
  if (f.data == nullptr && numel > 0)
    throw UserError(tensor_rule(name, "data", "null for a tensor of " + s(numel) + " elements"), "null", "an address",
                    loc);
  a.data = static_cast<char*>(f.data) + f.byte_offset;
  a.read_only = opt.read_only;
  args::Extent extent;
  if (auto v = args::tensor_extent(a, extent))
    throw UserError(tensor_rule(name, "shape, strides", v->rule), v->value, v->limit, loc);

  if (opt.tma) {
    const auto v = tma::check_global(want, reinterpret_cast<uint64_t>(a.data), {a.sizes.data(), static_cast<size_t>(rank)},
                                     {a.strides.data(), static_cast<size_t>(rank)});
    if (v)
      throw UserError(tensor_rule(name, "data + byte_offset, shape, strides",
                                  v->rule + " (DLPackOptions{.tma = false} for a tensor only used by pointer loads)"),
                      v->value, v->limit, loc);
  }
  return a;
}

}  // namespace tilejit::dlpack
