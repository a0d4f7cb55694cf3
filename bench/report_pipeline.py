"""bench/report's section for the pipeline family (paper 3.2, issue 11).

bench/pipeline prints one csv line per packet and metric (variant memfd or
morsel, and memfd-serial / morsel-serial for the runs with one packet in
flight; param = the packet's length; iteration = the packet's number, so
both types' packet i has the same length).  bench/pipeline_perf.py prints
sample counts per step and category (bench pipeline-perf).  This module
turns them into a markdown block, rows for the ratio table and two plots:
pipeline.png (Fig. 4: RTT and user time against packet size, both types,
with a locally weighted trend) and pipeline_profile.png (Fig. 5: where the
four steps' time goes, from perf and from the benchmark's own counters).
"""
import os

import numpy as np

SECTION = "7. Processing pipeline: memfd vs morsels (paper 3.2)"
MiB = 2 ** 20
CATEGORIES = ("user", "page faults", "mmap", "munmap", "fd passing",
              "measuring", "other kernel")
COLORS = ("tab:green", "tab:red", "tab:purple", "tab:orange", "tab:blue",
          "tab:gray", "tab:brown")
STEPS = {1: "1 provide", 2: "2 fill", 3: "3 crc", 4: "4 send"}


def packets(data, variant):
    """{packet: {"len": bytes, metric: value}} of one variant."""
    out = {}
    for (bench, var, param, metric), vals in data.items():
        if bench == "pipeline" and var == variant:
            for i, v in vals.items():
                p = out.setdefault(i, {"len": param})
                p[metric] = v
    return out


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def lowess(x, y, frac=0.3, points=60):
    """Locally weighted linear regression (tricube weights): the trend line."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 4:
        return x, y
    k = max(4, int(frac * len(x)))
    grid = np.linspace(x.min(), x.max(), points)
    fit = []
    for g in grid:
        d = np.abs(x - g)
        idx = np.argsort(d)[:k]
        h = d[idx].max() or 1.0
        w = (1 - (d[idx] / h) ** 3) ** 3
        sw = w.sum()
        mx, my = (w * x[idx]).sum() / sw, (w * y[idx]).sum() / sw
        var = (w * (x[idx] - mx) ** 2).sum()
        b = (w * (x[idx] - mx) * (y[idx] - my)).sum() / var if var else 0.0
        fit.append(my + b * (g - mx))
    return grid, np.array(fit)


def section(data, rows, need, out):
    """Adds ratio rows, writes the plots, returns markdown lines."""
    for v in ("memfd", "morsel"):
        for m in ("rtt_ms", "user_ms", "cpu_ms", "wait_ms"):
            need("pipeline", v, m)
        need("pipeline-perf", v, "user")
    md = ["", f"## {SECTION}: details"]
    runs = {}
    for mode in ("", "-serial"):
        a, b = packets(data, "memfd" + mode), packets(data, "morsel" + mode)
        ids = sorted(set(a) & set(b))
        if not ids:
            continue
        runs[mode] = (a, b, ids)
        mx = -(-max(a[i]["len"] for i in ids) // MiB) * MiB  # whole MiB up
        big_at = mx // 2  # as bench/pipeline's summary: above half the largest
        label = (f"{len(ids)} packets of up to {mx / MiB:.0f} MiB"
                 + (", one in flight" if mode else ", pipelined"))
        for name, sel in (("all packets", ids),
                          (f"packets above {big_at / MiB:.0f} MiB",
                           [i for i in ids if a[i]["len"] > big_at])):
            if not sel:
                continue
            r = [a[i]["rtt_ms"] / b[i]["rtt_ms"] for i in sel]
            rows.append((SECTION, label, f"memfd / morsel RTT per packet, {name}"
                         + (" (paper, means: 174 / 107 ms = 1.63)" if not mode else ""),
                         r, mean([b[i]["rtt_ms"] for i in sel]),
                         mean([a[i]["rtt_ms"] for i in sel]), "ms, means"))
        md += ["", f"Pipeline{' with one packet in flight (--serial)' if mode else ''}: "
               f"{len(ids)} packets, 1 B to {mx / MiB:.0f} MiB, means per packet (ms):", "",
               "| buffers | RTT | user | CPU | kernel CPU | waiting for next step | "
               "runnable / in transit | RTT − user | RTT / user |",
               "|---|---|---|---|---|---|---|---|---|"]
        for name, p in (("memfd", a), ("morsel", b)):
            rtt = mean([p[i]["rtt_ms"] for i in ids])
            user = mean([p[i]["user_ms"] for i in ids])
            cpu = mean([p[i]["cpu_ms"] for i in ids])
            wait = mean([p[i]["wait_ms"] for i in ids])
            md.append(f"| {name} | {rtt:.1f} | {user:.1f} | {cpu:.1f} | {cpu - user:.1f} | "
                      f"{wait:.1f} | {rtt - cpu - wait:.1f} | {rtt - user:.1f} | {rtt / user:.2f} |")
        ra = mean([a[i]["rtt_ms"] for i in ids]) / mean([b[i]["rtt_ms"] for i in ids])
        big = [i for i in ids if a[i]["len"] > big_at]
        rb = (mean([a[i]["rtt_ms"] for i in big]) / mean([b[i]["rtt_ms"] for i in big])
              if big else float("nan"))
        md += ["", f"Mean RTT memfd / morsel: **{ra:.2f}** overall, **{rb:.2f}** for the "
               f"{len(big)} packets above {big_at / MiB:.0f} MiB"
               + (" (paper: 174 ms / 107 ms = 1.63)." if not mode else ".")]
        # where each step's CPU time goes, from the counters
        md += ["", "Per step, means per packet (ms; faults as counted by getrusage):", "",
               "| buffers | step | map | work | unmap | fd passing | faults | user | CPU | waiting |",
               "|---|---|---|---|---|---|---|---|---|---|"]
        for name, p in (("memfd", a), ("morsel", b)):
            for k in (2, 3, 4):
                def m(metric):
                    return mean([p[i].get(f"s{k}_{metric}", 0) for i in ids])
                md.append(f"| {name} | {STEPS[k]} | {m('map_ms'):.2f} | {m('work_ms'):.1f} | "
                          f"{m('unmap_ms'):.2f} | {m('pass_ms'):.2f} | {m('faults'):.0f} | "
                          f"{m('user_ms'):.1f} | {m('cpu_ms'):.1f} | {m('wait_ms'):.1f} |")
    prof = {}
    for (bench, var, step, metric), vals in data.items():
        if bench == "pipeline-perf" and step:
            prof[(var, step, metric)] = sum(vals.values())
    if prof:
        base = sum(v for (var, _, _), v in prof.items() if var == "memfd") or 1
        md += ["", "Where the four steps' time goes (perf, cpu-clock samples in the steps; "
               "% of the memfd run's samples, as the paper's Fig. 5):", "",
               "| buffers | " + " | ".join(CATEGORIES) + " | total |",
               "|---|" + "---|" * (len(CATEGORIES) + 1)]
        for var in ("memfd", "morsel"):
            tot = [sum(v for (vv, _, c), v in prof.items() if vv == var and c == cat)
                   for cat in CATEGORIES]
            md.append(f"| {var} | " + " | ".join(f"{100 * t / base:.1f}" for t in tot)
                      + f" | {100 * sum(tot) / base:.1f} |")
    plot_rtt(runs, out)
    plot_profile(runs, prof, out)
    return md


def plot_rtt(runs, out):
    import matplotlib.pyplot as plt
    if "" not in runs:
        return
    a, b, ids = runs[""]
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.8), sharey=True)
    for ax, name, p in ((axs[0], "memfd", a), (axs[1], "morsel", b)):
        x = [p[i]["len"] / MiB for i in ids]
        for metric, label, color in (("rtt_ms", "round-trip time", "tab:blue"),
                                     ("cpu_ms", "CPU time (4 steps, user + kernel)", "tab:green"),
                                     ("user_ms", "user time (4 steps)", "tab:orange")):
            y = [p[i][metric] for i in ids]
            ax.scatter(x, y, s=6, alpha=0.35, color=color, label=label)
            gx, gy = lowess(x, y)
            ax.plot(gx, gy, color=color, lw=2)
        ax.set_title(f"{name}: mean RTT {mean([p[i]['rtt_ms'] for i in ids]):.0f} ms")
        ax.set_xlabel("packet size (MiB)")
        ax.grid(alpha=0.3)
    axs[0].set_ylabel("ms (TCG; compare the two panels)")
    axs[1].legend()
    fig.suptitle(f"{len(ids)} packets through the 4-step pipeline (paper Fig. 4); lines: LOWESS trend")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pipeline.png"), dpi=110)
    plt.close(fig)


def stacked(ax, bars, xlabel, title):
    """bars: [(label, [(width, part label, color)], text)], top to bottom."""
    seen = set()
    for y, (label, parts, text) in enumerate(bars):
        left = 0
        for w, part, color in parts:
            ax.barh(y, w, left=left, color=color, label=None if part in seen else part)
            seen.add(part)
            left += w
        if text:
            ax.text(left, y, text, va="center", fontsize=8)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")


def plot_profile(runs, prof, out):
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(1, 2, figsize=(14, 4.8))
    if prof:
        base = sum(v for (var, _, _), v in prof.items() if var == "memfd") or 1
        stacked(axs[0], [(f"{var}: {STEPS[k]}",
                          [(100 * prof.get((var, k, cat), 0) / base, cat, color)
                           for cat, color in zip(CATEGORIES, COLORS)], "")
                         for var in ("memfd", "morsel") for k in (2, 3, 4, 1)],
                "% of the memfd run's samples in the four steps",
                "perf (cpu-clock, -a): runtime share per step")
    else:
        axs[0].set_title("perf: no samples")
    if "" in runs:
        a, b, ids = runs[""]
        parts = (("map_ms", "mmap", "tab:purple"), ("work_ms", "work loop (user + faults)", "tab:green"),
                 ("unmap_ms", "munmap", "tab:orange"), ("pass_ms", "fd passing", "tab:blue"),
                 ("wait_ms", "waiting for next step", "lightgray"))

        def m(p, k, metric):
            return mean([p[i].get(f"s{k}_{metric}", 0) for i in ids])
        stacked(axs[1], [(f"{name}: {STEPS[k]}",
                          [(m(p, k, metric), label, color) for metric, label, color in parts],
                          f" {m(p, k, 'faults'):.0f} faults")
                         for name, p in (("memfd", a), ("morsel", b)) for k in (2, 3, 4)],
                "ms per packet (thread CPU time; waiting: wall time)",
                "the benchmark's counters, means per packet")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pipeline_profile.png"), dpi=110)
    plt.close(fig)

