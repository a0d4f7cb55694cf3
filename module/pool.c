// SPDX-License-Identifier: GPL-2.0
/*
 * The 1 GiB reserve of a volatile instance (huge1g=N): blocks of 262144
 * contiguous, 1 GiB aligned pages taken from the page allocator when the
 * instance is mounted (or remounted with a larger N), for 1 GiB leaves
 * (tree.c).  The buddy allocator has no order that large, and at runtime
 * a free aligned gigabyte is rare (docs/design.md: none in our usual
 * 3 GiB guest), so the blocks are taken once, by migrating what is in
 * the way (alloc_contig_range, as hugetlb's gigantic pages and CMA do),
 * and kept until unmount.
 *
 * A block is 262144 order-0 pages with a reference each (what
 * alloc_contig_range gives without __GFP_COMP), so a 1 GiB leaf is split
 * like a 2 MiB one and a pin holds one page.  A block whose leaf goes as
 * a whole comes back to the reserve if no page of it is held by anyone
 * else; a block whose leaf was split, or that had a pinned page, leaves
 * the reserve for good: its pages go back to the page allocator one by
 * one as the file lets go of them.  The reserve then holds less than N
 * until a remount asks for N again.  Blocks are zeroed when they are
 * handed out, outside the lock.
 *
 * The blocks are not charged to a memory cgroup (no charge function is
 * exported; hugetlb's pages are outside the memory controller too); they
 * count against size= when a leaf uses them, as any page does.
 *
 * Locking: @lock (a spinlock) guards the free list and the counts; it is
 * never held while a block is taken, zeroed or given back, which sleep.
 * Resizing is serialised by the super block's s_umount (mount, remount,
 * unmount).
 */
#include <linux/gfp.h>
#include <linux/highmem.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/page_ref.h>
#include <linux/sched.h>

#include "morsel.h"

#define BLOCK_PAGES	(1UL << (PUD_SHIFT - PAGE_SHIFT))

atomic_long_t morsel_stat_huge1g_free;

void morsel_pool_init(struct morsel_pool *p)
{
	spin_lock_init(&p->lock);
	INIT_LIST_HEAD(&p->free);
}

#ifdef CONFIG_CONTIG_ALLOC
/*
 * Whether [@pfn, @pfn + BLOCK_PAGES) is online memory of @zone that
 * alloc_contig_range may try to empty (as the allocator's own
 * pfn_range_valid_contig does): nothing reserved, no hugetlb page.
 */
static bool block_may_be_taken(struct zone *zone, unsigned long pfn)
{
	unsigned long i;

	for (i = 0; i < BLOCK_PAGES; i++) {
		struct page *page = pfn_to_online_page(pfn + i);

		if (!page || page_zone(page) != zone || PageReserved(page) ||
		    PageHuge(page))
			return false;
		if (!(i % 4096))
			cond_resched();
	}
	return true;
}

/* One block from anywhere, highest zones first; NULL if none. */
static struct page *block_take(void)
{
	int nid, z;

	for_each_online_node(nid) {
		pg_data_t *pgdat = NODE_DATA(nid);

		for (z = MAX_NR_ZONES - 1; z >= 0; z--) {
			struct zone *zone = &pgdat->node_zones[z];
			unsigned long pfn, end = zone_end_pfn(zone);

			if (zone_is_zone_device(zone) || !populated_zone(zone))
				continue;
			for (pfn = ALIGN(zone->zone_start_pfn, BLOCK_PAGES);
			     pfn + BLOCK_PAGES <= end; pfn += BLOCK_PAGES) {
				if (fatal_signal_pending(current))
					return NULL;
				if (!block_may_be_taken(zone, pfn))
					continue;
				if (!alloc_contig_range(pfn, pfn + BLOCK_PAGES,
							MIGRATE_MOVABLE,
							GFP_KERNEL | __GFP_NOWARN))
					return pfn_to_page(pfn);
			}
		}
	}
	return NULL;
}

#else
static struct page *block_take(void)
{
	return NULL;
}
#endif

static void block_give_back(struct page *first)
{
	free_contig_range(page_to_pfn(first), BLOCK_PAGES);
}

/* Take free blocks off the list until at most @keep blocks are held. */
static void pool_shrink(struct morsel_pool *p, unsigned long keep)
{
	for (;;) {
		struct page *first = NULL;

		spin_lock(&p->lock);
		if (p->nr_free && p->nr_free + p->nr_used > keep) {
			first = list_first_entry(&p->free, struct page, lru);
			list_del(&first->lru);
			p->nr_free--;
			atomic_long_dec(&morsel_stat_huge1g_free);
		}
		spin_unlock(&p->lock);
		if (!first)
			return;
		block_give_back(first);
		cond_resched();
	}
}

/**
 * morsel_pool_resize - make the reserve hold @want blocks
 *
 * Takes blocks until the reserve (free blocks and those in leaves) holds
 * @want, or gives free blocks back until it holds no more than @want
 * (blocks in leaves come back as their leaves go).  Return: 0, or -ENOMEM
 * when fewer blocks could be had (the reserve is then as before the call),
 * -EINTR (a fatal signal; likewise) or -EOPNOTSUPP (a kernel without
 * CONFIG_CONTIG_ALLOC, which has no way to take them).
 */
int morsel_pool_resize(struct morsel_pool *p, unsigned long want)
{
	unsigned long before, have;
	struct page *first;
	int err = -ENOMEM;
	LIST_HEAD(taken);

	spin_lock(&p->lock);
	before = p->nr_free + p->nr_used;
	WRITE_ONCE(p->want, want);
	spin_unlock(&p->lock);
	if (want <= before) {
		pool_shrink(p, want);
		return 0;
	}
	/* More than all of RAM: nothing is taken (nor migrated) in vain. */
	if (want - before > totalram_pages() / BLOCK_PAGES) {
		WRITE_ONCE(p->want, before);
		return -ENOMEM;
	}
	for (have = before; have < want; have++) {
		first = block_take();
		if (!first)
			break;
		list_add(&first->lru, &taken);
	}
	if (have < want) {
		if (!IS_ENABLED(CONFIG_CONTIG_ALLOC))
			err = -EOPNOTSUPP;
		while (!list_empty(&taken)) {
			first = list_first_entry(&taken, struct page, lru);
			list_del(&first->lru);
			block_give_back(first);
		}
		WRITE_ONCE(p->want, before);
		return fatal_signal_pending(current) ? -EINTR : err;
	}
	spin_lock(&p->lock);
	list_splice(&taken, &p->free);
	p->nr_free += want - before;
	atomic_long_add(want - before, &morsel_stat_huge1g_free);
	spin_unlock(&p->lock);
	return 0;
}

/* Whether a page of the block of @first failed while it was free. */
static bool block_failed(struct page *first)
{
	unsigned long i;

	for (i = 0; i < BLOCK_PAGES; i++)
		if (PageHWPoison(first + i))
			return true;
	return false;
}

/* The pages of a block that leaves the reserve, one by one. */
static void block_release(struct page *first)
{
	unsigned long i;

	for (i = 0; i < BLOCK_PAGES; i++) {
		put_page(first + i);
		if (!(i % 512))
			cond_resched();
	}
}

/**
 * morsel_pool_get - a zeroed block for a 1 GiB leaf, or NULL if none is free
 *
 * A free block with a page that failed meanwhile (memory_failure() found
 * no owner for it) leaves the reserve instead: the failed page stays out
 * of use, the others go back to the page allocator.
 */
struct page *morsel_pool_get(struct morsel_pool *p)
{
	struct page *first;
	unsigned long i;

again:
	first = NULL;
	spin_lock(&p->lock);
	if (p->nr_free) {
		first = list_first_entry(&p->free, struct page, lru);
		list_del(&first->lru);
		p->nr_free--;
		p->nr_used++;
		atomic_long_dec(&morsel_stat_huge1g_free);
	}
	spin_unlock(&p->lock);
	if (!first)
		return NULL;
	INIT_LIST_HEAD(&first->lru);
	if (block_failed(first)) {
		morsel_pool_split(p);
		block_release(first);
		goto again;
	}
	for (i = 0; i < BLOCK_PAGES; i++) {
		clear_highpage(first + i);
		if (!(i % 512))
			cond_resched();
	}
	return first;
}

/**
 * morsel_pool_split - the block of @first left its leaf other than whole
 *
 * A split (tree.c): its pages are ordinary pages from now on, freed one
 * by one; the reserve no longer counts it.
 */
void morsel_pool_split(struct morsel_pool *p)
{
	spin_lock(&p->lock);
	p->nr_used--;
	spin_unlock(&p->lock);
}

/**
 * morsel_pool_put - a block whose leaf is gone (and flushed) as a whole
 *
 * Back on the free list if the reserve still wants it and no page of it
 * is held by anyone else (a pin, a failed page); otherwise its pages go
 * back to the page allocator, those still held when their holders let go.
 */
void morsel_pool_put(struct morsel_pool *p, struct page *first)
{
	bool whole = true, keep;
	unsigned long i;

	for (i = 0; i < BLOCK_PAGES && whole; i++)
		whole = page_ref_count(first + i) == 1 &&
			!PageHWPoison(first + i);
	spin_lock(&p->lock);
	p->nr_used--;
	keep = whole && p->nr_free + p->nr_used < READ_ONCE(p->want);
	if (keep) {
		list_add(&first->lru, &p->free);
		p->nr_free++;
		atomic_long_inc(&morsel_stat_huge1g_free);
	}
	spin_unlock(&p->lock);
	if (keep)
		return;
	if (whole)
		block_give_back(first);
	else
		block_release(first);
}

/* Unmount: every leaf is gone; the free blocks go back. */
void morsel_pool_destroy(struct morsel_pool *p)
{
	WRITE_ONCE(p->want, 0);
	pool_shrink(p, 0);
}

/* How many blocks are free, for statfs and /proc/mounts. */
unsigned long morsel_pool_free(struct morsel_pool *p)
{
	return READ_ONCE(p->nr_free);
}
