// SPDX-License-Identifier: GPL-2.0
/*
 * The walk of a persistent morselfs: check every invariant of
 * docs/persistence.md and, when asked (a mount, `morsel fsck -y`), finish
 * what a crash interrupted.  The same file is built into the module and
 * into user space; see pm_env.h.
 *
 * Three passes:
 * 1. Every tree, in a fixed order: the bad-page tree (format 2), the inode
 *    table (pre-order, entries in index order) and, after each of its
 *    record pages, the tree of every allocated inode on that page.  Marks
 *    each reachable page in @used (a 2 MiB leaf of format 3: its 512) and
 *    reports pages reached twice, entries outside the device and entries
 *    with foreign bits.  The fixed order is
 *    what makes a relocation restartable: the walk index of an entry says
 *    whether it was rewritten.
 * 2. The directories, breadth first from the root: validates every live
 *    entry, collects the entries unfinished renames have killed, then counts
 *    the links of every inode (in BFS order, skipping killed entries and
 *    the contents of unreachable directories) and looks for duplicate names.
 * 3. Recovery: finishes renames (clears the killed entries, then the
 *    rename words), reclaims orphans (root, then mode), finishes punches and
 *    frees pages past EOF.  A 2 MiB leaf such a range covers in part is
 *    split first, as the module splits it: a PTE table over its pages,
 *    taken from the pages nothing reaches, published with one store.
 *    Each step is idempotent, so a crash during recovery is recovered by
 *    the next walk.  Without @repair it only counts.
 *
 * Damage (an error) ends the walk after the pass that found it: passes 2
 * and 3 follow only entries pass 1 accepted (and only to pages of the kind
 * pass 1 reached them as), and pass 3 never runs on damage.  A repairing
 * walk that could store before it knows (a relocation rewrites entries in
 * pass 1) is preceded by a dry walk, so a mount refuses a damaged device
 * unchanged.  With @fix each error site clears the word it rejected, and
 * the walk is repeated until a round finds no damage.  Every loop is
 * bounded by the pages pass 1 marked, each at most once.
 *
 * Locking: none.  The caller owns the device: fsck runs on an unmounted
 * device; a mount walks before its super block goes live.
 */
#include "pm_check.h"

#define PAGE_WORDS	(MPM_PAGE_SIZE / 8)
#define RELOC_PENDING	_BITULL(63)
#define FIX_ROUNDS	16	/* @fix: walks until no damage is left */
#define REPORTS		32	/* errors listed per walk (all are counted) */
#define MOVE_ROUNDS	4	/* relocations until the entries are at @phys */

/* What pass 1 reached a page as (fs->kind): its level + 1, and flags. */
#define MPM_K_LEVEL	0x07
#define MPM_K_DIR	0x10	/* a directory's data page */
#define MPM_K_REC	0x20	/* a record page of the inode table */
#define MPM_K_BAD	0x40	/* a failed page, in the bad-page tree */

/* The bad-page tree's and the pool page's numbers in walk_entry() and reports. */
#define MPM_BAD_INO	(~0ULL)
#define MPM_POOL_INO	(~1ULL)

static const char * const level_name[] = { "data page", "PTE table",
	"PMD table", "PUD table", "P4D table" };

static void *page_at(struct mpm_fs *fs, __u64 page)
{
	return fs->dev + page * MPM_PAGE_SIZE;
}

static __u64 dev_offset(struct mpm_fs *fs, const void *p)
{
	return (const __u8 *)p - fs->dev;
}

static void store(struct mpm_fs *fs, __u64 *word, __u64 val)
{
	mpm_store(fs, word, val);
	fs->st.stores++;
}

/* A growing array of u64 (pm_check.c's only dynamic list). */
#define vec mpm_vec

static int vec_push(struct vec *a, __u64 x)
{
	if (a->n == a->cap) {
		__u64 cap = a->cap ? 2 * a->cap : 64;
		__u64 *v = mpm_zalloc(cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		if (a->n)
			memcpy(v, a->v, a->n * sizeof(*v));
		mpm_free(a->v);
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static bool vec_has(struct vec *a, __u64 x)
{
	__u64 lo = 0, hi = a->n;

	while (lo < hi) {
		__u64 mid = (lo + hi) / 2;

		if (a->v[mid] == x)
			return true;
		if (a->v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* --- pass 1: the trees ------------------------------------------------ */

/*
 * Page of the entry value @e (order bits cleared) against @base; 0 when
 * it is not a page of the device other than the super block.
 */
static __u64 entry_page(struct mpm_fs *fs, __u64 e, __u64 base)
{
	__u64 addr = e & MPM_E_ADDR, page;

	if (addr < base)
		return 0;
	page = (addr - base) / MPM_PAGE_SIZE;
	return page < fs->nr_pages ? page : 0;
}

/*
 * The device page of the non-zero entry *@slot, the walk's @fs->walk_idx-th.
 * During a relocation the entries before reloc_done point into the new
 * base and those after it into the old one; the one at reloc_done, when
 * marked pending, is new unless it still equals reloc_old.  A repairing
 * walk rewrites each old entry with four stores: reloc_old, the pending
 * mark, the entry, the count; one off the device too (its offset is kept,
 * so it stays off the device, and damage to clear after the relocation).
 */
static __u64 resolve(struct mpm_fs *fs, __u64 *slot, __u64 keep)
{
	struct mpm_super *sb = mpm_super(fs);
	__u64 v = mpm_load(slot), idx = fs->walk_idx++, done, page, nv;
	bool is_new;

	if (!sb->reloc_base)
		return entry_page(fs, v & ~keep, sb->base);
	done = sb->reloc_done & ~RELOC_PENDING;
	is_new = idx < done || (idx == done && (sb->reloc_done & RELOC_PENDING) &&
				v != sb->reloc_old);
	if (is_new)
		return entry_page(fs, v & ~keep, sb->reloc_base);
	page = entry_page(fs, v & ~keep, sb->base);
	if (!fs->repair)
		return page;
	nv = (v & ~MPM_E_ADDR) | (((v & MPM_E_ADDR) - sb->base + sb->reloc_base) & MPM_E_ADDR);
	store(fs, &sb->reloc_old, v);
	store(fs, &sb->reloc_done, idx | RELOC_PENDING);
	store(fs, slot, nv);
	store(fs, &sb->reloc_done, idx + 1);
	fs->st.relocated++;
	return page;
}

/*
 * May @fix clear damage now?  Not while a relocation is under way: a
 * cleared word (and the subtree below it) would drop out of the walk
 * order that reloc_done counts, and a resumed walk would read every later
 * entry against the wrong base (module review F2).  The relocation ends
 * first, damage and all; the next round clears the damage.
 */
static bool may_fix(struct mpm_fs *fs)
{
	return fs->fix && fs->repair && !mpm_super(fs)->reloc_base;
}

/*
 * Damage at *@word: count and report it; with @fix, clear the word (or
 * store @val).  Every error site goes through here.
 */
#ifdef __KERNEL__
__printf(4, 5)
#endif
static void damaged(struct mpm_fs *fs, __u64 *word, __u64 val, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs->st.errors++;
	if (may_fix(fs) && word) {
		store(fs, word, val);
		fs->st.fixed++;
	}
	if (fs->st.errors <= REPORTS)
		mpm_report(fs, MPM_ERROR, "%s%s", msg,
			   may_fix(fs) && word ? " (fixed)" : "");
	else if (fs->st.errors == REPORTS + 1)
		mpm_report(fs, MPM_ERROR, "(more errors are counted, not listed)");
}

static bool mark(struct mpm_fs *fs, __u64 page, __u64 ino, int level, __u64 *slot)
{
	__u64 *w = &fs->used[page / 64], bit = 1ULL << (page % 64);

	if (*w & bit) {
		damaged(fs, slot, 0, "page %llu (%s of inode %llu) is reached twice",
			(unsigned long long)page, level_name[level], (unsigned long long)ino);
		return false;
	}
	*w |= bit;
	fs->kind[page] = (level + 1) | (!ino && !level ? MPM_K_REC : 0) |
			 (ino && !level && fs->is_dir ? MPM_K_DIR : 0) |
			 (fs->in_bad && !level ? MPM_K_BAD : 0);
	return true;
}

/* Unmark a page; count it as leaked if it was marked. */
static void unmark(struct mpm_fs *fs, __u64 page)
{
	__u64 *w = &fs->used[page / 64], bit = 1ULL << (page % 64);

	fs->st.leaked_pages += !!(*w & bit);
	*w &= ~bit;
}

/*
 * Flags an entry at @level may carry besides its address, A and D.  A
 * 2 MiB leaf (huge_leaf()) is checked apart.
 */
static bool entry_flags_ok(__u64 f, int level)
{
	return f == (level ? MPM_E_TABLE : MPM_E_LEAF);
}

/*
 * Format 3: is @v (a non-zero entry, not a root word) a 2 MiB leaf where
 * one may be, a level-1 entry of a regular file?  Elsewhere MPM_E_HUGE is
 * a foreign bit.
 */
static bool huge_leaf(struct mpm_fs *fs, __u64 v, int level, __u64 ino, __u64 keep)
{
	return level == 1 && ino && !keep && fs->is_reg &&
	       mpm_super(fs)->version >= 3 &&
	       (v & ~MPM_E_ADDR & ~MPM_E_AD) == MPM_E_HUGE_LEAF;
}

static bool is_used(struct mpm_fs *fs, __u64 page)
{
	return fs->used[page / 64] & (1ULL << (page % 64));
}

/*
 * The 512 data pages of the 2 MiB leaf *@slot from device page @page.
 * Its pages must be a run on a 2 MiB boundary of the device, none reached
 * before; the device's physical address (where the entries will point)
 * must be 2 MiB aligned too, or the MMU would read the address's low bits
 * as PAT and reserved bits: not damage, but a device this address cannot
 * mount (counted in @unaligned; fsck leaves it).
 */
static __u64 walk_huge(struct mpm_fs *fs, __u64 *slot, __u64 page, __u64 pgoff,
		       __u64 ino)
{
	struct mpm_super *sb = mpm_super(fs);
	__u64 target = fs->phys ? fs->phys : sb->reloc_base ? sb->reloc_base : sb->base;
	__u64 i;

	if (page % MPM_HUGE_PAGES || page + MPM_HUGE_PAGES > fs->nr_pages) {
		damaged(fs, slot, 0, "inode %llu: 2 MiB leaf at %llu: device page %llu unaligned",
			(unsigned long long)ino, (unsigned long long)pgoff,
			(unsigned long long)page);
		return 0;
	}
	for (i = 0; i < MPM_HUGE_PAGES; i++) {
		if (is_used(fs, page + i)) {
			damaged(fs, slot, 0, "page %llu (2 MiB leaf, inode %llu) is reached twice",
				(unsigned long long)(page + i), (unsigned long long)ino);
			return 0;
		}
	}
	if (target % MPM_HUGE_SIZE) {
		fs->st.unaligned++;
		damaged(fs, NULL, 0, "inode %llu: 2 MiB leaf at %llu: device at %#llx unaligned",
			(unsigned long long)ino, (unsigned long long)pgoff,
			(unsigned long long)target);
	}
	for (i = 0; i < MPM_HUGE_PAGES; i++)
		mark(fs, page + i, ino, 0, slot);
	fs->st.data_pages += MPM_HUGE_PAGES;
	fs->st.huge_leaves++;
	if (pgoff == fs->leading)
		fs->leading += MPM_HUGE_PAGES;
	return page;
}

static void walk_records(struct mpm_fs *fs, struct mpm_inode *rec, __u64 first);

/*
 * Walk the entry *@slot of a level-@level table (@level 0: a leaf) whose
 * subtree starts at page offset @pgoff of inode @ino (0: the inode table).
 * @keep: the root word's order bits, or 0.  Return: the page it marked,
 * 0 if none (no entry, or damage).
 */
static __u64 walk_entry(struct mpm_fs *fs, __u64 *slot, int level,
			__u64 pgoff, __u64 ino, __u64 keep)
{
	__u64 v = mpm_load(slot), page, i;
	bool huge;

	if (!v)
		return 0;
	/* Format 2: a failed page's leaf, in a regular file only. */
	if ((v & ~keep) == MPM_POISON) {
		if (!level && ino && fs->is_reg && mpm_super(fs)->version >= 2) {
			fs->st.poisoned++;
			return 0;
		}
		damaged(fs, slot, 0, "inode %llu: %s entry %#llx at page %llu: misplaced mark",
			(unsigned long long)ino, level_name[level],
			(unsigned long long)v, (unsigned long long)pgoff);
		return 0;
	}
	page = resolve(fs, slot, keep);
	v = mpm_load(slot) & ~keep;
	huge = huge_leaf(fs, v, level, ino, keep);
	if (!huge && !entry_flags_ok(v & ~MPM_E_ADDR & ~MPM_E_AD, level)) {
		damaged(fs, slot, 0, "inode %llu: %s entry %#llx at page %llu: foreign bits",
			(unsigned long long)ino, level_name[level],
			(unsigned long long)v, (unsigned long long)pgoff);
		return 0;
	}
	if (!page) {
		damaged(fs, slot, 0, "inode %llu: %s entry %#llx at page %llu: off the device",
			(unsigned long long)ino, level_name[level],
			(unsigned long long)v, (unsigned long long)pgoff);
		return 0;
	}
	if (huge)
		return walk_huge(fs, slot, page, pgoff, ino);
	if (fs->in_bad && !level && page != pgoff) {
		damaged(fs, slot, 0, "the bad-page tree lists page %llu at %llu",
			(unsigned long long)page, (unsigned long long)pgoff);
		return 0;
	}
	/*
	 * A regular file's leaf on a listed page: a crash came between the
	 * two stores that record a failure; the leaf becomes the mark.
	 */
	if (!level && ino && fs->is_reg && (fs->kind[page] & MPM_K_BAD)) {
		fs->st.poisonings++;
		fs->st.poisoned++;
		if (fs->repair)
			store(fs, slot, MPM_POISON);
		return 0;
	}
	if (!mark(fs, page, ino, level, slot))
		return 0;
	if (!ino)
		fs->st.itable_pages++;
	else if (level)
		fs->st.table_pages++;
	else if (fs->in_bad)
		fs->st.bad_pages++;
	else
		fs->st.data_pages++;
	if (ino && !level && pgoff == fs->leading)
		fs->leading++;	/* visited in ascending page offsets */
	if (level) {
		__u64 *t = page_at(fs, page);

		mpm_cond_resched();
		for (i = 0; i < MPM_ENTRIES; i++)
			walk_entry(fs, &t[i], level - 1,
				   pgoff + i * mpm_span_pages(level - 1), ino, 0);
	} else if (!ino) {
		if (vec_push(&fs->recs, pgoff)) {
			fs->walk_err = -ENOMEM;
			return 0;
		}
		walk_records(fs, page_at(fs, page), pgoff * MPM_INODES_PER_PAGE);
	}
	return page;
}

static bool mode_ok(__u64 mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR:
	case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return !(mode & ~(__u64)(S_IFMT | 07777));
	}
	return false;
}

static const char * const xattr_prefix[] = { "security.", "trusted.", "user." };

/* A POSIX ACL's name (xattr.c), whole; the default ACL is a directory's. */
static const char acl_access[] = "system.posix_acl_access";
static const char acl_default[] = "system.posix_acl_default";

static bool is_name(const char *name, unsigned int len, const char *s)
{
	return len == strlen(s) && !memcmp(name, s, len);
}

/*
 * An ACL the kernel parses (posix_acl_from_xattr): version 2, then
 * entries of 8 bytes (tag, permissions, id), each tag a known one.
 */
static bool acl_ok(const __u8 *v, unsigned int len)
{
	__u32 version;
	__u16 tag;
	unsigned int off;

	if (len < 4 || (len - 4) % 8)
		return false;
	memcpy(&version, v, 4);
	if (version != 2)
		return false;
	for (off = 4; off < len; off += 8) {
		memcpy(&tag, v + off, 2);
		if (tag != 0x01 && tag != 0x02 && tag != 0x04 && tag != 0x08 &&
		    tag != 0x10 && tag != 0x20)
			return false;
	}
	return true;
}

/*
 * An attribute the module takes on an inode of @mode: a name with a known
 * prefix, a suffix and no NUL, or a well-formed ACL where one can be.
 */
static bool xattr_ok(const struct mpm_xattr *x, __u64 mode)
{
	const char *name = mpm_xattr_name(x);
	unsigned int i, n, len = x->name_len;

	if (memchr(name, 0, len))
		return false;
	if (is_name(name, len, acl_access) || is_name(name, len, acl_default))
		return acl_ok(mpm_xattr_value(x), x->value_len) &&
		       (mode & S_IFMT) != S_IFLNK &&
		       (is_name(name, len, acl_access) ||
			(mode & S_IFMT) == S_IFDIR);
	for (i = 0; i < ARRAY_SIZE(xattr_prefix); i++) {
		n = strlen(xattr_prefix[i]);
		if (len > n && !memcmp(name, xattr_prefix[i], n))
			return true;
	}
	return false;
}

/*
 * The attribute page of inode @ino: a leaf entry (walked, so relocated, in
 * its place in the walk order: after the inode's tree), and a list that
 * stays inside the page, of names of 1..255 bytes that the module takes,
 * none twice, and ACLs it can parse.
 */
static void walk_xattrs(struct mpm_fs *fs, struct mpm_inode *in, __u64 ino)
{
	__u64 off = 0, o, p;
	const struct mpm_xattr *x, *y;
	const char *why = NULL;
	const __u8 *page;

	fs->is_dir = false;
	fs->is_reg = false;
	p = walk_entry(fs, &in->xattr, 0, 0, ino, 0);
	page = page_at(fs, p);
	while (p && !why && off + sizeof(*x) <= MPM_PAGE_SIZE) {
		x = (const struct mpm_xattr *)(page + off);
		if (!x->name_len)
			break;
		if (x->name_len > MPM_XATTR_NAME_MAX ||
		    MPM_XATTR_SPACE(x->name_len, x->value_len) > MPM_PAGE_SIZE - off) {
			why = "runs off its page";
			break;
		}
		if (!xattr_ok(x, in->mode))
			why = "has a bad name or ACL";
		for (o = 0; !why && o < off; o += MPM_XATTR_SPACE(y->name_len, y->value_len)) {
			y = (const struct mpm_xattr *)(page + o);
			if (y->name_len == x->name_len &&
			    !memcmp(mpm_xattr_name(y), mpm_xattr_name(x), x->name_len))
				why = "appears twice";
		}
		if (!why)
			off += MPM_XATTR_SPACE(x->name_len, x->value_len);
	}
	if (why)
		damaged(fs, &in->xattr, 0, "inode %llu: the extended attribute at byte %llu %s",
			(unsigned long long)ino, (unsigned long long)off, why);
}

/*
 * The fields of an allocated inode that its type constrains, after its
 * tree was walked (@data: its data pages from offset 0 on, without a
 * hole).  Returns why the record
 * is damaged, or NULL; *@word and *@val: the store that repairs it, if
 * one word is wrong (*@word NULL: the record is freed).
 */
static const char *inode_damage(struct mpm_inode *in, __u64 version, __u64 data,
				__u64 **word, __u64 *val)
{
	__u64 root = mpm_load(&in->root), size = in->size, known = MPM_FLAGS_KNOWN;
	unsigned int order = mpm_root_order(root);
	__u64 extent = mpm_span_pages(root ? order : MPM_MAX_ORDER) * MPM_PAGE_SIZE;

	/* Format 3: a regular file's huge-page mode. */
	if (version >= 3 && (in->mode & S_IFMT) == S_IFREG &&
	    (in->flags & MPM_FL_HUGE_MASK) >> MPM_FL_HUGE_SHIFT <= MPM_FL_HUGE_MAX)
		known |= MPM_FL_HUGE_MASK;
	if (version >= 3 && (in->mode & S_IFMT) == S_IFREG)
		known |= MPM_FL_SEALED | MPM_FL_DYING;
	if (in->flags & ~known) {
		*word = &in->flags;
		*val = in->flags & MPM_FLAGS_KNOWN;
		return "has unknown attribute flags";
	}
	if (in->resv && ((in->mode & S_IFMT) != S_IFREG ||
			 mpm_resv_start(in->resv) >= mpm_resv_end(in->resv) ||
			 mpm_resv_end(in->resv) > extent)) {
		*word = &in->resv;
		*val = 0;
		return "has a reservation outside its tree";
	}
	*word = &in->size;
	*val = extent;
	switch (in->mode & S_IFMT) {
	case S_IFREG:
		if (size > extent)
			return "has a size beyond its tree";
		return NULL;
	case S_IFDIR:
		/*
		 * Directory pages are appended (the page, then the size) and
		 * never freed below the size: no hole below it.
		 */
		if (size % MPM_PAGE_SIZE || size > extent || size / MPM_PAGE_SIZE > data) {
			if (data * MPM_PAGE_SIZE < extent)
				*val = data * MPM_PAGE_SIZE;
			return "has a size its pages do not hold";
		}
		break;
	case S_IFLNK:
		/*
		 * The target's one data page, then its size (0 until a crash
		 * is recovered: the link is an orphan until its name is).
		 */
		*word = NULL;
		if (root ? order || size >= MPM_PAGE_SIZE : size)
			return "is not a symbolic link's one page";
		break;
	default:
		*word = NULL;
		if (root || size)
			return "is a special file with data";
		break;
	}
	/* Only a regular file is punched. */
	*word = &in->punch_start;
	*val = 0;
	return in->punch_start & 1 ? "has a punch under way" : NULL;
}

/* Free a damaged record (@fix): its tree, attributes, then the mode. */
static void drop_record(struct mpm_fs *fs, struct mpm_inode *in)
{
	if (!may_fix(fs))
		return;
	store(fs, &in->root, 0);
	store(fs, &in->xattr, 0);
	store(fs, &in->mode, 0);
	fs->st.fixed++;
}

/* The allocated inodes of one record page (inode numbers from @first). */
static void walk_records(struct mpm_fs *fs, struct mpm_inode *rec, __u64 first)
{
	const char *why;
	__u64 data, *word, val;
	int i;

	for (i = 0; i < MPM_INODES_PER_PAGE; i++) {
		struct mpm_inode *in = &rec[i];
		__u64 ino = first + i, root = mpm_load(&in->root);
		unsigned int order = mpm_root_order(root);

		if (!mpm_load(&in->mode))
			continue;
		if (!ino) {
			damaged(fs, &in->mode, 0, "inode 0 is allocated");
			continue;
		}
		fs->st.inodes++;
		fs->max_ino = ino;
		if (mode_ok(in->mode) && fs->max_order && order <= MPM_MAX_ORDER &&
		    in->min_order <= MPM_MAX_ORDER &&
		    (order > fs->max_order || in->min_order > fs->max_order ||
		     ((in->mode & S_IFMT) == S_IFREG &&
		      mpm_order_for_size(in->size) > fs->max_order))) {
			/* Not damage: a device from a kernel with 5-level paging. */
			fs->st.too_high++;
			damaged(fs, NULL, 0, "inode %llu: order %u, minimum order %llu: above %u",
				(unsigned long long)ino, order,
				(unsigned long long)in->min_order, fs->max_order);
			continue;
		}
		if (!mode_ok(in->mode) || order > MPM_MAX_ORDER ||
		    in->min_order > MPM_MAX_ORDER) {
			damaged(fs, NULL, 0, "inode %llu: mode %#llo, order %u, minimum order %llu",
				(unsigned long long)ino, (unsigned long long)in->mode, order,
				(unsigned long long)in->min_order);
			drop_record(fs, in);
			continue;
		}
		fs->is_dir = (in->mode & S_IFMT) == S_IFDIR;
		fs->is_reg = (in->mode & S_IFMT) == S_IFREG;
		fs->leading = 0;
		walk_entry(fs, &in->root, order, 0, ino, MPM_ROOT_ORDER_MASK);
		data = fs->leading;
		walk_xattrs(fs, in, ino);
		why = inode_damage(in, mpm_super(fs)->version, data, &word, &val);
		if (!why)
			continue;
		if (word) {
			damaged(fs, word, val, "inode %llu: %s (size %llu, %llu pages)",
				(unsigned long long)ino, why, (unsigned long long)in->size,
				(unsigned long long)data);
		} else {
			damaged(fs, NULL, 0, "inode %llu: %s (size %llu, root %#llx)",
				(unsigned long long)ino, why, (unsigned long long)in->size,
				(unsigned long long)mpm_load(&in->root));
			drop_record(fs, in);
		}
	}
}

/*
 * --- lookups (after pass 1: every entry is against fs->base) -----------
 *
 * During a walk they follow an entry only to a page pass 1 reached at the
 * level the entry implies (fs->kind); after it (the module, at run time)
 * the walk found no damage, so every entry is one it accepted.
 */

__u64 mpm_entry_page(struct mpm_fs *fs, __u64 e)
{
	return entry_page(fs, e, fs->base);
}

void *mpm_tree_page(struct mpm_fs *fs, __u64 root, __u64 pgoff)
{
	int level = mpm_root_order(root);
	__u64 e = root & ~MPM_ROOT_ORDER_MASK, page;

	if (!e || pgoff >= mpm_span_pages(level))
		return NULL;
	for (;;) {
		page = entry_page(fs, e, fs->base);
		if (page && level == 1 && (e & MPM_E_HUGE)) {	/* a 2 MiB leaf */
			page += pgoff;
			level = 0;
		}
		if (!page || (fs->kind && (fs->kind[page] & MPM_K_LEVEL) != level + 1))
			return NULL;
		if (level == 0)
			return page_at(fs, page);
		level--;
		e = mpm_load((__u64 *)page_at(fs, page) + pgoff / mpm_span_pages(level));
		pgoff %= mpm_span_pages(level);
		if (!e)
			return NULL;
	}
}

const struct mpm_xattr *mpm_xattr_next(struct mpm_fs *fs, struct mpm_inode *in,
				       const struct mpm_xattr *x)
{
	__u64 page = entry_page(fs, mpm_load(&in->xattr), fs->base), off;
	const __u8 *p;

	if (!page)
		return NULL;
	p = page_at(fs, page);
	off = x ? (const __u8 *)x - p + MPM_XATTR_SPACE(x->name_len, x->value_len) : 0;
	if (off + sizeof(*x) > MPM_PAGE_SIZE)
		return NULL;
	x = (const struct mpm_xattr *)(p + off);
	return x->name_len ? x : NULL;
}

struct mpm_inode *mpm_inode(struct mpm_fs *fs, __u64 ino)
{
	struct mpm_inode *rec;

	if (!ino || ino > MPM_MAX_INO)
		return NULL;
	rec = mpm_tree_page(fs, mpm_super(fs)->itable, ino / MPM_INODES_PER_PAGE);
	if (!rec || (fs->kind && !(fs->kind[dev_offset(fs, rec) / MPM_PAGE_SIZE] & MPM_K_REC)))
		return NULL;
	return &rec[ino % MPM_INODES_PER_PAGE];
}

/*
 * The index of inode @ino in fs->links (record pages in walk order, 32
 * slots each), or -1 if no record page pass 1 walked holds it: memory in
 * proportion to the inode table's pages, whatever the numbers.
 */
static long long ino_slot(struct mpm_fs *fs, __u64 ino)
{
	__u64 lo = 0, hi = fs->recs.n, want = ino / MPM_INODES_PER_PAGE;

	while (lo < hi) {
		__u64 mid = (lo + hi) / 2;

		if (fs->recs.v[mid] == want)
			return mid * MPM_INODES_PER_PAGE + ino % MPM_INODES_PER_PAGE;
		if (fs->recs.v[mid] < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

__u32 mpm_links(struct mpm_fs *fs, __u64 ino)
{
	long long slot = ino_slot(fs, ino);

	return slot < 0 || !fs->links ? 0 : fs->links[slot];
}

static struct mpm_inode *live_inode(struct mpm_fs *fs, __u64 ino)
{
	struct mpm_inode *in = mpm_inode(fs, ino);

	return in && mpm_load(&in->mode) ? in : NULL;
}

/* --- pass 2: the directories ------------------------------------------ */

/* A directory entry at device offset @off: only in a directory's page. */
static struct mpm_dirent *dirent_at(struct mpm_fs *fs, __u64 off)
{
	__u64 page = off / MPM_PAGE_SIZE, slot = off % MPM_PAGE_SIZE;

	if (!page || page >= fs->nr_pages || !mpm_used(fs, page) ||
	    (fs->kind && !(fs->kind[page] & MPM_K_DIR)) ||
	    slot % MPM_DIRENT_SIZE || slot / MPM_DIRENT_SIZE >= MPM_DIRENTS_PER_PAGE)
		return NULL;
	return (struct mpm_dirent *)(fs->dev + off);
}

static bool name_ok(const struct mpm_dirent *de, unsigned int len)
{
	unsigned int i;

	if (!len || len > MPM_NAME_MAX)
		return false;
	if (de->name[0] == '.' && (len == 1 || (len == 2 && de->name[1] == '.')))
		return false;
	for (i = 0; i < len; i++)
		if (!de->name[i] || de->name[i] == '/')
			return false;
	return true;
}

static bool test_and_set(__u64 *bits, long long i)
{
	bool was = bits[i / 64] >> (i % 64) & 1;

	bits[i / 64] |= 1ULL << (i % 64);
	return was;
}

/*
 * A live entry's target, or NULL (damage: with @fix the entry is cleared)
 * if it is not valid.  *@slot: the target's index in fs->links.
 */
static struct mpm_inode *entry_target(struct mpm_fs *fs, __u64 dir,
				      struct mpm_dirent *de, __u64 word,
				      long long *slot)
{
	__u64 ino = mpm_de_ino(word);
	struct mpm_inode *in = ino != MPM_ROOT_INO ? live_inode(fs, ino) : NULL;
	const char *why = NULL;

	*slot = ino_slot(fs, ino);
	if (!in || *slot < 0)
		why = "names a free inode";
	else if (!name_ok(de, mpm_de_len(word)))
		why = "has a bad name";
	else if (mpm_de_type(word) != (in->mode & S_IFMT) >> 12)
		why = "has the wrong file type";
	else if ((in->mode & S_IFMT) == S_IFDIR && fs->links[*slot])
		why = "is a second name of a directory";
	if (!why)
		return in;
	damaged(fs, &de->word, 0, "directory %llu: the entry at %#llx (inode %llu) %s",
		(unsigned long long)dir, (unsigned long long)dev_offset(fs, de),
		(unsigned long long)ino, why);
	return NULL;
}

static int cmp_names(const void *a, const void *b)
{
	const struct mpm_dirent *x = *(const struct mpm_dirent * const *)a;
	const struct mpm_dirent *y = *(const struct mpm_dirent * const *)b;
	unsigned int lx = mpm_de_len(x->word), ly = mpm_de_len(y->word);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	if (memcmp(x->name, y->name, lx))
		return memcmp(x->name, y->name, lx);
	return x < y ? -1 : x > y;	/* the same name: the first entry first */
}

static bool same_name(const struct mpm_dirent *x, const struct mpm_dirent *y)
{
	return mpm_de_len(x->word) == mpm_de_len(y->word) &&
	       !memcmp(x->name, y->name, mpm_de_len(x->word));
}

/*
 * One directory of the counting pass: count the links of its live entries
 * (except those a rename killed), queue its subdirectories, report names
 * that appear twice.  Its pages below the size are at most the data pages
 * pass 1 counted (inode_damage()), so the loops are bounded by the device.
 */
static int count_dir(struct mpm_fs *fs, __u64 dir, struct vec *queue,
		     __u64 *seen, struct vec *pending)
{
	struct mpm_inode *d = mpm_inode(fs, dir);
	__u64 npages = d->size / MPM_PAGE_SIZE, p, n = 0, i;
	const struct mpm_dirent **names;
	long long slot;
	int s;

	names = mpm_zalloc((npages * MPM_DIRENTS_PER_PAGE + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (p = 0; p < npages; p++) {
		struct mpm_dirent *de = mpm_tree_page(fs, d->root, p);

		mpm_cond_resched();
		for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
			__u64 word = mpm_load(&de->word);
			struct mpm_inode *in;

			if (!word || vec_has(&fs->dead_vec, dev_offset(fs, de)))
				continue;
			in = entry_target(fs, dir, de, word, &slot);
			if (!in)
				continue;
			fs->st.names++;
			fs->links[slot]++;
			names[n++] = de;
			if (pending && (de->replaces || de->displaces) &&
			    vec_push(pending, dev_offset(fs, de))) {
				mpm_free(names);
				return -ENOMEM;
			}
			if ((in->mode & S_IFMT) == S_IFDIR && !test_and_set(seen, slot) &&
			    vec_push(queue, mpm_de_ino(word))) {
				mpm_free(names);
				return -ENOMEM;
			}
		}
	}
	mpm_sort(names, n, sizeof(*names), cmp_names);
	for (i = 1; i < n; i++) {
		if (same_name(names[i - 1], names[i]))
			damaged(fs, (__u64 *)&names[i]->word, 0,
				"directory %llu: the name '%.*s' appears twice",
				(unsigned long long)dir, (int)mpm_de_len(names[i]->word),
				names[i]->name);
	}
	mpm_free(names);
	return 0;
}

/*
 * Collect the entries unfinished renames killed: the targets of the
 * rename words of every live entry of every directory reachable from the
 * root, whatever the rename words say (a killed entry's own words too).
 */
static int collect_dead(struct mpm_fs *fs, struct vec *queue, __u64 *seen)
{
	__u64 q, p;
	int s;

	for (q = 0; q < queue->n; q++) {
		struct mpm_inode *d = mpm_inode(fs, queue->v[q]);

		for (p = 0; p < d->size / MPM_PAGE_SIZE; p++) {
			struct mpm_dirent *de = mpm_tree_page(fs, d->root, p);

			mpm_cond_resched();
			for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
				__u64 word = mpm_load(&de->word), ino = mpm_de_ino(word);
				long long slot = ino_slot(fs, ino);
				struct mpm_inode *in;

				if (!word)
					continue;
				if ((de->replaces && vec_push(&fs->dead_vec, de->replaces)) ||
				    (de->displaces && vec_push(&fs->dead_vec, de->displaces)))
					return -ENOMEM;
				in = slot >= 0 ? live_inode(fs, ino) : NULL;
				if (in && (in->mode & S_IFMT) == S_IFDIR &&
				    !test_and_set(seen, slot) && vec_push(queue, ino))
					return -ENOMEM;
			}
		}
	}
	if (fs->dead_vec.n)
		mpm_sort(fs->dead_vec.v, fs->dead_vec.n, sizeof(__u64), cmp_u64);
	return 0;
}

/* --- pass 3: recovery ------------------------------------------------- */

/*
 * A free page for a table that recovery makes (split_huge()), marked as a
 * PTE table; 0 if none is free.  Pages pass 1 found unreachable are free,
 * and so are the ones recovery has dropped so far (their entries cleared).
 */
static __u64 take_free_page(struct mpm_fs *fs)
{
	__u64 p;

	for (p = 1; p < fs->nr_pages; p++) {
		if (!is_used(fs, p)) {
			fs->used[p / 64] |= 1ULL << (p % 64);
			fs->kind[p] = 2;	/* a PTE table */
			fs->st.table_pages++;
			return p;
		}
	}
	return 0;
}

/*
 * Split the 2 MiB leaf *@slot of device page @page, as the module does
 * before a punch, a truncation or an eviction takes part of it: a zeroed
 * free page gets 512 leaves for the same pages, then one store puts it in
 * the leaf's place.  A crash before that store leaves the new table
 * unreachable, so free.  Return: false, leaving the leaf, when counting
 * only or when no page is free.
 */
static bool split_huge(struct mpm_fs *fs, __u64 *slot, __u64 page)
{
	__u64 v = mpm_load(slot), t, *tab, i;

	if (!fs->repair)
		return false;
	t = take_free_page(fs);
	if (!t)
		return false;
	tab = page_at(fs, t);
	mpm_zero(fs, tab, MPM_PAGE_SIZE);
	fs->st.stores++;
	for (i = 0; i < MPM_HUGE_PAGES; i++)
		store(fs, &tab[i], MPM_E_LEAF | (v & MPM_E_AD) |
		      (fs->base + (page + i) * MPM_PAGE_SIZE));
	store(fs, slot, MPM_E_TABLE | MPM_E_AD | (fs->base + t * MPM_PAGE_SIZE));
	fs->st.splits++;
	return true;
}

static void drop_range(struct mpm_fs *fs, __u64 *slot, int level, __u64 pgoff,
		       __u64 from, __u64 to, __u64 keep);

/*
 * drop_range() for the 2 MiB leaf *@slot (device page @page): all of it
 * goes with one store; part of it, after a split (the rest stays).  When
 * only counting, or with no page free for the table, the part's pages
 * count as leaked and, repairing, are zeroed where they are: they read as
 * the hole they should be, and the leaf stays.
 */
static void drop_huge(struct mpm_fs *fs, __u64 *slot, __u64 page, __u64 pgoff,
		      __u64 from, __u64 to)
{
	__u64 lo = from > pgoff ? from - pgoff : 0;
	__u64 hi = to < pgoff + MPM_HUGE_PAGES ? to - pgoff : MPM_HUGE_PAGES, i;

	if (!lo && hi == MPM_HUGE_PAGES) {
		if (fs->repair)
			store(fs, slot, 0);
		for (i = 0; i < MPM_HUGE_PAGES; i++)
			unmark(fs, page + i);
		return;
	}
	if (split_huge(fs, slot, page)) {
		drop_range(fs, slot, 1, pgoff, from, to, 0);
		return;
	}
	for (i = lo; i < hi; i++) {
		if (!fs->repair) {
			unmark(fs, page + i);
			continue;
		}
		mpm_zero(fs, page_at(fs, page + i), MPM_PAGE_SIZE);
		fs->st.stores++;
	}
}

/*
 * Visit the data pages at page offsets [@from, @to) of the subtree under
 * *@slot (a level-@level entry at page offset @pgoff): count them as
 * leaked and, repairing, clear their entries and unmark them.
 */
static void drop_range(struct mpm_fs *fs, __u64 *slot, int level, __u64 pgoff,
		       __u64 from, __u64 to, __u64 keep)
{
	__u64 v = mpm_load(slot) & ~keep, page, i, span = mpm_span_pages(level);

	mpm_cond_resched();

	if (!v || pgoff + span <= from || pgoff >= to)
		return;
	if (v == MPM_POISON) {		/* a failed page's mark (level 0) */
		fs->st.poisonings++;
		if (fs->repair)
			store(fs, slot, 0);
		return;
	}
	page = entry_page(fs, v, fs->base);
	if (!page)
		return;
	if (level == 1 && (v & MPM_E_HUGE)) {
		drop_huge(fs, slot, page, pgoff, from, to);
		return;
	}
	if (level == 0) {
		if (fs->repair)
			store(fs, slot, 0);
		unmark(fs, page);
		return;
	}
	for (i = 0; i < MPM_ENTRIES; i++)
		drop_range(fs, (__u64 *)page_at(fs, page) + i, level - 1,
			   pgoff + i * mpm_span_pages(level - 1), from, to, 0);
}

static void unmark_tree(struct mpm_fs *fs, __u64 e, int level)
{
	__u64 page = entry_page(fs, e, fs->base), i;

	if (!e || !page)
		return;
	if (level == 1 && (e & MPM_E_HUGE)) {	/* a 2 MiB leaf */
		for (i = 0; i < MPM_HUGE_PAGES; i++)
			unmark(fs, page + i);
		return;
	}
	unmark(fs, page);
	if (level == 0)
		return;
	for (i = 0; i < MPM_ENTRIES; i++)
		unmark_tree(fs, mpm_load((__u64 *)page_at(fs, page) + i), level - 1);
}

static void finish_renames(struct mpm_fs *fs, struct vec *pending)
{
	__u64 i;

	for (i = 0; i < pending->n; i++) {
		struct mpm_dirent *de = (struct mpm_dirent *)(fs->dev + pending->v[i]);
		struct mpm_dirent *old = dirent_at(fs, de->replaces);
		struct mpm_dirent *over = dirent_at(fs, de->displaces);

		fs->st.renames++;
		if (!fs->repair)
			continue;
		if (old && old != de)
			store(fs, &old->word, 0);
		if (over && over != de)
			store(fs, &over->word, 0);
		store(fs, &de->replaces, 0);
		store(fs, &de->displaces, 0);
	}
}

/*
 * Lower a tree above the order its size, minimum order and reservation
 * need (after the pages past EOF are gone): a crash between raising the
 * order and storing the size, minimum or reservation, or between a
 * shrink's size and its lowering, leaves it higher.  Each step is one
 * store of the root word: entry 0 of the top table becomes the root; the
 * top table and the (empty) tables of its other entries become
 * unreachable.
 */
static void fit_order(struct mpm_fs *fs, struct mpm_inode *in)
{
	__u64 root = mpm_load(&in->root), want = mpm_order_for_size(in->size), page, *t;
	unsigned int order = mpm_root_order(root), i;

	if (want < in->min_order)
		want = in->min_order;
	if (want < mpm_order_for_size(mpm_resv_end(in->resv)))
		want = mpm_order_for_size(mpm_resv_end(in->resv));
	while (root && order > want) {
		page = entry_page(fs, root & ~MPM_ROOT_ORDER_MASK, fs->base);
		if (!page)
			return;
		t = page_at(fs, page);
		/*
		 * Order 1 has no place for a 2 MiB leaf at offset 0: it is
		 * split first, as the module splits it; with no page free
		 * for the table the tree keeps its order.
		 */
		if (order == 2 && (mpm_load(&t[0]) & MPM_E_HUGE) && fs->repair &&
		    !split_huge(fs, &t[0], entry_page(fs, mpm_load(&t[0]), fs->base)))
			return;
		for (i = 1; i < MPM_ENTRIES; i++)
			unmark_tree(fs, mpm_load(&t[i]), order - 1);
		unmark(fs, page);
		order--;
		root = mpm_load(&t[0]);
		root = root ? root | (__u64)order << MPM_ROOT_ORDER_SHIFT : 0;
		fs->st.lowered++;
		if (fs->repair)
			store(fs, &in->root, root);
	}
}

/*
 * Bytes past EOF in the last page read as zeros once the size grows again.
 * A truncate zeroes them after storing the size (a crash may come first),
 * and a mapping may write there: a repair zeroes them.  Not a leak.
 */
static void zero_tail(struct mpm_fs *fs, struct mpm_inode *in)
{
	__u64 off = in->size % MPM_PAGE_SIZE, i;
	__u8 *page;

	if (!off || !fs->repair || (in->mode & S_IFMT) != S_IFREG)
		return;
	page = mpm_tree_page(fs, mpm_load(&in->root), in->size / MPM_PAGE_SIZE);
	if (!page)
		return;
	for (i = off; i < MPM_PAGE_SIZE && !page[i]; i++)
		;
	if (i < MPM_PAGE_SIZE) {
		mpm_zero(fs, page + off, MPM_PAGE_SIZE - off);
		fs->st.stores++;
	}
}

static void recover_inode(struct mpm_fs *fs, __u64 ino, struct mpm_inode *in)
{
	__u64 root = mpm_load(&in->root), eof;
	unsigned int order = mpm_root_order(root);

	if (!mpm_links(fs, ino) && ino != MPM_ROOT_INO) {
		/* A deleted file a reader host may still map (issue 25). */
		if (vec_has(&fs->keep, ino)) {
			fs->st.kept++;
			return;
		}
		fs->st.orphans++;
		unmark_tree(fs, root & ~MPM_ROOT_ORDER_MASK, order);
		unmark_tree(fs, mpm_load(&in->xattr), 0);
		if (fs->repair) {
			store(fs, &in->root, 0);
			store(fs, &in->xattr, 0);
			store(fs, &in->mode, 0);
		}
		return;
	}
	if (in->punch_start & 1) {
		fs->st.punches++;
		drop_range(fs, &in->root, order, 0, in->punch_start / MPM_PAGE_SIZE,
			   in->punch_end / MPM_PAGE_SIZE, MPM_ROOT_ORDER_MASK);
		if (fs->repair)
			store(fs, &in->punch_start, 0);
	}
	eof = (in->size + MPM_PAGE_SIZE - 1) / MPM_PAGE_SIZE;
	drop_range(fs, &in->root, order, 0, eof, mpm_span_pages(order),
		   MPM_ROOT_ORDER_MASK);
	fit_order(fs, in);
	zero_tail(fs, in);
}

/* --- the walk ------------------------------------------------------ */

/* Whether entries can address @nr_pages pages from @base. */
static bool addr_range_ok(__u64 base, __u64 nr_pages)
{
	__u64 end = base + nr_pages * MPM_PAGE_SIZE;

	return nr_pages < (1ULL << 40) && end > base && end <= (MPM_E_ADDR | 0xfff) + 1;
}

static int check_super(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);

	if (fs->nr_pages < 2 || sb->magic != MPM_MAGIC) {
		mpm_report(fs, MPM_ERROR, "no persistent morselfs here (bad magic)");
		return -EINVAL;
	}
	if (sb->version < 1 || sb->version > MPM_VERSION || sb->nr_devices != 1) {
		mpm_report(fs, MPM_ERROR, "format %llu, %llu devices; this is format %d",
			   (unsigned long long)sb->version,
			   (unsigned long long)sb->nr_devices, MPM_VERSION);
		return -EINVAL;
	}
	if (sb->nr_pages > fs->nr_pages || sb->nr_pages < 2 ||
	    sb->base % MPM_PAGE_SIZE || sb->reloc_base % MPM_PAGE_SIZE ||
	    !addr_range_ok(sb->base, sb->nr_pages) ||
	    !addr_range_ok(sb->reloc_base, sb->nr_pages) ||
	    mpm_root_order(sb->itable) != MPM_ITABLE_ORDER ||
	    (sb->version < 2 && sb->badtree)) {
		mpm_report(fs, MPM_ERROR,
			   "bad super block: %llu of %llu pages, base %#llx, moving to %#llx",
			   (unsigned long long)sb->nr_pages, (unsigned long long)fs->nr_pages,
			   (unsigned long long)sb->base, (unsigned long long)sb->reloc_base);
		return -EINVAL;
	}
	fs->nr_pages = sb->nr_pages;
	return 0;
}

/* Back to the state before a round: nothing marked, counted or collected. */
static void reset_round(struct mpm_fs *fs)
{
	__u64 fixed = fs->st.fixed, relocated = fs->st.relocated, stores = fs->st.stores;

	memset(&fs->st, 0, sizeof(fs->st));
	fs->st.fixed = fixed;		/* over all rounds */
	fs->st.relocated = relocated;
	fs->st.stores = stores;
	memset(fs->used, 0, (fs->nr_pages + 63) / 64 * sizeof(__u64));
	memset(fs->kind, 0, fs->nr_pages);
	fs->max_ino = 0;
	fs->walk_err = 0;
	fs->recs.n = 0;
	fs->dead_vec.n = 0;
	mpm_free(fs->links);
	fs->links = NULL;
}

/*
 * The bad-page tree (format 2), first: a regular file's leaf on a page it
 * lists is then known to be an unfinished recording (walk_entry()).
 */
static void walk_bad(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);
	__u64 root = mpm_load(&sb->badtree);
	unsigned int order = mpm_root_order(root);

	if (!root)
		return;
	if (order > MPM_MAX_ORDER || (fs->max_order && order > fs->max_order)) {
		damaged(fs, &sb->badtree, 0, "the bad-page tree has order %u", order);
		return;
	}
	fs->is_dir = false;
	fs->is_reg = false;
	fs->in_bad = true;
	walk_entry(fs, &sb->badtree, order, 0, MPM_BAD_INO, MPM_ROOT_ORDER_MASK);
	fs->in_bad = false;
}

/* The pool page of a shared pool: one leaf, the writer's and readers' slots. */
static void walk_pool(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);

	struct mpm_pool_slot *slots;
	__u64 page;

	if (!mpm_load(&sb->pool))
		return;
	fs->is_dir = false;
	fs->is_reg = false;
	page = walk_entry(fs, &sb->pool, 0, 0, MPM_POOL_INO, 0);
	slots = page ? page_at(fs, page) : NULL;
	if (slots && mpm_load(&slots[0].magic) != MPM_POOL_MAGIC) {
		damaged(fs, &sb->pool, 0, "the pool page has no pool magic");
		unmark(fs, page);
	}
}

/*
 * One walk: the three passes, each only if the ones before found no
 * damage.  -EAGAIN: a repairing walk finished a relocation to an address
 * that is not the device's (a crash during a relocating mount, then a
 * second move): walk again, to move the entries on to @phys.
 */
static int walk_round(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);
	struct vec queue = { 0 }, pending = { 0 };
	__u64 *seen = NULL, ino, i, nslots;
	struct mpm_inode *root;
	int err;

	reset_round(fs);

	/* Pass 1, starting (or resuming) a relocation when repairing. */
	if (fs->repair && fs->phys && fs->phys != sb->base && !sb->reloc_base) {
		store(fs, &sb->reloc_done, 0);
		store(fs, &sb->reloc_old, 0);
		store(fs, &sb->reloc_base, fs->phys);
	}
	fs->walk_idx = 0;
	fs->used[0] = 1;
	walk_bad(fs);
	walk_pool(fs);
	walk_entry(fs, &sb->itable, MPM_ITABLE_ORDER, 0, 0, MPM_ROOT_ORDER_MASK);
	if (fs->walk_err)
		return fs->walk_err;
	if (sb->reloc_base) {
		if (!fs->repair) {
			/* Entries against two bases: pass 2 cannot look them up. */
			if (!fs->dry)
				damaged(fs, NULL, 0,
					"relocation to %#llx unfinished (a mount or -y ends it)",
					(unsigned long long)sb->reloc_base);
			return 0;
		}
		if (fs->st.errors && !fs->fix)
			return 0;	/* resumed once the damage is removed */
		store(fs, &sb->base, sb->reloc_base);
		store(fs, &sb->reloc_base, 0);
		if (fs->st.errors)
			return -EAGAIN;	/* @fix: the damage, against one base */
	}
	fs->base = sb->base;
	if (fs->st.errors)
		return 0;
	if (fs->repair && fs->phys && fs->base != fs->phys)
		return -EAGAIN;

	/* Pass 2. */
	root = live_inode(fs, MPM_ROOT_INO);
	if (!root || (root->mode & S_IFMT) != S_IFDIR) {
		damaged(fs, NULL, 0, "the root directory (inode 1) is missing");
		return 0;
	}
	err = -ENOMEM;
	nslots = fs->recs.n * MPM_INODES_PER_PAGE;
	fs->links = mpm_zalloc(nslots * sizeof(*fs->links));
	seen = mpm_zalloc((nslots + 63) / 64 * sizeof(__u64));
	if (!fs->links || !seen || vec_push(&queue, MPM_ROOT_INO))
		goto out;
	test_and_set(seen, ino_slot(fs, MPM_ROOT_INO));
	err = collect_dead(fs, &queue, seen);
	if (err)
		goto out;
	/*
	 * Count in BFS order; a directory only killed entries name is empty
	 * of links when its turn comes and its entries do not count.
	 */
	memset(seen, 0, (nslots + 63) / 64 * sizeof(__u64));
	test_and_set(seen, ino_slot(fs, MPM_ROOT_INO));
	queue.n = 1;
	for (i = 0; i < queue.n; i++) {
		if (queue.v[i] != MPM_ROOT_INO && !mpm_links(fs, queue.v[i]))
			continue;
		fs->st.dirs++;
		err = count_dir(fs, queue.v[i], &queue, seen, &pending);
		if (err)
			goto out;
	}
	err = 0;
	if (fs->st.errors)
		goto out;

	/* Pass 3. */
	finish_renames(fs, &pending);
	/*
	 * Over the record pages pass 1 walked (ascending), not every number
	 * up to max_ino: one record page far into the inode table would make
	 * that 2^32 lookups.
	 */
	for (i = 0; i < fs->recs.n; i++) {
		__u64 r;

		for (r = 0; r < MPM_INODES_PER_PAGE; r++) {
			struct mpm_inode *in;

			ino = fs->recs.v[i] * MPM_INODES_PER_PAGE + r;
			if (!ino || ino > fs->max_ino)
				continue;
			in = live_inode(fs, ino);
			if (in)
				recover_inode(fs, ino, in);
		}
		if (!(i % 128))
			mpm_cond_resched();
	}
	for (i = 0; i < (fs->nr_pages + 63) / 64; i++)
		fs->st.used_pages += mpm_popcount(fs->used[i]);
out:
	mpm_free(seen);
	mpm_free(queue.v);
	mpm_free(pending.v);
	return err;
}

int mpm_walk(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);
	bool repair = fs->repair;
	int err, round;

	memset(&fs->st, 0, sizeof(fs->st));
	fs->max_ino = 0;
	err = check_super(fs);
	if (err)
		return err;
	/* Per device page: past INT_MAX bytes for large devices (vmalloc). */
	fs->used = mpm_zalloc_large((fs->nr_pages + 63) / 64 * sizeof(__u64));
	fs->kind = mpm_zalloc_large(fs->nr_pages);
	if (!fs->used || !fs->kind) {
		err = -ENOMEM;
		goto out;
	}
	/*
	 * A mount recovers only an undamaged device.  Its walk stores before
	 * pass 1 ends only when it relocates: check first, storing nothing.
	 * (With a relocation already under way the check is pass 1's: pass 2
	 * waits for the entries to agree on one base.)
	 */
	if (repair && !fs->fix &&
	    (sb->reloc_base || (fs->phys && fs->phys != sb->base))) {
		fs->repair = false;
		fs->dry = true;
		err = walk_round(fs);
		fs->dry = false;
		fs->repair = repair;
		if (err || fs->st.errors)
			goto out;
	}
	for (round = 0; ; round++) {
		__u64 fixed = fs->st.fixed;

		err = walk_round(fs);
		if (err == -EAGAIN && round < MOVE_ROUNDS)
			continue;
		/* Clearing damage can leave more (a name of a freed inode). */
		if (!err && fs->st.errors && fs->st.fixed > fixed && round < FIX_ROUNDS)
			continue;
		break;
	}
	if (err == -EAGAIN) {
		mpm_report(fs, MPM_ERROR, "the entries do not reach %#llx",
			   (unsigned long long)fs->phys);
		fs->st.errors++;
		err = 0;
	}
out:
	mpm_free(fs->kind);
	fs->kind = NULL;
	return err;
}

int mpm_open_shared(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);
	int err = check_super(fs);

	if (err)
		return err;
	if (sb->reloc_base)
		return -EBUSY;
	fs->base = sb->base;
	return 0;
}

void mpm_fs_release(struct mpm_fs *fs)
{
	mpm_free(fs->used);
	mpm_free(fs->links);
	mpm_free(fs->dead_vec.v);
	mpm_free(fs->recs.v);
	mpm_free(fs->keep.v);
	mpm_free(fs->kind);
	fs->kind = NULL;
	fs->keep = (struct mpm_vec){ 0 };
	fs->recs = (struct mpm_vec){ 0 };
	fs->used = NULL;
	fs->links = NULL;
	fs->dead_vec.v = NULL;
	fs->dead_vec.n = 0;
	fs->dead_vec.cap = 0;
}
