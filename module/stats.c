// SPDX-License-Identifier: GPL-2.0
/*
 * Global counters, read-only in /sys/fs/morselfs: pages (populated data
 * pages), tables (page-table pages owned by morsels), morsels (live
 * morsel objects) and mounts (mount entries written into processes since
 * the module was loaded); of 2 MiB leaves: huge (in trees now; a leaf
 * clones share counts in each, tree.c: tally_apply),
 * huge_fallbacks (a 2 MiB leaf was wanted and 4 KiB pages came instead:
 * no free block, or no charge), huge_splits and huge_collapses (since the
 * module was loaded); of 1 GiB leaves: huge1g (in trees now), huge1g_free
 * (free blocks in the reserves of all instances, pool.c), huge1g_fallbacks
 * (a 1 GiB leaf was wanted and smaller leaves came instead) and
 * huge1g_splits; migrated (pages moved to another node, MORSEL_IOC_MIGRATE)
 * and scanned (populated pages whose accessed bit MORSEL_IOC_ACCESSED
 * read), since the module was loaded.  Plain atomics; no locking.
 */
#include <linux/fs.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include "morsel.h"
#include "pm_log.h"

atomic_long_t morsel_stat_pages;
atomic_long_t morsel_stat_tables;
atomic_long_t morsel_stat_morsels;
atomic_long_t morsel_stat_mounts;
atomic_long_t morsel_stat_huge;
atomic_long_t morsel_stat_huge_fallbacks;
atomic_long_t morsel_stat_huge_splits;
atomic_long_t morsel_stat_huge_collapses;
atomic_long_t morsel_stat_huge1g;
atomic_long_t morsel_stat_huge1g_fallbacks;
atomic_long_t morsel_stat_huge1g_splits;
atomic_long_t morsel_stat_migrated;
atomic_long_t morsel_stat_scanned;

static struct kobject *morsel_kobj;

#define MORSEL_COUNTER(name)						\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%ld\n",					\
			  atomic_long_read(&morsel_stat_##name));	\
}									\
static struct kobj_attribute name##_attr = __ATTR_RO(name)

MORSEL_COUNTER(pages);
MORSEL_COUNTER(tables);
MORSEL_COUNTER(morsels);
MORSEL_COUNTER(mounts);
MORSEL_COUNTER(huge);
MORSEL_COUNTER(huge_fallbacks);
MORSEL_COUNTER(huge_splits);
MORSEL_COUNTER(huge_collapses);
MORSEL_COUNTER(huge1g);
MORSEL_COUNTER(huge1g_free);
MORSEL_COUNTER(huge1g_fallbacks);
MORSEL_COUNTER(huge1g_splits);
MORSEL_COUNTER(migrated);
MORSEL_COUNTER(scanned);

static struct attribute *morsel_attrs[] = {
	&pages_attr.attr,
	&tables_attr.attr,
	&morsels_attr.attr,
	&mounts_attr.attr,
	&huge_attr.attr,
	&huge_fallbacks_attr.attr,
	&huge_splits_attr.attr,
	&huge_collapses_attr.attr,
	&huge1g_attr.attr,
	&huge1g_free_attr.attr,
	&huge1g_fallbacks_attr.attr,
	&huge1g_splits_attr.attr,
	&migrated_attr.attr,
	&scanned_attr.attr,
	NULL,
};

static const struct attribute_group morsel_attr_group = {
	.attrs = morsel_attrs,
};

int morsel_stats_init(void)
{
	int err;

	morsel_kobj = kobject_create_and_add("morselfs", fs_kobj);
	if (!morsel_kobj)
		return -ENOMEM;
	err = sysfs_create_group(morsel_kobj, &morsel_attr_group);
	if (!err) {
		err = morsel_pm_log_init(morsel_kobj);
		if (err)
			sysfs_remove_group(morsel_kobj, &morsel_attr_group);
	}
	if (err)
		kobject_put(morsel_kobj);
	return err;
}

void morsel_stats_exit(void)
{
	morsel_pm_log_exit(morsel_kobj);
	kobject_put(morsel_kobj);
}
