// SPDX-License-Identifier: GPL-2.0
/*
 * bench/numa: moving a file's pages to another NUMA node while P
 * processes map it (issue 24), in one VM run with two nodes (vm/run
 * --numa 2), as csv lines for bench/report.
 *
 * A file of LEN bytes, every page written, exists once on a tmpfs of its
 * own and once on the suite's morselfs, both on node 0.  For each P, P
 * child processes map both files MAP_SHARED and read every page of each
 * (the tmpfs children so get a PTE per page, which is what the kernel's
 * migration has to find and change through the reverse map; a morsel
 * mapping is one entry however many pages it has), then wait.  Per
 * iteration:
 * - tmpfs-move_pages: move_pages(2) of every page of the parent's own
 *   mapping of the tmpfs file to the other node, with MPOL_MF_MOVE_ALL
 *   (pages that other processes map too);
 * - morsel-migrate: MORSEL_IOC_MIGRATE of the whole morsel to that node.
 * Each iteration moves both files to the node they are not on (node 1,
 * then back to 0).  Metrics: ms, and the pages that moved (all of them:
 * the run fails otherwise).
 *
 * Then, with the same P mappers (each having read every page), one pass
 * of hot/cold tracking over each file (family numa-scan):
 * - tmpfs-page_idle: /sys/kernel/mm/page_idle/bitmap over the tmpfs
 *   file's page frames (from /proc/self/pagemap, read before timing):
 *   a read (which pages were used since they were marked idle) and a
 *   write (mark them idle again); each walks every page's reverse map,
 *   clearing the young bit in every mapper's PTE;
 * - morsel-accessed: one MORSEL_IOC_ACCESSED with MORSEL_ACCESSED_CLEAR
 *   over the morsel: its leaves' accessed bits, one flush per mapper and
 *   32 MiB.
 * Metrics: ms, and the pages found accessed (all: every mapper read
 * every page since the previous pass).
 *
 * Under emulation both nodes are one host memory and a TLB flush is a
 * software operation: the times compare the work the two mechanisms do
 * (reverse-map walks and PTE changes against one leaf per page and one
 * flush per mapper and batch), not what hardware would add.
 *
 * usage: numa [--quick]   (LEN 1 GiB, P = 1, 8, 64; --quick: 16 MiB,
 *                          P = 1, 4)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define MiB	(1ULL << 20)
#define PG	4096ULL
#define TMPFS_DIR	"/tmp/bench-numa-tmpfs"
#define MPOL_MF_MOVE_ALL	(1 << 2)	/* <numaif.h> */
#define MAXP	64
#define PAGEMAP_PFN	((1ULL << 55) - 1)
#define PAGEMAP_PRESENT	(1ULL << 63)

static uint64_t len;
static char mpath[256];
static const char *tpath = TMPFS_DIR "/f";

static void fill(const char *path)
{
	fill_file(path, len, 'n');
}

static char *map_file(const char *path)
{
	int fd = open(path, O_RDWR);
	char *p;

	if (fd < 0)
		die(path, errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	close(fd);
	return p;
}

static void touch(const char *p)
{
	volatile char sink;
	uint64_t off;

	for (off = 0; off < len; off += PG)
		sink = p[off];
	(void)sink;
}

/* The sorted page frames of @p's pages (present: it read them all). */
static uint64_t *pfns_of(const char *p)
{
	uint64_t n = len / PG, i, *pfn = malloc(n * sizeof(*pfn));
	int fd = open("/proc/self/pagemap", O_RDONLY);

	if (!pfn || fd < 0)
		die("/proc/self/pagemap", fd < 0 ? errno : ENOMEM);
	if (pread(fd, pfn, n * 8, (uintptr_t)p / PG * 8) != (ssize_t)(n * 8))
		die("pagemap", errno ? errno : EIO);
	close(fd);
	for (i = 0; i < n; i++) {
		if (!(pfn[i] & PAGEMAP_PRESENT) || !(pfn[i] & PAGEMAP_PFN))
			die("pagemap: a page without its frame", EIO);
		pfn[i] &= PAGEMAP_PFN;
	}
	return pfn;
}

/*
 * One pass of idle-page tracking over the frames @pfn: read their bits
 * (set: not used since marked idle), then mark them idle.  ms; *@used
 * gets the frames found used.
 */
static double page_idle_pass(const uint64_t *pfn, uint64_t *used)
{
	uint64_t n = len / PG, lo = UINT64_MAX, hi = 0, i, words, *bits, *mine;
	int fd = open("/sys/kernel/mm/page_idle/bitmap", O_RDWR);
	ssize_t got;
	double t;

	if (fd < 0)
		die("/sys/kernel/mm/page_idle/bitmap", errno);
	for (i = 0; i < n; i++) {
		lo = pfn[i] < lo ? pfn[i] : lo;
		hi = pfn[i] > hi ? pfn[i] : hi;
	}
	lo &= ~63ULL;
	words = (hi - lo) / 64 + 1;
	bits = calloc(words, 8);
	mine = calloc(words, 8);
	if (!bits || !mine)
		die("calloc", ENOMEM);
	for (i = 0; i < n; i++)
		mine[(pfn[i] - lo) / 64] |= 1ULL << ((pfn[i] - lo) % 64);
	t = now_ms();
	/* sysfs moves at most a page per call. */
	for (i = 0; i < words * 8; i += got) {
		got = pread(fd, (char *)bits + i, words * 8 - i, lo / 8 + i);
		if (got <= 0)
			die("page_idle read", got ? errno : EIO);
	}
	for (i = 0; i < words * 8; i += got) {
		got = pwrite(fd, (char *)mine + i, words * 8 - i, lo / 8 + i);
		if (got <= 0)
			die("page_idle write", got ? errno : EIO);
	}
	t = now_ms() - t;
	*used = 0;
	for (i = 0; i < words; i++)
		*used += __builtin_popcountll(mine[i] & ~bits[i]);
	free(bits);
	free(mine);
	close(fd);
	return t;
}

static double morsel_scan(int fd, uint64_t *used)
{
	struct morsel_accessed a = { .flags = MORSEL_ACCESSED_CLEAR };
	double t = now_ms();

	if (ioctl(fd, MORSEL_IOC_ACCESSED, &a))
		die("MORSEL_IOC_ACCESSED", errno);
	*used = a.accessed;
	return now_ms() - t;
}

/* Every mapper reads every page of both files again (a SIGUSR1 each). */
static int reread[2];

static void on_usr1(int sig)
{
	(void)sig;
}

/* P children that map and read both files, then wait for SIGTERM. */
static void start_mappers(int nr, pid_t *pids)
{
	int ready[2], i;
	char c;

	if (pipe(ready))
		die("pipe", errno);
	for (i = 0; i < nr; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork", errno);
		if (!pids[i]) {
			char *t = map_file(tpath), *m = map_file(mpath);
			sigset_t usr1;

			sigemptyset(&usr1);
			sigaddset(&usr1, SIGUSR1);
			for (;;) {
				touch(t);
				touch(m);
				if (write(ready[1], "r", 1) != 1)
					_exit(1);
				if (sigwaitinfo(&usr1, NULL) < 0)
					_exit(1);
			}
		}
	}
	for (i = 0; i < nr; i++)
		if (read(ready[0], &c, 1) != 1)
			die("mapper", EIO);
	reread[0] = ready[0];
	reread[1] = ready[1];
}

/* Every mapper reads both files once more; back when all have. */
static void reread_all(int nr, pid_t *pids)
{
	int i;
	char c;

	for (i = 0; i < nr; i++)
		kill(pids[i], SIGUSR1);
	for (i = 0; i < nr; i++)
		if (read(reread[0], &c, 1) != 1)
			die("mapper", EIO);
}

static void stop_mappers(int nr, pid_t *pids)
{
	int i;

	for (i = 0; i < nr; i++)
		kill(pids[i], SIGTERM);
	for (i = 0; i < nr; i++)
		waitpid(pids[i], NULL, 0);
	close(reread[0]);
	close(reread[1]);
}

/* move_pages(2) of all of @p to @node; ms.  Every page must move. */
static double tmpfs_move(char *p, int node)
{
	uint64_t n = len / PG, i;
	void **addrs = malloc(n * sizeof(*addrs));
	int *nodes = malloc(n * sizeof(*nodes)), *status = malloc(n * sizeof(*status));
	double t;

	if (!addrs || !nodes || !status)
		die("malloc", ENOMEM);
	for (i = 0; i < n; i++) {
		addrs[i] = p + i * PG;
		nodes[i] = node;
	}
	t = now_ms();
	if (syscall(SYS_move_pages, 0, n, addrs, nodes, status, MPOL_MF_MOVE_ALL))
		die("move_pages", errno);
	t = now_ms() - t;
	for (i = 0; i < n; i++)
		if (status[i] != node)
			die("move_pages: a page stayed", status[i] < 0 ? -status[i] : EAGAIN);
	free(addrs);
	free(nodes);
	free(status);
	return t;
}

static double morsel_move(int fd, int node)
{
	struct morsel_migrate r;
	double t = now_ms();
	int err = morsel_migrate(fd, 0, 0, node, &r);

	t = now_ms() - t;
	if (err)
		die("MORSEL_IOC_MIGRATE", -err);
	if (r.moved != len / PG)
		die("MORSEL_IOC_MIGRATE: a page stayed", EAGAIN);
	return t;
}

int main(int argc, char **argv)
{
	static const int full_ps[] = { 1, 8, 64 }, quick_ps[] = { 1, 4 };
	const char *mnt = getenv("MORSEL_MNT");
	const int *ps = full_ps;
	int nps = 3, it, iters = 3, k, fd, node = 0;
	uint64_t used, *pfn;
	pid_t pids[MAXP];
	char opts[64], *tmap;
	sigset_t usr1;

	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		len = 16 * MiB;
		ps = quick_ps;
		nps = 2;
		iters = 2;
	} else if (argc > 1) {
		die("usage: numa [--quick]", EINVAL);
	} else {
		len = 1024 * MiB;
	}
	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run --numa 2)", EINVAL);
	if (access("/sys/devices/system/node/node1/meminfo", F_OK))
		die("one NUMA node (run with vm/run --numa 2)", ENODEV);
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Children wait for SIGUSR1 with sigwaitinfo: blocked from the fork. */
	signal(SIGUSR1, on_usr1);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	snprintf(mpath, sizeof(mpath), "%s/bench-numa", mnt);
	snprintf(opts, sizeof(opts), "size=%llu,mpol=bind:0",
		 (unsigned long long)(len + 64 * MiB));
	mkdir(TMPFS_DIR, 0755);
	if (mount("tmpfs", TMPFS_DIR, "tmpfs", 0, opts))
		die("mount tmpfs", errno);
	fill(tpath);
	fd = open(mpath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(mpath, errno);
	if (morsel_set_mpol(fd, MORSEL_MPOL_BIND, 1))
		die("MORSEL_IOC_SET_MPOL", EINVAL);
	close(fd);
	fill(mpath);
	fd = open(mpath, O_RDWR);
	if (fd < 0)
		die(mpath, errno);
	tmap = map_file(tpath);
	touch(tmap);
	for (k = 0; k < nps; k++) {
		start_mappers(ps[k], pids);
		for (it = 0; it < iters; it++) {
			node = !node;
			emit("numa", "tmpfs-move_pages", ps[k], it, "ms", tmpfs_move(tmap, node));
			emit("numa", "morsel-migrate", ps[k], it, "ms", morsel_move(fd, node));
			emit("numa", "morsel-migrate", ps[k], it, "mib", len / MiB);
		}
		/* The tmpfs pages moved: their frames now. */
		pfn = pfns_of(tmap);
		page_idle_pass(pfn, &used);	/* marks them idle */
		morsel_scan(fd, &used);		/* clears the bits */
		for (it = 0; it < iters; it++) {
			reread_all(ps[k], pids);
			emit("numa-scan", "tmpfs-page_idle", ps[k], it, "ms",
			     page_idle_pass(pfn, &used));
			emit("numa-scan", "tmpfs-page_idle", ps[k], it, "accessed", used);
			emit("numa-scan", "morsel-accessed", ps[k], it, "ms", morsel_scan(fd, &used));
			emit("numa-scan", "morsel-accessed", ps[k], it, "accessed", used);
		}
		free(pfn);
		stop_mappers(ps[k], pids);
	}
	munmap(tmap, len);
	close(fd);
	unlink(mpath);
	unlink(tpath);
	umount(TMPFS_DIR);
	rmdir(TMPFS_DIR);
	return 0;
}
