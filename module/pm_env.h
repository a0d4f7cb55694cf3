/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What pm_check.c needs from where it is built: the kernel (the module) or
 * user space (`morsel fsck`, the crash tests).  Nothing else differs.
 */
#ifndef MORSEL_PM_ENV_H
#define MORSEL_PM_ENV_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/stat.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/vmalloc.h>

#define mpm_zalloc(n)		kvzalloc(n, GFP_KERNEL)
/* No INT_MAX cap (kvmalloc WARNs above it): arrays per device page. */
#define mpm_zalloc_large(n)	vzalloc(n)
#define mpm_free(p)		kvfree(p)
#define mpm_sort(b, n, s, c)	sort(b, n, s, c, NULL)
#define mpm_load(p)		READ_ONCE(*(p))
#define mpm_popcount(x)		hweight64(x)
#define mpm_cond_resched()	cond_resched()
#else
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <linux/types.h>

#define mpm_zalloc(n)		calloc(1, n)
#define mpm_zalloc_large(n)	calloc(1, n)
#define mpm_free(p)		free(p)
#define mpm_sort(b, n, s, c)	qsort(b, n, s, c)
#define mpm_load(p)		__atomic_load_n((__u64 *)(p), __ATOMIC_RELAXED)
#define mpm_popcount(x)		__builtin_popcountll(x)
#define mpm_cond_resched()	do { } while (0)
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif
#endif

#endif /* MORSEL_PM_ENV_H */
