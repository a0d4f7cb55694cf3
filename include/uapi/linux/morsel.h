/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * morselfs: explicit virtual-memory objects ("morsels").
 *
 * Every regular file of a morselfs mount is a morsel: a naturally aligned
 * page-table subtree of order N covering 4 KiB * 512^N bytes (the extent),
 * populated sparsely with 4 KiB pages.  The order follows the file size: it
 * is the smallest N whose extent is >= st_size.
 */
#ifndef _UAPI_LINUX_MORSEL_H
#define _UAPI_LINUX_MORSEL_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define MORSELFS_MAGIC		0x6d6f7273	/* "mors" */

#define MORSEL_MAX_ORDER	4
/* Levels of page tables a morsel can own: PTE, PMD, PUD and P4D tables. */
#define MORSEL_TABLE_LEVELS	4

/**
 * struct morsel_stat - argument of MORSEL_IOC_STAT
 * @flags:    in: must be 0.
 * @order:    out: current order (0..MORSEL_MAX_ORDER).
 * @extent:   out: bytes covered by the order, 4096 << (9 * @order).
 * @size:     out: file size (st_size).
 * @pages:    out: populated 4 KiB data pages.
 * @tables:   out: page-table pages per level; [0] PTE tables, [1] PMD
 *            tables, [2] PUD tables, [3] P4D tables.
 * @mappings: out: number of VMAs that currently map the morsel.
 * @reserved: in: must be 0; out: 0.
 */
struct morsel_stat {
	__u64 flags;
	__u64 order;
	__u64 extent;
	__u64 size;
	__u64 pages;
	__u64 tables[MORSEL_TABLE_LEVELS];
	__u64 mappings;
	__u64 reserved[8];
};

#define MORSEL_IOC_MAGIC	0xB9
#define MORSEL_IOC_STAT		_IOWR(MORSEL_IOC_MAGIC, 0x01, struct morsel_stat)

#endif /* _UAPI_LINUX_MORSEL_H */
