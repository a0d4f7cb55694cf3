#!/usr/bin/python3
"""llama.cpp model loading: warm page cache vs warm morsel cache (paper Fig. 2).

usage: bench/llama.py [--quick] [--size SIZE] [--runs N] [--tokens N] [--out FILE]

Runs in the VM (vm/run --mem 16G -- bench/llama.py; --quick fits 3G).
Writes a random llama mixture-of-experts model of SIZE bytes (default
6984M = 6.82 GiB, --quick 256M; tests/programs/gguf_model.py: 8 layers,
embedding 512, 256 experts of which 1 is used per token, so a token reads
about 1/256 of the expert weights) to the guest's /tmp (tmpfs: its pages
are the page cache, warm from the write), starts morsel-cached on a
morselfs directory and loads the file into it once (not measured).  Then
N times (default 5, --quick 1), alternating, a fresh process runs
tests/programs/llama_check.py (xllamacpp: load mode mmap, no warm-up, one
completion of --tokens tokens (default 8, --quick 2, after a one-word
prompt), greedy) in two
variants:

  pagecache-populate  the shim preloaded but disabled (MORSEL_PRELOAD_DISABLE):
                      llama.cpp's own mmap(PROT_READ, MAP_SHARED | MAP_POPULATE)
                      of the warm file, timed by the shim
  morsel              the shim maps the cached morsel (one upper-level entry)

Per run: map_ms (the model's mmap call, from MORSEL_PRELOAD_STATS), init_ms
(xllamacpp.Server(): model load and context creation), rest_ms = init_ms -
map_ms, per_token_ms (llama.cpp's own timing of the generated tokens).  The
generated tokens must be the same in every run.  Prints lines
"csv,llama,VARIANT,SIZE,ITERATION,METRIC,VALUE" (bench/run's format), then
a table of medians and ratios (page cache / morsel; above 1: morsels
faster) beside the paper's numbers (map 232 ms -> 371 us; initialisation
-45 %).  --out FILE writes the table there too.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGS = os.path.join(REPO, "tests", "programs")
PY = "/usr/bin/python3"
MODEL = "/tmp/bench-llama.gguf"
SOCK = "/tmp/bench-llama.sock"
PAPER_MAP_MS = (232.0, 0.371)      # page cache, morsels
PAPER_INIT_CHANGE = -0.45


def pydeps(name):
    return subprocess.run([os.path.join(REPO, "scripts", "pydeps"), name], check=True,
                          capture_output=True, text=True).stdout.strip()


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s[-1:].upper() in mult:
        return int(float(s[:-1]) * mult[s[-1:].upper()])
    return int(s)


def start_daemon(cache_dir, budget, log):
    """morsel-cached on a fresh cache directory; returns once it listens."""
    shutil.rmtree(cache_dir, ignore_errors=True)
    os.makedirs(cache_dir)
    if os.path.exists(SOCK):
        os.unlink(SOCK)
    r, w = os.pipe()
    d = subprocess.Popen([os.path.join(REPO, "cached", "morsel-cached"), "--socket", SOCK,
                          "--dir", cache_dir, "--budget", str(budget), "--ready-fd", str(w)],
                         pass_fds=(w,), stderr=log)
    os.close(w)
    ready = os.read(r, 1)
    os.close(r)
    if not ready:
        sys.exit(f"bench/llama.py: morsel-cached exited ({d.wait()}) before listening")
    return d


def run_once(variant, tokens, prompt, stats, llama_path, log):
    """One fresh llama_check.py process; returns (token line, metrics)."""
    if os.path.exists(stats):
        os.unlink(stats)
    env = dict(os.environ, PYTHONPATH=llama_path,
               LD_PRELOAD=os.path.join(REPO, "preload", "libmorsel-preload.so"),
               MORSEL_CACHED_SOCKET=SOCK, MORSEL_PRELOAD_MIN_SIZE="64M",
               MORSEL_PRELOAD_STATS=stats,
               # the model's directory: nothing writes it while mapped
               MORSEL_PRELOAD_DIRS=os.path.dirname(os.path.realpath(MODEL)))
    if variant == "pagecache-populate":
        env["MORSEL_PRELOAD_DISABLE"] = "1"
    args = ["--prompt", prompt] if prompt else []
    p = subprocess.run([PY, os.path.join(PROGS, "llama_check.py"), MODEL, "--tokens", str(tokens),
                        "--times"] + args, env=env, stdout=subprocess.PIPE, stderr=log, text=True)
    if p.returncode:
        sys.exit(f"bench/llama.py: llama_check.py ({variant}) exited with {p.returncode}")
    out = p.stdout.splitlines()
    times = dict(re.findall(r"(\w+) ([\d.]+)", next(x for x in out if x.startswith("times:"))))
    size = os.path.getsize(MODEL)
    want = "real" if variant == "pagecache-populate" else "cached"
    maps = [line.split() for line in open(stats)]
    model_maps = [m for m in maps if m[0] == "mmap" and int(m[2]) >= size]
    if len(model_maps) != 1 or model_maps[0][1] != want:
        sys.exit(f"bench/llama.py: {variant}: expected one '{want}' mapping of the model, got {model_maps}")
    map_ms = int(model_maps[0][3]) / 1e6
    init_ms = float(times["init_ms"])
    metrics = {"map_ms": map_ms, "init_ms": init_ms, "rest_ms": init_ms - map_ms,
               "per_token_ms": float(times["per_token_ms"]), "prompt_ms": float(times["prompt_ms"])}
    return next(x for x in out if x.startswith("tokens:")), metrics


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size", type=parse_size)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--tokens", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    size = a.size or parse_size("256M" if a.quick else "6984M")
    runs = a.runs or (1 if a.quick else 5)
    tokens = a.tokens or (2 if a.quick else 8)
    # --quick: a one-word prompt (llama_check.py's own, nine words, is
    # about 30 tokens here, at about 1.2 s each under TCG)
    prompt = "Once" if a.quick else None
    mnt = os.environ.get("MORSEL_MNT")
    if not mnt:
        sys.exit("bench/llama.py: run it in the VM: vm/run --mem 16G -- bench/llama.py")
    cache_dir = os.path.join(mnt, "bench-llama")
    log = open("/tmp/bench-llama.log", "w")

    t0 = time.monotonic()
    made = subprocess.run([PY, os.path.join(PROGS, "gguf_model.py"), MODEL, "--size", str(size),
                           "--layers", "8", "--embd", "512", "--experts", "256", "--used", "1"],
                          env=dict(os.environ, PYTHONPATH=pydeps("gguf")), check=True,
                          capture_output=True, text=True).stdout.strip()
    print(f"# {made} (written in {time.monotonic() - t0:.1f} s)")
    file_size = os.path.getsize(MODEL)
    llama_path = pydeps("llama")
    daemon = start_daemon(cache_dir, file_size + file_size // 10 + (64 << 20), log)
    try:
        t0 = time.monotonic()
        ref, m = run_once("morsel", tokens, prompt, "/tmp/bench-llama.stats", llama_path, log)
        print(f"# the daemon loaded the model in the first run: map {m['map_ms']:.1f} ms, "
              f"run {time.monotonic() - t0:.1f} s")
        samples = {"pagecache-populate": [], "morsel": []}
        for it in range(runs):
            order = ("pagecache-populate", "morsel") if it % 2 == 0 else ("morsel", "pagecache-populate")
            for v in order:
                toks, m = run_once(v, tokens, prompt, "/tmp/bench-llama.stats", llama_path, log)
                if toks != ref:
                    sys.exit(f"bench/llama.py: {v} run {it} generated other tokens:\n{toks}\n{ref}")
                samples[v].append(m)
                for k, val in m.items():
                    print(f"csv,llama,{v},{file_size},{it},{k},{val:.4f}")
                sys.stdout.flush()
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(cache_dir, ignore_errors=True)
        os.unlink(MODEL)

    def med(v, k):
        return statistics.median(s[k] for s in samples[v])

    def ratio(k):
        # per-iteration ratios, page cache / morsel
        r = [p[k] / q[k] for p, q in zip(samples["pagecache-populate"], samples["morsel"])]
        return statistics.median(r), min(r), max(r)

    pc, mo = "pagecache-populate", "morsel"
    lines = [f"llama.cpp (xllamacpp), {file_size / 2**30:.2f} GiB model, {runs} runs per variant, "
             f"{tokens} tokens, same tokens in every run: {ref[len('tokens: '):]}",
             "",
             "| metric | page cache + MAP_POPULATE (ms) | morsel cache (ms) | ratio page cache / morsel "
             "(median, min-max) | paper |",
             "|---|---|---|---|---|"]
    paper = {"map_ms": f"{PAPER_MAP_MS[0]:g} ms -> {PAPER_MAP_MS[1] * 1000:g} us "
                       f"({PAPER_MAP_MS[0] / PAPER_MAP_MS[1]:.0f}x)",
             "init_ms": f"{PAPER_INIT_CHANGE * 100:+.0f} % ({1 / (1 + PAPER_INIT_CHANGE):.2f}x)",
             "rest_ms": "", "per_token_ms": "", "prompt_ms": ""}
    names = {"map_ms": "map (the model's mmap)", "rest_ms": "rest of initialisation",
             "init_ms": "initialisation (load + context)", "per_token_ms": "per generated token",
             "prompt_ms": "prompt"}
    for k in ("map_ms", "rest_ms", "init_ms", "per_token_ms", "prompt_ms"):
        r, lo, hi = ratio(k)
        lines.append(f"| {names[k]} | {med(pc, k):.3f} | {med(mo, k):.3f} | **{r:.2f}** ({lo:.2f}-{hi:.2f}) "
                     f"| {paper[k]} |")
        if k == "init_ms":
            lines.append(f"| initialisation change with morsels | | | {med(mo, k) / med(pc, k) - 1:+.0%} | "
                         f"{PAPER_INIT_CHANGE:+.0%} |")
    print("\n".join("# " + x if x else "#" for x in lines))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
