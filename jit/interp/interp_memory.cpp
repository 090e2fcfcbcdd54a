// Memory side of the interpreter: tensor views, pointer-style load/store/atomic_add and TMA tiles.
#include <vector>
#include <algorithm>

#include "interp_internal.h"
#include "tilejit/arg_rules.h"
#include "tilejit/checked.h"
#include "tilejit/error.h"
#include "tilejit/tma_rules.h"

namespace tilejit::interp::detail {

namespace {

std::string s(int64_t v) { return std::to_string(v); }

intptr_t addr(const void* p) { return reinterpret_cast<intptr_t>(p); }

/// Inclusive range of element offsets (relative to the base); empty when lo > hi.
struct Range {
  int64_t lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
};

/// Element offsets the sizes and strides of `t` reach, formed with overflow checks: a view whose
/// offsets do not fit in 64 bits is an OpError (a wrapped range would admit offsets before the base).
Range view_range(const TensorValue& t) {
  TensorArg a;
  a.data = t.base;
  a.dtype = t.dtype;
  a.rank = t.rank;
  a.sizes = t.sizes;
  a.strides = t.strides;
  args::Extent e;
  if (auto v = args::tensor_extent(a, e)) throw OpError{v->rule, v->value, v->limit};
  return e.empty() ? Range{} : Range{e.lo, e.hi};
}

/// Element offsets an access through `t` may touch: inside its own extent and inside the argument it derives from.
Range allowed_range(const TensorValue& t) {
  Range r = view_range(t);
  if (r.empty()) return r;
  const int64_t es = ir::size_of(t.dtype);
  const intptr_t b = addr(t.base);
  // Root bounds in elements relative to the base (floor / ceil for the rare misaligned view).
  const intptr_t lo_bytes = addr(t.root_lo) - b, hi_bytes = addr(t.root_hi) - b;
  const int64_t root_lo = lo_bytes >= 0 ? (lo_bytes + es - 1) / es : -((-lo_bytes) / es);
  const int64_t root_hi_excl = hi_bytes >= 0 ? hi_bytes / es : -((-hi_bytes + es - 1) / es);
  r.lo = std::max(r.lo, root_lo);
  r.hi = std::min(r.hi, root_hi_excl - 1);
  return r;
}

std::string range_str(const Range& r) { return r.empty() ? "none (empty tensor)" : s(r.lo) + ".." + s(r.hi); }

[[noreturn]] void out_of_bounds(const ir::Graph& g, const char* what, const TensorValue& t, const Block& offsets,
                                size_t lane, const Range& r) {
  std::string where = offsets.shape.rank ? " in element " + lane_str(offsets.shape, static_cast<int64_t>(lane)) : "";
  throw OpError{std::string(what) + ": unmasked access outside " + tensor_name(g, t),
                "element offset " + s(offsets.i[lane]) + where, "offsets " + range_str(r)};
}

std::byte* at(const TensorValue& t, int64_t off) {
  return reinterpret_cast<std::byte*>(addr(t.base) + static_cast<intptr_t>(off) * ir::size_of(t.dtype));
}

}  // namespace

std::string tensor_name(const ir::Graph& g, const TensorValue& t) {
  std::string n = t.param >= 0 && static_cast<size_t>(t.param) < g.params.size() ? g.params[static_cast<size_t>(t.param)].name
                                                                                  : std::string("a tensor");
  if (t.array_index >= 0) n += "[" + s(t.array_index) + "]";
  return t.view ? "a view of " + n : n;
}

TensorValue tensor_of_arg(const TensorArg& a, int param, int64_t array_index) {
  TensorValue t;
  t.base = static_cast<std::byte*>(a.data);
  t.dtype = a.dtype;
  t.rank = a.rank;
  t.sizes = a.sizes;
  t.strides = a.strides;
  t.param = param;
  t.array_index = array_index;
  const Range r = view_range(t);
  const int64_t es = ir::size_of(a.dtype);
  if (r.empty() || t.base == nullptr) {
    t.root_lo = t.root_hi = t.base;
  } else {
    t.root_lo = reinterpret_cast<const std::byte*>(addr(t.base) + static_cast<intptr_t>(r.lo * es));
    t.root_hi = reinterpret_cast<const std::byte*>(addr(t.base) + static_cast<intptr_t>((r.hi + 1) * es));
  }
  return t;
}

TensorValue merge_view(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> groups) {
  TensorValue m = t;
  m.rank = static_cast<int>(groups.size());
  size_t d = 0;
  for (size_t k = 0; k < groups.size(); ++k) {
    int64_t size = 1;
    const size_t first = d;
    for (int64_t j = 0; j < groups[k]; ++j, ++d) {
      size *= t.sizes[d];
      if (d > first) {
        const int64_t want = t.strides[d] * t.sizes[d];
        if (t.strides[d - 1] != want)
          throw OpError{"merge: dimensions " + s(static_cast<int64_t>(d - 1)) + " and " + s(static_cast<int64_t>(d)) + " of " +
                            tensor_name(g, t) + " are not contiguous",
                        "stride[" + s(static_cast<int64_t>(d - 1)) + "] = " + s(t.strides[d - 1]) + ", stride[" +
                            s(static_cast<int64_t>(d)) + "] * size[" + s(static_cast<int64_t>(d)) + "] = " + s(t.strides[d]) +
                            " * " + s(t.sizes[d]) + " = " + s(want),
                        "stride[" + s(static_cast<int64_t>(d - 1)) + "] == stride[" + s(static_cast<int64_t>(d)) + "] * size[" +
                            s(static_cast<int64_t>(d)) + "]"};
      }
    }
    m.sizes[k] = size;
    m.strides[k] = t.strides[d - 1];
  }
  for (size_t k = groups.size(); k < m.sizes.size(); ++k) m.sizes[k] = m.strides[k] = 0;
  return m;
}

TensorValue make_view(const TensorValue& t, int64_t offset, std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  TensorValue v = t;
  const std::optional<int64_t> bytes = checked::mul(offset, ir::size_of(t.dtype));
  if (!bytes)
    throw OpError{"make_view: the byte offset of the view overflows 64 bits",
                  "offset " + s(offset) + " x " + s(ir::size_of(t.dtype)) + " bytes", "|offset x element size| < 2^63"};
  // Unsigned arithmetic: the address is compared with the argument's bounds before any access.
  v.base = reinterpret_cast<std::byte*>(static_cast<uintptr_t>(addr(t.base)) + static_cast<uintptr_t>(*bytes));
  v.rank = static_cast<int>(sizes.size());
  v.sizes.fill(0);
  v.strides.fill(0);
  std::copy(sizes.begin(), sizes.end(), v.sizes.begin());
  std::copy(strides.begin(), strides.end(), v.strides.begin());
  v.view = true;
  return v;
}

void eval_load(const ir::Graph& g, const TensorValue& t, const Block& offsets, const Block* mask, const Block* other,
               Block& out) {
  const Range r = allowed_range(t);
  const size_t n = offsets.i.size();
  dispatch(t.dtype, [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    for (size_t k = 0; k < n; ++k) {
      if (mask && !mask->i[k]) {
        if constexpr (ir::is_float(T)) {
          out.f[k] = other ? other->f[0] : 0.0;
        } else {
          out.i[k] = other ? other->i[0] : 0;
        }
        continue;
      }
      const int64_t off = offsets.i[k];
      if (off < r.lo || off > r.hi) out_of_bounds(g, "load", t, offsets, k, r);
      if constexpr (ir::is_float(T)) {
        out.f[k] = read_float<T>(at(t, off));
      } else {
        out.i[k] = read_int<T>(at(t, off));
      }
    }
  });
}

void eval_store(const ir::Graph& g, const TensorValue& t, const Block& offsets, const Block& value, const Block* mask,
                bool atomic_add) {
  const Range r = allowed_range(t);
  const size_t n = offsets.i.size();
  const char* what = atomic_add ? "atomic_add" : "store";
  // Every lane is checked before any is written: an access that fails changes no memory.
  for (size_t k = 0; k < n; ++k) {
    if (mask && !mask->i[k]) continue;
    const int64_t off = offsets.i[k];
    if (off < r.lo || off > r.hi) out_of_bounds(g, what, t, offsets, k, r);
  }
  dispatch(t.dtype, [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    for (size_t k = 0; k < n; ++k) {
      if (mask && !mask->i[k]) continue;
      std::byte* p = at(t, offsets.i[k]);
      if constexpr (ir::is_float(T)) {
        const double v = atomic_add ? round_arith(T, read_float<T>(p) + value.f[k]) : value.f[k];
        write_float<T>(p, v);
      } else {
        const int64_t v = atomic_add ? wrap(T, wrapping_add(read_int<T>(p), value.i[k])) : value.i[k];
        write_int<T>(p, v);
      }
    }
  });
}

void check_tma_global(const ir::Graph& g, const char* what, const TensorValue& t, int rank) {
  const std::string w = what;
  if (t.rank != rank)
    throw OpError{w + ": the tensor's rank differs from the access", s(t.rank) + " dimensions", s(rank)};
  const std::span<const int64_t> sizes(t.sizes.data(), static_cast<size_t>(rank));
  const std::span<const int64_t> strides(t.strides.data(), static_cast<size_t>(rank));
  if (auto v = tma::check_global(t.dtype, static_cast<uint64_t>(addr(t.base)), sizes, strides))
    throw OpError{w + ": " + v->rule + " (" + tensor_name(g, t) + ")", v->value, v->limit};
  // Sizes and strides are positive here and view_range checked that the byte extent fits.
  const Range r = view_range(t);
  const int64_t es = ir::size_of(t.dtype);
  const intptr_t lo = addr(t.base), hi = static_cast<intptr_t>(static_cast<uintptr_t>(lo) + static_cast<uintptr_t>((r.hi + 1) * es));
  if (lo < addr(t.root_lo) || hi > addr(t.root_hi)) {
    const intptr_t root = addr(t.root_lo);
    throw OpError{w + ": " + tensor_name(g, t) + " reaches outside the tensor argument it is made from",
                  "bytes " + s(lo - root) + ".." + s(hi - root) + " of the argument",
                  "bytes 0.." + s(addr(t.root_hi) - root)};
  }
}

namespace {

/// Per-dimension offsets and in-bounds flags of one TMA tile, padded to 5 dimensions.
struct TilePlan {
  int64_t n[5];
  std::vector<int64_t> off[5];  // per dimension: up to the box (a box over 256 is the user's, before splitting)
  std::vector<uint8_t> ok[5];
};

void plan_tile(const TensorValue& t, std::span<const int64_t> coords, const ir::TmaAttrs& a, TilePlan& p) {
  const int pad = 5 - a.rank;
  for (int d = 0; d < pad; ++d) {
    p.n[d] = 1;
    p.off[d].assign(1, 0);
    p.ok[d].assign(1, 1);
  }
  for (int i = 0; i < a.rank; ++i) {
    const int slot = pad + i;
    const int64_t e = a.estride[static_cast<size_t>(i)];
    const int64_t n = (a.box[static_cast<size_t>(i)] + e - 1) / e;
    const int64_t size = t.sizes[static_cast<size_t>(i)], stride = t.strides[static_cast<size_t>(i)];
    p.n[slot] = n;
    p.off[slot].resize(static_cast<size_t>(n));
    p.ok[slot].resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const int64_t c = coords[static_cast<size_t>(i)] + j * e;
      const bool in = c >= 0 && c < size;
      p.ok[slot][static_cast<size_t>(j)] = in;
      p.off[slot][static_cast<size_t>(j)] = in ? c * stride : 0;
    }
  }
}

/// Calls f(lane, in_bounds, element offset) for every tile element in row-major order.
template <class F>
void walk_tile(const TilePlan& p, F&& f) {
  int64_t lane = 0;
  for (int64_t a = 0; a < p.n[0]; ++a)
    for (int64_t b = 0; b < p.n[1]; ++b)
      for (int64_t c = 0; c < p.n[2]; ++c)
        for (int64_t d = 0; d < p.n[3]; ++d) {
          const auto ia = static_cast<size_t>(a), ib = static_cast<size_t>(b), ic = static_cast<size_t>(c), id = static_cast<size_t>(d);
          const bool v = p.ok[0][ia] && p.ok[1][ib] && p.ok[2][ic] && p.ok[3][id];
          const int64_t o = p.off[0][ia] + p.off[1][ib] + p.off[2][ic] + p.off[3][id];
          const int64_t* off4 = p.off[4].data();
          const uint8_t* ok4 = p.ok[4].data();
          for (int64_t e = 0; e < p.n[4]; ++e) f(lane++, v && ok4[e], o + off4[e]);
        }
}

}  // namespace

void eval_tma_load(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> coords, const ir::TmaAttrs& a,
                   Block& out) {
  (void)g;
  TilePlan p;
  plan_tile(t, coords, a, p);
  dispatch(t.dtype, [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    constexpr int64_t es = ir::size_of(T);
    const std::byte* base = t.base;
    if constexpr (ir::is_float(T)) {
      const double fill = a.fill ? canonical_nan(T) : 0.0;
      double* o = out.f.data();
      walk_tile(p, [&](int64_t lane, bool in, int64_t off) { o[lane] = in ? read_float<T>(base + off * es) : fill; });
    } else {
      int64_t* o = out.i.data();
      walk_tile(p, [&](int64_t lane, bool in, int64_t off) { o[lane] = in ? read_int<T>(base + off * es) : 0; });
    }
  });
}

void eval_tma_store(const ir::Graph& g, const TensorValue& t, std::span<const int64_t> coords, const ir::TmaAttrs& a,
                    const Block& value) {
  (void)g;
  TilePlan p;
  plan_tile(t, coords, a, p);
  const int reduce = static_cast<int>(a.reduce);
  dispatch(t.dtype, [&](auto tc) {
    constexpr DType T = decltype(tc)::value;
    constexpr int64_t es = ir::size_of(T);
    std::byte* base = t.base;
    if constexpr (ir::is_float(T)) {
      const double* v = value.f.data();
      walk_tile(p, [&](int64_t lane, bool in, int64_t off) {
        if (!in) return;
        std::byte* q = base + off * es;
        double x = v[lane];
        if (reduce == 1) x = round_arith(T, read_float<T>(q) + x);
        else if (reduce == 2) x = fmin_num(read_float<T>(q), x);  // the TMA unit ignores a NaN operand
        else if (reduce == 3) x = fmax_num(read_float<T>(q), x);
        write_float<T>(q, x);
      });
    } else {
      const int64_t* v = value.i.data();
      walk_tile(p, [&](int64_t lane, bool in, int64_t off) {
        if (!in) return;
        std::byte* q = base + off * es;
        int64_t x = v[lane];
        if (reduce == 1) x = wrap(T, wrapping_add(read_int<T>(q), x));
        else if (reduce == 2) x = std::min(read_int<T>(q), x);
        else if (reduce == 3) x = std::max(read_int<T>(q), x);
        write_int<T>(q, x);
      });
    }
  });
}

}  // namespace tilejit::interp::detail
