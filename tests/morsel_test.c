// SPDX-License-Identifier: GPL-2.0
/*
 * morselfs behaviour tests; run inside the VM (vm/run) with $MORSEL_MNT set
 * to a mounted morselfs.  One process per test (harness.h).
 */
#include "harness.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

TEST(size_refused_orders)
{
	int fd = mk("big", 2 * MiB);

	/* Orders 3 and 4 come with the next version; beyond 4 is too big. */
	CHECK_ERR(ftruncate(fd, 1 * GiB + 1), EOPNOTSUPP);
	CHECK_ERR(ftruncate(fd, 512 * GiB), EOPNOTSUPP);
	CHECK_ERR(ftruncate(fd, 256 * TiB), EOPNOTSUPP);
	CHECK_ERR(ftruncate(fd, 256 * TiB + 1), EFBIG);
	CHECK_ERR(ftruncate(fd, -1), EINVAL);
	CHECK_EQ(st(fd).order, 1);
	CHECK_EQ(st(fd).size, 2 * MiB);
	CHECK_EQ(morsel_order_for_size(256 * TiB + 1), -EFBIG);
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

TEST(resize_while_mapped)
{
	int fd = mk("rm", 5000);
	char *p = map(fd, 5000, PROT_READ | PROT_WRITE);

	p[4999] = 1;
	CHECK(ftruncate(fd, 1 * MiB) == 0);		/* same order: fine */
	p[1 * MiB - 1] = 2;
	CHECK_ERR(ftruncate(fd, 4 * MiB), EBUSY);	/* order change */
	CHECK_ERR(ftruncate(fd, 4 * KiB), EBUSY);	/* shrink */
	CHECK_EQ(st(fd).size, 1 * MiB);
	CHECK(p[4999] == 1 && p[1 * MiB - 1] == 2);
	munmap(p, 5000);
	CHECK(ftruncate(fd, 4 * MiB) == 0);
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

	CHECK_ERR(mmap(NULL, 2 * MiB + 1, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	CHECK_ERR(mmap(NULL, 4 * MiB, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	CHECK_ERR(mmap(NULL, 0, PROT_READ, MAP_SHARED, fd, 0), EINVAL);
	CHECK_ERR(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096), EINVAL);
	CHECK_ERR(mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 2 * MiB), EINVAL);
	CHECK_ERR(mmap(NULL, 2 * MiB, PROT_READ, MAP_PRIVATE, fd, 0), EINVAL);
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

	CHECK(mremap(p, 1 * GiB, 2 * GiB, 0) == MAP_FAILED);		/* grow */
	CHECK(mremap(p, 1 * GiB, 2 * GiB, MREMAP_MAYMOVE) == MAP_FAILED);
	CHECK_ERR(mremap(p, 1 * GiB, 4096, 0), EINVAL);		/* shrink = split */
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
		{ MADV_REMOVE, EOPNOTSUPP }, { MADV_COLD, EINVAL },
		{ MADV_PAGEOUT, EINVAL }, { MADV_COLLAPSE, EINVAL },
		{ MADV_DOFORK, EINVAL }, { MADV_DODUMP, EINVAL },
		{ MADV_DONTDUMP, 0 },
		{ MADV_HUGEPAGE, 0 }, { MADV_NOHUGEPAGE, 0 },
		{ MADV_WILLNEED, 0 }, { MADV_POPULATE_READ, EINVAL },
		{ MADV_POPULATE_WRITE, EINVAL },
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
	/* GUP-based paths refuse VM_PFNMAP cleanly (documented). */
	CHECK_EQ(process_vm_readv(getpid(), &local, 1, &remote, 1, 0), -1);
	CHECK_EQ(errno, EFAULT);
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
	s.reserved[7] = 1;
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
	CHECK_ERR(mknod(path("fs-fifo"), S_IFIFO | 0644, 0), EINVAL);
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
	pid = fork();
	if (pid == 0) {
		CHECK(setgid(65534) == 0 && setuid(65534) == 0);
		CHECK_ERR(open(path("perm"), O_RDONLY), EACCES);
		CHECK_ERR(open(path("new"), O_RDWR | O_CREAT, 0644), EACCES);
		_exit(0);
	}
	wait_child_ok(pid);
	close(fd);
	unlink(path("perm"));
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
	snprintf(cmd, sizeof(cmd), "tools/morsel create %s 2T 2>&1", path("cli2"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "not supported"));
	CHECK(access(path("cli2"), F_OK) != 0);
	snprintf(cmd, sizeof(cmd), "tools/morsel stat %s 2>&1", path("none"));
	CHECK(run(cmd, out, sizeof(out)) != 0 && strstr(out, "No such file"));
	munmap(p, 3 * MiB);
	close(fd);
	unlink(path("cli"));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	return harness_run(argc, argv, 300);
}
