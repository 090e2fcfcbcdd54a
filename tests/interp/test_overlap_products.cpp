// passes::overlap_products: which loops issue their last product one iteration later, the shape of the rewritten
// loop, and that the rewritten program computes exactly what the traced one does (both run by the interpreter on
// the same inputs: one block, several, a partial last block, causal loops that run zero or one time).
#include <optional>
#include <string>
#include <vector>

#include "../../samples/sample_kernels.h"
#include "interp_test_util.h"
#include "tilejit/passes/lowering.h"

using namespace itest;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

namespace {

/// The graph after the overlap_products step of the lowering.
ir::Graph after_overlap(const ir::Graph& g) {
  std::optional<ir::Graph> out;
  tilejit::passes::lower(g, tilejit::codegen::Options{}, [&](std::string_view step, const ir::Graph& after) {
    if (step == "overlap_products") out = after;
  });
  REQUIRE(out.has_value());
  return *out;
}

int reachable_dots(const ir::Graph& g) {
  const auto info = tilejit::passes::analyze(g);
  int n = 0;
  for (size_t i = 0; i < g.size(); ++i) n += info.position[i] >= 0 && g.node(static_cast<NodeId>(i)).op == Op::Dot;
  return n;
}

/// The reachable TMA loads marked with the ring position they read (the first block's, the last block's).
int ring_position_loads(const ir::Graph& g) {
  const auto info = tilejit::passes::analyze(g);
  int n = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const auto id = static_cast<NodeId>(i);
    if (info.position[i] >= 0 && g.node(id).op == Op::DescLoad) n += ir::attrs<ir::TmaAttrs>(g, id).ring != ir::RingPosition::none;
  }
  return n;
}

KernelArg meta() {
  KernelArg a;
  a.kind = KernelArg::Config;  // the traced graph holds the value; the argument only takes its place
  return a;
}

Config attention_config(int64_t bm, int64_t bn, int64_t d) {
  return Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(4).num_stages(2).overlap_products();
}

}  // namespace

TEST_CASE("overlap_products: attention's P V moves into the next iteration; the results are the same bits") {
  auto k = tilejit::samples::attention_kernel();
  const auto g = k.trace(attention_config(64, 32, 32));
  const ir::Graph h = after_overlap(*g);
  // (m, l, acc), then P and the rescale factor of the block whose P V is pending, then that block's index.
  CHECK(carried_per_loop(*g) == std::vector<size_t>{3});
  CHECK(carried_per_loop(h) == std::vector<size_t>{6});
  CHECK(reachable_dots(h) == 4);  // the first block's S and the last block's P V outside the loop
  CHECK(ring_position_loads(*g) == 0);
  CHECK(ring_position_loads(h) == 2);  // their K and V tiles, read from the loop's ring
  const int64_t heads = 2, d = 32;
  for (int64_t seq : {20, 32, 64, 100, 160}) {
    SUBCASE(("seq = " + std::to_string(seq)).c_str()) {
      Buffer q(DType::bf16, heads * seq * d), kk(DType::bf16, heads * seq * d), v(DType::bf16, heads * seq * d),
          o(DType::bf16, heads * seq * d);
      fill_random(q, 1);
      fill_random(kk, 2);
      fill_random(v, 3);
      same_results(*g, h, dim3(static_cast<uint32_t>((seq + 63) / 64), static_cast<uint32_t>(heads)), {&q, &kk, &v}, {&o},
                   [&](const std::vector<Buffer>& b) {
                     std::vector<KernelArg> a;
                     for (int i = 0; i < 4; ++i) a.push_back(tensor_arg(b[static_cast<size_t>(i)].arg({heads * seq, d})));
                     a.push_back(scalar_arg(DType::i32, static_cast<double>(seq)));
                     a.push_back(scalar_arg(DType::f32, 0.125));
                     for (int i = 0; i < 3; ++i) a.push_back(meta());
                     return a;
                   });
    }
  }
}

TEST_CASE("overlap_products: sample 12's two loops (unmasked, then masked) each rotate; empty and one-block loops") {
  for (int causal : {0, 1}) {
    auto k = tilejit::samples::attention_forward_kernel();
    const auto g = k.trace(attention_config(32, 32, 32).set("CAUSAL", causal));
    const ir::Graph h = after_overlap(*g);
    CHECK(carried_per_loop(h) == std::vector<size_t>{6, 6});
    const int64_t heads = 2, d = 32;
    // Causal with BM = BN: the first query block has no unmasked block (an empty first loop) and one masked one.
    for (int64_t seq : {20, 32, 70, 128}) {
      SUBCASE(("causal = " + std::to_string(causal) + ", seq = " + std::to_string(seq)).c_str()) {
        Buffer q(DType::bf16, heads * seq * d), kk(DType::bf16, heads * seq * d), v(DType::bf16, heads * seq * d),
            o(DType::bf16, heads * seq * d), lse(DType::f32, heads * seq);
        fill_random(q, 4);
        fill_random(kk, 5);
        fill_random(v, 6);
        same_results(*g, h, dim3(static_cast<uint32_t>((seq + 31) / 32), static_cast<uint32_t>(heads)), {&q, &kk, &v}, {&o, &lse},
                     [&](const std::vector<Buffer>& b) {
                       std::vector<KernelArg> a;
                       for (int i = 0; i < 4; ++i) a.push_back(tensor_arg(b[static_cast<size_t>(i)].arg({heads, seq, d})));
                       a.push_back(tensor_arg(b[4].arg({heads, seq})));
                       a.push_back(scalar_arg(DType::f32, 0.125));
                       for (int i = 0; i < 4; ++i) a.push_back(meta());
                       return a;
                     });
      }
    }
  }
}

TEST_CASE("overlap_products: what stays as written") {
  SUBCASE("overlap_products false; or not set, with blocks of fewer than 128 keys or a programs_per_sm target") {
    auto k = tilejit::samples::attention_kernel();
    for (const Config& c : {Config{{"BM", 64}, {"BN", 64}, {"D", 32}}, attention_config(64, 128, 32).overlap_products(false),
                            Config{{"BM", 64}, {"BN", 128}, {"D", 32}}.programs_per_sm(2)})
      CHECK(carried_per_loop(after_overlap(*k.trace(c))) == std::vector<size_t>{3});
    // Not set, 128 keys per block: tilejit rotates the loop by itself (tilejit::passes::kMinOverlapWidth).
    CHECK(carried_per_loop(after_overlap(*k.trace(Config{{"BM", 64}, {"BN", 128}, {"D", 32}}))) == std::vector<size_t>{6});
  }
  SUBCASE("num_stages 1: nothing is pipelined") {
    auto k = tilejit::samples::attention_kernel();
    const auto g = k.trace(attention_config(64, 32, 32).num_stages(1));
    CHECK(carried_per_loop(after_overlap(*g)) == std::vector<size_t>{3});
  }
  SUBCASE("two products whose operands are tiles (SwiGLU): nothing to overlap with") {
    auto k = tilejit::samples::swiglu_two_products_kernel();
    const auto g = k.trace(Config{{"BM", 64}, {"BN", 64}, {"BK", 64}}.overlap_products());
    CHECK(carried_per_loop(after_overlap(*g)) == std::vector<size_t>{2});
  }
  SUBCASE("the last product's tile is read by another product too (attention backward's dQ: K)") {
    auto k = tilejit::samples::attention_backward_dq_kernel();
    const auto g = k.trace(attention_config(64, 64, 64).set("CAUSAL", 0));
    const ir::Graph h = after_overlap(*g);
    CHECK(reachable_dots(h) == reachable_dots(*g));
  }
  SUBCASE("a GEMM's K loop: one product") {
    auto k = tilejit::samples::matmul_bias_gelu_kernel();
    const auto g = k.trace(Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.overlap_products());
    CHECK(reachable_dots(after_overlap(*g)) == 1);
  }
}
