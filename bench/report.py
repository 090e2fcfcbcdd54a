#!/usr/bin/env python3
"""Joins the JSON lines of the benchmarks and peers.py (one run) into tables of bandwidths, TFLOP/s, launch costs
and ratios, printed as text; with --write DIR also as one CSV file per table and, where matplotlib is installed,
one PNG chart per table (tilejit against each peer, per workload, tilejit's ratio marked on each peer's bar).

  python3 bench/report.py OUT/bench_*.jsonl                       # text tables
  python3 bench/report.py --write docs/bench --from OUT            # a saved device_run.sh folder: CSV + PNG

--from DIR reads DIR/bench_*.jsonl and DIR/device.txt (GPU, driver and date of the run, written by device_run.sh),
which captions the charts."""
import argparse
import csv
import glob
import json
import os
import sys


class Table:
    """One benchmark table: text columns and rows, and optionally a chart.

    chart: (unit, higher_is_better, groups[, "gain"]) where groups is a list of (workload, [(impl, value), ...]) with
    the reference bar (tilejit) first; each other bar of a group is labelled with the reference's speed relative to it
    (>1: tilejit is faster), or with "gain", with its own gain over the reference in percent."""

    def __init__(self, name, title, columns):
        self.name, self.title, self.columns, self.rows, self.chart = name, title, columns, [], None
        self.notes = []

    def add(self, *cells):
        self.rows.append([c if isinstance(c, str) else f"{c}" for c in cells])

    def print(self):
        widths = [max(len(str(c)) for c in [h] + [r[i] for r in self.rows]) for i, h in enumerate(self.columns)]
        print(f"\n{self.title}")
        print("  ".join(f"{h:<{w}}" if i == 0 else f"{h:>{w}}" for i, (h, w) in enumerate(zip(self.columns, widths))))
        for r in self.rows:
            print("  ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(r, widths))))
        for n in self.notes:
            print(n)

    def write_csv(self, folder):
        path = os.path.join(folder, self.name + ".csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(self.columns)
            w.writerows(self.rows)
        return path


def ratio(a, b):
    return f"{a / b:.3f}x" if a and b else "-"


def load(paths):
    rows = []
    for p in paths:
        with open(p) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    rows.append(json.loads(line))
    return rows


ROW_BENCHES = ("softmax", "softmax_tma", "softmax_online", "softmax_online_combine", "softmax_online_evict", "layernorm", "rowsum")


def bandwidth_table(rows):
    by = {(r["bench"], r["impl"]): r for r in rows if "impl" in r}
    torch_copy = by.get(("copy", "torch"))
    jag_copy = by.get(("jagged", "torch_copy"))
    t = Table("bandwidth", "Bandwidth (fp32; reads + writes; vs torch: its copy, torch.add for vector_add)",
              ["benchmark", "impl", "GB/s", "vs torch", "vs triton", "config"])
    groups = {}
    for r in rows:
        if "gbps" not in r or r["bench"] in ROW_BENCHES or r["bench"].startswith("cross_entropy") or r["bench"] == "prefetch" or r["impl"] == "tilejit_debug":
            continue
        # torch's own kernel where it has one (torch.add for the vector add), else its device copy
        base = by.get((r["bench"], "torch")) or (jag_copy if r["bench"] == "jagged" else torch_copy)
        peer = "copy" if r["bench"].startswith("copy") else r["bench"]
        tri = by.get((peer, "triton"))
        vs_tr = ratio(r["gbps"], tri["gbps"]) if tri and r["impl"] == "tilejit" else "-"
        t.add(r["bench"], r["impl"], f"{r['gbps']:.1f}", ratio(r["gbps"], base["gbps"]) if base else "-", vs_tr,
              r.get("config", ""))
        if r["impl"] == "tilejit":
            bars = [("tilejit", r["gbps"])]
            if base:
                bars.append(("torch" if base["bench"] == r["bench"] else "torch copy", base["gbps"]))
            if tri:
                bars.append(("triton", tri["gbps"]))
            groups[r["bench"]] = bars
    t.chart = ("GB/s", True, list(groups.items()))
    return t


def row_table(rows):
    soft = [r for r in rows if r["bench"] in ROW_BENCHES]
    t = Table("row_reductions", "Row reductions, 32768 rows x n (GB/s, reads + writes)",
              ["kernel", "dtype", "n", "GB/s", "vs torch", "vs triton", "config"])
    groups = []
    for r in soft:
        if r["impl"] != "tilejit":
            continue
        kind = "softmax" if r["bench"].startswith("softmax") else r["bench"]  # every softmax form against the peers' one
        peer = {x["impl"]: x for x in soft if x["bench"] == kind and x["n"] == r["n"] and x.get("dtype") == r.get("dtype")}
        err = "  WRONG" if "error" in r else ""
        t.add(r["bench"], r.get("dtype", ""), r["n"], f"{r['gbps']:.1f}",
              *[ratio(r["gbps"], peer[i]["gbps"]) if i in peer else "-" for i in ("torch", "triton")],
              r.get("config", "") + err)
        groups.append((f"{r['bench']} {r.get('dtype', '')} n={r['n']}",
                       [("tilejit", r["gbps"])] + [(i, peer[i]["gbps"]) for i in ("torch", "triton") if i in peer]))
    for r in soft:
        if r["impl"] != "tilejit":
            t.add(f"{r['bench']} ({r['impl']})", r.get("dtype", ""), r["n"], f"{r['gbps']:.1f}", "", "", r.get("config", ""))
    t.chart = ("GB/s", True, groups)
    return t


def cross_entropy_table(rows):
    ce = [r for r in rows if r["bench"] in ("cross_entropy", "cross_entropy_grad")]
    t = Table("cross_entropy", "Cross-entropy, bf16 logits (GB/s: the logits read once, the gradient written once)",
              ["kernel", "rows", "V", "GB/s", "vs torch", "vs triton", "config"])
    groups = []
    for r in ce:
        peer = {x["impl"]: x for x in ce if x["bench"] == r["bench"] and x["v"] == r["v"]}
        if r["impl"] == "tilejit":
            t.add(r["bench"], r["rows"], r["v"], f"{r['gbps']:.1f}",
                  *[ratio(r["gbps"], peer[i]["gbps"]) if i in peer else "-" for i in ("torch", "triton")],
                  r.get("config", "") + ("  WRONG" if "error" in r else ""))
            groups.append((f"{r['bench']} V={r['v']}", [("tilejit", r["gbps"])] + [(i, peer[i]["gbps"]) for i in ("torch", "triton") if i in peer]))
    for r in ce:
        if r["impl"] != "tilejit":
            t.add(f"{r['bench']} ({r['impl']})", r["rows"], r["v"], f"{r['gbps']:.1f}", "", "", r.get("config", ""))
    t.chart = ("GB/s", True, groups)
    return t


def launch_table(rows):
    launches = [r for r in rows if r["bench"] == "launch"]
    grids = sorted({r.get("grid", 1) for r in launches})
    t = Table("launch", "Launch of a compiled kernel, us (ratio to a raw cuLaunchKernel)",
              ["launcher"] + [f"grid {g}" for g in grids])
    found = {}
    for impl in ("raw_cuLaunchKernel", "tilejit", "triton") if launches else ():
        cells = []
        for g in grids:
            r = next((x for x in launches if x["impl"] == impl and x.get("grid", 1) == g), None)
            raw = next((x for x in launches if x["impl"] == "raw_cuLaunchKernel" and x.get("grid", 1) == g), None)
            cells.append(f"{r['us']:.2f} ({r['us'] / raw['us']:.2f}x)" if r and raw else "-")
            if r:
                found[(impl, g)] = r["us"]
        t.add(impl, *cells)
    groups = [(f"grid {g}", [(i, found[(i, g)]) for i in ("tilejit", "raw_cuLaunchKernel", "triton") if (i, g) in found])
              for g in grids if ("tilejit", g) in found]
    t.chart = ("us per launch", False, groups)
    return t


def first_launch_table(rows):
    t = Table("first_launch", "First launch of a small kernel (new to every cache, or found on disk)",
              ["case", "first kernel ms", "next kernels", "median ms", "min ms", "max ms", "trace", "codegen", "NVRTC",
               "disk", "load"])
    for r in rows:
        if r["bench"] == "first_launch":
            ph = r["median_phases"]
            what = "disk-cache hit, new process" if r["impl"].endswith("disk_hit") else "cold, empty caches"
            t.add(what, f"{r['first_kernel_ms']:.2f}", r["next_kernels"], f"{r['next_kernel_ms_median']:.2f}",
                  f"{r['next_kernel_ms_min']:.2f}", f"{r['next_kernel_ms_max']:.2f}",
                  *[f"{ph[k]:.2f}" for k in ("trace_ms", "codegen_ms", "nvrtc_ms", "disk_ms", "load_ms")])
    return t


def autotune_tables(rows):
    out = []
    t = Table("autotune_launch", "Autotuned launch against a plain launch (target: at most 1.1x)",
              ["grid", "autotuned us", "plain us", "ratio"])
    for r in rows:
        if r["bench"] == "autotune_launch":
            t.add(r["grid"], f"{r['autotuned_us']:.2f}", f"{r['plain_us']:.2f}", f"{r['autotuned_vs_plain']:.3f}x")
    out.append(t)
    first = [r for r in rows if r["bench"] == "autotune_first_call"]
    t = Table("autotune_first_call", "First call of an autotuned GEMM, 8 configurations, ms",
              ["impl", "cold", "binaries", "decided"])
    phases = ("cold", "warm_binaries", "decided")
    got = {}
    for impl in ("tilejit", "triton") if first else ():
        cells = []
        for phase in phases:
            r = next((x for x in first if x["impl"] == impl and x["phase"] == phase), None)
            cells.append(f"{r['ms']:.1f}" if r else "-")
            if r:
                got[(impl, phase)] = r["ms"]
        t.add(impl, *cells)
    t.chart = ("ms", False, [(p, [(i, got[(i, p)]) for i in ("tilejit", "triton") if (i, p) in got])
                             for p in phases if ("tilejit", p) in got])
    out.append(t)
    t = Table("autotune_speed", "Tuned GEMM against the best configuration picked by hand",
              ["m", "tuned TFLOP/s", "tuned", "best by hand TFLOP/s", "best", "tuned / best time"])
    for r in rows:
        if r["bench"] == "autotune_speed":
            t.add(r["m"], f"{r['tuned_tflops']:.1f}", r["tuned"], f"{r['best_by_hand_tflops']:.1f}", r["best_by_hand"],
                  f"{r['tuned_vs_best']:.3f}")
    out.append(t)
    return out


def config_key(config):
    """"BK=64, BM=128, BN=256, num_warps=8, num_stages=3" in either program's order -> a comparable tuple (the
    tiles and launch fields: how tilejit schedules the loop, overlap_products, has no Triton counterpart)."""
    return tuple(sorted(part.strip() for part in config.split(",") if "=" in part and not part.strip().startswith("overlap_products")))


def peer_table(rows, bench, keys, name, libraries, title):
    """Per shape (the values of `keys`): tilejit's best configuration against the library (`libraries`: its impl
    names) and against Triton, both with tilejit's best tiles and at Triton's own best, in TFLOP/s."""
    mine_all = [r for r in rows if r["bench"] == bench and "tflops" in r]
    t = Table(bench, title, ["shape", "tilejit", "library", "ratio", "triton same", "ratio", "triton best", "ratio", "tilejit config"])
    shapes = []
    for r in mine_all:
        key = tuple(r[k] for k in keys)
        if key not in shapes:
            shapes.append(key)
    groups = []
    for key in shapes:
        mine = [r for r in mine_all if tuple(r[k] for k in keys) == key]
        best = next((r for r in mine if r["impl"] == "tilejit_best"), None)
        if best is None:
            continue
        lib = next((r for r in mine if r["impl"] in libraries), None)
        tri = [r for r in mine if r["impl"] == "triton"]
        same = next((r for r in tri if config_key(r["config"]) == config_key(best["config"])), None)
        tri_best = max(tri, key=lambda r: r["tflops"], default=None)
        cells = []
        for r in (lib, same, tri_best):
            cells += [f"{r['tflops']:.0f}", ratio(best["tflops"], r["tflops"])] if r else ["-", "-"]
        err = "  WRONG" if "error" in best else ""
        label = name(key)
        t.add(label, f"{best['tflops']:.0f}", *cells, best["config"] + err)
        bars = [("tilejit", best["tflops"])]
        for what, r in (("library", lib), ("triton same tiles", same), ("triton best", tri_best)):
            if r:
                bars.append((what, r["tflops"]))
        groups.append((label, bars))
    t.chart = ("TFLOP/s", True, groups)
    return t


def gemm_table(rows):
    """Per type and shape: tilejit's best GEMM configuration against cuBLAS (torch) and Triton."""
    return peer_table(rows, "gemm", ("dtype", "m", "n", "k"), lambda k: f"{k[0]} {k[1]}x{k[2]}x{k[3]}",
                      ("torch", "torch_scaled_mm"), "GEMM, TFLOP/s (ratio: tilejit's best to each)")


def attention_table(rows):
    """Per sequence length and head dimension: tilejit's best attention configuration against torch's
    scaled_dot_product_attention and the same loop in Triton."""
    return peer_table(rows, "attention", ("s", "d", "heads"), lambda k: f"bf16 S={k[0]} D={k[1]} x{k[2]} heads", ("torch_sdpa",),
                      "Attention forward (bf16, non-causal), TFLOP/s (ratio: tilejit's best to each; library: torch SDPA)")


def attention_causal_table(rows):
    """Causal attention (sample 12's kernel): tilejit's best configuration against torch's SDPA with is_causal."""
    return peer_table(rows, "attention_causal", ("s", "d", "heads"), lambda k: f"bf16 S={k[0]} D={k[1]} x{k[2]} heads, causal",
                      ("torch_sdpa",), "Attention forward, causal (bf16; TFLOP/s counting half the dense flops; library: torch SDPA)")


def attention_backward_tables(rows):
    """The attention backward pass (sample 14's three kernels at the best configuration of each), dense and causal,
    against torch's SDPA backward (the faster of its cuDNN and flash backends) and Triton kernels of the same loops."""
    return [peer_table(rows, "attention_backward" + suffix, ("s", "d", "heads"),
                       lambda k, what=what: f"bf16 S={k[0]} D={k[1]} x{k[2]} heads{what}", ("torch_sdpa",),
                       f"Attention backward{title} (bf16; TFLOP/s at 2.5x the forward's flops; library: torch SDPA, cuDNN or flash)")
            for suffix, what, title in (("", "", ""), ("_causal", ", causal", ", causal"))]


def hstu_table(rows):
    """Jagged HSTU attention (sample 13's kernel): tilejit's best configuration against a plain Triton HSTU kernel, per
    set of lengths and with or without the relative bias (rows without those fields, from earlier runs, are the
    uniform set without bias)."""
    rows = [dict(r, lengths=r.get("lengths", "uniform"), bias=r.get("bias", 0)) if r.get("bench") == "hstu" else r for r in rows]
    return peer_table(rows, "hstu", ("lengths", "causal", "bias", "seqs", "heads", "d"),
                      lambda k: f"{k[0]}: {k[3]} sequences of " + ("256-4095" if k[0] == "uniform" else "128-511 and 8192") +
                      f", H={k[4]} D={k[5]}" + (", causal" if k[1] else "") + (", relative bias" if k[2] else ""), (),
                      "Jagged HSTU attention (bf16; TFLOP/s; peer: a plain Triton HSTU kernel, pointer loads)")


def jagged_attention_table(rows):
    """Jagged softmax attention (sample 15's kernel, sequences longest first): tilejit's best configuration against
    torch's varlen attention, SDPA on padded sequences (the fastest backend that ran) and a plain Triton varlen kernel;
    and tilejit's best with the sequences in their packed order."""
    t = Table("jagged_attention", "Jagged softmax attention (bf16, H=8, D=128; TFLOP/s of the packed sequences; ratio: tilejit's best to each)",
              ["lengths", "tilejit best", "packed order", "torch varlen", "ratio", "SDPA padded", "ratio", "Triton best", "ratio", "config"])
    mine_all = [r for r in rows if r["bench"] == "jagged_attention" and "tflops" in r]
    groups = []
    for key in dict.fromkeys((r["lengths"], r["causal"]) for r in mine_all):
        mine = [r for r in mine_all if (r["lengths"], r["causal"]) == key]
        best = next((r for r in mine if r["impl"] == "tilejit_best"), None)
        if best is None:
            continue
        packed = max((r for r in mine if r["impl"] == "tilejit" and r.get("order") == "packed"), key=lambda r: r["tflops"], default=None)
        peers = [("torch varlen", [r for r in mine if r["impl"] == "torch_varlen"]),
                 ("SDPA padded", [r for r in mine if r["impl"].startswith("torch_sdpa_padded")]),
                 ("Triton best", [r for r in mine if r["impl"] == "triton"])]
        cells, bars = [], [("tilejit", best["tflops"])]
        for what, rs in peers:
            r = max(rs, key=lambda r: r["tflops"], default=None)
            cells += [f"{r['tflops']:.0f}" + (f" ({r['impl'][18:]})" if r["impl"].startswith("torch_sdpa_padded_") else ""),
                      ratio(best["tflops"], r["tflops"])] if r else ["-", "-"]
            if r:
                bars.append((what, r["tflops"]))
        label = f"{key[0]}" + (", causal" if key[1] else "")
        t.add(label, f"{best['tflops']:.0f}", f"{packed['tflops']:.0f}" if packed else "-", *cells,
              best["config"] + ("  WRONG" if "error" in best else ""))
        groups.append((label, bars))
    t.chart = ("TFLOP/s", True, groups)
    return t


def moe_table(rows):
    """Per MoE shape: tilejit's best grouped GEMM configuration (bench_moe) against a loop of torch.mm and
    torch._grouped_mm (peers.py --moe)."""
    t = Table("moe", "MoE grouped GEMM (bf16, tokens sorted by expert), TFLOP/s (ratio: tilejit's best to each)",
              ["shape", "tilejit best", "torch loop", "ratio", "torch._grouped_mm", "ratio", "config"])
    mine_all = [r for r in rows if r["bench"] == "moe" and "tflops" in r]
    groups = []
    for shape in dict.fromkeys(r["shape"] for r in mine_all):
        mine = [r for r in mine_all if r["shape"] == shape]
        best = next((r for r in mine if r["impl"] == "tilejit_best"), None)
        if best is None:
            continue
        cells, bars = [], [("tilejit", best["tflops"])]
        for impl in ("torch_loop", "torch_grouped_mm"):
            r = next((r for r in mine if r["impl"] == impl), None)
            cells += [f"{r['tflops']:.0f}", ratio(best["tflops"], r["tflops"])] if r else ["-", "-"]
            if r:
                bars.append((impl, r["tflops"]))
        label = f"{shape} E={best['experts']} {best['rows']}x{best['n']}x{best['k']}"
        t.add(label, f"{best['tflops']:.0f}", *cells, best["config"] + ("  WRONG" if "error" in best else ""))
        groups.append((label, bars))
    t.chart = ("TFLOP/s", True, groups)
    return t


def prefetch_table(rows):
    """The descriptor-prefetch study (bench_prefetch): each variant's bandwidth and its gain over no prefetch, per
    tile size."""
    pre = [r for r in rows if r["bench"] == "prefetch" and "gbps" in r]
    t = Table("prefetch", "TMA descriptor prefetch, 48 batches x 4 levels (192 descriptors in a TensorArray), GB/s of boxes",
              ["variant", "config", "GB/s", "us", "gain vs none"])
    groups = []
    for config in dict.fromkeys(r.get("config", "") for r in pre):
        mine = [r for r in pre if r.get("config", "") == config]
        none = next((r for r in mine if r["impl"] == "none"), None)
        for r in mine:
            gain = f"{(r['gbps'] / none['gbps'] - 1) * 100:+.1f}%" if none else "-"
            err = "  WRONG" if "error" in r else ""
            t.add(r["impl"], config, f"{r['gbps']:.1f}", f"{r['ms'] * 1000:.1f}", gain + err)
        if none:
            # The reference bar first: each variant is labelled with its gain over no prefetch.
            groups.append((config, [("none", none["gbps"])] + [(r["impl"], r["gbps"]) for r in mine if r is not none]))
    t.chart = ("GB/s", True, groups, "gain")
    return t


def debug_table(rows):
    """Checked kernels (TILEJIT_DEBUG=1) against the same benchmarks compiled without checks."""
    plain = {r["bench"]: r for r in rows if r.get("impl") == "tilejit" and "gbps" in r}
    t = Table("debug", "Checked kernels (TILEJIT_DEBUG=1) on the bandwidth benchmarks",
              ["benchmark", "GB/s plain", "GB/s checked", "checked / plain", "config (checked)"])
    for r in rows:
        if r.get("impl") != "tilejit_debug" or r["bench"] not in plain:
            continue
        p = plain[r["bench"]]
        t.add(r["bench"], f"{p['gbps']:.1f}", f"{r['gbps']:.1f}", ratio(r["gbps"], p["gbps"]), r.get("config", ""))
    return t


def tables(rows):
    out = [bandwidth_table(rows), debug_table(rows), row_table(rows), cross_entropy_table(rows), launch_table(rows), first_launch_table(rows)]
    out += autotune_tables(rows)
    out += [gemm_table(rows), attention_table(rows), attention_causal_table(rows), *attention_backward_tables(rows), hstu_table(rows), jagged_attention_table(rows), moe_table(rows), prefetch_table(rows)]
    return [t for t in out if t.rows]


def chart(table, folder, caption):
    """A grouped bar chart of `table`; returns the PNG's path, or None when the table has no chart."""
    if not table.chart or not table.chart[2]:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit, higher_better, groups = table.chart[:3]
    gain = len(table.chart) > 3 and table.chart[3] == "gain"
    impls = []
    for _, bars in groups:
        for impl, _ in bars:
            if impl not in impls:
                impls.append(impl)
    width = 0.8 / len(impls)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) * max(1, len(impls)) * 0.6 + 2), 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, impl in enumerate(impls):
        xs, ys = [], []
        for g, (_, bars) in enumerate(groups):
            v = dict(bars).get(impl)
            if v is not None:
                xs.append(g + (k - (len(impls) - 1) / 2) * width)
                ys.append(v)
        ax.bar(xs, ys, width, label=impl, color=colors[k % len(colors)])
    top = max(v for _, bars in groups for _, v in bars)
    for g, (_, bars) in enumerate(groups):
        ref = bars[0][1]
        for impl, v in bars[1:]:
            k = impls.index(impl)
            r = ref / v if higher_better else v / ref
            good = r < 1 if gain else r >= 1
            ax.annotate(f"{(1 / r - 1) * 100:+.1f}%" if gain else f"{r:.2f}x", (g + (k - (len(impls) - 1) / 2) * width, v), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7,
                        color="darkgreen" if good else "darkred")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([name for name, _ in groups], rotation=20 if len(groups) > 3 else 0, ha="right" if len(groups) > 3 else "center",
                       fontsize=8)
    ax.set_ylabel(unit + (" (higher is better)" if higher_better else " (lower is better)"))
    ax.set_ylim(0, top * 1.12)
    first = groups[0][1][0][0]
    what = f"each bar's gain over {first}" if gain else f"{first} speed relative to each bar"
    ax.set_title(table.title + f"\nlabels: {what}" + (f"\n{caption}" if caption else ""),
                 fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path = os.path.join(folder, table.name + ".png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="JSON-lines files of one run")
    ap.add_argument("--from", dest="from_dir", help="a device_run.sh output folder: its bench_*.jsonl and device.txt")
    ap.add_argument("--write", metavar="DIR", help="write each table as DIR/<table>.csv and, with matplotlib, DIR/<table>.png")
    args = ap.parse_args(argv)
    files = list(args.files)
    caption = ""
    if args.from_dir:
        files += sorted(glob.glob(os.path.join(args.from_dir, "bench_*.jsonl")))
        dev = os.path.join(args.from_dir, "device.txt")
        if os.path.exists(dev):
            caption = open(dev).read().strip().replace("\n", "; ")
    if not files:
        ap.error("no input: give JSON-lines files or --from DIR")
    all_tables = tables(load(files))
    for t in all_tables:
        t.print()
    if not args.write:
        return 0
    os.makedirs(args.write, exist_ok=True)
    written = [t.write_csv(args.write) for t in all_tables]
    try:
        import matplotlib  # noqa: F401
        have_plots = True
    except ImportError:
        have_plots = False
        print(f"\nreport.py: matplotlib is not installed for {sys.executable}; CSV files only", file=sys.stderr)
    if have_plots:
        written += [p for p in (chart(t, args.write, caption) for t in all_tables) if p]
    print(f"\nwrote {len(written)} files to {args.write}: " + ", ".join(os.path.basename(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
