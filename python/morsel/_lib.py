# SPDX-License-Identifier: LGPL-2.1 OR MIT
"""Loading libmorsel and declaring its functions for ctypes.

Nothing here talks to the kernel by itself: every ioctl goes through the
shared libmorsel (lib/morsel.c), so the C and Python interfaces cannot drift.
"""

import ctypes
import ctypes.util
import os

SONAME = "libmorsel.so.1"

# include/uapi/linux/morsel.h
MORSEL_MAX_ORDER = 4
MORSEL_TABLE_LEVELS = 4
MORSEL_PROT_READ = 0x1
MORSEL_PROT_WRITE = 0x2
MORSEL_PROT_EXEC = 0x4
MORSEL_MAPPING_MOUNTED = 0x1
MORSEL_MAPPING_HIDDEN = 0x2
MORSEL_MAX_NODES = 64
# lib/morsel.h
MORSEL_MAP_FIXED = 0x1

_u64 = ctypes.c_uint64


class MorselStat(ctypes.Structure):
    """struct morsel_stat"""
    _fields_ = [
        ("flags", _u64),
        ("order", _u64),
        ("extent", _u64),
        ("size", _u64),
        ("pages", _u64),
        ("tables", _u64 * MORSEL_TABLE_LEVELS),
        ("mappings", _u64),
        ("bound", _u64),
        ("min_order", _u64),
        ("huge", _u64),
        ("huge_mode", _u64),
        ("huge1g", _u64),
        ("reserved", _u64 * 3),
    ]


class MorselMapping(ctypes.Structure):
    """struct morsel_mapping"""
    _fields_ = [
        ("addr", _u64),
        ("prot", _u64),
        ("pid", _u64),
        ("flags", _u64),
    ]


class MorselMigrate(ctypes.Structure):
    """struct morsel_migrate"""
    _fields_ = [
        ("offset", _u64),
        ("length", _u64),
        ("node", _u64),
        ("flags", _u64),
        ("moved", _u64),
        ("pinned", _u64),
        ("shared", _u64),
        ("failed", _u64),
        ("bitmap", _u64),
        ("reserved", _u64 * 3),
    ]


class CacheStats(ctypes.Structure):
    """struct morsel_cache_stats (lib/morsel.h)"""
    _fields_ = [
        ("entries", _u64),
        ("bytes", _u64),
        ("budget", _u64),
        ("hits", _u64),
        ("loads", _u64),
        ("evictions", _u64),
        ("refusals", _u64),
    ]


def _candidates():
    """(description, path) in the order the library is looked for."""
    env = os.environ.get("MORSEL_LIBRARY")
    if env:
        # An explicit choice: no fallback if it does not load.
        return [("$MORSEL_LIBRARY", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    found = [("next to the package", os.path.join(here, SONAME))]
    name = ctypes.util.find_library("morsel")
    if name:
        found.append(("find_library('morsel')", name))
    # Running from the source tree: python/morsel/ -> the repo's lib/.
    repo = os.path.dirname(os.path.dirname(here))
    if (os.path.isfile(os.path.join(repo, "lib", "morsel.h"))
            and os.path.isfile(os.path.join(repo, "python", "pyproject.toml"))):
        found.append(("the source tree", os.path.join(repo, "lib", SONAME)))
    return found


def _load():
    tried = []
    for what, path in _candidates():
        if what != "$MORSEL_LIBRARY" and os.sep in path \
                and not os.path.exists(path):
            tried.append("%s (%s): not there" % (what, path))
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            if what == "$MORSEL_LIBRARY":
                raise ImportError("morsel: cannot load $MORSEL_LIBRARY=%s: %s"
                                  % (path, e)) from e
            tried.append("%s (%s): %s" % (what, path, e))
    raise ImportError("morsel: cannot find %s; set $MORSEL_LIBRARY to its "
                      "path. Tried: %s" % (SONAME, "; ".join(tried)))


lib, path = _load()


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


_int, _uint, _vp = ctypes.c_int, ctypes.c_uint, ctypes.c_void_p

order_extent = _declare("morsel_order_extent", _u64, _uint)
order_for_size = _declare("morsel_order_for_size", _int, _u64)
create = _declare("morsel_create", _int, ctypes.c_char_p, _u64, ctypes.c_uint)
create_unnamed = _declare("morsel_create_unnamed", _int, _int, _u64,
                          ctypes.c_uint)
open_ = _declare("morsel_open", _int, ctypes.c_char_p, _int)
resize = _declare("morsel_resize", _int, _int, _u64)
map_ = _declare("morsel_map", _int, _int, _vp, _int, _int,
                ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_size_t))
unmap = _declare("morsel_unmap", _int, _vp, ctypes.c_size_t)
stat = _declare("morsel_stat", _int, _int, ctypes.POINTER(MorselStat))
populate = _declare("morsel_populate", _int, _int, _u64, _u64)
evict = _declare("morsel_evict", _int, _int, _u64, _u64)
bind = _declare("morsel_bind", _int, _int, _u64)
mappings = _declare("morsel_mappings", _int, _int,
                    ctypes.POINTER(MorselMapping), _uint)
send_fd = _declare("morsel_send_fd", _int, _int, _int)
recv_fd = _declare("morsel_recv_fd", _int, _int)

# New in libmorsel after 1.0's first release: None with an older library.
try:
    set_min_order = _declare("morsel_set_min_order", _int, _int, _uint)
except AttributeError:
    set_min_order = None

# The file-cache client (MORSEL_1.1): None with an older library.
try:
    cache_connect = _declare("morsel_cache_connect", _int, ctypes.c_char_p)
    cache_map = _declare("morsel_cache_map", _int, ctypes.c_char_p, _int,
                         ctypes.POINTER(_vp), ctypes.POINTER(ctypes.c_size_t))
    cache_unmap = _declare("morsel_cache_unmap", _int, _vp, ctypes.c_size_t)
    cache_stats = _declare("morsel_cache_stats", _int, _int,
                           ctypes.POINTER(CacheStats))
except AttributeError:
    cache_connect = cache_map = cache_unmap = cache_stats = None

# 2 MiB leaves (MORSEL_1.2): None with an older library.
try:
    populate_huge = _declare("morsel_populate_huge", _int, _int, _u64, _u64)
    collapse = _declare("morsel_collapse", _int, _int, _u64, _u64)
    set_huge = _declare("morsel_set_huge", _int, _int, _uint)
except AttributeError:
    populate_huge = collapse = set_huge = None

# Copy-on-write clones (MORSEL_1.3): None with an older library.
try:
    clone = _declare("morsel_clone", _int, _int, _int)
    clone_range = _declare("morsel_clone_range", _int, _int, _u64, _int,
                           _u64, _u64)
except AttributeError:
    clone = clone_range = None

# A memory manager per process (MORSEL_1.3, kernel patch 13).
try:
    set_memory_manager = _declare("morsel_set_memory_manager", _int,
                                  ctypes.c_char_p)
    memory_manager = _declare("morsel_memory_manager", _int)
except AttributeError:
    set_memory_manager = memory_manager = None

# Placement on NUMA nodes (MORSEL_1.4): None with an older library.
try:
    set_mpol = _declare("morsel_set_mpol", _int, _int, _uint, _u64)
    get_mpol = _declare("morsel_get_mpol", _int, _int,
                        ctypes.POINTER(_uint), ctypes.POINTER(_u64))
    node_pages = _declare("morsel_node_pages", _int, _int, _u64, _u64,
                          ctypes.POINTER(_u64))
    migrate = _declare("morsel_migrate", _int, _int, _u64, _u64, _uint,
                       ctypes.POINTER(MorselMigrate))
    accessed = _declare("morsel_accessed", _int, _int, _u64, _u64,
                        ctypes.POINTER(_u64), _int, ctypes.POINTER(_u64),
                        ctypes.POINTER(_u64))
except AttributeError:
    set_mpol = get_mpol = node_pages = migrate = accessed = None
