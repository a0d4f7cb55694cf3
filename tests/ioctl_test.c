// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_test: the morselfs ioctls and the morsel tool that wraps them
 * (kselftest harness; with primitive_test, io_test and lifecycle_test it
 * replaced morsel_test).
 *
 * - STAT: bad input, other commands, a directory.
 * - CREATE (on a directory): an unnamed morsel in one call, which no name
 *   ever reaches and which goes with its last descriptor and mapping; bad
 *   input, permissions, RLIMIT_FSIZE.
 * - POPULATE (and fallocate): every page and table at once, so touching
 *   them faults no more; racing faults; bad ranges and bad fallocate
 *   modes.
 * - EVICT (and fallocate(PUNCH_HOLE), MADV_REMOVE) while two processes map
 *   the morsel, and racing faults and pins (vmsplice).
 * - BIND: a fixed address, so that pointers stored inside are valid in
 *   every process; bad input.
 * - MAPPINGS: who maps the morsel, with what rights; bad input.
 * - FILL: another file read into the range as a pread into a mapping
 *   would, holes filled with pages that were never zeroed (never seen
 *   before the read or the zeroing reached them), the source's end, a
 *   mapper that sees it, order 0, racing faults, a clone's range; bad
 *   input; EOPNOTSUPP on a persistent instance.
 * - SEAL: refused while a shared mapping may write; then the holes are
 *   populated, the bytes kept, and every change of contents is EPERM
 *   while reading, mapping read-only, chmod and unlink go on; bad input.
 * - tools/morsel create, stat, populate, evict and bind.
 *
 * Runs in the VM (vm/run; tests/run-all) as root, from the repository
 * (the tests run tools/morsel), with the suite's morselfs at $MORSEL_MNT
 * and the paging depth in $MORSEL_PAGING (4 or 5); tests/run-all runs it
 * on a persistent instance too (tests/on_pmem).
 *
 * kselftest harness: every TEST runs in its own child process, one after
 * another (the fixture "slow"'s, which may take up to 300 s, after the
 * others); each creates the files it uses (its own names) and depends on
 * no other test.  A check in a fork child is an ASSERT_* too: a failure
 * ends the child and fails the test.  The checks of the module's global
 * counters (/sys/fs/morselfs) compare before and after, so nothing else
 * may make or free morsels while the suite runs (tests/run-all runs one
 * suite at a time).  errors_test and mapping_test bind their morsels away
 * from this suite's BIND_ADDR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

#define BIND_ADDR 0x600000000000ULL	/* 96 TiB: far from the mmap base */

/* ---- STAT ---- */

TEST(ioctl_bad_input)
{
	int fd = fresh(mpath("io"), 2 * MiB);
	struct morsel_stat s;
	int dfd;

	ASSERT_LE(0, fd);
	memset(&s, 0, sizeof(s));
	s.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_STAT, &s));
	memset(&s, 0, sizeof(s));
	s.reserved[2] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_STAT, &s));

	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_STAT, (void *)16));
	ASSERT_ERRNO(ENOTTY, ioctl(fd, _IOWR(MORSEL_IOC_MAGIC, 0x7f, struct morsel_stat), &s));
	ASSERT_ERRNO(ENOTTY, ioctl(fd, 0x5401 /* TCGETS */, &s));
	dfd = open(mpath("."), O_RDONLY | O_DIRECTORY);	/* the root */
	ASSERT_LE(0, dfd);
	ASSERT_ERRNO(ENOTTY, ioctl(dfd, MORSEL_IOC_STAT, &s));
	close(dfd);
	ASSERT_EQ(0, sizeof(struct morsel_stat) % 8);
	close(fd);
	unlink(mpath("io"));
}

/* ---- CREATE ---- */

static int create_in(int dfd, uint64_t size, uint64_t mode, uint64_t flags)
{
	struct morsel_create c = { .size = size, .mode = mode, .flags = flags };

	return ioctl(dfd, MORSEL_IOC_CREATE, &c);
}

/* The counters of pages, tables and morsels of all instances. */
static void counters(struct __test_metadata *_metadata, long out[3])
{
	out[0] = counter(_metadata, "pages");
	out[1] = counter(_metadata, "tables");
	out[2] = counter(_metadata, "morsels");
}

TEST(create_unnamed)
{
	long before[3], now[3];
	char proc[64], buf[4];
	struct stat sb;
	mode_t um;
	int dfd, fd;
	char *p;

	rmdir(mpath("cdir"));
	ASSERT_EQ(0, mkdir(mpath("cdir"), 0755));
	dfd = open(mpath("cdir"), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	counters(_metadata, before);
	um = umask(022);
	fd = create_in(dfd, 2 * MiB + 1, 0666, MORSEL_CREATE_CLOEXEC);
	umask(um);
	ASSERT_LE(0, fd) TH_LOG("CREATE: %s", strerror(errno));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_TRUE(S_ISREG(sb.st_mode));
	EXPECT_EQ(0644, sb.st_mode & 07777);	/* less the umask */
	EXPECT_EQ(0, sb.st_nlink);
	EXPECT_EQ(2 * MiB + 1, sb.st_size);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD));
	EXPECT_EQ(O_RDWR, fcntl(fd, F_GETFL) & O_ACCMODE);
	EXPECT_EQ(2, st(_metadata, fd).order);
	counters(_metadata, now);
	EXPECT_EQ(before[2] + 1, now[2]);
	/* No table until the first page (persistent: the root table). */
	EXPECT_EQ(before[1] + mnt_is_persistent(), now[1]);

	/* A morsel like any other: mounted, written, read back. */
	p = map(_metadata, fd, 2 * MiB + 1, PROT_READ | PROT_WRITE);
	memcpy(p + 2 * MiB - 1, "ab", 2);
	ASSERT_EQ(2, pread(fd, buf, 2, 2 * MiB - 1));
	EXPECT_EQ(0, memcmp(buf, "ab", 2));
	EXPECT_EQ(1, st(_metadata, fd).mappings);

	/* No name reaches it, and the directory stays empty. */
	ASSERT_ERRNO(ENOENT, linkat(fd, "", AT_FDCWD, mpath("cdir/named"),
				    AT_EMPTY_PATH));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ASSERT_ERRNO(ENOENT, linkat(AT_FDCWD, proc, AT_FDCWD,
				    mpath("cdir/named"), AT_SYMLINK_FOLLOW));
	ASSERT_ERRNO(ENOENT, access(mpath("cdir/named"), F_OK));

	/* The mapping keeps it after the last descriptor; unmapping frees it. */
	close(fd);
	EXPECT_EQ(before[2] + 1, counter(_metadata, "morsels"));
	EXPECT_EQ(0, memcmp(p + 2 * MiB - 1, "ab", 2));
	ASSERT_EQ(0, munmap(p, 4 * MiB));
	counters(_metadata, now);
	EXPECT_EQ(before[0], now[0]);
	EXPECT_EQ(before[1], now[1]);
	EXPECT_EQ(before[2], now[2]);

	/* Size 0 (order 0), without close-on-exec, from the root. */
	close(dfd);
	dfd = open(mpath("."), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	fd = create_in(dfd, 0, 0600, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, fcntl(fd, F_GETFD));
	EXPECT_EQ(0, st(_metadata, fd).order);
	EXPECT_EQ(0, st(_metadata, fd).size);
	ASSERT_EQ(3, pwrite(fd, "xyz", 3, 0));
	EXPECT_EQ(3, st(_metadata, fd).size);
	close(fd);
	close(dfd);
	counters(_metadata, now);
	EXPECT_EQ(before[0], now[0]);
	EXPECT_EQ(before[2], now[2]);
	EXPECT_EQ(0, rmdir(mpath("cdir")));	/* empty */
}

static void create_over_fsize(volatile char *dir)
{
	struct rlimit rl = { .rlim_cur = 8 * KiB, .rlim_max = 8 * KiB };
	int dfd = open((const char *)dir, O_RDONLY | O_DIRECTORY);

	if (dfd < 0 || setrlimit(RLIMIT_FSIZE, &rl))
		_exit(2);
	if (create_in(dfd, 8 * KiB, 0600, 0) < 0)	/* at the limit */
		_exit(3);
	signal(SIGXFSZ, SIG_IGN);
	if (create_in(dfd, 8 * KiB + 1, 0600, 0) != -1 || errno != EFBIG)
		_exit(4);
	signal(SIGXFSZ, SIG_DFL);
	create_in(dfd, 8 * KiB + 1, 0600, 0);		/* SIGXFSZ */
	_exit(5);
}

static void create_as_nobody(volatile char *dir)
{
	int dfd = open((const char *)dir, O_RDONLY | O_DIRECTORY);

	if (dfd < 0 || become_nobody())
		_exit(2);
	if (create_in(dfd, PG, 0600, 0) != -1 || errno != EACCES)
		_exit(3);
	_exit(0);
}

TEST(create_bad_input)
{
	struct morsel_create c = { .size = PG, .mode = 0600 };
	long before[3], now[3];
	char dir[256];
	int dfd, fd;

	counters(_metadata, before);
	dfd = open(mpath("."), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dfd);
	c.flags = 2;
	ASSERT_ERRNO(EINVAL, ioctl(dfd, MORSEL_IOC_CREATE, &c));
	c.flags = 0;
	c.mode = S_IFREG | 0600;
	ASSERT_ERRNO(EINVAL, ioctl(dfd, MORSEL_IOC_CREATE, &c));
	c.mode = 0600;
	c.reserved[4] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(dfd, MORSEL_IOC_CREATE, &c));
	c.reserved[4] = 0;
	ASSERT_ERRNO(EFAULT, ioctl(dfd, MORSEL_IOC_CREATE, (void *)16));
	ASSERT_ERRNO(EFBIG, create_in(dfd, 1ULL << 63, 0600, 0));
	ASSERT_ERRNO(EFBIG, create_in(dfd, 300 * TiB, 0600, 0));
	ASSERT_ERRNO(ENOTTY, ioctl(dfd, _IOW(MORSEL_IOC_MAGIC, 0x7f,
					     struct morsel_create), &c));
	/* Not on a morsel, nor on another file system's directory. */
	fd = fresh(mpath("cbad"), PG);
	ASSERT_LE(0, fd);
	ASSERT_ERRNO(ENOTTY, ioctl(fd, MORSEL_IOC_CREATE, &c));
	close(fd);
	unlink(mpath("cbad"));
	fd = open("/dev/shm", O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	ASSERT_ERRNO(ENOTTY, ioctl(fd, MORSEL_IOC_CREATE, &c));
	close(fd);
	fd = open(mpath("."), O_PATH | O_DIRECTORY);
	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EBADF, ioctl(fd, MORSEL_IOC_CREATE, &c));
	close(fd);
	close(dfd);

	/* RLIMIT_FSIZE as ftruncate: EFBIG with SIGXFSZ ignored, else SIGXFSZ. */
	snprintf(dir, sizeof(dir), "%s", mpath("."));
	EXPECT_EQ(SIGXFSZ, in_child(create_over_fsize, dir));
	/* Write and search permission on the directory, as O_TMPFILE. */
	rmdir(mpath("cperm"));
	ASSERT_EQ(0, mkdir(mpath("cperm"), 0755));
	snprintf(dir, sizeof(dir), "%s", mpath("cperm"));
	EXPECT_EQ(0, in_child(create_as_nobody, dir));
	EXPECT_EQ(0, rmdir(mpath("cperm")));

	counters(_metadata, now);
	EXPECT_EQ(before[0], now[0]);
	EXPECT_EQ(before[1], now[1]);
	EXPECT_EQ(before[2], now[2]);
}

/* ---- the morsel tool ---- */

TEST(cli_create_and_stat)
{
	char cmd[512], out[2048];
	int fd;
	char *p;

	unlink(mpath("cli"));
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 3M", mpath("cli"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	fd = morsel_open(mpath("cli"), O_RDWR);
	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 3 * MiB, PROT_READ | PROT_WRITE);
	p[0] = p[2 * MiB] = 1;
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s", mpath("cli"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "order:    2\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "extent:   1073741824 (1 GiB)\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "size:     3145728\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "pages:    2\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "tables:   pte 2 pmd 1 pud 0 p4d 0\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "mappings: 1\n")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 3M 2>&1", mpath("cli"));
	ASSERT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "File exists")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 12x 2>&1", mpath("cli2"));
	ASSERT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "bad size")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 300T 2>&1", mpath("cli2"));
	ASSERT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "File too large")) TH_LOG("%s", out);
	ASSERT_NE(0, access(mpath("cli2"), F_OK));
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s 2>&1", mpath("none"));
	ASSERT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "No such file")) TH_LOG("%s", out);
	munmap(p, 3 * MiB);
	close(fd);
	unlink(mpath("cli"));
}

/* ---- explicit population and eviction ---- */

static long minflt(struct __test_metadata *_metadata)
{
	struct rusage ru;

	ASSERT_EQ(0, getrusage(RUSAGE_SELF, &ru));
	return ru.ru_minflt;
}

static void touch_each_page(char *p, uint64_t len)
{
	uint64_t off;

	for (off = 0; off < len; off += PG)
		((volatile char *)p)[off] = 1;
}

/* 64 MiB populated, then touched page by page, twice (about 33000 faults). */
TEST_F_TIMEOUT(slow, populate_then_no_faults, 300)
{
	int fd = fresh(mpath("pop"), 64 * MiB), fd2 = fresh(mpath("nopop"), 64 * MiB);
	long p0, f0;
	static char warm[PG];
	struct morsel_stat s;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, fd2);
	p0 = counter(_metadata, "pages");
	ASSERT_EQ(0, morsel_populate(fd, 0, 64 * MiB));
	s = st(_metadata, fd);
	ASSERT_EQ(16384, s.pages);
	ASSERT_EQ(32, s.tables[0]);
	ASSERT_EQ(16384, counter(_metadata, "pages") - p0);
	ASSERT_EQ(0, morsel_populate(fd, 0, 64 * MiB));	/* idempotent */
	ASSERT_EQ(16384, st(_metadata, fd).pages);
	/* Fault in this code and the stack first: count only the morsel. */
	touch_each_page(warm, sizeof(warm));
	p = map(_metadata, fd, 64 * MiB, PROT_READ | PROT_WRITE);
	f0 = minflt(_metadata);
	touch_each_page(p, 64 * MiB);
	ASSERT_EQ(0, minflt(_metadata) - f0);
	/* The same without populating: one fault per page. */
	p = map(_metadata, fd2, 64 * MiB, PROT_READ | PROT_WRITE);
	f0 = minflt(_metadata);
	touch_each_page(p, 64 * MiB);
	ASSERT_LE(16384, minflt(_metadata) - f0);
	/* fallocate() does the same, growing the file like a file. */
	close(fd2);
	fd2 = fresh(mpath("falloc"), 0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, fallocate(fd2, 0, 0, 8 * MiB + 1));
	s = st(_metadata, fd2);
	ASSERT_EQ(8 * MiB + 1, s.size);
	ASSERT_EQ(2, s.order);
	ASSERT_EQ(2049, s.pages);
	/* KEEP_SIZE stops at the size (a page past it would not SIGBUS). */
	ASSERT_EQ(0, fallocate(fd2, FALLOC_FL_KEEP_SIZE, 16 * MiB, 4 * MiB));
	ASSERT_EQ(8 * MiB + 1, st(_metadata, fd2).size);
	ASSERT_EQ(2049, st(_metadata, fd2).pages);
	close(fd2);
	close(fd);
	unlink(mpath("pop"));
	unlink(mpath("nopop"));
	unlink(mpath("falloc"));
	ASSERT_EQ(p0 + 2 * 16384, counter(_metadata, "pages"));	/* both still mapped */
}

struct racer { char *p; uint64_t len; };

static void *race_touch(void *arg)
{
	struct racer *r = arg;
	uint64_t off;

	for (off = r->len; off > 0; off -= PG)
		((volatile char *)r->p)[off - PG] = 1;
	return NULL;
}

/* 32 MiB populated while two threads fault it from the other end. */
TEST_F_TIMEOUT(slow, populate_races_faults, 300)
{
	int fd = fresh(mpath("race"), 1 * GiB), i, pm = mnt_is_persistent();
	long p0, t0;
	struct racer r;
	pthread_t th[2];

	ASSERT_LE(0, fd);
	p0 = counter(_metadata, "pages");
	t0 = counter(_metadata, "tables");
	r.len = 32 * MiB;
	r.p = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_create(&th[i], NULL, race_touch, &r));
	}
	ASSERT_EQ(0, morsel_populate(fd, 0, 32 * MiB));
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* Every page and table exactly once; losers freed what they made. */
	ASSERT_EQ(8192, st(_metadata, fd).pages);
	ASSERT_EQ(16, st(_metadata, fd).tables[0]);
	ASSERT_EQ(8192, counter(_metadata, "pages") - p0);
	/* The root too, raced for, unless it was there (persistent). */
	ASSERT_EQ(16 + !pm, counter(_metadata, "tables") - t0);
	munmap(r.p, 1 * GiB);
	close(fd);
	unlink(mpath("race"));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
	ASSERT_EQ(t0 - pm, counter(_metadata, "tables"));
}

static int range_ioctl(int fd, unsigned long cmd, uint64_t off, uint64_t len,
		       uint64_t flags, unsigned int res, uint64_t resval)
{
	struct morsel_range r;

	memset(&r, 0, sizeof(r));
	r.offset = off;
	r.length = len;
	r.flags = flags;
	r.reserved[res] = resval;
	return ioctl(fd, cmd, &r);
}

TEST(range_ioctls_bad_input)
{
	static const unsigned long cmds[] = { MORSEL_IOC_POPULATE,
					       MORSEL_IOC_EVICT };
	int fd = fresh(mpath("rb"), 2 * MiB + 5000), rfd;
	long p0;
	unsigned int i;

	ASSERT_LE(0, fd);
	p0 = counter(_metadata, "pages");
	rfd = morsel_open(mpath("rb"), O_RDONLY);
	ASSERT_LE(0, rfd);
	for (i = 0; i < 2; i++) {
		unsigned long c = cmds[i];

		/* Bit 0 is POPULATE's MORSEL_POPULATE_HUGE; bit 1 is no flag. */
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 0, PG, 2, 0, 0));
		if (c == MORSEL_IOC_EVICT)
			ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 0, PG, 1, 0, 0));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 0, PG, 0, 4, 1));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 100, PG, 0, 0, 0));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 0, 100, 0, 0, 0));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 0, 0, 0, 0, 0));
		/* Past the end: the size rounded up to a page is the limit. */
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 2 * MiB, 3 * PG, 0, 0, 0));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, 4 * MiB, PG, 0, 0, 0));
		ASSERT_ERRNO(EINVAL, range_ioctl(fd, c, PG, ~0ULL & ~(PG - 1), 0, 0, 0));
		ASSERT_ERRNO(EFAULT, ioctl(fd, c, (void *)16));
		ASSERT_ERRNO(EBADF, range_ioctl(rfd, c, 0, PG, 0, 0, 0));
		ASSERT_EQ(0, range_ioctl(fd, c, 2 * MiB, 2 * PG, 0, 0, 0));
	}
	ASSERT_EQ(p0, counter(_metadata, "pages"));
	/* fallocate: modes we do not have, bad ranges, read-only files */
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, PG));
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, PG));
	ASSERT_ERRNO(EOPNOTSUPP, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, PG));
	ASSERT_ERRNO(EINVAL, fallocate(fd, 0, 0, 0));
	ASSERT_ERRNO(EINVAL, fallocate(fd, 0, -1, PG));
	ASSERT_ERRNO(EBADF, fallocate(rfd, 0, 0, PG));
	ASSERT_ERRNO(EFBIG, fallocate(fd, 0, 0, 257 * TiB));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
	ASSERT_EQ(2 * MiB + 5000, st(_metadata, fd).size);
	/*
	 * Growing the order while mapped works (the mapping keeps its
	 * extent).
	 */
	{
		char *p = map(_metadata, fd, 1, PROT_READ);

		ASSERT_EQ(1, pwrite(fd, "x", 1, 2 * GiB));
		ASSERT_EQ(3, st(_metadata, fd).order);
		ASSERT_EQ(1 * GiB, vma_len(_metadata, p));
		ASSERT_EQ(0, ftruncate(fd, 2 * MiB + 5000));
		ASSERT_EQ(2 * MiB + 5000, st(_metadata, fd).size);
		munmap(p, 1);
	}
	close(rfd);
	close(fd);
	unlink(mpath("rb"));
}

TEST(evict_mapped_in_two_processes)
{
	int fd = fresh(mpath("ev"), 4 * MiB), ready[2], go[2];
	char *p, c = 0;
	uint64_t off;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 4 * MiB, PROT_READ | PROT_WRITE);
	memset(p, 'x', 4 * MiB);
	ASSERT_EQ(1024, st(_metadata, fd).pages);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	if (pid == 0) {
		/* Its own read-only mapping, its own TLB entries. */
		int rfd = morsel_open(mpath("ev"), O_RDONLY);
		char *q;
		long sum = 0;

		ASSERT_LE(0, rfd);
		q = map(_metadata, rfd, 4 * MiB, PROT_READ);
		for (off = 0; off < 4 * MiB; off += PG)
			sum += q[off];
		ASSERT_EQ(1024L * 'x', sum);
		ASSERT_EQ(1, write(ready[1], "r", 1));
		ASSERT_EQ(1, read(go[0], &c, 1));
		for (off = 0; off < 4 * MiB; off += PG) {
			ASSERT_EQ(off >= 1 * MiB && off < 3 * MiB ? 0 : 'x', q[off])
				TH_LOG("offset %llu", (unsigned long long)off);
		}
		_exit(0);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	ASSERT_EQ(3, st(_metadata, fd).mappings);	/* ours, the child's copy and its own */
	ASSERT_EQ(0, morsel_evict(fd, 1 * MiB, 2 * MiB));
	ASSERT_EQ(512, st(_metadata, fd).pages);
	ASSERT_EQ(2, st(_metadata, fd).tables[0]);	/* tables stay while mapped */
	for (off = 0; off < 4 * MiB; off += PG) {
		ASSERT_EQ(off >= 1 * MiB && off < 3 * MiB ? 0 : 'x', p[off])
			TH_LOG("offset %llu", (unsigned long long)off);
	}
	ASSERT_EQ(1, write(go[1], "g", 1));
	wait_child_ok(_metadata, pid);
	/* Touching a hole through a mapping populates it again (zeros). */
	ASSERT_EQ(1024, st(_metadata, fd).pages);
	/* Punching partial pages zeroes bytes and keeps the pages. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       100, 5000));
	ASSERT_EQ('x', p[99]);
	ASSERT_EQ(0, p[100]);
	ASSERT_EQ(0, p[5099]);
	ASSERT_EQ('x', p[5100]);
	ASSERT_EQ(1024, st(_metadata, fd).pages);
	/* madvise(MADV_REMOVE) punches through the mapping. */
	ASSERT_EQ(0, madvise(p + 3 * MiB, 1 * MiB, MADV_REMOVE));
	ASSERT_EQ(768, st(_metadata, fd).pages);
	ASSERT_EQ(0, p[3 * MiB]);
	ASSERT_EQ(0, p[4 * MiB - 1]);
	munmap(p, 4 * MiB);
	/* Unmapped, eviction frees the tables too. */
	ASSERT_EQ(0, morsel_evict(fd, 0, 4 * MiB));
	ASSERT_EQ(0, st(_metadata, fd).pages);
	ASSERT_EQ(0, st(_metadata, fd).tables[0]);
	ASSERT_EQ(1, st(_metadata, fd).tables[1]);
	close(fd);
	/* Order 0 while mapped: the page is zeroed (it is the mount itself). */
	fd = fresh(mpath("ev0"), 4096);
	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 4096, PROT_READ | PROT_WRITE);
	p[0] = 1;
	ASSERT_EQ(0, morsel_evict(fd, 0, 4096));
	ASSERT_EQ(0, p[0]);
	munmap(p, 4096);
	ASSERT_EQ(0, morsel_evict(fd, 0, 4096));
	ASSERT_EQ(0, st(_metadata, fd).pages);
	close(fd);
	unlink(mpath("ev"));
	unlink(mpath("ev0"));
}

struct stress { char *p; uint64_t len; int pipe[2]; volatile int stop; };

static void *stress_write(void *arg)
{
	struct stress *x = arg;
	uint64_t off;

	while (!x->stop)
		for (off = 0; off < x->len; off += PG)
			((volatile char *)x->p)[off + 7] = 'a';
	return NULL;
}

/* A failed pin ends the test process with status 5 (a failure). */
static void *stress_pin(void *arg)
{
	struct stress *x = arg;
	uint64_t off = 0;
	char buf[PG];
	struct iovec v;

	while (!x->stop) {
		v.iov_base = x->p + off;
		v.iov_len = PG;
		if (vmsplice(x->pipe[1], &v, 1, 0) != (ssize_t)PG ||
		    read(x->pipe[0], buf, PG) != (ssize_t)PG)
			_exit(5);
		off = (off + 17 * PG) % x->len;
	}
	return NULL;
}

/* 300 evictions of 4 MiB while two threads rewrite every page. */
TEST_F_TIMEOUT(slow, evict_races_faults_and_pins, 300)
{
	long p0 = counter(_metadata, "pages"), t0 = counter(_metadata, "tables");
	int fd = fresh(mpath("stress"), 4 * MiB), i;
	struct stress x = { .len = 4 * MiB };
	pthread_t th[3];
	uint64_t off;

	ASSERT_LE(0, fd);
	x.p = map(_metadata, fd, 4 * MiB, PROT_READ | PROT_WRITE);
	ASSERT_EQ(0, pipe(x.pipe));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, pthread_create(&th[i], NULL,
					    i < 2 ? stress_write : stress_pin, &x));
	}
	for (i = 0; i < 300; i++) {
		ASSERT_EQ(0, morsel_evict(fd, 0, 4 * MiB));
	}
	x.stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	/* Every byte is one the program wrote or a zero: nothing stale. */
	for (off = 0; off < 4 * MiB; off++) {
		if (x.p[off] && !(x.p[off] == 'a' && off % PG == 7)) {
			ASSERT_TRUE(false) TH_LOG("byte %llu is 0x%x",
						  (unsigned long long)off, x.p[off]);
		}
	}
	ASSERT_EQ(counter(_metadata, "pages") - p0, st(_metadata, fd).pages);
	munmap(x.p, 4 * MiB);
	close(fd);
	unlink(mpath("stress"));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
	ASSERT_EQ(t0, counter(_metadata, "tables"));
}

/* ---- fixed addresses ---- */

struct node { struct node *next; uint64_t val; };

/*
 * For in_child(): build a list in the bound morsel "bind" (@arg is the
 * test's _metadata, so that a failed ASSERT_* aborts the child).
 */
static void build_list(volatile char *arg)
{
	struct __test_metadata *_metadata = (struct __test_metadata *)arg;
	int fd = morsel_open(mpath("bind"), O_RDWR);
	struct node *n, *prev = NULL;
	char *p;
	int i;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	ASSERT_EQ(BIND_ADDR, (uint64_t)(uintptr_t)p);
	for (i = 999; i >= 0; i--) {
		n = (struct node *)(p + ((uint64_t)i * 2056) % (2 * MiB - 64));
		n->val = (uint64_t)i * 7;
		n->next = prev;
		prev = n;
	}
	*(struct node **)(p + 2 * MiB - 8) = prev;	/* the head */
}

/* For in_child(): walk the list build_list() left (@arg: _metadata). */
static void walk_list(volatile char *arg)
{
	struct __test_metadata *_metadata = (struct __test_metadata *)arg;
	int fd = morsel_open(mpath("bind"), O_RDONLY);
	struct node *n;
	char *p;
	uint64_t i = 0;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ);
	ASSERT_EQ(BIND_ADDR, (uint64_t)(uintptr_t)p);
	for (n = *(struct node **)(p + 2 * MiB - 8); n; n = n->next, i++) {
		ASSERT_EQ(i * 7, n->val);
	}
	ASSERT_EQ(1000, i);
}

TEST(bind_fixed_address)
{
	int fd = fresh(mpath("bind"), 2 * MiB), fd2;
	char *p, *a;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR));
	ASSERT_EQ(BIND_ADDR, st(_metadata, fd).bound);
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR));		/* same: no-op */
	ASSERT_EQ(-EBUSY, morsel_bind(fd, BIND_ADDR + 2 * MiB));
	/* Pointers stored inside are valid in another process. */
	ASSERT_EQ(0, in_child(build_list, (volatile char *)_metadata));
	ASSERT_EQ(0, in_child(walk_list, (volatile char *)_metadata));
	/* Every mapping lands there; a second one in the same mm conflicts. */
	p = map(_metadata, fd, 2 * MiB, PROT_READ);
	ASSERT_EQ(BIND_ADDR, (uint64_t)(uintptr_t)p);
	ASSERT_ERRNO(EEXIST, mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_ERRNO(EINVAL, mmap((void *)(uintptr_t)(BIND_ADDR + 4 * MiB), 2 * MiB,
				  PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0));
	ASSERT_EQ(BIND_ADDR, (uint64_t)(uintptr_t)mmap(p, 2 * MiB, PROT_READ,
						       MAP_SHARED | MAP_FIXED, fd, 0));
	ASSERT_EQ(0, morsel_bind(fd, BIND_ADDR));
	ASSERT_EQ(0, munmap(p, 2 * MiB));
	/* Something else at the address: EEXIST, nothing replaced. */
	a = mmap((void *)(uintptr_t)BIND_ADDR, PG, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(BIND_ADDR, (uint64_t)(uintptr_t)a);
	ASSERT_ERRNO(EEXIST, mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_EQ(PG, vma_len(_metadata, a));
	munmap(a, PG);
	/* A new order must keep the address aligned. */
	fd2 = fresh(mpath("bind2"), 2 * MiB);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, morsel_bind(fd2, BIND_ADDR + 2 * MiB));
	ASSERT_ERRNO(EBUSY, ftruncate(fd2, 1 * GiB));
	ASSERT_EQ(0, ftruncate(fd2, 1 * MiB));
	ASSERT_ERRNO(EBUSY, pwrite(fd2, "x", 1, 1 * GiB));
	ASSERT_EQ(0, ftruncate(fd, 1 * GiB));	/* BIND_ADDR is 1 GiB aligned */
	ASSERT_EQ(BIND_ADDR, st(_metadata, fd).bound);
	close(fd2);
	close(fd);
	unlink(mpath("bind"));
	unlink(mpath("bind2"));
}

static int bind_ioctl(int fd, uint64_t addr, uint64_t flags, unsigned int res,
		      uint64_t resval)
{
	struct morsel_bind b;

	memset(&b, 0, sizeof(b));
	b.addr = addr;
	b.flags = flags;
	b.reserved[res] = resval;
	return ioctl(fd, MORSEL_IOC_BIND, &b);
}

TEST(bind_bad_input)
{
	int fd = fresh(mpath("bb"), 2 * MiB), rfd;
	char *p;

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, 0, 0, 0, 0));
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, BIND_ADDR + PG, 0, 0, 0));
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, 1ULL << 57, 0, 0, 0));
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, ~0ULL & ~(2 * MiB - 1), 0, 0, 0));
	if (!five_level(_metadata)) {
		ASSERT_ERRNO(EINVAL, bind_ioctl(fd, 1ULL << 47, 0, 0, 0));
	}
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, BIND_ADDR, 1, 0, 0));
	ASSERT_ERRNO(EINVAL, bind_ioctl(fd, BIND_ADDR, 0, 5, 1));
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_BIND, (void *)16));
	rfd = morsel_open(mpath("bb"), O_RDONLY);
	ASSERT_ERRNO(EBADF, bind_ioctl(rfd, BIND_ADDR, 0, 0, 0));
	p = map(_metadata, fd, 2 * MiB, PROT_READ);
	ASSERT_ERRNO(EBUSY, bind_ioctl(fd, BIND_ADDR, 0, 0, 0));
	munmap(p, 2 * MiB);
	ASSERT_EQ(0, st(_metadata, fd).bound);
	close(rfd);
	close(fd);
	unlink(mpath("bb"));
}

/* ---- mappings and their rights ---- */

/* The entry of @m (@n entries) for @addr in process @pid, which must exist. */
static const struct morsel_mapping *find_map(struct __test_metadata *_metadata,
					     const struct morsel_mapping *m,
					     int n, void *addr, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (m[i].addr == (uintptr_t)addr && m[i].pid == (uint64_t)pid)
			return &m[i];
	ASSERT_TRUE(false) TH_LOG("no mapping at %p in %d", addr, pid);
	return NULL;
}

TEST(mappings_report_rights)
{
	int fd = fresh(mpath("maps"), 2 * MiB), ready[2], go[2], n;
	char *rw, *ro, *rx = NULL, c, cmd[512], out[2048], want[64];
	struct morsel_mapping m[8];
	struct morsel_mappings req;
	const struct morsel_mapping *e;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(1, pwrite(fd, "x", 1, 0));	/* a root to mount at mmap */
	rw = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	ro = map(_metadata, fd, 2 * MiB, PROT_READ);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	if (pid == 0) {
		munmap(rw, 2 * MiB);
		munmap(ro, 2 * MiB);
		rx = mmap(NULL, 2 * MiB, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, rx);
		ASSERT_EQ(sizeof(rx), write(ready[1], &rx, sizeof(rx)));
		ASSERT_EQ(1, read(go[0], &c, 1));
		_exit(0);
	}
	ASSERT_EQ(sizeof(rx), read(ready[0], &rx, sizeof(rx)));
	n = morsel_mappings(fd, m, 8);
	ASSERT_EQ(3, n);
	ASSERT_EQ(3, st(_metadata, fd).mappings);
	e = find_map(_metadata, m, n, rw, getpid());
	ASSERT_EQ(MORSEL_PROT_READ | MORSEL_PROT_WRITE, e->prot);
	ASSERT_EQ(getpid(), e->pid);
	ASSERT_EQ(MORSEL_MAPPING_MOUNTED, e->flags);
	e = find_map(_metadata, m, n, ro, getpid());
	ASSERT_EQ(MORSEL_PROT_READ, e->prot);
	e = find_map(_metadata, m, n, rx, pid);
	ASSERT_EQ(MORSEL_PROT_READ | MORSEL_PROT_EXEC, e->prot);
	ASSERT_EQ(pid, e->pid);
	ASSERT_EQ(3, morsel_mappings(fd, NULL, 0));	/* just count */
	ASSERT_EQ(3, morsel_mappings(fd, m, 1));
	ASSERT_EQ(-EFAULT, morsel_mappings(fd, (void *)16, 2));
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s", mpath("maps"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "mappings: 3\n")) TH_LOG("%s", out);
	snprintf(want, sizeof(want), "pid %-7d 0x%012lx r-x mounted", pid,
		 (unsigned long)rx);
	ASSERT_NE(NULL, strstr(out, want)) TH_LOG("no \"%s\" in %s", want, out);
	ASSERT_EQ(1, write(go[1], "g", 1));
	wait_child_ok(_metadata, pid);
	ASSERT_EQ(2, morsel_mappings(fd, m, 8));
	memset(&req, 0, sizeof(req));
	req.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MAPPINGS, &req));
	req.flags = 0;
	req.reserved[3] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MAPPINGS, &req));
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_MAPPINGS, (void *)16));
	munmap(rw, 2 * MiB);
	munmap(ro, 2 * MiB);
	ASSERT_EQ(0, morsel_mappings(fd, m, 8));
	close(fd);
	unlink(mpath("maps"));
}

TEST(cli_populate_evict_bind)
{
	char cmd[512], out[2048];
	int fd = fresh(mpath("clipe"), 4 * MiB);

	ASSERT_LE(0, fd);
	snprintf(cmd, sizeof(cmd), "tools/morsel populate %s 1M 2M", mpath("clipe"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_EQ(512, st(_metadata, fd).pages);
	snprintf(cmd, sizeof(cmd), "tools/morsel evict %s 1M 1M", mpath("clipe"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_EQ(256, st(_metadata, fd).pages);
	snprintf(cmd, sizeof(cmd), "tools/morsel evict %s 1M 100 2>&1",
		 mpath("clipe"));
	ASSERT_NE(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "Invalid argument")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel bind %s 0x600000000000 && "
		 "tools/morsel stat %s", mpath("clipe"), mpath("clipe"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out)));
	ASSERT_NE(NULL, strstr(out, "bound:    0x600000000000\n")) TH_LOG("%s", out);
	close(fd);
	unlink(mpath("clipe"));
}

#define PAGE_ALIGN_UP(x) (((x) + PG - 1) & ~(PG - 1))

/* Byte @i of fill_source's pattern: never zero. */
static unsigned char fill_byte(uint64_t i)
{
	return (unsigned char)(i * 7 + i / PG + 1) | 1;
}

/* A tmpfs file of @size bytes of a pattern that differs from zero. */
static int fill_source(const char *path, uint64_t size, int flags)
{
	static unsigned char buf[1 << 16];
	uint64_t off, i, n;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(buf) ? size - off : sizeof(buf);
		for (i = 0; i < n; i++)
			buf[i] = fill_byte(off + i);
		if (pwrite(fd, buf, n, off) != (ssize_t)n)
			return -1;
	}
	close(fd);
	return open(path, O_RDONLY | flags);
}

/*
 * FILL reads a file into the range: holes get the file's bytes, pages
 * already there are overwritten, a new page's bytes past the source's end
 * are zero, and the fill stops there (the rest stays a hole).  A process
 * that maps the morsel sees it all; the module counts only the pages it
 * added.  Order 0 too.  On a persistent instance (tests/on_pmem) the
 * device has no unzeroed pages to give: EOPNOTSUPP.
 */
TEST(fill_reads_a_file_into_the_range)
{
	const uint64_t ssize = 3 * MiB + 100, msize = 4 * MiB;
	const char *sp = "/tmp/ioctl_test_fill";
	int fd = fresh(mpath("fill"), msize), src, dsrc;
	uint64_t filled = 1, i;
	long p0, n0;
	char *p;

	ASSERT_LE(0, fd);
	src = fill_source(sp, ssize, 0);
	ASSERT_LE(0, src);
	if (mnt_is_persistent()) {
		ASSERT_EQ(-EOPNOTSUPP, morsel_fill(fd, src, 0, 0, PG, NULL));
		close(src);
		close(fd);
		unlink(sp);
		unlink(mpath("fill"));
		return;
	}
	p = map(_metadata, fd, msize, PROT_READ);
	/* A page there before: overwritten, not counted again. */
	ASSERT_EQ(1, pwrite(fd, "X", 1, 5 * PG + 9));
	p0 = counter(_metadata, "pages");
	n0 = st(_metadata, fd).pages;
	ASSERT_EQ(1, n0);
	ASSERT_EQ(0, morsel_fill(fd, src, 0, 0, msize, &filled));
	ASSERT_EQ(ssize, filled);
	for (i = 0; i < ssize; i++)
		if ((unsigned char)p[i] != fill_byte(i))
			break;
	ASSERT_EQ(ssize, i);
	for (; i < PAGE_ALIGN_UP(ssize); i++)
		if (p[i])
			break;
	ASSERT_EQ(PAGE_ALIGN_UP(ssize), i);
	/* Pages up to the source's end, no further. */
	ASSERT_EQ(PAGE_ALIGN_UP(ssize) / PG, st(_metadata, fd).pages);
	ASSERT_EQ(p0 + PAGE_ALIGN_UP(ssize) / PG - 1, counter(_metadata, "pages"));
	/* Again from another offset of the source, into present pages. */
	ASSERT_EQ(0, morsel_fill(fd, src, 2 * PG, 0, 2 * PG, &filled));
	ASSERT_EQ(2 * PG, filled);
	ASSERT_EQ(fill_byte(2 * PG + 5), (unsigned char)p[5]);
	ASSERT_EQ(fill_byte(3 * PG + 5), (unsigned char)p[PG + 5]);
	ASSERT_EQ(fill_byte(2 * PG), (unsigned char)p[2 * PG]);
	ASSERT_EQ(PAGE_ALIGN_UP(ssize) / PG, st(_metadata, fd).pages);
	/* Past the source's end: nothing read, nothing added. */
	ASSERT_EQ(0, morsel_fill(fd, src, 4 * MiB, 0, PG, &filled));
	ASSERT_EQ(0, filled);
	/* With O_DIRECT on the source (tmpfs takes it). */
	dsrc = open(sp, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, dsrc);
	ASSERT_EQ(0, morsel_fill(fd, dsrc, 0, 0, 2 * MiB, &filled));
	ASSERT_EQ(2 * MiB, filled);
	ASSERT_EQ(fill_byte(5), (unsigned char)p[5]);
	close(dsrc);
	munmap(p, msize);
	close(fd);
	unlink(mpath("fill"));
	ASSERT_EQ(p0 - 1, counter(_metadata, "pages"));
	/* Order 0: one page, read into. */
	fd = fresh(mpath("fill0"), 1000);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_fill(fd, src, PG, 0, PG, &filled));
	ASSERT_EQ(PG, filled);
	p = map(_metadata, fd, PG, PROT_READ);
	ASSERT_EQ(fill_byte(PG + 999), (unsigned char)p[999]);
	munmap(p, PG);
	close(fd);
	unlink(mpath("fill0"));
	close(src);
	unlink(sp);
}

/*
 * FILL while another process faults the same pages in (each fault fills a
 * hole with a zeroed page first): a hole that a fault won keeps the
 * fault's page and gets the data copied into it.  Afterwards every byte is
 * the source's, every page counted once, nothing leaks.
 */
TEST(fill_races_faults)
{
	const uint64_t size = 8 * MiB;
	const char *sp = "/tmp/ioctl_test_fillr";
	int fd = fresh(mpath("fillr"), size), src, go[2], round;
	long p0 = counter(_metadata, "pages");
	uint64_t filled, i;
	char *p, c;
	pid_t pid;

	ASSERT_LE(0, fd);
	src = fill_source(sp, size, 0);
	ASSERT_LE(0, src);
	if (mnt_is_persistent()) {
		close(src);
		close(fd);
		unlink(sp);
		unlink(mpath("fillr"));
		SKIP(return, "no FILL on a persistent instance");
	}
	p = map(_metadata, fd, size, PROT_READ);
	for (round = 0; round < 4; round++) {
		ASSERT_EQ(0, morsel_evict(fd, 0, size));
		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			volatile char *q = p;
			uint64_t k, x = 88172645463325252ULL + round;

			close(go[1]);
			if (read(go[0], &c, 1) != 0)
				_exit(3);
			for (k = 0; k < 4 * size / PG; k++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				(void)q[(x % (size / PG)) * PG + (x >> 40) % PG];
			}
			_exit(0);
		}
		close(go[0]);
		close(go[1]);
		ASSERT_EQ(0, morsel_fill(fd, src, 0, 0, size, &filled));
		ASSERT_EQ(size, filled);
		wait_child_ok(_metadata, pid);
		for (i = 0; i < size; i++)
			if ((unsigned char)p[i] != fill_byte(i))
				break;
		ASSERT_EQ(size, i);
		ASSERT_EQ(size / PG, st(_metadata, fd).pages);
	}
	munmap(p, size);
	close(fd);
	close(src);
	unlink(sp);
	unlink(mpath("fillr"));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
}

/*
 * FILL into a copy-on-write clone's range makes it the clone's own first
 * (as a write would): the original keeps its bytes, the clone gets the
 * source's, across a PTE table's boundary and around it.
 */
TEST(fill_into_a_clone_leaves_the_original)
{
	const uint64_t size = 2 * MiB + 3 * PG;
	int a = fresh(mpath("filla"), size), b = fresh(mpath("fillc"), size);
	const char *sp = "/tmp/ioctl_test_fillc";
	uint64_t filled, i;
	char *buf = malloc(size), *pa, *pb;
	int src;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_NE(NULL, buf);
	src = fill_source(sp, size, 0);
	ASSERT_LE(0, src);
	if (mnt_is_persistent()) {
		ASSERT_EQ(-EOPNOTSUPP, morsel_fill(b, src, 0, 0, PG, NULL));
		goto out;
	}
	memset(buf, 'A', size);
	ASSERT_EQ((ssize_t)size, pwrite(a, buf, size, 0));
	ASSERT_EQ(0, morsel_clone(a, b));
	ASSERT_EQ(0, morsel_fill(b, src, 0, PG, 2 * MiB, &filled));
	ASSERT_EQ(2 * MiB, filled);
	pa = map(_metadata, a, size, PROT_READ);
	pb = map(_metadata, b, size, PROT_READ);
	for (i = 0; i < size && pa[i] == 'A'; i++)
		;
	ASSERT_EQ(size, i);
	for (i = 0; i < size; i++) {
		char want = i >= PG && i < PG + 2 * MiB ?
			    (char)fill_byte(i - PG) : 'A';

		if (pb[i] != want)
			break;
	}
	ASSERT_EQ(size, i);
	munmap(pa, size);
	munmap(pb, size);
out:
	free(buf);
	close(src);
	close(a);
	close(b);
	unlink(sp);
	unlink(mpath("filla"));
	unlink(mpath("fillc"));
}

TEST(fill_bad_input)
{
	struct morsel_fill f;
	int fd = fresh(mpath("fillb"), 2 * MiB), rfd, src, wsrc, dir;
	long p0 = counter(_metadata, "pages");

	ASSERT_LE(0, fd);
	src = fill_source("/tmp/ioctl_test_fillb", MiB, 0);
	ASSERT_LE(0, src);
	wsrc = open("/tmp/ioctl_test_fillb", O_WRONLY);
	ASSERT_LE(0, wsrc);
	rfd = morsel_open(mpath("fillb"), O_RDONLY);
	ASSERT_LE(0, rfd);
	dir = open("/tmp", O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dir);
	if (mnt_is_persistent()) {
		ASSERT_EQ(-EOPNOTSUPP, morsel_fill(fd, src, 0, 0, PG, NULL));
		goto out;
	}
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 0, 100, PG, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 0, 0, 100, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 0, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 100, 0, PG, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 1ULL << 63, 0, PG, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, src, 0, 2 * MiB, PG, NULL));
	ASSERT_EQ(-EINVAL, morsel_fill(fd, dir, 0, 0, PG, NULL));
	/* A source on morselfs (its locks are of the morsel's class). */
	ASSERT_EQ(-EINVAL, morsel_fill(fd, rfd, 0, 0, PG, NULL));
	ASSERT_EQ(-EBADF, morsel_fill(fd, wsrc, 0, 0, PG, NULL));
	ASSERT_EQ(-EBADF, morsel_fill(fd, -1, 0, 0, PG, NULL));
	ASSERT_EQ(-EBADF, morsel_fill(rfd, src, 0, 0, PG, NULL));
	memset(&f, 0, sizeof(f));
	f.fd = src;
	f.length = PG;
	f.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_FILL, &f));
	f.flags = 0;
	f.reserved[2] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_FILL, &f));
	f.reserved[2] = 0;
	f.filled = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_FILL, &f));
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_FILL, (void *)16));
	ASSERT_EQ(p0, counter(_metadata, "pages"));
out:
	close(dir);
	close(rfd);
	close(wsrc);
	close(src);
	close(fd);
	unlink("/tmp/ioctl_test_fillb");
	unlink(mpath("fillb"));
}

/* ---- SEAL ---- */

TEST(seal_makes_the_contents_final)
{
	const uint64_t size = 2 * MiB + 3 * PG;
	int fd = fresh(mpath("seal"), size), ro, other = fresh(mpath("sealo"), PG);
	char *w, *r, buf[PG];
	uint64_t i;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, other);
	memset(buf, 'S', sizeof(buf));
	ASSERT_EQ((ssize_t)PG, pwrite(fd, buf, PG, MiB));
	/* A shared mapping that may write: EBUSY, until it goes. */
	w = map(_metadata, fd, size, PROT_READ);
	ASSERT_EQ(-EBUSY, morsel_seal(fd));
	munmap(w, size);
	ASSERT_EQ(0, morsel_seal(fd));
	ASSERT_EQ(0, morsel_seal(fd));		/* sealed already */
	/* Every page below the size is there. */
	ASSERT_EQ(size / PG, st(_metadata, fd).pages);
	ASSERT_ERRNO(EPERM, pwrite(fd, buf, 1, 0));
	ASSERT_ERRNO(EPERM, ftruncate(fd, PG));
	ASSERT_ERRNO(EPERM, ftruncate(fd, 2 * size));
	ASSERT_ERRNO(EPERM, fallocate(fd, 0, 0, 2 * size));
	ASSERT_ERRNO(EPERM, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG));
	ASSERT_EQ(-EPERM, morsel_populate(fd, 0, PG));
	ASSERT_EQ(-EPERM, morsel_evict(fd, 0, PG));
	if (!mnt_is_persistent())
		ASSERT_EQ(-EPERM, morsel_clone(other, fd));
	/* Through a descriptor that may write, not even read-only. */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_EQ(EPERM, errno);
	ro = morsel_open(mpath("seal"), O_RDONLY);
	ASSERT_LE(0, ro);
	r = map(_metadata, ro, size, PROT_READ);
	for (i = 0; i < size && r[i] == (i >= MiB && i < MiB + PG ? 'S' : 0); i++)
		;
	ASSERT_EQ(size, i);
	ASSERT_ERRNO(EACCES, mprotect(r, size, PROT_READ | PROT_WRITE));
	munmap(r, size);
	/* Private mappings copy as ever. */
	r = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
	ASSERT_NE(MAP_FAILED, r);
	r[0] = 'P';
	munmap(r, PG);
	ASSERT_EQ(1, pread(ro, buf, 1, 0));
	ASSERT_EQ(0, buf[0]);
	/* Its attributes and its name are not its contents. */
	ASSERT_EQ(0, fchmod(fd, 0600));
	close(ro);
	close(fd);
	close(other);
	ASSERT_EQ(0, unlink(mpath("seal")));
	unlink(mpath("sealo"));
}

TEST(seal_bad_input)
{
	int fd = fresh(mpath("sealb"), PG), ro, dir, flags = FS_APPEND_FL;

	ASSERT_LE(0, fd);
	ro = morsel_open(mpath("sealb"), O_RDONLY);
	ASSERT_LE(0, ro);
	ASSERT_EQ(-EBADF, morsel_seal(ro));
	dir = open(getenv("MORSEL_MNT"), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, dir);
	ASSERT_EQ(-ENOTTY, morsel_seal(dir));
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	ASSERT_EQ(-EPERM, morsel_seal(fd));
	flags = 0;
	ASSERT_EQ(0, ioctl(fd, FS_IOC_SETFLAGS, &flags));
	ASSERT_EQ(0, morsel_seal(fd));
	close(dir);
	close(ro);
	close(fd);
	unlink(mpath("sealb"));
}

TEST_HARNESS_MAIN
