#!/usr/bin/env python3
"""numpy over a large .npy through read-only mappings (tests/cache_programs_test).

usage: np_cache_check.py make PATH BYTES
       np_cache_check.py sum PATH

make writes a float64 array of BYTES bytes (rounded down to 8) with
np.lib.format.open_memmap; element i holds (i * 7919) % 1000003, integers,
so every sum is exact whatever the order of additions.  sum maps it twice,
as numpy's users do: np.load(PATH, mmap_mode='r') and np.memmap(PATH,
mode='r') at the header's offset, sums each in full (numpy's own loops over
the mapping), checks both against the closed form and prints one line with
the element count and the sums; any mismatch exits 1.
"""
import sys

import numpy as np

MUL, MOD = 7919, 1000003
CHUNK = 1 << 24         # elements per numpy call when writing


def expected(n):
    """sum of (i * MUL) % MOD for i < n, without touching n elements."""
    # MUL and MOD are coprime, so each full period of MOD indices is a
    # permutation of 0..MOD-1; the tail is summed by numpy in chunks.
    full, rest = divmod(n, MOD)
    total = full * (MOD * (MOD - 1) // 2)
    base = full * MOD
    for start in range(0, rest, CHUNK):
        i = np.arange(base + start, base + min(rest, start + CHUNK), dtype=np.int64)
        total += int(((i * MUL) % MOD).sum())
    return total


def make(path, nbytes):
    n = nbytes // 8
    a = np.lib.format.open_memmap(path, mode="w+", dtype="<f8", shape=(n,))
    for start in range(0, n, CHUNK):
        i = np.arange(start, min(n, start + CHUNK), dtype=np.int64)
        a[start:start + len(i)] = (i * MUL) % MOD
    a.flush()
    del a


def total(a):
    # float64 sums of integers below 2^53 are exact in any order.
    return int(a.sum(dtype=np.float64))


def check(path):
    loaded = np.load(path, mmap_mode="r")
    n = loaded.shape[0]
    s_load = total(loaded)
    offset = loaded.offset
    del loaded
    mm = np.memmap(path, dtype="<f8", mode="r", offset=offset, shape=(n,))
    s_memmap = total(mm)
    del mm
    want = expected(n)
    print(f"numpy {np.__version__}: {n} float64, np.load(mmap_mode='r') sum {s_load}, "
          f"np.memmap sum {s_memmap}, expected {want}")
    if s_load != want or s_memmap != want:
        sys.exit("np_cache_check.py: a sum differs from the closed form")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        make(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "sum":
        check(sys.argv[2])
    else:
        sys.exit(__doc__.split("\n\n")[1])


if __name__ == "__main__":
    main()
