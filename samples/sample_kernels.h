// The kernels of the samples, shared by the sample programs and tilejit-demo.
//
// Each function returns a tilejit kernel object: the lambda is traced into IR
// once per configuration (the values of its Meta<"..."> parameters), then run
// by launch() on the GPU, or in the CPU interpreter on a machine without one.
#pragma once

#include <limits>

#include <tilejit/tilejit.h>

namespace tilejit::samples {

using namespace tilejit::dsl;

/// Sample 01: out = x + y with masked pointer-style loads and stores.
///
/// The Triton "hello world": each program (CUDA block) adds B consecutive
/// elements. When the vectors are not a multiple of B long, the last program's
/// block runs past their end; a mask switches those lanes off (masked loads
/// read 0 and touch no memory, masked stores write nothing).
inline auto vector_add_kernel() {
  // Meta<"B"> is a configuration value: a constant of the traced kernel, chosen per launch.
  return tilejit::kernel("vector_add", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<f32, 1> out, Meta<"B"> B) {
    auto start = program_id(0) * B;     // Scalar<i32>: first element of this program
    auto offs = start + arange(0, B);   // Value<i32, 1>: [start, start + B)
    auto mask = offs < x.size(0);       // Value<i1, 1>: lanes inside the vector
    auto a = load(x, offs, mask);       // masked lanes read 0
    auto b = load(y, offs, mask);
    store(out, offs, a + b, mask);      // masked lanes are not written
  });
}

/// Sample 02: y = a * x + b, tile by tile with TMA descriptor_load / descriptor_store.
///
/// Each program moves one BM x BN tile. The tensor need not be a multiple of
/// the tile: TMA handles the edges without any mask. A load fills the part of
/// the box outside the tensor with zeros, and a store writes only the part inside it.
inline auto axpb_kernel() {
  return tilejit::kernel("axpb", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Scalar<f32> a, Scalar<f32> b,
                                    Meta<"BM"> BM, Meta<"BN"> BN) {
    // Coordinates and boxes are written outermost dimension first: {row, column}.
    auto m = program_id(0) * BM;
    auto n = program_id(1) * BN;
    auto t = descriptor_load(x, {m, n}, {BM, BN});  // Value<f32, 2> of shape [BM, BN]
    descriptor_store(y, {m, n}, t * a + b);         // clipped at y's edges
  });
}

/// Sample 03: jagged sequences with TMA: per-sequence views built in the kernel.
///
/// `values` packs sequences of different lengths one after the other; sequence s
/// holds rows offsets[s] .. offsets[s + 1]. A TMA descriptor of the whole tensor
/// would read the next sequence's rows past the end of this one, so each program
/// makes a view of its own sequence with values.rows(start, end). Its extent is
/// known only in the kernel, so tilejit builds that descriptor on the device.
/// Loads past the sequence end then read zeros, and stores stop at its end.
/// out = 2 * values + 1; tile_sums[s, tile] = the sum of the tile as loaded.
inline auto jagged_scale_kernel() {
  return tilejit::kernel("jagged_scale", [](Tensor<i32, 1> offsets, Tensor<bf16, 2> values, Tensor<bf16, 2> out,
                                            Tensor<f32, 2> tile_sums, Meta<"BM"> BM, Meta<"D"> D) {
    auto s = program_id(1);                          // the sequence
    auto start = load(offsets, s);                   // Scalar<i32> read from memory
    auto end = load(offsets, s + 1);
    auto m = program_id(0) * BM;                     // first row of this tile inside the sequence
    auto t = descriptor_load(values.rows(start, end), {m, 0}, {BM, D});  // rows past `end` read 0
    auto y = (t.to<f32>() * 2.0f + 1.0f).to<bf16>();
    descriptor_store(out.rows(start, end), {m, 0}, y);  // rows past `end` are not written
    // The sum of the loaded tile shows the zero fill: the next sequence's rows add nothing.
    auto total = sum(sum(t.to<f32>(), 1), 0);
    store(tile_sums, s * tile_sums.stride(0) + program_id(0), total);
  });
}

/// Sample 04: a strided TMA tile: every third row of a box.
///
/// In this sample the box is (6, 4) and the element strides (1, 3): the tile takes
/// every third element of the *innermost* dimension. On Hopper the innermost
/// element stride is ignored by the hardware, so tilejit refuses anything but 1
/// there. The same picture transposed is allowed: element strides {3, 1} on a
/// box {6, 4} (outermost first) read rows m and m + 3, columns n .. n + 3, as a
/// tile of ceil(6 / 3) x 4 = 2 x 4 elements.
///
/// The stride must divide the box (6 % 3 == 0). With box 6 and stride 4, the
/// hardware would leave the elements after the last strided one unfilled near
/// the tensor's edge (the "fundamental theorem of TMA correctness"), so
/// tilejit rejects that box when the kernel is traced.
inline auto every_third_row_kernel() {
  return tilejit::kernel("every_third_row", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto i = program_id(0), j = program_id(1);
    auto t = descriptor_load(x, {i * 6, j * 4}, {6, 4}, {3, 1});  // Value<f32, 2> of shape [2, 4]
    descriptor_store(y, {i * 2, j * 4}, t);                       // y row r holds x row 3 r
  });
}

/// Sample 05: CuTe-style tile views: a blocked transpose, y = x^T.
///
/// tile_view(t, {T, T}) sees t as a grid of T x T boxes. Indexing it with tile
/// indices (i, j) does not compute an address: like CuTe's TMA tensors, whose
/// strides are basis vectors, it yields the TMA *coordinate* (i * T, j * T)
/// that descriptor_load / descriptor_store pass to the hardware.
inline auto transpose_kernel() {
  return tilejit::kernel("transpose", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"T"> T) {
    auto xt = tile_view(x, {T, T});  // x as tiles of T x T
    auto yt = tile_view(y, {T, T});
    auto i = program_id(0), j = program_id(1);
    auto tile = descriptor_load(xt(i, j));     // x[i*T : i*T+T, j*T : j*T+T], zeros outside x
    descriptor_store(yt(j, i), tile.trans());  // y[j*T .., i*T ..] = its transpose, clipped at y's edges
  });
}

/// Sample 06: an array of TMA descriptors: one tensor per program, chosen at run time.
///
/// A TensorArray<T, R> parameter is several tensors of one type and rank, each
/// with its own shape (batches x pyramid levels). tilejit encodes one TMA
/// descriptor per tensor on the host into device memory; arr[k] picks one by a
/// runtime index. prefetch_descriptor() emits prefetch.tensormap so that the
/// descriptor is in cache by the time the load needs it. out[l] = (l + 1) * in[l].
inline auto scale_levels_kernel() {
  return tilejit::kernel("scale_levels", [](TensorArray<f32, 2> in, TensorArray<f32, 2> out, Meta<"BM"> BM,
                                            Meta<"BN"> BN) {
    auto level = program_id(2);  // which tensor of the arrays this program works on
    auto src = in[level];
    auto dst = out[level];
    prefetch_descriptor(src, {BM, BN});  // same box as the load below
    prefetch_descriptor(dst, {BM, BN});
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto t = descriptor_load(src, {m, n}, {BM, BN});  // tiles past a small level's edge read zeros
    auto factor = (level + 1).to<f32>();
    descriptor_store(dst, {m, n}, t * factor);  // and store nothing
  });
}

/// Sample 07: row softmax with pointer loads (the Triton tutorial's kernel).
///
/// One program per row; BN is the row length rounded up to a power of two, and
/// a mask switches off the columns past the row's end (they read -inf, so they
/// add exp(-inf) = 0 to the sum). max() and sum() over a row combine each
/// thread's registers first, then the lanes of a warp with shuffles, then the
/// warps through a few bytes of shared memory; the results are broadcast back
/// along the row without moving any data.
inline auto softmax_kernel() {
  return tilejit::kernel("softmax", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BN"> BN) {
    auto row = program_id(0).to<i64>();
    auto cols = arange(0, BN);
    auto mask = cols < x.size(1);
    auto v = load(x, row * x.stride(0) + cols, mask, -std::numeric_limits<float>::infinity());
    auto e = exp(v - max(v, 0));
    store(y, row * y.stride(0) + cols, e / sum(e, 0), mask);
  });
}

/// Sample 07, TMA form: BM rows of BN columns per program (BN at most 256, the
/// hardware's box limit), loaded with NaN fill so that padding columns are
/// recognisable; rows past the end of x are not stored (TMA clips them).
inline auto softmax_tma_kernel() {
  return tilejit::kernel("softmax_tma", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BM"> BM, Meta<"BN"> BN) {
    auto m = program_id(0) * BM;
    auto t = descriptor_load(x, {m, 0}, {BM, BN});
    auto e = exp(t - max(t, 1).expand_dims<1>());
    descriptor_store(y, {m, 0}, e / sum(e, 1).expand_dims<1>());
  });
}

/// Sample 07, online form (for rows of any length, never held whole): a first loop over blocks of BN
/// columns carries the running maximum m and the sum s of exp(x - m), each block folded in by
/// `fold(v, m, s)` (v: the block, -inf where masked); a second loop writes exp(x - m) / s. Each row is
/// read twice (the second time mostly from L2) and written once. `hints`: the cache hints of
/// softmax_online_evict_kernel().
template <class Fold>
auto softmax_online(const char* name, Fold fold, bool hints = false) {
  return tilejit::kernel(name, [fold, hints](Tensor<f32, 2> x, Tensor<f32, 2> y, Meta<"BN"> BN) {
    constexpr float kNegInf = -std::numeric_limits<float>::infinity();
    const Evict again = hints ? Evict::last : Evict::normal, once = hints ? Evict::first : Evict::normal;
    auto row = program_id(0).to<i64>();
    auto n = x.size(1).to<i32>();
    auto cols = arange(0, BN);
    Scalar<f32> m0 = kNegInf, s0 = 0.0f;
    auto [m, s] = for_range(0, n, BN, std::tuple{m0, s0}, [&](Scalar<i32> k, Scalar<f32> m, Scalar<f32> s) {
      auto c = k + cols;
      return fold(load(x, row * x.stride(0) + c, c < n, kNegInf, again), m, s);
    });
    for_range(0, n, BN, [&](Scalar<i32> k) {
      auto c = k + cols;
      auto mask = c < n;
      store(y, row * y.stride(0) + c, exp(load(x, row * x.stride(0) + c, mask, 0.0f, once) - m) / s, mask, once);
    });
  });
}

/// How the online softmax folds a block v into the running (maximum, sum) with two reductions: the block's
/// maximum, then the sum of exp(x - maximum), rescaling s by exp(m_old - m_new) whenever the maximum grows.
inline std::tuple<Scalar<f32>, Scalar<f32>> softmax_fold(const Value<f32, 1>& v, const Scalar<f32>& m, const Scalar<f32>& s) {
  auto m_new = maximum(m, max(v, 0));
  return {m_new, s * exp(m - m_new) + sum(exp(v - m_new), 0)};
}

/// The online softmax with two reductions per block (softmax_fold).
inline auto softmax_online_kernel() { return softmax_online("softmax_online", softmax_fold); }

/// softmax_online_kernel with cache hints (Triton's eviction_policy): the first loop's reads ask L2 to keep
/// the row (Evict::last) for the second loop, whose reads are the row's last and whose stores are never read
/// again (Evict::first), so that the output does not push the rows still to be read a second time out of L2.
inline auto softmax_online_evict_kernel() {
  return softmax_online("softmax_online_evict", softmax_fold, true);
}

/// How two partial softmax statistics (maximum, sum of exp(x - maximum)) combine: the pair with the
/// smaller maximum is rescaled by exp(its maximum - the larger one), one exp per combine; pairs of
/// masked elements, (-inf, 0), stay (-inf, 0). Associative and commutative, as reduce() requires.
inline std::tuple<Scalar<f32>, Scalar<f32>> softmax_combine(Scalar<f32> ma, Scalar<f32> sa, Scalar<f32> mb, Scalar<f32> sb) {
  auto mm = maximum(ma, mb);
  auto e = where(ma == mb, 1.0f, exp(minimum(ma, mb) - mm));
  return {mm, where(ma >= mb, sa + sb * e, sa * e + sb)};
}

/// The online softmax with one reduction per block: the block's (maximum, sum) pair is reduced at once
/// from (x, 1) pairs ((-inf, 0) where masked) by softmax_combine, so both statistics share one set of
/// warp shuffles and one barrier between warps; the running pair then absorbs the block's the same way.
inline auto softmax_online_combine_kernel() {
  return softmax_online("softmax_online_combine", [](const Value<f32, 1>& v, const Scalar<f32>& m, const Scalar<f32>& s) {
    auto [bm, bs] = reduce(std::tuple{v, (v > -std::numeric_limits<float>::infinity()).to<f32>()}, 0, softmax_combine);
    return softmax_combine(m, s, bm, bs);
  });
}

/// Cross-entropy of each row of bf16 logits against its target class (a language model's loss, vocabularies of
/// 32k-256k): loss[r] = logsumexp(logits[r, :]) - logits[r, target[r]], and 0 where target[r] is `ignore`
/// (PyTorch's ignore_index). One program per row: an online loop over blocks of BN columns carries the running
/// maximum and sum of exp (softmax_fold); one element load, issued before the loop, reads the target's logit. A target outside
/// [0, V) that is not `ignore` reads nothing and gives a NaN loss (PyTorch raises an error instead).
/// `first_read`: the cache hint of the loop's loads (cross_entropy_grad_kernel keeps the row in L2 for its
/// second read). Returns what the gradient needs: the row, its maximum and sum, the target (-1 if ignored).
struct CrossEntropyRow {
  Scalar<i64> row;
  Scalar<i32> target;
  Scalar<f32> max, sum;
  Scalar<i1> counted;
};
inline CrossEntropyRow cross_entropy_row(const Tensor<bf16, 2>& logits, const Tensor<i64, 1>& target, const Tensor<f32, 1>& loss,
                                         const Scalar<i64>& ignore, int64_t bn, Evict first_read) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  auto row = program_id(0).to<i64>();
  auto n = logits.size(1).to<i32>();
  auto cols = arange(0, bn);
  auto base = row * logits.stride(0);
  // The target and its logit first: their loads are in flight while the loop runs, not after it (as Liger's).
  auto t = load(target, row);
  auto counted = t != ignore;
  auto valid = (t >= 0) & (t < n.to<i64>());
  auto xt = load(logits, base + where(valid, t, Scalar<i64>(0)), valid, std::numeric_limits<float>::quiet_NaN()).to<f32>();
  Scalar<f32> m0 = kNegInf, s0 = 0.0f;
  auto [m, s] = for_range(0, n, bn, std::tuple{m0, s0}, [&](Scalar<i32> k, Scalar<f32> m, Scalar<f32> s) {
    auto c = k + cols;
    return softmax_fold(load(logits, base + c, c < n, kNegInf, first_read).to<f32>(), m, s);
  });
  store(loss, row, where(counted, m + log(s) - xt, 0.0f));
  return {row, where(counted & valid, t.to<i32>(), Scalar<i32>(-1)), m, s, counted};
}

/// The cross-entropy loss of each row (cross_entropy_row), nothing else: the logits are read once.
inline auto cross_entropy_kernel() {
  return tilejit::kernel("cross_entropy", [](Tensor<bf16, 2> logits, Tensor<i64, 1> target, Tensor<f32, 1> loss, Scalar<i64> ignore,
                                             Meta<"BN"> BN) { cross_entropy_row(logits, target, loss, ignore, BN, Evict::normal); });
}

/// The loss and its gradient in one kernel (as Liger's fused cross-entropy, which saves the logits' gradient
/// before the backward pass): grad[r, c] = (softmax(logits[r, :])[c] - (c == target[r])) * scale, a row of zeros
/// where the row is ignored; `scale` is the upstream gradient (1 / the number of counted rows for a mean). The
/// second loop reads the row again (from L2, where the first read asked it to stay) and streams the gradient
/// out; `grad` may be the logits themselves (each element is read before it is overwritten).
inline auto cross_entropy_grad_kernel() {
  return tilejit::kernel("cross_entropy_grad", [](Tensor<bf16, 2> logits, Tensor<i64, 1> target, Tensor<f32, 1> loss,
                                                  Tensor<bf16, 2> grad, Scalar<f32> scale, Scalar<i64> ignore, Meta<"BN"> BN) {
    auto r = cross_entropy_row(logits, target, loss, ignore, BN, Evict::last);
    auto n = logits.size(1).to<i32>();
    auto cols = arange(0, BN);
    auto g = where(r.counted, scale, 0.0f);
    auto gs = g / r.sum;  // the gradient's scale over exp(x - max)
    for_range(0, n, BN, [&](Scalar<i32> k) {
      auto c = k + cols;
      auto mask = c < n;
      auto p = exp(load(logits, r.row * logits.stride(0) + c, mask, 0.0f, Evict::first).to<f32>() - r.max) * gs;
      store(grad, r.row * grad.stride(0) + c, where(c == r.target, p - g, p).to<bf16>(), mask, Evict::first);
    });
  });
}

/// Sample 08: layer normalisation forward, bf16 in and out with fp32 statistics (the Triton tutorial's
/// kernel, one program per row). y = (x - mean) / sqrt(var + eps) * w + b over each row of N columns.
inline auto layernorm_kernel() {
  return tilejit::kernel("layernorm", [](Tensor<bf16, 2> x, Tensor<bf16, 1> w, Tensor<bf16, 1> b, Tensor<bf16, 2> y,
                                         Scalar<f32> eps, Meta<"BN"> BN) {
    auto row = program_id(0).to<i64>();
    auto cols = arange(0, BN);
    auto mask = cols < x.size(1);
    auto n = x.size(1).to<f32>();
    auto v = load(x, row * x.stride(0) + cols, mask).to<f32>();  // masked columns read 0
    auto mean = sum(v, 0) / n;
    auto centred = where(mask, v - mean, 0.0f);
    auto rstd = rsqrt(sum(centred * centred, 0) / n + eps);
    auto out = centred * rstd * load(w, cols, mask).to<f32>() + load(b, cols, mask).to<f32>();
    store(y, row * y.stride(0) + cols, out.to<bf16>(), mask);
  });
}

/// Sample 09: C = GELU(A @ B + bias), bf16 in and out, f32 accumulation (the Triton tutorial's matmul with a
/// fused epilogue).
///
/// Each program computes a BM x BN tile of C: a K loop of TMA tiles (zeros past the matrices' edges) feeding
/// dot, which runs on the tensor cores (wgmma) with the tiles software-pipelined over num_stages buffers. The
/// bias row, the GELU (erf form) and the cast to bf16 run on the accumulator where it lies, in registers, and
/// the TMA store writes only the part of the tile inside C.
inline auto matmul_bias_gelu_kernel() {
  return tilejit::kernel("matmul_bias_gelu", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 1> bias, Tensor<bf16, 2> c,
                                                 Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    auto x = acc + descriptor_load(bias, {n}, {BN}).to<f32>().expand_dims<0>();
    auto gelu = x * 0.5f * (erf(x * 0.70710678f) + 1.0f);
    descriptor_store(c, {m, n}, gelu.to<bf16>());
  });
}

/// A persistent GEMM (Triton's tutorial 09 without warp specialization): C = A @ B^T with B stored [N, K], f32
/// out. Launch fewer programs than output tiles (e.g. one per SM); program p computes tiles p, p + programs, ...
/// in a loop around the usual pipelined K loop. The K loop's stage barriers keep their phases from one tile to
/// the next, so any stage count works with any number of K steps.
inline auto persistent_matmul_kernel() {
  return tilejit::kernel("persistent_matmul", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                  Meta<"BN"> BN, Meta<"BK"> BK) {
    auto tiles_n = (c.size(1).to<i32>() + BN - 1) / BN;
    auto tiles = (c.size(0).to<i32>() + BM - 1) / BM * tiles_n;
    for_range(program_id(0), tiles, num_programs(0), [&](Scalar<i32> t) {
      auto m = t / tiles_n * BM, n = t % tiles_n * BN;
      auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
      });
      descriptor_store(c, {m, n}, acc);
    });
  });
}

/// A block-scaled GEMM (DeepSeek-V3's fine-grained scaling, here with bf16 operands): every K block of BK has a
/// scale per row of A (a_scale [K / BK, M], read with a pointer load) and per column of B (b_scale [K / BK, N],
/// a TMA tile), applied to that block's product before it is added: C = sum over k blocks of
/// (A_k @ B_k^T) * a_scale[k][:, None] * b_scale[k][None, :]. The scale tile is read from registers, so it
/// rides in the K loop's ring of stages with the operand tiles.
inline auto block_scaled_matmul_kernel() {
  return tilejit::kernel("block_scaled_matmul", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> a_scale,
                                                    Tensor<f32, 2> b_scale, Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"BN"> BN,
                                                    Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto rows = m + arange(0, BM);
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      auto p = dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), zeros<f32>({BM, BN}));
      auto kb = k / BK;
      auto sa = load(a_scale, kb * a_scale.stride(0) + rows, rows < a_scale.size(1));  // [BM]
      auto sb = descriptor_load(b_scale, {kb, n}, {1, BN});                              // [1, BN]
      return acc + p * sa.expand_dims<1>() * sb;
    });
    descriptor_store(c, {m, n}, acc);
  });
}

/// A fused SwiGLU: out = silu(x @ Wg^T) * (x @ Wu^T), bf16, with the gate and up rows of the weights interleaved
/// in one [2N, K] tensor (row 2j is gate row j, row 2j + 1 up row j). One product of [BM, 2 BN] per program; the
/// epilogue splits its columns into pairs (reshape to [BM, BN, 2]) and picks each half with where and sum.
inline auto swiglu_kernel() {
  return tilejit::kernel("swiglu_fused", [](Tensor<bf16, 2> x, Tensor<bf16, 2> wgu, Tensor<bf16, 2> out, Meta<"BM"> BM,
                                             Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, x.size(1).to<i32>(), BK, zeros<f32>({BM, 2 * BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(x, {m, k}, {BM, BK}), descriptor_load(wgu, {2 * n, k}, {2 * BN, BK}).trans(), acc);
    });
    auto pairs = acc.reshape({BM, BN, 2});
    auto which = arange(0, 2).reshape({1, 1, 2});
    auto g = sum(where(which == 0, pairs, 0.0f), 2);
    auto u = sum(where(which == 1, pairs, 0.0f), 2);
    descriptor_store(out, {m, n}, (g * sigmoid(g) * u).to<bf16>());
  });
}

/// SwiGLU as users write it with two weight matrices: the x tile is loaded once per K step and read by two
/// products, gate = x wg^T and up = x wu^T, each into its own accumulator; out = silu(gate) * up. wg and wu
/// are [N, K]. Both products stay in flight into the next K step (passes::PipelinedLoop::in_flight).
inline auto swiglu_two_products_kernel() {
  return tilejit::kernel("swiglu_two_products", [](Tensor<bf16, 2> x, Tensor<bf16, 2> wg, Tensor<bf16, 2> wu,
                                                   Tensor<bf16, 2> out, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto init = std::tuple{zeros<f32>({BM, BN}), zeros<f32>({BM, BN})};
    auto [gate, up] = for_range(0, x.size(1).to<i32>(), BK, init, [&](Scalar<i32> k, Value<f32, 2> g, Value<f32, 2> u) {
      auto xt = descriptor_load(x, {m, k}, {BM, BK});
      return std::tuple{dot(xt, descriptor_load(wg, {n, k}, {BN, BK}).trans(), g),
                        dot(xt, descriptor_load(wu, {n, k}, {BN, BK}).trans(), u)};
    });
    descriptor_store(out, {m, n}, (gate * sigmoid(gate) * up).to<bf16>());
  });
}

/// A fused two-layer MLP: y = gelu(x w1) w2 for a block of BM token rows, over the hidden width in blocks of BH.
/// x and y are [M, D], w1 [D, H], w2 [H, D]. The hidden block never leaves the SM: the first product's
/// accumulator, through GELU and bf16, is the second product's operand a, read by wgmma from registers (at BM
/// below 64 too: rows past BM pad both products' one m64 instruction). The model width D is one tile (at most
/// 256, the instruction's N; the tests run D = 128).
inline auto fused_mlp_kernel() {
  return tilejit::kernel("fused_mlp", [](Tensor<bf16, 2> x, Tensor<bf16, 2> w1, Tensor<bf16, 2> w2, Tensor<bf16, 2> y,
                                          Meta<"BM"> BM, Meta<"BH"> BH, Meta<"D"> D) {
    auto m = program_id(0) * BM;
    auto xt = descriptor_load(x, {m, 0}, {BM, D});
    auto acc = for_range(0, w1.size(1).to<i32>(), BH, zeros<f32>({BM, D}), [&](Scalar<i32> h, Value<f32, 2> acc) {
      auto z = dot(xt, descriptor_load(w1, {0, h}, {D, BH}), zeros<f32>({BM, BH}));
      auto g = z * 0.5f * (erf(z * 0.70710678f) + 1.0f);
      return dot(g.to<bf16>(), descriptor_load(w2, {h, 0}, {BH, D}), acc);
    });
    descriptor_store(y, {m, 0}, acc.to<bf16>());
  });
}

/// Attention forward (bf16, non-causal; bench/bench_attention and the tests): o = softmax(q k^T * scale) v for
/// every head. q, k, v and o are [heads * seq, D], head h's rows from h * seq; program (i, h) computes the BM
/// queries from i * BM of head h. A loop over the keys in blocks of BN: S = Q K^T (wgmma, K read transposed
/// from its TMA tile), the online softmax's running max and sum (in base 2), and O += P V with P (bf16) read
/// by wgmma from registers. The loop's K and V tiles go into a ring of num_stages buffers, loaded ahead.
inline auto attention_kernel() {
  return tilejit::kernel("attention_fwd", [](Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<bf16, 2> v, Tensor<bf16, 2> o,
                                              Scalar<i32> seq, Scalar<f32> scale, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D) {
    auto head = program_id(1) * seq;
    auto m0 = head + program_id(0) * BM;
    auto qt = descriptor_load(q, {m0, 0}, {BM, D});
    auto init = std::tuple{full<f32>({BM}, -1e30), zeros<f32>({BM}), zeros<f32>({BM, D})};
    // Scores in base 2 (scale * log2(e) folded in), so that the softmax's exponentials are exp2.
    auto scale2 = scale * 1.4426950408889634f;
    auto [m, l, acc] = for_range(0, seq, BN, init, [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
      auto qk = dot(qt, descriptor_load(k, {head + j, 0}, {BN, D}).trans(), zeros<f32>({BM, BN}));
      // The row maximum scaled once (scale2 > 0), and qk * scale2 - m one fused multiply-add per score.
      auto m_new = maximum(m_i, max(qk, 1) * scale2);
      auto p = exp2(qk * scale2 - m_new.expand_dims<1>());
      auto alpha = exp2(m_i - m_new);
      auto pv = dot(p.to<bf16>(), descriptor_load(v, {head + j, 0}, {BN, D}), acc * alpha.expand_dims<1>());
      return std::tuple{m_new, l_i * alpha + sum(p, 1), pv};
    });
    descriptor_store(o, {m0, 0}, (acc * (1.0f / l).expand_dims<1>()).to<bf16>());
  });
}

/// attention_kernel over tensors as they usually come, [B * H, S, D] (the heads' rows not merged by the caller):
/// each tile is loaded as a {1, BM, D} box and reshaped to [BM, D] (the output stored the other way). The unit
/// dimension costs nothing: the tiles are the same bytes, and the products read them in place on tensor cores.
inline auto attention_bhsd_kernel() {
  return tilejit::kernel("attention_bhsd", [](Tensor<bf16, 3> q, Tensor<bf16, 3> k, Tensor<bf16, 3> v, Tensor<bf16, 3> o,
                                               Scalar<f32> scale, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D) {
    auto bh = program_id(1);
    auto m0 = program_id(0) * BM;
    auto seq = q.size(1).to<i32>();
    auto qt = descriptor_load(q, {bh, m0, 0}, {1, BM, D}).reshape({BM, D});
    auto init = std::tuple{full<f32>({BM}, -1e30), zeros<f32>({BM}), zeros<f32>({BM, D})};
    auto scale2 = scale * 1.4426950408889634f;
    auto [m, l, acc] = for_range(0, seq, BN, init, [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
      auto kt = descriptor_load(k, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      auto qk = dot(qt, kt.trans(), zeros<f32>({BM, BN}));
      auto m_new = maximum(m_i, max(qk, 1) * scale2);
      auto p = exp2(qk * scale2 - m_new.expand_dims<1>());
      auto alpha = exp2(m_i - m_new);
      auto vt = descriptor_load(v, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      auto pv = dot(p.to<bf16>(), vt, acc * alpha.expand_dims<1>());
      return std::tuple{m_new, l_i * alpha + sum(p, 1), pv};
    });
    descriptor_store(o, {bh, m0, 0}, (acc * (1.0f / l).expand_dims<1>()).to<bf16>().reshape({1, BM, D}));
  });
}

/// Sample 12: attention forward, q and o [B * H, S_q, D], k and v [B * H, S_k, D], dense (CAUSAL = 0) or causal
/// (CAUSAL = 1), with the log-sum-exp of every row (lse, [B * H, S_q], f32: the backward pass's input). Causal masks
/// are aligned at the bottom right, as FlashAttention's: query r sees the keys up to r + S_k - S_q, so with
/// S_q > S_k the first S_q - S_k queries see none; such a row's output is 0 and its lse +inf (the backward's
/// exp(s - lse) is then 0), never NaN. Program (i, bh) computes the BM queries from i * BM of head bh (causal: from
/// (n - 1 - i) * BM, n programs along axis 0: the longest first).
/// Keys are visited in blocks of BN in two loops: the blocks no mask touches
/// (all keys before the query block's first visible one when causal; every full block otherwise), then the
/// blocks that need one (the diagonal, and the sequence's last partial block): the masked loop is short, and the
/// long one pays nothing for the mask. Masked scores are -inf and the running maximum starts at -1e30, so a row
/// with no key yet adds exp2(-inf) = 0 and rescales by exp2(0) = 1: no -inf - -inf. S_q and S_k need not be
/// multiples of BM or BN: TMA reads zeros past a sequence's end, the mask drops those keys, and the stores clip
/// the extra queries.
inline auto attention_forward_kernel() {
  return tilejit::kernel("attention_forward", [](Tensor<bf16, 3> q, Tensor<bf16, 3> k, Tensor<bf16, 3> v, Tensor<bf16, 3> o,
                                                  Tensor<f32, 2> lse, Scalar<f32> scale, Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D,
                                                  Meta<"CAUSAL"> CAUSAL) {
    auto bh = program_id(1);
    // Causal: query block i sees i + 1 blocks of keys. Programs start in the order of program_id, so they take the
    // blocks from the last one (the longest first), and the short ones fill the last gaps of the GPU.
    auto m0 = (CAUSAL ? num_programs(0) - 1 - program_id(0) : program_id(0)) * BM;
    auto seq = q.size(1).to<i32>();
    auto kseq = k.size(1).to<i32>();
    auto shift = kseq - seq;  // causal: query r sees the keys up to r + shift
    auto qt = descriptor_load(q, {bh, m0, 0}, {1, BM, D}).reshape({BM, D});
    auto scale2 = scale * 1.4426950408889634f;  // scores in base 2: the softmax's exponentials are exp2
    auto rows = m0 + arange(0, BM);
    // One block of keys from j: the running maximum m, sum l and output acc, updated (the online softmax).
    auto block = [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc, bool masked) {
      auto kt = descriptor_load(k, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      auto qk = dot(qt, kt.trans());
      if (masked) {
        auto cols = j + arange(0, BN);
        auto keep = cols.expand_dims<0>() < kseq;
        if (CAUSAL) keep = keep & (cols.expand_dims<0>() <= (rows + shift).expand_dims<1>());
        qk = where(keep, qk, -std::numeric_limits<float>::infinity());
      }
      // The row maximum scaled once (scale2 > 0), and qk * scale2 - m one fused multiply-add per score.
      auto m_new = maximum(m_i, max(qk, 1) * scale2);
      auto p = exp2(qk * scale2 - m_new.expand_dims<1>());
      auto alpha = exp2(m_i - m_new);
      auto vt = descriptor_load(v, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      return std::tuple{m_new, l_i * alpha + sum(p, 1), dot(p.to<bf16>(), vt, acc * alpha.expand_dims<1>())};
    };
    auto init = std::tuple{full<f32>({BM}, -1e30), zeros<f32>({BM}), zeros<f32>({BM, D})};
    // Causal: the blocks every query of the block sees whole need no mask (its first query's last key, rounded
    // down to a block of keys); the masked loop ends after its last query's last key (none: both loops are empty).
    auto unmasked_end = (CAUSAL ? maximum(m0 + shift, 0) : kseq) / BN * BN;
    auto masked_end = CAUSAL ? maximum(minimum(m0 + BM + shift, kseq), unmasked_end) : kseq;
    auto [m1, l1, acc1] = for_range(0, unmasked_end, BN, init, [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
      return block(j, m_i, l_i, acc, false);
    });
    auto [m, l, acc] = for_range(unmasked_end, masked_end, BN, std::tuple{m1, l1, acc1},
                                 [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
                                   return block(j, m_i, l_i, acc, true);
                                 });
    // A row that saw no key has l = 0 and acc = 0: its output is 0 (not 0 / 0), its lse +inf.
    auto seen = l > 0.0f;
    descriptor_store(o, {bh, m0, 0}, (acc * where(seen, 1.0f / l, 0.0f).expand_dims<1>()).to<bf16>().reshape({1, BM, D}));
    // ln(sum_j exp(scale * s_j)) = (m + log2(l)) * ln 2, m and l being the base-2 maximum and sum.
    store(lse, bh * lse.stride(0).to<i32>() + rows,
          where(seen, (m + log2(l)) * 0.6931471805599453f, std::numeric_limits<float>::infinity()), rows < seq);
  });
}

/// Sample 14, step 1 of the attention backward pass: delta = rowsum(o * do) for the BM rows from program_id(0) * BM
/// of head program_id(1) (delta, [B * H, S], f32). o is the forward pass's output, do the gradient of the loss
/// with respect to it.
inline auto attention_backward_delta_kernel() {
  return tilejit::kernel("attention_backward_delta", [](Tensor<bf16, 3> o, Tensor<bf16, 3> dout, Tensor<f32, 2> delta,
                                                         Meta<"BM"> BM, Meta<"D"> D) {
    auto bh = program_id(1);
    auto m0 = program_id(0) * BM;
    auto ot = descriptor_load(o, {bh, m0, 0}, {1, BM, D}).reshape({BM, D}).to<f32>();
    auto dot_ = descriptor_load(dout, {bh, m0, 0}, {1, BM, D}).reshape({BM, D}).to<f32>();
    auto rows = m0 + arange(0, BM);
    store(delta, bh * delta.stride(0).to<i32>() + rows, sum(ot * dot_, 1), rows < o.size(1).to<i32>());
  });
}

/// Sample 14, step 2: the gradients of BN keys and values (program (j, bh): keys from j * BN of head bh), as
/// FlashAttention-2 computes them, transposed so that every product's operand a is in registers or a TMA tile:
/// for each block of BM queries, P^T = exp2(K Q^T scale log2(e) - lse log2(e)) (the forward pass's probabilities,
/// rebuilt from its log-sum-exp), dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q; at the
/// end dK is scaled by `scale`. Q and dO are each read by two products from one TMA tile. q and do may have more
/// or fewer rows (S_q) than k and v (S_k). Causal (CAUSAL 1, aligned at the bottom right as the forward pass): only
/// the queries that see a key of the block (from n0 - (S_k - S_q) on), with the mask on the query blocks that
/// meet the diagonal. Queries
/// past the sequence's end need no mask: TMA reads zeros for their q, do, lse and delta, so their P^T is 1 and
/// their dO and dS^T are 0.
inline auto attention_backward_dkdv_kernel() {
  return tilejit::kernel("attention_backward_dkdv", [](Tensor<bf16, 3> q, Tensor<bf16, 3> k, Tensor<bf16, 3> v, Tensor<bf16, 3> dout,
                                                        Tensor<f32, 2> lse, Tensor<f32, 2> delta, Tensor<bf16, 3> dk,
                                                        Tensor<bf16, 3> dv, Scalar<f32> scale, Meta<"BM"> BM, Meta<"BN"> BN,
                                                        Meta<"D"> D, Meta<"CAUSAL"> CAUSAL) {
    constexpr float kLog2e = 1.4426950408889634f;
    auto bh = program_id(1);
    auto n0 = program_id(0) * BN;
    auto seq = q.size(1).to<i32>();
    auto shift = k.size(1).to<i32>() - seq;  // causal: query r sees the keys up to r + shift (as the forward pass)
    auto kt = descriptor_load(k, {bh, n0, 0}, {1, BN, D}).reshape({BN, D});
    auto vt = descriptor_load(v, {bh, n0, 0}, {1, BN, D}).reshape({BN, D});
    auto block = [&](Scalar<i32> i, Value<f32, 2> dk_acc, Value<f32, 2> dv_acc, bool masked) {
      auto qt = descriptor_load(q, {bh, i, 0}, {1, BM, D}).reshape({BM, D});
      auto dot_ = descriptor_load(dout, {bh, i, 0}, {1, BM, D}).reshape({BM, D});
      auto l = descriptor_load(lse, {bh, i}, {1, BM});     // [1, BM]: one per query, along P^T's columns
      auto di = descriptor_load(delta, {bh, i}, {1, BM});  // [1, BM]
      auto pt = exp2(dot(kt, qt.trans()) * (scale * kLog2e) - l * kLog2e);
      // Key n0 + c is seen by the queries from n0 + c - shift on: query i + r sees it when i + r + shift - n0 >= c.
      if (masked) pt = where((i + shift - n0 + arange(0, BM)).expand_dims<0>() >= arange(0, BN).expand_dims<1>(), pt, 0.0f);
      auto dv_new = dot(pt.to<bf16>(), dot_, dv_acc);
      auto dst = pt * (dot(vt, dot_.trans()) - di);
      return std::tuple{dot(dst.to<bf16>(), qt, dk_acc), dv_new};
    };
    auto init = std::tuple{zeros<f32>({BN, D}), zeros<f32>({BN, D})};
    auto loop = [&](Scalar<i32> lo, Scalar<i32> hi, std::tuple<Value<f32, 2>, Value<f32, 2>> acc, bool masked) {
      return for_range(lo, hi, BM, acc, [&](Scalar<i32> i, Value<f32, 2> dk_acc, Value<f32, 2> dv_acc) {
        return block(i, dk_acc, dv_acc, masked);
      });
    };
    // Causal: the query blocks that meet the diagonal (from the first query that sees key n0, rounded down to a
    // block of queries, up to the first that sees the whole key block), then every block after them, unmasked.
    auto diagonal = maximum(n0 - shift, 0) / BM * BM;
    auto diagonal_end = maximum(minimum(n0 + BN - shift, seq), diagonal);
    auto [dk_acc, dv_acc] = CAUSAL ? loop((diagonal_end + BM - 1) / BM * BM, seq, loop(diagonal, diagonal_end, init, true), false)
                                   : loop(0, seq, init, false);
    descriptor_store(dk, {bh, n0, 0}, (dk_acc * scale).to<bf16>().reshape({1, BN, D}));
    descriptor_store(dv, {bh, n0, 0}, dv_acc.to<bf16>().reshape({1, BN, D}));
  });
}

/// Sample 14, step 3: the gradient of BM queries (program (i, bh): queries from i * BM of head bh; causal: the
/// longest first, as in the forward pass): for each block of BN keys, P = exp2(Q K^T scale log2(e) - lse log2(e)),
/// dP = dO V^T, dS = P (dP - delta), dQ += dS K; at the end dQ is scaled by `scale`. K is read by two products
/// from one TMA tile. Causal: the keys up to the query block's last visible one, masked on the blocks that meet
/// the diagonal (as the forward pass). Keys past the sequence's end need no mask: their k and v are zeros, so
/// their dS K adds nothing.
inline auto attention_backward_dq_kernel() {
  return tilejit::kernel("attention_backward_dq", [](Tensor<bf16, 3> q, Tensor<bf16, 3> k, Tensor<bf16, 3> v, Tensor<bf16, 3> dout,
                                                      Tensor<f32, 2> lse, Tensor<f32, 2> delta, Tensor<bf16, 3> dq, Scalar<f32> scale,
                                                      Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D, Meta<"CAUSAL"> CAUSAL) {
    constexpr float kLog2e = 1.4426950408889634f;
    auto bh = program_id(1);
    auto m0 = (CAUSAL ? num_programs(0) - 1 - program_id(0) : program_id(0)) * BM;  // causal: the longest first
    auto seq = q.size(1).to<i32>();
    auto kseq = k.size(1).to<i32>();
    auto shift = kseq - seq;  // causal: query r sees the keys up to r + shift (as the forward pass)
    auto qt = descriptor_load(q, {bh, m0, 0}, {1, BM, D}).reshape({BM, D});
    auto dot_ = descriptor_load(dout, {bh, m0, 0}, {1, BM, D}).reshape({BM, D});
    auto rows = m0 + arange(0, BM);
    auto l = (load(lse, bh * lse.stride(0).to<i32>() + rows, rows < seq) * kLog2e).expand_dims<1>();
    auto di = load(delta, bh * delta.stride(0).to<i32>() + rows, rows < seq).expand_dims<1>();
    auto block = [&](Scalar<i32> j, Value<f32, 2> acc, bool masked) {
      auto kt = descriptor_load(k, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      auto vt = descriptor_load(v, {bh, j, 0}, {1, BN, D}).reshape({BN, D});
      auto p = exp2(dot(qt, kt.trans()) * (scale * kLog2e) - l);
      if (masked) p = where((j + arange(0, BN)).expand_dims<0>() <= (rows + shift).expand_dims<1>(), p, 0.0f);
      auto ds = p * (dot(dot_, vt.trans()) - di);
      return dot(ds.to<bf16>(), kt, acc);
    };
    auto loop = [&](Scalar<i32> lo, Scalar<i32> hi, Value<f32, 2> acc, bool masked) {
      return for_range(lo, hi, BN, acc, [&](Scalar<i32> j, Value<f32, 2> acc) { return block(j, acc, masked); });
    };
    // Causal: the key blocks every query of the block sees whole, then those that meet the diagonal, masked (none
    // for queries that see no key: their lse is +inf, so their P would be 0 anyway).
    auto unmasked_end = CAUSAL ? maximum(m0 + shift, 0) / BN * BN : kseq;
    auto acc = loop(0, unmasked_end, zeros<f32>({BM, D}), false);
    if (CAUSAL) acc = loop(unmasked_end, maximum(minimum(m0 + BM + shift, kseq), unmasked_end), acc, true);
    descriptor_store(dq, {bh, m0, 0}, (acc * scale).to<bf16>().reshape({1, BM, D}));
  });
}

/// Sample 13: jagged HSTU attention (seed 002's workload): o = (silu(alpha q k^T) / max_len) v per sequence and head,
/// sequences of different lengths packed one after another (sequence s holds rows offsets[s] .. offsets[s + 1] of
/// q, k, v and o, each [tokens, H * D], head h in columns h * D ..). Program (i, s, h) computes the BM queries from
/// i * BM of sequence s, head h; a program past its sequence's end does nothing. Each
/// program reads its sequence through views rows(start, end), whose TMA descriptors tilejit builds on the device:
/// keys past the end read zeros (and their v rows are zeros), so no mask is needed but the causal one (CAUSAL 1:
/// key <= query, on the blocks of keys that meet the query block only). The product P V accumulates in place.
/// BIAS 1 adds HSTU's relative attention bias before the silu: rab[h, clamp(key - query, -R, R) + R] from the
/// [H, 2R + 1] table rab (learned per head and relative position; positions R or more apart share the last
/// entries). BIAS 0 leaves rab unread (any [H, 1] tensor will do). `silu` Accuracy::fast computes the silu's sigmoid
/// through the hardware's tanh (one special-function instruction per score instead of two: the loop is bound by
/// them), within 2^-11.9 absolute of the exact sigmoid (dsl::Accuracy); the kernel is then named "jagged_hstu_fast".
inline auto jagged_hstu_kernel(Accuracy silu = Accuracy::precise) {
  return tilejit::kernel(silu == Accuracy::fast ? "jagged_hstu_fast" : "jagged_hstu", [silu](Tensor<i32, 1> offsets, Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<bf16, 2> v,
                                            Tensor<bf16, 2> o, Tensor<f32, 2> rab, Scalar<f32> alpha, Scalar<f32> inv_max_len,
                                            Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D, Meta<"CAUSAL"> CAUSAL, Meta<"BIAS"> BIAS) {
    auto s = program_id(1);
    auto h = program_id(2);
    auto col = h * D;  // the head's columns
    auto start = load(offsets, s);
    auto end = load(offsets, s + 1);
    auto len = end - start;
    auto m0 = program_id(0) * BM;
    // A program past its sequence's end (an empty sequence included: a view of no rows has no descriptor) does nothing.
    if_then(m0 < len, [&] {
      auto qs = q.rows(start, end), ks = k.rows(start, end), vs = v.rows(start, end);
      auto qt = descriptor_load(qs, {m0, col}, {BM, D});
      auto rows = m0 + arange(0, BM);
      auto block = [&](Scalar<i32> j, Value<f32, 2> acc, bool masked) {
        auto kt = descriptor_load(ks, {j, col}, {BN, D});
        auto x = dot(qt, kt.trans()) * alpha;
        if (BIAS) {
          auto reach = (rab.size(1).to<i32>() - 1) / 2;
          auto rel = (j + arange(0, BN)).expand_dims<0>() - rows.expand_dims<1>();  // key position - query position
          x = x + load(rab, h * rab.stride(0).to<i32>() + minimum(maximum(rel, -reach), reach) + reach);
        }
        auto p = x * sigmoid(x, silu) * inv_max_len;
        if (masked) p = where((j + arange(0, BN)).expand_dims<0>() <= rows.expand_dims<1>(), p, 0.0f);
        return dot(p.to<bf16>(), descriptor_load(vs, {j, col}, {BN, D}), acc);
      };
      auto unmasked_end = CAUSAL ? m0 / BN * BN : len;  // causal: the blocks wholly before the query block
      auto acc = for_range(0, unmasked_end, BN, zeros<f32>({BM, D}), [&](Scalar<i32> j, Value<f32, 2> acc) { return block(j, acc, false); });
      if (CAUSAL)
        acc = for_range(unmasked_end, minimum(m0 + BM, len), BN, acc, [&](Scalar<i32> j, Value<f32, 2> acc) { return block(j, acc, true); });
      descriptor_store(o.rows(start, end), {m0, col}, acc.to<bf16>());
    });
  });
}

/// Sample 15: jagged (variable-length) softmax attention, o = softmax(scale q k^T) v per sequence and head, with
/// the sequences packed one after another as in sample 13 (sequence s holds rows offsets[s] .. offsets[s + 1] of q,
/// k, v and o, each [tokens, H * D], head h in columns h * D ..), and lse[h, row] = ln(sum_j exp(scale q k_j)) as
/// sample 12 writes it. Sequences of very different lengths are balanced by the order the programs take them:
/// program (i, h, r) works on sequence order[r] (the caller lists the longest first, so that the long ones start
/// first and the short ones fill the GPU's last gaps) and, causal, on its query blocks from the last one (the longest
/// first too). A program past its sequence's end (an empty sequence included) does nothing. Keys past the end read
/// zeros through the views, so the last block of keys is masked (key < length), and causal the blocks that meet
/// the diagonal too.
inline auto jagged_attention_kernel() {
  return tilejit::kernel("jagged_attention", [](Tensor<i32, 1> offsets, Tensor<i32, 1> order, Tensor<bf16, 2> q, Tensor<bf16, 2> k,
                                                 Tensor<bf16, 2> v, Tensor<bf16, 2> o, Tensor<f32, 2> lse, Scalar<f32> scale,
                                                 Meta<"BM"> BM, Meta<"BN"> BN, Meta<"D"> D, Meta<"CAUSAL"> CAUSAL) {
    auto s = load(order, program_id(2));
    auto h = program_id(1);
    auto col = h * D;  // the head's columns
    auto start = load(offsets, s);
    auto end = load(offsets, s + 1);
    auto len = end - start;
    auto blocks = (len + BM - 1) / BM;
    auto m0 = (CAUSAL ? blocks - 1 - program_id(0) : program_id(0)) * BM;
    if_then(program_id(0) < blocks, [&] {
      auto qs = q.rows(start, end), ks = k.rows(start, end), vs = v.rows(start, end);
      auto qt = descriptor_load(qs, {m0, col}, {BM, D});
      auto scale2 = scale * 1.4426950408889634f;  // scores in base 2: the softmax's exponentials are exp2
      auto rows = m0 + arange(0, BM);
      // One block of keys from j: the running maximum m, sum l and output acc, updated (the online softmax).
      auto block = [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc, bool masked) {
        auto qk = dot(qt, descriptor_load(ks, {j, col}, {BN, D}).trans());
        if (masked) {
          auto cols = j + arange(0, BN);
          auto keep = cols.expand_dims<0>() < len;
          if (CAUSAL) keep = keep & (cols.expand_dims<0>() <= rows.expand_dims<1>());
          qk = where(keep, qk, -1e30f);
        }
        auto m_new = maximum(m_i, max(qk, 1) * scale2);
        auto p = exp2(qk * scale2 - m_new.expand_dims<1>());
        auto alpha = exp2(m_i - m_new);
        auto pv = dot(p.to<bf16>(), descriptor_load(vs, {j, col}, {BN, D}), acc * alpha.expand_dims<1>());
        return std::tuple{m_new, l_i * alpha + sum(p, 1), pv};
      };
      auto init = std::tuple{full<f32>({BM}, -1e30), zeros<f32>({BM}), zeros<f32>({BM, D})};
      // The blocks no mask touches (causal: those wholly before the query block), then the masked ones.
      auto unmasked_end = (CAUSAL ? m0 : len) / BN * BN;
      auto masked_end = CAUSAL ? minimum(m0 + BM, len) : len;
      auto [m1, l1, acc1] = for_range(0, unmasked_end, BN, init, [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
        return block(j, m_i, l_i, acc, false);
      });
      auto [m, l, acc] = for_range(unmasked_end, masked_end, BN, std::tuple{m1, l1, acc1},
                                   [&](Scalar<i32> j, Value<f32, 1> m_i, Value<f32, 1> l_i, Value<f32, 2> acc) {
                                     return block(j, m_i, l_i, acc, true);
                                   });
      descriptor_store(o.rows(start, end), {m0, col}, (acc * (1.0f / l).expand_dims<1>()).to<bf16>());
      store(lse, h * lse.stride(0).to<i32>() + start + rows, (m + log2(l)) * 0.6931471805599453f, rows < len);
    });
  });
}

/// Sample 11, step 1: the tile schedule of a mixture-of-experts grouped GEMM, built on the device from the
/// expert offsets. The rows of x are tokens sorted by expert: expert e owns rows offsets[e] .. offsets[e + 1] - 1
/// (offsets has E + 1 entries, the last one the row count; an expert may own none). Each expert's rows are cut
/// into tiles of BM rows, and slot j of the schedule describes the j-th tile: its first row (tile_rows[j]), the end
/// of its expert's rows (tile_ends[j]) and its expert (tile_experts[j]); slots past the last tile get -1. Program
/// p fills slots p * BJ .. p * BJ + BJ - 1; EP is a power of two at least E. No prefix-sum op is needed: the
/// running tile counts are a sum over an [EP, EP] block, and slot j's expert is the number of experts whose tiles
/// all come before it.
inline auto moe_tile_schedule_kernel() {
  return tilejit::kernel("moe_tile_schedule", [](Tensor<i32, 1> offsets, Tensor<i32, 1> tile_rows, Tensor<i32, 1> tile_ends,
                                                 Tensor<i32, 1> tile_experts, Meta<"BM"> BM, Meta<"EP"> EP, Meta<"BJ"> BJ) {
    auto experts = offsets.size(0).to<i32>() - 1;
    auto e = arange(0, EP);
    auto lo = load(offsets, e, e < experts);  // lanes past the last expert read 0: they own no tiles
    auto hi = load(offsets, e + 1, e < experts);
    auto tiles = (hi - lo + BM - 1) / BM;                                                    // [EP]
    auto ends = sum(where(e.expand_dims<0>() <= e.expand_dims<1>(), tiles.expand_dims<0>(), 0), 1);  // tiles of experts 0..e
    auto j = program_id(0) * BJ + arange(0, BJ);                                              // [BJ] slots
    auto owner = sum((ends.expand_dims<0>() <= j.expand_dims<1>()).to<i32>(), 1);             // [BJ] the slot's expert
    auto mine = e.expand_dims<0>() == owner.expand_dims<1>();                                 // [BJ, EP]
    auto row = sum(where(mine, (lo - (ends - tiles) * BM).expand_dims<0>(), 0), 1) + j * BM;  // expert's first row + tile offset
    auto end = sum(where(mine, hi.expand_dims<0>(), 0), 1);
    auto used = owner < experts, inside = j < tile_rows.size(0).to<i32>();
    store(tile_rows, j, where(used, row, -1), inside);
    store(tile_ends, j, where(used, end, -1), inside);
    store(tile_experts, j, where(used, owner, -1), inside);
  });
}

/// Sample 11, step 2: the grouped GEMM y[rows of e] = x[rows of e] @ w_e^T for every expert e, bf16, f32
/// accumulation, with the weights of all experts in one [E * N, K] tensor (expert e's rows from e * N). One
/// program per output tile: the programs walk the schedule's slots GM at a time across all column tiles (Triton's
/// grouped order, so that a group's weight tiles stay in L2), and those of unused slots do nothing. A tile's rows
/// may run past its expert's end into the next expert's tokens: they are loaded and multiplied, but the store goes
/// through y.rows(0, end), a view that ends with the expert, so they are not written.
inline auto moe_grouped_matmul_kernel() {
  return tilejit::kernel("moe_grouped_matmul", [](Tensor<bf16, 2> x, Tensor<bf16, 2> w, Tensor<bf16, 2> y, Tensor<i32, 1> tile_rows,
                                                  Tensor<i32, 1> tile_ends, Tensor<i32, 1> tile_experts, Meta<"BM"> BM,
                                                  Meta<"BN"> BN, Meta<"BK"> BK, Meta<"GM"> GM) {
    auto N = y.size(1).to<i32>();
    auto tiles_n = (N + BN - 1) / BN;
    auto slots = tile_rows.size(0).to<i32>();
    auto pid = program_id(0);
    auto first = pid / (GM * tiles_n) * GM;           // the group's first slot
    auto group = minimum(slots - first, GM);          // the last group may be smaller
    auto slot = first + pid % group;
    auto n = pid % (GM * tiles_n) / group * BN;
    auto m = load(tile_rows, slot);
    if_then(m >= 0, [&] {
      auto end = load(tile_ends, slot), expert = load(tile_experts, slot);
      auto acc = for_range(0, x.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(x, {m, k}, {BM, BK}), descriptor_load(w, {expert * N + n, k}, {BN, BK}).trans(), acc);
      });
      descriptor_store(y.rows(0, end), {m, n}, acc.to<bf16>());
    });
  });
}

}  // namespace tilejit::samples
