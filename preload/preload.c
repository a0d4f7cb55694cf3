// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libmorsel-preload.so, part 1: LD_PRELOAD this into a program and its
 * read-only mmaps of large regular files come from morsel-cached, the
 * morsel file cache: the daemon hands back a morsel holding the file's
 * bytes, mapped (mounted) with one page-table entry however large it is.
 *
 * mmap(addr, len, PROT_READ, MAP_SHARED or MAP_PRIVATE [| harmless flags],
 * fd, off) of a regular file of at least MORSEL_PRELOAD_MIN_SIZE bytes,
 * open O_RDONLY, not on morselfs, off page aligned and off + len inside
 * the morsel's extent: the morsel is mounted whole and base + off is
 * returned.  Everything else, and every refusal of the daemon, goes to the
 * kernel unchanged (docs/preload.md lists the rules and the reasons).
 * table.c keeps what was mapped so and handles munmap, mprotect, madvise,
 * mremap and MAP_FIXED over it.
 *
 * Environment (read once, at load): MORSEL_CACHED_SOCKET, the daemon's
 * socket; MORSEL_PRELOAD_MIN_SIZE, bytes with an optional K, M, G or T
 * suffix (default 64M); MORSEL_PRELOAD_DEBUG=1, one line on stderr per
 * decision (=2: anonymous mmaps too); MORSEL_PRELOAD_DISABLE=1, every call goes to the kernel;
 * MORSEL_PRELOAD_STATS=FILE, one line "mmap <cached|real> <bytes> <ns>"
 * appended per mmap of a file at or above the threshold.
 *
 * Locking: conn_lock serializes the daemon connection (one per process,
 * made again after fork: conn.pid); the table has its own lock (table.c).
 * Both are taken around fork.  The decisions that need no daemon take no
 * lock, and files below the threshold cost one fstat.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "morsel.h"
#include "preload.h"
#include "cache_proto.h"

/* Flags that change nothing for a read-only mapping of a populated morsel. */
#define HARMLESS_FLAGS (MAP_POPULATE | MAP_NORESERVE | MAP_NONBLOCK | \
			MAP_STACK | MAP_DENYWRITE | MAP_EXECUTABLE | MAP_FILE)

int shim_debug_on;
static int enabled = 1;
static uint64_t threshold = 64ULL << 20;
static char socket_path[108];		/* empty: the library's default */
static char stats_path[4096];		/* empty: no statistics */

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int sock;			/* -1: not connected */
	pid_t pid;			/* the process that connected */
	dev_t dev;			/* what sock was, to see it reused */
	ino_t ino;
} conn = { .sock = -1 };

void shim_say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n, err = errno;

	if (!shim_debug_on)
		return;
	n = snprintf(buf, sizeof(buf), "morsel-preload[%d]: ", (int)getpid());
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	buf[n++] = '\n';
	if (write(2, buf, n) < 0)
		errno = err;
	errno = err;
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&conn_lock);
	table_lock_all();
}

static void fork_done(void)
{
	table_unlock_all();
	pthread_mutex_unlock(&conn_lock);
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *s;

	s = getenv("MORSEL_PRELOAD_DEBUG");
	shim_debug_on = s ? atoi(s) : 0;
	s = getenv("MORSEL_PRELOAD_DISABLE");
	enabled = !(s && *s && strcmp(s, "0"));
	s = getenv("MORSEL_PRELOAD_MIN_SIZE");
	if (s && morsel_cache_parse_size(s, &threshold))
		shim_say("MORSEL_PRELOAD_MIN_SIZE=%s is not a size; using %llu",
			 s, (unsigned long long)threshold);
	s = getenv("MORSEL_CACHED_SOCKET");
	if (s && strlen(s) < sizeof(socket_path))
		strcpy(socket_path, s);
	else if (s)
		shim_say("MORSEL_CACHED_SOCKET is too long; using %s",
			 MORSEL_CACHED_SOCKET);
	s = getenv("MORSEL_PRELOAD_STATS");
	if (s && strlen(s) < sizeof(stats_path))
		strcpy(stats_path, s);
	pthread_atfork(fork_prepare, fork_done, fork_done);
	shim_say("loaded: %s, threshold %llu bytes, socket %s",
		 enabled ? "enabled" : "disabled",
		 (unsigned long long)threshold,
		 socket_path[0] ? socket_path : MORSEL_CACHED_SOCKET);
}

/* MORSEL_PRELOAD_STATS: one line per mmap of a file >= the threshold. */
static void stats_record(const char *kind, size_t len,
			 const struct timespec *t0)
{
	struct timespec t1;
	char line[96];
	long long ns;
	int fd, n, err = errno;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = (t1.tv_sec - t0->tv_sec) * 1000000000LL +
	     (t1.tv_nsec - t0->tv_nsec);
	fd = open(stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		n = snprintf(line, sizeof(line), "mmap %s %zu %lld\n", kind,
			     len, ns);
		if (write(fd, line, n) != n)
			shim_say("MORSEL_PRELOAD_STATS: short write");
		close(fd);
	}
	errno = err;
}

/* Is conn.sock still the socket we connected (not closed and reused)? */
static int conn_still_ours(void)
{
	struct stat st;

	return !fstat(conn.sock, &st) && S_ISSOCK(st.st_mode) &&
	       st.st_dev == conn.dev && st.st_ino == conn.ino;
}

/*
 * Ask the daemon for @fd: the morsel fd, or -1 with a reason in @why.
 * One connection per process; after fork the child connects anew, and a
 * connection the daemon dropped is made again once.
 */
static int cache_get(int fd, struct morsel_cache_info *info, char *why,
		     size_t room)
{
	pid_t pid = getpid();
	struct stat st;
	int tries, r = -ENOTCONN;

	pthread_mutex_lock(&conn_lock);
	if (conn.sock >= 0 && (conn.pid != pid || !conn_still_ours())) {
		/* The parent's connection (ours to close) or a reused number. */
		if (conn.pid != pid && conn_still_ours())
			close(conn.sock);
		conn.sock = -1;
	}
	for (tries = 0; tries < 2; tries++) {
		if (conn.sock < 0) {
			r = morsel_cache_connect(socket_path[0] ? socket_path : NULL);
			if (r < 0) {
				snprintf(why, room, "no daemon (connect: %s)",
					 strerror(-r));
				break;
			}
			conn.sock = r;
			conn.pid = pid;
			fstat(r, &st);
			conn.dev = st.st_dev;
			conn.ino = st.st_ino;
		}
		r = morsel_cache_get(conn.sock, fd, info);
		if (r >= 0)
			break;
		snprintf(why, room, "daemon refused: %s", strerror(-r));
		if (r != -ECONNRESET && r != -EPIPE && r != -ENOTCONN &&
		    r != -EBADMSG && r != -EPROTO &&
		    r != -ECONNREFUSED)
			break;
		snprintf(why, room, "daemon went away: %s", strerror(-r));
		close(conn.sock);
		conn.sock = -1;
	}
	pthread_mutex_unlock(&conn_lock);
	return r < 0 ? -1 : r;
}

/*
 * The cached path: 0 and *@out, or -1 with the reason in @why (nothing
 * changed; the caller falls back).  @st is the fd's fstat, at or above the
 * threshold.
 */
static int map_cached(size_t len, int flags, int fd, off_t off,
		      const struct stat *st, void **out, char *why, size_t room)
{
	struct morsel_cache_info info;
	struct statfs sf;
	uint64_t extent, ulen;
	int fl, order, dfd, mfd;
	void *base;

	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) != O_RDONLY) {
		snprintf(why, room, "fd not opened O_RDONLY");
		return -1;
	}
	if (!fstatfs(fd, &sf) && sf.f_type == MORSELFS_MAGIC) {
		snprintf(why, room, "file on morselfs");
		return -1;
	}
	order = morsel_order_for_size(st->st_size);
	if (order < 0) {
		snprintf(why, room, "larger than the largest morsel");
		return -1;
	}
	extent = morsel_order_extent(order);
	ulen = page_up(len);
	if (len > SIZE_MAX - SHIM_PAGE || (uint64_t)off > extent ||
	    ulen > extent - off) {
		snprintf(why, room, "past the morsel's extent (%llu)",
			 (unsigned long long)extent);
		return -1;
	}
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0) {
		snprintf(why, room, "dup: %s", strerror(errno));
		return -1;
	}
	mfd = cache_get(fd, &info, why, room);
	if (mfd < 0)
		goto fail_dup;
	if (info.size != (uint64_t)st->st_size || info.extent < off + ulen) {
		snprintf(why, room, "the daemon's morsel does not match "
			 "(size %llu, extent %llu)",
			 (unsigned long long)info.size,
			 (unsigned long long)info.extent);
		close(mfd);
		goto fail_dup;
	}
	base = real_mmap(NULL, info.extent, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (base == MAP_FAILED) {
		snprintf(why, room, "mounting the morsel: %s", strerror(errno));
		goto fail_dup;
	}
	if (table_add((uintptr_t)base, info.extent, (uintptr_t)base + off,
		      (uintptr_t)base + off + ulen, flags, dfd, st->st_dev,
		      st->st_ino)) {
		real_munmap(base, info.extent);
		snprintf(why, room, "no memory for the table");
		goto fail_dup;
	}
	snprintf(why, room, "%s, order %u, extent %llu at %p",
		 info.flags & MORSEL_CACHE_HIT ? "hit" : "loaded", info.order,
		 (unsigned long long)info.extent, base);
	*out = (char *)base + off;
	return 0;
fail_dup:
	close(dfd);
	return -1;
}

/*
 * Why a call with these arguments goes to the kernel as it is, judged from
 * the arguments alone; NULL if the file must be looked at.
 */
static const char *refusal(size_t len, int prot, int flags, int fd, off_t off)
{
	int type = flags & MAP_TYPE;

	if (!enabled)
		return "disabled";
	if (fd < 0 || (flags & MAP_ANONYMOUS))
		return "anonymous";
	if (prot != PROT_READ)
		return "not PROT_READ";
	if (type != MAP_SHARED && type != MAP_PRIVATE)
		return "map type neither MAP_SHARED nor MAP_PRIVATE";
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))
		return "MAP_FIXED";
	if (flags & ~(MAP_TYPE | HARMLESS_FLAGS))
		return "flags";
	if (!len)
		return "zero length";
	if (off < 0 || (off & (SHIM_PAGE - 1)))
		return "unaligned offset";
	return NULL;
}

static void *shim_mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	int err = errno, have_st = 0;
	struct timespec t0;
	struct stat st;
	const char *why;
	char buf[160];
	void *p;

	if (stats_path[0])
		clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) &&
	    table_before_fixed((uintptr_t)addr, len))
		return MAP_FAILED;
	why = refusal(len, prot, flags, fd, off);
	if (!why && fstat(fd, &st))
		why = "fstat failed";
	else if (!why)
		have_st = 1;
	if (!why && !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (!why && (uint64_t)st.st_size < threshold)
		why = "small file";
	else if (!why && map_cached(len, flags, fd, off, &st, &p, buf,
				    sizeof(buf)))
		why = buf;
	if (!why) {
		shim_say("mmap fd %d len %zu off %lld: cached (%s)", fd, len,
			 (long long)off, buf);
		if (stats_path[0])
			stats_record("cached", len, &t0);
		errno = err;
		return p;
	}
	/* Anonymous memory is no decision worth a line, unless asked (2). */
	if ((fd >= 0 && !(flags & MAP_ANONYMOUS)) || shim_debug_on > 1)
		shim_say("mmap fd %d len %zu off %lld: fallback: %s", fd, len,
			 (long long)off, why);
	errno = err;
	p = real_mmap(addr, len, prot, flags, fd, off);
	if (stats_path[0] && fd >= 0 && !(flags & MAP_ANONYMOUS)) {
		int e = errno;

		if (!have_st && !fstat(fd, &st))
			have_st = 1;
		if (have_st && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size >= threshold)
			stats_record("real", len, &t0);
		errno = e;
	}
	return p;
}

SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	return shim_mmap(addr, len, prot, flags, fd, off);
}

/* The same function under its large-file name (off64_t is off_t here). */
SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
			 off64_t off) __attribute__((alias("mmap")));
