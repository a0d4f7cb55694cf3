// SPDX-License-Identifier: GPL-2.0
/*
 * pm_crash: every-prefix crash testing of persistent morselfs (mount -o
 * pmem=DEV).  Runs in the VM (vm/run --pmem FILE:SIZE --pm-log) as root, on the
 * fsdax device named by $MORSEL_PMEM, which it formats again and again.
 *
 * For each workload (one variant of the fixture `crash`: SETUP steps, then
 * one to three operations):
 *  1. mkfs; mount, unmount and mount again (the first mount relocates the
 *     entries from base 0: a settled image); SETUP; unmount; mount.
 *  2. PRE: the device image, read through the block device (its page cache
 *     dropped first: the module writes through DAX).
 *  3. The store log (/sys/fs/morselfs/pm_log, module/pm_log.c) is armed,
 *     the operations run, each followed by a mark; the log is read; unmount;
 *     POST: the image again.
 *  4. Completeness: PRE with every record applied must be POST byte for
 *     byte, or a store escaped the log.
 *  5. S_j, j = 0..ops: PRE plus the records before mark j, recovered with
 *     pm_check.c's walk in user space (repair on a private copy) and dumped
 *     to a canonical description of what the file system holds (dump(),
 *     below: names, types, modes, owners, sizes, link counts, minimum
 *     orders, bounds, orders, populated pages, reserved ranges, the
 *     contents' hash, whether the last page holds non-zero bytes past EOF
 *     (a later extension would show them), chattr flags, symlink targets,
 *     extended attributes (names, lengths, hashes of the values); no
 *     timestamps and no inode numbers).  A state at a mark must need no
 *     recovery at all, and every operation must change the dump.
 *  6. Every prefix k = 0..K of the K store and byte records (a crash after
 *     k of them; records are atomic): recover a copy (the walk returns 0
 *     with no errors), walk it again without repair (nothing left: no
 *     renames, punches, orphans, leaked pages or relocations, so recovery
 *     leaks nothing and is idempotent), dump it, and the dump must be
 *     S_{i-1} or S_i, where op i made record k, or S_i with the
 *     reservations of S_{i-1} (a shrinking truncate cuts a reservation
 *     after it stores the size: with_old_resv()), or S_{i-1} with
 *     2 MiB leaves split (a split changes no byte: without_huge()), or
 *     S_{i-1} with a different number of pages and the same bytes (a
 *     seal populates the holes, zeros, before its commit store).
 * The fixture `move` does the same for a mount that relocates every entry
 * (the device moved to another physical address, made offline by the
 * user-space walk): every prefix of its stores, recovered for the real
 * address, is the same file system (to a distant range and to an
 * overlapping one).  The oracle's own test (fixture `oracle`) feeds it a
 * rename with its commit store left out and expects it to say no.
 *
 * Recovery runs on MAP_PRIVATE mappings of a memfd holding PRE plus the
 * prefix, so a crash state costs only the pages recovery writes.
 *
 * Locking: none.  Each test is a process of its own (kselftest harness)
 * and tests run one after another, so the device, the mount point MNT and
 * the store log have one user at a time.  The count of crash states
 * checked is a shared anonymous mapping that each test adds to and the
 * main process prints at exit.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <linux/morsel.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "pm.h"		/* tools/pm.h: pm_check.c in user space */

#define KiB		1024ULL
#define MiB		(1024 * KiB)
#define PG		4096ULL
#define MNT		"/tmp/pm-crash"
#define PM_LOG		"/sys/fs/morselfs/pm_log"
#define LOG_START	"start 67108864"
#define MAX_OPS		3
#define DETAILS		3	/* failing crash states reported in full */
#define SUMMARIES	30	/* ... and in one line */

/* ---- workloads ---------------------------------------------------------- */

/* Steps return 0, or -1 with errno set. */
struct workload {
	int (*setup)(void);
	int nops;
	int (*ops[MAX_OPS])(void);
};

/* MNT/@name, in one of 4 buffers. */
static const char *P(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", MNT, name);
	return buf[i];
}

/* Bytes that differ from page to page and from file to file. */
static void pattern(char *buf, size_t len, __u64 from, int seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		__u64 x = from + i;

		buf[i] = (char)(x * 131 + (x >> 12) * 7 + seed * 29 + 1);
	}
}

/* Write @len pattern bytes at @off of @fd; 0 or -1. */
static int pwrite_pattern(int fd, __u64 off, size_t len, int seed, bool append)
{
	char *buf = malloc(len);
	size_t done = 0;
	int err = 0;

	if (!buf)
		return -1;
	pattern(buf, len, off, seed);
	while (done < len) {
		ssize_t n = append ? write(fd, buf + done, len - done) :
				     pwrite(fd, buf + done, len - done, off + done);

		if (n <= 0) {
			if (!n)
				errno = EIO;
			err = -1;
			break;
		}
		done += n;
	}
	free(buf);
	return err;
}

/* A new file @name of @len pattern bytes. */
static int put(const char *name, size_t len, int seed)
{
	int fd = open(P(name), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	int err;

	if (fd < 0)
		return -1;
	err = len ? pwrite_pattern(fd, 0, len, seed, false) : 0;
	if (close(fd))
		err = -1;
	return err;
}

static int creat_f(void)
{
	int fd = open(P("f"), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

	return fd < 0 ? -1 : close(fd);
}

/* write(2) @len bytes at @off of f (or appended). */
static int write_f(__u64 off, size_t len, int seed, bool append)
{
	int fd = open(P("f"), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : 0));
	int err;

	if (fd < 0)
		return -1;
	err = pwrite_pattern(fd, off, len, seed, append);
	if (close(fd))
		err = -1;
	return err;
}

static int f_fallocate(int mode, __u64 off, __u64 len)
{
	int fd = open(P("f"), O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = fallocate(fd, mode, off, len);
	close(fd);
	return err;
}

static int f_ioctl(unsigned long cmd, void *arg)
{
	int fd = open(P("f"), O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = ioctl(fd, cmd, arg);
	close(fd);
	return err;
}

static int op_creat_f(void) { return creat_f(); }
static int op_write_f_10k(void) { return write_f(0, 10 * KiB, 1, false); }
static int op_write_f_8k(void) { return write_f(0, 8 * KiB, 6, false); }
static int op_append_f_5k(void) { return write_f(0, 5 * KiB, 3, true); }
static int op_mkdir_d(void) { return mkdir(P("d"), 0755); }
static int op_mkdir_a(void) { return mkdir(P("a"), 0755); }
static int op_creat_d_f(void)
{
	int fd = open(P("d/f"), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);

	return fd < 0 ? -1 : close(fd);
}
static int op_symlink_s(void) { return symlink("some/target/of/a/link", P("s")); }
static int op_link_f_g(void) { return link(P("f"), P("g")); }
static int op_unlink_f(void) { return unlink(P("f")); }
static int op_unlink_g(void) { return unlink(P("g")); }
static int op_rmdir_d(void) { return rmdir(P("d")); }
static int op_rename_f_g(void) { return rename(P("f"), P("g")); }
static int op_rename_f_d_f(void) { return rename(P("f"), P("d/f")); }
static int op_rename_a_b_a(void) { return rename(P("a"), P("b/a")); }
static int op_truncate_f_3m(void) { return truncate(P("f"), 3 * MiB); }
static int op_truncate_f_5k(void) { return truncate(P("f"), 5 * KiB); }
static int op_truncate_f_2k(void) { return truncate(P("f"), 2 * KiB); }
static int op_truncate_f_1m(void) { return truncate(P("f"), 1 * MiB); }
/*
 * Appends at the new EOF: a write over bytes below EOF is not atomic (the
 * data of a file on the device has DAX semantics, docs/persistence.md).
 */
static int op_write_f_6k_at_2k(void) { return write_f(2 * KiB, 6 * KiB, 7, false); }
static int op_punch_f_middle(void)
{
	return f_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4 * PG, 8 * PG);
}
static int op_fallocate_f_20k(void) { return f_fallocate(0, 0, 20 * KiB); }
/* A reservation past EOF up to 3 MiB: the order rises to 2, then `resv`. */
static int op_reserve_f_3m(void)
{
	return f_fallocate(FALLOC_FL_KEEP_SIZE, 0, 3 * MiB);
}
/*
 * A memory error in page 5 of f (madvise(MADV_HWPOISON) through a shared
 * mapping): the bad-page tree lists the page, then f's leaf is the mark.
 */
static int op_memory_error_f_page5(void)
{
	int fd = open(P("f"), O_RDWR | O_CLOEXEC), ret;
	char *map;

	if (fd < 0)
		return -1;
	map = mmap(NULL, 16 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	ret = madvise(map + 5 * PG, PG, MADV_HWPOISON);
	munmap(map, 16 * PG);
	return ret;
}
static int op_chmod_f(void) { return chmod(P("f"), 0600); }
static int op_chown_f(void) { return chown(P("f"), 1000, 1001); }
static int op_chattr_f(void)
{
	int flags = FS_APPEND_FL | FS_NODUMP_FL;
	int fd = open(P("f"), O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	close(fd);
	return err;
}
static int op_min_order_f_2(void)
{
	struct morsel_min_order o = { .order = 2 };

	return f_ioctl(MORSEL_IOC_SET_MIN_ORDER, &o);
}
static int op_bind_f(void)
{
	struct morsel_bind b = { .addr = 1ULL << 40 };

	return f_ioctl(MORSEL_IOC_BIND, &b);
}

/* A shared read-only mapping of f's 3 pages, read one page per operation. */
static volatile char *fault_map;
static int fault_fd = -1;

static int read_page(int page)
{
	if (!fault_map) {
		void *p;

		fault_fd = open(P("f"), O_RDONLY | O_CLOEXEC);
		if (fault_fd < 0)
			return -1;
		p = mmap(NULL, 3 * PG, PROT_READ, MAP_SHARED, fault_fd, 0);
		if (p == MAP_FAILED)
			return -1;
		fault_map = p;
	}
	if (fault_map[page * PG] != 0) {	/* never written: a hole */
		errno = EILSEQ;
		return -1;
	}
	if (page == 2) {
		munmap((void *)fault_map, 3 * PG);
		close(fault_fd);
		fault_map = NULL;
	}
	return 0;
}
static int op_read_page0(void) { return read_page(0); }
static int op_read_page1(void) { return read_page(1); }
static int op_read_page2(void) { return read_page(2); }

/* Extended attributes: a value of @len pattern bytes. */
static int set_xattr(const char *path, const char *name, size_t len, int seed, int flags)
{
	char buf[512];

	pattern(buf, len, 0, seed);
	return setxattr(path, name, buf, len, flags);
}

static int op_setxattr_f_a(void) { return set_xattr(P("f"), "user.a", 100, 20, XATTR_CREATE); }
static int op_setxattr_f_a_longer(void)
{
	return set_xattr(P("f"), "user.a", 300, 21, XATTR_REPLACE);
}
static int op_removexattr_f_a(void) { return removexattr(P("f"), "user.a"); }
static int op_removexattr_f_b(void) { return removexattr(P("f"), "user.b"); }
static int op_setxattr_d(void) { return set_xattr(P("d"), "trusted.t", 40, 22, 0); }

static int setup_f_empty(void) { return put("f", 0, 0); }
static int setup_f_1k(void) { return put("f", 1 * KiB, 8); }
static int setup_f_4k(void) { return put("f", 4 * KiB, 9); }
static int setup_f_5k(void) { return put("f", 5 * KiB, 10); }
static int setup_f_6k(void) { return put("f", 6 * KiB, 11); }
static int setup_f_8k(void) { return put("f", 8 * KiB, 12); }
static int setup_f_10k(void) { return put("f", 10 * KiB, 13); }
static int setup_f_12k(void) { return put("f", 12 * KiB, 2); }
static int setup_f_16_pages(void) { return put("f", 16 * PG, 14); }
static int setup_f_g_links(void) { return put("f", 6 * KiB, 15) ?: link(P("f"), P("g")); }
static int setup_d(void) { return mkdir(P("d"), 0755); }
static int setup_b(void) { return mkdir(P("b"), 0755); }
static int setup_f_and_d(void) { return put("f", 6 * KiB, 16) ?: mkdir(P("d"), 0755); }
static int setup_f_and_g(void) { return put("f", 6 * KiB, 4) ?: put("g", 9 * KiB, 5); }
static int setup_a_x_b(void)
{
	return mkdir(P("a"), 0755) ?: put("a/x", 5 * KiB, 17) ?: mkdir(P("b"), 0755);
}
/* 3 MiB (order 2): data in pages 0-3 and in two pages past 2 MiB. */
static int setup_f_3m(void)
{
	int fd, err;

	if (put("f", 16 * KiB, 18))
		return -1;
	fd = open(P("f"), O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	err = ftruncate(fd, 3 * MiB) ?: pwrite_pattern(fd, 2 * MiB + PG, 8 * KiB, 19, false);
	close(fd);
	return err;
}
/* 8 KiB of data and a reservation past it up to 3 MiB (order 2). */
static int setup_f_8k_reserved_3m(void)
{
	return put("f", 8 * KiB, 23) ?: f_fallocate(FALLOC_FL_KEEP_SIZE, 0, 3 * MiB);
}
/* The same, then the size grown to 4 MiB over the reserved range. */
static int setup_f_4m_over_reservation(void)
{
	return setup_f_8k_reserved_3m() ?: truncate(P("f"), 4 * MiB);
}
/* 3 pages, none populated. */
static int setup_f_xattrs(void)
{
	return put("f", 1 * KiB, 23) ?: set_xattr(P("f"), "user.a", 50, 24, 0) ?:
	       set_xattr(P("f"), "user.b", 60, 25, 0);
}
static int setup_f_a_and_d(void)
{
	return put("f", 1 * KiB, 26) ?: set_xattr(P("f"), "user.a", 70, 27, 0) ?:
	       mkdir(P("d"), 0755);
}

static int setup_f_3_holes(void) { return put("f", 0, 0) ?: truncate(P("f"), 3 * PG); }

/* ---- 2 MiB leaves (format 3) ---- */

static int huge_mode(const char *name, __u64 mode)
{
	struct morsel_huge h = { .mode = mode };
	int fd = open(P(name), O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = ioctl(fd, MORSEL_IOC_SET_HUGE, &h);
	close(fd);
	return err;
}

/*
 * @name: 4 MiB (order 2) of pattern bytes, written with the file's mode
 * @mode: two 2 MiB leaves (always), or 1024 4 KiB pages (never).
 */
static int put_4m(const char *name, __u64 mode, int seed)
{
	int fd;

	if (put(name, 0, 0) || truncate(P(name), 4 * MiB) || huge_mode(name, mode))
		return -1;
	fd = open(P(name), O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pwrite_pattern(fd, 0, 4 * MiB, seed, false)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

static int setup_f_2_leaves(void) { return put_4m("f", MORSEL_HUGE_ALWAYS, 30); }
static int setup_f_1024_pages(void) { return put_4m("f", MORSEL_HUGE_NEVER, 31); }
static int setup_f_4m_holes(void) { return put("f", 0, 0) ?: truncate(P("f"), 4 * MiB); }
/*
 * MORSEL_IOC_SEAL, the publish of a shared pool (issue 25): the holes
 * populated, then the seal, one store after every store of the contents.
 */
static int op_seal_f(void)
{
	int fd = open(P("f"), O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -1;
	err = ioctl(fd, MORSEL_IOC_SEAL);
	close(fd);
	return err;
}

static int setup_f_4m_holes_always(void)
{
	return setup_f_4m_holes() ?: huge_mode("f", MORSEL_HUGE_ALWAYS);
}

static int op_huge_mode_f_always(void) { return huge_mode("f", MORSEL_HUGE_ALWAYS); }
/* A hole becomes a 2 MiB leaf of zeros: its run zeroed, then one store. */
static int op_populate_f_2m_leaf(void)
{
	struct morsel_range r = { .offset = 2 * MiB, .length = 2 * MiB,
				  .flags = MORSEL_POPULATE_HUGE };

	return f_ioctl(MORSEL_IOC_POPULATE, &r);
}
static int op_punch_f_inside_leaf(void)
{
	return f_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 16 * PG, 8 * PG);
}
static int op_punch_f_whole_leaf(void)
{
	return f_fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * MiB, 2 * MiB);
}
static int op_truncate_f_3m_5k(void) { return truncate(P("f"), 3 * MiB + 5 * KiB); }
static int op_truncate_f_2m(void) { return truncate(P("f"), 2 * MiB); }
static int op_collapse_f_first_2m(void)
{
	struct morsel_range r = { .offset = 0, .length = 2 * MiB };

	return f_ioctl(MORSEL_IOC_COLLAPSE, &r);
}

/* ---- the run of one workload ---------------------------------------------- */

/* A crash point of the log: a store or bytes written. */
struct rec {
	__u64 off;
	__u32 len, kind;
	const __u8 *data;
	int op;			/* the operation (1..) that made it */
};

struct run {
	const char *name;
	const char *dev;
	__u64 size;		/* bytes of the device */
	__u8 *pre, *post;
	__u8 *log;
	size_t log_len;
	struct rec *recs;	/* the crash points, in log order */
	int nrecs;
	int nops;
	int mark_at[MAX_OPS + 1];	/* records before mark j (mark_at[0] = 0) */
	char *s[MAX_OPS + 1];		/* the dumps of S_j */
	__u64 phys;		/* the device's address for recovery (0: keep) */
	int memfd;		/* the image being built: PRE plus a prefix */
	__u8 *cur;		/* its shared mapping */
	int applied;		/* records applied to it */
};

static long *total_states;	/* shared by every test's process */
static pid_t main_pid;

static void __attribute__((constructor)) pm_crash_init(void)
{
	void *p = mmap(NULL, sizeof(*total_states), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	total_states = p == MAP_FAILED ? NULL : p;
	main_pid = getpid();
}

static void __attribute__((destructor)) pm_crash_exit(void)
{
	if (total_states && getpid() == main_pid) {
		printf("# crash states checked: %ld\n", *total_states);
		fflush(stdout);
	}
}

static int log_cmd(const char *cmd)
{
	int fd = open(PM_LOG, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, cmd, strlen(cmd));
	n = n == (ssize_t)strlen(cmd) ? 0 : n < 0 ? -errno : -EIO;
	close(fd);
	return n;
}

static int read_all(int fd, __u8 **out, size_t *len)
{
	size_t cap = 64 * KiB, n = 0;
	__u8 *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t got;

		if (n == cap) {
			__u8 *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		got = read(fd, buf + n, cap - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return -errno;
		}
		if (!got)
			break;
		n += got;
	}
	*out = buf;
	*len = n;
	return 0;
}

/* The whole device through its block device; 0 or -errno. */
static int read_dev(const char *dev, __u8 **img, __u64 *size)
{
	int fd = open(dev, O_RDONLY | O_CLOEXEC), err = 0;
	__u64 bytes, done = 0;
	__u8 *buf;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, BLKGETSIZE64, &bytes) || ioctl(fd, BLKFLSBUF, 0)) {
		err = -errno;
		close(fd);
		return err;
	}
	buf = malloc(bytes);
	while (buf && done < bytes) {
		ssize_t n = pread(fd, buf + done, bytes - done, done);

		if (n <= 0) {
			err = n ? -errno : -EIO;
			break;
		}
		done += n;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (err) {
		free(buf);
		return err;
	}
	*img = buf;
	*size = bytes;
	return 0;
}

static int do_mount(const char *dev)
{
	char opts[256];

	snprintf(opts, sizeof(opts), "pmem=%s", dev);
	return mount("none", MNT, "morselfs", 0, opts);
}

static int mkfs(const char *dev)
{
	struct mpm_fs fs;
	int err = pm_open(dev, true, &fs);

	if (err)
		return err;
	pm_mkfs(&fs, 01777, 0, 0);
	return pm_close(&fs);
}

/* Steps 1-3: the image before the operations, the log, the image after. */
static void parse_log(struct __test_metadata *_metadata, struct run *r);

static void record(struct __test_metadata *_metadata, const struct workload *w,
		   struct run *r)
{
	int i;

	r->dev = getenv("MORSEL_PMEM");
	r->nops = w->nops;
	ASSERT_EQ(0, mkfs(r->dev)) TH_LOG("mkfs %s", r->dev);
	ASSERT_EQ(0, do_mount(r->dev)) TH_LOG("mount: %s", strerror(errno));
	ASSERT_EQ(0, umount(MNT)) TH_LOG("umount: %s", strerror(errno));
	ASSERT_EQ(0, do_mount(r->dev)) TH_LOG("mount: %s", strerror(errno));
	if (w->setup)
		ASSERT_EQ(0, w->setup()) TH_LOG("setup: %s", strerror(errno));
	ASSERT_EQ(0, umount(MNT)) TH_LOG("umount: %s", strerror(errno));
	ASSERT_EQ(0, do_mount(r->dev)) TH_LOG("mount: %s", strerror(errno));
	ASSERT_EQ(0, read_dev(r->dev, &r->pre, &r->size));

	ASSERT_EQ(0, log_cmd(LOG_START));
	for (i = 0; i < w->nops; i++) {
		ASSERT_EQ(0, w->ops[i]()) TH_LOG("op %d: %s", i + 1, strerror(errno));
		ASSERT_EQ(0, log_cmd("mark"));
	}
	ASSERT_EQ(0, log_cmd("stop")) TH_LOG("the log overflowed");
	ASSERT_EQ(0, umount(MNT)) TH_LOG("umount: %s", strerror(errno));
	parse_log(_metadata, r);
}

/*
 * Read the log and the device after the operations (unmounted): the crash
 * points, and which operation made each.
 */
static void parse_log(struct __test_metadata *_metadata, struct run *r)
{
	struct mpm_log_rec lr;
	size_t pos = 0;
	int op = 1, marks = 0, err;

	{
		int fd = open(PM_LOG, O_RDONLY | O_CLOEXEC);

		ASSERT_LE(0, fd);
		err = read_all(fd, &r->log, &r->log_len);
		close(fd);
		ASSERT_EQ(0, err);
	}
	{
		__u64 size;

		ASSERT_EQ(0, read_dev(r->dev, &r->post, &size));
		ASSERT_EQ(r->size, size);
	}

	r->recs = calloc(r->log_len / sizeof(lr) + 1, sizeof(*r->recs));
	ASSERT_NE(NULL, r->recs);
	while (pos < r->log_len) {
		ASSERT_LE(pos + sizeof(lr), r->log_len);
		memcpy(&lr, r->log + pos, sizeof(lr));
		pos += sizeof(lr);
		ASSERT_LE(pos + lr.len, r->log_len);
		if (lr.kind == MPM_LOG_MARK) {
			ASSERT_EQ(0, lr.len);
			ASSERT_LT(marks, MAX_OPS);
			r->mark_at[++marks] = r->nrecs;
			op++;
			continue;
		}
		ASSERT_TRUE(lr.kind == MPM_LOG_STORE || lr.kind == MPM_LOG_BYTES)
			TH_LOG("record kind %u", lr.kind);
		if (lr.kind == MPM_LOG_STORE) {
			ASSERT_EQ(8, lr.len);
			ASSERT_EQ(0, lr.offset % 8);
		}
		ASSERT_LE(lr.offset + lr.len, r->size) TH_LOG("record at %#llx, %u bytes",
			(unsigned long long)lr.offset, lr.len);
		r->recs[r->nrecs++] = (struct rec){ lr.offset, lr.len, lr.kind,
						   r->log + pos, op };
		pos += lr.len;
	}
	ASSERT_EQ(r->nops, marks);
	ASSERT_EQ(r->mark_at[marks], r->nrecs)
		TH_LOG("%d records after the last mark", r->nrecs - r->mark_at[marks]);
}

/* ---- images --------------------------------------------------------------- */

static void apply(__u8 *img, const struct rec *rc)
{
	memcpy(img + rc->off, rc->data, rc->len);
}

/* Reset the memfd image to PRE. */
static void cur_reset(struct run *r)
{
	memcpy(r->cur, r->pre, r->size);
	r->applied = 0;
}

/* Apply records until @k are. */
static void cur_advance(struct run *r, int k)
{
	while (r->applied < k)
		apply(r->cur, &r->recs[r->applied++]);
}

/* ---- the dump ------------------------------------------------------------- */

struct strv {
	char **v;
	size_t n, cap;
};

static void strv_push(struct strv *s, char *str)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 32;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v)
			abort();
	}
	s->v[s->n++] = str;
}

static void strv_free(struct strv *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

/* @len bytes of @p, printable and without blanks. */
static char *escape(const char *p, size_t len)
{
	char *s = malloc(4 * len + 1), *o = s;
	size_t i;

	if (!s)
		abort();
	for (i = 0; i < len; i++) {
		unsigned char c = p[i];

		if (c > ' ' && c < 0x7f && c != '\\')
			*o++ = c;
		else
			o += sprintf(o, "\\x%02x", c);
	}
	*o = 0;
	return s;
}

/* Failed pages' marks (MPM_POISON) in the tree under the level-@level entry @e. */
static __u64 count_failed(struct mpm_fs *fs, __u64 e, int level)
{
	__u64 page = mpm_entry_page(fs, e), n = 0, *t;
	int i;

	if (!level)
		return e == MPM_POISON;
	if (!e || !page || (level == 1 && (e & MPM_E_HUGE)))
		return 0;
	t = (__u64 *)(fs->dev + page * PG);
	for (i = 0; i < MPM_ENTRIES; i++)
		n += count_failed(fs, t[i], level - 1);
	return n;
}

/* 2 MiB leaves in the tree under the level-@level entry @e. */
static __u64 count_huge(struct mpm_fs *fs, __u64 e, int level)
{
	__u64 page = mpm_entry_page(fs, e), n = 0, *t;
	int i;

	if (!e || !page || !level)
		return 0;
	if (level == 1)
		return !!(e & MPM_E_HUGE);
	t = (__u64 *)(fs->dev + page * PG);
	for (i = 0; i < MPM_ENTRIES; i++)
		n += count_huge(fs, t[i], level - 1);
	return n;
}

/* Data pages of the tree under the level-@level entry @e. */
static __u64 count_pages(struct mpm_fs *fs, __u64 e, int level)
{
	__u64 page = mpm_entry_page(fs, e), n = 0, *t;
	int i;

	if (!e || !page)
		return 0;
	if (!level)
		return 1;
	if (level == 1 && (e & MPM_E_HUGE))
		return MPM_HUGE_PAGES;
	t = (__u64 *)(fs->dev + page * PG);
	for (i = 0; i < MPM_ENTRIES; i++)
		n += count_pages(fs, t[i], level - 1);
	return n;
}


#define FNV_OFFSET	0xcbf29ce484222325ULL
#define FNV_PRIME	0x100000001b3ULL

/* FNV-1a of [0, size), holes as zeros (a zero byte only multiplies). */
static __u64 content_hash(struct mpm_fs *fs, struct mpm_inode *in, bool *tail_clean)
{
	__u64 h = FNV_OFFSET, zero_page = 1, p, i, npages = (in->size + PG - 1) / PG;

	for (i = 0; i < PG; i++)
		zero_page *= FNV_PRIME;
	*tail_clean = true;
	for (p = 0; p < npages; p++) {
		const __u8 *d = mpm_tree_page(fs, in->root, p);
		__u64 n = p + 1 < npages || !(in->size % PG) ? PG : in->size % PG;

		if (!d) {
			if (n == PG) {
				h *= zero_page;
			} else {
				for (i = 0; i < n; i++)
					h *= FNV_PRIME;
			}
			continue;
		}
		for (i = 0; i < n; i++) {
			h ^= d[i];
			h *= FNV_PRIME;
		}
		for (; i < PG; i++)	/* past EOF in the last page */
			if (d[i])
				*tail_clean = false;
	}
	return h;
}

/* " xattrs=NAME:LEN:HASH,..." in the page's order, or "". */
static char *dump_xattrs(struct mpm_fs *fs, struct mpm_inode *in)
{
	const struct mpm_xattr *x;
	char *out = strdup(""), *o, *nm;
	__u64 h, i;

	for (x = mpm_xattr_next(fs, in, NULL); x; x = mpm_xattr_next(fs, in, x)) {
		const __u8 *v = mpm_xattr_value(x);

		for (h = FNV_OFFSET, i = 0; i < x->value_len; i++)
			h = (h ^ v[i]) * FNV_PRIME;
		nm = escape(mpm_xattr_name(x), x->name_len);
		o = xasprintf("%s%s%s:%u:%016llx", out, *out ? "," : " xattrs=", nm,
			      x->value_len, (unsigned long long)h);
		free(nm);
		free(out);
		out = o;
	}
	return out;
}

struct name {
	char *path;
	__u64 ino;
};

/*
 * The canonical description of a recovered file system: one line per
 * path, sorted, joined by newlines.  @fs has been walked (fs->base set).
 */
static char *dump(struct mpm_fs *fs)
{
	struct name *names = NULL;
	size_t n = 0, cap = 0, q, i, len = 1;
	__u64 max_ino = 0, *nlinks;
	struct strv lines = { 0 };
	char *out, *o;

#define ADD_NAME(p, i) do {						\
		if (n == cap) {						\
			cap = cap ? 2 * cap : 32;			\
			names = realloc(names, cap * sizeof(*names));	\
			if (!names)					\
				abort();				\
		}							\
		names[n++] = (struct name){ (p), (i) };		\
	} while (0)

	ADD_NAME(xasprintf("/"), MPM_ROOT_INO);
	/* Breadth first; names[q] is the next directory to list if it is one. */
	for (q = 0; q < n; q++) {
		struct mpm_inode *d = mpm_inode(fs, names[q].ino);
		__u64 p;
		int s;

		if (!d || (d->mode & S_IFMT) != S_IFDIR)
			continue;
		for (i = 0; i < q; i++)		/* listed before: a cycle */
			if (names[i].ino == names[q].ino)
				break;
		if (i < q)
			continue;
		for (p = 0; p < d->size / PG; p++) {
			struct mpm_dirent *de = mpm_tree_page(fs, d->root, p);

			for (s = 0; de && s < MPM_DIRENTS_PER_PAGE; s++, de++) {
				char *nm;

				if (!de->word)
					continue;
				nm = escape(de->name, mpm_de_len(de->word));
				ADD_NAME(xasprintf("%s%s%s", names[q].path,
						   q ? "/" : "", nm),
					 mpm_de_ino(de->word));
				free(nm);
			}
		}
	}
#undef ADD_NAME
	for (i = 0; i < n; i++)
		if (names[i].ino > max_ino)
			max_ino = names[i].ino;
	nlinks = calloc(max_ino + 1, sizeof(*nlinks));
	if (!nlinks)
		abort();
	for (i = 1; i < n; i++)
		nlinks[names[i].ino]++;

	for (i = 0; i < n; i++) {
		struct mpm_inode *in = mpm_inode(fs, names[i].ino);
		char *line, *extra = NULL, *xattrs;
		__u64 mode;

		if (!in || !in->mode) {
			strv_push(&lines, xasprintf("%s FREE-INODE", names[i].path));
			continue;
		}
		mode = in->mode;
		if ((mode & S_IFMT) == S_IFREG) {
			unsigned int order = in->root ? mpm_root_order(in->root) :
				mpm_order_for_size(in->size) > in->min_order ?
				mpm_order_for_size(in->size) : (unsigned int)in->min_order;
			bool tail_clean;
			__u64 h = content_hash(fs, in, &tail_clean);
			__u64 failed = count_failed(fs, in->root & ~MPM_ROOT_ORDER_MASK,
						    mpm_root_order(in->root));
			__u64 huge = count_huge(fs, in->root & ~MPM_ROOT_ORDER_MASK,
						mpm_root_order(in->root));
			char fails[64] = "", resv[48] = "";

			if (failed && huge)
				snprintf(fails, sizeof(fails), " failed=%llu huge=%llu",
					 (unsigned long long)failed, (unsigned long long)huge);
			else if (huge)
				snprintf(fails, sizeof(fails), " huge=%llu",
					 (unsigned long long)huge);
			else if (failed)
				snprintf(fails, sizeof(fails), " failed=%llu",
					 (unsigned long long)failed);
			if (in->resv)
				snprintf(resv, sizeof(resv), " resv=%llu-%llu",
					 (unsigned long long)mpm_resv_start(in->resv),
					 (unsigned long long)mpm_resv_end(in->resv));
			extra = xasprintf(" size=%llu order=%u pages=%llu%s%s hash=%016llx%s",
					  (unsigned long long)in->size, order,
					  (unsigned long long)count_pages(fs,
						in->root & ~MPM_ROOT_ORDER_MASK,
						mpm_root_order(in->root)),
					  fails, resv, (unsigned long long)h,
					  tail_clean ? "" : " STALE-BYTES-PAST-EOF");
		} else if ((mode & S_IFMT) == S_IFLNK) {
			const char *t = in->size < PG ? mpm_tree_page(fs, in->root, 0) : NULL;
			char *target = t ? escape(t, in->size) : xasprintf("?");

			extra = xasprintf(" size=%llu target=%s",
					  (unsigned long long)in->size, target);
			free(target);
		}
		xattrs = dump_xattrs(fs, in);
		line = xasprintf("%s mode=%llo owner=%#llx flags=%#llx names=%llu min_order=%llu bound=%#llx%s%s",
				 names[i].path, (unsigned long long)mode,
				 (unsigned long long)in->owner, (unsigned long long)in->flags,
				 (unsigned long long)nlinks[names[i].ino],
				 (unsigned long long)in->min_order,
				 (unsigned long long)in->bound, extra ? extra : "", xattrs);
		free(extra);
		free(xattrs);
		strv_push(&lines, line);
	}
	for (i = 0; i < n; i++)
		free(names[i].path);
	free(names);
	free(nlinks);

	qsort(lines.v, lines.n, sizeof(*lines.v), cmp_str);
	for (i = 0; i < lines.n; i++)
		len += strlen(lines.v[i]) + 1;
	out = o = malloc(len);
	if (!out)
		abort();
	*o = 0;
	for (i = 0; i < lines.n; i++)
		o += sprintf(o, "%s\n", lines.v[i]);
	strv_free(&lines);
	return out;
}

/* Print the lines only one of two sorted dumps has. */
static void print_diff(const char *label, const char *want, const char *got)
{
	struct strv a = { 0 }, b = { 0 };
	const char *p;
	size_t i = 0, j = 0;

	for (p = want; *p; p = strchr(p, '\n') + 1)
		strv_push(&a, strndup(p, strchr(p, '\n') - p));
	for (p = got; *p; p = strchr(p, '\n') + 1)
		strv_push(&b, strndup(p, strchr(p, '\n') - p));
	fprintf(stderr, "#   %s:\n", label);
	while (i < a.n || j < b.n) {
		int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i], b.v[j]);

		if (c < 0)
			fprintf(stderr, "#     - %s\n", a.v[i++]);
		else if (c > 0)
			fprintf(stderr, "#     + %s\n", b.v[j++]);
		else
			i++, j++;
	}
	strv_free(&a);
	strv_free(&b);
}

static void print_dump(const char *label, const char *d)
{
	const char *p;

	fprintf(stderr, "#   %s:\n", label);
	for (p = d; *p; p = strchr(p, '\n') + 1)
		fprintf(stderr, "#     %.*s\n", (int)(strchr(p, '\n') - p), p);
}

/* ---- recovery ------------------------------------------------------------- */

static bool leaves_work(const struct mpm_stats *st)
{
	return st->errors || st->renames || st->punches || st->orphans ||
	       st->leaked_pages || st->relocated || st->stores || st->poisonings;
}

static void stats_str(char *buf, size_t len, const struct mpm_stats *st)
{
	snprintf(buf, len, "%llu errors, %llu renames, %llu punches, %llu orphans, %llu leaked pages, %llu relocated, %llu stores",
		 (unsigned long long)st->errors, (unsigned long long)st->renames,
		 (unsigned long long)st->punches, (unsigned long long)st->orphans,
		 (unsigned long long)st->leaked_pages, (unsigned long long)st->relocated,
		 (unsigned long long)st->stores);
}

/*
 * Recover a private copy of the memfd image and dump it.  @clean: the
 * image must need no recovery at all (a state at a mark).  @loud: the
 * walks report to stderr, verbosely.  Returns the dump, or NULL with the
 * reason in @why.
 */
static char *recover(struct run *r, bool clean, bool loud, char *why, size_t whylen)
{
	__u8 *map = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, r->memfd, 0);
	struct mpm_fs fs;
	char st[256], *out = NULL;
	int err;

	if (map == MAP_FAILED) {
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		return NULL;
	}
	pm_env.out = loud ? stderr : NULL;
	pm_env.verbose = loud;
	pm_env.crash_at = 0;
	memset(&fs, 0, sizeof(fs));
	fs.dev = map;
	fs.nr_pages = r->size / PG;
	fs.phys = r->phys;
	if (clean) {
		if (loud)
			fprintf(stderr, "#   walk without repair:\n");
		err = mpm_walk(&fs);
		mpm_fs_release(&fs);
		stats_str(st, sizeof(st), &fs.st);
		if (err || leaves_work(&fs.st)) {
			snprintf(why, whylen, "a state at a mark needs recovery: walk %d, %s", err, st);
			goto out;
		}
	}
	if (loud)
		fprintf(stderr, "#   walk with repair:\n");
	fs.repair = true;
	fs.nr_pages = r->size / PG;
	err = mpm_walk(&fs);
	mpm_fs_release(&fs);
	stats_str(st, sizeof(st), &fs.st);
	if (err || fs.st.errors) {
		snprintf(why, whylen, "recovery: walk %d, %s", err, st);
		goto out;
	}
	if (r->phys && mpm_super(&fs)->base != r->phys) {
		snprintf(why, whylen, "recovery left the entries for %#llx, the device is at %#llx",
			 (unsigned long long)mpm_super(&fs)->base, (unsigned long long)r->phys);
		goto out;
	}
	if (loud)
		fprintf(stderr, "#   recovery made %s\n#   walk again without repair:\n", st);
	fs.repair = false;
	err = mpm_walk(&fs);
	stats_str(st, sizeof(st), &fs.st);
	if (err || leaves_work(&fs.st)) {
		snprintf(why, whylen, "after recovery: walk %d, %s", err, st);
		mpm_fs_release(&fs);
		goto out;
	}
	if (loud)
		fprintf(stderr, "#   it finds %s\n", st);
	out = dump(&fs);
	mpm_fs_release(&fs);
out:
	pm_env.out = NULL;
	pm_env.verbose = false;
	munmap(map, r->size);
	return out;
}

/* ---- describing offsets, for failure reports ------------------------------ */

static const char * const inode_field[16] = { "mode", "owner", "size", "root",
	"min_order", "bound", "atime", "mtime", "ctime", "btime", "rdev",
	"punch_end", "punch_start", "xattr", "flags", "reserved" };

/* Which level-@level subtree under @e holds device page @target? */
static bool find_page(struct mpm_fs *fs, __u64 e, int level, __u64 pgoff,
		      __u64 target, int *lvl, __u64 *at)
{
	__u64 page = mpm_entry_page(fs, e), *t;
	int i;

	if (!e || !page)
		return false;
	if (page == target) {
		*lvl = level;
		*at = pgoff;
		return true;
	}
	if (!level || (level == 2 && (e & MPM_E_HUGE)))
		return false;
	t = (__u64 *)(fs->dev + page * PG);
	for (i = 0; i < MPM_ENTRIES; i++)
		if (find_page(fs, t[i], level - 1, pgoff + ((__u64)i << (9 * (level - 1))),
			      target, lvl, at))
			return true;
	return false;
}

/* What device offset @off is in image @img (walked without repair). */
static bool describe_in(struct run *r, const __u8 *img, __u64 off, char *buf, size_t len)
{
	struct mpm_fs fs;
	__u64 page = off / PG, ino, at;
	bool found = false;
	int lvl;

	memset(&fs, 0, sizeof(fs));
	fs.dev = (__u8 *)img;
	fs.nr_pages = r->size / PG;
	pm_env.out = NULL;
	if (mpm_walk(&fs) || page >= fs.nr_pages) {
		mpm_fs_release(&fs);
		return false;
	}
	if (!page) {
		snprintf(buf, len, "super block word %llu", (unsigned long long)off / 8);
		found = true;
	}
	for (ino = 1; !found && ino <= fs.max_ino; ino++) {
		struct mpm_inode *in = mpm_inode(&fs, ino);
		__u64 o;

		if (!in)
			continue;
		o = (__u8 *)in - fs.dev;
		if (off >= o && off < o + MPM_INODE_SIZE) {
			snprintf(buf, len, "inode %llu .%s", (unsigned long long)ino,
				 inode_field[(off - o) / 8]);
			found = true;
		} else if (in->mode && find_page(&fs, in->root & ~MPM_ROOT_ORDER_MASK,
					       mpm_root_order(in->root), 0, page, &lvl, &at)) {
			__u64 slot = off % PG / MPM_DIRENT_SIZE, w = off % PG % MPM_DIRENT_SIZE;

			if (lvl)
				snprintf(buf, len, "inode %llu: level-%d table for page %llu",
					 (unsigned long long)ino, lvl, (unsigned long long)at);
			else if ((in->mode & S_IFMT) == S_IFDIR && slot < MPM_DIRENTS_PER_PAGE)
				snprintf(buf, len, "directory %llu: entry %llu.%llu %s",
					 (unsigned long long)ino, (unsigned long long)at,
					 (unsigned long long)slot,
					 w == 0 ? ".word" : w == 8 ? ".replaces" :
					 w == 16 ? ".displaces" : ".name");
			else
				snprintf(buf, len, "inode %llu: data page %llu +%llu",
					 (unsigned long long)ino, (unsigned long long)at,
					 (unsigned long long)(off % PG));
			found = true;
		}
	}
	if (!found && find_page(&fs, mpm_super(&fs)->itable & ~MPM_ROOT_ORDER_MASK,
				MPM_ITABLE_ORDER, 0, page, &lvl, &at)) {
		snprintf(buf, len, "inode table: level-%d page", lvl);
		found = true;
	}
	mpm_fs_release(&fs);
	return found;
}

static void describe(struct run *r, __u64 off, char *buf, size_t len)
{
	char a[128];

	if (describe_in(r, r->post, off, a, sizeof(a)))
		snprintf(buf, len, "%s (after)", a);
	else if (describe_in(r, r->pre, off, a, sizeof(a)))
		snprintf(buf, len, "%s (before)", a);
	else
		snprintf(buf, len, "page %llu, free before and after",
			 (unsigned long long)off / PG);
}

static void print_rec(struct run *r, int k, const char *prefix)
{
	const struct rec *rc = &r->recs[k];
	char what[160];

	describe(r, rc->off, what, sizeof(what));
	if (rc->kind == MPM_LOG_STORE) {
		__u64 v;

		memcpy(&v, rc->data, 8);
		fprintf(stderr, "%srecord %d (op %d): STORE %#llx = %#llx  [%s]\n", prefix,
			k + 1, rc->op, (unsigned long long)rc->off, (unsigned long long)v, what);
	} else {
		__u32 i, nz = 0;

		for (i = 0; i < rc->len; i++)
			nz += rc->data[i] != 0;
		fprintf(stderr, "%srecord %d (op %d): BYTES %#llx, %u bytes (%u non-zero)  [%s]\n",
			prefix, k + 1, rc->op, (unsigned long long)rc->off, rc->len, nz, what);
	}
}

/* ---- the checks ----------------------------------------------------------- */

/* The field " NAME..." (@name is " NAME=") in the line @line of @n bytes. */
static int field_at(const char *line, int n, const char *name, int *len)
{
	const char *f = memmem(line, n, name, strlen(name));

	*len = 0;
	if (!f)
		return -1;
	*len = 1;
	while (f + *len < line + n && f[*len] != ' ')
		(*len)++;
	return f - line;
}

/*
 * @line (@n bytes) with the field @name of @old (@on bytes) in place of its
 * own, to @f: where @line has none, @old's goes after @line's field @after.
 */
static void put_field(FILE *f, const char *line, int n, const char *old, int on,
		      const char *name, const char *after)
{
	int at, len, oat = -1, olen = 0;

	if (old)
		oat = field_at(old, on, name, &olen);
	at = field_at(line, n, name, &len);
	if (at < 0) {
		at = field_at(line, n, after, &len);
		at = at < 0 ? n : at + len;
		len = 0;
	}
	fwrite(line, 1, at, f);
	if (oat >= 0)
		fwrite(old + oat, 1, olen, f);
	fwrite(line + at + len, 1, n - at - len, f);
}

/*
 * @after with each file's reservation taken from the line of @before for
 * the same path (none if @before has no such line), and with it the order
 * it keeps.  A shrinking truncate stores the size before it cuts the
 * reservation (module/size.c): a crash between them leaves S_op with
 * S_{op-1}'s reservations, which keeps every promise fallocate made
 * (docs/persistence.md, "Reserve").
 */
static char *with_old_resv(const char *after, const char *before)
{
	char *out = NULL, *mid = NULL;
	size_t outlen = 0, midlen = 0;
	FILE *f = open_memstream(&out, &outlen), *g = open_memstream(&mid, &midlen);
	const char *a, *b, *old;
	int an, bn, on;

	if (!f || !g)
		abort();
	for (a = after; *a; a += an + (a[an] == '\n')) {
		int plen = strcspn(a, " \n");

		an = strchrnul(a, '\n') - a;
		old = NULL;
		on = 0;
		for (b = before; *b; b += bn + (b[bn] == '\n')) {
			bn = strchrnul(b, '\n') - b;
			if ((int)strcspn(b, " \n") == plen && !strncmp(a, b, plen)) {
				old = b;
				on = bn;
				break;
			}
		}
		rewind(g);
		fflush(g);
		put_field(g, a, an, old, on, " resv=", " pages=");
		fflush(g);
		if (old && field_at(old, on, " resv=", &bn) >= 0)
			put_field(f, mid, ftell(g), old, on, " order=", " order=");
		else
			fwrite(mid, 1, ftell(g), f);
		if (a[an] == '\n')
			fputc('\n', f);
	}
	fclose(g);
	free(mid);
	fclose(f);
	return out;
}

/*
 * @d without its " huge=N" fields: a split of a 2 MiB leaf changes no
 * byte and no page of a file, only how many leaves map them.
 */
static char *without(const char *d, const char *key)
{
	char *out = strdup(d), *o = out;
	const char *h;

	if (!out)
		abort();
	while ((h = strstr(d, key))) {
		memcpy(o, d, h - d);
		o += h - d;
		d = h + strlen(key);
		d += strspn(d, "0123456789");
	}
	strcpy(o, d);
	return out;
}

static char *without_huge(const char *d)
{
	return without(d, " huge=");
}

/*
 * Judge the memfd image (a crash after @k records): recovered, it must
 * dump as S_{op-1} or S_op, or as S_{op-1} with leaves split (an
 * operation may split a leaf before its commit: a memory error's).  Returns 0, or -1 with the reason in @why and
 * the dump (if any) in *@got.
 */
static int judge(struct run *r, int k, char **got, char *why, size_t whylen)
{
	int op = k ? r->recs[k - 1].op : 0;
	char *d = recover(r, false, false, why, whylen);

	*got = d;
	if (!d)
		return -1;
	if (!strcmp(d, r->s[op]) || (op && !strcmp(d, r->s[op - 1])))
		return 0;
	if (op) {
		char *alt = with_old_resv(r->s[op], r->s[op - 1]);
		char *split = without_huge(d), *before = without_huge(r->s[op - 1]);
		char *filled = without(d, " pages="), *holes = without(r->s[op - 1], " pages=");
		bool same = !strcmp(d, alt) || !strcmp(split, before) ||
			    !strcmp(filled, holes);

		free(alt);
		free(split);
		free(before);
		free(filled);
		free(holes);
		if (same)
			return 0;
	}
	snprintf(why, whylen, "the recovered state is neither S_%d nor S_%d",
		 op ? op - 1 : 0, op);
	return -1;
}

static void report_failure(struct run *r, int k, const char *why, const char *got,
			   bool full)
{
	int op = k ? r->recs[k - 1].op : 0, i;

	fprintf(stderr, "# FAIL %s: crash after %d of %d records (op %d): %s\n",
		r->name, k, r->nrecs, op, why);
	if (!full) {
		if (got)
			print_diff("vs S_after", r->s[op], got);
		return;
	}
	for (i = k - 3 < 0 ? 0 : k - 3; i < k + 2 && i < r->nrecs; i++)
		print_rec(r, i, i == k - 1 ? "#  >" : "#   ");
	if (got) {
		if (op)
			print_diff("vs S_before (- S_before only, + crash state only)",
				   r->s[op - 1], got);
		print_diff("vs S_after (- S_after only, + crash state only)", r->s[op], got);
	}
	{
		char w[256];
		char *d = recover(r, false, true, w, sizeof(w));

		free(d);
	}
}

/* Step 4 and 5: completeness, and the states at the marks. */
/* The image to build crash states in, and PRE + every record == POST. */
static void check_complete(struct __test_metadata *_metadata, struct run *r)
{
	__u64 i;

	r->memfd = memfd_create("pm-crash-image", MFD_CLOEXEC);
	ASSERT_LE(0, r->memfd);
	ASSERT_EQ(0, ftruncate(r->memfd, r->size));
	r->cur = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->memfd, 0);
	ASSERT_NE(MAP_FAILED, r->cur);

	cur_reset(r);
	cur_advance(r, r->nrecs);
	/* memcmp first: a loop over every byte took 40% of the suite (TCG). */
	i = r->size;
	if (memcmp(r->cur, r->post, r->size))
		for (i = 0; r->cur[i] == r->post[i]; i++)
			;
	if (i < r->size) {
		char what[160];

		describe(r, i, what, sizeof(what));
		fprintf(stderr, "# FAIL %s: PRE + every record differs from the device at %#llx [%s]: %#x logged, %#x on the device\n",
			r->name, (unsigned long long)i, what, r->cur[i], r->post[i]);
	}
	ASSERT_EQ(r->size, i) TH_LOG("a store escaped the log: first difference at %#llx",
				     (unsigned long long)i);
}

static void states(struct __test_metadata *_metadata, struct run *r)
{
	char why[512];
	int j;

	check_complete(_metadata, r);
	cur_reset(r);
	for (j = 0; j <= r->nops; j++) {
		cur_advance(r, r->mark_at[j]);
		r->s[j] = recover(r, true, false, why, sizeof(why));
		if (!r->s[j]) {
			fprintf(stderr, "# FAIL %s: S_%d: %s\n", r->name, j, why);
			free(recover(r, true, true, why, sizeof(why)));
		}
		ASSERT_NE(NULL, r->s[j]) TH_LOG("S_%d: %s", j, why);
		if (j && !strcmp(r->s[j], r->s[j - 1])) {
			print_dump("S_before = S_after", r->s[j]);
			ASSERT_TRUE(false) TH_LOG("op %d changes nothing the dump shows", j);
		}
	}
}

/*
 * PM_CRASH_PREFIXES=0 records, checks the log's completeness and the
 * states at the marks, but replays no prefix: the replay is user space
 * and the same under every kernel, so the suite replays under one kernel
 * and only records under the others (tests/run-all).
 */
static bool replay_prefixes(void)
{
	const char *v = getenv("PM_CRASH_PREFIXES");

	return !v || strcmp(v, "0");
}

/* Step 6: every prefix.  Returns how many crash states are wrong. */
static int every_prefix(struct run *r)
{
	int k, failed = 0;
	char why[512];

	cur_reset(r);
	for (k = 0; k <= r->nrecs; k++) {
		char *got;

		cur_advance(r, k);
		if (judge(r, k, &got, why, sizeof(why))) {
			if (failed < DETAILS + SUMMARIES)
				report_failure(r, k, why, got, failed < DETAILS);
			failed++;
		}
		free(got);
	}
	return failed;
}

static void run_free(struct run *r)
{
	int j;

	for (j = 0; j <= MAX_OPS; j++)
		free(r->s[j]);
	if (r->cur && r->cur != MAP_FAILED)
		munmap(r->cur, r->size);
	if (r->memfd > 0)
		close(r->memfd);
	free(r->pre);
	free(r->post);
	free(r->log);
	free(r->recs);
	memset(r, 0, sizeof(*r));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Skip unless root with a pmem device and the store log; a clean MNT. */
static bool usable(struct __test_metadata *_metadata)
{
	if (!getenv("MORSEL_PMEM") || !*getenv("MORSEL_PMEM")) {
		SKIP(return false, "no $MORSEL_PMEM (vm/run --pmem FILE:SIZE)");
	}
	if (geteuid()) {
		SKIP(return false, "needs root");
	}
	/* The module loaded with pm_log=1 (vm/run --pm-log): fail, not skip. */
	if (access(PM_LOG, W_OK)) {
		ASSERT_TRUE(false) TH_LOG("no %s (vm/run --pm-log): %s", PM_LOG,
					  strerror(errno));
	}
	umount2(MNT, MNT_DETACH);	/* left by a test that failed */
	if (mkdir(MNT, 0755) && errno != EEXIST) {
		ASSERT_TRUE(false) TH_LOG("mkdir %s: %s", MNT, strerror(errno));
	}
	return true;
}

static void cleanup(void)
{
	log_cmd("stop");
	umount2(MNT, MNT_DETACH);
}

/* ---- the corpus ----------------------------------------------------------- */

FIXTURE(crash) {
	struct run r;
};

FIXTURE_VARIANT(crash) {
	const char *name;
	struct workload w;
};

#define WORKLOAD(variant, ...) \
	FIXTURE_VARIANT_ADD(crash, variant) { #variant, { __VA_ARGS__ } }

WORKLOAD(create_empty, NULL, 1, { op_creat_f });
WORKLOAD(create_then_write_10k, NULL, 2, { op_creat_f, op_write_f_10k });
WORKLOAD(append_5k_to_3_pages, setup_f_12k, 1, { op_append_f_5k });
WORKLOAD(mkdir, NULL, 1, { op_mkdir_d });
WORKLOAD(mkdir_then_create_inside, NULL, 2, { op_mkdir_d, op_creat_d_f });
WORKLOAD(symlink, NULL, 1, { op_symlink_s });
WORKLOAD(hard_link, setup_f_5k, 1, { op_link_f_g });
WORKLOAD(unlink_file_with_data, setup_f_10k, 1, { op_unlink_f });
WORKLOAD(unlink_one_of_two_links, setup_f_g_links, 1, { op_unlink_g });
WORKLOAD(rmdir_empty, setup_d, 1, { op_rmdir_d });
WORKLOAD(rename_within_dir, setup_f_6k, 1, { op_rename_f_g });
WORKLOAD(rename_to_other_dir, setup_f_and_d, 1, { op_rename_f_d_f });
WORKLOAD(rename_over_file_with_data, setup_f_and_g, 1, { op_rename_f_g });
WORKLOAD(rename_dir_into_dir, setup_a_x_b, 1, { op_rename_a_b_a });
WORKLOAD(ftruncate_grow_4k_to_3m, setup_f_4k, 1, { op_truncate_f_3m });
WORKLOAD(ftruncate_grow_8k_to_3m, setup_f_8k, 1, { op_truncate_f_3m });
WORKLOAD(ftruncate_shrink_3m_to_5k, setup_f_3m, 1, { op_truncate_f_5k });
WORKLOAD(punch_hole_middle_8_of_16_pages, setup_f_16_pages, 1, { op_punch_f_middle });
WORKLOAD(fallocate_grow_4k_to_20k, setup_f_4k, 1, { op_fallocate_f_20k });
WORKLOAD(reserve_past_eof_to_3m, setup_f_4k, 1, { op_reserve_f_3m });
WORKLOAD(shrink_cuts_reservation, setup_f_4m_over_reservation, 1, { op_truncate_f_1m });
WORKLOAD(shrink_drops_reservation, setup_f_8k_reserved_3m, 1, { op_truncate_f_2k });
WORKLOAD(memory_error_in_a_file, setup_f_16_pages, 1, { op_memory_error_f_page5 });
WORKLOAD(memory_error_then_punch, setup_f_16_pages, 2,
	 { op_memory_error_f_page5, op_punch_f_middle });
WORKLOAD(chmod, setup_f_1k, 1, { op_chmod_f });
WORKLOAD(chown, setup_f_1k, 1, { op_chown_f });
WORKLOAD(chattr, setup_f_1k, 1, { op_chattr_f });
WORKLOAD(seal_full, setup_f_12k, 1, { op_seal_f });
WORKLOAD(seal_with_holes, setup_f_4m_holes, 1, { op_seal_f });
WORKLOAD(set_min_order_2, setup_f_4k, 1, { op_min_order_f_2 });
WORKLOAD(bind_unmapped, setup_f_4k, 1, { op_bind_f });
WORKLOAD(populate_by_read_faults, setup_f_3_holes, 3,
	 { op_read_page0, op_read_page1, op_read_page2 });
WORKLOAD(create_then_rename, NULL, 2, { op_creat_f, op_rename_f_g });
WORKLOAD(write_then_unlink, setup_f_empty, 2, { op_write_f_8k, op_unlink_f });
WORKLOAD(mkdir_then_rename_dir, setup_b, 2, { op_mkdir_a, op_rename_a_b_a });
WORKLOAD(truncate_then_append, setup_f_8k, 2, { op_truncate_f_2k, op_write_f_6k_at_2k });
WORKLOAD(setxattr_new, setup_f_1k, 1, { op_setxattr_f_a });
WORKLOAD(setxattr_replace, setup_f_xattrs, 1, { op_setxattr_f_a_longer });
WORKLOAD(removexattr_one_of_two, setup_f_xattrs, 1, { op_removexattr_f_b });
WORKLOAD(removexattr_last_then_dir_setxattr, setup_f_a_and_d, 2,
	 { op_removexattr_f_a, op_setxattr_d });
WORKLOAD(setxattr_then_unlink, setup_f_1k, 2, { op_setxattr_f_a, op_unlink_f });
WORKLOAD(set_file_huge_mode, setup_f_4m_holes, 1, { op_huge_mode_f_always });
WORKLOAD(populate_a_2m_leaf, setup_f_4m_holes_always, 1, { op_populate_f_2m_leaf });
WORKLOAD(punch_inside_a_2m_leaf, setup_f_2_leaves, 1, { op_punch_f_inside_leaf });
WORKLOAD(punch_a_whole_2m_leaf, setup_f_2_leaves, 1, { op_punch_f_whole_leaf });
WORKLOAD(truncate_into_a_2m_leaf, setup_f_2_leaves, 1, { op_truncate_f_3m_5k });
WORKLOAD(truncate_to_2m_lowers_over_a_leaf, setup_f_2_leaves, 1, { op_truncate_f_2m });
WORKLOAD(collapse_512_pages, setup_f_1024_pages, 1, { op_collapse_f_first_2m });
WORKLOAD(memory_error_in_a_2m_leaf, setup_f_2_leaves, 1, { op_memory_error_f_page5 });
WORKLOAD(unlink_file_with_2m_leaves, setup_f_2_leaves, 1, { op_unlink_f });

FIXTURE_SETUP(crash)
{
	memset(&self->r, 0, sizeof(self->r));
	usable(_metadata);
}

FIXTURE_TEARDOWN(crash)
{
	cleanup();
	run_free(&self->r);
}

/* Every prefix of the workload's stores recovers to a state before or after. */
TEST_F_TIMEOUT(crash, every_prefix_recovers, 900)
{
	struct run *r = &self->r;
	double t0 = now();
	int failed;

	r->name = variant->name;
	record(_metadata, &variant->w, r);
	states(_metadata, r);
	failed = replay_prefixes() ? every_prefix(r) : 0;
	if (total_states && replay_prefixes())
		__atomic_fetch_add(total_states, r->nrecs + 1, __ATOMIC_RELAXED);
	printf("# %s: %d crash states%s (%d ops, %.1f s)\n", r->name, r->nrecs + 1,
	       replay_prefixes() ? "" : " (not replayed)", r->nops, now() - t0);
	fflush(stdout);
	ASSERT_EQ(0, failed) TH_LOG("%s: %d of %d crash states are wrong", r->name,
				    failed, r->nrecs + 1);
}

/* ---- relocation ----------------------------------------------------------- */

/*
 * A device found at another physical address (another --mem moves the
 * NVDIMM): the mount rewrites every entry, four stores each, restartably.
 * The move is made offline here: the user-space walk relocates a populated
 * device to its base + @shift; then the mount, logged, moves it back.
 * Every prefix of the mount's stores, recovered for the real base, must
 * be the same file system.  A shift below the device's size makes the old
 * and new ranges overlap, so an entry's value alone cannot say which base
 * it is for.
 */
FIXTURE(move) {
	struct run r;
};

FIXTURE_VARIANT(move) {
	__u64 shift;
	__u64 moved_again;	/* recovered at base + this */
	bool leaves;		/* a file of two 2 MiB leaves too */
};

FIXTURE_VARIANT_ADD(move, to_a_distant_address) { .shift = 1ULL << 30 };
FIXTURE_VARIANT_ADD(move, to_an_overlapping_range) { .shift = 64 * KiB };
/*
 * A crash during the relocating mount, then the device moved again before
 * the next mount: recovery finishes the relocation to the recorded base,
 * which is not the device's, and moves the entries on to where it is.
 */
FIXTURE_VARIANT_ADD(move, then_moved_again) { .shift = 1ULL << 30, .moved_again = 2ULL << 30 };
/* A leaf's entry moves like any other (2 MiB multiples keep it aligned). */
FIXTURE_VARIANT_ADD(move, with_2m_leaves) { .shift = 1ULL << 30, .leaves = true };

FIXTURE_SETUP(move)
{
	memset(&self->r, 0, sizeof(self->r));
	usable(_metadata);
}

FIXTURE_TEARDOWN(move)
{
	cleanup();
	run_free(&self->r);
}

static int setup_tree(void)
{
	return put("f", 10 * KiB, 20) ?: mkdir(P("d"), 0755) ?:
	       put("d/g", 5 * KiB, 21) ?: symlink("d/g", P("s")) ?:
	       setup_f_3m() ?: link(P("f"), P("d/f2")) ?:
	       set_xattr(P("d/g"), "user.moved", 200, 28, 0);
}

TEST_F_TIMEOUT(move, every_prefix_of_the_relocating_mount_recovers, 900)
{
	struct run *r = &self->r;
	struct mpm_fs fs;
	char why[512];
	__u64 real;
	int failed;

	r->name = "relocating mount";
	r->dev = getenv("MORSEL_PMEM");
	r->nops = 1;
	ASSERT_EQ(0, mkfs(r->dev));
	ASSERT_EQ(0, do_mount(r->dev));
	ASSERT_EQ(0, setup_tree()) TH_LOG("setup: %s", strerror(errno));
	if (variant->leaves)
		ASSERT_EQ(0, put_4m("h", MORSEL_HUGE_ALWAYS, 32));
	ASSERT_EQ(0, umount(MNT));
	/* Offline, to base + shift. */
	ASSERT_EQ(0, pm_open(r->dev, true, &fs));
	real = mpm_super(&fs)->base;
	ASSERT_NE(0, real);
	fs.repair = true;
	fs.phys = real + variant->shift;
	ASSERT_EQ(0, mpm_walk(&fs));
	EXPECT_EQ(0, fs.st.errors);
	EXPECT_LT(10, fs.st.relocated);	/* 19: the trees of 7 inodes */
	EXPECT_EQ(real + variant->shift, mpm_super(&fs)->base);
	ASSERT_EQ(0, pm_close(&fs));
	ASSERT_EQ(0, read_dev(r->dev, &r->pre, &r->size));
	/* The operation: the mount, which moves it back. */
	ASSERT_EQ(0, log_cmd(LOG_START));
	ASSERT_EQ(0, do_mount(r->dev));
	ASSERT_EQ(0, log_cmd("mark"));
	ASSERT_EQ(0, log_cmd("stop")) TH_LOG("the log overflowed");
	ASSERT_EQ(0, umount(MNT));
	parse_log(_metadata, r);
	EXPECT_EQ(real, ((struct mpm_super *)r->post)->base);
	EXPECT_EQ(0, ((struct mpm_super *)r->post)->reloc_base);
	check_complete(_metadata, r);
	/* One state, before and after: the same file system at any base. */
	r->phys = real + variant->moved_again;
	cur_reset(r);
	cur_advance(r, r->nrecs);
	r->s[1] = recover(r, true, false, why, sizeof(why));
	ASSERT_NE(NULL, r->s[1]) TH_LOG("%s", why);
	r->s[0] = strdup(r->s[1]);
	failed = replay_prefixes() ? every_prefix(r) : 0;
	if (total_states && replay_prefixes())
		__atomic_fetch_add(total_states, r->nrecs + 1, __ATOMIC_RELAXED);
	printf("# move +%#llx, recovered at +%#llx: %d crash states%s\n",
	       (unsigned long long)variant->shift, (unsigned long long)variant->moved_again,
	       r->nrecs + 1, replay_prefixes() ? "" : " (not replayed)");
	fflush(stdout);
	ASSERT_EQ(0, failed) TH_LOG("%d of %d crash states are wrong", failed, r->nrecs + 1);
}

/* ---- the oracle's own test ------------------------------------------------ */

FIXTURE(oracle) {
	struct run r;
};

FIXTURE_SETUP(oracle)
{
	memset(&self->r, 0, sizeof(self->r));
	usable(_metadata);
}

FIXTURE_TEARDOWN(oracle)
{
	cleanup();
	run_free(&self->r);
}

/*
 * A rename replayed without its commit store (the one that makes the new
 * entry live) but with every later store (the old name cleared, ...) must
 * be caught: the file is gone, which is neither S_0 nor S_1.
 */
TEST_F_TIMEOUT(oracle, rejects_rename_without_commit_store, 900)
{
	static const struct workload w = { setup_f_6k, 1, { op_rename_f_g } };
	struct run *r = &self->r;
	char why[512], *got = NULL;
	int k, commit = -1;

	r->name = "oracle";
	record(_metadata, &w, r);
	states(_metadata, r);
	/* The commit: the store of an entry word naming "g", a regular file. */
	cur_reset(r);
	for (k = 0; k < r->nrecs; k++) {
		const struct rec *rc = &r->recs[k];
		__u64 v;

		if (rc->kind == MPM_LOG_STORE) {
			memcpy(&v, rc->data, 8);
			if (v && mpm_de_ino(v) && mpm_de_len(v) == 1 &&
			    mpm_de_type(v) == DT_REG && !(v >> 52) &&
			    rc->off % PG % MPM_DIRENT_SIZE == 0 &&
			    r->cur[rc->off + offsetof(struct mpm_dirent, name)] == 'g') {
				ASSERT_EQ(-1, commit) TH_LOG("two commit stores");
				commit = k;
			}
		}
		apply(r->cur, rc);
	}
	ASSERT_LE(0, commit) TH_LOG("no commit store in the log");
	ASSERT_LT(commit + 1, r->nrecs) TH_LOG("no store after the commit");

	/* Control: every record, the commit too, is S_1. */
	r->applied = r->nrecs;
	ASSERT_EQ(0, judge(r, r->nrecs, &got, why, sizeof(why))) TH_LOG("%s", why);
	free(got);

	/* Every record but the commit: neither state. */
	cur_reset(r);
	for (k = 0; k < r->nrecs; k++)
		if (k != commit)
			apply(r->cur, &r->recs[k]);
	r->applied = r->nrecs;
	ASSERT_NE(0, judge(r, r->nrecs, &got, why, sizeof(why)));
	printf("# oracle: without record %d of %d (the commit) it says: %s\n",
	       commit + 1, r->nrecs, why);
	if (got)
		print_diff("vs S_1 (- S_1 only, + broken state only)", r->s[1], got);
	free(got);
	fflush(stdout);
	if (total_states)
		__atomic_fetch_add(total_states, 2, __ATOMIC_RELAXED);
}

TEST_HARNESS_MAIN
