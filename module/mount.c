// SPDX-License-Identifier: GPL-2.0
/*
 * Mounting morsels into processes, and knowing where they are mounted.
 *
 * A shared VMA of a morsel covers exactly one extent, naturally aligned
 * (file.c enforces it): the extent of the VMA's own order, which is the
 * morsel's order when it is mapped (mmap raises the morsel's order to fit
 * a longer mapping).  The morsel's order may rise later while the VMA
 * exists; the VMA then keeps mounting the subtree of its order at offset
 * 0, which stays in place (tree.c).  It is mounted by one entry in the
 * process's own tables, one level above that subtree's root: a PTE
 * (order 0), PMD (order 1), PUD (order 2), P4D (order 3) or PGD (order 4)
 * entry.  With 4-level paging
 * the P4D level is folded into the PGD, so order 3 mounts in a PGD entry
 * and order 4 does not exist (fs.c caps the size).  The entry is the
 * morsel's root entry with the rights of this mapping: _PAGE_RW only for a
 * writable VMA, _PAGE_NX unless the VMA is executable.  The hardware checks
 * RW and NX at every level, so the morsel's own entries stay permissive.
 *
 * The kernel patch gives us two hooks (vm_ops->pgtable_fault and
 * ->pgtable_unmount); with them no generic walker ever enters the morsel:
 * - mmap: morsel_map_vma() has task work mount the VMA as mmap returns
 *   (once the VMA is where evictions and clones find it), so a populated
 *   morsel takes no fault at all.
 * - fault (fork children, after mremap, an empty morsel before its first
 *   page, which brings the root of a volatile one: tree.c):
 *   our handler replaces the generic walk.  It allocates the process
 *   tables above the mount with the generic allocators (same locks and
 *   pgtables_bytes accounting as a normal fault), populates the morsel
 *   and writes the mount entry.  The generic path never allocates a table
 *   inside a morsel, so an order-3/4 morsel needs only its root table.
 * - munmap, exit, MAP_FIXED over the VMA, unmap_mapping_range, mremap:
 *   ->pgtable_unmount clears the mount and flushes the mm's TLB; generic
 *   code then frees or moves the process's tables, which hold an empty
 *   entry, and never zaps below it (patch 0003 skips the zap for such a
 *   VMA: a fault may mount again right after the hook).
 * - fork: the patched vma_needs_copy() does not copy the VMA's tables.
 * - GUP: ->find_special_page names the page behind a leaf (kernel patch
 *   0005 lets GUP use it); GUP-fast refuses the special leaves, so the slow
 *   path checks VM_WRITE, which mirrors the mount entry's RW bit.
 * VMA flags VM_PFNMAP|VM_IO|VM_DONTEXPAND|VM_DONTDUMP make madvise
 * (DONTNEED, FREE, COLD, PAGEOUT), page walkers (smaps, clear_refs,
 * pagemap), NUMA balancing, khugepaged, mlock and KSM skip or refuse the
 * VMA; ->may_split refuses splits, so ->mprotect takes only a whole
 * mapping: it unmounts, and the next fault mounts with the new rights.
 *
 * - Secondary MMUs (KVM, ...): munmap, exit and mremap are bracketed by
 *   the generic code's own mmu notifier calls (MMU_NOTIFY_UNMAP around
 *   unmap_single_vma, mmu_notifier_release at exit, move_page_tables);
 *   eviction, which no generic code knows about, calls
 *   mmu_notifier_invalidate_cleared (kernel patch 0006) for every mapper
 *   after the leaves are cleared and before the pages are freed.
 *   follow_pfnmap_start() refuses morsel VMAs (patch 0006), so KVM maps
 *   morsel pages only through GUP, which checks VM_WRITE.
 *
 * Mapping tracking: every VMA has a struct morsel_map on its morsel's list
 * (added by mmap and ->open, removed by ->close, all under m->lock).
 * Eviction flushes the TLB of every mm on the list; a VMA joins the list
 * before it is first mounted and leaves it only after its last unmount.
 *
 * Locking: mmap_lock (or the VMA lock) -> m->lock.  A fault runs under the
 * VMA read lock or mmap_lock (read) and takes no lock of ours.  The mount
 * entry is owned by this VMA alone (the VMA spans the whole entry): a
 * fault writes it with a cmpxchg from 0 and unmount clears it with a
 * cmpxchg from the morsel's own root, so neither trusts a flag and a fault
 * racing an unmount (unmap_mapping_range holds no lock that keeps faults
 * out) at worst refaults; nothing walks below the entry after the unmount.
 * An order-0 copy is cleared under its process PTE table's lock (GUP).  The VMA's order
 * (map->order) never changes, and the morsel's order cannot fall below it
 * while the VMA exists (nr_maps > 0).
 *
 * Private VMAs, and shared ones at an offset, are ordinary file mappings
 * (file.c) and are not on the list.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/pgtable.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/task_work.h>
#include <asm/tlbflush.h>

#include "morsel.h"

/*
 * Exported by kernel patch 0001; asm/tlbflush.h hides the declaration from
 * modules (#ifndef MODULE), so repeat it here.
 */
void flush_tlb_mm_range(struct mm_struct *mm, unsigned long start,
			unsigned long end, unsigned int stride_shift,
			bool freed_tables);

static struct morsel_map *vma_map(struct vm_area_struct *vma)
{
	return vma->vm_private_data;
}

static struct morsel *vma_morsel(struct vm_area_struct *vma)
{
	return vma_map(vma)->morsel;
}

/* Does an order-@order morsel mount in a PGD entry? */
static bool pgd_mount(unsigned int order)
{
	return order == 4 || (order == 3 && !pgtable_l5_enabled());
}

/*
 * With page-table isolation a user PGD entry must also be written to the
 * user copy of the PGD (set_pgd does that, under mm->page_table_lock); the
 * lock-free mount cannot, so such mounts are refused (fs.c: -EOPNOTSUPP).
 */
bool morsel_top_level_mount(unsigned int order)
{
	return pgd_mount(order) && cpu_feature_enabled(X86_FEATURE_PTI);
}

/*
 * Find the process entry that mounts an order-@order morsel at @addr.  With
 * @alloc, missing process tables above it are allocated (and accounted to
 * the mm) like the generic fault path does.  Return: NULL if absent/ENOMEM.
 */
static mentry_t *mount_slot(struct mm_struct *mm, unsigned long addr,
			    unsigned int order, bool alloc)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;

	if (order == 4)
		return (mentry_t *)pgd;
	if (alloc) {
		p4d = p4d_alloc(mm, pgd, addr);	/* the PGD entry when folded */
		if (!p4d)
			return NULL;
		if (order == 3)
			return (mentry_t *)p4d;
		pud = pud_alloc(mm, p4d, addr);
		if (!pud)
			return NULL;
		if (order == 2)
			return (mentry_t *)pud;
		pmd = pmd_alloc(mm, pud, addr);
		if (!pmd)
			return NULL;
		if (order == 1)
			return (mentry_t *)pmd;
		if (pte_alloc(mm, pmd))
			return NULL;
	} else {
		if (pgd_none(*pgd))
			return NULL;
		p4d = p4d_offset(pgd, addr);
		if (order == 3)
			return (mentry_t *)p4d;
		if (p4d_none(*p4d))
			return NULL;
		pud = pud_offset(p4d, addr);
		if (order == 2)
			return (mentry_t *)pud;
		if (pud_none(*pud) || pud_leaf(*pud))
			return NULL;
		pmd = pmd_offset(pud, addr);
		if (order == 1)
			return (mentry_t *)pmd;
		if (pmd_none(*pmd))
			return NULL;
	}
	if (pmd_leaf(*pmd))
		return NULL;
	return (mentry_t *)pte_offset_kernel(pmd, addr);
}

static mentry_t vma_mount_entry(struct vm_area_struct *vma)
{
	return morsel_mount_entry(vma_morsel(vma), vma_map(vma)->order,
				  vma->vm_flags & VM_WRITE,
				  vma->vm_flags & VM_EXEC);
}

/*
 * Write the mount entry of @vma if it is empty.  Faults on holes of a
 * mounted morsel come here too and find it in place.  Return: 0, -ENOMEM,
 * or -EEXIST if any other entry is in the way (which would be a bug).
 */
static int mount(struct vm_area_struct *vma)
{
	struct morsel_map *map = vma_map(vma);
	mentry_t *slot, want, cur;
	struct page *page = NULL;

	/*
	 * An order-1 (order-2) mapping mounts the PTE (PMD) table of the
	 * first 2 MiB (1 GiB): a huge leaf there becomes one (tree.c:
	 * nothing moves), and none comes back while the mapping exists (a
	 * leaf goes only into an empty slot, and tables of a mapped morsel
	 * stay).
	 */
	if (map->order == 1 || map->order == 2) {
		int err = 0;

		/*
		 * The PTE table of a clone may be shared: the mount would
		 * skip the PMD entry that takes write away (tree.c), so it
		 * becomes this morsel's own first (morsel_walk_lock held).
		 */
		if (map->order == 1 && READ_ONCE(vma_morsel(vma)->cow))
			err = morsel_unshare(vma_morsel(vma), 0, PAGE_SIZE,
					     MORSEL_UNSHARE_TABLES);
		if (!err)
			err = morsel_split(vma_morsel(vma), 0, map->order);
		if (err)
			return err;
	}
again:
	want = vma_mount_entry(vma);
	if (!want)		/* no root yet: empty, volatile (tree.c) */
		return 0;
	/*
	 * An order-0 entry is a copy of the leaf: hold the page while the
	 * copy is made, so that an eviction that takes it out meanwhile
	 * (tree.c) cannot free it while this entry still maps it.
	 */
	if (!map->order) {
		page = pfn_to_page((want & PTE_PFN_MASK) >> PAGE_SHIFT);
		if (!get_page_unless_zero(page))
			goto again;
		if (vma_mount_entry(vma) != want) {
			put_page(page);
			goto again;
		}
	}
	slot = mount_slot(vma->vm_mm, vma->vm_start, map->order, true);
	if (!slot) {
		if (page)
			put_page(page);
		return -ENOMEM;
	}
	cur = 0;
	if (try_cmpxchg64(slot, &cur, want)) {
		WRITE_ONCE(map->mounted, true);
		atomic_long_inc(&morsel_stat_mounts);
		if (page && vma_mount_entry(vma) != want) {
			/* Evicted meanwhile, maybe after its unmount ran. */
			cur = want;
			WRITE_ONCE(map->mounted, false);
			if (try_cmpxchg64(slot, &cur, 0))
				flush_tlb_mm_range(vma->vm_mm, vma->vm_start,
						   vma->vm_end, PAGE_SHIFT,
						   false);
			put_page(page);
			goto again;
		}
	} else if (cur != want && map->order) {
		/* Not mounted by a racing fault with exactly these rights. */
		pr_err_ratelimited("morsel: foreign entry %llx at %lx\n",
				   cur, vma->vm_start);
		return -EEXIST;
	} else if (cur != want && !((cur ^ want) & PTE_PFN_MASK) &&
		   (want & _PAGE_RW)) {
		/*
		 * A read-only copy of the same page, made while a clone
		 * shared it (tree.c): now it is this morsel's own, and the
		 * copy gains write in place (no flush: rights only widen
		 * to what the VMA allows).
		 */
		try_cmpxchg64(slot, &cur, want);
	}
	/* (Order 0: another fault's stale copy goes; the access refaults.) */
	if (page)
		put_page(page);
	return 0;
}

/*
 * Is any shared VMA of order 0 mapping @m?  Its mount entry is a copy of
 * the leaf of offset 0 (tree.c keeps that page).  Caller holds m->lock.
 */
bool morsel_order0_mapped(struct morsel *m)
{
	struct morsel_map *map;

	lockdep_assert_held(&m->lock);
	list_for_each_entry(map, &m->maps, node)
		if (!map->order)
			return true;
	return false;
}

/*
 * Check a new VMA of @m, under m->lock so that no truncate slips in: it
 * covers exactly the extent of some order, aligned, at the bound address
 * if there is one; a longer VMA than the morsel's extent raises the order
 * to its own first.  Return: the VMA's order or -errno.
 */
static int map_check(struct morsel *m, struct vm_area_struct *vma)
{
	u64 len = vma->vm_end - vma->vm_start;
	int order = morsel_order_for_size(len), err;

	lockdep_assert_held(&m->lock);
	if (order < 0 || len != morsel_extent(order) ||
	    !IS_ALIGNED(vma->vm_start, len) ||
	    (m->bound && vma->vm_start != m->bound))
		return -EINVAL;
	if (morsel_top_level_mount(order))
		return -EOPNOTSUPP;
	err = morsel_raise_order(m, order);
	return err ? err : order;
}

/*
 * Put @vma on @m's list of mappings: a new mmap with @check (map_check),
 * or a copy of a VMA of order @order (fork, mremap).
 */
static int map_add(struct morsel *m, struct vm_area_struct *vma, gfp_t gfp,
		   bool check, unsigned int order)
{
	struct morsel_map *map = kzalloc(sizeof(*map), gfp);
	int err = 0;

	if (!map)
		return -ENOMEM;
	map->vma = vma;
	map->morsel = m;
	map->order = order;
	mutex_lock(&m->lock);
	if (check) {
		err = map_check(m, vma);
		if (err >= 0) {
			map->order = err;
			err = 0;
		}
	}
	if (!err) {
		list_add(&map->node, &m->maps);
		m->nr_maps++;
	}
	mutex_unlock(&m->lock);
	if (err) {
		kfree(map);
		return err;
	}
	vma->vm_private_data = map;
	return 0;
}

/* A mount that mmap asked for, made as the task returns to user space. */
struct mount_work {
	struct callback_head work;
	struct mm_struct *mm;
	struct file *file;	/* keeps the instance, and so the module */
	unsigned long start;
};

/*
 * Mount the VMA that mmap made at @start, now that mmap_region() linked it
 * into the file's i_mmap (tree.c's evictions and clone.c unmount what they
 * find there; ->mmap runs before the link).  The VMA may have gone or been
 * replaced meanwhile: whatever morsel VMA starts there is mounted as a
 * fault would mount it, and none is no error.
 */
static void mount_after_mmap(struct callback_head *work)
{
	struct mount_work *mw = container_of(work, struct mount_work, work);
	struct mm_struct *mm = mw->mm;
	struct vm_area_struct *vma;

	if (mmget_not_zero(mm)) {
		if (!mmap_read_lock_killable(mm)) {
			vma = vma_lookup(mm, mw->start);
			if (vma && vma->vm_start == mw->start &&
			    vma->vm_file == mw->file &&
			    vma->vm_ops == &morsel_vm_ops &&
			    i_size_read(file_inode(vma->vm_file)) &&
			    morsel_vma_mounts(vma->vm_flags)) {
				struct morsel *m = vma_morsel(vma);
				int idx = srcu_read_lock(&morsel_walk_srcu);

				if (READ_ONCE(m->cow)) {
					srcu_read_unlock(&morsel_walk_srcu, idx);
					morsel_walk_lock(m);
					mount(vma);
					morsel_walk_unlock(m);
				} else {
					mount(vma);
					srcu_read_unlock(&morsel_walk_srcu, idx);
				}
			}
			mmap_read_unlock(mm);
		}
		mmput(mm);
	}
	mmdrop(mm);
	fput(mw->file);		/* the last one is put after this returns */
	kfree(mw);
}

/**
 * morsel_map_vma - set up a new VMA of @m and have it mounted
 *
 * Called by ->mmap with mmap_lock held for writing; the VMA is not yet in
 * the mm's tree nor in the file's i_mmap, but mmap_region() no longer
 * fails after ->mmap succeeds, and unmap_region() (which calls
 * ->pgtable_unmount) undoes it if it did.
 *
 * The mount is not written here: an eviction or a clone in the window
 * before mmap_region() links the VMA would not find it (they unmount
 * through unmap_mapping_range), and an order-0 mount, a copy of the leaf
 * of page 0, would then map a page the file had freed (the fuzzer's guest
 * reset: a user store into a page that became a page table).  Task work
 * mounts it as the task returns from mmap, before user space can touch
 * the mapping, so a populated morsel still takes no fault; where no task
 * work can run (a kernel thread, another mm), or it fails, the first
 * fault mounts.  A failed mount is not an error: the first fault retries
 * it.  A PROT_NONE VMA is not mounted (no entry can take away read).  An
 * empty file is not mounted: for order 0 the mount entry is the page
 * itself, and a page that a failed write left (file.c: trim_past_size can
 * only zero it while the morsel is mapped) must not be reachable past the
 * size without SIGBUS; the fault handler mounts once the file has grown.
 * Return: 0, -ENOMEM, -ENOSPC (raising the order needs tables past size=),
 * -EINVAL (wrong length, alignment or address), -EBUSY (a bound address
 * that the longer extent does not fit) or -EOPNOTSUPP (a PGD-level mount
 * under page-table isolation).
 */
int morsel_map_vma(struct morsel *m, struct vm_area_struct *vma)
{
	int err = map_add(m, vma, GFP_KERNEL, true, 0);
	struct mount_work *mw;

	if (err)
		return err;
	vma->vm_ops = &morsel_vm_ops;
	if (!i_size_read(file_inode(vma->vm_file)) ||
	    !morsel_vma_mounts(vma->vm_flags) ||
	    (current->flags & PF_KTHREAD) || current->mm != vma->vm_mm)
		return 0;
	mw = kmalloc(sizeof(*mw), GFP_KERNEL);
	if (!mw)
		return 0;
	mw->mm = vma->vm_mm;
	mw->file = get_file(vma->vm_file);
	mw->start = vma->vm_start;
	mmgrab(mw->mm);
	init_task_work(&mw->work, mount_after_mmap);
	if (task_work_add(current, &mw->work, TWA_RESUME)) {
		mmdrop(mw->mm);
		fput(mw->file);
		kfree(mw);
	}
	return 0;
}

/**
 * morsel_flush_mappers - flush cleared leaves of [@start, @end) of @m
 *
 * From every mapper's TLBs first, then from its secondary MMUs: a KVM
 * fault that read a leaf before it was cleared sees the invalidation and
 * retries, one after it finds the hole.  Offsets into the morsel.  Caller
 * holds m->lock, so every VMA on the list (and its mm) stays alive.
 *
 * GUP's slow path reads a 1 GiB leaf under its own mm's page_table_lock
 * (pud_lock) and takes its page reference before it lets go; a split or
 * a clear of the leaf (tree.c) cannot take every mapper's lock.  So once
 * a morsel has had such a leaf, each mapper's page_table_lock is taken
 * and released here too: a GUP that read the leaf before it changed has
 * its reference by then, and one after it finds the new entry, before
 * the caller frees any page.  (2 MiB and 4 KiB leaves change under the
 * split lock GUP holds for them; see tree.c.)
 */
void morsel_flush_mappers(struct morsel *m, u64 start, u64 end)
{
	morsel_flush_mappers_tables(m, start, end, false);
}

/*
 * The same, and with @tables also the paging-structure caches: a table
 * under the range left the tree (a clone's other owner may free it).
 */
void morsel_flush_mappers_tables(struct morsel *m, u64 start, u64 end,
				 bool tables)
{
	struct morsel_map *map;

	lockdep_assert_held(&m->lock);
	/*
	 * Mounted anonymous memory (anonmnt.c) is in the file's i_mmap, not
	 * on the list: its mounts and leaf copies of the range go.
	 */
	if (READ_ONCE(m->anon_mounts) && start < end)
		unmap_mapping_range(m->inode->i_mapping, start, end - start, 0);
	list_for_each_entry(map, &m->maps, node) {
		struct vm_area_struct *vma = map->vma;
		u64 stop = min(end, morsel_extent(map->order));

		if (start >= stop)	/* past this VMA's extent */
			continue;
		flush_tlb_mm_range(vma->vm_mm, vma->vm_start + start,
				   vma->vm_start + stop, PAGE_SHIFT, tables);
		mmu_notifier_invalidate_cleared(vma->vm_mm,
						vma->vm_start + start,
						vma->vm_start + stop);
		if (READ_ONCE(m->had_huge1g) && map->order >= 3) {
			spin_lock(&vma->vm_mm->page_table_lock);
			spin_unlock(&vma->vm_mm->page_table_lock);
		}
		cond_resched();
	}
}

/**
 * morsel_fault_in - populate the page at @off of @m for a fault at @addr
 * of @vma and let @install put it into the process's tables
 *
 * A clone's tree is walked under m->lock (tree.c): a write fault there
 * gives this morsel its own copy of what it writes; so is one whose pages
 * move to another node (file.c morsel_migrate_range), whose cleared
 * leaves no fault may fill.  A clone or migration that starts meanwhile
 * waits for this walk (morsel_walk_srcu).  For ->pgtable_fault
 * of mounted files and of mounted anonymous memory (anonmnt.c).
 * Return: the fault's answer (size= reached is SIGBUS, as on tmpfs).
 */
vm_fault_t morsel_fault_in(struct vm_fault *vmf, struct morsel *m, u64 off,
			   int (*install)(struct vm_area_struct *vma,
					  unsigned long addr, u64 off))
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long addr = vmf->address & PAGE_MASK;
	int hint = morsel_vma_hint(vma), err = 0, idx;
	struct page *page;

	idx = srcu_read_lock(&morsel_walk_srcu);
	if (READ_ONCE(m->cow) || READ_ONCE(m->migrating)) {
		srcu_read_unlock(&morsel_walk_srcu, idx);
		morsel_walk_lock(m);
		page = READ_ONCE(m->cow) ?
		       morsel_get(m, off, hint, vmf->flags & FAULT_FLAG_WRITE) :
		       morsel_populate(m, off, hint);
		if (!IS_ERR(page))
			err = install(vma, addr, off);
		morsel_walk_unlock(m);
	} else {
		page = morsel_populate(m, off, hint);
		if (!IS_ERR(page))
			err = install(vma, addr, off);
		srcu_read_unlock(&morsel_walk_srcu, idx);
	}
	if (PTR_ERR_OR_ZERO(page) == -ENOSPC)
		return VM_FAULT_SIGBUS;
	if (PTR_ERR_OR_ZERO(page) == -EHWPOISON)
		return VM_FAULT_HWPOISON;	/* SIGBUS, BUS_MCEERR_AR */
	if (IS_ERR(page) || err == -ENOMEM)
		return VM_FAULT_OOM;
	return err ? VM_FAULT_SIGBUS : VM_FAULT_NOPAGE;
}

/* A fault mounts the whole extent, wherever it fell. */
static int mount_for(struct vm_area_struct *vma, unsigned long addr, u64 off)
{
	return mount(vma);
}

static vm_fault_t morsel_pgtable_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	u64 off = vmf->address - vma->vm_start;

	if (off >= PAGE_ALIGN(i_size_read(file_inode(vma->vm_file))))
		return VM_FAULT_SIGBUS;
	/*
	 * A mount reads at least: never for a VMA that may not (mprotect to
	 * PROT_NONE; only a forced GUP, e.g. ptrace, gets this far).
	 */
	if (!morsel_vma_mounts(vma->vm_flags))
		return VM_FAULT_SIGBUS;
	return morsel_fault_in(vmf, vma_morsel(vma), off & PAGE_MASK,
			       mount_for);
}

/*
 * Clear @map's mount entry *@slot, but only if it mounts this morsel: any
 * other entry would be a process table that generic code must free (and
 * would be a bug, reported).  Return: whether it cleared one.
 */
static bool unmount_slot(struct vm_area_struct *vma, struct morsel_map *map,
			 mentry_t *slot)
{
	mentry_t cur = READ_ONCE(*slot);

	do {
		if (!cur)
			return false;
		/*
		 * An order-0 entry is a leaf copy, maybe of a page that
		 * eviction just took out: the slot is this VMA's alone.
		 */
		if (map->order &&
		    ((cur ^ morsel_mount_entry(map->morsel, map->order, true,
					       true)) & PTE_PFN_MASK)) {
			pr_err_ratelimited("morsel: foreign entry %llx at %lx kept\n",
					   cur, vma->vm_start);
			return false;
		}
	} while (!try_cmpxchg64(slot, &cur, 0));
	WRITE_ONCE(map->mounted, false);
	return true;
}

/*
 * Clear the mount entry and flush the mm's TLB.  Kernel patch 0003 calls
 * this instead of the generic zap (munmap, exit, unmap_mapping_range) and
 * before move_page_tables (mremap): nothing below the mount is the VMA's.
 *
 * An order-0 copy lives in a process PTE table, and GUP's slow path holds
 * that table's lock from reading the copy until it has taken the page:
 * the copy is cleared under the lock, so an eviction (tree.c), which
 * releases the page after this returns, waits for a GUP in flight.
 */
static void morsel_pgtable_unmount(struct vm_area_struct *vma,
				   unsigned long start, unsigned long end)
{
	struct morsel_map *map = vma_map(vma);
	struct mm_struct *mm = vma->vm_mm;
	mentry_t *slot;
	spinlock_t *ptl;	/* an order-0 copy's PTE table lock */
	bool cleared;

	slot = mount_slot(mm, vma->vm_start, map->order, false);
	if (!slot)
		return;
	if (map->order) {
		cleared = unmount_slot(vma, map, slot);
	} else {
		/*
		 * The PTE table stays while the VMA does: the caller holds
		 * mmap_lock or i_mmap_rwsem, which free_pgtables() needs.
		 */
		ptl = pte_lockptr(mm, pmd_off(mm, vma->vm_start));
		spin_lock(ptl);
		cleared = unmount_slot(vma, map, slot);
		spin_unlock(ptl);
	}
	if (cleared)
		flush_tlb_mm_range(mm, vma->vm_start, vma->vm_end, PAGE_SHIFT, true);
}

/*
 * GUP's slow path asks this for the page behind a (special) leaf PTE,
 * holding the lock of the table the PTE is in: the page of that very
 * PTE, found by the walk GUP just made (through the mount into the
 * morsel's tables, or the order-0 copy).  Every leaf of ours changes
 * under that lock, so the page is the one the PTE maps and stays until
 * GUP has its reference.  (The tree's own walk from its root would see a
 * PTE table that a clone's break put in place meanwhile: tree.c.)
 */
struct page *morsel_find_special_page(struct vm_area_struct *vma,
				      unsigned long addr)
{
	pgd_t *pgdp = pgd_offset(vma->vm_mm, addr), pgd = READ_ONCE(*pgdp);
	p4d_t *p4dp, p4d;
	pud_t *pudp, pud;
	pmd_t *pmdp, pmd;
	pte_t pte;

	/*
	 * Each entry read once: an unmount (unmap_mapping_range, which
	 * takes no lock GUP holds) may clear the mount above the PTE table
	 * meanwhile; then there is no page to name, and GUP fails.
	 */
	if (pgd_none(pgd))
		return NULL;
	p4dp = p4d_offset_lockless(pgdp, pgd, addr);
	p4d = READ_ONCE(*p4dp);
	if (p4d_none(p4d))
		return NULL;
	pudp = pud_offset_lockless(p4dp, p4d, addr);
	pud = READ_ONCE(*pudp);
	if (pud_none(pud) || pud_leaf(pud))
		return NULL;
	pmdp = pmd_offset_lockless(pudp, pud, addr);
	pmd = READ_ONCE(*pmdp);
	if (pmd_none(pmd) || pmd_leaf(pmd))
		return NULL;
	pte = ptep_get(pte_offset_kernel(&pmd, addr));
	return pte_present(pte) ? pfn_to_page(pte_pfn(pte)) : NULL;
}

/* Never reached: ->pgtable_fault handles every fault. */
static vm_fault_t morsel_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

/*
 * A copy of a VMA (fork, mremap) joins the list.  ->open cannot fail, and
 * the entry is small, so the allocation must not either.
 */
static void morsel_vm_open(struct vm_area_struct *vma)
{
	map_add(vma_morsel(vma), vma, GFP_KERNEL | __GFP_NOFAIL, false,
		vma_map(vma)->order);
}

/* Runs after the VMA's tables are gone (->pgtable_unmount came first). */
static void morsel_vm_close(struct vm_area_struct *vma)
{
	struct morsel_map *map = vma_map(vma);
	struct morsel *m = map->morsel;

	mutex_lock(&m->lock);
	list_del(&map->node);
	m->nr_maps--;
	mutex_unlock(&m->lock);
	kfree(map);
}

static int morsel_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

/*
 * mprotect of a whole mapping.  The rights live in the mount entry, so the
 * entry goes, as at munmap: the next access mounts again with the flags
 * mprotect_fixup() sets after this returns (vma_mount_entry), and
 * change_protection() then finds an empty entry instead of walking below
 * the mount and changing the morsel's own entries for every mapper.  The
 * VMA is write-locked first, so no fault under the VMA lock mounts it
 * again with the old rights meanwhile (faults and GUP under mmap_lock wait
 * for mprotect anyway); secondary MMUs drop their copies as at eviction.
 * PROT_NONE leaves it unmounted (faults and GUP refuse the VMA; a forced
 * GUP gets nothing: morsel_pgtable_fault).  Refused (-EACCES) as at mmap:
 * rights an entry cannot express (execute without read, a protection key),
 * and a part of a mapping, which would need rights of its own below the
 * one entry that mounts the whole extent.
 */
static int morsel_vm_mprotect(struct vm_area_struct *vma, unsigned long start,
			      unsigned long end, unsigned long newflags)
{
	if (newflags == vma->vm_flags)
		return 0;
	if (start != vma->vm_start || end != vma->vm_end ||
	    !morsel_rights_expressible(newflags))
		return -EACCES;
	vma_start_write(vma);
	morsel_pgtable_unmount(vma, vma->vm_start, vma->vm_end);
	mmu_notifier_invalidate_cleared(vma->vm_mm, vma->vm_start, vma->vm_end);
	return 0;
}

const struct vm_operations_struct morsel_vm_ops = {
	.open = morsel_vm_open,
	.close = morsel_vm_close,
	.may_split = morsel_vm_may_split,
	.mprotect = morsel_vm_mprotect,
	.fault = morsel_vm_fault,
	.pgtable_fault = morsel_pgtable_fault,
	.pgtable_unmount = morsel_pgtable_unmount,
	.find_special_page = morsel_find_special_page,
};
