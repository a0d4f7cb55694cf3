// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-cached's shared pool (--pool DIR, issue 25): one copy of a file
 * for every host that maps the pool.  DIR is a morselfs mounted on a
 * shared pool (morselfs(5) "pool"): read-write on the publisher's host,
 * read-only (a reader) on the others.
 *
 * A file is known in the pool by a fleet key every host computes alike:
 * the path the daemon sees for the client's descriptor, the size and the
 * modification and change times (what a shared network file system shows
 * every host alike; docs/cache.md "One copy for several hosts").  The
 * pool file is named p.<FNV-1a of the key> and carries the whole key in
 * the extended attribute FLEET_XATTR, which is compared before a file is
 * served, so a hash collision is a miss, not another file's bytes.
 *
 * A request looks in the pool first.  Found: the client gets a read-only
 * descriptor of the pool's morsel (a reader's mapping walks the
 * publisher's tree: no load, no copy).  Missing, on the publisher: the
 * file is loaded into an O_TMPFILE of the pool (index_fill_new), given its
 * key, sealed (MORSEL_IOC_SEAL: readers see only sealed files) and linked
 * in under its name; concurrent requests for the same name wait for that
 * one load.  Missing on a reader: with --pool-wait, it waits that long
 * for the publisher's load to appear (names appear without a remount),
 * then falls back to its own cache.
 *
 * Pool files are not in the daemon's budget or LRU: the pool's space is
 * its operator's (rm removes a file; the publisher frees it once no
 * reader has it open).  A full pool is a miss (ENOSPC: the local cache
 * loads it).
 *
 * Locking: pool_lock guards the list of names being loaded; a load runs
 * without it, and waiters sleep on pool_changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cached.h"

#define FLEET_XATTR	"user.morsel-cached.fleet"
#define KEY_MAX		(PATH_MAX + 96)
#define NAME_LEN	24	/* "p." + 16 hex digits */

struct pool_load {
	struct pool_load *next;
	char name[NAME_LEN];
};

static int pool_fd = -1;
static int pool_rw;
static uint64_t pool_wait_ms;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_changed = PTHREAD_COND_INITIALIZER;
static struct pool_load *loading;

int pool_init(const char *dir, uint64_t wait_ms)
{
	struct statvfs vfs;
	struct statfs sfs;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) || fstatvfs(fd, &vfs)) {
		close(fd);
		return -errno;
	}
	if (sfs.f_type != MORSELFS_MAGIC) {
		close(fd);
		return -EINVAL;
	}
	pool_fd = fd;
	pool_rw = !(vfs.f_flag & ST_RDONLY);
	pool_wait_ms = wait_ms;
	log_msg("pool %s: %s", dir, pool_rw ? "publishing" : "reading");
	return 0;
}

int pool_on(void)
{
	return pool_fd >= 0;
}

/* The fleet key of @src (@st: its fstat) and the pool name it hashes to. */
static int fleet_key(int src, const struct stat *st, char *key, char *name)
{
	char proc[64], path[PATH_MAX];
	uint64_t h = 0xcbf29ce484222325ULL;
	ssize_t n;
	char *c;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", src);
	n = readlink(proc, path, sizeof(path) - 1);
	if (n < 0)
		return -errno;
	path[n] = 0;
	snprintf(key, KEY_MAX, "%llu %lld.%09ld %lld.%09ld %s",
		 (unsigned long long)st->st_size,
		 (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec,
		 (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec, path);
	for (c = key; *c; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	snprintf(name, NAME_LEN, "p.%016llx", (unsigned long long)h);
	return 0;
}

/* The pool file @name, if it holds exactly @key: a read-only fd or -errno. */
static int pool_open(const char *name, const char *key)
{
	char got[KEY_MAX];
	ssize_t n;
	int fd = openat(pool_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return -errno;
	n = fgetxattr(fd, FLEET_XATTR, got, sizeof(got) - 1);
	if (n < 0 || (size_t)n != strlen(key) || memcmp(got, key, n)) {
		close(fd);
		return -ENOENT;		/* another file's name: a miss */
	}
	return fd;
}

/* Load @src into the pool as @name (no lock held): 0 or -errno. */
static int publish(int src, const struct stat *st, const char *name,
		   const char *key)
{
	struct stat now;
	char proc[64];
	int fd, err, direct;

	fd = index_fill_new(pool_fd, src, st->st_size, &direct);
	if (fd < 0)
		return fd;
	err = 0;
	if (fstat(src, &now) || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != st->st_mtim.tv_nsec || now.st_size != st->st_size)
		err = -ESTALE;
	if (!err && (fsetxattr(fd, FLEET_XATTR, key, strlen(key), 0) ||
		     fchmod(fd, 0444)))
		err = -errno;
	if (!err)
		err = morsel_seal(fd);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (!err && linkat(AT_FDCWD, proc, pool_fd, name, AT_SYMLINK_FOLLOW))
		err = -errno;
	close(fd);
	if (!err)
		log_msg("pool: published %s (%lld bytes%s)", name,
			(long long)st->st_size,
			direct ? "" : ", through the page cache");
	return err;
}

static struct pool_load **find_load(const char *name)
{
	struct pool_load **l;

	for (l = &loading; *l; l = &(*l)->next)
		if (!strcmp((*l)->name, name))
			return l;
	return NULL;
}

static int64_t ms_left(const struct timespec *end)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (end->tv_sec - t.tv_sec) * 1000 + (end->tv_nsec - t.tv_nsec) / 1000000;
}

int pool_get(int src, struct morsel_cache_reply *rep, int *loaded)
{
	char key[KEY_MAX], name[NAME_LEN];
	struct pool_load me, **l;
	struct morsel_stat ms;
	struct timespec end;
	struct stat st;
	int fd, err;

	*loaded = 0;
	if (fstat(src, &st))
		return -errno;
	err = fleet_key(src, &st, key, name);
	if (err)
		return err;
	fd = pool_open(name, key);
	if (fd == -ENOENT && pool_rw) {
		pthread_mutex_lock(&pool_lock);
		while (find_load(name))
			pthread_cond_wait(&pool_changed, &pool_lock);
		fd = pool_open(name, key);
		if (fd == -ENOENT) {
			snprintf(me.name, sizeof(me.name), "%s", name);
			me.next = loading;
			loading = &me;
			pthread_mutex_unlock(&pool_lock);
			err = publish(src, &st, name, key);
			pthread_mutex_lock(&pool_lock);
			l = find_load(name);
			*l = (*l)->next;
			pthread_cond_broadcast(&pool_changed);
			fd = err ? err : pool_open(name, key);
			*loaded = !err;
			if (err)
				log_msg("pool: publishing %s failed: %s", name,
					strerror(-err));
		}
		pthread_mutex_unlock(&pool_lock);
	} else if (fd == -ENOENT && pool_wait_ms) {
		/* The publisher may be loading it: its name appears then. */
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += pool_wait_ms / 1000;
		end.tv_nsec += (pool_wait_ms % 1000) * 1000000;
		if (end.tv_nsec >= 1000000000) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000;
		}
		while (fd == -ENOENT && ms_left(&end) > 0) {
			usleep(20000);
			fd = pool_open(name, key);
		}
	}
	if (fd < 0)
		return fd;
	err = morsel_stat(fd, &ms);
	if (err) {
		close(fd);
		return err;
	}
	rep->size = st.st_size;
	rep->order = ms.order;
	rep->extent = ms.extent;
	/* No hit flag: who loaded a pool file is nobody's business. */
	rep->flags = 0;
	if (verbose)
		log_msg("pool: %s %s", *loaded ? "loaded" : "served", name);
	return fd;
}
