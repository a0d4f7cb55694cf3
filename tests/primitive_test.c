// SPDX-License-Identifier: GPL-2.0
/*
 * primitive_test: the morsel and its mappings (kselftest harness; with
 * ioctl_test, io_test and lifecycle_test it replaced morsel_test).
 *
 * - Sizes and orders: the order a size chooses, the largest sizes (order 4
 *   only with 5-level paging), resizing with and without mappings.
 * - mmap: every order maps its whole extent, naturally aligned; bad
 *   arguments; MAP_FIXED; two mappings in one process.
 * - The generic mm paths (munmap, exit, mprotect, mremap, madvise, a
 *   partial munmap, MAP_FIXED over a mapping): each works or is refused,
 *   and none touches the morsel's pages or tables.
 * - Rights: read-only opens and mappings; execution needs PROT_EXEC.
 * - Accounting: morsel tables are not counted to the process (VmPTE).
 * - Orders 3 and 4 (one root table, one mount entry) and a contiguous run
 *   of morsels (morsel_map_run).
 *
 * Runs in the VM (vm/run; tests/run-all) as root, with the suite's
 * morselfs at $MORSEL_MNT and the paging depth in $MORSEL_PAGING (4 or 5);
 * tests/run-all runs it on a persistent instance too (tests/on_pmem).
 *
 * kselftest harness: every TEST runs in its own child process, one after
 * another; each creates the files it uses (its own names) and depends on
 * no other test.  A check in a fork child is an ASSERT_* too: a failure
 * ends the child and fails the test.  The checks of the module's global
 * counters (/sys/fs/morselfs) compare before and after, so nothing else
 * may make or free morsels while the suite runs (tests/run-all runs one
 * suite at a time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define PALIGN(x) (((x) + PG - 1) & ~(PG - 1))

/* VmPTE of this process in KiB, from /proc/self/status. */
static long vm_pte_kib(struct __test_metadata *_metadata)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* ---- sizes and orders ---- */

TEST(size_chooses_order)
{
	static const struct { uint64_t size; int order; } cases[] = {
		{ 0, 0 }, { 1, 0 }, { 4 * KiB, 0 }, { 4 * KiB + 1, 1 },
		{ 5000, 1 }, { 2 * MiB, 1 }, { 2 * MiB + 1, 2 }, { 1 * GiB, 2 },
	};
	int pm = mnt_is_persistent();
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int fd = fresh(mpath("order"), cases[i].size);
		struct morsel_stat s;
		struct stat sb;

		ASSERT_LE(0, fd) TH_LOG("size %llu", (unsigned long long)cases[i].size);
		s = st(_metadata, fd);
		ASSERT_EQ(0, fstat(fd, &sb));
		ASSERT_EQ(cases[i].size, (uint64_t)sb.st_size);
		ASSERT_EQ(cases[i].size, s.size);
		ASSERT_EQ((uint64_t)cases[i].order, s.order);
		ASSERT_EQ(morsel_order_extent(cases[i].order), s.extent);
		ASSERT_EQ(cases[i].order, morsel_order_for_size(cases[i].size));
		/*
		 * Right after creation: no data page and, on a volatile
		 * instance, no table (the root comes with the first page); a
		 * persistent one keeps the order in its root, one table.
		 */
		ASSERT_EQ(0, s.pages);
		ASSERT_EQ((uint64_t)(cases[i].order == 1 && pm), s.tables[0]);
		ASSERT_EQ((uint64_t)(cases[i].order == 2 && pm), s.tables[1]);
		ASSERT_EQ(0, s.tables[2] + s.tables[3]);
		close(fd);
	}
	unlink(mpath("order"));
}

TEST(size_limits)
{
	int fd = fresh(mpath("big"), 2 * MiB), pm = mnt_is_persistent();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 1 * GiB + 1));
	ASSERT_EQ(3, st(_metadata, fd).order);
	ASSERT_EQ(0, ftruncate(fd, 512 * GiB));
	ASSERT_EQ(3, st(_metadata, fd).order);
	if (five_level(_metadata)) {
		ASSERT_EQ(0, ftruncate(fd, 256 * TiB));
		ASSERT_EQ(4, st(_metadata, fd).order);
		ASSERT_EQ(pm, st(_metadata, fd).tables[3]);	/* empty */
	} else {
		/* An order-4 morsel could never be mapped with 4 levels. */
		ASSERT_ERRNO(EFBIG, ftruncate(fd, 512 * GiB + 1));
		ASSERT_ERRNO(EFBIG, ftruncate(fd, 256 * TiB));
		ASSERT_EQ(3, st(_metadata, fd).order);
	}
	ASSERT_ERRNO(EFBIG, ftruncate(fd, 256 * TiB + 1));
	ASSERT_ERRNO(EINVAL, ftruncate(fd, -1));
	ASSERT_EQ(-EFBIG, morsel_order_for_size(256 * TiB + 1));
	/* Back down: the tables above the old root go again. */
	ASSERT_EQ(0, ftruncate(fd, 2 * MiB));
	ASSERT_EQ(1, st(_metadata, fd).order);
	ASSERT_EQ(2 * MiB, st(_metadata, fd).size);
	ASSERT_EQ(pm, st(_metadata, fd).tables[0]);
	ASSERT_EQ(0, st(_metadata, fd).tables[1] + st(_metadata, fd).tables[2] +
		     st(_metadata, fd).tables[3]);
	close(fd);
	unlink(mpath("big"));
}

TEST(resize_keeps_data_and_frees)
{
	int fd = fresh(mpath("grow"), 4 * KiB);
	char *p;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 4 * KiB, PROT_READ | PROT_WRITE);
	strcpy(p, "first");
	munmap(p, 4 * KiB);
	/* 4 KiB -> 2 MiB: the old page becomes entry 0 of a new PTE table. */
	ASSERT_EQ(0, ftruncate(fd, 2 * MiB));
	ASSERT_EQ(1, st(_metadata, fd).order);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	ASSERT_STREQ("first", p);
	strcpy(p + 1 * MiB, "second");
	munmap(p, 2 * MiB);
	/* 2 MiB -> 1 GiB */
	ASSERT_EQ(0, ftruncate(fd, 1 * GiB));
	ASSERT_EQ(2, st(_metadata, fd).order);
	ASSERT_EQ(2, st(_metadata, fd).pages);
	p = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);
	ASSERT_STREQ("first", p);
	ASSERT_STREQ("second", p + 1 * MiB);
	strcpy(p + 512 * MiB, "third");
	munmap(p, 1 * GiB);
	ASSERT_EQ(3, st(_metadata, fd).pages);
	ASSERT_EQ(2, st(_metadata, fd).tables[0]);
	/* Shrinking frees what was cut off, and lowers the order. */
	ASSERT_EQ(0, ftruncate(fd, 3 * MiB));
	ASSERT_EQ(2, st(_metadata, fd).pages);
	ASSERT_EQ(1, st(_metadata, fd).tables[0]);
	ASSERT_EQ(0, ftruncate(fd, 8 * KiB));
	ASSERT_EQ(1, st(_metadata, fd).order);
	ASSERT_EQ(1, st(_metadata, fd).pages);
	ASSERT_EQ(0, st(_metadata, fd).tables[1]);
	ASSERT_EQ(0, ftruncate(fd, 4 * KiB));
	ASSERT_EQ(0, st(_metadata, fd).order);
	ASSERT_EQ(0, st(_metadata, fd).tables[0]);
	p = map(_metadata, fd, 4 * KiB, PROT_READ);
	ASSERT_STREQ("first", p);
	munmap(p, 4 * KiB);
	/* Shrinking inside a page zeroes the cut-off bytes. */
	ASSERT_EQ(0, ftruncate(fd, 2));
	ASSERT_EQ(0, ftruncate(fd, 4 * KiB));
	p = map(_metadata, fd, 4 * KiB, PROT_READ);
	ASSERT_EQ('f', p[0]);
	ASSERT_EQ('i', p[1]);
	ASSERT_EQ(0, p[2]);
	ASSERT_EQ(0, p[4]);
	munmap(p, 4 * KiB);
	ASSERT_EQ(0, ftruncate(fd, 0));
	ASSERT_EQ(0, st(_metadata, fd).pages);
	close(fd);
	unlink(mpath("grow"));
}

/*
 * The order rises while mapped (the mapping keeps its 2 MiB extent and
 * its data); shrinking while mapped frees the pages past the size and
 * keeps the order until the last mapping is gone.
 */
TEST(resize_while_mapped)
{
	int fd = fresh(mpath("rm"), 5000);
	char *p, *q;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 5000, PROT_READ | PROT_WRITE);
	p[4999] = 1;
	ASSERT_EQ(0, ftruncate(fd, 1 * MiB));		/* same order */
	p[1 * MiB - 1] = 2;
	ASSERT_EQ(0, ftruncate(fd, 4 * MiB));		/* order 1 -> 2 */
	ASSERT_EQ(2, st(_metadata, fd).order);
	ASSERT_EQ(2 * MiB, vma_len(_metadata, p));
	ASSERT_EQ(1, p[4999]);
	ASSERT_EQ(2, p[1 * MiB - 1]);
	p[2 * MiB - 1] = 3;				/* the old extent's end */
	q = map(_metadata, fd, 4 * MiB, PROT_READ);	/* a new one: 1 GiB */
	ASSERT_EQ(1, q[4999]);
	ASSERT_EQ(2, q[1 * MiB - 1]);
	ASSERT_EQ(3, q[2 * MiB - 1]);
	ASSERT_EQ(3, st(_metadata, fd).pages);
	ASSERT_EQ(0, ftruncate(fd, 4 * KiB));		/* shrink */
	ASSERT_EQ(4 * KiB, st(_metadata, fd).size);
	ASSERT_EQ(2, st(_metadata, fd).order);		/* held by the mappings */
	ASSERT_EQ(0, st(_metadata, fd).pages);
	ASSERT_EQ(0, p[0]);
	ASSERT_EQ(SIGBUS, in_child(read_byte, q + 4999));
	munmap(q, 4 * MiB);
	munmap(p, 5000);
	ASSERT_EQ(0, ftruncate(fd, 4 * KiB));
	ASSERT_EQ(0, ftruncate(fd, 5000));		/* unmapped: falls */
	ASSERT_EQ(1, st(_metadata, fd).order);
	close(fd);
	unlink(mpath("rm"));
}

/* ---- mmap ---- */

TEST(map_each_order)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		uint64_t size = order ? ext / 2 + 1 : 100;
		int fd = fresh(mpath("each"), size);
		char *p;

		ASSERT_LE(0, fd);
		p = map(_metadata, fd, size, PROT_READ | PROT_WRITE);
		ASSERT_EQ(0, (uintptr_t)p % ext);		/* naturally aligned */
		ASSERT_EQ(ext, vma_len(_metadata, p));	/* whole extent reserved */
		ASSERT_EQ(1, st(_metadata, fd).mappings);
		p[0] = 'a';
		p[size - 1] = 'z';
		ASSERT_EQ(order ? 2 : 1, st(_metadata, fd).pages);
		/* Beyond the file size (page rounded), like any file: SIGBUS. */
		if (PALIGN(size) < ext) {
			ASSERT_EQ(SIGBUS, in_child(read_byte, p + PALIGN(size)));
		}
		/* munmap with the length that was mapped removes everything. */
		ASSERT_EQ(0, munmap(p, size));
		ASSERT_EQ(0, vma_len(_metadata, p));
		ASSERT_EQ(0, st(_metadata, fd).mappings);
		p = map(_metadata, fd, size, PROT_READ);
		ASSERT_EQ('a', p[0]);
		ASSERT_EQ('z', p[size - 1]);
		ASSERT_EQ(0, munmap(p, ext));
		close(fd);
	}
	unlink(mpath("each"));
}

TEST(map_reserves_extent)
{
	int fd = fresh(mpath("res"), 1 * GiB);
	char *p;
	void *q;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 1, PROT_READ | PROT_WRITE);
	ASSERT_EQ(1 * GiB, vma_len(_metadata, p));
	/* Nothing else may land inside the mounted range. */
	ASSERT_ERRNO(EEXIST, mmap(p + 512 * MiB, 4096, PROT_READ, MAP_PRIVATE |
				  MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
	q = mmap(p + 512 * MiB, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_TRUE((char *)q >= p + 1 * GiB || (char *)q + 4096 <= p);
	munmap(q, 4096);
	ASSERT_EQ(0, munmap(p, 1));
	ASSERT_EQ(0, vma_len(_metadata, p));
	close(fd);
	unlink(mpath("res"));
}

TEST(map_bad_arguments)
{
	int fd = fresh(mpath("bad"), 2 * MiB), rfd;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EINVAL, mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_ERRNO(EINVAL, mmap(NULL, 1ULL << 60, PROT_READ, MAP_SHARED, fd, 0));
	/* An unaligned MAP_FIXED address. */
	p = map(_metadata, fd, 2 * MiB, PROT_READ);
	munmap(p, 2 * MiB);
	ASSERT_ERRNO(EINVAL, mmap(p + 4096, 4096, PROT_READ, MAP_SHARED | MAP_FIXED,
				  fd, 0));
	ASSERT_ERRNO(EINVAL, mmap(p + 1 * MiB, 4096, PROT_READ,
				  MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0));
	/* Writable shared mapping of a read-only open. */
	rfd = open(mpath("bad"), O_RDONLY);
	ASSERT_LE(0, rfd);
	ASSERT_ERRNO(EACCES, mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				  rfd, 0));
	ASSERT_EQ(0, st(_metadata, fd).mappings);
	close(rfd);
	close(fd);
	unlink(mpath("bad"));
}

TEST(map_fixed_aligned)
{
	int fd = fresh(mpath("fix"), 1 * GiB);
	char *p, *q;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);
	strcpy(p + 12345, "fixed");
	munmap(p, 1 * GiB);
	q = mmap(p, 1 * GiB, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	ASSERT_EQ(p, q);
	ASSERT_STREQ("fixed", q + 12345);
	munmap(q, 1 * GiB);
	close(fd);
	unlink(mpath("fix"));
}

TEST(two_mappings_one_process)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		int fd = fresh(mpath("two"), order_size[order]);
		char *a, *b;

		ASSERT_LE(0, fd);
		a = map(_metadata, fd, order_size[order], PROT_READ | PROT_WRITE);
		b = map(_metadata, fd, order_size[order], PROT_READ | PROT_WRITE);
		ASSERT_NE(a, b);
		strcpy(a + order_size[order] - 100, "via a");
		ASSERT_STREQ("via a", b + order_size[order] - 100);
		b[0] = 'b';
		ASSERT_EQ('b', a[0]);
		ASSERT_EQ(2, st(_metadata, fd).mappings);
		ASSERT_EQ(order ? 2 : 1, st(_metadata, fd).pages);
		munmap(a, order_size[order]);
		munmap(b, order_size[order]);
		close(fd);
	}
	unlink(mpath("two"));
}

/* ---- generic mm paths: work, or are refused, and never touch the tables ---- */

struct snap { long pages, tables; };

static struct snap snap(struct __test_metadata *_metadata, int fd)
{
	struct morsel_stat s = st(_metadata, fd);

	return (struct snap){ (long)s.pages,
		(long)(s.tables[0] + s.tables[1] + s.tables[2] + s.tables[3]) };
}

#define ASSERT_SNAP(fd, s) do {						\
	struct snap _n = snap(_metadata, fd);				\
	ASSERT_EQ((s).pages, _n.pages);					\
	ASSERT_EQ((s).tables, _n.tables);				\
} while (0)

/* Map an order-2 morsel and touch 3 pages in different 2 MiB regions. */
static char *prepared(struct __test_metadata *_metadata, int *fd)
{
	char *p;

	*fd = fresh(mpath("paths"), 1 * GiB);
	ASSERT_LE(0, *fd);
	p = map(_metadata, *fd, 1 * GiB, PROT_READ | PROT_WRITE);
	p[0] = 1;
	p[300 * MiB] = 2;
	p[1 * GiB - 1] = 3;
	return p;
}

static void check_prepared(struct __test_metadata *_metadata, char *p)
{
	ASSERT_EQ(1, p[0]);
	ASSERT_EQ(2, p[300 * MiB]);
	ASSERT_EQ(3, p[1 * GiB - 1]);
}

TEST(munmap_and_exit_keep_tables)
{
	int fd;
	char *p = prepared(_metadata, &fd);
	struct snap s = snap(_metadata, fd);
	pid_t pid;

	ASSERT_EQ(3, s.pages);
	ASSERT_EQ(4, s.tables);	/* PMD root + 3 PTE tables */
	ASSERT_EQ(0, munmap(p, 1 * GiB));
	ASSERT_SNAP(fd, s);
	pid = fork();
	if (pid == 0) {
		char *q = map(_metadata, fd, 1 * GiB, PROT_READ);

		check_prepared(_metadata, q);
		_exit(0);	/* exit with the morsel mapped */
	}
	wait_child_ok(_metadata, pid);
	ASSERT_SNAP(fd, s);
	p = map(_metadata, fd, 1 * GiB, PROT_READ);
	check_prepared(_metadata, p);
	close(fd);
}

/* Whole mappings only (safety_test: mprotect_whole_mapping). */
TEST(mprotect_whole_mapping_only)
{
	int fd;
	char *p = prepared(_metadata, &fd);
	struct snap s = snap(_metadata, fd);

	ASSERT_ERRNO(EACCES, mprotect(p, 4096, PROT_READ));	/* a part */
	ASSERT_EQ(0, mprotect(p, 1 * GiB, PROT_READ | PROT_WRITE)); /* no change */
	ASSERT_EQ(0, mprotect(p, 1 * GiB, PROT_READ));
	check_prepared(_metadata, p);
	ASSERT_EQ(SIGSEGV, in_child(write_byte, p));
	ASSERT_EQ(0, mprotect(p, 1 * GiB, PROT_NONE));
	ASSERT_EQ(SIGSEGV, in_child(read_byte, p));
	ASSERT_EQ(0, mprotect(p, 1 * GiB, PROT_READ | PROT_WRITE));
	p[0] = 1;
	check_prepared(_metadata, p);
	ASSERT_SNAP(fd, s);
	close(fd);
}

TEST(mremap_move_or_refuse)
{
	int fd;
	char *p = prepared(_metadata, &fd), *q, *target;
	struct snap s = snap(_metadata, fd);

	ASSERT_ERRNO(ENOMEM, mremap(p, 1 * GiB, 2 * GiB, 0));	/* past it */
	ASSERT_ERRNO(ENOMEM, mremap(p, 1 * GiB, 2 * GiB, MREMAP_MAYMOVE));
	/* Inside the extent: in place, the VMA stays whole. */
	ASSERT_EQ((void *)p, mremap(p, 1 * GiB, 4096, 0));
	ASSERT_EQ((void *)p, mremap(p, 4096, 512 * MiB, MREMAP_MAYMOVE));
	ASSERT_EQ(1 * GiB, vma_len(_metadata, p));
	check_prepared(_metadata, p);
	ASSERT_SNAP(fd, s);
	/* A whole move to an aligned address works: the new VMA remounts. */
	target = map(_metadata, fd, 1 * GiB, PROT_READ);
	ASSERT_EQ(0, munmap(target, 1 * GiB));
	ASSERT_ERRNO(EINVAL, mremap(p, 1 * GiB, 1 * GiB, MREMAP_MAYMOVE | MREMAP_FIXED,
				    target + 2 * MiB));			/* unaligned */
	q = mremap(p, 1 * GiB, 1 * GiB, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	ASSERT_EQ(target, q);
	check_prepared(_metadata, q);
	ASSERT_EQ(0, vma_len(_metadata, p));
	ASSERT_EQ(1, st(_metadata, fd).mappings);
	ASSERT_SNAP(fd, s);
	ASSERT_EQ(SIGSEGV, in_child(read_byte, p));
	munmap(q, 1 * GiB);
	close(fd);
}

TEST(madvise_refused_or_harmless)
{
	static const struct { int advice; int err; } cases[] = {
		{ MADV_DONTNEED, EINVAL }, { MADV_FREE, EINVAL },
		{ MADV_COLD, EINVAL },
		{ MADV_PAGEOUT, EINVAL }, { MADV_COLLAPSE, EINVAL },
		{ MADV_DOFORK, EINVAL }, { MADV_DODUMP, EINVAL },
		{ MADV_DONTDUMP, 0 },
		{ MADV_HUGEPAGE, 0 }, { MADV_NOHUGEPAGE, 0 },
		{ MADV_WILLNEED, 0 },
	};
	int fd;
	char *p = prepared(_metadata, &fd);
	struct snap s = snap(_metadata, fd);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (cases[i].err) {
			ASSERT_ERRNO(cases[i].err, madvise(p, 1 * GiB, cases[i].advice));
		} else {
			ASSERT_EQ(0, madvise(p, 1 * GiB, cases[i].advice))
				TH_LOG("advice %d: %s", cases[i].advice, strerror(errno));
		}
		check_prepared(_metadata, p);
		ASSERT_SNAP(fd, s);
	}
	close(fd);
}

TEST(partial_munmap_refused)
{
	int fd;
	char *p = prepared(_metadata, &fd);
	struct snap s = snap(_metadata, fd);

	ASSERT_ERRNO(EINVAL, munmap(p + 4096, 4096));
	ASSERT_ERRNO(EINVAL, munmap(p + 512 * MiB, 512 * MiB));
	ASSERT_ERRNO(EINVAL, munmap(p + 4096, 1 * GiB));
	check_prepared(_metadata, p);
	ASSERT_SNAP(fd, s);
	ASSERT_EQ(1 * GiB, vma_len(_metadata, p));
	/* MAP_FIXED over part of it is a split as well. */
	ASSERT_EQ(MAP_FAILED, mmap(p + 2 * MiB, 4096, PROT_READ, MAP_PRIVATE |
				   MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	check_prepared(_metadata, p);
	/* MAP_FIXED over the whole of it replaces it cleanly. */
	ASSERT_EQ((void *)p, mmap(p, 1 * GiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
				  MAP_FIXED, -1, 0));
	ASSERT_EQ(0, p[0]);
	ASSERT_EQ(0, st(_metadata, fd).mappings);
	ASSERT_SNAP(fd, s);
	munmap(p, 1 * GiB);
	close(fd);
}

/* ---- rights ---- */

TEST(readonly_open_maps_readonly)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		int fd = fresh(mpath("ro"), ext), rfd;
		char *w, *r;

		ASSERT_LE(0, fd);
		w = map(_metadata, fd, ext, PROT_READ | PROT_WRITE);
		w[ext - 1] = 'w';
		rfd = morsel_open(mpath("ro"), O_RDONLY);
		ASSERT_LE(0, rfd);
		ASSERT_ERRNO(EACCES, mmap(NULL, ext, PROT_READ | PROT_WRITE,
					  MAP_SHARED, rfd, 0));
		r = map(_metadata, rfd, ext, PROT_READ);
		ASSERT_EQ('w', r[ext - 1]);
		ASSERT_EQ(SIGSEGV, in_child(write_byte, r + ext - 1));
		ASSERT_EQ(SIGSEGV, in_child(write_byte, r));
		ASSERT_EQ('w', r[ext - 1]);
		w[0] = 'x';			/* writer still writes */
		ASSERT_EQ('x', r[0]);
		ASSERT_ERRNO(EACCES, mprotect(r, ext, PROT_READ | PROT_WRITE));
		/* A read-only mapping of a writable open: the same. */
		munmap(r, ext);
		r = map(_metadata, fd, ext, PROT_READ);
		ASSERT_EQ(SIGSEGV, in_child(write_byte, r));
		ASSERT_EQ('x', r[0]);
		munmap(r, ext);
		munmap(w, ext);
		close(rfd);
		close(fd);
	}
	unlink(mpath("ro"));
}

TEST(exec_needs_prot_exec)
{
	int fd = fresh(mpath("x"), 2 * MiB);
	char *w, *x;
	int (*fn)(void);

	ASSERT_LE(0, fd);
	w = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	x = mmap(NULL, 2 * MiB, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, x);
	/* mov eax, 42; ret */
	memcpy(w + 64, "\xb8\x2a\x00\x00\x00\xc3", 6);
	fn = (int (*)(void))(x + 64);
	ASSERT_EQ(42, fn());
	ASSERT_EQ(SIGSEGV, in_child((void (*)(volatile char *))(void *)(w + 64), NULL));
	munmap(x, 2 * MiB);
	munmap(w, 2 * MiB);
	close(fd);
	unlink(mpath("x"));
}

/* ---- accounting ---- */

TEST(tables_not_accounted_to_process)
{
	int fd = fresh(mpath("acct"), 1 * GiB), i;
	char *p;
	long before;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);
	before = vm_pte_kib(_metadata);
	for (i = 0; i < 256; i++)
		p[(uint64_t)i * 2 * MiB] = 1;
	ASSERT_EQ(256, st(_metadata, fd).tables[0]);	/* 1 MiB of PTE tables */
	ASSERT_GT(64, vm_pte_kib(_metadata) - before);
	munmap(p, 1 * GiB);
	close(fd);
	unlink(mpath("acct"));
}

/* ---- orders 3 and 4, contiguous runs ---- */

/*
 * Touch three far-apart pages of a big mapping from a fork child
 * (in_child(): @arg is char *q[3]).
 */
static void read_three(volatile char *arg)
{
	char **q = (char **)arg;

	if (*q[0] != 'a' || *q[1] != 'm' || *q[2] != 'z')
		_exit(3);
}

/*
 * Create an order-@order morsel of @size, check it starts with no table
 * (a persistent one: one table of level @order), map it and check that
 * pages far apart work with no process table allocated below the mount
 * (VmPTE unchanged) and one mount write: at mmap if the root exists,
 * else at the first touch, which brings the root.
 */
static void big_morsel(struct __test_metadata *_metadata, const char *name,
		       uint64_t size, unsigned int order)
{
	long t0 = counter(_metadata, "tables"), p0 = counter(_metadata, "pages");
	long m0, pte0;
	int fd = fresh(mpath(name), size), pm = mnt_is_persistent();
	struct morsel_stat s;
	char *p, *q[3];
	unsigned int l;

	ASSERT_LE(0, fd);
	s = st(_metadata, fd);
	ASSERT_EQ(order, s.order);
	for (l = 0; l < 4; l++) {
		ASSERT_EQ((uint64_t)(pm && l == order - 1), s.tables[l]);
	}
	ASSERT_EQ(0, s.pages);
	/* Memory use right after creation: nothing (persistent: one page). */
	ASSERT_EQ(pm, counter(_metadata, "tables") - t0);
	ASSERT_EQ(0, counter(_metadata, "pages") - p0);
	pte0 = vm_pte_kib(_metadata);
	m0 = counter(_metadata, "mounts");
	p = map(_metadata, fd, size, PROT_READ | PROT_WRITE);
	ASSERT_EQ(0, (uintptr_t)p % size);
	ASSERT_EQ(size, vma_len(_metadata, p));
	ASSERT_EQ(pm, counter(_metadata, "mounts") - m0);	/* the root? */
	q[0] = p;
	q[1] = p + size / 2 + 12345;
	q[2] = p + size - 1;
	*q[0] = 'a';
	*q[1] = 'm';
	*q[2] = 'z';
	s = st(_metadata, fd);
	ASSERT_EQ(3, s.pages);
	ASSERT_EQ(3, s.tables[0]);
	ASSERT_EQ(3, s.tables[1]);
	ASSERT_EQ(order == 3 ? 1 : 3, s.tables[2]);
	ASSERT_EQ(0, vm_pte_kib(_metadata) - pte0);	/* nothing below the mount */
	ASSERT_EQ(1, counter(_metadata, "mounts") - m0);
	ASSERT_EQ(0, in_child(read_three, (volatile char *)q));	/* fork: remount */
	ASSERT_EQ(0, munmap(p, size));
	ASSERT_EQ(0, st(_metadata, fd).mappings);
	ASSERT_EQ(3, st(_metadata, fd).pages);
	p = map(_metadata, fd, size, PROT_READ);
	ASSERT_EQ('a', p[0]);
	ASSERT_EQ('z', p[size - 1]);
	ASSERT_EQ(0, munmap(p, size));
	close(fd);
	unlink(mpath(name));
	ASSERT_EQ(t0, counter(_metadata, "tables"));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
}

TEST(order3_one_root_table)
{
	/* 4-level: mounted in a PGD entry (P4D folded); 5-level: a P4D entry */
	big_morsel(_metadata, "o3", 512 * GiB, 3);
}

TEST(order4_five_level_only)
{
	int fd;
	char *p;

	if (!five_level(_metadata)) {
		fd = fresh(mpath("o4"), 0);
		ASSERT_LE(0, fd);
		ASSERT_ERRNO(EFBIG, ftruncate(fd, 256 * TiB));
		ASSERT_ERRNO(EFBIG, pwrite(fd, "x", 1, 256 * TiB - 1));
		ASSERT_EQ(0, st(_metadata, fd).order);
		close(fd);
		unlink(mpath("o4"));
		return;
	}
	big_morsel(_metadata, "o4", 256 * TiB, 4);
	/* It lives above 47 bits: mounted in a PGD entry. */
	fd = fresh(mpath("o4"), 256 * TiB);
	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 1, PROT_READ);
	ASSERT_LE(1ULL << 48, (uintptr_t)p);
	munmap(p, 1);
	close(fd);
	unlink(mpath("o4"));
}

TEST(contiguous_run_of_morsels)
{
	int fds[7], small, i;
	char name[16], buf[8];
	long m0, pte0;
	size_t len;
	void *a;
	char *p;

	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "run%d", i);
		fds[i] = fresh(mpath(name), 1 * GiB);
		ASSERT_LE(0, fds[i]);
		/* A page, so that the root exists and mmap mounts it. */
		ASSERT_EQ(1, pwrite(fds[i], ".", 1, 512 * MiB));
	}
	m0 = counter(_metadata, "mounts");
	pte0 = vm_pte_kib(_metadata);
	ASSERT_EQ(0, morsel_map_run(fds, 7, PROT_READ | PROT_WRITE, &a, &len));
	p = a;
	ASSERT_EQ(7 * GiB, len);
	ASSERT_EQ(0, (uintptr_t)p % GiB);
	ASSERT_EQ(7, counter(_metadata, "mounts") - m0);	/* one entry per morsel */
	/* Data runs across the borders between morsels. */
	for (i = 0; i < 6; i++)
		memcpy(p + (uint64_t)(i + 1) * GiB - 4, "ABCDEFGH", 8);
	for (i = 0; i < 6; i++) {
		ASSERT_EQ(4, pread(fds[i], buf, 4, 1 * GiB - 4));
		ASSERT_EQ(0, memcmp(buf, "ABCD", 4));
		ASSERT_EQ(4, pread(fds[i + 1], buf, 4, 0));
		ASSERT_EQ(0, memcmp(buf, "EFGH", 4));
	}
	ASSERT_EQ(7, counter(_metadata, "mounts") - m0);	/* no fault remounted */
	ASSERT_GE(8, vm_pte_kib(_metadata) - pte0);	/* at most the PUD tables */
	small = fresh(mpath("run-small"), 2 * MiB);
	ASSERT_LE(0, small);
	fds[1] = small;
	ASSERT_EQ(-EINVAL, morsel_map_run(fds, 2, PROT_READ, &a, &len));
	ASSERT_EQ(-EINVAL, morsel_map_run(fds, 0, PROT_READ, &a, &len));
	ASSERT_EQ(0, munmap(p, 7 * GiB));
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "run%d", i);
		unlink(mpath(name));
		close(i == 1 ? small : fds[i]);
	}
	unlink(mpath("run-small"));
}

TEST_HARNESS_MAIN
