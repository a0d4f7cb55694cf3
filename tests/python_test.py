# SPDX-License-Identifier: GPL-2.0
"""Tests of the Python package (python/, ``import morsel``).

Run in the VM by tests/python_test.sh, which installs the package into a
temporary directory first; $MORSEL_MNT is a mounted morselfs.  One line per
test ("ok     name" / "FAILED name"), then "N passed, N failed".
"""

import ctypes
import dataclasses
import errno
import faulthandler
import gc
import mmap
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback
import unittest
from unittest import mock

import morsel

MNT = os.environ.get("MORSEL_MNT")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
PG = 4096
NOBODY = 65534
BIND_ADDR = 0x600000000000


def in_child(fn, *args):
    """Run fn(*args) in a forked child; returns its exit status (0: fine)."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            fn(*args)
            status = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def as_nobody():
    """Drop root (and with it every capability) in a child."""
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


class MorselTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir=MNT)

    def tearDown(self):
        gc.collect()
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assertErrno(self, err, fn, *args, **kwargs):
        with self.assertRaises(OSError) as cm:
            fn(*args, **kwargs)
        self.assertEqual(cm.exception.errno, err,
                         "%s, expected %s" % (cm.exception,
                                              errno.errorcode[err]))
        self.assertEqual(cm.exception.strerror, os.strerror(err))
        return cm.exception

    # -- the package itself ------------------------------------------------

    def test_installed_copy_imported(self):
        site = os.environ.get("MORSEL_PY_SITE")
        if not site:
            self.skipTest("not run by tests/python_test.sh")
        pkg = os.path.join(os.path.realpath(site), "morsel")
        self.assertEqual(os.path.dirname(os.path.realpath(morsel.__file__)),
                         pkg)
        # The wrapper packages libmorsel.so.1: it is loaded next to the
        # package, before find_library and the source tree.
        self.assertEqual(os.path.realpath(morsel.library_path),
                         os.path.join(pkg, "libmorsel.so.1"))
        self.assertEqual(morsel.__version__, "1.0.0")

    def test_library_search_and_lazy_numpy(self):
        code = ("import sys, morsel; print(morsel.library_path); "
                "print('numpy' in sys.modules)")
        lib = os.environ.get("MORSEL_TEST_LIBRARY")
        if lib:
            env = dict(os.environ, MORSEL_LIBRARY=lib)
            out = subprocess.run([sys.executable, "-c", code], env=env,
                                 check=True, capture_output=True, text=True)
            self.assertEqual(out.stdout.split(), [lib, "False"])
        env = dict(os.environ, MORSEL_LIBRARY="/nonexistent/libmorsel.so.1")
        out = subprocess.run([sys.executable, "-c", code], env=env,
                             capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("ImportError", out.stderr)
        self.assertIn("MORSEL_LIBRARY", out.stderr)

    # -- sizes and orders --------------------------------------------------

    def test_order_for_size(self):
        self.assertEqual(morsel.order_for_size(0), 0)
        self.assertEqual(morsel.order_for_size(4 * KiB), 0)
        self.assertEqual(morsel.order_for_size(4 * KiB + 1), 1)
        self.assertEqual(morsel.order_for_size(2 * MiB), 1)
        self.assertEqual(morsel.order_for_size(3 * MiB), 2)
        self.assertEqual(morsel.order_for_size(GiB + 1), 3)
        self.assertEqual(morsel.order_for_size(1 << 48), 4)
        e = self.assertErrno(errno.EFBIG, morsel.order_for_size, (1 << 48) + 1)
        self.assertIsNone(e.filename)
        with self.assertRaises(ValueError):
            morsel.order_for_size(-1)
        with self.assertRaises(TypeError):
            morsel.order_for_size(1.5)

    def test_order_extent(self):
        for order in range(morsel.MAX_ORDER + 1):
            self.assertEqual(morsel.order_extent(order), 4096 << (9 * order))
        self.assertErrno(errno.EINVAL, morsel.order_extent,
                         morsel.MAX_ORDER + 1)
        self.assertErrno(errno.EINVAL, morsel.order_extent, -1)
        self.assertErrno(errno.EINVAL, morsel.order_extent, 1 << 40)

    # -- create, open, from_fd, close ----------------------------------------

    def test_create(self):
        p = self.path("a")
        with morsel.create(p, 3 * MiB) as m:
            self.assertEqual(m.path, p)
            st = m.stat()
            self.assertEqual((st.order, st.size), (2, 3 * MiB))
        self.assertEqual(os.stat(p).st_mode & 0o777, 0o600)
        umask = os.umask(0)
        os.umask(umask)
        with morsel.create(pathlib.Path(self.path("b")), 0, 0o640) as m:
            self.assertEqual(m.stat().size, 0)
        self.assertEqual(os.stat(self.path("b")).st_mode & 0o777,
                         0o640 & ~umask)
        morsel.create(os.fsencode(self.path("c")), 1).close()
        e = self.assertErrno(errno.EEXIST, morsel.create, p, 10)
        self.assertIsInstance(e, FileExistsError)
        self.assertEqual(e.filename, p)
        self.assertEqual(os.stat(p).st_size, 3 * MiB)   # untouched
        e = self.assertErrno(errno.ENOENT, morsel.create,
                             self.path("none/x"), 1)
        self.assertIsInstance(e, FileNotFoundError)
        # Too large: libmorsel removes the name again.
        self.assertErrno(errno.EFBIG, morsel.create, self.path("big"), 1 << 60)
        self.assertFalse(os.path.exists(self.path("big")))
        with self.assertRaises(ValueError):
            morsel.create(self.path("neg"), -1)
        self.assertFalse(os.path.exists(self.path("neg")))

        def nobody_creates():
            as_nobody()
            e = self.assertErrno(errno.EACCES, morsel.create,
                                 self.path("n"), 1)
            self.assertIsInstance(e, PermissionError)
        if os.getuid() == 0:
            self.assertEqual(in_child(nobody_creates), 0)

    def test_create_unnamed(self):
        with morsel.create_unnamed(self.dir, 3 * MiB) as m:
            self.assertIsNone(m.path)
            st = m.stat()
            self.assertEqual((st.order, st.size), (2, 3 * MiB))
            self.assertEqual(os.fstat(m.fileno()).st_nlink, 0)
            self.assertFalse(os.get_inheritable(m.fileno()))
            with m.map() as mp:
                mp.memoryview()[:3] = b"abc"
        self.assertEqual(os.listdir(self.dir), [])
        dfd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with morsel.create_unnamed(dfd, 0, 0o640) as m:
                self.assertEqual(m.stat().size, 0)
        finally:
            os.close(dfd)
        self.assertErrno(errno.EFBIG, morsel.create_unnamed, self.dir,
                         1 << 60)
        self.assertErrno(errno.ENOTTY, morsel.create_unnamed, "/dev/shm", 1)
        with self.assertRaises(ValueError):
            morsel.create_unnamed(self.dir, -1)
        self.assertEqual(os.listdir(self.dir), [])

        def nobody_creates():
            as_nobody()
            e = self.assertErrno(errno.EACCES, morsel.create_unnamed,
                                 self.dir, 1)
            self.assertIsInstance(e, PermissionError)
        if os.getuid() == 0:
            self.assertEqual(in_child(nobody_creates), 0)

    def test_open(self):
        p = self.path("a")
        morsel.create(p, 8 * KiB).close()
        with morsel.open(p) as m:
            self.assertEqual((m.path, m.stat().size), (p, 8 * KiB))
            os.pwrite(m.fileno(), b"rw", 0)
        with morsel.open(pathlib.Path(p), os.O_RDONLY) as m:
            self.assertEqual(os.pread(m.fileno(), 2, 0), b"rw")
            self.assertErrno(errno.EBADF, os.write, m.fileno(), b"x")
        e = self.assertErrno(errno.ENOENT, morsel.open, self.path("none"))
        self.assertIsInstance(e, FileNotFoundError)
        self.assertEqual(e.filename, self.path("none"))
        with self.assertRaises(ValueError):
            morsel.open(p, os.O_RDWR | os.O_CREAT)
        # A directory, and a file of another file system, are no morsels.
        e = self.assertErrno(errno.EISDIR, morsel.open, self.dir)
        self.assertIsInstance(e, IsADirectoryError)
        self.assertErrno(errno.ENOTTY, morsel.open, self.dir, os.O_RDONLY)
        with tempfile.NamedTemporaryFile(dir="/tmp") as f:
            e = self.assertErrno(errno.ENOTTY, morsel.open, f.name)
            self.assertEqual(e.filename, f.name)

        def nobody_opens():
            as_nobody()
            self.assertErrno(errno.EACCES, morsel.open, p, os.O_RDONLY)
        if os.getuid() == 0:
            self.assertEqual(in_child(nobody_opens), 0)

    def test_from_fd(self):
        p = self.path("a")
        morsel.create(p, 5000).close()
        fd = os.open(p, os.O_RDWR)
        m = morsel.Morsel.from_fd(fd)
        self.assertEqual((m.fileno(), m.path), (fd, None))
        self.assertEqual(m.stat().order, 1)
        m.close()
        self.assertErrno(errno.EBADF, os.fstat, fd)     # it owned the fd
        fd = os.open(p, os.O_RDONLY)
        with morsel.Morsel.from_fd(fd, closefd=False) as m:
            self.assertEqual(m.stat().size, 5000)
        os.fstat(fd)                                    # still open
        os.close(fd)
        with tempfile.TemporaryFile(dir="/tmp") as f:
            self.assertErrno(errno.ENOTTY, morsel.Morsel.from_fd, f.fileno())
            os.fstat(f.fileno())                        # not closed
        self.assertErrno(errno.EBADF, morsel.Morsel.from_fd, 1 << 20)

    def test_fileno_close_context_manager(self):
        p = self.path("a")
        m = morsel.create(p, PG)
        fd = m.fileno()
        self.assertIsInstance(fd, int)
        self.assertEqual(os.fstat(fd).st_ino, os.stat(p).st_ino)
        with m as same:
            self.assertIs(same, m)
        self.assertTrue(m.closed)
        self.assertErrno(errno.EBADF, os.fstat, fd)
        m.close()                                       # again: nothing
        self.assertIn("closed", repr(m))
        for call in (m.fileno, m.stat, m.populate, m.mappings, m.map):
            with self.assertRaises(ValueError):
                call()
        with self.assertRaises(ValueError):
            with m:
                pass
        # A mapping outlives the Morsel it was made from.
        m = morsel.open(p)
        mp = m.map()
        m.close()
        mv = mp.memoryview()
        self.assertEqual(len(mv), PG)                   # size when mapped
        mv[0] = 7
        del mv
        mp.close()
        with morsel.open(p, os.O_RDONLY) as m:
            self.assertEqual(os.pread(m.fileno(), 1, 0), b"\x07")

    # -- stat, resize, populate, evict, bind, mappings -----------------------

    def test_stat(self):
        p = self.path("a")
        with morsel.create(p, 3 * MiB) as m:
            st = m.stat()
            self.assertIsInstance(st, morsel.Stat)
            # No table yet: the root comes with the first page.
            self.assertEqual(st, morsel.Stat(order=2, extent=GiB,
                                             size=3 * MiB, pages=0,
                                             tables=(0, 0, 0, 0), mappings=0,
                                             bound=0, flags=0))
            with self.assertRaises(dataclasses.FrozenInstanceError):
                st.order = 3
            m.populate(0, 2 * MiB + PG)
            with m.map():
                st = m.stat()
                self.assertEqual(st.pages, 513)
                self.assertEqual(st.tables, (2, 1, 0, 0))
                self.assertEqual(st.mappings, 1)
            self.assertEqual(m.stat().mappings, 0)
        with morsel.open(p, os.O_RDONLY) as m:
            self.assertEqual(m.stat().pages, 513)
        with morsel.open(p, os.O_WRONLY) as m:          # I7: accepted
            self.assertEqual(m.stat().order, 2)

    def test_resize(self):
        p = self.path("a")
        with morsel.create(p, PG) as m:
            os.pwrite(m.fileno(), b"keep", 0)
            m.resize(3 * MiB)
            st = m.stat()
            self.assertEqual((st.order, st.extent, st.size), (2, GiB, 3 * MiB))
            m.resize(100)
            self.assertEqual((m.stat().order, m.stat().size), (0, 100))
            self.assertEqual(os.pread(m.fileno(), 4, 0), b"keep")
            with self.assertRaises(ValueError):
                m.resize(-1)
            self.assertErrno(errno.EFBIG, m.resize, 1 << 60)
            e = self.assertErrno(errno.EFBIG, m.resize, 1 << 60)
            self.assertEqual(e.filename, p)
            with m.map() as mp:
                m.resize(PG)                            # inside the extent
                m.resize(2 * MiB)                       # the order rises
                self.assertEqual(m.stat().order, 1)
                self.assertEqual(mp.length, PG)         # the mapping keeps its
                m.resize(10)                            # shrinks, order kept
                self.assertEqual((m.stat().order, m.stat().size), (1, 10))
            m.resize(2 * MiB)
            self.assertEqual(m.stat().order, 1)
            m.resize(100)
            self.assertEqual(m.stat().order, 0)         # unmapped: it falls
        with morsel.open(p, os.O_RDONLY) as m:
            self.assertErrno(errno.EINVAL, m.resize, PG)    # Q5

    def test_huge_leaves(self):
        p = self.path("h")
        with morsel.create(p, 4 * MiB) as m:
            self.assertEqual(m.stat().huge_mode, morsel.HUGE_NEVER)
            m.set_huge(morsel.HUGE_ADVISE)
            m.populate(0, 2 * MiB)                      # not asked: 4 KiB
            m.populate(2 * MiB, 2 * MiB, huge=True)     # asked: one leaf
            st = m.stat()
            self.assertEqual((st.huge, st.pages, st.tables[0]), (1, 1024, 1))
            self.assertEqual(st.huge_mode, morsel.HUGE_ADVISE)
            m.set_huge(morsel.HUGE_ALWAYS)
            m.collapse()                                # copies the first 2 MiB
            st = m.stat()
            self.assertEqual((st.huge, st.pages, st.tables[0]), (2, 1024, 0))
            self.assertErrno(errno.EINVAL, m.set_huge, 5)
            with m.map():
                self.assertErrno(errno.EBUSY, m.collapse)
            m.set_huge(morsel.HUGE_INHERIT)
            self.assertEqual(m.stat().huge_mode, morsel.HUGE_NEVER)

    def test_clone(self):
        p, q = self.path("src"), self.path("dst")
        with morsel.create(p, 3 * MiB) as m:
            os.pwrite(m.fileno(), b"x" * (3 * MiB), 0)
        with morsel.clone(p, q) as c:
            self.assertEqual(os.pread(c.fileno(), 10, MiB), b"x" * 10)
            self.assertEqual(c.stat().pages, 768)   # each file counts them
            os.pwrite(c.fileno(), b"y", 0)
            with morsel.open(p) as m:
                self.assertEqual(os.pread(m.fileno(), 1, 0), b"x")
                c.clone_range(m, 2 * MiB, 0, PG)
                self.assertEqual(os.pread(c.fileno(), 2, 0), b"xx")
                self.assertErrno(errno.EINVAL, m.clone_range, m, 0, PG, 2 * PG)
        self.assertEqual(os.stat(q).st_size, 3 * MiB)

    def test_mpol(self):
        with morsel.create(self.path("placed"), 64 * PG) as m:
            self.assertEqual(m.mpol(), (morsel.MPOL_INHERIT, []))
            m.set_mpol(morsel.MPOL_BIND, [0])
            self.assertEqual(m.mpol(), (morsel.MPOL_BIND, [0]))
            os.pwrite(m.fileno(), b"z" * (64 * PG), 0)
            self.assertEqual(m.node_pages(), {0: 64})
            self.assertEqual(m.node_pages(PG, 2 * PG), {0: 2})
            # This guest has one node: node 1 has no memory.
            self.assertErrno(errno.EINVAL, m.set_mpol, morsel.MPOL_BIND, [1])
            self.assertErrno(errno.EINVAL, m.set_mpol, morsel.MPOL_LOCAL, [0])
            self.assertRaises(ValueError, m.set_mpol, morsel.MPOL_BIND, [64])
            m.set_mpol(morsel.MPOL_INHERIT)
            self.assertEqual(m.mpol(), (morsel.MPOL_INHERIT, []))
            # Everything is on node 0 already; node 1 has no memory.
            self.assertEqual(m.migrate(0), {"moved": 0, "pinned": 0,
                                            "shared": 0, "failed": 0})
            self.assertErrno(errno.EINVAL, m.migrate, 1)
            self.assertErrno(errno.EINVAL, m.migrate, 0, 1)
            # Fresh leaves are accessed; read(2) does not count.
            self.assertEqual(m.accessed(clear=True), (64, 64, (1 << 64) - 1))
            os.pread(m.fileno(), 10, 0)
            self.assertEqual(m.accessed(), (0, 64, 0))
            self.assertEqual(m.accessed(PG, PG), (0, 1, 0))

    def test_memory_manager(self):
        d = os.path.dirname(self.path("x"))
        pid = os.fork()
        if pid == 0:
            ok = False
            try:
                morsel.set_memory_manager(d)
                buf = mmap.mmap(-1, MiB, flags=mmap.MAP_PRIVATE)  # from morsels
                buf[:5] = b"hello"
                addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
                with open("/proc/self/maps") as f:
                    lines = [ln for ln in f if int(ln.split("-")[0], 16) == addr]
                st = os.stat(d)
                dev = "%02x:%02x" % (os.major(st.st_dev), os.minor(st.st_dev))
                # the file has no path there: its device names the instance
                ok = (morsel.memory_manager() and buf[:5] == b"hello" and
                      len(lines) == 1 and lines[0].split()[3] == dev and
                      lines[0].split()[1] == "rw-p")
            finally:
                os._exit(0 if ok else 1)
        self.assertEqual(os.waitpid(pid, 0)[1], 0)
        self.assertFalse(morsel.memory_manager())
        self.assertErrno(errno.ENOTDIR, morsel.set_memory_manager, __file__)

    def test_populate(self):
        p = self.path("a")
        with morsel.create(p, 3 * MiB) as m:
            m.populate(0, 2 * PG)
            self.assertEqual(m.stat().pages, 2)
            self.assertEqual(m.stat().tables[0], 1)
            m.populate(10 * PG, PG)
            self.assertEqual(m.stat().pages, 3)
            m.populate(2 * MiB)                         # to the end
            self.assertEqual(m.stat().pages, 3 + 256)
            m.populate()                                # everything
            self.assertEqual(m.stat().pages, 768)
            self.assertEqual(m.stat().tables, (2, 1, 0, 0))
            m.populate(3 * MiB)                         # nothing left
            for off, length in ((1, PG), (0, 100), (0, 0), (0, 4 * MiB),
                                (3 * MiB, PG), (4 * MiB, None),
                                (PG, (1 << 64) - PG)):
                e = self.assertErrno(errno.EINVAL, m.populate, off, length)
                self.assertEqual(e.filename, p)
            with self.assertRaises(ValueError):
                m.populate(-PG)
            self.assertEqual(m.stat().pages, 768)
        with morsel.open(p, os.O_RDONLY) as m:          # I5
            e = self.assertErrno(errno.EBADF, m.populate)
            self.assertEqual(e.filename, p)
        with morsel.create(self.path("empty"), 0) as m:
            m.populate()                                # nothing to do
            self.assertEqual(m.stat().pages, 0)
        with morsel.create(self.path("odd"), PG + 1) as m:
            m.populate()                                # rounded up
            self.assertEqual(m.stat().pages, 2)

    def test_evict(self):
        p = self.path("a")
        with morsel.create(p, 2 * MiB) as m, m.map() as mp:
            mv = mp.memoryview()
            mv[:] = b"\xa5" * len(mv)
            self.assertEqual(m.stat().pages, 512)
            m.evict(PG, 2 * PG)
            self.assertEqual(m.stat().pages, 510)
            m.evict(MiB)                                # to the end
            self.assertEqual(m.stat().pages, 254)
            # Zeros through the mapping (reading faults pages in again),
            # through read(2), and in another process.
            self.assertEqual(bytes(mv[PG:3 * PG]), bytes(2 * PG))
            self.assertEqual(os.pread(m.fileno(), 2 * PG, PG), bytes(2 * PG))
            self.assertEqual((mv[PG - 1], mv[3 * PG], mv[MiB - 1]),
                             (0xa5, 0xa5, 0xa5))
            self.assertEqual(bytes(mv[MiB:]), bytes(MiB))

            def child():
                with morsel.open(p) as c, c.map(morsel.READ) as cm:
                    v = cm.memoryview()
                    assert v[0] == 0xa5 and v[PG] == 0 and v[MiB] == 0
                    del v
            self.assertEqual(in_child(child), 0)
            m.evict()
            self.assertEqual(m.stat().pages, 0)
            self.assertEqual(bytes(mv), bytes(2 * MiB))
            for off, length in ((1, PG), (0, 1), (0, 0), (0, 4 * MiB)):
                self.assertErrno(errno.EINVAL, m.evict, off, length)
            del mv
        with morsel.open(p, os.O_RDONLY) as m:
            self.assertErrno(errno.EBADF, m.evict, 0, PG)

    def test_bind(self):
        p = self.path("a")
        with morsel.create(p, MiB) as m:                # order 1: 2 MiB
            self.assertErrno(errno.EINVAL, m.bind, 0)
            self.assertErrno(errno.EINVAL, m.bind, BIND_ADDR + PG)
            self.assertErrno(errno.EINVAL, m.bind, (1 << 64) - 2 * MiB)
            with self.assertRaises(ValueError):
                m.bind(-2 * MiB)
            m.bind(BIND_ADDR)
            m.bind(BIND_ADDR)                           # same: no-op
            self.assertEqual(m.stat().bound, BIND_ADDR)
            e = self.assertErrno(errno.EBUSY, m.bind, BIND_ADDR + 2 * MiB)
            self.assertEqual(e.filename, p)
            with m.map() as mp:
                self.assertEqual(mp.address, BIND_ADDR)
                mp.memoryview()[:2] = b"hi"
                self.assertErrno(errno.EEXIST, m.map)   # A9: place taken

            def child():                        # any process, any hint
                with morsel.open(p) as c, c.map(addr=0x100000000000) as cm:
                    assert cm.address == BIND_ADDR, hex(cm.address)
                    assert bytes(cm.memoryview(0, 2)) == b"hi"
            self.assertEqual(in_child(child), 0)
        with morsel.create(self.path("b"), MiB) as m, m.map():
            self.assertErrno(errno.EBUSY, m.bind, BIND_ADDR)   # mapped
        with morsel.open(p, os.O_RDONLY) as m:
            self.assertErrno(errno.EBADF, m.bind, BIND_ADDR)

    def test_mappings(self):
        with morsel.create(self.path("a"), PG) as m:
            self.assertEqual(m.mappings(), [])
            rw = m.map()
            # Order 0: the mount entry is the data page, absent until the
            # first touch.
            (info,) = m.mappings()
            self.assertEqual((info.addr, info.flags, info.mounted),
                             (rw.address, 0, False))
            rw.memoryview()[0] = 1
            ro = m.map(morsel.READ)
            got = sorted(m.mappings(), key=lambda i: i.addr)
            want = sorted([(rw.address, morsel.READ | morsel.WRITE),
                           (ro.address, morsel.READ)])
            self.assertEqual([(i.addr, i.prot) for i in got], want)
            for i in got:
                self.assertIsInstance(i, morsel.MappingInfo)
                self.assertEqual(i.pid, os.getpid())
                self.assertEqual(i.flags, morsel.MAPPING_MOUNTED)
                self.assertTrue(i.mounted)
                self.assertFalse(i.hidden)
            rw.close()
            self.assertEqual([i.addr for i in m.mappings()], [ro.address])
            ro.close()
            # More than one ioctl's worth (256): libmorsel pages through.
            maps = [m.map(morsel.READ) for _ in range(300)]
            got = m.mappings()
            self.assertEqual(len(got), 300)
            self.assertEqual(sorted(i.addr for i in got),
                             sorted(mp.address for mp in maps))
            for mp in maps:
                mp.close()
            self.assertEqual(m.mappings(), [])

    def test_mappings_of_other_processes(self):
        m = morsel.create(self.path("a"), PG)
        m.populate()                            # mounted at once
        go_r, go_w = os.pipe()
        ready_r, ready_w = os.pipe()
        done_r, done_w = os.pipe()

        def child():
            for fd in (go_w, ready_r, done_w):
                os.close(fd)
            os.read(go_r, 1)                    # the parent has mapped
            if os.getuid() == 0:
                as_nobody()                     # no CAP_SYS_PTRACE
            got = m.mappings()
            assert len(got) == 1, got
            assert got[0] == morsel.MappingInfo(0, 0, 0, morsel.MAPPING_HIDDEN,
                                                False, True), got
            own = m.map(morsel.READ)
            got = m.mappings()
            mine = [i for i in got if not i.hidden]
            assert len(got) == 2 and len(mine) == 1, got
            assert (mine[0].addr, mine[0].pid) == (own.address, os.getpid())
            os.write(ready_w, b"r")
            os.read(done_r, 1)                  # the parent has listed
        pid = os.fork()
        if pid == 0:
            status = 1
            try:
                child()
                status = 0
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(status)
        for fd in (go_r, ready_w, done_r):
            os.close(fd)
        mp = None
        try:
            mp = m.map()
            os.write(go_w, b"g")
            self.assertEqual(os.read(ready_r, 1), b"r", "the child failed")
            got = {i.pid: i for i in m.mappings()}
            if os.getuid() == 0:                # CAP_SYS_PTRACE: all shown
                self.assertEqual(set(got), {os.getpid(), pid})
                self.assertFalse(got[pid].hidden)
                self.assertTrue(got[pid].mounted)
                self.assertEqual(got[pid].prot, morsel.READ)
                self.assertEqual(got[os.getpid()].addr, mp.address)
        finally:
            for fd in (go_w, done_w, ready_r):  # EOF ends the child's waits
                os.close(fd)
            _, status = os.waitpid(pid, 0)
            if mp:
                mp.close()
            m.close()
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)

    def test_set_min_order(self):
        with morsel.create(self.path("a"), PG) as m:
            with mock.patch.object(morsel._lib, "set_min_order", None):
                with self.assertRaises(NotImplementedError):
                    m.set_min_order(1)
            if morsel._lib.set_min_order is None:       # an older libmorsel
                with self.assertRaises(NotImplementedError):
                    m.set_min_order(1)
                return
            with self.assertRaises(ValueError):
                m.set_min_order(-1)
            self.assertErrno(errno.EINVAL, m.set_min_order,
                             morsel.MAX_ORDER + 1)
            with m.map() as mp:                         # an order-0 mapping
                m.set_min_order(2)
                self.assertEqual((m.stat().order, m.stat().min_order), (2, 2))
                self.assertEqual(mp.length, PG)
            m.resize(10)
            self.assertEqual(m.stat().order, 2)         # never below it
            with m.map() as mp:
                self.assertEqual(mp.length, GiB)
        m.close()
        with self.assertRaises(ValueError):
            m.set_min_order(1)

    # -- map, memoryview, numpy, close ---------------------------------------

    def test_map(self):
        p = self.path("a")
        with morsel.create(p, 10000) as m:              # order 1
            with m.map() as mp:
                self.assertIsInstance(mp, morsel.Mapping)
                self.assertEqual(mp.length, 2 * MiB)
                self.assertEqual(mp.address % mp.length, 0)
                self.assertEqual(mp.prot, morsel.READ | morsel.WRITE)
                self.assertIs(mp.morsel, m)
                self.assertIn("mapped", repr(mp))
            self.assertTrue(mp.closed)
            mp.close()                                  # again: nothing
            with self.assertRaises(ValueError):
                mp.memoryview()
            hint = 0x200000000000
            with m.map(addr=hint, fixed=True) as mp:
                self.assertEqual(mp.address, hint)
                self.assertErrno(errno.EEXIST, m.map, addr=hint, fixed=True)
            self.assertErrno(errno.EINVAL, m.map, addr=hint + PG, fixed=True)
            with self.assertRaises(ValueError):
                m.map(fixed=True)
            # Execute without read is refused; no access maps (A11).
            e = self.assertErrno(errno.EACCES, m.map, morsel.EXEC)
            self.assertIsInstance(e, PermissionError)
            self.assertEqual(e.filename, p)
            with m.map(0) as mp:
                self.assertEqual(mp.prot, 0)
        with morsel.open(p, os.O_RDONLY) as m:          # Q8
            self.assertErrno(errno.EACCES, m.map)
            m.map(morsel.READ).close()
        with morsel.open(p, os.O_WRONLY) as m:          # Q9
            self.assertErrno(errno.EACCES, m.map)

    def test_memoryview_round_trip(self):
        p = self.path("a")
        with morsel.create(p, 10000) as m, m.map() as mp:
            mv = mp.memoryview()
            self.assertEqual((len(mv), mv.format, mv.itemsize, mv.readonly),
                             (10000, "B", 1, False))
            mv[100:105] = b"hello"
            self.assertEqual(os.pread(m.fileno(), 5, 100), b"hello")
            os.pwrite(m.fileno(), b"world", 5000)
            self.assertEqual(bytes(mv[5000:5005]), b"world")
            part = mp.memoryview(4096, 1000)
            self.assertEqual(len(part), 1000)
            self.assertEqual(bytes(part[904:909]), b"world")
            # Up to the extent on request; past it: ValueError.
            self.assertEqual(len(mp.memoryview(0, mp.length)), mp.length)
            with self.assertRaises(ValueError):
                mp.memoryview(0, mp.length + 1)
            with self.assertRaises(ValueError):
                mp.memoryview(mp.length + 1)
            self.assertEqual(len(mp.memoryview(20000)), 0)
            # The size grows inside the extent: the next view sees it.
            m.resize(12000)
            self.assertEqual(len(mp.memoryview()), 12000)
            with morsel.open(p, os.O_RDONLY) as r, r.map(morsel.READ) as rm:
                self.assertNotEqual(rm.address, mp.address)
                rv = rm.memoryview()
                self.assertTrue(rv.readonly)
                self.assertEqual(bytes(rv[100:105]), b"hello")
                with self.assertRaises(TypeError):
                    rv[0] = 1
                mv[0] = 42                              # seen at once
                self.assertEqual(rv[0], 42)
                del rv
            del mv, part

    def test_mapping_close_refused_while_viewed(self):
        with morsel.create(self.path("a"), PG) as m:
            mp = m.map()
            mv = mp.memoryview()
            sub = mv[10:20]
            del mv
            with self.assertRaises(BufferError):
                mp.close()                      # the slice is a view too
            self.assertFalse(mp.closed)
            self.assertEqual(m.stat().mappings, 1)
            sub[0] = 1                          # still mapped: fine
            sub.release()
            mp.close()
            self.assertTrue(mp.closed)
            self.assertEqual(m.stat().mappings, 0)
            # with: the view must go before the block ends ...
            with self.assertRaises(BufferError):
                with m.map() as mp:
                    keep = mp.memoryview()
            keep.release()
            mp.close()
            # ... unless it ends with an exception (whose traceback may hold
            # the view): then the mapping goes with its last view.
            with self.assertRaises(KeyError):
                with m.map() as mp:
                    keep = mp.memoryview()
                    raise KeyError("x")
            self.assertFalse(mp.closed)
            del keep, mp
            gc.collect()
            self.assertEqual(m.stat().mappings, 0)
            # A view keeps a dropped Mapping, and its memory, alive.
            view = m.map().memoryview()
            gc.collect()
            self.assertEqual(m.stat().mappings, 1)
            view[0] = 9
            del view
            gc.collect()
            self.assertEqual(m.stat().mappings, 0)
            self.assertEqual(os.pread(m.fileno(), 1, 0), b"\x09")

    def test_numpy_view_without_copy(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("no numpy")
        p = self.path("a")
        with morsel.create(p, MiB) as m, m.map() as mp, m.map() as other:
            arr = mp.numpy(np.uint64)
            self.assertEqual(arr.shape, (MiB // 8,))
            self.assertEqual(arr.ctypes.data, mp.address)   # no copy
            self.assertTrue(arr.flags.writeable)
            # A write through another mapping in this process ...
            other.memoryview()[8:16] = (0x1122334455667788).to_bytes(8,
                                                                    "little")
            self.assertEqual(arr[1], 0x1122334455667788)
            # ... and one by another process through its own mapping.

            def child():
                with morsel.open(p) as c, c.map() as cm:
                    a = cm.numpy(np.uint32, shape=(16, 16), offset=PG)
                    a[3, 4] = 77
                    del a
            self.assertEqual(in_child(child), 0)
            self.assertEqual(arr.view(np.uint32)[PG // 4 + 3 * 16 + 4], 77)
            arr[2] = 5                          # and it writes the morsel
            self.assertEqual(os.pread(m.fileno(), 8, 16),
                             (5).to_bytes(8, "little"))
            grid = mp.numpy("<u2", shape=(2, 3), offset=6)
            self.assertEqual(grid.shape, (2, 3))
            self.assertEqual(grid.ctypes.data, mp.address + 6)
            self.assertEqual(mp.numpy("u1", 4).shape, (4,))
            self.assertEqual(mp.numpy(np.uint8, offset=MiB - 3).shape, (3,))
            with self.assertRaises(ValueError):
                mp.numpy(np.uint8, shape=(mp.length + 1,))
            with self.assertRaises(ValueError):
                mp.numpy(np.uint8, shape=(-1,))
            with self.assertRaises(BufferError):
                mp.close()                      # arrays are views
            del arr, grid
        with morsel.open(p, os.O_RDONLY) as m, m.map(morsel.READ) as mp:
            ro = mp.numpy(np.uint64, shape=4)
            self.assertFalse(ro.flags.writeable)
            self.assertEqual(ro[1], 0x1122334455667788)
            with self.assertRaises(ValueError):
                ro[0] = 1
            del ro
        # numpy stays optional.
        with morsel.open(p) as m, m.map() as mp:
            with mock.patch.dict(sys.modules, {"numpy": None}):
                with self.assertRaises(ImportError):
                    mp.numpy("u1")

    # -- fd passing -----------------------------------------------------------

    def test_send_recv_fd(self):
        p = self.path("a")
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)

        def child():
            a.close()
            with morsel.create(p, 3 * MiB) as c:
                c.populate()
                with c.map() as cm:
                    cm.memoryview(0, 10)[:] = b"from child"
                os.unlink(p)                    # only the fd is left
                morsel.send_fd(b, c)            # a Morsel
                morsel.send_fd(b.fileno(), c.fileno())  # ints
            b.close()
        self.assertEqual(in_child(child), 0)
        b.close()
        with morsel.recv_fd(a) as m:
            self.assertIsNone(m.path)
            st = m.stat()
            self.assertEqual((st.order, st.size, st.pages), (2, 3 * MiB, 768))
            with m.map(morsel.READ) as mp:
                self.assertEqual(bytes(mp.memoryview(0, 10)), b"from child")
            with morsel.recv_fd(a.fileno()) as m2:
                self.assertEqual(os.fstat(m2.fileno()).st_ino,
                                 os.fstat(m.fileno()).st_ino)
        # The sender has closed: no descriptor comes.
        self.assertErrno(errno.EBADMSG, morsel.recv_fd, a)
        a.close()
        a, b = socket.socketpair(socket.AF_UNIX)
        b.send(b"x")                            # data without a descriptor
        self.assertErrno(errno.EBADMSG, morsel.recv_fd, a)
        with tempfile.TemporaryFile(dir="/tmp") as f:
            morsel.send_fd(b, f.fileno())       # a descriptor, no morsel
            self.assertErrno(errno.ENOTTY, morsel.recv_fd, a)
        r, w = os.pipe()
        with morsel.create(self.path("b"), PG) as m:
            self.assertErrno(errno.ENOTSOCK, morsel.send_fd, w, m)
            self.assertErrno(errno.EBADF, morsel.send_fd, b, 1 << 20)
        with self.assertRaises(ValueError):
            morsel.send_fd(b, m)                # closed
        for fd in (r, w):
            os.close(fd)
        a.close()
        b.close()

    # -- the file cache (morsel-cached) ------------------------------------

    def start_daemon(self, *args):
        """Run cached/morsel-cached on a fresh cache directory and socket;
        returns (Popen, socket path).  Stopped (SIGKILL) at cleanup."""
        daemon = os.path.join(REPO, "cached", "morsel-cached")
        sock = os.path.join(self.tmp(), "sock")
        r, w = os.pipe()
        log = open(os.path.join(self.tmp(), "log"), "ab")
        p = subprocess.Popen([daemon, "--socket", sock, "--dir",
                              self.path("cache"), "--ready-fd", str(w)]
                             + list(args), pass_fds=(w,), stderr=log)
        os.close(w)
        log.close()
        ready = os.read(r, 1)
        os.close(r)

        def stop():
            if p.poll() is None:
                p.kill()
            p.wait()
        self.addCleanup(stop)
        self.assertEqual(ready, b"r", "the daemon did not start")
        return p, sock

    def tmp(self):
        """A directory in /tmp (not morselfs) for sources and sockets."""
        if not getattr(self, "_tmp", None):
            self._tmp = tempfile.mkdtemp(dir="/tmp")
            self.addCleanup(shutil.rmtree, self._tmp, True)
        return self._tmp

    def source(self, name, size, seed=1):
        """A file of *size* pattern bytes in /tmp; (path, its bytes)."""
        data = bytes((i * 7 + seed) & 0xff for i in range(4093))
        data = (data * (size // len(data) + 1))[:size]
        path = os.path.join(self.tmp(), name)
        with open(path, "wb") as f:
            f.write(data)
        return path, data

    def test_cache_map(self):
        _, sock = self.start_daemon()
        path, data = self.source("f", 3 * MiB + 7)
        with morsel.cache_map(path, socket=sock) as cf:
            self.assertEqual(cf.length, len(data))
            self.assertEqual(len(cf), len(data))
            self.assertEqual(cf.extent, GiB)
            self.assertEqual(cf.address % GiB, 0)
            mv = cf.memoryview()
            self.assertTrue(mv.readonly)
            self.assertEqual(bytes(mv), data)
            self.assertEqual(bytes(cf.memoryview(5, 3)), data[5:8])
            with self.assertRaises(ValueError):
                cf.memoryview(len(data) - 1, 2)
            with self.assertRaises(TypeError):
                mv[0] = 1
            with self.assertRaises(BufferError):
                cf.close()
            del mv
        self.assertTrue(cf.closed)
        cf.close()
        with self.assertRaises(ValueError):
            cf.memoryview()
        # From an open file and from a descriptor: hits.
        with open(path, "rb") as f:
            with morsel.cache_map(f, sock) as cf:
                self.assertEqual(bytes(cf.memoryview(0, 16)), data[:16])
                self.assertIn("mapped", repr(cf))
            fd = os.open(path, os.O_RDONLY)
            cf = morsel.cache_map(fd, sock)
            os.close(fd)
            self.assertEqual(bytes(cf.memoryview(len(data) - 4)), data[-4:])
            cf.close()
        st = morsel.cache_stats(sock)
        self.assertIsInstance(st, morsel.CacheStats)
        self.assertEqual((st.entries, st.loads, st.hits, st.refusals),
                         (1, 1, 2, 0))
        self.assertEqual(st.bytes, (769 + 2 + 1) * PG)   # pages, PTE, PMD
        self.assertGreater(st.budget, 0)
        # $MORSEL_CACHED_SOCKET is the default.
        with mock.patch.dict(os.environ, MORSEL_CACHED_SOCKET=sock):
            self.assertEqual(morsel.cache_stats().loads, 1)
            with morsel.cache_map(path) as cf:
                self.assertEqual(cf.length, len(data))

    def test_cache_errors(self):
        _, sock = self.start_daemon("--budget", "2M")
        empty, _ = self.source("empty", 0)
        big, _ = self.source("big", 3 * MiB)
        self.assertErrno(errno.EINVAL, morsel.cache_map, empty, sock)
        self.assertErrno(errno.ENOSPC, morsel.cache_map, big, sock)
        e = self.assertErrno(errno.ENOENT, morsel.cache_map,
                             self.path("none"), sock)
        self.assertEqual(e.filename, self.path("none"))
        fd = os.open(big, os.O_WRONLY)
        self.assertErrno(errno.EACCES, morsel.cache_map, fd, sock)
        os.close(fd)
        with morsel.create(self.path("m"), PG) as m:
            self.assertErrno(errno.EINVAL, morsel.cache_map, m, sock)
        self.assertErrno(errno.ENOENT, morsel.cache_map, big,
                         os.path.join(self.tmp(), "nosock"))
        self.assertEqual(morsel.cache_stats(sock).refusals, 4)
        # As nobody: a file it cannot open.
        os.chmod(big, 0o600)
        self.assertEqual(in_child(lambda: (
            as_nobody(),
            self.assertErrno(errno.EACCES, morsel.cache_map, big, sock))), 0)
        with mock.patch.object(morsel._lib, "cache_map", None):
            with self.assertRaises(NotImplementedError):
                morsel.cache_map(big, sock)

    def test_cache_survives_daemon_kill(self):
        p, sock = self.start_daemon()
        path, data = self.source("f", 5 * MiB)
        cf = morsel.cache_map(path, sock)
        p.kill()
        p.wait()
        mv = cf.memoryview()
        self.assertEqual(bytes(mv), data)
        del mv
        cf.close()
        self.assertErrno(errno.ECONNREFUSED, morsel.cache_stats, sock)


class Result(unittest.TestResult):
    """Prints one line per test, and "N passed, N failed" at the end."""

    def __init__(self):
        super().__init__()
        self.passed = 0

    @staticmethod
    def _name(test):
        return test._testMethodName[len("test_"):]

    def _report(self, test, err):
        print("FAILED " + self._name(test))
        for line in self._exc_info_to_string(err, test).splitlines():
            print("  " + line)

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed += 1
        print("ok     " + self._name(test))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._report(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._report(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print("skip   %s: %s" % (self._name(test), reason))

    def stopTest(self, test):
        super().stopTest(test)
        sys.stdout.flush()


def main():
    faulthandler.enable()
    if not MNT or not os.path.ismount(MNT):
        print("python_test: $MORSEL_MNT is not a mounted morselfs (run "
              "under vm/run)")
        print("0 passed, 1 failed")
        return 1
    if sys.argv[1:]:
        suite = unittest.TestSuite(MorselTest("test_" + n)
                                   for n in sys.argv[1:])
    else:
        suite = unittest.TestLoader().loadTestsFromTestCase(MorselTest)
    result = Result()
    suite.run(result)
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
