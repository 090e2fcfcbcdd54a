// passes::prefetch_loads: which loops get their pointer loads issued one iteration ahead, the shape of the
// rewritten loop, and that the rewritten program computes exactly what the traced one does (both run by the
// interpreter on the same inputs, every trip count residue, empty loops included).
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "interp_test_util.h"
#include "tilejit/passes/lowering.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

namespace {

/// The graph after the prefetch_loads step of the lowering.
ir::Graph after_prefetch(const ir::Graph& g) {
  std::optional<ir::Graph> out;
  tilejit::passes::lower(g, tilejit::codegen::Options{}, [&](std::string_view step, const ir::Graph& after) {
    if (step == "prefetch_loads") out = after;
  });
  REQUIRE(out.has_value());
  return *out;
}

/// The reachable Load nodes issued ahead (attribute ahead = 1), and all reachable Load nodes.
struct LoadCount {
  int ahead = 0, all = 0;
};
LoadCount loads_of(const ir::Graph& g) {
  const auto info = tilejit::passes::analyze(g);
  LoadCount c;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (info.position[i] < 0 || g.node(id).op != Op::Load) continue;
    ++c.all;
    if (ir::attrs<ir::AccessAttrs>(g, id).ahead != ir::LoadAhead::none) ++c.ahead;
  }
  return c;
}

}  // namespace

TEST_CASE("prefetch_loads: the online softmax's reduction loop loads one block ahead; the loop that stores does not") {
  auto k = tilejit::samples::softmax_online_kernel();  // Meta<"BN">: its value comes from the configuration
  const Config cfg = Config{{"BN", 256}}.num_warps(2).num_stages(0);
  const auto g = k.trace(cfg);
  const ir::Graph h = after_prefetch(*g);
  // The first loop carries (m, s) and the next block; the second (it stores) is unchanged.
  CHECK(carried_per_loop(h) == std::vector<size_t>{3, 0});
  CHECK(loads_of(h).ahead == 2);  // before the loop and in its body
  CHECK(loads_of(h).all == 3);    // the storing loop's load stays where it is
  const int64_t rows = 3;
  for (int64_t n : {1, 100, 256, 257, 700, 1024}) {
    SUBCASE(("n = " + std::to_string(n)).c_str()) {
      Buffer x(DType::f32, rows * n), y(DType::f32, rows * n);
      fill_random(x, static_cast<uint64_t>(n));
      same_results(*g, h, dim3(static_cast<uint32_t>(rows)), {&x}, {&y}, [&](const std::vector<Buffer>& b) {
        KernelArg bn;
        bn.kind = KernelArg::Config;  // the traced graph holds BN; the argument only takes its place
        return std::vector<KernelArg>{tensor_arg(b[0].arg({rows, n})), tensor_arg(b[1].arg({rows, n})), bn};
      });
    }
  }
}

TEST_CASE("prefetch_loads: unmasked and scalar loads of the next iteration run only when it does; empty loops read nothing") {
  auto k = tilejit::kernel("sum_blocks", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> w, dsl::Tensor<dsl::f32, 1> out,
                                            dsl::Scalar<dsl::i32> lo, dsl::Scalar<dsl::i32> hi, dsl::Scalar<dsl::i32> step) {
    using namespace tilejit::dsl;
    auto acc = for_range(lo, hi, step, zeros<f32>({64}), [&](Scalar<i32> i, Value<f32, 1> a) {
      return a + load(x, i * 64 + arange(0, 64)) * load(w, i);  // no masks: x holds exactly the blocks run
    });
    store(out, arange(0, 64), acc);
  });
  const auto g = k.trace(Config{}.num_warps(1));
  const ir::Graph h = after_prefetch(*g);
  CHECK(carried_per_loop(h) == std::vector<size_t>{3});
  CHECK(loads_of(h).ahead == 4);
  // hi is the number of blocks x holds: the prefetch past the last one must not read (the interpreter raises a
  // UserError for an unmasked access out of bounds).
  const int ranges[][3] = {{0, 7, 1}, {0, 7, 2}, {0, 7, 3}, {2, 7, 4}, {0, 1, 1}, {3, 3, 1}, {5, 2, 1}, {0, 7, 100}};
  for (const auto& r : ranges) {
    SUBCASE(("[" + std::to_string(r[0]) + ", " + std::to_string(r[1]) + ") step " + std::to_string(r[2])).c_str()) {
      const int64_t blocks = std::max(r[0], r[1]);
      Buffer x(DType::f32, blocks * 64), w(DType::f32, blocks), out(DType::f32, 64);
      fill_random(x, 1);
      fill_random(w, 2);
      same_results(*g, h, dim3(1), {&x, &w}, {&out}, [&](const std::vector<Buffer>& b) {
        return std::vector<KernelArg>{tensor_arg(b[0].arg1()), tensor_arg(b[1].arg1()), tensor_arg(b[2].arg1()),
                                      scalar_arg(DType::i32, r[0]), scalar_arg(DType::i32, r[1]), scalar_arg(DType::i32, r[2])};
      });
    }
  }
}

TEST_CASE("prefetch_loads: loop nests and loops inside an if; each loop's prologue runs where the loop starts") {
  auto k = tilejit::kernel("nest", [](dsl::Tensor<dsl::f32, 2> x, dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> rows,
                                      dsl::Scalar<dsl::i32> flag) {
    using namespace tilejit::dsl;
    auto n = x.size(1).to<i32>();
    auto cols = arange(0, 32);
    auto total = for_range(0, rows, 1, zeros<f32>({32}), [&](Scalar<i32> r, Value<f32, 1> t) {
      auto scale = load(x, r.to<i64>() * x.stride(0));  // the row's first element, per outer iteration
      auto inner = for_range(0, n, 32, zeros<f32>({32}), [&](Scalar<i32> c, Value<f32, 1> a) {
        auto cc = c + cols;
        return a + load(x, r.to<i64>() * x.stride(0) + cc, cc < n);
      });
      return t + inner * scale;
    });
    auto picked = if_else(flag > 0, [&] { return total; }, [&] {
      return for_range(0, n, 32, total, [&](Scalar<i32> c, Value<f32, 1> a) {
        auto cc = c + cols;
        return maximum(a, load(x, cc, cc < n, -1.0f));
      });
    });
    store(out, cols, picked);
  });
  const auto g = k.trace(Config{}.num_warps(1));
  const ir::Graph h = after_prefetch(*g);
  CHECK(loads_of(h).ahead == 6);  // two per loop: the outer loop's scale, the inner loop's block, the if's loop's block
  for (int rows : {0, 1, 3})
    for (int64_t n : {1, 31, 32, 33, 96}) {
      SUBCASE(("rows " + std::to_string(rows) + ", n " + std::to_string(n)).c_str()) {
        const int64_t rows_held = std::max(rows, 1);
        Buffer x(DType::f32, rows_held * n), out(DType::f32, 32);
        fill_random(x, static_cast<uint64_t>(n * 7 + rows));
        for (int flag : {0, 1})
          same_results(*g, h, dim3(1), {&x}, {&out}, [&](const std::vector<Buffer>& b) {
            return std::vector<KernelArg>{tensor_arg(b[0].arg({rows_held, n})), tensor_arg(b[1].arg1()),
                                          scalar_arg(DType::i32, rows), scalar_arg(DType::i32, flag)};
          });
      }
    }
}

TEST_CASE("prefetch_loads: what stays where it is") {
  SUBCASE("num_stages = 1 asks for no pipelining") {
    auto k = tilejit::kernel("stages1", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> n) {
      using namespace tilejit::dsl;
      auto acc = for_range(0, n, 64, zeros<f32>({64}), [&](Scalar<i32> i, Value<f32, 1> a) {
        return a + load(x, i + arange(0, 64), i + arange(0, 64) < n);
      });
      store(out, arange(0, 64), acc);
    });
    CHECK(loads_of(after_prefetch(*k.trace(Config{}.num_warps(1).num_stages(1)))).ahead == 0);
    CHECK(loads_of(after_prefetch(*k.trace(Config{}.num_warps(1)))).ahead == 2);
  }
  SUBCASE("a load whose offsets depend on a loop-carried value (pointer chasing)") {
    auto k = tilejit::kernel("chase", [](dsl::Tensor<dsl::i32, 1> next, dsl::Tensor<dsl::i32, 1> out, dsl::Scalar<dsl::i32> n) {
      using namespace tilejit::dsl;
      Scalar<i32> start = 0;
      auto at = for_range(0, n, 1, start, [&](Scalar<i32>, Scalar<i32> p) { return load(next, p); });
      store(out, arange(0, 1), at);
    });
    CHECK(loads_of(after_prefetch(*k.trace(Config{}.num_warps(1)))).ahead == 0);
  }
  SUBCASE("a loop that stores, even to another tensor (it could alias what a later iteration loads)") {
    auto k = tilejit::kernel("copy_loop", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Scalar<dsl::i32> n) {
      using namespace tilejit::dsl;
      for_range(0, n, 64, [&](Scalar<i32> i) { store(y, i + arange(0, 64), load(x, i + arange(0, 64), i + arange(0, 64) < n), i + arange(0, 64) < n); });
    });
    CHECK(loads_of(after_prefetch(*k.trace(Config{}.num_warps(1)))).ahead == 0);
  }
  SUBCASE("a load in an if inside the loop, and loads past the per-thread budget") {
    auto k = tilejit::kernel("guarded", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> n) {
      using namespace tilejit::dsl;
      auto acc = for_range(0, n, 64, zeros<f32>({64}), [&](Scalar<i32> i, Value<f32, 1> a) {
        return if_else(i > 0, [&] { return a; }, [&] { return a + load(x, i + arange(0, 64), i + arange(0, 64) < n); });
      });
      store(out, arange(0, 64), acc);
    });
    CHECK(loads_of(after_prefetch(*k.trace(Config{}.num_warps(1)))).ahead == 0);
    // 4096 f32 over 32 threads: 512 bytes per thread, over the budget of 256.
    auto big = tilejit::kernel("big_block", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> out, dsl::Scalar<dsl::i32> n) {
      using namespace tilejit::dsl;
      auto acc = for_range(0, n, 4096, zeros<f32>({4096}), [&](Scalar<i32> i, Value<f32, 1> a) {
        return a + load(x, i + arange(0, 4096), i + arange(0, 4096) < n);
      });
      store(out, arange(0, 4096), acc);
    });
    CHECK(loads_of(after_prefetch(*big.trace(Config{}.num_warps(1)))).ahead == 0);
    CHECK(loads_of(after_prefetch(*big.trace(Config{}.num_warps(2)))).ahead == 2);  // 256 bytes per thread
  }
}
