#!/usr/bin/env python3
"""Joins the JSON lines of bench_tma and peers.py (one run) into a table of bandwidths and ratios."""
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
        if r["bench"] in ("launch", "first_launch"):
            continue
        base = jag_copy if r["bench"] == "jagged" else torch_copy
        tri = by.get(("copy" if r["bench"].startswith("copy") else r["bench"], "triton"))
        vs_t = f"{r['gbps'] / base['gbps']:.3f}x" if base else "-"
        vs_tr = f"{r['gbps'] / tri['gbps']:.3f}x" if tri and r["impl"] == "tilejit" else "-"
        print(f"{r['bench']:<22}{r['impl']:<10}{r['gbps']:>9.1f}{vs_t:>15}{vs_tr:>11}  {r.get('config', '')}")


    launches = [r for r in rows if r["bench"] == "launch"]
    if launches:
        raw = next((r["us"] for r in launches if r["impl"] == "raw_cuLaunchKernel"), None)
        print(f"\n{'launch of a compiled kernel':<32}{'us per launch':>14}{'vs raw':>9}")
        for r in launches:
            ratio = f"{r['us'] / raw:.2f}x" if raw else "-"
            print(f"{r['impl']:<32}{r['us']:>14.2f}{ratio:>9}")


    for r in rows:
        if r["bench"] == "first_launch":
            what = "disk-cache hit (new process)" if r["impl"].endswith("disk_hit") else "cold (empty cache)"
            print(f"first launch, {what}: first kernel {r['first_kernel_ms']:.2f} ms, second kernel {r['second_kernel_ms']:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
