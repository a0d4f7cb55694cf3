"""Real programs' data across a reboot on a persistent morselfs
(tests/pmem_programs_test): each program writes in boot 1 and verifies in
boot 2, through its own client library and its own checks.

  pmem_check.py mc-write DIR          memcached -e DIR/mc (restartable cache):
      sets the items of mc_check.py plus large (chunked) values, a counter,
      a deleted key and two TTLs; SIGUSR1; prints its stats
  pmem_check.py mc-verify DIR         restarts memcached with the same file:
      every item, value, counter, deletion and expiry, the restored stats
  pmem_check.py np-write DIR SEED     np.save / np.savez of several arrays,
      a manifest of their sha256
  pmem_check.py np-verify DIR SEED REC...
  pmem_check.py big-write PATH MIB SEED   np.memmap(mode='w+') of MIB MiB
  pmem_check.py big-verify PATH MIB SEED REC...
  pmem_check.py lmdb-write DIR        an LMDB environment (map_size 256 MiB),
      lmdb_check.py's records in 5 transactions, deletions, overwrites,
      overflow values, a named database with the digest
  pmem_check.py lmdb-verify DIR REC...

Lines "record KEY VALUE" are what boot 1 measured; the host script passes
them to boot 2 as KEY=VALUE arguments (REC), so a check compares with what
the writer saw, not only with what it left on the device.  "info: ..."
lines are for the log.  A failure prints "pmem_check: WHY" on stderr and
exits 1.
"""
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

import mc_check


def fail(msg):
    print("pmem_check:", msg, file=sys.stderr)
    sys.exit(1)


def info(msg):
    print("info:", msg, flush=True)


def record(key, value):
    print(f"record {key} {value}", flush=True)


def records(args):
    rec = {}
    for a in args:
        k, sep, v = a.partition("=")
        if not sep:
            fail(f"argument {a!r} is not KEY=VALUE")
        rec[k] = v
    return rec


def need(rec, key):
    if key not in rec:
        fail(f"boot 1 recorded no {key}")
    return rec[key]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(8 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


# --- memcached -----------------------------------------------------------

MC_N = 2000                         # mc_check.py's items, 1 B .. 16 KiB
MC_LARGE = 16                       # 64 KiB .. 960 KiB; past 512 KiB chunked
MC_MEM = 64                         # -m, MiB; a restart needs the same
MC_SHORT_TTL = 8                    # expires while memcached is stopped


def mc_large(i):
    return "large-%02d" % i, random.Random(i).randbytes(65536 + i * 61000)


def mc_start(d):
    sock = "/tmp/pmem-mc.sock"
    err = open("/tmp/pmem-mc.err", "a")
    p = subprocess.Popen(["memcached", "-u", "root", "-m", str(MC_MEM), "-e", f"{d}/mc",
                          "-s", sock, "-a", "600"], stdout=err, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline:
        if p.poll() is not None:
            fail(f"memcached -e {d}/mc exited with status {p.returncode} before listening; "
                 f"stderr: {open('/tmp/pmem-mc.err').read()[-400:]!r}")
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            s.close()
            break
        except OSError:
            time.sleep(0.05)
    else:
        p.kill()
        fail(f"memcached -e {d}/mc not listening after 60 s")
    from pymemcache.client.base import Client
    return p, Client(sock, connect_timeout=10, timeout=60)


def mc_stop(p, c, d):
    c.close()
    os.kill(p.pid, signal.SIGUSR1)
    try:
        st = p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("memcached did not exit within 120 s of SIGUSR1")
    if st != 0:
        fail(f"memcached exited with status {st} after SIGUSR1")
    meta = f"{d}/mc.meta"
    if not os.path.exists(meta) or os.path.getsize(meta) == 0:
        fail(f"no {meta} after SIGUSR1")


def mc_stats(c, *args):
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in c.stats(*args).items()}


def mc_write(d):
    os.makedirs(d, exist_ok=True)
    p, c = mc_start(d)
    try:
        for lo in range(0, MC_N, 100):
            bad = c.set_many({mc_check.key(i): mc_check.value(i)
                              for i in range(lo, min(MC_N, lo + 100))}, noreply=False)
            if bad:
                fail(f"set_many failed for {len(bad)} keys, first {bad[0]}")
        for i in range(MC_LARGE):
            k, v = mc_large(i)
            if not c.set(k, v, noreply=False):
                fail(f"set {k} ({len(v)} bytes) failed")
        c.set("counter", b"100", noreply=False)
        if c.incr("counter", 5) != 105:
            fail("incr counter 5 did not give 105")
        c.set("deleted", b"gone", noreply=False)
        if not c.delete("deleted", noreply=False):
            fail("delete failed")
        c.set("ttl-long", b"stays", expire=86400, noreply=False)
        c.set("ttl-short", b"expires", expire=MC_SHORT_TTL, noreply=False)
        # Everything back before the stop, or the test is broken.
        f = mc_check.found(c, MC_N)
        if f != MC_N:
            fail(f"right after setting them, {f} of {MC_N} items come back")
        for i in range(MC_LARGE):
            k, v = mc_large(i)
            if c.get(k) != v:
                fail(f"right after setting it, {k} differs")
        st = mc_stats(c)
        if int(st["evictions"]) != 0:
            fail(f"{st['evictions']} evictions: -m {MC_MEM} is too small for the test")
        info(f"memcached {c.version().decode()}: curr_items {st['curr_items']}, "
             f"bytes {st['bytes']}, {MC_N} small and {MC_LARGE} large items "
             f"({sum(len(mc_large(i)[1]) for i in range(MC_LARGE)) >> 10} KiB)")
        record("mc_curr_items", st["curr_items"])
    except BaseException:
        p.kill()
        raise
    mc_stop(p, c, d)
    record("mc_stop_time", int(time.time()))


def mc_verify(d, rec):
    meta = f"{d}/mc.meta"
    if not os.path.exists(f"{d}/mc") or not os.path.exists(meta):
        fail(f"{d}/mc or {meta} missing after the reboot: {os.listdir(d) if os.path.isdir(d) else 'no ' + d}")
    # memcached restores nothing stopped in the current second, and the
    # short TTL must have passed.
    stop = int(need(rec, "mc_stop_time"))
    while time.time() <= stop + MC_SHORT_TTL + 1:
        time.sleep(0.2)
    p, c = mc_start(d)
    try:
        err = open("/tmp/pmem-mc.err").read()
        for line in sorted(set(l for l in err.splitlines() if l.startswith("[restart]"))):
            info(f"memcached: {line}")
        st = mc_stats(c)
        before = int(need(rec, "mc_curr_items"))
        info(f"restarted: curr_items {st['curr_items']} (at the stop: {before}), "
             f"bytes {st['bytes']}, uptime {st['uptime']} s")
        if int(st["curr_items"]) not in (before, before - 1):   # the expired one
            fail(f"stats after the restart: curr_items {st['curr_items']}, "
                 f"{before} at the stop (the cache was not restored)")
        sset = mc_stats(c, "settings")
        if sset.get("memory_file", b"").decode() != f"{d}/mc":
            fail(f"stats settings: memory_file {sset.get('memory_file')!r}")
        f = mc_check.found(c, MC_N)           # fails on a wrong value
        if f != MC_N:
            fail(f"{f} of {MC_N} small items back after the reboot")
        for i in range(MC_LARGE):
            k, v = mc_large(i)
            got = c.get(k)
            if got != v:
                fail(f"{k}: {'missing' if got is None else f'{len(got)} bytes differ from the {len(v)} set'}")
        if c.get("counter") != b"105" or c.incr("counter", 1) != 106:
            fail(f"counter {c.get('counter')!r}, expected b'105' (and incr to 106)")
        if c.get("deleted") is not None:
            fail("the deleted key is back")
        if c.get("ttl-long") != b"stays":
            fail(f"ttl-long: {c.get('ttl-long')!r}")
        if c.get("ttl-short") is not None:
            fail(f"ttl-short (exptime {MC_SHORT_TTL} s) is still there after the reboot")
        c.set("after-reboot", b"new", noreply=False)
        if c.get("after-reboot") != b"new":
            fail("a set after the restart does not come back")
        info(f"{MC_N} small, {MC_LARGE} large items, counter, deletion and expiry as set")
    except BaseException:
        p.kill()
        raise
    mc_stop(p, c, d)


# --- numpy ---------------------------------------------------------------

def np_arrays(seed):
    import numpy as np

    def rng(i):
        return np.random.default_rng([seed, i])
    recs = np.zeros(100_000, dtype=[("id", "<i4"), ("x", "<f4"), ("name", "S8")])
    r = rng(3)
    recs["id"] = np.arange(100_000)
    recs["x"] = r.random(100_000, dtype=np.float32)
    recs["name"] = [b"n%07d" % v for v in r.integers(0, 10**7, 100_000)]
    return {
        "f64_2d": rng(0).random((512, 1024)),                       # 4 MiB
        "i64_perm": rng(1).permutation(1 << 20),                    # 8 MiB
        "c128": rng(2).random(4096) + 1j * rng(12).random(4096),
        "records": recs,                                            # 1.6 MiB
        "u8_img": rng(4).integers(0, 256, (64, 256, 256), dtype=np.uint8),  # 4 MiB
        "f32_fortran": np.asfortranarray(rng(5).random((1000, 777), dtype=np.float32)),
        "bool_mask": rng(6).random(100_000) < 0.3,
        "empty": np.zeros((0, 5)),
    }


def same_array(np, got, want, what):
    if got.dtype != want.dtype or got.shape != want.shape:
        fail(f"{what}: {got.dtype} {got.shape}, expected {want.dtype} {want.shape}")
    if not np.array_equal(got, want):
        if want.dtype.names:
            fail(f"{what}: records differ")
        bad = np.flatnonzero(got.ravel() != want.ravel())
        fail(f"{what}: {len(bad)} of {want.size} values differ, first at flat index {bad[0]}")


def np_write(d, seed):
    import numpy as np
    os.makedirs(d, exist_ok=True)
    arrs = np_arrays(seed)
    for name, a in arrs.items():
        np.save(f"{d}/{name}.npy", a)
    np.savez(f"{d}/all.npz", **arrs)
    np.savez_compressed(f"{d}/small_z.npz", records=arrs["records"], bool_mask=arrs["bool_mask"])
    files = sorted(os.listdir(d))
    manifest = {f: sha256_file(f"{d}/{f}") for f in files}
    with open(f"{d}/manifest.json", "w") as f:
        json.dump(manifest, f)
        f.flush()
        os.fsync(f.fileno())
    for f, h in manifest.items():
        record(f"np:{f}", h)
    info(f"numpy {np.__version__}: {len(arrs)} arrays in {len(files)} files, "
         f"{sum(os.path.getsize(f'{d}/{f}') for f in files) >> 20} MiB")


def np_verify(d, seed, rec):
    import numpy as np
    arrs = np_arrays(seed)
    try:
        with open(f"{d}/manifest.json") as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"manifest.json: {e}")
    recorded = {k[3:]: v for k, v in rec.items() if k.startswith("np:")}
    if manifest != recorded:
        fail(f"manifest.json {manifest} differs from what boot 1 recorded {recorded}")
    for f, h in manifest.items():
        got = sha256_file(f"{d}/{f}")
        if got != h:
            fail(f"{f}: sha256 {got}, boot 1 wrote {h}")
    for name, want in arrs.items():
        for mode in (None, "r"):
            got = np.load(f"{d}/{name}.npy", mmap_mode=mode)
            same_array(np, got, want, f"np.load({name}.npy, mmap_mode={mode!r})")
            if name == "f32_fortran" and not got.flags.f_contiguous:
                fail("f32_fortran came back in C order")
            del got
    with np.load(f"{d}/all.npz") as z:
        if sorted(z.files) != sorted(arrs):
            fail(f"all.npz holds {sorted(z.files)}")
        for name in z.files:
            same_array(np, z[name], arrs[name], f"all.npz[{name}]")
    with np.load(f"{d}/small_z.npz") as z:
        same_array(np, z["records"], arrs["records"], "small_z.npz[records]")
        same_array(np, z["bool_mask"], arrs["bool_mask"], "small_z.npz[bool_mask]")
    # Still writable: mmap_mode='r+' on a restored file, reloaded.
    a = np.load(f"{d}/f64_2d.npy", mmap_mode="r+")
    a[7, :] = -2.0
    a.flush()
    del a
    want = arrs["f64_2d"].copy()
    want[7, :] = -2.0
    same_array(np, np.load(f"{d}/f64_2d.npy"), want, "f64_2d.npy after an r+ change")
    info(f"{len(arrs)} arrays equal to the seed's through np.load (plain, mmap 'r'), "
         f"all.npz, small_z.npz; {len(manifest)} files' sha256 as recorded")


CHUNK = 1 << 20                     # float64 values per chunk: 8 MiB


def big_chunk(seed, k):
    import numpy as np
    return np.random.default_rng([seed, 1000 + k]).random(CHUNK)


def big_write(path, mib, seed):
    import numpy as np
    n = (mib << 20) // 8
    t = time.time()
    a = np.memmap(path, dtype=np.float64, mode="w+", shape=(n,))
    h = hashlib.sha256()
    total = 0.0
    for k in range(n // CHUNK):
        v = big_chunk(seed, k)
        a[k * CHUNK:(k + 1) * CHUNK] = v
        h.update(v.tobytes())
        total += float(v.sum())
    a.flush()
    del a
    if os.path.getsize(path) != n * 8:
        fail(f"{path}: {os.path.getsize(path)} bytes, expected {n * 8}")
    record("big_sha256", h.hexdigest())
    record("big_sum", repr(total))
    info(f"np.memmap w+ {mib} MiB float64 in {time.time() - t:.1f} s, sum {total!r}")


def big_verify(path, mib, seed, rec):
    import numpy as np
    n = (mib << 20) // 8
    if not os.path.exists(path) or os.path.getsize(path) != n * 8:
        fail(f"{path}: {os.path.getsize(path) if os.path.exists(path) else 'missing'}, expected {n * 8} bytes")
    t = time.time()
    a = np.memmap(path, dtype=np.float64, mode="r", shape=(n,))
    h = hashlib.sha256()
    total = 0.0
    for k in range(n // CHUNK):
        got = a[k * CHUNK:(k + 1) * CHUNK]
        want = big_chunk(seed, k)
        if not np.array_equal(got, want):
            bad = np.flatnonzero(got != want)
            fail(f"chunk {k} (bytes {k * CHUNK * 8:#x}..): {len(bad)} values differ from the seed's, "
                 f"first at byte {(k * CHUNK + bad[0]) * 8:#x}: {got[bad[0]]!r} != {want[bad[0]]!r}")
        h.update(got.tobytes())
        total += float(got.sum())
    del a
    if h.hexdigest() != need(rec, "big_sha256"):
        fail(f"sha256 {h.hexdigest()}, boot 1 recorded {rec['big_sha256']}")
    if repr(total) != need(rec, "big_sum"):
        fail(f"sum {total!r}, boot 1 recorded {rec['big_sum']}")
    # Still writable after the reboot: one chunk changed through mode 'r+',
    # then all read back in a new mapping.
    a = np.memmap(path, dtype=np.float64, mode="r+", shape=(n,))
    a[3 * CHUNK:4 * CHUNK] *= -1.0
    a.flush()
    del a
    a = np.memmap(path, dtype=np.float64, mode="r", shape=(n,))
    for k in range(n // CHUNK):
        want = big_chunk(seed, k) * (-1.0 if k == 3 else 1.0)
        if not np.array_equal(a[k * CHUNK:(k + 1) * CHUNK], want):
            fail(f"after negating chunk 3 through mode 'r+', chunk {k} differs")
    del a
    info(f"np.memmap r {mib} MiB: values, sha256 and sum as in boot 1 ({time.time() - t:.1f} s "
         f"with the r+ change)")


# --- LMDB ----------------------------------------------------------------

LMDB_MAP = 256 << 20
LMDB_N = 50000
LMDB_TXNS = 5
LMDB_BIG = 20                       # values of 10 .. 200 KiB (overflow pages)


def lmdb_expected():
    import lmdb_check
    want = {lmdb_check.key(i): lmdb_check.value(i) for i in range(LMDB_N)}
    for i in range(LMDB_N):
        k = lmdb_check.key(i)
        if i % 7 == 3:
            del want[k]
        elif i % 11 == 5:
            want[k] = b"v2-" + hashlib.sha256(b"v2" + k).digest() * 3
    for i in range(LMDB_BIG):
        want[b"big-%02d" % i] = random.Random(500 + i).randbytes(10240 * (i + 1))
    return want


def lmdb_digest(txn, db):
    h = hashlib.sha256()
    n = 0
    for k, v in txn.cursor(db=db):
        h.update(len(k).to_bytes(4, "little") + k + len(v).to_bytes(4, "little") + v)
        n += 1
    return h.hexdigest(), n


def lmdb_open(d, **kw):
    import lmdb
    return lmdb.open(d, map_size=LMDB_MAP, max_dbs=2, **kw)


def lmdb_write(d):
    import lmdb
    import lmdb_check
    os.makedirs(d, exist_ok=True)
    env = lmdb_open(d)
    main = env.open_db(b"main")
    meta = env.open_db(b"meta")
    per = LMDB_N // LMDB_TXNS
    for t in range(LMDB_TXNS):
        with env.begin(write=True, db=main) as txn:
            for i in range(t * per, (t + 1) * per):
                if not txn.put(lmdb_check.key(i), lmdb_check.value(i)):
                    fail(f"put of key {i} returned False")
    want = lmdb_expected()
    with env.begin(write=True, db=main) as txn:
        for i in range(LMDB_N):
            k = lmdb_check.key(i)
            if i % 7 == 3:
                if not txn.delete(k):
                    fail(f"delete of {k!r} found nothing")
            elif i % 11 == 5:
                txn.put(k, want[k])
        for i in range(LMDB_BIG):
            k = b"big-%02d" % i
            txn.put(k, want[k])
    with env.begin(write=True) as txn:
        digest, n = lmdb_digest(txn, main)
        if n != len(want):
            fail(f"{n} entries after the writes, expected {len(want)}")
        txn.put(b"digest", digest.encode(), db=meta)
        txn.put(b"entries", str(n).encode(), db=meta)
    env.sync(True)
    with env.begin() as txn:
        st = txn.stat(main)
    last = env.info()["last_txnid"]
    env.close()
    record("lmdb_digest", digest)
    record("lmdb_last_txnid", last)
    record("lmdb_pages", "%d/%d/%d/%d" % (st["depth"], st["branch_pages"], st["leaf_pages"], st["overflow_pages"]))
    info(f"py-lmdb {lmdb.__version__}, liblmdb {'.'.join(map(str, lmdb.version()))}: "
         f"{n} entries in {LMDB_TXNS + 2} write transactions (last txnid {last}), depth {st['depth']}, "
         f"{st['leaf_pages']} leaf / {st['overflow_pages']} overflow pages; "
         f"data.mdb {os.path.getsize(d + '/data.mdb') >> 10} KiB")


def lmdb_check_env(env, main, meta, want, what):
    """The environment's own view: stat, a full cursor scan against want,
    the digest stored in the meta database."""
    with env.begin(db=main) as txn:
        st = txn.stat(main)
        if st["entries"] != len(want):
            fail(f"{what}: stat says {st['entries']} entries, expected {len(want)}")
        n = 0
        it = iter(sorted(want))
        for k, v in txn.cursor():
            w = next(it, None)
            if k != w:
                fail(f"{what}: cursor entry {n} is {k!r}, expected {w!r}")
            if v != want[k]:
                fail(f"{what}: {k!r}: value differs ({len(v)} bytes, expected {len(want[k])})")
            n += 1
        if n != len(want):
            fail(f"{what}: the cursor saw {n} entries, expected {len(want)}")
        digest, _ = lmdb_digest(txn, main)
        stored = txn.get(b"digest", db=meta)
    return st, digest, stored


def lmdb_verify(d, rec):
    for f in ("data.mdb", "lock.mdb"):
        if not os.path.exists(f"{d}/{f}"):
            fail(f"{d}/{f} missing after the reboot")
    env = lmdb_open(d)
    stale = env.reader_check()
    if stale != 0:
        fail(f"reader_check cleared {stale} stale readers in a freshly opened environment")
    last = env.info()["last_txnid"]
    if str(last) != need(rec, "lmdb_last_txnid"):
        fail(f"last_txnid {last}, boot 1 committed up to {rec['lmdb_last_txnid']}")
    main = env.open_db(b"main", create=False)
    meta = env.open_db(b"meta", create=False)
    want = lmdb_expected()
    st, digest, stored = lmdb_check_env(env, main, meta, want, "after the reboot")
    pages = "%d/%d/%d/%d" % (st["depth"], st["branch_pages"], st["leaf_pages"], st["overflow_pages"])
    if pages != need(rec, "lmdb_pages"):
        fail(f"depth/branch/leaf/overflow pages {pages}, boot 1: {rec['lmdb_pages']}")
    if digest != need(rec, "lmdb_digest") or stored != digest.encode():
        fail(f"digest {digest}, stored in meta {stored!r}, boot 1 recorded {rec['lmdb_digest']}")
    # Still writable: a transaction after the reboot, then a compacting copy
    # (mdb_env_copy2 walks every page of the tree) checked the same way.
    with env.begin(write=True, db=main) as txn:
        txn.put(b"after-reboot", b"written in boot 2")
        txn.delete(b"big-00")
    want[b"after-reboot"] = b"written in boot 2"
    del want[b"big-00"]
    with env.begin(write=True) as txn:
        digest, _ = lmdb_digest(txn, main)
        txn.put(b"digest", digest.encode(), db=meta)
    env.sync(True)
    copy = d + "-copy"
    os.makedirs(copy, exist_ok=True)
    env.copy(copy, compact=True)
    env.close()
    for path, what in ((d, "reopened after a boot-2 write"), (copy, "compacting copy")):
        env = lmdb_open(path, readonly=True)
        main = env.open_db(b"main", create=False)
        meta = env.open_db(b"meta", create=False)
        _, got, stored = lmdb_check_env(env, main, meta, want, what)
        if got != digest or stored != digest.encode():
            fail(f"{what}: digest {got}, stored {stored!r}, expected {digest}")
        env.close()
    info(f"LMDB: stat, last txnid {last}, pages {pages}, {len(want)} entries by cursor and "
         f"digest as in boot 1; reader_check 0; a write, a compacting copy verified")


def main(argv):
    cmd, args = argv[1], argv[2:]
    if cmd == "mc-write":
        mc_write(args[0])
    elif cmd == "mc-verify":
        mc_verify(args[0], records(args[1:]))
    elif cmd == "np-write":
        np_write(args[0], int(args[1]))
    elif cmd == "np-verify":
        np_verify(args[0], int(args[1]), records(args[2:]))
    elif cmd == "big-write":
        big_write(args[0], int(args[1]), int(args[2]))
    elif cmd == "big-verify":
        big_verify(args[0], int(args[1]), int(args[2]), records(args[3:]))
    elif cmd == "lmdb-write":
        lmdb_write(args[0])
    elif cmd == "lmdb-verify":
        lmdb_verify(args[0], records(args[1:]))
    else:
        fail(f"unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv)
