// Register layouts: which (register, lane, warp) of a program holds which element of a block value.
//
// # The model
//
// A program runs `warps` warps of 32 lanes; every thread holds `regs()`
// registers of a block value. A layout is a list of *factors*. Each hardware
// index (the register number, the lane, the warp) is split into digits of
// mixed radix by the factors of its axis, fastest-varying factor first:
//
//   reg = d0 + s0 * (d1 + s1 * (d2 + ...))    for the register factors of sizes s0, s1, ...
//
// and the digit `d` of a factor moves the element coordinate of one tile
// dimension by `d * stride`. The coordinate of an element in dimension k is the
// sum over the factors of dimension k. A factor of dimension `kReplicated`
// moves nothing: threads that differ only in such a digit hold the same
// elements (the result of a reduction, which every thread of the reduced
// group keeps). Coordinates at or past the value's extent are *padding*: the
// register exists but holds no element (odd extents pad up to the tile).
//
// Example: a [16, 128] f32 tile over 4 warps, 4 elements per 16-byte vector
// (Triton's blocked layout sizePerThread [1, 4], threadsPerWarp [1, 32],
// warpsPerCTA [4, 1]):
//
//   reg  d1 x4 (stride 1)   lane d1 x32 (stride 4)   warp d0 x4 (stride 1)   reg d0 x4 (stride 4)
//
// Register 5 of lane 3 in warp 2 holds element (2 + 1 * 4, 1 + 3 * 4) = (6, 13).
//
// Reducing dimension 1 keeps every factor of dimension 0, drops the register
// factors of dimension 1 and turns its lane / warp factors into replicated
// ones (`slice`): each of the 32 lanes of a warp then holds the same four row
// results, so broadcasting them back along dimension 1 moves no data.
//
// The layouts of tensor cores (the wgmma accumulator fragment: lanes 4 x 8 over
// columns and rows, registers in pairs) are lists of factors too; shared-memory
// tiles with a swizzle are described by `SharedLayout`, an address function, in
// shared_layout.h with the bank-conflict cost model that chooses them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tilejit/ir/ir.h"

namespace tilejit::layout {

enum class Axis : uint8_t { Reg, Lane, Warp };

inline constexpr int kReplicated = -1;
inline constexpr int kLanes = 32;

/// Row-major strides (in elements) of a shape.
std::array<int64_t, ir::kMaxRank> row_major(const ir::Shape& s);

/// One digit of a hardware index: `size` values, each moving dimension `dim` by `stride`.
struct Factor {
  Axis axis = Axis::Reg;
  int size = 1;
  int dim = kReplicated;
  int64_t stride = 0;
  bool operator==(const Factor&) const = default;
};

/// A term of a coordinate: ((index / div) % mod) * mul, index being the register, lane or warp.
struct Term {
  Axis axis = Axis::Reg;
  int64_t div = 1;
  int64_t mod = 1;  ///< 0: no modulo (the digit is the index's most significant one)
  int64_t mul = 1;
};

/// A distributed layout of a block value of shape `shape` over `warps` warps.
class Layout {
 public:
  Layout() = default;
  Layout(ir::Shape shape, int warps, std::vector<Factor> factors);

  const ir::Shape& shape() const { return shape_; }
  int warps() const { return warps_; }
  const std::vector<Factor>& factors() const { return factors_; }

  /// Registers per thread (padding included).
  int regs() const { return size_of(Axis::Reg); }
  /// Product of the factor sizes of one axis (32 for lanes, `warps` for warps).
  int size_of(Axis a) const;

  /// Element coordinate (outermost first) held in register `reg` of `lane` in `warp`; may be padding.
  std::array<int64_t, ir::kMaxRank> coord(int reg, int lane, int warp) const;
  /// True when the coordinate is inside the shape.
  bool inside(const std::array<int64_t, ir::kMaxRank>& c) const;
  /// True when some register of some thread is padding.
  bool padded() const;
  /// Dimensions in which some register of some thread is padding.
  std::vector<int> padded_dims() const;
  /// True when some lane or warp factor is replicated (several threads hold one element).
  bool replicated() const;

  /// The digit terms of the coordinate in dimension `dim` (register, lane and warp).
  std::vector<Term> coord_terms(int dim) const;
  /// The terms of the row-major linear element index.
  std::vector<Term> linear_terms() const;
  /// The terms that select, among threads holding the same elements, the one
  /// that owns them (all of them must be zero); empty when not replicated.
  std::vector<Term> replica_terms() const;

  /// The register factors' digit of factor `k` (index into factors()) within a register number.
  int64_t digit_div(size_t k) const;

  /// Elements per 16-byte-or-smaller vector: how many consecutive registers
  /// hold consecutive elements of the innermost dimension (1 when none).
  int vector_width() const;

  /// Readable form: "[16, 128] reg d1x4, lane d1x32, warp d0x4, reg d0x4(s4)".
  std::string str() const;

  /// Same shape and the same element in every register of every thread.
  bool operator==(const Layout& o) const;

 private:
  ir::Shape shape_;
  int warps_ = 1;
  std::vector<Factor> factors_;
  std::vector<int64_t> divs_;  ///< digit_div of each factor, computed once
};

/// The blocked layout of `shape` for `warps` warps: `vec` consecutive elements
/// of the innermost dimension per register group, lanes then warps laid over
/// the dimensions from the innermost outwards, repeated in registers where the
/// shape is larger than one pass of the program. Dimensions that the threads
/// overrun are padded. Requires vec to divide the innermost extent.
Layout blocked(const ir::Shape& shape, int vec, int warps);

/// The vector width `blocked` should use for a value: `max_vec` (16 bytes of
/// its widest element type) halved until it divides the innermost extent and
/// every thread holds at least one vector (when the value is that large).
int choose_vector(const ir::Shape& shape, int max_vec, int warps);

/// The layout of the result of reducing dimension `dim`: the dimension is
/// removed; its register factors disappear, its lane and warp factors become
/// replicated.
Layout slice(const Layout& parent, int dim);

/// When `to` is `from` with unit dimensions inserted or removed: for each dimension of `from`, its
/// dimension in `to` (-1 for a unit dimension that is removed); nullopt for any other reshape.
std::optional<std::array<int, ir::kMaxRank>> unit_reshape_dims(const ir::Shape& from, const ir::Shape& to);

/// The layout of `to` when it is `from` with unit dimensions inserted or
/// removed (same elements, same registers: same_registers holds); nullopt for
/// any other reshape. Registers and threads that pad a removed unit dimension
/// pad the innermost non-unit dimension of `to`.
std::optional<Layout> reshape_units(const Layout& from, const ir::Shape& to);

/// Inverse of a broadcast: for a broadcast from `from_shape` (its rank may be
/// smaller, numpy rules) to `to.shape()`, the layout in which each thread's
/// registers hold exactly the source elements of `to`'s registers, with the
/// register factors of broadcast dimensions removed. When the operand has this
/// layout the broadcast moves no data.
Layout unbroadcast(const Layout& to, const ir::Shape& from_shape);

/// The value of a sum of terms for register `reg` of `lane` in `warp`.
int64_t evaluate(const std::vector<Term>& terms, int64_t reg, int64_t lane = 0, int64_t warp = 0);

/// Register r of `to` reads register `evaluate(terms, r)` of `unbroadcast(to, from_shape)`: the
/// digits of the register factors of the dimensions that are not broadcast.
std::vector<Term> unbroadcast_register_terms(const Layout& to, const ir::Shape& from_shape);
/// The same, evaluated for every register of `to`.
std::vector<int> unbroadcast_registers(const Layout& to, const ir::Shape& from_shape);

/// How a reduction of dimension `dim` of a value laid out as `parent` runs; the emitter prints it.
/// `whole`: the result is one element (every other dimension has extent 1), so every non-replicated
/// digit is combined (the other dimensions' digits only pad). Register-axis terms take the result
/// register j or the in-thread step k as their "register".
struct ReductionPlan {
  int out_regs = 1;                   ///< result registers per thread (the slice layout's)
  int axis_regs = 1;                  ///< parent registers each result register combines
  std::vector<Term> reg_of_j, reg_of_k;  ///< parent register = reg_of_j(j) + reg_of_k(k)
  std::vector<Term> coord_of_k;       ///< the coordinate along `dim` contributed by k
  std::vector<Term> coord_of_thread;  ///< and by the lane and warp
  std::vector<int> shuffle_masks;     ///< lane XOR masks, one butterfly step each
  std::vector<Term> writer;           ///< lane and warp digits that are 0 in the one thread writing a warp's partial
  std::vector<Term> warp_slot;        ///< the index of a warp among those that hold parts of one result
  int warps = 1;                      ///< how many warps hold parts of one result (they combine through shared memory)
};
ReductionPlan plan_reduction(const Layout& parent, int dim, bool whole);

/// For a layout reducing dimension `dim` into `slice(parent, dim)`: for each
/// result register, the parent registers it combines, in increasing order of
/// the reduced coordinate (plan_reduction, evaluated).
std::vector<std::vector<int>> reduction_groups(const Layout& parent, int dim);

/// True when the two layouts (of shapes with equal element counts) hold the same
/// row-major element in every register of every thread: a reshape between them moves nothing.
bool same_registers(const Layout& a, const Layout& b);

/// The elements of `src_shape` that the threads of `out` read when `out` is the layout of a permute of
/// a value of shape `src_shape` (out's dimension d is the source's dimension perm[d]): out's factors
/// with each dimension renamed, over the source's shape. With conversion_padding, it chooses the
/// padding of the tile through which a permute passes.
Layout permute_sources(const Layout& out, const std::vector<int64_t>& perm, const ir::Shape& src_shape);

}  // namespace tilejit::layout
