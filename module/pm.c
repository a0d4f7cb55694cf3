// SPDX-License-Identifier: GPL-2.0
/*
 * Persistent morselfs instances: mount -t morselfs -o pmem=DEV none DIR.
 *
 * The device is an fsdax pmem namespace (docs/persistence.md): the module
 * takes its whole range through DAX, recovers it with the walk of
 * pm_check.c (which also yields the set of reachable pages), and from then
 * on allocates the tables and data pages of every morsel from it, so the
 * MMU walks persistent memory.  The names, inodes and trees on the device
 * are the truth; the VFS's inodes and dentries are loaded from them at
 * mount and every change is written through, as a sequence of aligned
 * 8-byte stores in the order docs/persistence.md gives per operation.
 *
 * Device pages and struct page: fsdax pages have struct pages whose first
 * words hold the pgmap, so a table freed here never goes through
 * pt_rcu_head or page->lru; its RCU grace period uses a small allocation
 * of our own.  A data page is idle at reference count 1; one freed while
 * pinned (count above 1) waits on a list until it is idle again; one
 * still pinned at unmount (a pipe holds a vmspliced page) stays reserved
 * for every later mount of the device until it is idle (pm_leftovers).
 * Long-term pins (RDMA, io_uring buffers) are refused: the files are
 * S_DAX (fs.c).
 *
 * Every metadata store goes through morsel_pm_store() and its xchg and
 * cmpxchg variants: they count the stores and, when the platform does not
 * flush caches on power loss (dax_write_cache_enabled(): ADR), write the
 * line back and fence before the next store.
 *
 * Locking: the allocator's bitmap, the busy list and the held pages under
 * pm->alloc_lock (a spinlock taken with softirqs off: RCU callbacks free
 * tables into it; faults allocate lock-free otherwise); inode records are
 * allocated under pm->ino_lock; names change under the VFS's directory
 * locks (i_rwsem of every directory involved), which also order the
 * stores into a directory's pages; an inode's words under its i_rwsem;
 * the leftovers of unmounted devices under pm_leftover_lock (a mutex:
 * mount, unmount and the reaping work sleep).  Memory errors: see
 * pm_notify_failure; pm_failure_lock -> the file's invalidate lock ->
 * its m->lock -> pm->bad_lock -> the bad-page tree's m->lock.
 */
#include <linux/blkdev.h>
#include <linux/cc_platform.h>
#include <linux/dax.h>
#include <linux/fs.h>
#include <linux/libnvdimm.h>
#include <linux/memremap.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pfn_t.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/stdarg.h>
#include <linux/workqueue.h>
#include <linux/xattr.h>

#include "morsel.h"
#include "morsel_pm.h"
#include "pm_check.h"
#include "pm_log.h"
#include "source.h"

struct morsel_pm {
	struct mpm_fs fs;		/* fs.used: the allocator's bitmap */
	struct file *bdev_file;
	struct dax_device *dax;
	struct dev_pagemap *pgmap;	/* held: unbinding waits for umount */
	char *path;			/* pmem=, for /proc/mounts */
	bool flush;
	spinlock_t alloc_lock;		/* fs.used, hint, huge_hint, busy, held */
	u64 hint;
	u64 huge_hint;			/* where the next free 2 MiB run is sought */
	struct list_head busy;
	unsigned long *held;		/* pages reserved by fallocate, or NULL */
	struct mutex ino_lock;		/* inode records, ino_hint */
	u64 ino_hint;
	atomic64_t nr_inodes;		/* allocated records */
	atomic64_t stores;
	/* Memory errors (pm_notify_failure). */
	struct morsel_sb *sbi;
	u64 start_off;			/* of the device in the dax device */
	bool live;			/* mounted: under pm_failure_lock */
	struct mutex bad_lock;		/* creating @bad */
	struct morsel *bad;		/* the bad-page tree, once used */
	struct morsel_source src;	/* its pages as tables and data */
	/* A shared pool (pm_share.c): this mount's slot, or NULL. */
	struct morsel_share *share;
	bool share_ran;			/* its heartbeat started */
	bool reader;			/* no allocator, stores only its slot */
};

/* A data page freed while pinned, or a table waiting for its grace period. */
struct pm_deferred {
	union {
		struct list_head node;
		struct rcu_head rcu;
	};
	struct morsel_pm *pm;
	u64 page;
};

static struct morsel_pm *PM(struct super_block *sb)
{
	return ((struct morsel_sb *)sb->s_fs_info)->pm;
}

static void *pm_addr(struct morsel_pm *pm, u64 page)
{
	return pm->fs.dev + page * PAGE_SIZE;
}

static u64 pm_page(struct morsel_pm *pm, const void *addr)
{
	return ((const u8 *)addr - pm->fs.dev) / PAGE_SIZE;
}

static u64 pm_offset(struct morsel_pm *pm, const void *addr)
{
	return (const u8 *)addr - pm->fs.dev;
}

static void pm_src_huge_ready(void *priv);

/* ---- stores ---- */

static void pm_persist(struct morsel_pm *pm, void *addr, size_t len)
{
	if (pm->flush) {
		arch_wb_cache_pmem(addr, len);
		wmb();	/* sfence: written back before the next store */
	}
}

void morsel_pm_store(struct morsel_pm *pm, u64 *word, u64 val)
{
	if (unlikely(READ_ONCE(morsel_pm_log_on)))
		morsel_pm_log_store(pm_offset(pm, word), word, val);
	else
		WRITE_ONCE(*word, val);
	pm_persist(pm, word, sizeof(*word));
	atomic64_inc(&pm->stores);
}

u64 morsel_pm_xchg(struct morsel_pm *pm, u64 *word, u64 val)
{
	u64 old = unlikely(READ_ONCE(morsel_pm_log_on)) ?
		  morsel_pm_log_xchg(pm_offset(pm, word), word, val) :
		  xchg(word, val);

	pm_persist(pm, word, sizeof(*word));
	atomic64_inc(&pm->stores);
	return old;
}

bool morsel_pm_cmpxchg(struct morsel_pm *pm, u64 *word, u64 *old, u64 new)
{
	if (unlikely(READ_ONCE(morsel_pm_log_on))) {
		if (!morsel_pm_log_cmpxchg(pm_offset(pm, word), word, old, new))
			return false;
	} else if (!try_cmpxchg64(word, old, new)) {
		return false;
	}
	pm_persist(pm, word, sizeof(*word));
	atomic64_inc(&pm->stores);
	return true;
}

/* Bytes that are not metadata words: names, symlink targets, zeroes. */
static void pm_write(struct morsel_pm *pm, void *dst, const void *src,
		     size_t len)
{
	if (unlikely(READ_ONCE(morsel_pm_log_on)))
		morsel_pm_log_bytes(pm_offset(pm, dst), dst, src, len);
	else if (src)
		memcpy(dst, src, len);
	else
		memset(dst, 0, len);
	pm_persist(pm, dst, len);
}

/* Data the file's write path copied into a device page. */
static void pm_src_wrote(void *priv, void *addr, size_t len)
{
	struct morsel_pm *pm = priv;

	pm_persist(pm, addr, len);
	if (unlikely(READ_ONCE(morsel_pm_log_on)))
		morsel_pm_log_written(pm_offset(pm, addr), addr, len);
}

/*
 * Whether data written through mappings must be written back by fsync:
 * the platform does not flush CPU caches on power loss (ADR).
 */
static bool pm_src_flushes(void *priv)
{
	return ((struct morsel_pm *)priv)->flush;
}

/* Write one page's cache lines back (fsync on ADR); the caller fences. */
static void pm_src_writeback(void *priv, void *addr)
{
	arch_wb_cache_pmem(addr, PAGE_SIZE);
}

/* pm_check.c's environment in the kernel. */
void mpm_store(struct mpm_fs *fs, __u64 *word, __u64 val)
{
	morsel_pm_store(container_of(fs, struct morsel_pm, fs), word, val);
}

void mpm_zero(struct mpm_fs *fs, void *addr, size_t len)
{
	pm_write(container_of(fs, struct morsel_pm, fs), addr, NULL, len);
}

void mpm_report(struct mpm_fs *fs, enum mpm_kind kind, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	if (kind == MPM_ERROR)
		pr_err("morselfs: %pV\n", &vaf);
	else
		pr_info("morselfs: %pV\n", &vaf);
	va_end(args);
}

/* ---- the page allocator ---- */

/* An fsdax page nobody references: its count is 1, not 0 (see above). */
static bool pfn_idle(unsigned long pfn)
{
	return page_ref_count(pfn_to_page(pfn)) == 1;
}

/* Free the busy pages that are idle again.  Caller holds alloc_lock. */
static void pm_reap_busy(struct morsel_pm *pm)
{
	struct pm_deferred *d, *next;

	list_for_each_entry_safe(d, next, &pm->busy, node) {
		if (!pfn_idle(PHYS_PFN(pm->fs.phys) + d->page))
			continue;
		__clear_bit(d->page, (unsigned long *)pm->fs.used);
		list_del(&d->node);
		kfree(d);
	}
}

/*
 * A free page (now used), zeroed; 0 when the device is full.  With @held,
 * one of the pages a reservation holds (below), if any is left.
 */
static u64 pm_alloc_page(struct morsel_pm *pm, bool held)
{
	unsigned long *map = (unsigned long *)pm->fs.used;
	u64 n = pm->fs.nr_pages, p = n;

	if (!map)	/* a pool's reader allocates nothing */
		return 0;
	spin_lock_bh(&pm->alloc_lock);
	if (held && pm->held) {
		p = find_next_bit(pm->held, n, 1);
		if (p < n) {
			__clear_bit(p, pm->held);
			goto out;
		}
	}
	p = find_next_zero_bit(map, n, pm->hint);
	if (p >= n)
		p = find_next_zero_bit(map, n, 1);
	if (p >= n && !list_empty(&pm->busy)) {
		pm_reap_busy(pm);
		p = find_next_zero_bit(map, n, 1);
	}
	if (p < n) {
		__set_bit(p, map);
		pm->hint = p + 1;
	} else {
		p = 0;
	}
out:
	spin_unlock_bh(&pm->alloc_lock);
	if (p)
		pm_write(pm, pm_addr(pm, p), NULL, PAGE_SIZE);
	return p;
}

/*
 * Reservations (size.c: fallocate(FALLOC_FL_KEEP_SIZE) past a file's end):
 * the pages are taken out of the bitmap at once, so no other allocation
 * gets them, and marked in @held, whence an allocation for the reserved
 * range takes them.  @held lives in memory only; a mount holds the pages
 * that the device's reservations still lack again (pm_iget).
 * Return: 0, -ENOSPC (fewer than @nr pages are free) or -ENOMEM.
 */
static int pm_src_hold(void *priv, unsigned long nr)
{
	struct morsel_pm *pm = priv;
	unsigned long *map = (unsigned long *)pm->fs.used, *held = NULL;
	u64 n = pm->fs.nr_pages, p = 1;
	int err = 0;

	if (!nr)
		return 0;
	if (!map)
		return -ENOSPC;
	if (!READ_ONCE(pm->held)) {
		held = kvcalloc(BITS_TO_LONGS(n), sizeof(long), GFP_KERNEL);
		if (!held)
			return -ENOMEM;
	}
	spin_lock_bh(&pm->alloc_lock);
	if (!pm->held) {
		pm->held = held;
		held = NULL;
	}
	if (n - bitmap_weight(map, n) < nr && !list_empty(&pm->busy))
		pm_reap_busy(pm);
	if (n - bitmap_weight(map, n) < nr)
		err = -ENOSPC;
	while (!err && nr--) {
		p = find_next_zero_bit(map, n, p);
		__set_bit(p, map);
		__set_bit(p, pm->held);
	}
	spin_unlock_bh(&pm->alloc_lock);
	kvfree(held);
	return err;
}

/* Give back up to @nr held pages (fewer if allocations failed after taking). */
static void pm_src_unhold(void *priv, unsigned long nr)
{
	struct morsel_pm *pm = priv;
	u64 n = pm->fs.nr_pages, p = 1;

	spin_lock_bh(&pm->alloc_lock);
	while (pm->held && nr--) {
		p = find_next_bit(pm->held, n, p);
		if (p >= n)
			break;
		__clear_bit(p, pm->held);
		__clear_bit(p, (unsigned long *)pm->fs.used);
	}
	spin_unlock_bh(&pm->alloc_lock);
}

static void pm_free_page(struct morsel_pm *pm, u64 page)
{
	spin_lock_bh(&pm->alloc_lock);
	__clear_bit(page, (unsigned long *)pm->fs.used);
	spin_unlock_bh(&pm->alloc_lock);
}

static struct ptdesc *pm_src_table_alloc(void *priv, bool held)
{
	struct morsel_pm *pm = priv;
	u64 p = pm_alloc_page(pm, held);
	struct page *page;

	if (!p)
		return NULL;
	/*
	 * The constructor wants page->private (the split lock) clear, as the
	 * page allocator leaves it; a data page's owner (tree.c) used it.
	 */
	page = virt_to_page(pm_addr(pm, p));
	set_page_private(page, 0);
	page->index = 0;
	return page_ptdesc(page);
}

static void pm_table_rcu(struct rcu_head *head)
{
	struct pm_deferred *d = container_of(head, struct pm_deferred, rcu);

	pm_free_page(d->pm, d->page);
	kfree(d);
}

/*
 * Free a table (its destructor ran).  The buddy allocator would clear the
 * words the split lock and the PMD's fields used; here we do, or the next
 * constructor finds a stale lock pointer.  A published table waits for a
 * grace period (tree.c), on a pm_deferred since its rcu_head would
 * overwrite the pgmap.
 */
static void pm_src_table_forget(struct ptdesc *pt)
{
	struct page *page = ptdesc_page(pt);

	set_page_private(page, 0);
	page->index = 0;
}

static void pm_src_table_free(void *priv, struct ptdesc *pt, bool published)
{
	struct morsel_pm *pm = priv;
	u64 p = pm_page(pm, ptdesc_address(pt));
	struct pm_deferred *d;

	pm_src_table_forget(pt);
	if (!published) {
		pm_free_page(pm, p);
		return;
	}
	d = kmalloc(sizeof(*d), GFP_KERNEL | __GFP_NOFAIL);
	d->pm = pm;
	d->page = p;
	call_rcu(&d->rcu, pm_table_rcu);
}

/* A device's pages stay where the device is: @pl places nothing. */
static struct page *pm_src_page_alloc(void *priv, const struct morsel_place *pl,
				      bool held)
{
	struct morsel_pm *pm = priv;
	u64 p = pm_alloc_page(pm, held);

	return p ? virt_to_page(pm_addr(pm, p)) : NULL;
}

/* A data page whose leaf is gone (and flushed): reusable once unpinned. */
static void pm_src_page_free(void *priv, struct page *page)
{
	struct morsel_pm *pm = priv;
	u64 p = pm_page(pm, page_address(page));
	struct pm_deferred *d;

	if (pfn_idle(page_to_pfn(page))) {
		pm_free_page(pm, p);
		return;
	}
	d = kmalloc(sizeof(*d), GFP_KERNEL | __GFP_NOFAIL);
	d->pm = pm;
	d->page = p;
	spin_lock_bh(&pm->alloc_lock);
	list_add(&d->node, &pm->busy);
	spin_unlock_bh(&pm->alloc_lock);
}

/*
 * ---- pages still referenced when their mount went away ----
 *
 * A data page freed while a pipe or an I/O still holds it waits on the
 * mount's busy list; at unmount the ones still held become leftovers of
 * their device.  A later mount of the device marks them used (and busy)
 * instead of handing them out zeroed while a pipe can still read them.
 * Each holds a reference to the device's pgmap, so an unbind waits for
 * it as it waits for a mount; while any exists the module holds itself,
 * and a work item frees the idle ones once a second.
 */
struct pm_leftover {
	struct list_head node;
	struct dev_pagemap *pgmap;
	unsigned long pfn;
};

static LIST_HEAD(pm_leftovers);
static DEFINE_MUTEX(pm_leftover_lock);
static void pm_leftover_reap(struct work_struct *work);
static DECLARE_DELAYED_WORK(pm_leftover_work, pm_leftover_reap);

/* Drop the leftovers that are idle (or taken, @pm); under the mutex. */
static void pm_leftover_drop(struct morsel_pm *pm)
{
	unsigned long first = PHYS_PFN(pm ? pm->fs.phys : 0);
	struct pm_leftover *l, *next;
	struct pm_deferred *d;
	bool had = !list_empty(&pm_leftovers);

	list_for_each_entry_safe(l, next, &pm_leftovers, node) {
		bool ours = pm && l->pgmap == pm->pgmap &&
			    l->pfn - first < pm->fs.nr_pages;
		bool idle = pfn_idle(l->pfn);

		if (!ours && !idle)
			continue;
		/* Reachable again would mean the device was rewritten. */
		if (ours && !idle &&
		    !__test_and_set_bit(l->pfn - first,
					(unsigned long *)pm->fs.used)) {
			d = kmalloc(sizeof(*d), GFP_KERNEL | __GFP_NOFAIL);
			d->pm = pm;
			d->page = l->pfn - first;
			list_add(&d->node, &pm->busy);
		}
		list_del(&l->node);
		put_dev_pagemap(l->pgmap);
		kfree(l);
	}
	if (had && list_empty(&pm_leftovers))
		module_put(THIS_MODULE);
	else if (!list_empty(&pm_leftovers))
		schedule_delayed_work(&pm_leftover_work, HZ);
}

static void pm_leftover_reap(struct work_struct *work)
{
	mutex_lock(&pm_leftover_lock);
	pm_leftover_drop(NULL);
	mutex_unlock(&pm_leftover_lock);
}

/* Unmount: the busy pages still held become leftovers. */
static void pm_leave_busy(struct morsel_pm *pm)
{
	struct pm_deferred *d, *next;
	struct pm_leftover *l;
	unsigned long pfn;

	mutex_lock(&pm_leftover_lock);
	list_for_each_entry_safe(d, next, &pm->busy, node) {
		pfn = PHYS_PFN(pm->fs.phys) + d->page;
		if (!pfn_idle(pfn)) {
			l = kmalloc(sizeof(*l), GFP_KERNEL | __GFP_NOFAIL);
			l->pfn = pfn;
			l->pgmap = get_dev_pagemap(pfn, pm->pgmap);
			if (list_empty(&pm_leftovers)) {
				__module_get(THIS_MODULE);
				schedule_delayed_work(&pm_leftover_work, HZ);
			}
			list_add_tail(&l->node, &pm_leftovers);
		}
		list_del(&d->node);
		kfree(d);
	}
	mutex_unlock(&pm_leftover_lock);
}

/* Module exit (no leftover is left: each holds the module). */
void morsel_pm_exit(void)
{
	cancel_delayed_work_sync(&pm_leftover_work);
}

/* ---- memory errors (docs/memory-errors.md) ---- */

/*
 * Orders a failure notification against the end of a mount: fs_put_dax()
 * does not wait for one in flight, and one may come before the mount is
 * done (pm->live).
 */
static DEFINE_MUTEX(pm_failure_lock);

/*
 * Record @page, a page of the device, as failed: its leaf in the bad-page
 * tree (pm_format.h), the format raised to 2 first on a device of format
 * 1.  The page stays allocated.  Return: 0, -ENOMEM, -ENOSPC (no page for
 * a table) or -EEXIST (never: a page is listed at its own offset only).
 */
int morsel_pm_bad_page(struct morsel_pm *pm, struct page *page)
{
	struct mpm_super *super = mpm_super(&pm->fs);
	u64 p = pm_page(pm, page_address(page));
	unsigned int order = max(1, morsel_order_for_size((p + 1) << PAGE_SHIFT));
	struct morsel *bad;
	int err = 0;

	mutex_lock(&pm->bad_lock);
	bad = pm->bad;
	if (!bad) {
		bad = morsel_alloc(pm->sbi, NULL);
		if (!bad) {
			err = -ENOMEM;
			goto out;
		}
		bad->rootp = &super->badtree;
		bad->order = mpm_root_order(READ_ONCE(super->badtree));
		if (morsel_adopt_tree(bad)) {
			morsel_forget(bad);
			err = -ENOMEM;
			goto out;
		}
		pm->bad = bad;
	}
	if (READ_ONCE(super->version) < 2)
		morsel_pm_store(pm, &super->version, 2);
	mutex_lock_nested(&bad->lock, SINGLE_DEPTH_NESTING);
	if (order > bad->order)
		err = morsel_set_order(bad, order);
	if (!err)
		err = morsel_place(bad, p << PAGE_SHIFT, page);
	mutex_unlock(&bad->lock);
out:
	mutex_unlock(&pm->bad_lock);
	return err;
}

/* Is device page @p listed as failed? */
static bool pm_page_listed(struct morsel_pm *pm, u64 p)
{
	struct page *page;
	bool listed = false;

	mutex_lock(&pm->bad_lock);
	if (pm->bad && ((u64)p << PAGE_SHIFT) < morsel_extent(pm->bad->order)) {
		mutex_lock_nested(&pm->bad->lock, SINGLE_DEPTH_NESTING);
		page = morsel_lookup(pm->bad, p << PAGE_SHIFT);
		listed = !IS_ERR_OR_NULL(page);
		mutex_unlock(&pm->bad->lock);
	}
	mutex_unlock(&pm->bad_lock);
	return listed;
}

/*
 * Device page @p of @sb's instance failed.  A regular file's data page
 * leaves the file (memerr.c: its offset gets SIGBUS and EIO), a free page
 * is taken from the allocator; both are recorded and never used again.
 * A page of metadata (the super block, a table, inode records, a
 * directory's, a link's or attributes' page) cannot be replaced while
 * mounted: it is reported, and -EIO tells memory_failure() so.
 */
static int pm_page_failed(struct super_block *sb, struct morsel_pm *pm, u64 p)
{
	unsigned long *map = (unsigned long *)pm->fs.used;
	struct page *page;
	bool was_free;
	int err;

	if (!p || p >= pm->fs.nr_pages) {
		pr_err("morselfs: %s: its super block failed\n", pm->path);
		return -EIO;
	}
	page = virt_to_page(pm_addr(pm, p));
	if (morsel_memerr_take(page, sb) || pm_page_listed(pm, p))
		return 0;
	spin_lock_bh(&pm->alloc_lock);
	was_free = !test_bit(p, map);
	if (was_free)
		__set_bit(p, map);
	spin_unlock_bh(&pm->alloc_lock);
	if (was_free) {
		err = morsel_pm_bad_page(pm, page);
		if (err)	/* kept from this mount's allocator at least */
			pr_err("morselfs: %s: failed page %llu could not be recorded (%d)\n",
			       pm->path, p, err);
		return err;
	}
	pr_err("morselfs: %s: page %llu failed, which holds metadata; copy the files off, unmount and run morsel fsck\n",
	       pm->path, p);
	return -EIO;
}

/*
 * dax_holder_operations.notify_failure: memory_failure() on a page of the
 * device (a machine check, madvise(MADV_HWPOISON), the injector) arrives
 * here with the range as an offset into the dax device.  The removal of
 * the device (MF_MEM_PRE_REMOVE) is fs_holder_ops' (morsel_pm_shutdown).
 * Return: 0 if every page was taken care of, else -EIO (or why a page
 * could not be recorded).
 */
static int pm_notify_failure(struct dax_device *dax, u64 offset, u64 len,
			     int mf_flags)
{
	struct super_block *sb;
	struct morsel_pm *pm = NULL;
	u64 p, last;
	int err = 0, e;

	if (mf_flags & MF_MEM_PRE_REMOVE)
		return 0;
	mutex_lock(&pm_failure_lock);
	sb = dax_holder(dax);
	if (sb && sb->s_fs_info)
		pm = PM(sb);
	if (!pm || !pm->live || !atomic_inc_not_zero(&sb->s_active))
		pm = NULL;
	mutex_unlock(&pm_failure_lock);
	if (!pm)
		return -EIO;	/* mounting or unmounting */
	if (pm->reader) {	/* only the publisher records; kill the mappers */
		deactivate_super(sb);
		return -EOPNOTSUPP;
	}
	if (offset < pm->start_off || !len) {
		deactivate_super(sb);
		return -EIO;
	}
	p = (offset - pm->start_off) >> PAGE_SHIFT;
	last = min_t(u64, (offset - pm->start_off + len - 1) >> PAGE_SHIFT,
		     pm->fs.nr_pages - 1);
	for (; p <= last; p++) {
		e = pm_page_failed(sb, pm, p);
		if (e)
			err = e;
		cond_resched();
	}
	deactivate_super(sb);
	return err;
}

static const struct dax_holder_operations pm_holder_ops = {
	.notify_failure = pm_notify_failure,
};

/* ---- small trees: directories and symbolic links ---- */

static u64 pm_entry(struct morsel_pm *pm, u64 page, bool leaf)
{
	return (pm->fs.base + page * PAGE_SIZE) |
	       (leaf ? MPM_E_LEAF : MPM_E_TABLE) | MPM_E_AD;
}

/*
 * How many pages pm_small_page needs for the data page at @pgoff, which
 * needs a tree of order @need, of the tree whose root word is @root: the
 * tables above the old root and everything below the new top (whose
 * entry 0 is the old root, and @pgoff lies past it), or the missing part
 * of the path.
 */
static unsigned int pm_small_needed(struct morsel_pm *pm, u64 root, u64 pgoff,
				    unsigned int need)
{
	u64 e = root & ~MPM_ROOT_ORDER_MASK;
	unsigned int order = mpm_root_order(root), level;

	if (!e)
		return need + 1;
	if (need > order)
		return 2 * need - order;
	for (level = order; e; level--) {
		if (!level)
			return 0;
		e = READ_ONCE(((u64 *)pm_addr(pm, mpm_entry_page(&pm->fs, e)))
			      [(pgoff / mpm_span_pages(level - 1)) % MPM_ENTRIES]);
	}
	return level + 1;
}

/*
 * The data page at @pgoff of the tree whose root word is *@rootp, made
 * present (zeroed) if absent; NULL if the device is full, and then the
 * tree is as it was: every page it needs is taken first, so that a full
 * device never leaves a tree above the order its size needs.  (Lookups
 * use pm_check.c's mpm_tree_page.)
 * Raises the tree's order as needed: new tables above the old root, which
 * becomes their entry 0, published by one store of the root word.  Only
 * for trees nothing maps and one writer changes (the inode lock).
 */
static void *pm_small_page(struct morsel_pm *pm, u64 *rootp, u64 pgoff)
{
	u64 root = READ_ONCE(*rootp), e = root & ~MPM_ROOT_ORDER_MASK, *slot;
	unsigned int order = e ? mpm_root_order(root) : 0, need = 0, level, n;
	u64 pages[2 * MPM_MAX_ORDER + 1];
	void *page = mpm_tree_page(&pm->fs, root, pgoff);

	if (page)
		return page;	/* the common case: one walk, nothing to take */
	while (need <= MPM_MAX_ORDER && mpm_span_pages(need) <= pgoff)
		need++;
	if (need > MPM_MAX_ORDER)
		return NULL;
	n = pm_small_needed(pm, root, pgoff, need);
	for (level = 0; level < n; level++) {
		pages[level] = pm_alloc_page(pm, false);
		if (!pages[level]) {
			while (level--)
				pm_free_page(pm, pages[level]);
			return NULL;
		}
	}
	if (need > order) {
		for (level = order + 1; e && level <= need; level++) {
			morsel_pm_store(pm, pm_addr(pm, pages[--n]), e);
			e = pm_entry(pm, pages[n], false);
		}
		if (e)
			morsel_pm_store(pm, rootp, e | (u64)need << MPM_ROOT_ORDER_SHIFT);
		order = need;
	}
	slot = rootp;
	for (level = order; ; level--) {
		e = READ_ONCE(*slot) & ~(slot == rootp ? MPM_ROOT_ORDER_MASK : 0);
		if (!e) {
			e = pm_entry(pm, pages[--n], level == 0);
			morsel_pm_store(pm, slot, slot == rootp ?
					e | (u64)order << MPM_ROOT_ORDER_SHIFT : e);
		}
		if (level == 0)
			return pm_addr(pm, mpm_entry_page(&pm->fs, e));
		slot = (u64 *)pm_addr(pm, mpm_entry_page(&pm->fs, e)) +
		       (pgoff / mpm_span_pages(level - 1)) % MPM_ENTRIES;
	}
}

/* Free every page of a small tree, post-order, clearing each entry first. */
static void pm_small_free(struct morsel_pm *pm, u64 *slot, int level, u64 mask)
{
	u64 e = READ_ONCE(*slot) & ~mask, p;
	int i;

	if (!e)
		return;
	p = ((e & MPM_E_ADDR) - pm->fs.base) / PAGE_SIZE;
	if (level > 0)
		for (i = 0; i < MPM_ENTRIES; i++)
			pm_small_free(pm, (u64 *)pm_addr(pm, p) + i, level - 1, 0);
	morsel_pm_store(pm, slot, 0);
	pm_free_page(pm, p);
}

/* ---- inode records ---- */

static struct mpm_inode *pm_rec(struct morsel_pm *pm, u64 ino)
{
	return mpm_inode(&pm->fs, ino);
}

/* Store @val in @word unless it holds it already. */
static void pm_set(struct morsel_pm *pm, u64 *word, u64 val)
{
	if (READ_ONCE(*word) != val)
		morsel_pm_store(pm, word, val);
}

static u64 ts_ns(struct timespec64 ts)
{
	return timespec64_to_ns(&ts);
}

static u64 pm_owner(struct inode *inode)
{
	return (u64)i_uid_read(inode) | (u64)i_gid_read(inode) << 32;
}

/*
 * A record for the new @inode (its i_ino becomes the record's number):
 * every word first, the mode last.  Until a name refers to it, a crash
 * leaves an orphan that the next mount reclaims.
 */
int morsel_pm_new_inode(struct inode *inode)
{
	struct morsel_pm *pm = PM(inode->i_sb);
	struct mpm_inode *rec = NULL;
	u64 ino, now;

	mutex_lock(&pm->ino_lock);
	for (ino = max_t(u64, pm->ino_hint, MPM_ROOT_INO + 1); ino <= MPM_MAX_INO; ino++) {
		rec = pm_small_page(pm, &mpm_super(&pm->fs)->itable,
				    ino / MPM_INODES_PER_PAGE);
		if (!rec)
			break;
		rec += ino % MPM_INODES_PER_PAGE;
		if (!READ_ONCE(rec->mode))
			break;
		rec = NULL;
	}
	if (!rec) {
		mutex_unlock(&pm->ino_lock);
		return -ENOSPC;
	}
	now = ts_ns(inode_get_ctime(inode));
	pm_set(pm, &rec->owner, pm_owner(inode));
	pm_set(pm, &rec->size, i_size_read(inode));
	pm_set(pm, &rec->root, 0);
	pm_set(pm, &rec->min_order, 0);
	pm_set(pm, &rec->bound, 0);
	pm_set(pm, &rec->atime, now);
	pm_set(pm, &rec->mtime, now);
	pm_set(pm, &rec->ctime, now);
	pm_set(pm, &rec->btime, now);
	pm_set(pm, &rec->rdev, new_encode_dev(inode->i_rdev));
	pm_set(pm, &rec->punch_start, 0);
	pm_set(pm, &rec->punch_end, 0);
	pm_set(pm, &rec->xattr, 0);
	pm_set(pm, &rec->flags, MORSEL_I(inode)->fsflags);
	pm_set(pm, &rec->resv, 0);	/* a freed record keeps its range */
	morsel_pm_store(pm, &rec->mode, inode->i_mode);
	atomic64_inc(&pm->nr_inodes);
	pm->ino_hint = ino + 1;
	mutex_unlock(&pm->ino_lock);
	inode->i_ino = ino;
	if (S_ISREG(inode->i_mode)) {
		struct morsel *m = inode->i_private;

		m->rootp = &rec->root;
	}
	return 0;
}

/*
 * The inode has no name left and nobody holds it: free its tree (a
 * regular file's was freed by morsel_destroy), then the record (root word,
 * then mode).  A crash in between leaves an orphan the next mount frees.
 */
/* The last steps of freeing record @ino: its attributes, then the mode. */
static void pm_free_record(struct morsel_pm *pm, struct mpm_inode *rec, u64 ino)
{
	pm_small_free(pm, &rec->xattr, 0, 0);
	morsel_pm_store(pm, &rec->mode, 0);
	atomic64_dec(&pm->nr_inodes);
	mutex_lock(&pm->ino_lock);
	pm->ino_hint = min_t(u64, pm->ino_hint, ino);
	mutex_unlock(&pm->ino_lock);
}

void morsel_pm_free_inode(struct inode *inode)
{
	struct morsel_pm *pm = PM(inode->i_sb);
	struct mpm_inode *rec = pm_rec(pm, inode->i_ino);

	if (!rec)
		return;
	pm_small_free(pm, &rec->root, mpm_root_order(rec->root), MPM_ROOT_ORDER_MASK);
	pm_free_record(pm, rec, inode->i_ino);
}

/*
 * Mode, owner and times after a change (each word one store).  Callers
 * hold i_rwsem, except a read's atime update (fs.c's dirty_inode); i_lock
 * orders them, so the last section stores the inode's latest values.
 */
void morsel_pm_sync_inode(struct inode *inode)
{
	struct morsel_pm *pm = PM(inode->i_sb);
	struct mpm_inode *rec = pm_rec(pm, inode->i_ino);

	spin_lock(&inode->i_lock);
	pm_set(pm, &rec->mode, inode->i_mode);
	pm_set(pm, &rec->owner, pm_owner(inode));
	pm_set(pm, &rec->atime, ts_ns(inode_get_atime(inode)));
	pm_set(pm, &rec->mtime, ts_ns(inode_get_mtime(inode)));
	pm_set(pm, &rec->ctime, ts_ns(inode_get_ctime(inode)));
	spin_unlock(&inode->i_lock);
}

void morsel_size_changed(struct inode *inode)
{
	if (sb_pm(inode->i_sb))
		morsel_pm_set_size(inode);
}

void morsel_pm_set_size(struct inode *inode)
{
	struct morsel_pm *pm = PM(inode->i_sb);

	pm_set(pm, &pm_rec(pm, inode->i_ino)->size, i_size_read(inode));
}

/*
 * The record's flags word: chattr's flags and, for a regular file, its own
 * huge-page mode (format 3; 0 when it follows the instance).
 */
void morsel_pm_set_flags(struct inode *inode)
{
	struct morsel *m = S_ISREG(inode->i_mode) ? inode->i_private : NULL;
	unsigned int huge = m ? READ_ONCE(m->huge) : MORSEL_HUGE_INHERIT;
	u64 flags = MORSEL_I(inode)->fsflags;

	if (READ_ONCE(MORSEL_I(inode)->sealed))
		flags |= MPM_FL_SEALED;
	if (huge != MORSEL_HUGE_INHERIT) {
		pm_src_huge_ready(PM(inode->i_sb));
		flags |= (u64)(huge + 1) << MPM_FL_HUGE_SHIFT;
	}
	morsel_pm_set_word(inode, MORSEL_PM_FIELD(flags), flags);
}

void morsel_pm_set_word(struct inode *inode, size_t field, u64 val)
{
	struct morsel_pm *pm = PM(inode->i_sb);

	pm_set(pm, (u64 *)((u8 *)pm_rec(pm, inode->i_ino) + field), val);
}

/*
 * ---- extended attributes ----
 *
 * All of an inode's attributes live in one device page (pm_format.h).  A
 * change, under the inode lock, first gets a zeroed page (so it can fail
 * before the VFS's copy changes), then writes the list after the change
 * into it, commits it with one store of the record's word and frees the
 * old page.  A change that leaves no attribute needs no page.
 */
static size_t pm_xattrs_size(struct simple_xattrs *xs, const char *skip)
{
	struct rb_node *n;
	size_t len = 0;

	read_lock(&xs->lock);
	for (n = rb_first(&xs->rb_root); n; n = rb_next(n)) {
		struct simple_xattr *x = rb_entry(n, struct simple_xattr, rb_node);

		if (strcmp(x->name, skip))
			len += MPM_XATTR_SPACE(strlen(x->name), x->size);
	}
	read_unlock(&xs->lock);
	return len;
}

/*
 * Before setting (@value) or removing @name: -ENOSPC if the list would
 * not fit a page or the device is full; *@page, the page to commit.
 */
int morsel_pm_xattrs_begin(struct inode *inode, struct simple_xattrs *xs,
			   const char *name, const void *value, size_t size,
			   u64 *page)
{
	size_t len = pm_xattrs_size(xs, name);

	if (value)
		len += MPM_XATTR_SPACE(strlen(name), size);
	*page = 0;
	if (len > PAGE_SIZE)
		return -ENOSPC;
	if (len)
		*page = pm_alloc_page(PM(inode->i_sb), false);
	return len && !*page ? -ENOSPC : 0;
}

/* The change failed: give the page back. */
void morsel_pm_xattrs_abort(struct inode *inode, u64 page)
{
	if (page)
		pm_free_page(PM(inode->i_sb), page);
}

/* The VFS's list changed: write it to @page and commit. */
void morsel_pm_xattrs_commit(struct inode *inode, struct simple_xattrs *xs,
			     u64 page)
{
	struct morsel_pm *pm = PM(inode->i_sb);
	struct mpm_inode *rec = pm_rec(pm, inode->i_ino);
	u8 *dst = page ? pm_addr(pm, page) : NULL;
	struct mpm_xattr h = { 0 };
	struct rb_node *n;
	u64 old;

	read_lock(&xs->lock);
	for (n = rb_first(&xs->rb_root); dst && n; n = rb_next(n)) {
		struct simple_xattr *x = rb_entry(n, struct simple_xattr, rb_node);

		h.name_len = strlen(x->name);
		h.value_len = x->size;
		pm_write(pm, dst, &h, sizeof(h));
		pm_write(pm, dst + sizeof(h), x->name, h.name_len);
		pm_write(pm, dst + sizeof(h) + h.name_len, x->value, x->size);
		dst += MPM_XATTR_SPACE(h.name_len, h.value_len);
	}
	read_unlock(&xs->lock);
	old = morsel_pm_xchg(pm, &rec->xattr, page ? pm_entry(pm, page, true) : 0);
	if (old)
		pm_free_page(pm, mpm_entry_page(&pm->fs, old));
}

/* The target goes to the link's one data page; then its size. */
int morsel_pm_symlink(struct inode *inode, const char *target, size_t len)
{
	struct morsel_pm *pm = PM(inode->i_sb);
	struct mpm_inode *rec = pm_rec(pm, inode->i_ino);
	void *page;

	if (len >= PAGE_SIZE)
		return -ENAMETOOLONG;
	page = pm_small_page(pm, &rec->root, 0);
	if (!page)
		return -ENOSPC;
	pm_write(pm, page, target, len);
	pm_set(pm, &rec->size, len);
	return 0;
}

/* ---- names ---- */

/*
 * A free entry of @dir, appending a page (published, then the size) when
 * every page is full.  The directory's i_private remembers the first page
 * that may have room.
 */
static struct mpm_dirent *pm_free_slot(struct morsel_pm *pm, struct inode *dir)
{
	struct mpm_inode *d = pm_rec(pm, dir->i_ino);
	u64 npages = d->size / PAGE_SIZE, p;
	struct mpm_dirent *de;
	int s;

	for (p = (uintptr_t)dir->i_private; p < npages; p++) {
		de = mpm_tree_page(&pm->fs, READ_ONCE(d->root), p);
		for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++)
			if (!READ_ONCE(de[s].word)) {
				dir->i_private = (void *)(uintptr_t)p;
				return &de[s];
			}
	}
	de = pm_small_page(pm, &d->root, npages);
	if (!de)
		return NULL;
	morsel_pm_store(pm, &d->size, (npages + 1) * PAGE_SIZE);
	dir->i_private = (void *)(uintptr_t)npages;
	return de;
}

/* Name, rename words, then the word that makes the entry live. */
static void pm_fill_entry(struct morsel_pm *pm, struct mpm_dirent *de,
			  const struct qstr *name, struct inode *inode,
			  u64 replaces, u64 displaces)
{
	pm_write(pm, de->name, name->name, name->len);
	pm_set(pm, &de->replaces, replaces);
	pm_set(pm, &de->displaces, displaces);
	morsel_pm_store(pm, &de->word,
			mpm_de_word(inode->i_ino, name->len,
				    (inode->i_mode & S_IFMT) >> 12));
}

int morsel_pm_add_name(struct inode *dir, struct dentry *dentry,
		       struct inode *inode)
{
	struct morsel_pm *pm = PM(dir->i_sb);
	struct mpm_dirent *de;

	if (dentry->d_name.len > MPM_NAME_MAX)
		return -ENAMETOOLONG;
	de = pm_free_slot(pm, dir);
	if (!de)
		return -ENOSPC;
	pm_fill_entry(pm, de, &dentry->d_name, inode, 0, 0);
	dentry->d_fsdata = (void *)(uintptr_t)pm_offset(pm, de);
	return 0;
}

static struct mpm_dirent *pm_dentry_slot(struct morsel_pm *pm,
					 struct dentry *dentry)
{
	return (struct mpm_dirent *)(pm->fs.dev + (uintptr_t)dentry->d_fsdata);
}

/* One store removes the name. */
void morsel_pm_remove_name(struct inode *dir, struct dentry *dentry)
{
	struct morsel_pm *pm = PM(dir->i_sb);
	struct mpm_dirent *de = pm_dentry_slot(pm, dentry);
	u64 p = pm_page(pm, de);

	morsel_pm_store(pm, &de->word, 0);
	dentry->d_fsdata = NULL;
	/* The page's index in the directory is not at hand: restart. */
	if (p)
		dir->i_private = NULL;
}

/*
 * The new name is a new entry that says which entries it replaces (the
 * old name) and displaces (an existing target); making it live is the
 * rename's one commit store.  Then the old entries go, then the two words
 * (a mount finishes these steps after a crash).
 */
int morsel_pm_rename(struct inode *old_dir, struct dentry *old_dentry,
		     struct inode *new_dir, struct dentry *new_dentry)
{
	struct morsel_pm *pm = PM(old_dir->i_sb);
	struct mpm_dirent *old = pm_dentry_slot(pm, old_dentry), *over = NULL;
	struct mpm_dirent *de;

	if (new_dentry->d_name.len > MPM_NAME_MAX)
		return -ENAMETOOLONG;
	if (d_really_is_positive(new_dentry))
		over = pm_dentry_slot(pm, new_dentry);
	de = pm_free_slot(pm, new_dir);
	if (!de)
		return -ENOSPC;
	pm_fill_entry(pm, de, &new_dentry->d_name, d_inode(old_dentry),
		      pm_offset(pm, old), over ? pm_offset(pm, over) : 0);
	morsel_pm_store(pm, &old->word, 0);
	if (over)
		morsel_pm_store(pm, &over->word, 0);
	morsel_pm_store(pm, &de->replaces, 0);
	if (over)
		morsel_pm_store(pm, &de->displaces, 0);
	old_dentry->d_fsdata = (void *)(uintptr_t)pm_offset(pm, de);
	old_dir->i_private = NULL;
	return 0;
}

/* ---- the device as the instance's source of memory (source.h) ---- */

static unsigned int pm_src_pages_alloc(void *priv,
				       const struct morsel_place *pl,
				       unsigned int nr, unsigned int held,
				       struct page **pages)
{
	unsigned int got;

	for (got = 0; got < nr; got++) {
		pages[got] = pm_src_page_alloc(priv, pl, got < held);
		if (!pages[got])
			break;
	}
	return got;
}

static int pm_src_page_failed(void *priv, struct page *page)
{
	return morsel_pm_bad_page(priv, page);
}

/*
 * 512 free pages on a 2 MiB boundary of the device, for a 2 MiB leaf
 * (pm_format.h, format 3); the device is 2 MiB aligned (pm->src.huge).
 * The first @held stand for pages a reservation holds: those are given
 * back once the run is taken, so what is in use stays what 512 4 KiB
 * pages would use.  NULL when no such run is free: the caller falls back.
 */
/* The first free run of 512 pages on a 2 MiB boundary in [@from, @to), or 0. */
static u64 pm_free_run(unsigned long *map, u64 from, u64 to)
{
	u64 p;

	for (p = from; p + MPM_HUGE_PAGES <= to; p += MPM_HUGE_PAGES)
		if (find_next_bit(map, p + MPM_HUGE_PAGES, p) >= p + MPM_HUGE_PAGES)
			return p;
	return 0;
}

static struct page *pm_src_huge_alloc(void *priv,
				      const struct morsel_place *pl, int level,
				      unsigned long held)
{
	struct morsel_pm *pm = priv;
	unsigned long *map = (unsigned long *)pm->fs.used;
	u64 n = pm->fs.nr_pages, p, q = 1, start;
	bool reaped = false;

	spin_lock_bh(&pm->alloc_lock);
	/* From the hint on, then from the start: a fault does not rescan all. */
	start = max(round_down(pm->huge_hint, MPM_HUGE_PAGES), MPM_HUGE_PAGES);
again:
	p = pm_free_run(map, start, n);
	if (!p)
		p = pm_free_run(map, MPM_HUGE_PAGES, min(start + MPM_HUGE_PAGES - 1, n));
	if (!p && !reaped && !list_empty(&pm->busy)) {
		pm_reap_busy(pm);
		reaped = true;
		goto again;
	}
	if (!p) {
		spin_unlock_bh(&pm->alloc_lock);
		return NULL;
	}
	pm->huge_hint = p + MPM_HUGE_PAGES;
	bitmap_set(map, p, MPM_HUGE_PAGES);
	while (pm->held && held--) {
		q = find_next_bit(pm->held, n, q);
		if (q >= n)
			break;
		__clear_bit(q, pm->held);
		__clear_bit(q, map);
	}
	spin_unlock_bh(&pm->alloc_lock);
	pm_write(pm, pm_addr(pm, p), NULL, MPM_HUGE_SIZE);
	return virt_to_page(pm_addr(pm, p));
}

/* Format 3 says a tree may hold 2 MiB leaves: before the first one. */
static void pm_src_huge_ready(void *priv)
{
	struct morsel_pm *pm = priv;
	struct mpm_super *super = mpm_super(&pm->fs);

	if (READ_ONCE(super->version) < 3)
		morsel_pm_store(pm, &super->version, 3);
}

static const struct morsel_source_ops pm_source_ops = {
	.table_alloc = pm_src_table_alloc,
	.table_free = pm_src_table_free,
	.table_forget = pm_src_table_forget,
	.page_alloc = pm_src_page_alloc,
	.pages_alloc = pm_src_pages_alloc,
	.page_free = pm_src_page_free,
	.page_failed = pm_src_page_failed,
	.huge_alloc = pm_src_huge_alloc,
	.huge_ready = pm_src_huge_ready,
	.hold = pm_src_hold,
	.unhold = pm_src_unhold,
	.wrote = pm_src_wrote,
	.writeback = pm_src_writeback,
	.flushes = pm_src_flushes,
};

/* ---- mount ---- */

/*
 * The pool page of a shared pool (pm_format.h), or NULL: read before the
 * walk, so only the super block's magic and the word's bounds vouch for it.
 */
static struct mpm_pool_slot *pm_pool_slots(struct morsel_pm *pm)
{
	struct mpm_super *s = mpm_super(&pm->fs);
	u64 pool = READ_ONCE(s->pool) & MPM_E_ADDR, base = READ_ONCE(s->base), page;
	struct mpm_pool_slot *slots;

	if (READ_ONCE(s->magic) != MPM_MAGIC || !pool || pool < base)
		return NULL;
	page = (pool - base) >> PAGE_SHIFT;
	if (!page || page >= pm->fs.nr_pages)
		return NULL;
	slots = pm_addr(pm, page);
	return READ_ONCE(slots[0].magic) == MPM_POOL_MAGIC ? slots : NULL;
}

/*
 * A reader of a shared pool another host writes: no walk, no repair, no
 * allocator; the publisher's entries must already point here (a reader
 * cannot relocate them).
 */
static int pm_mount_reader(struct morsel_pm *pm, struct mpm_pool_slot *slots)
{
	struct morsel_share *sh;
	int err = mpm_open_shared(&pm->fs);

	if (err == -EBUSY)
		pr_err("morselfs: %s: its publisher is moving it\n", pm->path);
	if (err)
		return err;
	if (pm->fs.base != pm->fs.phys) {
		pr_err("morselfs: %s: written for %#llx, here at %#llx: only its publisher can move it\n",
		       pm->path, pm->fs.base, pm->fs.phys);
		return -EOPNOTSUPP;
	}
	sh = morsel_share_claim(pm, &pm->fs, slots, true, false);
	if (IS_ERR(sh))
		return PTR_ERR(sh);
	pm->share = sh;
	pm->reader = true;
	return 0;
}

/* The publisher's mount -o pool of a device without a pool page. */
static int pm_make_pool(struct morsel_pm *pm)
{
	u64 p = pm_alloc_page(pm, false);

	if (!p)
		return -ENOSPC;
	/* The magic, then the word that makes the page the pool's. */
	morsel_pm_store(pm, &((struct mpm_pool_slot *)pm_addr(pm, p))->magic,
			MPM_POOL_MAGIC);
	morsel_pm_store(pm, &mpm_super(&pm->fs)->pool, pm_entry(pm, p, true));
	return 0;
}

int morsel_pm_mount(struct super_block *sb, const char *path, bool pool)
{
	struct morsel_sb *sbi = sb->s_fs_info;
	struct mpm_pool_slot *slots;
	struct morsel_pm *pm;
	struct block_device *bdev;
	u64 start_off = 0, nr;
	void *kaddr;
	pfn_t pfn;
	long avail;
	int id, err;

	/*
	 * With memory encryption (SME, SEV, TDX) the leaves carry the C-bit,
	 * which the format would read as an address bit (review L2): a
	 * device written there could not be mounted anywhere else.
	 */
	if (cc_platform_has(CC_ATTR_MEM_ENCRYPT)) {
		pr_err("morselfs: persistent instances are not supported with memory encryption\n");
		return -EOPNOTSUPP;
	}
	pm = kzalloc(sizeof(*pm), GFP_KERNEL);
	if (!pm)
		return -ENOMEM;
	spin_lock_init(&pm->alloc_lock);
	INIT_LIST_HEAD(&pm->busy);
	mutex_init(&pm->ino_lock);
	mutex_init(&pm->bad_lock);
	pm->sbi = sbi;
	pm->src = (struct morsel_source){
		.ops = &pm_source_ops,
		.priv = pm,
		.full_errno = -ENOSPC,
		.batch = PTRS_PER_PTE,
		.root_table = true,
		.keeps_failed = true,
	};
	pm->path = kstrdup(path, GFP_KERNEL);
	if (!pm->path) {
		kfree(pm);
		return -ENOMEM;
	}
	/*
	 * As a block file system opens its device (review 2026-11b L3):
	 * BLK_OPEN_RESTRICT_WRITES refuses other writers (the block layer
	 * writes the tables the MMU walks) where the administrator asked for
	 * it (bdev_allow_write_mounted=0, CONFIG_BLK_DEV_WRITE_MOUNTED=n),
	 * and fs_holder_ops tell the instance when the device goes away
	 * (morsel_pm_shutdown).
	 */
	pm->bdev_file = bdev_file_open_by_path(path, sb_rdonly(sb) ? BLK_OPEN_READ :
					       BLK_OPEN_READ | BLK_OPEN_WRITE |
					       BLK_OPEN_RESTRICT_WRITES,
					       sb, &fs_holder_ops);
	if (IS_ERR(pm->bdev_file)) {
		err = PTR_ERR(pm->bdev_file);
		pm->bdev_file = NULL;
		goto fail;
	}
	bdev = file_bdev(pm->bdev_file);
	err = -EINVAL;
	pm->dax = fs_dax_get_by_bdev(bdev, &start_off, sb, &pm_holder_ops);
	if (!pm->dax) {
		pr_err("morselfs: %s is not a DAX device (an fsdax pmem namespace)\n", path);
		goto fail;
	}
	nr = bdev_nr_bytes(bdev) >> PAGE_SHIFT;
	id = dax_read_lock();
	avail = dax_direct_access(pm->dax, start_off >> PAGE_SHIFT, nr, DAX_ACCESS,
				  &kaddr, &pfn);
	dax_read_unlock(id);
	if (avail < 0 || avail < nr) {
		pr_err("morselfs: %s: only %ld of %llu pages are accessible\n",
		       path, avail, nr);
		err = avail < 0 ? avail : -EIO;
		goto fail;
	}
	pm->fs.phys = PFN_PHYS(pfn_t_to_pfn(pfn));
	if (kaddr != __va(pm->fs.phys)) {
		pr_err("morselfs: %s is not in the direct map\n", path);
		goto fail;
	}
	/*
	 * The device's pages must outlive the mount: page references do not
	 * hold the pgmap, so without this an unbind would remove the direct
	 * map under tables the MMU walks.
	 */
	pm->pgmap = get_dev_pagemap(pfn_t_to_pfn(pfn), NULL);
	if (!pm->pgmap) {
		pr_err("morselfs: %s has no device pages\n", path);
		goto fail;
	}
	pm->flush = dax_write_cache_enabled(pm->dax);
	pm->start_off = start_off;
	pm->fs.dev = kaddr;
	pm->fs.nr_pages = nr;
	pm->fs.repair = true;
	pm->fs.max_order = morsel_max_order();
	/*
	 * A shared pool (pm_share.c): a read-only mount is a reader; a
	 * read-write one takes the writer's claim before the walk stores.
	 */
	slots = pm_pool_slots(pm);
	if (sb_rdonly(sb) && (slots || pool)) {
		err = slots ? pm_mount_reader(pm, slots) : -EINVAL;
		if (!slots)
			pr_err("morselfs: %s has no pool (the publisher's mount -o pool makes one)\n",
			       path);
		if (err)
			goto fail;
		goto done;
	}
	if (slots) {
		pm->share = morsel_share_claim(pm, &pm->fs, slots, false,
					       READ_ONCE(mpm_super(&pm->fs)->base) != pm->fs.phys);
		if (IS_ERR(pm->share)) {
			err = PTR_ERR(pm->share);
			pm->share = NULL;
			goto fail;
		}
	}
	err = mpm_walk(&pm->fs);
	if (err == -EINVAL)
		pr_err("morselfs: %s holds no morselfs (morsel mkfs formats it)\n", path);
	if (err)
		goto fail;
	if ((pm->fs.st.too_high || pm->fs.st.unaligned) &&
	    pm->fs.st.too_high + pm->fs.st.unaligned == pm->fs.st.errors) {
		if (pm->fs.st.too_high)
			pr_err("morselfs: %s: %llu files need 5-level paging\n",
			       path, pm->fs.st.too_high);
		if (pm->fs.st.unaligned)
			pr_err("morselfs: %s: %llu 2 MiB leaves need the device on a 2 MiB boundary, not at %#llx\n",
			       path, pm->fs.st.unaligned, pm->fs.phys);
		err = -EOPNOTSUPP;
		goto fail;
	}
	if (pm->fs.st.errors) {
		pr_err("morselfs: %s: %llu errors; morsel fsck lists them\n",
		       path, pm->fs.st.errors);
		err = -EUCLEAN;
		goto fail;
	}
	if (mpm_needs_recovery(&pm->fs.st))
		pr_info("morselfs: %s recovered: %llu orphans, %llu renames, %llu punches, %llu pages freed, %llu entries relocated, %llu trees lowered, %llu failed pages marked\n",
			path, pm->fs.st.orphans, pm->fs.st.renames,
			pm->fs.st.punches, pm->fs.st.leaked_pages,
			pm->fs.st.relocated, pm->fs.st.lowered,
			pm->fs.st.poisonings);
	if (pm->fs.st.bad_pages)
		pr_info("morselfs: %s: %llu failed pages are not used\n",
			path, pm->fs.st.bad_pages);
	mutex_lock(&pm_leftover_lock);
	pm_leftover_drop(pm);
	mutex_unlock(&pm_leftover_lock);
	pm->hint = 1;
	pm->ino_hint = MPM_ROOT_INO + 1;
	if (pm->fs.st.kept)
		pr_info("morselfs: %s: %llu deleted files wait for their readers\n",
			path, pm->fs.st.kept);
	if (pool && !slots) {
		err = pm_make_pool(pm);
		slots = pm_pool_slots(pm);
		if (!err) {
			pm->share = morsel_share_claim(pm, &pm->fs, slots, false, false);
			err = PTR_ERR_OR_ZERO(pm->share);
		}
		if (err) {
			pm->share = NULL;
			goto fail;
		}
	}
	if (pm->share)
		morsel_share_zombies(pm->share);
	/* A leaf's address must be 2 MiB aligned for the MMU. */
	pm->src.huge = IS_ALIGNED(pm->fs.phys, PMD_SIZE) ? BIT(1) : 0;
	atomic64_set(&pm->nr_inodes, pm->fs.st.inodes);
done:
	sbi->pm = pm;
	sbi->src = &pm->src;
	return 0;
fail:
	if (pm->share)
		morsel_share_end(pm->share, false);
	mpm_fs_release(&pm->fs);
	if (pm->pgmap)
		put_dev_pagemap(pm->pgmap);
	if (pm->dax)
		fs_put_dax(pm->dax, sb);
	if (pm->bdev_file)
		bdev_fput(pm->bdev_file);
	kfree(pm->path);
	kfree(pm);
	return err;
}

static struct timespec64 ns_ts(u64 ns)
{
	return ns_to_timespec64(ns);
}

/*
 * A pool reader's inodes are told apart by number and birth time: the
 * publisher may free a record and give its number to a new file while
 * the reader still has the old inode.
 */
struct pm_key {
	u64 ino, btime;
};

static int pm_key_test(struct inode *inode, void *data)
{
	const struct pm_key *k = data;

	return inode->i_ino == k->ino &&
	       timespec64_to_ns(&MORSEL_I(inode)->btime) == k->btime;
}

static int pm_key_set(struct inode *inode, void *data)
{
	const struct pm_key *k = data;

	inode->i_ino = k->ino;
	MORSEL_I(inode)->btime = ns_to_timespec64(k->btime);
	return 0;
}

/* The VFS inode of record @ino (one per inode, whatever its names). */
static struct inode *pm_iget(struct super_block *sb, u64 ino)
{
	struct morsel_pm *pm = PM(sb);
	struct mpm_inode *rec = pm_rec(pm, ino);
	struct pm_key key = { ino, 0 };
	const struct mpm_xattr *x;
	struct inode *inode;
	int err;

	if (!rec)
		return ERR_PTR(-ESTALE);
	if (pm->reader) {
		key.btime = READ_ONCE(rec->btime);
		inode = iget5_locked(sb, ino, pm_key_test, pm_key_set, &key);
	} else {
		inode = iget_locked(sb, ino);
	}
	if (!inode)
		return ERR_PTR(-ENOMEM);
	if (!(inode->i_state & I_NEW))
		return inode;
	err = morsel_setup_inode(inode, rec->mode, new_decode_dev(rec->rdev));
	for (x = NULL; !err && (x = mpm_xattr_next(&pm->fs, rec, x)); )
		err = morsel_xattr_load(inode, mpm_xattr_name(x), x->name_len,
					mpm_xattr_value(x), x->value_len);
	if (err) {
		iget_failed(inode);
		return ERR_PTR(err);
	}
	i_uid_write(inode, (u32)rec->owner);
	i_gid_write(inode, rec->owner >> 32);
	inode->i_size = S_ISDIR(rec->mode) ? 0 : rec->size;
	inode_set_atime_to_ts(inode, ns_ts(rec->atime));
	inode_set_mtime_to_ts(inode, ns_ts(rec->mtime));
	inode_set_ctime_to_ts(inode, ns_ts(rec->ctime));
	MORSEL_I(inode)->btime = ns_ts(pm->reader ? key.btime : rec->btime);
	morsel_set_fsflags(inode, rec->flags & MPM_FLAGS_KNOWN);
	if (!S_ISDIR(inode->i_mode))
		set_nlink(inode, pm->reader ? 1 : mpm_links(&pm->fs, ino));
	if (pm->reader && S_ISDIR(inode->i_mode)) {
		inode->i_op = &morsel_share_dir_iops;
		inode->i_fop = &morsel_share_dir_fops;
	}
	if (S_ISREG(inode->i_mode) && (rec->flags & MPM_FL_SEALED)) {
		MORSEL_I(inode)->sealed = true;
		mapping_deny_writable(inode->i_mapping);	/* nothing maps it yet */
	}
	if (S_ISREG(inode->i_mode)) {
		struct morsel *m = inode->i_private;
		int order = morsel_order_for_size(rec->size);
		u64 huge = (rec->flags & MPM_FL_HUGE_MASK) >> MPM_FL_HUGE_SHIFT;

		m->huge = huge ? huge - 1 : MORSEL_HUGE_INHERIT;
		/*
		 * A pool reader's morsel takes the tree only while it holds
		 * a lease on it, from its first open to its last close
		 * (pm_share.c): the publisher may free it after that.
		 */
		if (!pm->reader)
			m->rootp = &rec->root;
		m->min_order = rec->min_order;
		m->bound = rec->bound;
		if (rec->root)
			m->order = mpm_root_order(rec->root);
		else
			m->order = max3(order, (int)rec->min_order,
					(int)mpm_order_for_size(mpm_resv_end(rec->resv)));
		if (!pm->reader && morsel_adopt_tree(m)) {
			iget_failed(inode);
			return ERR_PTR(-ENOMEM);
		}
		if (!pm->reader && morsel_resv_load(m, rec->resv)) {
			pr_warn("morselfs: %s: inode %llu: its reservation no longer fits; dropped\n",
				pm->path, ino);
			pm_set(pm, &rec->resv, 0);
		}
	} else if (S_ISLNK(inode->i_mode)) {
		void *page = mpm_tree_page(&pm->fs, rec->root, 0);

		inode->i_link = kmemdup_nul(page ? page : "", page ? rec->size : 0,
					    GFP_KERNEL);
		if (!inode->i_link) {
			iget_failed(inode);
			return ERR_PTR(-ENOMEM);
		}
	}
	morsel_account_loaded(inode);
	unlock_new_inode(inode);
	return inode;
}

struct pm_load {
	struct list_head node;
	struct dentry *dentry;
};

/* Give the directory @parent a dentry for every live entry on the device. */
static int pm_load_dir(struct super_block *sb, struct dentry *parent,
		       struct list_head *todo, char *name)
{
	struct morsel_pm *pm = PM(sb);
	struct inode *dir = d_inode(parent);
	struct mpm_inode *d = pm_rec(pm, dir->i_ino);
	u64 p;
	int s;

	for (p = 0; p < d->size / PAGE_SIZE; p++) {
		struct mpm_dirent *de = mpm_tree_page(&pm->fs, READ_ONCE(d->root), p);

		for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
			u64 word = READ_ONCE(de->word);
			struct inode *inode;
			struct dentry *dentry;
			struct pm_load *l;

			if (!word)
				continue;
			memcpy(name, de->name, mpm_de_len(word));
			name[mpm_de_len(word)] = 0;
			inode = pm_iget(sb, mpm_de_ino(word));
			if (IS_ERR(inode))
				return PTR_ERR(inode);
			dentry = d_alloc_name(parent, name);
			if (!dentry) {
				iput(inode);
				return -ENOMEM;
			}
			dentry->d_fsdata = (void *)(uintptr_t)pm_offset(pm, de);
			d_add(dentry, inode);	/* pinned, as ramfs's */
			if (!S_ISDIR(inode->i_mode))
				continue;
			inc_nlink(dir);
			l = kmalloc(sizeof(*l), GFP_KERNEL);
			if (!l)
				return -ENOMEM;
			l->dentry = dentry;
			list_add_tail(&l->node, todo);
		}
	}
	return 0;
}

/* The root directory with every name under it, breadth first. */
struct inode *morsel_pm_load(struct super_block *sb)
{
	struct morsel_pm *pm = PM(sb);
	struct pm_load *l;
	LIST_HEAD(todo);
	struct inode *root;
	char *name;
	int err = 0;

	root = pm_iget(sb, MPM_ROOT_INO);
	if (IS_ERR(root))
		return root;
	if (pm->reader)		/* names are looked up as asked (pm_share.c) */
		sb->s_d_op = &morsel_share_dops;
	sb->s_root = d_make_root(root);
	if (!sb->s_root)
		return ERR_PTR(-ENOMEM);
	if (pm->reader)
		goto live;
	name = kmalloc(MPM_NAME_MAX + 1, GFP_KERNEL);
	if (!name)
		return ERR_PTR(-ENOMEM);
	err = pm_load_dir(sb, sb->s_root, &todo, name);
	/* Directories found on the way join the end of the list. */
	while (!list_empty(&todo)) {
		l = list_first_entry(&todo, struct pm_load, node);
		if (!err)
			err = pm_load_dir(sb, l->dentry, &todo, name);
		list_del(&l->node);
		kfree(l);
	}
	kfree(name);
	mpm_free(pm->fs.links);
	pm->fs.links = NULL;
	if (err)
		return ERR_PTR(err);
live:
	if (pm->share) {
		morsel_share_run(pm->share);
		pm->share_ran = true;
	}
	mutex_lock(&pm_failure_lock);
	pm->live = true;
	mutex_unlock(&pm_failure_lock);
	return root;
}

/*
 * The device is going away (fs_holder_ops' mark_dead: the namespace is
 * being disabled or removed).  The removal waits until the device's pages
 * are no longer used, and they are while the instance is mounted (the
 * mount holds the pgmap: morsel_pm_mount), so the administrator is told
 * to unmount.
 */
void morsel_pm_shutdown(struct super_block *sb)
{
	struct morsel_pm *pm = PM(sb);

	if (pm)
		pr_warn("morselfs: %s is being removed; the removal finishes when it is unmounted\n",
			pm->path);
}

void morsel_pm_unmount(struct super_block *sb)
{
	struct morsel_pm *pm = PM(sb);

	if (!pm)
		return;
	mutex_lock(&pm_failure_lock);
	pm->live = false;
	mutex_unlock(&pm_failure_lock);
	if (pm->share)
		morsel_share_end(pm->share, pm->share_ran);
	if (pm->bad)
		morsel_forget(pm->bad);
	rcu_barrier();		/* tables waiting for a grace period */
	pm_leave_busy(pm);
	mpm_fs_release(&pm->fs);
	kvfree(pm->held);
	put_dev_pagemap(pm->pgmap);
	/* No failure notification is in flight when the holder goes. */
	mutex_lock(&pm_failure_lock);
	fs_put_dax(pm->dax, sb);
	mutex_unlock(&pm_failure_lock);
	bdev_fput(pm->bdev_file);
	kfree(pm->path);
	kfree(pm);
}

struct morsel_share *morsel_pm_share(struct super_block *sb)
{
	return PM(sb)->share;
}

bool morsel_pm_reader(struct super_block *sb)
{
	return sb_pm(sb) && PM(sb)->reader;
}

struct inode *morsel_pm_iget(struct super_block *sb, u64 ino)
{
	return pm_iget(sb, ino);
}

/*
 * Evicting a sealed file without a name on a pool's publisher: true when
 * a reader leases it, and then its record and tree stay (pm_share.c).
 */
bool morsel_pm_defer(struct inode *inode)
{
	struct morsel_pm *pm = PM(inode->i_sb);

	return pm->share && !pm->reader && morsel_share_defer(pm->share, inode->i_ino);
}

/*
 * Free a tree nobody reaches any more (its root word cleared, as a crash
 * would leave it): tables after what they point to; data pages as
 * pm_src_page_free does, so that a pinned one waits.
 */
static void pm_tree_drop(struct morsel_pm *pm, u64 e, int level)
{
	u64 p = e && e != MPM_POISON ? mpm_entry_page(&pm->fs, e) : 0;
	int i;

	if (!p)
		return;		/* a failed page stays in the bad-page tree */
	if (level == 1 && (e & MPM_E_HUGE)) {
		for (i = 0; i < MPM_HUGE_PAGES; i++)
			pm_src_page_free(pm, virt_to_page(pm_addr(pm, p + i)));
		return;
	}
	if (!level) {
		pm_src_page_free(pm, virt_to_page(pm_addr(pm, p)));
		return;
	}
	for (i = 0; i < MPM_ENTRIES; i++)
		pm_tree_drop(pm, READ_ONCE(((u64 *)pm_addr(pm, p))[i]), level - 1);
	cond_resched();
	pm_free_page(pm, p);
}

/*
 * A deleted file's record and tree, kept while readers leased it and now
 * free (pm_share.c's zombies): no inode of this mount holds it.  The root
 * word first, then the pages, the attributes, the mode: each prefix is an
 * orphan the next mount frees.
 */
void morsel_pm_free_orphan(struct morsel_pm *pm, u64 ino)
{
	struct mpm_inode *rec = pm_rec(pm, ino);
	u64 root;

	if (!rec || !READ_ONCE(rec->mode))
		return;
	root = READ_ONCE(rec->root);
	morsel_pm_store(pm, &rec->root, 0);
	pm_tree_drop(pm, root & ~MPM_ROOT_ORDER_MASK, mpm_root_order(root));
	pm_free_record(pm, rec, ino);
}

const char *morsel_pm_path(struct super_block *sb)
{
	return PM(sb)->path;
}

/*
 * statfs: the device's pages, the free ones from the allocator.  Inodes:
 * the allocated records plus as many new ones as the free pages can hold
 * (xfs bounds its free inodes by its free space too).  An empty file takes
 * a record (1/MPM_INODES_PER_PAGE of a page) and a directory entry
 * (1/MPM_DIRENTS_PER_PAGE); one more share for the tables above them
 * gives 448 / 47, about 9.5 new files per free page.  Without the bound
 * every device showed four billion free inodes, and a program that
 * creates files until statfs says none are left (fstests' generic/558)
 * ran for hours.
 */
void morsel_pm_statfs(struct super_block *sb, u64 *blocks, u64 *bfree,
		      u64 *files, u64 *ffree)
{
	struct morsel_pm *pm = PM(sb);
	unsigned long used;
	u64 inodes;

	spin_lock_bh(&pm->alloc_lock);
	used = pm->fs.used ? bitmap_weight((unsigned long *)pm->fs.used,
					   pm->fs.nr_pages) : pm->fs.nr_pages;
	spin_unlock_bh(&pm->alloc_lock);
	*blocks = pm->fs.nr_pages;
	*bfree = pm->fs.nr_pages - used;
	inodes = atomic64_read(&pm->nr_inodes);
	*ffree = min_t(u64, MPM_MAX_INO - inodes,
		       div_u64(*bfree * MPM_INODES_PER_PAGE *
			       MPM_DIRENTS_PER_PAGE,
			       MPM_INODES_PER_PAGE + MPM_DIRENTS_PER_PAGE + 1));
	*files = inodes + *ffree;
}
