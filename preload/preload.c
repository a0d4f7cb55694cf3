// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libmorsel-preload.so, part 1: LD_PRELOAD this into a program and its
 * read-only mmaps of large regular files come from morsel-cached, the
 * morsel file cache: the daemon hands back a morsel holding the file's
 * bytes, mapped (mounted) with one page-table entry however large it is.
 *
 * mmap(addr, len, PROT_READ, MAP_SHARED or MAP_PRIVATE [| harmless flags],
 * fd, off) of a regular file of at least MORSEL_PRELOAD_MIN_SIZE bytes,
 * open O_RDONLY, not on morselfs, whose bytes cannot change while it is
 * mapped (unchanging(): sealed, fs-verity, a read-only file system type,
 * or in a directory the user named in MORSEL_PRELOAD_DIRS), off page
 * aligned and off + len inside the morsel's extent: the morsel is mounted
 * whole and base + off is returned.  Everything else, and every refusal of
 * the daemon, goes to the kernel unchanged (docs/preload.md lists the
 * rules and the reasons).  table.c keeps what was mapped so and handles
 * munmap, mprotect, madvise, mremap and MAP_FIXED over it.
 *
 * Environment (read once, at load): MORSEL_CACHED_SOCKET, the daemon's
 * socket; MORSEL_PRELOAD_MIN_SIZE, bytes with an optional K, M, G or T
 * suffix (default 64M); MORSEL_PRELOAD_DIRS, directories (separated by
 * ':') whose files the user says do not change while mapped;
 * MORSEL_PRELOAD_DEBUG=1, one line on stderr per decision (=2: anonymous
 * mmaps too); MORSEL_PRELOAD_DISABLE=1, every call goes to the kernel;
 * MORSEL_PRELOAD_TIMEOUT, the longest a request to the daemon may take
 * before the mmap goes to the kernel (seconds, default 30, 0: no limit);
 * MORSEL_PRELOAD_STATS=FILE, one line "mmap <cached|real> <bytes> <ns>"
 * appended per mmap of a file at or above the threshold.  In
 * secure-execution mode (AT_SECURE: setuid, setgid or file capabilities,
 * e.g. with the shim in /etc/ld.so.preload) all of them are ignored and
 * the defaults hold.
 *
 * Descriptors: the shim never close()s a descriptor of the program's file
 * (that would drop the program's POSIX record locks on it; map_cached says
 * how it does without one).  Its only lasting descriptor is the daemon
 * connection, kept at a high number and checked by identity before every
 * use and close.
 *
 * Locking: conn_lock guards the process's daemon connection (conn; made
 * again after fork: conn.pid); a thread that finds it taken asks over a
 * connection of its own (cache_get).  in_request (per thread) keeps a
 * signal handler from asking while its thread is asking.  The table has
 * its own lock (table.c), held with signals blocked and taken around
 * fork; conn_lock is not (fork_prepare).  The decisions that need no daemon take no
 * lock, and files below the threshold cost one fstat.  The configuration
 * (threshold, socket, dirs[]) is written only by the constructor, before
 * any thread of the program runs, and read without a lock after.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "morsel.h"
#include "preload.h"
#include "cache_proto.h"

/* Flags that change nothing for a read-only mapping of a populated morsel. */
#define HARMLESS_FLAGS (MAP_POPULATE | MAP_NORESERVE | MAP_NONBLOCK | \
			MAP_STACK | MAP_DENYWRITE | MAP_EXECUTABLE | MAP_FILE)

/* File systems that have no write path at all (statfs f_type). */
#define SQUASHFS_MAGIC_ 0x73717368
#define EROFS_MAGIC_ 0xE0F5E1E2
#define ISOFS_MAGIC_ 0x9660
#define CRAMFS_MAGIC_ 0x28cd3d45
#define CRAMFS_MAGIC_WEND_ 0x453dcd28
#define ROMFS_MAGIC_ 0x7275

/* The seals that leave nothing of a memfd's bytes or size to change. */
#define FROZEN_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW)

#ifndef STATX_ATTR_VERITY
#define STATX_ATTR_VERITY 0x00100000
#endif

int shim_debug_on;
static int enabled = 1;
static uint64_t threshold = 64ULL << 20;
static char socket_path[108] = MORSEL_CACHED_SOCKET;
static char stats_path[4096];		/* empty: no statistics */

/*
 * MORSEL_PRELOAD_DIRS: the directories, canonical (realpath) where they
 * exist, without a trailing '/' ("/" itself is the empty string); a file
 * is in one when its name starts with it and a '/'.
 */
#define MAX_DIRS 32
static char dirs_buf[4096];
static const char *dirs[MAX_DIRS];
static size_t dirs_len[MAX_DIRS];
static unsigned int ndirs;

/* MORSEL_PRELOAD_TIMEOUT: the longest a request waits, in seconds. */
static unsigned int timeout_s = 30;

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
/* Set while this thread asks the daemon (a signal handler may interrupt). */
static __thread volatile sig_atomic_t in_request;
static struct {
	int sock;			/* -1: not connected */
	pid_t pid;			/* the process that connected */
	dev_t dev;			/* what sock was, to see it reused */
	ino_t ino;
} conn = { .sock = -1 };

static void say(const char *fmt, va_list ap)
{
	char buf[1024];
	int n, err = errno;

	n = snprintf(buf, sizeof(buf), "morsel-preload[%d]: ", (int)getpid());
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	buf[n++] = '\n';
	if (write(2, buf, n) < 0)
		errno = err;
	errno = err;
}

void shim_say(const char *fmt, ...)
{
	va_list ap;

	if (!shim_debug_on)
		return;
	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

void shim_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fmt, ap);
	va_end(ap);
}

/*
 * fork takes the table's lock (the child needs a whole table), never
 * conn_lock: a thread waiting for the daemon would hold up every fork
 * (review 2026-11b L7).  The child starts with a fresh conn_lock and
 * never uses the parent's connection (conn.pid); it closes its copy in
 * cache_get, when that is still the socket (a copy caught mid-update is
 * left to O_CLOEXEC, as are other threads' private connections).
 */
static void fork_prepare(void)
{
	table_lock_all();
}

static void fork_parent(void)
{
	table_unlock_all();
}

static void fork_child(void)
{
	pthread_mutex_init(&conn_lock, NULL);
	table_unlock_all();
}

/*
 * The shim's environment variable @name, or NULL.  In secure-execution
 * mode (the kernel's AT_SECURE: a setuid or setgid program, or one that
 * gained capabilities) nothing: these variables come from the user who
 * started the program, and MORSEL_PRELOAD_STATS alone would let them
 * create or append to any file with the program's rights.  secure_getenv
 * already says NULL then; the explicit AT_SECURE check keeps that true
 * should a libc's secure_getenv be weaker.
 */
static const char *shim_getenv(const char *name)
{
	if (getauxval(AT_SECURE))
		return NULL;
	return secure_getenv(name);
}

/*
 * MORSEL_PRELOAD_DIRS=@s: absolute directories separated by ':' (empty
 * and relative entries are skipped).  Each is made canonical with
 * realpath, as the names /proc/self/fd gives are; one that does not
 * exist yet is kept as written, less trailing slashes.
 */
static void parse_dirs(const char *s)
{
	char one[PATH_MAX], real[PATH_MAX];
	size_t used = 0, n;
	const char *end, *d;

	for (; *s; s = *end ? end + 1 : end) {
		end = strchrnul(s, ':');
		n = end - s;
		if (!n)
			continue;
		if (*s != '/' || n >= sizeof(one)) {
			shim_say("MORSEL_PRELOAD_DIRS: %.*s is not an absolute "
				 "directory; skipped", (int)n, s);
			continue;
		}
		memcpy(one, s, n);
		one[n] = 0;
		d = realpath(one, real) ? real : one;
		n = strlen(d);
		while (n && d[n - 1] == '/')
			n--;
		if (ndirs == MAX_DIRS || used + n + 1 > sizeof(dirs_buf)) {
			shim_say("MORSEL_PRELOAD_DIRS: too many directories; "
				 "%s and those after it skipped", one);
			return;
		}
		memcpy(dirs_buf + used, d, n);
		dirs_buf[used + n] = 0;
		dirs[ndirs] = dirs_buf + used;
		dirs_len[ndirs++] = n;
		used += n + 1;
		shim_say("MORSEL_PRELOAD_DIRS: %s", n ? dirs[ndirs - 1] : "/");
	}
}

__attribute__((constructor)) static void shim_init(void)
{
	const char *s;

	s = shim_getenv("MORSEL_PRELOAD_DEBUG");
	shim_debug_on = s ? atoi(s) : 0;
	s = shim_getenv("MORSEL_PRELOAD_DISABLE");
	enabled = !(s && *s && strcmp(s, "0"));
	s = shim_getenv("MORSEL_PRELOAD_MIN_SIZE");
	if (s && morsel_cache_parse_size(s, &threshold))
		shim_say("MORSEL_PRELOAD_MIN_SIZE=%s is not a size; using %llu",
			 s, (unsigned long long)threshold);
	/*
	 * The socket is always passed to morsel_cache_connect explicitly:
	 * given NULL, the library would read MORSEL_CACHED_SOCKET itself,
	 * with plain getenv.
	 */
	s = shim_getenv("MORSEL_CACHED_SOCKET");
	if (s && *s && strlen(s) < sizeof(socket_path))
		strcpy(socket_path, s);
	else if (s && *s)
		shim_say("MORSEL_CACHED_SOCKET is too long; using %s",
			 MORSEL_CACHED_SOCKET);
	s = shim_getenv("MORSEL_PRELOAD_TIMEOUT");
	if (s) {
		char *end;
		unsigned long t;

		errno = 0;
		t = strtoul(s, &end, 10);
		if (errno || end == s || *end || t > 86400)
			shim_say("MORSEL_PRELOAD_TIMEOUT=%s is not a number of "
				 "seconds (0 to 86400); using %u", s, timeout_s);
		else
			timeout_s = (unsigned int)t;
	}
	s = shim_getenv("MORSEL_PRELOAD_STATS");
	if (s && strlen(s) < sizeof(stats_path))
		strcpy(stats_path, s);
	s = shim_getenv("MORSEL_PRELOAD_DIRS");
	if (s)
		parse_dirs(s);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	shim_say("loaded: %s, threshold %llu bytes, socket %s",
		 enabled ? "enabled" : "disabled",
		 (unsigned long long)threshold, socket_path);
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

/*
 * Is conn.sock still the socket we connected (not closed and reused)?
 * (dev, ino) name the socket's own inode, so a descriptor the program
 * opened at that number since (a file, a pipe, another socket) fails this
 * and is never used or closed by the shim.
 */
static int conn_still_ours(void)
{
	struct stat st;

	return !fstat(conn.sock, &st) && S_ISSOCK(st.st_mode) &&
	       st.st_dev == conn.dev && st.st_ino == conn.ino;
}

/*
 * Move the new connection @fd to a high number (F_DUPFD_CLOEXEC): a
 * program that closes descriptors it does not know (closefrom,
 * close_range, a daemonizing loop) and then opens new ones gets the low
 * numbers again, so a number the shim still records is seldom reused.
 * Half the soft RLIMIT_NOFILE, at most 512 (a larger minimum would grow
 * the descriptor table for nothing); @fd itself where that is not
 * possible.  The socket is not the program's file: closing the low copy
 * releases nothing of the program's.
 */
static int fd_high(int fd)
{
	struct rlimit rl;
	rlim_t min = 512;
	int h;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return fd;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 2 < min)
		min = rl.rlim_cur / 2;
	if (min <= (rlim_t)fd)
		return fd;
	h = fcntl(fd, F_DUPFD_CLOEXEC, (int)min);
	if (h < 0)
		return fd;
	close(fd);
	return h;
}

/*
 * A new connection to the daemon with the request deadline set (send and
 * receive time out after timeout_s seconds; 0: none): the socket, or
 * -errno.
 */
static int connect_daemon(void)
{
	struct timeval tv = { .tv_sec = timeout_s };
	int sock = morsel_cache_connect(socket_path);

	if (sock >= 0 && timeout_s &&
	    (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	     setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))) {
		int err = -errno;

		close(sock);
		return err;
	}
	return sock;
}

/*
 * Did the daemon fail the connection (so it must not be used again)?  A
 * request that timed out counts: its reply may still come, and would be
 * read as the answer to the next one.
 */
static int conn_failed(int r)
{
	return r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN ||
	       r == -EBADMSG || r == -EPROTO || r == -ECONNREFUSED ||
	       r == -EAGAIN || r == -EWOULDBLOCK;
}

static void say_failure(int r, char *why, size_t room)
{
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		snprintf(why, room, "daemon did not answer within %u s",
			 timeout_s);
	else if (conn_failed(r))
		snprintf(why, room, "daemon went away: %s", strerror(-r));
	else
		snprintf(why, room, "daemon refused: %s", strerror(-r));
}

/*
 * Ask the daemon for @fd: the morsel fd, or -1 with a reason in @why.
 * @fd travels as SCM_RIGHTS: the message holds a reference to the open
 * file, no descriptor of ours, and the daemon closes its copy in its own
 * descriptor table, so the program's POSIX locks (owned by our table)
 * are not touched either way.
 *
 * The process's connection is used by one thread at a time; a thread
 * that finds it busy asks over a connection of its own, closed at the end
 * of the call, so one thread's cold load delays no other thread's mmap
 * (review 2026-11b L7).  A fork child connects anew; a connection the
 * daemon dropped is made again once; no request waits longer than
 * MORSEL_PRELOAD_TIMEOUT.  A call from a signal handler that interrupted
 * this thread's own request goes to the kernel.
 */
static int cache_get(int fd, struct morsel_cache_info *info, char *why,
		     size_t room)
{
	pid_t pid = getpid();
	struct stat st;
	int tries, r = -ENOTCONN;

	if (in_request) {
		snprintf(why, room, "called inside this thread's own daemon "
			 "request (from a signal handler)");
		return -1;
	}
	in_request = 1;
	if (pthread_mutex_trylock(&conn_lock)) {
		int sock = connect_daemon();

		if (sock < 0) {
			snprintf(why, room, "no daemon (connect: %s)",
				 strerror(-sock));
			in_request = 0;
			return -1;
		}
		r = morsel_cache_get(sock, fd, info);
		close(sock);
		if (r < 0)
			say_failure(r, why, room);
		in_request = 0;
		return r < 0 ? -1 : r;
	}
	if (conn.sock >= 0 && (conn.pid != pid || !conn_still_ours())) {
		/* The parent's connection (ours to close) or a reused number. */
		if (conn.pid != pid && conn_still_ours())
			close(conn.sock);
		conn.sock = -1;
	}
	for (tries = 0; tries < 2; tries++) {
		if (conn.sock < 0) {
			r = connect_daemon();
			if (r < 0) {
				snprintf(why, room, "no daemon (connect: %s)",
					 strerror(-r));
				break;
			}
			conn.sock = r = fd_high(r);
			conn.pid = pid;
			fstat(r, &st);
			conn.dev = st.st_dev;
			conn.ino = st.st_ino;
		}
		r = morsel_cache_get(conn.sock, fd, info);
		if (r >= 0)
			break;
		say_failure(r, why, room);
		if (!conn_failed(r))
			break;
		if (conn_still_ours())
			close(conn.sock);
		conn.sock = -1;
		if (r == -EAGAIN || r == -EWOULDBLOCK)
			break;		/* the deadline is spent */
	}
	pthread_mutex_unlock(&conn_lock);
	in_request = 0;
	return r < 0 ? -1 : r;
}

/*
 * Which files may be served from the cache at all (review 2026-11b, M2).
 *
 * A cached mapping shows the file's bytes as the daemon loaded them.  The
 * kernel's own mapping is coherent with every write to the file, from any
 * process: for MAP_SHARED always, and on Linux for every page of a
 * MAP_PRIVATE mapping that the program has not written.  A reader that
 * maps a file another process writes (an LMDB MDB_RDONLY environment, a
 * SQLite read-only connection with mmap_size, a log or time-series
 * reader) depends on that: from a snapshot it reads stale data forever, or
 * stale pages beside fresh ones, which SQLite can report as corruption
 * (tests/preload_test, live_*: both readers missed the first commit on
 * the shim without this rule).  So a file is served only when the shim
 * can show that its bytes will not change while the program maps it;
 * otherwise the kernel maps it (the fall-back "may change while mapped").
 * What shows it, and what does not (Linux 6.12's source; experiments on
 * the build host):
 *
 * - Taken: the kernel forbids every change, for good.
 *   . A memfd sealed with F_SEAL_WRITE, F_SEAL_SHRINK and F_SEAL_GROW:
 *     adding F_SEAL_WRITE fails while any writable shared mapping exists
 *     (mm/memfd.c, mapping_deny_writable), and then every write path
 *     refuses, writers that opened the file before included
 *     (shmem_write_begin, shmem_fallocate, shmem_setattr); seals are never
 *     removed.  F_SEAL_FUTURE_WRITE alone is not enough: writable
 *     mappings made before it keep writing.
 *   . fs-verity (statx STATX_ATTR_VERITY): enabling it needs that nobody
 *     has the file open for writing (fs/verity/enable.c,
 *     deny_write_access), after it every open for writing is EPERM and the
 *     size cannot change (fs/verity/open.c, fs/attr.c), and it is never
 *     turned off.
 *   . File system types without a write path (statfs f_type): squashfs,
 *     erofs, iso9660, cramfs, romfs.
 * - Not taken:
 *   . FS_IMMUTABLE_FL (chattr +i, STATX_ATTR_IMMUTABLE): it stops new
 *     opens for writing, but whether it stops a writer that opened the
 *     file before the flag was set depends on the file system.  On the
 *     host (6.18), with an O_RDWR descriptor and a shared writable mapping
 *     made before +i: on ext4 pwrite, ftruncate, fallocate are EPERM and
 *     the store through the mapping is SIGBUS; on tmpfs pwrite, ftruncate
 *     and the store all go through.  In 6.12 only ext4's and f2fs's write
 *     paths test IS_IMMUTABLE (xfs, btrfs, ext2 and shmem do not), and
 *     ext2 reports the same f_type as ext4.  The owner of
 *     CAP_LINUX_IMMUTABLE can also clear it at any time.
 *   . A read-only mount (statfs ST_RDONLY): per mount, not per file.  A
 *     read-only bind mount of a writable file system (a container's
 *     read-only volume) shows files that are written through another
 *     mount (tests/preload_test: live_read_only_mount_is_not_enough); on
 *     9p, NFS or FUSE the server changes files under a read-only mount.
 *   . A read lease (F_SETLEASE F_RDLCK): refused with EAGAIN while anyone
 *     has the file open for writing (fs/locks.c, check_conflicting_open),
 *     so it detects a present writer, but it proves nothing about the
 *     mapping's lifetime: it only makes a later opener for writing wait
 *     lease-break-time (45 s by default) and then breaks anyway, and the
 *     holder learns of the break by SIGIO, whose default action kills it
 *     (on the host: a holder that did not handle SIGIO was killed by the
 *     writer's open).  Only the file's owner or CAP_LEASE may take one
 *     (EACCES for other users: a shared model file owned by root), it is
 *     attached to the open file description (taking it on the program's
 *     descriptor sets its F_SETOWN), and 9p, NFSv3 and ceph refuse leases
 *     (simple_nosetlease).  Holding one for the life of a mapping would
 *     need a descriptor of the shim's, whose close drops the program's
 *     POSIX locks (map_cached), and a thread to answer the breaks.
 * - The user's word: MORSEL_PRELOAD_DIRS names directories whose files
 *   the user says nothing writes while programs map them (models, data
 *   sets, the files of tests/cache_programs_test).  The shim cannot check
 *   it; the docs say the mapping is then a snapshot of the mmap's moment.
 *   It is the user running the program who decides, for the program they
 *   run.  An extended attribute set on the file (user.morsel.cache) was
 *   the other candidate: it is set by whoever may write the file, so it
 *   is a writer's promise, copied with the file by cp -a, tar --xattrs and
 *   rsync -X onto copies that are then written, and not available on
 *   tmpfs without CONFIG_TMPFS_XATTR, NFSv3 or 9p.
 *
 * MAP_SHARED and MAP_PRIVATE follow the same rule: a MAP_SHARED mapping
 * of a file that passes it is coherent with the file (nothing changes
 * it), and one of a file that may change is the kernel's own, coherent
 * by definition.  (Refusing only MAP_SHARED would leave the readers that
 * use it, LMDB, SQLite, llama.cpp, numpy's memmap, all uncached, and
 * MAP_PRIVATE ones still stale.)
 *
 * Returns what shows it, for the debug line, or NULL; *@word is set when
 * it is only the user's word, and then @path (PATH_MAX bytes) holds the
 * file's name for the swap's check (table.c, unchanged()).
 */
static const char *unchanging(int fd, const struct statfs *sf, char *path,
			      int *word)
{
	struct statx stx;
	char proc[32];
	ssize_t n;
	unsigned int i;
	int seals;

	*word = 0;
	switch (sf->f_type) {
	case SQUASHFS_MAGIC_: return "on squashfs";
	case EROFS_MAGIC_: return "on erofs";
	case ISOFS_MAGIC_: return "on iso9660";
	case CRAMFS_MAGIC_: case CRAMFS_MAGIC_WEND_: return "on cramfs";
	case ROMFS_MAGIC_: return "on romfs";
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals >= 0 && (seals & FROZEN_SEALS) == FROZEN_SEALS)
		return "sealed";
	if (!statx(fd, "", AT_EMPTY_PATH, 0, &stx) &&
	    (stx.stx_attributes & STATX_ATTR_VERITY))
		return "fs-verity";
	if (!ndirs)
		return NULL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, path, PATH_MAX);
	if (n <= 0 || n >= PATH_MAX)
		return NULL;
	path[n] = 0;
	for (i = 0; i < ndirs; i++)
		if (!strncmp(path, dirs[i], dirs_len[i]) &&
		    path[dirs_len[i]] == '/') {
			*word = 1;
			return "in MORSEL_PRELOAD_DIRS";
		}
	return NULL;
}

/*
 * The cached path: 0 and *@out, or -1 with the reason in @why (nothing
 * changed; the caller falls back).  @st is the fd's fstat, at or above the
 * threshold.
 *
 * What the shim keeps of the program's file, and why it is no descriptor
 * (review 2026-11b, H6).  POSIX record locks (fcntl F_SETLK) belong to the
 * process's descriptor table, and close() of *any* descriptor of the file
 * releases all of them (fs/open.c filp_flush -> locks_remove_posix), so a
 * dup closed on a fall-back, at the last munmap or after a swap silently
 * unlocked the program's file (SQLite's SHARED lock, for one).  The swap
 * needs a way to map the file later, when the program's fd may be gone.
 * The choices, tried on Linux 6.12's source and on a 6.18 host:
 *
 * - a dup, closed when the mapping goes: drops the locks (the bug);
 * - a dup kept for the life of the process (O_CLOEXEC): exec closes it,
 *   and that close drops the locks too, though POSIX locks must survive
 *   exec (fs/exec.c do_close_on_exec -> filp_close); it also shares the
 *   program's open file description, so flock(2) and OFD locks would live
 *   as long as the process, and an unlinked file's blocks would stay
 *   allocated; one descriptor per file ever mapped;
 * - an O_PATH descriptor: closing one releases nothing (filp_flush skips
 *   locks_remove_posix for FMODE_PATH), but an O_PATH fd cannot be mapped
 *   (EBADF), and a descriptor re-opened from it for the swap's mmap is an
 *   ordinary one, whose close drops the locks again;
 * - a standby mapping: an ordinary PROT_NONE mapping of the file, the
 *   morsel's extent long from offset 0, made here with the program's own
 *   fd and the program's mapping type.  The swap makes it readable and
 *   moves it over the mount with mremap(MREMAP_FIXED): one step under the
 *   mmap lock, as the MAP_FIXED mmap of before.  Dropping it is a munmap,
 *   which releases no lock (a mapping's file is put, never flushed).  It
 *   holds the open file description exactly as the kernel's own mapping
 *   would have; it costs address space (the extent again, no memory:
 *   never touched, not accountable, not populated even under
 *   mlockall(MCL_FUTURE) since it is PROT_NONE) and one VMA.
 *
 * The shim keeps the standby.  Its equal length makes the mremap a pure
 * move (no growth, so no RLIMIT_MEMLOCK or VM_DONTEXPAND failure after
 * the mount is gone).  Everything that can fail cheaply, the daemon
 * included, is asked before it is made; a fall-back after the daemon's
 * answer undoes only the daemon's morsel fd (another file) and the
 * standby (a munmap), neither of which touches the program's locks.
 */
static int map_cached(size_t len, int flags, int fd, off_t off,
		      const struct stat *st, void **out, char *why, size_t room)
{
	struct morsel_cache_info info;
	struct shim_ident id;
	struct rlimit rl;
	char path[PATH_MAX];
	struct statfs sf;
	uint64_t extent, ulen;
	int fl, order, mfd, word, seals;
	const char *stays;
	void *base, *standby;

	/*
	 * A descriptor open for writing: the program may write the file and
	 * read the write back through its mapping (LMDB's and SQLite's
	 * writers), unless the file is sealed against writes (a memfd, which
	 * is always O_RDWR).
	 */
	fl = fcntl(fd, F_GETFL);
	seals = fl < 0 || (fl & O_ACCMODE) != O_RDWR ? 0 :
		fcntl(fd, F_GET_SEALS);
	if (fl < 0 || (fl & O_PATH) || ((fl & O_ACCMODE) != O_RDONLY &&
	    (seals < 0 || (seals & FROZEN_SEALS) != FROZEN_SEALS))) {
		snprintf(why, room, "fd not opened O_RDONLY");
		return -1;
	}
	if (fstatfs(fd, &sf)) {
		snprintf(why, room, "fstatfs failed");
		return -1;
	}
	if (sf.f_type == MORSELFS_MAGIC) {
		snprintf(why, room, "file on morselfs");
		return -1;
	}
	stays = unchanging(fd, &sf, path, &word);
	if (!stays) {
		snprintf(why, room, "may change while mapped (not sealed, "
			 "fs-verity, a read-only file system type, nor in "
			 "MORSEL_PRELOAD_DIRS)");
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
	/*
	 * The mount and the standby take two extents of address space where
	 * the kernel's mapping takes len bytes: under a finite RLIMIT_AS that
	 * could make this or a later mmap of the program fail where it would
	 * not without the shim (review 2026-11b L8).
	 */
	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY) {
		snprintf(why, room, "RLIMIT_AS is set (the mount and its "
			 "standby would take %llu bytes of address space)",
			 2 * (unsigned long long)extent);
		return -1;
	}
	mfd = cache_get(fd, &info, why, room);
	if (mfd < 0)
		return -1;
	if (info.size != (uint64_t)st->st_size || info.extent < off + ulen) {
		snprintf(why, room, "the daemon's morsel does not match "
			 "(size %llu, extent %llu)",
			 (unsigned long long)info.size,
			 (unsigned long long)info.extent);
		goto fail_mfd;
	}
	/*
	 * Before the mount: the mount is extent-aligned and the standby is
	 * not, so mapped after it the standby would fill the pages right
	 * below the mount; this way they stay free, as without the shim.
	 */
	standby = real_mmap(NULL, info.extent, PROT_NONE,
			    flags & (MAP_TYPE | MAP_NORESERVE), fd, 0);
	if (standby == MAP_FAILED) {
		snprintf(why, room, "standby mapping: %s", strerror(errno));
		goto fail_mfd;
	}
	base = real_mmap(NULL, info.extent, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (base == MAP_FAILED) {
		snprintf(why, room, "mounting the morsel: %s", strerror(errno));
		real_munmap(standby, info.extent);
		return -1;
	}
	id.path = path;
	id.st = st;
	if (table_add((uintptr_t)base, info.extent, (uintptr_t)base + off,
		      (uintptr_t)base + off + ulen, flags,
		      (uintptr_t)standby, word ? &id : NULL)) {
		real_munmap(base, info.extent);
		real_munmap(standby, info.extent);
		snprintf(why, room, "no memory for the table");
		return -1;
	}
	snprintf(why, room, "%s, order %u, extent %llu at %p, %s",
		 info.flags & MORSEL_CACHE_HIT ? "hit" : "loaded", info.order,
		 (unsigned long long)info.extent, base, stays);
	*out = (char *)base + off;
	return 0;
fail_mfd:
	close(mfd);
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
