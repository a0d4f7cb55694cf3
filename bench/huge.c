// SPDX-License-Identifier: GPL-2.0
/*
 * bench/huge: 2 MiB leaves inside morsels against the kernel's huge pages
 * (issue 22), in one VM run, as csv lines for bench/report:
 *
 * - alloc: FBMM's allocation experiment (seed 002), scaled to the VM:
 *   map and populate LEN bytes by touching every 4 KiB page, for morsel-2m
 *   (the file's mode MORSEL_HUGE_ALWAYS), morsel-4k (NEVER), anon-thp
 *   (MADV_HUGEPAGE), anon-4k (MADV_NOHUGEPAGE) and hugetlbfs (pages
 *   reserved first; skipped with a note when the kernel cannot reserve
 *   them); and, without --quick (1 GiB pages need whole gigabytes),
 *   morsel-1g (the suite's instance remounted with huge1g=LEN/1GiB for the
 *   run) and hugetlbfs-1g (pagesize=1G, nr_hugepages of 1 GiB pages),
 *   each skipped with a note when the gigabytes cannot be had.  Metrics:
 *   ms, faults per GiB (minor faults of the run), and for morsels the
 *   page-table pages per GiB (STAT).
 * - scan: over the populated memory, a linear read (one word per 64
 *   bytes), a strided read (one word per 4 KiB) and GUPS (random 8-byte
 *   updates, 2^20 of them), for morsel-1g, morsel-2m, morsel-4k and
 *   anon-thp.  Under
 *   TCG the emulator's software TLB caches 4 KiB translations whatever the
 *   guest's page size, so these ratios say nothing about hardware TLB
 *   reach (docs/design.md); they show the work per access.
 *
 * usage: huge [--quick]   (LEN: 4 GiB, or 64 MiB with --quick)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define PG	4096ULL
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)
#define HPG	(2 * MiB)
#define HUGETLB_DIR	"/tmp/bench-hugetlbfs"

static int quick;
static uint64_t len;
static const char *mnt;

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static double per_gib(double v)
{
	return v * GiB / len;
}

static void touch_all(char *p)
{
	uint64_t o;

	for (o = 0; o < len; o += PG)
		p[o] = 1;
}

/* mount -o remount,huge1g=@n of the suite's instance; 0 or an errno. */
static int remount_huge1g(unsigned long n)
{
	char opts[64];

	snprintf(opts, sizeof(opts), "huge1g=%lu", n);
	return mount("none", mnt, NULL, MS_REMOUNT, opts) ? errno : 0;
}

/* A morsel of LEN bytes with huge-page mode @mode, mapped; *@fdp its fd. */
static char *morsel_region(uint64_t mode, int *fdp)
{
	struct morsel_huge h = { .mode = mode };
	char path[256];
	void *addr;
	size_t maplen;
	int fd, err;

	snprintf(path, sizeof(path), "%s/bench-huge", mnt);
	unlink(path);
	fd = morsel_create(path, len, 0600);
	if (fd < 0)
		die("morsel_create", -fd);
	unlink(path);
	if (ioctl(fd, MORSEL_IOC_SET_HUGE, &h))
		die("MORSEL_IOC_SET_HUGE", errno);
	err = morsel_map(fd, NULL, PROT_READ | PROT_WRITE, 0, &addr, &maplen);
	if (err)
		die("morsel_map", -err);
	*fdp = fd;
	return addr;
}

static char *anon_region(int advice)
{
	/* 2 MiB aligned, as THP needs: over-map and trim. */
	char *p = mmap(NULL, len + HPG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		die("mmap anon", errno);
	a = (char *)(((uintptr_t)p + HPG - 1) & ~(HPG - 1));
	if (a > p)
		munmap(p, a - p);
	munmap(a + len, p + HPG - a);
	if (madvise(a, len, advice))
		die("madvise", errno);
	return a;
}

/* The nr_hugepages file of hugetlb's pages of @size bytes. */
static const char *nr_hugepages(uint64_t size)
{
	return size == GiB ?
	       "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages" :
	       "/proc/sys/vm/nr_hugepages";
}

static void hugetlb_release(uint64_t size);

/*
 * hugetlbfs with LEN / @size pages of @size bytes (2 MiB or 1 GiB)
 * reserved, or NULL (noted) if it cannot.
 */
static char *hugetlb_region(uint64_t size, int *fdp)
{
	unsigned long want = len / size, got = 0;
	FILE *f = fopen(nr_hugepages(size), "w");
	char *p;
	int fd;

	if (!f || fprintf(f, "%lu\n", want) < 0 || fclose(f)) {
		printf("bench/huge: hugetlbfs: cannot set %s\n", nr_hugepages(size));
		hugetlb_release(size);
		return NULL;
	}
	f = fopen(nr_hugepages(size), "r");
	if (!f || fscanf(f, "%lu", &got) != 1 || got < want) {
		printf("bench/huge: hugetlbfs: %lu of %lu pages of %llu MiB reserved\n",
		       got, want, (unsigned long long)(size / MiB));
		if (f)
			fclose(f);
		hugetlb_release(size);
		return NULL;
	}
	fclose(f);
	mkdir(HUGETLB_DIR, 0755);
	if (mount("none", HUGETLB_DIR, "hugetlbfs", 0,
		  size == GiB ? "pagesize=1G" : NULL) && errno != EBUSY) {
		printf("bench/huge: hugetlbfs: mount: %s\n", strerror(errno));
		return NULL;
	}
	fd = open(HUGETLB_DIR "/f", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open hugetlbfs file", errno);
	unlink(HUGETLB_DIR "/f");
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap hugetlbfs", errno);
	*fdp = fd;
	return p;
}

static void hugetlb_release(uint64_t size)
{
	FILE *f;

	umount2(HUGETLB_DIR, 0);
	f = fopen(nr_hugepages(size), "w");
	if (f) {
		fprintf(f, "0\n");
		fclose(f);
	}
}

static uint64_t rng = 88172645463325252ULL;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The three scans over @p; volatile sums keep the reads. */
static void scans(const char *variant, char *p, int it)
{
	volatile uint64_t *w = (volatile uint64_t *)p;
	uint64_t n = len / 8, i, sum = 0, updates = 1 << 20;
	double t;

	t = now_ms();
	for (i = 0; i < n; i += 8)
		sum += w[i];
	emit("huge-scan", variant, 64, it, "ms", now_ms() - t);
	t = now_ms();
	for (i = 0; i < n; i += PG / 8)
		sum += w[i];
	emit("huge-scan", variant, PG, it, "ms", now_ms() - t);
	t = now_ms();
	for (i = 0; i < updates; i++)
		w[xorshift() % n] ^= i;
	emit("huge-gups", variant, updates, it, "ms", now_ms() - t);
	if (sum == 42)
		printf("\n");
}

static void one(const char *variant, int it)
{
	uint64_t hugetlb_size = strcmp(variant, "hugetlbfs-1g") ? HPG : GiB;
	struct morsel_stat st;
	char *p = NULL;
	int fd = -1;
	long f0;
	double t;

	if (!strcmp(variant, "morsel-1g")) {
		int err = remount_huge1g(len / GiB);

		if (err) {
			printf("bench/huge: morsel-1g: huge1g=%llu: %s\n",
			       (unsigned long long)(len / GiB), strerror(err));
			return;
		}
		p = morsel_region(MORSEL_HUGE_ALWAYS, &fd);
	} else if (!strcmp(variant, "morsel-2m"))
		p = morsel_region(MORSEL_HUGE_ALWAYS, &fd);
	else if (!strcmp(variant, "morsel-4k"))
		p = morsel_region(MORSEL_HUGE_NEVER, &fd);
	else if (!strcmp(variant, "anon-thp"))
		p = anon_region(MADV_HUGEPAGE);
	else if (!strcmp(variant, "anon-4k"))
		p = anon_region(MADV_NOHUGEPAGE);
	else
		p = hugetlb_region(hugetlb_size, &fd);
	if (!p)
		return;
	f0 = minflt();
	t = now_ms();
	touch_all(p);
	t = now_ms() - t;
	emit("huge-alloc", variant, len >> 20, it, "ms", t);
	emit("huge-alloc", variant, len >> 20, it, "faults_per_gib",
	     per_gib(minflt() - f0));
	if (!strncmp(variant, "morsel", 6)) {
		if (morsel_stat(fd, &st))
			die("morsel_stat", errno);
		emit("huge-alloc", variant, len >> 20, it, "tables_per_gib",
		     per_gib(st.tables[0] + st.tables[1] + st.tables[2] +
			     st.tables[3]));
		emit("huge-alloc", variant, len >> 20, it, "leaves_2m",
		     st.huge);
		emit("huge-alloc", variant, len >> 20, it, "leaves_1g",
		     st.huge1g);
	}
	if (strcmp(variant, "anon-4k") && strncmp(variant, "hugetlbfs", 9))
		scans(variant, p, it);
	munmap(p, len);
	if (fd >= 0)
		close(fd);
	if (!strncmp(variant, "hugetlbfs", 9))
		hugetlb_release(hugetlb_size);
	if (!strcmp(variant, "morsel-1g") && remount_huge1g(0))
		die("remount huge1g=0", errno);
}

int main(int argc, char **argv)
{
	static const char *const variants[] = {
		"hugetlbfs", "morsel-2m", "morsel-4k", "anon-thp", "anon-4k",
		"morsel-1g", "hugetlbfs-1g",
	};
	int it, iters, v, nv;

	if (argc > 1 && !strcmp(argv[1], "--quick"))
		quick = 1;
	else if (argc > 1)
		die("usage: huge [--quick]", EINVAL);
	mnt = getenv("MORSEL_MNT");
	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	len = quick ? 64 * MiB : 4 * GiB;
	iters = quick ? 1 : 3;
	nv = quick ? 5 : 7;	/* 64 MiB holds no gigabyte */
	/* Interleaved, so that a drift in the host hits every variant. */
	for (it = 0; it < iters; it++)
		for (v = 0; v < nv; v++)
			one(variants[v], it);
	return 0;
}
