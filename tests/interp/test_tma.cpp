// Interpreter tests of TMA: load/store sweeps against a reference tmaload/tmastore written out here, views, arrays, jagged rows, errors.
#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "interp_test_util.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;

namespace {

// ---- the reference TMA tile semantics (tmaload / tmastore), written out for any rank ------------------------------------------------------------

/// The global side of a descriptor and one access: outermost dimension first, all in elements.
struct TmaCase {
  std::vector<int64_t> sizes, strides, box, est;
  int fill = 0;
  int64_t esize = 0;  // bytes per element
  std::vector<std::vector<int64_t>> coords;
  int rank() const { return static_cast<int>(sizes.size()); }
  std::vector<int64_t> tile() const {
    std::vector<int64_t> t;
    for (size_t i = 0; i < box.size(); ++i) t.push_back((box[i] + est[i] - 1) / est[i]);
    return t;
  }
  int64_t tile_numel() const {
    int64_t n = 1;
    for (int64_t v : tile()) n *= v;
    return n;
  }
  int64_t extent() const {
    int64_t e = 1;
    for (size_t i = 0; i < sizes.size(); ++i) e += (sizes[i] - 1) * strides[i];
    return e;
  }
};

/// The rules the hardware adds to the reference (measured on H100/H200, docs/tma_hardware.md), as
/// preconditions of tmaload and tmastore, in the order they are checked: the innermost coordinate times
/// the element size is a multiple of 16 bytes (else the instruction faults); a store has no negative
/// coordinate (else it faults; loads may start before the tensor); a store's tensor has rows of a
/// multiple of 16 bytes (a store writes whole 16-byte units). Returns the rule `x` breaks
/// ("innermost coordinate", "negative store coordinate", "innermost size"), or "".
std::string seed000_fault(const TmaCase& c, const std::vector<int64_t>& x, bool store) {
  REQUIRE(c.esize > 0);
  REQUIRE(x.size() == c.sizes.size());
  if (x.back() * c.esize % 16 != 0) return "innermost coordinate";
  if (store && std::any_of(x.begin(), x.end(), [](int64_t v) { return v < 0; })) return "negative store coordinate";
  if (store && c.sizes.back() * c.esize % 16 != 0) return "innermost size";
  return "";
}

/// tmaload(x; ga, gs, bs, gr, er): the tile's bit patterns, and which elements were filled.
void seed000_load(const Buffer& mem, int64_t base, const TmaCase& c, const std::vector<int64_t>& x,
                  std::vector<uint64_t>& bits, std::vector<uint8_t>& filled) {
  REQUIRE(seed000_fault(c, x, false) == "");
  bits.clear();
  filled.clear();
  for_each_index(c.tile(), [&](const std::vector<int64_t>& i) {
    bool in = true;
    int64_t gmem_idx = 0;
    for (int d = 0; d < c.rank(); ++d) {
      const int64_t g = x[static_cast<size_t>(d)] + i[static_cast<size_t>(d)] * c.est[static_cast<size_t>(d)];
      if (g < 0 || g >= c.sizes[static_cast<size_t>(d)]) in = false;
      gmem_idx += g * c.strides[static_cast<size_t>(d)];
    }
    bits.push_back(in ? mem.bits(base + gmem_idx) : 0);
    filled.push_back(in ? 0 : 1);
  });
}

/// tmastore(x; ga, gs, bs, gr): writes the in-bounds elements of `tile` (row-major bit patterns) into `mem`.
/// `combine(old, new)` gives the stored bits (plain store: new). Returns the number of elements skipped.
template <class Combine>
int64_t seed000_store(std::vector<uint64_t>& mem, int64_t base, const TmaCase& c, const std::vector<int64_t>& x,
                      const std::vector<uint64_t>& tile, Combine&& combine) {
  REQUIRE(seed000_fault(c, x, true) == "");
  int64_t k = 0, skipped = 0;
  for_each_index(c.box, [&](const std::vector<int64_t>& i) {
    bool in = true;
    int64_t gmem_idx = 0;
    for (int d = 0; d < c.rank(); ++d) {
      const int64_t g = x[static_cast<size_t>(d)] + i[static_cast<size_t>(d)];
      if (g < 0 || g >= c.sizes[static_cast<size_t>(d)]) in = false;
      gmem_idx += g * c.strides[static_cast<size_t>(d)];
    }
    if (in) {
      auto& m = mem[static_cast<size_t>(base + gmem_idx)];
      m = combine(m, tile[static_cast<size_t>(k)]);
    } else {
      ++skipped;
    }
    ++k;
  });
  return skipped;
}

// ---- sweep cases ----------------------------------------------------------------------------------------

enum Variant { kPlain = 0, kPadded = 1, kStrided = 2 };
const char* const kVariantName[] = {"plain", "padded", "element-strided"};

/// `x` rounded down / up to a multiple of `u` (any sign).
int64_t floor_to(int64_t x, int64_t u) { return (x >= 0 ? x / u : -((-x + u - 1) / u)) * u; }
int64_t ceil_to(int64_t x, int64_t u) { return -floor_to(-x, u); }

/// Sizes (odd and prime), strides (16-byte aligned, padded for kPadded), boxes at and past the edges,
/// element strides 1..8 in the outer dimensions for kStrided, and coordinates around every edge.
/// The innermost coordinates are multiples of 16 bytes (the hardware faults otherwise). For a store
/// (`store`) the innermost size is an odd number of 16-byte units, since a store needs whole units, and
/// no coordinate is negative (a store there faults), so its boxes hang over the end edges only.
TmaCase make_case(int rank, DType t, Variant v, size_t max_coords, uint64_t seed, bool store) {
  static const std::vector<int64_t> kSizes[3][5] = {
      {{37}, {13, 29}, {5, 7, 11}, {3, 5, 2, 7}, {2, 3, 5, 3, 7}},
      {{101}, {3, 53}, {7, 3, 17}, {2, 7, 3, 5}, {3, 2, 2, 5, 3}},
      {{23}, {41, 7}, {19, 11, 5}, {17, 3, 7, 5}, {13, 5, 3, 2, 9}},
  };
  const int64_t u = 16 / ir::size_of(t);  // elements per 16 bytes
  TmaCase c;
  c.esize = ir::size_of(t);
  c.sizes = kSizes[v][rank - 1];
  if (store) {
    int64_t units = (c.sizes.back() + u - 1) / u;
    if (units % 2 == 0) ++units;
    c.sizes.back() = units * u;
  }
  c.strides.assign(static_cast<size_t>(rank), 1);
  for (int d = rank - 2; d >= 0; --d) {
    const auto i = static_cast<size_t>(d);
    int64_t st = c.strides[i + 1] * c.sizes[i + 1];
    st = (st + u - 1) / u * u;      // TMA strides are multiples of 16 bytes
    if (v == kPadded) st += u * (1 + d % 2);  // padding that no access may touch
    c.strides[i] = st;
  }
  static const int64_t kOuterBox[] = {3, 2, 5, 1, 4, 8};
  static const int64_t kEst[] = {2, 3, 8, 5, 4, 7, 6};
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    int64_t box, e = 1;
    if (d == rank - 1) {
      box = u * (1 + (v % 2));
    } else if (v == kStrided) {
      e = kEst[(i + static_cast<size_t>(rank)) % 7];
      // A multiple of the element stride, or a box no larger than it (one element per tile row).
      box = (d % 3 == 2) ? std::max<int64_t>(1, e - 1) : e * (2 + d % 2);
    } else {
      box = kOuterBox[(i + static_cast<size_t>(v)) % 6];
    }
    c.box.push_back(box);
    c.est.push_back(e);
  }
  // Coordinates: inside, at the start, at and past the end, negative, and straddling both edges.
  // Innermost ones are the 16-byte multiples on either side of each of those positions.
  std::vector<std::vector<int64_t>> cand(static_cast<size_t>(rank));
  for (int d = 0; d < rank; ++d) {
    const auto i = static_cast<size_t>(d);
    const int64_t n = c.sizes[i], b = c.box[i], span = (c.tile()[i] - 1) * c.est[i] + 1;
    std::set<int64_t> s = {0, 1, n - b, n - 1, n, n + 2, -1, -b + 1, -b, -b - 3, n / 2, n - span, -span + 1, -span};
    if (d == rank - 1) {
      std::set<int64_t> aligned;
      for (int64_t x : s) aligned.insert({floor_to(x, u), ceil_to(x, u)});
      s = aligned;
    }
    if (store) std::erase_if(s, [](int64_t x) { return x < 0; });
    cand[i].assign(s.begin(), s.end());
  }
  size_t total = 1;
  for (const auto& cd : cand) total *= cd.size();
  if (total <= max_coords) {
    std::vector<int64_t> dims;
    for (const auto& cd : cand) dims.push_back(static_cast<int64_t>(cd.size()));
    for_each_index(dims, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> x;
      for (size_t i = 0; i < idx.size(); ++i) x.push_back(cand[i][static_cast<size_t>(idx[i])]);
      c.coords.push_back(x);
    });
  } else {
    auto r = rng(seed);
    std::vector<int64_t> zero(static_cast<size_t>(rank), 0), last, past;
    for (int d = 0; d < rank; ++d) {
      last.push_back(c.sizes[static_cast<size_t>(d)] - 1);
      past.push_back(-c.box[static_cast<size_t>(d)] + 1);
    }
    last.back() = floor_to(last.back(), u);  // the unit holding the last element
    past.back() = u - c.box.back();          // one unit of the box inside
    if (store)  // boxes over the end edge instead: one element (one unit innermost) inside
      for (int d = 0; d < rank; ++d) {
        const auto i = static_cast<size_t>(d);
        past[i] = std::max<int64_t>(0, d == rank - 1 ? c.sizes[i] - c.box[i] + u : c.sizes[i] - 1);
      }
    c.coords = {zero, last, past};
    while (c.coords.size() < max_coords) {
      std::vector<int64_t> x;
      for (const auto& cd : cand) x.push_back(cd[r() % cd.size()]);
      c.coords.push_back(x);
    }
  }
  return c;
}

template <class T, int R>
std::array<int64_t, R> arr(const std::vector<int64_t>& v) {
  std::array<int64_t, R> a{};
  std::copy(v.begin(), v.end(), a.begin());
  return a;
}

// ---- sweep kernels: one program per coordinate set ---------------------------------------------------------

template <class T, int R, size_t... I>
auto load_kernel(std::array<int64_t, R> box, std::array<int64_t, R> est, dsl::Fill fill, int64_t numel, std::index_sequence<I...>) {
  return tilejit::kernel("tma_load_sweep", [=](dsl::Tensor<T, R> x, dsl::Tensor<dsl::i32, 1> coords, dsl::Tensor<T, 1> out) {
    using namespace tilejit::dsl;
    auto pid = program_id(0);
    auto tile = descriptor_load(x, {Index(load(coords, pid * R + static_cast<int>(I)))...}, {box[I]...}, {est[I]...}, fill);
    store(out, pid * numel + arange(0, numel), tile.reshape({numel}));
  });
}

template <class T, int R, size_t... I>
auto store_kernel(std::array<int64_t, R> box, dsl::StoreReduce reduce, int64_t numel, std::index_sequence<I...>) {
  return tilejit::kernel("tma_store_sweep", [=](dsl::Tensor<T, R> x, dsl::Tensor<dsl::i32, 1> coords, dsl::Tensor<T, 1> src) {
    using namespace tilejit::dsl;
    auto pid = program_id(0);
    auto tile = load(src, pid * numel + arange(0, numel)).reshape({box[I]...});
    descriptor_store(x, {Index(load(coords, pid * R + static_cast<int>(I)))...}, tile, reduce);
  });
}

Buffer coords_buffer(const TmaCase& c) {
  Buffer b(DType::i32, static_cast<int64_t>(c.coords.size()) * c.rank());
  int64_t k = 0;
  for (const auto& x : c.coords)
    for (int64_t v : x) b.seti(k++, v);
  return b;
}

/// Runs one program per coordinate set of `c` loading a tile into a buffer, and compares every element
/// with the reference tmaload (data inside, the fill outside).
template <class T, int R>
void check_load(const TmaCase& c, uint64_t seed) {
  const DType t = dsl::dtype_v<T>;
  const int fill = c.fill;
  const int64_t guard = 64 / ir::size_of(t);
  Buffer mem(t, guard + c.extent() + guard);
  auto r = rng(seed);
  for (int64_t k = 0; k < mem.size(); ++k) mem.set_bits(k, random_bits(t, r));
  const Buffer coords = coords_buffer(c);
  const int64_t numel = c.tile_numel();
  const auto programs = static_cast<int64_t>(c.coords.size());
  Buffer out(t, programs * numel);
  for (int64_t k = 0; k < out.size(); ++k) out.set_bits(k, random_bits(t, r));
  auto k = load_kernel<T, R>(arr<T, R>(c.box), arr<T, R>(c.est), static_cast<dsl::Fill>(fill), numel, std::make_index_sequence<R>{});
  const auto g = k.trace(Config{});
  const std::vector<tilejit::KernelArg> args = {tensor_arg(mem.arg(c.sizes, c.strides, guard)), tensor_arg(coords.arg1()),
                                                tensor_arg(out.arg1())};
  tilejit::interp::run(*g, dim3(static_cast<uint32_t>(programs)), args);
  std::vector<uint64_t> want;
  std::vector<uint8_t> filled;
  int64_t bad = 0, fills = 0, reads = 0;
  for (int64_t p = 0; p < programs; ++p) {
    seed000_load(mem, guard, c, c.coords[static_cast<size_t>(p)], want, filled);
    for (int64_t e = 0; e < numel; ++e) {
      const int64_t o = p * numel + e;
      bool ok;
      if (filled[static_cast<size_t>(e)]) {
        ++fills;
        ok = fill ? std::isnan(out.getf(o)) : out.bits(o) == 0;
      } else {
        ++reads;
        ok = out.bits(o) == want[static_cast<size_t>(e)];
      }
      if (!ok && bad++ < 3) {
        std::string xs;
        for (int64_t x : c.coords[static_cast<size_t>(p)]) xs += std::to_string(x) + " ";
        FAIL_CHECK("coords " << xs << "element " << e << ": got bits " << out.bits(o) << ", want "
                             << (filled[static_cast<size_t>(e)] ? "fill" : std::to_string(want[static_cast<size_t>(e)])));
      }
    }
  }
  CHECK(bad == 0);
  CHECK(fills > 0);  // the sweep reaches past the edges
  CHECK(reads > 0);
}

template <class T, int R>
void load_sweep(Variant v, int fill) {
  const DType t = dsl::dtype_v<T>;
  TmaCase c = make_case(R, t, v, 400, static_cast<uint64_t>(R * 10 + v), false);
  c.fill = fill;
  check_load<T, R>(c, static_cast<uint64_t>(t) * 100 + R);
}

/// The memory a store check ran on: `mem` after the kernel, `initial` its bits before, the tensor at `guard`.
struct StoreRun {
  Buffer mem;
  std::vector<uint64_t> initial;
  int64_t guard = 0;
};

/// Runs one program per coordinate set of `c` storing a random tile, and compares every element of the
/// buffer (guard bands and row padding included) with the reference tmastore.
template <class T, int R>
StoreRun check_store(const TmaCase& c, uint64_t seed) {
  const DType t = dsl::dtype_v<T>;
  const int64_t guard = 64 / ir::size_of(t);
  Buffer mem(t, guard + c.extent() + guard);
  auto r = rng(seed);
  std::vector<uint64_t> ref(static_cast<size_t>(mem.size()));
  for (int64_t k = 0; k < mem.size(); ++k) {
    ref[static_cast<size_t>(k)] = random_bits(t, r);
    mem.set_bits(k, ref[static_cast<size_t>(k)]);
  }
  std::vector<uint64_t> initial = ref;
  const Buffer coords = coords_buffer(c);
  const int64_t numel = c.tile_numel();
  const auto programs = static_cast<int64_t>(c.coords.size());
  Buffer src(t, programs * numel);
  for (int64_t k = 0; k < src.size(); ++k) src.set_bits(k, random_bits(t, r));
  auto k = store_kernel<T, R>(arr<T, R>(c.box), dsl::StoreReduce::none, numel, std::make_index_sequence<R>{});
  const auto g = k.trace(Config{});
  tilejit::interp::run(*g, dim3(static_cast<uint32_t>(programs)),
                       std::vector<tilejit::KernelArg>{tensor_arg(mem.arg(c.sizes, c.strides, guard)), tensor_arg(coords.arg1()),
                                                       tensor_arg(src.arg1())});
  int64_t skipped = 0;
  for (int64_t p = 0; p < programs; ++p) {
    std::vector<uint64_t> tile(static_cast<size_t>(numel));
    for (int64_t e = 0; e < numel; ++e) tile[static_cast<size_t>(e)] = src.bits(p * numel + e);
    skipped += seed000_store(ref, guard, c, c.coords[static_cast<size_t>(p)], tile, [](uint64_t, uint64_t n) { return n; });
  }
  // Every byte of the buffer — guard bands, row padding, untouched elements — matches the reference.
  int64_t bad = 0, guard_bad = 0;
  for (int64_t k = 0; k < mem.size(); ++k) {
    const bool ok = mem.bits(k) == ref[static_cast<size_t>(k)];
    bad += !ok;
    guard_bad += !ok && (k < guard || k >= guard + c.extent());
  }
  CHECK(bad == 0);
  CHECK(guard_bad == 0);
  CHECK(skipped > 0);
  return StoreRun{std::move(mem), std::move(initial), guard};
}

template <class T, int R>
void store_sweep(Variant v) {
  const DType t = dsl::dtype_v<T>;
  const TmaCase c = make_case(R, t, v, 150, static_cast<uint64_t>(R * 10 + v + 5), true);
  check_store<T, R>(c, static_cast<uint64_t>(t) * 1000 + R);
}

template <class T>
void sweep_all_ranks_load() {
  const bool is_float = ir::is_float(dsl::dtype_v<T>);
  [&]<int... Rm1>(std::integer_sequence<int, Rm1...>) {
    (
        [&] {
          constexpr int R = Rm1 + 1;
          for (Variant v : {kPlain, kPadded, kStrided}) {
            if (v == kStrided && R == 1) continue;  // only outer dimensions can be strided
            for (int fill : {0, 1}) {
              if (fill && !is_float) continue;
              const std::string n = "rank " + std::to_string(R) + " " + kVariantName[v] + (fill ? " nan-fill" : " zero-fill");
              SUBCASE(n.c_str()) { load_sweep<T, R>(v, fill); }
            }
          }
        }(),
        ...);
  }(std::make_integer_sequence<int, 5>{});
}

template <class T>
void sweep_all_ranks_store() {
  [&]<int... Rm1>(std::integer_sequence<int, Rm1...>) {
    (
        [&] {
          constexpr int R = Rm1 + 1;
          for (Variant v : {kPlain, kPadded}) {
            const std::string n = "rank " + std::to_string(R) + " " + kVariantName[v];
            SUBCASE(n.c_str()) { store_sweep<T, R>(v); }
          }
        }(),
        ...);
  }(std::make_integer_sequence<int, 5>{});
}

}  // namespace

TEST_CASE_TEMPLATE("descriptor_load matches the reference tmaload: ranks 1-5, edges, negative coordinates, element strides", T,
                   dsl::f32, dsl::bf16, dsl::u8, dsl::f64, dsl::i32) {
  sweep_all_ranks_load<T>();
}

TEST_CASE_TEMPLATE("descriptor_store matches the reference tmastore and leaves guard bands and padding untouched", T, dsl::f32,
                   dsl::bf16, dsl::u8, dsl::f64, dsl::i32) {
  sweep_all_ranks_store<T>();
}

TEST_CASE("NaN fill gives NaN for f16 and f32 outside the tensor, data inside") {
  for (int which = 0; which < 2; ++which) {
    SUBCASE(which ? "f32" : "f16") {
      const DType t = which ? DType::f32 : DType::f16;
      const int64_t u = 16 / ir::size_of(t);
      Buffer x(t, 3 * 2 * u);
      for (int64_t k = 0; k < x.size(); ++k) x.setf(k, static_cast<double>(k + 1));
      Buffer out(t, 4 * 2 * u);
      auto run = [&](auto tag) {
        using T = decltype(tag);
        auto k = tilejit::kernel("nan_fill", [u](dsl::Tensor<T, 2> a, dsl::Tensor<T, 2> o) {
          using namespace tilejit::dsl;
          auto tile = descriptor_load(a, {-1, u}, {4, 2 * u}, {}, Fill::nan);
          descriptor_store(o, {0, 0}, tile);
        });
        tilejit::interp::run(*k.trace(Config{}), dim3(1),
                             std::vector<tilejit::KernelArg>{tensor_arg(x.arg({3, 2 * u})), tensor_arg(out.arg({4, 2 * u}))});
      };
      if (which) run(dsl::f32{});
      else run(dsl::f16{});
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 2 * u; ++j) {
          const int64_t row = i - 1, col = u + j;
          const double v = out.getf(i * 2 * u + j);
          if (row >= 0 && row < 3 && col < 2 * u) CHECK(v == static_cast<double>(row * 2 * u + col + 1));
          else CHECK(std::isnan(v));
        }
    }
  }
}

namespace {
template <class T>
void reduce_case(dsl::StoreReduce red, const std::function<uint64_t(uint64_t, uint64_t)>& combine, const std::function<double(int64_t)>& gen) {
  const DType t = dsl::dtype_v<T>;
  const int64_t u = 16 / ir::size_of(t);
  const int64_t M = 7, N = 3 * u, stride = 4 * u, B0 = 4, B1 = 2 * u;  // a store needs rows of whole 16-byte units
  Buffer mem(t, M * stride), vals(t, B0 * B1);
  std::vector<uint64_t> ref(static_cast<size_t>(mem.size()));
  for (int64_t k = 0; k < mem.size(); ++k) {
    mem.set_bits(k, encode(t, gen(k)));
    ref[static_cast<size_t>(k)] = mem.bits(k);
  }
  for (int64_t k = 0; k < vals.size(); ++k) vals.set_bits(k, encode(t, gen(k * 7 + 3)));
  auto k = tilejit::kernel("tma_reduce", [=](dsl::Tensor<T, 2> x, dsl::Tensor<T, 2> v, dsl::Scalar<dsl::i32> c0, dsl::Scalar<dsl::i32> c1) {
    using namespace tilejit::dsl;
    descriptor_store(x, {c0, c1}, descriptor_load(v, {0, 0}, {B0, B1}), red);
  });
  const auto g = k.trace(Config{});
  TmaCase c;
  c.sizes = {M, N};
  c.strides = {stride, 1};
  c.box = {B0, B1};
  c.est = {1, 1};
  c.esize = ir::size_of(t);
  std::vector<uint64_t> tile(static_cast<size_t>(B0 * B1));
  for (int64_t e = 0; e < B0 * B1; ++e) tile[static_cast<size_t>(e)] = vals.bits(e);
  // Overlapping tiles, some past the edges: the second application combines with the first.
  // Coordinates are not negative and innermost ones are whole 16-byte units (what a store needs).
  const int64_t coords[][2] = {{0, 0}, {1, u}, {5, N - u}, {6, 0}, {3, u}, {0, 2 * u}};
  for (const auto& xy : coords) {
    tilejit::interp::run(*g, dim3(1),
                         std::vector<tilejit::KernelArg>{tensor_arg(mem.arg({M, N}, {stride, 1})), tensor_arg(vals.arg({B0, B1})),
                                                         scalar_arg(DType::i32, static_cast<double>(xy[0])),
                                                         scalar_arg(DType::i32, static_cast<double>(xy[1]))});
    seed000_store(ref, 0, c, {xy[0], xy[1]}, tile, combine);
  }
  int64_t bad = 0;
  for (int64_t k2 = 0; k2 < mem.size(); ++k2) bad += mem.bits(k2) != ref[static_cast<size_t>(k2)];
  CHECK(bad == 0);
}

template <class T>
std::function<uint64_t(uint64_t, uint64_t)> float_combine(dsl::StoreReduce red) {
  const DType t = dsl::dtype_v<T>;
  return [t, red](uint64_t a, uint64_t b) {
    const double x = decode_float(t, a), y = decode_float(t, b);
    double r;
    if (red == dsl::StoreReduce::add) r = ref_round(t, static_cast<float>(x) + static_cast<float>(y));
    else if (red == dsl::StoreReduce::min) r = std::min(x, y);
    else r = std::max(x, y);
    return encode(t, r);
  };
}
template <class T>
std::function<uint64_t(uint64_t, uint64_t)> int_combine(dsl::StoreReduce red) {
  const DType t = dsl::dtype_v<T>;
  return [t, red](uint64_t a, uint64_t b) {
    const int64_t x = decode_int(t, a), y = decode_int(t, b);
    int64_t r;
    if (red == dsl::StoreReduce::add) r = ref_wrap(t, static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y)));
    else if (red == dsl::StoreReduce::min) r = std::min(x, y);
    else r = std::max(x, y);
    return static_cast<uint64_t>(r) & (ir::size_of(t) == 8 ? ~0ull : (1ull << (8 * ir::size_of(t))) - 1);
  };
}
}  // namespace

TEST_CASE("descriptor_store with add, min and max reductions combines with memory") {
  const auto fgen = [](int64_t k) { return static_cast<double>((k * 37) % 29) * 0.375 - 4.0; };
  const auto igen = [](int64_t k) { return static_cast<double>(((k * 2654435761) % 2001) - 1000) * 1000003.0; };
  for (dsl::StoreReduce red : {dsl::StoreReduce::add, dsl::StoreReduce::min, dsl::StoreReduce::max}) {
    const std::string rn = red == dsl::StoreReduce::add ? "add" : red == dsl::StoreReduce::min ? "min" : "max";
    SUBCASE(("f32 " + rn).c_str()) { reduce_case<dsl::f32>(red, float_combine<dsl::f32>(red), fgen); }
    SUBCASE(("bf16 " + rn).c_str()) { reduce_case<dsl::bf16>(red, float_combine<dsl::bf16>(red), fgen); }
    SUBCASE(("f16 " + rn).c_str()) { reduce_case<dsl::f16>(red, float_combine<dsl::f16>(red), fgen); }
    SUBCASE(("i32 " + rn).c_str()) { reduce_case<dsl::i32>(red, int_combine<dsl::i32>(red), igen); }
    if (red != dsl::StoreReduce::add)  // the TMA unit has no i64 add (a UserError, tests/error)
      SUBCASE(("i64 " + rn).c_str()) { reduce_case<dsl::i64>(red, int_combine<dsl::i64>(red), igen); }
  }
  SUBCASE("bf16 add rounds in bf16: 1 + 2^-9 stays 1") {
    Buffer mem(DType::bf16, 8), v(DType::bf16, 8);
    for (int64_t k = 0; k < 8; ++k) {
      mem.setf(k, 1.0);
      v.setf(k, 0x1p-9);
    }
    auto k = tilejit::kernel("bf16_add", [](dsl::Tensor<dsl::bf16, 1> x, dsl::Tensor<dsl::bf16, 1> y) {
      using namespace tilejit::dsl;
      descriptor_store(x, {0}, descriptor_load(y, {0}, {8}), StoreReduce::add);
    });
    tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(mem.arg1()), tensor_arg(v.arg1())});
    for (int64_t i = 0; i < 8; ++i) CHECK(mem.getf(i) == 1.0);
  }
}

// ---- the 16-byte rules the hardware adds to the reference ----------------------------------------------------

namespace {
/// The source line of the first node of `op` in `g`.
int op_line(const ir::Graph& g, Op op) {
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(static_cast<NodeId>(i)).op == op) return static_cast<int>(g.location(static_cast<NodeId>(i)).line);
  return -1;
}

/// A [rows, cols] contiguous tensor of `t` accessed with [2, 2u] boxes (u elements per 16 bytes).
TmaCase pair_case(DType t, int64_t rows, int64_t cols) {
  const int64_t u = 16 / ir::size_of(t);
  TmaCase c;
  c.sizes = {rows, cols};
  c.strides = {cols, 1};
  c.box = {2, 2 * u};
  c.est = {1, 1};
  c.esize = ir::size_of(t);
  return c;
}

/// One program moves a [2, 2u] tile from x to y. With `store` false it loads at (1, inner) and stores at
/// (0, 0); with `store` true it loads at (0, 0) and stores at (1, inner). An innermost coordinate that is
/// not a multiple of 16 bytes must raise the UserError at the op's line and write nothing; the aligned
/// coordinate below it (at least 0 for a store) must run and match the reference.
template <class T>
void unaligned_coordinate_case(int64_t inner, bool store) {
  const DType t = dsl::dtype_v<T>;
  const int64_t u = 16 / ir::size_of(t), rows = 4, cols = 4 * u;
  Buffer x(t, rows * cols), y(t, rows * cols);
  auto r = rng(static_cast<uint64_t>(inner + 100) + static_cast<uint64_t>(t));
  std::vector<uint64_t> y0(static_cast<size_t>(y.size()));
  for (int64_t k = 0; k < x.size(); ++k) {
    x.set_bits(k, random_bits(t, r));
    y0[static_cast<size_t>(k)] = random_bits(t, r);
    y.set_bits(k, y0[static_cast<size_t>(k)]);
  }
  int line = 0;
  auto k = tilejit::kernel("unaligned", [&line, u, store](dsl::Tensor<T, 2> a, dsl::Tensor<T, 2> b, dsl::Scalar<dsl::i32> c) {
    using namespace tilejit::dsl;
    if (store) {
      auto tile = descriptor_load(a, {0, 0}, {2, 2 * u});
      line = __LINE__ + 1;
      descriptor_store(b, {1, c}, tile);
    } else {
      line = __LINE__ + 1;
      auto tile = descriptor_load(a, {1, c}, {2, 2 * u});
      descriptor_store(b, {0, 0}, tile);
    }
  });
  const auto g = k.trace(Config{});  // records `line`
  REQUIRE(line > 0);
  auto run = [&](int64_t c) {
    tilejit::interp::run(*g, dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(x.arg({rows, cols})), tensor_arg(y.arg({rows, cols})),
                                                                       scalar_arg(DType::i32, static_cast<double>(c))});
  };
  const TmaCase rc = pair_case(t, rows, cols);
  const std::vector<int64_t> at = {1, inner}, origin = {0, 0};
  CHECK(seed000_fault(rc, at, store) == "innermost coordinate");
  const std::string op = store ? "descriptor_store" : "descriptor_load";
  const int64_t es = ir::size_of(t);
  expect_user_error([&] { run(inner); },
                    {"test_tma.cpp:" + std::to_string(line), op + ": the innermost coordinate must be a multiple of 16 bytes",
                     std::to_string(inner) + " x " + std::to_string(es) + " bytes = " + std::to_string(inner * es) + " bytes",
                     "program (0, 0, 0)"});
  int64_t touched = 0;
  for (int64_t e = 0; e < y.size(); ++e) touched += y.bits(e) != y0[static_cast<size_t>(e)];
  CHECK(touched == 0);
  // The aligned coordinate just below runs, and both tiles follow the reference.
  const std::vector<int64_t> aligned = {1, store ? std::max<int64_t>(0, floor_to(inner, u)) : floor_to(inner, u)};
  CHECK(seed000_fault(rc, aligned, store) == "");
  run(aligned[1]);
  std::vector<uint64_t> tile, want = y0;
  std::vector<uint8_t> filled;
  seed000_load(x, 0, rc, store ? origin : aligned, tile, filled);
  seed000_store(want, 0, rc, store ? aligned : origin, tile, [](uint64_t, uint64_t n) { return n; });
  int64_t bad = 0;
  for (int64_t e = 0; e < y.size(); ++e) bad += y.bits(e) != want[static_cast<size_t>(e)];
  CHECK(bad == 0);
}

/// Runs store_kernel once at c.coords[0], which the rules refuse: the UserError names the store's line,
/// `rule` and `value`, and nothing is written.
template <class T>
void expect_store_refused(const TmaCase& c, const std::string& rule, const std::string& value) {
  const DType t = dsl::dtype_v<T>;
  REQUIRE(c.coords.size() == 1);
  Buffer mem(t, c.extent()), src(t, c.tile_numel());
  auto r = rng(static_cast<uint64_t>(c.extent()));
  std::vector<uint64_t> initial(static_cast<size_t>(mem.size()));
  for (int64_t k = 0; k < mem.size(); ++k) {
    initial[static_cast<size_t>(k)] = random_bits(t, r);
    mem.set_bits(k, initial[static_cast<size_t>(k)]);
  }
  for (int64_t k = 0; k < src.size(); ++k) src.set_bits(k, random_bits(t, r));
  const Buffer coords = coords_buffer(c);
  auto k = store_kernel<T, 2>(arr<T, 2>(c.box), dsl::StoreReduce::none, c.tile_numel(), std::make_index_sequence<2>{});
  const auto g = k.trace(Config{});
  const int line = op_line(*g, Op::DescStore);
  REQUIRE(line > 0);
  expect_user_error(
      [&] {
        tilejit::interp::run(*g, dim3(1),
                             std::vector<tilejit::KernelArg>{tensor_arg(mem.arg(c.sizes, c.strides)), tensor_arg(coords.arg1()),
                                                             tensor_arg(src.arg1())});
      },
      {"test_tma.cpp:" + std::to_string(line), rule, value, "program (0, 0, 0)"});
  int64_t touched = 0;
  for (int64_t e = 0; e < mem.size(); ++e) touched += mem.bits(e) != initial[static_cast<size_t>(e)];
  CHECK(touched == 0);
}

/// A [5, 3u] tensor with a row stride of 4u accessed with [3, 2u] boxes at negative innermost coordinates
/// of whole 16-byte units (-u, -2u) and negative rows. Loads work and follow the reference (both fills for
/// floating types); stores there are refused (no negative store coordinate, innermost or outer), while
/// stores at non-negative coordinates over the end edges follow the reference and leave the padding alone.
template <class T>
void negative_coordinate_case() {
  const DType t = dsl::dtype_v<T>;
  const int64_t u = 16 / ir::size_of(t), es = ir::size_of(t);
  TmaCase c;
  c.sizes = {5, 3 * u};
  c.strides = {4 * u, 1};
  c.box = {3, 2 * u};
  c.est = {1, 1};
  c.esize = es;
  c.coords = {{-1, -u}, {0, -u}, {2, -u}, {4, -u}, {-2, -u}, {1, -2 * u}, {0, 2 * u}, {3, 0}};
  for (const auto& x : c.coords) {
    CHECK(x.back() * es % 16 == 0);
    CHECK(seed000_fault(c, x, false) == "");
  }
  for (int fill : {0, 1}) {
    if (fill && !ir::is_float(t)) continue;
    c.fill = fill;
    check_load<T, 2>(c, static_cast<uint64_t>(t) * 7 + static_cast<uint64_t>(fill));
  }
  const std::string rule = "descriptor_store: TMA store coordinates must not be negative";
  const std::vector<std::vector<int64_t>> refused = {{1, -u}, {0, -2 * u}, {-1, 0}, {-2, -u}};
  for (const auto& x : refused) {
    TmaCase s = c;
    s.coords = {x};
    CHECK(seed000_fault(s, x, true) == "negative store coordinate");
    const size_t d = x[0] < 0 ? 0 : 1;  // the first negative coordinate is named
    expect_store_refused<T>(s, rule,
                            "coordinate " + std::to_string(d) + " (dimension " + std::to_string(d) + (d == 1 ? " (innermost)" : "") +
                                ") = " + std::to_string(x[d]));
  }
  TmaCase s = c;
  s.coords = {{0, 0}, {3, u}, {4, 2 * u}, {2, 2 * u}, {0, 3 * u}};
  check_store<T, 2>(s, static_cast<uint64_t>(t) * 11);
}

/// A [3, n] tensor whose rows (n elements) are not a multiple of 16 bytes, with a 16-byte aligned row stride.
TmaCase ragged_case(DType t, int64_t n) {
  const int64_t u = 16 / ir::size_of(t);
  TmaCase c;
  c.sizes = {3, n};
  c.strides = {(n + u - 1) / u * u, 1};
  c.box = {2, 2 * u};
  c.est = {1, 1};
  c.esize = ir::size_of(t);
  return c;
}

/// Loads from the ragged tensor work anywhere, including the unit that holds the end of each row.
template <class T>
void ragged_load_case(int64_t n) {
  const DType t = dsl::dtype_v<T>;
  const int64_t u = 16 / ir::size_of(t);
  TmaCase c = ragged_case(t, n);
  REQUIRE(n * c.esize % 16 != 0);
  for (int64_t row : {-1, 0, 2})
    for (int64_t col : {int64_t{0}, floor_to(n - 1, u), floor_to(n / 2, u), -u, ceil_to(n, u)}) c.coords.push_back({row, col});
  for (const auto& x : c.coords) CHECK(seed000_fault(c, x, false) == "");
  check_load<T, 2>(c, static_cast<uint64_t>(n) * 3);
}

/// A store into the ragged tensor is a UserError at the store's line, naming the tensor, and writes nothing.
template <class T>
void ragged_store_case(int64_t n) {
  const DType t = dsl::dtype_v<T>;
  TmaCase c = ragged_case(t, n);
  c.coords = {{0, 0}};
  CHECK(seed000_fault(c, c.coords[0], true) == "innermost size");
  CHECK(seed000_fault(c, c.coords[0], false) == "");
  const int64_t es = ir::size_of(t);
  expect_store_refused<T>(c, "descriptor_store: the innermost size of the tensor must span a multiple of 16 bytes",
                          "(arg0): " + std::to_string(n) + " x " + std::to_string(es) + " bytes = " + std::to_string(n * es) + " bytes");
}
}  // namespace

TEST_CASE("an innermost coordinate that is not a multiple of 16 bytes is a UserError at the op's line") {
  for (bool store : {false, true}) {
    const std::string op = store ? " store" : " load";
    SUBCASE(("f32 +3" + op).c_str()) { unaligned_coordinate_case<dsl::f32>(3, store); }
    SUBCASE(("f32 -3" + op).c_str()) { unaligned_coordinate_case<dsl::f32>(-3, store); }
    SUBCASE(("bf16 +1" + op).c_str()) { unaligned_coordinate_case<dsl::bf16>(1, store); }
  }
}

TEST_CASE("negative coordinates (innermost in whole 16-byte units) load like the reference; stores there are a UserError") {
  SUBCASE("f32 -4") { negative_coordinate_case<dsl::f32>(); }
  SUBCASE("bf16 -8") { negative_coordinate_case<dsl::bf16>(); }
  SUBCASE("u8 -16") { negative_coordinate_case<dsl::u8>(); }
}

TEST_CASE("a store into rows that are not a multiple of 16 bytes is a UserError; loads from them work") {
  SUBCASE("f32 130: load") { ragged_load_case<dsl::f32>(130); }
  SUBCASE("f32 130: store refused") { ragged_store_case<dsl::f32>(130); }
  SUBCASE("bf16 9: load") { ragged_load_case<dsl::bf16>(9); }
  SUBCASE("bf16 9: store refused") { ragged_store_case<dsl::bf16>(9); }
  SUBCASE("u8 15: load") { ragged_load_case<dsl::u8>(15); }
  SUBCASE("u8 15: store refused") { ragged_store_case<dsl::u8>(15); }
}

TEST_CASE("a store into rows of 132 f32 (528 bytes) works and leaves the row padding untouched") {
  TmaCase c;
  c.sizes = {3, 132};
  c.strides = {136, 1};
  c.box = {2, 64};
  c.est = {1, 1};
  c.esize = 4;
  c.coords = {{0, 128}, {1, 32}, {2, 100}, {0, 64}, {1, 0}, {2, 132}};
  const StoreRun s = check_store<dsl::f32, 2>(c, 132);
  int64_t pad_bad = 0, tail_written = 0;
  for (int64_t row = 0; row < 3; ++row) {
    for (int64_t col = 132; col < 136; ++col) {
      const int64_t k = s.guard + row * 136 + col;
      pad_bad += s.mem.bits(k) != s.initial[static_cast<size_t>(k)];
    }
    for (int64_t col = 128; col < 132; ++col) {
      const int64_t k = s.guard + row * 136 + col;
      tail_written += s.mem.bits(k) != s.initial[static_cast<size_t>(k)];
    }
  }
  CHECK(pad_bad == 0);
  CHECK(tail_written == 12);  // (0, 128) covers rows 0-1, (2, 100) row 2: the last unit of every row is stored
}

// ---- runtime rule checks ------------------------------------------------------------------------------

namespace {
auto copy_kernel() {
  return tilejit::kernel("tma_copy", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 2> y) {
    using namespace tilejit::dsl;
    auto t = descriptor_load(x, {0, 0}, {4, 8});
    descriptor_store(y, {0, 0}, t);
  });
}
}  // namespace

TEST_CASE("TMA global rules are checked when the kernel runs, at the op's line") {
  auto k = copy_kernel();
  const auto g = k.trace(Config{});
  Buffer a(DType::f32, 256), b(DType::f32, 256);
  const int load_line = [&] {
    for (size_t i = 0; i < g->size(); ++i)
      if (g->node(static_cast<NodeId>(i)).op == Op::DescLoad) return static_cast<int>(g->location(static_cast<NodeId>(i)).line);
    return -1;
  }();
  REQUIRE(load_line > 0);
  const std::string at = "test_tma.cpp:" + std::to_string(load_line);
  auto run = [&](tilejit::TensorArg x) {
    tilejit::interp::run(*g, dim3(2), std::vector<tilejit::KernelArg>{tensor_arg(x), tensor_arg(b.arg({8, 8}))});
  };
  SUBCASE("misaligned base address") {
    expect_user_error([&] { run(a.arg({8, 8}, {}, 1)); }, {at, "16-byte aligned", "address % 16 = 4", "program (0, 0, 0)"});
  }
  SUBCASE("row stride not a multiple of 16 bytes") {
    expect_user_error([&] { run(a.arg({8, 7}, {9, 1})); }, {at, "multiples of 16 bytes", "9 elements = 36 bytes"});
  }
  SUBCASE("innermost dimension not contiguous") {
    expect_user_error([&] { run(a.arg({8, 8}, {16, 2})); }, {at, "innermost dimension of a TMA tensor must be contiguous"});
  }
  SUBCASE("empty dimension") { expect_user_error([&] { run(a.arg({0, 8})); }, {at, "size out of range", "dimension 0"}); }
  SUBCASE("a valid tensor runs") {
    for (int64_t i = 0; i < 64; ++i) a.setf(i, static_cast<double>(i));
    run(a.arg({8, 8}));
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 8; ++j) CHECK(b.getf(i * 8 + j) == static_cast<double>(i * 8 + j));
    CHECK(b.getf(4 * 8) == 0.0);
  }
}

TEST_CASE("box rules are checked before the first program for graphs built without the front end") {
  auto build = [](int64_t inner_est, int64_t inner_box) {
    Builder B;
    const NodeId x = B.tensor(DType::f32, 2), y = B.tensor(DType::f32, 2);
    ir::TmaAttrs a;
    a.rank = 2;
    a.box = {4, static_cast<int32_t>(inner_box), 0, 0, 0};
    a.estride = {1, static_cast<int32_t>(inner_est), 1, 1, 1};
    B.line(31);
    const NodeId zero = B.ci(DType::i32, 0);
    const ir::Shape s{4, (inner_box + inner_est - 1) / inner_est};
    B.g.add(Op::DescLoad, DType::f32, s, {x, zero, zero}, a.encode(Op::DescLoad));
    (void)y;
    return B;
  };
  Buffer a(DType::f32, 64), b(DType::f32, 64);
  const std::vector<tilejit::KernelArg> args = {tensor_arg(a.arg({8, 8})), tensor_arg(b.arg({8, 8}))};
  SUBCASE("innermost element stride") {
    Builder B = build(2, 8);
    expect_user_error([&] { tilejit::interp::run(B.g, dim3(1), args); }, {"builder_graph.cpp:31", "innermost element stride must be 1"});
  }
  SUBCASE("innermost box bytes") {
    Builder B = build(1, 3);
    expect_user_error([&] { tilejit::interp::run(B.g, dim3(1), args); }, {"builder_graph.cpp:31", "multiple of 16 bytes"});
  }
}

TEST_CASE("prefetch_descriptor validates the tensor and changes nothing") {
  auto k = tilejit::kernel("prefetch", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 2> y) {
    using namespace tilejit::dsl;
    prefetch_descriptor(x, {4, 8});
    descriptor_store(y, {0, 0}, descriptor_load(x, {0, 0}, {4, 8}));
  });
  Buffer a(DType::f32, 64), b(DType::f32, 64);
  for (int64_t i = 0; i < 64; ++i) a.setf(i, static_cast<double>(i) + 0.5);
  SUBCASE("valid") {
    tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(a.arg({8, 8})), tensor_arg(b.arg({8, 8}))});
    for (int64_t i = 0; i < 32; ++i) CHECK(b.getf(i) == a.getf(i));
    for (int64_t i = 0; i < 64; ++i) CHECK(a.getf(i) == static_cast<double>(i) + 0.5);
  }
  SUBCASE("misaligned: the prefetch reports it first") {
    expect_user_error(
        [&] {
          tilejit::interp::run(*k.trace(Config{}), dim3(1),
                               std::vector<tilejit::KernelArg>{tensor_arg(a.arg({7, 8}, {}, 2)), tensor_arg(b.arg({8, 8}))});
        },
        {"prefetch_descriptor", "16-byte aligned"});
  }
}

TEST_CASE("tile_view coordinates are tile index times box") {
  for (int variant = 0; variant < 3; ++variant) {
    SUBCASE(("grid of tiles " + std::to_string(variant)).c_str()) {
      // x has any row length; y, being stored to, has rows of whole 16-byte units (Ny >= N) and padding.
      const int64_t M = 10 + variant * 7, N = 20 + variant * 5, BM = 4, BN = 8, ld = (N + 3) / 4 * 4;
      const int64_t Ny = ld, ldy = Ny + 4;
      Buffer x(DType::f32, M * ld), y(DType::f32, M * ldy);
      for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(i % 1000) - 17.0);
      for (int64_t i = 0; i < y.size(); ++i) y.setf(i, -1.0);
      auto k = tilejit::kernel("tiles", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 2> b) {
        using namespace tilejit::dsl;
        auto va = tile_view(a, {4, 8});
        auto vb = tile_view(b, {4, 8});
        auto t = descriptor_load(va(program_id(0), program_id(1)));
        descriptor_store(vb(program_id(0), program_id(1)), t * 2.0f);
      });
      const auto grid = dim3(static_cast<uint32_t>(tilejit::cdiv(M, BM)), static_cast<uint32_t>(tilejit::cdiv(Ny, BN)));
      tilejit::interp::run(*k.trace(Config{}), grid,
                           std::vector<tilejit::KernelArg>{tensor_arg(x.arg({M, N}, {ld, 1})), tensor_arg(y.arg({M, Ny}, {ldy, 1}))});
      int64_t bad = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < ldy; ++j) {
          // Data inside x, zero fill (doubled) past its end, row padding of y untouched.
          const double want = j < N ? 2.0 * x.getf(i * ld + j) : j < Ny ? 0.0 : -1.0;
          bad += y.getf(i * ldy + j) != want;
        }
      CHECK(bad == 0);
    }
  }
}

// ---- merged views of rank 6 and 7 tensors ---------------------------------------------------------------

TEST_CASE("merge views rank 6 and 7 tensors down to 5 TMA dimensions") {
  SUBCASE("rank 6 -> 5, tile loads and stores") {
    // [2, 3, 4, 5, 3, 8] f32, contiguous; merge dims 2 and 3 -> [2, 3, 20, 3, 8].
    const std::vector<int64_t> sz = {2, 3, 4, 5, 3, 8};
    int64_t n = 1;
    for (int64_t v : sz) n *= v;
    Buffer x(DType::f32, n), y(DType::f32, n);
    for (int64_t i = 0; i < n; ++i) x.setf(i, static_cast<double>(i));
    auto k = tilejit::kernel("merge6", [](dsl::Tensor<dsl::f32, 6> a, dsl::Tensor<dsl::f32, 6> b) {
      using namespace tilejit::dsl;
      auto ma = a.merge({1, 1, 2, 1, 1});
      auto mb = b.merge({1, 1, 2, 1, 1});
      auto t = descriptor_load(ma, {program_id(0), 0, program_id(1) * 7, 0, 0}, {1, 3, 7, 3, 8});
      descriptor_store(mb, {program_id(0), 0, program_id(1) * 7, 0, 0}, t + 1.0f);
    });
    tilejit::interp::run(*k.trace(Config{}), dim3(2, 3), std::vector<tilejit::KernelArg>{tensor_arg(x.arg(sz)), tensor_arg(y.arg(sz))});
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += y.getf(i) != x.getf(i) + 1.0;
    CHECK(bad == 0);
  }
  SUBCASE("rank 7 -> 3 with padded outer strides, compared with an element loop") {
    // [3, 2, 2, 3, 2, 5, 8] with padding after every [5, 8] block; merge {2, 3, 2}.
    const std::vector<int64_t> sz = {3, 2, 2, 3, 2, 5, 8};
    std::vector<int64_t> st(7);
    st[6] = 1;
    st[5] = 8;
    st[4] = 48;  // 5 * 8 = 40, padded to 48: dims 4 and 5 are not merged together
    st[3] = st[4] * 2;
    st[2] = st[3] * 3;
    st[1] = st[2] * 2 + 16;  // padding between dims 1 and 2 (not merged together either)
    st[0] = st[1] * 2;
    const int64_t ext = (3 - 1) * st[0] + st[0];
    Buffer x(DType::f32, ext), y(DType::f32, ext);
    for (int64_t i = 0; i < ext; ++i) {
      x.setf(i, static_cast<double>(i) * 0.5);
      y.setf(i, -7.0);
    }
    auto k = tilejit::kernel("merge7", [](dsl::Tensor<dsl::f32, 7> a, dsl::Tensor<dsl::f32, 7> b) {
      using namespace tilejit::dsl;
      auto ma = a.merge({2, 3, 2});  // groups {3, 2}, {2, 3, 2}, {5, 8}: sizes 6, 12, 40
      auto mb = b.merge({2, 3, 2});
      // The load starts at row -1 and innermost -4 or 4 (whole 16-byte units), hanging over the start or
      // the end; the store (no negative coordinates) starts at row 0 and innermost 0 or 4.
      auto c = program_id(1) % 2 * 8 - 4;
      auto t = descriptor_load(ma, {program_id(0) * 4 - 1, program_id(1) * 5, c}, {4, 5, 40});
      descriptor_store(mb, {program_id(0) * 4, program_id(1) * 5, program_id(1) % 2 * 4}, t);
    });
    // ma sizes: [3*2, 2*3*2, 5*8] = [6, 12, 40]; strides: [st[1], st[4], st[6]].
    tilejit::interp::run(*k.trace(Config{}), dim3(3, 3),
                         std::vector<tilejit::KernelArg>{tensor_arg(x.arg(sz, st)), tensor_arg(y.arg(sz, st))});
    // Reference: tile element (i, j, k) comes from (p0 * 4 - 1 + i, p1 * 5 + j, c0 + k) of the merged view
    // of x (zero outside it) and goes to (p0 * 4 + i, p1 * 5 + j, c1 + k) of y's, if that is inside.
    std::vector<double> want(static_cast<size_t>(ext), -7.0);
    auto off = [&](int64_t a, int64_t b, int64_t c) { return a * st[1] + b * st[4] + c; };
    for (int64_t p0 = 0; p0 < 3; ++p0)
      for (int64_t p1 = 0; p1 < 3; ++p1) {
        const int64_t c0 = p1 % 2 * 8 - 4, c1 = p1 % 2 * 4;
        for (int64_t i = 0; i < 4; ++i)
          for (int64_t j = 0; j < 5; ++j)
            for (int64_t k = 0; k < 40; ++k) {
              const int64_t sa = p0 * 4 - 1 + i, sb = p1 * 5 + j, sc = c0 + k, da = p0 * 4 + i, db = sb, dc = c1 + k;
              if (da >= 6 || db >= 12 || dc >= 40) continue;
              const bool in = sa >= 0 && sa < 6 && sb < 12 && sc >= 0 && sc < 40;
              want[static_cast<size_t>(off(da, db, dc))] = in ? x.getf(off(sa, sb, sc)) : 0.0;
            }
      }
    int64_t bad = 0;
    for (int64_t i = 0; i < ext; ++i) bad += y.getf(i) != want[static_cast<size_t>(i)];
    CHECK(bad == 0);
  }
  SUBCASE("a non-contiguous merge names the dimensions") {
    const std::vector<int64_t> sz = {2, 2, 2, 3, 2, 8};
    std::vector<int64_t> st = {0, 0, 0, 0, 8 + 8, 1};  // dim 4 padded: 16 != 8 * 1? stride[4] = 16, size[5] * stride[5] = 8
    st[3] = st[4] * 2;
    st[2] = st[3] * 3;
    st[1] = st[2] * 2;
    st[0] = st[1] * 2;
    Buffer x(DType::f32, st[0] * 2);
    auto k = tilejit::kernel("merge_bad", [](dsl::Tensor<dsl::f32, 6> a) {
      using namespace tilejit::dsl;
      auto m = a.merge({1, 1, 1, 1, 2});
      prefetch_descriptor(m, {1, 1, 1, 1, 8});
    });
    expect_user_error(
        [&] { tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(x.arg(sz, st))}); },
        {"merge: dimensions 4 and 5 of arg0 are not contiguous", "stride[4] = 16", "= 8", "test_tma.cpp:"});
  }
}

// ---- descriptor arrays ----------------------------------------------------------------------------------

TEST_CASE("TensorArray::at: every prefetch mode takes the same element (a prefetch is only a hint)") {
  std::vector<Buffer> in;
  tilejit::KernelArg ain, aout;
  ain.kind = aout.kind = tilejit::KernelArg::TensorArray;
  for (int i = 0; i < 2; ++i) {
    in.emplace_back(DType::f32, 16);
    for (int64_t k = 0; k < 16; ++k) in.back().setf(k, static_cast<double>(k) + 100.0 * i);
    ain.array.push_back(in.back().arg({4, 4}, {4, 1}));
  }
  Buffer out(DType::f32, 2 * 16);
  auto k = tilejit::kernel("array_modes", [](dsl::TensorArray<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 2> y) {
    using namespace tilejit::dsl;
    auto i = program_id(0);
    auto t = descriptor_load(a.at(i, Prefetch::none), {0, 0}, {4, 4}) + descriptor_load(a.at(i, Prefetch::l2), {0, 0}, {4, 4});
    descriptor_store(y, {i * 4, 0}, t + descriptor_load(a[i], {0, 0}, {4, 4}));
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(2), std::vector<tilejit::KernelArg>{ain, tensor_arg(out.arg({8, 4}, {4, 1}))});
  int64_t bad = 0;
  for (int i = 0; i < 2; ++i)
    for (int64_t e = 0; e < 16; ++e) bad += out.getf(i * 16 + e) != 3.0 * in[static_cast<size_t>(i)].getf(e);
  CHECK(bad == 0);
}

TEST_CASE("TensorArray elements chosen by a runtime index") {
  // Three tensors of different shapes; program i doubles tensor i into output i.
  const std::vector<std::array<int64_t, 2>> shapes = {{5, 8}, {9, 12}, {3, 4}};
  std::vector<Buffer> in, out;
  tilejit::KernelArg ain, aout;
  ain.kind = aout.kind = tilejit::KernelArg::TensorArray;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int64_t ld = (shapes[i][1] + 3) / 4 * 4;
    in.emplace_back(DType::f32, shapes[i][0] * ld);
    out.emplace_back(DType::f32, shapes[i][0] * ld);
    for (int64_t k = 0; k < in.back().size(); ++k) in.back().setf(k, static_cast<double>(k) + 100.0 * static_cast<double>(i));
    ain.array.push_back(in.back().arg({shapes[i][0], shapes[i][1]}, {ld, 1}));
    aout.array.push_back(out.back().arg({shapes[i][0], shapes[i][1]}, {ld, 1}));
  }
  auto k = tilejit::kernel("arrays", [](dsl::TensorArray<dsl::f32, 2> a, dsl::TensorArray<dsl::f32, 2> b, dsl::Scalar<dsl::i32> first) {
    using namespace tilejit::dsl;
    auto idx = program_id(0) + first;
    auto src = a[idx];
    auto dst = b[idx];
    for_range(0, 3, 1, [&](Scalar<i32> r) {
      for_range(0, 3, 1, [&](Scalar<i32> c) {
        auto t = descriptor_load(src, {r * 4, c * 4}, {4, 4});
        descriptor_store(dst, {r * 4, c * 4}, t * 2.0f);
      });
    });
  });
  const auto g = k.trace(Config{});
  SUBCASE("all elements") {
    tilejit::interp::run(*g, dim3(3), std::vector<tilejit::KernelArg>{ain, aout, scalar_arg(DType::i32, 0)});
    for (size_t i = 0; i < shapes.size(); ++i) {
      const int64_t ld = (shapes[i][1] + 3) / 4 * 4;
      int64_t bad = 0;
      for (int64_t r = 0; r < shapes[i][0]; ++r)
        for (int64_t c = 0; c < ld; ++c) {
          const double want = (r < 12 && c < std::min<int64_t>(12, shapes[i][1])) ? 2.0 * in[i].getf(r * ld + c) : 0.0;
          bad += out[i].getf(r * ld + c) != want;
        }
      CHECK(bad == 0);
    }
  }
  SUBCASE("an index past the end is a UserError") {
    expect_user_error([&] { tilejit::interp::run(*g, dim3(3), std::vector<tilejit::KernelArg>{ain, aout, scalar_arg(DType::i32, 1)}); },
                      {"tensor array index out of range (arg0)", "index 3", "0..2", "program (2, 0, 0)"});
  }
  SUBCASE("an element of the wrong type is refused before running") {
    tilejit::KernelArg bad = ain;
    bad.array[1].dtype = DType::f16;
    expect_user_error([&] { tilejit::interp::run(*g, dim3(3), std::vector<tilejit::KernelArg>{bad, aout, scalar_arg(DType::i32, 0)}); },
                      {"argument 0 (arg0) element 1 has the wrong element type"});
  }
}

// ---- jagged sequences --------------------------------------------------------------------------

namespace {
auto jagged_kernel() {
  return tilejit::kernel("jagged_scale", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 2> y, dsl::Tensor<dsl::i64, 1> offsets,
                                            dsl::Scalar<dsl::f32> alpha, dsl::Meta<"BM"> BM, dsl::Meta<"D"> D) {
    using namespace tilejit::dsl;
    auto seq = program_id(1);
    auto start = load(offsets, seq);
    auto end = load(offsets, seq + 1);
    auto xs = x.rows(start, end);
    auto ys = y.rows(start, end);
    auto m = program_id(0) * BM;
    if_then(m.to<int64_t>() < end - start, [&] {
      auto t = descriptor_load(xs, {m, 0}, {BM, D});
      descriptor_store(ys, {m, 0}, t * alpha);
    });
  });
}
}  // namespace

TEST_CASE("jagged sequences: per-sequence row views, zero fill past each end, other sequences untouched") {
  const int64_t D = 8, BM = 4;
  const std::vector<int64_t> lens = {5, 0, 9, 1, 4, 7};
  std::vector<int64_t> offs = {0};
  for (int64_t l : lens) offs.push_back(offs.back() + l);
  const int64_t total = offs.back();
  Buffer x(DType::f32, total * D), y(DType::f32, total * D), o(DType::i64, static_cast<int64_t>(offs.size()));
  for (int64_t i = 0; i < x.size(); ++i) {
    x.setf(i, static_cast<double>(i) + 1.0);
    y.setf(i, -3.0);
  }
  for (size_t i = 0; i < offs.size(); ++i) o.seti(static_cast<int64_t>(i), offs[i]);
  auto k = jagged_kernel();
  const int64_t max_len = *std::max_element(lens.begin(), lens.end());
  const Config cfg{{"BM", BM}, {"D", D}};
  SUBCASE("scale every sequence") {
    tilejit::KernelArg config_arg;
    config_arg.kind = tilejit::KernelArg::Config;
    tilejit::interp::run(*k.trace(cfg), dim3(static_cast<uint32_t>(tilejit::cdiv(max_len, BM)), static_cast<uint32_t>(lens.size())),
                         std::vector<tilejit::KernelArg>{tensor_arg(x.arg({total, D})), tensor_arg(y.arg({total, D})),
                                                         tensor_arg(o.arg1()), scalar_arg(DType::f32, 2.5), config_arg, config_arg});
  }
  SUBCASE("through interpret() and TensorView") {
    k.interpret(dim3(static_cast<uint32_t>(tilejit::cdiv(max_len, BM)), static_cast<uint32_t>(lens.size())), cfg,
                tilejit::TensorView<float, 2>(x.data(), {total, D}), tilejit::TensorView<float, 2>(y.data(), {total, D}),
                tilejit::TensorView<int64_t, 1>(o.data(), {static_cast<int64_t>(offs.size())}), 2.5f);
  }
  // Every row belongs to exactly one sequence and is scaled once.
  int64_t bad = 0;
  for (int64_t i = 0; i < x.size(); ++i) bad += y.getf(i) != static_cast<double>(static_cast<float>(2.5 * x.getf(i)));
  CHECK(bad == 0);
}

TEST_CASE("jagged: rows past the sequence end read zero, stores past it are dropped") {
  const int64_t D = 8;
  Buffer x(DType::f32, 10 * D), y(DType::f32, 10 * D), o(DType::i64, 3);
  for (int64_t i = 0; i < x.size(); ++i) {
    x.setf(i, static_cast<double>(i) + 1.0);
    y.setf(i, -3.0);
  }
  o.seti(0, 0);
  o.seti(1, 3);  // sequence 0: rows 0..2, sequence 1: rows 3..9
  o.seti(2, 10);
  // Each sequence loads a box of 4 rows at row 0 of its view and stores it back shifted by one row,
  // so rows at and past the end of a sequence must read 0 and must not be written.
  auto k = tilejit::kernel("jagged_edges", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 2> b, dsl::Tensor<dsl::i64, 1> offsets) {
    using namespace tilejit::dsl;
    auto seq = program_id(0);
    auto start = load(offsets, seq);
    auto end = load(offsets, seq + 1);
    auto t = descriptor_load(a.rows(start, end), {1, 0}, {4, 8});
    descriptor_store(b.rows(start, end), {0, 0}, t + 100.0f);
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(2),
                       std::vector<tilejit::KernelArg>{tensor_arg(x.arg({10, D})), tensor_arg(y.arg({10, D})), tensor_arg(o.arg1())});
  auto want = [&](int64_t row, int64_t col) -> double {
    const int64_t start = row < 3 ? 0 : 3, end = row < 3 ? 3 : 10;
    const int64_t local = row - start;
    if (local >= 4) return -3.0;  // outside the stored box
    const int64_t src = local + 1;
    if (src + start >= end) return 100.0;  // zero fill past the sequence end, plus 100
    return x.getf((src + start) * D + col) + 100.0;
  };
  int64_t bad = 0;
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < D; ++c) bad += y.getf(r * D + c) != want(r, c);
  CHECK(bad == 0);
}

namespace {
// A kernel that stores a 2 x 8 tile of zeros at row 0 of a.rows(offsets[0], offsets[1]), and one program of
// a kernel over a [10, 8] f32 tensor and a tensor of two row offsets.
auto zeros_into_rows(const std::string& name) {
  return tilejit::kernel(name, [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::i64, 1> offsets) {
    using namespace tilejit::dsl;
    // Copy-initialised: Scalar<i32>(0) would select Value's explicit NodeId constructor.
    const Scalar<i32> first = 0, second = 1;
    descriptor_store(a.rows(load(offsets, first), load(offsets, second)), {0, 0}, zeros<float>({2, 8}));
  });
}
template <class K>
void run_rows_kernel(const K& k, Buffer& x, Buffer& o) {
  tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(x.arg({10, 8})), tensor_arg(o.arg1())});
}
}  // namespace

TEST_CASE("a view reaching outside its argument is a UserError for TMA and pointer access") {
  Buffer x(DType::f32, 10 * 8), o(DType::i64, 2);
  o.seti(0, 6);
  o.seti(1, 12);  // rows 6..11 of a 10-row tensor
  SUBCASE("TMA") {
    auto k = zeros_into_rows("view_oob");
    expect_user_error([&] { run_rows_kernel(k, x, o); },
        {"descriptor_store", "a view of arg0 reaches outside the tensor argument"});
  }
  SUBCASE("pointer") {
    auto k = tilejit::kernel("view_oob_ptr", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::i64, 1> offsets) {
      using namespace tilejit::dsl;
      // Copy-initialised: Scalar<i32>(0) would select Value's explicit NodeId constructor.
      const Scalar<i32> first = 0, second = 1;
      auto v = a.rows(load(offsets, first), load(offsets, second));
      store(v, arange(0, 48), 1.0f);  // the view's extent is 48 elements but only 32 exist
    });
    expect_user_error([&] { run_rows_kernel(k, x, o); },
        {"store: unmasked access outside a view of arg0", "element offset 32", "offsets 0..31"});
    for (int64_t i = 0; i < x.size(); ++i) REQUIRE(x.getf(i) == 0.0);  // a failing store writes nothing
  }
}

TEST_CASE("rows(start, end) with end before start, and make_view with a negative size, are UserErrors naming them") {
  Buffer x(DType::f32, 10 * 8), o(DType::i64, 2);
  o.seti(0, 7);
  o.seti(1, 3);  // end before start
  SUBCASE("rows") {
    auto k = zeros_into_rows("rows_backwards");
    expect_user_error([&] { run_rows_kernel(k, x, o); },
        {"test_tma.cpp:", "rows(start, end): end is before start", "start 7, end 3", "in program (0, 0, 0)", "end >= start"});
  }
  SUBCASE("make_view") {
    auto k = tilejit::kernel("view_negative", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::i64, 1> offsets) {
      using namespace tilejit::dsl;
      const Scalar<i32> first = 0, second = 1;
      auto n = load(offsets, second) - load(offsets, first);
      auto v = make_view(a, 0, {n, Index(8)}, {Index(8), Index(1)});
      descriptor_store(v, {0, 0}, zeros<float>({2, 8}));
    });
    expect_user_error([&] { run_rows_kernel(k, x, o); },
        {"make_view: the size of dimension 0 is negative", "-4", ">= 0"});
  }
  for (int64_t i = 0; i < x.size(); ++i) REQUIRE(x.getf(i) == 0.0);
}

TEST_CASE("an empty view (rows(s, s)) is legal until a TMA operation uses it") {
  Buffer x(DType::f32, 10 * 8), o(DType::i64, 2);
  o.seti(0, 4);
  o.seti(1, 4);
  auto k = tilejit::kernel("rows_empty", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::i64, 1> offsets, dsl::Scalar<dsl::i32> use) {
    using namespace tilejit::dsl;
    const Scalar<i32> first = 0, second = 1;
    auto v = a.rows(load(offsets, first), load(offsets, second));
    if_then(use != 0, [&] { descriptor_store(v, {0, 0}, zeros<float>({2, 8})); });
  });
  const auto run = [&](int use) {
    tilejit::interp::run(*k.trace(Config{}), dim3(1),
                         std::vector<tilejit::KernelArg>{tensor_arg(x.arg({10, 8})), tensor_arg(o.arg1()), scalar_arg(DType::i32, use)});
  };
  run(0);
  expect_user_error([&] { run(1); }, {"TMA tensor size out of range", "0", "1..2^31"});
}

TEST_CASE("a grid with a zero dimension is a UserError, also in the interpreter") {
  Buffer x(DType::f32, 8);
  auto k = tilejit::kernel("grid_zero", [](dsl::Tensor<dsl::f32, 1> a) { dsl::store(a, dsl::arange(0, 8), 1.0f); });
  for (const dim3 grid : {dim3(0), dim3(1, 0), dim3(2, 1, 0)})
    expect_user_error([&] { tilejit::interp::run(*k.trace(Config{}), grid, std::vector<tilejit::KernelArg>{tensor_arg(x.arg1())}); },
                      {"of kernel 'grid_zero' is zero", "1.."});
  expect_user_error([&] { tilejit::interp::run(*k.trace(Config{}), dim3(1, 65536), std::vector<tilejit::KernelArg>{tensor_arg(x.arg1())}); },
                    {"grid.y of kernel 'grid_zero' is too large", "65536", "65535"});
  for (int64_t i = 0; i < x.size(); ++i) REQUIRE(x.getf(i) == 0.0);
}

TEST_CASE("make_view: a strided sub-matrix through TMA") {
  // View every other row of a [12, 8] matrix starting at row 1: sizes [6, 8], strides [16, 1].
  Buffer x(DType::f32, 12 * 8), y(DType::f32, 6 * 8);
  for (int64_t i = 0; i < x.size(); ++i) x.setf(i, static_cast<double>(i));
  auto k = tilejit::kernel("make_view", [](dsl::Tensor<dsl::f32, 2> a, dsl::Tensor<dsl::f32, 2> b) {
    using namespace tilejit::dsl;
    auto v = make_view(a, a.stride(0), {Index(6), Index(a.size(1))}, {Index(a.stride(0) * 2), Index(1)});
    descriptor_store(b, {0, 0}, descriptor_load(v.with_placement(Placement::device), {0, 0}, {8, 8}));
  });
  tilejit::interp::run(*k.trace(Config{}), dim3(1), std::vector<tilejit::KernelArg>{tensor_arg(x.arg({12, 8})), tensor_arg(y.arg({6, 8}))});
  int64_t bad = 0;
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t c = 0; c < 8; ++c) bad += y.getf(r * 8 + c) != x.getf((2 * r + 1) * 8 + c);
  CHECK(bad == 0);
}
