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

#ifdef __cplusplus
}
#endif
#endif /* LIBMORSEL_H */
