// SPDX-License-Identifier: GPL-2.0
/*
 * bench/tier: memory tiering under a Zipf-skewed workload (issue 24), in
 * one VM run with two nodes (vm/run --numa 2: node 0 has the CPUs, node 1
 * is CPU-less and, by the HMAT vm/run writes, a slower memory tier), as
 * csv lines for bench/report.
 *
 * DATA bytes (4 GiB; --quick 64 MiB) of which FAST (a quarter) fit on
 * node 0.  The workload reads one byte of a page per access, pages drawn
 * from a Zipf distribution (s = 0.99, YCSB's) over a random permutation
 * of the pages, ACCESSES per interval, and counts where its accesses
 * land: at the end of each interval it asks the node of the pages of
 * 4096 of that interval's accesses, evenly spaced (so the share is of
 * accesses, not of pages).  The same draws, in the same order, for:
 * - morsel: a file on the suite's morselfs, populated on node 1, its
 *   first FAST bytes then moved to node 0 (as first touch would place
 *   them), mapped shared; tierd/morsel-tierd --budget FAST runs ROUNDS
 *   rounds per interval (--tick, after each ROUNDS-th of its accesses:
 *   a round sees only whether a page was touched since the last one, so
 *   rounds must come often enough that the touched pages are about the
 *   budget's worth); nodes from MORSEL_IOC_NODE_PAGES.
 * - linux: anonymous memory of the workload, with Linux's own tiering:
 *   kernel.numa_balancing = 2 (promotion of hot pages from the slow
 *   tier on NUMA hinting faults) and demotion in reclaim
 *   (/sys/kernel/mm/numa/demotion_enabled); node 0 is held to FAST free
 *   bytes above its high watermark by an mlocked, node-0-bound
 *   allocation of the rest, and the
 *   data is touched in order first (node 0 fills, then node 1); nodes
 *   from move_pages(2).
 * Metrics per interval (param = interval number): fast_share, the share
 * of accesses on node 0; and, once, ideal: the share the FAST hottest
 * pages would get.  Under emulation both nodes are equally fast: this
 * measures placement, not speed.
 *
 * usage: tier [--quick]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define MiB		(1ULL << 20)
#define PG		4096ULL
#define SAMPLES		4096
#define MPOL_BIND_	2	/* <numaif.h> */

static uint64_t data, fast, pages, accesses;
static int intervals, rounds;
static uint32_t *draws;		/* page of each access, pre-drawn */
static uint64_t ndraws;

static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Zipf(0.99) ranks mapped to pages by a random permutation; *ideal. */
static void draw_all(double *ideal)
{
	double *cdf = malloc(pages * sizeof(*cdf)), sum = 0, u;
	uint32_t *perm = malloc(pages * sizeof(*perm)), t;
	uint64_t i, j, lo, hi;

	if (!cdf || !perm)
		die("malloc", ENOMEM);
	for (i = 0; i < pages; i++) {
		sum += 1.0 / pow((double)(i + 1), 0.99);
		cdf[i] = sum;
		perm[i] = i;
	}
	for (i = pages - 1; i > 0; i--) {
		j = next() % (i + 1);
		t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	*ideal = cdf[fast / PG - 1] / sum;
	for (i = 0; i < ndraws; i++) {
		u = (next() >> 11) * (1.0 / 9007199254740992.0) * sum;
		for (lo = 0, hi = pages - 1; lo < hi;) {
			j = (lo + hi) / 2;
			if (cdf[j] < u)
				lo = j + 1;
			else
				hi = j;
		}
		draws[i] = perm[lo];
	}
	free(cdf);
	free(perm);
}

/*
 * Accesses [@from, @to) of the interval that starts at draw @first; the
 * sampled pages among them go to @sampled (every accesses / SAMPLES-th).
 */
static uint64_t run_accesses(volatile char *p, uint64_t first, uint64_t from,
			     uint64_t to, uint32_t *sampled)
{
	uint64_t i, step = accesses / SAMPLES, sum = 0;

	for (i = from; i < to; i++) {
		uint32_t pg = draws[(first + i) % ndraws];

		sum += p[(uint64_t)pg * PG + (i & 63) * 64];
		if (i % step == 0 && i / step < SAMPLES)
			sampled[i / step] = pg;
	}
	return sum;
}

/* Share of @sampled on node 0: a morsel's by NODE_PAGES. */
static double share_morsel(int fd, const uint32_t *sampled)
{
	uint64_t on[MORSEL_MAX_NODES];
	int k, fast_n = 0;

	for (k = 0; k < SAMPLES; k++) {
		if (morsel_node_pages(fd, (uint64_t)sampled[k] * PG, PG, on))
			die("MORSEL_IOC_NODE_PAGES", EIO);
		fast_n += on[0] > 0;
	}
	return (double)fast_n / SAMPLES;
}

/* ... and anonymous memory's by move_pages(2) without nodes. */
static double share_linux(char *p, const uint32_t *sampled)
{
	static void *addrs[SAMPLES];
	static int status[SAMPLES];
	int k, fast_n = 0;

	for (k = 0; k < SAMPLES; k++)
		addrs[k] = p + (uint64_t)sampled[k] * PG;
	if (syscall(SYS_move_pages, 0, SAMPLES, addrs, NULL, status, 0))
		die("move_pages", errno);
	for (k = 0; k < SAMPLES; k++)
		fast_n += status[k] == 0;
	return (double)fast_n / SAMPLES;
}

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die(path, errno ? errno : EIO);
	close(fd);
}

/* Node @n's high watermarks (/proc/zoneinfo, its zones'), in bytes. */
static uint64_t node_high(int n)
{
	char line[256], want[32];
	uint64_t pages_high = 0, v;
	int in_node = 0;
	FILE *f = fopen("/proc/zoneinfo", "r");

	if (!f)
		die("/proc/zoneinfo", errno);
	snprintf(want, sizeof(want), "Node %d,", n);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Node ", 5))
			in_node = !strncmp(line, want, strlen(want));
		else if (in_node && sscanf(line, " high %" SCNu64, &v) == 1)
			pages_high += v;
	}
	fclose(f);
	return pages_high * PG;
}

/* Node @n's MemFree in bytes. */
static uint64_t node_free(int n)
{
	char path[64], line[128];
	uint64_t kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo", n);
	f = fopen(path, "r");
	if (!f)
		die(path, errno);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "MemFree:"))
			kb = strtoull(strchr(line, ':') + 1, NULL, 10);
	fclose(f);
	return kb * 1024;
}

static void run_morsel(uint32_t *sampled)
{
	const char *mnt = getenv("MORSEL_MNT");
	char path[256], budget[32], line[256];
	struct morsel_migrate r;
	int fd, in[2], out[2], it;
	uint64_t at = 0;
	pid_t pid;
	FILE *o;
	char *p;

	snprintf(path, sizeof(path), "%s/bench-tier", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, data) || morsel_set_mpol(fd, MORSEL_MPOL_BIND, 2) ||
	    morsel_populate(fd, 0, data) || morsel_migrate(fd, 0, fast, 0, &r))
		die("bench-tier file", errno ? errno : EIO);
	p = mmap(NULL, data, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	snprintf(budget, sizeof(budget), "%lluK", (unsigned long long)(fast >> 10));
	if (pipe(in) || pipe(out))
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl("tierd/morsel-tierd", "morsel-tierd", "--budget", budget, "--tick",
		      path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	o = fdopen(out[0], "r");
	/* The round before the first interval clears the fresh bits. */
	if (write(in[1], "t", 1) != 1 || !fgets(line, sizeof(line), o))
		die("morsel-tierd", EIO);
	for (it = 0; it < intervals; it++) {
		int r;

		/* Where the interval's accesses land: before its rounds move. */
		run_accesses(p, at, 0, accesses, sampled);
		emit("tier", "morsel", it, 0, "fast_share", share_morsel(fd, sampled));
		for (r = 0; r < rounds; r++) {
			run_accesses(p, at, accesses * r / rounds,
				     accesses * (r + 1) / rounds, sampled);
			if (write(in[1], "t", 1) != 1 || !fgets(line, sizeof(line), o))
				die("morsel-tierd", EIO);
		}
		at += accesses;
		fprintf(stderr, "tier: morsel interval %d: %s", it, line);
	}
	close(in[1]);
	fclose(o);
	waitpid(pid, NULL, 0);
	munmap(p, data);
	close(fd);
	unlink(path);
}

static void run_linux(uint32_t *sampled)
{
	unsigned long node0 = 1;
	uint64_t hog, off, at = 0;
	char *h, *p;
	int it;

	write_file("/proc/sys/kernel/numa_balancing", "2");
	write_file("/sys/kernel/mm/numa/demotion_enabled", "1");
	/* Node 0 keeps FAST free bytes above its high watermarks. */
	hog = node_free(0);
	off = fast + node_high(0);
	hog = hog > off ? hog - off : 0;
	h = mmap(NULL, hog ? hog : PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (h == MAP_FAILED || (hog && syscall(SYS_mbind, h, hog, MPOL_BIND_, &node0,
					       8 * sizeof(node0), 0)) ||
	    (hog && mlock(h, hog)))
		die("node 0 hog", errno);
	p = mmap(NULL, data, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	for (off = 0; off < data; off += PG)
		p[off] = 1;
	for (it = 0; it < intervals; it++) {
		/* The same accesses twice, as the morsel's interval has them. */
		run_accesses(p, at, 0, accesses, sampled);
		emit("tier", "linux", it, 0, "fast_share", share_linux(p, sampled));
		run_accesses(p, at, 0, accesses, sampled);
		at += accesses;
	}
	munmap(p, data);
	munmap(h, hog ? hog : PG);
	write_file("/proc/sys/kernel/numa_balancing", "0");
}

int main(int argc, char **argv)
{
	uint32_t *sampled = malloc(SAMPLES * sizeof(*sampled));
	double ideal;

	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		data = 64 * MiB;
		accesses = 200000;
		intervals = 4;
		rounds = 8;
	} else if (argc > 1) {
		die("usage: tier [--quick]", EINVAL);
	} else {
		data = 4096 * MiB;
		accesses = 4000000;
		intervals = 30;
		rounds = 16;
	}
	if (!getenv("MORSEL_MNT"))
		die("MORSEL_MNT not set (run with vm/run --numa 2)", EINVAL);
	if (access("/sys/devices/system/node/node1/meminfo", F_OK))
		die("one NUMA node (run with vm/run --numa 2)", ENODEV);
	setvbuf(stdout, NULL, _IOLBF, 0);
	fast = data / 4;
	pages = data / PG;
	ndraws = accesses * 4;
	draws = malloc(ndraws * sizeof(*draws));
	if (!draws || !sampled)
		die("malloc", ENOMEM);
	draw_all(&ideal);
	emit("tier", "ideal", 0, 0, "fast_share", ideal);
	run_morsel(sampled);
	run_linux(sampled);
	return 0;
}
