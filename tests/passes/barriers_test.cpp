// Unit tests of passes::plan_barriers: the CTA barriers between ops that use the scratch arena, and
// before a TMA load reissued in a loop, on kernels small enough to read the plan by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <tilejit/tilejit.h>

#include "tilejit/passes/lowering.h"

using namespace tilejit::dsl;
using tilejit::Config;
using tilejit::ir::NodeId;
using tilejit::ir::Op;

namespace {

template <class K>
tilejit::passes::Lowered lower(const K& k) {
  return tilejit::passes::lower(*k.trace(Config{}), tilejit::codegen::Options{});
}

/// The reachable nodes of op `op`, in program order.
std::vector<NodeId> nodes_of(const tilejit::passes::Lowered& l, Op op) {
  std::vector<std::pair<int, NodeId>> v;
  for (size_t i = 0; i < l.graph.size(); ++i)
    if (l.graph.node(static_cast<NodeId>(i)).op == op && l.info.position[i] >= 0)
      v.push_back({l.info.position[i], static_cast<NodeId>(i)});
  std::sort(v.begin(), v.end());
  std::vector<NodeId> ids;
  for (const auto& [p, id] : v) ids.push_back(id);
  return ids;
}

}  // namespace

TEST_CASE("barriers: a second scratch user waits for the first one's readers; the first waits for nobody") {
  // 256 elements over 128 threads: each sum combines the partials of 4 warps through the scratch arena.
  auto k = tilejit::kernel("two_sums", [](Tensor<f32, 1> x, Tensor<f32, 1> y) {
    auto t = descriptor_load(x, {0}, {256});
    auto a = sum(t, 0);
    auto b = max(t, 0);
    descriptor_store(y, {0}, t * a + b);
  });
  const auto l = lower(k);
  const auto sums = nodes_of(l, Op::ReduceSum), maxes = nodes_of(l, Op::ReduceMax);
  REQUIRE(sums.size() == 1);
  REQUIRE(maxes.size() == 1);
  CHECK(l.barriers.scratch_users.count(sums[0]) == 1);
  CHECK(l.barriers.scratch_users.count(maxes[0]) == 1);
  CHECK(l.barriers.before_scratch.count(sums[0]) == 0);
  CHECK(l.barriers.before_scratch.count(maxes[0]) == 1);
  CHECK(l.barriers.before_issue.empty());  // the load is not in a loop
}

TEST_CASE("barriers: a load reissued in a loop waits for every thread; that barrier also ends the arena's reads") {
  auto k = tilejit::kernel("sum_loop", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> n) {
    auto total = for_range(0, n, 256, zeros<f32>({256}), [&](Scalar<i32> i, Value<f32, 1> acc) {
      auto t = descriptor_load(x, {i}, {256});
      return acc + t * sum(t, 0);
    });
    descriptor_store(y, {0}, total);
  });
  const auto l = lower(k);
  const auto sums = nodes_of(l, Op::ReduceSum), loads = nodes_of(l, Op::DescLoad);
  REQUIRE(sums.size() == 1);
  REQUIRE(loads.size() == 1);
  // Every thread reads the tile from registers after its wait, and the next iteration's load overwrites it:
  // nothing in the iteration before the load is a barrier, so one precedes its issue; that barrier also ends
  // the previous iteration's reads of the scratch arena, so the sum after it needs none of its own.
  CHECK(l.barriers.before_issue.count(loads[0]) == 1);
  CHECK(l.barriers.scratch_users.count(sums[0]) == 1);
  CHECK(l.barriers.before_scratch.count(sums[0]) == 0);
}

TEST_CASE("barriers: a load reissued after a barrier of the same iteration needs none of its own, unless that one is in an if") {
  // The sum of the loop-carried row (across warps: it passes a barrier) comes before the load.
  auto k = tilejit::kernel("sum_then_load", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> n) {
    auto total = for_range(0, n, 256, zeros<f32>({256}), [&](Scalar<i32> i, Value<f32, 1> acc) {
      auto s = sum(acc, 0);
      auto t = descriptor_load(x, {i}, {256});
      return t + s;
    });
    descriptor_store(y, {0}, total);
  });
  const auto l = lower(k);
  const auto loads = nodes_of(l, Op::DescLoad);
  REQUIRE(loads.size() == 1);
  CHECK(l.barriers.before_issue.empty());
  // The sum is the body's first op: the previous iteration's sum may still be reading the arena.
  const auto sums = nodes_of(l, Op::ReduceSum);
  REQUIRE(sums.size() == 1);
  CHECK(l.barriers.before_scratch.count(sums[0]) == 1);

  // The same sum inside an if: not every iteration passes it, so the load keeps its barrier.
  auto c = tilejit::kernel("sum_in_if_then_load", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> n) {
    auto total = for_range(0, n, 256, zeros<f32>({256}), [&](Scalar<i32> i, Value<f32, 1> acc) {
      auto s = if_else(i > 256, [&] { return sum(acc, 0); }, [&] { return Scalar<f32>(0.0f); });
      auto t = descriptor_load(x, {i}, {256});
      return t + s;
    });
    descriptor_store(y, {0}, total);
  });
  const auto lc = lower(c);
  const auto cloads = nodes_of(lc, Op::DescLoad);
  REQUIRE(cloads.size() == 1);
  CHECK(lc.barriers.before_issue.count(cloads[0]) == 1);
}

TEST_CASE("barriers: an op that reads its operand in place from a TMA tile writes no scratch") {
  // A transpose of a loaded tile reads it where TMA put it; the sum after it is the first scratch user.
  auto k = tilejit::kernel("in_place", [](Tensor<f32, 2> x, Tensor<f32, 2> y) {
    auto t = descriptor_load(x, {0, 0}, {32, 64});
    auto p = t.trans();
    descriptor_store(y, {0, 0}, p + sum(sum(p, 1), 0));
  });
  const auto l = lower(k);
  const auto perms = nodes_of(l, Op::Permute);
  REQUIRE(perms.size() == 1);
  CHECK(l.barriers.scratch_users.count(perms[0]) == 0);
  for (NodeId s : nodes_of(l, Op::ReduceSum))
    if (l.barriers.scratch_users.count(s)) CHECK(l.barriers.before_scratch.count(s) == 0);
}

TEST_CASE("barriers: any barrier every thread passes ends the scratch arena's pending reads; a load that needs none does not") {
  // The staged TMA store passes a barrier after writing its tile: the max after it waits for nobody.
  auto k = tilejit::kernel("store_between", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Tensor<f32, 1> z) {
    auto t = descriptor_load(x, {0}, {256});
    auto a = sum(t, 0);
    descriptor_store(y, {0}, t * a);
    descriptor_store(z, {0}, t + max(t, 0));
  });
  const auto l = lower(k);
  const auto maxes = nodes_of(l, Op::ReduceMax);
  REQUIRE(maxes.size() == 1);
  CHECK(l.barriers.scratch_users.count(maxes[0]) == 1);
  CHECK(l.barriers.before_scratch.count(maxes[0]) == 0);

  // In a loop: the first sum's barrier lets the load go without one, so nothing ends the first sum's reads
  // before the second sum writes: that one needs its barrier.
  auto c = tilejit::kernel("sum_load_sum", [](Tensor<f32, 1> x, Tensor<f32, 1> y, Scalar<i32> n) {
    auto total = for_range(0, n, 256, zeros<f32>({256}), [&](Scalar<i32> i, Value<f32, 1> acc) {
      auto s = sum(acc, 0);
      auto t = descriptor_load(x, {i}, {256});
      return t * sum(t, 0) + s;
    });
    descriptor_store(y, {0}, total);
  });
  const auto lc = lower(c);
  const auto sums = nodes_of(lc, Op::ReduceSum);
  REQUIRE(sums.size() == 2);
  CHECK(lc.barriers.before_issue.empty());
  CHECK(lc.barriers.before_scratch.count(sums[0]) == 1);  // the previous iteration's second sum
  CHECK(lc.barriers.before_scratch.count(sums[1]) == 1);
}
