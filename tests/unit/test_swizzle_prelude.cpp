// The device prelude's tile helpers (jit/codegen/prelude/05_swizzle.cuh), compiled for the host: the staged
// tiles' padded_index / xor_index against layout::SharedLayout, and the K-major copy of a wgmma operand (tj::copy_k_major) run for every thread of a program, checked element by
// element against layout::OperandTile (the layout the wgmma descriptors are tested against in test_mma.cpp),
// for coverage (every byte written once) and for shared-memory bank conflicts (its reads and writes).
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tilejit/layout/mma.h"
#include "tilejit/layout/shared_layout.h"

// What the prelude takes from NVRTC's built-in declarations.
#define __device__
#define __forceinline__ inline
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
#include "05_swizzle.cuh"  // its #pragma unroll is unknown here (-Wno-unknown-pragmas in CMakeLists.txt)
#undef __device__
#undef __forceinline__

using tilejit::layout::OperandTile;

namespace {

/// One call of tj::copy_k_major for every thread of a program.
template <int E, int MN, int K, int S, int Threads>
void run_copy(const std::vector<unsigned char>& src, std::vector<unsigned char>& dst) {
  for (int tid = 0; tid < Threads; ++tid) tj::copy_k_major<E, MN, K, S, Threads>(src.data(), dst.data(), tid);
}

/// Bank-conflict degree of one warp's accesses (byte offset, width): for each 16-byte store the hardware
/// serves a quarter warp at a time; 4-byte and narrower loads a whole warp, equal words broadcast.
int conflict_degree(const std::vector<std::pair<int64_t, int>>& accesses) {
  const int per_phase = accesses.empty() || accesses[0].second < 16 ? 32 : 8;
  int worst = 1;
  for (size_t p = 0; p < accesses.size(); p += static_cast<size_t>(per_phase)) {
    std::map<int64_t, std::set<int64_t>> words_of_bank;
    for (size_t i = p; i < std::min(accesses.size(), p + static_cast<size_t>(per_phase)); ++i)
      for (int64_t b = accesses[i].first / 4; b < (accesses[i].first + accesses[i].second + 3) / 4; ++b) words_of_bank[b % 32].insert(b);
    for (auto& [bank, words] : words_of_bank) worst = std::max(worst, static_cast<int>(words.size()));
  }
  return worst;
}

template <int E, int MN, int K, int S, int Threads>
void check_copy() {
  INFO("elem bytes " << E << ", [MN, K] = [" << MN << ", " << K << "], swizzle " << S << ", threads " << Threads);
  const OperandTile tile{MN, K, E, S};
  REQUIRE(tilejit::layout::operand_swizzle(int64_t{K} * E) == S);
  // Source [K, MN], MN innermost, unswizzled; element (k, mn) holds its own index (E bytes, little-endian).
  std::vector<unsigned char> src(static_cast<size_t>(MN) * K * E), dst(src.size(), 0xEE);
  for (int k = 0; k < K; ++k)
    for (int mn = 0; mn < MN; ++mn) {
      const uint32_t id = static_cast<uint32_t>(k * MN + mn) * 2654435761u;
      std::memcpy(&src[static_cast<size_t>((k * MN + mn) * E)], &id, E);
    }
  run_copy<E, MN, K, S, Threads>(src, dst);
  int wrong = 0;
  std::vector<int> written(dst.size(), 0);
  for (int mn = 0; mn < MN; ++mn)
    for (int k = 0; k < K; ++k) {
      const int64_t at = tile.byte_of(mn, k);
      wrong += std::memcmp(&dst[static_cast<size_t>(at)], &src[static_cast<size_t>((k * MN + mn) * E)], E) != 0;
      for (int b = 0; b < E; ++b) ++written[static_cast<size_t>(at + b)];
    }
  CHECK(wrong == 0);
  for (int w : written) REQUIRE(w == 1);  // byte_of is a bijection onto the tile, so every byte was checked

  // Bank conflicts, warp by warp and iteration by iteration: the model of the copy's accesses.
  constexpr int kRun = 16 / E, kRuns = MN * (K / kRun);
  int worst_read = 1, worst_write = 1;
  for (int r0 = 0; r0 < kRuns; r0 += Threads)
    for (int w0 = 0; w0 < Threads; w0 += 32) {
      std::vector<std::pair<int64_t, int>> writes;
      std::vector<std::vector<std::pair<int64_t, int>>> reads(kRun);
      for (int lane = 0; lane < 32; ++lane) {
        const int r = r0 + w0 + lane;
        if (r >= kRuns) continue;
        const int mn = r % MN, k = r / MN * kRun;
        writes.push_back({tile.byte_of(mn, k), 16});
        for (int i = 0; i < kRun; ++i) reads[static_cast<size_t>(i)].push_back({int64_t{(k + i) * MN + mn} * E, E});
      }
      worst_write = std::max(worst_write, conflict_degree(writes));
      for (const auto& rd : reads) worst_read = std::max(worst_read, conflict_degree(rd));
    }
  MESSAGE("copy_k_major<" << E << ", " << MN << ", " << K << ", " << S << ", " << Threads << ">: " << worst_read
                          << "-way reads, " << worst_write << "-way writes");
  // The writes are conflict-free; so are the reads when source rows span whole multiples of 128 bytes,
  // else a warp may straddle two rows that share banks.
  CHECK(worst_write == 1);
  CHECK(worst_read <= (MN * E % 128 == 0 ? 1 : 2));
}

}  // namespace

TEST_CASE("the K-major copy of tf32 and 8-bit wgmma operands puts every element where the descriptors read it") {
  // tf32 (4 bytes): K = 8 .. 64 (32 B to 256 B rows), M/N = 8 .. 256.
  check_copy<4, 128, 32, 128, 256>();
  check_copy<4, 256, 32, 128, 256>();
  check_copy<4, 64, 64, 128, 128>();
  check_copy<4, 64, 16, 64, 128>();
  check_copy<4, 32, 8, 32, 128>();
  check_copy<4, 8, 8, 32, 128>();
  check_copy<4, 136, 32, 128, 256>();  // a run count that is not a multiple of the threads
  // 8-bit (fp8, i8): K = 32 .. 256 bytes.
  check_copy<1, 128, 128, 128, 256>();
  check_copy<1, 256, 128, 128, 256>();
  check_copy<1, 64, 64, 64, 128>();
  check_copy<1, 64, 32, 32, 128>();
  check_copy<1, 128, 256, 128, 128>();
  check_copy<1, 24, 64, 64, 128>();
}

TEST_CASE("swizzled_register_offset agrees with layout::OperandTile for every row and 16-byte column") {
  auto check = [](auto rows_c, auto elem_c, auto swizzle_c, int64_t inner) {
    constexpr int R = decltype(rows_c)::value, E = decltype(elem_c)::value, S = decltype(swizzle_c)::value;
    const OperandTile tile{R, inner, E, S};
    int wrong = 0;
    for (int row = 0; row < R; ++row)
      for (int64_t col = 0; col < inner; ++col)
        wrong += tj::swizzled_register_offset<R, E, S>(row, static_cast<int>(col), tj::swizzle_xor<S>(row)) != tile.byte_of(row, col);
    CHECK(wrong == 0);
  };
  check(std::integral_constant<int, 64>{}, std::integral_constant<int, 2>{}, std::integral_constant<int, 128>{}, 128);
  check(std::integral_constant<int, 32>{}, std::integral_constant<int, 4>{}, std::integral_constant<int, 64>{}, 32);
  check(std::integral_constant<int, 16>{}, std::integral_constant<int, 1>{}, std::integral_constant<int, 32>{}, 96);
}

TEST_CASE("padded_index and xor_index put every element where layout::SharedLayout says") {
  using tilejit::layout::SharedLayout;
  auto check = [](auto inner_c, auto unit_c, auto div_c, auto mod_c, int64_t rows) {
    constexpr int Inner = decltype(inner_c)::value, Unit = decltype(unit_c)::value, Div = decltype(div_c)::value,
                  Mod = decltype(mod_c)::value;
    INFO("inner " << Inner << ", unit " << Unit << ", div " << Div << ", mod " << Mod << ", rows " << rows);
    SharedLayout xs{tilejit::ir::Shape{rows, Inner}, 4, 0, 0};
    xs.xor_unit = Unit, xs.xor_div = Div, xs.xor_mod = Mod;
    const SharedLayout padded{tilejit::ir::Shape{rows, Inner}, 4, 0, Unit};
    int wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < Inner; ++c) {
        const int e = static_cast<int>(r * Inner + c);
        wrong += int64_t{tj::xor_index<Inner, Unit, Div, Mod>(e)} * 4 != xs.offset({r, c});
        wrong += int64_t{tj::padded_index<Inner, Unit>(e)} * 4 != padded.offset({r, c});
      }
    CHECK(wrong == 0);
  };
  check(std::integral_constant<int, 64>{}, std::integral_constant<int, 4>{}, std::integral_constant<int, 4>{},
        std::integral_constant<int, 16>{}, 64);
  check(std::integral_constant<int, 16>{}, std::integral_constant<int, 4>{}, std::integral_constant<int, 2>{},
        std::integral_constant<int, 4>{}, 32);
  check(std::integral_constant<int, 128>{}, std::integral_constant<int, 8>{}, std::integral_constant<int, 1>{},
        std::integral_constant<int, 8>{}, 24);
}
