// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzzing the persistent walk (module/pm_check.c) in user space, built
 * with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer.
 *
 * An input is a device image: its whole 4 KiB pages (2..PMF_MAX_PAGES)
 * and, in a last partial page, one byte choosing the device's physical
 * address at "mount" (its base, or 3 GiB for base 0; 256 MiB above its
 * base; or 1 GiB) and
 * the kernel's paging (5-level, or 4-level: order 4 refused).
 * For each input, on copies of the image:
 *  - fsck -n (a walk without repair) ends;
 *  - a mount's walk (repair) either refuses the device with the image
 *    byte-identical (errors, or a bad super block), or accepts it; then
 *    everything the module does at mount time and after (load every
 *    directory and inode as pm_load_dir()/pm_iget() do, adopt every
 *    regular file's tree as tree.c does) stays inside the device and ends,
 *    and a second walk finds nothing to do;
 *  - fsck -y (repair and fix) ends, and if it leaves no damage a second
 *    walk finds it clean and nothing to do.
 * A broken rule is an abort(), which libFuzzer reports as a crash with the
 * input that caused it.  The only exception to "refused unchanged": a
 * device whose relocation was already under way, which a mount finishes
 * before pass 2 can look at directories (docs/persistence.md).
 *
 * With PM_FUZZ_SEEDS defined, the same file builds tests/pm_fuzz_seeds,
 * which writes the seed corpus: images grown from `morsel mkfs` (tests/
 * pm_image.h) holding every kind of inode and every state a crash leaves,
 * and the crafted images of the review's findings.
 *
 * Locking: none; single-threaded.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pm_image.h"

/*
 * A walk cut by longjmp() leaves what its later passes allocated; the
 * cut walks of cut_fsck_resumes() run with leak detection off.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define PMF_LSAN	1
#endif
#endif
#ifndef PMF_LSAN
static inline void __lsan_disable(void) { }
static inline void __lsan_enable(void) { }
#endif

#define PMF_MAX_PAGES	1024	/* the 2 MiB leaves' seeds (PMI_HUGE_IMAGE) */

#define REQUIRE(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "pm_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort();						\
	}								\
} while (0)

/* ---- the checks ---- */

static __u64 pmf_page_of(struct mpm_fs *fs, __u64 e)
{
	return mpm_entry_page(fs, e);
}

/*
 * What tree.c's adopt and walk do with a regular file's tree: every
 * non-zero entry is a table (level > 0) or a leaf, inside the device, or
 * at level 0 a failed page's mark (format 2), or at level 1 a 2 MiB leaf
 * of 512 pages inside the device (format 3: the seeds of tests/pm_image.h's
 * pmi_huge_cases hold them).
 * Returns the entries visited (bounded by the device).
 */
static __u64 adopt(struct mpm_fs *fs, __u64 e, int level, __u64 budget)
{
	__u64 page = pmf_page_of(fs, e), n = 1, i, f = e & ~MPM_E_ADDR & ~MPM_E_AD;

	if (!level && e == MPM_POISON)
		return 1;
	REQUIRE(page && page < fs->nr_pages);
	if (level == 1 && f == MPM_E_HUGE_LEAF) {
		REQUIRE(!(page % MPM_HUGE_PAGES) && page + MPM_HUGE_PAGES <= fs->nr_pages);
		return 1;
	}
	REQUIRE(f == (level ? MPM_E_TABLE : MPM_E_LEAF));
	REQUIRE(budget);
	if (!level)
		return 1;
	for (i = 0; i < MPM_ENTRIES; i++) {
		__u64 c = ((__u64 *)(fs->dev + page * MPM_PAGE_SIZE))[i];

		if (c)
			n += adopt(fs, c, level - 1, budget - n);
	}
	return n;
}

/* What a mount loads after an accepting walk, as the module does it. */
static void load(struct mpm_fs *fs)
{
	__u64 *queue = calloc(fs->nr_pages * MPM_DIRENTS_PER_PAGE + 2, sizeof(__u64));
	__u64 head = 0, tail = 0, p, q;
	int s;

	REQUIRE(queue);
	/* The bad-page tree, adopted when a page fails (pm.c). */
	if (mpm_super(fs)->badtree)
		adopt(fs, mpm_super(fs)->badtree & ~MPM_ROOT_ORDER_MASK,
		      mpm_root_order(mpm_super(fs)->badtree), fs->nr_pages * 513);
	queue[tail++] = MPM_ROOT_INO;
	while (head < tail) {
		struct mpm_inode *d = mpm_inode(fs, queue[head++]);

		REQUIRE(d && S_ISDIR(d->mode));
		REQUIRE(d->size / MPM_PAGE_SIZE <= fs->nr_pages);
		for (p = 0; p < d->size / MPM_PAGE_SIZE; p++) {
			struct mpm_dirent *de = mpm_tree_page(fs, d->root, p);

			for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
				__u64 ino = mpm_de_ino(de->word);
				struct mpm_inode *in;
				const struct mpm_xattr *x;
				int nx = 0;

				if (!de->word)
					continue;
				in = mpm_inode(fs, ino);
				REQUIRE(in && in->mode);
				REQUIRE(mpm_de_len(de->word) >= 1);
				for (x = NULL; (x = mpm_xattr_next(fs, in, x)); nx++) {
					__u64 page = mpm_entry_page(fs, in->xattr);
					const __u8 *start = fs->dev + page * MPM_PAGE_SIZE;

					REQUIRE(nx < MPM_PAGE_SIZE / 8);
					REQUIRE((const __u8 *)mpm_xattr_value(x) + x->value_len <=
						start + MPM_PAGE_SIZE);
				}
				if (S_ISLNK(in->mode)) {
					REQUIRE(in->size < MPM_PAGE_SIZE);
					REQUIRE(!in->size || mpm_tree_page(fs, in->root, 0));
				} else if (S_ISREG(in->mode)) {
					REQUIRE(mpm_links(fs, ino) >= 1);
					if (in->root)
						adopt(fs, in->root & ~MPM_ROOT_ORDER_MASK,
						      mpm_root_order(in->root), fs->nr_pages * 513);
				} else if (S_ISDIR(in->mode)) {
					/* pm_load_dir() would loop on a second name */
					for (q = 0; q < tail; q++)
						REQUIRE(queue[q] != ino);
					REQUIRE(tail < fs->nr_pages * MPM_DIRENTS_PER_PAGE + 2);
					queue[tail++] = ino;
				}
			}
		}
	}
	free(queue);
}

static unsigned int max_order;	/* the "kernel's" for a mount */

static int walk(__u8 *img, __u64 pages, __u64 phys, bool repair, bool fix,
		struct mpm_stats *st)
{
	struct mpm_fs fs = { .dev = img, .nr_pages = pages, .phys = phys,
			     .repair = repair, .fix = fix,
			     .max_order = repair && !fix ? max_order : 0 };
	int err = mpm_walk(&fs);

	if (!err && !fs.st.errors && repair && !fix)
		load(&fs);
	*st = fs.st;
	mpm_fs_release(&fs);
	return err;
}

/* After a walk that left no damage: nothing more to find or do. */
static void settled(__u8 *img, __u64 pages, __u64 phys)
{
	struct mpm_stats st;

	REQUIRE(!walk(img, pages, phys, false, false, &st));
	REQUIRE(!st.errors && !mpm_needs_recovery(&st));
	REQUIRE(!walk(img, pages, phys, true, false, &st));
	REQUIRE(!st.errors && !st.stores);
}

/*
 * fsck -y on a damaged device whose relocation is under way, cut after
 * each of its stores until the relocation has ended (at most PMF_CUTS),
 * then run again to the end: the same outcome as one uninterrupted run
 * (the same damage left, the same pages; or, as there, no file system
 * when a repair had to clear the inode table's root).  A word that damage clears during the
 * relocation would shift the walk index of every later entry (module
 * review F2).
 */
#define PMF_CUTS	256

static void cut_fsck_resumes(const uint8_t *data, __u8 *img, __u64 pages,
			     int whole_err, const struct mpm_stats *whole)
{
	struct mpm_fs fs = { .dev = img, .nr_pages = pages, .repair = true, .fix = true };
	long long total = whole->stores;
	volatile long long k;
	bool done;
	struct mpm_stats st;
	jmp_buf cut;

	for (k = 1; k <= total && k <= PMF_CUTS; k++) {
		memcpy(img, data, pages * MPM_PAGE_SIZE);
		fs.dev = img;
		pm_env.crash = &cut;
		pm_env.stores = 0;
		pm_env.crash_at = k;
		__lsan_disable();
		if (!setjmp(cut))
			mpm_walk(&fs);
		__lsan_enable();
		pm_env.crash_at = 0;
		mpm_fs_release(&fs);
		done = !mpm_super(&fs)->reloc_base;
		walk(img, pages, 0, true, true, &st);	/* the next fsck -y */
		/* As after one run: maybe no file system left (no root). */
		REQUIRE(walk(img, pages, 0, false, false, &st) == whole_err);
		REQUIRE(whole_err || (st.errors == whole->errors &&
				      st.data_pages == whole->data_pages &&
				      st.used_pages == whole->used_pages));
		if (done)
			break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	__u64 pages = size / MPM_PAGE_SIZE, phys, reloc;
	struct mpm_super *sb = (struct mpm_super *)data;
	size_t len = pages * MPM_PAGE_SIZE;
	struct mpm_stats st;
	__u8 *img;
	int err;

	if (pages < 2 || pages > PMF_MAX_PAGES)
		return -1;	/* not a device: not kept in the corpus */
	max_order = size > len && data[len] / 3 % 2 ? 3 : 4;
	switch (size > len ? data[len] % 3 : 0) {
	case 0: phys = sb->base ? sb->base : 3ULL << 30; break;	/* never at 0 */
	case 1: phys = sb->base + (256ULL << 20); break;
	default: phys = 1ULL << 30; break;
	}
	phys &= ~(__u64)(MPM_PAGE_SIZE - 1);
	reloc = sb->reloc_base;
	img = malloc(len);
	REQUIRE(img);

	/* fsck -n */
	memcpy(img, data, len);
	walk(img, pages, 0, false, false, &st);
	REQUIRE(!memcmp(img, data, len));

	/* a mount */
	err = walk(img, pages, phys, true, false, &st);
	if (err || st.errors) {
		REQUIRE(reloc || !memcmp(img, data, len));
	} else {
		settled(img, pages, phys);
	}

	/* fsck -y */
	memcpy(img, data, len);
	err = walk(img, pages, 0, true, true, &st);
	if (!err && !st.errors)
		settled(img, pages, 0);
	if (!err && reloc && st.fixed) {
		struct mpm_stats whole;
		int whole_err = walk(img, pages, 0, false, false, &whole);

		whole.stores = st.stores;
		cut_fsck_resumes(data, img, pages, whole_err, &whole);
	}
	free(img);
	return 0;
}

#ifdef PM_FUZZ_SEEDS
/* ---- the seeds ---- */

static const char *dir;

/* Write @im, with the byte choosing the mount's address if @phys_choice >= 0. */
static void save(struct pm_image *im, const char *name, int phys_choice)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(im->fs.dev, PMI_PG, im->fs.nr_pages, f) != im->fs.nr_pages ||
	    (phys_choice >= 0 && fputc(phys_choice, f) == EOF) || fclose(f)) {
		perror(path);
		exit(1);
	}
	pmi_free(im);
}

static void fresh(struct pm_image *im, bool everything)
{
	if (pmi_init(im, PMI_PAGES, 0)) {
		perror("pmi_init");
		exit(1);
	}
	if (everything)
		pmi_everything(im);
}

/* A repairing walk to @phys cut after @stores stores: a relocation under way. */
static void cut_relocation(struct pm_image *im, __u64 phys, long long stores)
{
	struct mpm_fs fs = { .dev = im->fs.dev, .nr_pages = im->fs.nr_pages,
			     .repair = true, .phys = phys };
	jmp_buf cut;

	pm_env.crash = &cut;
	pm_env.stores = 0;
	pm_env.crash_at = stores;
	if (!setjmp(cut))
		mpm_walk(&fs);
	pm_env.crash_at = 0;
	mpm_fs_release(&fs);
	if (!mpm_super(&fs)->reloc_base || !mpm_super(&fs)->reloc_done) {
		fprintf(stderr, "pm_fuzz_seeds: no relocation under way\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	__u64 offs[] = { 0, 1, 2, 700 };
	struct mpm_dirent *de, *old;
	struct pm_image im;
	__u64 *leaf;
	struct mpm_inode *in;
	unsigned int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR (writes the seed images there)\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	fresh(&im, false);
	save(&im, "mkfs", -1);
	fresh(&im, true);
	save(&im, "everything", -1);
	fresh(&im, true);
	save(&im, "everything-moved", 1);

	/* States a crash leaves: an orphan, a rename, a punch, pages past EOF. */
	fresh(&im, true);
	pmi_inode(&im, 20, S_IFREG | 0644, PMI_PG);
	pmi_tree(&im, 20, 0, offs, 1, 'o');
	pmi_inode(&im, 21, S_IFREG | 0644, 3 * PMI_PG);
	pmi_tree(&im, 21, 1, offs, 3, 'p');
	in = pmi_rec(&im, 21);
	in->punch_start = PMI_PG | 1;
	in->punch_end = 2 * PMI_PG;
	pmi_name(&im, MPM_ROOT_INO, "punched", 21);
	pmi_inode(&im, 22, S_IFREG | 0644, 10);
	pmi_tree(&im, 22, 2, offs, 4, 'e');	/* above its order, pages past EOF */
	pmi_name(&im, MPM_ROOT_INO, "shrunk", 22);
	old = pmi_name(&im, MPM_ROOT_INO, "old-name", PMI_FILE);
	de = pmi_name(&im, PMI_DIR, "new-name", PMI_FILE);
	de->replaces = pmi_off(&im, old);
	save(&im, "crash-states", -1);

	/*
	 * Failed pages (format 2): a file's mark, a free page listed, and a
	 * file's leaf on a listed page (a crash between the two stores).
	 */
	fresh(&im, true);
	pmi_inode(&im, 24, S_IFREG | 0644, 3 * PMI_PG);
	pmi_tree(&im, 24, 1, offs, 3, 'b');
	*pmi_word(&im, pmi_page_of(&im, pmi_rec(&im, 24)->root), 1) = MPM_POISON;
	pmi_name(&im, MPM_ROOT_INO, "failed", 24);
	i = pmi_page(&im);
	pmi_bad(&im, i, i);
	pmi_inode(&im, 25, S_IFREG | 0644, PMI_PG);
	pmi_tree(&im, 25, 0, offs, 1, 'u');
	i = pmi_page_of(&im, pmi_rec(&im, 25)->root);
	pmi_bad(&im, i, i);
	pmi_name(&im, MPM_ROOT_INO, "failing", 25);
	save(&im, "failed-pages", -1);

	/* Relocations under way: resumed in place, and after a second move. */
	fresh(&im, true);
	cut_relocation(&im, 1ULL << 30, 30);
	save(&im, "relocating", 2);
	/*
	 * ... with damage further on (a leaf walked after the cut gets a
	 * foreign bit): fsck -y clears it while it relocates.
	 */
	fresh(&im, true);
	pmi_inode(&im, 200, S_IFREG | 0644, 2 * PMI_PG);
	pmi_tree(&im, 200, 1, offs, 2, 'n');
	pmi_name(&im, MPM_ROOT_INO, "damaged", 200);
	pmi_inode(&im, 201, S_IFREG | 0644, 2 * PMI_PG);
	pmi_tree(&im, 201, 1, offs, 2, 'a');
	pmi_name(&im, MPM_ROOT_INO, "after", 201);
	leaf = pmi_word(&im, pmi_page_of(&im, pmi_rec(&im, 200)->root), 0);
	cut_relocation(&im, 1ULL << 30, 30);
	*leaf |= MPM_E_NX;
	save(&im, "relocating-with-damage", 2);
	fresh(&im, true);
	cut_relocation(&im, 1ULL << 30, 30);
	save(&im, "relocating-moved-again", 1);

	/* The crafted damage of tests/pm_image.h. */
	for (i = 0; i < ARRAY_SIZE(pmi_cases); i++) {
		fresh(&im, true);
		pmi_cases[i].craft(&im);
		save(&im, pmi_cases[i].name, -1);
	}
	/* Format 3's 2 MiB leaves, good and damaged, on 4 MiB images. */
	for (i = 0; i < ARRAY_SIZE(pmi_huge_cases); i++) {
		if (pmi_init(&im, PMI_HUGE_IMAGE, 0)) {
			perror("pmi_init");
			exit(1);
		}
		pmi_everything(&im);
		pmi_huge_cases[i].craft(&im);
		save(&im, pmi_huge_cases[i].name, -1);
	}
	return 0;
}
#endif /* PM_FUZZ_SEEDS */
