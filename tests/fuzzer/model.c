// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/model.c: the shadow model and the module's rules for it.
 * Per slot (struct slot, in the shared region): the non-zero pages, the
 * populated pages as sorted runs, the page tables that exist, the 2 MiB
 * leaves and the file's huge-page mode (huge.c), the size,
 * the order and the minimum order, changed as module/size.c, tree.c and
 * file.c change the morsel (m_* functions).  Per worker: when a slot's
 * morsel dies (check_dead), what an unmapped range does to the mapping
 * table (unmap_model, drop_map) and the private copies (cp_*).
 *
 * Rules: only a slot's owner changes its model (see Ownership at the top
 * of main.c); a forked child may read it but never changes it (m_write
 * never moves a page entry).  No system calls here; the only reports are
 * "internal: ..." mismatches when a model table is full.  The only draw
 * from the PRNG is model_page's.
 */
#include "fuzz.h"

/* ---- helpers: sizes and the model ---- */

int order_of(uint64_t size)
{
	int o;

	for (o = 0; o <= 4; o++)
		if (size <= ext(o))
			return o;
	return 5;
}

/* The order a size asks for: at least the minimum (size.c wanted_order). */
int wanted(struct slot *sl, uint64_t size)
{
	int o = order_of(size > sl->resv_end ? size : sl->resv_end);

	return o > sl->min_order ? o : sl->min_order;
}

int bound_ok(uint64_t bound, int order)
{
	return !bound || (bound % ext(order) == 0 &&
			  bound + ext(order) <= task_max);
}

static struct mpage *mp_find(struct slot *sl, uint64_t idx)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx == idx)
			return &sl->pages[i];
	return NULL;
}

int mp_count(struct slot *sl)
{
	int i, n = 0;

	for (i = 0; i < MODEL_PAGES; i++)
		n += sl->pages[i].idx != NOPAGE;
	return n;
}

/* Pages of [off, off + len) the model would have to add. */
static int mp_need(struct slot *sl, uint64_t off, uint64_t len)
{
	uint64_t p;
	int n = 0;

	if (!len)
		return 0;
	for (p = off / PG; p <= (off + len - 1) / PG; p++)
		n += !mp_find(sl, p);
	return n;
}

int mp_room(struct slot *sl, uint64_t off, uint64_t len)
{
	return mp_count(sl) + mp_need(sl, off, len) <= MODEL_PAGES;
}

int all_zero(const uint8_t *p, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

void m_read(struct slot *sl, uint64_t off, uint64_t len, uint8_t *out)
{
	while (len) {
		uint64_t n = PG - off % PG;
		struct mpage *p = mp_find(sl, off / PG);

		if (n > len)
			n = len;
		if (p)
			memcpy(out, p->data + off % PG, n);
		else
			memset(out, 0, n);
		out += n;
		off += n;
		len -= n;
	}
}

/* Never moves an entry: a child may read the table concurrently. */
void m_write(struct slot *sl, uint64_t off, const uint8_t *buf,
	     uint64_t len)
{
	while (len) {
		uint64_t n = PG - off % PG;
		struct mpage *p = mp_find(sl, off / PG);

		if (n > len)
			n = len;
		if (!p && !all_zero(buf, n)) {
			p = mp_find(sl, NOPAGE);
			if (!p) {
				mismatch("internal: model page table full");
				return;
			}
			memset(p->data, 0, PG);
			p->idx = off / PG;
		}
		if (p) {
			memcpy(p->data + off % PG, buf, n);
			if (all_zero(p->data, PG))
				p->idx = NOPAGE;
		}
		buf += n;
		off += n;
		len -= n;
	}
}

/* Zero [off, off + len): visits the model's pages, so any length is cheap. */
void m_zero(struct slot *sl, uint64_t off, uint64_t len)
{
	uint64_t end = off + len;
	int i;

	for (i = 0; len && i < MODEL_PAGES; i++) {
		struct mpage *p = &sl->pages[i];
		uint64_t a = p->idx * PG, lo, hi;

		if (p->idx == NOPAGE || a >= end || a + PG <= off)
			continue;
		lo = a > off ? a : off;
		hi = a + PG < end ? a + PG : end;
		memset(p->data + (lo - a), 0, hi - lo);
		if (all_zero(p->data, PG))
			p->idx = NOPAGE;
	}
}

static void m_drop_from(struct slot *sl, uint64_t idx)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx != NOPAGE && sl->pages[i].idx >= idx)
			sl->pages[i].idx = NOPAGE;
}

static int runs_find(struct slot *sl, uint64_t idx)
{
	int lo = 0, hi = sl->nruns;

	/* first run with b > idx */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (sl->runs[mid].b > idx)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int runs_has(struct slot *sl, uint64_t idx)
{
	int i = runs_find(sl, idx);

	return i < sl->nruns && sl->runs[i].a <= idx;
}

uint64_t runs_count(struct slot *sl)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < sl->nruns; i++)
		n += sl->runs[i].b - sl->runs[i].a;
	return n;
}

static void runs_del(struct slot *sl, uint64_t a, uint64_t b)
{
	int i = runs_find(sl, a);

	while (i < sl->nruns && sl->runs[i].a < b) {
		struct run *r = &sl->runs[i];

		if (r->a < a && r->b > b) {	/* split */
			if (sl->nruns == MODEL_RUNS) {
				mismatch("internal: run table full");
				return;
			}
			memmove(r + 1, r, (sl->nruns - i) * sizeof(*r));
			sl->nruns++;
			r->b = a;
			r[1].a = b;
			return;
		}
		if (r->a < a) {
			r->b = a;
			i++;
		} else if (r->b > b) {
			r->a = b;
			return;
		} else {
			memmove(r, r + 1, (sl->nruns - i - 1) * sizeof(*r));
			sl->nruns--;
		}
	}
}

/* ---- the page tables (tree.c): which exist, exactly ---- */

int tab_find(struct slot *sl, int level, uint64_t idx)
{
	int i;

	for (i = 0; i < sl->ntables; i++)
		if (sl->tables[i].level == level && sl->tables[i].idx == idx)
			return i;
	return -1;
}

static void tab_add(struct slot *sl, int level, uint64_t idx)
{
	if (tab_find(sl, level, idx) >= 0)
		return;
	if (sl->ntables == MODEL_TABLES) {
		mismatch("internal: table model full");
		sl->tables_bad = 1;
		return;
	}
	sl->tables[sl->ntables].level = level;
	sl->tables[sl->ntables].idx = idx;
	sl->ntables++;
}

static void tab_del(struct slot *sl, int i)
{
	sl->tables[i] = sl->tables[--sl->ntables];
}

uint64_t tab_count(struct slot *sl, int level)
{
	uint64_t n = 0;
	int i;

	for (i = 0; i < sl->ntables; i++)
		n += sl->tables[i].level == level;
	return n;
}

/*
 * A walk populated pages [a, b): every table above them exists now, from
 * level @from (2 for a 2 MiB leaf, which has no PTE table).
 */
static void tabs_walk(struct slot *sl, uint64_t a, uint64_t b, int from)
{
	int l;
	uint64_t i;

	for (l = from; l <= sl->order; l++)
		for (i = a * PG / ext(l); i <= ((b - 1) * PG) / ext(l); i++)
			tab_add(sl, l, i);
}

/* ---- 2 MiB leaves (tree.c, huge.c): which exist, exactly ---- */

int huge_find(struct slot *sl, uint64_t c)
{
	int i;

	for (i = 0; i < sl->nhuge; i++)
		if (sl->huge[i] == c)
			return i;
	return -1;
}

static void huge_del(struct slot *sl, int i)
{
	sl->huge[i] = sl->huge[--sl->nhuge];
}

/* Does huge.c want a leaf for 2 MiB index @c, asked as W.hint says? */
static int huge_wanted(struct slot *sl, uint64_t c)
{
	if (W.hint == 2 || sl->order < 2 || (c + 1) * ext(1) > PALIGN(sl->size))
		return 0;
	if (huge_mode_of(sl) == MORSEL_HUGE_ALWAYS ||
	    huge_mode_of(sl) == MORSEL_HUGE_WITHIN_SIZE)
		return 1;
	return huge_mode_of(sl) == MORSEL_HUGE_ADVISE && W.hint == 1;
}

/* Does a reserved range begin or end inside 2 MiB index @c? */
static int resv_straddles(struct slot *sl, uint64_t c)
{
	uint64_t a = c * ext(1), b = a + ext(1);

	return (sl->resv_start > a && sl->resv_start < b) ||
	       (sl->resv_end > a && sl->resv_end < b);
}

/* The leaf of 2 MiB index @c becomes a PTE table over the same pages. */
void huge_split(struct slot *sl, uint64_t c)
{
	int i = huge_find(sl, c);

	if (i < 0)
		return;
	huge_del(sl, i);
	tab_add(sl, 1, c);
}

/* Its 512 pages, all populated, become one leaf; the PTE table goes. */
void huge_collapse(struct slot *sl, uint64_t c)
{
	int i = tab_find(sl, 1, c);

	if (i >= 0)
		tab_del(sl, i);
	if (sl->nhuge == MODEL_HUGE) {
		mismatch("internal: leaf model full");
		sl->tables_bad = 1;
		return;
	}
	sl->huge[sl->nhuge++] = c;
}

/* Are all 512 pages of 2 MiB index @c populated? */
int chunk_full(struct slot *sl, uint64_t c)
{
	uint64_t p;

	for (p = c * HUGE_PAGES; p < (c + 1) * HUGE_PAGES; p++)
		if (!runs_has(sl, p))
			return 0;
	return 1;
}

/* free_level: a table goes when the range covers all it spans. */
static void tabs_free(struct slot *sl, uint64_t start, uint64_t end)
{
	int i;

	for (i = 0; i < sl->ntables; i++) {
		uint64_t e = ext(sl->tables[i].level), a = sl->tables[i].idx * e;

		if (a >= start && a + e <= end)
			tab_del(sl, i--);
	}
}

static void runs_insert(struct slot *sl, uint64_t a, uint64_t b, int from)
{
	int i, j;

	if (a >= b)
		return;
	tabs_walk(sl, a, b, from);
	/* first run that ends at or after a (may touch) */
	i = runs_find(sl, a ? a - 1 : 0);
	if (i < sl->nruns && sl->runs[i].b < a)
		i++;
	j = i;
	while (j < sl->nruns && sl->runs[j].a <= b) {
		if (sl->runs[j].a < a)
			a = sl->runs[j].a;
		if (sl->runs[j].b > b)
			b = sl->runs[j].b;
		j++;
	}
	if (j == i) {
		if (sl->nruns == MODEL_RUNS) {
			mismatch("internal: run table full");
			return;
		}
		memmove(&sl->runs[i + 1], &sl->runs[i],
			(sl->nruns - i) * sizeof(struct run));
		sl->nruns++;
	} else if (j > i + 1) {
		memmove(&sl->runs[i + 1], &sl->runs[j],
			(sl->nruns - j) * sizeof(struct run));
		sl->nruns -= j - i - 1;
	}
	sl->runs[i].a = a;
	sl->runs[i].b = b;
}

/*
 * Did the module make the leaf the model is about to add for the empty
 * 2 MiB [@lo, @hi) of the pages [@a, @b) an op populated?  tree.c falls
 * back to 4 KiB pages when no order-9 block is free (a light attempt,
 * without reclaim: source.c), which no model can foresee.  runs_add runs
 * once the op populated the pages, and only the owner acts on the slot,
 * so the slot's STAT tells: with the leaf, the module holds at least 512
 * pages more than the model so far, plus one for every page of the rest
 * of the range not yet populated; without it, only the range's pages.
 * (Its leaf count cannot tell: an order-1 mapping splits the leaf it just
 * made.)  Exact for an op that populates one 2 MiB (every fault); one
 * that falls back on a 2 MiB and makes leaves after it may be misread
 * and end in a mismatch.  Without an fd of the slot the model trusts
 * itself.  STAT is asked of the first fd, so the random stream of the
 * run stays what it was.
 */
static int leaf_made(struct slot *sl, uint64_t hi, uint64_t b)
{
	int s = sl - sh->slots;
	struct morsel_stat st;
	uint64_t later = 0, p;

	if (!W.nfds[s] || morsel_stat(W.fds[s][0].fd, &st))
		return 1;
	for (p = hi; p < b; p++)
		later += !runs_has(sl, p);
	if (st.pages >= runs_count(sl) + HUGE_PAGES + later)
		return 1;
	sh->w[W.id].huge_fallbacks++;
	return 0;
}

/*
 * Pages [a, b) are populated, as tree.c does it: a hole of 2 MiB whose
 * slot in the level-2 table is empty (no PTE table, no leaf) becomes one
 * leaf where huge.c wants it, when populated page by page (a fault, a
 * write: any page of it) or, by a range (W.range: POPULATE, fallocate),
 * when the range covers all of it; never where a reserved range begins or
 * ends inside.  Everything else gets 4 KiB pages.
 */
void runs_add(struct slot *sl, uint64_t a, uint64_t b)
{
	uint64_t c, ca, lo, hi;

	if (a >= b)
		return;
	if (sl->order < 2 || (!sl->nhuge &&
	    huge_mode_of(sl) == MORSEL_HUGE_NEVER)) {
		runs_insert(sl, a, b, 1);	/* no leaf, and none to come */
		return;
	}
	for (c = a / HUGE_PAGES; c <= (b - 1) / HUGE_PAGES; c++) {
		ca = c * HUGE_PAGES;
		lo = a > ca ? a : ca;
		hi = b < ca + HUGE_PAGES ? b : ca + HUGE_PAGES;
		if (huge_find(sl, c) >= 0)
			continue;
		if (tab_find(sl, 1, c) < 0 && huge_wanted(sl, c) &&
		    !(W.range && (lo != ca || hi != ca + HUGE_PAGES)) &&
		    !resv_straddles(sl, c) &&
		    sl->nhuge < MODEL_HUGE && leaf_made(sl, hi, b)) {
			sl->huge[sl->nhuge++] = c;
			sh->w[W.id].huge_made++;
			runs_insert(sl, ca, ca + HUGE_PAGES, 2);
			sl->churn += 8;
		} else {
			runs_insert(sl, lo, hi, 1);
		}
	}
}

static void m_clear(struct slot *sl)
{
	int i;

	for (i = 0; i < MODEL_PAGES; i++)
		sl->pages[i].idx = NOPAGE;
	sl->nruns = 0;
	sl->churn = 0;
	sl->ntables = 0;
	sl->tables_bad = 0;
	sl->nhuge = 0;
}

/* A new morsel of @size bytes: the order its size wants, no minimum. */
void m_new(struct slot *sl, uint64_t size)
{
	sl->size = size;
	sl->bound = 0;
	sl->min_order = 0;
	sl->resv_start = sl->resv_end = 0;
	sl->order = order_of(size);
	sl->huge_mode = MORSEL_HUGE_INHERIT;
	m_clear(sl);		/* no table: the root comes with a page */
}

/*
 * Raise the order (tree.c raise_order): a populated root becomes entry 0
 * of a chain of new tables; an empty one stays empty (a volatile morsel,
 * which is what the fuzzer makes: the first page brings the root table).
 */
void m_raise(struct slot *sl, int order)
{
	int l;

	if (order <= sl->order)
		return;
	if (sl->order ? tab_find(sl, sl->order, 0) >= 0 : runs_has(sl, 0)) {
		for (l = sl->order + 1; l <= order; l++)
			tab_add(sl, l, 0);
	}
	sl->order = order;
}

/*
 * Lower the order (morsel_set_order): everything past the new extent goes,
 * then the tables above the new root.
 */
static void m_lower(struct slot *sl, int order)
{
	int l, i;

	if (order < 2)		/* the first leaf becomes the new root */
		huge_split(sl, 0);
	for (i = 0; i < sl->nhuge; i++)
		if (sl->huge[i] * ext(1) >= ext(order))
			huge_del(sl, i--);
	m_drop_from(sl, ext(order) / PG);
	runs_del(sl, ext(order) / PG, UINT64_MAX);
	tabs_free(sl, ext(order), UINT64_MAX);
	for (l = sl->order; l > order; l--)
		if ((i = tab_find(sl, l, 0)) >= 0)
			tab_del(sl, i);
	sl->order = order;
}

/* ---- per-worker mappings ---- */

/* Own mappings of @s: @kind 0 all, 1 mounted, 2 paged, 3 mounted of order 0. */
int own_maps_kind(int s, int kind)
{
	int i, n = 0;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (m->slot != s || (kind == 1 && m->paged) ||
		    (kind == 2 && !m->paged) ||
		    (kind == 3 && (m->paged || m->vorder)))
			continue;
		n++;
	}
	return n;
}

static int own_maps(int s)
{
	return own_maps_kind(s, 0);
}

/*
 * Does the morsel have a shared mapping anywhere (nr_maps > 0)?  Private
 * mappings are not counted: they hold neither the order nor the tables.
 */
int mapped(int s)
{
	return own_maps_kind(s, 1) + (child_alive() ? W.ch.holds[s] : 0) > 0;
}

/* The morsel is gone when nothing names, opens or maps it. */
void check_dead(int s)
{
	struct slot *sl = S(s);

	if (sl->live && !sl->named && !W.nfds[s] && !own_maps(s)) {
		/* a child's inherited mappings keep the old morsel, not the slot */
		W.ch.holds[s] = 0;
		W.ch.holds0[s] = 0;
		sl->live = 0;
		m_new(sl, 0);
	}
}

/* ---- private copies ---- */

struct copy *cp_find(uint64_t va)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va == va)
			return &W.copies[i];
	return NULL;
}

int cp_count(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_COPIES; i++)
		n += W.copies[i].va != NOPAGE;
	return n;
}

/* Forget the copies of the pages in [a, a + len). */
void cp_drop(uint64_t a, uint64_t len)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va != NOPAGE && W.copies[i].va >= a &&
		    W.copies[i].va < a + len)
			W.copies[i].va = NOPAGE;
}

/* The copies of [a, a + len) move to @to (mremap). */
void cp_move(uint64_t a, uint64_t len, uint64_t to)
{
	int i;

	for (i = 0; i < MAX_COPIES; i++)
		if (W.copies[i].va != NOPAGE && W.copies[i].va >= a &&
		    W.copies[i].va < a + len)
			W.copies[i].va = W.copies[i].va - a + to;
}

/* Truncation takes the copies of file pages from @fo on, too. */
static void cp_drop_past(int s, uint64_t fo)
{
	int i;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];

		if (m->slot != s || !m->priv || m->off + m->len <= fo)
			continue;
		if (m->off >= fo)
			cp_drop(m->addr, m->len);
		else
			cp_drop(m->addr + (fo - m->off), m->len - (fo - m->off));
	}
}

/* Pages of [rel, rel + len) of private @m that a store would copy now. */
int cp_need(struct mapent *m, uint64_t rel, uint64_t len)
{
	uint64_t va;
	int n = 0;

	if (!len)
		return 0;
	for (va = PDOWN(m->addr + rel); va < m->addr + rel + len; va += PG)
		n += !cp_find(va);
	return n;
}

void drop_map(int i)
{
	if (W.maps[i].priv)
		cp_drop(W.maps[i].addr, W.maps[i].len);
	W.maps[i] = W.maps[--W.nmaps];
}

/*
 * [a, a + len) was unmapped (munmap, MAP_FIXED): shared mappings inside
 * it are gone, private ones lose that part (maybe split in two).
 */
void unmap_model(uint64_t a, uint64_t len)
{
	int i, dead[MAPS_ROOM], nd = 0;
	uint64_t end = a + len;

	for (i = 0; i < W.nmaps; i++) {
		struct mapent *m = &W.maps[i];
		uint64_t mend = m->addr + m->len;

		if (mend <= a || m->addr >= end)
			continue;
		dead[nd++] = m->slot;
		if (!m->paged || (m->addr >= a && mend <= end)) {
			drop_map(i--);
			continue;
		}
		cp_drop(a, len);
		if (m->addr < a && mend > end) {	/* split */
			if (W.nmaps == MAPS_ROOM) {
				mismatch("internal: mapping table full");
				return;
			}
			W.maps[W.nmaps] = *m;
			W.maps[W.nmaps].addr = end;
			W.maps[W.nmaps].len = mend - end;
			W.maps[W.nmaps].off = m->off + (end - m->addr);
			W.nmaps++;
			m->len = a - m->addr;
		} else if (m->addr < a) {
			m->len = a - m->addr;
		} else {
			m->off += end - m->addr;
			m->len = mend - end;
			m->addr = end;
		}
	}
	for (i = 0; i < nd; i++)
		check_dead(dead[i]);
}

/* ---- what ranges and sizes do to the model ---- */

/*
 * Pages [first, last) (page aligned) leave the tree, as tree.c does it:
 * freed (order-0 mappings, whose mount entry copies page 0, are unmounted
 * and refault).
 */
void m_free_pages(int s, uint64_t first, uint64_t last)
{
	struct slot *sl = S(s);
	int i;

	if (first >= last)
		return;
	/* A leaf the range covers goes; one it cuts splits first. */
	for (i = 0; i < sl->nhuge; i++) {
		uint64_t a = sl->huge[i] * ext(1), b = a + ext(1);

		if (a >= last || b <= first)
			continue;
		if (a >= first && b <= last)
			huge_del(sl, i--);
		else
			huge_split(sl, sl->huge[i--]);
	}
	m_zero(sl, first, last - first);
	runs_del(sl, first / PG, last / PG);
	if (!mapped(s))		/* morsel_free_range; mapped: tables stay */
		tabs_free(sl, first, last);
}

/* The order falls to what the size wants if no shared mapping holds it. */
void m_fit(int s)
{
	struct slot *sl = S(s);
	int w = wanted(sl, sl->size);

	if (w < sl->order && !mapped(s))
		m_lower(sl, w);
}

/* A shrink to @size cuts the reservation there (size.c morsel_resv_trim). */
void m_resv_trim(struct slot *sl, uint64_t size)
{
	if (PALIGN(size) >= sl->resv_end)
		return;
	if (PALIGN(size) <= sl->resv_start)
		sl->resv_start = sl->resv_end = 0;
	else
		sl->resv_end = PALIGN(size);
}

/*
 * The size is about to grow to @size: what a mapping stored past the old
 * size in its last page reads as zeros (size.c morsel_zero_past_size).
 */
void m_zero_past_size(struct slot *sl, uint64_t size)
{
	uint64_t end = PALIGN(sl->size);

	if (size < end)
		end = size;
	if (end > sl->size)
		m_zero(sl, sl->size, end - sl->size);
}

/* A successful truncate to @size, as size.c morsel_resize does it. */
void m_resize(int s, uint64_t size)
{
	struct slot *sl = S(s);
	int w = wanted(sl, size);

	if (size == sl->size)
		return;			/* setattr skips it */
	m_raise(sl, w);
	if (size < sl->size) {
		m_zero(sl, size, PALIGN(size) - size);
		m_free_pages(s, PALIGN(size), UINT64_MAX & ~(PG - 1));
		cp_drop_past(s, PALIGN(size));
		m_resv_trim(sl, size);
	} else {
		m_zero_past_size(sl, size);
	}
	sl->size = size;
	m_fit(s);
}

/*
 * What eviction of [start, end) (end <= size, or past it for
 * trim_past_size) does, as file.c morsel_evict does it.  Private mappings
 * keep their copies; their other pages fault the file's again.
 */
void m_evict(int s, uint64_t start, uint64_t end)
{
	struct slot *sl = S(s);
	uint64_t first = PALIGN(start);
	uint64_t last = end == sl->size ? PALIGN(end) : PDOWN(end);

	if (first > last) {
		m_zero(sl, start, end - start);
		return;
	}
	m_zero(sl, start, first - start);
	if (last < end)
		m_zero(sl, last, end - last);
	m_free_pages(s, first, last);
}

/* An existing model page of @s, as a page index; NOPAGE if none. */
uint64_t model_page(int s)
{
	struct slot *sl = S(s);
	int i, n = mp_count(sl), k;

	if (!n)
		return NOPAGE;
	k = below(n);
	for (i = 0; i < MODEL_PAGES; i++)
		if (sl->pages[i].idx != NOPAGE && !k--)
			return sl->pages[i].idx;
	return NOPAGE;
}

/* ---- clones (tree.c morsel_clone) ---- */

/* Model pages of @sl in [off, off + len). */
int mp_in(struct slot *sl, uint64_t off, uint64_t len)
{
	int i, n = 0;

	for (i = 0; i < MODEL_PAGES; i++)
		n += sl->pages[i].idx != NOPAGE && sl->pages[i].idx * PG >= off &&
		     sl->pages[i].idx * PG < off + len;
	return n;
}

/* The populated pages of src's [@a, @b) become dst's from @to, at @from. */
static void runs_copy(struct slot *dst, struct slot *src, uint64_t a,
		      uint64_t b, uint64_t to, int from)
{
	struct run r[MODEL_RUNS];
	int i, n = 0;

	for (i = runs_find(src, a); i < src->nruns && src->runs[i].a < b; i++) {
		r[n].a = src->runs[i].a > a ? src->runs[i].a : a;
		r[n].b = src->runs[i].b < b ? src->runs[i].b : b;
		n++;
	}
	for (i = 0; i < n; i++)
		runs_insert(dst, r[i].a - a + to, r[i].b - a + to, from);
}

/*
 * The first page index at or past @from where @sl has anything a clone
 * takes: a populated page, a PTE table (also an empty one) or a 2 MiB
 * leaf (the start of its 2 MiB); UINT64_MAX if nothing.  So that a clone
 * across a sparse range visits only what is there, as tree.c does.
 */
static uint64_t next_object(struct slot *sl, uint64_t from)
{
	uint64_t best = UINT64_MAX, a;
	int i = runs_find(sl, from);

	if (i < sl->nruns)
		best = sl->runs[i].a > from ? sl->runs[i].a : from;
	for (i = 0; i < sl->ntables; i++) {
		if (sl->tables[i].level != 1 ||
		    (sl->tables[i].idx + 1) * HUGE_PAGES <= from)
			continue;
		a = sl->tables[i].idx * HUGE_PAGES;
		a = a > from ? a : from;
		best = a < best ? a : best;
	}
	for (i = 0; i < sl->nhuge; i++) {
		if ((sl->huge[i] + 1) * HUGE_PAGES <= from)
			continue;
		a = sl->huge[i] * HUGE_PAGES;
		a = a > from ? a : from;
		best = a < best ? a : best;
	}
	return best;
}

/* Whether a 2 MiB leaf of @sl covers a page of [@a, @b). */
static int huge_in(struct slot *sl, uint64_t a, uint64_t b)
{
	int i;

	for (i = 0; i < sl->nhuge; i++)
		if (sl->huge[i] * HUGE_PAGES < b &&
		    (sl->huge[i] + 1) * HUGE_PAGES > a)
			return 1;
	return 0;
}

/*
 * What a successful clone of @src's [@soff, @soff + @plen) to @dst's
 * @doff does to the tree model, after the destination range was evicted:
 * as morsel_clone, per 2 MiB where both offsets are aligned (the source's
 * PTE table or leaf is shared, the destination gets the tables above it),
 * page by page elsewhere (the destination gets its own PTE table).  The
 * data moves with the pages, read before anything is written (@dst may be
 * @src).  A shared 2 MiB leaf splits at the first write of whichever side
 * (or stays, when the other side let go of its pages first), which the
 * model cannot tell without tracking every page's owners: every slot whose
 * leaf takes part stops checking tables and leaves until its next reset
 * (the data and page counts stay exact).
 */
void m_clone(int d, uint64_t doff, int s, uint64_t soff, uint64_t plen)
{
	static struct mpage tmp[MODEL_PAGES];
	struct slot *dst = S(d), *src = S(s);
	uint64_t done = 0, span = ext(1), sp, dp, k;
	int i, n = 0;

	for (i = 0; i < MODEL_PAGES; i++) {
		struct mpage *p = &src->pages[i];

		if (p->idx == NOPAGE || p->idx * PG < soff ||
		    p->idx * PG >= soff + plen)
			continue;
		tmp[n].idx = p->idx - soff / PG + doff / PG;
		memcpy(tmp[n++].data, p->data, PG);
	}
	if (src->tables_bad)
		dst->tables_bad = 1;
	while (done < plen) {
		uint64_t so = soff + done, dof = doff + done, cs, cd, next;

		/*
		 * Holes of the source add nothing: go to the aligned 2 MiB
		 * of its next object (past the first chunk, every chunk
		 * starts aligned in the source).
		 */
		next = next_object(src, so / PG);
		if (next == UINT64_MAX || next * PG >= soff + plen)
			break;
		if (next * PG / span * span > so) {
			done = next * PG / span * span - soff;
			so = soff + done;
			dof = doff + done;
		}
		sp = so / PG;
		dp = dof / PG;
		if (so % span || dof % span || plen - done < span ||
		    src->order < 2 || dst->order < 2) {
			/* page by page up to the next aligned chunk */
			k = span - so % span;
			if (k > plen - done)
				k = plen - done;
			if (huge_in(src, sp, sp + k / PG))
				src->tables_bad = 1;
			runs_copy(dst, src, sp, sp + k / PG, dp, 1);
			done += k;
			continue;
		}
		cs = so / span;
		cd = dof / span;
		done += span;
		if (huge_find(src, cs) < 0 && tab_find(src, 1, cs) < 0)
			continue;		/* a hole of the source */
		tabs_walk(dst, dp, dp + 1, 2);
		if (tab_find(dst, 1, cd) >= 0) {	/* a mapping kept it */
			if (huge_find(src, cs) >= 0)
				src->tables_bad = 1;
			runs_copy(dst, src, sp, sp + HUGE_PAGES, dp, 1);
			continue;
		}
		if (huge_find(src, cs) >= 0) {
			if (dst->nhuge == MODEL_HUGE) {
				mismatch("internal: leaf model full");
				dst->tables_bad = 1;
			} else {
				dst->huge[dst->nhuge++] = cd;
			}
			src->tables_bad = dst->tables_bad = 1;
			runs_copy(dst, src, sp, sp + HUGE_PAGES, dp, 2);
		} else {
			tab_add(dst, 1, cd);
			runs_copy(dst, src, sp, sp + HUGE_PAGES, dp, 1);
		}
	}
	for (i = 0; i < n; i++)
		m_write(dst, tmp[i].idx * PG, tmp[i].data, PG);
	dst->churn += 4;
}
