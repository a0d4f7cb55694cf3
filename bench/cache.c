// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, the file-cache family (paper 3.1, issue 10): morsel-cached
 * against the page cache, side by side in one VM run.  Prints raw samples
 * as bench/bench does (csv,<bench>,<variant>,<param>,<iteration>,<metric>,
 * <value>), for bench/report.
 *
 *   startup  8 clients start at once and map a file: against a cold cache
 *            (the file was just rewritten, so the daemon loads it again),
 *            a warm cache, and the page cache with MAP_POPULATE (what
 *            llama.cpp does).  Metric: ms until the last client has the
 *            whole file mapped and has read its first and last byte.
 *   ptmem    P processes (1, 8, 64) map the same file: page-table memory,
 *            the sum of their VmPTE plus, for the cache, the morsel's own
 *            tables (counted once: they are shared).  Then where a cached
 *            map's time goes (connect, GET, mount, unmap) beside open +
 *            mmap(MAP_POPULATE), as cache-breakdown samples.
 *   cold     on ext4 on the virtio disk (vm/run --disk), every page cache
 *            dropped first (issue 25): one client's cold load of a
 *            6.82 GiB file through the cache beside `dd iflag=direct bs=8M`
 *            of the same file (ms; the goal: >= 90 % of dd's bandwidth),
 *            the pages of the file the page cache holds after the load
 *            (pagecache_pages, the goal: 0), and 8 clients at once on a
 *            cold 1 GiB file, through the cache and with MAP_POPULATE.
 *
 * The daemon (cached/morsel-cached) is started here on a directory of the
 * test morselfs ($MORSEL_MNT), stopped with SIGTERM at the end, and the
 * directory removed (bench/llama.py, next, needs the memory).
 *
 * usage: cache [--quick] [--only startup|ptmem|cold]
 *
 * Processes only: each client is a child that reports on a pipe and waits
 * on another, so the parent reads /proc while the mappings exist; no sleeps.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define PG	4096ULL
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)
#define MAXP	64

static int quick;
static char sock_path[] = "/tmp/bench-cached.sock";
static char cache_dir[256];
static pid_t daemon_pid;

/* Start the daemon and wait until it listens (its --ready-fd byte). */
static void daemon_start(uint64_t budget)
{
	char b[32], fdarg[16];
	int p[2];
	char c;

	snprintf(b, sizeof(b), "%llu", (unsigned long long)budget);
	if (pipe2(p, O_CLOEXEC))
		die("pipe", errno);
	daemon_pid = fork();
	if (daemon_pid < 0)
		die("fork", errno);
	if (!daemon_pid) {
		int w = dup(p[1]);	/* without O_CLOEXEC */

		snprintf(fdarg, sizeof(fdarg), "%d", w);
		execl("cached/morsel-cached", "morsel-cached", "--socket",
		      sock_path, "--dir", cache_dir, "--budget", b,
		      "--ready-fd", fdarg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		die("morsel-cached did not start", EIO);
	close(p[0]);
}

/* Remove the cache directory and the morsels in it. */
static int rm_cache_dir(void)
{
	struct dirent *e;
	DIR *d = opendir(cache_dir);

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && unlinkat(dirfd(d), e->d_name, 0))
			break;
	closedir(d);
	return rmdir(cache_dir);
}

static void daemon_stop(void)
{
	int st;

	kill(daemon_pid, SIGTERM);
	if (waitpid(daemon_pid, &st, 0) != daemon_pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		die("morsel-cached did not exit cleanly", EIO);
}

/* A file of @len bytes in the guest's tmpfs (page cache), a pattern. */
static void make_file(const char *path, uint64_t len)
{
	char *buf = malloc(MiB);
	uint64_t off;
	int fd, i;

	if (!buf)
		die("malloc", ENOMEM);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		die(path, errno);
	for (off = 0; off < len; off += MiB) {
		size_t c = len - off < MiB ? len - off : MiB;

		for (i = 0; i < (int)(MiB / 8); i++)
			((uint64_t *)buf)[i] = off + i * 8;
		if (write(fd, buf, c) != (ssize_t)c)
			die("write", errno);
	}
	close(fd);
	free(buf);
}

enum how { VIA_CACHE, VIA_PAGECACHE };

/*
 * Map @path as a client would: through the cache (one call), or with
 * mmap(MAP_SHARED | MAP_POPULATE) of the file.  Reads the first and last
 * byte.  Returns 0 or -errno.
 */
static int client_map(const char *path, enum how how, void **addr,
		      size_t *len)
{
	volatile char *p;
	struct stat st;
	int fd, err;

	if (how == VIA_CACHE) {
		err = morsel_cache_map_path(sock_path, path, addr, len);
		if (err)
			return err;
	} else {
		fd = open(path, O_RDONLY);
		if (fd < 0 || fstat(fd, &st))
			return -errno;
		*len = st.st_size;
		*addr = mmap(NULL, *len, PROT_READ, MAP_SHARED | MAP_POPULATE,
			     fd, 0);
		close(fd);
		if (*addr == MAP_FAILED)
			return -errno;
	}
	p = *addr;
	(void)p[0];
	(void)p[*len - 1];
	return 0;
}

/*
 * @n client processes that have mapped one file and hold it until
 * crowd_end(): each writes a byte to the ready pipe once mapped ('E' if it
 * could not) and then waits for the hold pipe's end of file.
 */
struct crowd {
	pid_t pids[MAXP];
	int n, ready, hold_w;
};

/* Fork them; returns once every one has mapped @path (dies if one fails). */
static void crowd_start(struct crowd *c, int n, const char *path,
			enum how how)
{
	int ready[2], hold[2], i;
	char b;

	if (pipe(ready) || pipe(hold))
		die("pipe", errno);
	for (i = 0; i < n; i++) {
		c->pids[i] = fork();
		if (c->pids[i] < 0)
			die("fork", errno);
		if (!c->pids[i]) {
			void *a;
			size_t l;
			int err;

			close(hold[1]);
			err = client_map(path, how, &a, &l);
			b = err ? 'E' : 'k';
			if (write(ready[1], &b, 1) != 1)
				_exit(2);
			if (read(hold[0], &b, 1) < 0)
				_exit(3);
			_exit(err ? 1 : 0);
		}
	}
	close(ready[1]);
	close(hold[0]);
	c->n = n;
	c->ready = ready[0];
	c->hold_w = hold[1];
	for (i = 0; i < n; i++) {
		if (read(c->ready, &b, 1) != 1)
			die("client vanished", EIO);
		if (b != 'k')
			die("a client could not map the file", EIO);
	}
}

/* Let them go and reap them. */
static void crowd_end(struct crowd *c)
{
	int i, st;

	close(c->hold_w);
	close(c->ready);
	for (i = 0; i < c->n; i++)
		if (waitpid(c->pids[i], &st, 0) != c->pids[i] ||
		    !WIFEXITED(st) || WEXITSTATUS(st))
			die("client failed", EIO);
}

static long vm_pte_kib(pid_t pid)
{
	char p[64], line[256];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", pid);
	f = fopen(p, "r");
	if (!f)
		die(p, errno);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld kB", &v) == 1)
			break;
	fclose(f);
	if (v < 0)
		die("no VmPTE", EIO);
	return v;
}

static int connect_daemon(void)
{
	int s = morsel_cache_connect(sock_path);

	if (s < 0)
		die("morsel_cache_connect", -s);
	return s;
}

/* GET @path over @s: the morsel fd; *@fd is the file's, left open. */
static int get_file(int s, const char *path, struct morsel_cache_info *info,
		    int *fd)
{
	int mfd;

	*fd = open(path, O_RDONLY);
	if (*fd < 0)
		die(path, errno);
	mfd = morsel_cache_get(s, *fd, info);
	if (mfd < 0)
		die("morsel_cache_get", -mfd);
	return mfd;
}

static uint64_t loads(void)
{
	struct morsel_cache_stats st;
	int s = connect_daemon(), err;

	err = morsel_cache_stats(s, &st);
	if (err)
		die("morsel_cache_stats", -err);
	close(s);
	return st.loads;
}

/* ---- startup: 8 clients at once ---- */

static void bench_startup(void)
{
	uint64_t len = quick ? 32 * MiB : 1 * GiB;
	int iters = quick ? 3 : 7, it, v, n = 8;
	const char *path = "/tmp/bench-cache-startup";
	static const char *const names[] = { "cache-cold", "cache-warm",
					      "pagecache-populate" };
	struct crowd c;

	make_file(path, len);
	for (it = 0; it < iters; it++) {
		for (v = 0; v < 3; v++) {
			uint64_t before = loads();
			double t0;

			if (v == 0) {
				/* New mtime: the cached copy is stale. */
				if (utimensat(AT_FDCWD, path, NULL, 0))
					die("utimensat", errno);
			}
			t0 = now_ms();
			crowd_start(&c, n, path,
				    v == 2 ? VIA_PAGECACHE : VIA_CACHE);
			emit("cache-startup", names[v], len, it, "ms",
			     now_ms() - t0);
			crowd_end(&c);
			/* Cold: exactly one load for 8 clients; warm: none. */
			if (v < 2 && loads() - before != (v == 0 ? 1 : 0))
				die("unexpected number of loads", EPROTO);
		}
	}
	unlink(path);
}

/* ---- cold: loads from a disk, around the page cache ---- */

static void drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3", 1) != 1)
		die("drop_caches", errno);
	close(fd);
}

/* Pages of @path the page cache holds (mincore of an untouched mapping). */
static long resident_pages(const char *path)
{
	unsigned char *vec;
	struct stat st;
	size_t i, pages;
	long n = 0;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st))
		die(path, errno);
	pages = (st.st_size + PG - 1) / PG;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	vec = malloc(pages);
	if (p == MAP_FAILED || !vec || mincore(p, st.st_size, vec))
		die("mincore", errno);
	for (i = 0; i < pages; i++)
		n += vec[i] & 1;
	munmap(p, st.st_size);
	free(vec);
	close(fd);
	return n;
}

/* A new daemon on an empty cache directory: the next GET is a load. */
static void cache_empty(uint64_t budget)
{
	daemon_stop();
	if (rm_cache_dir() || mkdir(cache_dir, 0700))
		die("emptying the cache directory", errno);
	daemon_start(budget);
}

static void bench_cold(void)
{
	const char *dev = getenv("MORSEL_DISK"), *mnt = "/tmp/bench-disk";
	uint64_t big = quick ? 64 * MiB : 6984ULL * MiB;	/* 6.82 GiB */
	uint64_t small = quick ? 32 * MiB : 1 * GiB;
	int iters = quick ? 1 : 3, it;
	char cmd[512], bigp[128], smallp[128];
	struct crowd c;
	size_t len;
	void *p;
	double t0;

	if (!dev || !*dev)
		die("no disk: MORSEL_DISK (vm/run --disk)", EINVAL);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F %s", dev);
	if (system(cmd) || (mkdir(mnt, 0755) && errno != EEXIST) ||
	    mount(dev, mnt, "ext4", 0, NULL))
		die("ext4 on the disk", errno ? errno : EIO);
	snprintf(bigp, sizeof(bigp), "%s/model", mnt);
	snprintf(smallp, sizeof(smallp), "%s/shared", mnt);
	make_file(bigp, big);
	make_file(smallp, small);
	for (it = 0; it < iters; it++) {
		drop_caches();
		snprintf(cmd, sizeof(cmd),
			 "dd if=%s of=/dev/null bs=8M iflag=direct status=none",
			 bigp);
		t0 = now_ms();
		if (system(cmd))
			die("dd", EIO);
		emit("cache-cold-load", "dd-direct", big, it, "ms",
		     now_ms() - t0);

		cache_empty(big + big / 256 + 64 * MiB);
		drop_caches();
		t0 = now_ms();
		if (client_map(bigp, VIA_CACHE, &p, &len))
			die("cold load", EIO);
		emit("cache-cold-load", "cache", big, it, "ms", now_ms() - t0);
		morsel_cache_unmap(p, len);
		emit("cache-cold-load", "cache", big, it, "pagecache_pages",
		     (double)resident_pages(bigp));

		cache_empty(small + small / 256 + 64 * MiB);
		drop_caches();
		t0 = now_ms();
		crowd_start(&c, 8, smallp, VIA_CACHE);
		emit("cache-cold-crowd", "cache", small, it, "ms",
		     now_ms() - t0);
		crowd_end(&c);
		if (loads() != 1)
			die("8 cold clients: not one load", EPROTO);
		drop_caches();
		t0 = now_ms();
		crowd_start(&c, 8, smallp, VIA_PAGECACHE);
		emit("cache-cold-crowd", "pagecache-populate", small, it, "ms",
		     now_ms() - t0);
		crowd_end(&c);
	}
	cache_empty(quick ? 1 * GiB : 7 * GiB);
	unlink(bigp);
	unlink(smallp);
	if (umount(mnt))
		die("umount", errno);
	rmdir(mnt);
}

/* ---- ptmem: page-table memory of P processes mapping one file ---- */

static uint64_t morsel_tables_kib(const char *path)
{
	struct morsel_cache_info info;
	struct morsel_stat st;
	int s = connect_daemon(), fd, mfd, err, i;
	uint64_t n = 0;

	mfd = get_file(s, path, &info, &fd);
	memset(&st, 0, sizeof(st));
	err = morsel_stat(mfd, &st);
	if (err)
		die("morsel_stat", -err);
	for (i = 0; i < MORSEL_TABLE_LEVELS; i++)
		n += st.tables[i];
	close(mfd);
	close(fd);
	close(s);
	return n * 4;
}

/*
 * Where the time of a cached map goes, in one process: connect, the GET
 * round trip (the daemon's fstat, lookup and open, the fd passing), the
 * mount, and the unmap with the closes; beside open + mmap(MAP_POPULATE)
 * of the same file.  Microseconds per step, @iters times.
 */
static void breakdown(const char *path, uint64_t len, int iters)
{
	struct morsel_cache_info info;
	int it, s, fd, mfd;
	double t[5];
	void *p;

	for (it = 0; it < iters; it++) {
		t[0] = now_ms();
		s = connect_daemon();
		t[1] = now_ms();
		mfd = get_file(s, path, &info, &fd);
		t[2] = now_ms();
		p = mmap(NULL, info.extent, PROT_READ, MAP_SHARED, mfd, 0);
		if (p == MAP_FAILED)
			die("mmap", errno);
		t[3] = now_ms();
		if (munmap(p, info.extent))
			die("munmap", errno);
		close(mfd);
		close(fd);
		close(s);
		t[4] = now_ms();
		emit("cache-breakdown", "cache", len, it, "connect_us",
		     (t[1] - t[0]) * 1e3);
		emit("cache-breakdown", "cache", len, it, "get_us",
		     (t[2] - t[1]) * 1e3);
		emit("cache-breakdown", "cache", len, it, "mmap_us",
		     (t[3] - t[2]) * 1e3);
		emit("cache-breakdown", "cache", len, it, "unmap_close_us",
		     (t[4] - t[3]) * 1e3);
		t[0] = now_ms();
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path, errno);
		p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd,
			 0);
		if (p == MAP_FAILED)
			die("mmap", errno);
		t[1] = now_ms();
		if (munmap(p, len))
			die("munmap", errno);
		close(fd);
		t[2] = now_ms();
		emit("cache-breakdown", "pagecache-populate", len, it,
		     "mmap_us", (t[1] - t[0]) * 1e3);
		emit("cache-breakdown", "pagecache-populate", len, it,
		     "unmap_close_us", (t[2] - t[1]) * 1e3);
	}
}

static void bench_ptmem(void)
{
	uint64_t len = quick ? 64 * MiB : 6984ULL * MiB;	/* 6.82 GiB */
	static const int ps[] = { 1, 8, 64 };
	const char *path = "/tmp/bench-cache-ptmem";
	struct crowd c;
	int i, v, k;

	make_file(path, len);
	for (k = 0; k < 3; k++) {
		int n = ps[k];

		for (v = 0; v < 2; v++) {
			uint64_t kib = 0;

			crowd_start(&c, n, path,
				    v ? VIA_PAGECACHE : VIA_CACHE);
			for (i = 0; i < n; i++)
				kib += vm_pte_kib(c.pids[i]);
			if (!v)
				kib += morsel_tables_kib(path);
			emit("cache-ptmem", v ? "pagecache-populate" : "cache",
			     n, 0, "pt_kib", (double)kib);
			crowd_end(&c);
		}
	}
	breakdown(path, len, quick ? 3 : 7);
	unlink(path);
}

int main(int argc, char **argv)
{
	const char *only = NULL, *mnt = getenv("MORSEL_MNT");
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else
			die("usage: cache [--quick] [--only startup|ptmem|cold]",
			    EINVAL);
	}
	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(cache_dir, sizeof(cache_dir), "%s/bench-cache", mnt);
	/*
	 * Room for the 6.82 GiB file and its tables, not for the startup file
	 * as well: asking for the large file evicts the startup file's morsel
	 * (LRU, unmapped by then), so the guest holds each file at most twice
	 * (page cache and morsel).
	 */
	daemon_start(quick ? 1 * GiB : 7 * GiB);
	if (!only || !strcmp(only, "startup"))
		bench_startup();
	if (!only || !strcmp(only, "ptmem"))
		bench_ptmem();
	if (!only || !strcmp(only, "cold"))
		bench_cold();
	daemon_stop();
	/* The cache stays after the daemon (a warm restart): empty it. */
	if (rm_cache_dir())
		die("emptying the cache directory", errno);
	return 0;
}
