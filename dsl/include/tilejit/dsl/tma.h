// TMA in the DSL: descriptor_load / descriptor_store / prefetch_descriptor and tile views.
#pragma once

#include <initializer_list>
#include <vector>

#include "tilejit/dsl/tensor.h"
#include "tilejit/tma_rules.h"

namespace tilejit::dsl {

namespace detail {
inline std::vector<int64_t> to_vec(std::initializer_list<int64_t> l) { return std::vector<int64_t>(l); }

template <class T, int R>
void check_tma_access(const char* what, std::span<const int64_t> box, std::span<const int64_t> estride, Fill fill,
                      size_t ncoords, const std::source_location& loc) {
  const std::string w = what;
  if (ncoords != static_cast<size_t>(R))
    user_error(w + ": one coordinate per tensor dimension", std::to_string(ncoords) + " coordinates", std::to_string(R), loc);
  if (box.size() != static_cast<size_t>(R))
    user_error(w + ": one box size per tensor dimension", std::to_string(box.size()) + " box sizes", std::to_string(R), loc);
  if (auto v = tma::check_box(what, dtype_v<T>, box, estride, static_cast<int>(fill)))
    user_error(v->rule, v->value, v->limit, loc);
}

// The i32 coordinate nodes of `coords`; a known value that i32 cannot hold is a UserError at `loc`
// rather than a wrapped coordinate (tma::kCoordinateRule; runtime values: see there).
template <class Coords>
std::vector<ir::NodeId> coord_nodes(const Coords& coords, const char* what, const std::source_location& loc) {
  std::vector<ir::NodeId> v;
  for (const Index& c : coords) {
    if (const std::optional<int64_t> known = c.known())
      if (auto bad = tma::check_coordinate(what, v.size(), coords.size(), *known)) user_error(bad->rule, bad->value, bad->limit, loc);
    v.push_back(c.node(ir::DType::i32));
  }
  return v;
}

template <int R>
ir::TmaAttrs make_attrs(std::span<const int64_t> box, std::span<const int64_t> estride, Fill fill, StoreReduce reduce,
                        Placement placement) {
  ir::TmaAttrs a;
  a.rank = R;
  for (int i = 0; i < R; ++i) {
    a.box[i] = static_cast<int32_t>(box[i]);
    a.estride[i] = estride.empty() ? 1 : static_cast<int32_t>(estride[i]);
  }
  a.fill = static_cast<int>(fill);
  a.reduce = reduce;
  a.placement = static_cast<int>(placement);
  return a;
}

template <int R>
inline constexpr bool tma_rank_ok = R >= 1 && R <= 5;
}  // namespace detail

namespace detail {
template <class T, int R>
Value<tag_t<T>, R> emit_load(const Tensor<T, R>& t, const std::vector<ir::NodeId>& coords, const std::vector<int64_t>& box,
                             const std::vector<int64_t>& estride, Fill fill, const std::source_location& loc) {
  check_tma_access<T, R>("descriptor_load", box, estride, fill, coords.size(), loc);
  ir::Graph& g = graph_at(loc);
  const ir::TmaAttrs a = make_attrs<R>(box, estride, fill, StoreReduce::none, t.placement());
  std::vector<ir::NodeId> ops{t.id()};
  ops.insert(ops.end(), coords.begin(), coords.end());
  ir::Shape s;
  s.rank = R;
  for (int i = 0; i < R; ++i) s.dims[i] = (a.box[i] + a.estride[i] - 1) / a.estride[i];
  return Value<tag_t<T>, R>(detail::node, g.add(ir::Op::DescLoad, dtype_v<T>, s, ops, a));
}

template <class T, int R, class V>
void emit_store(const Tensor<T, R>& t, const std::vector<ir::NodeId>& coords, const Value<V, R>& value, StoreReduce reduce,
                const std::source_location& loc) {
  const ir::Shape& vs = value.shape();
  const std::vector<int64_t> box(vs.dims.begin(), vs.dims.begin() + R);
  check_tma_access<T, R>("descriptor_store", box, {}, Fill::zero, coords.size(), loc);
  if (reduce != StoreReduce::none && (is_fp8_v<T> || is_bool_v<T> || std::is_same_v<tag_t<T>, i8> || std::is_same_v<tag_t<T>, u8>))
    user_error("descriptor_store: reductions need a 16-bit or wider element type", std::string(ir::name_of(dtype_v<T>)),
               "f16, bf16, f32, f64, i32, i64", loc);
  if (reduce == StoreReduce::add && std::is_same_v<tag_t<T>, f64>)
    user_error("descriptor_store: the TMA add reduction does not support f64", "f64", "f16, bf16, f32, i32", loc);
  if (reduce == StoreReduce::add && std::is_same_v<tag_t<T>, i64>)
    user_error("descriptor_store: the TMA add reduction does not support i64 (the TMA unit faults with 'illegal "
               "instruction'; min and max work)",
               "i64", "f16, bf16, f32, i32", loc);
  ir::Graph& g = graph_at(loc);
  const ir::TmaAttrs a = make_attrs<R>(box, {}, Fill::zero, reduce, t.placement());
  std::vector<ir::NodeId> ops{t.id()};
  ops.insert(ops.end(), coords.begin(), coords.end());
  ops.push_back(value.id());
  g.add(ir::Op::DescStore, dtype_v<T>, ir::Shape{}, ops, a);
}
}  // namespace detail

/// Loads the tile of `t` that starts at `coords` (outermost first) with box
/// `box`: element j of dimension i reads coordinate coords[i] + j * estride[i];
/// the tile has ceil(box[i] / estride[i]) elements per dimension. Elements
/// outside the tensor read zero (or NaN with Fill::nan). Coordinates may be
/// negative. `estride` may be empty (all 1).
template <class T, int R>
Value<tag_t<T>, R> descriptor_load(const Tensor<T, R>& t, std::initializer_list<Index> coords,
                                   std::initializer_list<int64_t> box, std::initializer_list<int64_t> estride = {},
                                   Fill fill = Fill::zero, std::source_location loc = std::source_location::current()) {
  static_assert(detail::tma_rank_ok<R>,
                "tilejit: descriptor_load: TMA addresses at most 5 dimensions; view the tensor with "
                "t.merge({...}) so that contiguous dimensions become one");
  detail::graph_at(loc);
  return detail::emit_load(t, detail::coord_nodes(coords, "descriptor_load", loc), detail::to_vec(box), detail::to_vec(estride),
                           fill, loc);
}

/// Stores `value` as the box of `t` that starts at `coords`; elements outside
/// the tensor are not written. With a StoreReduce other than none the tile is
/// combined with memory (add / min / max) instead of overwriting it.
template <class T, int R, class V>
void descriptor_store(const Tensor<T, R>& t, std::initializer_list<Index> coords, const Value<V, R>& value,
                      StoreReduce reduce = StoreReduce::none, std::source_location loc = std::source_location::current()) {
  static_assert(detail::tma_rank_ok<R>,
                "tilejit: descriptor_store: TMA addresses at most 5 dimensions; view the tensor with "
                "t.merge({...}) so that contiguous dimensions become one");
  static_assert(std::is_same_v<tag_t<T>, tag_t<V>>,
                "tilejit: descriptor_store: the value's element type differs from the tensor's; convert with .to<T>()");
  detail::graph_at(loc);
  detail::emit_store(t, detail::coord_nodes(coords, "descriptor_store", loc), value, reduce, loc);
}

/// Brings the descriptor that descriptor_load(t, ..., box, estride, fill) uses
/// into the cache ahead of time (prefetch.tensormap).
template <class T, int R>
void prefetch_descriptor(const Tensor<T, R>& t, std::initializer_list<int64_t> box, std::initializer_list<int64_t> estride = {},
                         Fill fill = Fill::zero, std::source_location loc = std::source_location::current()) {
  static_assert(detail::tma_rank_ok<R>, "tilejit: prefetch_descriptor: TMA addresses at most 5 dimensions");
  const auto b = detail::to_vec(box), e = detail::to_vec(estride);
  detail::check_tma_access<T, R>("prefetch_descriptor", b, e, fill, static_cast<size_t>(R), loc);
  ir::Graph& g = detail::graph_at(loc);
  const ir::TmaAttrs a = detail::make_attrs<R>(b, e, fill, StoreReduce::none, t.placement());
  g.add(ir::Op::DescPrefetch, dtype_v<T>, ir::Shape{}, {t.id()}, a);
}

/// One tile of a TileView: the tensor, the TMA coordinate of its corner, its box.
template <class T, int R>
struct TileRef {
  Tensor<T, R> tensor;
  std::vector<Index> coords;
  std::vector<int64_t> box;
};

/// A tensor seen as a grid of boxes (CuTe's TMA tensors): indexing
/// the view with tile indices yields TMA coordinates (index * box).
template <class T, int R>
class TileView {
 public:
  TileView(const Tensor<T, R>& t, std::vector<int64_t> box) : t_(t), box_(std::move(box)) {}
  /// The tile at tile indices (i0, i1, ...), outermost first.
  template <class... I>
  TileRef<T, R> operator()(const I&... idx) const {
    static_assert(sizeof...(I) == R, "tilejit: TileView(...): one tile index per tensor dimension");
    std::vector<Index> coords;
    int d = 0;
    (coords.push_back(scaled(Index(idx), box_[d++])), ...);
    return TileRef<T, R>{t_, std::move(coords), box_};
  }
  const std::vector<int64_t>& box() const { return box_; }

 private:
  static Index scaled(const Index& i, int64_t b) {
    ir::Graph& g = detail::graph();
    // A known tile index whose coordinate (index x box) an i32 cannot hold stays a known value,
    // unwrapped, which descriptor_load / descriptor_store then refuse at their line (coord_nodes).
    if (const std::optional<int64_t> known = i.known()) {
      const std::optional<int64_t> coord = checked::mul(*known, b);
      if (!coord)  // an operator has no source_location of its own: the line of the last DSL call
        detail::user_error_here(std::string("tile view: ") + tma::kCoordinateRule,
                                "tile index " + std::to_string(*known) + " x box " + std::to_string(b) + ", over 2^63",
                                tma::kCoordinateRange);
      if (*coord < tma::kMinCoordinate || *coord > tma::kMaxCoordinate) return Index(*coord);
    }
    const ir::NodeId n = i.node(ir::DType::i32);
    return Index(Scalar<i32>(detail::node, g.add(ir::Op::Mul, ir::DType::i32, ir::Shape{}, {n, detail::constant(ir::DType::i32, 0, b)})));
  }
  Tensor<T, R> t_;
  std::vector<int64_t> box_;
};

/// Views `t` as tiles of `box` (outermost first).
template <class T, int R>
TileView<T, R> tile_view(const Tensor<T, R>& t, std::initializer_list<int64_t> box,
                         std::source_location loc = std::source_location::current()) {
  if (box.size() != static_cast<size_t>(R))
    detail::user_error("tile_view: one box size per tensor dimension", std::to_string(box.size()) + " box sizes", std::to_string(R), loc);
  return TileView<T, R>(t, std::vector<int64_t>(box));
}

/// Loads one tile of a TileView.
template <class T, int R>
Value<tag_t<T>, R> descriptor_load(const TileRef<T, R>& ref, Fill fill = Fill::zero,
                                   std::source_location loc = std::source_location::current()) {
  static_assert(detail::tma_rank_ok<R>, "tilejit: descriptor_load: TMA addresses at most 5 dimensions");
  detail::graph_at(loc);
  return detail::emit_load(ref.tensor, detail::coord_nodes(ref.coords, "descriptor_load", loc), ref.box, {}, fill, loc);
}

/// Stores one tile of a TileView (the value's shape must equal the view's box).
template <class T, int R, class V>
void descriptor_store(const TileRef<T, R>& ref, const Value<V, R>& value, StoreReduce reduce = StoreReduce::none,
                      std::source_location loc = std::source_location::current()) {
  static_assert(std::is_same_v<tag_t<T>, tag_t<V>>,
                "tilejit: descriptor_store: the value's element type differs from the tensor's; convert with .to<T>()");
  detail::graph_at(loc);
  const ir::Shape& vs = value.shape();
  for (int i = 0; i < R; ++i)
    if (vs.dims[i] != ref.box[static_cast<size_t>(i)])
      detail::user_error("descriptor_store: the value's shape must equal the tile view's box", vs.str(), "the view's box", loc);
  detail::emit_store(ref.tensor, detail::coord_nodes(ref.coords, "descriptor_store", loc), value, reduce, loc);
}

}  // namespace tilejit::dsl
