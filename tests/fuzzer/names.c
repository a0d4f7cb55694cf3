// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/names.c: names and fds.  Paths in the run's directory,
 * fresh names, this worker's fds of each slot (add one, pick one, open
 * one by name, close them all), and the operations on names: create (also
 * O_TMPFILE), open, close, rename and renameat2, unlink, link and linkat.
 *
 * Rules: the fd table (W.fds, W.nfds) is the worker's own; it changes
 * here, when a hand-off passes an fd (procs.c, through add_fd and
 * close_all) and when a child inherits it (a copy).  A slot's names (name,
 * name2, named, gen, linkable, in the shared model) are changed by the
 * slot's owner only: here, and at the final cleanup (main.c worker_main);
 * a rename over another name picks only among the slots this worker owns.
 */
#include "fuzz.h"

/* ---- names and fds ---- */

const char *path(const char *name)
{
	static char buf[4][320];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void fresh_name(int s, char *out, size_t len)
{
	snprintf(out, len, "s%d.%d", s, ++S(s)->gen);
}

const char *mname(int mode)
{
	return mode == O_RDONLY ? "ro" : mode == O_WRONLY ? "wo" : "rw";
}

void add_fd(int s, int fd, int mode)
{
	if (W.nfds[s] == MAX_FDS) {
		close(W.fds[s][0].fd);
		W.fds[s][0] = W.fds[s][--W.nfds[s]];
	}
	W.fds[s][W.nfds[s]].fd = fd;
	W.fds[s][W.nfds[s]].mode = mode;
	W.nfds[s]++;
}

/* Index of a random fd of @s; @need: 0 any, 1 writable, 2 readable, 3 rw. */
int pick_fd(int s, int need)
{
	int i, c[MAX_FDS], n = 0;

	for (i = 0; i < W.nfds[s]; i++) {
		int m = W.fds[s][i].mode;

		if (need == 0 || (need == 1 && fd_w(m)) ||
		    (need == 2 && fd_r(m)) || (need == 3 && m == O_RDWR))
			c[n++] = i;
	}
	return n ? c[below(n)] : -1;
}

/* An fd index with @need, opening the file by name if there is none. */
int get_fd(int s, int need)
{
	int i = pick_fd(s, need), fd;

	if (i >= 0 || !S(s)->named)
		return i;
	note("open(%s, rw) for a helper fd", S(s)->name);
	fd = open(path(S(s)->name), O_RDWR | O_CLOEXEC);
	if (!check("open(rw)", fd, 0, 0))
		return -1;
	add_fd(s, fd, O_RDWR);
	return W.nfds[s] - 1;
}

void close_all(int s)
{
	while (W.nfds[s]) {
		close(W.fds[s][W.nfds[s] - 1].fd);
		W.nfds[s]--;
	}
}

/* ---- operations ---- */

void op_create(int s)
{
	struct slot *sl = S(s);
	int64_t size;
	char name[40];
	int fd, want = 0;

	if (sl->live) {
		if (!sl->named)
			return;
		note("create slot %d %s again (O_EXCL)", s, sl->name);
		fd = open(path(sl->name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644);
		if (check("open(O_EXCL) of an existing name", fd, EEXIST, 0))
			close(fd);
		return;
	}
	fresh_name(s, name, sizeof(name));
	size = one_in(3) ? (int64_t)below(3 * PG) : pick_size(s);
	if (size < 0)
		want = EINVAL;
	else if ((uint64_t)size > max_bytes)
		want = EFBIG;
	if (one_in(5)) {
		/* an unnamed morsel; O_EXCL: never to be linked; O_RDONLY: EINVAL */
		int excl = one_in(4), ro = one_in(12);

		note("open(O_TMPFILE%s%s) slot %d + ftruncate %" PRId64,
		     excl ? "|O_EXCL" : "", ro ? ", ro" : "", s, size);
		fd = open(dir, O_TMPFILE | (ro ? O_RDONLY : O_RDWR) |
			  (excl ? O_EXCL : 0) | O_CLOEXEC, 0644);
		if (!check("open(O_TMPFILE)", fd, ro ? EINVAL : 0, 0))
			return;
		if (ro) {	/* unexpected success */
			close(fd);
			return;
		}
		sl->live = 1;
		sl->named = 0;
		sl->linkable = !excl;
		m_new(sl, 0);
		add_fd(s, fd, O_RDWR);
		x_truncate(s, W.nfds[s] - 1, size);
		return;
	}
	sl->linkable = 0;
	if (one_in(2)) {
		note("morsel_create slot %d %s size %" PRId64, s, name, size);
		fd = morsel_create(path(name), size, 0644);
		if (fd < 0) {
			errno = -fd;
			fd = -1;
		}
		if (!check("morsel_create", fd, want, 0))
			return;
	} else {
		note("open(O_CREAT) slot %d %s + ftruncate %" PRId64, s, name,
		     size);
		fd = open(path(name), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			  0644);
		if (!check("open(O_CREAT|O_EXCL)", fd, 0, 0))
			return;
		sl->live = 1;
		sl->named = 1;
		m_new(sl, 0);
		snprintf(sl->name, sizeof(sl->name), "%s", name);
		add_fd(s, fd, O_RDWR);
		x_truncate(s, W.nfds[s] - 1, size);
		return;
	}
	sl->live = 1;
	sl->named = 1;
	m_new(sl, size);
	snprintf(sl->name, sizeof(sl->name), "%s", name);
	add_fd(s, fd, O_RDWR);
}

void op_open(int s)
{
	static const int modes[] = { O_RDONLY, O_RDONLY, O_RDWR, O_RDWR, O_WRONLY };
	struct slot *sl = S(s);
	int mode = modes[below(5)], extra = 0, want = 0, fd;
	uint64_t r = below(20);
	const char *name;

	if (!sl->named) {
		note("open slot %d: a name that does not exist", s);
		fd = open(path("nonexistent"), mode | O_CLOEXEC);
		if (check("open(nonexistent)", fd, ENOENT, 0))
			close(fd);
		return;
	}
	if (r == 0 && mode != O_RDONLY)
		extra = O_TRUNC;
	else if (r == 1)
		extra = O_DIRECT;
	else if (r == 2)
		extra = O_CREAT | O_EXCL;
	/* O_DIRECT is accepted and changes nothing, as on tmpfs. */
	if (extra & O_EXCL)
		want = EEXIST;
	name = sl->named == 2 && one_in(2) ? sl->name2 : sl->name;
	note("open slot %d %s %s%s", s, name, mname(mode),
	     extra == O_TRUNC ? " O_TRUNC" : extra == O_DIRECT ? " O_DIRECT" :
	     extra ? " O_CREAT|O_EXCL" : "");
	fd = open(path(name), mode | extra | O_CLOEXEC, 0644);
	if (!check("open", fd, want, 0))
		return;
	if (want) {		/* unexpected success */
		close(fd);
		return;
	}
	if (extra == O_TRUNC)
		m_resize(s, 0);	/* works also while mapped */
	add_fd(s, fd, mode);
}

void op_close(int s)
{
	int i;

	if (!W.nfds[s])
		return;
	i = below(W.nfds[s]);
	note("close slot %d fd %s", s, mname(W.fds[s][i].mode));
	check("close", close(W.fds[s][i].fd), 0, 0);
	W.fds[s][i] = W.fds[s][--W.nfds[s]];
	check_dead(s);
}

/* One name of @sl went (unlink, a rename over it): @second or the first. */
static void lose_name(struct slot *sl, int second)
{
	if (sl->named == 2 && !second)
		memcpy(sl->name, sl->name2, sizeof(sl->name));
	sl->named--;
}

void op_rename(int s)
{
	struct slot *sl = S(s), *tl;
	char name[40];
	int t, i, k = below(8);
	long r;

	if (!sl->named) {
		note("rename slot %d: a name that does not exist", s);
		r = rename(path("nonexistent"), path("nonexistent2"));
		check("rename(nonexistent)", r, ENOENT, 0);
		return;
	}
	/* a sibling slot with a name, for replacing renames */
	for (i = 0, t = -1; i < NFILES; i++) {
		int c = W.owned[(i + W.op) % NFILES];

		if (c != s && S(c)->named) {
			t = c;
			break;
		}
	}
	tl = t >= 0 ? S(t) : NULL;
	if (k == 0) {
		note("rename slot %d %s to itself", s, sl->name);
		check("rename to itself", rename(path(sl->name),
						 path(sl->name)), 0, 0);
	} else if (k == 1) {
		note("rename slot %d %s into a missing directory", s, sl->name);
		check("rename into a missing directory",
		      rename(path(sl->name), path("nodir/x")),
		      ENOENT, 0);
	} else if (k == 2 && tl && !is_target(t)) {
		note("rename slot %d %s over slot %d %s, then to a fresh name",
		     s, sl->name, t, tl->name);
		if (!check("rename over", rename(path(sl->name),
						 path(tl->name)), 0, 0))
			return;
		snprintf(sl->name, sizeof(sl->name), "%s", tl->name);
		lose_name(tl, 0);
		check_dead(t);
		fresh_name(s, name, sizeof(name));
		if (check("rename back", rename(path(sl->name),
						path(name)), 0, 0))
			snprintf(sl->name, sizeof(sl->name), "%s", name);
	} else if (k == 3 && tl) {
		note("renameat2 NOREPLACE slot %d %s over %s", s, sl->name,
		     tl->name);
		check("rename NOREPLACE", renameat2(AT_FDCWD, path(sl->name),
						    AT_FDCWD, path(tl->name),
						    RENAME_NOREPLACE),
		      EEXIST, 0);
	} else if (k == 4 && tl) {
		note("renameat2 EXCHANGE slot %d %s with %s, twice", s,
		     sl->name, tl->name);
		for (i = 0; i < 2; i++)
			check("rename EXCHANGE",
			      renameat2(AT_FDCWD, path(sl->name), AT_FDCWD,
					path(tl->name), RENAME_EXCHANGE),
			      0, 0);
	} else {
		fresh_name(s, name, sizeof(name));
		note("rename slot %d %s to %s", s, sl->name, name);
		if (check("rename", rename(path(sl->name), path(name)),
			  0, 0))
			snprintf(sl->name, sizeof(sl->name), "%s", name);
	}
}

void op_unlink(int s)
{
	struct slot *sl = S(s);
	int second;

	if (!sl->named) {
		note("unlink slot %d: a name that does not exist", s);
		check("unlink(nonexistent)", unlink(path("nonexistent")),
		      ENOENT, 0);
		return;
	}
	second = sl->named == 2 && one_in(2);
	note("unlink slot %d %s", s, second ? sl->name2 : sl->name);
	if (check("unlink", unlink(path(second ? sl->name2 : sl->name)), 0, 0)) {
		lose_name(sl, second);
		check_dead(s);
	}
}

/*
 * A second name (link, or linkat of an fd with AT_EMPTY_PATH); an unnamed
 * morsel gets its first one if it is an O_TMPFILE never linked (ENOENT
 * otherwise, as the VFS has it); a name that exists: EEXIST.
 */
void op_link(int s)
{
	struct slot *sl = S(s), *tl;
	int fdi = pick_fd(s, 0), want = 0, t = W.owned[below(NFILES)];
	char name[40];
	long r;

	fresh_name(s, name, sizeof(name));
	tl = S(t);
	if (sl->named == 2 || (sl->named && tl->named && one_in(6))) {
		const char *to = sl->named == 2 && one_in(2) ? sl->name2 :
				 tl->named ? tl->name : sl->name;

		note("link slot %d %s to an existing name %s", s, sl->name, to);
		check("link to an existing name", link(path(sl->name), path(to)),
		      EEXIST, 0);
		return;
	}
	if (fdi >= 0 && (!sl->named || one_in(2))) {
		if (!sl->named && !sl->linkable)
			want = ENOENT;
		note("linkat slot %d fd %s AT_EMPTY_PATH to %s (%s)", s,
		     mname(W.fds[s][fdi].mode), name, sl->named ? "named" :
		     sl->linkable ? "O_TMPFILE" : "unlinked");
		r = linkat(W.fds[s][fdi].fd, "", AT_FDCWD, path(name),
			   AT_EMPTY_PATH);
	} else if (sl->named) {
		note("link slot %d %s to %s", s, sl->name, name);
		r = link(path(sl->name), path(name));
	} else {
		return;
	}
	if (!check("link", r, want, 0) || want)
		return;
	snprintf(sl->named ? sl->name2 : sl->name, sizeof(sl->name), "%s",
		 name);
	sl->named++;
	sl->linkable = 0;
}
