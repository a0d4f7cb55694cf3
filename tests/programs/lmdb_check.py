"""LMDB (py-lmdb, the system liblmdb) on a file system.

  lmdb_check.py DIR MAP_SIZE N TXNS
      creates a new environment in DIR with map_size=MAP_SIZE, puts N keys
      (values derived from the key) in TXNS write transactions, closes it,
      reopens it with readonly=True and checks every key/value and the count.
"""
import hashlib
import os
import sys

import lmdb


def fail(msg):
    print("lmdb_check:", msg, file=sys.stderr)
    sys.exit(1)


def key(i):
    return b"key-%08d" % i


def value(i):
    h = hashlib.sha256(key(i)).digest()
    return h * (1 + i % 5)          # 32 .. 160 bytes


def main(d, map_size, n, txns):
    os.makedirs(d, exist_ok=True)
    env = lmdb.open(d, map_size=map_size)
    info = env.info()
    if info["map_size"] != map_size:
        fail(f"map_size {info['map_size']}, asked for {map_size}")
    per = (n + txns - 1) // txns
    for t in range(txns):
        with env.begin(write=True) as txn:
            for i in range(t * per, min(n, (t + 1) * per)):
                if not txn.put(key(i), value(i)):
                    fail(f"put of key {i} returned False")
    # Read back in the writing environment too.
    with env.begin() as txn:
        if txn.get(key(n - 1)) != value(n - 1) or txn.get(key(0)) != value(0):
            fail("a read-back in the writing environment differs")
    env.close()
    data = os.path.join(d, "data.mdb")
    print(f"info: data.mdb {os.path.getsize(data)} bytes after {n} puts, "
          f"map_size {map_size}")

    env = lmdb.open(d, readonly=True, map_size=map_size)
    st = env.stat()
    if st["entries"] != n:
        fail(f"stat: {st['entries']} entries, expected {n}")
    count = 0
    with env.begin() as txn:
        for k, v in txn.cursor():
            if k != key(count):
                fail(f"entry {count}: key {k!r}, expected {key(count)!r}")
            if v != value(count):
                fail(f"key {k!r}: value differs")
            count += 1
    env.close()
    if count != n:
        fail(f"cursor saw {count} entries, expected {n}")
    print(f"verified {count} entries")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
