// SPDX-License-Identifier: GPL-2.0
/*
 * cached_test: the file-cache daemon morsel-cached (cached/) and its client
 * in libmorsel (lib/cache.c): loads and hits, the content, stale files,
 * identities that cannot be forged (a reused device and inode, a rewrite
 * that restores the mtime, format-1 entries, FUSE and --refuse-fs, aging),
 * who may get a file, bad files and bad requests, SIGKILL and SIGTERM with
 * clients mapping, warm restarts, the budget as a bound (held descriptors,
 * retired versions, per-uid shares, sparse files, what a restart cannot
 * index), LRU eviction, descriptors (2000 files, RLIMIT_NOFILE), the
 * connection limits, concurrent clients of one cold file, and no morsel
 * page left behind.  Runs in the VM (vm/run) as root, with a morselfs at
 * $MORSEL_MNT; with vm/run --pmem also the inode reuse of ext4 on
 * $MORSEL_PMEM (review 2026-11b H5; skipped without).
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
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
	const char *args[24];
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
	while (*argv && n < 23)
		args[n++] = *argv++;
	args[n] = NULL;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		logfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (logfd >= 0) {
			dup2(logfd, 1);
			dup2(logfd, 2);
		}
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

/* Start the fixture's daemon with the options @extra; its pid or -1. */
static pid_t start_opts(FIXTURE_DATA(cached) *self, const char *const *extra)
{
	const char *argv[20] = { "--socket", self->sock, "--dir", self->dir,
				 "-v" };
	int status, n = 5;

	while (extra && *extra && n < 19)
		argv[n++] = *extra++;
	argv[n] = NULL;
	self->daemon = run_daemon(self->log, argv, 1, &status);
	return self->daemon;
}

/* Start the fixture's daemon with @budget (or none); its pid or -1. */
static pid_t start(FIXTURE_DATA(cached) *self, const char *budget)
{
	const char *extra[] = { budget ? "--budget" : NULL, budget, NULL };

	return start_opts(self, extra);
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
	if (_metadata->exit_code && _metadata->exit_code != KSFT_SKIP &&
	    (f = fopen(self->log, "r"))) {
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

/*
 * Files in the cache directory: the cached entries, or with @retired the
 * retired ones (r.*: out of the index, still held by a client).
 */
static int dir_files(FIXTURE_DATA(cached) *self, bool retired)
{
	DIR *d = opendir(self->dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += retired ? !strncmp(e->d_name, "r.", 2) :
			       e->d_name[0] != '.' && strncmp(e->d_name, "r.", 2);
	if (d)
		closedir(d);
	return n;
}

static int cache_files(FIXTURE_DATA(cached) *self)
{
	return dir_files(self, false);
}

static int retired_files(FIXTURE_DATA(cached) *self)
{
	return dir_files(self, true);
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

	/* The same through an fd, as a hit; a one-page file is order 0. */
	fd = open(src, O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, morsel_cache_map(self->sock, fd, (void **)&p, &len));
	close(fd);
	EXPECT_EQ(size, first_diff(p, size, 7));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	ASSERT_EQ(0, make_file(tpath(self, "tiny"), PG, 3));
	fd = get(self, tpath(self, "tiny"), &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.order);
	EXPECT_EQ(PG, info.extent);
	close(fd);
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, "tiny"),
					   (void **)&p, &len));
	EXPECT_EQ(PG, len);
	EXPECT_EQ(PG, first_diff(p, PG, 3));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	EXPECT_EQ(-EINVAL, morsel_cache_unmap(p, 0));
}

TEST_F(cached, tool_prints_stats)
{
	char cmd[512], out[1024];
	size_t n;
	FILE *f;
	int fd;

	ASSERT_EQ(0, make_file(tpath(self, "f"), 5 * PG, 1));
	fd = get(self, tpath(self, "f"), NULL);
	ASSERT_LE(0, fd);
	close(fd);
	snprintf(cmd, sizeof(cmd), "tools/morsel cache-stats %s", self->sock);
	f = popen(cmd, "r");
	ASSERT_NE(NULL, f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	EXPECT_EQ(0, pclose(f));
	EXPECT_NE(NULL, strstr(out, "\nentries:   1\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nloads:     1\n"));
	EXPECT_NE(NULL, strstr(out, "\nbytes:     24576 (0.0 MiB)\n"));
	/* No daemon there: exit 1. */
	snprintf(cmd, sizeof(cmd), "tools/morsel cache-stats %s 2>/dev/null",
		 tpath(self, "nosock"));
	EXPECT_EQ(1, WEXITSTATUS(system(cmd)));
}

/* ---- stale files ---- */

TEST_F_TIMEOUT(cached, stale_file_reloaded, 60)
{
	const char *src = tpath(self, "data");
	struct morsel_cache_info info;
	struct morsel_cache_stats st;
	struct timespec ts[2];
	unsigned char *old, *cur;
	size_t olen, clen;
	int fd;

	ASSERT_EQ(0, make_file(src, 3 * MiB, 1));
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, src, (void **)&old, &olen));
	/* Rewritten in place: same inode and size, new bytes and mtime. */
	fd = open(src, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, make_file(src, 3 * MiB, 2));
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &ts[0]));
	ts[0].tv_sec += 10;
	ts[1] = ts[0];
	ASSERT_EQ(0, futimens(fd, ts));
	close(fd);

	fd = get(self, src, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);	/* loaded again */
	close(fd);
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, src, (void **)&cur, &clen));
	EXPECT_EQ(3 * MiB, first_diff(cur, 3 * MiB, 2));
	/* The old mapping keeps the old bytes. */
	EXPECT_EQ(3 * MiB, first_diff(old, 3 * MiB, 1));
	st = stats(self);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(2, st.loads);
	EXPECT_EQ(2 * cost(3 * MiB), st.bytes);	/* the old one is mapped */
	EXPECT_EQ(1, cache_files(self));	/* but gone from the directory */

	/* Unmapped, the old morsel goes; the current one stays. */
	EXPECT_EQ(0, morsel_cache_unmap(old, olen));
	st = stats(self);
	EXPECT_EQ(cost(3 * MiB), st.bytes);
	EXPECT_EQ(1, st.entries);
	/* A shorter file of the same inode is stale too. */
	ASSERT_EQ(0, truncate(src, MiB));
	fd = get(self, src, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(MiB, info.size);
	EXPECT_EQ(1, info.order);
	close(fd);
	EXPECT_EQ(MiB, first_diff(cur, MiB, 2));
	EXPECT_EQ(0, morsel_cache_unmap(cur, clen));
	st = stats(self);
	EXPECT_EQ(cost(MiB), st.bytes);
	EXPECT_EQ(3, st.loads);
}

/* ---- who may get a file ---- */

/* As nobody: the result of mapping @path, or -1 if it could not be run. */
static int nobody_maps(const char *sock, const char *path)
{
	int status, p[2], err = -1;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		void *a;
		size_t len;

		close(p[0]);
		err = become_nobody() ? -EPERM :
		      morsel_cache_map_path(sock, path, &a, &len);
		if (!err)
			err = ((char *)a)[0] == (char)pat(0, 1) ? 0 : -EBADMSG;
		_exit(write(p[1], &err, sizeof(err)) == sizeof(err) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], &err, sizeof(err)) != sizeof(err))
		err = -1;
	close(p[0]);
	waitpid(pid, &status, 0);
	return err;
}

/*
 * What another user learns of a file both may read (review 2026-11b L9):
 * not that someone loaded it before (no HIT flag: that is for the user
 * who loaded it), not how many map it (MORSEL_IOC_STAT and MAPPINGS on
 * the morsel it gets count its own mappings only: it may not write the
 * copy), and no STATS (EACCES: root's and the daemon's user's only).
 * Timing still tells a hit from a load, as it does for the page cache.
 */
TEST_F(cached, other_users_learn_nothing_of_use)
{
	const char *path = tpath(self, "shared");
	struct morsel_cache_info info;
	struct morsel_cache_stats st;
	size_t len;
	void *a;
	int fd, status;
	pid_t pid;

	ASSERT_EQ(0, make_file(path, 2 * MiB + 1, 1));
	fd = get(self, path, &info);	/* root loads it ... */
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags & MORSEL_CACHE_HIT);
	close(fd);
	fd = get(self, path, &info);	/* ... and sees its own hit */
	ASSERT_LE(0, fd);
	EXPECT_EQ(MORSEL_CACHE_HIT, info.flags & MORSEL_CACHE_HIT);
	ASSERT_EQ(0, morsel_map(fd, NULL, PROT_READ, 0, &a, &len));	/* held */
	pid = fork();
	if (!pid) {
		struct morsel_cache_stats st;
		struct morsel_stat ms;
		int sock, src, mfd;
		void *b;

		/* The mapping fork gave it would be its own: only root's stays. */
		if (morsel_unmap(a, len) || become_nobody())
			_exit(2);
		sock = morsel_cache_connect(self->sock);
		src = open(path, O_RDONLY | O_CLOEXEC);
		if (sock < 0 || src < 0)
			_exit(3);
		mfd = morsel_cache_get(sock, src, &info);
		if (mfd < 0)
			_exit(4);
		if (info.flags & MORSEL_CACHE_HIT)
			_exit(5);
		if (morsel_stat(mfd, &ms) || ms.mappings != 0 ||
		    morsel_mappings(mfd, NULL, 0) != 0)
			_exit(6);
		if (morsel_map(mfd, NULL, PROT_READ, 0, &b, &len) ||
		    morsel_stat(mfd, &ms) || ms.mappings != 1 ||
		    morsel_mappings(mfd, NULL, 0) != 1)
			_exit(7);
		if (morsel_cache_stats(sock, &st) != -EACCES)
			_exit(8);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	st = stats(self);	/* root may; nobody's request was a hit */
	EXPECT_EQ(1, st.loads);
	EXPECT_EQ(2, st.hits);
	EXPECT_EQ(0, morsel_unmap(a, len));
	close(fd);
}

TEST_F(cached, refused_without_read_permission)
{
	const char *secret = tpath(self, "secret"), *open_ = tpath(self, "open");
	struct morsel_cache_stats st;
	char cached[512];
	struct dirent *d;
	DIR *dd;
	int sock, fd;

	ASSERT_EQ(0, make_file(secret, 2 * MiB + 1, 1));
	ASSERT_EQ(0, chmod(secret, 0600));
	ASSERT_EQ(0, make_file(open_, 2 * MiB + 1, 1));
	/* nobody gets a file it can read ... */
	EXPECT_EQ(0, nobody_maps(self->sock, open_));
	/* ... but not one it cannot, even once it is cached. */
	fd = get(self, secret, NULL);
	ASSERT_LE(0, fd);
	close(fd);
	EXPECT_EQ(-EACCES, nobody_maps(self->sock, secret));
	/* Nor the cached morsel itself, from the 0700 directory. */
	dd = opendir(self->dir);
	ASSERT_NE(NULL, dd);
	cached[0] = 0;
	while ((d = readdir(dd)))
		if (d->d_name[0] != '.')
			snprintf(cached, sizeof(cached), "%s/%s", self->dir,
				 d->d_name);
	closedir(dd);
	ASSERT_NE(0, cached[0]);
	EXPECT_EQ(-EACCES, nobody_maps(self->sock, cached));

	/* A descriptor that cannot read is no proof: O_PATH, O_WRONLY. */
	sock = morsel_cache_connect(self->sock);
	ASSERT_LE(0, sock);
	fd = open(secret, O_PATH);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EACCES, morsel_cache_get(sock, fd, NULL));
	close(fd);
	fd = open(secret, O_WRONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EACCES, morsel_cache_get(sock, fd, NULL));
	close(fd);
	EXPECT_EQ(-EBADF, morsel_cache_get(sock, -1, NULL));
	close(sock);
	st = stats(self);
	EXPECT_EQ(2, st.refusals);
	EXPECT_EQ(2, st.loads);
}

TEST_F(cached, bad_files_einval)
{
	const char *empty = tpath(self, "empty");
	int sock, fd, p[2], mfd;

	sock = morsel_cache_connect(self->sock);
	ASSERT_LE(0, sock);
	ASSERT_EQ(0, make_file(empty, 0, 0));
	fd = open(empty, O_RDONLY);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, fd, NULL));
	close(fd);
	fd = open(self->tmp, O_RDONLY | O_DIRECTORY);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, fd, NULL));
	close(fd);
	fd = open("/dev/null", O_RDONLY);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, fd, NULL));
	close(fd);
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, p[0], NULL));
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, sock, NULL));
	/* A morsel, and a morsel the daemon handed out. */
	mfd = fresh(mpath("cached_test_src"), 2 * MiB);
	ASSERT_LE(0, mfd);
	ASSERT_EQ(2 * MiB, pwrite(mfd, "x", 1, 2 * MiB - 1) + 2 * MiB - 1);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, mfd, NULL));
	close(mfd);
	unlink(mpath("cached_test_src"));
	ASSERT_EQ(0, make_file(tpath(self, "f"), 10 * KiB, 1));
	mfd = get(self, tpath(self, "f"), NULL);
	ASSERT_LE(0, mfd);
	EXPECT_EQ(-EINVAL, morsel_cache_get(sock, mfd, NULL));
	close(mfd);
	/* A file shorter than its size says (sysfs): a short read. */
	fd = open("/sys/fs/morselfs/pages", O_RDONLY);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-EIO, morsel_cache_get(sock, fd, NULL));
	close(fd);
	EXPECT_EQ(8, stats(self).refusals);
	EXPECT_EQ(1, stats(self).entries);
	EXPECT_EQ(1, cache_files(self));
	close(sock);
}

/* Send @len bytes of @req with @nfd copies of @fd; the reply's error. */
static int raw(int sock, const void *req, size_t len, int fd, int nfd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)req, len };
	struct morsel_cache_reply rep;
	struct msghdr msg;
	struct cmsghdr *c;
	int i, got;

	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfd) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfd);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfd);
		for (i = 0; i < nfd; i++)
			memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(int));
	}
	if (sendmsg(sock, &msg, 0) != (ssize_t)len)
		return -1;
	memset(&msg, 0, sizeof(msg));
	iov.iov_base = &rep;
	iov.iov_len = sizeof(rep);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != sizeof(rep) ||
	    rep.magic != MORSEL_CACHE_MAGIC)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (c) {
		memcpy(&got, CMSG_DATA(c), sizeof(int));
		close(got);
	}
	return rep.error;
}

TEST_F(cached, bad_requests)
{
	struct morsel_cache_req req, good;
	struct morsel_cache_stats st;
	char big[64];
	int sock, fd;

	ASSERT_EQ(0, make_file(tpath(self, "f"), 10 * KiB, 1));
	fd = open(tpath(self, "f"), O_RDONLY);
	ASSERT_LE(0, fd);
	sock = morsel_cache_connect(self->sock);
	ASSERT_LE(0, sock);
	memset(&good, 0, sizeof(good));
	good.magic = MORSEL_CACHE_MAGIC;
	good.version = MORSEL_CACHE_VERSION;
	good.op = MORSEL_CACHE_OP_GET;

	EXPECT_EQ(0, raw(sock, &good, sizeof(good), fd, 1));
	EXPECT_EQ(EPROTO, raw(sock, &good, 8, fd, 1));		/* short */
	memset(big, 0, sizeof(big));
	memcpy(big, &good, sizeof(good));
	EXPECT_EQ(EPROTO, raw(sock, big, sizeof(big), fd, 1));	/* long */
	req = good;
	req.magic++;
	EXPECT_EQ(EPROTO, raw(sock, &req, sizeof(req), fd, 1));
	req = good;
	req.version = 2;
	EXPECT_EQ(EPROTONOSUPPORT, raw(sock, &req, sizeof(req), fd, 1));
	req = good;
	req.op = 9;
	EXPECT_EQ(EOPNOTSUPP, raw(sock, &req, sizeof(req), fd, 1));
	req = good;
	req.flags = 1;
	EXPECT_EQ(EINVAL, raw(sock, &req, sizeof(req), fd, 1));
	req = good;
	req.reserved[4] = 1;
	EXPECT_EQ(EINVAL, raw(sock, &req, sizeof(req), fd, 1));
	EXPECT_EQ(EBADF, raw(sock, &good, sizeof(good), -1, 0));
	EXPECT_EQ(EINVAL, raw(sock, &good, sizeof(good), fd, 2));
	req = good;
	req.op = MORSEL_CACHE_OP_STATS;
	EXPECT_EQ(EINVAL, raw(sock, &req, sizeof(req), fd, 1));
	EXPECT_EQ(0, raw(sock, &req, sizeof(req), -1, 0));
	/* The connection still serves, and the daemon kept no fd of ours. */
	ASSERT_EQ(0, morsel_cache_stats(sock, &st));
	EXPECT_EQ(1, st.loads);
	close(sock);
	close(fd);
	/* A client that hangs up mid-way is no trouble either. */
	sock = morsel_cache_connect(self->sock);
	ASSERT_LE(0, sock);
	ASSERT_EQ(sizeof(good), send(sock, &good, sizeof(good), 0));
	close(sock);
	EXPECT_EQ(1, stats(self).loads);
	/* Client-side errors: no daemon, a path too long. */
	EXPECT_EQ(-ENOENT, morsel_cache_connect(tpath(self, "nosock")));
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	{
		char longp[200];

		memset(longp, 'y', sizeof(longp) - 1);
		longp[sizeof(longp) - 1] = 0;
		EXPECT_EQ(-ENAMETOOLONG, morsel_cache_connect(longp));
	}
	setenv("MORSEL_CACHED_SOCKET", self->sock, 1);
	sock = morsel_cache_connect(NULL);
	EXPECT_LE(0, sock);
	close(sock);
}

/* ---- the daemon going away ---- */

TEST_F_TIMEOUT(cached, sigkill_keeps_mappings_restart_hits, 60)
{
	const char *src = tpath(self, "data");
	struct morsel_cache_info info;
	struct morsel_cache_stats st;
	unsigned char *p;
	size_t len;
	int status, fd, sock, err;

	ASSERT_EQ(0, make_file(src, 9 * MiB + 5, 4));
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, src, (void **)&p, &len));
	sock = morsel_cache_connect(self->sock);
	ASSERT_LE(0, sock);
	status = stop(self, SIGKILL);
	ASSERT_TRUE(WIFSIGNALED(status));
	/* The mapping stays valid; the connection reports the daemon gone. */
	EXPECT_EQ(9 * MiB + 5, first_diff(p, 9 * MiB + 5, 4));
	fd = open(src, O_RDONLY);
	/* (ECONNRESET if the daemon had not accepted the connection yet) */
	err = morsel_cache_get(sock, fd, NULL);
	EXPECT_TRUE(err == -EPIPE || err == -ECONNRESET) TH_LOG("%d", err);
	err = morsel_cache_stats(sock, &st);
	EXPECT_TRUE(err == -EPIPE || err == -ECONNRESET) TH_LOG("%d", err);
	close(fd);
	close(sock);
	EXPECT_EQ(-ECONNREFUSED, morsel_cache_connect(self->sock));

	/* Restarted (on the stale socket), it finds its cache again. */
	ASSERT_LT(0, start(self, NULL));
	fd = get(self, src, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(MORSEL_CACHE_HIT, info.flags);
	close(fd);
	st = stats(self);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(0, st.loads);
	EXPECT_EQ(1, st.hits);
	EXPECT_EQ(cost(9 * MiB + 5), st.bytes);
	EXPECT_EQ(9 * MiB + 5, first_diff(p, 9 * MiB + 5, 4));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
}

TEST_F(cached, sigterm_exits_cleanly_warm_restart)
{
	struct morsel_cache_info info;
	struct stat st;
	int status, fd;
	void *p;
	size_t len;

	ASSERT_EQ(0, make_file(tpath(self, "f"), 3 * MiB, 1));
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, "f"), &p, &len));
	status = stop(self, SIGTERM);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, lstat(self->sock, &st));	/* the socket is gone */
	EXPECT_EQ(1, cache_files(self));	/* the cache stays */
	EXPECT_EQ(3 * MiB, first_diff(p, 3 * MiB, 1));
	ASSERT_LT(0, start(self, NULL));
	fd = get(self, tpath(self, "f"), &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(MORSEL_CACHE_HIT, info.flags);
	close(fd);
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	/* SIGINT too. */
	status = stop(self, SIGINT);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

/*
 * Out of descriptors, the daemon accepts and drops each connection it
 * cannot serve (that client sees the connection end) instead of leaving it
 * pending, which would keep the listening socket readable and spin its
 * poll loop while the client waited forever; once descriptors are free it
 * serves again.  The daemon runs with RLIMIT_NOFILE 24 and 40 clients
 * connect at once.
 */
TEST_F_TIMEOUT(cached, out_of_descriptors_refuses_and_recovers, 60)
{
	struct rlimit rl = { 24, 24 }, old;
	struct morsel_cache_stats st;
	int socks[40], served = 0, dropped = 0, i, fd;
	static char logbuf[1 << 16];
	ssize_t n;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_LT(0, start(self, NULL));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	for (i = 0; i < 40; i++) {
		socks[i] = morsel_cache_connect(self->sock);
		ASSERT_LE(0, socks[i]) TH_LOG("connect %d: %s", i, strerror(-socks[i]));
	}
	/* Each request is answered or its connection ends: none hangs. */
	for (i = 0; i < 40; i++) {
		if (morsel_cache_stats(socks[i], &st) == 0)
			served++;
		else
			dropped++;
	}
	EXPECT_LT(0, served);
	EXPECT_LT(0, dropped);
	for (i = 0; i < 40; i++)
		close(socks[i]);
	/* Served again, a load included. */
	ASSERT_EQ(0, make_file(tpath(self, "f"), 1 * MiB, 3));
	fd = get(self, tpath(self, "f"), NULL);
	EXPECT_LE(0, fd) TH_LOG("get: %s", strerror(-fd));
	if (fd >= 0)
		close(fd);
	fd = open(self->log, O_RDONLY);
	ASSERT_LE(0, fd);
	n = read(fd, logbuf, sizeof(logbuf) - 1);
	close(fd);
	ASSERT_LT(0, n);
	logbuf[n] = 0;
	EXPECT_NE(NULL, strstr(logbuf, "accept: Too many open files"))
		TH_LOG("%s", logbuf);
}

/*
 * SIGTERM while a load runs: the load stops at its next chunk (its client
 * gets ECANCELED) or has just finished; either way the daemon exits 0 and
 * the directory holds only complete files.  The test waits for the load
 * to have begun by watching the module's page counter (each chunk's pages
 * appear once read), not by sleeping.  The client checks the descriptor
 * it got (its size) and reports.
 */
TEST_F_TIMEOUT(cached, sigterm_during_load, 120)
{
	const uint64_t size = 128 * MiB;
	long pages0 = morsel_counter("pages");
	int go[2], res[2], status, rep[2] = { 1, 0 };
	pid_t pid;

	ASSERT_EQ(0, make_file(tpath(self, "big"), size, 9));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(res));
	pid = fork();
	if (pid == 0) {
		struct stat st;
		char c;
		int r[2];

		if (read(go[0], &c, 1) != 1)
			_exit(1);
		r[0] = get(self, tpath(self, "big"), NULL);
		r[1] = r[0] >= 0 && !fstat(r[0], &st) &&
		       (uint64_t)st.st_size == size;
		_exit(write(res[1], r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(res[1]);
	ASSERT_EQ(1, write(go[1], "g", 1));
	while (morsel_counter("pages") <= pages0)
		sched_yield();
	status = stop(self, SIGTERM);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(sizeof(rep), read(res[0], rep, sizeof(rep)));
	waitpid(pid, &status, 0);
	TH_LOG("the client got %d", rep[0]);
	EXPECT_TRUE(rep[0] == -ECANCELED || rep[0] >= 0);
	if (rep[0] >= 0) {
		EXPECT_EQ(1, cache_files(self));
		EXPECT_EQ(1, rep[1]);	/* the whole file */
	} else {
		EXPECT_EQ(0, cache_files(self));
	}
	rm_files(self->dir);
	EXPECT_EQ(pages0, morsel_counter("pages"));
}

TEST_F(cached, bad_options)
{
	const char *cases[][6] = {
		{ "--budget", "0", NULL },
		{ "--budget", "12X", NULL },
		{ "--budget", "-5M", NULL },
		{ "--budget", "99999999999T", NULL },
		{ "--ready-fd", "99", NULL },
		{ "--ready-fd", "x", NULL },
		{ "--frobnicate", NULL },
		{ "--user-budget", "0", NULL },
		{ "--min-size", "1X", NULL },
		{ "--max-age", "5y", NULL },
		{ "--idle-timeout", "-1", NULL },
		{ "--max-user-conns", "0", NULL },
		{ "--max-user-conns", "5000", NULL },
		{ "--refuse-fs", "nosuchfs", NULL },
		{ "--refuse-fs", "0", NULL },
		{ "--socket", NULL },
		{ "--load-threads", "0", NULL },
		{ "--load-threads", "65", NULL },
		{ "--pressure", "10ms/100ms", NULL },
		{ "--pressure", "3s/2s", NULL },
		{ "--pressure", "50ms", NULL },
		{ "--pressure", "0/1s", NULL },
		{ "--pressure-free", "0%", NULL },
		{ "--pressure-free", "100%", NULL },
		{ "--pressure-free", "0", NULL },
		{ "--pool-wait", "soon", NULL },
		{ "extra", NULL },
	};
	const char *notfs[] = { "--dir", "/tmp", "--socket", "/tmp/cached_test_x",
				NULL };
	const char *twice[] = { "--dir", self->dir, "--socket", self->sock, NULL };
	const char *notpool[] = { "--dir", self->dir, "--socket", "/tmp/cached_test_y",
				  "--pool", "/tmp", NULL };
	const char *help[] = { "--help", NULL };
	unsigned int i;
	int status;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_EQ(0, run_daemon(self->log, cases[i], 0, &status));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2)
			TH_LOG("case %u (%s): status %#x", i, cases[i][0], status);
	}
	/* Not morselfs; a daemon already listening: exit 1, nothing left. */
	ASSERT_EQ(0, run_daemon(self->log, notfs, 0, &status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	EXPECT_EQ(-1, access("/tmp/cached_test_x", F_OK));
	/* --pool not on morselfs (docs/errors.md C29): before the directory. */
	ASSERT_EQ(0, run_daemon(self->log, notpool, 0, &status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	EXPECT_EQ(-1, access("/tmp/cached_test_y", F_OK));
	ASSERT_EQ(0, run_daemon(self->log, twice, 0, &status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	EXPECT_EQ(0, stats(self).loads);	/* the first one still serves */
	ASSERT_EQ(0, run_daemon("/dev/null", help, 0, &status));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- the budget ---- */

/* GET @name; its flags, or -errno. */
static int get_flags(FIXTURE_DATA(cached) *self, const char *name)
{
	struct morsel_cache_info info;
	int fd = get(self, tpath(self, name), &info);

	if (fd < 0)
		return fd;
	close(fd);
	return (int)info.flags;
}

TEST_F_TIMEOUT(cached, eviction_lru_under_budget, 60)
{
	const char *names[] = { "a", "b", "c", "d" };
	struct morsel_cache_stats st;
	unsigned int i;

	stop(self, SIGTERM);
	ASSERT_LT(0, start(self, "10M"));	/* three 3 MiB files fit */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), 3 * MiB, i));
	ASSERT_EQ(0, make_file(tpath(self, "big"), 11 * MiB, 0));
	EXPECT_EQ(0, get_flags(self, "a"));
	EXPECT_EQ(0, get_flags(self, "b"));
	EXPECT_EQ(0, get_flags(self, "c"));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));
	EXPECT_EQ(0, stats(self).evictions);
	EXPECT_EQ(0, get_flags(self, "d"));	/* evicts b, the LRU */
	st = stats(self);
	EXPECT_EQ(1, st.evictions);
	EXPECT_EQ(3, st.entries);
	EXPECT_EQ(3 * cost(3 * MiB), st.bytes);
	EXPECT_EQ(10 * MiB, st.budget);
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "c"));
	EXPECT_EQ(0, get_flags(self, "b"));	/* evicts d */
	EXPECT_EQ(0, get_flags(self, "d"));	/* evicts a */
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "c"));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "b"));
	EXPECT_EQ(3, stats(self).evictions);
	EXPECT_EQ(3, cache_files(self));
	/* Larger than the budget: never. */
	EXPECT_EQ(-ENOSPC, get_flags(self, "big"));
	EXPECT_EQ(3, cache_files(self));
}

TEST_F_TIMEOUT(cached, mapped_entries_never_evicted, 60)
{
	const char *names[] = { "a", "b", "c", "d" };
	struct morsel_cache_stats st;
	unsigned char *p[3];
	size_t len[3];
	unsigned int i;
	int fd;

	stop(self, SIGTERM);
	ASSERT_LT(0, start(self, "10M"));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), 3 * MiB, i));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, names[i]),
						   (void **)&p[i], &len[i]));
	EXPECT_EQ(-ENOSPC, get_flags(self, "d"));
	st = stats(self);
	EXPECT_EQ(0, st.evictions);
	EXPECT_EQ(3, st.entries);
	EXPECT_EQ(1, st.refusals);
	/* A descriptor holds an entry as a mapping does ... */
	fd = get(self, tpath(self, "b"), NULL);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, morsel_cache_unmap(p[1], len[1]));
	EXPECT_EQ(-ENOSPC, get_flags(self, "d"));
	/* ... b goes when neither is left, a and c stay. */
	close(fd);
	EXPECT_EQ(0, get_flags(self, "d"));
	EXPECT_EQ(1, stats(self).evictions);
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "c"));
	EXPECT_EQ(3 * MiB, first_diff(p[0], 3 * MiB, 0));
	EXPECT_EQ(3 * MiB, first_diff(p[2], 3 * MiB, 2));
	EXPECT_EQ(3 * cost(3 * MiB), stats(self).bytes);
	EXPECT_EQ(0, morsel_cache_unmap(p[0], len[0]));
	EXPECT_EQ(0, morsel_cache_unmap(p[2], len[2]));
}

/* ---- concurrency ---- */

TEST_F_TIMEOUT(cached, concurrent_cold_file_one_load, 120)
{
	const uint64_t size = 48 * MiB;
	struct morsel_cache_stats st;
	int go[2], i, status, ok = 0;
	pid_t pids[8];

	ASSERT_EQ(0, make_file(tpath(self, "cold"), size, 5));
	ASSERT_EQ(0, pipe(go));
	for (i = 0; i < 8; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			unsigned char *p;
			char c;
			size_t len;

			close(go[1]);
			if (read(go[0], &c, 1) != 0)	/* wait for the start */
				_exit(3);
			if (morsel_cache_map_path(self->sock, tpath(self, "cold"),
						  (void **)&p, &len))
				_exit(1);
			_exit(len == size && first_diff(p, size, 5) == size ? 0 : 2);
		}
		ASSERT_LT(0, pids[i]);
	}
	close(go[0]);
	close(go[1]);	/* all start at once */
	for (i = 0; i < 8; i++) {
		waitpid(pids[i], &status, 0);
		ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	EXPECT_EQ(8, ok);
	st = stats(self);
	EXPECT_EQ(1, st.loads);
	EXPECT_EQ(0, st.refusals);
	EXPECT_EQ(1, st.entries);
	EXPECT_EQ(1, cache_files(self));
}

/* ---- nothing left behind ---- */

TEST_F_TIMEOUT(cached, no_morsel_pages_leak, 120)
{
	long pages0 = morsel_counter("pages"), tables0 = morsel_counter("tables");
	long morsels0 = morsel_counter("morsels");
	const char *names[] = { "a", "b", "c", "d" };
	struct timespec ts[2] = { { 0, 0 }, { 12345, 0 } };
	unsigned int i;
	int status, k;
	pid_t pid;

	ASSERT_LE(0, pages0);
	ASSERT_LE(0, morsels0);
	stop(self, SIGTERM);
	ASSERT_LT(0, start(self, "10M"));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), 3 * MiB + i, i));
	/* Clients map, some exit while mapping, files go stale, evictions. */
	for (k = 0; k < 3; k++) {
		for (i = 0; i < 4; i++) {
			pid = fork();
			if (pid == 0) {
				void *p;
				size_t len;

				if (morsel_cache_map_path(self->sock,
							  tpath(self, names[i]),
							  &p, &len))
					_exit(1);
				if (i % 2)
					morsel_cache_unmap(p, len);
				_exit(0);
			}
			waitpid(pid, &status, 0);
			EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
		}
		ts[1].tv_sec += 100;
		ASSERT_EQ(0, utimensat(AT_FDCWD, tpath(self, "a"), ts, 0));
	}
	EXPECT_LE(3, stats(self).evictions);
	EXPECT_LT(pages0, morsel_counter("pages"));
	/* The daemon exits, the cache is emptied: back to the baseline. */
	status = stop(self, SIGTERM);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_LE(1, cache_files(self));
	rm_files(self->dir);
	EXPECT_EQ(pages0, morsel_counter("pages"));
	EXPECT_EQ(tables0, morsel_counter("tables"));
	EXPECT_EQ(morsels0, morsel_counter("morsels"));
}

/* ---- identity (review 2026-11b H5) ---- */

/*
 * Wait until the clock file systems stamp ctime and birth time with
 * (CLOCK_REALTIME_COARSE) has passed @t: whatever is created or changed
 * after that has a later ctime.  A wait for a condition, not a guess.
 */
static void wait_clock_past(const struct timespec *t)
{
	struct timespec now, nap = { 0, 1000000 };

	for (;;) {
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (now.tv_sec > t->tv_sec ||
		    (now.tv_sec == t->tv_sec && now.tv_nsec > t->tv_nsec))
			return;
		nanosleep(&nap, NULL);
	}
}

/* Map @path through the cache: 0 and its bytes' first difference from
 * pattern @seed in *@diff (size if none), or -errno. */
static int map_check(FIXTURE_DATA(cached) *self, const char *path,
		     uint64_t size, unsigned int seed, uint64_t *diff)
{
	unsigned char *p;
	size_t len;
	int err = morsel_cache_map_path(self->sock, path, (void **)&p, &len);

	if (err)
		return err;
	*diff = len == size ? first_diff(p, size, seed) : (uint64_t)-1;
	morsel_cache_unmap(p, len);
	return 0;
}

/*
 * The attack of the review: a file of a new tmpfs mount gets the device
 * number (anonymous, reused after an unmount) and inode number (tmpfs
 * counts from 1 per instance) of a cached file of an earlier mount; with
 * the size and the mtime set to the old file's, (dev, ino, size, mtime)
 * is the same, and the old key served the old file's bytes.  The mount id
 * (STATX_MNT_ID_UNIQUE) and the ctime are part of the key now: a miss,
 * the new bytes.
 */
TEST_F_TIMEOUT(cached, reused_dev_and_inode_new_mount_misses, 60)
{
	const struct timespec ts[2] = { { 1000000, 0 }, { 1000000, 0 } };
	const char *mnt = tpath(self, "m");
	char v[256];
	struct morsel_cache_info info;
	struct stat st1, st2;
	uint64_t diff;
	int fd;

	snprintf(v, sizeof(v), "%s/v", mnt);
	ASSERT_EQ(0, mkdir(mnt, 0755));
	ASSERT_EQ(0, mount("tmpfs", mnt, "tmpfs", 0, "size=16m"));
	ASSERT_EQ(0, make_file(v, MiB, 1));
	ASSERT_EQ(0, utimensat(AT_FDCWD, v, ts, 0));
	ASSERT_EQ(0, stat(v, &st1));
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	ASSERT_EQ(0, umount(mnt));

	ASSERT_EQ(0, mount("tmpfs", mnt, "tmpfs", 0, "size=16m"));
	wait_clock_past(&st1.st_ctim);
	ASSERT_EQ(0, make_file(v, MiB, 2));
	ASSERT_EQ(0, utimensat(AT_FDCWD, v, ts, 0));
	ASSERT_EQ(0, stat(v, &st2));
	/* The precondition: the old key matches. */
	ASSERT_EQ(st1.st_dev, st2.st_dev);
	ASSERT_EQ(st1.st_ino, st2.st_ino);
	ASSERT_EQ(st1.st_size, st2.st_size);
	ASSERT_EQ(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
	ASSERT_EQ(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);	/* a miss: loaded from the new file */
	close(fd);
	ASSERT_EQ(0, map_check(self, v, MiB, 2, &diff));
	EXPECT_EQ(MiB, diff);
	EXPECT_EQ(2, stats(self).loads);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/*
 * A file rewritten in place, same size, and given its old mtime back
 * (utimensat: any owner may) was a hit with the old bytes.  ctime moved:
 * nobody can set it.
 */
TEST_F_TIMEOUT(cached, rewrite_restoring_mtime_misses, 60)
{
	const char *v = tpath(self, "v");
	struct morsel_cache_info info;
	struct timespec ts[2];
	struct stat st1, st2;
	uint64_t diff;
	int fd;

	ASSERT_EQ(0, make_file(v, 3 * MiB, 1));
	ASSERT_EQ(0, stat(v, &st1));
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	wait_clock_past(&st1.st_ctim);
	ASSERT_EQ(0, make_file(v, 3 * MiB, 2));	/* O_TRUNC: same inode */
	ts[0] = st1.st_atim;
	ts[1] = st1.st_mtim;
	ASSERT_EQ(0, utimensat(AT_FDCWD, v, ts, 0));
	ASSERT_EQ(0, stat(v, &st2));
	ASSERT_EQ(st1.st_ino, st2.st_ino);
	ASSERT_EQ(st1.st_size, st2.st_size);
	ASSERT_EQ(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
	ASSERT_EQ(st1.st_mtim.tv_nsec, st2.st_mtim.tv_nsec);
	ASSERT_NE(0, memcmp(&st1.st_ctim, &st2.st_ctim, sizeof(st1.st_ctim)));
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	ASSERT_EQ(0, map_check(self, v, 3 * MiB, 2, &diff));
	EXPECT_EQ(3 * MiB, diff);
	/* The old version went (nothing held it); one entry. */
	EXPECT_EQ(1, stats(self).entries);
	EXPECT_EQ(cost(3 * MiB), stats(self).bytes);
}

/*
 * The review's test on ext4, which reuses a deleted file's inode number
 * at once (vm/run --pmem: ext4 on $MORSEL_PMEM; skipped without): V
 * cached, deleted, a new file gets V's inode, size and mtime.  A miss.
 */
TEST_F_TIMEOUT(cached, reused_inode_on_ext4_misses, 120)
{
	const struct timespec ts[2] = { { 2000000, 0 }, { 2000000, 0 } };
	const char *dev = getenv("MORSEL_PMEM"), *mnt = tpath(self, "e");
	struct morsel_cache_info info;
	char v[256], cmd[512];
	struct stat st1, st2;
	uint64_t diff;
	int fd;

	if (!dev || !*dev)
		SKIP(return, "no block device for ext4 (vm/run --pmem)");
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F -I 256 %s", dev);
	ASSERT_EQ(0, system(cmd));
	snprintf(v, sizeof(v), "%s/v", mnt);
	ASSERT_EQ(0, mkdir(mnt, 0755));
	ASSERT_EQ(0, mount(dev, mnt, "ext4", 0, NULL));
	ASSERT_EQ(0, make_file(v, MiB, 1));
	ASSERT_EQ(0, utimensat(AT_FDCWD, v, ts, 0));
	ASSERT_EQ(0, stat(v, &st1));
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	ASSERT_EQ(0, unlink(v));
	wait_clock_past(&st1.st_ctim);
	ASSERT_EQ(0, make_file(v, MiB, 2));
	ASSERT_EQ(0, utimensat(AT_FDCWD, v, ts, 0));
	ASSERT_EQ(0, stat(v, &st2));
	ASSERT_EQ(st1.st_dev, st2.st_dev);
	ASSERT_EQ(st1.st_ino, st2.st_ino);
	ASSERT_EQ(st1.st_size, st2.st_size);
	ASSERT_EQ(st1.st_mtim.tv_sec, st2.st_mtim.tv_sec);
	fd = get(self, v, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	ASSERT_EQ(0, map_check(self, v, MiB, 2, &diff));
	EXPECT_EQ(MiB, diff);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/*
 * Entries of format 1 (named c.<dev>.<ino>.<size>.<mtime>, no ctime in
 * the key) are never served after an upgrade: one planted with other
 * bytes under a source's format-1 name was a hit with those bytes.  Now a
 * miss, and the old file goes (nothing holds it).
 */
TEST_F_TIMEOUT(cached, format1_entries_not_served, 60)
{
	const char *src = tpath(self, "s");
	char name[512];
	struct morsel_cache_info info;
	struct stat st;
	uint64_t diff;
	int fd;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_EQ(0, make_file(src, MiB, 1));
	ASSERT_EQ(0, stat(src, &st));
	snprintf(name, sizeof(name), "%s/c.%llx.%llx.%llu.%lld.%09ld", self->dir,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
		 (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	ASSERT_EQ(0, make_file(name, MiB, 9));
	ASSERT_EQ(0, chmod(name, 0400));
	ASSERT_LT(0, start(self, NULL));
	fd = get(self, src, &info);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, info.flags);
	close(fd);
	ASSERT_EQ(0, map_check(self, src, MiB, 1, &diff));
	EXPECT_EQ(MiB, diff);
	EXPECT_EQ(-1, access(name, F_OK));
	EXPECT_EQ(1, cache_files(self));
}

/*
 * FUSE is refused (its server chooses every attribute and answers each
 * read as it likes); the VM has no FUSE, so the same path is tested with
 * --refuse-fs tmpfs (by name and by number): EMEDIUMTYPE.
 */
TEST_F_TIMEOUT(cached, refused_file_system_emediumtype, 60)
{
	const char *by_name[] = { "--refuse-fs", "tmpfs", NULL };
	const char *by_number[] = { "--refuse-fs", "0x01021994", NULL };
	struct morsel_cache_stats st;
	int fd;

	ASSERT_EQ(0, make_file(tpath(self, "f"), MiB, 1));
	fd = get(self, tpath(self, "f"), NULL);	/* tmpfs: served by default */
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	rm_files(self->dir);
	ASSERT_LT(0, start_opts(self, by_name));
	EXPECT_EQ(-EMEDIUMTYPE, get(self, tpath(self, "f"), NULL));
	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, by_number));
	EXPECT_EQ(-EMEDIUMTYPE, get(self, tpath(self, "f"), NULL));
	st = stats(self);
	EXPECT_EQ(0, st.loads);
	EXPECT_EQ(1, st.refusals);
	EXPECT_EQ(0, cache_files(self));
}

/*
 * --max-age: an entry unused for longer goes at the next request (a
 * miss), one that a client holds counts as used and stays.  The test
 * waits for the clock to pass the age, not for a guessed time.
 */
TEST_F_TIMEOUT(cached, unused_entries_age_out, 60)
{
	const char *opts[] = { "--max-age", "1", NULL };
	struct timespec after, now, nap = { 0, 10000000 };
	unsigned char *p;
	size_t len;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, opts));
	ASSERT_EQ(0, make_file(tpath(self, "a"), MiB, 1));
	ASSERT_EQ(0, make_file(tpath(self, "b"), MiB, 2));
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, "a"),
					   (void **)&p, &len));
	EXPECT_EQ(0, get_flags(self, "b"));
	clock_gettime(CLOCK_REALTIME, &after);
	do {
		nanosleep(&nap, NULL);
		clock_gettime(CLOCK_REALTIME, &now);
	} while ((now.tv_sec - after.tv_sec) * 1000000000LL +
		 (now.tv_nsec - after.tv_nsec) <= 1000000000LL);
	EXPECT_EQ(0, get_flags(self, "b"));	/* expired: loaded again */
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));	/* mapped */
	EXPECT_EQ(3, stats(self).loads);
	EXPECT_EQ(1, stats(self).evictions);
	EXPECT_EQ(MiB, first_diff(p, MiB, 1));
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
}

/* ---- the budget is a bound (review 2026-11b M4) ---- */

/*
 * A client that holds the descriptors it got, without mapping them,
 * holds their memory: those entries are not evicted (the old daemon
 * evicted them and their pages lived on outside the budget), the next
 * load is ENOSPC, and the module's page count never passes the budget.
 */
TEST_F_TIMEOUT(cached, held_descriptors_stay_in_budget, 60)
{
	const char *names[] = { "a", "b", "c", "d" };
	long pages0 = morsel_counter("pages");
	int fds[3], i;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start(self, "10M"));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), 3 * MiB, i));
	for (i = 0; i < 3; i++) {
		fds[i] = get(self, tpath(self, names[i]), NULL);
		ASSERT_LE(0, fds[i]);
	}
	EXPECT_EQ(-ENOSPC, get_flags(self, "d"));
	EXPECT_EQ(0, stats(self).evictions);
	EXPECT_GE((long)(10 * MiB / PG), morsel_counter("pages") - pages0);
	/* The first one let go: evicted for d, its pages freed. */
	close(fds[0]);
	EXPECT_EQ(0, get_flags(self, "d"));
	EXPECT_EQ(1, stats(self).evictions);
	EXPECT_EQ(3 * cost(3 * MiB), stats(self).bytes);
	EXPECT_EQ((long)(3 * 3 * MiB / PG), morsel_counter("pages") - pages0);
	close(fds[1]);
	close(fds[2]);
}

/*
 * A stale version that a client holds by a descriptor (not mapped) stays
 * in the budget until it is closed, then its pages are freed.
 */
TEST_F_TIMEOUT(cached, stale_version_held_counts, 60)
{
	const char *v = tpath(self, "v");
	long pages0 = morsel_counter("pages");
	struct stat st;
	int fd;

	ASSERT_EQ(0, make_file(v, 3 * MiB, 1));
	ASSERT_EQ(0, stat(v, &st));
	fd = get(self, v, NULL);
	ASSERT_LE(0, fd);
	wait_clock_past(&st.st_ctim);
	ASSERT_EQ(0, make_file(v, 3 * MiB, 2));
	EXPECT_EQ(0, get_flags(self, "v"));
	EXPECT_EQ(2 * cost(3 * MiB), stats(self).bytes);
	EXPECT_EQ(1, stats(self).entries);
	EXPECT_EQ(1, retired_files(self));
	EXPECT_EQ((long)(2 * 3 * MiB / PG), morsel_counter("pages") - pages0);
	close(fd);
	EXPECT_EQ(cost(3 * MiB), stats(self).bytes);
	EXPECT_EQ(0, retired_files(self));
	EXPECT_EQ((long)(3 * MiB / PG), morsel_counter("pages") - pages0);
}

/*
 * An O_PATH descriptor, which a client can make from the one it got
 * (/proc/self/fd), takes no part in leases: the entry looks unheld and is
 * evicted, and its pages live on behind that descriptor.  The daemon
 * counts the cache file system's own use too, so it evicts one more entry
 * and the module's page count stays within the budget.
 */
TEST_F_TIMEOUT(cached, o_path_holder_stays_in_budget, 60)
{
	const char *names[] = { "a", "b", "c", "d" };
	long pages0 = morsel_counter("pages");
	char proc[64];
	int fd, pa, i;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start(self, "10M"));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), 3 * MiB, i));
	fd = get(self, tpath(self, "a"), NULL);
	ASSERT_LE(0, fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	pa = open(proc, O_PATH | O_CLOEXEC);
	ASSERT_LE(0, pa);
	close(fd);
	EXPECT_EQ(0, get_flags(self, "b"));
	EXPECT_EQ(0, get_flags(self, "c"));
	EXPECT_EQ(0, get_flags(self, "d"));	/* evicts a, and b for it */
	EXPECT_EQ(2, stats(self).evictions);
	EXPECT_GE((long)(10 * MiB / PG), morsel_counter("pages") - pages0);
	close(pa);
	EXPECT_EQ((long)(2 * 3 * MiB / PG), morsel_counter("pages") - pages0);
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "c"));
}

/* As nobody: map @a and @b and hold them, then GET @c; its result. */
static int nobody_share(const char *sock, const char *a, const char *b,
			const char *c)
{
	int status, p[2], res[2] = { -1, -1 };
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		void *pa, *pb;
		size_t la, lb;
		int s, fd;

		close(p[0]);
		if (become_nobody() ||
		    morsel_cache_map_path(sock, a, &pa, &la) ||
		    morsel_cache_map_path(sock, b, &pb, &lb))
			_exit(1);
		s = morsel_cache_connect(sock);
		fd = open(c, O_RDONLY);
		res[0] = morsel_cache_get(s, fd, NULL);	/* both held */
		if (res[0] >= 0)
			close(res[0]);
		morsel_cache_unmap(pb, lb);
		res[1] = morsel_cache_get(s, fd, NULL);	/* b let go */
		if (res[1] >= 0)
			close(res[1]);
		res[1] = res[1] >= 0 ? 0 : res[1];
		_exit(write(p[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], res, sizeof(res)) != sizeof(res))
		res[0] = res[1] = -1;
	close(p[0]);
	waitpid(pid, &status, 0);
	return res[0] == -EDQUOT && res[1] == 0 ? 0 : res[0] < 0 ? res[0] : -1;
}

/*
 * --user-budget: one uid's loads take at most that much; past it the
 * uid's own unheld entries go, else EDQUOT.  Other uids (and uid 0,
 * bound by the budget only) still load.
 */
TEST_F_TIMEOUT(cached, user_share_edquot, 60)
{
	const char *opts[] = { "--budget", "20M", "--user-budget", "7M", NULL };
	struct morsel_cache_stats st;
	int fd;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, opts));
	ASSERT_EQ(0, make_file(tpath(self, "x"), 3 * MiB, 1));
	ASSERT_EQ(0, make_file(tpath(self, "y"), 3 * MiB, 2));
	ASSERT_EQ(0, make_file(tpath(self, "z"), 3 * MiB, 3));
	ASSERT_EQ(0, make_file(tpath(self, "w"), 3 * MiB, 4));
	/* -EDQUOT with x and y mapped, then z once y is let go. */
	EXPECT_EQ(0, nobody_share(self->sock, tpath(self, "x"),
				  tpath(self, "y"), tpath(self, "z")));
	st = stats(self);
	EXPECT_EQ(3, st.loads);
	EXPECT_EQ(1, st.evictions);	/* y, nobody's own */
	fd = get(self, tpath(self, "w"), NULL);	/* root: the budget only */
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);
	EXPECT_EQ(3 * cost(3 * MiB), stats(self).bytes);
}

/*
 * A sparse source costs nothing on disk and all of its size here: refused
 * (EINVAL) when less than a quarter of it is allocated and more than
 * 1 MiB is not; a file with a small hole is loaded (zeros in the hole).
 */
TEST_F_TIMEOUT(cached, sparse_sources_refused, 60)
{
	const char *hole = tpath(self, "hole"), *part = tpath(self, "part");
	const char *small = tpath(self, "small");
	static unsigned char buf[MiB];
	unsigned char *p;
	size_t len;
	int fd;

	fd = open(hole, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 64 * MiB));
	close(fd);
	EXPECT_EQ(-EINVAL, get(self, hole, NULL));
	/* 1 MiB of 8 written. */
	ASSERT_EQ(0, make_file(part, MiB, 1));
	ASSERT_EQ(0, truncate(part, 8 * MiB));
	EXPECT_EQ(-EINVAL, get(self, part, NULL));
	/* 3 MiB of 4 written, the first MiB a hole: loaded. */
	fd = open(small, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(0, ftruncate(fd, 4 * MiB));
	ASSERT_EQ(MiB, pwrite(fd, buf, MiB, MiB));
	ASSERT_EQ(MiB, pwrite(fd, buf, MiB, 2 * MiB));
	ASSERT_EQ(MiB, pwrite(fd, buf, MiB, 3 * MiB));
	close(fd);
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, small, (void **)&p, &len));
	EXPECT_EQ(4 * MiB, len);
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ(0, p[MiB - 1]);
	EXPECT_EQ(0x5a, p[MiB]);
	EXPECT_EQ(0x5a, p[4 * MiB - 1]);
	EXPECT_EQ(0, morsel_cache_unmap(p, len));
	EXPECT_EQ(1, stats(self).loads);
	EXPECT_EQ(2, stats(self).refusals);
}

/*
 * What a restart cannot index is counted until nothing holds it, then
 * removed: a k.* without a key, a retired r.* a client still holds, a
 * format-1 c.*.  Files of other names are left alone, and not counted.
 * (The old daemon ignored all of these: outside the budget for ever.)
 */
TEST_F_TIMEOUT(cached, restart_counts_what_it_cannot_index, 60)
{
	char k[512], r[512], c[512], other[512];
	const char *names[] = { k, r, c };
	const uint64_t sizes[] = { MiB, 2 * MiB, 3 * MiB };
	long pages0;
	int fd, held, i;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	snprintf(k, sizeof(k), "%s/k.00000000000000ff", self->dir);
	snprintf(r, sizeof(r), "%s/r.0000000000000100", self->dir);
	snprintf(c, sizeof(c), "%s/c.1.2.3.4.000000005", self->dir);
	snprintf(other, sizeof(other), "%s/notes", self->dir);
	pages0 = morsel_counter("pages");
	for (i = 0; i < 3; i++) {
		fd = morsel_create(names[i], sizes[i], 0400);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, morsel_populate(fd, 0, sizes[i]));
		close(fd);
	}
	ASSERT_EQ(0, make_file(other, PG, 1));
	held = open(r, O_RDONLY | O_CLOEXEC);	/* not the daemon's too */
	ASSERT_LE(0, held);
	ASSERT_LT(0, start(self, NULL));
	EXPECT_EQ(cost(2 * MiB), stats(self).bytes);
	EXPECT_EQ(0, stats(self).entries);
	EXPECT_EQ(-1, access(k, F_OK));
	EXPECT_EQ(-1, access(c, F_OK));
	EXPECT_EQ(0, access(r, F_OK));
	EXPECT_EQ(0, access(other, F_OK));
	close(held);
	EXPECT_EQ(0, stats(self).bytes);
	EXPECT_EQ(-1, access(r, F_OK));
	EXPECT_EQ(pages0 + 1, morsel_counter("pages"));	/* "notes" */
}

/* ---- descriptors (review 2026-11b M5) ---- */

/*
 * 2000 one-page files with the daemon at RLIMIT_NOFILE 256: all cached
 * (no descriptor kept per entry; the old daemon failed with EMFILE past
 * ~250), and all found again, as hits, by a restart at the same limit.
 */
TEST_F_TIMEOUT(cached, many_files_no_emfile, 900)
{
	struct rlimit rl = { 256, 256 }, old;
	struct morsel_cache_info info;
	struct morsel_cache_stats st;
	char name[32];
	int i, fd, bad = 0, hit = 0;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_LT(0, start(self, NULL));
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		ASSERT_EQ(0, make_file(tpath(self, name), PG, i));
		fd = get(self, tpath(self, name), NULL);
		if (fd < 0) {
			if (!bad++)
				TH_LOG("file %d: %s", i, strerror(-fd));
			continue;
		}
		close(fd);
	}
	EXPECT_EQ(0, bad);
	st = stats(self);
	EXPECT_EQ(2000, st.entries);
	EXPECT_EQ(2000 * PG, st.bytes);
	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start(self, NULL));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	EXPECT_EQ(2000, stats(self).entries);
	for (i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		fd = get(self, tpath(self, name), &info);
		if (fd >= 0) {
			hit += info.flags == MORSEL_CACHE_HIT;
			close(fd);
		}
	}
	EXPECT_EQ(2000, hit);
	EXPECT_EQ(0, stats(self).loads);
}

/* The daemon raises its soft RLIMIT_NOFILE to the hard limit. */
TEST_F_TIMEOUT(cached, nofile_limit_raised, 60)
{
	struct rlimit rl = { 64, 2048 }, old;
	char path[64], line[256];
	long soft = -1, hard = -1;
	FILE *f;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &old));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_LT(0, start(self, NULL));
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &old));
	snprintf(path, sizeof(path), "/proc/%d/limits", self->daemon);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Max open files", 14))
			sscanf(line + 14, "%ld %ld", &soft, &hard);
	fclose(f);
	EXPECT_EQ(2048, hard);
	EXPECT_EQ(2048, soft);
}

/* --min-size (default one page): smaller files are EINVAL. */
TEST_F_TIMEOUT(cached, min_size_einval, 60)
{
	const char *opts[] = { "--min-size", "64K", NULL };
	int fd;

	ASSERT_EQ(0, make_file(tpath(self, "under"), PG - 1, 1));
	ASSERT_EQ(0, make_file(tpath(self, "page"), PG, 1));
	ASSERT_EQ(0, make_file(tpath(self, "60k"), 60 * KiB, 1));
	ASSERT_EQ(0, make_file(tpath(self, "64k"), 64 * KiB, 1));
	EXPECT_EQ(-EINVAL, get(self, tpath(self, "under"), NULL));
	fd = get(self, tpath(self, "page"), NULL);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);
	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, opts));
	EXPECT_EQ(-EINVAL, get(self, tpath(self, "60k"), NULL));
	fd = get(self, tpath(self, "64k"), NULL);
	EXPECT_LE(0, fd);
	if (fd >= 0)
		close(fd);
	EXPECT_EQ(1, stats(self).loads);
}

/* ---- the service (review 2026-11b L10, L11) ---- */

/* The log of a daemon, whole, in @buf; its length or -1. */
static ssize_t read_log(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/*
 * A cache mount without noexec, nosuid, nodev would let a copy give what
 * the source's mount withholds: the daemon says so at start; not on a
 * mount that has them.
 */
TEST_F_TIMEOUT(cached, warns_mount_without_noexec, 60)
{
	static char buf[1 << 16];
	const char *mnt = tpath(self, "c"), *log2 = tpath(self, "log2");
	const char *sock2 = tpath(self, "sock2");
	const char *argv[] = { "--socket", sock2, "--dir", mnt, NULL };
	int status;
	pid_t pid;

	ASSERT_LT(0, read_log(self->log, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "mounted without noexec nosuid nodev"))
		TH_LOG("%s", buf);
	ASSERT_EQ(0, mkdir(mnt, 0700));
	ASSERT_EQ(0, mount("none", mnt, "morselfs",
			   MS_NOEXEC | MS_NOSUID | MS_NODEV, "size=16m"));
	pid = run_daemon(log2, argv, 1, &status);
	ASSERT_LT(0, pid);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_LT(0, read_log(log2, buf, sizeof(buf)));
	EXPECT_NE(NULL, strstr(buf, "listening on")) TH_LOG("%s", buf);
	EXPECT_EQ(NULL, strstr(buf, "mounted without")) TH_LOG("%s", buf);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/*
 * --max-user-conns: a uid's connection past the limit is closed at once
 * (the client sees the connection end); served again once one of its
 * connections ends.
 */
TEST_F_TIMEOUT(cached, user_connection_limit, 60)
{
	const char *opts[] = { "--max-user-conns", "4", NULL };
	struct morsel_cache_stats st;
	int socks[4], s, i, err, tries;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, opts));
	for (i = 0; i < 4; i++) {
		socks[i] = morsel_cache_connect(self->sock);
		ASSERT_LE(0, socks[i]);
		ASSERT_EQ(0, morsel_cache_stats(socks[i], &st));
	}
	s = morsel_cache_connect(self->sock);
	ASSERT_LE(0, s);
	err = morsel_cache_stats(s, &st);
	EXPECT_TRUE(err == -ECONNRESET || err == -EPIPE) TH_LOG("%d", err);
	close(s);
	/* The four still serve. */
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, morsel_cache_stats(socks[i], &st));
	/* One ends: once its thread has seen that, a new one is served. */
	close(socks[0]);
	for (tries = 0; tries < 100000; tries++) {
		s = morsel_cache_connect(self->sock);
		ASSERT_LE(0, s);
		err = morsel_cache_stats(s, &st);
		close(s);
		if (!err)
			break;
		sched_yield();
	}
	EXPECT_EQ(0, err);
	for (i = 1; i < 4; i++)
		close(socks[i]);
}

/*
 * --idle-timeout: a connection that sends nothing for that long is
 * closed (the test waits for the daemon to close it; without the limit
 * it would wait for ever and the harness's timeout fails it).
 */
TEST_F_TIMEOUT(cached, idle_connection_closed, 30)
{
	const char *opts[] = { "--idle-timeout", "1", NULL };
	struct morsel_cache_stats st;
	char c;
	int s;

	ASSERT_TRUE(WIFEXITED(stop(self, SIGTERM)));
	ASSERT_LT(0, start_opts(self, opts));
	s = morsel_cache_connect(self->sock);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, morsel_cache_stats(s, &st));
	EXPECT_EQ(0, recv(s, &c, 1, 0));	/* the daemon hung up */
	close(s);
	EXPECT_EQ(0, stats(self).refusals);
}

/* ---- cold loads: O_DIRECT, in parallel (issue 25) ---- */

/* Flush and drop the page cache: the next read of a disk file is cold. */
static int drop_caches(void)
{
	sync();
	return write_file("/proc/sys/vm/drop_caches", "3");
}

/* Pages of the file @path in the page cache (mincore of a mapping). */
static long resident_pages(const char *path)
{
	unsigned char *vec;
	struct stat st;
	long n = 0;
	size_t pages, i;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		return -1;
	pages = (st.st_size + PG - 1) / PG;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	vec = malloc(pages);
	if (p == MAP_FAILED || !vec || mincore(p, st.st_size, vec))
		n = -1;
	for (i = 0; n >= 0 && i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	if (p != MAP_FAILED)
		munmap(p, st.st_size);
	return n;
}

/* ext4 on the virtio disk (vm/run --disk) at @mnt; 0, or 1 if none. */
static int disk_mount(struct __test_metadata *_metadata, const char *mnt)
{
	const char *dev = getenv("MORSEL_DISK");
	char cmd[256];

	if (!dev || !*dev)
		return 1;
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F %s", dev);
	EXPECT_EQ(0, system(cmd));
	EXPECT_EQ(0, mkdir(mnt, 0755));
	EXPECT_EQ(0, mount(dev, mnt, "ext4", 0, NULL));
	return _metadata->exit_code ? -1 : 0;
}

/* Print the daemon's log lines that contain @what (as "# " lines). */
static void log_show(FIXTURE_DATA(cached) *self, const char *what)
{
	char line[512];
	FILE *f = fopen(self->log, "r");

	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, what))
			ksft_print_msg("%s", line);
	if (f)
		fclose(f);
}

/* Occurrences of @what in the daemon's log. */
static int log_count(FIXTURE_DATA(cached) *self, const char *what)
{
	static char buf[1 << 20];
	const char *p = buf;
	int n = 0;

	if (read_log(self->log, buf, sizeof(buf)) < 0)
		return -1;
	while ((p = strstr(p, what))) {
		n++;
		p++;
	}
	return n;
}

/*
 * A cold load from a disk reads around the page cache (O_DIRECT, reopened
 * through /proc/self/fd: the client's description keeps its flags), in
 * parallel chunks (--load-threads 8, 4 MiB each): the bytes are the file's,
 * to the last odd byte, and the page cache holds none of the file
 * afterwards.  A client that opened the file O_DIRECT itself is read
 * through its own descriptor.
 */
TEST_F_TIMEOUT(cached, cold_load_bypasses_the_page_cache, 120)
{
	const uint64_t size = 45 * MiB + 123;
	const char *mnt = tpath(self, "disk");
	char v[256], w[256];
	uint64_t diff;
	int r, fd, mfd, fl;

	r = disk_mount(_metadata, mnt);
	if (r > 0)
		SKIP(return, "no disk (vm/run --disk)");
	ASSERT_EQ(0, r);
	snprintf(v, sizeof(v), "%s/v", mnt);
	snprintf(w, sizeof(w), "%s/w", mnt);
	ASSERT_EQ(0, make_file(v, size, 4));
	ASSERT_EQ(0, make_file(w, 3 * MiB, 5));
	ASSERT_EQ(0, drop_caches());
	ASSERT_EQ(0, resident_pages(v));
	fd = open(v, O_RDONLY);
	ASSERT_LE(0, fd);
	fl = fcntl(fd, F_GETFL);
	mfd = morsel_cache_get(morsel_cache_connect(self->sock), fd, NULL);
	ASSERT_LE(0, mfd) TH_LOG("get: %s", strerror(-mfd));
	close(mfd);
	/* The client's open file description is as it was. */
	EXPECT_EQ(fl, fcntl(fd, F_GETFL));
	close(fd);
	EXPECT_EQ(0, resident_pages(v));
	ASSERT_EQ(0, map_check(self, v, size, 4, &diff));
	EXPECT_EQ(size, diff);
	EXPECT_EQ(1, stats(self).loads);
	fd = open(w, O_RDONLY | O_DIRECT);
	ASSERT_LE(0, fd);
	mfd = morsel_cache_get(morsel_cache_connect(self->sock), fd, NULL);
	ASSERT_LE(0, mfd);
	close(mfd);
	close(fd);
	ASSERT_EQ(0, map_check(self, w, 3 * MiB, 5, &diff));
	EXPECT_EQ(3 * MiB, diff);
	EXPECT_EQ(0, resident_pages(w));
	EXPECT_EQ(2, log_count(self, "KiB in "));
	EXPECT_EQ(0, log_count(self, "through the page cache"));
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/*
 * A file system without O_DIRECT (ramfs) is read through the page cache,
 * and the log says so; the bytes are the same, one thread or many.
 */
TEST_F_TIMEOUT(cached, cold_load_without_o_direct_reads_buffered, 60)
{
	const char *one[] = { "--load-threads", "1", NULL };
	const char *mnt = tpath(self, "ram");
	char v[256];
	uint64_t diff;

	ASSERT_EQ(0, mkdir(mnt, 0755));
	ASSERT_EQ(0, mount("none", mnt, "ramfs", 0, NULL));
	snprintf(v, sizeof(v), "%s/v", mnt);
	ASSERT_EQ(0, make_file(v, 9 * MiB + 5, 6));
	EXPECT_EQ(-1, open(v, O_RDONLY | O_DIRECT));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, map_check(self, v, 9 * MiB + 5, 6, &diff));
	EXPECT_EQ(9 * MiB + 5, diff);
	EXPECT_EQ(1, log_count(self, "through the page cache"));
	stop(self, SIGTERM);
	rm_files(self->dir);
	ASSERT_LT(0, start_opts(self, one));
	ASSERT_EQ(0, map_check(self, v, 9 * MiB + 5, 6, &diff));
	EXPECT_EQ(9 * MiB + 5, diff);
	EXPECT_EQ(1, stats(self).loads);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

/* ---- memory pressure (issue 25) ---- */

#define CG "/sys/fs/cgroup/cached-pressure"

/* A cgroup file's number ("max": -1). */
static long long cg_read(const char *name)
{
	char path[256], buf[64];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), CG "/%s", name);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f) && strncmp(buf, "max", 3))
		v = atoll(buf);
	if (f)
		fclose(f);
	return v;
}

/* The value of @key in the cgroup's memory.events. */
static long long cg_event(const char *key)
{
	char line[128], k[64];
	long long v, r = -1;
	FILE *f = fopen(CG "/memory.events", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", k, &v) == 2 && !strcmp(k, key))
			r = v;
	if (f)
		fclose(f);
	return r;
}

static int cg_write(const char *name, unsigned long long v)
{
	char path[256], val[32];

	snprintf(path, sizeof(path), CG "/%s", name);
	snprintf(val, sizeof(val), "%llu", v);
	return write_file(path, val);
}

/* MemAvailable of /proc/meminfo, bytes (0 if unread). */
static uint64_t mem_available(void)
{
	unsigned long long kb;
	uint64_t v = 0;
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			v = kb * KiB;
	if (f)
		fclose(f);
	return v;
}

/*
 * A process that touches @bytes of anonymous memory page by page and
 * checks it; its wait status (0: it finished, SIGKILL: the OOM killer).
 */
static int hog(uint64_t bytes)
{
	int status = -1;
	pid_t pid = fork();

	if (pid == 0) {
		volatile char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t i;

		if (p == MAP_FAILED)
			_exit(1);
		for (i = 0; i < bytes; i += PG)
			p[i] = (char)(i / PG);
		for (i = 0; i < bytes; i += PG)
			if (p[i] != (char)(i / PG))
				_exit(2);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	return status;
}

/*
 * One round of memcg_pressure_evicts_unmapped_lru: a daemon (with the
 * pressure watch or --pressure off) in the cgroup caches the four files,
 * a is mapped; the limits go 56 MiB (high) and 88 MiB (max) above what
 * the cgroup then uses; a process of the cgroup touches 96 MiB.  Returns
 * the process's wait status; the mapping in *@pa (unmapped by the caller).
 */
static int memcg_round(struct __test_metadata *_metadata,
		       FIXTURE_DATA(cached) *self, int watch,
		       unsigned char **pa, size_t *la)
{
	const char *off[] = { "--pressure", "off", NULL };
	const char *names[] = { "a", "b", "c", "d" };
	long long base;
	unsigned int i;

	write_file(CG "/memory.max", "max");
	write_file(CG "/memory.high", "max");
	stop(self, SIGTERM);
	rm_files(self->dir);
	if (watch) {
		ASSERT_LT(0, start(self, NULL));
	} else {
		ASSERT_LT(0, start_opts(self, off));
	}
	/* a first: b, c, d are the least recently used, a is mapped. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, get_flags(self, names[i]) < 0);
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, tpath(self, "a"),
					   (void **)pa, la));
	base = cg_read("memory.current");
	ASSERT_LT(64 * MiB, (uint64_t)base);
	ASSERT_EQ(0, cg_write("memory.high", base + 56 * MiB));
	ASSERT_EQ(0, cg_write("memory.max", base + 88 * MiB));
	return hog(96 * MiB);
}

/*
 * The daemon runs in a memory cgroup with a soft limit (memory.high) and
 * a hard one (memory.max), as in a container with the application: the
 * cached files count in the cgroup.  A process of the cgroup then needs
 * more than the cache leaves it.  Without the watch (--pressure off) it
 * is OOM-killed at memory.max: cache and process do not fit, the process
 * alone does.  With it, memory.events says "high" at once; the daemon
 * evicts the least recently used files that nothing holds (b, c, d),
 * never the mapped one (a, still right), and the process finishes; no
 * OOM kill.
 */
TEST_F_TIMEOUT(cached, memcg_pressure_evicts_unmapped_lru, 180)
{
	const char *names[] = { "a", "b", "c", "d" };
	const uint64_t fsz = 16 * MiB;
	long long oom0;
	unsigned char *pa;
	size_t la;
	unsigned int i;
	int status;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, make_file(tpath(self, names[i]), fsz, i));
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL));
	ASSERT_EQ(0, write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory"));
	rmdir(CG);
	ASSERT_EQ(0, mkdir(CG, 0755));
	ASSERT_EQ(0, write_file(CG "/cgroup.procs", "0"));
	/*
	 * The expected OOM kill's task list has a column the kernel-log
	 * check reads as a page-table accounting report (errors_test too).
	 */
	ASSERT_EQ(0, write_file("/proc/sys/vm/oom_dump_tasks", "0"));

	oom0 = cg_event("oom_kill");
	status = memcg_round(_metadata, self, 0, &pa, &la);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("without the watch: status %#x", status);
	EXPECT_EQ(oom0 + 1, cg_event("oom_kill"));
	EXPECT_EQ(0, stats(self).evictions);
	EXPECT_EQ(0, morsel_cache_unmap(pa, la));

	oom0 = cg_event("oom_kill");
	status = memcg_round(_metadata, self, 1, &pa, &la);
	EXPECT_EQ(0, status) TH_LOG("with the watch: status %#x", status);
	EXPECT_EQ(oom0, cg_event("oom_kill"));
	EXPECT_LE(1, cg_event("high"));
	EXPECT_EQ(3, stats(self).evictions);
	EXPECT_EQ(1, stats(self).entries);
	EXPECT_EQ(3, log_count(self, "memory pressure"));
	EXPECT_EQ(fsz, first_diff(pa, fsz, 0));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));
	EXPECT_EQ(0, morsel_cache_unmap(pa, la));
	stop(self, SIGTERM);
	rm_files(self->dir);
	write_file("/proc/sys/vm/oom_dump_tasks", "1");
	ASSERT_EQ(0, write_file("/sys/fs/cgroup/cgroup.procs", "0"));
	rmdir(CG);
}

/*
 * The same for the whole machine (/proc/pressure/memory, and the timer on
 * MemAvailable, which is what wakes the daemon here: with no swap and no
 * page cache left the kernel stalls too little for PSI before it would
 * OOM-kill): a guest whose free memory the cache's files take, then a
 * process that needs more than is left but less than the cache would
 * leave if it gave up two files.
 * The sources are on the disk (a tmpfs copy would be memory too).  Sizes
 * from MemAvailable: four files of a tenth each; the hog takes what is
 * available after the loads plus two files' worth.
 */
TEST_F_TIMEOUT(cached, machine_pressure_evicts_unmapped_lru, 300)
{
	const char *names[] = { "a", "b", "c", "d" };
	const char *mnt = tpath(self, "disk");
	uint64_t avail, fsz, after;
	char path[4][256];
	unsigned char *pa;
	size_t la;
	unsigned int i;
	int r, status;

	r = disk_mount(_metadata, mnt);
	if (r > 0)
		SKIP(return, "no disk (vm/run --disk)");
	ASSERT_EQ(0, r);
	ASSERT_EQ(0, access("/proc/pressure/memory", R_OK));
	avail = mem_available();
	ASSERT_LT(512 * MiB, avail);
	fsz = (avail / 10) & ~(MiB - 1);
	for (i = 0; i < 4; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", mnt, names[i]);
		ASSERT_EQ(0, make_file(path[i], fsz, i));
	}
	ASSERT_EQ(0, drop_caches());
	for (i = 0; i < 4; i++) {
		r = get(self, path[i], NULL);
		ASSERT_LE(0, r);
		close(r);
	}
	ASSERT_EQ(0, morsel_cache_map_path(self->sock, path[0],
					   (void **)&pa, &la));
	ASSERT_EQ(0, drop_caches());
	after = mem_available();
	ASSERT_GT(avail - 3 * fsz, after);
	ASSERT_EQ(0, write_file("/proc/sys/vm/oom_dump_tasks", "0"));
	status = hog(after + 2 * fsz);
	write_file("/proc/sys/vm/oom_dump_tasks", "1");
	EXPECT_EQ(0, status) TH_LOG("hog: status %#x", status);
	EXPECT_LE(2, stats(self).evictions);
	EXPECT_EQ(fsz, first_diff(pa, fsz, 0));
	EXPECT_EQ(0, morsel_cache_unmap(pa, la));
	EXPECT_LE(2, log_count(self, "memory pressure"));
	log_show(self, "pressure (");
	stop(self, SIGTERM);
	rm_files(self->dir);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

TEST_HARNESS_MAIN
