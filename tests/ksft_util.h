/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kselftest-harness suites (safety_test, errors_test,
 * fs_test, mapping_test, primitive_test, ioctl_test, io_test,
 * lifecycle_test, ...): paths in the suite's morselfs, fresh morsels,
 * running an access in a child to see which signal it gets, a call that
 * must fail with an errno, dropping privileges, private morselfs
 * instances and their options in /proc/mounts, POSIX ACLs in their
 * xattr form, writing a control file, reading a counter of the module,
 * and what statfs says one file can get.  No locking: each TEST is a
 * process.  Include it after kselftest_harness.h.
 */
#ifndef MORSEL_KSFT_UTIL_H
#define MORSEL_KSFT_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"

/* A path in the suite's morselfs ($MORSEL_MNT), in one of 4 buffers. */
static inline const char *mpath(const char *name)
{
	static char buf[4][256];
	static int i;
	const char *m = getenv("MORSEL_MNT");

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", m ? m : "/tmp/morsel", name);
	return buf[i];
}

/* A new morsel of @size at @path (replacing one), mode 0644, O_RDWR. */
static inline int fresh(const char *path, uint64_t size)
{
	unlink(path);
	return morsel_create(path, size, 0644);
}

/* Run @fn(@arg) in a child; the signal that ended it, 0 on exit(0), else -1. */
static inline int in_child(void (*fn)(volatile char *), volatile char *arg)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		fn(arg);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	return WEXITSTATUS(status) ? -1 : 0;
}

/* A system call that must fail with @err (-1 or MAP_FAILED). */
#define ASSERT_ERRNO(err, call) do {					\
	long _r;							\
	int _e;								\
	errno = 0;							\
	_r = (long)(call);						\
	_e = errno;							\
	ASSERT_EQ(-1, _r) TH_LOG("%s succeeded", #call);		\
	ASSERT_EQ(err, _e) TH_LOG("%s: %s", #call, strerror(_e));	\
} while (0)

/*
 * statfs(@dir)'s f_bavail is what one file can get: fallocate of that many
 * pages through @fd (an empty file) succeeds and leaves no block free, and
 * one page more gives ENOSPC with the size unchanged.  Needs <sys/statfs.h>.
 */
#define EXPECT_BAVAIL_FITS_ONE_FILE(dir, fd) do {			\
	struct statfs _sf;						\
	off_t _len;							\
	ASSERT_EQ(0, statfs(dir, &_sf));				\
	_len = (off_t)_sf.f_bavail * 4096;				\
	EXPECT_EQ(0, fallocate(fd, 0, 0, _len)) TH_LOG("%s", strerror(errno)); \
	ASSERT_EQ(0, statfs(dir, &_sf));				\
	EXPECT_EQ(0, _sf.f_bfree);					\
	EXPECT_EQ(0, _sf.f_bavail);					\
	errno = 0;							\
	EXPECT_EQ(-1, fallocate(fd, 0, _len, 4096));			\
	EXPECT_EQ(ENOSPC, errno);					\
	EXPECT_EQ(_len, lseek(fd, 0, SEEK_END));			\
} while (0)

/* For in_child(): a read of @p (SIGSEGV, SIGBUS or nothing). */
static inline void read_byte(volatile char *p)
{
	(void)*p;
}

/* Become nobody (uid and gid 65534, no capabilities); 0 on success. */
static inline int become_nobody(void)
{
	return setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534);
}

/* A fresh morselfs instance at @dir with the options @opts; mount(2)'s. */
static inline int mount_instance(const char *dir, const char *opts)
{
	mkdir(dir, 0755);
	umount2(dir, MNT_DETACH);
	return mount("none", dir, "morselfs", 0, opts);
}

/* The option string /proc/mounts shows for @dir ("" if not mounted). */
static inline void proc_mount_opts(const char *dir, char *out, size_t len)
{
	FILE *f = setmntent("/proc/mounts", "r");
	struct mntent *e;

	out[0] = 0;
	while (f && (e = getmntent(f)))
		if (!strcmp(e->mnt_dir, dir))
			snprintf(out, len, "%s", e->mnt_opts);
	if (f)
		endmntent(f);
}

/*
 * Is the suite's morselfs ($MORSEL_MNT) a persistent instance (pmem=)?
 * Its morsels keep the order in the root (tree.c), so an empty one of
 * order >= 1 has its root table where a volatile one has none.
 */
static inline int mnt_is_persistent(void)
{
	const char *m = getenv("MORSEL_MNT");
	char opts[1024];

	proc_mount_opts(m ? m : "/tmp/morsel", opts, sizeof(opts));
	return strstr(opts, "pmem=") != NULL;
}

/*
 * A POSIX ACL as system.posix_acl_access and _default hold it: version 2,
 * then @n entries (tags as <sys/acl.h> numbers them: 1 user::, 2 user:ID,
 * 4 group::, 8 group:ID, 16 mask::, 32 other::; permissions 4 r, 2 w,
 * 1 x), written to @buf.  Returns its length.
 */
struct acl_ent {
	uint16_t tag, perm;
	uint32_t id;
};

static inline size_t acl_xattr(void *buf, const struct acl_ent *e, int n)
{
	uint32_t version = 2;

	memcpy(buf, &version, 4);
	memcpy((char *)buf + 4, e, n * sizeof(*e));
	return 4 + n * sizeof(*e);
}

/* Write the string @s to the file @path (sysfs, cgroupfs); 0 or -1. */
static inline int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* /proc/meminfo's HardwareCorrupted (failed pages), in KiB; -1 if unread. */
static inline long hw_corrupted_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "HardwareCorrupted: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/*
 * The module's global counter /sys/fs/morselfs/@name (pages, tables,
 * morsels, mounts: all instances together); -1 if it cannot be read.
 */
static inline long morsel_counter(const char *name)
{
	char p[128];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/fs/morselfs/%s", name);
	f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

#endif /* MORSEL_KSFT_UTIL_H */
