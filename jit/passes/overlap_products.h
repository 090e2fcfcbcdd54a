// Overlapped products: a loop's last product of each iteration is issued in the next one, after that
// iteration's first product, so that it runs on the tensor cores while the warps compute (attention's P V
// during the next block's softmax, as FlashAttention-3's intra-warpgroup overlap).
#pragma once

#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// Rewrites every loop of this form (attention's loop over blocks of keys):
///   for j: ... s = dot(x, load_k(j) ...) ...; acc' = dot(cast(p), load_v(j), update(acc)); yield ..., acc', ...
/// where the last product (B: the dot, the update of its loop-carried accumulator, the TMA load of its
/// operand b with its views, and movement ops only B reads) feeds nothing but its slot of the yield, and the
/// rest of the body (A: the first product, the softmax) needs nothing from B. The loop becomes
///   if (lo < hi) A(lo)                                   (the first block's scores and softmax)
///   for j from lo + step: A(j) up to its first product; B(j - step); the rest of A(j)
///   if (lo < hi) B(last)                                 (the last block's P V)
/// The values A hands to B (the 16-bit P, the rescale factor) become loop-carried. Every iteration computes
/// what the loop as written computes, in the same order per value: the results are the same bits. The loop's
/// TMA loads stay in one ring (B's at index j - step, in the stage of iteration j), so iteration j issues
/// S_j, then P V of block j - 1, and the softmax of block j runs while P V is on the tensor cores. The TMA
/// loads of A(lo) and B(last) are marked with the ring position they read (TmaAttrs::ring), so that the
/// loop's pipeline serves them from its ring (PipelinedLoop::first, last) rather than from tiles of their own.
///
/// Only loops with a first dot before the last one, no memory writes, no nested regions, and a B that reads
/// no loop-carried value but its accumulator are rewritten; never at num_stages 1 or with
/// Config::overlap_products(false), always with overlap_products(true), and when the configuration leaves it
/// to tilejit, where the first product is at least kMinOverlapWidth wide and no programs_per_sm target is set
/// (measured: docs/schedules.md, "Overlapped products").
ir::Graph overlap_products(const ir::Graph& g);

/// The width (columns of S: keys per block) from which tilejit overlaps a loop's products by itself: on an H100
/// every measured 128-wide configuration gained 3-33% (attention and jagged HSTU, dense and causal), the 32-
/// and 64-wide ones -25% to +17%.
inline constexpr int64_t kMinOverlapWidth = 128;

}  // namespace tilejit::passes
