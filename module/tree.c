// SPDX-License-Identifier: GPL-2.0
/*
 * The page-table tree owned by one morsel.
 *
 * A morsel of order N is a subtree of the x86-64 hierarchy: its root is a
 * level-N table (1 = PTE table, 2 = PMD, 3 = PUD, 4 = P4D) or, for order 0,
 * the data page itself.  The entry that points at the root lives in
 * struct morsel (@root) and has exactly the hardware format, so mounting is
 * copying that one entry into a process table (mount.c).
 *
 * Entries inside the tree carry full rights (present, user, RW, no NX);
 * each mapping restricts them in its mounting entry.  Leaves are special
 * PTEs: GUP-fast refuses them, so every pin takes the slow path, which asks
 * ->find_special_page (mount.c) for the page and checks the VMA's rights.
 * Data pages are ordinary refcounted pages, so a pin outlives eviction.
 *
 * Locking and memory ordering:
 * - Population (morsel_populate, morsel_populate_range) takes no lock,
 *   but for the root of a volatile morsel (once per filling; below).  A
 *   missing table or page is allocated and zeroed, then published with a
 *   cmpxchg on the empty entry.  The cmpxchg is a full barrier (LOCK
 *   CMPXCHG), so the zeroed contents are visible before the entry to other
 *   CPUs and to the page walker.  The loser of a race frees its copy and
 *   continues with the winner's.  Populating callers hold either a shared
 *   mapping (faults), the invalidate lock shared (faults of page-by-page
 *   mappings, file.c) or the inode lock (read, write, fallocate, ioctls).
 * - The order rises under m->lock while faults may walk the tree: the old
 *   root becomes entry 0 of the new top table, so every table and page
 *   keeps its place, and the new root is installed with a cmpxchg against
 *   the old one (a fault may just have filled an empty root).  An empty
 *   root of a volatile morsel stays empty (no table until the first page);
 *   there only the order changes, so its root is published under m->lock
 *   and only at the order it was made for (publish_root).  Walkers
 *   read order and root together under m->seq, and a walker that loses a
 *   race at the root entry itself starts again.
 * - Tables are freed (morsel_free_range, lowering the order,
 *   morsel_destroy) only with the inode lock and the invalidate lock held
 *   exclusively, m->lock held and no mapping that mounts them
 *   (morsel_tables_mapped() false), after
 *   every former mapping was unmounted and its TLB flushed: then no CPU
 *   walks the tree and nobody populates it.  Software
 *   walkers that run without locks (GUP-fast, perf's page-size walk, KVM's
 *   mapping-level lookup) hold off RCU by disabling interrupts, and on a
 *   paravirtual guest the TLB flush may skip a preempted vCPU that is in
 *   such a walk; so a table that was ever published goes back to the page
 *   allocator only after an RCU grace period (call_rcu), as the kernel's
 *   own tlb_remove_table() does.
 * - Leaves of a mapped morsel are cleared by morsel_evict_mapped with
 *   m->lock and the PTE table's split page-table lock held (the lock GUP's
 *   slow path holds while it takes its reference); the TLBs of all mappers
 *   are flushed and their secondary MMUs (KVM, ...) invalidated before the
 *   pages are freed.  Tables stay.
 * - Memory is charged twice: to the memory cgroup of the allocating task
 *   (__GFP_ACCOUNT, as shmem does; the charge stays with the page) and to
 *   the file system's size= limit (fs.c: morsel_charge), which is taken
 *   before a page or table is allocated and given back when it is freed
 *   or loses a publication race.  An allocation for an offset in the
 *   file's reserved range draws on the reservation first (size.c:
 *   morsel_draw), which was charged ahead; on a persistent device it
 *   also takes one of the pages the reservation holds.
 * - Freeing is post-order: a table or page is freed only after every entry
 *   below it is gone, and the entry pointing at it is cleared before it is
 *   freed, so an interrupted teardown leaves a consistent smaller tree.
 * - 2 MiB leaves: an entry of a level-2 (PMD) table may map 512 pages at
 *   once (PSE, special like every leaf).  The pages are ordinary pages,
 *   each with its own reference (source.h: huge_alloc), so a huge leaf is
 *   published like any other leaf (cmpxchg on the empty slot) and only
 *   where no PTE table is yet.  Splitting it puts a PTE table over the
 *   same pages in its place, with the same rights and attributes, under
 *   the PMD table's split lock (which GUP's slow path holds from reading
 *   the leaf to taking its page); nothing moves, so a split needs no lock
 *   of ours and a mapper whose TLB still holds the 2 MiB translation
 *   reaches the same memory (the Intel SDM allows a page-size change that
 *   keeps frames and attributes without a flush between; the next
 *   eviction of the range flushes).  Collapsing goes the other way, in
 *   place when the 512 pages are the contiguous ones a split left, else
 *   by copying into a new block with no mapping, page-by-page or mounted,
 *   and no pin (morsel_collapse).
 * - 1 GiB leaves: an entry of a level-3 (PUD) table may map 262144 pages,
 *   a block of the instance's reserve (pool.c), published like a 2 MiB
 *   leaf.  It splits into a PMD table of 512 2 MiB leaves over the same
 *   pages, by cmpxchg alone: PUD tables have no split lock, and GUP reads
 *   a PUD leaf under its own mm's page_table_lock, so before any page
 *   that was under such a leaf is freed, morsel_flush_mappers takes every
 *   mapper's page_table_lock once (mount.c).  A whole leaf that goes
 *   gives its block back to the source as one (src_huge_free); a split
 *   one's pages go one by one.  Collapsing makes 2 MiB leaves only.
 */
#include <linux/bvec.h>
#include <linux/fs.h>
#include <linux/highmem.h>
#include <linux/uio.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <asm/pgalloc.h>

#include "morsel.h"
#include "morsel_pm.h"

#define ENTRY_TABLE	((mentry_t)_PAGE_TABLE)
#define HUGE_NR		PTRS_PER_PTE		/* pages under a 2 MiB leaf */
#define HUGE_SIZE	PMD_SIZE

/* The root word of an order-@order tree whose root entry is @e. */
static inline mentry_t root_word(mentry_t e, unsigned int order)
{
	return e ? e | (mentry_t)order << MPM_ROOT_ORDER_SHIFT : 0;
}

/*
 * Every store into a tree or a root word goes through these three: on a
 * persistent morsel they are the device's metadata stores (pm.c).
 */
static inline void tstore(struct morsel *m, mentry_t *slot, mentry_t v)
{
	if (m->pm)
		morsel_pm_store(m->pm, slot, v);
	else
		WRITE_ONCE(*slot, v);
}

static inline mentry_t txchg(struct morsel *m, mentry_t *slot, mentry_t v)
{
	return m->pm ? morsel_pm_xchg(m->pm, slot, v) : xchg(slot, v);
}

static inline bool tcmpxchg(struct morsel *m, mentry_t *slot, mentry_t *old,
			    mentry_t new)
{
	return m->pm ? morsel_pm_cmpxchg(m->pm, slot, old, new) :
		       try_cmpxchg64(slot, old, new);
}

static inline void *entry_va(mentry_t e)
{
	return __va(e & PTE_PFN_MASK);
}

/* Span in bytes of the object a level-@level entry points to. */
static inline u64 level_span(int level)
{
	return morsel_extent(level);
}

static inline unsigned int level_index(u64 off, int level)
{
	return (off >> (PAGE_SHIFT + 9 * (level - 1))) & (PTRS_PER_PTE - 1);
}

/* A table's split lock and page type, as for any page table of @level. */
static bool table_ctor(struct ptdesc *pt, int level)
{
	if (level == 1)
		return pagetable_pte_ctor(pt);
	if (level == 2)
		return pagetable_pmd_ctor(pt);
	if (level == 3)
		pagetable_pud_ctor(pt);
	return true;
}

static void table_dtor(struct ptdesc *pt, int level)
{
	if (level == 1)
		pagetable_pte_dtor(pt);
	else if (level == 2)
		pagetable_pmd_dtor(pt);
	else if (level == 3)
		pagetable_pud_dtor(pt);
}

/*
 * Give back @nr pages that were taken for allocations that failed: to the
 * reservation for the first @drawn of them (size.c), to the limit for the
 * rest.  (A held device page that became a table whose constructor failed
 * went back to the free pages: the reservation takes a free one later.)
 */
static void charge_back(struct morsel *m, unsigned long nr,
			unsigned long drawn)
{
	morsel_undraw(m, min(nr, drawn));
	if (nr > drawn)
		morsel_uncharge(m, nr - drawn);
}

/*
 * A new zeroed table for @level, on the way to byte offset @off (U64_MAX:
 * above the tree, never reserved).  Return: the table, ERR_PTR(-ENOSPC)
 * (the size limit, or a full device) or ERR_PTR(-ENOMEM).
 */
static void *table_alloc(struct morsel *m, int level, u64 off)
{
	unsigned long drawn = morsel_draw(m, off, 1);
	struct ptdesc *pt;
	int err;

	if (!drawn && !morsel_charge(m, 1))
		return ERR_PTR(-ENOSPC);
	pt = src_table_alloc(m->src, drawn);
	err = pt ? -ENOMEM : m->src->full_errno;
	if (pt && !table_ctor(pt, level)) {
		src_table_free(m->src, pt, false);
		pt = NULL;
	}
	if (!pt) {
		charge_back(m, 1, drawn);
		return ERR_PTR(err);
	}
	atomic_set(&pt->pt_frag_refcount, 0);	/* no other owner (share) */
	atomic_long_inc(&m->nr_tables[level - 1]);
	atomic_long_inc(&morsel_stat_tables);
	return ptdesc_address(pt);
}

/*
 * Free a table.  One that was ever published (@published) may still be
 * under a lockless walker: it goes after a grace period (top of file).
 */
static void table_free(struct morsel *m, void *table, int level,
		       bool published)
{
	struct ptdesc *pt = virt_to_ptdesc(table);

	table_dtor(pt, level);
	src_table_free(m->src, pt, published);
	atomic_long_dec(&m->nr_tables[level - 1]);
	atomic_long_dec(&morsel_stat_tables);
	morsel_uncharge(m, 1);
}

static mentry_t table_entry(void *table)
{
	return (mentry_t)__pa(table) | ENTRY_TABLE;
}

static mentry_t page_entry(struct page *page)
{
	/* pgprot_encrypted: the SME/SEV C-bit, as vm_get_page_prot() adds. */
	pte_t pte = pfn_pte(page_to_pfn(page),
			    pgprot_encrypted(PAGE_SHARED_EXEC));

	return pte_val(pte_mkspecial(pte_mkdirty(pte_mkyoung(pte))));
}

static struct page *entry_page(mentry_t e)
{
	return pfn_to_page((e & PTE_PFN_MASK) >> PAGE_SHIFT);
}

/*
 * Is the leaf @e a 2 MiB one?  In a PTE the same bit is PAT, which no
 * 4 KiB leaf of ours sets (nor the root word of order 0, nor the poison),
 * so any leaf a walk returns can be asked.
 */
static inline bool entry_huge(mentry_t e)
{
	return e & _PAGE_PSE;
}

/* The entry of a leaf of @level (1: 2 MiB, PMD; 2: 1 GiB, PUD). */
static mentry_t huge_entry(struct page *page, int level)
{
	pgprot_t prot = pgprot_encrypted(PAGE_SHARED_EXEC);
	pmd_t pmd;
	pud_t pud;

	if (level == 2) {
		pud = pfn_pud(page_to_pfn(page), prot);
		return pud_val(pud_mkspecial(pud_mkdirty(pud_mkyoung(pud_mkhuge(pud)))));
	}
	pmd = pfn_pmd(page_to_pfn(page), prot);
	return pmd_val(pmd_mkspecial(pmd_mkdirty(pmd_mkyoung(pmd_mkhuge(pmd)))));
}

/* The page at byte offset @off under the leaf @e of @level (walk_to). */
static struct page *leaf_page(mentry_t e, u64 off, int level)
{
	return entry_page(e) +
	       ((off >> PAGE_SHIFT) & (MORSEL_LEAF_PAGES(level) - 1));
}

/*
 * A data page names its morsel and offset while it is in the tree, so
 * that the owner of a failed page can be found (memerr.c).  Set before the
 * page is published (or when a device's tree is adopted), cleared before
 * the tree lets go of it.  (A device page's lru words hold its pgmap; its
 * index and private words are free, as fsdax uses them too.)
 */
static void page_owned(struct morsel *m, struct page *page, u64 off)
{
	page->index = off >> PAGE_SHIFT;
	set_page_private(page, m->id);	/* and no other owner (share) */
}

static void page_disowned(struct morsel *m, struct page *page)
{
	set_page_private(page, 0);
}

/* Count @nr published (or, negative, freed) pages; frees give back size. */
static void pages_added(struct morsel *m, long nr)
{
	atomic_long_add(nr, &m->nr_pages);
	atomic_long_add(nr, &morsel_stat_pages);
	if (nr < 0)
		morsel_uncharge(m, -nr);
}

/*
 * Drop the morsel's reference; a GUP pin keeps the page alive (a device
 * page goes back to the device's allocator once unpinned, pm.c).
 */
static void page_release(struct morsel *m, struct page *page)
{
	page_disowned(m, page);
	src_page_free(m->src, page);
}

static bool page_leave(struct page *page);

/*
 * @m lets go of @page, which it no longer counts (its leaf is cleared and
 * flushed): released, unless another tree still owns it (a clone), which
 * keeps it and its charge.
 */
static void page_dropped(struct morsel *m, struct page *page)
{
	if (page_leave(page))
		return;
	page_release(m, page);
	atomic_long_dec(&morsel_stat_pages);
	morsel_uncharge(m, 1);
}

/* A page leaves @m's tree. */
static void page_gone(struct morsel *m, struct page *page)
{
	atomic_long_dec(&m->nr_pages);
	page_dropped(m, page);
}

/* A leaf goes: a page's is released, a poisoned one had nothing left. */
static void page_free(struct morsel *m, mentry_t e)
{
	if (e != MORSEL_POISON)
		page_gone(m, entry_page(e));
}

/* A page that lost its publication race (or was never used). */
static void page_unused(struct morsel *m, struct page *page)
{
	page_release(m, page);
	morsel_uncharge(m, 1);
}

/* Count @nr leaves of @level published (or, negative, gone). */
static void huge_added(struct morsel *m, int level, long nr)
{
	if (level == 2) {
		atomic_long_add(nr, &m->nr_huge1g);
		atomic_long_add(nr, &morsel_stat_huge1g);
		return;
	}
	atomic_long_add(nr, &m->nr_huge);
	atomic_long_add(nr, &morsel_stat_huge);
}

/* The pages of a leaf of @level whose entry is gone (and flushed) go. */
static void huge_release(struct morsel *m, struct page *page, int level)
{
	unsigned long i;

	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		page_disowned(m, page + i);
	src_huge_free(m->src, page, level);
}

/*
 * ---- Sharing between trees (clones; docs/design.md) ----
 *
 * An entry without RW (and, for a leaf, without Dirty: RW=0 with D=1 is a
 * shadow-stack page) points at something that may be shared.  Tables
 * count their other owners in pt_frag_refcount, data pages in the upper
 * half of page->private.  Only tables of levels 1 and 2 and leaves are
 * ever shared; the root and the tables of level 3 and up never are.
 */
#define LEAF_MARKS	((mentry_t)(_PAGE_RW | _PAGE_DIRTY))
#define TABLE_MARKS	((mentry_t)_PAGE_RW)
#define OWNER_ONE	BIT(32)

static inline bool entry_leaf(mentry_t e, int level)
{
	return !level || entry_huge(e);
}

static inline bool entry_marked(mentry_t e)
{
	return !(e & _PAGE_RW);
}

static inline mentry_t marks(mentry_t e, int level)
{
	return entry_leaf(e, level) ? LEAF_MARKS : TABLE_MARKS;
}

/* Take write away from the entry in @slot (atomic: the MMU sets A bits). */
static void entry_protect(mentry_t *slot, int level)
{
	mentry_t e = READ_ONCE(*slot);

	while (e && e != MORSEL_POISON &&
	       !try_cmpxchg64(slot, &e, e & ~marks(e, level)))
		;
}

static void entry_unprotect(mentry_t *slot, int level)
{
	mentry_t e = READ_ONCE(*slot);

	while (e && !try_cmpxchg64(slot, &e, e | marks(e, level)))
		;
}

static atomic_t *table_owners(void *table)
{
	return &virt_to_ptdesc(table)->pt_frag_refcount;
}

static atomic_long_t *page_owners(struct page *page)
{
	return (atomic_long_t *)&page->private;
}

static bool page_shared(struct page *page)
{
	return atomic_long_read(page_owners(page)) >= (long)OWNER_ONE;
}

/* One owner leaves @page: true if others still own it (it stays). */
static bool page_leave(struct page *page)
{
	long old = atomic_long_read(page_owners(page));

	do {
		if (old < (long)OWNER_ONE)
			return false;
	} while (!atomic_long_try_cmpxchg(page_owners(page), &old,
					  old - OWNER_ONE));
	return true;
}

/* Whether any page under the leaf @e of @level has another owner. */
static bool leaf_shared(mentry_t e, int level)
{
	unsigned long i;

	if (e == MORSEL_POISON)
		return false;
	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		if (page_shared(entry_page(e) + i))
			return true;
	return false;
}

/* The object @e of level @level (a page, a leaf, a table) gains an owner. */
static void object_join(mentry_t e, int level)
{
	unsigned long i;

	if (!e || e == MORSEL_POISON)
		return;
	if (entry_leaf(e, level)) {
		for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
			atomic_long_add(OWNER_ONE, page_owners(entry_page(e) + i));
	} else {
		atomic_inc(table_owners(entry_va(e)));
	}
}

/*
 * What a subtree holds, for the counters of a morsel that starts or stops
 * referencing it while another keeps it (a shared object is counted in
 * each file that references it, and once in the totals).
 */
struct tally {
	long pages, huge, huge1g;
	long tables[MORSEL_TABLE_LEVELS];
};

static void tally_add(struct tally *t, mentry_t e, int level)
{
	mentry_t *table;
	unsigned int i;

	if (!e || e == MORSEL_POISON)
		return;
	if (entry_leaf(e, level)) {
		t->pages += MORSEL_LEAF_PAGES(level);
		if (level == 1)
			t->huge++;
		else if (level == 2)
			t->huge1g++;
		return;
	}
	t->tables[level - 1]++;
	table = entry_va(e);
	for (i = 0; i < PTRS_PER_PTE; i++)
		tally_add(t, READ_ONCE(table[i]), level - 1);
}

/*
 * Add (@sign 1) or take away (-1) @t from @m's counters: pages and tables
 * are @m's alone (the totals count them once), huge leaves also in the
 * totals, which count leaves in trees, a shared one in each (a split on
 * one side leaves the other's leaf whole).
 */
static void tally_apply(struct morsel *m, const struct tally *t, int sign)
{
	int i;

	atomic_long_add(sign * t->pages, &m->nr_pages);
	huge_added(m, 1, sign * t->huge);
	huge_added(m, 2, sign * t->huge1g);
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		atomic_long_add(sign * t->tables[i], &m->nr_tables[i]);
}

/*
 * @m stops referencing the possibly shared table @e of @level (its entry
 * is already cleared, and no walker of @m can be in it).  Return: true if
 * another owner keeps it (only @m's own counters change); false if @m was
 * the last owner and must free it as its own.
 */
static bool table_leave(struct morsel *m, mentry_t e, int level)
{
	struct tally t = { };

	tally_add(&t, e, level);	/* stable: we still own it */
	if (!atomic_add_unless(table_owners(entry_va(e)), -1, 0))
		return false;
	tally_apply(m, &t, -1);
	return true;
}

/*
 * The whole huge leaf @e of @level left @m's tree (cleared and flushed):
 * its block goes back as one, unless some of its pages have other owners;
 * then it goes page by page, as after a split.  (The caller counts the
 * leaf itself: huge_added.)
 */
static void leaf_gone(struct morsel *m, mentry_t e, int level)
{
	unsigned long i, nr = MORSEL_LEAF_PAGES(level);
	struct page *page = entry_page(e);

	if (!leaf_shared(e, level)) {
		huge_release(m, page, level);
		pages_added(m, -nr);
		return;
	}
	src_huge_split(m->src, level);
	for (i = 0; i < nr; i++) {
		page_gone(m, page + i);
		if (!(i % PTRS_PER_PTE))
			cond_resched();
	}
}

/* Publish @new in the empty @slot; on a lost race return the winner. */
static mentry_t publish(struct morsel *m, mentry_t *slot, mentry_t new,
			bool *lost)
{
	mentry_t old = 0;

	*lost = !tcmpxchg(m, slot, &old, new);
	return *lost ? old : new;
}

/*
 * Publish @new (a page or a table of level @order) in the empty root slot
 * of a morsel that had order @order.  A volatile morsel's order rises
 * while its root stays empty (raise_order), so an empty root alone does
 * not tell that the order is still the one @new was made for: there the
 * root is published under m->lock, which every order change holds, and
 * only if the order is unchanged (else it counts as lost; the caller
 * walks again).  A persistent morsel's order rises with a new root, so
 * the cmpxchg alone decides.
 */
static mentry_t publish_root(struct morsel *m, mentry_t new,
			     unsigned int order, bool *lost)
{
	mentry_t e;

	bool held = READ_ONCE(m->walker) == current;	/* morsel_walk_lock */

	if (m->src->root_table)
		return publish(m, m->rootp, new, lost);
	if (!held)
		mutex_lock(&m->lock);
	if (READ_ONCE(m->order) == order) {
		e = publish(m, m->rootp, new, lost);
	} else {
		*lost = true;
		e = READ_ONCE(*m->rootp);
	}
	if (!held)
		mutex_unlock(&m->lock);
	return e;
}

/* Order and root entry of @m, read together (see the top of the file). */
static unsigned int snapshot(struct morsel *m, mentry_t *root)
{
	unsigned int seq, order;

	do {
		seq = read_seqcount_begin(&m->seq);
		order = READ_ONCE(m->order);
		*root = READ_ONCE(*m->rootp);
	} while (read_seqcount_retry(&m->seq, seq));
	return order;
}

/*
 * Walk to the entry for byte offset @off (below the extent of the order
 * read at the start) that points at an object of level @stop: the leaf
 * entry (@stop 0), or the entry of a level-(@stop + 1) table (the caller
 * checks that the order is above @stop).  A huge leaf on the way (2 MiB
 * in a level-2 table, 1 GiB in a level-3 one) ends the walk at its slot;
 * *@lvl (if given) receives the level of the entry returned: 0 for a
 * 4 KiB leaf, 1 for 2 MiB, 2 for 1 GiB (leaf_page).  With @alloc, missing
 * tables are created and published lock-free; without, a missing table
 * ends the walk and, if @hole is given, *@hole is set to the bytes the
 * missing object would cover (aligned, so the walk can skip them).
 * *@leaf receives the entry as read (for order 0 the root itself: a
 * caller that publishes there and loses must walk again, since the order
 * may have risen).  Return: the slot, NULL (absent) or ERR_PTR(-ENOMEM or
 * -ENOSPC).
 */
static mentry_t *walk_to(struct morsel *m, u64 off, int stop, bool alloc,
			 u64 *hole, mentry_t *leaf, int *lvl)
{
	mentry_t *slot, e;
	int level, order;
	bool lost;

again:
	level = snapshot(m, &e);
	order = level;
	slot = m->rootp;
	for (; level > stop; level--) {
		if (slot != m->rootp)
			e = READ_ONCE(*slot);
		if (level <= 2 && slot != m->rootp && entry_huge(e)) {
			*leaf = e;	/* as read: a split may follow */
			if (lvl)
				*lvl = level;
			return slot;
		}
		if (!e && !alloc) {
			if (hole)
				*hole = level_span(level);
			return NULL;
		}
		if (!e) {
			void *t = table_alloc(m, level, off);

			if (IS_ERR(t))
				return t;
			e = table_entry(t);
			if (slot == m->rootp)
				e = publish_root(m, root_word(e, order), order,
						 &lost);
			else
				e = publish(m, slot, e, &lost);
			if (lost) {
				table_free(m, t, level, false);
				if (slot == m->rootp)
					goto again;
			}
		}
		slot = (mentry_t *)entry_va(e) + level_index(off, level);
	}
	*leaf = slot == m->rootp ? e : READ_ONCE(*slot);
	if (lvl)
		*lvl = level;
	return slot;
}

static mentry_t *walk(struct morsel *m, u64 off, bool alloc, u64 *hole,
		      mentry_t *leaf, int *lvl)
{
	return walk_to(m, off, 0, alloc, hole, leaf, lvl);
}

/*
 * Split the leaf @e of @level found in @slot (top of file): a 2 MiB leaf
 * into a PTE table over its 512 pages, a 1 GiB one into a PMD table of
 * 512 2 MiB leaves over its pages.  The table is charged like any table.
 * A 2 MiB leaf is swapped under the PMD table's split lock, which GUP
 * holds while it reads it; GUP reads a 1 GiB leaf under its own mm's
 * page_table_lock instead, which morsel_flush_mappers (mount.c) takes
 * before any page under such a leaf is freed.  Return: 0 (split, or @slot
 * no longer holds @e), -ENOMEM or -ENOSPC (the leaf stays).
 */
static int split_huge(struct morsel *m, mentry_t *slot, mentry_t e, int level)
{
	mentry_t *t = table_alloc(m, level, U64_MAX);
	unsigned long step = MORSEL_LEAF_PAGES(level - 1);
	struct page *page = entry_page(e);
	spinlock_t *ptl = NULL;
	unsigned int i;
	bool done;

	/* The smaller leaves of a shared leaf are shared (marked) too. */
	mentry_t unmark = entry_marked(e) ? LEAF_MARKS : 0;

	if (IS_ERR(t))
		return PTR_ERR(t);
	for (i = 0; i < PTRS_PER_PTE; i++)
		tstore(m, &t[i], (level == 1 ? page_entry(page + i) :
		       huge_entry(page + i * step, level - 1)) & ~unmark);
	if (level == 1) {
		ptl = ptlock_ptr(virt_to_ptdesc(slot));
		spin_lock(ptl);
	}
	done = tcmpxchg(m, slot, &e, table_entry(t));
	if (ptl)
		spin_unlock(ptl);
	if (!done) {
		for (i = 0; i < PTRS_PER_PTE; i++)
			tstore(m, &t[i], 0);
		table_free(m, t, level, false);
		return 0;
	}
	huge_added(m, level, -1);
	if (level == 2) {
		huge_added(m, 1, PTRS_PER_PTE);
		src_huge_split(m->src, level);
		atomic_long_inc(&morsel_stat_huge1g_splits);
	} else {
		atomic_long_inc(&morsel_stat_huge_splits);
	}
	return 0;
}

/**
 * morsel_split - split the huge leaves that cover byte offset @off down
 * to @level: afterwards the entry of @off at @level is a table or empty
 *
 * For lowering the order (the new root must be a table), and for a
 * mapping of order 1 or 2 of a larger morsel (mount.c), which mounts the
 * PTE or PMD table of offset 0.  Lock-free; the caller keeps the tree
 * from shrinking.  Return: 0, -ENOMEM or -ENOSPC.
 */
int morsel_split(struct morsel *m, u64 off, int level)
{
	mentry_t e, *slot;
	int at, err;

	for (;;) {
		if (READ_ONCE(m->order) <= level)
			return 0;
		e = 0;
		slot = walk_to(m, off, level, false, NULL, &e, &at);
		if (!slot || slot == m->rootp || !entry_huge(e))
			return 0;
		err = split_huge(m, slot, e, at);
		if (err)
			return err;
	}
}

/*
 * Publish a leaf of @level (1: 2 MiB, 2: 1 GiB) for the range around @off
 * if its slot is empty (no table there yet) and a block can be had; the
 * range lies wholly inside or outside the reserved range.  Return: the
 * page at @off, NULL (fall back to smaller leaves: something is in the
 * slot, or no block or charge; counted) or an ERR_PTR from the walk.
 */
static struct page *populate_huge(struct morsel *m, u64 off, int level)
{
	u64 span = level_span(level), base = round_down(off, span), rs, re;
	unsigned long nr = MORSEL_LEAF_PAGES(level), drawn, i;
	struct page *page;
	mentry_t *slot, e;
	bool lost;

	if (READ_ONCE(m->order) <= level || !src_has_huge(m->src, level))
		return NULL;
	rs = READ_ONCE(m->resv_start);
	re = READ_ONCE(m->resv_end);
	if ((rs > base && rs < base + span) || (re > base && re < base + span))
		goto fallback;
	slot = walk_to(m, base, level, true, NULL, &e, NULL);
	if (IS_ERR(slot))
		return ERR_CAST(slot);
	if (e)
		return NULL;
	drawn = morsel_draw(m, base, nr);
	if (drawn < nr && !morsel_charge(m, nr - drawn)) {
		morsel_undraw(m, drawn);
		goto fallback;
	}
	page = src_huge_alloc(m->src, &m->place, level, drawn);
	if (!page) {
		charge_back(m, nr, drawn);
		goto fallback;
	}
	for (i = 0; i < nr; i++)
		page_owned(m, page + i, base + ((u64)i << PAGE_SHIFT));
	src_huge_ready(m->src);
	if (level == 2)		/* before the leaf is seen (mount.c) */
		WRITE_ONCE(m->had_huge1g, true);
	publish(m, slot, huge_entry(page, level), &lost);
	if (lost) {
		huge_release(m, page, level);
		morsel_uncharge(m, nr);
		return NULL;
	}
	pages_added(m, nr);
	huge_added(m, level, 1);
	return page + ((off - base) >> PAGE_SHIFT);
fallback:
	atomic_long_inc(level == 2 ? &morsel_stat_huge1g_fallbacks :
				     &morsel_stat_huge_fallbacks);
	return NULL;
}

/*
 * A hole at @off gets the largest leaf wanted that can be had, from
 * @level down (morsel_huge_wanted).  Return as populate_huge.
 */
static struct page *populate_leaf(struct morsel *m, u64 off, int level)
{
	struct page *page = NULL;

	for (; level && !page; level--)
		page = populate_huge(m, off, level);
	return page;
}

/**
 * morsel_populate - make sure the page at byte offset @off is present
 * @m:    the morsel
 * @off:  offset below morsel_extent(m->order)
 * @hint: what the caller knows of huge pages (MORSEL_HUGE_*): a hole is
 *        filled with the largest leaf huge.c wants there that can be
 *        had (1 GiB, 2 MiB), else with a 4 KiB page
 *
 * Lock-free; see the top of this file.
 * Return: the page (valid while the caller keeps the tree from shrinking)
 * or ERR_PTR(-ENOMEM), ERR_PTR(-ENOSPC) (the file system is full),
 * ERR_PTR(-EHWPOISON) (the page there failed and nothing replaced it).
 */
struct page *morsel_populate(struct morsel *m, u64 off, int hint)
{
	unsigned long drawn;
	mentry_t *slot, e;
	struct page *page;
	int err, level;
	bool lost;

	e = 0;
	level = morsel_huge_wanted(m, off, hint);
	if (level && (walk(m, off, false, NULL, &e, NULL), !e)) {
		err = morsel_memerr_add(m);
		if (err)
			return ERR_PTR(err);
		page = populate_leaf(m, off, level);
		if (page)	/* or an error; NULL: 4 KiB pages */
			return page;
	}
again:
	slot = walk(m, off, true, NULL, &e, &level);
	if (IS_ERR(slot))
		return ERR_CAST(slot);
	if (e == MORSEL_POISON)
		return ERR_PTR(-EHWPOISON);
	if (e)
		return leaf_page(e, off, level);
	err = morsel_memerr_add(m);
	if (err)
		return ERR_PTR(err);
	drawn = morsel_draw(m, off, 1);
	if (!drawn && !morsel_charge(m, 1))
		return ERR_PTR(-ENOSPC);
	page = src_page_alloc(m->src, &m->place, drawn);
	if (!page) {
		charge_back(m, 1, drawn);
		return ERR_PTR(m->src->full_errno);
	}
	page_owned(m, page, off);
	if (slot == m->rootp)	/* order 0: the page is the root */
		e = publish_root(m, page_entry(page), 0, &lost);
	else
		e = publish(m, slot, page_entry(page), &lost);
	if (lost) {
		page_unused(m, page);
		if (slot == m->rootp)	/* order 0: it may have risen */
			goto again;
	} else {
		pages_added(m, 1);
	}
	return entry_page(e);
}

/*
 * Our lock-free walkers of a morsel that may be cloned meanwhile hold this
 * (SRCU: a fault may sleep in the page allocator); a clone sets m->cow and
 * waits for them once, and from then on they take m->lock instead.
 */
DEFINE_SRCU(morsel_walk_srcu);

/* m->lock around a walk of a cloned morsel (publish_root knows it). */
void morsel_walk_lock(struct morsel *m)
{
	mutex_lock(&m->lock);
	WRITE_ONCE(m->walker, current);
}

void morsel_walk_unlock(struct morsel *m)
{
	WRITE_ONCE(m->walker, NULL);
	mutex_unlock(&m->lock);
}

/**
 * morsel_get - morsel_populate for a cloned morsel, under morsel_walk_lock
 * @write: the caller will store into the page: it becomes @m's own
 *
 * A read of a populated page leaves it shared; filling a hole first makes
 * the PTE table it goes into @m's own.  The page stays valid while the
 * caller holds m->lock (a break of another tree cannot free it: it has
 * an owner here).  Return: as morsel_populate.
 */
struct page *morsel_get(struct morsel *m, u64 off, int hint, bool write)
{
	int err = 0;

	lockdep_assert_held(&m->lock);
	if (write || !morsel_lookup(m, off))
		err = morsel_unshare(m, off, off + PAGE_SIZE,
				     write ? MORSEL_UNSHARE_DATA :
					     MORSEL_UNSHARE_TABLES);
	return err ? ERR_PTR(err) : morsel_populate(m, off, hint);
}

/* morsel_unshare for a caller that does not hold m->lock. */
int morsel_unshare_range(struct morsel *m, u64 start, u64 end,
			 unsigned int how)
{
	int err;

	if (!READ_ONCE(m->cow))
		return 0;
	morsel_walk_lock(m);
	err = morsel_unshare(m, start, end, how);
	morsel_walk_unlock(m);
	return err;
}

/*
 * Where a run of pages from @off that would end at @stop must end so that
 * it lies inside or outside the reserved range as a whole (size.c: its
 * pages are drawn from the reservation, the others charged).
 */
static u64 resv_clip(struct morsel *m, u64 off, u64 stop)
{
	u64 rs = READ_ONCE(m->resv_start), re = READ_ONCE(m->resv_end);

	if (off < rs && stop > rs)
		stop = rs;
	if (off < re && stop > re)
		stop = re;
	return stop;
}

/**
 * morsel_populate_range - populate every page in [@start, @end)
 *
 * Works one PTE table at a time: the missing pages of the table are
 * charged to the size limit, allocated with one bulk call (topped up page
 * by page: the bulk allocator may legitimately return fewer, e.g. always
 * one with memcg accounting or page_owner), then published with cmpxchg;
 * pages that lose a race to a concurrent fault are reused for the next
 * empty slot or freed.  Lock-free like morsel_populate.  Offsets are page
 * aligned and within the extent.  Return: 0, -ENOMEM, -ENOSPC (size limit)
 * or -EINTR (fatal signal); what was populated before an error stays.
 * A poisoned slot (memerr.c) is left as it is.
 */
int morsel_populate_range(struct morsel *m, u64 start, u64 end, int hint)
{
	u64 table_span = level_span(1), off = start;
	struct page **pages;
	int err = 0;

	if (!READ_ONCE(m->order)) {	/* one page, whose slot is the root */
		err = PTR_ERR_OR_ZERO(morsel_populate(m, start, hint));
		return err == -EHWPOISON ? 0 : err;
	}
	err = morsel_memerr_add(m);
	if (err)
		return err;
	pages = kmalloc_array(PTRS_PER_PTE, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;
	while (off < end && !err) {
		u64 stop = min(end, round_down(off, table_span) + table_span);
		unsigned int i, n, want = 0, drawn, granted, got, used = 0;
		mentry_t leaf = 0, *slot;
		int level = 0, at;
		struct page *huge;
		bool lost;

		/* A whole 1 GiB or 2 MiB hole may become one leaf. */
		if (IS_ALIGNED(off, table_span) && stop - off == table_span)
			level = morsel_huge_wanted(m, off, hint);
		while (level && (!IS_ALIGNED(off, level_span(level)) ||
				 end - off < level_span(level)))
			level--;
		if (level && (walk(m, off, false, NULL, &leaf, NULL), !leaf)) {
			huge = populate_leaf(m, off, level);
			if (IS_ERR(huge)) {
				err = PTR_ERR(huge);
				break;
			}
			if (huge) {
				off = stop;
				goto next;
			}
		}
		slot = walk(m, off, true, NULL, &leaf, &at);
		if (IS_ERR(slot)) {
			err = PTR_ERR(slot);
			break;
		}
		if (entry_huge(leaf)) {	/* a huge leaf is there: skip it */
			off = round_down(off, level_span(at)) + level_span(at);
			goto next;
		}
		stop = resv_clip(m, off, stop);
		n = (stop - off) >> PAGE_SHIFT;
		for (i = 0; i < n; i++)
			want += !READ_ONCE(slot[i]);
		drawn = morsel_draw(m, off, want);
		granted = drawn + morsel_charge_upto(m, want - drawn);
		got = src_pages_alloc(m->src, &m->place, granted, drawn, pages);
		for (i = 0; i < n && used < got; i++) {
			if (READ_ONCE(slot[i]))
				continue;
			page_owned(m, pages[used], off + ((u64)i << PAGE_SHIFT));
			publish(m, &slot[i], page_entry(pages[used]), &lost);
			if (!lost)
				used++;
		}
		pages_added(m, used);
		if (got < granted)
			err = m->src->full_errno;
		else if (granted < want)
			err = -ENOSPC;
		charge_back(m, granted - got, drawn > got ? drawn - got : 0);
		while (used < got)
			page_unused(m, pages[used++]);
		off = stop;
next:
		if (fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	kfree(pages);
	return err;
}

/*
 * morsel_fill_range's read: @n pages of @pages from @src at *@pos (a bvec
 * iterator: with O_DIRECT on @src the device writes the pages themselves,
 * without GUP).  Return: the bytes read (fewer at the source's end) or
 * -errno if none.
 */
static ssize_t fill_read(struct file *src, loff_t *pos, struct page **pages,
			 struct bio_vec *bv, unsigned int n)
{
	struct iov_iter iter;
	ssize_t total = 0, ret = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		bvec_set_page(&bv[i], pages[i], PAGE_SIZE, 0);
	iov_iter_bvec(&iter, ITER_DEST, bv, n, (size_t)n << PAGE_SHIFT);
	while (iov_iter_count(&iter)) {
		ret = vfs_iter_read(src, &iter, pos, 0);
		if (ret <= 0)
			break;
		total += ret;
	}
	return total ?: ret;
}

/* Zero the bytes of the new page @page at [@from, PAGE_SIZE). */
static void fill_zero_tail(struct page *page, size_t from)
{
	if (from < PAGE_SIZE)
		zero_user_segment(page, from, PAGE_SIZE);
}

/**
 * morsel_fill_range - read @src from @pos into [@start, @end) of @m
 * @done: out: the bytes read
 *
 * What a pread(2) of @src into a mapping of the range does, without the
 * mapping and without zeroing first.  One PTE table at a time: the holes
 * get pages from the medium's unzeroed allocator (src_pages_alloc_raw), a
 * bvec iterator over them and over the pages already there takes one read
 * (fill_read), the bytes of a new page the read did not reach are zeroed,
 * and only then are the new pages published: nobody sees a byte that is
 * neither the file's nor zero.  A hole a fault filled meanwhile keeps the
 * fault's page, into which the new one is copied (as if the pread came
 * after).  A 2 MiB or 1 GiB leaf already there is read into as it is.  At
 * the source's end the fill stops: the rest of the range is untouched.
 * Called as morsel_populate_range (lock-free, the inode lock shared), for
 * a medium with raw pages; the caller has made a clone's range its own.
 * Order 0 (one page, the root) is populated zeroed and read into.
 * Return: 0, -ENOMEM, -ENOSPC, -EHWPOISON
 * (a failed page in the range), -EINTR or the read's error; what was
 * filled before stays, *@done bytes.
 */
int morsel_fill_range(struct morsel *m, u64 start, u64 end, struct file *src,
		      loff_t pos, u64 *done)
{
	DECLARE_BITMAP(fresh, PTRS_PER_PTE);
	u64 table_span = level_span(1), off = start;
	struct page **pages, **raw;
	struct bio_vec *bv;
	int err;

	*done = 0;
	if (!READ_ONCE(m->order)) {	/* one page, whose slot is the root */
		struct bio_vec one;
		struct page *page = morsel_populate(m, 0, MORSEL_HINT_NONE);
		ssize_t ret;

		if (IS_ERR(page))
			return PTR_ERR(page);
		ret = fill_read(src, &pos, &page, &one, 1);
		if (ret < 0)
			return ret;
		*done = ret;
		return 0;
	}
	err = morsel_memerr_add(m);
	if (err)
		return err;
	pages = kmalloc_array(PTRS_PER_PTE, sizeof(*pages), GFP_KERNEL);
	raw = kmalloc_array(PTRS_PER_PTE, sizeof(*raw), GFP_KERNEL);
	bv = kmalloc_array(PTRS_PER_PTE, sizeof(*bv), GFP_KERNEL);
	if (!pages || !raw || !bv) {
		err = -ENOMEM;
		goto out;
	}
	while (off < end && !err) {
		u64 stop = min(end, round_down(off, table_span) + table_span);
		unsigned int i, j, n, want = 0, drawn = 0, granted = 0, got = 0;
		unsigned int used = 0;
		mentry_t leaf = 0, *slot, e;
		ssize_t ret;
		bool lost;
		int at;

		bitmap_zero(fresh, PTRS_PER_PTE);
		slot = walk(m, off, true, NULL, &leaf, &at);
		if (IS_ERR(slot)) {
			err = PTR_ERR(slot);
			break;
		}
		if (!entry_huge(leaf))
			stop = resv_clip(m, off, stop);
		n = (stop - off) >> PAGE_SHIFT;
		for (i = 0; i < n; i++) {
			e = entry_huge(leaf) ? leaf : READ_ONCE(slot[i]);
			if (e == MORSEL_POISON) {
				err = -EHWPOISON;
				break;
			}
			pages[i] = NULL;
			if (entry_huge(e))
				pages[i] = leaf_page(e, off + ((u64)i << PAGE_SHIFT),
						     at);
			else if (e)
				pages[i] = entry_page(e);
			if (pages[i])
				get_page(pages[i]);
			else
				want++;
		}
		if (!err && want) {
			drawn = morsel_draw(m, off, want);
			granted = drawn + morsel_charge_upto(m, want - drawn);
			got = src_pages_alloc_raw(m->src, &m->place, granted, raw);
			if (got < want)
				err = got < granted ? m->src->full_errno : -ENOSPC;
			charge_back(m, granted - got, drawn > got ? drawn - got : 0);
		}
		if (err) {
			while (got)
				page_unused(m, raw[--got]);
			while (i--)
				if (pages[i])
					put_page(pages[i]);
			break;
		}
		for (i = 0, j = 0; i < n; i++) {
			if (!pages[i]) {
				pages[i] = raw[j++];
				__set_bit(i, fresh);
			}
		}
		ret = fill_read(src, &pos, pages, bv, n);
		if (ret < 0)
			err = ret;
		for (i = 0; i < n; i++) {
			size_t at_page = (size_t)i << PAGE_SHIFT;

			if (!test_bit(i, fresh)) {
				put_page(pages[i]);
				continue;
			}
			/* Not reached: a read error, or past the source's end. */
			if (err || ret <= at_page) {
				page_unused(m, pages[i]);
				continue;
			}
			fill_zero_tail(pages[i], ret - at_page);
			page_owned(m, pages[i], off + at_page);
			e = publish(m, &slot[i], page_entry(pages[i]), &lost);
			if (!lost) {
				used++;
				continue;
			}
			if (e != MORSEL_POISON)
				copy_highpage(entry_page(e), pages[i]);
			page_unused(m, pages[i]);
		}
		pages_added(m, used);
		if (err)
			break;
		*done += ret;
		if (ret < (ssize_t)n << PAGE_SHIFT)
			break;		/* the source's end */
		off = stop;
		if (fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
out:
	kfree(bv);
	kfree(raw);
	kfree(pages);
	return err;
}

/**
 * morsel_lookup - the page at byte offset @off, or NULL if not populated
 *
 * Lock-free; the caller keeps the tree from shrinking (inode lock, or a
 * mapping of the morsel).  ERR_PTR(-EHWPOISON) for a poisoned slot.
 */
struct page *morsel_lookup(struct morsel *m, u64 off)
{
	mentry_t e = 0;
	int level;

	walk(m, off, false, NULL, &e, &level);
	if (e == MORSEL_POISON)
		return ERR_PTR(-EHWPOISON);
	return e ? leaf_page(e, off, level) : NULL;
}

/**
 * morsel_seek - the first offset in [@off, @end) with a page (@data) or
 * without one (!@data); @end if there is none
 *
 * For SEEK_DATA and SEEK_HOLE: a missing table skips all it would cover.
 * A poisoned slot counts as data (reading it fails, as on tmpfs).  The
 * caller keeps the tree from shrinking (inode lock).  Return: the offset,
 * or -EINTR on a fatal signal.
 */
loff_t morsel_seek(struct morsel *m, u64 off, u64 end, bool data)
{
	u64 span, cur = off;
	unsigned int n = 0;
	mentry_t e;
	int level;

	while (cur < end) {
		bool present;

		span = PAGE_SIZE;	/* walk() sets it for a missing table */
		e = 0;
		present = walk(m, cur, false, &span, &e, &level) && e;
		if (present == data)
			return cur;
		if (present && entry_huge(e))
			span = level_span(level);
		cur = round_down(cur, span) + span;
		if (!(++n % 512)) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
		}
	}
	return end;
}

/**
 * morsel_count_pages - how many slots in [@start, @end) hold a page
 *
 * (A poisoned slot counts: it is no hole a reservation must fill.)  For
 * reservations (size.c), from the runs morsel_seek finds; the caller keeps
 * the tree from shrinking.  On a fatal signal it counts short, which only
 * makes a reservation larger.
 */
unsigned long morsel_count_pages(struct morsel *m, u64 start, u64 end)
{
	unsigned long nr = 0;
	loff_t data, hole;

	end = min(end, morsel_extent(READ_ONCE(m->order)));
	while (start < end) {
		data = morsel_seek(m, start, end, true);
		if (data < 0 || data >= end)
			break;
		hole = morsel_seek(m, data, end, false);
		if (hole < 0)
			break;
		nr += (hole - data) >> PAGE_SHIFT;
		start = hole;
	}
	return nr;
}

/*
 * The first populated leaf at or after *@off and before @end: its slot,
 * entry and level; *@off becomes the start of the leaf (which may lie
 * before the old *@off, inside a 2 MiB or 1 GiB leaf).  NULL when there
 * is none.  The caller keeps the tables (m->lock, or the locks that keep
 * the tree from shrinking).
 */
static mentry_t *next_leaf(struct morsel *m, u64 *off, u64 end, mentry_t *e,
			   int *level)
{
	mentry_t *slot;
	u64 span;

	while (*off < end) {
		span = PAGE_SIZE;
		*e = 0;
		slot = walk(m, *off, false, &span, e, level);
		if (slot && *e && *e != MORSEL_POISON) {
			*off = round_down(*off, level_span(*level));
			return slot;
		}
		*off = round_down(*off, span) + span;
	}
	return NULL;
}

/**
 * morsel_count_nodes - populated pages of [@start, @end) on each node
 * @pages: @nr_nodes counters, added to (nodes above them are not counted).
 *
 * Under m->lock, which keeps every table (top of file); a page evicted
 * meanwhile may still be counted.  Return: 0, or -EINTR on a fatal
 * signal (the counts are then short).
 */
int morsel_count_nodes(struct morsel *m, u64 start, u64 end, u64 *pages,
		       unsigned int nr_nodes)
{
	u64 off = start, from, to, pg;
	mentry_t *slot, e;
	int level, nid;

	mutex_lock(&m->lock);
	end = min(end, morsel_extent(m->order));
	while ((slot = next_leaf(m, &off, end, &e, &level))) {
		from = max(off, start);
		to = min(off + level_span(level), end);
		/*
		 * A 2 MiB or 1 GiB leaf is one block of the allocator, so on
		 * one node, unless its first and last page say otherwise.
		 */
		nid = page_to_nid(leaf_page(e, from, level));
		if (nid == page_to_nid(leaf_page(e, to - 1, level))) {
			if (nid < nr_nodes)
				pages[nid] += (to - from) >> PAGE_SHIFT;
		} else {
			for (pg = from; pg < to; pg += PAGE_SIZE) {
				nid = page_to_nid(leaf_page(e, pg, level));
				if (nid < nr_nodes)
					pages[nid]++;
			}
		}
		off = to;
		if (!(off & (level_span(1) - 1)))
			cond_resched();
	}
	mutex_unlock(&m->lock);
	return fatal_signal_pending(current) ? -EINTR : 0;
}

/**
 * morsel_poison - take the failed @page out of @m at byte offset @off
 *
 * For memerr.c, which holds the invalidate lock (so no page-by-page fault
 * walks the tree meanwhile) and a reference to @page.  If the leaf at @off
 * still maps @page, it becomes MORSEL_POISON under the PTE table's lock
 * (as GUP reads it) and the page leaves every mapping as in eviction: the
 * order-0 copies and page-by-page mappings of the offset are unmapped, the
 * mounted mappers' TLBs and secondary MMUs flushed; then the tree's
 * reference goes.  Every later access faults and gets VM_FAULT_HWPOISON
 * until the slot is punched, truncated or the file deleted.
 * On a persistent device the page is recorded in the bad-page tree first
 * and stays allocated for good (pm.c).
 * Return: whether @page was @m's and is out.
 */
bool morsel_poison(struct morsel *m, u64 off, struct page *page)
{
	mentry_t leaf = 0, *slot;
	spinlock_t *ptl = NULL;
	bool done = false;
	int level;

	mutex_lock(&m->lock);
	if (off >= morsel_extent(m->order))
		goto out;
	/* A clone's leaf changes only in a table of its own. */
	if (morsel_unshare(m, off, off + PAGE_SIZE, MORSEL_UNSHARE_TABLES))
		goto out;
	slot = walk(m, off, false, NULL, &leaf, &level);
	/* A failed page of a huge leaf leaves alone: the leaf splits. */
	while (slot && entry_huge(leaf) && leaf_page(leaf, off, level) == page) {
		if (split_huge(m, slot, leaf, level))
			goto out;
		slot = walk(m, off, false, NULL, &leaf, &level);
	}
	if (!slot || !leaf || leaf == MORSEL_POISON || entry_huge(leaf) ||
	    entry_page(leaf) != page)
		goto out;
	/*
	 * On a device the failure is recorded first, so that a crash before
	 * the leaf changes still keeps the page (pm_format.h: badtree).  A
	 * page that cannot be recorded is still taken out of the file.
	 */
	if (src_page_failed(m->src, page))
		pr_err("morselfs: a failed page could not be recorded; a remount may reuse it\n");
	if (slot != m->rootp) {
		ptl = ptlock_ptr(virt_to_ptdesc(slot));
		spin_lock(ptl);
	}
	/* Under m->lock only the MMU's A and D bits change the leaf. */
	while (leaf && leaf != MORSEL_POISON && entry_page(leaf) == page &&
	       !done)
		done = tcmpxchg(m, slot, &leaf, MORSEL_POISON);
	if (ptl)
		spin_unlock(ptl);
	if (!done)
		goto out;
	unmap_mapping_range(m->inode->i_mapping, off, PAGE_SIZE, 0);
	morsel_flush_mappers(m, off, off + PAGE_SIZE);
	if (m->src->keeps_failed) {	/* never allocated again */
		page_disowned(m, page);
		pages_added(m, -1);
	} else {
		page_gone(m, page);	/* a clone may still hold it */
	}
out:
	mutex_unlock(&m->lock);
	return done;
}

/*
 * The first offset at or past @from where the object @e of @level, which
 * covers the bytes from @base, holds @page; U64_MAX if none.
 */
static u64 find_in(mentry_t e, int level, u64 base, u64 from,
		   unsigned long pfn)
{
	unsigned long first;
	mentry_t *t;
	unsigned int i;
	u64 off;

	if (!e || e == MORSEL_POISON || base + level_span(level) <= from)
		return U64_MAX;
	if (entry_leaf(e, level)) {
		first = page_to_pfn(entry_page(e));
		if (pfn < first || pfn >= first + MORSEL_LEAF_PAGES(level))
			return U64_MAX;
		off = base + ((u64)(pfn - first) << PAGE_SHIFT);
		return off >= from ? off : U64_MAX;
	}
	t = entry_va(e);
	for (i = 0; i < PTRS_PER_PTE; i++) {
		off = find_in(READ_ONCE(t[i]), level - 1,
			      base + i * level_span(level - 1), from, pfn);
		if (off != U64_MAX)
			return off;
	}
	if (level == 1)
		cond_resched();
	return U64_MAX;
}

/**
 * morsel_poison_shared - take the failed @page out of every offset of @m
 *
 * For memerr.c, with the same locks as morsel_poison: a clone lets other
 * files (or other offsets of one file) hold the page that failed in the
 * file its page->private names.  Walks the whole tree under m->lock (no
 * table is freed without it), so a memory error costs a walk of every
 * file that ever took part in a clone.  Return: how many offsets took it.
 */
unsigned int morsel_poison_shared(struct morsel *m, struct page *page)
{
	unsigned long pfn = page_to_pfn(page);
	unsigned int n = 0;
	unsigned int order;
	mentry_t root;
	u64 off = 0;

	if (!READ_ONCE(m->cow))
		return 0;
	for (;;) {
		mutex_lock(&m->lock);
		order = snapshot(m, &root);
		off = find_in(root, order, 0, off, pfn);
		mutex_unlock(&m->lock);
		if (off == U64_MAX)
			return n;
		n += morsel_poison(m, off, page);
		off += PAGE_SIZE;
	}
}

/**
 * morsel_place - put the leaf of @page at byte offset @off of @m
 *
 * For the bad-page tree of a device (pm.c), whose caller holds m->lock
 * and raised the order to cover @off.  Return: 0 (also if it is there
 * already), -EEXIST (another page is), -ENOMEM or -ENOSPC.
 */
int morsel_place(struct morsel *m, u64 off, struct page *page)
{
	mentry_t *slot, e;
	bool lost;
	int level;

	lockdep_assert_held(&m->lock);
	slot = walk(m, off, true, NULL, &e, &level);
	if (IS_ERR(slot))
		return PTR_ERR(slot);
	if (!e) {
		e = publish(m, slot, page_entry(page), &lost);
		if (!lost)
			pages_added(m, 1);
		level = 0;
	}
	return e != MORSEL_POISON && leaf_page(e, off, level) == page ?
	       0 : -EEXIST;
}

/**
 * morsel_writeback - write back the populated pages of [@start, @end)
 *
 * For fsync on a persistent instance whose platform does not flush CPU
 * caches on power loss (ADR): stores through mappings pass no helper of
 * ours, so their lines may still be in the caches.  Holes are skipped a
 * missing table at a time.  The caller keeps the tree from shrinking.
 * 0, or -EINTR if a fatal signal stopped it.
 */
int morsel_writeback(struct morsel *m, u64 start, u64 end)
{
	u64 off = round_down(start, PAGE_SIZE);
	int err = 0;

	while (off < end) {
		u64 hole = PAGE_SIZE;
		mentry_t leaf = 0;
		int level;

		if (walk(m, off, false, &hole, &leaf, &level) && leaf &&
		    leaf != MORSEL_POISON)
			src_writeback(m->src,
				      page_address(leaf_page(leaf, off, level)));
		off = round_down(off, hole) + hole;
		if (IS_ALIGNED(off, PMD_SIZE)) {
			/* A large file's fsync can be killed. */
			if (fatal_signal_pending(current)) {
				err = -EINTR;
				break;
			}
			cond_resched();
		}
	}
	wmb();	/* sfence: written back before fsync returns */
	return err;
}

/**
 * morsel_zero_range - zero the bytes [@start, @end) of populated pages
 */
void morsel_zero_range(struct morsel *m, u64 start, u64 end)
{
	u64 first = round_down(start, PAGE_SIZE), last = PAGE_ALIGN(end);

	/* A clone's page becomes this file's own before it is zeroed. */
	if (start < end && READ_ONCE(m->cow) &&
	    (READ_ONCE(m->walker) == current ?
	     morsel_unshare(m, first, last, MORSEL_UNSHARE_DATA) :
	     morsel_unshare_range(m, first, last, MORSEL_UNSHARE_DATA)))
		return;
	while (start < end) {
		u64 stop = min(end, round_down(start, PAGE_SIZE) + PAGE_SIZE);
		struct page *page = morsel_lookup(m, start);

		if (IS_ERR(page))	/* poisoned: it reads as an error */
			page = NULL;
		if (page)
			memzero_page(page, offset_in_page(start), stop - start);
		if (page)
			src_wrote(m->src, page_address(page) +
				  offset_in_page(start), stop - start);
		start = stop;
	}
}

/* Zero [@start, @end) (offsets into it) of the huge leaf @e's pages. */
static void zero_huge(struct morsel *m, mentry_t e, u64 start, u64 end)
{
	struct page *page = entry_page(e);

	while (start < end) {
		u64 stop = min(end, round_down(start, PAGE_SIZE) + PAGE_SIZE);
		struct page *p = page + (start >> PAGE_SHIFT);

		memzero_page(p, offset_in_page(start), stop - start);
		src_wrote(m->src, page_address(p) + offset_in_page(start),
			  stop - start);
		start = stop;
	}
}

/*
 * Free what the level-@level entry *@slot maps inside [start, end) (offsets
 * relative to the object @slot points to), post-order.  If the range covers
 * the whole object, the object itself is freed and *@slot cleared.
 */
static void free_level(struct morsel *m, mentry_t *slot, int level,
		       u64 start, u64 end)
{
	mentry_t e = READ_ONCE(*slot);
	bool whole = start == 0 && end == level_span(level);

	if (!e)
		return;
	/* A shared table wholly inside: its other owners keep it. */
	if (whole && level && slot != m->rootp && !entry_leaf(e, level) &&
	    entry_marked(e)) {
		tstore(m, slot, 0);
		if (table_leave(m, e, level))
			return;
	}
	/* Only part of a shared table: morsel_unshare made the edges ours. */
	if (WARN_ON_ONCE(!whole && level == 1 && slot != m->rootp &&
			 !entry_leaf(e, level) && entry_marked(e) &&
			 atomic_read(table_owners(entry_va(e)))))
		return;
	if ((level == 1 || level == 2) && entry_huge(e)) {
		if (whole) {
			tstore(m, slot, 0);
			leaf_gone(m, e, level);
			huge_added(m, level, -1);
			return;
		}
		/*
		 * Part of it: split, or (no table to be had) zero that part;
		 * a shared one morsel_unshare split already.
		 */
		if (split_huge(m, slot, e, level)) {
			if (!WARN_ON_ONCE(leaf_shared(e, level)))
				zero_huge(m, e, start, end);
			return;
		}
		e = READ_ONCE(*slot);
	}
	if (level > 0) {
		mentry_t *table = entry_va(e);
		u64 child = level_span(level - 1);
		unsigned int i;

		/* 64-bit divisions: a child may span more than 4 GiB. */
		for (i = div64_u64(start, child);
		     i < div64_u64(end + child - 1, child); i++) {
			u64 base = (u64)i * child;

			if (!READ_ONCE(table[i]))
				continue;	/* no call per hole */
			free_level(m, &table[i], level - 1,
				   max(start, base) - base,
				   min(end, base + child) - base);
		}
		if (level == 1)
			cond_resched();	/* 512 pages at most */
	}
	if (start == 0 && end == level_span(level)) {
		tstore(m, slot, 0);
		if (level > 0)
			table_free(m, entry_va(e), level, true);
		else
			page_free(m, e);
	}
}

/*
 * ---- Unsharing (docs/design.md: Copy-on-write clones) ----
 *
 * Under m->lock.  A chunk (at most one PTE table's span) is made @m's own
 * top down; what the breaks replaced waits in a struct unshare until one
 * flush of the chunk has gone to every mapper, then leaves @m.
 */
struct unshare {
	struct page *old[PTRS_PER_PTE];	/* pages replaced by copies */
	mentry_t *slot[PTRS_PER_PTE];	/* their leaves, now read-only */
	unsigned int nr;
	mentry_t table;			/* a PTE table replaced by a copy */
};

/*
 * Copy the shared PTE table @e in @slot (an entry of a PMD table) for @m:
 * each child gains an owner and loses write in both copies.  The entry is
 * swapped under the old table's split lock: GUP's slow path holds it and
 * then checks the PMD entry again (pte_offset_map_lock).
 */
static int break_table(struct morsel *m, struct unshare *u, mentry_t *slot,
		       mentry_t e)
{
	mentry_t *old = entry_va(e), *t = table_alloc(m, 1, U64_MAX);
	spinlock_t *ptl = ptlock_ptr(virt_to_ptdesc(old));
	unsigned int i;

	if (IS_ERR(t))
		return PTR_ERR(t);
	for (i = 0; i < PTRS_PER_PTE; i++) {
		mentry_t x = READ_ONCE(old[i]);

		if (x && x != MORSEL_POISON) {
			object_join(x, 0);
			entry_protect(&old[i], 0);
			x = READ_ONCE(old[i]);
		}
		WRITE_ONCE(t[i], x);
	}
	spin_lock(ptl);
	WRITE_ONCE(*slot, table_entry(t));
	spin_unlock(ptl);
	u->table = e;
	return 0;
}

/* Give @m its own copy of the shared page of the leaf in @slot at @off. */
static int break_page(struct morsel *m, struct unshare *u, mentry_t *slot,
		      mentry_t e, u64 off)
{
	struct page *old = entry_page(e), *page;
	spinlock_t *ptl = NULL;

	if (!morsel_charge(m, 1))
		return -ENOSPC;
	page = src_page_alloc(m->src, &m->place, false);
	if (!page) {
		morsel_uncharge(m, 1);
		return m->src->full_errno;
	}
	/* A failed page (another file kept it) is a machine check here. */
	if (copy_mc_highpage(page, old)) {
		src_page_free(m->src, page);
		morsel_uncharge(m, 1);
		return -EHWPOISON;
	}
	page_owned(m, page, off);
	atomic_long_inc(&morsel_stat_pages);
	if (slot != m->rootp)
		ptl = ptlock_ptr(virt_to_ptdesc(slot));
	if (ptl)
		spin_lock(ptl);
	WRITE_ONCE(*slot, page_entry(page) & ~LEAF_MARKS);
	if (ptl)
		spin_unlock(ptl);
	u->old[u->nr] = old;
	u->slot[u->nr++] = slot;
	return 0;
}

/*
 * After the breaks of [@start, @end): every mapper flushed (page-by-page
 * PTEs and order-0 copies unmapped too), then the copies become writable
 * and what they replaced leaves @m.
 */
static void unshare_finish(struct morsel *m, struct unshare *u, u64 start,
			   u64 end)
{
	struct address_space *mapping = m->inode->i_mapping;
	unsigned int i;

	if (!u->nr && !u->table)
		return;
	if (atomic_read(&m->nr_paged))
		unmap_mapping_range(mapping, start, end - start, 0);
	if (!start && (!m->order || morsel_order0_mapped(m)))
		unmap_mapping_range(mapping, 0, PAGE_SIZE, 0);
	morsel_flush_mappers_tables(m, start, end, u->table);
	/* A copy replaced each; the other owner may have gone meanwhile. */
	for (i = 0; i < u->nr; i++) {
		entry_unprotect(u->slot[i], 0);
		page_dropped(m, u->old[i]);
	}
	u->nr = 0;
	if (u->table) {
		mentry_t *old = entry_va(u->table);

		if (atomic_add_unless(table_owners(old), -1, 0)) {
			atomic_long_dec(&m->nr_tables[0]);
		} else {
			/*
			 * The last owner (the others went since the break):
			 * each child gives back the owner the copy took,
			 * and one a copy replaced (and gave back above)
			 * goes with this table, unless a clone holds it.
			 */
			for (i = 0; i < PTRS_PER_PTE; i++) {
				mentry_t x = READ_ONCE(old[i]);

				if (x && x != MORSEL_POISON)
					page_dropped(m, entry_page(x));
				WRITE_ONCE(old[i], 0);
			}
			table_free(m, old, 1, true);
		}
		u->table = 0;
	}
}

/*
 * Make [@start, @end) (inside one PTE table's span) @m's own as @how says
 * (morsel_unshare): the tables on its path (with _EDGES not a shared PTE
 * table the range covers whole), and with _DATA its leaves (shared pages
 * copied, shared huge leaves split first, as THP does).  Otherwise a
 * shared huge leaf that the range covers only in part is split (its pages
 * stay shared), so that the caller can free that part.
 */
static int unshare_chunk(struct morsel *m, struct unshare *u, u64 start,
			 u64 end, unsigned int how, u64 *hole)
{
	bool data = how == MORSEL_UNSHARE_DATA;
	mentry_t *slot = m->rootp, e;
	int level = m->order, err;
	unsigned int i;

	for (;;) {
		u64 base = round_down(start, level_span(level));
		bool part = start > base || end < base + level_span(level);

		e = READ_ONCE(*slot);
		if (slot == m->rootp && level)
			e &= ~MPM_ROOT_ORDER_MASK;
		if (!e || e == MORSEL_POISON) {
			*hole = level_span(level);	/* nothing below */
			return 0;
		}
		if ((slot != m->rootp || !level) && entry_marked(e)) {
			if (entry_leaf(e, level) && !leaf_shared(e, level)) {
				if (data)
					entry_unprotect(slot, level);
				return 0;
			}
			if (!level)
				return data ? break_page(m, u, slot, e, start) : 0;
			if (entry_leaf(e, level)) {
				if (!data && !part)
					return 0;	/* it goes whole */
				err = split_huge(m, slot, e, level);
				if (err)
					return err;
				continue;
			}
			if (level != 1 || !atomic_read(table_owners(entry_va(e)))) {
				entry_unprotect(slot, level);
				continue;
			}
			/*
			 * Wholly inside, it goes whole when the range is
			 * freed; a mapped morsel's eviction clears leaves in
			 * its tables instead, so those need a copy of their own.
			 */
			if (how == MORSEL_UNSHARE_EDGES && !part)
				return 0;
			err = break_table(m, u, slot, e);
			if (err)
				return err;
			continue;
		}
		if (entry_leaf(e, level))
			return 0;
		if (level == 1)
			break;
		slot = (mentry_t *)entry_va(e) + level_index(start, level);
		level--;
	}
	if (!data)
		return 0;
	slot = (mentry_t *)entry_va(e) + level_index(start, 1);
	for (i = 0; i < (end - start) >> PAGE_SHIFT; i++) {
		mentry_t x = READ_ONCE(slot[i]);

		if (!x || x == MORSEL_POISON || !entry_marked(x))
			continue;
		if (!page_shared(entry_page(x))) {
			entry_unprotect(&slot[i], 0);
			continue;
		}
		err = break_page(m, u, &slot[i], x,
				 start + ((u64)i << PAGE_SHIFT));
		if (err)
			return err;
	}
	return 0;
}

/**
 * morsel_unshare - make [@start, @end) of a cloned morsel its own
 * @how: MORSEL_UNSHARE_EDGES (the tables on the paths of @start and
 *       @end - 1, and shared huge leaves across them: before freeing the
 *       range, whose inside may stay shared), _TABLES (every table of the
 *       range: before clearing its leaves while mapped) or _DATA (tables
 *       and data: before writing)
 *
 * Caller holds m->lock.  Nothing to do for a morsel that never took part
 * in a clone.  Return: 0, -ENOMEM, -ENOSPC or -EINTR; what was made the
 * morsel's own before an error stays so (it reads the same).
 */
int morsel_unshare(struct morsel *m, u64 start, u64 end, unsigned int how)
{
	u64 span = level_span(1), off, hole, next;
	struct unshare *u;
	int err = 0;

	lockdep_assert_held(&m->lock);
	if (!READ_ONCE(m->cow) || start >= end)
		return 0;
	end = min(end, morsel_extent(m->order));
	u = kzalloc(sizeof(*u), GFP_KERNEL);
	if (!u)
		return -ENOMEM;
	for (off = start; off < end && !err; off = next) {
		u64 stop = min(end, round_down(off, span) + span);

		if (how == MORSEL_UNSHARE_EDGES && off != start && stop != end) {
			next = max(stop, round_down(end - 1, span)); /* the last */
			continue;
		}
		hole = span;
		err = unshare_chunk(m, u, off, stop, how, &hole);
		/* Past a missing table at once: a huge file may be sparse. */
		next = max(stop, round_down(off, hole) + hole);
		unshare_finish(m, u, off, stop);
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	kfree(u);
	return err;
}

/* Undo object_join. */
static void object_unjoin(mentry_t e, int level)
{
	unsigned long i;

	if (!e || e == MORSEL_POISON)
		return;
	if (!entry_leaf(e, level)) {
		atomic_dec(table_owners(entry_va(e)));
		return;
	}
	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		page_leave(entry_page(e) + i);
}

/*
 * A root table for @m (order >= 1) if it has none, published under the
 * m->lock the caller holds (walk_to would take it: publish_root), just
 * before the first entry goes below it: an empty source leaves the
 * destination without tables, as an empty file has none.
 */
static int clone_root(struct morsel *m)
{
	mentry_t *t;
	bool lost;

	if (!m->order || READ_ONCE(*m->rootp))
		return 0;
	t = table_alloc(m, m->order, U64_MAX);
	if (IS_ERR(t))
		return PTR_ERR(t);
	publish(m, m->rootp, root_word(table_entry(t), m->order), &lost);
	if (lost)		/* m->lock is held: nobody else publishes it */
		table_free(m, t, m->order, false);
	return 0;
}

/*
 * Share the page of @src at @soff into the empty leaf of @dst at @doff.
 * A leaf a racing fault put there meanwhile is replaced and waits in @b
 * for the caller's flush.  *@n receives the bytes done (a hole of @src is
 * skipped a missing table at a time).
 */
static int clone_page(struct morsel *dst, u64 doff, struct morsel *src,
		      u64 soff, struct morsel_batch *b, u64 *n)
{
	mentry_t *ss, *ds, se = 0, de, leaf;
	struct page *page = NULL;
	u64 hole = PAGE_SIZE;
	int sl, dl, err;

	*n = PAGE_SIZE;
	ss = walk(src, soff, false, &hole, &se, &sl);
	if (!ss) {
		*n = round_down(soff, hole) + hole - soff;
		return 0;
	}
	if (!se)
		return 0;
	leaf = MORSEL_POISON;
	if (se != MORSEL_POISON) {
		page = leaf_page(se, soff, sl);
		atomic_long_add(OWNER_ONE, page_owners(page));
		entry_protect(ss, sl);
		leaf = page_entry(page) & ~LEAF_MARKS;
	}
	for (;;) {
		de = 0;
		err = clone_root(dst);
		ds = err ? ERR_PTR(err) : walk(dst, doff, true, NULL, &de, &dl);
		err = PTR_ERR_OR_ZERO(ds);
		if (!err && de && entry_huge(de))
			err = split_huge(dst, ds, de, dl);
		if (err) {
			if (page)
				page_leave(page);
			return err;
		}
		if (de && entry_huge(de))
			continue;
		de = txchg(dst, ds, leaf);
		if (de && de != MORSEL_POISON)
			morsel_batch_add(b, entry_page(de));
		break;
	}
	if (page)
		atomic_long_inc(&dst->nr_pages);
	return 0;
}

/**
 * morsel_clone - let [@doff, @doff + @len) of @dst share what
 * [@soff, @soff + @len) of @src holds
 *
 * Offsets and @len are page aligned and inside both extents.  The caller
 * holds both inodes and invalidate locks exclusively and both m->locks,
 * set m->cow on both and waited for their lock-free walkers, and evicted
 * the destination range.  Whole PTE tables (and 2 MiB leaves) are shared
 * where both offsets are 2 MiB aligned, pages elsewhere; the source's
 * entries lose write first.  Afterwards the caller unmaps both ranges
 * (mappers flushed and remounted).  @dst == @src is allowed (ranges do
 * not overlap).  Return: 0, -ENOMEM, -ENOSPC (tables of @dst) or -EINTR;
 * what was shared before an error stays shared.
 */
int morsel_clone(struct morsel *dst, u64 doff, struct morsel *src, u64 soff,
		 u64 len)
{
	u64 span = level_span(1), done = 0, n;
	struct morsel_batch b;
	struct page *page;
	int err = 0;

	lockdep_assert_held(&src->lock);
	lockdep_assert_held(&dst->lock);
	if (WARN_ON_ONCE(src->pm || dst->pm))
		return -EOPNOTSUPP;
	morsel_batch_init(dst->src, &b);
	while (done < len && !err) {
		u64 s = soff + done, d = doff + done;
		mentry_t *ss, *ds, se = 0, de = 0;
		struct tally t = { };
		int sl = 0;
		bool lost;

		if (IS_ALIGNED(s, span) && IS_ALIGNED(d, span) &&
		    len - done >= span && src->order >= 2 && dst->order >= 2) {
			u64 hole = span;

			ss = walk_to(src, s, 1, false, &hole, &se, &sl);
			if (!ss || !se) {
				/* Past a missing table at once: sparse files. */
				n = ss ? span : round_down(s, hole) + hole - s;
				done += min(n, len - done);
				continue;
			}
			if (sl != 1)	/* inside a 1 GiB leaf: by pages */
				goto pages;
			err = clone_root(dst);
			if (err)
				break;
			ds = walk_to(dst, d, 1, true, NULL, &de, NULL);
			if (IS_ERR(ds)) {
				err = PTR_ERR(ds);
				break;
			}
			if (de)		/* a table a mapping keeps: by pages */
				goto pages;
			object_join(se, 1);
			entry_protect(ss, 1);
			se = READ_ONCE(*ss);
			publish(dst, ds, se, &lost);
			if (lost) {
				object_unjoin(se, 1);
				goto pages;
			}
			tally_add(&t, se, 1);
			tally_apply(dst, &t, 1);
			done += span;
			goto next;
		}
pages:
		err = clone_page(dst, d, src, s, &b, &n);
		done += min(n, len - done);
next:
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	}
	/*
	 * Leaves that racing faults put in @dst's range go after a flush;
	 * an order-0 mount of page 0 is a copy of its leaf, which only
	 * unmap_mapping_range() takes away (as evictions do).
	 */
	if (!morsel_batch_empty(&b)) {
		if (!doff && (!dst->order || morsel_order0_mapped(dst)))
			unmap_mapping_range(dst->inode->i_mapping, 0, PAGE_SIZE, 0);
		morsel_flush_mappers(dst, doff, doff + len);
	}
	while ((page = morsel_batch_next(&b)))
		page_gone(dst, page);
	morsel_batch_fini(&b);
	return err;
}

/**
 * morsel_free_range - free pages and tables in [@start, @end)
 *
 * Offsets are page aligned and within the extent.  Caller holds m->lock and
 * the morsel is not mapped.
 */
void morsel_free_range(struct morsel *m, u64 start, u64 end)
{
	lockdep_assert_held(&m->lock);
	if (start < end)
		free_level(m, m->rootp, m->order, start, end);
}

/**
 * morsel_evict_mapped - free the pages in [@start, @end) of a mapped morsel
 *
 * Every leaf entry of the range is cleared under its PTE table's lock, the
 * TLBs and secondary MMUs of every process mapping the morsel are flushed
 * (morsel_flush_mappers), and only then are the pages released.  Tables
 * stay: a concurrent fault may be walking them.
 * An order-0 mapping's mount entry is a *copy* of the leaf of offset 0:
 * when that page goes, unmap_mapping_range() on @mapping also clears those
 * copies (->pgtable_unmount, under the i_mmap lock, which keeps the
 * mappers' tables alive), after the leaf was cleared and before the page
 * is released; mount.c pins the page while it copies it.  Offsets are page
 * aligned; caller holds m->lock.
 */
/*
 * Pages whose leaves were cleared wait in a batch (source.h) for the
 * flush that must come before they are released.  A source whose batch
 * has a limit gets it flushed before a table could overflow it.
 *
 * A page another tree also owns (a clone) waits in @shared instead: the
 * batch links pages through page->lru, and the other owner's eviction
 * may hold the same page in its own batch meanwhile, or this one twice
 * (a clone within one file).  An owner looks at the count before it lets
 * go, after its flush, so a page that is not shared when its leaf is
 * cleared has no other owner that could list it.  A cloned morsel's
 * eviction gets the array (one PTE table's worth) and flushes before a
 * table could overflow it.
 */
struct evicted {
	struct morsel_batch batch;
	struct page **shared;
	unsigned int nr_shared;
	u64 from;		/* the first offset not flushed yet */
	bool copies;		/* order-0 copies of the first page to unmap */
};

static void evicted_page(struct evicted *ev, struct page *page)
{
	if (ev->shared && page_shared(page))
		ev->shared[ev->nr_shared++] = page;
	else
		morsel_batch_add(&ev->batch, page);
}

static void evicted_add(struct evicted *ev, mentry_t e)
{
	if (e && e != MORSEL_POISON)
		evicted_page(ev, entry_page(e));
}

/* Whether @ev can take @nr more pages before it must be flushed. */
static bool evicted_room(struct evicted *ev, unsigned int nr)
{
	return morsel_batch_room(&ev->batch, nr) &&
	       (!ev->shared || ev->nr_shared + nr <= PTRS_PER_PTE);
}

/* Flush the mappers of [ev->from, @end) and release what was evicted. */
static void evicted_release(struct morsel *m, struct evicted *ev,
			    struct address_space *mapping, u64 end)
{
	struct page *page;

	if (morsel_batch_empty(&ev->batch) && !ev->nr_shared)
		return;
	if (ev->copies)
		unmap_mapping_range(mapping, 0, PAGE_SIZE, 0);
	ev->copies = false;
	morsel_flush_mappers(m, ev->from, end);
	ev->from = end;
	while ((page = morsel_batch_next(&ev->batch))) {
		page_gone(m, page);
		cond_resched();
	}
	while (ev->nr_shared)
		page_gone(m, ev->shared[--ev->nr_shared]);
}

/*
 * Evict the whole 1 GiB leaf @leaf in @slot at byte offset @off: cleared,
 * flushed (which also waits for GUP's readers of the leaf: mount.c), then
 * its block goes back to the source as one (pool.c may keep it).  Nothing
 * else waits in @ev.  Return: false if @slot changed meanwhile (a split).
 */
static bool evict_huge1g(struct morsel *m, struct evicted *ev,
			 struct address_space *mapping, mentry_t *slot,
			 mentry_t leaf, u64 off)
{
	if (!tcmpxchg(m, slot, &leaf, 0))
		return false;
	huge_added(m, 2, -1);
	if (ev->copies && !off)
		unmap_mapping_range(mapping, 0, PAGE_SIZE, 0);
	if (!off)
		ev->copies = false;
	morsel_flush_mappers(m, off, off + level_span(2));
	ev->from = off + level_span(2);
	leaf_gone(m, leaf, 2);
	return true;
}

void morsel_evict_mapped(struct morsel *m, struct address_space *mapping,
			 u64 start, u64 end)
{
	u64 table_span = level_span(1), off;
	struct evicted ev = {
		.from = start,
		.copies = !start && (!m->order || morsel_order0_mapped(m)),
	};

	lockdep_assert_held(&m->lock);
	if (start >= end)
		return;
	morsel_batch_init(m->src, &ev.batch);
	if (READ_ONCE(m->cow))	/* m->lock keeps it: a clone takes it */
		ev.shared = kmalloc_array(PTRS_PER_PTE, sizeof(*ev.shared),
					  GFP_KERNEL | __GFP_NOFAIL);
	if (!m->order) {		/* the root is the leaf */
		evicted_add(&ev, txchg(m, m->rootp, 0));
		start = end;
	}
	for (off = start; off < end;
	     off = round_down(off, table_span) + table_span) {
		u64 stop = min(end, round_down(off, table_span) + table_span);
		u64 base = round_down(off, table_span), hole;
		unsigned int i, n = (stop - off) >> PAGE_SHIFT;
		spinlock_t *ptl;	/* the PTE table's lock, as GUP takes it */
		mentry_t leaf, *slot;
		int level;

again:
		hole = table_span;
		slot = walk(m, off, false, &hole, &leaf, &level);
		if (!slot) {
			/* Skip all of the missing table's span. */
			off = round_down(off, hole) + hole - table_span;
			continue;
		}
		if (entry_huge(leaf) && level == 2) {
			u64 gbase = round_down(off, level_span(2));
			u64 gstop = min(end, gbase + level_span(2));

			if (off == gbase && gstop == gbase + level_span(2)) {
				evicted_release(m, &ev, mapping, off);
				if (!evict_huge1g(m, &ev, mapping, slot, leaf, off))
					goto again;
			} else if (split_huge(m, slot, leaf, 2)) {
				zero_huge(m, leaf, off - gbase, gstop - gbase);
			} else {
				goto again;
			}
			/* Past the leaf: the loop adds table_span. */
			off = round_down(gstop - 1, table_span);
			continue;
		}
		if (entry_huge(leaf) && n < HUGE_NR) {
			/* Part of a 2 MiB leaf: split it, or zero the part. */
			if (split_huge(m, slot, leaf, 1))
				zero_huge(m, leaf, off - base, stop - base);
			else
				goto again;
			continue;
		}
		if (!evicted_room(&ev, n))
			evicted_release(m, &ev, mapping, off);
		ptl = ptlock_ptr(virt_to_ptdesc(slot));
		if (entry_huge(leaf)) {	/* the PMD table's lock */
			bool done;

			spin_lock(ptl);
			done = tcmpxchg(m, slot, &leaf, 0);
			spin_unlock(ptl);
			if (!done)	/* split meanwhile (mount.c) */
				goto again;
			for (i = 0; i < HUGE_NR; i++)
				evicted_page(&ev, entry_page(leaf) + i);
			huge_added(m, 1, -1);
			continue;
		}
		spin_lock(ptl);
		for (i = 0; i < n; i++)
			if (READ_ONCE(slot[i]))
				evicted_add(&ev, txchg(m, &slot[i], 0));
		spin_unlock(ptl);
		cond_resched();
	}
	evicted_release(m, &ev, mapping, end);
	morsel_batch_fini(&ev.batch);
	kfree(ev.shared);
}

/*
 * Collapse the full PTE table @e in @slot (the 2 MiB at @base) into one
 * 2 MiB leaf: in place if its pages are one aligned run, else into a new
 * block, copied.  Return: 0, -EAGAIN (a hole, a failed page or a page
 * someone else holds: left as it is), -ENOMEM or -ENOSPC.
 */
static int collapse_table(struct morsel *m, mentry_t *slot, mentry_t e,
			  u64 base)
{
	mentry_t *t = entry_va(e);
	struct page *first, *page;
	bool in_place = true;
	unsigned int i;

	for (i = 0; i < HUGE_NR; i++) {
		mentry_t leaf = READ_ONCE(t[i]);

		if (!leaf || leaf == MORSEL_POISON)
			return -EAGAIN;
		if (entry_page(leaf) != entry_page(t[0]) + i)
			in_place = false;
	}
	first = entry_page(t[0]);
	if (!IS_ALIGNED(page_to_pfn(first), HUGE_NR))
		in_place = false;
	if (!in_place) {
		/* A pin could still write an old page after the copy. */
		for (i = 0; i < HUGE_NR; i++)
			if (page_count(entry_page(t[i])) != 1)
				return -EAGAIN;
		if (!morsel_charge(m, HUGE_NR))
			return -ENOSPC;
		first = src_huge_alloc(m->src, &m->place, 1, 0);
		if (!first) {
			morsel_uncharge(m, HUGE_NR);
			return m->src->full_errno;
		}
		for (i = 0; i < HUGE_NR; i++) {
			copy_highpage(first + i, entry_page(t[i]));
			src_wrote(m->src, page_address(first + i), PAGE_SIZE);
			page_owned(m, first + i, base + ((u64)i << PAGE_SHIFT));
		}
		pages_added(m, HUGE_NR);
	}
	src_huge_ready(m->src);
	tstore(m, slot, huge_entry(first, 1));
	for (i = 0; i < HUGE_NR; i++) {
		page = entry_page(t[i]);
		tstore(m, &t[i], 0);
		if (!in_place) {
			page_release(m, page);
			pages_added(m, -1);
		}
	}
	table_free(m, t, 1, true);
	huge_added(m, 1, 1);
	atomic_long_inc(&morsel_stat_huge_collapses);
	return 0;
}

/**
 * morsel_collapse - make every full, aligned 2 MiB of [@start, @end) one
 * 2 MiB leaf
 *
 * The caller holds the inode lock and the invalidate lock exclusively and
 * m->lock, has unmapped the range's page-by-page mappings, and the morsel
 * is not mounted (a fault walking the old PTE table could not be kept
 * out).  Ranges with a hole, a failed page or a pinned page are left.
 * Return: 0, -EAGAIN (some range was left for one of those), -ENOMEM,
 * -ENOSPC, -EINTR or -EOPNOTSUPP (the source has no 2 MiB blocks, or
 * order < 2).
 */
int morsel_collapse(struct morsel *m, u64 start, u64 end)
{
	u64 base;
	int err = 0, ret;

	lockdep_assert_held(&m->lock);
	if (!src_has_huge(m->src, 1) || m->order < 2)
		return -EOPNOTSUPP;
	for (base = round_up(start, HUGE_SIZE); base + HUGE_SIZE <= end;
	     base += HUGE_SIZE) {
		mentry_t e = 0, *slot = walk_to(m, base, 1, false, NULL, &e,
						NULL);

		/* A 1 GiB leaf (e is huge) is left as it is. */
		if (!slot || !e || entry_huge(e)) {
			if (!slot || !e)
				err = -EAGAIN;
			continue;
		}
		ret = collapse_table(m, slot, e, base);
		if (ret == -EAGAIN)
			err = ret;
		else if (ret)
			return ret;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return err;
}

/*
 * ---- Moving pages between nodes (MORSEL_IOC_MIGRATE) ----
 *
 * A batch of leaves is chosen and their new pages are allocated first,
 * on the target node and charged to the old pages' memory cgroups; then,
 * under m->lock, each leaf is cleared under its table's split lock (as
 * GUP reads it), every mapper is flushed once (TLBs and secondary MMUs),
 * and each page nobody else holds (its count is the tree's one
 * reference) is copied and its new leaf stored, keeping the old leaf's
 * accessed bit.  A page someone holds (a GUP pin, which could
 * still write it) gets its old leaf back.  No fault can fill a cleared
 * slot meanwhile: the caller set m->migrating, so faults take m->lock
 * (mount.c morsel_fault_in), and holds the locks that keep out the rest.
 */
#define MIGRATE_BATCH	8192	/* pages per flush (32 MiB) */

struct migrating {
	mentry_t *slot;
	mentry_t leaf;		/* as chosen; then as cleared */
	struct page *new;	/* NULL: left (and counted) */
	u64 off;		/* of the leaf's first page */
	int level;
};

/* The memory cgroup @page is charged to, with a reference, or NULL. */
static struct mem_cgroup *page_memcg_get(struct page *page)
{
	struct mem_cgroup *memcg;

	rcu_read_lock();
	do {
		memcg = folio_memcg(page_folio(page));
	} while (memcg && !css_tryget(&memcg->css));
	rcu_read_unlock();
	return memcg;
}

/* A new page (or 2 MiB block) for the leaf @e of @level, where @to says. */
static struct page *migrate_alloc(struct morsel *m, mentry_t e, int level,
				  const struct morsel_place *to)
{
	struct mem_cgroup *memcg = page_memcg_get(entry_page(e)), *old;
	struct page *page;

	old = set_active_memcg(memcg);
	page = level ? src_huge_alloc(m->src, to, level, 0) :
		       src_page_alloc(m->src, to, false);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	return page;
}

static void migrate_free_new(struct morsel *m, struct migrating *it)
{
	if (it->level)
		src_huge_free(m->src, it->new, it->level);
	else
		src_page_free(m->src, it->new);
	it->new = NULL;
}

/* Whether only the tree holds the pages under @e (no pin, no mapping). */
static bool leaf_unheld(mentry_t e, int level)
{
	unsigned long i;

	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		if (page_count(entry_page(e) + i) != 1)
			return false;
	return true;
}

static spinlock_t *slot_ptl(struct morsel *m, mentry_t *slot)
{
	return slot == m->rootp ? NULL : ptlock_ptr(virt_to_ptdesc(slot));
}

static void slot_store(struct morsel *m, mentry_t *slot, mentry_t v,
		       mentry_t *old)
{
	spinlock_t *ptl = slot_ptl(m, slot);

	if (ptl)
		spin_lock(ptl);
	if (old)
		*old = txchg(m, slot, v);
	else
		tstore(m, slot, v);
	if (ptl)
		spin_unlock(ptl);
}

/*
 * Choose the leaves of [*@cur, @end) for one batch and allocate their new
 * pages (no lock of the tree's: the caller's locks keep every leaf where
 * it is, faults only fill holes).  Return: how many items.
 */
/* Whether @bits (from @start) has a bit set in [@from, @to). */
static bool migrate_wanted(const unsigned long *bits, u64 start, u64 from,
			   u64 to)
{
	u64 first = (max(from, start) - start) >> PAGE_SHIFT;

	return !bits || find_next_bit(bits, (to - start) >> PAGE_SHIFT,
				      first) < (to - start) >> PAGE_SHIFT;
}

static unsigned int migrate_choose(struct morsel *m, u64 start, u64 *cur,
				   u64 end, int nid,
				   const struct morsel_place *to,
				   const unsigned long *bits,
				   struct migrating *items,
				   struct morsel_migrate *res)
{
	unsigned int n = 0, pages = 0;
	u64 off = *cur, span;
	mentry_t *slot, e;
	int level;

	while (pages < MIGRATE_BATCH &&
	       (slot = next_leaf(m, &off, end, &e, &level))) {
		span = level_span(level);
		if (!migrate_wanted(bits, start, off, min(off + span, end))) {
			/* nothing of it asked for */
		} else if (level == 2 || leaf_shared(e, level)) {
			res->shared += MORSEL_LEAF_PAGES(level);
		} else if (page_to_nid(entry_page(e)) != nid) {
			struct migrating *it = &items[n];

			*it = (struct migrating) { .slot = slot, .leaf = e,
						   .off = off, .level = level };
			it->new = migrate_alloc(m, e, level, to);
			if (it->new) {
				n++;
				pages += MORSEL_LEAF_PAGES(level);
			} else {
				res->failed += MORSEL_LEAF_PAGES(level);
			}
		}
		off += span;
		if (!(off & (level_span(1) - 1)))
			cond_resched();
	}
	*cur = off;
	return n;
}

/* Move the chosen leaves, under m->lock (top of this section). */
static void migrate_batch(struct morsel *m, struct address_space *mapping,
			  struct migrating *items, unsigned int n,
			  struct morsel_migrate *res)
{
	u64 lo = U64_MAX, hi = 0, nr;
	bool copies = false;
	struct page *old;
	unsigned int i, j;
	mentry_t e;

	lockdep_assert_held(&m->lock);
	for (i = 0; i < n; i++) {
		struct migrating *it = &items[i];
		spinlock_t *ptl = slot_ptl(m, it->slot);

		if (ptl)
			spin_lock(ptl);
		e = READ_ONCE(*it->slot);
		/* The same leaf (A and D bits aside) is cleared. */
		if (e && e != MORSEL_POISON && entry_page(e) ==
		    entry_page(it->leaf) && entry_huge(e) == !!it->level)
			it->leaf = txchg(m, it->slot, 0);
		else
			it->leaf = 0;
		if (ptl)
			spin_unlock(ptl);
		if (!it->leaf) {
			migrate_free_new(m, it);
			continue;
		}
		lo = min(lo, it->off);
		hi = max(hi, it->off + level_span(it->level));
		copies |= !it->off;
	}
	if (lo >= hi)
		return;
	/* Order-0 copies of page 0 (mount.c) hold no reference: unmap them. */
	if (copies && (!m->order || morsel_order0_mapped(m)))
		unmap_mapping_range(mapping, 0, PAGE_SIZE, 0);
	morsel_flush_mappers(m, lo, hi);
	for (i = 0; i < n; i++) {
		struct migrating *it = &items[i];

		if (!it->new)
			continue;
		nr = MORSEL_LEAF_PAGES(it->level);
		if (!leaf_unheld(it->leaf, it->level)) {
			slot_store(m, it->slot, it->leaf, NULL);
			migrate_free_new(m, it);
			res->pinned += nr;
			continue;
		}
		old = entry_page(it->leaf);
		for (j = 0; j < nr; j++) {
			copy_highpage(it->new + j, old + j);
			page_owned(m, it->new + j,
				   it->off + ((u64)j << PAGE_SHIFT));
		}
		/* Its accessed bit says what it said (tiering reads it). */
		e = it->level ? huge_entry(it->new, it->level) :
				page_entry(it->new);
		slot_store(m, it->slot, (e & ~(mentry_t)_PAGE_ACCESSED) |
			   (it->leaf & _PAGE_ACCESSED), NULL);
		if (it->level)
			huge_release(m, old, it->level);
		else
			page_release(m, old);
		res->moved += nr;
		atomic_long_add(nr, &morsel_stat_migrated);
		cond_resched();
	}
}

/**
 * morsel_migrate - move the pages of [@start, @end) to node @nid
 * @mapping: the file's, for its order-0 copies
 * @bits:    NULL, or bit i for the page at @start + i * PAGE_SIZE: only
 *           those move (a 2 MiB leaf if any of its pages' bits is set)
 * @res:     counts what moved and what was left, and why (added to)
 *
 * The caller holds the inode lock and the invalidate lock exclusively,
 * set m->migrating and waited for the lock-free walkers, and unmapped the
 * range's page-by-page mappings.  A 2 MiB leaf the range touches moves
 * whole; a 1 GiB leaf, a page a clone shares and a failed page stay.
 * Return: 0, -ENOMEM (no batch), -EINTR (a fatal signal; what was moved
 * stays moved) or an error from making a clone's tables this file's own.
 */
int morsel_migrate(struct morsel *m, struct address_space *mapping,
		   u64 start, u64 end, int nid, const unsigned long *bits,
		   struct morsel_migrate *res)
{
	struct morsel_place to = { };
	struct migrating *items;
	struct morsel_policy *p;
	u64 cur = start;
	unsigned int n;
	int err = 0;

	end = min(end, morsel_extent(READ_ONCE(m->order)));
	if (start >= end)
		return 0;
	p = morsel_mpol_target(nid);
	if (IS_ERR(p))
		return PTR_ERR(p);
	RCU_INIT_POINTER(to.own, p);
	items = kvmalloc_array(MIGRATE_BATCH, sizeof(*items), GFP_KERNEL);
	if (!items) {
		kfree(p);
		return -ENOMEM;
	}
	/* A clone's shared tables become this file's: its leaves change. */
	if (READ_ONCE(m->cow)) {
		mutex_lock(&m->lock);
		err = morsel_unshare(m, start, end, MORSEL_UNSHARE_TABLES);
		mutex_unlock(&m->lock);
	}
	while (!err && cur < end) {
		n = migrate_choose(m, start, &cur, end, nid, &to, bits, items,
				   res);
		mutex_lock(&m->lock);
		migrate_batch(m, mapping, items, n, res);
		mutex_unlock(&m->lock);
		if (fatal_signal_pending(current))
			err = -EINTR;
	}
	kvfree(items);
	kfree(p);
	return err;
}

/**
 * morsel_scan_accessed - the accessed bits of the leaves of [@start, @end)
 * @bits:  bit i for the page at @start + i * PAGE_SIZE, set when its leaf
 *         has the accessed bit (the caller zeroed it); may be NULL
 * @clear: clear the bits read, and flush every mapper of the range once
 *         (a TLB entry would keep the MMU from setting the bit again)
 * @accessed, @populated: pages counted, added to
 *
 * Under m->lock, which keeps every table; the bits change atomically (the
 * MMU sets A and D bits in the same words meanwhile).  Not for a device,
 * whose stores go through tstore.
 */
void morsel_scan_accessed(struct morsel *m, u64 start, u64 end, bool clear,
			  unsigned long *bits, u64 *accessed, u64 *populated)
{
	u64 off = start, from, to, lo = U64_MAX, hi = 0, i;
	mentry_t *slot, e;
	int level;

	lockdep_assert_held(&m->lock);
	end = min(end, morsel_extent(m->order));
	while ((slot = next_leaf(m, &off, end, &e, &level))) {
		from = max(off, start);
		to = min(off + level_span(level), end);
		*populated += (to - from) >> PAGE_SHIFT;
		if (e & _PAGE_ACCESSED) {
			*accessed += (to - from) >> PAGE_SHIFT;
			if (bits)
				for (i = from; i < to; i += PAGE_SIZE)
					__set_bit((i - start) >> PAGE_SHIFT, bits);
			if (clear) {
				clear_bit(_PAGE_BIT_ACCESSED,
					  (unsigned long *)slot);
				lo = min(lo, off);
				hi = max(hi, to);
			}
		}
		off = to;
		if (!(off & (level_span(1) - 1)))
			cond_resched();
	}
	if (lo < hi)
		morsel_flush_mappers(m, lo, hi);
}

/*
 * Install @root as the root of order @order if the root is still @old.
 * Return: true if installed.
 */
static bool set_root(struct morsel *m, mentry_t old, mentry_t root,
		     unsigned int order)
{
	bool done;

	write_seqcount_begin(&m->seq);
	done = tcmpxchg(m, m->rootp, &old, root_word(root, order));
	if (done)
		WRITE_ONCE(m->order, order);
	write_seqcount_end(&m->seq);
	return done;
}

/*
 * Raise the order to @order (see the top of the file): an empty root of a
 * volatile morsel stays empty, that of a persistent one (whose root word
 * carries the order) becomes one empty table; otherwise a chain of new
 * tables whose entry 0 leads to the old root, so nothing is copied.
 */
static int raise_order(struct morsel *m, unsigned int order)
{
	void *tables[MORSEL_MAX_ORDER + 1] = { };
	unsigned int level;
	mentry_t old;
	int err = 0;

	for (;;) {
		old = READ_ONCE(*m->rootp);
		/*
		 * A volatile morsel's empty root stays empty: its table comes
		 * with the first page (walk), so creating and destroying an
		 * empty morsel of any order allocate no table.  Root
		 * publications hold m->lock as we do (publish_root): it
		 * cannot fill meanwhile.
		 */
		if (!old && !m->src->root_table) {
			if (set_root(m, 0, 0, order))
				return 0;
			continue;
		}
		if (!old) {
			if (!tables[order]) {
				tables[order] = table_alloc(m, order, U64_MAX);
				if (IS_ERR(tables[order])) {
					err = PTR_ERR(tables[order]);
					tables[order] = NULL;
					break;
				}
			}
			if (set_root(m, 0, table_entry(tables[order]), order))
				return 0;
			continue;	/* a fault filled the root meanwhile */
		}
		for (level = m->order + 1; level <= order; level++) {
			if (tables[level])
				continue;
			tables[level] = table_alloc(m, level, U64_MAX);
			if (IS_ERR(tables[level])) {
				err = PTR_ERR(tables[level]);
				tables[level] = NULL;
				goto undo;
			}
		}
		for (level = m->order + 1; level <= order; level++) {
			mentry_t *t = tables[level];

			tstore(m, &t[0], level == m->order + 1 ?
			       old & ~MPM_ROOT_ORDER_MASK :
			       table_entry(tables[level - 1]));
		}
		if (set_root(m, old, table_entry(tables[order]), order))
			return 0;
	}
undo:
	for (level = m->order + 1; level <= order; level++) {
		if (tables[level]) {
			tstore(m, tables[level], 0);
			table_free(m, tables[level], level, false);
		}
	}
	return err;
}

/**
 * morsel_set_order - change the order, keeping offsets below both extents
 *
 * Raising adds tables above the old root (which becomes entry 0 of the new
 * one; nothing is copied); it may run while the morsel is mapped and
 * faulted.  Lowering frees everything beyond the new extent and then the
 * tables above the new root; the morsel must not be mapped.  Caller holds
 * m->lock (and for lowering the locks named at the top of the file).
 * Return: 0, -ENOMEM or -ENOSPC (order unchanged).
 */
int morsel_set_order(struct morsel *m, unsigned int order)
{
	unsigned int level;

	lockdep_assert_held(&m->lock);
	if (order > m->order)
		return raise_order(m, order);
	if (order < m->order) {
		void *old[MORSEL_MAX_ORDER + 1] = { };
		/*
		 * The new root must be a table (or none): below order 2 the
		 * first 2 MiB's PTE table, at order 2 the first 1 GiB's PMD
		 * table.
		 */
		int err = morsel_unshare(m, 0, morsel_extent(order) + PAGE_SIZE,
					 MORSEL_UNSHARE_EDGES);

		/* Nor may it be shared: the PTE table of offset 0 is ours. */
		if (!err && order < 2)
			err = morsel_unshare(m, 0, PAGE_SIZE,
					     MORSEL_UNSHARE_TABLES);
		if (!err && order < 3)
			err = morsel_split(m, 0, max(order, 1U));
		if (err)
			return err;
		free_level(m, m->rootp, m->order, morsel_extent(order),
			   morsel_extent(m->order));
		write_seqcount_begin(&m->seq);
		for (level = m->order; level > order; level--) {
			mentry_t e = *m->rootp, *t;

			if (!e)
				continue;
			t = entry_va(e);
			tstore(m, m->rootp, root_word(t[0], level - 1));
			tstore(m, &t[0], 0);
			old[level] = t;
		}
		WRITE_ONCE(m->order, order);
		write_seqcount_end(&m->seq);
		/* Outside the write section, which must not sleep. */
		for (level = 0; level <= MORSEL_MAX_ORDER; level++)
			if (old[level])
				table_free(m, old[level], level, true);
	}
	return 0;
}

/**
 * morsel_entry_at - what maps byte offset @off at the PMD or the PTE level
 * @level: 1: the entry of the PTE table of @off's 2 MiB, or its 2 MiB
 *         leaf; 0: the leaf of @off's page (a page under a huge leaf
 *         gets a PTE of its own)
 *
 * For mounted anonymous memory (anonmnt.c), which puts the one into a
 * process PMD entry and copies the other into a process PTE.  The entries
 * above it are then not on the hardware's walk, so the entry loses write
 * (RW, and a leaf also Dirty) if any entry on the way to it is marked: a
 * clone may share what lies below (a shared table's entries keep RW).
 * The caller keeps the entry from changing as a fault does (the
 * invalidate lock, and morsel_walk_lock on a cloned morsel).
 * Return: the entry, or 0 (a hole, a failed page, a 1 GiB leaf at level
 * 1, or an order below @level).
 */
mentry_t morsel_entry_at(struct morsel *m, u64 off, int level)
{
	bool shared = false;
	mentry_t e;
	int lvl = snapshot(m, &e);

	if (level > lvl || off >= morsel_extent(lvl))
		return 0;
	e &= ~MPM_ROOT_ORDER_MASK;
	/* The root is never shared; below it, as in morsel_mount_entry. */
	for (; e && e != MORSEL_POISON && lvl > level; lvl--) {
		if (lvl <= 2 && entry_huge(e))
			break;
		e = READ_ONCE(((mentry_t *)entry_va(e))[level_index(off, lvl)]);
		shared |= e && entry_marked(e);
	}
	if (!e || e == MORSEL_POISON || (level && lvl != level))
		return 0;
	if (lvl != level)		/* a page of a huge leaf */
		e = page_entry(leaf_page(e, off, lvl));
	if (!shared)
		return e;
	return e & ~(entry_leaf(e, level) ? LEAF_MARKS : TABLE_MARKS);
}

/**
 * morsel_mount_entry - the entry that mounts @m's first @order extent
 *
 * A mapping of order @order (at most the morsel's) mounts the subtree that
 * covers offsets [0, extent of @order), with the given rights.
 * For order 0 the entry is the leaf PTE itself: a read-only one also loses
 * _PAGE_DIRTY, since RW=0 with Dirty=1 is a shadow-stack page under CET
 * (writable by WRSS, and pte_write() would call it writable).  In table
 * entries (orders >= 1) the hardware ignores Dirty.
 * Return: 0 if nothing is populated (order 0 before its page exists).
 */
mentry_t morsel_mount_entry(struct morsel *m, unsigned int order, bool write,
			    bool exec)
{
	bool shared = false;
	mentry_t e;
	unsigned int level = snapshot(m, &e);

	e &= ~MPM_ROOT_ORDER_MASK;
	/* The subtree of @order at offset 0: entry 0 of each table below. */
	for (; e && level > order; level--) {
		/*
		 * A huge leaf at offset 0: an order-0 mapping copies the
		 * leaf of its first page; an order-1 or order-2 one needs
		 * the PTE or PMD table (mount.c splits the leaf first), so
		 * it gets none yet.
		 */
		if (level <= 2 && entry_huge(e)) {
			if (order)
				return 0;
			e = page_entry(entry_page(e));
			level = 0;
			break;
		}
		e = READ_ONCE(*(mentry_t *)entry_va(e));
		shared |= e && e != MORSEL_POISON && entry_marked(e);
	}
	if (!e || level != order || e == MORSEL_POISON)
		return 0;
	/*
	 * The mount skips the entries above it: one marked there (a clone
	 * shares what lies below: a shared table's entries keep RW, a
	 * shared huge leaf's pages get a fresh leaf here) takes write away
	 * from the mount too, so that the first write faults and breaks the
	 * sharing (tree.c), as morsel_entry_at does for anonymous memory.
	 * Only an order-0 mapping of a morsel that grew past it gets here
	 * with a mark: mount.c makes a mounted table this morsel's own.
	 */
	if (shared)
		e &= ~(order ? TABLE_MARKS : LEAF_MARKS);
	if (!write)
		e &= ~(mentry_t)(order ? _PAGE_RW : _PAGE_RW | _PAGE_DIRTY);
	if (!exec)
		e |= _PAGE_NX & __supported_pte_mask;
	return e;
}

struct morsel *morsel_alloc(struct morsel_sb *sbi, struct inode *inode)
{
	struct morsel *m = kzalloc(sizeof(*m), GFP_KERNEL);

	if (!m)
		return NULL;
	m->sbi = sbi;
	m->inode = inode;
	m->rootp = &m->root;
	m->pm = sbi->pm;
	m->src = sbi->src;
	m->huge = MORSEL_HUGE_INHERIT;
	mutex_init(&m->lock);
	seqcount_mutex_init(&m->seq, &m->lock);
	INIT_LIST_HEAD(&m->maps);
	atomic_long_inc(&morsel_stat_morsels);
	return m;
}

/* Free every page and table (post-order) and the morsel. */
void morsel_destroy(struct morsel *m)
{
	morsel_memerr_del(m);
	mutex_lock(&m->lock);
	free_level(m, m->rootp, m->order, 0, morsel_extent(m->order));
	mutex_unlock(&m->lock);
	mutex_destroy(&m->lock);
	morsel_mpol_free(&m->place.own);
	kfree(m);
	atomic_long_dec(&morsel_stat_morsels);
}

/*
 * A tree found on a persistent device (mount): construct its tables as
 * table_alloc does (split locks, page type) and count its pages and
 * tables.  Return: 0 or -ENOMEM (what was constructed stays counted, and
 * morsel_forget undoes it).
 */
static int adopt(struct morsel *m, mentry_t e, int level, u64 off)
{
	struct ptdesc *pt;
	mentry_t *t;
	int i, err = 0;

	if (!e)
		return 0;
	if (!level) {
		if (e != MORSEL_POISON) {
			page_owned(m, entry_page(e), off);
			pages_added(m, 1);
		}
		return 0;
	}
	if (level == 1 && entry_huge(e)) {	/* format 3 (pm_format.h) */
		for (i = 0; i < HUGE_NR; i++)
			page_owned(m, entry_page(e) + i,
				   off + ((u64)i << PAGE_SHIFT));
		pages_added(m, HUGE_NR);
		huge_added(m, 1, 1);
		return 0;
	}
	t = entry_va(e);
	pt = virt_to_ptdesc(t);
	if (!table_ctor(pt, level))
		return -ENOMEM;
	atomic_long_inc(&m->nr_tables[level - 1]);
	atomic_long_inc(&morsel_stat_tables);
	for (i = 0; i < PTRS_PER_PTE && !err; i++)
		err = adopt(m, READ_ONCE(t[i]), level - 1,
			    off + (u64)i * level_span(level - 1));
	return err;
}

int morsel_adopt_tree(struct morsel *m)
{
	int err = morsel_memerr_add(m);

	if (err)
		return err;
	return adopt(m, READ_ONCE(*m->rootp) & ~MPM_ROOT_ORDER_MASK, m->order, 0);
}

/*
 * Undo adopt() (or table_alloc(), page_owned()) for the tables and pages
 * of a tree that stays: a page of it that a later mount frees may become
 * a table, whose split lock lives in page->private.
 */
static void disown(struct morsel *m, mentry_t e, int level)
{
	struct ptdesc *pt;
	mentry_t *t;
	int i;

	if (!e)
		return;
	if (!level) {
		if (e != MORSEL_POISON)
			page_disowned(m, entry_page(e));
		return;
	}
	if (level == 1 && entry_huge(e)) {
		for (i = 0; i < HUGE_NR; i++)
			page_disowned(m, entry_page(e) + i);
		return;
	}
	t = entry_va(e);
	for (i = 0; i < PTRS_PER_PTE; i++)
		disown(m, READ_ONCE(t[i]), level - 1);
	pt = virt_to_ptdesc(t);
	if (!atomic_long_read(&m->nr_tables[level - 1]))
		return;		/* adopt() stopped before this one */
	table_dtor(pt, level);
	src_table_forget(m->src, pt);
	atomic_long_dec(&m->nr_tables[level - 1]);
	atomic_long_dec(&morsel_stat_tables);
}

/*
 * Let go of the tree without freeing it: undo morsel_adopt_tree.  The
 * morsel is left empty, its counts at zero.  A pool reader's morsel does
 * this at its last close (pm_share.c), after which the publisher may free
 * the tree.
 */
void morsel_disown_tree(struct morsel *m)
{
	int level;

	morsel_memerr_del(m);
	disown(m, READ_ONCE(*m->rootp) & ~MPM_ROOT_ORDER_MASK, m->order);

	atomic_long_sub(atomic_long_xchg(&m->nr_pages, 0), &morsel_stat_pages);
	atomic_long_sub(atomic_long_xchg(&m->nr_huge, 0), &morsel_stat_huge);
	atomic_long_sub(atomic_long_xchg(&m->nr_huge1g, 0), &morsel_stat_huge1g);
	for (level = 0; level < MORSEL_TABLE_LEVELS; level++)
		atomic_long_sub(atomic_long_xchg(&m->nr_tables[level], 0),
				&morsel_stat_tables);
}

/*
 * Free the morsel but not its tree: a persistent morsel whose inode keeps
 * a name when the instance is unmounted.
 */
void morsel_forget(struct morsel *m)
{
	morsel_disown_tree(m);
	mutex_destroy(&m->lock);
	kfree(m);
	atomic_long_dec(&morsel_stat_morsels);
}

int morsel_order_for_size(loff_t size)
{
	unsigned int order;

	for (order = 0; order <= MORSEL_MAX_ORDER; order++)
		if (size <= morsel_extent(order))
			return order;
	return -EFBIG;
}
