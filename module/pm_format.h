/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The on-device format of a persistent morselfs (mount -o pmem=DEV), shared
 * by the module, `morsel mkfs`/`morsel fsck` and the crash tests, which
 * build pm_check.c in user space.  docs/persistence.md explains it: the
 * crash model, the invariants and the order of every operation's stores.
 *
 * The device is an array of 4 KiB pages numbered from 0; a "device offset"
 * is a byte offset into it.  Page 0 is the super block; every other page is
 * free or reachable exactly once from it: through the inode table (a
 * morsel-shaped tree of inode records) and, from each allocated inode, its
 * morsel tree (tables and data pages; a directory's data pages hold its
 * entries).  Nothing records what is free: a mount walks the trees and
 * frees the complement.
 *
 * Every word is little-endian, 8 bytes and naturally aligned, and every
 * metadata update is a sequence of such words stored one at a time.  Tree
 * entries are x86-64 page-table entries with absolute physical addresses,
 * because the MMU walks them; the super block records the device's
 * physical address they were written for (@base), and a mount that finds
 * the device elsewhere rewrites them (relocation, restartable).
 */
#ifndef MORSEL_PM_FORMAT_H
#define MORSEL_PM_FORMAT_H

#include <linux/const.h>
#include <linux/types.h>

#define MPM_MAGIC		0x4d504c4553524f4dULL	/* "MORSELPM" */
#define MPM_VERSION		3	/* 1: no bad pages, 2: no 2 MiB leaves */
#define MPM_PAGE_SIZE		4096
#define MPM_ENTRIES		512	/* entries per table */
#define MPM_MAX_ORDER		4
#define MPM_MAX_DEVICES		8

/*
 * Entry bits (x86-64).  A and D are written by the MMU at any time and
 * are ignored by every check.
 */
#define MPM_E_PRESENT		_BITULL(0)
#define MPM_E_RW		_BITULL(1)
#define MPM_E_USER		_BITULL(2)
#define MPM_E_ACCESSED		_BITULL(5)
#define MPM_E_DIRTY		_BITULL(6)
#define MPM_E_HUGE		_BITULL(7)	/* PS: a 2 MiB leaf (format 3) */
#define MPM_E_SPECIAL		_BITULL(9)	/* Linux's _PAGE_SPECIAL */
#define MPM_E_NX		_BITULL(63)
#define MPM_E_ADDR		0x000ffffffffff000ULL
#define MPM_E_AD		(MPM_E_ACCESSED | MPM_E_DIRTY)
/*
 * Format 2: the leaf of a regular file's page that failed (a memory
 * error): not present, no address, no order bits.  The page itself is
 * listed in the bad-page tree (struct mpm_super.badtree) and never used
 * again; the offset reads as an error until it is punched or truncated.
 */
#define MPM_POISON		0x7800000000000600ULL
/* What the module writes, without A and D. */
#define MPM_E_TABLE		(MPM_E_PRESENT | MPM_E_RW | MPM_E_USER)
#define MPM_E_LEAF		(MPM_E_PRESENT | MPM_E_RW | MPM_E_USER | MPM_E_SPECIAL)
/*
 * Format 3: a 2 MiB leaf, in a PTE table's place (an entry of a level-1
 * table, which the MMU reads as a PMD entry) of a regular file's tree.  It
 * maps MPM_HUGE_PAGES device pages from a page number that is a multiple
 * of MPM_HUGE_PAGES, and the device's physical address must be 2 MiB
 * aligned (a mount refuses the device elsewhere: EOPNOTSUPP).  Each of
 * its pages is an ordinary data page otherwise; splitting it is one store
 * of a PTE table over the same pages.
 */
#define MPM_E_HUGE_LEAF		(MPM_E_LEAF | MPM_E_HUGE)
#define MPM_HUGE_PAGES		512ULL
#define MPM_HUGE_SIZE		(MPM_HUGE_PAGES * MPM_PAGE_SIZE)

/*
 * A morsel's root word (struct mpm_inode.root, struct mpm_super.itable) is
 * not walked by the MMU (a mapping copies it, with the mapping's rights, into
 * the process's table), so it carries the tree's order in bits 52-54: the
 * level of the table it points to, or 0 for an order-0 morsel's data page.
 * Raising or lowering the order is one store of this word.
 */
#define MPM_ROOT_ORDER_SHIFT	52
#define MPM_ROOT_ORDER_MASK	(7ULL << MPM_ROOT_ORDER_SHIFT)

/* Pages a level-@level entry spans (level 0: one page). */
static inline __u64 mpm_span_pages(unsigned int level)
{
	return 1ULL << (9 * level);
}

/* The order a size needs: the smallest whose extent holds it. */
static inline unsigned int mpm_order_for_size(__u64 size)
{
	unsigned int order = 0;

	while (order < MPM_MAX_ORDER && mpm_span_pages(order) * MPM_PAGE_SIZE < size)
		order++;
	return order;
}

static inline unsigned int mpm_root_order(__u64 root)
{
	return (root & MPM_ROOT_ORDER_MASK) >> MPM_ROOT_ORDER_SHIFT;
}

/*
 * One device of the file system: the format has room for a second (and
 * more) without a change; version 1 uses dev[0] only.
 */
struct mpm_device {
	__u64 uuid[2];
	__u64 base;		/* physical address of its page 0 */
	__u64 nr_pages;
};

/* Page 0. */
struct mpm_super {
	__u64 magic;		/* MPM_MAGIC, stored last by mkfs */
	__u64 version;		/* MPM_VERSION */
	__u64 nr_pages;		/* pages of the file system (dev[0]) */
	__u64 base;		/* physical address the entries point into */
	__u64 itable;		/* root word of the inode table */
	__u64 uuid[2];
	__u64 mkfs_time;	/* ns since the epoch */
	/* Relocation to another physical address (docs/persistence.md). */
	__u64 reloc_base;	/* the new base while relocating, else 0 */
	__u64 reloc_done;	/* entries rewritten, in walk order */
	__u64 reloc_old;	/* the next entry's value before its rewrite */
	__u64 nr_devices;	/* 1 */
	/*
	 * Format 2: root word of the bad-page tree, 0 if none.  A morsel-
	 * shaped tree whose data page at page offset p is device page p,
	 * which failed: it is used, never read, never written.  Recording a
	 * failed page of a file stores the tree's leaf first, then the file's
	 * MPM_POISON; a crash between leaves the file's leaf on a listed
	 * page, which recovery turns into MPM_POISON.
	 */
	__u64 badtree;
	/*
	 * Shared pools (issue 25): 0, or the leaf entry of the pool page
	 * (struct mpm_pool_slot[MPM_POOL_SLOTS]): the writer's claim and the
	 * readers' leases.  The word was reserved (always 0) before; a module
	 * from before it would take the page for a free one.
	 */
	__u64 pool;
	__u64 reserved[18];
	struct mpm_device dev[MPM_MAX_DEVICES];
};

/*
 * The inode table: a tree of order MPM_ITABLE_ORDER whose data pages hold
 * MPM_INODES_PER_PAGE records; inode number i is record i (0 is never
 * used, 1 is the root directory).  Its pages are populated as needed and
 * never freed.
 */
#define MPM_ITABLE_ORDER	3
#define MPM_INODE_SIZE		128
#define MPM_INODES_PER_PAGE	(MPM_PAGE_SIZE / MPM_INODE_SIZE)
#define MPM_ROOT_INO		1
#define MPM_MAX_INO		((1ULL << (12 + 9 * MPM_ITABLE_ORDER)) / MPM_INODE_SIZE - 1)

struct mpm_inode {
	__u64 mode;		/* S_IFMT and permission bits; 0: free */
	__u64 owner;		/* uid | gid << 32 */
	__u64 size;		/* bytes (a directory: its entry pages) */
	__u64 root;		/* root word, see MPM_ROOT_ORDER_SHIFT */
	__u64 min_order;	/* MORSEL_IOC_SET_MIN_ORDER */
	__u64 bound;		/* MORSEL_IOC_BIND address, or 0 */
	__u64 atime;		/* ns since the epoch */
	__u64 mtime;
	__u64 ctime;
	__u64 btime;
	__u64 rdev;		/* device nodes: new_encode_dev() */
	__u64 punch_end;	/* a punch in progress covers */
	__u64 punch_start;	/*   [punch_start & ~1, punch_end) if bit 0 */
	__u64 xattr;		/* 0, or a leaf entry: the extended attributes */
	__u64 flags;		/* chattr's flags, MPM_FLAGS_KNOWN (was reserved) */
	__u64 resv;		/* fallocate's reservation, 0 if none (was reserved) */
};

/*
 * @resv: the page range [start, end) that fallocate(FALLOC_FL_KEEP_SIZE)
 * reserved past the file's end, as start | end << 32 in pages (so a
 * reservation ends below 16 TiB).  Its pages are not on the device: a
 * mount holds back as many free pages as the range still lacks, and the
 * tree keeps the order the end needs.  The word was reserved (always 0)
 * before, so every older device reads as no reservation.
 */
#define MPM_RESV_MAX_PAGE	0x100000000ULL

static inline __u64 mpm_resv_start(__u64 resv)
{
	return (resv & 0xffffffffULL) * MPM_PAGE_SIZE;
}

static inline __u64 mpm_resv_end(__u64 resv)
{
	return (resv >> 32) * MPM_PAGE_SIZE;
}

/*
 * The flags of chattr(1) an inode may have, with FS_IOC_SETFLAGS's values:
 * immutable, append-only, no-dump and no-atime.  The word was reserved
 * (always 0) before, so every older device reads as no flags; a module
 * from before it ignores them.
 */
#define MPM_FL_IMMUTABLE	0x10ULL
#define MPM_FL_APPEND		0x20ULL
#define MPM_FL_NODUMP		0x40ULL
#define MPM_FL_NOATIME		0x80ULL
#define MPM_FLAGS_KNOWN		(MPM_FL_IMMUTABLE | MPM_FL_APPEND | \
				 MPM_FL_NODUMP | MPM_FL_NOATIME)
/*
 * Format 3: a regular file's own huge-page mode (MORSEL_IOC_SET_HUGE) in
 * bits 32-34 of @flags: 0 follows the instance's huge= (every older
 * device), else MORSEL_HUGE_NEVER..MORSEL_HUGE_ADVISE plus one.
 */
#define MPM_FL_HUGE_SHIFT	32
#define MPM_FL_HUGE_MASK	(7ULL << MPM_FL_HUGE_SHIFT)
#define MPM_FL_HUGE_MAX		4ULL	/* MORSEL_HUGE_ADVISE + 1 */
/*
 * Shared pools: a regular file sealed by MORSEL_IOC_SEAL (one store of
 * @flags, with MPM_FL_IMMUTABLE, after every store of its tree): only
 * sealed files are visible to reader mounts, and a sealed file never
 * changes again.  MPM_FL_DYING: a sealed file deleted while readers held
 * leases on it, stored before the publisher reads the leases; its record
 * and tree stay (an orphan a mount keeps while a lease names it) until
 * no live reader holds a lease.
 */
#define MPM_FL_SEALED		_BITULL(36)
#define MPM_FL_DYING		_BITULL(37)

/*
 * The pool page: MPM_POOL_SLOTS slots of 512 bytes.  Slot 0 is the
 * writer's claim, the others one reader mount each.  @owner is a random
 * non-zero number the mount chose (0: free), @beat a counter its owner
 * advances four times per lease period; a slot whose counter stops for a
 * lease period belongs to a dead host.  A reader's @lease words hold the
 * numbers of the inodes it has open (0: free), each stored before the
 * reader checks the file is still sealed and not dying; docs/design.md
 * gives the rules.
 */
#define MPM_POOL_SLOTS		8
#define MPM_POOL_LEASES		60
#define MPM_POOL_MAGIC		0x4c4f4f504c45534dULL	/* "MSELPOOL", slot 0 */

struct mpm_pool_slot {
	__u64 owner;
	__u64 beat;
	__u64 magic;		/* slot 0: MPM_POOL_MAGIC, stored before @pool */
	__u64 reserved;
	__u64 lease[MPM_POOL_LEASES];
};

/*
 * Extended attributes: an inode's @xattr is 0 or a leaf entry (as for a
 * data page) of one page holding all of them, packed: per attribute a
 * struct mpm_xattr, the full name (its prefix included, no NUL) and the
 * value, the next one at the next 8-byte boundary; a header with
 * @name_len 0, or the end of the page, ends the list.  A change writes a
 * whole new page and commits it with one store of @xattr, then frees the
 * old page (unreachable after the commit: a mount frees it if a crash
 * came first).  So an inode's attributes take at most one page, as on
 * ext4 without ea_inode.
 */
struct mpm_xattr {
	__u16 name_len;		/* 1..MPM_XATTR_NAME_MAX */
	__u16 reserved;
	__u32 value_len;
};

#define MPM_XATTR_NAME_MAX	255
#define MPM_XATTR_SPACE(name_len, value_len) \
	((sizeof(struct mpm_xattr) + (name_len) + (value_len) + 7) & ~7ULL)

/*
 * A directory's data pages hold MPM_DIRENTS_PER_PAGE entries each (the
 * last 64 bytes of a page are unused).  @word commits an entry: 0 is a
 * free slot; otherwise it packs the inode number, the name's length and
 * the file type (DT_*), and is stored after the name and the two rename
 * words.  A live entry whose @replaces or @displaces is not 0 is the new
 * name of an unfinished rename: the entries at those device offsets are
 * cleared by whoever finds it (the rename itself, or the next mount).
 */
#define MPM_DIRENT_SIZE		288
#define MPM_DIRENTS_PER_PAGE	14
#define MPM_NAME_MAX		255
#define MPM_DE_INO_MASK		((1ULL << 40) - 1)
#define MPM_DE_LEN_SHIFT	40
#define MPM_DE_TYPE_SHIFT	48

struct mpm_dirent {
	__u64 word;		/* ino | len << 40 | dtype << 48; 0: free */
	__u64 replaces;		/* device offset of the old name's entry */
	__u64 displaces;	/* device offset of the overwritten entry */
	char name[MPM_DIRENT_SIZE - 24];
};

static inline __u64 mpm_de_word(__u64 ino, unsigned int len, unsigned int dtype)
{
	return ino | (__u64)len << MPM_DE_LEN_SHIFT | (__u64)dtype << MPM_DE_TYPE_SHIFT;
}

static inline __u64 mpm_de_ino(__u64 word)
{
	return word & MPM_DE_INO_MASK;
}

static inline unsigned int mpm_de_len(__u64 word)
{
	return (word >> MPM_DE_LEN_SHIFT) & 0xff;
}

static inline unsigned int mpm_de_type(__u64 word)
{
	return (word >> MPM_DE_TYPE_SHIFT) & 0xf;
}

/*
 * The store log (module/pm_log.c, read by tests/pm_crash): a record, then
 * @len bytes: a store's 8-byte value, or bytes written at @offset.
 */
struct mpm_log_rec {
	__u64 offset;		/* device offset */
	__u32 len;
	__u32 kind;		/* MPM_LOG_* */
};

#define MPM_LOG_STORE		1
#define MPM_LOG_BYTES		2
#define MPM_LOG_MARK		3	/* an operation ends here */

#endif /* MORSEL_PM_FORMAT_H */
