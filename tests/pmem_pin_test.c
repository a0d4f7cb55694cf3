// SPDX-License-Identifier: GPL-2.0
/*
 * pmem_pin_test: references that outlive what a persistent morsel's page
 * was for.  A persistent file's pages are the device's and are handed to
 * the next file once freed, so:
 *  - long-term pins (an io_uring fixed buffer here; RDMA and VFIO take the
 *    same GUP path) are refused with EOPNOTSUPP, as for any fsdax file,
 *    while a volatile morsel's ordinary pages can be pinned;
 *  - statx says STATX_ATTR_DAX for persistent files only;
 *  - a page a pipe still holds (vmsplice) after its file is gone and its
 *    file system unmounted is not given to anyone by the next mount: a
 *    full device is written and the pipe still reads the old bytes; once
 *    the pipe is closed the next mount frees it (nothing leaks), or,
 *    with no mount, the module's reaper does; while it is held the
 *    module cannot be unloaded.
 *
 * kselftest harness, fixture "pm" of pmem_util.h.  No locking.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "pmem_util.h"

#define VOLATILE "/tmp/pmem-pin-volatile"

/*
 * Register @len bytes at @buf as an io_uring fixed buffer: pin_user_pages
 * with FOLL_LONGTERM.  0, or -errno.
 */
static int register_buffer(void *buf, size_t len)
{
	struct io_uring_params params = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int ring = syscall(__NR_io_uring_setup, 4, &params), err = 0;

	if (ring < 0)
		return -errno;
	if (syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1))
		err = -errno;
	close(ring);
	return err;
}

/* A shared mapping of a new populated file of @len bytes at @path. */
static void *map_new(const char *path, size_t len)
{
	int fd = morsel_create(path, len, 0644);
	void *m;

	if (fd < 0 || morsel_populate(fd, 0, len)) {
		if (fd >= 0)
			close(fd);
		return MAP_FAILED;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m;
}

TEST_F(pm, longterm_pins_refused)
{
	size_t len = 2 * PG;
	void *anon, *m;

	/* This kernel pins: anonymous memory registers. */
	anon = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	memset(anon, 1, len);
	ASSERT_EQ(0, register_buffer(anon, len));
	munmap(anon, len);

	m = map_new(p("f"), len);
	ASSERT_NE(MAP_FAILED, m);
	memset(m, 2, len);
	EXPECT_EQ(-EOPNOTSUPP, register_buffer(m, len));
	munmap(m, len);

	/* A volatile morsel's pages are ordinary pages: they may be pinned. */
	ASSERT_EQ(0, mount_instance(VOLATILE, "size=16M"));
	m = map_new(VOLATILE "/f", len);
	EXPECT_NE(MAP_FAILED, m);
	if (m != MAP_FAILED) {
		EXPECT_EQ(0, register_buffer(m, len));
		munmap(m, len);
	}
	umount(VOLATILE);
}

TEST_F(pm, statx_says_dax)
{
	struct statx sx;
	int fd;

	fd = morsel_create(p("f"), PG, 0644);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, statx(AT_FDCWD, p("f"), 0, STATX_BASIC_STATS, &sx));
	EXPECT_TRUE(sx.stx_attributes_mask & STATX_ATTR_DAX);
	EXPECT_TRUE(sx.stx_attributes & STATX_ATTR_DAX);

	ASSERT_EQ(0, mount_instance(VOLATILE, "size=16M"));
	fd = morsel_create(VOLATILE "/f", PG, 0644);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, statx(AT_FDCWD, VOLATILE "/f", 0, STATX_BASIC_STATS, &sx));
	EXPECT_FALSE(sx.stx_attributes & STATX_ATTR_DAX);
	umount(VOLATILE);
}

/* The module's reference count ("refcnt" in sysfs), -1 if unreadable. */
static long module_refs(void)
{
	FILE *f = fopen("/sys/module/morsel/refcnt", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* Write pages of @c into @path until the device is full. */
static long long fill(const char *path, char c)
{
	static char page[PG];
	long long n = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	memset(page, c, sizeof(page));
	while (write(fd, page, sizeof(page)) == (ssize_t)sizeof(page))
		n++;
	close(fd);
	return n;
}

/*
 * A new one-page file "f" of bytes @c, vmspliced into a new pipe @pfd,
 * then unmapped and unlinked: its page is free but the pipe holds it.
 */
static int hold_in_pipe(int pfd[2], char c)
{
	struct iovec v = { .iov_len = PG };
	void *m = map_new(p("f"), PG);

	if (m == MAP_FAILED)
		return -1;
	memset(m, c, PG);
	v.iov_base = m;
	if (pipe(pfd) || vmsplice(pfd[1], &v, 1, 0) != (ssize_t)PG)
		return -1;
	munmap(m, PG);
	return unlink(p("f"));
}

TEST_F(pm, pipe_keeps_page_across_remount)
{
	unsigned long long base;
	long refs_held, refs;
	char buf[PG], want[PG];
	int pfd[2];

	put(p("keep"), "");	/* the root directory's first page stays */
	base = free_pages();
	memset(want, 'A', sizeof(want));
	ASSERT_EQ(0, hold_in_pipe(pfd, 'A'));

	ASSERT_EQ(0, umount(DIR));
	refs_held = module_refs();
	ASSERT_EQ(0, do_mount());
	/* Reserved by the new mount: one page short of the start. */
	EXPECT_EQ(base - 1, free_pages());
	ASSERT_LT(0, fill(p("fill"), 'B'));
	EXPECT_GT(2, free_pages());
	ASSERT_EQ((ssize_t)PG, read(pfd[0], buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, want, PG)) TH_LOG("the pipe's page was reused");
	close(pfd[0]);
	close(pfd[1]);
	ASSERT_EQ(0, unlink(p("fill")));

	/* Idle now: the next mount frees it and the module is free to go. */
	ASSERT_EQ(0, remount());
	EXPECT_EQ(base, free_pages());
	ASSERT_EQ(0, umount(DIR));
	refs = module_refs();
	EXPECT_EQ(refs + 1, refs_held) TH_LOG("refcnt %ld with the page held, %ld after",
					       refs_held, refs);
	ASSERT_EQ(0, do_mount());
}

/*
 * Unmounted, the page is freed by the module's reaper once the pipe lets
 * go: the module's reference goes (waited for with a deadline; the
 * reaper looks once a second) and the next mount finds all space free.
 */
TEST_F(pm, reaper_frees_page_without_mount)
{
	unsigned long long base;
	struct timespec start, now;
	long refs, refs_held;
	int pfd[2];

	put(p("keep"), "");
	base = free_pages();
	ASSERT_EQ(0, hold_in_pipe(pfd, 'C'));
	ASSERT_EQ(0, umount(DIR));
	refs_held = module_refs();
	close(pfd[0]);
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		usleep(10000);	/* a poll's pause; the deadline decides */
		refs = module_refs();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (refs == refs_held && now.tv_sec - start.tv_sec < 30);
	EXPECT_EQ(refs_held - 1, refs) TH_LOG("refcnt %ld with the page held, %ld after",
					       refs_held, refs);
	ASSERT_EQ(0, do_mount());
	EXPECT_EQ(base, free_pages());
}

TEST_HARNESS_MAIN
