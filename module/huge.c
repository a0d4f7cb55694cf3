// SPDX-License-Identifier: GPL-2.0
/*
 * When a hole gets a 2 MiB leaf: the policy, apart from the tree that
 * builds the leaves (tree.c) and the source that has the blocks (source.h).
 *
 * As on tmpfs, the instance's huge= option sets the mode: never, always,
 * within_size or advise (only where asked).  A file may override it
 * (MORSEL_IOC_SET_HUGE); a populating caller may ask (a mapping with
 * MADV_HUGEPAGE, MORSEL_POPULATE_HUGE) or refuse (MADV_NOHUGEPAGE), which
 * counts where the mode is advise and refusing counts everywhere.  A morsel
 * of order below 2 has no level-2 table, so no 2 MiB leaf.
 *
 * Unlike tmpfs, no mode puts a leaf where its 2 MiB reach past the size
 * rounded up to a page: a shared mapping covers the whole extent, and the
 * bytes past the size must fault (SIGBUS) rather than reach a page; so
 * always and within_size choose alike.
 *
 * Locking: none.  The modes are single words read once (READ_ONCE); a
 * remount or the ioctl changes them for later allocations only.
 */
#include <linux/mm.h>

#include "morsel.h"

/* The caller's wish from a mapping's flags (MADV_[NO]HUGEPAGE). */
int morsel_vma_hint(const struct vm_area_struct *vma)
{
	if (vma->vm_flags & VM_NOHUGEPAGE)
		return MORSEL_HINT_REFUSED;
	return vma->vm_flags & VM_HUGEPAGE ? MORSEL_HINT_ADVISED :
					      MORSEL_HINT_NONE;
}

/* The mode in force for @m: its own, or its instance's. */
unsigned int morsel_huge_mode(struct morsel *m)
{
	unsigned int mode = READ_ONCE(m->huge);

	return mode == MORSEL_HUGE_INHERIT ? READ_ONCE(m->sbi->huge) : mode;
}

/**
 * morsel_huge_wanted - should a hole at byte offset @off be a 2 MiB leaf?
 *
 * Only a wish: the tree still needs the slot empty and a block free.
 */
bool morsel_huge_wanted(struct morsel *m, u64 off, int hint)
{
	u64 end = round_down(off, PMD_SIZE) + PMD_SIZE;

	if (hint == MORSEL_HINT_REFUSED || READ_ONCE(m->order) < 2 ||
	    !src_has_huge(m->src) || !m->inode ||
	    end > PAGE_ALIGN(i_size_read(m->inode)))
		return false;
	switch (morsel_huge_mode(m)) {
	case MORSEL_HUGE_ALWAYS:
	case MORSEL_HUGE_WITHIN_SIZE:
		return true;
	case MORSEL_HUGE_ADVISE:
		return hint == MORSEL_HINT_ADVISED;
	default:
		return false;
	}
}
