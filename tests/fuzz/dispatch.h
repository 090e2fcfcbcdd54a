// Calls a generic lambda with the DSL type of an element type or a rank known only at run time.
#pragma once

#include <type_traits>

#include "tilejit/error.h"
#include "tilejit/tilejit.h"

namespace tilejit::fuzz {

/// f(tag{}) for the DSL tag of `d` (dsl::f32{}, dsl::i8{}, ...).
template <class F>
decltype(auto) with_dtype(ir::DType d, F&& f) {
  using namespace tilejit::dsl;
  switch (d) {
    case ir::DType::i1: return f(i1{});
    case ir::DType::i8: return f(i8{});
    case ir::DType::u8: return f(u8{});
    case ir::DType::i32: return f(i32{});
    case ir::DType::i64: return f(i64{});
    case ir::DType::f16: return f(f16{});
    case ir::DType::bf16: return f(bf16{});
    case ir::DType::f32: return f(f32{});
    case ir::DType::f64: return f(f64{});
    case ir::DType::f8e4m3: return f(f8e4m3{});
    case ir::DType::f8e5m2: return f(f8e5m2{});
  }
  throw InternalError("fuzz: unknown element type");
}

/// f(std::integral_constant<int, r>{}) for r in Lo..5.
template <int Lo, class F>
decltype(auto) with_rank(int r, F&& f) {
  switch (r) {
    case 0: if constexpr (Lo <= 0) return f(std::integral_constant<int, 0>{}); break;
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    default: break;
  }
  throw InternalError("fuzz: rank out of range");
}

}  // namespace tilejit::fuzz
