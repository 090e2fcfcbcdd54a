// Fused multiply-add: the front end's fma() against std::fma, and the contraction of products and sums
// (passes::contract_fma, Config::fp_contract): which sums it takes, and that the results are those of one
// rounding with it and of two without.
#include <cmath>
#include <cstring>

#include "interp_test_util.h"
#include "tilejit/passes/rewrites.h"

using namespace itest;
namespace dsl = tilejit::dsl;
using tilejit::Config;
using tilejit::dim3;
using tilejit::KernelArg;

namespace {

/// How many nodes of op `op` graph `g` holds.
int count_ops(const ir::Graph& g, Op op) {
  int c = 0;
  for (size_t k = 0; k < g.size(); ++k) c += g.node(static_cast<NodeId>(k)).op == op;
  return c;
}

/// Operands whose product is not an f32: (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11 (a tie, to even),
/// so a * b - (1 + 2^-11) is 0 when rounded twice and 2^-24 when rounded once.
constexpr float kA = 1.0f + 0x1p-12f, kC = 1.0f + 0x1p-11f;

float f32_at(const Buffer& b, int64_t k) { return static_cast<float>(b.getf(k)); }

}  // namespace

TEST_CASE("fma(): one rounding, as std::fma, for f32, f64 and bf16, with literals and broadcasts") {
  auto k32 = tilejit::kernel("fma_f32", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::f32, 1> out) {
    using namespace tilejit::dsl;
    auto i = arange(0, 8);
    auto a = load(x, i), c = load(y, i);
    store(out, i, fma(a, a, -c));
    store(out, i + 8, fma(a, 2.0f, c));                   // a literal operand
    store(out, i + 16, fma(a, a, load(y, Scalar<i32>(0))));  // a scalar broadcast
  });
  Buffer x(DType::f32, 8), y(DType::f32, 8), out(DType::f32, 24);
  for (int i = 0; i < 8; ++i) {
    x.setf(i, kA + static_cast<float>(i) * 0x1p-10f);
    y.setf(i, kC + static_cast<float>(i) * 0x1p-9f);
  }
  tilejit::interp::run(*k32.trace(Config{}), dim3(1),
                       std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), tensor_arg(out.arg1())});
  for (int i = 0; i < 8; ++i) {
    const float a = f32_at(x, i), c = f32_at(y, i);
    CHECK(f32_at(out, i) == std::fmaf(a, a, -c));
    CHECK(f32_at(out, i + 8) == std::fmaf(a, 2.0f, c));
    CHECK(f32_at(out, i + 16) == std::fmaf(a, a, f32_at(y, 0)));
  }
  CHECK(f32_at(out, 0) == 0x1p-24f);  // the product's low bits kept: rounded twice this would be 0

  auto k64 = tilejit::kernel("fma_f64", [](dsl::Tensor<dsl::f64, 1> x, dsl::Tensor<dsl::f64, 1> out) {
    using namespace tilejit::dsl;
    auto a = load(x, arange(0, 4));
    store(out, arange(0, 4), fma(a, a, -1.0));
  });
  Buffer x64(DType::f64, 4), out64(DType::f64, 4);
  for (int i = 0; i < 4; ++i) x64.setf(i, 1.0 + 0x1p-30 * (i + 1));
  tilejit::interp::run(*k64.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(x64.arg1()), tensor_arg(out64.arg1())});
  for (int i = 0; i < 4; ++i) CHECK(out64.getf(i) == std::fma(x64.getf(i), x64.getf(i), -1.0));

  auto kbf = tilejit::kernel("fma_bf16", [](dsl::Tensor<dsl::bf16, 1> x, dsl::Tensor<dsl::bf16, 1> out) {
    using namespace tilejit::dsl;
    auto a = load(x, arange(0, 4));
    store(out, arange(0, 4), fma(a, a, a));
  });
  Buffer xb(DType::bf16, 4), outb(DType::bf16, 4);
  for (int i = 0; i < 4; ++i) xb.setf(i, 1.0 + 0.0078125 * (i + 1));  // 1 + k 2^-7: exact in bf16
  tilejit::interp::run(*kbf.trace(Config{}), dim3(1), std::vector<KernelArg>{tensor_arg(xb.arg1()), tensor_arg(outb.arg1())});
  for (int i = 0; i < 4; ++i) {
    const auto a = static_cast<float>(xb.getf(i));
    CHECK(outb.getf(i) == ref_round(DType::bf16, std::fmaf(a, a, a)));  // once in f32, then to bf16
  }
}

TEST_CASE("fp_contract: a * b + c and a * b - c become one fma where the product has no other use") {
  // The four forms, a product used twice (kept: contracting would not remove it), a bf16 product (kept: the IR
  // rounds bf16 after every op) and a product made before a loop and added in it (kept: it stays hoisted).
  auto k = tilejit::kernel("contract", [](dsl::Tensor<dsl::f32, 1> x, dsl::Tensor<dsl::f32, 1> y, dsl::Tensor<dsl::f32, 1> out,
                                          dsl::Tensor<dsl::bf16, 1> h) {
    using namespace tilejit::dsl;
    auto i = arange(0, 8);
    auto c = load(y, i);
    // Four loads of x, so that the four products are four nodes (the same pure node twice is one node).
    auto a0 = load(x, i), a1 = load(x, i), a2 = load(x, i), a3 = load(x, i), a = load(x, i);
    store(out, i, a0 * a0 + c);
    store(out, i + 8, c + a1 * a1);
    store(out, i + 16, a2 * a2 - c);
    store(out, i + 24, c - a3 * a3);
    auto twice = a * c;
    store(out, i + 32, twice + c);
    store(out, i + 40, twice);
    auto hb = load(h, arange(0, 4));
    store(h, arange(0, 4), hb * hb + hb);
    auto before = a * 3.0f;
    auto sum = for_range(0, 2, 1, zeros<f32>({8}), [&](Scalar<i32>, Value<f32, 1> s) { return s + before; });
    store(out, i + 48, sum);
  });
  const ir::Graph& on = *k.trace(Config{});
  const ir::Graph& off = *k.trace(Config{}.fp_contract(false));
  CHECK(count_ops(on, Op::Fma) == 4);
  CHECK(count_ops(off, Op::Fma) == 0);
  CHECK(count_ops(on, Op::Mul) == 3);  // twice, the bf16 one and the one before the loop
  CHECK(count_ops(off, Op::Mul) == 7);
  CHECK(Config{}.fp_contract(false).str().find("fp_contract=0") != std::string::npos);
  CHECK(Config{}.fp_contract(false).hash() != Config{}.hash());

  Buffer x(DType::f32, 8), y(DType::f32, 8), h(DType::bf16, 4);
  for (int i = 0; i < 8; ++i) {
    x.setf(i, kA + static_cast<float>(i) * 0x1p-10f);
    y.setf(i, kC + static_cast<float>(i) * 0x1p-9f);
  }
  for (int i = 0; i < 4; ++i) h.setf(i, 1.0 + 0.0078125 * (i + 1));
  for (const bool contract : {true, false}) {
    CAPTURE(contract);
    Buffer out(DType::f32, 56), hh(DType::bf16, 4);
    for (int i = 0; i < 4; ++i) hh.setf(i, h.getf(i));
    tilejit::interp::run(contract ? on : off, dim3(1),
                         std::vector<KernelArg>{tensor_arg(x.arg1()), tensor_arg(y.arg1()), tensor_arg(out.arg1()), tensor_arg(hh.arg1())});
    for (int i = 0; i < 8; ++i) {
      const float a = f32_at(x, i), c = f32_at(y, i), aa = a * a, ac = a * c;
      CHECK(f32_at(out, i) == (contract ? std::fmaf(a, a, c) : aa + c));
      CHECK(f32_at(out, i + 8) == (contract ? std::fmaf(a, a, c) : c + aa));
      CHECK(f32_at(out, i + 16) == (contract ? std::fmaf(a, a, -c) : aa - c));
      CHECK(f32_at(out, i + 24) == (contract ? std::fmaf(-a, a, c) : c - aa));
      CHECK(f32_at(out, i + 32) == ac + c);
      CHECK(f32_at(out, i + 48) == a * 3.0f + a * 3.0f);
    }
    CHECK((f32_at(out, 16) == 0x1p-24f) == contract);  // the cases differ where it matters
    for (int i = 0; i < 4; ++i) {
      const auto v = static_cast<float>(h.getf(i));
      CHECK(hh.getf(i) == ref_round(DType::bf16, static_cast<float>(ref_round(DType::bf16, v * v)) + v));
    }
  }
}

TEST_CASE("fp_contract: a row's maximum subtracted from scaled scores negates the row, not the block") {
  // The softmax of attention in base 2 as Triton's tutorial writes it: exp2(s * scale - m) with m a row's maximum.
  auto k = tilejit::kernel("scaled_softmax_numerator", [](dsl::Tensor<dsl::f32, 2> s, dsl::Tensor<dsl::f32, 2> out) {
    using namespace tilejit::dsl;
    auto i = arange(0, 4).expand_dims<1>() * 8 + arange(0, 8).expand_dims<0>();
    auto x = load(s, i);
    auto m = max(x, 1) * 0.5f;
    store(out, i, exp2(x * 0.5f - m.expand_dims<1>()));
  });
  const ir::Graph& g = *k.trace(Config{});
  CHECK(count_ops(g, Op::Fma) == 1);
  for (size_t id = 0; id < g.size(); ++id)
    if (g.node(static_cast<NodeId>(id)).op == Op::Neg) CHECK(g.node(static_cast<NodeId>(id)).shape.numel() == 4);
  CHECK(count_ops(g, Op::Neg) == 1);
  Buffer s(DType::f32, 32), out(DType::f32, 32);
  fill_random(s, 7);
  tilejit::interp::run(g, dim3(1), std::vector<KernelArg>{tensor_arg(s.arg({4, 8})), tensor_arg(out.arg({4, 8}))});
  for (int r = 0; r < 4; ++r) {
    float m = -INFINITY;
    for (int c = 0; c < 8; ++c) m = std::max(m, f32_at(s, r * 8 + c));
    m *= 0.5f;
    for (int c = 0; c < 8; ++c) {
      const float e = std::fmaf(f32_at(s, r * 8 + c), 0.5f, -m);
      CHECK(std::abs(f32_at(out, r * 8 + c) - std::exp2(e)) <= 4e-7f * std::exp2(e));
    }
  }
}

TEST_CASE("contract_fma on a hand-built graph: the product leaves the graph, the verifier accepts the result") {
  ir::Graph g;
  g.kernel_name = "hand";
  const ir::Shape s{16};
  const NodeId x = g.add(Op::ParamTensor, DType::f32, ir::Shape{}, {}, {0, 1});
  g.params.push_back(ir::Param{ir::Param::Tensor, DType::f32, 1, "x", x});
  const NodeId offs = g.add(Op::Arange, DType::i32, s, {}, {0});
  const NodeId a = g.add(Op::Load, DType::f32, s, {x, offs}, {0});
  const NodeId p = g.add(Op::Mul, DType::f32, s, {a, a});
  const NodeId d = g.add(Op::Sub, DType::f32, s, {a, p});  // a - a * a
  g.add(Op::Store, DType::f32, s, {x, offs, d}, {0});
  const ir::Graph h = tilejit::passes::contract_fma(g);
  REQUIRE_NOTHROW(ir::verify(h));
  CHECK(count_ops(h, Op::Mul) == 0);
  CHECK(count_ops(h, Op::Sub) == 0);
  CHECK(count_ops(h, Op::Fma) == 1);
  CHECK(count_ops(h, Op::Neg) == 1);  // fma(-a, a, a)
  CHECK(ir::print(h).find("fma") != std::string::npos);
}
