// SPDX-License-Identifier: GPL-2.0
/*
 * Memory errors: a data page of a morsel that failed leaves the morsel,
 * and every mapper that touches its offset gets SIGBUS.
 *
 * memory_failure() (a machine check, madvise(MADV_HWPOISON), the debugfs
 * injector) cannot classify a morsel page: it is not on the LRU and has no
 * ->mapping.  Kernel patch 0009 offers such a page to the owners on its
 * notifier chain, with PG_hwpoison already set and one reference held for
 * memory_failure(), which it keeps for good: the page is never allocated
 * again.  To find the owner, every data page a tree holds carries its
 * morsel's id in page->private and its page offset in page->index (tree.c
 * sets them before publishing the page and clears them before letting it
 * go); @morsel_ids turns the id into the file's inode.  Both words are only hints:
 * morsel_poison() takes the page only if the tree still maps it there.
 *
 * The leaf becomes MORSEL_POISON (tree.c), so mounted mappers fault
 * (VM_FAULT_HWPOISON: SIGBUS with BUS_MCEERR_AR and the page's address),
 * page-by-page mappings refault, read and write of the page give -EIO,
 * and a punch, truncation or unlink of the page clears the poison (the
 * offset is a hole again).  Private copies a process already made are its
 * own pages and stay.  The page counts no more against size= or the
 * morsel's pages; its memory cgroup charge goes with unpoison_memory().
 * Persistent pages are ZONE_DEVICE memory, which memory_failure() hands to
 * the device's holder instead (pm.c: pm_notify_failure), which comes here
 * for a file's page; morsel_poison() records it on the device first.
 *
 * Locking: @morsel_ids is an allocating xarray (its own lock; readers use
 * RCU).  The notifier runs under memory_failure()'s mf_mutex in process
 * context.  It pins the file under RCU: an active reference to the super
 * block (so an unmount waits) and igrab() (which refuses an inode being
 * evicted; morsel_destroy() erases the id before it frees any page).  Then
 * the invalidate lock exclusive, which keeps page-by-page faults out, and
 * the page lock, which such a fault holds from its lookup until the
 * generic code installed its PTE (file.c), so none maps the page after it
 * was unmapped; in morsel_poison() m->lock and the PTE table's split lock:
 * mf_mutex -> invalidate lock -> page lock -> m->lock -> PTE lock,
 * i_mmap_rwsem, mmu notifiers, as eviction takes them.  No path calls
 * memory_failure() with a lock of ours held (madvise's GUP has returned;
 * the injector is a debugfs write).
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/notifier.h>
#include <linux/pagemap.h>
#include <linux/rcupdate.h>
#include <linux/xarray.h>

#include "morsel.h"

#ifndef CONFIG_MEMORY_FAILURE
#error "morselfs needs CONFIG_MEMORY_FAILURE and kernel patch 0009"
#endif

static DEFINE_XARRAY_ALLOC1(morsel_ids);

/*
 * Give @m an id before its first page is owned (tree.c: population and
 * adopting a device's tree), not at creation: creating and destroying a
 * morsel that never holds a page do not touch @morsel_ids.  Lock-free
 * like population: of two racing callers, one id wins and the other is
 * erased again.  A morsel without a file (pm.c's bad-page list) has none.
 * Return: 0 or -ENOMEM/-EBUSY.
 */
int morsel_memerr_add(struct morsel *m)
{
	u32 id;
	int err;

	if (READ_ONCE(m->id) || !m->inode)
		return 0;
	err = xa_alloc(&morsel_ids, &id, m->inode, xa_limit_32b, GFP_KERNEL);
	if (err)
		return err;
	if (cmpxchg(&m->id, 0, id))
		xa_erase(&morsel_ids, id);
	return 0;
}

/* @m is being freed: no failure can find it from here on. */
void morsel_memerr_del(struct morsel *m)
{
	if (m->id)
		xa_erase(&morsel_ids, m->id);
	m->id = 0;
}

/*
 * The file whose morsel has id @id, pinned (inode and an active super
 * block), or NULL.
 */
static struct inode *memerr_file(unsigned long id)
{
	struct super_block *sb;
	struct inode *inode;

	if (!id || id > U32_MAX)
		return NULL;
	rcu_read_lock();
	inode = xa_load(&morsel_ids, id);	/* freed after a grace period */
	sb = inode ? inode->i_sb : NULL;	/* so is a super block */
	if (sb && !atomic_inc_not_zero(&sb->s_active))
		inode = NULL;
	if (inode && !igrab(inode)) {
		inode = NULL;
		rcu_read_unlock();
		deactivate_super(sb);
		return NULL;
	}
	rcu_read_unlock();
	return inode;
}

/*
 * Take @page out of every file of @sb that ever took part in a clone, at
 * every offset that holds it (clone.c shares pages between files and
 * within one).  Each file pinned as in drop_pagecache_sb(), with the
 * locks memerr_take() holds for the named file.  Return: how many
 * offsets took it.
 */
static unsigned int memerr_shared(struct super_block *sb, struct page *page)
{
	struct inode *inode, *toput = NULL;
	unsigned int n = 0;

	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		struct morsel *m = inode->i_private;

		spin_lock(&inode->i_lock);
		if ((inode->i_state & (I_FREEING | I_WILL_FREE | I_NEW)) ||
		    !S_ISREG(inode->i_mode) || !m || !READ_ONCE(m->cow)) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		iput(toput);
		toput = inode;
		filemap_invalidate_lock(inode->i_mapping);
		lock_page(page);
		if (inode->i_private)
			n += morsel_poison_shared(inode->i_private, page);
		unlock_page(page);
		filemap_invalidate_unlock(inode->i_mapping);
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(toput);
	return n;
}

struct memerr_search {
	struct page *page;
	unsigned int taken;
};

static void memerr_search_sb(struct super_block *sb, void *arg)
{
	struct memerr_search *s = arg;

	if (READ_ONCE(((struct morsel_sb *)sb->s_fs_info)->cloned))
		s->taken += memerr_shared(sb, s->page);
}

/**
 * morsel_memerr_take - take the failed @page out of the file holding it
 * @page: a page memory_failure() reported, referenced by the caller
 * @sb:   the instance it must belong to (a device's, pm.c), or NULL
 *
 * Return: whether a file held it (and now holds its poison leaf).
 */
bool morsel_memerr_take(struct page *page, struct super_block *sb)
{
	u64 off = (u64)READ_ONCE(page->index) << PAGE_SHIFT;
	struct inode *inode;
	struct super_block *isb;
	bool taken;

	inode = memerr_file((u32)READ_ONCE(page->private));	/* id: tree.c */
	if (!inode)
		goto search;
	isb = inode->i_sb;
	filemap_invalidate_lock(inode->i_mapping);
	lock_page(page);	/* a page-by-page fault installs its PTE first */
	taken = (!sb || isb == sb) && inode->i_private &&
		morsel_poison(inode->i_private, off, page);
	unlock_page(page);
	filemap_invalidate_unlock(inode->i_mapping);
	iput(inode);
	/* Clones may hold it too, in this instance only. */
	if (taken && READ_ONCE(((struct morsel_sb *)isb->s_fs_info)->cloned))
		memerr_shared(isb, page);
	deactivate_super(isb);
	if (taken)
		return true;
search:
	/*
	 * The file it names let go of it, but a clone may still hold it
	 * (the page keeps the first owner's id): every instance that ever
	 * cloned is searched.  Not for a device's page (@sb: no clones).
	 */
	if (!sb) {
		struct memerr_search s = { .page = page };

		iterate_supers_type(&morselfs_type, memerr_search_sb, &s);
		return s.taken;
	}
	return false;
}

static int memerr_notify(struct notifier_block *nb, unsigned long action,
			 void *data)
{
	struct mf_owner_info *info = data;

	if (!morsel_memerr_take(info->page, NULL))
		return NOTIFY_DONE;
	/* Unmapped everywhere; an access faults and gets SIGBUS. */
	info->result = MF_DELAYED;
	return NOTIFY_STOP;
}

static struct notifier_block memerr_nb = {
	.notifier_call = memerr_notify,
};

int morsel_memerr_init(void)
{
	return register_memory_failure_notifier(&memerr_nb);
}

void morsel_memerr_exit(void)
{
	unregister_memory_failure_notifier(&memerr_nb);
}
