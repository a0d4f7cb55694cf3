// SPDX-License-Identifier: GPL-2.0
/*
 * mm_test: a morselfs instance as a process's memory manager (kernel
 * patch 13, PR_SET_MEMORY_MANAGER, `morsel run --mm DIR`; module/anon.c).
 * Each test names an instance mounted at MDIR, then checks that its
 * anonymous memory comes from there and behaves exactly as Linux's:
 * zero-filled, private across fork (both sides write), MADV_DONTNEED and
 * MADV_FREE give zeros, mremap grows (zeros), shrinks (freed) and moves,
 * MAP_FIXED over a part, partial munmap and mprotect, mlock, threads,
 * exec inherits, brk fails and malloc goes on, memory is freed at munmap
 * and exit, /proc and memcg count it, size= caps it (SIGBUS), shared
 * anonymous memory is shared, core dumps hold it, and the refusals.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

#define MDIR	"/tmp/morsel-mm"
#define CG	"/sys/fs/cgroup"

/* Pages (and tables) in use in the instance, in 4 KiB blocks. */
static long used(void)
{
	struct statvfs v;

	if (statvfs(MDIR, &v))
		return -1;
	return (long)(v.f_blocks - v.f_bfree);
}

/* The "major:minor" /proc/PID/maps shows for files on the instance. */
static void instance_dev(char out[32])
{
	struct stat st;

	out[0] = 0;
	if (!stat(MDIR, &st))
		snprintf(out, 32, "%02x:%02x ", major(st.st_dev),
			 minor(st.st_dev));
}

/*
 * Whether [@p, +@len) lies in a mapping of a file on the instance (its
 * device in the maps line: the unnamed files have no path there).
 */
static int from_instance(const void *p, size_t len)
{
	unsigned long a = (unsigned long)p, lo, hi;
	char line[512], dev[32];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	instance_dev(dev);
	while (f && fgets(line, sizeof(line), f)) {
		char *d;

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || a < lo ||
		    a + len > hi)
			continue;
		/* address perms offset dev inode path */
		d = strchr(line, ' ');
		d = d ? strchr(d + 1, ' ') : NULL;
		d = d ? strchr(d + 1, ' ') : NULL;
		if (d && *dev && !strncmp(d + 1, dev, strlen(dev)))
			found = 1;
	}
	if (f)
		fclose(f);
	return found;
}

/* The maps line's permission field of the mapping holding @p. */
static void perms_of(const void *p, char out[5])
{
	unsigned long a = (unsigned long)p, lo, hi;
	char line[512], perm[5];
	FILE *f = fopen("/proc/self/maps", "r");

	strcpy(out, "?");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) == 3 &&
		    a >= lo && a < hi)
			strcpy(out, perm);
	if (f)
		fclose(f);
}

static long status_kb(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	size_t n = strlen(key);

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':')
			kb = atol(line + n + 1);
	if (f)
		fclose(f);
	return kb;
}

/*
 * The line "@key: ..." of the /proc/self/smaps entry of the mapping that
 * begins at @p, into @line (without its newline), or NULL.
 */
static char *smaps_line(const void *p, const char *key, char *line, int size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	unsigned long lo, hi;
	size_t n = strlen(key);
	char *got = NULL;
	int in = 0;

	while (f && !got && fgets(line, size, f)) {
		/* a header line: no field name parses as a range */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo == (unsigned long)p;
		else if (in && !strncmp(line, key, n) && line[n] == ':')
			got = line;
	}
	if (f)
		fclose(f);
	if (got)
		line[strcspn(line, "\n")] = 0;
	return got;
}

/* Field @key of that entry in kB, or -1. */
static long smaps_kb(const void *p, const char *key)
{
	char line[512];

	return smaps_line(p, key, line, sizeof(line)) ?
	       atol(line + strlen(key) + 1) : -1;
}

/* Whether its VmFlags hold @flag. */
static int smaps_flag(const void *p, const char *flag)
{
	char line[512], *w;

	if (!smaps_line(p, "VmFlags", line, sizeof(line)))
		return 0;
	for (w = strtok(line + 8, " "); w; w = strtok(NULL, " "))
		if (!strcmp(w, flag))
			return 1;
	return 0;
}

static int all_bytes(const unsigned char *p, size_t len, unsigned char c)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

static void *anon(size_t len, int flags)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_ANONYMOUS | flags, -1, 0);
}

static int wait_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return st;
}

FIXTURE(mm) {
	long used0;
};

/*
 * Every test of the fixture runs with both ways of mapping private
 * memory: page by page (anon=paged, the default) and mounted 2 MiB at a
 * time (anon=mounted, module/anonmnt.c).
 */
FIXTURE_VARIANT(mm) {
	const char *opts;
	int mounted;
};

FIXTURE_VARIANT_ADD(mm, paged) {
	.opts = "size=256M",
	.mounted = 0,
};

FIXTURE_VARIANT_ADD(mm, mounted) {
	.opts = "size=256M,anon=mounted",
	.mounted = 1,
};

FIXTURE_SETUP(mm)
{
	ASSERT_EQ(0, mount_instance(MDIR, variant->opts))
		TH_LOG("mount: %s", strerror(errno));
	self->used0 = used();
	ASSERT_EQ(0, morsel_memory_manager());
	ASSERT_EQ(0, morsel_set_memory_manager(MDIR));
	ASSERT_EQ(1, morsel_memory_manager());
}

FIXTURE_TEARDOWN(mm)
{
	morsel_set_memory_manager(NULL);
	umount2(MDIR, MNT_DETACH);
}

/* Private anonymous memory: a morsel, zero-filled, listed private. */
TEST_F(mm, anonymous_memory_is_a_morsel)
{
	unsigned char *p = anon(4 * MiB, MAP_PRIVATE);
	char perm[5];

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(from_instance(p, 4 * MiB));
	perms_of(p, perm);
	EXPECT_STREQ("rw-p", perm);
	/* mounted memory is VM_MIXEDMAP ("mm"), page by page is not */
	EXPECT_EQ(variant->mounted, smaps_flag(p, "mm"));
	EXPECT_TRUE(smaps_flag(p, "af"));
	EXPECT_TRUE(all_bytes(p, 4 * MiB, 0));
	memset(p, 'a', 4 * MiB);
	EXPECT_LE(self->used0 + 1024, used());
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(self->used0, used());
}

/* fork: the child gets a copy-on-write clone; both sides write alone. */
TEST_F(mm, fork_both_sides_write)
{
	unsigned char *p = anon(8 * MiB, MAP_PRIVATE);
	int go[2], back[2];
	char c;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'p', 8 * MiB);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(back));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ok = all_bytes(p, 8 * MiB, 'p');

		memset(p, 'c', 4 * MiB);	/* half: the rest stays shared */
		if (write(back[1], "x", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		/* the parent wrote its half meanwhile: not seen here */
		ok = ok && all_bytes(p, 4 * MiB, 'c') &&
		     all_bytes(p + 4 * MiB, 4 * MiB, 'p') &&
		     from_instance(p, 8 * MiB);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(1, read(back[0], &c, 1));
	EXPECT_TRUE(all_bytes(p, 8 * MiB, 'p'));
	memset(p + 4 * MiB, 'P', 4 * MiB);
	ASSERT_EQ(1, write(go[1], "x", 1));
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p, 4 * MiB, 'p'));
	EXPECT_TRUE(all_bytes(p + 4 * MiB, 4 * MiB, 'P'));
	/* the child's copy went with it: what is left is ours alone */
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(self->used0, used());
}

/*
 * Both sides of a fork write, in memory that mounts nowhere (writable and
 * executable: leaf copies only) and in memory whose 2 MiB do not line up
 * with the addresses (a fixed address 1 MiB off): copies at the ends.
 */
TEST_F(mm, fork_copies_exec_and_unaligned)
{
	unsigned char *x = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE |
				PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *r = anon(16 * MiB, MAP_PRIVATE), *u;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, x);
	ASSERT_NE(MAP_FAILED, r);
	u = (unsigned char *)(((uintptr_t)r + 2 * MiB) & ~(2 * MiB - 1)) + MiB;
	u = mmap(u, 7 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_NE(MAP_FAILED, u);
	memset(x, 'x', 4 * MiB);
	memset(u, 'u', 7 * MiB);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ok = all_bytes(x, 4 * MiB, 'x') && all_bytes(u, 7 * MiB, 'u');

		memset(x + MiB, 'X', 2 * MiB);
		memset(u, 'U', 4 * MiB);
		ok = ok && all_bytes(x + MiB, 2 * MiB, 'X') &&
		     all_bytes(u + 4 * MiB, 3 * MiB, 'u');
		_exit(ok ? 0 : 1);
	}
	memset(u + 3 * MiB, 'P', 4 * MiB);
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(x, 4 * MiB, 'x'));
	EXPECT_TRUE(all_bytes(u, 3 * MiB, 'u'));
	EXPECT_TRUE(all_bytes(u + 3 * MiB, 4 * MiB, 'P'));
	EXPECT_EQ(0, munmap(x, 4 * MiB));
	EXPECT_EQ(0, munmap(r, 16 * MiB));
	EXPECT_EQ(self->used0, used());
}

/*
 * Walkers that enter the tables: clear_refs (accessed bits, and the
 * soft-dirty clear, which takes write away from the leaves: writes go on
 * afterwards), MADV_COLD and MADV_PAGEOUT (nothing to reclaim), and
 * /proc/PID/mem, which goes through GUP, also after a fork.
 */
TEST_F(mm, walkers_and_gup)
{
	unsigned char *p = anon(4 * MiB, MAP_PRIVATE), buf[8];
	char path[64];
	pid_t pid;
	int fd;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'w', 4 * MiB);
	ASSERT_EQ(0, write_file("/proc/self/clear_refs", "1"));
	ASSERT_EQ(0, write_file("/proc/self/clear_refs", "4"));
	memset(p, 'W', 4 * MiB);
	EXPECT_TRUE(all_bytes(p, 4 * MiB, 'W'));
	EXPECT_EQ(0, madvise(p, 4 * MiB, MADV_COLD));
	EXPECT_EQ(0, madvise(p, 2 * MiB, MADV_PAGEOUT));
	EXPECT_TRUE(all_bytes(p, 4 * MiB, 'W'));
	snprintf(path, sizeof(path), "/proc/%d/mem", getpid());
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(8, pwrite(fd, "abcdefgh", 8, (uintptr_t)p + 3 * MiB));
	EXPECT_EQ(0, memcmp(p + 3 * MiB, "abcdefgh", 8));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* a write through GUP into memory the fork shares */
		int cfd = open("/proc/self/mem", O_RDWR);

		if (cfd < 0 ||
		    pwrite(cfd, "ABCDEFGH", 8, (uintptr_t)p + MiB) != 8)
			_exit(2);
		_exit(memcmp(p + MiB, "ABCDEFGH", 8) ? 1 : 0);
	}
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p + MiB, 8, 'W'));
	ASSERT_EQ(8, pread(fd, buf, 8, (uintptr_t)p + 3 * MiB));
	EXPECT_EQ(0, memcmp(buf, "abcdefgh", 8));
	close(fd);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

/* Shared anonymous memory stays shared with the child, as shmem's. */
TEST_F(mm, shared_anonymous_memory_is_shared)
{
	unsigned char *p = anon(MiB, MAP_SHARED);
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(from_instance(p, MiB));
	p[0] = 1;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		memset(p, 'c', MiB);
		_exit(0);
	}
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p, MiB, 'c'));
	EXPECT_EQ(0, munmap(p, MiB));
}

/* MADV_DONTNEED and MADV_FREE: zeros afterwards, the pages freed. */
TEST_F(mm, dontneed_and_free_give_zeros)
{
	unsigned char *p = anon(4 * MiB, MAP_PRIVATE);
	long full;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'd', 4 * MiB);
	full = used();
	ASSERT_EQ(0, madvise(p + MiB, MiB, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(p + 2 * MiB, MiB, MADV_FREE));
	/* freed (a read allocates again: no shared zero page) */
	EXPECT_GE(full - 2 * 256, used()) TH_LOG("in use %ld, was %ld",
						 used(), full);
	EXPECT_TRUE(all_bytes(p + MiB, 2 * MiB, 0));
	EXPECT_TRUE(all_bytes(p, MiB, 'd'));
	EXPECT_TRUE(all_bytes(p + 3 * MiB, MiB, 'd'));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

/* After fork, the child's MADV_DONTNEED leaves the parent's copy. */
TEST_F(mm, dontneed_in_child_leaves_parent)
{
	unsigned char *p = anon(2 * MiB, MAP_PRIVATE);
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'x', 2 * MiB);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(madvise(p, 2 * MiB, MADV_DONTNEED) ||
		      !all_bytes(p, 2 * MiB, 0));
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p, 2 * MiB, 'x'));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
}

/* mremap: growth reads zeros, a move keeps the data, a shrink frees. */
TEST_F(mm, mremap_grow_move_shrink)
{
	unsigned char *p = anon(MiB, MAP_PRIVATE), *q, *r;
	long before;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'm', MiB);
	q = mremap(p, MiB, 4 * MiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_TRUE(all_bytes(q, MiB, 'm'));
	EXPECT_TRUE(all_bytes(q + MiB, 3 * MiB, 0));
	memset(q + MiB, 'n', 3 * MiB);
	/* move to a fixed place */
	r = mmap(NULL, 8 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	r = mremap(q, 4 * MiB, 4 * MiB, MREMAP_MAYMOVE | MREMAP_FIXED,
		   r + 2 * MiB);
	ASSERT_NE(MAP_FAILED, r);
	EXPECT_TRUE(all_bytes(r, MiB, 'm'));
	EXPECT_TRUE(all_bytes(r + MiB, 3 * MiB, 'n'));
	before = used();
	EXPECT_EQ(r, mremap(r, 4 * MiB, MiB, 0));
	EXPECT_GE(before - 3 * 256, used());
	/* and grown again: the part given up reads zeros */
	q = mremap(r, MiB, 2 * MiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_TRUE(all_bytes(q, MiB, 'm'));
	EXPECT_TRUE(all_bytes(q + MiB, MiB, 0));
	EXPECT_EQ(0, munmap(q, 2 * MiB));
}

/*
 * MREMAP_DONTUNMAP would leave the old range mapping the file, so the
 * memory would show at both addresses (Linux leaves the old range empty):
 * EINVAL (kernel patch 13), and nothing moved.
 */
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
TEST_F(mm, mremap_dontunmap_refused)
{
	unsigned char *p = anon(2 * MiB, MAP_PRIVATE);

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'd', 2 * MiB);
	EXPECT_EQ(MAP_FAILED, mremap(p, 2 * MiB, 2 * MiB,
				     MREMAP_MAYMOVE | MREMAP_DONTUNMAP));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_TRUE(all_bytes(p, 2 * MiB, 'd'));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
}

/*
 * RLIMIT_FSIZE limits files, not anonymous memory: a mapping larger than
 * the limit works, and a fork clones it (no EFBIG, no SIGXFSZ).
 */
TEST_F(mm, file_size_limit_does_not_limit_it)
{
	struct rlimit rl = { .rlim_cur = 64 * 1024, .rlim_max = RLIM_INFINITY };
	unsigned char *p;
	pid_t pid;

	ASSERT_EQ(0, setrlimit(RLIMIT_FSIZE, &rl));
	p = anon(4 * MiB, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(from_instance(p, 4 * MiB));
	memset(p, 'f', 4 * MiB);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ok = all_bytes(p, 4 * MiB, 'f');

		memset(p, 'c', MiB);
		_exit(ok ? 0 : 1);
	}
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p, 4 * MiB, 'f'));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	rl.rlim_cur = RLIM_INFINITY;
	EXPECT_EQ(0, setrlimit(RLIMIT_FSIZE, &rl));
}

/* MAP_FIXED over a part, munmap of a part, mprotect of a part. */
TEST_F(mm, parts_fixed_munmap_mprotect)
{
	unsigned char *p = anon(6 * MiB, MAP_PRIVATE), *f;
	long before;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'f', 6 * MiB);
	before = used();
	f = mmap(p + MiB, MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p + MiB, f);
	/* the replaced part's pages went back */
	EXPECT_GE(before - 256, used());
	EXPECT_TRUE(all_bytes(f, MiB, 0));
	EXPECT_TRUE(all_bytes(p, MiB, 'f'));
	EXPECT_TRUE(all_bytes(p + 2 * MiB, 4 * MiB, 'f'));
	before = used();
	ASSERT_EQ(0, munmap(p + 3 * MiB, MiB));
	EXPECT_GE(before - 256, used());
	EXPECT_TRUE(all_bytes(p + 4 * MiB, 2 * MiB, 'f'));
	ASSERT_EQ(0, mprotect(p + 4 * MiB, MiB, PROT_READ));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		p[5 * MiB] = 1;		/* still writable */
		p[4 * MiB] = 1;		/* SIGSEGV */
		_exit(0);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(wait_status(pid)));
	p[5 * MiB] = 2;
	EXPECT_EQ('f', p[4 * MiB]);
	munmap(p, 6 * MiB);
	EXPECT_EQ(self->used0, used());
}

/* mlock counts the memory as locked; munlock gives it back. */
TEST_F(mm, mlock_and_munlock)
{
	unsigned char *p = anon(2 * MiB, MAP_PRIVATE);
	long lck;

	ASSERT_NE(MAP_FAILED, p);
	lck = status_kb("VmLck");
	ASSERT_EQ(0, mlock(p, 2 * MiB));
	/* mounted memory is VM_MIXEDMAP, which mlock never marks locked */
	EXPECT_EQ(lck + (variant->mounted ? 0 : 2048), status_kb("VmLck"));
	EXPECT_TRUE(all_bytes(p, 2 * MiB, 0));
	memset(p, 'l', 2 * MiB);
	ASSERT_EQ(0, munlock(p, 2 * MiB));
	EXPECT_EQ(lck, status_kb("VmLck"));
	EXPECT_TRUE(all_bytes(p, 2 * MiB, 'l'));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
}

static void *thread_fn(void *arg)
{
	size_t len = 3 * MiB;
	unsigned char *p = malloc(len), local = 't';

	(void)arg;
	if (!p)
		return (void *)1L;
	memset(p, 't', len);
	if (!all_bytes(p, len, 't') || !from_instance(p, len) ||
	    !from_instance(&local, 1)) {
		free(p);
		return (void *)2L;
	}
	free(p);
	return NULL;
}

/* Threads: their stacks and malloc arenas come from the instance too. */
TEST_F(mm, threads_stacks_and_arenas)
{
	pthread_t t[4];
	void *ret;
	int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, thread_fn, NULL));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &ret));
		EXPECT_EQ(NULL, ret);
	}
}

static long futex(void *addr, int op, int val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

/*
 * Shared futexes (what pthread_join waits with) in private memory are
 * keyed as anonymous memory's (patch 13); in shared anonymous memory they
 * give EFAULT, as in any morsel mapping (its pages are in no page cache).
 */
TEST_F(mm, shared_futexes)
{
	int *priv = anon(PG, MAP_PRIVATE), *shared = anon(PG, MAP_SHARED);

	ASSERT_NE(MAP_FAILED, priv);
	ASSERT_NE(MAP_FAILED, shared);
	*priv = 1;
	*shared = 1;
	EXPECT_EQ(0, futex(priv, FUTEX_WAKE, 1));
	EXPECT_EQ(-1, futex(priv, FUTEX_WAIT, 2));	/* the value differs */
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, futex(priv, FUTEX_WAKE_PRIVATE, 1));
	EXPECT_EQ(-1, futex(shared, FUTEX_WAKE, 1));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, futex(shared, FUTEX_WAKE_PRIVATE, 1));
	munmap(priv, PG);
	munmap(shared, PG);
}

/* brk fails; malloc takes its heap from mmap, from the instance. */
TEST_F(mm, brk_fails_malloc_goes_on)
{
	void *cur = sbrk(0), *big, *small;

	EXPECT_EQ((void *)-1, sbrk(64 * KiB));
	EXPECT_EQ(cur, sbrk(0));
	small = malloc(100);
	big = malloc(8 * MiB);
	ASSERT_NE(NULL, small);
	ASSERT_NE(NULL, big);
	memset(big, 'b', 8 * MiB);
	EXPECT_TRUE(from_instance(big, 8 * MiB));
	free(big);
	free(small);
}

/*
 * A program started by exec keeps the memory manager: ld.so's and
 * malloc's memory of /bin/cat come from the instance (cat's own maps).
 */
TEST_F(mm, exec_keeps_the_memory_manager)
{
	char buf[65536], dev[32];
	ssize_t n, got = 0;
	int out[2];
	pid_t pid;

	ASSERT_EQ(0, pipe(out));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(out[1], 1);
		execl("/bin/cat", "cat", "/proc/self/maps", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	while ((n = read(out[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = 0;
	EXPECT_EQ(0, wait_status(pid));
	instance_dev(dev);
	EXPECT_NE(NULL, strstr(buf, dev)) TH_LOG("%s", buf);
}

/* A static binary too (no shim could reach it): its heap is a morsel. */
TEST_F(mm, static_binary)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		execl("tests/mm_static", "mm_static", MDIR, (char *)NULL);
		_exit(127);
	}
	EXPECT_EQ(0, wait_status(pid));
}

/* The CLI: morsel run --mm DIR, and $MORSEL_MM; its exit codes. */
TEST(morsel_run_command)
{
	static const char *const cmds[] = {
		"tools/morsel run --mm " MDIR " -- tests/mm_static " MDIR,
		"MORSEL_MM=" MDIR " tools/morsel run tests/mm_static " MDIR,
		"tools/morsel run --mm " MDIR " sh -c 'tests/mm_static " MDIR "'",
	};
	unsigned int i;

	ASSERT_EQ(0, mount_instance(MDIR, "size=64M"));
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *cmd = cmds[i];

		EXPECT_EQ(0, system(cmd)) TH_LOG("%s", cmd ? cmd : "");
	}
	/* without it, the program's memory is not the instance's */
	EXPECT_EQ(1, WEXITSTATUS(system("tests/mm_static " MDIR)));
	EXPECT_EQ(125, WEXITSTATUS(system("tools/morsel run --mm /proc -- true 2>/dev/null")));
	EXPECT_EQ(127, WEXITSTATUS(system("tools/morsel run --mm " MDIR " -- /nonexistent 2>/dev/null")));
	EXPECT_EQ(2, WEXITSTATUS(system("tools/morsel run 2>/dev/null")));
	umount2(MDIR, MNT_DETACH);
}

/* A child that touched memory and exited leaves nothing behind. */
TEST_F(mm, exit_frees_everything)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *p = anon(16 * MiB, MAP_PRIVATE);

		if (p == MAP_FAILED)
			_exit(1);
		memset(p, 'e', 16 * MiB);
		_exit(used() >= self->used0 + 4096 ? 0 : 2);
	}
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_EQ(self->used0, used());
}

/* /proc/PID/status and smaps count the memory, and so does memcg. */
TEST_F(mm, proc_and_memcg_count_it)
{
	long rss = status_kb("VmRSS"), cur;
	char buf[64];
	unsigned char *p;
	pid_t pid;
	int fd;

	p = anon(8 * MiB, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 'r', 8 * MiB);
	/* mounted pages are in the mm's counters of no table of its own */
	if (variant->mounted) {
		EXPECT_GT(rss + 8192, status_kb("VmRSS"));
	} else {
		EXPECT_LE(rss + 8192, status_kb("VmRSS"));
	}
	/* smaps walks through the mounts and counts every 4 KiB page */
	EXPECT_EQ(8192, smaps_kb(p, "Rss"));
	munmap(p, 8 * MiB);
	/* memcg: a child in a group of its own */
	if (access(CG "/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", CG, "cgroup2", 0, NULL));
	ASSERT_EQ(0, write_file(CG "/cgroup.subtree_control", "+memory"));
	rmdir(CG "/morsel-mm");
	ASSERT_EQ(0, mkdir(CG "/morsel-mm", 0755));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		snprintf(buf, sizeof(buf), "%d", getpid());
		if (write_file(CG "/morsel-mm/cgroup.procs", buf))
			_exit(2);
		p = anon(16 * MiB, MAP_PRIVATE);
		if (p == MAP_FAILED)
			_exit(3);
		memset(p, 'g', 16 * MiB);
		fd = open(CG "/morsel-mm/memory.current", O_RDONLY);
		if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
			_exit(4);
		buf[sizeof(buf) - 1] = 0;
		cur = atol(buf);
		_exit(cur >= 16 * (long)MiB ? 0 : 5);
	}
	EXPECT_EQ(0, wait_status(pid));
	rmdir(CG "/morsel-mm");
}

/*
 * anon=mounted with 2 MiB leaves (huge=always): each is one PMD entry of
 * the process.  Both sides of a fork write; MADV_DONTNEED inside a leaf,
 * mprotect of a part of one and munmap of everything behave as Linux's.
 */
TEST(mounted_huge_leaves)
{
	unsigned char *p;
	long used0;
	pid_t pid;

	ASSERT_EQ(0, mount_instance(MDIR, "size=256M,anon=mounted,huge=always"));
	used0 = used();
	ASSERT_EQ(0, morsel_set_memory_manager(MDIR));
	p = anon(8 * MiB, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, (uintptr_t)p & (2 * MiB - 1));
	memset(p, 'h', 8 * MiB);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int ok = all_bytes(p, 8 * MiB, 'h');

		memset(p + MiB, 'c', 2 * MiB);
		_exit(ok && all_bytes(p, MiB, 'h') &&
		      all_bytes(p + MiB, 2 * MiB, 'c') &&
		      all_bytes(p + 3 * MiB, 5 * MiB, 'h') ? 0 : 1);
	}
	memset(p + 2 * MiB, 'P', PG);
	EXPECT_EQ(0, wait_status(pid));
	EXPECT_TRUE(all_bytes(p, 2 * MiB, 'h'));
	EXPECT_TRUE(all_bytes(p + 2 * MiB, PG, 'P'));
	EXPECT_TRUE(all_bytes(p + 2 * MiB + PG, 6 * MiB - PG, 'h'));
	ASSERT_EQ(0, madvise(p + 4 * MiB + 64 * KiB, 64 * KiB, MADV_DONTNEED));
	EXPECT_TRUE(all_bytes(p + 4 * MiB + 64 * KiB, 64 * KiB, 0));
	EXPECT_TRUE(all_bytes(p + 4 * MiB, 64 * KiB, 'h'));
	ASSERT_EQ(0, mprotect(p + 6 * MiB + MiB, MiB, PROT_READ));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		p[6 * MiB] = 1;			/* still writable */
		p[7 * MiB] = 1;			/* SIGSEGV */
		_exit(0);
	}
	EXPECT_EQ(SIGSEGV, WTERMSIG(wait_status(pid)));
	EXPECT_EQ('h', p[7 * MiB]);
	p[6 * MiB] = 2;
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(used0, used());
	morsel_set_memory_manager(NULL);
	umount2(MDIR, MNT_DETACH);
}

/*
 * anon=: a remount changes how mappings made from then on are mapped, and
 * /proc/mounts shows it; bad values and anon= with pmem= are refused.
 * Mounted memory is VM_MIXEDMAP, which cannot grow in place: mremap
 * without MREMAP_MAYMOVE gives ENOMEM where Linux would grow, and with it
 * the mapping moves (kernel patch 13), its contents along.
 */
TEST(mounted_option_and_mremap_in_place)
{
	unsigned char *r, *p, *q;
	char opts[512];

	ASSERT_EQ(0, mount_instance(MDIR, "size=64M"));
	proc_mount_opts(MDIR, opts, sizeof(opts));
	EXPECT_EQ(NULL, strstr(opts, "anon=")) TH_LOG("%s", opts);
	ASSERT_EQ(0, mount("none", MDIR, "morselfs", MS_REMOUNT,
			   "anon=mounted"));
	proc_mount_opts(MDIR, opts, sizeof(opts));
	EXPECT_NE(NULL, strstr(opts, ",anon=mounted")) TH_LOG("%s", opts);
	ASSERT_ERRNO(EINVAL, mount("none", MDIR, "morselfs", MS_REMOUNT,
				   "anon=bogus"));
	ASSERT_ERRNO(EINVAL, mount("none", "/tmp", "morselfs", 0,
				   "pmem=/dev/pmem0,anon=mounted"));
	/* 8 MiB of room, the first 2 MiB mapped under the memory manager */
	r = mmap(NULL, 8 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	r = (unsigned char *)(((uintptr_t)r + 2 * MiB - 1) & ~(2 * MiB - 1));
	ASSERT_EQ(0, munmap(r, 4 * MiB));
	ASSERT_EQ(0, morsel_set_memory_manager(MDIR));
	p = mmap(r, 2 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(r, p);
	EXPECT_TRUE(smaps_flag(p, "mm"));
	memset(p, 'g', 2 * MiB);
	EXPECT_EQ(MAP_FAILED, mremap(p, 2 * MiB, 4 * MiB, 0));
	EXPECT_EQ(ENOMEM, errno);
	q = mremap(p, 2 * MiB, 4 * MiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_NE(p, q);
	EXPECT_TRUE(all_bytes(q, 2 * MiB, 'g'));
	EXPECT_TRUE(all_bytes(q + 2 * MiB, 2 * MiB, 0));
	EXPECT_EQ(0, munmap(q, 4 * MiB));
	/* back to page by page for what is mapped next */
	ASSERT_EQ(0, mount("none", MDIR, "morselfs", MS_REMOUNT, "anon=paged"));
	p = anon(2 * MiB, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_FALSE(smaps_flag(p, "mm"));
	EXPECT_TRUE(smaps_flag(p, "af"));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	morsel_set_memory_manager(NULL);
	umount2(MDIR, MNT_DETACH);
}

/* size= caps the memory: past it a touch gets SIGBUS, as on tmpfs. */
TEST(size_limit_is_a_memory_cap)
{
	pid_t pid;

	ASSERT_EQ(0, mount_instance(MDIR, "size=8M"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *p;

		if (morsel_set_memory_manager(MDIR))
			_exit(2);
		p = anon(32 * MiB, MAP_PRIVATE);
		if (p == MAP_FAILED)
			_exit(3);
		memset(p, 's', 32 * MiB);
		_exit(4);
	}
	EXPECT_EQ(SIGBUS, WTERMSIG(wait_status(pid)));
	umount2(MDIR, MNT_DETACH);
}

/*
 * A fork whose clone finds no room (the instance full to its last page,
 * so the clone's tables cannot be had): the child gets SIGKILL, and until
 * it does its private memory is an empty anonymous VMA, never the
 * parent's (docs/errors.md M10).  The parent goes on with its memory.
 */
TEST(fork_without_room_for_the_clone_kills_the_child)
{
	pid_t pid;

	ASSERT_EQ(0, mount_instance(MDIR, "size=8M"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *p;
		pid_t child;
		int st;

		if (morsel_set_memory_manager(MDIR))
			_exit(2);
		p = anon(16 * MiB, MAP_PRIVATE);
		if (p == MAP_FAILED)
			_exit(3);
		memset(p, 'x', PG);
		/* Up to the limit: the populate stops where a fault gets SIGBUS. */
		if (!madvise(p, 16 * MiB, MADV_POPULATE_WRITE))
			_exit(4);
		child = fork();
		if (child < 0)
			_exit(5);
		if (!child) {
			if (p[0] == 'x')	/* the parent's memory: sharing */
				_exit(20);
			for (;;)
				pause();
		}
		if (waitpid(child, &st, 0) != child)
			_exit(6);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 7);
		p[0]++;			/* the parent's memory is its own still */
		_exit(p[0] == 'y' && p[PG] == 0 ? 0 : 8);
	}
	EXPECT_EQ(0, WEXITSTATUS(wait_status(pid)));
	umount2(MDIR, MNT_DETACH);
}

/* No inode left on the instance: an anonymous mmap gets ENOMEM. */
TEST(no_inode_left_enomem)
{
	void *p[8];
	int i, n = 0;

	ASSERT_EQ(0, mount_instance(MDIR, "size=16M,nr_inodes=4"));
	ASSERT_EQ(0, morsel_set_memory_manager(MDIR));
	for (i = 0; i < 8; i++) {
		p[i] = anon(PG, MAP_PRIVATE);
		if (p[i] == MAP_FAILED)
			break;
		n++;
	}
	EXPECT_LT(n, 8);
	EXPECT_EQ(ENOMEM, errno);
	morsel_set_memory_manager(NULL);
	for (i = 0; i < n; i++)
		munmap(p[i], PG);
	umount2(MDIR, MNT_DETACH);
}

/* A core dump holds the memory (coredump_filter's anonymous bits). */
TEST(core_dump_holds_the_memory)
{
	char pattern[256] = "", core[64];
	static char buf[1 << 16];
	int fd, found = 0;
	ssize_t n;
	pid_t pid;

	ASSERT_EQ(0, mount_instance(MDIR, "size=64M"));
	fd = open("/proc/sys/kernel/core_pattern", O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, pattern, sizeof(pattern) - 1);
	close(fd);
	ASSERT_LT(0, n);
	pattern[n] = 0;
	ASSERT_EQ(0, write_file("/proc/sys/kernel/core_pattern",
				"/tmp/morsel-mm-core.%p"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
		char *p;

		setrlimit(RLIMIT_CORE, &rl);
		if (morsel_set_memory_manager(MDIR))
			_exit(2);
		p = anon(MiB, MAP_PRIVATE);
		if (p == MAP_FAILED)
			_exit(3);
		memcpy(p + 12345, "morsel-core-marker-7f3a", 23);
		abort();
	}
	EXPECT_EQ(SIGABRT, WTERMSIG(wait_status(pid)));
	write_file("/proc/sys/kernel/core_pattern", pattern);
	snprintf(core, sizeof(core), "/tmp/morsel-mm-core.%d", pid);
	fd = open(core, O_RDONLY);
	ASSERT_LE(0, fd);
	while (!found && (n = read(fd, buf, sizeof(buf))) > 0)
		found = memmem(buf, n, "morsel-core-marker-7f3a", 23) != NULL;
	close(fd);
	unlink(core);
	EXPECT_TRUE(found);
	umount2(MDIR, MNT_DETACH);
}

/* The refusals: tmpfs, a file, a bad fd; nobody opens the memory. */
TEST(refusals)
{
	char link[128];
	pid_t pid;
	int fd;
	void *p;

	ASSERT_EQ(0, mount_instance(MDIR, "size=16M"));
	mkdir("/tmp/morsel-mm-tmpfs", 0755);
	ASSERT_EQ(0, mount("none", "/tmp/morsel-mm-tmpfs", "tmpfs", 0, NULL));
	EXPECT_EQ(-EOPNOTSUPP,
		  morsel_set_memory_manager("/tmp/morsel-mm-tmpfs"));
	umount2("/tmp/morsel-mm-tmpfs", MNT_DETACH);
	fd = open(MDIR "/file", O_RDWR | O_CREAT, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, prctl(PR_SET_MEMORY_MANAGER, fd, 0, 0, 0));
	EXPECT_EQ(ENOTDIR, errno);
	close(fd);
	EXPECT_EQ(-1, prctl(PR_SET_MEMORY_MANAGER, 1000, 0, 0, 0));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, prctl(PR_SET_MEMORY_MANAGER, -1, 1, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, morsel_memory_manager());
	ASSERT_EQ(0, morsel_set_memory_manager(MDIR));
	p = anon(MiB, MAP_PRIVATE);
	ASSERT_NE(MAP_FAILED, p);
	snprintf(link, sizeof(link), "/proc/self/map_files/%lx-%lx",
		 (unsigned long)p, (unsigned long)p + (unsigned long)MiB);
	fd = open(link, O_RDWR);
	EXPECT_EQ(-1, fd);
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, linkat(AT_FDCWD, link, AT_FDCWD, MDIR "/named",
			     AT_SYMLINK_FOLLOW));
	/* MAP_GROWSDOWN and MAP_HUGETLB stay ordinary anonymous memory */
	munmap(p, MiB);
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_FALSE(from_instance(p, MiB));
	munmap(p, MiB);
	ASSERT_EQ(0, morsel_set_memory_manager(NULL));
	EXPECT_EQ(0, morsel_memory_manager());
	p = anon(MiB, MAP_PRIVATE);
	EXPECT_FALSE(from_instance(p, MiB));
	munmap(p, MiB);
	/* without write and search rights in the directory: EACCES */
	ASSERT_EQ(0, chmod(MDIR, 0755));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setuid(65534))
			_exit(2);
		_exit(morsel_set_memory_manager(MDIR) == -EACCES ? 0 : 1);
	}
	EXPECT_EQ(0, wait_status(pid));
	umount2(MDIR, MNT_DETACH);
}

TEST_HARNESS_MAIN
