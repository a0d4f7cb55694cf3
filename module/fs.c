// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs: the super block, inodes, and sizes.  Every regular file is a
 * morsel (file.c has its file operations, ioctl.c its ioctls).
 *
 * Names, permissions, links and fd passing come from the VFS (libfs, like
 * ramfs).  The file size chooses the order: the smallest order whose extent
 * is >= i_size (a new, empty file is order 0 and owns no memory).  The
 * largest size is the extent of order 4 (256 TiB) with 5-level paging and
 * of order 3 (512 GiB) with 4-level paging, where an order-4 morsel could
 * never be mapped; s_maxbytes makes the VFS refuse more with -EFBIG.
 *
 * Locking: i_rwsem (held by the VFS around setattr and by file.c around
 * writes) orders size changes; m->lock orders them against new mappings
 * (nr_maps is raised under it), so the order never changes while a VMA
 * exists.  Population needs no lock (tree.c).
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "morsel.h"

static const struct inode_operations morsel_dir_iops;
static const struct inode_operations morsel_file_iops;

/* ---- size ---- */

/*
 * May @m, which is not mapped, take order @order?  Not while mapped, and a
 * bound morsel keeps its address only if it stays aligned and in range.
 */
static int order_change_ok(struct morsel *m, unsigned int order)
{
	u64 extent = morsel_extent(order);

	lockdep_assert_held(&m->lock);
	if (m->nr_maps)
		return -EBUSY;
	if (m->bound && (!IS_ALIGNED(m->bound, extent) ||
			 m->bound + extent > TASK_SIZE_MAX))
		return -EBUSY;
	return 0;
}

/**
 * morsel_grow_order - raise the order so that @size fits in the extent
 *
 * For writes and fallocate beyond the extent; the size itself is set by the
 * caller once data is there.  Caller holds the inode lock.
 * Return: 0, -EFBIG, -EBUSY (mapped, or bound to an address the new extent
 * does not fit) or -ENOMEM.
 */
int morsel_grow_order(struct morsel *m, loff_t size)
{
	int order = morsel_order_for_size(size);
	int err = 0;

	if (order < 0)
		return order;
	mutex_lock(&m->lock);
	if (order > m->order) {
		err = order_change_ok(m, order);
		if (!err)
			err = morsel_set_order(m, order);
	}
	mutex_unlock(&m->lock);
	return err;
}

/**
 * morsel_fit_order - lower the order again to the one the size needs
 *
 * Undoes morsel_grow_order after a write or fallocate that failed before
 * the size grew.  Caller holds the inode lock.
 */
void morsel_fit_order(struct inode *inode)
{
	struct morsel *m = inode->i_private;
	int order = morsel_order_for_size(i_size_read(inode));

	mutex_lock(&m->lock);
	if (order >= 0 && order < m->order && !m->nr_maps)
		morsel_set_order(m, order);
	mutex_unlock(&m->lock);
}

/*
 * Set the size.  Growing within the extent is always allowed; shrinking or
 * a change of order is refused while the morsel is mapped.  Shrinking frees
 * what was cut off and zeroes the rest of the last page.
 */
static int morsel_resize(struct inode *inode, loff_t size)
{
	struct morsel *m = inode->i_private;
	int order = morsel_order_for_size(size);
	loff_t old = i_size_read(inode);
	int err = 0;

	if (order < 0)
		return order;
	mutex_lock(&m->lock);
	if (size < old || order != m->order)
		err = order_change_ok(m, order);
	if (err)
		goto out;
	if (size < old) {
		morsel_free_range(m, PAGE_ALIGN(size), morsel_extent(m->order));
		morsel_zero_range(m, size, PAGE_ALIGN(size));
	}
	err = morsel_set_order(m, order);
	if (!err)
		i_size_write(inode, size);
out:
	mutex_unlock(&m->lock);
	return err;
}

static int morsel_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			  struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	int err;

	err = setattr_prepare(idmap, dentry, attr);
	if (err)
		return err;
	if ((attr->ia_valid & ATTR_SIZE) && attr->ia_size != i_size_read(inode)) {
		err = morsel_resize(inode, attr->ia_size);
		if (err)
			return err;
		inode_set_mtime_to_ts(inode, inode_set_ctime_current(inode));
	}
	setattr_copy(idmap, inode, attr);
	return 0;
}

/* ---- inodes ---- */

static struct inode *morsel_get_inode(struct super_block *sb,
				      const struct inode *dir, umode_t mode)
{
	struct inode *inode = new_inode(sb);

	if (!inode)
		return ERR_PTR(-ENOSPC);
	inode->i_ino = get_next_ino();
	inode_init_owner(&nop_mnt_idmap, inode, dir, mode);
	simple_inode_init_ts(inode);
	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_private = morsel_alloc();
		if (!inode->i_private) {
			iput(inode);
			return ERR_PTR(-ENOMEM);
		}
		inode->i_op = &morsel_file_iops;
		inode->i_fop = &morsel_fops;
		break;
	case S_IFDIR:
		inode->i_op = &morsel_dir_iops;
		inode->i_fop = &simple_dir_operations;
		inc_nlink(inode);
		break;
	default:
		iput(inode);
		return ERR_PTR(-EINVAL);
	}
	return inode;
}

static int morsel_mknod(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode, dev_t dev)
{
	struct inode *inode = morsel_get_inode(dir->i_sb, dir, mode);

	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_instantiate(dentry, inode);
	dget(dentry);	/* pin the dentry, as ramfs does */
	inode_set_mtime_to_ts(dir, inode_set_ctime_current(dir));
	return 0;
}

static int morsel_create(struct mnt_idmap *idmap, struct inode *dir,
			 struct dentry *dentry, umode_t mode, bool excl)
{
	return morsel_mknod(idmap, dir, dentry, mode | S_IFREG, 0);
}

static int morsel_mkdir(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode)
{
	int err = morsel_mknod(idmap, dir, dentry, mode | S_IFDIR, 0);

	if (!err)
		inc_nlink(dir);
	return err;
}

static void morsel_evict_inode(struct inode *inode)
{
	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (S_ISREG(inode->i_mode) && inode->i_private)
		morsel_destroy(inode->i_private);
}

static const struct inode_operations morsel_dir_iops = {
	.create = morsel_create,
	.lookup = simple_lookup,
	.link = simple_link,
	.unlink = simple_unlink,
	.mkdir = morsel_mkdir,
	.rmdir = simple_rmdir,
	.mknod = morsel_mknod,
	.rename = simple_rename,
};

static const struct inode_operations morsel_file_iops = {
	.setattr = morsel_setattr,
	.getattr = simple_getattr,
};

/* ---- super block ---- */

static const struct super_operations morsel_sops = {
	.statfs = simple_statfs,
	.drop_inode = generic_delete_inode,
	.evict_inode = morsel_evict_inode,
};

static int morsel_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct inode *root;

	sb->s_maxbytes = morsel_extent(pgtable_l5_enabled() ? 4 : 3);
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_magic = MORSELFS_MAGIC;
	sb->s_op = &morsel_sops;
	sb->s_time_gran = 1;
	root = morsel_get_inode(sb, NULL, S_IFDIR | 0755);
	if (IS_ERR(root))
		return PTR_ERR(root);
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

static int morsel_get_tree(struct fs_context *fc)
{
	return get_tree_nodev(fc, morsel_fill_super);
}

static const struct fs_context_operations morsel_context_ops = {
	.get_tree = morsel_get_tree,
};

static int morsel_init_fs_context(struct fs_context *fc)
{
	fc->ops = &morsel_context_ops;
	return 0;
}

static struct file_system_type morselfs_type = {
	.owner = THIS_MODULE,
	.name = "morselfs",
	.init_fs_context = morsel_init_fs_context,
	.kill_sb = kill_litter_super,
};

int morselfs_register(void)
{
	return register_filesystem(&morselfs_type);
}

void morselfs_unregister(void)
{
	unregister_filesystem(&morselfs_type);
}
