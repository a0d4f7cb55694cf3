// SPDX-License-Identifier: GPL-2.0
/*
 * bench/mm: a morselfs instance as a process's memory manager (issue 23,
 * FBMM's evaluation items 1 and 4), in one VM run, as csv lines for
 * bench/report.  Each sample runs in a fresh child process, once with
 * Linux's anonymous memory and once with `morsel run --mm`'s
 * (morsel_set_memory_manager on an instance of its own), alternating.
 * - populate: mmap(MAP_PRIVATE | MAP_ANONYMOUS) LEN bytes and write one
 *   byte in every 4 KiB page: ms.  "linux-base"/"morsel-base" with base
 *   pages (MADV_NOHUGEPAGE; the instance huge=never), "linux-huge"/
 *   "morsel-huge" with 2 MiB pages (MADV_HUGEPAGE under THP's madvise
 *   mode; the instance huge=always, whose process mappings are still
 *   4 KiB at a time: docs/design.md).  Under TCG a TLB miss costs what
 *   the emulator's soft TLB makes it cost: say so beside the numbers.
 * - fork: a process holding LEN bytes of written private memory forks;
 *   ms from fork() to its return in the parent (the child exits at once).
 *   "linux-fork" copies the page tables; "morsel-fork" clones the file
 *   (O(PTE tables)) and zaps the parent's PTEs (O(pages)).
 * - "mounted-base", "mounted-huge", "mounted-fork": the same with the
 *   instance's anon=mounted (module/anonmnt.c): each 2 MiB is one PMD
 *   entry of the process, so the fork clears O(2 MiB) entries.
 *
 * usage: mm [--quick]   (LEN: 4 GiB, or 64 MiB with --quick; 3 samples)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define MMDIR	"/tmp/bench-mm"

static uint64_t len;

static void write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(s, f) < 0 || fclose(f))
		die(path, errno ? errno : EIO);
}

static void mount_mm(const char *huge, const char *anon)
{
	char opts[80];

	mkdir(MMDIR, 0755);
	umount2(MMDIR, MNT_DETACH);
	snprintf(opts, sizeof(opts), "size=%lluM,huge=%s,anon=%s",
		 (unsigned long long)(len / (1 << 20)) * 2 + 64, huge, anon);
	if (mount("none", MMDIR, "morselfs", 0, opts))
		die("mount " MMDIR, errno);
}

static char *populate(int huge)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t i;

	if (p == MAP_FAILED)
		die("mmap", errno);
	madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	for (i = 0; i < len; i += 4096)
		p[i] = 1;
	return p;
}

/* In a child: with @morsel the memory manager, time @what; write ms. */
static double sample(int morsel, int huge, int what)
{
	int pfd[2];
	double ms = -1;
	pid_t pid;

	if (pipe(pfd))
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		double t0, t;
		int st, err;
		pid_t c;
		char *p;

		if (morsel) {
			err = morsel_set_memory_manager(MMDIR);
			if (err)
				die("morsel_set_memory_manager", -err);
		}
		if (!what) {		/* populate */
			t0 = now_ms();
			p = populate(huge);
			t = now_ms() - t0;
		} else {		/* fork */
			p = populate(0);
			t0 = now_ms();
			c = fork();
			if (!c)
				_exit(0);
			t = now_ms() - t0;
			if (c < 0 || waitpid(c, &st, 0) != c)
				_exit(3);
		}
		(void)p;
		if (write(pfd[1], &t, sizeof(t)) != sizeof(t))
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &ms, sizeof(ms)) != sizeof(ms))
		die("sample", EIO);
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return ms;
}

int main(int argc, char **argv)
{
	int quick = argc > 1 && !strcmp(argv[1], "--quick"), i;
	unsigned long long mib;

	len = quick ? 64ULL << 20 : 4ULL << 30;
	mib = len >> 20;
	write_file("/sys/kernel/mm/transparent_hugepage/enabled", "madvise");
	for (i = 0; i < 3; i++) {
		mount_mm("never", "paged");
		emit("mm", "linux-base", mib, i, "ms", sample(0, 0, 0));
		emit("mm", "morsel-base", mib, i, "ms", sample(1, 0, 0));
		emit("mm", "linux-fork", mib, i, "ms", sample(0, 0, 1));
		emit("mm", "morsel-fork", mib, i, "ms", sample(1, 0, 1));
		mount_mm("never", "mounted");
		emit("mm", "mounted-base", mib, i, "ms", sample(1, 0, 0));
		emit("mm", "mounted-fork", mib, i, "ms", sample(1, 0, 1));
		mount_mm("always", "paged");
		emit("mm", "linux-huge", mib, i, "ms", sample(0, 1, 0));
		emit("mm", "morsel-huge", mib, i, "ms", sample(1, 1, 0));
		mount_mm("always", "mounted");
		emit("mm", "mounted-huge", mib, i, "ms", sample(1, 1, 0));
		fflush(stdout);
	}
	umount2(MMDIR, MNT_DETACH);
	return 0;
}
