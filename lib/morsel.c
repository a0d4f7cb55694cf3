// SPDX-License-Identifier: LGPL-2.1 OR MIT
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "morsel.h"

#define NEG_ERRNO (errno ? -errno : -EIO)

uint64_t morsel_order_extent(unsigned int order)
{
	return order > MORSEL_MAX_ORDER ? 0 : (uint64_t)4096 << (9 * order);
}

int morsel_order_for_size(uint64_t size)
{
	unsigned int order;

	for (order = 0; order <= MORSEL_MAX_ORDER; order++)
		if (size <= morsel_order_extent(order))
			return (int)order;
	return -EFBIG;
}

int morsel_create(const char *path, uint64_t size, mode_t mode)
{
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	int err;

	if (fd < 0)
		return NEG_ERRNO;
	if (size && ftruncate(fd, (off_t)size)) {
		err = NEG_ERRNO;
		unlink(path);
		close(fd);
		return err;
	}
	return fd;
}

int morsel_create_unnamed(int dirfd, uint64_t size, mode_t mode)
{
	struct morsel_create req = {
		.size = size,
		.mode = mode,
		.flags = MORSEL_CREATE_CLOEXEC,
	};
	int fd = ioctl(dirfd, MORSEL_IOC_CREATE, &req);

	return fd < 0 ? NEG_ERRNO : fd;
}

int morsel_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC);

	return fd < 0 ? NEG_ERRNO : fd;
}

int morsel_resize(int fd, uint64_t size)
{
	return ftruncate(fd, (off_t)size) ? NEG_ERRNO : 0;
}

int morsel_stat(int fd, struct morsel_stat *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(fd, MORSEL_IOC_STAT, st) ? NEG_ERRNO : 0;
}

static int range_ioctl(int fd, unsigned long cmd, uint64_t offset,
		       uint64_t length, uint64_t flags)
{
	struct morsel_range r;

	memset(&r, 0, sizeof(r));
	r.offset = offset;
	r.length = length;
	r.flags = flags;
	return ioctl(fd, cmd, &r) ? NEG_ERRNO : 0;
}

int morsel_populate(int fd, uint64_t offset, uint64_t length)
{
	return range_ioctl(fd, MORSEL_IOC_POPULATE, offset, length, 0);
}

int morsel_populate_huge(int fd, uint64_t offset, uint64_t length)
{
	return range_ioctl(fd, MORSEL_IOC_POPULATE, offset, length,
			   MORSEL_POPULATE_HUGE);
}

int morsel_evict(int fd, uint64_t offset, uint64_t length)
{
	return range_ioctl(fd, MORSEL_IOC_EVICT, offset, length, 0);
}

int morsel_collapse(int fd, uint64_t offset, uint64_t length)
{
	return range_ioctl(fd, MORSEL_IOC_COLLAPSE, offset, length, 0);
}

int morsel_set_huge(int fd, unsigned int mode)
{
	struct morsel_huge h;

	memset(&h, 0, sizeof(h));
	h.mode = mode;
	return ioctl(fd, MORSEL_IOC_SET_HUGE, &h) ? NEG_ERRNO : 0;
}

int morsel_set_mpol(int fd, unsigned int mode, uint64_t nodes)
{
	struct morsel_mpol p;

	memset(&p, 0, sizeof(p));
	p.mode = mode;
	p.nodes = nodes;
	return ioctl(fd, MORSEL_IOC_SET_MPOL, &p) ? NEG_ERRNO : 0;
}

int morsel_get_mpol(int fd, unsigned int *mode, uint64_t *nodes)
{
	struct morsel_mpol p;

	memset(&p, 0, sizeof(p));
	if (ioctl(fd, MORSEL_IOC_GET_MPOL, &p))
		return NEG_ERRNO;
	if (mode)
		*mode = p.mode;
	if (nodes)
		*nodes = p.nodes;
	return 0;
}

int morsel_node_pages(int fd, uint64_t offset, uint64_t length,
		      uint64_t *pages)
{
	struct morsel_node_pages np;

	memset(&np, 0, sizeof(np));
	np.offset = offset;
	np.length = length;
	if (ioctl(fd, MORSEL_IOC_NODE_PAGES, &np))
		return NEG_ERRNO;
	memcpy(pages, np.pages, sizeof(np.pages));
	return 0;
}

int morsel_migrate(int fd, uint64_t offset, uint64_t length, unsigned int node,
		   struct morsel_migrate *res)
{
	return morsel_migrate_bitmap(fd, offset, length, NULL, node, res);
}

int morsel_migrate_bitmap(int fd, uint64_t offset, uint64_t length,
			  const uint64_t *bitmap, unsigned int node,
			  struct morsel_migrate *res)
{
	struct morsel_migrate r;

	memset(&r, 0, sizeof(r));
	r.offset = offset;
	r.length = length;
	r.node = node;
	r.bitmap = (uintptr_t)bitmap;
	if (ioctl(fd, MORSEL_IOC_MIGRATE, &r))
		return NEG_ERRNO;
	if (res)
		*res = r;
	return 0;
}

int morsel_fill(int fd, int src, uint64_t src_offset, uint64_t offset,
		uint64_t length, uint64_t *filled)
{
	struct morsel_fill f;
	int err = 0;

	memset(&f, 0, sizeof(f));
	f.fd = src;
	f.src_offset = src_offset;
	f.offset = offset;
	f.length = length;
	if (ioctl(fd, MORSEL_IOC_FILL, &f))
		err = NEG_ERRNO;
	if (filled)
		*filled = f.filled;
	return err;
}

int morsel_seal(int fd)
{
	return ioctl(fd, MORSEL_IOC_SEAL) ? NEG_ERRNO : 0;
}

int morsel_accessed(int fd, uint64_t offset, uint64_t length,
		    uint64_t *bitmap, int clear, uint64_t *accessed,
		    uint64_t *populated)
{
	struct morsel_accessed a;

	memset(&a, 0, sizeof(a));
	a.offset = offset;
	a.length = length;
	a.bitmap = (uintptr_t)bitmap;
	a.flags = clear ? MORSEL_ACCESSED_CLEAR : 0;
	if (ioctl(fd, MORSEL_IOC_ACCESSED, &a))
		return NEG_ERRNO;
	if (accessed)
		*accessed = a.accessed;
	if (populated)
		*populated = a.populated;
	return 0;
}

/* PR_SET_MEMORY_MANAGER takes the directory's fd, which we close after. */
int morsel_set_memory_manager(const char *dir)
{
	int fd = -1, err = 0;

	if (dir) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return NEG_ERRNO;
	}
	if (prctl(PR_SET_MEMORY_MANAGER, fd, 0, 0, 0))
		err = NEG_ERRNO;
	if (fd >= 0)
		close(fd);
	return err;
}

int morsel_memory_manager(void)
{
	int r = prctl(PR_GET_MEMORY_MANAGER, 0, 0, 0, 0);

	return r < 0 ? NEG_ERRNO : r;
}

/* FICLONE and FICLONERANGE: the kernel does it all (clone.c). */
int morsel_clone(int src_fd, int dst_fd)
{
	return ioctl(dst_fd, FICLONE, src_fd) ? NEG_ERRNO : 0;
}

int morsel_clone_range(int src_fd, uint64_t src_offset, int dst_fd,
		       uint64_t dst_offset, uint64_t length)
{
	struct file_clone_range r;

	memset(&r, 0, sizeof(r));
	r.src_fd = src_fd;
	r.src_offset = src_offset;
	r.src_length = length;
	r.dest_offset = dst_offset;
	return ioctl(dst_fd, FICLONERANGE, &r) ? NEG_ERRNO : 0;
}

int morsel_bind(int fd, uint64_t addr)
{
	struct morsel_bind b;

	memset(&b, 0, sizeof(b));
	b.addr = addr;
	return ioctl(fd, MORSEL_IOC_BIND, &b) ? NEG_ERRNO : 0;
}

int morsel_set_min_order(int fd, unsigned int order)
{
	struct morsel_min_order o;

	memset(&o, 0, sizeof(o));
	o.order = order;
	return ioctl(fd, MORSEL_IOC_SET_MIN_ORDER, &o) ? NEG_ERRNO : 0;
}

/* The kernel fills at most MORSEL_MAPPINGS_MAX entries a call: page on. */
int morsel_mappings(int fd, struct morsel_mapping *out, unsigned int room)
{
	struct morsel_mappings req;
	uint64_t done = 0, filled;

	do {
		memset(&req, 0, sizeof(req));
		req.count = room - done;
		req.first = done;
		req.entries = (uintptr_t)(out + done);
		if (ioctl(fd, MORSEL_IOC_MAPPINGS, &req))
			return NEG_ERRNO;
		if (req.count <= done)
			break;
		filled = req.count - done;
		if (filled > room - done)
			filled = room - done;
		if (filled > MORSEL_MAPPINGS_MAX)
			filled = MORSEL_MAPPINGS_MAX;
		done += filled;
	} while (done < room);
	return req.count > INT32_MAX ? INT32_MAX : (int)req.count;
}

int morsel_map(int fd, void *hint, int prot, int flags, void **addr,
	       size_t *len)
{
	struct morsel_stat st;
	int mflags = MAP_SHARED;
	void *p;
	int err;

	if (flags & ~MORSEL_MAP_FIXED)
		return -EINVAL;
	if (flags & MORSEL_MAP_FIXED)
		mflags |= MAP_FIXED_NOREPLACE;
	err = morsel_stat(fd, &st);
	if (err)
		return err;
	p = mmap(hint, st.extent, prot, mflags, fd, 0);
	if (p == MAP_FAILED)
		return NEG_ERRNO;
	*addr = p;
	*len = st.extent;
	return 0;
}

int morsel_map_run(const int *fds, unsigned int n, int prot, void **addr,
		   size_t *len)
{
	struct morsel_stat st;
	uint64_t extent = 0;
	unsigned int i;
	char *base, *p;
	int err;

	if (!n)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		err = morsel_stat(fds[i], &st);
		if (err)
			return err;
		if ((i && st.extent != extent) || st.bound)
			return -EINVAL;
		extent = st.extent;
	}
	if (extent * n / n != extent)
		return -ENOMEM;
	/* Reserve an aligned range, then replace it morsel by morsel. */
	p = mmap(NULL, extent * (n + 1), PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NEG_ERRNO;
	base = (char *)(((uintptr_t)p + extent - 1) & ~(uintptr_t)(extent - 1));
	if (base > p)
		munmap(p, base - p);
	munmap(base + extent * n, p + extent * (n + 1) - (base + extent * n));
	for (i = 0; i < n; i++) {
		if (mmap(base + extent * i, extent, prot, MAP_SHARED | MAP_FIXED,
			 fds[i], 0) == MAP_FAILED) {
			err = NEG_ERRNO;
			munmap(base, extent * n);
			return err;
		}
	}
	*addr = base;
	*len = extent * n;
	return 0;
}

int morsel_unmap(void *addr, size_t len)
{
	return munmap(addr, len) ? NEG_ERRNO : 0;
}

/* One byte of data plus room for one SCM_RIGHTS descriptor. */
struct fd_msg {
	char data;
	struct iovec iov;
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg;
};

static void fd_msg_init(struct fd_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->data = 'm';
	m->iov.iov_base = &m->data;
	m->iov.iov_len = 1;
	m->msg.msg_iov = &m->iov;
	m->msg.msg_iovlen = 1;
	m->msg.msg_control = m->u.buf;
	m->msg.msg_controllen = sizeof(m->u.buf);
}

int morsel_send_fd(int sock, int fd)
{
	struct fd_msg m;
	struct cmsghdr *c;

	fd_msg_init(&m);
	c = CMSG_FIRSTHDR(&m.msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m.msg, MSG_NOSIGNAL) == 1 ? 0 : NEG_ERRNO;
}

int morsel_recv_fd(int sock)
{
	struct fd_msg m;
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	fd_msg_init(&m);
	n = recvmsg(sock, &m.msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return NEG_ERRNO;
	c = CMSG_FIRSTHDR(&m.msg);
	if (n == 0 || !c || c->cmsg_level != SOL_SOCKET ||
	    c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return -EBADMSG;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}
