// Shared-memory tiles and their bank-conflict cost model (see shared_layout.h): tile addresses, bank conflicts of
// a warp's accesses, and the swizzle, padding and write split that the planner chooses from them.
#include "tilejit/layout/shared_layout.h"

#include <algorithm>
#include <map>
#include <set>

namespace tilejit::layout {

int64_t SharedLayout::offset(const std::array<int64_t, ir::kMaxRank>& c) const {
  const int r = shape.rank;
  int64_t row = 0;
  for (int d = 0; d + 1 < r; ++d) row = row * shape.dims[d] + c[static_cast<size_t>(d)];
  const int64_t inner = r ? shape.dims[r - 1] + pad_elems : 1;
  int64_t col = r ? c[static_cast<size_t>(r - 1)] : 0;
  if (xor_unit > 0) col = ((col / xor_unit) ^ ((row / xor_div) % xor_mod)) * xor_unit + col % xor_unit;
  int64_t byte = (row * inner + col) * elem_bytes;
  if (swizzle_bytes > 0 && inner * elem_bytes > swizzle_bytes) {
    // Pieces as wide as the swizzle, one after another (how TMA writes a box it loads piece by piece).
    const int64_t piece = swizzle_bytes / elem_bytes, rows = row_count();
    byte = (col / piece) * rows * swizzle_bytes + row * swizzle_bytes + (col % piece) * elem_bytes;
  }
  if (swizzle_bytes > 0) {
    // 16-byte unit bits [4, 4 + b) are XORed with the bits of the 128-byte row [7, 7 + b), b = log2(swizzle / 16).
    const int64_t mask = swizzle_bytes / 16 - 1;
    byte ^= ((byte >> 7) & mask) << 4;
  }
  return byte;
}

int64_t SharedLayout::row_count() const {
  int64_t rows = 1;
  for (int d = 0; d + 1 < shape.rank; ++d) rows *= shape.dims[d];
  return rows;
}

int64_t SharedLayout::bytes() const {
  return row_count() * ((shape.rank ? shape.dims[shape.rank - 1] : 1) + pad_elems) * elem_bytes;
}

int bank_conflicts(const Layout& l, const SharedLayout& s, int reg, int vec) {
  const int width = vec * s.elem_bytes;
  const int per_phase = width >= 16 ? 8 : width == 8 ? 16 : 32;
  int worst = 1;
  for (int phase = 0; phase < kLanes / per_phase; ++phase) {
    std::map<int64_t, std::set<int64_t>> words;  // bank -> distinct words
    for (int lane = phase * per_phase; lane < (phase + 1) * per_phase; ++lane) {
      const auto c = l.coord(reg, lane, 0);
      if (!l.inside(c)) continue;
      const int64_t a = s.offset(c);
      for (int64_t w = a / 4; w <= (a + width - 1) / 4; ++w) words[w % 32].insert(w);
    }
    for (const auto& [bank, ws] : words) worst = std::max(worst, static_cast<int>(ws.size()));
  }
  return worst;
}

int staging_swizzle(const Layout& l, int elem_bytes) {
  const ir::Shape& s = l.shape();
  if (s.rank < 2) return 0;
  for (int d = 0; d + 1 < s.rank; ++d)
    if (s.dims[d] > 256) return 0;
  const int vec = l.vector_width();
  auto cost = [&](int swizzle) {
    const SharedLayout tile{s, elem_bytes, swizzle, 0};
    int64_t total = 0;
    for (int r = 0; r < l.regs(); r += vec) total += bank_conflicts(l, tile, r, vec);
    return total;
  };
  const int64_t inner_bytes = s.dims[s.rank - 1] * elem_bytes;
  int best = 0;
  int64_t best_cost = cost(0);
  for (int swizzle : {128, 64, 32}) {  // widest first: a tie keeps the one with fewer pieces
    if (inner_bytes % swizzle != 0 || vec * elem_bytes > 16) continue;
    if (const int64_t c = cost(swizzle);
        c < best_cost && split_swizzled_writes(l, SharedLayout{s, elem_bytes, swizzle, 0}).per_thread_xor)
      best = swizzle, best_cost = c;
  }
  return best;
}

namespace {
/// Elements per access of a layout's copies through a staged tile: its vectors, at most 16 bytes (lds / sts split
/// longer ones).
int access_width(const Layout& l, int elem_bytes) { return std::min(l.vector_width(), std::max(1, 16 / elem_bytes)); }

/// Bank conflicts of `src`'s writes plus `dst`'s reads through `tile`, summed over the register groups of warp 0.
int64_t staging_cost(const Layout& src, const Layout& dst, const SharedLayout& tile) {
  const int vs = access_width(src, tile.elem_bytes), vd = access_width(dst, tile.elem_bytes);
  int64_t total = 0;
  for (int r = 0; r < src.regs(); r += vs) total += bank_conflicts(src, tile, r, vs);
  for (int r = 0; r < dst.regs(); r += vd) total += bank_conflicts(dst, tile, r, vd);
  return total;
}
}  // namespace

int conversion_padding(const Layout& src, const Layout& dst, int elem_bytes) {
  const ir::Shape& s = src.shape();
  if (s.rank < 2) return 0;
  // Pad by whole accesses: both sides' accesses stay aligned in padded rows.
  const int64_t unit = std::max(access_width(src, elem_bytes), access_width(dst, elem_bytes));
  if (s.dims[s.rank - 1] % unit != 0) return 0;
  int64_t best = 0, best_cost = staging_cost(src, dst, SharedLayout{s, elem_bytes, 0, 0});
  for (int64_t k : {1, 2, 4})
    if (const int64_t c = staging_cost(src, dst, SharedLayout{s, elem_bytes, 0, static_cast<int>(k * unit)}); c < best_cost)
      best = k * unit, best_cost = c;
  return static_cast<int>(best);
}

SharedLayout staging_layout(const Layout& src, const Layout& dst, int elem_bytes) {
  const ir::Shape& s = src.shape();
  SharedLayout best{s, elem_bytes, 0, conversion_padding(src, dst, elem_bytes)};
  if (s.rank < 2) return best;
  const int vs = access_width(src, elem_bytes), vd = access_width(dst, elem_bytes), unit = std::max(vs, vd);
  int64_t best_cost = staging_cost(src, dst, best);
  const int64_t conflict_free = (src.regs() + vs - 1) / vs + (dst.regs() + vd - 1) / vd;  // one per access
  if (best_cost == conflict_free || s.dims[s.rank - 1] % unit != 0) return best;
  const int64_t units = s.dims[s.rank - 1] / unit;
  for (int div = 1; div <= 32; div *= 2)
    for (int mod = 2; mod <= 32 && units % mod == 0; mod *= 2) {
      SharedLayout t{s, elem_bytes, 0, 0};
      t.xor_unit = unit, t.xor_div = div, t.xor_mod = mod;
      if (const int64_t c = staging_cost(src, dst, t); c < best_cost) best = t, best_cost = c;
    }
  return best;
}

SwizzledWrites split_swizzled_writes(const Layout& l, const SharedLayout& s) {
  SwizzledWrites w;
  const ir::Shape& shape = l.shape();
  const int r = shape.rank;
  int64_t stride = 1;
  for (int d = r - 1; d >= 0; --d) {
    for (Term t : l.coord_terms(d)) {
      t.mul *= d == r - 1 ? 1 : stride;
      auto& dst = d == r - 1 ? (t.axis == Axis::Reg ? w.col_reg : w.col_thread) : (t.axis == Axis::Reg ? w.row_reg : w.row_thread);
      dst.push_back(t);
    }
    if (d < r - 1) stride *= shape.dims[d];
  }
  if (s.swizzle_bytes == 0 || s.pad_elems != 0 || r < 1) return w;
  const int64_t sw = s.swizzle_bytes, eb = s.elem_bytes, piece = sw / eb, rows = s.row_count();
  const int64_t mask = sw / 16 - 1;
  const int vec = l.vector_width();
  // A coordinate is the sum of its register, lane and warp parts: computed once per index, added per element.
  using Coord = std::array<int64_t, ir::kMaxRank>;
  std::vector<Coord> by_reg, by_lane, by_warp;
  std::vector<int64_t> row_of_reg, col_of_reg;
  for (int reg = 0; reg < l.regs(); reg += vec) {
    by_reg.push_back(l.coord(reg, 0, 0));
    row_of_reg.push_back(evaluate(w.row_reg, reg));
    col_of_reg.push_back(evaluate(w.col_reg, reg));
  }
  for (int lane = 0; lane < kLanes; ++lane) by_lane.push_back(l.coord(0, lane, 0));
  for (int warp = 0; warp < l.warps(); ++warp) by_warp.push_back(l.coord(0, 0, warp));
  auto holds = [&](bool in_xor) {
    for (int warp = 0; warp < l.warps(); ++warp)
      for (int lane = 0; lane < kLanes; ++lane) {
        const int64_t rt = evaluate(w.row_thread, 0, lane, warp), ct = evaluate(w.col_thread, 0, lane, warp) * eb;
        const int64_t x = (((rt * sw) >> 7) & mask) << 4;
        for (int reg = 0; reg < l.regs(); reg += vec) {
          Coord c{};
          for (int d = 0; d < r; ++d)
            c[static_cast<size_t>(d)] = by_reg[static_cast<size_t>(reg / vec)][static_cast<size_t>(d)] +
                                        by_lane[static_cast<size_t>(lane)][static_cast<size_t>(d)] +
                                        by_warp[static_cast<size_t>(warp)][static_cast<size_t>(d)];
          if (!l.inside(c)) continue;
          const int64_t ri = row_of_reg[static_cast<size_t>(reg / vec)], ci = col_of_reg[static_cast<size_t>(reg / vec)];
          const int64_t split = rt * sw + (ci / piece) * rows * sw + ri * sw + (((ci % piece) * eb + (in_xor ? ct : 0)) ^ x) +
                                (in_xor ? 0 : ct);
          if (split != s.offset(c)) return false;
        }
      }
    return true;
  };
  if (holds(false)) {
    w.per_thread_xor = true;
  } else if (holds(true)) {
    w.per_thread_xor = w.col_thread_in_xor = true;
  }
  return w;
}

}  // namespace tilejit::layout
