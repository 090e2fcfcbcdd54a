// Register layouts (jit/layout): blocked layouts, slices, unit reshapes, broadcasts, reduction groups,
// shared-memory bank conflicts, and the layout pass's conflict resolution.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tilejit/layout/layout.h"
#include "tilejit/layout/shared_layout.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/tilejit.h"

using namespace tilejit::layout;
using tilejit::ir::Shape;

namespace {

/// Every element of the shape is held by some register, and no register holds the same element twice
/// within one thread group that is not replicated (checked by counting owners).
void check_covers(const Layout& l, bool replicated_ok) {
  std::map<std::array<int64_t, tilejit::ir::kMaxRank>, int> held;
  for (int w = 0; w < l.warps(); ++w)
    for (int lane = 0; lane < kLanes; ++lane)
      for (int r = 0; r < l.regs(); ++r) {
        const auto c = l.coord(r, lane, w);
        if (l.inside(c)) ++held[c];
      }
  CHECK(static_cast<int64_t>(held.size()) == l.shape().numel());
  if (!replicated_ok)
    for (const auto& [c, n] : held) CHECK(n == 1);
}

}  // namespace

TEST_CASE("blocked layouts: vectors along the innermost dimension, lanes then warps outwards, registers repeat") {
  const Layout a = blocked(Shape{16, 128}, 4, 4);
  CHECK(a.str() == "[16, 128] reg d1x4, reg d0x4(s4), lane d1x32(s4), warp d0x4");
  CHECK(a.regs() == 16);
  CHECK(a.vector_width() == 4);
  CHECK(!a.padded());
  // Register 5 of lane 3 in warp 2: vector digit 1, row repeat 1 -> (2 + 4, 1 + 12).
  const auto c = a.coord(5, 3, 2);
  CHECK(c[0] == 6);
  CHECK(c[1] == 13);
  check_covers(a, false);

  const Layout row = blocked(Shape{1, 4096}, 4, 4);
  CHECK(row.str() == "[1, 4096] reg d1x4, reg d1x8(s512), lane d1x32(s4), warp d1x4(s128)");
  check_covers(row, false);

  // Odd extents pad: 3 x 100 f32 over 4 warps.
  const Layout odd = blocked(Shape{3, 100}, 4, 4);
  CHECK(odd.padded());
  CHECK(odd.padded_dims() == std::vector<int>{0, 1});
  check_covers(odd, false);
  for (int warps : {1, 2, 4, 8, 16})
    for (Shape s : {Shape{7}, Shape{4096}, Shape{5, 33}, Shape{3, 5, 7}, Shape{2, 4, 4, 8}, Shape{1, 300}, Shape{64, 3}}) {
      const int vec = choose_vector(s, 4, warps);
      CAPTURE(s.str());
      CAPTURE(warps);
      check_covers(blocked(s, vec, warps), false);
    }
}

TEST_CASE("choose_vector: 16 bytes when the innermost extent allows and every thread gets a vector") {
  CHECK(choose_vector(Shape{64, 64}, 8, 4) == 8);
  CHECK(choose_vector(Shape{2, 64}, 4, 4) == 1);    // 128 elements, 128 threads
  CHECK(choose_vector(Shape{16, 6}, 4, 1) == 2);    // 6 is not a multiple of 4
  CHECK(choose_vector(Shape{1, 4096}, 4, 16) == 4);
}

TEST_CASE("slice: the reduced dimension's registers go, its lanes and warps replicate") {
  const Layout a = blocked(Shape{16, 128}, 4, 4);
  const Layout rows = slice(a, 1);
  CHECK(rows.str() == "[16] reg d0x4(s4), lane repx32, warp d0x4");
  CHECK(rows.regs() == 4);
  CHECK(rows.replicated());
  check_covers(rows, true);
  // Every lane of a warp holds the same rows: the result of combining a row's lanes.
  for (int r = 0; r < 4; ++r) CHECK(rows.coord(r, 0, 1) == rows.coord(r, 31, 1));
  const Layout cols = slice(a, 0);
  CHECK(cols.str() == "[128] reg d0x4, lane d0x32(s4), warp repx4");
  CHECK(cols.replica_terms().size() == 1);

  const auto groups = reduction_groups(a, 1);
  REQUIRE(groups.size() == 4);
  CHECK(groups[1] == std::vector<int>{4, 5, 6, 7});  // row repeat 1: the four vector elements
  const auto g0 = reduction_groups(a, 0);
  REQUIRE(g0.size() == 4);
  CHECK(g0[2] == std::vector<int>{2, 6, 10, 14});
  CHECK(plan_reduction(a, 0, false).warps == 4);
  CHECK(plan_reduction(a, 1, false).warps == 1);
}

TEST_CASE("unit reshapes keep the registers; broadcasts are free from the unbroadcast layout") {
  const Layout a = blocked(Shape{16, 128}, 4, 4);
  const Layout rows = slice(a, 1);
  const auto col = reshape_units(rows, Shape{16, 1});
  REQUIRE(col.has_value());
  CHECK(col->regs() == rows.regs());
  CHECK(unbroadcast(a, Shape{16, 1}) == *col);  // expand_dims + broadcast back: no data moves
  const auto back = reshape_units(*col, Shape{16});
  REQUIRE(back.has_value());
  CHECK(*back == rows);
  CHECK(!reshape_units(a, Shape{32, 64}).has_value());  // not a unit reshape
  // Threads that pad a removed unit dimension (lanes 16-31 of [1, 16]) still hold nothing.
  const Layout row = blocked(Shape{1, 16}, 1, 4);
  const auto flat = reshape_units(row, Shape{16});
  REQUIRE(flat.has_value());
  CHECK(same_registers(row, *flat));
  CHECK(!flat->replicated());
  // The source register of each broadcast register: the row repeat digit.
  const auto src = unbroadcast_registers(a, Shape{16, 1});
  REQUIRE(src.size() == 16);
  CHECK(src[0] == 0);
  CHECK(src[3] == 0);
  CHECK(src[4] == 1);
  CHECK(src[15] == 3);
  // A row vector broadcast over rows: numpy rules from a lower rank.
  const Layout r = unbroadcast(a, Shape{128});
  CHECK(r.str() == "[128] reg d0x4, lane d0x32(s4), warp repx4");
  // A reshape that keeps row-major order in the same registers is free.
  CHECK(same_registers(blocked(Shape{64, 32}, 4, 4), blocked(Shape{2048}, 4, 4)));
  CHECK(same_registers(blocked(Shape{64, 32}, 4, 4), blocked(Shape{32, 64}, 4, 4)));
  CHECK(!same_registers(blocked(Shape{64, 32}, 4, 4), blocked(Shape{2048}, 2, 4)));
}

TEST_CASE("equality compares the map, not the spelling") {
  const Layout a(Shape{64}, 1, {{Axis::Reg, 2, 0, 1}, {Axis::Reg, 1, 0, 2}, {Axis::Lane, 32, 0, 2}});
  const Layout b(Shape{64}, 1, {{Axis::Lane, 32, 0, 2}, {Axis::Reg, 2, 0, 1}});
  CHECK(a == b);
  const Layout c(Shape{64}, 1, {{Axis::Lane, 32, 0, 1}, {Axis::Reg, 2, 0, 32}});
  CHECK(!(a == c));
}

TEST_CASE("bank conflicts: row-major tiles read as 16-byte vectors are conflict-free; a column walk is not") {
  const Layout a = blocked(Shape{16, 128}, 4, 4);
  const SharedLayout tile{Shape{16, 128}, 4, 0, 0};
  for (int r = 0; r < a.regs(); r += 4) CHECK(bank_conflicts(a, tile, r, 4) == 1);
  // Lanes walking down a column of a 32-wide f32 tile hit one bank 32 times; one element of padding per
  // row spreads them over every bank.
  const Layout col(Shape{32, 32}, 1, {{Axis::Lane, 32, 0, 1}, {Axis::Reg, 32, 1, 1}});
  CHECK(bank_conflicts(col, SharedLayout{Shape{32, 32}, 4, 0, 0}, 0, 1) == 32);
  CHECK(bank_conflicts(col, SharedLayout{Shape{32, 32}, 4, 0, 1}, 0, 1) == 1);
  // Eight lanes reading the first 16-byte unit of eight 128-byte rows: one bank group, 8 ways; the
  // 128-byte swizzle moves row r's unit to position r and spreads them over every bank.
  const Layout units(Shape{8, 32}, 1, {{Axis::Reg, 4, 1, 1}, {Axis::Lane, 8, 0, 1}, {Axis::Lane, 4, 1, 4}});
  CHECK(bank_conflicts(units, SharedLayout{Shape{8, 32}, 4, 0, 0}, 0, 4) == 8);
  CHECK(bank_conflicts(units, SharedLayout{Shape{8, 32}, 4, 128, 0}, 0, 4) == 1);
  // Lanes along half a row, then the next row: two rows share each phase's banks.
  const Layout half_rows(Shape{8, 32}, 1, {{Axis::Reg, 4, 1, 1}, {Axis::Lane, 4, 1, 4}, {Axis::Lane, 8, 0, 1}});
  CHECK(bank_conflicts(half_rows, SharedLayout{Shape{8, 32}, 4, 0, 0}, 0, 4) == 2);
  CHECK(SharedLayout{Shape{8, 32}, 4, 128, 0}.offset({1, 0}) == 128 + 16);
}

TEST_CASE("conversion padding: rows read back a row per lane get padded rows, a conflict-free conversion none") {
  // Written by lanes along dimension 1 (one element each), read by lanes that each own a row (16-byte
  // vectors): eight lanes of a phase read the same 16-byte column of eight 128-byte rows, 8 ways. One
  // access (4 elements) of padding per row shifts each row by 4 banks: every access conflict-free.
  const Layout rows(Shape{32, 32}, 1, {{Axis::Lane, 32, 1, 1}, {Axis::Reg, 32, 0, 1}});
  const Layout own_row(Shape{32, 32}, 1, {{Axis::Reg, 32, 1, 1}, {Axis::Lane, 32, 0, 1}});
  CHECK(bank_conflicts(own_row, SharedLayout{Shape{32, 32}, 4, 0, 0}, 0, 4) == 8);
  REQUIRE(conversion_padding(rows, own_row, 4) == 4);
  const SharedLayout padded{Shape{32, 32}, 4, 0, 4};
  for (int r = 0; r < 32; ++r) CHECK(bank_conflicts(rows, padded, r, 1) == 1);
  for (int r = 0; r < 32; r += 4) CHECK(bank_conflicts(own_row, padded, r, 4) == 1);
  // Between two row-major layouts of 16-byte vectors nothing conflicts: no padding.
  CHECK(conversion_padding(blocked(Shape{16, 128}, 4, 4), blocked(Shape{16, 128}, 4, 2), 4) == 0);
  // Rank 1 has no rows to pad.
  CHECK(conversion_padding(blocked(Shape{256}, 4, 1), blocked(Shape{256}, 1, 1), 4) == 0);
}

TEST_CASE("a permute's staged tile is padded where that removes bank conflicts") {
  // [32, 32] f32 with one row per lane (32 registers along the row), transposed into the same kind of layout:
  // permute_sources says lane l of the result reads source column l, which is conflict-free, but the writes of
  // 16-byte vectors put 8 lanes of a phase on one bank (rows of 128 bytes). One vector of padding per row: every
  // access conflict-free.
  const Shape s{32, 32};
  const Layout own_row(s, 1, {{Axis::Reg, 32, 1, 1}, {Axis::Lane, 32, 0, 1}});
  const Layout readers = permute_sources(own_row, {1, 0}, s);
  for (int r = 0; r < 32; ++r)
    for (int lane = 0; lane < 32; ++lane) {
      const auto o = own_row.coord(r, lane, 0), x = readers.coord(r, lane, 0);
      REQUIRE(x[0] == o[1]);  // result element (i, j) is source element (j, i)
      REQUIRE(x[1] == o[0]);
    }
  CHECK(bank_conflicts(own_row, SharedLayout{s, 4, 0, 0}, 0, 4) == 8);
  REQUIRE(conversion_padding(own_row, readers, 4) == 4);
  const SharedLayout padded{s, 4, 0, 4};
  for (int r = 0; r < 32; r += 4) CHECK(bank_conflicts(own_row, padded, r, 4) == 1);
  for (int r = 0; r < 32; ++r) CHECK(bank_conflicts(readers, padded, r, 1) == 1);
  // The blocked layout of 4 warps transposed: the result's lanes read down a column, rows 4 apart; the padding
  // chosen (whole 16-byte vectors, to keep the writes aligned) never costs more than none.
  const Shape b{64, 64};
  const Layout blk = blocked(b, 4, 4), blk_readers = permute_sources(blocked(b, 4, 4), {1, 0}, b);
  auto total = [&](int pad) {
    int sum = 0;
    for (int r = 0; r < blk.regs(); r += 4) sum += bank_conflicts(blk, SharedLayout{b, 4, 0, pad}, r, 4);
    for (int r = 0; r < blk_readers.regs(); ++r) sum += bank_conflicts(blk_readers, SharedLayout{b, 4, 0, pad}, r, 1);
    return sum;
  };
  CHECK(total(conversion_padding(blk, blk_readers, 4)) <= total(0));
  // No padding of whole vectors helps it; an XOR swizzle of the 16-byte units keyed by (row / 4) separates the
  // rows the lanes read together: the writes stay conflict-free and the reads go from 8-way to 2-way (32 lanes
  // reading 32 words of one column pair: two per bank is the least with whole 4-float units).
  const SharedLayout sw = staging_layout(blk, blk_readers, 4);
  REQUIRE(sw.xor_unit == 4);
  int worst_read = 0;
  for (int r = 0; r < blk_readers.regs(); ++r) worst_read = std::max(worst_read, bank_conflicts(blk_readers, sw, r, 1));
  CHECK(worst_read == 2);
  for (int r = 0; r < blk.regs(); r += 4) CHECK(bank_conflicts(blk, sw, r, 4) == 1);
  // The swizzle is a permutation of each row's units: every element has its own place in the tile.
  std::set<int64_t> places;
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = 0; j < 64; ++j) places.insert(sw.offset({i, j}));
  CHECK(places.size() == 64 * 64);
  CHECK(*places.rbegin() == 64 * 64 * 4 - 4);
  // Where padding already removes every conflict, it is kept (the own-row transpose above).
  CHECK(staging_layout(own_row, readers, 4).pad_elems == 4);
  CHECK(staging_layout(own_row, readers, 4).xor_unit == 0);
  // A permute of the outer dimensions of a 3-D block keeps rows whole: no padding.
  const Shape s3{8, 4, 32};
  CHECK(conversion_padding(blocked(s3, 4, 4), permute_sources(blocked(Shape{4, 8, 32}, 4, 4), {1, 0, 2}, s3), 4) == 0);
}

TEST_CASE("the layout pass: groups share a layout, reductions slice it, conflicts become explicit conversions") {
  using namespace tilejit::dsl;
  using tilejit::ir::Op;
  auto k = tilejit::kernel("layouts", [](Tensor<f32, 2> x, Tensor<f32, 2> z, Tensor<f32, 1> y) {
    auto t = descriptor_load(x, {0, 0}, {16, 128});
    auto u = descriptor_load(z, {0, 0}, {128, 16});
    auto rows = sum(t, 1);                   // [16] in the slice of t's layout
    auto other = max(u, 0);                  // [16] in the slice of u's layout: they meet below
    descriptor_store(y, {0}, rows * other);  // one conversion, and one only
    auto e = exp(t - rows.expand_dims<1>()); // broadcast back: free
    descriptor_store(y, {16}, sum(e, 0));
  });
  const auto g = k.trace(tilejit::Config{});
  const auto l = tilejit::passes::lower(*g, tilejit::codegen::Options{});
  int converts = 0;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto id = static_cast<tilejit::ir::NodeId>(i);
    if (l.info.position[i] < 0) continue;
    const auto& n = l.graph.node(id);
    if (n.op == Op::ConvertLayout) {
      ++converts;
      const auto& from = l.layout.of[static_cast<size_t>(l.graph.operand(id, 0))];
      const auto& to = l.layout.of[i];
      CHECK(!(from.dist == to.dist));
    }
    if (n.op == Op::Broadcast) {
      // Every broadcast's operand is in the layout that makes it free.
      const auto& x = l.layout.of[static_cast<size_t>(l.graph.operand(id, 0))];
      if (x.kind == tilejit::passes::ValueLayout::Distributed)
        CHECK(unbroadcast(l.layout.of[i].dist, l.graph.node(l.graph.operand(id, 0)).shape) == x.dist);
    }
  }
  CHECK(converts == 1);
  CHECK(tilejit::passes::layout_conflicts(l.graph, l.info, 128).empty());
}
