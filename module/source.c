// SPDX-License-Identifier: GPL-2.0
/*
 * The RAM source of tables and data pages (source.h), and the batch that
 * evicted pages of any source wait in for their TLB flush.
 *
 * Tables and data pages come from the page allocator, charged to the
 * memory cgroup of the allocating task (__GFP_ACCOUNT, as shmem does; the
 * charge stays with the page).  Data pages and 2 MiB blocks go where the
 * file's or the instance's placement policy says (mpol.c); tables, on
 * the allocating CPU's node.  The size= limit is charged by the caller
 * (tree.c) before it asks, not here.
 *
 * Locking: none of its own (mpol.c keeps the policies alive).  The page
 * allocator and call_rcu are safe from any context that may sleep; a batch
 * belongs to one evicting caller, which holds m->lock (tree.c).  A table
 * that was ever published is freed only after an RCU grace period:
 * lockless walkers (GUP-fast, KVM's level lookup) may still be in it
 * (tree.c, top of file).
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <asm/pgalloc.h>

#include "morsel.h"

#define DATA_GFP	(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT)

static struct ptdesc *ram_table_alloc(void *priv, bool held)
{
	return pagetable_alloc(GFP_KERNEL_ACCOUNT | __GFP_ZERO, 0);
}

static void ram_table_free_rcu(struct rcu_head *head)
{
	pagetable_free(container_of(head, struct ptdesc, pt_rcu_head));
}

static void ram_table_free(void *priv, struct ptdesc *pt, bool published)
{
	if (published)
		call_rcu(&pt->pt_rcu_head, ram_table_free_rcu);
	else
		pagetable_free(pt);
}

static struct page *ram_page_alloc(void *priv, const struct morsel_place *pl,
				   bool held)
{
	return morsel_mpol_alloc(priv, pl, DATA_GFP, 0);
}

/*
 * One bulk call, topped up page by page: the bulk allocator may return
 * fewer (always one with memcg accounting or page_owner), and none where
 * the policy spreads pages over nodes (mpol.c).
 */
static unsigned int ram_pages_gfp(void *priv, const struct morsel_place *pl,
				  gfp_t gfp, unsigned int nr,
				  struct page **pages)
{
	unsigned int got;

	memset(pages, 0, nr * sizeof(*pages));
	got = nr ? morsel_mpol_alloc_bulk(priv, pl, gfp, nr, pages) : 0;
	for (; got < nr; got++) {
		pages[got] = morsel_mpol_alloc(priv, pl, gfp, 0);
		if (!pages[got])
			break;
	}
	return got;
}

static unsigned int ram_pages_alloc(void *priv, const struct morsel_place *pl,
				    unsigned int nr, unsigned int held,
				    struct page **pages)
{
	return ram_pages_gfp(priv, pl, DATA_GFP, nr, pages);
}

/*
 * Not zeroed: MORSEL_IOC_FILL overwrites every byte before publishing.  A
 * whole PTE table's worth comes as one order-9 block split into 512 pages
 * where one can be had without effort (as ram_huge_alloc): one allocation
 * and one memcg charge instead of 512 (with __GFP_ACCOUNT the bulk
 * allocator gives one page per call); else page by page.
 */
static unsigned int ram_pages_alloc_raw(void *priv,
					const struct morsel_place *pl,
					unsigned int nr, struct page **pages)
{
	const unsigned int order = PMD_SHIFT - PAGE_SHIFT;
	gfp_t gfp = DATA_GFP & ~__GFP_ZERO;
	struct page *block;
	unsigned int i;

	if (nr == 1U << order) {
		block = morsel_mpol_alloc(priv, pl,
					  gfp | __GFP_NORETRY | __GFP_NOWARN,
					  order);
		if (block) {
			split_page(block, order);
			for (i = 0; i < nr; i++)
				pages[i] = block + i;
			return nr;
		}
	}
	return ram_pages_gfp(priv, pl, gfp, nr, pages);
}

/*
 * A 2 MiB block: one order-9 block, split into 512 pages at once
 * (split_page also splits the memcg charge): a 2 MiB leaf is 512 ordinary
 * pages that happen to be contiguous, so a punch inside it frees exactly
 * what it punches (tree.c).  Without reclaim or compaction beyond a light
 * attempt, as THP's defrag default ("madvise") does for faults that did
 * not ask for it: the caller falls back to 4 KiB pages and counts that.
 * A 1 GiB block comes from the instance's reserve (pool.c), uncharged.
 */
static struct page *ram_huge_alloc(void *priv, const struct morsel_place *pl,
				   int level, unsigned long held)
{
	struct morsel_ram *r = priv;
	struct page *page;

	if (level == 2)
		return morsel_pool_get(r->pool);
	page = morsel_mpol_alloc(r, pl, DATA_GFP | __GFP_NORETRY | __GFP_NOWARN,
				 PMD_SHIFT - PAGE_SHIFT);
	if (page)
		split_page(page, PMD_SHIFT - PAGE_SHIFT);
	return page;
}

static void ram_page_free(void *priv, struct page *page);

/* A whole 1 GiB leaf's block may go back to the reserve. */
static void ram_huge_free(void *priv, struct page *page, int level)
{
	unsigned long i;

	if (level == 2) {
		morsel_pool_put(((struct morsel_ram *)priv)->pool, page);
		return;
	}
	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		ram_page_free(priv, page + i);
}

static void ram_huge_split(void *priv, int level)
{
	if (level == 2)
		morsel_pool_split(((struct morsel_ram *)priv)->pool);
}

/* The tree's reference goes; a GUP pin keeps the page alive. */
static void ram_page_free(void *priv, struct page *page)
{
	put_page(page);
}

static const struct morsel_source_ops ram_ops = {
	.table_alloc = ram_table_alloc,
	.table_free = ram_table_free,
	.page_alloc = ram_page_alloc,
	.pages_alloc = ram_pages_alloc,
	.pages_alloc_raw = ram_pages_alloc_raw,
	.huge_alloc = ram_huge_alloc,
	.huge_free = ram_huge_free,
	.huge_split = ram_huge_split,
	.page_free = ram_page_free,
};

/* 1 GiB leaves only once the reserve is set (fs.c: huge1g=). */
void morsel_ram_source_init(struct morsel_source *s, struct morsel_ram *r)
{
	*s = (struct morsel_source) {
		.ops = &ram_ops,
		.priv = r,
		.full_errno = -ENOMEM,
		.huge = BIT(1),
	};
}

void morsel_batch_init(const struct morsel_source *s, struct morsel_batch *b)
{
	INIT_LIST_HEAD(&b->list);
	b->nr = 0;
	b->cap = s->batch;
	b->pages = b->cap ? kmalloc_array(b->cap, sizeof(*b->pages),
					  GFP_KERNEL | __GFP_NOFAIL) : NULL;
}

void morsel_batch_fini(struct morsel_batch *b)
{
	kfree(b->pages);
}

/* The caller made room (morsel_batch_room) for a batch with a limit. */
void morsel_batch_add(struct morsel_batch *b, struct page *page)
{
	if (b->cap)
		b->pages[b->nr] = page;
	else
		list_add(&page->lru, &b->list);
	b->nr++;
}

/* The next page to free, taken out of @b; NULL when it is empty. */
struct page *morsel_batch_next(struct morsel_batch *b)
{
	struct page *page;

	if (!b->nr)
		return NULL;
	b->nr--;
	if (b->cap)
		return b->pages[b->nr];
	page = list_first_entry(&b->list, struct page, lru);
	list_del(&page->lru);
	return page;
}
