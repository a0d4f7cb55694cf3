// SPDX-License-Identifier: GPL-2.0
/*
 * File operations of a morsel: where mmap places it, read and write (and
 * with them splice, sendfile and copy_file_range), and fallocate.
 *
 * A shared mmap maps a whole extent at an extent-aligned address and is
 * mounted (mount.c): f_op->mmap_len rounds the length up to the extent of
 * the morsel's order, or of the smallest order that holds a longer length
 * (the morsel's order rises to it: a program may map more than the file
 * holds and grow the file later).  A bound morsel (ioctl.c) is always
 * mapped at its address.
 *
 * A private mmap, and a shared one at an offset (SQLite maps its -shm file
 * in 32 KiB pieces at their offsets), is an ordinary file mapping of any
 * length: it faults page by page (morsel_paged_fault takes a reference on
 * the morsel's page, populating it if needed).  For a private mapping the
 * generic code copies a page on the first write, so the morsel never
 * changes; a shared one writes the morsel's page itself.  Eviction and
 * truncation zap these mappings (morsel_zap_paged) after the pages left
 * the tree.
 *
 * read and write copy page by page between the user buffer and the
 * morsel's pages; holes read as zeros and writes populate.  A write past
 * the extent raises the order first (refused with -EBUSY while mapped).
 *
 * Locking: read takes the inode lock shared, write, fallocate and eviction
 * take it exclusive.  That keeps the tree from shrinking under a reader and
 * orders size changes (tree.c relies on it).  Eviction also takes the
 * invalidate lock exclusive (a page-by-page fault holds it shared while it
 * walks the tree and takes its page reference), then m->lock.  A user
 * buffer that is itself a morsel mapping may fault while the inode lock is
 * held: a mounted fault takes no lock of ours, a page-by-page one the
 * invalidate lock shared, which is never held exclusive around a user copy.
 */
#include <linux/fs.h>
#include <linux/falloc.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/splice.h>
#include <linux/uio.h>

#include "morsel.h"
#include "morsel_pm.h"

static struct morsel *file_morsel(struct file *file)
{
	return file_inode(file)->i_private;
}

/* ---- page-by-page mappings (private, or shared at an offset) ---- */

/*
 * The page at the faulting offset, populated if it is a hole (the file's
 * content does not change: a hole reads as zeros either way), with a
 * reference for the mapping, locked.  For a private mapping the generic code maps
 * it read-only and copies it on a write fault; a shared one maps the page
 * itself.  Past the size: SIGBUS, as on any file.
 */
static vm_fault_t morsel_paged_fault(struct vm_fault *vmf)
{
	return morsel_page_fault(vmf, vmf->vma->vm_flags & VM_SHARED);
}

/*
 * The page for @vmf, locked, as ->fault hands it to the generic code;
 * with @own a page a clone shares becomes this morsel's own first.
 */
vm_fault_t morsel_page_fault(struct vm_fault *vmf, bool own)
{
	struct inode *inode = file_inode(vmf->vma->vm_file);
	struct morsel *m = inode->i_private;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	vm_fault_t ret = 0;
	struct page *page;

	filemap_invalidate_lock_shared(inode->i_mapping);
	if (off >= PAGE_ALIGN(i_size_read(inode))) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	/*
	 * A clone's page is taken under m->lock (tree.c), and made this
	 * morsel's own for a shared mapping, which may store to it without
	 * another fault.  (A private one copies it on a write fault.)
	 */
	if (READ_ONCE(m->cow)) {
		morsel_walk_lock(m);
		page = morsel_get(m, off, morsel_vma_hint(vmf->vma), own);
		if (!IS_ERR(page))
			get_page(page);
		morsel_walk_unlock(m);
	} else {
		page = morsel_populate(m, off, morsel_vma_hint(vmf->vma));
		if (!IS_ERR(page))
			get_page(page);
	}
	if (PTR_ERR_OR_ZERO(page) == -EHWPOISON) {
		ret = VM_FAULT_HWPOISON;	/* SIGBUS, BUS_MCEERR_AR */
		goto out;
	}
	if (IS_ERR(page)) {
		ret = PTR_ERR(page) == -ENOSPC ? VM_FAULT_SIGBUS : VM_FAULT_OOM;
		goto out;
	}
	/*
	 * Locked until the generic code has installed the PTE: a memory
	 * error (memerr.c) locks the page before it unmaps it, so it cannot
	 * slip between this lookup and that PTE.
	 */
	lock_page(page);
	vmf->page = page;
	ret = VM_FAULT_LOCKED;
out:
	filemap_invalidate_unlock_shared(inode->i_mapping);
	return ret;
}

/* Count page-by-page VMAs, so that eviction knows whether to zap any. */
static void morsel_paged_open(struct vm_area_struct *vma)
{
	atomic_inc(&file_morsel(vma->vm_file)->nr_paged);
}

static void morsel_paged_close(struct vm_area_struct *vma)
{
	atomic_dec(&file_morsel(vma->vm_file)->nr_paged);
}

static const struct vm_operations_struct morsel_paged_vm_ops = {
	.open = morsel_paged_open,
	.close = morsel_paged_close,
	.fault = morsel_paged_fault,
};

/**
 * morsel_zap_paged - unmap the morsel's pages from page-by-page mappings
 * @inode:     the morsel's inode
 * @start:     first byte (page aligned)
 * @end:       end byte (page aligned), or 0 for all pages from @start on
 * @even_cows: the private copies too (truncation)
 *
 * After eviction or truncation took the pages out of the tree, so that
 * these mappings fault the new content (or SIGBUS past the size).
 * unmap_mapping_range() also visits the mounted VMAs, whose mount entries
 * it clears (->pgtable_unmount); they refault them, so this is skipped
 * when there is no page-by-page mapping.  Caller holds the invalidate
 * lock.
 */
void morsel_zap_paged(struct inode *inode, loff_t start, loff_t end,
		      bool even_cows)
{
	struct morsel *m = inode->i_private;

	if (atomic_read(&m->nr_paged) && (!end || start < end))
		unmap_mapping_range(inode->i_mapping, start,
				    end ? end - start : 0, even_cows);
}

/* ---- mmap ---- */

/*
 * Is an mmap with these flags and offset mounted (or page by page)?  Only
 * a shared one at offset 0.  (mremap asks get_unmapped_area with MAP_SHARED
 * for a shared VMA and without a type for a private one.)
 */
static bool mounted_mmap(unsigned long flags, unsigned long pgoff)
{
	unsigned long type = flags & MAP_TYPE;

	return (type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && !pgoff;
}

static unsigned long morsel_mmap_len(struct file *file, unsigned long len,
				     unsigned long flags, unsigned long pgoff)
{
	unsigned int order = READ_ONCE(file_morsel(file)->order);
	int want = morsel_order_for_size(len);

	if (!mounted_mmap(flags, pgoff))
		return len;
	if (want < 0 || want > morsel_max_order())
		return -EINVAL;
	return morsel_extent(max_t(unsigned int, order, want));
}

static unsigned long morsel_get_unmapped_area(struct file *file,
					      unsigned long addr,
					      unsigned long len,
					      unsigned long pgoff,
					      unsigned long flags)
{
	struct morsel *m = file_morsel(file);
	int order = morsel_order_for_size(len);
	u64 bound = READ_ONCE(m->bound);
	struct mm_struct *mm = current->mm;
	unsigned long area, hint = 0;
	u64 extent;

	if (m->anon == MORSEL_ANON_PRIVATE)
		return morsel_anon_unmapped_area(file, addr, len, pgoff, flags);
	if (!mounted_mmap(flags, pgoff) || m->anon)
		return mm_get_unmapped_area(mm, file, addr, len, pgoff, flags);
	/* mmap_len made it one extent (mremap keeps the VMA's length). */
	if (order < 0 || len != morsel_extent(order))
		return -EINVAL;
	extent = len;
	if (bound) {
		if (flags & MAP_FIXED)
			return addr == bound ? addr : -EINVAL;
		if (bound > TASK_SIZE - len)
			return -ENOMEM;
		if (find_vma_intersection(mm, bound, bound + len))
			return -EEXIST;
		return bound;
	}
	if (flags & MAP_FIXED)
		return IS_ALIGNED(addr, extent) ? addr : -EINVAL;
	if (addr && ALIGN(addr, extent) >= addr) {
		hint = ALIGN(addr, extent);
		area = mm_get_unmapped_area(mm, NULL, hint, len, 0, flags);
		if (area == hint)
			return hint;
	} else if (len + extent > DEFAULT_MAP_WINDOW) {
		/*
		 * Only the part above 47 bits has room (an order-4 morsel);
		 * a hint there is how x86 lets mmap use it.
		 */
		hint = ALIGN(DEFAULT_MAP_WINDOW, extent);
	}
	/* Ask for one extent more and align inside it, as THP does. */
	if (len + extent < len)
		return -ENOMEM;
	area = mm_get_unmapped_area(mm, NULL, hint, len + extent, 0, flags);
	if (IS_ERR_VALUE(area))
		return area;
	return ALIGN(area, extent);
}

/*
 * The mount entry can take away write and execute, never read: a mapping
 * that may execute without reading (PROT_EXEC alone) or has a protection
 * key, which morsel leaves cannot carry, is refused.  A PROT_NONE mapping
 * is never mounted (mount.c) until mprotect gives it rights.  x86 cannot
 * map a page write-only, so PROT_WRITE reads as on any file.
 */
static int morsel_mmap(struct file *file, struct vm_area_struct *vma)
{
	if (file_morsel(file)->anon)
		return morsel_anon_mmap(file_morsel(file), vma);
	if (!(vma->vm_flags & VM_MAYSHARE) || vma->vm_pgoff) {
		vma->vm_ops = &morsel_paged_vm_ops;
		atomic_inc(&file_morsel(file)->nr_paged);
		file_accessed(file);
		return 0;
	}
	if (!morsel_rights_expressible(vma->vm_flags))
		return -EACCES;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	return morsel_map_vma(file_morsel(file), vma);
}

/* ---- read and write ---- */

/*
 * Free what a failed write or fallocate populated past the file size, in
 * [PAGE_ALIGN(size), @end): a mapping reaches a populated page without a
 * fault, so only an absent page past the size raises SIGBUS, and a later
 * growth would show what was written there.  Caller holds the inode lock.
 */
static void trim_past_size(struct inode *inode, u64 end)
{
	struct morsel *m = inode->i_private;
	loff_t size = i_size_read(inode);
	u64 start = PAGE_ALIGN(size);

	end = min_t(u64, PAGE_ALIGN(end), morsel_extent(m->order));
	if (start < end)
		morsel_evict(inode, size, start, end);
}

static ssize_t morsel_read_iter(struct kiocb *iocb, struct iov_iter *to)
{
	struct inode *inode = file_inode(iocb->ki_filp);
	struct morsel *m = inode->i_private;
	loff_t pos = iocb->ki_pos, size;
	ssize_t done = 0;
	bool cow;

	if (!iov_iter_count(to))
		return 0;
	inode_lock_shared(inode);
	/* Stable while we hold the inode lock: a clone takes it exclusive. */
	cow = READ_ONCE(m->cow);
	size = i_size_read(inode);
	while (pos < size && iov_iter_count(to)) {
		size_t off = offset_in_page(pos);
		size_t n = min3(PAGE_SIZE - off, (size_t)(size - pos),
				iov_iter_count(to));
		struct page *page;
		size_t copied;

		/*
		 * A clone's page is taken with a reference under m->lock
		 * (a fault may give this morsel a copy and the other owner
		 * free the old page); the copy to the user runs without the
		 * lock, since the buffer may fault on this very morsel.
		 */
		if (cow) {
			morsel_walk_lock(m);
			page = morsel_lookup(m, pos);
			if (!IS_ERR_OR_NULL(page))
				get_page(page);
			morsel_walk_unlock(m);
		} else {
			page = morsel_lookup(m, pos);
		}
		if (IS_ERR(page)) {	/* a failed page, as tmpfs: EIO */
			if (!done)
				done = -EIO;
			break;
		}
		copied = page ? copy_page_to_iter(page, off, n, to) :
				iov_iter_zero(n, to);
		if (page && cow)
			put_page(page);
		done += copied;
		pos += copied;
		if (copied < n) {
			if (!done)
				done = -EFAULT;
			break;
		}
		if (fatal_signal_pending(current))
			break;
		cond_resched();
	}
	inode_unlock_shared(inode);
	if (done > 0)
		iocb->ki_pos = pos;
	file_accessed(iocb->ki_filp);
	return done;
}

static ssize_t morsel_write_iter(struct kiocb *iocb, struct iov_iter *from)
{
	struct file *file = iocb->ki_filp;
	struct inode *inode = file_inode(file);
	struct morsel *m = inode->i_private;
	ssize_t done = 0, err;
	unsigned int order;
	loff_t pos;

	inode_lock(inode);
	/* As ext4: also through a descriptor opened before chattr +i. */
	err = morsel_frozen(inode) ? -EPERM : generic_write_checks(iocb, from);
	if (err <= 0)
		goto out;
	err = file_modified(file);
	if (err)
		goto out;
	pos = iocb->ki_pos;
	order = m->order;	/* stable: we hold the inode lock */
	err = morsel_grow_order(m, pos + iov_iter_count(from));
	if (err)
		goto out;
	if (pos > i_size_read(inode))
		morsel_zero_past_size(inode, pos);
	/* A clone's pages become this file's own before they change. */
	err = morsel_unshare_range(m, round_down(pos, PAGE_SIZE),
				   PAGE_ALIGN(pos + iov_iter_count(from)),
				   MORSEL_UNSHARE_DATA);
	if (err) {
		err = err == -EHWPOISON ? -EIO : err;	/* as a read of it */
		goto fit;
	}
	while (iov_iter_count(from)) {
		size_t off = offset_in_page(pos);
		size_t n = min(PAGE_SIZE - off, iov_iter_count(from));
		struct page *page = morsel_populate(m, pos, MORSEL_HINT_NONE);
		size_t copied;

		if (IS_ERR(page)) {
			err = PTR_ERR(page) == -EHWPOISON ? -EIO : PTR_ERR(page);
			break;
		}
		copied = copy_page_from_iter(page, off, n, from);
		src_wrote(m->src, page_address(page) + off, copied);
		done += copied;
		pos += copied;
		if (copied < n) {
			err = -EFAULT;
			break;
		}
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			break;
		}
		cond_resched();
	}
	if (done && pos > i_size_read(inode)) {
		i_size_write(inode, pos);
		morsel_size_changed(inode);
	}
	if (err)	/* the page the copy stopped in */
		trim_past_size(inode, pos + PAGE_SIZE);
fit:
	if (m->order != order)
		morsel_fit_order(inode);
	iocb->ki_pos = pos;
out:
	inode_unlock(inode);
	return done ? done : err;
}

/* ---- eviction and fallocate ---- */

/**
 * morsel_evict - make [@start, @end) read as zeros, freeing whole pages
 * @inode: the morsel's inode
 * @size:  its file size
 * @start: first byte
 * @end:   end byte, at most @size
 *
 * Partial pages at the edges are zeroed; whole pages are freed (a partial
 * last page of the file counts as whole).  A mapped morsel keeps its tables
 * and every mapper's TLB is flushed (tree.c); an unmapped one also loses
 * the tables the range covers.  Page-by-page mappings lose the pages too
 * (private copies stay).  Caller holds the inode lock exclusively.
 */
int morsel_evict(struct inode *inode, loff_t size, u64 start, u64 end)
{
	struct morsel *m = inode->i_private;
	u64 first = PAGE_ALIGN(start);
	u64 last = end == size ? PAGE_ALIGN(end) : round_down(end, PAGE_SIZE);
	int err;

	if (first > last) {		/* within one page */
		morsel_zero_range(m, start, end);
		return 0;
	}
	morsel_zero_range(m, start, first);
	if (last < end)
		morsel_zero_range(m, last, end);
	if (first == last)
		return 0;
	filemap_invalidate_lock(inode->i_mapping);
	mutex_lock(&m->lock);
	/*
	 * A clone's shared tables: the edges of the range become this
	 * file's own (its inside goes whole, to the other owners), or with
	 * a mapping every table of it (tables of a mapped morsel stay).
	 */
	err = morsel_unshare(m, first, last, morsel_tables_mapped(m) ?
			     MORSEL_UNSHARE_TABLES : MORSEL_UNSHARE_EDGES);
	if (err) {
		mutex_unlock(&m->lock);
		filemap_invalidate_unlock(inode->i_mapping);
		return err;
	}
	/* On the device: the range first, so a crash finishes the punch. */
	if (m->pm) {
		morsel_pm_set_word(inode, MORSEL_PM_FIELD(punch_end), last);
		morsel_pm_set_word(inode, MORSEL_PM_FIELD(punch_start), first | 1);
	}
	if (morsel_tables_mapped(m))
		morsel_evict_mapped(m, inode->i_mapping, first, last);
	else
		morsel_free_range(m, first, last);
	if (m->pm)
		morsel_pm_set_word(inode, MORSEL_PM_FIELD(punch_start), 0);
	mutex_unlock(&m->lock);
	morsel_zap_paged(inode, first, last, false);
	filemap_invalidate_unlock(inode->i_mapping);
	return 0;
}

/**
 * morsel_collapse_range - MORSEL_IOC_COLLAPSE on [@start, @end)
 *
 * Page-by-page mappings of the range lose their pages first (they fault
 * them in again, from the 2 MiB leaf); a mounted morsel is refused
 * (-EBUSY: tree.c morsel_collapse).  Caller holds the inode lock
 * exclusively.
 */
int morsel_collapse_range(struct inode *inode, u64 start, u64 end)
{
	struct morsel *m = inode->i_private;
	int err;

	filemap_invalidate_lock(inode->i_mapping);
	morsel_zap_paged(inode, start, end, false);
	mutex_lock(&m->lock);
	err = m->nr_maps ? -EBUSY :
	      morsel_unshare(m, start, end, MORSEL_UNSHARE_DATA) ?:
	      morsel_collapse(m, start, end);
	mutex_unlock(&m->lock);
	filemap_invalidate_unlock(inode->i_mapping);
	return err;
}

/**
 * morsel_migrate_range - MORSEL_IOC_MIGRATE of [@start, @end) to node @nid
 * @bits: NULL, or bit i for the page at @start + i * PAGE_SIZE: only
 *        those move
 *
 * Page-by-page mappings of the range lose their pages first (they hold a
 * reference each, and fault the new ones in); the invalidate lock keeps
 * their faults out, m->migrating sends mounted faults through m->lock,
 * once the lock-free ones in flight are done (morsel_walk_srcu), so no
 * fault fills a leaf that tree.c cleared to move it.  Caller holds the
 * inode lock exclusively.
 */
int morsel_migrate_range(struct inode *inode, u64 start, u64 end, int nid,
			 const unsigned long *bits, struct morsel_migrate *res)
{
	struct morsel *m = inode->i_private;
	int err;

	filemap_invalidate_lock(inode->i_mapping);
	WRITE_ONCE(m->migrating, true);
	synchronize_srcu(&morsel_walk_srcu);
	morsel_zap_paged(inode, start, end, false);
	err = morsel_migrate(m, inode->i_mapping, start, end, nid, bits, res);
	WRITE_ONCE(m->migrating, false);
	filemap_invalidate_unlock(inode->i_mapping);
	return err;
}

/*
 * Mode 0 and FALLOC_FL_KEEP_SIZE populate the range (mode 0 also grows the
 * file, raising the order if needed; past RLIMIT_FSIZE it is SIGXFSZ and
 * EFBIG, as for write and truncate); FALLOC_FL_PUNCH_HOLE evicts it;
 * FALLOC_FL_ZERO_RANGE evicts what lies inside the file, then populates
 * as mode 0 (or KEEP_SIZE) does.  KEEP_SIZE populates up to the file size
 * rounded up to a page (a page past it would be reachable through a
 * mapping without SIGBUS) and reserves the rest (size.c), so that a
 * later write or fault there finds room.  A call that fails frees what it
 * populated past the size.
 */
static long morsel_fallocate(struct file *file, int mode, loff_t offset,
			     loff_t len)
{
	struct inode *inode = file_inode(file);
	struct morsel *m = inode->i_private;
	loff_t end = offset + len, size;
	unsigned int order;
	long err;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
		     FALLOC_FL_ZERO_RANGE | FALLOC_FL_UNSHARE_RANGE))
		return -EOPNOTSUPP;
	/*
	 * Every mode that populates also makes the range this file's own
	 * (a later write needs no copy, so it cannot fail for want of
	 * room); so UNSHARE_RANGE is mode 0 (or KEEP_SIZE), as on XFS.
	 */
	mode &= ~FALLOC_FL_UNSHARE_RANGE;
	inode_lock(inode);
	/* The VFS refuses an immutable file; a sealed one is refused here. */
	if (MORSEL_I(inode)->sealed) {
		inode_unlock(inode);
		return -EPERM;
	}
	size = i_size_read(inode);
	/*
	 * All it populates, also past the size: a table a clone shares
	 * covers 2 MiB, whatever part of it lies inside the file.
	 */
	if (!(mode & FALLOC_FL_PUNCH_HOLE)) {
		err = morsel_unshare_range(m, round_down(offset, PAGE_SIZE),
					   mode & FALLOC_FL_KEEP_SIZE ?
					   PAGE_ALIGN(min(end, size)) :
					   PAGE_ALIGN(end),
					   MORSEL_UNSHARE_DATA);
		if (err)
			goto out;
	}
	if (mode & FALLOC_FL_PUNCH_HOLE) {
		err = offset < size ?
			morsel_evict(inode, size, offset, min(end, size)) : 0;
		goto out;
	}
	order = m->order;
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
		err = inode_newsize_ok(inode, end);
		if (!err)
			err = morsel_grow_order(m, end);
		if (err)
			goto out;
	}
	if ((mode & FALLOC_FL_ZERO_RANGE) && offset < size) {
		err = morsel_evict(inode, size, offset, min(end, size));
		if (err)
			goto undo;
	}
	end = min_t(u64, PAGE_ALIGN(end), morsel_extent(m->order));
	if (mode & FALLOC_FL_KEEP_SIZE)
		end = min_t(u64, end, PAGE_ALIGN(size));
	err = 0;
	if (round_down(offset, PAGE_SIZE) < end)
		err = morsel_populate_range(m, round_down(offset, PAGE_SIZE),
					    end, MORSEL_HINT_NONE);
	if (!err && (mode & FALLOC_FL_KEEP_SIZE) &&
	    PAGE_ALIGN(offset + len) > PAGE_ALIGN(size))
		err = morsel_reserve(inode, max_t(u64, PAGE_ALIGN(size),
						  round_down(offset, PAGE_SIZE)),
				     PAGE_ALIGN(offset + len));
	if (!err && !(mode & FALLOC_FL_KEEP_SIZE) && offset + len > size) {
		morsel_zero_past_size(inode, offset + len);
		i_size_write(inode, offset + len);
		morsel_size_changed(inode);
	}
undo:
	if (err)
		trim_past_size(inode, end);
	if (m->order != order)
		morsel_fit_order(inode);
out:
	if (!err)
		err = file_modified(file);
	inode_unlock(inode);
	return err;
}

/*
 * fsync, fdatasync, msync(MS_SYNC), and sync(2), syncfs(2) and the unmount
 * through ->sync_fs (fs.c): nothing to do in RAM, nor on a persistent
 * instance whose platform flushes CPU caches on power loss (eADR).
 * Otherwise (ADR) the populated pages of [@start, @end) are written back:
 * data stored through mappings passes no helper that could (review
 * 2026-11b, M6).  Metadata and write(2) data were written back as stored.
 */
int morsel_writeback_inode(struct inode *inode, u64 start, u64 end)
{
	struct morsel *m = inode->i_private;
	int err = 0;
	loff_t size;

	if (!m || !src_flushes(m->src))
		return 0;
	inode_lock_shared(inode);
	size = i_size_read(inode);
	if (start < size)
		err = morsel_writeback(m, start, min_t(u64, end, PAGE_ALIGN(size)));
	inode_unlock_shared(inode);
	return err;
}

/*
 * SEEK_DATA and SEEK_HOLE see the tree's pages (a missing table is a hole
 * of its whole span); the rest is generic.  Past the size: ENXIO, as on
 * tmpfs.  The inode lock (shared) keeps the tree from shrinking.
 */
static loff_t morsel_llseek(struct file *file, loff_t offset, int whence)
{
	struct inode *inode = file_inode(file);
	loff_t size, pos;

	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return generic_file_llseek(file, offset, whence);
	inode_lock_shared(inode);
	size = i_size_read(inode);
	if (offset < 0 || offset >= size)
		pos = -ENXIO;
	else
		pos = morsel_seek(inode->i_private, offset, size,
				  whence == SEEK_DATA);
	if (pos == size && whence == SEEK_DATA)
		pos = -ENXIO;
	inode_unlock_shared(inode);
	return pos < 0 ? pos : vfs_setpos(file, pos, MAX_LFS_FILESIZE);
}

/*
 * O_DIRECT is accepted and changes nothing, as on tmpfs: reads and writes
 * copy to and from the morsel's pages, which are the file (there is no
 * cache to skip).  Programs that open their files so, databases among
 * them, work unchanged.
 */
static int morsel_file_open(struct inode *inode, struct file *file)
{
	int err;

	/* A process's anonymous memory (anon.c): /proc/PID/map_files */
	if (((struct morsel *)inode->i_private)->anon)
		return -EPERM;
	file->f_mode |= FMODE_CAN_ODIRECT;
	err = generic_file_open(inode, file);
	/* A shared pool's reader leases what it opens (pm_share.c). */
	if (!err && morsel_pm_reader(inode->i_sb))
		err = morsel_share_open(inode);
	return err;
}

static int morsel_file_release(struct inode *inode, struct file *file)
{
	if (morsel_pm_reader(inode->i_sb))
		morsel_share_release(inode);
	return 0;
}

static int morsel_fsync(struct file *file, loff_t start, loff_t end, int datasync)
{
	return morsel_writeback_inode(file_inode(file), start, (u64)end + 1);
}

/* What every morselfs file does, ->mmap_len aside. */
#define MORSEL_FILE_OPS						\
	.owner = THIS_MODULE,					\
	.open = morsel_file_open,				\
	.release = morsel_file_release,				\
	.llseek = morsel_llseek,				\
	.read_iter = morsel_read_iter,				\
	.write_iter = morsel_write_iter,			\
	.splice_read = copy_splice_read,			\
	.splice_write = iter_file_splice_write,			\
	.mmap = morsel_mmap,					\
	.get_unmapped_area = morsel_get_unmapped_area,		\
	.fallocate = morsel_fallocate,				\
	.remap_file_range = morsel_remap_file_range,		\
	.unlocked_ioctl = morsel_ioctl,				\
	.compat_ioctl = compat_ptr_ioctl,			\
	.fsync = morsel_fsync

const struct file_operations morsel_fops = {
	MORSEL_FILE_OPS,
	.mmap_len = morsel_mmap_len,
};

/*
 * The files of anonymous memory (anon.c): the same without ->mmap_len,
 * whose presence kernel patch 0004's mremap shortcut takes for a mounted
 * morsel's rounded length, which anonymous memory never has.
 */
const struct file_operations morsel_anon_fops = {
	MORSEL_FILE_OPS,
};
