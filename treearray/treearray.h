/* SPDX-License-Identifier: GPL-2.0 */
/*
 * treearray: arrays as trees of fixed-size blocks (seed 004, after
 * Siebert): what a program uses for a large array when memory offers no
 * contiguity beyond one block.  Data lives only in the leaves; interior
 * blocks hold pointers; the depth follows from the length (32 KiB blocks:
 * depth 1 up to 32 KiB, 2 up to 128 MiB, 3 up to 512 GiB of data).
 *
 * A measured comparison for issue 22, not part of libmorsel: blocks come
 * from a pool (an arena on 4 KiB pages or on transparent huge pages, the
 * latter standing in for memory without translation, as in the seed).
 *
 * Not thread-safe: one tree, one user (the benchmark's).
 */
#ifndef TREEARRAY_H
#define TREEARRAY_H

#include <stddef.h>
#include <stdint.h>

#define TA_BLOCK	32768u			/* bytes per block */
#define TA_FANOUT	(TA_BLOCK / sizeof(void *))	/* 4096 */

/* Where blocks come from: a bump arena over one mapping. */
struct ta_pool {
	char *base;
	size_t size, used;
};

/* @huge: back the arena with transparent huge pages (MADV_HUGEPAGE). */
int ta_pool_init(struct ta_pool *p, size_t size, int huge);
void ta_pool_fini(struct ta_pool *p);
void *ta_pool_block(struct ta_pool *p);	/* TA_BLOCK bytes, zeroed; NULL if full */

/* Blocks a tree of @n elements of @elem bytes takes (data and interior). */
size_t ta_blocks(size_t n, size_t elem);

struct treearray {
	unsigned int depth;	/* levels: 1 = the root is the one leaf */
	unsigned int shift;	/* log2 of elements per leaf */
	size_t n, elem;
	void *root;
};

int ta_init(struct treearray *t, size_t n, size_t elem, struct ta_pool *p);

/* The element at @i: one memory access per level (the naive access). */
static inline void *ta_at(const struct treearray *t, size_t i)
{
	size_t leaf = i >> t->shift;
	void *node = t->root;
	unsigned int d;

	for (d = t->depth - 1; d > 0; d--) {
		size_t idx = leaf;
		unsigned int k;

		for (k = 1; k < d; k++)
			idx /= TA_FANOUT;
		node = ((void **)node)[idx % TA_FANOUT];
	}
	return (char *)node + ((i & ((1ul << t->shift) - 1)) * t->elem);
}

/*
 * The iterator (the seed's Figure 2): it keeps a pointer into the current
 * leaf and walks the tree only when it leaves it, every @stride elements.
 */
struct ta_iter {
	const struct treearray *t;
	char *next, *last;	/* in the current leaf; next > last: fetch */
	size_t idx;		/* element index of next */
	size_t stride;		/* in elements */
};

void ta_iter_init(struct ta_iter *it, const struct treearray *t, size_t start,
		  size_t stride);

/*
 * Walk to the leaf of it->idx (the seed's getDataPage).  Inline with
 * ta_iter_next, so that a loop keeps the iterator in registers.
 */
static inline void ta_iter_fetch(struct ta_iter *it)
{
	const struct treearray *t = it->t;
	size_t per = (size_t)1 << t->shift, in = it->idx & (per - 1);
	size_t end = it->idx - in + per;
	char *leaf = (char *)ta_at(t, it->idx) - in * t->elem;

	if (end > t->n)
		end = t->n;
	it->next = leaf + in * t->elem;
	/* the last element of this leaf the stride reaches */
	it->last = it->next + (end - 1 - it->idx) / it->stride * it->stride *
			      t->elem;
}

/* The next element's address; NULL past the end. */
static inline void *ta_iter_next(struct ta_iter *it)
{
	void *p;

	if (it->next > it->last) {
		if (it->idx >= it->t->n)
			return NULL;
		ta_iter_fetch(it);
	}
	p = it->next;
	it->next += it->stride * it->t->elem;
	it->idx += it->stride;
	return p;
}

#endif
