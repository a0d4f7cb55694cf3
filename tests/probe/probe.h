/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Test-only interface of morsel_probe.ko (/dev/morsel_probe): lets the
 * suite look at what only the kernel sees -- raw page-table entries, what
 * follow_pfnmap_start() reports, and the mmu notifier calls a process gets.
 */
#ifndef MORSEL_PROBE_H
#define MORSEL_PROBE_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * PROBE_IOC_ENTRIES: the caller's page-table entries for @addr, top down:
 * [0] PGD, [1] P4D (== PGD entry with 4-level paging), [2] PUD, [3] PMD,
 * [4] PTE; an entry below a missing or leaf one is 0.
 */
struct probe_entries {
	__u64 addr;
	__u64 entry[5];
};

/*
 * PROBE_IOC_FOLLOW_PFNMAP: follow_pfnmap_start() on the caller's VMA at
 * @addr.  @ret: its return value (0 or -errno); @pfn, @writable if 0.
 */
struct probe_pfnmap {
	__u64 addr;
	__s64 ret;
	__u64 pfn;
	__u64 writable;
};

/*
 * PROBE_IOC_NOTIFIER: registers (once per open file) an mmu notifier on
 * the caller's mm and reports what it has seen since: invalidations
 * (range_start calls), the union of their ranges and the sum of their
 * lengths; ends must match.
 */
struct probe_notifier {
	__u64 starts;
	__u64 ends;
	__u64 lo;
	__u64 hi;
	__u64 bytes;
};

#define PROBE_IOC_MAGIC		0xBA
#define PROBE_IOC_ENTRIES	_IOWR(PROBE_IOC_MAGIC, 1, struct probe_entries)
#define PROBE_IOC_FOLLOW_PFNMAP	_IOWR(PROBE_IOC_MAGIC, 2, struct probe_pfnmap)
#define PROBE_IOC_NOTIFIER	_IOR(PROBE_IOC_MAGIC, 3, struct probe_notifier)

#endif /* MORSEL_PROBE_H */
