/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a morsel's memory comes from (source.c): its tables and data pages,
 * how they go back, and what the medium needs after a store.  One source
 * per instance (struct morsel_sb's @src): RAM (the page allocator) or a
 * persistent device (pm.c).  tree.c, size.c and file.c get and free memory
 * only through the src_* calls below, never by asking which medium it is.
 */
#ifndef MORSEL_SOURCE_H
#define MORSEL_SOURCE_H

#include <linux/bits.h>
#include <linux/compiler.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/types.h>

struct morsel_policy;

/**
 * struct morsel_place - where a file wants its data pages (mpol.c)
 * @own: the file's own policy (MORSEL_IOC_SET_MPOL), or NULL for the
 *       instance's.  A medium that places nothing ignores it.
 */
struct morsel_place {
	struct morsel_policy __rcu *own;
};

/**
 * struct morsel_source_ops - what a medium does (priv: the source's @priv)
 * @table_alloc:  a zeroed page for a table, or NULL when none is free;
 *                @held: for a reserved range (size.c), from what @hold held.
 * @table_free:   a table whose destructor ran; one that was @published may
 *                still be under a lockless walker (tree.c) and goes only
 *                after an RCU grace period.
 * @table_forget: a table that stays on the medium loses what the kernel
 *                kept in its struct page (split lock).  NULL: nothing.
 * @page_alloc:   a zeroed data page for a file that wants it where @pl
 *                says, or NULL; @held as for @table_alloc.
 * @pages_alloc:  up to @nr zeroed data pages into @pages, placed by @pl,
 *                the first @held of them from what @hold held.  Return:
 *                how many.
 * @pages_alloc_raw: as @pages_alloc, but the pages are not zeroed: for a
 *                caller that overwrites every byte before anyone can see
 *                them (MORSEL_IOC_FILL).  NULL: the medium gives zeroed
 *                pages only (a device's free pages hold old files).
 * @huge_alloc:   the zeroed data pages of one leaf of @level (1: 512 pages,
 *                2 MiB; 2: 262144 pages, 1 GiB), physically contiguous
 *                and aligned to their size, placed by @pl (a 2 MiB
 *                block; a 1 GiB one comes from a reserve), each a page
 *                of its own (own
 *                reference count, freed one by one with @page_free); the
 *                first, or NULL when none is free (the caller falls back
 *                to smaller leaves).  @held of them stand for pages @hold
 *                held, which the medium gives back instead.  Only called
 *                for a level in the source's @huge.
 * @huge_free:    the pages of a leaf of @level whose entry is gone (and
 *                flushed) as a whole, so the medium may keep the block
 *                together.  NULL: each goes to @page_free.
 * @huge_split:   a leaf of @level over a block of the medium was split:
 *                its pages will go back one by one.  NULL: nothing to do.
 * @huge_ready:   the medium is about to hold its first 2 MiB leaf (a
 *                device's format says it may).  NULL: nothing to do.
 * @page_free:    a data page whose leaf is gone and flushed (or was never
 *                published); a GUP pin may still hold it.
 * @page_failed:  a data page failed and is taken out of its file: record
 *                it before its leaf changes.  NULL: nothing to record.
 * @hold:         set @nr pages aside for a reservation.  NULL: nothing to
 *                set aside (the size limit alone reserves).
 * @unhold:       give back @nr that @hold set aside.
 * @wrote:        data was stored at [@addr, @addr + @len) by a helper of
 *                ours (write, zeroing): make it durable.  NULL: volatile.
 * @writeback:    write back a data page that mappings may have stored to
 *                (fsync).  NULL: nothing to write back.
 * @flushes:      whether fsync must write back at all.  NULL: never.
 */
struct morsel_source_ops {
	struct ptdesc *(*table_alloc)(void *priv, bool held);
	void (*table_free)(void *priv, struct ptdesc *pt, bool published);
	void (*table_forget)(struct ptdesc *pt);
	struct page *(*page_alloc)(void *priv, const struct morsel_place *pl,
				   bool held);
	unsigned int (*pages_alloc)(void *priv, const struct morsel_place *pl,
				    unsigned int nr, unsigned int held,
				    struct page **pages);
	unsigned int (*pages_alloc_raw)(void *priv,
					const struct morsel_place *pl,
					unsigned int nr, struct page **pages);
	struct page *(*huge_alloc)(void *priv, const struct morsel_place *pl,
				   int level, unsigned long held);
	void (*huge_free)(void *priv, struct page *page, int level);
	void (*huge_split)(void *priv, int level);
	void (*huge_ready)(void *priv);
	void (*page_free)(void *priv, struct page *page);
	int (*page_failed)(void *priv, struct page *page);
	int (*hold)(void *priv, unsigned long nr);
	void (*unhold)(void *priv, unsigned long nr);
	void (*wrote)(void *priv, void *addr, size_t len);
	void (*writeback)(void *priv, void *addr);
	bool (*flushes)(void *priv);
};

/**
 * struct morsel_source - one instance's source of memory
 * @ops:          the medium's operations.
 * @priv:         their context (pm.c: the device).
 * @full_errno:   what running out of it means: -ENOMEM, or -ENOSPC for a
 *                device that is full.
 * @batch:        how many evicted pages may wait for one TLB flush; 0 for
 *                any number (they wait on their lru list).  A device page's
 *                lru words hold its pgmap, so those wait in an array.
 * @root_table:   every order above 0 has a root table, even when empty:
 *                the medium keeps the order in the root word (pm_format.h).
 * @keeps_failed: a failed page stays allocated for good (a device's
 *                bad-page tree); otherwise it is freed once unpinned.
 * @huge:         the leaf levels the medium gives blocks for (@huge_alloc),
 *                as bits: BIT(1) 2 MiB (RAM, and a device whose physical
 *                address is 2 MiB aligned), BIT(2) 1 GiB (RAM with a
 *                huge1g= reserve, pool.c).  Read with READ_ONCE: a remount
 *                changes BIT(2).
 */
struct morsel_source {
	const struct morsel_source_ops *ops;
	void *priv;
	int full_errno;
	unsigned int batch;
	bool root_table;
	bool keeps_failed;
	unsigned int huge;
};

/**
 * struct morsel_ram - the RAM source's context (@priv)
 * @pool: the instance's 1 GiB reserve (struct morsel_pool, pool.c).
 * @mpol: the instance's placement policy (mpol=), or NULL: the allocating
 *        task's own (mpol.c).
 */
struct morsel_ram {
	void *pool;
	struct morsel_policy __rcu *mpol;
};

/* RAM: the page allocator, charged to the allocating task's memcg. */
void morsel_ram_source_init(struct morsel_source *s, struct morsel_ram *r);

static inline struct ptdesc *src_table_alloc(const struct morsel_source *s,
					     bool held)
{
	return s->ops->table_alloc(s->priv, held);
}

static inline void src_table_free(const struct morsel_source *s,
				  struct ptdesc *pt, bool published)
{
	s->ops->table_free(s->priv, pt, published);
}

static inline void src_table_forget(const struct morsel_source *s,
				    struct ptdesc *pt)
{
	if (s->ops->table_forget)
		s->ops->table_forget(pt);
}

static inline struct page *src_page_alloc(const struct morsel_source *s,
					  const struct morsel_place *pl,
					  bool held)
{
	return s->ops->page_alloc(s->priv, pl, held);
}

static inline unsigned int src_pages_alloc(const struct morsel_source *s,
					   const struct morsel_place *pl,
					   unsigned int nr, unsigned int held,
					   struct page **pages)
{
	return s->ops->pages_alloc(s->priv, pl, nr, held, pages);
}

static inline bool src_has_raw(const struct morsel_source *s)
{
	return s->ops->pages_alloc_raw;
}

static inline unsigned int src_pages_alloc_raw(const struct morsel_source *s,
					       const struct morsel_place *pl,
					       unsigned int nr,
					       struct page **pages)
{
	return s->ops->pages_alloc_raw(s->priv, pl, nr, pages);
}

/* Pages under one leaf of @level (0: a 4 KiB page, 1: 2 MiB, 2: 1 GiB). */
#define MORSEL_LEAF_PAGES(level)	(1UL << (9 * (level)))

/* Whether the medium gives blocks for leaves of @level (1 or 2) at all. */
static inline bool src_has_huge(const struct morsel_source *s, int level)
{
	return READ_ONCE(s->huge) & BIT(level);
}

static inline struct page *src_huge_alloc(const struct morsel_source *s,
					  const struct morsel_place *pl,
					  int level, unsigned long held)
{
	return s->ops->huge_alloc(s->priv, pl, level, held);
}

/* A whole leaf's pages, gone from the tree and flushed. */
static inline void src_huge_free(const struct morsel_source *s,
				 struct page *page, int level)
{
	unsigned long i;

	if (s->ops->huge_free) {
		s->ops->huge_free(s->priv, page, level);
		return;
	}
	for (i = 0; i < MORSEL_LEAF_PAGES(level); i++)
		s->ops->page_free(s->priv, page + i);
}

static inline void src_huge_split(const struct morsel_source *s, int level)
{
	if (s->ops->huge_split)
		s->ops->huge_split(s->priv, level);
}

/* Before a 2 MiB leaf is stored into a tree of the medium. */
static inline void src_huge_ready(const struct morsel_source *s)
{
	if (s->ops->huge_ready)
		s->ops->huge_ready(s->priv);
}

static inline void src_page_free(const struct morsel_source *s,
				 struct page *page)
{
	s->ops->page_free(s->priv, page);
}

static inline int src_page_failed(const struct morsel_source *s,
				  struct page *page)
{
	return s->ops->page_failed ? s->ops->page_failed(s->priv, page) : 0;
}

static inline int src_hold(const struct morsel_source *s, unsigned long nr)
{
	return s->ops->hold ? s->ops->hold(s->priv, nr) : 0;
}

static inline void src_unhold(const struct morsel_source *s, unsigned long nr)
{
	if (s->ops->unhold)
		s->ops->unhold(s->priv, nr);
}

static inline void src_wrote(const struct morsel_source *s, void *addr,
			     size_t len)
{
	if (s->ops->wrote)
		s->ops->wrote(s->priv, addr, len);
}

/* Whether fsync has data pages to write back (src_writeback). */
static inline bool src_flushes(const struct morsel_source *s)
{
	return s->ops->flushes && s->ops->flushes(s->priv);
}

static inline void src_writeback(const struct morsel_source *s, void *addr)
{
	if (s->ops->writeback)
		s->ops->writeback(s->priv, addr);
}

/*
 * Evicted pages waiting for the TLB flush that must come before they are
 * freed (tree.c): on their lru list, or for a source with a @batch limit
 * in an array of that many.  Not locked: one evicting caller owns it.
 */
struct morsel_batch {
	struct list_head list;
	struct page **pages;
	unsigned int nr;
	unsigned int cap;
};

void morsel_batch_init(const struct morsel_source *s, struct morsel_batch *b);
void morsel_batch_fini(struct morsel_batch *b);

/* Whether @b can take @nr more pages before it must be flushed. */
static inline bool morsel_batch_room(const struct morsel_batch *b,
				     unsigned int nr)
{
	return !b->cap || b->nr + nr <= b->cap;
}

static inline bool morsel_batch_empty(const struct morsel_batch *b)
{
	return !b->nr;
}

void morsel_batch_add(struct morsel_batch *b, struct page *page);
struct page *morsel_batch_next(struct morsel_batch *b);

#endif /* MORSEL_SOURCE_H */
