// Tensor-core (wgmma) layouts: the accumulator fragment as a register layout, and the operand tiles
// in shared memory as TMA writes them and as a wgmma matrix descriptor reads them.
//
// # The instruction
//
// `wgmma.mma_async.m64nNkK` runs on a warpgroup (4 consecutive warps, 128 threads) and computes a
// 64 x N block of D += A (64 x K) * B (K x N); K is 32 bytes of the operand type (16 for bf16/f16,
// 8 for tf32, 32 for fp8 and int8) and N a multiple of 8 up to 256. A dot of an [M, N] accumulator
// is tiled over the program's warpgroups (along M first, then N) and, within a warpgroup, over
// several instructions along M (`m_tiles`) and N (`n_tiles`).
//
// # The accumulator fragment
//
// Thread t of warp w (in its warpgroup) holds, in its register j of one instruction's N/2:
//   row = 16 w + (lane / 4) + 8 ((j / 2) % 2),   column = 2 (lane % 4) + (j % 2) + 8 (j / 4)
// which is the factor list (fastest first)
//   reg  d1 x2 (s1), reg d0 x2 (s8), reg d1 x N/8 (s8), lane d1 x4 (s2), lane d0 x8 (s1), warp d0 x4 (s16)
// followed by the instruction repeats (reg d1 x n_tiles (sN), reg d0 x m_tiles) and the warpgroup
// split (warp d0 x warpgroups_m (s64), warp d1 x warpgroups_n).
//
// # Operand tiles in shared memory
//
// An operand tile is the [rows, inner] box of a TMA load (inner contiguous). Its inner dimension is
// cut into *pieces* as wide as the swizzle (32, 64 or 128 bytes); TMA writes piece p as a dense
// [rows, swizzle bytes] block at p * rows * swizzle, with the 16-byte units of each row XORed by
// the row's position in the swizzle's repeat (1024, 512 or 256 bytes). A wgmma operand is K-major
// when the tile's inner dimension is K (A as [M, K], B as [N, K]) and MN-major (the transpose bit)
// when it is M or N (A as [K, M], B as [K, N]). `operand_descriptor` gives the matrix-descriptor
// fields (start, leading and stride byte offsets, swizzle) of the part of the tile one instruction
// reads; tests check them against the PTX ISA's canonical layouts element by element.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tilejit/ir/ir.h"
#include "tilejit/layout/layout.h"

namespace tilejit::layout {

/// K of one wgmma instruction for operands of type `t` (32 bytes of it); 0 when wgmma has no such type.
int wgmma_k(ir::DType t);

/// How a dot's [M, N] accumulator is split over warpgroups and wgmma instructions.
struct MmaTiling {
  int64_t m = 64, n = 8, k = 16;   ///< the dot: [m, k] x [k, n]
  int warpgroups_m = 1, warpgroups_n = 1;
  int m_tiles = 1;                 ///< m64 instructions per warpgroup along M
  int n_tiles = 1;                 ///< instructions per warpgroup along N
  int instr_n = 8;                 ///< N of one instruction
  int instr_k = 16;                ///< K of one instruction
  int64_t wg_rows() const { return m / warpgroups_m; }  ///< rows of the accumulator one warpgroup holds
  int64_t wg_cols() const { return n / warpgroups_n; }  ///< columns one warpgroup holds
  /// First accumulator row of instruction `mt` of warpgroup `wgm` (the fragment's M digits).
  int64_t row0(int wgm, int mt) const { return 64 * wgm + 64 * int64_t{warpgroups_m} * mt; }
  /// First accumulator column of instruction `nt` of warpgroup `wgn`.
  int64_t col0(int wgn, int nt) const { return wgn * wg_cols() + int64_t{nt} * instr_n; }
  std::string str() const;  ///< "m64n128k16, 2 warpgroups along M, 1 x 1 instructions per warpgroup"
};

/// The tiling of an [m, k] x [k, n] dot with operands of type `t` over `warps` warps, or nullopt with
/// the reason in `why` (warps not a multiple of 4, m not a multiple of 64 per warpgroup nor a multiple
/// of 8 below 64, n not a multiple of 8, k not a multiple of the instruction's K). Below 64, m is padded:
/// one m64 instruction per k-step and warpgroup, whose rows m..63 are padding of the accumulator.
std::optional<MmaTiling> tile_mma(int64_t m, int64_t n, int64_t k, ir::DType t, int warps, std::string* why);

/// The accumulator fragment of `t` as a register layout over `warps` warps.
Layout wgmma_accumulator(const MmaTiling& t, int warps);

/// The [m, k] operand a of `t` held in registers (wgmma's register form; every warpgroup along M,
/// k <= 256): the accumulator fragment of an [m, k] product tiled like `t` along M. Registers
/// mt * k / 2 + 8 * ks + [0, 8) hold instruction (mt, k-step ks)'s a: pairs of them are its four
/// 32-bit registers (so the f32 accumulator of one product, converted to 16 bits, is the next
/// product's a without moving data).
Layout wgmma_a_fragment(const MmaTiling& t, int warps);

/// The swizzle (bytes) of an operand tile whose inner dimension spans `inner_bytes`: 128 when it is a
/// multiple of 128, else 64 or 32; 0 when it is not a multiple of 32 bytes (no wgmma layout fits).
int operand_swizzle(int64_t inner_bytes);

/// An operand tile as TMA writes it (see the file comment).
struct OperandTile {
  int64_t rows = 0, inner = 0;  ///< the box, inner contiguous
  int elem_bytes = 2;
  int swizzle = 128;            ///< bytes: 32, 64 or 128
  int64_t piece_elems() const { return swizzle / elem_bytes; }  ///< inner elements per piece
  int64_t pieces() const { return inner / piece_elems(); }
  int64_t piece_bytes() const { return rows * swizzle; }
  int64_t bytes() const { return rows * inner * elem_bytes; }
  /// Byte offset (from a base aligned to the swizzle's repeat) of element (row, col), swizzle applied.
  int64_t byte_of(int64_t row, int64_t col) const;
};

/// The fields of a wgmma shared-memory matrix descriptor, before encoding (bytes).
struct SmemDescriptor {
  int64_t start = 0;  ///< offset of the sub-matrix from the tile's base
  int64_t lbo = 0;    ///< leading dimension byte offset
  int64_t sbo = 0;    ///< stride dimension byte offset
  int swizzle = 128;  ///< bytes; the descriptor's mode field is 1 (128), 2 (64), 3 (32)
  int mode() const { return swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0; }
};

/// The descriptor of the sub-matrix of `tile` whose first M (or N) index is `mn0` and first K index
/// `k0`. `mn_major`: the tile's rows are K and its inner dimension M (or N); else rows are M (or N).
SmemDescriptor operand_descriptor(const OperandTile& tile, bool mn_major, int64_t mn0, int64_t k0);

}  // namespace tilejit::layout
