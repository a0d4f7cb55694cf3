// SPDX-License-Identifier: GPL-2.0
/*
 * huge_test: 2 MiB leaves inside morsels (issue 22; docs/design.md).
 *
 * - Choice: huge=never|always|within_size|advise as on tmpfs, shown in
 *   /proc/mounts and changed by remount; MADV_HUGEPAGE and MADV_NOHUGEPAGE
 *   on a mapping; MORSEL_POPULATE_HUGE; the file's own mode
 *   (MORSEL_IOC_SET_HUGE).  STAT and /sys/fs/morselfs count the leaves,
 *   and a 2 MiB leaf needs no PTE table.
 * - Paths that meet a leaf: a punch, eviction (mapped or not) and a
 *   truncate inside it split it (data kept, the hole reads zeros); a whole
 *   leaf goes at once; MAP_PRIVATE copies; fork; mremap; an order-1
 *   mapping of the first 2 MiB; GUP's slow path (process_vm_readv, a
 *   pipe's vmsplice, O_DIRECT, io_uring's registered buffers) pins single
 *   pages of a leaf; the memory cgroup is charged 2 MiB per leaf.
 * - Collapse (MORSEL_IOC_COLLAPSE): copies 512 pages into one leaf, or
 *   takes back in place what a split left; refused while mounted; holes
 *   are left.
 *
 * Each test mounts its own volatile instance at /tmp/morsel-huge with the
 * options it needs (the suite's $MORSEL_MNT is left alone), and unmounts
 * it at the end.  Runs in the VM as root (tests/run-all).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

#define HDIR	"/tmp/morsel-huge"
#define HPG	(2 * MiB)

static char *hpath(const char *name)
{
	return path_in(HDIR, name);
}

/* A fresh instance with @opts and a file of @size in it, O_RDWR. */
static int setup(struct __test_metadata *_metadata, const char *opts,
		 uint64_t size)
{
	return instance_with_file(_metadata, HDIR, opts, size);
}

static void teardown(int fd)
{
	instance_done(HDIR, fd);
}

/* setup() and a shared mapping of the whole extent (1 GiB: order 2). */
static char *fresh_map(struct __test_metadata *_metadata, const char *opts,
		       uint64_t size, int *fd)
{
	*fd = setup(_metadata, opts, size);
	return map(_metadata, *fd, GiB, PROT_READ | PROT_WRITE);
}

/* The file's STAT, then the mapping, the file and the instance go. */
static struct morsel_stat finish(struct __test_metadata *_metadata, int fd,
				 char *p)
{
	struct morsel_stat s = st(_metadata, fd);

	munmap(p, GiB);
	teardown(fd);
	return s;
}

static int set_huge(int fd, uint64_t mode)
{
	struct morsel_huge h = { .mode = mode };

	return ioctl(fd, MORSEL_IOC_SET_HUGE, &h) ? -errno : 0;
}

#define range morsel_range_ioctl

/* Byte @i of the pattern every test writes. */
static char pat(uint64_t i)
{
	return (char)(i * 7 + (i >> 12) * 13 + 1);
}

/* Write the pattern over [@off, @off + @len) through @p (the mapping). */
static void fill(char *p, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = off; i < off + len; i += 512)
		p[i] = pat(i);
}

/* Check the pattern, or zeros in [@zs, @ze). */
static void check(struct __test_metadata *_metadata, const char *p,
		  uint64_t off, uint64_t len, uint64_t zs, uint64_t ze)
{
	uint64_t i;

	for (i = off; i < off + len; i += 512) {
		char want = i >= zs && i < ze ? 0 : pat(i);

		ASSERT_EQ(want, p[i]) TH_LOG("offset %llu", (unsigned long long)i);
	}
}

/*
 * An order-1 mapping of a file of order 2 whose first 2 MiB is a leaf:
 * mapped while the file was 1 MiB (an mmap of a larger file would be
 * rounded up to its extent), grown to @size, populated (huge=always),
 * then touched, which mounts the first PTE table and so splits the leaf.
 * The file @name is left at @size; the mapping (2 MiB, read-write) is
 * returned.
 */
static char *order1_over_leaf(struct __test_metadata *_metadata,
			      const char *name, uint64_t size, int *fdp)
{
	int fd = morsel_create(hpath(name), MiB, 0644);
	char *q;

	ASSERT_LE(0, fd);
	q = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, ftruncate(fd, size));
	ASSERT_EQ(2, st(_metadata, fd).order);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, size, 0));
	ASSERT_EQ(size / HPG, st(_metadata, fd).huge);
	q[PG] = 'i';
	ASSERT_EQ(size / HPG - 1, st(_metadata, fd).huge);
	*fdp = fd;
	return q;
}

/* Touch one byte per 2 MiB of [0, @len) through @p. */
static void touch(char *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i += HPG)
		p[i] = 1;
}

TEST(always_fills_faults_with_2m_leaves)
{
	int fd = setup(_metadata, "huge=always", 8 * MiB);
	long before = counter(_metadata, "huge");
	struct morsel_stat s;
	char *p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);

	touch(p, 8 * MiB);
	s = st(_metadata, fd);
	EXPECT_EQ(4, s.huge);
	EXPECT_EQ(4 * 512, s.pages);
	EXPECT_EQ(0, s.tables[0]);		/* no PTE table at all */
	EXPECT_EQ(1, s.tables[1]);
	EXPECT_EQ(MORSEL_HUGE_ALWAYS, s.huge_mode);
	EXPECT_EQ(before + 4, counter(_metadata, "huge"));
	{
		struct stat sb;

		ASSERT_EQ(0, fstat(fd, &sb));
		EXPECT_EQ(4 * 512 * 8, sb.st_blocks);
	}
	fill(p, 0, 8 * MiB);
	check(_metadata, p, 0, 8 * MiB, 0, 0);
	munmap(p, GiB);
	teardown(fd);
	EXPECT_EQ(before, counter(_metadata, "huge"));
}

TEST(fallback_is_counted)
{
	long fallbacks = counter(_metadata, "huge_fallbacks");
	struct morsel_stat s;
	int fd;
	char *p = fresh_map(_metadata, "huge=always,size=3m", 4 * MiB, &fd);

	p[0] = 1;
	p[2 * MiB] = 1;			/* no room for 512 more: 4 KiB */
	EXPECT_EQ(fallbacks + 1, counter(_metadata, "huge_fallbacks"));
	s = finish(_metadata, fd, p);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(513, s.pages);
}

TEST(never_and_nohugepage_keep_4k_pages)
{
	struct morsel_stat s;
	char *p;
	int fd;

	p = fresh_map(_metadata, "huge=never", 4 * MiB, &fd);
	touch(p, 4 * MiB);
	s = finish(_metadata, fd, p);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(2, s.pages);

	p = fresh_map(_metadata, "huge=always", 4 * MiB, &fd);
	ASSERT_EQ(0, madvise(p, GiB, MADV_NOHUGEPAGE));
	touch(p, 4 * MiB);
	s = finish(_metadata, fd, p);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(2, s.pages);
}

TEST(within_size_and_advise)
{
	struct morsel_stat s;
	char *p;
	int fd;

	p = fresh_map(_metadata, "huge=within_size", 3 * MiB, &fd);
	p[0] = 1;			/* [0, 2M) lies inside the size */
	p[2 * MiB] = 1;			/* [2M, 4M) does not */
	s = finish(_metadata, fd, p);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(513, s.pages);

	/* always: no leaf reaches past the size, whose bytes must fault. */
	p = fresh_map(_metadata, "huge=always", 3 * MiB, &fd);
	p[2 * MiB] = 1;
	EXPECT_EQ(SIGBUS, in_child(write_byte, p + 3 * MiB));
	s = finish(_metadata, fd, p);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(1, s.pages);

	p = fresh_map(_metadata, "huge=advise", 4 * MiB, &fd);
	p[0] = 1;
	ASSERT_EQ(0, madvise(p, GiB, MADV_HUGEPAGE));
	p[2 * MiB] = 1;
	s = finish(_metadata, fd, p);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(513, s.pages);
}

TEST(populate_flag_and_file_mode)
{
	int fd = setup(_metadata, "huge=advise", 8 * MiB);
	struct morsel_stat s;

	EXPECT_EQ(-EINVAL, range(fd, MORSEL_IOC_POPULATE, 0, HPG, 2));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, HPG, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, HPG, 3 * HPG,
			   MORSEL_POPULATE_HUGE));
	s = st(_metadata, fd);
	EXPECT_EQ(3, s.huge);
	EXPECT_EQ(4 * 512, s.pages);
	EXPECT_EQ(1, s.tables[0]);
	EXPECT_EQ(MORSEL_HUGE_ADVISE, s.huge_mode);
	/* The file's own mode wins over the instance's. */
	ASSERT_EQ(0, set_huge(fd, MORSEL_HUGE_NEVER));
	EXPECT_EQ(MORSEL_HUGE_NEVER, st(_metadata, fd).huge_mode);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, 8 * MiB, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 8 * MiB,
			   MORSEL_POPULATE_HUGE));
	EXPECT_EQ(0, st(_metadata, fd).huge);
	ASSERT_EQ(0, set_huge(fd, MORSEL_HUGE_INHERIT));
	EXPECT_EQ(MORSEL_HUGE_ADVISE, st(_metadata, fd).huge_mode);
	EXPECT_EQ(-EINVAL, set_huge(fd, 5));
	teardown(fd);
}

TEST(mount_option_shows_and_remounts)
{
	char opts[1024];
	int fd = setup(_metadata, "huge=within_size", 0);

	proc_mount_opts(HDIR, opts, sizeof(opts));
	EXPECT_NE(NULL, strstr(opts, "huge=within_size")) TH_LOG("%s", opts);
	ASSERT_EQ(0, mount("none", HDIR, NULL, MS_REMOUNT, "huge=advise"));
	proc_mount_opts(HDIR, opts, sizeof(opts));
	EXPECT_NE(NULL, strstr(opts, "huge=advise")) TH_LOG("%s", opts);
	EXPECT_EQ(MORSEL_HUGE_ADVISE, st(_metadata, fd).huge_mode);
	ASSERT_EQ(0, mount("none", HDIR, NULL, MS_REMOUNT, "huge=never"));
	proc_mount_opts(HDIR, opts, sizeof(opts));
	EXPECT_EQ(NULL, strstr(opts, "huge=")) TH_LOG("%s", opts);
	EXPECT_NE(0, mount("none", HDIR, NULL, MS_REMOUNT, "huge=sometimes"));
	EXPECT_EQ(EINVAL, errno);
	teardown(fd);
}

TEST(punch_inside_a_leaf_splits_it)
{
	int fd = setup(_metadata, "huge=always", 4 * MiB);
	long splits = counter(_metadata, "huge_splits");
	struct morsel_stat s;
	char *p;

	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, 4 * MiB);
	munmap(p, GiB);
	/* Unmapped: freed at once; 4 KiB punched, the rest stays. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       MiB, PG));
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(1023, s.pages);
	EXPECT_EQ(1, s.tables[0]);
	EXPECT_EQ(splits + 1, counter(_metadata, "huge_splits"));
	/* Mapped: eviction splits the second leaf. */
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 3 * MiB, 2 * PG, 0));
	s = st(_metadata, fd);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(1021, s.pages);
	check(_metadata, p, 0, 3 * MiB, MiB, MiB + PG);
	check(_metadata, p, 3 * MiB, MiB, 3 * MiB, 3 * MiB + 2 * PG);
	/* A whole leaf goes at once. */
	teardown(fd);
	fd = setup(_metadata, "huge=always", 4 * MiB);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	splits = counter(_metadata, "huge_splits");
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 2 * MiB, 2 * MiB, 0));
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(512, s.pages);
	EXPECT_EQ(splits, counter(_metadata, "huge_splits"));
	EXPECT_EQ(0, p[3 * MiB]);
	munmap(p, GiB);
	teardown(fd);
}

TEST(truncate_inside_a_leaf)
{
	int fd = setup(_metadata, "huge=always", 4 * MiB);
	struct morsel_stat s;
	char *p;

	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, 4 * MiB);
	munmap(p, GiB);
	ASSERT_EQ(0, ftruncate(fd, 3 * MiB));
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(768, s.pages);
	/* Down to order 1: the first leaf becomes the root's PTE table. */
	ASSERT_EQ(0, ftruncate(fd, MiB));
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.order);
	EXPECT_EQ(0, s.huge);
	EXPECT_EQ(256, s.pages);
	ASSERT_EQ(0, ftruncate(fd, 4 * MiB));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	check(_metadata, p, 0, MiB, 0, 0);
	check(_metadata, p, MiB, 3 * MiB, MiB, 4 * MiB);
	munmap(p, GiB);
	teardown(fd);
}

TEST(private_fork_mremap_and_order1)
{
	int fd = setup(_metadata, "huge=always", 4 * MiB);
	char *p, *q, *r;
	pid_t pid;

	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, 4 * MiB);
	/* MAP_PRIVATE: page by page, copies on write, the file keeps its data. */
	q = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	check(_metadata, q, 0, 4 * MiB, 0, 0);
	q[5 * PG] = 'p';
	EXPECT_EQ(pat(5 * PG), p[5 * PG]);
	munmap(q, 4 * MiB);
	/* A child sees the leaves. */
	pid = fork();
	if (!pid) {
		check(_metadata, p, 0, 4 * MiB, 0, 0);
		p[HPG + 8] = 'c';
		_exit(0);
	}
	wait_child_ok(_metadata, pid);
	EXPECT_EQ('c', p[HPG + 8]);
	p[HPG + 8] = pat(HPG + 8);
	/* mremap moves the mount, not the leaves. */
	r = mremap(p, GiB, GiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, r);
	check(_metadata, r, 0, 4 * MiB, 0, 0);
	EXPECT_EQ(2, st(_metadata, fd).huge);
	munmap(r, GiB);
	close(fd);
	/* A mapping of order 1 mounts the first 2 MiB's PTE table. */
	q = order1_over_leaf(_metadata, "g", 4 * MiB, &fd);
	EXPECT_EQ('i', q[PG]);
	EXPECT_EQ(0, q[2 * PG]);
	munmap(q, 2 * MiB);
	teardown(fd);
}

/*
 * An order-0 mapping (made while the file was one page) of a morsel whose
 * first 2 MiB became a leaf: its mount entry copies the leaf's first page
 * (tree.c morsel_mount_entry); evicting the leaf unmounts the copy.
 */
TEST(order0_mapping_over_a_leaf)
{
	int fd = setup(_metadata, "huge=always", PG);
	char *q, *p;

	q = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(0, ftruncate(fd, 4 * MiB));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	ASSERT_EQ(2, st(_metadata, fd).huge);
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	p[0] = 'a';
	p[PG] = 'b';
	EXPECT_EQ('a', q[0]);		/* mounts the copy of page 0 */
	q[1] = 'c';
	EXPECT_EQ('c', p[1]);
	EXPECT_EQ(2, st(_metadata, fd).huge);
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, 2 * MiB, 0));
	EXPECT_EQ(0, q[0]);		/* the copy went with the page */
	EXPECT_EQ(0, p[PG]);
	munmap(p, GiB);
	munmap(q, PG);
	teardown(fd);
}

TEST(gup_pins_pages_of_a_leaf)
{
	int fd = setup(_metadata, "huge=always", 4 * MiB);
	char *p, buf[3 * PG];
	struct iovec local = { buf, sizeof(buf) }, remote;
	int pipefd[2];
	struct iovec v;
	uint64_t i;

	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, 4 * MiB);
	/* process_vm_readv: GUP's slow path, across a page boundary. */
	remote.iov_base = p + HPG + 5 * PG + 100;
	remote.iov_len = sizeof(buf);
	ASSERT_EQ((ssize_t)sizeof(buf),
		  process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	EXPECT_EQ(0, memcmp(buf, p + HPG + 5 * PG + 100, sizeof(buf)));
	/* vmsplice pins the pages while the pipe holds them. */
	ASSERT_EQ(0, pipe(pipefd));
	v.iov_base = p + 7 * PG;
	v.iov_len = 2 * PG;
	ASSERT_EQ((ssize_t)(2 * PG), vmsplice(pipefd[1], &v, 1, 0));
	/* The pinned pages leave the file; the pipe keeps what it pinned. */
	ASSERT_EQ(0, range(fd, MORSEL_IOC_EVICT, 0, 2 * MiB, 0));
	ASSERT_EQ((ssize_t)(2 * PG), read(pipefd[0], buf, 2 * PG));
	for (i = 0; i < 2 * PG; i += 512)
		ASSERT_EQ(pat(7 * PG + i), buf[i]);
	EXPECT_EQ(0, p[7 * PG]);
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(p, GiB);
	teardown(fd);
}

/* Read @len bytes at 0 of @fd into @buf with one IORING_OP_READ_FIXED. */
static int uring_read_fixed(struct __test_metadata *_metadata, int fd,
			    char *reg, size_t reg_len, char *buf, size_t len)
{
	struct io_uring_params prm = { 0 };
	struct iovec iov = { reg, reg_len };
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned int *sq_tail, *sq_array, *cq_head;
	size_t sq_len, cq_len;
	char *sq, *cq;
	int ring, res;

	ring = syscall(__NR_io_uring_setup, 4, &prm);
	ASSERT_LE(0, ring) TH_LOG("io_uring_setup: %s", strerror(errno));
	sq_len = prm.sq_off.array + prm.sq_entries * sizeof(unsigned int);
	cq_len = prm.cq_off.cqes + prm.cq_entries * sizeof(struct io_uring_cqe);
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  ring, IORING_OFF_SQ_RING);
	cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
		  ring, IORING_OFF_CQ_RING);
	sqes = mmap(NULL, prm.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	ASSERT_NE(MAP_FAILED, sq);
	ASSERT_NE(MAP_FAILED, cq);
	ASSERT_NE(MAP_FAILED, sqes);
	/* Registering pins every page of the buffer (FOLL_LONGTERM). */
	ASSERT_EQ(0, syscall(__NR_io_uring_register, ring,
			     IORING_REGISTER_BUFFERS, &iov, 1))
		TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_READ_FIXED;
	sqes[0].fd = fd;
	sqes[0].addr = (uintptr_t)buf;
	sqes[0].len = len;
	sqes[0].buf_index = 0;
	sq_tail = (unsigned int *)(sq + prm.sq_off.tail);
	sq_array = (unsigned int *)(sq + prm.sq_off.array);
	sq_array[*sq_tail & (prm.sq_entries - 1)] = 0;
	__atomic_store_n(sq_tail, *sq_tail + 1, __ATOMIC_RELEASE);
	ASSERT_EQ(1, syscall(__NR_io_uring_enter, ring, 1, 1,
			     IORING_ENTER_GETEVENTS, NULL, 0));
	cq_head = (unsigned int *)(cq + prm.cq_off.head);
	cqes = (struct io_uring_cqe *)(cq + prm.cq_off.cqes);
	res = cqes[*cq_head & (prm.cq_entries - 1)].res;
	__atomic_store_n(cq_head, *cq_head + 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, syscall(__NR_io_uring_register, ring,
			     IORING_UNREGISTER_BUFFERS, NULL, 0));
	munmap(sqes, prm.sq_entries * sizeof(*sqes));
	munmap(cq, cq_len);
	munmap(sq, sq_len);
	close(ring);
	return res;
}

TEST(direct_io_and_io_uring_across_leaves)
{
	int fd = setup(_metadata, "huge=always", 4 * MiB);
	int dfd = open("/proc/self/exe", O_RDONLY | O_DIRECT);
	int nfd = open("/proc/self/exe", O_RDONLY);
	char *want = malloc(64 * KiB), *p, *r;

	ASSERT_LE(0, dfd);
	ASSERT_LE(0, nfd);
	ASSERT_NE(NULL, want);
	ASSERT_EQ(16 * KiB, pread(nfd, want, 16 * KiB, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 4 * MiB, 0));
	ASSERT_EQ(2, st(_metadata, fd).huge);
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	/*
	 * O_DIRECT from the 9p host root: netfs pins the buffer with
	 * iov_iter_extract_pages(), here 8 KiB on each side of the leaves'
	 * border; a read-only mapping refuses the write pin.
	 */
	ASSERT_EQ(16 * KiB, pread(dfd, p + 2 * MiB - 8 * KiB, 16 * KiB, 0));
	EXPECT_EQ(0, memcmp(want, p + 2 * MiB - 8 * KiB, 16 * KiB));
	r = mmap(NULL, GiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_EQ(-1, pread(dfd, r + MiB, 16 * KiB, 0));
	EXPECT_EQ(EFAULT, errno);
	munmap(r, GiB);
	/* io_uring: a registered buffer over both leaves, one fixed read. */
	memset(p + MiB, 0, 2 * MiB);
	ASSERT_EQ(16 * KiB, uring_read_fixed(_metadata, nfd, p + MiB, 2 * MiB,
					      p + 2 * MiB - 8 * KiB, 16 * KiB));
	EXPECT_EQ(0, memcmp(want, p + 2 * MiB - 8 * KiB, 16 * KiB));
	EXPECT_EQ(2, st(_metadata, fd).huge);
	munmap(p, GiB);
	close(dfd);
	close(nfd);
	free(want);
	teardown(fd);
}

#define CG "/sys/fs/cgroup"

TEST(memcg_charged_2m_per_leaf)
{
	int fd = setup(_metadata, "huge=always", 8 * MiB), status;
	fresh_cgroup(_metadata, "morsel-huge");
	if (!fork()) {
		char *p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		long before, after;

		if (join_cgroup("morsel-huge") || p == MAP_FAILED)
			_exit(1);
		before = cg_current("morsel-huge");
		p[0] = 1;
		p[4 * MiB] = 1;		/* two leaves: 4 MiB and a PMD table */
		after = cg_current("morsel-huge");
		printf("# memory.current %ld -> %ld (+%ld KiB)\n", before, after,
		       (after - before) / 1024);
		_exit(after - before >= (long)(4 * MiB) &&
		      after - before < (long)(5 * MiB) ? 0 : 2);
	}
	wait(&status);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(2, st(_metadata, fd).huge);
	teardown(fd);
	EXPECT_LT(cg_current("morsel-huge"), (long)MiB);	/* the charges went with the pages */
	rmdir(CG "/morsel-huge");
}

TEST(collapse)
{
	int fd = setup(_metadata, "huge=never", 6 * MiB);
	long collapses = counter(_metadata, "huge_collapses");
	struct morsel_stat s;
	char *p, *q;

	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	fill(p, 0, 4 * MiB);
	p[4 * MiB] = 1;			/* [4M, 6M): one page, holes */
	EXPECT_EQ(-EBUSY, range(fd, MORSEL_IOC_COLLAPSE, 0, 6 * MiB, 0));
	munmap(p, GiB);
	/* Copied: 4 KiB pages from anywhere become one block each. */
	EXPECT_EQ(-EAGAIN, range(fd, MORSEL_IOC_COLLAPSE, 0, 6 * MiB, 0));
	s = st(_metadata, fd);
	EXPECT_EQ(2, s.huge);
	EXPECT_EQ(1025, s.pages);
	EXPECT_EQ(1, s.tables[0]);
	EXPECT_EQ(collapses + 2, counter(_metadata, "huge_collapses"));
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	check(_metadata, p, 0, 4 * MiB, 0, 0);
	munmap(p, GiB);
	/* A punch splits a leaf; its hole is left until filled again. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       PG, PG));
	EXPECT_EQ(-EAGAIN, range(fd, MORSEL_IOC_COLLAPSE, 0, 2 * MiB, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_POPULATE, 0, 2 * MiB, 0));
	ASSERT_EQ(0, range(fd, MORSEL_IOC_COLLAPSE, 0, 2 * MiB, 0));
	EXPECT_EQ(2, st(_metadata, fd).huge);
	EXPECT_EQ(-EINVAL, range(fd, MORSEL_IOC_COLLAPSE, 0, 6 * MiB, 1));
	close(fd);

	/* In place: an order-1 mapping split the leaf, nothing moved. */
	ASSERT_EQ(0, mount("none", HDIR, NULL, MS_REMOUNT, "huge=always"));
	q = order1_over_leaf(_metadata, "g", 4 * MiB, &fd);
	munmap(q, 2 * MiB);
	s = st(_metadata, fd);
	EXPECT_EQ(1, s.huge);
	EXPECT_EQ(1, s.tables[0]);
	collapses = counter(_metadata, "huge_collapses");
	ASSERT_EQ(0, range(fd, MORSEL_IOC_COLLAPSE, 0, 4 * MiB, 0));
	EXPECT_EQ(collapses + 1, counter(_metadata, "huge_collapses"));
	s = st(_metadata, fd);
	EXPECT_EQ(2, s.huge);
	EXPECT_EQ(1024, s.pages);
	EXPECT_EQ(0, s.tables[0]);
	p = map(_metadata, fd, GiB, PROT_READ | PROT_WRITE);
	EXPECT_EQ('i', p[PG]);
	EXPECT_EQ(0, p[2 * PG]);
	munmap(p, GiB);
	teardown(fd);
}

/* The morsel tool: huge, populate-huge, collapse, and stat's line. */
TEST(cli)
{
	int fd = setup(_metadata, "huge=never", 4 * MiB);
	char cmd[2048], out[4096];

	snprintf(cmd, sizeof(cmd), "tools/morsel huge %s advise && "
		 "tools/morsel populate %s 0 2M && "
		 "tools/morsel populate-huge %s 2M 2M && tools/morsel stat %s",
		 hpath("f"), hpath("f"), hpath("f"), hpath("f"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "huge:     1 2 MiB leaves, 0 1 GiB leaves, mode advise"))
		TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel collapse %s 0 4M && "
		 "tools/morsel stat %s", hpath("f"), hpath("f"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "huge:     2 2 MiB leaves")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel huge %s sometimes 2>&1",
		 hpath("f"));
	EXPECT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	teardown(fd);
}

TEST_HARNESS_MAIN
