// SPDX-License-Identifier: GPL-2.0
/*
 * The MORSEL_IOC_* ioctls (include/uapi/linux/morsel.h).
 *
 * Every argument is a struct of __u64 fields; flags and reserved fields
 * must be zero (-EINVAL otherwise), unknown commands give -ENOTTY.
 * Operations that change the morsel (populate, fill, evict, collapse, bind, set
 * the minimum order, the huge-page mode or the placement policy, move
 * pages to another node, read and clear accessed bits) need a
 * file opened for writing
 * (-EBADF otherwise) and one not immutable (-EPERM); of an append-only
 * file, only populate.
 *
 * MORSEL_IOC_CREATE is the one ioctl of a directory: it makes an unnamed
 * morsel (fs.c morsel_create_unnamed) and installs its descriptor last,
 * once nothing can fail.
 *
 * Locking: arguments are copied in before any lock is taken (a user
 * buffer may fault slowly, e.g. under userfaultfd).  POPULATE holds the
 * inode lock shared (faults populate concurrently, lock-free), and so
 * does FILL, after updating the times under it exclusive (it writes, as
 * pwrite does; the source's own locks nest inside ours, and a source on
 * morselfs, whose locks are of our class, is refused); EVICT,
 * COLLAPSE, MIGRATE (file.c), SET_HUGE and SET_MPOL hold it exclusive (mpol.c
 * keeps a replaced policy until allocations that read it are done;
 * GET_MPOL reads under its SRCU), and so does
 * SET_MIN_ORDER (size.c); ACCESSED holds it shared and m->lock per
 * 32 MiB, copying out between; STAT, BIND, NODE_PAGES
 * and MAPPINGS hold m->lock, which keeps
 * the list of mappings and every VMA on it alive; MAPPINGS copies out only
 * after dropping it (a fault on the buffer takes mmap_lock, which nests
 * outside m->lock).
 */
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/fsnotify.h>
#include <linux/mman.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "morsel.h"
#include "morsel_pm.h"

static bool all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/*
 * May the caller learn how other processes use the morsel (how many map
 * it, and where)?  mincore(2)'s rule since Linux 5.0 (can_do_mincore):
 * only for a file it owns or could open for writing, and here also
 * through a descriptor open for writing (a writer may change the file
 * anyway).  A reader of a file others share, such as a copy morsel-cached
 * hands to every user who may read the source, sees its own mappings only
 * (review 2026-11b L9).  CAP_SYS_PTRACE sees everything (MAPPINGS
 * describes it all anyway).
 */
static bool sees_others(struct file *file)
{
	return (file->f_mode & FMODE_WRITE) ||
	       inode_owner_or_capable(file_mnt_idmap(file), file_inode(file)) ||
	       file_permission(file, MAY_WRITE) == 0 ||
	       ns_capable_noaudit(&init_user_ns, CAP_SYS_PTRACE);
}

/* The caller's own mappings of @m.  Under m->lock. */
static u64 own_maps(struct morsel *m)
{
	struct morsel_map *map;
	u64 n = 0, i = 0;

	list_for_each_entry(map, &m->maps, node) {
		n += map->vma->vm_mm == current->mm;
		if (!(++i % 256))
			cond_resched();
	}
	return n;
}

static long ioc_stat(struct morsel *m, struct file *file,
		     struct morsel_stat __user *arg)
{
	struct inode *inode = file_inode(file);
	bool others = sees_others(file);
	struct morsel_stat st;
	int i;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	if (st.flags || !all_zero(st.reserved, sizeof(st.reserved)))
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	mutex_lock(&m->lock);
	st.order = m->order;
	st.extent = morsel_extent(m->order);
	st.size = i_size_read(inode);
	st.pages = atomic_long_read(&m->nr_pages);
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		st.tables[i] = atomic_long_read(&m->nr_tables[i]);
	st.mappings = others ? m->nr_maps : own_maps(m);
	st.bound = m->bound;
	st.min_order = m->min_order;
	st.huge = atomic_long_read(&m->nr_huge);
	st.huge1g = atomic_long_read(&m->nr_huge1g);
	st.huge_mode = morsel_huge_mode(m);
	mutex_unlock(&m->lock);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

/* Check a range: page aligned, non-empty, inside the file; @flags allowed. */
static long check_range(struct inode *inode, const struct morsel_range *r,
			u64 flags)
{
	if ((r->flags & ~flags) || !all_zero(r->reserved, sizeof(r->reserved)))
		return -EINVAL;
	if (!r->length || !PAGE_ALIGNED(r->offset) || !PAGE_ALIGNED(r->length))
		return -EINVAL;
	if (r->offset + r->length < r->offset ||
	    r->offset + r->length > PAGE_ALIGN(i_size_read(inode)))
		return -EINVAL;
	return 0;
}

/*
 * POPULATE, EVICT or COLLAPSE a checked range, under the locks named at
 * the top.  EVICT changes the contents as a hole punch does: it updates
 * mtime and ctime, drops setuid/setgid (file_modified) and tells fsnotify.
 * COLLAPSE changes where the contents live, not what they are.
 */
static long ioc_range(struct morsel *m, struct file *file, struct inode *inode,
		      struct morsel_range __user *arg, unsigned int cmd)
{
	bool evict = cmd == MORSEL_IOC_EVICT, shared = cmd == MORSEL_IOC_POPULATE;
	struct morsel_range r;
	long err;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (shared)
		inode_lock_shared(inode);
	else
		inode_lock(inode);
	err = check_range(inode, &r, shared ? MORSEL_POPULATE_HUGE : 0);
	if (!err && cmd == MORSEL_IOC_COLLAPSE) {
		err = morsel_collapse_range(inode, r.offset, r.offset + r.length);
	} else if (!err && evict) {
		err = file_modified(file);
		if (!err)
			err = morsel_evict(inode, i_size_read(inode), r.offset,
					   min_t(u64, r.offset + r.length,
						 i_size_read(inode)));
		if (!err)
			fsnotify_modify(file);
	} else if (!err) {
		/* Populating a clone's range makes it this file's own. */
		err = morsel_unshare_range(m, r.offset, r.offset + r.length,
					   MORSEL_UNSHARE_DATA) ?:
		      morsel_populate_range(m, r.offset, r.offset + r.length,
					    r.flags & MORSEL_POPULATE_HUGE ?
					    MORSEL_HINT_ADVISED :
					    MORSEL_HINT_NONE);
	}
	if (shared)
		inode_unlock_shared(inode);
	else
		inode_unlock(inode);
	return err;
}

/*
 * FILL: read another file into a checked range (tree.c morsel_fill_range),
 * as a pread into a mapping of it would.
 */
static long ioc_fill(struct morsel *m, struct file *file, struct inode *inode,
		     struct morsel_fill __user *arg)
{
	struct morsel_range r = {};
	struct morsel_fill f;
	struct inode *sinode;
	struct file *src;
	u64 done = 0;
	long err;

	if (copy_from_user(&f, arg, sizeof(f)))
		return -EFAULT;
	if (f.flags || f.filled || !all_zero(f.reserved, sizeof(f.reserved)) ||
	    !PAGE_ALIGNED(f.src_offset) || f.src_offset > (u64)LLONG_MAX)
		return -EINVAL;
	if (!src_has_raw(m->src))
		return -EOPNOTSUPP;
	src = fget(f.fd);
	if (!src)
		return -EBADF;
	sinode = file_inode(src);
	err = -EBADF;
	if (!(src->f_mode & FMODE_READ))
		goto out;
	err = -EINVAL;
	if (!S_ISREG(sinode->i_mode) || sinode->i_sb->s_magic == MORSELFS_MAGIC)
		goto out;
	r.offset = f.offset;
	r.length = f.length;
	inode_lock(inode);
	err = check_range(inode, &r, 0) ?: file_modified(file);
	inode_unlock(inode);
	if (err)
		goto out;
	inode_lock_shared(inode);
	err = check_range(inode, &r, 0) ?:
	      morsel_unshare_range(m, r.offset, r.offset + r.length,
				   MORSEL_UNSHARE_DATA) ?:
	      morsel_fill_range(m, r.offset, r.offset + r.length, src,
				f.src_offset, &done);
	inode_unlock_shared(inode);
	if (done)
		fsnotify_modify(file);
	if (put_user(done, &arg->filled) && !err)
		err = -EFAULT;
out:
	fput(src);
	return err;
}

/*
 * The file's own huge-page mode (huge.c); a device keeps it in the
 * record (pm_format.h, format 3).  A source without 2 MiB blocks (a
 * device that is not 2 MiB aligned) takes only never and inherit.
 */
static long ioc_set_huge(struct inode *inode, struct morsel *m,
			 struct morsel_huge __user *arg)
{
	struct morsel_huge h;

	if (copy_from_user(&h, arg, sizeof(h)))
		return -EFAULT;
	if (h.flags || !all_zero(h.reserved, sizeof(h.reserved)) ||
	    h.mode > MORSEL_HUGE_INHERIT)
		return -EINVAL;
	if (!src_has_huge(m->src, 1) && h.mode != MORSEL_HUGE_NEVER &&
	    h.mode != MORSEL_HUGE_INHERIT)
		return -EOPNOTSUPP;
	inode_lock(inode);
	WRITE_ONCE(m->huge, h.mode);
	if (sb_pm(inode->i_sb))
		morsel_pm_set_flags(inode);
	inode_unlock(inode);
	return 0;
}

/*
 * The file's own placement policy (mpol.c).  A device's pages are where
 * the device is: -EOPNOTSUPP there, as for mpol=.
 */
static long ioc_set_mpol(struct inode *inode, struct morsel *m,
			 struct morsel_mpol __user *arg)
{
	struct morsel_policy *p;
	struct morsel_mpol u;

	if (copy_from_user(&u, arg, sizeof(u)))
		return -EFAULT;
	if (u.flags || !all_zero(u.reserved, sizeof(u.reserved)))
		return -EINVAL;
	if (m->pm)
		return -EOPNOTSUPP;
	p = morsel_mpol_from_user(&u);
	if (IS_ERR(p))
		return PTR_ERR(p);
	inode_lock(inode);
	morsel_mpol_set(&m->place.own, p);
	inode_unlock(inode);
	return 0;
}

static long ioc_get_mpol(struct morsel *m, struct morsel_mpol __user *arg)
{
	struct morsel_mpol u;

	if (copy_from_user(&u, arg, sizeof(u)))
		return -EFAULT;
	if (u.flags || !all_zero(u.reserved, sizeof(u.reserved)))
		return -EINVAL;
	morsel_mpol_to_user(&m->place.own, &u);
	return copy_to_user(arg, &u, sizeof(u)) ? -EFAULT : 0;
}

/*
 * A range of NODE_PAGES, MIGRATE or ACCESSED: page aligned and not
 * wrapping (@length 0: to the end of the file).
 */
static bool open_range_ok(u64 offset, u64 length)
{
	return PAGE_ALIGNED(offset) && PAGE_ALIGNED(length) &&
	       offset + length >= offset;
}

/*
 * Its end under the inode lock: @length 0 reaches the file's size
 * rounded up to a page.  Return: 0, or -EINVAL past that size.
 */
static int open_range_end(struct inode *inode, u64 offset, u64 length,
			  u64 *end)
{
	u64 size = PAGE_ALIGN(i_size_read(inode));

	*end = length ? offset + length : max(size, offset);
	return *end > size ? -EINVAL : 0;
}

/* Populated pages of a range by node; length 0: to the end of the file. */
static long ioc_node_pages(struct morsel *m,
			   struct morsel_node_pages __user *arg)
{
	struct morsel_node_pages *np;
	u64 end;
	long err;

	np = kmalloc(sizeof(*np), GFP_KERNEL);
	if (!np)
		return -ENOMEM;
	err = -EFAULT;
	if (copy_from_user(np, arg, sizeof(*np)))
		goto out;
	err = -EINVAL;
	if (np->flags || !all_zero(np->reserved, sizeof(np->reserved)) ||
	    !open_range_ok(np->offset, np->length))
		goto out;
	end = np->length ? np->offset + np->length : U64_MAX;
	memset(np->pages, 0, sizeof(np->pages));
	err = morsel_count_nodes(m, np->offset, end, np->pages,
				 MORSEL_MAX_NODES);
	if (!err && copy_to_user(arg, np, sizeof(*np)))
		err = -EFAULT;
out:
	kfree(np);
	return err;
}

/*
 * Move a range's pages to a node (file.c morsel_migrate_range).  The node
 * must have memory; a device's pages stay where the device is.
 */
static long ioc_migrate(struct inode *inode, struct morsel *m,
			struct morsel_migrate __user *arg)
{
	unsigned long *bits = NULL;
	struct morsel_migrate r;
	u64 end, size;
	long err;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (r.flags || !all_zero(r.reserved, sizeof(r.reserved)) ||
	    r.node >= MAX_NUMNODES || !node_state(r.node, N_MEMORY) ||
	    !open_range_ok(r.offset, r.length) ||
	    (r.bitmap && (!r.length || r.length > MORSEL_MIGRATE_BITMAP_MAX)))
		return -EINVAL;
	if (m->pm)
		return -EOPNOTSUPP;
	/* Copied in before any lock: the buffer may be a morsel's. */
	if (r.bitmap) {
		size = DIV_ROUND_UP(r.length >> PAGE_SHIFT, 64) * 8;
		bits = kvmalloc(size, GFP_KERNEL);
		if (!bits)
			return -ENOMEM;
		if (copy_from_user(bits, u64_to_user_ptr(r.bitmap), size)) {
			kvfree(bits);
			return -EFAULT;
		}
	}
	/* Out only: whatever the caller left there is not added to. */
	r.moved = 0;
	r.pinned = 0;
	r.shared = 0;
	r.failed = 0;
	inode_lock(inode);
	err = open_range_end(inode, r.offset, r.length, &end) ?:
	      morsel_migrate_range(inode, r.offset, end, r.node, bits, &r);
	inode_unlock(inode);
	kvfree(bits);
	if (copy_to_user(arg, &r, sizeof(r)))
		err = err ?: -EFAULT;
	return err;
}

/* Pages per m->lock hold and per copy of the bitmap (1 KiB of it). */
#define ACCESSED_CHUNK	8192UL

/*
 * Read (and with MORSEL_ACCESSED_CLEAR clear) the accessed bits of a
 * range's leaves (tree.c morsel_scan_accessed).  A device's leaves are
 * only read: its stores go through its log (-EOPNOTSUPP for CLEAR).
 */
static long ioc_accessed(struct inode *inode, struct morsel *m,
			 struct morsel_accessed __user *arg)
{
	unsigned long *bits = NULL;
	struct morsel_accessed a;
	u64 off, stop, end, n;
	long err = 0;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~MORSEL_ACCESSED_CLEAR) ||
	    !all_zero(a.reserved, sizeof(a.reserved)) ||
	    !open_range_ok(a.offset, a.length))
		return -EINVAL;
	if (m->pm && (a.flags & MORSEL_ACCESSED_CLEAR))
		return -EOPNOTSUPP;
	a.accessed = 0;
	a.populated = 0;
	if (a.bitmap) {
		bits = kmalloc(ACCESSED_CHUNK / 8, GFP_KERNEL);
		if (!bits)
			return -ENOMEM;
	}
	inode_lock_shared(inode);
	err = open_range_end(inode, a.offset, a.length, &end);
	for (off = a.offset; !err && off < end; off = stop) {
		stop = min(end, off + (ACCESSED_CHUNK << PAGE_SHIFT));
		n = (stop - off) >> PAGE_SHIFT;
		if (bits)
			bitmap_zero(bits, n);
		mutex_lock(&m->lock);
		morsel_scan_accessed(m, off, stop,
				     a.flags & MORSEL_ACCESSED_CLEAR, bits,
				     &a.accessed, &a.populated);
		mutex_unlock(&m->lock);
		if (bits &&
		    copy_to_user(u64_to_user_ptr(a.bitmap) +
				 ((off - a.offset) >> PAGE_SHIFT) / 8, bits,
				 DIV_ROUND_UP(n, 64) * 8))
			err = -EFAULT;
		else if (fatal_signal_pending(current))
			err = -EINTR;
	}
	inode_unlock_shared(inode);
	kfree(bits);
	atomic_long_add(a.populated, &morsel_stat_scanned);
	if (!err && copy_to_user(arg, &a, sizeof(a)))
		err = -EFAULT;
	return err;
}

static long ioc_min_order(struct inode *inode,
			  struct morsel_min_order __user *arg)
{
	struct morsel_min_order o;
	long err;

	if (copy_from_user(&o, arg, sizeof(o)))
		return -EFAULT;
	if (o.flags || !all_zero(o.reserved, sizeof(o.reserved)) ||
	    o.order > MORSEL_MAX_ORDER)
		return -EINVAL;
	inode_lock(inode);
	err = morsel_set_min_order(inode, o.order);
	inode_unlock(inode);
	return err;
}

static long ioc_bind(struct inode *inode, struct morsel *m,
		     struct morsel_bind __user *arg)
{
	struct morsel_bind b;
	u64 extent;
	long err = 0;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	if (b.flags || !all_zero(b.reserved, sizeof(b.reserved)))
		return -EINVAL;
	mutex_lock(&m->lock);
	extent = morsel_extent(m->order);
	if (!b.addr || !IS_ALIGNED(b.addr, extent) ||
	    b.addr + extent < b.addr || b.addr + extent > TASK_SIZE_MAX)
		err = -EINVAL;
	else if (m->bound == b.addr)
		err = 0;
	else if (m->bound || m->nr_maps)
		err = -EBUSY;
	else
		m->bound = b.addr;
	if (!err && m->pm)
		morsel_pm_set_word(inode, MORSEL_PM_FIELD(bound), m->bound);
	mutex_unlock(&m->lock);
	return err;
}

/*
 * The thread group that owns @mm, as a pid in the caller's namespace, or 0
 * once every user of @mm has exited.  mm->owner (memcg) is kept up to
 * date by the kernel, so this costs no scan of the task list.
 */
static pid_t mm_pid(struct mm_struct *mm)
{
	struct task_struct *owner;
	pid_t pid = 0;

	rcu_read_lock();
	owner = rcu_dereference(mm->owner);
	if (owner)
		pid = task_tgid_vnr(owner);
	rcu_read_unlock();
	return pid;
}

/*
 * Describe @map.  The caller sees its own process's mappings; others only
 * if @all (CAP_SYS_PTRACE): a stricter rule than the ptrace read check
 * that /proc/PID/maps uses (ptrace_may_access is not exported).
 */
static void describe(struct morsel_map *map, bool all,
		     struct morsel_mapping *out)
{
	struct vm_area_struct *vma = map->vma;

	memset(out, 0, sizeof(*out));
	if (!all && vma->vm_mm != current->mm) {
		out->flags = MORSEL_MAPPING_HIDDEN;
		return;
	}
	out->addr = vma->vm_start;
	out->prot = (vma->vm_flags & VM_READ ? MORSEL_PROT_READ : 0) |
		    (vma->vm_flags & VM_WRITE ? MORSEL_PROT_WRITE : 0) |
		    (vma->vm_flags & VM_EXEC ? MORSEL_PROT_EXEC : 0);
	out->pid = mm_pid(vma->vm_mm);
	out->flags = READ_ONCE(map->mounted) ? MORSEL_MAPPING_MOUNTED : 0;
}

/*
 * Fill at most MORSEL_MAPPINGS_MAX entries from index @first on into a
 * buffer of fixed size, and report the total; long lists are walked with
 * cond_resched() (m->lock is a mutex).
 */
static long ioc_mappings(struct morsel *m, struct file *file,
			 struct morsel_mappings __user *arg)
{
	struct morsel_mapping *out = NULL;
	struct morsel_mappings req;
	struct morsel_map *map;
	u64 room, i = 0, n = 0, seen = 0;
	long err = 0;
	bool all = ns_capable_noaudit(&init_user_ns, CAP_SYS_PTRACE);
	bool others = sees_others(file);

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags || !all_zero(req.reserved, sizeof(req.reserved)))
		return -EINVAL;
	room = min_t(u64, req.count, MORSEL_MAPPINGS_MAX);
	if (room) {
		out = kcalloc(room, sizeof(*out), GFP_KERNEL);
		if (!out)
			return -ENOMEM;
	}
	mutex_lock(&m->lock);
	list_for_each_entry(map, &m->maps, node) {
		if (!(++seen % 256))
			cond_resched();
		if (!others && map->vma->vm_mm != current->mm)
			continue;
		if (i >= req.first && n < room)
			describe(map, all, &out[n++]);
		i++;
	}
	mutex_unlock(&m->lock);
	if (n && copy_to_user(u64_to_user_ptr(req.entries), out,
			      n * sizeof(*out)))
		err = -EFAULT;
	kfree(out);
	if (!err && put_user(i, &arg->count))
		err = -EFAULT;
	return err;
}

static long ioc_create(struct file *dirf, struct morsel_create __user *arg)
{
	struct morsel_create req;
	struct file *file;
	int fd;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if ((req.flags & ~MORSEL_CREATE_CLOEXEC) || (req.mode & ~S_IALLUGO) ||
	    !all_zero(req.reserved, sizeof(req.reserved)))
		return -EINVAL;
	if (req.size > LLONG_MAX)
		return -EFBIG;
	fd = get_unused_fd_flags(O_RDWR | (req.flags & MORSEL_CREATE_CLOEXEC ?
					   O_CLOEXEC : 0));
	if (fd < 0)
		return fd;
	file = morsel_create_unnamed(dirf, req.mode, req.size);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	fd_install(fd, file);
	return fd;
}

/*
 * SEAL: every page below the size populated (and this file's own, not a
 * clone's), shared mappings that may write refused from now on (as a
 * memfd's F_SEAL_WRITE), then the flag: on a device one store of the
 * record's flags word, after every store of the contents.
 */
static long ioc_seal(struct morsel *m, struct inode *inode)
{
	u64 end;
	long err = 0;

	inode_lock(inode);
	if (MORSEL_I(inode)->sealed)
		goto out;
	err = -EPERM;
	if (IS_IMMUTABLE(inode) || IS_APPEND(inode))
		goto out;
	err = mapping_deny_writable(inode->i_mapping);
	if (err)
		goto out;
	end = PAGE_ALIGN(i_size_read(inode));
	err = morsel_unshare_range(m, 0, end, MORSEL_UNSHARE_DATA) ?:
	      morsel_populate_range(m, 0, end, MORSEL_HINT_NONE);
	if (err) {
		mapping_allow_writable(inode->i_mapping);
		goto out;
	}
	inode_set_ctime_current(inode);
	if (sb_pm(inode->i_sb))
		morsel_pm_sync_inode(inode);
	smp_wmb();	/* the contents before the seal, for other hosts too */
	WRITE_ONCE(MORSEL_I(inode)->sealed, true);
	if (sb_pm(inode->i_sb))
		morsel_pm_set_flags(inode);
out:
	inode_unlock(inode);
	return err;
}

/* A directory's only ioctl: MORSEL_IOC_CREATE. */
long morsel_dir_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	if (cmd != MORSEL_IOC_CREATE)
		return -ENOTTY;
	return ioc_create(file, (void __user *)arg);
}

long morsel_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct inode *inode = file_inode(file);
	struct morsel *m = inode->i_private;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case MORSEL_IOC_STAT:
		return ioc_stat(m, file, uarg);
	case MORSEL_IOC_MAPPINGS:
		return ioc_mappings(m, file, uarg);
	case MORSEL_IOC_GET_MPOL:
		return ioc_get_mpol(m, uarg);
	case MORSEL_IOC_NODE_PAGES:
		return ioc_node_pages(m, uarg);
	case MORSEL_IOC_POPULATE:
	case MORSEL_IOC_EVICT:
	case MORSEL_IOC_COLLAPSE:
	case MORSEL_IOC_BIND:
	case MORSEL_IOC_SET_MIN_ORDER:
	case MORSEL_IOC_SET_HUGE:
	case MORSEL_IOC_SET_MPOL:
	case MORSEL_IOC_MIGRATE:
	case MORSEL_IOC_ACCESSED:
	case MORSEL_IOC_FILL:
	case MORSEL_IOC_SEAL:
		break;
	default:
		return -ENOTTY;
	}
	if (!(file->f_mode & FMODE_WRITE))
		return -EBADF;
	/*
	 * chattr: an immutable file changes in no way; an append-only one
	 * may be populated (as fallocate may extend it) but loses no data and
	 * keeps its attributes.
	 */
	if (cmd == MORSEL_IOC_SEAL)
		return ioc_seal(m, inode);
	/* A sealed file as an immutable one (MORSEL_IOC_SEAL). */
	if (morsel_frozen(inode) || (IS_APPEND(inode) && cmd != MORSEL_IOC_POPULATE))
		return -EPERM;
	switch (cmd) {
	case MORSEL_IOC_POPULATE:
	case MORSEL_IOC_EVICT:
	case MORSEL_IOC_COLLAPSE:
		return ioc_range(m, file, inode, uarg, cmd);
	case MORSEL_IOC_SET_MIN_ORDER:
		return ioc_min_order(inode, uarg);
	case MORSEL_IOC_SET_HUGE:
		return ioc_set_huge(inode, m, uarg);
	case MORSEL_IOC_SET_MPOL:
		return ioc_set_mpol(inode, m, uarg);
	case MORSEL_IOC_MIGRATE:
		return ioc_migrate(inode, m, uarg);
	case MORSEL_IOC_ACCESSED:
		return ioc_accessed(inode, m, uarg);
	case MORSEL_IOC_FILL:
		return ioc_fill(m, file, inode, uarg);
	default:
		return ioc_bind(inode, m, uarg);
	}
}
