/* SPDX-License-Identifier: GPL-2.0 */
/*
 * morsel-cached's two halves: the index of cached files (index.c) and the
 * service around it (morsel-cached.c: options, socket, connections,
 * signals).  Locking: index.c's functions take the index lock themselves;
 * log_msg() may be called from any thread (one write(2) per line); the
 * configuration is written once by main() before index_init() and only
 * read afterwards.
 */
#ifndef MORSEL_CACHED_H
#define MORSEL_CACHED_H

#include <stdint.h>

#include "cache_proto.h"

/* The default --dir: a morselfs mount (see morsel-cached.service). */
#define MORSEL_CACHED_DIR	"/run/morsel-cache"
/* File system types refused at most (--refuse-fs, FUSE always). */
#define MAX_REFUSE_FS		16
/* --load-threads at most */
#define MAX_LOAD_THREADS	64

extern int verbose;
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Who asked: SO_PEERCRED of the connection (-1 if unknown). */
struct peer {
	int pid, uid;
};

/* The index's limits (morsel-cached(8) describes each option). */
struct cache_config {
	uint64_t budget;	/* --budget: pages and tables of all morsels */
	uint64_t user_budget;	/* --user-budget: of one uid's loads (not 0) */
	uint64_t min_size;	/* --min-size: smaller files are refused */
	uint64_t max_age;	/* --max-age, seconds unused; 0: no limit */
	unsigned long refuse_fs[MAX_REFUSE_FS];	/* f_type values */
	int n_refuse_fs;
	int load_threads;	/* --load-threads: reads in flight per load */
};

/*
 * Take over the cache directory @dirfd (on morselfs, 0700, ours): index
 * the files a previous run left there (what cannot be indexed is counted
 * until nothing holds it, then removed), then evict down to the budget.
 * 0 or -errno.
 */
int index_init(int dirfd, const struct cache_config *cfg);
/*
 * The GET request: the file open as @srcfd.  Returns a new O_RDONLY fd of
 * its morsel and fills @rep's size, extent, order and flags, or -errno.
 * With an fd, *@sent is to be passed to index_sent() once the reply is
 * sent and that fd closed (until then the entry counts as in use).
 */
int index_get(int srcfd, const struct peer *who,
	      struct morsel_cache_reply *rep, void **sent);
void index_sent(void *sent);
/*
 * Fill the morsel @fd (resized to @size) from @src in parallel, around the
 * page cache where the source allows (*@direct).  0 or -errno.
 */
int index_fill(int fd, int src, uint64_t size, int *direct);
/* The same into a new O_TMPFILE (0600) of directory @dir: its fd or -errno. */
int index_fill_new(int dir, int src, uint64_t size, int *direct);

/*
 * The shared pool (pool.c, --pool DIR): pool_init() once before serving;
 * pool_get() returns a read-only fd of @src's pool file, loading it into
 * the pool on the publisher (*@loaded), or -errno (-ENOENT: not in a
 * reader's pool: the local cache serves).
 */
int pool_init(const char *dir, uint64_t wait_ms);
int pool_on(void);
int pool_get(int src, struct morsel_cache_reply *rep, int *loaded);
/*
 * Memory pressure (pressure.c): evict least recently used files that
 * nothing holds until @need bytes are freed or none is left; returns the
 * bytes freed, *@n the files evicted.
 */
uint64_t index_shrink(uint64_t need, unsigned int *n);

/* The pressure watch (morsel-cached(8): --pressure, --pressure-free). */
struct pressure_config {
	uint64_t stall_us, window_us;	/* the PSI trigger; 0: no watch */
	uint64_t free_bytes;		/* the floor, or else ... */
	unsigned int free_permille;	/* ... this share of each domain */
};
/* Start the watching thread (none if window_us is 0); 0 or -errno. */
int pressure_start(const struct pressure_config *pc);
void pressure_stop(void);

/* Fill @rep's counters (STATS). */
void index_stats(struct morsel_cache_reply *rep);
/*
 * Shutting down: loads in progress stop at their next chunk; waits up to
 * @timeout_ms for them.  Returns how many are still running.
 */
int index_stop(int timeout_ms);

#endif /* MORSEL_CACHED_H */
