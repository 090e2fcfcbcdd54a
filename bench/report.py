#!/usr/bin/env python3
"""Joins the JSON lines of the benchmarks and peers.py (one run) into tables of bandwidths, TFLOP/s, launch costs
and ratios."""
import json
import sys


def main(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    by = {(r["bench"], r["impl"]): r for r in rows}
    torch_copy = by.get(("copy", "torch"))
    jag_copy = by.get(("jagged", "torch_copy"))
    print(f"{'benchmark':<22}{'impl':<10}{'GB/s':>9}{'vs torch copy':>15}{'vs triton':>11}  config")
    for r in rows:
        if "gbps" not in r or r["bench"] in ("softmax", "softmax_tma", "layernorm", "rowsum"):
            continue
        base = jag_copy if r["bench"] == "jagged" else torch_copy
        tri = by.get(("copy" if r["bench"].startswith("copy") else r["bench"], "triton"))
        vs_t = f"{r['gbps'] / base['gbps']:.3f}x" if base else "-"
        vs_tr = f"{r['gbps'] / tri['gbps']:.3f}x" if tri and r["impl"] == "tilejit" else "-"
        print(f"{r['bench']:<22}{r['impl']:<10}{r['gbps']:>9.1f}{vs_t:>15}{vs_tr:>11}  {r.get('config', '')}")


    row_benches = ("softmax", "softmax_tma", "layernorm", "rowsum")
    soft = [r for r in rows if r["bench"] in row_benches]
    if soft:
        print(f"\n{'32768 rows x n':<24}{'dtype':>6}{'n':>7}{'GB/s':>9}{'vs torch':>10}{'vs triton':>11}  config")
        for r in soft:
            if r["impl"] != "tilejit":
                continue
            kind = "softmax" if r["bench"] == "softmax_tma" else r["bench"]
            peer = {x["impl"]: x for x in soft if x["bench"] == kind and x["n"] == r["n"] and x.get("dtype") == r.get("dtype")}
            cells = [f"{r['gbps'] / peer[i]['gbps']:.3f}x" if i in peer else "-" for i in ("torch", "triton")]
            err = "  WRONG" if "error" in r else ""
            print(f"{r['bench']:<24}{r.get('dtype', ''):>6}{r['n']:>7}{r['gbps']:>9.1f}{cells[0]:>10}{cells[1]:>11}  "
                  f"{r.get('config', '')}{err}")
        for r in soft:
            if r["impl"] != "tilejit":
                print(f"{r['bench'] + ' (' + r['impl'] + ')':<24}{r.get('dtype', ''):>6}{r['n']:>7}{r['gbps']:>9.1f}"
                      f"{'':>10}{'':>11}  {r.get('config', '')}")

    launches = [r for r in rows if r["bench"] == "launch"]
    if launches:
        grids = sorted({r.get("grid", 1) for r in launches})
        print(f"\n{'launch of a compiled kernel, us':<34}" + "".join(f"{'grid ' + str(g):>12}" for g in grids))
        for impl in ("raw_cuLaunchKernel", "tilejit", "triton"):
            cells = []
            for g in grids:
                r = next((x for x in launches if x["impl"] == impl and x.get("grid", 1) == g), None)
                raw = next((x for x in launches if x["impl"] == "raw_cuLaunchKernel" and x.get("grid", 1) == g), None)
                cells.append(f"{r['us']:.2f} ({r['us'] / raw['us']:.2f}x)" if r and raw else "-")
            print(f"{impl + ' (vs raw)':<34}" + "".join(f"{c:>12}" for c in cells))

    for r in rows:
        if r["bench"] == "first_launch":
            what = "disk-cache hit, new process" if r["impl"].endswith("disk_hit") else "cold, empty caches"
            ph = r["median_phases"]
            print(f"\nfirst launch ({what}): first kernel {r['first_kernel_ms']:.2f} ms; next {r['next_kernels']} kernels "
                  f"median {r['next_kernel_ms_median']:.2f} ms (min {r['next_kernel_ms_min']:.2f}, max {r['next_kernel_ms_max']:.2f})")
            print(f"  median kernel: trace {ph['trace_ms']:.2f}, codegen {ph['codegen_ms']:.2f}, NVRTC {ph['nvrtc_ms']:.2f}, "
                  f"disk {ph['disk_ms']:.2f}, load {ph['load_ms']:.2f} ms")

    tune_launch = [r for r in rows if r["bench"] == "autotune_launch"]
    for r in tune_launch:
        print(f"\nautotuned launch, grid {r['grid']}: {r['autotuned_us']:.2f} us vs plain launch {r['plain_us']:.2f} us "
              f"({r['autotuned_vs_plain']:.3f}x; target at most 1.1x)")
    first = [r for r in rows if r["bench"] == "autotune_first_call"]
    if first:
        print(f"\n{'first call, 8 GEMM configs, ms':<34}{'cold':>12}{'binaries':>12}{'decided':>12}")
        for impl in ("tilejit", "triton"):
            cells = []
            for phase in ("cold", "warm_binaries", "decided"):
                r = next((x for x in first if x["impl"] == impl and x["phase"] == phase), None)
                cells.append(f"{r['ms']:.1f}" if r else "-")
            print(f"{impl:<34}" + "".join(f"{c:>12}" for c in cells))
    for r in rows:
        if r["bench"] == "autotune_speed":
            print(f"\ntuned GEMM {r['m']}^3: {r['tuned_tflops']:.1f} TFLOP/s ({r['tuned']}); best by hand {r['best_by_hand_tflops']:.1f} "
                  f"({r['best_by_hand']}); tuned / best time {r['tuned_vs_best']:.3f}")
    gemm_table(rows)


def config_key(config):
    """"BK=64, BM=128, BN=256, num_warps=8, num_stages=3" in either program's order -> a comparable tuple."""
    return tuple(sorted(part.strip() for part in config.split(",") if "=" in part))


def gemm_table(rows):
    """Per type and shape: tilejit's best configuration against the library (cuBLAS) and against Triton, both with
    tilejit's best tiles and at Triton's own best."""
    gemm = [r for r in rows if r["bench"] == "gemm" and "tflops" in r]
    shapes = []
    for r in gemm:
        key = (r["dtype"], r["m"], r["n"], r["k"])
        if key not in shapes:
            shapes.append(key)
    if not shapes:
        return
    print(f"\n{'GEMM, TFLOP/s':<30}{'tilejit':>9}{'library':>9}{'ratio':>8}{'triton same':>13}{'ratio':>8}"
          f"{'triton best':>13}{'ratio':>8}  tilejit config")
    for key in shapes:
        mine = [r for r in gemm if (r["dtype"], r["m"], r["n"], r["k"]) == key]
        best = next((r for r in mine if r["impl"] == "tilejit_best"), None)
        lib = next((r for r in mine if r["impl"] in ("torch", "torch_scaled_mm")), None)
        tri = [r for r in mine if r["impl"] == "triton"]
        if best is None:
            continue
        same = next((r for r in tri if config_key(r["config"]) == config_key(best["config"])), None)
        tri_best = max(tri, key=lambda r: r["tflops"], default=None)

        def cell(r):
            return (f"{r['tflops']:>9.0f}", f"{best['tflops'] / r['tflops']:>7.2f}x") if r else (f"{'-':>9}", f"{'-':>8}")
        lib_v, lib_r = cell(lib)
        same_v, same_r = cell(same)
        tb_v, tb_r = cell(tri_best)
        err = "  WRONG" if "error" in best else ""
        name = f"{key[0]} {key[1]}x{key[2]}x{key[3]}"
        print(f"{name:<30}{best['tflops']:>9.0f}{lib_v}{lib_r}{same_v:>13}{same_r}{tb_v:>13}{tb_r}  {best['config']}{err}")


if __name__ == "__main__":
    main(sys.argv[1:])
