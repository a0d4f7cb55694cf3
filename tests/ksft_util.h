/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the kselftest-harness suites (safety_test, errors_test,
 * fs_test):
 * paths in the suite's morselfs, fresh morsels, running an access in a
 * child to see which signal it gets, and writing a control file.  No locking: each TEST is a process.
 */
#ifndef MORSEL_KSFT_UTIL_H
#define MORSEL_KSFT_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#endif /* MORSEL_KSFT_UTIL_H */
