/* SPDX-License-Identifier: GPL-2.0 */
/*
 * morsel-cached's two halves: the index of cached files (index.c) and the
 * service around it (morsel-cached.c: options, socket, connections,
 * signals).  Locking: index.c's functions take the index lock themselves;
 * log_msg() may be called from any thread (one write(2) per line).
 */
#ifndef MORSEL_CACHED_H
#define MORSEL_CACHED_H

#include <stdint.h>

#include "cache_proto.h"

/* The default --dir: a morselfs mount (see morsel-cached.service). */
#define MORSEL_CACHED_DIR	"/run/morsel-cache"

extern int verbose;
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Who asked (for the log only). */
struct peer {
	int pid, uid;
};

/*
 * Take over the cache directory @dirfd (on morselfs, 0700, ours): index
 * the files a previous run left there, then evict down to @budget.
 */
int index_init(int dirfd, uint64_t budget);
/*
 * The GET request: the file open as @srcfd.  Returns a new O_RDONLY fd of
 * its morsel and fills @rep's size, extent, order and flags, or -errno.
 */
int index_get(int srcfd, const struct peer *who,
	      struct morsel_cache_reply *rep);
/* Fill @rep's counters (STATS). */
void index_stats(struct morsel_cache_reply *rep);
/*
 * Shutting down: loads in progress stop at their next chunk; waits up to
 * @timeout_ms for them.  Returns how many are still running.
 */
int index_stop(int timeout_ms);

#endif /* MORSEL_CACHED_H */
