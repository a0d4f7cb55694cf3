// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/maps.c: mappings.  mmap (shared: the whole extent, mounted;
 * private, or shared at an offset: page by page), munmap, mprotect,
 * mremap, madvise, and loads, stores and calls through a mapping, each
 * checked against the model; the fuzzer's own address regions (hints,
 * MAP_FIXED and mremap targets, bindings); and the guarded access that
 * every touch of a mapping goes through.
 *
 * Rules: the mapping table (W.maps, W.nmaps) and the private copies
 * (W.copies) are the process's own; they change here and in model.c
 * (unmap_model, drop_map, cp_*).  The guard (guard_env, guard_on,
 * guard_sig) belongs to this file: one guarded access at a time, the
 * process being single-threaded; worker_main installs on_fault for SIGBUS
 * and SIGSEGV with SA_NODEFER, and a fault outside gcopy/gcall ends the
 * process.  MAP_FIXED is used only inside the fuzzer's regions (fixed_ok).
 */
#include "fuzz.h"

/*
 * Pages [a, b) of @sl were populated through mapping @m: with its
 * MADV_[NO]HUGEPAGE hint, page by page (model.c runs_add).  A mounted
 * mapping of order 1 over a larger morsel mounts the first 2 MiB's PTE
 * table, so its access split a leaf there first (mount.c), and a leaf
 * its fault made there is split at once too.
 */
static void map_populated(struct slot *sl, const struct mapent *m,
			  uint64_t a, uint64_t b)
{
	int order1 = !m->paged && m->vorder == 1 && sl->order >= 2;

	if (order1)
		huge_split(sl, 0);
	W.hint = m->huge;
	runs_add(sl, a, b);
	W.hint = 0;
	if (order1)
		huge_split(sl, 0);
}

/* What @m is, for messages. */
static const char *mkind(const struct mapent *m)
{
	return m->priv ? "private" : m->paged ? "paged shared" : "shared";
}

/* ---- addresses ---- */

/* Does any own mapping (optionally only those without dontfork) intersect? */
int occupied(uint64_t a, uint64_t len, int forked)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (forked && m->dontfork)
			continue;
		if (m->addr < a + len && a < m->addr + m->len)
			return 1;
	}
	return 0;
}

/*
 * A shared mapping intersecting [a, a+len) that it does not contain (a
 * split, refused)?  Private mappings split like any.
 */
static int partial_overlap(uint64_t a, uint64_t len)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (!m->paged && m->addr < a + len && a < m->addr + m->len &&
		    (m->addr < a || m->addr + m->len > a + len))
			return 1;
	}
	return 0;
}

/* A hint / MAP_FIXED / mremap target in the fuzzer's own region. */
static uint64_t pick_addr(int order)
{
	if (order == 4)
		return HINT4_BASE + below(8) * ext(4);
	if (order == 3)
		return HINT_BASE + below(12) * ext(3);
	return HINT_BASE + below(8) * ext(3) + below(4) * ext(order);
}

/*
 * May MAP_FIXED replace [a, a + len)?  Only inside the fuzzer's own
 * regions: a longer extent at a bound address can reach the program's
 * own memory (its stack), which a MAP_FIXED that fails in ->mmap would
 * leave unmapped.
 */
static int fixed_ok(uint64_t a, uint64_t len)
{
	return (a >= BIND_BASE && a + len > a &&
		a + len <= HINT_BASE + 16 * ext(3)) ||
	       (a >= HINT4_BASE && a + len > a && a + len <= task_max);
}

/*
 * Is [a, a + len) free in this process, the fuzzer's own mappings and the
 * program's alike?  (A long extent at a bound address may reach the
 * program's stack or libraries: mmap gives EEXIST then.)  Probed with a
 * MAP_FIXED_NOREPLACE reservation that is removed again.
 */
static int range_free(uint64_t a, uint64_t len)
{
	void *p;

	if (!len || a + len < a || a + len > task_max)
		return 0;
	p = mmap((void *)(uintptr_t)a, len, PROT_NONE, MAP_PRIVATE |
		 MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	if ((uintptr_t)p != a) {	/* a kernel without NOREPLACE */
		munmap(p, len);
		return 0;
	}
	munmap(p, len);
	return 1;
}

/*
 * Does a free hint get used (x86 mmap_address_hint_valid: inside the
 * address space, and not across the 47-bit default window)?
 */
static int hint_used(uint64_t a, uint64_t len)
{
	uint64_t window = (1ULL << 47) - PG;

	return (a > window) == (a + len > window) && range_free(a, len);
}

uint64_t bind_base(int s, int order)
{
	return order == 4 ? BIND4_BASE + ((uint64_t)s << 48) :
			    BIND_BASE + (uint64_t)s * ext(3);
}

/* ---- guarded access through mappings ---- */

static sigjmp_buf guard_env;
static volatile sig_atomic_t guard_on;
static volatile int guard_sig;

void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[128];
	int n;

	(void)uc;
	if (guard_on) {
		guard_on = 0;
		guard_sig = sig;
		siglongjmp(guard_env, 1);
	}
	n = snprintf(msg, sizeof(msg), "fuzz: w%d: unexpected signal %d at %p\n",
		     W.id, sig, si->si_addr);
	if (write(2, msg, n) < 0)
		_exit(4);
	_exit(4);
}

/* memcpy under the guard; returns 0 or the signal. */
int gcopy(void *dst, const void *src, size_t n)
{
	if (sigsetjmp(guard_env, 0))
		return guard_sig;
	guard_on = 1;
	memcpy(dst, src, n);
	guard_on = 0;
	return 0;
}

static int gcall(void *fn, int *ret)
{
	if (sigsetjmp(guard_env, 0))
		return guard_sig;
	guard_on = 1;
	*ret = ((int (*)(void))fn)();
	guard_on = 0;
	return 0;
}

const char *sname(int sig)
{
	return sig == 0 ? "no signal" : sig == SIGBUS ? "SIGBUS" :
	       sig == SIGSEGV ? "SIGSEGV" : "another signal";
}

/*
 * Expected signal for touching offset @rel of mapping @m (0: works).
 * ANY_SIG: --lenient and a page populated past the size: it works if this
 * mapping has mounted the morsel since the page appeared, else SIGBUS.
 * A private mapping reads its own copy of a page it wrote (truncation
 * removes copies past the size, so they never raise SIGBUS); PROT_EXEC
 * alone reads (no protection keys), PROT_NONE does not.
 */
#define ANY_SIG (-1)

static int expect_access(struct mapent *m, uint64_t rel, int write)
{
	struct slot *sl = S(m->slot);
	uint64_t fo = m->off + rel;

	if (write ? !(m->prot & PROT_WRITE) : m->prot == PROT_NONE)
		return SIGSEGV;
	if (m->priv && cp_find(PDOWN(m->addr + rel)))
		return 0;
	if (fo >= PALIGN(sl->size)) {
		if (lenient && !m->paged && runs_has(sl, fo / PG))
			return ANY_SIG;
		return SIGBUS;
	}
	return 0;
}

static void cmp_map(const char *what, struct mapent *m, uint64_t rel,
		    const uint8_t *want, uint64_t n, const char *whose)
{
	uint64_t i = 0;

	if (!memcmp(iobuf, want, n))
		return;
	while (iobuf[i] == want[i])
		i++;
	mismatch("%s: byte at offset %#" PRIx64 " (file offset %#" PRIx64
		 ") of slot %d through %s map %#" PRIx64 " (%s): got %#x, want %#x",
		 what, rel + i, m->off + rel + i, m->slot, mkind(m), m->addr,
		 whose, iobuf[i],
		 want[i]);
}

/*
 * Read or write [rel, rel + len) of mapping @m page by page, checking
 * every byte read and every fault; @data is what to write.  Through a
 * private mapping the first touch of a page populates the file's page
 * (morsel_private_fault) and a store makes it the process's own copy.
 */
void x_access(struct mapent *m, uint64_t rel, uint64_t len, int write,
	      const uint8_t *data, const char *what)
{
	struct slot *sl = S(m->slot);

	while (len) {
		uint64_t n = PG - rel % PG, fo = m->off + rel;
		uint64_t va = PDOWN(m->addr + rel);
		int want, got;
		char *p = (char *)(uintptr_t)(m->addr + rel);
		struct copy *c;

		if (n > len)
			n = len;
		want = expect_access(m, rel, write);
		/* a page that should fault is probed with one byte */
		got = want ? (write ? gcopy(p, data, 1) : gcopy(iobuf, p, 1)) :
		      (write ? gcopy(p, data, n) : gcopy(iobuf, p, n));
		if (want == ANY_SIG) {
			want = got == SIGBUS ? SIGBUS : 0;
			if (!got)	/* the probe worked: now the whole access */
				got = write ? gcopy(p, data, n) : gcopy(iobuf, p, n);
		}
		if (got != want) {
			mismatch("%s: %s at offset %#" PRIx64 " (file offset %#"
				 PRIx64 ") of slot %d (size %#" PRIx64
				 ", populated %d, %s map %#" PRIx64 "+%#" PRIx64
				 " prot %d): got %s, want %s", what,
				 write ? "write" : "read", rel, fo, m->slot,
				 sl->size, runs_has(sl, fo / PG), mkind(m), m->addr,
				 m->len,
				 m->prot, sname(got), sname(want));
			if (want && !got)	/* it works: follow reality */
				got = write ? gcopy(p, data, n) : gcopy(iobuf, p, n);
		}
		if (got) {
			if (!want)
				break;	/* an unexpected fault: stop here */
		} else if (m->priv && (c = cp_find(va))) {
			if (write)
				memcpy(c->data + rel % PG, data, n);
			else
				cmp_map(what, m, rel, c->data + rel % PG, n,
					"its own copy");
		} else if (m->priv) {
			map_populated(sl, m, fo / PG, fo / PG + 1);
			if (write) {
				c = cp_find(NOPAGE);
				if (!c) {
					mismatch("internal: no room for a copy");
				} else {
					c->va = va;
					m_read(sl, PDOWN(fo), PG, c->data);
					memcpy(c->data + rel % PG, data, n);
				}
			} else {
				m_read(sl, fo, n, expbuf);
				cmp_map(what, m, rel, expbuf, n, "the file");
			}
		} else {
			map_populated(sl, m, fo / PG, fo / PG + 1);
			if (write) {
				m_write(sl, fo, data, n);
			} else {
				m_read(sl, fo, n, expbuf);
				cmp_map(what, m, rel, expbuf, n, "the file");
			}
		}
		if (write)
			data += n;
		rel += n;
		len -= n;
	}
}

/* ---- argument choice ---- */

/* An offset inside the extent for an access through a mapping. */
static uint64_t pick_moff(struct mapent *m)
{
	struct slot *sl = S(m->slot);
	uint64_t sz = sl->size, e = m->off + m->len, r = below(100), p, o;
	int i;

	if (m->priv && r < 15) {	/* a page it has a copy of */
		for (i = below(MAX_COPIES); i < MAX_COPIES; i++)
			if (W.copies[i].va >= m->addr &&
			    W.copies[i].va < m->addr + m->len)
				return W.copies[i].va - m->addr + below(PG);
	}
	if (r < 35 && sz)
		o = below(PALIGN(sz));
	else if (r < 60 && (p = model_page(m->slot)) != NOPAGE)
		o = p * PG + below(PG);
	else if (r < 80) {
		uint64_t c[] = { 0, sz ? sz - 1 : 0, sz,
				 PALIGN(sz) ? PALIGN(sz) - 1 : 0, PALIGN(sz),
				 e - 1, e - PG, PALIGN(sz) + PG };

		o = c[below(sizeof(c) / sizeof(c[0]))];
	} else
		o = m->off + below(m->len);
	/* a file offset: into the mapping's window */
	if (o < m->off || o >= e)
		o = m->off + (o < m->off ? below(m->len) : m->len - 1 - below(PG));
	return o - m->off;
}

/* ---- operations ---- */

/* Record a new mapping of @s. */
void add_map(int s, uint64_t addr, uint64_t len, int prot, int kind,
	     int vorder, uint64_t off)
{
	struct mapent *m;

	if (W.nmaps == MAPS_ROOM) {
		mismatch("internal: mapping table full");
		munmap((void *)(uintptr_t)addr, len);
		return;
	}
	m = &W.maps[W.nmaps++];
	memset(m, 0, sizeof(*m));
	m->slot = s;
	m->addr = addr;
	m->len = len;
	m->prot = prot;
	m->paged = kind != MK_MOUNTED;
	m->priv = kind == MK_PRIVATE;
	m->maywrite = 0;		/* set_maywrite */
	m->vorder = vorder;
	m->off = off;
}

/* A shared mapping just added at @addr may get write: the fd could write. */
void set_maywrite(uint64_t addr, int maywrite)
{
	if (W.nmaps && W.maps[W.nmaps - 1].addr == addr)
		W.maps[W.nmaps - 1].maywrite = maywrite;
}

/*
 * A failed mmap: was it one of the @ne acceptable errors @err?  Returns
 * the index of the error, or @ne (reported).
 */
static int mmap_failed(int s, const int *err, int ne)
{
	char errs[128] = "";
	int got = errno, k;

	for (k = 0; k < ne; k++)
		snprintf(errs + strlen(errs), sizeof(errs) - strlen(errs), "%s%s",
			 k ? "/" : "", ename(err[k]));
	for (k = 0; k < ne && err[k] != got; k++)
		;
	if (!ne)
		mismatch("mmap slot %d: got %s, want success", s, ename(got));
	else if (k == ne)
		mismatch("mmap slot %d: got %s, want %s", s, ename(got), errs);
	return k;
}

/*
 * MAP_FIXED that fails in ->mmap leaves a gap where the old mappings
 * were (mm/vma.h vms_abort_munmap_vmas); an accounting failure (ENOMEM)
 * comes earlier and restores them.
 */
static void fixed_gap(uint64_t a, uint64_t len)
{
	int k;

	for (k = 0; k < W.nmaps; k++) {
		struct mapent *m = &W.maps[k];

		if (m->addr >= a && m->addr + m->len <= a + len &&
		    !mprotect((void *)(uintptr_t)m->addr, m->len, m->prot))
			mismatch("failed MAP_FIXED left the old mapping %#" PRIx64,
				 m->addr);
	}
	unmap_model(a, len);
}

/*
 * A shared mapping: the whole extent of the smallest order >= the
 * morsel's that holds the length (file.c morsel_mmap_len); a longer one
 * raises the morsel's order to the VMA's (mount.c map_check).
 */
static void mmap_shared(int s, int fdi, int prot)
{
	struct slot *sl = S(s);
	int order = sl->order, vo, flags, err[10], ne = 0, nhook, place, k;
	uint64_t e = ext(order), E, len, off = 0, hint = 0, want_addr = 0;
	int mode = W.fds[s][fdi].mode;
	char *p;

	flags = one_in(10) ? MAP_SHARED_VALIDATE : MAP_SHARED;
	place = below(10);	/* 0-4 none, 5-6 hint, 7 fixed, 8 noreplace, 9 fixed unaligned */
	if (place >= 7 && W.nmaps + 2 > MAX_MAPS)
		place = 0;
	switch (below(14)) {
	case 0: len = 1; break;
	case 1: len = sl->size && sl->size <= e ? sl->size : e; break;
	case 2: len = 1 + below(e); break;
	case 3: len = one_in(2) ? e + 1 : 0; break;
	case 4: case 5:		/* longer than the extent */
		if (order < max_order) {
			int o = order + 1 + below(max_order - order);

			len = one_in(2) ? ext(o) :
			      ext(o - 1) + 1 + below(ext(o) - ext(o - 1));
		} else {
			len = e;
		}
		break;
	case 6: len = one_in(3) ? max_bytes + 1 : e; break;
	default: len = e;
	}
	vo = !len || order_of(len) > max_order ? -1 :
	     order_of(len) > order ? order_of(len) : order;
	E = vo < 0 ? e : ext(vo);
	if (one_in(40))
		off = 1 + below(PG - 1);	/* unaligned: EINVAL */
	if (sl->bound && place >= 5 && place <= 8 && one_in(2))
		hint = sl->bound;
	else if (place >= 5)
		hint = pick_addr(vo < 0 ? order : vo) + (place == 9 ? PG : 0);
	if (place == 5 && one_in(2))
		hint += PG;	/* a hint is rounded up */
	if ((place == 7 || place == 9) && !fixed_ok(PDOWN(hint), E))
		place = 5;
	if (place == 7 || place == 9)
		flags |= MAP_FIXED;
	else if (place == 8)
		flags |= MAP_FIXED_NOREPLACE;
	if (one_in(10))
		flags |= MAP_POPULATE;		/* no effect on a morsel */
	if (one_in(40))
		flags = MAP_SHARED_VALIDATE | MAP_SYNC;

	/*
	 * The errors this call may give (any of them, in whatever order).
	 * First those decided before anything is unmapped, then those of
	 * morsel_mmap(), after MAP_FIXED has already removed what was there.
	 */
	if (!fd_r(mode) || ((prot & PROT_WRITE) && !fd_w(mode)))
		err[ne++] = EACCES;
	if (vo < 0 || off)
		err[ne++] = EINVAL;
	/* MAP_SHARED_VALIDATE refuses flags outside the legacy mask */
	if ((flags & MAP_TYPE) == MAP_SHARED_VALIDATE &&
	    (flags & (MAP_SYNC | MAP_FIXED_NOREPLACE)))
		err[ne++] = EOPNOTSUPP;
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (hint % PG || (sl->bound && hint != sl->bound) ||
		    (!sl->bound && hint % E))
			err[ne++] = EINVAL;
		else if (hint + E > task_max)
			err[ne++] = ENOMEM;
		else if ((flags & MAP_FIXED_NOREPLACE) && !range_free(hint, E))
			err[ne++] = EEXIST;
		else if ((flags & MAP_FIXED) && partial_overlap(hint, E))
			err[ne++] = EINVAL;
		want_addr = hint;
	} else if (sl->bound) {
		if (sl->bound + E > task_max)
			err[ne++] = ENOMEM;
		else if (!range_free(sl->bound, E))
			err[ne++] = EEXIST;
		want_addr = sl->bound;
	} else if (hint && hint_used((hint + E - 1) & ~(E - 1), E)) {
		want_addr = (hint + E - 1) & ~(E - 1);
	}
	nhook = ne;
	/* execute without read; PROT_NONE maps, unmounted */
	if ((prot & PROT_EXEC) && !(prot & (PROT_READ | PROT_WRITE)))
		err[ne++] = EACCES;
	/* a bound morsel's longer extent must fit its address (map_check) */
	if (sl->bound && vo > order && sl->bound % E)
		err[ne++] = EINVAL;
	note("mmap slot %d shared fd %s len %#" PRIx64 " prot %d flags %#x off %#"
	     PRIx64 " addr %#" PRIx64 " (order %d, VMA order %d)", s,
	     mname(mode), len, prot, flags, off, hint, order, vo);
	p = mmap((void *)(uintptr_t)hint, len, prot, flags, W.fds[s][fdi].fd,
		 off);
	tally(vo > order ? "mmap shared longer" : "mmap shared",
	      p == MAP_FAILED ? errno : 0);
	if (p == MAP_FAILED) {
		int got = errno;

		k = mmap_failed(s, err, ne);
		if ((flags & MAP_FIXED) && !nhook && k < ne && got != ENOMEM &&
		    !partial_overlap(hint, E))
			fixed_gap(hint, E);
		return;
	}
	if (ne) {
		char errs[128] = "";

		for (k = 0; k < ne; k++)
			snprintf(errs + strlen(errs), sizeof(errs) - strlen(errs),
				 "%s%s", k ? "/" : "", ename(err[k]));
		mismatch("mmap slot %d prot %d: succeeded at %p, want %s", s, prot,
			 p, errs);
		munmap(p, E);
		return;
	}
	if ((uintptr_t)p % E || (want_addr && (uintptr_t)p != want_addr))
		mismatch("mmap slot %d: at %p, want %#" PRIx64 " aligned to %#"
			 PRIx64, s, p, want_addr, E);
	/* MAP_FIXED replaced whatever it covered */
	if (flags & MAP_FIXED)
		unmap_model((uintptr_t)p, E);
	else if (occupied((uintptr_t)p, E, 0))
		mismatch("mmap slot %d: %p overlaps an existing mapping", s, p);
	add_map(s, (uintptr_t)p, E, prot, MK_MOUNTED, vo, 0);
	set_maywrite((uintptr_t)p, fd_w(mode));
	m_raise(sl, vo);
	/*
	 * mmap mounts at once (a file that is not empty, rights that read):
	 * an order-1 mapping of a larger morsel splits a leaf at 0 (mount.c).
	 */
	if (vo == 1 && sl->order >= 2 && sl->size && (prot & (PROT_READ | PROT_WRITE)))
		huge_split(sl, 0);
	/*
	 * MAP_POPULATE has no effect on a morsel (docs/interface.md): the
	 * kernel skips VM_PFNMAP mappings; the next STAT checks the count.
	 */
}

/*
 * A page-by-page mapping (file.c): private, or shared at an offset other
 * than 0 (which a shared one always has here: at 0 it would be mounted);
 * any page-aligned window and rights.  MAP_POPULATE faults the window in
 * up to the size, read only (a writable private one is left out: it would
 * copy every page).
 */
static void mmap_paged(int s, int fdi, int prot, int shared)
{
	struct slot *sl = S(s);
	uint64_t psz = PALIGN(sl->size), len, off, hint = 0, want_addr = 0, L, p;
	int flags = shared ? (one_in(4) ? MAP_SHARED_VALIDATE : MAP_SHARED) :
		    MAP_PRIVATE;
	int place = below(10), err[8], ne = 0, pop = 0;
	int mode = W.fds[s][fdi].mode;
	char *m;

	/* 0-5 none, 6 hint, 7 fixed, 8 noreplace, 9 fixed unaligned */
	if (place >= 7 && W.nmaps + 2 > MAX_MAPS)
		place = 0;
	switch (below(6)) {
	case 0: off = 0; break;
	case 1: off = psz > 4 * PG ? psz - PG * below(5) : 0; break;
	case 2:
		p = model_page(s);
		off = p != NOPAGE && p > 2 ? (p - below(3)) * PG : 0;
		break;
	default: off = psz ? PDOWN(below(psz)) : 0;
	}
	if (shared && !off)
		off = PG * (1 + below(4));
	len = one_in(3) ? 1 + below(2 * PG) :
	      PG * (1 + below(one_in(6) ? PRIV_MAX / PG : 8));
	if (one_in(40))
		len = 0;
	if (one_in(40))
		off += 1 + below(PG - 1);
	L = PALIGN(len);
	if (place >= 6)
		hint = pick_addr(0) + PG * below(16) + (place == 9 ? 1 : 0);
	if ((place == 7 || place == 9) && !fixed_ok(PDOWN(hint), L))
		place = 6;
	if (place == 7 || place == 9)
		flags |= MAP_FIXED;
	else if (place == 8)
		flags |= MAP_FIXED_NOREPLACE;
	if (prot != PROT_NONE && (shared || !(prot & PROT_WRITE)) && one_in(6)) {
		flags |= MAP_POPULATE;
		pop = 1;
	}
	if (shared && one_in(30))
		flags |= MAP_SYNC;
	if (!fd_r(mode) || (shared && (prot & PROT_WRITE) && !fd_w(mode)))
		err[ne++] = EACCES;
	if (!len || off % PG)
		err[ne++] = EINVAL;
	if ((flags & MAP_SYNC) && (flags & MAP_TYPE) == MAP_SHARED_VALIDATE)
		err[ne++] = EOPNOTSUPP;
	if ((flags & MAP_FIXED_NOREPLACE) &&
	    (flags & MAP_TYPE) == MAP_SHARED_VALIDATE)
		err[ne++] = EOPNOTSUPP;
	if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
		if (hint % PG)
			err[ne++] = EINVAL;
		else if ((flags & MAP_FIXED_NOREPLACE) && !range_free(hint, L))
			err[ne++] = EEXIST;
		else if ((flags & MAP_FIXED) && partial_overlap(hint, L))
			err[ne++] = EINVAL;	/* a mounted VMA does not split */
		want_addr = hint;
	} else if (hint && hint_used(hint, L)) {
		want_addr = hint;
	}
	note("mmap slot %d %s fd %s len %#" PRIx64 " prot %d flags %#x off %#"
	     PRIx64 " addr %#" PRIx64, s, shared ? "paged shared" : "private",
	     mname(mode), len, prot, flags, off, hint);
	m = mmap((void *)(uintptr_t)hint, len, prot, flags, W.fds[s][fdi].fd,
		 off);
	tally(shared ? "mmap paged shared" : "mmap private",
	      m == MAP_FAILED ? errno : 0);
	if (m == MAP_FAILED) {
		mmap_failed(s, err, ne);
		return;
	}
	if (ne) {
		mismatch("mmap %s slot %d: succeeded at %p, want %s",
			 shared ? "paged shared" : "private", s, m, ename(err[0]));
		munmap(m, L);
		return;
	}
	if ((uintptr_t)m % PG || (want_addr && (uintptr_t)m != want_addr))
		mismatch("mmap %s slot %d: at %p, want %#" PRIx64,
			 shared ? "paged shared" : "private", s, m, want_addr);
	if (flags & MAP_FIXED)
		unmap_model((uintptr_t)m, L);
	else if (occupied((uintptr_t)m, L, 0))
		mismatch("mmap slot %d: %p overlaps an existing mapping", s, m);
	add_map(s, (uintptr_t)m, L, prot, shared ? MK_PAGED : MK_PRIVATE, 0,
		off);
	W.maps[W.nmaps - 1].maywrite = fd_w(mode);
	if (pop && off < psz) {		/* up to the first page past the size */
		runs_add(sl, off / PG, (off + L < psz ? off + L : psz) / PG);
		sl->churn++;
	}
}

/* mmap with every kind of argument; the model predicts the outcome. */
void op_mmap(int s)
{
	static const int prots[] = {
		PROT_READ, PROT_READ, PROT_READ | PROT_WRITE,
		PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
		PROT_READ | PROT_EXEC, PROT_READ | PROT_WRITE | PROT_EXEC,
		PROT_NONE, PROT_EXEC, PROT_WRITE, PROT_WRITE | PROT_EXEC,
	};
	int fdi = pick_fd(s, 0), prot;

	if (fdi < 0 || W.nmaps >= MAX_MAPS)
		return;
	prot = prots[below(sizeof(prots) / sizeof(prots[0]))];
	if (one_in(4))
		mmap_paged(s, fdi, prot, 0);
	else if (one_in(10))
		mmap_paged(s, fdi, prot, 1);
	else
		mmap_shared(s, fdi, prot);
}

/* A mapping of @s: @kind 0 any, 1 mounted, 2 paged; -1 if none. */
int pick_map(int s, int kind)
{
	int i, c[MAPS_ROOM], n = 0;

	for (i = 0; i < W.nmaps; i++)
		if (W.maps[i].slot == s && (!kind || (kind == 1) == !W.maps[i].paged))
			c[n++] = i;
	return n ? c[below(n)] : -1;
}

/* Split paged mapping @i at @x (inside it): the index of the upper part. */
static int split_map(int i, uint64_t x)
{
	struct mapent *m = &W.maps[i], *n;

	if (x <= m->addr || x >= m->addr + m->len)
		return i;
	if (W.nmaps == MAPS_ROOM) {
		mismatch("internal: mapping table full");
		return i;
	}
	n = &W.maps[W.nmaps++];
	*n = *m;
	n->addr = x;
	n->len = m->addr + m->len - x;
	n->off = m->off + (x - m->addr);
	m->len = x - m->addr;
	return W.nmaps - 1;
}

/* A page-aligned part [*a, *a + *len) of paged mapping @m. */
static void pick_part(struct mapent *m, uint64_t *a, uint64_t *len)
{
	uint64_t np = m->len / PG, i = below(np), n = 1 + below(np - i);

	switch (below(4)) {
	case 0:			/* whole */
		i = 0;
		n = np;
		break;
	case 1:			/* head */
		i = 0;
		break;
	case 2:			/* tail */
		n = np - i;
		break;
	default:		/* anywhere, maybe the middle */
		break;
	}
	*a = m->addr + i * PG;
	*len = n * PG;
}

static void munmap_private(int s, int mi)
{
	struct mapent *m = &W.maps[mi];
	uint64_t a, len, ulen;
	int want = 0;

	if (W.nmaps + 2 > MAPS_ROOM)
		return;
	pick_part(m, &a, &len);
	ulen = len;
	if (one_in(8)) {
		ulen = len - below(PG);	/* rounded up to the page */
	} else if (one_in(12)) {
		a += 1 + below(PG - 1);
		want = EINVAL;
	}
	note("munmap slot %d %s map %#" PRIx64 "+%#" PRIx64 ": addr %#"
	     PRIx64 " len %#" PRIx64, s, mkind(m), m->addr, m->len, a, ulen);
	if (check("munmap paged", munmap((void *)(uintptr_t)a, ulen), want, 0)
	    && !want)
		unmap_model(a, len);
}

void op_munmap(int s)
{
	int mi = pick_map(s, 0), want = 0;
	struct mapent *m;
	uint64_t a, len;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		munmap_private(s, mi);
		return;
	}
	a = m->addr;
	switch (below(8)) {
	case 0: len = 1; break;
	case 1: len = S(s)->size && S(s)->size <= m->len ? S(s)->size : m->len; break;
	case 2: len = 1 + below(m->len); break;
	case 3:		/* starts inside: a split */
		if (m->len > PG) {
			a += PG * (1 + below(m->len / PG - 1));
			want = EINVAL;
		}
		len = one_in(2) ? PG : m->addr + m->len - a;
		break;
	case 4: a += 1; len = m->len; want = EINVAL; break;
	default: len = m->len;
	}
	note("munmap slot %d map %#" PRIx64 ": addr %#" PRIx64 " len %#" PRIx64,
	     s, m->addr, a, len);
	if (check("munmap", munmap((void *)(uintptr_t)a, len), want, 0) &&
	    !want) {
		drop_map(mi);
		check_dead(s);
	}
}

void op_mprotect(int s)
{
	static const int prots[] = {
		PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_EXEC,
		PROT_READ | PROT_WRITE | PROT_EXEC, PROT_NONE, PROT_EXEC,
		PROT_WRITE, PROT_WRITE | PROT_EXEC,
	};
	int mi = pick_map(s, 0), prot, want, part;
	struct mapent *m;
	uint64_t a, len;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	prot = one_in(2) ? m->prot : prots[below(sizeof(prots) / sizeof(prots[0]))];
	if (m->paged) {
		/*
		 * Any rights, on any part: the VMA splits; a shared one gets
		 * PROT_WRITE only if the fd could write (VM_MAYWRITE).
		 */
		if (W.nmaps + 2 > MAPS_ROOM)
			return;
		pick_part(m, &a, &len);
		want = !m->priv && !m->maywrite && (prot & PROT_WRITE) ? EACCES : 0;
		if (one_in(12)) {
			a += 1;
			want = EINVAL;
		}
		note("mprotect slot %d %s map %#" PRIx64 "+%#" PRIx64
		     " prot %d -> %d at %#" PRIx64 " len %#" PRIx64, s, mkind(m),
		     m->addr, m->len, m->prot, prot, a, len);
		if (check("mprotect paged", mprotect((void *)(uintptr_t)a, len,
						     prot), want, 0) && !want) {
			mi = split_map(mi, a);
			split_map(mi, a + len);
			W.maps[mi].prot = prot;
		}
		return;
	}
	/*
	 * A mounted one: new rights for the whole mapping only, never
	 * execute without read (the mount entry cannot take away read), write
	 * only if the fd could write; the same rights are a no-op anywhere.
	 */
	a = m->addr;
	len = m->len;
	part = 0;
	want = 0;
	if (one_in(3) && m->len > PG) {
		a += PG * below(m->len / PG);
		len = PG;
		part = 1;
	} else if (one_in(10)) {
		a += 1;
		want = EINVAL;
	}
	if (!want && prot != m->prot &&
	    (part || ((prot & PROT_WRITE) && !m->maywrite) ||
	     ((prot & PROT_EXEC) && !(prot & (PROT_READ | PROT_WRITE)))))
		want = EACCES;
	note("mprotect slot %d map %#" PRIx64 " prot %d -> %d at %#" PRIx64
	     " len %#" PRIx64, s, m->addr, m->prot, prot, a, len);
	if (check("mprotect", mprotect((void *)(uintptr_t)a, len, prot), want,
		  0) && !want)
		m->prot = prot;
}

/*
 * mremap of a paged mapping: an ordinary file mapping's rules.  --lenient:
 * a private one at offset 0 that must move gets EINVAL (the module takes
 * it for a mounted one).
 */
static void mremap_paged(int s, int mi)
{
	struct mapent *m = &W.maps[mi];
	uint64_t e = m->len, target, n;
	void *p = (void *)(uintptr_t)m->addr, *res;
	int known = lenient && m->priv && !m->off ? EINVAL : 0;

	switch (below(5)) {
	case 0:			/* shrink in place */
		if (e == PG)
			return;
		n = PG * (1 + below(e / PG - 1));
		note("mremap slot %d %s %p shrink %#" PRIx64 " -> %#" PRIx64,
		     s, mkind(m), p, e, n);
		res = mremap(p, e, n, 0);
		if (!check("mremap paged shrink", res == MAP_FAILED ? -1 : 0,
			   0, 0))
			return;
		if (res != p)
			mismatch("mremap paged shrink moved %p to %p", p, res);
		unmap_model(m->addr + n, e - n);
		return;
	case 1:			/* grow, moving if it must */
		if (e >= PRIV_MAX)
			return;
		note("mremap slot %d %s %p grow", s, mkind(m), p);
		res = mremap(p, e, e + PG, MREMAP_MAYMOVE);
		if (!check("mremap paged grow", res == MAP_FAILED ? -1 : 0, 0,
			   known))
			return;
		if ((uintptr_t)res != m->addr &&
		    occupied((uintptr_t)res, e + PG, 0))
			mismatch("mremap paged grow moved onto a mapping: %p", res);
		cp_move(m->addr, e, (uintptr_t)res);
		m->addr = (uintptr_t)res;
		m->len = e + PG;
		return;
	case 2:
		/* a duplicate: only of a shared mapping (not modelled) */
		if (!m->priv)
			return;
		note("mremap slot %d private %p old_len 0", s, p);
		res = mremap(p, 0, e, MREMAP_MAYMOVE);
		check("mremap private old_len 0", res == MAP_FAILED ? -1 : 0,
		      EINVAL, 0);
		return;
	default:		/* a move to a free target */
		target = pick_addr(0) + PG * below(64);
		if (occupied(target, e, 0))
			return;
		note("mremap slot %d %s %p -> %#" PRIx64, s, mkind(m), p, target);
		res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_FIXED,
			     (void *)(uintptr_t)target);
		if (!check("mremap paged move", res == MAP_FAILED ? -1 : 0, 0,
			   known))
			return;
		if ((uintptr_t)res != target)
			mismatch("mremap moved to %p, want %#" PRIx64, res, target);
		cp_move(m->addr, e, (uintptr_t)res);
		m->addr = (uintptr_t)res;
		return;
	}
}

/*
 * mremap of a shared mapping (kernel patch 0004): from the VMA's start,
 * old and new length inside the VMA give the same address and change
 * nothing; a new length past it gives ENOMEM; old_len 0 is a duplicate
 * (EFAULT, a growth of a VM_DONTEXPAND VMA); moves need MREMAP_FIXED.
 */
void op_mremap(int s)
{
	int mi = pick_map(s, 0), want = 0;
	struct mapent *m;
	uint64_t e, target = 0, o, n;
	void *p, *res;
	int kind = below(9);

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		mremap_paged(s, mi);
		return;
	}
	e = m->len;
	p = (void *)(uintptr_t)m->addr;
	switch (kind) {
	case 0:
		note("mremap slot %d %p grow past the extent", s, p);
		res = mremap(p, one_in(2) ? e : PG, e + PG,
			     one_in(2) ? MREMAP_MAYMOVE : 0);
		check("mremap grow", res == MAP_FAILED ? -1 : 0, ENOMEM, 0);
		return;
	case 1: case 2:
		/* inside the extent: in place, nothing changes */
		o = PG * (1 + below(e / PG));
		n = PG * (1 + below(e / PG));
		if (one_in(4))
			o = e;
		if (one_in(4))
			n = one_in(2) ? e : 1 + below(e);
		note("mremap slot %d %p %#" PRIx64 " -> %#" PRIx64 " inside", s, p,
		     o, n);
		res = mremap(p, o, n, one_in(2) ? MREMAP_MAYMOVE : 0);
		if (check("mremap inside", res == MAP_FAILED ? -1 : 0, 0, 0)
		    && res != p)
			mismatch("mremap inside the extent moved %p to %p", p, res);
		return;
	case 3:
		note("mremap slot %d %p DONTUNMAP", s, p);
		res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
		check("mremap DONTUNMAP", res == MAP_FAILED ? -1 : 0,
		      EINVAL, 0);
		return;
	case 4:
		note("mremap slot %d %p old_len 0", s, p);
		res = mremap(p, 0, e, MREMAP_MAYMOVE);
		check("mremap old_len 0", res == MAP_FAILED ? -1 : 0,
		      EFAULT, 0);
		return;
	case 5:
		/* not from the VMA's start: growth of a VM_DONTEXPAND VMA */
		if (e < 4 * PG)
			return;
		note("mremap slot %d %p from inside, grow", s, p);
		res = mremap((char *)p + PG, PG, 2 * PG, MREMAP_MAYMOVE);
		check("mremap grow from inside", res == MAP_FAILED ? -1 : 0,
		      EFAULT, 0);
		return;
	default:
		break;
	}
	/* a move of the whole mapping to a free target */
	target = pick_addr(m->vorder);
	if (kind == 8 && e > PG)
		target += PG;
	if (occupied(target, e, 0) || (m->addr < target + e && target < m->addr + e))
		return;
	if (target % e || S(s)->bound)
		want = EINVAL;
	note("mremap slot %d %p -> %#" PRIx64, s, p, target);
	res = mremap(p, e, e, MREMAP_MAYMOVE | MREMAP_FIXED,
		     (void *)(uintptr_t)target);
	if (!check("mremap move", res == MAP_FAILED ? -1 : 0, want, 0))
		return;
	if (want) {
		m->addr = (uintptr_t)res;	/* follow reality */
		return;
	}
	if ((uintptr_t)res != target)
		mismatch("mremap moved to %p, want %#" PRIx64, res, target);
	m->addr = (uintptr_t)res;
}

/*
 * madvise on a paged mapping: DONTNEED drops a private one's copies,
 * POPULATE faults the file's pages in (a private one copies them for a
 * write), REMOVE punches a hole through a shared one whose fd could write
 * (VM_MAYWRITE), FREE wants an anonymous mapping.
 */
static void madvise_paged(int s, int mi)
{
	static const struct { int adv; const char *name; } advs[] = {
		{ MADV_DONTNEED, "DONTNEED" }, { MADV_DONTNEED, "DONTNEED" },
		{ MADV_WILLNEED, "WILLNEED" }, { MADV_DONTFORK, "DONTFORK" },
		{ MADV_DOFORK, "DOFORK" }, { MADV_REMOVE, "REMOVE" },
		{ MADV_FREE, "FREE" }, { MADV_POPULATE_READ, "POPULATE_READ" },
		{ MADV_POPULATE_READ, "POPULATE_READ" },
		{ MADV_POPULATE_WRITE, "POPULATE_WRITE" },
	};
	struct mapent *m = &W.maps[mi];
	struct slot *sl = S(s);
	int k = below(sizeof(advs) / sizeof(advs[0])), adv = advs[k].adv;
	int want = 0;
	uint64_t a, len, rel, stop;
	long r;

	pick_part(m, &a, &len);
	if (adv == MADV_DONTFORK || adv == MADV_DOFORK) {
		a = m->addr;	/* whole: a part would split the VMA alone */
		len = m->len;
	}
	if (adv == MADV_REMOVE)		/* then vfs_fallocate's checks */
		want = m->priv || !m->maywrite ? EACCES :
		       m->off + (a - m->addr) + len > max_bytes ? EFBIG : 0;
	else if (adv == MADV_FREE)
		want = EINVAL;
	else if (adv == MADV_POPULATE_READ && !(m->prot & PROT_READ))
		want = EINVAL;
	else if (adv == MADV_POPULATE_WRITE && !(m->prot & PROT_WRITE))
		want = EINVAL;
	/* where a populate stops: the first page that would SIGBUS */
	stop = a + len;
	if (!want && (adv == MADV_POPULATE_READ || adv == MADV_POPULATE_WRITE)) {
		for (rel = a - m->addr; rel < a + len - m->addr; rel += PG)
			if (expect_access(m, rel, 0)) {
				stop = m->addr + rel;
				want = EFAULT;
				break;
			}
		if (adv == MADV_POPULATE_WRITE && m->priv &&
		    cp_count() + cp_need(m, a - m->addr, stop - a) > MAX_COPIES)
			return;
	}
	note("madvise slot %d %s map %#" PRIx64 "+%#" PRIx64 " at %#" PRIx64
	     " len %#" PRIx64 " %s", s, mkind(m), m->addr, m->len, a, len,
	     advs[k].name);
	r = madvise((void *)(uintptr_t)a, len, adv);
	if (!check("madvise paged", r, want, 0) && want != EFAULT)
		return;
	switch (adv) {
	case MADV_DONTNEED:
		cp_drop(a, len);
		break;
	case MADV_REMOVE: {
		uint64_t fo = m->off + (a - m->addr);

		if (fo < sl->size)
			m_evict(s, fo, fo + len < sl->size ? fo + len : sl->size);
		break;
	}
	case MADV_DONTFORK:
		m->dontfork = 1;
		break;
	case MADV_DOFORK:
		m->dontfork = 0;
		break;
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
		for (rel = a - m->addr; rel < stop - m->addr; rel += PG) {
			uint64_t va = m->addr + rel;
			struct copy *c;

			if (cp_find(va))
				continue;
			map_populated(sl, m, (m->off + rel) / PG,
				      (m->off + rel) / PG + 1);
			if (adv == MADV_POPULATE_WRITE && m->priv &&
			    (c = cp_find(NOPAGE))) {
				c->va = va;
				m_read(sl, m->off + rel, PG, c->data);
			}
		}
		sl->churn++;
		break;
	}
}

void op_madvise(int s)
{
	static const struct { int adv; int err; const char *name; } advs[] = {
		{ MADV_DONTNEED, EINVAL, "DONTNEED" }, { MADV_FREE, EINVAL, "FREE" },
		{ MADV_COLD, EINVAL, "COLD" }, { MADV_PAGEOUT, EINVAL, "PAGEOUT" },
		{ MADV_COLLAPSE, EINVAL, "COLLAPSE" },
		{ MADV_DOFORK, EINVAL, "DOFORK" }, { MADV_DODUMP, EINVAL, "DODUMP" },
		{ MADV_DONTDUMP, 0, "DONTDUMP" }, { MADV_WILLNEED, 0, "WILLNEED" },
		{ MADV_HUGEPAGE, -1, "HUGEPAGE" },
		{ MADV_NOHUGEPAGE, -1, "NOHUGEPAGE" },
		{ MADV_DONTFORK, -1, "DONTFORK" }, { MADV_REMOVE, -2, "REMOVE" },
		{ MADV_REMOVE, -2, "REMOVE" },
		{ MADV_POPULATE_READ, -3, "POPULATE_READ" },
		{ MADV_POPULATE_WRITE, -3, "POPULATE_WRITE" },
		{ MADV_POPULATE_READ, -3, "POPULATE_READ" },
	};
	int mi = pick_map(s, 0), k = below(sizeof(advs) / sizeof(advs[0]));
	int want, want2 = 0, whole;
	struct mapent *m;
	struct slot *sl = S(s);
	uint64_t o, len;
	long r;

	if (mi < 0)
		return;
	m = &W.maps[mi];
	if (m->paged) {
		madvise_paged(s, mi);
		return;
	}
	if (one_in(3)) {
		o = 0;
		len = m->len;
	} else {
		o = PDOWN(pick_moff(m));
		len = PG * (1 + below(one_in(4) ? 1024 : 16));
		if (len > m->len - o)
			len = m->len - o;
	}
	if (one_in(20))
		len = 0;
	whole = o == 0 && len == m->len;
	want = advs[k].err;
	if (want == -1) {	/* flag changes: a split unless whole or no change */
		int same = (advs[k].adv == MADV_DONTFORK && m->dontfork) ||
			   (advs[k].adv == MADV_HUGEPAGE && m->huge == 1) ||
			   (advs[k].adv == MADV_NOHUGEPAGE && m->huge == 2);

		want = same || whole ? 0 : EINVAL;
	} else if (want == -2) {	/* a shared mapping the fd may write */
		want = m->maywrite ? 0 : EACCES;
	} else if (want == -3) {
		/* GUP (check_vma_flags) wants VM_WRITE, or VM_READ to read */
		int need = advs[k].adv == MADV_POPULATE_WRITE ? PROT_WRITE :
							      PROT_READ;

		want = m->prot & need ? 0 : EINVAL;
		if (!want && len > CAP_POP)
			len = CAP_POP;
	}
	if (!len)
		want = 0;
	if (one_in(30)) {
		o += 1;
		want = EINVAL;
	}
	if (!want && len && advs[k].err == -3) {
		uint64_t pg;

		for (pg = (m->addr + o) / PG; pg < (m->addr + o + len) / PG; pg++) {
			uint64_t fo = pg * PG - m->addr;

			int e = expect_access(m, fo, 0);

			if (e == ANY_SIG)	/* --lenient: either */
				want2 = EFAULT;
			if (e && e != ANY_SIG) {
				want = EFAULT;
				break;
			}
		}
	}
	note("madvise slot %d map %#" PRIx64 " off %#" PRIx64 " len %#" PRIx64
	     " %s", s, m->addr, o, len, advs[k].name);
	r = madvise((void *)(uintptr_t)(m->addr + o), len, advs[k].adv);
	if (advs[k].err == -3 && len && (!want || want == EFAULT) &&
	    (r == 0 || errno == EFAULT)) {
		/* populated up to the first page that faults */
		uint64_t fo;

		for (fo = o; fo < o + len; fo += PG) {
			int e = expect_access(m, fo, 0);

			if (e && (e != ANY_SIG || r))
				break;
			map_populated(sl, m, fo / PG, fo / PG + 1);
		}
		sl->churn++;
		if (r == 0 && want == EFAULT)	/* follow reality */
			map_populated(sl, m, o / PG, (o + len) / PG);
		if (r)
			errno = EFAULT;
	}
	if (!check("madvise", r, want, want2) || want)
		return;
	if (!len)
		return;
	switch (advs[k].adv) {
	case MADV_DONTFORK:
		m->dontfork = 1;
		break;
	case MADV_HUGEPAGE:
		m->huge = 1;
		break;
	case MADV_NOHUGEPAGE:
		m->huge = 2;
		break;
	case MADV_REMOVE:
		if (o < sl->size)
			m_evict(s, o, o + len < sl->size ? o + len : sl->size);
		break;
	}
}

void op_maccess(int s, int write)
{
	int mi = pick_map(s, 0), i;
	struct mapent *m;
	int64_t off;
	uint64_t len;
	static uint8_t data[3 * PG];

	if (mi < 0)
		return;
	m = &W.maps[mi];
	off = pick_moff(m);
	len = write ? 1 + below(one_in(2) ? 64 : 3 * PG) :
		      1 + below(one_in(2) ? 64 : 8 * PG);
	if (len > m->len - off)
		len = m->len - off;
	if (write && !m->priv) {
		int64_t fo = m->off + off;

		len = fit_write(s, &fo, len);
		if ((uint64_t)fo < m->off || (uint64_t)fo >= m->off + m->len)
			return;
		off = fo - m->off;
		if (len > m->len - off)
			len = m->len - off;
	} else if (write && (m->prot & PROT_WRITE) &&
		   cp_count() + cp_need(m, off, len) > MAX_COPIES) {
		/* no room for more copies: store into one it has */
		for (i = 0; i < MAX_COPIES; i++)
			if (W.copies[i].va >= m->addr &&
			    W.copies[i].va < m->addr + m->len)
				break;
		if (i == MAX_COPIES)
			return;
		off = W.copies[i].va - m->addr + below(PG);
		if (len > PG - off % PG)
			len = PG - off % PG;
	}
	if (write)
		pattern(data, len, rnd());
	note("%s slot %d %s map %#" PRIx64 "+%#" PRIx64 " prot %d off %#" PRIx64
	     " len %#" PRIx64, write ? "store" : "load", s, mkind(m), m->addr,
	     m->len, m->prot, (uint64_t)off, len);
	x_access(m, off, len, write, data, write ? "store" : "load");
}

/*
 * Put "mov eax, 42; ret" into the file and call it through a mapping (a
 * private one sees the file's page unless it has a copy of it).
 */
void op_exec(int s)
{
	static const uint8_t code[] = { 0xb8, 0x2a, 0, 0, 0, 0xc3 };
	struct slot *sl = S(s);
	int mi = pick_map(s, 0), fdi = pick_fd(s, 1), want, got, ret = 0;
	uint64_t off, lo, hi;
	struct mapent *m;

	if (mi < 0 || fdi < 0)
		return;
	m = &W.maps[mi];
	lo = m->off;
	hi = sl->size < m->off + m->len ? sl->size : m->off + m->len;
	if (hi < lo + sizeof(code))
		return;
	off = lo + below(hi - lo - sizeof(code) + 1);
	if (off % PG > PG - sizeof(code))
		off = PDOWN(off);
	if (!mp_room(sl, off, sizeof(code)) ||
	    (m->priv && cp_find(PDOWN(m->addr + off - m->off))))
		return;
	x_write(s, fdi, off, sizeof(code), 0, code);
	want = m->prot & PROT_EXEC ? 0 : SIGSEGV;
	note("call slot %d %s map %#" PRIx64 " prot %d off %#" PRIx64, s,
	     mkind(m), m->addr, m->prot, off);
	got = gcall((void *)(uintptr_t)(m->addr + off - m->off), &ret);
	if (got != want || (!got && ret != 42))
		mismatch("call through %s map prot %d at offset %#" PRIx64
			 ": %s, returned %d; want %s", mkind(m),
			 m->prot, off, sname(got), ret, sname(want));
	if (!got)
		map_populated(sl, m, off / PG, off / PG + 1);
	/*
	 * Fetching from a mapping without PROT_EXEC faults twice: not
	 * present (an accessible VMA: the fault handler mounts it, which for
	 * an order-1 mapping over a larger morsel splits a leaf at 0), then
	 * NX, which is the SIGSEGV.
	 */
	else if (!m->paged && m->vorder == 1 && sl->order >= 2 &&
		 m->prot != PROT_NONE)
		huge_split(sl, 0);
}

/* Unmap every mapping of @s (truncate, reset, hand-off, the end). */
void unmap_all(int s)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		if (W.maps[i].slot != s)
			continue;
		note("munmap slot %d map %#" PRIx64, s, W.maps[i].addr);
		check("munmap", munmap((void *)(uintptr_t)W.maps[i].addr,
				       W.maps[i].len), 0, 0);
		drop_map(i--);
	}
}
