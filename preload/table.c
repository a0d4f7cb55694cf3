// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libmorsel-preload.so, part 2: the table of shim mappings, and the
 * interposed munmap, mprotect, madvise and mremap.
 *
 * A shim mapping mounts a cached morsel at [base, base + extent) (one VMA,
 * one entry; file offset 0 is at base) and gives the program the range
 * [start, end) of it.  The kernel refuses to split a mounted VMA, so:
 *
 * - munmap of part of the program's range only records it as released;
 *   when nothing of the range is left, the whole extent is unmapped.
 *   Parts of a munmap range outside every shim extent are unmapped for
 *   real.
 * - mprotect to PROT_READ, and madvise with advice that cannot change what
 *   a read-only, never-written file mapping reads, are answered here (0;
 *   MADV_FREE: EINVAL, as for any file mapping) when the range lies inside
 *   one live part.  Anything else that touches a shim mapping (other
 *   rights, other advice, mremap, a MAP_FIXED mmap over it) first *swaps*
 *   it: the entry's standby, an ordinary PROT_NONE mapping of the
 *   program's file with its mapping type, extent bytes from offset 0, is
 *   made readable and moved over the whole mount by one
 *   mremap(MREMAP_FIXED), which replaces the mount in one step (readers in
 *   other threads never see a hole: the bytes are the same), the parts
 *   the program does not hold are unmapped, the entry goes, and the
 *   program's call runs for real on an ordinary mapping.  If the swap
 *   cannot be made, the call fails with its errno.  A call that touches
 *   the standby (the program does not know it is there, but may unmap or
 *   map over a wide range) swaps the entry too, so the standby is never
 *   anything but the shim's.
 * - No descriptor of the program's file is kept, so none is ever closed:
 *   closing one would drop the program's POSIX record locks on the file
 *   (preload.c, map_cached, has the reasons for the standby).
 * - The swap gives the program the file as it is now.  The shim caches
 *   only files that cannot change while mapped (preload.c, unchanging()),
 *   so the bytes are the same, but for a file cached on the user's word
 *   (MORSEL_PRELOAD_DIRS) the swap first checks that the file is still as
 *   it was at the mmap and says so on stderr if not (unchanged()).
 *
 * posix_madvise is interposed too (glibc's calls the kernel directly).
 *
 * Locking: table_lock guards maps[], nmaps and every entry (its live[]
 * and path[] pages included).  nmaps is also read without the lock
 * (atomic load) so that calls in a process with no shim mapping cost
 * nothing.  No malloc: the arrays are raw anonymous mappings, so an
 * allocator that itself calls munmap cannot deadlock on table_lock.
 * table_lock is held with every signal blocked (shim_lock), so a signal
 * handler that maps or unmaps never runs on a thread that holds it.
 * preload.c takes table_lock around fork (pthread_atfork).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "preload.h"

struct shim_map {
	uintptr_t base;
	size_t extent;
	uintptr_t start, end;		/* what the program was given */
	int flags;			/* the program's mmap flags */
	uintptr_t standby;		/* extent bytes of the file, PROT_NONE */
	struct shim_range *live;	/* sorted, disjoint, not adjacent */
	unsigned int nlive, cap;	/* cap: ranges that fit in live[] */
	/*
	 * A file cached on the user's word: its name (a raw mapping of
	 * path_room bytes) and identity at the mmap; NULL for a file the
	 * kernel keeps unchanged.
	 */
	char *path;
	size_t path_room;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
};

static struct shim_lock table_lock = SHIM_LOCK_INIT;
static struct shim_map *maps;		/* sorted by base, disjoint */
static unsigned int nmaps, maps_cap;

void table_lock_all(void)
{
	shim_lock(&table_lock);
}

void table_unlock_all(void)
{
	shim_unlock(&table_lock);
}

static unsigned int count(void)
{
	return __atomic_load_n(&nmaps, __ATOMIC_ACQUIRE);
}

/* Page-rounded raw memory: grow @old (@oldsz bytes) to @newsz, or NULL. */
static void *raw_grow(void *old, size_t oldsz, size_t newsz)
{
	void *p = real_mmap(NULL, page_up(newsz), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (old) {
		memcpy(p, old, oldsz);
		real_munmap(old, page_up(oldsz));
	}
	return p;
}

int table_add(uintptr_t base, size_t extent, uintptr_t start, uintptr_t end,
	      int flags, uintptr_t standby, const struct shim_ident *id)
{
	struct shim_range *live = raw_grow(NULL, 0, SHIM_PAGE);
	size_t room = id ? page_up(strlen(id->path) + 1) : 0;
	char *path = NULL;
	unsigned int i;

	if (!live)
		return -ENOMEM;
	if (id && !(path = raw_grow(NULL, 0, room))) {
		real_munmap(live, SHIM_PAGE);
		return -ENOMEM;
	}
	if (path)
		strcpy(path, id->path);
	shim_lock(&table_lock);
	if (nmaps == maps_cap) {
		unsigned int cap = maps_cap ? 2 * maps_cap :
			SHIM_PAGE / sizeof(*maps);
		void *p = raw_grow(maps, maps_cap * sizeof(*maps),
				   cap * sizeof(*maps));

		if (!p) {
			shim_unlock(&table_lock);
			real_munmap(live, SHIM_PAGE);
			if (path)
				real_munmap(path, room);
			return -ENOMEM;
		}
		maps = p;
		maps_cap = cap;
	}
	for (i = nmaps; i && maps[i - 1].base > base; i--)
		maps[i] = maps[i - 1];
	live[0].start = start;
	live[0].end = end;
	maps[i] = (struct shim_map){
		.base = base, .extent = extent, .start = start, .end = end,
		.flags = flags, .standby = standby,
		.live = live, .nlive = 1,
		.cap = SHIM_PAGE / sizeof(*live),
		.path = path, .path_room = room,
	};
	if (id) {
		maps[i].dev = id->st->st_dev;
		maps[i].ino = id->st->st_ino;
		maps[i].size = id->st->st_size;
		maps[i].mtim = id->st->st_mtim;
		maps[i].ctim = id->st->st_ctim;
	}
	__atomic_store_n(&nmaps, nmaps + 1, __ATOMIC_RELEASE);
	shim_unlock(&table_lock);
	return 0;
}

/*
 * Forget entry @i (its extent is already unmapped or swapped, its standby
 * unmapped or moved).  Nothing to close: the entry holds no descriptor.
 */
static void drop(unsigned int i)
{
	struct shim_map *m = &maps[i];
	int err = errno;

	real_munmap(m->live, page_up(m->cap * sizeof(*m->live)));
	if (m->path)
		real_munmap(m->path, m->path_room);
	memmove(m, m + 1, (nmaps - i - 1) * sizeof(*m));
	__atomic_store_n(&nmaps, nmaps - 1, __ATOMIC_RELEASE);
	errno = err;
}

/* Remove [a, b) from @m's live parts; 0 or -ENOMEM. */
static int release(struct shim_map *m, uintptr_t a, uintptr_t b)
{
	struct shim_range *r = m->live;
	unsigned int i, n = 0;

	if (m->nlive == m->cap) {
		void *p = raw_grow(m->live, m->cap * sizeof(*r),
				   2 * m->cap * sizeof(*r));

		if (!p)
			return -ENOMEM;
		m->live = r = p;
		m->cap *= 2;
	}
	/* At most one part is split in two: walk backwards to make room. */
	for (i = 0; i < m->nlive; i++)
		if (r[i].start < a && b < r[i].end)
			break;
	if (i < m->nlive) {
		memmove(&r[i + 1], &r[i], (m->nlive - i) * sizeof(*r));
		r[i].end = a;
		r[i + 1].start = b;
		m->nlive++;
		return 0;
	}
	for (i = 0; i < m->nlive; i++) {
		struct shim_range p = r[i];

		if (p.end <= a || b <= p.start) {
			r[n++] = p;
			continue;
		}
		if (p.start < a)
			r[n++] = (struct shim_range){ p.start, a };
		else if (b < p.end)
			r[n++] = (struct shim_range){ b, p.end };
	}
	m->nlive = n;
	return 0;
}

static int overlaps(const struct shim_map *m, uintptr_t a, uintptr_t b)
{
	return m->base < b && a < m->base + m->extent;
}

static int in_standby(const struct shim_map *m, uintptr_t a, uintptr_t b)
{
	return m->standby < b && a < m->standby + m->extent;
}

/* Does [a, b) touch @m's mount or its standby? */
static int touches(const struct shim_map *m, uintptr_t a, uintptr_t b)
{
	return overlaps(m, a, b) || in_standby(m, a, b);
}

/* Is [a, b) inside one live part of @m? */
static int inside_live(const struct shim_map *m, uintptr_t a, uintptr_t b)
{
	unsigned int i;

	for (i = 0; i < m->nlive; i++)
		if (m->live[i].start <= a && b <= m->live[i].end)
			return 1;
	return 0;
}

/*
 * Before the swap of @m, a file cached on the user's word: is it still as
 * it was at the mmap?  If its name still leads to the mapped file and
 * that file's size, mtime or ctime differ, the user's word was wrong: the
 * program has read the bytes of the mmap's moment, and after the swap it
 * reads the file as it is now.  That is said on stderr whatever the debug
 * level, and the swap goes on.
 *
 * Why go on.  The kernel's own mapping would have shown the change when
 * it was made (MAP_SHARED, and the unwritten pages of MAP_PRIVATE), so
 * from the swap on the program sees what it would see without the shim,
 * as if the write had come at that moment, which a program that maps a
 * file others write must expect anyway; what cannot be undone is the
 * stale reads before.  Refusing the swap is no choice in every path (a
 * munmap or MAP_FIXED that reaches the standby must not fail, and an
 * mprotect or mremap failing with an errno the kernel would not give is
 * a new fault), and keeping the old bytes for the program (an anonymous
 * copy) would prolong the difference and is no file mapping.
 *
 * Not seen: a change that keeps the size within one timestamp tick (in
 * 6.12, tmpfs and ext4 stamp with the coarse clock, one jiffy), and a
 * file renamed or removed since (its name then leads elsewhere, or
 * nowhere: said at MORSEL_PRELOAD_DEBUG=1 only; a file replaced by
 * rename, the usual update of such a file, keeps its old bytes under the
 * kernel too).
 */
static void unchanged(const struct shim_map *m)
{
	struct stat st;
	int err = errno;

	if (stat(m->path, &st) || st.st_dev != m->dev || st.st_ino != m->ino) {
		shim_say("swap of %#lx: %s is another file now; not checked",
			 (unsigned long)m->start, m->path);
	} else if (st.st_size != m->size ||
		   st.st_mtim.tv_sec != m->mtim.tv_sec ||
		   st.st_mtim.tv_nsec != m->mtim.tv_nsec ||
		   st.st_ctim.tv_sec != m->ctim.tv_sec ||
		   st.st_ctim.tv_nsec != m->ctim.tv_nsec) {
		shim_warn("warning: %s changed while mapped from the cache at "
			  "%#lx, though MORSEL_PRELOAD_DIRS says it does not "
			  "change: the program read it as it was at the mmap "
			  "(size %lld) and now reads it as it is (size %lld)",
			  m->path, (unsigned long)m->start,
			  (long long)m->size, (long long)st.st_size);
	}
	errno = err;
}

/*
 * Replace entry @i's mount by an ordinary mapping of the program's file
 * (its live parts only) and drop the entry; 0, or -1 with errno set (the
 * entry stays, and the program's call fails with that errno).
 *
 * The standby has the mount's length, so the mremap is a pure move: after
 * mremap_to() has unmapped the mount (mm/mremap.c), only an allocation
 * failure (ENOMEM) can stop it, and a second try then moves it into the
 * hole that is left.
 */
static int swap(unsigned int i, const char *why)
{
	struct shim_map *m = &maps[i];
	uintptr_t cur = m->base, end = m->base + m->extent;
	unsigned int k;
	int err = errno, tries;
	void *r = MAP_FAILED;

	if (m->path)
		unchanged(m);
	if (real_mprotect((void *)m->standby, m->extent, PROT_READ)) {
		shim_say("%s: swap of %#lx failed: mprotect of the standby: %s",
			 why, (unsigned long)m->start, strerror(errno));
		return -1;
	}
	/* File offset 0 is at base: the same bytes, one step. */
	for (tries = 0; tries < 2 && r == MAP_FAILED; tries++)
		r = real_mremap((void *)m->standby, m->extent, m->extent,
				MREMAP_MAYMOVE | MREMAP_FIXED, (void *)m->base);
	if (r == MAP_FAILED) {
		int e = errno;

		real_mprotect((void *)m->standby, m->extent, PROT_NONE);
		shim_say("%s: swap of %#lx failed: %s", why,
			 (unsigned long)m->start, strerror(e));
		errno = e;
		return -1;
	}
	for (k = 0; k < m->nlive; k++) {
		if (cur < m->live[k].start)
			real_munmap((void *)cur, m->live[k].start - cur);
		cur = m->live[k].end;
	}
	if (cur < end)
		real_munmap((void *)cur, end - cur);
	shim_say("%s: swap [%#lx, %#lx) to an ordinary %s mapping of the file",
		 why, (unsigned long)m->start, (unsigned long)m->end,
		 (m->flags & MAP_TYPE) == MAP_SHARED ? "shared" : "private");
	drop(i);
	errno = err;
	return 0;
}

/*
 * Swap every entry whose mount or standby [a, b) touches; 0, or -1 with
 * errno set at the first that cannot be swapped.  Under table_lock.
 */
static int swap_range(uintptr_t a, uintptr_t b, const char *why)
{
	unsigned int i = 0;

	while (i < nmaps) {
		if (!touches(&maps[i], a, b))
			i++;
		else if (swap(i, why))
			return -1;
	}
	return 0;
}

/*
 * An entry whose mount or standby [a, b) touches, or NULL (the standbys
 * are not sorted: every entry is looked at).  Under table_lock.
 */
static struct shim_map *find(uintptr_t a, uintptr_t b)
{
	unsigned int i;

	for (i = 0; i < nmaps; i++)
		if (touches(&maps[i], a, b))
			return &maps[i];
	return NULL;
}

/*
 * [a, b) of a call on (addr, len), or 0 if the kernel refuses it anyway
 * (unaligned, empty, wraps): then the real call gives the errno.
 */
static int span(void *addr, size_t len, uintptr_t *a, uintptr_t *b)
{
	*a = (uintptr_t)addr;
	if ((*a & (SHIM_PAGE - 1)) || !len || *a > UINTPTR_MAX - SHIM_PAGE ||
	    len > UINTPTR_MAX - SHIM_PAGE - *a)
		return 0;
	*b = page_up(*a + len);
	return 1;
}

int table_before_fixed(uintptr_t addr, size_t len)
{
	uintptr_t a, b;
	int ret;

	if (!count() || !span((void *)addr, len, &a, &b))
		return 0;
	shim_lock(&table_lock);
	ret = swap_range(a, b, "mmap MAP_FIXED");
	shim_unlock(&table_lock);
	return ret;
}

SHIM_EXPORT int munmap(void *addr, size_t len)
{
	uintptr_t a, b, cur;
	unsigned int i = 0;
	int ret = 0, err = errno;

	if (!count() || !span(addr, len, &a, &b))
		return real_munmap(addr, len);
	shim_lock(&table_lock);
	/*
	 * A range over a standby: swap those entries first, so that the
	 * kernel never unmaps a standby under the shim (the swap would move
	 * whatever came there next).  Rare: the program does not know the
	 * standby, only a wide munmap reaches it.
	 */
	while (i < nmaps) {
		if (!in_standby(&maps[i], a, b)) {
			i++;
		} else if (swap(i, "munmap over a standby")) {
			shim_unlock(&table_lock);
			return -1;
		}
	}
	i = 0;
	cur = a;
	while (i < nmaps && maps[i].base < b) {
		struct shim_map *m = &maps[i];
		uintptr_t end = m->base + m->extent;

		if (end <= a) {
			i++;
			continue;
		}
		if (cur < m->base && real_munmap((void *)cur, m->base - cur)) {
			ret = -1;
			err = errno;
		}
		cur = end;
		if (release(m, a > m->base ? a : m->base, b < end ? b : end)) {
			ret = -1;
			err = ENOMEM;
			i++;
			continue;
		}
		if (m->nlive) {
			shim_say("munmap [%#lx, %#lx): released, %u part(s) of "
				 "[%#lx, %#lx) still mapped", (unsigned long)a,
				 (unsigned long)b, m->nlive,
				 (unsigned long)m->start, (unsigned long)m->end);
			i++;
			continue;
		}
		shim_say("munmap [%#lx, %#lx): all of [%#lx, %#lx) released, "
			 "extent unmapped", (unsigned long)a, (unsigned long)b,
			 (unsigned long)m->start, (unsigned long)m->end);
		real_munmap((void *)m->base, m->extent);
		real_munmap((void *)m->standby, m->extent);
		drop(i);
	}
	if (cur < b && real_munmap((void *)cur, b - cur)) {
		ret = -1;
		err = errno;
	}
	shim_unlock(&table_lock);
	errno = err;
	return ret;
}

SHIM_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	struct shim_map *m;
	uintptr_t a, b;

	if (!count() || !span(addr, len, &a, &b))
		return real_mprotect(addr, len, prot);
	shim_lock(&table_lock);
	m = find(a, b);
	if (m && prot == PROT_READ && inside_live(m, a, b)) {
		shim_unlock(&table_lock);
		shim_say("mprotect [%#lx, %#lx) PROT_READ: already so",
			 (unsigned long)a, (unsigned long)b);
		return 0;
	}
	if (m && swap_range(a, b, "mprotect")) {
		shim_unlock(&table_lock);
		return -1;
	}
	shim_unlock(&table_lock);
	return real_mprotect(addr, len, prot);
}

/*
 * 0: the advice changes nothing a read-only, never-written file mapping
 * reads (it is only a hint, or drops pages that read back the same).
 * EINVAL: MADV_FREE, which the kernel refuses on every file mapping.
 * -1: anything else (the mapping is swapped and the kernel decides).
 */
static int advice_answer(int advice)
{
	switch (advice) {
	case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL:
	case MADV_WILLNEED: case MADV_HUGEPAGE: case MADV_NOHUGEPAGE:
	case MADV_DONTDUMP: case MADV_DODUMP: case MADV_POPULATE_READ:
	case MADV_DONTNEED: case MADV_COLD: case MADV_PAGEOUT:
		return 0;
	case MADV_FREE:
		return EINVAL;
	}
	return -1;
}

SHIM_EXPORT int madvise(void *addr, size_t len, int advice)
{
	struct shim_map *m;
	uintptr_t a, b;
	int answer = advice_answer(advice);

	if (!count() || !span(addr, len, &a, &b))
		return real_madvise(addr, len, advice);
	shim_lock(&table_lock);
	m = find(a, b);
	if (m && answer >= 0 && inside_live(m, a, b)) {
		shim_unlock(&table_lock);
		shim_say("madvise [%#lx, %#lx) advice %d: %s", (unsigned long)a,
			 (unsigned long)b, advice,
			 answer ? "EINVAL (as any file mapping)" : "nothing to do");
		if (answer) {
			errno = answer;
			return -1;
		}
		return 0;
	}
	if (m && swap_range(a, b, "madvise")) {
		shim_unlock(&table_lock);
		return -1;
	}
	shim_unlock(&table_lock);
	return real_madvise(addr, len, advice);
}

SHIM_EXPORT void *mremap(void *old, size_t old_len, size_t new_len,
			 int flags, ...)
{
	void *new_addr = NULL;
	uintptr_t a, b;

	if (flags & MREMAP_FIXED) {
		va_list ap;

		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	if (count()) {
		int err = 0;

		shim_lock(&table_lock);
		/* old_len 0 (a duplicate) still names the mapping at old. */
		if (span(old, old_len ? old_len : 1, &a, &b))
			err = swap_range(a, b, "mremap");
		if (!err && (flags & MREMAP_FIXED) &&
		    span(new_addr, new_len, &a, &b))
			err = swap_range(a, b, "mremap target");
		shim_unlock(&table_lock);
		if (err)
			return MAP_FAILED;
	}
	return real_mremap(old, old_len, new_len, flags, new_addr);
}

/*
 * glibc's posix_madvise calls the kernel directly, so it is interposed as
 * well: the same answers as madvise, returned as an error number.
 * POSIX_MADV_DONTNEED does nothing, as in glibc.
 */
SHIM_EXPORT int posix_madvise(void *addr, size_t len, int advice)
{
	int err = errno, r;

	if (advice == POSIX_MADV_DONTNEED)
		return 0;
	r = madvise(addr, len, advice) ? errno : 0;
	errno = err;
	return r;
}
