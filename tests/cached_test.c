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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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
 * SIGTERM while a load runs: the load stops at its next read (its client
 * gets ECANCELED) or has just finished; either way the daemon exits 0 and
 * the directory holds only complete files.  The test waits for the load
 * to have begun by watching the module's page counter (populate comes
 * first), not by sleeping.
 */
TEST_F_TIMEOUT(cached, sigterm_during_load, 120)
{
	const uint64_t size = 128 * MiB;
	long pages0 = counter("pages");
	int go[2], res[2], status, err = 1;
	struct stat st;
	pid_t pid;

	ASSERT_EQ(0, make_file(tpath(self, "big"), size, 9));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(res));
	pid = fork();
	if (pid == 0) {
		char c;

		if (read(go[0], &c, 1) != 1)
			_exit(1);
		err = get(self, tpath(self, "big"), NULL);
		_exit(write(res[1], &err, sizeof(err)) == sizeof(err) ? 0 : 1);
	}
	close(res[1]);
	ASSERT_EQ(1, write(go[1], "g", 1));
	while (counter("pages") < pages0 + (long)(size / PG))
		sched_yield();
	status = stop(self, SIGTERM);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	ASSERT_EQ(sizeof(err), read(res[0], &err, sizeof(err)));
	waitpid(pid, &status, 0);
	TH_LOG("the client got %d", err);
	EXPECT_TRUE(err == -ECANCELED || err >= 0);
	if (err >= 0) {
		EXPECT_EQ(1, cache_files(self));
		ASSERT_EQ(0, fstat(err, &st));
		EXPECT_EQ(size, st.st_size);
		close(err);
	} else {
		EXPECT_EQ(0, cache_files(self));
	}
	rm_files(self->dir);
	EXPECT_EQ(pages0, counter("pages"));
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
		{ "--socket", NULL },
		{ "extra", NULL },
	};
	const char *notfs[] = { "--dir", "/tmp", "--socket", "/tmp/cached_test_x",
				NULL };
	const char *twice[] = { "--dir", self->dir, "--socket", self->sock, NULL };
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
	/* An fd alone does not hold an entry (the documented race) ... */
	fd = get(self, tpath(self, "b"), NULL);
	ASSERT_LE(0, fd);
	/* ... a mapping does: b goes when unmapped, a and c stay. */
	EXPECT_EQ(0, morsel_cache_unmap(p[1], len[1]));
	EXPECT_EQ(0, get_flags(self, "d"));
	EXPECT_EQ(1, stats(self).evictions);
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "a"));
	EXPECT_EQ(MORSEL_CACHE_HIT, get_flags(self, "c"));
	EXPECT_EQ(3 * MiB, first_diff(p[0], 3 * MiB, 0));
	EXPECT_EQ(3 * MiB, first_diff(p[2], 3 * MiB, 2));
	/* The evicted morsel lives on behind the fd that was handed out. */
	{
		void *q;
		size_t ql;

		ASSERT_EQ(0, morsel_map(fd, NULL, PROT_READ, 0, &q, &ql));
		EXPECT_EQ(3 * MiB, first_diff(q, 3 * MiB, 1));
		munmap(q, ql);
	}
	close(fd);
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
	long pages0 = counter("pages"), tables0 = counter("tables");
	long morsels0 = counter("morsels");
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
	EXPECT_LT(pages0, counter("pages"));
	/* The daemon exits, the cache is emptied: back to the baseline. */
	status = stop(self, SIGTERM);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_LE(1, cache_files(self));
	rm_files(self->dir);
	EXPECT_EQ(pages0, counter("pages"));
	EXPECT_EQ(tables0, counter("tables"));
	EXPECT_EQ(morsels0, counter("morsels"));
}

TEST_HARNESS_MAIN
