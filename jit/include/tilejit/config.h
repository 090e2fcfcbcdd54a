// A kernel configuration: named integers (block sizes) plus num_warps and num_stages.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <source_location>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilejit {

/// Whether a kernel's pipelined loop gets a producer warpgroup (Config::warp_specialize): as tilejit decides
/// (a loop rotated by overlap_products, on two consumer warpgroups or inside other loops, does; a GEMM's K loop,
/// persistent or not, does not), or as the configuration says.
enum class WarpSpecialize : uint8_t { automatic = 0, on = 1, off = 2 };

/// Whether a loop with two products issues the second one an iteration later, overlapped with the next
/// iteration's work (Config::overlap_products): as tilejit decides (where the first product is 128 or more
/// wide), or as the configuration says.
enum class OverlapProducts : uint8_t { automatic = 0, on = 1, off = 2 };

/// Whether the consumer warpgroups of a warp-specialized loop with several products take turns at the tensor
/// cores (Config::pingpong): as tilejit decides, or as the configuration says.
enum class Pingpong : uint8_t { automatic = 0, on = 1, off = 2 };

/// The values a kernel is specialised for. Names are matched against the
/// kernel's Meta<"NAME"> parameters; order of insertion does not matter.
/// num_stages is the number of ring buffers of software-pipelined loops; kAutoStages (0, the default)
/// lets tilejit choose for each kernel: 3, or fewer when the tiles of 3 do not fit in shared memory.
/// warp_specialize adds a producer warpgroup that issues the TMA loads of the kernel's pipelined loop
/// while the num_warps warps (the consumers) run its products (docs/schedules.md, "Warp roles"); left
/// unset, tilejit adds one to an attention loop it rotates (overlap_products) on 8 warps or inside other loops,
/// and none to a GEMM's K loop (measured slower there, persistent programs included).
class Config {
 public:
  static constexpr int kAutoStages = 0;

  Config() = default;
  /// The block values, with the fields set by name: Config{{"BM", 128}, {"BN", 256}}.num_warps(8).num_stages(4).
  /// Deprecated: the positional `num_warps` and `num_stages` arguments (Config(values, 8, 4)); they still work,
  /// use the num_warps(n) and num_stages(n) setters instead.
  Config(std::initializer_list<std::pair<std::string, int64_t>> values, int num_warps = 4, int num_stages = kAutoStages,
         std::source_location loc = std::source_location::current());

  /// The value of `name`; UserError when the configuration has none.
  int64_t operator[](std::string_view name) const;
  int64_t get(std::string_view name, std::source_location loc = std::source_location::current()) const;
  bool has(std::string_view name) const;
  // Each field has one name: `field(n)` sets it (and returns the configuration, so that setters chain),
  // `field()` reads it. UserErrors of the setters name the caller's line.
  Config& set(std::string_view name, int64_t value, std::source_location loc = std::source_location::current());
  /// Warps per program (the consumers when warp-specialised): a power of two from 1 to 32; 4 by default.
  Config& num_warps(int n, std::source_location loc = std::source_location::current());
  /// Ring buffers of software-pipelined loops: 1 to 8, or kAutoStages (0, the default) to let tilejit choose.
  Config& num_stages(int n, std::source_location loc = std::source_location::current());
  /// Older spellings of num_warps(n) and num_stages(n), kept so that existing code compiles.
  Config& warps(int n, std::source_location loc = std::source_location::current());
  Config& stages(int n, std::source_location loc = std::source_location::current());
  /// Occupancy target: at least `n` programs resident per SM (`__launch_bounds__(threads, n)`), which
  /// caps the registers per thread at 65536 / (threads * n) (ptxas spills what does not fit). 0, the
  /// default, leaves the register count to ptxas. threads * n may not exceed 2048.
  Config& programs_per_sm(int n, std::source_location loc = std::source_location::current());
  /// A producer warpgroup (128 more threads) that only issues the TMA loads of the kernel's pipelined loop,
  /// with registers moved to the consumers (setmaxnreg); `false` keeps a kernel from getting one. Kernels
  /// it does not apply to run without it and say why (a performance note).
  Config& warp_specialize(bool on = true);
  /// A loop whose last product accumulates what its earlier work computed (attention's P V after the softmax of
  /// S = Q K^T) issues that product in the next iteration, right after the next S: the tensor cores run it
  /// while the warps compute the next softmax (docs/schedules.md, "Overlapped products"). Unset, tilejit does
  /// it where the first product is at least 128 wide (S blocks of 128 keys: +3-33% on an H100) and no
  /// programs_per_sm target is set; `true` does it wherever the loop allows it, `false` never.
  Config& overlap_products(bool on = true);
  /// The consumer warpgroups of a loop with several products per iteration (attention's S = Q K^T and P V) take
  /// turns issuing them, in a fixed order, so that one warpgroup's softmax runs while the tensor cores work for
  /// the other (FlashAttention-3's ping-pong; docs/schedules.md, "Warpgroup turns"). It needs a producer
  /// warpgroup (`true` adds one where warp_specialize is not set) and two or more consumer warpgroups
  /// (num_warps 8 or more). Unset, tilejit takes turns where the kernel has a producer warpgroup and the loop was
  /// rotated by overlap_products (+0-4.5% on an H200); `false` never. Kernels it does not apply to run without
  /// it and say why (a performance note).
  Config& pingpong(bool on = true);
  /// Programs launched in clusters of x by y (1 x 1, the default; 2 x 1 or 1 x 2): the two programs of a
  /// cluster run at the same time on neighbouring SMs, and a tile that both load in a pipelined loop (a GEMM's B
  /// tile for two row blocks of the same columns) is read from memory once and written into both programs'
  /// shared memory (TMA multicast), which the kernel checks at run time (docs/schedules.md, "Clusters"). The
  /// grid's x (y) extent must be a multiple of x (y).
  Config& cluster(int x, int y = 1, std::source_location loc = std::source_location::current());
  /// Float products and sums contracted into fused multiply-adds: `a * b + c` and `a * b - c` of f32 / f64 blocks
  /// become one fma, rounded once, where the product has no other use (as nvcc and Triton do by default).
  /// On by default; the interpreter computes the same fma, so the GPU and the interpreter still agree. `false`
  /// rounds every product and sum on its own (fma() in a kernel is always one fused operation).
  Config& fp_contract(bool on = true);
  /// The registers the producer warpgroup keeps when a kernel has one (its setmaxnreg.dec target): 24, 32 or
  /// 40; the consumers take what it gives up, up to 240. 0, the default, lets tilejit choose (40, CUTLASS's
  /// value). 24 (FlashAttention-3's) gives two consumer warpgroups 240 registers instead of 232, which can keep a
  /// loop that spills at 232 in registers; the producer's code must then fit in 24 (ptxas spills what does not).
  Config& producer_registers(int n, std::source_location loc = std::source_location::current());
  /// Persistent programs: the kernel is launched with as many programs as fit on the GPU at once (its SMs times
  /// programs_per_sm, at least one per SM) and each of them runs the programs of the launch's grid in turn
  /// (program p takes the grid's programs p, p + launched, p + 2 x launched, ...), in the grid's launch order (x
  /// fastest, then y, then z) or, with tile_group, in groups of x. program_id() and num_programs() keep their
  /// meaning: the grid's. A pipelined loop of such a kernel lies in the loop over the grid's programs; with
  /// warp_specialize() its producer warpgroup loads the next program's first stages while the consumers finish the
  /// last one (docs/schedules.md, "Persistent programs"). Not with clusters.
  Config& persistent(bool on = true);
  /// The order in which persistent programs walk the grid (Triton's grouped order): groups of `rows` consecutive
  /// x indices (a GEMM's row blocks), each walked y by y (column by column) with x fastest, so that the programs
  /// running at once share the tiles of a few rows and columns in L2. 0, the default, is the launch order. Only with
  /// persistent(). 0 to 65536.
  Config& tile_group(int rows, std::source_location loc = std::source_location::current());

  /// Whether `name` is one of field_names(): a field set by name besides block values (TuneSpace, heuristics,
  /// saved decisions).
  static bool is_field(std::string_view name);
  /// The fields set by name: "num_warps", "num_stages", "programs_per_sm", "warp_specialize", "overlap_products",
  /// "pingpong", "cluster_x", "cluster_y", "fp_contract", "producer_registers", "persistent", "tile_group".
  static std::span<const std::string_view> field_names();
  /// Sets field `name` (is_field) or, for any other name, the block value (set()).
  Config& set_field(std::string_view name, int64_t value, std::source_location loc = std::source_location::current());

  int num_warps() const { return num_warps_; }
  int num_stages() const { return num_stages_; }
  int programs_per_sm() const { return programs_per_sm_; }
  [[deprecated("use programs_per_sm()")]] int min_programs_per_sm() const { return programs_per_sm_; }
  WarpSpecialize warp_specialization() const { return warp_specialize_; }
  bool warp_specialized() const { return warp_specialize_ == WarpSpecialize::on; }
  OverlapProducts product_overlap() const { return overlap_products_; }
  Pingpong warpgroup_pingpong() const { return pingpong_; }
  int cluster_x() const { return cluster_x_; }
  int cluster_y() const { return cluster_y_; }
  /// Programs per cluster (cluster_x * cluster_y).
  int cluster_size() const { return cluster_x_ * cluster_y_; }
  bool fp_contract() const { return fp_contract_; }
  int producer_registers() const { return producer_registers_; }
  bool persistent_programs() const { return persistent_; }
  int tile_group() const { return tile_group_; }
  const std::vector<std::pair<std::string, int64_t>>& values() const { return values_; }

  /// "BM=64, BN=128, num_warps=4, num_stages=auto" (values sorted by name; ", programs_per_sm=N" and
  /// ", warp_specialize" or ", warp_specialize=0", ", overlap_products=0" or ", overlap_products", ", pingpong"
  /// or ", pingpong=0" when set, ", cluster=2x1" for clusters, ", fp_contract=0" without contraction,
  /// ", producer_registers=N" when set, ", persistent" and ", tile_group=N" when set).
  std::string str() const;
  uint64_t hash() const;
  bool operator==(const Config& o) const = default;

 private:
  std::vector<std::pair<std::string, int64_t>> values_;  // sorted by name
  int num_warps_ = 4;
  int num_stages_ = kAutoStages;
  int programs_per_sm_ = 0;
  WarpSpecialize warp_specialize_ = WarpSpecialize::automatic;
  OverlapProducts overlap_products_ = OverlapProducts::automatic;
  Pingpong pingpong_ = Pingpong::automatic;
  int cluster_x_ = 1, cluster_y_ = 1;
  bool fp_contract_ = true;
  int producer_registers_ = 0;
  bool persistent_ = false;
  int tile_group_ = 0;
};

}  // namespace tilejit
