// Register prefetch of pointer loads in loops without products: each load is issued one iteration ahead.
#pragma once

#include <string>
#include <vector>

#include "tilejit/codegen/options.h"
#include "tilejit/ir/ir.h"

namespace tilejit::passes {

/// Per-thread bytes of prefetched values one loop may hold in registers (64 registers): the loaded block of
/// the next iteration lives next to the current one, so a loop whose loads would need more is left alone.
inline constexpr int64_t kMaxPrefetchBytesPerThread = 256;

/// Rewrites every loop without a dot so that its pointer loads (`load`) are issued one iteration ahead of
/// their use: the load of iteration i + 1 is issued at the top of iteration i and carried into the next
/// iteration as a loop-carried value, the load of the first iteration is issued before the loop. The loads
/// of iteration i + 1 are then in flight while iteration i computes (its reductions, barriers and stores
/// included), which a streaming loop (an online softmax over blocks of a row) needs to keep the memory system
/// busy. The next iteration's loads (and the part of their offsets that depends on the loop index) run under
/// `if (i + step < hi)`, so they touch no memory past the loop's last iteration and cost a last iteration
/// (or a loop that runs once) nothing but the comparison; the loop's results are those of the loop as written.
///
/// A load is prefetched when it sits in the loop body itself (not in a nested region) and its offsets,
/// mask and fill value are pure functions of the loop index and of values defined before the loop. In a
/// loop that writes memory (store, atomic_add, TMA store, anywhere in its body) a load is moved ahead of
/// those writes only when they cannot reach what it reads: it reads a Tensor parameter that the loop does
/// not write and that, by `spec`, overlaps no other tensor argument of the launch (Specialization::kDisjoint);
/// a write through a tensor of no known parameter keeps the loop as written. The loop is left alone when
/// num_stages is 1 (no pipelining), when it has a dot (its loads belong to the product's pipeline), and
/// loads are left in place once the prefetched values would need more than kMaxPrefetchBytesPerThread per
/// thread.
/// Prefetched loads carry the attribute `ahead` (AccessAttrs::ahead): next for the next iteration's, in the
/// loop body; first for the first iteration's, before the loop.
ir::Graph prefetch_loads(const ir::Graph& g, const codegen::Specialization& spec = {});

/// The Tensor parameters whose Specialization::kDisjoint bit prefetch_loads may read: those with a pointer
/// load in a loop that writes memory. The runtime compiles separate variants for that bit only for them.
std::vector<bool> disjointness_matters(const ir::Graph& g);

}  // namespace tilejit::passes
