// SPDX-License-Identifier: GPL-2.0
/*
 * fs_test: morselfs as a file system, compared with tmpfs: symbolic links,
 * hard links, FIFOs, sockets, device nodes, O_TMPFILE, extended attributes,
 * POSIX ACLs, chattr's flags,
 * the mode=, uid= and gid= mount options, RENAME_NOREPLACE and
 * RENAME_EXCHANGE, and what each kind of inode takes from nr_inodes=.
 * statfs totals and st_blocks of data pages are asserted in safety_test
 * (size_limit_enospc_sigbus_nothing_lost, inode_limit_and_options).  Runs
 * in the VM (vm/run) as root, with the suite's morselfs at $MORSEL_MNT.
 *
 * kselftest harness: every TEST runs in its own child process.  Tests that
 * mount their own instance use INST, which no other suite uses.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"

#define KiB 1024ULL
#define MiB (1024 * KiB)
#define PG 4096ULL

/* A private instance for tests that need their own options or limits. */
#define INST "/tmp/morsel-fs-inst"

static int remount_inst(const char *opts)
{
	return mount("none", INST, NULL, MS_REMOUNT, opts);
}

/* Free inodes (statfs f_ffree) of the file system at @dir; -1 on error. */
static long ffree(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) ? -1 : (long)sf.f_ffree;
}

/*
 * Inodes in use (f_files - f_ffree) at @dir; -1 on error.  A persistent
 * instance's f_ffree also follows its free pages (what new names could
 * still take), so a test that counts inodes on both kinds counts these.
 */
static long inodes_used(const char *dir)
{
	struct statfs sf;

	return statfs(dir, &sf) ? -1 : (long)(sf.f_files - sf.f_ffree);
}

/* The exit status of child @pid (-1 if it did not exit). */
static int child_status(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* A new file at @path holding the string @s; 0 or -1. */
static int put(const char *path, const char *s)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/* The first @len - 1 bytes of @path as a string in @buf; bytes read or -1. */
static ssize_t get(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = 0;
	return n;
}

/* Does the NUL-separated list @list of @len bytes hold @name? */
static int listed(const char *list, ssize_t len, const char *name)
{
	const char *p;

	for (p = list; p < list + len; p += strlen(p) + 1)
		if (!strcmp(p, name))
			return 1;
	return 0;
}

/* ---- symbolic links ---- */

TEST(symlink_create_readlink_follow_lstat)
{
	char buf[256];
	struct stat sb;

	unlink(mpath("sl-target"));
	unlink(mpath("sl-link"));
	unlink(mpath("sl-dangling"));
	unlink(mpath("sl-dirlink"));
	unlink(mpath("sl-dir/f"));
	rmdir(mpath("sl-dir"));
	ASSERT_EQ(0, put(mpath("sl-target"), "through the link"));
	ASSERT_EQ(0, symlink("sl-target", mpath("sl-link")));
	/* readlink: the target as given, without a NUL */
	memset(buf, 'x', sizeof(buf));
	ASSERT_EQ(9, readlink(mpath("sl-link"), buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "sl-target", 9));
	EXPECT_EQ('x', buf[9]);
	ASSERT_EQ(3, readlink(mpath("sl-link"), buf, 3));	/* truncated */
	/* lstat: the link itself; stat: what it points at */
	ASSERT_EQ(0, lstat(mpath("sl-link"), &sb));
	EXPECT_TRUE(S_ISLNK(sb.st_mode));
	EXPECT_EQ(0777, sb.st_mode & 07777);
	EXPECT_EQ(9, sb.st_size);
	EXPECT_EQ(1, sb.st_nlink);
	EXPECT_EQ(0, sb.st_blocks);
	ASSERT_EQ(0, stat(mpath("sl-link"), &sb));
	EXPECT_TRUE(S_ISREG(sb.st_mode));
	EXPECT_EQ(16, sb.st_size);
	/* following it for open */
	ASSERT_EQ(16, get(mpath("sl-link"), buf, sizeof(buf)));
	EXPECT_STREQ("through the link", buf);
	ASSERT_ERRNO(ELOOP, open(mpath("sl-link"), O_RDONLY | O_NOFOLLOW));
	/* a link to a directory, and a dangling link */
	ASSERT_EQ(0, mkdir(mpath("sl-dir"), 0755));
	ASSERT_EQ(0, put(mpath("sl-dir/f"), "in the directory"));
	ASSERT_EQ(0, symlink(mpath("sl-dir"), mpath("sl-dirlink")));
	ASSERT_EQ(16, get(mpath("sl-dirlink/f"), buf, sizeof(buf)));
	ASSERT_EQ(0, symlink("nowhere", mpath("sl-dangling")));
	ASSERT_ERRNO(ENOENT, stat(mpath("sl-dangling"), &sb));
	ASSERT_EQ(0, lstat(mpath("sl-dangling"), &sb));
	ASSERT_ERRNO(EEXIST, symlink("other", mpath("sl-link")));
	/* removing the link leaves the target */
	ASSERT_EQ(0, unlink(mpath("sl-link")));
	ASSERT_EQ(0, stat(mpath("sl-target"), &sb));
	ASSERT_ERRNO(ENOENT, lstat(mpath("sl-link"), &sb));
	unlink(mpath("sl-dangling"));
	unlink(mpath("sl-dirlink"));
	unlink(mpath("sl-dir/f"));
	rmdir(mpath("sl-dir"));
	unlink(mpath("sl-target"));
}

/* A target of PATH_MAX - 1 bytes, the most symlink(2) takes, is kept whole. */
TEST(symlink_long_target)
{
	static char target[PATH_MAX + 1], buf[PATH_MAX + 1];
	struct stat sb;
	size_t i;

	unlink(mpath("sl-long"));
	unlink(mpath("sl-long-tgt"));
	ASSERT_EQ(0, put(mpath("sl-long-tgt"), "long"));
	/* "./././.../sl-long-tgt": resolves to the file beside it */
	for (i = 0; i < PATH_MAX - 1 - strlen("sl-long-tgt"); i += 2)
		memcpy(target + i, "./", 2);
	i = PATH_MAX - 1 - strlen("sl-long-tgt");
	ASSERT_EQ(0, i % 2);
	strcpy(target + i, "sl-long-tgt");
	ASSERT_EQ(PATH_MAX - 1, strlen(target));
	ASSERT_EQ(0, symlink(target, mpath("sl-long")));
	ASSERT_EQ(PATH_MAX - 1, readlink(mpath("sl-long"), buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, target, PATH_MAX - 1));
	ASSERT_EQ(0, lstat(mpath("sl-long"), &sb));
	EXPECT_EQ(PATH_MAX - 1, sb.st_size);
	ASSERT_EQ(4, get(mpath("sl-long"), buf, sizeof(buf)));
	EXPECT_STREQ("long", buf);
	/* one byte more is refused by the VFS */
	target[PATH_MAX - 1] = 'x';
	target[PATH_MAX] = 0;
	ASSERT_ERRNO(ENAMETOOLONG, symlink(target, mpath("sl-toolong")));
	unlink(mpath("sl-long"));
	unlink(mpath("sl-long-tgt"));
}

/* tar copies a tree of links, a FIFO and user xattrs within morselfs. */
TEST(symlink_tar_round_trip)
{
	char cmd[1024], buf[64];
	struct stat a, b;

	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s", mpath("tar-src"),
		 mpath("tar-dst"), mpath("tar.tar"));
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(0, mkdir(mpath("tar-src"), 0755));
	ASSERT_EQ(0, mkdir(mpath("tar-src/sub"), 0750));
	ASSERT_EQ(0, put(mpath("tar-src/sub/data"), "tar data"));
	ASSERT_EQ(0, setxattr(mpath("tar-src/sub/data"), "user.tar", "kept", 4, 0));
	ASSERT_EQ(0, link(mpath("tar-src/sub/data"), mpath("tar-src/hard")));
	ASSERT_EQ(0, symlink("sub/data", mpath("tar-src/rel")));
	ASSERT_EQ(0, symlink("sub", mpath("tar-src/dirlink")));
	ASSERT_EQ(0, symlink("missing", mpath("tar-src/dangling")));
	ASSERT_EQ(0, mkfifo(mpath("tar-src/fifo"), 0640));
	ASSERT_EQ(0, mkdir(mpath("tar-dst"), 0755));
	snprintf(cmd, sizeof(cmd), "tar --xattrs -cf %s -C %s . && tar --xattrs -xpf %s -C %s",
		 mpath("tar.tar"), mpath("tar-src"), mpath("tar.tar"), mpath("tar-dst"));
	ASSERT_EQ(0, system(cmd));
	ASSERT_EQ(8, get(mpath("tar-dst/rel"), buf, sizeof(buf)));
	EXPECT_STREQ("tar data", buf);
	ASSERT_EQ(8, readlink(mpath("tar-dst/rel"), buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "sub/data", 8));
	ASSERT_EQ(8, get(mpath("tar-dst/dirlink/data"), buf, sizeof(buf)));
	ASSERT_EQ(7, readlink(mpath("tar-dst/dangling"), buf, sizeof(buf)));
	/* the hard link is one inode again */
	ASSERT_EQ(0, stat(mpath("tar-dst/hard"), &a));
	ASSERT_EQ(0, stat(mpath("tar-dst/sub/data"), &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(2, a.st_nlink);
	ASSERT_EQ(4, getxattr(mpath("tar-dst/hard"), "user.tar", buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "kept", 4));
	ASSERT_EQ(0, lstat(mpath("tar-dst/fifo"), &a));
	EXPECT_TRUE(S_ISFIFO(a.st_mode));
	EXPECT_EQ(0640, a.st_mode & 07777);
	ASSERT_EQ(0, stat(mpath("tar-dst/sub"), &a));
	EXPECT_EQ(0750, a.st_mode & 07777);
	/* and the copies compare equal */
	snprintf(cmd, sizeof(cmd), "diff -r --no-dereference -x fifo %s %s",
		 mpath("tar-src"), mpath("tar-dst"));
	EXPECT_EQ(0, system(cmd));
	snprintf(cmd, sizeof(cmd), "rm -rf %s %s %s", mpath("tar-src"),
		 mpath("tar-dst"), mpath("tar.tar"));
	EXPECT_EQ(0, system(cmd));
}

/* ---- hard links ---- */

TEST(hard_links_share_one_morsel)
{
	struct morsel_stat st;
	struct stat a, b;
	char buf[16] = "";
	long before;
	int fd, fd2;
	char *p;

	unlink(mpath("hl-a"));
	unlink(mpath("hl-b"));
	unlink(mpath("hl-c"));
	before = inodes_used(mpath(""));
	fd = fresh(mpath("hl-a"), 2 * MiB);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, link(mpath("hl-a"), mpath("hl-b")));
	ASSERT_EQ(0, link(mpath("hl-b"), mpath("hl-c")));
	EXPECT_EQ(before + 1, inodes_used(mpath("")));	/* one inode */
	ASSERT_EQ(0, stat(mpath("hl-a"), &a));
	ASSERT_EQ(0, stat(mpath("hl-c"), &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(3, a.st_nlink);
	EXPECT_EQ(3, b.st_nlink);
	/* write through one name, read and map through another */
	ASSERT_EQ(5, pwrite(fd, "hello", 5, 1 * MiB));
	fd2 = open(mpath("hl-b"), O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(5, pread(fd2, buf, 5, 1 * MiB));
	EXPECT_STREQ("hello", buf);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ('h', p[1 * MiB]);
	p[0] = 'M';
	ASSERT_EQ(1, pread(fd, buf, 1, 0));
	EXPECT_EQ('M', buf[0]);
	ASSERT_EQ(0, morsel_stat(fd2, &st));
	EXPECT_EQ(2, st.pages);
	EXPECT_EQ(1, st.mappings);	/* the one mapping, through fd2 */
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	/* unlinking names keeps the data; the counts follow */
	ASSERT_EQ(0, unlink(mpath("hl-a")));
	ASSERT_EQ(0, fstat(fd2, &b));
	EXPECT_EQ(2, b.st_nlink);
	close(fd);
	close(fd2);
	ASSERT_EQ(0, unlink(mpath("hl-b")));
	ASSERT_EQ(0, stat(mpath("hl-c"), &b));
	EXPECT_EQ(1, b.st_nlink);
	EXPECT_EQ(2 * PG / 512, b.st_blocks);
	memset(buf, 0, sizeof(buf));
	fd = open(mpath("hl-c"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(5, pread(fd, buf, 5, 1 * MiB));
	EXPECT_STREQ("hello", buf);
	close(fd);
	ASSERT_EQ(0, unlink(mpath("hl-c")));
	EXPECT_EQ(before, inodes_used(mpath("")));
	/* directories cannot be hard-linked (VFS) */
	mkdir(mpath("hl-dir"), 0755);
	ASSERT_ERRNO(EPERM, link(mpath("hl-dir"), mpath("hl-dir2")));
	rmdir(mpath("hl-dir"));
}

/* ---- FIFOs, sockets, device nodes ---- */

TEST(fifo_between_two_processes)
{
	char buf[32] = "";
	struct stat sb;
	pid_t pid;
	int fd;

	unlink(mpath("fifo"));
	ASSERT_EQ(0, mkfifo(mpath("fifo"), 0600));
	ASSERT_EQ(0, lstat(mpath("fifo"), &sb));
	EXPECT_TRUE(S_ISFIFO(sb.st_mode));
	EXPECT_EQ(0600, sb.st_mode & 07777);
	EXPECT_EQ(0, sb.st_size);
	EXPECT_EQ(0, sb.st_blocks);
	pid = fork();
	if (!pid) {
		int wfd = open(mpath("fifo"), O_WRONLY);	/* waits for the reader */

		if (wfd < 0 || write(wfd, "through the fifo", 16) != 16)
			_exit(1);
		_exit(0);
	}
	fd = open(mpath("fifo"), O_RDONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(16, read(fd, buf, sizeof(buf)));
	EXPECT_STREQ("through the fifo", buf);
	EXPECT_EQ(0, read(fd, buf, sizeof(buf)));	/* the writer closed */
	EXPECT_EQ(0, child_status(pid));
	close(fd);
	/* mknod(S_IFIFO) makes one too; a FIFO may be hard-linked */
	unlink(mpath("fifo2"));
	ASSERT_EQ(0, mknod(mpath("fifo2"), S_IFIFO | 0644, 0));
	ASSERT_EQ(0, link(mpath("fifo2"), mpath("fifo3")));
	ASSERT_EQ(0, lstat(mpath("fifo3"), &sb));
	EXPECT_TRUE(S_ISFIFO(sb.st_mode));
	EXPECT_EQ(2, sb.st_nlink);
	/* a FIFO has no morsel: the ioctls are the pipe's */
	fd = open(mpath("fifo2"), O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, morsel_stat(fd, &(struct morsel_stat){ 0 }));
	close(fd);
	unlink(mpath("fifo"));
	unlink(mpath("fifo2"));
	unlink(mpath("fifo3"));
}

TEST(socket_node_af_unix)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char buf[16] = "";
	struct stat sb;
	int s, c;
	pid_t pid;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", mpath("sock"));
	unlink(addr.sun_path);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, bind(s, (struct sockaddr *)&addr, sizeof(addr)));
	ASSERT_EQ(0, listen(s, 1));
	ASSERT_EQ(0, lstat(addr.sun_path, &sb));
	EXPECT_TRUE(S_ISSOCK(sb.st_mode));
	pid = fork();
	if (!pid) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)))
			_exit(1);
		if (write(fd, "over the node", 13) != 13)
			_exit(2);
		_exit(0);
	}
	c = accept(s, NULL, NULL);
	ASSERT_LE(0, c);
	ASSERT_EQ(13, read(c, buf, sizeof(buf)));
	EXPECT_STREQ("over the node", buf);
	EXPECT_EQ(0, child_status(pid));
	close(c);
	close(s);
	/* the name stays until unlinked; a second bind finds it taken */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_ERRNO(EADDRINUSE, bind(s, (struct sockaddr *)&addr, sizeof(addr)));
	close(s);
	ASSERT_EQ(0, unlink(addr.sun_path));
	/* mknod(S_IFSOCK) makes a node nobody listens on */
	ASSERT_EQ(0, mknod(mpath("sock2"), S_IFSOCK | 0644, 0));
	ASSERT_EQ(0, lstat(mpath("sock2"), &sb));
	EXPECT_TRUE(S_ISSOCK(sb.st_mode));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", mpath("sock2"));
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_ERRNO(ECONNREFUSED, connect(s, (struct sockaddr *)&addr, sizeof(addr)));
	close(s);
	unlink(mpath("sock2"));
}

TEST(device_nodes)
{
	char buf[100];
	struct stat sb;
	int fd;

	unlink(mpath("null"));
	unlink(mpath("blk"));
	/* a character device: 1:3 behaves as /dev/null */
	ASSERT_EQ(0, mknod(mpath("null"), S_IFCHR | 0666, makedev(1, 3)));
	ASSERT_EQ(0, stat(mpath("null"), &sb));
	EXPECT_TRUE(S_ISCHR(sb.st_mode));
	EXPECT_EQ(makedev(1, 3), sb.st_rdev);
	EXPECT_EQ(0, sb.st_size);
	EXPECT_EQ(0, sb.st_blocks);
	fd = open(mpath("null"), O_RDWR);
	ASSERT_LE(0, fd);
	memset(buf, 'x', sizeof(buf));
	EXPECT_EQ(100, write(fd, buf, sizeof(buf)));
	EXPECT_EQ(0, read(fd, buf, sizeof(buf)));
	close(fd);
	/* a block device node: created and stat'ed only */
	ASSERT_EQ(0, mknod(mpath("blk"), S_IFBLK | 0600, makedev(7, 0)));
	ASSERT_EQ(0, stat(mpath("blk"), &sb));
	EXPECT_TRUE(S_ISBLK(sb.st_mode));
	EXPECT_EQ(makedev(7, 0), sb.st_rdev);
	EXPECT_EQ(0600, sb.st_mode & 07777);
	/* creating device nodes needs CAP_MKNOD (VFS) */
	if (!fork())
		_exit(become_nobody() ? 2 :
		      mknod(mpath("null2"), S_IFCHR | 0666, makedev(1, 3)) ? 0 : 3);
	{
		int status;

		wait(&status);
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	unlink(mpath("null"));
	unlink(mpath("blk"));
}

/* ---- O_TMPFILE ---- */

TEST(o_tmpfile_write_mmap_linkat)
{
	char buf[32] = "", proc[64];
	struct morsel_stat st;
	struct stat sb;
	int fd, fd2;
	char *p;

	unlink(mpath("tmp-named"));
	unlink(mpath("tmp-named2"));
	fd = open(mpath(""), O_TMPFILE | O_RDWR, 0640);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_TRUE(S_ISREG(sb.st_mode));
	EXPECT_EQ(0, sb.st_nlink);
	EXPECT_EQ(0640, sb.st_mode & 07777);
	/* a normal morsel: write, grow, map */
	ASSERT_EQ(7, pwrite(fd, "unnamed", 7, 0));
	ASSERT_EQ(0, ftruncate(fd, 2 * MiB));	/* order 1 */
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, memcmp(p, "unnamed", 7));
	p[1 * MiB] = 'm';
	ASSERT_EQ(1, pread(fd, buf, 1, 1 * MiB));
	EXPECT_EQ('m', buf[0]);
	ASSERT_EQ(0, morsel_stat(fd, &st));
	EXPECT_EQ(1, st.order);
	EXPECT_EQ(2, st.pages);
	EXPECT_EQ(1, st.mappings);
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(2 * PG / 512, sb.st_blocks);
	/* linkat(AT_EMPTY_PATH) gives it a name */
	ASSERT_EQ(0, linkat(fd, "", AT_FDCWD, mpath("tmp-named"), AT_EMPTY_PATH));
	ASSERT_EQ(0, fstat(fd, &sb));
	EXPECT_EQ(1, sb.st_nlink);
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	close(fd);
	ASSERT_EQ(7, get(mpath("tmp-named"), buf, 8));
	EXPECT_STREQ("unnamed", buf);
	ASSERT_EQ(0, stat(mpath("tmp-named"), &sb));
	EXPECT_EQ(2 * MiB, sb.st_size);
	/* ... and so does linkat of /proc/self/fd/N */
	fd2 = open(mpath(""), O_TMPFILE | O_WRONLY, 0600);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(3, write(fd2, "two", 3));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd2);
	ASSERT_EQ(0, linkat(AT_FDCWD, proc, AT_FDCWD, mpath("tmp-named2"),
			    AT_SYMLINK_FOLLOW));
	close(fd2);
	ASSERT_EQ(3, get(mpath("tmp-named2"), buf, sizeof(buf)));
	EXPECT_STREQ("two", buf);
	/* O_EXCL: never linkable (VFS) */
	fd2 = open(mpath(""), O_TMPFILE | O_EXCL | O_RDWR, 0600);
	ASSERT_LE(0, fd2);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd2);
	ASSERT_ERRNO(ENOENT, linkat(AT_FDCWD, proc, AT_FDCWD,
				    mpath("tmp-named3"), AT_SYMLINK_FOLLOW));
	close(fd2);
	unlink(mpath("tmp-named"));
	unlink(mpath("tmp-named2"));
}

/* An O_TMPFILE never linked is freed at the last close: inode and pages. */
TEST(o_tmpfile_never_linked_is_freed)
{
	struct statfs before, during, after;
	int fd, fd2;

	ASSERT_EQ(0, mount_instance(INST, "nr_inodes=3,size=1m"));
	ASSERT_EQ(0, statfs(INST, &before));
	EXPECT_EQ(2, before.f_ffree);
	fd = open(INST, O_TMPFILE | O_RDWR, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, 16 * KiB));	/* order 1: one table */
	ASSERT_EQ(3, pwrite(fd, "abc", 3, 0));
	ASSERT_EQ(0, statfs(INST, &during));
	EXPECT_EQ(1, during.f_ffree);
	EXPECT_EQ(before.f_bfree - 2, during.f_bfree);
	/* counted against nr_inodes=: the third inode is the last */
	fd2 = open(INST, O_TMPFILE | O_RDWR, 0600);
	ASSERT_LE(0, fd2);
	ASSERT_ERRNO(ENOSPC, open(INST, O_TMPFILE | O_RDWR, 0600));
	close(fd2);
	close(fd);
	ASSERT_EQ(0, statfs(INST, &after));
	EXPECT_EQ(before.f_ffree, after.f_ffree);
	EXPECT_EQ(before.f_bfree, after.f_bfree);
	EXPECT_EQ(0, umount(INST));
}

/* ---- extended attributes ---- */

TEST(xattr_user_namespace)
{
	static char big[65537];
	char buf[64], list[256], opts[256];
	bool persistent;
	ssize_t n;

	unlink(mpath("xa"));
	unlink(mpath("xa-link"));
	unlink(mpath("xa-fifo"));
	rmdir(mpath("xa-dir"));
	ASSERT_EQ(0, put(mpath("xa"), "x"));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xa"), "user.a", buf, sizeof(buf)));
	ASSERT_EQ(0, listxattr(mpath("xa"), list, sizeof(list)));
	ASSERT_EQ(0, setxattr(mpath("xa"), "user.a", "one", 3, 0));
	ASSERT_EQ(0, setxattr(mpath("xa"), "user.b", "", 0, 0));	/* empty value */
	ASSERT_EQ(3, getxattr(mpath("xa"), "user.a", NULL, 0));	/* size query */
	ASSERT_EQ(3, getxattr(mpath("xa"), "user.a", buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "one", 3));
	ASSERT_EQ(0, getxattr(mpath("xa"), "user.b", buf, sizeof(buf)));
	ASSERT_ERRNO(ERANGE, getxattr(mpath("xa"), "user.a", buf, 2));
	/* XATTR_CREATE and XATTR_REPLACE */
	ASSERT_ERRNO(EEXIST, setxattr(mpath("xa"), "user.a", "two", 3, XATTR_CREATE));
	ASSERT_ERRNO(ENODATA, setxattr(mpath("xa"), "user.c", "two", 3, XATTR_REPLACE));
	ASSERT_EQ(0, setxattr(mpath("xa"), "user.a", "three", 5, XATTR_REPLACE));
	ASSERT_EQ(5, getxattr(mpath("xa"), "user.a", buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "three", 5));
	ASSERT_EQ(0, setxattr(mpath("xa"), "user.c", "c", 1, XATTR_CREATE));
	/* listxattr: size query, the names, ERANGE */
	n = listxattr(mpath("xa"), NULL, 0);
	ASSERT_EQ(21, n);	/* "user.a\0user.b\0user.c\0" */
	ASSERT_EQ(n, listxattr(mpath("xa"), list, sizeof(list)));
	EXPECT_TRUE(listed(list, n, "user.a"));
	EXPECT_TRUE(listed(list, n, "user.b"));
	EXPECT_TRUE(listed(list, n, "user.c"));
	ASSERT_ERRNO(ERANGE, listxattr(mpath("xa"), list, 20));
	/* removal */
	ASSERT_EQ(0, removexattr(mpath("xa"), "user.b"));
	ASSERT_ERRNO(ENODATA, removexattr(mpath("xa"), "user.b"));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xa"), "user.b", buf, sizeof(buf)));
	ASSERT_EQ(14, listxattr(mpath("xa"), list, sizeof(list)));
	/*
	 * sizes: 64 KiB is the most a value may have, names 255 bytes (VFS);
	 * a persistent instance (tests/on_pmem) keeps an inode's attributes
	 * in one 4 KiB page.
	 */
	proc_mount_opts(getenv("MORSEL_MNT") ?: "/tmp/morsel", opts, sizeof(opts));
	persistent = strstr(opts, "pmem=");
	if (persistent) {
		ASSERT_ERRNO(ENOSPC, setxattr(mpath("xa"), "user.big", big, 65536, 0));
		ASSERT_EQ(0, setxattr(mpath("xa"), "user.big", big, 4000, 0));
		ASSERT_EQ(4000, getxattr(mpath("xa"), "user.big", NULL, 0));
	} else {
		ASSERT_EQ(0, setxattr(mpath("xa"), "user.big", big, 65536, 0));
		ASSERT_EQ(65536, getxattr(mpath("xa"), "user.big", NULL, 0));
	}
	ASSERT_ERRNO(E2BIG, setxattr(mpath("xa"), "user.big", big, 65537, 0));
	memset(big, 'n', 256);
	memcpy(big, "user.", 5);
	big[256] = 0;
	ASSERT_ERRNO(ERANGE, setxattr(mpath("xa"), big, "v", 1, 0));
	/* an unknown namespace; a malformed ACL (posix_acls has good ones) */
	ASSERT_ERRNO(EOPNOTSUPP, setxattr(mpath("xa"), "other.a", "v", 1, 0));
	ASSERT_ERRNO(EOPNOTSUPP, getxattr(mpath("xa"), "other.a", buf, sizeof(buf)));
	ASSERT_ERRNO(EINVAL, setxattr(mpath("xa"), "system.posix_acl_access",
				      "\2\0\0\0\1", 5, 0));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xa"), "system.posix_acl_access",
				       buf, sizeof(buf)));
	/* user.* on a directory; not on a symlink or a FIFO (VFS) */
	ASSERT_EQ(0, mkdir(mpath("xa-dir"), 0755));
	ASSERT_EQ(0, setxattr(mpath("xa-dir"), "user.d", "dir", 3, 0));
	ASSERT_EQ(3, getxattr(mpath("xa-dir"), "user.d", buf, sizeof(buf)));
	ASSERT_EQ(0, symlink("xa", mpath("xa-link")));
	ASSERT_ERRNO(EPERM, lsetxattr(mpath("xa-link"), "user.l", "v", 1, 0));
	ASSERT_EQ(5, getxattr(mpath("xa-link"), "user.a", buf, sizeof(buf)));	/* followed */
	ASSERT_EQ(0, mkfifo(mpath("xa-fifo"), 0644));
	ASSERT_ERRNO(EPERM, setxattr(mpath("xa-fifo"), "user.f", "v", 1, 0));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xa-fifo"), "user.f", buf, sizeof(buf)));
	/* through an fd, and the attributes stay with the inode across links */
	{
		int fd = open(mpath("xa"), O_RDONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, fsetxattr(fd, "user.fd", "f", 1, 0));
		ASSERT_EQ(0, link(mpath("xa"), mpath("xa2")));
		ASSERT_EQ(1, getxattr(mpath("xa2"), "user.fd", buf, sizeof(buf)));
		ASSERT_EQ(0, fremovexattr(fd, "user.fd"));
		close(fd);
		unlink(mpath("xa2"));
	}
	unlink(mpath("xa"));
	unlink(mpath("xa-link"));
	unlink(mpath("xa-fifo"));
	rmdir(mpath("xa-dir"));
}

/*
 * A set-group-ID directory gives what is made in it its group, and a
 * directory made in it the bit too (fstests generic/444 found the bit
 * lost).
 */
TEST(setgid_directory_inherited)
{
	struct stat st;

	system("rm -rf $MORSEL_MNT/sgid");
	ASSERT_EQ(0, mkdir(mpath("sgid"), 0755));
	ASSERT_EQ(0, chown(mpath("sgid"), 0, 1234));
	ASSERT_EQ(0, chmod(mpath("sgid"), 02755));
	ASSERT_EQ(0, mkdir(mpath("sgid/sub"), 0755));
	ASSERT_EQ(0, stat(mpath("sgid/sub"), &st));
	EXPECT_EQ(02755, st.st_mode & 07777);
	EXPECT_EQ(1234, st.st_gid);
	ASSERT_EQ(0, put(mpath("sgid/f"), "x"));
	ASSERT_EQ(0, stat(mpath("sgid/f"), &st));
	EXPECT_EQ(0644, st.st_mode & 07777);
	EXPECT_EQ(1234, st.st_gid);
	system("rm -rf $MORSEL_MNT/sgid");
}

/* The first entry of @tag in the ACL @acl of @len bytes; NULL if none. */
static const struct acl_ent *acl_find(const char *acl, ssize_t len, int tag)
{
	const struct acl_ent *e;

	for (e = (const void *)(acl + 4); (const char *)(e + 1) <= acl + len; e++)
		if (e->tag == tag)
			return e;
	return NULL;
}

/* Can nobody (uid 65534) open @path with @flags?  1, 0 (EACCES) or -1. */
static int nobody_opens(const char *path, int flags)
{
	pid_t pid = fork();
	int fd;

	if (!pid) {
		if (become_nobody())
			_exit(2);
		fd = open(path, flags);
		_exit(fd >= 0 ? 1 : errno == EACCES ? 0 : 3);
	}
	return pid < 0 ? -1 : child_status(pid);
}

/*
 * POSIX ACLs, as on tmpfs: an access ACL grants a named user what the
 * mode does not, its mask is the mode's group bits (and chmod sets it);
 * one that says no more than the mode is the mode alone; a directory's
 * default ACL is inherited by what is made in it, umask ignored; listed
 * once; none on a symbolic link or as a file's default.
 */
TEST(posix_acls)
{
	const struct acl_ent grant[] = {
		{ 1, 6, -1 }, { 2, 4, 65534 }, { 4, 0, -1 }, { 16, 4, -1 }, { 32, 0, -1 },
	}, plain[] = {
		{ 1, 6, -1 }, { 4, 4, -1 }, { 32, 0, -1 },
	}, dflt[] = {
		{ 1, 7, -1 }, { 2, 7, 65534 }, { 4, 5, -1 }, { 16, 7, -1 }, { 32, 0, -1 },
	};
	char acl[256], got[256], list[256];
	const struct acl_ent *e;
	struct stat st;
	ssize_t n, len;
	int fd;

	unlink(mpath("acl"));
	unlink(mpath("acl-link"));
	system("rm -rf $MORSEL_MNT/acl-dir");
	ASSERT_EQ(0, put(mpath("acl"), "secret"));
	ASSERT_EQ(0, chmod(mpath("acl"), 0600));
	EXPECT_EQ(0, nobody_opens(mpath("acl"), O_RDONLY));

	/* an access ACL: nobody may read, not write; group bits = mask */
	len = acl_xattr(acl, grant, 5);
	ASSERT_EQ(0, setxattr(mpath("acl"), "system.posix_acl_access", acl, len, 0));
	ASSERT_EQ(0, stat(mpath("acl"), &st));
	EXPECT_EQ(0640, st.st_mode & 07777);
	ASSERT_EQ(len, getxattr(mpath("acl"), "system.posix_acl_access", got, sizeof(got)));
	EXPECT_EQ(0, memcmp(acl, got, len));
	EXPECT_EQ(1, nobody_opens(mpath("acl"), O_RDONLY));
	EXPECT_EQ(0, nobody_opens(mpath("acl"), O_WRONLY));
	ASSERT_EQ(0, setxattr(mpath("acl"), "user.x", "1", 1, 0));
	n = listxattr(mpath("acl"), list, sizeof(list));
	EXPECT_EQ(sizeof("system.posix_acl_access") + sizeof("user.x"), n);
	EXPECT_TRUE(listed(list, n, "system.posix_acl_access"));
	EXPECT_EQ(n, listxattr(mpath("acl"), NULL, 0));
	ASSERT_ERRNO(ERANGE, listxattr(mpath("acl"), list, n - 1));

	/* chmod sets the mask: nobody loses read */
	ASSERT_EQ(0, chmod(mpath("acl"), 0600));
	ASSERT_EQ(len, getxattr(mpath("acl"), "system.posix_acl_access", got, sizeof(got)));
	e = acl_find(got, len, 16);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(0, e->perm);
	EXPECT_EQ(0, nobody_opens(mpath("acl"), O_RDONLY));

	/* an ACL the mode says all of is the mode: no attribute is left */
	len = acl_xattr(acl, plain, 3);
	ASSERT_EQ(0, setxattr(mpath("acl"), "system.posix_acl_access", acl, len, 0));
	ASSERT_EQ(0, stat(mpath("acl"), &st));
	EXPECT_EQ(0640, st.st_mode & 07777);
	ASSERT_ERRNO(ENODATA, getxattr(mpath("acl"), "system.posix_acl_access",
				       got, sizeof(got)));
	ASSERT_EQ(0, removexattr(mpath("acl"), "user.x"));
	EXPECT_EQ(0, listxattr(mpath("acl"), list, sizeof(list)));
	/* no default ACL on a file, no ACL on a symbolic link */
	len = acl_xattr(acl, dflt, 5);
	ASSERT_ERRNO(EACCES, setxattr(mpath("acl"), "system.posix_acl_default", acl, len, 0));
	ASSERT_EQ(0, symlink("acl", mpath("acl-link")));
	ASSERT_ERRNO(EOPNOTSUPP, lsetxattr(mpath("acl-link"), "system.posix_acl_access",
					   acl, acl_xattr(acl, grant, 5), 0));

	/* a default ACL: inherited, and the umask does not apply */
	umask(022);
	ASSERT_EQ(0, mkdir(mpath("acl-dir"), 0700));
	len = acl_xattr(acl, dflt, 5);
	ASSERT_EQ(0, setxattr(mpath("acl-dir"), "system.posix_acl_default", acl, len, 0));
	fd = open(mpath("acl-dir/f"), O_CREAT | O_WRONLY, 0666);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, stat(mpath("acl-dir/f"), &st));
	EXPECT_EQ(0660, st.st_mode & 07777);
	n = getxattr(mpath("acl-dir/f"), "system.posix_acl_access", got, sizeof(got));
	ASSERT_EQ(len, n);
	e = acl_find(got, n, 2);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(65534, e->id);
	EXPECT_EQ(7, e->perm);	/* its own; the mask (rw-) limits it */
	e = acl_find(got, n, 16);
	ASSERT_NE(NULL, e);
	EXPECT_EQ(6, e->perm);
	ASSERT_ERRNO(ENODATA, getxattr(mpath("acl-dir/f"), "system.posix_acl_default",
				       got, sizeof(got)));
	ASSERT_EQ(0, mkdir(mpath("acl-dir/sub"), 0777));
	ASSERT_EQ(0, stat(mpath("acl-dir/sub"), &st));
	EXPECT_EQ(0770, st.st_mode & 07777);
	ASSERT_EQ(len, getxattr(mpath("acl-dir/sub"), "system.posix_acl_default",
				got, sizeof(got)));
	EXPECT_EQ(0, memcmp(acl, got, len));
	/* MORSEL_IOC_CREATE in the directory, as O_TMPFILE there */
	fd = open(mpath("acl-dir"), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	{
		int mfd = morsel_create_unnamed(fd, PG, 0644);

		ASSERT_LE(0, mfd);
		ASSERT_EQ(0, fstat(mfd, &st));
		EXPECT_EQ(0640, st.st_mode & 07777);	/* not 0644 (umask) */
		close(mfd);
	}
	close(fd);
	/* without the default ACL the umask is back */
	ASSERT_EQ(0, removexattr(mpath("acl-dir"), "system.posix_acl_default"));
	fd = open(mpath("acl-dir/g"), O_CREAT | O_WRONLY, 0666);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, stat(mpath("acl-dir/g"), &st));
	EXPECT_EQ(0644, st.st_mode & 07777);
	ASSERT_ERRNO(ENODATA, getxattr(mpath("acl-dir/g"), "system.posix_acl_access",
				       got, sizeof(got)));
	unlink(mpath("acl"));
	unlink(mpath("acl-link"));
	system("rm -rf $MORSEL_MNT/acl-dir");
}

TEST(xattr_trusted_root_only)
{
	char buf[64], list[256];
	ssize_t n;
	pid_t pid;

	unlink(mpath("xt"));
	ASSERT_EQ(0, put(mpath("xt"), "x"));
	ASSERT_EQ(0, chmod(mpath("xt"), 0666));
	ASSERT_EQ(0, setxattr(mpath("xt"), "trusted.t", "root", 4, 0));
	ASSERT_EQ(0, setxattr(mpath("xt"), "user.u", "all", 3, 0));
	ASSERT_EQ(4, getxattr(mpath("xt"), "trusted.t", buf, sizeof(buf)));
	n = listxattr(mpath("xt"), list, sizeof(list));
	ASSERT_LT(0, n);
	EXPECT_TRUE(listed(list, n, "trusted.t"));
	EXPECT_TRUE(listed(list, n, "user.u"));
	pid = fork();
	if (!pid) {
		if (become_nobody())
			_exit(2);
		/* trusted.*: invisible and not settable without CAP_SYS_ADMIN */
		if (getxattr(mpath("xt"), "trusted.t", buf, sizeof(buf)) != -1 ||
		    errno != ENODATA)
			_exit(3);
		if (setxattr(mpath("xt"), "trusted.n", "v", 1, 0) != -1 ||
		    errno != EPERM)
			_exit(4);
		if (removexattr(mpath("xt"), "trusted.t") != -1 || errno != EPERM)
			_exit(5);
		n = listxattr(mpath("xt"), list, sizeof(list));
		if (n != 7 || !listed(list, n, "user.u"))
			_exit(6);
		/* user.* follows the file's permissions (0666 here) */
		if (setxattr(mpath("xt"), "user.n", "v", 1, 0))
			_exit(7);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(1, getxattr(mpath("xt"), "user.n", buf, sizeof(buf)));
	ASSERT_EQ(0, removexattr(mpath("xt"), "trusted.t"));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xt"), "trusted.t", buf, sizeof(buf)));
	/* without write permission, user.* cannot be set */
	ASSERT_EQ(0, chmod(mpath("xt"), 0644));
	pid = fork();
	if (!pid) {
		if (become_nobody())
			_exit(2);
		if (setxattr(mpath("xt"), "user.m", "v", 1, 0) != -1 ||
		    errno != EACCES)
			_exit(3);
		_exit(getxattr(mpath("xt"), "user.u", buf, sizeof(buf)) == 3 ? 0 : 4);
	}
	EXPECT_EQ(0, child_status(pid));
	unlink(mpath("xt"));
}

TEST(xattr_security_namespace)
{
	char buf[64], list[256];
	ssize_t n;
	pid_t pid;

	unlink(mpath("xs"));
	unlink(mpath("xs-link"));
	unlink(mpath("xs-fifo"));
	ASSERT_EQ(0, put(mpath("xs"), "x"));
	ASSERT_EQ(0, chmod(mpath("xs"), 0666));
	ASSERT_EQ(0, setxattr(mpath("xs"), "security.s", "label", 5, 0));
	ASSERT_EQ(5, getxattr(mpath("xs"), "security.s", buf, sizeof(buf)));
	EXPECT_EQ(0, memcmp(buf, "label", 5));
	ASSERT_ERRNO(EEXIST, setxattr(mpath("xs"), "security.s", "x", 1, XATTR_CREATE));
	n = listxattr(mpath("xs"), list, sizeof(list));
	ASSERT_EQ(11, n);
	EXPECT_TRUE(listed(list, n, "security.s"));
	/* on a symlink itself and on a FIFO too */
	ASSERT_EQ(0, symlink("xs", mpath("xs-link")));
	ASSERT_EQ(0, lsetxattr(mpath("xs-link"), "security.l", "link", 4, 0));
	ASSERT_EQ(4, lgetxattr(mpath("xs-link"), "security.l", buf, sizeof(buf)));
	ASSERT_EQ(11, llistxattr(mpath("xs-link"), list, sizeof(list)));
	EXPECT_TRUE(listed(list, 11, "security.l"));
	ASSERT_ERRNO(ENODATA, getxattr(mpath("xs-link"), "security.l", buf, sizeof(buf)));
	ASSERT_EQ(0, mkfifo(mpath("xs-fifo"), 0644));
	ASSERT_EQ(0, setxattr(mpath("xs-fifo"), "security.f", "fifo", 4, 0));
	ASSERT_EQ(4, getxattr(mpath("xs-fifo"), "security.f", buf, sizeof(buf)));
	/* anyone reads security.*; setting it needs CAP_SYS_ADMIN (commoncap) */
	pid = fork();
	if (!pid) {
		if (become_nobody())
			_exit(2);
		if (getxattr(mpath("xs"), "security.s", buf, sizeof(buf)) != 5)
			_exit(3);
		if (setxattr(mpath("xs"), "security.n", "v", 1, 0) != -1 ||
		    errno != EPERM)
			_exit(4);
		if (listxattr(mpath("xs"), list, sizeof(list)) != 11)
			_exit(5);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, removexattr(mpath("xs"), "security.s"));
	ASSERT_ERRNO(ENODATA, removexattr(mpath("xs"), "security.s"));
	ASSERT_EQ(0, listxattr(mpath("xs"), list, sizeof(list)));
	unlink(mpath("xs"));
	unlink(mpath("xs-link"));
	unlink(mpath("xs-fifo"));
}

/*
 * Attributes take inode space, as in tmpfs: 40 bytes + name + value from
 * nr_inodes= x 1024 bytes; past it ENOSPC.  They go with the inode.
 */
TEST(xattr_space_enospc_and_freed_with_inode)
{
	static char value[1024];
	char buf[8];

	ASSERT_EQ(0, mount_instance(INST, "nr_inodes=3"));	/* 3072 bytes */
	ASSERT_EQ(0, put(INST "/f", "x"));		/* 2048 used */
	ASSERT_EQ(1, ffree(INST));
	/* 40 + 6 + 900 = 946 bytes: fits, and shows as one inode less */
	ASSERT_EQ(0, setxattr(INST "/f", "user.a", value, 900, 0));
	EXPECT_EQ(0, ffree(INST));
	ASSERT_ERRNO(ENOSPC, setxattr(INST "/f", "user.b", value, 900, 0));
	ASSERT_ERRNO(ENOSPC, mkdir(INST "/d", 0755));
	/* replacing checks the new value's space before freeing the old */
	ASSERT_ERRNO(ENOSPC, setxattr(INST "/f", "user.a", value, 100, 0));
	ASSERT_EQ(900, getxattr(INST "/f", "user.a", NULL, 0));
	ASSERT_EQ(0, removexattr(INST "/f", "user.a"));
	EXPECT_EQ(1, ffree(INST));
	ASSERT_EQ(0, setxattr(INST "/f", "user.a", value, 100, 0));
	ASSERT_EQ(0, setxattr(INST "/f", "user.b", value, 100, 0));
	ASSERT_EQ(0, setxattr(INST "/f", "trusted.c", value, 100, 0));
	ASSERT_EQ(0, setxattr(INST, "user.root", value, 100, 0));
	EXPECT_EQ(0, ffree(INST));
	/* remount below the use (the attributes count) is refused */
	ASSERT_ERRNO(EINVAL, remount_inst("nr_inodes=2"));
	/* unlinking frees the inode and its attributes */
	ASSERT_EQ(0, unlink(INST "/f"));
	EXPECT_EQ(1, ffree(INST));
	ASSERT_EQ(100, getxattr(INST, "user.root", buf, 0));
	ASSERT_EQ(0, removexattr(INST, "user.root"));
	EXPECT_EQ(2, ffree(INST));
	EXPECT_EQ(0, umount(INST));
}

/* ---- mount options mode=, uid=, gid= ---- */

TEST(mount_mode_uid_gid)
{
	char opts[512];
	struct stat sb;

	/* the defaults, as tmpfs: 01777, owned by the mounter (root) */
	ASSERT_EQ(0, mount_instance(INST, ""));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 01777, sb.st_mode);
	EXPECT_EQ(0, sb.st_uid);
	EXPECT_EQ(0, sb.st_gid);
	proc_mount_opts(INST, opts, sizeof(opts));
	TH_LOG("/proc/mounts: %s", opts);
	EXPECT_EQ(NULL, strstr(opts, "mode="));
	EXPECT_EQ(NULL, strstr(opts, "uid="));
	EXPECT_EQ(NULL, strstr(opts, "gid="));
	/* given ones */
	ASSERT_EQ(0, mount_instance(INST, "mode=0750,uid=1000,gid=2000,nr_inodes=10"));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 0750, sb.st_mode);
	EXPECT_EQ(1000, sb.st_uid);
	EXPECT_EQ(2000, sb.st_gid);
	proc_mount_opts(INST, opts, sizeof(opts));
	TH_LOG("/proc/mounts: %s", opts);
	EXPECT_NE(NULL, strstr(opts, ",mode=750"));
	EXPECT_NE(NULL, strstr(opts, ",uid=1000"));
	EXPECT_NE(NULL, strstr(opts, ",gid=2000"));
	/* new files in the root inherit nothing but the owner's rules */
	ASSERT_EQ(0, put(INST "/f", "x"));
	ASSERT_EQ(0, stat(INST "/f", &sb));
	EXPECT_EQ(0, sb.st_uid);
	/* remount changes the root directory; options not given stay */
	ASSERT_EQ(0, remount_inst("mode=0700,uid=3000"));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 0700, sb.st_mode);
	EXPECT_EQ(3000, sb.st_uid);
	EXPECT_EQ(2000, sb.st_gid);
	proc_mount_opts(INST, opts, sizeof(opts));
	TH_LOG("/proc/mounts: %s", opts);
	EXPECT_NE(NULL, strstr(opts, ",mode=700"));
	EXPECT_NE(NULL, strstr(opts, ",uid=3000"));
	EXPECT_NE(NULL, strstr(opts, ",gid=2000"));
	EXPECT_NE(NULL, strstr(opts, ",nr_inodes=10"));
	ASSERT_EQ(0, remount_inst("size=1m"));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 0700, sb.st_mode);
	EXPECT_EQ(3000, sb.st_uid);
	/* back to the defaults: no longer shown; bits past 07777 dropped */
	ASSERT_EQ(0, remount_inst("mode=041777,uid=0,gid=0"));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 01777, sb.st_mode);
	EXPECT_EQ(0, sb.st_uid);
	EXPECT_EQ(0, sb.st_gid);
	proc_mount_opts(INST, opts, sizeof(opts));
	EXPECT_EQ(NULL, strstr(opts, "mode="));
	EXPECT_EQ(NULL, strstr(opts, "uid="));
	EXPECT_EQ(NULL, strstr(opts, "gid="));
	EXPECT_EQ(0, umount2(INST, MNT_DETACH));
}

TEST(mount_mode_uid_gid_bad_values_einval)
{
	static const char *const bad[] = {
		"mode=abc", "mode=8", "mode=0x1ff", "mode=", "mode",
		"uid=abc", "uid=-1", "uid=4294967295", "uid=",
		"gid=x", "gid=-1", "gid=4294967295", "gid=1.5",
	};
	struct stat sb;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		TH_LOG("%s", bad[i]);
		ASSERT_ERRNO(EINVAL, mount_instance(INST, bad[i]));
	}
	/* a remount with a bad value changes nothing */
	ASSERT_EQ(0, mount_instance(INST, "mode=755,uid=5"));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_ERRNO(EINVAL, remount_inst(bad[i]));
	ASSERT_ERRNO(EINVAL, remount_inst("mode=700,uid=-1"));
	ASSERT_EQ(0, stat(INST, &sb));
	EXPECT_EQ(S_IFDIR | 0755, sb.st_mode);
	EXPECT_EQ(5, sb.st_uid);
	EXPECT_EQ(0, umount(INST));
}

/* ---- nr_inodes= for every kind of inode ---- */

TEST(nr_inodes_counts_every_inode_kind)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	static char target[1024];
	long n;
	int fd, s;

	ASSERT_EQ(0, mount_instance(INST, "nr_inodes=20"));
	n = ffree(INST);
	ASSERT_EQ(19, n);	/* the root is one */
	ASSERT_EQ(0, put(INST "/file", "x"));
	EXPECT_EQ(--n, ffree(INST));
	ASSERT_EQ(0, mkdir(INST "/dir", 0755));
	EXPECT_EQ(--n, ffree(INST));
	ASSERT_EQ(0, mkfifo(INST "/fifo", 0644));
	EXPECT_EQ(--n, ffree(INST));
	ASSERT_EQ(0, mknod(INST "/sock", S_IFSOCK | 0644, 0));
	EXPECT_EQ(--n, ffree(INST));
	ASSERT_EQ(0, mknod(INST "/chr", S_IFCHR | 0644, makedev(1, 3)));
	EXPECT_EQ(--n, ffree(INST));
	ASSERT_EQ(0, mknod(INST "/blk", S_IFBLK | 0644, makedev(7, 0)));
	EXPECT_EQ(--n, ffree(INST));
	snprintf(addr.sun_path, sizeof(addr.sun_path), INST "/bound");
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	ASSERT_EQ(0, bind(s, (struct sockaddr *)&addr, sizeof(addr)));
	EXPECT_EQ(--n, ffree(INST));
	fd = open(INST, O_TMPFILE | O_RDWR, 0600);
	ASSERT_LE(0, fd);
	EXPECT_EQ(--n, ffree(INST));
	/* a hard link is no new inode */
	ASSERT_EQ(0, link(INST "/file", INST "/file2"));
	ASSERT_EQ(0, link(INST "/fifo", INST "/fifo2"));
	EXPECT_EQ(n, ffree(INST));
	/* a symlink: an inode and its target, 1023 bytes + NUL: two */
	memset(target, 't', sizeof(target) - 1);
	ASSERT_EQ(0, symlink(target, INST "/symlink"));
	n -= 2;
	EXPECT_EQ(n, ffree(INST));
	ASSERT_EQ(9, n);
	/* all are given back */
	close(fd);
	close(s);
	EXPECT_EQ(0, system("rm -rf " INST "/*"));
	EXPECT_EQ(19, ffree(INST));
	EXPECT_EQ(0, umount(INST));
	/* at the limit, every kind gives ENOSPC */
	ASSERT_EQ(0, mount_instance(INST, "nr_inodes=2"));
	ASSERT_EQ(0, mkfifo(INST "/last", 0644));
	ASSERT_EQ(0, ffree(INST));
	ASSERT_ERRNO(ENOSPC, open(INST "/f", O_CREAT | O_RDWR, 0600));
	ASSERT_ERRNO(ENOSPC, mkdir(INST "/d", 0755));
	ASSERT_ERRNO(ENOSPC, mkfifo(INST "/p", 0644));
	ASSERT_ERRNO(ENOSPC, mknod(INST "/s", S_IFSOCK | 0644, 0));
	ASSERT_ERRNO(ENOSPC, mknod(INST "/c", S_IFCHR | 0644, makedev(1, 3)));
	ASSERT_ERRNO(ENOSPC, mknod(INST "/b", S_IFBLK | 0644, makedev(7, 0)));
	ASSERT_ERRNO(ENOSPC, symlink("t", INST "/l"));
	ASSERT_ERRNO(ENOSPC, open(INST, O_TMPFILE | O_RDWR, 0600));
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(addr.sun_path, sizeof(addr.sun_path), INST "/bound");
	ASSERT_ERRNO(ENOSPC, bind(s, (struct sockaddr *)&addr, sizeof(addr)));
	close(s);
	/* a symlink needs more than one inode's space: "t" takes 1026 bytes */
	ASSERT_EQ(0, unlink(INST "/last"));
	ASSERT_ERRNO(ENOSPC, symlink("t", INST "/l"));
	ASSERT_EQ(0, remount_inst("nr_inodes=3"));
	ASSERT_EQ(0, symlink("t", INST "/l"));
	ASSERT_EQ(0, ffree(INST));
	ASSERT_ERRNO(EINVAL, remount_inst("nr_inodes=2"));
	EXPECT_EQ(0, umount(INST));
}

/* ---- rename flags ---- */

TEST(rename_noreplace_exchange)
{
	char buf[16];
	struct stat a, b;

	system("rm -rf /tmp/morsel/rn-*");
	ASSERT_EQ(0, put(mpath("rn-a"), "a"));
	ASSERT_EQ(0, put(mpath("rn-b"), "b"));
	ASSERT_EQ(0, mkdir(mpath("rn-dir"), 0755));
	ASSERT_EQ(0, mkdir(mpath("rn-dir/sub"), 0755));
	ASSERT_EQ(0, symlink("rn-a", mpath("rn-link")));
	/* RENAME_NOREPLACE: EEXIST onto a name, else a plain rename */
	ASSERT_ERRNO(EEXIST, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD,
				       mpath("rn-b"), RENAME_NOREPLACE));
	ASSERT_EQ(1, get(mpath("rn-b"), buf, sizeof(buf)));
	EXPECT_STREQ("b", buf);
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD,
			       mpath("rn-c"), RENAME_NOREPLACE));
	ASSERT_EQ(0, rename(mpath("rn-c"), mpath("rn-a")));
	/* RENAME_EXCHANGE: both must exist; swaps files, links, directories */
	ASSERT_ERRNO(ENOENT, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD,
				       mpath("rn-none"), RENAME_EXCHANGE));
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD,
			       mpath("rn-b"), RENAME_EXCHANGE));
	ASSERT_EQ(1, get(mpath("rn-a"), buf, sizeof(buf)));
	EXPECT_STREQ("b", buf);
	ASSERT_EQ(1, get(mpath("rn-b"), buf, sizeof(buf)));
	EXPECT_STREQ("a", buf);
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("rn-link"), AT_FDCWD,
			       mpath("rn-b"), RENAME_EXCHANGE));
	ASSERT_EQ(0, lstat(mpath("rn-b"), &a));
	EXPECT_TRUE(S_ISLNK(a.st_mode));
	/* a file with a directory, across directories: nlinks follow */
	ASSERT_EQ(0, stat(mpath(""), &a));
	ASSERT_EQ(0, stat(mpath("rn-dir"), &b));
	EXPECT_EQ(3, b.st_nlink);
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("rn-link"), AT_FDCWD,
			       mpath("rn-dir/sub"), RENAME_EXCHANGE));
	ASSERT_EQ(0, stat(mpath("rn-link"), &b));
	EXPECT_TRUE(S_ISDIR(b.st_mode));
	ASSERT_EQ(0, stat(mpath("rn-dir"), &b));
	EXPECT_EQ(2, b.st_nlink);		/* lost its subdirectory */
	ASSERT_EQ(0, stat(mpath(""), &b));
	EXPECT_EQ(a.st_nlink + 1, b.st_nlink);	/* gained one */
	ASSERT_EQ(1, get(mpath("rn-dir/sub"), buf, sizeof(buf)));
	EXPECT_STREQ("a", buf);
	/* both flags at once are refused (RENAME_WHITEOUT: rename_whiteout) */
	ASSERT_ERRNO(EINVAL, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD, mpath("rn-b"),
				       RENAME_EXCHANGE | RENAME_NOREPLACE));
	ASSERT_ERRNO(EINVAL, renameat2(AT_FDCWD, mpath("rn-a"), AT_FDCWD, mpath("rn-b"),
				       RENAME_EXCHANGE | RENAME_WHITEOUT));
	EXPECT_EQ(0, system("rm -rf /tmp/morsel/rn-*"));
}

/*
 * RENAME_WHITEOUT, as tmpfs has it (overlayfs's upper layer; fstests
 * generic/078, generic/626): the old name becomes a character device 0:0,
 * onto a name too, by any user; nothing changes when the target is a
 * non-empty directory.  A persistent instance refuses
 * it (two names in one store, docs/persistence.md).
 */
TEST(rename_whiteout)
{
	char opts[256], buf[16];
	struct stat st;
	pid_t pid;

	proc_mount_opts(getenv("MORSEL_MNT") ?: "/tmp/morsel", opts, sizeof(opts));
	unlink(mpath("wo-a"));
	unlink(mpath("wo-b"));
	unlink(mpath("wo-c"));
	rmdir(mpath("wo-d/sub"));
	rmdir(mpath("wo-d"));
	rmdir(mpath("wo-e"));
	ASSERT_EQ(0, put(mpath("wo-a"), "a"));
	if (strstr(opts, "pmem=")) {
		ASSERT_ERRNO(EINVAL, renameat2(AT_FDCWD, mpath("wo-a"), AT_FDCWD,
					       mpath("wo-b"), RENAME_WHITEOUT));
		EXPECT_EQ(0, unlink(mpath("wo-a")));
		return;
	}
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("wo-a"), AT_FDCWD, mpath("wo-b"),
			       RENAME_WHITEOUT));
	ASSERT_EQ(1, get(mpath("wo-b"), buf, sizeof(buf)));
	EXPECT_STREQ("a", buf);
	ASSERT_EQ(0, lstat(mpath("wo-a"), &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0, st.st_rdev);
	/* onto an existing name; the whiteout itself can be renamed away */
	ASSERT_EQ(0, put(mpath("wo-c"), "c"));
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("wo-c"), AT_FDCWD, mpath("wo-b"),
			       RENAME_WHITEOUT));
	ASSERT_EQ(1, get(mpath("wo-b"), buf, sizeof(buf)));
	EXPECT_STREQ("c", buf);
	ASSERT_EQ(0, lstat(mpath("wo-c"), &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	/* a directory onto a non-empty one: ENOTEMPTY, no whiteout made */
	ASSERT_EQ(0, mkdir(mpath("wo-d"), 0755));
	ASSERT_EQ(0, mkdir(mpath("wo-d/sub"), 0755));
	ASSERT_EQ(0, mkdir(mpath("wo-e"), 0755));
	ASSERT_ERRNO(ENOTEMPTY, renameat2(AT_FDCWD, mpath("wo-e"), AT_FDCWD,
					  mpath("wo-d"), RENAME_WHITEOUT));
	ASSERT_EQ(0, lstat(mpath("wo-e"), &st));
	EXPECT_TRUE(S_ISDIR(st.st_mode));
	/* a directory moved out of the way leaves a whiteout too */
	ASSERT_EQ(0, rmdir(mpath("wo-d/sub")));
	ASSERT_EQ(0, renameat2(AT_FDCWD, mpath("wo-e"), AT_FDCWD, mpath("wo-d"),
			       RENAME_WHITEOUT));
	ASSERT_EQ(0, lstat(mpath("wo-e"), &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	/*
	 * Any user may make one (no CAP_MKNOD since Linux 5.8, a whiteout
	 * is no device anyone can open): it is the caller's.
	 */
	unlink(mpath("wo-u"));
	unlink(mpath("wo-v"));
	pid = fork();
	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(100);
		if (put(mpath("wo-u"), "u"))
			_exit(101);
		_exit(renameat2(AT_FDCWD, mpath("wo-u"), AT_FDCWD, mpath("wo-v"),
				RENAME_WHITEOUT) ? errno : 0);
	}
	EXPECT_EQ(0, child_status(pid));
	ASSERT_EQ(0, lstat(mpath("wo-u"), &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(65534, st.st_uid);
	EXPECT_EQ(0, unlink(mpath("wo-u")));
	EXPECT_EQ(0, unlink(mpath("wo-v")));
	EXPECT_EQ(0, unlink(mpath("wo-a")));
	EXPECT_EQ(0, unlink(mpath("wo-b")));
	EXPECT_EQ(0, unlink(mpath("wo-c")));
	EXPECT_EQ(0, rmdir(mpath("wo-d")));
	EXPECT_EQ(0, unlink(mpath("wo-e")));
}

/* ---- creation time ---- */

/* @path's btime (statx STATX_BTIME) in seconds; -1 if not reported. */
static long long btime_of(const char *path)
{
	struct statx sx;

	if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) ||
	    !(sx.stx_mask & STATX_BTIME))
		return -1;
	return sx.stx_btime.tv_sec;
}

/*
 * Every kind of inode reports its creation time, as tmpfs does (fstests
 * generic/528): taken at creation, moved by nothing afterwards (a write,
 * utimensat, chmod, a rename).
 */
TEST(btime_every_inode_kind)
{
	static const char *const names[] = { "bt-file", "bt-dir", "bt-link", "bt-fifo" };
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	time_t t0, t1;
	unsigned int i;
	long long b;

	for (i = 0; i < 4; i++) {
		unlink(mpath(names[i]));
		rmdir(mpath(names[i]));
	}
	t0 = time(NULL);
	ASSERT_EQ(0, put(mpath("bt-file"), "x"));
	ASSERT_EQ(0, mkdir(mpath("bt-dir"), 0755));
	ASSERT_EQ(0, symlink("bt-file", mpath("bt-link")));
	ASSERT_EQ(0, mkfifo(mpath("bt-fifo"), 0644));
	t1 = time(NULL);
	for (i = 0; i < 4; i++) {
		b = btime_of(mpath(names[i]));
		EXPECT_LE((long long)t0, b) TH_LOG("%s", names[i]);
		EXPECT_GE((long long)t1, b) TH_LOG("%s", names[i]);
		ASSERT_EQ(0, utimensat(AT_FDCWD, mpath(names[i]), old, AT_SYMLINK_NOFOLLOW));
		EXPECT_EQ(b, btime_of(mpath(names[i]))) TH_LOG("%s", names[i]);
	}
	b = btime_of(mpath("bt-file"));
	ASSERT_EQ(0, put(mpath("bt-file"), "yy"));
	ASSERT_EQ(0, chmod(mpath("bt-file"), 0600));
	ASSERT_EQ(0, rename(mpath("bt-file"), mpath("bt-file2")));
	EXPECT_EQ(b, btime_of(mpath("bt-file2")));
	unlink(mpath("bt-file2"));
	rmdir(mpath("bt-dir"));
	unlink(mpath("bt-link"));
	unlink(mpath("bt-fifo"));
}

/* ---- chattr's flags ---- */

/* The chattr flags of @path (FS_IOC_GETFLAGS), or -1. */
static long getflags(const char *path)
{
	int fd = open(path, O_RDONLY), flags = 0;

	if (fd < 0)
		return -1;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		flags = -1;
	close(fd);
	return flags;
}

/* FS_IOC_SETFLAGS on @path; 0, or -1 with errno. */
static int setflags(const char *path, int flags)
{
	int fd = open(path, O_RDONLY), err, ret;

	if (fd < 0)
		return -1;
	ret = ioctl(fd, FS_IOC_SETFLAGS, &flags);
	err = errno;
	close(fd);
	errno = err;
	return ret;
}

/* statx's attributes of @path. */
static unsigned long long attrs(const char *path)
{
	struct statx st;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &st))
		return ~0ULL;
	/* (STATX_ATTR_DAX too on a persistent instance) */
	return st.stx_attributes & (STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE |
				    STATX_ATTR_NODUMP);
}

/* Set @flags on @path as uid 65534 (no capability); the errno, or 0. */
static int setflags_unprivileged(const char *path, int flags)
{
	pid_t pid = fork();

	if (!pid) {
		if (setgid(65534) || setuid(65534))
			_exit(100);
		_exit(setflags(path, flags) ? errno : 0);
	}
	return child_status(pid);
}

/*
 * chattr +i, +a, +d and +A as tmpfs has them (FS_IOC_GETFLAGS/SETFLAGS,
 * statx's attributes), what each refuses, including morselfs' own ioctls
 * and a write through a descriptor opened before +i (-EPERM, as ext4),
 * inheritance of +d and +A, and who may set them.  fstests generic/553
 * and generic/079 test the VFS's side too.
 */
TEST(chattr_flags)
{
	struct morsel_range r = { .offset = 0, .length = PG };
	struct morsel_min_order mo = { .order = 2 };
	struct morsel_bind b = { 0 };
	struct timespec old[2] = { { 1000, 0 }, { 1000, 0 } };
	struct stat st;
	char buf[16];
	int fd, rw, i;
	void *p;

	setflags(mpath("ch"), 0);
	unlink(mpath("ch"));
	unlink(mpath("ch2"));
	setflags(mpath("ch-dir"), 0);
	unlink(mpath("ch-dir/f"));
	rmdir(mpath("ch-dir/d"));
	rmdir(mpath("ch-dir"));
	ASSERT_EQ(0, put(mpath("ch"), "data"));
	EXPECT_EQ(0, getflags(mpath("ch")));
	EXPECT_EQ(0, attrs(mpath("ch")));
	rw = open(mpath("ch"), O_RDWR);
	ASSERT_LE(0, rw);

	/* Immutable: nothing changes, not even through an open descriptor. */
	ASSERT_EQ(0, setflags(mpath("ch"), FS_IMMUTABLE_FL));
	EXPECT_EQ(FS_IMMUTABLE_FL, getflags(mpath("ch")));
	EXPECT_EQ(STATX_ATTR_IMMUTABLE, attrs(mpath("ch")));
	ASSERT_ERRNO(EPERM, open(mpath("ch"), O_WRONLY));
	ASSERT_ERRNO(EPERM, write(rw, "x", 1));
	ASSERT_ERRNO(EPERM, pwrite(rw, "x", 1, 100));
	ASSERT_ERRNO(EPERM, ftruncate(rw, 0));
	ASSERT_ERRNO(EPERM, truncate(mpath("ch"), 0));
	ASSERT_ERRNO(EPERM, fallocate(rw, 0, 0, 2 * PG));
	ASSERT_ERRNO(EPERM, fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG));
	ASSERT_ERRNO(EPERM, ioctl(rw, MORSEL_IOC_POPULATE, &r));
	ASSERT_ERRNO(EPERM, ioctl(rw, MORSEL_IOC_EVICT, &r));
	ASSERT_ERRNO(EPERM, ioctl(rw, MORSEL_IOC_SET_MIN_ORDER, &mo));
	ASSERT_ERRNO(EPERM, ioctl(rw, MORSEL_IOC_BIND, &b));
	ASSERT_ERRNO(EPERM, chmod(mpath("ch"), 0600));
	ASSERT_ERRNO(EPERM, utimensat(AT_FDCWD, mpath("ch"), old, 0));
	ASSERT_ERRNO(EPERM, setxattr(mpath("ch"), "user.a", "v", 1, 0));
	ASSERT_ERRNO(EPERM, unlink(mpath("ch")));
	ASSERT_ERRNO(EPERM, rename(mpath("ch"), mpath("ch2")));
	ASSERT_ERRNO(EPERM, link(mpath("ch"), mpath("ch2")));
	/* Reading and a read-only mapping still work; the data is intact. */
	ASSERT_EQ(4, get(mpath("ch"), buf, sizeof(buf)));
	EXPECT_STREQ("data", buf);
	fd = open(mpath("ch"), O_RDONLY);
	ASSERT_LE(0, fd);
	p = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, memcmp(p, "data", 4));
	munmap(p, PG);
	close(fd);

	/* Only CAP_LINUX_IMMUTABLE sets or clears +i and +a; the owner, +d. */
	ASSERT_EQ(EPERM, setflags_unprivileged(mpath("ch"), 0));
	ASSERT_EQ(0, setflags(mpath("ch"), 0));
	ASSERT_EQ(0, chown(mpath("ch"), 65534, 65534));
	ASSERT_EQ(EPERM, setflags_unprivileged(mpath("ch"), FS_IMMUTABLE_FL));
	ASSERT_EQ(EPERM, setflags_unprivileged(mpath("ch"), FS_APPEND_FL));
	ASSERT_EQ(0, setflags_unprivileged(mpath("ch"), FS_NODUMP_FL));
	EXPECT_EQ(FS_NODUMP_FL, getflags(mpath("ch")));
	EXPECT_EQ(STATX_ATTR_NODUMP, attrs(mpath("ch")));
	/* Flags morselfs does not have. */
	ASSERT_ERRNO(EOPNOTSUPP, setflags(mpath("ch"), FS_SYNC_FL));
	ASSERT_ERRNO(EOPNOTSUPP, setflags(mpath("ch"), FS_NOCOW_FL));
	EXPECT_EQ(FS_NODUMP_FL, getflags(mpath("ch")));

	/* Append-only: writes only at the end, nothing taken away. */
	ASSERT_EQ(0, setflags(mpath("ch"), FS_APPEND_FL));
	EXPECT_EQ(STATX_ATTR_APPEND, attrs(mpath("ch")));
	ASSERT_ERRNO(EPERM, open(mpath("ch"), O_WRONLY));
	fd = open(mpath("ch"), O_RDWR | O_APPEND);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, pwrite(fd, "!", 1, 0));	/* O_APPEND: at the end */
	ASSERT_ERRNO(EPERM, fcntl(fd, F_SETFL, 0));
	ASSERT_ERRNO(EPERM, ftruncate(fd, 0));
	ASSERT_ERRNO(EPERM, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PG));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 2 * PG));
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_POPULATE, &r));
	ASSERT_ERRNO(EPERM, ioctl(fd, MORSEL_IOC_EVICT, &r));
	ASSERT_ERRNO(EPERM, ioctl(fd, MORSEL_IOC_SET_MIN_ORDER, &mo));
	ASSERT_ERRNO(EPERM, ioctl(fd, MORSEL_IOC_BIND, &b));
	/*
	 * No shared mapping through a writable descriptor (it could be
	 * mprotected to write anywhere: the VFS's rule); a private one is.
	 */
	ASSERT_EQ(MAP_FAILED, mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0));
	ASSERT_EQ(EACCES, errno);
	p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	munmap(p, PG);
	ASSERT_ERRNO(EPERM, unlink(mpath("ch")));
	close(fd);
	ASSERT_EQ(5, get(mpath("ch"), buf, sizeof(buf)));
	EXPECT_STREQ("data!", buf);

	/* The descriptor opened before +i writes again after -i. */
	ASSERT_EQ(0, setflags(mpath("ch"), 0));
	ASSERT_EQ(1, pwrite(rw, "D", 1, 0));
	close(rw);
	ASSERT_EQ(5, get(mpath("ch"), buf, sizeof(buf)));
	EXPECT_STREQ("Data!", buf);

	/* Directories: +i refuses new names, +a removals; +d and +A pass on. */
	ASSERT_EQ(0, mkdir(mpath("ch-dir"), 0755));
	ASSERT_EQ(0, setflags(mpath("ch-dir"), FS_IMMUTABLE_FL));
	ASSERT_ERRNO(EPERM, open(mpath("ch-dir/f"), O_CREAT | O_WRONLY, 0644));
	ASSERT_ERRNO(EPERM, mkdir(mpath("ch-dir/d"), 0755));
	/* nor an unnamed morsel there (as O_TMPFILE) */
	fd = open(mpath("ch-dir"), O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	{
		struct morsel_create c = { .size = PG, .mode = 0600 };

		ASSERT_ERRNO(EPERM, ioctl(fd, MORSEL_IOC_CREATE, &c));
		ASSERT_ERRNO(EPERM, openat(fd, ".", O_TMPFILE | O_RDWR, 0600));
	}
	close(fd);
	ASSERT_EQ(0, setflags(mpath("ch-dir"), FS_APPEND_FL | FS_NODUMP_FL | FS_NOATIME_FL));
	ASSERT_EQ(0, put(mpath("ch-dir/f"), "f"));
	ASSERT_EQ(0, mkdir(mpath("ch-dir/d"), 0755));
	ASSERT_ERRNO(EPERM, unlink(mpath("ch-dir/f")));
	ASSERT_ERRNO(EPERM, rename(mpath("ch-dir/f"), mpath("ch-dir/g")));
	EXPECT_EQ(FS_NODUMP_FL | FS_NOATIME_FL, getflags(mpath("ch-dir/f")));
	EXPECT_EQ(FS_NODUMP_FL | FS_NOATIME_FL, getflags(mpath("ch-dir/d")));
	/* +A: a read leaves the access time alone; without it, it moves. */
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, utimensat(AT_FDCWD, mpath("ch-dir/f"), old, 0));
		ASSERT_EQ(1, get(mpath("ch-dir/f"), buf, sizeof(buf)));
		ASSERT_EQ(0, stat(mpath("ch-dir/f"), &st));
		if (i == 0) {
			EXPECT_EQ(1000, st.st_atime);
		} else {
			EXPECT_LT(1000, st.st_atime);
		}
		ASSERT_EQ(0, setflags(mpath("ch-dir/f"), 0));
	}
	ASSERT_EQ(0, setflags(mpath("ch-dir"), 0));
	EXPECT_EQ(0, unlink(mpath("ch-dir/f")));
	EXPECT_EQ(0, rmdir(mpath("ch-dir/d")));
	EXPECT_EQ(0, rmdir(mpath("ch-dir")));
	EXPECT_EQ(0, unlink(mpath("ch")));
}

TEST_HARNESS_MAIN
