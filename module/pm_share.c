// SPDX-License-Identifier: GPL-2.0
/*
 * A persistent instance shared by several hosts (issue 25): one publisher
 * mounts the pool read-write, readers on other hosts mount it read-only
 * and map its sealed files with one entry each, their MMUs walking the
 * publisher's trees in the shared memory.  docs/design.md ("One copy for
 * several hosts") gives the rules; this file keeps them:
 *
 * - The pool page (pm_format.h, struct mpm_pool_slot): slot 0 is the
 *   writer's claim, each other slot one reader mount.  A mount owns its
 *   slot by a cmpxchg of @owner (a random number of its own) and advances
 *   @beat four times per lease period (the module parameter
 *   pool_lease_ms); a slot whose beat does not move for a lease period, by
 *   the observer's own clock, belongs to a dead host and may be taken.
 * - A reader stores a lease (the inode number) in its slot before its
 *   first open of a file, then checks the file is still sealed, not dying
 *   and the one it looked up (its birth time); it clears the lease after
 *   the last release, which follows the last munmap and its TLB flush.
 * - The publisher, deleting a sealed file, stores MPM_FL_DYING in its
 *   record and then reads every slot's leases: with the full barrier
 *   between (smp_mb(), on either side), either the reader sees the mark
 *   or the publisher sees the lease.  A leased file's record and tree
 *   stay (a zombie: an orphan that a mount keeps while a lease names it)
 *   until no live slot holds a lease on it; the heartbeat work frees it.
 * - A reader's morsel holds its tree (a copy of the root word, its tables
 *   and pages adopted) only from the first open to the last close, as
 *   long as the lease: afterwards the publisher may free and reuse the
 *   pages, so a cached inode must not keep them.
 * - A reader has no allocator and stores nothing but its slot: it looks
 *   names up in the directories' pages on every miss and lists them on
 *   every readdir (no name is cached unchecked: d_revalidate rereads the
 *   entry and the record), and shows only directories and sealed files.
 *
 * Locking: @lock (a mutex) guards a reader's lease counts and the
 * publisher's zombies and view of the slots; the heartbeat work takes it.
 * Slot words are read with READ_ONCE and written with the device's
 * stores (pm.c), which another host may read at any time.
 */
#include <linux/dcache.h>
#include <linux/delay.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/workqueue.h>

#include "morsel.h"
#include "morsel_pm.h"
#include "pm_check.h"

static unsigned int lease_ms = 10000;
module_param_named(pool_lease_ms, lease_ms, uint, 0644);
MODULE_PARM_DESC(pool_lease_ms, "shared pools: a host whose heartbeat stops this long is dead (ms, at least 100)");

struct share_zombie {
	struct list_head node;
	u64 ino;
};

struct morsel_share {
	struct morsel_pm *pm;
	struct mpm_fs *fs;
	struct mpm_pool_slot *slots;
	struct mpm_pool_slot *mine;
	bool reader;
	struct delayed_work work;
	struct mutex lock;			/* the rest, the heartbeat */
	unsigned int refs[MPM_POOL_LEASES];	/* reader: opens per lease */
	struct {				/* publisher: each slot as seen */
		u64 owner, beat;
		unsigned long seen;		/* jiffies of the last change */
	} view[MPM_POOL_SLOTS];
	struct list_head zombies;		/* publisher */
};

static unsigned long period(void)
{
	return msecs_to_jiffies(max(READ_ONCE(lease_ms), 100U));
}

static u64 new_owner(void)
{
	return get_random_u64() | 1;
}

static void store(struct morsel_share *sh, u64 *word, u64 val)
{
	morsel_pm_store(sh->pm, word, val);
}

/* ---- claims ---- */

/* Take slot @s from @owner (0: a free one), clearing a dead owner's leases. */
static int claim(struct morsel_share *sh, struct mpm_pool_slot *s, u64 owner)
{
	int i;

	if (!morsel_pm_cmpxchg(sh->pm, &s->owner, &owner, new_owner()))
		return -EBUSY;
	for (i = 0; i < MPM_POOL_LEASES; i++)
		if (READ_ONCE(s->lease[i]))
			store(sh, &s->lease[i], 0);
	store(sh, &s->beat, READ_ONCE(s->beat) + 1);
	sh->mine = s;
	return 0;
}

/*
 * Take one of the @n slots from @first: a free one at once, else one
 * whose owner's beat did not move while we waited a lease period and a
 * half (interruptibly).  Return: 0, -EBUSY (every owner alive, or other
 * hosts took the dead ones first) or -EINTR.
 */
static int take_slot(struct morsel_share *sh, int first, int n)
{
	u64 owner[MPM_POOL_SLOTS], beat[MPM_POOL_SLOTS];
	struct mpm_pool_slot *s = sh->slots;
	int i;

	for (i = first; i < first + n; i++) {
		owner[i] = READ_ONCE(s[i].owner);
		beat[i] = READ_ONCE(s[i].beat);
		if (!owner[i] && !claim(sh, &s[i], 0))
			return 0;
	}
	if (msleep_interruptible(jiffies_to_msecs(period() * 3 / 2)))
		return -EINTR;
	for (i = first; i < first + n; i++)
		if (owner[i] && READ_ONCE(s[i].beat) == beat[i] &&
		    !claim(sh, &s[i], owner[i]))
			return 0;
	return -EBUSY;
}

static int cmp_ino(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The inodes every reader slot in use leases, for the walk to keep
 * (struct mpm_fs @keep): a publisher that crashed after deleting them
 * must not free what a reader may still map (rule 8).
 */
static int collect_keep(struct morsel_share *sh)
{
	struct mpm_vec *keep = &sh->fs->keep;
	u64 *v = mpm_zalloc((MPM_POOL_SLOTS - 1) * MPM_POOL_LEASES * sizeof(*v));
	int i, j, n = 0;

	if (!v)
		return -ENOMEM;
	for (i = 1; i < MPM_POOL_SLOTS; i++) {
		if (!READ_ONCE(sh->slots[i].owner))
			continue;
		for (j = 0; j < MPM_POOL_LEASES; j++) {
			u64 ino = READ_ONCE(sh->slots[i].lease[j]);

			if (ino)
				v[n++] = ino;
		}
	}
	sort(v, n, sizeof(*v), cmp_ino, NULL);
	for (i = 0, j = 0; i < n; i++)
		if (!j || v[j - 1] != v[i])
			v[j++] = v[i];
	mpm_free(keep->v);
	*keep = (struct mpm_vec){ .v = v, .n = j, .cap = n };
	return 0;
}

/**
 * morsel_share_claim - claim a slot of the pool page @slots
 * @reader: a reader slot (any free or dead one), else the writer's
 * @moving: (writer) the mount would relocate the device's entries
 *
 * The writer waits a lease period and a half when another host holds the
 * claim, to see whether it is alive (-EBUSY if so), and then lists the
 * leased inodes for the walk.  Return: the share, or ERR_PTR(-EBUSY,
 * -EINTR, -ENOMEM).
 */
struct morsel_share *morsel_share_claim(struct morsel_pm *pm, struct mpm_fs *fs,
					struct mpm_pool_slot *slots, bool reader,
					bool moving)
{
	struct morsel_share *sh = kzalloc(sizeof(*sh), GFP_KERNEL);
	int i, err;

	if (!sh)
		return ERR_PTR(-ENOMEM);
	sh->pm = pm;
	sh->fs = fs;
	sh->slots = slots;
	sh->reader = reader;
	mutex_init(&sh->lock);
	INIT_LIST_HEAD(&sh->zombies);
	if (reader) {
		err = take_slot(sh, 1, MPM_POOL_SLOTS - 1);
		if (err == -EBUSY)
			pr_err("morselfs: every reader slot of the pool is held by a live host\n");
	} else {
		err = take_slot(sh, 0, 1);
		if (err == -EBUSY)
			pr_err("morselfs: another host holds the pool's writer claim\n");
		for (i = 1; !err && moving && i < MPM_POOL_SLOTS; i++)
			if (READ_ONCE(slots[i].owner)) {
				pr_err("morselfs: the pool moved, and a reader still maps it\n");
				err = -EBUSY;
			}
		if (!err)
			err = collect_keep(sh);
		if (err && sh->mine)
			store(sh, &sh->mine->owner, 0);
	}
	if (err) {
		kfree(sh);
		return ERR_PTR(err);
	}
	return sh;
}

/* ---- the publisher: leases, zombies ---- */

static bool slot_alive(struct morsel_share *sh, int i)
{
	return time_before(jiffies, sh->view[i].seen + period());
}

/* Does a reader slot in use (and alive, if @live) lease @ino? */
static bool leased(struct morsel_share *sh, u64 ino, bool live)
{
	int i, j;

	for (i = 1; i < MPM_POOL_SLOTS; i++) {
		if (!READ_ONCE(sh->slots[i].owner) || (live && !slot_alive(sh, i)))
			continue;
		for (j = 0; j < MPM_POOL_LEASES; j++)
			if (READ_ONCE(sh->slots[i].lease[j]) == ino)
				return true;
	}
	return false;
}

static void add_zombie(struct morsel_share *sh, u64 ino)
{
	struct share_zombie *z = kmalloc(sizeof(*z), GFP_KERNEL | __GFP_NOFAIL);

	z->ino = ino;
	mutex_lock(&sh->lock);
	list_add_tail(&z->node, &sh->zombies);
	mutex_unlock(&sh->lock);
}

/* After the walk: the kept orphans are this mount's zombies. */
void morsel_share_zombies(struct morsel_share *sh)
{
	u64 i;

	for (i = 0; i < sh->fs->keep.n; i++) {
		u64 ino = sh->fs->keep.v[i];
		struct mpm_inode *rec = mpm_inode(sh->fs, ino);

		if (rec && READ_ONCE(rec->mode) && !mpm_links(sh->fs, ino))
			add_zombie(sh, ino);
	}
}

/**
 * morsel_share_defer - may the deleted sealed file @ino be freed now?
 *
 * The publisher's eviction of a file without a name: marks it dying, then
 * reads the leases.  Return: true when a reader leases it; then its
 * record and tree stay until the heartbeat work finds no live lease.
 */
bool morsel_share_defer(struct morsel_share *sh, u64 ino)
{
	struct mpm_inode *rec = mpm_inode(sh->fs, ino);

	if (!rec)
		return false;
	store(sh, &rec->flags, READ_ONCE(rec->flags) | MPM_FL_DYING);
	smp_mb();	/* the mark before the leases; a reader's opposite */
	if (!leased(sh, ino, false))
		return false;
	add_zombie(sh, ino);
	return true;
}

static void publisher_beat(struct morsel_share *sh)
{
	struct share_zombie *z, *next;
	int i;

	for (i = 1; i < MPM_POOL_SLOTS; i++) {
		u64 owner = READ_ONCE(sh->slots[i].owner);
		u64 beat = READ_ONCE(sh->slots[i].beat);

		if (owner != sh->view[i].owner || beat != sh->view[i].beat) {
			sh->view[i].owner = owner;
			sh->view[i].beat = beat;
			sh->view[i].seen = jiffies;
		}
	}
	list_for_each_entry_safe(z, next, &sh->zombies, node) {
		if (leased(sh, z->ino, true))
			continue;
		morsel_pm_free_orphan(sh->pm, z->ino);
		list_del(&z->node);
		kfree(z);
	}
}

static void share_beat(struct work_struct *work)
{
	struct morsel_share *sh = container_of(work, struct morsel_share, work.work);

	mutex_lock(&sh->lock);
	store(sh, &sh->mine->beat, READ_ONCE(sh->mine->beat) + 1);
	if (!sh->reader)
		publisher_beat(sh);
	mutex_unlock(&sh->lock);
	schedule_delayed_work(&sh->work, max(period() / 4, 1UL));
}

/* The mount is live: start the heartbeat. */
void morsel_share_run(struct morsel_share *sh)
{
	int i;

	for (i = 0; i < MPM_POOL_SLOTS; i++)
		sh->view[i].seen = jiffies;	/* a full period for everyone */
	INIT_DELAYED_WORK(&sh->work, share_beat);
	schedule_delayed_work(&sh->work, 0);
}

/*
 * Unmount (or a failed mount): stop the heartbeat and give the slot
 * back.  A publisher's zombies stay on the device as orphans, which the
 * next mount keeps or frees by the leases it finds.
 */
void morsel_share_end(struct morsel_share *sh, bool ran)
{
	struct share_zombie *z, *next;
	int i;

	if (ran)
		cancel_delayed_work_sync(&sh->work);
	for (i = 0; sh->reader && i < MPM_POOL_LEASES; i++)
		if (READ_ONCE(sh->mine->lease[i]))
			store(sh, &sh->mine->lease[i], 0);
	store(sh, &sh->mine->owner, 0);
	list_for_each_entry_safe(z, next, &sh->zombies, node)
		kfree(z);
	mutex_destroy(&sh->lock);
	kfree(sh);
}

/* ---- a reader: what it may see ---- */

/*
 * Is record @rec a directory, or a sealed file not being deleted (born at
 * @btime, if not 0)?  What a reader may show and open.
 */
static bool visible(struct mpm_inode *rec, u64 btime)
{
	u64 mode = READ_ONCE(rec->mode), flags = READ_ONCE(rec->flags);

	smp_rmb();	/* the seal before what it covers */
	if (btime && READ_ONCE(rec->btime) != btime)
		return false;
	if (S_ISDIR(mode))
		return true;
	return S_ISREG(mode) && (flags & MPM_FL_SEALED) && !(flags & MPM_FL_DYING);
}

static struct morsel_share *SH(struct super_block *sb)
{
	return morsel_pm_share(sb);
}

static u64 birth(struct inode *inode)
{
	return timespec64_to_ns(&MORSEL_I(inode)->btime);
}

/*
 * The entry @de as it was at one moment: its word, and its name in
 * @name; false for a free slot or one the publisher changed meanwhile
 * (it stores the name before the word and frees a slot by its word).
 */
static bool read_entry(struct mpm_dirent *de, u64 *word, char *name)
{
	u64 w = READ_ONCE(de->word);
	unsigned int len = mpm_de_len(w);

	if (!w || !len || len > MPM_NAME_MAX)
		return false;
	smp_rmb();	/* the word before the name it commits */
	memcpy(name, de->name, len);
	name[len] = 0;
	smp_rmb();	/* the name before the word read again */
	if (READ_ONCE(de->word) != w)
		return false;
	*word = w;
	return true;
}

/* The directory entry at @pos (page * MPM_DIRENTS_PER_PAGE + slot), or NULL. */
static struct mpm_dirent *entry_at(struct mpm_fs *fs, struct mpm_inode *d, u64 pos,
				   bool *end)
{
	struct mpm_dirent *de;
	u64 page = pos / MPM_DIRENTS_PER_PAGE;

	*end = page >= READ_ONCE(d->size) / MPM_PAGE_SIZE;
	if (*end)
		return NULL;
	de = mpm_tree_page(fs, READ_ONCE(d->root), page);
	return de ? de + pos % MPM_DIRENTS_PER_PAGE : NULL;
}

static struct mpm_inode *visible_target(struct mpm_fs *fs, u64 word)
{
	struct mpm_inode *rec = mpm_inode(fs, mpm_de_ino(word));

	return rec && visible(rec, 0) ? rec : NULL;
}

static struct dentry *share_lookup(struct inode *dir, struct dentry *dentry,
				   unsigned int flags)
{
	struct morsel_share *sh = SH(dir->i_sb);
	struct mpm_inode *d = mpm_inode(sh->fs, dir->i_ino);
	struct inode *inode = NULL;
	struct mpm_dirent *de;
	char *name;
	bool end = false;
	u64 pos, word;

	if (dentry->d_name.len > MPM_NAME_MAX)
		return ERR_PTR(-ENAMETOOLONG);
	name = kmalloc(MPM_NAME_MAX + 1, GFP_KERNEL);
	if (!name)
		return ERR_PTR(-ENOMEM);
	for (pos = 0; d && !end; pos++) {
		de = entry_at(sh->fs, d, pos, &end);
		if (!de || !read_entry(de, &word, name) ||
		    mpm_de_len(word) != dentry->d_name.len ||
		    memcmp(name, dentry->d_name.name, dentry->d_name.len) ||
		    !visible_target(sh->fs, word))
			continue;
		inode = morsel_pm_iget(dir->i_sb, mpm_de_ino(word));
		if (IS_ERR(inode)) {
			kfree(name);
			return ERR_CAST(inode);
		}
		dentry->d_fsdata = (void *)(uintptr_t)((u8 *)de - sh->fs->dev);
		break;
	}
	kfree(name);
	return d_splice_alias(inode, dentry);
}

/* Positions: 0 and 1 the dots, then 2 + the entry's slot number. */
static int share_readdir(struct file *file, struct dir_context *ctx)
{
	struct inode *dir = file_inode(file);
	struct morsel_share *sh = SH(dir->i_sb);
	struct mpm_inode *d = mpm_inode(sh->fs, dir->i_ino);
	struct mpm_dirent *de;
	char *name;
	bool end = false;
	u64 word;

	if (!dir_emit_dots(file, ctx))
		return 0;
	name = kmalloc(MPM_NAME_MAX + 1, GFP_KERNEL);
	if (!name)
		return -ENOMEM;
	for (; d && !end; ctx->pos++) {
		de = entry_at(sh->fs, d, ctx->pos - 2, &end);
		if (!de || !read_entry(de, &word, name) || !visible_target(sh->fs, word))
			continue;
		if (!dir_emit(ctx, name, mpm_de_len(word), mpm_de_ino(word),
			      mpm_de_type(word)))
			break;
	}
	kfree(name);
	return 0;
}

/* A cached name holds while its entry names the same, still visible inode. */
static int share_revalidate(struct dentry *dentry, unsigned int flags)
{
	struct inode *inode = d_inode_rcu(dentry);
	struct morsel_share *sh = SH(dentry->d_sb);
	u64 off = (uintptr_t)dentry->d_fsdata, word;
	struct mpm_inode *rec;
	struct mpm_dirent *de;

	if (!inode)
		return 0;	/* a negative entry: look again */
	if (IS_ROOT(dentry))
		return 1;
	if (!off || off / MPM_PAGE_SIZE >= sh->fs->nr_pages)
		return 0;
	de = (struct mpm_dirent *)(sh->fs->dev + off);
	word = READ_ONCE(de->word);
	if (mpm_de_ino(word) != inode->i_ino || mpm_de_len(word) != dentry->d_name.len)
		return 0;
	rec = mpm_inode(sh->fs, inode->i_ino);
	return rec && visible(rec, birth(inode));
}

const struct dentry_operations morsel_share_dops = {
	.d_revalidate = share_revalidate,
};

const struct inode_operations morsel_share_dir_iops = {
	.lookup = share_lookup,
};

const struct file_operations morsel_share_dir_fops = {
	.owner = THIS_MODULE,
	.llseek = generic_file_llseek,
	.read = generic_read_dir,
	.iterate_shared = share_readdir,
	.fsync = noop_fsync,
};

/* ---- a reader: leases ---- */

/* At the last close (after the last munmap): before the lease goes. */
static void drop_tree(struct morsel *m)
{
	morsel_disown_tree(m);
	WRITE_ONCE(m->root, 0);
}

/*
 * The tree whose root word is @root, for as long as the lease holds: a
 * copy of the word in the morsel (the record's may change once the lease
 * is gone), its tables and pages adopted as a mount adopts them.
 */
static int take_tree(struct morsel *m, u64 root)
{
	int err;

	WRITE_ONCE(m->root, root);
	if (root)
		m->order = mpm_root_order(root);
	err = morsel_adopt_tree(m);
	if (err)
		drop_tree(m);
	return err;
}

/*
 * Before a reader's open of @inode: lease it (first open), then check it
 * is still the sealed file it looked up.  -ESTALE: deleted meanwhile
 * (look the name up again); -EMFILE: MPM_POOL_LEASES files are open.
 */
int morsel_share_open(struct inode *inode)
{
	struct morsel_share *sh = SH(inode->i_sb);
	struct mpm_inode *rec = mpm_inode(sh->fs, inode->i_ino);
	int i, free = -1, err = 0;

	if (!S_ISREG(inode->i_mode))
		return 0;
	mutex_lock(&sh->lock);
	for (i = 0; i < MPM_POOL_LEASES; i++) {
		u64 ino = READ_ONCE(sh->mine->lease[i]);

		if (ino == inode->i_ino && sh->refs[i]) {
			sh->refs[i]++;
			goto out;
		}
		if (!ino && free < 0)
			free = i;
	}
	err = -EMFILE;
	if (free < 0)
		goto out;
	store(sh, &sh->mine->lease[free], inode->i_ino);
	smp_mb();	/* the lease before the mark; the publisher's opposite */
	err = -ESTALE;
	if (rec && visible(rec, birth(inode)))
		err = take_tree(inode->i_private, READ_ONCE(rec->root));
	if (err) {
		store(sh, &sh->mine->lease[free], 0);
		goto out;
	}
	sh->refs[free] = 1;
out:
	mutex_unlock(&sh->lock);
	return err;
}

/* The last release of a file (after its last munmap): drop the lease. */
void morsel_share_release(struct inode *inode)
{
	struct morsel_share *sh = SH(inode->i_sb);
	int i;

	if (!S_ISREG(inode->i_mode))
		return;
	mutex_lock(&sh->lock);
	for (i = 0; i < MPM_POOL_LEASES; i++) {
		if (READ_ONCE(sh->mine->lease[i]) != inode->i_ino || !sh->refs[i])
			continue;
		if (!--sh->refs[i]) {
			drop_tree(inode->i_private);
			store(sh, &sh->mine->lease[i], 0);
		}
		break;
	}
	mutex_unlock(&sh->lock);
}
