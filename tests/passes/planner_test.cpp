// Unit tests of the lowering passes: TMA planning, shared-memory allocation, register layout, kernel arguments.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <tilejit/tilejit.h>

#include "../../samples/sample_kernels.h"
#include "tilejit/codegen/codegen.h"
#include "tilejit/error.h"
#include "tilejit/passes/describe.h"
#include "tilejit/passes/lowering.h"
#include "tilejit/passes/rewrites.h"
#include "tilejit/passes/schedule_ops.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::codegen::ArgSlot;
using tilejit::ir::Op;
using tilejit::passes::DescKind;
using tilejit::passes::StorePlan;

namespace {

template <class K>
tilejit::passes::Lowered lower(const K& k, const Config& c = Config{}) {
  return tilejit::passes::lower(*k.trace(c), tilejit::codegen::Options{});
}

/// The TMA ops of the lowered graph, in program order.
std::vector<tilejit::ir::NodeId> tma_ops(const tilejit::passes::Lowered& l, Op op) {
  std::vector<std::pair<int, tilejit::ir::NodeId>> v;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (l.graph.node(static_cast<int>(i)).op == op && l.info.position[i] >= 0)
      v.push_back({l.info.position[i], static_cast<int>(i)});
  std::sort(v.begin(), v.end());
  std::vector<tilejit::ir::NodeId> ids;
  for (auto& [p, id] : v) ids.push_back(id);
  return ids;
}

int op_line = 0;  // set by kernels to the line of the op expected in an error

}  // namespace

TEST_CASE("descriptor placement: parameters host, tensor arrays array, views device, overrides respected") {
  auto k = tilejit::kernel("placement", [](Tensor<f32, 2> x, TensorArray<f32, 2> arr, Tensor<f32, 2> y, Tensor<f32, 2> z,
                                           Scalar<i32> n) {
    auto a = descriptor_load(x, {0, 0}, {32, 32});
    auto b = descriptor_load(arr[program_id(0)], {0, 0}, {32, 32});
    auto c = descriptor_load(x.rows(0, n), {0, 0}, {32, 32});
    auto d = descriptor_load(y.with_placement(Placement::device), {0, 0}, {32, 32});
    descriptor_store(z, {0, 0}, a + b + c + d);
  });
  const auto l = lower(k);
  const auto& ds = l.tma.descriptors;
  REQUIRE(ds.size() == 5);
  CHECK(ds[0].kind == DescKind::Host);
  CHECK(ds[0].param == 0);
  CHECK(ds[0].slot == 0);
  CHECK(ds[1].kind == DescKind::Array);
  CHECK(ds[1].param == 1);
  CHECK(ds[1].slot == 1);
  CHECK(ds[2].kind == DescKind::Device);
  CHECK(ds[2].view != tilejit::ir::kNoNode);
  CHECK(ds[2].build_at == ds[2].view);
  CHECK(ds[2].slot == 0);
  CHECK(ds[3].kind == DescKind::Device);
  CHECK(ds[3].param == 2);
  CHECK(ds[3].build_at == tilejit::ir::kNoNode);  // built at kernel start
  CHECK(ds[3].slot == 1);
  CHECK(ds[4].kind == DescKind::Host);
  CHECK(ds[4].param == 3);
  CHECK(ds[4].used_by_store);
  CHECK(l.tma.num_host == 2);
  CHECK(l.tma.num_array == 1);
  CHECK(l.tma.num_device == 2);

  // The graph records each decision in the op's placement attribute.
  const auto loads = tma_ops(l, Op::DescLoad);
  REQUIRE(loads.size() == 4);
  CHECK(tilejit::ir::attrs<tilejit::ir::TmaAttrs>(l.graph, loads[0]).placement == 1);
  CHECK(tilejit::ir::attrs<tilejit::ir::TmaAttrs>(l.graph, loads[1]).placement == 1);
  CHECK(tilejit::ir::attrs<tilejit::ir::TmaAttrs>(l.graph, loads[2]).placement == 2);
  CHECK(tilejit::ir::attrs<tilejit::ir::TmaAttrs>(l.graph, loads[3]).placement == 2);

  // Launch plan: host and array descriptors for the runtime, a workspace for the two built on the device.
  const auto& plan = l.args.plan;
  REQUIRE(plan.descriptors.size() == 3);
  CHECK(plan.descriptors[0].param == 0);
  CHECK(plan.descriptors[1].param == 1);
  CHECK(plan.descriptors[2].param == 3);
  CHECK(plan.descriptors[0].box[0] == 32);
  CHECK(plan.descriptors[0].box[1] == 32);
  CHECK(plan.device_descriptors == 2);
  CHECK(plan.workspace_bytes_per_program == 256);
  CHECK(plan.threads == 128);
  std::vector<ArgSlot::Kind> kinds;
  for (const auto& s : plan.slots) kinds.push_back(s.kind);
  // x: base (for the view), size 1, strides 0 and 1, d0; arr: d1; y: base, sizes, strides; z: d2; n; workspace.
  const std::vector<ArgSlot::Kind> want = {
      ArgSlot::TensorBase, ArgSlot::TensorSize, ArgSlot::TensorStride, ArgSlot::TensorStride, ArgSlot::HostDesc,
      ArgSlot::DescArray,  ArgSlot::TensorBase, ArgSlot::TensorSize,   ArgSlot::TensorSize,   ArgSlot::TensorStride,
      ArgSlot::TensorStride, ArgSlot::HostDesc, ArgSlot::Scalar,       ArgSlot::Workspace};
  CHECK(kinds == want);
  CHECK(plan.slots[4].size == 128);
  CHECK(plan.slots[4].align == 64);
  CHECK(plan.slots[4].index == 0);
  CHECK(plan.slots[5].index == 1);
  CHECK(plan.slots[5].size == 8);
  CHECK(plan.slots[12].size == 4);
  CHECK(plan.slots[12].param == 4);
}

TEST_CASE("identical descriptors are shared, any difference makes a new one") {
  auto k = tilejit::kernel("dedup", [](Tensor<f32, 2> x, Tensor<f32, 1> y) {
    auto a = descriptor_load(x, {0, 0}, {32, 32});
    auto b = descriptor_load(x, {32, 0}, {32, 32});                  // same as a
    auto c = descriptor_load(x, {0, 0}, {64, 32}, {2, 1});            // element strides
    auto d = descriptor_load(x, {0, 0}, {32, 32}, {}, Fill::nan);     // fill
    auto e = descriptor_load(x.merge({2}), {0}, {64});                // merged view
    descriptor_store(x, {0, 0}, a + b + c + d);                       // same as a (fill zero, strides 1)
    descriptor_store(y, {0}, e);
    prefetch_descriptor(x, {32, 32});                                 // same as a
  });
  const auto l = lower(k);
  const auto loads = tma_ops(l, Op::DescLoad);
  const auto stores = tma_ops(l, Op::DescStore);
  const auto prefetches = tma_ops(l, Op::DescPrefetch);
  REQUIRE(loads.size() == 5);
  REQUIRE(stores.size() == 2);
  REQUIRE(prefetches.size() == 1);
  const auto& of = l.tma.of;
  CHECK(of.at(loads[0]) == of.at(loads[1]));
  CHECK(of.at(loads[0]) != of.at(loads[2]));
  CHECK(of.at(loads[0]) != of.at(loads[3]));
  CHECK(of.at(loads[2]) != of.at(loads[3]));
  CHECK(of.at(stores[0]) == of.at(loads[0]));
  CHECK(of.at(prefetches[0]) == of.at(loads[0]));
  CHECK(l.tma.descriptors.size() == 5);
  const auto& merged = l.tma.descriptors[static_cast<size_t>(of.at(loads[4]))];
  CHECK(merged.rank == 1);
  CHECK(merged.merge_groups == std::vector<int>{2});
  CHECK(l.tma.descriptors[static_cast<size_t>(of.at(loads[0]))].uses.size() == 4);
  CHECK(l.tma.descriptors[static_cast<size_t>(of.at(loads[3]))].fill == 1);
  CHECK(l.tma.descriptors[static_cast<size_t>(of.at(loads[2]))].estride[0] == 2);
}

TEST_CASE("shared memory: 128-byte aligned tiles, 8-byte aligned barriers, one scratch arena") {
  auto k = tilejit::kernel("smem", [](Tensor<bf16, 2> x, Tensor<f32, 1> y, Tensor<f32, 2> z) {
    auto a = descriptor_load(x, {0, 0}, {8, 24});      // 384 bytes
    auto b = descriptor_load(z, {0, 0}, {16, 64});     // 4096 bytes
    descriptor_store(y, {0}, sum(b * b, 1));           // staged: 64 bytes; the row sum needs lanes only
    descriptor_store(x, {8, 0}, a);                    // from the load's buffer
  });
  const auto l = lower(k);
  const auto& sm = l.smem;
  REQUIRE(sm.buffers.size() == 3);
  CHECK(sm.buffers[0].bytes == 384);
  CHECK(sm.buffers[0].offset == 0);
  CHECK(sm.buffers[1].bytes == 4096);
  CHECK(sm.buffers[1].offset == 384);
  CHECK(sm.buffers[2].bytes == 64);
  CHECK(sm.buffers[2].offset == 4480);
  for (const auto& b : sm.buffers) CHECK(b.offset % 128 == 0);
  CHECK(sm.scratch_bytes == 0);
  CHECK(sm.num_barriers == 2);
  CHECK(sm.barrier_offset == 4544);
  CHECK(sm.barrier_offset % 8 == 0);
  CHECK(sm.total_bytes == 4560);
  CHECK(l.args.plan.shared_bytes == 4560);
  CHECK(sm.desc_stage_offset == -1);

  const auto stores = tma_ops(l, Op::DescStore);
  REQUIRE(stores.size() == 2);
  CHECK(sm.stores.at(stores[0]).mode == StorePlan::Staged);
  CHECK(sm.stores.at(stores[1]).mode == StorePlan::FromLoad);
  const auto loads = tma_ops(l, Op::DescLoad);
  CHECK(sm.loads.at(loads[0]).read_by_tma_store);
  CHECK_FALSE(sm.loads.at(loads[0]).all_threads_wait);  // only the issuing thread needs the tile
  CHECK(sm.loads.at(loads[1]).all_threads_wait);
  CHECK(sm.loads.at(loads[1]).registers);
}

TEST_CASE("stores computed from a loaded tile reuse its buffer; other readers prevent it") {
  auto k = tilejit::kernel("in_place", [](Tensor<f32, 2> x, Tensor<f32, 2> y, Tensor<f32, 1> z) {
    auto a = descriptor_load(x, {0, 0}, {32, 32});
    descriptor_store(y, {0, 0}, a * 2.0f);             // in place in a's buffer
    auto b = descriptor_load(x, {32, 0}, {32, 32});
    descriptor_store(z, {0}, sum(b, 1));                // the reduction reads b's registers
    descriptor_store(y, {32, 0}, b + 1.0f);             // so this one is in place too
    auto d = descriptor_load(x, {96, 0}, {32, 32});
    descriptor_store(y, {96, 0}, d.permute({1, 0}) + 1.0f);  // the permute reads d's buffer: staged
    auto c = descriptor_load(x, {64, 0}, {32, 32});
    descriptor_store(y, {64, 0}, c.to<i32>().to<f32>());  // element size kept: in place
  });
  const auto l = lower(k);
  const auto stores = tma_ops(l, Op::DescStore);
  REQUIRE(stores.size() == 5);
  CHECK(l.smem.stores.at(stores[0]).mode == StorePlan::InPlace);
  CHECK(l.smem.stores.at(stores[1]).mode == StorePlan::Staged);
  CHECK(l.smem.stores.at(stores[2]).mode == StorePlan::InPlace);
  CHECK(l.smem.stores.at(stores[3]).mode == StorePlan::Staged);
  CHECK(l.smem.stores.at(stores[4]).mode == StorePlan::InPlace);
  CHECK(l.smem.buffers.size() == 6);  // 4 loads + 2 staged stores
}

TEST_CASE("loads in loops are repeated; device views built in loops are rebuilt") {
  auto k = tilejit::kernel("loops", [](Tensor<f32, 2> x, Tensor<i32, 1> offs, Tensor<f32, 2> y, Scalar<i32> n) {
    for_range(0, n, 1, [&](Scalar<i32> i) {
      auto v = x.rows(load(offs, i), load(offs, i + 1));
      auto w = x.rows(0, n);  // invariant: hoisted out of the loop
      descriptor_store(y, {i * 32, 0}, descriptor_load(v, {0, 0}, {32, 32}) + descriptor_load(w, {0, 0}, {32, 32}));
    });
  });
  const auto l = lower(k);
  REQUIRE(l.tma.descriptors.size() == 3);
  int rebuilt = 0, once = 0;
  for (const auto& d : l.tma.descriptors) {
    if (d.kind != DescKind::Device) continue;
    (d.rebuilt_in_loop ? rebuilt : once)++;
    CHECK(d.build_at != tilejit::ir::kNoNode);
  }
  CHECK(rebuilt == 1);
  CHECK(once == 1);
  CHECK(l.args.plan.workspace_bytes_per_program == 256);
  CHECK(l.smem.desc_stage_offset >= 0);
  CHECK(l.smem.desc_stage_offset % 128 == 0);
  for (const auto& [id, lp] : l.smem.loads) CHECK(lp.repeated);
  for (const auto& [id, sp] : l.smem.stores) CHECK(sp.repeated);
}

TEST_CASE("views made one after another are built in one step, one warp each; a use in between starts a new step") {
  // a, b and c before any use: one step on warps 0, 1, 2; d after a's load: a step of its own. With 2 warps the
  // third descriptor of a step goes back to warp 0.
  auto k = tilejit::kernel("steps", [](Tensor<f32, 2> x, Tensor<i32, 1> offs, Tensor<f32, 2> y) {
    auto start = load(offs, 0), end = load(offs, 1);
    auto a = x.rows(start, end), b = y.rows(start, end), c = x.rows(end, end + 64);
    auto t = descriptor_load(a, {0, 0}, {32, 32});
    auto d = y.rows(end, end + 64);
    descriptor_store(b, {0, 0}, t + descriptor_load(c, {0, 0}, {32, 32}));
    descriptor_store(d, {0, 0}, t);
  });
  for (int warps : {4, 2}) {
    const auto l = lower(k, Config{}.num_warps(warps));
    REQUIRE(l.tma.descriptors.size() == 4);
    std::map<tilejit::ir::NodeId, std::vector<int>> steps;  // build point -> the build warps of its descriptors
    for (const auto& d : l.tma.descriptors) {
      REQUIRE(d.kind == DescKind::Device);
      steps[d.build_at].push_back(d.build_warp);
    }
    REQUIRE(steps.size() == 2);
    std::vector<std::vector<int>> warps_of;
    for (auto& [at, w] : steps) {
      std::sort(w.begin(), w.end());  // descriptors come in the order of their first use, warps in that of their views
      warps_of.push_back(w);
    }
    std::sort(warps_of.begin(), warps_of.end(), [](const auto& p, const auto& q) { return p.size() > q.size(); });
    CHECK(warps_of[0] == (warps == 4 ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 0, 1}));
    CHECK(warps_of[1] == std::vector<int>{0});
    const std::string src = tilejit::codegen::generate(*k.trace(Config{}.num_warps(warps))).source;
    CHECK(src.find("if (tid / 32 == 1) {") != std::string::npos);
    CHECK((src.find("if (tid / 32 == 2) {") != std::string::npos) == (warps == 4));
    // The first step ends with one barrier and warp 0's acquires, before the first load.
    const size_t acquire_c = src.find("tj::fence_proxy_tensormap_acquire(tj_desc2);");
    CHECK(acquire_c < src.find("tj::tma_load_2d"));
    CHECK(src.find("every descriptor written and released") < acquire_c);
  }
  // A view rebuilt in a loop whose store of the previous iteration may still read its slot: the step stays on
  // warp 0, whose thread 0 waits for its stores first.
  auto loop = tilejit::kernel("rebuilt", [](Tensor<f32, 2> x, Tensor<i32, 1> offs, Tensor<f32, 2> y, Scalar<i32> n) {
    for_range(0, n, 1, [&](Scalar<i32> i) {
      auto src = x.rows(load(offs, i), load(offs, i + 1)), dst = y.rows(load(offs, i), load(offs, i + 1));
      descriptor_store(dst, {0, 0}, descriptor_load(src, {0, 0}, {32, 32}) * 2.0f);
    });
  });
  const auto ll = lower(loop, Config{}.num_warps(4));
  REQUIRE(ll.tma.descriptors.size() == 2);
  CHECK(ll.tma.descriptors[0].build_at == ll.tma.descriptors[1].build_at);
  for (const auto& d : ll.tma.descriptors) CHECK(d.build_warp == 0);
}

TEST_CASE("register layout: 16-byte vectors of the narrowest type a group moves, enough vectors for the threads") {
  auto k = tilejit::kernel("layout", [](Tensor<bf16, 2> x, Tensor<bf16, 2> y, Tensor<f32, 1> z) {
    auto a = descriptor_load(x, {0, 0}, {64, 64});
    descriptor_store(y, {0, 0}, a + a);                           // bf16 only: 8 per chunk
    auto b = descriptor_load(x, {64, 0}, {64, 64});
    descriptor_store(y, {64, 0}, (b.to<f32>() * 2.0f).to<bf16>());  // with f32: still 8 (memory is bf16)
    auto c = descriptor_load(x, {128, 0}, {2, 64});
    descriptor_store(z, {0}, sum(c.to<f32>(), 0));                // 64 elements, 128 threads: 1 per chunk
  });
  const auto l = lower(k);
  const auto loads = tma_ops(l, Op::DescLoad);
  REQUIRE(loads.size() == 3);
  const auto& la = l.layout.of[static_cast<size_t>(loads[0])];
  CHECK(la.kind == tilejit::passes::ValueLayout::Distributed);
  CHECK(la.dist.vector_width() == 8);
  CHECK(la.regs() == 32);
  CHECK(la.dist.str() == "[64, 64] reg d1x8, reg d0x4(s16), lane d1x8(s8), lane d0x4, warp d0x4(s4)");
  CHECK(l.layout.of[static_cast<size_t>(loads[1])].dist.vector_width() == 8);
  CHECK(l.layout.of[static_cast<size_t>(loads[2])].dist.vector_width() == 1);  // 128 elements over 128 threads
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto& n = l.graph.node(static_cast<int>(i));
    if (n.op == Op::ReduceSum) {
      // The slice of [2, 64] over lanes d1x32, warps d1x2 and d0x2: the two warps of a column pair
      // hold the same result.
      const auto& lr = l.layout.of[i];
      CHECK(lr.numel == 64);
      CHECK(lr.regs() == 1);
      CHECK(!lr.padded());
      CHECK(lr.dist.replicated());
      CHECK(lr.dist.str() == "[64] lane d0x32, warp d0x2(s32), warp repx2");
    }
    CHECK(n.op != Op::ConvertLayout);
    if (n.op == Op::ProgramId || n.op == Op::Const) CHECK(l.layout.of[i].kind == tilejit::passes::ValueLayout::Uniform);
  }
}

TEST_CASE("register layout: one arange reshaped to a column and to a row (2-D pointer offsets) gets consistent layouts") {
  // Found by the random-program tests: the row's group took a blocked layout before the arange was
  // decided, so every conversion inserted for it disagreed again ("layouts still disagree after 8 rounds").
  auto k = tilejit::kernel("offsets_2d", [](Tensor<i64, 2> x, Tensor<i64, 2> y) {
    auto rows = arange(0, 8).reshape({8, 1});
    auto cols = arange(0, 8).reshape({1, 8});
    auto off = rows * 80 + cols;
    store(y, off, load(x, off));
  });
  for (int warps : {1, 4, 8}) {
    const auto l = lower(k, Config{}.num_warps(warps));
    int conversions = 0;
    for (size_t i = 0; i < l.graph.size(); ++i) conversions += l.graph.node(static_cast<int>(i)).op == Op::ConvertLayout;
    CHECK(conversions <= 1);
  }
}

TEST_CASE("register layout: a row of offsets padded by threads agrees with its arange (no conversion)") {
  // Found by the random-program tests: the [1, 16] group's blocked layout pads dimension 0 with lanes
  // 16-31, the arange's pads dimension 0 of [16]; the reshape between them moves nothing, yet the
  // solver saw a conflict and every conversion inserted for it disagreed again.
  auto k = tilejit::kernel("padded_row", [](Tensor<i32, 2> x, Tensor<i32, 2> y) {
    auto cols = arange(0, 16).reshape({1, 16});
    store(y, cols, load(x, cols) + 1);
  });
  for (int warps : {1, 4}) {
    const auto l = lower(k, Config{}.num_warps(warps));
    for (size_t i = 0; i < l.graph.size(); ++i) {
      const tilejit::ir::Node& n = l.graph.node(static_cast<int>(i));
      CHECK(n.op != Op::ConvertLayout);
      if (n.op == Op::Reshape)
        CHECK(tilejit::layout::same_registers(l.layout.of[static_cast<size_t>(l.graph.operand(static_cast<int>(i), 0))].dist,
                                              l.layout.of[i].dist));
    }
  }
}

TEST_CASE("register layout: removing a unit dimension padded by warps from a reduction moves nothing") {
  // sum over the rows of [1, 4, 8] with 4 warps: the warps pad dimension 0, the result [1, 4] keeps
  // them; reshaped to [4], the warps pad dimension 0 of the new shape instead of moving data.
  auto k = tilejit::kernel("padded_sum", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    auto s = sum(load(x, arange(0, 32).reshape({1, 4, 8})), 2).reshape({4});
    store(y, arange(0, 4), s);
  });
  const auto l = lower(k, Config{}.num_warps(4));
  int reshapes = 0;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const tilejit::ir::Node& n = l.graph.node(static_cast<int>(i));
    CHECK(n.op != Op::ConvertLayout);
    if (n.op != Op::Reshape || n.shape.rank != 1) continue;
    ++reshapes;
    CHECK(tilejit::layout::same_registers(l.layout.of[static_cast<size_t>(l.graph.operand(static_cast<int>(i), 0))].dist,
                                          l.layout.of[i].dist));
  }
  CHECK(reshapes == 1);
}

TEST_CASE("the lowering dumps the graph after every rewriting pass") {
  auto k = tilejit::kernel("dump", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    descriptor_store(y, {0}, descriptor_load(x, {0}, {64}));
  });
  std::vector<std::string> passes;
  std::string last;
  tilejit::passes::lower(*k.trace(Config{}), tilejit::codegen::Options{},
                         [&](std::string_view pass, const tilejit::ir::Graph& g) {
                           passes.emplace_back(pass);
                           last = tilejit::ir::print(g);
                         });
  CHECK(passes == std::vector<std::string>{"input", "canonicalize", "persistent_programs", "hoist_invariants", "early_views", "prefetch_loads", "overlap_products", "eliminate_dead_code",
                                            "plan_tma", "insert_layout_conversions", "insert_schedule_ops"});
  CHECK(last.find("tma.load") != std::string::npos);
  // The same hook through codegen::Options.
  int calls = 0;
  tilejit::codegen::Options o;
  o.dump_ir = [&](std::string_view, const tilejit::ir::Graph&) { ++calls; };
  tilejit::codegen::generate(*k.trace(Config{}), o);
  CHECK(calls == 11);
}

TEST_CASE("canonicalize folds integer constants and no-op shape changes; dead code goes") {
  auto k = tilejit::kernel("fold", [](Tensor<i32, 1> y) {
    auto unused = arange(0, 64) * 3;
    (void)unused;
    auto c = program_id(0) * 0 + (program_id(1) + 0) * 1;
    auto v = arange(0, 64).reshape({64}).permute({0});
    store(y, v, v + c);
  });
  const auto g = k.trace(Config{});
  const auto l = tilejit::passes::lower(*g, tilejit::codegen::Options{});
  int muls = 0, reshapes = 0, permutes = 0, aranges = 0;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const Op op = l.graph.node(static_cast<int>(i)).op;
    muls += op == Op::Mul;
    reshapes += op == Op::Reshape;
    permutes += op == Op::Permute;
    aranges += op == Op::Arange;
  }
  CHECK(muls == 0);
  CHECK(reshapes == 0);
  CHECK(permutes == 0);
  CHECK(aranges == 1);
  CHECK(l.graph.size() < g->size());
}

TEST_CASE("canonicalize folds acc + dot(a, b) into dot(a, b, acc): the K loop's product then stays in flight") {
  auto k = tilejit::kernel("add_dot", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Tensor<f32, 2> d) {
    auto acc = for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({128, 128}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return acc + dot(descriptor_load(a, {0, k}, {128, 64}), descriptor_load(b, {k, 0}, {64, 128}));
    });
    descriptor_store(c, {0, 0}, acc);
    // A product read twice keeps its own registers: only the sum that is its one use may take it.
    auto p = dot(descriptor_load(a, {0, 0}, {128, 64}), descriptor_load(b, {0, 0}, {64, 128}));
    descriptor_store(d, {0, 0}, p + p);
  });
  const auto g = k.trace(Config{}.num_warps(8));
  const auto l = tilejit::passes::lower(*g, tilejit::codegen::Options{});
  int dots = 0, adds = 0;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto id = static_cast<tilejit::ir::NodeId>(i);
    if (l.info.position[i] < 0) continue;
    dots += l.graph.node(id).op == Op::Dot;
    adds += l.graph.node(id).op == Op::Add && l.graph.node(id).shape.rank == 2;
  }
  CHECK(dots == 2);
  CHECK(adds == 1);  // p + p
  REQUIRE(l.pipe.loops.size() == 1);
  CHECK(l.pipe.loops.begin()->second.carried.size() == 1);  // the loop's product is carried, as dot(a, b, acc)'s
}

TEST_CASE("impossible descriptor requests are user errors at the op's line") {
  SUBCASE("host placement of a view made in the kernel") {
    auto k = tilejit::kernel("host_view", [](Tensor<f32, 2> x, Scalar<i32> n) {
      op_line = __LINE__; auto t = descriptor_load(x.rows(0, n).with_placement(Placement::host), {0, 0}, {32, 32});
      descriptor_store(x, {0, 0}, t);
    });
    try {
      lower(k);
      FAIL("no error");
    } catch (const tilejit::UserError& e) {
      CHECK(e.line() == static_cast<unsigned>(op_line));
      CHECK(e.rule().find("host-encoded") != std::string::npos);
      CHECK(e.value() == "Placement::host");
    }
  }
  SUBCASE("device placement of a tensor array element") {
    auto k = tilejit::kernel("device_array", [](TensorArray<f32, 2> xs, Tensor<f32, 2> y) {
      op_line = __LINE__; auto t = descriptor_load(xs[0].with_placement(Placement::device), {0, 0}, {32, 32});
      descriptor_store(y, {0, 0}, t);
    });
    try {
      lower(k);
      FAIL("no error");
    } catch (const tilejit::UserError& e) {
      CHECK(e.line() == static_cast<unsigned>(op_line));
      CHECK(e.value() == "Placement::device");
    }
  }
  SUBCASE("f32 min reduction, which sm_90 TMA lacks") {
    auto k = tilejit::kernel("f32_min", [](Tensor<f32, 2> x) {
      auto t = descriptor_load(x, {0, 0}, {32, 32});
      op_line = __LINE__; descriptor_store(x, {0, 0}, t, StoreReduce::min);
    });
    try {
      lower(k);
      FAIL("no error");
    } catch (const tilejit::UserError& e) {
      CHECK(e.line() == static_cast<unsigned>(op_line));
      CHECK(e.value() == "f32");
    }
  }
  SUBCASE("pointer access to a tensor array element") {
    auto k = tilejit::kernel("array_pointer", [](TensorArray<f32, 1> xs, Tensor<f32, 1> y) {
      op_line = __LINE__; auto v = load(xs[0], arange(0, 32));
      store(y, arange(0, 32), v);
    });
    try {
      lower(k);
      FAIL("no error");
    } catch (const tilejit::UserError& e) {
      CHECK(e.line() == static_cast<unsigned>(op_line));
    }
  }
  SUBCASE("more shared memory than a program can have") {
    auto k = tilejit::kernel("too_big", [](Tensor<f32, 2> x) {
      auto a = descriptor_load(x, {0, 0}, {256, 64});
      auto b = descriptor_load(x, {256, 0}, {256, 64});
      auto c = descriptor_load(x, {512, 0}, {256, 64});
      op_line = __LINE__; auto d = descriptor_load(x, {768, 0}, {256, 64});
      descriptor_store(x, {0, 0}, a + b + c + d);
    });
    try {
      lower(k);
      FAIL("no error");
    } catch (const tilejit::UserError& e) {
      CHECK(e.rule().find("shared memory") != std::string::npos);
      CHECK(e.value() == std::to_string(4 * 65536 + 32) + " bytes");
      CHECK(e.limit() == "232448 bytes");
    }
  }
}

TEST_CASE("vector width of pointer accesses: proven contiguous, aligned and under one mask value, else 1") {
  auto k = tilejit::kernel("vectors", [](Tensor<f32, 2> x, Tensor<f32, 1> y, Tensor<f32, 1> z) {
    auto row = program_id(0).to<i64>();
    auto cols = arange(0, 1024);  // 8 per thread: the layout allows vectors of 4
    auto a = load(x, row * x.stride(0) + cols, cols < x.size(1));  // 4: stride and size divisible by 16
    auto b = load(y, cols * 2);                                       // 1: not contiguous
    auto c = load(y, cols + cols);                                    // 1: 2 * cols, not contiguous either
    auto d = load(y, cols + 1);                                       // 1: contiguous but misaligned
    auto e = load(z, cols + 4);                                       // 4: contiguous, 16-byte aligned
    store(y, cols, a + b + c + d + e);                                // 4
  });
  const auto l = lower(k);
  std::vector<int> widths;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto id = static_cast<tilejit::ir::NodeId>(i);
    const auto op = l.graph.node(id).op;
    if ((op == Op::Load || op == Op::Store) && l.info.position[i] >= 0)
      widths.push_back(tilejit::passes::vector_width(l.graph, l.layout, l.axes, l.spec, id));
  }
  CHECK(widths == std::vector<int>{4, 1, 1, 1, 4, 4});
  // The same kernel for a launch that guarantees nothing: every access element by element.
  tilejit::codegen::Options none;
  none.spec.tensors = {0, 0, 0};
  const auto u = tilejit::passes::lower(*k.trace(Config{}), none);
  for (size_t i = 0; i < u.graph.size(); ++i) {
    const auto id = static_cast<tilejit::ir::NodeId>(i);
    const auto op = u.graph.node(id).op;
    if ((op == Op::Load || op == Op::Store) && u.info.position[i] >= 0)
      CHECK(tilejit::passes::vector_width(u.graph, u.layout, u.axes, u.spec, id) == 1);
  }
}

TEST_CASE("warp_specialize: a configuration field, set by name as the tuner and saved decisions set it") {
  const Config plain({{"BM", 128}}, 8, 3);
  Config roles = plain;
  roles.warp_specialize();
  CHECK(roles.warp_specialized());
  CHECK_FALSE(plain.warp_specialized());
  CHECK(!(plain == roles));
  CHECK(plain.hash() != roles.hash());
  CHECK(roles.str() == "BM=128, num_warps=8, num_stages=3, warp_specialize");
  CHECK(Config::is_field("warp_specialize"));
  CHECK(Config::is_field("num_warps"));
  CHECK_FALSE(Config::is_field("BM"));
  Config named = plain;
  named.set_field("warp_specialize", 1).set_field("num_stages", 4).set_field("BN", 64);
  CHECK(named.warp_specialized());
  CHECK(named.num_stages() == 4);
  CHECK(named.get("BN") == 64);
  CHECK_FALSE(named.has("warp_specialize"));  // a field, not a block value
  CHECK_THROWS_WITH_AS(named.set_field("warp_specialize", 2), doctest::Contains("warp_specialize is 0 or 1"), tilejit::UserError);
  CHECK(named.set_field("warp_specialize", 0).warp_specialized() == false);
  // Unset, tilejit decides; 0 keeps roles off, which is a configuration of its own.
  CHECK(plain.warp_specialization() == tilejit::WarpSpecialize::automatic);
  CHECK(named.warp_specialization() == tilejit::WarpSpecialize::off);
  CHECK(named.str() == "BM=128, BN=64, num_warps=8, num_stages=4, warp_specialize=0");
  CHECK(Config::is_field("overlap_products"));
  CHECK_THROWS_WITH_AS(Config(plain).set_field("overlap_products", -1), doctest::Contains("overlap_products is 0 or 1"), tilejit::UserError);
  CHECK(Config(plain).set_field("overlap_products", 1).product_overlap() == tilejit::OverlapProducts::on);
  CHECK(plain.product_overlap() == tilejit::OverlapProducts::automatic);
  CHECK(Config(plain).overlap_products(false).str() == "BM=128, num_warps=8, num_stages=3, overlap_products=0");
  CHECK(Config::is_field("pingpong"));
  CHECK_THROWS_WITH_AS(Config(plain).set_field("pingpong", 2), doctest::Contains("pingpong is 0 or 1"), tilejit::UserError);
  CHECK(Config(plain).set_field("pingpong", 1).warpgroup_pingpong() == tilejit::Pingpong::on);
  CHECK(plain.warpgroup_pingpong() == tilejit::Pingpong::automatic);
  CHECK(Config(plain).pingpong().str() == "BM=128, num_warps=8, num_stages=3, pingpong");
  Config off = plain;
  off.warp_specialize(false);
  CHECK(!(off == plain));
  CHECK(off.hash() != plain.hash());
  CHECK(off.hash() != roles.hash());
}

TEST_CASE("warp roles with descriptors built on the device after the start: the consumers build, the producer awaits") {
  // Sample 13 (jagged HSTU): the views of the sequence are made inside the `if` around the loops. q's, k's and v's
  // are made one after another before any is used, so they are built in one step, by warps 0, 1 and 2; the
  // output's view (made after q's load) in a step of its own. The producer waits for the step its loads need.
  const Config c = Config{{"BM", 128}, {"BN", 128}, {"D", 128}, {"CAUSAL", 1}, {"BIAS", 0}}.num_warps(8).num_stages(2).warp_specialize();
  const auto hstu = tilejit::samples::jagged_hstu_kernel();
  const auto l = lower(hstu, c);
  REQUIRE(l.roles.on());
  CHECK(l.roles.loops.size() == 2);
  REQUIRE(l.tma.descriptors.size() == 4);
  std::vector<tilejit::ir::NodeId> builds;
  std::vector<int> warps;
  for (const auto& d : l.tma.descriptors) {
    CHECK(d.kind == DescKind::Device);
    builds.push_back(d.build_at);
    warps.push_back(d.build_warp);
  }
  CHECK(builds[0] == builds[1]);
  CHECK(builds[1] == builds[2]);
  CHECK(builds[3] != builds[0]);
  CHECK(warps == std::vector<int>{0, 1, 2, 0});
  CHECK(l.roles.awaited_builds == std::vector<tilejit::ir::NodeId>{builds[0]});
  CHECK(l.roles.acquired_slots == std::vector<int>{1, 2});
  REQUIRE(l.smem.built_barrier >= 0);
  CHECK(l.smem.barrier_arrivals.at(l.smem.built_barrier) == 1);
  const std::string bar = "&tj_bar[" + std::to_string(l.smem.built_barrier) + "]";
  const std::string src = tilejit::codegen::generate(*hstu.trace(c)).source;
  const size_t producer = src.find("// the producer warpgroup"), consumers = src.find("tj::setmaxnreg_inc");
  REQUIRE(producer != std::string::npos);
  REQUIRE(consumers != std::string::npos);
  const size_t wait = src.find("tj::mbarrier_wait_parity(" + bar + ", 0);");
  CHECK(wait > producer);
  CHECK(wait < src.find("tj::tma_load_2d", producer));
  CHECK(src.find("tj::fence_proxy_tensormap_acquire(tj_desc1);", wait) < consumers);
  CHECK(src.find("tj::fence_proxy_tensormap_acquire(tj_desc2);", wait) < consumers);
  // The producer builds nothing; the consumers arrive once, after the step with k's and v's views.
  CHECK(src.find("tensormap_replace", producer) > consumers);
  size_t arrivals = 0;
  for (size_t at = src.find("tj::mbarrier_arrive(" + bar + ")"); at != std::string::npos; at = src.find("tj::mbarrier_arrive(" + bar + ")", at + 1)) {
    CHECK(at > src.find("tensormap_cp_fenceproxy(tj_desc2", consumers));
    CHECK(at < src.find("tensormap_cp_fenceproxy(tj_desc3", consumers));
    ++arrivals;
  }
  CHECK(arrivals == 1);
  CHECK(tilejit::passes::describe_warp_roles(l).find("for the consumers' build at") != std::string::npos);

  // A view made in a loop around the K loop (a persistent kernel over sequences) is rebuilt before each run of the
  // K loop, which is pipelined; a producer would have to await every rebuild, so roles are refused, with the reason.
  auto per_tile = tilejit::kernel("per_tile_views", [](Tensor<i32, 1> offsets, Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c,
                                                      Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    for_range(program_id(0), offsets.size(0).to<i32>() - 1, num_programs(0), [&](Scalar<i32> s) {
      auto bs = b.rows(load(offsets, s), load(offsets, s + 1));
      auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {0, k}, {BM, BK}), descriptor_load(bs, {0, k}, {BN, BK}).trans(), acc);
      });
      descriptor_store(c, {s * BM, 0}, acc);
    });
  });
  const Config tiles = Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3);
  const auto lt = lower(per_tile, tiles);
  CHECK(lt.pipe.loops.size() == 1);
  CHECK_FALSE(lt.roles.on());
  CHECK(lt.roles.not_applied.empty());  // left to tilejit: silently
  const auto la = lower(per_tile, Config(tiles).warp_specialize());
  CHECK(la.pipe.loops.size() == 1);
  CHECK_FALSE(la.roles.on());
  INFO(la.roles.not_applied);
  CHECK(la.roles.not_applied.find("is built on the device in the loop at") != std::string::npos);
  CHECK(la.roles.not_applied.find("make the view outside the loop") != std::string::npos);
  CHECK(la.smem.built_barrier == -1);
}

TEST_CASE("programs_per_sm: an occupancy target in __launch_bounds__, part of the configuration") {
  auto k = tilejit::kernel("bounded", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    auto offs = arange(0, 2048);
    store(y, offs, load(x, offs) * 2.0f);
  });
  const Config plain = Config{}.num_warps(16), bounded = Config{}.num_warps(16).programs_per_sm(2);
  CHECK(!(plain == bounded));
  CHECK(plain.hash() != bounded.hash());
  CHECK(bounded.str() == "num_warps=16, num_stages=auto, programs_per_sm=2");
  const std::string a = tilejit::codegen::generate(*k.trace(plain)).source;
  const std::string b = tilejit::codegen::generate(*k.trace(bounded)).source;
  CHECK(a.find("__launch_bounds__(512) ") != std::string::npos);
  CHECK(b.find("__launch_bounds__(512, 2) ") != std::string::npos);
  CHECK(b.find("programs_per_sm=2") != std::string::npos);  // the header names it
  CHECK_THROWS_AS(Config{}.num_warps(16).programs_per_sm(5), tilejit::UserError);  // 5 x 512 > 2048 threads
  CHECK_THROWS_AS(Config{}.programs_per_sm(33), tilejit::UserError);
  CHECK_THROWS_AS(Config{}.programs_per_sm(4).num_warps(32), tilejit::UserError);
}

TEST_CASE("a dot left on CUDA cores is a performance note naming its line and the reason; a wgmma dot is not") {
  int dot_line = 0;
  auto k = tilejit::kernel("small_dot", [&](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM) {
    auto ta = descriptor_load(a, {0, 0}, {BM, 64});
    auto tb = descriptor_load(b, {0, 0}, {64, 64});
    dot_line = __LINE__ + 1;
    descriptor_store(c, {0, 0}, dot(ta, tb, zeros<f32>({BM, 64})));
  });
  const auto small = tilejit::codegen::generate(*k.trace(Config{{"BM", 20}}));
  REQUIRE(small.notes.size() == 1);
  CHECK(small.notes[0].text.find("planner_test.cpp:" + std::to_string(dot_line)) != std::string::npos);
  CHECK(small.notes[0].text.find("runs on CUDA cores") != std::string::npos);
  CHECK(small.notes[0].text.find("M=20 is neither a multiple of 64 nor a multiple of 8 below 64") != std::string::npos);
  CHECK(tilejit::codegen::generate(*k.trace(Config{{"BM", 64}})).notes.empty());
  CHECK(tilejit::codegen::generate(*k.trace(Config{{"BM", 16}})).notes.empty());  // padded to the instruction's 64 rows
}

TEST_CASE("a tile of a rank-3 tensor reshaped to 2-D for a dot is loaded as 2-D and read by the tensor cores") {
  // Attention over [B*H, S, D] written with {1, BM, D} tiles: canonicalize drops the unit dimension from the
  // loads, so the dot reads both tiles in place with wgmma (the stored value's reshape stays: it moves nothing).
  auto k = tilejit::kernel("qk_rank3", [](Tensor<bf16, 3> q, Tensor<bf16, 3> kk, Tensor<f32, 3> o) {
    auto qt = descriptor_load(q, {program_id(1), 0, 0}, {1, 64, 64}).reshape({64, 64});
    auto kt = descriptor_load(kk, {program_id(1), 0, 0}, {1, 64, 64}).reshape({64, 64});
    descriptor_store(o, {program_id(1), 0, 0}, dot(qt, kt.trans(), zeros<f32>({64, 64})).reshape({1, 64, 64}));
  });
  const auto traced = k.trace(Config{});
  const auto l = tilejit::passes::lower_until(*traced, tilejit::codegen::Options{}, "eliminate_dead_code");
  int reshapes = 0, loads = 0, stores = 0;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto id = static_cast<int>(i);
    const Op op = l.graph.node(id).op;
    reshapes += op == Op::Reshape;
    if (op == Op::DescLoad) {
      ++loads;
      CHECK(l.graph.node(id).shape == tilejit::ir::Shape{64, 64});
    }
    stores += op == Op::DescStore;
  }
  CHECK(loads == 2);
  CHECK(stores == 1);
  CHECK(reshapes == 1);  // the stored value's
  const auto gen = tilejit::codegen::generate(*traced);
  CHECK(gen.notes.empty());
  CHECK(gen.source.find("wgmma") != std::string::npos);
  CHECK(gen.source.find("tma_load_3d") != std::string::npos);
  CHECK(gen.source.find("tma_store_3d") != std::string::npos);
}

TEST_CASE("a rank-3 tile read both reshaped (by a dot) and as it is stays rank 3: the note says how to load it as 2-D") {
  auto k = tilejit::kernel("qk_rank3_twice", [](Tensor<bf16, 3> q, Tensor<bf16, 3> kk, Tensor<f32, 3> o, Tensor<bf16, 3> q2) {
    // (An operand a reshaped from such a tile is read from registers by wgmma; b must be a tile in shared memory.)
    auto qt = descriptor_load(q, {program_id(1), 0, 0}, {1, 64, 64}).reshape({64, 64});
    auto k3 = descriptor_load(kk, {program_id(1), 0, 0}, {1, 64, 64});
    descriptor_store(o, {program_id(1), 0, 0}, dot(qt, k3.reshape({64, 64}).trans(), zeros<f32>({64, 64})).reshape({1, 64, 64}));
    descriptor_store(q2, {program_id(1), 0, 0}, k3 * k3);
  });
  const auto gen = tilejit::codegen::generate(*k.trace(Config{}));
  REQUIRE(gen.notes.size() == 1);
  CHECK(gen.notes[0].text.find("runs on CUDA cores") != std::string::npos);
  CHECK(gen.notes[0].text.find("a reshape of a TMA tile ([1, 64, 64] to [64, 64]) that is also used in another shape") !=
        std::string::npos);
  CHECK(gen.notes[0].text.find("merge({2, 1}).rows(start, end)") != std::string::npos);
}

TEST_CASE("a TMA tile reshaped to other dimensions for a dot stays on CUDA cores: the note says to load it in that shape") {
  auto k = tilejit::kernel("qk_merged_rows", [](Tensor<bf16, 3> q, Tensor<bf16, 3> kk, Tensor<f32, 2> o) {
    auto qt = descriptor_load(q, {0, 0, 0}, {2, 32, 64}).reshape({64, 64});
    auto kt = descriptor_load(kk, {0, 0, 0}, {2, 32, 64}).reshape({64, 64});
    descriptor_store(o, {0, 0}, dot(qt, kt.trans(), zeros<f32>({64, 64})));
  });
  const auto gen = tilejit::codegen::generate(*k.trace(Config{}));
  REQUIRE(gen.notes.size() == 1);
  CHECK(gen.notes[0].text.find("a reshape of a TMA tile ([2, 32, 64] to [64, 64]) that changes its dimensions") != std::string::npos);
}

TEST_CASE("a TMA tile read by two products, one through a transpose, is one wgmma operand of both") {
  // Attention backward: dK/dV reads Q as Q^T (in K Q^T) and as itself (in dS^T Q), dO likewise; dQ reads K twice.
  const Config c = Config{{"BM", 64}, {"BN", 64}, {"D", 64}, {"CAUSAL", 1}}.num_warps(4).num_stages(2);
  const auto dkdv = lower(tilejit::samples::attention_backward_dkdv_kernel(), c);
  CHECK(dkdv.mma.cuda_cores.empty());
  REQUIRE(dkdv.mma.dots.size() == 8);  // four in each of the two loops (causal: the masked blocks, then the others)
  // In each loop, each of Q and dO is read by two products: once K-major through the transpose, once M/N-major in place.
  std::map<tilejit::ir::NodeId, std::vector<bool>> readers;  // load -> mn_major of each read
  for (const auto& [d, m] : dkdv.mma.dots)
    for (const auto* o : {&m.a, &m.b})
      if (o->load != tilejit::ir::kNoNode) readers[o->load].push_back(o->mn_major);
  int both_ways = 0;  // tiles read K-major by one product and M/N-major by another
  for (auto& [load, modes] : readers) {
    CHECK(modes.size() == 2);  // K and V (before the loops) by a product in each loop; Q and dO by two in theirs
    both_ways += modes.size() == 2 && modes[0] != modes[1];
  }
  CHECK(both_ways == 4);
  CHECK(dkdv.pipe.loops.size() == 2);  // both loops pipelined
  for (const auto& [loop, p] : dkdv.pipe.loops) {
    CHECK(p.dots.size() == 4);
    CHECK(p.loads.size() == 4);  // q, do, lse, delta
  }
  const auto dq = lower(tilejit::samples::attention_backward_dq_kernel(), c);
  CHECK(dq.mma.cuda_cores.empty());
  CHECK(dq.mma.dots.size() == 6);
  for (const auto& [loop, p] : dq.pipe.loops) CHECK(p.loads.size() == 2);  // k (read twice) and v
  CHECK(dq.pipe.loops.size() == 2);

  // A transpose that something other than a dot reads keeps the tile off the tensor cores.
  auto stored = tilejit::kernel("tile_and_stored_transpose", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c,
                                                               Tensor<bf16, 2> bt) {
    auto tb = descriptor_load(b, {0, 0}, {64, 64});
    descriptor_store(c, {0, 0}, dot(descriptor_load(a, {0, 0}, {64, 64}), tb, zeros<f32>({64, 64})));
    descriptor_store(bt, {0, 0}, tb.trans() * 2.0f);
  });
  const auto l = lower(stored);
  CHECK(l.mma.dots.empty());
  REQUIRE(l.mma.cuda_cores.size() == 1);
  CHECK(l.mma.cuda_cores[0].second.find("also read by something other than a tensor-core dot") != std::string::npos);
}

TEST_CASE("a K loop with one product keeps it in flight; attention's loop with two is pipelined, waiting for each") {
  auto one = tilejit::kernel("one_product", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c) {
    auto acc = for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {0, k}, {64, 64}), descriptor_load(b, {k, 0}, {64, 64}), acc);
    });
    descriptor_store(c, {0, 0}, acc);
  });
  auto two = tilejit::kernel("two_products", [](Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<bf16, 2> v, Tensor<f32, 2> o) {
    auto qt = descriptor_load(q, {0, 0}, {64, 64});
    auto acc = for_range(0, k.size(0).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> j, Value<f32, 2> acc) {
      auto s = dot(qt, descriptor_load(k, {j, 0}, {64, 64}).trans(), zeros<f32>({64, 64}));
      return dot(exp(s).to<bf16>(), descriptor_load(v, {j, 0}, {64, 64}), acc * 0.5f);
    });
    descriptor_store(o, {0, 0}, acc);
  });
  // A product inside an if in the loop: its wait would not be ordered with the ring's, so no pipeline.
  auto nested = tilejit::kernel("product_in_if", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c) {
    auto acc = for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      auto ta = descriptor_load(a, {0, k}, {64, 64});
      auto tb = descriptor_load(b, {k, 0}, {64, 64});
      return if_else(k > 0, [&] { return dot(ta, tb, acc); }, [&] { return acc; });
    });
    descriptor_store(c, {0, 0}, acc);
  });
  const tilejit::Config c = tilejit::Config{}.num_stages(3);
  const auto l1 = tilejit::passes::lower(*one.trace(c), tilejit::codegen::Options{});
  REQUIRE(l1.pipe.loops.size() == 1);
  const auto& p1 = l1.pipe.loops.begin()->second;
  CHECK(p1.dots.size() == 1);
  CHECK(p1.in_flight());
  CHECK(p1.loads.size() == 2);
  const auto l2 = tilejit::passes::lower(*two.trace(c), tilejit::codegen::Options{});
  REQUIRE(l2.pipe.loops.size() == 1);
  const auto& p2 = l2.pipe.loops.begin()->second;
  CHECK(p2.dots.size() == 2);
  CHECK(p2.dot == p2.dots.back());
  CHECK_FALSE(p2.in_flight());  // its accumulator is computed in the loop (acc * 0.5)
  CHECK(p2.loads.size() == 2);  // K and V; Q is loaded before the loop
  CHECK(p2.stage_bytes == 2 * 64 * 64 * 2);
  const auto l3 = tilejit::passes::lower(*nested.trace(c), tilejit::codegen::Options{});
  CHECK(l3.mma.dots.size() == 1);  // on wgmma, in the if
  CHECK(l3.pipe.loops.empty());
}

TEST_CASE("a tf32 operand loaded M/N-major is copied K-major, and a performance note says so at the dot's line") {
  int dot_line = 0;
  auto k = tilejit::kernel("tf32_kn", [&](Tensor<f32, 2> a, Tensor<f32, 2> b, Tensor<f32, 2> c) {
    auto ta = descriptor_load(a, {0, 0}, {64, 32});
    auto tb = descriptor_load(b, {0, 0}, {32, 64});  // [K, N]: N innermost
    dot_line = __LINE__ + 1;
    descriptor_store(c, {0, 0}, dot(ta, tb, zeros<f32>({64, 64})));
  });
  const auto l = lower(k);
  REQUIRE(l.mma.dots.size() == 1);
  const auto& m = l.mma.dots.begin()->second;
  CHECK_FALSE(m.a.k_major_copy);
  CHECK(m.b.k_major_copy);
  CHECK_FALSE(m.b.mn_major);           // the copy is K-major: [N, K] = [64, 32], 128 bytes of K per row
  CHECK(m.b.tile.rows == 64);
  CHECK(m.b.tile.inner == 32);
  CHECK(m.b.tile.swizzle == 128);
  CHECK(m.b.source.rows == 32);        // as TMA writes it: [K, N], unswizzled
  CHECK(m.b.source.swizzle == 0);
  CHECK(l.smem.k_major_copies.count(m.b.load) == 1);
  const auto gen = tilejit::codegen::generate(*k.trace(Config{}));
  REQUIRE(gen.notes.size() == 1);
  CHECK(gen.notes[0].text.find("planner_test.cpp:" + std::to_string(dot_line)) != std::string::npos);
  CHECK(gen.notes[0].text.find("its b tile (tf32) is loaded M/N-major") != std::string::npos);
}

TEST_CASE("a load after a pipelined K loop that needs nothing from it is issued before the loop") {
  auto k = tilejit::kernel("bias_after_loop", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 1> bias, Tensor<f32, 2> c) {
    auto acc = for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {0, kk}, {64, 64}), descriptor_load(b, {kk, 0}, {64, 64}), acc);
    });
    auto row = descriptor_load(bias, {64}, {64});  // needs nothing from the loop
    auto at = (sum(sum(acc, 1), 0) > 0.0f).to<i32>() * 64;
    auto col = descriptor_load(bias, {at}, {64});  // its coordinate comes from the loop's result
    descriptor_store(c, {0, 0}, acc + row.to<f32>().expand_dims<0>() + col.to<f32>().expand_dims<1>());
  });
  const auto l = lower(k, Config{}.num_stages(3));
  REQUIRE(l.pipe.loops.size() == 1);
  const tilejit::ir::NodeId f = l.pipe.loops.begin()->first;
  REQUIRE(l.pipe.issued_before.count(f) == 1);
  const auto& early = l.pipe.issued_before.at(f);
  REQUIRE(early.size() == 1);
  CHECK(l.graph.node(early[0]).shape.dims[0] == 64);
  CHECK(l.graph.operand(early[0], 1) != tilejit::ir::kNoNode);
  // The early load is the one at coordinate 64 (a constant); the other waits for the loop.
  CHECK(l.graph.node(l.graph.operand(early[0], 1)).op == Op::Const);
  int loads_after = 0;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (l.graph.node(static_cast<tilejit::ir::NodeId>(i)).op == Op::DescLoad && l.info.position[i] > l.info.position[static_cast<size_t>(f)] &&
        !l.info.in_loop(static_cast<tilejit::ir::NodeId>(i)))
      ++loads_after;
  CHECK(loads_after == 2);
  CHECK(l.pipe.early.size() == 1);

  // After two pipelined loops, a load that needs neither is issued once, before the first.
  auto two = tilejit::kernel("after_two_loops", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 1> bias, Tensor<f32, 2> c) {
    auto loop = [&] {
      return for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
        return dot(descriptor_load(a, {0, kk}, {64, 64}), descriptor_load(b, {kk, 0}, {64, 64}), acc);
      });
    };
    auto first = loop();
    auto second = loop();
    descriptor_store(c, {0, 0}, first + second + descriptor_load(bias, {0}, {64}).to<f32>().expand_dims<0>());
  });
  const auto l2 = lower(two, Config{}.num_stages(2));
  REQUIRE(l2.pipe.loops.size() == 2);
  CHECK(l2.pipe.early.size() == 1);
  REQUIRE(l2.pipe.issued_before.size() == 1);
  const tilejit::ir::NodeId before = l2.pipe.issued_before.begin()->first;
  for (const auto& [f, p] : l2.pipe.loops) CHECK(l2.info.position[static_cast<size_t>(before)] <= l2.info.position[static_cast<size_t>(f)]);
  const std::string full = tilejit::codegen::generate(*two.trace(Config{}.num_stages(2))).source;
  const std::string src = full.substr(full.find("extern \"C\""));  // the kernel, past the prelude's helpers
  size_t issues = 0;
  for (size_t at = src.find("tma_load_1d("); at != std::string::npos; at = src.find("tma_load_1d(", at + 1)) ++issues;
  CHECK(issues == 1);
}

TEST_CASE("a TMA load in a K loop read from registers rides in the ring; one read in place leaves the loop unpipelined, with a warning") {
  // The block scales of a DeepSeek-style GEMM: a TMA tile multiplied into each product.
  const auto l = tilejit::passes::lower(*tilejit::samples::block_scaled_matmul_kernel().trace(
                                            Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3)),
                                        tilejit::codegen::Options{});
  REQUIRE(l.pipe.loops.size() == 1);
  const auto& p = l.pipe.loops.begin()->second;
  CHECK(p.loads.size() == 3);
  CHECK(p.dots.size() == 1);
  CHECK(p.stage_bytes == 2 * 128 * 64 * 2 + 128 * 4);
  CHECK(l.pipe.not_pipelined.empty());
  const auto gen = tilejit::codegen::generate(*tilejit::samples::block_scaled_matmul_kernel().trace(
      Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_warps(8).num_stages(3)));
  CHECK(gen.source.find("from this iteration's stage") != std::string::npos);
  for (const auto& n : gen.notes) CHECK_FALSE(n.warning);

  // The same tile stored straight back (read in place by the store) keeps the loop from being pipelined.
  static int load_line = 0;
  auto k = tilejit::kernel("scale_stored", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> s, Tensor<f32, 2> c) {
    auto acc = for_range(0, a.size(1).to<i32>(), 64, zeros<f32>({64, 64}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
      load_line = __LINE__ + 1;
      auto sb = descriptor_load(s, {kk / 64, 0}, {1, 64});
      descriptor_store(s, {kk / 64 + 1, 0}, sb);
      return dot(descriptor_load(a, {0, kk}, {64, 64}), descriptor_load(b, {0, kk}, {64, 64}).trans(), acc);
    });
    descriptor_store(c, {0, 0}, acc);
  });
  const auto g2 = tilejit::codegen::generate(*k.trace(Config{}.num_stages(3)));
  REQUIRE(g2.notes.size() == 1);
  CHECK(g2.notes[0].warning);
  CHECK(g2.notes[0].text.find("is not software-pipelined") != std::string::npos);
  CHECK(g2.notes[0].text.find("planner_test.cpp:" + std::to_string(load_line) + " is read in place") != std::string::npos);
}

TEST_CASE("two sequential K loops with the same loads share one ring; with other loads the second ring takes the first's bytes") {
  // bk: the K width of the second loop's tiles (64: the same loads as the first loop's).
  auto two_loops = [](int64_t bk) {
    return tilejit::kernel("two_loops", [bk](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<bf16, 2> c) {
      auto loop = [&](int64_t col, int64_t w) {
        return for_range(0, a.size(1).to<i32>(), w, zeros<f32>({128, 128}), [&](Scalar<i32> kk, Value<f32, 2> acc) {
          return dot(descriptor_load(a, {0, kk}, {128, w}), descriptor_load(b, {col, kk}, {128, w}).trans(), acc);
        });
      };
      auto first = loop(0, 64);
      auto second = loop(128, bk);
      descriptor_store(c, {0, 0}, (first + second).to<bf16>());
    });
  };
  const Config c = Config{}.num_warps(8).num_stages(3);
  {
    const auto l = lower(two_loops(64), c);
    REQUIRE(l.pipe.loops.size() == 2);
    std::vector<tilejit::ir::NodeId> loops;
    for (const auto& [f, p] : l.pipe.loops) loops.push_back(f);
    std::sort(loops.begin(), loops.end(), [&](auto x, auto y) { return l.info.position[static_cast<size_t>(x)] < l.info.position[static_cast<size_t>(y)]; });
    const auto &first = l.pipe.loops.at(loops[0]), &second = l.pipe.loops.at(loops[1]);
    CHECK(first.ring == loops[0]);
    CHECK(second.ring == loops[0]);
    CHECK(first.ring_persists);  // one ring position runs through both loops
    CHECK(second.ring_persists);
    CHECK(l.smem.ring_barriers.at(loops[0]) == l.smem.ring_barriers.at(loops[1]));
    for (size_t k = 0; k < 2; ++k) CHECK(l.smem.loads.at(first.loads[k]).buffer == l.smem.loads.at(second.loads[k]).buffer);
    const auto& bufs = l.smem.buffers;
    REQUIRE(bufs.size() == 3);  // the two rings, one store tile
    CHECK(bufs[1].offset == 49152);
    CHECK(bufs[2].offset == 0);  // the bf16 output tile, after both loops
    CHECK(l.smem.total_bytes == 98304 + 32);  // 3 mbarriers, the total rounded up to 16 bytes
    CHECK(l.smem.reuse_fences.size() == 1);  // before the store only: the second loop takes no new bytes
    const std::string src = tilejit::codegen::generate(*two_loops(64).trace(c)).source;
    CHECK(src.find("int tj_ring" + std::to_string(loops[0]) + " = 0;") != std::string::npos);
    CHECK(src.find("int tj_it" + std::to_string(loops[1]) + " = tj_ring" + std::to_string(loops[0]) + ";") != std::string::npos);
    CHECK(src.find("uses the ring (buffers, mbarriers, position) of loop %" + std::to_string(loops[0])) != std::string::npos);
    // With warp roles, one producer warpgroup fills the ring for both loops, the ring position running on.
    const auto lr = lower(two_loops(64), Config(c).warp_specialize());
    REQUIRE(lr.roles.on());
    CHECK(lr.roles.loops == loops);
    CHECK(lr.smem.empty_barriers.at(loops[0]) == lr.smem.empty_barriers.at(loops[1]));
  }
  {
    const auto l = lower(two_loops(32), c);
    REQUIRE(l.pipe.loops.size() == 2);
    for (const auto& [f, p] : l.pipe.loops) CHECK(p.ring == f);
    const auto& bufs = l.smem.buffers;
    REQUIRE(bufs.size() == 5);  // two rings per loop, one store tile
    // The first loop's rings are 3 x 16 KiB, the second's 3 x 8 KiB, in the first loop's bytes.
    CHECK(bufs[0].offset == 0);
    CHECK(bufs[1].offset == 49152);
    CHECK(bufs[2].offset == 0);
    CHECK(bufs[3].offset == 24576);
    CHECK(bufs[4].offset == 0);
    CHECK(l.smem.total_bytes == 98304 + 6 * 8);
    // A fence before the second loop and one before the store; the generated code prints each as a barrier.
    CHECK(l.smem.reuse_fences.size() == 2);
    const std::string src = tilejit::codegen::generate(*two_loops(32).trace(c)).source;
    CHECK(src.find("reuse the bytes of tiles no longer in use") != std::string::npos);
    // Two rings: a producer warpgroup fills one, so the roles are refused, with the reason.
    const auto lr = lower(two_loops(32), Config(c).warp_specialize());
    CHECK_FALSE(lr.roles.on());
    CHECK(lr.roles.not_applied.find("pipelined loops with rings of their own") != std::string::npos);
  }

  // Without a loop in between (a streaming kernel) nothing is shared and no barrier is added.
  auto flat = tilejit::kernel("flat", [](Tensor<f32, 2> x, Tensor<f32, 1> y) {
    descriptor_store(y, {0}, sum(descriptor_load(x, {0, 0}, {16, 64}), 1));
  });
  const auto lf = lower(flat);
  CHECK(lf.smem.reuse_fences.empty());
  CHECK(lf.smem.buffers[1].offset >= lf.smem.buffers[0].offset + lf.smem.buffers[0].bytes);
}

TEST_CASE("f16 accumulators run on wgmma for f16 and fp8 operands; bf16 operands need an f32 accumulator") {
  auto kernel = [](auto in) {
    using In = decltype(in);
    return tilejit::kernel("f16_acc", [](Tensor<In, 2> a, Tensor<In, 2> b, Tensor<f16, 2> c) {
      descriptor_store(c, {0, 0}, dot(descriptor_load(a, {0, 0}, {64, 64}), descriptor_load(b, {0, 0}, {64, 64}).trans(), zeros<f16>({64, 64})));
    });
  };
  const auto f16_in = tilejit::codegen::generate(*kernel(f16{}).trace(Config{}));
  CHECK(f16_in.notes.empty());
  CHECK(f16_in.source.find("wgmma.mma_async.sync.aligned.m64n64k16.f16.f16.f16") != std::string::npos);
  const auto e4m3_in = tilejit::codegen::generate(*kernel(f8e4m3{}).trace(Config{}));
  CHECK(e4m3_in.notes.empty());
  CHECK(e4m3_in.source.find("wgmma.mma_async.sync.aligned.m64n64k32.f16.e4m3.e4m3") != std::string::npos);
  const auto bf16_in = tilejit::codegen::generate(*kernel(bf16{}).trace(Config{}));
  REQUIRE(bf16_in.notes.size() == 1);
  CHECK(bf16_in.notes[0].warning);
  CHECK(bf16_in.notes[0].text.find("bf16 x bf16 -> f16 has no wgmma instruction") != std::string::npos);
}

TEST_CASE("host descriptors carry the source line of their first use, not a node id of the lowered graph") {
  // Lowering adds nodes (layouts, conversions, the pipeline), so the first use's node id in the lowered
  // graph may be past the end of the traced graph the runtime keeps: the plan holds the location itself.
  auto k = tilejit::kernel("desc_location", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto t = descriptor_load(x, {program_id(0) * 16, 0}, {16, 32});
    for (int i = 0; i < 8; ++i) t = t * 2.0f + sum(t, 1).expand_dims<1>();
    op_line = __LINE__; descriptor_store(y, {program_id(0) * 16, 0}, t);
  });
  const auto traced = k.trace(Config{});
  const tilejit::codegen::GeneratedKernel gen = tilejit::codegen::generate(*traced);
  REQUIRE(gen.plan.descriptors.size() == 2);
  for (const auto& hd : gen.plan.descriptors) {
    CHECK(hd.first_use.file.ends_with("planner_test.cpp"));
    CHECK(hd.first_use.line >= static_cast<uint32_t>(op_line - 2));
    CHECK(hd.first_use.line <= static_cast<uint32_t>(op_line));
  }
}

TEST_CASE("axis analysis: a comparison of a contiguous run with a constant is constant over runs only where that is true") {
  // x = arange(0, 16) + a against a scalar b, on either side, with every comparison; the analysis's constancy of the
  // result must hold for the actual values (arange(0, 2) == 0 is {true, false}, not constant over runs of 2).
  for (int a : {0, 4, 8}) {
    for (int b : {0, 4, 7, 8, 16}) {
      auto k = tilejit::kernel("cmp_runs", [a, b](Tensor<i32, 1> y) {
        auto x = arange(0, 16) + a;
        auto c = full<i32>({16}, b);
        auto r = (x < c).to<i32>() + (x <= c).to<i32>() * 2 + (x > c).to<i32>() * 4 + (x >= c).to<i32>() * 8 + (x == c).to<i32>() * 16 +
                 (x != c).to<i32>() * 32 + (c < x).to<i32>() * 64 + (c <= x).to<i32>() * 128 + (c > x).to<i32>() * 256 +
                 (c >= x).to<i32>() * 512 + (c == x).to<i32>() * 1024 + (c != x).to<i32>() * 2048;
        store(y, arange(0, 16), r);
      });
      const auto l = lower(k);
      int compared = 0;
      for (size_t i = 0; i < l.graph.size(); ++i) {
        const auto& n = l.graph.node(static_cast<int>(i));
        const bool cmp = n.op == Op::Lt || n.op == Op::Le || n.op == Op::Gt || n.op == Op::Ge || n.op == Op::Eq || n.op == Op::Ne;
        if (!cmp || l.info.position[i] < 0) continue;
        // Which operand is the run: the one with contiguity 16.
        const auto x_first = l.axes[static_cast<size_t>(l.graph.operand(static_cast<int>(i), 0))].contiguity[0] > 1;
        const int64_t runs = l.axes[i].constancy[0];
        std::vector<bool> v(16);
        for (int e = 0; e < 16; ++e) {
          const int lhs = x_first ? e + a : b, rhs = x_first ? b : e + a;
          switch (n.op) {
            case Op::Lt: v[e] = lhs < rhs; break;
            case Op::Le: v[e] = lhs <= rhs; break;
            case Op::Gt: v[e] = lhs > rhs; break;
            case Op::Ge: v[e] = lhs >= rhs; break;
            case Op::Eq: v[e] = lhs == rhs; break;
            default: v[e] = lhs != rhs; break;
          }
        }
        for (int e = 0; e < 16; ++e) {
          INFO("a = " << a << ", b = " << b << ", " << tilejit::ir::name_of(n.op) << (x_first ? " (run first)" : " (run second)")
                      << ": constancy " << runs << ", element " << e);
          CHECK(v[static_cast<size_t>(e)] == v[static_cast<size_t>(e - e % runs)]);
        }
        ++compared;
      }
      CHECK(compared == 12);
    }
  }
}

TEST_CASE("num_stages left to tilejit: 3 where three rings fit, fewer where they do not; an explicit count is kept") {
  auto gemm = tilejit::kernel("auto_stages", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {n, k}, {BN, BK}).trans(), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  // 128 x 256 x 64: a stage is 48 KiB, three fit.
  const Config fits({{"BM", 128}, {"BN", 256}, {"BK", 64}}, 8);
  CHECK(fits.num_stages() == Config::kAutoStages);
  CHECK(fits.str() == "BK=64, BM=128, BN=256, num_warps=8, num_stages=auto");
  const auto l3 = lower(gemm, fits);
  CHECK(l3.pipe.stages_chosen);
  CHECK(l3.pipe.stages == 3);
  REQUIRE(l3.pipe.loops.size() == 1);
  CHECK(l3.pipe.loops.begin()->second.stages == 3);
  const std::string src = tilejit::codegen::generate(*gemm.trace(fits)).source;
  CHECK(src.find("num_warps=8, num_stages=auto (3)") != std::string::npos);
  // 128 x 256 x 128: a stage is 96 KiB, two fit.
  const auto l2 = lower(gemm, Config{{"BM", 128}, {"BN", 256}, {"BK", 128}}.num_warps(8));
  CHECK(l2.pipe.stages == 2);
  CHECK(l2.pipe.loops.begin()->second.stages == 2);
  CHECK(l2.smem.total_bytes <= 227 * 1024);
  // The user's count is kept, and what does not fit stays an error naming the limit.
  const auto lk = lower(gemm, Config{{"BM", 128}, {"BN", 256}, {"BK", 64}}.num_warps(8).num_stages(2));
  CHECK(!lk.pipe.stages_chosen);
  CHECK(lk.pipe.loops.begin()->second.stages == 2);
  CHECK_THROWS_AS(lower(gemm, Config{{"BM", 128}, {"BN", 256}, {"BK", 128}}.num_warps(8).num_stages(3)), tilejit::UserError);
  // A kernel without a pipelined loop says so: no count is printed.
  auto copy = tilejit::kernel("auto_stages_copy", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    descriptor_store(y, {0, 0}, descriptor_load(x, {0, 0}, {32, 32}));
  });
  CHECK(tilejit::codegen::generate(*copy.trace(Config{})).source.find("num_stages=auto\n") != std::string::npos);
  CHECK_THROWS_AS(Config{}.num_stages(-1), tilejit::UserError);
  CHECK_THROWS_AS(Config{}.num_stages(9), tilejit::UserError);
}

TEST_CASE("early_views moves a view made after a loop in front of it, unless it needs the loop or lies in a loop") {
  // Three stores after a K loop: through a view of values from before the loop (moves), through a view whose
  // extent is the loop's result (stays), and, inside a tile loop, through a view rebuilt per tile (stays).
  auto k = tilejit::kernel("early_views", [](Tensor<i32, 1> ends, Tensor<f32, 2> a, Tensor<f32, 2> y, Meta<"BM"> BM) {
    auto end = load(ends, program_id(0));
    auto total = for_range(0, a.size(1).to<i32>(), 16, Scalar<i32>(0), [&](Scalar<i32> k, Scalar<i32> s) {
      return s + load(ends, k);
    });
    auto t = descriptor_load(a, {0, 0}, {BM, 16});
    descriptor_store(y.rows(0, end), {0, 0}, t);
    descriptor_store(y.rows(0, total), {0, 16}, t);
    for_range(0, 2, 1, [&](Scalar<i32> i) {
      auto e2 = load(ends, i);
      for_range(0, 4, 1, [&](Scalar<i32> j) { store(ends, j + 8, e2); });
      descriptor_store(y.rows(0, e2), {i * BM, 32}, t);
    });
  });
  const auto l = tilejit::passes::lower_until(*k.trace(Config{{"BM", 16}}), tilejit::codegen::Options{}, "early_views");
  const auto info = tilejit::passes::analyze(l.graph);
  std::vector<tilejit::ir::NodeId> loops, views;
  for (size_t i = 0; i < l.graph.size(); ++i) {
    const auto id = static_cast<tilejit::ir::NodeId>(i);
    if (info.position[i] < 0) continue;
    if (l.graph.node(id).op == Op::For) loops.push_back(id);
    if (l.graph.node(id).op == Op::MakeView) views.push_back(id);
  }
  REQUIRE(loops.size() == 3);  // the sum, the tile loop and the loop inside it
  REQUIRE(views.size() == 3);
  std::sort(views.begin(), views.end(), [&](auto x, auto y) { return info.position[static_cast<size_t>(x)] < info.position[static_cast<size_t>(y)]; });
  auto pos = [&](tilejit::ir::NodeId id) { return info.position[static_cast<size_t>(id)]; };
  const auto first_loop = *std::min_element(loops.begin(), loops.end(), [&](auto x, auto y) { return pos(x) < pos(y); });
  CHECK(pos(views[0]) < pos(first_loop));   // rows(0, end): built before the sum's loop
  CHECK(pos(views[1]) > pos(first_loop));   // rows(0, total) needs the loop's result
  CHECK(info.in_loop(views[2]));            // rows(0, e2) stays in the tile loop, after the loop inside it
  const auto inner = std::find_if(loops.begin(), loops.end(), [&](auto x) { return info.loop[static_cast<size_t>(x)] != tilejit::ir::kNoNode; });
  REQUIRE(inner != loops.end());
  CHECK(pos(views[2]) > pos(*inner));
}

TEST_CASE("early_views leaves a view whose scalars another view moves in front of a later loop") {
  // `s` is made after the first loop. View a also needs a load made after it, so it (and `s`) move in front of the
  // second loop; view b needs only `s` and would go in front of the first loop, before `s`: it stays.
  auto k = tilejit::kernel("early_views_clash", [](Tensor<i32, 1> ends, Tensor<f32, 2> a, Tensor<f32, 2> y) {
    auto t = descriptor_load(a, {0, 0}, {16, 16});
    auto first = for_range(0, 4, 1, Scalar<i32>(0), [&](Scalar<i32> k, Scalar<i32> acc) { return acc + load(ends, k); });
    store(ends, 8, first);
    auto s = program_id(0) * 2 + 16;
    auto late = load(ends, 9);
    for_range(0, 4, 1, [&](Scalar<i32> k) { store(ends, k + 10, k); });
    descriptor_store(y.rows(0, s + late), {0, 0}, t);
    descriptor_store(y.rows(0, s), {0, 16}, t);
  });
  const auto l = tilejit::passes::lower_until(*k.trace(Config{}), tilejit::codegen::Options{}, "early_views");
  const auto info = tilejit::passes::analyze(l.graph);
  int views_after_first = 0, views = 0;
  tilejit::ir::NodeId first_loop = tilejit::ir::kNoNode;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (info.position[i] >= 0 && l.graph.node(static_cast<tilejit::ir::NodeId>(i)).op == Op::For &&
        (first_loop == tilejit::ir::kNoNode || info.position[i] < info.position[static_cast<size_t>(first_loop)]))
      first_loop = static_cast<tilejit::ir::NodeId>(i);
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (info.position[i] >= 0 && l.graph.node(static_cast<tilejit::ir::NodeId>(i)).op == Op::MakeView) {
      ++views;
      views_after_first += info.position[i] > info.position[static_cast<size_t>(first_loop)];
    }
  CHECK(views == 2);
  CHECK(views_after_first == 2);  // neither went in front of the first loop, ahead of `s`
  CHECK_NOTHROW(tilejit::passes::lower(*k.trace(Config{}), tilejit::codegen::Options{}));
}

TEST_CASE("overlap_products: the ring serves the blocks before and after the rotated loop; no tile of their own") {
  const auto attention = tilejit::samples::attention_kernel();
  for (bool roles : {false, true}) {
    CAPTURE(roles);
    const Config c = Config{{"BM", 64}, {"BN", 64}, {"D", 64}}.num_warps(4).num_stages(2).warp_specialize(roles);
    const auto plain = lower(attention, c);
    const auto l = lower(attention, Config(c).overlap_products());
    REQUIRE(l.pipe.loops.size() == 1);
    const auto& [f, p] = *l.pipe.loops.begin();
    REQUIRE(p.first != tilejit::ir::kNoNode);
    REQUIRE(p.last != tilejit::ir::kNoNode);
    CHECK(l.graph.node(p.first).op == tilejit::ir::Op::If);
    CHECK(l.info.position[static_cast<size_t>(p.first)] < l.info.position[static_cast<size_t>(f)]);
    CHECK(l.info.position[static_cast<size_t>(p.last)] > l.info.position[static_cast<size_t>(f)]);
    // The first block's K and the last block's V: each paired with the loop's load of the same tensor.
    REQUIRE(l.pipe.ring_twin.size() == 2);
    for (const auto& [x, twin] : l.pipe.ring_twin) {
      CHECK(l.pipe.loop_of.at(x) == f);
      CHECK(std::count(p.loads.begin(), p.loads.end(), twin) == 1);
      CHECK(l.graph.operand(x, 0) == l.graph.operand(twin, 0));
      CHECK(l.smem.loads.at(x).buffer == l.smem.loads.at(twin).buffer);
    }
    CHECK(l.smem.total_bytes == plain.smem.total_bytes);
    CHECK(l.smem.buffers.size() == plain.smem.buffers.size());
    CHECK(l.roles.on() == roles);
    // The ring starts before the first block: its prologue comes before that block's if.
    int begin = -1;
    for (size_t i = 0; i < l.graph.size(); ++i)
      if (l.graph.node(static_cast<tilejit::ir::NodeId>(i)).op == tilejit::ir::Op::PipeBegin) begin = l.info.position[i];
    CHECK(begin >= 0);
    CHECK(begin < l.info.position[static_cast<size_t>(p.first)]);
  }
  // A load outside the loop that merely looks like one of its loads (the user's own, not marked) keeps its tile.
  const auto own = tilejit::kernel("own_first_block", [](Tensor<bf16, 2> q, Tensor<bf16, 2> k, Tensor<f32, 2> o, Meta<"B"> B) {
    auto qt = descriptor_load(q, {0, 0}, {64, 64});
    auto s0 = dot(qt, descriptor_load(k, {0, 0}, {B, 64}).trans());
    auto acc = for_range(B, k.size(0).to<i32>(), B, s0, [&](Scalar<i32> j, Value<f32, 2> acc) {
      return dot(qt, descriptor_load(k, {j, 0}, {B, 64}).trans(), acc);
    });
    descriptor_store(o, {0, 0}, acc);
  });
  const auto l = lower(own, Config{{"B", 64}}.num_warps(4).num_stages(2).overlap_products());
  CHECK(l.pipe.ring_twin.empty());
  for (const auto& [f, p] : l.pipe.loops) CHECK(p.first == tilejit::ir::kNoNode);
}

TEST_CASE("plan_cluster: which loads a cluster may multicast, what the programs compare, and where it does not apply") {
  auto gemm = tilejit::kernel("cluster_plan_gemm", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM,
                                                      Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a, {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  const Config tiles = Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_stages(3);
  {
    const auto plain = lower(gemm, tiles);
    CHECK(plain.cluster.size() == 1);
    CHECK_FALSE(plain.cluster.multicast());
    CHECK(plain.smem.cluster_empty == -1);
    CHECK(tilejit::passes::describe_cluster(plain).empty());
  }
  const auto l = lower(gemm, Config(tiles).cluster(2, 1));
  REQUIRE(l.cluster.multicast());
  const auto loads = tma_ops(l, Op::DescLoad);
  REQUIRE(loads.size() == 2);
  REQUIRE(l.cluster.loads.size() == 2);
  const auto& ma = l.cluster.loads[0];
  const auto& mb = l.cluster.loads[1];
  CHECK(ma.load == loads[0]);
  CHECK(mb.load == loads[1]);
  CHECK(ma.issuer == 0);
  CHECK(mb.issuer == 1);  // two candidates share the issuing
  // The bounds: hi is a.size(1) (lo and step are constants); A needs m, B needs n, each beside the bounds.
  CHECK(l.cluster.bound_keys == 1);
  REQUIRE(l.cluster.keys.size() == 3);
  CHECK(ma.keys == std::vector<int>{0, 1});
  CHECK(mb.keys == std::vector<int>{0, 2});
  // Cluster empty barriers after the ring's, two arrivals each, then the exchange barrier and its slots.
  CHECK(l.smem.cluster_empty == 3);
  for (int s = 0; s < 3; ++s) CHECK(l.smem.barrier_arrivals.at(l.smem.cluster_empty + s) == 2);
  CHECK(l.smem.exchange_barrier == 6);
  CHECK(l.smem.num_barriers == 7);
  CHECK(l.smem.exchange_offset >= 0);
  CHECK(l.smem.exchange_offset + 24 <= l.smem.barrier_offset);
  const std::string text = tilejit::passes::describe_cluster(l);
  CHECK(text.find("cluster: 2 x 1 programs; loop %") != std::string::npos);
  CHECK(text.find("issued by rank 1") != std::string::npos);
  const std::string code = tilejit::codegen::generate(*gemm.trace(Config(tiles).cluster(2, 1))).source;
  CHECK(code.find("__cluster_dims__(2, 1, 1)") != std::string::npos);

  // Not applied: a persistent kernel (the loop lies in the tile loop), a device-built view's loads, and a kernel
  // without a pipelined loop; each says why, and still runs in clusters.
  const auto persistent = lower(tilejit::samples::persistent_matmul_kernel(),
                                Config{{"BM", 128}, {"BN", 128}, {"BK", 64}}.num_stages(3).cluster(2, 1));
  CHECK_FALSE(persistent.cluster.multicast());
  CHECK(persistent.cluster.not_applied == "its pipelined loops lie in loops or ifs");
  auto rows = tilejit::kernel("cluster_plan_rows", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Scalar<i32> end,
                                                      Meta<"BM"> BM, Meta<"BN"> BN, Meta<"BK"> BK) {
    auto m = program_id(0) * BM, n = program_id(1) * BN;
    auto acc = for_range(0, a.size(1).to<i32>(), BK, zeros<f32>({BM, BN}), [&](Scalar<i32> k, Value<f32, 2> acc) {
      return dot(descriptor_load(a.rows(0, end), {m, k}, {BM, BK}), descriptor_load(b, {k, n}, {BK, BN}), acc);
    });
    descriptor_store(c, {m, n}, acc);
  });
  const auto r = lower(rows, Config(tiles).cluster(1, 2));
  REQUIRE(r.cluster.loads.size() == 1);  // only B's descriptor is the same in every program
  const auto kind_of = [&](tilejit::ir::NodeId load) { return r.tma.descriptors.at(static_cast<size_t>(r.tma.of.at(load))).kind; };
  CHECK(kind_of(r.cluster.loads[0].load) == DescKind::Host);
  for (auto load : tma_ops(r, Op::DescLoad))
    if (load != r.cluster.loads[0].load) CHECK(kind_of(load) == DescKind::Device);
  CHECK(r.cluster.loads[0].issuer == 0);
  auto copy = tilejit::kernel("cluster_plan_copy", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    descriptor_store(y, {program_id(0) * 32, 0}, descriptor_load(x, {program_id(0) * 32, 0}, {32, 32}));
  });
  const auto c = lower(copy, Config{}.cluster(2, 1));
  CHECK(c.cluster.not_applied == "the kernel has no pipelined loop");
  CHECK(tilejit::passes::describe_cluster(c) == "cluster: 2 x 1 programs, no load multicast, because the kernel has no pipelined loop\n");
}

TEST_CASE("the remedy a spill warning names: producer_registers(24) where two consumer warpgroups have 232 registers") {
  auto k = tilejit::samples::jagged_hstu_kernel();
  const Config base = Config{{"BM", 128}, {"BN", 128}, {"D", 128}, {"CAUSAL", 0}, {"BIAS", 1}}.num_warps(8).num_stages(2);
  const auto roles = tilejit::codegen::generate(*k.trace(Config(base).warp_specialize()));
  CHECK(roles.spill_remedy.find("Config::producer_registers(24) gives its consumer warpgroups 240 registers instead of 232") !=
        std::string::npos);
  CHECK(roles.spill_remedy.find("more warps (Config::num_warps)") != std::string::npos);
  // Already asked for, or no roles: only the general remedy.
  for (const Config& c : {Config(base).warp_specialize().producer_registers(24), Config(base).warp_specialize(false)}) {
    CAPTURE(c.str());
    const auto gen = tilejit::codegen::generate(*k.trace(c));
    CHECK(gen.spill_remedy.find("producer_registers") == std::string::npos);
    CHECK(gen.spill_remedy.find("more warps (Config::num_warps)") != std::string::npos);
  }
  // One consumer warpgroup already gets 240 with a producer of 40: nothing to gain.
  const auto one = tilejit::codegen::generate(
      *k.trace(Config{{"BM", 64}, {"BN", 64}, {"D", 128}, {"CAUSAL", 0}, {"BIAS", 1}}.num_warps(4).num_stages(3).warp_specialize()));
  CHECK(one.spill_remedy.find("producer_registers") == std::string::npos);
}

TEST_CASE("a dot with M below 64 is padded to the m64 instruction only when a is a K-major TMA tile") {
  auto k = tilejit::kernel("skinny_dots", [](Tensor<bf16, 2> a, Tensor<bf16, 2> b, Tensor<f32, 2> c, Meta<"BM"> BM, Meta<"MAJOR"> MAJOR) {
    auto tb = descriptor_load(b, {0, 0}, {64, 64});
    auto ta = [&] {  // a as [M, K] (K-major), or loaded [K, M] and transposed (M-major)
      if (MAJOR == 0) return descriptor_load(a, {0, 0}, {BM, 64});
      return descriptor_load(a, {0, 0}, {64, BM}).trans();
    }();
    descriptor_store(c, {0, 0}, dot(ta, tb, zeros<f32>({BM, 64})));
  });
  const auto k_major = tilejit::codegen::generate(*k.trace(Config{{"BM", 16}, {"MAJOR", 0}}));
  CHECK(k_major.notes.empty());
  CHECK(k_major.source.find("m64n64k16 (M = 16: rows 16-63 of the instruction are padding)") != std::string::npos);
  CHECK(k_major.source.find("and 6144 bytes after it that the m64 wgmma reads for its padding rows") != std::string::npos);
  const auto m_major = tilejit::codegen::generate(*k.trace(Config{{"BM", 16}, {"MAJOR", 1}}));
  REQUIRE(m_major.notes.size() == 1);
  CHECK(m_major.notes[0].text.find("M=16 below 64 with an M-major operand a") != std::string::npos);
  // 64 rows and more need no padding: no bytes past the tile.
  CHECK(tilejit::codegen::generate(*k.trace(Config{{"BM", 64}, {"MAJOR", 0}})).source.find("wgmma reads for its padding") ==
        std::string::npos);
}
