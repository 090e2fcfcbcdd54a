// Tensor-core layouts (see mma.h): wgmma tiling, the accumulator fragment, operand tiles and descriptors.
#include "tilejit/layout/mma.h"

#include <algorithm>

#include "tilejit/error.h"
#include "tilejit/layout/shared_layout.h"

namespace tilejit::layout {

int wgmma_k(ir::DType t) {
  switch (t) {
    case ir::DType::bf16: case ir::DType::f16: return 16;
    case ir::DType::f32: return 8;  // tf32
    case ir::DType::f8e4m3: case ir::DType::f8e5m2: case ir::DType::i8: case ir::DType::u8: return 32;
    default: return 0;
  }
}

std::string MmaTiling::str() const {
  std::string s = "m64n" + std::to_string(instr_n) + "k" + std::to_string(instr_k);
  if (m < 64) s += " (M = " + std::to_string(m) + ": rows " + std::to_string(m) + "-63 of the instruction are padding)";
  s += ", " + std::to_string(warpgroups_m) + " warpgroup(s) along M x " + std::to_string(warpgroups_n) + " along N";
  s += ", " + std::to_string(m_tiles) + " x " + std::to_string(n_tiles) + " instruction(s) per warpgroup and k-step";
  return s;
}

std::optional<MmaTiling> tile_mma(int64_t m, int64_t n, int64_t k, ir::DType t, int warps, std::string* why) {
  auto no = [&](std::string reason) -> std::optional<MmaTiling> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  MmaTiling r;
  r.m = m, r.n = n, r.k = k;
  r.instr_k = wgmma_k(t);
  if (r.instr_k == 0) return no("wgmma has no " + std::string(ir::name_of(t)) + " operands");
  if (warps % 4 != 0) return no("num_warps=" + std::to_string(warps) + " is not a whole number of warpgroups (4 warps)");
  // Below 64 rows the one m64 instruction per k-step computes rows m..63 too, from bytes past the tile
  // (MmaPlan::overrun): padding of the accumulator, never read.
  if (m < 64 ? m % 8 != 0 : m % 64 != 0)
    return no("M=" + std::to_string(m) + " is neither a multiple of 64 nor a multiple of 8 below 64");
  if (k % r.instr_k != 0)
    return no("K=" + std::to_string(k) + " is not a multiple of the instruction's K=" + std::to_string(r.instr_k));
  const int groups = warps / 4;
  while (r.warpgroups_m * 2 <= groups && m % (64 * r.warpgroups_m * 2) == 0) r.warpgroups_m *= 2;
  r.warpgroups_n = groups / r.warpgroups_m;
  if (r.warpgroups_m * r.warpgroups_n != groups || n % (8 * r.warpgroups_n) != 0)
    return no("N=" + std::to_string(n) + " does not split into multiples of 8 over " + std::to_string(r.warpgroups_n) +
              " warpgroup(s)");
  const int64_t cols = r.wg_cols();
  // Integer instructions take N = 8, 16, 24, 32 and then multiples of 16 only.
  const bool integer = t == ir::DType::i8 || t == ir::DType::u8;
  for (int64_t in = std::min<int64_t>(cols, 256); in >= 8; in -= 8)
    if (cols % in == 0 && !(integer && in > 32 && in % 16 != 0)) {
      r.instr_n = static_cast<int>(in);
      break;
    }
  r.m_tiles = static_cast<int>(std::max<int64_t>(1, m / (64 * r.warpgroups_m)));
  r.n_tiles = static_cast<int>(cols / r.instr_n);
  return r;
}

Layout wgmma_accumulator(const MmaTiling& t, int warps) {
  ir::Shape s;
  s.rank = 2;
  s.dims[0] = t.m;
  s.dims[1] = t.n;
  const std::vector<Factor> f = {
      {Axis::Reg, 2, 1, 1},
      {Axis::Reg, 2, 0, 8},
      {Axis::Reg, t.instr_n / 8, 1, 8},
      {Axis::Reg, t.n_tiles, 1, t.instr_n},
      {Axis::Reg, t.m_tiles, 0, 64 * t.warpgroups_m},
      {Axis::Lane, 4, 1, 2},
      {Axis::Lane, 8, 0, 1},
      {Axis::Warp, 4, 0, 16},
      {Axis::Warp, t.warpgroups_m, 0, 64},
      {Axis::Warp, t.warpgroups_n, 1, t.wg_cols()},
  };
  return Layout(s, warps, f);
}

Layout wgmma_a_fragment(const MmaTiling& t, int warps) {
  check_internal(t.warpgroups_n == 1 && t.k <= 256 && t.k % 16 == 0, "wgmma_a_fragment: a tiling without a register a");
  MmaTiling a = t;
  a.n = a.instr_n = static_cast<int>(t.k);
  a.n_tiles = 1;
  return wgmma_accumulator(a, warps);
}

int operand_swizzle(int64_t inner_bytes) {
  if (inner_bytes <= 0) return 0;
  for (int s : {128, 64, 32})
    if (inner_bytes % s == 0) return s;
  return 0;
}

int64_t OperandTile::byte_of(int64_t row, int64_t col) const {
  return SharedLayout{ir::Shape{rows, inner}, elem_bytes, swizzle, 0}.offset({row, col});
}

SmemDescriptor operand_descriptor(const OperandTile& tile, bool mn_major, int64_t mn0, int64_t k0) {
  check_internal(tile.swizzle == 32 || tile.swizzle == 64 || tile.swizzle == 128, "operand_descriptor: swizzle");
  SmemDescriptor d;
  d.swizzle = tile.swizzle;
  d.sbo = 8 * tile.swizzle;  // the next 8 rows of the tile (8 M/N rows when K-major, 8 K rows when MN-major)
  if (!mn_major) {
    check_internal(mn0 % 8 == 0, "operand_descriptor: M/N offset off the 8-row grid");
    d.start = (k0 / tile.piece_elems()) * tile.piece_bytes() + mn0 * tile.swizzle + (k0 % tile.piece_elems()) * tile.elem_bytes;
    d.lbo = 16;  // unused by swizzled K-major layouts ("assumed 1")
  } else {
    check_internal(mn0 % tile.piece_elems() == 0, "operand_descriptor: M/N offset inside a swizzle piece");
    d.start = (mn0 / tile.piece_elems()) * tile.piece_bytes() + k0 * tile.swizzle;
    d.lbo = tile.piece_bytes();  // the next piece: the next swizzle-width of M/N elements
  }
  return d;
}

}  // namespace tilejit::layout
