"""SQLite (python3's sqlite3, the system libsqlite3) with mmap on a file system.

  sqlite_check.py grow DB ROWS BLOB TXNS [--wal] [--hold] [--shrink]
      PRAGMA mmap_size=4 GiB on a new database DB; inserts ROWS rows with
      BLOB-byte values in TXNS transactions while a second connection in
      another process (sqlite_check.py reader) reads after every commit, so
      the file is mapped by both while it grows.  --wal: journal_mode=WAL
      (the -shm file is mmapped too); the reader checks snapshot isolation
      around every commit.  --hold (with --wal): the reader keeps one read
      transaction open across all commits, so no checkpoint can reset the
      WAL and its index (-shm) grows past its first 32 KiB region.
      --shrink (rollback journal): then deletes 3 rows in 4 and VACUUMs, so
      the file shrinks while both connections map it, and checks again.
      Ends with PRAGMA integrity_check and a content checksum, from both
      connections and from a fresh one, against the expected checksum.
  sqlite_check.py reader DB
      the second connection: reads commands on stdin, answers on stdout.
"""
import hashlib
import os
import subprocess
import sys
import time
import sqlite3

MMAP = 4 << 30


def fail(msg):
    print("sqlite_check:", msg, file=sys.stderr)
    sys.exit(1)


def blob(i, size):
    h = hashlib.sha256(b"%d" % i).digest()
    return (h * (size // 32 + 1))[:size]


def checksum_rows(rows):
    """(id, value) rows in id order -> (count, total bytes, sha256 hex)."""
    h = hashlib.sha256()
    n = total = 0
    for i, v in rows:
        h.update(b"%d:" % i)
        h.update(v)
        n += 1
        total += len(v)
    return n, total, h.hexdigest()


def connect(db):
    c = sqlite3.connect(db, isolation_level=None, timeout=60)
    got = c.execute(f"PRAGMA mmap_size={MMAP}").fetchone()
    return c, (got[0] if got else None)


def content(c):
    return checksum_rows(c.execute("SELECT id, v FROM t ORDER BY id"))


def reader(db):
    c, _ = connect(db)
    out = sys.stdout
    for line in sys.stdin:
        cmd = line.split()
        try:
            if cmd[0] == "count":
                n, total = c.execute("SELECT count(*), coalesce(sum(length(v)), 0) FROM t").fetchone()
                out.write(f"{n} {total}\n")
            elif cmd[0] == "begin":
                c.execute("BEGIN")
                n, = c.execute("SELECT count(*) FROM t").fetchone()   # takes the snapshot
                out.write(f"{n}\n")
            elif cmd[0] == "end":
                c.execute("COMMIT")
                out.write("done\n")
            elif cmd[0] == "sum":
                n, total, h = content(c)
                out.write(f"{n} {total} {h}\n")
            elif cmd[0] == "quit":
                c.close()
                out.write("bye\n")
                out.flush()
                return
        except sqlite3.Error as e:
            out.write(f"error {type(e).__name__}: {e} ({getattr(e, 'sqlite_errorname', '?')})\n")
        out.flush()


class Reader:
    def __init__(self, db):
        self.p = subprocess.Popen([sys.executable, __file__, "reader", db],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().strip()
        if not line or line.startswith("error"):
            fail(f"reader connection, {cmd!r}: {line or 'no answer (died?)'}")
        return line


def verify(w, r, ids, size):
    """integrity_check, then the content checksum from the writer's and the
    reader's connection against the rows ids should hold; returns it."""
    want = checksum_rows((i, blob(i, size)) for i in ids)
    want_s = f"{want[0]} {want[1]} {want[2]}"
    got = r.ask("count")
    if got != f"{want[0]} {want[1]}":
        fail(f"the reader counts {got!r}, expected '{want[0]} {want[1]}'")
    ok, = w.execute("PRAGMA integrity_check").fetchone()
    if ok != "ok":
        fail(f"integrity_check (writer): {ok}")
    got = content(w)
    if got != want:
        fail(f"writer's checksum {got}, expected {want}")
    got = r.ask("sum")
    if got != want_s:
        fail(f"reader's checksum {got}, expected {want_s}")
    return want


def grow(db, rows, size, txns, wal, hold, shrink):
    for suffix in ("", "-journal", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    w, mm = connect(db)
    print(f"info: sqlite {sqlite3.sqlite_version}; PRAGMA mmap_size={MMAP} gives {mm}")
    if wal:
        mode, = w.execute("PRAGMA journal_mode=WAL").fetchone()
        if mode != "wal":
            fail(f"journal_mode=WAL gave {mode}")
    w.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB NOT NULL)")
    r = Reader(db)
    if r.ask("count") != "0 0":
        fail("the reader does not see an empty table")
    per = (rows + txns - 1) // txns
    done = total = 0
    sizes = []
    start = time.monotonic()
    if hold:
        if r.ask("begin") != "0":
            fail("the reader's snapshot is not empty")
    for t in range(txns):
        hi = min(rows, (t + 1) * per)
        if wal and not hold:
            snap = r.ask("begin")
            if snap != str(done):
                fail(f"txn {t}: the reader's snapshot has {snap} rows, expected {done}")
        try:
            w.execute("BEGIN")
            w.executemany("INSERT INTO t VALUES (?, ?)", ((i, blob(i, size)) for i in range(done, hi)))
            w.execute("COMMIT")
        except sqlite3.Error as e:
            fail(f"txn {t} (rows {done}..{hi - 1}, file {os.path.getsize(db)} bytes): "
                 f"{type(e).__name__}: {e} ({getattr(e, 'sqlite_errorname', '?')})")
        total += (hi - done) * size
        done = hi
        sizes.append(os.path.getsize(db))
        if wal and not hold:
            # Snapshot isolation: the reader's open transaction still sees
            # the old rows; after it ends, the new ones.
            got = r.ask("count")
            if got.split()[0] != snap:
                fail(f"txn {t}: the reader's snapshot saw {got}, expected {snap} rows")
            r.ask("end")
        if not hold:
            got = r.ask("count")
            if got != f"{done} {total}":
                fail(f"after txn {t}: the reader sees {got!r}, expected '{done} {total}'")
    elapsed = time.monotonic() - start
    extra = ""
    if wal:
        extra = f", -wal {os.path.getsize(db + '-wal')} bytes, -shm {os.path.getsize(db + '-shm')} bytes"
    print(f"info: {rows} rows of {size} bytes in {txns} txns: {elapsed:.1f} s; "
          f"db file sizes after each txn: {sizes}{extra}")
    if hold:
        shm = os.path.getsize(db + "-shm")
        if shm <= 32768:
            fail(f"the -shm file has {shm} bytes: the WAL did not need a second index region")
        if r.ask("count") != "0 0":
            fail("the reader's held snapshot does not stay empty")
        r.ask("end")
        got = r.ask("count")
        if got != f"{done} {total}":
            fail(f"after ending its snapshot, the reader sees {got!r}, expected '{done} {total}'")

    want = verify(w, r, range(rows), size)
    if shrink:
        # Three rows in four go, and VACUUM rewrites the database: the file
        # shrinks below 2 MiB (order 2 -> 1) while both connections map it.
        before = os.path.getsize(db)
        try:
            w.execute("DELETE FROM t WHERE id % 4 != 0")
            w.execute("VACUUM")
        except sqlite3.Error as e:
            fail(f"DELETE + VACUUM: {type(e).__name__}: {e} ({getattr(e, 'sqlite_errorname', '?')})")
        after = os.path.getsize(db)
        print(f"info: DELETE + VACUUM shrank the db file from {before} to {after} bytes")
        if after >= before:
            fail("VACUUM did not shrink the file")
        want = verify(w, r, range(0, rows, 4), size)
    want_s = f"{want[0]} {want[1]} {want[2]}"
    if r.ask("quit") != "bye" or r.p.wait() != 0:
        fail("the reader did not exit cleanly")
    if wal:
        busy, logf, ckpt = w.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy or logf != 0:
            fail(f"wal_checkpoint(TRUNCATE) gave busy={busy} log={logf} checkpointed={ckpt}")
    w.close()
    # A fresh connection in a fresh process sees the same.
    code = ("import sys; sys.path.insert(0, sys.argv[2]); import sqlite_check as s;"
            "c, _ = s.connect(sys.argv[1]);"
            "print(c.execute('PRAGMA integrity_check').fetchone()[0], *s.content(c))")
    p = subprocess.run([sys.executable, "-c", code, db, os.path.dirname(os.path.abspath(__file__))],
                       capture_output=True, text=True)
    if p.returncode != 0 or p.stdout.strip() != "ok " + want_s:
        fail(f"fresh process: {p.stdout.strip()!r} {p.stderr.strip()[-800:]}, expected 'ok {want_s}'")
    print(f"info: final db file {os.path.getsize(db)} bytes; integrity ok; checksum {want[2][:16]}")


if __name__ == "__main__":
    if sys.argv[1] == "reader":
        reader(sys.argv[2])
    elif sys.argv[1] == "grow":
        a = sys.argv[2:]
        flags = {x for x in a if x.startswith("--")}
        a = [x for x in a if not x.startswith("--")]
        grow(a[0], int(a[1]), int(a[2]), int(a[3]), "--wal" in flags, "--hold" in flags,
             "--shrink" in flags)
    else:
        fail(f"unknown command {sys.argv[1]}")
