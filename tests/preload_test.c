// SPDX-License-Identifier: GPL-2.0
/*
 * preload_test: libmorsel-preload.so, the LD_PRELOAD shim that serves
 * read-only mmaps of large files from morsel-cached (kselftest harness; in
 * the VM: vm/run -- tests/preload_test).
 *
 * - Every fall-back: the mapping is the kernel's own (/proc/self/maps names
 *   the program's file) and the shim's debug line gives the reason:
 *   PROT_WRITE, PROT_EXEC, private read-write, MAP_FIXED,
 *   MAP_SHARED_VALIDATE, other flags, unaligned offset and zero length
 *   (EINVAL as the kernel gives), small file, file on morselfs, not a
 *   regular file, anonymous, fd not read-only, past the morsel's extent,
 *   daemon absent, daemon refusing, MORSEL_PRELOAD_DISABLE.
 * - The cached path: windows at offsets read the file's bytes (zeros past
 *   EOF in the last page, SIGBUS beyond it), partial munmap keeps the mount
 *   until the whole range is released, munmap across shim and other
 *   mappings, mprotect/madvise/mremap/MAP_FIXED (the swap to an ordinary
 *   mapping: private writes stay private, EACCES for a shared O_RDONLY
 *   one), fork, threads, errno kept, MORSEL_PRELOAD_STATS, Python's mmap.
 * - What the shim must never do to the program: drop its POSIX record
 *   locks (a fall-back without a daemon, a refusal, the cached path, a
 *   swap, munmap, exec), close a descriptor of its own that reuses a
 *   number the shim once had, or let the program's calls reach the
 *   shim's standby mapping unnoticed.
 * - Files another process may write are never served from a snapshot
 *   (review 2026-11b M2; the rule: preload.c, unchanging()): the live_*
 *   tests map files outside the opted-in directory beside a writer: an
 *   LMDB MDB_RDONLY reader and a SQLite read-only connection with
 *   mmap_size (tests/programs/live_reader.py, Python under the shim, the
 *   writer too) see every commit, a MAP_SHARED (and an untouched
 *   MAP_PRIVATE) mapping shows another process's pwrite, also on a
 *   read-only bind mount.  Still cached: a file in MORSEL_PRELOAD_DIRS and
 *   a memfd sealed against writes; a swap of an opted-in file that
 *   changed anyway says so on stderr.
 *
 * How it runs: started plainly, main() starts a morsel-cached of its own
 * (socket /tmp/preload_test.sock, cache in $MORSEL_MNT/preload-cache,
 * budget 128M) and runs itself again under LD_PRELOAD (threshold 1M,
 * debug on, MORSEL_PRELOAD_DIRS=/tmp/preload_test: the files of the
 * fall-back and cached tests are opted in, those of the live tests, in
 * /tmp/preload_test_live, are not).  Tests that need other settings run
 * "--child MODE FILE" under changed environment variables.  Every TEST is
 * a process of its own (the harness forks); test files live in the
 * guest's /tmp (tmpfs).  PRELOAD_TEST_SHIM and PRELOAD_TEST_DAEMON name
 * another shim or daemon to test (an older build, say).
 *
 * Locking: none.  Each test is one process (and the children it waits
 * for, which talk to it over pipes); the one test with threads,
 * cached_many_threads_at_once, shares nothing between them but the
 * capture of stderr (a memfd in O_APPEND mode), so tpath()'s and
 * lpath()'s rotating static buffers are for the test's main thread only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sched.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "cache_proto.h"
#include "ksft_util.h"

#define KiB 1024UL
#define MiB (1024 * KiB)
#define PG 4096UL
#define SOCK "/tmp/preload_test.sock"
#define TDIR "/tmp/preload_test"		/* in MORSEL_PRELOAD_DIRS */
#define LDIR "/tmp/preload_test_live"	/* not (nor is it under TDIR) */
#define BIG (3 * MiB + 100)	/* order 2: extent 1 GiB; last page partial */

/* ---- files ---- */

static uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 13 + (i >> 12) * 7 + 1);
}

/* /tmp/preload_test/@name (one of 4 buffers). */
static const char *tpath(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), TDIR "/%s", name);
	return buf[i];
}

/* /tmp/preload_test_live/@name (one of 4 buffers). */
static const char *lpath(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), LDIR "/%s", name);
	return buf[i];
}

/* Write @size bytes of the pattern to @fd from offset 0; 0 or -1. */
static int write_pattern(int fd, uint64_t size)
{
	static uint8_t chunk[256 * 1024];
	uint64_t off, n, i;

	for (off = 0; off < size; off += n) {
		n = size - off < sizeof(chunk) ? size - off : sizeof(chunk);
		for (i = 0; i < n; i++)
			chunk[i] = pat(off + i);
		if (pwrite(fd, chunk, n, off) != (ssize_t)n)
			return -1;
	}
	return 0;
}

/* Write @size bytes of the pattern to @path (new); 0 or -1. */
static int pattern_file(const char *path, uint64_t size)
{
	int fd;

	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	if (write_pattern(fd, size)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

/* Another process writes @b at @off of @path (pwrite); 0 or -1. */
static int other_process_writes(const char *path, off_t off, uint8_t b)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		int fd = open(path, O_WRONLY | O_CLOEXEC);

		_exit(fd < 0 || pwrite(fd, &b, 1, off) != 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -1;
	return 0;
}

/* A fresh pattern file @name of @size, opened with @flags. */
static int open_pattern(const char *name, uint64_t size, int flags)
{
	if (pattern_file(tpath(name), size))
		return -1;
	return open(tpath(name), flags | O_CLOEXEC);
}

/*
 * Does [p, p + len), mapped at file offset @off, read the pattern (and
 * zeros past @size)?  The first bad offset into p, or -1.
 */
static long check_bytes(const volatile uint8_t *p, uint64_t off, uint64_t len,
			uint64_t size)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i] != (off + i < size ? pat(off + i) : 0))
			return (long)i;
	return -1;
}

/* ---- /proc/self/maps ---- */

struct vma {
	unsigned long start, end;
	char path[PATH_MAX];
};

/* The VMA holding @addr; 0, or -1 if nothing is mapped there. */
static int vma_of(const void *addr, struct vma *v)
{
	unsigned long a = (unsigned long)addr;
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = -1, n;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		v->path[0] = 0;
		n = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &v->start,
			   &v->end, &n) < 2 || a < v->start || a >= v->end)
			continue;
		if (n)
			sscanf(line + n, "%[^\n]", v->path);
		found = 0;
	}
	fclose(f);
	return found;
}

/* The morsel-cached cache directory (set by the outer main()). */
static const char *cache_dir(void)
{
	const char *d = getenv("PRELOAD_TEST_CACHE_DIR");

	return d ? d : "/nonexistent";
}

/* Is @addr in a mount of a cached morsel (a file in the cache dir)? */
static int is_cached(const void *addr)
{
	struct vma v;
	size_t n = strlen(cache_dir());

	return !vma_of(addr, &v) && !strncmp(v.path, cache_dir(), n) &&
	       v.path[n] == '/';
}

/*
 * The shim's standby mapping of @path (an inaccessible mapping of the
 * file, "---p" or "---s"): 0 and *@v, or -1 if there is none.
 */
static int standby_of(const char *path, struct vma *v)
{
	char line[PATH_MAX + 128], perms[8];
	FILE *f = fopen("/proc/self/maps", "re");
	int found = -1, n;

	if (!f)
		return -1;
	while (found && fgets(line, sizeof(line), f)) {
		n = 0;
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &v->start,
			   &v->end, perms, &n) < 3 || !n ||
		    strncmp(perms, "---", 3))
			continue;
		v->path[0] = 0;
		sscanf(line + n, "%[^\n]", v->path);
		if (!strcmp(v->path, path))
			found = 0;
	}
	fclose(f);
	return found;
}

/* Is @addr in an ordinary mapping of @path? */
static int is_file(const void *addr, const char *path)
{
	struct vma v;

	return !vma_of(addr, &v) && !strcmp(v.path, path);
}

/* ---- the shim's debug lines (MORSEL_PRELOAD_DEBUG=1, on stderr) ---- */

static int cap_fd = -1, cap_saved = -1;
static char dbg[65536];		/* the lines of the last DECIDE */

static void cap_start(void)
{
	fflush(stderr);
	cap_fd = memfd_create("preload-debug", MFD_CLOEXEC);
	/*
	 * O_APPEND: threads write lines at once, and a memfd (a pseudo file)
	 * has no f_pos lock, so without it two lines can land at one offset.
	 */
	fcntl(cap_fd, F_SETFL, O_APPEND);
	cap_saved = dup(2);
	dup2(cap_fd, 2);
}

static void cap_end(void)
{
	ssize_t n;

	dup2(cap_saved, 2);
	close(cap_saved);
	n = pread(cap_fd, dbg, sizeof(dbg) - 1, 0);
	dbg[n > 0 ? n : 0] = 0;
	close(cap_fd);
}

/* @call's value, with what the shim said meanwhile in dbg; errno kept. */
#define DECIDE(call) ({							\
	__auto_type _r = (call);					\
	int _e = errno;							\
	cap_end();							\
	errno = _e;							\
	_r;								\
})
#define CAPTURE(call) (cap_start(), DECIDE(call))

/* The shim said @s (a fragment of a debug line). */
#define ASSERT_SAID(s) ASSERT_NE(NULL, strstr(dbg, s)) TH_LOG("shim said: %s", dbg)

/* mmap of @fd with the shim's lines in dbg. */
static void *map(size_t len, int prot, int flags, int fd, off_t off)
{
	return CAPTURE(mmap(NULL, len, prot, flags, fd, off));
}

/* ---- children under other settings ---- */

/*
 * Run @argv with the extra environment @env (NULL-terminated "K=V"; "K="
 * unsets K), stdout and stderr into @out; the exit status, or -1.
 */
static int run(const char *const *argv, const char *const *env, char *out,
	       size_t room)
{
	int p[2], status;
	size_t have = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (!pid) {
		for (; env && *env; env++) {
			char kv[256], *eq;

			snprintf(kv, sizeof(kv), "%s", *env);
			eq = strchr(kv, '=');
			*eq = 0;
			if (eq[1])
				setenv(kv, eq + 1, 1);
			else
				unsetenv(kv);
		}
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	while (have < room - 1 && (n = read(p[0], out + have, room - 1 - have)) > 0)
		have += n;
	out[have] = 0;
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* This program's --child MODE FILE under @env. */
static int run_child(const char *mode, const char *file,
		     const char *const *env, char *out, size_t room)
{
	const char *argv[] = { "/proc/self/exe", "--child", mode, file, NULL };

	return run(argv, env, out, room);
}

/* ---- POSIX record locks ---- */

/* Take a read lock on byte 0 of @fd (F_SETLK); 0 or -1. */
static int rdlock_byte0(int fd)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
			    .l_start = 0, .l_len = 1 };

	return fcntl(fd, F_SETLK, &fl);
}

/*
 * Is byte 0 of @path locked against another process?  A child tries
 * F_SETLK F_WRLCK on it: 1 if refused (EAGAIN or EACCES), 0 if it got the
 * lock (ours is gone), -1 if something else failed.
 */
static int locked_for_others(const char *path)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
				    .l_start = 0, .l_len = 1 };
		int fd = open(path, O_RDWR | O_CLOEXEC);

		if (fd < 0)
			_exit(3);
		if (!fcntl(fd, F_SETLK, &fl))
			_exit(0);
		_exit(errno == EAGAIN || errno == EACCES ? 1 : 2);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) > 1)
		return -1;
	return WEXITSTATUS(status);
}

/* locked_for_others(@path) as a word for a child's output. */
static const char *lock_word(const char *path)
{
	switch (locked_for_others(path)) {
	case 1:
		return "held";
	case 0:
		return "LOST";
	}
	return "error";
}

/*
 * --child lock FILE: open FILE O_RDONLY, take a read lock on byte 0, map
 * it whole, read-only and shared, then unmap it; print whether another
 * process finds the lock held at each step ("before: held", "mmap: held",
 * "munmap: held"; LOST if not) and how the mapping was made.
 * --child lock-exec FILE: the same up to the mmap, then exec
 * --child lock-check FILE, which prints "after exec: held" (or LOST).
 * POSIX locks survive exec; the descriptor is not O_CLOEXEC (closing it
 * would drop the lock).
 */
static int lock_main(const char *mode, const char *file)
{
	struct stat st;
	uint8_t *p;
	int fd;

	if (!strcmp(mode, "lock-check")) {
		printf("after exec: %s\n", lock_word(file));
		return 0;
	}
	fd = open(file, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) || rdlock_byte0(fd))
		return 3;
	printf("before: %s\n", lock_word(file));
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 4;
	printf("%s\n", is_cached(p) ? "cached" : is_file(p, file) ?
	       "ordinary" : "unknown");
	if (check_bytes(p, 0, st.st_size, st.st_size) >= 0)
		return 5;
	printf("mmap: %s\n", lock_word(file));
	if (!strcmp(mode, "lock-exec")) {
		fflush(stdout);
		execl("/proc/self/exe", "preload_test", "--child", "lock-check",
		      file, (char *)NULL);
		return 6;
	}
	if (munmap(p, st.st_size))
		return 7;
	printf("munmap: %s\n", lock_word(file));
	return 0;
}

/*
 * --child changed FILE: map FILE (BIG bytes, opted in) privately, then
 * write a byte of it through another descriptor and grow it by a page,
 * breaking MORSEL_PRELOAD_DIRS's word; print what the mapping reads
 * before and after an mprotect to read-write (the swap): "before swap:
 * old|new", "after swap: old|new".
 */
static int changed_main(const char *file)
{
	uint8_t *p, b;
	int fd, w;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 3;
	p = mmap(NULL, BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED || p[MiB] != pat(MiB))
		return 4;
	printf("%s\n", is_cached(p) ? "cached" : is_file(p, file) ?
	       "ordinary" : "unknown");
	b = ~pat(MiB);
	w = open(file, O_WRONLY | O_CLOEXEC);
	if (w < 0 || pwrite(w, &b, 1, MiB) != 1 || ftruncate(w, BIG + PG))
		return 5;
	close(w);
	printf("before swap: %s\n", p[MiB] == b ? "new" : "old");
	fflush(stdout);
	if (mprotect(p, PG, PROT_READ | PROT_WRITE))
		return 6;
	printf("after swap: %s\n", p[MiB] == b ? "new" : "old");
	return 0;
}

/* ---- a stand-in daemon: requests answered only when the test says ---- */

#define STANDIN "/tmp/preload_test_standin.sock"

/*
 * A thread of the test that listens on STANDIN like morsel-cached: it
 * writes a byte to @note (if >= 0) for each request it receives, and once
 * @answer_at requests are waiting (0: never) it refuses all of them
 * (EACCES) and closes their connections.  It runs until stop().
 */
struct standin {
	int lfd, note, answer_at, stop[2];
	pthread_t th;
};

static void *standin_fn(void *arg)
{
	struct standin *d = arg;
	struct pollfd pf[10];
	struct morsel_cache_req req[8];
	int conn[8], nconn = 0, waiting = 0, i, j;

	for (;;) {
		pf[0] = (struct pollfd){ .fd = d->stop[0], .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = d->lfd, .events = POLLIN };
		for (i = 0; i < nconn; i++)
			pf[2 + i] = (struct pollfd){ .fd = conn[i], .events = POLLIN };
		if (poll(pf, 2 + nconn, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if ((pf[1].revents & POLLIN) && nconn < 8) {
			int c = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0)
				conn[nconn++] = c;
		}
		for (i = 0; i < nconn; i++) {
			union {
				char buf[CMSG_SPACE(sizeof(int) * 8)];
				struct cmsghdr align;
			} u;
			struct iovec iov = { &req[i], sizeof(req[i]) };
			struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
					      .msg_control = u.buf,
					      .msg_controllen = sizeof(u.buf) };
			struct cmsghdr *c;

			if (!(pf[2 + i].revents & (POLLIN | POLLHUP)))
				continue;
			if (recvmsg(conn[i], &msg, MSG_CMSG_CLOEXEC) <= 0) {
				close(conn[i]);	/* gone: forget it */
				conn[i] = conn[--nconn];
				pf[2 + i] = pf[2 + nconn];
				i--;
				continue;
			}
			for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
				for (j = 0; j < (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int)); j++)
					close(((int *)CMSG_DATA(c))[j]);
			waiting++;
			if (d->note >= 0 && write(d->note, "r", 1) != 1)
				break;
		}
		if (d->answer_at && waiting >= d->answer_at) {
			for (i = 0; i < nconn; i++) {
				struct morsel_cache_reply rep = {
					.magic = MORSEL_CACHE_MAGIC,
					.version = MORSEL_CACHE_VERSION,
					.op = req[i].op, .error = EACCES };

				if (send(conn[i], &rep, sizeof(rep), MSG_NOSIGNAL) < 0)
					break;
				close(conn[i]);
			}
			nconn = waiting = 0;
		}
	}
	for (i = 0; i < nconn; i++)
		close(conn[i]);
	return NULL;
}

/* Start a stand-in on STANDIN; 0 or -1. */
static int standin_start(struct standin *d, int note, int answer_at)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX, .sun_path = STANDIN };

	d->note = note;
	d->answer_at = answer_at;
	unlink(STANDIN);
	d->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (d->lfd < 0 || bind(d->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(d->lfd, 8) || pipe2(d->stop, O_CLOEXEC))
		return -1;
	return pthread_create(&d->th, NULL, standin_fn, d) ? -1 : 0;
}

static void standin_stop(struct standin *d)
{
	if (write(d->stop[1], "s", 1) == 1)
		pthread_join(d->th, NULL);
	close(d->stop[0]);
	close(d->stop[1]);
	close(d->lfd);
	unlink(STANDIN);
}

/* Under the stand-in: a thread's mmap of FILE, and how it went. */
struct asker {
	const char *file;
	pthread_t th;
	void *p;
};

static void *ask_fn(void *arg)
{
	struct asker *a = arg;
	int fd = open(a->file, O_RDONLY | O_CLOEXEC);

	a->p = fd < 0 ? MAP_FAILED : mmap(NULL, BIG, PROT_READ, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* "ordinary" if @p maps @file with its bytes, else what is wrong. */
static const char *mapped_as(void *p, const char *file)
{
	if (p == MAP_FAILED)
		return "failed";
	if (!is_file(p, file))
		return is_cached(p) ? "cached" : "unknown";
	return check_bytes(p, 0, BIG, BIG) >= 0 ? "wrong bytes" : "ordinary";
}

/* The stand-in's note descriptor ($PRELOAD_TEST_NOTE): one byte. */
static int await_request(void)
{
	const char *s = getenv("PRELOAD_TEST_NOTE");
	char c;

	return s && read(atoi(s), &c, 1) == 1 ? 0 : -1;
}

/* Another request to the stand-in, which makes it answer (answer_at 2). */
static int nudge(void)
{
	int sock = morsel_cache_connect(STANDIN), r;
	struct morsel_cache_stats st;

	if (sock < 0)
		return -1;
	r = morsel_cache_stats(sock, &st);
	close(sock);
	return r == -EACCES ? 0 : -1;
}

static volatile void *handler_p = MAP_FAILED;
static const char *handler_file;
static int handler_done = -1;

static void handler_maps(int sig)
{
	int fd = open(handler_file, O_RDONLY | O_CLOEXEC);
	char c = 'h';

	(void)sig;
	handler_p = mmap(NULL, BIG, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (write(handler_done, &c, 1) != 1)
		handler_p = MAP_FAILED;
}

/*
 * --child two FILE: two threads map FILE at once (the stand-in answers
 * when both asked).  --child fork FILE: a thread maps FILE; once its
 * request is in, the main thread forks (the child exits at once) and then
 * lets the stand-in answer.  --child signal FILE: the same, but a signal
 * whose handler maps FILE.2 interrupts the asking thread.  Each prints
 * what it saw, a line per step.
 */
static int standin_main(const char *mode, const char *file)
{
	struct asker a = { .file = file }, b = { .file = file };
	char other[PATH_MAX], c;
	int status, p[2];
	pid_t pid;

	if (!strcmp(mode, "two")) {
		if (pthread_create(&a.th, NULL, ask_fn, &a) ||
		    pthread_create(&b.th, NULL, ask_fn, &b))
			return 3;
		pthread_join(a.th, NULL);
		pthread_join(b.th, NULL);
		printf("a: %s\nb: %s\n", mapped_as(a.p, file), mapped_as(b.p, file));
		return 0;
	}
	snprintf(other, sizeof(other), "%s.2", file);
	if (pipe2(p, O_CLOEXEC))
		return 3;
	handler_file = other;
	handler_done = p[1];
	signal(SIGUSR1, handler_maps);
	if (pthread_create(&a.th, NULL, ask_fn, &a) || await_request())
		return 4;
	printf("request in\n");
	fflush(stdout);
	if (!strcmp(mode, "fork")) {
		pid = fork();
		if (!pid)
			_exit(0);
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 5;
		printf("forked\n");
	} else {
		pthread_kill(a.th, SIGUSR1);
		if (read(p[0], &c, 1) != 1)
			return 5;
		printf("handler: %s\n", mapped_as((void *)handler_p, other));
	}
	fflush(stdout);
	if (nudge())
		return 6;
	pthread_join(a.th, NULL);
	printf("thread: %s\n", mapped_as(a.p, file));
	return 0;
}

/*
 * --child map FILE: map FILE whole, read-only and shared, check its bytes
 * and errno; print "cached" or "ordinary", "errno kept" or not.
 * --child map-as-limit FILE: the same under a finite RLIMIT_AS (256 GiB).
 * --child lock..., see lock_main(); --child changed, changed_main();
 * --child two|fork|signal, standin_main().
 */
static int child_main(const char *mode, const char *file)
{
	struct rlimit as = { 256UL << 30, 256UL << 30 };
	struct stat st;
	uint8_t *p;
	int fd;

	if (!strncmp(mode, "lock", 4))
		return lock_main(mode, file);
	if (!strcmp(mode, "changed"))
		return changed_main(file);
	if (!strcmp(mode, "two") || !strcmp(mode, "fork") ||
	    !strcmp(mode, "signal"))
		return standin_main(mode, file);
	if (!strcmp(mode, "map-as-limit") && setrlimit(RLIMIT_AS, &as))
		return 2;
	if (!strcmp(mode, "map-secure")) {
		struct vma v;

		printf("secure: %lu\n", getauxval(AT_SECURE));
		printf("shim: %s\n", !vma_of((void *)(uintptr_t)&mmap, &v) &&
		       strstr(v.path, "libmorsel-preload.so") ? "yes" : "no");
	}
	if (strncmp(mode, "map", 3))
		return 2;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st))
		return 3;
	errno = 4242;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 4;
	printf("%s\n", errno == 4242 ? "errno kept" : "errno changed");
	printf("%s\n", is_cached(p) ? "cached" : is_file(p, file) ?
	       "ordinary" : "unknown");
	if (check_bytes(p, 0, st.st_size, st.st_size) >= 0)
		return 5;
	printf("bytes ok\n");
	return 0;
}

/* For in_child(): a write to @p. */
static void write_byte(volatile char *p)
{
	*p = 1;
}

/* ---- the shim is there ---- */

TEST(shim_is_loaded)
{
	struct vma v;

	ASSERT_NE(NULL, getenv("LD_PRELOAD"));
	ASSERT_EQ(0, vma_of((void *)(uintptr_t)&mmap, &v));
	ASSERT_NE(NULL, strstr(v.path, "libmorsel-preload.so")) TH_LOG("%s", v.path);
}

/* ---- fall-backs: each gives the kernel's own mapping ---- */

TEST(fallback_prot_write)
{
	int fd = open_pattern("w", BIG, O_RDWR);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: not PROT_READ");
	ASSERT_TRUE(is_file(p, tpath("w")));
	p[5] = 0x55;
	ASSERT_EQ(0, msync(p, PG, MS_SYNC));
	ASSERT_EQ(0, munmap(p, BIG));
	close(fd);
}

TEST(fallback_prot_exec)
{
	int fd = open_pattern("x", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: not PROT_READ");
	ASSERT_TRUE(is_file(p, tpath("x")));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
	ASSERT_EQ(0, munmap(p, BIG));
}

TEST(fallback_private_read_write)
{
	int fd = open_pattern("prw", BIG, O_RDONLY);
	uint8_t *p, b;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: not PROT_READ");
	ASSERT_TRUE(is_file(p, tpath("prw")));
	p[7] = ~pat(7);
	ASSERT_EQ(1, pread(fd, &b, 1, 7));
	ASSERT_EQ(pat(7), b);
}

TEST(fallback_map_fixed)
{
	int fd = open_pattern("fixed", BIG, O_RDONLY);
	uint8_t *res, *p;

	ASSERT_LE(0, fd);
	res = mmap(NULL, 4 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	p = CAPTURE(mmap(res, BIG, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0));
	ASSERT_EQ(res, p);
	ASSERT_SAID("fallback: MAP_FIXED");
	ASSERT_TRUE(is_file(p, tpath("fixed")));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
}

TEST(fallback_map_shared_validate)
{
	int fd = open_pattern("validate", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED_VALIDATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: map type");
	ASSERT_TRUE(is_file(p, tpath("validate")));
	/* The kernel still validates: unknown flags give EOPNOTSUPP. */
	ASSERT_ERRNO(EOPNOTSUPP, map(BIG, PROT_READ, MAP_SHARED_VALIDATE |
				     MAP_SYNC, fd, 0));
}

TEST(fallback_other_flags)
{
	int fd = open_pattern("flags32", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_PRIVATE | MAP_32BIT, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: flags");
	ASSERT_TRUE(is_file(p, tpath("flags32")));
	ASSERT_GT(1UL << 31, (unsigned long)p);
}

TEST(fallback_unaligned_offset_and_zero_length)
{
	int fd = open_pattern("unaligned", BIG, O_RDONLY);

	ASSERT_LE(0, fd);
	ASSERT_ERRNO(EINVAL, map(2 * MiB, PROT_READ, MAP_SHARED, fd, 100));
	ASSERT_SAID("fallback: unaligned offset");
	ASSERT_ERRNO(EINVAL, map(0, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_SAID("fallback: zero length");
}

TEST(fallback_small_file)
{
	int fd = open_pattern("small", 512 * KiB, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(512 * KiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: small file");
	ASSERT_TRUE(is_file(p, tpath("small")));
	ASSERT_EQ(-1, check_bytes(p, 0, 512 * KiB, 512 * KiB));
}

TEST(fallback_file_on_morselfs)
{
	const char *path = mpath("preload_test_file");
	struct vma v;
	uint8_t *p, *buf = malloc(BIG);
	uint64_t i;
	int fd = fresh(path, 0);

	ASSERT_LE(0, fd);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < BIG; i++)
		buf[i] = pat(i);
	ASSERT_EQ((ssize_t)BIG, pwrite(fd, buf, BIG, 0));
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: file on morselfs");
	/* The kernel mounted that morsel itself: its path, its extent. */
	ASSERT_EQ(0, vma_of(p, &v));
	ASSERT_STREQ(path, v.path);
	ASSERT_EQ(morsel_order_extent(2), v.end - v.start);
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
	ASSERT_EQ(0, munmap(p, BIG));
	unlink(path);
}

TEST(fallback_not_a_regular_file)
{
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(4 * MiB, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: not a regular file");
	ASSERT_EQ(0, p[MiB]);
}

TEST(fallback_anonymous)
{
	struct vma v;
	uint8_t *p;

	p = CAPTURE(mmap(NULL, 4 * MiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0));
	ASSERT_NE(MAP_FAILED, p);
	/* No line at MORSEL_PRELOAD_DEBUG=1: anonymous memory is not news. */
	ASSERT_STREQ("", dbg);
	ASSERT_EQ(0, vma_of(p, &v));
	ASSERT_STREQ("", v.path);
	ASSERT_EQ(0, p[MiB]);
}

/*
 * A program that opened the file for writing may write it and read the
 * result through its shared mapping (LMDB, SQLite): the kernel's mapping,
 * which sees the write.
 */
TEST(fallback_fd_not_read_only)
{
	int fd = open_pattern("rdwr", BIG, O_RDWR);
	uint8_t *p, b = 0xab;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: fd not opened O_RDONLY");
	ASSERT_TRUE(is_file(p, tpath("rdwr")));
	ASSERT_EQ(1, pwrite(fd, &b, 1, MiB));
	ASSERT_EQ(0xab, p[MiB]);
}

TEST(fallback_past_the_extent)
{
	/* 1.5 MiB: order 1, a 2 MiB extent; 3 MiB do not fit in it. */
	int fd = open_pattern("past", 3 * MiB / 2, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(3 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: past the morsel's extent");
	ASSERT_TRUE(is_file(p, tpath("past")));
	ASSERT_EQ(-1, check_bytes(p, 0, 3 * MiB / 2, 3 * MiB / 2));
	ASSERT_EQ(SIGBUS, in_child(read_byte, (volatile char *)p + 2 * MiB));
}

TEST(fallback_daemon_absent)
{
	const char *env[] = { "MORSEL_CACHED_SOCKET=/tmp/preload_test.none", NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("absent"), BIG));
	ASSERT_EQ(0, run_child("map", tpath("absent"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: no daemon")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "errno kept\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "bytes ok\n")) TH_LOG("%s", out);
}

/*
 * Review 2026-11b H6, appendix B: a program holds a POSIX read lock on
 * the file it maps.  With no daemon the shim falls back; another process
 * must still be refused the write lock after the mmap and after the
 * munmap.  (The shim used to close a dup of the fd on the fall-back, and
 * close() of any descriptor of a file drops every POSIX lock the process
 * holds on it.)
 */
TEST(fallback_daemon_absent_keeps_posix_locks)
{
	const char *env[] = { "MORSEL_CACHED_SOCKET=/tmp/preload_test.none", NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("lock_absent"), BIG));
	ASSERT_EQ(0, run_child("lock", tpath("lock_absent"), env, out,
			       sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: no daemon")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "before: held\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "mmap: held\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "munmap: held\n")) TH_LOG("%s", out);
}

TEST(fallback_daemon_refuses)
{
	/* Larger than the daemon's budget (128M): a sparse file. */
	int fd = open(tpath("huge"), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint8_t *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 200 * MiB));
	close(fd);
	fd = open(tpath("huge"), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	errno = 4242;
	p = map(200 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(4242, errno);
	ASSERT_SAID("fallback: daemon refused");
	ASSERT_TRUE(is_file(p, tpath("huge")));
	ASSERT_EQ(0, p[100 * MiB]);
}

/* The same through a refusal of the daemon (over its budget). */
TEST(fallback_daemon_refuses_keeps_posix_locks)
{
	char path[PATH_MAX];
	uint8_t *p;
	int fd;

	snprintf(path, sizeof(path), "%s", tpath("lock_huge"));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 200 * MiB));
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, rdlock_byte0(fd));
	ASSERT_EQ(1, locked_for_others(path));
	p = map(200 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_SAID("fallback: daemon refused");
	ASSERT_EQ(1, locked_for_others(path));
	ASSERT_EQ(0, munmap(p, 200 * MiB));
	ASSERT_EQ(1, locked_for_others(path));
}

TEST(fallback_disabled)
{
	const char *env[] = { "MORSEL_PRELOAD_DISABLE=1", NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("disabled"), BIG));
	ASSERT_EQ(0, run_child("map", tpath("disabled"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: disabled")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
}

/* ---- the cached path ---- */

TEST(cached_windows_read_the_file)
{
	static const struct { uint64_t off, len; } w[] = {
		{ 0, BIG }, { PG, 2 * PG }, { MiB, MiB }, { 3 * MiB - PG, PG + 100 },
		{ 3 * MiB, 100 }, { 3 * MiB, PG }, { 234 * PG, 5 * PG + 1 },
	};
	int fd = open_pattern("windows", BIG, O_RDONLY);
	uint8_t *p[sizeof(w) / sizeof(w[0])];
	unsigned int i;

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		uint64_t len = (w[i].len + PG - 1) & ~(PG - 1);

		p[i] = map(w[i].len, PROT_READ, i % 2 ? MAP_PRIVATE : MAP_SHARED,
			   fd, w[i].off);
		ASSERT_NE(MAP_FAILED, p[i]);
		ASSERT_SAID(": cached (");
		ASSERT_TRUE(is_cached(p[i]));
		/* Zeros to the end of the last page, as a file mapping. */
		ASSERT_EQ(-1, check_bytes(p[i], w[i].off, len, BIG))
			TH_LOG("window %u", i);
	}
	close(fd);
	for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		ASSERT_EQ(0, munmap(p[i], w[i].len));
}

TEST(cached_sigbus_past_eof_as_the_kernel)
{
	int fd = open_pattern("sigbus", BIG, O_RDONLY);
	uint8_t *p, *q;

	ASSERT_LE(0, fd);
	p = map(BIG + 3 * PG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	/* An ordinary mapping of the same file, for comparison. */
	q = map(BIG + 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_TRUE(is_file(q, tpath("sigbus")));
	ASSERT_EQ(0, in_child(read_byte, (volatile char *)p + BIG));
	ASSERT_EQ(0, in_child(read_byte, (volatile char *)q + BIG));
	ASSERT_EQ(SIGBUS, in_child(read_byte, (volatile char *)p + 3 * MiB + PG));
	ASSERT_EQ(SIGBUS, in_child(read_byte, (volatile char *)q + 3 * MiB + PG));
}

TEST(cached_partial_munmap_then_release)
{
	int fd = open_pattern("partial", BIG, O_RDONLY);
	struct vma v;
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	close(fd);
	/* Pieces: the middle, the start, again the middle (as the kernel: 0). */
	ASSERT_EQ(0, CAPTURE(munmap(p + MiB, 16 * PG)));
	ASSERT_SAID("released, 2 part(s)");
	ASSERT_EQ(0, munmap(p, MiB));
	ASSERT_EQ(0, munmap(p + MiB, 16 * PG));
	ASSERT_TRUE(is_cached(p + 2 * MiB));
	ASSERT_EQ(-1, check_bytes(p + 2 * MiB, 2 * MiB, MiB, BIG));
	/* The last piece, by a range longer than the rest: the mount goes. */
	ASSERT_EQ(0, CAPTURE(munmap(p + MiB + 16 * PG, 4 * MiB)));
	ASSERT_SAID("extent unmapped");
	ASSERT_EQ(-1, vma_of(p, &v));
	ASSERT_EQ(-1, vma_of(p + 2 * MiB, &v));
	ASSERT_EQ(-1, vma_of(p + 512 * MiB, &v));
}

TEST(cached_munmap_across_shim_and_other_mappings)
{
	int fd = open_pattern("across", BIG, O_RDONLY);
	struct vma v;
	uint8_t *p, *before;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	before = mmap(p - PG, PG, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (before == MAP_FAILED)
		SKIP(return, "the page before the mount is taken");
	before[0] = 1;
	ASSERT_EQ(0, munmap(before, PG + BIG));
	ASSERT_EQ(-1, vma_of(before, &v));
	ASSERT_EQ(-1, vma_of(p, &v));
}

TEST(cached_private_mprotect_write_is_private)
{
	int fd = open_pattern("cow", BIG, O_RDONLY);
	uint8_t *p, *q, b;

	ASSERT_LE(0, fd);
	p = map(2 * MiB, PROT_READ, MAP_PRIVATE, fd, MiB);
	q = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_TRUE(is_cached(p));
	ASSERT_TRUE(is_cached(q));
	close(fd);
	ASSERT_EQ(0, CAPTURE(mprotect(p, 2 * PG, PROT_READ | PROT_WRITE)));
	ASSERT_SAID("swap");
	ASSERT_TRUE(is_file(p, tpath("cow")));
	p[10] = ~pat(MiB + 10);
	p[PG + 1] = 0;
	ASSERT_EQ((uint8_t)~pat(MiB + 10), p[10]);
	/* The rest of p, the other mapping and the file are unchanged. */
	ASSERT_EQ(-1, check_bytes(p + 2 * PG, MiB + 2 * PG, 2 * MiB - 2 * PG, BIG));
	ASSERT_EQ(-1, check_bytes(q, 0, BIG, BIG));
	ASSERT_TRUE(is_cached(q));
	fd = open(tpath("cow"), O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(1, pread(fd, &b, 1, MiB + 10));
	ASSERT_EQ(pat(MiB + 10), b);
	/* Writing past the new rights still faults, as the kernel's. */
	ASSERT_EQ(SIGSEGV, in_child(write_byte, (volatile char *)p + 3 * PG));
}

TEST(cached_shared_read_only_fd_mprotect_write_eacces)
{
	int fd = open_pattern("eacces", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_ERRNO(EACCES, CAPTURE(mprotect(p, PG, PROT_READ | PROT_WRITE)));
	ASSERT_SAID("swap");
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
	ASSERT_EQ(SIGSEGV, in_child(write_byte, (volatile char *)p));
}

TEST(cached_mprotect_read_and_madvise_keep_the_mount)
{
	int fd = open_pattern("advice", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, CAPTURE(mprotect(p + PG, PG, PROT_READ)));
	ASSERT_SAID("already so");
	ASSERT_EQ(0, madvise(p, BIG, MADV_WILLNEED));
	ASSERT_EQ(0, madvise(p, BIG, MADV_SEQUENTIAL));
	ASSERT_EQ(0, madvise(p, 2 * MiB, MADV_HUGEPAGE));
	ASSERT_EQ(0, madvise(p, BIG, MADV_DONTDUMP));
	ASSERT_EQ(0, madvise(p, BIG, MADV_DODUMP));
	ASSERT_EQ(0, CAPTURE(madvise(p, BIG, MADV_DONTNEED)));
	ASSERT_SAID("nothing to do");
	ASSERT_EQ(0, madvise(p + MiB, MiB, MADV_PAGEOUT));
	/* glibc's posix_madvise, which calls the kernel itself: the same. */
	ASSERT_EQ(0, posix_madvise(p + PG, MiB, POSIX_MADV_RANDOM));
	ASSERT_EQ(0, posix_madvise(p, BIG, POSIX_MADV_WILLNEED));
	/* MADV_FREE: EINVAL, as on every file mapping. */
	ASSERT_ERRNO(EINVAL, madvise(p, PG, MADV_FREE));
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
}

TEST(cached_other_advice_swaps)
{
	int fd = open_pattern("dontfork", BIG, O_RDONLY);
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, CAPTURE(madvise(p + MiB, PG, MADV_DONTFORK)));
	ASSERT_SAID("madvise: swap");
	ASSERT_TRUE(is_file(p + MiB, tpath("dontfork")));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
}

/*
 * A program that closes every descriptor it does not know: the shim keeps
 * none of the program's file (the swap moves its standby mapping, which
 * needs none), so the swap still works, and the shim's connection is made
 * again for the next mmap.
 */
TEST(cached_program_closes_the_shims_fds)
{
	int fd = open_pattern("closeall", BIG, O_RDONLY);
	uint8_t *p, *q;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, close_range(3, ~0U, 0));
	ASSERT_EQ(0, CAPTURE(mprotect(p, PG, PROT_READ | PROT_WRITE)));
	ASSERT_SAID("mprotect: swap");
	ASSERT_TRUE(is_file(p, tpath("closeall")));
	p[1] = ~pat(1);
	ASSERT_EQ((uint8_t)~pat(1), p[1]);
	ASSERT_EQ(-1, check_bytes(p + PG, PG, BIG - PG, BIG));
	fd = open(tpath("closeall"), O_RDONLY | O_CLOEXEC);
	q = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_TRUE(is_cached(q)) TH_LOG("%s", dbg);
	ASSERT_EQ(0, munmap(p, BIG));
	ASSERT_EQ(0, munmap(q, BIG));
}

/*
 * Review 2026-11b M3: a program closes every descriptor above 2 and opens
 * new ones, which get the low numbers again; the munmap of a cached range
 * must close none of them.  (The shim used to close the number its dup
 * had, whatever it was by then.)
 */
TEST(cached_munmap_keeps_a_reused_descriptor)
{
	int fd = open_pattern("reuse", BIG, O_RDONLY), fds[64], i;
	struct stat want, st;
	uint8_t *p;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pattern_file(tpath("reuse_other"), PG));
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, close_range(3, ~0U, 0));
	for (i = 0; i < 64; i++) {
		fds[i] = open(tpath("reuse_other"), O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fds[i]);
	}
	ASSERT_EQ(0, fstat(fds[0], &want));
	ASSERT_EQ(0, CAPTURE(munmap(p, BIG)));
	ASSERT_SAID("extent unmapped");
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, fstat(fds[i], &st))
			TH_LOG("the program's descriptor %d was closed", fds[i]);
		ASSERT_EQ(want.st_ino, st.st_ino);
	}
}

/*
 * The program's POSIX read lock on a cached file holds through the cached
 * mmap, a partial and a full munmap, and a swap (review 2026-11b H6).
 */
TEST(cached_keeps_posix_locks)
{
	int fd = open_pattern("lock_cached", BIG, O_RDONLY);
	char path[PATH_MAX];
	uint8_t *p;

	ASSERT_LE(0, fd);
	snprintf(path, sizeof(path), "%s", tpath("lock_cached"));
	ASSERT_EQ(0, rdlock_byte0(fd));
	ASSERT_EQ(1, locked_for_others(path));
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(1, locked_for_others(path));
	ASSERT_EQ(0, munmap(p + MiB, MiB));
	ASSERT_EQ(1, locked_for_others(path));
	ASSERT_EQ(0, CAPTURE(munmap(p, BIG)));
	ASSERT_SAID("extent unmapped");
	ASSERT_EQ(1, locked_for_others(path));
	/* A swap, then the munmap of the ordinary mapping. */
	p = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, CAPTURE(mprotect(p, PG, PROT_READ | PROT_WRITE)));
	ASSERT_SAID("mprotect: swap");
	ASSERT_EQ(1, locked_for_others(path));
	ASSERT_EQ(0, munmap(p, BIG));
	ASSERT_EQ(1, locked_for_others(path));
}

/*
 * POSIX locks survive exec; a cached mapping at the time of the exec must
 * not change that (the shim's O_CLOEXEC dup used to be closed by the exec,
 * which dropped the lock).
 */
TEST(cached_exec_keeps_posix_locks)
{
	const char *const env[] = { NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("lock_exec"), BIG));
	ASSERT_EQ(0, run_child("lock-exec", tpath("lock_exec"), env, out,
			       sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "cached\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "mmap: held\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "after exec: held\n")) TH_LOG("%s", out);
}

/*
 * The standby (the ordinary PROT_NONE mapping of the file that the swap
 * moves over the mount) is the shim's: a program's munmap or MAP_FIXED
 * mmap over it swaps the cached mapping first, and the program's bytes
 * stay.
 */
TEST(cached_calls_over_the_standby_swap)
{
	int fd = open_pattern("standby", BIG, O_RDONLY);
	struct vma v;
	uint8_t *p, *a;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, standby_of(tpath("standby"), &v));
	ASSERT_EQ(morsel_order_extent(2), v.end - v.start);
	ASSERT_EQ(0, CAPTURE(munmap((void *)v.start, PG)));
	ASSERT_SAID("munmap over a standby: swap");
	ASSERT_TRUE(is_file(p, tpath("standby")));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
	ASSERT_EQ(-1, standby_of(tpath("standby"), &v));
	ASSERT_EQ(0, munmap(p, BIG));

	p = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(0, standby_of(tpath("standby"), &v));
	a = CAPTURE(mmap((void *)(v.start + MiB), PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ((void *)(v.start + MiB), a);
	ASSERT_SAID("mmap MAP_FIXED: swap");
	a[0] = 1;
	ASSERT_TRUE(is_file(p, tpath("standby")));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
}

TEST(cached_mremap_swaps)
{
	int fd = open_pattern("mremap", BIG, O_RDONLY);
	uint8_t *p, *q;

	ASSERT_LE(0, fd);
	p = map(MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	close(fd);
	q = CAPTURE(mremap(p, MiB, 3 * MiB, MREMAP_MAYMOVE));
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_SAID("mremap: swap");
	ASSERT_TRUE(is_file(q, tpath("mremap")));
	ASSERT_EQ(-1, check_bytes(q, 0, 3 * MiB, BIG));
	ASSERT_EQ(0, munmap(q, 3 * MiB));
}

TEST(cached_map_fixed_over_it_swaps)
{
	int fd = open_pattern("over", BIG, O_RDONLY);
	uint8_t *p, *a;

	ASSERT_LE(0, fd);
	p = map(2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	a = CAPTURE(mmap(p + MiB, PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	ASSERT_EQ(p + MiB, a);
	ASSERT_SAID("mmap MAP_FIXED: swap");
	a[0] = 7;
	ASSERT_TRUE(is_file(p, tpath("over")));
	ASSERT_EQ(-1, check_bytes(p, 0, MiB, BIG));
	ASSERT_EQ(-1, check_bytes(p + MiB + PG, MiB + PG, MiB - PG, BIG));
}

TEST(cached_fork)
{
	int fd = open_pattern("fork", BIG, O_RDONLY), status;
	uint8_t *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pattern_file(tpath("fork2"), BIG));
	ASSERT_EQ(0, pattern_file(tpath("fork3"), BIG));
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	pid = fork();
	if (!pid) {
		int f = open(tpath("fork2"), O_RDONLY | O_CLOEXEC);
		uint8_t *c = mmap(NULL, BIG, PROT_READ, MAP_SHARED, f, 0);

		/* Its own connection; the inherited mapping; its own munmap. */
		_exit(check_bytes(p, 0, BIG, BIG) >= 0 ? 1 :
		      c == MAP_FAILED || !is_cached(c) ? 2 :
		      check_bytes(c, 0, BIG, BIG) >= 0 ? 3 :
		      munmap(p, BIG) || is_cached(p) ? 4 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_TRUE(is_cached(p));
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));
	close(fd);
	fd = open(tpath("fork3"), O_RDONLY | O_CLOEXEC);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
}

#define THREADS 8
#define ROUNDS 4

/*
 * Each thread maps windows of the same file.  (Not through tpath(): its
 * rotating static buffers are for one thread; two threads filling one at
 * once could hand open() a half-written name.)
 */
static void *thread_fn(void *arg)
{
	uintptr_t t = (uintptr_t)arg, bad = 0;
	unsigned int r;

	for (r = 0; r < ROUNDS && !bad; r++) {
		uint64_t off = ((t * ROUNDS + r) % 17) * 32 * PG;
		int fd = open(TDIR "/threads", O_RDONLY | O_CLOEXEC);
		uint8_t *p = mmap(NULL, MiB, PROT_READ,
				  r % 2 ? MAP_PRIVATE : MAP_SHARED, fd, off);

		close(fd);
		if (p == MAP_FAILED || !is_cached(p) ||
		    check_bytes(p, off, MiB, BIG) >= 0 || munmap(p, MiB))
			bad = 1 + t;
	}
	return (void *)bad;
}

TEST(cached_many_threads_at_once)
{
	pthread_t th[THREADS];
	uintptr_t t, n, bad = 0;
	void *ret;

	const char *s;
	int lines = 0;

	ASSERT_EQ(0, pattern_file(tpath("threads"), BIG));
	cap_start();
	for (t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, thread_fn, (void *)t))
			break;
	n = t;
	for (t = 0; t < n; t++)
		if (pthread_join(th[t], &ret) || ret)
			bad = 1 + t;
	cap_end();
	ASSERT_EQ(THREADS, n);
	ASSERT_EQ(0, bad) TH_LOG("thread %lu", (unsigned long)bad - 1);
	/* Every one of them was served by the daemon, and gave back. */
	for (s = dbg; (s = strstr(s, ": cached (")); s++)
		lines++;
	ASSERT_EQ(THREADS * ROUNDS, lines) TH_LOG("%s", dbg);
	for (lines = 0, s = dbg; (s = strstr(s, "extent unmapped")); s++)
		lines++;
	ASSERT_EQ(THREADS * ROUNDS, lines) TH_LOG("%s", dbg);
}

TEST(cached_errno_kept)
{
	const char *const env[] = { NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("errno"), BIG));
	ASSERT_EQ(0, run_child("map", tpath("errno"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "cached\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "errno kept\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "bytes ok\n")) TH_LOG("%s", out);
}

TEST(stats_lines)
{
	const char *env[] = { NULL, NULL, NULL };
	char out[8192], kv[PATH_MAX + 32], line[128], stats[PATH_MAX];
	unsigned long long bytes, ns;
	int cached = 0, real = 0;
	FILE *f;

	snprintf(stats, sizeof(stats), "%s", tpath("stats"));
	unlink(stats);
	snprintf(kv, sizeof(kv), "MORSEL_PRELOAD_STATS=%s", stats);
	env[0] = kv;
	ASSERT_EQ(0, pattern_file(tpath("stats_big"), BIG));
	ASSERT_EQ(0, pattern_file(tpath("stats_small"), 512 * KiB));
	ASSERT_EQ(0, run_child("map", tpath("stats_big"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_EQ(0, run_child("map", tpath("stats_small"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	env[1] = "MORSEL_CACHED_SOCKET=/tmp/preload_test.none";
	ASSERT_EQ(0, run_child("map", tpath("stats_big"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	f = fopen(stats, "re");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		char kind[16];

		ASSERT_EQ(3, sscanf(line, "mmap %15s %llu %llu", kind, &bytes, &ns))
			TH_LOG("%s", line);
		ASSERT_EQ(BIG, bytes);
		ASSERT_LT(0, ns);
		cached += !strcmp(kind, "cached");
		real += !strcmp(kind, "real");
	}
	fclose(f);
	ASSERT_EQ(1, cached);
	ASSERT_EQ(1, real);
}

TEST(python_mmap_module)
{
	const char *argv[] = { "/usr/bin/python3", "-c",
		"import mmap, sys\n"
		"f = open(sys.argv[1], 'rb')\n"
		"m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n"
		"print('len', len(m), 'sum', sum(m[::4096]))\n"
		"m.close()\n", NULL, NULL };
	char out[8192], want[64];
	unsigned long sum = 0, i;

	if (access(argv[0], X_OK))
		SKIP(return, "no python3");
	ASSERT_EQ(0, pattern_file(tpath("py"), BIG));
	argv[3] = tpath("py");
	ASSERT_EQ(0, run(argv, NULL, out, sizeof(out))) TH_LOG("%s", out);
	for (i = 0; i < BIG; i += PG)
		sum += pat(i);
	snprintf(want, sizeof(want), "len %lu sum %lu\n", BIG, sum);
	ASSERT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, ": cached (")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "extent unmapped")) TH_LOG("%s", out);
}

/* ---- files that others write: never a snapshot (review 2026-11b M2) ---- */

/*
 * The rule's fall-back: a file outside MORSEL_PRELOAD_DIRS, neither sealed
 * nor on a read-only file system type, is the kernel's to map, so a
 * MAP_SHARED mapping shows another process's pwrite at once, and so does
 * a page of a MAP_PRIVATE one that the program has not written (Linux's
 * semantics).  The shim used to serve both from the daemon's copy: the
 * write never showed.
 */
TEST(live_map_shared_sees_another_process_pwrite)
{
	uint8_t *p, *q;
	int fd;

	ASSERT_EQ(0, pattern_file(lpath("shared"), BIG));
	fd = open(lpath("shared"), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	q = map(BIG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	ASSERT_EQ(pat(MiB), p[MiB]);
	ASSERT_EQ(pat(MiB), q[MiB]);
	ASSERT_EQ(0, other_process_writes(lpath("shared"), MiB, ~pat(MiB)));
	ASSERT_EQ(0, other_process_writes(lpath("shared"), BIG - 1, 0x5a));
	ASSERT_EQ((uint8_t)~pat(MiB), p[MiB]);
	ASSERT_EQ(0x5a, p[BIG - 1]);
	ASSERT_EQ((uint8_t)~pat(MiB), q[MiB]);
	ASSERT_EQ(0x5a, q[BIG - 1]);
	ASSERT_SAID("fallback: may change while mapped");
	ASSERT_TRUE(is_file(p, lpath("shared")));
	ASSERT_TRUE(is_file(q, lpath("shared")));
}

/*
 * A read-only mount proves nothing about a file: here a read-only bind
 * mount of a directory whose files are written through the other mount
 * (a container's read-only volume).  statvfs says ST_RDONLY; the
 * mapping must still show the write.
 */
TEST(live_read_only_mount_is_not_enough)
{
	char rw[PATH_MAX], ro[PATH_MAX], rof[PATH_MAX + 8];
	struct statvfs sv;
	int fd, ro_flag, mounted;
	uint8_t *p, before = 0, after = 0;

	snprintf(rw, sizeof(rw), "%s", lpath("rw"));
	snprintf(ro, sizeof(ro), "%s", lpath("ro"));
	snprintf(rof, sizeof(rof), "%s/f", ro);
	mkdir(rw, 0755);
	mkdir(ro, 0755);
	ASSERT_EQ(0, pattern_file(lpath("rw/f"), BIG));
	if (mount(rw, ro, NULL, MS_BIND, NULL))
		SKIP(return, "bind mount: %s", strerror(errno));
	mounted = !mount(NULL, ro, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL);
	ro_flag = !statvfs(rof, &sv) && (sv.f_flag & ST_RDONLY);
	fd = open(rof, O_RDONLY | O_CLOEXEC);
	p = fd < 0 ? MAP_FAILED : map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		before = p[MiB];
		if (!other_process_writes(lpath("rw/f"), MiB, ~pat(MiB)))
			after = p[MiB];
	}
	umount2(ro, MNT_DETACH);
	ASSERT_TRUE(mounted);
	ASSERT_TRUE(ro_flag);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(pat(MiB), before);
	ASSERT_EQ((uint8_t)~pat(MiB), after);
	ASSERT_SAID("fallback: may change while mapped");
}

/* tests/programs/@name in the repository under test. */
static const char *program(const char *name)
{
	static char buf[PATH_MAX];
	const char *repo = getenv("PRELOAD_TEST_REPO");

	snprintf(buf, sizeof(buf), "%s/tests/programs/%s", repo ? repo : ".",
		 name);
	return buf;
}

/* How many times @s occurs in @out. */
static int occurrences(const char *out, const char *s)
{
	int n = 0;

	for (; (out = strstr(out, s)); out++)
		n++;
	return n;
}

/*
 * An LMDB environment opened MDB_RDONLY (py-lmdb readonly=True, the
 * system liblmdb) beside a writer process that commits, both Python under
 * the shim: after each commit a new read transaction sees it.  data.mdb
 * (3 MiB, mapped 10 MiB from an O_RDONLY descriptor) used to be served
 * from the cache: the reader saw the meta page of the load forever.
 */
TEST(live_lmdb_reader_sees_every_commit)
{
	const char *argv[] = { "/usr/bin/python3", program("live_reader.py"),
			       "lmdb", lpath("lmdb"), "12", NULL };
	static char out[65536];
	int status;

	if (access(argv[0], X_OK))
		SKIP(return, "no python3");
	mkdir(lpath("lmdb"), 0755);
	status = run(argv, NULL, out, sizeof(out));
	ASSERT_EQ(0, status) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "saw every commit (12)\n")) TH_LOG("%s", out);
	/* The reader's mapping of data.mdb (the writer's fd is O_RDWR). */
	ASSERT_LE(1, occurrences(out, "fallback: may change while mapped"))
		TH_LOG("%s", out);
	ASSERT_EQ(0, occurrences(out, ": cached (")) TH_LOG("%s", out);
}

/*
 * A SQLite read-only connection (mode=ro, PRAGMA mmap_size=256M; Python's
 * sqlite3, the system libsqlite3) beside a writer process, both under the
 * shim: after each commit a new read sees the counter, the row count and
 * the new row, and the database is never reported corrupt; quick_check
 * at the end.  The file (3.4 MiB, growing) used to be served from the
 * cache: the reader read the file change counter from the load's copy
 * and kept its stale pages.
 */
TEST(live_sqlite_read_only_connection_sees_commits)
{
	const char *argv[] = { "/usr/bin/python3", program("live_reader.py"),
			       "sqlite", lpath("live.db"), "12", NULL };
	static char out[65536];
	int status;

	if (access(argv[0], X_OK))
		SKIP(return, "no python3");
	unlink(lpath("live.db"));
	status = run(argv, NULL, out, sizeof(out));
	ASSERT_EQ(0, status) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "saw every commit (12)\n")) TH_LOG("%s", out);
	ASSERT_EQ(NULL, strstr(out, "corrupt")) TH_LOG("%s", out);
	ASSERT_LE(1, occurrences(out, "fallback: may change while mapped"))
		TH_LOG("%s", out);
	ASSERT_EQ(0, occurrences(out, ": cached (")) TH_LOG("%s", out);
}

/*
 * Still cached under the rule: a file in a directory of
 * MORSEL_PRELOAD_DIRS (this run names /tmp/preload_test; the name is
 * matched whole, so /tmp/preload_test_live is not in it), also when the
 * variable names it with a trailing '/', beside entries that are
 * relative, empty or absent, or through a symbolic link.
 */
TEST(cached_opted_in_directory)
{
	const char *env1[] = { "MORSEL_PRELOAD_DIRS=relative::/nonexistent:"
			       LDIR "/", NULL };
	const char *env2[] = { "MORSEL_PRELOAD_DIRS=" TDIR "/link", NULL };
	const char *env3[] = { "MORSEL_PRELOAD_DIRS=", NULL };
	int fd = open_pattern("optin", BIG, O_RDONLY), lfd;
	char out[8192];
	uint8_t *p;

	ASSERT_LE(0, fd);
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p));
	ASSERT_SAID(", in MORSEL_PRELOAD_DIRS)");
	ASSERT_EQ(-1, check_bytes(p, 0, BIG, BIG));

	ASSERT_EQ(0, pattern_file(lpath("optin"), BIG));
	lfd = open(lpath("optin"), O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, lfd);
	p = map(BIG, PROT_READ, MAP_SHARED, lfd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_file(p, lpath("optin")));
	ASSERT_SAID("fallback: may change while mapped");

	ASSERT_EQ(0, run_child("map", lpath("optin"), env1, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "cached\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "relative is not an absolute")) TH_LOG("%s", out);
	unlink(tpath("link"));
	ASSERT_EQ(0, symlink(LDIR, tpath("link")));
	ASSERT_EQ(0, run_child("map", lpath("optin"), env2, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "cached\n")) TH_LOG("%s", out);
	ASSERT_EQ(0, run_child("map", tpath("optin"), env3, out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: may change")) TH_LOG("%s", out);
}

/*
 * Still cached under the rule, with no word from the user: a memfd
 * sealed with F_SEAL_WRITE, F_SEAL_SHRINK and F_SEAL_GROW, whose bytes
 * nothing can change (also through its O_RDWR descriptor).  Unsealed,
 * or sealed only with F_SEAL_FUTURE_WRITE (a writable mapping made
 * before it keeps writing), it is the kernel's.
 */
TEST(cached_sealed_memfd)
{
	int fd = memfd_create("preload_test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	char ro_path[64];
	uint8_t *p, *w, b = 0x77;
	int ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, write_pattern(fd, BIG));
	snprintf(ro_path, sizeof(ro_path), "/proc/self/fd/%d", fd);
	ro = open(ro_path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ro);

	/* Not sealed: another holder of the memfd may write it. */
	p = map(BIG, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(pat(MiB), p[MiB]);
	ASSERT_EQ(1, pwrite(fd, &b, 1, MiB));
	ASSERT_EQ(b, p[MiB]);
	ASSERT_SAID("fallback: may change while mapped");
	ASSERT_EQ(0, munmap(p, BIG));

	/* F_SEAL_FUTURE_WRITE: a writable mapping made before still writes. */
	w = mmap(NULL, BIG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, w);
	ASSERT_EQ(0, fcntl(fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE |
			   F_SEAL_SHRINK | F_SEAL_GROW));
	p = map(BIG, PROT_READ, MAP_SHARED, ro, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(pat(2 * MiB), p[2 * MiB]);
	w[2 * MiB] = b;
	ASSERT_EQ(b, p[2 * MiB]);
	ASSERT_SAID("fallback: may change while mapped");
	ASSERT_EQ(0, munmap(p, BIG));
	ASSERT_EQ(0, munmap(w, BIG));

	/* F_SEAL_WRITE too: cached, from either descriptor. */
	ASSERT_EQ(0, fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE));
	p = map(BIG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_TRUE(is_cached(p)) TH_LOG("%s", dbg);
	ASSERT_SAID(", sealed)");
	ASSERT_EQ(b, p[MiB]);
	ASSERT_EQ(b, p[2 * MiB]);
	ASSERT_EQ(-1, check_bytes(p, 0, MiB, BIG));
	ASSERT_EQ(-1, check_bytes(p + 2 * MiB + 1, 2 * MiB + 1, BIG - 2 * MiB - 1,
				  BIG));
	ASSERT_ERRNO(EPERM, pwrite(fd, &b, 1, 0));
	w = map(BIG, PROT_READ, MAP_PRIVATE, ro, 0);
	ASSERT_NE(MAP_FAILED, w);
	ASSERT_TRUE(is_cached(w));
	ASSERT_EQ(b, w[MiB]);
}

/*
 * The user's word broken: a file in MORSEL_PRELOAD_DIRS, cached, is
 * written (and grown) while mapped.  The swap (an mprotect to write on
 * the private mapping) gives the program the file as it is now, the
 * kernel's view, and says so on stderr with the debug output off.  The
 * shim used to swap in the new bytes without a word.
 */
TEST(cached_opted_in_file_changed_swap_says_so)
{
	const char *env[] = { "MORSEL_PRELOAD_DEBUG=", NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("changed"), BIG));
	ASSERT_EQ(0, run_child("changed", tpath("changed"), env, out,
			       sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "cached\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "before swap: old\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "after swap: new\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "warning: " TDIR "/changed changed while "
			       "mapped from the cache")) TH_LOG("%s", out);
	ASSERT_EQ(1, occurrences(out, "morsel-preload[")) TH_LOG("%s", out);
}

/* ---- the daemon's slowness never holds the program (review 2026-11b L7) ---- */

/* A daemon that never answers: the mmap goes to the kernel after the deadline. */
TEST(stalled_daemon_deadline_falls_back)
{
	const char *env[] = { "MORSEL_CACHED_SOCKET=" STANDIN,
			      "MORSEL_PRELOAD_TIMEOUT=1", NULL };
	struct standin d;
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("stalled"), BIG));
	ASSERT_EQ(0, standin_start(&d, -1, 0));
	ASSERT_EQ(0, run_child("map", tpath("stalled"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	standin_stop(&d);
	ASSERT_NE(NULL, strstr(out, "fallback: daemon did not answer within 1 s"))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "bytes ok\n")) TH_LOG("%s", out);
}

/*
 * Two threads ask at once: the stand-in answers only when both requests
 * are in, so a shim that made the second wait for the first's answer
 * would never get one.
 */
TEST(two_threads_ask_at_once)
{
	const char *env[] = { "MORSEL_CACHED_SOCKET=" STANDIN, NULL };
	struct standin d;
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("two"), BIG));
	ASSERT_EQ(0, standin_start(&d, -1, 2));
	ASSERT_EQ(0, run_child("two", tpath("two"), env, out, sizeof(out)))
		TH_LOG("%s", out);
	standin_stop(&d);
	ASSERT_EQ(2, occurrences(out, "fallback: daemon refused: Permission denied"))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "a: ordinary\nb: ordinary\n")) TH_LOG("%s", out);
}

/* Runs --child @mode under a stand-in that notes requests, answers at 2. */
static int noted_child(const char *mode, const char *file, char *out,
		       size_t room)
{
	char kv[64];
	const char *env[] = { "MORSEL_CACHED_SOCKET=" STANDIN, kv, NULL };
	struct standin d;
	int note[2], r;

	if (pipe(note))	/* the read end is the child's */
		return -1;
	fcntl(note[1], F_SETFD, FD_CLOEXEC);
	snprintf(kv, sizeof(kv), "PRELOAD_TEST_NOTE=%d", note[0]);
	if (standin_start(&d, note[1], 2))
		return -1;
	r = run_child(mode, file, env, out, room);
	standin_stop(&d);
	close(note[0]);
	close(note[1]);
	return r;
}

/* A fork while another thread waits for the daemon does not wait too. */
TEST(fork_while_a_thread_waits_for_the_daemon)
{
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("forkwait"), BIG));
	ASSERT_EQ(0, noted_child("fork", tpath("forkwait"), out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "request in\nforked\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "thread: ordinary\n")) TH_LOG("%s", out);
}

/*
 * A signal handler that maps a file, run on the thread that is waiting
 * for the daemon: its mmap goes to the kernel at once (it used to wait for
 * the lock its own thread held, for ever).
 */
TEST(signal_handler_maps_during_a_request)
{
	char out[8192], other[PATH_MAX];

	snprintf(other, sizeof(other), "%s.2", tpath("sigwait"));
	ASSERT_EQ(0, pattern_file(tpath("sigwait"), BIG));
	ASSERT_EQ(0, pattern_file(other, BIG));
	ASSERT_EQ(0, noted_child("signal", tpath("sigwait"), out, sizeof(out)))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: called inside this thread's own daemon request"))
		TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "request in\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "handler: ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "thread: ordinary\n")) TH_LOG("%s", out);
}

/*
 * Under a finite RLIMIT_AS the mount and its standby would count two
 * extents against it: the kernel maps the file (review 2026-11b L8).
 */
TEST(fallback_address_space_limit)
{
	const char *const env[] = { NULL };
	char out[8192];

	ASSERT_EQ(0, pattern_file(tpath("as_limit"), BIG));
	ASSERT_EQ(0, run_child("map-as-limit", tpath("as_limit"), env, out,
			       sizeof(out))) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "fallback: RLIMIT_AS is set")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "bytes ok\n")) TH_LOG("%s", out);
}

/*
 * In secure-execution mode (AT_SECURE: here a set-user-ID copy of this
 * program, the shim preloaded through /etc/ld.so.preload as an
 * administrator would install it) the shim reads none of its variables
 * (review 2026-11b L6): MORSEL_PRELOAD_STATS would let the user who
 * starts the program create or append to any file with its rights.  The
 * test runs in a mount namespace of its own, where /etc is a copy with an
 * ld.so.preload and the loader's cache, all the program needs (the
 * guest's /etc is the host's, read-only; copying it all through 9p took
 * the debug kernel past the harness's 30 s).  The shim is copied there
 * too: the set-user-ID program may not reach the checkout (a clone made
 * with mktemp -d is mode 0700).
 */
TEST(secure_execution_ignores_the_environment)
{
	const char *stats = "/tmp/preload_test_secure.stats";
	const char *suid = "/tmp/preload_test_suid";
	char out[8192], line[PATH_MAX + 8], cmd[3 * PATH_MAX];
	const char *argv[] = { suid, "--child", "map-secure", NULL, NULL };
	const char *env[] = { "MORSEL_PRELOAD_DEBUG=1", NULL, NULL };
	char kv[PATH_MAX + 32];
	int fd;

	if (geteuid())
		SKIP(return, "needs root (a set-user-ID program, a mount namespace)");
	ASSERT_EQ(0, pattern_file(tpath("secure"), BIG));
	argv[3] = tpath("secure");
	snprintf(kv, sizeof(kv), "MORSEL_PRELOAD_STATS=%s", stats);
	env[1] = kv;
	unlink(stats);
	ASSERT_EQ(0, unshare(CLONE_NEWNS));
	ASSERT_EQ(0, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	snprintf(cmd, sizeof(cmd),
		 "set -e; rm -rf /tmp/preload_test_etc; mkdir /tmp/preload_test_etc; "
		 "cp /etc/ld.so.cache /tmp/preload_test_etc/; "
		 "cp '%s' /tmp/preload_test_etc/libmorsel-preload.so; chmod 0644 /tmp/preload_test_etc/libmorsel-preload.so; "
		 "cp /proc/%d/exe %s; chown 65534 %s; chmod 4755 %s",
		 getenv("LD_PRELOAD"), getpid(), suid, suid, suid);
	ASSERT_EQ(0, system(cmd));
	fd = open("/tmp/preload_test_etc/ld.so.preload", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ASSERT_LE(0, fd);
	snprintf(line, sizeof(line), "/tmp/preload_test_etc/libmorsel-preload.so\n");
	ASSERT_EQ((ssize_t)strlen(line), write(fd, line, strlen(line)));
	close(fd);
	ASSERT_EQ(0, mount("/tmp/preload_test_etc", "/etc", NULL, MS_BIND, NULL));
	ASSERT_EQ(0, run(argv, env, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "secure: 1\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "shim: yes\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "ordinary\n")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "bytes ok\n")) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(out, "morsel-preload[")) TH_LOG("%s", out);
	EXPECT_NE(0, access(stats, F_OK));
	umount("/etc");
	unlink(suid);
	system("rm -rf /tmp/preload_test_etc");
}

/* ---- the daemon, and this program again under LD_PRELOAD ---- */

/* Start morsel-cached (@bin); its pid, or -1.  Its log goes to @log. */
static pid_t start_daemon(const char *bin, const char *dir, const char *log)
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (!pid) {
		int l = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(l, 1);
		dup2(l, 2);
		dup2(p[1], 3);
		execl(bin, bin, "--socket", SOCK, "--dir", dir, "--budget",
		      "128M", "--ready-fd", "3", "-v", NULL);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1) {
		close(p[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(p[0]);
	return pid;
}

static int outer_main(int argc, char **argv)
{
	char repo[PATH_MAX], shim[PATH_MAX + 64], bin[PATH_MAX + 64];
	char dir[PATH_MAX], cmd[PATH_MAX + 64];
	const char *mnt = getenv("MORSEL_MNT");
	int status = 1;
	ssize_t n;
	pid_t daemon, pid;

	(void)argc;
	n = readlink("/proc/self/exe", repo, sizeof(repo) - 1);
	if (n < 0)
		return 1;
	repo[n] = 0;
	*strrchr(repo, '/') = 0;	/* tests/ */
	*strrchr(repo, '/') = 0;	/* the repo */
	snprintf(shim, sizeof(shim), "%s/preload/libmorsel-preload.so", repo);
	if (getenv("PRELOAD_TEST_SHIM"))
		snprintf(shim, sizeof(shim), "%s", getenv("PRELOAD_TEST_SHIM"));
	snprintf(bin, sizeof(bin), "%s/cached/morsel-cached", repo);
	if (getenv("PRELOAD_TEST_DAEMON"))
		snprintf(bin, sizeof(bin), "%s", getenv("PRELOAD_TEST_DAEMON"));
	snprintf(dir, sizeof(dir), "%s/preload-cache", mnt ? mnt : "/tmp/morsel");
	mkdir(dir, 0755);
	mkdir(TDIR, 0755);
	mkdir(LDIR, 0755);
	daemon = start_daemon(bin, dir, TDIR "/daemon.log");
	if (daemon < 0) {
		fprintf(stderr, "preload_test: %s did not start\n", bin);
		snprintf(cmd, sizeof(cmd), "cat %s/daemon.log >&2", TDIR);
		if (system(cmd))
			return 1;
		return 1;
	}
	setenv("LD_PRELOAD", shim, 1);
	setenv("MORSEL_CACHED_SOCKET", SOCK, 1);
	setenv("MORSEL_PRELOAD_MIN_SIZE", "1M", 1);
	setenv("MORSEL_PRELOAD_DEBUG", "1", 1);
	setenv("PRELOAD_TEST_CACHE_DIR", dir, 1);
	setenv("PRELOAD_TEST_REPO", repo, 1);
	setenv("MORSEL_PRELOAD_DIRS", TDIR, 1);
	setenv("PRELOAD_TEST_INNER", "1", 1);
	unsetenv("MORSEL_PRELOAD_DISABLE");
	unsetenv("MORSEL_PRELOAD_STATS");
	fflush(NULL);
	pid = fork();
	if (!pid) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid)
		status = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	kill(daemon, SIGTERM);
	waitpid(daemon, NULL, 0);
	if (status) {
		fprintf(stderr, "preload_test: the daemon's log:\n");
		fflush(stderr);
		snprintf(cmd, sizeof(cmd), "tail -n 40 %s/daemon.log >&2", TDIR);
		if (system(cmd))
			return status;
	}
	return status;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--child"))
		return child_main(argv[2], argv[3]);
	if (!getenv("PRELOAD_TEST_INNER"))
		return outer_main(argc, argv);
	return test_harness_run(argc, argv);
}
