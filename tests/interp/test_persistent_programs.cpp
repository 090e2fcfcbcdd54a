// passes::persistent_programs (Config::persistent): the kernel body in a loop over the launch grid's programs. The
// rewritten graph, run by fewer programs than the grid has (and by more), computes bit for bit what the traced one
// computes over the whole grid, in the launch order and in grouped orders; the parameters stay outside the loop.
#include <algorithm>
#include <string>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "interp_test_util.h"
#include "tilejit/passes/rewrites.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

namespace {

/// Runs `g` over `grid` and `h` (its persistent form) on `programs` programs; every output must have the same bits.
void same_as_persistent(const ir::Graph& g, const ir::Graph& h, dim3 grid, uint32_t programs, const std::vector<Buffer*>& inputs,
                        const std::vector<Buffer*>& outputs, const std::function<std::vector<KernelArg>(const std::vector<Buffer>&)>& args) {
  const dim3 launched(programs);
  same_results(g, h, grid, inputs, outputs, args, &launched);
}

/// Every node of the kernel body but the parameters, the loop's bounds and the grid's extents lies in one loop.
void check_shape(const ir::Graph& h) {
  int loops = 0;
  for (NodeId id : h.region(0).nodes) {
    const Op op = h.node(id).op;
    if (op == Op::For) ++loops;
    const bool allowed = op == Op::For || op == Op::ParamTensor || op == Op::ParamTensorArray || op == Op::ParamScalar ||
                         op == Op::TileGrid || op == Op::ProgramId || op == Op::NumPrograms || op == Op::Mul;
    CHECK_MESSAGE(allowed, "kernel body holds " << ir::name_of(op));
  }
  CHECK(loops == 1);
}

/// Writes, for every program of a 3-D grid, what it sees of the grid into its own element.
auto grid_probe_kernel() {
  return tilejit::kernel("grid_probe", [](dsl::Tensor<dsl::i32, 1> out) {
    using namespace tilejit::dsl;
    auto x = program_id(0), y = program_id(1), z = program_id(2);
    auto nx = num_programs(0), ny = num_programs(1), nz = num_programs(2);
    auto me = (z * ny + y) * nx + x;
    auto seen = x + y * 100 + z * 10000 + nx * 1000000 + ny * 20000000 + nz * 300000000;
    store(out, me + arange(0, 1), seen + zeros<i32>({1}), me + arange(0, 1) < nx * ny * nz);
  });
}

}  // namespace

TEST_CASE("persistent_programs: the graph is unchanged unless the configuration asks for it") {
  auto k = grid_probe_kernel();
  const auto g = k.trace(Config{});
  const ir::Graph h = tilejit::passes::persistent_programs(*g);
  CHECK(h.size() == g->size());
}

TEST_CASE("persistent_programs: each grid program runs once, seeing its own program id and the grid's extents") {
  auto k = grid_probe_kernel();
  const dim3 grid(5, 3, 2);
  for (int group : {0, 1, 2, 4, 7}) {
    const auto g = k.trace(Config{}.persistent().tile_group(group));
    const ir::Graph h = tilejit::passes::persistent_programs(*g);
    check_shape(h);
    for (uint32_t programs : {1u, 4u, 7u, 30u, 31u}) {
      SUBCASE(("tile_group " + std::to_string(group) + ", " + std::to_string(programs) + " programs").c_str()) {
        Buffer out(DType::i32, 30);
        for (int64_t i = 0; i < 30; ++i) out.seti(i, -1);
        same_as_persistent(*g, h, grid, programs, {}, {&out}, [](const std::vector<Buffer>& b) {
          return std::vector<KernelArg>{tensor_arg(b[0].arg1())};
        });
        // And the traced kernel wrote every element (each program its own).
        std::vector<Buffer> copy;
        copy.emplace_back(DType::i32, 30);
        tilejit::interp::run(*g, grid, std::vector<KernelArg>{tensor_arg(copy[0].arg1())});
        for (int64_t i = 0; i < 30; ++i) CHECK(copy[0].geti(i) % 1000000 == i % 5 + (i / 5) % 3 * 100 + i / 15 * 10000);
      }
    }
  }
}

TEST_CASE("persistent_programs: the tutorial GEMM with a pipelined K loop, fewer programs than tiles, every order") {
  auto k = tilejit::kernel("gemm_tutorial", [](dsl::Tensor<dsl::bf16, 2> a, dsl::Tensor<dsl::bf16, 2> b, dsl::Tensor<dsl::f32, 2> c,
                                               dsl::Meta<"BM"> BM, dsl::Meta<"BN"> BN, dsl::Meta<"BK"> BK) {
    using namespace tilejit::dsl;
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, kk}, {BM, BK}), descriptor_load(b, {kk, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  const int64_t M = 200, N = 112, K = 80;  // 4 x 4 tiles of 64 x 32, the last row and column partial; 3 K steps of 32
  Buffer A(DType::bf16, M * K), B(DType::bf16, K * N), C(DType::f32, M * N);
  fill_random(A, 1);
  fill_random(B, 2);
  const dim3 grid(4, 4);
  for (int group : {0, 3}) {
    const auto g = k.trace(Config{{"BM", 64}, {"BN", 32}, {"BK", 32}}.persistent().tile_group(group));
    const ir::Graph h = tilejit::passes::persistent_programs(*g);
    check_shape(h);
    for (uint32_t programs : {1u, 3u, 16u, 20u}) {
      SUBCASE(("tile_group " + std::to_string(group) + ", " + std::to_string(programs) + " programs").c_str()) {
        same_as_persistent(*g, h, grid, programs, {&A, &B}, {&C}, [&](const std::vector<Buffer>& b) {
          KernelArg meta;
          meta.kind = KernelArg::Config;
          return std::vector<KernelArg>{tensor_arg(b[0].arg({M, K})), tensor_arg(b[1].arg({K, N})), tensor_arg(b[2].arg({M, N})), meta,
                                        meta, meta};
        });
      }
    }
  }
}
