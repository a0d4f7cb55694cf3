/* SPDX-License-Identifier: GPL-2.0 */
/* Persistent instances of morselfs (pm.c); docs/persistence.md. */
#ifndef MORSEL_MORSEL_PM_H
#define MORSEL_MORSEL_PM_H

#include <linux/fs.h>
#include "pm_format.h"

struct morsel_pm;

/* The device's metadata stores: the only writes of metadata (pm.c). */
void morsel_pm_store(struct morsel_pm *pm, u64 *word, u64 val);
u64 morsel_pm_xchg(struct morsel_pm *pm, u64 *word, u64 val);
bool morsel_pm_cmpxchg(struct morsel_pm *pm, u64 *word, u64 *old, u64 new);

/*
 * The device's pages, as tables and data, its reservations and the
 * writes data needs are the instance's source of memory (source.h).
 */

/* A data page failed: listed in the device's bad-page tree (memerr.c). */
int morsel_pm_bad_page(struct morsel_pm *pm, struct page *page);

/* Mounting (fs.c); @pool: give the device a pool page (pm_share.c). */
int morsel_pm_mount(struct super_block *sb, const char *path, bool pool);
struct inode *morsel_pm_load(struct super_block *sb);
void morsel_pm_unmount(struct super_block *sb);
void morsel_pm_shutdown(struct super_block *sb);
const char *morsel_pm_path(struct super_block *sb);
void morsel_pm_exit(void);
void morsel_pm_statfs(struct super_block *sb, u64 *blocks, u64 *bfree,
		      u64 *files, u64 *ffree);

/* Inodes and names (fs.c), under the VFS's locks. */
int morsel_pm_new_inode(struct inode *inode);
void morsel_pm_free_inode(struct inode *inode);
void morsel_pm_sync_inode(struct inode *inode);
int morsel_pm_add_name(struct inode *dir, struct dentry *dentry,
		       struct inode *inode);
void morsel_pm_remove_name(struct inode *dir, struct dentry *dentry);
int morsel_pm_rename(struct inode *old_dir, struct dentry *old_dentry,
		     struct inode *new_dir, struct dentry *new_dentry);
int morsel_pm_symlink(struct inode *inode, const char *target, size_t len);
void morsel_pm_set_size(struct inode *inode);
void morsel_pm_set_word(struct inode *inode, size_t field, u64 val);
void morsel_pm_set_flags(struct inode *inode);

/* Extended attributes (fs.c), under the inode lock. */
struct simple_xattrs;
int morsel_pm_xattrs_begin(struct inode *inode, struct simple_xattrs *xs,
			   const char *name, const void *value, size_t size,
			   u64 *page);
void morsel_pm_xattrs_abort(struct inode *inode, u64 page);
void morsel_pm_xattrs_commit(struct inode *inode, struct simple_xattrs *xs,
			     u64 page);

#define MORSEL_PM_FIELD(f)	offsetof(struct mpm_inode, f)

/*
 * Shared pools (pm_share.c): a reader mount, the publisher's deletions of
 * sealed files, the heartbeat; pm.c's part of them.
 */
struct morsel_share;
struct mpm_fs;
struct morsel_share *morsel_share_claim(struct morsel_pm *pm, struct mpm_fs *fs,
					struct mpm_pool_slot *slots, bool reader,
					bool moving);
void morsel_share_zombies(struct morsel_share *sh);
void morsel_share_run(struct morsel_share *sh);
void morsel_share_end(struct morsel_share *sh, bool ran);
bool morsel_share_defer(struct morsel_share *sh, u64 ino);
int morsel_share_open(struct inode *inode);
void morsel_share_release(struct inode *inode);
extern const struct dentry_operations morsel_share_dops;
extern const struct inode_operations morsel_share_dir_iops;
extern const struct file_operations morsel_share_dir_fops;

struct morsel_share *morsel_pm_share(struct super_block *sb);
bool morsel_pm_reader(struct super_block *sb);
struct inode *morsel_pm_iget(struct super_block *sb, u64 ino);
bool morsel_pm_defer(struct inode *inode);
void morsel_pm_free_orphan(struct morsel_pm *pm, u64 ino);

#endif /* MORSEL_MORSEL_PM_H */
