// SPDX-License-Identifier: GPL-2.0
/*
 * anon.c - the anonymous memory of processes whose memory manager is a
 * morselfs instance (kernel patch 13, PR_SET_MEMORY_MANAGER; `morsel run
 * --mm DIR`; docs/design.md: A default memory manager per process).
 *
 * An anonymous mmap(2) of such a process asks the directory it named for
 * a file (->mmap_anon): an unnamed morsel the size of the mapping, which
 * the kernel maps shared and the module maps page by page, never mounted,
 * so that the memory splits, moves and changes rights in parts as any
 * anonymous memory does.  Shared memory (MAP_SHARED) is then what shmem
 * gives.  For private memory (VM_ANON_FILE on each of its VMAs) the module
 * keeps Linux's semantics:
 * - fork: ->open of a VMA of another mm (only dup_mmap() opens one) gives
 *   the child a clone of the file, one per file and fork for all its VMAs
 *   (anon_forks), so each side writes alone.  The clone zaps the parent's
 *   PTEs (clone.c), which refault.
 * - a page a clone shares is mapped read-only (write-notify: the VMA has
 *   ->page_mkwrite); the first write gives the writer its own copy (the
 *   break unmaps the old page from page-by-page mappings) and retries.
 * - MADV_DONTNEED and MADV_FREE punch the range (patch 13: madvise).
 * - munmap of a part, mremap's shrink and MAP_FIXED over a part free what
 *   no other VMA of the file maps (->close); a fault past the file's size
 *   (after mremap's growth) grows the file, so the new part reads zeros.
 * - nobody opens the file (/proc/PID/map_files: -EPERM in file.c), and it
 *   cannot get a name (not I_LINKABLE: linkat gives -ENOENT).
 *
 * Locking: ->open, ->close and ->fault run under the mmap lock (or a VMA
 * lock) and take the file's inode lock.  No path takes that lock before
 * the mmap lock, since no read(2) or write(2) reaches these files, so
 * their inodes get a lock class of their own (anon_rwsem_key) and lockdep
 * keeps the order apart from other morsels'.  anon_forks_lock guards
 * anon_forks; an entry lives from the first ->open of its fork to the
 * forking task's return to user space (task work), which drops the
 * clone's creation reference.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/task_work.h>

#include "morsel.h"

static struct lock_class_key anon_rwsem_key;

static struct morsel *vma_morsel_of(struct vm_area_struct *vma)
{
	return file_inode(vma->vm_file)->i_private;
}

/* An unnamed morsel of @size for anonymous memory of kind @anon. */
static struct file *anon_file(struct vfsmount *mnt, struct inode *dir,
			      loff_t size, u8 anon)
{
	struct file *file = morsel_new_unnamed(mnt, dir, 0600, size,
					       &anon_rwsem_key);

	if (!IS_ERR(file))
		((struct morsel *)file_inode(file)->i_private)->anon = anon;
	return file;
}

/**
 * morsel_mmap_anon - ->mmap_anon of a volatile instance's directory
 *
 * The file for an anonymous mapping of @len bytes, which the kernel maps
 * shared; private memory if @flags asks for MAP_PRIVATE.  The caller
 * (PR_SET_MEMORY_MANAGER) checked the rights O_TMPFILE needs in @dir.
 * Return: the file, NULL for a length mmap(2) refuses itself, or
 * ERR_PTR(-ENOMEM) (also for a full instance: mmap's errno for it).
 */
struct file *morsel_mmap_anon(struct file *dir, unsigned long len,
			      unsigned long prot, unsigned long flags)
{
	bool private = (flags & MAP_TYPE) == MAP_PRIVATE;
	struct file *file;

	if (!len || PAGE_ALIGN(len) < len)
		return NULL;
	file = anon_file(dir->f_path.mnt, file_inode(dir), PAGE_ALIGN(len),
			 private ? MORSEL_ANON_PRIVATE : MORSEL_ANON_SHARED);
	return IS_ERR(file) ? ERR_PTR(-ENOMEM) : file;
}

/* ---- fork ---- */

struct anon_fork {
	struct callback_head work;
	struct list_head node;
	struct mm_struct *mm;		/* the child's (mmgrab) */
	struct file *from, *to;		/* the parent's file and its clone */
	bool failed;			/* no clone: the child gets SIGKILL */
};

static LIST_HEAD(anon_forks);
static DEFINE_MUTEX(anon_forks_lock);

/* The fork is done (or failed): drop the clone's creation reference. */
static void anon_fork_done(struct callback_head *work)
{
	struct anon_fork *af = container_of(work, struct anon_fork, work);

	mutex_lock(&anon_forks_lock);
	list_del(&af->node);
	mutex_unlock(&anon_forks_lock);
#ifdef CONFIG_MEMCG
	if (af->failed) {
		/* A child without its memory dies (mm->owner is the child). */
		struct task_struct *child;

		rcu_read_lock();
		child = rcu_dereference(af->mm->owner);
		if (child)
			send_sig(SIGKILL, child, 1);
		rcu_read_unlock();
	}
#endif
	if (af->to)
		fput(af->to);
	mmdrop(af->mm);
	kfree(af);
}

/*
 * The clone of @from for the child mm @mm, made by the first VMA of it
 * that dup_mmap() opens.  Return: the clone, or NULL if there was no
 * memory for it; then the child gets SIGKILL once the fork is done.
 */
static struct file *anon_fork_file(struct mm_struct *mm, struct file *from)
{
	struct inode *inode = file_inode(from);
	struct anon_fork *af;

	mutex_lock(&anon_forks_lock);
	list_for_each_entry(af, &anon_forks, node)
		if (af->mm == mm && af->from == from)
			goto out;
	/* Small, and what kills the child if the clone fails. */
	af = kzalloc(sizeof(*af), GFP_KERNEL | __GFP_NOFAIL);
	af->mm = mm;
	af->from = from;
	af->to = anon_file(from->f_path.mnt, d_inode(inode->i_sb->s_root),
			   i_size_read(inode), MORSEL_ANON_PRIVATE);
	if (IS_ERR(af->to))
		af->to = NULL;
	else if (morsel_clone_anon(from, af->to) < 0)
		af->failed = true;
	af->failed |= !af->to;
	init_task_work(&af->work, anon_fork_done);
	/* Only an exiting task refuses task work, and it does not fork. */
	if (task_work_add(current, &af->work, TWA_RESUME)) {
		if (af->to)
			fput(af->to);
		kfree(af);
		mutex_unlock(&anon_forks_lock);
		return NULL;
	}
	mmgrab(mm);
	list_add(&af->node, &anon_forks);
out:
	mutex_unlock(&anon_forks_lock);
	return af->failed ? NULL : af->to;
}

/*
 * dup_mmap() opens each child VMA before it takes a reference on the VMA's
 * file and puts the VMA in that file's i_mmap, so the child VMA can name
 * its own file here; splits and mremap open VMAs of the current mm.
 */
void morsel_anon_open(struct vm_area_struct *vma)
{
	if ((vma->vm_flags & VM_ANON_FILE) && vma->vm_mm != current->mm) {
		struct file *to = anon_fork_file(vma->vm_mm, vma->vm_file);

		if (!to) {
			/*
			 * Never silent sharing: an empty anonymous VMA for
			 * a child that is killed as the fork returns.
			 */
			vma->vm_file = NULL;
			vma->vm_ops = NULL;
			vm_flags_clear(vma, VM_SHARED | VM_MAYSHARE |
					    VM_ANON_FILE | VM_MIXEDMAP);
			return;
		}
		vma->vm_file = to;
		/* Mounted memory (anonmnt.c) stays mounted in the child. */
		if (vma->vm_flags & VM_MIXEDMAP)
			WRITE_ONCE(vma_morsel_of(vma)->anon_mounts, true);
	}
	atomic_inc(&vma_morsel_of(vma)->nr_paged);
}

/* ---- unmapping a part ---- */

#define ANON_RANGES 16

static int range_cmp(const void *a, const void *b)
{
	const u64 *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/*
 * Free the pages of [@start, @end) of private memory that no VMA of the
 * file but the closing @vma maps.  All its VMAs are in @vma's mm (a fork
 * gives the child a file of its own).  With more than ANON_RANGES others
 * over the range, keep it all: the file goes with its last VMA anyway.
 * Caller holds the mm's mmap lock, so no VMA of the file comes or goes
 * meanwhile.
 */
static void anon_free_unmapped(struct vm_area_struct *vma, u64 start,
			       u64 end)
{
	struct file *file = vma->vm_file;
	struct inode *inode = file_inode(file);
	u64 cut[ANON_RANGES][2], at = start;
	struct vm_area_struct *v;
	struct vma_iterator vmi;
	int n = 0, i;

	vma_iter_init(&vmi, vma->vm_mm, 0);
	for_each_vma(vmi, v) {
		u64 a = (u64)v->vm_pgoff << PAGE_SHIFT;
		u64 b = a + (v->vm_end - v->vm_start);

		/* MAP_FIXED closes the VMAs it replaces while they are listed */
		if (v == vma || v->vm_file != file || b <= start || a >= end)
			continue;
		if (n == ANON_RANGES)
			return;
		cut[n][0] = max(start, a);
		cut[n][1] = min(end, b);
		n++;
	}
	sort(cut, n, sizeof(cut[0]), range_cmp, NULL);
	inode_lock(inode);
	end = min_t(u64, end, PAGE_ALIGN(i_size_read(inode)));
	for (i = 0; i <= n && at < end; i++) {
		u64 stop = i < n ? min(cut[i][0], end) : end;

		if (at < stop)
			morsel_evict(inode, i_size_read(inode), at,
				     min_t(u64, stop, i_size_read(inode)));
		if (i < n)
			at = max(at, cut[i][1]);
	}
	inode_unlock(inode);
}

void morsel_anon_close(struct vm_area_struct *vma)
{
	struct file *file = vma->vm_file;
	u64 start = (u64)vma->vm_pgoff << PAGE_SHIFT;

	atomic_dec(&vma_morsel_of(vma)->nr_paged);
	/*
	 * At exit, and when this VMA holds the file's last reference, the
	 * whole file goes with the fput() that follows.
	 */
	if (!(vma->vm_flags & VM_ANON_FILE) ||
	    !atomic_read(&vma->vm_mm->mm_users) || file_count(file) == 1)
		return;
	anon_free_unmapped(vma, start, start + (vma->vm_end - vma->vm_start));
}

/* ---- faults ---- */

/* mremap made the private VMA longer than the file: grow the file. */
vm_fault_t morsel_anon_grow(struct vm_area_struct *vma)
{
	struct inode *inode = file_inode(vma->vm_file);
	loff_t want = ((loff_t)vma->vm_pgoff << PAGE_SHIFT) +
		      (vma->vm_end - vma->vm_start);
	int err = 0;

	inode_lock(inode);
	if (i_size_read(inode) < want)
		err = morsel_resize(inode, want);
	inode_unlock(inode);
	if (!err)
		return 0;
	return err == -ENOSPC ? VM_FAULT_SIGBUS : VM_FAULT_OOM;
}

/*
 * As file.c's page-by-page fault, except that a read leaves a page a
 * clone shares shared (the PTE is read-only: write-notify), and that
 * private memory past the file's size grows it instead of SIGBUS.
 */
static vm_fault_t anon_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct inode *inode = file_inode(vma->vm_file);

	if ((vma->vm_flags & VM_ANON_FILE) &&
	    ((u64)vmf->pgoff << PAGE_SHIFT) >= PAGE_ALIGN(i_size_read(inode))) {
		vm_fault_t ret = morsel_anon_grow(vma);

		if (ret)
			return ret;
	}
	/* shared memory past the size: SIGBUS, as shmem's */
	return morsel_page_fault(vmf, vmf->flags & FAULT_FLAG_WRITE);
}

/*
 * A write to a page mapped read-only.  If a clone shares it, the break
 * gives this file a copy (tree.c); the PTEs of the old page go, and the
 * access retries and maps the copy.  Otherwise the page becomes writable
 * as it is.
 */
static vm_fault_t anon_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct inode *inode = file_inode(vma->vm_file);
	struct morsel *m = inode->i_private;
	u64 off = (u64)vmf->pgoff << PAGE_SHIFT;
	vm_fault_t ret = VM_FAULT_NOPAGE;
	struct page *page = vmf->page;

	filemap_invalidate_lock_shared(inode->i_mapping);
	if (off >= PAGE_ALIGN(i_size_read(inode)))
		goto out;
	if (READ_ONCE(m->cow)) {
		morsel_walk_lock(m);
		page = morsel_get(m, off, morsel_vma_hint(vma), true);
		morsel_walk_unlock(m);
		if (PTR_ERR_OR_ZERO(page) == -EHWPOISON) {
			ret = VM_FAULT_HWPOISON;
			goto out;
		}
		if (IS_ERR(page)) {
			ret = PTR_ERR(page) == -ENOSPC ? VM_FAULT_SIGBUS :
							 VM_FAULT_OOM;
			goto out;
		}
	}
	if (page == vmf->page) {
		lock_page(page);
		ret = VM_FAULT_LOCKED;
	} else {
		/* A copy (or a punch) replaced it: out with the old one. */
		unmap_mapping_range(inode->i_mapping, off, PAGE_SIZE, 0);
	}
out:
	filemap_invalidate_unlock_shared(inode->i_mapping);
	return ret;
}

/*
 * A split of a VMA from another mm: ->open of its new part would take it
 * for a fork's child VMA and give it a clone, while the split puts it in
 * this file's i_mmap.  Only userfaultfd does that (a process registering
 * a range through another's userfaultfd, UFFD_FEATURE_WP_ASYNC); it gets
 * EINVAL.  dup_mmap() opens VMAs of the child without splitting them.
 */
int morsel_anon_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return vma->vm_mm == current->mm ? 0 : -EINVAL;
}

static const struct vm_operations_struct morsel_anon_vm_ops = {
	.open = morsel_anon_open,
	.close = morsel_anon_close,
	.may_split = morsel_anon_may_split,
	.fault = anon_fault,
	.page_mkwrite = anon_mkwrite,
};

/* ->mmap of an anonymous-memory morsel (file.c). */
int morsel_anon_mmap(struct morsel *m, struct vm_area_struct *vma)
{
	vma->vm_ops = &morsel_anon_vm_ops;
	if (m->anon == MORSEL_ANON_PRIVATE) {
		vm_flags_set(vma, VM_ANON_FILE);
		/* anon=mounted: 2 MiB at a time (anonmnt.c) */
		if (READ_ONCE(m->sbi->anon_mounted))
			return morsel_anon_mount_vma(m, vma);
	}
	atomic_inc(&m->nr_paged);
	return 0;
}
