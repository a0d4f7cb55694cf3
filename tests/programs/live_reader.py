"""A read-only reader beside a writer that commits (tests/preload_test).

  live_reader.py lmdb DIR ROUNDS
      The writer (this script again, "lmdb-writer DIR", a child process)
      creates an LMDB environment in DIR (map_size 64 MiB) holding 3 MiB,
      so data.mdb is larger than the shim's threshold and its morsel's
      extent (1 GiB) holds the reader's 64 MiB mapping.  Then this process
      opens DIR readonly=True (MDB_RDONLY: data.mdb is opened O_RDONLY and
      mapped PROT_READ, MAP_SHARED) and, ROUNDS times, asks the writer for
      a commit and checks that a new read transaction sees it: the key
      "round" holds the round's number and "key-K" its value.
  live_reader.py sqlite DB ROUNDS
      The writer ("sqlite-writer DB") creates DB (rollback journal) with
      3 MiB of rows and a counter.  This process opens it read-only
      (file:DB?mode=ro, so the descriptor is O_RDONLY) with
      PRAGMA mmap_size=256 MiB and, ROUNDS times, asks for a commit (the
      counter set to the round, a row added) and checks that a new read
      sees the counter, the row count and the new row; a DatabaseError
      ("database disk image is malformed") is a failure.  Then
      PRAGMA quick_check.

Both run under whatever LD_PRELOAD the caller set, the writer too (its
descriptors are O_RDWR: the shim leaves them to the kernel).  Writer and
reader take turns over pipes: the reader writes a round's number on the
writer's stdin, the writer answers "committed K" when the commit is done.
Prints "saw every commit (ROUNDS)" and exits 0, or says what it saw and
exits 1.
"""
import hashlib
import os
import subprocess
import sys

ROUND_BYTES = 8192


def fail(msg):
    print("live_reader: " + msg, flush=True)
    sys.exit(1)


def value(k):
    return (hashlib.sha256(b"%d" % k).digest() * (ROUND_BYTES // 32))


def writer_loop(commit):
    print("ready", flush=True)
    for line in sys.stdin:
        k = int(line)
        commit(k)
        print("committed %d" % k, flush=True)


def lmdb_writer(d):
    import lmdb
    env = lmdb.open(d, map_size=64 << 20)
    with env.begin(write=True) as txn:
        txn.put(b"bulk", b"\x5a" * (3 << 20))
        txn.put(b"round", b"0")

    def commit(k):
        with env.begin(write=True) as txn:
            txn.put(b"round", b"%d" % k)
            txn.put(b"key-%d" % k, value(k))
    writer_loop(commit)
    env.close()


def sqlite_writer(db):
    import sqlite3
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("CREATE TABLE c(n INTEGER)")
    con.execute("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)")
    con.execute("BEGIN")
    con.execute("INSERT INTO c VALUES (0)")
    for i in range(384):
        con.execute("INSERT INTO t(k, v) VALUES (?, ?)", (-1 - i, value(i)))
    con.execute("COMMIT")

    def commit(k):
        con.execute("BEGIN IMMEDIATE")
        con.execute("UPDATE c SET n = ?", (k,))
        con.execute("INSERT INTO t(k, v) VALUES (?, ?)", (k, value(k)))
        con.execute("COMMIT")
    writer_loop(commit)
    con.close()


def start_writer(mode, path):
    w = subprocess.Popen([sys.executable, __file__, mode, path],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    if w.stdout.readline().strip() != "ready":
        fail("the writer did not start")
    return w


def ask(w, k):
    w.stdin.write("%d\n" % k)
    w.stdin.flush()
    got = w.stdout.readline().strip()
    if got != "committed %d" % k:
        fail("round %d: the writer answered %r" % (k, got))


def stop(w):
    w.stdin.close()
    if w.wait() != 0:
        fail("the writer exited with status %d" % w.returncode)


def lmdb_reader(d, rounds):
    import lmdb
    w = start_writer("lmdb-writer", d)
    print("data.mdb: %d bytes" % os.path.getsize(os.path.join(d, "data.mdb")),
          flush=True)
    env = lmdb.open(d, readonly=True)
    with env.begin() as txn:
        if txn.get(b"round") != b"0":
            fail("before the first commit: round %r" % txn.get(b"round"))
    for k in range(1, rounds + 1):
        ask(w, k)
        with env.begin() as txn:
            r, v = txn.get(b"round"), txn.get(b"key-%d" % k)
        if r != b"%d" % k or v != value(k):
            fail("stale: after commit %d the reader sees round %r and "
                 "key-%d %s" % (k, r, k, "missing" if v is None
                                else "different"))
    env.close()
    stop(w)
    print("saw every commit (%d)" % rounds)


def sqlite_reader(db, rounds):
    import sqlite3
    w = start_writer("sqlite-writer", db)
    print("db: %d bytes" % os.path.getsize(db), flush=True)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True,
                          isolation_level=None)
    mm = con.execute("PRAGMA mmap_size=%d" % (256 << 20)).fetchall()[0]
    if not mm or mm[0] <= 0:
        fail("mmap_size is %r: this SQLite does not map the file" % (mm,))
    try:
        n, rows = con.execute(
            "SELECT (SELECT n FROM c), (SELECT count(*) FROM t)").fetchall()[0]
        if n != 0 or rows != 384:
            fail("before the first commit: counter %d, %d rows" % (n, rows))
        for k in range(1, rounds + 1):
            ask(w, k)
            n, rows, v = con.execute(
                "SELECT (SELECT n FROM c), (SELECT count(*) FROM t), "
                "(SELECT v FROM t WHERE k = ?)", (k,)).fetchall()[0]
            if n != k or rows != 384 + k or v != value(k):
                fail("stale: after commit %d the reader sees counter %d, "
                     "%d rows, row %d %s" % (k, n, rows, k, "missing"
                                             if v is None else "different"))
        check = con.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as e:
        fail("corrupt: %s" % e)
    if check != [("ok",)]:
        fail("quick_check: %r" % (check,))
    con.close()
    stop(w)
    print("saw every commit (%d)" % rounds)


def main(argv):
    if len(argv) == 3 and argv[1] == "lmdb-writer":
        lmdb_writer(argv[2])
    elif len(argv) == 3 and argv[1] == "sqlite-writer":
        sqlite_writer(argv[2])
    elif len(argv) == 4 and argv[1] == "lmdb":
        lmdb_reader(argv[2], int(argv[3]))
    elif len(argv) == 4 and argv[1] == "sqlite":
        sqlite_reader(argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main(sys.argv)
