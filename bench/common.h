/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by the benchmark programs in bench/. */
#ifndef MORSEL_BENCH_COMMON_H
#define MORSEL_BENCH_COMMON_H

#include <errno.h>	/* program_invocation_short_name (_GNU_SOURCE) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
