// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-tierd: a tiering policy for morsels on a machine with a fast
 * (CPU) node and a slow (CPU-less, CXL-like) one, in the spirit of TPP:
 * keep the hottest pages of a set of files on the fast node, within a
 * budget of fast memory, and the rest on the slow one.
 *
 *   morsel-tierd [--fast N] [--slow N] --budget SIZE [--interval MS]
 *                [--rounds K] [--tick] [--quiet] FILE...
 *
 * Every round (every --interval milliseconds, default 1000; with --tick
 * whenever a byte arrives on standard input, for tests and benchmarks):
 * 1. One MORSEL_IOC_ACCESSED with MORSEL_ACCESSED_CLEAR per file: which
 *    pages any process touched through a shared mapping since the last
 *    round (one scan of the morsel's own leaves covers every mapper).
 * 2. Each page's hotness ages: h = h / 2, plus 128 if it was accessed;
 *    so the last rounds weigh most (a page touched every round stays at
 *    255, one never touched again halves to 0 in 8 rounds).
 * 3. The budget's worth of the hottest populated pages, over all files
 *    (hotness above a threshold found from a histogram of the 256
 *    values; among equals, files in command-line order and pages in
 *    file order), is the fast set.  A page of the last round's fast set
 *    ranks STICKY (32) higher: pages near the threshold do not swap
 *    places every round (a round sees only touched or not).  Pages that
 *    were never accessed (hotness 0) stay out of it.
 * 4. Per file, one MORSEL_IOC_MIGRATE with a bitmap moves the pages out
 *    of the fast set to the slow node (demotion first, making room), one
 *    moves the fast set to the fast node; the kernel leaves pages that
 *    are where they should be.
 * After each round one line: round, pages on each node, pages promoted
 * and demoted, the round's scan and migration times in ms.
 *
 * Why a daemon and not a kernel thread: the kernel gives the mechanisms
 * (scan, migrate), each one call per file and round; the policy is
 * arithmetic over a byte per page, which user space can change without
 * a module, and its cost is the two ioctls (bench/numa measures them).
 * The kernel's counters (/sys/fs/morselfs/migrated, scanned) and morsel
 * stat's pages per node show what it did.
 *
 * Locking: none; one thread.  The files' sizes are read every round
 * (a file may grow or shrink between rounds; its hotness array follows).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cache_proto.h"	/* morsel_cache_parse_size (lib/parse_size.c) */

#define PG	4096ULL
#define STICKY	32

struct tfile {
	const char *path;
	int fd;
	uint64_t pages;		/* of the file now */
	uint8_t *hot;		/* per page */
	uint64_t *acc;		/* bitmap from ACCESSED */
	uint64_t *want;		/* bitmap: the fast set */
	uint64_t *rest;		/* bitmap: populated, not in the fast set */
	uint64_t *prev;		/* bitmap: the last round's fast set */
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(void)
{
	fprintf(stderr, "usage: morsel-tierd [--fast N] [--slow N] --budget SIZE [--interval MS]\n"
		"                    [--rounds K] [--tick] [--quiet] FILE...\n");
	exit(2);
}

static inline int bit(const uint64_t *bm, uint64_t i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

/* Where a page ranks: its hotness, and STICKY more if it is fast now. */
static inline unsigned int rank(const struct tfile *f, uint64_t p)
{
	unsigned int r = f->hot[p];

	if (r && bit(f->prev, p))
		r += STICKY;
	return r > 255 ? 255 : r;
}

/* The file's size now; its arrays follow it (new pages start cold). */
static int refresh(struct tfile *f)
{
	struct morsel_stat st;
	uint64_t pages, words, p;
	int err = morsel_stat(f->fd, &st);

	if (err)
		return err;
	pages = (st.size + PG - 1) / PG;
	if (pages != f->pages) {
		words = (pages + 63) / 64 + 1;
		f->hot = realloc(f->hot, pages + 1);
		f->acc = realloc(f->acc, words * 8);
		f->want = realloc(f->want, words * 8);
		f->rest = realloc(f->rest, words * 8);
		f->prev = realloc(f->prev, words * 8);
		if (!f->hot || !f->acc || !f->want || !f->rest || !f->prev)
			return -ENOMEM;
		if (pages > f->pages) {
			memset(f->hot + f->pages, 0, pages - f->pages);
			for (p = f->pages; p < pages; p++)	/* not fast */
				f->prev[p / 64] &= ~(1ULL << (p % 64));
		}
		f->pages = pages;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int fast = 0, slow = 1, tick = 0, quiet = 0, nf = 0, i, err;
	uint64_t budget = 0, interval = 1000, rounds = 0, round, p, n;
	uint64_t hist[256], taken, promoted, demoted, on[2];
	struct tfile *files;
	double t0, scan_ms, move_ms;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--fast") && i + 1 < argc)
			fast = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--slow") && i + 1 < argc)
			slow = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--budget") && i + 1 < argc) {
			if (morsel_cache_parse_size(argv[++i], &budget))
				usage();
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
			interval = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--tick"))
			tick = 1;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = 1;
		else
			usage();
	}
	if (i == argc || !budget || fast < 0 || slow < 0 || fast == slow ||
	    fast >= MORSEL_MAX_NODES || slow >= MORSEL_MAX_NODES)
		usage();
	budget /= PG;
	files = calloc(argc - i, sizeof(*files));
	if (!files)
		return 1;
	for (; i < argc; i++, nf++) {
		files[nf].path = argv[i];
		files[nf].fd = morsel_open(argv[i], O_RDWR);
		if (files[nf].fd < 0) {
			fprintf(stderr, "morsel-tierd: %s: %s\n", argv[i], strerror(-files[nf].fd));
			return 1;
		}
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (round = 1; !stop && (!rounds || round <= rounds); round++) {
		if (tick) {
			char c;

			if (read(0, &c, 1) != 1)
				break;
		} else if (round > 1) {
			usleep(interval * 1000);
		}
		/* 1 and 2: scan, age. */
		memset(hist, 0, sizeof(hist));
		t0 = now_ms();
		for (i = 0; i < nf; i++) {
			struct tfile *f = &files[i];

			err = refresh(f);
			if (!err && f->pages)
				err = morsel_accessed(f->fd, 0, f->pages * PG, f->acc, 1,
						      NULL, NULL);
			if (err) {
				fprintf(stderr, "morsel-tierd: %s: %s\n", f->path, strerror(-err));
				return 1;
			}
			for (p = 0; p < f->pages; p++) {
				f->hot[p] = f->hot[p] / 2 + (bit(f->acc, p) ? 128 : 0);
				hist[rank(f, p)]++;
			}
		}
		scan_ms = now_ms() - t0;
		/* 3: the lowest hotness still (partly) in the fast set. */
		for (n = 255, taken = 0; n > 0 && taken + hist[n] <= budget; n--)
			taken += hist[n];
		/* Pages at hotness n fill what is left, in order. */
		taken = budget - taken;
		t0 = now_ms();
		promoted = demoted = 0;
		for (i = 0; i < nf; i++) {
			struct tfile *f = &files[i];
			uint64_t words = (f->pages + 63) / 64;
			struct morsel_migrate r;

			if (!f->pages)
				continue;
			memset(f->want, 0, words * 8);
			memset(f->rest, 0, words * 8);
			for (p = 0; p < f->pages; p++) {
				unsigned int r = rank(f, p);
				int in = r > n || (r == n && n > 0 && taken && taken--);

				if (in)
					f->want[p / 64] |= 1ULL << (p % 64);
				else
					f->rest[p / 64] |= 1ULL << (p % 64);
			}
			err = morsel_migrate_bitmap(f->fd, 0, f->pages * PG, f->rest, slow, &r);
			if (!err) {
				demoted += r.moved;
				err = morsel_migrate_bitmap(f->fd, 0, f->pages * PG, f->want,
							    fast, &r);
			}
			if (!err)
				promoted += r.moved;
			memcpy(f->prev, f->want, words * 8);
			/* Shrunk since the scan: next round sees its size. */
			if (err && err != -EINVAL) {
				fprintf(stderr, "morsel-tierd: %s: migrate: %s\n", f->path,
					strerror(-err));
				return 1;
			}
		}
		move_ms = now_ms() - t0;
		on[0] = on[1] = 0;
		for (i = 0; i < nf; i++) {
			uint64_t pages[MORSEL_MAX_NODES];

			if (!morsel_node_pages(files[i].fd, 0, 0, pages)) {
				on[0] += pages[fast];
				on[1] += pages[slow];
			}
		}
		if (!quiet)
			printf("round %" PRIu64 ": fast %" PRIu64 " slow %" PRIu64
			       " promoted %" PRIu64 " demoted %" PRIu64
			       " scan_ms %.3f move_ms %.3f\n", round, on[0], on[1],
			       promoted, demoted, scan_ms, move_ms);
	}
	return 0;
}
