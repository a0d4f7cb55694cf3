// SPDX-License-Identifier: GPL-2.0
/*
 * bench/clone: copy-on-write clones of morsels (issue 23, FBMM's
 * evaluation item 5), in one VM run, as csv lines for bench/report.
 *
 * A file of LEN bytes, every page written, exists once on a tmpfs of its
 * own and once on the suite's morselfs.  Per iteration:
 * - tmpfs-cp: `cp --reflink=never` of the tmpfs file within the tmpfs;
 * - morsel-reflink: `cp --reflink=always` of the morsel within morselfs
 *   (what a user runs: the time includes cp's own start);
 * - morsel-ficlone: the FICLONE ioctl alone, into a fresh file;
 * - morsel-break: after a clone, one byte written with pwrite in every
 *   2 MiB of the copy (each copies one PTE table and one page): ms per
 *   2 MiB, beside tmpfs-write, the same writes into the tmpfs copy.
 * Metrics: ms, and for the clones the pages and page-table pages
 * /sys/fs/morselfs gained (a clone shares the data: pages 0, tables one
 * root plus one PMD table per GiB).  Copies are removed before the next
 * step, so the guest holds at most three copies.
 *
 * usage: clone [--quick]   (LEN: 4 GiB, or 64 MiB with --quick)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#ifndef FICLONE
#define FICLONE	_IOW(0x94, 9, int)	/* <linux/fs.h>, which <sys/mount.h> excludes */
#endif

#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)
#define TMPFS_DIR	"/tmp/bench-clone-tmpfs"

static uint64_t len;
static char msrc[256], mdst[256];
static const char *tsrc = TMPFS_DIR "/src", *tdst = TMPFS_DIR "/dst";

/* Run cp with @how (--reflink=...) from @from to @to; its time in ms. */
static double cp(const char *how, const char *from, const char *to)
{
	double t0 = now_ms();
	int st;
	pid_t pid = fork();

	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		execlp("cp", "cp", how, from, to, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die(how, EIO);
	return now_ms() - t0;
}

/* A file of len bytes at @path, every page written (not zero). */
static void fill(const char *path)
{
	fill_file(path, len, 'c');
}

/* One byte into every 2 MiB of @path; ms per 2 MiB. */
static double writes(const char *path)
{
	double t0;
	uint64_t off;
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		die(path, errno);
	t0 = now_ms();
	for (off = 0; off < len; off += 2 * MiB)
		if (pwrite(fd, "w", 1, off) != 1)
			die(path, errno ? errno : EIO);
	t0 = now_ms() - t0;
	close(fd);
	return t0 / (len / (2 * MiB));
}

static void one(int it)
{
	unsigned long long p = len / MiB;
	long pages, tables;
	double t;
	int s, d;

	emit("clone", "tmpfs-cp", p, it, "ms", cp("--reflink=never", tsrc, tdst));
	emit("clone", "tmpfs-write", p, it, "ms", writes(tdst));
	unlink(tdst);

	pages = morselfs_counter("pages");
	tables = morselfs_counter("tables");
	emit("clone", "morsel-reflink", p, it, "ms", cp("--reflink=always", msrc, mdst));
	emit("clone", "morsel-reflink", p, it, "pages_added",
	     morselfs_counter("pages") - pages);
	emit("clone", "morsel-reflink", p, it, "tables_added",
	     morselfs_counter("tables") - tables);
	emit("clone", "morsel-break", p, it, "ms", writes(mdst));
	unlink(mdst);

	s = open(msrc, O_RDONLY);
	d = open(mdst, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (s < 0 || d < 0)
		die(mdst, errno);
	t = now_ms();
	if (ioctl(d, FICLONE, s))
		die("FICLONE", errno);
	emit("clone", "morsel-ficlone", p, it, "ms", now_ms() - t);
	close(s);
	close(d);
	unlink(mdst);
}

int main(int argc, char **argv)
{
	const char *mnt = getenv("MORSEL_MNT");
	char opts[64];
	int it, iters;

	if (argc > 1 && !strcmp(argv[1], "--quick"))
		len = 64 * MiB;
	else if (argc > 1)
		die("usage: clone [--quick]", EINVAL);
	else
		len = 4 * GiB;
	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	iters = len > 64 * MiB ? 3 : 2;
	snprintf(msrc, sizeof(msrc), "%s/bench-clone-src", mnt);
	snprintf(mdst, sizeof(mdst), "%s/bench-clone-dst", mnt);
	snprintf(opts, sizeof(opts), "size=%llu",
		 (unsigned long long)(2 * len + 64 * MiB));
	mkdir(TMPFS_DIR, 0755);
	if (mount("tmpfs", TMPFS_DIR, "tmpfs", 0, opts))
		die("mount tmpfs", errno);
	fill(tsrc);
	fill(msrc);
	for (it = 0; it < iters; it++)
		one(it);
	unlink(msrc);
	unlink(tsrc);
	umount(TMPFS_DIR);
	rmdir(TMPFS_DIR);
	return 0;
}
