// SPDX-License-Identifier: GPL-2.0
/*
 * memerr_test: memory errors in morsel pages (docs/memory-errors.md).
 * A page of a morsel is poisoned with madvise(MADV_HWPOISON) through each
 * kind of mapping, or with the debugfs injector by its pfn; then every
 * mapper (a fork child too) gets SIGBUS with BUS_MCEERR_AR at that page's
 * address and nowhere else, read and write of the page give EIO, every
 * other page keeps its bytes, HardwareCorrupted counts the page, and a
 * punch, truncation or unlink makes the offset usable again with another
 * page.  Each test ends by unpoisoning the pfn, which succeeds only if no
 * reference but memory_failure()'s is left: a leak in the module fails it.
 *
 * On a persistent instance ($MORSEL_PMEM, the fixture "pm") the failure
 * arrives through the device's notify_failure: a file's page behaves the
 * same and stays failed after a remount, a free page is taken out too,
 * `morsel fsck` lists both, and no later file gets either page; a page
 * of metadata is reported and changes nothing.  Device pages cannot be
 * unpoisoned, so every test formats its device again.
 *
 * Runs in the VM as root with the probe module (raw page-table entries)
 * and mounts debugfs for the injector.  kselftest harness: every TEST is a
 * child process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "pmem_util.h"
#include "probe/probe.h"

#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#ifndef BUS_MCEERR_AR
#define BUS_MCEERR_AR 4
#endif

#define NPAGES 16		/* the file: 16 pages, in an order-1 morsel */
#define K 5			/* the page that fails */
#define HWP "/sys/kernel/debug/hwpoison/"

/* The byte every page @i of the file is filled with. */
static char fill_of(unsigned int i)
{
	return 'a' + i;
}

static int fill(int fd, unsigned int npages)
{
	char buf[PG];
	unsigned int i;

	for (i = 0; i < npages; i++) {
		memset(buf, fill_of(i), PG);
		if (pwrite(fd, buf, PG, i * PG) != (ssize_t)PG)
			return -1;
	}
	return 0;
}

/*
 * The pfn of the caller's entry for @addr at @level (4: the PTE, 3: the
 * PMD: then the table below it) through the probe, or 0.
 */
static uint64_t pfn_at(void *addr, int level)
{
	static int probe = -1;
	struct probe_entries e = { .addr = (uintptr_t)addr };
	uint64_t v;

	if (probe < 0)
		probe = open("/dev/morsel_probe", O_RDWR);
	if (probe < 0 || ioctl(probe, PROBE_IOC_ENTRIES, &e))
		return 0;
	v = e.entry[level];
	return (v & 1) ? (v & 0x000ffffffffff000ULL) >> 12 : 0;
}

static uint64_t pfn_of(void *addr)
{
	return pfn_at(addr, 4);
}

static int hwpoison_write(const char *file, uint64_t pfn)
{
	char path[128], val[32];

	mkdir("/sys/kernel/debug", 0755);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(path, sizeof(path), HWP "%s", file);
	snprintf(val, sizeof(val), "%#llx", (unsigned long long)pfn);
	return write_file(path, val);
}

/* ---- what a mapper sees of the failed page ---- */

static sigjmp_buf jump;
static volatile siginfo_t seen;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	memcpy((void *)&seen, si, sizeof(*si));
	siglongjmp(jump, 1);
}

/*
 * Read the first byte of @p.  Return: 0 and *@c, or the SIGBUS it got
 * (code BUS_MCEERR_AR at @p with si_addr_lsb 12 gives 1; any other -1).
 */
static int touch(volatile char *p, char *c)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };

	sigaction(SIGBUS, &sa, NULL);
	memset((void *)&seen, 0, sizeof(seen));
	if (sigsetjmp(jump, 1)) {
		signal(SIGBUS, SIG_DFL);
		if (seen.si_code == BUS_MCEERR_AR && seen.si_addr == p &&
		    seen.si_addr_lsb == 12)
			return 1;
		fprintf(stderr, "  SIGBUS code %d at %p (lsb %d), expected %d at %p\n",
			seen.si_code, seen.si_addr, seen.si_addr_lsb,
			BUS_MCEERR_AR, (void *)p);
		return -1;
	}
	*c = *p;
	signal(SIGBUS, SIG_DFL);
	return 0;
}

/*
 * The whole view through @map (NPAGES pages of the file from page 0):
 * page @k gets the SIGBUS, every other page reads its fill.  0 if so.
 */
static int view_ok(char *map, unsigned int npages, unsigned int k)
{
	unsigned int i;
	char c;

	for (i = 0; i < npages; i++) {
		int r = touch(map + i * PG, &c);

		if (i == k ? r != 1 : (r || c != fill_of(i) ||
				       map[i * PG + PG - 1] != fill_of(i))) {
			fprintf(stderr, "  page %u: touch %d, byte %#x\n", i, r, c);
			return -1;
		}
	}
	return 0;
}

/* read(2) and write(2) of page @k give EIO, the other pages their fill. */
static int io_ok(int fd, unsigned int npages, unsigned int k)
{
	char buf[PG];
	unsigned int i;

	for (i = 0; i < npages; i++) {
		ssize_t n = pread(fd, buf, PG, i * PG);

		if (i == k ? (n != -1 || errno != EIO) :
			     (n != (ssize_t)PG || buf[0] != fill_of(i) ||
			      buf[PG - 1] != fill_of(i))) {
			fprintf(stderr, "  pread of page %u: %zd (%s)\n", i, n,
				strerror(errno));
			return -1;
		}
	}
	if (k >= npages)	/* no failed page */
		return 0;
	errno = 0;
	if (pwrite(fd, "x", 1, k * PG + 7) != -1 || errno != EIO) {
		fprintf(stderr, "  pwrite into page %u: %s\n", k, strerror(errno));
		return -1;
	}
	/* A read that starts before the page stops short of it. */
	if (k && pread(fd, buf, PG, k * PG - 100) != 100)
		return -1;
	return 0;
}

/*
 * A child forked before the failure: waits for a byte on @pipe, then
 * checks its own view of @map (refaulted after fork).
 */
static pid_t child_checker(int pipe_rd, char *map, unsigned int npages,
			   unsigned int k)
{
	pid_t pid = fork();
	char go;

	if (pid)
		return pid;
	if (read(pipe_rd, &go, 1) != 1)
		_exit(2);
	_exit(view_ok(map, npages, k) ? 1 : 0);
}

static int child_result(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/*
 * A new file @path of NPAGES filled pages, mapped shared with @prot;
 * *@pfn: the pfn of page K (of the PTE table with @level 3).  The fd.
 */
static int mapped_file(const char *path, int prot, char **map, int level,
		       uint64_t *pfn)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	*map = MAP_FAILED;
	*pfn = 0;
	if (fd < 0 || fill(fd, NPAGES))
		return -1;
	*map = mmap(NULL, NPAGES * PG, prot, MAP_SHARED, fd, 0);
	if (*map != MAP_FAILED)
		*pfn = pfn_at(*map + K * PG, level);
	return fd;
}

enum how {
	MADV_MOUNTED,	/* madvise through the mounted (shared, offset 0) map */
	MADV_PAGED,	/* madvise through a shared mapping at an offset */
	MADV_PRIVATE,	/* madvise through a private mapping, before a copy */
	INJECT,		/* the debugfs injector, on the pfn */
};

/*
 * One failure of page @k of a file of @npages pages (an order-0 morsel
 * when @npages is 1), through @how; every mapper's view and the file's
 * read and write checked; then page @k punched and reused, and the pfn
 * unpoisoned.
 */
static void one_failure(struct __test_metadata *_metadata, const char *name,
			unsigned int npages, unsigned int k, enum how how)
{
	int fd = fresh(mpath(name), npages * PG), pipefd[2];
	long corrupted = hw_corrupted_kb();
	char *map, *paged = NULL, *priv = NULL, *target;
	uint64_t pfn;
	pid_t child;
	char c;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, corrupted);
	ASSERT_EQ(0, fill(fd, npages));
	map = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_EQ(fill_of(k), map[k * PG]);
	pfn = pfn_of(map + k * PG);
	ASSERT_NE(0, pfn);
	/* Page-by-page views: shared from page k, private of the whole file. */
	paged = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, k * PG);
	ASSERT_NE(MAP_FAILED, paged);
	priv = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, priv);
	ASSERT_EQ(fill_of(k), paged[0]);
	ASSERT_EQ(fill_of(k), priv[k * PG]);
	ASSERT_EQ(0, pipe(pipefd));
	child = child_checker(pipefd[0], map, npages, k);
	ASSERT_LT(0, child);

	target = how == MADV_PAGED ? paged : how == MADV_PRIVATE ?
		 priv + k * PG : map + k * PG;
	if (how == INJECT) {
		ASSERT_EQ(0, hwpoison_write("corrupt-pfn", pfn));
	} else {
		ASSERT_EQ(0, madvise(target, PG, MADV_HWPOISON));
	}
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());

	EXPECT_EQ(0, view_ok(map, npages, k));
	EXPECT_EQ(0, view_ok(priv, npages, k));
	EXPECT_EQ(1, touch(paged, &c));
	EXPECT_EQ(0, io_ok(fd, npages, k));
	ASSERT_EQ(1, write(pipefd[1], "g", 1));
	EXPECT_EQ(0, child_result(child));

	/* A punch makes it a hole: zeros, then another page for new data. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       k * PG, PG));
	EXPECT_EQ(0, touch(map + k * PG, &c));
	EXPECT_EQ(0, c);
	map[k * PG] = 'Z';
	EXPECT_EQ(1, pread(fd, &c, 1, k * PG));
	EXPECT_EQ('Z', c);
	EXPECT_EQ('Z', paged[0]);
	EXPECT_NE(pfn, pfn_of(map + k * PG));
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());

	/* Only memory_failure()'s reference is left: unpoison frees it. */
	munmap(map, npages * PG);
	munmap(paged, PG);
	munmap(priv, npages * PG);
	close(fd);
	unlink(mpath(name));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
	EXPECT_EQ(corrupted, hw_corrupted_kb());
}

TEST(madvise_through_the_mounted_mapping)
{
	one_failure(_metadata, "me_mounted", NPAGES, K, MADV_MOUNTED);
}

TEST(madvise_through_a_shared_mapping_at_an_offset)
{
	one_failure(_metadata, "me_paged", NPAGES, K, MADV_PAGED);
}

TEST(madvise_through_a_private_mapping)
{
	one_failure(_metadata, "me_private", NPAGES, K, MADV_PRIVATE);
}

TEST(injector_on_the_pfn)
{
	one_failure(_metadata, "me_inject", NPAGES, K, INJECT);
}

TEST(order_0_morsel)
{
	one_failure(_metadata, "me_order0", 1, 0, MADV_MOUNTED);
}

TEST(order_0_morsel_injector)
{
	one_failure(_metadata, "me_order0_inject", 1, 0, INJECT);
}

/* A private copy made before the failure is the process's own page. */
/* The pfn behind @addr whether a 4 KiB or a 2 MiB leaf maps it, or 0. */
static uint64_t pfn_any(void *addr)
{
	struct probe_entries e = { .addr = (uintptr_t)addr };
	int probe = open("/dev/morsel_probe", O_RDWR);
	uint64_t v;

	if (probe < 0 || ioctl(probe, PROBE_IOC_ENTRIES, &e)) {
		if (probe >= 0)
			close(probe);
		return 0;
	}
	close(probe);
	if ((e.entry[3] & 1) && (e.entry[3] & 0x80)) {	/* PSE: 2 MiB */
		v = (e.entry[3] & 0x000fffffffe00000ULL) >> 12;
		return v + (((uintptr_t)addr >> 12) & 511);
	}
	v = e.entry[4];
	return (v & 1) ? (v & 0x000ffffffffff000ULL) >> 12 : 0;
}

/*
 * A page inside a 2 MiB leaf fails: the leaf splits (tree.c), the failed
 * page alone leaves the file, its 511 neighbours keep their bytes and
 * their frames; a punch and a write make it a new page.
 */
/*
 * The file @fd of @npages (1024) filled in mode always: two 2 MiB leaves.
 * Returns its shared mapping; *@pfn is page @k's frame, *@pfn0 that of
 * page 512, the first of @k's leaf, whose frames are one run in order.
 */
static char *two_leaves(struct __test_metadata *_metadata, int fd,
			unsigned int npages, unsigned int k, uint64_t *pfn,
			uint64_t *pfn0)
{
	struct morsel_huge h = { .mode = MORSEL_HUGE_ALWAYS };
	struct morsel_stat st;
	char *map;

	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_SET_HUGE, &h));
	ASSERT_EQ(0, fill(fd, npages));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	ASSERT_EQ(2, st.huge);
	map = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	*pfn = pfn_any(map + k * PG);
	*pfn0 = pfn_any(map + 512 * PG);
	ASSERT_EQ(*pfn0 + (k - 512), *pfn);	/* one block, in order */
	return map;
}

TEST(a_page_of_a_2m_leaf_fails)
{
	unsigned int npages = 1024, k = 600, i;
	int fd = fresh(mpath("me_huge"), (uint64_t)npages * PG);
	long corrupted = hw_corrupted_kb(), splits;
	struct morsel_stat st;
	uint64_t pfn, pfn0;
	char *map, c;

	ASSERT_LE(0, fd);
	map = two_leaves(_metadata, fd, npages, k, &pfn, &pfn0);
	ASSERT_EQ(fill_of(k), map[k * PG]);
	ASSERT_NE(0, pfn);
	splits = morsel_counter("huge_splits");
	ASSERT_EQ(0, madvise(map + k * PG, PG, MADV_HWPOISON));
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());
	EXPECT_EQ(splits + 1, morsel_counter("huge_splits"));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.huge);
	EXPECT_EQ(npages - 1, st.pages);
	EXPECT_EQ(0, view_ok(map, npages, k));
	EXPECT_EQ(0, io_ok(fd, npages, k));
	for (i = 512; i < npages; i++)
		if (i != k)
			ASSERT_EQ(pfn0 + (i - 512), pfn_any(map + i * PG));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       k * PG, PG));
	EXPECT_EQ(0, touch(map + k * PG, &c));
	EXPECT_EQ(0, c);
	munmap(map, npages * PG);
	close(fd);
	unlink(mpath("me_huge"));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
	EXPECT_EQ(corrupted, hw_corrupted_kb());
}

TEST(private_copy_keeps_its_bytes)
{
	int fd = fresh(mpath("me_cow"), NPAGES * PG);
	char *map, *priv, c;
	uint64_t pfn;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fill(fd, NPAGES));
	map = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	priv = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(MAP_FAILED, priv);
	priv[K * PG] = 'P';		/* the copy */
	pfn = pfn_of(map + K * PG);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, madvise(map + K * PG, PG, MADV_HWPOISON));
	EXPECT_EQ(1, touch(map + K * PG, &c));
	EXPECT_EQ(0, touch(priv + K * PG, &c));
	EXPECT_EQ('P', c);
	EXPECT_EQ(fill_of(K), priv[K * PG + 1]);
	munmap(map, NPAGES * PG);
	munmap(priv, NPAGES * PG);
	close(fd);
	unlink(mpath("me_cow"));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
}

/*
 * The failed slot through the tree's other paths: the order rises over it
 * (the poisoned root of an order-0 morsel moves down), fallocate leaves
 * it, truncation clears it, and an unlink frees the rest.
 */
TEST(poison_through_order_changes_and_truncation)
{
	int fd = fresh(mpath("me_orders"), PG);
	char *map, buf[PG], c;
	uint64_t pfn;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fill(fd, 1));
	map = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	pfn = pfn_of(map);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, madvise(map, PG, MADV_HWPOISON));
	EXPECT_EQ(1, touch(map, &c));
	munmap(map, PG);
	/* Grow to 3 MiB (order 2): page 0 is still the failed one. */
	memset(buf, fill_of(1), PG);
	ASSERT_EQ((ssize_t)PG, pwrite(fd, buf, PG, 3 << 20));
	ASSERT_EQ(0, fallocate(fd, 0, 0, 8 * PG));
	errno = 0;
	EXPECT_EQ(-1, pread(fd, buf, PG, 0));
	EXPECT_EQ(EIO, errno);
	EXPECT_EQ((ssize_t)PG, pread(fd, buf, PG, 3 << 20));
	EXPECT_EQ(fill_of(1), buf[0]);
	map = mmap(NULL, 1 << 30, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(1, touch(map, &c));
	EXPECT_EQ(0, touch(map + PG, &c));
	EXPECT_EQ(0, c);
	munmap(map, 1 << 30);
	/* Truncation to nothing and back: a hole. */
	ASSERT_EQ(0, ftruncate(fd, 0));
	ASSERT_EQ(0, ftruncate(fd, PG));
	EXPECT_EQ((ssize_t)PG, pread(fd, buf, PG, 0));
	EXPECT_EQ(0, buf[0]);
	close(fd);
	unlink(mpath("me_orders"));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
}

/* Unlinking a file with a failed page, mapped and open elsewhere. */
TEST(unlink_with_a_failed_page)
{
	char *map, c;
	uint64_t pfn;
	int fd = mapped_file(mpath("me_unlink"), PROT_READ, &map, 4, &pfn);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, hwpoison_write("corrupt-pfn", pfn));
	ASSERT_EQ(0, unlink(mpath("me_unlink")));
	EXPECT_EQ(1, touch(map + K * PG, &c));
	EXPECT_EQ(0, view_ok(map, NPAGES, K));
	munmap(map, NPAGES * PG);
	close(fd);
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
}

/* A second failure report of the same page changes nothing. */
TEST(second_report_of_the_same_page)
{
	long corrupted = hw_corrupted_kb();
	char *map, c;
	uint64_t pfn;
	int fd = mapped_file(mpath("me_twice"), PROT_READ, &map, 4, &pfn);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, hwpoison_write("corrupt-pfn", pfn));
	hwpoison_write("corrupt-pfn", pfn);	/* "already poisoned" */
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());
	EXPECT_EQ(1, touch(map + K * PG, &c));
	EXPECT_EQ(0, view_ok(map, NPAGES, K));
	munmap(map, NPAGES * PG);
	close(fd);
	unlink(mpath("me_twice"));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
}

/* ---- clones: one page in several files ---- */

static int clone_range(int dst, int src, off_t soff, off_t doff, off_t len)
{
	struct file_clone_range r = { .src_fd = src, .src_offset = soff,
				      .src_length = len, .dest_offset = doff };

	return ioctl(dst, FICLONERANGE, &r);
}

/* Page @i of a file @shift pages behind the filled one: its fill or 0. */
static char shifted_fill(unsigned int i, unsigned int shift)
{
	return i < shift ? 0 : fill_of(i - shift);
}

/*
 * Through a mapping of @npages of a file that holds the filled file from
 * page @shift on: page @k gets SIGBUS, the others read what they hold;
 * pread agrees and gives EIO at @k.  0 if so.
 */
static int shifted_ok(int fd, char *map, unsigned int npages,
		      unsigned int shift, unsigned int k)
{
	unsigned int i;
	char c, buf[PG];

	for (i = 0; i < npages; i++) {
		int r = touch(map + i * PG, &c);
		ssize_t n = pread(fd, buf, PG, i * PG);

		if (i == k ? r != 1 || n != -1 || errno != EIO :
			     r || c != shifted_fill(i, shift) || n != PG ||
			     buf[PG - 1] != shifted_fill(i, shift)) {
			fprintf(stderr, "  page %u: touch %d (%#x), pread %zd\n",
				i, r, c, n);
			return -1;
		}
	}
	return 0;
}

/*
 * A page that clones share fails once and leaves every file that holds
 * it: the source, a clone of the whole file (which shares the PTE table)
 * and a clone one page further on (which shares the page itself).
 */
TEST(a_page_clones_share_fails_in_every_file)
{
	int a = fresh(mpath("me_cl_a"), NPAGES * PG);
	int b = fresh(mpath("me_cl_b"), 0);
	int c = fresh(mpath("me_cl_c"), (NPAGES + 1) * PG);
	long corrupted = hw_corrupted_kb();
	char *ma, *mb, *mc;
	uint64_t pfn;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, fill(a, NPAGES));
	ASSERT_EQ(0, ioctl(b, FICLONE, a));
	ASSERT_EQ(0, clone_range(c, a, 0, PG, NPAGES * PG));
	ma = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, a, 0);
	mb = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, b, 0);
	mc = mmap(NULL, (NPAGES + 1) * PG, PROT_READ, MAP_SHARED, c, 0);
	ASSERT_NE(MAP_FAILED, ma);
	ASSERT_NE(MAP_FAILED, mb);
	ASSERT_NE(MAP_FAILED, mc);
	ASSERT_EQ(fill_of(K), ma[K * PG]);
	ASSERT_EQ(fill_of(K), mb[K * PG]);
	ASSERT_EQ(fill_of(K), mc[(K + 1) * PG]);
	pfn = pfn_of(ma + K * PG);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(pfn, pfn_of(mb + K * PG));		/* shared, not copied */
	ASSERT_EQ(pfn, pfn_of(mc + (K + 1) * PG));

	ASSERT_EQ(0, madvise(ma + K * PG, PG, MADV_HWPOISON));
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());	/* one page */
	EXPECT_EQ(0, view_ok(ma, NPAGES, K));
	EXPECT_EQ(0, io_ok(a, NPAGES, K));
	EXPECT_EQ(0, view_ok(mb, NPAGES, K));
	EXPECT_EQ(0, io_ok(b, NPAGES, K));
	EXPECT_EQ(0, shifted_ok(c, mc, NPAGES + 1, 1, K + 1));
	/* A write to another page of the clone still works, on its own. */
	mb[0] = 'W';
	EXPECT_EQ(fill_of(0), ma[0]);

	/* Each file's punch makes its offset a hole again. */
	ASSERT_EQ(0, fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, K * PG, PG));
	ASSERT_EQ(0, fallocate(b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, K * PG, PG));
	ASSERT_EQ(0, fallocate(c, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (K + 1) * PG, PG));
	EXPECT_EQ(0, ma[K * PG]);
	EXPECT_EQ(0, mb[K * PG]);
	EXPECT_EQ(0, mc[(K + 1) * PG]);
	munmap(ma, NPAGES * PG);
	munmap(mb, NPAGES * PG);
	munmap(mc, (NPAGES + 1) * PG);
	close(a);
	close(b);
	close(c);
	unlink(mpath("me_cl_a"));
	unlink(mpath("me_cl_b"));
	unlink(mpath("me_cl_c"));
	/* No file kept a reference: unpoison finds only its own. */
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
	EXPECT_EQ(corrupted, hw_corrupted_kb());
}

/*
 * The file a page names (its first owner) punched it, and only a clone
 * holds it when it fails: the search of the instance finds the clone.
 */
TEST(a_page_only_a_clone_still_holds_fails)
{
	int a = fresh(mpath("me_cl_first"), NPAGES * PG);
	int b = fresh(mpath("me_cl_second"), 0);
	char *mb, c;
	uint64_t pfn;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, fill(a, NPAGES));
	ASSERT_EQ(0, ioctl(b, FICLONE, a));
	ASSERT_EQ(0, fallocate(a, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, K * PG, PG));
	mb = mmap(NULL, NPAGES * PG, PROT_READ, MAP_SHARED, b, 0);
	ASSERT_NE(MAP_FAILED, mb);
	ASSERT_EQ(fill_of(K), mb[K * PG]);
	pfn = pfn_of(mb + K * PG);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, hwpoison_write("corrupt-pfn", pfn));
	EXPECT_EQ(0, view_ok(mb, NPAGES, K));
	EXPECT_EQ(0, io_ok(b, NPAGES, K));
	EXPECT_EQ(0, pread(a, &c, 1, K * PG) == 1 && c == 0 ? 0 : -1);
	munmap(mb, NPAGES * PG);
	close(a);
	close(b);
	unlink(mpath("me_cl_first"));
	unlink(mpath("me_cl_second"));
	EXPECT_EQ(0, hwpoison_write("unpoison-pfn", pfn));
}

/* ---- persistent instances ---- */

/*
 * Fill the device with one new file and check that none of its pages is
 * @bad.  Return: 0 if so, -1 with a message if not.
 */
static int device_never_hands_out(uint64_t bad)
{
	static char buf[1 << 20];
	int fd = open(p("fill"), O_RDWR | O_CREAT | O_TRUNC, 0644);
	off_t size = 0, off;
	char *map;
	int ret = 0;

	if (fd < 0)
		return -1;
	memset(buf, 'f', sizeof(buf));
	for (;;) {		/* until the device is full */
		ssize_t n = write(fd, buf, sizeof(buf));

		if (n <= 0)
			break;
		size += n;
	}
	for (;;) {		/* the last pages, one at a time */
		if (pwrite(fd, buf, PG, size) != (ssize_t)PG)
			break;
		size += PG;
	}
	if (free_pages() > 4) {
		fprintf(stderr, "  %llu pages still free\n", free_pages());
		ret = -1;
	}
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		close(fd);
		return -1;
	}
	for (off = 0; off < size && !ret; off += PG) {
		uint64_t pfn = pfn_of(map + off);

		if (map[off] != 'f' || !pfn || pfn == bad) {
			fprintf(stderr, "  page %lld of %lld: pfn %#llx\n",
				(long long)(off / PG), (long long)(size / PG),
				(unsigned long long)pfn);
			ret = -1;
		}
	}
	munmap(map, size);
	close(fd);
	unlink(p("fill"));
	return ret;
}

/*
 * The failed page @pfn is never handed out, before and after a remount,
 * and fsck (the device unmounted) says @says.  0 if so.
 */
static int never_again(uint64_t pfn, const char *says)
{
	if (device_never_hands_out(pfn) || remount() ||
	    device_never_hands_out(pfn) || umount(DIR))
		return -1;
	return fsck_says(says) | do_mount();
}

/* A page of a file fails: the same as in RAM, and it stays failed. */
TEST_F(pm, a_file_page_fails_and_stays_failed)
{
	int fd, pipefd[2];
	char *map, c;
	uint64_t pfn;
	pid_t child;

	fd = mapped_file(p("f"), PROT_READ | PROT_WRITE, &map, 4, &pfn);
	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, pipe(pipefd));
	child = child_checker(pipefd[0], map, NPAGES, K);
	ASSERT_LT(0, child);
	ASSERT_EQ(0, madvise(map + K * PG, PG, MADV_HWPOISON));
	EXPECT_EQ(0, view_ok(map, NPAGES, K));
	EXPECT_EQ(0, io_ok(fd, NPAGES, K));
	ASSERT_EQ(1, write(pipefd[1], "g", 1));
	EXPECT_EQ(0, child_result(child));
	munmap(map, NPAGES * PG);
	close(fd);

	/* The device remembers it. */
	ASSERT_EQ(0, umount(DIR));
	EXPECT_EQ(0, fsck_says("1 failed pages (1 marks in files, 0 unfinished)"));
	ASSERT_EQ(0, do_mount());
	fd = open(p("f"), O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, io_ok(fd, NPAGES, K));
	map = mmap(NULL, NPAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, view_ok(map, NPAGES, K));

	/* A punch makes a hole that takes another page. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       K * PG, PG));
	EXPECT_EQ(0, touch(map + K * PG, &c));
	EXPECT_EQ(0, c);
	map[K * PG] = 'Z';
	EXPECT_NE(pfn, pfn_of(map + K * PG));
	munmap(map, NPAGES * PG);
	close(fd);
	ASSERT_EQ(0, unlink(p("f")));
	EXPECT_EQ(0, never_again(pfn, "1 failed pages (0 marks in files, 0 unfinished)"));
}

/*
 * A page of a 2 MiB leaf on the device fails: the leaf splits (a PTE
 * table from the device), the page alone is listed and marked, its 511
 * neighbours keep their bytes; the device remembers the mark and the
 * other leaf (fsck counts it), and a remount reads the same.
 */
TEST_F(pm, a_page_of_a_device_leaf_fails)
{
	unsigned int npages = 1024, k = 600;
	struct morsel_stat st;
	int fd = open(p("h"), O_RDWR | O_CREAT, 0644);
	uint64_t pfn, pfn0;
	char *map;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, (off_t)npages * PG));
	map = two_leaves(_metadata, fd, npages, k, &pfn, &pfn0);
	ASSERT_EQ(0, madvise(map + k * PG, PG, MADV_HWPOISON));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.huge);
	EXPECT_EQ(npages - 1, st.pages);
	EXPECT_EQ(0, view_ok(map, npages, k));
	EXPECT_EQ(0, io_ok(fd, npages, k));
	munmap(map, npages * PG);
	close(fd);

	ASSERT_EQ(0, umount(DIR));
	EXPECT_EQ(0, fsck_says("1 failed pages (1 marks in files, 0 unfinished)"));
	EXPECT_EQ(0, fsck_says(" 1 2 MiB leaves)"));
	ASSERT_EQ(0, do_mount());
	fd = open(p("h"), O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.huge);
	EXPECT_EQ(0, io_ok(fd, npages, k));
	close(fd);
}

/* A free page fails (the injector, by pfn): it is never handed out. */
TEST_F(pm, a_free_page_fails)
{
	uint64_t pfn;
	char *map;
	int fd = mapped_file(p("g"), PROT_READ, &map, 4, &pfn);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(0, pfn);
	munmap(map, NPAGES * PG);
	close(fd);
	ASSERT_EQ(0, unlink(p("g")));	/* the page is free now */
	ASSERT_EQ(0, hwpoison_write("corrupt-pfn", pfn));
	EXPECT_EQ(0, never_again(pfn, "1 failed pages (0 marks in files, 0 unfinished)"));
}

/*
 * A page table of a file fails: metadata cannot be replaced while
 * mounted; the error is refused (EIO), and the file and device stay whole.
 */
TEST_F(pm, a_table_page_fails)
{
	uint64_t table;		/* the PMD entry's: the file's PTE table */
	char *map;
	int fd = mapped_file(p("t"), PROT_READ, &map, 3, &table);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(0, table);
	EXPECT_NE(0, hwpoison_write("corrupt-pfn", table));
	EXPECT_EQ(0, view_ok(map, NPAGES, NPAGES));
	EXPECT_EQ(0, io_ok(fd, NPAGES, NPAGES));
	munmap(map, NPAGES * PG);
	close(fd);
}

TEST_HARNESS_MAIN
