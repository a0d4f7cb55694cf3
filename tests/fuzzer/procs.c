// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/procs.c: the other processes.  A child (see Children at
 * the top of main.c): op_child plans it and forks it, child_main is what
 * it does on its window W, concurrent_op is what the parent may do to the
 * target slot meanwhile, reap_child stops or kills it and makes W exact
 * again.  A hand-off (see Hand-off there): a slot and an fd of it sent to
 * the next worker over the ring of sockets, one received from the
 * previous.
 *
 * Rules: W.ch is the parent's record of its one child (W.ch.pid > 0 while
 * it runs).  The child has a copy of W from the fork and its own PRNG
 * stream (W.rng = W.ch.rng, drawn by the parent before the fork), works
 * only on its window of the target slot and never changes the model; the
 * parent tells it to stop through sh->w[W.id].stop.  A hand-off passes
 * the slot's ownership: the sender unmaps it and closes its fds first,
 * and the receiver reads the model only after the socket has delivered
 * the slot.
 */
#include "fuzz.h"

/* ---- children ---- */

static void child_verify(int s, const char *what)
{
	struct child *c = &W.ch;
	int fdi = c->fdi, k;
	uint64_t o = c->w0 + PDOWN(below(c->wlen)), len = PG * (1 + below(4));
	ssize_t r;

	if (o + len > c->w0 + c->wlen)
		len = c->w0 + c->wlen - o;
	k = below(3);
	if (k == 1 && c->paddr) {	/* through the private mapping of W */
		int sig = gcopy(iobuf, (char *)(uintptr_t)(c->paddr + o - c->w0),
				len);

		if (sig) {
			mismatch("%s: %s reading W at %#" PRIx64 " through the private"
				 " mapping %#" PRIx64, what, sname(sig), o, c->paddr);
			return;
		}
	} else if (k == 0 && c->nmaps) {
		struct mapent *m = &c->maps[below(c->nmaps)];
		char *p = (char *)(uintptr_t)(m->addr + o);
		int sig = gcopy(iobuf, p, len);

		if (sig) {
			mismatch("%s: %s reading W at %#" PRIx64 " through %#"
				 PRIx64, what, sname(sig), o, m->addr);
			return;
		}
	} else {
		if (o >= c->fend)
			return;
		if (len > c->fend - o)
			len = c->fend - o;
		r = pread(W.fds[s][fdi].fd, iobuf, len, o);
		if (r != (ssize_t)len) {
			mismatch("%s: pread of W returned %zd (%s)", what, r,
				 ename(errno));
			return;
		}
	}
	if (memcmp(iobuf, c->snap + (o - c->w0), len)) {
		uint64_t i = 0;

		while (iobuf[i] == c->snap[o - c->w0 + i])
			i++;
		mismatch("%s: byte at offset %#" PRIx64 " of slot %d: got %#x, want %#x",
			 what, o + i, s, iobuf[i], c->snap[o - c->w0 + i]);
	}
}

static void child_main(void)
{
	struct child *c = &W.ch;
	int s = c->slot, i, fd = W.fds[s][c->fdi].fd, iter;
	struct slot *sl = S(s);

	W.in_child = 1;
	W.printed = 0;
	W.rng = c->rng;
	if (c->pass) {
		int r = morsel_recv_fd(c->sock);

		note("child receives an fd (%s)", mname(c->pass_mode));
		if (r < 0) {
			mismatch("morsel_recv_fd: %s", ename(-r));
			_exit(1);
		}
		fd = r;
	}
	if (c->newmap) {
		void *p;

		note("child mmap prot %d: want %s", c->newprot, ename(c->newexp));
		p = mmap(NULL, ext(sl->order), c->newprot, MAP_SHARED,
			 fd, 0);
		if (p == MAP_FAILED) {
			if (errno != c->newexp) {	/* else: as planned */
				check("child mmap", -1, c->newexp, 0);
				_exit(1);
			}
		} else if (c->newexp) {
			mismatch("child mmap succeeded at %p, want %s", p,
				 ename(c->newexp));
			munmap(p, ext(sl->order));
		} else {
			if (sl->bound && (uintptr_t)p != sl->bound)
				mismatch("child mmap of bound slot at %p, want %#"
					 PRIx64, p, sl->bound);
			c->maps[c->nmaps - 1].addr = (uintptr_t)p;
		}
	}
	for (i = 0; i < c->nl; i++) {
		struct lwrite *l = &c->l[i];
		static uint8_t data[2 * PG];

		pattern(data, l->len, l->pat);
		note("child write %d: off %#" PRIx64 " len %#" PRIx64 " how %d",
		     i, l->off, l->len, l->how);
		if (l->how < 0) {
			ssize_t r = pwrite(W.fds[s][c->fdi].fd, data, l->len,
					   l->off);

			if (r != (ssize_t)l->len)
				mismatch("child pwrite returned %zd (%s)", r,
					 ename(errno));
		} else {
			struct mapent *m = &c->maps[l->how];
			int sig = gcopy((char *)(uintptr_t)(m->addr + l->off), data,
					l->len);

			if (sig != (l->effective ? 0 : SIGSEGV))
				mismatch("child store through prot %d: %s", m->prot,
					 sname(sig));
		}
	}
	/*
	 * A private mapping of W, made after the writes: it faults W's pages
	 * (under the invalidate lock) while the parent evicts and rewrites.
	 */
	if (c->priv) {
		void *p = mmap(NULL, c->wlen, c->pprot, MAP_PRIVATE,
			       W.fds[s][c->fdi].fd, c->w0);

		note("child private mmap of W prot %d", c->pprot);
		if (p == MAP_FAILED)
			mismatch("child private mmap of W: %s", ename(errno));
		else
			c->paddr = (uintptr_t)p;
	}
	for (iter = 0; iter < 4000; iter++) {
		uint64_t o, len;

		if (__atomic_load_n(&sh->w[W.id].stop, __ATOMIC_SEQ_CST))
			break;
		o = c->w0 + PDOWN(below(c->wlen));
		len = PG * (1 + below(3));
		if (o + len > c->w0 + c->wlen)
			len = c->w0 + c->wlen - o;
		switch (below(10)) {
		case 0: case 1: case 2:
			child_verify(s, "child check");
			break;
		case 8:		/* its own copies of the same bytes */
			if (c->paddr && (c->pprot & PROT_WRITE) &&
			    gcopy((char *)(uintptr_t)(c->paddr + o - c->w0),
				  c->snap + (o - c->w0), len))
				mismatch("child store through the private mapping of W");
			break;
		case 3:		/* the same bytes again, inside the size */
			if (o >= c->fend)
				break;
			if (len > c->fend - o)
				len = c->fend - o;
			if (pwrite(W.fds[s][c->fdi].fd, c->snap + (o - c->w0), len, o) !=
			    (ssize_t)len)
				mismatch("child rewrite: %s", ename(errno));
			break;
		case 4:
			for (i = 0; i < c->nmaps; i++) {
				struct mapent *m = &c->maps[i];

				if (m->prot & PROT_WRITE) {
					int sig = gcopy((char *)(uintptr_t)(m->addr + o),
							c->snap + (o - c->w0), len);

					if (sig)
						mismatch("child rewrite through map: %s",
							 sname(sig));
					break;
				}
			}
			break;
		case 5: {
			struct morsel_range r;

			memset(&r, 0, sizeof(r));
			r.offset = o;
			r.length = len;
			if (ioctl(W.fds[s][c->fdi].fd, MORSEL_IOC_POPULATE, &r))
				mismatch("child POPULATE: %s", ename(errno));
			break;
		}
		case 6:
			if (c->nmaps && (c->maps[i = below(c->nmaps)].prot &
					 PROT_READ)) {
				struct mapent *m = &c->maps[i];

				if (madvise((void *)(uintptr_t)(m->addr + o), len,
					    MADV_POPULATE_READ))
					mismatch("child MADV_POPULATE_READ: %s",
						 ename(errno));
			}
			break;
		case 7:
			if (c->nmaps) {
				struct mapent *m = &c->maps[below(c->nmaps)];

				if (mprotect((void *)(uintptr_t)m->addr, m->len,
					     m->prot))
					mismatch("child mprotect same: %s",
						 ename(errno));
			}
			break;
		default:
			sched_yield();
		}
	}
	/* keep the mappings until the parent stops or kills us */
	for (iter = 0; iter < 120000 &&
	     !__atomic_load_n(&sh->w[W.id].stop, __ATOMIC_SEQ_CST); iter++)
		usleep(500);
	_exit(W.printed ? 1 : 0);
}

/* Fork a child on a window of @s (see the top of main.c). */
void op_child(int s)
{
	struct child *c = &W.ch;
	struct slot *sl = S(s);
	uint64_t psz = PALIGN(sl->size), p, e = ext(sl->order);
	int fdi = get_fd(s, 3), i, sv[2] = { -1, -1 }, sendfd = -1;
	pid_t pid;

	if (fdi < 0 || !sl->size || child_alive())
		return;
	/*
	 * No new 2 MiB leaves while the child works on the slot: whether a
	 * hole becomes one depends on who populates it first and with which
	 * hint, which the model cannot know.  An order-1 mapping the child
	 * inherits would split a leaf at offset 0 when it touches it: touch
	 * it here first.
	 */
	if (huge_mode_of(sl) != MORSEL_HUGE_NEVER)
		x_set_huge(s, fdi, MORSEL_HUGE_NEVER);
	for (i = 0; i < W.nmaps && huge_find(sl, 0) >= 0; i++) {
		struct mapent *m = &W.maps[i];

		if (m->slot == s && !m->paged && m->vorder == 1 &&
		    sl->order >= 2 && (m->prot & (PROT_READ | PROT_WRITE)))
			x_access(m, 0, 1, 0, NULL, "load before a child");
	}
	memset(c, 0, sizeof(*c));
	c->slot = s;
	c->fdi = fdi;
	p = model_page(s);
	if (p == NOPAGE || p * PG >= psz || one_in(3))
		p = below(psz / PG);
	c->w0 = p * PG;
	c->wlen = PG * (1 + below(WMAX));
	if (c->wlen > psz - c->w0)
		c->wlen = psz - c->w0;
	c->fend = c->w0 + c->wlen < sl->size ? c->w0 + c->wlen : sl->size;
	c->mode = one_in(2) ? 'A' : 'B';
	if (c->mode == 'A' && !mp_room(sl, c->w0, c->wlen))
		c->mode = 'B';
	c->kill = one_in(2);
	c->left = 1 + below(8);
	c->priv = one_in(2);
	c->pprot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
	c->rng = rnd();
	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		/* paged mappings are inherited too, but count nowhere */
		if (m->dontfork || m->paged)
			continue;
		c->holds[m->slot]++;
		c->holds0[m->slot] += !m->vorder;
		/*
		 * the child uses those that reach W (extents differ now) and
		 * can read it (not PROT_NONE)
		 */
		if (m->slot == s && m->len >= c->w0 + c->wlen && m->prot != PROT_NONE)
			c->maps[c->nmaps++] = *m;
	}
	/* fd passing: the child receives the fd it maps through */
	c->pass = one_in(2);
	if (c->pass) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
			fatal("socketpair");
		c->sock = sv[1];
		if (one_in(2) && sl->named) {
			c->pass_mode = one_in(2) ? O_RDONLY : O_RDWR;
			sendfd = open(path(sl->name), c->pass_mode | O_CLOEXEC);
			if (sendfd < 0) {
				mismatch("open %s for passing: %s", sl->name,
					 ename(errno));
				c->pass_mode = O_RDWR;
			}
		} else {
			c->pass_mode = O_RDWR;
		}
	}
	c->newmap = !c->nmaps || one_in(2);
	if (c->newmap && c->nmaps < MAPS_ROOM + 1) {
		int mode = c->pass ? c->pass_mode : O_RDWR;

		c->newprot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
		if (one_in(4))
			c->newprot |= PROT_EXEC;
		c->newexp = 0;
		/* get_unmapped_area comes before the check of the fd's mode */
		if (sl->bound && occupied(sl->bound, e, 1))
			c->newexp = EEXIST;
		else if ((c->newprot & PROT_WRITE) && !fd_w(mode))
			c->newexp = EACCES;
		if (!c->newexp) {
			memset(&c->maps[c->nmaps], 0, sizeof(c->maps[0]));
			c->maps[c->nmaps].slot = s;
			c->maps[c->nmaps].len = e;
			c->maps[c->nmaps].vorder = sl->order;
			c->maps[c->nmaps].prot = c->newprot;
			c->maps[c->nmaps].addr = 0;
			c->nmaps++;
		}
	} else {
		c->newmap = 0;
	}
	/* the writes of mode A, and W as it must read afterwards */
	m_read(sl, c->w0, c->wlen, c->snap);
	if (c->mode == 'A') {
		c->nl = 1 + below(LMAX);
		for (i = 0; i < c->nl; i++) {
			struct lwrite *l = &c->l[i];
			static uint8_t data[2 * PG];

			/* inside the size: a killed child's writes are redone by pwrite */
			l->off = c->w0 + below(c->fend - c->w0);
			l->len = 1 + below(2 * PG);
			if (l->len > c->fend - l->off)
				l->len = c->fend - l->off;
			l->pat = rnd();
			l->how = c->nmaps && one_in(2) ? (int)below(c->nmaps) : -1;
			l->effective = l->how < 0 ||
				       (c->maps[l->how].prot & PROT_WRITE);
			if (l->effective) {
				pattern(data, l->len, l->pat);
				memcpy(c->snap + (l->off - c->w0), data, l->len);
			}
		}
	}
	note("child on slot %d mode %c W %#" PRIx64 "+%#" PRIx64 " %d writes, %s, "
	     "pass %d, new map %d prot %d, private %d prot %d, %d ops", s,
	     c->mode, c->w0, c->wlen, c->nl, c->kill ? "kill -9" : "stop",
	     c->pass, c->newmap, c->newprot, c->priv, c->pprot, c->left);
	__atomic_store_n(&sh->w[W.id].stop, 0, __ATOMIC_SEQ_CST);
	c->mism0 = __atomic_load_n(&sh->w[W.id].mismatches, __ATOMIC_SEQ_CST);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0) {
		if (c->pass)
			close(sv[0]);
		child_main();
	}
	c->pid = pid;
	if (c->pass) {
		int r = morsel_send_fd(sv[0], sendfd >= 0 ? sendfd : W.fds[s][fdi].fd);

		if (r)
			mismatch("morsel_send_fd: %s", ename(-r));
		close(sv[0]);
		close(sv[1]);
		if (sendfd >= 0)
			close(sendfd);
	}
}

/* Stop or kill the child, then make W and its population exact again. */
void reap_child(void)
{
	struct child *c = &W.ch;
	int s = c->slot, status, i;
	struct slot *sl = S(s);
	uint8_t *data = iobuf;

	note("reap child on slot %d (%s)", s, c->kill ? "kill -9" : "stop");
	if (c->kill)
		kill(c->pid, SIGKILL);
	else
		__atomic_store_n(&sh->w[W.id].stop, 1, __ATOMIC_SEQ_CST);
	if (waitpid(c->pid, &status, 0) != c->pid)
		fatal("waitpid");
	c->pid = 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
		/* the child reported its mismatches itself */
		if (__atomic_load_n(&sh->w[W.id].mismatches, __ATOMIC_SEQ_CST) ==
		    c->mism0)
			mismatch("child on slot %d exited 1 without a report", s);
	} else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0) &&
		   !(c->kill && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
		mismatch("child on slot %d ended with status %#x", s, status);
	}
	/* after a clean exit, W must already read as planned */
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		uint64_t n = c->fend - c->w0;
		ssize_t r = pread(W.fds[s][c->fdi].fd, data, n, c->w0);

		if (r != (ssize_t)n || memcmp(data, c->snap, n))
			mismatch("W of slot %d after the child differs", s);
	}
	/* re-apply the writes (a killed child may have done only some) */
	for (i = 0; i < c->nl; i++) {
		struct lwrite *l = &c->l[i];
		static uint8_t buf[2 * PG];

		if (!l->effective)
			continue;
		pattern(buf, l->len, l->pat);
		if (pwrite(W.fds[s][c->fdi].fd, buf, l->len, l->off) != (ssize_t)l->len)
			mismatch("re-applying a child write: %s", ename(errno));
	}
	for (i = 0; i < (int)(c->wlen / PG); i++) {
		uint8_t *pg = c->snap + i * PG;

		if (all_zero(pg, PG))
			m_zero(sl, c->w0 + i * PG, PG);
		else
			m_write(sl, c->w0 + i * PG, pg, PG);
	}
	x_range(s, c->fdi, 0, c->w0, c->wlen, 0);
}

/*
 * The parent's ops on the target slot while the child runs: nothing that
 * changes the size, order or binding; W only in content-preserving ways
 * (and not at all when the child writes W).
 */
static int hits_w(uint64_t a, uint64_t b)
{
	return a < W.ch.w0 + W.ch.wlen && W.ch.w0 < b;
}

static int w_zero(int s, uint64_t a, uint64_t b)
{
	uint64_t lo = a > W.ch.w0 ? a : W.ch.w0;
	uint64_t hi = b < W.ch.w0 + W.ch.wlen ? b : W.ch.w0 + W.ch.wlen;
	static uint8_t buf[WMAX * PG];

	if (lo >= hi)
		return 1;
	m_read(S(s), lo, hi - lo, buf);
	return all_zero(buf, hi - lo);
}

static void concurrent_raise(int s, int fdi)
{
	struct slot *sl = S(s);
	int o = sl->order + 1 + below(max_order - sl->order), err;
	int prot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
	char *p;

	if (one_in(2) || W.nmaps >= MAX_MAPS) {
		note("SET_MIN_ORDER slot %d order %d during the child", s, o);
		err = morsel_set_min_order(W.fds[s][fdi].fd, o);
		errno = -err;
		if (!check("SET_MIN_ORDER", err ? -1 : 0, 0, 0))
			return;
		sl->min_order = o;
		m_raise(sl, o);
		return;
	}
	note("mmap slot %d len %#" PRIx64 " during the child", s, ext(o));
	p = mmap(NULL, ext(o), prot, MAP_SHARED, W.fds[s][fdi].fd, 0);
	if (!check("mmap shared longer", p == MAP_FAILED ? -1 : 0, 0, 0))
		return;
	if ((uintptr_t)p % ext(o))
		mismatch("mmap slot %d: at %p, want it aligned to %#" PRIx64, s, p,
			 ext(o));
	add_map(s, (uintptr_t)p, ext(o), prot, MK_MOUNTED, o, 0);
	set_maywrite((uintptr_t)p, fd_w(W.fds[s][fdi].mode));
	m_raise(sl, o);
}

void concurrent_op(int s)
{
	struct child *c = &W.ch;
	struct slot *sl = S(s);
	uint64_t sz = sl->size, psz = PALIGN(sz), off, len, end;
	int k = below(12), fdi = c->fdi, mi;
	static uint8_t data[3 * PG];

	off = below(psz);
	if (one_in(2))
		off = c->w0 + below(c->wlen);
	len = 1 + below(2 * PG);
	switch (k) {
	case 0:	case 1:		/* read */
		if (c->mode == 'A' && hits_w(off, off + len))
			break;
		x_read(s, fdi, off, len, below(3), 0);
		return;
	case 2:			/* new bytes outside W, inside the size */
		if (off >= sz || hits_w(off, off + len))
			break;
		if (len > sz - off)
			len = sz - off;
		if (!mp_room(sl, off, len))
			break;
		pattern(data, len, rnd());
		x_write(s, fdi, off, len, 0, data);
		return;
	case 3:			/* the same bytes again */
		if (off >= sz || (c->mode == 'A' && hits_w(off, off + len)))
			break;
		if (len > sz - off)
			len = sz - off;
		m_read(sl, off, len, data);
		x_write(s, fdi, off, len, 0, data);
		return;
	case 4:
		off = PDOWN(off);
		len = PG * (1 + below(8));
		if (off + len > psz)
			len = psz - off;
		x_range(s, fdi, 0, off, len, 0);
		return;
	case 5: case 6:		/* evict / punch: outside W, or zeros of W */
		end = off + len;
		if (k == 5) {
			off = PDOWN(off);
			len = PG * (1 + below(4));
			if (off + len > psz)
				len = psz - off;
			end = off + len;
		}
		if (end >= sz)
			end = psz;	/* the tail of the last page is zeroed */
		if (hits_w(off, end) && (c->mode == 'A' || !w_zero(s, off, end)))
			break;
		if (k == 5)
			x_range(s, fdi, 1, off, len, 0);
		else
			x_fallocate(s, fdi, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				    off, len);
		return;
	case 7:			/* through an own shared mapping */
		mi = pick_map(s, 1);
		if (mi < 0)
			break;
		if (off >= W.maps[mi].len)
			off = W.maps[mi].len - 1;
		if (len > W.maps[mi].len - off)
			len = W.maps[mi].len - off;
		if (one_in(2)) {
			if (c->mode == 'A' && hits_w(off, off + len))
				break;
			note("load slot %d map %#" PRIx64 " off %#" PRIx64, s,
			     W.maps[mi].addr, off);
			x_access(&W.maps[mi], off, len, 0, NULL, "load");
		} else {
			if (off >= sz || hits_w(off, off + len))
				break;
			if (len > sz - off)
				len = sz - off;
			if (!mp_room(sl, off, len))
				break;
			pattern(data, len, rnd());
			note("store slot %d map %#" PRIx64 " off %#" PRIx64, s,
			     W.maps[mi].addr, off);
			x_access(&W.maps[mi], off, len, 1, data, "store");
		}
		return;
	case 8:
		op_rename(s);
		return;
	case 10:
		/*
		 * Raise the order under the child's faults (the root is in
		 * place, so the new tables are known): no content changes.
		 */
		if (sl->bound || !sl->order || sl->order >= max_order ||
		    tab_find(sl, sl->order, 0) < 0)
			break;
		concurrent_raise(s, fdi);
		return;
	case 9:
		if (W.nmaps < MAX_MAPS && one_in(2)) {
			int prot = one_in(2) ? PROT_READ : PROT_READ | PROT_WRITE;
			uint64_t e = ext(sl->order);
			char *p;

			/* the extent of the current order: no order change */
			note("mmap slot %d during the child", s);
			p = mmap(NULL, e, prot, MAP_SHARED, W.fds[s][fdi].fd, 0);
			if (sl->bound && occupied(sl->bound, e, 0)) {
				check("mmap (bound, occupied)", p == MAP_FAILED ? -1 : 0,
				      EEXIST, 0);
				if (p != MAP_FAILED)
					munmap(p, e);
				return;
			}
			if (!check("mmap", p == MAP_FAILED ? -1 : 0, 0, 0))
				return;
			add_map(s, (uintptr_t)p, e, prot, MK_MOUNTED, sl->order, 0);
			set_maywrite((uintptr_t)p, fd_w(W.fds[s][fdi].mode));
		} else if ((mi = pick_map(s, 1)) >= 0) {
			note("munmap slot %d map %#" PRIx64 " during the child", s,
			     W.maps[mi].addr);
			if (check("munmap", munmap((void *)(uintptr_t)W.maps[mi].addr,
						   W.maps[mi].len), 0, 0))
				drop_map(mi);
		}
		return;
	default:
		break;
	}
	x_stat(s, 0);
}

/* ---- hand-offs ---- */

struct handoff {
	int slot, has_fd, mode;
};

static int full_io(int fd, void *buf, size_t len, int wr)
{
	char *p = buf;

	while (len) {
		ssize_t r = wr ? write(fd, p, len) : read(fd, p, len);

		if (r <= 0)
			return -1;
		p += r;
		len -= r;
	}
	return 0;
}

void do_handoff(void)
{
	struct handoff h;
	int k = below(NFILES), s = W.owned[k], fdi = -1, fd;
	struct slot *sl = S(s);

	if (nprocs == 1 || !W.ring_ok)
		return;
	unmap_all(s);
	check_dead(s);
	memset(&h, 0, sizeof(h));
	h.slot = s;
	if (sl->live) {
		fdi = get_fd(s, 3);
		if (fdi < 0)
			fdi = pick_fd(s, 0);
	}
	h.has_fd = fdi >= 0;
	h.mode = fdi >= 0 ? W.fds[s][fdi].mode : 0;
	note("hand-off: send slot %d (%s) to w%d", s,
	     h.has_fd ? mname(h.mode) : "no fd", (W.id + 1) % nprocs);
	if (full_io(W.send_sock, &h, sizeof(h), 1)) {
		W.ring_ok = 0;
		return;
	}
	if (h.has_fd) {
		int r = morsel_send_fd(W.send_sock, W.fds[s][fdi].fd);

		if (r)
			mismatch("morsel_send_fd to w%d: %s", (W.id + 1) % nprocs,
				 ename(-r));
	}
	close_all(s);
	W.owned[k] = -1;
	if (full_io(W.recv_sock, &h, sizeof(h), 0)) {
		/* the previous worker is gone; it was reported */
		W.ring_ok = 0;
		W.owned[k] = s;		/* keep the model consistent */
		sl->live = sl->named;
		return;
	}
	W.owned[k] = h.slot;
	note("hand-off: received slot %d (%s)", h.slot,
	     h.has_fd ? mname(h.mode) : "no fd");
	if (h.has_fd) {
		fd = morsel_recv_fd(W.recv_sock);
		if (fd < 0) {
			mismatch("morsel_recv_fd: %s", ename(-fd));
			W.ring_ok = 0;
			return;
		}
		add_fd(h.slot, fd, h.mode);
		x_stat(h.slot, 1);
	}
}
