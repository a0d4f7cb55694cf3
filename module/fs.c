// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs: the super block, inodes, extended attributes and mount options.
 * Every regular file is a morsel (size.c has its sizes and orders, file.c
 * its file operations, ioctl.c its ioctls).
 *
 * Names, permissions, links, renames (incl. RENAME_NOREPLACE and
 * RENAME_EXCHANGE) and fd passing come from the VFS (libfs, like ramfs).
 * Besides regular files and directories there are symbolic links (the
 * target in a kmalloc'd i_link, freed with the inode after an RCU grace
 * period, as path walks may still read it), FIFOs, sockets and device nodes
 * (init_special_inode), and O_TMPFILE files: an unnamed morsel that linkat
 * may give a name.  MORSEL_IOC_CREATE on a directory (ioctl.c) makes an
 * unnamed morsel that never gets one, as memfd_create does on tmpfs.  The
 * largest size is the extent of order 4 (256 TiB) with 5-level paging and
 * of order 3 (512 GiB) with 4-level paging, where an order-4 morsel could
 * never be mapped; s_maxbytes makes the VFS refuse more with -EFBIG.
 *
 * Extended attributes and POSIX ACLs, as tmpfs has them, are xattr.c's;
 * a new inode gets its ACLs from its directory's default ACL here.
 * chattr's flags, as tmpfs has them: immutable, append-only, no-dump and
 * no-atime, the first three also in statx's attributes; a new inode
 * inherits no-dump and no-atime from its directory.  The VFS enforces
 * them, and morselfs' own write paths too (file.c, ioctl.c).
 *
 * Limits, as tmpfs has them: the mount options size= (bytes with k/m/g/t
 * suffixes, or N% of RAM; default 50 %) and nr_inodes= (default: half the
 * RAM's pages); 0 means unlimited (size.c charges pages against size=).
 * nr_inodes= is counted in "inode space": MORSEL_BOGO_INODE bytes per inode
 * of any type, plus the space of every extended attribute and of every
 * symbolic link's target, so that they too run out with -ENOSPC.  statfs
 * reports the limits and the use; st_blocks counts the populated data
 * pages.  Both limits can change with remount, not below what is in use.
 * mode=, uid= and gid= set the root directory's mode and owner (default
 * 01777 and the mounter, as tmpfs); a remount with them changes the root
 * directory (tmpfs ignores them on remount).
 *
 * A persistent instance belongs to its device, as a disk file system's
 * does: a second mount of a mounted device gives the same instance (the
 * same super block, with its anonymous st_dev), found by the device's
 * number under sget_fc()'s sb_lock; a second mount that differs from the
 * first in read-only state is refused with -EBUSY, as get_tree_bdev does.
 *
 * Locking: the VFS's (i_rwsem of the directories; i_rwsem of the inode
 * around setattr; s_umount for remount, which also takes the root
 * directory's i_rwsem to change it; xattr.c has the attributes' rules).
 * The inode space is a cmpxchg loop against nr_inodes=.
 */
#include <linux/blkdev.h>
#include <linux/fs.h>
#include <linux/fileattr.h>
#include <linux/fs_context.h>
#include <linux/fs_parser.h>
#include <linux/file.h>
#include <linux/ctype.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/pagemap.h>
#include <linux/posix_acl.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/statfs.h>
#include <linux/uaccess.h>
#include <linux/xattr.h>

#include "morsel.h"
#include "morsel_pm.h"

/* Inode space one inode takes from nr_inodes= (tmpfs: BOGO_INODE_SIZE). */
#define MORSEL_BOGO_INODE 1024

/* The root directory's default mode, as tmpfs. */
#define MORSEL_ROOT_MODE (S_ISVTX | 0777)

static struct kmem_cache *morsel_inode_cachep;

static const struct inode_operations morsel_dir_iops;
static const struct inode_operations morsel_file_iops;
static const struct inode_operations morsel_symlink_iops;
static const struct inode_operations morsel_special_iops;
static const struct file_operations morsel_pm_dir_fops;

/* ---- inode space (nr_inodes=) ---- */

void morsel_ispace_uncharge(struct morsel_sb *sbi, long bytes)
{
	atomic_long_sub(bytes, &sbi->ispace);
}

/* Take @bytes of inode space, or nothing; -ENOSPC past nr_inodes=. */
int morsel_ispace_charge(struct morsel_sb *sbi, long bytes)
{
	long limit = READ_ONCE(sbi->max_inodes) * MORSEL_BOGO_INODE;
	long got = morsel_take_upto(&sbi->ispace, limit, bytes);

	if (got == bytes)
		return 0;
	morsel_ispace_uncharge(sbi, got);
	return -ENOSPC;
}

/* ---- attributes ---- */

/* st_blocks (512-byte units) counts the populated data pages. */
static int morsel_getattr(struct mnt_idmap *idmap, const struct path *path,
			  struct kstat *stat, u32 request_mask,
			  unsigned int query_flags)
{
	struct inode *inode = d_inode(path->dentry);
	struct morsel *m = inode->i_private;

	generic_fillattr(idmap, request_mask, inode, stat);
	if (request_mask & STATX_BTIME) {
		stat->result_mask |= STATX_BTIME;
		stat->btime = MORSEL_I(inode)->btime;
	}
	if (S_ISREG(inode->i_mode))
		stat->blocks = (u64)atomic_long_read(&m->nr_pages) << (PAGE_SHIFT - 9);
	if (MORSEL_I(inode)->fsflags & FS_APPEND_FL)
		stat->attributes |= STATX_ATTR_APPEND;
	if (MORSEL_I(inode)->fsflags & FS_IMMUTABLE_FL)
		stat->attributes |= STATX_ATTR_IMMUTABLE;
	if (MORSEL_I(inode)->fsflags & FS_NODUMP_FL)
		stat->attributes |= STATX_ATTR_NODUMP;
	stat->attributes_mask |= STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE |
				 STATX_ATTR_NODUMP;
	return 0;
}

/* chmod, chown, utimes, truncate: of any inode (the VFS's checks, and +i). */
static int morsel_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			  struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	int err;

	/*
	 * The VFS refuses an immutable inode's mode, owner and times but
	 * not its size through a descriptor opened before chattr +i: as ext4.
	 */
	if (IS_IMMUTABLE(inode))
		return -EPERM;
	/* A sealed file's size is final; mode, owner and times are not. */
	if ((attr->ia_valid & ATTR_SIZE) && READ_ONCE(MORSEL_I(inode)->sealed))
		return -EPERM;
	err = setattr_prepare(idmap, dentry, attr);
	if (err)
		return err;
	if ((attr->ia_valid & ATTR_SIZE) && S_ISREG(inode->i_mode) &&
	    attr->ia_size != i_size_read(inode)) {
		err = morsel_resize(inode, attr->ia_size);
		if (err)
			return err;
		inode_set_mtime_to_ts(inode, inode_set_ctime_current(inode));
	}
	setattr_copy(idmap, inode, attr);
	/* The ACL's mask (or owner and other entries) follows the mode. */
	if ((attr->ia_valid & ATTR_MODE) && !S_ISLNK(inode->i_mode))
		err = posix_acl_chmod(idmap, dentry, inode->i_mode);
	if (sb_pm(inode->i_sb))
		morsel_pm_sync_inode(inode);
	return err;
}

/* ---- chattr's flags ---- */

#define MORSEL_FL_SETTABLE (FS_IMMUTABLE_FL | FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL)
#define MORSEL_FL_INHERITED (FS_NODUMP_FL | FS_NOATIME_FL)

static_assert(MORSEL_FL_SETTABLE == MPM_FLAGS_KNOWN);

/* The inode's flags, and the S_* flags the VFS checks for them. */
void morsel_set_fsflags(struct inode *inode, unsigned int fsflags)
{
	unsigned int i_flags = 0;

	MORSEL_I(inode)->fsflags = fsflags;
	if (fsflags & FS_NOATIME_FL)
		i_flags |= S_NOATIME;
	if (fsflags & FS_APPEND_FL)
		i_flags |= S_APPEND;
	if (fsflags & FS_IMMUTABLE_FL)
		i_flags |= S_IMMUTABLE;
	inode_set_flags(inode, i_flags, S_NOATIME | S_APPEND | S_IMMUTABLE);
}

static int morsel_fileattr_get(struct dentry *dentry, struct fileattr *fa)
{
	fileattr_fill_flags(fa, MORSEL_I(d_inode(dentry))->fsflags);
	return 0;
}

/*
 * FS_IOC_SETFLAGS (the VFS checked ownership and CAP_LINUX_IMMUTABLE and
 * holds the inode lock); FS_IOC_FSSETXATTR's extra fields, as on tmpfs,
 * give -EOPNOTSUPP, and so does any other flag.
 */
static int morsel_fileattr_set(struct mnt_idmap *idmap, struct dentry *dentry,
			       struct fileattr *fa)
{
	struct inode *inode = d_inode(dentry);

	if (fileattr_has_fsx(fa) || (fa->flags & ~MORSEL_FL_SETTABLE))
		return -EOPNOTSUPP;
	morsel_set_fsflags(inode, fa->flags);
	inode_set_ctime_current(inode);
	if (sb_pm(inode->i_sb)) {
		morsel_pm_set_flags(inode);
		morsel_pm_sync_inode(inode);
	}
	return 0;
}

/* ---- inodes ---- */

/*
 * A new inode of any type, charged MORSEL_BOGO_INODE of inode space;
 * @dev is for device nodes.  A regular file gets its morsel.
 */
static struct inode *morsel_get_inode(struct super_block *sb,
				      const struct inode *dir, umode_t mode,
				      dev_t dev)
{
	struct morsel_sb *sbi = sb->s_fs_info;
	struct inode *inode;
	int err;

	if (morsel_ispace_charge(sbi, MORSEL_BOGO_INODE))
		return ERR_PTR(-ENOSPC);
	inode = new_inode(sb);
	if (!inode) {
		morsel_ispace_uncharge(sbi, MORSEL_BOGO_INODE);
		return ERR_PTR(-ENOMEM);
	}
	inode->i_ino = get_next_ino();
	inode_init_owner(&nop_mnt_idmap, inode, dir, mode);
	MORSEL_I(inode)->btime = simple_inode_init_ts(inode);
	if (dir) {
		const struct morsel_inode *mdir;

		mdir = container_of(dir, const struct morsel_inode, vfs_inode);
		morsel_set_fsflags(inode, mdir->fsflags & MORSEL_FL_INHERITED);
	}
	/* with the set-group-ID bit a directory inherits (inode_init_owner) */
	err = morsel_setup_inode(inode, inode->i_mode, dev);
	if (err) {
		iput(inode);
		return ERR_PTR(err);
	}
	return inode;
}

/*
 * The operations of an inode of @mode (its charge is taken); a regular
 * file gets its morsel.  Also for the inodes a persistent mount loads.
 */
int morsel_setup_inode(struct inode *inode, umode_t mode, dev_t dev)
{
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;

	inode->i_mode = mode;
	switch (mode & S_IFMT) {
	case S_IFREG:
		inode->i_private = morsel_alloc(sbi, inode);
		if (!inode->i_private)
			return -ENOMEM;
		inode->i_op = &morsel_file_iops;
		inode->i_fop = &morsel_fops;
		/*
		 * A persistent file's pages are the device's, mapped in place:
		 * S_DAX makes GUP refuse FOLL_LONGTERM pins of them
		 * (-EOPNOTSUPP) as for any fsdax file, so no RDMA region or
		 * io_uring buffer can hold a page the next owner's data goes
		 * into.  Its other effects: statx reports STATX_ATTR_DAX and
		 * core dumps follow the DAX bits of coredump_filter.
		 */
		if (sbi->pm)
			inode->i_flags |= S_DAX;
		break;
	case S_IFDIR:
		inode->i_op = &morsel_dir_iops;
		inode->i_fop = sb_pm(inode->i_sb) ? &morsel_pm_dir_fops :
						     &morsel_dir_fops;
		inc_nlink(inode);
		break;
	case S_IFLNK:
		inode->i_op = &morsel_symlink_iops;
		break;
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFCHR:
	case S_IFBLK:
		inode->i_op = &morsel_special_iops;
		init_special_inode(inode, mode, dev);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/* Inode space of an inode a persistent mount loads (no limit applies). */
void morsel_account_loaded(struct inode *inode)
{
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;

	atomic_long_add(MORSEL_BOGO_INODE + (S_ISLNK(inode->i_mode) ?
					     inode->i_size + 1 : 0),
			&sbi->ispace);
}

/*
 * Give @dentry in @dir the new @inode, pinning the dentry as ramfs does.
 * On a persistent instance the name goes to the device first; if it
 * cannot, the inode (nlink 0) and its record go.
 */
static int morsel_instantiate(struct inode *dir, struct dentry *dentry,
			      struct inode *inode)
{
	if (sb_pm(dir->i_sb)) {
		int err = morsel_pm_add_name(dir, dentry, inode);

		if (err) {
			clear_nlink(inode);
			iput(inode);
			return err;
		}
	}
	d_instantiate(dentry, inode);
	dget(dentry);
	inode_set_mtime_to_ts(dir, inode_set_ctime_current(dir));
	if (sb_pm(dir->i_sb))
		morsel_pm_sync_inode(dir);
	return 0;
}

/*
 * A new inode, with its record on a persistent instance, and the ACLs of
 * @dir's default ACL, which shape @mode first (else the umask does: the
 * VFS leaves it to a file system with ACLs).
 */
static struct inode *morsel_new_inode(struct inode *dir, umode_t mode,
				      dev_t dev)
{
	struct posix_acl *dacl, *acl;
	struct inode *inode;
	int err;

	err = posix_acl_create(dir, &mode, &dacl, &acl);
	if (err)
		return ERR_PTR(err);
	inode = morsel_get_inode(dir->i_sb, dir, mode, dev);
	if (IS_ERR(inode)) {
		posix_acl_release(dacl);
		posix_acl_release(acl);
		return inode;
	}
	err = sb_pm(dir->i_sb) ? morsel_pm_new_inode(inode) : 0;
	if (err)
		inode->i_ino = 0;	/* no record to free */
	else
		err = morsel_acl_store_new(inode, dacl, acl);
	posix_acl_release(dacl);
	posix_acl_release(acl);
	if (err) {
		clear_nlink(inode);
		iput(inode);
		return ERR_PTR(err);
	}
	return inode;
}

static int morsel_mknod(struct mnt_idmap *idmap, struct inode *dir,
			struct dentry *dentry, umode_t mode, dev_t dev)
{
	struct inode *inode = morsel_new_inode(dir, mode, dev);

	if (IS_ERR(inode))
		return PTR_ERR(inode);
	return morsel_instantiate(dir, dentry, inode);
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

/*
 * The target (at most PATH_MAX bytes with its NUL, which the VFS ensures)
 * goes to i_link and takes its length in inode space besides the inode's.
 */
static int morsel_symlink(struct mnt_idmap *idmap, struct inode *dir,
			  struct dentry *dentry, const char *target)
{
	struct morsel_sb *sbi = dir->i_sb->s_fs_info;
	size_t len = strlen(target) + 1;
	struct inode *inode;
	int err;

	if (len > PATH_MAX)
		return -ENAMETOOLONG;
	err = morsel_ispace_charge(sbi, len);
	if (err)
		return err;
	inode = morsel_new_inode(dir, S_IFLNK | 0777, 0);
	if (IS_ERR(inode)) {
		morsel_ispace_uncharge(sbi, len);
		return PTR_ERR(inode);
	}
	inode->i_link = kmemdup(target, len, GFP_KERNEL_ACCOUNT);
	err = inode->i_link ? 0 : -ENOMEM;
	if (!err && sb_pm(dir->i_sb))
		err = morsel_pm_symlink(inode, target, len - 1);
	if (err) {
		clear_nlink(inode);
		iput(inode);	/* frees the inode's space, not the target's */
		morsel_ispace_uncharge(sbi, len);
		return err;
	}
	inode->i_size = len - 1;
	return morsel_instantiate(dir, dentry, inode);
}

/* O_TMPFILE: a morsel without a name (nlink 0) until linkat gives one. */
static int morsel_tmpfile(struct mnt_idmap *idmap, struct inode *dir,
			  struct file *file, umode_t mode)
{
	struct inode *inode = morsel_new_inode(dir, mode, 0);

	if (IS_ERR(inode))
		return PTR_ERR(inode);
	d_tmpfile(file, inode);
	return finish_open_simple(file, 0);
}

/**
 * morsel_create_unnamed - MORSEL_IOC_CREATE on directory file @dirf
 *
 * An unnamed morsel of @size in @dirf's instance, opened for reading and
 * writing: what O_TMPFILE there and ftruncate do, in one call and without
 * a path to walk, as memfd_create gives a tmpfs file.  It has no name and
 * never gets one (nlink 0 and not I_LINKABLE, so linkat gives -ENOENT, as
 * for a memfd); it goes with its last reference.  The checks are
 * O_TMPFILE's and ftruncate's: write and search permission on the
 * directory, a writable mount (-EROFS), RLIMIT_FSIZE (SIGXFSZ and -EFBIG)
 * and the largest size (-EFBIG).  The file holds write access on the
 * mount and a reference on this module as one opened by open(2) would.
 * Return: the file or an ERR_PTR (also -ENOSPC, -ENOMEM).
 */
struct file *morsel_create_unnamed(struct file *dirf, umode_t mode,
				   loff_t size)
{
	struct mnt_idmap *idmap = file_mnt_idmap(dirf);
	struct inode *dir = file_inode(dirf);
	int err;

	err = inode_permission(idmap, dir, MAY_WRITE | MAY_EXEC);
	if (err)
		return ERR_PTR(err);
	/* the umask, or the directory's default ACL: morsel_new_inode() */
	mode = mode_strip_sgid(idmap, dir, mode & S_IALLUGO);
	return morsel_new_unnamed(dirf->f_path.mnt, dir, mode, size, NULL);
}

/**
 * morsel_new_unnamed - an unnamed morsel file, without permission checks
 * @mnt:  the mount it is opened on (held for writing while it is open)
 * @dir:  the directory its owner, group and ACLs come from
 * @key:  a lock class for its inode lock (NULL: the file system's)
 *
 * What morsel_create_unnamed() gives, for a caller that checked the rights
 * itself (anon.c: PR_SET_MEMORY_MANAGER did; a fork's clone needs none).
 * Anonymous memory (a @key given) is made as shmem makes a memfd's file,
 * without freeze protection (sb_start_write): a fork makes it under the
 * mmap lock, which a write(2) in a frozen-protected section may need for
 * its user copy, and a volatile instance has nothing a freeze keeps.
 */
struct file *morsel_new_unnamed(struct vfsmount *mnt, struct inode *dir,
				umode_t mode, loff_t size,
				struct lock_class_key *key)
{
	struct inode *inode;
	struct file *file;
	int err;

	err = key ? mnt_get_write_access(mnt) : mnt_want_write(mnt);
	if (err)
		return ERR_PTR(err);
	inode = morsel_new_inode(dir, S_IFREG | mode, 0);
	if (IS_ERR(inode)) {
		file = ERR_CAST(inode);
		goto out;
	}
	if (key)	/* before anyone takes it */
		lockdep_set_class(&inode->i_rwsem, key);
	drop_nlink(inode);
	/* Anonymous memory is no file RLIMIT_FSIZE limits (as shmem's). */
	if (key)
		err = size > inode->i_sb->s_maxbytes ? -EFBIG : 0;
	else
		err = inode_newsize_ok(inode, size);
	if (!err && size) {
		inode_lock(inode);
		err = morsel_resize(inode, size);
		inode_unlock(inode);
		if (!err && sb_pm(inode->i_sb))
			morsel_pm_sync_inode(inode);
	}
	if (err) {
		iput(inode);
		file = ERR_PTR(err);
		goto out;
	}
	file = alloc_file_pseudo(inode, mnt, "morsel", O_RDWR | O_LARGEFILE,
				 key ? &morsel_anon_fops : &morsel_fops);
	if (IS_ERR(file)) {
		iput(inode);
		goto out;
	}
	/*
	 * What do_dentry_open() gives a file opened for writing, which
	 * __fput() gives back: the f_op owner's reference, write access on
	 * the mount (it cannot be read-only while we hold it) and on the
	 * inode (nobody else knows it, so nobody denies writing).
	 */
	__module_get(THIS_MODULE);
	err = mnt_get_write_access(file->f_path.mnt);
	if (err) {
		fput(file);
		file = ERR_PTR(err);
		goto out;
	}
	get_write_access(inode);
	file->f_mode |= FMODE_WRITER | FMODE_PREAD | FMODE_PWRITE |
			FMODE_ATOMIC_POS | FMODE_CAN_ODIRECT;
out:
	if (key)
		mnt_put_write_access(mnt);
	else
		mnt_drop_write(mnt);
	return file;
}

static struct inode *morsel_alloc_inode(struct super_block *sb)
{
	struct morsel_inode *mi;

	mi = alloc_inode_sb(sb, morsel_inode_cachep, GFP_KERNEL);
	if (!mi)
		return NULL;
	simple_xattrs_init(&mi->xattrs);
	mi->fsflags = 0;
	mi->sealed = false;
	return &mi->vfs_inode;
}

/* After an RCU grace period: an RCU path walk may still read i_link. */
static void morsel_free_inode(struct inode *inode)
{
	if (S_ISLNK(inode->i_mode))
		kfree(inode->i_link);
	kmem_cache_free(morsel_inode_cachep, MORSEL_I(inode));
}

/* The last name and the last open are gone: free the data and the space. */
static void morsel_evict_inode(struct inode *inode)
{
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;
	long space = MORSEL_BOGO_INODE;
	size_t freed = 0;
	bool gone = !inode->i_nlink, keep = false;

	truncate_inode_pages_final(&inode->i_data);
	clear_inode(inode);
	/*
	 * A pool reader's inode is the publisher's; a deleted sealed file a
	 * reader leases stays until the lease goes (pm_share.c).
	 */
	if (sb_pm(inode->i_sb) && S_ISREG(inode->i_mode) && inode->i_private)
		keep = morsel_pm_reader(inode->i_sb) ||
		       (gone && MORSEL_I(inode)->sealed && morsel_pm_defer(inode));
	/* A persistent inode with a name stays on the device. */
	if (S_ISREG(inode->i_mode) && inode->i_private) {
		if (sb_pm(inode->i_sb) && (!gone || keep)) {
			if (!keep)
				morsel_fit_final(inode->i_private, i_size_read(inode));
			morsel_resv_release(inode->i_private);
			morsel_forget(inode->i_private);
		} else {
			morsel_resv_release(inode->i_private);
			morsel_destroy(inode->i_private);
		}
	}
	if (sb_pm(inode->i_sb) && gone && !keep && inode->i_ino &&
	    !morsel_pm_reader(inode->i_sb))
		morsel_pm_free_inode(inode);
	if (S_ISLNK(inode->i_mode) && inode->i_link)
		space += inode->i_size + 1;
	simple_xattrs_free(&MORSEL_I(inode)->xattrs, &freed);
	morsel_ispace_uncharge(sbi, space + freed);
}

/*
 * Names on a persistent instance go to the device first (pm.c), then to
 * the dcache as on a volatile one.
 */
/* The times (and link counts) libfs changed, on the device too. */
static int synced(int err, struct inode *a, struct inode *b)
{
	if (!err && sb_pm(a->i_sb)) {
		morsel_pm_sync_inode(a);
		if (b && b != a)
			morsel_pm_sync_inode(b);
	}
	return err;
}

static int morsel_link(struct dentry *old_dentry, struct inode *dir,
		       struct dentry *dentry)
{
	if (sb_pm(dir->i_sb)) {
		int err = morsel_pm_add_name(dir, dentry, d_inode(old_dentry));

		if (err)
			return err;
	}
	return synced(simple_link(old_dentry, dir, dentry), dir,
		      d_inode(old_dentry));
}

static int morsel_unlink(struct inode *dir, struct dentry *dentry)
{
	struct inode *inode = d_inode(dentry);

	if (sb_pm(dir->i_sb))
		morsel_pm_remove_name(dir, dentry);
	return synced(simple_unlink(dir, dentry), dir,
		      inode->i_nlink ? inode : NULL);
}

static int morsel_rmdir(struct inode *dir, struct dentry *dentry)
{
	if (sb_pm(dir->i_sb)) {
		if (!simple_empty(dentry))
			return -ENOTEMPTY;
		morsel_pm_remove_name(dir, dentry);
	}
	return synced(simple_rmdir(dir, dentry), dir, NULL);
}

/*
 * RENAME_WHITEOUT, as tmpfs (overlayfs's upper layer uses it): the old
 * name becomes a whiteout, a character device 0:0, made before the rename
 * and hashed while the old dentry is still in place (a lookup finds one of
 * the two, either is right), as shmem_whiteout does.
 */
static int morsel_whiteout(struct mnt_idmap *idmap, struct inode *old_dir,
			   struct dentry *old_dentry)
{
	struct dentry *whiteout;
	int err;

	whiteout = d_alloc(old_dentry->d_parent, &old_dentry->d_name);
	if (!whiteout)
		return -ENOMEM;
	err = morsel_mknod(idmap, old_dir, whiteout, S_IFCHR | WHITEOUT_MODE,
			   WHITEOUT_DEV);
	dput(whiteout);
	if (!err)
		d_rehash(whiteout);
	return err;
}

/*
 * RENAME_EXCHANGE and RENAME_WHITEOUT need two names to change in one
 * store; a persistent instance refuses them (docs/persistence.md).
 */
static int morsel_rename(struct mnt_idmap *idmap, struct inode *old_dir,
			 struct dentry *old_dentry, struct inode *new_dir,
			 struct dentry *new_dentry, unsigned int flags)
{
	int err;

	if (sb_pm(old_dir->i_sb)) {
		if (flags & ~RENAME_NOREPLACE)
			return -EINVAL;
		if (!simple_empty(new_dentry))
			return -ENOTEMPTY;
		err = morsel_pm_rename(old_dir, old_dentry, new_dir, new_dentry);
		if (err)
			return err;
	} else if (flags & RENAME_WHITEOUT) {
		/* the VFS refused it with RENAME_EXCHANGE and without CAP_MKNOD */
		if (!simple_empty(new_dentry))
			return -ENOTEMPTY;
		err = morsel_whiteout(idmap, old_dir, old_dentry);
		if (err)
			return err;
		flags &= ~RENAME_WHITEOUT;
	}
	return synced(simple_rename(idmap, old_dir, old_dentry, new_dir,
				    new_dentry, flags), old_dir, new_dir);
}

/*
 * libfs's simple_dir_operations, MORSEL_IOC_CREATE (ioctl.c) and, on a
 * volatile instance, the anonymous memory of processes that name the
 * directory their memory manager (anon.c).  A persistent instance cannot
 * clone (clone.c), so it supplies no memory.
 */
#define MORSEL_DIR_FOPS					\
	.owner = THIS_MODULE,				\
	.open = dcache_dir_open,			\
	.release = dcache_dir_close,			\
	.llseek = dcache_dir_lseek,			\
	.read = generic_read_dir,			\
	.iterate_shared = dcache_readdir,		\
	.fsync = noop_fsync,				\
	.unlocked_ioctl = morsel_dir_ioctl,		\
	.compat_ioctl = compat_ptr_ioctl

const struct file_operations morsel_dir_fops = {
	MORSEL_DIR_FOPS,
	.mmap_anon = morsel_mmap_anon,
};

static const struct file_operations morsel_pm_dir_fops = {
	MORSEL_DIR_FOPS,
};

/*
 * Every inode has an attribute list and may have ACLs (the VFS asks
 * ->get_inode_acl of any inode; a symbolic link has none to set).
 */
static const struct inode_operations morsel_dir_iops = {
	.create = morsel_create,
	.lookup = simple_lookup,
	.link = morsel_link,
	.unlink = morsel_unlink,
	.symlink = morsel_symlink,
	.mkdir = morsel_mkdir,
	.rmdir = morsel_rmdir,
	.mknod = morsel_mknod,
	.rename = morsel_rename,
	.tmpfile = morsel_tmpfile,
	.setattr = morsel_setattr,
	.getattr = morsel_getattr,
	.listxattr = morsel_listxattr,
	.get_inode_acl = morsel_get_acl,
	.set_acl = morsel_set_acl,
	.fileattr_get = morsel_fileattr_get,
	.fileattr_set = morsel_fileattr_set,
};

static const struct inode_operations morsel_file_iops = {
	.setattr = morsel_setattr,
	.getattr = morsel_getattr,
	.listxattr = morsel_listxattr,
	.get_inode_acl = morsel_get_acl,
	.set_acl = morsel_set_acl,
	.fileattr_get = morsel_fileattr_get,
	.fileattr_set = morsel_fileattr_set,
};

static const struct inode_operations morsel_symlink_iops = {
	.get_link = simple_get_link,
	.setattr = morsel_setattr,
	.getattr = morsel_getattr,
	.listxattr = morsel_listxattr,
	.get_inode_acl = morsel_get_acl,
};

static const struct inode_operations morsel_special_iops = {
	.setattr = morsel_setattr,
	.getattr = morsel_getattr,
	.listxattr = morsel_listxattr,
	.get_inode_acl = morsel_get_acl,
	.set_acl = morsel_set_acl,
};

/* ---- super block and mount options ---- */

static int morsel_statfs(struct dentry *dentry, struct kstatfs *buf)
{
	struct morsel_sb *sbi = dentry->d_sb->s_fs_info;

	simple_statfs(dentry, buf);
	if (sbi->pm) {
		u64 blocks, bfree, files, ffree;

		morsel_pm_statfs(dentry->d_sb, &blocks, &bfree, &files, &ffree);
		buf->f_blocks = blocks;
		buf->f_bfree = bfree;
		buf->f_bavail = morsel_avail_blocks(bfree);
		buf->f_files = files;
		buf->f_ffree = ffree;
	} else if (sbi->max_blocks) {
		buf->f_blocks = sbi->max_blocks;
		buf->f_bfree = sbi->max_blocks -
			min_t(long, atomic_long_read(&sbi->used),
			      sbi->max_blocks);
		buf->f_bavail = morsel_avail_blocks(buf->f_bfree);
	}
	if (sbi->max_inodes) {
		long max = (long)sbi->max_inodes * MORSEL_BOGO_INODE;

		buf->f_files = sbi->max_inodes;
		buf->f_ffree = (max - min(atomic_long_read(&sbi->ispace),
					  max)) / MORSEL_BOGO_INODE;
	}
	return 0;
}

/* huge=, with tmpfs's names (huge.c). */
static const struct constant_table morsel_huge_names[] = {
	{ "never",		MORSEL_HUGE_NEVER },
	{ "always",		MORSEL_HUGE_ALWAYS },
	{ "within_size",	MORSEL_HUGE_WITHIN_SIZE },
	{ "advise",		MORSEL_HUGE_ADVISE },
	{}
};

/* anon=: how processes' private anonymous memory is mapped (anon.c). */
static const struct constant_table morsel_anon_names[] = {
	{ "paged",	0 },
	{ "mounted",	1 },
	{}
};

/*
 * size= and nr_inodes= always; huge=, huge1g=, anon=, mpol= and mode=,
 * uid=, gid= when not the default.  A persistent instance: pmem= and huge=.
 */
static int morsel_show_options(struct seq_file *seq, struct dentry *root)
{
	struct morsel_sb *sbi = root->d_sb->s_fs_info;

	if (sbi->pm) {
		seq_puts(seq, ",pmem=");
		seq_escape(seq, morsel_pm_path(root->d_sb), ", \t\n\\");
		if (morsel_pm_share(root->d_sb))
			seq_puts(seq, ",pool");
		if (sbi->huge != MORSEL_HUGE_NEVER)
			seq_printf(seq, ",huge=%s",
				   morsel_huge_names[sbi->huge].name);
		return 0;
	}
	seq_printf(seq, ",size=%luk", sbi->max_blocks << (PAGE_SHIFT - 10));
	seq_printf(seq, ",nr_inodes=%lu", sbi->max_inodes);
	if (sbi->huge != MORSEL_HUGE_NEVER)
		seq_printf(seq, ",huge=%s",
			   morsel_huge_names[sbi->huge].name);
	if (sbi->huge1g)
		seq_printf(seq, ",huge1g=%lu", sbi->huge1g);
	if (READ_ONCE(sbi->anon_mounted))
		seq_puts(seq, ",anon=mounted");
	morsel_mpol_show(seq, &sbi->ram_ctx.mpol);
	if (sbi->mode != MORSEL_ROOT_MODE)
		seq_printf(seq, ",mode=%03ho", sbi->mode);
	if (!uid_eq(sbi->uid, GLOBAL_ROOT_UID))
		seq_printf(seq, ",uid=%u",
			   from_kuid_munged(&init_user_ns, sbi->uid));
	if (!gid_eq(sbi->gid, GLOBAL_ROOT_GID))
		seq_printf(seq, ",gid=%u",
			   from_kgid_munged(&init_user_ns, sbi->gid));
	return 0;
}

/*
 * The VFS changed an inode's times: a write's file_modified(), a read's
 * atime (without i_rwsem).  A persistent instance stores them; an inode
 * being evicted may have no record any more.
 */
static void morsel_dirty_inode(struct inode *inode, int flags)
{
	if (sb_pm(inode->i_sb) && !(inode->i_state & (I_FREEING | I_WILL_FREE)))
		morsel_pm_sync_inode(inode);
}

/*
 * sync(2), syncfs(2), and the unmount (generic_shutdown_super syncs before
 * it evicts): on ADR, every regular file's stores through mappings are
 * written back, as fsync does for one file.  Inodes are visited as
 * drop_pagecache_sb() does: a reference held across the unlocked part.
 */
static int morsel_sync_fs(struct super_block *sb, int wait)
{
	struct inode *inode, *old = NULL;
	int err = 0;

	if (!wait || !src_flushes(sb_src(sb)))
		return 0;
	spin_lock(&sb->s_inode_list_lock);
	list_for_each_entry(inode, &sb->s_inodes, i_sb_list) {
		spin_lock(&inode->i_lock);
		if ((inode->i_state & (I_FREEING | I_WILL_FREE | I_NEW)) ||
		    !S_ISREG(inode->i_mode)) {
			spin_unlock(&inode->i_lock);
			continue;
		}
		__iget(inode);
		spin_unlock(&inode->i_lock);
		spin_unlock(&sb->s_inode_list_lock);
		iput(old);
		old = inode;
		err = morsel_writeback_inode(inode, 0, U64_MAX);
		cond_resched();
		spin_lock(&sb->s_inode_list_lock);
		if (err)
			break;
	}
	spin_unlock(&sb->s_inode_list_lock);
	iput(old);
	return err;
}

static const struct super_operations morsel_sops = {
	.alloc_inode = morsel_alloc_inode,
	.free_inode = morsel_free_inode,
	.dirty_inode = morsel_dirty_inode,
	.statfs = morsel_statfs,
	.sync_fs = morsel_sync_fs,
	.drop_inode = generic_delete_inode,
	.evict_inode = morsel_evict_inode,
	.show_options = morsel_show_options,
	.shutdown = morsel_pm_shutdown,
};

enum { OPT_SIZE, OPT_NR_INODES, OPT_MODE, OPT_UID, OPT_GID, OPT_PMEM,
	OPT_HUGE, OPT_HUGE1G, OPT_ANON, OPT_MPOL, OPT_POOL };

static const struct fs_parameter_spec morsel_params[] = {
	fsparam_string("size", OPT_SIZE),
	fsparam_string("nr_inodes", OPT_NR_INODES),
	fsparam_u32oct("mode", OPT_MODE),
	fsparam_uid("uid", OPT_UID),
	fsparam_gid("gid", OPT_GID),
	fsparam_string("pmem", OPT_PMEM),
	fsparam_enum("huge", OPT_HUGE, morsel_huge_names),
	fsparam_u32("huge1g", OPT_HUGE1G),
	fsparam_enum("anon", OPT_ANON, morsel_anon_names),
	fsparam_string("mpol", OPT_MPOL),
	fsparam_flag("pool", OPT_POOL),
	{}
};

/* Options given to this mount or remount (fc->fs_private). */
struct morsel_opts {
	unsigned long blocks, inodes;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	char *pmem;
	unsigned int huge, huge1g;
	bool anon_mounted;
	struct morsel_policy *mpol;	/* NULL: default */
	bool has_blocks, has_inodes, has_mode, has_uid, has_gid, has_huge;
	bool has_huge1g, has_anon, has_mpol;
	bool pool;			/* a shared pool (pm_share.c) */
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
	switch (opt) {
	case OPT_MODE:
		o->mode = result.uint_32 & 07777;	/* as tmpfs */
		o->has_mode = true;
		return 0;
	case OPT_UID:
		if (!kuid_has_mapping(fc->user_ns, result.uid))
			return invalfc(fc, "bad value for uid");
		o->uid = result.uid;
		o->has_uid = true;
		return 0;
	case OPT_GID:
		if (!kgid_has_mapping(fc->user_ns, result.gid))
			return invalfc(fc, "bad value for gid");
		o->gid = result.gid;
		o->has_gid = true;
		return 0;
	case OPT_HUGE:
		o->huge = result.uint_32;
		o->has_huge = true;
		return 0;
	case OPT_HUGE1G:
		o->huge1g = result.uint_32;
		o->has_huge1g = true;
		return 0;
	case OPT_ANON:
		o->anon_mounted = result.uint_32;
		o->has_anon = true;
		return 0;
	case OPT_MPOL: {
		struct morsel_policy *p = morsel_mpol_parse(param->string);

		if (IS_ERR(p))
			return PTR_ERR(p) == -ENOMEM ? -ENOMEM :
			       invalfc(fc, "bad value for mpol");
		kfree(o->mpol);	/* an earlier mpol= of the same call */
		o->mpol = p;
		o->has_mpol = true;
		return 0;
	}
	case OPT_POOL:
		o->pool = true;
		return 0;
	case OPT_PMEM:
		if (fc->purpose == FS_CONTEXT_FOR_RECONFIGURE)
			return invalfc(fc, "pmem= cannot change on remount");
		kfree(o->pmem);
		o->pmem = param->string;
		param->string = NULL;
		return 0;
	}
	if (parse_number(param->string, opt == OPT_SIZE, &n))
		return invalfc(fc, "bad value for %s", param->key);
	if (opt == OPT_SIZE) {
		o->blocks = n / PAGE_SIZE + !!(n % PAGE_SIZE);
		o->has_blocks = true;
	} else {
		/* The inode space (bytes) must fit in a long. */
		if (n > LONG_MAX / MORSEL_BOGO_INODE)
			return invalfc(fc, "nr_inodes too large");
		o->inodes = n;
		o->has_inodes = true;
	}
	return 0;
}

/*
 * huge1g=: the 1 GiB reserve of a volatile instance (pool.c) takes or
 * gives back blocks until it holds @n; 1 GiB leaves are made while @n is
 * not 0.  On failure the reserve stays as it was.
 */
static int set_huge1g(struct fs_context *fc, struct morsel_sb *sbi,
		      unsigned int n)
{
	int err = morsel_pool_resize(&sbi->pool, n);

	if (err == -ENOMEM)
		errorfc(fc, "huge1g=%u: not so many free 1 GiB blocks", n);
	if (err)
		return err;
	sbi->huge1g = n;
	WRITE_ONCE(sbi->ram.huge, n ? BIT(1) | BIT(2) : BIT(1));
	return 0;
}

static int morsel_fill_super(struct super_block *sb, struct fs_context *fc)
{
	struct morsel_opts *o = fc->fs_private;
	struct morsel_sb *sbi = sb->s_fs_info;	/* morsel_get_tree's */
	struct inode *root;

	sbi->max_blocks = o->has_blocks ? o->blocks : totalram_pages() / 2;
	sbi->max_inodes = o->has_inodes ? o->inodes : totalram_pages() / 2;
	sbi->mode = o->has_mode ? o->mode : MORSEL_ROOT_MODE;
	sbi->uid = o->has_uid ? o->uid : current_fsuid();
	sbi->gid = o->has_gid ? o->gid : current_fsgid();
	sbi->huge = o->has_huge ? o->huge : MORSEL_HUGE_NEVER;
	sbi->anon_mounted = o->anon_mounted;
	if (o->has_mpol && !o->pmem) {
		morsel_mpol_set(&sbi->ram_ctx.mpol, o->mpol);
		o->mpol = NULL;
	}
	if (o->has_huge1g && !o->pmem) {
		int err = set_huge1g(fc, sbi, o->huge1g);

		if (err)
			return err;
	}

	sb->s_maxbytes = morsel_extent(pgtable_l5_enabled() ? 4 : 3);
	sb->s_blocksize = PAGE_SIZE;
	sb->s_blocksize_bits = PAGE_SHIFT;
	sb->s_magic = MORSELFS_MAGIC;
	sb->s_op = &morsel_sops;
	sb->s_xattr = morsel_xattr_handlers;
	sb->s_flags |= SB_POSIXACL;
	sb->s_time_gran = 1;
	if (o->pmem) {
		/*
		 * The device is the limit; the root's mode and owner are
		 * its own (mode=, uid=, gid= refused: morsel_get_tree).
		 */
		int err = morsel_pm_mount(sb, o->pmem, o->pool);

		if (err)
			return err;
		sbi->max_blocks = 0;
		sbi->max_inodes = 0;
		root = morsel_pm_load(sb);
		return PTR_ERR_OR_ZERO(root);
	}
	root = morsel_get_inode(sb, NULL, S_IFDIR | sbi->mode, 0);
	if (IS_ERR(root))
		return PTR_ERR(root);
	root->i_uid = sbi->uid;
	root->i_gid = sbi->gid;
	sb->s_root = d_make_root(root);
	return sb->s_root ? 0 : -ENOMEM;
}

/* The checks of the options together, for mount and remount alike. */
static bool pm_opts_bad(const struct morsel_opts *o)
{
	return o->has_blocks || o->has_inodes || o->has_mode || o->has_uid ||
	       o->has_gid;
}

/*
 * sget_fc: the instance on the device being mounted.  Under sb_lock, with
 * every morselfs super block that is not SB_DEAD, also one being killed:
 * its morsel_sb is freed after an RCU grace period (morsel_kill_sb), and
 * sget_fc then waits for SB_DEAD and looks again.
 */
static int pm_sb_test(struct super_block *sb, struct fs_context *fc)
{
	struct morsel_sb *sbi = sb->s_fs_info;

	return sbi->pm_dev && sbi->pm_dev == *(dev_t *)fc->sget_key;
}

/*
 * A persistent instance: the one its device already has, or a new one
 * (get_tree_bdev's steps with an anonymous st_dev, as get_tree_nodev's,
 * so that kill_litter_super frees what set_anon_super took).  The new
 * super block is found by pm_sb_test from the moment sget_fc makes it
 * visible, so a concurrent mount of the same device waits for it.
 */
static int get_pm_tree(struct fs_context *fc, const char *path)
{
	struct morsel_sb *sbi = fc->s_fs_info;
	struct super_block *sb;
	dev_t dev;
	int err;

	err = lookup_bdev(path, &dev);
	if (err)
		return err;
	sbi->pm_dev = dev;
	fc->sget_key = &dev;
	sb = sget_fc(fc, pm_sb_test, set_anon_super_fc);
	fc->sget_key = NULL;
	if (IS_ERR(sb))
		return PTR_ERR(sb);
	if (sb->s_root) {
		if ((fc->sb_flags ^ sb->s_flags) & SB_RDONLY) {
			deactivate_locked_super(sb);
			errorfc(fc, "%s is mounted with another read-only state", path);
			return -EBUSY;
		}
	} else {
		err = morsel_fill_super(sb, fc);
		if (err) {
			deactivate_locked_super(sb);
			return err;
		}
		sb->s_flags |= SB_ACTIVE;
	}
	fc->root = dget(sb->s_root);
	return 0;
}

static int morsel_get_tree(struct fs_context *fc)
{
	struct morsel_opts *o = fc->fs_private;
	struct morsel_sb *sbi;

	/*
	 * A source that is a path names the device, as for a disk file
	 * system: "mount -t morselfs /dev/pmem0 /mnt" is "-o pmem=/dev/pmem0"
	 * (fstests mounts, unmounts and checks a device so).  Any other
	 * source ("none", "morselfs") is only a name, as for tmpfs.
	 */
	if (fc->source && fc->source[0] == '/') {
		if (o->pmem && strcmp(o->pmem, fc->source))
			return invalfc(fc, "pmem= and the source name two devices");
		if (!o->pmem) {
			o->pmem = kstrdup(fc->source, GFP_KERNEL);
			if (!o->pmem)
				return -ENOMEM;
		}
	}
	/*
	 * As on remount: a persistent instance's limit is its device and its
	 * root's mode and owner are on it.  Ignored here, such options would
	 * make a later remount with the fstab line's options fail.
	 */
	if (o->pmem && pm_opts_bad(o))
		return invalfc(fc, "pmem: no size=, nr_inodes=, mode=, uid= or gid=");
	if (o->pmem && o->has_huge1g)
		return invalfc(fc, "pmem: no huge1g= (1 GiB leaves are RAM's)");
	if (o->pmem && o->has_anon)
		return invalfc(fc, "pmem: no anon= (anonymous memory is RAM's)");
	if (o->pmem && o->has_mpol)
		return invalfc(fc, "pmem: no mpol= (a device's pages are where it is)");
	if (o->pool && !o->pmem)
		return invalfc(fc, "pool: only with pmem= (a shared pool is a device)");
	/*
	 * The instance's morsel_sb goes to sget_fc, which makes it
	 * s_fs_info under sb_lock (pm_sb_test reads it there), or stays
	 * here for morsel_free_fc when an existing instance is found.
	 */
	sbi = kzalloc(sizeof(*sbi), GFP_KERNEL);
	if (!sbi)
		return -ENOMEM;
	morsel_pool_init(&sbi->pool);
	sbi->ram_ctx.pool = &sbi->pool;
	morsel_ram_source_init(&sbi->ram, &sbi->ram_ctx);
	sbi->src = &sbi->ram;	/* a device's replaces it (pm.c) */
	fc->s_fs_info = sbi;
	if (o->pmem)
		return get_pm_tree(fc, o->pmem);
	return get_tree_nodev(fc, morsel_fill_super);
}

/*
 * remount: new limits, never below what is in use (-EINVAL); mode=, uid=
 * and gid= change the root directory (of the instance, also when the
 * mount is a bind mount of a subdirectory); mpol= places what is
 * allocated from then on (pages already there stay).  None of them on a
 * persistent instance (-EINVAL).
 */
static int morsel_reconfigure(struct fs_context *fc)
{
	struct super_block *sb = fc->root->d_sb;
	struct morsel_sb *sbi = sb->s_fs_info;
	struct morsel_opts *o = fc->fs_private;
	struct inode *root = d_inode(sb->s_root);

	/*
	 * A persistent instance: the device is the limit, and the root
	 * directory's mode and owner are on the device (chmod, chown); a
	 * remount that set them in memory would be undone by the next mount.
	 */
	if (sbi->pm && pm_opts_bad(o))
		return invalfc(fc, "pmem: no size=, nr_inodes=, mode=, uid= or gid=");
	if (sbi->pm && o->has_huge1g)
		return invalfc(fc, "pmem: no huge1g= (1 GiB leaves are RAM's)");
	if (sbi->pm && o->has_anon)
		return invalfc(fc, "pmem: no anon= (anonymous memory is RAM's)");
	if (sbi->pm && o->has_mpol)
		return invalfc(fc, "pmem: no mpol= (a device's pages are where it is)");
	if (o->pool && !(sbi->pm && morsel_pm_share(sb)))
		return invalfc(fc, "pool: only when mounting");
	/* A reader of a shared pool has no claim to write it. */
	if (morsel_pm_reader(sb) && (fc->sb_flags_mask & SB_RDONLY) &&
	    !(fc->sb_flags & SB_RDONLY))
		return invalfc(fc, "a pool reader stays read-only");
	if (o->has_blocks && o->blocks &&
	    o->blocks < atomic_long_read(&sbi->used))
		return invalfc(fc, "size below the space in use");
	if (o->has_inodes && o->inodes &&
	    (long)o->inodes * MORSEL_BOGO_INODE <
	    atomic_long_read(&sbi->ispace))
		return invalfc(fc, "nr_inodes below the inodes in use");
	/* The one change that can fail, before the others. */
	if (o->has_huge1g) {
		int err = set_huge1g(fc, sbi, o->huge1g);

		if (err)
			return err;
	}
	if (o->has_blocks)
		WRITE_ONCE(sbi->max_blocks, o->blocks);
	if (o->has_inodes)
		WRITE_ONCE(sbi->max_inodes, o->inodes);
	if (o->has_huge)
		WRITE_ONCE(sbi->huge, o->huge);
	if (o->has_anon)	/* for mappings made from now on */
		WRITE_ONCE(sbi->anon_mounted, o->anon_mounted);
	if (o->has_mpol) {	/* for allocations from now on */
		morsel_mpol_set(&sbi->ram_ctx.mpol, o->mpol);
		o->mpol = NULL;
	}
	if (!o->has_mode && !o->has_uid && !o->has_gid)
		return 0;
	inode_lock(root);
	if (o->has_mode) {
		sbi->mode = o->mode;
		root->i_mode = S_IFDIR | o->mode;
	}
	if (o->has_uid) {
		sbi->uid = o->uid;
		root->i_uid = o->uid;
	}
	if (o->has_gid) {
		sbi->gid = o->gid;
		root->i_gid = o->gid;
	}
	inode_set_ctime_current(root);
	inode_unlock(root);
	return 0;
}

static void morsel_free_fc(struct fs_context *fc)
{
	struct morsel_opts *o = fc->fs_private;

	if (o) {
		kfree(o->pmem);
		kfree(o->mpol);	/* not taken: the mount or remount failed */
	}
	kfree(o);
	kfree(fc->s_fs_info);	/* unused: the device had an instance */
}

/*
 * mount(2)'s option string, split at commas but where mpol='s node list
 * goes on ("mpol=bind:0,2,size=1g"), as tmpfs splits it.
 */
static char *next_option(char **s)
{
	char *start = *s, *p = start;

	if (!start)
		return NULL;
	for (;;) {
		p = strchr(p, ',');
		if (!p) {
			*s = NULL;
			return start;
		}
		if (strncmp(start, "mpol=", 5) || !isdigit(p[1]))
			break;
		p++;
	}
	*p = '\0';
	*s = p + 1;
	return start;
}

static int morsel_parse_monolithic(struct fs_context *fc, void *data)
{
	return vfs_parse_monolithic_sep(fc, data, next_option);
}

static const struct fs_context_operations morsel_context_ops = {
	.parse_param = morsel_parse_param,
	.parse_monolithic = morsel_parse_monolithic,
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

	/* A pool reader's names are not pinned (pm_share.c). */
	if (morsel_pm_reader(sb))
		kill_anon_super(sb);
	else
		kill_litter_super(sb);
	morsel_pm_unmount(sb);
	morsel_pool_destroy(&sbi->pool);
	morsel_mpol_free(&sbi->ram_ctx.mpol);
	kfree_rcu(sbi, rcu);	/* pm_sb_test may still read it */
}

/* Also memerr.c's, which searches every instance for a failed page. */
struct file_system_type morselfs_type = {
	.owner = THIS_MODULE,
	.name = "morselfs",
	.init_fs_context = morsel_init_fs_context,
	.parameters = morsel_params,
	.kill_sb = morsel_kill_sb,
};

static void morsel_inode_init_once(void *p)
{
	inode_init_once(&((struct morsel_inode *)p)->vfs_inode);
}

int morselfs_register(void)
{
	int err;

	morsel_inode_cachep = kmem_cache_create("morsel_inode_cache",
						sizeof(struct morsel_inode), 0,
						SLAB_RECLAIM_ACCOUNT | SLAB_ACCOUNT,
						morsel_inode_init_once);
	if (!morsel_inode_cachep)
		return -ENOMEM;
	err = register_filesystem(&morselfs_type);
	if (err)
		kmem_cache_destroy(morsel_inode_cachep);
	return err;
}

void morselfs_unregister(void)
{
	unregister_filesystem(&morselfs_type);
	rcu_barrier();	/* inodes still waiting for morsel_free_inode */
	kmem_cache_destroy(morsel_inode_cachep);
}
