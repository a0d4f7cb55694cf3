// SPDX-License-Identifier: GPL-2.0
/*
 * When a hole gets a 2 MiB or a 1 GiB leaf: the policy, apart from the
 * tree that builds the leaves (tree.c) and the source that has the blocks
 * (source.h; 1 GiB blocks only from a huge1g= reserve, pool.c).
 *
 * As on tmpfs, the instance's huge= option sets the mode: never, always,
 * within_size or advise (only where asked).  A file may override it
 * (MORSEL_IOC_SET_HUGE); a populating caller may ask (a mapping with
 * MADV_HUGEPAGE, MORSEL_POPULATE_HUGE) or refuse (MADV_NOHUGEPAGE), which
 * counts where the mode is advise and refusing counts everywhere.  A morsel
 * of order below 2 has no level-2 table, so no 2 MiB leaf; one below 3
 * has no level-3 table, so no 1 GiB leaf.  Where both fit, the larger
 * is wanted: the tree tries it first and falls back.
 *
 * Unlike tmpfs, no mode puts a leaf where its 2 MiB (or 1 GiB) reach past
 * the size rounded up to a page: a shared mapping covers the whole extent,
 * and the bytes past the size must fault (SIGBUS) rather than reach a
 * page; so always and within_size choose alike.
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

/* Whether the leaf of @level around @off lies inside the size. */
static bool leaf_fits(struct morsel *m, u64 off, int level)
{
	u64 span = morsel_extent(level);

	return READ_ONCE(m->order) > level && src_has_huge(m->src, level) &&
	       round_down(off, span) + span <= PAGE_ALIGN(i_size_read(m->inode));
}

/**
 * morsel_huge_wanted - should a hole at byte offset @off be a huge leaf?
 *
 * Return: the level of the largest leaf wanted and possible there (2 for
 * 1 GiB, 1 for 2 MiB), or 0 for 4 KiB pages.  Only a wish: the tree still
 * needs the slot empty and a block free, and falls back level by level.
 */
int morsel_huge_wanted(struct morsel *m, u64 off, int hint)
{
	if (hint == MORSEL_HINT_REFUSED || !m->inode)
		return 0;
	switch (morsel_huge_mode(m)) {
	case MORSEL_HUGE_ALWAYS:
	case MORSEL_HUGE_WITHIN_SIZE:
		break;
	case MORSEL_HUGE_ADVISE:
		if (hint == MORSEL_HINT_ADVISED)
			break;
		return 0;
	default:
		return 0;
	}
	if (leaf_fits(m, off, 2))
		return 2;
	return leaf_fits(m, off, 1) ? 1 : 0;
}
