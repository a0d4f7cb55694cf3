// SPDX-License-Identifier: GPL-2.0
/*
 * Module entry: registers the counters, the owner of failed pages
 * (memerr.c) and the morselfs file system.
 * Unloading waits for the tables still queued for an RCU grace period
 * (tree.c), whose callback is module code, and for the work that reaps
 * the pages of unmounted persistent devices (pm.c).
 */
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <asm/cpufeature.h>

#include "morsel.h"
#include "morsel_pm.h"

static int __init morsel_init(void)
{
	int err;

	/*
	 * Xen PV page tables are read-only to the guest and written through
	 * hypercalls (pv_ops.mmu); morsels write entries with cmpxchg.
	 */
	if (cpu_feature_enabled(X86_FEATURE_XENPV)) {
		pr_err("morsel: Xen PV guests are not supported\n");
		return -EOPNOTSUPP;
	}
	err = morsel_stats_init();

	if (err)
		return err;
	err = morsel_memerr_init();
	if (err)
		goto stats;
	err = morselfs_register();
	if (!err)
		return 0;
	morsel_memerr_exit();
stats:
	morsel_stats_exit();
	return err;
}

static void __exit morsel_exit(void)
{
	morselfs_unregister();
	morsel_memerr_exit();
	morsel_pm_exit();
	rcu_barrier();
	morsel_mpol_exit();
	morsel_stats_exit();
}

module_init(morsel_init);
module_exit(morsel_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("morselfs: page-table subtrees as memory objects");
