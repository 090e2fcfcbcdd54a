// Tensor-core planning: which dots lower to wgmma, their tiling over warpgroups, and their operand tiles.
#include <algorithm>

#include "tilejit/error.h"
#include "tilejit/passes/graph_info.h"
#include "tilejit/passes/mma_plan.h"
#include "tilejit/passes/tma_plan.h"

namespace tilejit::passes {

using ir::DType;
using ir::Op;

namespace {

const char* ptx_type(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::f32: return "f32";
    case DType::f8e4m3: return "e4m3";
    case DType::f8e5m2: return "e5m2";
    case DType::i8: return "s8";
    case DType::u8: return "u8";
    case DType::i32: return "s32";
    default: return "?";
  }
}

bool sixteen_bit(DType t) { return t == DType::bf16 || t == DType::f16; }

/// Whether wgmma accumulates products of `in` operands into `acc`: integers into i32; every float type
/// into f32; f16 and fp8 operands also into f16 (two per 32-bit register).
bool accumulator_ok(DType in, DType acc) {
  if (in == DType::i8 || in == DType::u8) return acc == DType::i32;
  if (acc == DType::f16) return in == DType::f16 || ir::is_fp8(in);
  return acc == DType::f32;
}

class Planner {
 public:
  Planner(const ir::Graph& g, const GraphInfo& info, int warps) : g_(g), info_(info), warps_(warps) {}

  MmaPlan run() {
    std::vector<NodeId> dots;
    for (size_t i = 0; i < g_.size(); ++i)
      if (g_.node(static_cast<NodeId>(i)).op == Op::Dot && info_.position[i] >= 0) dots.push_back(static_cast<NodeId>(i));
    std::sort(dots.begin(), dots.end(), [&](NodeId a, NodeId b) {
      return info_.position[static_cast<size_t>(a)] < info_.position[static_cast<size_t>(b)];
    });
    // Candidates on their own merits, then drop those whose tiles something else reads, until stable.
    std::unordered_map<NodeId, MmaDot> cand;
    std::unordered_map<NodeId, std::string> why;
    for (NodeId d : dots) {
      std::string reason;
      if (auto m = consider(d, reason)) cand.emplace(d, *m);
      else why[d] = reason;
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = cand.begin(); it != cand.end();) {
        std::string reason;
        if (private_tile(it->second.a, cand, reason) && private_tile(it->second.b, cand, reason)) {
          ++it;
          continue;
        }
        why[it->first] = reason;
        it = cand.erase(it);
        changed = true;
      }
    }
    MmaPlan plan;
    for (NodeId d : dots) {
      auto it = cand.find(d);
      if (it == cand.end()) {
        plan.cuda_cores.emplace_back(d, why[d]);
        continue;
      }
      for (const MmaOperand* o : {&it->second.a, &it->second.b}) {
        if (o->load == ir::kNoNode) continue;  // a in registers
        if (!o->k_major_copy) plan.swizzle[o->load] = o->tile.swizzle;
        if (o->permute != ir::kNoNode) plan.absorbed.insert(o->permute);
      }
      if (const MmaDot& m = it->second; m.tiling.m < 64) {
        // Each 8-row group of a K-major tile lies a swizzle width after the previous one: the instructions read
        // 64 - M rows past each piece of the tile, and so past its end.
        int& past = plan.overrun[m.a.load];
        past = std::max(past, static_cast<int>((64 - m.tiling.m) * m.a.tile.swizzle));
      }
      plan.dots.emplace(d, it->second);
    }
    return plan;
  }

 private:
  /// The operand `v` of a dot as a tile: a DescLoad, or a transpose of one. `k_inner`: the tile must
  /// have K innermost to be K-major (true for a as [M, K], false for b as [K, N]).
  bool operand(NodeId v, bool k_is_first_dim_of_value, DType t, MmaOperand& o, std::string& reason) const {
    NodeId src = v;
    bool transposed = false;
    if (g_.node(v).op == Op::Permute) {
      src = g_.operand(v, 0);
      transposed = true;
      o.permute = v;
    }
    const ir::Node& n = g_.node(src);
    if (n.op == Op::Reshape && g_.node(g_.operand(src, 0)).op == Op::DescLoad) {
      // canonicalize loads a tile in its reshaped shape when every user reshapes it alike by dropping unit
      // dimensions (a {1, BM, D} tile as [BM, D]); this one is also read in another shape, or reshaped otherwise.
      const ir::Shape& tile = g_.node(g_.operand(src, 0)).shape;
      reason = "an operand is a reshape of a TMA tile (" + tile.str() + " to " + n.shape.str() + ")" +
               (tile.squeezed() == n.shape.squeezed()
                    ? " that is also used in another shape: load it for the product with its own descriptor_load, or load "
                      "a 2-D tile from a 2-D view of the tensor (merge({2, 1}), or merge({2, 1}).rows(start, end) to stop at "
                      "the sequence's end)"
                    : " that changes its dimensions: load the tile in the shape the product reads (a box of that shape, "
                      "from a merged view of the tensor if needed)");
      return false;
    }
    if (n.op != Op::DescLoad) {
      reason = "an operand is not a TMA tile (descriptor_load, or its .trans())";
      return false;
    }
    if (n.shape.rank != 2) {
      reason = "an operand tile has rank " + std::to_string(n.shape.rank) + ", not 2";
      return false;
    }
    const ir::TmaAttrs at = ir::attrs<ir::TmaAttrs>(g_, src);
    if (at.estride[0] != 1 || at.estride[1] != 1) {
      reason = "an operand tile has element strides";
      return false;
    }
    if (n.shape.dims[0] > 256 || n.shape.dims[1] > 256) {
      reason = "an operand tile " + n.shape.str() + " has a dimension over TMA's 256";
      return false;
    }
    o.load = src;
    // The value's dimension order is [rows, inner] of the tile unless transposed.
    const bool k_is_tile_row = transposed ? !k_is_first_dim_of_value : k_is_first_dim_of_value;
    o.mn_major = k_is_tile_row;
    o.tile.rows = n.shape.dims[0];
    o.tile.inner = n.shape.dims[1];
    o.tile.elem_bytes = ir::size_of(t);
    if (o.mn_major && !sixteen_bit(t)) {
      // wgmma transposes 16-bit operands only: the threads copy this one K-major ([M or N, K]).
      o.k_major_copy = true;
      o.mn_major = false;
      o.source = o.tile;
      o.source.swizzle = 0;  // TMA writes it unswizzled: the copy reads rows of it, conflict-free
      if (o.source.inner * o.source.elem_bytes % 16 != 0) {
        reason = "an M/N-major " + std::string(t == DType::f32 ? "tf32" : ptx_type(t)) + " operand tile's inner dimension (" +
                 std::to_string(o.source.inner * o.source.elem_bytes) + " bytes) is not a multiple of 16 bytes";
        return false;
      }
      std::swap(o.tile.rows, o.tile.inner);
    }
    o.tile.swizzle = layout::operand_swizzle(o.tile.inner * o.tile.elem_bytes);
    if (o.tile.swizzle == 0) {
      reason = "an operand tile's inner dimension (" + std::to_string(o.tile.inner * o.tile.elem_bytes) +
               " bytes) is not a multiple of 32 bytes";
      return false;
    }
    return true;
  }

  std::optional<MmaDot> consider(NodeId d, std::string& reason) const {
    const NodeId a = g_.operand(d, 0), b = g_.operand(d, 1);
    MmaDot m;
    m.in = g_.node(a).dtype;
    m.acc = g_.node(d).dtype;
    if (g_.node(b).dtype != m.in) {
      reason = "the operands' types differ";
      return std::nullopt;
    }
    if (m.in == DType::f32 && ir::dot_precision(g_, d) != ir::DotPrecision::tf32) {
      reason = "f32 operands with Precision::ieee (tensor cores multiply f32 operands as tf32)";
      return std::nullopt;
    }
    if (layout::wgmma_k(m.in) == 0 || !accumulator_ok(m.in, m.acc)) {
      const std::string in(ir::name_of(m.in)), acc(ir::name_of(m.acc));
      reason = in + " x " + in + " -> " + acc + " has no wgmma instruction";
      return std::nullopt;
    }
    const ir::Shape& sa = g_.node(a).shape;
    const ir::Shape& sb = g_.node(b).shape;
    auto t = layout::tile_mma(sa.dims[0], sb.dims[1], sa.dims[1], m.in, warps_, &reason);
    if (!t) return std::nullopt;
    m.tiling = *t;
    if (!operand(b, true, m.in, m.b, reason)) return std::nullopt;
    std::string tile_reason;
    if (!operand(a, false, m.in, m.a, tile_reason) && !registers_a(a, m, reason)) {
      if (reason.empty()) reason = tile_reason;
      return std::nullopt;
    }
    if (m.tiling.m < 64 && !m.a_in_registers() && (m.a.mn_major || m.a.k_major_copy)) {
      // The padded rows would be M elements of a piece past the tile's. (An a in registers pads as the accumulator
      // does: its padding rows are registers of their own, and what they hold reaches padding rows only.)
      reason = "M=" + std::to_string(m.tiling.m) + " below 64 with an M-major operand a (only a K-major TMA tile a, [M, K] with K "
               "innermost, or a in registers, is padded to the instruction's 64 rows)";
      return std::nullopt;
    }
    // Every instruction's first M/N index must start a swizzle piece of an MN-major tile.
    auto aligned = [](const MmaOperand& o, int64_t step) { return !o.mn_major || step % o.tile.piece_elems() == 0; };
    if (!aligned(m.a, 64) || !aligned(m.b, m.tiling.instr_n) || (m.tiling.warpgroups_n > 1 && !aligned(m.b, m.tiling.wg_cols()))) {
      reason = "an M/N-major operand's instructions would start inside a swizzle piece";
      return std::nullopt;
    }
    return m;
  }

  /// `a` as wgmma's register operand (attention's P x V): a computed 16-bit value, every warpgroup
  /// along M (each holds its rows of a) and K at most 256, in layout::wgmma_a_fragment. Leaves
  /// `reason` empty when `a` is not a candidate at all (a TMA tile that failed for its own reason).
  bool registers_a(NodeId a, MmaDot& m, std::string& reason) const {
    const Op op = g_.node(a).op;
    if (op == Op::DescLoad || (op == Op::Permute && g_.node(g_.operand(a, 0)).op == Op::DescLoad)) return false;
    if (!sixteen_bit(m.in)) {
      reason = std::string("a ") + ptx_type(m.in) + " operand in registers (wgmma reads 16-bit ones only; load a with TMA)";
      return false;
    }
    if (m.tiling.warpgroups_n != 1) {
      reason = "an operand a in registers with warpgroups split along N (use M >= 64 x num_warps / 4)";
      return false;
    }
    if (m.tiling.k > 256) {
      reason = "an operand a in registers with K = " + std::to_string(m.tiling.k) + " over 256";
      return false;
    }
    m.a = MmaOperand{};
    m.a.value = a;
    return true;
  }

  /// True when every reader of the operand's tile (and of its transposes) is a candidate dot that reads it
  /// laid out the same way: one TMA tile serves several products (attention backward's Q, read as Q^T by
  /// K Q^T and as itself by dS^T Q).
  bool private_tile(const MmaOperand& o, const std::unordered_map<NodeId, MmaDot>& cand, std::string& reason) const {
    if (o.load == ir::kNoNode) return true;  // a in registers
    // `u` reads `v` (the tile or a transpose of it) as a tensor-core operand, laid out as `o` is.
    auto dot_reader = [&](NodeId u, NodeId v) {
      const auto it = cand.find(u);
      if (it == cand.end()) return false;
      if (g_.operand(u, 2) == v) return false;  // used as an accumulator
      // Another dot reading the tile must want it laid out the same way (copied K-major, or read in place).
      for (const MmaOperand* other : {&it->second.a, &it->second.b})
        if (other->load == o.load && other->k_major_copy != o.k_major_copy) return false;
      return true;
    };
    auto only_dots = [&](NodeId v) {
      for (NodeId u : info_.users[static_cast<size_t>(v)]) {
        if (u == o.permute) continue;
        if (v == o.load && g_.node(u).op == Op::Permute) {
          // Another transpose of the tile: every reader of it must be a dot that absorbs it.
          for (NodeId w : info_.users[static_cast<size_t>(u)])
            if (!dot_reader(w, u)) return false;
          continue;
        }
        if (!dot_reader(u, v)) return false;
      }
      return true;
    };
    if (only_dots(o.load) && (o.permute == ir::kNoNode || only_dots(o.permute))) return true;
    reason = "an operand tile is also read by something other than a tensor-core dot, or by one that needs it laid out otherwise";
    return false;
  }

  const ir::Graph& g_;
  const GraphInfo& info_;
  int warps_;
};

}  // namespace

std::string MmaDot::instruction() const {
  const std::string operands = in == DType::f32 ? "tf32" : ptx_type(in);  // f32 operands are read as tf32
  return "wgmma.mma_async.sync.aligned.m64n" + std::to_string(tiling.instr_n) + "k" + std::to_string(tiling.instr_k) +
         "." + ptx_type(acc) + "." + operands + "." + operands;
}

MmaPlan plan_mma(const ir::Graph& g, const GraphInfo& info, int warps) { return Planner(g, info, warps).run(); }

}  // namespace tilejit::passes
