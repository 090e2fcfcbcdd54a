// Global tensors in kernels: Tensor<T, R>, descriptor arrays, views, pointer-style and TMA access.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>

#include "tilejit/dsl/value.h"
#include "tilejit/launch_args.h"

namespace tilejit::dsl {

/// Where a tensor's TMA descriptor is made. Automatic: host-encoded for kernel
/// arguments, built on the device for views whose base or extent is known only
/// in the kernel.
enum class Placement : int { automatic = 0, host = 1, device = 2 };
/// Value of TMA-loaded elements outside the tensor.
enum class Fill : int { zero = 0, nan = 1 };
/// What a TMA store does with the values already in memory (ir::StoreReduce). For floats, min and max take the
/// number when one operand is NaN (IEEE minNum / maxNum, as the TMA unit does); two NaNs give NaN.
using StoreReduce = ir::StoreReduce;
/// The former name of StoreReduce (a reduction of values is `sum`, `max`, ... or `reduce`).
using Reduce [[deprecated("Reduce is now StoreReduce (StoreReduce::add etc.)")]] = ir::StoreReduce;
/// How TensorArray::at prefetches an element's descriptors (ir::ArrayPrefetch).
using Prefetch = ir::ArrayPrefetch;
/// Where a pointer load or store asks the L1 and L2 caches to keep its lines (Triton's eviction_policy, ir::Evict):
/// Evict::first for data used once (a streamed input, an output), Evict::last for data read again soon (a row
/// read twice). A hint: results are the same either way.
using Evict = ir::Evict;

/// An integer index given to a TMA coordinate or a view: a scalar i32/i64 value,
/// a C++ integer, or a configuration integer.
class Index {
 public:
  template <class T>
    requires(is_int_v<T>)
  Index(const Value<T, 0>& v) : id_(v.id()), is_const_(false) {}  // NOLINT
  template <class L>
    requires(std::is_integral_v<L> || detail::is_config_int_v<L>)
  Index(L v) : value_(static_cast<int64_t>(v)), is_const_(true) {}  // NOLINT

  /// The index as a scalar node of integer type `d`.
  ir::NodeId node(ir::DType d) const {
    if (is_const_) return detail::constant(d, static_cast<double>(value_), value_);
    return detail::cast_node(id_, d);
  }

  /// The value, when tracing knows it (a literal, a Meta value, a constant scalar).
  std::optional<int64_t> known() const {
    if (is_const_) return value_;
    const ir::Graph& g = detail::graph();
    if (g.node(id_).op == ir::Op::Const && g.node(id_).shape.rank == 0 && !ir::is_float(g.node(id_).dtype)) return g.const_i(id_);
    return std::nullopt;
  }

 private:
  ir::NodeId id_ = ir::kNoNode;
  int64_t value_ = 0;
  bool is_const_ = true;
};

/// A global tensor of rank R inside a kernel (a kernel parameter or a view of one).
template <class T, int R>
class Tensor {
  static_assert(is_dtype_v<T>, "tilejit: Tensor<T, R>: T must be an element type (f32, bf16, ... or float, ...)");
  static_assert(R >= 1 && R <= kMaxTensorRank, "tilejit: Tensor<T, R>: rank must be between 1 and 8");

 public:
  using dtype = tag_t<T>;
  static constexpr int rank = R;

  Tensor() = default;
  explicit Tensor(ir::NodeId id, Placement p = Placement::automatic) : id_(id), placement_(p) {}
  ir::NodeId id() const { return id_; }
  Placement placement() const { return placement_; }

  /// Extent of dimension d (runtime value, i64).
  Scalar<i64> size(int d, std::source_location loc = std::source_location::current()) const {
    check_dim(d, "size", loc);
    return Scalar<i64>(detail::node,
                       detail::graph_at(loc).add(ir::Op::TensorSize, ir::DType::i64, ir::Shape{}, {id_}, ir::DimAttrs{d}));
  }
  /// Stride of dimension d in elements (runtime value, i64).
  Scalar<i64> stride(int d, std::source_location loc = std::source_location::current()) const {
    check_dim(d, "stride", loc);
    return Scalar<i64>(detail::node,
                       detail::graph_at(loc).add(ir::Op::TensorStride, ir::DType::i64, ir::Shape{}, {id_}, ir::DimAttrs{d}));
  }

  /// The same tensor with its TMA descriptor forced to be host-encoded or device-built.
  Tensor with_placement(Placement p) const { return Tensor(id_, p); }

  /// Rows [start, end) of dimension 0: a view whose extent is known only in the
  /// kernel (jagged sequences). Its TMA descriptor is built on the device.
  /// end == start is an empty view (no TMA operation may use it); end < start is an
  /// error when the kernel runs (the interpreter throws UserError naming both; on the
  /// GPU, TILEJIT_DEBUG=1 stops the kernel with the same message).
  Tensor rows(Index start, Index end, std::source_location loc = std::source_location::current()) const {
    ir::Graph& g = detail::graph_at(loc);
    const ir::NodeId s = start.node(ir::DType::i64), e = end.node(ir::DType::i64);
    std::vector<ir::NodeId> ops{id_};
    ops.push_back(g.add(ir::Op::Mul, ir::DType::i64, ir::Shape{}, {s, stride(0, loc).id()}));
    ops.push_back(g.add(ir::Op::Sub, ir::DType::i64, ir::Shape{}, {e, s}));
    for (int d = 1; d < R; ++d) ops.push_back(size(d, loc).id());
    for (int d = 0; d < R; ++d) ops.push_back(stride(d, loc).id());
    ops.push_back(s);
    ops.push_back(e);
    return Tensor(g.add(ir::Op::MakeView, dtype_v<T>, ir::Shape{}, ops, ir::MakeViewAttrs{R, true}), placement_);
  }

  /// Views consecutive dimensions as one: group_sizes lists how many dimensions
  /// form each new dimension (they must sum to R). The merged dimensions must be
  /// contiguous in memory; that is checked when the kernel runs (UserError naming them).
  template <size_t N>
  Tensor<T, static_cast<int>(N)> merge(const int (&group_sizes)[N],
                                       std::source_location loc = std::source_location::current()) const {
    static_assert(N >= 1 && static_cast<int>(N) <= R, "tilejit: merge(): the view must have between 1 and R dimensions");
    int total = 0;
    ir::MergeViewAttrs merged{static_cast<int>(N), {}};
    for (size_t i = 0; i < N; ++i) {
      if (group_sizes[i] < 1)
        detail::user_error("merge: each group must hold at least one dimension",
                           "group " + std::to_string(i) + " has " + std::to_string(group_sizes[i]), ">= 1", loc);
      total += group_sizes[i];
      merged.groups.push_back(group_sizes[i]);
    }
    if (total != R)
      detail::user_error("merge: the group sizes must add up to the tensor rank", std::to_string(total),
                         std::to_string(R), loc);
    ir::Graph& g = detail::graph_at(loc);
    return Tensor<T, static_cast<int>(N)>(g.add(ir::Op::MergeView, dtype_v<T>, ir::Shape{}, {id_}, merged), placement_);
  }

 private:
  void check_dim(int d, const char* what, const std::source_location& loc) const {
    if (d < 0 || d >= R)
      detail::user_error(std::string("tensor.") + what + ": dimension out of range", std::to_string(d),
                         "0.." + std::to_string(R - 1), loc);
  }
  ir::NodeId id_ = ir::kNoNode;
  Placement placement_ = Placement::automatic;
};

/// A general view: base + offset elements, runtime sizes and strides (elements;
/// the innermost stride must be 1). Its TMA descriptor is built on the device.
/// A size of 0 is an empty view (no TMA operation may use it); a negative size is an
/// error when the kernel runs (UserError in the interpreter, a TILEJIT_DEBUG=1 check on the GPU).
template <class T, int R, size_t N>
Tensor<T, static_cast<int>(N)> make_view(const Tensor<T, R>& base, Index offset, const Index (&sizes)[N],
                                         const Index (&strides)[N],
                                         std::source_location loc = std::source_location::current()) {
  static_assert(N >= 1 && N <= ir::kMaxRank, "tilejit: make_view(): views have 1 to 5 dimensions");
  ir::Graph& g = detail::graph_at(loc);
  std::vector<ir::NodeId> ops{base.id(), offset.node(ir::DType::i64)};
  for (size_t i = 0; i < N; ++i) ops.push_back(sizes[i].node(ir::DType::i64));
  for (size_t i = 0; i < N; ++i) ops.push_back(strides[i].node(ir::DType::i64));
  return Tensor<T, static_cast<int>(N)>(
      g.add(ir::Op::MakeView, dtype_v<T>, ir::Shape{}, ops, ir::MakeViewAttrs{static_cast<int>(N)}), base.placement());
}

/// Many tensors of one type and rank passed as one argument; their TMA
/// descriptors are encoded on the host into device memory.
template <class T, int R>
class TensorArray {
  static_assert(R >= 1 && R <= ir::kMaxRank, "tilejit: TensorArray<T, R>: rank must be between 1 and 5");

 public:
  using dtype = tag_t<T>;
  static constexpr int rank = R;
  TensorArray() = default;
  explicit TensorArray(ir::NodeId id) : id_(id) {}
  ir::NodeId id() const { return id_; }
  /// The tensor at `index` (a runtime value; out-of-range indices are undefined behaviour). Its
  /// descriptors are prefetched (prefetch.tensormap) here, where the element is taken: take the
  /// elements a program needs before its first load to prefetch them all up front.
  Tensor<T, R> operator[](Index index) const { return at(index, Prefetch::tensormap); }
  /// The tensor at `index`, its descriptors prefetched here as `prefetch` says (Prefetch::none: not
  /// at all, Prefetch::l2: a generic L2 prefetch of their bytes). See docs/prefetch.md.
  Tensor<T, R> at(Index index, Prefetch prefetch) const {
    ir::Graph& g = detail::graph();
    return Tensor<T, R>(g.add(ir::Op::ArrayElem, dtype_v<T>, ir::Shape{}, {id_, index.node(ir::DType::i32)},
                              ir::ArrayElemAttrs{R, prefetch}));
  }

 private:
  ir::NodeId id_ = ir::kNoNode;
};

namespace detail {
template <class X> struct is_tensor : std::false_type {};
template <class T, int R> struct is_tensor<Tensor<T, R>> : std::true_type {};
template <class X> inline constexpr bool is_tensor_v = is_tensor<std::remove_cvref_t<X>>::value;
template <class X> struct is_tensor_array : std::false_type {};
template <class T, int R> struct is_tensor_array<TensorArray<T, R>> : std::true_type {};
template <class X> inline constexpr bool is_tensor_array_v = is_tensor_array<std::remove_cvref_t<X>>::value;
}  // namespace detail

// ---- pointer-style access -----------------------------------------------------
namespace detail {
template <class I, int RO>
ir::NodeId offsets_node(const Value<I, RO>& offsets) {
  static_assert(is_int_v<I>, "tilejit: load/store offsets must be an integer block (element offsets from the tensor base)");
  return offsets.id();
}
}  // namespace detail

namespace detail {
template <class T, int R, class I, int RO>
Value<tag_t<T>, RO> unmasked_load(const Tensor<T, R>& t, const Value<I, RO>& offsets, Evict evict, const std::source_location& loc) {
  ir::Graph& g = graph_at(loc);
  return Value<tag_t<T>, RO>(node, g.add(ir::Op::Load, dtype_v<T>, offsets.shape(), {t.id(), offsets_node(offsets)},
                                         ir::AccessAttrs{.masked = false, .evict = evict}));
}
template <class T, int R, class I, int RO, int RM, class O>
Value<tag_t<T>, RO> masked_load(const Tensor<T, R>& t, const Value<I, RO>& offsets, const Value<i1, RM>& mask, const O& other,
                                Evict evict, const std::source_location& loc) {
  static_assert(RM <= RO, "tilejit: load(): the mask cannot have a higher rank than the offsets");
  static_assert(!std::is_same_v<O, Evict>, "tilejit: load(t, offsets, mask, other, evict): give `other` before the eviction policy");
  ir::Graph& g = graph_at(loc);
  const ir::Shape& s = offsets.shape();
  const ir::Shape b = broadcast_shape(mask.shape(), s, "load mask");
  if (!(b == s)) user_error("load: the mask does not broadcast to the offsets' shape", mask.shape().str() + " vs " + s.str(), "", loc);
  const ir::NodeId m = broadcast_to(mask.id(), s);
  ir::NodeId o;
  if constexpr (is_value_v<O>) {
    static_assert(std::remove_cvref_t<O>::rank == 0, "tilejit: load(): `other` must be a scalar");
    o = cast_node(other.id(), dtype_v<T>);
  } else {
    o = constant(dtype_v<T>, static_cast<double>(other), static_cast<int64_t>(other));
  }
  return Value<tag_t<T>, RO>(node, g.add(ir::Op::Load, dtype_v<T>, s, {t.id(), offsets_node(offsets), m, o},
                                         ir::AccessAttrs{.masked = true, .evict = evict}));
}
}  // namespace detail

/// Loads tensor elements at linear element offsets from its base. Lanes whose
/// mask is false read `other` (default 0) and touch no memory. `evict` (Evict::first or Evict::last) is a hint
/// to the caches (Triton's eviction_policy).
template <class T, int R, class I, int RO>
Value<tag_t<T>, RO> load(const Tensor<T, R>& t, const Value<I, RO>& offsets,
                         std::source_location loc = std::source_location::current()) {
  return detail::unmasked_load(t, offsets, Evict::normal, loc);
}
template <class T, int R, class I, int RO>
Value<tag_t<T>, RO> load(const Tensor<T, R>& t, const Value<I, RO>& offsets, Evict evict,
                         std::source_location loc = std::source_location::current()) {
  return detail::unmasked_load(t, offsets, evict, loc);
}
template <class T, int R, class I, int RO, int RM, class O = int>
Value<tag_t<T>, RO> load(const Tensor<T, R>& t, const Value<I, RO>& offsets, const Value<i1, RM>& mask, O other = 0,
                         std::source_location loc = std::source_location::current()) {
  return detail::masked_load(t, offsets, mask, other, Evict::normal, loc);
}
template <class T, int R, class I, int RO, int RM, class O>
Value<tag_t<T>, RO> load(const Tensor<T, R>& t, const Value<I, RO>& offsets, const Value<i1, RM>& mask, O other, Evict evict,
                         std::source_location loc = std::source_location::current()) {
  return detail::masked_load(t, offsets, mask, other, evict, loc);
}

namespace detail {
template <ir::Op OP, class T, int R, class I, int RO, class V>
void store_like(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value, const Value<i1, RO>* mask,
                const std::source_location& loc, const char* what, Evict evict = Evict::normal) {
  ir::Graph& g = graph_at(loc);
  const ir::Shape& s = offsets.shape();
  ir::NodeId v;
  if constexpr (is_value_v<V>) {
    static_assert(std::is_same_v<typename V::dtype, tag_t<T>>,
                  "tilejit: store/atomic_add: the value's element type differs from the tensor's; convert with .to<T>()");
    static_assert(V::rank <= RO, "tilejit: store/atomic_add: the value has a higher rank than the offsets");
    const ir::Shape b = broadcast_shape(value.shape(), s, what);
    if (!(b == s)) user_error(std::string(what) + ": the value does not broadcast to the offsets' shape", value.shape().str() + " vs " + s.str(), "", loc);
    v = broadcast_to(value.id(), s);
  } else {
    static_assert(is_literal_v<V>, "tilejit: store/atomic_add: the value must be a block or a number");
    v = broadcast_to(constant(dtype_v<T>, static_cast<double>(value), static_cast<int64_t>(value)), s);
  }
  if (mask) {
    g.add(OP, dtype_v<T>, s, {t.id(), offsets_node(offsets), v, broadcast_to(mask->id(), s)},
          ir::AccessAttrs{.masked = true, .evict = evict});
  } else {
    g.add(OP, dtype_v<T>, s, {t.id(), offsets_node(offsets), v}, ir::AccessAttrs{.masked = false, .evict = evict});
  }
}
}  // namespace detail

namespace detail {
/// A literal element offset as a scalar: i32, or i64 for a 64-bit C++ integer.
template <class L>
auto literal_offset(L offset) {
  static_assert(!is_float_literal_v<L>, "tilejit: load/store: an element offset must be an integer, not a floating-point number");
  if constexpr (std::is_arithmetic_v<std::remove_cvref_t<L>> && sizeof(L) > 4) return Scalar<i64>(offset);
  else return Scalar<i32>(offset);
}
}  // namespace detail

/// load(t, 0): one element at a literal offset (a number or a Meta value), as a Scalar.
template <class T, int R, class L>
  requires detail::is_literal_v<L>
Value<tag_t<T>, 0> load(const Tensor<T, R>& t, L offset, std::source_location loc = std::source_location::current()) {
  detail::graph_at(loc);
  return load(t, detail::literal_offset(offset), loc);
}

/// Stores `value` (broadcast to the offsets' shape) at linear element offsets, where `mask` is true; `evict` is a
/// hint to the caches (Evict::first: an output not read again soon).
template <class T, int R, class I, int RO, class V>
void store(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value,
           std::source_location loc = std::source_location::current()) {
  detail::store_like<ir::Op::Store>(t, offsets, value, static_cast<const Value<i1, RO>*>(nullptr), loc, "store");
}
template <class T, int R, class I, int RO, class V>
void store(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value, Evict evict,
           std::source_location loc = std::source_location::current()) {
  detail::store_like<ir::Op::Store>(t, offsets, value, static_cast<const Value<i1, RO>*>(nullptr), loc, "store", evict);
}
template <class T, int R, class I, int RO, class V>
void store(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value, const Value<i1, RO>& mask,
           std::source_location loc = std::source_location::current()) {
  detail::store_like<ir::Op::Store>(t, offsets, value, &mask, loc, "store");
}
template <class T, int R, class I, int RO, class V>
void store(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value, const Value<i1, RO>& mask, Evict evict,
           std::source_location loc = std::source_location::current()) {
  detail::store_like<ir::Op::Store>(t, offsets, value, &mask, loc, "store", evict);
}
/// store(t, 0, v): one element at a literal offset (a number or a Meta value).
template <class T, int R, class L, class V>
  requires detail::is_literal_v<L>
void store(const Tensor<T, R>& t, L offset, const V& value, std::source_location loc = std::source_location::current()) {
  detail::graph_at(loc);
  store(t, detail::literal_offset(offset), value, loc);
}
/// Atomically adds `value` at linear element offsets (relaxed, device scope).
template <class T, int R, class I, int RO, class V>
void atomic_add(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value,
                std::source_location loc = std::source_location::current()) {
  static_assert(std::is_same_v<tag_t<T>, f32> || std::is_same_v<tag_t<T>, i32> || std::is_same_v<tag_t<T>, i64> ||
                    std::is_same_v<tag_t<T>, f64> || std::is_same_v<tag_t<T>, f16> || std::is_same_v<tag_t<T>, bf16>,
                "tilejit: atomic_add supports f16, bf16, f32, f64, i32 and i64 tensors");
  detail::store_like<ir::Op::AtomicAdd>(t, offsets, value, static_cast<const Value<i1, RO>*>(nullptr), loc, "atomic_add");
}
template <class T, int R, class I, int RO, class V>
void atomic_add(const Tensor<T, R>& t, const Value<I, RO>& offsets, const V& value, const Value<i1, RO>& mask,
                std::source_location loc = std::source_location::current()) {
  static_assert(std::is_same_v<tag_t<T>, f32> || std::is_same_v<tag_t<T>, i32> || std::is_same_v<tag_t<T>, i64> ||
                    std::is_same_v<tag_t<T>, f64> || std::is_same_v<tag_t<T>, f16> || std::is_same_v<tag_t<T>, bf16>,
                "tilejit: atomic_add supports f16, bf16, f32, f64, i32 and i64 tensors");
  detail::store_like<ir::Op::AtomicAdd>(t, offsets, value, &mask, loc, "atomic_add");
}

}  // namespace tilejit::dsl
