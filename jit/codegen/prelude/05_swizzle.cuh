// Shared-memory tiles laid out against bank conflicts: padded and XOR-swizzled staging tiles, the TMA
// swizzle's offsets, and the K-major copy of a wgmma operand.
//
// Plain C++ on purpose (no PTX, no CUDA types beyond uint4): tests/unit/test_swizzle_prelude.cpp
// compiles this file for the host and checks it against layout::OperandTile element by element.
namespace tj {

/// Offset of row-major element `e` in a tile whose rows of `Inner` elements are followed by `Pad` elements
/// of padding (layout conversions, against bank conflicts).
template <int Inner, int Pad>
__device__ __forceinline__ int padded_index(int e) {
  return e + static_cast<int>(static_cast<unsigned>(e) / Inner) * Pad;
}

/// Offset of row-major element `e` in a tile whose rows of `Inner` elements are cut into units of `Unit`
/// elements, unit u of row r stored as unit u ^ ((r / Div) % Mod) (layout conversions, against bank
/// conflicts: the rows one warp reads together land in different banks, and vectors of a unit stay whole).
template <int Inner, int Unit, int Div, int Mod>
__device__ __forceinline__ int xor_index(int e) {
  const unsigned row = static_cast<unsigned>(e) / Inner, col = static_cast<unsigned>(e) % Inner;
  return static_cast<int>(row * Inner + (((col / Unit) ^ ((row / Div) % Mod)) * Unit) + col % Unit);
}

/// A shared-memory tile of `Rows` rows stored as pieces `Swizzle` bytes wide, each holding every row,
/// with the TMA swizzle: 16-byte unit bits [4, 7) of the byte offset are XORed with bits [7, 10)
/// (128 B), [7, 9) (64 B) or bit 7 (32 B); the tile starts on a multiple of 8 x Swizzle bytes.
/// The XOR such a tile applies to the 16-byte units of row `row` (its start is row x Swizzle bytes on).
template <int Swizzle>
__device__ __forceinline__ int swizzle_xor(int row) { return (((row * Swizzle) >> 7) & (Swizzle / 16 - 1)) << 4; }

/// Byte offset that register-constant (row, col) adds to a thread's base in a swizzled tile when the
/// swizzle's XOR (`x`, from swizzle_xor) depends on the thread alone;
/// `inner`: the thread's own column bytes when they reach into the XORed bits.
template <int Rows, int ElemBytes, int Swizzle>
__device__ __forceinline__ int swizzled_register_offset(int row, int col, int x, int inner = 0) {
  constexpr int kPiece = Swizzle / ElemBytes;
  return (col / kPiece) * (Rows * Swizzle) + row * Swizzle + (((col % kPiece) * ElemBytes + inner) ^ x);
}

/// Copies a wgmma operand tile that TMA wrote M/N-major and unswizzled ([K, MN] elements of `ElemBytes`,
/// MN innermost) into the K-major tile wgmma reads ([MN, K], K innermost), laid out as TMA lays a
/// swizzled tile: pieces `Swizzle` bytes wide, each holding every row (`dst` starts on a multiple of
/// 8 x Swizzle bytes). Each thread moves runs of 16 bytes along K: it reads a run from 16 / ElemBytes
/// rows of the source, consecutive threads reading consecutive elements of a row, and writes it with one
/// 16-byte store, the 8 threads of a quarter warp writing 8 consecutive rows, which the swizzle puts
/// in distinct banks. wgmma reads only K-major tf32 and 8-bit operands.
template <int ElemBytes, int MN, int K, int Swizzle, int Threads>
__device__ __forceinline__ void copy_k_major(const unsigned char* src, unsigned char* dst, int tid) {
  constexpr int kRun = 16 / ElemBytes;  // elements per 16-byte store
  constexpr int kRuns = MN * (K / kRun);
#pragma unroll
  for (int r0 = 0; r0 < kRuns; r0 += Threads) {
    const int r = r0 + tid;
    if (kRuns % Threads == 0 || r < kRuns) {
      const int mn = r % MN, k = r / MN * kRun;
      unsigned w[4] = {0u, 0u, 0u, 0u};
#pragma unroll
      for (int i = 0; i < kRun; ++i) {
        const unsigned char* e = src + ((k + i) * MN + mn) * ElemBytes;
        const unsigned v = ElemBytes == 4   ? *reinterpret_cast<const unsigned*>(e)
                           : ElemBytes == 2 ? *reinterpret_cast<const unsigned short*>(e)
                                            : *e;
        w[i * ElemBytes / 4] |= v << (8 * (i * ElemBytes % 4));
      }
      const int at = swizzled_register_offset<MN, ElemBytes, Swizzle>(mn, k, swizzle_xor<Swizzle>(mn));
      *reinterpret_cast<uint4*>(dst + at) = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

}  // namespace tj
