/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checking and recovering a persistent morselfs (pm_check.c): the one
 * walk that a mount runs to rebuild its allocator and finish what a crash
 * interrupted, and that `morsel fsck` runs offline.  Built into the module
 * and, unchanged, into user space (tools/, tests/); the environment
 * supplies mpm_store(), mpm_report() and the few helpers of pm_env.h.
 */
#ifndef MORSEL_PM_CHECK_H
#define MORSEL_PM_CHECK_H

#include "pm_env.h"
#include "pm_format.h"

/* What the walk found; pages are 4 KiB device pages. */
struct mpm_stats {
	__u64 inodes;		/* allocated inodes */
	__u64 dirs;		/* directories reachable from the root */
	__u64 names;		/* live directory entries */
	__u64 itable_pages;	/* inode table: tables and record pages */
	__u64 table_pages;	/* the morsels' tables */
	__u64 data_pages;	/* data pages (directories', links', attributes' too) */
	__u64 used_pages;	/* all reachable pages, the super block too */
	__u64 bad_pages;	/* failed pages in the bad-page tree (format 2) */
	__u64 poisoned;		/* regular files' leaves of failed pages */
	__u64 huge_leaves;	/* 2 MiB leaves (format 3), in data_pages too */
	/* States a crash leaves, which recovery finishes (leaks until then). */
	__u64 renames;		/* unfinished renames */
	__u64 punches;		/* unfinished punches */
	__u64 orphans;		/* allocated inodes no name reaches */
	__u64 leaked_pages;	/* pages held by orphans, punches, beyond EOF */
	__u64 relocated;	/* entries rewritten for a new base */
	__u64 lowered;		/* trees lowered to the order they need */
	__u64 poisonings;	/* failed pages' leaves marked or cleared */
	__u64 splits;		/* 2 MiB leaves split for a punch or EOF */
	__u64 kept;		/* orphans kept for a reader's lease (@keep) */
	/*
	 * Violated invariants (damage): a mount refuses the device, unchanged;
	 * only `morsel fsck -y` (@fix) removes them.
	 */
	__u64 errors;
	__u64 too_high;		/* of the errors: orders above @max_order */
	__u64 unaligned;	/* ... 2 MiB leaves on a device not 2 MiB aligned */
	__u64 fixed;		/* damaged words @fix cleared or corrected */
	/* Stores recovery made. */
	__u64 stores;
};

/**
 * struct mpm_fs - one device being checked or recovered
 * @dev:      the device, mapped (page 0 is the super block).
 * @nr_pages: pages of @dev.
 * @phys:     physical address of @dev now; a recovery relocates the
 *            entries there if the super block says otherwise.  0: the
 *            super block's base (user space cannot know better).
 * @repair:   recover (finish renames and punches, reclaim orphans and
 *            pages past EOF, relocate); otherwise only count them.  A
 *            device with errors is never recovered: mpm_walk() checks it
 *            first and, finding damage, stores nothing; but for a
 *            relocation already under way, which is finished before
 *            pass 2 can read directories (docs/persistence.md).
 * @fix:      with @repair (`morsel fsck -y`): remove damage too, by
 *            clearing every word the walk rejected (an entry, a directory
 *            entry, an inode) or correcting a size, then recovering what
 *            that leaves (orphans, pages no longer reached).
 * @max_order: the highest order this kernel maps (a 4-level kernel: 3);
 *            a tree above it is refused like damage, and counted in
 *            @st.too_high too.  0: MPM_MAX_ORDER.
 * @used:     out: one bit per page (BITS_PER_U64 per word), set for every
 *            page reachable after the walk; freed by mpm_fs_release().
 * @max_ino:  out: the highest allocated inode number.
 * @st:       out: see struct mpm_stats.
 * @keep:     in: inode numbers (ascending) whose orphans stay, with their
 *            trees: deleted sealed files a reader host of a shared pool
 *            may still map (pm_share.c).  Empty for fsck.
 * @priv:     for the environment (the tools: the pages they mapped, which
 *            a file system smaller than its device leaves beyond
 *            @nr_pages after the walk).
 */
struct mpm_fs {
	__u8 *dev;
	__u64 nr_pages;
	__u64 phys;
	bool repair;
	bool fix;
	unsigned int max_order;
	__u64 *used;
	__u64 max_ino;
	struct mpm_stats st;
	struct mpm_vec { __u64 *v, n, cap; } keep;
	void *priv;
	/* private to pm_check.c */
	__u64 base;
	__u64 walk_idx;
	int walk_err;		/* -ENOMEM in pass 1 */
	bool dry;		/* a check before a repair: no store, no error for a relocation */
	bool is_dir;		/* the tree being walked is a directory's */
	bool is_reg;		/* ... a regular file's */
	bool in_bad;		/* ... the bad-page tree */
	__u64 leading;		/* its data pages from offset 0 on, so far */
	__u8 *kind;		/* per page: what pass 1 reached it as (MPM_K_*) */
	struct mpm_vec recs;	/* record pages' offsets, ascending */
	__u32 *links;		/* per slot of mpm_ino_slot() */
	struct mpm_vec dead_vec;
};

enum mpm_kind { MPM_ERROR, MPM_RECOVER, MPM_INFO };

/* Supplied by the environment. */
void mpm_store(struct mpm_fs *fs, __u64 *word, __u64 val);
void mpm_zero(struct mpm_fs *fs, void *addr, size_t len);
#ifdef __KERNEL__
__printf(3, 4)
#endif
void mpm_report(struct mpm_fs *fs, enum mpm_kind kind, const char *fmt, ...);

/*
 * Walk the whole file system.  Returns 0 when the walk could be made
 * (st.errors counts violated invariants), -EINVAL when the super block is
 * not a morselfs's or does not fit the device, -ENOMEM.
 */
int mpm_walk(struct mpm_fs *fs);
void mpm_fs_release(struct mpm_fs *fs);
/*
 * A reader's look at a shared pool another host writes: the super block's
 * checks and its base, no walk and no store.  -EBUSY while a relocation
 * is under way.
 */
int mpm_open_shared(struct mpm_fs *fs);

/* Helpers for the environment (and the module's mount). */
struct mpm_inode *mpm_inode(struct mpm_fs *fs, __u64 ino);
/* The names of inode @ino the walk counted (until mpm_fs_release()). */
__u32 mpm_links(struct mpm_fs *fs, __u64 ino);
void *mpm_tree_page(struct mpm_fs *fs, __u64 root, __u64 pgoff);
/* The device page entry @e points to, or 0 if outside the device. */
__u64 mpm_entry_page(struct mpm_fs *fs, __u64 e);
/*
 * The attributes of @in (after a walk that found no error): the first
 * with @x NULL, else the one after @x; NULL at the end.
 */
const struct mpm_xattr *mpm_xattr_next(struct mpm_fs *fs, struct mpm_inode *in,
				       const struct mpm_xattr *x);

static inline const char *mpm_xattr_name(const struct mpm_xattr *x)
{
	return (const char *)(x + 1);
}

static inline const void *mpm_xattr_value(const struct mpm_xattr *x)
{
	return mpm_xattr_name(x) + x->name_len;
}

/*
 * Whether the walk found what a crash leaves (fsck's exit code 4; what a
 * mount reports as recovered).  A repair's other stores (zeroing bytes
 * past EOF in a last page, which a mapping may write at any time) only
 * normalise.
 */
static inline bool mpm_needs_recovery(const struct mpm_stats *st)
{
	return st->renames || st->punches || st->orphans || st->leaked_pages ||
	       st->relocated || st->lowered || st->fixed || st->poisonings ||
	       st->splits;
}

static inline struct mpm_super *mpm_super(struct mpm_fs *fs)
{
	return (struct mpm_super *)fs->dev;
}

static inline bool mpm_used(struct mpm_fs *fs, __u64 page)
{
	return fs->used[page / 64] >> (page % 64) & 1;
}

#endif /* MORSEL_PM_CHECK_H */
