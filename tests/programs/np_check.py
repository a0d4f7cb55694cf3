"""numpy on a file system: memmap across processes, np.save/np.load mmap_mode.

  np_check.py memmap PATH N SEED   writes N float64 from SEED through
      np.memmap(mode='w+'), then (still mapped) checks them in a forked
      child with np.memmap(mode='r'); prints "sum S"
  np_check.py sum PATH N SEED      np.memmap(mode='r') in this process, checks
      its sum and bytes against the values recomputed from SEED
  np_check.py saveload DIR         np.save, np.load(mmap_mode='r'),
      np.load(mmap_mode='r+') with a modification, reload and check
"""
import os
import sys

import numpy as np


def values(n, seed):
    return np.random.default_rng(seed).random(n)


def fail(msg):
    print("np_check:", msg, file=sys.stderr)
    sys.exit(1)


def memmap(path, n, seed):
    print("info: numpy", np.__version__, file=sys.stderr)
    a = np.memmap(path, dtype=np.float64, mode="w+", shape=(n,))
    a[:] = values(n, seed)
    a.flush()
    written = float(a.sum())
    if os.path.getsize(path) != n * 8:
        fail(f"{path}: size {os.path.getsize(path)}, expected {n * 8}")
    # A child process maps it too and checks it while this one still has
    # it mapped (forked: a second numpy import costs seconds under TCG).
    in_child(lambda: summ(path, n, seed, quiet=True), "reader while mapped")
    del a
    print("sum", repr(written))


def in_child(fn, what):
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException as e:          # noqa: BLE001 - report anything
            print(f"np_check: {what}: {type(e).__name__}: {e}", file=sys.stderr)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        fail(f"{what} (child process) failed: wait status {status:#x}")


def summ(path, n, seed, quiet=False):
    a = np.memmap(path, dtype=np.float64, mode="r", shape=(n,))
    want = values(n, seed)
    got = float(a.sum())
    if got != float(want.sum()):
        fail(f"sum {got!r}, expected {float(want.sum())!r}")
    if not np.array_equal(a, want):
        bad = np.flatnonzero(a != want)
        fail(f"{len(bad)} values differ, first at index {bad[0]}: {a[bad[0]]!r} != {want[bad[0]]!r}")
    if not quiet:
        print("sum", repr(got))


def saveload(d):
    path = os.path.join(d, "arr.npy")
    want = values(512 * 1024, 7).reshape(512, 1024)     # 4 MiB: an order-2 morsel
    np.save(path, want)
    a = np.load(path, mmap_mode="r")
    if not isinstance(a, np.memmap) or a.shape != want.shape or a.dtype != want.dtype:
        fail(f"np.load(mmap_mode='r') gave {type(a).__name__} {a.shape} {a.dtype}")
    if not np.array_equal(a, want):
        fail("np.load(mmap_mode='r') content differs from what np.save wrote")
    try:
        a[0, 0] = 1.0
        fail("writing through mmap_mode='r' did not raise")
    except ValueError:
        pass
    del a
    b = np.load(path, mmap_mode="r+")
    b[3, :] = -1.0
    b[:, 5] *= 2.0
    b.flush()
    del b
    want[3, :] = -1.0
    want[:, 5] *= 2.0
    for mode in (None, "r"):
        c = np.load(path, mmap_mode=mode)
        if not np.array_equal(c, want):
            fail(f"after the r+ modification, np.load(mmap_mode={mode!r}) differs")
        del c
    # ... and in another process.
    def other():
        c = np.load(path, mmap_mode="r")
        if not np.array_equal(c, want):
            fail("another process's np.load(mmap_mode='r') differs")
    in_child(other, "np.load in another process")
    print("saveload ok")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "memmap":
        memmap(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "sum":
        summ(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif cmd == "saveload":
        saveload(sys.argv[2])
    else:
        fail(f"unknown command {cmd}")
