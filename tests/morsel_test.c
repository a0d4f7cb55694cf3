// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs behaviour tests; run inside the VM (vm/run) with $MORSEL_MNT set
 * to a mounted morselfs.  One process per test (harness.h).
 */
#include "harness.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <sys/uio.h>

#include "morsel.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)
#define GiB (1ULL << 30)
#define TiB (1ULL << 40)
#define PG 4096ULL
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#define PALIGN(x) (((x) + PG - 1) & ~(PG - 1))

static const char *mnt(void)
{
	const char *m = getenv("MORSEL_MNT");

	if (!m)
		FAIL("MORSEL_MNT is not set (run under vm/run)");
	return m;
}

static char *path(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt(), name);
	return buf[i];
}

/* Create (replacing) a morsel file of @size bytes; returns an O_RDWR fd. */
static int mk(const char *name, uint64_t size)
{
	int fd;

	unlink(path(name));
	fd = morsel_create(path(name), size, 0644);
	if (fd < 0)
		FAIL("morsel_create(%s, %llu): %s", name,
		     (unsigned long long)size, strerror(-fd));
	return fd;
}

static struct morsel_stat st(int fd)
{
	struct morsel_stat s;
	int err = morsel_stat(fd, &s);

	if (err)
		FAIL("morsel_stat: %s", strerror(-err));
	return s;
}

static long counter(const char *name)
{
	char p[128];
	long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/sys/fs/morselfs/%s", name);
	f = fopen(p, "r");
	CHECK(f);
	CHECK(fscanf(f, "%ld", &v) == 1);
	fclose(f);
	return v;
}

static char *map(int fd, size_t len, int prot)
{
	char *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		FAIL("mmap(len %zu): %s", len, strerror(errno));
	return p;
}

/* Length of the VMA that contains @addr, from /proc/self/maps (0: none). */
static uint64_t vma_len(void *addr)
{
	unsigned long a = (unsigned long)addr, s, e;
	char line[512];
	uint64_t len = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && a >= s && a < e)
			len = e - s;
	fclose(f);
	return len;
}

/* Run @fn(@arg) in a child; return the signal that killed it (0: exit 0). */
static int child_signal(void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	CHECK(waitpid(pid, &status, 0) == pid);
	if (WIFSIGNALED(status))
		return WTERMSIG(status);
	CHECK_EQ(WEXITSTATUS(status), 0);
	return 0;
}

static void write_byte(void *p)
{
	*(volatile char *)p = 'X';
}

static void read_byte(void *p)
{
	(void)*(volatile char *)p;
}

static void wait_child_ok(pid_t pid)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		FAIL("child failed (status 0x%x)", status);
}

static const uint64_t order_size[] = { 4 * KiB, 2 * MiB, 1 * GiB };

/* ---- sizes and orders ---- */

TEST(size_chooses_order)
{
	static const struct { uint64_t size; int order; } cases[] = {
		{ 0, 0 }, { 1, 0 }, { 4 * KiB, 0 }, { 4 * KiB + 1, 1 },
		{ 5000, 1 }, { 2 * MiB, 1 }, { 2 * MiB + 1, 2 }, { 1 * GiB, 2 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = mk("order", cases[i].size);
		struct morsel_stat s = st(fd);
		struct stat sb;

		CHECK(fstat(fd, &sb) == 0);
		CHECK_EQ(sb.st_size, cases[i].size);
		CHECK_EQ(s.size, cases[i].size);
		CHECK_EQ(s.order, cases[i].order);
		CHECK_EQ(s.extent, morsel_order_extent(cases[i].order));
		CHECK_EQ(morsel_order_for_size(cases[i].size), cases[i].order);
		/* Right after creation: no data page, one root table (order >= 1). */
		CHECK_EQ(s.pages, 0);
		CHECK_EQ(s.tables[0], cases[i].order == 1);
		CHECK_EQ(s.tables[1], cases[i].order == 2);
		CHECK_EQ(s.tables[2] + s.tables[3], 0);
		close(fd);
	}
	unlink(path("order"));
}

/* 5-level paging in the guest (vm/run --paging 5)? */
static int five_level(void)
{
	const char *p = getenv("MORSEL_PAGING");

	if (!p)
		FAIL("MORSEL_PAGING is not set (run under vm/run)");
	return !strcmp(p, "5");
}

TEST(size_limits)
{
	int fd = mk("big", 2 * MiB);

	CHECK(ftruncate(fd, 1 * GiB + 1) == 0);
	CHECK_EQ(st(fd).order, 3);
	CHECK(ftruncate(fd, 512 * GiB) == 0);
	CHECK_EQ(st(fd).order, 3);
	if (five_level()) {
		CHECK(ftruncate(fd, 256 * TiB) == 0);
		CHECK_EQ(st(fd).order, 4);
		CHECK_EQ(st(fd).tables[3], 1);
	} else {
		/* An order-4 morsel could never be mapped with 4 levels. */
		CHECK_ERR(ftruncate(fd, 512 * GiB + 1), EFBIG);
		CHECK_ERR(ftruncate(fd, 256 * TiB), EFBIG);
		CHECK_EQ(st(fd).order, 3);
	}
	CHECK_ERR(ftruncate(fd, 256 * TiB + 1), EFBIG);
	CHECK_ERR(ftruncate(fd, -1), EINVAL);
	CHECK_EQ(morsel_order_for_size(256 * TiB + 1), -EFBIG);
	/* Back down: the tables above the old root go again. */
	CHECK(ftruncate(fd, 2 * MiB) == 0);
	CHECK_EQ(st(fd).order, 1);
	CHECK_EQ(st(fd).size, 2 * MiB);
	CHECK_EQ(st(fd).tables[0], 1);
	CHECK_EQ(st(fd).tables[1] + st(fd).tables[2] + st(fd).tables[3], 0);
	close(fd);
	unlink(path("big"));
}

TEST(resize_keeps_data_and_frees)
{
	int fd = mk("grow", 4 * KiB);
	char *p;

	p = map(fd, 4 * KiB, PROT_READ | PROT_WRITE);
	strcpy(p, "first");
	munmap(p, 4 * KiB);
	/* 4 KiB -> 2 MiB: the old page becomes entry 0 of a new PTE table. */
	CHECK(ftruncate(fd, 2 * MiB) == 0);
	CHECK_EQ(st(fd).order, 1);
	p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE);
	CHECK(!strcmp(p, "first"));
	strcpy(p + 1 * MiB, "second");
	munmap(p, 2 * MiB);
	/* 2 MiB -> 1 GiB */
	CHECK(ftruncate(fd, 1 * GiB) == 0);
	CHECK_EQ(st(fd).order, 2);
	CHECK_EQ(st(fd).pages, 2);
	p = map(fd, 1 * GiB, PROT_READ | PROT_WRITE);
	CHECK(!strcmp(p, "first"));
	CHECK(!strcmp(p + 1 * MiB, "second"));
	strcpy(p + 512 * MiB, "third");
	munmap(p, 1 * GiB);
	CHECK_EQ(st(fd).pages, 3);
	CHECK_EQ(st(fd).tables[0], 2);
	/* Shrinking frees what was cut off, and lowers the order. */
	CHECK(ftruncate(fd, 3 * MiB) == 0);
	CHECK_EQ(st(fd).pages, 2);
	CHECK_EQ(st(fd).tables[0], 1);
	CHECK(ftruncate(fd, 8 * KiB) == 0);
	CHECK_EQ(st(fd).order, 1);
	CHECK_EQ(st(fd).pages, 1);
	CHECK_EQ(st(fd).tables[1], 0);
	CHECK(ftruncate(fd, 4 * KiB) == 0);
	CHECK_EQ(st(fd).order, 0);
	CHECK_EQ(st(fd).tables[0], 0);
	p = map(fd, 4 * KiB, PROT_READ);
	CHECK(!strcmp(p, "first"));
	munmap(p, 4 * KiB);
	/* Shrinking inside a page zeroes the cut-off bytes. */
	CHECK(ftruncate(fd, 2) == 0);
	CHECK(ftruncate(fd, 4 * KiB) == 0);
	p = map(fd, 4 * KiB, PROT_READ);
	CHECK(p[0] == 'f' && p[1] == 'i' && p[2] == 0 && p[4] == 0);
	munmap(p, 4 * KiB);
	CHECK(ftruncate(fd, 0) == 0);
	CHECK_EQ(st(fd).pages, 0);
	close(fd);
	unlink(path("grow"));
}

/*
 * The order rises while mapped (the mapping keeps its 2 MiB extent and
 * its data); shrinking while mapped frees the pages past the size and
 * keeps the order until the last mapping is gone.
 */
TEST(resize_while_mapped)
{
	int fd = mk("rm", 5000);
	char *p = map(fd, 5000, PROT_READ | PROT_WRITE), *q;

	p[4999] = 1;
	CHECK(ftruncate(fd, 1 * MiB) == 0);		/* same order */
	p[1 * MiB - 1] = 2;
	CHECK(ftruncate(fd, 4 * MiB) == 0);		/* order 1 -> 2 */
	CHECK_EQ(st(fd).order, 2);
	CHECK_EQ(vma_len(p), 2 * MiB);
	CHECK(p[4999] == 1 && p[1 * MiB - 1] == 2);
	p[2 * MiB - 1] = 3;				/* the old extent's end */
	q = map(fd, 4 * MiB, PROT_READ);		/* a new one: 1 GiB */
	CHECK(q[4999] == 1 && q[1 * MiB - 1] == 2 && q[2 * MiB - 1] == 3);
	CHECK_EQ(st(fd).pages, 3);
	CHECK(ftruncate(fd, 4 * KiB) == 0);		/* shrink */
	CHECK_EQ(st(fd).size, 4 * KiB);
	CHECK_EQ(st(fd).order, 2);			/* held by the mappings */
	CHECK_EQ(st(fd).pages, 0);
	CHECK(p[0] == 0);
	CHECK_EQ(child_signal(read_byte, q + 4999), SIGBUS);
	munmap(q, 4 * MiB);
	munmap(p, 5000);
	CHECK(ftruncate(fd, 4 * KiB) == 0);
	CHECK(ftruncate(fd, 5000) == 0);		/* unmapped: falls */
	CHECK_EQ(st(fd).order, 1);
	close(fd);
	unlink(path("rm"));
}

/* ---- mmap ---- */

TEST(map_each_order)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		uint64_t size = order ? ext / 2 + 1 : 100;
		int fd = mk("each", size);
		char *p = map(fd, size, PROT_READ | PROT_WRITE);

		CHECK_EQ((uintptr_t)p % ext, 0);	/* naturally aligned */
		CHECK_EQ(vma_len(p), ext);		/* whole extent reserved */
		CHECK_EQ(st(fd).mappings, 1);
		p[0] = 'a';
		p[size - 1] = 'z';
		CHECK_EQ(st(fd).pages, order ? 2 : 1);
		/* Beyond the file size (page rounded), like any file: SIGBUS. */
		if (PALIGN(size) < ext)
			CHECK_EQ(child_signal(read_byte, p + PALIGN(size)), SIGBUS);
		/* munmap with the length that was mapped removes everything. */
		CHECK(munmap(p, size) == 0);
		CHECK_EQ(vma_len(p), 0);
		CHECK_EQ(st(fd).mappings, 0);
		p = map(fd, size, PROT_READ);
		CHECK(p[0] == 'a' && p[size - 1] == 'z');
		CHECK(munmap(p, ext) == 0);
		close(fd);
	}
	unlink(path("each"));
}

TEST(map_reserves_extent)
{
	int fd = mk("res", 1 * GiB);
	char *p = map(fd, 1, PROT_READ | PROT_WRITE);
	void *q;

	CHECK_EQ(vma_len(p), 1 * GiB);
	/* Nothing else may land inside the mounted range. */
	q = mmap(p + 512 * MiB, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED_NOREPLACE, -1, 0);
	CHECK(q == MAP_FAILED && errno == EEXIST);
	q = mmap(p + 512 * MiB, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(q != MAP_FAILED);
	CHECK((char *)q >= p + 1 * GiB || (char *)q + 4096 <= p);
	munmap(q, 4096);
	CHECK(munmap(p, 1) == 0);
	CHECK_EQ(vma_len(p), 0);
	close(fd);
	unlink(path("res"));
}

TEST(map_bad_arguments)
{
	int fd = mk("bad", 2 * MiB), rfd;
	char *p;

	CHECK_ERR(mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	CHECK_ERR(mmap(NULL, 1ULL << 60, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	/* An unaligned MAP_FIXED address. */
	p = map(fd, 2 * MiB, PROT_READ);
	munmap(p, 2 * MiB);
	CHECK_ERR(mmap(p + 4096, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0), EINVAL);
	CHECK_ERR(mmap(p + 1 * MiB, 4096, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0), EINVAL);
	/* Writable shared mapping of a read-only open. */
	rfd = open(path("bad"), O_RDONLY);
	CHECK(rfd >= 0);
	CHECK_ERR(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0), EACCES);
	CHECK_EQ(st(fd).mappings, 0);
	close(rfd);
	close(fd);
	unlink(path("bad"));
}

TEST(map_fixed_aligned)
{
	int fd = mk("fix", 1 * GiB);
	char *p = map(fd, 1 * GiB, PROT_READ | PROT_WRITE), *q;

	strcpy(p + 12345, "fixed");
	munmap(p, 1 * GiB);
	q = mmap(p, 1 * GiB, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
	CHECK(q == p);
	CHECK(!strcmp(q + 12345, "fixed"));
	munmap(q, 1 * GiB);
	close(fd);
	unlink(path("fix"));
}

TEST(two_mappings_one_process)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		int fd = mk("two", order_size[order]);
		char *a = map(fd, order_size[order], PROT_READ | PROT_WRITE);
		char *b = map(fd, order_size[order], PROT_READ | PROT_WRITE);

		CHECK(a != b);
		strcpy(a + order_size[order] - 100, "via a");
		CHECK(!strcmp(b + order_size[order] - 100, "via a"));
		b[0] = 'b';
		CHECK(a[0] == 'b');
		CHECK_EQ(st(fd).mappings, 2);
		CHECK_EQ(st(fd).pages, order ? 2 : 1);
		munmap(a, order_size[order]);
		munmap(b, order_size[order]);
		close(fd);
	}
	unlink(path("two"));
}

TEST(two_processes_by_path)
{
	int fd = mk("tp", 2 * MiB), pfd[2];
	char *p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE), c;
	pid_t pid;

	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		int cfd = morsel_open(path("tp"), O_RDWR);
		char *q = cfd >= 0 ? map(cfd, 2 * MiB, PROT_READ | PROT_WRITE) : NULL;

		CHECK(q);
		strcpy(q + 1 * MiB, "from child");
		CHECK(write(pfd[1], "x", 1) == 1);
		_exit(0);
	}
	close(pfd[1]);
	CHECK(read(pfd[0], &c, 1) == 1);
	CHECK(!strcmp(p + 1 * MiB, "from child"));
	wait_child_ok(pid);
	CHECK_EQ(st(fd).mappings, 1);
	munmap(p, 2 * MiB);
	close(fd);
	unlink(path("tp"));
}

TEST(fork_shares_mapping)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		int fd = mk("fork", ext);
		char *p = map(fd, ext, PROT_READ | PROT_WRITE);
		pid_t pid;

		p[0] = 'A';
		pid = fork();
		if (pid == 0) {
			CHECK(p[0] == 'A');
			p[ext - 1] = 'B';
			p[0] = 'C';
			_exit(0);
		}
		wait_child_ok(pid);
		CHECK(p[0] == 'C' && p[ext - 1] == 'B');
		CHECK_EQ(st(fd).mappings, 1);
		CHECK_EQ(st(fd).pages, order ? 2 : 1);
		munmap(p, ext);
		close(fd);
	}
	unlink(path("fork"));
}

TEST(kill9_keeps_morsel)
{
	int fd = mk("k9", 1 * GiB), pfd[2];
	long pages0 = counter("pages");
	char c;
	pid_t pid;
	int i;

	CHECK(pipe(pfd) == 0);
	pid = fork();
	if (pid == 0) {
		char *q = map(fd, 1 * GiB, PROT_READ | PROT_WRITE);

		for (i = 0; i < 64; i++)
			q[(uint64_t)i * 3 * MiB] = (char)i + 1;
		CHECK(write(pfd[1], "r", 1) == 1);
		for (;;)
			q[5] = q[5] + 1;
	}
	CHECK(read(pfd[0], &c, 1) == 1);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(waitpid(pid, NULL, 0) == pid);
	CHECK_EQ(st(fd).mappings, 0);
	CHECK_EQ(st(fd).pages, 64);
	CHECK_EQ(counter("pages") - pages0, 64);
	{
		char *p = map(fd, 1 * GiB, PROT_READ);

		for (i = 0; i < 64; i++)
			CHECK_EQ(p[(uint64_t)i * 3 * MiB], (char)i + 1);
		munmap(p, 1 * GiB);
	}
	close(fd);
	unlink(path("k9"));
	CHECK_EQ(counter("pages"), pages0);
}

TEST(fd_passing)
{
	int sv[2], fd;
	pid_t pid;
	char *p;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	if (pid == 0) {
		int mfd = mk("pass", 1 * GiB);
		char *q = map(mfd, 1 * GiB, PROT_READ | PROT_WRITE);

		strcpy(q + 700 * MiB, "passed");
		munmap(q, 1 * GiB);
		unlink(path("pass"));	/* only the fd keeps it now */
		CHECK_EQ(morsel_send_fd(sv[0], mfd), 0);
		_exit(0);
	}
	fd = morsel_recv_fd(sv[1]);
	CHECK(fd >= 0);
	wait_child_ok(pid);
	p = map(fd, 1 * GiB, PROT_READ);
	CHECK(!strcmp(p + 700 * MiB, "passed"));
	munmap(p, 1 * GiB);
	close(fd);
	/* recv on a message without a descriptor */
	CHECK(write(sv[0], "x", 1) == 1);
	CHECK_EQ(morsel_recv_fd(sv[1]), -EBADMSG);
}

/* ---- generic mm paths: work, or are refused, and never touch the tables ---- */

struct snap { long pages, tables; };

static struct snap snap(int fd)
{
	struct morsel_stat s = st(fd);

	return (struct snap){ (long)s.pages,
		(long)(s.tables[0] + s.tables[1] + s.tables[2] + s.tables[3]) };
}

#define CHECK_SNAP(fd, s) do {						\
	struct snap _n = snap(fd);					\
	CHECK_EQ(_n.pages, (s).pages);					\
	CHECK_EQ(_n.tables, (s).tables);				\
} while (0)

/* Map an order-2 morsel and touch 3 pages in different 2 MiB regions. */
static char *prepared(int *fd)
{
	char *p;

	*fd = mk("paths", 1 * GiB);
	p = map(*fd, 1 * GiB, PROT_READ | PROT_WRITE);
	p[0] = 1;
	p[300 * MiB] = 2;
	p[1 * GiB - 1] = 3;
	return p;
}

static void check_prepared(char *p)
{
	CHECK(p[0] == 1 && p[300 * MiB] == 2 && p[1 * GiB - 1] == 3);
}

TEST(munmap_and_exit_keep_tables)
{
	int fd;
	char *p = prepared(&fd);
	struct snap s = snap(fd);
	pid_t pid;

	CHECK_EQ(s.pages, 3);
	CHECK_EQ(s.tables, 4);	/* PMD root + 3 PTE tables */
	CHECK(munmap(p, 1 * GiB) == 0);
	CHECK_SNAP(fd, s);
	pid = fork();
	if (pid == 0) {
		char *q = map(fd, 1 * GiB, PROT_READ);

		check_prepared(q);
		_exit(0);	/* exit with the morsel mapped */
	}
	wait_child_ok(pid);
	CHECK_SNAP(fd, s);
	p = map(fd, 1 * GiB, PROT_READ);
	check_prepared(p);
	close(fd);
}

TEST(mprotect_refused)
{
	int fd;
	char *p = prepared(&fd);
	struct snap s = snap(fd);

	CHECK_ERR(mprotect(p, 1 * GiB, PROT_READ), EACCES);
	CHECK_ERR(mprotect(p, 1 * GiB, PROT_NONE), EACCES);
	CHECK_ERR(mprotect(p, 4096, PROT_READ), EACCES);	/* a part, too */
	CHECK(mprotect(p, 1 * GiB, PROT_READ | PROT_WRITE) == 0); /* no change */
	p[0] = 1;
	check_prepared(p);
	CHECK_SNAP(fd, s);
	close(fd);
}

TEST(mremap_move_or_refuse)
{
	int fd;
	char *p = prepared(&fd), *q, *target;
	struct snap s = snap(fd);

	CHECK_ERR(mremap(p, 1 * GiB, 2 * GiB, 0), ENOMEM);	/* past it */
	CHECK_ERR(mremap(p, 1 * GiB, 2 * GiB, MREMAP_MAYMOVE), ENOMEM);
	/* Inside the extent: in place, the VMA stays whole. */
	CHECK(mremap(p, 1 * GiB, 4096, 0) == p);
	CHECK(mremap(p, 4096, 512 * MiB, MREMAP_MAYMOVE) == p);
	CHECK_EQ(vma_len(p), 1 * GiB);
	check_prepared(p);
	CHECK_SNAP(fd, s);
	/* A whole move to an aligned address works: the new VMA remounts. */
	target = map(fd, 1 * GiB, PROT_READ);
	CHECK(munmap(target, 1 * GiB) == 0);
	CHECK_ERR(mremap(p, 1 * GiB, 1 * GiB, MREMAP_MAYMOVE | MREMAP_FIXED,
			 target + 2 * MiB), EINVAL);			/* unaligned */
	q = mremap(p, 1 * GiB, 1 * GiB, MREMAP_MAYMOVE | MREMAP_FIXED, target);
	CHECK(q == target);
	check_prepared(q);
	CHECK_EQ(vma_len(p), 0);
	CHECK_EQ(st(fd).mappings, 1);
	CHECK_SNAP(fd, s);
	CHECK_EQ(child_signal(read_byte, p), SIGSEGV);
	munmap(q, 1 * GiB);
	close(fd);
}

TEST(madvise_refused_or_harmless)
{
	static const struct { int advice; int err; } cases[] = {
		{ MADV_DONTNEED, EINVAL }, { MADV_FREE, EINVAL },
		{ MADV_COLD, EINVAL },
		{ MADV_PAGEOUT, EINVAL }, { MADV_COLLAPSE, EINVAL },
		{ MADV_DOFORK, EINVAL }, { MADV_DODUMP, EINVAL },
		{ MADV_DONTDUMP, 0 },
		{ MADV_HUGEPAGE, 0 }, { MADV_NOHUGEPAGE, 0 },
		{ MADV_WILLNEED, 0 },
	};
	int fd;
	char *p = prepared(&fd);
	struct snap s = snap(fd);
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = madvise(p, 1 * GiB, cases[i].advice);

		if (cases[i].err)
			CHECK(r == -1 && errno == cases[i].err);
		else
			CHECK(r == 0);
		check_prepared(p);
		CHECK_SNAP(fd, s);
	}
	close(fd);
}

TEST(partial_munmap_refused)
{
	int fd;
	char *p = prepared(&fd);
	struct snap s = snap(fd);

	CHECK_ERR(munmap(p + 4096, 4096), EINVAL);
	CHECK_ERR(munmap(p + 512 * MiB, 512 * MiB), EINVAL);
	CHECK_ERR(munmap(p + 4096, 1 * GiB), EINVAL);
	check_prepared(p);
	CHECK_SNAP(fd, s);
	CHECK_EQ(vma_len(p), 1 * GiB);
	/* MAP_FIXED over part of it is a split as well. */
	CHECK(mmap(p + 2 * MiB, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		   MAP_FIXED, -1, 0) == MAP_FAILED);
	check_prepared(p);
	/* MAP_FIXED over the whole of it replaces it cleanly. */
	CHECK(mmap(p, 1 * GiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		   MAP_FIXED, -1, 0) == p);
	CHECK_EQ(p[0], 0);
	CHECK_EQ(st(fd).mappings, 0);
	CHECK_SNAP(fd, s);
	munmap(p, 1 * GiB);
	close(fd);
}

TEST(unlink_keeps_alive_until_last_ref)
{
	long morsels0 = counter("morsels"), pages0 = counter("pages");
	long tables0 = counter("tables");
	int fd = mk("ul", 2 * MiB);
	char *p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE);

	p[0] = 'u';
	CHECK(unlink(path("ul")) == 0);
	CHECK(access(path("ul"), F_OK) != 0);
	close(fd);
	CHECK(p[0] == 'u');
	p[1 * MiB] = 'v';
	CHECK_EQ(counter("morsels"), morsels0 + 1);
	CHECK_EQ(counter("pages"), pages0 + 2);
	munmap(p, 2 * MiB);
	CHECK_EQ(counter("morsels"), morsels0);
	CHECK_EQ(counter("pages"), pages0);
	CHECK_EQ(counter("tables"), tables0);
}

/* ---- rights ---- */

TEST(readonly_open_maps_readonly)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		int fd = mk("ro", ext), rfd;
		char *w = map(fd, ext, PROT_READ | PROT_WRITE), *r;

		w[ext - 1] = 'w';
		rfd = morsel_open(path("ro"), O_RDONLY);
		CHECK(rfd >= 0);
		CHECK(mmap(NULL, ext, PROT_READ | PROT_WRITE, MAP_SHARED, rfd,
			   0) == MAP_FAILED && errno == EACCES);
		r = map(rfd, ext, PROT_READ);
		CHECK(r[ext - 1] == 'w');
		CHECK_EQ(child_signal(write_byte, r + ext - 1), SIGSEGV);
		CHECK_EQ(child_signal(write_byte, r), SIGSEGV);
		CHECK(r[ext - 1] == 'w');
		w[0] = 'x';			/* writer still writes */
		CHECK(r[0] == 'x');
		CHECK_ERR(mprotect(r, ext, PROT_READ | PROT_WRITE), EACCES);
		/* A read-only mapping of a writable open: the same. */
		munmap(r, ext);
		r = map(fd, ext, PROT_READ);
		CHECK_EQ(child_signal(write_byte, r), SIGSEGV);
		CHECK(r[0] == 'x');
		munmap(r, ext);
		munmap(w, ext);
		close(rfd);
		close(fd);
	}
	unlink(path("ro"));
}

TEST(exec_needs_prot_exec)
{
	int fd = mk("x", 2 * MiB);
	char *w = map(fd, 2 * MiB, PROT_READ | PROT_WRITE);
	char *x = mmap(NULL, 2 * MiB, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
	int (*fn)(void);

	CHECK(x != MAP_FAILED);
	/* mov eax, 42; ret */
	memcpy(w + 64, "\xb8\x2a\x00\x00\x00\xc3", 6);
	fn = (int (*)(void))(x + 64);
	CHECK_EQ(fn(), 42);
	CHECK_EQ(child_signal((void (*)(void *))(void *)(w + 64), NULL), SIGSEGV);
	munmap(x, 2 * MiB);
	munmap(w, 2 * MiB);
	close(fd);
	unlink(path("x"));
}

/* ---- system calls with a morsel buffer ---- */

TEST(syscalls_on_morsel_buffers)
{
	int fd = mk("sys", 2 * MiB), pfd[2], tfd;
	char *p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE);
	char buf[64] = "";
	struct iovec local = { buf, 16 }, remote = { p, 16 };

	/* read() from a regular file into the morsel */
	tfd = open("/tmp/morsel-sys", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(tfd >= 0);
	CHECK(write(tfd, "file contents", 13) == 13);
	CHECK(lseek(tfd, 0, SEEK_SET) == 0);
	CHECK_EQ(read(tfd, p + 100, 13), 13);
	CHECK(!memcmp(p + 100, "file contents", 13));
	close(tfd);
	unlink("/tmp/morsel-sys");
	/* write() from the morsel into a pipe, and read() back into it */
	CHECK(pipe(pfd) == 0);
	strcpy(p + 1 * MiB, "through a pipe");
	CHECK_EQ(write(pfd[1], p + 1 * MiB, 15), 15);
	CHECK_EQ(read(pfd[0], p + 1 * MiB + 4096, 15), 15);
	CHECK(!strcmp(p + 1 * MiB + 4096, "through a pipe"));
	/* ... and through a socket */
	{
		int sv[2];

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		CHECK_EQ(send(sv[0], p + 1 * MiB, 15, 0), 15);
		CHECK_EQ(recv(sv[1], p + 1 * MiB + 8192, 15, 0), 15);
		CHECK(!strcmp(p + 1 * MiB + 8192, "through a pipe"));
		close(sv[0]);
		close(sv[1]);
	}
	/* process_vm_readv() into a morsel buffer, and from one (GUP) */
	strcpy(p + 8192, "remote bytes");
	remote.iov_base = p + 8192;
	local.iov_base = p + 3 * 4096;
	CHECK_EQ(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), 16);
	CHECK(!strcmp(p + 3 * 4096, "remote bytes"));
	local.iov_base = buf;
	CHECK_EQ(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), 16);
	CHECK(!strcmp(buf, "remote bytes"));
	munmap(p, 2 * MiB);
	close(fd);
	unlink(path("sys"));
}

/* ---- accounting ---- */

static long vm_pte_kib(void)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

TEST(tables_not_accounted_to_process)
{
	int fd = mk("acct", 1 * GiB), i;
	char *p = map(fd, 1 * GiB, PROT_READ | PROT_WRITE);
	long before = vm_pte_kib();

	for (i = 0; i < 256; i++)
		p[(uint64_t)i * 2 * MiB] = 1;
	CHECK_EQ(st(fd).tables[0], 256);		/* 1 MiB of PTE tables */
	CHECK(vm_pte_kib() - before < 64);
	munmap(p, 1 * GiB);
	close(fd);
	unlink(path("acct"));
}

/* ---- concurrency ---- */

#define WORKERS 4
#define SHARED_PAGES 256
#define OWN_PAGES 64

struct worker { char *p; int id; pthread_barrier_t *bar; };

/* Every worker touches the shared pages (in its own order) and its own. */
static void touch_pages(char *p, int id)
{
	int i;

	for (i = 0; i < SHARED_PAGES; i++) {
		int pg = (i * 37 + id * 101) % SHARED_PAGES;

		__atomic_fetch_add(&p[(uint64_t)pg * 2 * MiB + 8 * id],
				   1, __ATOMIC_RELAXED);
	}
	for (i = 0; i < OWN_PAGES; i++)
		p[512 * MiB + (uint64_t)(id * OWN_PAGES + i) * 3 * PG] = 1;
}

static void *thread_fn(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(w->bar);
	touch_pages(w->p, w->id);
	return NULL;
}

TEST(concurrent_faults)
{
	int round;

	for (round = 0; round < 3; round++) {
		int fd = mk("conc", 1 * GiB), i, go[2];
		char *p = map(fd, 1 * GiB, PROT_READ | PROT_WRITE);
		struct worker w[WORKERS];
		pthread_t th[WORKERS];
		pthread_barrier_t bar;
		pid_t pids[WORKERS];
		struct morsel_stat s;
		uint64_t own_end;

		CHECK(pipe(go) == 0);
		/* WORKERS processes (each with its own mapping) ... */
		for (i = 0; i < WORKERS; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				char *q = map(fd, 1 * GiB, PROT_READ | PROT_WRITE), c;

				close(go[1]);
				CHECK(read(go[0], &c, 1) == 0);
				touch_pages(q, WORKERS + i);
				_exit(0);
			}
		}
		/* ... and WORKERS threads on the parent's mapping. */
		pthread_barrier_init(&bar, NULL, WORKERS + 1);
		for (i = 0; i < WORKERS; i++) {
			w[i] = (struct worker){ p, i, &bar };
			CHECK(pthread_create(&th[i], NULL, thread_fn, &w[i]) == 0);
		}
		close(go[1]);			/* releases the processes */
		pthread_barrier_wait(&bar);	/* and the threads */
		for (i = 0; i < WORKERS; i++)
			CHECK(pthread_join(th[i], NULL) == 0);
		for (i = 0; i < WORKERS; i++)
			wait_child_ok(pids[i]);
		close(go[0]);
		/* Every increment landed: no page was lost or doubled. */
		for (i = 0; i < SHARED_PAGES; i++) {
			int k;

			for (k = 0; k < 2 * WORKERS; k++)
				CHECK_EQ(p[(uint64_t)i * 2 * MiB + 8 * k], 1);
		}
		s = st(fd);
		CHECK_EQ(s.pages, SHARED_PAGES + 2 * WORKERS * OWN_PAGES);
		/* PTE tables: one per shared page (2 MiB apart) + the own pages'. */
		own_end = (uint64_t)(2 * WORKERS * OWN_PAGES) * 3 * PG;
		CHECK_EQ(s.tables[0], SHARED_PAGES + (own_end + 2 * MiB - 1) / (2 * MiB));
		CHECK_EQ(s.tables[1], 1);
		munmap(p, 1 * GiB);
		close(fd);
	}
	unlink(path("conc"));
}

/* ---- leaks ---- */

TEST(no_leaks_after_many_morsels)
{
	long pages0 = counter("pages"), tables0 = counter("tables");
	long morsels0 = counter("morsels");
	int i;

	for (i = 0; i < 150; i++) {
		unsigned int order = i % 3;
		uint64_t ext = order_size[order];
		int fd = mk("leak", ext - (i % 7));
		char *p = map(fd, ext - (i % 7), PROT_READ | PROT_WRITE);

		p[0] = 1;
		p[(ext / 3) & ~(PG - 1)] = 2;
		if (i % 10 == 0) {
			pid_t pid = fork();

			if (pid == 0) {
				p[ext / 2] = 3;
				_exit(0);
			}
			wait_child_ok(pid);
		}
		if (i % 2)
			CHECK(munmap(p, ext) == 0);
		CHECK(unlink(path("leak")) == 0);
		close(fd);
		if (!(i % 2))
			CHECK(munmap(p, ext) == 0);	/* last ref is the VMA */
	}
	CHECK_EQ(counter("pages"), pages0);
	CHECK_EQ(counter("tables"), tables0);
	CHECK_EQ(counter("morsels"), morsels0);
}

/* ---- ioctl and file system ---- */

TEST(ioctl_bad_input)
{
	int fd = mk("io", 2 * MiB);
	struct morsel_stat s;
	int dfd;

	memset(&s, 0, sizeof(s));
	s.flags = 1;
	CHECK_ERR(ioctl(fd, MORSEL_IOC_STAT, &s), EINVAL);
	memset(&s, 0, sizeof(s));
	s.reserved[5] = 1;
	CHECK_ERR(ioctl(fd, MORSEL_IOC_STAT, &s), EINVAL);

	CHECK_ERR(ioctl(fd, MORSEL_IOC_STAT, (void *)16), EFAULT);
	CHECK_ERR(ioctl(fd, _IOWR(MORSEL_IOC_MAGIC, 0x7f, struct morsel_stat), &s), ENOTTY);
	CHECK_ERR(ioctl(fd, 0x5401 /* TCGETS */, &s), ENOTTY);
	dfd = open(mnt(), O_RDONLY | O_DIRECTORY);
	CHECK(dfd >= 0);
	CHECK_ERR(ioctl(dfd, MORSEL_IOC_STAT, &s), ENOTTY);
	close(dfd);
	CHECK_EQ(sizeof(struct morsel_stat) % 8, 0);
	close(fd);
	unlink(path("io"));
}

TEST(filesystem_operations)
{
	int fd = mk("fs-a", 5000);
	struct stat sb;

	CHECK(mkdir(path("fs-dir"), 0755) == 0);
	CHECK(rename(path("fs-a"), path("fs-dir/b")) == 0);
	CHECK(link(path("fs-dir/b"), path("fs-c")) == 0);
	CHECK(stat(path("fs-c"), &sb) == 0);
	CHECK_EQ(sb.st_size, 5000);
	CHECK_EQ(sb.st_nlink, 2);
	CHECK(mknod(path("fs-fifo"), S_IFIFO | 0644, 0) == 0);	/* fs_test has more */
	CHECK(unlink(path("fs-fifo")) == 0);
	CHECK_ERR(rmdir(path("fs-dir")), ENOTEMPTY);
	CHECK(unlink(path("fs-dir/b")) == 0);
	CHECK(rmdir(path("fs-dir")) == 0);
	CHECK(unlink(path("fs-c")) == 0);
	CHECK_EQ(st(fd).size, 5000);
	close(fd);
	CHECK_ERR(open(path("fs-none"), O_RDWR), ENOENT);
	CHECK_EQ(morsel_open(path("fs-none"), O_RDWR), -ENOENT);
	CHECK_EQ(morsel_create("/proc/nonexistent/x", 1, 0644) < 0, 1);
}

TEST(permissions_from_vfs)
{
	int fd = mk("perm", 2 * MiB);
	pid_t pid;

	CHECK(fchmod(fd, 0600) == 0);
	/* the root is world-writable (mode=01777, as tmpfs); this is not */
	CHECK(mkdir(path("perm-dir"), 0755) == 0);
	pid = fork();
	if (pid == 0) {
		CHECK(setgid(65534) == 0 && setuid(65534) == 0);
		CHECK_ERR(open(path("perm"), O_RDONLY), EACCES);
		CHECK_ERR(open(path("perm-dir/new"), O_RDWR | O_CREAT, 0644), EACCES);
		_exit(0);
	}
	wait_child_ok(pid);
	close(fd);
	unlink(path("perm"));
	rmdir(path("perm-dir"));
}

/* ---- CLI ---- */

static int run(const char *cmd, char *out, size_t len)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	CHECK(f);
	n = fread(out, 1, len - 1, f);
	out[n] = 0;
	return pclose(f);
}

TEST(cli_create_and_stat)
{
	char cmd[512], out[2048];
	int fd;
	char *p;

	unlink(path("cli"));
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 3M", path("cli"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	fd = morsel_open(path("cli"), O_RDWR);
	CHECK(fd >= 0);
	p = map(fd, 3 * MiB, PROT_READ | PROT_WRITE);
	p[0] = p[2 * MiB] = 1;
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s", path("cli"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "order:    2\n"));
	CHECK(strstr(out, "extent:   1073741824 (1 GiB)\n"));
	CHECK(strstr(out, "size:     3145728\n"));
	CHECK(strstr(out, "pages:    2\n"));
	CHECK(strstr(out, "tables:   pte 2 pmd 1 pud 0 p4d 0\n"));
	CHECK(strstr(out, "mappings: 1\n"));
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 3M 2>&1", path("cli"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "File exists"));
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 12x 2>&1", path("cli2"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "bad size"));
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 300T 2>&1", path("cli2"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "File too large"));
	CHECK(access(path("cli2"), F_OK) != 0);
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s 2>&1", path("none"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "No such file"));
	munmap(p, 3 * MiB);
	close(fd);
	unlink(path("cli"));
}

/* ---- orders 3 and 4, contiguous runs ---- */

/* Touch three far-apart pages of a big mapping from a fork child. */
static void read_three(void *arg)
{
	char **q = arg;

	if (*q[0] != 'a' || *q[1] != 'm' || *q[2] != 'z')
		_exit(3);
}

/*
 * Create an order-@order morsel of @size, check it starts as one table of
 * level @order, map it and check that pages far apart work with no process
 * table allocated below the mount (VmPTE unchanged) and one mount write.
 */
static void big_morsel(const char *name, uint64_t size, unsigned int order)
{
	long t0 = counter("tables"), p0 = counter("pages"), m0, pte0;
	int fd = mk(name, size);
	struct morsel_stat s = st(fd);
	char *p, *q[3];
	unsigned int l;

	CHECK_EQ(s.order, order);
	for (l = 0; l < 4; l++)
		CHECK_EQ(s.tables[l], l == order - 1);
	CHECK_EQ(s.pages, 0);
	/* Memory use right after creation: one page. */
	CHECK_EQ(counter("tables") - t0, 1);
	CHECK_EQ(counter("pages") - p0, 0);
	pte0 = vm_pte_kib();
	m0 = counter("mounts");
	p = map(fd, size, PROT_READ | PROT_WRITE);
	CHECK_EQ((uintptr_t)p % size, 0);
	CHECK_EQ(vma_len(p), size);
	CHECK_EQ(counter("mounts") - m0, 1);		/* one entry write */
	q[0] = p;
	q[1] = p + size / 2 + 12345;
	q[2] = p + size - 1;
	*q[0] = 'a';
	*q[1] = 'm';
	*q[2] = 'z';
	s = st(fd);
	CHECK_EQ(s.pages, 3);
	CHECK_EQ(s.tables[0], 3);
	CHECK_EQ(s.tables[1], 3);
	CHECK_EQ(s.tables[2], order == 3 ? 1 : 3);
	CHECK_EQ(vm_pte_kib() - pte0, 0);	/* nothing below the mount */
	CHECK_EQ(counter("mounts") - m0, 1);
	CHECK_EQ(child_signal(read_three, q), 0);	/* fork: remount */
	CHECK(munmap(p, size) == 0);
	CHECK_EQ(st(fd).mappings, 0);
	CHECK_EQ(st(fd).pages, 3);
	p = map(fd, size, PROT_READ);
	CHECK(p[0] == 'a' && p[size - 1] == 'z');
	CHECK(munmap(p, size) == 0);
	close(fd);
	unlink(path(name));
	CHECK_EQ(counter("tables"), t0);
	CHECK_EQ(counter("pages"), p0);
}

TEST(order3_one_root_table)
{
	/* 4-level: mounted in a PGD entry (P4D folded); 5-level: a P4D entry */
	big_morsel("o3", 512 * GiB, 3);
}

TEST(order4_five_level_only)
{
	int fd;
	char *p;

	if (!five_level()) {
		fd = mk("o4", 0);
		CHECK_ERR(ftruncate(fd, 256 * TiB), EFBIG);
		CHECK_ERR(pwrite(fd, "x", 1, 256 * TiB - 1), EFBIG);
		CHECK_EQ(st(fd).order, 0);
		close(fd);
		unlink(path("o4"));
		return;
	}
	big_morsel("o4", 256 * TiB, 4);
	/* It lives above 47 bits: mounted in a PGD entry. */
	fd = mk("o4", 256 * TiB);
	p = map(fd, 1, PROT_READ);
	CHECK((uintptr_t)p >= (1ULL << 48));
	munmap(p, 1);
	close(fd);
	unlink(path("o4"));
}

TEST(contiguous_run_of_morsels)
{
	int fds[7], small, i;
	char name[16], buf[8];
	long m0, pte0;
	size_t len;
	void *a;
	char *p;

	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "run%d", i);
		fds[i] = mk(name, 1 * GiB);
	}
	m0 = counter("mounts");
	pte0 = vm_pte_kib();
	CHECK_EQ(morsel_map_run(fds, 7, PROT_READ | PROT_WRITE, &a, &len), 0);
	p = a;
	CHECK_EQ(len, 7 * GiB);
	CHECK_EQ((uintptr_t)p % GiB, 0);
	CHECK_EQ(counter("mounts") - m0, 7);	/* one entry per morsel */
	/* Data runs across the borders between morsels. */
	for (i = 0; i < 6; i++)
		memcpy(p + (uint64_t)(i + 1) * GiB - 4, "ABCDEFGH", 8);
	for (i = 0; i < 6; i++) {
		CHECK_EQ(pread(fds[i], buf, 4, 1 * GiB - 4), 4);
		CHECK(!memcmp(buf, "ABCD", 4));
		CHECK_EQ(pread(fds[i + 1], buf, 4, 0), 4);
		CHECK(!memcmp(buf, "EFGH", 4));
	}
	CHECK_EQ(counter("mounts") - m0, 7);	/* no fault remounted */
	CHECK(vm_pte_kib() - pte0 <= 8);	/* at most the PUD tables */
	small = mk("run-small", 2 * MiB);
	fds[1] = small;
	CHECK_EQ(morsel_map_run(fds, 2, PROT_READ, &a, &len), -EINVAL);
	CHECK_EQ(morsel_map_run(fds, 0, PROT_READ, &a, &len), -EINVAL);
	CHECK(munmap(p, 7 * GiB) == 0);
	for (i = 0; i < 7; i++) {
		snprintf(name, sizeof(name), "run%d", i);
		unlink(path(name));
		close(i == 1 ? small : fds[i]);
	}
	unlink(path("run-small"));
}

/* ---- explicit population and eviction ---- */

static long minflt(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	return ru.ru_minflt;
}

static void touch_each_page(char *p, uint64_t len)
{
	uint64_t off;

	for (off = 0; off < len; off += PG)
		((volatile char *)p)[off] = 1;
}

TEST(populate_then_no_faults)
{
	int fd = mk("pop", 64 * MiB), fd2 = mk("nopop", 64 * MiB);
	long p0 = counter("pages"), f0;
	static char warm[PG];
	struct morsel_stat s;
	char *p;

	CHECK_EQ(morsel_populate(fd, 0, 64 * MiB), 0);
	s = st(fd);
	CHECK_EQ(s.pages, 16384);
	CHECK_EQ(s.tables[0], 32);
	CHECK_EQ(counter("pages") - p0, 16384);
	CHECK_EQ(morsel_populate(fd, 0, 64 * MiB), 0);	/* idempotent */
	CHECK_EQ(st(fd).pages, 16384);
	/* Fault in this code and the stack first: count only the morsel. */
	touch_each_page(warm, sizeof(warm));
	p = map(fd, 64 * MiB, PROT_READ | PROT_WRITE);
	f0 = minflt();
	touch_each_page(p, 64 * MiB);
	CHECK_EQ(minflt() - f0, 0);
	/* The same without populating: one fault per page. */
	p = map(fd2, 64 * MiB, PROT_READ | PROT_WRITE);
	f0 = minflt();
	touch_each_page(p, 64 * MiB);
	CHECK(minflt() - f0 >= 16384);
	/* fallocate() does the same, growing the file like a file. */
	close(fd2);
	fd2 = mk("falloc", 0);
	CHECK(fallocate(fd2, 0, 0, 8 * MiB + 1) == 0);
	s = st(fd2);
	CHECK_EQ(s.size, 8 * MiB + 1);
	CHECK_EQ(s.order, 2);
	CHECK_EQ(s.pages, 2049);
	/* KEEP_SIZE stops at the size (a page past it would not SIGBUS). */
	CHECK(fallocate(fd2, FALLOC_FL_KEEP_SIZE, 16 * MiB, 4 * MiB) == 0);
	CHECK_EQ(st(fd2).size, 8 * MiB + 1);
	CHECK_EQ(st(fd2).pages, 2049);
	close(fd2);
	close(fd);
	unlink(path("pop"));
	unlink(path("nopop"));
	unlink(path("falloc"));
	CHECK_EQ(counter("pages"), p0 + 2 * 16384);	/* both still mapped */
}

struct racer { char *p; uint64_t len; };

static void *race_touch(void *arg)
{
	struct racer *r = arg;
	uint64_t off;

	for (off = r->len; off > 0; off -= PG)
		((volatile char *)r->p)[off - PG] = 1;
	return NULL;
}

TEST(populate_races_faults)
{
	int fd = mk("race", 1 * GiB), i;
	long p0 = counter("pages"), t0 = counter("tables");
	struct racer r;
	pthread_t th[2];

	r.len = 32 * MiB;
	r.p = map(fd, 1 * GiB, PROT_READ | PROT_WRITE);
	for (i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, race_touch, &r) == 0);
	CHECK_EQ(morsel_populate(fd, 0, 32 * MiB), 0);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* Every page and table exactly once; losers freed what they made. */
	CHECK_EQ(st(fd).pages, 8192);
	CHECK_EQ(st(fd).tables[0], 16);
	CHECK_EQ(counter("pages") - p0, 8192);
	CHECK_EQ(counter("tables") - t0, 16);
	munmap(r.p, 1 * GiB);
	close(fd);
	unlink(path("race"));
	CHECK_EQ(counter("pages"), p0);
	CHECK_EQ(counter("tables"), t0 - 1);
}

static int range_ioctl(int fd, unsigned long cmd, uint64_t off, uint64_t len,
		       uint64_t flags, unsigned int res, uint64_t resval)
{
	struct morsel_range r;

	memset(&r, 0, sizeof(r));
	r.offset = off;
	r.length = len;
	r.flags = flags;
	r.reserved[res] = resval;
	return ioctl(fd, cmd, &r);
}

TEST(range_ioctls_bad_input)
{
	static const unsigned long cmds[] = { MORSEL_IOC_POPULATE,
					       MORSEL_IOC_EVICT };
	int fd = mk("rb", 2 * MiB + 5000), rfd;
	long p0 = counter("pages");
	unsigned int i;

	rfd = morsel_open(path("rb"), O_RDONLY);
	CHECK(rfd >= 0);
	for (i = 0; i < 2; i++) {
		unsigned long c = cmds[i];

		CHECK_ERR(range_ioctl(fd, c, 0, PG, 1, 0, 0), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, 0, PG, 0, 4, 1), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, 100, PG, 0, 0, 0), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, 0, 100, 0, 0, 0), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, 0, 0, 0, 0, 0), EINVAL);
		/* Past the end: the size rounded up to a page is the limit. */
		CHECK_ERR(range_ioctl(fd, c, 2 * MiB, 3 * PG, 0, 0, 0), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, 4 * MiB, PG, 0, 0, 0), EINVAL);
		CHECK_ERR(range_ioctl(fd, c, PG, ~0ULL & ~(PG - 1), 0, 0, 0),
			  EINVAL);
		CHECK_ERR(ioctl(fd, c, (void *)16), EFAULT);
		CHECK_ERR(range_ioctl(rfd, c, 0, PG, 0, 0, 0), EBADF);
		CHECK_EQ(range_ioctl(fd, c, 2 * MiB, 2 * PG, 0, 0, 0), 0);
	}
	CHECK_EQ(counter("pages"), p0);
	/* fallocate: modes we do not have, bad ranges, read-only files */
	CHECK_ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, PG), EOPNOTSUPP);
	CHECK_ERR(fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, PG), EOPNOTSUPP);
	CHECK_ERR(fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, PG), EOPNOTSUPP);
	CHECK_ERR(fallocate(fd, 0, 0, 0), EINVAL);
	CHECK_ERR(fallocate(fd, 0, -1, PG), EINVAL);
	CHECK_ERR(fallocate(rfd, 0, 0, PG), EBADF);
	CHECK_ERR(fallocate(fd, 0, 0, 257 * TiB), EFBIG);
	CHECK_EQ(counter("pages"), p0);
	CHECK_EQ(st(fd).size, 2 * MiB + 5000);
	/*
	 * Growing the order while mapped works (the mapping keeps its
	 * extent).
	 */
	{
		char *p = map(fd, 1, PROT_READ);

		CHECK_EQ(pwrite(fd, "x", 1, 2 * GiB), 1);
		CHECK_EQ(st(fd).order, 3);
		CHECK_EQ(vma_len(p), 1 * GiB);
		CHECK(ftruncate(fd, 2 * MiB + 5000) == 0);
		CHECK_EQ(st(fd).size, 2 * MiB + 5000);
		munmap(p, 1);
	}
	close(rfd);
	close(fd);
	unlink(path("rb"));
}

struct evict_child { int fd_ready, fd_go; };

TEST(evict_mapped_in_two_processes)
{
	int fd = mk("ev", 4 * MiB), ready[2], go[2];
	char *p = map(fd, 4 * MiB, PROT_READ | PROT_WRITE), c = 0;
	uint64_t off;
	pid_t pid;

	memset(p, 'x', 4 * MiB);
	CHECK_EQ(st(fd).pages, 1024);
	CHECK(pipe(ready) == 0 && pipe(go) == 0);
	pid = fork();
	if (pid == 0) {
		/* Its own read-only mapping, its own TLB entries. */
		int rfd = morsel_open(path("ev"), O_RDONLY);
		char *q = map(rfd, 4 * MiB, PROT_READ);
		long sum = 0;

		for (off = 0; off < 4 * MiB; off += PG)
			sum += q[off];
		CHECK_EQ(sum, 1024L * 'x');
		CHECK(write(ready[1], "r", 1) == 1);
		CHECK(read(go[0], &c, 1) == 1);
		for (off = 0; off < 4 * MiB; off += PG)
			CHECK_EQ(q[off], off >= 1 * MiB && off < 3 * MiB ? 0 : 'x');
		_exit(0);
	}
	CHECK(read(ready[0], &c, 1) == 1);
	CHECK_EQ(st(fd).mappings, 3);	/* ours, the child's copy and its own */
	CHECK_EQ(morsel_evict(fd, 1 * MiB, 2 * MiB), 0);
	CHECK_EQ(st(fd).pages, 512);
	CHECK_EQ(st(fd).tables[0], 2);		/* tables stay while mapped */
	for (off = 0; off < 4 * MiB; off += PG)
		CHECK_EQ(p[off], off >= 1 * MiB && off < 3 * MiB ? 0 : 'x');
	CHECK(write(go[1], "g", 1) == 1);
	wait_child_ok(pid);
	/* Touching a hole through a mapping populates it again (zeros). */
	CHECK_EQ(st(fd).pages, 1024);
	/* Punching partial pages zeroes bytes and keeps the pages. */
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			100, 5000) == 0);
	CHECK(p[99] == 'x' && p[100] == 0 && p[5099] == 0 && p[5100] == 'x');
	CHECK_EQ(st(fd).pages, 1024);
	/* madvise(MADV_REMOVE) punches through the mapping. */
	CHECK(madvise(p + 3 * MiB, 1 * MiB, MADV_REMOVE) == 0);
	CHECK_EQ(st(fd).pages, 768);
	CHECK(p[3 * MiB] == 0 && p[4 * MiB - 1] == 0);
	munmap(p, 4 * MiB);
	/* Unmapped, eviction frees the tables too. */
	CHECK_EQ(morsel_evict(fd, 0, 4 * MiB), 0);
	CHECK_EQ(st(fd).pages, 0);
	CHECK_EQ(st(fd).tables[0], 0);
	CHECK_EQ(st(fd).tables[1], 1);
	close(fd);
	/* Order 0 while mapped: the page is zeroed (it is the mount itself). */
	fd = mk("ev0", 4096);
	p = map(fd, 4096, PROT_READ | PROT_WRITE);
	p[0] = 1;
	CHECK_EQ(morsel_evict(fd, 0, 4096), 0);
	CHECK_EQ(p[0], 0);
	munmap(p, 4096);
	CHECK_EQ(morsel_evict(fd, 0, 4096), 0);
	CHECK_EQ(st(fd).pages, 0);
	close(fd);
	unlink(path("ev"));
	unlink(path("ev0"));
}

struct stress { char *p; uint64_t len; int pipe[2]; volatile int stop; };

static void *stress_write(void *arg)
{
	struct stress *x = arg;
	uint64_t off;

	while (!x->stop)
		for (off = 0; off < x->len; off += PG)
			((volatile char *)x->p)[off + 7] = 'a';
	return NULL;
}

static void *stress_pin(void *arg)
{
	struct stress *x = arg;
	uint64_t off = 0;
	char buf[PG];
	struct iovec v;

	while (!x->stop) {
		v.iov_base = x->p + off;
		v.iov_len = PG;
		if (vmsplice(x->pipe[1], &v, 1, 0) != (ssize_t)PG ||
		    read(x->pipe[0], buf, PG) != (ssize_t)PG)
			_exit(5);
		off = (off + 17 * PG) % x->len;
	}
	return NULL;
}

TEST(evict_races_faults_and_pins)
{
	long p0 = counter("pages"), t0 = counter("tables");
	int fd = mk("stress", 4 * MiB), i;
	struct stress x = { .len = 4 * MiB };
	pthread_t th[3];
	uint64_t off;

	x.p = map(fd, 4 * MiB, PROT_READ | PROT_WRITE);
	CHECK(pipe(x.pipe) == 0);
	for (i = 0; i < 3; i++)
		CHECK(pthread_create(&th[i], NULL,
				     i < 2 ? stress_write : stress_pin, &x) == 0);
	for (i = 0; i < 300; i++)
		CHECK_EQ(morsel_evict(fd, 0, 4 * MiB), 0);
	x.stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	/* Every byte is one the program wrote or a zero: nothing stale. */
	for (off = 0; off < 4 * MiB; off++)
		if (x.p[off] && !(x.p[off] == 'a' && off % PG == 7))
			FAIL("byte %llu is 0x%x", (unsigned long long)off,
			     x.p[off]);
	CHECK_EQ(st(fd).pages, counter("pages") - p0);
	munmap(x.p, 4 * MiB);
	close(fd);
	unlink(path("stress"));
	CHECK_EQ(counter("pages"), p0);
	CHECK_EQ(counter("tables"), t0);
}

/* ---- ordinary file I/O ---- */

static void *volatile bad_ptr = (void *)8;	/* unmapped, opaque to gcc */

TEST(read_write_like_a_file)
{
	int fd = mk("rw", 0), afd;
	char buf[64], *p;
	struct iovec iov[2];

	CHECK_EQ(write(fd, "hello", 5), 5);
	CHECK_EQ(st(fd).order, 0);
	/* Past the extent: the order rises, the old root becomes entry 0. */
	CHECK_EQ(pwrite(fd, "world", 5, 3 * MiB), 5);
	CHECK_EQ(st(fd).order, 2);
	CHECK_EQ(st(fd).size, 3 * MiB + 5);
	CHECK_EQ(pread(fd, buf, 5, 0), 5);
	CHECK(!memcmp(buf, "hello", 5));
	memset(buf, 'q', sizeof(buf));
	CHECK_EQ(pread(fd, buf, 64, 3 * MiB - 8), 13);	/* hole, then EOF */
	CHECK(!memcmp(buf, "\0\0\0\0\0\0\0\0world", 13));
	CHECK_EQ(pread(fd, buf, 64, 3 * MiB + 5), 0);
	CHECK_EQ(st(fd).pages, 2);			/* holes stay holes */
	/* The mapping sees the same pages. */
	p = map(fd, 3 * MiB + 5, PROT_READ | PROT_WRITE);
	CHECK(!memcmp(p + 3 * MiB, "world", 5));
	p[100] = 'Q';
	CHECK_EQ(pread(fd, buf, 1, 100), 1);
	CHECK_EQ(buf[0], 'Q');
	/* Mapped: growing inside the extent and past it both work. */
	CHECK_EQ(pwrite(fd, "y", 1, 512 * MiB), 1);
	CHECK_EQ(p[512 * MiB], 'y');
	CHECK_EQ(pwrite(fd, "z", 1, 2 * GiB), 1);
	CHECK_EQ(st(fd).order, 3);
	CHECK_EQ(p[512 * MiB], 'y');
	munmap(p, 1 * GiB);
	CHECK_EQ(st(fd).order, 3);
	CHECK_ERR(pwrite(fd, "z", 1, 256 * TiB), EFBIG);
	/* A bad buffer: EFAULT, and the size stays. */
	CHECK_ERR(pwrite(fd, bad_ptr, 10, 4 * GiB), EFAULT);
	CHECK_EQ(st(fd).size, 2 * GiB + 1);
	/* Vectors across a page border; O_APPEND. */
	iov[0].iov_base = "abc";
	iov[0].iov_len = 3;
	iov[1].iov_base = "def";
	iov[1].iov_len = 3;
	CHECK_EQ(pwritev(fd, iov, 2, 4093), 6);
	CHECK_EQ(pread(fd, buf, 6, 4093), 6);
	CHECK(!memcmp(buf, "abcdef", 6));
	afd = open(path("rw"), O_WRONLY | O_APPEND);
	CHECK(afd >= 0);
	CHECK_EQ(write(afd, "end", 3), 3);
	CHECK_EQ(st(fd).size, 2 * GiB + 4);
	CHECK_EQ(pread(fd, buf, 4, 2 * GiB), 4);
	CHECK(!memcmp(buf, "zend", 4));
	close(afd);
	/* Opening with O_DIRECT is refused: there is no page cache to skip. */
	CHECK_ERR(open(path("rw"), O_RDWR | O_DIRECT), EINVAL);
	close(fd);
	unlink(path("rw"));
}

static void fill_pattern(char *b, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245 + 12345;
		b[i] = (char)(seed >> 16);
	}
}

TEST(copy_file_range_sendfile_splice)
{
	size_t len = 3 * MiB + 123, done;
	char *want = malloc(len), *got = malloc(len);
	int src = mk("cs-src", 0), dst = mk("cs-dst", 0), sv[2], pfd[2], tfd;
	loff_t in, out;
	off_t off;
	ssize_t n;

	CHECK(want && got);
	fill_pattern(want, len, 7);
	CHECK_EQ(write(src, want, len), (ssize_t)len);
	/* copy_file_range between morsels (splice inside the kernel) */
	in = out = 0;
	for (done = 0; done < len; done += n) {
		n = copy_file_range(src, &in, dst, &out, len - done, 0);
		CHECK(n > 0);
	}
	CHECK_EQ(pread(dst, got, len, 0), (ssize_t)len);
	CHECK(!memcmp(want, got, len));
	/* sendfile morsel -> morsel, morsel -> socket, file -> morsel */
	CHECK(ftruncate(dst, 0) == 0);
	off = 0;
	for (done = 0; done < len; done += n) {
		n = sendfile(dst, src, &off, len - done);
		CHECK(n > 0);
	}
	CHECK_EQ(pread(dst, got, len, 0), (ssize_t)len);
	CHECK(!memcmp(want, got, len));
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	off = 4096;
	CHECK_EQ(sendfile(sv[0], src, &off, 1000), 1000);
	CHECK_EQ(read(sv[1], got, 1000), 1000);
	CHECK(!memcmp(want + 4096, got, 1000));
	tfd = open("/tmp/morsel-sendfile", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(tfd >= 0);
	CHECK_EQ(write(tfd, want, 100000), 100000);
	CHECK(ftruncate(dst, 0) == 0 && lseek(dst, 0, SEEK_SET) == 0);
	off = 0;
	CHECK_EQ(sendfile(dst, tfd, &off, 100000), 100000);
	CHECK_EQ(pread(dst, got, 100000, 0), 100000);
	CHECK(!memcmp(want, got, 100000));
	/* Between file systems copy_file_range() says EXDEV, as for tmpfs. */
	in = out = 0;
	CHECK_ERR(copy_file_range(src, &in, tfd, &out, 10, 0), EXDEV);
	close(tfd);
	unlink("/tmp/morsel-sendfile");
	/* splice morsel -> pipe -> morsel */
	CHECK(pipe(pfd) == 0);
	in = 8192;
	CHECK_EQ(splice(src, &in, pfd[1], NULL, 5000, 0), 5000);
	out = 1 * MiB;
	CHECK_EQ(splice(pfd[0], NULL, dst, &out, 5000, 0), 5000);
	CHECK_EQ(pread(dst, got, 5000, 1 * MiB), 5000);
	CHECK(!memcmp(want + 8192, got, 5000));
	close(src);
	close(dst);
	unlink(path("cs-src"));
	unlink(path("cs-dst"));
	free(want);
	free(got);
}

TEST(cp_and_cat)
{
	size_t len = 5 * MiB + 77;
	char *data = malloc(len), cmd[1024], out[256];
	struct morsel_stat s;
	int fd;

	CHECK(data);
	fill_pattern(data, len, 3);
	fd = open("/tmp/morsel-big", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, len), (ssize_t)len);
	close(fd);
	unlink(path("cp"));
	snprintf(cmd, sizeof(cmd),
		 "cp /tmp/morsel-big %s && cmp /tmp/morsel-big %s && "
		 "cat %s > /tmp/morsel-cat && cmp /tmp/morsel-big /tmp/morsel-cat",
		 path("cp"), path("cp"), path("cp"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	fd = morsel_open(path("cp"), O_RDONLY);
	CHECK(fd >= 0);
	s = st(fd);
	CHECK_EQ(s.size, len);
	CHECK_EQ(s.order, 2);
	CHECK_EQ(s.pages, (len + PG - 1) / PG);
	close(fd);
	unlink(path("cp"));
	unlink("/tmp/morsel-big");
	unlink("/tmp/morsel-cat");
	free(data);
}

/* ---- GUP ---- */

TEST(gup_pins_morsel_pages)
{
	int fd = mk("gup", 2 * MiB), pfd[2];
	char *p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE), *r, buf[32];
	struct iovec local = { buf, 11 }, remote;
	long p0;

	strcpy(p + 8192, "gup target");
	/* process_vm_writev into the morsel, also into a hole */
	remote.iov_base = p + 3 * PG;
	remote.iov_len = 8;
	local.iov_base = "written!";
	local.iov_len = 8;
	CHECK_EQ(process_vm_writev(getpid(), &local, 1, &remote, 1, 0), 8);
	CHECK(!memcmp(p + 3 * PG, "written!", 8));
	p0 = st(fd).pages;
	remote.iov_base = p + 1 * MiB;
	CHECK_EQ(process_vm_writev(getpid(), &local, 1, &remote, 1, 0), 8);
	CHECK_EQ(st(fd).pages, p0 + 1);
	CHECK(!memcmp(p + 1 * MiB, "written!", 8));
	/* Not through a read-only mapping: the VMA's rights decide. */
	r = map(fd, 2 * MiB, PROT_READ);
	remote.iov_base = r + 3 * PG;
	local.iov_base = "XXXXXXXX";
	CHECK_ERR(process_vm_writev(getpid(), &local, 1, &remote, 1, 0),
		  EFAULT);
	CHECK(!memcmp(p + 3 * PG, "written!", 8));
	/* vmsplice: the pipe holds the page; eviction does not free it. */
	CHECK(pipe(pfd) == 0);
	local.iov_base = p + 8192;
	local.iov_len = 11;
	CHECK_EQ(vmsplice(pfd[1], &local, 1, 0), 11);
	CHECK_EQ(morsel_evict(fd, 8192, PG), 0);
	CHECK_EQ(p[8192], 0);
	CHECK_EQ(read(pfd[0], buf, 11), 11);
	CHECK(!strcmp(buf, "gup target"));
	close(pfd[0]);
	close(pfd[1]);
	/*
	 * O_DIRECT read of a file on the 9p host root: netfs pins the user
	 * buffer with iov_iter_extract_pages(), i.e. GUP on the morsel.
	 */
	{
		int dfd = open("/proc/self/exe", O_RDONLY | O_DIRECT);
		int nfd = open("/proc/self/exe", O_RDONLY);
		char *want = malloc(64 * KiB);

		CHECK(dfd >= 0 && nfd >= 0 && want);
		CHECK_EQ(pread(dfd, p + 64 * KiB, 64 * KiB, 0), 64 * KiB);
		CHECK_EQ(pread(nfd, want, 64 * KiB, 0), 64 * KiB);
		CHECK(!memcmp(want, p + 64 * KiB, 64 * KiB));
		CHECK_ERR(pread(dfd, r + 64 * KiB, 64 * KiB, 0), EFAULT);
		close(dfd);
		close(nfd);
		free(want);
	}
	/* MADV_POPULATE_WRITE populates just the range asked for. */
	p0 = st(fd).pages;
	CHECK(madvise(p + 1536 * KiB, 64 * KiB, MADV_POPULATE_WRITE) == 0);
	CHECK_EQ(st(fd).pages, p0 + 16);
	CHECK(madvise(r + 1600 * KiB, 64 * KiB, MADV_POPULATE_READ) == 0);
	CHECK_EQ(st(fd).pages, p0 + 32);
	CHECK_ERR(madvise(r, 64 * KiB, MADV_POPULATE_WRITE), EINVAL);
	munmap(r, 2 * MiB);
	munmap(p, 2 * MiB);
	close(fd);
	unlink(path("gup"));
}

/* ---- fixed addresses ---- */

#define BIND_ADDR 0x600000000000ULL	/* 96 TiB: far from the mmap base */

struct node { struct node *next; uint64_t val; };

static void build_list(void *arg)
{
	int fd = morsel_open(path("bind"), O_RDWR);
	struct node *n, *prev = NULL;
	char *p;
	int i;

	(void)arg;
	CHECK(fd >= 0);
	p = map(fd, 2 * MiB, PROT_READ | PROT_WRITE);
	CHECK_EQ((uint64_t)(uintptr_t)p, BIND_ADDR);
	for (i = 999; i >= 0; i--) {
		n = (struct node *)(p + ((uint64_t)i * 2056) % (2 * MiB - 64));
		n->val = (uint64_t)i * 7;
		n->next = prev;
		prev = n;
	}
	*(struct node **)(p + 2 * MiB - 8) = prev;	/* the head */
}

static void walk_list(void *arg)
{
	int fd = morsel_open(path("bind"), O_RDONLY);
	struct node *n;
	char *p;
	uint64_t i = 0;

	(void)arg;
	CHECK(fd >= 0);
	p = map(fd, 2 * MiB, PROT_READ);
	CHECK_EQ((uint64_t)(uintptr_t)p, BIND_ADDR);
	for (n = *(struct node **)(p + 2 * MiB - 8); n; n = n->next, i++)
		CHECK_EQ(n->val, i * 7);
	CHECK_EQ(i, 1000);
}

TEST(bind_fixed_address)
{
	int fd = mk("bind", 2 * MiB), fd2;
	char *p, *a;

	CHECK_EQ(morsel_bind(fd, BIND_ADDR), 0);
	CHECK_EQ(st(fd).bound, BIND_ADDR);
	CHECK_EQ(morsel_bind(fd, BIND_ADDR), 0);		/* same: no-op */
	CHECK_EQ(morsel_bind(fd, BIND_ADDR + 2 * MiB), -EBUSY);
	/* Pointers stored inside are valid in another process. */
	CHECK_EQ(child_signal(build_list, NULL), 0);
	CHECK_EQ(child_signal(walk_list, NULL), 0);
	/* Every mapping lands there; a second one in the same mm conflicts. */
	p = map(fd, 2 * MiB, PROT_READ);
	CHECK_EQ((uint64_t)(uintptr_t)p, BIND_ADDR);
	CHECK(mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED &&
	      errno == EEXIST);
	CHECK(mmap((void *)(uintptr_t)(BIND_ADDR + 4 * MiB), 2 * MiB, PROT_READ,
		   MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED && errno == EINVAL);
	CHECK((uint64_t)(uintptr_t)mmap(p, 2 * MiB, PROT_READ,
		MAP_SHARED | MAP_FIXED, fd, 0) == BIND_ADDR);
	CHECK_EQ(morsel_bind(fd, BIND_ADDR), 0);
	CHECK(munmap(p, 2 * MiB) == 0);
	/* Something else at the address: EEXIST, nothing replaced. */
	a = mmap((void *)(uintptr_t)BIND_ADDR, PG, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK((uint64_t)(uintptr_t)a == BIND_ADDR);
	CHECK(mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED &&
	      errno == EEXIST);
	CHECK_EQ(vma_len(a), PG);
	munmap(a, PG);
	/* A new order must keep the address aligned. */
	fd2 = mk("bind2", 2 * MiB);
	CHECK_EQ(morsel_bind(fd2, BIND_ADDR + 2 * MiB), 0);
	CHECK_ERR(ftruncate(fd2, 1 * GiB), EBUSY);
	CHECK(ftruncate(fd2, 1 * MiB) == 0);
	CHECK_ERR(pwrite(fd2, "x", 1, 1 * GiB), EBUSY);
	CHECK(ftruncate(fd, 1 * GiB) == 0);	/* BIND_ADDR is 1 GiB aligned */
	CHECK_EQ(st(fd).bound, BIND_ADDR);
	close(fd2);
	close(fd);
	unlink(path("bind"));
	unlink(path("bind2"));
}

static int bind_ioctl(int fd, uint64_t addr, uint64_t flags, unsigned int res,
		      uint64_t resval)
{
	struct morsel_bind b;

	memset(&b, 0, sizeof(b));
	b.addr = addr;
	b.flags = flags;
	b.reserved[res] = resval;
	return ioctl(fd, MORSEL_IOC_BIND, &b);
}

TEST(bind_bad_input)
{
	int fd = mk("bb", 2 * MiB), rfd;
	char *p;

	CHECK_ERR(bind_ioctl(fd, 0, 0, 0, 0), EINVAL);
	CHECK_ERR(bind_ioctl(fd, BIND_ADDR + PG, 0, 0, 0), EINVAL);
	CHECK_ERR(bind_ioctl(fd, 1ULL << 57, 0, 0, 0), EINVAL);
	CHECK_ERR(bind_ioctl(fd, ~0ULL & ~(2 * MiB - 1), 0, 0, 0), EINVAL);
	if (!five_level())
		CHECK_ERR(bind_ioctl(fd, 1ULL << 47, 0, 0, 0), EINVAL);
	CHECK_ERR(bind_ioctl(fd, BIND_ADDR, 1, 0, 0), EINVAL);
	CHECK_ERR(bind_ioctl(fd, BIND_ADDR, 0, 5, 1), EINVAL);
	CHECK_ERR(ioctl(fd, MORSEL_IOC_BIND, (void *)16), EFAULT);
	rfd = morsel_open(path("bb"), O_RDONLY);
	CHECK_ERR(bind_ioctl(rfd, BIND_ADDR, 0, 0, 0), EBADF);
	p = map(fd, 2 * MiB, PROT_READ);
	CHECK_ERR(bind_ioctl(fd, BIND_ADDR, 0, 0, 0), EBUSY);
	munmap(p, 2 * MiB);
	CHECK_EQ(st(fd).bound, 0);
	close(rfd);
	close(fd);
	unlink(path("bb"));
}

/* ---- mappings and their rights ---- */

static const struct morsel_mapping *find_map(const struct morsel_mapping *m,
					     int n, void *addr, pid_t pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (m[i].addr == (uintptr_t)addr && m[i].pid == (uint64_t)pid)
			return &m[i];
	FAIL("no mapping at %p in %d", addr, pid);
}

TEST(mappings_report_rights)
{
	int fd = mk("maps", 2 * MiB), ready[2], go[2], n;
	char *rw = map(fd, 2 * MiB, PROT_READ | PROT_WRITE), c, cmd[512];
	char *ro = map(fd, 2 * MiB, PROT_READ), *rx = NULL, out[2048], want[64];
	struct morsel_mapping m[8];
	struct morsel_mappings req;
	const struct morsel_mapping *e;
	pid_t pid;

	CHECK(pipe(ready) == 0 && pipe(go) == 0);
	pid = fork();
	if (pid == 0) {
		munmap(rw, 2 * MiB);
		munmap(ro, 2 * MiB);
		rx = mmap(NULL, 2 * MiB, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
		CHECK(rx != MAP_FAILED);
		CHECK(write(ready[1], &rx, sizeof(rx)) == sizeof(rx));
		CHECK(read(go[0], &c, 1) == 1);
		_exit(0);
	}
	CHECK(read(ready[0], &rx, sizeof(rx)) == sizeof(rx));
	n = morsel_mappings(fd, m, 8);
	CHECK_EQ(n, 3);
	CHECK_EQ(st(fd).mappings, 3);
	e = find_map(m, n, rw, getpid());
	CHECK_EQ(e->prot, MORSEL_PROT_READ | MORSEL_PROT_WRITE);
	CHECK_EQ(e->pid, getpid());
	CHECK_EQ(e->flags, MORSEL_MAPPING_MOUNTED);
	e = find_map(m, n, ro, getpid());
	CHECK_EQ(e->prot, MORSEL_PROT_READ);
	e = find_map(m, n, rx, pid);
	CHECK_EQ(e->prot, MORSEL_PROT_READ | MORSEL_PROT_EXEC);
	CHECK_EQ(e->pid, pid);
	CHECK_EQ(morsel_mappings(fd, NULL, 0), 3);	/* just count */
	CHECK_EQ(morsel_mappings(fd, m, 1), 3);
	CHECK_EQ(morsel_mappings(fd, (void *)16, 2), -EFAULT);
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s", path("maps"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "mappings: 3\n"));
	snprintf(want, sizeof(want), "pid %-7d 0x%012lx r-x mounted", pid,
		 (unsigned long)rx);
	CHECK(strstr(out, want));
	CHECK(write(go[1], "g", 1) == 1);
	wait_child_ok(pid);
	CHECK_EQ(morsel_mappings(fd, m, 8), 2);
	memset(&req, 0, sizeof(req));
	req.flags = 1;
	CHECK_ERR(ioctl(fd, MORSEL_IOC_MAPPINGS, &req), EINVAL);
	req.flags = 0;
	req.reserved[3] = 1;
	CHECK_ERR(ioctl(fd, MORSEL_IOC_MAPPINGS, &req), EINVAL);
	CHECK_ERR(ioctl(fd, MORSEL_IOC_MAPPINGS, (void *)16), EFAULT);
	munmap(rw, 2 * MiB);
	munmap(ro, 2 * MiB);
	CHECK_EQ(morsel_mappings(fd, m, 8), 0);
	close(fd);
	unlink(path("maps"));
}

TEST(cli_populate_evict_bind)
{
	char cmd[512], out[2048];
	int fd = mk("clipe", 4 * MiB);

	snprintf(cmd, sizeof(cmd), "tools/morsel populate %s 1M 2M", path("clipe"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_EQ(st(fd).pages, 512);
	snprintf(cmd, sizeof(cmd), "tools/morsel evict %s 1M 1M", path("clipe"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK_EQ(st(fd).pages, 256);
	snprintf(cmd, sizeof(cmd), "tools/morsel evict %s 1M 100 2>&1",
		 path("clipe"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "Invalid argument"));
	snprintf(cmd, sizeof(cmd), "tools/morsel bind %s 0x600000000000 && "
		 "tools/morsel stat %s", path("clipe"), path("clipe"));
	CHECK_EQ(run(cmd, out, sizeof(out)), 0);
	CHECK(strstr(out, "bound:    0x600000000000\n"));
	close(fd);
	unlink(path("clipe"));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return harness_run(argc, argv, 300);
}
