// SPDX-License-Identifier: GPL-2.0
/*
 * Extended attributes and POSIX ACLs of morselfs inodes.
 *
 * Extended attributes, as tmpfs has them: the user., trusted. and
 * security. namespaces (the VFS checks who may use which, and allows
 * user.* on regular files and directories only), kept per inode in a
 * struct simple_xattrs with the kernel's simple_xattr_*() helpers, as
 * tmpfs does (kernel patch 0008 exports them), and freed when the inode
 * is evicted.  Each takes its space from nr_inodes= (fs.c: inode space),
 * and a persistent instance writes an inode's whole list to one device
 * page (pm.c).
 *
 * POSIX ACLs, as tmpfs has them (an access ACL on any inode but a symbolic
 * link, a default ACL on directories, inherited at creation, the umask
 * applied only where no default ACL is, chmod rewriting the ACL's mask).
 * The VFS keeps the ACLs it has read in the inode (i_acl, i_default_acl)
 * and calls ->set_acl to change one.  Here each is also an attribute of the
 * list, "system.posix_acl_access" or "system.posix_acl_default" in the
 * xattr format (posix_acl_to_xattr), which ->get_inode_acl parses when the
 * VFS has none cached.  So one list is the truth on both kinds of instance,
 * and a persistent instance keeps ACLs with no code of its own.  tmpfs
 * keeps them only in the VFS's cache (its inodes live as long as their
 * files); storing them costs an ACL its bytes of inode space.  Listing
 * (listxattr) is done here, not by simple_xattr_list(): that one lists the
 * VFS's ACLs and then the list, which would name each ACL twice.
 *
 * Locking: the VFS's.  It holds the inode lock (i_rwsem) around setting
 * or removing an attribute and around ->set_acl; a new inode (creation)
 * is not yet visible to anyone.  Each inode's list has its own rwlock
 * (struct simple_xattrs) for the readers the VFS does not lock: get,
 * list, and ->get_inode_acl, which runs without the inode lock and so may
 * see an ACL change size between its two reads (it reads again).
 */
#include <linux/fs.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <linux/rbtree.h>
#include <linux/security.h>
#include <linux/slab.h>
#include <linux/xattr.h>

#include "morsel.h"
#include "morsel_pm.h"

#ifndef CONFIG_FS_POSIX_ACL
#error "morselfs needs CONFIG_FS_POSIX_ACL"
#endif

/*
 * Set @name (the full name) to @value, or (!@value) remove it.  A new
 * value takes inode space first (-ENOSPC past nr_inodes=), the old one
 * gives its space back.  A persistent instance first gets the page the
 * new list goes to (-ENOSPC past one page per inode, or a full device),
 * and commits it once the list changed (pm.c).  The inode's ctime becomes
 * now, and a persistent instance writes the inode's record.
 */
static int morsel_xattr_store(struct inode *inode, const char *name,
			      const void *value, size_t size, int flags)
{
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;
	struct simple_xattrs *xs = &MORSEL_I(inode)->xattrs;
	struct simple_xattr *old;
	long space = 0;
	u64 page = 0;
	int err;

	if (sbi->pm) {
		err = morsel_pm_xattrs_begin(inode, xs, name, value, size, &page);
		if (err)
			return err;
	}
	if (value) {
		space = simple_xattr_space(name, size);
		err = morsel_ispace_charge(sbi, space);
		if (err)
			goto abort;
	}
	old = simple_xattr_set(xs, name, value, size, flags);
	if (IS_ERR(old)) {
		morsel_ispace_uncharge(sbi, space);
		err = PTR_ERR(old);
		goto abort;
	}
	if (sbi->pm)
		morsel_pm_xattrs_commit(inode, xs, page);
	if (old) {
		morsel_ispace_uncharge(sbi, simple_xattr_space(old->name, old->size));
		simple_xattr_free(old);
	}
	inode_set_ctime_current(inode);
	if (sbi->pm)
		morsel_pm_sync_inode(inode);
	return 0;
abort:
	if (sbi->pm)
		morsel_pm_xattrs_abort(inode, page);
	return err;
}

/*
 * listxattr: the LSM's label, then every attribute of the list (the ACLs
 * among them), trusted.* only for root, as simple_xattr_list() does.
 */
ssize_t morsel_listxattr(struct dentry *dentry, char *buffer, size_t size)
{
	struct inode *inode = d_inode(dentry);
	struct simple_xattrs *xs = &MORSEL_I(inode)->xattrs;
	bool trusted = ns_capable_noaudit(&init_user_ns, CAP_SYS_ADMIN);
	struct rb_node *n;
	ssize_t used;

	used = security_inode_listsecurity(inode, buffer, size);
	if (used < 0)
		return used;
	if (buffer && used > size)
		return -ERANGE;
	read_lock(&xs->lock);
	for (n = rb_first(&xs->rb_root); n; n = rb_next(n)) {
		struct simple_xattr *x = rb_entry(n, struct simple_xattr, rb_node);
		size_t len = strlen(x->name) + 1;

		if (!trusted && !strncmp(x->name, XATTR_TRUSTED_PREFIX,
					 XATTR_TRUSTED_PREFIX_LEN))
			continue;
		/* the LSM's label, which it listed above */
		if (!strncmp(x->name, XATTR_SECURITY_PREFIX,
			     XATTR_SECURITY_PREFIX_LEN) &&
		    security_ismaclabel(x->name + XATTR_SECURITY_PREFIX_LEN))
			continue;
		if (buffer) {
			if (used + len > size) {
				used = -ERANGE;
				break;
			}
			memcpy(buffer + used, x->name, len);
		}
		used += len;
	}
	read_unlock(&xs->lock);
	return used;
}

static int morsel_xattr_get(const struct xattr_handler *handler,
			    struct dentry *unused, struct inode *inode,
			    const char *name, void *buffer, size_t size)
{
	return simple_xattr_get(&MORSEL_I(inode)->xattrs,
				xattr_full_name(handler, name), buffer, size);
}

static int morsel_xattr_set(const struct xattr_handler *handler,
			    struct mnt_idmap *idmap, struct dentry *unused,
			    struct inode *inode, const char *name,
			    const void *value, size_t size, int flags)
{
	return morsel_xattr_store(inode, xattr_full_name(handler, name), value,
				  size, flags);
}

/* An attribute a persistent mount loads: its inode space (no limit). */
int morsel_xattr_load(struct inode *inode, const char *name, size_t len,
		      const void *value, size_t size)
{
	struct morsel_sb *sbi = inode->i_sb->s_fs_info;
	struct simple_xattr *old;
	char *n = kstrndup(name, len, GFP_KERNEL);

	if (!n)
		return -ENOMEM;
	old = simple_xattr_set(&MORSEL_I(inode)->xattrs, n, value, size,
			       XATTR_CREATE);
	if (!IS_ERR(old))
		atomic_long_add(simple_xattr_space(n, size), &sbi->ispace);
	kfree(n);
	return PTR_ERR_OR_ZERO(old);
}

static const struct xattr_handler morsel_security_xattr_handler = {
	.prefix = XATTR_SECURITY_PREFIX,
	.get = morsel_xattr_get,
	.set = morsel_xattr_set,
};

static const struct xattr_handler morsel_trusted_xattr_handler = {
	.prefix = XATTR_TRUSTED_PREFIX,
	.get = morsel_xattr_get,
	.set = morsel_xattr_set,
};

static const struct xattr_handler morsel_user_xattr_handler = {
	.prefix = XATTR_USER_PREFIX,
	.get = morsel_xattr_get,
	.set = morsel_xattr_set,
};

/* system.posix_acl_* go to ->get_inode_acl and ->set_acl (the VFS). */
const struct xattr_handler * const morsel_xattr_handlers[] = {
	&morsel_security_xattr_handler,
	&morsel_trusted_xattr_handler,
	&morsel_user_xattr_handler,
	NULL
};

/* ---- POSIX ACLs ---- */

static const char *acl_name(int type)
{
	return type == ACL_TYPE_ACCESS ? XATTR_NAME_POSIX_ACL_ACCESS :
					 XATTR_NAME_POSIX_ACL_DEFAULT;
}

/* ->get_inode_acl: the ACL of @type from the list; NULL if there is none. */
struct posix_acl *morsel_get_acl(struct inode *inode, int type, bool rcu)
{
	struct simple_xattrs *xs = &MORSEL_I(inode)->xattrs;
	struct posix_acl *acl = NULL;
	void *value;
	int size;

	if (rcu)
		return ERR_PTR(-ECHILD);	/* the VFS asks again, may sleep */
	do {
		size = simple_xattr_get(xs, acl_name(type), NULL, 0);
		if (size == -ENODATA)
			return NULL;
		if (size < 0)
			return ERR_PTR(size);
		value = kmalloc(size, GFP_KERNEL);
		if (!value)
			return ERR_PTR(-ENOMEM);
		size = simple_xattr_get(xs, acl_name(type), value, size);
		if (size >= 0)
			acl = posix_acl_from_xattr(&init_user_ns, value, size);
		kfree(value);
	} while (size == -ERANGE);	/* it grew since we asked its size */
	if (size == -ENODATA)
		return NULL;
	return size < 0 ? ERR_PTR(size) : acl;
}

/* Store @acl (NULL: none) of @type in @inode's list. */
static int acl_store(struct inode *inode, int type, struct posix_acl *acl)
{
	void *value = NULL;
	size_t size = 0;
	int err;

	if (acl) {
		size = posix_acl_xattr_size(acl->a_count);
		value = kmalloc(size, GFP_KERNEL);
		if (!value)
			return -ENOMEM;
		err = posix_acl_to_xattr(&init_user_ns, acl, value, size);
		if (err < 0)
			goto out;
	}
	err = morsel_xattr_store(inode, acl_name(type), value, size, 0);
	if (err == -ENODATA)	/* removing an ACL it did not have */
		err = 0;
out:
	kfree(value);
	return err;
}

/*
 * ->set_acl (setfacl, chmod through posix_acl_chmod()): an access ACL that
 * says no more than the mode becomes the mode alone; then the list, the
 * mode and the VFS's copy change together, or nothing does.
 */
int morsel_set_acl(struct mnt_idmap *idmap, struct dentry *dentry,
		   struct posix_acl *acl, int type)
{
	struct inode *inode = d_inode(dentry);
	umode_t mode = inode->i_mode;
	int err;

	if (type == ACL_TYPE_ACCESS && acl) {
		err = posix_acl_update_mode(idmap, inode, &inode->i_mode, &acl);
		if (err)
			return err;
	}
	err = acl_store(inode, type, acl);	/* writes the record with the mode */
	if (err) {
		inode->i_mode = mode;
		return err;
	}
	set_cached_acl(inode, type, acl);
	return 0;
}

/*
 * A new inode's ACLs, as posix_acl_create() made them from its directory's
 * default ACL (fs.c: before the inode, as they shape its mode): stored,
 * after a persistent instance wrote the inode's record, and cached (the
 * caller keeps its references).  Return: 0, -ENOSPC or -ENOMEM.
 */
int morsel_acl_store_new(struct inode *inode, struct posix_acl *dacl,
			 struct posix_acl *acl)
{
	int err = 0;

	if (dacl)
		err = acl_store(inode, ACL_TYPE_DEFAULT, dacl);
	if (!err && acl)
		err = acl_store(inode, ACL_TYPE_ACCESS, acl);
	if (!err) {
		set_cached_acl(inode, ACL_TYPE_DEFAULT, dacl);
		set_cached_acl(inode, ACL_TYPE_ACCESS, acl);
	}
	return err;
}
