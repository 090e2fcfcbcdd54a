// Register prefetch of pointer loads in loops without products: each load is issued one iteration ahead.
#pragma once

#include <string>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// Per-thread bytes of prefetched values one loop may hold in registers (64 registers): the loaded block of
/// the next iteration lives next to the current one, so a loop whose loads would need more is left alone.
inline constexpr int64_t kMaxPrefetchBytesPerThread = 256;

/// Rewrites every loop that writes no memory and has no dot so that its pointer loads (`load`) are issued
/// one iteration ahead of their use: the load of iteration i + 1 is issued at the top of iteration i and
/// carried into the next iteration as a loop-carried value, the load of the first iteration is issued
/// before the loop. The loads of iteration i + 1 are then in flight while iteration i computes (its
/// reductions and barriers included), which a streaming loop (an online softmax over blocks of a row)
/// needs to keep the memory system busy. The next iteration's loads (and the part of their offsets that
/// depends on the loop index) run under `if (i + step < hi)`, so they touch no memory past the loop's last
/// iteration and cost a last iteration (or a loop that runs once) nothing but the comparison; the loop's
/// results are those of the loop as written.
///
/// A load is prefetched when it sits in the loop body itself (not in a nested region) and its offsets,
/// mask and fill value are pure functions of the loop index and of values defined before the loop. The
/// loop is left alone when num_stages is 1 (no pipelining), when it stores, atomically adds or
/// TMA-stores anywhere in its body (a store could write what a later iteration's load reads), when it
/// has a dot (its loads belong to the product's pipeline), or when the prefetched values would need
/// more than kMaxPrefetchBytesPerThread per thread.
/// Prefetched loads carry the attribute `ahead` (Load i: [has_mask, ahead]): 1 for the next iteration's, in the
/// loop body; 2 for the first iteration's, before the loop.
ir::Graph prefetch_loads(const ir::Graph& g);

}  // namespace tilejit::passes
