// cuTensorMapEncodeTiled behind tilejit's rule checks: every rule is named before the driver sees the call.
#include "tensor_map.h"

#include <span>

#include "driver_api.h"
#include "tilejit/error.h"
#include "tilejit/runtime/driver.h"
#include "tilejit/tma_rules.h"

namespace tilejit::detail {

namespace {
CUtensorMapDataType driver_type(ir::DType t) {
  switch (t) {
    case ir::DType::f16: return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case ir::DType::bf16: return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case ir::DType::f32: return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case ir::DType::f64: return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
    case ir::DType::i32: return CU_TENSOR_MAP_DATA_TYPE_INT32;
    case ir::DType::i64: return CU_TENSOR_MAP_DATA_TYPE_INT64;
    default: return CU_TENSOR_MAP_DATA_TYPE_UINT8;  // i1, i8, u8 and fp8 move as bytes
  }
}
}  // namespace

TensorArg descriptor_view(const codegen::HostDescriptor& d, const TensorArg& t, const std::string& file, unsigned line) {
  if (d.merge_groups.empty()) return t;
  TensorArg merged;
  if (auto v = tma::merge_dims(t, d.merge_groups, merged)) throw UserError(v->rule, v->value, v->limit, file, line);
  return merged;
}

TensorMapBytes encode_tensor_map(const codegen::HostDescriptor& d, const TensorArg& arg, const std::string& file, unsigned line) {
  const TensorArg t = descriptor_view(d, arg, file, line);
  if (t.rank != d.rank)
    throw InternalError("descriptor rank " + std::to_string(d.rank) + " differs from the tensor view's rank " + std::to_string(t.rank));
  const auto rank = static_cast<size_t>(t.rank);
  if (auto v = tma::check_global(t.dtype, reinterpret_cast<uint64_t>(t.data), std::span<const int64_t>(t.sizes.data(), rank),
                                 std::span<const int64_t>(t.strides.data(), rank)))
    throw UserError(v->rule, v->value, v->limit, file, line);
  if (d.used_by_store)
    if (auto v = tma::check_store_extent(t.dtype, t.sizes[rank - 1])) throw UserError(v->rule, v->value, v->limit, file, line);
  // The driver wants the innermost dimension first and strides in bytes for dimensions 1..rank-1.
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], estride[5];
  const int64_t esize = ir::size_of(t.dtype);
  for (size_t i = 0; i < rank; ++i) {
    const size_t outer = rank - 1 - i;
    dims[i] = static_cast<cuuint64_t>(t.sizes[outer]);
    box[i] = static_cast<cuuint32_t>(d.box[outer]);
    estride[i] = static_cast<cuuint32_t>(d.estride[outer] > 0 ? d.estride[outer] : 1);
    if (i > 0) strides[i - 1] = static_cast<cuuint64_t>(t.strides[outer] * esize);
  }
  TensorMapBytes out;
  auto* map = reinterpret_cast<CUtensorMap*>(out.bytes.data());
  static_assert(sizeof(CUtensorMap) == sizeof(TensorMapBytes));
  const CUtensorMapSwizzle swizzle = static_cast<CUtensorMapSwizzle>(d.swizzle_code());
  const CUtensorMapFloatOOBfill fill =
      d.fill ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  TILEJIT_CHECK_CU(driver().cuTensorMapEncodeTiled(map, driver_type(t.dtype), static_cast<cuuint32_t>(rank), t.data, dims,
                                                   strides, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                                                   CU_TENSOR_MAP_L2_PROMOTION_L2_128B, fill));
  return out;
}

}  // namespace tilejit::detail
