#!/usr/bin/env bash
# One call on a GPU machine: GPU tests, compute-sanitizer on the samples, benchmarks against torch and
# Triton in the same run, and a short table at the end. Expects a Release build in $BUILD (default
# build-gpu, made with: cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C build-gpu).
# The PyTorch sample runs when $BUILD/samples/python holds its extension module, built for the Python of this
# machine: add -DPython_EXECUTABLE=<python of that version, with nanobind> to the cmake line (samples/python).
# PARTS selects sections (default: all of them), so that the whole run can be split over several calls of
# a machine with a time limit per call: tests sanitizer torch fuzz fuzz_products bench.
# FUZZ_BEGIN / FUZZ_END (default 0 / 10000) pick the fuzzer's seeds, FUZZ_PRODUCTS_BEGIN / FUZZ_PRODUCTS_END
# (default 0 / 10000) those of the programs with products, and FUZZ_SECONDS (default 300) bounds each run's time.
set -uo pipefail
cd "$(dirname "$0")/.."
PARTS=${PARTS:-tests sanitizer torch fuzz fuzz_products bench}
want() { [[ " $PARTS " == *" $1 "* ]]; }
BUILD=${BUILD:-build-gpu}
OUT=${OUT:-/tmp/tilejit-out}
mkdir -p "$OUT"
export TILEJIT_CACHE_DIR=${TMPDIR:-/tmp}/tilejit-cache-run  # outside $OUT: thousands of small files
summary=()

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
# GPU, driver and date of the run: the captions of bench/report.py's charts.
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 | sed 's/, / (driver /; s/$/)/'
  date -u +%Y-%m-%d; } >"$OUT/device.txt"
"$BUILD/tools/tilejit-info" | tee "$OUT/info.txt"

if want tests; then
echo "== gpu tests (one process per test case, so that a fault in one cannot hide the others)"
gpu="$BUILD/tests/gpu/gpu_vs_interp"
: >"$OUT/gpu_tests.txt"
while IFS= read -r tc; do
  # doctest splits a filter at commas: escape them, and count a run that selects no test case as a failure.
  filter=${tc//,/\\,}
  log=$("$gpu" --test-case="$filter" 2>&1)
  rc=$?
  printf '%s\n' "$log" >>"$OUT/gpu_tests.txt"
  if [ "$rc" = 0 ] && ! grep -qE "test cases: +0 \|" <<<"$log"; then
    summary+=("PASS  $tc")
  else
    [ "$rc" = 0 ] && echo "gpu_vs_interp: the filter for '$tc' selected no test case" >>"$OUT/gpu_tests.txt"
    summary+=("FAIL  $tc")
    # Re-run the failing case under compute-sanitizer to name the faulting kernel and instruction.
    compute-sanitizer --tool memcheck --print-limit 5 "$gpu" --test-case="$filter" 2>&1 | grep -vE "^\[doctest\]" | head -n 60 >>"$OUT/gpu_failures.txt"
  fi
done < <("$gpu" --list-test-cases 2>/dev/null | grep '^gpu:')
grep -hE "^(TEST CASE|  |.*ERROR|.*CHECK)" "$OUT/gpu_tests.txt" | head -n 60
asserts=$(grep -E "assertions:" "$OUT/gpu_tests.txt" | awk '{p+=$5; f+=$8} END {print p " passed, " f " failed"}')
cases=$(grep -E "^tilejit gpu suite: [0-9]+ cases" "$OUT/gpu_tests.txt" | awk '{c+=$4; m+=$6} END {print c " cases run, " m " matched the interpreter"}')
summary+=("gpu_vs_interp: $cases; assertions $asserts")
fi

# fuzz_gpu over seeds [begin, end) of one family ($1: "" or --products), its log in $OUT/$2; a fault leaves the
# CUDA context unusable: fuzz_gpu then exits with status 3 and names the seed to resume from, and a new process
# goes on from there.
run_fuzz() {
  local flag=$1 log="$OUT/$2" begin=$3 end=$4 restarts=0 rc resume
  : >"$log"
  while [ "$begin" -lt "$end" ] && [ "$restarts" -le 5 ]; do
    "$BUILD/tests/fuzz/fuzz_gpu" $flag --seed-begin "$begin" --count $((end - begin)) --seconds "${FUZZ_SECONDS:-300}" >>"$log" 2>&1
    rc=$?
    resume=$(grep -oE "^resume: (--products )?--seed-begin [0-9]+" "$log" | tail -n 1 | awk '{print $NF}')
    if [ "$rc" = 3 ] && [ -n "$resume" ] && [ "$resume" -gt "$begin" ]; then begin=$resume; restarts=$((restarts + 1)); else break; fi
  done
  grep -E "^FAIL seed" "$log" | head -n 20
  summary+=("$(grep -E "^fuzz: [0-9]+ programs" "$log" | awk -v what="$5" -v file="$2" '{p+=$2; m+=$4; f+=$6; c+=$8; r+=$11} END {print what ": " p " programs, " m " mismatches, " f " faults, " c " compile failures, " r " refused (log: " file ")"}')")
}

if want fuzz; then
echo "== fuzz: random programs on the GPU and in the interpreter (tests/fuzz, docs/testing.md)"
run_fuzz "" fuzz.txt "${FUZZ_BEGIN:-0}" "${FUZZ_END:-10000}" fuzz
fi

if want fuzz_products; then
echo "== fuzz: random programs with products (tensor cores, loop nests, two products per loop) on the GPU and in the interpreter"
run_fuzz --products fuzz_products.txt "${FUZZ_PRODUCTS_BEGIN:-0}" "${FUZZ_PRODUCTS_END:-10000}" "fuzz (products)"
fi

if want sanitizer; then
echo "== compute-sanitizer on the samples: memcheck, racecheck, synccheck"
for s in "$BUILD"/samples/sample_*; do
  [ -x "$s" ] || continue
  for tool in memcheck racecheck synccheck; do
    log="$OUT/sanitizer_${tool}_$(basename "$s").txt"
    if compute-sanitizer --tool "$tool" --error-exitcode 3 "$s" >"$log" 2>&1; then
      summary+=("$tool $(basename "$s"): clean")
    else
      summary+=("$tool $(basename "$s"): FAILED (see $(basename "$log"))")
      tail -n 30 "$log"
    fi
  done
done
fi

if want torch; then
echo "== PyTorch tensors through DLPack (samples/python, built for this Python in $BUILD/samples/python)"
ext=$(ls "$BUILD"/samples/python/tilejit_torch_sample*.so 2>/dev/null | head -n 1)
if [ -n "$ext" ]; then
  PYTHONPATH="$(dirname "$ext")" python3 samples/python/check_torch.py 2>&1 | tee "$OUT/torch_sample.txt"
  case ${PIPESTATUS[0]} in
    0) summary+=("torch sample: PASS ($(tail -n 1 "$OUT/torch_sample.txt"))") ;;
    77) summary+=("torch sample: skipped ($(tail -n 1 "$OUT/torch_sample.txt"))") ;;
    *) summary+=("torch sample: FAILED (see torch_sample.txt)") ;;
  esac
else
  summary+=("torch sample: not built (no $BUILD/samples/python/tilejit_torch_sample*.so; see samples/python/CMakeLists.txt)")
fi
fi

if want bench; then
echo "== benchmarks"
# bench_launch runs with fresh nonces on an empty cache folder, so that it compiles kernels that
# no cache (ours or NVRTC's) has seen; a last run with the last nonce finds them in the disk cache
# (a new process), and only its first-launch line is kept.
export TILEJIT_CACHE_DIR=${TMPDIR:-/tmp}/tilejit-cache-launch
rm -rf "$TILEJIT_CACHE_DIR"
# The cold measurement is repeated in three processes (new nonces): the host's noise is several ms.
{ "$BUILD/bench/bench_tma"
  "$BUILD/bench/bench_softmax"
  "$BUILD/bench/bench_cross_entropy"
  "$BUILD/bench/bench_gemm"
  "$BUILD/bench/bench_attention"
  "$BUILD/bench/bench_attention_backward"
  "$BUILD/bench/bench_hstu"
  "$BUILD/bench/bench_jagged_attention"
  "$BUILD/bench/bench_moe"
  "$BUILD/bench/bench_prefetch"
  for run in 1 2 3; do
    nonce=$(( ($(date +%s%N) / 1000 + run) % 1000003 ))
    if [ "$run" = 3 ]; then "$BUILD/bench/bench_launch" --nonce "$nonce"; else "$BUILD/bench/bench_launch" --nonce "$nonce" --first-launch-only; fi
  done
  "$BUILD/bench/bench_launch" --nonce "$nonce" --first-launch-only |
    sed 's/"bench": "first_launch", "impl": "tilejit"/"bench": "first_launch", "impl": "tilejit_disk_hit"/'; } 2>&1 | tee "$OUT/bench_tilejit.jsonl"
# Checked kernels (TILEJIT_DEBUG=1): the cost of the checks on the bandwidth benchmarks.
TILEJIT_DEBUG=1 "$BUILD/bench/bench_tma" 2>&1 | sed 's/"impl": "tilejit"/"impl": "tilejit_debug"/' | tee -a "$OUT/bench_tilejit.jsonl"
"$BUILD/tools/tilejit-cache" stats | tee -a "$OUT/cache_stats.txt"
{ python3 bench/peers.py
  python3 bench/peers.py --gemm
  python3 bench/peers.py --attention
  python3 bench/peers.py --attention-backward
  python3 bench/peers.py --hstu
  python3 bench/peers.py --jagged-attention
  python3 bench/peers.py --cross-entropy
  python3 bench/peers.py --moe; } 2>&1 | tee "$OUT/bench_peers.jsonl"
# The autotuner: launch cost, and tuning cost in new processes (each side uses cache folders of its own).
{ "$BUILD/bench/bench_autotune"; python3 bench/peers.py --autotune; } 2>&1 | tee "$OUT/bench_autotune.jsonl"
fi

echo
echo "================ summary ================"
printf '%s\n' "${summary[@]}"
# Text tables here; CSV and PNG charts (matplotlib) in $OUT/report. From a saved copy of $OUT elsewhere:
#   python3 bench/report.py --from SAVED_OUT --write docs/bench
if want bench; then
  python3 bench/report.py --from "$OUT" --write "$OUT/report"
  echo; echo "disk cache after the bench_launch runs:"; cat "$OUT/cache_stats.txt"
fi
