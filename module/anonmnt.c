// SPDX-License-Identifier: GPL-2.0
/*
 * anonmnt.c - private anonymous memory mounted 2 MiB at a time (the
 * instance's anon=mounted; docs/design.md: Mounted anonymous memory).
 *
 * anon.c gives a process whose memory manager is the instance a file for
 * each anonymous mmap.  With anon=mounted a private one is not mapped page
 * by page: each 2 MiB of it that the VMA covers whole, at an address equal
 * to its file offset modulo 2 MiB, is mounted by one process PMD entry,
 * the morsel's own entry for those 2 MiB (its PTE table, or its 2 MiB
 * leaf) with the VMA's rights.  Anywhere else (the ends of a VMA that
 * does not begin or end on 2 MiB, a VMA that may write and execute) the
 * process gets copies of the leaves in PTE tables of its own.  mmap places
 * such a mapping so that its offsets line up (morsel_anon_unmapped_area).
 * So a fork clones O(PTE tables) and takes write away from the parent by
 * clearing one entry per 2 MiB (clone.c's unmap_mapping_range), and a
 * 2 MiB leaf is one PMD entry, as a THP is.
 *
 * A mount is told from a process PTE table by its bits: it is a leaf, or a
 * table entry without RW or with NX, and a process table entry has RW and
 * not NX (_PAGE_TABLE).  A VMA that may write and execute (or a CPU
 * without NX) therefore never mounts, only copies.
 *
 * What each generic path does with such a VMA (VM_MIXEDMAP, not
 * VM_PFNMAP: mremap may grow it, and smaps and pagemap walk it):
 * - fault: ->pgtable_fault (kernel patch 0003) allocates the process
 *   tables above, populates the page, then mounts or copies.
 * - munmap, exit, MAP_FIXED, mremap's move, unmap_mapping_range:
 *   ->pgtable_unmount clears the mounts and copies of the range and
 *   flushes; nothing generic zaps below them (patch 0003).
 * - fork: not copied (patch 0003); the child's VMA gets a clone (anon.c)
 *   and faults.
 * - a split (munmap, mprotect, MAP_FIXED of a part, mremap's shrink):
 *   ->may_split clears the mount of the 2 MiB it cuts, which neither part
 *   covers whole any more.
 * - mprotect: ->mprotect clears the range; the next fault mounts with the
 *   new rights, and change_protection() finds nothing to change.
 * - smaps, pagemap, clear_refs, mincore, MADV_COLD and MADV_PAGEOUT walk
 *   through mounts into the morsel's tables under those tables' split
 *   locks, and ask ->find_special_page (mount.c) for a leaf's page: smaps
 *   counts 4 KiB pages in Rss, not 2 MiB leaves (special PMDs); our pages
 *   are on no LRU, so COLD and PAGEOUT leave them.
 * - NUMA balancing, KSM, khugepaged, MADV_COLLAPSE and mlock's VM_LOCKED
 *   skip VM_MIXEDMAP VMAs (mlock still populates; nothing reclaims our
 *   pages anyway).  MADV_DONTNEED and MADV_FREE punch (kernel patch 13).
 * - GUP: as for mounted morsels (mount.c: patches 0005, 0010, 0012).
 * - a change of the tree (eviction, a break of sharing, a failed page,
 *   a clone): every path that takes a page or a table out of a mapped
 *   tree flushes its mappers before it frees it (morsel_flush_mappers),
 *   and for a morsel with such VMAs (m->anon_mounts) that flush clears
 *   their mounts and copies of the range through unmap_mapping_range.
 *
 * Locking: a fault holds the mmap lock or the VMA lock (read), takes the
 * file's invalidate lock shared, as a page-by-page fault does, and walks
 * a cloned morsel under morsel_walk_lock: what it mounts or copies cannot
 * leave the tree meanwhile (eviction and failed pages hold the invalidate
 * lock exclusively; breaks and clones hold m->lock).  A mount is written
 * by cmpxchg from an empty entry and cleared by xchg; copies are written
 * and cleared under their process PTE table's lock, under which GUP reads
 * them.  ->pgtable_unmount runs under the mmap lock or the file's i_mmap
 * lock, which keep the process tables it walks.  ->may_split and
 * ->mprotect write-lock the VMA first, so that no fault under the VMA
 * lock mounts again with what is about to change.
 */
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mmu_notifier.h>
#include <linux/pagemap.h>
#include <linux/pgtable.h>
#include <linux/srcu.h>
#include <asm/tlbflush.h>

#include "morsel.h"

/* Exported by kernel patch 0001 (see mount.c). */
void flush_tlb_mm_range(struct mm_struct *mm, unsigned long start,
			unsigned long end, unsigned int stride_shift,
			bool freed_tables);

static const struct vm_operations_struct anonmnt_vm_ops;

static struct morsel *vma_morsel(struct vm_area_struct *vma)
{
	return file_inode(vma->vm_file)->i_private;
}

static u64 vma_off(struct vm_area_struct *vma, unsigned long addr)
{
	return ((u64)vma->vm_pgoff << PAGE_SHIFT) + (addr - vma->vm_start);
}

/* Is this process PMD entry of such a VMA a mount (top of file)? */
static bool pmd_mount(u64 e)
{
	return (e & _PAGE_PSE) || !(e & _PAGE_RW) || (e & _PAGE_NX);
}

/* May a VMA with these flags mount, so that its mounts can be told? */
static bool flags_mount(unsigned long flags)
{
	return !(flags & VM_WRITE) ||
	       (!(flags & VM_EXEC) && (__supported_pte_mask & _PAGE_NX));
}

/* @e with the VMA's rights; @leaf: a leaf also loses Dirty with RW. */
static mentry_t rights(mentry_t e, unsigned long flags, bool leaf)
{
	if (!(flags & VM_WRITE))
		e &= ~(mentry_t)(leaf ? _PAGE_RW | _PAGE_DIRTY : _PAGE_RW);
	if (!(flags & VM_EXEC))
		e |= _PAGE_NX & __supported_pte_mask;
	return e;
}

/* Does @vma cover the 2 MiB of @addr whole, lined up with its offset? */
static bool covers(struct vm_area_struct *vma, unsigned long addr)
{
	unsigned long start = addr & PMD_MASK;

	return start >= vma->vm_start && vma->vm_end - start >= PMD_SIZE &&
	       !((vma_off(vma, addr) ^ addr) & ~PMD_MASK) &&
	       flags_mount(vma->vm_flags);
}

/*
 * The process PMD entry of @addr, or NULL if a table above is missing;
 * then *@next (if given) is where the missing table's range ends (at most
 * @end), so that a walk over a huge sparse VMA skips it at once.
 */
static pmd_t *find_pmd(struct mm_struct *mm, unsigned long addr,
		       unsigned long end, unsigned long *next)
{
	pgd_t *pgd = pgd_offset(mm, addr);
	p4d_t *p4d;
	pud_t *pud;

	if (pgd_none(*pgd)) {
		if (next)
			*next = pgd_addr_end(addr, end);
		return NULL;
	}
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d)) {
		if (next)
			*next = p4d_addr_end(addr, end);
		return NULL;
	}
	pud = pud_offset(p4d, addr);
	if (pud_none(*pud) || pud_leaf(*pud)) {
		if (next)
			*next = pud_addr_end(addr, end);
		return NULL;
	}
	return pmd_offset(pud, addr);
}

/* Copy the leaf of @off into the process PTE of @addr under @pmd. */
static int copy_leaf(struct vm_area_struct *vma, pmd_t *pmd,
		     unsigned long addr, u64 off)
{
	struct mm_struct *mm = vma->vm_mm;
	mentry_t e, want;
	spinlock_t *ptl;	/* the process PTE table's */
	pte_t *pte;
	u64 cur;
	int err = 0;

	if (pmd_none(*pmd) && __pte_alloc(mm, pmd))
		return -ENOMEM;
	if (pmd_mount(pmd_val(pmdp_get_lockless(pmd)))) {
		pr_err_ratelimited("morsel: a mount where copies go at %lx\n",
				   addr);
		return -EEXIST;
	}
	/* The table stays while the fault holds the mmap or VMA lock. */
	ptl = pte_lockptr(mm, pmd);
	pte = pte_offset_kernel(pmd, addr);
	spin_lock(ptl);
	e = morsel_entry_at(vma_morsel(vma), off, 0);
	want = e ? rights(e, vma->vm_flags, true) : 0;
	cur = pte_val(ptep_get(pte));
	if (want && cur != want) {
		if (!cur || !((cur ^ want) & PTE_PFN_MASK)) {
			/* new, or the same page with write now (a break) */
			set_pte_at(mm, addr, pte, __pte(want));
		} else {
			pr_err_ratelimited("morsel: a stale copy at %lx\n",
					   addr);
			err = -EEXIST;
		}
	}
	spin_unlock(ptl);
	return err;
}

/*
 * Mount the 2 MiB of @addr, or copy the leaf of @addr (top of file).
 * Return: 0 (also when a racing fault did it), -ENOMEM or -EEXIST (an
 * entry of something else in the way: a bug, reported).
 */
static int map_at(struct vm_area_struct *vma, unsigned long addr, u64 off)
{
	struct mm_struct *mm = vma->vm_mm;
	pgd_t *pgd = pgd_offset(mm, addr);
	mentry_t e, want;
	p4d_t *p4d;
	pud_t *pud;
	pmd_t *pmd;
	u64 cur;

	p4d = p4d_alloc(mm, pgd, addr);
	if (!p4d)
		return -ENOMEM;
	pud = pud_alloc(mm, p4d, addr);
	if (!pud)
		return -ENOMEM;
	pmd = pmd_alloc(mm, pud, addr);
	if (!pmd)
		return -ENOMEM;
	if (!covers(vma, addr))
		return copy_leaf(vma, pmd, addr, off);
	e = morsel_entry_at(vma_morsel(vma), off, 1);
	if (!e)
		return copy_leaf(vma, pmd, addr, off);
	want = rights(e, vma->vm_flags, e & _PAGE_PSE);
	cur = 0;
	if (try_cmpxchg64((u64 *)pmd, &cur, want) || cur == want)
		return 0;
	/* A process table: these 2 MiB were not whole before mremap grew. */
	if (!pmd_mount(cur))
		return copy_leaf(vma, pmd, addr, off);
	/* Hardware sets A in a table entry; the rest must match. */
	if (!((cur ^ want) & ~(u64)_PAGE_ACCESSED))
		return 0;
	if (!((cur ^ want) & PTE_PFN_MASK) && (want & _PAGE_RW)) {
		/*
		 * The same table or leaf, writable now (its other owner let
		 * go): it gains write in place, within the VMA's rights.
		 */
		try_cmpxchg64((u64 *)pmd, &cur, want);
		return 0;
	}
	/*
	 * The tree changed below the mount without taking a page out (a
	 * clone's shared 2 MiB leaf split into a table of its own): the old
	 * mount maps the same pages, read-only, and the new one replaces it.
	 * (What takes a page or a table out clears the mounts first.)
	 */
	if (try_cmpxchg64((u64 *)pmd, &cur, want))
		flush_tlb_mm_range(mm, addr & PMD_MASK, (addr & PMD_MASK) +
				   PMD_SIZE, PAGE_SHIFT, true);
	return 0;
}

static vm_fault_t anonmnt_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct inode *inode = file_inode(vma->vm_file);
	u64 off = vma_off(vma, vmf->address & PAGE_MASK);
	vm_fault_t ret;

	/* Only a forced GUP (ptrace) of a PROT_NONE VMA gets here. */
	if (!morsel_vma_mounts(vma->vm_flags))
		return VM_FAULT_SIGBUS;
	/* mremap made the VMA longer than the file: the file grows. */
	if (off >= PAGE_ALIGN(i_size_read(inode))) {
		ret = morsel_anon_grow(vma);
		if (ret)
			return ret;
	}
	filemap_invalidate_lock_shared(inode->i_mapping);
	ret = morsel_fault_in(vmf, inode->i_private, off, map_at);
	filemap_invalidate_unlock_shared(inode->i_mapping);
	return ret;
}

/*
 * Clear the mounts (and with @copies the leaf copies) of [@start, @end)
 * and flush what was cleared.  A mount clears its whole 2 MiB.
 */
static void clear_range(struct vm_area_struct *vma, unsigned long start,
			unsigned long end, bool copies)
{
	unsigned long addr, next, lo = ULONG_MAX, hi = 0;
	struct mm_struct *mm = vma->vm_mm;

	for (addr = start; addr < end; addr = next) {
		unsigned long base = addr & PMD_MASK, a;
		pmd_t *pmd = find_pmd(mm, addr, end, &next);
		spinlock_t *ptl;	/* the process PMD or PTE table's */
		pmd_t pmdval;
		pte_t *pte;
		u64 cur;

		if (!pmd)
			continue;
		next = pmd_addr_end(addr, end);
		pmdval = pmdp_get_lockless(pmd);
		cur = pmd_val(pmdval);
		if (!cur)
			continue;
		if (pmd_mount(cur)) {
			/*
			 * Under the PMD's lock, which GUP holds from reading
			 * a 2 MiB leaf to taking its page (and a table
			 * mount's GUP checks the entry again under the
			 * table's lock).
			 */
			ptl = pmd_lock(mm, pmd);
			cur = pmd_val(pmdp_get(pmd));
			if (pmd_mount(cur)) {
				WRITE_ONCE(*(u64 *)pmd, 0);
				lo = min(lo, base);
				hi = max(hi, base + PMD_SIZE);
			}
			spin_unlock(ptl);
			continue;
		}
		if (!copies || pmd_leaf(pmdval))
			continue;
		/*
		 * The entry read once, then checked again under the table's
		 * lock, as pte_offset_map_lock() does: mremap's move may
		 * take the table away meanwhile (move_normal_pmd()).
		 */
		ptl = pte_lockptr(mm, &pmdval);
		pte = pte_offset_kernel(&pmdval, addr);
		spin_lock(ptl);
		if (!pmd_same(pmdval, pmdp_get_lockless(pmd))) {
			spin_unlock(ptl);
			continue;
		}
		for (a = addr; a < next; a += PAGE_SIZE, pte++) {
			if (pte_none(ptep_get(pte)))
				continue;
			ptep_get_and_clear(mm, a, pte);
			lo = min(lo, a);
			hi = max(hi, a + PAGE_SIZE);
		}
		spin_unlock(ptl);
		cond_resched();
	}
	if (lo < hi)
		flush_tlb_mm_range(mm, lo, hi, PAGE_SHIFT, true);
}

static void anonmnt_pgtable_unmount(struct vm_area_struct *vma,
				    unsigned long start, unsigned long end)
{
	clear_range(vma, start, end, true);
}

/* A split at @addr inside 2 MiB: neither part covers them whole. */
static int anonmnt_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	int err = morsel_anon_may_split(vma, addr);

	if (err)
		return err;
	if (addr & ~PMD_MASK) {
		vma_start_write(vma);
		clear_range(vma, addr, addr + PAGE_SIZE, false);
	}
	return 0;
}

/*
 * mprotect of [@start, @end): the rights live in the mounts and copies,
 * so they go, and the next access maps with the flags mprotect_fixup()
 * sets after this returns.  Rights no entry can express (execute without
 * read, a protection key) are refused as at mmap of a morsel (-EACCES).
 */
static int anonmnt_mprotect(struct vm_area_struct *vma, unsigned long start,
			    unsigned long end, unsigned long newflags)
{
	if (newflags == vma->vm_flags)
		return 0;
	if (!morsel_rights_expressible(newflags))
		return -EACCES;
	vma_start_write(vma);
	clear_range(vma, start, end, true);
	mmu_notifier_invalidate_cleared(vma->vm_mm, start, end);
	return 0;
}

/* Never reached: ->pgtable_fault handles every fault. */
static vm_fault_t anonmnt_vm_fault(struct vm_fault *vmf)
{
	return VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct anonmnt_vm_ops = {
	.open = morsel_anon_open,
	.close = morsel_anon_close,
	.may_split = anonmnt_may_split,
	.mprotect = anonmnt_mprotect,
	.fault = anonmnt_vm_fault,
	.pgtable_fault = anonmnt_fault,
	.pgtable_unmount = anonmnt_pgtable_unmount,
	.find_special_page = morsel_find_special_page,
};

/* ->mmap of private anonymous memory under anon=mounted (anon.c). */
int morsel_anon_mount_vma(struct morsel *m, struct vm_area_struct *vma)
{
	if (!morsel_rights_expressible(vma->vm_flags))
		return -EACCES;
	WRITE_ONCE(m->anon_mounts, true);
	vma->vm_ops = &anonmnt_vm_ops;
	vm_flags_set(vma, VM_MIXEDMAP);
	atomic_inc(&m->nr_paged);
	return 0;
}

/*
 * Where private anonymous memory goes (file.c): a mapping of 2 MiB or
 * more whose place the caller left to the kernel goes where its file
 * offsets line up with the addresses modulo 2 MiB, so that each 2 MiB it
 * covers can be mounted (with anon=paged too: a remount may change the
 * mode, and mremap moves a VMA through here).  One more 2 MiB is asked
 * for, and the mapping aligned inside it, as THP does.
 */
unsigned long morsel_anon_unmapped_area(struct file *file, unsigned long addr,
					unsigned long len, unsigned long pgoff,
					unsigned long flags)
{
	unsigned long off = (pgoff << PAGE_SHIFT) & ~PMD_MASK, area, at;
	struct mm_struct *mm = current->mm;

	if (len < PMD_SIZE || (flags & MAP_FIXED) || len + PMD_SIZE < len)
		return mm_get_unmapped_area(mm, file, addr, len, pgoff, flags);
	if (addr) {
		area = mm_get_unmapped_area(mm, file, addr, len, pgoff, flags);
		if (area == addr || IS_ERR_VALUE(area))
			return area;	/* the caller's hint holds */
	}
	area = mm_get_unmapped_area(mm, file, 0, len + PMD_SIZE, pgoff, flags);
	if (IS_ERR_VALUE(area))
		return mm_get_unmapped_area(mm, file, addr, len, pgoff, flags);
	at = (area & PMD_MASK) + off;
	return at < area ? at + PMD_SIZE : at;
}
