// SPDX-License-Identifier: GPL-2.0
/*
 * make bench: the seeds' measurements, each side by side with the Linux
 * mechanism it competes with, in one VM run.  Prints raw samples as
 *
 *   csv,<bench>,<variant>,<param>,<iteration>,<metric>,<value>
 *
 * lines (times in milliseconds, rates in GiB/s); bench/report turns them
 * into ratios (median, 10th and 90th percentile over iterations), a
 * markdown table and plots.  Absolute times under software emulation mean
 * little; only ratios measured in the same run are reported.
 *
 * usage: bench [--quick] [--only NAME]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define PG	4096ULL
#define KiB	(1ULL << 10)
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)

static int quick;
static const char *mnt;


static char *mpath(const char *name)
{
	static char buf[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt, name);
	return buf[i];
}

/* A fresh morsel of @size bytes; returns its fd. */
static int new_morsel(const char *name, uint64_t size)
{
	int fd;

	unlink(mpath(name));
	fd = morsel_create(mpath(name), size, 0600);
	if (fd < 0)
		die("morsel_create", -fd);
	return fd;
}

static char *map_fd(int fd, uint64_t len, int prot, int flags)
{
	char *p = mmap(NULL, len, prot, MAP_SHARED | flags, fd, 0);

	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

/* ---- 1. population speed (thesis 5.2) ---- */

struct toucher { char *p; uint64_t len; int fd; uint64_t off; int populate; };

static void *touch_part(void *arg)
{
	struct toucher *t = arg;
	uint64_t o;

	if (t->populate) {
		int err = morsel_populate(t->fd, t->off, t->len);

		if (err)
			die("morsel_populate", -err);
	}
	for (o = 0; o < t->len; o += PG)
		((volatile char *)t->p)[t->off + o] = 1;
	return NULL;
}

/* Write one byte per page of [p, p + len) with @threads threads. */
static double populate_run(char *p, uint64_t len, int threads, int fd,
			   int populate)
{
	struct toucher t[8];
	pthread_t th[8];
	double t0 = now_ms();
	int i;

	for (i = 0; i < threads; i++) {
		t[i].p = p;
		t[i].len = len / threads;
		t[i].off = t[i].len * i;
		t[i].fd = fd;
		t[i].populate = populate;
		if (pthread_create(&th[i], NULL, touch_part, &t[i]))
			die("pthread_create", errno);
	}
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	return now_ms() - t0;
}

static void bench_population(void)
{
	uint64_t len = quick ? 32 * MiB : 1 * GiB;
	int iters = quick ? 2 : 5, it, threads;

	for (threads = 1; threads <= 2; threads++) {
		for (it = 0; it < iters; it++) {
			char *p;
			int fd;

			int ioctl;

			/*
			 * morsel: first-touch faults, then MORSEL_IOC_POPULATE
			 * per thread before touching
			 */
			for (ioctl = 0; ioctl <= 1; ioctl++) {
				fd = new_morsel("pop", len);
				p = map_fd(fd, len, PROT_READ | PROT_WRITE, 0);
				emit("population",
				     ioctl ? "morsel-ioctl" : "morsel", threads,
				     it, "ms",
				     populate_run(p, len, threads, fd, ioctl));
				munmap(p, len);
				close(fd);
				unlink(mpath("pop"));
			}
			/* shared anonymous */
			p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			if (p == MAP_FAILED)
				die("mmap anon", errno);
			emit("population", "shared-anon", threads, it, "ms",
			     populate_run(p, len, threads, -1, 0));
			munmap(p, len);
			/* memfd */
			fd = memfd_create("pop", MFD_CLOEXEC);
			if (fd < 0 || ftruncate(fd, len))
				die("memfd", errno);
			p = map_fd(fd, len, PROT_READ | PROT_WRITE, 0);
			emit("population", "memfd", threads, it, "ms",
			     populate_run(p, len, threads, -1, 0));
			munmap(p, len);
			close(fd);
		}
	}
}

/* ---- 2. mapping speed (thesis 5.3, Fig. 5.4/5.5) ---- */

static uint64_t read_pages(const char *p, uint64_t len)
{
	uint64_t o, sum = 0;

	for (o = 0; o < len; o += PG)
		sum += *(volatile const uint64_t *)(p + o);
	return sum;
}

static void bench_mapping(void)
{
	static const int quick_k[] = { 0, 4, 8, 10 };
	int nk = quick ? 4 : 19, iters = quick ? 3 : 11, i, it;

	for (i = 0; i < nk; i++) {
		int k = quick ? quick_k[i] : i;
		uint64_t len = PG << k, want = 0x0101010101010101ULL << 0;
		uint64_t mlen = morsel_order_extent(morsel_order_for_size(len));
		int mfd = new_morsel("map", len), sfd;
		char *p;

		/* Prepare both objects: populated, filled with 1s. */
		p = map_fd(mfd, len, PROT_READ | PROT_WRITE, 0);
		memset(p, 1, len);
		munmap(p, mlen);
		shm_unlink("/morsel-bench");
		sfd = shm_open("/morsel-bench", O_RDWR | O_CREAT | O_EXCL, 0600);
		if (sfd < 0 || ftruncate(sfd, len))
			die("shm_open", errno);
		p = map_fd(sfd, len, PROT_READ | PROT_WRITE, 0);
		memset(p, 1, len);
		munmap(p, len);
		want *= len / PG;
		for (it = 0; it < iters; it++) {
			static const char *names[] = { "morsel", "shm",
						       "shm-populate",
						       "morsel-private" };
			int v;

			for (v = 0; v < 4; v++) {
				int fd = v == 1 || v == 2 ? sfd : mfd;
				double t0, t1, t2;

				t0 = now_ms();
				/*
				 * MAP_PRIVATE of a morsel: the ordinary
				 * page-by-page path (a fault per page).
				 */
				if (v == 3) {
					p = mmap(NULL, len, PROT_READ,
						 MAP_PRIVATE, fd, 0);
					if (p == MAP_FAILED)
						die("mmap private", errno);
				} else {
					p = map_fd(fd, len, PROT_READ,
						   v == 2 ? MAP_POPULATE : 0);
				}
				t1 = now_ms();
				if (read_pages(p, len) != want)
					die("mapping data", EIO);
				t2 = now_ms();
				munmap(p, v ? len : mlen);
				emit("mapping", names[v], len / PG, it, "map_ms",
				     t1 - t0);
				emit("mapping", names[v], len / PG, it,
				     "access_ms", t2 - t1);
			}
		}
		close(mfd);
		close(sfd);
		unlink(mpath("map"));
		shm_unlink("/morsel-bench");
	}
}

/* ---- 3. sender -> receiver throughput (thesis 5.4) ---- */

#define PACKET		(32 * MiB)
#define CIRCULATING	5

static const char *shm_name(int i)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "/morsel-packet%d", i);
	return buf;
}

/*
 * Receiver: gets a packet reference (a morsel fd over the socket, or an
 * SHM name index), maps it, reads every page, unmaps it, hands the packet
 * back, and timestamps each arrival.
 */
static void receiver(int sock, int is_morsel, int packets, const char *variant)
{
	double last = now_ms(), t;
	int i;

	for (i = 0; i < packets; i++) {
		uint64_t want, got;
		int idx, fd;
		char *p;

		if (is_morsel) {
			fd = morsel_recv_fd(sock);
			if (fd < 0 || read(sock, &idx, sizeof(idx)) != sizeof(idx))
				die("receive packet", EIO);
		} else {
			if (read(sock, &idx, sizeof(idx)) != sizeof(idx))
				die("receive packet", EIO);
			fd = shm_open(shm_name(idx), O_RDONLY, 0);
			if (fd < 0)
				die("shm_open", errno);
		}
		p = map_fd(fd, is_morsel ? GiB : PACKET, PROT_READ, 0);
		want = (PACKET / PG) * (0x0101010101010101ULL * (uint8_t)(i + 1));
		got = read_pages(p, PACKET);
		munmap(p, is_morsel ? GiB : PACKET);
		close(fd);
		if (got != want)
			die("packet data", EIO);
		if (write(sock, &idx, sizeof(idx)) != sizeof(idx))
			die("return packet", EIO);
		t = now_ms();
		emit("throughput", variant, PACKET / MiB, i, "gib_s",
		     (PACKET / (double)GiB) / ((t - last) / 1e3));
		last = t;
	}
	exit(0);
}

static void throughput(int is_morsel, int packets)
{
	const char *variant = is_morsel ? "morsel" : "shm";
	int fds[CIRCULATING], sv[2], i, status;
	pid_t pid;

	for (i = 0; i < CIRCULATING; i++) {
		char name[32];

		if (is_morsel) {
			/* Order 2, 1 GiB virtual, the first 32 MiB in use. */
			snprintf(name, sizeof(name), "packet%d", i);
			fds[i] = new_morsel(name, GiB);
		} else {
			shm_unlink(shm_name(i));
			fds[i] = shm_open(shm_name(i), O_RDWR | O_CREAT | O_EXCL,
					  0600);
			if (fds[i] < 0 || ftruncate(fds[i], PACKET))
				die("shm_open", errno);
		}
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair", errno);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		receiver(sv[1], is_morsel, packets, variant);
	}
	close(sv[1]);
	for (i = 0; i < packets; i++) {
		int idx = i % CIRCULATING;
		char *p;

		/* The first round uses fresh packets; then wait for returns. */
		if (i >= CIRCULATING &&
		    read(sv[0], &idx, sizeof(idx)) != sizeof(idx))
			die("packet back", EIO);
		p = map_fd(fds[idx], is_morsel ? GiB : PACKET,
			   PROT_READ | PROT_WRITE, 0);
		memset(p, (uint8_t)(i + 1), PACKET);
		munmap(p, is_morsel ? GiB : PACKET);
		if (is_morsel && morsel_send_fd(sv[0], fds[idx]))
			die("send fd", errno);
		if (write(sv[0], &idx, sizeof(idx)) != sizeof(idx))
			die("send packet", EIO);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("receiver", EIO);
	close(sv[0]);
	for (i = 0; i < CIRCULATING; i++) {
		char name[32];

		close(fds[i]);
		snprintf(name, sizeof(name), "packet%d", i);
		if (is_morsel)
			unlink(mpath(name));
		else
			shm_unlink(shm_name(i));
	}
}

/* The upper limit: one core filling a prepared packet with memset. */
static void memset_limit(int packets)
{
	char *p = malloc(PACKET);
	double last, t;
	int i;

	if (!p)
		die("malloc", ENOMEM);
	memset(p, 0, PACKET);
	last = now_ms();
	for (i = 0; i < packets; i++) {
		memset(p, (uint8_t)(i + 1), PACKET);
		__asm__ volatile("" : : "r"(p) : "memory");
		t = now_ms();
		emit("throughput", "memset-limit", PACKET / MiB, i, "gib_s",
		     (PACKET / (double)GiB) / ((t - last) / 1e3));
		last = t;
	}
	free(p);
}

static void bench_throughput(void)
{
	int packets = quick ? 12 : 300;

	throughput(1, packets);
	throughput(0, packets);
	memset_limit(packets);
}

/* ---- 4. large read-only file (paper 3.1) ---- */

static void bench_largefile(void)
{
	uint64_t len = quick ? 64 * MiB + 12345 : 6984ULL * MiB;	/* 6.82 GiB */
	int iters = quick ? 3 : 7, n = (int)((len + GiB - 1) / GiB), i, it;
	const char *file = "/tmp/bench-large";
	int ffd, fds[8];
	char name[32];
	uint64_t left;
	char *buf = malloc(1 * MiB);

	if (!buf)
		die("malloc", ENOMEM);
	memset(buf, 7, 1 * MiB);
	/* The file, in memory (tmpfs page cache). */
	ffd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (ffd < 0)
		die(file, errno);
	for (left = len; left; ) {
		size_t c = left < MiB ? left : MiB;

		if (write(ffd, buf, c) != (ssize_t)c)
			die("write large file", errno);
		left -= c;
	}
	/* The morsels holding it: 1 GiB each, the last one partial. */
	for (i = 0; i < n; i++) {
		uint64_t part = len - (uint64_t)i * GiB;
		off_t off = (off_t)i * GiB;

		snprintf(name, sizeof(name), "large%d", i);
		fds[i] = new_morsel(name, 0);
		for (left = part < GiB ? part : GiB; left; ) {
			size_t c = left < MiB ? left : MiB;

			if (pread(ffd, buf, c, off) != (ssize_t)c ||
			    write(fds[i], buf, c) != (ssize_t)c)
				die("fill morsel", errno);
			off += c;
			left -= c;
		}
		/* Every morsel of a run must have the same order. */
		if (ftruncate(fds[i], GiB))
			die("ftruncate", errno);
	}
	for (it = 0; it < iters; it++) {
		void *a;
		size_t mlen;
		double t0, t1, t2;
		char *p;
		int err;

		t0 = now_ms();
		p = map_fd(ffd, len, PROT_READ, MAP_POPULATE);
		t1 = now_ms();
		read_pages(p, len);
		t2 = now_ms();
		munmap(p, len);
		emit("largefile", "pagecache-populate", len, it, "map_ms", t1 - t0);
		emit("largefile", "pagecache-populate", len, it, "access_ms", t2 - t1);
		t0 = now_ms();
		err = morsel_map_run(fds, n, PROT_READ, &a, &mlen);
		if (err)
			die("morsel_map_run", -err);
		t1 = now_ms();
		read_pages(a, len);
		t2 = now_ms();
		munmap(a, mlen);
		emit("largefile", "morsel", len, it, "map_ms", t1 - t0);
		emit("largefile", "morsel", len, it, "access_ms", t2 - t1);
	}
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "large%d", i);
		unlink(mpath(name));
		close(fds[i]);
	}
	close(ffd);
	unlink(file);
	free(buf);
}

/* ---- 5. creation and destruction (memory right after creation) ---- */

static void anon_create(const char *variant, int dir, int order, int it,
			uint64_t size)
{
	double t0, t1, t2;
	int fd;

	t0 = now_ms();
	fd = openat(dir, ".", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, size))
		die(variant, errno);
	t1 = now_ms();
	close(fd);
	t2 = now_ms();
	emit("create", variant, order, it, "create_ms", t1 - t0);
	emit("create", variant, order, it, "destroy_ms", t2 - t1);
}

/*
 * The unnamed morsel in one call (MORSEL_IOC_CREATE), as memfd_create
 * plus ftruncate is for tmpfs.  Destroying is the last close.
 */
static void unnamed_create(int dir, int order, int it, uint64_t size)
{
	double t0, t1, t2;
	int fd;

	t0 = now_ms();
	fd = morsel_create_unnamed(dir, size, 0600);
	if (fd < 0)
		die("morsel_create_unnamed", -fd);
	t1 = now_ms();
	close(fd);
	t2 = now_ms();
	emit("create", "morsel-unnamed", order, it, "create_ms", t1 - t0);
	emit("create", "morsel-unnamed", order, it, "destroy_ms", t2 - t1);
}

static void bench_create(void)
{
	int iters = quick ? 3 : 21, max = getenv("MORSEL_PAGING") &&
		    !strcmp(getenv("MORSEL_PAGING"), "5") ? 4 : 3;
	int order, it, mdir = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int sdir = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (mdir < 0 || sdir < 0)
		die("open a directory", errno);

	for (order = 0; order <= max; order++) {
		uint64_t size = morsel_order_extent(order);

		for (it = 0; it < iters; it++) {
			long t0c = morselfs_counter("tables"), p0c = morselfs_counter("pages");
			double t0, t1, t2, t3;
			int fd;

			unlink(mpath("create"));
			t0 = now_ms();
			fd = morsel_create(mpath("create"), size, 0600);
			if (fd < 0)
				die("morsel_create", -fd);
			t1 = now_ms();
			emit("create", "morsel", order, it, "pages_after_create",
			     (double)(morselfs_counter("tables") - t0c + morselfs_counter("pages") - p0c));
			t2 = now_ms();
			close(fd);
			unlink(mpath("create"));
			t3 = now_ms();
			emit("create", "morsel", order, it, "create_ms", t1 - t0);
			emit("create", "morsel", order, it, "destroy_ms", t3 - t2);
			/*
			 * The competitors, sparse and of the same size: a POSIX
			 * shm object (a named tmpfs file, like the morsel) and
			 * an anonymous memfd (no name to look up).
			 */
			shm_unlink("/morsel-create");
			t0 = now_ms();
			fd = shm_open("/morsel-create", O_RDWR | O_CREAT | O_EXCL,
				      0600);
			if (fd < 0 || ftruncate(fd, size))
				die("shm_open", errno);
			t1 = now_ms();
			close(fd);
			shm_unlink("/morsel-create");
			t2 = now_ms();
			emit("create", "shm", order, it, "create_ms", t1 - t0);
			emit("create", "shm", order, it, "destroy_ms", t2 - t1);
			t0 = now_ms();
			fd = memfd_create("create", MFD_CLOEXEC);
			if (fd < 0 || ftruncate(fd, size))
				die("memfd", errno);
			t1 = now_ms();
			close(fd);
			t2 = now_ms();
			emit("create", "memfd", order, it, "create_ms", t1 - t0);
			emit("create", "memfd", order, it, "destroy_ms", t2 - t1);
			/*
			 * Without a name, as memfd: O_TMPFILE in a directory
			 * held open (no path to walk but "."), on morselfs and
			 * on tmpfs.  Destroying is the last close.
			 */
			anon_create("morsel-anon", mdir, order, it, size);
			anon_create("tmpfs-anon", sdir, order, it, size);
			unnamed_create(mdir, order, it, size);
		}
	}
	close(mdir);
	close(sdir);
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else
			die("usage: bench [--quick] [--only NAME]", EINVAL);
	}
	mnt = getenv("MORSEL_MNT");
	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
#define RUN(name, fn) do {						\
	if (!only || !strcmp(only, name)) {				\
		double t = now_ms();					\
		fn();							\
		printf("bench: %s done in %.1f s\n", name,		\
		       (now_ms() - t) / 1e3);				\
	}								\
} while (0)
	RUN("create", bench_create);
	RUN("population", bench_population);
	RUN("mapping", bench_mapping);
	RUN("throughput", bench_throughput);
	RUN("largefile", bench_largefile);
	return 0;
}
