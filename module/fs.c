// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs: every regular file is a morsel.
 *
 * Names, permissions, links and fd passing come from the VFS (libfs, like
 * ramfs).  The file size chooses the order: the smallest order whose extent
 * is >= i_size (a new, empty file is order 0 and owns no memory).  mmap
 * maps the whole extent at an extent-aligned address; the length may be
 * anything from 1 byte to the extent (f_op->mmap_len rounds it up).
 *
 * Locking: i_rwsem (held by the VFS around setattr) orders size changes;
 * m->lock orders them against mmap (nr_maps is raised under it), so the
 * order never changes while a VMA exists.  Population needs no lock (tree.c).
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

/* Orders this version supports; 3 and 4 are refused with -EOPNOTSUPP. */
#define MORSEL_SUPPORTED_ORDER	2

static const struct inode_operations morsel_dir_iops;
static const struct inode_operations morsel_file_iops;
static const struct file_operations morsel_fops;

static struct morsel *file_morsel(struct file *file)
{
	return file_inode(file)->i_private;
}

/* ---- mmap ---- */

static unsigned long morsel_mmap_len(struct file *file, unsigned long len)
{
	u64 extent = morsel_extent(READ_ONCE(file_morsel(file)->order));

	return len <= extent ? extent : -EINVAL;
}

static unsigned long morsel_get_unmapped_area(struct file *file,
					      unsigned long addr,
					      unsigned long len,
					      unsigned long pgoff,
					      unsigned long flags)
{
	u64 extent = morsel_extent(READ_ONCE(file_morsel(file)->order));
	struct mm_struct *mm = current->mm;
	unsigned long area;

	if (pgoff || len != extent)
		return -EINVAL;
	if (flags & MAP_FIXED)
		return IS_ALIGNED(addr, extent) ? addr : -EINVAL;
	if (addr) {
		addr = ALIGN(addr, extent);
		area = mm_get_unmapped_area(mm, NULL, addr, len, 0, flags);
		if (area == addr)
			return addr;
	}
	/* Ask for one extent more and align inside it, as THP does. */
	if (len + extent < len)
		return -ENOMEM;
	area = mm_get_unmapped_area(mm, NULL, 0, len + extent, 0, flags);
	if (IS_ERR_VALUE(area))
		return area;
	return ALIGN(area, extent);
}

static int morsel_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct morsel *m = file_morsel(file);
	unsigned long len = vma->vm_end - vma->vm_start;
	int err = 0;

	if (!(vma->vm_flags & VM_MAYSHARE) || vma->vm_pgoff)
		return -EINVAL;
	mutex_lock(&m->lock);
	if (len != morsel_extent(m->order) ||
	    !IS_ALIGNED(vma->vm_start, morsel_extent(m->order)))
		err = -EINVAL;
	else
		atomic_inc(&m->nr_maps);
	mutex_unlock(&m->lock);
	if (err)
		return err;

	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	if (!(vma->vm_flags & VM_WRITE))
		vm_flags_clear(vma, VM_MAYWRITE);
	if (!(vma->vm_flags & VM_EXEC))
		vm_flags_clear(vma, VM_MAYEXEC);
	vma->vm_private_data = m;
	vma->vm_ops = &morsel_vm_ops;
	return 0;
}

/* ---- size ---- */

static int morsel_resize(struct inode *inode, loff_t size)
{
	struct morsel *m = inode->i_private;
	int order = morsel_order_for_size(size);
	loff_t old = i_size_read(inode);
	int err = 0;

	if (order < 0)
		return order;
	if (order > MORSEL_SUPPORTED_ORDER)
		return -EOPNOTSUPP;
	mutex_lock(&m->lock);
	if (atomic_read(&m->nr_maps) && (size < old || order != m->order)) {
		err = -EBUSY;
		goto out;
	}
	if (size < old) {
		morsel_free_range(m, PAGE_ALIGN(size), morsel_extent(m->order));
		morsel_zero_tail(m, size);
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

/* ---- ioctl ---- */

static long morsel_ioctl_stat(struct morsel *m, struct inode *inode,
			      struct morsel_stat __user *arg)
{
	struct morsel_stat st;
	int i;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	if (st.flags || memchr_inv(st.reserved, 0, sizeof(st.reserved)))
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	mutex_lock(&m->lock);
	st.order = m->order;
	st.extent = morsel_extent(m->order);
	st.size = i_size_read(inode);
	st.pages = atomic_long_read(&m->nr_pages);
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		st.tables[i] = atomic_long_read(&m->nr_tables[i]);
	st.mappings = atomic_read(&m->nr_maps);
	mutex_unlock(&m->lock);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long morsel_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case MORSEL_IOC_STAT:
		return morsel_ioctl_stat(file_morsel(file), file_inode(file),
					 (void __user *)arg);
	default:
		return -ENOTTY;
	}
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

static const struct file_operations morsel_fops = {
	.owner = THIS_MODULE,
	.llseek = generic_file_llseek,
	.mmap = morsel_mmap,
	.mmap_len = morsel_mmap_len,
	.get_unmapped_area = morsel_get_unmapped_area,
	.unlocked_ioctl = morsel_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.fsync = noop_fsync,
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

	sb->s_maxbytes = morsel_extent(MORSEL_MAX_ORDER);
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
