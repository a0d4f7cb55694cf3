"""A file tree with every kind of entry, and a comparison of two trees.

  tree.py make DIR [--plain] [--xattrs]
      creates DIR with regular files (empty, 1 B, 4 KiB, 4 KiB+1, 3 MiB,
      a name with spaces and non-ASCII), nested and empty directories, hard
      links (within and across directories), odd permissions (0000, setuid,
      setgid, sticky, read-only directory), other owners, old/future/
      nanosecond mtimes, and (unless --plain) symlinks (relative, absolute,
      dangling, to a directory) and a FIFO.  --xattrs: user.* extended
      attributes on a file and a directory.
  tree.py compare A B [--xattrs]
      compares type, permissions, owner, size, content, symlink target,
      mtime (ns) of every entry, and which paths share an inode (hard
      links); with --xattrs also user.* xattrs.  Prints every difference.
"""
import hashlib
import os
import stat
import sys

NS = 10**9
TIMES = {                             # path -> mtime in ns
    "empty": 315532800 * NS,                          # 1980-01-01
    "one": 4102444800 * NS + 123456789,               # 2100-01-01, ns
    "page": 1234567890 * NS + 987654321,
    "page+1": 1000000000 * NS,
    "big": 1600000000 * NS + 1,
    "sp ace ü.txt": 1500000000 * NS + 500000000,
    "a/b/c/deep": 1111111111 * NS + 111111111,
    "modes/none": 1700000000 * NS,
    "modes/suid": 1700000001 * NS,
    "modes/sgid": 1700000002 * NS,
    "modes/ro": 1700000003 * NS,
    "modes/x": 1700000004 * NS,
    "links/target": 1650000000 * NS + 42,
    "links/pair1": 1660000000 * NS,
}


def data(name, n):
    h = hashlib.sha256(name.encode()).digest()
    return (h * (n // 32 + 1))[:n]


def make(d, plain, xattrs):
    os.makedirs(d)
    files = {"empty": 0, "one": 1, "page": 4096, "page+1": 4097, "big": 3 << 20,
             "sp ace ü.txt": 100, "a/b/c/deep": 5000, "modes/none": 10,
             "modes/suid": 20, "modes/sgid": 30, "modes/ro": 40, "modes/x": 50,
             "links/target": 6000, "links/pair1": 7}
    for p in ("a/b/c", "a/empty", "modes", "links", "links/sub", "sticky", "rodir"):
        os.makedirs(os.path.join(d, p), exist_ok=True)
    for p, n in files.items():
        with open(os.path.join(d, p), "wb") as f:
            f.write(data(p, n))
    with open(os.path.join(d, "rodir/inside"), "wb") as f:
        f.write(b"in a read-only directory\n")
    # Hard links: three names for links/target (one in a subdirectory, one
    # in another top-level directory), two for links/pair1.
    os.link(os.path.join(d, "links/target"), os.path.join(d, "links/sub/target-hl"))
    os.link(os.path.join(d, "links/target"), os.path.join(d, "a/target-hl"))
    os.link(os.path.join(d, "links/pair1"), os.path.join(d, "links/pair2"))
    if not plain:
        os.symlink("../links/target", os.path.join(d, "a/rel-link"))
        os.symlink("/etc/hostname", os.path.join(d, "abs-link"))
        os.symlink("no/such/file", os.path.join(d, "dangling"))
        os.symlink("a/b", os.path.join(d, "dir-link"))
        os.mkfifo(os.path.join(d, "links/fifo"), 0o640)
    for p, m in {"modes/none": 0o000, "modes/suid": 0o4755, "modes/sgid": 0o2711,
                 "modes/ro": 0o444, "modes/x": 0o751, "links/target": 0o600,
                 "sticky": 0o1777, "a/empty": 0o700, "links/sub": 0o750}.items():
        os.chmod(os.path.join(d, p), m)
    os.chown(os.path.join(d, "modes/x"), 1234, 5678)
    os.chown(os.path.join(d, "a/b"), 4321, 8765)
    if not plain:
        os.chown(os.path.join(d, "dangling"), 1234, 5678, follow_symlinks=False)
    if xattrs:
        os.setxattr(os.path.join(d, "one"), "user.comment", b"one byte file")
        os.setxattr(os.path.join(d, "big"), "user.checksum", hashlib.sha256(data("big", 3 << 20)).digest())
        os.setxattr(os.path.join(d, "a/b"), "user.dir", b"a directory's attribute")
    for p, t in TIMES.items():
        os.utime(os.path.join(d, p), ns=(t, t))
    if not plain:
        for i, p in enumerate(("a/rel-link", "abs-link", "dangling", "dir-link", "links/fifo")):
            t = (1400000000 + i) * NS + 777
            os.utime(os.path.join(d, p), ns=(t, t), follow_symlinks=False)
    # Directories last, deepest first; the read-only one after its content.
    dirs = sorted((os.path.relpath(r, d) for r, _, _ in os.walk(d)), key=len, reverse=True)
    for i, p in enumerate(dirs):
        t = (1300000000 + i * 1000) * NS + i
        os.utime(os.path.join(d, p), ns=(t, t))
    os.chmod(os.path.join(d, "rodir"), 0o555)
    t = 1299999999 * NS
    os.utime(os.path.join(d, "rodir"), ns=(t, t))


def describe(root, xattrs):
    """relpath -> attribute dict; and the groups of paths sharing an inode."""
    out, inodes = {}, {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [""] + dirnames + filenames if dirpath == root else dirnames + filenames:
            full = os.path.join(dirpath, name) if name else dirpath
            rel = os.path.relpath(full, root)
            st = os.lstat(full)
            a = {"type": stat.S_IFMT(st.st_mode), "uid": st.st_uid, "gid": st.st_gid,
                 "mtime_ns": st.st_mtime_ns, "nlink": st.st_nlink if not stat.S_ISDIR(st.st_mode) else None}
            if not stat.S_ISLNK(st.st_mode):
                a["mode"] = oct(stat.S_IMODE(st.st_mode))
            if stat.S_ISREG(st.st_mode):
                a["size"] = st.st_size
                with open(full, "rb") as f:
                    a["sha256"] = hashlib.sha256(f.read()).hexdigest()[:16]
                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
            if stat.S_ISLNK(st.st_mode):
                a["target"] = os.readlink(full)
            if xattrs and not stat.S_ISLNK(st.st_mode):
                a["xattrs"] = {k: os.getxattr(full, k) for k in sorted(os.listxattr(full))
                               if k.startswith("user.")}
            out[rel] = a
    groups = sorted(sorted(g) for g in inodes.values() if len(g) > 1)
    return out, groups


def compare(a, b, xattrs):
    da, ga = describe(a, xattrs)
    db, gb = describe(b, xattrs)
    diffs = []
    for p in sorted(set(da) | set(db)):
        if p not in db:
            diffs.append(f"{p}: missing in {b}")
        elif p not in da:
            diffs.append(f"{p}: only in {b}")
        else:
            for k in sorted(set(da[p]) | set(db[p])):
                if da[p].get(k) != db[p].get(k):
                    diffs.append(f"{p}: {k} {da[p].get(k)!r} in {a}, {db[p].get(k)!r} in {b}")
    if ga != gb:
        diffs.append(f"hard-link groups differ: {ga} in {a}, {gb} in {b}")
    for x in diffs[:40]:
        print("  " + x, file=sys.stderr)
    if diffs:
        print(f"tree.py: {len(diffs)} differences between {a} and {b}", file=sys.stderr)
        sys.exit(1)
    print(f"same: {len(da)} entries, {len(ga)} hard-link groups")


if __name__ == "__main__":
    args = [x for x in sys.argv[1:] if not x.startswith("--")]
    flags = {x for x in sys.argv[1:] if x.startswith("--")}
    if args[0] == "make":
        make(args[1], "--plain" in flags, "--xattrs" in flags)
    elif args[0] == "compare":
        compare(args[1], args[2], "--xattrs" in flags)
    else:
        sys.exit(f"tree.py: unknown command {args[0]}")
