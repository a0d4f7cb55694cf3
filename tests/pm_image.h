/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Building persistent morselfs images in user space, word by word, for
 * tests that need a device the module did not write: the seeds of the
 * walk's fuzzer (tests/pm_fuzz.c) and the crafted devices of the review's
 * findings (tests/pmem_test.c mounts them).  An image starts as `morsel
 * mkfs` makes it (tools/pm.c, entries for base 0) and grows files,
 * directories, links, attributes and the states a crash leaves; crafting
 * damage is then a matter of storing a word.
 *
 * Locking: none; one image per caller.
 */
#ifndef MORSEL_TESTS_PM_IMAGE_H
#define MORSEL_TESTS_PM_IMAGE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pm.h"

struct pm_image {
	struct mpm_fs fs;	/* dev, nr_pages */
	__u64 base;		/* the physical address entries are written for */
	__u64 next;		/* the next page to hand out */
};

#define PMI_PG		MPM_PAGE_SIZE

static inline __u64 *pmi_word(struct pm_image *im, __u64 page, unsigned int i)
{
	return (__u64 *)(im->fs.dev + page * PMI_PG) + i;
}

static inline __u64 pmi_table(struct pm_image *im, __u64 page)
{
	return (im->base + page * PMI_PG) | MPM_E_TABLE | MPM_E_AD;
}

static inline __u64 pmi_leaf(struct pm_image *im, __u64 page)
{
	return (im->base + page * PMI_PG) | MPM_E_LEAF | MPM_E_AD;
}

/* The page an entry the image wrote points to. */
static inline __u64 pmi_page_of(struct pm_image *im, __u64 e)
{
	return ((e & MPM_E_ADDR) - im->base) / PMI_PG;
}

/*
 * A zeroed image of @pages pages, formatted (pages 1-4 are mkfs's), its
 * entries for the physical address @base (mkfs writes them for 0; a
 * repairing walk moves them, as a first mount does).
 */
static inline int pmi_init(struct pm_image *im, __u64 pages, __u64 base)
{
	memset(im, 0, sizeof(*im));
	im->fs.dev = calloc(pages, PMI_PG);
	if (!im->fs.dev)
		return -1;
	im->fs.nr_pages = pages;
	pm_mkfs(&im->fs, 0755, 0, 0);
	im->next = 5;
	if (base) {
		struct mpm_fs fs = { .dev = im->fs.dev, .nr_pages = pages,
				     .repair = true, .phys = base };
		int err = mpm_walk(&fs);

		mpm_fs_release(&fs);
		if (err || mpm_super(&fs)->base != base)
			return -1;
		im->base = base;
	}
	return 0;
}

static inline void pmi_free(struct pm_image *im)
{
	free(im->fs.dev);
	im->fs.dev = NULL;
}

/* A fresh page (the image must be large enough: tests size it). */
static inline __u64 pmi_page(struct pm_image *im)
{
	if (im->next >= im->fs.nr_pages)
		abort();
	return im->next++;
}

/* Record @ino, its record page made on first use (one PTE table: ino < 16384). */
static inline struct mpm_inode *pmi_rec(struct pm_image *im, __u64 ino)
{
	__u64 *pte = pmi_word(im, 3, ino / MPM_INODES_PER_PAGE);

	if (!*pte)
		*pte = pmi_leaf(im, pmi_page(im));
	return (struct mpm_inode *)(im->fs.dev + pmi_page_of(im, *pte) * PMI_PG) +
	       ino % MPM_INODES_PER_PAGE;
}

/*
 * A tree of @order for inode @ino with data pages at the page offsets
 * @pgoffs (@n of them, each filled with @fill), stored as its root.
 */
static inline void pmi_tree(struct pm_image *im, __u64 ino, unsigned int order,
			    const __u64 *pgoffs, unsigned int n, int fill)
{
	struct mpm_inode *in = pmi_rec(im, ino);
	__u64 top = 0, page, *slot;
	unsigned int i, level;

	if (!order) {
		if (!n)
			return;
		page = pmi_page(im);
		memset(im->fs.dev + page * PMI_PG, fill, PMI_PG);
		in->root = pmi_leaf(im, page);
		return;
	}
	top = pmi_page(im);
	for (i = 0; i < n; i++) {
		__u64 t = top, off = pgoffs[i];

		for (level = order; level > 1; level--) {
			slot = pmi_word(im, t, off / mpm_span_pages(level - 1) % MPM_ENTRIES);
			if (!*slot)
				*slot = pmi_table(im, pmi_page(im));
			t = pmi_page_of(im, *slot);
		}
		slot = pmi_word(im, t, off % MPM_ENTRIES);
		page = pmi_page(im);
		memset(im->fs.dev + page * PMI_PG, fill, PMI_PG);
		*slot = pmi_leaf(im, page);
	}
	in->root = pmi_table(im, top) | (__u64)order << MPM_ROOT_ORDER_SHIFT;
}

/* Allocate inode @ino with @mode and @size (no tree). */
static inline struct mpm_inode *pmi_inode(struct pm_image *im, __u64 ino,
					  __u64 mode, __u64 size)
{
	struct mpm_inode *in = pmi_rec(im, ino);

	in->mode = mode;
	in->size = size;
	in->mtime = in->ctime = in->atime = in->btime = 1700000000000000000ULL;
	return in;
}

/*
 * A name in directory @dir for @ino: the first free slot, a page appended
 * when all are full (order 0 for the first page, raised to 1 for more: up
 * to 512 pages).  Returns the entry.
 */
static inline struct mpm_dirent *pmi_name(struct pm_image *im, __u64 dir,
					  const char *name, __u64 ino)
{
	struct mpm_inode *d = pmi_rec(im, dir), *in = pmi_rec(im, ino);
	__u64 npages = d->size / PMI_PG, p, page, top;
	struct mpm_dirent *de;
	int s;

	for (p = 0; p < npages; p++) {
		page = mpm_root_order(d->root) ?
			pmi_page_of(im, *pmi_word(im, pmi_page_of(im, d->root), p)) :
			pmi_page_of(im, d->root);
		de = (struct mpm_dirent *)(im->fs.dev + page * PMI_PG);
		for (s = 0; s < MPM_DIRENTS_PER_PAGE; s++)
			if (!de[s].word)
				goto found;
	}
	page = pmi_page(im);
	if (!npages) {
		d->root = pmi_leaf(im, page);
	} else {
		if (!mpm_root_order(d->root)) {
			top = pmi_page(im);
			*pmi_word(im, top, 0) = d->root;
			d->root = pmi_table(im, top) | 1ULL << MPM_ROOT_ORDER_SHIFT;
		}
		*pmi_word(im, pmi_page_of(im, d->root), npages) = pmi_leaf(im, page);
	}
	d->size += PMI_PG;
	de = (struct mpm_dirent *)(im->fs.dev + page * PMI_PG);
	s = 0;
found:
	memcpy(de[s].name, name, strlen(name));
	de[s].word = mpm_de_word(ino, strlen(name), (in->mode & S_IFMT) >> 12);
	return &de[s];
}

/*
 * Attributes of @ino: @n names (with their prefix) with values of @lens
 * bytes (NULL: strings).
 */
static inline void pmi_xattrs_n(struct pm_image *im, __u64 ino, const char *const *names,
				const char *const *values, const unsigned int *lens,
				unsigned int n)
{
	struct mpm_inode *in = pmi_rec(im, ino);
	__u64 page = pmi_page(im), off = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		__u8 *p = im->fs.dev + page * PMI_PG + off;
		struct mpm_xattr x = { .name_len = strlen(names[i]),
				       .value_len = lens ? lens[i] : strlen(values[i]) };

		memcpy(p, &x, sizeof(x));
		memcpy(p + sizeof(x), names[i], x.name_len);
		memcpy(p + sizeof(x) + x.name_len, values[i], x.value_len);
		off += MPM_XATTR_SPACE(x.name_len, x.value_len);
	}
	in->xattr = pmi_leaf(im, page);
}

static inline void pmi_xattrs(struct pm_image *im, __u64 ino, const char *const *names,
			      const char *const *values, unsigned int n)
{
	pmi_xattrs_n(im, ino, names, values, NULL, n);
}

/* A symbolic link @ino to @target. */
static inline void pmi_symlink(struct pm_image *im, __u64 ino, const char *target)
{
	struct mpm_inode *in = pmi_inode(im, ino, S_IFLNK | 0777, strlen(target));
	__u64 page = pmi_page(im);

	memcpy(im->fs.dev + page * PMI_PG, target, strlen(target));
	in->root = pmi_leaf(im, page);
}

/* Device offset of @p. */
static inline __u64 pmi_off(struct pm_image *im, const void *p)
{
	return (const __u8 *)p - im->fs.dev;
}

/* ---- a tree of every kind of inode, and damage made to it ---- */

#define PMI_PAGES	64	/* what the cases need */
#define PMI_DIR		2	/* "d": two pages of names */
#define PMI_FILE	3	/* "small": a page, attributes, a second name */
#define PMI_SUB		10	/* "d/sub" */

/*
 * Directories of one and two pages and one inside another, regular files
 * of orders 0-2 (sparse), a size without pages, a minimum order, a hard
 * link, a symbolic link, a FIFO and a device, attributes.
 */
static inline void pmi_everything(struct pm_image *im)
{
	static const char *const xn[] = { "user.a", "trusted.bb", "security.selinux" };
	static const char *const xv[] = { "1", "two", "system_u:object_r:x" };
	__u64 offs[] = { 0, 3, 511, 512, 1000 };
	char name[32];
	int i;

	pmi_inode(im, PMI_DIR, S_IFDIR | 0755, 0);
	pmi_name(im, MPM_ROOT_INO, "d", PMI_DIR);
	pmi_inode(im, PMI_FILE, S_IFREG | 0644, 100);
	pmi_tree(im, PMI_FILE, 0, offs, 1, 'a');
	pmi_name(im, MPM_ROOT_INO, "small", PMI_FILE);
	pmi_name(im, PMI_DIR, "link-to-small", PMI_FILE);
	pmi_xattrs(im, PMI_FILE, xn, xv, 3);
	pmi_inode(im, 4, S_IFREG | 0600, 1001 * PMI_PG + 5);
	pmi_tree(im, 4, 2, offs, 5, 'b');
	pmi_name(im, PMI_DIR, "sparse", 4);
	pmi_inode(im, 5, S_IFREG | 0644, 1 << 20);
	pmi_name(im, PMI_DIR, "holes", 5);
	pmi_symlink(im, 6, "d/sparse");
	pmi_name(im, MPM_ROOT_INO, "sl", 6);
	pmi_inode(im, 7, S_IFIFO | 0644, 0);
	pmi_name(im, MPM_ROOT_INO, "fifo", 7);
	pmi_inode(im, 8, S_IFCHR | 0600, 0)->rdev = 0x103;
	pmi_name(im, MPM_ROOT_INO, "null", 8);
	pmi_inode(im, 9, S_IFREG | 0644, 4 * PMI_PG);
	pmi_tree(im, 9, 1, offs, 2, 'c');
	pmi_rec(im, 9)->min_order = 1;
	pmi_name(im, PMI_DIR, "order1", 9);
	for (i = 0; i < MPM_DIRENTS_PER_PAGE + 2; i++) {
		snprintf(name, sizeof(name), "n%02d", i);
		pmi_inode(im, 40 + i, S_IFREG | 0644, 0);
		pmi_name(im, PMI_DIR, name, 40 + i);
	}
	pmi_inode(im, PMI_SUB, S_IFDIR | 0700, 0);
	pmi_name(im, PMI_DIR, "sub", PMI_SUB);
	pmi_inode(im, 11, S_IFREG | 0644, 10);
	pmi_tree(im, 11, 0, offs, 1, 'd');
	pmi_name(im, PMI_SUB, "f", 11);
}

/* The review's findings H1-H3 and M1 (review-2026-11b.md, Appendix A). */

/* H1: a "2 MiB leaf" (PS) as a regular file's root. */
static inline void pmi_h1_huge_root(struct pm_image *im)
{
	struct mpm_inode *in = pmi_inode(im, 30, S_IFREG | 0644, 0);

	in->root = im->base | MPM_E_LEAF | MPM_E_HUGE | MPM_E_AD |
		   2ULL << MPM_ROOT_ORDER_SHIFT;
	pmi_name(im, MPM_ROOT_INO, "h", 30);
}

/* H2: a record page with a foreign bit, its inode named. */
static inline void pmi_h2_foreign_record_page(struct pm_image *im)
{
	__u64 p = pmi_page(im);

	*pmi_word(im, 3, 2) = pmi_leaf(im, p) | MPM_E_NX;
	((struct mpm_inode *)(im->fs.dev + p * PMI_PG))[8].mode = S_IFREG | 0644;
	pmi_name(im, MPM_ROOT_INO, "g", PMI_FILE)->word = mpm_de_word(72, 1, DT_REG);
}

/* H2: a table whose every entry points at itself. */
static inline void pmi_h2_cycle(struct pm_image *im)
{
	struct mpm_inode *in = pmi_inode(im, 31, S_IFREG | 0644, 0);
	__u64 p = pmi_page(im);
	unsigned int i;

	in->root = pmi_table(im, p) | 3ULL << MPM_ROOT_ORDER_SHIFT;
	for (i = 0; i < MPM_ENTRIES; i++)
		*pmi_word(im, p, i) = pmi_table(im, p);
	pmi_name(im, MPM_ROOT_INO, "cycle", 31);
}

/* H2: one address bit in a directory's tree (a mount used to delete below it). */
static inline void pmi_h2_dir_entry_off_device(struct pm_image *im)
{
	*pmi_word(im, pmi_page_of(im, pmi_rec(im, PMI_DIR)->root), 1) |= 1ULL << 40;
}

/*
 * H3: a relocation just started, to an address that is not the device's
 * (as a crash during a relocating mount, then a second move, leaves it).
 */
static inline void pmi_h3_stale_relocation(struct pm_image *im)
{
	mpm_super(&im->fs)->reloc_done = 0;
	mpm_super(&im->fs)->reloc_old = 0;
	mpm_super(&im->fs)->reloc_base = im->base + (1ULL << 30);
}

/* M1: a symbolic link of order 1 and 2 MiB. */
static inline void pmi_m1_long_symlink(struct pm_image *im)
{
	__u64 offs[] = { 0, 1 };

	pmi_tree(im, 6, 1, offs, 2, 's');
	pmi_rec(im, 6)->size = 2 << 20;
}

/* M1: a directory of 2^40 bytes. */
static inline void pmi_m1_huge_directory(struct pm_image *im)
{
	pmi_rec(im, PMI_SUB)->size = 1ULL << 40;
}

/* M1: an attribute twice, and one without a prefix. */
static inline void pmi_m1_xattr_twice(struct pm_image *im)
{
	static const char *const xn[] = { "user.a", "user.a" };
	static const char *const xv[] = { "1", "2" };

	pmi_xattrs(im, 11, xn, xv, 2);
}

static inline void pmi_m1_xattr_no_prefix(struct pm_image *im)
{
	static const char *const xn[] = { "user.ok", "nopfx" };
	static const char *const xv[] = { "1", "2" };

	pmi_xattrs(im, 11, xn, xv, 2);
}

/*
 * POSIX ACLs (xattr.c, in posix_acl_xattr.h's form): "user::rw-
 * user:1000:r-- group::r-- mask::r-- other::---" with a tag changed to
 * @bad (0: none), as @name of inode @ino.
 */
static inline void pmi_acl(struct pm_image *im, __u64 ino, const char *name, __u16 bad)
{
	const __u16 e[] = { 1, 6, 0xffff, 0xffff, 2, 4, 1000, 0, 4, 4, 0xffff, 0xffff,
			    16, 4, 0xffff, 0xffff, 32, 0, 0xffff, 0xffff };
	char v[4 + sizeof(e)] = { 2 };	/* version 2, little-endian */
	const char *xn[] = { name }, *xv[] = { v };
	unsigned int len = sizeof(v);

	memcpy(v + 4, e, sizeof(e));
	if (bad)
		memcpy(v + 4 + 8, &bad, 2);	/* the second entry's tag */
	pmi_xattrs_n(im, ino, xn, xv, &len, 1);
}

/* ACLs a mount takes: a file's access ACL, a directory's default ACL. */
static inline void pmi_acls(struct pm_image *im)
{
	pmi_acl(im, 11, "system.posix_acl_access", 0);
	pmi_acl(im, PMI_SUB, "system.posix_acl_default", 0);
}

/* An ACL with an unknown tag; a default ACL on a regular file. */
static inline void pmi_acl_bad_tag(struct pm_image *im)
{
	pmi_acl(im, 11, "system.posix_acl_access", 0x40);
}

static inline void pmi_acl_default_on_file(struct pm_image *im)
{
	pmi_acl(im, 11, "system.posix_acl_default", 0);
}

/* M1: a FIFO with a page; a directory with a punch under way. */
static inline void pmi_m1_special_with_data(struct pm_image *im)
{
	__u64 offs[] = { 0 };

	pmi_tree(im, 7, 0, offs, 1, 'f');
	pmi_rec(im, 7)->size = 4096;
}

static inline void pmi_m1_punched_directory(struct pm_image *im)
{
	pmi_rec(im, PMI_DIR)->punch_start = 1;
	pmi_rec(im, PMI_DIR)->punch_end = 2 * PMI_PG;
}

/* A directory named twice. */
static inline void pmi_dir_named_twice(struct pm_image *im)
{
	pmi_name(im, MPM_ROOT_INO, "sub-again", PMI_SUB);
}

/* Not damage: an order-4 file, which a 4-level kernel cannot map. */
static inline void pmi_order4_file(struct pm_image *im)
{
	struct mpm_inode *in = pmi_inode(im, 32, S_IFREG | 0644, 0);

	in->min_order = 4;
	pmi_name(im, MPM_ROOT_INO, "big", 32);
}

/*
 * The inode table's last record page (PUD 511, PMD 511, PTE 511: inode
 * numbers just below 2^32) holding one unnamed inode, an orphan a mount
 * frees.  Pass 3 used to look up every number up to the largest: 2^32
 * binary searches, a mount of minutes (the module review's F3).
 */
static inline void pmi_far_record_page(struct pm_image *im)
{
	__u64 pmd = pmi_page(im), pte = pmi_page(im), rec = pmi_page(im);
	struct mpm_inode *in;

	*pmi_word(im, 1, MPM_ENTRIES - 1) = pmi_table(im, pmd);
	*pmi_word(im, pmd, MPM_ENTRIES - 1) = pmi_table(im, pte);
	*pmi_word(im, pte, MPM_ENTRIES - 1) = pmi_leaf(im, rec);
	in = (struct mpm_inode *)(im->fs.dev + rec * PMI_PG) + MPM_INODES_PER_PAGE - 1;
	in->mode = S_IFREG | 0644;
	in->mtime = in->ctime = in->atime = in->btime = 1700000000000000000ULL;
}

/*
 * List device page @page in the bad-page tree (format 2) at page offset
 * @at (its own, unless crafted); an order-1 tree: images below 512 pages.
 */
static inline void pmi_bad(struct pm_image *im, __u64 page, __u64 at)
{
	struct mpm_super *sb = mpm_super(&im->fs);

	if (!sb->badtree)
		sb->badtree = pmi_table(im, pmi_page(im)) | 1ULL << MPM_ROOT_ORDER_SHIFT;
	*pmi_word(im, pmi_page_of(im, sb->badtree), at) = pmi_leaf(im, page);
}

/* A failed page's mark where only a regular file's data may be. */
static inline void pmi_poison_in_directory(struct pm_image *im)
{
	pmi_inode(im, 26, S_IFDIR | 0755, 0)->root = MPM_POISON;
	pmi_name(im, MPM_ROOT_INO, "marked", 26);
}

/* The bad-page tree lists a page at another page's offset. */
static inline void pmi_bad_page_misplaced(struct pm_image *im)
{
	__u64 page = pmi_page(im);

	pmi_bad(im, page, page + 1);
}

/* Format 1 has no failed pages' marks. */
static inline void pmi_poison_in_format_1(struct pm_image *im)
{
	__u64 offs[] = { 0, 1 };

	mpm_super(&im->fs)->version = 1;
	pmi_inode(im, 23, S_IFREG | 0644, 2 * PMI_PG);
	pmi_tree(im, 23, 1, offs, 2, 'x');
	*pmi_word(im, pmi_page_of(im, pmi_rec(im, 23)->root), 1) = MPM_POISON;
	pmi_name(im, MPM_ROOT_INO, "failed", 23);
}

/*
 * Format 3's 2 MiB leaves, on an image of PMI_HUGE_IMAGE pages (a leaf
 * needs a run of 512 pages on a 2 MiB boundary of the device).
 * pmi_huge_file(): inode @ino, "big" in the root directory, of @size,
 * order 2, its first 2 MiB one leaf on device pages [512, 1024) filled
 * with 'H' and page 512 of the file (the second 2 MiB) a 4 KiB page.
 */
#define PMI_HUGE_IMAGE	1024
#define PMI_HUGE_RUN	512	/* the leaf's first device page */

static inline __u64 pmi_huge_leaf(struct pm_image *im, __u64 page)
{
	return pmi_leaf(im, page) | MPM_E_HUGE;
}

static inline struct mpm_inode *pmi_huge_file(struct pm_image *im, __u64 ino,
					      __u64 size)
{
	__u64 offs[] = { 512 };
	struct mpm_inode *in = pmi_inode(im, ino, S_IFREG | 0644, size);

	pmi_tree(im, ino, 2, offs, 1, 's');
	*pmi_word(im, pmi_page_of(im, in->root), 0) = pmi_huge_leaf(im, PMI_HUGE_RUN);
	memset(im->fs.dev + PMI_HUGE_RUN * PMI_PG, 'H', MPM_HUGE_SIZE);
	pmi_name(im, MPM_ROOT_INO, "big", ino);
	return in;
}

static inline void pmi_huge_ok(struct pm_image *im)
{
	pmi_huge_file(im, 30, 4 << 20)->flags = 2ULL << MPM_FL_HUGE_SHIFT;
}

/* A crash between a truncate's size and its split: recovery splits. */
static inline void pmi_huge_past_eof(struct pm_image *im)
{
	pmi_huge_file(im, 30, (1 << 20) + 5);
}

/* A crash after a punch's intent, before its split: recovery splits. */
static inline void pmi_huge_half_punched(struct pm_image *im)
{
	struct mpm_inode *in = pmi_huge_file(im, 30, 4 << 20);

	in->punch_end = 1 << 20;
	in->punch_start = (16 * PMI_PG) | 1;
}

static inline void pmi_huge_in_format_2(struct pm_image *im)
{
	pmi_huge_file(im, 30, 4 << 20);
	mpm_super(&im->fs)->version = 2;
}

static inline void pmi_huge_in_directory(struct pm_image *im)
{
	pmi_huge_file(im, 30, 4 << 20)->mode = S_IFDIR | 0755;
}

static inline void pmi_huge_unaligned(struct pm_image *im)
{
	struct mpm_inode *in = pmi_huge_file(im, 30, 4 << 20);

	*pmi_word(im, pmi_page_of(im, in->root), 0) =
		pmi_huge_leaf(im, PMI_HUGE_RUN + 8);
}

/* Its run holds the file's own 4 KiB page (moved there). */
static inline void pmi_huge_overlapping(struct pm_image *im)
{
	struct mpm_inode *in = pmi_huge_file(im, 30, 4 << 20);
	__u64 pte = pmi_page_of(im, *pmi_word(im, pmi_page_of(im, in->root), 1));

	*pmi_word(im, pte, 0) = pmi_leaf(im, PMI_HUGE_RUN + 3);
}

/* A PS entry one level up: the MMU would read a 1 GiB page. */
static inline void pmi_huge_at_level_2(struct pm_image *im)
{
	__u64 offs[] = { 0 };
	struct mpm_inode *in = pmi_inode(im, 30, S_IFREG | 0644, 8ULL << 20);

	pmi_tree(im, 30, 3, offs, 1, 's');
	*pmi_word(im, pmi_page_of(im, in->root), 1) = pmi_huge_leaf(im, PMI_HUGE_RUN);
	pmi_name(im, MPM_ROOT_INO, "big", 30);
}

static inline void pmi_huge_mode_bad(struct pm_image *im)
{
	pmi_huge_file(im, 30, 4 << 20)->flags = 6ULL << MPM_FL_HUGE_SHIFT;
}

struct pmi_case {
	const char *name;
	void (*craft)(struct pm_image *im);
	bool damage;		/* else a mount takes it (order 4: with 5-level paging) */
};

static const struct pmi_case pmi_huge_cases[] = {
	{ "huge-leaf", pmi_huge_ok, false },
	{ "huge-leaf-past-eof", pmi_huge_past_eof, false },
	{ "huge-leaf-half-punched", pmi_huge_half_punched, false },
	{ "huge-leaf-in-format-2", pmi_huge_in_format_2, true },
	{ "huge-leaf-in-directory", pmi_huge_in_directory, true },
	{ "huge-leaf-unaligned", pmi_huge_unaligned, true },
	{ "huge-leaf-overlapping", pmi_huge_overlapping, true },
	{ "huge-leaf-at-level-2", pmi_huge_at_level_2, true },
	{ "huge-mode-bad", pmi_huge_mode_bad, true },
};

static const struct pmi_case pmi_cases[] = {
	{ "h1-huge-root", pmi_h1_huge_root, true },
	{ "h2-foreign-record-page", pmi_h2_foreign_record_page, true },
	{ "h2-cycle", pmi_h2_cycle, true },
	{ "h2-dir-entry-off-device", pmi_h2_dir_entry_off_device, true },
	{ "h3-stale-relocation", pmi_h3_stale_relocation, false },
	{ "m1-long-symlink", pmi_m1_long_symlink, true },
	{ "m1-huge-directory", pmi_m1_huge_directory, true },
	{ "m1-xattr-twice", pmi_m1_xattr_twice, true },
	{ "m1-xattr-no-prefix", pmi_m1_xattr_no_prefix, true },
	{ "acls", pmi_acls, false },
	{ "acl-bad-tag", pmi_acl_bad_tag, true },
	{ "acl-default-on-file", pmi_acl_default_on_file, true },
	{ "m1-special-with-data", pmi_m1_special_with_data, true },
	{ "m1-punched-directory", pmi_m1_punched_directory, true },
	{ "dir-named-twice", pmi_dir_named_twice, true },
	{ "order4-file", pmi_order4_file, false },
	{ "far-record-page", pmi_far_record_page, false },
	{ "poison-in-directory", pmi_poison_in_directory, true },
	{ "bad-page-misplaced", pmi_bad_page_misplaced, true },
	{ "poison-in-format-1", pmi_poison_in_format_1, true },
};

#endif /* MORSEL_TESTS_PM_IMAGE_H */
