// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzz.c: a seeded fuzzer for morselfs with an exact shadow model.
 *
 *   fuzz_bin [--seed S] [--ops N] [--procs P] [--trace] [--stats] [--lenient]
 *
 * Run inside the VM (tests/fuzz wraps it; $MORSEL_MNT is a mounted
 * morselfs, $MORSEL_PAGING is 4 or 5).  P worker processes (default 4)
 * perform N random operations in total (default 10000) on morsels in a
 * private directory $MORSEL_MNT/fuzz.PID: create (also O_TMPFILE),
 * open/close, truncate over all orders, read/write (pread, write,
 * readv/writev), shared mmap with every combination of rights and flags
 * and of lengths up to the largest extent, private mmap and shared mmap
 * at an offset (page by page) of any window, munmap, mprotect, mremap,
 * madvise (splitting page-by-page mappings),
 * POPULATE/EVICT/BIND/SET_MIN_ORDER ioctls, fallocate (populate and
 * punch), rename, link/linkat, unlink, fork with a child working on the
 * same morsel (stopped, or killed with SIGKILL), and fd passing with
 * SCM_RIGHTS both to a child and between workers; arguments are random or
 * on the boundaries (0, size-1, size, extent, extent+1, unaligned, huge,
 * negative).  Every byte read (through a mapping or read(2)), every
 * return value and errno, and MORSEL_IOC_STAT (order, minimum order,
 * pages, the page tables of every level, mappings) / MORSEL_IOC_MAPPINGS
 * are checked against the model.
 * At the end every file is removed and /sys/fs/morselfs/{pages,tables,
 * morsels} must be back to their values before the run.  The last line is
 * "fuzz: N ops, seed S, M mismatches"; the exit status is 0 only when M is
 * 0 and nothing was left behind.
 *
 * The oracle and why it stays exact although processes run concurrently:
 *
 * - Slots.  There are 4 slots per worker.  A slot is a morsel-to-be with
 *   its own names ("s<slot>.<generation>") and its model, which lives in
 *   a MAP_SHARED anonymous region: size, order and minimum order, bound
 *   address, names (a hard link makes two), the contents of every page
 *   that holds a non-zero byte (a small sparse table, at most MODEL_PAGES
 *   pages; writes are kept to a few pages), the exact set of populated
 *   pages (sorted runs), compared with the page count of MORSEL_IOC_STAT,
 *   and the exact set of page tables (level and index), compared with its
 *   table counts.  Each worker keeps its own fds and mappings (address,
 *   length, rights, madvise flags; mounted: the VMA's order; page by
 *   page: the file offset, and for a private one the pages it has its own
 *   copy of) privately.
 * - Orders (size.c).  The order is max(the size's order, the minimum
 *   order, the orders of the shared mappings when they were made): it
 *   rises with write, fallocate, ftruncate, SET_MIN_ORDER and a shared
 *   mmap longer than the extent, also while mapped (EBUSY only for a
 *   binding the new extent does not fit), adding tables above the old
 *   root; it falls only at a size change (or the undoing of a failed
 *   write) while no shared mapping exists, never below the minimum (an
 *   ftruncate that grows the file lowers it too, as morsel_resize does;
 *   docs/interface.md says only a shrink does: m_fit follows the code).  A
 *   shared mapping keeps the extent it was made with and sees the first
 *   extent bytes of the file; shrinking while mapped frees the pages past
 *   the size and keeps the order and the tables.
 * - Page-by-page mappings (file.c): MAP_PRIVATE ones, and MAP_SHARED ones
 *   at an offset other than 0 (those are the file's pages themselves).  A
 *   private one sees the file's page until the process writes it; then
 *   the page is the process's own copy (struct copy, at most MAX_COPIES).
 *   Eviction leaves copies, truncation takes those past the size; any
 *   first touch of a file page populates it.  They are not counted in
 *   STAT or listed by MAPPINGS, hold no order, and split like any mapping.
 * - Ownership.  A slot is owned by exactly one worker at a time and only
 *   the owner acts on the morsel or touches its model, so the workers run
 *   fully concurrently (same directory, same counters, their own files) and
 *   each model stays exact.
 * - Hand-off (fd passing between workers).  Every HANDOFF_EVERY-th op of
 *   every worker is a hand-off: worker i unmaps one of its slots, sends an
 *   fd of it (morsel_send_fd, SCM_RIGHTS) and the slot number to worker
 *   i+1 (mod P), closes its fds, then receives a slot from worker i-1.
 *   The socket orders the model: the receiver reads it only after the
 *   sender wrote it.  Every worker runs the same number of ops before
 *   each hand-off, so they pair up; sending first never deadlocks.
 * - Children (fork, kill -9, fd passing to a child, mappings in two
 *   processes).  A child op forks the worker; the child works only on a
 *   window W (<= 16 pages inside the file size) of one target slot, using
 *   a plan the parent fixed before the fork: mode A writes a list of
 *   writes into W and verifies W; mode B only does content-preserving
 *   things (verify, rewrite the same bytes, populate) while the parent
 *   concurrently evicts zero pages and rewrites bytes of W.  The child may
 *   receive its fd over a socket and map the morsel a second time.  For
 *   its next K ops the parent acts on the target slot only in ways that
 *   keep W's contents known (nothing that changes the size, the order or
 *   the binding, no writes into W in mode A), and skips checks that depend
 *   on whether the child has mapped yet.  Then it stops the child or kills
 *   it with SIGKILL, re-applies the writes of the list (so W is exact
 *   however far a killed child got), and populates W (so the set of
 *   populated pages is exact again).  Shared mappings the child inherited
 *   count as mappings of their slots (they hold the order, keep tables
 *   and page 0) until it is reaped; the child uses those that reach W.
 * - Mappings are accessed page by page under a SIGBUS/SIGSEGV handler
 *   (sigsetjmp/siglongjmp, SA_NODEFER): an expected fault is checked, an
 *   unexpected one is reported and the worker goes on.  After a mismatch
 *   the model follows what actually happened where that is known, so one
 *   bug is not reported over and over.
 * - Replay.  Each worker draws from its own PRNG seeded from (S, index);
 *   every decision depends only on the PRNG and the model, so the same
 *   seed, ops and procs repeat the same operations (timing only changes
 *   how far a killed child got, which the model does not depend on).
 *   --trace prints every operation, --stats how often each checked call
 *   gave each result.
 * - Memory stays bounded: writes cover at most 3 pages, populate, fallocate
 *   and MADV_POPULATE at most 4 MiB, and a slot with too many populated
 *   pages, runs, tables or populating events is reset (unmapped, truncated
 *   to 0 and back) by its owner.  Eviction of any length is cheap for the
 *   model (it visits only its own pages, runs and tables).  MAP_FIXED is
 *   used only inside the fuzzer's own address regions (a longer extent at
 *   a bound address could reach the program's stack).
 *
 * Expectations follow the module's rules (module/size.c, file.c, mount.c;
 * docs/interface.md and docs/errors.md where they are current), plus the
 * errnos the VFS and mm give (fs/open.c, fs/namei.c, mm/mmap.c, mm/vma.h,
 * mm/mremap.c, mm/madvise.c, mm/gup.c); where several errors apply to one
 * call, any of them is accepted.  Populated pages are modelled as the
 * module does it (a failed write populates its page, then frees what lies
 * past the size), and any page at or past the page-rounded size must give
 * SIGBUS (docs/errors.md F1), except in a page a private mapping has its
 * own copy of.  --lenient accepts two ways the module differed before they
 * were fixed (found by this fuzzer, kept to replay old runs): (1) a
 * populated page past the size that a mapping reaches without a fault
 * (page 0 after a shrink to 0 while an order-0 mapping existed); (2)
 * EINVAL from an mremap that has to move a private mapping at offset 0.
 *
 * Concurrency rules inside one worker: single-threaded; the only other
 * process touching a worker's morsels is its own child, as described.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)
#define PG 4096ULL
#define PALIGN(x) (((x) + PG - 1) & ~(PG - 1))
#define PDOWN(x) ((x) & ~(PG - 1))

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#endif

#define MAXP		16	/* workers */
#define NFILES		4	/* slots per worker */
#define MAXSLOTS	(MAXP * NFILES)
#define MODEL_PAGES	48	/* non-zero pages the model holds per slot */
#define MODEL_RUNS	512	/* populated runs per slot */
#define MODEL_TABLES	2048	/* page tables per slot */
#define MAX_FDS		4	/* fds per slot per worker */
#define MAX_MAPS	10	/* mappings per worker (splits may add two) */
#define MAPS_ROOM	(MAX_MAPS + 4)
#define MAX_COPIES	24	/* private copies (COW pages) per worker */
#define PRIV_MAX	(64 * PG)	/* longest private mapping */
#define WMAX		16	/* pages in a child's window */
#define LMAX		4	/* writes of a mode-A child */
#define HANDOFF_EVERY	97
#define TRACE		24
#define MAX_PRINTED	20	/* detailed mismatch reports per process */
#define CAP_POP		(4 * MiB)
#define RESET_RUNS	300
#define RESET_PAGES	2048
#define RESET_CHURN	400
#define RESET_TABLES	1024
#define NOPAGE		UINT64_MAX

/* Address regions only the fuzzer uses (below 47 bits unless order 4). */
#define BIND_BASE	(1 * TiB)	/* slot s: BIND_BASE + s * 512 GiB */
#define BIND4_BASE	(64ULL << 48)	/* order 4: (64 + s) << 48 */
#define HINT_BASE	(64 * TiB)
#define HINT4_BASE	(1ULL << 53)

/* ---- the model (shared) ---- */

struct run {
	uint64_t a, b;		/* pages [a, b) */
};

struct mpage {
	uint64_t idx;		/* page index, NOPAGE when free */
	uint8_t data[PG];
};

struct table {
	int level;		/* 1: PTE table ... 4: P4D table */
	uint64_t idx;		/* covers [idx, idx + 1) * ext(level) */
};

struct slot {
	int live;		/* a morsel exists for this slot */
	int named;		/* names: 0, 1 (name) or 2 (name, name2) */
	int gen;		/* for fresh names */
	char name[40];
	char name2[40];		/* a hard link */
	int linkable;		/* O_TMPFILE without O_EXCL, never linked */
	uint64_t size;
	uint64_t bound;
	int order;		/* the morsel's order (not a function of size) */
	int min_order;		/* MORSEL_IOC_SET_MIN_ORDER */
	uint64_t churn;		/* populating events since the last reset */
	int nruns;
	struct run runs[MODEL_RUNS];
	int ntables;
	int tables_bad;		/* after a mismatch: unknown until a reset */
	struct table tables[MODEL_TABLES];
	struct mpage pages[MODEL_PAGES];
};

#define TALLY 128

struct wstat {
	uint64_t ops;
	uint64_t mismatches;
	int stop;		/* parent -> child: stop now */
	int pad;
	struct {		/* outcomes per call, written by this worker only */
		char what[28];
		int err;
		uint64_t n;
	} tally[TALLY];
};

struct shared {
	struct wstat w[MAXP];
	struct slot slots[MAXSLOTS];
};

/* ---- per-process state ---- */

struct fdent {
	int fd;
	int mode;		/* O_RDONLY, O_WRONLY or O_RDWR */
};

struct mapent {
	int slot;
	uint64_t addr, len;
	int prot;
	int dontfork;
	int huge;		/* 0, 1: MADV_HUGEPAGE, 2: MADV_NOHUGEPAGE */
	int paged;		/* page by page: private, or shared at an offset */
	int priv;		/* MAP_PRIVATE (paged, with copies) */
	int maywrite;		/* paged shared: the fd could write */
	int vorder;		/* mounted: the VMA's order; len is its extent */
	uint64_t off;		/* file offset of addr (mounted: 0) */
};

/* Kinds of mapping (add_map): mounted, private, shared page by page. */
enum { MK_MOUNTED, MK_PRIVATE, MK_PAGED };

static const char *mkind(const struct mapent *m)
{
	return m->priv ? "private" : m->paged ? "paged shared" : "shared";
}

/* A page a process wrote through a private mapping: its own copy. */
struct copy {
	uint64_t va;		/* page address, NOPAGE when free */
	uint8_t data[PG];
};

struct lwrite {
	uint64_t off, len, pat;
	int how;		/* -1: pwrite; else index into the child's maps */
	int effective;
};

struct child {
	pid_t pid;
	int slot, mode, kill, left;
	uint64_t w0, wlen;		/* window: bytes [w0, w0 + wlen) */
	uint64_t fend;			/* min(w0 + wlen, size): for file I/O */
	int nl;
	struct lwrite l[LMAX];
	int fdi;			/* parent's RW fd index (inherited) */
	int pass, pass_mode, sock;	/* fd passed over a socket */
	int newmap, newprot, newexp;	/* child maps again: expectation */
	int priv, pprot;		/* child maps W privately too */
	uint64_t paddr;			/* there (set in the child) */
	int nmaps;			/* child's mappings: inherited + new */
	struct mapent maps[MAPS_ROOM + 1];
	int holds[MAXSLOTS];		/* inherited shared mappings per slot */
	int holds0[MAXSLOTS];		/* of them, those of order 0 */
	uint64_t rng;
	uint64_t mism0;			/* mismatches before the fork */
	uint8_t snap[WMAX * PG];	/* W as it must read */
};

struct worker {
	int id;
	uint64_t rng;
	uint64_t op, nops;
	int owned[NFILES];
	struct fdent fds[MAXSLOTS][MAX_FDS];
	int nfds[MAXSLOTS];
	struct mapent maps[MAPS_ROOM];
	int nmaps;
	struct copy copies[MAX_COPIES];
	struct child ch;
	int in_child;
	int send_sock, recv_sock, ring_ok;
	char trace[TRACE][200];
	int tpos;
	int printed;
};

static struct shared *sh;
static struct worker W;
static int nprocs = 4, l5, max_order, trace_on, lenient, stats;
static uint64_t seed, max_bytes, task_max;
static char dir[256];
static char *badbuf;		/* a PROT_NONE page: a bad user buffer */
static uint8_t iobuf[WMAX * PG + PG], expbuf[WMAX * PG + PG];

/* ---- PRNG ---- */

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(void)
{
	W.rng += 0x9e3779b97f4a7c15ULL;
	return mix(W.rng);
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static int one_in(uint64_t n)
{
	return below(n) == 0;
}

/* Deterministic non-trivial bytes for a write. */
static void pattern(uint8_t *buf, uint64_t len, uint64_t pat)
{
	uint64_t i, x = 0;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = mix(pat + i) | 0x0101010101010101ULL;
		buf[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* ---- reporting ---- */

static void note(const char *fmt, ...)
{
	va_list ap;
	char *t = W.trace[W.tpos++ % TRACE];
	int n;

	n = snprintf(t, sizeof(W.trace[0]), "%s#%" PRIu64 " ",
		     W.in_child ? "child " : "", W.op);
	va_start(ap, fmt);
	vsnprintf(t + n, sizeof(W.trace[0]) - n, fmt, ap);
	va_end(ap);
	if (trace_on)
		printf("w%d %s\n", W.id, t);
}

static void mismatch(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n, i;

	__atomic_add_fetch(&sh->w[W.id].mismatches, 1, __ATOMIC_SEQ_CST);
	if (W.printed++ >= MAX_PRINTED)
		return;
	n = snprintf(buf, sizeof(buf), "fuzz: MISMATCH w%d%s op %" PRIu64 ": ",
		     W.id, W.in_child ? " child" : "", W.op);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	n += snprintf(buf + n, sizeof(buf) - n, "\n  recent ops of w%d%s:\n",
		      W.id, W.in_child ? " (child)" : "");
	for (i = W.tpos > TRACE ? W.tpos - TRACE : 0; i < W.tpos &&
	     n < (int)sizeof(buf) - 220; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "    %s\n",
			      W.trace[i % TRACE]);
	fflush(stdout);
	if (write(1, buf, n) < 0)
		_exit(3);
}

static void fatal(const char *what)
{
	fprintf(stderr, "fuzz: w%d: %s: %s\n", W.id, what, strerror(errno));
	_exit(2);
}

static const char *ename(int e)
{
	static char buf[4][16];
	static int i;

	switch (e) {
	case 0: return "ok";
	case EINVAL: return "EINVAL";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case EFBIG: return "EFBIG";
	case EBADF: return "EBADF";
	case EFAULT: return "EFAULT";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	case ENOSPC: return "ENOSPC";
	case ENOTTY: return "ENOTTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	}
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "errno%d", e);
	return buf[i];
}

/*
 * The call returned @ret (-1 with errno set on failure); @want is the
 * errno expected (0: success), @want2 another acceptable one (or 0).
 * errno is read here, after the arguments (the call among them) were
 * evaluated.  Returns 1 if the call succeeded.
 */
static void tally(const char *what, int err)
{
	struct wstat *ws = &sh->w[W.id];
	int i;

	if (W.in_child)
		return;
	for (i = 0; i < TALLY && ws->tally[i].what[0]; i++)
		if (ws->tally[i].err == err &&
		    !strncmp(ws->tally[i].what, what, sizeof(ws->tally[i].what) - 1))
			break;
	if (i == TALLY)
		return;
	if (!ws->tally[i].what[0]) {
		snprintf(ws->tally[i].what, sizeof(ws->tally[i].what), "%s", what);
		ws->tally[i].err = err;
	}
	ws->tally[i].n++;
}

static int check(const char *what, long ret, int want, int want2)
{
	int got = ret == -1 ? errno : 0;

	tally(what, got);
	if (got != want && !(want2 && got == want2))
		mismatch("%s: got %s, want %s%s%s", what, ename(got),
			 ename(want), want2 ? " or " : "",
			 want2 ? ename(want2) : "");
	return got == 0;
}

/* ---- helpers: sizes and the model ---- */

static uint64_t ext(int order)
{
	return PG << (9 * order);
}

static int order_of(uint64_t size)
{
	int o;

	for (o = 0; o <= 4; o++)
		if (size <= ext(o))
			return o;
	return 5;
}

static struct slot *S(int s)
{
	return &sh->slots[s];
}

/* The order a size asks for: at least the minimum (size.c wanted_order). */
static int wanted(struct slot *sl, uint64_t size)
{
	int o = order_of(size);

	return o > sl->min_order ? o : sl->min_order;
}

static int bound_ok(uint64_t bound, int order)
{
	return !bound || (bound % ext(order) == 0 &&
			  bound + ext(order) <= task_max);
}

static struct mpage *mp_find(struct slot *sl, uint64_t idx)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx == idx)
			return &sl->pages[i];
	return NULL;
}

static int mp_count(struct slot *sl)
{
	int i, n = 0;

	for (i = 0; i < MODEL_PAGES; i++)
		n += sl->pages[i].idx != NOPAGE;
	return n;
}

/* Pages of [off, off + len) the model would have to add. */
static int mp_need(struct slot *sl, uint64_t off, uint64_t len)
{
	uint64_t p;
	int n = 0;

	if (!len)
		return 0;
	for (p = off / PG; p <= (off + len - 1) / PG; p++)
		n += !mp_find(sl, p);
	return n;
}

static int mp_room(struct slot *sl, uint64_t off, uint64_t len)
{
	return mp_count(sl) + mp_need(sl, off, len) <= MODEL_PAGES;
}

static int all_zero(const uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static void m_read(struct slot *sl, uint64_t off, uint64_t len, uint8_t *out)
{
	while (len) {
		uint64_t n = PG - off % PG;
		struct mpage *p = mp_find(sl, off / PG);

		if (n > len)
			n = len;
		if (p)
			memcpy(out, p->data + off % PG, n);
		else
			memset(out, 0, n);
		out += n;
		off += n;
		len -= n;
	}
}

/* Never moves an entry: a child may read the table concurrently. */
static void m_write(struct slot *sl, uint64_t off, const uint8_t *buf,
		    uint64_t len)
{
	while (len) {
		uint64_t n = PG - off % PG;
		struct mpage *p = mp_find(sl, off / PG);

		if (n > len)
			n = len;
		if (!p && !all_zero(buf, n)) {
			p = mp_find(sl, NOPAGE);
			if (!p) {
				mismatch("internal: model page table full");
				return;
			}
			memset(p->data, 0, PG);
			p->idx = off / PG;
		}
		if (p) {
			memcpy(p->data + off % PG, buf, n);
			if (all_zero(p->data, PG))
				p->idx = NOPAGE;
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* Zero [off, off + len): visits the model's pages, so any length is cheap. */
static void m_zero(struct slot *sl, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	int i;

	for (i = 0; len && i < MODEL_PAGES; i++) {
		struct mpage *p = &sl->pages[i];
		uint64_t a = p->idx * PG, lo, hi;

		if (p->idx == NOPAGE || a >= end || a + PG <= off)
			continue;
		lo = a > off ? a : off;
		hi = a + PG < end ? a + PG : end;
		memset(p->data + (lo - a), 0, hi - lo);
		if (all_zero(p->data, PG))
			p->idx = NOPAGE;
	}
}

static void m_drop_from(struct slot *sl, uint64_t idx)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx != NOPAGE && sl->pages[i].idx >= idx)
			sl->pages[i].idx = NOPAGE;
}

static int runs_find(struct slot *sl, uint64_t idx)
{
	int lo = 0, hi = sl->nruns;

	/* first run with b > idx */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (sl->runs[mid].b > idx)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int runs_has(struct slot *sl, uint64_t idx)
{
	int i = runs_find(sl, idx);

	return i < sl->nruns && sl->runs[i].a <= idx;
}

static uint64_t runs_count(struct slot *sl)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < sl->nruns; i++)
		n += sl->runs[i].b - sl->runs[i].a;
	return n;
}

static void runs_del(struct slot *sl, uint64_t a, uint64_t b)
{
	int i = runs_find(sl, a);

	while (i < sl->nruns && sl->runs[i].a < b) {
		struct run *r = &sl->runs[i];

		if (r->a < a && r->b > b) {	/* split */
			if (sl->nruns == MODEL_RUNS) {
				mismatch("internal: run table full");
				return;
			}
			memmove(r + 1, r, (sl->nruns - i) * sizeof(*r));
			sl->nruns++;
			r->b = a;
			r[1].a = b;
			return;
		}
		if (r->a < a) {
			r->b = a;
			i++;
		} else if (r->b > b) {
			r->a = b;
			return;
		} else {
			memmove(r, r + 1, (sl->nruns - i - 1) * sizeof(*r));
			sl->nruns--;
		}
	}
}

/* ---- the page tables (tree.c): which exist, exactly ---- */

static int tab_find(struct slot *sl, int level, uint64_t idx)
{
	int i;

	for (i = 0; i < sl->ntables; i++)
		if (sl->tables[i].level == level && sl->tables[i].idx == idx)
			return i;
	return -1;
}

static void tab_add(struct slot *sl, int level, uint64_t idx)
{
	if (tab_find(sl, level, idx) >= 0)
		return;
	if (sl->ntables == MODEL_TABLES) {
		mismatch("internal: table model full");
		sl->tables_bad = 1;
		return;
	}
	sl->tables[sl->ntables].level = level;
	sl->tables[sl->ntables].idx = idx;
	sl->ntables++;
}

static void tab_del(struct slot *sl, int i)
{
	sl->tables[i] = sl->tables[--sl->ntables];
}

static uint64_t tab_count(struct slot *sl, int level)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < sl->ntables; i++)
		n += sl->tables[i].level == level;
	return n;
}

/* A walk populated pages [a, b): every table above them exists now. */
static void tabs_walk(struct slot *sl, uint64_t a, uint64_t b)
{
	int l;
	uint64_t i;

	for (l = 1; l <= sl->order; l++)
		for (i = a * PG / ext(l); i <= ((b - 1) * PG) / ext(l); i++)
			tab_add(sl, l, i);
}

/* free_level: a table goes when the range covers all it spans. */
static void tabs_free(struct slot *sl, uint64_t start, uint64_t end)
{
	int i;

	for (i = 0; i < sl->ntables; i++) {
		uint64_t e = ext(sl->tables[i].level), a = sl->tables[i].idx * e;

		if (a >= start && a + e <= end)
			tab_del(sl, i--);
	}
}

static void runs_add(struct slot *sl, uint64_t a, uint64_t b)
{
	int i, j;

	if (a >= b)
		return;
	tabs_walk(sl, a, b);
	/* first run that ends at or after a (may touch) */
	i = runs_find(sl, a ? a - 1 : 0);
	if (i < sl->nruns && sl->runs[i].b < a)
		i++;
	j = i;
	while (j < sl->nruns && sl->runs[j].a <= b) {
		if (sl->runs[j].a < a)
			a = sl->runs[j].a;
		if (sl->runs[j].b > b)
			b = sl->runs[j].b;
		j++;
	}
	if (j == i) {
		if (sl->nruns == MODEL_RUNS) {
			mismatch("internal: run table full");
			return;
		}
		memmove(&sl->runs[i + 1], &sl->runs[i],
			(sl->nruns - i) * sizeof(struct run));
		sl->nruns++;
	} else if (j > i + 1) {
		memmove(&sl->runs[i + 1], &sl->runs[j],
			(sl->nruns - j) * sizeof(struct run));
		sl->nruns -= j - i - 1;
	}
	sl->runs[i].a = a;
	sl->runs[i].b = b;
}

static void m_clear(struct slot *sl)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		sl->pages[i].idx = NOPAGE;
	sl->nruns = 0;
	sl->churn = 0;
	sl->ntables = 0;
	sl->tables_bad = 0;
}

/* A new morsel of @size bytes: the order its size wants, no minimum. */
static void m_new(struct slot *sl, uint64_t size)
{
	sl->size = size;
	sl->bound = 0;
	sl->min_order = 0;
	sl->order = order_of(size);
	m_clear(sl);
	if (sl->order)		/* raising an empty morsel: its root table */
		tab_add(sl, sl->order, 0);
}

/*
 * Raise the order (tree.c raise_order): a populated root becomes entry 0
 * of a chain of new tables; an empty one is replaced by one new table.
 */
static void m_raise(struct slot *sl, int order)
{
	int l;

	if (order <= sl->order)
		return;
	if (sl->order ? tab_find(sl, sl->order, 0) >= 0 : runs_has(sl, 0)) {
		for (l = sl->order + 1; l <= order; l++)
			tab_add(sl, l, 0);
	} else {
		tab_add(sl, order, 0);
	}
	sl->order = order;
}

/*
 * Lower the order (morsel_set_order): everything past the new extent goes,
 * then the tables above the new root.
 */
static void m_lower(struct slot *sl, int order)
{
	int l, i;

	m_drop_from(sl, ext(order) / PG);
	runs_del(sl, ext(order) / PG, UINT64_MAX);
	tabs_free(sl, ext(order), UINT64_MAX);
	for (l = sl->order; l > order; l--)
		if ((i = tab_find(sl, l, 0)) >= 0)
			tab_del(sl, i);
	sl->order = order;
}

/* ---- per-worker fds and mappings ---- */

/* Own mappings of @s: @kind 0 all, 1 mounted, 2 paged, 3 mounted of order 0. */
static int own_maps_kind(int s, int kind)
{
	int i, n = 0;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (m->slot != s || (kind == 1 && m->paged) ||
		    (kind == 2 && !m->paged) ||
		    (kind == 3 && (m->paged || m->vorder)))
			continue;
		n++;
	}
	return n;
}

static int own_maps(int s)
{
	return own_maps_kind(s, 0);
}

static int child_alive(void)
{
	return W.ch.pid > 0;
}

/*
 * Does the morsel have a shared mapping anywhere (nr_maps > 0)?  Private
 * mappings are not counted: they hold neither the order nor the tables.
 */
static int mapped(int s)
{
	return own_maps_kind(s, 1) + (child_alive() ? W.ch.holds[s] : 0) > 0;
}

static int is_target(int s)
{
	return child_alive() && W.ch.slot == s;
}

static const char *path(const char *name)
{
	static char buf[4][320];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void fresh_name(int s, char *out, size_t len)
{
	snprintf(out, len, "s%d.%d", s, ++S(s)->gen);
}

static int fd_w(int mode)
{
	return mode != O_RDONLY;
}

static int fd_r(int mode)
{
	return mode != O_WRONLY;
}

static const char *mname(int mode)
{
	return mode == O_RDONLY ? "ro" : mode == O_WRONLY ? "wo" : "rw";
}

static void add_fd(int s, int fd, int mode)
{
	if (W.nfds[s] == MAX_FDS) {
		close(W.fds[s][0].fd);
		W.fds[s][0] = W.fds[s][--W.nfds[s]];
	}
	W.fds[s][W.nfds[s]].fd = fd;
	W.fds[s][W.nfds[s]].mode = mode;
	W.nfds[s]++;
}

/* Index of a random fd of @s; @need: 0 any, 1 writable, 2 readable, 3 rw. */
static int pick_fd(int s, int need)
{
	int i, c[MAX_FDS], n = 0;

	for (i = 0; i < W.nfds[s]; i++) {
		int m = W.fds[s][i].mode;

		if (need == 0 || (need == 1 && fd_w(m)) ||
		    (need == 2 && fd_r(m)) || (need == 3 && m == O_RDWR))
			c[n++] = i;
	}
	return n ? c[below(n)] : -1;
}

/* An fd index with @need, opening the file by name if there is none. */
static int get_fd(int s, int need)
{
	int i = pick_fd(s, need), fd;

	if (i >= 0 || !S(s)->named)
		return i;
	note("open(%s, rw) for a helper fd", S(s)->name);
	fd = open(path(S(s)->name), O_RDWR | O_CLOEXEC);
	if (!check("open(rw)", fd, 0, 0))
		return -1;
	add_fd(s, fd, O_RDWR);
	return W.nfds[s] - 1;
}

/* The morsel is gone when nothing names, opens or maps it. */
static void check_dead(int s)
{
	struct slot *sl = S(s);

	if (sl->live && !sl->named && !W.nfds[s] && !own_maps(s)) {
		/* a child's inherited mappings keep the old morsel, not the slot */
		W.ch.holds[s] = 0;
		W.ch.holds0[s] = 0;
		sl->live = 0;
		m_new(sl, 0);
	}
}

/* ---- private copies ---- */

static struct copy *cp_find(uint64_t va)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va == va)
			return &W.copies[i];
	return NULL;
}

static int cp_count(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_COPIES; i++)
		n += W.copies[i].va != NOPAGE;
	return n;
}

/* Forget the copies of the pages in [a, a + len). */
static void cp_drop(uint64_t a, uint64_t len)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va != NOPAGE && W.copies[i].va >= a &&
		    W.copies[i].va < a + len)
			W.copies[i].va = NOPAGE;
}

/* The copies of [a, a + len) move to @to (mremap). */
static void cp_move(uint64_t a, uint64_t len, uint64_t to)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va != NOPAGE && W.copies[i].va >= a &&
		    W.copies[i].va < a + len)
			W.copies[i].va = W.copies[i].va - a + to;
}

/* Truncation takes the copies of file pages from @fo on, too. */
static void cp_drop_past(int s, uint64_t fo)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (m->slot != s || !m->priv || m->off + m->len <= fo)
			continue;
		if (m->off >= fo)
			cp_drop(m->addr, m->len);
		else
			cp_drop(m->addr + (fo - m->off), m->len - (fo - m->off));
	}
}

/* Pages of [rel, rel + len) of private @m that a store would copy now. */
static int cp_need(struct mapent *m, uint64_t rel, uint64_t len)
{
	uint64_t va;
	int n = 0;

	if (!len)
		return 0;
	for (va = PDOWN(m->addr + rel); va < m->addr + rel + len; va += PG)
		n += !cp_find(va);
	return n;
}

static void drop_map(int i)
{
	if (W.maps[i].priv)
		cp_drop(W.maps[i].addr, W.maps[i].len);
	W.maps[i] = W.maps[--W.nmaps];
}

/*
 * [a, a + len) was unmapped (munmap, MAP_FIXED): shared mappings inside
 * it are gone, private ones lose that part (maybe split in two).
 */
static void unmap_model(uint64_t a, uint64_t len)
{
	int i, dead[MAPS_ROOM], nd = 0;
	uint64_t end = a + len;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];
		uint64_t mend = m->addr + m->len;

		if (mend <= a || m->addr >= end)
			continue;
		dead[nd++] = m->slot;
		if (!m->paged || (m->addr >= a && mend <= end)) {
			drop_map(i--);
			continue;
		}
		cp_drop(a, len);
		if (m->addr < a && mend > end) {	/* split */
			if (W.nmaps == MAPS_ROOM) {
				mismatch("internal: mapping table full");
				return;
			}
			W.maps[W.nmaps] = *m;
			W.maps[W.nmaps].addr = end;
			W.maps[W.nmaps].len = mend - end;
			W.maps[W.nmaps].off = m->off + (end - m->addr);
			W.nmaps++;
			m->len = a - m->addr;
		} else if (m->addr < a) {
			m->len = a - m->addr;
		} else {
			m->off += end - m->addr;
			m->len = mend - end;
			m->addr = end;
		}
	}
	for (i = 0; i < nd; i++)
		check_dead(dead[i]);
}

/*
 * Pages [first, last) (page aligned) leave the tree, as tree.c does it:
 * freed (order-0 mappings, whose mount entry copies page 0, are unmounted
 * and refault).
 */
static void m_free_pages(int s, uint64_t first, uint64_t last)
{
	struct slot *sl = S(s);

	if (first >= last)
		return;
	m_zero(sl, first, last - first);
	runs_del(sl, first / PG, last / PG);
	if (!mapped(s))		/* morsel_free_range; mapped: tables stay */
		tabs_free(sl, first, last);
}

/* The order falls to what the size wants if no shared mapping holds it. */
static void m_fit(int s)
{
	struct slot *sl = S(s);
	int w = wanted(sl, sl->size);

	if (w < sl->order && !mapped(s))
		m_lower(sl, w);
}

/* A successful truncate to @size, as size.c morsel_resize does it. */
static void m_resize(int s, uint64_t size)
{
	struct slot *sl = S(s);
	int w = wanted(sl, size);

	if (size == sl->size)
		return;			/* setattr skips it */
	m_raise(sl, w);
	if (size < sl->size) {
		m_zero(sl, size, PALIGN(size) - size);
		m_free_pages(s, PALIGN(size), UINT64_MAX & ~(PG - 1));
		cp_drop_past(s, PALIGN(size));
	}
	sl->size = size;
	m_fit(s);
}

/* Does any own mapping (optionally only those without dontfork) intersect? */
static int occupied(uint64_t a, uint64_t len, int forked)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (forked && m->dontfork)
			continue;
		if (m->addr < a + len && a < m->addr + m->len)
			return 1;
	}
	return 0;
}

/*
 * A shared mapping intersecting [a, a+len) that it does not contain (a
 * split, refused)?  Private mappings split like any.
 */
static int partial_overlap(uint64_t a, uint64_t len)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (!m->paged && m->addr < a + len && a < m->addr + m->len &&
		    (m->addr < a || m->addr + m->len > a + len))
			return 1;
	}
	return 0;
}

/* A hint / MAP_FIXED / mremap target in the fuzzer's own region. */
static uint64_t pick_addr(int order)
{
	if (order == 4)
		return HINT4_BASE + below(8) * ext(4);
	if (order == 3)
		return HINT_BASE + below(12) * ext(3);
	return HINT_BASE + below(8) * ext(3) + below(4) * ext(order);
}

/*
 * May MAP_FIXED replace [a, a + len)?  Only inside the fuzzer's own
 * regions: a longer extent at a bound address can reach the program's
 * own memory (its stack), which a MAP_FIXED that fails in ->mmap would
 * leave unmapped.
 */
static int fixed_ok(uint64_t a, uint64_t len)
{
	return (a >= BIND_BASE && a + len > a &&
		a + len <= HINT_BASE + 16 * ext(3)) ||
	       (a >= HINT4_BASE && a + len > a && a + len <= task_max);
}

/*
 * Is [a, a + len) free in this process, the fuzzer's own mappings and the
 * program's alike?  (A long extent at a bound address may reach the
 * program's stack or libraries: mmap gives EEXIST then.)  Probed with a
 * MAP_FIXED_NOREPLACE reservation that is removed again.
 */
static int range_free(uint64_t a, uint64_t len)
{
	void *p;

	if (!len || a + len < a || a + len > task_max)
		return 0;
	p = mmap((void *)(uintptr_t)a, len, PROT_NONE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	if ((uintptr_t)p != a) {	/* a kernel without NOREPLACE */
		munmap(p, len);
		return 0;
	}
	munmap(p, len);
	return 1;
}

/*
 * Does a free hint get used (x86 mmap_address_hint_valid: inside the
 * address space, and not across the 47-bit default window)?
 */
static int hint_used(uint64_t a, uint64_t len)
{
	uint64_t window = (1ULL << 47) - PG;

	return (a > window) == (a + len > window) && range_free(a, len);
}

static uint64_t bind_base(int s, int order)
{
	return order == 4 ? BIND4_BASE + ((uint64_t)s << 48) :
			    BIND_BASE + (uint64_t)s * ext(3);
}

/* ---- guarded access through mappings ---- */

static sigjmp_buf guard_env;
static volatile sig_atomic_t guard_on;
static volatile int guard_sig;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[128];
	int n;

	(void)uc;
	if (guard_on) {
		guard_on = 0;
		guard_sig = sig;
		siglongjmp(guard_env, 1);
	}
	n = snprintf(msg, sizeof(msg), "fuzz: w%d: unexpected signal %d at %p\n",
		     W.id, sig, si->si_addr);
	if (write(2, msg, n) < 0)
		_exit(4);
	_exit(4);
}

/* memcpy under the guard; returns 0 or the signal. */
static int gcopy(void *dst, const void *src, size_t n)
{
	if (sigsetjmp(guard_env, 0))
		return guard_sig;
	guard_on = 1;
	memcpy(dst, src, n);
	guard_on = 0;
	return 0;
}

static int gcall(void *fn, int *ret)
{
	if (sigsetjmp(guard_env, 0))
		return guard_sig;
	guard_on = 1;
	*ret = ((int (*)(void))fn)();
	guard_on = 0;
	return 0;
}

static const char *sname(int sig)
{
	return sig == 0 ? "no signal" : sig == SIGBUS ? "SIGBUS" :
	       sig == SIGSEGV ? "SIGSEGV" : "another signal";
}

/*
 * Expected signal for touching offset @rel of mapping @m (0: works).
 * ANY_SIG: --lenient and a page populated past the size: it works if this
 * mapping has mounted the morsel since the page appeared, else SIGBUS.
 * A private mapping reads its own copy of a page it wrote (truncation
 * removes copies past the size, so they never raise SIGBUS); PROT_EXEC
 * alone reads (no protection keys), PROT_NONE does not.
 */
#define ANY_SIG (-1)

static int expect_access(struct mapent *m, uint64_t rel, int write)
{
	struct slot *sl = S(m->slot);
	uint64_t fo = m->off + rel;

	if (write ? !(m->prot & PROT_WRITE) : m->prot == PROT_NONE)
		return SIGSEGV;
	if (m->priv && cp_find(PDOWN(m->addr + rel)))
		return 0;
	if (fo >= PALIGN(sl->size)) {
		if (lenient && !m->paged && runs_has(sl, fo / PG))
			return ANY_SIG;
		return SIGBUS;
	}
	return 0;
}

static void cmp_map(const char *what, struct mapent *m, uint64_t rel,
		    const uint8_t *want, uint64_t n, const char *whose)
{
	uint64_t i = 0;

	if (!memcmp(iobuf, want, n))
		return;
	while (iobuf[i] == want[i])
		i++;
	mismatch("%s: byte at offset %#" PRIx64 " (file offset %#" PRIx64
		 ") of slot %d through %s map %#" PRIx64 " (%s): got %#x, want %#x",
		 what, rel + i, m->off + rel + i, m->slot, mkind(m), m->addr,
		 whose, iobuf[i],
		 want[i]);
}

/*
 * Read or write [rel, rel + len) of mapping @m page by page, checking
 * every byte read and every fault; @data is what to write.  Through a
 * private mapping the first touch of a page populates the file's page
 * (morsel_private_fault) and a store makes it the process's own copy.
 */
static void x_access(struct mapent *m, uint64_t rel, uint64_t len, int write,
		     const uint8_t *data, const char *what)
{
	struct slot *sl = S(m->slot);

	while (len) {
		uint64_t n = PG - rel % PG, fo = m->off + rel;
		uint64_t va = PDOWN(m->addr + rel);
		int want, got;
		char *p = (char *)(uintptr_t)(m->addr + rel);
		struct copy *c;

		if (n > len)
			n = len;
		want = expect_access(m, rel, write);
		/* a page that should fault is probed with one byte */
		got = want ? (write ? gcopy(p, data, 1) : gcopy(iobuf, p, 1)) :
		      (write ? gcopy(p, data, n) : gcopy(iobuf, p, n));
		if (want == ANY_SIG) {
			want = got == SIGBUS ? SIGBUS : 0;
			if (!got)	/* the probe worked: now the whole access */
				got = write ? gcopy(p, data, n) : gcopy(iobuf, p, n);
		}
		if (got != want) {
			mismatch("%s: %s at offset %#" PRIx64 " (file offset %#"
				 PRIx64 ") of slot %d (size %#" PRIx64
				 ", populated %d, %s map %#" PRIx64 "+%#" PRIx64
				 " prot %d): got %s, want %s", what,
				 write ? "write" : "read", rel, fo, m->slot,
				 sl->size, runs_has(sl, fo / PG), mkind(m), m->addr,
				 m->len,
				 m->prot, sname(got), sname(want));
			if (want && !got)	/* it works: follow reality */
				got = write ? gcopy(p, data, n) : gcopy(iobuf, p, n);
		}
		if (got) {
			if (!want)
				break;	/* an unexpected fault: stop here */
		} else if (m->priv && (c = cp_find(va))) {
			if (write)
				memcpy(c->data + rel % PG, data, n);
			else
				cmp_map(what, m, rel, c->data + rel % PG, n,
					"its own copy");
		} else if (m->priv) {
			runs_add(sl, fo / PG, fo / PG + 1);
			if (write) {
				c = cp_find(NOPAGE);
				if (!c) {
					mismatch("internal: no room for a copy");
				} else {
					c->va = va;
					m_read(sl, PDOWN(fo), PG, c->data);
					memcpy(c->data + rel % PG, data, n);
				}
			} else {
				m_read(sl, fo, n, expbuf);
				cmp_map(what, m, rel, expbuf, n, "the file");
			}
		} else {
			runs_add(sl, fo / PG, fo / PG + 1);
			if (write) {
				m_write(sl, fo, data, n);
			} else {
				m_read(sl, fo, n, expbuf);
				cmp_map(what, m, rel, expbuf, n, "the file");
			}
		}
		if (write)
			data += n;
		rel += n;
		len -= n;
	}
}

/* ---- checked primitives on files ---- */

static void cmp_bytes(const char *what, int s, uint64_t off,
		      const uint8_t *got, uint64_t len)
{
	m_read(S(s), off, len, expbuf);
	if (memcmp(got, expbuf, len)) {
		uint64_t i = 0;

		while (got[i] == expbuf[i])
			i++;
		mismatch("%s: byte at offset %#" PRIx64 " of slot %d (size %#"
			 PRIx64 "): got %#x, want %#x", what, off + i, s,
			 S(s)->size, got[i], expbuf[i]);
	}
}

/*
 * What eviction of [start, end) (end <= size, or past it for
 * trim_past_size) does, as file.c morsel_evict does it.  Private mappings
 * keep their copies; their other pages fault the file's again.
 */
static void m_evict(int s, uint64_t start, uint64_t end)
{
	struct slot *sl = S(s);
	uint64_t first = PALIGN(start);
	uint64_t last = end == sl->size ? PALIGN(end) : PDOWN(end);

	if (first > last) {
		m_zero(sl, start, end - start);
		return;
	}
	m_zero(sl, start, first - start);
	if (last < end)
		m_zero(sl, last, end - last);
	m_free_pages(s, first, last);
}

/* read(2) family: method 0 pread, 1 lseek+read, 2 preadv (2 iovecs). */
static void x_read(int s, int fdi, int64_t off, uint64_t len, int method,
		   int bad)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	uint8_t *buf = bad ? (uint8_t *)badbuf : iobuf;
	int want = 0;
	uint64_t n = 0;
	ssize_t r;

	note("read slot %d fd %s off %" PRId64 " len %" PRIu64 " method %d%s",
	     s, mname(f->mode), off, len, method, bad ? " badbuf" : "");
	if (off < 0 || (method == 1 && (uint64_t)off > max_bytes))
		method = 0;
	if (off < 0)
		want = EINVAL;		/* ksys_pread64 checks it first */
	else if (!fd_r(f->mode))
		want = EBADF;
	else if ((uint64_t)off + len > (uint64_t)INT64_MAX)
		want = EINVAL;
	else if ((uint64_t)off >= sl->size)
		n = 0;
	else if (bad)
		want = EFAULT;
	else
		n = len < sl->size - off ? len : sl->size - off;
	if (method == 1) {
		if (lseek(f->fd, off, SEEK_SET) != off) {
			mismatch("lseek(%" PRId64 ") failed: %s", off,
				 ename(errno));
			return;
		}
		r = read(f->fd, buf, len);
	} else if (method == 2 && len > 1) {
		struct iovec iov[2] = {
			{ buf, len / 2 }, { buf + len / 2, len - len / 2 } };

		r = preadv(f->fd, iov, 2, off);
	} else {
		r = pread(f->fd, buf, len, off);
	}
	if (!check("read", r, want, 0))
		return;
	if ((uint64_t)r != n) {
		mismatch("read slot %d off %" PRId64 " len %" PRIu64
			 ": returned %zd, want %" PRIu64, s, off, len, r, n);
		return;
	}
	cmp_bytes("read", s, off, buf, n);
}

/*
 * write(2) family: method 0 pwrite, 1 lseek+write, 2 pwritev.  @data is
 * the bytes (NULL: the bad buffer).
 */
static void x_write(int s, int fdi, int64_t off, uint64_t len, int method,
		    const uint8_t *data)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	int want = 0, want2 = 0, order = sl->order, need = order;
	uint64_t count = len;
	ssize_t r;

	note("write slot %d fd %s off %" PRId64 " len %" PRIu64 " method %d%s",
	     s, mname(f->mode), off, len, method, data ? "" : " badbuf");
	if (off < 0 || (method == 1 && (uint64_t)off > max_bytes))
		method = 0;
	if (off < 0) {
		want = EINVAL;		/* ksys_pwrite64 checks it first */
	} else if (!fd_w(f->mode)) {
		want = EBADF;
	} else if ((uint64_t)off + len > (uint64_t)INT64_MAX) {
		want = EINVAL;
	} else if ((uint64_t)off >= max_bytes) {
		want = EFBIG;
	} else {
		if (count > max_bytes - off)
			count = max_bytes - off;
		/* the order rises also while mapped; only a binding refuses */
		need = wanted(sl, off + count);
		if (need > order && !bound_ok(sl->bound, need))
			want = EBUSY;
		else if (!data)
			want = EFAULT;
	}
	if (method == 1) {
		if (lseek(f->fd, off, SEEK_SET) != off) {
			mismatch("lseek(%" PRId64 ") failed: %s", off,
				 ename(errno));
			return;
		}
		r = write(f->fd, data ? data : (uint8_t *)badbuf, len);
	} else if (method == 2 && len > 1 && data) {
		struct iovec iov[2] = {
			{ (void *)data, len / 2 },
			{ (void *)(data + len / 2), len - len / 2 } };

		r = pwritev(f->fd, iov, 2, off);
	} else {
		r = pwrite(f->fd, data ? data : (uint8_t *)badbuf, len, off);
	}
	if (want == EFAULT && r == -1 && errno == EFAULT) {
		/*
		 * The order was raised and the page at off populated before
		 * the copy failed; what lies past the size is freed again
		 * (trim_past_size, in the raised extent), and the order falls
		 * back to what the size wants unless a shared mapping holds it
		 * (morsel_fit_order).
		 */
		int grown = need > order ? need : order;
		uint64_t end = PALIGN(off + PG) < ext(grown) ? PALIGN(off + PG) :
							       ext(grown);

		m_raise(sl, grown);
		runs_add(sl, off / PG, off / PG + 1);
		sl->churn++;
		m_free_pages(s, PALIGN(sl->size), end);
		if (grown > order)
			m_fit(s);
		errno = EFAULT;
	}
	if (!check("write", r, want, want2))
		return;
	if ((uint64_t)r != count) {
		mismatch("write slot %d off %" PRId64 " len %" PRIu64
			 ": returned %zd, want %" PRIu64, s, off, len, r, count);
		if (r <= 0)
			return;
		count = r;
	}
	m_raise(sl, need);
	m_write(sl, off, data, count);
	runs_add(sl, off / PG, (off + count - 1) / PG + 1);
	sl->churn++;
	if (off + count > sl->size)
		sl->size = off + count;
}

/*
 * MORSEL_IOC_POPULATE / EVICT.  @bad: 0 none, 1 flags, 2 reserved,
 * 3 bad pointer.
 */
static void x_range(int s, int fdi, int evict, uint64_t off, uint64_t len,
		    int bad)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	struct morsel_range r;
	int want = 0;
	long ret;

	note("%s slot %d fd %s off %#" PRIx64 " len %#" PRIx64 " bad %d",
	     evict ? "EVICT" : "POPULATE", s, mname(f->mode), off, len, bad);
	memset(&r, 0, sizeof(r));
	r.offset = off;
	r.length = len;
	if (bad == 1)
		r.flags = 1;
	if (bad == 2)
		r.reserved[below(5)] = 1;
	if (!fd_w(f->mode))
		want = EBADF;
	else if (bad == 3)
		want = EFAULT;
	else if (bad)
		want = EINVAL;
	else if (!len || off % PG || len % PG || off + len < off ||
		 off + len > PALIGN(sl->size))
		want = EINVAL;
	ret = ioctl(f->fd, evict ? MORSEL_IOC_EVICT : MORSEL_IOC_POPULATE,
		    bad == 3 ? (void *)badbuf : (void *)&r);
	if (!check(evict ? "EVICT" : "POPULATE", ret, want, 0))
		return;
	if (evict) {
		m_evict(s, off, off + len < sl->size ? off + len : sl->size);
	} else {
		runs_add(sl, off / PG, (off + len) / PG);
		sl->churn++;
	}
}

/* fallocate(2), any mode. */
static void x_fallocate(int s, int fdi, int mode, int64_t off, int64_t len)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	int want = 0, order = sl->order, neworder = order;
	int mm = mode & ~FALLOC_FL_KEEP_SIZE;
	uint64_t end;
	long ret;

	note("fallocate slot %d fd %s mode %#x off %" PRId64 " len %" PRId64,
	     s, mname(f->mode), mode, off, len);
	if (off < 0 || len <= 0)
		want = EINVAL;
	else if ((mm == FALLOC_FL_PUNCH_HOLE && !(mode & FALLOC_FL_KEEP_SIZE)) ||
		 (mm == FALLOC_FL_COLLAPSE_RANGE && (mode & FALLOC_FL_KEEP_SIZE)))
		want = EOPNOTSUPP;
	else if (!fd_w(f->mode))
		want = EBADF;
	else if ((uint64_t)off + len > max_bytes ||
		 (uint64_t)off + len > (uint64_t)INT64_MAX)
		want = EFBIG;
	else if (mm && mm != FALLOC_FL_PUNCH_HOLE && mm != FALLOC_FL_ZERO_RANGE)
		want = EOPNOTSUPP;
	else if (mm != FALLOC_FL_PUNCH_HOLE && !(mode & FALLOC_FL_KEEP_SIZE) &&
		 (uint64_t)off + len > sl->size) {
		neworder = wanted(sl, off + len);
		if (neworder > order && !bound_ok(sl->bound, neworder))
			want = EBUSY;
		if (neworder < order)
			neworder = order;
	}
	ret = fallocate(f->fd, mode, off, len);
	if (!check("fallocate", ret, want, 0))
		return;
	end = off + len;
	m_raise(sl, neworder);
	if (mm == FALLOC_FL_PUNCH_HOLE) {
		if ((uint64_t)off < sl->size)
			m_evict(s, off, end < sl->size ? end : sl->size);
		return;
	}
	/* ZERO_RANGE: the part inside the file as a punch, then as mode 0. */
	if (mm == FALLOC_FL_ZERO_RANGE && (uint64_t)off < sl->size)
		m_evict(s, off, end < sl->size ? end : sl->size);
	{
		uint64_t pend = PALIGN(end) < ext(neworder) ? PALIGN(end) :
							       ext(neworder);

		if ((mode & FALLOC_FL_KEEP_SIZE) && pend > PALIGN(sl->size))
			pend = PALIGN(sl->size);	/* KEEP_SIZE: not past the size */
		if (PDOWN(off) < pend) {
			runs_add(sl, PDOWN(off) / PG, pend / PG);
			sl->churn++;
		}
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > sl->size)
		sl->size = end;
}

/* ftruncate (fdi >= 0) or truncate(path) (fdi < 0). */
static void x_truncate(int s, int fdi, int64_t size)
{
	struct slot *sl = S(s);
	int want = 0;
	long ret;

	note("truncate slot %d %s%s to %" PRId64, s, fdi < 0 ? "path" : "fd ",
	     fdi < 0 ? "" : mname(W.fds[s][fdi].mode), size);
	if (size < 0 || (fdi >= 0 && !fd_w(W.fds[s][fdi].mode))) {
		want = EINVAL;
	} else if ((uint64_t)size > max_bytes) {
		want = EFBIG;
	} else if ((uint64_t)size != sl->size) {
		/* shrinking and a new order work also while mapped */
		int w = wanted(sl, size);

		if (w > sl->order && !bound_ok(sl->bound, w))
			want = EBUSY;
	}
	if (fdi >= 0)
		ret = ftruncate(W.fds[s][fdi].fd, size);
	else
		ret = truncate(path(sl->name), size);
	if (check("truncate", ret, want, 0))
		m_resize(s, size);
}

/* ---- checks of STAT and MAPPINGS ---- */

static void x_stat(int s, int full)
{
	struct slot *sl = S(s);
	struct morsel_stat st;
	struct stat fst;
	int fdi = pick_fd(s, 0), order = sl->order, l, err;

	if (fdi < 0)
		return;
	note("stat slot %d%s", s, full ? "" : " (partial)");
	if (fstat(W.fds[s][fdi].fd, &fst) || (uint64_t)fst.st_size != sl->size ||
	    fst.st_nlink != (nlink_t)sl->named)
		mismatch("fstat slot %d: size %lld nlink %lu, want %#" PRIx64 " and %d",
			 s, (long long)fst.st_size, (unsigned long)fst.st_nlink,
			 sl->size, sl->named);
	err = morsel_stat(W.fds[s][fdi].fd, &st);
	if (err) {
		mismatch("MORSEL_IOC_STAT slot %d: %s", s, ename(-err));
		return;
	}
	if (st.order != (uint64_t)order || st.extent != ext(order) ||
	    st.size != sl->size || st.bound != sl->bound ||
	    st.min_order != (uint64_t)sl->min_order) {
		mismatch("STAT slot %d: order %llu extent %#llx size %#llx bound %#llx"
			 " min_order %llu, want order %d size %#" PRIx64 " bound %#"
			 PRIx64 " min_order %d", s,
			 (unsigned long long)st.order,
			 (unsigned long long)st.extent,
			 (unsigned long long)st.size,
			 (unsigned long long)st.bound,
			 (unsigned long long)st.min_order, order, sl->size,
			 sl->bound, sl->min_order);
		if (st.order <= (uint64_t)max_order) {	/* follow reality */
			sl->order = order = st.order;
			sl->tables_bad = 1;
		}
	}
	for (l = order; l < MORSEL_TABLE_LEVELS; l++)
		if (st.tables[l])
			mismatch("STAT slot %d: order %d has %llu tables of level %d",
				 s, order, (unsigned long long)st.tables[l], l + 1);
	if (order && st.tables[order - 1] > 1)
		mismatch("STAT slot %d: %llu root tables", s,
			 (unsigned long long)st.tables[order - 1]);
	/* a populated morsel of order >= 1 has its root table */
	if (order && st.pages && st.tables[order - 1] != 1)
		mismatch("STAT slot %d: order %d with %llu pages but no root table",
			 s, order, (unsigned long long)st.pages);
	if (!full)
		return;
	/* every table, exactly: an order rise adds, free_range removes */
	for (l = 0; l < MORSEL_TABLE_LEVELS && !sl->tables_bad; l++)
		if (st.tables[l] != tab_count(sl, l + 1)) {
			mismatch("STAT slot %d: order %d, tables %llu %llu %llu %llu"
				 ", model %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
				 PRIu64 " (levels 1-4)", s, order,
				 (unsigned long long)st.tables[0],
				 (unsigned long long)st.tables[1],
				 (unsigned long long)st.tables[2],
				 (unsigned long long)st.tables[3],
				 tab_count(sl, 1), tab_count(sl, 2),
				 tab_count(sl, 3), tab_count(sl, 4));
			sl->tables_bad = 1;
		}
	if ((uint64_t)fst.st_blocks != runs_count(sl) * (PG / 512))
		mismatch("fstat slot %d: st_blocks %lld, model %" PRIu64 " pages",
			 s, (long long)fst.st_blocks, runs_count(sl));
	if (st.pages != runs_count(sl))
		mismatch("STAT slot %d: %llu pages populated, model %" PRIu64,
			 s, (unsigned long long)st.pages, runs_count(sl));
	if (st.mappings != (uint64_t)own_maps_kind(s, 1) +
	    (child_alive() ? W.ch.holds[s] : 0)) {
		struct morsel_mapping mm[8];
		char list[400] = "";
		int n = morsel_mappings(W.fds[s][fdi].fd, mm, 8), i;

		for (i = 0; i < n && i < 8; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 " [%#llx prot %llu pid %llu flags %llu]",
				 (unsigned long long)mm[i].addr,
				 (unsigned long long)mm[i].prot,
				 (unsigned long long)mm[i].pid,
				 (unsigned long long)mm[i].flags);
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (child_alive())
			waitid(P_PID, W.ch.pid, &si, WEXITED | WNOHANG | WNOWAIT);
		mismatch("STAT slot %d: %llu mappings, model %d own + %d in child %d"
			 " (pid %d; child %s, code %d status %d);%s", s,
			 (unsigned long long)st.mappings,
			 own_maps_kind(s, 1), child_alive() ? W.ch.holds[s] : 0,
			 child_alive() ? W.ch.pid : 0, (int)getpid(),
			 si.si_pid ? "exited" : "running", si.si_code,
			 si.si_status, list);
	}
	if (!child_alive()) {
		struct morsel_mapping mm[MAPS_ROOM + 2];
		int n = morsel_mappings(W.fds[s][fdi].fd, mm, MAPS_ROOM + 2), i, j;

		/* page-by-page mappings are neither counted nor listed */
		if (n != own_maps_kind(s, 1)) {
			mismatch("MAPPINGS slot %d: %d, model %d", s, n,
				 own_maps_kind(s, 1));
			return;
		}
		for (i = 0; i < n; i++) {
			for (j = 0; j < W.nmaps; j++) {
				struct mapent *m = &W.maps[j];
				uint64_t prot = (m->prot & PROT_READ ? MORSEL_PROT_READ : 0) |
					(m->prot & PROT_WRITE ? MORSEL_PROT_WRITE : 0) |
					(m->prot & PROT_EXEC ? MORSEL_PROT_EXEC : 0);

				if (m->slot == s && !m->paged && m->addr == mm[i].addr &&
				    prot == mm[i].prot &&
				    mm[i].pid == (uint64_t)getpid())
					break;
			}
			if (j == W.nmaps)
				mismatch("MAPPINGS slot %d: unknown entry addr %#llx prot %llu pid %llu",
					 s, (unsigned long long)mm[i].addr,
					 (unsigned long long)mm[i].prot,
					 (unsigned long long)mm[i].pid);
		}
	}
}

/* ---- argument choice ---- */

static int64_t pick_size(int s)
{
	struct slot *sl = S(s);
	static const uint64_t edges[] = {
		0, 1, PG - 1, PG, PG + 1, 2 * PG, 2 * MiB - 1, 2 * MiB,
		2 * MiB + 1, 1 * GiB - 1, 1 * GiB, 1 * GiB + 1, 512 * GiB - 1,
		512 * GiB, 512 * GiB + 1, 256 * TiB - 1, 256 * TiB,
		256 * TiB + 1, 1ULL << 62,
	};
	uint64_t r = below(100), o, lo;

	/* a mapped morsel cut to nothing: what do its mappings see? */
	if (mapped(s) && one_in(8))
		return 0;
	if (r < 35)
		return edges[below(sizeof(edges) / sizeof(edges[0]))];
	if (r < 37)
		return -1;
	if (r < 39)
		return one_in(2) ? max_bytes : max_bytes + 1;
	if (r < 60) {
		o = below(max_order + 1);
		lo = o ? ext(o - 1) + 1 : 0;
		return lo + below(ext(o) - lo + 1);
	}
	if (r < 80) {
		int64_t d = (int64_t)below(6 * PG) - 3 * (int64_t)PG;

		return (int64_t)sl->size + d < 0 ? 0 : (int64_t)sl->size + d;
	}
	if (r < 92)
		return below(64 * KiB);
	return one_in(2) ? sl->size / 2 : sl->size * 2 + 1;
}

/* An existing model page of @s, as a page index; NOPAGE if none. */
static uint64_t model_page(int s)
{
	struct slot *sl = S(s);
	int i, n = mp_count(sl), k;

	if (!n)
		return NOPAGE;
	k = below(n);
	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx != NOPAGE && !k--)
			return sl->pages[i].idx;
	return NOPAGE;
}

/* A file offset for read/write/fallocate, often on a boundary. */
static int64_t pick_off(int s)
{
	struct slot *sl = S(s);
	uint64_t sz = sl->size, e = ext(sl->order), r = below(100), p;

	if (r < 15 && sz)
		return below(sz);
	if (r < 32 && (p = model_page(s)) != NOPAGE)
		return p * PG + below(PG);
	if (r < 38 && sl->nruns)
		return sl->runs[below(sl->nruns)].a * PG + below(64);
	if (r < 62) {
		uint64_t c[] = { 0, sz ? sz - 1 : 0, sz, sz + 1,
				 PALIGN(sz) ? PALIGN(sz) - 1 : 0, PALIGN(sz),
				 e - 1, e, e + 1, PG - 1, PG, 2 * MiB - 1,
				 2 * MiB, 1 * GiB - 1, 1 * GiB, sz > 8 ? sz - 8 : 0 };

		return c[below(sizeof(c) / sizeof(c[0]))];
	}
	if (r < 66) {
		uint64_t c[] = { max_bytes - 1, max_bytes - PG, max_bytes,
				 max_bytes + 1 };

		return c[below(4)];
	}
	if (r < 68) {
		int64_t c[] = { -1, INT64_MAX - 100, 1LL << 62, -(int64_t)PG };

		return c[below(4)];
	}
	if (r < 88)
		return below(e);
	return below(2 * sz + PG);
}

/* An offset inside the extent for an access through a mapping. */
static uint64_t pick_moff(struct mapent *m)
{
	struct slot *sl = S(m->slot);
	uint64_t sz = sl->size, e = m->off + m->len, r = below(100), p, o;
	int i;

	if (m->priv && r < 15) {	/* a page it has a copy of */
		for (i = below(MAX_COPIES); i < MAX_COPIES; i++)
			if (W.copies[i].va >= m->addr &&
			    W.copies[i].va < m->addr + m->len)
				return W.copies[i].va - m->addr + below(PG);
	}
	if (r < 35 && sz)
		o = below(PALIGN(sz));
	else if (r < 60 && (p = model_page(m->slot)) != NOPAGE)
		o = p * PG + below(PG);
	else if (r < 80) {
		uint64_t c[] = { 0, sz ? sz - 1 : 0, sz,
				 PALIGN(sz) ? PALIGN(sz) - 1 : 0, PALIGN(sz),
				 e - 1, e - PG, PALIGN(sz) + PG };

		o = c[below(sizeof(c) / sizeof(c[0]))];
	} else
		o = m->off + below(m->len);
	/* a file offset: into the mapping's window */
	if (o < m->off || o >= e)
		o = m->off + (o < m->off ? below(m->len) : m->len - 1 - below(PG));
	return o - m->off;
}

/* Shrink a write so that the model can hold it; returns the length. */
static uint64_t fit_write(int s, int64_t *off, uint64_t len)
{
	struct slot *sl = S(s);
	uint64_t p;

	if (*off < 0 || (uint64_t)*off >= max_bytes || mp_room(sl, *off, len))
		return len;
	p = model_page(s);
	if (p == NOPAGE)
		return len;
	*off = p * PG + below(PG);
	if (len > PG - *off % PG)
		len = PG - *off % PG;
	return len;
}

/* ---- operations ---- */

static void unmap_all(int s);

static void op_create(int s)
{
	struct slot *sl = S(s);
	int64_t size;
	char name[40];
	int fd, want = 0;

	if (sl->live) {
		if (!sl->named)
			return;
		note("create slot %d %s again (O_EXCL)", s, sl->name);
		fd = open(path(sl->name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644);
		if (check("open(O_EXCL) of an existing name", fd, EEXIST, 0))
			close(fd);
		return;
	}
	fresh_name(s, name, sizeof(name));
	size = one_in(3) ? (int64_t)below(3 * PG) : pick_size(s);
	if (size < 0)
		want = EINVAL;
	else if ((uint64_t)size > max_bytes)
		want = EFBIG;
	if (one_in(5)) {
		/* an unnamed morsel; O_EXCL: never to be linked; O_RDONLY: EINVAL */
		int excl = one_in(4), ro = one_in(12);

		note("open(O_TMPFILE%s%s) slot %d + ftruncate %" PRId64,
		     excl ? "|O_EXCL" : "", ro ? ", ro" : "", s, size);
		fd = open(dir, O_TMPFILE | (ro ? O_RDONLY : O_RDWR) |
			  (excl ? O_EXCL : 0) | O_CLOEXEC, 0644);
		if (!check("open(O_TMPFILE)", fd, ro ? EINVAL : 0, 0))
			return;
		if (ro) {	/* unexpected success */
			close(fd);
			return;
		}
		sl->live = 1;
		sl->named = 0;
		sl->linkable = !excl;
		m_new(sl, 0);
		add_fd(s, fd, O_RDWR);
		x_truncate(s, W.nfds[s] - 1, size);
		return;
	}
	sl->linkable = 0;
	if (one_in(2)) {
		note("morsel_create slot %d %s size %" PRId64, s, name, size);
		fd = morsel_create(path(name), size, 0644);
		if (fd < 0) {
			errno = -fd;
			fd = -1;
		}
		if (!check("morsel_create", fd, want, 0))
			return;
	} else {
		note("open(O_CREAT) slot %d %s + ftruncate %" PRId64, s, name,
		     size);
		fd = open(path(name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644);
		if (!check("open(O_CREAT|O_EXCL)", fd, 0, 0))
			return;
		sl->live = 1;
		sl->named = 1;
		m_new(sl, 0);
		snprintf(sl->name, sizeof(sl->name), "%s", name);
		add_fd(s, fd, O_RDWR);
		x_truncate(s, W.nfds[s] - 1, size);
		return;
	}
	sl->live = 1;
	sl->named = 1;
	m_new(sl, size);
	snprintf(sl->name, sizeof(sl->name), "%s", name);
	add_fd(s, fd, O_RDWR);
}

static void op_open(int s)
{
	static const int modes[] = { O_RDONLY, O_RDONLY, O_RDWR, O_RDWR, O_WRONLY };
	struct slot *sl = S(s);
	int mode = modes[below(5)], extra = 0, want = 0, fd;
	uint64_t r = below(20);
	const char *name;

	if (!sl->named) {
		note("open slot %d: a name that does not exist", s);
		fd = open(path("nonexistent"), mode | O_CLOEXEC);
		if (check("open(nonexistent)", fd, ENOENT, 0))
			close(fd);
		return;
	}
	if (r == 0 && mode != O_RDONLY)
		extra = O_TRUNC;
	else if (r == 1)
		extra = O_DIRECT;
	else if (r == 2)
		extra = O_CREAT | O_EXCL;
	if (extra == O_DIRECT)
		want = EINVAL;
	else if (extra & O_EXCL)
		want = EEXIST;
	name = sl->named == 2 && one_in(2) ? sl->name2 : sl->name;
	note("open slot %d %s %s%s", s, name, mname(mode),
	     extra == O_TRUNC ? " O_TRUNC" : extra == O_DIRECT ? " O_DIRECT" :
	     extra ? " O_CREAT|O_EXCL" : "");
	fd = open(path(name), mode | extra | O_CLOEXEC, 0644);
	if (!check("open", fd, want, 0))
		return;
	if (want) {		/* unexpected success */
		close(fd);
		return;
	}
	if (extra == O_TRUNC)
		m_resize(s, 0);	/* works also while mapped */
	add_fd(s, fd, mode);
}

static void op_close(int s)
{
	int i;

	if (!W.nfds[s])
		return;
	i = below(W.nfds[s]);
	note("close slot %d fd %s", s, mname(W.fds[s][i].mode));
	check("close", close(W.fds[s][i].fd), 0, 0);
	W.fds[s][i] = W.fds[s][--W.nfds[s]];
	check_dead(s);
}

static void op_truncate(int s)
{
	int fdi = pick_fd(s, one_in(4) ? 0 : 1);

	if (fdi < 0 && !S(s)->named)
		return;
	if (fdi >= 0 && S(s)->named && one_in(4))
		fdi = -1;
	if (one_in(4) && (fdi >= 0 || S(s)->named)) {
		/* unmapped now and then, so that the order falls too */
		unmap_all(s);
		if (fdi < 0 && !S(s)->named)
			return;
	}
	x_truncate(s, fdi, pick_size(s));
}

static void op_write(int s)
{
	int fdi = pick_fd(s, one_in(8) ? 0 : 1), method = below(3);
	int64_t off = pick_off(s);
	uint64_t len = one_in(3) ? 1 + below(16) : 1 + below(3 * PG);
	static uint8_t data[3 * PG];

	if (fdi < 0)
		return;
	len = fit_write(s, &off, len);
	pattern(data, len, rnd());
	x_write(s, fdi, off, len, method, one_in(25) ? NULL : data);
}

static void op_read(int s)
{
	int fdi = pick_fd(s, one_in(8) ? 0 : 2);
	int64_t off = pick_off(s);
	uint64_t len = one_in(3) ? 1 + below(64) : 1 + below(WMAX * PG);

	if (fdi < 0)
		return;
	x_read(s, fdi, off, len, below(3), one_in(25));
}

/* Record a new mapping of @s. */
static void add_map(int s, uint64_t addr, uint64_t len, int prot, int kind,
		    int vorder, uint64_t off)
{
	struct mapent *m;

	if (W.nmaps == MAPS_ROOM) {
		mismatch("internal: mapping table full");
		munmap((void *)(uintptr_t)addr, len);
		return;
	}
	m = &W.maps[W.nmaps++];
	memset(m, 0, sizeof(*m));
	m->slot = s;
	m->addr = addr;
	m->len = len;
	m->prot = prot;
	m->paged = kind != MK_MOUNTED;
	m->priv = kind == MK_PRIVATE;
	m->maywrite = 0;		/* set by mmap_paged */
	m->vorder = vorder;
	m->off = off;
}

/*
 * A failed mmap: was it one of the @ne acceptable errors @err?  Returns
 * the index of the error, or @ne (reported).
 */
static int mmap_failed(int s, const int *err, int ne)
{
	char errs[128] = "";
	int got = errno, k;

	for (k = 0; k < ne; k++)
		snprintf(errs + strlen(errs), sizeof(errs) - strlen(errs), "%s%s",
			 k ? "/" : "", ename(err[k]));
	for (k = 0; k < ne && err[k] != got; k++)
		;
	if (!ne)
		mismatch("mmap slot %d: got %s, want success", s, ename(got));
	else if (k == ne)
		mismatch("mmap slot %d: got %s, want %s", s, ename(got), errs);
	return k;
}

/*
 * MAP_FIXED that fails in ->mmap leaves a gap where the old mappings
 * were (mm/vma.h vms_abort_munmap_vmas); an accounting failure (ENOMEM)
 * comes earlier and restores them.
 */
static void fixed_gap(uint64_t a, uint64_t len)
{
	int k;

	for (k = 0; k < W.nmaps; k++) {
		struct mapent *m = &W.maps[k];

		if (m->addr >= a && m->addr + m->len <= a + len &&
		    !mprotect((void *)(uintptr_t)m->addr, m->len, m->prot))
			mismatch("failed MAP_FIXED left the old mapping %#" PRIx64,
				 m->addr);
	}
	unmap_model(a, len);
}

/*
 * A shared mapping: the whole extent of the smallest order >= the
 * morsel's that holds the length (file.c morsel_mmap_len); a longer one
 * raises the morsel's order to the VMA's (mount.c map_check).
 */
static void mmap_shared(int s, int fdi, int prot)
{
	struct slot *sl = S(s);
	int order = sl->order, vo, flags, err[10], ne = 0, nhook, place, k;
	uint64_t e = ext(order), E, len, off = 0, hint = 0, want_addr = 0;
	int mode = W.fds[s][fdi].mode;
	char *p;

	flags = one_in(10) ? MAP_SHARED_VALIDATE : MAP_SHARED;
	place = below(10);	/* 0-4 none, 5-6 hint, 7 fixed, 8 noreplace, 9 fixed unaligned */
	if (place >= 7 && W.nmaps + 2 > MAX_MAPS)
		place = 0;
	switch (below(14)) {
	case 0: len = 1; break;
	case 1: len = sl->size && sl->size <= e ? sl->size : e; break;
	case 2: len = 1 + below(e); break;
	case 3: len = one_in(2) ? e + 1 : 0; break;
	case 4: case 5:		/* longer than the extent */
		if (order < max_order) {
			int o = order + 1 + below(max_order - order);

			len = one_in(2) ? ext(o) :
			      ext(o - 1) + 1 + below(ext(o) - ext(o - 1));
		} else {
			len = e;
		}
		break;
	case 6: len = one_in(3) ? max_bytes + 1 : e; break;
	default: len = e;
	}
	vo = !len || order_of(len) > max_order ? -1 :
	     order_of(len) > order ? order_of(len) : order;
	E = vo < 0 ? e : ext(vo);
	if (one_in(40))
		off = 1 + below(PG - 1);	/* unaligned: EINVAL */
	if (sl->bound && place >= 5 && place <= 8 && one_in(2))
		hint = sl->bound;
	else if (place >= 5)
		hint = pick_addr(vo < 0 ? order : vo) + (place == 9 ? PG : 0);
	if (place == 5 && one_in(2))
		hint += PG;	/* a hint is rounded up */
	if ((place == 7 || place == 9) && !fixed_ok(PDOWN(hint), E))
		place = 5;
	if (place == 7 || place == 9)
		flags |= MAP_FIXED;
	else if (place == 8)
		flags |= MAP_FIXED_NOREPLACE;
	if (one_in(10))
		flags |= MAP_POPULATE;		/* no effect on a morsel */
	if (one_in(40))
		flags = MAP_SHARED_VALIDATE | MAP_SYNC;

	/*
	 * The errors this call may give (any of them, in whatever order).
	 * First those decided before anything is unmapped, then those of
	 * morsel_mmap(), after MAP_FIXED has already removed what was there.
	 */
	if (!fd_r(mode) || ((prot & PROT_WRITE) && !fd_w(mode)))
		err[ne++] = EACCES;
	if (vo < 0 || off)
		err[ne++] = EINVAL;
	/* MAP_SHARED_VALIDATE refuses flags outside the legacy mask */
	if ((flags & MAP_TYPE) == MAP_SHARED_VALIDATE &&
	    (flags & (MAP_SYNC | MAP_FIXED_NOREPLACE)))
		err[ne++] = EOPNOTSUPP;
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (hint % PG || (sl->bound && hint != sl->bound) ||
		    (!sl->bound && hint % E))
			err[ne++] = EINVAL;
		else if (hint + E > task_max)
			err[ne++] = ENOMEM;
		else if ((flags & MAP_FIXED_NOREPLACE) && !range_free(hint, E))
			err[ne++] = EEXIST;
		else if ((flags & MAP_FIXED) && partial_overlap(hint, E))
			err[ne++] = EINVAL;
		want_addr = hint;
	} else if (sl->bound) {
		if (sl->bound + E > task_max)
			err[ne++] = ENOMEM;
		else if (!range_free(sl->bound, E))
			err[ne++] = EEXIST;
		want_addr = sl->bound;
	} else if (hint && hint_used((hint + E - 1) & ~(E - 1), E)) {
		want_addr = (hint + E - 1) & ~(E - 1);
	}
	nhook = ne;
	if (!(prot & (PROT_READ | PROT_WRITE)))	/* cannot read */
		err[ne++] = EACCES;
	/* a bound morsel's longer extent must fit its address (map_check) */
	if (sl->bound && vo > order && sl->bound % E)
		err[ne++] = EINVAL;
	note("mmap slot %d shared fd %s len %#" PRIx64 " prot %d flags %#x off %#"
	     PRIx64 " addr %#" PRIx64 " (order %d, VMA order %d)", s,
	     mname(mode), len, prot, flags, off, hint, order, vo);
	p = mmap((void *)(uintptr_t)hint, len, prot, flags, W.fds[s][fdi].fd,
		 off);
	tally(vo > order ? "mmap shared longer" : "mmap shared",
	      p == MAP_FAILED ? errno : 0);
	if (p == MAP_FAILED) {
		int got = errno;

		k = mmap_failed(s, err, ne);
		if ((flags & MAP_FIXED) && !nhook && k < ne && got != ENOMEM &&
		    !partial_overlap(hint, E))
			fixed_gap(hint, E);
		return;
	}
	if (ne) {
		char errs[128] = "";

		for (k = 0; k < ne; k++)
			snprintf(errs + strlen(errs), sizeof(errs) - strlen(errs),
				 "%s%s", k ? "/" : "", ename(err[k]));
		mismatch("mmap slot %d prot %d: succeeded at %p, want %s", s, prot,
			 p, errs);
		munmap(p, E);
		return;
	}
	if ((uintptr_t)p % E || (want_addr && (uintptr_t)p != want_addr))
		mismatch("mmap slot %d: at %p, want %#" PRIx64 " aligned to %#"
			 PRIx64, s, p, want_addr, E);
	/* MAP_FIXED replaced whatever it covered */
	if (flags & MAP_FIXED)
		unmap_model((uintptr_t)p, E);
	else if (occupied((uintptr_t)p, E, 0))
		mismatch("mmap slot %d: %p overlaps an existing mapping", s, p);
	add_map(s, (uintptr_t)p, E, prot, MK_MOUNTED, vo, 0);
	m_raise(sl, vo);
	/*
	 * MAP_POPULATE has no effect on a morsel (docs/interface.md): the
	 * kernel skips VM_PFNMAP mappings; the next STAT checks the count.
	 */
}

/*
 * A page-by-page mapping (file.c): private, or shared at an offset other
 * than 0 (which a shared one always has here: at 0 it would be mounted);
 * any page-aligned window and rights.  MAP_POPULATE faults the window in
 * up to the size, read only (a writable private one is left out: it would
 * copy every page).
 */
static void mmap_paged(int s, int fdi, int prot, int shared)
{
	struct slot *sl = S(s);
	uint64_t psz = PALIGN(sl->size), len, off, hint = 0, want_addr = 0, L, p;
	int flags = shared ? (one_in(4) ? MAP_SHARED_VALIDATE : MAP_SHARED) :
		    MAP_PRIVATE;
	int place = below(10), err[8], ne = 0, pop = 0;
	int mode = W.fds[s][fdi].mode;
	char *m;

	/* 0-5 none, 6 hint, 7 fixed, 8 noreplace, 9 fixed unaligned */
	if (place >= 7 && W.nmaps + 2 > MAX_MAPS)
		place = 0;
	switch (below(6)) {
	case 0: off = 0; break;
	case 1: off = psz > 4 * PG ? psz - PG * below(5) : 0; break;
	case 2:
		p = model_page(s);
		off = p != NOPAGE && p > 2 ? (p - below(3)) * PG : 0;
		break;
	default: off = psz ? PDOWN(below(psz)) : 0;
	}
	if (shared && !off)
		off = PG * (1 + below(4));
	len = one_in(3) ? 1 + below(2 * PG) :
	      PG * (1 + below(one_in(6) ? PRIV_MAX / PG : 8));
	if (one_in(40))
		len = 0;
	if (one_in(40))
		off += 1 + below(PG - 1);
	L = PALIGN(len);
	if (place >= 6)
		hint = pick_addr(0) + PG * below(16) + (place == 9 ? 1 : 0);
	if ((place == 7 || place == 9) && !fixed_ok(PDOWN(hint), L))
		place = 6;
	if (place == 7 || place == 9)
		flags |= MAP_FIXED;
	else if (place == 8)
		flags |= MAP_FIXED_NOREPLACE;
	if (prot != PROT_NONE && (shared || !(prot & PROT_WRITE)) && one_in(6)) {
		flags |= MAP_POPULATE;
		pop = 1;
	}
	if (shared && one_in(30))
		flags |= MAP_SYNC;
	if (!fd_r(mode) || (shared && (prot & PROT_WRITE) && !fd_w(mode)))
		err[ne++] = EACCES;
	if (!len || off % PG)
		err[ne++] = EINVAL;
	if ((flags & MAP_SYNC) && (flags & MAP_TYPE) == MAP_SHARED_VALIDATE)
		err[ne++] = EOPNOTSUPP;
	if ((flags & MAP_FIXED_NOREPLACE) &&
	    (flags & MAP_TYPE) == MAP_SHARED_VALIDATE)
		err[ne++] = EOPNOTSUPP;
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (hint % PG)
			err[ne++] = EINVAL;
		else if ((flags & MAP_FIXED_NOREPLACE) && !range_free(hint, L))
			err[ne++] = EEXIST;
		else if ((flags & MAP_FIXED) && partial_overlap(hint, L))
			err[ne++] = EINVAL;	/* a mounted VMA does not split */
		want_addr = hint;
	} else if (hint && hint_used(hint, L)) {
		want_addr = hint;
	}
	note("mmap slot %d %s fd %s len %#" PRIx64 " prot %d flags %#x off %#"
	     PRIx64 " addr %#" PRIx64, s, shared ? "paged shared" : "private",
	     mname(mode), len, prot, flags, off, hint);
	m = mmap((void *)(uintptr_t)hint, len, prot, flags, W.fds[s][fdi].fd,
		 off);
	tally(shared ? "mmap paged shared" : "mmap private",
	      m == MAP_FAILED ? errno : 0);
	if (m == MAP_FAILED) {
		mmap_failed(s, err, ne);
		return;
	}
	if (ne) {
		mismatch("mmap %s slot %d: succeeded at %p, want %s",
			 shared ? "paged shared" : "private", s, m, ename(err[0]));
		munmap(m, L);
		return;
	}
	if ((uintptr_t)m % PG || (want_addr && (uintptr_t)m != want_addr))
		mismatch("mmap %s slot %d: at %p, want %#" PRIx64,
			 shared ? "paged shared" : "private", s, m, want_addr);
	if (flags & MAP_FIXED)
		unmap_model((uintptr_t)m, L);
	else if (occupied((uintptr_t)m, L, 0))
		mismatch("mmap slot %d: %p overlaps an existing mapping", s, m);
	add_map(s, (uintptr_t)m, L, prot, shared ? MK_PAGED : MK_PRIVATE, 0,
		off);
	W.maps[W.nmaps - 1].maywrite = fd_w(mode);
	if (pop && off < psz) {		/* up to the first page past the size */
		runs_add(sl, off / PG, (off + L < psz ? off + L : psz) / PG);
		sl->churn++;
	}
}

/* mmap with every kind of argument; the model predicts the outcome. */
static void op_mmap(int s)
{
	static const int prots[] = {
		PROT_READ, PROT_READ, PROT_READ | PROT_WRITE,
		PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
		PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
		PROT_NONE, PROT_EXEC, PROT_WRITE, PROT_WRITE | PROT_EXEC,
	};
	int fdi = pick_fd(s, 0), prot;

	if (fdi < 0 || W.nmaps >= MAX_MAPS)
		return;
	prot = prots[below(sizeof(prots) / sizeof(prots[0]))];
	if (one_in(4))
		mmap_paged(s, fdi, prot, 0);
	else if (one_in(10))
		mmap_paged(s, fdi, prot, 1);
	else
		mmap_shared(s, fdi, prot);
}

/* A mapping of @s: @kind 0 any, 1 mounted, 2 paged; -1 if none. */
static int pick_map(int s, int kind)
{
	int i, c[MAPS_ROOM], n = 0;

	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].slot == s && (!kind || (kind == 1) == !W.maps[i].paged))
			c[n++] = i;
	return n ? c[below(n)] : -1;
}

/* Split paged mapping @i at @x (inside it): the index of the upper part. */
static int split_map(int i, uint64_t x)
{
	struct mapent *m = &W.maps[i], *n;

	if (x <= m->addr || x >= m->addr + m->len)
		return i;
	if (W.nmaps == MAPS_ROOM) {
		mismatch("internal: mapping table full");
		return i;
	}
	n = &W.maps[W.nmaps++];
	*n = *m;
	n->addr = x;
	n->len = m->addr + m->len - x;
	n->off = m->off + (x - m->addr);
	m->len = x - m->addr;
	return W.nmaps - 1;
}

/* A page-aligned part [*a, *a + *len) of paged mapping @m. */
static void pick_part(struct mapent *m, uint64_t *a, uint64_t *len)
{
	uint64_t np = m->len / PG, i = below(np), n = 1 + below(np - i);

	switch (below(4)) {
	case 0:			/* whole */
		i = 0;
		n = np;
		break;
	case 1:			/* head */
		i = 0;
		break;
	case 2:			/* tail */
		n = np - i;
		break;
	default:		/* anywhere, maybe the middle */
		break;
	}
	*a = m->addr + i * PG;
	*len = n * PG;
}

static void munmap_private(int s, int mi)
{
	struct mapent *m = &W.maps[mi];
	uint64_t a, len, ulen;
	int want = 0;

	if (W.nmaps + 2 > MAPS_ROOM)
		return;
	pick_part(m, &a, &len);
	ulen = len;
	if (one_in(8)) {
		ulen = len - below(PG);	/* rounded up to the page */
	} else if (one_in(12)) {
		a += 1 + below(PG - 1);
		want = EINVAL;
	}
	note("munmap slot %d %s map %#" PRIx64 "+%#" PRIx64 ": addr %#"
	     PRIx64 " len %#" PRIx64, s, mkind(m), m->addr, m->len, a, ulen);
	if (check("munmap paged", munmap((void *)(uintptr_t)a, ulen), want, 0)
	    && !want)
		unmap_model(a, len);
}

static void op_munmap(int s)
{
	int mi = pick_map(s, 0), want = 0;
	struct mapent *m;
	uint64_t a, len;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		munmap_private(s, mi);
		return;
	}
	a = m->addr;
	switch (below(8)) {
	case 0: len = 1; break;
	case 1: len = S(s)->size && S(s)->size <= m->len ? S(s)->size : m->len; break;
	case 2: len = 1 + below(m->len); break;
	case 3:		/* starts inside: a split */
		if (m->len > PG) {
			a += PG * (1 + below(m->len / PG - 1));
			want = EINVAL;
		}
		len = one_in(2) ? PG : m->addr + m->len - a;
		break;
	case 4: a += 1; len = m->len; want = EINVAL; break;
	default: len = m->len;
	}
	note("munmap slot %d map %#" PRIx64 ": addr %#" PRIx64 " len %#" PRIx64,
	     s, m->addr, a, len);
	if (check("munmap", munmap((void *)(uintptr_t)a, len), want, 0) &&
	    !want) {
		drop_map(mi);
		check_dead(s);
	}
}

static void op_mprotect(int s)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC,
		PROT_READ | PROT_WRITE | PROT_EXEC, PROT_NONE, PROT_EXEC,
		PROT_WRITE, PROT_WRITE | PROT_EXEC,
	};
	int mi = pick_map(s, 0), prot, want;
	struct mapent *m;
	uint64_t a, len;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	prot = one_in(2) ? m->prot : prots[below(sizeof(prots) / sizeof(prots[0]))];
	if (m->paged) {
		/*
		 * Any rights, on any part: the VMA splits; a shared one gets
		 * PROT_WRITE only if the fd could write (VM_MAYWRITE).
		 */
		if (W.nmaps + 2 > MAPS_ROOM)
			return;
		pick_part(m, &a, &len);
		want = !m->priv && !m->maywrite && (prot & PROT_WRITE) ? EACCES : 0;
		if (one_in(12)) {
			a += 1;
			want = EINVAL;
		}
		note("mprotect slot %d %s map %#" PRIx64 "+%#" PRIx64
		     " prot %d -> %d at %#" PRIx64 " len %#" PRIx64, s, mkind(m),
		     m->addr, m->len, m->prot, prot, a, len);
		if (check("mprotect paged", mprotect((void *)(uintptr_t)a, len,
						     prot), want, 0) && !want) {
			mi = split_map(mi, a);
			split_map(mi, a + len);
			W.maps[mi].prot = prot;
		}
		return;
	}
	want = prot == m->prot ? 0 : EACCES;
	a = m->addr;
	len = m->len;
	if (one_in(3) && m->len > PG) {
		a += PG * below(m->len / PG);
		len = PG;
	} else if (one_in(10)) {
		a += 1;
		want = EINVAL;
	}
	note("mprotect slot %d map %#" PRIx64 " prot %d -> %d at %#" PRIx64
	     " len %#" PRIx64, s, m->addr, m->prot, prot, a, len);
	check("mprotect", mprotect((void *)(uintptr_t)a, len, prot), want,
	      0);
}

/*
 * mremap of a paged mapping: an ordinary file mapping's rules.  --lenient:
 * a private one at offset 0 that must move gets EINVAL (the module takes
 * it for a mounted one).
 */
static void mremap_paged(int s, int mi)
{
	struct mapent *m = &W.maps[mi];
	uint64_t e = m->len, target, n;
	void *p = (void *)(uintptr_t)m->addr, *res;
	int known = lenient && m->priv && !m->off ? EINVAL : 0;

	switch (below(5)) {
	case 0:			/* shrink in place */
		if (e == PG)
			return;
		n = PG * (1 + below(e / PG - 1));
		note("mremap slot %d %s %p shrink %#" PRIx64 " -> %#" PRIx64,
		     s, mkind(m), p, e, n);
		res = mremap(p, e, n, 0);
		if (!check("mremap paged shrink", res == MAP_FAILED ? -1 : 0,
			   0, 0))
			return;
		if (res != p)
			mismatch("mremap paged shrink moved %p to %p", p, res);
		unmap_model(m->addr + n, e - n);
		return;
	case 1:			/* grow, moving if it must */
		if (e >= PRIV_MAX)
			return;
		note("mremap slot %d %s %p grow", s, mkind(m), p);
		res = mremap(p, e, e + PG, MREMAP_MAYMOVE);
		if (!check("mremap paged grow", res == MAP_FAILED ? -1 : 0, 0,
			   known))
			return;
		if ((uintptr_t)res != m->addr &&
		    occupied((uintptr_t)res, e + PG, 0))
			mismatch("mremap paged grow moved onto a mapping: %p", res);
		cp_move(m->addr, e, (uintptr_t)res);
		m->addr = (uintptr_t)res;
		m->len = e + PG;
		return;
	case 2:
		/* a duplicate: only of a shared mapping (not modelled) */
		if (!m->priv)
			return;
		note("mremap slot %d private %p old_len 0", s, p);
		res = mremap(p, 0, e, MREMAP_MAYMOVE);
		check("mremap private old_len 0", res == MAP_FAILED ? -1 : 0,
		      EINVAL, 0);
		return;
	default:		/* a move to a free target */
		target = pick_addr(0) + PG * below(64);
		if (occupied(target, e, 0))
			return;
		note("mremap slot %d %s %p -> %#" PRIx64, s, mkind(m), p, target);
		res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_FIXED,
			     (void *)(uintptr_t)target);
		if (!check("mremap paged move", res == MAP_FAILED ? -1 : 0, 0,
			   known))
			return;
		if ((uintptr_t)res != target)
			mismatch("mremap moved to %p, want %#" PRIx64, res, target);
		cp_move(m->addr, e, (uintptr_t)res);
		m->addr = (uintptr_t)res;
		return;
	}
}

/*
 * mremap of a shared mapping (kernel patch 0004): from the VMA's start,
 * old and new length inside the VMA give the same address and change
 * nothing; a new length past it gives ENOMEM; old_len 0 is a duplicate
 * (EFAULT, a growth of a VM_DONTEXPAND VMA); moves need MREMAP_FIXED.
 */
static void op_mremap(int s)
{
	int mi = pick_map(s, 0), want = 0;
	struct mapent *m;
	uint64_t e, target = 0, o, n;
	void *p, *res;
	int kind = below(9);

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		mremap_paged(s, mi);
		return;
	}
	e = m->len;
	p = (void *)(uintptr_t)m->addr;
	switch (kind) {
	case 0:
		note("mremap slot %d %p grow past the extent", s, p);
		res = mremap(p, one_in(2) ? e : PG, e + PG,
			     one_in(2) ? MREMAP_MAYMOVE : 0);
		check("mremap grow", res == MAP_FAILED ? -1 : 0, ENOMEM, 0);
		return;
	case 1: case 2:
		/* inside the extent: in place, nothing changes */
		o = PG * (1 + below(e / PG));
		n = PG * (1 + below(e / PG));
		if (one_in(4))
			o = e;
		if (one_in(4))
			n = one_in(2) ? e : 1 + below(e);
		note("mremap slot %d %p %#" PRIx64 " -> %#" PRIx64 " inside", s, p,
		     o, n);
		res = mremap(p, o, n, one_in(2) ? MREMAP_MAYMOVE : 0);
		if (check("mremap inside", res == MAP_FAILED ? -1 : 0, 0, 0)
		    && res != p)
			mismatch("mremap inside the extent moved %p to %p", p, res);
		return;
	case 3:
		note("mremap slot %d %p DONTUNMAP", s, p);
		res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
		check("mremap DONTUNMAP", res == MAP_FAILED ? -1 : 0,
		      EINVAL, 0);
		return;
	case 4:
		note("mremap slot %d %p old_len 0", s, p);
		res = mremap(p, 0, e, MREMAP_MAYMOVE);
		check("mremap old_len 0", res == MAP_FAILED ? -1 : 0,
		      EFAULT, 0);
		return;
	case 5:
		/* not from the VMA's start: growth of a VM_DONTEXPAND VMA */
		if (e < 4 * PG)
			return;
		note("mremap slot %d %p from inside, grow", s, p);
		res = mremap((char *)p + PG, PG, 2 * PG, MREMAP_MAYMOVE);
		check("mremap grow from inside", res == MAP_FAILED ? -1 : 0,
		      EFAULT, 0);
		return;
	default:
		break;
	}
	/* a move of the whole mapping to a free target */
	target = pick_addr(m->vorder);
	if (kind == 8 && e > PG)
		target += PG;
	if (occupied(target, e, 0) || (m->addr < target + e && target < m->addr + e))
		return;
	if (target % e || S(s)->bound)
		want = EINVAL;
	note("mremap slot %d %p -> %#" PRIx64, s, p, target);
	res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_FIXED,
		     (void *)(uintptr_t)target);
	if (!check("mremap move", res == MAP_FAILED ? -1 : 0, want, 0))
		return;
	if (want) {
		m->addr = (uintptr_t)res;	/* follow reality */
		return;
	}
	if ((uintptr_t)res != target)
		mismatch("mremap moved to %p, want %#" PRIx64, res, target);
	m->addr = (uintptr_t)res;
}

/*
 * madvise on a paged mapping: DONTNEED drops a private one's copies,
 * POPULATE faults the file's pages in (a private one copies them for a
 * write), REMOVE punches a hole through a shared one whose fd could write
 * (VM_MAYWRITE), FREE wants an anonymous mapping.
 */
static void madvise_paged(int s, int mi)
{
	static const struct { int adv; const char *name; } advs[] = {
		{ MADV_DONTNEED, "DONTNEED" }, { MADV_DONTNEED, "DONTNEED" },
		{ MADV_WILLNEED, "WILLNEED" }, { MADV_DONTFORK, "DONTFORK" },
		{ MADV_DOFORK, "DOFORK" }, { MADV_REMOVE, "REMOVE" },
		{ MADV_FREE, "FREE" }, { MADV_POPULATE_READ, "POPULATE_READ" },
		{ MADV_POPULATE_READ, "POPULATE_READ" },
		{ MADV_POPULATE_WRITE, "POPULATE_WRITE" },
	};
	struct mapent *m = &W.maps[mi];
	struct slot *sl = S(s);
	int k = below(sizeof(advs) / sizeof(advs[0])), adv = advs[k].adv;
	int want = 0;
	uint64_t a, len, rel, stop;
	long r;

	pick_part(m, &a, &len);
	if (adv == MADV_DONTFORK || adv == MADV_DOFORK) {
		a = m->addr;	/* whole: a part would split the VMA alone */
		len = m->len;
	}
	if (adv == MADV_REMOVE)		/* then vfs_fallocate's checks */
		want = m->priv || !m->maywrite ? EACCES :
		       m->off + (a - m->addr) + len > max_bytes ? EFBIG : 0;
	else if (adv == MADV_FREE)
		want = EINVAL;
	else if (adv == MADV_POPULATE_READ && !(m->prot & PROT_READ))
		want = EINVAL;
	else if (adv == MADV_POPULATE_WRITE && !(m->prot & PROT_WRITE))
		want = EINVAL;
	/* where a populate stops: the first page that would SIGBUS */
	stop = a + len;
	if (!want && (adv == MADV_POPULATE_READ || adv == MADV_POPULATE_WRITE)) {
		for (rel = a - m->addr; rel < a + len - m->addr; rel += PG)
			if (expect_access(m, rel, 0)) {
				stop = m->addr + rel;
				want = EFAULT;
				break;
			}
		if (adv == MADV_POPULATE_WRITE && m->priv &&
		    cp_count() + cp_need(m, a - m->addr, stop - a) > MAX_COPIES)
			return;
	}
	note("madvise slot %d %s map %#" PRIx64 "+%#" PRIx64 " at %#" PRIx64
	     " len %#" PRIx64 " %s", s, mkind(m), m->addr, m->len, a, len,
	     advs[k].name);
	r = madvise((void *)(uintptr_t)a, len, adv);
	if (!check("madvise paged", r, want, 0) && want != EFAULT)
		return;
	switch (adv) {
	case MADV_DONTNEED:
		cp_drop(a, len);
		break;
	case MADV_REMOVE: {
		uint64_t fo = m->off + (a - m->addr);

		if (fo < sl->size)
			m_evict(s, fo, fo + len < sl->size ? fo + len : sl->size);
		break;
	}
	case MADV_DONTFORK:
		m->dontfork = 1;
		break;
	case MADV_DOFORK:
		m->dontfork = 0;
		break;
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
		for (rel = a - m->addr; rel < stop - m->addr; rel += PG) {
			uint64_t va = m->addr + rel;
			struct copy *c;

			if (cp_find(va))
				continue;
			runs_add(sl, (m->off + rel) / PG, (m->off + rel) / PG + 1);
			if (adv == MADV_POPULATE_WRITE && m->priv &&
			    (c = cp_find(NOPAGE))) {
				c->va = va;
				m_read(sl, m->off + rel, PG, c->data);
			}
		}
		sl->churn++;
		break;
	}
}

static void op_madvise(int s)
{
	static const struct { int adv; int err; const char *name; } advs[] = {
		{ MADV_DONTNEED, EINVAL, "DONTNEED" }, { MADV_FREE, EINVAL, "FREE" },
		{ MADV_COLD, EINVAL, "COLD" }, { MADV_PAGEOUT, EINVAL, "PAGEOUT" },
		{ MADV_COLLAPSE, EINVAL, "COLLAPSE" },
		{ MADV_DOFORK, EINVAL, "DOFORK" }, { MADV_DODUMP, EINVAL, "DODUMP" },
		{ MADV_DONTDUMP, 0, "DONTDUMP" }, { MADV_WILLNEED, 0, "WILLNEED" },
		{ MADV_HUGEPAGE, -1, "HUGEPAGE" },
		{ MADV_NOHUGEPAGE, -1, "NOHUGEPAGE" },
		{ MADV_DONTFORK, -1, "DONTFORK" }, { MADV_REMOVE, -2, "REMOVE" },
		{ MADV_REMOVE, -2, "REMOVE" },
		{ MADV_POPULATE_READ, -3, "POPULATE_READ" },
		{ MADV_POPULATE_WRITE, -3, "POPULATE_WRITE" },
		{ MADV_POPULATE_READ, -3, "POPULATE_READ" },
	};
	int mi = pick_map(s, 0), k = below(sizeof(advs) / sizeof(advs[0]));
	int want, want2 = 0, whole;
	struct mapent *m;
	struct slot *sl = S(s);
	uint64_t o, len;
	long r;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		madvise_paged(s, mi);
		return;
	}
	if (one_in(3)) {
		o = 0;
		len = m->len;
	} else {
		o = PDOWN(pick_moff(m));
		len = PG * (1 + below(one_in(4) ? 1024 : 16));
		if (len > m->len - o)
			len = m->len - o;
	}
	if (one_in(20))
		len = 0;
	whole = o == 0 && len == m->len;
	want = advs[k].err;
	if (want == -1) {	/* flag changes: a split unless whole or no change */
		int same = (advs[k].adv == MADV_DONTFORK && m->dontfork) ||
			   (advs[k].adv == MADV_HUGEPAGE && m->huge == 1) ||
			   (advs[k].adv == MADV_NOHUGEPAGE && m->huge == 2);

		want = same || whole ? 0 : EINVAL;
	} else if (want == -2) {
		want = m->prot & PROT_WRITE ? 0 : EACCES;
	} else if (want == -3) {
		/* GUP (check_vma_flags) wants VM_WRITE, or VM_READ to read */
		int need = advs[k].adv == MADV_POPULATE_WRITE ? PROT_WRITE :
							      PROT_READ;

		want = m->prot & need ? 0 : EINVAL;
		if (!want && len > CAP_POP)
			len = CAP_POP;
	}
	if (!len)
		want = 0;
	if (one_in(30)) {
		o += 1;
		want = EINVAL;
	}
	if (!want && len && advs[k].err == -3) {
		uint64_t pg;

		for (pg = (m->addr + o) / PG; pg < (m->addr + o + len) / PG; pg++) {
			uint64_t fo = pg * PG - m->addr;

			int e = expect_access(m, fo, 0);

			if (e == ANY_SIG)	/* --lenient: either */
				want2 = EFAULT;
			if (e && e != ANY_SIG) {
				want = EFAULT;
				break;
			}
		}
	}
	note("madvise slot %d map %#" PRIx64 " off %#" PRIx64 " len %#" PRIx64
	     " %s", s, m->addr, o, len, advs[k].name);
	r = madvise((void *)(uintptr_t)(m->addr + o), len, advs[k].adv);
	if (advs[k].err == -3 && len && (!want || want == EFAULT) &&
	    (r == 0 || errno == EFAULT)) {
		/* populated up to the first page that faults */
		uint64_t fo;

		for (fo = o; fo < o + len; fo += PG) {
			int e = expect_access(m, fo, 0);

			if (e && (e != ANY_SIG || r))
				break;
			runs_add(sl, fo / PG, fo / PG + 1);
		}
		sl->churn++;
		if (r == 0 && want == EFAULT)	/* follow reality */
			runs_add(sl, o / PG, (o + len) / PG);
		if (r)
			errno = EFAULT;
	}
	if (!check("madvise", r, want, want2) || want)
		return;
	if (!len)
		return;
	switch (advs[k].adv) {
	case MADV_DONTFORK:
		m->dontfork = 1;
		break;
	case MADV_HUGEPAGE:
		m->huge = 1;
		break;
	case MADV_NOHUGEPAGE:
		m->huge = 2;
		break;
	case MADV_REMOVE:
		if (o < sl->size)
			m_evict(s, o, o + len < sl->size ? o + len : sl->size);
		break;
	}
}

static void op_range(int s, int evict)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), bad = 0;
	uint64_t off, len, psz = PALIGN(sl->size), r = below(20);

	if (fdi < 0)
		return;
	if (evict && one_in(4)) {
		off = 0;
		len = psz;
	} else {
		off = psz ? PDOWN(below(psz)) : 0;
		if (one_in(3) && mp_count(sl))
			off = model_page(s) * PG;
		len = PG * (1 + below(one_in(8) ? CAP_POP / PG : 16));
		if (off + len > psz && psz > off)
			len = psz - off;
	}
	if (r == 0)
		off += 1 + below(PG - 1);
	else if (r == 1)
		len += 1 + below(PG - 1);
	else if (r == 2)
		len = 0;
	else if (r == 3)
		off = psz;
	else if (r == 4) {
		off = PG;
		len = ~0ULL & ~(PG - 1);
	} else if (r == 5)
		bad = 1 + below(3);
	x_range(s, fdi, evict, off, len, bad);
}

static void op_punch(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), mode = FALLOC_FL_PUNCH_HOLE |
		  FALLOC_FL_KEEP_SIZE;
	int64_t off = pick_off(s), len = 1 + below(3 * PG);
	uint64_t r = below(30);

	if (fdi < 0)
		return;
	if (r < 3)
		len = sl->size + PG;
	else if (r == 3)
		len = 0;
	else if (r == 4)
		len = -(int64_t)PG;
	else if (r == 5)
		mode = FALLOC_FL_PUNCH_HOLE;
	else if (r == 6)
		mode = FALLOC_FL_ZERO_RANGE | (one_in(2) ? FALLOC_FL_KEEP_SIZE : 0);
	else if (r == 7)
		mode = FALLOC_FL_COLLAPSE_RANGE;
	else if (r == 8)
		len = max_bytes;
	x_fallocate(s, fdi, mode, off, len);
}

static void op_falloc(int s)
{
	int fdi = pick_fd(s, one_in(6) ? 0 : 1);
	int mode = one_in(2) ? 0 : FALLOC_FL_KEEP_SIZE;
	int64_t off = pick_off(s), len = 1 + below(one_in(8) ? CAP_POP : 16 * PG);

	if (fdi < 0)
		return;
	if (one_in(20))
		len = one_in(2) ? 0 : -1;
	x_fallocate(s, fdi, mode, off, len);
}

static void op_bind(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), order = sl->order;
	int want = 0, bad = below(20);
	uint64_t e = ext(order), a, n;
	struct morsel_bind b;
	long r;

	if (fdi < 0)
		return;
	n = order >= 3 ? 1 : ext(3) / e < 64 ? ext(3) / e : 64;
	a = bind_base(s, order) + e * below(n);
	switch (below(12)) {
	case 0: a = 0; break;
	case 1: a += e > PG ? PG : 1; break;
	case 2: a = task_max + PG - e; break;
	case 3: a = ~0ULL & ~(e - 1); break;
	case 4: a = 1ULL << 57; break;
	case 5: if (sl->bound) a = sl->bound; break;
	}
	memset(&b, 0, sizeof(b));
	b.addr = a;
	if (bad == 0)
		b.flags = 1;
	else if (bad == 1)
		b.reserved[below(6)] = 1;
	if (!fd_w(W.fds[s][fdi].mode))
		want = EBADF;
	else if (bad == 2)
		want = EFAULT;
	else if (bad < 2 || !a || a % e || a + e < a || a + e > task_max)
		want = EINVAL;
	else if (a == sl->bound)
		want = 0;
	else if (sl->bound || mapped(s))
		want = EBUSY;
	note("bind slot %d fd %s to %#" PRIx64 " (order %d, bad %d)", s,
	     mname(W.fds[s][fdi].mode), a, order, bad);
	r = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_BIND,
		  bad == 2 ? (void *)badbuf : (void *)&b);
	if (check("BIND", r, want, 0))
		sl->bound = a;
}

/*
 * MORSEL_IOC_SET_MIN_ORDER: the order rises to it at once (mapped or
 * not; EBUSY if bound where the new extent does not fit); a lower minimum
 * takes effect at the next size change without shared mappings.
 */
static void op_min_order(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), want = 0, bad = below(16);
	unsigned int order;
	struct morsel_min_order o;
	long r;

	if (fdi < 0)
		return;
	switch (below(8)) {
	case 0: order = sl->min_order; break;
	case 1: order = sl->order; break;
	case 2: order = sl->order + 1; break;
	case 3: order = one_in(2) ? 5 : one_in(2) ? 1U << 31 : ~0U; break;
	default: order = below(max_order + 2);
	}
	memset(&o, 0, sizeof(o));
	o.order = order;
	if (bad == 0)
		o.flags = 1;
	else if (bad == 1)
		o.reserved[below(6)] = 1;
	if (!fd_w(W.fds[s][fdi].mode))
		want = EBADF;
	else if (bad == 2)
		want = EFAULT;
	else if (bad < 2 || order > (unsigned int)max_order)
		want = EINVAL;
	else if ((int)order > sl->order && !bound_ok(sl->bound, order))
		want = EBUSY;
	note("SET_MIN_ORDER slot %d fd %s order %u (order %d, min %d, bad %d)",
	     s, mname(W.fds[s][fdi].mode), order, sl->order, sl->min_order, bad);
	if (bad >= 3 && one_in(2)) {
		int err = morsel_set_min_order(W.fds[s][fdi].fd, order);

		errno = -err;
		r = err ? -1 : 0;
	} else {
		r = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_SET_MIN_ORDER,
			  bad == 2 ? (void *)badbuf : (void *)&o);
	}
	if (!check("SET_MIN_ORDER", r, want, 0) || want)
		return;
	sl->min_order = order;
	m_raise(sl, order);
}

/* One name of @sl went (unlink, a rename over it): @second or the first. */
static void lose_name(struct slot *sl, int second)
{
	if (sl->named == 2 && !second)
		memcpy(sl->name, sl->name2, sizeof(sl->name));
	sl->named--;
}

static void op_rename(int s)
{
	struct slot *sl = S(s), *tl;
	char name[40];
	int t, i, k = below(8);
	long r;

	if (!sl->named) {
		note("rename slot %d: a name that does not exist", s);
		r = rename(path("nonexistent"), path("nonexistent2"));
		check("rename(nonexistent)", r, ENOENT, 0);
		return;
	}
	/* a sibling slot with a name, for replacing renames */
	for (i = 0, t = -1; i < NFILES; i++) {
		int c = W.owned[(i + W.op) % NFILES];

		if (c != s && S(c)->named) {
			t = c;
			break;
		}
	}
	tl = t >= 0 ? S(t) : NULL;
	if (k == 0) {
		note("rename slot %d %s to itself", s, sl->name);
		check("rename to itself", rename(path(sl->name),
						 path(sl->name)), 0, 0);
	} else if (k == 1) {
		note("rename slot %d %s into a missing directory", s, sl->name);
		check("rename into a missing directory",
		      rename(path(sl->name), path("nodir/x")),
		      ENOENT, 0);
	} else if (k == 2 && tl && !is_target(t)) {
		note("rename slot %d %s over slot %d %s, then to a fresh name",
		     s, sl->name, t, tl->name);
		if (!check("rename over", rename(path(sl->name),
						 path(tl->name)), 0, 0))
			return;
		snprintf(sl->name, sizeof(sl->name), "%s", tl->name);
		lose_name(tl, 0);
		check_dead(t);
		fresh_name(s, name, sizeof(name));
		if (check("rename back", rename(path(sl->name),
						path(name)), 0, 0))
			snprintf(sl->name, sizeof(sl->name), "%s", name);
	} else if (k == 3 && tl) {
		note("renameat2 NOREPLACE slot %d %s over %s", s, sl->name,
		     tl->name);
		check("rename NOREPLACE", renameat2(AT_FDCWD, path(sl->name),
						    AT_FDCWD, path(tl->name),
						    RENAME_NOREPLACE),
		      EEXIST, 0);
	} else if (k == 4 && tl) {
		note("renameat2 EXCHANGE slot %d %s with %s, twice", s,
		     sl->name, tl->name);
		for (i = 0; i < 2; i++)
			check("rename EXCHANGE",
			      renameat2(AT_FDCWD, path(sl->name), AT_FDCWD,
					path(tl->name), RENAME_EXCHANGE),
			      0, 0);
	} else {
		fresh_name(s, name, sizeof(name));
		note("rename slot %d %s to %s", s, sl->name, name);
		if (check("rename", rename(path(sl->name), path(name)),
			  0, 0))
			snprintf(sl->name, sizeof(sl->name), "%s", name);
	}
}

static void op_unlink(int s)
{
	struct slot *sl = S(s);
	int second;

	if (!sl->named) {
		note("unlink slot %d: a name that does not exist", s);
		check("unlink(nonexistent)", unlink(path("nonexistent")),
		      ENOENT, 0);
		return;
	}
	second = sl->named == 2 && one_in(2);
	note("unlink slot %d %s", s, second ? sl->name2 : sl->name);
	if (check("unlink", unlink(path(second ? sl->name2 : sl->name)), 0, 0)) {
		lose_name(sl, second);
		check_dead(s);
	}
}

/*
 * A second name (link, or linkat of an fd with AT_EMPTY_PATH); an unnamed
 * morsel gets its first one if it is an O_TMPFILE never linked (ENOENT
 * otherwise, as the VFS has it); a name that exists: EEXIST.
 */
static void op_link(int s)
{
	struct slot *sl = S(s), *tl;
	int fdi = pick_fd(s, 0), want = 0, t = W.owned[below(NFILES)];
	char name[40];
	long r;

	fresh_name(s, name, sizeof(name));
	tl = S(t);
	if (sl->named == 2 || (sl->named && tl->named && one_in(6))) {
		const char *to = sl->named == 2 && one_in(2) ? sl->name2 :
				 tl->named ? tl->name : sl->name;

		note("link slot %d %s to an existing name %s", s, sl->name, to);
		check("link to an existing name", link(path(sl->name), path(to)),
		      EEXIST, 0);
		return;
	}
	if (fdi >= 0 && (!sl->named || one_in(2))) {
		if (!sl->named && !sl->linkable)
			want = ENOENT;
		note("linkat slot %d fd %s AT_EMPTY_PATH to %s (%s)", s,
		     mname(W.fds[s][fdi].mode), name, sl->named ? "named" :
		     sl->linkable ? "O_TMPFILE" : "unlinked");
		r = linkat(W.fds[s][fdi].fd, "", AT_FDCWD, path(name),
			   AT_EMPTY_PATH);
	} else if (sl->named) {
		note("link slot %d %s to %s", s, sl->name, name);
		r = link(path(sl->name), path(name));
	} else {
		return;
	}
	if (!check("link", r, want, 0) || want)
		return;
	snprintf(sl->named ? sl->name2 : sl->name, sizeof(sl->name), "%s",
		 name);
	sl->named++;
	sl->linkable = 0;
}

static void op_maccess(int s, int write)
{
	int mi = pick_map(s, 0), i;
	struct mapent *m;
	int64_t off;
	uint64_t len;
	static uint8_t data[3 * PG];

	if (mi < 0)
		return;
	m = &W.maps[mi];
	off = pick_moff(m);
	len = write ? 1 + below(one_in(2) ? 64 : 3 * PG) :
		      1 + below(one_in(2) ? 64 : 8 * PG);
	if (len > m->len - off)
		len = m->len - off;
	if (write && !m->priv) {
		int64_t fo = m->off + off;

		len = fit_write(s, &fo, len);
		if ((uint64_t)fo < m->off || (uint64_t)fo >= m->off + m->len)
			return;
		off = fo - m->off;
		if (len > m->len - off)
			len = m->len - off;
	} else if (write && (m->prot & PROT_WRITE) &&
		   cp_count() + cp_need(m, off, len) > MAX_COPIES) {
		/* no room for more copies: store into one it has */
		for (i = 0; i < MAX_COPIES; i++)
			if (W.copies[i].va >= m->addr &&
			    W.copies[i].va < m->addr + m->len)
				break;
		if (i == MAX_COPIES)
			return;
		off = W.copies[i].va - m->addr + below(PG);
		if (len > PG - off % PG)
			len = PG - off % PG;
	}
	if (write)
		pattern(data, len, rnd());
	note("%s slot %d %s map %#" PRIx64 "+%#" PRIx64 " prot %d off %#" PRIx64
	     " len %#" PRIx64, write ? "store" : "load", s, mkind(m), m->addr,
	     m->len, m->prot, (uint64_t)off, len);
	x_access(m, off, len, write, data, write ? "store" : "load");
}

/*
 * Put "mov eax, 42; ret" into the file and call it through a mapping (a
 * private one sees the file's page unless it has a copy of it).
 */
static void op_exec(int s)
{
	static const uint8_t code[] = { 0xb8, 0x2a, 0, 0, 0, 0xc3 };
	struct slot *sl = S(s);
	int mi = pick_map(s, 0), fdi = pick_fd(s, 1), want, got, ret = 0;
	uint64_t off, lo, hi;
	struct mapent *m;

	if (mi < 0 || fdi < 0)
		return;
	m = &W.maps[mi];
	lo = m->off;
	hi = sl->size < m->off + m->len ? sl->size : m->off + m->len;
	if (hi < lo + sizeof(code))
		return;
	off = lo + below(hi - lo - sizeof(code) + 1);
	if (off % PG > PG - sizeof(code))
		off = PDOWN(off);
	if (!mp_room(sl, off, sizeof(code)) ||
	    (m->priv && cp_find(PDOWN(m->addr + off - m->off))))
		return;
	x_write(s, fdi, off, sizeof(code), 0, code);
	want = m->prot & PROT_EXEC ? 0 : SIGSEGV;
	note("call slot %d %s map %#" PRIx64 " prot %d off %#" PRIx64, s,
	     mkind(m), m->addr, m->prot, off);
	got = gcall((void *)(uintptr_t)(m->addr + off - m->off), &ret);
	if (got != want || (!got && ret != 42))
		mismatch("call through %s map prot %d at offset %#" PRIx64
			 ": %s, returned %d; want %s", mkind(m),
			 m->prot, off, sname(got), ret, sname(want));
	if (!got)
		runs_add(sl, off / PG, off / PG + 1);
}

static void op_stat(int s)
{
	int fdi = pick_fd(s, 0), r = below(10);
	struct morsel_stat st;
	long ret;

	if (fdi < 0)
		return;
	if (r == 0 || r == 1) {
		memset(&st, 0, sizeof(st));
		if (!r)
			st.flags = 1;
		else
			st.reserved[below(6)] = 1;
		if (one_in(2))		/* out fields are ignored on input */
			st.min_order = st.order = st.pages = 1 + below(7);
		note("STAT slot %d with bad flags/reserved", s);
		ret = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT, &st);
		check("STAT with bad input", ret, EINVAL, 0);
		return;
	}
	if (r == 3) {
		memset(&st, 0xa5, sizeof(st));
		st.flags = 0;
		memset(st.reserved, 0, sizeof(st.reserved));
		note("STAT slot %d with garbage in the out fields", s);
		check("STAT with out fields set",
		      ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT, &st), 0, 0);
		return;
	}
	if (r == 2) {
		note("STAT slot %d bad pointer / unknown ioctl", s);
		check("STAT bad pointer", ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT,
						badbuf), EFAULT, 0);
		check("unknown ioctl", ioctl(W.fds[s][fdi].fd,
					     _IOWR(MORSEL_IOC_MAGIC, 0x7e,
						   struct morsel_stat), &st),
		      ENOTTY, 0);
		return;
	}
	x_stat(s, 1);
}

/* ---- children ---- */

static void child_verify(int s, const char *what)
{
	struct child *c = &W.ch;
	int fdi = c->fdi, k;
	uint64_t o = c->w0 + PDOWN(below(c->wlen)), len = PG * (1 + below(4));
	ssize_t r;

	if (o + len > c->w0 + c->wlen)
		len = c->w0 + c->wlen - o;
	k = below(3);
	if (k == 1 && c->paddr) {	/* through the private mapping of W */
		int sig = gcopy(iobuf, (char *)(uintptr_t)(c->paddr + o - c->w0),
				len);

		if (sig) {
			mismatch("%s: %s reading W at %#" PRIx64 " through the private"
				 " mapping %#" PRIx64, what, sname(sig), o, c->paddr);
			return;
		}
	} else if (k == 0 && c->nmaps) {
		struct mapent *m = &c->maps[below(c->nmaps)];
		char *p = (char *)(uintptr_t)(m->addr + o);
		int sig = gcopy(iobuf, p, len);

		if (sig) {
			mismatch("%s: %s reading W at %#" PRIx64 " through %#"
				 PRIx64, what, sname(sig), o, m->addr);
			return;
		}
	} else {
		if (o >= c->fend)
			return;
		if (len > c->fend - o)
			len = c->fend - o;
		r = pread(W.fds[s][fdi].fd, iobuf, len, o);
		if (r != (ssize_t)len) {
			mismatch("%s: pread of W returned %zd (%s)", what, r,
				 ename(errno));
			return;
		}
	}
	if (memcmp(iobuf, c->snap + (o - c->w0), len)) {
		uint64_t i = 0;

		while (iobuf[i] == c->snap[o - c->w0 + i])
			i++;
		mismatch("%s: byte at offset %#" PRIx64 " of slot %d: got %#x, want %#x",
			 what, o + i, s, iobuf[i], c->snap[o - c->w0 + i]);
	}
}

static void child_main(void)
{
	struct child *c = &W.ch;
	int s = c->slot, i, fd = W.fds[s][c->fdi].fd, iter;
	struct slot *sl = S(s);

	W.in_child = 1;
	W.printed = 0;
	W.rng = c->rng;
	if (c->pass) {
		int r = morsel_recv_fd(c->sock);

		note("child receives an fd (%s)", mname(c->pass_mode));
		if (r < 0) {
			mismatch("morsel_recv_fd: %s", ename(-r));
			_exit(1);
		}
		fd = r;
	}
	if (c->newmap) {
		void *p;

		note("child mmap prot %d: want %s", c->newprot, ename(c->newexp));
		p = mmap(NULL, ext(sl->order), c->newprot, MAP_SHARED,
			 fd, 0);
		if (p == MAP_FAILED) {
			if (errno != c->newexp) {	/* else: as planned */
				check("child mmap", -1, c->newexp, 0);
				_exit(1);
			}
		} else if (c->newexp) {
			mismatch("child mmap succeeded at %p, want %s", p,
				 ename(c->newexp));
			munmap(p, ext(sl->order));
		} else {
			if (sl->bound && (uintptr_t)p != sl->bound)
				mismatch("child mmap of bound slot at %p, want %#"
					 PRIx64, p, sl->bound);
			c->maps[c->nmaps - 1].addr = (uintptr_t)p;
		}
	}
	for (i = 0; i < c->nl; i++) {
		struct lwrite *l = &c->l[i];
		static uint8_t data[2 * PG];

		pattern(data, l->len, l->pat);
		note("child write %d: off %#" PRIx64 " len %#" PRIx64 " how %d",
		     i, l->off, l->len, l->how);
		if (l->how < 0) {
			ssize_t r = pwrite(W.fds[s][c->fdi].fd, data, l->len,
					   l->off);

			if (r != (ssize_t)l->len)
				mismatch("child pwrite returned %zd (%s)", r,
					 ename(errno));
		} else {
			struct mapent *m = &c->maps[l->how];
			int sig = gcopy((char *)(uintptr_t)(m->addr + l->off), data,
					l->len);

			if (sig != (l->effective ? 0 : SIGSEGV))
				mismatch("child store through prot %d: %s", m->prot,
					 sname(sig));
		}
	}
	/*
	 * A private mapping of W, made after the writes: it faults W's pages
	 * (under the invalidate lock) while the parent evicts and rewrites.
	 */
	if (c->priv) {
		void *p = mmap(NULL, c->wlen, c->pprot, MAP_PRIVATE,
			       W.fds[s][c->fdi].fd, c->w0);

		note("child private mmap of W prot %d", c->pprot);
		if (p == MAP_FAILED)
			mismatch("child private mmap of W: %s", ename(errno));
		else
			c->paddr = (uintptr_t)p;
	}
	for (iter = 0; iter < 4000; iter++) {
		uint64_t o, len;

		if (__atomic_load_n(&sh->w[W.id].stop, __ATOMIC_SEQ_CST))
			break;
		o = c->w0 + PDOWN(below(c->wlen));
		len = PG * (1 + below(3));
		if (o + len > c->w0 + c->wlen)
			len = c->w0 + c->wlen - o;
		switch (below(10)) {
		case 0: case 1: case 2:
			child_verify(s, "child check");
			break;
		case 8:		/* its own copies of the same bytes */
			if (c->paddr && (c->pprot & PROT_WRITE) &&
			    gcopy((char *)(uintptr_t)(c->paddr + o - c->w0),
				  c->snap + (o - c->w0), len))
				mismatch("child store through the private mapping of W");
			break;
		case 3:		/* the same bytes again, inside the size */
			if (o >= c->fend)
				break;
			if (len > c->fend - o)
				len = c->fend - o;
			if (pwrite(W.fds[s][c->fdi].fd, c->snap + (o - c->w0), len, o) !=
			    (ssize_t)len)
				mismatch("child rewrite: %s", ename(errno));
			break;
		case 4:
			for (i = 0; i < c->nmaps; i++) {
				struct mapent *m = &c->maps[i];

				if (m->prot & PROT_WRITE) {
					int sig = gcopy((char *)(uintptr_t)(m->addr + o),
							c->snap + (o - c->w0), len);

					if (sig)
						mismatch("child rewrite through map: %s",
							 sname(sig));
					break;
				}
			}
			break;
		case 5: {
			struct morsel_range r;

			memset(&r, 0, sizeof(r));
			r.offset = o;
			r.length = len;
			if (ioctl(W.fds[s][c->fdi].fd, MORSEL_IOC_POPULATE, &r))
				mismatch("child POPULATE: %s", ename(errno));
			break;
		}
		case 6:
			if (c->nmaps && (c->maps[i = below(c->nmaps)].prot &
					 PROT_READ)) {
				struct mapent *m = &c->maps[i];

				if (madvise((void *)(uintptr_t)(m->addr + o), len,
					    MADV_POPULATE_READ))
					mismatch("child MADV_POPULATE_READ: %s",
						 ename(errno));
			}
			break;
		case 7:
			if (c->nmaps) {
				struct mapent *m = &c->maps[below(c->nmaps)];

				if (mprotect((void *)(uintptr_t)m->addr, m->len,
					     m->prot))
					mismatch("child mprotect same: %s",
						 ename(errno));
			}
			break;
		default:
			sched_yield();
		}
	}
	/* keep the mappings until the parent stops or kills us */
	for (iter = 0; iter < 120000 &&
	     !__atomic_load_n(&sh->w[W.id].stop, __ATOMIC_SEQ_CST); iter++)
		usleep(500);
	_exit(W.printed ? 1 : 0);
}

/* Fork a child on a window of @s (see the top of the file). */
static void op_child(int s)
{
	struct child *c = &W.ch;
	struct slot *sl = S(s);
	uint64_t psz = PALIGN(sl->size), p, e = ext(sl->order);
	int fdi = get_fd(s, 3), i, sv[2] = { -1, -1 }, sendfd = -1;
	pid_t pid;

	if (fdi < 0 || !sl->size || child_alive())
		return;
	memset(c, 0, sizeof(*c));
	c->slot = s;
	c->fdi = fdi;
	p = model_page(s);
	if (p == NOPAGE || p * PG >= psz || one_in(3))
		p = below(psz / PG);
	c->w0 = p * PG;
	c->wlen = PG * (1 + below(WMAX));
	if (c->wlen > psz - c->w0)
		c->wlen = psz - c->w0;
	c->fend = c->w0 + c->wlen < sl->size ? c->w0 + c->wlen : sl->size;
	c->mode = one_in(2) ? 'A' : 'B';
	if (c->mode == 'A' && !mp_room(sl, c->w0, c->wlen))
		c->mode = 'B';
	c->kill = one_in(2);
	c->left = 1 + below(8);
	c->priv = one_in(2);
	c->pprot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
	c->rng = rnd();
	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		/* paged mappings are inherited too, but count nowhere */
		if (m->dontfork || m->paged)
			continue;
		c->holds[m->slot]++;
		c->holds0[m->slot] += !m->vorder;
		/* the child uses those that reach W (extents differ now) */
		if (m->slot == s && m->len >= c->w0 + c->wlen)
			c->maps[c->nmaps++] = *m;
	}
	/* fd passing: the child receives the fd it maps through */
	c->pass = one_in(2);
	if (c->pass) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			fatal("socketpair");
		c->sock = sv[1];
		if (one_in(2) && sl->named) {
			c->pass_mode = one_in(2) ? O_RDONLY : O_RDWR;
			sendfd = open(path(sl->name), c->pass_mode | O_CLOEXEC);
			if (sendfd < 0) {
				mismatch("open %s for passing: %s", sl->name,
					 ename(errno));
				c->pass_mode = O_RDWR;
			}
		} else {
			c->pass_mode = O_RDWR;
		}
	}
	c->newmap = !c->nmaps || one_in(2);
	if (c->newmap && c->nmaps < MAPS_ROOM + 1) {
		int mode = c->pass ? c->pass_mode : O_RDWR;

		c->newprot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
		if (one_in(4))
			c->newprot |= PROT_EXEC;
		c->newexp = 0;
		/* get_unmapped_area comes before the check of the fd's mode */
		if (sl->bound && occupied(sl->bound, e, 1))
			c->newexp = EEXIST;
		else if ((c->newprot & PROT_WRITE) && !fd_w(mode))
			c->newexp = EACCES;
		if (!c->newexp) {
			memset(&c->maps[c->nmaps], 0, sizeof(c->maps[0]));
			c->maps[c->nmaps].slot = s;
			c->maps[c->nmaps].len = e;
			c->maps[c->nmaps].vorder = sl->order;
			c->maps[c->nmaps].prot = c->newprot;
			c->maps[c->nmaps].addr = 0;
			c->nmaps++;
		}
	} else {
		c->newmap = 0;
	}
	/* the writes of mode A, and W as it must read afterwards */
	m_read(sl, c->w0, c->wlen, c->snap);
	if (c->mode == 'A') {
		c->nl = 1 + below(LMAX);
		for (i = 0; i < c->nl; i++) {
			struct lwrite *l = &c->l[i];
			static uint8_t data[2 * PG];

			/* inside the size: a killed child's writes are redone by pwrite */
			l->off = c->w0 + below(c->fend - c->w0);
			l->len = 1 + below(2 * PG);
			if (l->len > c->fend - l->off)
				l->len = c->fend - l->off;
			l->pat = rnd();
			l->how = c->nmaps && one_in(2) ? (int)below(c->nmaps) : -1;
			l->effective = l->how < 0 ||
				       (c->maps[l->how].prot & PROT_WRITE);
			if (l->effective) {
				pattern(data, l->len, l->pat);
				memcpy(c->snap + (l->off - c->w0), data, l->len);
			}
		}
	}
	note("child on slot %d mode %c W %#" PRIx64 "+%#" PRIx64 " %d writes, %s, "
	     "pass %d, new map %d prot %d, private %d prot %d, %d ops", s,
	     c->mode, c->w0, c->wlen, c->nl, c->kill ? "kill -9" : "stop",
	     c->pass, c->newmap, c->newprot, c->priv, c->pprot, c->left);
	__atomic_store_n(&sh->w[W.id].stop, 0, __ATOMIC_SEQ_CST);
	c->mism0 = __atomic_load_n(&sh->w[W.id].mismatches, __ATOMIC_SEQ_CST);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0) {
		if (c->pass)
			close(sv[0]);
		child_main();
	}
	c->pid = pid;
	if (c->pass) {
		int r = morsel_send_fd(sv[0], sendfd >= 0 ? sendfd : W.fds[s][fdi].fd);

		if (r)
			mismatch("morsel_send_fd: %s", ename(-r));
		close(sv[0]);
		close(sv[1]);
		if (sendfd >= 0)
			close(sendfd);
	}
}

/* Stop or kill the child, then make W and its population exact again. */
static void reap_child(void)
{
	struct child *c = &W.ch;
	int s = c->slot, status, i;
	struct slot *sl = S(s);
	uint8_t *data = iobuf;

	note("reap child on slot %d (%s)", s, c->kill ? "kill -9" : "stop");
	if (c->kill)
		kill(c->pid, SIGKILL);
	else
		__atomic_store_n(&sh->w[W.id].stop, 1, __ATOMIC_SEQ_CST);
	if (waitpid(c->pid, &status, 0) != c->pid)
		fatal("waitpid");
	c->pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
		/* the child reported its mismatches itself */
		if (__atomic_load_n(&sh->w[W.id].mismatches, __ATOMIC_SEQ_CST) ==
		    c->mism0)
			mismatch("child on slot %d exited 1 without a report", s);
	} else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
		   !(c->kill && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		mismatch("child on slot %d ended with status %#x", s, status);
	}
	/* after a clean exit, W must already read as planned */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		uint64_t n = c->fend - c->w0;
		ssize_t r = pread(W.fds[s][c->fdi].fd, data, n, c->w0);

		if (r != (ssize_t)n || memcmp(data, c->snap, n))
			mismatch("W of slot %d after the child differs", s);
	}
	/* re-apply the writes (a killed child may have done only some) */
	for (i = 0; i < c->nl; i++) {
		struct lwrite *l = &c->l[i];
		static uint8_t buf[2 * PG];

		if (!l->effective)
			continue;
		pattern(buf, l->len, l->pat);
		if (pwrite(W.fds[s][c->fdi].fd, buf, l->len, l->off) != (ssize_t)l->len)
			mismatch("re-applying a child write: %s", ename(errno));
	}
	for (i = 0; i < (int)(c->wlen / PG); i++) {
		uint8_t *pg = c->snap + i * PG;

		if (all_zero(pg, PG))
			m_zero(sl, c->w0 + i * PG, PG);
		else
			m_write(sl, c->w0 + i * PG, pg, PG);
	}
	x_range(s, c->fdi, 0, c->w0, c->wlen, 0);
}

/*
 * The parent's ops on the target slot while the child runs: nothing that
 * changes the size, order or binding; W only in content-preserving ways
 * (and not at all when the child writes W).
 */
static int hits_w(uint64_t a, uint64_t b)
{
	return a < W.ch.w0 + W.ch.wlen && W.ch.w0 < b;
}

static int w_zero(int s, uint64_t a, uint64_t b)
{
	uint64_t lo = a > W.ch.w0 ? a : W.ch.w0;
	uint64_t hi = b < W.ch.w0 + W.ch.wlen ? b : W.ch.w0 + W.ch.wlen;
	static uint8_t buf[WMAX * PG];

	if (lo >= hi)
		return 1;
	m_read(S(s), lo, hi - lo, buf);
	return all_zero(buf, hi - lo);
}

static void concurrent_raise(int s, int fdi)
{
	struct slot *sl = S(s);
	int o = sl->order + 1 + below(max_order - sl->order), err;
	int prot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
	char *p;

	if (one_in(2) || W.nmaps >= MAX_MAPS) {
		note("SET_MIN_ORDER slot %d order %d during the child", s, o);
		err = morsel_set_min_order(W.fds[s][fdi].fd, o);
		errno = -err;
		if (!check("SET_MIN_ORDER", err ? -1 : 0, 0, 0))
			return;
		sl->min_order = o;
		m_raise(sl, o);
		return;
	}
	note("mmap slot %d len %#" PRIx64 " during the child", s, ext(o));
	p = mmap(NULL, ext(o), prot, MAP_SHARED, W.fds[s][fdi].fd, 0);
	if (!check("mmap shared longer", p == MAP_FAILED ? -1 : 0, 0, 0))
		return;
	if ((uintptr_t)p % ext(o))
		mismatch("mmap slot %d: at %p, want it aligned to %#" PRIx64, s, p,
			 ext(o));
	add_map(s, (uintptr_t)p, ext(o), prot, MK_MOUNTED, o, 0);
	m_raise(sl, o);
}

static void concurrent_op(int s)
{
	struct child *c = &W.ch;
	struct slot *sl = S(s);
	uint64_t sz = sl->size, psz = PALIGN(sz), off, len, end;
	int k = below(12), fdi = c->fdi, mi;
	static uint8_t data[3 * PG];

	off = below(psz);
	if (one_in(2))
		off = c->w0 + below(c->wlen);
	len = 1 + below(2 * PG);
	switch (k) {
	case 0:	case 1:		/* read */
		if (c->mode == 'A' && hits_w(off, off + len))
			break;
		x_read(s, fdi, off, len, below(3), 0);
		return;
	case 2:			/* new bytes outside W, inside the size */
		if (off >= sz || hits_w(off, off + len))
			break;
		if (len > sz - off)
			len = sz - off;
		if (!mp_room(sl, off, len))
			break;
		pattern(data, len, rnd());
		x_write(s, fdi, off, len, 0, data);
		return;
	case 3:			/* the same bytes again */
		if (off >= sz || (c->mode == 'A' && hits_w(off, off + len)))
			break;
		if (len > sz - off)
			len = sz - off;
		m_read(sl, off, len, data);
		x_write(s, fdi, off, len, 0, data);
		return;
	case 4:
		off = PDOWN(off);
		len = PG * (1 + below(8));
		if (off + len > psz)
			len = psz - off;
		x_range(s, fdi, 0, off, len, 0);
		return;
	case 5: case 6:		/* evict / punch: outside W, or zeros of W */
		end = off + len;
		if (k == 5) {
			off = PDOWN(off);
			len = PG * (1 + below(4));
			if (off + len > psz)
				len = psz - off;
			end = off + len;
		}
		if (end >= sz)
			end = psz;	/* the tail of the last page is zeroed */
		if (hits_w(off, end) && (c->mode == 'A' || !w_zero(s, off, end)))
			break;
		if (k == 5)
			x_range(s, fdi, 1, off, len, 0);
		else
			x_fallocate(s, fdi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				    off, len);
		return;
	case 7:			/* through an own shared mapping */
		mi = pick_map(s, 1);
		if (mi < 0)
			break;
		if (off >= W.maps[mi].len)
			off = W.maps[mi].len - 1;
		if (len > W.maps[mi].len - off)
			len = W.maps[mi].len - off;
		if (one_in(2)) {
			if (c->mode == 'A' && hits_w(off, off + len))
				break;
			note("load slot %d map %#" PRIx64 " off %#" PRIx64, s,
			     W.maps[mi].addr, off);
			x_access(&W.maps[mi], off, len, 0, NULL, "load");
		} else {
			if (off >= sz || hits_w(off, off + len))
				break;
			if (len > sz - off)
				len = sz - off;
			if (!mp_room(sl, off, len))
				break;
			pattern(data, len, rnd());
			note("store slot %d map %#" PRIx64 " off %#" PRIx64, s,
			     W.maps[mi].addr, off);
			x_access(&W.maps[mi], off, len, 1, data, "store");
		}
		return;
	case 8:
		op_rename(s);
		return;
	case 10:
		/*
		 * Raise the order under the child's faults (the root is in
		 * place, so the new tables are known): no content changes.
		 */
		if (sl->bound || !sl->order || sl->order >= max_order ||
		    tab_find(sl, sl->order, 0) < 0)
			break;
		concurrent_raise(s, fdi);
		return;
	case 9:
		if (W.nmaps < MAX_MAPS && one_in(2)) {
			int prot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
			uint64_t e = ext(sl->order);
			char *p;

			/* the extent of the current order: no order change */
			note("mmap slot %d during the child", s);
			p = mmap(NULL, e, prot, MAP_SHARED, W.fds[s][fdi].fd, 0);
			if (sl->bound && occupied(sl->bound, e, 0)) {
				check("mmap (bound, occupied)", p == MAP_FAILED ? -1 : 0,
				      EEXIST, 0);
				if (p != MAP_FAILED)
					munmap(p, e);
				return;
			}
			if (!check("mmap", p == MAP_FAILED ? -1 : 0, 0, 0))
				return;
			add_map(s, (uintptr_t)p, e, prot, MK_MOUNTED, sl->order, 0);
		} else if ((mi = pick_map(s, 1)) >= 0) {
			note("munmap slot %d map %#" PRIx64 " during the child", s,
			     W.maps[mi].addr);
			if (check("munmap", munmap((void *)(uintptr_t)W.maps[mi].addr,
						   W.maps[mi].len), 0, 0))
				drop_map(mi);
		}
		return;
	default:
		break;
	}
	x_stat(s, 0);
}

/* ---- resets and hand-offs ---- */

static int needs_reset(int s)
{
	struct slot *sl = S(s);

	return sl->live && (sl->nruns > RESET_RUNS ||
			    runs_count(sl) > RESET_PAGES ||
			    sl->ntables > RESET_TABLES ||
			    sl->churn > RESET_CHURN);
}

static void unmap_all(int s)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		if (W.maps[i].slot != s)
			continue;
		note("munmap slot %d map %#" PRIx64, s, W.maps[i].addr);
		check("munmap", munmap((void *)(uintptr_t)W.maps[i].addr,
				       W.maps[i].len), 0, 0);
		drop_map(i--);
	}
}

static void close_all(int s)
{
	while (W.nfds[s]) {
		close(W.fds[s][W.nfds[s] - 1].fd);
		W.nfds[s]--;
	}
}

/* Free what a slot has accumulated: truncate to 0 and back. */
static void reset_slot(int s)
{
	struct slot *sl = S(s);
	uint64_t size = sl->size;
	int fdi;

	note("reset slot %d (%d runs, %" PRIu64 " pages, %d tables, churn %"
	     PRIu64 ")", s, sl->nruns, runs_count(sl), sl->ntables, sl->churn);
	unmap_all(s);
	check_dead(s);
	if (!sl->live)
		return;
	fdi = get_fd(s, 1);
	if (fdi < 0) {
		close_all(s);
		check_dead(s);
		return;
	}
	if (!sl->size)		/* a real shrink frees every table */
		x_truncate(s, fdi, 1);
	x_truncate(s, fdi, 0);
	if (!sl->size && sl->tables_bad) {
		sl->ntables = 0;	/* known again */
		sl->tables_bad = 0;
	}
	x_truncate(s, fdi, size);
	x_stat(s, 1);
	sl->churn = 0;
}

struct handoff {
	int slot, has_fd, mode;
};

static int full_io(int fd, void *buf, size_t len, int wr)
{
	char *p = buf;

	while (len) {
		ssize_t r = wr ? write(fd, p, len) : read(fd, p, len);

		if (r <= 0)
			return -1;
		p += r;
		len -= r;
	}
	return 0;
}

static void do_handoff(void)
{
	struct handoff h;
	int k = below(NFILES), s = W.owned[k], fdi = -1, fd;
	struct slot *sl = S(s);

	if (nprocs == 1 || !W.ring_ok)
		return;
	unmap_all(s);
	check_dead(s);
	memset(&h, 0, sizeof(h));
	h.slot = s;
	if (sl->live) {
		fdi = get_fd(s, 3);
		if (fdi < 0)
			fdi = pick_fd(s, 0);
	}
	h.has_fd = fdi >= 0;
	h.mode = fdi >= 0 ? W.fds[s][fdi].mode : 0;
	note("hand-off: send slot %d (%s) to w%d", s,
	     h.has_fd ? mname(h.mode) : "no fd", (W.id + 1) % nprocs);
	if (full_io(W.send_sock, &h, sizeof(h), 1)) {
		W.ring_ok = 0;
		return;
	}
	if (h.has_fd) {
		int r = morsel_send_fd(W.send_sock, W.fds[s][fdi].fd);

		if (r)
			mismatch("morsel_send_fd to w%d: %s", (W.id + 1) % nprocs,
				 ename(-r));
	}
	close_all(s);
	W.owned[k] = -1;
	if (full_io(W.recv_sock, &h, sizeof(h), 0)) {
		/* the previous worker is gone; it was reported */
		W.ring_ok = 0;
		W.owned[k] = s;		/* keep the model consistent */
		sl->live = sl->named;
		return;
	}
	W.owned[k] = h.slot;
	note("hand-off: received slot %d (%s)", h.slot,
	     h.has_fd ? mname(h.mode) : "no fd");
	if (h.has_fd) {
		fd = morsel_recv_fd(W.recv_sock);
		if (fd < 0) {
			mismatch("morsel_recv_fd: %s", ename(-fd));
			W.ring_ok = 0;
			return;
		}
		add_fd(h.slot, fd, h.mode);
		x_stat(h.slot, 1);
	}
}

/* ---- the worker ---- */

enum {
	OP_OPEN, OP_CLOSE, OP_TRUNC, OP_WRITE, OP_READ, OP_MMAP, OP_MUNMAP,
	OP_MPROTECT, OP_MREMAP, OP_MADVISE, OP_POPULATE, OP_EVICT, OP_PUNCH,
	OP_FALLOC, OP_BIND, OP_RENAME, OP_UNLINK, OP_LOAD, OP_STORE, OP_EXEC,
	OP_STAT, OP_CHILD, OP_CREATE, OP_MINORDER, OP_LINK, NOPS
};

static const int weight[NOPS] = {
	[OP_OPEN] = 4, [OP_CLOSE] = 3, [OP_TRUNC] = 6, [OP_WRITE] = 12,
	[OP_READ] = 10, [OP_MMAP] = 9, [OP_MUNMAP] = 5, [OP_MPROTECT] = 3,
	[OP_MREMAP] = 3, [OP_MADVISE] = 5, [OP_POPULATE] = 4, [OP_EVICT] = 3,
	[OP_PUNCH] = 4, [OP_FALLOC] = 3, [OP_BIND] = 2, [OP_RENAME] = 2,
	[OP_UNLINK] = 1, [OP_LOAD] = 12, [OP_STORE] = 10, [OP_EXEC] = 1,
	[OP_STAT] = 5, [OP_CHILD] = 2, [OP_CREATE] = 1, [OP_MINORDER] = 2,
	[OP_LINK] = 2,
};

static int pick_op(void)
{
	int i, total = 0, r;

	for (i = 0; i < NOPS; i++)
		total += weight[i];
	r = below(total);
	for (i = 0; i < NOPS; i++) {
		r -= weight[i];
		if (r < 0)
			return i;
	}
	return OP_STAT;
}

static void one_op(void)
{
	int s = W.owned[below(NFILES)], op;

	if (!child_alive() && needs_reset(s)) {
		reset_slot(s);
		return;
	}
	if (!S(s)->live) {
		if (one_in(8))
			op_open(s);
		else
			op_create(s);
		return;
	}
	if (is_target(s)) {
		concurrent_op(s);
		return;
	}
	op = pick_op();
	/* ops that need a mapping map first, now and then */
	if ((op == OP_LOAD || op == OP_STORE || op == OP_MUNMAP ||
	     op == OP_MPROTECT || op == OP_MREMAP || op == OP_MADVISE ||
	     op == OP_EXEC) && pick_map(s, 0) < 0)
		op = OP_MMAP;
	switch (op) {
	case OP_OPEN: op_open(s); break;
	case OP_CLOSE: op_close(s); break;
	case OP_TRUNC: op_truncate(s); break;
	case OP_WRITE: op_write(s); break;
	case OP_READ: op_read(s); break;
	case OP_MMAP: op_mmap(s); break;
	case OP_MUNMAP: op_munmap(s); break;
	case OP_MPROTECT: op_mprotect(s); break;
	case OP_MREMAP: op_mremap(s); break;
	case OP_MADVISE: op_madvise(s); break;
	case OP_POPULATE: op_range(s, 0); break;
	case OP_EVICT: op_range(s, 1); break;
	case OP_PUNCH: op_punch(s); break;
	case OP_FALLOC: op_falloc(s); break;
	case OP_BIND: op_bind(s); break;
	case OP_RENAME: op_rename(s); break;
	case OP_UNLINK: op_unlink(s); break;
	case OP_LOAD: op_maccess(s, 0); break;
	case OP_STORE: op_maccess(s, 1); break;
	case OP_EXEC: op_exec(s); break;
	case OP_CHILD:
		if (child_alive())
			x_stat(s, 1);
		else
			op_child(s);
		break;
	case OP_CREATE: op_create(s); break;
	case OP_STAT: op_stat(s); break;
	case OP_MINORDER: op_min_order(s); break;
	case OP_LINK: op_link(s); break;
	default: x_stat(s, 1);
	}
}

static void worker_main(int id, uint64_t nops, uint64_t handoff_limit)
{
	struct sigaction sa;
	int i;

	W.id = id;
	W.nops = nops;
	W.rng = mix(seed * 0x100000001b3ULL + id + 1);
	W.ring_ok = 1;
	for (i = 0; i < NFILES; i++)
		W.owned[i] = id * NFILES + i;
	for (i = 0; i < MAX_COPIES; i++)
		W.copies[i].va = NOPAGE;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	for (W.op = 0; W.op < W.nops; W.op++) {
		if ((W.op + 1) % HANDOFF_EVERY == 0 && W.op < handoff_limit) {
			if (child_alive())
				reap_child();
			do_handoff();
		} else if (child_alive() && --W.ch.left <= 0) {
			reap_child();
		} else {
			one_op();
		}
		__atomic_store_n(&sh->w[id].ops, W.op + 1, __ATOMIC_RELAXED);
	}
	if (child_alive())
		reap_child();
	/* final checks, then remove everything */
	for (i = 0; i < NFILES; i++) {
		int s = W.owned[i];

		if (s < 0)
			continue;
		if (S(s)->live)
			x_stat(s, 1);
		unmap_all(s);
		close_all(s);
		if (S(s)->named == 2) {
			note("unlink slot %d %s", s, S(s)->name2);
			check("unlink", unlink(path(S(s)->name2)), 0, 0);
		}
		if (S(s)->named) {
			note("unlink slot %d %s", s, S(s)->name);
			check("unlink", unlink(path(S(s)->name)), 0, 0);
		}
		S(s)->named = 0;
		check_dead(s);
	}
	fflush(stdout);
	_exit(0);
}

/* ---- the coordinator ---- */

static long counter(const char *name)
{
	char p[128];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/fs/morselfs/%s", name);
	f = fopen(p, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* --stats: how often each checked call gave each result, over all workers. */
struct stat_row {
	char what[28];
	int err;
	uint64_t n;
};

static int stat_cmp(const void *a, const void *b)
{
	const struct stat_row *x = a, *y = b;
	int c = strcmp(x->what, y->what);

	return c ? c : x->err - y->err;
}

static void print_stats(void)
{
	static struct stat_row all[MAXP * TALLY];
	int i, j, k, n = 0;

	for (i = 0; i < nprocs; i++) {
		for (j = 0; j < TALLY && sh->w[i].tally[j].what[0]; j++) {
			for (k = 0; k < n; k++)
				if (all[k].err == sh->w[i].tally[j].err &&
				    !strcmp(all[k].what, sh->w[i].tally[j].what))
					break;
			if (k == n) {
				memcpy(all[n].what, sh->w[i].tally[j].what,
				       sizeof(all[n].what));
				all[n++].err = sh->w[i].tally[j].err;
			}
			all[k].n += sh->w[i].tally[j].n;
		}
	}
	qsort(all, n, sizeof(all[0]), stat_cmp);
	for (k = 0; k < n; k = j) {
		printf("fuzz: stats %-26s", all[k].what);
		for (j = k; j < n && !strcmp(all[j].what, all[k].what); j++)
			printf(" %s %" PRIu64, ename(all[j].err), all[j].n);
		printf("\n");
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: fuzz [--seed S] [--ops N] [--procs P] [--trace] [--stats] [--lenient]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "pages", "tables", "morsels" };
	uint64_t nops = 10000, total = 0, bad = 0, per, hlimit;
	int i, seeded = 0, socks[MAXP][2], status;
	long base[3], now[3];
	const char *mnt = getenv("MORSEL_MNT"), *pg = getenv("MORSEL_PAGING");
	pid_t pids[MAXP];
	struct timespec t0, t1;
	double secs;
	DIR *d;
	struct dirent *de;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
			seeded = 1;
		} else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
			nops = strtoull(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--procs") && i + 1 < argc) {
			nprocs = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--trace")) {
			trace_on = 1;
		} else if (!strcmp(argv[i], "--lenient")) {
			lenient = 1;
		} else if (!strcmp(argv[i], "--stats")) {
			stats = 1;
		} else {
			usage();
		}
	}
	if (nprocs < 1 || nprocs > MAXP)
		usage();
	if (!mnt || !pg) {
		fprintf(stderr, "fuzz: MORSEL_MNT and MORSEL_PAGING must be set (run under vm/run)\n");
		return 2;
	}
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = (uint64_t)ts.tv_sec * 1000003 + ts.tv_nsec / 1000;
		seed %= 1000000007;
	}
	l5 = !strcmp(pg, "5");
	max_order = l5 ? 4 : 3;
	max_bytes = ext(max_order);
	task_max = (l5 ? 1ULL << 56 : 1ULL << 47) - PG;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("fuzz: seed %" PRIu64 ", %" PRIu64 " ops, %d procs, %d-level paging%s\n",
	       seed, nops, nprocs, l5 ? 5 : 4, lenient ? ", lenient" : "");
	printf("fuzz: replay with: tests/fuzz --seed %" PRIu64 " --ops %" PRIu64
	       " --procs %d%s\n", seed, nops, nprocs, lenient ? " --lenient" : "");
	for (i = 0; i < 3; i++)
		base[i] = counter(names[i]);
	snprintf(dir, sizeof(dir), "%s/fuzz.%d", mnt, (int)getpid());
	if (mkdir(dir, 0755)) {
		perror("fuzz: mkdir");
		return 2;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	badbuf = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED || badbuf == MAP_FAILED) {
		perror("fuzz: mmap");
		return 2;
	}
	for (i = 0; i < nprocs * NFILES; i++)
		m_new(&sh->slots[i], 0);
	for (i = 0; i < nprocs; i++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, socks[i])) {
			perror("fuzz: socketpair");
			return 2;
		}
	per = nops / nprocs;
	hlimit = per;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fflush(stdout);
	for (i = 0; i < nprocs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fuzz: fork");
			return 2;
		}
		if (pids[i] == 0) {
			int j;

			/* send to i + 1 on socks[i][0], receive from i - 1 */
			W.send_sock = socks[i][0];
			W.recv_sock = socks[(i + nprocs - 1) % nprocs][1];
			for (j = 0; j < nprocs; j++) {
				if (socks[j][0] != W.send_sock)
					close(socks[j][0]);
				if (socks[j][1] != W.recv_sock)
					close(socks[j][1]);
			}
			worker_main(i, per + ((uint64_t)i < nops % nprocs),
				    hlimit);
		}
	}
	for (i = 0; i < nprocs; i++) {
		close(socks[i][0]);
		close(socks[i][1]);
	}
	for (i = 0; i < nprocs; i++) {
		if (waitpid(pids[i], &status, 0) != pids[i]) {
			perror("fuzz: waitpid");
			return 2;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("fuzz: MISMATCH worker w%d ended with status %#x after %"
			       PRIu64 " ops\n", i, status, sh->w[i].ops);
			bad++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < nprocs; i++) {
		total += sh->w[i].ops;
		bad += sh->w[i].mismatches;
	}
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("fuzz: %" PRIu64 " ops in %.1f s: %.0f ops/s\n", total, secs,
	       secs > 0 ? total / secs : 0.0);
	if (stats)
		print_stats();
	/* nothing may be left behind */
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		char p[600];

		if (de->d_name[0] == '.')
			continue;
		printf("fuzz: MISMATCH file left after cleanup: %s\n", de->d_name);
		bad++;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	if (rmdir(dir)) {
		printf("fuzz: MISMATCH rmdir %s: %s\n", dir, strerror(errno));
		bad++;
	}
	/* the counters return to their values (the kernel may free lazily) */
	for (i = 0; i < 5000; i++) {
		int j, same = 1;

		for (j = 0; j < 3; j++) {
			now[j] = counter(names[j]);
			same &= now[j] == base[j];
		}
		if (same)
			break;
		usleep(2000);
	}
	for (i = 0; i < 3; i++) {
		if (now[i] != base[i]) {
			printf("fuzz: MISMATCH counter left above zero after cleanup: "
			       "%s %ld, was %ld before the run\n", names[i], now[i],
			       base[i]);
			bad++;
		}
	}
	printf("fuzz: %" PRIu64 " ops, seed %" PRIu64 ", %" PRIu64 " mismatches\n",
	       total, seed, bad);
	return bad ? 1 : 0;
}
