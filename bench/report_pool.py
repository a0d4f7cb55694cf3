"""bench/report's section for one copy on several hosts (bench/pool, issue 25).

bench/pool prints, per guest (param = the guest's number, iteration 0):
first_map_ms and ram_bytes for the variants netfs (every guest maps the
model from 9p with MAP_POPULATE: its own page cache copy) and pool
(morsel-cached --pool: one load into the shared pool, one entry per
mapping), and pool_bytes (guest 0: the pool's used bytes).

Rows: per guest, the time until its mapping is complete, netfs / pool
(above 1: the pool is faster); and the memory all guests hold for the
model, netfs / pool (the page cache copies against the pool's one copy
plus any page cache copy a guest kept).  Writes pool.png.
"""
import os

SECTION = "14. One copy for several hosts: a shared pool (issue 25)"
MEM_SECTION = SECTION + ": memory"
GiB = 2 ** 30


def section(data, rows, need, out, plt):
    """Adds the rows to @rows, writes pool.png, returns markdown lines."""
    for v in ("netfs", "pool"):
        need("pool", v, "first_map_ms")
        need("pool", v, "ram_bytes")
    need("pool", "pool", "pool_bytes")
    guests = sorted({k[2] for k in data if k[0] == "pool" and k[3] == "first_map_ms"})
    if not guests:
        return []

    def val(variant, g, metric):
        return data.get(("pool", variant, g, metric), {}).get(0)

    times = {v: [val(v, g, "first_map_ms") for g in guests] for v in ("netfs", "pool")}
    for g, a, b in zip(guests, times["netfs"], times["pool"]):
        if a and b:
            rows.append((SECTION, f"guest {g} of {len(guests)}",
                         "page cache over 9p / shared pool (time until mapped)",
                         [a / b], b, a, "ms"))
    ram = {v: sum(val(v, g, "ram_bytes") or 0 for g in guests) for v in ("netfs", "pool")}
    pool_bytes = val("pool", guests[0], "pool_bytes") or 0
    one = pool_bytes + ram["pool"]
    if one:
        rows.append((MEM_SECTION, f"all {len(guests)} guests",
                     "page cache over 9p / shared pool (memory holding the model)",
                     [ram["netfs"] / one], one / GiB, ram["netfs"] / GiB, "GiB"))
    md = ["", f"## {SECTION} (details)", "",
          f"{len(guests)} guests of one vm/multi run map the same model at the same "
          "moment. Memory: each guest's page cache of the model (fincore) and, for the "
          "pool, the pool's used bytes (the one copy, its tables and metadata, in the "
          "shared region, counted once).", "",
          "| guest | 9p page cache: ms | pool: ms | 9p: page cache | pool: page cache |",
          "|---|---|---|---|---|"]
    for i, g in enumerate(guests):
        md.append(f"| {g} | {times['netfs'][i] or 0:.0f} | {times['pool'][i] or 0:.0f} | "
                  f"{(val('netfs', g, 'ram_bytes') or 0) / GiB:.3f} GiB | "
                  f"{(val('pool', g, 'ram_bytes') or 0) / GiB:.3f} GiB |")
    md += ["", f"Total: {ram['netfs'] / GiB:.3f} GiB in page caches against "
           f"{pool_bytes / GiB:.3f} GiB in the pool + {ram['pool'] / GiB:.3f} GiB in page "
           "caches. Times are TCG's, with every guest on the host's 2 cores.", ""]

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    xs = range(len(guests))
    w = 0.4
    ax1.bar([x - w / 2 for x in xs], [t or 0 for t in times["netfs"]], w, label="9p page cache")
    ax1.bar([x + w / 2 for x in xs], [t or 0 for t in times["pool"]], w, label="shared pool")
    ax1.set_xticks(list(xs))
    ax1.set_xticklabels([f"guest {g}" for g in guests])
    ax1.set_ylabel("ms until mapped (TCG)")
    ax1.legend()
    ax2.bar(["9p page cache", "shared pool"], [ram["netfs"] / GiB, one / GiB],
            color=["C0", "C1"])
    ax2.set_ylabel("GiB holding the model, all guests")
    fig.suptitle("One model in several guests (issue 25)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "pool.png"), dpi=110)
    plt.close(fig)
    return md
