// SPDX-License-Identifier: GPL-2.0
/*
 * The walk of a persistent morselfs: check every invariant of
 * docs/persistence.md and, when asked (a mount, `morsel fsck -y`), finish
 * what a crash interrupted.  The same file is built into the module and
 * into user space; see pm_env.h.
 *
 * Three passes:
 * 1. Every tree, in a fixed order: the inode table (pre-order, entries in
 *    index order) and, after each of its record pages, the tree of every
 *    allocated inode on that page.  Marks each reachable page in @used and
 *    reports pages reached twice, entries outside the device and entries
 *    with foreign bits.  The fixed order is what makes a relocation
 *    restartable: the walk index of an entry says whether it was rewritten.
 * 2. The directories, breadth first from the root: validates every live
 *    entry, collects the entries unfinished renames have killed, then counts
 *    the links of every inode (in BFS order, skipping killed entries and
 *    the contents of unreachable directories) and looks for duplicate names.
 * 3. Recovery: finishes renames (clears the killed entries, then the
 *    rename words), reclaims orphans (root, then mode), finishes punches and
 *    frees pages past EOF.  Each step is idempotent, so a crash during
 *    recovery is recovered by the next walk.  Without @repair it only counts.
 *
 * Locking: none.  The caller owns the device: fsck runs on an unmounted
 * device; a mount walks before its super block goes live.
 */
#include "pm_check.h"

#define PAGE_WORDS	(MPM_PAGE_SIZE / 8)
#define RELOC_PENDING	_BITULL(63)

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
 * mark, the entry, the count.
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
	if (!fs->repair || !page)
		return page;
	nv = (v & ~MPM_E_ADDR) | (((v & MPM_E_ADDR) - sb->base + sb->reloc_base) & MPM_E_ADDR);
	store(fs, &sb->reloc_old, v);
	store(fs, &sb->reloc_done, idx | RELOC_PENDING);
	store(fs, slot, nv);
	store(fs, &sb->reloc_done, idx + 1);
	fs->st.relocated++;
	return page;
}

static bool mark(struct mpm_fs *fs, __u64 page, __u64 ino, const char *what)
{
	__u64 *w = &fs->used[page / 64], bit = 1ULL << (page % 64);

	if (*w & bit) {
		fs->st.errors++;
		mpm_report(fs, MPM_ERROR, "page %llu (%s of inode %llu) is reached twice",
			   (unsigned long long)page, what, (unsigned long long)ino);
		return false;
	}
	*w |= bit;
	return true;
}

/* Unmark a page; count it as leaked if it was marked. */
static void unmark(struct mpm_fs *fs, __u64 page)
{
	__u64 *w = &fs->used[page / 64], bit = 1ULL << (page % 64);

	fs->st.leaked_pages += !!(*w & bit);
	*w &= ~bit;
}

/* Flags an entry at @level may carry besides its address, A and D. */
static bool entry_flags_ok(__u64 f, int level)
{
	if (level == 0)
		return f == MPM_E_LEAF;
	if (level == 2 && (f & MPM_E_HUGE))
		return f == (MPM_E_LEAF | MPM_E_HUGE);
	return f == MPM_E_TABLE;
}

static void walk_records(struct mpm_fs *fs, struct mpm_inode *rec, __u64 first);

/*
 * Walk the entry *@slot of a level-@level table (@level 0: a leaf) whose
 * subtree starts at page offset @pgoff of inode @ino (0: the inode table).
 * @keep: the root word's order bits, or 0.  Return: the page it marked
 * (the first of a huge leaf), 0 if none (no entry, or an error).
 */
static __u64 walk_entry(struct mpm_fs *fs, __u64 *slot, int level,
			__u64 pgoff, __u64 ino, __u64 keep)
{
	__u64 v = mpm_load(slot), page, n = 1, i;
	__u64 *counter;
	bool huge;

	if (!v)
		return 0;
	page = resolve(fs, slot, keep);
	v = mpm_load(slot) & ~keep;
	huge = level == 2 && (v & MPM_E_HUGE);
	if (!entry_flags_ok(v & ~MPM_E_ADDR & ~MPM_E_AD, level)) {
		fs->st.errors++;
		mpm_report(fs, MPM_ERROR, "inode %llu: %s entry %#llx at page %llu: foreign bits",
			   (unsigned long long)ino, level_name[level],
			   (unsigned long long)v, (unsigned long long)pgoff);
		return 0;
	}
	if (huge) {
		n = MPM_ENTRIES;
		if ((v & MPM_E_ADDR) % (MPM_PAGE_SIZE * MPM_ENTRIES))
			page = 0;
	}
	if (!page || page + n > fs->nr_pages) {
		fs->st.errors++;
		mpm_report(fs, MPM_ERROR, "inode %llu: %s entry %#llx at page %llu: off the device",
			   (unsigned long long)ino, level_name[level],
			   (unsigned long long)v, (unsigned long long)pgoff);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!mark(fs, page + i, ino, level_name[huge ? 0 : level]))
			return 0;
	counter = !ino ? &fs->st.itable_pages :
		  level && !huge ? &fs->st.table_pages : &fs->st.data_pages;
	*counter += n;
	if (level && !huge) {
		__u64 *t = page_at(fs, page);

		for (i = 0; i < MPM_ENTRIES; i++)
			walk_entry(fs, &t[i], level - 1,
				   pgoff + i * mpm_span_pages(level - 1), ino, 0);
	} else if (!ino) {
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

/*
 * The attribute page of inode @ino: a leaf entry (walked, so relocated, in
 * its place in the walk order: after the inode's tree), and a list that
 * stays inside the page with names of 1..255 bytes.
 */
static void walk_xattrs(struct mpm_fs *fs, struct mpm_inode *in, __u64 ino)
{
	__u64 off = 0, p = walk_entry(fs, &in->xattr, 0, 0, ino, 0);
	const __u8 *page = page_at(fs, p);
	const struct mpm_xattr *x;

	while (p && off + sizeof(*x) <= MPM_PAGE_SIZE) {
		x = (const struct mpm_xattr *)(page + off);
		if (!x->name_len)
			return;
		if (x->name_len > MPM_XATTR_NAME_MAX ||
		    MPM_XATTR_SPACE(x->name_len, x->value_len) > MPM_PAGE_SIZE - off) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "inode %llu: bad extended attribute at byte %llu",
				   (unsigned long long)ino, (unsigned long long)off);
			return;
		}
		off += MPM_XATTR_SPACE(x->name_len, x->value_len);
	}
}

/* The allocated inodes of one record page (inode numbers from @first). */
static void walk_records(struct mpm_fs *fs, struct mpm_inode *rec, __u64 first)
{
	int i;

	for (i = 0; i < MPM_INODES_PER_PAGE; i++) {
		struct mpm_inode *in = &rec[i];
		__u64 ino = first + i, root = mpm_load(&in->root);
		unsigned int order = mpm_root_order(root);

		if (!mpm_load(&in->mode))
			continue;
		if (!ino) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "inode 0 is allocated");
			continue;
		}
		fs->st.inodes++;
		fs->max_ino = ino;
		if (!mode_ok(in->mode)) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "inode %llu: bad mode %#llo",
				   (unsigned long long)ino, (unsigned long long)in->mode);
		}
		if (order > MPM_MAX_ORDER || in->min_order > MPM_MAX_ORDER) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "inode %llu: order %u, minimum order %llu",
				   (unsigned long long)ino, order,
				   (unsigned long long)in->min_order);
			continue;
		}
		if (root && mpm_span_pages(order) * MPM_PAGE_SIZE < in->size) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "inode %llu: size %llu beyond the order-%u tree",
				   (unsigned long long)ino, (unsigned long long)in->size, order);
		}
		walk_entry(fs, &in->root, order, 0, ino, MPM_ROOT_ORDER_MASK);
		walk_xattrs(fs, in, ino);
	}
}

/* --- lookups (after pass 1: every entry is against fs->base) ----------- */

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
		if (!page)
			return NULL;
		if (level == 0)
			return page_at(fs, page);
		if (level == 2 && (e & MPM_E_HUGE))
			return page + pgoff < fs->nr_pages ? page_at(fs, page + pgoff) : NULL;
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
	return rec ? &rec[ino % MPM_INODES_PER_PAGE] : NULL;
}

static struct mpm_inode *live_inode(struct mpm_fs *fs, __u64 ino)
{
	struct mpm_inode *in = mpm_inode(fs, ino);

	return in && mpm_load(&in->mode) ? in : NULL;
}

/* --- pass 2: the directories ------------------------------------------ */

static struct mpm_dirent *dirent_at(struct mpm_fs *fs, __u64 off)
{
	__u64 page = off / MPM_PAGE_SIZE, slot = off % MPM_PAGE_SIZE;

	if (!page || page >= fs->nr_pages || !mpm_used(fs, page) ||
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

/* A live entry's target, or NULL (and an error) if it is not valid. */
static struct mpm_inode *entry_target(struct mpm_fs *fs, __u64 dir,
				      struct mpm_dirent *de, __u64 word)
{
	__u64 ino = mpm_de_ino(word);
	struct mpm_inode *in = ino != MPM_ROOT_INO ? live_inode(fs, ino) : NULL;
	const char *why = NULL;

	if (!in)
		why = "names a free inode";
	else if (!name_ok(de, mpm_de_len(word)))
		why = "has a bad name";
	else if (mpm_de_type(word) != (in->mode & S_IFMT) >> 12)
		why = "has the wrong file type";
	if (!why)
		return in;
	fs->st.errors++;
	mpm_report(fs, MPM_ERROR, "directory %llu: the entry at %#llx (inode %llu) %s",
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
	return memcmp(x->name, y->name, lx);
}

/*
 * One directory of the counting pass: count the links of its live entries
 * (except those a rename killed), queue its subdirectories, report names
 * that appear twice.
 */
static int count_dir(struct mpm_fs *fs, __u64 dir, struct vec *queue,
		     __u64 *seen, struct vec *pending)
{
	struct mpm_inode *d = mpm_inode(fs, dir);
	__u64 npages = d->size / MPM_PAGE_SIZE, p, n = 0, i;
	const struct mpm_dirent **names;
	int s;

	names = mpm_zalloc((npages * MPM_DIRENTS_PER_PAGE + 1) * sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (p = 0; p < npages; p++) {
		struct mpm_dirent *de = mpm_tree_page(fs, d->root, p);

		for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
			__u64 word = mpm_load(&de->word), ino = mpm_de_ino(word);
			struct mpm_inode *in;

			if (!word || vec_has(&fs->dead_vec, dev_offset(fs, de)))
				continue;
			in = entry_target(fs, dir, de, word);
			if (!in)
				continue;
			fs->st.names++;
			fs->links[ino]++;
			names[n++] = de;
			if (pending && (de->replaces || de->displaces) &&
			    vec_push(pending, dev_offset(fs, de))) {
				mpm_free(names);
				return -ENOMEM;
			}
			if ((in->mode & S_IFMT) == S_IFDIR &&
			    !(seen[ino / 64] >> (ino % 64) & 1)) {
				seen[ino / 64] |= 1ULL << (ino % 64);
				if (vec_push(queue, ino)) {
					mpm_free(names);
					return -ENOMEM;
				}
			}
		}
	}
	mpm_sort(names, n, sizeof(*names), cmp_names);
	for (i = 1; i < n; i++) {
		if (!cmp_names(&names[i - 1], &names[i])) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR, "directory %llu: the name '%.*s' appears twice",
				   (unsigned long long)dir, (int)mpm_de_len(names[i]->word),
				   names[i]->name);
		}
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

			for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
				__u64 word = mpm_load(&de->word), ino = mpm_de_ino(word);
				struct mpm_inode *in;

				if (!word)
					continue;
				if ((de->replaces && vec_push(&fs->dead_vec, de->replaces)) ||
				    (de->displaces && vec_push(&fs->dead_vec, de->displaces)))
					return -ENOMEM;
				in = ino <= fs->max_ino ? live_inode(fs, ino) : NULL;
				if (in && (in->mode & S_IFMT) == S_IFDIR &&
				    !(seen[ino / 64] >> (ino % 64) & 1)) {
					seen[ino / 64] |= 1ULL << (ino % 64);
					if (vec_push(queue, ino))
						return -ENOMEM;
				}
			}
		}
	}
	mpm_sort(fs->dead_vec.v, fs->dead_vec.n, sizeof(__u64), cmp_u64);
	return 0;
}

/* --- pass 3: recovery ------------------------------------------------- */

/*
 * Visit the data pages at page offsets [@from, @to) of the subtree under
 * *@slot (a level-@level entry at page offset @pgoff): count them as
 * leaked and, repairing, clear their entries and unmark them.
 */
static void drop_range(struct mpm_fs *fs, __u64 *slot, int level, __u64 pgoff,
		       __u64 from, __u64 to, __u64 keep)
{
	__u64 v = mpm_load(slot) & ~keep, page, i, span = mpm_span_pages(level);

	if (!v || pgoff + span <= from || pgoff >= to)
		return;
	page = entry_page(fs, v, fs->base);
	if (!page)
		return;
	if (level == 0 || (level == 2 && (v & MPM_E_HUGE))) {
		if (level && (pgoff < from || pgoff + span > to))
			return;	/* a 2 MiB leaf is dropped whole or not at all */
		if (fs->repair)
			store(fs, slot, 0);
		for (i = 0; i < span; i++)
			unmark(fs, page + i);
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
	if (level == 0 || (level == 2 && (e & MPM_E_HUGE))) {
		__u64 n = level ? MPM_ENTRIES : 1;

		for (i = 0; i < n; i++)
			unmark(fs, page + i);
		return;
	}
	unmark(fs, page);
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
 * Lower a tree above the order its size and minimum order need (after the
 * pages past EOF are gone): a crash between raising the order and storing
 * the size or minimum, or between a shrink's size and its lowering, leaves
 * it higher.  Each step is one store of the root word: entry 0 of the top
 * table becomes the root; the top table and the (empty) tables of its
 * other entries become unreachable.
 */
static void fit_order(struct mpm_fs *fs, struct mpm_inode *in)
{
	__u64 root = mpm_load(&in->root), want = mpm_order_for_size(in->size), page, *t;
	unsigned int order = mpm_root_order(root), i;

	if (want < in->min_order)
		want = in->min_order;
	while (root && order > want) {
		page = entry_page(fs, root & ~MPM_ROOT_ORDER_MASK, fs->base);
		if (!page)
			return;
		t = page_at(fs, page);
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

	if (!fs->links[ino] && ino != MPM_ROOT_INO) {
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
	if ((in->mode & S_IFMT) == S_IFDIR && ino != MPM_ROOT_INO && fs->links[ino] > 1) {
		fs->st.errors++;
		mpm_report(fs, MPM_ERROR, "directory %llu has %u names",
			   (unsigned long long)ino, fs->links[ino]);
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

static int check_super(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);

	if (fs->nr_pages < 2 || sb->magic != MPM_MAGIC) {
		mpm_report(fs, MPM_ERROR, "no persistent morselfs here (bad magic)");
		return -EINVAL;
	}
	if (sb->version != MPM_VERSION || sb->nr_devices != 1) {
		mpm_report(fs, MPM_ERROR, "format %llu, %llu devices; this is format %d",
			   (unsigned long long)sb->version,
			   (unsigned long long)sb->nr_devices, MPM_VERSION);
		return -EINVAL;
	}
	if (sb->nr_pages > fs->nr_pages || sb->nr_pages < 2 ||
	    sb->base % MPM_PAGE_SIZE || sb->reloc_base % MPM_PAGE_SIZE ||
	    mpm_root_order(sb->itable) != MPM_ITABLE_ORDER) {
		mpm_report(fs, MPM_ERROR,
			   "bad super block: %llu of %llu pages, base %#llx, moving to %#llx",
			   (unsigned long long)sb->nr_pages, (unsigned long long)fs->nr_pages,
			   (unsigned long long)sb->base, (unsigned long long)sb->reloc_base);
		return -EINVAL;
	}
	fs->nr_pages = sb->nr_pages;
	return 0;
}

int mpm_walk(struct mpm_fs *fs)
{
	struct mpm_super *sb = mpm_super(fs);
	struct vec queue = { 0 }, pending = { 0 };
	__u64 *seen = NULL, ino, i, words;
	struct mpm_inode *root;
	int err;

	memset(&fs->st, 0, sizeof(fs->st));
	fs->max_ino = 0;
	err = check_super(fs);
	if (err)
		return err;
	words = (fs->nr_pages + 63) / 64;
	fs->used = mpm_zalloc(words * sizeof(__u64));
	if (!fs->used)
		return -ENOMEM;

	/* Pass 1, starting (or resuming) a relocation when repairing. */
	if (fs->repair && fs->phys && fs->phys != sb->base && !sb->reloc_base) {
		store(fs, &sb->reloc_done, 0);
		store(fs, &sb->reloc_old, 0);
		store(fs, &sb->reloc_base, fs->phys);
	}
	fs->walk_idx = 0;
	fs->used[0] = 1;
	walk_entry(fs, &sb->itable, MPM_ITABLE_ORDER, 0, 0, MPM_ROOT_ORDER_MASK);
	if (sb->reloc_base) {
		if (!fs->repair) {
			fs->st.errors++;
			mpm_report(fs, MPM_ERROR,
				   "relocation to %#llx unfinished (a mount or -y ends it)",
				   (unsigned long long)sb->reloc_base);
			return 0;
		}
		store(fs, &sb->base, sb->reloc_base);
		store(fs, &sb->reloc_base, 0);
	}
	fs->base = sb->base;

	/* Pass 2. */
	root = live_inode(fs, MPM_ROOT_INO);
	if (!root || (root->mode & S_IFMT) != S_IFDIR) {
		fs->st.errors++;
		mpm_report(fs, MPM_ERROR, "the root directory (inode 1) is missing");
		return 0;
	}
	err = -ENOMEM;
	fs->links = mpm_zalloc((fs->max_ino + 1) * sizeof(*fs->links));
	seen = mpm_zalloc(((fs->max_ino + 64) / 64) * sizeof(__u64));
	if (!fs->links || !seen || vec_push(&queue, MPM_ROOT_INO))
		goto out;
	seen[0] |= 1ULL << MPM_ROOT_INO;
	err = collect_dead(fs, &queue, seen);
	if (err)
		goto out;
	/*
	 * Count in BFS order; a directory only killed entries name is empty
	 * of links when its turn comes and its entries do not count.
	 */
	memset(seen, 0, ((fs->max_ino + 64) / 64) * sizeof(__u64));
	seen[0] |= 1ULL << MPM_ROOT_INO;
	queue.n = 1;
	for (i = 0; i < queue.n; i++) {
		if (queue.v[i] != MPM_ROOT_INO && !fs->links[queue.v[i]])
			continue;
		fs->st.dirs++;
		err = count_dir(fs, queue.v[i], &queue, seen, &pending);
		if (err)
			goto out;
	}

	/* Pass 3. */
	finish_renames(fs, &pending);
	for (ino = 1; ino <= fs->max_ino; ino++) {
		struct mpm_inode *in = live_inode(fs, ino);

		if (in)
			recover_inode(fs, ino, in);
	}
	for (i = 0; i < words; i++)
		fs->st.used_pages += mpm_popcount(fs->used[i]);
	err = 0;
out:
	mpm_free(seen);
	mpm_free(queue.v);
	mpm_free(pending.v);
	return err;
}

void mpm_fs_release(struct mpm_fs *fs)
{
	mpm_free(fs->used);
	mpm_free(fs->links);
	mpm_free(fs->dead_vec.v);
	fs->used = NULL;
	fs->links = NULL;
	fs->dead_vec.v = NULL;
	fs->dead_vec.n = 0;
	fs->dead_vec.cap = 0;
}
