#!/usr/bin/env python3
"""Power-cut workload and its oracle for a persistent morselfs (tests/powercut).

  pm_workload.py run DIR --seed S --procs N [--ops M]
  pm_workload.py verify DIR --seed S --procs N [--ops M] --done p0:k0,p1:k1,... [--mmap]

run forks N processes; process p works in DIR/p<p> on a deterministic
random sequence of M operations drawn from (S, p) by a model of the file
system (never from what the kernel answered), so verify recomputes the
same sequence.  Operation 1 creates DIR/p<p>; then: create a file with
data, append, overwrite below EOF, ftruncate up and down, a new file
written through a MAP_SHARED mapping then unmapped, PUNCH_HOLE|KEEP_SIZE,
rename (of a file or symlink, within or across the process's directories,
also over another file; of a directory within its parent, also over an
empty one), unlink, mkdir, rmdir, link, symlink.  After operation k
returns, process p writes "done p k" to stdout and waits for the tty to
drain it (tcdrain), so the host's console holds every line whose
operation returned, except possibly the last.

verify compares DIR/p<p> with the model after k_p operations (k_p: the
last "done" line the host saw; 0 if none), or with the model during or
after operation k_p+1, which may have been cut:
  - metadata operations, appends and ftruncate are atomic: before or after;
  - create-with-data is open(O_CREAT) then write: absent, empty or full;
  - the mmap'ed new file: absent, empty, or its final size with each byte
    zero or new;
  - an overwrite: each byte of the range old or new;
  - a punch: the partial pages at its edges are zeroed byte by byte first,
    then the whole pages in between go at once (recovery finishes them):
    edge bytes old or zero with the middle old, or everything zero.
Compared exactly: the names, types, permission bits, sizes, contents,
symlink targets, link counts and which names share an inode (st_ino).
To keep k unambiguous, no operation leaves the state it found, nor the
state before the previous operation (such draws are redrawn).
A mismatch lists the differences from each acceptable state, and names
the model state the directory is exactly, if it is one nearby (e.g. two
operations ahead: a console line lost).  verify --mmap reads the files
through MAP_SHARED mappings instead of read(2): the MMU then walks the
files' trees on the device.
Exit status: 0 when every process's directory matches, 1 otherwise.
"""
import argparse
import collections
import ctypes
import itertools
import mmap
import multiprocessing
import os
import random
import re
import stat
import sys
import termios
import time

PAGE = 4096
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
BUDGET = 12 << 20       # bytes of file data per process (hard-linked once)
MAX_NAMES = 120         # beyond this the draws favour removal
MAX_DEPTH = 2           # directories below DIR/p<p>
DEFAULT_OPS = 8000      # tests/powercut's workload (about 20 s on an idle host)

# ---- the model ---------------------------------------------------------
#
# A state is (names, inodes): names maps a path relative to DIR/p<p> ('' is
# DIR/p<p> itself) to an inode number of the model; inodes maps a number to
# (kind, mode, payload): ('f', perm, bytes), ('l', 0, target), ('d', perm,
# None).  Values are immutable, so a state is copied by copying two dicts.


class State:
    __slots__ = ('names', 'inodes', 'next_ino', 'next_name', 'size')

    def __init__(self):
        self.names = {}
        self.inodes = {}
        self.next_ino = 1
        self.next_name = 1
        self.size = 0           # bytes of file data (each inode once)

    def copy(self):
        s = State()
        s.names = dict(self.names)
        s.inodes = dict(self.inodes)
        s.next_ino = self.next_ino
        s.next_name = self.next_name
        s.size = self.size
        return s

    def same(self, other):
        return self.names == other.names and self.inodes == other.inodes

    def kind(self, path):
        return self.inodes[self.names[path]][0]


def parent(path):
    return path.rpartition('/')[0]


def depth(path):
    return 0 if path == '' else path.count('/') + 1


def join(d, name):
    return name if d == '' else d + '/' + name


def set_file(s, path, data, mode=None):
    ino = s.names[path]
    kind, old_mode, old = s.inodes[ino]
    s.size += len(data) - len(old)
    s.inodes[ino] = (kind, old_mode if mode is None else mode, data)


def new_inode(s, path, value):
    s.names[path] = s.next_ino
    s.inodes[s.next_ino] = value
    s.next_ino += 1
    if value[0] == 'f':
        s.size += len(value[2])


def drop_name(s, path):
    ino = s.names.pop(path)
    if ino not in s.names.values():
        value = s.inodes.pop(ino)
        if value[0] == 'f':
            s.size -= len(value[2])


def punched(data, off, length):
    end = min(off + length, len(data))
    return data[:off] + bytes(end - off) + data[end:]


def punch_parts(size, off, length):
    """morsel_evict()'s split of a punch: the partial edges zeroed byte by
    byte, and the [first, last) middle freed at once (clipped to size)."""
    end = min(off + length, size)
    first = -(-off // PAGE) * PAGE
    last = -(-end // PAGE) * PAGE if end == size else end // PAGE * PAGE
    if first > last:
        return [(off, end)], None
    edges = [(a, min(b, end)) for a, b in ((off, first), (last, end)) if a < min(b, end)]
    middle = (first, min(last, end)) if first < last else None
    return edges, middle


def apply(s, op):
    """The state after operation op (a new State; s is unchanged)."""
    s = s.copy()
    k = op[0]
    if k == 'top':
        new_inode(s, '', ('d', 0o755, None))
    elif k == 'create':
        new_inode(s, op[1], ('f', op[2], op[3]))
    elif k == 'mmapnew':
        new_inode(s, op[1], ('f', op[2], op[3]))
    elif k == 'append':
        set_file(s, op[1], s.inodes[s.names[op[1]]][2] + op[2])
    elif k == 'overwrite':
        old = s.inodes[s.names[op[1]]][2]
        off, data = op[2], op[3]
        set_file(s, op[1], old[:off] + data + old[off + len(data):])
    elif k in ('grow', 'shrink'):
        old = s.inodes[s.names[op[1]]][2]
        size = op[2]
        set_file(s, op[1], old[:size] + bytes(max(0, size - len(old))))
    elif k == 'punch':
        set_file(s, op[1], punched(s.inodes[s.names[op[1]]][2], op[2], op[3]))
    elif k == 'rename':
        src, dst = op[1], op[2]
        if s.kind(src) == 'd':
            if dst in s.names:
                drop_name(s, dst)
            for path in [p for p in s.names if p == src or p.startswith(src + '/')]:
                s.names[dst + path[len(src):]] = s.names.pop(path)
        else:
            if dst in s.names:
                drop_name(s, dst)
            s.names[dst] = s.names.pop(src)
    elif k in ('unlink', 'rmdir'):
        drop_name(s, op[1])
    elif k == 'mkdir':
        new_inode(s, op[1], ('d', op[2], None))
    elif k == 'link':
        s.names[op[2]] = s.names[op[1]]
    elif k == 'symlink':
        new_inode(s, op[2], ('l', 0, op[1]))
    else:
        raise ValueError(op)
    return s


# ---- drawing operations ------------------------------------------------

FILE_MODES = (0o644, 0o600, 0o640, 0o755)
DIR_MODES = (0o755, 0o700, 0o750)
WEIGHTS = (('create', 14), ('append', 12), ('overwrite', 10), ('grow', 5),
           ('shrink', 6), ('mmapnew', 8), ('punch', 8), ('rename', 12),
           ('unlink', 9), ('mkdir', 5), ('rmdir', 4), ('link', 6),
           ('symlink', 5))


def draw_size(rng, big=True):
    """Mostly small, but large enough often that a cut lands inside a
    long copy, free or punch now and then (the windows recovery closes)."""
    r = rng.random()
    if r < 0.5:
        return rng.randint(1, 5000)
    if r < 0.8 or not big:
        return rng.randint(5000, 100000)
    if r < 0.95:
        return rng.randint(100000, 1 << 20)
    return rng.randint(1 << 20, 3 << 20)


def pattern(rng, n):
    """n bytes: a random block of 8191 bytes (a prime: its phase differs
    from page to page, so a page in the wrong place shows) repeated."""
    block = rng.randbytes(min(n, 8191))
    return (block * (n // len(block) + 1))[:n] if n > len(block) else block


def fresh_name(rng, s, prefix):
    n = s.next_name
    s.next_name += 1
    name = '%s%d' % (prefix, n)
    if rng.random() < 0.05:         # long names: up to NAME_MAX
        name += '_' + 'n' * rng.randint(40, 254 - len(name))
    return name


def pick_offset(rng, s, nonempty, aligned):
    """A non-empty file, its size, and an offset below it that is page
    aligned with probability @aligned."""
    f = rng.choice(nonempty)
    size = len(s.inodes[s.names[f]][2])
    off = rng.randrange(size)
    if rng.random() < aligned:
        off = off // PAGE * PAGE
    return f, size, off


def draw(rng, s):
    """One operation for state s (its name counter advances), or None."""
    if '' not in s.names:
        return ('top',)
    files, links, dirs = [], [], []
    for path, ino in s.names.items():
        kind = s.inodes[ino][0]
        if kind == 'f':
            files.append(path)
        elif kind == 'l':
            links.append(path)
        else:
            dirs.append(path)
    subdirs = [d for d in dirs if d]

    def empty():
        parents = {parent(p) for p in s.names if p}
        return [d for d in subdirs if d not in parents]
    full = s.size > BUDGET
    crowded = len(s.names) > MAX_NAMES
    weights = []
    for name, w in WEIGHTS:
        if full and name in ('create', 'append', 'grow', 'mmapnew'):
            w = 1 if name == 'create' else 0
        if (full or crowded) and name in ('unlink', 'shrink', 'rmdir'):
            w *= 4
        if crowded and name in ('create', 'mmapnew', 'mkdir', 'link', 'symlink'):
            w = 1
        weights.append(w)
    op = rng.choices([n for n, _ in WEIGHTS], weights)[0]
    nonempty = [f for f in files if s.inodes[s.names[f]][2]]
    if op in ('create', 'mmapnew'):
        path = join(rng.choice(dirs), fresh_name(rng, s, 'f' if op == 'create' else 'm'))
        return (op, path, rng.choice(FILE_MODES), pattern(rng, draw_size(rng)))
    if op == 'append' and files:
        return (op, rng.choice(files), pattern(rng, draw_size(rng, big=False)))
    if op == 'overwrite' and nonempty:
        f, size, off = pick_offset(rng, s, nonempty, 0.3)
        n = rng.randint(1, min(size - off, draw_size(rng, big=False)))
        return (op, f, off, pattern(rng, n))
    if op == 'grow' and files:
        f = rng.choice(files)
        return (op, f, len(s.inodes[s.names[f]][2]) + draw_size(rng))
    if op == 'shrink' and nonempty:
        f, size, new = pick_offset(rng, s, nonempty, 0.3)
        return (op, f, new)
    if op == 'punch' and nonempty:
        f, size, off = pick_offset(rng, s, nonempty, 0.4)
        n = rng.randint(1, size - off + 2 * PAGE)
        if rng.random() < 0.4:
            n = -(-n // PAGE) * PAGE
        return (op, f, off, n)
    if op == 'rename':
        movable = files + links
        if movable and (not subdirs or rng.random() < 0.8):
            src = rng.choice(movable)
            ino = s.names[src]
            over = [p for p in movable if s.names[p] != ino]
            if over and rng.random() < 0.5:
                return (op, src, rng.choice(over))
            return (op, src, join(rng.choice(dirs), fresh_name(rng, s, 'r')))
        if subdirs:
            src = rng.choice(subdirs)
            over = [d for d in empty() if d != src and parent(d) == parent(src)]
            if over and rng.random() < 0.3:
                return (op, src, rng.choice(over))
            return (op, src, join(parent(src), fresh_name(rng, s, 'e')))
        return None
    if op == 'unlink' and (files or links):
        return (op, rng.choice(files + links))
    if op == 'mkdir':
        shallow = [d for d in dirs if depth(d) < MAX_DEPTH]
        path = join(rng.choice(shallow), fresh_name(rng, s, 'd'))
        return (op, path, rng.choice(DIR_MODES))
    if op == 'rmdir' and subdirs:
        candidates = empty()
        if candidates:
            return (op, rng.choice(candidates))
    if op == 'link' and files:
        return (op, rng.choice(files), join(rng.choice(dirs), fresh_name(rng, s, 'h')))
    if op == 'symlink':
        names = [p for p in s.names if p]
        if names and rng.random() < 0.5:
            target = rng.choice(names)
        else:
            n = rng.randint(1, 60) if rng.random() < 0.8 else rng.randint(200, 1000)
            target = ''.join(rng.choice('abcdefghij/._-') for _ in range(n))
        return (op, target, join(rng.choice(dirs), fresh_name(rng, s, 's')))
    return None


def sequence(seed, p, count):
    """Yields (k, op, state before, state after) for k = 1..count."""
    rng = random.Random('morsels-pm-workload:%d:%d' % (seed, p))
    prev, cur = None, State()
    for k in range(1, count + 1):
        for _ in range(1000):
            op = draw(rng, cur)
            if op is None:
                continue
            new = apply(cur, op)
            # Every operation changes the state, and none restores the
            # state before the previous one: k stays unambiguous.
            if not new.same(cur) and (prev is None or not new.same(prev)):
                break
        else:
            raise RuntimeError('process %d: no operation to draw at %d' % (p, k))
        new.next_name = cur.next_name   # the counter moved on in draw()
        yield k, op, cur, new
        prev, cur = cur, new


def describe(op):
    k = op[0]
    if k in ('create', 'mmapnew'):
        return '%s %s (%d bytes, mode %o)' % (k, op[1], len(op[3]), op[2])
    if k == 'append':
        return 'append %d bytes to %s' % (len(op[2]), op[1])
    if k == 'overwrite':
        return 'overwrite %s [%d, %d)' % (op[1], op[2], op[2] + len(op[3]))
    if k in ('grow', 'shrink'):
        return 'ftruncate %s to %d' % (op[1], op[2])
    if k == 'punch':
        return 'punch %s [%d, %d)' % (op[1], op[2], op[2] + op[3])
    if k == 'symlink':
        return 'symlink %s -> %r' % (op[2], op[1][:40])
    if k == 'mkdir':
        return 'mkdir %s' % op[1]
    return ' '.join(str(x) for x in op)


# ---- running -----------------------------------------------------------

_libc = None


def fallocate(fd, mode, off, length):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if _libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def write_all(fd, data, off=None):
    view = memoryview(data)
    while view:
        n = os.write(fd, view) if off is None else os.pwrite(fd, view, off)
        if off is not None:
            off += n
        view = view[n:]


def execute(top, op):
    k = op[0]
    path = os.path.join(top, op[1]) if len(op) > 1 and k != 'symlink' else top
    if k == 'top':
        os.mkdir(top, 0o755)
    elif k == 'create':
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, op[2])
        write_all(fd, op[3])
        os.close(fd)
    elif k == 'mmapnew':
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, op[2])
        os.ftruncate(fd, len(op[3]))
        m = mmap.mmap(fd, len(op[3]), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[:] = op[3]
        m.close()               # munmap
        os.close(fd)
    elif k == 'append':
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        write_all(fd, op[2])
        os.close(fd)
    elif k == 'overwrite':
        fd = os.open(path, os.O_WRONLY)
        write_all(fd, op[3], op[2])
        os.close(fd)
    elif k in ('grow', 'shrink'):
        os.truncate(path, op[2])
    elif k == 'punch':
        fd = os.open(path, os.O_WRONLY)
        fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, op[2], op[3])
        os.close(fd)
    elif k == 'rename':
        os.rename(path, os.path.join(top, op[2]))
    elif k == 'unlink':
        os.unlink(path)
    elif k == 'mkdir':
        os.mkdir(path, op[2])
    elif k == 'rmdir':
        os.rmdir(path)
    elif k == 'link':
        os.link(path, os.path.join(top, op[2]))
    elif k == 'symlink':
        os.symlink(op[1], os.path.join(top, op[2]))
    else:
        raise ValueError(op)


def say(line):
    os.write(1, (line + '\n').encode())
    try:
        termios.tcdrain(1)      # on the console: sent before we go on
    except termios.error:
        pass


def worker(d, seed, p, ops):
    top = os.path.join(d, 'p%d' % p)
    k = 0
    op = None
    try:
        for k, op, _, _ in sequence(seed, p, ops):
            execute(top, op)
            say('done %d %d' % (p, k))
    except Exception as e:      # noqa: BLE001 - reported, then exit 1
        say('error %d %d: %s: %s' % (p, k, describe(op) if op else '?', e))
        return 1
    return 0


def cmd_run(a):
    start = time.monotonic()
    os.umask(0)
    pids = {}
    for p in range(a.procs):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = worker(a.dir, a.seed, p, a.ops)
            finally:
                os._exit(code)
        pids[pid] = p
    failed = 0
    for _ in range(a.procs):
        _, status = os.wait()
        if status:
            failed += 1
    say('workload: %d processes, %d ops each, %d failed, %.1f s' %
        (a.procs, a.ops, failed, time.monotonic() - start))
    return 1 if failed else 0


# ---- verifying -----------------------------------------------------------


class Mixed:
    """File content of len(a) bytes: byte i is a[i] or b[i] inside
    ranges, and a[i] (== b[i]) outside."""

    def __init__(self, a, b, ranges):
        self.a, self.b, self.ranges = a, b, ranges

    def __len__(self):
        return len(self.a)

    def match(self, x):
        """None, or why x does not match."""
        a, b = self.a, self.b
        if len(x) != len(a):
            return 'size %d, expected %d' % (len(x), len(a))
        pos = 0
        for lo, hi in sorted(self.ranges) + [(len(a), len(a))]:
            if x[pos:lo] != a[pos:lo]:
                i = next(i for i in range(pos, lo) if x[i] != a[i])
                return 'byte %d is %#x, expected %#x' % (i, x[i], a[i])
            for c in range(lo, hi, PAGE):
                e = min(c + PAGE, hi)
                xc = x[c:e]
                if xc == a[c:e] or xc == b[c:e]:
                    continue
                for i in range(c, e):
                    if x[i] != a[i] and x[i] != b[i]:
                        return 'byte %d is %#x, expected %#x or %#x' % (i, x[i], a[i], b[i])
            pos = max(pos, hi)
        return None

    def __repr__(self):
        return 'Mixed(%d bytes, %s)' % (len(self.a), self.ranges)


def with_content(s, path, content):
    s = s.copy()
    ino = s.names[path]
    kind, mode, _ = s.inodes[ino]
    s.inodes[ino] = (kind, mode, content)
    return s


def candidates(before, op, after):
    """(label, state) for every state op may leave when cut."""
    k = op[0]
    if k == 'create':
        empty = apply(before, ('create', op[1], op[2], b''))
        return [('not done', before), ('created empty', empty), ('done', after)]
    if k == 'mmapnew':
        data = op[3]
        empty = apply(before, ('create', op[1], op[2], b''))
        mixed = with_content(after, op[1], Mixed(bytes(len(data)), data, [(0, len(data))]))
        return [('not done', before), ('created empty', empty),
                ('sized, stores zero or new', mixed)]
    if k == 'overwrite':
        old = before.inodes[before.names[op[1]]][2]
        new = after.inodes[after.names[op[1]]][2]
        mixed = with_content(after, op[1], Mixed(old, new, [(op[2], op[2] + len(op[3]))]))
        return [('bytes old or new', mixed)]
    if k == 'punch':
        old = before.inodes[before.names[op[1]]][2]
        edges, middle = punch_parts(len(old), op[2], op[3])
        zeroed = old
        for lo, hi in edges:
            zeroed = punched(zeroed, lo, hi - lo)
        mixed = with_content(after, op[1], Mixed(old, zeroed, edges))
        return [('edges old or zero, middle old', mixed), ('done', after)]
    return [('not done', before), ('done', after)]


def scan(top, use_mmap=False):
    """path -> (kind, mode, payload, st_ino, st_nlink) under top; None if
    top does not exist.  use_mmap: read files through MAP_SHARED mappings
    (the MMU walks the morsel's own tables) rather than read(2)."""
    try:
        st = os.lstat(top)
    except FileNotFoundError:
        return None
    out = {}
    todo = [('', st)]
    while todo:
        path, st = todo.pop()
        full = os.path.join(top, path) if path else top
        perm = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            out[path] = ('d', perm, None, st.st_ino, st.st_nlink)
            for name in os.listdir(full):
                sub = join(path, name)
                todo.append((sub, os.lstat(os.path.join(top, sub))))
        elif stat.S_ISREG(st.st_mode):
            with open(full, 'rb') as f:
                if use_mmap and st.st_size:
                    with mmap.mmap(f.fileno(), st.st_size, mmap.MAP_SHARED, mmap.PROT_READ) as m:
                        data = m[:]
                else:
                    data = f.read()
            if len(data) != st.st_size:
                data = ('read %d bytes of st_size %d' % (len(data), st.st_size), data)
            out[path] = ('f', perm, data, st.st_ino, st.st_nlink)
        elif stat.S_ISLNK(st.st_mode):
            out[path] = ('l', 0, os.readlink(full), st.st_ino, st.st_nlink)
        else:
            out[path] = ('?%o' % stat.S_IFMT(st.st_mode), perm, None, st.st_ino, st.st_nlink)
    return out


def compare(actual, s):
    """The differences between the scanned tree and model state s (at
    most a few), [] when they match."""
    diffs = []
    if actual is None:
        return [] if not s.names else ['the directory is missing']
    if not s.names:
        return ['the directory exists (%d names), expected none' % len(actual)]
    missing = sorted(set(s.names) - set(actual))
    extra = sorted(set(actual) - set(s.names))
    if missing:
        diffs.append('missing: %s' % ', '.join(missing[:5]))
    if extra:
        diffs.append('unexpected: %s' % ', '.join(extra[:5]))
    links = {}
    for path, ino in s.names.items():
        links.setdefault(ino, []).append(path)
    subdirs = {}
    for path in s.names:
        if path and s.kind(path) == 'd':
            subdirs[parent(path)] = subdirs.get(parent(path), 0) + 1
    seen = {}
    for path in sorted(set(s.names) & set(actual)):
        kind, mode, payload = s.inodes[s.names[path]]
        akind, amode, apayload, aino, anlink = actual[path]
        shown = path or '.'
        if akind != kind:
            diffs.append('%s: type %s, expected %s' % (shown, akind, kind))
            continue
        if kind != 'l' and amode != mode:
            diffs.append('%s: mode %o, expected %o' % (shown, amode, mode))
        if kind == 'f':
            if isinstance(apayload, tuple):
                diffs.append('%s: %s' % (shown, apayload[0]))
                apayload = apayload[1]
            if isinstance(payload, Mixed):
                why = payload.match(apayload)
                if why:
                    diffs.append('%s: %s' % (shown, why))
            elif apayload != payload:
                if len(apayload) != len(payload):
                    diffs.append('%s: size %d, expected %d' % (shown, len(apayload), len(payload)))
                else:
                    i = next(i for i in range(len(payload)) if apayload[i] != payload[i])
                    diffs.append('%s: byte %d is %#x, expected %#x (size %d)' %
                                 (shown, i, apayload[i], payload[i], len(payload)))
            want = len(links[s.names[path]])
        elif kind == 'l':
            if apayload != payload:
                diffs.append('%s: symlink to %r, expected %r' % (shown, apayload, payload))
            want = 1
        else:
            want = 2 + subdirs.get(path, 0)
        if anlink != want:
            diffs.append('%s: %d links, expected %d' % (shown, anlink, want))
        ino = s.names[path]
        if ino in seen and seen[ino][0] != aino:
            diffs.append('%s and %s: inodes %d and %d, expected one (hard links)' %
                         (seen[ino][1] or '.', shown, seen[ino][0], aino))
        seen.setdefault(ino, (aino, path))
    owners = {}
    for ino, (aino, path) in seen.items():
        if aino in owners:
            diffs.append('%s and %s share inode %d, expected two' % (owners[aino] or '.', path, aino))
        owners[aino] = path
    return diffs


def verify_one(d, seed, p, ops, kp, use_mmap=False):
    """(ok, message) for DIR/p<p> against k_p done operations."""
    top = os.path.join(d, 'p%d' % p)
    actual = scan(top, use_mmap)
    if kp > ops:
        return False, 'p%d: %d done, but the workload has %d operations' % (p, kp, ops)
    recent = collections.deque(maxlen=50)     # (j, state after j operations)
    state = State()
    recent.append((0, state))
    seq = sequence(seed, p, ops)
    for k, op, before, after in seq:
        if k == kp + 1:
            tried = []
            for label, cand in candidates(before, op, after):
                diffs = compare(actual, cand)
                if not diffs:
                    if any(isinstance(v[2], Mixed) for v in cand.inodes.values()):
                        if not compare(actual, before):
                            label = 'not done'
                        elif not compare(actual, after):
                            label = 'done'
                        else:
                            label += ': partly'
                    return True, 'p%d: %d done; op %d (%s) in flight: %s' % (
                        p, kp, k, describe(op), label)
                tried.append((label, diffs))
            msg = ['p%d: MISMATCH after %d done operations; op %d (%s) in flight' %
                   (p, kp, k, describe(op))]
            for label, diffs in tried:
                msg.append('  against "%s": %s' % (label, '; '.join(diffs[:6])))
            # Diagnosis: which model state, if any, it is exactly.
            recent.append((k, after))
            for j, _, _, b in itertools.islice(seq, 50):
                recent.append((j, b))
            for j, b in recent:
                if j not in (kp, kp + 1) and not compare(actual, b):
                    msg.append('  it is exactly the state after %d operations' % j)
            return False, '\n'.join(msg)
        state = after
        recent.append((k, state))
    # All operations done (kp == ops): the final state, exactly.
    diffs = compare(actual, state)
    if diffs:
        return False, 'p%d: MISMATCH after all %d operations: %s' % (p, kp, '; '.join(diffs[:6]))
    return True, 'p%d: all %d operations done' % (p, kp)


def cmd_verify(a):
    done = {}
    for item in filter(None, a.done.split(',')):
        p, _, k = item.partition(':')
        done[int(p)] = int(k)
    bad = 0
    allowed = {'p%d' % p for p in range(a.procs)}
    stray = sorted(set(os.listdir(a.dir)) - allowed)
    if stray:
        print('verify: unexpected names in %s: %s' % (a.dir, ', '.join(stray)))
        bad += 1
    jobs = [(a.dir, a.seed, p, a.ops, done.get(p, 0), a.mmap) for p in range(a.procs)]
    with multiprocessing.Pool(min(a.procs, os.cpu_count() or 1)) as pool:
        results = pool.starmap(verify_one, jobs)
    for ok, msg in results:
        msg = re.sub(r'n{16,}', lambda m: 'n*%d' % len(m.group()), msg)  # long names
        print(('verify: ' if ok else 'verify: FAILED ') + msg)
        bad += not ok
    sys.stdout.flush()
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    for name in ('run', 'verify'):
        c = sub.add_parser(name)
        c.add_argument('dir')
        c.add_argument('--seed', type=int, required=True)
        c.add_argument('--procs', type=int, required=True)
        c.add_argument('--ops', type=int, default=DEFAULT_OPS)
        if name == 'verify':
            c.add_argument('--done', required=True, help='p0:k0,p1:k1,...')
            c.add_argument('--mmap', action='store_true',
                           help='read the files through MAP_SHARED mappings')
    a = ap.parse_args()
    return cmd_run(a) if a.cmd == 'run' else cmd_verify(a)


if __name__ == '__main__':
    sys.exit(main())
