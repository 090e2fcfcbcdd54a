// Helpers shared by the benchmarks: host time per launch of two launchers measured side by side.
#pragma once

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "tilejit/runtime/memory.h"

namespace bench {

inline constexpr int kLaunches = 20000;

// Microseconds per launch of `a` and of `b` (medians of 7 batches of kLaunches), the batches of
// the two interleaved so that clock and queue drift treat both alike.
template <class A, class B>
std::pair<double, double> us_per_launch(A&& a, B&& b) {
  for (int i = 0; i < 1000; ++i) a(), b();  // warm-up
  tilejit::synchronize(nullptr);
  const auto batch = [](auto& launch) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) launch();
    tilejit::synchronize(nullptr);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
           kLaunches;
  };
  std::vector<double> ta, tb;
  for (int r = 0; r < 7; ++r) {
    ta.push_back(batch(a));
    tb.push_back(batch(b));
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

}  // namespace bench
