/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers shared by bench/demo.c and bench/bench.c. */
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

#endif
