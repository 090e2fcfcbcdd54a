// Sample 11: a mixture-of-experts grouped GEMM, y = x @ w_e^T for the rows of x routed to expert e.
//
// The tokens are sorted by expert: expert e owns rows offsets[e] .. offsets[e + 1] - 1 of x (one expert owns
// none, one owns a single row). Two kernels from sample_kernels.h run on the same stream:
// moe_tile_schedule_kernel() turns the offsets into a list of tiles on the device (the host never reads them,
// so the launch needs no synchronization), and moe_grouped_matmul_kernel() computes one output tile per
// program from that list on the tensor cores, storing each tile only up to its expert's last row. Launched with
// as many programs as the row count could need, the programs of unused slots do nothing. The result is checked
// against a plain C++ loop in double precision, within bf16's rounding, and the schedule against one computed
// on the host.
#include <cmath>
#include <cstdio>
#include <vector>

#include "sample_buffer.h"
#include "sample_kernels.h"

using namespace tilejit::samples;

int main() try {
  auto schedule = moe_tile_schedule_kernel();
  auto matmul = moe_grouped_matmul_kernel();
  const std::vector<int32_t> rows_per_expert = {70, 0, 1, 130, 64, 35};
  const int64_t E = static_cast<int64_t>(rows_per_expert.size()), N = 192, K = 128, BM = 64, BN = 128;
  SampleBuffer<int32_t> offsets(E + 1);
  for (int64_t e = 0; e < E; ++e) offsets[e + 1] = offsets[e] + rows_per_expert[e];
  const int64_t T = offsets[E];
  // Every expert's rows could start a partial tile: cdiv(T, BM) + E slots always suffice.
  const int64_t slots = tilejit::cdiv(T, BM) + E;
  SampleBuffer<int32_t> tile_rows(slots, -2), tile_ends(slots, -2), tile_experts(slots, -2);
  SampleBuffer<tilejit::bfloat16> x(T * K), w(E * N * K), y(T * N);
  for (int64_t i = 0; i < T * K; ++i) x[i] = tilejit::bfloat16(std::sin(0.37f * static_cast<float>(i)));
  for (int64_t i = 0; i < E * N * K; ++i) w[i] = tilejit::bfloat16(std::cos(0.11f * static_cast<float>(i)) * 0.25f);
  for (auto* b : {&offsets, &tile_rows, &tile_ends, &tile_experts}) b->to_device();
  x.to_device();
  w.to_device();
  y.to_device();

  auto i32_view = [](SampleBuffer<int32_t>& b) { return tilejit::TensorView<i32, 1>(b.kernel_ptr(), {static_cast<int64_t>(b.size())}); };
  const int64_t BJ = 16;
  schedule.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(tilejit::cdiv(slots, BJ))), tilejit::Config{{"BM", BM}, {"EP", 8}, {"BJ", BJ}},
                  i32_view(offsets), i32_view(tile_rows), i32_view(tile_ends), i32_view(tile_experts));
  // 64 x 128 tiles on one warpgroup, 64-deep K steps, 3 stages; groups of 4 slots.
  const tilejit::Config config = tilejit::Config{{"BM", BM}, {"BN", BN}, {"BK", 64}, {"GM", 4}}.num_warps(4).num_stages(3);
  matmul.launch(nullptr, tilejit::dim3(static_cast<uint32_t>(slots * tilejit::cdiv(N, BN))), config,
                tilejit::TensorView<bf16, 2>(x.kernel_ptr(), {T, K}), tilejit::TensorView<bf16, 2>(w.kernel_ptr(), {E * N, K}),
                tilejit::TensorView<bf16, 2>(y.kernel_ptr(), {T, N}), i32_view(tile_rows), i32_view(tile_ends), i32_view(tile_experts));
  if (tilejit::has_gpu()) tilejit::synchronize(nullptr);
  for (auto* b : {&tile_rows, &tile_ends, &tile_experts}) b->to_host();
  y.to_host();

  int64_t bad_slots = 0, j = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t r = offsets[e]; r < offsets[e + 1]; r += BM, ++j)
      bad_slots += tile_rows[j] != r || tile_ends[j] != offsets[e + 1] || tile_experts[j] != e;
  for (; j < slots; ++j) bad_slots += tile_rows[j] != -1 || tile_ends[j] != -1 || tile_experts[j] != -1;
  double err2 = 0, ref2 = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t i = offsets[e]; i < offsets[e + 1]; ++i)
      for (int64_t n = 0; n < N; ++n) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += static_cast<double>(static_cast<float>(x[i * K + k])) * static_cast<float>(w[(e * N + n) * K + k]);
        const double got = static_cast<float>(y[i * N + n]);
        err2 += (got - want) * (got - want);
        ref2 += want * want;
      }
  const double rel = std::sqrt(err2 / ref2);
  const bool ok = bad_slots == 0 && rel < 1.0 / 256;  // bf16 keeps 8 significant bits
  std::printf("%s sample_11_moe_grouped_gemm on %s: %lld experts, %lld rows, N %lld, K %lld, %lld wrong schedule slots, relative error %.2e\n",
              ok ? "PASS" : "FAIL", run_target().c_str(), static_cast<long long>(E), static_cast<long long>(T), static_cast<long long>(N),
              static_cast<long long>(K), static_cast<long long>(bad_slots), rel);
  return ok ? 0 : 1;
} catch (const tilejit::Error& e) {
  std::printf("FAIL sample_11_moe_grouped_gemm: %s\n", e.what());
  return 1;
}
