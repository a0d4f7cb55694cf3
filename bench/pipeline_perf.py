#!/usr/bin/python3
"""make bench, the pipeline family's profile (paper 3.2, Fig. 5; issue 11).

usage: bench/pipeline_perf.py [--quick] [--packets N]

Runs bench/pipeline once per buffer type under `perf record -a -g` with the
software cpu-clock event (the guest is TCG: no PMU; hrtimer sampling works),
then sorts every sample taken in one of the four steps (the processes are
named provide, fill, crc, send) into what it was doing:

  user         the sample's instruction is in user space
  page faults  the kernel stack begins at asm_exc_page_fault
  mmap         mmap, or the STAT ioctl morsel_map() makes first
  munmap       munmap
  fd passing   sendmsg, recvmsg, close, and the one-byte "ready" (read, send)
  measuring    clock_gettime(CLOCK_THREAD_CPUTIME_ID) and getrusage, the
               benchmark's own clocks (system calls, not vDSO)
  other kernel interrupts, scheduling, anything else

The kernel is built with the "guess" unwinder, whose call chains hold stale
return addresses between the real frames; the category is therefore taken
from the entry of the chain (its outermost kernel frame, and for a system
call the outermost __x64_sys_ frame), never from a frame in the middle.

Prints csv,pipeline-perf,<type>,<step>,0,<category>,<samples> lines (step
1..4) and csv,pipeline-perf,<type>,0,0,samples_all,<n> (every sample of the
whole system while the pipeline ran) for bench/report, and one summary line
per type.  Exits 1 if perf is missing or a run fails.
"""
import os
import subprocess
import sys
import tempfile
from collections import Counter

STEPS = {"provide": 1, "fill": 2, "crc": 3, "send": 4}
SYSCALLS = {
    "mmap": "mmap", "ioctl": "mmap",
    "munmap": "munmap",
    "sendmsg": "fd passing", "recvmsg": "fd passing", "close": "fd passing",
    "read": "fd passing", "sendto": "fd passing", "poll": "fd passing",
    "clock_gettime": "measuring", "getrusage": "measuring",
}
CATEGORIES = ("user", "page faults", "mmap", "munmap", "fd passing",
              "measuring", "other kernel")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def classify(frames):
    """frames: (symbol, is_kernel) innermost first."""
    if not frames or not frames[0][1]:
        return "user"
    kernel = [s for s, k in frames if k]
    outer = kernel[-1]
    if outer.startswith("asm_exc_page_fault"):
        return "page faults"
    if outer.startswith("entry_SYSCALL_64"):
        for sym in reversed(kernel):
            if sym.startswith("__x64_sys_"):
                return SYSCALLS.get(sym[len("__x64_sys_"):], "other kernel")
    return "other kernel"


def samples(script_out):
    """Yield (comm, frames) for each sample of `perf script -F comm,ip,sym,dso`."""
    comm, frames = None, []
    for line in script_out.splitlines():
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line[0].isspace():
            comm, frames = line.split()[0] if line.split() else "", []
        else:
            parts = line.split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            sym = rest.rsplit(" (", 1)[0]
            frames.append((sym, "[kernel.kallsyms]" in rest or "[morsel]" in rest))
    if comm is not None:
        yield comm, frames


def profile(btype, args, tmp):
    data = os.path.join(tmp, f"{btype}.data")
    rec = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "499", "-a", "-g",
           "-o", data, "--", os.path.join(REPO, "bench/pipeline"), "--type", btype] + args
    r = subprocess.run(rec, stdout=subprocess.PIPE, text=True)
    if r.returncode:
        sys.exit(f"pipeline_perf: {' '.join(rec)} failed ({r.returncode})")
    out = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         check=True).stdout
    os.unlink(data)
    count, total = Counter(), 0
    for comm, frames in samples(out):
        total += 1
        if comm in STEPS:
            count[(STEPS[comm], classify(frames))] += 1
    for (step, cat), n in sorted(count.items()):
        print(f"csv,pipeline-perf,{btype},{step},0,{cat},{n}")
    print(f"csv,pipeline-perf,{btype},0,0,samples_all,{total}")
    steps = sum(count.values())
    shares = ", ".join(f"{c} {100 * sum(n for (s, cc), n in count.items() if cc == c) / max(steps, 1):.1f} %"
                       for c in CATEGORIES)
    print(f"pipeline_perf: {btype}: {steps} samples in the four steps ({total} in all): {shares}")


def main():
    quick = "--quick" in sys.argv[1:]
    packets = None
    if "--packets" in sys.argv:
        packets = sys.argv[sys.argv.index("--packets") + 1]
    args = ["--quick"] if quick else []
    args += ["--packets", packets or ("40" if quick else "200")]
    if subprocess.run(["perf", "--version"], stdout=subprocess.DEVNULL).returncode:
        sys.exit("pipeline_perf: perf does not run")
    with tempfile.TemporaryDirectory() as tmp:
        for btype in ("memfd", "morsel"):
            profile(btype, args, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
