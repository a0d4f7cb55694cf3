// SPDX-License-Identifier: GPL-2.0
/*
 * Sizes and orders of morsels, and the size= limit of a morselfs instance.
 *
 * The file size chooses the order: the smallest order whose extent is
 * >= i_size (a new, empty file is order 0 and owns no memory).
 *
 * Limits, as tmpfs has them: data pages and page tables both count
 * against size=; morsel_charge() takes the pages before tree.c allocates
 * them, so a full file system gives -ENOSPC (a fault: SIGBUS) and nothing
 * stored is lost.
 *
 * Locking: i_rwsem (held by the VFS around setattr and by file.c around
 * writes) orders size changes; m->lock orders them against new mappings
 * (nr_maps is raised under it).  Charges are cmpxchg loops on the
 * instance's counters; the limits change under s_umount (remount, fs.c).
 */
#include <linux/fs.h>
#include <linux/mm.h>

#include "morsel.h"

/* ---- the size limit ---- */

/**
 * morsel_charge_upto - charge up to @nr pages to @m's file system
 *
 * Return: how many were charged (fewer than @nr only when size= is
 * reached).  Lock-free.
 */
unsigned long morsel_charge_upto(struct morsel *m, unsigned long nr)
{
	struct morsel_sb *sbi = m->sbi;
	long used = atomic_long_read(&sbi->used), take;

	do {
		take = nr;
		if (sbi->max_blocks)
			take = clamp_t(long, (long)sbi->max_blocks - used, 0, nr);
		if (!take)
			return 0;
	} while (!atomic_long_try_cmpxchg(&sbi->used, &used, used + take));
	return take;
}

/* Charge exactly @nr pages, or nothing.  Return: true if charged. */
bool morsel_charge(struct morsel *m, unsigned long nr)
{
	unsigned long got = morsel_charge_upto(m, nr);

	if (got < nr)
		morsel_uncharge(m, got);
	return got == nr;
}

void morsel_uncharge(struct morsel *m, unsigned long nr)
{
	atomic_long_sub(nr, &m->sbi->used);
}

/* ---- size ---- */

/*
 * May @m, which is not mapped, take order @order?  Not while mapped, and a
 * bound morsel keeps its address only if it stays aligned and in range.
 */
static int order_change_ok(struct morsel *m, unsigned int order)
{
	u64 extent = morsel_extent(order);

	lockdep_assert_held(&m->lock);
	if (m->nr_maps)
		return -EBUSY;
	if (m->bound && (!IS_ALIGNED(m->bound, extent) ||
			 m->bound + extent > TASK_SIZE_MAX))
		return -EBUSY;
	return 0;
}

/**
 * morsel_grow_order - raise the order so that @size fits in the extent
 *
 * For writes and fallocate beyond the extent; the size itself is set by the
 * caller once data is there.  Caller holds the inode lock.
 * Return: 0, -EFBIG, -EBUSY (mapped, or bound to an address the new extent
 * does not fit) or -ENOMEM.
 */
int morsel_grow_order(struct morsel *m, loff_t size)
{
	int order = morsel_order_for_size(size);
	int err = 0;

	if (order < 0)
		return order;
	mutex_lock(&m->lock);
	if (order > m->order) {
		err = order_change_ok(m, order);
		if (!err)
			err = morsel_set_order(m, order);
	}
	mutex_unlock(&m->lock);
	return err;
}

/**
 * morsel_fit_order - lower the order again to the one the size needs
 *
 * Undoes morsel_grow_order after a write or fallocate that failed before
 * the size grew.  Caller holds the inode lock.
 */
void morsel_fit_order(struct inode *inode)
{
	struct morsel *m = inode->i_private;
	int order = morsel_order_for_size(i_size_read(inode));

	mutex_lock(&m->lock);
	if (order >= 0 && order < m->order && !m->nr_maps)
		morsel_set_order(m, order);
	mutex_unlock(&m->lock);
}

/*
 * Set the size.  Growing within the extent is always allowed; shrinking or
 * a change of order is refused while the morsel is mapped.  Shrinking frees
 * what was cut off and zeroes the rest of the last page.
 */
int morsel_resize(struct inode *inode, loff_t size)
{
	struct morsel *m = inode->i_private;
	int order = morsel_order_for_size(size);
	loff_t old = i_size_read(inode);
	int err = 0;

	if (order < 0)
		return order;
	mutex_lock(&m->lock);
	if (size < old || order != m->order)
		err = order_change_ok(m, order);
	if (err)
		goto out;
	if (size < old) {
		morsel_free_range(m, PAGE_ALIGN(size), morsel_extent(m->order));
		morsel_zero_range(m, size, PAGE_ALIGN(size));
	}
	err = morsel_set_order(m, order);
	if (!err)
		i_size_write(inode, size);
out:
	mutex_unlock(&m->lock);
	return err;
}
