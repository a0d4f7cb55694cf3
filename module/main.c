// SPDX-License-Identifier: GPL-2.0
/*
 * Module entry: registers the counters and the morselfs file system.
 */
#include <linux/module.h>

#include "morsel.h"

static int __init morsel_init(void)
{
	int err = morsel_stats_init();

	if (err)
		return err;
	err = morselfs_register();
	if (err)
		morsel_stats_exit();
	return err;
}

static void __exit morsel_exit(void)
{
	morselfs_unregister();
	morsel_stats_exit();
}

module_init(morsel_init);
module_exit(morsel_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("morselfs: page-table subtrees as memory objects");
