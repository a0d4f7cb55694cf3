/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libmorsel: user-space access to morselfs.
 *
 * Every function returns 0 (or a file descriptor) on success and -errno on
 * failure; errno is left as the failing system call set it.
 */
#ifndef LIBMORSEL_H
#define LIBMORSEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/morsel.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes covered by an order: 4096 << (9 * order); 0 for a bad order. */
uint64_t morsel_order_extent(unsigned int order);
/* Smallest order whose extent is >= size, or -EFBIG. */
int morsel_order_for_size(uint64_t size);

/* Create a new morsel file of @size bytes (O_EXCL); returns an O_RDWR fd. */
int morsel_create(const char *path, uint64_t size, mode_t mode);
/*
 * Create an unnamed morsel of @size bytes in the morselfs directory @dirfd
 * (MORSEL_IOC_CREATE: one call, no path, never linked; it goes with its
 * last descriptor, as a memfd); returns an O_RDWR fd.
 */
int morsel_create_unnamed(int dirfd, uint64_t size, mode_t mode);
/* Open an existing morsel; @flags as for open(2) (O_RDONLY or O_RDWR). */
int morsel_open(const char *path, int flags);
/*
 * Set the size.  The order rises with it when needed, even while mapped
 * (existing mappings keep their extent); a smaller size frees the pages
 * past it, and the order falls only when nothing maps the morsel.
 */
int morsel_resize(int fd, uint64_t size);
/*
 * Ask for room in advance: the morsel takes at least @order now (mapped or
 * not) and never falls below it, so a mapping of the whole extent made now
 * sees the file grow up to it.  -EINVAL past the largest order (3 with
 * 4-level paging, else 4), -EBUSY if bound to an address that the larger
 * extent does not fit, -EBADF on a read-only fd.
 */
int morsel_set_min_order(int fd, unsigned int order);

/* morsel_map() flags */
#define MORSEL_MAP_FIXED	0x1	/* map exactly at @hint (extent aligned) */

/*
 * Map the whole extent of the morsel behind @fd, MAP_SHARED, at an
 * extent-aligned address (@hint if given and free).  @prot is PROT_READ,
 * PROT_READ|PROT_WRITE, optionally with PROT_EXEC.  On success *@addr and
 * *@len (the extent) describe the mapping.
 */
int morsel_map(int fd, void *hint, int prot, int flags, void **addr,
	       size_t *len);
int morsel_unmap(void *addr, size_t len);

/*
 * Map @n morsels of one order back to back: one contiguous range of
 * @n * extent bytes, aligned to the extent, at *@addr on return.  Each
 * morsel is still mounted by its own single entry.  -EINVAL if the orders
 * differ or a morsel is bound to an address.
 */
int morsel_map_run(const int *fds, unsigned int n, int prot, void **addr,
		   size_t *len);

/* Order, extent, size, populated pages, tables per level, mappings, bound. */
int morsel_stat(int fd, struct morsel_stat *st);

/*
 * Populate [@offset, @offset + @length) in one call (page aligned, inside
 * the file size), so that touching it takes no page fault.
 */
int morsel_populate(int fd, uint64_t offset, uint64_t length);
/*
 * Free the pages of [@offset, @offset + @length) (page aligned, inside the
 * file size); every process that maps the morsel reads zeros there after.
 */
int morsel_evict(int fd, uint64_t offset, uint64_t length);
/*
 * 2 MiB leaves (new in 1.2): populate whole aligned 2 MiB holes of the
 * range with one 2 MiB page each where the file's huge-page mode lets a
 * caller ask; collapse every full aligned 2 MiB of the range into one
 * (-EBUSY while a shared mapping mounts it, -EAGAIN where one had a
 * hole); set the file's own mode (MORSEL_HUGE_NEVER, _ALWAYS,
 * _WITHIN_SIZE, _ADVISE, or _INHERIT to follow the mount's huge=).
 */
int morsel_populate_huge(int fd, uint64_t offset, uint64_t length);
int morsel_collapse(int fd, uint64_t offset, uint64_t length);
int morsel_set_huge(int fd, unsigned int mode);
/*
 * Copy-on-write clones (new in 1.3): @dst_fd's file becomes a copy of
 * @src_fd's (FICLONE), or [@dst_offset, + @length) of it one of
 * [@src_offset, + @length) of @src_fd's (FICLONERANGE; offsets page
 * aligned, @length too unless it reaches the source's end, 0 up to
 * there).  Both share their pages until either writes one; the first
 * write gives the writer its own copy.  -EXDEV across instances,
 * -EOPNOTSUPP on a persistent one, -EINVAL for unaligned or overlapping
 * ranges of one file.
 */
int morsel_clone(int src_fd, int dst_fd);
int morsel_clone_range(int src_fd, uint64_t src_offset, int dst_fd,
		       uint64_t dst_offset, uint64_t length);
/*
 * A default memory manager for this task (new in 1.3, kernel patch 13):
 * from now on its anonymous memory (mmap(MAP_ANONYMOUS); brk fails, so
 * malloc takes its heap from mmap) comes from unnamed morsels of the
 * morselfs instance holding directory @dir, private memory staying
 * private at fork; children and exec'd programs inherit it (a setuid
 * exec drops it).  NULL: ordinary anonymous memory again, for memory
 * mapped from now on.  -EOPNOTSUPP: not a volatile morselfs (or a kernel
 * without the patch: -EINVAL), -EACCES without write and search rights
 * in @dir.  morsel_memory_manager(): 1 if one is set, 0 if not.
 */
#ifndef PR_SET_MEMORY_MANAGER
#define PR_SET_MEMORY_MANAGER	0x4d4d0001
#define PR_GET_MEMORY_MANAGER	0x4d4d0002
#endif
int morsel_set_memory_manager(const char *dir);
int morsel_memory_manager(void);
/*
 * Placement on NUMA nodes (new in 1.4): the file's own policy
 * (MORSEL_MPOL_INHERIT to follow the mount's mpol=, _DEFAULT for the
 * allocating task's own, _PREFERRED, _BIND, _INTERLEAVE or _LOCAL; bit N
 * of @nodes for node N) decides where its later pages go; -EINVAL for a
 * bad mode or a node without memory, -EOPNOTSUPP on a persistent
 * instance.  morsel_get_mpol() reads the file's own (INHERIT if none),
 * and morsel_node_pages() counts the populated pages of [@offset, +
 * @length) (@length 0: to the end of the file) on each node into
 * @pages[MORSEL_MAX_NODES].  morsel_migrate() moves the range's pages to
 * @node while any number of processes map the file, and fills @res (if
 * not NULL) with what moved and what stayed (pinned, shared with a clone
 * or under a 1 GiB page, no memory on the node).
 */
int morsel_set_mpol(int fd, unsigned int mode, uint64_t nodes);
int morsel_migrate(int fd, uint64_t offset, uint64_t length, unsigned int node,
		   struct morsel_migrate *res);
/* Only the pages whose bit in @bitmap is set (as morsel_accessed fills it). */
int morsel_migrate_bitmap(int fd, uint64_t offset, uint64_t length,
			  const uint64_t *bitmap, unsigned int node,
			  struct morsel_migrate *res);
/*
 * Hot and cold (new in 1.4): which populated pages of [@offset, +
 * @length) were accessed through shared mappings, by any process, since
 * populated or last cleared: bit i of @bitmap (NULL: counts only; (pages
 * + 63) / 64 words) for page i of the range; @clear clears the bits read.
 * Fills *@accessed and *@populated (either may be NULL).
 */
int morsel_accessed(int fd, uint64_t offset, uint64_t length,
		    uint64_t *bitmap, int clear, uint64_t *accessed,
		    uint64_t *populated);
/*
 * Read the file @src (open for reading, not on morselfs) from
 * @src_offset into [@offset, + @length) of the morsel, as a pread into a
 * mapping of it would, without zeroing the pages it adds first (new in
 * 1.5; MORSEL_IOC_FILL).  With @src opened O_DIRECT the device writes the
 * pages itself.  *@filled (may be NULL): the bytes read, fewer at @src's
 * end.  Offsets and length page aligned.
 */
int morsel_fill(int fd, int src, uint64_t src_offset, uint64_t offset,
		uint64_t length, uint64_t *filled);
/*
 * Make the file's contents final (new in 1.6; MORSEL_IOC_SEAL): its holes
 * populated, then no write, truncate, fallocate or writable shared
 * mapping ever again (EPERM); EBUSY while such a mapping exists.  A
 * shared pool's readers see only sealed files.
 */
int morsel_seal(int fd);
int morsel_get_mpol(int fd, unsigned int *mode, uint64_t *nodes);
int morsel_node_pages(int fd, uint64_t offset, uint64_t length,
		      uint64_t *pages);
/* Bind the morsel to @addr: every later mapping lands there. */
int morsel_bind(int fd, uint64_t addr);
/*
 * Describe up to @room current mappings in @out; returns the number of
 * mappings (which may be more than @room) or -errno.  Mappings of other
 * processes are flagged MORSEL_MAPPING_HIDDEN unless the caller has
 * CAP_SYS_PTRACE.
 */
int morsel_mappings(int fd, struct morsel_mapping *out, unsigned int room);

/* Pass a morsel fd over a connected AF_UNIX socket. */
int morsel_send_fd(int sock, int fd);
/* Receive one; returns the new fd (O_CLOEXEC) or -errno. */
int morsel_recv_fd(int sock);

/*
 * The file cache (morsel-cached, case study 1).  A client passes an fd it
 * opened for reading (proof that it may read the file) over the daemon's
 * AF_UNIX socket and gets back a read-only fd of a morsel holding the
 * file's bytes from offset 0: one morsel per file, of the smallest order
 * that holds it.  @socket_path NULL means $MORSEL_CACHED_SOCKET, else
 * MORSEL_CACHED_SOCKET.
 */
#define MORSEL_CACHED_SOCKET	"/run/morsel-cached.sock"

struct morsel_cache_info {
	uint64_t size;		/* file size: the morsel's bytes [0, size) */
	uint64_t extent;	/* bytes a mapping of the morsel covers */
	uint32_t order;
	uint32_t flags;		/* MORSEL_CACHE_HIT: no load was needed */
};
#define MORSEL_CACHE_HIT	0x1

struct morsel_cache_stats {
	uint64_t entries;	/* cached files */
	uint64_t bytes;		/* their memory: pages and tables */
	uint64_t budget;	/* the daemon's --budget */
	uint64_t hits, loads, evictions, refusals;
};

/* Connect; returns the socket (O_CLOEXEC) or -errno. */
int morsel_cache_connect(const char *socket_path);
/*
 * Ask for the file open as @fd; returns the morsel fd (O_RDONLY, O_CLOEXEC)
 * and fills @info (may be NULL), or -errno: EACCES (@fd not open for
 * reading), EINVAL (not a regular file, empty, below the daemon's minimum
 * size, sparse, or on morselfs), EFBIG (larger than the largest morsel),
 * ENOSPC (over the budget and nothing can be evicted), EDQUOT (over the
 * caller's uid's share), EMEDIUMTYPE (a file system the daemon refuses:
 * FUSE, or one named by --refuse-fs), ESTALE (the file changed while it
 * was loaded), EIO (a short read), ECONNRESET or EPIPE (the daemon went
 * away).
 */
int morsel_cache_get(int sock, int fd, struct morsel_cache_info *info);
/*
 * All in one call: connect, get, map the morsel read-only (MAP_SHARED, one
 * entry), close both fds.  *@addr is the file's first byte, *@len its size.
 */
int morsel_cache_map(const char *socket_path, int fd, void **addr,
		     size_t *len);
/*
 * The same for @path, opened O_RDONLY and closed again: that close drops
 * the process's POSIX record locks on the file (use morsel_cache_map with
 * a descriptor kept open to keep them).
 */
int morsel_cache_map_path(const char *socket_path, const char *path,
			  void **addr, size_t *len);
/* Unmap what morsel_cache_map() returned (the whole extent). */
int morsel_cache_unmap(void *addr, size_t len);
int morsel_cache_stats(int sock, struct morsel_cache_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* LIBMORSEL_H */
