// SPDX-License-Identifier: GPL-2.0
/* morsel: command-line tool for morselfs files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "morsel.h"
#include "pm.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: morsel create [--order N] PATH SIZE\n"
		"                                        create a morsel of SIZE bytes (suffixes K M G T),\n"
		"                                        of at least order N (room to grow while mapped)\n"
		"       morsel stat PATH...              order, extent, size, pages, 2 MiB leaves,\n"
		"                                        pages per NUMA node, tables, bound\n"
		"                                        address and every mapping with its rights\n"
		"       morsel populate PATH OFFSET LEN  allocate the pages of a range now\n"
		"       morsel populate-huge PATH OFFSET LEN\n"
		"                                        the same, with 2 MiB pages where the file's\n"
		"                                        huge mode lets a caller ask\n"
		"       morsel evict PATH OFFSET LEN     free the pages of a range (reads as zeros)\n"
		"       morsel collapse PATH OFFSET LEN  join every full aligned 2 MiB of a range\n"
		"                                        into one 2 MiB page (not while mapped)\n"
		"       morsel huge PATH MODE            the file's own huge mode: never, always,\n"
		"                                        within_size, advise or inherit (huge=)\n"
		"       morsel mpol PATH [POLICY]        the file's own NUMA placement: default,\n"
		"                                        prefer:N, bind:LIST, interleave[:LIST],\n"
		"                                        local or inherit (mpol=); without POLICY,\n"
		"                                        print it\n"
		"       morsel migrate PATH OFFSET LEN NODE\n"
		"                                        move the pages of a range to NUMA node\n"
		"                                        NODE (LEN 0: to the end), mapped or not\n"
		"       morsel accessed [--clear] PATH   pages accessed through shared mappings\n"
		"                                        since populated or cleared, of all\n"
		"                                        populated, on each node\n"
		"       morsel seal PATH                 make its contents final (populated,\n"
		"                                        never written again): what a shared\n"
		"                                        pool's readers may see\n"
		"       morsel bind PATH ADDR            map the morsel at ADDR from now on\n"
		"       morsel clone SRC DST             DST shares SRC's pages copy-on-write\n"
		"                                        (cp --reflink=always; one instance)\n"
		"       morsel run [--mm DIR] [--] PROG [ARG...]\n"
		"                                        run PROG with its anonymous memory (and\n"
		"                                        its children's) from the morselfs holding\n"
		"                                        DIR (default $MORSEL_MM)\n"
		"       morsel cache-stats [SOCKET]      the counters of morsel-cached (default\n"
		"                                        $MORSEL_CACHED_SOCKET, else %s)\n"
		"       morsel mkfs [-f] [-s SIZE] DEV   format DEV (a pmem device or an image file)\n"
		"                                        for mount -t morselfs -o pmem=DEV; -f: even\n"
		"                                        if it holds a morselfs already; -s: a file\n"
		"                                        system of SIZE bytes (at least 64K), not the\n"
		"                                        whole device\n"
		"       morsel fsck [-n|-y] [-v] DEV     check DEV offline (exit codes as fsck(8));\n"
		"                                        -y: finish what a crash interrupted and free\n"
		"                                        leaked pages; -n: only check (default)\n",
		MORSEL_CACHED_SOCKET);
	exit(2);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' && shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (bytes >= 1024 && !(bytes % 1024) && i < 4) {
		bytes /= 1024;
		i++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, unit[i]);
	return buf;
}

/* MORSEL_HUGE_* by number (uapi). */
static const char *const huge_names[] = {
	"never", "always", "within_size", "advise", "inherit",
};

/* MORSEL_MPOL_* by number (uapi), tmpfs's names. */
static const char *const mpol_names[] = {
	"inherit", "default", "prefer", "bind", "interleave", "local",
};

/* "0-1,3" for the bits of @nodes. */
static const char *node_list(uint64_t nodes, char *buf, size_t len)
{
	size_t at = 0;
	int n = 0, end;

	buf[0] = 0;
	while (n < 64) {
		if (!(nodes >> n & 1)) {
			n++;
			continue;
		}
		for (end = n; end + 1 < 64 && (nodes >> (end + 1) & 1); end++)
			;
		at += snprintf(buf + at, at < len ? len - at : 0, "%s%d", at ? "," : "", n);
		if (end > n)
			at += snprintf(buf + at, at < len ? len - at : 0, "-%d", end);
		n = end + 1;
	}
	return buf;
}

/* A node list "0-1,3" into bits; -EINVAL if it is not one. */
static int parse_node_list(const char *s, uint64_t *out)
{
	unsigned long a, b;
	char *end;

	*out = 0;
	if (!*s)
		return -EINVAL;
	for (;;) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		a = b = strtoul(s, &end, 10);
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return -EINVAL;
			b = strtoul(s, &end, 10);
		}
		if (a > b || b >= 64)
			return -EINVAL;
		for (; a <= b; a++)
			*out |= 1ULL << a;
		if (!*end)
			return 0;
		if (*end != ',')
			return -EINVAL;
		s = end + 1;
	}
}

/* The pages of @fd on each node, as "0: N, 1: M" (nodes with pages). */
static void print_nodes(int fd)
{
	uint64_t pages[MORSEL_MAX_NODES];
	unsigned int mode;
	uint64_t nodes;
	int n, any = 0;
	char b[200];

	if (morsel_node_pages(fd, 0, 0, pages))
		return;
	printf("nodes:   ");
	for (n = 0; n < MORSEL_MAX_NODES; n++)
		if (pages[n]) {
			printf("%s node %d %" PRIu64 " pages", any ? "," : "", n, pages[n]);
			any = 1;
		}
	printf("%s\n", any ? "" : " no pages");
	if (morsel_get_mpol(fd, &mode, &nodes) || mode >= 6)
		return;
	if (mode == MORSEL_MPOL_INHERIT || mode == MORSEL_MPOL_DEFAULT ||
	    mode == MORSEL_MPOL_LOCAL)
		printf("mpol:     %s\n", mpol_names[mode]);
	else
		printf("mpol:     %s:%s\n", mpol_names[mode], node_list(nodes, b, sizeof(b)));
}

/* MORSEL_IOC_SET_MPOL from tmpfs's mpol= syntax (and inherit); or print it. */
static int cmd_mpol(const char *path, const char *policy)
{
	char name[32], b[200];
	const char *list;
	unsigned int mode;
	uint64_t nodes = 0;
	size_t len;
	int fd, err;

	if (!policy) {
		fd = morsel_open(path, O_RDONLY);
		err = fd < 0 ? fd : morsel_get_mpol(fd, &mode, &nodes);
		if (fd >= 0)
			close(fd);
		if (err || mode >= 6) {
			fprintf(stderr, "morsel: %s: %s\n", path, strerror(err ? -err : EPROTO));
			return 1;
		}
		printf("%s%s%s\n", mpol_names[mode], nodes ? ":" : "",
		       nodes ? node_list(nodes, b, sizeof(b)) : "");
		return 0;
	}
	list = strchr(policy, ':');
	len = list ? (size_t)(list - policy) : strlen(policy);
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	memcpy(name, policy, len);
	name[len] = 0;
	for (mode = 0; mode < 6 && strcmp(name, mpol_names[mode]); mode++)
		;
	if (mode == 6 || (list && parse_node_list(list + 1, &nodes))) {
		fprintf(stderr, "morsel: policy '%s': default, prefer:N, bind:LIST, interleave[:LIST], local or inherit\n",
			policy);
		return 2;
	}
	if (mode == MORSEL_MPOL_PREFERRED && !list)
		mode = MORSEL_MPOL_LOCAL;	/* as tmpfs's "prefer" */
	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_set_mpol(fd, mode, nodes);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: mpol %s: %s\n", path, strerror(-err));
		return 1;
	}
	return 0;
}

/* MORSEL_IOC_MIGRATE; exit status 1 if a page could not move. */
static int cmd_migrate(const char *path, const char *off, const char *len,
		       const char *node)
{
	struct morsel_migrate r;
	uint64_t o, l, n;
	int fd, err;

	if (parse_size(off, &o) || parse_size(len, &l) || parse_size(node, &n) ||
	    n > 63) {
		fprintf(stderr, "morsel: bad range or node '%s' '%s' '%s'\n", off, len, node);
		return 2;
	}
	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_migrate(fd, o, l, (unsigned int)n, &r);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: migrate %s: %s\n", path, strerror(-err));
		return 1;
	}
	printf("moved %" PRIu64 ", pinned %" PRIu64 ", shared %" PRIu64 ", failed %" PRIu64 "\n",
	       (uint64_t)r.moved, (uint64_t)r.pinned, (uint64_t)r.shared, (uint64_t)r.failed);
	return r.pinned || r.shared || r.failed;
}

/* MORSEL_IOC_ACCESSED over the file: accessed and populated pages by node. */
static int cmd_accessed(const char *path, int clear)
{
	uint64_t size, words, n, i, acc, pop, all[MORSEL_MAX_NODES], hot[MORSEL_MAX_NODES];
	uint64_t *bm, one[MORSEL_MAX_NODES];
	struct morsel_stat st;
	int fd, err, node;

	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_stat(fd, &st);
	size = err ? 0 : (st.size + 4095) / 4096;
	words = (size + 63) / 64;
	bm = calloc(words ? words : 1, 8);
	if (!err && !bm)
		err = -ENOMEM;
	/* The size read: a file that grows meanwhile must not overflow bm. */
	if (!err)
		err = morsel_accessed(fd, 0, size * 4096, size ? bm : NULL, clear,
				      &acc, &pop);
	memset(all, 0, sizeof(all));
	memset(hot, 0, sizeof(hot));
	/* Where the accessed pages are: one NODE_PAGES per run of them. */
	for (i = 0; !err && i < size; i = n) {
		int set = bm[i / 64] >> (i % 64) & 1;

		for (n = i + 1; n < size && (int)(bm[n / 64] >> (n % 64) & 1) == set; n++)
			;
		err = morsel_node_pages(fd, i * 4096, (n - i) * 4096, one);
		for (node = 0; !err && node < MORSEL_MAX_NODES; node++) {
			all[node] += one[node];
			if (set)
				hot[node] += one[node];
		}
	}
	close(fd);
	free(bm);
	if (err) {
		fprintf(stderr, "morsel: accessed %s: %s\n", path, strerror(-err));
		return 1;
	}
	printf("accessed %" PRIu64 " of %" PRIu64 " pages%s\n", acc, pop,
	       clear ? " (cleared)" : "");
	for (node = 0; node < MORSEL_MAX_NODES; node++)
		if (all[node])
			printf("node %d: %" PRIu64 " accessed, %" PRIu64 " not\n", node,
			       hot[node], all[node] - hot[node]);
	return 0;
}

static int cmd_stat(const char *path)
{
	struct morsel_mapping maps[64];
	struct morsel_stat st;
	char b[32];
	int fd = morsel_open(path, O_RDONLY);
	int err, n, i;

	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_stat(fd, &st);
	n = err ? 0 : morsel_mappings(fd, maps, 64);
	if (!err && n < 0)
		err = n;
	if (err) {
		close(fd);
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-err));
		return 1;
	}
	printf("path:     %s\n", path);
	printf("order:    %" PRIu64 "\n", (uint64_t)st.order);
	printf("extent:   %" PRIu64 " (%s)\n", (uint64_t)st.extent, human(st.extent, b, sizeof(b)));
	printf("size:     %" PRIu64 "\n", (uint64_t)st.size);
	printf("pages:    %" PRIu64 "\n", (uint64_t)st.pages);
	printf("huge:     %" PRIu64 " 2 MiB leaves, %" PRIu64 " 1 GiB leaves, mode %s\n",
	       (uint64_t)st.huge, (uint64_t)st.huge1g, st.huge_mode < 4 ?
	       huge_names[st.huge_mode] : "?");
	print_nodes(fd);
	close(fd);
	printf("tables:   pte %" PRIu64 " pmd %" PRIu64 " pud %" PRIu64 " p4d %" PRIu64 "\n",
	       (uint64_t)st.tables[0], (uint64_t)st.tables[1],
	       (uint64_t)st.tables[2], (uint64_t)st.tables[3]);
	if (st.bound)
		printf("bound:    0x%" PRIx64 "\n", (uint64_t)st.bound);
	else
		printf("bound:    no\n");
	printf("min order: %" PRIu64 "\n", (uint64_t)st.min_order);
	printf("mappings: %d\n", n);
	for (i = 0; i < n && i < 64; i++) {
		if (maps[i].flags & MORSEL_MAPPING_HIDDEN) {
			printf("  (another user's process)\n");
			continue;
		}
		printf("  pid %-7" PRIu64 " 0x%012" PRIx64 " %c%c%c%s\n",
		       (uint64_t)maps[i].pid, (uint64_t)maps[i].addr,
		       maps[i].prot & MORSEL_PROT_READ ? 'r' : '-',
		       maps[i].prot & MORSEL_PROT_WRITE ? 'w' : '-',
		       maps[i].prot & MORSEL_PROT_EXEC ? 'x' : '-',
		       maps[i].flags & MORSEL_MAPPING_MOUNTED ? " mounted" : "");
	}
	return 0;
}

/* MORSEL_IOC_SET_HUGE: never, always, within_size, advise or inherit. */
static int cmd_huge(const char *path, const char *mode)
{
	unsigned int m;
	int fd, err;

	for (m = 0; m < 5 && strcmp(mode, huge_names[m]); m++)
		;
	if (m == 5) {
		fprintf(stderr, "morsel: huge mode '%s': never, always, within_size, advise or inherit\n",
			mode);
		return 2;
	}
	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_set_huge(fd, m);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: huge %s: %s\n", path, strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_range(const char *cmd, const char *path, const char *off,
		     const char *len)
{
	uint64_t o, l;
	int fd, err;

	if (parse_size(off, &o) || parse_size(len, &l)) {
		fprintf(stderr, "morsel: bad range '%s' '%s'\n", off, len);
		return 2;
	}
	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	if (!strcmp(cmd, "populate"))
		err = morsel_populate(fd, o, l);
	else if (!strcmp(cmd, "populate-huge"))
		err = morsel_populate_huge(fd, o, l);
	else if (!strcmp(cmd, "collapse"))
		err = morsel_collapse(fd, o, l);
	else
		err = morsel_evict(fd, o, l);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: %s %s: %s\n", cmd, path, strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_seal(const char *path)
{
	int fd, err;

	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_seal(fd);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: seal %s: %s\n", path, strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_bind(const char *path, const char *addr)
{
	uint64_t a;
	int fd, err;

	if (parse_size(addr, &a)) {
		fprintf(stderr, "morsel: bad address '%s'\n", addr);
		return 2;
	}
	fd = morsel_open(path, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_bind(fd, a);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: bind %s: %s\n", path, strerror(-err));
		return 1;
	}
	return 0;
}

/*
 * DST becomes a copy-on-write clone of SRC, as cp --reflink=always makes
 * it: created with SRC's permission bits if it does not exist, its
 * content replaced if it does.
 */
static int cmd_clone(const char *src, const char *dst)
{
	struct stat st;
	int in, out, err;

	in = morsel_open(src, O_RDONLY);
	if (in < 0) {
		fprintf(stderr, "morsel: %s: %s\n", src, strerror(-in));
		return 1;
	}
	if (fstat(in, &st)) {
		err = -errno;
		close(in);
		fprintf(stderr, "morsel: %s: %s\n", src, strerror(-err));
		return 1;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		   st.st_mode & 07777);
	if (out < 0) {
		fprintf(stderr, "morsel: %s: %s\n", dst, strerror(errno));
		close(in);
		return 1;
	}
	err = morsel_clone(in, out);
	close(in);
	if (close(out) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "morsel: clone %s %s: %s\n", src, dst,
			strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_cache_stats(const char *sock_path)
{
	struct morsel_cache_stats st;
	char b[32];
	int sock = morsel_cache_connect(sock_path), err;

	if (!sock_path)
		sock_path = getenv("MORSEL_CACHED_SOCKET");
	if (!sock_path || !*sock_path)
		sock_path = MORSEL_CACHED_SOCKET;
	if (sock < 0) {
		fprintf(stderr, "morsel: %s: %s\n", sock_path, strerror(-sock));
		return 1;
	}
	err = morsel_cache_stats(sock, &st);
	close(sock);
	if (err) {
		fprintf(stderr, "morsel: cache-stats %s: %s\n", sock_path,
			strerror(-err));
		return 1;
	}
	printf("socket:    %s\n", sock_path);
	printf("entries:   %" PRIu64 "\n", st.entries);
	printf("bytes:     %" PRIu64 " (%.1f MiB)\n", st.bytes, st.bytes / 1048576.0);
	printf("budget:    %" PRIu64 " (%s)\n", st.budget, human(st.budget, b, sizeof(b)));
	printf("hits:      %" PRIu64 "\n", st.hits);
	printf("loads:     %" PRIu64 "\n", st.loads);
	printf("evictions: %" PRIu64 "\n", st.evictions);
	printf("refusals:  %" PRIu64 "\n", st.refusals);
	return 0;
}

/*
 * Create PATH of SIZE bytes; with ORDER, first set the minimum order of
 * the still empty file, then the size (nothing is left behind on error).
 */
static int cmd_create(const char *path, const char *size_s,
		      const char *order_s)
{
	uint64_t size, order = 0;
	int fd, err = 0;

	if (parse_size(size_s, &size)) {
		fprintf(stderr, "morsel: bad size '%s'\n", size_s);
		return 2;
	}
	if (order_s && (parse_size(order_s, &order) ||
			order > MORSEL_MAX_ORDER)) {
		fprintf(stderr, "morsel: bad order '%s'\n", order_s);
		return 2;
	}
	fd = morsel_create(path, order_s ? 0 : size, 0644);
	if (fd < 0) {
		fprintf(stderr, "morsel: create %s: %s\n", path, strerror(-fd));
		return 1;
	}
	if (order_s) {
		err = morsel_set_min_order(fd, (unsigned int)order);
		if (!err)
			err = morsel_resize(fd, size);
		if (err) {
			fprintf(stderr, "morsel: create %s: %s\n", path,
				strerror(-err));
			unlink(path);
		}
	}
	close(fd);
	return err ? 1 : 0;
}

/* The smallest file system mkfs makes: its first 5 pages are metadata. */
#define MKFS_MIN_PAGES 16

/*
 * Without -f, mkfs formats only a device whose first 256 KiB are zeros:
 * every file system blkid knows keeps its super block there (XFS at 0,
 * ext4 at 1 KiB, iso9660 at 32 KiB, btrfs at 64 KiB, ZFS's labels up to
 * 256 KiB), so another one is never overwritten by mistake (fstests
 * generic/740), nor any other data there.
 */
#define MKFS_PROBE_BYTES (256 * 1024)

static bool holds_data(const struct mpm_fs *fs)
{
	uint64_t n = fs->nr_pages * MPM_PAGE_SIZE, i;

	if (n > MKFS_PROBE_BYTES)
		n = MKFS_PROBE_BYTES;
	for (i = 0; i < n; i++)
		if (fs->dev[i])
			return true;
	return false;
}

static int cmd_mkfs(int argc, char **argv)
{
	const char *dev = NULL, *size_s = NULL;
	uint64_t size = 0;
	bool force = false;
	struct mpm_fs fs;
	int err, i;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-f"))
			force = true;
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			size_s = argv[++i];
		else if (argv[i][0] == '-' || dev)
			usage();
		else
			dev = argv[i];
	}
	if (!dev)
		usage();
	if (size_s && (parse_size(size_s, &size) ||
		       size < MKFS_MIN_PAGES * MPM_PAGE_SIZE)) {
		fprintf(stderr, "morsel mkfs: bad size %s (at least 64K)\n", size_s);
		return 2;
	}
	err = pm_open(dev, true, &fs);
	if (err) {
		fprintf(stderr, "morsel mkfs: %s: %s\n", dev, strerror(-err));
		return 1;
	}
	if (size > fs.nr_pages * MPM_PAGE_SIZE || fs.nr_pages < MKFS_MIN_PAGES) {
		fprintf(stderr, "morsel mkfs: %s: %llu bytes, too small for %llu\n", dev,
			(unsigned long long)fs.nr_pages * MPM_PAGE_SIZE,
			(unsigned long long)(size ? size : MKFS_MIN_PAGES * MPM_PAGE_SIZE));
		pm_close(&fs);
		return 1;
	}
	if (mpm_super(&fs)->magic == MPM_MAGIC && !force) {
		fprintf(stderr, "morsel mkfs: %s holds a morselfs already (-f formats it anyway)\n", dev);
		pm_close(&fs);
		return 1;
	}
	if (holds_data(&fs) && !force) {
		fprintf(stderr, "morsel mkfs: %s holds data, perhaps another file system (-f formats it anyway)\n",
			dev);
		pm_close(&fs);
		return 1;
	}
	if (size)
		fs.nr_pages = size / MPM_PAGE_SIZE;
	pm_mkfs(&fs, 01777, 0, 0);
	printf("%s: morselfs, %llu pages of 4 KiB\n", dev, (unsigned long long)fs.nr_pages);
	err = pm_close(&fs);
	if (err) {
		fprintf(stderr, "morsel mkfs: %s: %s\n", dev, strerror(-err));
		return 1;
	}
	return 0;
}

static int cmd_fsck(int argc, char **argv)
{
	bool repair = false;
	struct mpm_fs fs;
	int i, err, status;

	for (i = 2; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-y"))
			repair = true;
		else if (!strcmp(argv[i], "-v"))
			pm_env.verbose = true;
		else if (strcmp(argv[i], "-n"))
			return PM_FSCK_USAGE;
	}
	if (argc < 3 || argv[argc - 1][0] == '-')
		return PM_FSCK_USAGE;
	err = pm_open(argv[argc - 1], repair, &fs);
	if (err) {
		fprintf(stderr, "morsel fsck: %s: %s\n", argv[argc - 1], strerror(-err));
		return PM_FSCK_OPERATIONAL;
	}
	pm_env.out = stdout;
	fs.repair = repair;
	fs.fix = repair;	/* -y removes damage too */
	err = mpm_walk(&fs);
	status = pm_fsck_status(&fs, err);
	if (!err)
		pm_print_stats(stdout, argv[argc - 1], &fs);
	if (pm_close(&fs) && repair)
		status |= PM_FSCK_OPERATIONAL;
	return status;
}

/*
 * morsel run: name the memory manager (PR_SET_MEMORY_MANAGER), then
 * become PROG, which inherits it across exec.
 */
static int cmd_run(int argc, char **argv)
{
	const char *dir = getenv("MORSEL_MM");
	int i = 2, err;

	if (i + 1 < argc && !strcmp(argv[i], "--mm")) {
		dir = argv[i + 1];
		i += 2;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc || !dir || !*dir)
		usage();
	err = morsel_set_memory_manager(dir);
	if (err) {
		fprintf(stderr, "morsel run: %s: %s\n", dir,
			err == -EINVAL ? "this kernel has no PR_SET_MEMORY_MANAGER" :
			err == -EOPNOTSUPP ? "not a volatile morselfs instance" :
			strerror(-err));
		return 125;
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "morsel run: %s: %s\n", argv[i], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
	int i, ret = 0;

	if (argc >= 2 && !strcmp(argv[1], "run"))
		return cmd_run(argc, argv);

	if (argc >= 2 && !strcmp(argv[1], "fsck"))
		return cmd_fsck(argc, argv);
	if (argc >= 3 && !strcmp(argv[1], "mkfs"))
		return cmd_mkfs(argc, argv);

	if (argc >= 2 && argc <= 3 && !strcmp(argv[1], "cache-stats"))
		return cmd_cache_stats(argc == 3 ? argv[2] : NULL);
	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "create") && argc == 6 &&
	    !strcmp(argv[2], "--order"))
		return cmd_create(argv[4], argv[5], argv[3]);
	if (!strcmp(argv[1], "create") && argc == 4)
		return cmd_create(argv[2], argv[3], NULL);
	if ((!strcmp(argv[1], "populate") || !strcmp(argv[1], "evict") ||
	     !strcmp(argv[1], "populate-huge") ||
	     !strcmp(argv[1], "collapse")) && argc == 5)
		return cmd_range(argv[1], argv[2], argv[3], argv[4]);
	if (!strcmp(argv[1], "huge") && argc == 4)
		return cmd_huge(argv[2], argv[3]);
	if (!strcmp(argv[1], "accessed") && argc == 3)
		return cmd_accessed(argv[2], 0);
	if (!strcmp(argv[1], "accessed") && argc == 4 && !strcmp(argv[2], "--clear"))
		return cmd_accessed(argv[3], 1);
	if (!strcmp(argv[1], "migrate") && argc == 6)
		return cmd_migrate(argv[2], argv[3], argv[4], argv[5]);
	if (!strcmp(argv[1], "mpol") && (argc == 3 || argc == 4))
		return cmd_mpol(argv[2], argc == 4 ? argv[3] : NULL);
	if (!strcmp(argv[1], "bind") && argc == 4)
		return cmd_bind(argv[2], argv[3]);
	if (!strcmp(argv[1], "seal") && argc == 3)
		return cmd_seal(argv[2]);
	if (!strcmp(argv[1], "clone") && argc == 4)
		return cmd_clone(argv[2], argv[3]);
	if (!strcmp(argv[1], "stat")) {
		for (i = 2; i < argc; i++)
			ret |= cmd_stat(argv[i]);
		return ret;
	}
	usage();
	return 2;
}
