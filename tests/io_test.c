// SPDX-License-Identifier: GPL-2.0
/*
 * io_test: a morsel as a file and as a buffer of system calls (kselftest
 * harness; with primitive_test, ioctl_test and lifecycle_test it replaced
 * morsel_test).
 *
 * - read, write, pwritev, O_APPEND past the extent and while mapped; bad
 *   buffers (O_DIRECT: errors_test).
 * - copy_file_range, sendfile and splice between morsels, sockets, pipes
 *   and another file system; cp and cat.
 * - Morsel memory as the buffer of read, write, send, recv and
 *   process_vm_readv; GUP: process_vm_writev, vmsplice, an O_DIRECT read
 *   (netfs on the 9p root), MADV_POPULATE_READ/WRITE.
 * - Directory operations (rename, link, mkdir, rmdir, mknod) and
 *   permissions, decided by the VFS.
 *
 * Runs in the VM (vm/run; tests/run-all) as root, from the repository,
 * with the suite's morselfs at $MORSEL_MNT and /tmp for files of another
 * file system; tests/run-all runs it on a persistent instance too
 * (tests/on_pmem).
 *
 * kselftest harness: every TEST runs in its own child process, one after
 * another; each creates the files it uses (its own names, in $MORSEL_MNT
 * and /tmp/morsel-*) and depends on no other test.  A check in a fork
 * child is an ASSERT_* too: a failure ends the child and fails the test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

static void *volatile bad_ptr = (void *)8;	/* unmapped, opaque to gcc */

static void fill_pattern(char *b, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245 + 12345;
		b[i] = (char)(seed >> 16);
	}
}

/* ---- system calls with a morsel buffer ---- */

TEST(syscalls_on_morsel_buffers)
{
	int fd = fresh(mpath("sys"), 2 * MiB), pfd[2], tfd;
	char *p, buf[64] = "";
	struct iovec local = { buf, 16 }, remote;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	remote.iov_base = p;
	remote.iov_len = 16;
	/* read() from a regular file into the morsel */
	tfd = open("/tmp/morsel-sys", O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, tfd);
	ASSERT_EQ(13, write(tfd, "file contents", 13));
	ASSERT_EQ(0, lseek(tfd, 0, SEEK_SET));
	ASSERT_EQ(13, read(tfd, p + 100, 13));
	ASSERT_EQ(0, memcmp(p + 100, "file contents", 13));
	close(tfd);
	unlink("/tmp/morsel-sys");
	/* write() from the morsel into a pipe, and read() back into it */
	ASSERT_EQ(0, pipe(pfd));
	strcpy(p + 1 * MiB, "through a pipe");
	ASSERT_EQ(15, write(pfd[1], p + 1 * MiB, 15));
	ASSERT_EQ(15, read(pfd[0], p + 1 * MiB + 4096, 15));
	ASSERT_STREQ("through a pipe", p + 1 * MiB + 4096);
	/* ... and through a socket */
	{
		int sv[2];

		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		ASSERT_EQ(15, send(sv[0], p + 1 * MiB, 15, 0));
		ASSERT_EQ(15, recv(sv[1], p + 1 * MiB + 8192, 15, 0));
		ASSERT_STREQ("through a pipe", p + 1 * MiB + 8192);
		close(sv[0]);
		close(sv[1]);
	}
	/* process_vm_readv() into a morsel buffer, and from one (GUP) */
	strcpy(p + 8192, "remote bytes");
	remote.iov_base = p + 8192;
	local.iov_base = p + 3 * 4096;
	ASSERT_EQ(16, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	ASSERT_STREQ("remote bytes", p + 3 * 4096);
	local.iov_base = buf;
	ASSERT_EQ(16, process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	ASSERT_STREQ("remote bytes", buf);
	munmap(p, 2 * MiB);
	close(fd);
	unlink(mpath("sys"));
}

/* ---- file system ---- */

TEST(filesystem_operations)
{
	int fd = fresh(mpath("fs-a"), 5000);
	struct stat sb;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, mkdir(mpath("fs-dir"), 0755));
	ASSERT_EQ(0, rename(mpath("fs-a"), mpath("fs-dir/b")));
	ASSERT_EQ(0, link(mpath("fs-dir/b"), mpath("fs-c")));
	ASSERT_EQ(0, stat(mpath("fs-c"), &sb));
	ASSERT_EQ(5000, sb.st_size);
	ASSERT_EQ(2, sb.st_nlink);
	ASSERT_EQ(0, mknod(mpath("fs-fifo"), S_IFIFO | 0644, 0));	/* fs_test has more */
	ASSERT_EQ(0, unlink(mpath("fs-fifo")));
	ASSERT_ERRNO(ENOTEMPTY, rmdir(mpath("fs-dir")));
	ASSERT_EQ(0, unlink(mpath("fs-dir/b")));
	ASSERT_EQ(0, rmdir(mpath("fs-dir")));
	ASSERT_EQ(0, unlink(mpath("fs-c")));
	ASSERT_EQ(5000, st(_metadata, fd).size);
	close(fd);
	ASSERT_ERRNO(ENOENT, open(mpath("fs-none"), O_RDWR));
	ASSERT_EQ(-ENOENT, morsel_open(mpath("fs-none"), O_RDWR));
	ASSERT_GT(0, morsel_create("/proc/nonexistent/x", 1, 0644));
}

TEST(permissions_from_vfs)
{
	int fd = fresh(mpath("perm"), 2 * MiB);
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fchmod(fd, 0600));
	/* the root is world-writable (mode=01777, as tmpfs); this is not */
	ASSERT_EQ(0, mkdir(mpath("perm-dir"), 0755));
	pid = fork();
	if (pid == 0) {
		ASSERT_EQ(0, setgid(65534));
		ASSERT_EQ(0, setuid(65534));
		ASSERT_ERRNO(EACCES, open(mpath("perm"), O_RDONLY));
		ASSERT_ERRNO(EACCES, open(mpath("perm-dir/new"), O_RDWR | O_CREAT, 0644));
		_exit(0);
	}
	wait_child_ok(_metadata, pid);
	close(fd);
	unlink(mpath("perm"));
	rmdir(mpath("perm-dir"));
}

/* ---- ordinary file I/O ---- */

TEST(read_write_like_a_file)
{
	int fd = fresh(mpath("rw"), 0), afd;
	char buf[64], *p;
	struct iovec iov[2];

	ASSERT_LE(0, fd);
	ASSERT_EQ(5, write(fd, "hello", 5));
	ASSERT_EQ(0, st(_metadata, fd).order);
	/* Past the extent: the order rises, the old root becomes entry 0. */
	ASSERT_EQ(5, pwrite(fd, "world", 5, 3 * MiB));
	ASSERT_EQ(2, st(_metadata, fd).order);
	ASSERT_EQ(3 * MiB + 5, st(_metadata, fd).size);
	ASSERT_EQ(5, pread(fd, buf, 5, 0));
	ASSERT_EQ(0, memcmp(buf, "hello", 5));
	memset(buf, 'q', sizeof(buf));
	ASSERT_EQ(13, pread(fd, buf, 64, 3 * MiB - 8));	/* hole, then EOF */
	ASSERT_EQ(0, memcmp(buf, "\0\0\0\0\0\0\0\0world", 13));
	ASSERT_EQ(0, pread(fd, buf, 64, 3 * MiB + 5));
	ASSERT_EQ(2, st(_metadata, fd).pages);			/* holes stay holes */
	/* The mapping sees the same pages. */
	p = map(_metadata, fd, 3 * MiB + 5, PROT_READ | PROT_WRITE);
	ASSERT_EQ(0, memcmp(p + 3 * MiB, "world", 5));
	p[100] = 'Q';
	ASSERT_EQ(1, pread(fd, buf, 1, 100));
	ASSERT_EQ('Q', buf[0]);
	/* Mapped: growing inside the extent and past it both work. */
	ASSERT_EQ(1, pwrite(fd, "y", 1, 512 * MiB));
	ASSERT_EQ('y', p[512 * MiB]);
	ASSERT_EQ(1, pwrite(fd, "z", 1, 2 * GiB));
	ASSERT_EQ(3, st(_metadata, fd).order);
	ASSERT_EQ('y', p[512 * MiB]);
	munmap(p, 1 * GiB);
	ASSERT_EQ(3, st(_metadata, fd).order);
	ASSERT_ERRNO(EFBIG, pwrite(fd, "z", 1, 256 * TiB));
	/* A bad buffer: EFAULT, and the size stays. */
	ASSERT_ERRNO(EFAULT, pwrite(fd, bad_ptr, 10, 4 * GiB));
	ASSERT_EQ(2 * GiB + 1, st(_metadata, fd).size);
	/* Vectors across a page border; O_APPEND. */
	iov[0].iov_base = "abc";
	iov[0].iov_len = 3;
	iov[1].iov_base = "def";
	iov[1].iov_len = 3;
	ASSERT_EQ(6, pwritev(fd, iov, 2, 4093));
	ASSERT_EQ(6, pread(fd, buf, 6, 4093));
	ASSERT_EQ(0, memcmp(buf, "abcdef", 6));
	afd = open(mpath("rw"), O_WRONLY | O_APPEND);
	ASSERT_LE(0, afd);
	ASSERT_EQ(3, write(afd, "end", 3));
	ASSERT_EQ(2 * GiB + 4, st(_metadata, fd).size);
	ASSERT_EQ(4, pread(fd, buf, 4, 2 * GiB));
	ASSERT_EQ(0, memcmp(buf, "zend", 4));
	close(afd);
	close(fd);
	unlink(mpath("rw"));
}

/*
 * A shared mapping of the last page stores past the size; each way of
 * growing the size must show zeros there (fsx -e, fstests generic/363),
 * for a mapping of the whole file (the mounted path) and of one page
 * of a larger file (page by page).
 */
TEST(growing_zeroes_what_a_mapping_left_past_eof)
{
	static const char *const how[] = {
		"pwrite", "ftruncate", "fallocate", "copy_file_range",
	};
	int fd = fresh(mpath("eof"), 0), src = fresh(mpath("eof-src"), 0);
	unsigned int i, whole;
	char buf[PG], zero[PG] = { 0 }, *p;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, src);
	ASSERT_EQ(1, write(src, "s", 1));
	for (whole = 0; whole < 2; whole++) {
		/* The last page: page 0 of a 4 KiB file, or past 2 MiB. */
		off_t base = whole ? 0 : 2 * MiB;

		for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
			loff_t from = 0, to = base + 3000;

			ASSERT_EQ(0, ftruncate(fd, 0));
			ASSERT_EQ(100, pwrite(fd, zero, 100, base));
			p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, base);
			ASSERT_NE(MAP_FAILED, p);
			ASSERT_EQ(whole, st(_metadata, fd).mappings);	/* mounted */
			memset(p + 100, 'x', PG - 100);
			ASSERT_EQ(0, munmap(p, PG));
			switch (i) {
			case 0:
				ASSERT_EQ(1, pwrite(fd, "w", 1, base + 3000));
				break;
			case 1:
				ASSERT_EQ(0, ftruncate(fd, base + 3001));
				break;
			case 2:
				ASSERT_EQ(0, fallocate(fd, 0, base, 3001));
				break;
			case 3:
				ASSERT_EQ(1, copy_file_range(src, &from, fd, &to, 1, 0));
				break;
			}
			ASSERT_EQ(base + 3001, st(_metadata, fd).size);
			ASSERT_EQ(2900, pread(fd, buf, 2900, base + 100));
			ASSERT_EQ(0, memcmp(buf, zero, 2900))
				TH_LOG("%s (%s): bytes a mapping stored past EOF show",
				       how[i], whole ? "whole file" : "one page");
		}
	}
	close(src);
	close(fd);
	unlink(mpath("eof"));
	unlink(mpath("eof-src"));
}

TEST(copy_file_range_sendfile_splice)
{
	size_t len = 3 * MiB + 123, done;
	char *want = malloc(len), *got = malloc(len);
	int src = fresh(mpath("cs-src"), 0), dst = fresh(mpath("cs-dst"), 0);
	int sv[2], pfd[2], tfd;
	loff_t in, out;
	off_t off;
	ssize_t n;

	ASSERT_LE(0, src);
	ASSERT_LE(0, dst);
	ASSERT_NE(NULL, want);
	ASSERT_NE(NULL, got);
	fill_pattern(want, len, 7);
	ASSERT_EQ((ssize_t)len, write(src, want, len));
	/* copy_file_range between morsels (splice inside the kernel) */
	in = out = 0;
	for (done = 0; done < len; done += n) {
		n = copy_file_range(src, &in, dst, &out, len - done, 0);
		ASSERT_LT(0, n) TH_LOG("copy_file_range: %s", strerror(errno));
	}
	ASSERT_EQ((ssize_t)len, pread(dst, got, len, 0));
	ASSERT_EQ(0, memcmp(want, got, len));
	/* sendfile morsel -> morsel, morsel -> socket, file -> morsel */
	ASSERT_EQ(0, ftruncate(dst, 0));
	off = 0;
	for (done = 0; done < len; done += n) {
		n = sendfile(dst, src, &off, len - done);
		ASSERT_LT(0, n) TH_LOG("sendfile: %s", strerror(errno));
	}
	ASSERT_EQ((ssize_t)len, pread(dst, got, len, 0));
	ASSERT_EQ(0, memcmp(want, got, len));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	off = 4096;
	ASSERT_EQ(1000, sendfile(sv[0], src, &off, 1000));
	ASSERT_EQ(1000, read(sv[1], got, 1000));
	ASSERT_EQ(0, memcmp(want + 4096, got, 1000));
	tfd = open("/tmp/morsel-sendfile", O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, tfd);
	ASSERT_EQ(100000, write(tfd, want, 100000));
	ASSERT_EQ(0, ftruncate(dst, 0));
	ASSERT_EQ(0, lseek(dst, 0, SEEK_SET));
	off = 0;
	ASSERT_EQ(100000, sendfile(dst, tfd, &off, 100000));
	ASSERT_EQ(100000, pread(dst, got, 100000, 0));
	ASSERT_EQ(0, memcmp(want, got, 100000));
	/* Between file systems copy_file_range() says EXDEV, as for tmpfs. */
	in = out = 0;
	ASSERT_ERRNO(EXDEV, copy_file_range(src, &in, tfd, &out, 10, 0));
	close(tfd);
	unlink("/tmp/morsel-sendfile");
	/* splice morsel -> pipe -> morsel */
	ASSERT_EQ(0, pipe(pfd));
	in = 8192;
	ASSERT_EQ(5000, splice(src, &in, pfd[1], NULL, 5000, 0));
	out = 1 * MiB;
	ASSERT_EQ(5000, splice(pfd[0], NULL, dst, &out, 5000, 0));
	ASSERT_EQ(5000, pread(dst, got, 5000, 1 * MiB));
	ASSERT_EQ(0, memcmp(want + 8192, got, 5000));
	close(src);
	close(dst);
	unlink(mpath("cs-src"));
	unlink(mpath("cs-dst"));
	free(want);
	free(got);
}

TEST(cp_and_cat)
{
	size_t len = 5 * MiB + 77;
	char *data = malloc(len), cmd[1024], out[256];
	struct morsel_stat s;
	int fd;

	ASSERT_NE(NULL, data);
	fill_pattern(data, len, 3);
	fd = open("/tmp/morsel-big", O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)len, write(fd, data, len));
	close(fd);
	unlink(mpath("cp"));
	snprintf(cmd, sizeof(cmd),
		 "cp /tmp/morsel-big %s && cmp /tmp/morsel-big %s && "
		 "cat %s > /tmp/morsel-cat && cmp /tmp/morsel-big /tmp/morsel-cat",
		 mpath("cp"), mpath("cp"), mpath("cp"));
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	fd = morsel_open(mpath("cp"), O_RDONLY);
	ASSERT_LE(0, fd);
	s = st(_metadata, fd);
	ASSERT_EQ(len, s.size);
	ASSERT_EQ(2, s.order);
	ASSERT_EQ((len + PG - 1) / PG, s.pages);
	close(fd);
	unlink(mpath("cp"));
	unlink("/tmp/morsel-big");
	unlink("/tmp/morsel-cat");
	free(data);
}

/* ---- GUP ---- */

TEST(gup_pins_morsel_pages)
{
	int fd = fresh(mpath("gup"), 2 * MiB), pfd[2];
	char *p, *r, buf[32];
	struct iovec local = { buf, 11 }, remote;
	long p0;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	strcpy(p + 8192, "gup target");
	/* process_vm_writev into the morsel, also into a hole */
	remote.iov_base = p + 3 * PG;
	remote.iov_len = 8;
	local.iov_base = "written!";
	local.iov_len = 8;
	ASSERT_EQ(8, process_vm_writev(getpid(), &local, 1, &remote, 1, 0));
	ASSERT_EQ(0, memcmp(p + 3 * PG, "written!", 8));
	p0 = st(_metadata, fd).pages;
	remote.iov_base = p + 1 * MiB;
	ASSERT_EQ(8, process_vm_writev(getpid(), &local, 1, &remote, 1, 0));
	ASSERT_EQ(p0 + 1, st(_metadata, fd).pages);
	ASSERT_EQ(0, memcmp(p + 1 * MiB, "written!", 8));
	/* Not through a read-only mapping: the VMA's rights decide. */
	r = map(_metadata, fd, 2 * MiB, PROT_READ);
	remote.iov_base = r + 3 * PG;
	local.iov_base = "XXXXXXXX";
	ASSERT_ERRNO(EFAULT, process_vm_writev(getpid(), &local, 1, &remote, 1, 0));
	ASSERT_EQ(0, memcmp(p + 3 * PG, "written!", 8));
	/* vmsplice: the pipe holds the page; eviction does not free it. */
	ASSERT_EQ(0, pipe(pfd));
	local.iov_base = p + 8192;
	local.iov_len = 11;
	ASSERT_EQ(11, vmsplice(pfd[1], &local, 1, 0));
	ASSERT_EQ(0, morsel_evict(fd, 8192, PG));
	ASSERT_EQ(0, p[8192]);
	ASSERT_EQ(11, read(pfd[0], buf, 11));
	ASSERT_STREQ("gup target", buf);
	close(pfd[0]);
	close(pfd[1]);
	/*
	 * O_DIRECT read of a file on the 9p host root: netfs pins the user
	 * buffer with iov_iter_extract_pages(), i.e. GUP on the morsel.
	 */
	{
		int dfd = open("/proc/self/exe", O_RDONLY | O_DIRECT);
		int nfd = open("/proc/self/exe", O_RDONLY);
		char *want = malloc(64 * KiB);

		ASSERT_LE(0, dfd);
		ASSERT_LE(0, nfd);
		ASSERT_NE(NULL, want);
		ASSERT_EQ(64 * KiB, pread(dfd, p + 64 * KiB, 64 * KiB, 0));
		ASSERT_EQ(64 * KiB, pread(nfd, want, 64 * KiB, 0));
		ASSERT_EQ(0, memcmp(want, p + 64 * KiB, 64 * KiB));
		ASSERT_ERRNO(EFAULT, pread(dfd, r + 64 * KiB, 64 * KiB, 0));
		close(dfd);
		close(nfd);
		free(want);
	}
	/* MADV_POPULATE_WRITE populates just the range asked for. */
	p0 = st(_metadata, fd).pages;
	ASSERT_EQ(0, madvise(p + 1536 * KiB, 64 * KiB, MADV_POPULATE_WRITE));
	ASSERT_EQ(p0 + 16, st(_metadata, fd).pages);
	ASSERT_EQ(0, madvise(r + 1600 * KiB, 64 * KiB, MADV_POPULATE_READ));
	ASSERT_EQ(p0 + 32, st(_metadata, fd).pages);
	ASSERT_ERRNO(EINVAL, madvise(r, 64 * KiB, MADV_POPULATE_WRITE));
	munmap(r, 2 * MiB);
	munmap(p, 2 * MiB);
	close(fd);
	unlink(mpath("gup"));
}

TEST_HARNESS_MAIN
