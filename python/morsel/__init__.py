# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Python bindings for morsels (morselfs), over the shared libmorsel.

A morsel is a file of a ``mount -t morselfs`` instance whose memory is a
naturally aligned page-table subtree: mapping it writes one page-table entry
into the process, however much it holds.  This package wraps libmorsel
(``libmorsel.so.1``) with ctypes; it has no second implementation of the
ioctls.

>>> import morsel
>>> with morsel.create("/mnt/m/data", 3 << 20) as m:     # order 2 (1 GiB)
...     m.populate()                          # allocate every page now
...     with m.map() as mp:                   # READ | WRITE, whole extent
...         mv = mp.memoryview()              # no copy; len = file size
...         mv[:5] = b"hello"
...         del mv                            # (unmapping needs no views)

Every libmorsel error raises :class:`OSError` with its errno, so the usual
subclasses come for free (:class:`FileExistsError`, :class:`PermissionError`,
...); ``filename`` is the morsel's path when it is known.  Values that cannot
be passed to libmorsel at all (a negative size) raise :class:`ValueError`,
and an operation on a closed :class:`Morsel` or :class:`Mapping` raises
:class:`ValueError` as for a closed file.

The library is loaded from, in order: ``$MORSEL_LIBRARY`` (a path; nothing
else is tried if it is set), ``libmorsel.so.1`` next to this package, the one
``ctypes.util.find_library('morsel')`` finds, and the source tree's ``lib/``
when the package runs from the repository.  :data:`library_path` tells which.
"""

import ctypes
import dataclasses
import errno
import operator
import os
import weakref
from typing import Tuple

from . import _lib

__version__ = "1.0.0"

__all__ = [
    "Morsel", "Mapping", "Stat", "MappingInfo", "create", "create_unnamed",
    "open", "clone", "set_memory_manager", "memory_manager", "send_fd", "recv_fd", "order_for_size", "order_extent", "READ",
    "WRITE", "EXEC",
    "MAX_ORDER", "PAGE_SIZE", "MAPPING_MOUNTED", "MAPPING_HIDDEN",
    "HUGE_NEVER", "HUGE_ALWAYS", "HUGE_WITHIN_SIZE", "HUGE_ADVISE",
    "HUGE_INHERIT", "MPOL_INHERIT", "MPOL_DEFAULT", "MPOL_PREFERRED",
    "MPOL_BIND", "MPOL_INTERLEAVE", "MPOL_LOCAL",
    "library_path", "cache_map", "cache_stats", "CachedFile", "CacheStats",
]

#: The libmorsel that was loaded (a path or a soname).
library_path = _lib.path

#: Rights of a mapping (:meth:`Morsel.map`, :attr:`MappingInfo.prot`); the
#: values of ``mmap.PROT_*`` and of ``MORSEL_PROT_*``.
READ = _lib.MORSEL_PROT_READ
WRITE = _lib.MORSEL_PROT_WRITE
EXEC = _lib.MORSEL_PROT_EXEC
#: The largest order (256 TiB; 512 GiB usable with 4-level paging).
MAX_ORDER = _lib.MORSEL_MAX_ORDER
#: Offsets and lengths of :meth:`Morsel.populate` and :meth:`Morsel.evict`
#: are multiples of this.
PAGE_SIZE = 4096
# Huge-page modes (MORSEL_HUGE_*): Morsel.set_huge(), Stat.huge_mode.
HUGE_NEVER, HUGE_ALWAYS, HUGE_WITHIN_SIZE, HUGE_ADVISE, HUGE_INHERIT = range(5)
# Placement policies (MORSEL_MPOL_*): Morsel.set_mpol(), Morsel.mpol().
(MPOL_INHERIT, MPOL_DEFAULT, MPOL_PREFERRED, MPOL_BIND, MPOL_INTERLEAVE,
 MPOL_LOCAL) = range(6)
#: :attr:`MappingInfo.flags` bits.
MAPPING_MOUNTED = _lib.MORSEL_MAPPING_MOUNTED
MAPPING_HIDDEN = _lib.MORSEL_MAPPING_HIDDEN

_U64_LIMIT = 1 << 64


def _u64(name, value):
    value = operator.index(value)
    if not 0 <= value < _U64_LIMIT:
        raise ValueError("%s must be in [0, 2**64): %d" % (name, value))
    return value


def _error(err, path=None):
    if path is None:
        return OSError(err, os.strerror(err))
    return OSError(err, os.strerror(err), path)


def _check(ret, path=None):
    """Return a libmorsel result, raising OSError for -errno."""
    if ret < 0:
        raise _error(-ret, path)
    return ret


def _fileno(obj):
    """A file descriptor from an int or anything with fileno()."""
    if isinstance(obj, int):
        return obj
    return obj.fileno()


@dataclasses.dataclass(frozen=True)
class Stat:
    """What :meth:`Morsel.stat` returns (``struct morsel_stat``).

    ``order``: current order (0..MAX_ORDER); ``extent``: bytes the order
    covers, ``4096 << (9 * order)``; ``size``: the file size; ``pages``:
    populated 4 KiB data pages; ``tables``: page-table pages per level,
    ``(PTE, PMD, PUD, P4D)``; ``mappings``: shared VMAs that map the
    morsel now (private ones are not counted); ``bound``: the address set
    by :meth:`Morsel.bind`, or 0; ``min_order``: the order set by
    :meth:`Morsel.set_min_order` (0 if none); ``huge``: 2 MiB leaves
    (each 512 of ``pages``); ``huge_mode``: the ``MORSEL_HUGE_*`` mode in
    force (0 never, 1 always, 2 within_size, 3 advise); ``huge1g``: 1 GiB
    leaves (each 262144 of ``pages``; mounts with ``huge1g=``); ``flags``:
    the structure's flags word (0).
    """
    order: int
    extent: int
    size: int
    pages: int
    tables: Tuple[int, int, int, int]
    mappings: int
    bound: int
    flags: int
    min_order: int = 0
    huge: int = 0
    huge_mode: int = 0
    huge1g: int = 0


@dataclasses.dataclass(frozen=True)
class MappingInfo:
    """One current mapping of a morsel (``struct morsel_mapping``).

    ``addr``: start address in its process; ``prot``: the rights, a
    combination of :data:`READ`, :data:`WRITE`, :data:`EXEC`; ``pid``: the
    process owning the address space (0 if it has exited); ``flags``: the
    raw bits, decoded as ``mounted`` (the mount entry is present now) and
    ``hidden`` (another process's mapping and the caller lacks
    CAP_SYS_PTRACE: every other field is 0).
    """
    addr: int
    prot: int
    pid: int
    flags: int
    mounted: bool
    hidden: bool


def order_for_size(size):
    """The smallest order whose extent holds *size* bytes.

    Raises OSError(EFBIG) when no order does (above 256 TiB).
    """
    return _check(_lib.order_for_size(_u64("size", size)))


def order_extent(order):
    """Bytes covered by *order*: ``4096 << (9 * order)``.

    Raises OSError(EINVAL) for an order above :data:`MAX_ORDER`.
    """
    order = operator.index(order)
    extent = _lib.order_extent(order) if 0 <= order <= MAX_ORDER else 0
    if not extent:
        raise _error(errno.EINVAL)
    return extent


def create(path, size, mode=0o600):
    """Create a new morsel file of *size* bytes and return it open O_RDWR.

    The name must not exist (:class:`FileExistsError`); *mode* is masked by
    the umask as for open(2).  The size chooses the order.
    """
    fs = os.fsencode(path)
    fd = _check(_lib.create(fs, _u64("size", size), operator.index(mode)),
                os.fspath(path))
    return Morsel(fd, os.fspath(path))


def create_unnamed(directory, size, mode=0o600):
    """Create a morsel without a name and return it open O_RDWR.

    *directory* is a morselfs directory: a path, or an open descriptor (or
    an object with ``fileno()``) of it.  One call, as :func:`os.memfd_create`
    for tmpfs: the morsel is never linked and goes with its last descriptor
    and mapping.  *mode* is masked by the umask.
    """
    if isinstance(directory, (str, bytes, os.PathLike)):
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return create_unnamed(dfd, size, mode)
        finally:
            os.close(dfd)
    fd = _check(_lib.create_unnamed(_fileno(directory), _u64("size", size),
                                    operator.index(mode)))
    return Morsel(fd)


def clone(source, destination):
    """Make *destination* a copy-on-write clone of *source*; return it open.

    *source* is a path or an open morsel (or descriptor).  *destination*
    is a path, created with the source's permission bits if it does not
    exist, its content replaced if it does (as ``cp --reflink=always``),
    or an open morsel or descriptor, which is then returned as is.  Both
    share their pages, whole page tables where they can, until either
    writes one; the first write gives the writer its own copy.
    ``OSError(EXDEV)`` across instances, ``OSError(EOPNOTSUPP)`` on a
    persistent instance.
    """
    if _lib.clone is None:
        raise OSError(errno.ENOSYS, "libmorsel older than 1.3: no clones")
    if isinstance(source, (str, bytes, os.PathLike)):
        with open(source, os.O_RDONLY) as src:
            return clone(src, destination)
    sfd = _fileno(source)
    if not isinstance(destination, (str, bytes, os.PathLike)):
        _check(_lib.clone(sfd, _fileno(destination)))
        return destination
    fd = os.open(destination, os.O_RDWR | os.O_CREAT | os.O_TRUNC |
                 os.O_CLOEXEC, os.fstat(sfd).st_mode & 0o7777)
    try:
        _check(_lib.clone(sfd, fd), os.fspath(destination))
        return Morsel(fd, os.fspath(destination))
    except BaseException:
        os.close(fd)
        raise


def set_memory_manager(directory):
    """Take this thread's anonymous memory from now on from morsels.

    *directory* is a path on a volatile morselfs instance (``None``: back
    to ordinary anonymous memory for what is mapped from then on).
    Children and executed programs inherit it; ``brk`` fails, so malloc
    takes its heap from ``mmap``.  This is what ``morsel run --mm`` does
    before it executes the program.  ``OSError(EOPNOTSUPP)`` for another
    file system, ``OSError(EINVAL)`` from a kernel without patch 13.
    """
    if _lib.set_memory_manager is None:
        raise OSError(errno.ENOSYS, "libmorsel older than 1.3")
    path = None if directory is None else os.fsencode(directory)
    _check(_lib.set_memory_manager(path),
           None if directory is None else os.fspath(directory))


def memory_manager():
    """Whether this thread has a memory manager (set_memory_manager)."""
    if _lib.memory_manager is None:
        raise OSError(errno.ENOSYS, "libmorsel older than 1.3")
    return bool(_check(_lib.memory_manager()))


def open(path, flags=os.O_RDWR):
    """Open an existing morsel; *flags* as for :func:`os.open`.

    ``os.O_RDONLY`` gives a morsel that can be stat-ed, listed and mapped
    read-only; populate, evict and bind need ``os.O_RDWR`` (else
    ``OSError(EBADF)``).  Raises OSError(ENOTTY) for a file that is not a
    morsel.  Use :func:`create` to create one (``O_CREAT`` is refused here).
    """
    flags = operator.index(flags)
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if flags & os.O_CREAT or (tmpfile and flags & tmpfile == tmpfile):
        raise ValueError("morsel.open() does not create files: use "
                         "morsel.create()")
    fd = _check(_lib.open_(os.fsencode(path), flags), os.fspath(path))
    try:
        return Morsel(fd, os.fspath(path), validate=True)
    except BaseException:
        os.close(fd)
        raise


class Morsel:
    """An open morsel file: a file descriptor and the operations on it.

    Made by :func:`create`, :func:`open`, :func:`recv_fd` or
    :meth:`from_fd`.  Closing it (:meth:`close`, the end of a ``with``
    block, or garbage collection) closes the descriptor; mappings made from
    it stay valid.
    """

    def __init__(self, fd, path=None, closefd=True, validate=False):
        self._fd = -1               # owns nothing until validated
        self._closefd = closefd
        #: The path it was created or opened with; None for a descriptor.
        self.path = path
        if validate:
            _check(_lib.stat(fd, ctypes.byref(_lib.MorselStat())), path)
        self._fd = fd

    @classmethod
    def from_fd(cls, fd, closefd=True):
        """Wrap an open descriptor of a morsel file.

        With *closefd* (the default) the Morsel owns *fd* and closes it;
        else the caller keeps it.  Raises OSError(ENOTTY) if *fd* is no
        morsel, OSError(EBADF) if it is no open descriptor; *fd* is not
        closed then.
        """
        return cls(operator.index(fd), None, closefd, validate=True)

    def fileno(self):
        """The file descriptor."""
        if self._fd < 0:
            raise ValueError("operation on a closed morsel")
        return self._fd

    @property
    def closed(self):
        """True once :meth:`close` has run."""
        return self._fd < 0

    def close(self):
        """Close the descriptor (if owned).  Calling it again does nothing."""
        fd, self._fd = self._fd, -1
        if fd >= 0 and self._closefd:
            os.close(fd)

    def __enter__(self):
        self.fileno()
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        if self.closed:
            return "<morsel.Morsel closed>"
        return "<morsel.Morsel fd=%d path=%r>" % (self._fd, self.path)

    def stat(self):
        """Order, extent, size, pages, tables, mappings, bound address.

        Returns a :class:`Stat`.  Works on a descriptor opened read-only.
        """
        st = _lib.MorselStat()
        _check(_lib.stat(self.fileno(), ctypes.byref(st)), self.path)
        return Stat(order=st.order, extent=st.extent, size=st.size,
                    pages=st.pages, tables=tuple(st.tables),
                    mappings=st.mappings, bound=st.bound, flags=st.flags,
                    min_order=st.min_order, huge=st.huge,
                    huge_mode=st.huge_mode, huge1g=st.huge1g)

    def resize(self, size):
        """Set the file size (and with it the order).

        Keeps the data below the new size.  The order rises when the size
        needs it, also while mapped (existing mappings keep their extent);
        it falls only when nothing maps the morsel.  ``OSError(EBUSY)`` only
        for a bound morsel whose address the larger extent does not fit.
        """
        _check(_lib.resize(self.fileno(), _u64("size", size)), self.path)

    def _range(self, fn, offset, length):
        offset = _u64("offset", offset)
        if length is None:
            end = -(-self.stat().size // PAGE_SIZE) * PAGE_SIZE
            if offset == end:
                return                      # nothing left in the file
            length = max(end - offset, 0)   # past the end: EINVAL below
        _check(fn(self.fileno(), offset, _u64("length", length)), self.path)

    def populate(self, offset=0, length=None, huge=False):
        """Allocate every missing page of ``[offset, offset + length)``.

        With *huge*, whole aligned 2 MiB holes get one 2 MiB page each
        where the file's huge-page mode lets a caller ask (advise,
        within_size, always; see :meth:`set_huge`).

        *length* None means up to the file size rounded up to a page (on an
        empty file: nothing to do).  Offset and length must be multiples of
        :data:`PAGE_SIZE`, the length non-zero, the range inside the
        page-rounded size (else ``OSError(EINVAL)``); the file must be open
        for writing (``OSError(EBADF)``).  Beyond the mount's ``size=``:
        ``OSError(ENOSPC)``, what fitted stays populated.
        """
        self._range(_lib.populate_huge if huge else _lib.populate, offset,
                    length)

    def collapse(self, offset=0, length=None):
        """Join every full, aligned 2 MiB of the range into one 2 MiB page.

        ``OSError(EBUSY)`` while a shared mapping mounts the morsel,
        ``OSError(EAGAIN)`` where a 2 MiB had a hole (the others are
        joined), ``OSError(EOPNOTSUPP)`` below order 2 or on a persistent
        instance.  Arguments as for :meth:`populate`.
        """
        self._range(_lib.collapse, offset, length)

    def clone_range(self, source, src_offset, dst_offset, length):
        """Let ``[dst_offset, dst_offset + length)`` of this morsel share
        ``[src_offset, src_offset + length)`` of *source* (an open morsel
        or descriptor) copy-on-write, as :func:`clone` does for a whole
        file.  Offsets page aligned, *length* too unless the range reaches
        the source's end (0: up to there); overlapping ranges of one file
        give ``OSError(EINVAL)``."""
        if _lib.clone_range is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.3: no clones")
        _check(_lib.clone_range(_fileno(source), _u64("src_offset", src_offset),
                                self.fileno(), _u64("dst_offset", dst_offset),
                                _u64("length", length)), self.path)

    def set_huge(self, mode):
        """Set the file's own huge-page mode: one of :data:`HUGE_NEVER`,
        :data:`HUGE_ALWAYS`, :data:`HUGE_WITHIN_SIZE`, :data:`HUGE_ADVISE`,
        or :data:`HUGE_INHERIT` to follow the mount's ``huge=``."""
        _check(_lib.set_huge(self.fileno(), int(mode)), self.path)

    def set_mpol(self, mode, nodes=()):
        """Set the file's own NUMA placement for its later pages: one of
        :data:`MPOL_INHERIT` (follow the mount's ``mpol=``),
        :data:`MPOL_DEFAULT` (the allocating task's own policy),
        :data:`MPOL_PREFERRED` (one node), :data:`MPOL_BIND`,
        :data:`MPOL_INTERLEAVE` or :data:`MPOL_LOCAL`, with *nodes* an
        iterable of node numbers (0..63).  A node without memory or a bad
        combination gives ``OSError(EINVAL)``; a persistent instance
        ``OSError(EOPNOTSUPP)``."""
        if _lib.set_mpol is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.4: no placement")
        mask = 0
        for node in nodes:
            node = operator.index(node)
            if not 0 <= node < _lib.MORSEL_MAX_NODES:
                raise ValueError("node must be in [0, 64): %d" % node)
            mask |= 1 << node
        _check(_lib.set_mpol(self.fileno(), operator.index(mode), mask),
               self.path)

    def mpol(self):
        """The file's own placement as ``(mode, [nodes])``
        (``(MPOL_INHERIT, [])`` when it follows the mount's)."""
        if _lib.get_mpol is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.4: no placement")
        mode, mask = ctypes.c_uint(), ctypes.c_uint64()
        _check(_lib.get_mpol(self.fileno(), ctypes.byref(mode),
                             ctypes.byref(mask)), self.path)
        return mode.value, [n for n in range(64) if mask.value >> n & 1]

    def node_pages(self, offset=0, length=0):
        """Populated pages of ``[offset, offset + length)`` (*length* 0: to
        the end of the file) per NUMA node, as ``{node: pages}`` for the
        nodes that hold some."""
        if _lib.node_pages is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.4: no placement")
        pages = (ctypes.c_uint64 * _lib.MORSEL_MAX_NODES)()
        _check(_lib.node_pages(self.fileno(), _u64("offset", offset),
                               _u64("length", length), pages), self.path)
        return {n: pages[n] for n in range(_lib.MORSEL_MAX_NODES) if pages[n]}

    def migrate(self, node, offset=0, length=0):
        """Move the populated pages of ``[offset, offset + length)``
        (*length* 0: to the end of the file) to NUMA *node*, while any
        number of processes map the file; every mapper sees the new pages
        at once.  Returns ``{"moved": n, "pinned": n, "shared": n,
        "failed": n}``: pages moved, and pages left because someone held
        them, a clone shares them (or a 1 GiB page holds them), or *node*
        had no free page."""
        if _lib.migrate is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.4: no migration")
        res = _lib.MorselMigrate()
        _check(_lib.migrate(self.fileno(), _u64("offset", offset),
                            _u64("length", length), operator.index(node),
                            ctypes.byref(res)), self.path)
        return {"moved": res.moved, "pinned": res.pinned,
                "shared": res.shared, "failed": res.failed}

    def accessed(self, offset=0, length=0, clear=False):
        """Which populated pages of ``[offset, offset + length)`` (*length*
        0: to the end of the file) were accessed through shared mappings,
        by any process, since populated or last cleared (*clear* clears
        them).  Returns ``(accessed, populated, bits)``: counts, and an int
        whose bit i stands for page i of the range."""
        if _lib.accessed is None:
            raise OSError(errno.ENOSYS, "libmorsel older than 1.4: no accessed bits")
        if not length:  # the bitmap must fit what the kernel writes
            size = -(-self.stat().size // PAGE_SIZE) * PAGE_SIZE
            length = max(size - offset, 0)
        words = (length // PAGE_SIZE + 63) // 64
        bm = (ctypes.c_uint64 * words)() if words else None
        acc, pop = ctypes.c_uint64(), ctypes.c_uint64()
        _check(_lib.accessed(self.fileno(), _u64("offset", offset),
                             _u64("length", length), bm, int(bool(clear)),
                             ctypes.byref(acc), ctypes.byref(pop)), self.path)
        return acc.value, pop.value, sum(w << (64 * i) for i, w in enumerate(bm or ()))

    def evict(self, offset=0, length=None):
        """Free the pages of ``[offset, offset + length)``.

        Every process that maps the morsel reads zeros there afterwards.
        Arguments and errors as for :meth:`populate`.
        """
        self._range(_lib.evict, offset, length)

    def bind(self, addr):
        """Bind the morsel to *addr* for its lifetime.

        Every later mapping, in any process, lands at *addr*.  *addr* must be
        non-zero and aligned to the extent (``OSError(EINVAL)``); refused
        while mapped or when bound elsewhere (``OSError(EBUSY)``); binding
        again to the same address does nothing.
        """
        _check(_lib.bind(self.fileno(), _u64("addr", addr)), self.path)

    def mappings(self):
        """Every current mapping of the morsel, as :class:`MappingInfo`.

        Pages through lists of any length.  Another process's mapping is
        described only to a caller with CAP_SYS_PTRACE; else it is listed
        with ``hidden`` set and every other field 0.
        """
        fd = self.fileno()
        count = _check(_lib.mappings(fd, None, 0), self.path)
        while True:
            room = count + 16               # room for a few new ones
            buf = (_lib.MorselMapping * room)()
            count = _check(_lib.mappings(fd, buf, room), self.path)
            if count <= room:
                break
        return [MappingInfo(addr=e.addr, prot=e.prot, pid=e.pid,
                            flags=e.flags,
                            mounted=bool(e.flags & MAPPING_MOUNTED),
                            hidden=bool(e.flags & MAPPING_HIDDEN))
                for e in buf[:count]]

    def set_min_order(self, order):
        """Set the smallest order the morsel keeps (libmorsel's
        ``morsel_set_min_order``): room to grow while mapped.  The order
        rises to it at once, mapped or not, and never falls below it.

        Raises NotImplementedError when the loaded libmorsel predates the
        function; kernel errors as OSError.
        """
        fn = _lib.set_min_order
        if fn is None:
            raise NotImplementedError(
                "morsel_set_min_order is not in %s (an older libmorsel)"
                % library_path)
        order = operator.index(order)
        if not 0 <= order < 1 << 32:
            raise ValueError("order must be in [0, 2**32): %d" % order)
        _check(fn(self.fileno(), order), self.path)

    def map(self, prot=READ | WRITE, addr=None, fixed=False):
        """Map the whole extent, shared, and return the :class:`Mapping`.

        The address is aligned to the extent: *addr* is a hint, used if
        free (rounded up to the extent), or with *fixed* the exact address
        (``OSError(EEXIST)`` if taken).  A bound morsel always maps at its
        address.  *prot*: :data:`READ`, ``READ | WRITE``, optionally
        ``| EXEC``, or 0 (no access until ``mprotect``); EXEC alone
        ``OSError(EACCES)``, WRITE on a read-only descriptor
        ``OSError(EACCES)``.
        """
        fd = self.fileno()
        if fixed and addr is None:
            raise ValueError("fixed=True needs an address")
        hint = None if addr is None else _u64("addr", addr)
        size = self.stat().size
        out_addr, out_len = ctypes.c_void_p(), ctypes.c_size_t()
        _check(_lib.map_(fd, hint, operator.index(prot),
                         _lib.MORSEL_MAP_FIXED if fixed else 0,
                         ctypes.byref(out_addr), ctypes.byref(out_len)),
               self.path)
        return Mapping(self, out_addr.value, out_len.value, prot, size)


_buffer_types = {}


def _buffer_type(length):
    """A ctypes array type of *length* bytes whose instances take weak
    references and attributes (a subclass does); one per extent."""
    t = _buffer_types.get(length)
    if t is None:
        t = type("_MorselBuffer", (ctypes.c_ubyte * length,), {})
        _buffer_types[length] = t
    return t


class _Mapped:
    """What :class:`Mapping` and :class:`CachedFile` share: the views that
    keep the mapping alive, and a close that is refused while one is.
    Subclasses set ``_what`` (for messages), ``address``, ``_buftype`` and
    ``_views = []``, ``_closed = False``, and define ``_unmap()``."""

    @property
    def closed(self):
        """True once the mapping is gone."""
        return self._closed

    def _exports(self):
        self._views = [r for r in self._views if r() is not None]
        return len(self._views)

    def _check_open(self):
        if self._closed:
            raise ValueError("operation on an unmapped " + self._what)

    def _view(self, offset, length):
        """A memoryview of [offset, offset + length) that keeps us alive."""
        buf = self._buftype.from_address(self.address)
        buf.mapping = self          # every view keeps the mapping alive
        self._views.append(weakref.ref(buf))
        return memoryview(buf).cast("B")[offset:offset + length]

    def close(self):
        """Unmap.  Calling it again does nothing.

        Raises BufferError while a view made by :meth:`memoryview` (or
        :meth:`numpy`) is alive, also a slice or array derived from it.
        """
        if self._closed:
            return
        n = self._exports()
        if n:
            raise BufferError("cannot unmap the %s at %#x: %d view(s) of it "
                              "are alive" % (self._what, self.address, n))
        self._unmap()
        self._closed = True

    def __enter__(self):
        self._check_open()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except BufferError:
            # Leaving on an exception, whose traceback may hold the views:
            # the mapping goes with its last view (see __del__).
            if exc_type is None:
                raise

    def __del__(self):
        # Views keep the mapping alive, so normally none is left here; in a
        # garbage cycle with one, leave the memory mapped rather than risk it.
        try:
            if not self._closed and not self._exports():
                self.close()
        except Exception:
            pass


class Mapping(_Mapped):
    """A mapping of a morsel into this process (made by :meth:`Morsel.map`);
    it owns the mapping.

    :attr:`address` and :attr:`length` (the extent) describe it.
    :meth:`memoryview` and :meth:`numpy` view its memory without copying.
    :meth:`close` (or the end of a ``with`` block) unmaps it; that is
    refused with :class:`BufferError` while a memoryview or numpy array made
    from it is alive (release or delete them first), so no view can outlive
    the memory.  A mapping dropped without :meth:`close` is unmapped when
    the last of it and its views is garbage; so is one whose ``with`` block
    ends with an exception while views are alive.

    Touching the mapping past the file size (rounded up to a page) raises
    SIGBUS, as for any file: views stop at the file size unless a length is
    given.
    """

    def __init__(self, morsel, address, length, prot, size):
        #: Start address of the mapping (aligned to :attr:`length`).
        self.address = address
        #: Bytes mapped: the extent of the morsel's order.
        self.length = length
        #: The rights it was mapped with.
        self.prot = prot
        #: The :class:`Morsel` it was made from.
        self.morsel = morsel
        self._size = size
        self._views = []
        self._buftype = _buffer_type(length)
        self._closed = False

    _what = "morsel mapping"

    def _view_size(self):
        m = self.morsel
        size = self._size
        if not m.closed:
            try:
                size = os.fstat(m.fileno()).st_size
            except OSError:
                pass
        return min(size, self.length)

    def memoryview(self, offset=0, length=None):
        """A memoryview of bytes (format ``'B'``) over the mapped memory.

        No copy: writes through it are the morsel's data, seen by every
        mapping and process.  It starts at *offset*; *length* None means up
        to the file size (now, or when mapped if the Morsel has been closed
        since).  Read-only unless mapped with :data:`WRITE`.  ValueError if
        the range passes :attr:`length`.
        """
        self._check_open()
        offset = _u64("offset", offset)
        if length is None:
            length = max(self._view_size() - offset, 0)
        length = _u64("length", length)
        if offset + length > self.length:
            raise ValueError("offset %d + length %d pass the mapping (%d "
                             "bytes)" % (offset, length, self.length))
        mv = self._view(offset, length)
        if not self.prot & WRITE:
            mv = mv.toreadonly()
        return mv

    def numpy(self, dtype, shape=None, offset=0):
        """A numpy array viewing the mapping from *offset*, without a copy.

        *shape* None gives a 1-D array of as many items as fit below the
        file size; an int or tuple gives that shape (ValueError if it passes
        the mapping).  Read-only unless mapped with :data:`WRITE`.  Needs
        numpy (``pip install morsel[numpy]``); it is imported on first use.
        """
        try:
            import numpy
        except ImportError as e:
            raise ImportError("Mapping.numpy() needs numpy") from e
        dtype = numpy.dtype(dtype)
        offset = _u64("offset", offset)
        if shape is None:
            count = max(self._view_size() - offset, 0) // dtype.itemsize
            shape = (count,)
        else:
            if isinstance(shape, int):
                shape = (shape,)
            shape = tuple(operator.index(n) for n in shape)
            count = 1
            for n in shape:
                if n < 0:
                    raise ValueError("negative dimension in %r" % (shape,))
                count *= n
        mv = self.memoryview(offset, count * dtype.itemsize)
        return numpy.frombuffer(mv, dtype=dtype, count=count).reshape(shape)

    def _unmap(self):
        _check(_lib.unmap(self.address, self.length), self.morsel.path)

    def __repr__(self):
        state = "unmapped" if self._closed else "mapped"
        return "<morsel.Mapping %s address=%#x length=%#x prot=%d>" % (
            state, self.address, self.length, self.prot)


# -- the file cache (morsel-cached) -------------------------------------------


def _cache_fn(name):
    fn = getattr(_lib, name)
    if fn is None:
        raise NotImplementedError(
            "morsel_%s is not in %s (an older libmorsel)"
            % (name, library_path))
    return fn


def _socket_arg(socket):
    return None if socket is None else os.fsencode(socket)


class CachedFile(_Mapped):
    """A file served by morsel-cached, mapped read-only (made by
    :func:`cache_map`); it owns the mapping.

    :attr:`address` is the file's first byte, :attr:`length` its size,
    :attr:`extent` the bytes the mapping covers.  :meth:`memoryview` views
    the file's bytes without copying (read-only).  :meth:`close` (or the end
    of a ``with`` block) unmaps it; refused with :class:`BufferError` while
    a view of it is alive, as for :class:`Mapping`.  The mapping stays valid
    when the daemon exits.
    """

    def __init__(self, address, length, name=None):
        #: The file's first byte in this process.
        self.address = address
        #: The file size.
        self.length = length
        #: Bytes the mapping covers (the extent of the morsel's order).
        self.extent = order_extent(order_for_size(length))
        #: The path or descriptor it was made from.
        self.name = name
        self._buftype = _buffer_type(self.extent)
        self._views = []
        self._closed = False

    _what = "cached file"

    def memoryview(self, offset=0, length=None):
        """A read-only memoryview (format ``'B'``) of the file's bytes from
        *offset*, *length* of them (None: to the end of the file).
        ValueError if the range passes the file."""
        self._check_open()
        offset = _u64("offset", offset)
        if length is None:
            length = max(self.length - offset, 0)
        length = _u64("length", length)
        if offset + length > self.length:
            raise ValueError("offset %d + length %d pass the file (%d bytes)"
                             % (offset, length, self.length))
        return self._view(offset, length).toreadonly()

    def __len__(self):
        return self.length

    def _unmap(self):
        _check(_cache_fn("cache_unmap")(self.address, self.length))

    def __repr__(self):
        state = "unmapped" if self._closed else "mapped"
        return "<morsel.CachedFile %s %r address=%#x length=%d>" % (
            state, self.name, self.address, self.length)


def cache_map(path_or_fd, socket=None):
    """Map a file through morsel-cached, read-only, in one call; returns a
    :class:`CachedFile`.

    *path_or_fd* is a path (opened read-only here, so this process's
    permissions decide) or an open file (a descriptor or anything with
    ``fileno()``, open for reading; it stays open).  *socket* is the
    daemon's socket; None means ``$MORSEL_CACHED_SOCKET``, else
    ``/run/morsel-cached.sock``.  Errors raise OSError: EACCES (not open
    for reading), EINVAL (not a regular file, empty, too small, sparse, on
    morselfs), ENOSPC (over the daemon's budget), EDQUOT (over your uid's
    share), EMEDIUMTYPE (a refused file system, FUSE for one), ESTALE (the
    file changed while loaded),
    ECONNREFUSED or ENOENT (no daemon), ...
    """
    fn = _cache_fn("cache_map")
    if isinstance(path_or_fd, int) or hasattr(path_or_fd, "fileno"):
        fd, own, name = _fileno(path_or_fd), False, path_or_fd
        if not isinstance(name, int):
            name = getattr(name, "name", None)
    else:
        name = os.fspath(path_or_fd)
        fd, own = os.open(name, os.O_RDONLY | os.O_CLOEXEC), True
    try:
        addr = ctypes.c_void_p()
        length = ctypes.c_size_t()
        _check(fn(_socket_arg(socket), fd, ctypes.byref(addr),
                  ctypes.byref(length)),
               name if isinstance(name, (str, bytes)) else None)
    finally:
        if own:
            os.close(fd)
    return CachedFile(addr.value, length.value, name)


@dataclasses.dataclass(frozen=True)
class CacheStats:
    """What :func:`cache_stats` returns (``struct morsel_cache_stats``):
    ``entries`` cached files, ``bytes`` their memory (pages and tables,
    with replaced versions still mapped), the daemon's ``budget``, and the
    counts of ``hits``, ``loads``, ``evictions`` and refused requests
    (``refusals``)."""
    entries: int
    bytes: int
    budget: int
    hits: int
    loads: int
    evictions: int
    refusals: int


def cache_stats(socket=None):
    """The counters of the morsel-cached at *socket* (None: as for
    :func:`cache_map`)."""
    connect = _cache_fn("cache_connect")
    stats = _cache_fn("cache_stats")
    sock = _check(connect(_socket_arg(socket)))
    try:
        st = _lib.CacheStats()
        _check(stats(sock, ctypes.byref(st)))
    finally:
        os.close(sock)
    return CacheStats(**{f: getattr(st, f) for f, _ in st._fields_})


def send_fd(sock, morsel):
    """Send a morsel (a :class:`Morsel` or a descriptor) over a connected
    AF_UNIX socket (a socket object or its descriptor)."""
    _check(_lib.send_fd(_fileno(sock), _fileno(morsel)))


def recv_fd(sock):
    """Receive a morsel sent by :func:`send_fd`; returns a :class:`Morsel`
    owning the new descriptor (close-on-exec).

    OSError(EBADMSG) if the message carried no descriptor, OSError(ENOTTY)
    if the descriptor is no morsel (it is closed then).
    """
    fd = _check(_lib.recv_fd(_fileno(sock)))
    try:
        return Morsel.from_fd(fd)
    except BaseException:
        os.close(fd)
        raise
