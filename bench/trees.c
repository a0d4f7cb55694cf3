// SPDX-License-Identifier: GPL-2.0
/*
 * bench/trees: seed 004's measurements on the host's own CPU (no VM: real
 * address translation, on a host that is itself a virtual machine with
 * nested paging).  Arrays as trees of 32 KiB blocks (treearray/) on
 * transparent huge pages stand in for memory without translation, as in
 * the seed; contiguous arrays on 4 KiB pages are virtual memory as usual,
 * and on THP the kernel's own remedy.  csv lines for bench/report:
 *
 * - trees-scan: Table 2.  Linear and strided (every 1024th 4-byte
 *   element, 4 KiB apart) scans, naive (one walk from the root per
 *   element) and with the iterator, over 4 KiB .. 4 GiB; ns per access
 *   for array-4k, array-thp, tree-thp (naive, iter).
 * - trees-gups: Figure 4, left.  2^24 random updates; array-4k,
 *   array-thp, tree-thp.
 * - trees-rbtree: Figure 4, right.  glibc's tsearch (a red-black tree)
 *   with 2^23 random keys inserted, then walked in order, the same code on
 *   malloc's heap on 4 KiB pages and on THP (glibc.malloc.hugetlb=1).
 * - split-stack: recursive Fibonacci and this program's GUPS, built with
 *   and without gcc -fsplit-stack (bench/fib, bench/fib-split,
 *   bench/trees-split); ms.
 *
 * usage: trees [--quick] | trees --rbtree N | trees --gups-only
 */
#define _GNU_SOURCE
#include <errno.h>
#include <search.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "treearray.h"

#define KiB	(1ULL << 10)
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)
#define STRIDE	1024

static int quick;
static volatile uint64_t sink;

static uint64_t rng = 88172645463325252ULL;

static inline uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A contiguous array of @bytes, 2 MiB aligned, on THP or not, touched. */
static int32_t *array_new(size_t bytes, int huge)
{
	struct ta_pool p;

	if (ta_pool_init(&p, bytes < 2 * MiB ? 2 * MiB : bytes, huge))
		die("mmap array", errno);
	memset(p.base, 1, bytes);
	return (int32_t *)p.base;
}

static void array_free(int32_t *a, size_t bytes)
{
	munmap(a, bytes < 2 * MiB ? 2 * MiB : bytes);
}

/* Element values: every element 1, so a scan's sum is its length. */
static void tree_fill(struct treearray *t)
{
	struct ta_iter it;
	int32_t *e;

	ta_iter_init(&it, t, 0, 1);
	while ((e = ta_iter_next(&it)))
		*e = 1;
}

/* A tree of @n 4-byte elements on a THP pool, every element 1. */
static void tree_new(struct treearray *t, struct ta_pool *pool, size_t n)
{
	size_t bytes = ta_blocks(n, 4) * TA_BLOCK + 4 * MiB;

	if (ta_pool_init(pool, bytes & ~(2 * MiB - 1), 1))
		die("tree pool", errno);
	if (ta_init(t, n, 4, pool))
		die("ta_init", ENOMEM);
	tree_fill(t);
}

static double per_access(double ms, uint64_t n)
{
	return ms * 1e6 / n;
}

static void scans(size_t bytes, int iter)
{
	size_t n = bytes / 4, i, passes, lin_total = quick ? 1 << 24 : 1 << 28;
	size_t str_total = quick ? 1 << 18 : 1 << 24, k, acc;
	struct treearray t;
	struct ta_pool pool;
	int huge;
	double t0;

	for (huge = 0; huge <= 1; huge++) {
		int32_t *a = array_new(bytes, huge);
		const char *v = huge ? "array-thp" : "array-4k";
		uint64_t sum = 0;

		passes = lin_total / n ? lin_total / n : 1;
		t0 = now_ms();
		for (k = 0; k < passes; k++)
			for (i = 0; i < n; i++)
				sum += a[i];
		emit("trees-scan", v, bytes, iter, "linear_ns",
		     per_access(now_ms() - t0, passes * n));
		acc = (n + STRIDE - 1) / STRIDE;
		passes = str_total / acc ? str_total / acc : 1;
		t0 = now_ms();
		for (k = 0; k < passes; k++)
			for (i = 0; i < n; i += STRIDE)
				sum += a[i];
		emit("trees-scan", v, bytes, iter, "strided_ns",
		     per_access(now_ms() - t0, passes * acc));
		sink = sum;
		array_free(a, bytes);
	}
	tree_new(&t, &pool, n);
	{
		uint64_t sum = 0;
		struct ta_iter it;
		int32_t *e;

		passes = lin_total / n ? lin_total / n : 1;
		t0 = now_ms();
		for (k = 0; k < passes; k++)
			for (i = 0; i < n; i++)
				sum += *(int32_t *)ta_at(&t, i);
		emit("trees-scan", "tree-thp-naive", bytes, iter, "linear_ns",
		     per_access(now_ms() - t0, passes * n));
		t0 = now_ms();
		for (k = 0; k < passes; k++) {
			ta_iter_init(&it, &t, 0, 1);
			while ((e = ta_iter_next(&it)))
				sum += *e;
		}
		emit("trees-scan", "tree-thp-iter", bytes, iter, "linear_ns",
		     per_access(now_ms() - t0, passes * n));
		acc = (n + STRIDE - 1) / STRIDE;
		passes = str_total / acc ? str_total / acc : 1;
		t0 = now_ms();
		for (k = 0; k < passes; k++)
			for (i = 0; i < n; i += STRIDE)
				sum += *(int32_t *)ta_at(&t, i);
		emit("trees-scan", "tree-thp-naive", bytes, iter, "strided_ns",
		     per_access(now_ms() - t0, passes * acc));
		t0 = now_ms();
		for (k = 0; k < passes; k++) {
			ta_iter_init(&it, &t, 0, STRIDE);
			while ((e = ta_iter_next(&it)))
				sum += *e;
		}
		emit("trees-scan", "tree-thp-iter", bytes, iter, "strided_ns",
		     per_access(now_ms() - t0, passes * acc));
		sink = sum;
	}
	ta_pool_fini(&pool);
}

static void gups(size_t bytes, int iter, const char *prefix)
{
	size_t n = bytes / 4, updates = quick ? 1 << 20 : 1 << 24, k;
	char v[64];
	struct treearray t;
	struct ta_pool pool;
	int huge;
	double t0;

	for (huge = 0; huge <= 1; huge++) {
		int32_t *a = array_new(bytes, huge);

		t0 = now_ms();
		for (k = 0; k < updates; k++)
			a[xorshift() % n] ^= (int32_t)k;
		snprintf(v, sizeof(v), "%s%s", prefix, huge ? "array-thp" : "array-4k");
		emit("trees-gups", v, bytes, iter, "ns",
		     per_access(now_ms() - t0, updates));
		array_free(a, bytes);
	}
	tree_new(&t, &pool, n);
	t0 = now_ms();
	for (k = 0; k < updates; k++)
		*(int32_t *)ta_at(&t, xorshift() % n) ^= (int32_t)k;
	snprintf(v, sizeof(v), "%stree-thp", prefix);
	emit("trees-gups", v, bytes, iter, "ns", per_access(now_ms() - t0, updates));
	ta_pool_fini(&pool);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t walked;

static void walk(const void *node, VISIT which, int depth)
{
	(void)depth;
	if (which == postorder || which == leaf)
		walked += **(const uint64_t *const *)node;
}

/* In a child: tsearch @n keys, then walk; prints insert and walk ms. */
static int rbtree(size_t n)
{
	uint64_t *keys = malloc(n * sizeof(*keys));
	void *root = NULL;
	double t0, t1;
	size_t i;

	if (!keys)
		die("malloc", ENOMEM);
	for (i = 0; i < n; i++)
		keys[i] = xorshift();
	t0 = now_ms();
	for (i = 0; i < n; i++)
		if (!tsearch(&keys[i], &root, cmp))
			die("tsearch", ENOMEM);
	t1 = now_ms();
	twalk(root, walk);
	printf("%f %f\n", t1 - t0, now_ms() - t1);
	return 0;
}

static void rbtree_run(int iter)
{
	static const char *const variant[] = { "heap-4k", "heap-thp" };
	size_t n = quick ? 1 << 18 : 1 << 23;
	int v;

	for (v = 0; v < 2; v++) {
		char cmd[256];
		double ins, wlk;
		FILE *f;

		snprintf(cmd, sizeof(cmd), "GLIBC_TUNABLES=glibc.malloc.hugetlb=%d "
			 "/proc/%d/exe --rbtree %zu", v, getpid(), n);
		f = popen(cmd, "r");
		if (!f || fscanf(f, "%lf %lf", &ins, &wlk) != 2)
			die("rbtree child", EIO);
		pclose(f);
		emit("trees-rbtree", variant[v], n, iter, "insert_ms", ins);
		emit("trees-rbtree", variant[v], n, iter, "walk_ms", wlk);
	}
}

/* Recursive Fibonacci, built with and without -fsplit-stack. */
static void split_stack(int iter)
{
	static const char *const prog[][2] = {
		{ "bench/fib", "fib" }, { "bench/fib-split", "fib" },
		{ "bench/trees --gups-only", "gups" },
		{ "bench/trees-split --gups-only", "gups" },
	};
	int i;

	for (i = 0; i < 4; i++) {
		double t0 = now_ms();

		if (system(prog[i][0]))
			die(prog[i][0], EIO);
		emit("split-stack", i % 2 ? "split" : "plain", 0, iter, prog[i][1],
		     now_ms() - t0);
	}
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 4 * KiB, 4 * MiB, 1 * GiB, 4 * GiB };
	int it, iters, s, nsizes;

	if (argc > 2 && !strcmp(argv[1], "--rbtree"))
		return rbtree(strtoull(argv[2], NULL, 0));
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--gups-only")) {
		size_t n = 64 * MiB / 4, k;
		int32_t *a = array_new(64 * MiB, 0);

		for (k = 0; k < (1 << 24); k++)
			a[xorshift() % n] ^= (int32_t)k;
		array_free(a, 64 * MiB);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--quick"))
		quick = 1;
	else if (argc > 1)
		die("usage: trees [--quick]", EINVAL);
	iters = quick ? 1 : 3;
	nsizes = quick ? 2 : 4;
	for (it = 0; it < iters; it++) {
		for (s = 0; s < nsizes; s++)
			scans(sizes[s], it);
		gups(quick ? 64 * MiB : 1 * GiB, it, "");
		if (!quick)
			gups(4 * GiB, it, "");
		rbtree_run(it);
		split_stack(it);
	}
	return 0;
}
