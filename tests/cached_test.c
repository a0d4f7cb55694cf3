// SPDX-License-Identifier: GPL-2.0
/*
 * cached_test: the file-cache daemon morsel-cached (cached/) and its client
 * in libmorsel (lib/cache.c): loads and hits, the content, stale files,
 * who may get a file, bad files and bad requests, SIGKILL and SIGTERM with
 * clients mapping, warm restarts, the budget and LRU eviction, concurrent
 * clients of one cold file, and no morsel page left behind.  Runs in the VM
 * (vm/run) as root, with a morselfs at $MORSEL_MNT.
 *
 * kselftest harness: every TEST runs in its own child process.  The fixture
 * starts a daemon of its own (cached/morsel-cached, or $MORSEL_CACHED) on a
 * fresh directory of the suite's morselfs, with its socket and the source
 * files in a fresh directory of /tmp; the daemon says it listens through
 * --ready-fd, so nothing sleeps.  Its log goes to a file, shown when a test
 * fails.  No locking: one test, one process (and the children it waits for).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "cache_proto.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define PG 4096ULL

FIXTURE(cached) {
	char tmp[128];		/* /tmp/cached_test.XXXXXX: socket, sources, log */
	char dir[256];		/* the cache, on morselfs */
	char sock[160];
	char log[160];
	pid_t daemon;
};

/* A path in the fixture's /tmp directory, in one of 4 buffers. */
static const char *tpath(FIXTURE_DATA(cached) *self, const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", self->tmp, name);
	return buf[i];
}

static const char *daemon_path(void)
{
	const char *p = getenv("MORSEL_CACHED");

	return p ? p : "cached/morsel-cached";
}

/*
 * Run the daemon with @argv (NULL-terminated, after the program name);
 * stderr to the log.  With @ready, wait until it listens: returns its pid,
 * or -1 if it exited first (*@status its wait status).  Without, wait for
 * it to exit: returns 0 and *@status.
 */
static pid_t run_daemon(const char *log, const char **argv, int ready,
			int *status)
{
	const char *args[16];
	int p[2], n = 0, logfd;
	char byte, fdarg[16];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	args[n++] = daemon_path();
	if (ready) {
		snprintf(fdarg, sizeof(fdarg), "%d", p[1]);
		args[n++] = "--ready-fd";
		args[n++] = fdarg;
	}
	while (*argv && n < 15)
		args[n++] = *argv++;
	args[n] = NULL;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		logfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (logfd >= 0)
			dup2(logfd, 2);
		if (ready)
			fcntl(p[1], F_SETFD, 0);
		execv(args[0], (char **)args);
		_exit(127);
	}
	close(p[1]);
	if (ready && read(p[0], &byte, 1) == 1) {
		close(p[0]);
		return pid;
	}
	close(p[0]);
	waitpid(pid, status, 0);
	return ready ? -1 : 0;
}

/* Start the fixture's daemon with @budget (or none); its pid or -1. */
static pid_t start(FIXTURE_DATA(cached) *self, const char *budget)
{
	const char *argv[] = { "--socket", self->sock, "--dir", self->dir,
			       "-v", budget ? "--budget" : NULL, budget, NULL };
	int status;

	self->daemon = run_daemon(self->log, argv, 1, &status);
	return self->daemon;
}

/* Stop it with @sig; the wait status. */
static int stop(FIXTURE_DATA(cached) *self, int sig)
{
	int status = -1;

	if (self->daemon <= 0)
		return -1;
	kill(self->daemon, sig);
	waitpid(self->daemon, &status, 0);
	self->daemon = 0;
	return status;
}

FIXTURE_SETUP(cached)
{
	snprintf(self->tmp, sizeof(self->tmp), "/tmp/cached_test.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->tmp));
	ASSERT_EQ(0, chmod(self->tmp, 0755));	/* nobody reaches the socket */
	snprintf(self->dir, sizeof(self->dir), "%s", mpath("cached_test.XXXXXX"));
	ASSERT_NE(NULL, mkdtemp(self->dir));
	snprintf(self->sock, sizeof(self->sock), "%s/sock", self->tmp);
	snprintf(self->log, sizeof(self->log), "%s/log", self->tmp);
	ASSERT_LT(0, start(self, NULL));
}

static void rm_files(const char *dir)
{
	char p[512];
	struct dirent *d;
	DIR *dd = opendir(dir);

	while (dd && (d = readdir(dd))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, d->d_name);
		unlink(p);
	}
	if (dd)
		closedir(dd);
}

FIXTURE_TEARDOWN(cached)
{
	char line[512];
	FILE *f;

	stop(self, SIGKILL);
	if (_metadata->exit_code && (f = fopen(self->log, "r"))) {
		while (fgets(line, sizeof(line), f))
			TH_LOG("%s", strtok(line, "\n"));
		fclose(f);
	}
	rm_files(self->dir);
	rmdir(self->dir);
	rm_files(self->tmp);
	rmdir(self->tmp);
}

/* Byte @i of the test pattern number @seed. */
static unsigned char pat(uint64_t i, unsigned int seed)
{
	return (unsigned char)(i * 31 + i / PG + seed * 101);
}

/* A file of @size bytes of pattern @seed at @path (mode 0644). */
static int make_file(const char *path, uint64_t size, unsigned int seed)
{
	static unsigned char buf[1 << 20];
	uint64_t off, i, n;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return -1;
	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(buf) ? size - off : sizeof(buf);
		for (i = 0; i < n; i++)
			buf[i] = pat(off + i, seed);
		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

/* The first byte of @p[0, size) that is not pattern @seed; size if none. */
static uint64_t first_diff(const unsigned char *p, uint64_t size,
			   unsigned int seed)
{
	uint64_t i;

	for (i = 0; i < size; i++)
		if (p[i] != pat(i, seed))
			return i;
	return size;
}

/* GET the file @path through a new connection: the morsel fd or -errno. */
static int get(FIXTURE_DATA(cached) *self, const char *path,
	       struct morsel_cache_info *info)
{
	int sock = morsel_cache_connect(self->sock), fd, mfd;

	if (sock < 0)
		return sock;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		mfd = -errno;
	} else {
		mfd = morsel_cache_get(sock, fd, info);
		close(fd);
	}
	close(sock);
	return mfd;
}

static struct morsel_cache_stats stats(FIXTURE_DATA(cached) *self)
{
	struct morsel_cache_stats st;
	int sock = morsel_cache_connect(self->sock);

	memset(&st, 0xff, sizeof(st));
	if (sock >= 0) {
		morsel_cache_stats(sock, &st);
		close(sock);
	}
	return st;
}

/* Files in the cache directory. */
static int cache_files(FIXTURE_DATA(cached) *self)
{
	DIR *d = opendir(self->dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* /sys/fs/morselfs/@name: a global counter of the module. */
static long counter(const char *name)
{
	char p[128];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/fs/morselfs/%s", name);
	f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* What a populated morsel of @size bytes takes (pages and tables). */
static uint64_t cost(uint64_t size)
{
	uint64_t pages = (size + PG - 1) / PG, b = pages, span = PG;
	int order = morsel_order_for_size(size), l;

	for (l = 0; l < order; l++) {
		span *= 512;
		b += (size + span - 1) / span;
	}
	return b * PG;
}

/* For in_child(): a write to @p. */
static void write_byte(volatile char *p)
{
	*p = 1;
}

/* ---- loads, hits, content ---- */

TEST_F(cached, load_then_hit)
{
	const char *src = tpath(self, "five");
	struct morsel_cache_info info;
	struct morsel_cache_stats st;
	struct morsel_stat ms;
	int fd;

	ASSERT_EQ(0, make_file(src, 5 * MiB, 1));
	fd = get(self, src, &info);
	ASSERT_LE(0, fd) TH_LOG("get: %s", strerror(-fd));
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(5 * MiB, info.size);
	EXPECT_EQ(2, info.order);
	EXPECT_EQ(morsel_order_extent(2), info.extent);
	/* The fd is read-only, of a morsel populated through its size. */
	EXPECT_EQ(O_RDONLY, fcntl(fd, F_GETFL) & O_ACCMODE);
	ASSERT_EQ(0, morsel_stat(fd, &ms));
	EXPECT_EQ(5 * MiB, ms.size);
	EXPECT_EQ(5 * MiB / PG, ms.pages);
	EXPECT_EQ(-EBADF, morsel_populate(fd, 0, PG));
	EXPECT_EQ(-EBADF, morsel_bind(fd, 0x600000000000ULL));
	close(fd);

	fd = get(self, src, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(MORSEL_CACHE_HIT, info.flags);
	EXPECT_EQ(5 * MiB, info.size);
	close(fd);

	st = stats(self);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(1, st.loads);
	EXPECT_EQ(1, st.hits);
	EXPECT_EQ(0, st.evictions);
	EXPECT_EQ(0, st.refusals);
	EXPECT_EQ(cost(5 * MiB), st.bytes);
	EXPECT_LT(0, st.budget);
	EXPECT_EQ(1, cache_files(self));
}

TEST_F_TIMEOUT(cached, content_equals_file, 120)
{
	const uint64_t size = 37 * MiB + 123;
	const char *src = tpath(self, "odd");
	struct morsel_cache_info info;
	unsigned char *p;
	size_t len;
	int err, fd;

	ASSERT_EQ(0, make_file(src, size, 7));
	err = morsel_cache_map_path(self->sock, src, (void **)&p, &len);
	ASSERT_EQ(0, err) TH_LOG("map: %s", strerror(-err));
	EXPECT_EQ(size, len);
	EXPECT_EQ(0, (uintptr_t)p & (morsel_order_extent(2) - 1));
	EXPECT_EQ(size, first_diff(p, size, 7));
	/* The rest of the last page reads zeros. */
	EXPECT_EQ(0, p[size]);
	EXPECT_EQ(0, p[((size + PG - 1) & ~(PG - 1)) - 1]);
	/* Read-only: a write is SIGSEGV. */
	EXPECT_EQ(SIGSEGV, in_child(write_byte, (volatile char *)p + 5));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));

	/* The same through an fd, as a hit; a tiny file is order 0. */
	fd = open(src, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_cache_map(self->sock, fd, (void **)&p, &len));
	close(fd);
	EXPECT_EQ(size, first_diff(p, size, 7));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	ASSERT_EQ(0, make_file(tpath(self, "tiny"), 100, 3));
	fd = get(self, tpath(self, "tiny"), &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.order);
	EXPECT_EQ(PG, info.extent);
	close(fd);
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, "tiny"),
					   (void **)&p, &len));
	EXPECT_EQ(100, len);
	EXPECT_EQ(100, first_diff(p, 100, 3));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	EXPECT_EQ(-EINVAL, morsel_cache_unmap(p, 0));
}

TEST_HARNESS_MAIN
