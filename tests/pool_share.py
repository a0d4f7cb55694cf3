#!/usr/bin/env python3
"""One copy for several hosts (issue 25): run in every guest of vm/multi by
tests/pool_test.  Guest 0 publishes: mkfs, mount -o pool, sealed files;
the others mount the pool read-only and map them.  docs/design.md gives
the rules checked here:

  reader_sees_only_sealed_files   a reader lists and opens the sealed file,
                                  not the unsealed one (ENOENT)
  reader_maps_the_publishers_pages  the reader's mapping reads the bytes
                                  from the same physical page the
                                  publisher's mapping has: one copy
  reader_cannot_write             O_RDWR is EROFS, a writable shared
                                  mapping of a read-only fd EACCES
  writer_claim_is_exclusive       a read-write mount on a reader host while
                                  the publisher lives is EBUSY
  sealed_file_is_final            on the publisher: write, truncate,
                                  fallocate are EPERM, a shared mapping
                                  through a writable fd EPERM
  new_files_appear_without_remount  a file sealed after the reader mounted
                                  is listed and read
  deletion_waits_for_the_lease    the publisher deletes a file a reader
                                  maps: its name goes at once, its pages
                                  stay (free space) and keep their bytes
                                  until the reader closes it, also across
                                  the publisher's unmount and mount (the
                                  mount keeps a leased orphan: what it
                                  does after a publisher crash too)
  dead_readers_leases_expire      a reader host that dies holding a lease
                                  (it reboots without unmounting) stops
                                  blocking the deletion one lease period
                                  after its heartbeat stops
  reader_lets_go_of_freed_trees   the reader reads f and closes it (its
                                  inode stays cached); the publisher
                                  deletes f (freed at once: no lease) and
                                  seals e, as large as the free space, on
                                  f's record and pages; the reader reads e
                                  and drops its inode cache: f's stale
                                  inode must not touch e's tree (a reader
                                  holds a tree only while it has the file
                                  open; the debug kernel's run shows a
                                  page table freed twice otherwise)
  cache_serves_every_host_from_one_load  every guest's morsel-cached runs
                                  with --pool; a client on each asks for
                                  the same file (on the shared 9p
                                  directory) at once: the publisher's
                                  daemon loads it into the pool once, the
                                  readers' daemons wait for it and serve
                                  it (loads 0, hits 1), every client reads
                                  the file's bytes
  fsck_after                      morsel fsck finds the pool clean
  pool_bad_options                -o pool without pmem= and a read-only
                                  -o pool mount of a device without a pool
                                  are EINVAL; a reader's remount
                                  read-write is EINVAL

Every wait is for a condition (a file in $MORSEL_RENDEZVOUS, free space),
with a deadline, never a fixed delay.  Prints "ok NAME" / "FAILED NAME: why".
"""
import ctypes
import errno
import fcntl
import hashlib
import mmap
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "python"))
os.environ.setdefault("MORSEL_LIBRARY", os.path.join(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))), "lib", "libmorsel.so.1"))
import morsel  # noqa: E402  (the repository's package, found above)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MORSEL = os.path.join(REPO, "tools", "morsel")
ME = int(os.environ["MORSEL_GUEST"])
N = int(os.environ["MORSEL_GUESTS"])
DEV = os.environ["MORSEL_POOL"]
RDV = os.environ["MORSEL_RENDEZVOUS"]
MNT = "/tmp/pool"  # the guest's own tmpfs (the host root is read-only)
SEAL = 0xB910  # _IO(0xB9, 0x10): MORSEL_IOC_SEAL
LEASE_MS = 2000
SIZE = 4 << 20
PAGES = SIZE // 4096
DEADLINE = time.monotonic() + 240
passed = failed = 0


def ok(name):
    global passed
    passed += 1
    print("ok     " + name, flush=True)


def bad(name, why):
    global failed
    failed += 1
    print("FAILED %s: %s" % (name, why), flush=True)


def wait_for(cond):
    while not cond():
        if time.monotonic() > DEADLINE or signalled("abort"):
            return False
        time.sleep(0.05)
    return True


def signal(name):
    open(os.path.join(RDV, name), "w").close()


def signalled(name):
    return os.path.exists(os.path.join(RDV, name))


def all_readers(prefix):
    return all(signalled("%s.%d" % (prefix, i)) for i in range(1, N))


def content(tag, size=SIZE):
    out = bytearray()
    i = 0
    while len(out) < size:
        out += hashlib.sha256(b"%s %d" % (tag, i)).digest()
        i += 1
    return bytes(out[:size])


def mount(opts, check=True):
    os.makedirs(MNT, exist_ok=True)
    r = subprocess.run(["mount", "-t", "morselfs", "-o", opts, "none", MNT],
                       capture_output=True, text=True)
    if check and r.returncode:
        raise SystemExit("mount -o %s: %s" % (opts, r.stderr.strip()))
    return r


def pfn(addr):
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(addr // 4096 * 8)
        (e,) = struct.unpack("<Q", f.read(8))
    return e & ((1 << 55) - 1) if e >> 63 else None


def map_addr(m):
    return ctypes.addressof(ctypes.c_char.from_buffer(m))


def map_ro(path):
    """A shared read-only mapping of PATH (mounted: one entry): (fd, mmap)."""
    fd = os.open(path, os.O_RDONLY)
    return fd, mmap.mmap(fd, SIZE, mmap.MAP_SHARED, mmap.PROT_READ)


def page0_pfn(path):
    """The physical page of PATH's first page.  Through a private mapping,
    only read: pagemap skips the mounted (VM_PFNMAP) one; a read fault of a
    private mapping maps the morsel's own page until a write copies it
    (PROT_WRITE only so that ctypes can take its address)."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 4096, mmap.MAP_PRIVATE,
                      mmap.PROT_READ | mmap.PROT_WRITE)
        m[0]
        n = pfn(map_addr(m))
        m.close()
    return n


def publish(name, tag, size=SIZE):
    path = os.path.join(MNT, name)
    with open(path, "wb") as f:
        f.write(content(tag, size))
        fcntl.ioctl(f.fileno(), SEAL)


def free_pages():
    return os.statvfs(MNT).f_bfree


def set_lease():
    with open("/sys/module/morsel/parameters/pool_lease_ms", "w") as f:
        f.write(str(LEASE_MS))


def errno_of(fn):
    try:
        fn()
    except OSError as e:
        return e.errno
    return 0


def mount_errno(opts, flags=0, source=b"none"):
    """mount(2) itself (mount(8) words its errors its own way): 0 or errno."""
    os.makedirs(MNT, exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.mount(source, MNT.encode(), b"morselfs", flags, opts.encode())
    e = ctypes.get_errno()
    if not r:
        subprocess.run(["umount", MNT])
    return e if r else 0


MS_RDONLY, MS_REMOUNT = 1, 32


CACHE_SRC = os.path.join(RDV, "model.bin")
CACHED = os.path.join(REPO, "cached", "morsel-cached")


def cache_phase():
    """Every guest: a daemon with --pool, one client, at the same moment."""
    sock = "/tmp/pool-cached.sock"
    log = open("/tmp/pool-cached.log", "w")
    d = subprocess.Popen([CACHED, "--socket", sock, "--dir", "/tmp/morsel/cache",
                          "--pool", MNT, "--pool-wait", "120s", "-v"],
                         stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_for(lambda: os.path.exists(sock)):
            bad("cache_serves_every_host_from_one_load", "the daemon did not start")
            return
        signal("cache_ready.%d" % ME)
        if not wait_for(lambda: all(signalled("cache_ready.%d" % i) for i in range(N))):
            bad("cache_serves_every_host_from_one_load", "not every daemon started")
            return
        f = morsel.cache_map(CACHE_SRC, socket=sock)
        got = ctypes.string_at(f.address, SIZE)
        st = morsel.cache_stats(socket=sock)
        want = (1, 0) if ME == 0 else (0, 1)
        pool_files = [n for n in os.listdir(MNT) if n.startswith("p.")]
        if got == content(b"model") and (st.loads, st.hits) == want and len(pool_files) == 1:
            ok("cache_serves_every_host_from_one_load")
        else:
            bad("cache_serves_every_host_from_one_load",
                "bytes %s, loads %d hits %d (want %s), pool files %s"
                % ("equal" if got == content(b"model") else "differ",
                   st.loads, st.hits, want, pool_files))
        f.close()
    finally:
        d.terminate()
        d.wait()
        log.close()
    signal("cache_done.%d" % ME)


def deferred(name, kept, before):
    """A deleted file's pages were @kept while leased; are they freed now?"""
    freed = wait_for(lambda: free_pages() >= before + PAGES)
    if kept and freed:
        ok(name)
    else:
        bad(name, "kept while leased: %s, freed after: %s (%d -> %d free pages)"
            % (kept, freed, before, free_pages()))


def publisher():
    subprocess.run([MORSEL, "mkfs", "-f", DEV], check=True, capture_output=True)
    set_lease()
    e1 = mount_errno("pool")
    e2 = mount_errno("pmem=%s,pool" % DEV, MS_RDONLY)
    if e1 == e2 == errno.EINVAL:
        ok("pool_bad_options")
    else:
        bad("pool_bad_options", "pool alone: %s, read-only without a pool: %s"
            % (errno.errorcode.get(e1, e1), errno.errorcode.get(e2, e2)))
    mount("pmem=%s,pool" % DEV)
    publish("f", b"f")  # first: the lowest inode number, reused by e
    publish("a", b"a")
    publish("c", b"c")
    with open(CACHE_SRC, "wb") as f:
        f.write(content(b"model"))
    with open(os.path.join(MNT, "u"), "wb") as f:
        f.write(content(b"u"))
    with open(os.path.join(RDV, "pfn"), "w") as f:
        f.write(str(page0_pfn(os.path.join(MNT, "a"))))

    # sealed_file_is_final
    path = os.path.join(MNT, "a")
    fd = os.open(path, os.O_RDWR)
    why = []
    for what, fn in (("write", lambda: os.pwrite(fd, b"x", 0)),
                     ("truncate", lambda: os.ftruncate(fd, 4096)),
                     ("fallocate", lambda: os.posix_fallocate(fd, 0, 2 * SIZE)),
                     ("mmap", lambda: mmap.mmap(fd, SIZE, mmap.MAP_SHARED))):
        e = errno_of(fn)
        if e != errno.EPERM:
            why.append("%s: %s" % (what, errno.errorcode.get(e, e)))
    os.close(fd)
    if open(path, "rb").read() != content(b"a"):
        why.append("the bytes changed")
    ok("sealed_file_is_final") if not why else bad("sealed_file_is_final", ", ".join(why))
    signal("published")

    if not wait_for(lambda: all_readers("mapped")):
        bad("deletion_waits_for_the_lease", "the readers did not map a")
        return
    before = free_pages()
    os.unlink(os.path.join(MNT, "a"))
    kept = free_pages() <= before
    subprocess.run(["umount", MNT], check=True)
    mount("pmem=%s,pool" % DEV)
    kept = kept and free_pages() <= before
    publish("b", b"b")
    before = free_pages()
    signal("deleted")
    if not wait_for(lambda: all_readers("closed")):
        bad("deletion_waits_for_the_lease", "the readers did not close a")
        return
    deferred("deletion_waits_for_the_lease", kept, before)
    if not wait_for(lambda: all_readers("f_closed")):
        bad("reader_lets_go_of_freed_trees", "the readers did not read f")
    before = free_pages()
    os.unlink(os.path.join(MNT, "f"))
    if free_pages() < before + PAGES:
        bad("reader_lets_go_of_freed_trees", "f was not freed at once")
    # e fills the pool: f's record, and the allocator wraps onto f's pages.
    publish("e", b"e", (free_pages() - 256) * 4096)
    signal("reused")
    if not wait_for(lambda: all_readers("e_read")):
        bad("reader_lets_go_of_freed_trees", "the readers did not read e")
    os.unlink(os.path.join(MNT, "e"))

    cache_phase()
    if not wait_for(lambda: all_readers("cache_done")):
        bad("cache_serves_every_host_from_one_load", "the readers did not finish")
    if not wait_for(lambda: all_readers("holding")):
        bad("dead_readers_leases_expire", "the readers did not open c")
        return
    before = free_pages()
    os.unlink(os.path.join(MNT, "c"))
    deferred("dead_readers_leases_expire", free_pages() <= before, before)

    subprocess.run(["umount", MNT], check=True)
    r = subprocess.run([MORSEL, "fsck", DEV], capture_output=True, text=True)
    ok("fsck_after") if r.returncode == 0 else bad("fsck_after", r.stdout + r.stderr)


def reader():
    if not wait_for(lambda: signalled("published")):
        bad("reader_sees_only_sealed_files", "nothing was published")
        return
    set_lease()
    # writer_claim_is_exclusive: before the reader mount (one instance per device)
    e = mount_errno("pmem=" + DEV)
    if e == errno.EBUSY:
        ok("writer_claim_is_exclusive")
    else:
        bad("writer_claim_is_exclusive", "mount: %s" % errno.errorcode.get(e, e))
    mount("ro,pmem=%s" % DEV)
    libc = ctypes.CDLL(None, use_errno=True)
    r = libc.mount(b"none", MNT.encode(), b"morselfs", MS_REMOUNT, b"")
    e = ctypes.get_errno()
    if r and e == errno.EINVAL:
        ok("pool_bad_options")
    else:
        bad("pool_bad_options", "remount read-write: %d %s" % (r, errno.errorcode.get(e, e)))

    names = sorted(os.listdir(MNT))
    e = errno_of(lambda: os.open(os.path.join(MNT, "u"), os.O_RDONLY))
    with open(os.path.join(MNT, "f"), "rb") as f:
        f_ok = f.read() == content(b"f")
    signal("f_closed.%d" % ME)
    if names == ["a", "c", "f"] and e == errno.ENOENT and f_ok:
        ok("reader_sees_only_sealed_files")
    else:
        bad("reader_sees_only_sealed_files", "listed %s, u: %s, f read %s"
            % (names, errno.errorcode.get(e, e), f_ok))

    fd, m = map_ro(os.path.join(MNT, "a"))
    a_pfn = page0_pfn(os.path.join(MNT, "a"))
    want = int(open(os.path.join(RDV, "pfn")).read())
    if m[:] == content(b"a") and a_pfn == want:
        ok("reader_maps_the_publishers_pages")
    else:
        bad("reader_maps_the_publishers_pages", "pfn %s, publisher's %s, bytes %s"
            % (a_pfn, want, "equal" if m[:] == content(b"a") else "differ"))

    e1 = errno_of(lambda: os.open(os.path.join(MNT, "a"), os.O_RDWR))
    e2 = errno_of(lambda: mmap.mmap(fd, SIZE, mmap.MAP_SHARED))
    if e1 == errno.EROFS and e2 == errno.EACCES:
        ok("reader_cannot_write")
    else:
        bad("reader_cannot_write", "O_RDWR: %s, shared writable map: %s"
            % (errno.errorcode.get(e1, e1), errno.errorcode.get(e2, e2)))

    signal("mapped.%d" % ME)
    if not wait_for(lambda: signalled("deleted")):
        bad("deletion_waits_for_the_lease", "the publisher did not delete a")
        return
    names = sorted(n for n in os.listdir(MNT) if n != "f")
    same = m[:] == content(b"a")
    b_ok = "b" in names and open(os.path.join(MNT, "b"), "rb").read() == content(b"b")
    ok("new_files_appear_without_remount") if b_ok else \
        bad("new_files_appear_without_remount", "listed %s" % names)
    if not same or "a" in names or os.path.exists(os.path.join(MNT, "a")):
        bad("deletion_waits_for_the_lease", "bytes %s, listed %s"
            % ("kept" if same else "changed", names))
    m.close()
    os.close(fd)
    signal("closed.%d" % ME)
    if not wait_for(lambda: signalled("reused")):
        bad("reader_lets_go_of_freed_trees", "the publisher did not seal e")
        return
    with open(os.path.join(MNT, "e"), "rb") as f:
        data = f.read()
    e_ok = data == content(b"e", len(data))
    subprocess.run(["sh", "-c", "echo 2 > /proc/sys/vm/drop_caches"], check=True)
    signal("e_read.%d" % ME)
    ok("reader_lets_go_of_freed_trees") if e_ok else \
        bad("reader_lets_go_of_freed_trees", "e's bytes differ")

    cache_phase()

    # dead_readers_leases_expire: a child holds c mapped while this script
    # ends and vm/init reboots the guest without unmounting (reboot -f):
    # the host dies holding the lease.
    if os.fork() == 0:
        fd, m = map_ro(os.path.join(MNT, "c"))
        m[0]
        signal("holding.%d" % ME)
        time.sleep(3600)
        os._exit(0)
    if not wait_for(lambda: signalled("holding.%d" % ME)):
        bad("dead_readers_leases_expire", "could not hold c")


def main():
    try:
        publisher() if ME == 0 else reader()
    except Exception as e:  # a crash of the script is a failure, not a hang
        bad("pool_share", "%s: %s" % (type(e).__name__, e))
        signal("abort")
    print("pool_share: %d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
