// SPDX-License-Identifier: GPL-2.0
/*
 * Sizes and orders of morsels, and the size= limit of a morselfs instance.
 *
 * The order is the smallest whose extent holds the file size, raised to
 * the file's minimum order (MORSEL_IOC_SET_MIN_ORDER) and to the extent of
 * any longer shared mapping (mount.c); a new, empty file is order 0 and
 * owns no memory.  The order rises whenever one of these needs it, also
 * while the morsel is mapped (tree.c keeps every table in place); it falls
 * back to what the size needs at a size change when no shared mapping
 * holds it up.  What a mapping stored past the size in the last page reads
 * as zeros once the size moves past it, down or up.
 *
 * Limits, as tmpfs has them: data pages and page tables both count
 * against size=; morsel_charge() takes the pages before tree.c allocates
 * them, so a full file system gives -ENOSPC (a fault: SIGBUS) and nothing
 * stored is lost.  fallocate(FALLOC_FL_KEEP_SIZE) past the end charges
 * ahead of time: a reservation (the end of this file), which allocations
 * in its range draw on first (morsel_draw).
 *
 * Locking: i_rwsem (held by the VFS around setattr and by file.c around
 * writes) orders size changes; the invalidate lock, taken exclusively
 * inside it, keeps faults of page-by-page mappings out while pages or tables
 * are freed; m->lock (inside both) orders order changes against new
 * mappings (nr_maps is raised under it).  Charges are cmpxchg loops on the
 * instance's counters; the limits change under s_umount (remount, fs.c).
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pagemap.h>

#include "morsel.h"
#include "morsel_pm.h"

/* ---- the size limit ---- */

/**
 * morsel_take_upto - add up to @nr to the counter @used below @limit
 * @used:  a use counter of the instance (pages, or inode space in fs.c)
 * @limit: its limit; 0 means none
 * @nr:    what the caller wants
 *
 * Return: how much was added (less than @nr only at the limit).
 * Lock-free: a cmpxchg loop against concurrent charges.
 */
long morsel_take_upto(atomic_long_t *used, long limit, long nr)
{
	long cur = atomic_long_read(used), take;

	do {
		take = nr;
		if (limit)
			take = clamp_t(long, limit - cur, 0, nr);
		if (!take)
			return 0;
	} while (!atomic_long_try_cmpxchg(used, &cur, cur + take));
	return take;
}

/**
 * morsel_charge_upto - charge up to @nr pages to @m's file system
 *
 * Return: how many were charged (fewer than @nr only when size= is
 * reached).  Lock-free.
 */
unsigned long morsel_charge_upto(struct morsel *m, unsigned long nr)
{
	struct morsel_sb *sbi = m->sbi;

	return morsel_take_upto(&sbi->used, READ_ONCE(sbi->max_blocks), nr);
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

/**
 * morsel_avail_blocks - how many data pages one new file can still get
 * @bfree: free pages of the instance (data pages and tables count alike)
 *
 * A file of n pages also needs its tables: ceil(n / 512) leaf tables, one
 * table above every 512 of those, and so on up to a single root.  statfs
 * reports this as f_bavail, so that a program that allocates f_bavail
 * blocks (fstests' generic/103 leaves 512 KiB) finds them.  The tables of
 * bfree pages are at least those of any smaller file, so the answer errs
 * on the safe side by a table or two.
 *
 * Return: @bfree minus the tables a file of @bfree pages needs.
 */
u64 morsel_avail_blocks(u64 bfree)
{
	u64 tables = 0, n = bfree;

	while (n > 1) {
		n = DIV_ROUND_UP_ULL(n, PTRS_PER_PTE);
		tables += n;
	}
	return bfree - min(tables, bfree);
}

/* ---- size and order ---- */

/* The largest order: order 4 needs 5-level paging (fs.c: s_maxbytes). */
unsigned int morsel_max_order(void)
{
	return pgtable_l5_enabled() ? 4 : 3;
}

/*
 * The order a file of @size bytes should have: at least the minimum, and
 * enough for its reservation.
 */
static int wanted_order(struct morsel *m, loff_t size)
{
	int order = morsel_order_for_size(max_t(u64, size,
						READ_ONCE(m->resv_end)));

	if (order < 0 || order > morsel_max_order())
		return -EFBIG;
	return max_t(int, order, m->min_order);
}

/*
 * May @m rise to order @order?  A bound morsel keeps its address only if
 * the larger extent stays aligned and inside the address space.  Caller
 * holds m->lock.  Return: 0, -EFBIG (past the largest order) or -EBUSY.
 */
static int order_ok(struct morsel *m, unsigned int order)
{
	u64 extent = morsel_extent(order);

	lockdep_assert_held(&m->lock);
	if (order > morsel_max_order())
		return -EFBIG;
	if (m->bound && (!IS_ALIGNED(m->bound, extent) ||
			 m->bound + extent > TASK_SIZE_MAX))
		return -EBUSY;
	return 0;
}

/**
 * morsel_raise_order - raise @m to @order if it is below
 *
 * Also while mapped (tree.c).  Caller holds m->lock.
 * Return: 0, -EFBIG, -EBUSY (bound), -ENOSPC or -ENOMEM.
 */
int morsel_raise_order(struct morsel *m, unsigned int order)
{
	if (order <= m->order)
		return 0;
	return order_ok(m, order) ?: morsel_set_order(m, order);
}

/**
 * morsel_grow_order - raise the order so that @size fits in the extent
 *
 * For writes and fallocate beyond the extent; the size itself is set by the
 * caller once data is there.  The morsel may be mapped: its mappings keep
 * their extent (mount.c).  Caller holds the inode lock.
 * Return: 0, -EFBIG, -EBUSY (bound to an address the new extent does not
 * fit), -ENOSPC or -ENOMEM (the new tables).
 */
int morsel_grow_order(struct morsel *m, loff_t size)
{
	int order = wanted_order(m, size);
	int err;

	if (order < 0)
		return order;
	mutex_lock(&m->lock);
	err = morsel_raise_order(m, order);
	mutex_unlock(&m->lock);
	return err;
}

/*
 * Lower @m to the order its size and minimum want, if no shared mapping
 * holds it up.  Caller holds the inode lock and the invalidate lock
 * exclusively (page-by-page faults walk the tree under it shared) and
 * m->lock.
 */
static void fit(struct morsel *m, loff_t size)
{
	int order = wanted_order(m, size);

	if (order >= 0 && order < m->order && !morsel_tables_mapped(m))
		morsel_set_order(m, order);
}

/**
 * morsel_fit_final - the order the size needs, for a morsel that stays
 *
 * A persistent morsel whose inode leaves memory (unmount) keeps its tree
 * on the device: a longer mapping may have raised it, and nothing maps it
 * now.  Lowering it here leaves the device as the next mount would make
 * it, so `morsel fsck` finds a cleanly unmounted device clean.  Called at
 * eviction, when nobody else holds the inode.
 */
void morsel_fit_final(struct morsel *m, loff_t size)
{
	mutex_lock(&m->lock);
	fit(m, size);
	mutex_unlock(&m->lock);
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

	filemap_invalidate_lock(inode->i_mapping);
	mutex_lock(&m->lock);
	fit(m, i_size_read(inode));
	mutex_unlock(&m->lock);
	filemap_invalidate_unlock(inode->i_mapping);
}

/**
 * morsel_zero_past_size - zero the last page past the size before it grows
 * @inode: the file (caller holds its inode lock)
 * @size: the new size
 *
 * A shared mapping of the last page may store past the size (as on any
 * file system); what it left there must read as zeros once the size grows
 * over it (fsx -e, fstests generic/363).  A shrink zeroes the same bytes
 * (morsel_resize).  Only the last page can hold such bytes: past it a
 * page stays absent (morsel_reserve).  A store that races with the growth
 * lands before or after it, as a write into the file would.
 */
void morsel_zero_past_size(struct inode *inode, loff_t size)
{
	loff_t old = i_size_read(inode);

	morsel_zero_range(inode->i_private, old,
			  min_t(loff_t, size, PAGE_ALIGN(old)));
}

/**
 * morsel_resize - set the size (truncate, ftruncate)
 *
 * Growing raises the order when the size needs it, also while mapped.
 * Shrinking frees what was cut off and zeroes the rest of the last page;
 * while shared mappings exist their tables stay (and so does the order),
 * otherwise the order falls to the one the size needs.  Page-by-page
 * mappings lose their pages past the size, private copies included
 * (SIGBUS there, as on any file).  Caller holds the inode lock.
 * Return: 0, -EFBIG, -EBUSY (bound), -ENOSPC or -ENOMEM.
 */
int morsel_resize(struct inode *inode, loff_t size)
{
	struct morsel *m = inode->i_private;
	int order = wanted_order(m, size);
	loff_t old = i_size_read(inode);
	int err;

	if (order < 0)
		return order;
	filemap_invalidate_lock(inode->i_mapping);
	morsel_walk_lock(m);	/* morsel_zero_range unshares under it */
	err = morsel_raise_order(m, order);
	/* A clone's tables past the new size: as at a punch (file.c). */
	if (!err && size < old)
		err = morsel_unshare(m, round_down(size, PAGE_SIZE),
				     morsel_extent(m->order),
				     morsel_tables_mapped(m) ?
				     MORSEL_UNSHARE_TABLES :
				     MORSEL_UNSHARE_EDGES);
	if (err)
		goto out;
	if (size > old)
		morsel_zero_past_size(inode, size);
	/* The new size first: a fault past it now gives SIGBUS. */
	i_size_write(inode, size);
	morsel_size_changed(inode);
	if (size < old) {
		morsel_zero_range(m, size, PAGE_ALIGN(size));
		if (morsel_tables_mapped(m))
			morsel_evict_mapped(m, inode->i_mapping,
					    PAGE_ALIGN(size),
					    morsel_extent(m->order));
		else
			morsel_free_range(m, PAGE_ALIGN(size),
					  morsel_extent(m->order));
		morsel_resv_trim(inode, size);
	}
	fit(m, size);
out:
	morsel_walk_unlock(m);
	if (!err && size < old)
		morsel_zap_paged(inode, PAGE_ALIGN(size), 0, true);
	filemap_invalidate_unlock(inode->i_mapping);
	return err;
}

/**
 * morsel_set_min_order - MORSEL_IOC_SET_MIN_ORDER
 *
 * Raises the order at once if it is below (mapped or not); a lower minimum
 * lets the order fall at the next size change without mappings.  Caller
 * holds the inode lock.  Return: 0, -EINVAL, -EBUSY, -ENOSPC or -ENOMEM.
 */
int morsel_set_min_order(struct inode *inode, unsigned int order)
{
	struct morsel *m = inode->i_private;
	int err;

	if (order > morsel_max_order())
		return -EINVAL;
	mutex_lock(&m->lock);
	err = morsel_raise_order(m, order);
	if (!err) {
		m->min_order = order;
		if (m->pm)
			morsel_pm_set_word(inode, MORSEL_PM_FIELD(min_order), order);
	}
	mutex_unlock(&m->lock);
	return err;
}

/* ---- reservations: fallocate(FALLOC_FL_KEEP_SIZE) past the end ---- */

/*
 * A page past the file's size stays absent: a mounted mapping reaches a
 * populated page without a fault, so only an absent one gives SIGBUS
 * there.  So where ext4, XFS and tmpfs allocate for fallocate
 * (FALLOC_FL_KEEP_SIZE) past the end, a morsel reserves: the range
 * [@resv_start, @resv_end) (one per file; another call widens it to cover
 * both) holds as many pages as it lacks, plus one table per level for
 * every table span it touches, charged to the size limit at once (on a
 * persistent instance also held back from the device's free pages, pm.c)
 * or refused with -ENOSPC.  The order rises to the one its end needs and
 * stays there.  Every allocation for an offset in the range, page or
 * table, draws on the reservation before the limit, so writes, faults and
 * fallocate there find room however full the file system is, also after
 * the size grew over the range.  A shrinking truncate cuts the range at
 * the new size and gives back what the rest does not need; deletion gives
 * back all.  A page punched out of the range goes back to the file system,
 * as on ext4.  Pages counted in the range but present already (a wider
 * range), and tables that existed, stay charged until then: the charge is
 * an upper bound.
 *
 * Locking: the range changes under the inode lock (resize: also the
 * invalidate lock and m->lock); allocations read it lock-free and take
 * from @resv with a cmpxchg loop, so a reservation is never used twice.
 */

/* Take up to @nr from @ctr (never below 0).  Return: how much. */
static unsigned long take_down(atomic_long_t *ctr, unsigned long nr)
{
	long cur = atomic_long_read(ctr), take;

	do {
		take = min_t(long, cur, nr);
		if (take <= 0)
			return 0;
	} while (!atomic_long_try_cmpxchg(ctr, &cur, cur - take));
	return take;
}

/**
 * morsel_draw - take up to @nr pages for byte offset @off from @m's
 * reservation, if @off lies in its range
 *
 * For tree.c, lock-free.  What is drawn was charged at reservation.
 * Return: how many were drawn (the rest must be charged).
 */
unsigned long morsel_draw(struct morsel *m, u64 off, unsigned long nr)
{
	if (!nr || off < READ_ONCE(m->resv_start) ||
	    off >= READ_ONCE(m->resv_end))
		return 0;
	return take_down(&m->resv, nr);
}

/* Drawn pages that were not used after all (an allocation failed). */
void morsel_undraw(struct morsel *m, unsigned long nr)
{
	if (nr)
		atomic_long_add(nr, &m->resv);
}

/* Tables of levels 1..@order that pages in [@start, @end) may need. */
static unsigned long resv_tables(u64 start, u64 end, unsigned int order)
{
	unsigned long nr = 0;
	unsigned int level;

	for (level = 1; level <= order; level++) {
		u64 span = morsel_extent(level);

		nr += (round_up(end, span) - round_down(start, span)) / span;
	}
	return nr;
}

/* What the range [@start, @end) lacks: absent pages and their tables. */
static unsigned long resv_need(struct morsel *m, u64 start, u64 end)
{
	return ((end - start) >> PAGE_SHIFT) -
	       morsel_count_pages(m, start, end) +
	       resv_tables(start, end, m->order);
}

/* Charge @nr more pages to @m's reservation.  Return: 0, -ENOSPC, -ENOMEM. */
static int resv_take(struct morsel *m, unsigned long nr)
{
	int err;

	if (!morsel_charge(m, nr))
		return -ENOSPC;
	err = src_hold(m->src, nr);
	if (err) {
		morsel_uncharge(m, nr);
		return err;
	}
	atomic_long_add(nr, &m->resv);
	return 0;
}

/* Give back up to @nr pages of @m's reservation. */
static void resv_give(struct morsel *m, unsigned long nr)
{
	nr = take_down(&m->resv, nr);
	src_unhold(m->src, nr);
	morsel_uncharge(m, nr);
}

/* The range on the device (pm_format.h), as start | end << 32 in pages. */
static void resv_store(struct inode *inode)
{
	struct morsel *m = inode->i_private;

	if (m->pm)
		morsel_pm_set_word(inode, MORSEL_PM_FIELD(resv), m->resv_end ?
				   m->resv_start >> PAGE_SHIFT |
				   (m->resv_end >> PAGE_SHIFT) << 32 : 0);
}

/**
 * morsel_reserve - reserve [@start, @end) past the size (fallocate)
 *
 * Page-aligned, @start at or past the size rounded up to a page.  Caller
 * holds the inode lock, and lowers the order again if this fails.
 * Return: 0; -ENOSPC (nothing changed), -EFBIG (a persistent instance
 * records reservations below 16 TiB), -EBUSY (bound), -ENOMEM.
 */
int morsel_reserve(struct inode *inode, u64 start, u64 end)
{
	struct morsel *m = inode->i_private;
	long more;
	int err;

	if (m->resv_end) {
		start = min(start, m->resv_start);
		end = max(end, m->resv_end);
	}
	if (m->pm && end >> PAGE_SHIFT >= MPM_RESV_MAX_PAGE)
		return -EFBIG;
	err = morsel_grow_order(m, end);
	if (err)
		return err;
	more = resv_need(m, start, end) - atomic_long_read(&m->resv);
	if (more > 0) {
		err = resv_take(m, more);
		if (err)
			return err;
	}
	/* Widen start first: meanwhile the range is a part of the new one. */
	WRITE_ONCE(m->resv_start, start);
	WRITE_ONCE(m->resv_end, end);
	resv_store(inode);
	return 0;
}

/**
 * morsel_resv_release - give back the whole reservation (in memory only)
 *
 * At eviction: the file is gone, or (persistent) the device keeps its
 * word and the next mount holds the pages again.
 */
void morsel_resv_release(struct morsel *m)
{
	WRITE_ONCE(m->resv_end, 0);
	WRITE_ONCE(m->resv_start, 0);
	resv_give(m, atomic_long_read(&m->resv));
}

/**
 * morsel_resv_trim - the size fell to @size: cut the range there
 *
 * Called by morsel_resize after the pages past @size are gone, with the
 * inode lock, the invalidate lock and m->lock held.
 */
void morsel_resv_trim(struct inode *inode, loff_t size)
{
	struct morsel *m = inode->i_private;
	u64 end = PAGE_ALIGN(size);
	long less;

	if (end >= m->resv_end)
		return;
	if (end <= m->resv_start) {
		morsel_resv_release(m);
	} else {
		WRITE_ONCE(m->resv_end, end);
		less = atomic_long_read(&m->resv) -
		       resv_need(m, m->resv_start, end);
		if (less > 0)
			resv_give(m, less);
	}
	resv_store(inode);
}

/**
 * morsel_resv_load - a persistent file's reservation, at mount
 * @m:    the morsel, its tree adopted
 * @word: its record's @resv
 *
 * Holds what the range still lacks.  Return: 0, or -ENOSPC / -ENOMEM (the
 * caller drops the reservation: the device is fuller than when it was
 * made, which only a repair can do).
 */
int morsel_resv_load(struct morsel *m, u64 word)
{
	u64 start = mpm_resv_start(word), end = mpm_resv_end(word);
	int err;

	if (!word)
		return 0;
	err = resv_take(m, resv_need(m, start, end));
	if (!err) {
		m->resv_start = start;
		m->resv_end = end;
	}
	return err;
}
