/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the suites that test the primitive itself (primitive_test,
 * ioctl_test, io_test, lifecycle_test; they replaced morsel_test): sizes, a
 * checked morsel_stat(), mmap() and module counter, the length of the VMA
 * at an address, the paging depth, a shell command's output, a fork child
 * that must exit 0, and the fixture "slow" for the tests that may take
 * longer than the harness's 30 s.
 *
 * A helper that checks takes the test's _metadata and fails the test with
 * ASSERT_*, as the test itself would; in a fork child a failed ASSERT_*
 * ends the child and fails the test too (a TEST's child aborts, which its
 * parent's check of the status reports; a TEST_F's metadata is shared).
 * No locking: each TEST is a process.  Include it after
 * kselftest_harness.h and ksft_util.h.
 */
#ifndef MORSEL_MORSEL_UTIL_H
#define MORSEL_MORSEL_UTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)
#define PG 4096ULL

/* The extent of orders 0, 1 and 2. */
static const uint64_t order_size[] = { 4 * KiB, 2 * MiB, 1 * GiB };

/* morsel_stat() of @fd, which must succeed. */
static inline struct morsel_stat st(struct __test_metadata *_metadata, int fd)
{
	struct morsel_stat s;
	int err = morsel_stat(fd, &s);

	ASSERT_EQ(0, err) TH_LOG("morsel_stat: %s", strerror(-err));
	return s;
}

/* The module's counter /sys/fs/morselfs/@name, which must be readable. */
static inline long counter(struct __test_metadata *_metadata, const char *name)
{
	long v = morsel_counter(name);

	ASSERT_LE(0, v) TH_LOG("/sys/fs/morselfs/%s is unreadable", name);
	return v;
}

/* A MAP_SHARED mapping of @len bytes of @fd at offset 0, which must work. */
static inline char *map(struct __test_metadata *_metadata, int fd, size_t len,
			int prot)
{
	char *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap(len %zu): %s", len, strerror(errno));
	return p;
}

/* Length of the VMA that contains @addr, from /proc/self/maps (0: none). */
static inline uint64_t vma_len(struct __test_metadata *_metadata, void *addr)
{
	unsigned long a = (unsigned long)addr, s, e;
	char line[512];
	uint64_t len = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
			len = e - s;
	fclose(f);
	return len;
}

/* 5-level paging in the guest (vm/run --paging 5)? */
static inline int five_level(struct __test_metadata *_metadata)
{
	const char *p = getenv("MORSEL_PAGING");

	ASSERT_NE(NULL, p) TH_LOG("MORSEL_PAGING is not set (run under vm/run)");
	return !strcmp(p, "5");
}

/* For in_child(): a write to @p (SIGSEGV, SIGBUS or nothing). */
static inline void write_byte(volatile char *p)
{
	*p = 'X';
}

/* Child @pid, which must exit with status 0. */
static inline void wait_child_ok(struct __test_metadata *_metadata, pid_t pid)
{
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status) TH_LOG("child failed (status 0x%x)", status);
}

/*
 * Run the shell command @cmd (from the repository, as tools/morsel is
 * named): its standard output in @out (up to @len - 1 bytes), and its
 * status as pclose() returns it.
 */
static inline int run_cmd(struct __test_metadata *_metadata, const char *cmd,
			  char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	ASSERT_NE(NULL, f) TH_LOG("popen(%s): %s", cmd, strerror(errno));
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	return pclose(f);
}

/*
 * Suites that mount instances of their own (huge_test, huge1g_test): the
 * file @name in the instance at @dir (a static buffer), a fresh instance
 * at @dir with @opts and a file "f" of @size in it (O_RDWR), and the end
 * of both.  mount_instance() is ksft_util.h's.
 */
static inline char *path_in(const char *dir, const char *name)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static inline int instance_with_file(struct __test_metadata *_metadata,
				     const char *dir, const char *opts,
				     uint64_t size)
{
	int fd;

	ASSERT_EQ(0, mount_instance(dir, opts)) TH_LOG("mount %s: %s", opts,
							strerror(errno));
	fd = morsel_create(path_in(dir, "f"), size, 0644);
	ASSERT_LE(0, fd) TH_LOG("create: %s", strerror(-fd));
	return fd;
}

static inline void instance_done(const char *dir, int fd)
{
	close(fd);
	umount2(dir, 0);
}

/* POPULATE, EVICT or COLLAPSE (@cmd) of a range: 0 or -errno. */
static inline int morsel_range_ioctl(int fd, unsigned long cmd, uint64_t off,
			      uint64_t len, uint64_t flags)
{
	struct morsel_range r = { .offset = off, .length = len, .flags = flags };

	return ioctl(fd, cmd, &r) ? -errno : 0;
}

/* memory.current of the cgroup /sys/fs/cgroup/@cg, or -1. */
static inline long cg_current(const char *cg)
{
	char path[256];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/memory.current", cg);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* A new, empty cgroup /sys/fs/cgroup/@cg with the memory controller. */
static inline void fresh_cgroup(struct __test_metadata *_metadata,
				const char *cg)
{
	char path[256];
	FILE *f;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL));
	f = fopen("/sys/fs/cgroup/cgroup.subtree_control", "w");
	ASSERT_NE(NULL, f);
	fputs("+memory", f);
	ASSERT_EQ(0, fclose(f));
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s", cg);
	rmdir(path);
	ASSERT_EQ(0, mkdir(path, 0755));
}

/* Move the calling process into the cgroup @cg; 0 or -1. */
static inline int join_cgroup(const char *cg)
{
	char path[256], pid[32];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/cgroup.procs", cg);
	snprintf(pid, sizeof(pid), "%d", getpid());
	return write_file(path, pid);
}

/*
 * TEST_F_TIMEOUT(slow, name, seconds): a test that may need longer than the
 * harness's default 30 s (the bulk faults, populations and evictions; the
 * debug kernel under TCG is slow).  The fixture holds nothing.
 */
FIXTURE(slow) {
	int unused;
};

FIXTURE_SETUP(slow)
{
}

FIXTURE_TEARDOWN(slow)
{
}

#endif /* MORSEL_MORSEL_UTIL_H */
