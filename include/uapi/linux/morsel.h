/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * morselfs: explicit virtual-memory objects ("morsels").
 *
 * Every regular file of a morselfs mount is a morsel: a naturally aligned
 * page-table subtree of order N covering 4 KiB * 512^N bytes (the extent),
 * populated sparsely with 4 KiB pages.  The order follows the file size: it
 * is the smallest N whose extent is >= st_size.
 */
#ifndef _UAPI_LINUX_MORSEL_H
#define _UAPI_LINUX_MORSEL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define MORSELFS_MAGIC		0x6d6f7273	/* "mors" */

#define MORSEL_MAX_ORDER	4
/* Levels of page tables a morsel can own: PTE, PMD, PUD and P4D tables. */
#define MORSEL_TABLE_LEVELS	4

/**
 * struct morsel_stat - argument of MORSEL_IOC_STAT
 * @flags:    in: must be 0.
 * @order:    out: current order (0..MORSEL_MAX_ORDER).
 * @extent:   out: bytes covered by the order, 4096 << (9 * @order).
 * @size:     out: file size (st_size).
 * @pages:    out: populated 4 KiB data pages (those under 2 MiB leaves
 *            included).
 * @tables:   out: page-table pages per level; [0] PTE tables, [1] PMD
 *            tables, [2] PUD tables, [3] P4D tables.
 * @mappings: out: number of VMAs that currently map the morsel with
 *            MAP_SHARED (mounted mappings; MAP_PRIVATE ones are not counted);
 *            other processes' only for a caller that owns the file, could
 *            open it for writing, has it open for writing or has
 *            CAP_SYS_PTRACE (the rule of mincore(2)), else the caller's own.
 * @bound:    out: address the morsel is bound to (MORSEL_IOC_BIND), or 0.
 * @min_order: out: the order set by MORSEL_IOC_SET_MIN_ORDER (0 if none).
 * @huge:     out: 2 MiB leaves (each 512 of @pages).
 * @huge_mode: out: the MORSEL_HUGE_* mode in force for the file (its own,
 *            else the instance's huge= option).
 * @huge1g:   out: 1 GiB leaves (each 262144 of @pages; reserved[0] before
 *            them, which such a kernel left 0).
 * @reserved: in: must be 0; out: 0.
 */
struct morsel_stat {
	__u64 flags;
	__u64 order;
	__u64 extent;
	__u64 size;
	__u64 pages;
	__u64 tables[MORSEL_TABLE_LEVELS];
	__u64 mappings;
	__u64 bound;
	__u64 min_order;
	__u64 huge;
	__u64 huge_mode;
	__u64 huge1g;
	__u64 reserved[3];
};

/**
 * struct morsel_range - argument of MORSEL_IOC_POPULATE and MORSEL_IOC_EVICT
 * @offset:   in: first byte, a multiple of 4096.
 * @length:   in: bytes, a non-zero multiple of 4096; @offset + @length must
 *            not pass the file size rounded up to 4096.
 * @flags:    in: 0, or for POPULATE MORSEL_POPULATE_HUGE.
 * @reserved: in: must be 0.
 *
 * POPULATE allocates every missing page (and table) of the range in one
 * call; EVICT frees the range's pages, so it reads as zeros afterwards in
 * every process that maps the morsel; COLLAPSE turns every fully
 * populated, aligned 2 MiB of the range into one 2 MiB leaf.  All need a
 * file opened for writing.
 */
struct morsel_range {
	__u64 offset;
	__u64 length;
	__u64 flags;
	__u64 reserved[5];
};

/*
 * struct morsel_range.flags for POPULATE: fill whole aligned 2 MiB holes
 * with 2 MiB leaves where the file's mode allows asking (advise,
 * within_size, always), as MADV_HUGEPAGE does for a mapping's faults.
 */
#define MORSEL_POPULATE_HUGE	(1ULL << 0)

/*
 * Huge-page modes: the huge= mount option (by name) and MORSEL_IOC_SET_HUGE
 * (by number), with tmpfs's meanings.  INHERIT: the file follows huge=.
 */
#define MORSEL_HUGE_NEVER	0
#define MORSEL_HUGE_ALWAYS	1
#define MORSEL_HUGE_WITHIN_SIZE	2
#define MORSEL_HUGE_ADVISE	3
#define MORSEL_HUGE_INHERIT	4

/**
 * struct morsel_huge - argument of MORSEL_IOC_SET_HUGE
 * @mode:     in: a MORSEL_HUGE_* mode for this file's later allocations.
 * @flags:    in: must be 0.
 * @reserved: in: must be 0.
 *
 * Needs a file opened for writing.  Leaves already there stay as they are.
 */
struct morsel_huge {
	__u64 mode;
	__u64 flags;
	__u64 reserved[6];
};

/**
 * struct morsel_bind - argument of MORSEL_IOC_BIND
 * @addr:     in: the address every mapping of the morsel will use; non-zero,
 *            aligned to the extent, and the extent must fit in the user
 *            address space.
 * @flags:    in: must be 0.
 * @reserved: in: must be 0.
 *
 * Binding is for the life of the morsel and is refused while the morsel is
 * mapped.  Binding again to the same address is a no-op.
 */
struct morsel_bind {
	__u64 addr;
	__u64 flags;
	__u64 reserved[6];
};

/* Rights of a mapping (struct morsel_mapping.prot). */
#define MORSEL_PROT_READ	0x1
#define MORSEL_PROT_WRITE	0x2
#define MORSEL_PROT_EXEC	0x4

/* struct morsel_mapping.flags: */
/* The mapping's mount entry is present now. */
#define MORSEL_MAPPING_MOUNTED	0x1
/*
 * The mapping belongs to another process and the caller lacks
 * CAP_SYS_PTRACE: every other field is 0.
 */
#define MORSEL_MAPPING_HIDDEN	0x2

/* Entries MORSEL_IOC_MAPPINGS fills at most per call. */
#define MORSEL_MAPPINGS_MAX	256

/**
 * struct morsel_mapping - one current mapping, filled by MORSEL_IOC_MAPPINGS
 * @addr:  start address in its process.
 * @prot:  MORSEL_PROT_* rights of the mapping (the mounting entry's rights).
 * @pid:   the process (thread-group id, in the caller's pid namespace)
 *         that owns the address space of the mapping; 0 if it has exited.
 * @flags: MORSEL_MAPPING_MOUNTED, MORSEL_MAPPING_HIDDEN.
 *
 * Only the caller's own mappings are described unless it has
 * CAP_SYS_PTRACE; others are counted and flagged MORSEL_MAPPING_HIDDEN
 * if the caller owns the file, could open it for writing or has it open
 * for writing (the rule of mincore(2)), and left out otherwise.
 */
struct morsel_mapping {
	__u64 addr;
	__u64 prot;
	__u64 pid;
	__u64 flags;
};

/**
 * struct morsel_mappings - argument of MORSEL_IOC_MAPPINGS
 * @flags:    in: must be 0.
 * @count:    in: room in @entries; out: number of current mappings (may be
 *            larger than the room; only the room is filled, and at most
 *            MORSEL_MAPPINGS_MAX entries per call).
 * @entries:  in: user pointer to an array of struct morsel_mapping.
 * @first:    in: index of the first mapping to describe (to page through
 *            long lists).
 * @reserved: in: must be 0.
 */
struct morsel_mappings {
	__u64 flags;
	__u64 count;
	__u64 entries;
	__u64 first;
	__u64 reserved[4];
};

/**
 * struct morsel_min_order - argument of MORSEL_IOC_SET_MIN_ORDER
 * @order:    in: the smallest order the morsel may have from now on,
 *            0..MORSEL_MAX_ORDER (at most 3 with 4-level paging).
 * @flags:    in: must be 0.
 * @reserved: in: must be 0.
 *
 * Asks for room in advance: the morsel takes at least this order at once
 * (even while mapped; existing mappings keep their extent) and never
 * drops below it, so a mapping of the whole extent made now keeps seeing
 * the file as it grows up to that extent.  Needs a file opened for
 * writing.
 */
struct morsel_min_order {
	__u64 order;
	__u64 flags;
	__u64 reserved[6];
};

/**
 * struct morsel_create - argument of MORSEL_IOC_CREATE
 * @size:     in: the new morsel's size in bytes (0 is allowed).
 * @mode:     in: its permission bits (at most 07777), less the umask.
 * @flags:    in: 0 or MORSEL_CREATE_CLOEXEC.
 * @reserved: in: must be 0.
 *
 * Given to a directory of a morselfs instance (any descriptor of it, also
 * read-only), creates an unnamed morsel there and returns a new
 * descriptor of it, open for reading and writing: O_TMPFILE and ftruncate
 * in one call, as memfd_create gives a tmpfs file.  The morsel never gets
 * a name (linkat refuses it) and goes with its last reference.  Needs
 * write and search permission on the directory.
 */
struct morsel_create {
	__u64 size;
	__u64 mode;
	__u64 flags;
	__u64 reserved[5];
};

/* struct morsel_create.flags: the new descriptor is close-on-exec. */
#define MORSEL_CREATE_CLOEXEC	(1ULL << 0)

/*
 * Placement policies (mpol.c): the mpol= mount option by name, with
 * tmpfs's syntax, and MORSEL_IOC_SET_MPOL by number.  A policy decides on
 * which NUMA node a file's data pages are allocated (tables stay on the
 * allocating CPU's node).
 * INHERIT:    the file follows the instance's mpol= (SET_MPOL only).
 * DEFAULT:    the allocating task's own policy (set_mempolicy(2)).
 * PREFERRED:  the one node in @nodes, others when it has no free page.
 * BIND:       only the nodes in @nodes, nearest to the allocating CPU
 *             first.
 * INTERLEAVE: the nodes in @nodes in turn, one leaf (4 KiB or 2 MiB)
 *             each; no nodes: every node with memory.
 * LOCAL:      the allocating CPU's node, others when it has none free.
 */
#define MORSEL_MPOL_INHERIT	0
#define MORSEL_MPOL_DEFAULT	1
#define MORSEL_MPOL_PREFERRED	2
#define MORSEL_MPOL_BIND	3
#define MORSEL_MPOL_INTERLEAVE	4
#define MORSEL_MPOL_LOCAL	5

/* Nodes a struct morsel_mpol and struct morsel_node_pages can name. */
#define MORSEL_MAX_NODES	64

/**
 * struct morsel_mpol - argument of MORSEL_IOC_SET_MPOL and GET_MPOL
 * @mode:     a MORSEL_MPOL_* mode: in for SET_MPOL; out for GET_MPOL (the
 *            file's own, INHERIT when it has none).
 * @nodes:    bit N for node N: one node for PREFERRED, at least one for
 *            BIND, any for INTERLEAVE (none: every node with memory), none
 *            for the others.  Every node must have memory.
 * @flags:    in: must be 0.
 * @reserved: in: must be 0; out: 0.
 *
 * SET_MPOL needs a file opened for writing; it decides where the file's
 * later allocations go (faults, write, populate, fallocate).  Pages
 * already there stay where they are.
 */
struct morsel_mpol {
	__u64 mode;
	__u64 nodes;
	__u64 flags;
	__u64 reserved[5];
};

/**
 * struct morsel_node_pages - argument of MORSEL_IOC_NODE_PAGES
 * @offset:   in: start of the range, page aligned.
 * @length:   in: its length, page aligned; 0: to the end of the file.
 * @flags:    in: must be 0.
 * @reserved: in: must be 0; out: 0.
 * @pages:    out: populated 4 KiB data pages of the range on each node
 *            (a page a clone shares counts in each file that holds it).
 */
struct morsel_node_pages {
	__u64 offset;
	__u64 length;
	__u64 flags;
	__u64 reserved[5];
	__u64 pages[MORSEL_MAX_NODES];
};

/**
 * struct morsel_migrate - argument of MORSEL_IOC_MIGRATE
 * @offset:   in: start of the range, page aligned.
 * @length:   in: its length, page aligned; 0: to the end of the file.  A
 *            2 MiB page the range touches moves whole.
 * @node:     in: the node to move the range's pages to (it must have
 *            memory).
 * @flags:    in: must be 0.
 * @moved:    out: pages that were elsewhere and are now on @node.
 * @pinned:   out: pages left where they are because someone else held
 *            them (a GUP pin: O_DIRECT, io_uring buffers, vmsplice).
 * @shared:   out: pages left because a clone shares them, or under a
 *            1 GiB leaf (whose block is the huge1g= reserve's).
 * @failed:   out: pages left because @node had no free page.
 * @bitmap:   in: 0, or a user buffer of (pages + 63) / 64 __u64 words as
 *            MORSEL_IOC_ACCESSED fills: only the range's pages whose bit
 *            is set move (a 2 MiB page if any of its bits is).  Then
 *            @length must be given, at most MORSEL_MIGRATE_BITMAP_MAX.
 * @reserved: in: must be 0; out: 0.
 *
 * Every process that maps the file sees the new pages at once: each
 * page's one leaf changes, and all mappers are flushed once per batch.
 */
struct morsel_migrate {
	__u64 offset;
	__u64 length;
	__u64 node;
	__u64 flags;
	__u64 moved;
	__u64 pinned;
	__u64 shared;
	__u64 failed;
	__u64 bitmap;
	__u64 reserved[3];
};

/* The longest range MORSEL_IOC_MIGRATE takes with a bitmap (64 GiB). */
#define MORSEL_MIGRATE_BITMAP_MAX	(1ULL << 36)

/**
 * struct morsel_accessed - argument of MORSEL_IOC_ACCESSED
 * @offset:    in: start of the range, page aligned.
 * @length:    in: its length, page aligned; 0: to the end of the file.
 * @bitmap:    in: a user buffer of (pages + 63) / 64 __u64 words for the
 *             range's pages, or 0 for the counts alone; out: bit i % 64 of
 *             word i / 64 set when page i of the range is populated and
 *             was accessed through a shared mapping (its leaf's accessed
 *             bit, which the MMU sets for every process that mounts the
 *             file) since it was populated or the bit was last cleared.
 * @flags:     in: MORSEL_ACCESSED_CLEAR clears the bits it read, and then
 *             flushes every mapper once per 32 MiB, so that the next
 *             access sets them again.
 * @accessed:  out: pages of the range whose bit was set.
 * @populated: out: populated pages of the range.
 * @reserved:  in: must be 0; out: 0.
 *
 * A 2 MiB or 1 GiB leaf has one bit for all its pages.  read(2),
 * write(2) and page-by-page mappings (private, or shared at an offset)
 * do not set it.
 */
struct morsel_accessed {
	__u64 offset;
	__u64 length;
	__u64 bitmap;
	__u64 flags;
	__u64 accessed;
	__u64 populated;
	__u64 reserved[4];
};

#define MORSEL_ACCESSED_CLEAR	(1ULL << 0)

#define MORSEL_IOC_MAGIC	0xB9
#define MORSEL_IOC_STAT		_IOWR(MORSEL_IOC_MAGIC, 0x01, struct morsel_stat)
#define MORSEL_IOC_POPULATE	_IOW(MORSEL_IOC_MAGIC, 0x02, struct morsel_range)
#define MORSEL_IOC_EVICT	_IOW(MORSEL_IOC_MAGIC, 0x03, struct morsel_range)
#define MORSEL_IOC_BIND		_IOW(MORSEL_IOC_MAGIC, 0x04, struct morsel_bind)
#define MORSEL_IOC_MAPPINGS	_IOWR(MORSEL_IOC_MAGIC, 0x05, struct morsel_mappings)
#define MORSEL_IOC_SET_MIN_ORDER _IOW(MORSEL_IOC_MAGIC, 0x06, struct morsel_min_order)
#define MORSEL_IOC_CREATE	_IOW(MORSEL_IOC_MAGIC, 0x07, struct morsel_create)
#define MORSEL_IOC_SET_HUGE	_IOW(MORSEL_IOC_MAGIC, 0x08, struct morsel_huge)
#define MORSEL_IOC_COLLAPSE	_IOW(MORSEL_IOC_MAGIC, 0x09, struct morsel_range)
#define MORSEL_IOC_SET_MPOL	_IOW(MORSEL_IOC_MAGIC, 0x0a, struct morsel_mpol)
#define MORSEL_IOC_GET_MPOL	_IOWR(MORSEL_IOC_MAGIC, 0x0b, struct morsel_mpol)
#define MORSEL_IOC_NODE_PAGES	_IOWR(MORSEL_IOC_MAGIC, 0x0c, struct morsel_node_pages)
#define MORSEL_IOC_MIGRATE	_IOWR(MORSEL_IOC_MAGIC, 0x0d, struct morsel_migrate)
#define MORSEL_IOC_ACCESSED	_IOWR(MORSEL_IOC_MAGIC, 0x0e, struct morsel_accessed)

/**
 * struct morsel_fill - argument of MORSEL_IOC_FILL
 * @fd:         in: a regular file open for reading, not on morselfs.
 * @flags:      in: must be 0.
 * @src_offset: in: where to read @fd from, a multiple of 4096.
 * @offset:     in: the first byte of the morsel, a multiple of 4096.
 * @length:     in: bytes, a non-zero multiple of 4096; @offset + @length
 *              must not pass the file size rounded up to 4096.
 * @filled:     in: must be 0; out: the bytes read, fewer than @length at
 *              @fd's end (the rest of the range is left as it was) or
 *              after an error.
 * @reserved:   in: must be 0.
 *
 * FILL reads @fd into the range as a pread(2) of @fd into a mapping of the
 * range would, and fills the range's holes with pages that are never
 * zeroed first: the read overwrites them, and what it does not reach is
 * zeroed before anyone can see the page.  With @fd opened O_DIRECT the
 * device writes the morsel's pages itself.  Needs the morsel open for
 * writing; a medium that cannot give unzeroed pages (a persistent
 * instance) refuses it (EOPNOTSUPP).
 */
struct morsel_fill {
	__s32 fd;
	__u32 flags;
	__u64 src_offset;
	__u64 offset;
	__u64 length;
	__u64 filled;
	__u64 reserved[3];
};

#define MORSEL_IOC_FILL		_IOWR(MORSEL_IOC_MAGIC, 0x0f, struct morsel_fill)

/*
 * MORSEL_IOC_SEAL (no argument): make the file's contents final, for good.
 * Populates every page below the size (a hole would have to be filled
 * later, by whoever reads it), then its data, size and tree never change
 * again: write, truncate, fallocate, clones into it and every ioctl that
 * changes it fail with EPERM, and so does a new shared mapping that may
 * write (a descriptor opened for writing before the seal cannot map it
 * shared at all: open it again read-only).  Fails with EBUSY while such a
 * mapping exists.  Needs the file open for writing; sealing a sealed file
 * succeeds.  The name can still be removed.  On a persistent instance the
 * seal is one store, after every store of the contents: a shared pool's
 * readers see only sealed files (docs/design.md, issue 25).
 */
#define MORSEL_IOC_SEAL		_IO(MORSEL_IOC_MAGIC, 0x10)

#endif /* _UAPI_LINUX_MORSEL_H */
