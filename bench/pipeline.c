// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, the pipeline family (paper 3.2, Fig. 3-5; issue 11): four
 * processes connected by Unix domain sockets pass buffers as fds, without
 * queues or copies, once with memfd buffers and once with morsels.
 *
 *   1 provide  hands out buffers from a pool filled lazily: a new buffer
 *              (memfd_create, or an O_TMPFILE morsel on $MORSEL_MNT, both
 *              sized to the largest packet and never populated ahead) only
 *              when every existing one is in flight.
 *   2 fill     maps the buffer, writes random data of the packet's random
 *              length (seeded: both types see the same lengths and bytes),
 *              computing the CRC-32 of the words as it writes them.
 *   3 crc      maps it read-only and computes the CRC-32 of the bytes.
 *   4 send     checks step 3's CRC against step 2's (a mismatch ends the
 *              run with status 1), overwrites the packet (the stand-in for
 *              sending) and returns the buffer to step 1.
 *
 * Each step maps the buffer when it gets it and unmaps it before passing
 * it on: memfd maps the packet's length, a morsel its whole extent (one
 * entry).  No queues: a step takes a packet only when it is idle and
 * passes it on only when the next step is idle (a one-byte "ready" on the
 * same socket), so a large packet holds up the ones behind it, as in the
 * paper.  Step 2 also checks, on a reused buffer, two bytes of step 4's
 * overwrite of the previous packet: every run proves that data crossed all
 * four address spaces.
 *
 * Per packet it prints, as csv,pipeline,<type>,<length>,<packet>,<metric>,
 * <value> lines (bench/report): the round-trip time 1 -> 2 -> 3 -> 4 -> 1
 * (rtt_ms), the four steps' user time summed (user_ms: getrusage's
 * RUSAGE_THREAD utime, the kernel's user-time accounting), their thread CPU
 * time (cpu_ms: CLOCK_THREAD_CPUTIME_ID, exact), the time steps sat
 * waiting for the next one (wait_ms), and per step sN_: user, cpu, page
 * faults (ru_minflt + ru_majflt) and the CPU time spent in mmap, in the
 * work loop (user code plus the faults it takes), in munmap and in passing
 * the fd (sendmsg + recvmsg).  Then summary lines (pipeline: ...).
 *
 * After the morsel run the morselfs counters (pages, tables, morsels) must
 * be back at their values before it: the pool's morsels are unnamed and
 * freed with their last fd.
 *
 * usage: pipeline [--quick] [--type memfd|morsel|both] [--packets N]
 *                 [--max-size BYTES] [--seed S] [--serial] [--corrupt N]
 *   --quick     40 packets of up to 16 MiB (the make test check)
 *   --serial    one packet in flight at a time (no waiting behind others)
 *   --corrupt N step 2 flips a bit of packet N after computing its CRC:
 *               the run must fail (tests/pipeline_test checks the check)
 *
 * Locking: none.  Every process is single-threaded; a buffer belongs to
 * exactly one step at a time, and ownership moves with the message that
 * carries its fd.  The results area is shared (MAP_SHARED | MAP_ANONYMOUS)
 * but written only by step 1 and read by the parent after step 1 exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "morsel.h"
#include "cache_proto.h"	/* morsel_cache_parse_size */
#include "common.h"

#define PG		4096ULL
#define MiB		(1ULL << 20)
#define MAXPOOL		16
#define NSTEPS		4

enum { MEMFD, MORSEL };
static const char *const type_name[] = { "memfd", "morsel" };
static const char *const step_name[] = { "", "provide", "fill", "crc", "send" };

/* What one step measured for one packet (times in ms). */
struct step_stat {
	double arrive, leave;	/* CLOCK_MONOTONIC at receipt and hand-off */
	double wait;		/* blocked for the next step's "ready" */
	double user, cpu;	/* thread user and CPU time, arrive..leave */
	double map, work, unmap, pass;	/* thread CPU time in each part */
	long faults;
};

/* The message that travels with a buffer's fd, and the per-packet result. */
struct packet {
	uint32_t id;		/* packet number, 0..packets-1 */
	uint32_t buf;		/* pool slot */
	uint64_t len;		/* bytes of data */
	uint64_t seed;		/* of step 2's random data */
	uint64_t prev_len;	/* the buffer's previous packet (0: fresh) */
	uint8_t prev_fill;	/* and the byte step 4 wrote over it */
	uint8_t fill;		/* the byte step 4 writes over this one */
	uint32_t crc2, crc3;	/* step 2's and step 3's CRC-32 */
	double t0, rtt;		/* hand-out time; round-trip time (ms) */
	struct step_stat st[NSTEPS + 1];	/* [1..4] */
};

static int type, serial, packets = 1000, corrupt = -1;
static uint64_t max_size = 256 * MiB, seed = 1;
static const char *mnt;
static struct packet *results;	/* shared with step 1 */

/* ---- CRC-32 (IEEE 802.3, reflected, as zlib's crc32), slicing by 8 ---- */

static uint32_t crc_tab[8][256];

static void crc_init(void)
{
	uint32_t c;
	int i, j;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = (c >> 1) ^ (c & 1 ? 0xedb88320u : 0);
		crc_tab[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (j = 1; j < 8; j++)
			crc_tab[j][i] = (crc_tab[j - 1][i] >> 8) ^
					crc_tab[0][crc_tab[j - 1][i] & 0xff];
}

/* Fold one little-endian 64-bit word into the running (inverted) CRC. */
static inline uint32_t crc_word(uint32_t crc, uint64_t w)
{
	w ^= crc;
	return crc_tab[7][w & 0xff] ^ crc_tab[6][(w >> 8) & 0xff] ^
	       crc_tab[5][(w >> 16) & 0xff] ^ crc_tab[4][(w >> 24) & 0xff] ^
	       crc_tab[3][(w >> 32) & 0xff] ^ crc_tab[2][(w >> 40) & 0xff] ^
	       crc_tab[1][(w >> 48) & 0xff] ^ crc_tab[0][w >> 56];
}

static inline uint32_t crc_byte(uint32_t crc, uint8_t b)
{
	return (crc >> 8) ^ crc_tab[0][(crc ^ b) & 0xff];
}

/* CRC-32 of @len bytes at @p (8-byte aligned). */
static uint32_t crc32_buf(const void *p, uint64_t len)
{
	const uint64_t *w = p;
	const uint8_t *b;
	uint32_t crc = ~0u;
	uint64_t i, n = len / 8;

	for (i = 0; i < n; i++)
		crc = crc_word(crc, w[i]);
	b = (const uint8_t *)(w + n);
	for (i = 0; i < len % 8; i++)
		crc = crc_byte(crc, b[i]);
	return ~crc;
}

/* Step 2's work: @len random bytes from @s into @p; returns their CRC-32. */
static uint32_t fill_random(void *p, uint64_t len, uint64_t s)
{
	uint64_t *w = p, i, n = len / 8, x = s | 1, v;
	uint32_t crc = ~0u;
	uint8_t *b;

	for (i = 0; i < n; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		v = x * 0x2545f4914f6cdd1dULL;
		w[i] = v;
		crc = crc_word(crc, v);
	}
	b = (uint8_t *)(w + n);
	for (i = 0; i < len % 8; i++) {
		b[i] = (uint8_t)(x >> (8 * i));
		crc = crc_byte(crc, b[i]);
	}
	return ~crc;
}

/* ---- clocks ---- */

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct snap { double cpu, user; long faults; };

static void take(struct snap *s)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	s->cpu = thread_cpu_ms();
	s->user = ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3;
	s->faults = ru.ru_minflt + ru.ru_majflt;
}

/* ---- messages: a struct packet and one fd, over SOCK_SEQPACKET ---- */

static void send_packet(int sock, struct packet *pk, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { pk, sizeof(*pk) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(sock, &m, MSG_NOSIGNAL) != sizeof(*pk))
		die("sendmsg", errno);
}

/* Returns the fd, or -1 at end of stream (the sending step is gone). */
static int recv_packet(int sock, struct packet *pk)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { pk, sizeof(*pk) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;
	int fd;

	n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	/* ECONNRESET: it closed with our unread "ready" in its queue */
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (n != sizeof(*pk) || !c || c->cmsg_type != SCM_RIGHTS ||
	    (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		die("recvmsg", n < 0 ? errno : EPROTO);
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/* ---- buffers ---- */

static int new_buffer(void)
{
	int fd;

	if (type == MEMFD)
		fd = memfd_create("pipeline", MFD_CLOEXEC);
	else
		fd = open(mnt, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		die(type == MEMFD ? "memfd_create" : "open O_TMPFILE", errno);
	if (ftruncate(fd, max_size))
		die("ftruncate", errno);
	return fd;
}

/* Map @len bytes of data: memfd that much, a morsel its whole extent. */
static void *map_buffer(int fd, uint64_t len, int prot, size_t *maplen)
{
	void *p;

	if (type == MORSEL) {
		int err = morsel_map(fd, NULL, prot, 0, &p, maplen);

		if (err)
			die("morsel_map", -err);
		return p;
	}
	*maplen = (len + PG - 1) & ~(PG - 1);
	p = mmap(NULL, *maplen, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	return p;
}

static void unmap_buffer(void *p, size_t maplen)
{
	int err = type == MORSEL ? morsel_unmap(p, maplen) :
		  (munmap(p, maplen) ? -errno : 0);

	if (err)
		die("munmap", -err);
}

/* ---- steps 2, 3, 4 ---- */

static void step_work(int k, struct packet *pk, char *p)
{
	uint64_t n;

	switch (k) {
	case 2:
		n = pk->prev_len < pk->len ? pk->prev_len : pk->len;
		if (n && (p[0] != (char)pk->prev_fill ||
			  p[n - 1] != (char)pk->prev_fill)) {
			fprintf(stderr, "pipeline: packet %u: buffer %u does not hold step 4's overwrite of its previous packet\n",
				pk->id, pk->buf);
			exit(1);
		}
		pk->crc2 = fill_random(p, pk->len, pk->seed);
		if ((int)pk->id == corrupt)	/* --corrupt: test the check */
			p[pk->len / 2] ^= 0x10;
		break;
	case 3:
		pk->crc3 = crc32_buf(p, pk->len);
		break;
	case 4:
		if (pk->crc3 != pk->crc2) {
			fprintf(stderr, "pipeline: packet %u (%llu bytes): step 3's CRC %08x, step 2 wrote %08x\n",
				pk->id, (unsigned long long)pk->len, pk->crc3,
				pk->crc2);
			exit(1);
		}
		memset(p, pk->fill, pk->len);
		break;
	}
}

/*
 * Step @k: "ready" upstream, take a packet, map, work, unmap, wait until
 * the next step is ready (step 4: step 1 always is), pass it on.
 */
static void step(int k, int up, int down)
{
	struct snap s0, s1, s2, s3, s4, s5, s6;
	struct packet pk;
	struct step_stat *st;
	double w0, sent = 0;
	size_t maplen;
	char *p;
	int fd;

	prctl(PR_SET_NAME, step_name[k]);
	for (;;) {
		if (send(up, "r", 1, MSG_NOSIGNAL) != 1)
			break;		/* step 1 finished */
		take(&s0);
		fd = recv_packet(up, &pk);
		if (fd < 0)
			break;
		st = &pk.st[k];
		st->arrive = now_ms();
		take(&s1);
		p = map_buffer(fd, pk.len, k == 3 ? PROT_READ :
			       PROT_READ | PROT_WRITE, &maplen);
		take(&s2);
		step_work(k, &pk, p);
		take(&s3);
		unmap_buffer(p, maplen);
		take(&s4);
		w0 = now_ms();
		if (k < 4) {
			char c;

			if (read(down, &c, 1) != 1)
				die("next step's ready", EPIPE);
		}
		st->wait = now_ms() - w0;
		take(&s5);
		st->map = s2.cpu - s1.cpu;
		st->work = s3.cpu - s2.cpu;
		st->unmap = s4.cpu - s3.cpu;
		/*
		 * This recvmsg, and the sendmsg + close that passed on this
		 * step's previous packet: the message is gone by the time
		 * its sendmsg returns.
		 */
		st->pass = s1.cpu - s0.cpu + sent;
		st->user = s5.user - s0.user;
		st->cpu = s5.cpu - s0.cpu + sent;
		st->faults = s5.faults - s0.faults;
		st->leave = now_ms();
		send_packet(down, &pk, fd);
		close(fd);
		take(&s6);
		sent = s6.cpu - s5.cpu;
	}
	exit(0);
}

/* ---- step 1 ---- */

struct slot { int fd, busy; uint64_t prev_len; uint8_t prev_fill; };

static uint64_t rnd(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void provide(int to2, int from4, int *pool_size)
{
	struct slot pool[MAXPOOL];
	struct pollfd pfd[2] = { { to2, POLLIN, 0 }, { from4, POLLIN, 0 } };
	int sent = 0, back = 0, ready = 0, npool = 0, i, fd;
	uint64_t x = seed;
	struct snap a, b;
	struct packet pk;

	prctl(PR_SET_NAME, step_name[1]);
	while (back < packets) {
		if (poll(pfd, 2, -1) < 0)
			die("poll", errno);
		if (pfd[1].revents) {
			fd = recv_packet(from4, &pk);
			if (fd < 0)
				die("step 4 ended early", EPIPE);
			pk.rtt = now_ms() - pk.t0;
			close(fd);
			pool[pk.buf].busy = 0;
			pool[pk.buf].prev_len = pk.len;
			pool[pk.buf].prev_fill = pk.fill;
			results[pk.id] = pk;
			back++;
		}
		if (pfd[0].revents) {
			char c;

			if (read(to2, &c, 1) != 1)
				die("step 2 ended early", EPIPE);
			ready++;
		}
		while (ready && sent < packets && (!serial || back == sent)) {
			take(&a);
			for (i = 0; i < npool && pool[i].busy; i++)
				;
			if (i == npool) {
				if (npool == MAXPOOL)
					die("pool", EOVERFLOW);
				pool[npool++] = (struct slot){ .fd = new_buffer() };
			}
			memset(&pk, 0, sizeof(pk));
			pk.id = sent;
			pk.buf = i;
			pk.len = 1 + rnd(&x) % max_size;
			pk.seed = rnd(&x);
			pk.prev_len = pool[i].prev_len;
			pk.prev_fill = pool[i].prev_fill;
			pk.fill = 0x80 | (sent & 0x7f);
			pool[i].busy = 1;
			take(&b);
			pk.st[1].cpu = b.cpu - a.cpu;
			pk.st[1].user = b.user - a.user;
			pk.st[1].faults = b.faults - a.faults;
			pk.st[1].arrive = pk.st[1].leave = pk.t0 = now_ms();
			send_packet(to2, &pk, pool[i].fd);
			sent++;
			ready--;
		}
	}
	*pool_size = npool;
	for (i = 0; i < npool; i++)
		close(pool[i].fd);
	exit(0);
}

/* ---- one run of one type ---- */

struct summary { double rtt, user, cpu, wait, rtt_big; int big; };

static void run(struct summary *sum)
{
	static const char *const ctr[] = { "pages", "tables", "morsels" };
	int sv[NSTEPS][2], *pool_size, i, k, status, failed = 0;
	long before[3] = { 0 };
	pid_t pid[NSTEPS + 1];
	double t0 = now_ms();
	char variant[16];

	if (type == MORSEL)
		for (i = 0; i < 3; i++)
			before[i] = morselfs_counter(ctr[i]);
	/* sv[k-1]: step k (end 0) to step k+1 (end 1); step 4 to step 1. */
	for (k = 0; k < NSTEPS; k++)
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
			       sv[k]))
			die("socketpair", errno);
	pool_size = (int *)(results + packets);
	fflush(stdout);
	for (k = 1; k <= NSTEPS; k++) {
		pid[k] = fork();
		if (pid[k] < 0)
			die("fork", errno);
		if (pid[k] == 0) {
			int j;

			for (j = 0; j < NSTEPS; j++) {
				/* keep: step k's own ends */
				if (j != k - 1)
					close(sv[j][0]);
				if (j != (k + NSTEPS - 2) % NSTEPS)
					close(sv[j][1]);
			}
			if (k == 1)
				provide(sv[0][0], sv[NSTEPS - 1][1], pool_size);
			step(k, sv[k - 2][1], sv[k - 1][0]);
		}
	}
	for (k = 0; k < NSTEPS; k++) {
		close(sv[k][0]);
		close(sv[k][1]);
	}
	for (k = 1; k <= NSTEPS; k++)
		if (waitpid(pid[k], &status, 0) != pid[k] ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "pipeline: %s: step %d (%s) failed\n",
				type_name[type], k, step_name[k]);
			failed = 1;
		}
	if (failed)
		exit(1);

	snprintf(variant, sizeof(variant), "%s%s", type_name[type],
		 serial ? "-serial" : "");
	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < packets; i++) {
		struct packet *pk = &results[i];
		double user = 0, cpu = 0, wait = 0;
		char m[32];

		if (pk->id != (uint32_t)i || pk->crc2 != pk->crc3)
			die("results", EPROTO);
		for (k = 1; k <= NSTEPS; k++) {
			struct step_stat *st = &pk->st[k];

			user += st->user;
			cpu += st->cpu;
			wait += st->wait;
#define EMIT(what, v) do {						\
	snprintf(m, sizeof(m), "s%d_%s", k, what);			\
	emit("pipeline", variant, pk->len, i, m, v);			\
} while (0)
			EMIT("user_ms", st->user);
			EMIT("cpu_ms", st->cpu);
			EMIT("faults", st->faults);
			if (k > 1) {
				EMIT("map_ms", st->map);
				EMIT("work_ms", st->work);
				EMIT("unmap_ms", st->unmap);
				EMIT("pass_ms", st->pass);
				EMIT("wait_ms", st->wait);
			}
#undef EMIT
		}
		emit("pipeline", variant, pk->len, i, "rtt_ms", pk->rtt);
		emit("pipeline", variant, pk->len, i, "user_ms", user);
		emit("pipeline", variant, pk->len, i, "cpu_ms", cpu);
		emit("pipeline", variant, pk->len, i, "wait_ms", wait);
		sum->rtt += pk->rtt / packets;
		sum->user += user / packets;
		sum->cpu += cpu / packets;
		sum->wait += wait / packets;
		if (pk->len > max_size / 2) {
			sum->rtt_big += pk->rtt;
			sum->big++;
		}
	}
	if (sum->big)
		sum->rtt_big /= sum->big;
	printf("pipeline: %s%s: %d packets of 1 B..%llu MiB, CRCs all match, pool of %d buffers, %.1f s\n",
	       type_name[type], serial ? " (serial)" : "", packets,
	       (unsigned long long)(max_size / MiB), *pool_size,
	       (now_ms() - t0) / 1e3);
	printf("pipeline: %s%s: mean RTT %.1f ms, user time %.1f ms; RTT - user %.1f ms (%+.1f %% of user) = kernel CPU %.1f + waiting for the next step %.1f + runnable or in transit %.1f ms\n",
	       type_name[type], serial ? " (serial)" : "", sum->rtt,
	       sum->user, sum->rtt - sum->user,
	       100 * (sum->rtt - sum->user) / sum->user, sum->cpu - sum->user,
	       sum->wait, sum->rtt - sum->cpu - sum->wait);
	if (type == MORSEL) {
		for (i = 0; i < 3; i++) {
			long after = morselfs_counter(ctr[i]);

			if (after != before[i]) {
				fprintf(stderr, "pipeline: morselfs %s: %ld before the run, %ld after\n",
					ctr[i], before[i], after);
				exit(1);
			}
		}
		printf("pipeline: morsel: morselfs counters back to their start (pages %ld, tables %ld, morsels %ld)\n",
		       before[0], before[1], before[2]);
	}
}

int main(int argc, char **argv)
{
	struct summary sum[2];
	int i, which = -1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			packets = 40;
			max_size = 16 * MiB;
		} else if (!strcmp(argv[i], "--serial")) {
			serial = 1;
		} else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
			i++;
			which = !strcmp(argv[i], "memfd") ? MEMFD :
				!strcmp(argv[i], "morsel") ? MORSEL :
				!strcmp(argv[i], "both") ? -1 : -2;
			if (which == -2)
				die("--type memfd|morsel|both", EINVAL);
		} else if (!strcmp(argv[i], "--packets") && i + 1 < argc) {
			packets = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
			if (morsel_cache_parse_size(argv[++i], &max_size))
				die("--max-size", EINVAL);
		} else if (!strcmp(argv[i], "--corrupt") && i + 1 < argc) {
			corrupt = atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
		} else {
			die("usage: pipeline [--quick] [--type memfd|morsel|both] [--packets N] [--max-size BYTES] [--seed S] [--serial] [--corrupt N]",
			    EINVAL);
		}
	}
	if (packets < 1 || max_size < 1 ||
	    morsel_order_for_size(max_size) < 0)
		die("--packets or --max-size", EINVAL);
	mnt = getenv("MORSEL_MNT");
	if (!mnt && which != MEMFD)
		die("MORSEL_MNT not set (run with vm/run)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	crc_init();
	if (crc32_buf("123456789", 9) != 0xcbf43926)
		die("CRC-32 self-test", EPROTO);
	results = mmap(NULL, (packets + 1) * sizeof(*results),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (results == MAP_FAILED)
		die("mmap results", errno);
	for (type = MEMFD; type <= MORSEL; type++)
		if (which < 0 || which == type)
			run(&sum[type]);
	if (which < 0) {
		printf("pipeline%s: mean RTT memfd / morsel: %.2f overall (%.1f / %.1f ms), %.2f for packets above %llu MiB (%d packets; paper: 174 / 107 ms = 1.63)\n",
		       serial ? " (serial)" : "",
		       sum[MEMFD].rtt / sum[MORSEL].rtt, sum[MEMFD].rtt,
		       sum[MORSEL].rtt,
		       sum[MORSEL].big ? sum[MEMFD].rtt_big / sum[MORSEL].rtt_big : 0,
		       (unsigned long long)(max_size / 2 / MiB), sum[MORSEL].big);
	}
	return 0;
}
