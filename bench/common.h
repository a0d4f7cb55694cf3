/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the benchmark programs in bench/. */
#ifndef MORSEL_BENCH_COMMON_H
#define MORSEL_BENCH_COMMON_H

#include <errno.h>	/* program_invocation_short_name (_GNU_SOURCE) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Print "<program>: @what: strerror(@err)" and exit 1. */
static inline void die(const char *what, int err)
{
	fprintf(stderr, "%s: %s: %s\n", program_invocation_short_name, what,
		strerror(err));
	exit(1);
}

/*
 * One raw sample for bench/report:
 * csv,<bench>,<variant>,<param>,<iteration>,<metric>,<value>
 */
static inline void emit(const char *bench, const char *variant,
			unsigned long long param, int iter, const char *metric,
			double value)
{
	printf("csv,%s,%s,%llu,%d,%s,%.6f\n", bench, variant, param, iter,
	       metric, value);
}

/* A file of @len bytes (a multiple of 1 MiB) at @path, every byte @c. */
static inline void fill_file(const char *path, unsigned long long len, char c)
{
	static char buf[1 << 20];
	unsigned long long off;
	int fd;

	memset(buf, c, sizeof(buf));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die(path, errno);
	for (off = 0; off < len; off += sizeof(buf))
		if (pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
			die(path, errno ? errno : EIO);
	close(fd);
}

/* A morselfs counter (/sys/fs/morselfs/@name: pages, tables, morsels, mounts). */
static inline long morselfs_counter(const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/fs/morselfs/%s", name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%ld", &v) != 1)
		die(path, EIO);
	fclose(f);
	return v;
}

#endif
