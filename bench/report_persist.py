"""bench/report's section for the persistence family (bench/persist).

bench/persist prints, in the main VM run (times in ms):
  persist-ops    volatile | persistent, param = morsel size in bytes;
                 create_ms, populate_ms, map_ms (mmap + one write per page),
                 munmap_ms, unlink_ms (close + unlink).
  persist-mount  clean, param = bytes populated (0: empty file system);
                 mount_ms and umount_ms per iteration, populate_ms once.
  persist-dax    ext4-dax | morsel, param = file size;
                 map_ms (until the whole range is accessible), access_ms
                 (one byte per page), unmap_ms, faults.
and, from bench/persist_powercut's boots (param = bytes the fill asked
for): persist-mount cold-clean (iteration = cycle: the first mount of a
boot, of a cleanly unmounted device; mount_ms, bytes), powercut
(iteration = cycle: the recovering mount, also its boot's first; mount_ms,
bytes, complete, orphans) and powercut-clean (iteration = cycle * 1000 + k:
clean mounts of the same contents after it in the same boot).

Persistent against volatile is reported as persistent / volatile (above 1:
the persistent morsel is slower); ext4 -o dax against the morsel as
ext4 / morsel, the main table's convention (above 1: the morsel is faster),
so those rows go into the main table too.  The mount is reported in ms per
populated GiB beside the goal of 200 ms per GiB under TCG (a goal, not an
assertion), and the recovering mount after a power cut against the clean
mounts of the same boot.
"""
import os
import statistics

SECTION = "8. Persistent morsels (docs/persistence.md)"
DAX_SECTION = "8. Persistent morsels: ext4 -o dax / morsel on the same NVDIMM"
GiB = 2 ** 30
MiB = 2 ** 20
GOAL_MS_PER_GIB = 200
OPS = (("create_ms", "create"), ("populate_ms", "MORSEL_IOC_POPULATE"),
       ("map_ms", "mmap + write 1 byte/page"), ("munmap_ms", "munmap"),
       ("unlink_ms", "close + unlink"), ("total_ms", "all five"))
DAX = (("ext4-dax", "ext4 -o dax"),)


def pct(values, q):
    """q-th percentile (0..100) with linear interpolation."""
    v = sorted(values)
    if len(v) == 1:
        return v[0]
    pos = (len(v) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def size(b):
    if b >= GiB and b % GiB == 0:
        return f"{b // GiB} GiB"
    if b >= MiB:
        return f"{b / MiB:g} MiB" if b % MiB == 0 else f"{b / MiB:.1f} MiB"
    return f"{b / 1024:g} KiB" if b else "empty"


def params(data, bench, variant, metric):
    return sorted({k[2] for k in data if k[0] == bench and k[1] == variant and k[3] == metric})


def paired(data, bench, param, metric, num, den):
    """Per-iteration ratios num / den of one metric."""
    a = data.get((bench, num, param, metric), {})
    b = data.get((bench, den, param, metric), {})
    return [a[i] / b[i] for i in sorted(set(a) & set(b)) if b[i] > 0]


def med(vals):
    vals = list(vals)
    return statistics.median(vals) if vals else float("nan")


def stats_cells(r):
    return f"**{statistics.median(r):.2f}** | {pct(r, 10):.2f} | {pct(r, 90):.2f} | {len(r)}"


def section(data, rows, need, out, quick=False):
    """Adds the ext4 / morsel rows to @rows, writes persist.png, returns markdown lines."""
    for v in ("volatile", "persistent"):
        for m, _ in OPS[:-1]:
            need("persist-ops", v, m)
    need("persist-mount", "clean", "mount_ms")
    need("persist-mount", "powercut", "mount_ms")
    need("persist-mount", "powercut-clean", "mount_ms")
    need("persist-mount", "cold-clean", "mount_ms")
    for v in ("ext4-dax", "morsel"):
        need("persist-dax", v, "map_ms")
        need("persist-dax", v, "access_ms")

    md = ["", f"## {SECTION}", ""]
    if quick:
        md += ["(--quick: small sizes, where fixed costs dominate; the per-GiB "
               "numbers are not the full run's.)", ""]

    # 1. persistent / volatile per operation and size
    sizes = params(data, "persist-ops", "persistent", "create_ms")
    ops_plot = []
    if sizes:
        for v in ("volatile", "persistent"):
            for s in sizes:
                tot = {}
                parts = [data.get(("persist-ops", v, s, m), {}) for m, _ in OPS[:-1]]
                for i in set.intersection(*(set(p) for p in parts)):
                    tot[i] = sum(p[i] for p in parts)
                data[("persist-ops", v, s, "total_ms")] = tot
        md += ["The same operations on a persistent morselfs (`-o pmem=`, tables and pages on "
               "the NVDIMM) and on the volatile one: **persistent / volatile** time (above 1: "
               "the persistent morsel is slower), median and 10th-90th percentile of the "
               "per-iteration ratios.", "",
               "| size | operation | persistent / volatile | p10 | p90 | n | persistent (ms) "
               "| volatile (ms) |",
               "|---|---|---|---|---|---|---|---|"]
        for s in sizes:
            for m, name in OPS:
                r = paired(data, "persist-ops", s, m, "persistent", "volatile")
                if not r:
                    continue
                ops_plot.append((f"{size(s)}: {name}", r))
                md.append(f"| {size(s)} | {name} | {stats_cells(r)} | "
                          f"{med(data[('persist-ops', 'persistent', s, m)].values()):.3f} | "
                          f"{med(data[('persist-ops', 'volatile', s, m)].values()):.3f} |")

    # 2. mount time per populated GiB
    clean = params(data, "persist-mount", "clean", "mount_ms")
    mount_plot = {"clean": [], "cold-clean": [], "powercut": [], "powercut-clean": []}
    best = None
    if clean:
        base = (med(data[("persist-mount", "clean", 0, "mount_ms")].values())
                if 0 in clean else 0.0)
        md += ["", f"Mount time (the walk of every tree that rebuilds the allocator) after a clean "
               f"unmount, per populated GiB; the goal is at most {GOAL_MS_PER_GIB} ms per GiB "
               "under TCG (a goal, not an assertion). \"Above empty\" subtracts the median mount "
               "of an empty file system (the fixed cost).", "",
               "| populated | mount (ms) | p10 | p90 | n | ms per GiB | above empty, ms per GiB | "
               "goal (ms per GiB) | umount (ms) | populating it (ms) | mount / populating |",
               "|---|---|---|---|---|---|---|---|---|---|---|"]
        for b in clean:
            ms = list(data[("persist-mount", "clean", b, "mount_ms")].values())
            um = data.get(("persist-mount", "clean", b, "umount_ms"), {}).values()
            pop = med(data.get(("persist-mount", "clean", b, "populate_ms"), {}).values())
            mount_plot["clean"].append((b, ms))
            if b:
                per = med(m / (b / GiB) for m in ms)
                above = (med(ms) - base) / (b / GiB)
                best = (b, per, above)
                cells = (f"**{per:.1f}** | {above:.1f} | {GOAL_MS_PER_GIB} "
                         f"({'met' if per <= GOAL_MS_PER_GIB else 'missed'}) | ")
            else:
                cells = "- | - | | "
            md.append(f"| {size(b)} | {med(ms):.2f} | {pct(ms, 10):.2f} | {pct(ms, 90):.2f} | "
                      f"{len(ms)} | {cells}{med(um):.2f} | {pop:.1f} | "
                      + (f"{med(ms) / pop:.3f} |" if b and pop > 0 else "- |"))
        if best:
            md += ["", f"**Mount after a clean unmount: {best[1]:.1f} ms per GiB** with "
                   f"{size(best[0])} populated ({best[2]:.1f} ms per GiB above an empty file "
                   f"system); goal <= {GOAL_MS_PER_GIB} ms per GiB: "
                   f"**{'met' if best[1] <= GOAL_MS_PER_GIB else 'missed'}**."]

    # ... and after a power cut (bench/persist_powercut: one boot per cut)
    for p in params(data, "persist-mount", "powercut", "mount_ms"):
        pc = data[("persist-mount", "powercut", p, "mount_ms")]
        cl = data.get(("persist-mount", "powercut-clean", p, "mount_ms"), {})
        cold = data.get(("persist-mount", "cold-clean", p, "mount_ms"), {})
        cold_b = data.get(("persist-mount", "cold-clean", p, "bytes"), {})
        found = data.get(("persist-mount", "powercut", p, "bytes"), {})
        done = data.get(("persist-mount", "powercut", p, "complete"), {})
        orph = data.get(("persist-mount", "powercut", p, "orphans"), {})
        md += ["", f"Mount after a power cut (`vm/run --powercut`: the machine killed after "
               f"{size(p)} was populated, an unlinked morsel still open), one cut per pair of "
               "boots. The recovering mount is the first of its boot (the emulator translates "
               "its code and QEMU faults the device's pages in for the first time), so its "
               "clean counterpart is the first mount of the boot before (the fill's), of the "
               "same amount cleanly unmounted; the clean mounts after the recovery in the same "
               "boot are warm.", "",
               "| cut | data found | cut after the fill | orphans recovered | recovering mount (ms) | "
               "ms per GiB | first mount of a boot, clean (ms) | ms per GiB | "
               "recovering / first clean | warm clean mounts after it (ms, median) | "
               "recovering / warm clean |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        r_cold, r_warm, per_pc = [], [], []
        for c in sorted(pc):
            cms = [v for i, v in cl.items() if i // 1000 == c]
            gib = found.get(c, p) / GiB
            per_pc.append(pc[c] / gib)
            rc = pc[c] / cold[c] if c in cold else float("nan")
            rw = pc[c] / med(cms) if cms else float("nan")
            if c in cold:
                r_cold.append(rc)
                mount_plot["cold-clean"].append((cold_b.get(c, p), [cold[c]]))
            if cms:
                r_warm.append(rw)
                mount_plot["powercut-clean"].append((found.get(c, p), cms))
            mount_plot["powercut"].append((found.get(c, p), [pc[c]]))
            cold_cells = (f"{cold[c]:.2f} | {cold[c] / (cold_b.get(c, p) / GiB):.1f} | {rc:.2f}"
                          if c in cold else "- | - | -")
            md.append(f"| {c} | {size(int(found.get(c, p)))} | "
                      f"{'yes' if done.get(c) else 'NO'} | {orph.get(c, -1):.0f} | {pc[c]:.2f} | "
                      f"{pc[c] / gib:.1f} | {cold_cells} | {med(cms):.2f} | {rw:.2f} |")

        def spread(r):
            return (f"median of {len(r)} cut{'s' if len(r) > 1 else ''}"
                    + (f", {min(r):.2f}-{max(r):.2f}" if len(r) > 1 else ""))
        per = med(per_pc)
        md += ["", f"**Mount after a power cut: {per:.1f} ms per GiB** (goal <= "
               f"{GOAL_MS_PER_GIB}: {'met' if per <= GOAL_MS_PER_GIB else 'missed'})"
               + (f"; recovering / clean, each the first mount of its boot: "
                  f"**{med(r_cold):.2f}** ({spread(r_cold)})" if r_cold else "")
               + (f"; recovering / the warm clean mounts after it: **{med(r_warm):.2f}** "
                  f"({spread(r_warm)})" if r_warm else "") + "."]

    # 3. ext4 -o dax against the morsel (also rows of the main table)
    dax_plot = []
    for s in params(data, "persist-dax", "morsel", "map_ms"):
        for v in ("ext4-dax", "morsel"):
            a = data.get(("persist-dax", v, s, "map_ms"), {})
            b = data.get(("persist-dax", v, s, "access_ms"), {})
            data[("persist-dax", v, s, "total_ms")] = {i: a[i] + b[i] for i in set(a) & set(b)}
        lab = f"{size(s)} file, same device"
        for v, name in DAX:
            for m, what in (("map_ms", "mmap until all is accessible (ext4: with "
                                       "MAP_POPULATE) + first byte"),
                            ("access_ms", "read 1 byte per page after it"),
                            ("total_ms", "both")):
                r = paired(data, "persist-dax", s, m, v, "morsel")
                if r:
                    rows.append((DAX_SECTION, lab, f"{name} / morsel: {what}", r,
                                 med(data[("persist-dax", "morsel", s, m)].values()),
                                 med(data[("persist-dax", v, s, m)].values()), "ms"))
                    dax_plot.append((f"{v}: {m[:-3]}", r))
        md += ["", f"A {size(s)} file mapped from ext4 -o dax and as a persistent morsel on the "
               "same NVDIMM (rounds alternate the file systems; ratios in the main table, "
               f"section \"{DAX_SECTION}\"), medians:", "",
               "| file system | until accessible (ms) | read 1 byte/page (ms) | munmap (ms) | "
               "minor faults (map + read) |", "|---|---|---|---|---|"]
        for v, name in DAX + (("morsel", "persistent morsel (mmap writes the one mount entry)"),):
            def m(metric):
                return med(data.get(("persist-dax", v, s, metric), {}).values())
            md.append(f"| {name} | {m('map_ms'):.2f} | {m('access_ms'):.2f} | "
                      f"{m('unmap_ms'):.2f} | {m('faults'):.0f} |")
        f = med(data.get(("persist-dax", "ext4-dax", s, "faults"), {}).values())
        chunks = s // (2 * MiB)
        if chunks <= f <= s // 4096:
            small = round((f - chunks) / 511)
            md += ["", f"ext4 mapped {chunks - small} of the file's {chunks} 2 MiB chunks with one "
                   f"2 MiB fault each and {small} with 4 KiB faults (from the fault count); the "
                   "persistent morsel has 4 KiB leaves only (its format allows 2 MiB leaves; the "
                   "module does not write them yet) and took "
                   f"{med(data.get(('persist-dax', 'morsel', s, 'faults'), {}).values()):.0f} "
                   "faults."]

    plot(ops_plot, mount_plot, dax_plot, out)
    md += ["", "Plot: `persist.png`."]
    return md


def plot(ops_plot, mount_plot, dax_plot, out):
    import matplotlib.pyplot as plt
    if not (ops_plot or mount_plot["clean"] or dax_plot):
        return
    fig, axs = plt.subplots(1, 3, figsize=(17, max(4.5, 0.28 * len(ops_plot) + 1.5)))

    def bars(ax, sel, title, xlabel):
        m = [statistics.median(r) for _, r in sel]
        err = [[mm - pct(r, 10) for mm, (_, r) in zip(m, sel)],
               [pct(r, 90) - mm for mm, (_, r) in zip(m, sel)]]
        ax.barh(range(len(sel)), m, xerr=err, capsize=3, color="tab:blue")
        ax.set_yticks(range(len(sel)), [n for n, _ in sel], fontsize=7)
        ax.axvline(1, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title)

    if ops_plot:
        bars(axs[0], ops_plot, "persistent / volatile morsels",
             "time ratio (>1: persistent slower), median, p10-p90")
    ax = axs[1]
    for key, name, mk in (("clean", "clean unmount (warm)", "o"),
                          ("cold-clean", "clean unmount, first mount of a boot", "v"),
                          ("powercut", "after a power cut (first mount of a boot)", "s"),
                          ("powercut-clean", "clean, warm, after the recovery", "^")):
        pts = mount_plot[key]
        if pts:
            xs = [b / GiB for b, _ in pts]
            m = [statistics.median(v) for _, v in pts]
            err = [[mm - pct(v, 10) for mm, (_, v) in zip(m, pts)],
                   [pct(v, 90) - mm for mm, (_, v) in zip(m, pts)]]
            ax.errorbar(xs, m, yerr=err, fmt=mk, capsize=3, label=name)
    xmax = max([b / GiB for pts in mount_plot.values() for b, _ in pts] or [1])
    ax.plot([0, xmax], [0, GOAL_MS_PER_GIB * xmax], "k--", lw=0.8,
            label=f"goal: {GOAL_MS_PER_GIB} ms per GiB")
    ax.set_xlabel("populated GiB")
    ax.set_ylabel("mount (ms, TCG)")
    ax.set_title("mount time (walk + allocator rebuild)")
    ax.legend(fontsize=8)
    if dax_plot:
        bars(axs[2], dax_plot, "ext4 -o dax / persistent morsel",
             "time ratio (>1: morsel faster), median, p10-p90")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "persist.png"), dpi=110)
    plt.close(fig)
