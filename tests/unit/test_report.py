#!/usr/bin/env python3
"""bench/report.py on a small run: its tables as CSV (values, ratios, the prefetch gains per tile size) and, where
matplotlib is installed, one PNG per chart."""
import csv
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import report  # noqa: E402

ROWS = [
    {"bench": "copy", "impl": "tilejit", "config": "BM=64, BN=128", "ms": 1.0, "gbps": 4000.0},
    {"bench": "copy", "impl": "torch", "ms": 1.0, "gbps": 3200.0},
    {"bench": "copy", "impl": "triton", "ms": 1.0, "gbps": 5000.0},
    {"bench": "launch", "impl": "tilejit", "grid": 1, "us": 3.0},
    {"bench": "launch", "impl": "raw_cuLaunchKernel", "grid": 1, "us": 2.5},
    {"bench": "prefetch", "impl": "none", "config": "BT=16, C=128", "ms": 0.2, "gbps": 1000.0},
    {"bench": "prefetch", "impl": "upfront_tensormap", "config": "BT=16, C=128", "ms": 0.19, "gbps": 1100.0},
    {"bench": "prefetch", "impl": "none", "config": "BT=64, C=128", "ms": 0.2, "gbps": 2000.0},
    {"bench": "prefetch", "impl": "upfront_l2", "config": "BT=64, C=128", "ms": 0.2, "gbps": 1900.0,
     "error": "3 wrong elements"},
    {"bench": "attention", "impl": "tilejit", "s": 1024, "d": 64, "heads": 64, "config": "BM=128, BN=64, D=64, num_warps=8, num_stages=2",
     "ms": 1.0, "tflops": 300.0},
    {"bench": "attention", "impl": "tilejit_best", "s": 1024, "d": 64, "heads": 64,
     "config": "BM=128, BN=64, D=64, num_warps=8, num_stages=2", "ms": 1.0, "tflops": 300.0, "rel_err": 0.001},
    {"bench": "attention", "impl": "torch_sdpa", "s": 1024, "d": 64, "heads": 64, "config": "", "ms": 0.8, "tflops": 400.0},
    {"bench": "attention", "impl": "triton", "s": 1024, "d": 64, "heads": 64, "config": "num_stages=2, BM=128, BN=64, D=64, num_warps=8",
     "ms": 1.2, "tflops": 250.0},
    {"bench": "moe", "shape": "mixtral", "impl": "tilejit_best", "experts": 8, "rows": 16384, "n": 14336, "k": 4096,
     "config": "BM=128, BN=256", "ms": 1.0, "tflops": 750.0, "rel_err": 0.001},
    {"bench": "moe", "shape": "mixtral", "impl": "torch_loop", "experts": 8, "rows": 16384, "n": 14336, "k": 4096, "ms": 1.0,
     "tflops": 800.0},
    {"bench": "moe", "shape": "mixtral", "impl": "torch_grouped_mm", "experts": 8, "rows": 16384, "n": 14336, "k": 4096, "ms": 1.0,
     "tflops": 600.0},
]


def read(folder, name):
    with open(os.path.join(folder, name + ".csv")) as f:
        return list(csv.reader(f))


def main():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, "run")
        os.makedirs(run)
        with open(os.path.join(run, "bench_tilejit.jsonl"), "w") as f:
            f.write("not json: a log line\n")
            for r in ROWS:
                f.write(json.dumps(r) + "\n")
        with open(os.path.join(run, "device.txt"), "w") as f:
            f.write("Some GPU (driver 1.2)\n2026-01-01\n")
        out = os.path.join(d, "charts")
        expect(report.main(["--from", run, "--write", out]) == 0, "report.main returns 0")

        bw = read(out, "bandwidth")
        expect(bw[0][:5] == ["benchmark", "impl", "GB/s", "vs torch", "vs triton"], f"bandwidth header {bw[0]}")
        mine = next(r for r in bw if r[1] == "tilejit")
        expect(mine[2:5] == ["4000.0", "1.250x", "0.800x"], f"tilejit copy row {mine}")

        pre = read(out, "prefetch")
        gains = {(r[0], r[1]): r[4] for r in pre[1:]}
        expect(gains[("none", "BT=16, C=128")] == "+0.0%", f"gains {gains}")
        expect(gains[("upfront_tensormap", "BT=16, C=128")] == "+10.0%", f"gains {gains}")
        expect(gains[("upfront_l2", "BT=64, C=128")] == "-5.0%  WRONG", f"a wrong result is marked: {gains}")

        launch = read(out, "launch")
        expect(["tilejit", "3.00 (1.20x)"] in launch, f"launch rows {launch}")
        expect(not os.path.exists(os.path.join(out, "gemm.csv")), "no table without rows")

        att = read(out, "attention")
        row = next(r for r in att if r[0].startswith("bf16 S=1024 D=64"))
        # tilejit 300 against torch 400 (0.75x), Triton with the same tiles (config in another order) 250 (1.20x).
        expect(row[1:7] == ["300", "400", "0.750x", "250", "1.200x", "250"], f"attention row {row}")
        moe = read(out, "moe")
        row = next(r for r in moe if r[0].startswith("mixtral E=8"))
        expect(row[1:6] == ["750", "800", "0.938x", "600", "1.250x"], f"moe row {row}")
        try:
            import matplotlib  # noqa: F401
            for name in ("bandwidth", "launch", "prefetch"):
                p = os.path.join(out, name + ".png")
                expect(os.path.exists(p) and os.path.getsize(p) > 1000, f"{name}.png written")
        except ImportError:
            print("matplotlib is not installed: the charts are not checked")
    for f in failures:
        print("FAIL", f)
    print("PASS test_report" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
