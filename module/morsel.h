/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal interface between the parts of the morsel module:
 *   tree.c   the morsel's own page-table tree (populate, free, re-root)
 *   source.c where its tables and pages come from (source.h): RAM here,
 *            a device in pm.c
 *   huge.c   when a hole gets a 2 MiB or 1 GiB leaf (huge= and its
 *            overrides)
 *   pool.c   the 1 GiB blocks a volatile instance reserves (huge1g=)
 *   mpol.c   on which NUMA node data pages go (mpol=, MORSEL_IOC_SET_MPOL)
 *   mount.c  mounting a morsel into processes (fault, unmount, vm_ops)
 *   fs.c     morselfs: super block, inodes, mount options
 *   xattr.c  extended attributes and POSIX ACLs
 *   file.c   file operations: mmap placement, read/write, fallocate
 *   clone.c  FICLONE and FICLONERANGE (->remap_file_range)
 *   ioctl.c  the MORSEL_IOC_* ioctls
 *   stats.c  global counters in /sys/fs/morselfs
 *   memerr.c memory errors: a failed page leaves its morsel
 *   pm.c     persistent instances (mount -o pmem=DEV): the device, its
 *            page allocator, the one store helper, names and inodes
 *   pm_check.c  the walk a persistent mount recovers with (shared with
 *            user space; pm_format.h is the on-device format)
 */
#ifndef MORSEL_INTERNAL_H
#define MORSEL_INTERNAL_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/srcu.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/mm.h>
#include <linux/pkeys.h>
#include <linux/fs.h>
#include <linux/xattr.h>
#include <uapi/linux/morsel.h>

#include "pm_format.h"
#include "source.h"

/* Charges go to memory cgroups, and MAPPINGS names mm->owner. */
#ifndef CONFIG_MEMCG
#error "morselfs needs CONFIG_MEMCG"
#endif

/* A raw x86-64 page-table entry as stored in a morsel's tables. */
typedef u64 mentry_t;

/*
 * The leaf of a page that failed (memerr.c): not present, so every access
 * faults, and the fault answers VM_FAULT_HWPOISON; read and write answer
 * -EIO.  No address and no order bits (52-54), so it is also the root
 * word of an order-0 morsel.  On a device it is the format's MPM_POISON.
 */
#define MORSEL_POISON	((mentry_t)MPM_POISON)

/**
 * struct morsel_pool - a volatile instance's 1 GiB reserve (pool.c)
 * @lock:    guards the rest.
 * @free:    the free blocks, by their first page's lru.
 * @nr_free: blocks on @free.
 * @nr_used: blocks under 1 GiB leaves.
 * @want:    how many blocks it should hold (huge1g=).
 */
struct morsel_pool {
	spinlock_t lock;	/* the free list and the counts */
	struct list_head free;
	unsigned long nr_free;
	unsigned long nr_used;
	unsigned long want;
};

void morsel_pool_init(struct morsel_pool *p);
int morsel_pool_resize(struct morsel_pool *p, unsigned long want);
struct page *morsel_pool_get(struct morsel_pool *p);
void morsel_pool_split(struct morsel_pool *p);
void morsel_pool_put(struct morsel_pool *p, struct page *first);
void morsel_pool_destroy(struct morsel_pool *p);
unsigned long morsel_pool_free(struct morsel_pool *p);

struct seq_file;
struct morsel_policy *morsel_mpol_parse(const char *str);
struct morsel_policy *morsel_mpol_from_user(const struct morsel_mpol *u);
struct morsel_policy *morsel_mpol_target(int nid);
void morsel_mpol_to_user(struct morsel_policy __rcu **pp, struct morsel_mpol *u);
void morsel_mpol_show(struct seq_file *seq, struct morsel_policy __rcu **pp);
void morsel_mpol_set(struct morsel_policy __rcu **pp, struct morsel_policy *p);
void morsel_mpol_free(struct morsel_policy __rcu **pp);
void morsel_mpol_exit(void);
struct page *morsel_mpol_alloc(const struct morsel_ram *r,
			       const struct morsel_place *pl, gfp_t gfp,
			       unsigned int order);
unsigned int morsel_mpol_alloc_bulk(const struct morsel_ram *r,
				    const struct morsel_place *pl, gfp_t gfp,
				    unsigned int nr, struct page **pages);

/**
 * struct morsel_sb - one morselfs instance (sb->s_fs_info), see fs.c
 * @max_blocks: size= limit in pages (data pages and tables), 0: none.
 * @max_inodes: nr_inodes= limit, 0: none.
 * @used:       pages and tables charged (morsel_charge).
 * @ispace:     inode space in use, in bytes: a fixed amount per inode plus
 *              extended attributes and symlink targets (fs.c).
 * @huge:       huge= (MORSEL_HUGE_*; huge.c).
 * @mode:       mode= (the root directory's mode, without S_IFDIR).
 * @uid:        uid= (the root directory's owner).
 * @gid:        gid= (the root directory's group).
 * @pm:         the persistent device (pm.c), or NULL for a volatile one.
 * @src:        where its tables and pages come from: morsel_ram_source, or
 *              the device's (pm.c), set with @pm.
 * @ram:        the RAM source (source.c) of a volatile instance: @src.
 * @ram_ctx:    @ram's context: @pool and the mpol= policy (mpol.c).
 * @pool:       its 1 GiB reserve (pool.c).
 * @huge1g:     huge1g= (blocks the reserve was asked to hold).
 * @pm_dev:     that device's number, set before the super block exists and
 *              never changed: a second mount of the device finds this
 *              instance by it (fs.c get_pm_tree); 0 when volatile.
 * @cloned:     a file of it took part in a clone (clone.c): a failed page
 *              may be in more than one file (memerr.c).  Never cleared.
 * @anon_mounted: anon=mounted: private anonymous memory mapped from now
 *              on is mounted 2 MiB at a time (anonmnt.c).
 * Limits and @mode, @uid, @gid change only on remount (under the super
 * block's s_umount); the counters are atomics, charged with cmpxchg
 * against the limit.
 */
struct morsel_sb {
	struct morsel_pm *pm;
	const struct morsel_source *src;
	dev_t pm_dev;
	struct rcu_head rcu;
	unsigned long max_blocks;
	unsigned long max_inodes;
	atomic_long_t used;
	atomic_long_t ispace;
	umode_t mode;
	kuid_t uid;
	kgid_t gid;
	unsigned int huge;
	unsigned long huge1g;
	struct morsel_source ram;
	struct morsel_ram ram_ctx;
	struct morsel_pool pool;
	bool cloned;
	bool anon_mounted;
};

/**
 * struct morsel - one memory object
 * @lock:       serialises order changes, eviction, binding and the list of
 *              mappings (see size.c and mount.c for the lock order).
 * @seq:        lets lock-free walkers read @order and @root together: the
 *              order rises (under @lock) even while the morsel is mapped
 *              and faults populate it; it falls only with no mapping.
 * @order:      0..MORSEL_MAX_ORDER.
 * @min_order:  the order never goes below this (MORSEL_IOC_SET_MIN_ORDER).
 * @root:       entry for the root: a table entry pointing at the level-@order
 *              table (order >= 1) or a leaf PTE for the data page (order 0);
 *              0 while nothing is populated.  Filled with cmpxchg.  It
 *              carries the order in bits 52-54 (MPM_ROOT_ORDER_SHIFT), as
 *              the root word of a persistent morsel must.
 * @rootp:      where the root word lives: &@root, or the root word of the
 *              morsel's inode record on a persistent device.
 * @pm:         the persistent device whose metadata stores its tree takes
 *              (tree.c: tstore), or NULL.
 * @src:        where its tables and pages come from (the instance's).
 * @place:      where its data pages should go: its own policy (mpol.c),
 *              which @src is given with every allocation.
 * @maps:       struct morsel_map of every mounted VMA (shared, offset 0).
 * @nr_maps:    length of @maps.
 * @nr_paged:   page-by-page VMAs (MAP_PRIVATE, or shared at an offset;
 *              file.c).
 * @bound:      address every mapping must use, or 0.
 * @nr_pages:   populated data pages.
 * @nr_huge:    2 MiB leaves (each 512 of @nr_pages).
 * @nr_huge1g:  1 GiB leaves (each 262144 of @nr_pages).
 * @had_huge1g: a 1 GiB leaf was ever published (mount.c flushes then
 *              wait for GUP's readers of PUD leaves; never cleared).
 * @cow:        took part in a clone, so parts of its tree may be shared
 *              (tree.c); then our walkers hold @lock.  Never cleared.
 * @migrating:  pages are moving to another node (file.c
 *              morsel_migrate_range): faults hold @lock meanwhile.
 * @anon:       0, or MORSEL_ANON_* for a process's anonymous memory
 *              (anon.c); set before the file is mapped, never changed.
 * @anon_mounts: mounted anonymous VMAs map it (anonmnt.c): mappers are
 *              flushed through unmap_mapping_range too.  Never cleared.
 * @walker:     the task holding @lock around such a walk (tree.c).
 * @huge:       MORSEL_HUGE_* for this file, or MORSEL_HUGE_INHERIT.
 * @nr_tables:  table pages per level (index level - 1).
 * @sbi:        the file system instance, charged for pages and tables.
 * @resv_start: the range [@resv_start, @resv_end) that fallocate reserved
 * @resv_end:   past the file's end (size.c), 0 and 0 if none; changed
 *              under the inode lock, read lock-free by allocations.
 * @resv:       pages (and tables) still charged for it and not used.
 * @inode:      the file it is the data of (NULL: a device's bad-page tree).
 * @id:         names it in its data pages' page->private, for the owner of
 *              a failed page (memerr.c); 0 without an inode.
 */
struct morsel {
	struct mutex lock;	/* see @lock above */
	seqcount_mutex_t seq;
	unsigned int order;
	unsigned int min_order;
	mentry_t root;
	mentry_t *rootp;
	struct morsel_pm *pm;
	const struct morsel_source *src;
	struct morsel_place place;
	struct list_head maps;
	unsigned int nr_maps;
	atomic_t nr_paged;
	u64 bound;
	atomic_long_t nr_pages;
	atomic_long_t nr_huge;
	atomic_long_t nr_huge1g;
	bool had_huge1g;
	bool cow;
	bool migrating;
	bool anon_mounts;
	u8 anon;
	struct task_struct *walker;
	unsigned int huge;
	atomic_long_t nr_tables[MORSEL_TABLE_LEVELS];
	struct morsel_sb *sbi;
	u64 resv_start;
	u64 resv_end;
	atomic_long_t resv;
	struct inode *inode;
	u32 id;
};

/**
 * struct morsel_map - one mounted VMA of a morsel (vma->vm_private_data)
 * @node:    in morsel->maps, under morsel->lock.
 * @vma:     the VMA; valid while on the list (->close removes it).
 * @morsel:  the morsel.
 * @order:   the VMA covers the extent of this order (<= the morsel's) and
 *           mounts the subtree of that order at offset 0.
 * @mounted: the VMA's mount entry was written and not yet cleared; for
 *           MORSEL_IOC_MAPPINGS only (a fault never trusts it).
 */
struct morsel_map {
	struct list_head node;
	struct vm_area_struct *vma;
	struct morsel *morsel;
	unsigned int order;
	bool mounted;
};

/*
 * Whether processes may reach @m's tables through their own entries: a
 * shared mapping mounts them (mount.c), and mounted anonymous memory
 * (anonmnt.c; never cleared).  Then its tables stay while it is mapped,
 * and evictions clear leaves in place and flush the mappers before a page
 * goes (tree.c morsel_evict_mapped).
 */
static inline bool morsel_tables_mapped(struct morsel *m)
{
	return m->nr_maps || READ_ONCE(m->anon_mounts);
}

/* The persistent device of @sb's instance, or NULL. */
static inline struct morsel_pm *sb_pm(struct super_block *sb)
{
	return ((struct morsel_sb *)sb->s_fs_info)->pm;
}

/* Where @sb's instance gets its tables and pages. */
static inline const struct morsel_source *sb_src(struct super_block *sb)
{
	return ((struct morsel_sb *)sb->s_fs_info)->src;
}

static inline u64 morsel_extent(unsigned int order)
{
	return (u64)PAGE_SIZE << (9 * order);
}

/* Smallest order whose extent is >= @size, or -EFBIG. */
int morsel_order_for_size(loff_t size);

/* tree.c */
struct morsel *morsel_alloc(struct morsel_sb *sbi, struct inode *inode);
void morsel_destroy(struct morsel *m);
void morsel_forget(struct morsel *m);
void morsel_disown_tree(struct morsel *m);
int morsel_adopt_tree(struct morsel *m);
struct page *morsel_populate(struct morsel *m, u64 off, int hint);
int morsel_populate_range(struct morsel *m, u64 start, u64 end, int hint);
int morsel_fill_range(struct morsel *m, u64 start, u64 end, struct file *src,
		      loff_t pos, u64 *done);
int morsel_split(struct morsel *m, u64 off, int level);
int morsel_collapse(struct morsel *m, u64 start, u64 end);
struct page *morsel_lookup(struct morsel *m, u64 off);
loff_t morsel_seek(struct morsel *m, u64 off, u64 end, bool data);
unsigned long morsel_count_pages(struct morsel *m, u64 start, u64 end);
int morsel_count_nodes(struct morsel *m, u64 start, u64 end, u64 *pages,
		       unsigned int nr_nodes);
int morsel_migrate(struct morsel *m, struct address_space *mapping,
		   u64 start, u64 end, int nid, const unsigned long *bits,
		   struct morsel_migrate *res);
void morsel_scan_accessed(struct morsel *m, u64 start, u64 end, bool clear,
			  unsigned long *bits, u64 *accessed, u64 *populated);
bool morsel_poison(struct morsel *m, u64 off, struct page *page);
unsigned int morsel_poison_shared(struct morsel *m, struct page *page);
extern struct file_system_type morselfs_type;
int morsel_place(struct morsel *m, u64 off, struct page *page);
int morsel_set_order(struct morsel *m, unsigned int order);
void morsel_free_range(struct morsel *m, u64 start, u64 end);
void morsel_evict_mapped(struct morsel *m, struct address_space *mapping,
			 u64 start, u64 end);
void morsel_zero_range(struct morsel *m, u64 start, u64 end);
#define MORSEL_UNSHARE_EDGES	0
#define MORSEL_UNSHARE_TABLES	1
#define MORSEL_UNSHARE_DATA	2
int morsel_unshare(struct morsel *m, u64 start, u64 end, unsigned int how);
int morsel_unshare_range(struct morsel *m, u64 start, u64 end,
			 unsigned int how);
extern struct srcu_struct morsel_walk_srcu;
void morsel_walk_lock(struct morsel *m);
void morsel_walk_unlock(struct morsel *m);
struct page *morsel_get(struct morsel *m, u64 off, int hint, bool write);
int morsel_clone(struct morsel *dst, u64 doff, struct morsel *src, u64 soff,
		 u64 len);
int morsel_writeback(struct morsel *m, u64 start, u64 end);
int morsel_writeback_inode(struct inode *inode, u64 start, u64 end);
mentry_t morsel_mount_entry(struct morsel *m, unsigned int order, bool write,
			    bool exec);
mentry_t morsel_entry_at(struct morsel *m, u64 off, int level);

/* huge.c; a populating caller's hint: */
#define MORSEL_HINT_NONE	0
#define MORSEL_HINT_ADVISED	1	/* MADV_HUGEPAGE, MORSEL_POPULATE_HUGE */
#define MORSEL_HINT_REFUSED	2	/* MADV_NOHUGEPAGE */
int morsel_vma_hint(const struct vm_area_struct *vma);
unsigned int morsel_huge_mode(struct morsel *m);
int morsel_huge_wanted(struct morsel *m, u64 off, int hint);

/* mount.c */
extern const struct vm_operations_struct morsel_vm_ops;
int morsel_map_vma(struct morsel *m, struct vm_area_struct *vma);
bool morsel_order0_mapped(struct morsel *m);
void morsel_flush_mappers(struct morsel *m, u64 start, u64 end);
void morsel_flush_mappers_tables(struct morsel *m, u64 start, u64 end,
				 bool tables);
bool morsel_top_level_mount(unsigned int order);
struct page *morsel_find_special_page(struct vm_area_struct *vma,
				      unsigned long addr);
vm_fault_t morsel_fault_in(struct vm_fault *vmf, struct morsel *m, u64 off,
			   int (*install)(struct vm_area_struct *vma,
					  unsigned long addr, u64 off));

/*
 * What a mount entry can express (mount.c): it reads whenever it exists,
 * so a VMA mounts only if it may read or write (x86 has no write-only
 * pages), and rights it cannot take away (execute without read, a
 * protection key, which the leaves cannot carry) are refused.
 */
static inline bool morsel_vma_mounts(unsigned long flags)
{
	return flags & (VM_READ | VM_WRITE);
}

static inline bool morsel_rights_expressible(unsigned long flags)
{
	return !(flags & ARCH_VM_PKEY_FLAGS) &&
	       (morsel_vma_mounts(flags) || !(flags & VM_EXEC));
}

/* file.c */
extern const struct file_operations morsel_fops;
extern const struct file_operations morsel_anon_fops;
int morsel_evict(struct inode *inode, loff_t size, u64 start, u64 end);
vm_fault_t morsel_page_fault(struct vm_fault *vmf, bool own);
int morsel_collapse_range(struct inode *inode, u64 start, u64 end);
int morsel_migrate_range(struct inode *inode, u64 start, u64 end, int nid,
			 const unsigned long *bits, struct morsel_migrate *res);
void morsel_zap_paged(struct inode *inode, loff_t start, loff_t end,
		      bool even_cows);

/* clone.c */
loff_t morsel_remap_file_range(struct file *file_in, loff_t pos_in,
			       struct file *file_out, loff_t pos_out,
			       loff_t len, unsigned int flags);
loff_t morsel_clone_anon(struct file *from, struct file *to);
int morsel_anon_may_split(struct vm_area_struct *vma, unsigned long addr);

/* memerr.c */
int morsel_memerr_init(void);
void morsel_memerr_exit(void);
int morsel_memerr_add(struct morsel *m);
void morsel_memerr_del(struct morsel *m);
bool morsel_memerr_take(struct page *page, struct super_block *sb);

/* ioctl.c */
long morsel_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
long morsel_dir_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

/* size.c */
bool morsel_charge(struct morsel *m, unsigned long nr);
long morsel_take_upto(atomic_long_t *used, long limit, long nr);
unsigned long morsel_charge_upto(struct morsel *m, unsigned long nr);
void morsel_uncharge(struct morsel *m, unsigned long nr);
unsigned long morsel_draw(struct morsel *m, u64 off, unsigned long nr);
void morsel_undraw(struct morsel *m, unsigned long nr);
int morsel_reserve(struct inode *inode, u64 start, u64 end);
void morsel_resv_trim(struct inode *inode, loff_t size);
void morsel_resv_release(struct morsel *m);
int morsel_resv_load(struct morsel *m, u64 word);
u64 morsel_avail_blocks(u64 bfree);
unsigned int morsel_max_order(void);
int morsel_raise_order(struct morsel *m, unsigned int order);
int morsel_grow_order(struct morsel *m, loff_t size);
void morsel_zero_past_size(struct inode *inode, loff_t size);
int morsel_resize(struct inode *inode, loff_t size);
void morsel_fit_order(struct inode *inode);
void morsel_fit_final(struct morsel *m, loff_t size);
int morsel_set_min_order(struct inode *inode, unsigned int order);

/* A regular file's size changed: on a persistent device too (pm.c). */
void morsel_size_changed(struct inode *inode);

/*
 * A morselfs inode: the VFS inode, its extended attributes (xattr.c) and
 * its creation time (statx's btime, as tmpfs's i_crtime; on a device in
 * the record's btime).
 */
struct morsel_inode {
	struct simple_xattrs xattrs;
	struct timespec64 btime;
	unsigned int fsflags;		/* chattr's FS_*_FL (fs.c) */
	bool sealed;			/* MORSEL_IOC_SEAL: contents final */
	struct inode vfs_inode;
};

static inline struct morsel_inode *MORSEL_I(struct inode *inode)
{
	return container_of(inode, struct morsel_inode, vfs_inode);
}

/* May the contents change (chattr +i, or sealed)?  Under the inode lock. */
static inline bool morsel_frozen(struct inode *inode)
{
	return IS_IMMUTABLE(inode) || READ_ONCE(MORSEL_I(inode)->sealed);
}

/* fs.c */
extern const struct file_operations morsel_dir_fops;
int morsel_ispace_charge(struct morsel_sb *sbi, long bytes);
void morsel_ispace_uncharge(struct morsel_sb *sbi, long bytes);
void morsel_account_loaded(struct inode *inode);
int morsel_setup_inode(struct inode *inode, umode_t mode, dev_t dev);
void morsel_set_fsflags(struct inode *inode, unsigned int fsflags);
struct file *morsel_create_unnamed(struct file *dirf, umode_t mode,
				   loff_t size);
struct file *morsel_new_unnamed(struct vfsmount *mnt, struct inode *dir,
				umode_t mode, loff_t size,
				struct lock_class_key *key);

/* anon.c: a process's anonymous memory (@anon: what a morsel holds) */
#define MORSEL_ANON_PRIVATE	1
#define MORSEL_ANON_SHARED	2
struct file *morsel_mmap_anon(struct file *dir, unsigned long len,
			      unsigned long prot, unsigned long flags);
int morsel_anon_mmap(struct morsel *m, struct vm_area_struct *vma);
void morsel_anon_open(struct vm_area_struct *vma);
void morsel_anon_close(struct vm_area_struct *vma);
vm_fault_t morsel_anon_grow(struct vm_area_struct *vma);
int morselfs_register(void);

/* anonmnt.c: anon=mounted */
int morsel_anon_mount_vma(struct morsel *m, struct vm_area_struct *vma);
unsigned long morsel_anon_unmapped_area(struct file *file, unsigned long addr,
					unsigned long len, unsigned long pgoff,
					unsigned long flags);
void morselfs_unregister(void);

/* xattr.c */
struct posix_acl;
extern const struct xattr_handler * const morsel_xattr_handlers[];
ssize_t morsel_listxattr(struct dentry *dentry, char *buffer, size_t size);
int morsel_xattr_load(struct inode *inode, const char *name, size_t len,
		      const void *value, size_t size);
struct posix_acl *morsel_get_acl(struct inode *inode, int type, bool rcu);
int morsel_set_acl(struct mnt_idmap *idmap, struct dentry *dentry,
		   struct posix_acl *acl, int type);
int morsel_acl_store_new(struct inode *inode, struct posix_acl *dacl,
			 struct posix_acl *acl);

/* stats.c */
extern atomic_long_t morsel_stat_pages;
extern atomic_long_t morsel_stat_tables;
extern atomic_long_t morsel_stat_morsels;
extern atomic_long_t morsel_stat_mounts;
extern atomic_long_t morsel_stat_huge;
extern atomic_long_t morsel_stat_huge_fallbacks;
extern atomic_long_t morsel_stat_huge_splits;
extern atomic_long_t morsel_stat_huge_collapses;
extern atomic_long_t morsel_stat_huge1g;
extern atomic_long_t morsel_stat_huge1g_splits;
extern atomic_long_t morsel_stat_huge1g_fallbacks;
extern atomic_long_t morsel_stat_huge1g_free;	/* pool.c */
extern atomic_long_t morsel_stat_migrated;
extern atomic_long_t morsel_stat_scanned;
int morsel_stats_init(void);
void morsel_stats_exit(void);

#endif /* MORSEL_INTERNAL_H */
