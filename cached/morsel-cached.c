// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-cached: keeps large read-only files in morsels and hands their
 * fds to clients over an AF_UNIX socket (libmorsel's morsel_cache_*).
 * This file is the service: options, the cache directory and the socket,
 * one thread per connection speaking lib/cache_proto.h, and SIGTERM.  The
 * index itself is index.c.
 *
 * Locking: the main thread owns the listening socket and the signals
 * (blocked in every thread, read through a signalfd).  A connection thread
 * owns its socket; threads share index.c's state (its own lock), the
 * connection count (atomic), the connections per uid (uconns, under
 * uconns_lock), and the count of requests being answered (busy, with
 * stopping, under busy_lock).  The options are set by main() before the
 * first thread starts and only read afterwards.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cached.h"

#define MAX_CONNS	1024	/* connections served at once */
#define STOP_WAIT_MS	10000	/* for loads in progress at SIGTERM */
#define FUSE_MAGIC	0x65735546UL	/* FUSE_SUPER_MAGIC: fuse, fuseblk, virtiofs */

int verbose;
static int conns;
/* --idle-timeout (seconds, 0: none) and --max-user-conns. */
static unsigned int idle_timeout = 60, max_user_conns = 64;
/* Connections per uid: at most max_user_conns each. */
static pthread_mutex_t uconns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uconn {
	uint32_t uid;
	unsigned int n;
} *uconns;
static size_t nuconns, uconns_room;
/* Requests being answered: SIGTERM lets them send their replies. */
static pthread_mutex_t busy_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;
static int busy, stopping;
/*
 * A spare descriptor (on /dev/null), given up to accept and drop a
 * connection when the process is out of descriptors: otherwise the
 * pending connection keeps the listening socket readable and the poll
 * loop spins.  Main thread only.
 */
static int spare_fd = -1;

void log_msg(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "morsel-cached: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}

static void usage(int status)
{
	fprintf(status ? stderr : stdout,
		"usage: morsel-cached [--socket PATH] [--dir DIR] [--budget SIZE]\n"
		"                     [--user-budget SIZE] [--min-size SIZE]\n"
		"                     [--max-age TIME] [--idle-timeout TIME]\n"
		"                     [--max-user-conns N] [--refuse-fs TYPE]...\n"
		"                     [--load-threads N] [--pressure STALL/WINDOW|off]\n"
		"                     [--pressure-free SIZE|N%%] [--pool DIR]\n"
		"                     [--pool-wait TIME] [--ready-fd N] [-v]\n"
		"  --socket PATH       listen here (default %s)\n"
		"  --dir DIR           the cache, a directory on morselfs (default %s)\n"
		"  --budget SIZE       memory for cached files, pages and tables\n"
		"                      (suffixes K M G T; default: the morselfs size)\n"
		"  --user-budget SIZE  the part one uid's loads may take (not uid 0;\n"
		"                      default: half the budget)\n"
		"  --min-size SIZE     refuse smaller files (default 4K)\n"
		"  --max-age TIME      drop files unused this long (suffixes s m h d;\n"
		"                      default 1d; 0: never)\n"
		"  --idle-timeout TIME close connections idle this long (default 60s;\n"
		"                      0: never)\n"
		"  --max-user-conns N  connections one uid may hold (default 64)\n"
		"  --refuse-fs TYPE    refuse files on this file system too (a name:\n"
		"                      nfs cifs smb2 9p ceph tmpfs ramfs overlay, or\n"
		"                      its f_type number); FUSE is always refused\n"
		"  --load-threads N    reads in flight per load (default 8, at most 64)\n"
		"  --pressure STALL/WINDOW  evict when tasks stall on memory this long\n"
		"                      within the window (PSI; suffixes us ms s;\n"
		"                      default 50ms/2s; off: never)\n"
		"  --pressure-free SIZE|N%%  ... until this much memory is available,\n"
		"                      on the machine and in each memory cgroup\n"
		"                      around the daemon (default 10%%)\n"
		"  --pool DIR          a shared pool's morselfs (mount -o pool): files\n"
		"                      are served from it, and loaded into it where it\n"
		"                      is mounted read-write (the publisher)\n"
		"  --pool-wait TIME    on a read-only pool, wait this long for the\n"
		"                      publisher's load before loading locally\n"
		"                      (suffixes s m h d; default 0)\n"
		"  --ready-fd N        write one byte to fd N once listening, close it\n"
		"  -v, --verbose       log every request\n",
		MORSEL_CACHED_SOCKET, MORSEL_CACHED_DIR);
	exit(status);
}

/* The cache directory: created 0700 if absent, on morselfs, ours. */
static int open_dir(const char *path, uint64_t *size)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	if (mkdir(path, 0700) && errno != EEXIST) {
		log_msg("mkdir %s: %s", path, strerror(errno));
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatfs(fd, &sfs) || fstat(fd, &st)) {
		log_msg("%s: %s", path, strerror(errno));
		return -1;
	}
	if (sfs.f_type != MORSELFS_MAGIC) {
		log_msg("%s is not on morselfs", path);
		return -1;
	}
	if (st.st_uid != geteuid()) {
		log_msg("%s belongs to uid %u, not to us", path, st.st_uid);
		return -1;
	}
	if ((st.st_mode & 07777) != 0700) {
		if (fchmod(fd, 0700)) {
			log_msg("chmod %s: %s", path, strerror(errno));
			return -1;
		}
		log_msg("%s: mode %04o, made 0700", path, st.st_mode & 07777);
	}
	/*
	 * A cached copy must not give what its source's mount withholds
	 * (an mmap PROT_EXEC of a file from a noexec mount): review
	 * 2026-11b L10.  Only the administrator can mount, so say it.
	 */
	if ((sfs.f_flags & (ST_NOEXEC | ST_NOSUID | ST_NODEV)) !=
	    (ST_NOEXEC | ST_NOSUID | ST_NODEV))
		log_msg("%s: mounted without%s%s%s: mount it "
			"noexec,nosuid,nodev (morsel-cached(8))", path,
			sfs.f_flags & ST_NOEXEC ? "" : " noexec",
			sfs.f_flags & ST_NOSUID ? "" : " nosuid",
			sfs.f_flags & ST_NODEV ? "" : " nodev");
	*size = (uint64_t)sfs.f_blocks * sfs.f_bsize;
	return fd;
}

/* Listen on @path (mode 0666); a socket nobody answers on is replaced. */
static int listen_on(const char *path, struct stat *bound)
{
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int s, probe;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		log_msg("%s: socket path too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			log_msg("%s exists and is no socket", path);
			return -1;
		}
		probe = morsel_cache_connect(path);
		if (probe >= 0) {
			close(probe);
			log_msg("%s: another daemon is listening", path);
			return -1;
		}
		unlink(path);
	}
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	old = umask(0111);
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		umask(old);
		log_msg("bind %s: %s", path, strerror(errno));
		close(s);
		return -1;
	}
	umask(old);
	if (listen(s, 128) || lstat(path, bound)) {
		log_msg("listen %s: %s", path, strerror(errno));
		unlink(path);
		close(s);
		return -1;
	}
	return s;
}

struct conn {
	int sock;
	struct peer who;
};

/*
 * Send the reply; 0, or -1 if the client's queue is full (a client that
 * does not read its replies): its connection is closed.  Never blocks, so
 * that the entry counts as in flight only for a moment (index_sent).
 */
static int reply(int sock, struct morsel_cache_reply *rep, int fd)
{
	ssize_t n;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { rep, sizeof(*rep) };
	struct msghdr msg;
	struct cmsghdr *c;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -1 : 0;
}

/* One request: validate it, answer it.  0 to go on, -1 when closed. */
static int serve_one(struct conn *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct morsel_cache_req req;
	struct morsel_cache_reply rep;
	struct iovec iov = { &req, sizeof(req) };
	struct msghdr msg;
	struct cmsghdr *cm;
	int fds[8], nfd = 0, i, k, err = 0, out = -1, gone;
	void *sent = NULL;
	ssize_t n;

	memset(&msg, 0, sizeof(msg));
	memset(&req, 0, sizeof(req));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && verbose)
		log_msg("pid %d uid %d: idle for %u s, closed", c->who.pid,
			c->who.uid, idle_timeout);
	for (cm = CMSG_FIRSTHDR(&msg); n > 0 && cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k && nfd < 8; i++)
			memcpy(&fds[nfd++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	if (n > 0) {
		pthread_mutex_lock(&busy_lock);
		if (stopping)
			n = 0;	/* too late: the socket goes with us */
		else
			busy++;
		pthread_mutex_unlock(&busy_lock);
	}
	if (n <= 0) {
		for (i = 0; i < nfd; i++)
			close(fds[i]);
		return -1;
	}

	memset(&rep, 0, sizeof(rep));
	rep.magic = MORSEL_CACHE_MAGIC;
	rep.version = MORSEL_CACHE_VERSION;
	rep.op = req.op;
	if (n != sizeof(req) || (msg.msg_flags & MSG_TRUNC) ||
	    req.magic != MORSEL_CACHE_MAGIC)
		err = EPROTO;
	else if (req.version != MORSEL_CACHE_VERSION)
		err = EPROTONOSUPPORT;
	else if (req.flags || req.reserved[0] || req.reserved[1] ||
		 req.reserved[2] || req.reserved[3] || req.reserved[4] ||
		 (msg.msg_flags & MSG_CTRUNC))
		err = EINVAL;
	else if (req.op == MORSEL_CACHE_OP_STATS)
		/* The counters tell what others do: root's and ours only (L9). */
		err = nfd ? EINVAL : c->who.uid && (uid_t)c->who.uid != geteuid() ?
		      EACCES : 0;
	else if (req.op != MORSEL_CACHE_OP_GET)
		err = EOPNOTSUPP;
	else if (nfd != 1)
		err = nfd ? EINVAL : EBADF;
	if (err) {
		log_msg("pid %d uid %d: bad request: %s", c->who.pid,
			c->who.uid, strerror(err));
	} else if (req.op == MORSEL_CACHE_OP_STATS) {
		index_stats(&rep);
	} else {
		/* index_get logs its own refusals. */
		out = index_get(fds[0], &c->who, &rep, &sent);
		if (out < 0)
			err = -out;
	}
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	rep.error = err;
	gone = reply(c->sock, &rep, out);
	if (gone && errno == EAGAIN)
		log_msg("pid %d uid %d: does not read its replies: closed",
			c->who.pid, c->who.uid);
	if (out >= 0) {
		close(out);
		index_sent(sent);
	}
	pthread_mutex_lock(&busy_lock);
	if (!--busy)
		pthread_cond_broadcast(&idle);
	pthread_mutex_unlock(&busy_lock);
	return gone;
}

/* One more connection of @uid: 0, or -1 if it has max_user_conns. */
static int uconn_get(uint32_t uid)
{
	struct uconn *grown;
	size_t i;
	int r = 0;

	pthread_mutex_lock(&uconns_lock);
	for (i = 0; i < nuconns && uconns[i].uid != uid; i++)
		;
	if (i == nuconns) {
		if (nuconns == uconns_room) {
			grown = realloc(uconns, (uconns_room ? 2 * uconns_room : 16) *
						sizeof(*uconns));
			if (!grown) {
				r = -1;
				goto out;
			}
			uconns = grown;
			uconns_room = uconns_room ? 2 * uconns_room : 16;
		}
		uconns[nuconns].uid = uid;
		uconns[nuconns++].n = 0;
	}
	if (uconns[i].n >= max_user_conns)
		r = -1;
	else
		uconns[i].n++;
out:
	pthread_mutex_unlock(&uconns_lock);
	return r;
}

static void uconn_put(uint32_t uid)
{
	size_t i;

	pthread_mutex_lock(&uconns_lock);
	for (i = 0; i < nuconns; i++) {
		if (uconns[i].uid != uid)
			continue;
		if (!--uconns[i].n)
			uconns[i] = uconns[--nuconns];
		break;
	}
	pthread_mutex_unlock(&uconns_lock);
}

static void *serve(void *arg)
{
	struct conn *c = arg;

	while (!serve_one(c))
		;
	close(c->sock);
	uconn_put((uint32_t)c->who.uid);
	free(c);
	__atomic_sub_fetch(&conns, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void accept_one(int ls, pthread_attr_t *attr)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;
	pthread_t t;
	int s;

	s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	if (s < 0) {
		if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
			log_msg("accept: %s: one connection refused",
				strerror(errno));
			close(spare_fd);
			s = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
			if (s >= 0)
				close(s);
			spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		}
		return;
	}
	if (__atomic_add_fetch(&conns, 1, __ATOMIC_RELAXED) > MAX_CONNS) {
		log_msg("too many connections (%d): one refused", MAX_CONNS);
		goto fail;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto fail;
	c->sock = s;
	c->who.pid = c->who.uid = -1;
	if (!getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		c->who.pid = cred.pid;
		c->who.uid = cred.uid;
	}
	if (uconn_get((uint32_t)c->who.uid)) {
		log_msg("uid %d: too many connections (%u): one refused",
			c->who.uid, max_user_conns);
		free(c);
		goto fail;
	}
	/* A connection that sends nothing for so long is closed. */
	if (idle_timeout) {
		struct timeval tv = { .tv_sec = idle_timeout };

		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (pthread_create(&t, attr, serve, c) == 0)
		return;
	log_msg("pthread_create: %s", strerror(errno));
	uconn_put((uint32_t)c->who.uid);
	free(c);
fail:
	close(s);
	__atomic_sub_fetch(&conns, 1, __ATOMIC_RELAXED);
}

/* Wait up to @ms for the requests being answered (hits, refusals). */
static void wait_idle(int ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += ms / 1000 + 1;
	pthread_mutex_lock(&busy_lock);
	while (busy && pthread_cond_timedwait(&idle, &busy_lock, &dl) == 0)
		;
	if (busy)
		log_msg("%d requests unanswered; exiting anyway", busy);
	pthread_mutex_unlock(&busy_lock);
}

/* A duration: seconds, or a number with s, m, h or d.  0 or -1. */
static int parse_time(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 's': end++; break;
	case 'm': mul = 60; end++; break;
	case 'h': mul = 3600; end++; break;
	case 'd': mul = 86400; end++; break;
	}
	if (*end || v > UINT32_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

/* Microseconds: a number with us, ms or s (no suffix: s).  0 or -1. */
static int parse_us(const char *s, char **end, uint64_t *out)
{
	unsigned long long v;
	uint64_t mul = 1000000;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, end, 10);
	if (errno)
		return -1;
	if (!strncmp(*end, "us", 2)) {
		mul = 1;
		*end += 2;
	} else if (!strncmp(*end, "ms", 2)) {
		mul = 1000;
		*end += 2;
	} else if (**end == 's') {
		(*end)++;
	}
	if (v > UINT32_MAX)
		return -1;
	*out = v * mul;
	return 0;
}

/*
 * --pressure STALL/WINDOW or off.  PSI takes windows of 500 ms to 10 s and
 * a stall of at most the window.  0 or -1.
 */
static int parse_pressure(const char *s, struct pressure_config *pc)
{
	char *end;

	if (!strcmp(s, "off")) {
		pc->stall_us = pc->window_us = 0;
		return 0;
	}
	if (parse_us(s, &end, &pc->stall_us) || *end != '/' ||
	    parse_us(end + 1, &end, &pc->window_us) || *end)
		return -1;
	if (pc->window_us < 500000 || pc->window_us > 10000000 ||
	    !pc->stall_us || pc->stall_us > pc->window_us)
		return -1;
	return 0;
}

/* --pressure-free SIZE or N% (0 < N < 100).  0 or -1. */
static int parse_free(const char *s, struct pressure_config *pc)
{
	size_t n = strlen(s);
	char *end;
	long v;

	if (n && s[n - 1] == '%') {
		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end != s + n - 1 || end == s || v < 1 || v > 99)
			return -1;
		pc->free_permille = (unsigned int)v * 10;
		pc->free_bytes = 0;
		return 0;
	}
	if (morsel_cache_parse_size(s, &pc->free_bytes) || !pc->free_bytes)
		return -1;
	return 0;
}

/* A file system type for --refuse-fs: a name or an f_type number. */
static int parse_fs_type(const char *s, unsigned long *out)
{
	static const struct {
		const char *name;
		unsigned long magic;
	} types[] = {
		{ "fuse", FUSE_MAGIC }, { "nfs", 0x6969 },
		{ "cifs", 0xff534d42 }, { "smb2", 0xfe534d42 },
		{ "9p", 0x01021997 }, { "ceph", 0x00c36400 },
		{ "tmpfs", 0x01021994 }, { "ramfs", 0x858458f6 },
		{ "overlay", 0x794c7630 },
	};
	unsigned long long v;
	unsigned int i;
	char *end;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(s, types[i].name)) {
			*out = types[i].magic;
			return 0;
		}
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || !v || v > UINT32_MAX)
		return -1;
	*out = (unsigned long)v;
	return 0;
}

/*
 * The soft RLIMIT_NOFILE up to the hard one: systemd starts services at
 * 1024.  The daemon keeps no descriptor per cached file, but each
 * connection and each request in flight takes some.
 */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl)) {
		/* An infinite hard limit: as far as fs.nr_open allows. */
		rl.rlim_cur = 1 << 20;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			log_msg("setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "budget", required_argument, NULL, 'b' },
		{ "user-budget", required_argument, NULL, 'u' },
		{ "min-size", required_argument, NULL, 'm' },
		{ "max-age", required_argument, NULL, 'a' },
		{ "idle-timeout", required_argument, NULL, 'i' },
		{ "max-user-conns", required_argument, NULL, 'c' },
		{ "refuse-fs", required_argument, NULL, 'f' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "load-threads", required_argument, NULL, 't' },
		{ "pressure", required_argument, NULL, 'p' },
		{ "pressure-free", required_argument, NULL, 'F' },
		{ "pool", required_argument, NULL, 'P' },
		{ "pool-wait", required_argument, NULL, 'W' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock_path = MORSEL_CACHED_SOCKET, *dir = MORSEL_CACHED_DIR;
	const char *pool = NULL;
	uint64_t pool_wait = 0;
	struct cache_config cfg = {
		.min_size = 4096, .max_age = 86400,
		.refuse_fs = { FUSE_MAGIC }, .n_refuse_fs = 1,
		.load_threads = 8,
	};
	struct pressure_config pcfg = {
		.stall_us = 50000, .window_us = 2000000, .free_permille = 100,
	};
	uint64_t budget = 0, user_budget = 0, fs_size, t;
	int ready = -1, o, dfd, ls, sfd, err;
	struct signalfd_siginfo si;
	struct pollfd pf[2];
	pthread_attr_t attr;
	struct stat bound, now;
	sigset_t sigs;
	char *end;
	long v;

	while ((o = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			sock_path = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'b':
			if (morsel_cache_parse_size(optarg, &budget) ||
			    !budget) {
				fprintf(stderr, "morsel-cached: bad --budget %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'u':
			if (morsel_cache_parse_size(optarg, &user_budget) ||
			    !user_budget) {
				fprintf(stderr, "morsel-cached: bad --user-budget %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'm':
			if (morsel_cache_parse_size(optarg, &cfg.min_size)) {
				fprintf(stderr, "morsel-cached: bad --min-size %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'P':
			pool = optarg;
			break;
		case 'W':
			if (parse_time(optarg, &pool_wait)) {
				fprintf(stderr, "morsel-cached: bad --pool-wait %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'a':
		case 'i':
			if (parse_time(optarg, &t)) {
				fprintf(stderr, "morsel-cached: bad --%s %s\n",
					o == 'a' ? "max-age" : "idle-timeout",
					optarg);
				usage(2);
			}
			if (o == 'a')
				cfg.max_age = t;
			else
				idle_timeout = (unsigned int)t;
			break;
		case 'c':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 1 ||
			    v > MAX_CONNS) {
				fprintf(stderr, "morsel-cached: bad --max-user-conns %s\n",
					optarg);
				usage(2);
			}
			max_user_conns = (unsigned int)v;
			break;
		case 'f':
			if (cfg.n_refuse_fs == MAX_REFUSE_FS ||
			    parse_fs_type(optarg, &cfg.refuse_fs[cfg.n_refuse_fs])) {
				fprintf(stderr, "morsel-cached: bad --refuse-fs %s\n",
					optarg);
				usage(2);
			}
			cfg.n_refuse_fs++;
			break;
		case 'r':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0 ||
			    v > INT32_MAX || fcntl((int)v, F_GETFD) < 0) {
				fprintf(stderr, "morsel-cached: bad --ready-fd %s\n",
					optarg);
				usage(2);
			}
			ready = (int)v;
			break;
		case 't':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 1 ||
			    v > MAX_LOAD_THREADS) {
				fprintf(stderr, "morsel-cached: bad --load-threads %s\n",
					optarg);
				usage(2);
			}
			cfg.load_threads = (int)v;
			break;
		case 'p':
			if (parse_pressure(optarg, &pcfg)) {
				fprintf(stderr, "morsel-cached: bad --pressure %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'F':
			if (parse_free(optarg, &pcfg)) {
				fprintf(stderr, "morsel-cached: bad --pressure-free %s\n",
					optarg);
				usage(2);
			}
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "morsel-cached: unexpected argument %s\n",
			argv[optind]);
		usage(2);
	}
	if (!*sock_path || !*dir)
		usage(2);

	/* Signals: SIGTERM/SIGINT end the service, through a signalfd. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	umask(077);

	dfd = open_dir(dir, &fs_size);
	if (dfd < 0 || sfd < 0)
		return 1;
	raise_nofile();
	if (!budget)
		budget = fs_size;
	cfg.budget = budget;
	cfg.user_budget = user_budget ? user_budget : budget / 2;
	if (cfg.user_budget > budget)
		cfg.user_budget = budget;
	/* Before the cache directory is taken over. */
	err = pool ? pool_init(pool, pool_wait * 1000) : 0;
	if (err) {
		log_msg("--pool %s: %s (a morselfs pool mount)", pool, strerror(-err));
		return 1;
	}
	err = index_init(dfd, &cfg);
	if (err) {
		log_msg("%s: %s", dir, strerror(-err));
		return 1;
	}
	ls = listen_on(sock_path, &bound);
	if (ls < 0)
		return 1;
	err = pressure_start(&pcfg);
	if (err)
		log_msg("pressure: %s: not watching memory pressure",
			strerror(-err));
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	log_msg("listening on %s, cache %s, budget %" PRIu64 " MiB, %" PRIu64
		" MiB per uid", sock_path, dir, budget >> 20,
		cfg.user_budget >> 20);
	if (ready >= 0) {
		if (write(ready, "r", 1) != 1)
			log_msg("--ready-fd %d: %s", ready, strerror(errno));
		close(ready);
	}

	pf[0].fd = ls;
	pf[0].events = POLLIN;
	pf[1].fd = sfd;
	pf[1].events = POLLIN;
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_msg("poll: %s", strerror(errno));
			break;
		}
		if (pf[1].revents) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				log_msg("signal %u: stopping", si.ssi_signo);
			break;
		}
		if (pf[0].revents)
			accept_one(ls, &attr);
	}
	close(ls);
	/* Only our own socket: a newer daemon may have replaced it. */
	if (!lstat(sock_path, &now) && now.st_ino == bound.st_ino &&
	    now.st_dev == bound.st_dev)
		unlink(sock_path);
	pthread_mutex_lock(&busy_lock);
	stopping = 1;
	pthread_mutex_unlock(&busy_lock);
	pressure_stop();
	o = index_stop(STOP_WAIT_MS);
	if (o)
		log_msg("%d loads did not stop; exiting anyway", o);
	else
		wait_idle(STOP_WAIT_MS);
	log_msg("exiting; cached files stay in %s", dir);
	_exit(0);
}
