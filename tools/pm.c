// SPDX-License-Identifier: GPL-2.0
/*
 * User-space side of a persistent morselfs (see pm.h): the environment
 * pm_check.c needs, mapping a device or an image, mkfs.
 *
 * Locking: none; single-threaded tools.  A device must not be mounted
 * while it is formatted or repaired (the kernel holds it exclusively while
 * mounted, so opening it writable fails with EBUSY then).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pm.h"

struct pm_env pm_env;

void mpm_store(struct mpm_fs *fs, __u64 *word, __u64 val)
{
	(void)fs;
	if (pm_env.crash_at > 0 && pm_env.stores + 1 >= pm_env.crash_at)
		longjmp(*pm_env.crash, 1);
	pm_env.stores++;
	*(volatile __u64 *)word = val;
}

void mpm_zero(struct mpm_fs *fs, void *addr, size_t len)
{
	(void)fs;
	memset(addr, 0, len);
}

void mpm_report(struct mpm_fs *fs, enum mpm_kind kind, const char *fmt, ...)
{
	static const char *const prefix[] = { "error", "recovery", "info" };
	va_list ap;

	(void)fs;
	if (!pm_env.out || (kind != MPM_ERROR && !pm_env.verbose))
		return;
	va_start(ap, fmt);
	fprintf(pm_env.out, "%s: ", prefix[kind]);
	vfprintf(pm_env.out, fmt, ap);
	fputc('\n', pm_env.out);
	va_end(ap);
}

int pm_open(const char *path, bool write, struct mpm_fs *fs)
{
	/* O_EXCL on a block device: EBUSY while it is mounted. */
	int fd = open(path, (write ? O_RDWR | O_EXCL : O_RDONLY) | O_CLOEXEC);
	struct stat st;
	__u64 size;
	void *map;
	int err;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st))
		goto fail;
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &size))
			goto fail;
		/* A mount wrote the device through DAX, past the block
		 * device's page cache: drop what an earlier run cached. */
		ioctl(fd, BLKFLSBUF, 0);
	} else if (S_ISREG(st.st_mode)) {
		size = st.st_size;
	} else {
		errno = ENODEV;
		goto fail;
	}
	if (size < 2 * MPM_PAGE_SIZE) {
		errno = ENOSPC;
		goto fail;
	}
	map = mmap(NULL, size, PROT_READ | (write ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	close(fd);
	memset(fs, 0, sizeof(*fs));
	fs->dev = map;
	fs->nr_pages = size / MPM_PAGE_SIZE;
	fs->priv = (void *)(uintptr_t)fs->nr_pages;	/* what pm_close unmaps */
	fs->repair = false;
	return 0;
fail:
	err = -errno;
	close(fd);
	return err;
}

int pm_close(struct mpm_fs *fs)
{
	size_t len = (uintptr_t)fs->priv * MPM_PAGE_SIZE;
	int err = 0;

	if (msync(fs->dev, len, MS_SYNC))
		err = -errno;
	munmap(fs->dev, len);
	mpm_fs_release(fs);
	fs->dev = NULL;
	return err;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Entries are written for base 0: the first mount relocates them to the
 * device's physical address, as after any move. */
static __u64 table_entry(__u64 page)
{
	return page * MPM_PAGE_SIZE | MPM_E_TABLE | MPM_E_AD;
}

/*
 * Page 0 the super block, pages 1-3 the inode table's PUD, PMD and PTE
 * tables, page 4 its first record page with the root directory (inode 1).
 * The file system has @fs->nr_pages pages, which may be fewer than the
 * device has (mount and fsck use the super block's count).
 * The magic number is stored last, after a store that clears it, so an
 * interrupted mkfs leaves no file system.
 */
void pm_mkfs(struct mpm_fs *fs, mode_t mode, uid_t uid, gid_t gid)
{
	struct mpm_super *sb = mpm_super(fs);
	struct mpm_inode *root;
	__u64 uuid[2] = { 0, 0 }, t = now_ns(), p;

	if (getrandom(uuid, sizeof(uuid), 0) != sizeof(uuid))
		uuid[0] = t;
	mpm_store(fs, &sb->magic, 0);
	for (p = 1; p <= 4; p++)
		memset(fs->dev + p * MPM_PAGE_SIZE, 0, MPM_PAGE_SIZE);
	memset(fs->dev + 8, 0, MPM_PAGE_SIZE - 8);
	for (p = 1; p <= 3; p++)
		mpm_store(fs, (__u64 *)(fs->dev + p * MPM_PAGE_SIZE), p < 3 ?
			  table_entry(p + 1) : 4 * MPM_PAGE_SIZE | MPM_E_LEAF | MPM_E_AD);
	root = (struct mpm_inode *)(fs->dev + 4 * MPM_PAGE_SIZE) + MPM_ROOT_INO;
	mpm_store(fs, &root->owner, (__u64)uid | (__u64)gid << 32);
	mpm_store(fs, &root->atime, t);
	mpm_store(fs, &root->mtime, t);
	mpm_store(fs, &root->ctime, t);
	mpm_store(fs, &root->btime, t);
	mpm_store(fs, &root->mode, S_IFDIR | (mode & 07777));
	mpm_store(fs, &sb->version, MPM_VERSION);
	mpm_store(fs, &sb->nr_pages, fs->nr_pages);
	mpm_store(fs, &sb->base, 0);
	mpm_store(fs, &sb->itable, table_entry(1) |
		  (__u64)MPM_ITABLE_ORDER << MPM_ROOT_ORDER_SHIFT);
	mpm_store(fs, &sb->uuid[0], uuid[0]);
	mpm_store(fs, &sb->uuid[1], uuid[1]);
	mpm_store(fs, &sb->mkfs_time, t);
	mpm_store(fs, &sb->nr_devices, 1);
	mpm_store(fs, &sb->dev[0].uuid[0], uuid[0]);
	mpm_store(fs, &sb->dev[0].uuid[1], uuid[1]);
	mpm_store(fs, &sb->dev[0].nr_pages, fs->nr_pages);
	mpm_store(fs, &sb->magic, MPM_MAGIC);
}

int pm_fsck_status(struct mpm_fs *fs, int err)
{
	struct mpm_stats *st = &fs->st;
	bool recoverable = mpm_needs_recovery(st);

	if (err)
		return PM_FSCK_OPERATIONAL;
	if (st->errors)
		return PM_FSCK_UNCORRECTED;
	if (recoverable)
		return fs->repair ? PM_FSCK_REPAIRED : PM_FSCK_UNCORRECTED;
	return PM_FSCK_OK;
}

void pm_print_stats(FILE *f, const char *name, struct mpm_fs *fs)
{
	struct mpm_stats *st = &fs->st;

	fprintf(f, "%s: %llu inodes, %llu directories, %llu names; %llu of %llu pages used "
		"(inode table %llu, tables %llu, data %llu, %llu 2 MiB leaves); %llu errors, %llu fixed; "
		"leaked %llu pages (%llu orphans, %llu renames, %llu punches unfinished, "
		"%llu trees above their order); %llu failed pages (%llu marks in files, "
		"%llu unfinished)%s\n",
		name, (unsigned long long)st->inodes, (unsigned long long)st->dirs,
		(unsigned long long)st->names, (unsigned long long)st->used_pages,
		(unsigned long long)fs->nr_pages, (unsigned long long)st->itable_pages,
		(unsigned long long)st->table_pages, (unsigned long long)st->data_pages,
		(unsigned long long)st->huge_leaves, (unsigned long long)st->errors, (unsigned long long)st->fixed,
		(unsigned long long)st->leaked_pages,
		(unsigned long long)st->orphans, (unsigned long long)st->renames,
		(unsigned long long)st->punches, (unsigned long long)st->lowered,
		(unsigned long long)st->bad_pages, (unsigned long long)st->poisoned,
		(unsigned long long)st->poisonings,
		fs->repair && st->stores ? ", repaired" : "");
}
