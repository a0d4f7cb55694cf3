// SPDX-License-Identifier: GPL-2.0
/*
 * treearray.c: building arrays as trees of 32 KiB blocks from a pool, and
 * the iterator's refill (treearray.h says what they are).  No locking:
 * a tree and its pool belong to one thread.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "treearray.h"

int ta_pool_init(struct ta_pool *p, size_t size, int huge)
{
	size_t align = 2u << 20;
	char *m;

	/* 2 MiB aligned, so that every huge page can be one. */
	m = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -errno;
	p->base = (char *)(((uintptr_t)m + align - 1) & ~(uintptr_t)(align - 1));
	if (p->base > m)
		munmap(m, p->base - m);
	munmap(p->base + size, m + align - p->base);
	p->size = size;
	p->used = 0;
	if (madvise(p->base, size, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		return -errno;
	return 0;
}

void ta_pool_fini(struct ta_pool *p)
{
	munmap(p->base, p->size);
	p->base = NULL;
}

void *ta_pool_block(struct ta_pool *p)
{
	void *b;

	if (p->used + TA_BLOCK > p->size)
		return NULL;
	b = p->base + p->used;	/* fresh anonymous memory: zero */
	p->used += TA_BLOCK;
	return b;
}

static unsigned int depth_for(size_t leaves)
{
	unsigned int d = 1;
	size_t cover = 1;

	while (cover < leaves) {
		cover *= TA_FANOUT;
		d++;
	}
	return d;
}

size_t ta_blocks(size_t n, size_t elem)
{
	size_t per = TA_BLOCK / elem, nodes = (n + per - 1) / per, total = 0;

	if (!nodes)
		nodes = 1;
	while (nodes > 1) {
		total += nodes;
		nodes = (nodes + TA_FANOUT - 1) / TA_FANOUT;
	}
	return total + 1;
}

/* Fill the subtree of @depth levels at @node with @leaves leaves. */
static int build(void **node, unsigned int depth, size_t leaves,
		 struct ta_pool *p)
{
	size_t span = 1, i;
	unsigned int k;

	for (k = 2; k < depth; k++)
		span *= TA_FANOUT;
	for (i = 0; i * span < leaves; i++) {
		size_t here = leaves - i * span < span ? leaves - i * span : span;

		node[i] = ta_pool_block(p);
		if (!node[i])
			return -ENOMEM;
		if (depth > 2 && build(node[i], depth - 1, here, p))
			return -ENOMEM;
	}
	return 0;
}

int ta_init(struct treearray *t, size_t n, size_t elem, struct ta_pool *p)
{
	size_t per = TA_BLOCK / elem, leaves = (n + per - 1) / per;

	if (!elem || TA_BLOCK % elem || (elem & (elem - 1)))
		return -EINVAL;
	t->n = n;
	t->elem = elem;
	t->shift = __builtin_ctzl(per);
	t->depth = depth_for(leaves ? leaves : 1);
	t->root = ta_pool_block(p);
	if (!t->root)
		return -ENOMEM;
	return t->depth > 1 ? build(t->root, t->depth, leaves, p) : 0;
}

void ta_iter_init(struct ta_iter *it, const struct treearray *t, size_t start,
		  size_t stride)
{
	it->t = t;
	it->idx = start;
	it->stride = stride ? stride : 1;
	it->next = (char *)1;	/* past last: the first next() fetches */
	it->last = NULL;
}
