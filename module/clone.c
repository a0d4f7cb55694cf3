// SPDX-License-Identifier: GPL-2.0
/*
 * Clones: FICLONE, FICLONERANGE, cp --reflink and copy_file_range between
 * files of one volatile instance (->remap_file_range).  The destination
 * range shares what the source range holds, whole PTE tables where the
 * offsets allow it (tree.c: morsel_clone); the first write to either side
 * gives that side its own copy (tree.c: morsel_unshare).  A persistent
 * instance answers EOPNOTSUPP (docs/design.md), deduplication too (there
 * is no page cache to compare through, and tmpfs has none either).
 *
 * Locking: both inode locks (lock_two_nondirectories), then, after the
 * destination range was punched (which takes its invalidate lock), both
 * invalidate locks, so that no read, write, fallocate or page-by-page
 * fault runs on either file; then both m->locks (by address), which keep
 * mounted faults and the order out.  A morsel is marked cow before its
 * first clone, and the clone waits for mounted faults that walked it
 * without m->lock (morsel_walk_srcu) before it takes any.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/srcu.h>

#include "morsel.h"

/* Both m->locks, as morsel_walk_lock, in address order. */
static void lock_two(struct morsel *a, struct morsel *b)
{
	if (a == b) {
		morsel_walk_lock(a);
		return;
	}
	if (a > b)
		swap(a, b);
	mutex_lock(&a->lock);
	mutex_lock_nested(&b->lock, SINGLE_DEPTH_NESTING);
}

static void unlock_two(struct morsel *a, struct morsel *b)
{
	if (a == b) {
		morsel_walk_unlock(a);
		return;
	}
	mutex_unlock(&a->lock);
	mutex_unlock(&b->lock);
}

/*
 * From now on every walker of @m takes m->lock (tree.c); those that
 * started without it are waited for.  Caller holds the inode lock and no
 * m->lock (a fault without it may wait for one: publish_root).
 */
static void cow_on(struct morsel *a, struct morsel *b)
{
	if (READ_ONCE(a->cow) && READ_ONCE(b->cow))
		return;
	WRITE_ONCE(a->sbi->cloned, true);	/* before a page is shared */
	WRITE_ONCE(a->cow, true);
	WRITE_ONCE(b->cow, true);
	synchronize_srcu(&morsel_walk_srcu);
}

/*
 * The clone itself; @prep: the VFS's checks and updates first (a user's
 * clone), or none (a fork's clone of anonymous memory: the whole file, to
 * a new one, which RLIMIT_FSIZE must not limit, as it does not limit
 * anonymous memory).
 */
static loff_t remap(struct file *file_in, loff_t pos_in,
		    struct file *file_out, loff_t pos_out, loff_t len,
		    unsigned int flags, bool prep)
{
	struct inode *src = file_inode(file_in), *dst = file_inode(file_out);
	struct morsel *ms = src->i_private, *md = dst->i_private;
	loff_t size, ret = 0;
	u64 plen;

	lock_two_nondirectories(src, dst);
	if (READ_ONCE(MORSEL_I(dst)->sealed)) {	/* MORSEL_IOC_SEAL */
		ret = -EPERM;
		goto out;
	}
	if (prep)
		ret = generic_remap_file_range_prep(file_in, pos_in, file_out,
						    pos_out, &len, flags);
	else
		len = i_size_read(src);
	if (ret || !len)
		goto out;
	plen = PAGE_ALIGN(len);
	cow_on(ms, md);
	ret = morsel_grow_order(md, pos_out + len);
	if (ret)
		goto out;
	/* What the destination held goes; past its end it reads zeros. */
	size = i_size_read(dst);
	if (pos_out < size)
		ret = morsel_evict(dst, size, pos_out,
				   min_t(loff_t, pos_out + plen, size));
	else
		morsel_zero_past_size(dst, pos_out);
	if (ret)
		goto fit;
	filemap_invalidate_lock_two(src->i_mapping, dst->i_mapping);
	lock_two(ms, md);
	ret = morsel_clone(md, pos_out, ms, pos_in, plen);
	/*
	 * Every mapper of either range loses its translations: the
	 * source's may not write any more, the destination's see the new
	 * content.  Mounted VMAs mount again at their next access.
	 */
	unmap_mapping_range(src->i_mapping, pos_in, plen, 0);
	unmap_mapping_range(dst->i_mapping, pos_out, plen, 0);
	if (!ret && pos_out + len > i_size_read(dst)) {
		i_size_write(dst, pos_out + len);
		morsel_size_changed(dst);
	}
	unlock_two(ms, md);
	filemap_invalidate_unlock_two(src->i_mapping, dst->i_mapping);
	if (!ret)
		ret = len;
fit:
	if (ret < 0)
		morsel_fit_order(dst);
out:
	unlock_two_nondirectories(src, dst);
	return ret;
}

loff_t morsel_remap_file_range(struct file *file_in, loff_t pos_in,
			       struct file *file_out, loff_t pos_out,
			       loff_t len, unsigned int flags)
{
	if (flags & ~(REMAP_FILE_DEDUP | REMAP_FILE_ADVISORY))
		return -EINVAL;
	if ((flags & REMAP_FILE_DEDUP) || sb_pm(file_inode(file_in)->i_sb))
		return -EOPNOTSUPP;
	return remap(file_in, pos_in, file_out, pos_out, len, flags, true);
}

/**
 * morsel_clone_anon - let @to, new and as long, share all of @from
 *
 * For a fork of anonymous memory (anon.c), in a volatile instance.
 * Return: the length cloned, or -errno (-ENOMEM, -ENOSPC, -EINTR).
 */
loff_t morsel_clone_anon(struct file *from, struct file *to)
{
	return remap(from, 0, to, 0, 0, 0, false);
}
