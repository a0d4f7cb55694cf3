// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs: the super block, inodes and mount options.  Every regular file
 * is a morsel (size.c has its sizes and orders, file.c its file operations,
 * ioctl.c its ioctls).
 *
 * Names, permissions, links and fd passing come from the VFS (libfs, like
 * ramfs).  The largest size is the extent of order 4 (256 TiB) with 5-level paging and
 * of order 3 (512 GiB) with 4-level paging, where an order-4 morsel could
 * never be mapped; s_maxbytes makes the VFS refuse more with -EFBIG.
 *
 * Limits, as tmpfs has them: the mount options size= (bytes with k/m/g/t
 * suffixes, or N% of RAM; default 50 %) and nr_inodes= (default: half the
 * RAM's pages); 0 means unlimited (size.c charges against them).  statfs
 * reports the limits and the use; st_blocks counts the populated data
 * pages.  Both can change with remount, not below what is in use.
 *
 * Locking: the VFS's (i_rwsem of the directories, s_umount for remount);
 * the inode counter is a cmpxchg loop against nr_inodes=.
 */
#include <linux/fs.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/ctype.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/uaccess.h>

#include "morsel.h"

static const struct inode_operations morsel_dir_iops;
static const struct inode_operations morsel_file_iops;

/* st_blocks (512-byte units) counts the populated data pages. */
static int morsel_getattr(struct mnt_idmap *idmap, const struct path *path,
			  struct kstat *stat, u32 request_mask,
			  unsigned int query_flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct morsel *m = inode->i_private;

	generic_fillattr(idmap, request_mask, inode, stat);
	stat->blocks = (u64)atomic_long_read(&m->nr_pages) << (PAGE_SHIFT - 9);
	return 0;
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
	struct morsel_sb *sbi = sb->s_fs_info;
	struct inode *inode;
	long n = atomic_long_read(&sbi->inodes);

	do {
		if (sbi->max_inodes && n >= sbi->max_inodes)
			return ERR_PTR(-ENOSPC);
	} while (!atomic_long_try_cmpxchg(&sbi->inodes, &n, n + 1));
	inode = new_inode(sb);
	if (!inode) {
		atomic_long_dec(&sbi->inodes);
		return ERR_PTR(-ENOMEM);
	}
	inode->i_ino = get_next_ino();
	inode_init_owner(&nop_mnt_idmap, inode, dir, mode);
	simple_inode_init_ts(inode);
	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_private = morsel_alloc(sbi);
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
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;

	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	if (S_ISREG(inode->i_mode) && inode->i_private)
		morsel_destroy(inode->i_private);
	atomic_long_dec(&sbi->inodes);
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
	.getattr = morsel_getattr,
};

/* ---- super block and mount options ---- */

static int morsel_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct morsel_sb *sbi = dentry->d_sb->s_fs_info;

	simple_statfs(dentry, buf);
	if (sbi->max_blocks) {
		buf->f_blocks = sbi->max_blocks;
		buf->f_bfree = sbi->max_blocks -
			min_t(long, atomic_long_read(&sbi->used),
			      sbi->max_blocks);
		buf->f_bavail = buf->f_bfree;
	}
	if (sbi->max_inodes) {
		buf->f_files = sbi->max_inodes;
		buf->f_ffree = sbi->max_inodes -
			min_t(long, atomic_long_read(&sbi->inodes),
			      sbi->max_inodes);
	}
	return 0;
}

static int morsel_show_options(struct seq_file *seq, struct dentry *root)
{
	struct morsel_sb *sbi = root->d_sb->s_fs_info;

	seq_printf(seq, ",size=%luk", sbi->max_blocks << (PAGE_SHIFT - 10));
	seq_printf(seq, ",nr_inodes=%lu", sbi->max_inodes);
	return 0;
}

static const struct super_operations morsel_sops = {
	.statfs = morsel_statfs,
	.drop_inode = generic_delete_inode,
	.evict_inode = morsel_evict_inode,
	.show_options = morsel_show_options,
};

enum { OPT_SIZE, OPT_NR_INODES };

static const struct fs_parameter_spec morsel_params[] = {
	fsparam_string("size", OPT_SIZE),
	fsparam_string("nr_inodes", OPT_NR_INODES),
	{}
};

/* Options given to this mount or remount (fc->fs_private). */
struct morsel_opts {
	unsigned long blocks, inodes;
	bool has_blocks, has_inodes;
};

/*
 * A decimal number with an optional k/m/g/t/p/e suffix (or, with @pct,
 * N% of RAM in bytes).  Unlike memparse() it refuses what overflows 64
 * bits, which would otherwise wrap to 0, "no limit".
 */
static int parse_number(const char *s, bool pct, u64 *out)
{
	static const char units[] = "kmgtpe";
	size_t digits = strspn(s, "0123456789");
	const char *unit;
	char buf[24];
	u64 n;

	if (!digits || digits >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, digits);
	buf[digits] = 0;
	if (kstrtou64(buf, 10, &n))
		return -EINVAL;
	s += digits;
	if (pct && !strcmp(s, "%")) {
		if (n > 100)
			return -EINVAL;
		*out = div_u64(n * totalram_pages(), 100) << PAGE_SHIFT;
		return 0;
	}
	if (*s) {
		unit = strchr(units, tolower(*s));
		if (!unit || s[1] || n > U64_MAX >> (10 * (unit - units + 1)))
			return -EINVAL;
		n <<= 10 * (unit - units + 1);
	}
	*out = n;
	return 0;
}

static int morsel_parse_param(struct fs_context *fc,
			      struct fs_parameter *param)
{
	struct morsel_opts *o = fc->fs_private;
	struct fs_parse_result result;
	int opt = fs_parse(fc, morsel_params, param, &result);
	u64 n;

	if (opt < 0)
		return opt;
	if (parse_number(param->string, opt == OPT_SIZE, &n))
		return invalfc(fc, "bad value for %s", param->key);
	if (opt == OPT_SIZE) {
		o->blocks = n / PAGE_SIZE + !!(n % PAGE_SIZE);
		o->has_blocks = true;
	} else {
		if (n > LONG_MAX)
			return invalfc(fc, "nr_inodes too large");
		o->inodes = n;
		o->has_inodes = true;
	}
	return 0;
}

static int morsel_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct morsel_opts *o = fc->fs_private;
	struct morsel_sb *sbi;
	struct inode *root;

	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	sbi->max_blocks = o->has_blocks ? o->blocks : totalram_pages() / 2;
	sbi->max_inodes = o->has_inodes ? o->inodes : totalram_pages() / 2;
	sb->s_fs_info = sbi;

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

/* remount: new limits, never below what is in use (-EINVAL). */
static int morsel_reconfigure(struct fs_context *fc)
{
	struct morsel_sb *sbi = fc->root->d_sb->s_fs_info;
	struct morsel_opts *o = fc->fs_private;

	if (o->has_blocks && o->blocks &&
	    o->blocks < atomic_long_read(&sbi->used))
		return invalfc(fc, "size below the space in use");
	if (o->has_inodes && o->inodes &&
	    o->inodes < atomic_long_read(&sbi->inodes))
		return invalfc(fc, "nr_inodes below the inodes in use");
	if (o->has_blocks)
		WRITE_ONCE(sbi->max_blocks, o->blocks);
	if (o->has_inodes)
		WRITE_ONCE(sbi->max_inodes, o->inodes);
	return 0;
}

static void morsel_free_fc(struct fs_context *fc)
{
	kfree(fc->fs_private);
}

static const struct fs_context_operations morsel_context_ops = {
	.parse_param = morsel_parse_param,
	.get_tree = morsel_get_tree,
	.reconfigure = morsel_reconfigure,
	.free = morsel_free_fc,
};

static int morsel_init_fs_context(struct fs_context *fc)
{
	struct morsel_opts *o = kzalloc(sizeof(*o), GFP_KERNEL);

	if (!o)
		return -ENOMEM;
	fc->fs_private = o;
	fc->ops = &morsel_context_ops;
	return 0;
}

/* After the last inode is gone (kill_litter_super), the instance itself. */
static void morsel_kill_sb(struct super_block *sb)
{
	struct morsel_sb *sbi = sb->s_fs_info;

	kill_litter_super(sb);
	kfree(sbi);
}

static struct file_system_type morselfs_type = {
	.owner = THIS_MODULE,
	.name = "morselfs",
	.init_fs_context = morsel_init_fs_context,
	.parameters = morsel_params,
	.kill_sb = morsel_kill_sb,
};

int morselfs_register(void)
{
	return register_filesystem(&morselfs_type);
}

void morselfs_unregister(void)
{
	unregister_filesystem(&morselfs_type);
}
