// SPDX-License-Identifier: GPL-2.0
/*
 * mapping_test: how programs map morsels that are not shared, whole,
 * fixed-size objects (kselftest harness; run in the VM by tests/run-all).
 *
 * - MAP_PRIVATE: a private mapping sees the file, a written page is the
 *   process's own copy, the morsel never changes; eviction and truncation
 *   reach private mappings; programs and shared libraries stored on
 *   morselfs run.  A shared mapping at an offset is page by page too.
 * - Mappings longer than the file (LMDB's map_size) raise the order; a
 *   file grows through every order while another process keeps it mapped,
 *   without EBUSY, when room was asked for in advance (a long mapping or a
 *   minimum order); the refusals that remain.
 * - mremap inside the extent succeeds in place (SQLite's pattern).
 *
 * Each TEST runs in its own process; files live in $MORSEL_MNT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define PG 4096ULL
#define BIND_ADDR 0x620000000000ULL

static struct morsel_stat st(int fd)
{
	struct morsel_stat s;

	memset(&s, 0, sizeof(s));
	if (morsel_stat(fd, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

/* Length of the VMA containing @addr, from /proc/self/maps; 0 if none. */
static uint64_t vma_len(void *addr)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	uint64_t len = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			len = hi - lo;
	if (f)
		fclose(f);
	return len;
}

/* A morsel of @size whose page i starts with the byte 'a' + i % 26. */
static int patterned(const char *path, uint64_t size)
{
	int fd = fresh(path, size);
	uint64_t off;

	for (off = 0; fd >= 0 && off < size; off += PG) {
		char c = 'a' + (off / PG) % 26;

		if (pwrite(fd, &c, 1, off) != 1)
			return -1;
	}
	return fd;
}

static char byte_at(int fd, uint64_t off)
{
	char c = '?';

	if (pread(fd, &c, 1, off) != 1)
		return '!';
	return c;
}

/* ---- MAP_PRIVATE ---- */

TEST(private_read_sees_the_file_until_written)
{
	int fd = patterned(mpath("priv-r"), 64 * KiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 64 * KiB, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(64 * KiB, vma_len(p));	/* its own length, no extent */
	EXPECT_EQ('a', p[0]);
	EXPECT_EQ('p', p[15 * PG]);
	/* A later write to the file shows in pages not copied. */
	ASSERT_EQ(1, pwrite(fd, "Z", 1, 3 * PG));
	EXPECT_EQ('Z', p[3 * PG]);
	/* Not a shared mapping: not counted, not listed, no order change. */
	EXPECT_EQ(0, st(fd).mappings);
	EXPECT_EQ(0, morsel_mappings(fd, NULL, 0));
	EXPECT_EQ(1, st(fd).order);
	ASSERT_EQ(0, munmap(p, 64 * KiB));
	close(fd);
}

TEST(private_write_copies_the_page_and_the_morsel_never_changes)
{
	int fd = patterned(mpath("priv-w"), 64 * KiB);
	char *p, *q;
	pid_t pid;
	int status;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 64 * KiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = mmap(NULL, 64 * KiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	memset(p + PG, 'W', PG);
	EXPECT_EQ('W', p[PG]);
	EXPECT_EQ('b', byte_at(fd, PG));	/* the file is unchanged */
	EXPECT_EQ('b', q[PG]);			/* and so is a shared mapping */
	/* The copy is this process's: a file write no longer shows there. */
	ASSERT_EQ(1, pwrite(fd, "F", 1, PG));
	EXPECT_EQ('W', p[PG]);
	EXPECT_EQ('F', q[PG]);
	/* A fork child has its own copy too (copy-on-write again). */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		p[2 * PG] = 'C';
		_exit(p[PG] == 'W' && p[2 * PG] == 'C' ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ('c', p[2 * PG]);
	EXPECT_EQ('c', byte_at(fd, 2 * PG));
	munmap(q, 64 * KiB);
	munmap(p, 64 * KiB);
	close(fd);
}

TEST(private_offsets_splits_and_protections)
{
	int fd = patterned(mpath("priv-o"), 64 * KiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE, fd, 8 * PG);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('i', p[0]);
	EXPECT_EQ('l', p[3 * PG]);
	/* A split, a protection change, a partial unmap: as any file. */
	ASSERT_EQ(0, mprotect(p + PG, PG, PROT_READ | PROT_WRITE));
	p[PG] = 'X';
	EXPECT_EQ('j', byte_at(fd, 9 * PG));
	ASSERT_EQ(0, munmap(p + 2 * PG, PG));
	EXPECT_EQ('l', p[3 * PG]);
	EXPECT_EQ('X', p[PG]);
	ASSERT_EQ(0, munmap(p, 4 * PG));
	/* PROT_NONE and PROT_EXEC alone are fine for private mappings. */
	p = mmap(NULL, PG, PROT_NONE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(SIGSEGV, in_child(read_byte, p));
	munmap(p, PG);
	p = mmap(NULL, PG, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('a', p[0]);
	munmap(p, PG);
	close(fd);
}

TEST(private_past_the_size_sigbus_and_holes_read_zeros)
{
	int fd = fresh(mpath("priv-h"), 3 * PG + 10);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 8 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(0, p[3 * PG + 100]);		/* the partial last page */
	EXPECT_EQ(SIGBUS, in_child(read_byte, p + 4 * PG));
	munmap(p, 8 * PG);
	close(fd);
}

TEST(private_eviction_and_truncation_reach_private_mappings)
{
	int fd = patterned(mpath("priv-e"), 16 * PG);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('a', p[0]);
	EXPECT_EQ('b', p[PG]);
	p[2 * PG] = 'O';			/* a copy of its own */
	ASSERT_EQ(0, morsel_evict(fd, 0, 4 * PG));
	EXPECT_EQ(0, p[0]);			/* not copied: the file */
	EXPECT_EQ(0, p[PG]);
	EXPECT_EQ('O', p[2 * PG]);		/* the copy stays */
	p[10 * PG] = 'Q';
	ASSERT_EQ(0, ftruncate(fd, 5 * PG));
	EXPECT_EQ('e', p[4 * PG]);
	EXPECT_EQ(SIGBUS, in_child(read_byte, p + 6 * PG));
	EXPECT_EQ(SIGBUS, in_child(read_byte, p + 10 * PG)); /* copy too */
	munmap(p, 16 * PG);
	close(fd);
}

/*
 * mlock, fork and GUP (process_vm_readv) on page-by-page mappings: morsel
 * pages are not on the LRU; mlock marks them and munlock must unmark them
 * before the morsel frees them (a page freed mlocked is a bad-page report,
 * which fails the run).
 */
TEST(page_by_page_mappings_mlock_fork_and_pins)
{
	int fd = patterned(mpath("priv-lock"), 16 * PG);
	char *p, *q, buf[4];
	struct iovec local = { buf, 4 }, remote;
	pid_t pid;
	int status;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 8 * PG);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, mlock(p, 16 * PG));
	ASSERT_EQ(0, mlock(q, 8 * PG));
	p[PG] = 'P';				/* a copy, mlocked too */
	q[0] = 'S';				/* the morsel's page 8 */
	EXPECT_EQ('S', byte_at(fd, 8 * PG));
	/* mlock of a writable private mapping copied every page already. */
	EXPECT_EQ('i', p[8 * PG]);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(p[PG] == 'P' && q[0] == 'S' && p[2 * PG] == 'c' ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	remote.iov_base = q + PG;
	remote.iov_len = 4;
	ASSERT_EQ(4, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	EXPECT_EQ('j', buf[0]);
	/* Evict under the locks, then unlock, unmap and free everything. */
	ASSERT_EQ(0, morsel_evict(fd, 8 * PG, 4 * PG));
	EXPECT_EQ(0, q[0]);
	ASSERT_EQ(0, munlock(p, 16 * PG));
	ASSERT_EQ(0, munmap(p, 16 * PG));
	ASSERT_EQ(0, munmap(q, 8 * PG));
	close(fd);
	ASSERT_EQ(0, unlink(mpath("priv-lock")));
}

/* Run @argv with @env; its stdout into @out.  Return: exit status or -1. */
static int run(char *const argv[], char *const env[], char *out, size_t n)
{
	int pfd[2], status;
	ssize_t got, total = 0;
	pid_t pid;

	if (pipe(pfd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execve(argv[0], argv, env);
		_exit(127);
	}
	close(pfd[1]);
	while (total < (ssize_t)n - 1 &&
	       (got = read(pfd[0], out + total, n - 1 - total)) > 0)
		total += got;
	out[total] = 0;
	close(pfd[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Copy @from to @to on morselfs with mode 0755 (read/write, as cp does). */
static int copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY), out;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return -1;
	unlink(to);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);
	if (out < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			n = -1;
	close(in);
	close(out);
	return n ? -1 : 0;
}

/*
 * The ELF loader and ld.so map programs and libraries privately: a
 * dynamically linked program and the C library itself, copied onto
 * morselfs, run from there.
 */
TEST(programs_and_libraries_run_from_morselfs)
{
	char prog[256], libdir[256], lib[300], out[256];
	char envbuf[320];
	char *env[] = { envbuf, NULL }, *noenv[] = { NULL };
	char *argv[] = { prog, "run", "from", "morselfs", NULL };

	snprintf(prog, sizeof(prog), "%s", mpath("echo"));
	snprintf(libdir, sizeof(libdir), "%s", mpath("lib"));
	snprintf(lib, sizeof(lib), "%s/libc.so.6", libdir);
	snprintf(envbuf, sizeof(envbuf), "LD_LIBRARY_PATH=%s", libdir);
	ASSERT_EQ(0, copy_file("/bin/echo", prog));
	EXPECT_EQ(0, run(argv, noenv, out, sizeof(out)));
	EXPECT_STREQ("run from morselfs\n", out);
	/* The C library from morselfs too (ld.so maps it privately). */
	mkdir(libdir, 0755);
	ASSERT_EQ(0, copy_file("/lib/x86_64-linux-gnu/libc.so.6", lib));
	argv[1] = "with";
	argv[2] = "its";
	argv[3] = "libc";
	EXPECT_EQ(0, run(argv, env, out, sizeof(out)));
	EXPECT_STREQ("with its libc\n", out);
	/* A program that is being written cannot run (ETXTBSY), as usual. */
	{
		int wfd = open(prog, O_WRONLY);

		ASSERT_LE(0, wfd);
		EXPECT_EQ(127, run(argv, noenv, out, sizeof(out)));
		close(wfd);
	}
	unlink(lib);
	rmdir(libdir);
	unlink(prog);
}

/*
 * A shared mapping at an offset (SQLite's wal-index: 32 KiB pieces of the
 * -shm file, each mapped at its offset by every connection) is page by
 * page, and the same memory as the mounted mapping and the file.
 */
TEST(shared_at_an_offset_is_page_by_page_and_coherent)
{
	int fd = fresh(mpath("shm-piece"), 64 * KiB);
	char *whole, *a, *b;
	pid_t pid;
	int status;

	ASSERT_LE(0, fd);
	whole = mmap(NULL, 32 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, whole);
	EXPECT_EQ(2 * MiB, vma_len(whole));		/* mounted */
	a = mmap(NULL, 32 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 32 * KiB);
	ASSERT_NE(MAP_FAILED, a) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(32 * KiB, vma_len(a));		/* its own length */
	EXPECT_EQ(1, st(fd).mappings);			/* only the mount */
	a[0] = 'A';
	EXPECT_EQ('A', whole[32 * KiB]);
	EXPECT_EQ('A', byte_at(fd, 32 * KiB));
	whole[32 * KiB + PG] = 'W';
	EXPECT_EQ('W', a[PG]);
	/* Another process's piece is the same memory. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		b = mmap(NULL, 32 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 32 * KiB);
		if (b == MAP_FAILED || b[0] != 'A')
			_exit(1);
		b[2 * PG] = 'C';
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ('C', a[2 * PG]);
	/* Eviction reaches it; past the size it raises SIGBUS. */
	ASSERT_EQ(0, morsel_evict(fd, 32 * KiB, 4 * PG));
	EXPECT_EQ(0, a[0]);
	EXPECT_EQ(0, whole[32 * KiB]);
	ASSERT_EQ(0, ftruncate(fd, 40 * KiB));
	EXPECT_EQ(SIGBUS, in_child(read_byte, a + 8 * KiB));
	/* A read-only fd maps it read-only only (the VFS's rule). */
	{
		int rfd = open(mpath("shm-piece"), O_RDONLY);

		ASSERT_LE(0, rfd);
		ASSERT_ERRNO(EACCES, mmap(NULL, PG, PROT_READ | PROT_WRITE,
					  MAP_SHARED, rfd, PG));
		close(rfd);
	}
	munmap(a, 32 * KiB);
	munmap(whole, 32 * KiB);
	close(fd);
}

/* ---- mappings longer than the file ---- */

/* LMDB maps map_size bytes of a new, small file, then writes with pwrite. */
TEST(long_mapping_raises_the_order)
{
	static const struct { uint64_t len, vma; unsigned int order; } c[] = {
		{ 256 * MiB, 1 * GiB, 2 },
		{ 256 * GiB, 512 * GiB, 3 },
	};
	unsigned int i;

	for (i = 0; i < 2; i++) {
		int fd = fresh(mpath("long"), 0);
		char *p;

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, st(fd).order);
		p = mmap(NULL, c[i].len, PROT_READ, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, p) TH_LOG("len %llu: %s",
				(unsigned long long)c[i].len, strerror(errno));
		EXPECT_EQ(c[i].vma, vma_len(p));
		EXPECT_EQ(c[i].order, st(fd).order);
		EXPECT_EQ(0, (uintptr_t)p % c[i].vma);
		EXPECT_EQ(SIGBUS, in_child(read_byte, p));	/* empty */
		/* The file grows under the mapping, as LMDB's pwrite does. */
		ASSERT_EQ(5, pwrite(fd, "page0", 5, 0));
		ASSERT_EQ(5, pwrite(fd, "far!!", 5, 200 * MiB));
		EXPECT_EQ(0, memcmp(p, "page0", 5));
		EXPECT_EQ(0, memcmp(p + 200 * MiB, "far!!", 5));
		EXPECT_EQ(2, st(fd).pages);
		EXPECT_EQ(0, p[100 * MiB]);	/* a hole: the fault fills it */
		EXPECT_EQ(SIGBUS, in_child(read_byte, p + 201 * MiB));
		EXPECT_EQ(3, st(fd).pages);
		ASSERT_EQ(0, munmap(p, c[i].len));
		close(fd);
	}
}

/* The largest mapping: past the largest order, EINVAL. */
TEST(too_long_mapping_einval)
{
	int fd = fresh(mpath("toolong"), PG);
	uint64_t max = 1ULL << (getenv("MORSEL_PAGING") &&
				!strcmp(getenv("MORSEL_PAGING"), "4") ? 39 : 48);

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EINVAL, mmap(NULL, max + PG, PROT_READ, MAP_SHARED, fd, 0));
	EXPECT_EQ(0, st(fd).order);
	close(fd);
}

/*
 * A file that grows through every order from 0 to 3 while another process
 * keeps it mapped: the reader asked for room in advance (a minimum order
 * of 3 here; a mapping of 512 GiB would do the same), so no step fails
 * and the reader sees every byte written.
 */
TEST(grow_through_every_order_while_mapped)
{
	static const uint64_t at[] = { 100, 1 * MiB, 512 * MiB, 3 * GiB };
	int fd = fresh(mpath("grow"), 0), go[2], done[2];
	unsigned int i;
	pid_t pid;
	char c;
	int status;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_set_min_order(fd, 3));
	EXPECT_EQ(3, st(fd).order);
	EXPECT_EQ(3, st(fd).min_order);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int rfd = open(mpath("grow"), O_RDONLY);
		char *p = mmap(NULL, 1, PROT_READ, MAP_SHARED, rfd, 0);

		if (p == MAP_FAILED || vma_len(p) != 512 * GiB)
			_exit(2);
		for (i = 0; i < 4; i++) {
			if (read(go[0], &c, 1) != 1 || p[at[i]] != 'A' + (int)i)
				_exit(10 + i);
			if (write(done[1], &c, 1) != 1)
				_exit(3);
		}
		_exit(0);
	}
	for (i = 0; i < 4; i++) {
		c = 'A' + i;
		ASSERT_EQ(1, pwrite(fd, &c, 1, at[i])) TH_LOG("step %u: %s",
							   i, strerror(errno));
		EXPECT_EQ(3, st(fd).order);
		ASSERT_EQ(1, write(go[1], &c, 1));
		ASSERT_EQ(1, read(done[0], &c, 1));
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("child status %d", status);
	/* Shrinking leaves the order at the minimum. */
	ASSERT_EQ(0, ftruncate(fd, 10));
	EXPECT_EQ(3, st(fd).order);
	close(fd);
}

/*
 * Without room asked for, growth still never fails while mapped: the order
 * rises under the mapping, which keeps its extent and its data.
 */
TEST(growth_past_a_mapping_keeps_it)
{
	int fd = fresh(mpath("past"), 100);
	char *p, *q;

	ASSERT_LE(0, fd);
	ASSERT_EQ(2, pwrite(fd, "hi", 2, 0));
	p = mmap(NULL, 100, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(PG, vma_len(p));			/* order 0: one leaf */
	ASSERT_EQ(0, ftruncate(fd, 3 * MiB));		/* order 0 -> 2 */
	EXPECT_EQ(2, st(fd).order);
	EXPECT_EQ(0, memcmp(p, "hi", 2));
	p[1] = 'o';					/* same page */
	EXPECT_EQ('o', byte_at(fd, 1));
	q = mmap(NULL, 3 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(1 * GiB, vma_len(q));
	EXPECT_EQ('o', q[1]);
	/* Eviction of page 0 keeps the order-0 mapping's page (zeroed). */
	ASSERT_EQ(0, morsel_evict(fd, 0, PG));
	EXPECT_EQ(0, p[1]);
	EXPECT_EQ(0, q[1]);
	p[0] = 'Y';
	EXPECT_EQ('Y', q[0]);
	munmap(q, 3 * MiB);
	munmap(p, 100);
	close(fd);
}

TEST(min_order_bad_input)
{
	int fd = fresh(mpath("minbad"), PG), rfd;
	int max = getenv("MORSEL_PAGING") &&
		  !strcmp(getenv("MORSEL_PAGING"), "4") ? 3 : 4;
	struct morsel_min_order o;

	ASSERT_LE(0, fd);
	EXPECT_EQ(-EINVAL, morsel_set_min_order(fd, max + 1));
	EXPECT_EQ(-EINVAL, morsel_set_min_order(fd, 99));
	memset(&o, 0, sizeof(o));
	o.order = 1;
	o.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_SET_MIN_ORDER, &o));
	o.flags = 0;
	o.reserved[5] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_SET_MIN_ORDER, &o));
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_SET_MIN_ORDER, (void *)16));
	rfd = open(mpath("minbad"), O_RDONLY);
	ASSERT_LE(0, rfd);
	EXPECT_EQ(-EBADF, morsel_set_min_order(rfd, 1));
	close(rfd);
	EXPECT_EQ(0, st(fd).order);
	/* A bound morsel keeps its address: a misaligned extent is EBUSY. */
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR + 2 * MiB));
	EXPECT_EQ(0, morsel_set_min_order(fd, 1));	/* 2 MiB: aligned */
	EXPECT_EQ(-EBUSY, morsel_set_min_order(fd, 2));
	EXPECT_EQ(1, st(fd).order);
	EXPECT_EQ(1, st(fd).min_order);
	/* Lowering the minimum lets the order fall at the next resize. */
	EXPECT_EQ(0, morsel_set_min_order(fd, 0));
	ASSERT_EQ(0, ftruncate(fd, 100));
	EXPECT_EQ(0, st(fd).order);
	close(fd);
}

/* SQLite maps the file's length and mremaps as the file grows. */
TEST(mremap_inside_the_extent_in_place)
{
	int fd = fresh(mpath("mremap"), 40 * KiB);
	char *p, *q;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 40 * KiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(1, pwrite(fd, "m", 1, 1 * MiB));
	q = mremap(p, 40 * KiB, 1 * MiB + 1, MREMAP_MAYMOVE);
	ASSERT_EQ(p, q);
	EXPECT_EQ('m', q[1 * MiB]);
	EXPECT_EQ(2 * MiB, vma_len(q));
	/* Past the extent: ENOMEM; SQLite then unmaps and maps again. */
	ASSERT_EQ(1, pwrite(fd, "n", 1, 3 * MiB));
	ASSERT_ERRNO(ENOMEM, mremap(p, 1 * MiB + 1, 3 * MiB + 1,
				     MREMAP_MAYMOVE));
	ASSERT_EQ(0, munmap(p, 1 * MiB + 1));
	EXPECT_EQ(0, vma_len(p));
	p = mmap(NULL, 3 * MiB + 1, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('m', p[1 * MiB]);
	EXPECT_EQ('n', p[3 * MiB]);
	munmap(p, 3 * MiB + 1);
	close(fd);
}

TEST_HARNESS_MAIN
