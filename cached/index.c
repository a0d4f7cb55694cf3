// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-cached's index: which files are cached, loading them into
 * morsels, the memory budget (global and per uid), LRU eviction, aging,
 * stale entries.
 *
 * One morsel per file, of the smallest order that holds it, in the cache
 * directory.  A file is known by a key nobody but the kernel can set
 * (struct ident: the mount, device and inode, size, mtime, *ctime*, birth
 * time and file handle, docs/cache.md "Identity").  The key travels with
 * the morsel in the extended attribute KEY_XATTR and the morsel is named
 * k.<sequence number>, so a restarted daemon finds its cache again
 * (index_init).  A load builds the morsel as an O_TMPFILE and links it in
 * only when it is complete and the source did not change meanwhile, so a
 * crash mid-load leaves nothing behind.
 *
 * The budget counts every morsel the daemon made until its pages are gone:
 * a morsel that a client holds (a descriptor, a mapping) is never evicted,
 * and one that must leave the index while held (a stale version, a file a
 * restart cannot index) is renamed r.<n> and stays counted until nothing
 * holds it, then it is removed.  Whether anything but the daemon holds a
 * morsel is asked of the kernel with a write lease (held(): F_SETLEASE
 * F_WRLCK fails with EAGAIN while any other open file description of the
 * file exists, and a mapping keeps its file description).  What leases
 * cannot see (an O_PATH descriptor keeping a removed morsel alive) the
 * cache file system's own count of pages does: the budget holds both
 * (fs_used).  The daemon keeps no descriptor of a morsel between requests.
 *
 * Locking: one mutex (lock) guards everything below: the hash table, the
 * LRU and retired lists, every entry's fields, the per-uid charges, the
 * counters.  A load runs without it: its entry is LOADING (in the hash
 * table, with its memory reserved in the budget) and only the loading
 * thread touches the morsel; other requests for the same file wait on the
 * condition variable (changed), broadcast whenever a load ends.  An entry
 * is freed only when it is in no table or list and no thread holds a
 * reference (refs): a waiter, or a thread sending a reply with the
 * entry's descriptor until index_sent().  Eviction waits (on changed) for
 * such a reply rather than take the daemon's own descriptor for a hold.
 * System calls under the lock are quick ones on morselfs (openat,
 * renameat, unlinkat, close, fcntl leases, futimens, fstatfs, the STAT
 * ioctl), never on a client's file, so a client whose file stalls blocks
 * only its own thread and the waiters for that same file.  next_seq is
 * atomic (the loaders take numbers without the lock).
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
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cached.h"

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE	0x00004000U	/* Linux 6.8 */
#endif

#define PAGE		4096ULL
#define CHUNK		(4ULL << 20)	/* bytes per read of a load */
#define NAME_MAX_LEN	128
/* A source with more unallocated bytes than this and ... */
#define SPARSE_SLACK	(1ULL << 20)
/* ... less than 1/SPARSE_RATIO of its size allocated is refused. */
#define SPARSE_RATIO	4
#define KEY_XATTR	"user.morsel-cached.key"
#define KEY_VERSION	2

/* struct ident.have */
#define HAVE_MNT_UNIQUE	0x1	/* mnt: STATX_MNT_ID_UNIQUE, never reused */
#define HAVE_MNT	0x2	/* mnt: STATX_MNT_ID (older kernels) */
#define HAVE_BTIME	0x4
#define HAVE_HANDLE	0x8	/* fh: name_to_handle_at (i_generation) */

/*
 * A source's identity.  Always zeroed before it is filled, and free of
 * padding, so that memcmp compares it.
 */
struct ident {
	uint32_t version, have;
	uint64_t mnt, dev, ino, size;
	int64_t mtime_sec, ctime_sec, btime_sec;
	uint32_t mtime_nsec, ctime_nsec, btime_nsec;
	int32_t fh_type;
	uint32_t fh_len, pad;
	unsigned char fh[MAX_HANDLE_SZ];
};
_Static_assert(sizeof(struct ident) == 216, "struct ident has padding");

/* KEY_XATTR of a cached morsel: its key and the uid it is charged to. */
struct record {
	struct ident id;
	uint32_t uid, reserved;
};

enum state { LOADING, READY, FAILED };
enum where { NOWHERE, LIVE, RETIRED };

struct entry {
	struct entry *prev, *next;	/* READY: the LRU; RETIRED: retired */
	struct entry *hnext;		/* LIVE: its hash chain */
	struct ident id;
	char name[NAME_MAX_LEN];	/* in the cache directory */
	enum state state;
	enum where where;
	int err;		/* FAILED: the load's errno */
	int refs;		/* threads using the entry outside the lock */
	unsigned int order;
	uint32_t uid;		/* charged to */
	uint64_t bytes;		/* pages + tables; LOADING: the estimate */
	struct timespec last_use;	/* CLOCK_REALTIME; kept as mtime */
};

/* One uid's share of the budget. */
struct user {
	uint32_t uid;
	uint64_t bytes;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct entry lru;	/* READY entries, least recently used first */
static struct entry retired;	/* out of the index, still held */
static struct entry **table;	/* LIVE entries (LOADING, READY) by file */
static size_t nbuckets, nlive;
static struct user *users;
static size_t nusers, users_room;
static struct cache_config cfg;
static int dirfd_ = -1;
static uint64_t used, n_ready, next_seq;
static uint64_t hits, loads, evictions, refusals;
static int loading;
static int leases_ok = 1;
static volatile int stopping;

/* ---- lists, the hash table, charges ---- */

static void list_init(struct entry *head)
{
	head->next = head->prev = head;
}

static void list_add_tail(struct entry *head, struct entry *e)
{
	e->next = head;
	e->prev = head->prev;
	head->prev->next = e;
	head->prev = e;
}

static void list_del(struct entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = NULL;
}

static size_t bucket_of(const struct ident *id, size_t n)
{
	uint64_t h = id->ino * 0x9e3779b97f4a7c15ULL;

	h ^= id->dev * 0xc2b2ae3d27d4eb4fULL;
	h ^= id->mnt * 0x165667b19e3779f9ULL;
	h ^= h >> 29;
	return (size_t)(h & (n - 1));
}

/* Twice the buckets when the chains get long (no harm if it fails). */
static void table_grow(void)
{
	size_t n = nbuckets * 2, i, b;
	struct entry **t, *e, *next;

	t = calloc(n, sizeof(*t));
	if (!t)
		return;
	for (i = 0; i < nbuckets; i++)
		for (e = table[i]; e; e = next) {
			next = e->hnext;
			b = bucket_of(&e->id, n);
			e->hnext = t[b];
			t[b] = e;
		}
	free(table);
	table = t;
	nbuckets = n;
}

static void hash_add(struct entry *e)
{
	size_t b;

	if (nlive >= 2 * nbuckets)
		table_grow();
	b = bucket_of(&e->id, nbuckets);
	e->hnext = table[b];
	table[b] = e;
	e->where = LIVE;
	nlive++;
}

static void hash_del(struct entry *e)
{
	struct entry **p = &table[bucket_of(&e->id, nbuckets)];

	while (*p && *p != e)
		p = &(*p)->hnext;
	if (*p) {
		*p = e->hnext;
		nlive--;
	}
	e->hnext = NULL;
	e->where = NOWHERE;
}

static struct user *user_of(uint32_t uid, int create)
{
	struct user *grown;
	size_t i;

	for (i = 0; i < nusers; i++)
		if (users[i].uid == uid)
			return &users[i];
	if (!create)
		return NULL;
	if (nusers == users_room) {
		grown = realloc(users, (users_room ? 2 * users_room : 16) *
				       sizeof(*users));
		if (!grown)
			return NULL;
		users = grown;
		users_room = users_room ? 2 * users_room : 16;
	}
	users[nusers].uid = uid;
	users[nusers].bytes = 0;
	return &users[nusers++];
}

static uint64_t user_bytes(uint32_t uid)
{
	struct user *u = user_of(uid, 0);

	return u ? u->bytes : 0;
}

/* Count @e's bytes in the budget and its uid's share (sign +1 or -1). */
static void charge(struct entry *e, int sign)
{
	struct user *u = user_of(e->uid, sign > 0);

	if (sign > 0) {
		used += e->bytes;
		if (u)
			u->bytes += e->bytes;
	} else {
		used -= e->bytes;
		if (u)
			u->bytes -= u->bytes < e->bytes ? u->bytes : e->bytes;
	}
}

static int64_t ns_between(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL +
	       (b->tv_nsec - a->tv_nsec);
}

/* A READY entry was used at @now: the LRU's tail. */
static void touch(struct entry *e, const struct timespec *now)
{
	e->last_use = *now;
	list_del(e);
	list_add_tail(&lru, e);
}

/* ---- names and keys ---- */

static void live_name(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "k.%016" PRIx64, seq);
}

/*
 * The kind of a name in the cache directory: 'k' (an entry), 'r' (a
 * retired morsel), 'c' (an entry of format 1, whose key lacks ctime:
 * never served again), or 0 (not the daemon's).  *@seq: its number.
 */
static int name_kind(const char *name, uint64_t *seq)
{
	char again[NAME_MAX_LEN];
	unsigned long long v;
	char *end;

	*seq = 0;
	if (!strncmp(name, "c.", 2))
		return 'c';
	if ((name[0] != 'k' && name[0] != 'r') || name[1] != '.' ||
	    strlen(name) != 18)
		return 0;
	errno = 0;
	v = strtoull(name + 2, &end, 16);
	if (errno || *end)
		return 0;
	snprintf(again, sizeof(again), "%c.%016llx", name[0], v);
	if (strcmp(again, name))
		return 0;
	*seq = v;
	return name[0];
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

static uint64_t morsel_bytes(int fd)
{
	struct morsel_stat st;
	uint64_t b;
	int i;

	if (morsel_stat(fd, &st))
		return 0;
	b = st.pages;
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		b += st.tables[i];
	return b * PAGE;
}

/*
 * The key of the file open as @fd, from statx and name_to_handle_at;
 * *@stx for the caller's other checks.  0 or -errno.
 */
static int key_of(int fd, struct ident *id, struct statx *stx)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	} h;
	int mnt_id;

	memset(id, 0, sizeof(*id));
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
		  STATX_BASIC_STATS | STATX_BTIME | STATX_MNT_ID_UNIQUE, stx))
		return -errno;
	id->version = KEY_VERSION;
	if (stx->stx_mask & STATX_MNT_ID_UNIQUE)
		id->have |= HAVE_MNT_UNIQUE;
	else if (stx->stx_mask & STATX_MNT_ID)
		id->have |= HAVE_MNT;
	if (id->have)
		id->mnt = stx->stx_mnt_id;
	id->dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
	id->ino = stx->stx_ino;
	id->size = stx->stx_size;
	id->mtime_sec = stx->stx_mtime.tv_sec;
	id->mtime_nsec = stx->stx_mtime.tv_nsec;
	id->ctime_sec = stx->stx_ctime.tv_sec;
	id->ctime_nsec = stx->stx_ctime.tv_nsec;
	if (stx->stx_mask & STATX_BTIME) {
		id->have |= HAVE_BTIME;
		id->btime_sec = stx->stx_btime.tv_sec;
		id->btime_nsec = stx->stx_btime.tv_nsec;
	}
	/* Not every file system has handles (nor every kernel: FHANDLE). */
	if (S_ISREG(stx->stx_mode)) {
		memset(&h, 0, sizeof(h));
		h.fh.handle_bytes = MAX_HANDLE_SZ;
		if (!name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH) &&
		    h.fh.handle_bytes <= MAX_HANDLE_SZ) {
			id->have |= HAVE_HANDLE;
			id->fh_type = h.fh.handle_type;
			id->fh_len = h.fh.handle_bytes;
			memcpy(id->fh, h.fh.f_handle, h.fh.handle_bytes);
		}
	}
	return 0;
}

/* The same file (mount, device, inode), maybe in another version. */
static int same_file(const struct ident *a, const struct ident *b)
{
	return a->mnt == b->mnt && a->dev == b->dev && a->ino == b->ino &&
	       (a->have & (HAVE_MNT_UNIQUE | HAVE_MNT)) ==
	       (b->have & (HAVE_MNT_UNIQUE | HAVE_MNT));
}

static int same_ident(const struct ident *a, const struct ident *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* ---- who holds a morsel ---- */

/*
 * Does anything but the daemon hold the morsel @name: a descriptor (a
 * client's, or one in flight in a socket), a mapping?  1 yes, 0 no (or the
 * file is gone).  A write lease is granted only when the lease taker's
 * open file description is the file's only one; it is given back at once.
 * Without leases (fs.leases-enable = 0) only mappings count.  Under the
 * lock.
 */
static int held(const char *name)
{
	struct morsel_stat st;
	int fd, r;

	fd = openat(dirfd_, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? 0 : 1;
	if (leases_ok) {
		if (!fcntl(fd, F_SETLEASE, F_WRLCK)) {
			fcntl(fd, F_SETLEASE, F_UNLCK);
			close(fd);
			return 0;
		}
		if (errno == EAGAIN) {
			close(fd);
			return 1;
		}
		log_msg("no leases (%s): a held descriptor no longer keeps a "
			"morsel in the budget, only a mapping does",
			strerror(errno));
		leases_ok = 0;
	}
	r = morsel_stat(fd, &st) ? 1 : st.mappings > 0;
	close(fd);
	return r;
}

/* Remove @e's morsel and forget it (out of every list, no refs). */
static void forget(struct entry *e)
{
	if (unlinkat(dirfd_, e->name, 0) && errno != ENOENT)
		log_msg("unlink %s: %s", e->name, strerror(errno));
	charge(e, -1);
	free(e);
}

/* A READY entry leaves the index (threads with a reference keep it). */
static void unindex(struct entry *e)
{
	hash_del(e);
	list_del(e);
	n_ready--;
}

/*
 * A READY entry that must not be served again (a newer version of its
 * file was asked for): removed if nothing holds it, else renamed r.<n>
 * and still counted until nothing does (reap_retired; a thread with a
 * reference lets go of it in index_sent or as a waiter, never frees it).
 */
static void retire(struct entry *e)
{
	char name[NAME_MAX_LEN];

	unindex(e);
	/* A reply with it in flight (refs) holds it too. */
	if (!e->refs && !held(e->name)) {
		forget(e);
		return;
	}
	snprintf(name, sizeof(name), "r.%016" PRIx64,
		 __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED));
	if (renameat(dirfd_, e->name, dirfd_, name)) {
		log_msg("rename %s: %s", e->name, strerror(errno));
		/* Still counted; its name is not served any more either. */
	} else {
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	e->where = RETIRED;
	list_add_tail(&retired, e);
}

/* Remove the retired morsels that nothing holds any more. */
static void reap_retired(void)
{
	struct entry *e, *next;

	for (e = retired.next; e != &retired; e = next) {
		next = e->next;
		if (e->refs || held(e->name))
			continue;
		if (verbose)
			log_msg("removed retired %s", e->name);
		list_del(e);
		e->where = NOWHERE;
		forget(e);
	}
}

/*
 * Entries unused for longer than --max-age go, unless something holds
 * them (then they are in use: they count as used now).
 */
static void age_out(const struct timespec *now)
{
	struct entry *e;
	uint64_t n = n_ready;

	if (!cfg.max_age)
		return;
	while (lru.next != &lru && n--) {
		e = lru.next;
		if (ns_between(&e->last_use, now) <=
		    (int64_t)cfg.max_age * 1000000000LL)
			break;
		if (e->refs || held(e->name)) {
			touch(e, now);
			continue;
		}
		log_msg("expired %s (unused for %" PRIu64 " s)", e->name,
			(uint64_t)(now->tv_sec - e->last_use.tv_sec));
		evictions++;
		unindex(e);
		forget(e);
	}
}

/*
 * The memory of the cache's file system in use: pages and tables of every
 * morsel in it, those the index no longer knows included.  A morsel whose
 * last holder is an O_PATH descriptor (a client can make one from its
 * descriptor through /proc/self/fd) takes no part in leases, so held()
 * says it is free; once removed, its pages live on until that descriptor
 * goes.  Counting the file system's use as well keeps the budget a bound.
 * 0 if the file system has no size limit.
 */
static uint64_t fs_used(void)
{
	struct statfs sfs;

	if (fstatfs(dirfd_, &sfs) || !sfs.f_blocks || sfs.f_bfree > sfs.f_blocks)
		return 0;
	return (uint64_t)(sfs.f_blocks - sfs.f_bfree) * sfs.f_bsize;
}

static int over_budget(uint64_t need)
{
	uint64_t fs = fs_used();

	return (fs > used ? fs : used) + need > cfg.budget;
}

/* uid 0 has no share of its own: it is bound by the budget only. */
static int over_share(uint32_t uid, uint64_t need)
{
	return uid && user_bytes(uid) + need > cfg.user_budget;
}

/*
 * Evict least recently used entries that nothing holds until @need more
 * bytes fit in the budget and in @uid's share (then only @uid's own
 * entries go).  Each entry is looked at once: one that is held counts as
 * used now and moves to the LRU's tail.  -ENOSPC or -EDQUOT if they do
 * not fit.  May wait (dropping the lock) for a reply in flight.
 */
static int make_room(uint64_t need, uint32_t uid, const struct timespec *now)
{
	struct entry *e, *next;
	uint64_t n;

	if (over_budget(need) || over_share(uid, need))
		reap_retired();
again:
	n = n_ready;
	for (e = lru.next; e != &lru && n &&
	     (over_budget(need) || over_share(uid, need)); e = next, n--) {
		next = e->next;
		if (!over_budget(need) && e->uid != uid)
			continue;
		if (e->refs) {
			/*
			 * A reply with it is being sent (or a waiter of its
			 * load is waking up): a moment, not a hold.  Wait
			 * and look again (the lists may change meanwhile).
			 */
			pthread_cond_wait(&changed, &lock);
			goto again;
		}
		if (held(e->name)) {
			touch(e, now);
			continue;
		}
		log_msg("evict %s (%" PRIu64 " KiB, uid %u)", e->name,
			e->bytes >> 10, e->uid);
		evictions++;
		unindex(e);
		forget(e);
	}
	if (over_budget(need))
		return -ENOSPC;
	return over_share(uid, need) ? -EDQUOT : 0;
}

uint64_t index_shrink(uint64_t need, unsigned int *n)
{
	struct timespec now;
	struct entry *e, *next;
	uint64_t freed = 0, left;

	*n = 0;
	pthread_mutex_lock(&lock);
	clock_gettime(CLOCK_REALTIME, &now);
	reap_retired();
	left = n_ready;
	for (e = lru.next; e != &lru && left && freed < need; e = next, left--) {
		next = e->next;
		/* A reply in flight: skip it rather than wait, under pressure. */
		if (e->refs)
			continue;
		if (held(e->name)) {
			touch(e, &now);
			continue;
		}
		log_msg("evict %s (%" PRIu64 " KiB, uid %u): memory pressure",
			e->name, e->bytes >> 10, e->uid);
		freed += e->bytes;
		(*n)++;
		evictions++;
		unindex(e);
		forget(e);
	}
	pthread_mutex_unlock(&lock);
	return freed;
}

/* ---- loading ---- */

/*
 * One load's parallel fill: every worker takes the next CHUNK of the file
 * (next, atomic) and has the kernel read it into the morsel
 * (MORSEL_IOC_FILL: pages never zeroed first, written by the device with
 * O_DIRECT), or, without FILL, populates that part and reads into the
 * mapping.  The first error stops them all (err, atomic).
 */
struct fill {
	int src, dst;		/* the source (O_DIRECT if we could); the morsel */
	char *p;		/* the morsel, mounted here read-write (no FILL) */
	uint64_t size, len;	/* the file's size; rounded up to pages */
	uint64_t next;		/* the next chunk's offset */
	int err;		/* the first error, -errno */
	int fill;		/* MORSEL_IOC_FILL works (atomic) */
};

static void fill_fail(struct fill *f, int err)
{
	int zero = 0;

	__atomic_compare_exchange_n(&f->err, &zero, err, 0, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
}

static void *fill_worker(void *arg)
{
	struct fill *f = arg;
	uint64_t off, want, done;
	ssize_t n;
	int err;

	for (;;) {
		if (__atomic_load_n(&f->err, __ATOMIC_RELAXED))
			break;
		if (stopping) {
			fill_fail(f, -ECANCELED);
			break;
		}
		off = __atomic_fetch_add(&f->next, CHUNK, __ATOMIC_RELAXED);
		if (off >= f->len)
			break;
		want = f->len - off < CHUNK ? f->len - off : CHUNK;
		/*
		 * The kernel reads the chunk into the morsel (FILL): the
		 * pages it adds are not zeroed first, and with O_DIRECT the
		 * device writes them.  Only the last chunk ends early, at the
		 * end of file.
		 */
		if (__atomic_load_n(&f->fill, __ATOMIC_RELAXED)) {
			err = morsel_fill(f->dst, f->src, off, off, want, &done);
			if (!err && done < want && off + done < f->size)
				err = -EIO;	/* shorter than it said */
			if (err != -EOPNOTSUPP && err != -ENOTTY) {
				if (err) {
					fill_fail(f, err);
					break;
				}
				continue;
			}
			/* A module without FILL: populate and read. */
			__atomic_store_n(&f->fill, 0, __ATOMIC_RELAXED);
		}
		/*
		 * This chunk's pages and tables only: the workers zero their
		 * parts of the morsel in parallel, while others wait for the
		 * device.
		 */
		err = morsel_populate(f->dst, off, want);
		if (err) {
			fill_fail(f, err);
			break;
		}
		/*
		 * Whole pages (O_DIRECT needs them; the last page is
		 * populated): only the last read stops at the end of file.
		 */
		for (done = 0; done < want && off + done < f->size; done += n) {
			n = pread(f->src, f->p + off + done, want - done,
				  (off_t)(off + done));
			if (n < 0 && errno == EINTR) {
				n = 0;
				continue;
			}
			if (n <= 0) {
				/* n == 0: shorter than it said. */
				fill_fail(f, n ? -errno : -EIO);
				return NULL;
			}
		}
	}
	return NULL;
}

/*
 * A descriptor that reads @src around the page cache: @src itself if the
 * client opened it O_DIRECT, else a new open of the same file (the same
 * mount and inode: /proc/self/fd) with O_DIRECT, checked with the
 * daemon's own credentials.  -errno if the file system or the file's mode
 * does not allow it (the load then reads @src through the page cache).
 */
static int direct_fd(int src)
{
	char proc[64];
	int fl = fcntl(src, F_GETFL), fd;

	if (fl >= 0 && (fl & O_DIRECT))
		return src;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
	fd = open(proc, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOCTTY);
	return fd < 0 ? -errno : fd;
}

int index_fill(int fd, int src, uint64_t size, int *direct)
{
	uint64_t len = (size + PAGE - 1) & ~(PAGE - 1);
	pthread_t tids[MAX_LOAD_THREADS];
	struct fill f;
	size_t extent;
	int dfd, err, i, nt, started = 0;
	char *p;

	err = morsel_resize(fd, size);
	if (!err)
		err = morsel_map(fd, NULL, PROT_READ | PROT_WRITE, 0,
				 (void **)&p, &extent);
	if (err)
		return err;
	/*
	 * No posix_fadvise: the advice would be on the client's open file
	 * description (review 2026-11b L9).  O_DIRECT instead: the page
	 * cache gets no second copy of the file, and parallel requests keep
	 * the device busy.
	 */
	dfd = direct_fd(src);
	*direct = dfd >= 0;
	memset(&f, 0, sizeof(f));
	f.src = dfd >= 0 ? dfd : src;
	f.dst = fd;
	f.p = p;
	f.size = size;
	f.len = len;
	f.fill = 1;
	nt = (int)((len + CHUNK - 1) / CHUNK);
	if (nt > cfg.load_threads)
		nt = cfg.load_threads;
	/* This thread is one of the workers. */
	for (i = 0; i < nt - 1; i++)
		if (!pthread_create(&tids[started], NULL, fill_worker, &f))
			started++;
	fill_worker(&f);
	for (i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	if (dfd >= 0 && dfd != src)
		close(dfd);
	munmap(p, extent);
	return f.err;
}

int index_fill_new(int dir, int src, uint64_t size, int *direct)
{
	/* 0600 until the key is set: a user xattr needs write permission. */
	int fd = openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), err;

	if (fd < 0)
		return -errno;
	err = index_fill(fd, src, size, direct);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * Build the morsel of @e from @src (no lock held): an O_TMPFILE, filled
 * (index_fill), given its key, linked in under e->name once complete and
 * unchanged.  *@bytes: its pages and tables; *@direct: whether the page
 * cache was bypassed.  0 or -errno.
 */
static int load(struct entry *e, int src, uint64_t *bytes, int *direct)
{
	struct timespec times[2];
	struct record rec;
	struct statx stx;
	struct ident now;
	char proc[64];
	int fd, err, tries;

	fd = index_fill_new(dirfd_, src, e->id.size, direct);
	if (fd < 0)
		return fd;
	err = key_of(src, &now, &stx);
	if (err)
		goto out;
	if (!same_ident(&now, &e->id)) {
		err = -ESTALE;
		goto out;
	}
	*bytes = morsel_bytes(fd);
	memset(&rec, 0, sizeof(rec));
	rec.id = e->id;
	rec.uid = e->uid;
	clock_gettime(CLOCK_REALTIME, &times[1]);
	times[0].tv_sec = 0;
	times[0].tv_nsec = UTIME_OMIT;
	if (fsetxattr(fd, KEY_XATTR, &rec, sizeof(rec), 0) ||
	    fchmod(fd, 0400) || futimens(fd, times)) {
		err = -errno;
		goto out;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (tries = 0; tries < 3; tries++) {
		if (!linkat(AT_FDCWD, proc, dirfd_, e->name, AT_SYMLINK_FOLLOW)) {
			err = 0;
			break;
		}
		err = -errno;
		if (err != -EEXIST)
			break;
		/* Not ours (no entry has this number): take another. */
		live_name(__atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED),
			  e->name, sizeof(e->name));
	}
out:
	close(fd);
	return err;
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Check the client's descriptor; its key in @id. */
static int check_source(int src, struct ident *id)
{
	struct statfs sfs;
	struct statx stx;
	uint64_t alloc;
	int fl = fcntl(src, F_GETFL), err, i;

	if (fl < 0)
		return -errno;
	/* The proof of access: a descriptor open for reading. */
	if ((fl & O_PATH) || (fl & O_ACCMODE) == O_WRONLY)
		return -EACCES;
	err = key_of(src, id, &stx);
	if (err)
		return err;
	if (!S_ISREG(stx.stx_mode) || !stx.stx_size ||
	    stx.stx_size < cfg.min_size)
		return -EINVAL;
	if (fstatfs(src, &sfs))
		return -errno;
	if (sfs.f_type == MORSELFS_MAGIC)
		return -EINVAL;
	/* FUSE and --refuse-fs: attributes and bytes the server chooses. */
	for (i = 0; i < cfg.n_refuse_fs; i++)
		if ((unsigned long)sfs.f_type == cfg.refuse_fs[i])
			return -EMEDIUMTYPE;
	/* Sparse: cheap on disk, every page of it in memory here. */
	alloc = stx.stx_blocks * 512;
	if (stx.stx_size > alloc + SPARSE_SLACK &&
	    alloc < stx.stx_size / SPARSE_RATIO)
		return -EINVAL;
	return 0;
}

/* The LIVE entry of exactly @id; READY entries of older versions go. */
static struct entry *lookup(const struct ident *id)
{
	struct entry *e, *next, *found = NULL;

	for (e = table[bucket_of(id, nbuckets)]; e; e = next) {
		next = e->hnext;
		if (same_ident(&e->id, id)) {
			found = e;
		} else if (same_file(&e->id, id) && e->state == READY) {
			/* The file changed since: a new load, the old goes. */
			log_msg("stale %s", e->name);
			retire(e);
		}
	}
	return found;
}

int index_get(int src, const struct peer *who, struct morsel_cache_reply *rep,
	      void **sent)
{
	uint32_t uid = (uint32_t)who->uid;
	struct timespec t0, now;
	struct entry *e;
	uint64_t bytes = 0;
	struct ident id;
	int order, err, fd, direct = 0;

	err = check_source(src, &id);
	if (err)
		goto refuse_unlocked;
	order = morsel_order_for_size(id.size);
	if (order < 0) {
		err = order;
		goto refuse_unlocked;
	}
	/* One copy for every host: the shared pool first (pool.c). */
	if (pool_on()) {
		int loaded;

		fd = pool_get(src, rep, &loaded);
		if (fd >= 0) {
			pthread_mutex_lock(&lock);
			loaded ? loads++ : hits++;
			pthread_mutex_unlock(&lock);
			*sent = NULL;
			return fd;
		}
		if (fd != -ENOENT)
			log_msg("pool: %s; the local cache serves it", strerror(-fd));
	}
	pthread_mutex_lock(&lock);
again:
	clock_gettime(CLOCK_REALTIME, &now);
	age_out(&now);
	e = lookup(&id);
	if (e && e->state == LOADING) {
		e->refs++;
		while (e->state == LOADING)
			pthread_cond_wait(&changed, &lock);
		e->refs--;
		pthread_cond_broadcast(&changed);	/* for make_room */
		if (e->state == FAILED) {
			err = -e->err;
			if (!e->refs)
				free(e);
			goto refuse;
		}
		if (e->where != LIVE) {
			err = -ESTALE;	/* replaced right after its load */
			goto refuse;
		}
		rep->flags = 0;
		goto reply;
	}
	if (e) {
		/*
		 * Only the user who loaded it (and root) learns it was there
		 * before: to anyone else the flag would tell that another
		 * user read the file lately (review 2026-11b L9).
		 */
		rep->flags = uid == e->uid || !uid ? MORSEL_CACHE_HIT : 0;
		hits++;
		if (verbose)
			log_msg("hit %s for pid %d uid %d", e->name, who->pid,
				who->uid);
		goto reply;
	}

	/* A miss: reserve the memory, load without the lock. */
	e = calloc(1, sizeof(*e));
	if (!e || !user_of(uid, 1)) {
		free(e);
		err = -ENOMEM;
		goto refuse;
	}
	e->id = id;
	e->uid = uid;
	e->order = order;
	e->state = LOADING;
	e->bytes = estimate(id.size, order);
	if (e->bytes > cfg.budget)
		err = -ENOSPC;
	else if (uid && e->bytes > cfg.user_budget)
		err = -EDQUOT;
	else
		err = make_room(e->bytes, uid, &now);
	if (err) {
		free(e);
		goto refuse;
	}
	if (lookup(&id)) {
		/* make_room waited: another request began this load. */
		free(e);
		goto again;
	}
	live_name(__atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED), e->name,
		  sizeof(e->name));
	hash_add(e);
	charge(e, 1);
	e->refs++;
	loading++;
	pthread_mutex_unlock(&lock);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = load(e, src, &bytes, &direct);

	pthread_mutex_lock(&lock);
	e->refs--;
	loading--;
	if (err) {
		e->state = FAILED;
		e->err = -err;
		hash_del(e);
		charge(e, -1);
		log_msg("load for pid %d uid %d failed: %s", who->pid,
			who->uid, strerror(-err));
		pthread_cond_broadcast(&changed);
		if (!e->refs)
			free(e);
		goto refuse;
	}
	/* The real size instead of the estimate. */
	charge(e, -1);
	e->bytes = bytes;
	charge(e, 1);
	e->state = READY;
	e->last_use = now;
	list_add_tail(&lru, e);
	n_ready++;
	loads++;
	pthread_cond_broadcast(&changed);
	log_msg("load %s for pid %d uid %d: order %u, %" PRIu64
		" KiB in %.1f ms%s", e->name, who->pid, who->uid, e->order,
		e->bytes >> 10, ms_since(&t0),
		direct ? "" : " (through the page cache)");
	rep->flags = 0;
reply:
	fd = openat(dirfd_, e->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		err = -errno;
		log_msg("open %s: %s", e->name, strerror(-err));
		if (err == -ENOENT && !e->refs) {
			/* Removed behind our back: forget it, load anew. */
			unindex(e);
			charge(e, -1);
			free(e);
			goto again;
		}
		goto refuse;
	}
	{
		struct timespec times[2] = { { 0, UTIME_OMIT }, now };

		/* The last use, for aging and the LRU after a restart. */
		futimens(fd, times);
	}
	touch(e, &now);
	/* Until index_sent(): the daemon's own description is open. */
	e->refs++;
	*sent = e;
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

void index_sent(void *sent)
{
	struct entry *e = sent;

	if (!e)		/* a pool file (pool.c) */
		return;
	pthread_mutex_lock(&lock);
	e->refs--;
	if (e->where == NOWHERE && !e->refs)
		free(e);
	pthread_cond_broadcast(&changed);
	pthread_mutex_unlock(&lock);
}

void index_stats(struct morsel_cache_reply *rep)
{
	struct timespec now;

	pthread_mutex_lock(&lock);
	clock_gettime(CLOCK_REALTIME, &now);
	age_out(&now);
	reap_retired();
	rep->entries = n_ready;
	rep->bytes = used;
	rep->budget = cfg.budget;
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

/* ---- a restart ---- */

static int by_age(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a;
	const struct entry *y = *(struct entry *const *)b;
	int64_t d = ns_between(&y->last_use, &x->last_use);

	return d < 0 ? -1 : d > 0;
}

/*
 * One file of the cache directory, open as @fd: an entry to index, or
 * (NULL, *@retire set) a morsel to count until nothing holds it.
 */
static struct entry *examine(int fd, const char *name, int kind,
			     const struct stat *st, int *is_retired)
{
	struct record rec;
	struct entry *e = calloc(1, sizeof(*e));
	int order;

	if (!e)
		return NULL;
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->bytes = morsel_bytes(fd);
	e->last_use = st->st_mtim;
	e->uid = geteuid();
	*is_retired = 1;
	if (kind != 'k' ||
	    fgetxattr(fd, KEY_XATTR, &rec, sizeof(rec)) != sizeof(rec))
		return e;
	order = morsel_order_for_size(rec.id.size);
	e->uid = rec.uid;
	if (rec.id.version != KEY_VERSION || rec.reserved || order < 0 ||
	    (uint64_t)st->st_size != rec.id.size || !(st->st_mode & 0400))
		return e;
	e->id = rec.id;
	e->order = order;
	e->state = READY;
	*is_retired = 0;
	return e;
}

int index_init(int dfd, const struct cache_config *c)
{
	struct entry **found = NULL, *e, *dup, **grown;
	size_t n = 0, room = 0, i, nretired = 0;
	struct timespec now;
	struct dirent *d;
	struct stat st;
	uint64_t seq, max_seq = 0;
	int fd, err, kind, is_retired;
	DIR *dir;

	cfg = *c;
	dirfd_ = dfd;
	list_init(&lru);
	list_init(&retired);
	nbuckets = 1024;
	table = calloc(nbuckets, sizeof(*table));
	if (!table)
		return -ENOMEM;
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
		kind = name_kind(d->d_name, &seq);
		if (!kind) {
			log_msg("ignoring %s: not a cache file", d->d_name);
			continue;
		}
		if (seq > max_seq)
			max_seq = seq;
		/* One descriptor at a time, never kept. */
		fd = openat(dfd, d->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid()) {
			log_msg("ignoring %s: not a file of ours", d->d_name);
			if (fd >= 0)
				close(fd);
			continue;
		}
		e = examine(fd, d->d_name, kind, &st, &is_retired);
		close(fd);
		if (!e)
			break;
		if (is_retired) {
			/*
			 * Format 1 (no ctime in its key), no valid key, or
			 * retired by the last run: never served, counted
			 * until nothing holds it.
			 */
			log_msg("%s: %s, counted until unused", e->name,
				kind == 'c' ? "format 1, not served" :
				kind == 'r' ? "retired" : "no valid key");
			e->where = RETIRED;
			list_add_tail(&retired, e);
			charge(e, 1);
			nretired++;
			continue;
		}
		if (n == room) {
			room = room ? 2 * room : 64;
			grown = realloc(found, room * sizeof(*found));
			if (!grown) {
				free(e);
				break;
			}
			found = grown;
		}
		found[n++] = e;
	}
	closedir(dir);
	next_seq = max_seq + 1;
	/* LRU order across restarts: the last use, kept as mtime. */
	if (n)
		qsort(found, n, sizeof(*found), by_age);
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_mutex_lock(&lock);
	for (i = 0; i < n; i++) {
		e = found[i];
		charge(e, 1);
		/* Two files of one key (a rename that failed): the newer. */
		dup = lookup(&e->id);
		if (dup && same_ident(&dup->id, &e->id))
			retire(dup);
		hash_add(e);
		list_add_tail(&lru, e);
		n_ready++;
	}
	free(found);
	if (n || nretired)
		log_msg("indexed %zu cached files, %zu retired, %" PRIu64
			" KiB", n, nretired, used >> 10);
	reap_retired();
	age_out(&now);
	if (over_budget(0))
		make_room(0, 0, &now);
	pthread_mutex_unlock(&lock);
	return 0;
}
