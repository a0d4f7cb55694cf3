// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/files.c: operations on a morsel's data through an fd and
 * their checks: read (pread, read, preadv), write (pwrite, write,
 * pwritev), ftruncate and truncate, fallocate in any mode, the POPULATE,
 * EVICT, BIND and SET_MIN_ORDER ioctls, MORSEL_IOC_STAT and
 * MORSEL_IOC_MAPPINGS checked against the model (x_stat), and the choice
 * of their sizes and offsets (often on a boundary).
 *
 * Rules: each x_* function predicts the outcome from the model, makes the
 * call, checks it (report.c), then changes the model as the module does
 * (model.c); after a mismatch the model follows what happened where that
 * is known.  It works on the slots of the calling worker; on a child's
 * target slot only as procs.c concurrent_op allows.  No state of its own
 * apart from the static scratch buffers of single operations.
 */
#include "fuzz.h"

/* ---- checked primitives on files ---- */

static void cmp_bytes(const char *what, int s, uint64_t off,
		      const uint8_t *got, uint64_t len)
{
	m_read(S(s), off, len, expbuf);
	if (memcmp(got, expbuf, len)) {
		uint64_t i = 0;

		while (got[i] == expbuf[i])
			i++;
		mismatch("%s: byte at offset %#" PRIx64 " of slot %d (size %#"
			 PRIx64 "): got %#x, want %#x", what, off + i, s,
			 S(s)->size, got[i], expbuf[i]);
	}
}

/* read(2) family: method 0 pread, 1 lseek+read, 2 preadv (2 iovecs). */
void x_read(int s, int fdi, int64_t off, uint64_t len, int method,
	    int bad)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	uint8_t *buf = bad ? (uint8_t *)badbuf : iobuf;
	int want = 0;
	uint64_t n = 0;
	ssize_t r;

	note("read slot %d fd %s off %" PRId64 " len %" PRIu64 " method %d%s",
	     s, mname(f->mode), off, len, method, bad ? " badbuf" : "");
	if (off < 0 || (method == 1 && (uint64_t)off > max_bytes))
		method = 0;
	if (off < 0)
		want = EINVAL;		/* ksys_pread64 checks it first */
	else if (!fd_r(f->mode))
		want = EBADF;
	else if ((uint64_t)off + len > (uint64_t)INT64_MAX)
		want = EINVAL;
	else if ((uint64_t)off >= sl->size)
		n = 0;
	else if (bad)
		want = EFAULT;
	else
		n = len < sl->size - off ? len : sl->size - off;
	if (method == 1) {
		if (lseek(f->fd, off, SEEK_SET) != off) {
			mismatch("lseek(%" PRId64 ") failed: %s", off,
				 ename(errno));
			return;
		}
		r = read(f->fd, buf, len);
	} else if (method == 2 && len > 1) {
		struct iovec iov[2] = {
			{ buf, len / 2 }, { buf + len / 2, len - len / 2 } };

		r = preadv(f->fd, iov, 2, off);
	} else {
		r = pread(f->fd, buf, len, off);
	}
	if (!check("read", r, want, 0))
		return;
	if ((uint64_t)r != n) {
		mismatch("read slot %d off %" PRId64 " len %" PRIu64
			 ": returned %zd, want %" PRIu64, s, off, len, r, n);
		return;
	}
	cmp_bytes("read", s, off, buf, n);
}

/*
 * write(2) family: method 0 pwrite, 1 lseek+write, 2 pwritev.  @data is
 * the bytes (NULL: the bad buffer).
 */
void x_write(int s, int fdi, int64_t off, uint64_t len, int method,
	     const uint8_t *data)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	int want = 0, want2 = 0, order = sl->order, need = order;
	uint64_t count = len;
	ssize_t r;

	note("write slot %d fd %s off %" PRId64 " len %" PRIu64 " method %d%s",
	     s, mname(f->mode), off, len, method, data ? "" : " badbuf");
	if (off < 0 || (method == 1 && (uint64_t)off > max_bytes))
		method = 0;
	if (off < 0) {
		want = EINVAL;		/* ksys_pwrite64 checks it first */
	} else if (!fd_w(f->mode)) {
		want = EBADF;
	} else if ((uint64_t)off + len > (uint64_t)INT64_MAX) {
		want = EINVAL;
	} else if ((uint64_t)off >= max_bytes) {
		want = EFBIG;
	} else {
		if (count > max_bytes - off)
			count = max_bytes - off;
		/* the order rises also while mapped; only a binding refuses */
		need = wanted(sl, off + count);
		if (need > order && !bound_ok(sl->bound, need))
			want = EBUSY;
		else if (!data)
			want = EFAULT;
	}
	if (method == 1) {
		if (lseek(f->fd, off, SEEK_SET) != off) {
			mismatch("lseek(%" PRId64 ") failed: %s", off,
				 ename(errno));
			return;
		}
		r = write(f->fd, data ? data : (uint8_t *)badbuf, len);
	} else if (method == 2 && len > 1 && data) {
		struct iovec iov[2] = {
			{ (void *)data, len / 2 },
			{ (void *)(data + len / 2), len - len / 2 } };

		r = pwritev(f->fd, iov, 2, off);
	} else {
		r = pwrite(f->fd, data ? data : (uint8_t *)badbuf, len, off);
	}
	if (want == EFAULT && r == -1 && errno == EFAULT) {
		/*
		 * The order was raised and the page at off populated before
		 * the copy failed; what lies past the size is freed again
		 * (trim_past_size, in the raised extent), and the order falls
		 * back to what the size wants unless a shared mapping holds it
		 * (morsel_fit_order).
		 */
		int grown = need > order ? need : order;
		uint64_t end = PALIGN(off + PG) < ext(grown) ? PALIGN(off + PG) :
							       ext(grown);

		m_zero_past_size(sl, off);	/* before the copy */
		m_raise(sl, grown);
		runs_add(sl, off / PG, off / PG + 1);
		sl->churn++;
		m_free_pages(s, PALIGN(sl->size), end);
		if (grown > order)
			m_fit(s);
		errno = EFAULT;
	}
	if (!check("write", r, want, want2))
		return;
	if ((uint64_t)r != count) {
		mismatch("write slot %d off %" PRId64 " len %" PRIu64
			 ": returned %zd, want %" PRIu64, s, off, len, r, count);
		if (r <= 0)
			return;
		count = r;
	}
	m_raise(sl, need);
	m_zero_past_size(sl, off);
	m_write(sl, off, data, count);
	runs_add(sl, off / PG, (off + count - 1) / PG + 1);
	sl->churn++;
	if (off + count > sl->size)
		sl->size = off + count;
}

/*
 * MORSEL_IOC_POPULATE / EVICT.  @bad: 0 none, 1 flags, 2 reserved,
 * 3 bad pointer.
 */
void x_range(int s, int fdi, int evict, uint64_t off, uint64_t len,
	     int bad)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	struct morsel_range r;
	int want = 0;
	long ret;

	note("%s slot %d fd %s off %#" PRIx64 " len %#" PRIx64 " bad %d",
	     evict ? "EVICT" : "POPULATE", s, mname(f->mode), off, len, bad);
	memset(&r, 0, sizeof(r));
	r.offset = off;
	r.length = len;
	if (bad == 1)		/* bit 0 is POPULATE's MORSEL_POPULATE_HUGE */
		r.flags = 2;
	if (bad == 2)
		r.reserved[below(5)] = 1;
	if (!fd_w(f->mode))
		want = EBADF;
	else if (bad == 3)
		want = EFAULT;
	else if (bad)
		want = EINVAL;
	else if (!len || off % PG || len % PG || off + len < off ||
		 off + len > PALIGN(sl->size))
		want = EINVAL;
	if (!evict && W.hint == 1)
		r.flags |= MORSEL_POPULATE_HUGE;
	ret = ioctl(f->fd, evict ? MORSEL_IOC_EVICT : MORSEL_IOC_POPULATE,
		    bad == 3 ? (void *)badbuf : (void *)&r);
	if (!check(evict ? "EVICT" : "POPULATE", ret, want, 0))
		return;
	if (evict) {
		m_evict(s, off, off + len < sl->size ? off + len : sl->size);
	} else {
		W.range = 1;	/* morsel_populate_range */
		runs_add(sl, off / PG, (off + len) / PG);
		W.range = 0;
		sl->churn++;
	}
}

/*
 * MORSEL_IOC_SET_HUGE: the file's own huge-page mode (huge.c); @mode past
 * MORSEL_HUGE_INHERIT is refused.
 */
void x_set_huge(int s, int fdi, uint64_t mode)
{
	struct morsel_huge h = { .mode = mode };
	struct fdent *f = &W.fds[s][fdi];
	int want = 0;

	note("SET_HUGE slot %d fd %s mode %" PRIu64, s, mname(f->mode), mode);
	if (!fd_w(f->mode))
		want = EBADF;
	else if (mode > MORSEL_HUGE_INHERIT)
		want = EINVAL;
	if (check("SET_HUGE", ioctl(f->fd, MORSEL_IOC_SET_HUGE, &h), want, 0) &&
	    !want)
		S(s)->huge_mode = mode;
}

void op_huge(int s)
{
	static const uint64_t modes[] = {
		MORSEL_HUGE_ALWAYS, MORSEL_HUGE_ALWAYS, MORSEL_HUGE_ADVISE,
		MORSEL_HUGE_WITHIN_SIZE, MORSEL_HUGE_NEVER, MORSEL_HUGE_INHERIT,
		MORSEL_HUGE_INHERIT + 1,
	};
	int fdi = pick_fd(s, one_in(8) ? 0 : 1);

	if (fdi >= 0)
		x_set_huge(s, fdi, modes[below(7)]);
}

/*
 * MORSEL_IOC_COLLAPSE of one aligned 2 MiB (or a bad range): refused while
 * a shared mapping mounts the morsel, below order 2; a 2 MiB with a hole
 * is left (EAGAIN); a full one becomes a leaf; a leaf stays one.
 */
void op_collapse(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(8) ? 0 : 1), want = 0;
	uint64_t psz = PALIGN(sl->size), c, off, len = ext(1);
	struct morsel_range r;
	struct fdent *f;

	if (fdi < 0)
		return;
	f = &W.fds[s][fdi];
	c = psz >= ext(1) ? below(psz / ext(1)) : 0;
	off = c * ext(1);
	if (one_in(8))
		len = PG;		/* accepted; collapses nothing */
	memset(&r, 0, sizeof(r));
	r.offset = off;
	r.length = len;
	if (one_in(16))
		r.flags = 1;
	note("COLLAPSE slot %d fd %s off %#" PRIx64 " len %#" PRIx64 " flags %llu",
	     s, mname(f->mode), off, len, (unsigned long long)r.flags);
	if (!fd_w(f->mode))
		want = EBADF;
	else if (r.flags || off + len > psz)
		want = EINVAL;
	else if (mapped(s))
		want = EBUSY;
	else if (sl->order < 2)
		want = EOPNOTSUPP;
	else if (len == ext(1) && huge_find(sl, c) < 0 && !chunk_full(sl, c))
		want = EAGAIN;
	if (!check("COLLAPSE", ioctl(f->fd, MORSEL_IOC_COLLAPSE, &r), want, 0))
		return;
	if (len == ext(1) && huge_find(sl, c) < 0)
		huge_collapse(sl, c);
}

/*
 * The most a reservation of [@a, @b) at order @order charges (size.c):
 * its pages and one table per level for each table span it touches.
 */
static uint64_t resv_charge(uint64_t a, uint64_t b, int order)
{
	uint64_t n = (b - a) / PG;
	int l;

	for (l = 1; l <= order; l++)
		n += (b + ext(l) - 1) / ext(l) - a / ext(l);
	return n;
}

/* Reservations above this are not made: many would fill the instance. */
#define RESV_MAX	1024

/* fallocate(2), any mode. */
void x_fallocate(int s, int fdi, int mode, int64_t off, int64_t len)
{
	struct fdent *f = &W.fds[s][fdi];
	struct slot *sl = S(s);
	int want = 0, order = sl->order, neworder = order, rw = order;
	/* UNSHARE_RANGE allocates as mode 0 does (file.c) */
	int mm = mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_UNSHARE_RANGE);
	int late = 0, got;
	uint64_t end, rs = 0, re = 0;
	long ret;

	note("fallocate slot %d fd %s mode %#x off %" PRId64 " len %" PRId64,
	     s, mname(f->mode), mode, off, len);
	if (off < 0 || len <= 0)
		want = EINVAL;
	else if ((mm == FALLOC_FL_PUNCH_HOLE && !(mode & FALLOC_FL_KEEP_SIZE)) ||
		 (mm == FALLOC_FL_COLLAPSE_RANGE && (mode & FALLOC_FL_KEEP_SIZE)))
		want = EOPNOTSUPP;
	else if (!fd_w(f->mode))
		want = EBADF;
	else if ((uint64_t)off + len > max_bytes ||
		 (uint64_t)off + len > (uint64_t)INT64_MAX)
		want = EFBIG;
	else if (mm && mm != FALLOC_FL_PUNCH_HOLE && mm != FALLOC_FL_ZERO_RANGE)
		want = EOPNOTSUPP;
	else if (mm != FALLOC_FL_PUNCH_HOLE && !(mode & FALLOC_FL_KEEP_SIZE) &&
		 (uint64_t)off + len > sl->size) {
		neworder = wanted(sl, off + len);
		if (neworder > order && !bound_ok(sl->bound, neworder))
			want = EBUSY;
		if (neworder < order)
			neworder = order;
	} else if (mm != FALLOC_FL_PUNCH_HOLE &&
		   PALIGN((uint64_t)off + len) > PALIGN(sl->size)) {
		/*
		 * KEEP_SIZE past the size reserves the rest (size.c), one
		 * range per file, after populating up to the size: its
		 * errors come late.
		 */
		uint64_t keep = sl->resv_end;

		rs = PDOWN(off) > PALIGN(sl->size) ? PDOWN(off) : PALIGN(sl->size);
		re = PALIGN((uint64_t)off + len);
		if (sl->resv_end) {
			rs = rs < sl->resv_start ? rs : sl->resv_start;
			re = re > sl->resv_end ? re : sl->resv_end;
		}
		sl->resv_end = re;
		rw = wanted(sl, sl->size);
		sl->resv_end = keep;
		if (rw < order)
			rw = order;
		if (resv_charge(rs, re, rw) > RESV_MAX) {
			note("fallocate: not made, it would reserve %" PRIu64
			     " pages", resv_charge(rs, re, rw));
			return;
		}
		if (rw > order && !bound_ok(sl->bound, rw))
			late = EBUSY;
	}
	ret = fallocate(f->fd, mode, off, len);
	got = ret == -1 ? errno : 0;
	if (!check("fallocate", ret, want ? want : late, 0) &&
	    (want || got != late))
		return;
	end = off + len;
	m_raise(sl, neworder);
	if (mm == FALLOC_FL_PUNCH_HOLE) {
		if ((uint64_t)off < sl->size)
			m_evict(s, off, end < sl->size ? end : sl->size);
		return;
	}
	/* ZERO_RANGE: the part inside the file as a punch, then as mode 0. */
	if (mm == FALLOC_FL_ZERO_RANGE && (uint64_t)off < sl->size)
		m_evict(s, off, end < sl->size ? end : sl->size);
	{
		uint64_t pend = PALIGN(end) < ext(neworder) ? PALIGN(end) :
							       ext(neworder);

		if ((mode & FALLOC_FL_KEEP_SIZE) && pend > PALIGN(sl->size))
			pend = PALIGN(sl->size);	/* KEEP_SIZE: not past the size */
		if (PDOWN(off) < pend) {
			W.range = 1;	/* morsel_populate_range */
			runs_add(sl, PDOWN(off) / PG, pend / PG);
			W.range = 0;
			sl->churn++;
		}
	}
	if (rs < re && !got) {
		sl->resv_start = rs;
		sl->resv_end = re;
		m_raise(sl, rw);
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > sl->size) {
		m_zero_past_size(sl, end);
		sl->size = end;
	}
}

/* ftruncate (fdi >= 0) or truncate(path) (fdi < 0). */
void x_truncate(int s, int fdi, int64_t size)
{
	struct slot *sl = S(s);
	int want = 0;
	long ret;

	note("truncate slot %d %s%s to %" PRId64, s, fdi < 0 ? "path" : "fd ",
	     fdi < 0 ? "" : mname(W.fds[s][fdi].mode), size);
	if (size < 0 || (fdi >= 0 && !fd_w(W.fds[s][fdi].mode))) {
		want = EINVAL;
	} else if ((uint64_t)size > max_bytes) {
		want = EFBIG;
	} else if ((uint64_t)size != sl->size) {
		/* shrinking and a new order work also while mapped */
		int w = wanted(sl, size);

		if (w > sl->order && !bound_ok(sl->bound, w))
			want = EBUSY;
	}
	if (fdi >= 0)
		ret = ftruncate(W.fds[s][fdi].fd, size);
	else
		ret = truncate(path(sl->name), size);
	if (check("truncate", ret, want, 0))
		m_resize(s, size);
}

/* ---- checks of STAT and MAPPINGS ---- */

/*
 * After a page count differs: the file's populated runs as SEEK_DATA and
 * SEEK_HOLE see them, beside the model's (the first few of each).
 */
static void runs_diff(int s, int fdi)
{
	struct slot *sl = S(s);
	char got[300] = "", want[300] = "";
	off_t a = 0, b;
	int n = 0, m = 0, i;

	while (n < 280) {
		a = lseek(W.fds[s][fdi].fd, a, SEEK_DATA);
		if (a < 0)
			break;
		b = lseek(W.fds[s][fdi].fd, a, SEEK_HOLE);
		if (b < 0)
			break;
		n += snprintf(got + n, sizeof(got) - n, " [%#llx,%#llx)",
			      (unsigned long long)a / PG,
			      (unsigned long long)(b + PG - 1) / PG);
		a = b;
	}
	for (i = 0; i < sl->nruns && m < 280; i++)
		m += snprintf(want + m, sizeof(want) - m, " [%#" PRIx64 ",%#" PRIx64 ")",
			      sl->runs[i].a, sl->runs[i].b);
	mismatch("  pages of slot %d:%s", s, got);
	mismatch("  model's pages:%s", want);
}

void x_stat(int s, int full)
{
	struct slot *sl = S(s);
	struct morsel_stat st;
	struct stat fst;
	int fdi = pick_fd(s, 0), order = sl->order, l, err;

	if (fdi < 0)
		return;
	note("stat slot %d%s", s, full ? "" : " (partial)");
	if (fstat(W.fds[s][fdi].fd, &fst) || (uint64_t)fst.st_size != sl->size ||
	    fst.st_nlink != (nlink_t)sl->named)
		mismatch("fstat slot %d: size %lld nlink %lu, want %#" PRIx64 " and %d",
			 s, (long long)fst.st_size, (unsigned long)fst.st_nlink,
			 sl->size, sl->named);
	err = morsel_stat(W.fds[s][fdi].fd, &st);
	if (err) {
		mismatch("MORSEL_IOC_STAT slot %d: %s", s, ename(-err));
		return;
	}
	if (st.order != (uint64_t)order || st.extent != ext(order) ||
	    st.size != sl->size || st.bound != sl->bound ||
	    st.min_order != (uint64_t)sl->min_order) {
		mismatch("STAT slot %d: order %llu extent %#llx size %#llx bound %#llx"
			 " min_order %llu, want order %d size %#" PRIx64 " bound %#"
			 PRIx64 " min_order %d", s,
			 (unsigned long long)st.order,
			 (unsigned long long)st.extent,
			 (unsigned long long)st.size,
			 (unsigned long long)st.bound,
			 (unsigned long long)st.min_order, order, sl->size,
			 sl->bound, sl->min_order);
		if (st.order <= (uint64_t)max_order) {	/* follow reality */
			sl->order = order = st.order;
			sl->tables_bad = 1;
		}
	}
	for (l = order; l < MORSEL_TABLE_LEVELS; l++)
		if (st.tables[l])
			mismatch("STAT slot %d: order %d has %llu tables of level %d",
				 s, order, (unsigned long long)st.tables[l], l + 1);
	if (order && st.tables[order - 1] > 1)
		mismatch("STAT slot %d: %llu root tables", s,
			 (unsigned long long)st.tables[order - 1]);
	/* a populated morsel of order >= 1 has its root table */
	if (order && st.pages && st.tables[order - 1] != 1)
		mismatch("STAT slot %d: order %d with %llu pages but no root table",
			 s, order, (unsigned long long)st.pages);
	if (!full)
		return;
	if (!sl->tables_bad && st.huge != (uint64_t)sl->nhuge)
		mismatch("STAT slot %d: %llu 2 MiB leaves, model %d", s,
			 (unsigned long long)st.huge, sl->nhuge);
	/* every table, exactly: an order rise adds, free_range removes */
	for (l = 0; l < MORSEL_TABLE_LEVELS && !sl->tables_bad; l++)
		if (st.tables[l] != tab_count(sl, l + 1)) {
			mismatch("STAT slot %d: order %d, tables %llu %llu %llu %llu"
				 ", model %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
				 PRIu64 " (levels 1-4)", s, order,
				 (unsigned long long)st.tables[0],
				 (unsigned long long)st.tables[1],
				 (unsigned long long)st.tables[2],
				 (unsigned long long)st.tables[3],
				 tab_count(sl, 1), tab_count(sl, 2),
				 tab_count(sl, 3), tab_count(sl, 4));
			{
				char list[300] = "";
				int i, n = 0;

				for (i = 0; i < sl->ntables && n < 280; i++)
					if (sl->tables[i].level == l + 1)
						n += snprintf(list + n, sizeof(list) - n,
							      " %" PRIu64, sl->tables[i].idx);
				for (i = 0; i < sl->nhuge && n < 280; i++)
					n += snprintf(list + n, sizeof(list) - n,
						      " H%" PRIu64, sl->huge[i]);
				mismatch("  model's level-%d tables and leaves:%s",
					 l + 1, list);
			}
			sl->tables_bad = 1;
		}
	if ((uint64_t)fst.st_blocks != runs_count(sl) * (PG / 512))
		mismatch("fstat slot %d: st_blocks %lld, model %" PRIu64 " pages",
			 s, (long long)fst.st_blocks, runs_count(sl));
	if (st.pages != runs_count(sl)) {
		mismatch("STAT slot %d: %llu pages populated, model %" PRIu64,
			 s, (unsigned long long)st.pages, runs_count(sl));
		runs_diff(s, fdi);
	}
	if (st.huge_mode != (uint64_t)huge_mode_of(sl))
		mismatch("STAT slot %d: huge mode %llu, model %d", s,
			 (unsigned long long)st.huge_mode, sl->huge_mode);
	if (st.mappings != (uint64_t)own_maps_kind(s, 1) +
	    (child_alive() ? W.ch.holds[s] : 0)) {
		struct morsel_mapping mm[8];
		char list[400] = "";
		int n = morsel_mappings(W.fds[s][fdi].fd, mm, 8), i;

		for (i = 0; i < n && i < 8; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 " [%#llx prot %llu pid %llu flags %llu]",
				 (unsigned long long)mm[i].addr,
				 (unsigned long long)mm[i].prot,
				 (unsigned long long)mm[i].pid,
				 (unsigned long long)mm[i].flags);
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (child_alive())
			waitid(P_PID, W.ch.pid, &si, WEXITED | WNOHANG | WNOWAIT);
		mismatch("STAT slot %d: %llu mappings, model %d own + %d in child %d"
			 " (pid %d; child %s, code %d status %d);%s", s,
			 (unsigned long long)st.mappings,
			 own_maps_kind(s, 1), child_alive() ? W.ch.holds[s] : 0,
			 child_alive() ? W.ch.pid : 0, (int)getpid(),
			 si.si_pid ? "exited" : "running", si.si_code,
			 si.si_status, list);
	}
	if (!child_alive()) {
		struct morsel_mapping mm[MAPS_ROOM + 2];
		int n = morsel_mappings(W.fds[s][fdi].fd, mm, MAPS_ROOM + 2), i, j;

		/* page-by-page mappings are neither counted nor listed */
		if (n != own_maps_kind(s, 1)) {
			mismatch("MAPPINGS slot %d: %d, model %d", s, n,
				 own_maps_kind(s, 1));
			return;
		}
		for (i = 0; i < n; i++) {
			for (j = 0; j < W.nmaps; j++) {
				struct mapent *m = &W.maps[j];
				uint64_t prot = (m->prot & PROT_READ ? MORSEL_PROT_READ : 0) |
					(m->prot & PROT_WRITE ? MORSEL_PROT_WRITE : 0) |
					(m->prot & PROT_EXEC ? MORSEL_PROT_EXEC : 0);

				if (m->slot == s && !m->paged && m->addr == mm[i].addr &&
				    prot == mm[i].prot &&
				    mm[i].pid == (uint64_t)getpid())
					break;
			}
			if (j == W.nmaps)
				mismatch("MAPPINGS slot %d: unknown entry addr %#llx prot %llu pid %llu",
					 s, (unsigned long long)mm[i].addr,
					 (unsigned long long)mm[i].prot,
					 (unsigned long long)mm[i].pid);
		}
	}
}

/* ---- argument choice ---- */

int64_t pick_size(int s)
{
	struct slot *sl = S(s);
	static const uint64_t edges[] = {
		0, 1, PG - 1, PG, PG + 1, 2 * PG, 2 * MiB - 1, 2 * MiB,
		2 * MiB + 1, 1 * GiB - 1, 1 * GiB, 1 * GiB + 1, 512 * GiB - 1,
		512 * GiB, 512 * GiB + 1, 256 * TiB - 1, 256 * TiB,
		256 * TiB + 1, 1ULL << 62,
	};
	uint64_t r = below(100), o, lo;

	/* a mapped morsel cut to nothing: what do its mappings see? */
	if (mapped(s) && one_in(8))
		return 0;
	if (r < 35)
		return edges[below(sizeof(edges) / sizeof(edges[0]))];
	if (r < 37)
		return -1;
	if (r < 39)
		return one_in(2) ? max_bytes : max_bytes + 1;
	if (r < 60) {
		o = below(max_order + 1);
		lo = o ? ext(o - 1) + 1 : 0;
		return lo + below(ext(o) - lo + 1);
	}
	if (r < 80) {
		int64_t d = (int64_t)below(6 * PG) - 3 * (int64_t)PG;

		return (int64_t)sl->size + d < 0 ? 0 : (int64_t)sl->size + d;
	}
	if (r < 92)
		return below(64 * KiB);
	return one_in(2) ? sl->size / 2 : sl->size * 2 + 1;
}

/* A file offset for read/write/fallocate, often on a boundary. */
static int64_t pick_off(int s)
{
	struct slot *sl = S(s);
	uint64_t sz = sl->size, e = ext(sl->order), r = below(100), p;

	if (r < 15 && sz)
		return below(sz);
	if (r < 32 && (p = model_page(s)) != NOPAGE)
		return p * PG + below(PG);
	if (r < 38 && sl->nruns)
		return sl->runs[below(sl->nruns)].a * PG + below(64);
	if (r < 62) {
		uint64_t c[] = { 0, sz ? sz - 1 : 0, sz, sz + 1,
				 PALIGN(sz) ? PALIGN(sz) - 1 : 0, PALIGN(sz),
				 e - 1, e, e + 1, PG - 1, PG, 2 * MiB - 1,
				 2 * MiB, 1 * GiB - 1, 1 * GiB, sz > 8 ? sz - 8 : 0 };

		return c[below(sizeof(c) / sizeof(c[0]))];
	}
	if (r < 66) {
		uint64_t c[] = { max_bytes - 1, max_bytes - PG, max_bytes,
				 max_bytes + 1 };

		return c[below(4)];
	}
	if (r < 68) {
		int64_t c[] = { -1, INT64_MAX - 100, 1LL << 62, -(int64_t)PG };

		return c[below(4)];
	}
	if (r < 88)
		return below(e);
	return below(2 * sz + PG);
}

/* Shrink a write so that the model can hold it; returns the length. */
uint64_t fit_write(int s, int64_t *off, uint64_t len)
{
	struct slot *sl = S(s);
	uint64_t p;

	if (*off < 0 || (uint64_t)*off >= max_bytes || mp_room(sl, *off, len))
		return len;
	p = model_page(s);
	if (p == NOPAGE)
		return len;
	*off = p * PG + below(PG);
	if (len > PG - *off % PG)
		len = PG - *off % PG;
	return len;
}

/* ---- operations ---- */

void op_truncate(int s)
{
	int fdi = pick_fd(s, one_in(4) ? 0 : 1);

	if (fdi < 0 && !S(s)->named)
		return;
	if (fdi >= 0 && S(s)->named && one_in(4))
		fdi = -1;
	if (one_in(4) && (fdi >= 0 || S(s)->named)) {
		/* unmapped now and then, so that the order falls too */
		unmap_all(s);
		if (fdi < 0 && !S(s)->named)
			return;
	}
	x_truncate(s, fdi, pick_size(s));
}

void op_write(int s)
{
	int fdi = pick_fd(s, one_in(8) ? 0 : 1), method = below(3);
	int64_t off = pick_off(s);
	uint64_t len = one_in(3) ? 1 + below(16) : 1 + below(3 * PG);
	uint8_t *data = wrbuf;

	if (fdi < 0)
		return;
	len = fit_write(s, &off, len);
	pattern(data, len, rnd());
	x_write(s, fdi, off, len, method, one_in(25) ? NULL : data);
}

void op_read(int s)
{
	int fdi = pick_fd(s, one_in(8) ? 0 : 2);
	int64_t off = pick_off(s);
	uint64_t len = one_in(3) ? 1 + below(64) : 1 + below(WMAX * PG);

	if (fdi < 0)
		return;
	x_read(s, fdi, off, len, below(3), one_in(25));
}

void op_range(int s, int evict)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), bad = 0;
	uint64_t off, len, psz = PALIGN(sl->size), r = below(20);

	if (fdi < 0)
		return;
	if (evict && one_in(4)) {
		off = 0;
		len = psz;
	} else if (one_in(4) && psz >= ext(1)) {
		/* whole 2 MiB ranges, where leaves go (asked for, or not) */
		off = below(psz / ext(1)) * ext(1);
		len = ext(1) * (1 + below(2));
		if (off + len > psz)
			len = ext(1);
		if (!evict && one_in(2))
			W.hint = 1;	/* MORSEL_POPULATE_HUGE */
	} else {
		off = psz ? PDOWN(below(psz)) : 0;
		if (one_in(3) && mp_count(sl))
			off = model_page(s) * PG;
		len = PG * (1 + below(one_in(8) ? CAP_POP / PG : 16));
		if (off + len > psz && psz > off)
			len = psz - off;
	}
	if (r == 0)
		off += 1 + below(PG - 1);
	else if (r == 1)
		len += 1 + below(PG - 1);
	else if (r == 2)
		len = 0;
	else if (r == 3)
		off = psz;
	else if (r == 4) {
		off = PG;
		len = ~0ULL & ~(PG - 1);
	} else if (r == 5)
		bad = 1 + below(3);
	x_range(s, fdi, evict, off, len, bad);
}

/*
 * MORSEL_IOC_MIGRATE of a range to a node: the contents, the pages and
 * the leaves stay what they were (the model does not change), whatever
 * moved; a node without memory, a bad range, flags or reserved give
 * EINVAL.  mem_nodes is how many nodes have memory (the first ones).
 */
void op_migrate(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(8) ? 0 : 1), want = 0, bad = 0;
	uint64_t off, len, end, psz = PALIGN(sl->size), r = below(16);
	struct morsel_migrate m;
	struct fdent *f;

	if (fdi < 0)
		return;
	f = &W.fds[s][fdi];
	off = psz ? PDOWN(below(psz)) : 0;
	len = one_in(3) ? 0 : PG * (1 + below(psz / PG + 1));
	if (r == 0)
		off += 1 + below(PG - 1);
	else if (r == 1)
		off = psz + PG;
	else if (r == 2)
		bad = 1 + below(3);
	memset(&m, 0, sizeof(m));
	m.offset = off;
	m.length = len;
	m.node = below(mem_nodes + 1);	/* one past: no memory */
	if (bad == 1)
		m.flags = 1;
	else if (bad == 2)
		m.reserved[below(3)] = 1;
	else if (bad == 3)
		m.node = 64;
	note("MIGRATE slot %d fd %s off %#" PRIx64 " len %#" PRIx64 " node %llu bad %d",
	     s, mname(f->mode), off, len, (unsigned long long)m.node, bad);
	end = len ? off + len : (off > psz ? off : psz);
	if (!fd_w(f->mode))
		want = EBADF;
	else if (bad || m.node >= (uint64_t)mem_nodes || off % PG || len % PG ||
		 off + len < off || end > psz)
		want = EINVAL;
	check("MIGRATE", ioctl(f->fd, MORSEL_IOC_MIGRATE, &m), want, 0);
}

void op_punch(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), mode = FALLOC_FL_PUNCH_HOLE |
		  FALLOC_FL_KEEP_SIZE;
	int64_t off = pick_off(s), len = 1 + below(3 * PG);
	uint64_t r = below(30);

	if (fdi < 0)
		return;
	if (r < 3)
		len = sl->size + PG;
	else if (r == 3)
		len = 0;
	else if (r == 4)
		len = -(int64_t)PG;
	else if (r == 5)
		mode = FALLOC_FL_PUNCH_HOLE;
	else if (r == 6)
		mode = FALLOC_FL_ZERO_RANGE | (one_in(2) ? FALLOC_FL_KEEP_SIZE : 0);
	else if (r == 7)
		mode = FALLOC_FL_COLLAPSE_RANGE;
	else if (r == 8)
		len = max_bytes;
	x_fallocate(s, fdi, mode, off, len);
}

void op_falloc(int s)
{
	int fdi = pick_fd(s, one_in(6) ? 0 : 1);
	int mode = one_in(2) ? 0 : FALLOC_FL_KEEP_SIZE;
	int64_t off = pick_off(s), len = 1 + below(one_in(8) ? CAP_POP : 16 * PG);

	if (fdi < 0)
		return;
	if (one_in(6))
		mode |= FALLOC_FL_UNSHARE_RANGE;
	if (one_in(20))
		len = one_in(2) ? 0 : -1;
	x_fallocate(s, fdi, mode, off, len);
}

void op_bind(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), order = sl->order;
	int want = 0, bad = below(20);
	uint64_t e = ext(order), a, n;
	struct morsel_bind b;
	long r;

	if (fdi < 0)
		return;
	n = order >= 3 ? 1 : ext(3) / e < 64 ? ext(3) / e : 64;
	a = bind_base(s, order) + e * below(n);
	switch (below(12)) {
	case 0: a = 0; break;
	case 1: a += e > PG ? PG : 1; break;
	case 2: a = task_max + PG - e; break;
	case 3: a = ~0ULL & ~(e - 1); break;
	case 4: a = 1ULL << 57; break;
	case 5: if (sl->bound) a = sl->bound; break;
	}
	memset(&b, 0, sizeof(b));
	b.addr = a;
	if (bad == 0)
		b.flags = 1;
	else if (bad == 1)
		b.reserved[below(6)] = 1;
	if (!fd_w(W.fds[s][fdi].mode))
		want = EBADF;
	else if (bad == 2)
		want = EFAULT;
	else if (bad < 2 || !a || a % e || a + e < a || a + e > task_max)
		want = EINVAL;
	else if (a == sl->bound)
		want = 0;
	else if (sl->bound || mapped(s))
		want = EBUSY;
	note("bind slot %d fd %s to %#" PRIx64 " (order %d, bad %d)", s,
	     mname(W.fds[s][fdi].mode), a, order, bad);
	r = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_BIND,
		  bad == 2 ? (void *)badbuf : (void *)&b);
	if (check("BIND", r, want, 0))
		sl->bound = a;
}

/*
 * MORSEL_IOC_SET_MIN_ORDER: the order rises to it at once (mapped or
 * not; EBUSY if bound where the new extent does not fit); a lower minimum
 * takes effect at the next size change without shared mappings.
 */
void op_min_order(int s)
{
	struct slot *sl = S(s);
	int fdi = pick_fd(s, one_in(6) ? 0 : 1), want = 0, bad = below(16);
	unsigned int order;
	struct morsel_min_order o;
	long r;

	if (fdi < 0)
		return;
	switch (below(8)) {
	case 0: order = sl->min_order; break;
	case 1: order = sl->order; break;
	case 2: order = sl->order + 1; break;
	case 3: order = one_in(2) ? 5 : one_in(2) ? 1U << 31 : ~0U; break;
	default: order = below(max_order + 2);
	}
	memset(&o, 0, sizeof(o));
	o.order = order;
	if (bad == 0)
		o.flags = 1;
	else if (bad == 1)
		o.reserved[below(6)] = 1;
	if (!fd_w(W.fds[s][fdi].mode))
		want = EBADF;
	else if (bad == 2)
		want = EFAULT;
	else if (bad < 2 || order > (unsigned int)max_order)
		want = EINVAL;
	else if ((int)order > sl->order && !bound_ok(sl->bound, order))
		want = EBUSY;
	note("SET_MIN_ORDER slot %d fd %s order %u (order %d, min %d, bad %d)",
	     s, mname(W.fds[s][fdi].mode), order, sl->order, sl->min_order, bad);
	if (bad >= 3 && one_in(2)) {
		int err = morsel_set_min_order(W.fds[s][fdi].fd, order);

		errno = -err;
		r = err ? -1 : 0;
	} else {
		r = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_SET_MIN_ORDER,
			  bad == 2 ? (void *)badbuf : (void *)&o);
	}
	if (!check("SET_MIN_ORDER", r, want, 0) || want)
		return;
	sl->min_order = order;
	m_raise(sl, order);
}

void op_stat(int s)
{
	int fdi = pick_fd(s, 0), r = below(10);
	struct morsel_stat st;
	long ret;

	if (fdi < 0)
		return;
	if (r == 0 || r == 1) {
		memset(&st, 0, sizeof(st));
		if (!r)
			st.flags = 1;
		else
			st.reserved[below(sizeof(st.reserved) /
					  sizeof(st.reserved[0]))] = 1;
		if (one_in(2))		/* out fields are ignored on input */
			st.min_order = st.order = st.pages = 1 + below(7);
		note("STAT slot %d with bad flags/reserved", s);
		ret = ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT, &st);
		check("STAT with bad input", ret, EINVAL, 0);
		return;
	}
	if (r == 3) {
		memset(&st, 0xa5, sizeof(st));
		st.flags = 0;
		memset(st.reserved, 0, sizeof(st.reserved));
		note("STAT slot %d with garbage in the out fields", s);
		check("STAT with out fields set",
		      ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT, &st), 0, 0);
		return;
	}
	if (r == 2) {
		note("STAT slot %d bad pointer / unknown ioctl", s);
		check("STAT bad pointer", ioctl(W.fds[s][fdi].fd, MORSEL_IOC_STAT,
						badbuf), EFAULT, 0);
		check("unknown ioctl", ioctl(W.fds[s][fdi].fd,
					     _IOWR(MORSEL_IOC_MAGIC, 0x7e,
						   struct morsel_stat), &st),
		      ENOTTY, 0);
		return;
	}
	x_stat(s, 1);
}

/* ---- clones (FICLONE, FICLONERANGE: clone.c) ---- */

#ifndef FICLONE
struct file_clone_range {
	int64_t src_fd;
	uint64_t src_offset;
	uint64_t src_length;
	uint64_t dest_offset;
};
#define FICLONE		_IOW(0x94, 9, int)
#define FICLONERANGE	_IOW(0x94, 13, struct file_clone_range)
#endif

/* A page-aligned offset below @lim, 2 MiB aligned half of the time. */
static uint64_t pick_clone_off(uint64_t lim)
{
	if (lim >= ext(1) && one_in(2))
		return below(lim / ext(1)) * ext(1);
	return lim >= PG ? below(lim / PG) * PG : 0;
}

/*
 * Clone a range of slot @s (or all of it) into a slot of the same worker
 * (@s itself now and then): aligned offsets share whole PTE tables and
 * 2 MiB leaves, others pages.  What the later writes, faults, punches and
 * truncates of either side do to the shared pages is the rest of the run.
 */
void op_clone(int s)
{
	int d = W.owned[below(NFILES)], sfi, dfi, want = 0, neworder;
	struct slot *src = S(s), *dst;
	uint64_t soff, doff, len, count, plen, r = below(20);
	struct file_clone_range fcr;
	long ret;

	if (!S(d)->live || is_target(d) || one_in(4))
		d = s;
	dst = S(d);
	sfi = pick_fd(s, one_in(10) ? 0 : 2);
	dfi = pick_fd(d, one_in(10) ? 0 : 1);
	if (sfi < 0 || dfi < 0 || dst->resv_end)
		return;
	soff = pick_clone_off(PALIGN(src->size));
	len = one_in(3) ? ext(1) * (1 + below(2)) : PG * (1 + below(24));
	if (r == 0)
		len = 0;			/* to the end of the source */
	else if (soff < src->size && len > src->size - soff && !one_in(4))
		len = src->size - soff;		/* to its end, by length */
	if (d == s) {
		doff = pick_clone_off(one_in(2) ? PALIGN(src->size) + 2 * ext(1) :
				      max_bytes / 2);
	} else {
		doff = one_in(3) ? soff : pick_clone_off(PALIGN(dst->size) + ext(1));
	}
	if (r == 1)
		doff += PG / 2;		/* EINVAL: not aligned */
	count = len;
	if (soff < src->size && (!count || count > src->size - soff))
		count = src->size - soff;
	if (count % PG && soff + count != src->size)
		count = PDOWN(count);
	plen = PALIGN(count);
	if (fd_r(W.fds[s][sfi].mode) && fd_w(W.fds[d][dfi].mode) &&
	    doff % PG == 0 && soff < src->size &&
	    (doff + plen > max_bytes ||
	     mp_count(dst) - mp_in(dst, doff, plen) + mp_in(src, soff, plen) >
	     MODEL_PAGES))
		return;			/* past the limit, or no room in the model */
	note("clone slot %d [%#" PRIx64 ", +%#" PRIx64 ") fd %s to slot %d at %#"
	     PRIx64 " fd %s", s, soff, len, mname(W.fds[s][sfi].mode), d, doff,
	     mname(W.fds[d][dfi].mode));
	neworder = wanted(dst, doff + count);
	if (!fd_r(W.fds[s][sfi].mode) || !fd_w(W.fds[d][dfi].mode))
		want = EBADF;
	else if (doff % PG)
		want = EINVAL;
	else if (soff >= src->size)
		want = src->size || len ? EINVAL : 0;
	else if (len && count != len)
		want = EINVAL;		/* shorter than asked: refused */
	else if (d == s && doff + plen > soff && doff < soff + plen)
		want = EINVAL;		/* overlapping */
	else if (count % PG && doff + count < dst->size)
		want = EINVAL;		/* a partial last page inside the file */
	else if (neworder > dst->order && !bound_ok(dst->bound, neworder))
		want = EBUSY;
	if (!soff && !len && !doff && d != s && one_in(2)) {
		ret = ioctl(W.fds[d][dfi].fd, FICLONE, W.fds[s][sfi].fd);
	} else {
		fcr.src_fd = W.fds[s][sfi].fd;
		fcr.src_offset = soff;
		fcr.src_length = len;
		fcr.dest_offset = doff;
		ret = ioctl(W.fds[d][dfi].fd, FICLONERANGE, &fcr);
	}
	if (!check("clone", ret, want, 0) || !count)
		return;
	m_raise(dst, neworder);
	if (doff < dst->size)
		m_evict(d, doff, doff + plen < dst->size ? doff + plen : dst->size);
	else
		m_zero_past_size(dst, doff);
	m_clone(d, doff, s, soff, plen);
	if (doff + count > dst->size)
		dst->size = doff + count;
}
