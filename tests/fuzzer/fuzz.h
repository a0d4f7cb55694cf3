/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tests/fuzzer/fuzz.h: what the fuzzer's files share: the limits, the
 * model's types (struct slot and the shared region), each process's state
 * (struct worker W with its fds, mappings, copies and child), the
 * process-wide variables main.c defines, the PRNG and small helpers
 * (inline), and the functions each file gives the others.  What the
 * fuzzer does and why its oracle stays exact is at the top of main.c.
 *
 * Rules: one program, tests/fuzz_bin, built from the .c files here
 * (FUZZ_SRCS in the Makefile); each includes this header first (it
 * defines _GNU_SOURCE).  Every process is single-threaded; the state is
 * either in the shared region sh (the slots' models, each changed only by
 * its slot's owner, and the workers' counters) or private to the process
 * (W, the options).  The PRNG is the worker's (W.rng): the order of the
 * calls to rnd(), below() and one_in() is what makes a seed replay, so no
 * call may be added, removed or moved.
 */
#ifndef FUZZ_H
#define FUZZ_H

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
#define MODEL_HUGE	64	/* 2 MiB leaves per slot */
#define HUGE_PAGES	512	/* pages under a 2 MiB leaf */
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
	uint64_t resv_start;	/* fallocate(KEEP_SIZE)'s reserved range past */
	uint64_t resv_end;	/*   the size (size.c), 0 and 0 if none */
	uint64_t churn;		/* populating events since the last reset */
	int nruns;
	struct run runs[MODEL_RUNS];
	int ntables;
	int tables_bad;		/* after a mismatch: unknown until a reset */
	struct table tables[MODEL_TABLES];
	int huge_mode;		/* MORSEL_IOC_SET_HUGE's mode (huge.c) */
	int nhuge;		/* 2 MiB leaves: their 2 MiB indices */
	uint64_t huge[MODEL_HUGE];
	struct mpage pages[MODEL_PAGES];
};

#define TALLY 128

struct wstat {
	uint64_t ops;
	uint64_t mismatches;
	uint64_t huge_made;		/* 2 MiB leaves populated */
	uint64_t huge_fallbacks;	/* leaves the module could not make */
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
	int maywrite;		/* shared: the fd could write (VM_MAYWRITE) */
	int vorder;		/* mounted: the VMA's order; len is its extent */
	uint64_t off;		/* file offset of addr (mounted: 0) */
};

/* Kinds of mapping (add_map): mounted, private, shared page by page. */
enum { MK_MOUNTED, MK_PRIVATE, MK_PAGED };

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
	/*
	 * How the current op populates (model.c runs_add): the caller's
	 * huge-page hint (0 none, 1 asked: MADV_HUGEPAGE or MORSEL_POPULATE_HUGE,
	 * 2 refused: MADV_NOHUGEPAGE; the encoding of struct mapent.huge)
	 * and whether it fills a range at once
	 * (POPULATE, fallocate) or page by page (faults, write).  Reset
	 * before every op.
	 */
	int hint, range;
	char trace[TRACE][200];
	int tpos;
	int printed;
};

/* ---- the process-wide state (defined in main.c) ---- */

extern struct shared *sh;
extern struct worker W;
extern int nprocs, max_order, trace_on, lenient;
extern int inst_huge;		/* the instance's huge= for the run (MORSEL_HUGE_*) */
extern int mem_nodes;		/* NUMA nodes with memory: 0 .. mem_nodes - 1 */
extern uint64_t max_bytes, task_max;
extern char dir[256];
extern char *badbuf;		/* a PROT_NONE page: a bad user buffer */
/* WMAX * PG + PG bytes each; with --mm in the worker's anonymous memory */
extern uint8_t *iobuf, *expbuf, *wrbuf;

/* ---- PRNG ---- */

static inline uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline uint64_t rnd(void)
{
	W.rng += 0x9e3779b97f4a7c15ULL;
	return mix(W.rng);
}

static inline uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static inline int one_in(uint64_t n)
{
	return below(n) == 0;
}

/* ---- helpers: sizes and the model ---- */

static inline uint64_t ext(int order)
{
	return PG << (9 * order);
}

static inline struct slot *S(int s)
{
	return &sh->slots[s];
}

/* ---- small helpers ---- */

/* The huge-page mode in force for @sl: its own, or the instance's. */
static inline int huge_mode_of(const struct slot *sl)
{
	return sl->huge_mode == MORSEL_HUGE_INHERIT ? inst_huge : sl->huge_mode;
}

static inline int child_alive(void)
{
	return W.ch.pid > 0;
}

static inline int is_target(int s)
{
	return child_alive() && W.ch.slot == s;
}

static inline int fd_w(int mode)
{
	return mode != O_RDONLY;
}

static inline int fd_r(int mode)
{
	return mode != O_WRONLY;
}

/* ---- report.c: trace, checks, reports ---- */

void pattern(uint8_t *buf, uint64_t len, uint64_t pat);
void note(const char *fmt, ...);
void mismatch(const char *fmt, ...);
void fatal(const char *what);
const char *ename(int e);
void tally(const char *what, int err);
int check(const char *what, long ret, int want, int want2);

/* ---- model.c: the model ---- */

int order_of(uint64_t size);
int wanted(struct slot *sl, uint64_t size);
void m_resv_trim(struct slot *sl, uint64_t size);
int bound_ok(uint64_t bound, int order);
int mp_count(struct slot *sl);
int mp_room(struct slot *sl, uint64_t off, uint64_t len);
int all_zero(const uint8_t *p, uint64_t len);
void m_read(struct slot *sl, uint64_t off, uint64_t len, uint8_t *out);
void m_write(struct slot *sl, uint64_t off, const uint8_t *buf, uint64_t len);
void m_zero(struct slot *sl, uint64_t off, uint64_t len);
void m_zero_past_size(struct slot *sl, uint64_t size);
int runs_has(struct slot *sl, uint64_t idx);
uint64_t runs_count(struct slot *sl);
int tab_find(struct slot *sl, int level, uint64_t idx);
uint64_t tab_count(struct slot *sl, int level);
void runs_add(struct slot *sl, uint64_t a, uint64_t b);
int huge_find(struct slot *sl, uint64_t c);
void huge_split(struct slot *sl, uint64_t c);
void huge_collapse(struct slot *sl, uint64_t c);
int chunk_full(struct slot *sl, uint64_t c);
void m_new(struct slot *sl, uint64_t size);
void m_raise(struct slot *sl, int order);
int own_maps_kind(int s, int kind);
int mapped(int s);
void check_dead(int s);
struct copy *cp_find(uint64_t va);
int cp_count(void);
void cp_drop(uint64_t a, uint64_t len);
void cp_move(uint64_t a, uint64_t len, uint64_t to);
int cp_need(struct mapent *m, uint64_t rel, uint64_t len);
void drop_map(int i);
void unmap_model(uint64_t a, uint64_t len);
void m_free_pages(int s, uint64_t first, uint64_t last);
void m_fit(int s);
void m_resize(int s, uint64_t size);
void m_evict(int s, uint64_t start, uint64_t end);
uint64_t model_page(int s);
int mp_in(struct slot *sl, uint64_t off, uint64_t len);
void m_clone(int d, uint64_t doff, int s, uint64_t soff, uint64_t plen);

/* ---- names.c: names and fds ---- */

const char *path(const char *name);
const char *mname(int mode);
void add_fd(int s, int fd, int mode);
int pick_fd(int s, int need);
int get_fd(int s, int need);
void op_create(int s);
void op_open(int s);
void op_close(int s);
void op_rename(int s);
void op_unlink(int s);
void op_link(int s);
void close_all(int s);

/* ---- files.c: data operations, STAT ---- */

void x_read(int s, int fdi, int64_t off, uint64_t len, int method, int bad);
void x_write(int s, int fdi, int64_t off, uint64_t len, int method,
	     const uint8_t *data);
void x_range(int s, int fdi, int evict, uint64_t off, uint64_t len, int bad);
void x_fallocate(int s, int fdi, int mode, int64_t off, int64_t len);
void x_truncate(int s, int fdi, int64_t size);
void x_stat(int s, int full);
void x_set_huge(int s, int fdi, uint64_t mode);
void op_huge(int s);
void op_collapse(int s);
void op_migrate(int s);
int64_t pick_size(int s);
uint64_t fit_write(int s, int64_t *off, uint64_t len);
void op_truncate(int s);
void op_write(int s);
void op_read(int s);
void op_range(int s, int evict);
void op_punch(int s);
void op_falloc(int s);
void op_bind(int s);
void op_min_order(int s);
void op_stat(int s);
void op_clone(int s);

/* ---- maps.c: mappings ---- */

int occupied(uint64_t a, uint64_t len, int forked);
uint64_t bind_base(int s, int order);
void on_fault(int sig, siginfo_t *si, void *uc);
int gcopy(void *dst, const void *src, size_t n);
const char *sname(int sig);
void x_access(struct mapent *m, uint64_t rel, uint64_t len, int write,
	      const uint8_t *data, const char *what);
void add_map(int s, uint64_t addr, uint64_t len, int prot, int kind,
	     int vorder, uint64_t off);
void set_maywrite(uint64_t addr, int maywrite);
void op_mmap(int s);
int pick_map(int s, int kind);
void op_munmap(int s);
void op_mprotect(int s);
void op_mremap(int s);
void op_madvise(int s);
void op_maccess(int s, int write);
void op_exec(int s);
void unmap_all(int s);

/* ---- procs.c: children and hand-offs ---- */

void op_child(int s);
void reap_child(void);
void concurrent_op(int s);
void do_handoff(void);

#endif /* FUZZ_H */
