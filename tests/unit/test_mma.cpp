// Tensor-core layouts (jit/layout/mma): the accumulator fragment against the PTX ISA's formula, and every
// wgmma operand descriptor the planner can produce against the PTX ISA's canonical shared-memory layouts,
// element by element. A swizzle or descriptor mismatch gives wrong numbers on the GPU without a fault;
// these tests are where it must fail instead.
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tilejit/layout/mma.h"
#include "tilejit/layout/shared_layout.h"
#include "tilejit/passes/axis_info.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/tma_plan.h"
#include "tilejit/passes/value_layouts.h"

using namespace tilejit::layout;
using tilejit::ir::DType;

namespace {

/// The PTX ISA's accumulator fragment of m64nNk*: thread `t` (0..127) of a warpgroup, register `j`.
std::pair<int64_t, int64_t> ptx_fragment(int t, int j) {
  const int warp = t / 32, lane = t % 32;
  return {16 * warp + lane / 4 + 8 * ((j / 2) % 2), 2 * (lane % 4) + (j % 2) + 8 * (j / 4)};
}

/// Byte address (from a swizzle-aligned base) wgmma reads for element (mn, k) of an operand described by `d`:
/// the PTX ISA's canonical layouts (in 16-byte units T = 16 / elem_bytes elements), then the swizzle of the
/// address bits [4, 7) by bits [7, 10) (Swizzle<3,4,3> for 128 B; 2 and 1 bits for 64 B and 32 B).
int64_t canonical_address(const SmemDescriptor& d, bool mn_major, int elem_bytes, int64_t mn, int64_t k) {
  const int64_t T = 16 / elem_bytes, s = d.swizzle / 16;
  int64_t elems = 0, bytes = 0;
  if (!mn_major) {  // ((8,m),(T,2k)):((sT,SBO),(1,T))
    elems = (mn % 8) * s * T + (k % T) + (k / T) * T;
    bytes = (mn / 8) * d.sbo;
  } else {  // ((T,s,m),(8,k)):((1,T,LBO),(sT,SBO))
    elems = (mn % T) + ((mn / T) % s) * T + (k % 8) * s * T;
    bytes = (mn / (T * s)) * d.lbo + (k / 8) * d.sbo;
  }
  const int64_t addr = d.start + elems * elem_bytes + bytes;
  return addr ^ (((addr >> 7) & (s - 1)) << 4);
}

struct OperandCase {
  DType t;
  int64_t m, n, k;
  int warps;
  bool a_mn_major, b_mn_major;
};

/// Checks every element every instruction of a dot reads, for both operands.
void check_operands(const OperandCase& c) {
  std::string why;
  const auto tiling = tile_mma(c.m, c.n, c.k, c.t, c.warps, &why);
  REQUIRE_MESSAGE(tiling, why);
  const MmaTiling& t = *tiling;
  const int e = tilejit::ir::size_of(c.t);
  // a: [M, K] as a tile [M, K] (K-major) or [K, M] (MN-major); b: [K, N] as [N, K] (K-major) or [K, N].
  auto tile_of = [&](int64_t mn, int64_t k, bool mn_major) {
    OperandTile tile;
    tile.rows = mn_major ? k : mn;
    tile.inner = mn_major ? mn : k;
    tile.elem_bytes = e;
    tile.swizzle = operand_swizzle(tile.inner * e);
    return tile;
  };
  const OperandTile ta = tile_of(c.m, c.k, c.a_mn_major), tb = tile_of(c.n, c.k, c.b_mn_major);
  REQUIRE(ta.swizzle > 0);
  REQUIRE(tb.swizzle > 0);
  auto place = [](const OperandTile& tile, bool mn_major, int64_t mn, int64_t k) {
    return mn_major ? tile.byte_of(k, mn) : tile.byte_of(mn, k);
  };
  int64_t checked = 0;
  for (int ks = 0; ks < t.k / t.instr_k; ++ks) {
    const int64_t k0 = int64_t{ks} * t.instr_k;
    for (int wg = 0; wg < t.warpgroups_m; ++wg)
      for (int mt = 0; mt < t.m_tiles; ++mt) {
        const int64_t m0 = t.row0(wg, mt);
        const SmemDescriptor d = operand_descriptor(ta, c.a_mn_major, m0, k0);
        for (int64_t i = 0; i < 64; ++i)
          for (int64_t kk = 0; kk < t.instr_k; ++kk, ++checked)
            REQUIRE(canonical_address(d, c.a_mn_major, e, i, kk) == place(ta, c.a_mn_major, m0 + i, k0 + kk));
      }
    for (int wg = 0; wg < t.warpgroups_n; ++wg)
      for (int nt = 0; nt < t.n_tiles; ++nt) {
        const int64_t n0 = t.col0(wg, nt);
        const SmemDescriptor d = operand_descriptor(tb, c.b_mn_major, n0, k0);
        for (int64_t j = 0; j < t.instr_n; ++j)
          for (int64_t kk = 0; kk < t.instr_k; ++kk, ++checked)
            REQUIRE(canonical_address(d, c.b_mn_major, e, j, kk) == place(tb, c.b_mn_major, n0 + j, k0 + kk));
      }
  }
  CHECK(checked == (c.m + c.n) * c.k);
  // The descriptor fields fit their 14-bit encodings.
  for (const OperandTile* tile : {&ta, &tb}) CHECK(tile->bytes() < (int64_t{1} << 18));
}

}  // namespace

namespace {
/// The bf16 wgmma tiling of an m x n accumulator over `warps` warps, and the accumulator's fragment layout.
std::pair<MmaTiling, Layout> accumulator(int m, int n, int warps) {
  std::string why;
  const auto t = tile_mma(m, n, 16, DType::bf16, warps, &why);
  REQUIRE_MESSAGE(t, why);
  return {*t, wgmma_accumulator(*t, warps)};
}
}  // namespace

TEST_CASE("wgmma accumulator fragment: the PTX ISA's register layout, repeated over instructions and warpgroups") {
  for (auto [m, n, warps] : {std::tuple{64, 8, 4}, {64, 256, 4}, {128, 128, 4}, {128, 256, 8}, {64, 128, 8}, {256, 128, 8},
                             {192, 64, 4}, {64, 64, 16}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(warps);
    const auto [t, l] = accumulator(m, n, warps);
    CHECK(l.regs() == t.m_tiles * t.n_tiles * t.instr_n / 2);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (int w = 0; w < warps; ++w)
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < l.regs(); ++r) {
          // Register r of the emitter's array: instruction (mt, nt), then the instruction's register j.
          const int per = t.instr_n / 2, j = r % per, nt = (r / per) % t.n_tiles, mt = r / per / t.n_tiles;
          const int g = w / 4, wgm = g % t.warpgroups_m, wgn = g / t.warpgroups_m;
          const auto [fr, fc] = ptx_fragment((w % 4) * 32 + lane, j);
          const auto c = l.coord(r, lane, w);
          CHECK(c[0] == t.row0(wgm, mt) + fr);
          CHECK(c[1] == t.col0(wgn, nt) + fc);
          seen.insert({c[0], c[1]});
        }
    CHECK(static_cast<int64_t>(seen.size()) == int64_t{m} * n);
  }
}

TEST_CASE("wgmma tiling: warpgroups along M first, instructions of at most 256 columns, reasons when it cannot") {
  std::string why;
  auto t = tile_mma(128, 256, 64, DType::bf16, 8, &why);
  REQUIRE(t);
  CHECK(t->warpgroups_m == 2);
  CHECK(t->warpgroups_n == 1);
  CHECK(t->instr_n == 256);
  CHECK(t->str() == "m64n256k16, 2 warpgroup(s) along M x 1 along N, 1 x 1 instruction(s) per warpgroup and k-step");
  t = tile_mma(64, 512, 32, DType::f8e4m3, 4, &why);
  REQUIRE(t);
  CHECK(t->instr_n == 256);
  CHECK(t->n_tiles == 2);
  CHECK(t->instr_k == 32);
  t = tile_mma(64, 128, 16, DType::bf16, 8, &why);
  REQUIRE(t);
  CHECK(t->warpgroups_n == 2);
  CHECK(t->instr_n == 64);
  CHECK(!tile_mma(96, 64, 16, DType::bf16, 4, &why));
  CHECK(why == "M=96 is neither a multiple of 64 nor a multiple of 8 below 64");
  CHECK(!tile_mma(20, 64, 16, DType::bf16, 4, &why));
  CHECK(why == "M=20 is neither a multiple of 64 nor a multiple of 8 below 64");
  // Below 64 rows: one m64 instruction per warpgroup and k-step, its rows M..63 padding of the accumulator.
  t = tile_mma(16, 128, 64, DType::bf16, 4, &why);
  REQUIRE(t);
  CHECK(t->m_tiles == 1);
  CHECK(t->warpgroups_m == 1);
  CHECK(t->instr_n == 128);
  CHECK(t->str() == "m64n128k16 (M = 16: rows 16-63 of the instruction are padding), 1 warpgroup(s) along M x 1 along N, 1 x 1 "
                    "instruction(s) per warpgroup and k-step");
  t = tile_mma(32, 128, 32, DType::f8e4m3, 8, &why);
  REQUIRE(t);
  CHECK(t->warpgroups_n == 2);
  CHECK(t->instr_n == 64);
  // Its accumulator: warp 0 holds rows 0-15, warp 1 rows 16-31, warps 2 and 3 only padding.
  const Layout acc = wgmma_accumulator(*t, 8);
  CHECK(acc.padded());
  CHECK(acc.coord(0, 0, 1)[0] == 16);
  CHECK(!acc.inside(acc.coord(0, 0, 2)));
  CHECK(acc.inside(acc.coord(0, 0, 4)));  // warp 4: the second warpgroup's rows 0-15
  CHECK(!tile_mma(64, 64, 24, DType::bf16, 4, &why));
  CHECK(why == "K=24 is not a multiple of the instruction's K=16");
  CHECK(!tile_mma(64, 64, 16, DType::bf16, 2, &why));
  CHECK(why == "num_warps=2 is not a whole number of warpgroups (4 warps)");
  CHECK(!tile_mma(64, 12, 16, DType::bf16, 4, &why));
  CHECK(!tile_mma(64, 64, 16, DType::f64, 4, &why));
  CHECK(why == "wgmma has no f64 operands");
}

TEST_CASE("operand swizzle: 128 B when the inner dimension spans multiples of 128 bytes, else 64 or 32") {
  CHECK(operand_swizzle(128) == 128);
  CHECK(operand_swizzle(512) == 128);
  CHECK(operand_swizzle(64) == 64);
  CHECK(operand_swizzle(192) == 64);
  CHECK(operand_swizzle(32) == 32);
  CHECK(operand_swizzle(96) == 32);
  CHECK(operand_swizzle(16) == 0);
  CHECK(operand_swizzle(48) == 0);
}

TEST_CASE("wgmma operand descriptors read exactly what TMA wrote, for every type, swizzle, major-ness and tiling") {
  const DType sixteen[] = {DType::bf16, DType::f16};
  const DType k_major_only[] = {DType::f32, DType::f8e4m3, DType::f8e5m2, DType::i8, DType::u8};
  // (m, n, k, warps): every swizzle width of K (16-bit: k 16 -> 32 B, 32 -> 64 B, 64 -> 128 B, 128 -> 2 pieces),
  // several warpgroup splits, instructions repeated along M and N.
  const std::tuple<int64_t, int64_t, int64_t, int> shapes[] = {
      {64, 64, 64, 4}, {128, 128, 64, 4}, {128, 256, 64, 8}, {64, 128, 64, 8}, {256, 128, 128, 8},
      {64, 32, 32, 4}, {64, 64, 16, 4},   {128, 64, 192, 4}, {64, 512, 64, 4}, {192, 96, 64, 4}};
  for (const auto& [m, n, k, warps] : shapes) {
    for (DType t : sixteen)
      for (bool am : {false, true})
        for (bool bm : {false, true}) {
          OperandCase c{t, m, n, k, warps, am, bm};
          // K scaled so that the operand spans the same bytes; MN-major instructions must start on a piece.
          std::string why;
          const auto tl = tile_mma(m, n, k, t, warps, &why);
          if (!tl) continue;
          const int64_t pe_b = operand_swizzle(n * 2) / 2, pe_a = operand_swizzle(m * 2) / 2;
          if (bm && (tl->instr_n % pe_b != 0 || tl->wg_cols() % pe_b != 0)) continue;
          if (am && 64 % pe_a != 0) continue;
          CAPTURE(m);
          CAPTURE(n);
          CAPTURE(k);
          CAPTURE(am);
          CAPTURE(bm);
          check_operands(c);
        }
    for (DType t : k_major_only) {
      const int64_t kk = k * 2 / tilejit::ir::size_of(t);  // the same bytes of K
      CAPTURE(tilejit::ir::name_of(t));
      CAPTURE(m);
      CAPTURE(n);
      check_operands({t, m, n, kk, warps, false, false});
    }
  }
}

TEST_CASE("stores of wgmma accumulators are staged in swizzled tiles: conflict-free where row-major is not") {
  for (auto [m, n, warps, bytes] : {std::tuple{128, 256, 8, 2}, {128, 128, 4, 2}, {64, 64, 4, 4}, {256, 128, 8, 4}, {64, 32, 4, 2}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(bytes);
    const Layout l = accumulator(m, n, warps).second;
    const int vec = l.vector_width();
    const tilejit::ir::Shape shape{m, n};
    auto worst = [&](int swizzle) {
      int w = 1;
      for (int r = 0; r < l.regs(); r += vec) w = std::max(w, bank_conflicts(l, SharedLayout{shape, bytes, swizzle, 0}, r, vec));
      return w;
    };
    // Rows 8 apart in a row-major tile whose rows span a multiple of 128 bytes share their banks.
    if (n * bytes % 128 == 0) CHECK(worst(0) >= 4);
    const int s = staging_swizzle(l, bytes);
    CHECK(s > 0);
    CHECK(worst(s) == 1);
    // The emitter's cheap addresses: the XOR depends on the thread alone (checked against SharedLayout::offset).
    CHECK(split_swizzled_writes(l, SharedLayout{shape, bytes, s, 0}).per_thread_xor);
    // The largest conflict-free swizzle: the fewest TMA operations (pieces) for the store.
    for (int bigger : {128, 64})
      if (bigger > s && n * bytes % bigger == 0) CHECK(worst(bigger) > 1);
  }
  // A blocked layout that writes whole rows with 16-byte vectors is conflict-free row-major: no swizzle.
  CHECK(staging_swizzle(blocked(tilejit::ir::Shape{64, 128}, 4, 4), 4) == 0);
  // Threads whose own columns cross swizzle pieces: no per-thread XOR, the emitter computes each address.
  CHECK_FALSE(split_swizzled_writes(blocked(tilejit::ir::Shape{8, 256}, 8, 4), SharedLayout{tilejit::ir::Shape{8, 256}, 2, 128, 0})
                  .per_thread_xor);
  // Pieces: a 128B-swizzled tile of 256 bf16 columns stores column 64 at the start of the second piece.
  const SharedLayout wide{tilejit::ir::Shape{128, 256}, 2, 128, 0};
  CHECK(wide.offset({0, 64}) == 128 * 128);
  CHECK(wide.offset({1, 64}) == 128 * 128 + 128 + 16);
  CHECK(wide.offset({9, 70}) == 128 * 128 + 9 * 128 + (12 ^ (1 << 4)));
}

TEST_CASE("wgmma register operand a: the PTX ISA's fragment of a, four 32-bit registers per instruction") {
  for (auto [m, k, warps] : {std::tuple{64, 16, 4}, {128, 64, 8}, {128, 128, 4}, {256, 256, 8}, {64, 32, 4}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(warps);
    std::string why;
    const auto t = tile_mma(m, 64, k, DType::bf16, warps, &why);
    REQUIRE_MESSAGE(t, why);
    REQUIRE(t->warpgroups_n == 1);
    const Layout l = wgmma_a_fragment(*t, warps);
    CHECK(l.regs() == t->m_tiles * k / 2);
    for (int w = 0; w < warps; ++w)
      for (int lane = 0; lane < 32; ++lane)
        for (int mt = 0; mt < t->m_tiles; ++mt)
          for (int ks = 0; ks < k / 16; ++ks)
            for (int q = 0; q < 4; ++q)
              for (int h = 0; h < 2; ++h) {
                // a_q of instruction (mt, ks): rows g and g + 8 (q = 1, 3), columns 2t, 2t + 1 and 8 on (q = 2, 3).
                const int r = mt * k / 2 + 8 * ks + 2 * q + h;
                const int g = (w % 4) * 16 + lane / 4, tq = lane % 4;
                const auto c = l.coord(r, lane, w);
                CHECK(c[0] == t->row0((w / 4) % t->warpgroups_m, mt) + g + 8 * (q % 2));
                CHECK(c[1] == 16 * ks + 2 * tq + h + 8 * (q / 2));
              }
  }
}
