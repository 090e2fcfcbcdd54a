// Shared-memory tiles (SharedLayout: an address function with TMA / wgmma swizzles, row padding or a scratch
// swizzle) and the bank-conflict cost model that chooses how threads of a register layout (layout.h) write and
// read them: the swizzle of a stored tile, the padding or swizzle of a tile staged through the scratch arena,
// and the address split of swizzled writes.
//
// Used by: passes::collect_descriptors (staging_swizzle), passes::allocate_shared (staging_layout,
// split_swizzled_writes), and the emitter, which prints the addresses.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tilejit/ir/ir.h"
#include "tilejit/layout/layout.h"

namespace tilejit::layout {

/// A shared-memory tile: row-major elements with an optional XOR swizzle of
/// 16-byte units (the TMA / wgmma swizzle modes) and optional padding per row.
/// A swizzled tile whose rows are wider than the swizzle is stored as pieces as
/// wide as the swizzle, one after another, each holding every row (how TMA
/// writes, or reads, a box that is cut into swizzle-wide boxes).
/// A tile staged through the scratch arena may instead swizzle units of `xor_unit` elements within
/// its rows: unit u of row r is stored as unit u ^ ((r / xor_div) % xor_mod) (tj::xor_index).
struct SharedLayout {
  ir::Shape shape;
  int elem_bytes = 4;
  int swizzle_bytes = 0;  ///< 0 (none), 32, 64 or 128
  int pad_elems = 0;      ///< extra elements after each innermost row (bank-conflict padding)
  int xor_unit = 0;       ///< elements per unit of the scratch swizzle; 0: none
  int xor_div = 1, xor_mod = 1;
  /// Byte offset of the element at `c`.
  int64_t offset(const std::array<int64_t, ir::kMaxRank>& c) const;
  int64_t bytes() const;
  int64_t row_count() const;  ///< rows: the product of every dimension but the innermost
};

/// Shared-memory bank conflicts of one warp-wide access: the largest number of
/// distinct 4-byte words that one bank serves, over the 32 lanes of warp 0
/// reading register group `reg` (a `vec`-element vector) of `l` through `s`.
/// 1 means conflict-free (for vectors wider than 4 bytes, the hardware splits
/// the access into phases of 128 bytes; this counts per phase).
int bank_conflicts(const Layout& l, const SharedLayout& s, int reg, int vec);

/// The swizzle (bytes; 0 for none) under which the threads of `l` write their elements, `elem_bytes`
/// each, into a shared-memory tile of l's shape with the fewest bank conflicts, summed over every
/// register group of warp 0. Only swizzles TMA can move such a tile with are considered: inner rows a
/// multiple of the swizzle wide (stored as swizzle-wide pieces), other dimensions at most 256, and
/// whose XOR depends on the thread alone (split_swizzled_writes), so that generated code adds a
/// constant per register. Ties go to no swizzle (one TMA operation instead of several).
int staging_swizzle(const Layout& l, int elem_bytes);

/// The padding (elements after each innermost row) of the row-major tile through which a layout
/// conversion from `src` to `dst` passes: the fewest bank conflicts of src's vector writes plus dst's
/// vector reads (bank_conflicts per access of at most 16 bytes, summed over every register group of
/// warp 0), over no padding and paddings of 1, 2 and 4 times the wider access (so that both sides'
/// accesses stay aligned); ties go to the smaller padding. 0 for rank-1 tiles and rows that are not a whole number of vectors.
int conversion_padding(const Layout& src, const Layout& dst, int elem_bytes);

/// The layout of the tile through which values move from `src` to `dst` (a layout conversion; for a
/// permute, `dst` is its permute_sources): conversion_padding's padding, or, when that leaves
/// conflicts, an XOR swizzle of units as wide as the wider access (so both sides' vectors stay whole)
/// whose key (row / div) % mod separates the rows one warp's lanes read together, if it has fewer
/// (bank_conflicts of src's writes plus dst's reads, summed over the register groups of warp 0).
SharedLayout staging_layout(const Layout& src, const Layout& dst, int elem_bytes);

/// The writes of `l` into the swizzled tile `s`, split for cheap address arithmetic: the tile row
/// (outer dimensions flattened) and column of each element as a register part plus a thread part
/// (lane and warp terms). `per_thread_xor` is true when, for every element,
///   offset = row_thread * swizzle + (col_reg / piece) * rows * swizzle + row_reg * swizzle
///          + (((col_reg % piece) * elem_bytes + inner) ^ xor(row_thread)) + outer,
///   xor(r) = (((r * swizzle) >> 7) & (swizzle / 16 - 1)) << 4,  piece = swizzle / elem_bytes,
/// with the thread's column bytes (col_thread * elem_bytes) either outside the XOR (`outer`; when
/// they stay inside a 16-byte unit) or inside it (`inner`; `col_thread_in_xor`), i.e. the swizzle's
/// XOR depends on the thread alone and every register adds a constant (checked element by element,
/// as SharedLayout::offset computes it).
struct SwizzledWrites {
  std::vector<Term> row_reg, row_thread, col_reg, col_thread;
  bool per_thread_xor = false;
  bool col_thread_in_xor = false;
};
SwizzledWrites split_swizzled_writes(const Layout& l, const SharedLayout& s);

}  // namespace tilejit::layout
