/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * Internal interface between the two halves of libmorsel-preload.so:
 * preload.c (configuration, the daemon connection, the mmap decision,
 * debug and timing output) and table.c (the table of shim mappings and
 * what munmap, mprotect, madvise, mremap and MAP_FIXED do to them,
 * including the swap to an ordinary file mapping).
 *
 * Nothing here is exported from the shared object: it is built with
 * -fvisibility=hidden and only the interposed functions carry SHIM_EXPORT.
 * The real calls are raw system calls, so the shim never calls itself.
 */
#ifndef MORSEL_PRELOAD_H
#define MORSEL_PRELOAD_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_PAGE 4096UL

static inline uintptr_t page_up(uintptr_t x)
{
	return (x + SHIM_PAGE - 1) & ~(SHIM_PAGE - 1);
}

/* The kernel's calls, bypassing every interposer (ours included). */
static inline void *real_mmap(void *addr, size_t len, int prot, int flags,
			      int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int real_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static inline int real_mprotect(void *addr, size_t len, int prot)
{
	return (int)syscall(SYS_mprotect, addr, len, prot);
}

static inline int real_madvise(void *addr, size_t len, int advice)
{
	return (int)syscall(SYS_madvise, addr, len, advice);
}

static inline void *real_mremap(void *old, size_t old_len, size_t new_len,
				int flags, void *new_addr)
{
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
			       new_addr);
}

/*
 * A lock held with every signal blocked.  A signal handler may call mmap,
 * munmap, mprotect, ... (they are async-signal-safe), and on a thread that
 * holds the lock its call would wait for the thread it interrupted, for
 * ever (review 2026-11b L7).  Blocked, the signal comes when the lock is
 * released.  Only for locks held briefly: a pending SIGINT waits as long.
 * The holder keeps the mask it had in the lock.
 */
struct shim_lock {
	pthread_mutex_t m;
	sigset_t old;
};

#define SHIM_LOCK_INIT { .m = PTHREAD_MUTEX_INITIALIZER }

static inline void shim_lock(struct shim_lock *l)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_mutex_lock(&l->m);
	l->old = old;
}

static inline void shim_unlock(struct shim_lock *l)
{
	sigset_t old = l->old;

	pthread_mutex_unlock(&l->m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* preload.c: MORSEL_PRELOAD_DEBUG=1 prints one line per decision. */
extern int shim_debug_on;
void shim_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* preload.c: a line on stderr whatever MORSEL_PRELOAD_DEBUG says. */
void shim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * table.c.  A shim mapping: the morsel mounted at [base, base + extent)
 * (file offset 0 at base), of which the program was given [start, end);
 * live lists the parts of that it has not munmapped yet.  standby is an
 * ordinary PROT_NONE mapping of the program's file, extent bytes from
 * offset 0 (with the program's MAP_SHARED or MAP_PRIVATE), made while the
 * program's fd was at hand: the swap moves it over the mount.  The shim
 * keeps no descriptor of the program's file (why: preload.c, map_cached).
 */
struct shim_range {
	uintptr_t start, end;
};

/*
 * What the swap checks before it replaces a mount by the file: the file
 * as it was at the mmap, for a file the shim cached only on the user's
 * word (MORSEL_PRELOAD_DIRS; preload.c, unchanging()).  path is the
 * file's name then (/proc/self/fd), st its fstat.
 */
struct shim_ident {
	const char *path;
	const struct stat *st;
};

/*
 * Record a new shim mapping; 0 or -ENOMEM (then nothing was recorded).
 * @id: NULL when the kernel guarantees the file never changes.
 */
int table_add(uintptr_t base, size_t extent, uintptr_t start, uintptr_t end,
	      int flags, uintptr_t standby, const struct shim_ident *id);
/*
 * Before a MAP_FIXED (or MAP_FIXED_NOREPLACE) mmap of [addr, addr + len):
 * swap every shim mapping it touches (its mount or its standby), so the
 * kernel sees only ordinary mappings there; 0, or -1 with errno set if
 * one cannot be swapped.
 */
int table_before_fixed(uintptr_t addr, size_t len);
/* Take and release the table's lock (around fork; signals blocked). */
void table_lock_all(void);
void table_unlock_all(void);

#endif /* MORSEL_PRELOAD_H */
