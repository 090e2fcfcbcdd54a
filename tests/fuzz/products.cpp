// The generator of programs with products: tensor-core dots over TMA tiles in pipelined K loops (GEMMs, persistent
// tile loops, loop nests, two accumulators, attention-like loops with a register operand), accumulator epilogues
// and stores, traced through the DSL while the same statements are printed as the C++ a user would write. Some
// programs take CUDA-core dots instead (Precision::ieee f32 and f64, small tiles), and some store by TMA reduction
// (split-K where the combine is exact).
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common.h"
#include "ops.h"
#include "program.h"
#include "tilejit/dsl/trace.h"
#include "tilejit/error.h"
#include "tilejit/tilejit.h"

namespace tilejit::fuzz {

namespace {

using ir::DType;

// ---- what a program is made of --------------------------------------------------
// Every choice is made from the seed before tracing (the Recipe); the body is a function of the recipe only.

enum class Kind {
  gemm,        ///< one output tile per program: a K loop, an epilogue, a store
  persistent,  ///< fewer or more programs than tiles: for_range(program_id(0), tiles, num_programs(0)) around the K loop
  columns,     ///< one row of tiles per program: a loop over the column tiles around the K loop, carrying row sums
  two_acc,     ///< two products per K step into two accumulators (SwiGLU with separate gate and up weights)
  attention,   ///< S = Q K^T, then O += P V with P in registers, over blocks of keys
};

/// The operand and accumulator types of a product, the inputs' range and what the GPU may differ by.
struct Path {
  DType in, acc;
  double tol;      ///< of max(1, |c|), as tests/gpu/test_gpu_mma.cpp derives them
  double amax;     ///< inputs are uniform in [-amax, amax)
  int64_t max_k;   ///< the largest K the tolerance holds for
  std::vector<int64_t> bk;
  bool cuda_core = false;  ///< a dot that never takes wgmma (Precision::ieee f32, f64): products rounded, summed in order
};

/// CUDA-core dots: each product rounded to the accumulator's type and added in order k = 0, 1, ... on the GPU as in
/// the interpreter (tilejit's emitter and the IR define them so), hence bit-exact accumulators.
const std::vector<Path>& cuda_core_paths() {
  static const std::vector<Path> p = {
      {DType::f32, DType::f32, 0, 1, 512, {8, 16, 32}, true},  // Precision::ieee
      {DType::f64, DType::f64, 0, 1, 512, {8, 16, 32}, true},
  };
  return p;
}

const std::vector<Path>& paths() {
  static const std::vector<Path> p = {
      // bf16 / f16 into f32: the sums' order only (1e-4 of max(1, |c|) for K <= 512, inputs in [-1, 1]).
      {DType::bf16, DType::f32, 1e-4, 1, 512, {16, 32, 64, 128}},
      {DType::bf16, DType::f32, 1e-4, 1, 512, {16, 32, 64, 128}},
      {DType::f16, DType::f32, 1e-4, 1, 512, {16, 32, 64, 128}},
      // tf32: f32 operands truncated to tf32 on both sides (2e-4).
      {DType::f32, DType::f32, 2e-4, 1, 512, {8, 16, 32, 64}},
      // fp8: products accumulated with fewer mantissa bits than f32 (2e-2).
      {DType::f8e4m3, DType::f32, 2e-2, 1, 512, {32, 64, 128}},
      {DType::f8e5m2, DType::f32, 2e-2, 1, 512, {32, 64, 128}},
      // f16 accumulators: rounded to f16 once per instruction on the GPU, after every product in the interpreter, each
      // rounding off by up to half an f16 unit of the partial sum, which can be far larger than the result: seed
      // 30213's element (570, 6) sums to -0.336 through partial sums of up to 9.2, the interpreter's 256 roundings
      // give -0.272, the GPU's 16 give -0.333 (docs/testing.md). 1e-1, twice the GPU suite's 5e-2 for inputs it fixes.
      {DType::f16, DType::f16, 1e-1, 1, 256, {16, 32, 64}},
      {DType::f8e4m3, DType::f16, 1e-1, 1, 256, {32, 64}},
      // 8-bit integers into i32: exact (inputs within 16, so that row sums over 3 tiles stay within i32).
      {DType::i8, DType::i32, 0, 16, 512, {32, 64, 128}},
      {DType::u8, DType::i32, 0, 16, 512, {32, 64}},
  };
  return p;
}

enum class Act { none, relu, silu, gelu, tanh, sigmoid };
enum class Split { none, pairs, halves };             ///< acc.reshape({BM, W / 2, 2}) or ({BM, 2, W / 2}), halves picked by where / sum
enum class Combine { silu_mul, mul, maximum, sub };   ///< how the two halves (or two accumulators) g and u combine
enum class Attn { scaled, sigmoid, row_softmax, online_softmax };

struct Recipe {
  Kind kind = Kind::gemm;
  Path path;
  DType out = DType::f32;
  bool a_trans = false, b_trans = false;  ///< a stored [K, M] (read .trans()), b stored [N, K] (read .trans())
  bool wide = false;                      ///< one accumulator of 2 BN columns, split into gate and up halves
  int64_t bm = 64, bn = 64, bk = 32;      ///< BK is D for attention
  int64_t m = 64, n = 64, k = 64;         ///< attention: queries, keys, D
  bool k_literal = false;                 ///< the K loop's bound as a literal instead of a.size(1)
  int bias = 0;                           ///< 0 none, 1 a row over the columns, 2 a column over the rows
  DType bias_dtype = DType::bf16;
  int scale = 0;                          ///< 0 none, 1 a literal, 2 the scalar parameter alpha
  double scale_value = 1;
  bool f16_to_f32 = false;                ///< an f16 accumulator converted to f32 before the epilogue
  Act act = Act::none;
  Split split = Split::none;
  Combine combine = Combine::silu_mul;
  int rowred = 0;                         ///< 0 none, 1 row sums, 2 row maxima into a second output r
  bool tma_store = true, r_tma_store = true;
  Attn attn = Attn::scaled;
  bool k_trans = true;                    ///< attention: keys stored [S, D] and read .trans() (else stored [D, S])
  int64_t tiles_m = 1, tiles_n = 1;
  int reduce = 0;                         ///< the output's TMA store: 0 plain, 1 StoreReduce::add, 2 StoreReduce::min, 3 StoreReduce::max
  int64_t splits = 1;                     ///< gemm, two_acc: K split over program_id(2), each part reduced into c (exact combines)
  int64_t split_k = 0;                    ///< the K extent of one part (a multiple of BK)
};

/// The element type of row sums or maxima of an accumulator of type `acc`.
DType row_dtype(DType acc) { return acc == DType::f64 ? DType::f64 : ir::is_float(acc) ? DType::f32 : DType::i32; }
/// True when TMA-reducing values of type `d` with `reduce` gives the same result in any order (several programs may
/// then reduce into one element): integer sums, and minima / maxima.
bool exact_combine(DType d, int reduce) { return reduce > 1 || !ir::is_float(d); }

// ---- error bounds -----------------------------------------------------------------
// As in program.cpp: a value's err bounds |gpu - interp| / max(1, |interp|) and mag is a bound on |value| (for
// products, 2 sqrt(K) amax^2: six standard deviations of a sum of K products of uniform inputs).

struct E {
  Val v;
  std::string s;
  double err = 0;
  double mag = 0;
};

/// 32-bit registers per thread of a [rows, cols] block of 32-bit values (an f16 accumulator is converted to f32 or
/// rounded through it in the epilogue, so it counts as f32); layouts pad extents to powers of two.
int regs(int64_t rows, int64_t cols, int warps) {
  const auto pow2 = [](int64_t v) { return int64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(v)))); };
  return static_cast<int>(pow2(rows) * pow2(cols) / (32 * warps));
}

/// Problem sizes: 1-3 tiles per dimension, at or off the tile multiples; K steps of every residue of the stages.
void draw_sizes(Recipe& r, Rng& rng, int stages) {
  const auto extent = [&](int64_t tile, int64_t tiles) { return tile * tiles - (rng.chance(0.5) ? 0 : rng.range(1, tile - 1)); };
  r.tiles_m = rng.range(1, 3);
  r.tiles_n = rng.range(1, r.kind == Kind::attention ? 1 : 3);
  r.m = extent(r.bm, r.tiles_m);
  const int64_t width = r.wide ? 2 * r.bn : r.bn;
  r.n = extent(width, r.tiles_n);
  const int64_t kmax = r.kind == Kind::attention ? 512 : r.path.max_k;
  const int64_t step = r.kind == Kind::attention ? r.bn : r.bk;
  const int64_t steps = rng.range(1, std::max<int64_t>(1, std::min<int64_t>(2 * stages + 1, kmax / step)));
  r.k = step * steps - (rng.chance(0.6) ? 0 : rng.range(1, step - 1));
  r.k_literal = rng.chance(0.2);
}

/// The epilogue, the stores and the output's type.
void draw_epilogue(Recipe& r, Rng& rng) {
  const bool flt = ir::is_float(r.path.acc);
  const bool f16acc = r.path.acc == DType::f16;
  r.f16_to_f32 = f16acc && rng.chance(0.5);
  r.bias = rng.chance(0.4) ? static_cast<int>(rng.range(1, 2)) : 0;
  r.bias_dtype = flt ? rng.pick(std::vector<DType>{DType::bf16, DType::f32, DType::f16}) : rng.pick(std::vector<DType>{DType::i32, DType::i8});
  // A bias tile spans a multiple of 16 bytes (TMA): an i8 row of BN = 8, 24 or 40 columns is read as i32.
  if (r.bias_dtype == DType::i8 && (r.wide ? 2 * r.bn : r.bn) % 16 != 0) r.bias_dtype = DType::i32;
  r.scale = rng.chance(0.35) ? static_cast<int>(rng.range(1, flt ? 2 : 1)) : 0;
  r.scale_value = flt ? rng.pick(std::vector<double>{0.5, 2.0, -1.5, 0.125, 0.75}) : static_cast<double>(rng.range(-3, 3));
  r.act = flt ? rng.pick(std::vector<Act>{Act::none, Act::none, Act::relu, Act::silu, Act::gelu, Act::tanh, Act::sigmoid})
              : rng.pick(std::vector<Act>{Act::none, Act::relu});
  r.split = r.wide ? rng.pick(std::vector<Split>{Split::pairs, Split::halves})
                   : rng.chance(0.25) && r.bn % 16 == 0 ? rng.pick(std::vector<Split>{Split::pairs, Split::halves}) : Split::none;
  r.combine = flt ? rng.pick(std::vector<Combine>{Combine::silu_mul, Combine::silu_mul, Combine::mul, Combine::maximum, Combine::sub})
                  : rng.pick(std::vector<Combine>{Combine::maximum, Combine::sub});
  if (r.kind == Kind::two_acc) r.bias = 0, r.scale = 0, r.act = Act::none, r.split = Split::none;  // g and u combine instead
  r.rowred = rng.chance(0.3) ? static_cast<int>(rng.range(1, 2)) : 0;
  if (r.kind == Kind::columns && r.rowred == 0) r.rowred = 1;
  r.tma_store = rng.chance(0.7);
  r.r_tma_store = rng.chance(0.6);
  r.attn = rng.pick(std::vector<Attn>{Attn::scaled, Attn::sigmoid, Attn::row_softmax, Attn::online_softmax, Attn::online_softmax});
  r.k_trans = rng.chance(0.75);
  if (flt) {
    const bool half = f16acc && !r.f16_to_f32;
    r.out = rng.pick(r.path.acc == DType::f64 ? std::vector<DType>{DType::f64, DType::f64, DType::f32, DType::bf16}
                     : half                   ? std::vector<DType>{DType::f16, DType::f32, DType::f16}
                                              : std::vector<DType>{DType::f32, DType::bf16, DType::bf16, DType::f16});
  } else {
    r.out = rng.pick(std::vector<DType>{DType::i32, DType::i32, DType::f32});
  }
  if (r.kind == Kind::attention) {
    r.out = rng.pick(std::vector<DType>{DType::f32, r.path.in});
    r.bias = 0, r.scale = 0, r.act = Act::none, r.split = Split::none, r.rowred = 0;
  }
}

/// CUDA-core dots (Precision::ieee f32, f64): small tiles, since each thread sums its accumulators' products one by one
/// from shared memory (at most 32 words of accumulators per thread).
void draw_cuda_core(Recipe& r, Rng& ext, int warps) {
  r.path = ext.pick(cuda_core_paths());
  const int accs = r.kind == Kind::two_acc ? 2 : 1;
  const int64_t words = ir::size_of(r.path.acc) / 4;
  for (;;) {
    r.bm = ext.pick(std::vector<int64_t>{16, 32, 32, 64});
    r.bn = ext.pick(std::vector<int64_t>{8, 16, 16, 32, 32, 64});
    r.bk = ext.pick(r.path.bk);
    const int64_t width = r.wide ? 2 * r.bn : r.bn;
    if (accs * r.bm * width * words <= 32 * 32 * warps) break;
  }
}

/// The output's TMA reduction (its type allowing: add for f16, bf16, f32, i32; min / max for f16, bf16, i32) and, for
/// a GEMM or two products whose combine is exact, K split into 2 or 3 parts over program_id(2), each reduced into the
/// same tile (a split f16 / bf16 output takes min or max: an add of floats would depend on the order).
void draw_reduce(Recipe& r, Rng& ext) {
  const bool want = ext.chance(0.2);
  int red = static_cast<int>(ext.range(1, 3));
  const bool split = ext.chance(0.6) && (r.kind == Kind::gemm || r.kind == Kind::two_acc);
  const int64_t splits = ext.range(2, 3);
  const int minmax = static_cast<int>(ext.range(2, 3));
  const DType d = r.out;
  const bool add_ok = d == DType::f16 || d == DType::bf16 || d == DType::f32 || d == DType::i32;
  const bool minmax_ok = d == DType::f16 || d == DType::bf16 || d == DType::i32;
  if (red > 1 && !minmax_ok) red = 1;
  if (red == 1 && !add_ok) red = 0;
  if (split && red == 1 && ir::is_float(d) && minmax_ok) red = minmax;
  if (!want || red == 0) return;
  r.reduce = red;
  r.tma_store = true;  // a reduction is a TMA store's
  if (split && exact_combine(d, red)) {
    r.splits = splits;
    const int64_t steps = (r.k + r.bk - 1) / r.bk;
    r.split_k = (steps + splits - 1) / splits * r.bk;
    r.rowred = 0;  // the row sums of one part of K would race with the others'
  }
}

/// The recipe of `seed` and the program's parameters, grid and configuration.
Recipe plan(Program& p, Rng& rng, Rng& ext) {
  Recipe r;
  const int64_t kk = rng.range(0, 99);
  r.kind = kk < 30 ? Kind::gemm : kk < 50 ? Kind::persistent : kk < 62 ? Kind::columns : kk < 78 ? Kind::two_acc : Kind::attention;
  const int warps = rng.chance(0.5) ? 4 : 8;
  const int stages = static_cast<int>(rng.range(1, 4));
  if (r.kind == Kind::attention) {
    r.path = rng.chance(0.7) ? paths()[0] : paths()[2];  // 16-bit operands into f32 (P goes to registers)
    // One warpgroup along N (the register operand's rule) wants BM >= 64 per warpgroup.
    for (int tries = 0;; ++tries) {
      r.bm = warps == 8 ? 128 : rng.pick(std::vector<int64_t>{64, 64, 128});
      r.bn = rng.pick(std::vector<int64_t>{16, 32, 64, 64, 128, 128, 256});
      r.bk = rng.pick(std::vector<int64_t>{16, 32, 64, 64, 128});
      const int live = regs(r.bm, r.bn, warps) * 3 / 2 + regs(r.bm, r.bk, warps);
      const int64_t smem = (r.bm * r.bk + 2 * stages * r.bn * r.bk) * 2;
      if ((live <= 112 && smem <= 150 * 1024) || tries > 50) break;
    }
  } else {
    for (int tries = 0;; ++tries) {
      r.path = rng.pick(paths());
      r.a_trans = rng.chance(0.25);
      r.b_trans = rng.chance(0.5);
      r.wide = r.kind == Kind::gemm && rng.chance(0.25);
      r.bm = rng.pick(std::vector<int64_t>{64, 64, 128, 128, 192, 256});
      const bool int8 = !ir::is_float(r.path.in);
      r.bn = rng.pick(int8 ? std::vector<int64_t>{8, 16, 24, 32, 48, 64, 96, 128, 256}
                           : std::vector<int64_t>{8, 16, 24, 32, 40, 48, 64, 96, 128, 160, 192, 256});
      r.bk = rng.pick(r.path.bk);
      const int64_t width = r.wide ? 2 * r.bn : r.bn;
      const bool sixteen = ir::size_of(r.path.in) == 2;
      // An M/N-major 16-bit b tile is read in place: its rows must be whole 32-byte swizzle units.
      if (!r.b_trans && sixteen && width * 2 % 32 != 0) continue;
      // TMA boxes span a multiple of 16 bytes in their innermost dimension.
      if (!r.b_trans && width * ir::size_of(r.path.in) % 16 != 0) continue;
      const int accs = r.kind == Kind::two_acc ? 2 : 1;
      const int live = accs * regs(r.bm, width, warps);
      const int64_t bytes = ir::size_of(r.path.in);
      const int64_t smem = stages * (r.bm * r.bk + accs * r.bk * width) * bytes + r.bm * width * 4;
      if (width <= 256 && live <= (accs == 2 ? 96 : 128) && smem <= 160 * 1024) break;
      if (tries > 100) {  // a shape that always fits
        r.path = paths()[0];
        r.wide = false;
        r.bm = 64, r.bn = 64, r.bk = 32;
        break;
      }
    }
  }
  p.config = Config{{"BM", r.bm}, {"BN", r.bn}, {r.kind == Kind::attention ? "D" : "BK", r.bk}}.num_warps(warps).num_stages(stages);
  p.blocks = {"BM", "BN", r.kind == Kind::attention ? "D" : "BK"};

  // Choices added after the family's first release draw from a stream of their own (`ext`), so that a seed that
  // takes none of them makes the program it made before: CUDA-core dots replace the shape, sizes and epilogue.
  const bool cuda_core = ext.chance(0.1) && r.kind != Kind::attention;
  if (cuda_core) {
    draw_cuda_core(r, ext, warps);
    p.config = Config{{"BM", r.bm}, {"BN", r.bn}, {"BK", r.bk}}.num_warps(warps).num_stages(stages);
  }
  draw_sizes(r, cuda_core ? ext : rng, stages);
  draw_epilogue(r, cuda_core ? ext : rng);
  draw_reduce(r, ext);
  // Attention's loop with its P V issued in the next iteration (passes::overlap_products) half of the time: drawn
  // last, so that every earlier choice of a seed stays what it was.
  if (r.kind == Kind::attention && ext.chance(0.5)) p.config.overlap_products();

  // Parameters.
  const auto tensor = [&](const std::string& name, DType d, std::vector<int64_t> sizes, bool output, double amax) {
    TensorSpec t;
    t.name = name;
    t.dtype = d;
    t.rank = static_cast<int>(sizes.size());
    t.output = output;
    t.tma_store = output;
    const int64_t q = per16(d);
    for (int i = 0; i < t.rank; ++i) t.sizes[static_cast<size_t>(i)] = sizes[static_cast<size_t>(i)];
    t.strides[static_cast<size_t>(t.rank - 1)] = 1;
    if (t.rank == 2) t.strides[0] = round_up(t.sizes[1], q) + (rng.chance(0.2) ? q * rng.range(1, 2) : 0);
    t.lo = -amax;
    t.hi = amax;
    if (d == DType::u8) t.lo = 0;
    p.tensors.push_back(t);
  };
  const DType in = r.path.in;
  const double amax = r.path.amax;
  if (r.kind == Kind::attention) {
    tensor("q", in, {r.m, r.bk}, false, 1);
    tensor("k", in, r.k_trans ? std::vector<int64_t>{r.k, r.bk} : std::vector<int64_t>{r.bk, r.k}, false, 1);
    tensor("v", in, {r.k, r.bk}, false, 1);
    tensor("o", r.out, {r.m, r.bk}, true, 1);
    p.tensors.back().tma_store = r.tma_store;
    p.grid = dim3(static_cast<uint32_t>(r.tiles_m), 1);
    // Two or more consumer warpgroups taking turns at the tensor cores (which adds the producer warpgroup) half
    // of the time: drawn last, so that every earlier choice of a seed stays what it was.
    if (p.config.num_warps() >= 8 && ext.chance(0.5)) p.config.pingpong();
    return r;
  }
  tensor("a", in, r.a_trans ? std::vector<int64_t>{r.k, r.m} : std::vector<int64_t>{r.m, r.k}, false, amax);
  const std::vector<int64_t> bshape = r.b_trans ? std::vector<int64_t>{r.n, r.k} : std::vector<int64_t>{r.k, r.n};
  if (r.kind == Kind::two_acc) {
    tensor("wg", in, bshape, false, amax);
    tensor("wu", in, bshape, false, amax);
  } else {
    tensor("b", in, bshape, false, amax);
  }
  if (r.bias) tensor("bias", r.bias_dtype, {r.bias == 1 ? r.n : r.m}, false, ir::is_float(r.bias_dtype) ? 1 : 16);
  // The output: half the accumulator's columns after a split.
  const int64_t out_n = r.split == Split::none ? r.n : (r.n + 1) / 2;
  const DType out = r.out;
  // A reduced integer output starts in [-16, 16), so that minima and maxima pick both sides.
  tensor("c", out, {r.m, r.tma_store ? round_up(out_n, per16(out)) : out_n}, true, r.reduce && !ir::is_float(out) ? 16 : 1);
  p.tensors.back().tma_store = r.tma_store;
  if (r.rowred) {
    const DType rd = row_dtype(r.path.acc);
    const int64_t rows = r.kind == Kind::columns ? 1 : r.tiles_n;
    tensor("r", rd, {rows, r.r_tma_store ? round_up(r.m, per16(rd)) : r.m}, true, 1);
    p.tensors.back().tma_store = r.r_tma_store;
  }
  if (r.scale == 2) {
    ScalarSpec s;
    s.dtype = r.path.acc == DType::f16 && !r.f16_to_f32 ? DType::f16 : r.path.acc == DType::f64 ? DType::f64 : DType::f32;
    s.value = r.scale_value;
    s.name = "alpha";
    p.scalars.push_back(s);
  }
  const uint32_t tiles = static_cast<uint32_t>(r.tiles_m * r.tiles_n);
  switch (r.kind) {
    case Kind::persistent: {
      // Fewer programs than tiles (several tiles each), as many, or more (some programs idle).
      const int64_t g = rng.pick(std::vector<int64_t>{1, 2, tiles - 1, tiles, tiles + 1, tiles + 3});
      p.grid = dim3(static_cast<uint32_t>(std::max<int64_t>(1, g)), 1);
      break;
    }
    case Kind::columns: p.grid = dim3(static_cast<uint32_t>(r.tiles_m), 1); break;
    default: p.grid = dim3(static_cast<uint32_t>(r.tiles_m), static_cast<uint32_t>(r.tiles_n), static_cast<uint32_t>(r.splits)); break;
  }
  // Clusters of two programs (TMA multicast of the tiles both load) where the grid is whole clusters: drawn
  // last, so that every earlier choice of a seed stays what it was.
  if (ext.chance(0.25)) {
    if (p.grid.x % 2 == 0) p.config.cluster(2, 1);
    else if (p.grid.y % 2 == 0) p.config.cluster(1, 2);
  }
  return r;
}

// ---- the body -----------------------------------------------------------------
class Body {
 public:
  Body(const Program& p, const Recipe& r, TraceRecord& rec) : p_(p), r_(r), rec_(rec) {}

  void run(ir::Graph& g) {
    for (size_t i = 0; i < p_.tensors.size(); ++i) {
      const TensorSpec& t = p_.tensors[i];
      tensors_.push_back(param_tensor(g, static_cast<int>(i), t.dtype, t.rank));
    }
    for (size_t i = 0; i < p_.scalars.size(); ++i)
      scalars_.push_back(param_scalar(g, static_cast<int>(p_.tensors.size() + i), p_.scalars[i].dtype));
    for (const std::string& b : p_.blocks) param_block(g, b);
    rec_.tolerance.assign(p_.tensors.size(), 0.0);
    switch (r_.kind) {
      case Kind::gemm:
      case Kind::two_acc: {
        const E m = bind("m", mul(pid(0), r_.bm, "BM"));
        const E n = bind("n", mul(pid(1), width(), paren(width_s())));
        tile(m, n, E{pid(1).v, "program_id(1)"});
        break;
      }
      case Kind::persistent: persistent(); break;
      case Kind::columns: columns(); break;
      case Kind::attention: attention(); break;
    }
  }
  std::string text() const { return text_; }

 private:
  // ---- printing and small expressions ----
  void line(const std::string& s) { text_ += std::string(static_cast<size_t>(2 * indent_), ' ') + s + "\n"; }
  E bind(const std::string& name, E e) {
    line("auto " + name + " = " + e.s + ";");
    e.s = name;
    return e;
  }
  /// A new name for the next step of the epilogue (x0, x1, ...).
  std::string next_x() { return "x" + std::to_string(xs_++); }
  int index(const std::string& name) const {
    for (size_t i = 0; i < p_.tensors.size(); ++i)
      if (p_.tensors[i].name == name) return static_cast<int>(i);
    throw InternalError("fuzz: no tensor " + name);
  }
  const TensorRef& tref(const std::string& name) const { return tensors_[static_cast<size_t>(index(name))]; }
  static std::string paren(const std::string& s) { return s.find(' ') == std::string::npos ? s : "(" + s + ")"; }

  E pid(int axis) { return E{program_id(axis), "program_id(" + int_str(axis) + ")"}; }
  E lit(int64_t v, const std::string& s) { return E{int_literal(DType::i32, v), s}; }
  /// x * c, printed with the name of c (a Meta parameter or a number).
  E mul(const E& x, int64_t c, const std::string& cs) { return E{binary_literal(Binary::mul, x.v, static_cast<double>(c)), x.s + " * " + cs}; }
  E sop(Binary op, const E& x, const E& y, const char* sym) { return E{binary(op, x.v, y.v), paren(x.s) + " " + sym + " " + paren(y.s)}; }
  E sop_lit(Binary op, const E& x, int64_t c, const std::string& cs, const char* sym) {
    return E{binary_literal(op, x.v, static_cast<double>(c)), paren(x.s) + " " + sym + " " + cs};
  }
  /// t.size(d).to<i32>()
  E size_i32(const std::string& t, int d) { return E{cast(tensor_size(tref(t), d), DType::i32), t + ".size(" + int_str(d) + ").to<i32>()"}; }
  /// cdiv(extent, tile) as the user writes it: (extent + T - 1) / T.
  E tiles_of(const E& extent, int64_t tile, const std::string& ts) {
    const E plus = E{binary_literal(Binary::add, extent.v, static_cast<double>(tile - 1)), extent.s + " + " + ts + " - 1"};
    return E{binary_literal(Binary::div, plus.v, static_cast<double>(tile)), "(" + plus.s + ") / " + paren(ts)};
  }
  E load2(const std::string& t, const E& c0, const E& c1, int64_t b0, int64_t b1, const std::string& b0s, const std::string& b1s) {
    return E{descriptor_load(tref(t), {c0.v, c1.v}, {b0, b1}, {}, 0),
             "descriptor_load(" + t + ", {" + c0.s + ", " + c1.s + "}, {" + b0s + ", " + b1s + "})"};
  }
  E trans(const E& x) { return E{permute(x.v, {1, 0}), x.s + ".trans()"}; }
  E zeros2(DType d, int64_t r, int64_t c, const std::string& rs, const std::string& cs) {
    return E{full(d, {r, c}, 0), "zeros<" + tag(d) + ">({" + rs + ", " + cs + "})"};
  }
  E convert(const E& x, DType d) {
    if (x.v.dtype == d) return x;
    E r{cast(x.v, d), paren(x.s) + ".to<" + tag(d) + ">()", x.err, x.mag};
    if (ir::is_float(d) && r.err > 0) r.err += ulp(d);
    return r;
  }
  std::string flit(double v, DType d) const { return ir::is_float(d) ? float_str(v, d == DType::f64 ? DType::f64 : DType::f32) : int_str(static_cast<int64_t>(v)); }

  // ---- the K loop ----
  std::string width_s() const { return r_.wide ? "2 * BN" : "BN"; }
  int64_t width() const { return r_.wide ? 2 * r_.bn : r_.bn; }
  /// The a operand's tile at rows m, K step k.
  E a_tile(const E& m, const E& k) {
    if (r_.a_trans) return trans(load2("a", k, m, r_.bk, r_.bm, "BK", "BM"));
    return load2("a", m, k, r_.bm, r_.bk, "BM", "BK");
  }
  E b_tile(const std::string& b, const E& n, const E& k) {
    if (r_.b_trans) return trans(load2(b, n, k, width(), r_.bk, width_s(), "BK"));
    return load2(b, k, n, r_.bk, width(), "BK", width_s());
  }
  /// The accumulator(s) of the tile at (m, n): the K loop.
  std::vector<E> k_loop(const E& m, const E& n) {
    const DType acc = r_.path.acc;
    E lo = lit(0, "0");
    E hi = r_.k_literal ? lit(r_.k, int_str(r_.k)) : size_i32("a", r_.a_trans ? 0 : 1);
    if (r_.splits > 1) {
      // Split-K: this program's part of K, [k0, min(k0 + KS, K)) (empty when K is short), reduced into c.
      const std::string ks = int_str(r_.split_k);
      lo = bind("k0", mul(pid(2), r_.split_k, ks));
      hi = bind("k1", E{binary(Binary::minimum, binary_literal(Binary::add, lo.v, static_cast<double>(r_.split_k)), hi.v),
                        "minimum(k0 + " + ks + ", " + hi.s + ")"});
    }
    const bool two = r_.kind == Kind::two_acc;
    const std::string t = "Value<" + tag(acc) + ", 2>";
    const E z = zeros2(acc, r_.bm, width(), "BM", width_s());
    std::vector<std::string> names = two ? std::vector<std::string>{"g", "u"} : std::vector<std::string>{"acc"};
    if (two)
      line("auto [g, u] = for_range(" + lo.s + ", " + hi.s + ", BK, std::tuple{" + z.s + ", " + z.s + "}, [&](Scalar<i32> k, " + t + " g, " + t + " u) {");
    else
      line("auto acc = for_range(" + lo.s + ", " + hi.s + ", BK, " + z.s + ", [&](Scalar<i32> k, " + t + " acc) {");
    const std::vector<Val> init = two ? std::vector<Val>{z.v, full(acc, {r_.bm, width()}, 0)} : std::vector<Val>{z.v};
    const auto out = for_range_n(lo.v, hi.v, int_literal(DType::i32, r_.bk), init,
                                 [&](const Val& kv, const std::vector<Val>& carried) {
                                   ++indent_;
                                   const E k{kv, "k"};
                                   std::vector<Val> next;
                                   if (two) {
                                     const E a = bind("at", a_tile(m, k));
                                     const E dg{dot(a.v, b_tile("wg", n, k).v, carried[0], precision()), "dot(at, " + b_tile_text("wg") + ", g" + precision_s() + ")"};
                                     const E du{dot(a.v, b_tile("wu", n, k).v, carried[1], precision()), "dot(at, " + b_tile_text("wu") + ", u" + precision_s() + ")"};
                                     line("return std::tuple{" + dg.s + ", " + du.s + "};");
                                     next = {dg.v, du.v};
                                   } else {
                                     const E a = a_tile(m, k), b = b_tile("b", n, k);
                                     line("return dot(" + a.s + ", " + b.s + ", acc" + precision_s() + ");");
                                     next = {dot(a.v, b.v, carried[0], precision())};
                                   }
                                   --indent_;
                                   return next;
                                 });
    line("});");
    const double mag = 2 * std::sqrt(static_cast<double>(r_.k)) * r_.path.amax * r_.path.amax;
    std::vector<E> accs;
    for (size_t i = 0; i < out.size(); ++i) accs.push_back(E{out[i], names[i], r_.path.tol, mag});
    return accs;
  }
  /// Precision::ieee for the CUDA-core f32 path (the default tf32 elsewhere), and its text (", Precision::ieee").
  ir::DotPrecision precision() const {
    return r_.path.cuda_core && r_.path.in == DType::f32 ? ir::DotPrecision::ieee : ir::DotPrecision::tf32;
  }
  std::string precision_s() const { return precision() == ir::DotPrecision::ieee ? ", Precision::ieee" : ""; }
  /// The printed b tile (the loads of b_tile print the same text; this one names it without tracing again).
  std::string b_tile_text(const std::string& b) const {
    if (r_.b_trans) return "descriptor_load(" + b + ", {n, k}, {" + width_s() + ", BK}).trans()";
    return "descriptor_load(" + b + ", {k, n}, {BK, " + width_s() + "})";
  }

  // ---- epilogue ----
  /// f(x) for an activation, with its error: gain bounds f'(x) max(1, |x|) / max(1, |f(x)|).
  E activate(const E& x, Act a) {
    const DType d = x.v.dtype;
    const bool flt = ir::is_float(d);
    const double mt = flt ? math_tol(d) : 0;
    switch (a) {
      case Act::none: return x;
      case Act::relu: return E{binary_literal(Binary::maximum, x.v, 0), "maximum(" + x.s + ", " + flit(0, d) + ")", x.err, x.mag};
      case Act::sigmoid: return E{unary(Unary::sigmoid, x.v), "sigmoid(" + x.s + ")", 0.25 * x.err + mt + ulp(d), 1};
      case Act::tanh: return E{unary(Unary::tanh, x.v), "tanh(" + x.s + ")", x.err + mt + ulp(d), 1};
      case Act::silu: {
        const Val s = unary(Unary::sigmoid, x.v);
        return E{binary(Binary::mul, x.v, s), paren(x.s) + " * sigmoid(" + x.s + ")", 1.1 * x.err + 2 * mt + 2 * ulp(d), x.mag};
      }
      case Act::gelu: {
        // x * 0.5 * (erf(x * 0.70710678) + 1)
        const Val h = binary_literal(Binary::mul, x.v, 0.5);
        const Val e = unary(Unary::erf, binary_literal(Binary::mul, x.v, 0.70710678));
        const Val v = binary(Binary::mul, h, binary_literal(Binary::add, e, 1.0));
        return E{v, paren(x.s) + " * " + flit(0.5, d) + " * (erf(" + paren(x.s) + " * " + flit(0.70710678, d) + ") + " + flit(1, d) + ")",
                 1.2 * x.err + 2 * mt + 4 * ulp(d), x.mag};
      }
    }
    return x;
  }

  /// g and u combined: silu(g) * u, g * u, maximum(g, u) or g - u.
  E combine(const E& g, const E& u) {
    const DType d = g.v.dtype;
    const double ea = g.err * std::max(1.0, g.mag), eb = u.err * std::max(1.0, u.mag);
    switch (r_.combine) {
      case Combine::silu_mul: {
        const E s = activate(g, Act::silu);
        return E{binary(Binary::mul, s.v, u.v), paren(s.s) + " * " + u.s,
                 s.err * std::max(1.0, u.mag) + u.err * std::max(1.0, s.mag) + s.err * u.err + ulp(d), s.mag * u.mag};
      }
      case Combine::mul:
        return E{binary(Binary::mul, g.v, u.v), g.s + " * " + u.s,
                 g.err * std::max(1.0, u.mag) + u.err * std::max(1.0, g.mag) + g.err * u.err + (g.err + u.err > 0 ? ulp(d) : 0), g.mag * u.mag};
      case Combine::maximum: return E{binary(Binary::maximum, g.v, u.v), "maximum(" + g.s + ", " + u.s + ")", std::max(g.err, u.err), std::max(g.mag, u.mag)};
      case Combine::sub: return E{binary(Binary::sub, g.v, u.v), g.s + " - " + u.s, ea + eb > 0 ? ea + eb + ulp(d) : 0, g.mag + u.mag};
    }
    return g;
  }

  /// The epilogue of an accumulator: bias, scale, activation or split into halves; returns the value to store.
  E epilogue(E x, const E& m, const E& n) {
    const bool flt = ir::is_float(x.v.dtype);
    if (x.v.dtype == DType::f16 && r_.f16_to_f32) x = bind(next_x(), convert(x, DType::f32));
    const DType d = x.v.dtype;
    if (r_.bias) {
      const bool row = r_.bias == 1;
      const E t{descriptor_load(tref("bias"), {row ? n.v : m.v}, {row ? width() : r_.bm}, {}, 0),
                "descriptor_load(bias, {" + (row ? n.s : m.s) + "}, {" + (row ? width_s() : "BM") + "})"};
      const E b = convert(t, d);
      const E bb{expand_dims(b.v, row ? 0 : 1), b.s + ".expand_dims<" + (row ? "0" : "1") + ">()"};
      const double bmax = flt ? 1 : 16;
      const double err = x.err > 0 ? x.err * (1 + bmax) + ulp(d) : 0;
      x = bind(next_x(), E{binary(Binary::add, x.v, bb.v), x.s + " + " + bb.s, err, x.mag + bmax});
    }
    if (r_.scale) {
      const double c = r_.scale_value;
      const E s = r_.scale == 2 ? E{scalars_[0], "alpha"} : E{Val{}, flit(c, d)};
      const Val v = r_.scale == 2 ? binary(Binary::mul, x.v, scalars_[0]) : binary_literal(Binary::mul, x.v, c);
      const double err = x.err > 0 ? x.err * std::max(1.0, std::fabs(c)) + ulp(d) : 0;
      x = bind(next_x(), E{v, paren(x.s) + " * " + s.s, err, x.mag * std::fabs(c)});
    }
    if (r_.split != Split::none) {
      // Gate and up halves: columns 2j and 2j + 1 (pairs), or the first and second half of the tile (halves).
      const bool pairs = r_.split == Split::pairs;
      const int64_t w = width(), h = w / 2;
      const std::string ws = width_s(), hs = r_.wide ? "BN" : "BN / 2";
      const std::vector<int64_t> shape = pairs ? std::vector<int64_t>{r_.bm, h, 2} : std::vector<int64_t>{r_.bm, 2, h};
      const std::string shs = pairs ? "{BM, " + hs + ", 2}" : "{BM, 2, " + hs + "}";
      const int axis = pairs ? 2 : 1;
      const E parts = bind("parts", E{reshape(x.v, shape), x.s + ".reshape(" + shs + ")", x.err, x.mag});
      const E which = bind("which", E{arange_along(2, 3, axis), std::string("arange(0, 2).reshape(") + (pairs ? "{1, 1, 2}" : "{1, 2, 1}") + ")"});
      const auto half = [&](int i, const char* name) {
        const Val c = binary_literal(Binary::eq, which.v, i);
        const Val sel = where_literal(c, parts.v, 0);
        return bind(name, E{reduce(Reduction::sum, sel, axis), "sum(where(which == " + int_str(i) + ", parts, " + flit(0, d) + "), " + int_str(axis) + ")",
                            x.err, x.mag});
      };
      const E g = half(0, "g"), u = half(1, "u");
      return combine(g, u);
    }
    return activate(x, r_.act);
  }

  /// Stores the tile `v` of `c` at (m, n), by TMA (reduced into memory with `reduce`: 1 add, 2 min, 3 max) or by a
  /// masked pointer store; records its tolerance.
  void store_tile(const std::string& c, const E& v, const E& m, const E& n, int64_t rows, int64_t cols, const std::string& rows_s,
                  const std::string& cols_s, bool tma, int reduce = 0) {
    const int t = index(c);
    // A reduction combines v with memory's prior contents p (|p| <= 1, the same on both sides): |v| <= max(1, |v + p|) + 1
    // doubles the error relative to the result, and an add rounds once more in the output's type.
    const double err = reduce && v.err > 0 ? 2 * v.err + (reduce == 1 ? ulp(v.v.dtype) : 0) : v.err;
    rec_.tolerance[static_cast<size_t>(t)] = std::max(rec_.tolerance[static_cast<size_t>(t)], err);
    if (tma) {
      static const char* reduces[] = {"", ", StoreReduce::add", ", StoreReduce::min", ", StoreReduce::max"};
      descriptor_store(tref(c), {m.v, n.v}, v.v, reduce);
      line("descriptor_store(" + c + ", {" + m.s + ", " + n.s + "}, " + v.s + reduces[reduce] + ");");
      return;
    }
    const E ri = bind(c + "_rows", E{binary(Binary::add, arange_along(rows, 2, 0), m.v), paren(m.s) + " + arange(0, " + rows_s + ").reshape({" + rows_s + ", 1})"});
    const E ci = bind(c + "_cols", E{binary(Binary::add, arange_along(cols, 2, 1), n.v), paren(n.s) + " + arange(0, " + cols_s + ").reshape({1, " + cols_s + "})"});
    // i32 offsets (one register per element; the tensors are far below 2^31 elements).
    const Val off = binary(Binary::add, binary(Binary::mul, ri.v, cast(tensor_stride(tref(c), 0), DType::i32)), ci.v);
    const Val mask = binary(Binary::bit_and, binary(Binary::lt, ri.v, tensor_size(tref(c), 0)), binary(Binary::lt, ci.v, tensor_size(tref(c), 1)));
    store(tref(c), off, v.v, mask);
    line("store(" + c + ", " + ri.s + " * " + c + ".stride(0).to<i32>() + " + ci.s + ", " + v.s + ", (" + ri.s + " < " + c + ".size(0)) & (" + ci.s + " < " + c +
         ".size(1)));");
  }

  /// Row sums or maxima of `x` (f32 or i32, [BM, W]).
  E row_reduce(const E& x) {
    const bool sum = r_.rowred == 1;
    const DType d = ir::is_float(x.v.dtype) ? row_dtype(x.v.dtype) : DType::i32;
    const E y = convert(x, d);
    const double n = static_cast<double>(dsl::detail::graph().node(y.v.id).shape.dims[1]);
    const double ea = y.err * std::max(1.0, y.mag);
    // A float sum's order differs between the GPU and the interpreter: it starts an error even from exact values.
    if (sum)
      return E{reduce(Reduction::sum, y.v, 1), "sum(" + y.s + ", 1)", ir::is_float(d) ? n * ea + n * n * ulp(d) * std::max(1.0, y.mag) : 0, n * y.mag};
    return E{reduce(Reduction::max, y.v, 1), "max(" + y.s + ", 1)", y.err, y.mag};
  }

  void store_rows(const E& rs, const E& row, const E& m) {
    const E r2{expand_dims(rs.v, 0), paren(rs.s) + ".expand_dims<0>()", rs.err, rs.mag};
    store_tile("r", r2, row, m, 1, r_.bm, "1", "BM", r_.r_tma_store);
  }

  /// K loop, epilogue and stores of the tile at (m, n); `ntile` is the column tile's index (rows of r).
  /// Returns the value stored (for the row sums of a loop over column tiles).
  E tile(const E& m, const E& n, const E& ntile) {
    std::vector<E> accs = k_loop(m, n);
    E v;
    if (r_.kind == Kind::two_acc) {
      E g = accs[0], u = accs[1];
      if (g.v.dtype == DType::f16 && r_.f16_to_f32) {
        g = bind("gf", convert(g, DType::f32));
        u = bind("uf", convert(u, DType::f32));
      }
      v = combine(g, u);
    } else {
      v = epilogue(accs[0], m, n);
    }
    v = bind("y", v);
    const E out = convert(v, r_.out);
    // After a split the output has half the accumulator's columns: BN (of 2 BN) or BN / 2.
    const bool half = r_.split != Split::none;
    const E nc = half ? bind("nc", sop_lit(Binary::div, n, 2, "2", "/")) : n;
    store_tile("c", out, m, nc, r_.bm, half ? width() / 2 : r_.bn, "BM", half ? (r_.wide ? "BN" : "BN / 2") : "BN", r_.tma_store, r_.reduce);
    if (r_.rowred && r_.kind != Kind::columns) store_rows(row_reduce(v), ntile, m);
    return v;
  }

  // ---- loop nests ----
  void persistent() {
    const E tn = bind("tiles_n", tiles_of(size_i32("b", r_.b_trans ? 0 : 1), width(), width_s()));
    const E tm = tiles_of(size_i32("a", r_.a_trans ? 1 : 0), r_.bm, "BM");
    const E tiles = bind("tiles", E{binary(Binary::mul, tm.v, tn.v), tm.s + " * tiles_n"});
    line("for_range(program_id(0), tiles, num_programs(0), [&](Scalar<i32> t) {");
    for_range_n(program_id(0), tiles.v, num_programs(0), {}, [&](const Val& tv, const std::vector<Val>&) {
      ++indent_;
      const E t{tv, "t"};
      const E tr = E{binary(Binary::div, t.v, tn.v), "t / tiles_n"};
      const E tc = bind("j", E{binary(Binary::rem, t.v, tn.v), "t % tiles_n"});
      const E m = bind("m", mul(tr, r_.bm, "BM"));
      const E n = bind("n", mul(tc, width(), paren(width_s())));
      tile(m, n, tc);
      --indent_;
      return std::vector<Val>{};
    });
    line("});");
  }

  void columns() {
    const E m = bind("m", mul(pid(0), r_.bm, "BM"));
    const E tn = bind("tiles_n", tiles_of(size_i32("b", r_.b_trans ? 0 : 1), width(), width_s()));
    const DType rd = row_dtype(r_.path.acc);
    const std::string rt = "Value<" + tag(rd) + ", 1>";
    line("auto rs = for_range(0, tiles_n, 1, zeros<" + tag(rd) + ">({BM}), [&](Scalar<i32> j, " + rt + " rs) {");
    double err = 0, mag = 0;
    const auto out = for_range_n(int_literal(DType::i32, 0), tn.v, int_literal(DType::i32, 1), {full(rd, {r_.bm}, 0)},
                                 [&](const Val& jv, const std::vector<Val>& carried) {
                                   ++indent_;
                                   const E j{jv, "j"};
                                   const E n = bind("n", mul(j, width(), paren(width_s())));
                                   const E v = tile(m, n, j);
                                   const E red = row_reduce(v);
                                   const E next{binary(r_.rowred == 1 ? Binary::add : Binary::maximum, carried[0], red.v),
                                                r_.rowred == 1 ? "rs + " + red.s : "maximum(rs, " + red.s + ")"};
                                   const double trips = static_cast<double>(r_.tiles_n);
                                   err = r_.rowred == 1 && red.err > 0 ? trips * red.err * std::max(1.0, red.mag) + trips * ulp(rd) * trips * red.mag : red.err;
                                   mag = r_.rowred == 1 ? trips * red.mag : red.mag;
                                   line("return " + next.s + ";");
                                   --indent_;
                                   return std::vector<Val>{next.v};
                                 });
    line("});");
    store_rows(E{out[0], "rs", err, mag}, lit(0, "0"), m);
  }

  // ---- attention ----
  void attention() {
    const DType in = r_.path.in;
    const int64_t d = r_.bk;
    const E m = bind("m", mul(pid(0), r_.bm, "BM"));
    const E zero = lit(0, "0");
    const E qt = bind("qt", load2("q", m, zero, r_.bm, d, "BM", "D"));
    const E hi = r_.k_literal ? lit(r_.k, int_str(r_.k)) : size_i32("v", 0);
    // A power of two near 1 / sqrt(D), so that scaled scores stay within a few units.
    const double scale = std::exp2(-std::round(std::log2(std::sqrt(static_cast<double>(d)))));
    const double smag = 2 * std::sqrt(static_cast<double>(d)) * scale;
    const auto scores = [&](const E& j) {
      const E kt = r_.k_trans ? trans(load2("k", j, zero, r_.bn, d, "BN", "D")) : load2("k", zero, j, d, r_.bn, "D", "BN");
      const E z = zeros2(DType::f32, r_.bm, r_.bn, "BM", "BN");
      const E s{dot(qt.v, kt.v, z.v), "dot(qt, " + kt.s + ", " + z.s + ")"};
      return bind("s", E{binary_literal(Binary::mul, s.v, scale), s.s + " * " + float_str(scale, DType::f32)});
    };
    const auto vtile = [&](const E& j) { return load2("v", j, zero, r_.bn, d, "BN", "D"); };
    const std::string acc_t = "Value<f32, 2>";
    const E zacc = zeros2(DType::f32, r_.bm, d, "BM", "D");
    // P's rounding to 16 bits may differ by a unit where the sums' order moves S across a rounding boundary: a few
    // such units per row of O (tests/gpu/test_gpu_mma.cpp allows 2e-2 of max(1, |o|) for P in [0, 1]).
    double pmag = 1;
    E o;
    if (r_.attn == Attn::online_softmax) {
      line("auto [mi, li, acc] = for_range(0, " + hi.s + ", BN, std::tuple{full<f32>({BM}, -1e30f), zeros<f32>({BM}), " + zacc.s +
           "}, [&](Scalar<i32> j, Value<f32, 1> mi, Value<f32, 1> li, " + acc_t + " acc) {");
      const auto out = for_range_n(int_literal(DType::i32, 0), hi.v, int_literal(DType::i32, r_.bn),
                                   {full(DType::f32, {r_.bm}, -1e30), full(DType::f32, {r_.bm}, 0), zacc.v},
                                   [&](const Val& jv, const std::vector<Val>& c) {
                                     ++indent_;
                                     const E j{jv, "j"};
                                     const E s = scores(j);
                                     const E mn = bind("m_new", E{binary(Binary::maximum, c[0], reduce(Reduction::max, s.v, 1)), "maximum(mi, max(s, 1))"});
                                     const E pp = bind("p", E{unary(Unary::exp2, binary(Binary::sub, s.v, expand_dims(mn.v, 1))), "exp2(s - m_new.expand_dims<1>())"});
                                     const E alpha = bind("alpha", E{unary(Unary::exp2, binary(Binary::sub, c[0], mn.v)), "exp2(mi - m_new)"});
                                     const E pv{dot(cast(pp.v, in), vtile(j).v, binary(Binary::mul, c[2], expand_dims(alpha.v, 1))),
                                                "dot(p.to<" + tag(in) + ">(), " + vtile_text() + ", acc * alpha.expand_dims<1>())"};
                                     const Val l = binary(Binary::add, binary(Binary::mul, c[1], alpha.v), reduce(Reduction::sum, pp.v, 1));
                                     line("return std::tuple{m_new, li * alpha + sum(p, 1), " + pv.s + "};");
                                     --indent_;
                                     return std::vector<Val>{mn.v, l, pv.v};
                                   });
      line("});");
      o = E{binary(Binary::div, out[2], expand_dims(out[1], 1)), "acc / li.expand_dims<1>()"};
    } else {
      line("auto acc = for_range(0, " + hi.s + ", BN, " + zacc.s + ", [&](Scalar<i32> j, " + acc_t + " acc) {");
      const auto out = for_range_n(int_literal(DType::i32, 0), hi.v, int_literal(DType::i32, r_.bn), {zacc.v},
                                   [&](const Val& jv, const std::vector<Val>& c) {
                                     ++indent_;
                                     const E j{jv, "j"};
                                     const E s = scores(j);
                                     E p;
                                     if (r_.attn == Attn::scaled) {
                                       p = s;
                                       pmag = smag;
                                     } else if (r_.attn == Attn::sigmoid) {
                                       p = bind("p", E{unary(Unary::sigmoid, s.v), "sigmoid(s)"});
                                     } else {
                                       p = bind("p", E{unary(Unary::exp2, binary(Binary::sub, s.v, expand_dims(reduce(Reduction::max, s.v, 1), 1))),
                                                       "exp2(s - max(s, 1).expand_dims<1>())"});
                                     }
                                     const E pv{dot(cast(p.v, in), vtile(j).v, c[0]), "dot(" + p.s + ".to<" + tag(in) + ">(), " + vtile_text() + ", acc)"};
                                     line("return " + pv.s + ";");
                                     --indent_;
                                     return std::vector<Val>{pv.v};
                                   });
      line("});");
      o = E{out[0], "acc"};
    }
    o.err = 2e-2 * std::max(1.0, pmag);
    o.mag = 2 * std::sqrt(static_cast<double>(r_.k)) * std::max(1.0, pmag);
    const E out = convert(bind("y", o), r_.out);
    store_tile("o", out, m, zero, r_.bm, d, "BM", "D", r_.tma_store, r_.reduce);
  }
  std::string vtile_text() const { return "descriptor_load(v, {j, 0}, {BN, D})"; }

  const Program& p_;
  const Recipe& r_;
  TraceRecord& rec_;
  std::string text_;
  int indent_ = 1;
  int xs_ = 0;
  std::vector<TensorRef> tensors_;
  std::vector<Val> scalars_;
};

}  // namespace

Program make_product_program(uint64_t seed) {
  Program p;
  p.seed = seed;
  p.name = "fuzz_dot_" + std::to_string(seed);
  Rng rng(seed ^ 0xD07D07ull), ext(seed ^ 0xE7D07ull);
  const Recipe recipe = plan(p, rng, ext);
  p.record = std::make_shared<TraceRecord>();
  const Program shape = p;  // the tracer's copy: everything but the kernel
  auto record = p.record;
  p.kernel = std::make_shared<KernelBase>(p.name, std::source_location::current(), [shape, recipe, record](ir::Graph& g, const Config&) {
    dsl::detail::TraceScope scope(g);
    g.set_location(g.kernel_location.file.c_str(), g.kernel_location.line);
    TraceRecord rec;
    Body body(shape, recipe, rec);
    body.run(g);
    rec.body = body.text();
    *record = std::move(rec);
  });
  return p;
}

}  // namespace tilejit::fuzz
