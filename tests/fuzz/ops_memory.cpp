// Runtime-typed doors into the DSL: tensors, views, TMA and pointer access, loops and branches.
#include <tuple>
#include <utility>

#include "dispatch.h"
#include "ops.h"

namespace tilejit::fuzz {

using namespace tilejit::dsl;

namespace {
/// f(Tensor<T, R>) for a tensor whose type and rank are known only at run time.
template <class F>
decltype(auto) on_tensor(const TensorRef& t, F&& f) {
  return with_dtype(t.dtype, [&](auto e) -> decltype(auto) {
    return with_rank<1>(t.rank, [&](auto r) -> decltype(auto) {
      return f(Tensor<decltype(e), decltype(r)::value>(t.id, static_cast<Placement>(t.placement)));
    });
  });
}

/// An integer scalar as a TMA coordinate or view field.
Index index_of(const Val& v) {
  check_internal(v.rank == 0, "fuzz: an index must be a scalar");
  switch (v.dtype) {
    case ir::DType::i8: return Index(Scalar<i8>(dsl::detail::node, v.id));
    case ir::DType::u8: return Index(Scalar<u8>(dsl::detail::node, v.id));
    case ir::DType::i32: return Index(Scalar<i32>(dsl::detail::node, v.id));
    case ir::DType::i64: return Index(Scalar<i64>(dsl::detail::node, v.id));
    default: break;
  }
  throw InternalError("fuzz: an index must be an integer");
}

template <class T, int R>
TensorRef ref_of(const Tensor<T, R>& t) {
  return TensorRef{t.id(), dtype_v<T>, R, static_cast<int>(t.placement())};
}
}  // namespace

Val tensor_size(const TensorRef& t, int d) {
  return on_tensor(t, [&](auto x) { return as_val(x.size(d).id()); });
}

Val tensor_stride(const TensorRef& t, int d) {
  return on_tensor(t, [&](auto x) { return as_val(x.stride(d).id()); });
}

TensorRef with_placement(const TensorRef& t, int placement) {
  return on_tensor(t, [&](auto x) { return ref_of(x.with_placement(static_cast<Placement>(placement))); });
}

TensorRef rows(const TensorRef& t, const Val& start, const Val& end) {
  return on_tensor(t, [&](auto x) { return ref_of(x.rows(index_of(start), index_of(end))); });
}

TensorRef make_view(const TensorRef& t, const Val& offset, const std::vector<Val>& sizes, const std::vector<Val>& strides) {
  check_internal(sizes.size() == static_cast<size_t>(t.rank) && strides.size() == sizes.size(), "fuzz: make_view fields");
  return on_tensor(t, [&](auto x) {
    constexpr int R = decltype(x)::rank;
    return [&]<size_t... I>(std::index_sequence<I...>) {
      const Index sz[R] = {index_of(sizes[I])...};
      const Index st[R] = {index_of(strides[I])...};
      return ref_of(dsl::make_view(x, index_of(offset), sz, st));
    }(std::make_index_sequence<R>{});
  });
}

Val descriptor_load(const TensorRef& t, const std::vector<Val>& coords, const std::vector<int64_t>& box,
                    const std::vector<int64_t>& estride, int fill) {
  return on_tensor(t, [&](auto x) -> Val {
    constexpr int R = decltype(x)::rank;
    return [&]<size_t... I>(std::index_sequence<I...>) {
      if (estride.empty()) return as_val(dsl::descriptor_load(x, {index_of(coords[I])...}, {box[I]...}, {}, Fill(fill)).id());
      return as_val(dsl::descriptor_load(x, {index_of(coords[I])...}, {box[I]...}, {estride[I]...}, Fill(fill)).id());
    }(std::make_index_sequence<R>{});
  });
}

void descriptor_store(const TensorRef& t, const std::vector<Val>& coords, const Val& v, int reduce) {
  check_internal(v.dtype == t.dtype && v.rank == t.rank, "fuzz: descriptor_store value");
  on_tensor(t, [&](auto x) {
    using T = typename decltype(x)::dtype;
    constexpr int R = decltype(x)::rank;
    [&]<size_t... I>(std::index_sequence<I...>) {
      dsl::descriptor_store(x, {index_of(coords[I])...}, Value<T, R>(dsl::detail::node, v.id), StoreReduce(reduce));
    }(std::make_index_sequence<R>{});
  });
}

void prefetch_descriptor(const TensorRef& t, const std::vector<int64_t>& box, const std::vector<int64_t>& estride, int fill) {
  on_tensor(t, [&](auto x) {
    constexpr int R = decltype(x)::rank;
    [&]<size_t... I>(std::index_sequence<I...>) {
      if (estride.empty()) dsl::prefetch_descriptor(x, {box[I]...}, {}, Fill(fill));
      else dsl::prefetch_descriptor(x, {box[I]...}, {estride[I]...}, Fill(fill));
    }(std::make_index_sequence<R>{});
  });
}

namespace {
/// f(Value<I, R>) for an integer block of offsets.
template <class F>
Val on_offsets(const Val& v, F&& f) {
  return with_rank<1>(v.rank, [&](auto r) -> Val {
    constexpr int R = decltype(r)::value;
    if (v.dtype == ir::DType::i32) return f(Value<i32, R>(dsl::detail::node, v.id));
    if (v.dtype == ir::DType::i64) return f(Value<i64, R>(dsl::detail::node, v.id));
    throw InternalError("fuzz: offsets must be i32 or i64");
  });
}
}  // namespace

Val load(const TensorRef& t, const Val& offsets, const Val& mask, double other) {
  return on_tensor(t, [&](auto x) {
    using T = typename decltype(x)::dtype;
    return on_offsets(offsets, [&](auto o) {
      constexpr int R = decltype(o)::rank;
      if (mask.id == ir::kNoNode) return as_val(dsl::load(x, o).id());
      const Value<i1, R> m(dsl::detail::node, mask.id);
      if constexpr (is_float_v<T>) return as_val(dsl::load(x, o, m, other).id());
      else return as_val(dsl::load(x, o, m, static_cast<int64_t>(other)).id());
    });
  });
}

void store(const TensorRef& t, const Val& offsets, const Val& v, const Val& mask) {
  check_internal(v.dtype == t.dtype && v.rank == offsets.rank, "fuzz: store value");
  on_tensor(t, [&](auto x) {
    using T = typename decltype(x)::dtype;
    on_offsets(offsets, [&](auto o) {
      constexpr int R = decltype(o)::rank;
      const Value<T, R> value(dsl::detail::node, v.id);
      if (mask.id == ir::kNoNode) dsl::store(x, o, value);
      else dsl::store(x, o, value, Value<i1, R>(dsl::detail::node, mask.id));
      return Val{};
    });
  });
}

Val for_range(const Val& lo, const Val& hi, int64_t step, const Val& init, const std::function<Val(const Val&, const Val&)>& body) {
  return with_dtype(init.dtype, [&](auto t) {
    using T = decltype(t);
    return with_rank<0>(init.rank, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const Value<T, R> start(dsl::detail::node, init.id);
      const auto result = dsl::for_range(index_of(lo), index_of(hi), step, start, [&](Scalar<i32> i, Value<T, R> acc) {
        const Val next = body(as_val(i.id()), as_val(acc.id()));
        check_internal(next.dtype == init.dtype && next.rank == init.rank, "fuzz: loop body changes the carried type");
        return Value<T, R>(dsl::detail::node, next.id);
      });
      return as_val(result.id());
    });
  });
}

namespace {
/// A carried value of any element type and shape, for a loop whose carried types are known only at run time
/// (what dsl::detail::for_impl needs of a tuple element: construction from a node and its id).
class AnyValue {
 public:
  AnyValue(dsl::detail::NodeTag, ir::NodeId id) : id_(id) {}
  ir::NodeId id() const { return id_; }

 private:
  ir::NodeId id_;
};

template <size_t>
using AnyAt = AnyValue;

template <size_t... K>
std::vector<Val> for_tuple(const Val& lo, const Val& hi, const Val& step, const std::vector<Val>& init,
                           const std::function<std::vector<Val>(const Val&, const std::vector<Val>&)>& body,
                           std::index_sequence<K...>) {
  using Tuple = std::tuple<AnyAt<K>...>;
  const Tuple start{AnyValue(dsl::detail::node, init[K].id)...};
  const auto out = dsl::detail::for_impl(
      index_of(lo), index_of(hi), index_of(step), start,
      [&](Scalar<i32> i, AnyAt<K>... carried) -> Tuple {
        const std::vector<Val> next = body(as_val(i.id()), std::vector<Val>{as_val(carried.id())...});
        check_internal(next.size() == init.size(), "fuzz: loop body changes the number of carried values");
        for (size_t k = 0; k < next.size(); ++k)
          check_internal(next[k].dtype == init[k].dtype && next[k].rank == init[k].rank, "fuzz: loop body changes a carried type");
        return Tuple{AnyValue(dsl::detail::node, next[K].id)...};
      },
      std::source_location::current());
  return {as_val(std::get<K>(out).id())...};
}
}  // namespace

std::vector<Val> for_range_n(const Val& lo, const Val& hi, const Val& step, const std::vector<Val>& init,
                             const std::function<std::vector<Val>(const Val&, const std::vector<Val>&)>& body) {
  switch (init.size()) {
    case 0:
      dsl::for_range(index_of(lo), index_of(hi), index_of(step), [&](Scalar<i32> i) {
        check_internal(body(as_val(i.id()), {}).empty(), "fuzz: a loop without carried values yields one");
      });
      return {};
    case 1: return for_tuple(lo, hi, step, init, body, std::make_index_sequence<1>{});
    case 2: return for_tuple(lo, hi, step, init, body, std::make_index_sequence<2>{});
    case 3: return for_tuple(lo, hi, step, init, body, std::make_index_sequence<3>{});
    default: break;
  }
  throw InternalError("fuzz: loops carry at most 3 values");
}

Val if_else(const Val& cond, ir::DType dtype, int rank, const std::function<Val()>& then_fn, const std::function<Val()>& else_fn) {
  check_internal(cond.dtype == ir::DType::i1 && cond.rank == 0, "fuzz: if_else condition");
  const Scalar<i1> c(dsl::detail::node, cond.id);
  return with_dtype(dtype, [&](auto t) {
    using T = decltype(t);
    return with_rank<0>(rank, [&](auto r) {
      constexpr int R = decltype(r)::value;
      const auto branch = [&](const std::function<Val()>& fn) {
        const Val v = fn();
        check_internal(v.dtype == dtype && v.rank == rank, "fuzz: if_else branch type");
        return Value<T, R>(dsl::detail::node, v.id);
      };
      return as_val(dsl::if_else(c, [&] { return branch(then_fn); }, [&] { return branch(else_fn); }).id());
    });
  });
}

void if_then(const Val& cond, const std::function<void()>& then_fn) {
  check_internal(cond.dtype == ir::DType::i1 && cond.rank == 0, "fuzz: if_then condition");
  dsl::if_then(Scalar<i1>(dsl::detail::node, cond.id), [&] { then_fn(); });
}

}  // namespace tilejit::fuzz
