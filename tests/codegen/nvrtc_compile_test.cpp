// Compiles every registered test kernel with NVRTC for sm_90a and checks ptxas's resource report.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../samples/sample_kernels.h"
#include "emit_kernels.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/error.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/runtime/compiler.h"
#include "tilejit/runtime/nvrtc.h"
#include "tilejit/tma_rules.h"
#include <tilejit/tilejit.h>

using tilejit::CompiledBinary;

namespace {
std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Line `n` (1-based) of `text`.
std::string nth_line(const std::string& text, int n) {
  size_t start = 0;
  for (int i = 1; i < n && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return {};
  return text.substr(start, text.find('\n', start) - start);
}
}  // namespace
using tilejit::compile_cuda;
using tilejit::testing::emit_cases;

TEST_CASE("every codegen test kernel compiles for sm_90a without local-memory spills") {
  REQUIRE(emit_cases().size() >= 40);
  int compiled = 0;
  for (const auto& c : emit_cases()) {
    INFO("kernel: " << c.name);
    const auto g = c.trace();
    const auto k = tilejit::codegen::generate(*g, c.options);
    CompiledBinary bin;
    try {
      bin = compile_cuda(k, c.name);
    } catch (const tilejit::CompileError& e) {
      FAIL_CHECK("NVRTC rejected " << c.name << " (source: " << e.source_path() << "):\n" << e.log());
      continue;
    }
    char line[256];
    std::snprintf(line, sizeof line, "%-22s %3d registers, spills %d/%d bytes, %5d bytes dynamic smem, %6.1f ms",
                  c.name.c_str(), bin.registers, bin.spill_stores, bin.spill_loads, k.plan.shared_bytes, bin.compile_ms);
    MESSAGE(line);
    CHECK(bin.arch == "sm_90a");
    CHECK_FALSE(bin.cubin.empty());
    CHECK_FALSE(bin.ptx.empty());
    CHECK(bin.ptx_or_empty.empty());
    CHECK(bin.registers > 0);
    CHECK(bin.registers * k.plan.threads <= 65536);  // one program fits in the register file
    CHECK(bin.spill_stores == 0);
    CHECK(bin.spill_loads == 0);
    // A checked kernel's failure path (printf, trap) is a call, which ptxas does not let a wgmma pipeline cross.
    if (!c.options.debug_checks) CHECK_FALSE(bin.wgmma_serialized);
    CHECK(bin.shared_static == 0);  // all shared memory is dynamic, sized by the launch plan
    CHECK(k.plan.shared_bytes <= tilejit::tma::kMaxSharedBytes);
    ++compiled;
  }
  CHECK(compiled == static_cast<int>(emit_cases().size()));
}

TEST_CASE("a program NVRTC rejects throws CompileError with the log and the dumped source") {
  const auto* c = tilejit::testing::find_emit_case("copy_f32");
  REQUIRE(c != nullptr);
  auto k = tilejit::codegen::generate(*c->trace(), c->options);
  k.source += "\nthis is not C++;\n";
  const auto dir = std::filesystem::temp_directory_path() / "tilejit-codegen-test-failures";
  tilejit::CompileOptions opts;
  opts.dump_dir = dir.string();
  try {
    compile_cuda(k, "copy_f32", opts);
    FAIL("compile_cuda accepted a broken program");
  } catch (const tilejit::CompileError& e) {
    CHECK(std::string(e.what()).find("copy_f32") != std::string::npos);
    CHECK(e.log().find("error") != std::string::npos);
    REQUIRE(std::filesystem::exists(e.source_path()));
    CHECK(std::filesystem::path(e.source_path()).parent_path() == dir);
    // The dumped file is what NVRTC compiled: the prelude sits in the header beside it, and the
    // line the log names is the broken line of the file.
    const std::string text = read_text(e.source_path());
    const std::string prelude = read_text(dir / tilejit::kPreludeHeader);
    CHECK(prelude == k.source.substr(k.prelude_begin, k.prelude_end - k.prelude_begin));
    const std::string include = std::string("#include \"") + tilejit::kPreludeHeader + "\"\n";
    CHECK(text == k.source.substr(0, k.prelude_begin) + include + k.source.substr(k.prelude_end));
    const auto at = e.log().find(".cu(");
    REQUIRE(at != std::string::npos);
    const int line = std::stoi(e.log().substr(at + 4));
    CHECK(nth_line(text, line).find("this is not C++") != std::string::npos);
    std::filesystem::remove(e.source_path());
  }
}

TEST_CASE("the prelude is precompiled once per process and changes nothing in the binary") {
  // Two kernels compiled after one another: the second uses the precompiled prelude (the first
  // may, too, when another test created it), and its cubin is the one compiled without it.
  const auto* a = tilejit::testing::find_emit_case("copy_f32");
  const auto* b = tilejit::testing::find_emit_case("jagged_rows");
  REQUIRE(a != nullptr);
  REQUIRE(b != nullptr);
  const auto ka = tilejit::codegen::generate(*a->trace(), a->options);
  const auto kb = tilejit::codegen::generate(*b->trace(), b->options);
  REQUIRE(ka.prelude_end > ka.prelude_begin);
  CHECK(ka.source.substr(ka.prelude_begin, ka.prelude_end - ka.prelude_begin) ==
        kb.source.substr(kb.prelude_begin, kb.prelude_end - kb.prelude_begin));
  const CompiledBinary first = compile_cuda(ka, "copy_f32");
  CHECK(first.pch != CompiledBinary::Pch::none);
  const CompiledBinary with = compile_cuda(kb, "jagged_rows");
  CHECK(with.pch == CompiledBinary::Pch::used);
  tilejit::CompileOptions plain;
  plain.precompiled_prelude = false;
  const CompiledBinary without = compile_cuda(kb, "jagged_rows", plain);
  CHECK(without.pch == CompiledBinary::Pch::none);
  CHECK(with.cubin == without.cubin);
  CHECK(with.registers == without.registers);
  // A kernel without a recorded prelude range compiles as one file.
  auto whole = kb;
  whole.prelude_begin = whole.prelude_end = 0;
  CHECK(compile_cuda(whole, "jagged_rows", plain).cubin == without.cubin);
}

TEST_CASE("a kernel compiled again gets ptxas's report again (NVRTC's own cache is off)") {
  // A hit in NVRTC's cache (12.9 and later, shared between processes) returns the binary without the report:
  // no registers and no spills, so no spill warning and no retry with a leaner producer.
  const auto [major, minor] = tilejit::nvrtc_version();
  const auto options = tilejit::nvrtc_invocation(tilejit::CompileOptions{}).options;
  const bool no_cache = std::find(options.begin(), options.end(), "--no-cache") != options.end();
  CHECK(no_cache == (major > 12 || (major == 12 && minor >= 9)));
  const auto* c = tilejit::testing::find_emit_case("gemm_bf16");
  REQUIRE(c != nullptr);
  const auto k = tilejit::codegen::generate(*c->trace(), c->options);
  for (int round = 0; round < 2; ++round) {
    const CompiledBinary bin = compile_cuda(k, "gemm_bf16");
    CAPTURE(round);
    CHECK(bin.registers > 0);
    CHECK(bin.spill_stores == 0);
    CHECK(bin.log.find("Used ") != std::string::npos);
  }
}

TEST_CASE("a virtual architecture gives PTX instead of a cubin") {
  const auto* c = tilejit::testing::find_emit_case("copy_plus_one");
  REQUIRE(c != nullptr);
  const auto k = tilejit::codegen::generate(*c->trace(), c->options);
  tilejit::CompileOptions opts;
  opts.arch = "compute_90a";
  opts.line_info = true;
  const CompiledBinary bin = compile_cuda(k, "copy_plus_one", opts);
  CHECK(bin.cubin.empty());
  CHECK(bin.ptx_or_empty.find(".target sm_90a") != std::string::npos);
  CHECK(bin.ptx_or_empty.find(k.entry) != std::string::npos);
  CHECK(bin.ptx_or_empty.find("cp.async.bulk.tensor.2d") != std::string::npos);
  CHECK(bin.registers == -1);  // ptxas did not run
}

TEST_CASE("ptxas resource lines are parsed") {
  CompiledBinary bin;
  tilejit::parse_ptxas_report(
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 8 bytes cumulative stack size\n",
      bin);
  CHECK(bin.registers == 40);
  CHECK(bin.spill_stores == 12);
  CHECK(bin.spill_loads == 16);
  CHECK(bin.shared_static == 1024);
  CHECK_FALSE(bin.wgmma_serialized);
  CompiledBinary none;
  tilejit::parse_ptxas_report("", none);
  CHECK(none.registers == -1);
  CHECK(none.shared_static == -1);
  CompiledBinary serialized;
  tilejit::parse_ptxas_report(
      "ptxas info    : (C7515) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
      "wgmma instructions defining accumulator registers of a wgmma between start and end of the pipeline stage in "
      "the function 'k'\n",
      serialized);
  CHECK(serialized.wgmma_serialized);
}

namespace {

/// C = A @ B through TMA tiles in a pipelined K loop; `AT` / `BT`: the operand is loaded transposed
/// ([K, M] / [N, K]) and used through .trans().
template <class In, class Acc, class Out, bool AT, bool BT>
auto mma_kernel() {
  using namespace tilejit::dsl;
  return tilejit::kernel("mma_combo", [](Tensor<In, 2> a, Tensor<In, 2> b, Tensor<Out, 2> c, Scalar<i32> K, Meta<"BM"> BM,
                                         Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, K, BK, zeros<Acc>({BM, BN}), [&](Scalar<i32> k, Value<Acc, 2> acc) {
      auto ta = [&] {
        if constexpr (AT) return descriptor_load(a, {k, m}, {BK, BM}).trans();
        else return descriptor_load(a, {m, k}, {BM, BK});
      }();
      auto tb = [&] {
        if constexpr (BT) return descriptor_load(b, {n, k}, {BN, BK}).trans();
        else return descriptor_load(b, {k, n}, {BK, BN});
      }();
      return dot(ta, tb, acc);
    });
    descriptor_store(c, {m, n}, acc.template to<Out>());
  });
}

struct ComboResult {
  int compiled = 0, refused = 0;
};

/// `bm`: the tiles' M (below 64: one m64 instruction whose rows past M are padding, at 2 and 4 stages).
template <class In, class Acc, class Out, bool AT, bool BT>
void compile_combos(const char* what, ComboResult& r, int64_t bm = 128) {
  const auto k = mma_kernel<In, Acc, Out, AT, BT>();
  const int64_t bk = 128 / tilejit::ir::size_of(In::code);  // 128-byte rows: the 128B swizzle
  for (int warps : {4, 8})
    for (int stages : {1, 2, 3, 4}) {
      if (bm < 64 && stages % 2 != 0) continue;
      // The benchmark tiles: 128 x 128 on one warpgroup, 128 x 256 on two.
      const tilejit::Config c({{"BM", bm}, {"BN", warps == 4 ? 128 : 256}, {"BK", bk}}, warps, stages);
      INFO(what << " " << c.str());
      tilejit::codegen::GeneratedKernel gen;
      try {
        gen = tilejit::codegen::generate(*k.trace(c));
      } catch (const tilejit::UserError& e) {
        // Only the shared-memory budget may refuse a configuration (4 stages of 128 x 256 tiles).
        CHECK(std::string(e.what()).find("shared memory") != std::string::npos);
        ++r.refused;
        continue;
      }
      // The dot is on wgmma; M/N-major tf32 / 8-bit tiles are copied K-major, which a note says.
      const size_t copied = tilejit::ir::size_of(In::code) == 2 ? 0 : (AT ? 1 : 0) + (BT ? 0 : 1);
      CHECK(gen.notes.size() == copied);
      for (const auto& n : gen.notes) CHECK(n.text.find("the threads copy it K-major") != std::string::npos);
      const CompiledBinary bin = compile_cuda(gen, "mma_combo");
      char line[200];
      std::snprintf(line, sizeof line, "%-8s %-40s %3d registers, spills %d/%d, %6d bytes smem, %6.1f ms", what, c.str().c_str(),
                    bin.registers, bin.spill_stores, bin.spill_loads, gen.plan.shared_bytes, bin.compile_ms);
      MESSAGE(line);
      CHECK(bin.spill_stores == 0);
      CHECK(bin.spill_loads == 0);
      CHECK_FALSE(bin.wgmma_serialized);
      CHECK(bin.registers * gen.plan.threads <= 65536);
      CHECK(bin.log.find("wgmma.mma_async") == std::string::npos);  // no other ptxas remark about wgmma
      ++r.compiled;
    }
}

}  // namespace

TEST_CASE("every wgmma type x transpose x num_warps x num_stages compiles without spills or serialized wgmma") {
  using namespace tilejit::dsl;
  ComboResult r;
  compile_combos<bf16, f32, bf16, false, false>("bf16 nn", r);
  compile_combos<bf16, f32, bf16, false, true>("bf16 nt", r);
  compile_combos<bf16, f32, bf16, true, false>("bf16 tn", r);
  compile_combos<f16, f32, f16, false, false>("f16 nn", r);
  compile_combos<f16, f32, f16, true, true>("f16 tt", r);
  compile_combos<f16, f16, f16, false, false>("f16 acc nn", r);
  compile_combos<f16, f16, f16, true, true>("f16 acc tt", r);
  compile_combos<f8e4m3, f32, bf16, false, true>("e4m3 nt", r);
  compile_combos<f8e4m3, f16, bf16, false, true>("e4m3 acc f16", r);
  compile_combos<f8e5m2, f32, bf16, false, true>("e5m2 nt", r);
  compile_combos<f32, f32, f32, false, true>("tf32 nt", r);
  compile_combos<f32, f32, f32, false, false>("tf32 nn", r);  // b copied K-major by the threads
  compile_combos<f32, f32, f32, true, true>("tf32 tt", r);    // a copied K-major
  compile_combos<f8e4m3, f32, bf16, false, false>("e4m3 nn", r);
  compile_combos<i8, i32, i32, true, false>("i8 tn", r);
  compile_combos<i8, i32, i32, false, true>("i8 nt", r);
  compile_combos<u8, i32, i32, false, true>("u8 nt", r);
  MESSAGE(r.compiled << " configurations compiled, " << r.refused << " refused for shared memory");
  CHECK(r.compiled >= 88);
}

TEST_CASE("dots with M below 64 compile on wgmma without spills or serialized wgmma") {
  // The padding rows of the accumulator are written to a sink after the staged tile: behind a per-thread branch
  // instead, ptxas serialized the wgmma of the 16-row bf16 tiles (C7514).
  using namespace tilejit::dsl;
  ComboResult r;
  for (int64_t bm : {16, 32}) {
    compile_combos<bf16, f32, bf16, false, false>("bf16 nn", r, bm);
    compile_combos<f16, f32, f16, false, true>("f16 nt", r, bm);
    compile_combos<f8e4m3, f32, bf16, false, true>("e4m3 nt", r, bm);
    compile_combos<f32, f32, f32, false, true>("tf32 nt", r, bm);
    compile_combos<i8, i32, i32, false, true>("i8 nt", r, bm);
  }
  CHECK(r.compiled == 40);
}

TEST_CASE("attention and a fused MLP with 16- and 32-row blocks (operand a in registers, padded to m64) compile on wgmma without spills") {
  // Both products pad to one m64 instruction: S = Q K^T reads Q's tile 64 rows deep, P V reads P from registers whose
  // padding rows come from S's (the MLP's gelu(x w1) likewise).
  int compiled = 0;
  const auto check = [&](const auto& kernel, const tilejit::Config& c, int64_t bm, const char* name) {
    INFO(c.str());
    const auto gen = tilejit::codegen::generate(*kernel.trace(c));
    for (const auto& n : gen.notes) CHECK(n.text.find("CUDA cores") == std::string::npos);  // both dots on wgmma
    CHECK(gen.source.find("(M = " + std::to_string(bm) + ": rows " + std::to_string(bm) + "-63 of the instruction are padding)") !=
          std::string::npos);
    const CompiledBinary bin = compile_cuda(gen, name);
    MESSAGE(c.str() << ": " << bin.registers << " registers, " << bin.compile_ms << " ms");
    CHECK(bin.spill_stores == 0);
    CHECK(bin.spill_loads == 0);
    CHECK_FALSE(bin.wgmma_serialized);
    ++compiled;
  };
  const auto attention = tilejit::samples::attention_kernel();
  const auto mlp = tilejit::samples::fused_mlp_kernel();
  for (int64_t bm : {16, 32})
    for (const bool roles : {false, true}) {
      for (int64_t d : {64, 128})
        check(attention, tilejit::Config({{"BM", bm}, {"BN", 64}, {"D", d}}, 4, 3).warp_specialize(roles), bm, "attention_skinny");
      check(mlp, tilejit::Config({{"BM", bm}, {"BH", 64}, {"D", 128}}, 4, 2).warp_specialize(roles), bm, "fused_mlp_skinny");
    }
  CHECK(compiled == 12);
}

TEST_CASE("f16 accumulators, K-major copies and attention's two products compile outside a GEMM's K loop too") {
  using namespace tilejit::dsl;
  auto compile = [](const char* what, const auto& k, const tilejit::Config& c) {
    INFO(what);
    const auto gen = tilejit::codegen::generate(*k.trace(c));
    for (const auto& n : gen.notes) CHECK(n.text.find("CUDA cores") == std::string::npos);  // every dot on wgmma
    const CompiledBinary bin = compile_cuda(gen, "edge");
    CHECK(bin.spill_stores == 0);
    CHECK_FALSE(bin.wgmma_serialized);
    return gen.source;
  };
  const std::string single = compile("one f16 dot", tilejit::kernel("f16_single", [](Tensor<f16, 2> a, Tensor<f16, 2> b, Tensor<f16, 2> c) {
    descriptor_store(c, {0, 0}, dot(descriptor_load(a, {0, 0}, {64, 64}), descriptor_load(b, {0, 0}, {64, 64}), zeros<f16>({64, 64})));
  }), tilejit::Config{});
  CHECK(single.find("tj::PackedF16<32>") != std::string::npos);
  // The accumulator's first value is also stored: the product goes into a packed copy of it.
  compile("f16 accumulator read twice", tilejit::kernel("f16_twice", [](Tensor<f16, 2> a, Tensor<f16, 2> b, Tensor<f16, 2> c, Tensor<f16, 2> d) {
    auto z = full<f16>({64, 64}, 0.5);
    descriptor_store(c, {0, 0}, dot(descriptor_load(a, {0, 0}, {64, 64}), descriptor_load(b, {0, 0}, {64, 64}), z));
    descriptor_store(d, {0, 0}, z);
  }), tilejit::Config{});
  compile("f16 product as the next one's register a", tilejit::kernel("f16_two", [](Tensor<f16, 2> q, Tensor<f16, 2> k, Tensor<f16, 2> v, Tensor<f16, 2> o) {
    auto s = dot(descriptor_load(q, {0, 0}, {64, 64}), descriptor_load(k, {0, 0}, {64, 64}).trans(), zeros<f16>({64, 64}));
    descriptor_store(o, {0, 0}, dot(s, descriptor_load(v, {0, 0}, {64, 64}), zeros<f16>({64, 64})));
  }), tilejit::Config{});
  const std::string loop = compile("tf32 [K, N] b in a loop of one stage", tilejit::kernel("tf32_loop", [](Tensor<f32, 2> a, Tensor<f32, 2> b, Tensor<f32, 2> c) {
    auto acc = for_range(0, 256, 32, zeros<f32>({64, 64}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {0, k}, {64, 32}), descriptor_load(b, {k, 0}, {32, 64}), acc);
    });
    descriptor_store(c, {0, 0}, acc);
  }), tilejit::Config{}.num_stages(1));
  CHECK(loop.find("__syncthreads();  // no warpgroup still reads the K-major copy") != std::string::npos);
  // Attention's loop (two products, K and V in a ring; the samples' kernel) at the tiles of the GPU test.
  const auto attention = tilejit::samples::attention_kernel();
  for (auto [bm, bn, d, warps, stages] : {std::tuple{128, 64, 64, 8, 2}, {64, 64, 128, 4, 3}, {128, 128, 64, 8, 3}, {64, 128, 64, 4, 1}}) {
    const std::string src = compile("attention", attention, tilejit::Config{{"BM", bm}, {"BN", bn}, {"D", d}}.num_warps(warps).num_stages(stages));
    CHECK((src.find("software pipeline:") != std::string::npos) == (stages > 1));
  }
  // The same loop over [heads, S, D] tensors with {1, BM, D} tiles: the products stay on tensor cores.
  const std::string bhsd = compile("attention_bhsd", tilejit::samples::attention_bhsd_kernel(),
                                   tilejit::Config{{"BM", 128}, {"BN", 64}, {"D", 128}}.num_warps(8).num_stages(2));
  CHECK(bhsd.find("software pipeline:") != std::string::npos);
  CHECK(bhsd.find("wgmma.mma_async") != std::string::npos);
  CHECK(bhsd.find("tma_load_3d") != std::string::npos);
}

namespace {
/// A kernel reducing an [M, N] block (pointer loads) along `axis` with three combine functions: an
/// argmin of (value, index), a sum of the value as f32 and a logical or of a comparison.
template <class T>
auto combine_kernel(int64_t M, int64_t N, int axis) {
  return tilejit::kernel("combine_combo", [M, N, axis](tilejit::dsl::Tensor<T, 1> x, tilejit::dsl::Tensor<T, 1> y,
                                                         tilejit::dsl::Tensor<tilejit::dsl::i32, 1> yi,
                                                         tilejit::dsl::Tensor<tilejit::dsl::f32, 1> ys,
                                                         tilejit::dsl::Tensor<tilejit::dsl::i1, 1> yb) {
    using namespace tilejit::dsl;
    auto offs = arange(0, M * N).reshape({M, N});
    auto v = load(x, offs);
    auto idx = axis == 1 ? offs % static_cast<int32_t>(N) : offs / static_cast<int32_t>(N);
    auto [best, at] = reduce(std::tuple{v, idx}, axis, [](Scalar<T> a, Scalar<i32> ai, Scalar<T> b, Scalar<i32> bi) {
      auto take = b < a || (b == a && bi < ai);
      return std::tuple{where(take, b, a), where(take, bi, ai)};
    });
    auto total = reduce(v.template to<f32>(), axis, [](Scalar<f32> a, Scalar<f32> b) { return a + b; });
    auto any = reduce(v > 0, axis, [](Scalar<i1> a, Scalar<i1> b) { return a || b; });
    auto out = arange(0, axis == 1 ? M : N);
    store(y, out, best);
    store(yi, out, at);
    store(ys, out, total);
    store(yb, out, any);
  });
}

template <class K>
void compile_combine(const K& k, const char* what, int warps, int& compiled) {
  const tilejit::Config c({}, warps, 1);
  INFO(std::string(what) << " " << c.str());
  const tilejit::codegen::GeneratedKernel gen = tilejit::codegen::generate(*k.trace(c));
  const CompiledBinary bin = compile_cuda(gen, "combine_combo");
  char line[200];
  std::snprintf(line, sizeof line, "%-26s %2d warps %3d registers, spills %d/%d, %5d bytes smem, %6.1f ms", what, warps, bin.registers,
                bin.spill_stores, bin.spill_loads, gen.plan.shared_bytes, bin.compile_ms);
  MESSAGE(line);
  CHECK(bin.spill_stores == 0);
  CHECK(bin.spill_loads == 0);
  CHECK(gen.source.find("_combine = [&](") != std::string::npos);
  ++compiled;
}
}  // namespace

TEST_CASE("reductions with a combine function compile for padded layouts, several dtypes and 1 to 16 warps") {
  using namespace tilejit::dsl;
  int compiled = 0;
  compile_combine(combine_kernel<f32>(64, 128, 1), "f32 [64, 128] axis 1", 4, compiled);
  compile_combine(combine_kernel<f32>(64, 128, 0), "f32 [64, 128] axis 0", 16, compiled);
  compile_combine(combine_kernel<f32>(5, 33, 1), "f32 [5, 33] axis 1 (padded)", 4, compiled);
  compile_combine(combine_kernel<bf16>(3, 40, 1), "bf16 [3, 40] axis 1 (padded)", 8, compiled);
  compile_combine(combine_kernel<f16>(1, 512, 1), "f16 [1, 512] axis 1 (one row)", 2, compiled);
  compile_combine(combine_kernel<i8>(16, 64, 0), "i8 [16, 64] axis 0", 1, compiled);
  compile_combine(combine_kernel<i64>(7, 9, 0), "i64 [7, 9] axis 0 (padded)", 4, compiled);
  compile_combine(combine_kernel<f64>(6, 20, 1), "f64 [6, 20] axis 1", 8, compiled);
  CHECK(compiled == 8);
}

TEST_CASE("warp roles: ptxas gives each thread the registers the role split assumes, so setmaxnreg.inc never waits forever") {
  // setmaxnreg.inc blocks until the program's pool (registers at entry x threads) has what the consumers ask for:
  // the split must fit the pool ptxas made, at one and at two programs per SM.
  using namespace tilejit::dsl;
  auto gemm = tilejit::kernel("roles_gemm", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c, Meta<"BM"> BM, Meta<"BN"> BN,
                                               Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc.to<bf16>());
  });
  const auto check = [](const char* what, const auto& k, const tilejit::Config& c) {
    INFO(what << ": " << c.str());
    const auto g = k.trace(c);
    const tilejit::passes::Lowered l = tilejit::passes::lower(*g, {});
    REQUIRE(l.roles.on());
    const auto gen = tilejit::codegen::generate(*g);
    const CompiledBinary bin = compile_cuda(gen, "roles");
    CHECK(bin.spill_stores == 0);
    CHECK_FALSE(bin.wgmma_serialized);
    const int threads = l.roles.threads();
    CHECK(gen.plan.threads == threads);
    CHECK(bin.registers * threads * std::max(1, c.programs_per_sm()) <= 65536);
    if (l.roles.consumer_registers > 0) {
      CHECK(l.roles.consumer_registers > bin.registers);
      CHECK(l.roles.producer_registers < bin.registers);
      CHECK(l.roles.consumer_registers * l.roles.consumer_threads + l.roles.producer_registers * l.roles.producer_threads <=
            bin.registers * threads);
    }
  };
  const auto cfg = [](int64_t bm, int64_t bn, int warps, int stages, int per_sm) {
    tilejit::Config c({{"BM", bm}, {"BN", bn}, {"BK", 64}}, warps, stages);
    if (per_sm > 0) c.programs_per_sm(per_sm);
    return c.warp_specialize();
  };
  check("GEMM, two consumer warpgroups", gemm, cfg(128, 256, 8, 4, 0));
  check("GEMM, one consumer warpgroup, two programs per SM", gemm, cfg(128, 128, 4, 3, 2));
  check("GEMM, two consumer warpgroups, two programs per SM", gemm, cfg(64, 128, 8, 2, 2));
  auto attention = tilejit::samples::attention_kernel();
  for (const auto& [bm, warps] : {std::pair{int64_t{128}, 8}, std::pair{int64_t{64}, 4}})
    check("attention D 64, two programs per SM", attention,
          tilejit::Config{{"BM", bm}, {"BN", 64}, {"D", 64}}.num_warps(warps).num_stages(3).programs_per_sm(2).warp_specialize());
}
