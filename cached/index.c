// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-cached's index: which files are cached, loading them into
 * morsels, the memory budget and LRU eviction, stale entries.
 *
 * One morsel per file, of the smallest order that holds it, in the cache
 * directory under a name that encodes the source's identity (device,
 * inode, size, mtime), so a restarted daemon finds its cache again
 * (index_init).  A load builds the morsel as an O_TMPFILE and links it in
 * only when it is complete and the source did not change meanwhile, so a
 * crash mid-load leaves nothing behind.
 *
 * Locking: one mutex (lock) guards everything below: both lists, every
 * entry's fields, the counters.  A load runs without it: its entry is
 * LOADING (with its memory reserved in the budget) and only the loading
 * thread touches the morsel; other requests for the same file wait on the
 * condition variable (changed), broadcast whenever a load ends.  An entry
 * is freed only when it is on no list and no thread holds a reference
 * (refs).  System calls under the lock are quick ones on morselfs (openat,
 * unlinkat, close, the STAT ioctl), never on a client's file, so a client
 * whose file stalls (say on FUSE) blocks only its own thread and the
 * waiters for that same file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cached.h"

#define PAGE		4096ULL
#define CHUNK		(8ULL << 20)	/* bytes per pread of a load */
#define NAME_MAX_LEN	128

struct ident {
	uint64_t dev, ino, size;
	int64_t sec;
	long nsec;
};

enum state { LOADING, READY, FAILED };
enum where { NOWHERE, LIVE, RETIRED };

struct entry {
	struct entry *prev, *next;
	struct ident id;
	char name[NAME_MAX_LEN];
	enum state state;
	enum where where;
	int err;		/* FAILED: the load's errno */
	int fd;			/* O_RDONLY, once READY; -1 before */
	int refs;		/* threads using the entry outside the lock */
	unsigned int order;
	uint64_t bytes;		/* pages + tables; LOADING: the estimate */
	uint64_t last_use;	/* LRU clock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct entry live;	/* cached (or loading); list head */
static struct entry retired;	/* stale but still mapped; list head */
static int dirfd_ = -1;
static uint64_t budget, clock_;
static uint64_t hits, loads, evictions, refusals;
static int loading;
static volatile int stopping;

static void list_add(struct entry *head, struct entry *e, enum where w)
{
	e->next = head;
	e->prev = head->prev;
	head->prev->next = e;
	head->prev = e;
	e->where = w;
}

static void list_del(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
	e->where = NOWHERE;
}

static void entry_put(struct entry *e)
{
	if (e->where == NOWHERE && !e->refs) {
		if (e->fd >= 0)
			close(e->fd);
		free(e);
	}
}

static void format_name(const struct ident *id, char *buf, size_t len)
{
	snprintf(buf, len, "c.%" PRIx64 ".%" PRIx64 ".%" PRIu64 ".%" PRId64 ".%09ld",
		 id->dev, id->ino, id->size, id->sec, id->nsec);
}

/* The identity a name encodes; -1 unless the name is exactly canonical. */
static int parse_name(const char *name, struct ident *id)
{
	char again[NAME_MAX_LEN];

	if (sscanf(name, "c.%" SCNx64 ".%" SCNx64 ".%" SCNu64 ".%" SCNd64 ".%ld",
		   &id->dev, &id->ino, &id->size, &id->sec, &id->nsec) != 5 ||
	    id->nsec < 0 || id->nsec > 999999999)
		return -1;
	format_name(id, again, sizeof(again));
	return strcmp(again, name) ? -1 : 0;
}

static void ident_of(const struct stat *st, struct ident *id)
{
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->size = st->st_size;
	id->sec = st->st_mtim.tv_sec;
	id->nsec = st->st_mtim.tv_nsec;
}

static int same_file(const struct ident *a, const struct ident *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

static int same_ident(const struct ident *a, const struct ident *b)
{
	return same_file(a, b) && a->size == b->size && a->sec == b->sec &&
	       a->nsec == b->nsec;
}

static uint64_t morsel_bytes(int fd, uint64_t *mappings)
{
	struct morsel_stat st;
	uint64_t b;
	int i;

	if (morsel_stat(fd, &st)) {
		if (mappings)
			*mappings = 0;
		return 0;
	}
	b = st.pages;
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		b += st.tables[i];
	if (mappings)
		*mappings = st.mappings;
	return b * PAGE;
}

/* What a morsel of @size will take, populated: pages and tables. */
static uint64_t estimate(uint64_t size, unsigned int order)
{
	uint64_t pages = (size + PAGE - 1) / PAGE, b = pages, span = PAGE;
	unsigned int level;

	for (level = 0; level < order; level++) {
		span *= 512;	/* bytes one table of this level covers */
		b += (size + span - 1) / span;
	}
	return b * PAGE;
}

static uint64_t used(void)
{
	struct entry *e;
	uint64_t sum = 0;

	for (e = live.next; e != &live; e = e->next)
		sum += e->bytes;
	for (e = retired.next; e != &retired; e = e->next)
		sum += e->bytes;
	return sum;
}

/* Close the retired morsels that nothing maps any more. */
static void reap_retired(void)
{
	struct entry *e, *next;
	uint64_t maps;

	for (e = retired.next; e != &retired; e = next) {
		next = e->next;
		morsel_bytes(e->fd, &maps);
		if (maps)
			continue;
		if (verbose)
			log_msg("closed stale %s", e->name);
		list_del(e);
		entry_put(e);
	}
}

/* A READY entry leaves the directory: @stale keeps it while mapped. */
static void drop(struct entry *e, int stale)
{
	if (unlinkat(dirfd_, e->name, 0) && errno != ENOENT)
		log_msg("unlink %s: %s", e->name, strerror(errno));
	list_del(e);
	if (stale)
		list_add(&retired, e, RETIRED);
	else
		entry_put(e);
}

/*
 * Evict least recently used entries that nothing maps until @need more
 * bytes fit in the budget.  -ENOSPC if they cannot.
 */
static int make_room(uint64_t need)
{
	struct entry *e, *lru;
	uint64_t maps;

	reap_retired();
	while (used() + need > budget) {
		lru = NULL;
		for (e = live.next; e != &live; e = e->next) {
			if (e->state != READY || e->refs)
				continue;
			if (lru && lru->last_use <= e->last_use)
				continue;
			morsel_bytes(e->fd, &maps);
			if (!maps)
				lru = e;
		}
		if (!lru)
			return -ENOSPC;
		log_msg("evict %s (%" PRIu64 " KiB)", lru->name, lru->bytes >> 10);
		evictions++;
		drop(lru, 0);
	}
	return 0;
}

/*
 * Build the morsel of @e from @src (no lock held): an O_TMPFILE, populated
 * in one call, mounted here read-write, filled by large preads, linked in
 * under its name once complete and unchanged.  Returns an O_RDONLY fd of
 * it, or -errno.
 */
static int load(struct entry *e, int src)
{
	uint64_t size = e->id.size, len = (size + PAGE - 1) & ~(PAGE - 1);
	uint64_t off = 0, want;
	char proc[64];
	struct ident now;
	struct stat st;
	size_t extent;
	int fd, rfd = -1, err = 0, tries;
	ssize_t n;
	char *p;

	fd = openat(dirfd_, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0400);
	if (fd < 0)
		return -errno;
	err = morsel_resize(fd, size);
	if (!err)
		err = morsel_populate(fd, 0, len);
	if (!err)
		err = morsel_map(fd, NULL, PROT_READ | PROT_WRITE, 0,
				 (void **)&p, &extent);
	if (err)
		goto out;
	posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
	while (off < size && !err) {
		if (stopping) {
			err = -ECANCELED;
			break;
		}
		/*
		 * Whole pages (an O_DIRECT descriptor needs them; the last
		 * page is populated): the read stops at the end of file.
		 */
		want = len - off < CHUNK ? len - off : CHUNK;
		n = pread(src, p + off, want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		else if (n == 0)
			err = -EIO;	/* shorter than it said */
		else
			off += n;
	}
	posix_fadvise(src, 0, 0, POSIX_FADV_NORMAL);
	munmap(p, extent);
	if (err)
		goto out;
	if (fstat(src, &st)) {
		err = -errno;
		goto out;
	}
	ident_of(&st, &now);
	if (!same_ident(&now, &e->id)) {
		err = -ESTALE;
		goto out;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (tries = 0; tries < 2; tries++) {
		if (!linkat(AT_FDCWD, proc, dirfd_, e->name, AT_SYMLINK_FOLLOW))
			break;
		err = -errno;
		/* Not ours (the index has no such entry): replace it. */
		if (err != -EEXIST || unlinkat(dirfd_, e->name, 0))
			goto out;
		err = 0;
	}
	if (err)
		goto out;
	rfd = openat(dirfd_, e->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (rfd < 0) {
		err = -errno;
		unlinkat(dirfd_, e->name, 0);
	}
out:
	close(fd);
	return err ? err : rfd;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* A new fd of a READY entry for a client; under the lock. */
static int open_entry(struct entry *e)
{
	int fd = openat(dirfd_, e->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	return fd < 0 ? -errno : fd;
}

/* Check the client's descriptor; its identity in @id. */
static int check_source(int src, struct ident *id)
{
	struct statfs sfs;
	struct stat st;
	int fl = fcntl(src, F_GETFL);

	if (fl < 0)
		return -errno;
	/* The proof of access: a descriptor open for reading. */
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return -EACCES;
	if (fstat(src, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || st.st_size <= 0)
		return -EINVAL;
	if (fstatfs(src, &sfs))
		return -errno;
	if (sfs.f_type == MORSELFS_MAGIC)
		return -EINVAL;
	ident_of(&st, id);
	return 0;
}

int index_get(int src, const struct peer *who, struct morsel_cache_reply *rep)
{
	struct entry *e, *next, *found;
	struct timespec t0;
	struct ident id;
	int order, err, fd;

	err = check_source(src, &id);
	if (err)
		goto refuse_unlocked;
	order = morsel_order_for_size(id.size);
	if (order < 0) {
		err = order;
		goto refuse_unlocked;
	}
	pthread_mutex_lock(&lock);
	found = NULL;
	for (e = live.next; e != &live; e = next) {
		next = e->next;
		if (same_ident(&e->id, &id))
			found = e;
		else if (same_file(&e->id, &id) && e->state == READY &&
			 !e->refs) {
			/* The file changed since: a new load, the old goes. */
			log_msg("stale %s", e->name);
			drop(e, 1);
		}
	}
	e = found;
	if (e && e->state == LOADING) {
		e->refs++;
		while (e->state == LOADING)
			pthread_cond_wait(&changed, &lock);
		e->refs--;
		if (e->state == FAILED) {
			err = -e->err;
			entry_put(e);
			goto refuse;
		}
		if (e->where != LIVE) {
			err = -ESTALE;	/* replaced right after its load */
			entry_put(e);
			goto refuse;
		}
		rep->flags = 0;
		goto reply;
	}
	if (e) {
		rep->flags = MORSEL_CACHE_HIT;
		hits++;
		if (verbose)
			log_msg("hit %s for pid %d uid %d", e->name, who->pid,
				who->uid);
		goto reply;
	}

	/* A miss: reserve the memory, load without the lock. */
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto refuse;
	}
	e->id = id;
	e->fd = -1;
	e->order = order;
	e->state = LOADING;
	e->bytes = estimate(id.size, order);
	format_name(&id, e->name, sizeof(e->name));
	err = e->bytes > budget ? -ENOSPC : make_room(e->bytes);
	if (err) {
		free(e);
		goto refuse;
	}
	list_add(&live, e, LIVE);
	e->refs++;
	loading++;
	pthread_mutex_unlock(&lock);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	fd = load(e, src);

	pthread_mutex_lock(&lock);
	e->refs--;
	loading--;
	if (fd < 0) {
		e->state = FAILED;
		e->err = -fd;
		err = fd;
		list_del(e);
		log_msg("load %s for pid %d uid %d failed: %s", e->name,
			who->pid, who->uid, strerror(-fd));
		pthread_cond_broadcast(&changed);
		entry_put(e);
		goto refuse;
	}
	e->fd = fd;
	e->bytes = morsel_bytes(fd, NULL);
	e->state = READY;
	loads++;
	pthread_cond_broadcast(&changed);
	log_msg("load %s for pid %d uid %d: order %u, %" PRIu64 " KiB in %.1f ms",
		e->name, who->pid, who->uid, e->order, e->bytes >> 10,
		ms_since(&t0));
	rep->flags = 0;
reply:
	e->last_use = ++clock_;
	fd = open_entry(e);
	if (fd < 0) {
		err = fd;
		goto refuse;
	}
	rep->size = e->id.size;
	rep->order = e->order;
	rep->extent = morsel_order_extent(e->order);
	pthread_mutex_unlock(&lock);
	return fd;

refuse_unlocked:
	pthread_mutex_lock(&lock);
refuse:
	refusals++;
	pthread_mutex_unlock(&lock);
	if (verbose || (err != -EACCES && err != -EINVAL))
		log_msg("refused pid %d uid %d: %s", who->pid, who->uid,
			strerror(-err));
	return err;
}

void index_stats(struct morsel_cache_reply *rep)
{
	struct entry *e;

	pthread_mutex_lock(&lock);
	reap_retired();
	rep->entries = 0;
	for (e = live.next; e != &live; e = e->next)
		rep->entries += e->state == READY;
	rep->bytes = used();
	rep->budget = budget;
	rep->hits = hits;
	rep->loads = loads;
	rep->evictions = evictions;
	rep->refusals = refusals;
	pthread_mutex_unlock(&lock);
}

int index_stop(int timeout_ms)
{
	struct timespec dl;
	int left;

	stopping = 1;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&lock);
	while (loading && pthread_cond_timedwait(&changed, &lock, &dl) == 0)
		;
	left = loading;
	pthread_mutex_unlock(&lock);
	return left;
}

static int by_age(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a;
	const struct entry *y = *(struct entry *const *)b;

	return x->last_use < y->last_use ? -1 : x->last_use > y->last_use;
}

int index_init(int dfd, uint64_t limit)
{
	struct entry **found = NULL, *e, **grown;
	size_t n = 0, room = 0, i;
	struct dirent *d;
	struct ident id;
	struct stat st;
	DIR *dir;
	int fd, err;

	dirfd_ = dfd;
	budget = limit;
	live.next = live.prev = &live;
	retired.next = retired.prev = &retired;
	fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((d = readdir(dir))) {
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (parse_name(d->d_name, &id)) {
			log_msg("ignoring %s: not a cache file", d->d_name);
			continue;
		}
		fd = openat(dfd, d->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != id.size || st.st_uid != geteuid() ||
		    !(e = calloc(1, sizeof(*e)))) {
			log_msg("ignoring %s: not a complete cache file",
				d->d_name);
			if (fd >= 0)
				close(fd);
			continue;
		}
		e->id = id;
		e->fd = fd;
		e->state = READY;
		e->order = morsel_order_for_size(id.size);
		e->bytes = morsel_bytes(fd, NULL);
		format_name(&id, e->name, sizeof(e->name));	/* d_name */
		/* LRU order across restarts: when each was linked in. */
		e->last_use = (uint64_t)st.st_ctim.tv_sec * 1000000000ULL +
			      st.st_ctim.tv_nsec;
		if (n == room) {
			room = room ? 2 * room : 64;
			grown = realloc(found, room * sizeof(*found));
			if (!grown) {
				close(fd);
				free(e);
				break;
			}
			found = grown;
		}
		found[n++] = e;
	}
	closedir(dir);
	if (n)
		qsort(found, n, sizeof(*found), by_age);
	pthread_mutex_lock(&lock);
	for (i = 0; i < n; i++) {
		found[i]->last_use = ++clock_;
		list_add(&live, found[i], LIVE);
	}
	free(found);
	if (n)
		log_msg("indexed %zu cached files, %" PRIu64 " KiB", n,
			used() >> 10);
	if (used() > budget)
		make_room(0);
	pthread_mutex_unlock(&lock);
	return 0;
}
