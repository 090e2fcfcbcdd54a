#!/usr/bin/env bash
# One call on a GPU machine: GPU tests, compute-sanitizer on the samples, benchmarks against torch and
# Triton in the same run, and a short table at the end. Expects a Release build in $BUILD (default
# build-gpu, made with: cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build-gpu).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-/tmp/tilejit-out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=$OUT/cache
summary=()

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
"$BUILD/tools/tilejit-info" | tee "$OUT/info.txt"

echo "== gpu tests"
"$BUILD/tests/gpu/gpu_vs_interp" 2>&1 | tee "$OUT/gpu_tests.txt" | tail -n 40
gpu_line=$(grep -E "test cases:" "$OUT/gpu_tests.txt" | tail -n 1)
summary+=("gpu_vs_interp: $gpu_line")

echo "== compute-sanitizer memcheck on the samples"
for s in "$BUILD"/samples/sample_*; do
  [ -x "$s" ] || continue
  if compute-sanitizer --tool memcheck --error-exitcode 3 "$s" >"$OUT/sanitizer_$(basename "$s").txt" 2>&1; then
    summary+=("memcheck $(basename "$s"): clean")
  else
    summary+=("memcheck $(basename "$s"): FAILED (see sanitizer_$(basename "$s").txt)")
    tail -n 30 "$OUT/sanitizer_$(basename "$s").txt"
  fi
done

echo "== benchmarks"
"$BUILD/bench/bench_tma" 2>&1 | tee "$OUT/bench_tilejit.jsonl"
python3 bench/peers.py 2>&1 | tee "$OUT/bench_peers.jsonl"

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
python3 bench/report.py "$OUT/bench_tilejit.jsonl" "$OUT/bench_peers.jsonl"
