// SPDX-License-Identifier: GPL-2.0
/*
 * Mounting morsels into processes.
 *
 * A VMA of a morsel covers exactly one extent, naturally aligned (fs.c
 * enforces it).  It is mounted by one entry in the process's own tables,
 * one level above the morsel's root: a PTE (order 0), PMD (order 1) or PUD
 * (order 2) entry.  The entry is the morsel's root entry with the rights of
 * this mapping: _PAGE_RW only for a writable VMA, _PAGE_NX unless the VMA
 * is executable.  The hardware checks RW and NX at every level, so the
 * morsel's own entries can stay fully permissive.
 *
 * The kernel patch gives us two hooks (vm_ops->pgtable_fault and
 * ->pgtable_unmount); with them no generic walker ever enters the morsel:
 * - fault: our handler replaces the generic walk.  It allocates the process
 *   tables above the mount with the generic allocators (same locks and
 *   pgtables_bytes accounting as a normal fault), populates the morsel and
 *   writes the mount entry.
 * - munmap, exit, MAP_FIXED over the VMA, mremap: ->pgtable_unmount clears
 *   the mount and flushes the mm's TLB before generic code zaps, frees or
 *   moves tables, so they see an empty entry.
 * - fork: the patched vma_needs_copy() does not copy the VMA's tables; the
 *   child mounts on its first fault.
 * VMA flags VM_PFNMAP|VM_IO|VM_DONTEXPAND|VM_DONTDUMP make GUP, madvise
 * (DONTNEED, FREE, COLD, PAGEOUT), page walkers, NUMA balancing, the OOM
 * reaper, khugepaged, mlock, KSM and userfaultfd skip or refuse the VMA;
 * ->may_split and ->mprotect refuse splits and protection changes.
 *
 * Locking: a fault runs under the VMA read lock or mmap_lock (read).  The
 * mount entry is owned by this VMA alone (the VMA spans the whole entry), so
 * a cmpxchg from 0 is enough against a concurrent fault; unmount runs with
 * the VMA write-locked (munmap, mremap) or the mm dying (exit), so no fault
 * races with it.  m->order cannot change while the VMA exists (nr_maps > 0).
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/pgtable.h>
#include <asm/tlbflush.h>

#include "morsel.h"

/*
 * Exported by kernel patch 0001; asm/tlbflush.h hides the declaration from
 * modules (#ifndef MODULE), so repeat it here.
 */
void flush_tlb_mm_range(struct mm_struct *mm, unsigned long start,
			unsigned long end, unsigned int stride_shift,
			bool freed_tables);

static struct morsel *vma_morsel(struct vm_area_struct *vma)
{
	return vma->vm_private_data;
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

	if (order >= 3)		/* orders 3 and 4 are refused by fs.c */
		return NULL;
	if (alloc) {
		p4d = p4d_alloc(mm, pgd, addr);
		pud = p4d ? pud_alloc(mm, p4d, addr) : NULL;
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

static vm_fault_t morsel_pgtable_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct morsel *m = vma_morsel(vma);
	u64 off = vmf->address - vma->vm_start;
	mentry_t *slot, want, cur;

	if (off >= PAGE_ALIGN(i_size_read(file_inode(vma->vm_file))))
		return VM_FAULT_SIGBUS;
	if (morsel_populate(m, off))
		return VM_FAULT_OOM;
	slot = mount_slot(vma->vm_mm, vma->vm_start, m->order, true);
	if (!slot)
		return VM_FAULT_OOM;
	want = morsel_mount_entry(m, vma->vm_flags & VM_WRITE,
				  vma->vm_flags & VM_EXEC);
	cur = 0;
	if (try_cmpxchg64(slot, &cur, want))
		return VM_FAULT_NOPAGE;
	/* Already mounted (by a racing fault, or a stale TLB entry). */
	if ((cur & PTE_PFN_MASK) != (want & PTE_PFN_MASK)) {
		pr_err_ratelimited("morsel: foreign entry %llx at %lx\n",
				   cur, vmf->address);
		return VM_FAULT_SIGBUS;
	}
	return VM_FAULT_NOPAGE;
}

static void morsel_pgtable_unmount(struct vm_area_struct *vma,
				   unsigned long start, unsigned long end)
{
	struct morsel *m = vma_morsel(vma);
	mentry_t *slot;

	slot = mount_slot(vma->vm_mm, vma->vm_start, m->order, false);
	if (!slot || !xchg(slot, 0))
		return;
	flush_tlb_mm_range(vma->vm_mm, vma->vm_start, vma->vm_end,
			   PAGE_SHIFT, true);
}

/* Never reached: ->pgtable_fault handles every fault. */
static vm_fault_t morsel_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static void morsel_vm_open(struct vm_area_struct *vma)
{
	atomic_inc(&vma_morsel(vma)->nr_maps);
}

static void morsel_vm_close(struct vm_area_struct *vma)
{
	atomic_dec(&vma_morsel(vma)->nr_maps);
}

static int morsel_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	return -EINVAL;
}

static int morsel_vm_mprotect(struct vm_area_struct *vma, unsigned long start,
			      unsigned long end, unsigned long newflags)
{
	return newflags == vma->vm_flags ? 0 : -EACCES;
}

const struct vm_operations_struct morsel_vm_ops = {
	.open = morsel_vm_open,
	.close = morsel_vm_close,
	.may_split = morsel_vm_may_split,
	.mprotect = morsel_vm_mprotect,
	.fault = morsel_vm_fault,
	.pgtable_fault = morsel_pgtable_fault,
	.pgtable_unmount = morsel_pgtable_unmount,
};
