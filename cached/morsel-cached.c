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
 * connection count (atomic), and the count of requests being answered
 * (busy, with stopping, under busy_lock).
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
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cached.h"

#define MAX_CONNS	1024	/* connections served at once */
#define STOP_WAIT_MS	10000	/* for loads in progress at SIGTERM */

int verbose;
static int conns;
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
		"                     [--ready-fd N] [-v]\n"
		"  --socket PATH  listen here (default %s)\n"
		"  --dir DIR      the cache, a directory on morselfs (default %s)\n"
		"  --budget SIZE  memory for cached files, pages and tables\n"
		"                 (suffixes K M G T; default: the morselfs size)\n"
		"  --ready-fd N   write one byte to fd N once listening, close it\n"
		"  -v, --verbose  log every request\n",
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

static void reply(int sock, struct morsel_cache_reply *rep, int fd)
{
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
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
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
	int fds[8], nfd = 0, i, k, err = 0, out = -1;
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
		err = nfd ? EINVAL : 0;
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
		out = index_get(fds[0], &c->who, &rep);
		if (out < 0)
			err = -out;
	}
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	rep.error = err;
	reply(c->sock, &rep, out);
	if (out >= 0)
		close(out);
	pthread_mutex_lock(&busy_lock);
	if (!--busy)
		pthread_cond_broadcast(&idle);
	pthread_mutex_unlock(&busy_lock);
	return 0;
}

static void *serve(void *arg)
{
	struct conn *c = arg;

	while (!serve_one(c))
		;
	close(c->sock);
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
	if (pthread_create(&t, attr, serve, c) == 0)
		return;
	log_msg("pthread_create: %s", strerror(errno));
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "dir", required_argument, NULL, 'd' },
		{ "budget", required_argument, NULL, 'b' },
		{ "ready-fd", required_argument, NULL, 'r' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock_path = MORSEL_CACHED_SOCKET, *dir = MORSEL_CACHED_DIR;
	uint64_t budget = 0, fs_size;
	int ready = -1, o, dfd, ls, sfd;
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
	if (!budget)
		budget = fs_size;
	if (index_init(dfd, budget)) {
		log_msg("%s: %s", dir, strerror(errno));
		return 1;
	}
	ls = listen_on(sock_path, &bound);
	if (ls < 0)
		return 1;
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	log_msg("listening on %s, cache %s, budget %" PRIu64 " MiB", sock_path,
		dir, budget >> 20);
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
	o = index_stop(STOP_WAIT_MS);
	if (o)
		log_msg("%d loads did not stop; exiting anyway", o);
	else
		wait_idle(STOP_WAIT_MS);
	log_msg("exiting; cached files stay in %s", dir);
	_exit(0);
}
