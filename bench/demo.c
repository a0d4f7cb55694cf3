// SPDX-License-Identifier: GPL-2.0
/*
 * make demo: a 1 GiB morsel, part of it filled, handed to a second process
 * over a Unix socket; how long that process needs to map it and read every
 * page, against the same data in a memfd mapped with MAP_POPULATE.  Both
 * are measured side by side in one run; the ratios are what matters.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define MiB (1ULL << 20)
#define FILL (256 * MiB)
#define ROUNDS 5


struct result { double map, read; };

/* Receiver: get the fd, map it, read one word per page; report times. */
static void receiver(int sock, int is_morsel)
{
	struct result r;
	volatile uint64_t sum = 0;
	double t0, t1, t2;
	size_t len, off;
	char *p;
	void *addr;
	int fd, err;

	t0 = now_ms();
	fd = morsel_recv_fd(sock);
	if (fd < 0)
		die("recv", -fd);
	if (is_morsel) {
		err = morsel_map(fd, NULL, PROT_READ, 0, &addr, &len);
		if (err)
			die("morsel_map", -err);
		p = addr;
	} else {
		len = FILL;
		p = mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
		if (p == MAP_FAILED)
			die("mmap memfd", errno);
	}
	t1 = now_ms();
	for (off = 0; off < FILL; off += 4096)
		sum += *(uint64_t *)(p + off);
	t2 = now_ms();
	if (sum != (FILL / 4096) * 0x0101010101010101ULL)
		die("data check", EIO);
	r.map = t1 - t0;
	r.read = t2 - t1;
	if (write(sock, &r, sizeof(r)) != sizeof(r))
		die("report", errno);
	munmap(p, len);
	close(fd);
	exit(0);
}

static struct result hand_over(int fd, int is_morsel)
{
	struct result r;
	int sv[2], status;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair", errno);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		receiver(sv[1], is_morsel);
	}
	close(sv[1]);
	if (morsel_send_fd(sv[0], fd))
		die("send", errno);
	if (read(sv[0], &r, sizeof(r)) != sizeof(r))
		die("receiver failed", EIO);
	waitpid(pid, &status, 0);
	close(sv[0]);
	return r;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	return v[ROUNDS / 2];
}

int main(void)
{
	const char *mnt = getenv("MORSEL_MNT");
	double mm[ROUNDS], mr[ROUNDS], fm[ROUNDS], fr[ROUNDS];
	double t0, fill_morsel, fill_memfd;
	char path[256];
	size_t len;
	void *addr;
	char *p;
	int mfd, ffd, i, err;

	if (!mnt)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	snprintf(path, sizeof(path), "%s/demo", mnt);
	unlink(path);
	mfd = morsel_create(path, 1ULL << 30, 0600);
	if (mfd < 0)
		die("morsel_create", -mfd);
	err = morsel_map(mfd, NULL, PROT_READ | PROT_WRITE, 0, &addr, &len);
	if (err)
		die("morsel_map", -err);
	t0 = now_ms();
	memset(addr, 1, FILL);
	fill_morsel = now_ms() - t0;
	morsel_unmap(addr, len);

	ffd = memfd_create("demo", MFD_CLOEXEC);
	if (ffd < 0 || ftruncate(ffd, FILL))
		die("memfd", errno);
	p = mmap(NULL, FILL, PROT_READ | PROT_WRITE, MAP_SHARED, ffd, 0);
	if (p == MAP_FAILED)
		die("mmap memfd", errno);
	t0 = now_ms();
	memset(p, 1, FILL);
	fill_memfd = now_ms() - t0;
	munmap(p, FILL);

	for (i = 0; i < ROUNDS; i++) {
		struct result a = hand_over(mfd, 1), b = hand_over(ffd, 0);

		mm[i] = a.map;
		mr[i] = a.read;
		fm[i] = b.map;
		fr[i] = b.read;
	}
	{
		double a = median(mm), b = median(mr), c = median(fm), d = median(fr);

		printf("\nMorsels demo: a 1 GiB morsel with 256 MiB filled, handed to a second\n"
		       "process over a Unix socket; that process maps it and reads every page.\n"
		       "Median of %d rounds (software-emulated VM: compare ratios, not times).\n\n",
		       ROUNDS);
		printf("%-26s %12s %12s %12s\n", "", "map (ms)", "read (ms)", "total (ms)");
		printf("%-26s %12.3f %12.2f %12.2f\n", "morsel (one entry write)", a, b, a + b);
		printf("%-26s %12.3f %12.2f %12.2f\n", "memfd + MAP_POPULATE", c, d, c + d);
		printf("%-26s %11.1fx %11.2fx %11.1fx\n", "memfd / morsel", c / a, d / b,
		       (c + d) / (a + b));
		printf("\nfilling 256 MiB by first touch: morsel %.0f ms, memfd %.0f ms (%.2fx)\n",
		       fill_morsel, fill_memfd, fill_memfd / fill_morsel);
	}
	unlink(path);
	close(mfd);
	close(ffd);
	return 0;
}
