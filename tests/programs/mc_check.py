"""memcached through pymemcache over a UNIX socket.

  mc_check.py set SOCK N     sets N items (sizes 1 B .. ~16 KiB, values
                             derived from the key) and gets them all back
  mc_check.py get SOCK N     prints "found F of N": how many of the N items
                             come back with their exact value; a wrong value
                             fails
"""
import hashlib
import sys

from pymemcache.client.base import Client


def fail(msg):
    print("mc_check:", msg, file=sys.stderr)
    sys.exit(1)


def key(i):
    return "item-%06d" % i


def value(i):
    h = hashlib.sha256(key(i).encode()).digest()
    n = 1 + (i * 7919) % 16384
    return (h * (n // 32 + 1))[:n]


def found(c, n):
    f = 0
    for lo in range(0, n, 100):
        keys = [key(i) for i in range(lo, min(n, lo + 100))]
        got = c.get_many(keys)
        for k, v in got.items():
            i = int(k.split("-")[1])
            if v != value(i):
                fail(f"{k}: wrong value ({len(v)} bytes, expected {len(value(i))})")
            f += 1
    return f


def main(cmd, sock, n):
    c = Client(sock, connect_timeout=10, timeout=30)
    if cmd == "set":
        for lo in range(0, n, 100):
            bad = c.set_many({key(i): value(i) for i in range(lo, min(n, lo + 100))}, noreply=False)
            if bad:
                fail(f"set_many failed for {len(bad)} keys, first {bad[0]}")
        f = found(c, n)
        if f != n:
            fail(f"right after setting them, {f} of {n} items come back")
        st = c.stats()
        print(f"info: curr_items {st.get(b'curr_items')}, bytes {st.get(b'bytes')}, "
              f"version {c.version().decode()}")
    elif cmd == "get":
        print(f"found {found(c, n)} of {n}")
    c.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
