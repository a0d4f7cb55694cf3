// SPDX-License-Identifier: GPL-2.0
/*
 * errors_test: bad inputs to morselfs that no other test asserts, one
 * behaviour per TEST; docs/errors.md lists every bad input with its errno
 * or signal and names the test (here or in another suite)
 * that proves it.  Runs in the VM (vm/run) as root, with the suite's
 * morselfs at $MORSEL_MNT.
 *
 * kselftest harness: every TEST runs in its own child process.  Tests that
 * mount their own instance or make a memory cgroup use names no other test
 * (nor safety_test) uses.  The memory-cgroup tests set vm.oom_dump_tasks
 * to 0 while they run: the OOM report's task list has a "pgtables_bytes"
 * column, which vm/run would take for a page-table accounting error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define PG 4096ULL

#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* Far from the mmap base and from ioctl_test's 0x600000000000. */
#define BIND_ADDR 0x620000000000ULL

static void *volatile bad_ptr = (void *)16;	/* unmapped, opaque to gcc */

static void write_byte(volatile char *p)
{
	*p = 'X';
}

/* The exit code of child @pid, or 128 + its signal. */
static int child_status(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A free, @align-aligned range of @len bytes (nothing mapped there now). */
static char *free_range(uint64_t len, uint64_t align)
{
	char *p = mmap(NULL, len + align, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p, len + align);
	return (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
}

/* ---- ioctl: commands and fds ---- */

TEST(ioctl_wrong_size_is_unknown)
{
	int fd = fresh(mpath("ioc-size"), 2 * MiB);
	struct morsel_range r = { .length = PG };

	ASSERT_LE(0, fd);
	/* STAT's number with another size or direction is another command. */
	ASSERT_ERRNO(ENOTTY, ioctl(fd, _IOWR(MORSEL_IOC_MAGIC, 0x01,
					     struct morsel_range), &r));
	ASSERT_ERRNO(ENOTTY, ioctl(fd, _IOR(MORSEL_IOC_MAGIC, 0x01,
					    struct morsel_stat), &r));
	ASSERT_ERRNO(ENOTTY, ioctl(fd, _IO(MORSEL_IOC_MAGIC, 0x02), &r));
	EXPECT_EQ(0, ioctl(fd, MORSEL_IOC_POPULATE, &r));
	close(fd);
}

TEST(ioctl_unknown_on_readonly_fd_enotty)
{
	int fd = fresh(mpath("ioc-ro"), 2 * MiB), rfd;
	struct morsel_stat st;

	ASSERT_LE(0, fd);
	rfd = open(mpath("ioc-ro"), O_RDONLY);
	ASSERT_LE(0, rfd);
	/* The command is checked before the file's mode: ENOTTY, not EBADF. */
	ASSERT_ERRNO(ENOTTY, ioctl(rfd, _IOW(MORSEL_IOC_MAGIC, 0x3f,
					     struct morsel_range), &st));
	close(rfd);
	close(fd);
}

TEST(ioctl_readonly_fd_checked_before_argument)
{
	int fd = fresh(mpath("ioc-ro2"), 2 * MiB), rfd;

	ASSERT_LE(0, fd);
	rfd = open(mpath("ioc-ro2"), O_RDONLY);
	ASSERT_LE(0, rfd);
	ASSERT_ERRNO(EBADF, ioctl(rfd, MORSEL_IOC_POPULATE, bad_ptr));
	ASSERT_ERRNO(EBADF, ioctl(rfd, MORSEL_IOC_EVICT, bad_ptr));
	ASSERT_ERRNO(EBADF, ioctl(rfd, MORSEL_IOC_BIND, bad_ptr));
	close(rfd);
	close(fd);
}

TEST(readonly_fd_may_stat_and_list)
{
	int fd = fresh(mpath("ioc-ro3"), 2 * MiB), rfd, wfd;
	struct morsel_mapping m[2];
	struct morsel_stat st;
	char *p;

	ASSERT_LE(0, fd);
	rfd = open(mpath("ioc-ro3"), O_RDONLY);
	wfd = open(mpath("ioc-ro3"), O_WRONLY);
	ASSERT_LE(0, rfd);
	ASSERT_LE(0, wfd);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, rfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, morsel_stat(rfd, &st));
	EXPECT_EQ(1, st.mappings);
	ASSERT_EQ(1, morsel_mappings(rfd, m, 2));
	EXPECT_EQ((uintptr_t)p, m[0].addr);
	/* A write-only open may stat and list too. */
	ASSERT_EQ(0, morsel_stat(wfd, &st));
	EXPECT_EQ(1, st.order);
	EXPECT_EQ(1, morsel_mappings(wfd, m, 2));
	munmap(p, 2 * MiB);
	close(wfd);
	close(rfd);
	close(fd);
}

/* ---- ioctl: argument buffers ---- */

TEST(stat_readonly_buffer_efault)
{
	int fd = fresh(mpath("stat-ro"), 2 * MiB);
	void *ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, ro);
	/* Readable zeros pass the checks; the copy back fails. */
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_STAT, ro));
	munmap(ro, PG);
	close(fd);
}

TEST(stat_ignores_output_fields)
{
	int fd = fresh(mpath("stat-out"), 2 * MiB);
	struct morsel_stat st;

	ASSERT_LE(0, fd);
	memset(&st, 0xff, sizeof(st));
	st.flags = 0;
	memset(st.reserved, 0, sizeof(st.reserved));
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_STAT, &st));
	EXPECT_EQ(1, st.order);
	EXPECT_EQ(2 * MiB, st.extent);
	EXPECT_EQ(2 * MiB, st.size);
	EXPECT_EQ(0, st.pages);
	EXPECT_EQ(mnt_is_persistent(), st.tables[0]);	/* empty: no root */
	EXPECT_EQ(0, st.mappings);
	EXPECT_EQ(0, st.bound);
	EXPECT_EQ(0, st.min_order);
	EXPECT_EQ(0, st.huge);
	EXPECT_EQ(0, st.huge1g);
	close(fd);
}

TEST(mappings_readonly_argument_efault)
{
	int fd = fresh(mpath("maps-ro"), 2 * MiB);
	void *ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ASSERT_LE(0, fd);
	ASSERT_NE(MAP_FAILED, ro);
	/* count is written back even when nothing is filled. */
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_MAPPINGS, ro));
	munmap(ro, PG);
	close(fd);
}

TEST(mappings_nothing_to_fill_ignores_entries)
{
	int fd = fresh(mpath("maps-first"), 2 * MiB);
	struct morsel_mappings req;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* first past the end: nothing is written, the total comes back. */
	memset(&req, 0, sizeof(req));
	req.count = 4;
	req.first = 1;
	req.entries = (uintptr_t)bad_ptr;
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_MAPPINGS, &req));
	EXPECT_EQ(1, req.count);
	/* count 0: the same. */
	memset(&req, 0, sizeof(req));
	req.entries = (uintptr_t)bad_ptr;
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_MAPPINGS, &req));
	EXPECT_EQ(1, req.count);
	/* Something to fill and a bad pointer: EFAULT. */
	req.count = 4;
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_MAPPINGS, &req));
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(mappings_hide_same_user_other_process)
{
	const char *path = mpath("maps-same");
	int fd = fresh(path, 2 * MiB), go[2], done[2], turn[2];
	pid_t holder, looker;
	char c;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	ASSERT_EQ(0, pipe(turn));
	holder = fork();
	if (!holder) {	/* nobody, maps the morsel and holds it */
		int rfd;
		char *p;

		if (become_nobody())
			_exit(2);
		rfd = open(path, O_RDONLY);
		p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, rfd, 0);
		c = p == MAP_FAILED ? 'F' : 'M';
		if (write(go[1], &c, 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ASSERT_EQ(1, read(go[0], &c, 1));
	ASSERT_EQ('M', c);
	looker = fork();
	if (!looker) {
		/*
		 * Nobody as well: sees its own mapping only, and no count of
		 * the other, since it may not write the file (mincore(2)'s
		 * rule, review 2026-11b L9); the same once the file is
		 * writable, but for a count of the other (hidden).
		 */
		struct morsel_mapping m[4];
		int rfd, n, i, own = 0, hidden = 0, ro;
		struct morsel_stat st;
		char *p;

		if (become_nobody())
			_exit(2);
		rfd = open(path, O_RDONLY);
		p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, rfd, 0);
		if (rfd < 0 || p == MAP_FAILED)
			_exit(3);
		ro = morsel_mappings(rfd, m, 4);
		if (ro != 1 || m[0].addr != (uintptr_t)p ||
		    morsel_stat(rfd, &st) || st.mappings != 1)
			_exit(7);
		if (write(go[1], "r", 1) != 1 || read(turn[0], &c, 1) != 1)
			_exit(8);
		n = morsel_mappings(rfd, m, 4);
		if (n != 2 || morsel_stat(rfd, &st) || st.mappings != 2)
			_exit(4);
		for (i = 0; i < n; i++) {
			if (m[i].addr == (uintptr_t)p &&
			    m[i].pid == (uint64_t)getpid())
				own++;
			else if (m[i].flags == MORSEL_MAPPING_HIDDEN &&
				 !m[i].addr && !m[i].pid && !m[i].prot)
				hidden++;
		}
		_exit(own == 1 && hidden == 1 ? 0 : 5);
	}
	ASSERT_EQ(1, read(go[0], &c, 1));	/* the looker listed as reader */
	ASSERT_EQ(0, chmod(path, 0666));
	ASSERT_EQ(1, write(turn[1], "x", 1));
	EXPECT_EQ(0, child_status(looker));
	ASSERT_EQ(1, write(done[1], "x", 1));
	EXPECT_EQ(0, child_status(holder));
	close(fd);
}

/* ---- POPULATE: out of memory, fatal signals ---- */

#define CG "/sys/fs/cgroup"

/*
 * A fresh memory cgroup CG/@name with memory.max @max; the OOM report's
 * task list is switched off (see the top of the file).
 */
static int cg_make(const char *name, const char *max)
{
	char path[256];

	if (access(CG "/cgroup.controllers", F_OK) &&
	    mount("none", CG, "cgroup2", 0, NULL))
		return -1;
	if (write_file(CG "/cgroup.subtree_control", "+memory") ||
	    write_file("/proc/sys/vm/oom_dump_tasks", "0"))
		return -1;
	snprintf(path, sizeof(path), CG "/%s", name);
	rmdir(path);
	if (mkdir(path, 0755))
		return -1;
	snprintf(path, sizeof(path), CG "/%s/memory.max", name);
	return write_file(path, max);
}

/* Move the caller into CG/@name; with @unkillable, out of the OOM killer's
 * reach (so a charge beyond memory.max fails instead). */
static int cg_join(const char *name, int unkillable)
{
	char path[256], pid[32];

	snprintf(path, sizeof(path), CG "/%s/cgroup.procs", name);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(path, pid))
		return -1;
	return unkillable ? write_file("/proc/self/oom_score_adj", "-1000") : 0;
}

static void cg_remove(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), CG "/%s", name);
	rmdir(path);
	write_file("/proc/sys/vm/oom_dump_tasks", "1");
}

TEST(populate_enomem_in_memcg)
{
	int fd = fresh(mpath("enomem-pop"), 64 * MiB);
	struct morsel_stat st;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cg_make("morsel-errors-pop", "8M"));
	pid = fork();
	if (!pid) {
		struct morsel_range r = { .offset = 0, .length = 64 * MiB };

		if (cg_join("morsel-errors-pop", 1))
			_exit(2);
		if (!ioctl(fd, MORSEL_IOC_POPULATE, &r))
			_exit(3);
		_exit(errno == ENOMEM ? 0 : 4);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	TH_LOG("populated %llu of 16384 pages under memory.max 8M",
	       (unsigned long long)st.pages);
	EXPECT_LT(0, st.pages);			/* what fitted stays */
	EXPECT_GT(16384, st.pages);
	close(fd);
	unlink(mpath("enomem-pop"));
	cg_remove("morsel-errors-pop");
}

TEST(write_enomem_in_memcg)
{
	int fd = fresh(mpath("enomem-write"), 64 * MiB);
	static char buf[64 * KiB];
	pid_t pid;

	ASSERT_LE(0, fd);
	memset(buf, 'w', sizeof(buf));
	ASSERT_EQ(0, cg_make("morsel-errors-write", "8M"));
	pid = fork();
	if (!pid) {
		uint64_t off;
		ssize_t n = 0;

		if (cg_join("morsel-errors-write", 1))
			_exit(2);
		for (off = 0; off < 64 * MiB; off += n) {
			n = pwrite(fd, buf, sizeof(buf), off);
			if (n <= 0)
				break;
		}
		_exit(n < 0 && errno == ENOMEM ? 0 : 3);
	}
	EXPECT_EQ(0, child_status(pid));
	close(fd);
	unlink(mpath("enomem-write"));
	cg_remove("morsel-errors-write");
}

TEST(fallocate_enomem_in_memcg)
{
	int fd = fresh(mpath("enomem-falloc"), 0);
	struct stat sb;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cg_make("morsel-errors-falloc", "8M"));
	pid = fork();
	if (!pid) {
		if (cg_join("morsel-errors-falloc", 1))
			_exit(2);
		if (!fallocate(fd, 0, 0, 64 * MiB))
			_exit(3);
		_exit(errno == ENOMEM ? 0 : 4);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(0, sb.st_size);	/* mode 0 grows the file only on success */
	close(fd);
	unlink(mpath("enomem-falloc"));
	cg_remove("morsel-errors-falloc");
}

TEST(truncate_enomem_in_memcg)
{
	int fill = fresh(mpath("enomem-fill"), 64 * MiB);
	int fd = fresh(mpath("enomem-trunc"), 2 * MiB);
	struct morsel_stat st;
	pid_t pid;

	ASSERT_LE(0, fill);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, pwrite(fd, "x", 1, 0));	/* a root, which order 3 keeps */
	ASSERT_EQ(0, cg_make("morsel-errors-trunc", "8M"));
	pid = fork();
	if (!pid) {
		struct morsel_range r = { .offset = 0, .length = 64 * MiB };

		if (cg_join("morsel-errors-trunc", 1))
			_exit(2);
		/* Fill the cgroup, then ask for the two tables of order 3. */
		if (!ioctl(fill, MORSEL_IOC_POPULATE, &r) || errno != ENOMEM)
			_exit(3);
		if (!ftruncate(fd, 1 * GiB + 1))
			_exit(4);
		_exit(errno == ENOMEM ? 0 : 5);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.order);
	EXPECT_EQ(2 * MiB, st.size);
	EXPECT_EQ(1, st.tables[0] + st.tables[1] + st.tables[2]);
	close(fd);
	close(fill);
	unlink(mpath("enomem-trunc"));
	unlink(mpath("enomem-fill"));
	cg_remove("morsel-errors-trunc");
}

/*
 * K9: a punch or truncate that cuts a shared PTE table in part needs a
 * copy of the table first; without memory for it, ENOMEM and nothing
 * freed, on either side of the clone.
 */
TEST(cut_shared_table_enomem_in_memcg)
{
	int fill = fresh(mpath("enomem-fill-k9"), 64 * MiB);
	int a = fresh(mpath("enomem-k9-a"), 4 * MiB);
	int b = fresh(mpath("enomem-k9-b"), 0);
	static char buf[4 * MiB], got[PG];
	struct morsel_stat st;
	pid_t pid;

	ASSERT_LE(0, fill);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	memset(buf, 'k', sizeof(buf));
	ASSERT_EQ((ssize_t)sizeof(buf), pwrite(a, buf, sizeof(buf), 0));
	ASSERT_EQ(0, morsel_clone(a, b));
	ASSERT_EQ(0, cg_make("morsel-errors-k9", "8M"));
	pid = fork();
	if (!pid) {
		struct morsel_range r = { .offset = 0, .length = 64 * MiB };

		if (cg_join("morsel-errors-k9", 1))
			_exit(2);
		if (!ioctl(fill, MORSEL_IOC_POPULATE, &r) || errno != ENOMEM)
			_exit(3);
		if (!fallocate(b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       PG, PG))
			_exit(4);
		if (errno != ENOMEM)
			_exit(5);
		if (!ftruncate(b, 1 * MiB))
			_exit(6);
		_exit(errno == ENOMEM ? 0 : 7);
	}
	EXPECT_EQ(0, child_status(pid));
	/* nothing was freed: both files read as before, every page there */
	ASSERT_EQ(PG, pread(b, got, PG, PG));
	EXPECT_EQ(0, memcmp(got, buf, PG));
	ASSERT_EQ(0, morsel_stat(b, &st));
	EXPECT_EQ(4 * MiB, st.size);
	EXPECT_EQ(1024, st.pages);
	ASSERT_EQ(0, morsel_stat(a, &st));
	EXPECT_EQ(1024, st.pages);
	/* with memory, the same punch works on one side only */
	EXPECT_EQ(0, fallocate(b, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       PG, PG));
	ASSERT_EQ(PG, pread(a, got, PG, PG));
	EXPECT_EQ(0, memcmp(got, buf, PG));
	close(a);
	close(b);
	close(fill);
	unlink(mpath("enomem-k9-a"));
	unlink(mpath("enomem-k9-b"));
	unlink(mpath("enomem-fill-k9"));
	cg_remove("morsel-errors-k9");
}

TEST(fault_oom_in_memcg_kills)
{
	int fd = fresh(mpath("oom-fault"), 64 * MiB);
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, cg_make("morsel-errors-fault", "8M"));
	pid = fork();
	if (!pid) {
		char *p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		uint64_t off;

		if (p == MAP_FAILED || cg_join("morsel-errors-fault", 0))
			_exit(2);
		for (off = 0; off < 64 * MiB; off += PG)
			p[off] = 1;
		_exit(3);
	}
	/* The fault's VM_FAULT_OOM: the memcg OOM killer ends the task. */
	EXPECT_EQ(128 + SIGKILL, child_status(pid));
	close(fd);
	unlink(mpath("oom-fault"));
	cg_remove("morsel-errors-fault");
}

TEST(populate_fatal_signal_stops)
{
	int fd = fresh(mpath("kill-pop"), 1 * GiB);
	struct morsel_stat st;
	struct timespec t0, t1;
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	if (!pid) {
		struct morsel_range r = { .offset = 0, .length = 1 * GiB };

		ioctl(fd, MORSEL_IOC_POPULATE, &r);
		pause();
		_exit(0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {	/* until the populate has started */
		ASSERT_EQ(0, morsel_stat(fd, &st));
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (!st.pages && t1.tv_sec - t0.tv_sec < 20);
	ASSERT_EQ(0, kill(pid, SIGKILL));
	EXPECT_EQ(128 + SIGKILL, child_status(pid));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	TH_LOG("killed after %llu of 262144 pages",
	       (unsigned long long)st.pages);
	/* EINTR ended the loop early; what was populated stays. */
	EXPECT_LT(0, st.pages);
	EXPECT_GT(262144, st.pages);
	ASSERT_EQ(0, morsel_evict(fd, 0, 1 * GiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(0, st.pages);
	close(fd);
	unlink(mpath("kill-pop"));
}

/* ---- read, write, truncate: permissions and buffers ---- */

TEST(write_readonly_fd_ebadf)
{
	int fd = fresh(mpath("w-ro"), 2 * MiB), rfd;

	ASSERT_LE(0, fd);
	rfd = open(mpath("w-ro"), O_RDONLY);
	ASSERT_LE(0, rfd);
	ASSERT_ERRNO(EBADF, write(rfd, "x", 1));
	ASSERT_ERRNO(EBADF, pwrite(rfd, "x", 1, 4096));
	close(rfd);
	close(fd);
}

TEST(read_bad_buffer_efault)
{
	int fd = fresh(mpath("r-bad"), 2 * MiB);

	ASSERT_LE(0, fd);
	ASSERT_EQ(4, pwrite(fd, "data", 4, 0));
	ASSERT_ERRNO(EFAULT, pread(fd, bad_ptr, 4, 0));		/* a page */
	ASSERT_ERRNO(EFAULT, pread(fd, bad_ptr, 4, 1 * MiB));	/* a hole */
	close(fd);
}

TEST(ftruncate_readonly_fd_einval)
{
	int fd = fresh(mpath("t-ro"), 2 * MiB), rfd;
	struct stat sb;

	ASSERT_LE(0, fd);
	rfd = open(mpath("t-ro"), O_RDONLY);
	ASSERT_LE(0, rfd);
	ASSERT_ERRNO(EINVAL, ftruncate(rfd, 4096));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(2 * MiB, sb.st_size);
	close(rfd);
	close(fd);
}

TEST(truncate_without_permission_eacces)
{
	int fd = fresh(mpath("t-perm"), 2 * MiB);
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	if (!pid) {
		if (become_nobody())
			_exit(2);
		if (!truncate(mpath("t-perm"), 4096) || errno != EACCES)
			_exit(3);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	close(fd);
}

TEST(open_for_write_without_permission_eacces)
{
	int fd = fresh(mpath("o-perm"), 2 * MiB);
	pid_t pid;

	ASSERT_LE(0, fd);
	pid = fork();
	if (!pid) {
		int rfd;

		if (become_nobody())
			_exit(2);
		if (open(mpath("o-perm"), O_WRONLY) >= 0 || errno != EACCES)
			_exit(3);
		if (open(mpath("o-perm"), O_RDWR) >= 0 || errno != EACCES)
			_exit(4);
		rfd = open(mpath("o-perm"), O_RDONLY);	/* 0644: may read */
		_exit(rfd >= 0 ? 0 : 5);
	}
	EXPECT_EQ(0, child_status(pid));
	close(fd);
}

/* ---- fallocate, O_DIRECT, copy_file_range ---- */

TEST(fallocate_other_modes_eopnotsupp)
{
	int fd = fresh(mpath("fa-modes"), 2 * MiB);

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, PG));
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_PUNCH_HOLE |
					   FALLOC_FL_ZERO_RANGE |
					   FALLOC_FL_KEEP_SIZE, 0, PG));
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, PG));
	close(fd);
}

/*
 * FALLOC_FL_ZERO_RANGE: the range reads as zeros through read and a
 * mounted mapping, the bytes around it stay, its pages are populated;
 * without KEEP_SIZE it grows the file (and the order), with it not.
 */
TEST(fallocate_zero_range)
{
	int fd = fresh(mpath("fa-zero"), 0);
	char buf[3 * PG], *p;
	struct morsel_stat st;
	unsigned int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = 'a' + i % 26;
	ASSERT_EQ((ssize_t)sizeof(buf), pwrite(fd, buf, sizeof(buf), 0));
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_ZERO_RANGE, 100, 2 * PG));
	for (i = 0; i < sizeof(buf); i++) {
		char want = i >= 100 && i < 100 + 2 * PG ? 0 : 'a' + i % 26;

		if (p[i] != want)
			break;
	}
	EXPECT_EQ(sizeof(buf), i);
	ASSERT_EQ((ssize_t)sizeof(buf), pread(fd, buf, sizeof(buf), 0));
	EXPECT_EQ(0, memcmp(buf, p, sizeof(buf)));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(3 * PG, st.size);
	EXPECT_EQ(3, st.pages);
	/* Past the size: grows it (order 2 for 3 MiB), unless KEEP_SIZE. */
	ASSERT_EQ(0, munmap(p, 2 * MiB));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
			       2 * PG, 4 * PG));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(3 * PG, st.size);
	buf[0] = 1;
	ASSERT_EQ(1, pread(fd, buf, 1, 2 * PG + 200));
	EXPECT_EQ(0, buf[0]);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_ZERO_RANGE, 2 * PG, 3 * MiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(2 * PG + 3 * MiB, st.size);
	EXPECT_EQ(2, st.order);
	EXPECT_EQ(2 + 3 * MiB / PG, st.pages);
	ASSERT_EQ(1, pread(fd, buf, 1, 99));
	EXPECT_EQ('a' + 99 % 26, buf[0]);
	close(fd);
}

static void falloc_past_fsize(volatile char *arg)
{
	int fd = open(mpath("fa-fsize"), O_RDWR);
	struct rlimit r = { 256 * KiB, 256 * KiB };

	(void)arg;
	if (fd < 0 || setrlimit(RLIMIT_FSIZE, &r))
		_exit(3);
	/* KEEP_SIZE changes no size: allowed, as on tmpfs. */
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 * MiB))
		_exit(4);
	if (getenv("FSIZE_IGNORE")) {
		signal(SIGXFSZ, SIG_IGN);
		if (fallocate(fd, 0, 0, 1 * MiB) != -1 || errno != EFBIG)
			_exit(5);
		if (fallocate(fd, 0, 2 * GiB, PG) != -1 || errno != EFBIG)
			_exit(6);
		if (fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 1 * MiB) != -1 ||
		    errno != EFBIG)
			_exit(7);
		_exit(0);
	}
	fallocate(fd, 0, 0, 1 * MiB);
	_exit(8);
}

/*
 * A fallocate that would grow the file past RLIMIT_FSIZE: SIGXFSZ, or
 * EFBIG where the signal is ignored, as for write and truncate (an outside
 * run found morselfs allowed it; stress-ng's fsize stressor).
 */
TEST(fallocate_past_rlimit_fsize)
{
	int fd = fresh(mpath("fa-fsize"), 0);
	struct stat sb;

	ASSERT_LE(0, fd);
	EXPECT_EQ(SIGXFSZ, in_child(falloc_past_fsize, NULL));
	setenv("FSIZE_IGNORE", "1", 1);
	EXPECT_EQ(0, in_child(falloc_past_fsize, NULL));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(0, sb.st_size);
	close(fd);
}

/*
 * SEEK_DATA and SEEK_HOLE see the tree: pages at 0, 2 MiB + 4 KiB and
 * 1 GiB + 8 KiB of a 3 GiB file (order 3: a missing PTE table and a missing
 * PMD table are holes of their whole span); ENXIO at or past the size.
 */
TEST(seek_data_hole)
{
	int fd = fresh(mpath("seek"), 3 * GiB);
	static const unsigned long long at[] = { 0, 2 * MiB + PG, 1 * GiB + 2 * PG };
	unsigned int i;
	char c = 'x';

	ASSERT_LE(0, fd);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(1, pwrite(fd, &c, 1, at[i] + 5));
	EXPECT_EQ((off_t)(0), lseek(fd, 0, SEEK_DATA));
	EXPECT_EQ((off_t)(PG), lseek(fd, 0, SEEK_HOLE));
	EXPECT_EQ((off_t)(100), lseek(fd, 100, SEEK_DATA));
	EXPECT_EQ((off_t)(2 * MiB + PG), lseek(fd, PG, SEEK_DATA));
	EXPECT_EQ((off_t)(PG + 10), lseek(fd, PG + 10, SEEK_HOLE));
	EXPECT_EQ((off_t)(2 * MiB + 2 * PG), lseek(fd, 2 * MiB + PG + 7, SEEK_HOLE));
	EXPECT_EQ((off_t)(1 * GiB + 2 * PG), lseek(fd, 2 * MiB + 2 * PG, SEEK_DATA));
	EXPECT_EQ((off_t)(1 * GiB + 3 * PG), lseek(fd, 1 * GiB + 2 * PG, SEEK_HOLE));
	/* No data after the last page; the end of the file is a hole. */
	ASSERT_ERRNO(ENXIO, lseek(fd, 1 * GiB + 3 * PG, SEEK_DATA));
	EXPECT_EQ((off_t)(3 * GiB - 1), lseek(fd, 3 * GiB - 1, SEEK_HOLE));
	ASSERT_ERRNO(ENXIO, lseek(fd, 3 * GiB, SEEK_HOLE));
	ASSERT_ERRNO(ENXIO, lseek(fd, 3 * GiB, SEEK_DATA));
	ASSERT_ERRNO(ENXIO, lseek(fd, -1, SEEK_DATA));
	/* A full file ends in data: its hole is the size. */
	ASSERT_EQ(0, ftruncate(fd, 5));
	EXPECT_EQ((off_t)(5), lseek(fd, 0, SEEK_HOLE));
	EXPECT_EQ((off_t)(5), lseek(fd, 0, SEEK_CUR));
	close(fd);
}

/*
 * KEEP_SIZE past the extent reserves (below) and raises the order the end
 * needs at once: 2046 pages, 4 PTE tables and a PMD table for
 * [2 MiB, 10 MiB - 8 KiB), the 2 pages populated inside the size, and the
 * new root.  A truncate that cuts the range gives the reservation back
 * and lowers the order.  (Page 0 first: its PTE table is the root, which
 * a persistent morsel of order 1 has even while empty.)
 */
TEST(fallocate_keep_size_raises_order)
{
	int fd = fresh(mpath("fa-order"), 2 * MiB);
	struct morsel_stat st;
	struct statfs s0, s;

	ASSERT_LE(0, fd);
	ASSERT_EQ(1, pwrite(fd, "x", 1, 0));
	ASSERT_EQ(0, fstatfs(fd, &s0));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 2 * MiB - 2 * PG,
			       8 * MiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(2, st.order);
	EXPECT_EQ(3, st.pages);
	EXPECT_EQ(2 * MiB, st.size);
	ASSERT_EQ(0, fstatfs(fd, &s));
	EXPECT_EQ(s0.f_bfree - 2046 - 4 - 1 - 2 - 1, s.f_bfree);
	ASSERT_EQ(0, ftruncate(fd, 1 * MiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.order);
	EXPECT_EQ(1, st.pages);
	/* The old root goes after a grace period: a device counts it till then. */
	ASSERT_EQ(0, fstatfs(fd, &s));
	EXPECT_LE(s0.f_bfree - 1, s.f_bfree);
	EXPECT_GE(s0.f_bfree, s.f_bfree);
	close(fd);
}

/*
 * Nothing is populated past the file size: a mapping would reach such a
 * page without SIGBUS, and growing the file would show what it held.
 */
TEST(fallocate_keep_size_stops_at_size)
{
	int fd = fresh(mpath("fa-eof"), 8 * KiB);
	struct morsel_stat st;
	char *p, c = 1;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 8 * KiB + 1));	/* order 1, 3 pages */
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 * MiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(3, st.pages);
	EXPECT_EQ(SIGBUS, in_child(write_byte, p + 1 * MiB));
	EXPECT_EQ(SIGBUS, in_child(read_byte, p + 3 * PG));
	ASSERT_EQ(0, munmap(p, 2 * MiB));
	ASSERT_EQ(0, ftruncate(fd, 2 * MiB));
	ASSERT_EQ(1, pread(fd, &c, 1, 1 * MiB));
	EXPECT_EQ(0, c);
	close(fd);
}

/*
 * Order 0 while mapped: the page a failed write left cannot be freed (the
 * leaf is the mount entry), so it must stay unreachable until the file
 * grows over it, and then read as zeros.
 */
TEST(failed_write_order0_mapped_stays_unreachable)
{
	int fd = fresh(mpath("w-fail0"), 0);
	char *p, *q, c = 1;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_ERRNO(EFAULT, pwrite(fd, bad_ptr, 4, 1));
	q = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(SIGBUS, in_child(write_byte, q + 100));
	EXPECT_EQ(SIGBUS, in_child(read_byte, p + 100));
	ASSERT_EQ(0, ftruncate(fd, 200));
	EXPECT_EQ(0, in_child(read_byte, q + 100));
	ASSERT_EQ(1, pread(fd, &c, 1, 100));
	EXPECT_EQ(0, c);
	EXPECT_EQ(0, q[100]);
	munmap(p, 4096);
	munmap(q, 4096);
	close(fd);
}

/* A write that fails leaves no page behind past the size. */
TEST(failed_write_leaves_nothing)
{
	int fd = fresh(mpath("w-fail"), 2 * MiB);
	struct morsel_stat st;
	struct stat sb;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 4 * KiB + 1));
	ASSERT_ERRNO(EFAULT, pwrite(fd, bad_ptr, 100, 64 * KiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(0, st.pages);
	EXPECT_EQ(4 * KiB + 1, st.size);
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(0, sb.st_blocks);
	close(fd);
}

/*
 * O_DIRECT is accepted, as on tmpfs, at open and by fcntl, and changes
 * nothing: unaligned direct reads and writes see the same bytes as
 * buffered ones and as a mapping.
 */
TEST(o_direct_accepted_as_on_tmpfs)
{
	int fd = fresh(mpath("odirect"), 2 * MiB), dfd;
	char buf[8], *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fcntl(fd, F_SETFL, O_DIRECT));
	EXPECT_EQ(O_DIRECT, fcntl(fd, F_GETFL) & O_DIRECT);
	dfd = open(mpath("odirect"), O_RDWR | O_DIRECT);
	ASSERT_LE(0, dfd);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(5, pwrite(dfd, "direc", 5, 4093));
	ASSERT_EQ(5, pread(fd, buf, 5, 4093));
	EXPECT_EQ(0, memcmp(buf, "direc", 5));
	EXPECT_EQ(0, memcmp(p + 4093, "direc", 5));
	ASSERT_EQ(3, pwrite(fd, "buf", 3, 1));
	ASSERT_EQ(3, pread(dfd, buf, 3, 1));
	EXPECT_EQ(0, memcmp(buf, "buf", 3));
	munmap(p, 2 * MiB);
	close(dfd);
	close(fd);
}

TEST(copy_file_range_from_other_fs_exdev)
{
	int fd = fresh(mpath("cfr"), 2 * MiB);
	int tfd = open("/tmp/morsel-errors-cfr", O_RDWR | O_CREAT | O_TRUNC,
		       0600);
	loff_t in = 0, out = 0;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, tfd);
	ASSERT_EQ(5, write(tfd, "hello", 5));
	ASSERT_ERRNO(EXDEV, copy_file_range(tfd, &in, fd, &out, 5, 0));
	close(tfd);
	unlink("/tmp/morsel-errors-cfr");
	close(fd);
}

/* ---- mmap ---- */

TEST(map_writeonly_fd_eacces)
{
	int fd = fresh(mpath("m-wo"), 2 * MiB), wfd;

	ASSERT_LE(0, fd);
	wfd = open(mpath("m-wo"), O_WRONLY);
	ASSERT_LE(0, wfd);
	ASSERT_ERRNO(EACCES, mmap(NULL, 2 * MiB, PROT_WRITE, MAP_SHARED, wfd, 0));
	ASSERT_ERRNO(EACCES, mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
				  MAP_SHARED, wfd, 0));
	close(wfd);
	close(fd);
}

TEST(map_sync_eopnotsupp)
{
	int fd = fresh(mpath("m-sync"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EOPNOTSUPP, mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
				      MAP_SHARED_VALIDATE | MAP_SYNC, fd, 0));
	/* MAP_SHARED_VALIDATE itself is fine. */
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED_VALIDATE,
		 fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(map_hugetlb_einval)
{
	int fd = fresh(mpath("m-huge"), 2 * MiB);

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EINVAL, mmap(NULL, 2 * MiB, PROT_READ,
				  MAP_SHARED | MAP_HUGETLB, fd, 0));
	close(fd);
}

TEST(map_extent_counts_against_rlimit_as)
{
	int big = fresh(mpath("m-as-big"), 1 * GiB);
	int small = fresh(mpath("m-as-small"), 2 * MiB);
	struct rlimit rl = { 512 * MiB, 512 * MiB };
	char *p;

	ASSERT_LE(0, big);
	ASSERT_LE(0, small);
	ASSERT_EQ(0, setrlimit(RLIMIT_AS, &rl));
	/* One byte asked, the whole 1 GiB extent reserved: ENOMEM. */
	ASSERT_ERRNO(ENOMEM, mmap(NULL, 1, PROT_READ, MAP_SHARED, big, 0));
	p = mmap(NULL, 1, PROT_READ, MAP_SHARED, small, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, 1);
	close(small);
	close(big);
}

TEST(map_unaligned_hint_rounded_up)
{
	int fd = fresh(mpath("m-hint"), 2 * MiB);
	char *free, *p;

	ASSERT_LE(0, fd);
	free = free_range(8 * MiB, 2 * MiB);
	ASSERT_NE(NULL, free);
	p = mmap(free + PG, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(free + 2 * MiB, p);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(map_bound_ignores_hint)
{
	int fd = fresh(mpath("m-bound-hint"), 2 * MiB);
	char *free, *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR));
	free = free_range(2 * MiB, 2 * MiB);
	ASSERT_NE(NULL, free);
	p = mmap(free, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(BIND_ADDR, (uintptr_t)p);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(map_empty_file_sigbus)
{
	int fd = fresh(mpath("m-empty"), 0);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(SIGBUS, in_child(read_byte, p));
	EXPECT_EQ(SIGBUS, in_child(write_byte, p));
	/* Growing within the extent while mapped: the page appears. */
	ASSERT_EQ(0, ftruncate(fd, 100));
	EXPECT_EQ(0, in_child(write_byte, p + 99));
	EXPECT_EQ('X', p[99]);
	munmap(p, 4096);
	close(fd);
}

TEST(map_fixed_over_part_einval)
{
	int fd = fresh(mpath("m-over"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[PG] = 'k';
	/* A new mapping over part of it would split it. */
	ASSERT_ERRNO(EINVAL, mmap(p + PG, PG, PROT_READ,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	EXPECT_EQ('k', p[PG]);
	munmap(p, 2 * MiB);
	close(fd);
}

/* ---- mremap ---- */

TEST(mremap_grow_past_extent_enomem)
{
	int fd = fresh(mpath("mr-grow"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 'g';
	/* Inside the extent: in place, nothing changes. */
	ASSERT_EQ(p, mremap(p, 4096, 2 * MiB, 0));
	ASSERT_EQ(p, mremap(p, 2 * MiB, 8192, MREMAP_MAYMOVE));
	/* Past it: the extent cannot grow under a mapping. */
	ASSERT_ERRNO(ENOMEM, mremap(p, 2 * MiB, 4 * MiB, 0));
	ASSERT_ERRNO(ENOMEM, mremap(p, 2 * MiB, 4 * MiB, MREMAP_MAYMOVE));
	/* old_len 0 (duplicate the mapping) is a growth: refused. */
	ASSERT_ERRNO(EFAULT, mremap(p, 0, 2 * MiB, MREMAP_MAYMOVE));
	EXPECT_EQ('g', p[0]);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(mremap_dontunmap_einval)
{
	int fd = fresh(mpath("mr-dontunmap"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_ERRNO(EINVAL, mremap(p, 2 * MiB, 2 * MiB,
				    MREMAP_MAYMOVE | MREMAP_DONTUNMAP));
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(mremap_part_einval)
{
	int fd = fresh(mpath("mr-part"), 2 * MiB);
	char *p, *target;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 'p';
	target = free_range(2 * MiB, 2 * MiB);
	ASSERT_NE(NULL, target);
	/* Moving one page of it: the target would be shorter than the extent. */
	ASSERT_ERRNO(EINVAL, mremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED,
				    target));
	/* Moving all of it but shrinking on the way: a split. */
	ASSERT_ERRNO(EINVAL, mremap(p, 2 * MiB, PG,
				    MREMAP_MAYMOVE | MREMAP_FIXED, target));
	EXPECT_EQ('p', p[0]);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(mremap_bound_elsewhere_einval)
{
	int fd = fresh(mpath("mr-bound"), 2 * MiB);
	char *p, *target;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR));
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_EQ(BIND_ADDR, (uintptr_t)p);
	p[0] = 'b';
	target = free_range(2 * MiB, 2 * MiB);
	ASSERT_NE(NULL, target);
	ASSERT_ERRNO(EINVAL, mremap(p, 2 * MiB, 2 * MiB,
				    MREMAP_MAYMOVE | MREMAP_FIXED, target));
	EXPECT_EQ('b', p[0]);
	munmap(p, 2 * MiB);
	close(fd);
}

/* ---- madvise ---- */

/*
 * MADV_REMOVE needs a shared mapping that may write (VM_MAYWRITE, as for
 * any file): through a mapping of a read-only open, EACCES and nothing
 * changes; a PROT_READ mapping of a read-write open punches, as on tmpfs.
 */
TEST(madvise_remove_readonly_eacces)
{
	int fd = fresh(mpath("ma-remove"), 2 * MiB), ro;
	struct morsel_stat st;
	char *p;

	ASSERT_LE(0, fd);
	ro = open(mpath("ma-remove"), O_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(4, pwrite(fd, "keep", 4, 0));
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_ERRNO(EACCES, madvise(p, PG, MADV_REMOVE));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.pages);
	EXPECT_EQ('k', p[0]);
	munmap(p, 2 * MiB);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, PG, MADV_REMOVE));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(0, st.pages);
	EXPECT_EQ(0, p[0]);
	munmap(p, 2 * MiB);
	close(ro);
	close(fd);
}

TEST(madvise_populate_beyond_size_efault)
{
	int fd = fresh(mpath("ma-pop"), 8 * KiB + 1);	/* order 1, 3 pages */
	struct morsel_stat st;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* The fault at the fourth page raises SIGBUS; madvise says EFAULT. */
	ASSERT_ERRNO(EFAULT, madvise(p, 64 * KiB, MADV_POPULATE_WRITE));
	ASSERT_ERRNO(EFAULT, madvise(p, 64 * KiB, MADV_POPULATE_READ));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(3, st.pages);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(madvise_wipeonfork_einval)
{
	int fd = fresh(mpath("ma-wipe"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_ERRNO(EINVAL, madvise(p, 2 * MiB, MADV_WIPEONFORK));
	EXPECT_EQ(0, madvise(p, 2 * MiB, MADV_KEEPONFORK));
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(madvise_dontfork_irreversible)
{
	int fd = fresh(mpath("ma-dontfork"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 'f';
	ASSERT_EQ(0, madvise(p, 2 * MiB, MADV_DONTFORK));
	EXPECT_EQ(SIGSEGV, in_child(read_byte, p));	/* not inherited */
	/* VM_IO: MADV_DOFORK cannot undo it. */
	ASSERT_ERRNO(EINVAL, madvise(p, 2 * MiB, MADV_DOFORK));
	EXPECT_EQ('f', p[0]);
	munmap(p, 2 * MiB);
	close(fd);
}

TEST(madvise_mergeable_needs_ksm)
{
	int fd = fresh(mpath("ma-ksm"), 2 * MiB);
	int ksm = !access("/sys/kernel/mm/ksm", F_OK);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	TH_LOG("KSM %s", ksm ? "built in" : "not built in");
	if (ksm) {	/* accepted, and KSM skips the VMA (VM_PFNMAP) */
		EXPECT_EQ(0, madvise(p, 2 * MiB, MADV_MERGEABLE));
	} else {
		ASSERT_ERRNO(EINVAL, madvise(p, 2 * MiB, MADV_MERGEABLE));
	}
	munmap(p, 2 * MiB);
	close(fd);
}

/* ---- mount options ---- */

#define LIM "/tmp/morsel-errors-lim"

TEST(mount_nr_inodes_bad_value_einval)
{
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=10%"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=1x"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=-1"));
}

TEST(mount_size_bad_value_einval)
{
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "size"));	/* no value */
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "size=-1"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "size=12%x"));
}

/* Values that overflow 64 bits are refused, never wrapped to 0 ("none"). */
TEST(mount_overflowing_value_einval)
{
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "size=16777216t"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "size=18446744073709551616"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=16777216t"));
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=9223372036854775808"));
	/* nr_inodes= x 1024 bytes of inode space must fit in a long */
	ASSERT_ERRNO(EINVAL, mount_instance(LIM, "nr_inodes=9007199254740992"));
	ASSERT_EQ(0, mount_instance(LIM, "nr_inodes=9007199254740991"));
	EXPECT_EQ(0, umount(LIM));
}

/* A mode-0 fallocate that runs out of room frees what it populated. */
TEST(failed_fallocate_leaves_nothing_past_size)
{
	struct morsel_stat st;
	struct statfs sf;
	int fd;

	ASSERT_EQ(0, mount_instance(LIM, "size=64k"));	/* 16 pages */
	fd = morsel_create(LIM "/f", 8 * KiB + 1, 0644);	/* 1 table */
	ASSERT_LE(0, fd);
	ASSERT_EQ(3, pwrite(fd, "abc", 3, 0));
	ASSERT_ERRNO(ENOSPC, fallocate(fd, 0, 0, 1 * MiB));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(8 * KiB + 1, st.size);
	EXPECT_EQ(3, st.pages);	/* up to the size, as populated */
	ASSERT_EQ(0, statfs(LIM, &sf));
	EXPECT_EQ(16 - 1 - 3, sf.f_bfree);
	close(fd);
	EXPECT_EQ(0, umount(LIM));
}

/*
 * fallocate(KEEP_SIZE) past the size reserves its pages and tables (fstests'
 * generic/274): once something else filled the file system, writes, a
 * fault through a mapping and the size growing over holes still find room
 * there; a call that asks for more than is free fails with nothing
 * changed; a truncate gives back the pages and the unused rest.
 */
TEST(fallocate_keep_size_reserves_past_size)
{
	struct morsel_stat st;
	struct statfs s0, s;
	char buf[PG], *p;
	int fd, fill, i;

	memset(buf, 'r', sizeof(buf));
	ASSERT_EQ(0, mount_instance(LIM, "size=1m"));	/* 256 pages */
	fd = morsel_create(LIM "/f", 0, 0644);
	ASSERT_LE(0, fd);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(PG, pwrite(fd, buf, PG, i * PG));
	ASSERT_EQ(0, statfs(LIM, &s0));
	EXPECT_EQ(256 - 16 - 1, s0.f_bfree);
	/* 64 pages and their PTE table's share: charged, not populated. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 16 * PG, 64 * PG));
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(16 * PG, st.size);
	EXPECT_EQ(16, st.pages);
	ASSERT_EQ(0, statfs(LIM, &s));
	EXPECT_EQ(s0.f_bfree - 65, s.f_bfree);
	/* Widening to 240 pages needs 176 more of the 174 free. */
	ASSERT_ERRNO(ENOSPC, fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 1 * MiB));
	ASSERT_EQ(0, statfs(LIM, &s));
	EXPECT_EQ(s0.f_bfree - 65, s.f_bfree);
	fill = morsel_create(LIM "/fill", 0, 0644);
	ASSERT_LE(0, fill);
	for (i = 0; pwrite(fill, buf, PG, i * PG) == PG; i++)
		;
	EXPECT_EQ(ENOSPC, errno);
	ASSERT_EQ(0, statfs(LIM, &s));
	EXPECT_EQ(0, s.f_bfree);
	/* Odd pages first (the size grows over holes), then the holes. */
	for (i = 17; i < 80; i += 2)
		ASSERT_EQ(PG, pwrite(fd, buf, PG, i * PG)) TH_LOG("page %d", i);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, in_child(write_byte, p + 16 * PG));
	for (i = 18; i < 80; i += 2)
		ASSERT_EQ(PG, pwrite(fd, buf, PG, i * PG)) TH_LOG("page %d", i);
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(80 * PG, st.size);
	EXPECT_EQ(80, st.pages);
	/* Past the range the file system is still full; past the size SIGBUS. */
	ASSERT_ERRNO(ENOSPC, pwrite(fd, buf, PG, 80 * PG));
	EXPECT_EQ(SIGBUS, in_child(write_byte, p + 81 * PG));
	ASSERT_EQ(0, munmap(p, 2 * MiB));
	/* The range had a table to spare: it comes back with the pages. */
	ASSERT_EQ(0, ftruncate(fd, 16 * PG));
	ASSERT_EQ(0, statfs(LIM, &s));
	EXPECT_EQ(64 + 1, s.f_bfree);
	close(fill);
	close(fd);
	EXPECT_EQ(0, umount(LIM));
}

TEST(remount_size_below_use_einval)
{
	struct statfs sf;
	char buf[PG] = "";
	int fd, i;

	ASSERT_EQ(0, mount_instance(LIM, "size=1m"));
	fd = morsel_create(LIM "/a", 2 * MiB, 0644);	/* one PTE table */
	ASSERT_LE(0, fd);
	for (i = 0; i < 10; i++)
		ASSERT_EQ(PG, pwrite(fd, buf, PG, i * PG));
	ASSERT_ERRNO(EINVAL, mount("none", LIM, NULL, MS_REMOUNT, "size=40k"));
	ASSERT_EQ(0, statfs(LIM, &sf));
	EXPECT_EQ(256, sf.f_blocks);			/* unchanged */
	EXPECT_EQ(0, mount("none", LIM, NULL, MS_REMOUNT, "size=44k"));
	close(fd);
	EXPECT_EQ(0, umount2(LIM, MNT_DETACH));
}

static int create_unnamed_in(const char *dir, uint64_t size)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY), fd;

	if (dfd < 0)
		return -1;
	fd = morsel_create_unnamed(dfd, size, 0600);
	close(dfd);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	return fd;
}

/* MORSEL_IOC_CREATE past nr_inodes= and size=, and on a read-only mount. */
TEST(create_unnamed_limits_and_read_only)
{
	int fd, fd2;

	ASSERT_EQ(0, mount_instance(LIM, "nr_inodes=3,size=8k"));
	fd = create_unnamed_in(LIM, 8 * KiB);	/* order 1 */
	ASSERT_LE(0, fd);
	fd2 = create_unnamed_in(LIM, PG);	/* the root, these two: 3 */
	ASSERT_LE(0, fd2);
	ASSERT_ERRNO(ENOSPC, create_unnamed_in(LIM, PG));
	close(fd2);
	/*
	 * size= is 2 pages, which the first morsel's table and one page fill.
	 * Another morsel is still made (no table before its first page);
	 * its first page finds no room.
	 */
	ASSERT_EQ(0, fallocate(fd, 0, 0, 4 * KiB));
	fd2 = create_unnamed_in(LIM, 1 * MiB);
	ASSERT_LE(0, fd2);
	ASSERT_ERRNO(ENOSPC, pwrite(fd2, "x", 1, 0));
	close(fd2);
	close(fd);
	/* An open unnamed morsel keeps the instance writable. */
	fd = create_unnamed_in(LIM, PG);
	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EBUSY, mount("none", LIM, NULL, MS_REMOUNT | MS_RDONLY,
				  NULL));
	close(fd);
	ASSERT_EQ(0, mount("none", LIM, NULL, MS_REMOUNT | MS_RDONLY, NULL));
	ASSERT_ERRNO(EROFS, create_unnamed_in(LIM, PG));
	EXPECT_EQ(0, umount(LIM));
}

TEST(remount_nr_inodes_below_use_einval)
{
	struct statfs sf;
	int fd, i;

	ASSERT_EQ(0, mount_instance(LIM, "nr_inodes=10"));
	for (i = 0; i < 3; i++) {	/* 4 inodes with the root */
		char name[64];

		snprintf(name, sizeof(name), LIM "/%d", i);
		fd = open(name, O_CREAT | O_RDWR, 0600);
		ASSERT_LE(0, fd);
		close(fd);
	}
	ASSERT_ERRNO(EINVAL, mount("none", LIM, NULL, MS_REMOUNT,
				   "nr_inodes=3"));
	ASSERT_EQ(0, statfs(LIM, &sf));
	EXPECT_EQ(10, sf.f_files);
	EXPECT_EQ(0, mount("none", LIM, NULL, MS_REMOUNT, "nr_inodes=4"));
	EXPECT_EQ(0, umount2(LIM, MNT_DETACH));
}

TEST_HARNESS_MAIN
