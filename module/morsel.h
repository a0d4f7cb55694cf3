/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interface between the parts of the morsel module:
 *   tree.c   the morsel's own page-table tree (populate, free, re-root)
 *   mount.c  mounting a morsel into processes (fault, unmount, vm_ops)
 *   fs.c     morselfs: files, sizes, mmap, ioctls
 *   stats.c  global counters in /sys/fs/morselfs
 */
#ifndef MORSEL_INTERNAL_H
#define MORSEL_INTERNAL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/types.h>
#include <linux/mm.h>
#include <uapi/linux/morsel.h>

/* A raw x86-64 page-table entry as stored in a morsel's tables. */
typedef u64 mentry_t;

/**
 * struct morsel - one memory object
 * @lock:       serialises order changes (truncate) against new mappings.
 * @order:      0..MORSEL_MAX_ORDER; changes only under @lock with
 *              @nr_maps == 0, so a fault may read it without locking.
 * @root:       entry for the root: a table entry pointing at the level-@order
 *              table (order >= 1) or a leaf PTE for the data page (order 0);
 *              0 while nothing is populated.  Filled with cmpxchg.
 * @nr_maps:    VMAs mapping this morsel (mmap, fork, mremap copies).
 * @nr_pages:   populated data pages.
 * @nr_tables:  table pages per level (index level - 1).
 */
struct morsel {
	struct mutex lock;	/* see @lock above */
	unsigned int order;
	mentry_t root;
	atomic_t nr_maps;
	atomic_long_t nr_pages;
	atomic_long_t nr_tables[MORSEL_TABLE_LEVELS];
};

static inline u64 morsel_extent(unsigned int order)
{
	return (u64)PAGE_SIZE << (9 * order);
}

/* Smallest order whose extent is >= @size, or -EFBIG. */
int morsel_order_for_size(loff_t size);

/* tree.c */
struct morsel *morsel_alloc(void);
void morsel_destroy(struct morsel *m);
int morsel_populate(struct morsel *m, u64 off);
int morsel_set_order(struct morsel *m, unsigned int order);
void morsel_free_range(struct morsel *m, u64 start, u64 end);
void morsel_zero_tail(struct morsel *m, u64 off);
mentry_t morsel_mount_entry(struct morsel *m, bool write, bool exec);

/* mount.c */
extern const struct vm_operations_struct morsel_vm_ops;

/* fs.c */
int morselfs_register(void);
void morselfs_unregister(void);

/* stats.c */
extern atomic_long_t morsel_stat_pages;
extern atomic_long_t morsel_stat_tables;
extern atomic_long_t morsel_stat_morsels;
int morsel_stats_init(void);
void morsel_stats_exit(void);

#endif /* MORSEL_INTERNAL_H */
