// SPDX-License-Identifier: GPL-2.0
/*
 * huge1g_test: 1 GiB leaves inside morsels (issue 22; docs/design.md).
 *
 * - The reserve: huge1g=N takes N blocks of 1 GiB at mount (pool.c),
 *   shown in /proc/mounts and /sys/fs/morselfs/huge1g_free, changed by
 *   remount; more than can be had is ENOMEM and leaves the reserve as it
 *   was; a persistent instance refuses the option (EINVAL).
 * - Population: a fault or POPULATE of a 1 GiB range inside the size of a
 *   morsel of order 3 gets one 1 GiB leaf (a PUD leaf in the process's
 *   walk, no PMD or PTE table), the next range falls back to 2 MiB leaves
 *   when the reserve is empty (counted).
 * - Paths that meet a leaf: EVICT of the whole leaf gives its block back
 *   (the next fault gets the same frames, zeroed); a punch or a memory
 *   error inside it splits it into 2 MiB leaves (the failed or punched
 *   page's leaf splits further), and the split block leaves the reserve;
 *   lowering the order to 2 splits it; order-0 and order-2 mappings of the
 *   morsel; MAP_PRIVATE, fork, mremap; GUP's slow path (process_vm_readv,
 *   O_DIRECT, vmsplice, whose pin keeps a page and the block out of the
 *   reserve); the memory cgroup is not charged for the block.
 *
 * A 1 GiB block needs a free, aligned gigabyte: tests/run-all boots this
 * suite with 8 GiB (ZONE_NORMAL above 4 GiB; a split block's gigabyte may
 * be taken by other allocations once its pages are free again, and the
 * last two tests use up one each).  Each test mounts its own
 * instance at /tmp/morsel-1g and unmounts it at the end.
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
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"
#include "probe/probe.h"

#define GDIR	"/tmp/morsel-1g"
#define OPTS	"huge=within_size,huge1g=1"
#define HPG	(2 * MiB)
#define NR1G	(GiB / PG)

#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif

static char *gpath(const char *name)
{
	return path_in(GDIR, name);
}

/*
 * The suite's instance at GDIR (OPTS) and a fresh file "f" of @size in it.
 * The instance stays mounted from test to test (the suite unmounts it when
 * it ends), so that a block that came back whole waits in the reserve for
 * the next test: a gigabyte given back to the page allocator soon holds
 * pages of other allocations and cannot be emptied again (docs/design.md;
 * under the debug kernel within a few mounts).  A test that used up the
 * block (a split, a pin) makes the next one take a new one (remount).
 */
static int setup(struct __test_metadata *_metadata, const char *opts,
		 uint64_t size)
{
	char have[512];
	int fd;

	proc_mount_opts(GDIR, have, sizeof(have));
	if (!have[0]) {
		ASSERT_EQ(0, mount_instance(GDIR, opts))
			TH_LOG("mount %s: %s", opts, strerror(errno));
	} else {
		ASSERT_EQ(0, mount("none", GDIR, NULL, MS_REMOUNT, opts))
			TH_LOG("remount %s: %s", opts, strerror(errno));
	}
	unlink(gpath("f"));
	fd = morsel_create(gpath("f"), size, 0644);
	ASSERT_LE(0, fd) TH_LOG("create: %s", strerror(-fd));
	return fd;
}

static void teardown(int fd)
{
	close(fd);
	unlink(gpath("f"));
}

/* The parent alone: every child of the harness and of a test _exit()s. */
static void __attribute__((destructor)) unmount_the_instance(void)
{
	umount2(GDIR, 0);
}

static int range(int fd, unsigned long cmd, uint64_t off, uint64_t len)
{
	return morsel_range_ioctl(fd, cmd, off, len, 0);
}

/* The pattern: one byte per 64 KiB, a function of the offset. */
#define STRIDE	(64 * KiB)

static char pat(uint64_t i)
{
	return (char)((i >> 16) * 7 + 1);
}

static void fill(char *p, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = off; i < off + len; i += STRIDE)
		p[i + (i >> 16) % 4096] = pat(i);
}

/* The pattern over [@off, @off + @len), or zeros in [@zs, @ze). */
static void check(struct __test_metadata *_metadata, const char *p,
		  uint64_t off, uint64_t len, uint64_t zs, uint64_t ze)
{
	uint64_t i;

	for (i = off; i < off + len; i += STRIDE) {
		uint64_t at = i + (i >> 16) % 4096;
		char want = at >= zs && at < ze ? 0 : pat(i);

		ASSERT_EQ(want, p[at]) TH_LOG("offset %llu", (unsigned long long)at);
	}
}

/* The caller's entries for @addr (tests/probe), which must be readable. */
static struct probe_entries entries(struct __test_metadata *_metadata,
				    void *addr)
{
	struct probe_entries e = { .addr = (uintptr_t)addr };
	int probe = open("/dev/morsel_probe", O_RDWR);

	ASSERT_LE(0, probe);
	ASSERT_EQ(0, ioctl(probe, PROBE_IOC_ENTRIES, &e));
	close(probe);
	return e;
}

/* The frame of the 1 GiB page that maps @addr for the caller, or 0. */
static uint64_t pfn_1g(struct __test_metadata *_metadata, void *addr)
{
	struct probe_entries e = entries(_metadata, addr);

	if ((e.entry[2] & 1) && (e.entry[2] & 0x80))	/* present, PSE */
		return (e.entry[2] & 0x000fffffc0000000ULL) >> 12;
	return 0;
}

/* A 2 GiB file (order 3) whose first GiB is one populated 1 GiB leaf. */
static char *one_leaf(struct __test_metadata *_metadata, int *fd)
{
	char *p;

	*fd = setup(_metadata, OPTS, 2 * GiB);
	ASSERT_EQ(3, st(_metadata, *fd).order);
	ASSERT_EQ(0, range(*fd, MORSEL_IOC_POPULATE, 0, GiB));
	ASSERT_EQ(1, st(_metadata, *fd).huge1g);
	p = map(_metadata, *fd, 2 * GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, GiB);
	return p;
}

TEST_F_TIMEOUT(slow, reserve_mount_remount_and_refusals, 300)
{
	long before = counter(_metadata, "huge1g_free");
	char opts[512];

	ASSERT_EQ(0, mount_instance(GDIR, OPTS)) TH_LOG("%s", strerror(errno));
	proc_mount_opts(GDIR, opts, sizeof(opts));
	EXPECT_NE(NULL, strstr(opts, "huge1g=1")) TH_LOG("%s", opts);
	EXPECT_EQ(before + 1, counter(_metadata, "huge1g_free"));
	/* Remount gives the block back, and takes one again. */
	ASSERT_EQ(0, mount("none", GDIR, NULL, MS_REMOUNT, "huge1g=0"));
	EXPECT_EQ(before, counter(_metadata, "huge1g_free"));
	proc_mount_opts(GDIR, opts, sizeof(opts));
	EXPECT_EQ(NULL, strstr(opts, "huge1g")) TH_LOG("%s", opts);
	ASSERT_EQ(0, mount("none", GDIR, NULL, MS_REMOUNT, "huge1g=1"));
	EXPECT_EQ(before + 1, counter(_metadata, "huge1g_free"));
	/* More than the guest has: ENOMEM, and the reserve stays as it was. */
	ASSERT_ERRNO(ENOMEM, mount("none", GDIR, NULL, MS_REMOUNT, "huge1g=64"));
	EXPECT_EQ(before + 1, counter(_metadata, "huge1g_free"));
	proc_mount_opts(GDIR, opts, sizeof(opts));
	EXPECT_NE(NULL, strstr(opts, "huge1g=1")) TH_LOG("%s", opts);
	umount2(GDIR, 0);
	EXPECT_EQ(before, counter(_metadata, "huge1g_free"));
	ASSERT_ERRNO(ENOMEM, mount("none", GDIR, "morselfs", 0, "huge1g=64"));
	EXPECT_EQ(before, counter(_metadata, "huge1g_free"));
	ASSERT_ERRNO(EINVAL, mount("none", GDIR, "morselfs", 0, "huge1g=x"));
	ASSERT_ERRNO(EINVAL, mount("none", GDIR, "morselfs", 0, "huge1g=-1"));
	/* 1 GiB leaves are RAM's: a persistent instance refuses them. */
	ASSERT_ERRNO(EINVAL, mount("none", GDIR, "morselfs", 0,
				   "pmem=/dev/pmem0,huge1g=1"));
}

TEST_F_TIMEOUT(slow, faults_fill_a_1g_leaf_then_fall_back_to_2m, 300)
{
	long leaves = counter(_metadata, "huge1g");
	long fallbacks = counter(_metadata, "huge1g_fallbacks");
	int fd = setup(_metadata, OPTS, 2 * GiB);
	long free_before = counter(_metadata, "huge1g_free");
	struct morsel_stat s;
	uint64_t pfn;
	char *p;

	p = map(_metadata, fd, 2 * GiB, PROT_READ | PROT_WRITE);
	p[5 * MiB] = 'a';
	p[GiB - 1] = 'z';
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge1g);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(NR1G, s.pages);
	EXPECT_EQ(1, s.tables[2]);	/* the root: no PMD or PTE table */
	EXPECT_EQ(0, s.tables[1]);
	EXPECT_EQ(0, s.tables[0]);
	EXPECT_EQ(leaves + 1, counter(_metadata, "huge1g"));
	EXPECT_EQ(free_before - 1, counter(_metadata, "huge1g_free"));
	/* The process's walk ends at the PUD level: one 1 GiB page. */
	pfn = pfn_1g(_metadata, p + 5 * MiB);
	ASSERT_NE(0, pfn);
	EXPECT_EQ(0, pfn % NR1G);
	EXPECT_EQ(pfn, pfn_1g(_metadata, p + GiB - PG));
	EXPECT_EQ('a', p[5 * MiB]);
	EXPECT_EQ(0, p[5 * MiB + 1]);
	/* The reserve is empty: the second GiB gets a 2 MiB leaf. */
	p[GiB + 3 * MiB] = 'b';
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge1g);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(1, s.tables[1]);
	EXPECT_EQ(0, s.tables[0]);
	EXPECT_EQ(fallbacks + 1, counter(_metadata, "huge1g_fallbacks"));
	EXPECT_EQ(0, pfn_1g(_metadata, p + GiB + 3 * MiB));
	munmap(p, 2 * GiB);
	close(fd);
	ASSERT_EQ(0, unlink(gpath("f")));
	/* Deleting the file gives the unsplit block back. */
	EXPECT_EQ(free_before, counter(_metadata, "huge1g_free"));
	EXPECT_EQ(leaves, counter(_metadata, "huge1g"));
}

TEST_F_TIMEOUT(slow, evict_whole_leaf_gives_the_block_back, 300)
{
	int fd;
	char *p = one_leaf(_metadata, &fd);
	long free_now = counter(_metadata, "huge1g_free");
	uint64_t pfn = pfn_1g(_metadata, p);
	struct morsel_stat s;

	ASSERT_NE(0, pfn);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, GiB));
	s = st(_metadata, fd);
	EXPECT_EQ(0, s.huge1g);
	EXPECT_EQ(0, s.pages);
	EXPECT_EQ(free_now + 1, counter(_metadata, "huge1g_free"));
	/* Every mapper sees the hole; the next fault gets the block again. */
	EXPECT_EQ(0, pfn_1g(_metadata, p));
	EXPECT_EQ(0, p[STRIDE + 1]);
	EXPECT_EQ(1, st(_metadata, fd).huge1g);
	EXPECT_EQ(pfn, pfn_1g(_metadata, p));
	check(_metadata, p, 0, GiB, 0, GiB);		/* zeroed */
	/* A smaller reserve: the block in the leaf goes when the leaf does. */
	ASSERT_EQ(0, mount("none", GDIR, NULL, MS_REMOUNT, "huge1g=0"));
	EXPECT_EQ(free_now, counter(_metadata, "huge1g_free"));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, GiB));
	EXPECT_EQ(free_now, counter(_metadata, "huge1g_free"));
	p[0] = 1;			/* no reserve: a 2 MiB leaf */
	EXPECT_EQ(0, st(_metadata, fd).huge1g);
	EXPECT_EQ(1, st(_metadata, fd).huge);
	munmap(p, 2 * GiB);
	teardown(fd);
}

TEST_F_TIMEOUT(slow, punch_inside_a_1g_leaf_splits_it, 300)
{
	long splits = counter(_metadata, "huge1g_splits");
	long splits2m = counter(_metadata, "huge_splits");
	int fd;
	char *p = one_leaf(_metadata, &fd);
	long free_now = counter(_metadata, "huge1g_free");
	uint64_t hole = 5 * MiB + PG;
	struct morsel_stat s;

	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       hole, PG));
	s = st(_metadata, fd);
	EXPECT_EQ(0, s.huge1g);
	EXPECT_EQ(511, s.huge);			/* the punched one split too */
	EXPECT_EQ(NR1G - 1, s.pages);
	EXPECT_EQ(1, s.tables[1]);
	EXPECT_EQ(1, s.tables[0]);
	EXPECT_EQ(splits + 1, counter(_metadata, "huge1g_splits"));
	EXPECT_EQ(splits2m + 1, counter(_metadata, "huge_splits"));
	check(_metadata, p, 0, GiB, hole, hole + PG);
	EXPECT_EQ(0, p[hole]);
	EXPECT_EQ(0, pfn_1g(_metadata, p));
	munmap(p, 2 * GiB);
	close(fd);
	ASSERT_EQ(0, unlink(gpath("f")));
	/* The split block left the reserve; a remount takes a new one. */
	EXPECT_EQ(free_now, counter(_metadata, "huge1g_free"));
	ASSERT_EQ(0, mount("none", GDIR, NULL, MS_REMOUNT, "huge1g=1"));
	EXPECT_EQ(free_now + 1, counter(_metadata, "huge1g_free"));
}

TEST_F_TIMEOUT(slow, lowering_the_order_splits_the_leaf, 300)
{
	int fd;
	char *p = one_leaf(_metadata, &fd);
	struct morsel_stat s;

	munmap(p, 2 * GiB);
	/* Order 2: the root becomes the first GiB's PMD table, split. */
	ASSERT_EQ(0, ftruncate(fd, GiB));
	s = st(_metadata, fd);
	EXPECT_EQ(2, s.order);
	EXPECT_EQ(0, s.huge1g);
	EXPECT_EQ(512, s.huge);
	EXPECT_EQ(NR1G, s.pages);
	EXPECT_EQ(0, s.tables[2]);
	EXPECT_EQ(1, s.tables[1]);
	/* A truncate inside it frees whole 2 MiB leaves. */
	ASSERT_EQ(0, ftruncate(fd, 512 * MiB));
	s = st(_metadata, fd);
	EXPECT_EQ(256, s.huge);
	EXPECT_EQ(256 * 512, s.pages);
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	check(_metadata, p, 0, 512 * MiB, 0, 0);
	munmap(p, GiB);
	teardown(fd);
}

/*
 * Mappings of order 0 and 2 made while the file was smaller: the order-0
 * one copies the leaf of page 0 (tree.c morsel_mount_entry); the order-2
 * one mounts the first GiB's PMD table, so its first touch splits the
 * leaf (mount.c) into 2 MiB leaves over the same pages.
 */
TEST_F_TIMEOUT(slow, order0_and_order2_mappings_over_a_1g_leaf, 300)
{
	int fd = setup(_metadata, OPTS, PG);
	char *q0, *q2, *p;

	q0 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q0);
	ASSERT_EQ(0, ftruncate(fd, GiB));
	q2 = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q2);
	ASSERT_EQ(0, ftruncate(fd, 2 * GiB));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, GiB));
	ASSERT_EQ(1, st(_metadata, fd).huge1g);
	p = map(_metadata, fd, 2 * GiB, PROT_READ | PROT_WRITE);
	p[0] = 'a';
	p[7 * MiB] = 'b';
	EXPECT_EQ('a', q0[0]);		/* the copy of page 0 */
	EXPECT_EQ(1, st(_metadata, fd).huge1g);
	EXPECT_EQ('b', q2[7 * MiB]);	/* mounts the PMD table: a split */
	EXPECT_EQ(0, st(_metadata, fd).huge1g);
	EXPECT_EQ(512, st(_metadata, fd).huge);
	q2[9 * MiB] = 'c';
	EXPECT_EQ('c', p[9 * MiB]);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, HPG));
	EXPECT_EQ(0, q0[0]);		/* the copy went with the page */
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ('b', p[7 * MiB]);
	munmap(p, 2 * GiB);
	munmap(q2, GiB);
	munmap(q0, PG);
	teardown(fd);
}

TEST_F_TIMEOUT(slow, private_fork_and_mremap, 300)
{
	int fd;
	char *p = one_leaf(_metadata, &fd), *q, *r;
	pid_t pid;

	/* MAP_PRIVATE: page by page, copies on write, the file keeps its data. */
	q = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	check(_metadata, q, 0, 8 * MiB, 0, 0);
	q[5 * PG] = 'p';
	EXPECT_NE('p', p[5 * PG]);
	munmap(q, 8 * MiB);
	pid = fork();
	if (!pid) {
		check(_metadata, p, 0, GiB, 0, 0);
		p[HPG + 8] = 'c';
		_exit(0);
	}
	wait_child_ok(_metadata, pid);
	EXPECT_EQ('c', p[HPG + 8]);
	/* mremap moves the mount, not the leaf. */
	r = mremap(p, vma_len(_metadata, p), vma_len(_metadata, p),
		   MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_EQ('c', r[HPG + 8]);
	EXPECT_NE(0, pfn_1g(_metadata, r));
	EXPECT_EQ(1, st(_metadata, fd).huge1g);
	munmap(r, 2 * GiB);
	teardown(fd);
}

/*
 * GUP's slow path takes the page at the address alone from a special PUD
 * leaf (kernel patch 11): reads across the leaf and the 2 MiB leaf after
 * it, O_DIRECT into it, and a pin that outlives the eviction of the leaf
 * (the block then stays out of the reserve).  Wrong references would show
 * as bad-page reports, which fail the VM run.
 */
TEST_F_TIMEOUT(slow, gup_across_a_1g_leaf, 300)
{
	int fd;
	char *p = one_leaf(_metadata, &fd), *want = malloc(64 * KiB);
	struct iovec local, remote, v;
	int dfd = open("/proc/self/exe", O_RDONLY | O_DIRECT);
	int nfd = open("/proc/self/exe", O_RDONLY);
	long free_now = counter(_metadata, "huge1g_free");
	char buf[64 * KiB];
	int pipefd[2];
	uint64_t i;

	ASSERT_NE(NULL, want);
	ASSERT_LE(0, dfd);
	ASSERT_LE(0, nfd);
	p[GiB + PG] = 'x';		/* a 2 MiB leaf after the 1 GiB one */
	ASSERT_EQ(1, st(_metadata, fd).huge);
	memset(p + GiB - 32 * KiB, 'q', 32 * KiB);
	local.iov_base = buf;
	local.iov_len = sizeof(buf);
	remote.iov_base = p + GiB - 32 * KiB;
	remote.iov_len = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	EXPECT_EQ(0, memcmp(buf, p + GiB - 32 * KiB, sizeof(buf)));
	/* O_DIRECT from the 9p host root into the middle of the leaf. */
	ASSERT_EQ(16 * KiB, pread(nfd, want, 16 * KiB, 0));
	ASSERT_EQ(16 * KiB, pread(dfd, p + 300 * MiB - 8 * KiB, 16 * KiB, 0));
	EXPECT_EQ(0, memcmp(want, p + 300 * MiB - 8 * KiB, 16 * KiB));
	/* vmsplice pins two pages; the eviction cannot give the block back. */
	ASSERT_EQ(0, pipe(pipefd));
	v.iov_base = p + 7 * PG;
	v.iov_len = 2 * PG;
	memset(p + 7 * PG, 'v', 2 * PG);
	ASSERT_EQ((ssize_t)(2 * PG), vmsplice(pipefd[1], &v, 1, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, GiB));
	EXPECT_EQ(0, st(_metadata, fd).huge1g);
	EXPECT_EQ(free_now, counter(_metadata, "huge1g_free"));
	ASSERT_EQ((ssize_t)(2 * PG), read(pipefd[0], buf, 2 * PG));
	for (i = 0; i < 2 * PG; i++)
		ASSERT_EQ('v', buf[i]);
	EXPECT_EQ(0, p[7 * PG]);
	EXPECT_EQ('x', p[GiB + PG]);
	close(pipefd[0]);
	close(pipefd[1]);
	close(dfd);
	close(nfd);
	free(want);
	munmap(p, 2 * GiB);
	teardown(fd);
}

#define CG "/sys/fs/cgroup"

/* The block is not charged: only the root table is (docs/design.md). */
TEST_F_TIMEOUT(slow, memcg_not_charged_for_the_block, 300)
{
	int fd = setup(_metadata, OPTS, 2 * GiB), status;
	fresh_cgroup(_metadata, "morsel-1g");
	if (!fork()) {
		char *p = mmap(NULL, 2 * GiB, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		long before, after;

		if (join_cgroup("morsel-1g") || p == MAP_FAILED)
			_exit(1);
		before = cg_current("morsel-1g");
		p[0] = 1;
		after = cg_current("morsel-1g");
		printf("# memory.current %ld -> %ld (+%ld KiB)\n", before, after,
		       (after - before) / 1024);
		_exit(after - before < (long)MiB ? 0 : 2);
	}
	wait(&status);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(1, st(_metadata, fd).huge1g);
	teardown(fd);
	rmdir(CG "/morsel-1g");
}

TEST_F_TIMEOUT(slow, cli_and_stat, 300)
{
	int fd;
	char *p = one_leaf(_metadata, &fd), cmd[512], out[4096];

	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s", gpath("f"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "huge:     0 2 MiB leaves, 1 1 GiB leaves, mode within_size"))
		TH_LOG("%s", out);
	munmap(p, 2 * GiB);
	teardown(fd);
}

/* debugfs's hwpoison injector (CONFIG_HWPOISON_INJECT): @file on @pfn. */
static int hwpoison(const char *file, uint64_t pfn)
{
	char val[32], path[128];

	mkdir("/sys/kernel/debug", 0755);
	mount("none", "/sys/kernel/debug", "debugfs", 0, NULL);
	snprintf(path, sizeof(path), "/sys/kernel/debug/hwpoison/%s", file);
	snprintf(val, sizeof(val), "%#llx", (unsigned long long)pfn);
	return write_file(path, val);
}

/*
 * The last two tests each leave a page of a gigabyte out of the page
 * allocator for the rest of the boot (a failed page that was freed stays
 * out even once unpoisoned), so that gigabyte can never be emptied again:
 * the suite needs more free gigabytes than one (tests/run-all gives it
 * 8 GiB).  A page inside a 1 GiB leaf fails, the leaf splits into 2 MiB leaves and the failed
 * page's leaf into 4 KiB ones; only that page leaves the file.
 */
TEST_F_TIMEOUT(slow, a_page_of_a_1g_leaf_fails, 300)
{
	long splits = counter(_metadata, "huge1g_splits");
	long corrupted = hw_corrupted_kb();
	uint64_t k = 100 * MiB + 3 * PG, pfn;
	struct morsel_stat s;
	int fd;
	char *p = one_leaf(_metadata, &fd);

	ASSERT_LE(0, corrupted);
	pfn = pfn_1g(_metadata, p) + k / PG;
	ASSERT_EQ(0, madvise(p + k, PG, MADV_HWPOISON));
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());
	EXPECT_EQ(splits + 1, counter(_metadata, "huge1g_splits"));
	s = st(_metadata, fd);
	EXPECT_EQ(0, s.huge1g);
	EXPECT_EQ(511, s.huge);
	EXPECT_EQ(NR1G - 1, s.pages);
	check(_metadata, p, 0, 64 * MiB, 0, 0);
	check(_metadata, p, 200 * MiB, 64 * MiB, 0, 0);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       k, PG));
	EXPECT_EQ(0, p[k]);
	munmap(p, 2 * GiB);
	teardown(fd);
	EXPECT_EQ(0, hwpoison("unpoison-pfn", pfn));
	EXPECT_EQ(corrupted, hw_corrupted_kb());
}

/*
 * A page of a free block fails (no leaf holds it: memory_failure() finds
 * no owner): the next leaf does not get that block, which leaves the
 * reserve (its good pages go back to the page allocator), so the fault
 * falls back to a 2 MiB leaf.
 */
TEST_F_TIMEOUT(slow, a_free_block_that_fails_leaves_the_reserve, 300)
{
	long corrupted = hw_corrupted_kb();
	int fd;
	char *p = one_leaf(_metadata, &fd);
	uint64_t pfn = pfn_1g(_metadata, p) + 77;
	long free_now = counter(_metadata, "huge1g_free");

	ASSERT_LE(0, corrupted);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, GiB));
	ASSERT_EQ(free_now + 1, counter(_metadata, "huge1g_free"));
	hwpoison("corrupt-pfn", pfn);	/* its verdict: an unowned page */
	EXPECT_EQ(corrupted + 4, hw_corrupted_kb());
	p[0] = 'a';
	EXPECT_EQ(0, st(_metadata, fd).huge1g);
	EXPECT_EQ(1, st(_metadata, fd).huge);
	EXPECT_EQ(free_now, counter(_metadata, "huge1g_free"));
	EXPECT_EQ('a', p[0]);
	munmap(p, 2 * GiB);
	teardown(fd);
	EXPECT_EQ(0, hwpoison("unpoison-pfn", pfn));
	EXPECT_EQ(corrupted, hw_corrupted_kb());
}

TEST_HARNESS_MAIN
