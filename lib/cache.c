// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libmorsel's file-cache client: talks to morsel-cached (cached/) over its
 * AF_UNIX SOCK_SEQPACKET socket in the format of lib/cache_proto.h, and maps
 * the morsel fds it gets back.
 *
 * Locking: none.  Every function works on the descriptors it is given; one
 * socket carries one request at a time, so threads that share a socket
 * must serialise their calls (or each connect their own).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "morsel.h"
#include "cache_proto.h"

#define NEG_ERRNO (errno ? -errno : -EIO)

int morsel_cache_connect(const char *socket_path)
{
	struct sockaddr_un sa;
	int sock, err;

	if (!socket_path)
		socket_path = getenv("MORSEL_CACHED_SOCKET");
	if (!socket_path || !*socket_path)
		socket_path = MORSEL_CACHED_SOCKET;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return NEG_ERRNO;
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa))) {
		err = NEG_ERRNO;
		close(sock);
		return err;
	}
	return sock;
}

/*
 * Send @req (with @fd attached unless it is -1), receive the reply and the
 * descriptor it may carry (*@rfd, else -1).  0 or -errno for the transport;
 * the reply's own error is for the caller to read.
 */
static int transact(int sock, const struct morsel_cache_req *req, int fd,
		    struct morsel_cache_reply *rep, int *rfd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { (void *)req, sizeof(*req) };
	struct msghdr msg;
	struct cmsghdr *c;
	ssize_t n;
	int got = -1, i, nfd;

	*rfd = -1;
	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return NEG_ERRNO;
	if (n != sizeof(*req))
		return -EPROTO;

	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	iov.iov_base = rep;
	iov.iov_len = sizeof(*rep);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return NEG_ERRNO;
	/* Keep at most one descriptor, close any other. */
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfd; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < 0)
				got = f;
			else
				close(f);
		}
	}
	if (n == 0) {
		if (got >= 0)
			close(got);
		return -ECONNRESET;
	}
	if (n != sizeof(*rep) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    rep->magic != MORSEL_CACHE_MAGIC ||
	    rep->version != MORSEL_CACHE_VERSION || rep->op != req->op) {
		if (got >= 0)
			close(got);
		return -EPROTO;
	}
	*rfd = got;
	return 0;
}

static void req_init(struct morsel_cache_req *req, unsigned int op)
{
	memset(req, 0, sizeof(*req));
	req->magic = MORSEL_CACHE_MAGIC;
	req->version = MORSEL_CACHE_VERSION;
	req->op = op;
}

int morsel_cache_get(int sock, int fd, struct morsel_cache_info *info)
{
	struct morsel_cache_req req;
	struct morsel_cache_reply rep;
	int err, mfd;

	if (fd < 0)
		return -EBADF;
	req_init(&req, MORSEL_CACHE_OP_GET);
	err = transact(sock, &req, fd, &rep, &mfd);
	if (err)
		return err;
	if (rep.error) {
		if (mfd >= 0)
			close(mfd);
		return rep.error > 0 ? -rep.error : -EPROTO;
	}
	if (mfd < 0)
		return -EBADMSG;
	if (info) {
		memset(info, 0, sizeof(*info));
		info->size = rep.size;
		info->extent = rep.extent;
		info->order = rep.order;
		info->flags = rep.flags;
	}
	return mfd;
}

int morsel_cache_stats(int sock, struct morsel_cache_stats *st)
{
	struct morsel_cache_req req;
	struct morsel_cache_reply rep;
	int err, fd;

	req_init(&req, MORSEL_CACHE_OP_STATS);
	err = transact(sock, &req, -1, &rep, &fd);
	if (err)
		return err;
	if (fd >= 0)
		close(fd);
	if (rep.error)
		return rep.error > 0 ? -rep.error : -EPROTO;
	memset(st, 0, sizeof(*st));
	st->entries = rep.entries;
	st->bytes = rep.bytes;
	st->budget = rep.budget;
	st->hits = rep.hits;
	st->loads = rep.loads;
	st->evictions = rep.evictions;
	st->refusals = rep.refusals;
	return 0;
}

int morsel_cache_map(const char *socket_path, int fd, void **addr,
		     size_t *len)
{
	struct morsel_cache_info info;
	size_t extent;
	int sock, mfd, err;
	void *p;

	sock = morsel_cache_connect(socket_path);
	if (sock < 0)
		return sock;
	mfd = morsel_cache_get(sock, fd, &info);
	close(sock);
	if (mfd < 0)
		return mfd;
	err = morsel_map(mfd, NULL, PROT_READ, 0, &p, &extent);
	close(mfd);
	if (err)
		return err;
	*addr = p;
	*len = info.size;
	return 0;
}

/*
 * morsel_cache_map() for the file at @path, opened O_RDONLY here (so the
 * caller's permissions decide) and closed again before returning.
 *
 * That close() releases every POSIX record lock (fcntl F_SETLK, F_SETLKW)
 * the calling process holds on the file: POSIX locks belong to the
 * process, and closing *any* of its descriptors of the file drops them all
 * (fs/open.c filp_flush -> locks_remove_posix; OFD locks and flock(2) are
 * not affected).  There is no way around it here: the daemon needs a
 * readable descriptor, and a readable descriptor cannot be closed without
 * this effect.  A caller that holds such locks, or that shares the file
 * with code that may (SQLite, for one), must call morsel_cache_map() with a
 * descriptor it keeps open instead (review 2026-11b, H6).
 */
int morsel_cache_map_path(const char *socket_path, const char *path,
			  void **addr, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return NEG_ERRNO;
	err = morsel_cache_map(socket_path, fd, addr, len);
	close(fd);
	return err;
}

/*
 * The mapping covers the extent of the order that holds @len bytes (the
 * daemon makes every morsel of the smallest such order).
 */
int morsel_cache_unmap(void *addr, size_t len)
{
	int order = morsel_order_for_size(len);

	if (!len || order < 0)
		return -EINVAL;
	return morsel_unmap(addr, morsel_order_extent(order));
}
