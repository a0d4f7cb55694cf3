// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer: a seeded fuzzer for morselfs with an exact shadow model.
 *
 *   fuzz_bin [--seed S] [--ops N] [--procs P] [--trace] [--stats] [--lenient]
 *            [--mm | --mm-mounted] [--mm-2m] [--check-each]
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
 * POPULATE/EVICT/BIND/SET_MIN_ORDER/SET_HUGE/COLLAPSE ioctls (2 MiB
 * leaves, which the model knows: huge.c's choice, splits, collapses; a
 * fallback for want of a free 2 MiB block it reads from STAT, and the
 * summary counts them; the seed chooses the instance's huge=, never,
 * within_size, advise or always, by a remount at the start),
 * fallocate (populate, also FALLOC_FL_UNSHARE_RANGE, and punch),
 * MORSEL_IOC_MIGRATE of any range to any node (in a guest with two
 * nodes, vm/run --numa 2, pages move under the other workers' mappings
 * and faults; the model does not change),
 * FICLONE/FICLONERANGE between a worker's slots or within one (whole PTE
 * tables and 2 MiB leaves shared at aligned offsets, pages elsewhere; the
 * sharing breaks at the later writes, stores, faults and punches of
 * either side, whose data the model checks exactly), rename, link/linkat, unlink, fork with a child working on the
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
 * --check-each checks every slot a worker owns (STAT, fstat) after every
 * operation, to find the one that went wrong (slow; replays the same
 * operations as without it).
 * --mm makes the instance each worker's memory manager (patch 13,
 * morsel_set_memory_manager on $MORSEL_MNT) before it starts: its own
 * anonymous memory (malloc'd I/O buffers, its address-region
 * reservations, its stack-less heap) is then morsels too, cloned at each
 * of its forks, and read(2), write(2), GUP and faults run with buffers
 * there.  The model itself stays in Linux's shared memory (made before
 * the workers), so a fault of the memory manager shows as a mismatch of
 * what the workers compute, or as a worker dying.  The counters checked
 * at the end include the workers' memory, which their exit frees.
 *
 * Concurrency rules inside one worker: single-threaded; the only other
 * process touching a worker's morsels is its own child, as described.
 */

/*
 * tests/fuzzer/main.c: the options, the op table and each worker's loop
 * (one_op: reset a slot that has grown too big, else a weighted random
 * operation; every HANDOFF_EVERY-th op a hand-off), each worker's final
 * checks and cleanup, and the coordinator (main): it forks the workers,
 * waits for them, and checks that no file is left and that the
 * /sys/fs/morselfs counters (pages, tables, morsels, 2 MiB leaves) are
 * back to their values.
 *
 * Rules: this file defines the process-wide state that fuzz.h declares:
 * the options (set by main before the workers fork, read-only after), the
 * shared region sh (each worker's counters and every slot's model), W
 * (each process's own worker state; a forked worker or child has its own
 * copy) and the scratch buffers iobuf and expbuf.  main runs in the
 * coordinator only; everything else in a worker (or, for W.in_child, its
 * child).  The other files: report.c (trace, checks, reports), model.c
 * (the model), names.c (names and fds), files.c (data operations, STAT),
 * maps.c (mappings), procs.c (children and hand-offs).
 */
#include "fuzz.h"

#include <sys/mount.h>
#include <sys/statvfs.h>

struct shared *sh;
struct worker W;
int nprocs = 4, max_order, trace_on, lenient;
int inst_huge = MORSEL_HUGE_NEVER;
int mem_nodes = 1;

/* How many nodes have memory ("0" or "0-N" in sysfs: nodes 0 to N). */
static int count_mem_nodes(void)
{
	FILE *f = fopen("/sys/devices/system/node/has_memory", "r");
	int a = 0, b = 0, n;

	if (!f)
		return 1;
	n = fscanf(f, "%d-%d", &a, &b);
	fclose(f);
	return n == 2 && a == 0 ? b + 1 : 1;
}

static const char *const huge_names[] = { "never", "always", "within_size", "advise" };

/*
 * Remount the instance at @mnt with huge=@mode, keeping its mount flags.
 * Return: 0 or -errno.
 */
/* Remount the instance at @mnt with the one option @opt, keeping its flags. */
static int set_inst_opt(const char *mnt, const char *opt)
{
	unsigned long flags = MS_REMOUNT;
	struct statvfs sv;

	if (statvfs(mnt, &sv))
		return -errno;
	flags |= sv.f_flag & ST_NOSUID ? MS_NOSUID : 0;
	flags |= sv.f_flag & ST_NODEV ? MS_NODEV : 0;
	flags |= sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0;
	flags |= sv.f_flag & ST_NOATIME ? MS_NOATIME : 0;
	return mount(NULL, mnt, NULL, flags, opt) ? -errno : 0;
}

static int set_inst_huge(const char *mnt, int mode)
{
	char opt[32];

	snprintf(opt, sizeof(opt), "huge=%s", huge_names[mode]);
	return set_inst_opt(mnt, opt);
}
uint64_t max_bytes, task_max;
char dir[256];
char *badbuf;		/* a PROT_NONE page: a bad user buffer */
static uint8_t iobuf_s[WMAX * PG + PG], expbuf_s[WMAX * PG + PG],
	wrbuf_s[WMAX * PG + PG];
uint8_t *iobuf = iobuf_s, *expbuf = expbuf_s, *wrbuf = wrbuf_s;
static int l5, stats, use_mm, mm_mounted, mm_2m, check_each;
#define MIB2	(2UL << 20)
static uint64_t seed;

/* ---- resets ---- */

static int needs_reset(int s)
{
	struct slot *sl = S(s);

	return sl->live && (sl->nruns > RESET_RUNS ||
			    runs_count(sl) > RESET_PAGES ||
			    sl->ntables > RESET_TABLES ||
			    sl->churn > RESET_CHURN);
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

/* ---- the worker ---- */

enum {
	OP_OPEN, OP_CLOSE, OP_TRUNC, OP_WRITE, OP_READ, OP_MMAP, OP_MUNMAP,
	OP_MPROTECT, OP_MREMAP, OP_MADVISE, OP_POPULATE, OP_EVICT, OP_PUNCH,
	OP_FALLOC, OP_BIND, OP_RENAME, OP_UNLINK, OP_LOAD, OP_STORE, OP_EXEC,
	OP_STAT, OP_CHILD, OP_CREATE, OP_MINORDER, OP_LINK, OP_HUGE,
	OP_COLLAPSE, OP_CLONE, OP_MIGRATE, NOPS
};

static const int weight[NOPS] = {
	[OP_OPEN] = 4, [OP_CLOSE] = 3, [OP_TRUNC] = 6, [OP_WRITE] = 12,
	[OP_READ] = 10, [OP_MMAP] = 9, [OP_MUNMAP] = 5, [OP_MPROTECT] = 3,
	[OP_MREMAP] = 3, [OP_MADVISE] = 5, [OP_POPULATE] = 4, [OP_EVICT] = 3,
	[OP_PUNCH] = 4, [OP_FALLOC] = 3, [OP_BIND] = 2, [OP_RENAME] = 2,
	[OP_UNLINK] = 1, [OP_LOAD] = 12, [OP_STORE] = 10, [OP_EXEC] = 1,
	[OP_STAT] = 5, [OP_CHILD] = 2, [OP_CREATE] = 1, [OP_MINORDER] = 2,
	[OP_LINK] = 2, [OP_HUGE] = 2, [OP_COLLAPSE] = 2, [OP_CLONE] = 3,
	[OP_MIGRATE] = 3,
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

	W.hint = W.range = 0;
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
	case OP_HUGE: op_huge(s); break;
	case OP_COLLAPSE: op_collapse(s); break;
	case OP_CLONE: op_clone(s); break;
	case OP_MIGRATE: op_migrate(s); break;
	default: x_stat(s, 1);
	}
}

/* How many of this process's VMAs are morsels standing for anonymous memory. */
static int anon_file_vmas(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmFlags:", 8) && (strstr(line, " af ") ||
						      strstr(line, " af\n")))
			n++;
	fclose(f);
	return n;
}

/*
 * --check-each: STAT every slot the worker owns after every operation,
 * with the PRNG put back, so a run finds the operation that went wrong
 * and still does what it did without the option.
 */
static void check_owned(void)
{
	uint64_t rng = W.rng;
	int i;

	for (i = 0; i < NFILES; i++)
		if (W.owned[i] >= 0 && S(W.owned[i])->live && !child_alive())
			x_stat(W.owned[i], 1);
	W.rng = rng;
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
		if (check_each)
			check_owned();
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
	if (use_mm && !anon_file_vmas())
		mismatch("--mm: the worker's buffers are not morsels (no 'af' VMA in its smaps)");
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
	fprintf(stderr, "usage: fuzz [--seed S] [--ops N] [--procs P] [--trace] [--stats] [--lenient] [--mm | --mm-mounted] [--mm-2m] [--check-each]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "pages", "tables", "morsels", "huge" };
	uint64_t nops = 10000, total = 0, bad = 0, fallbacks = 0, made = 0, per, hlimit;
	int i, seeded = 0, socks[MAXP][2], status;
	long base[4], now[4], migrated0;
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
		} else if (!strcmp(argv[i], "--mm")) {
			use_mm = 1;
		} else if (!strcmp(argv[i], "--mm-mounted")) {
			use_mm = mm_mounted = 1;
		} else if (!strcmp(argv[i], "--mm-2m")) {
			mm_2m = 1;
		} else if (!strcmp(argv[i], "--check-each")) {
			check_each = 1;
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
	mem_nodes = count_mem_nodes();
	max_order = l5 ? 4 : 3;
	max_bytes = ext(max_order);
	task_max = (l5 ? 1ULL << 56 : 1ULL << 47) - PG;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * The instance's huge= by the seed: three runs in four give files
	 * that follow it 2 MiB leaves without asking (their own mode, set
	 * by SET_HUGE ops, overrides it as before).
	 */
	{
		static const int modes[] = { MORSEL_HUGE_NEVER, MORSEL_HUGE_WITHIN_SIZE,
					     MORSEL_HUGE_ADVISE, MORSEL_HUGE_ALWAYS };
		int err = set_inst_huge(mnt, modes[seed % 4]);

		if (err)
			fprintf(stderr, "fuzz: remount %s with huge=: %s; huge=never\n",
				mnt, strerror(-err));
		else
			inst_huge = modes[seed % 4];
	}
	printf("fuzz: seed %" PRIu64 ", %" PRIu64 " ops, %d procs, %d-level paging, huge=%s%s%s\n",
	       seed, nops, nprocs, l5 ? 5 : 4, huge_names[inst_huge],
	       lenient ? ", lenient" : "",
	       mm_mounted ? ", workers under --mm-mounted" :
	       use_mm ? ", workers under --mm" : "");
	printf("fuzz: replay with: tests/fuzz --seed %" PRIu64 " --ops %" PRIu64
	       " --procs %d%s%s%s\n", seed, nops, nprocs, lenient ? " --lenient" : "",
	       mm_mounted ? " --mm-mounted" : use_mm ? " --mm" : "",
	       mm_2m ? " --mm-2m" : "");
	if (mm_mounted && set_inst_opt(mnt, "anon=mounted")) {
		fprintf(stderr, "fuzz: remount %s with anon=mounted: %s\n", mnt,
			strerror(errno));
		return 2;
	}
	for (i = 0; i < 4; i++)
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
	migrated0 = counter("migrated");
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
			if (use_mm) {
				int err = morsel_set_memory_manager(mnt);
				size_t l = WMAX * PG + PG;
				uint8_t *b;

				if (err) {
					fprintf(stderr, "fuzz: morsel_set_memory_manager(%s): %s\n",
						mnt, strerror(-err));
					_exit(2);
				}
				/*
				 * The I/O buffers: private memory from morsels;
				 * with --mm-2m each at the start of 2 MiB of
				 * its own (which anon=mounted mounts by one PMD
				 * entry, and a fork shares by whole PTE tables).
				 */
				size_t step = mm_2m ? MIB2 : l;

				b = mmap(NULL, 3 * step, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
				if (b == MAP_FAILED || l > MIB2) {
					perror("fuzz: mmap under --mm");
					_exit(2);
				}
				iobuf = b;
				expbuf = b + step;
				wrbuf = b + 2 * step;
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
		fallbacks += sh->w[i].huge_fallbacks;
		made += sh->w[i].huge_made;
	}
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("fuzz: %" PRIu64 " ops in %.1f s: %.0f ops/s\n", total, secs,
	       secs > 0 ? total / secs : 0.0);
	printf("fuzz: %" PRIu64 " 2 MiB leaves populated, %" PRIu64
	       " fell back to 4 KiB pages (no block)\n", made, fallbacks);
	printf("fuzz: %ld pages migrated between %d nodes\n",
	       counter("migrated") - migrated0, mem_nodes);
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

		for (j = 0; j < 4; j++) {
			now[j] = counter(names[j]);
			same &= now[j] == base[j];
		}
		if (same)
			break;
		usleep(2000);
	}
	for (i = 0; i < 4; i++) {
		if (now[i] != base[i]) {
			printf("fuzz: MISMATCH counter changed by the run: "
			       "%s %ld, was %ld before the run\n", names[i], now[i],
			       base[i]);
			bad++;
		}
	}
	if (inst_huge != MORSEL_HUGE_NEVER && set_inst_huge(mnt, MORSEL_HUGE_NEVER)) {
		printf("fuzz: MISMATCH remount huge=never: %s\n", strerror(errno));
		bad++;
	}
	if (mm_mounted && set_inst_opt(mnt, "anon=paged")) {
		printf("fuzz: MISMATCH remount anon=paged: %s\n", strerror(errno));
		bad++;
	}
	printf("fuzz: %" PRIu64 " ops, seed %" PRIu64 ", %" PRIu64 " mismatches\n",
	       total, seed, bad);
	return bad ? 1 : 0;
}
