/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space side of a persistent morselfs: open a device or an image
 * file, format it, check and repair it with module/pm_check.c.  Used by
 * `morsel mkfs`/`morsel fsck` and the crash tests.
 */
#ifndef MORSEL_TOOLS_PM_H
#define MORSEL_TOOLS_PM_H

#include <setjmp.h>
#include <stdio.h>
#include <sys/types.h>

#include "pm_check.h"

/* fsck(8) exit codes. */
#define PM_FSCK_OK		0
#define PM_FSCK_REPAIRED	1
#define PM_FSCK_UNCORRECTED	4
#define PM_FSCK_OPERATIONAL	8
#define PM_FSCK_USAGE		16

/**
 * struct pm_env - the user-space environment of pm_check.c
 * @out:       where reports go (NULL: nowhere).
 * @verbose:   report recovery actions and information too.
 * @stores:    metadata stores made through mpm_store() so far.
 * @crash_at:  when > 0, the store that would be number @crash_at is not
 *             made and mpm_store() longjmp()s to @crash: a crash after
 *             @crash_at - 1 stores.
 * @crash:     see @crash_at.
 */
struct pm_env {
	FILE *out;
	bool verbose;
	long long stores;
	long long crash_at;
	jmp_buf *crash;
};

extern struct pm_env pm_env;

/* Map PATH (a block device or a file) into @fs; 0 or -errno. */
int pm_open(const char *path, bool write, struct mpm_fs *fs);
/* Flush (when writable) and unmap. */
int pm_close(struct mpm_fs *fs);
/* Format @fs: an empty root directory with @mode, owned by @uid, @gid. */
void pm_mkfs(struct mpm_fs *fs, mode_t mode, uid_t uid, gid_t gid);
/* fsck(8) exit code for a finished walk (@err its return value). */
int pm_fsck_status(struct mpm_fs *fs, int err);
/* Print the walk's statistics on one line. */
void pm_print_stats(FILE *f, const char *name, struct mpm_fs *fs);

#endif /* MORSEL_TOOLS_PM_H */
