// SPDX-License-Identifier: GPL-2.0
/*
 * lifecycle_test: morsels shared by processes and how long they live
 * (kselftest harness; with primitive_test, ioctl_test and io_test it
 * replaced morsel_test).
 *
 * - Sharing: two processes opening the same path, a fork child sharing
 *   the mapping (every order), a descriptor passed over a Unix socket.
 * - Lifetime: kill -9 of a process in the middle of writing keeps the
 *   morsel and its data; an unlinked and closed morsel lives until its
 *   last mapping goes.
 * - Concurrency: processes and threads faulting the same pages at once;
 *   no page, table or morsel left behind after 150 morsels of every order
 *   with fork children and both orders of unlink and munmap.
 *
 * Runs in the VM (vm/run; tests/run-all) as root, with the suite's
 * morselfs at $MORSEL_MNT; tests/run-all runs it on a persistent instance
 * too (tests/on_pmem).
 *
 * kselftest harness: every TEST runs in its own child process, one after
 * another (the fixture "slow"'s, which may take up to 300 s, after the
 * others); each creates the files it uses (its own names) and depends on
 * no other test.  A check in a fork child is an ASSERT_* too: a failure
 * ends the child and fails the test.  The checks of the module's global
 * counters (/sys/fs/morselfs) compare before and after, so nothing else
 * may make or free morsels while the suite runs (tests/run-all runs one
 * suite at a time).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

/* ---- processes sharing a morsel ---- */

TEST(two_processes_by_path)
{
	int fd = fresh(mpath("tp"), 2 * MiB), pfd[2];
	char *p, c;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	if (pid == 0) {
		int cfd = morsel_open(mpath("tp"), O_RDWR);
		char *q;

		ASSERT_LE(0, cfd);
		q = map(_metadata, cfd, 2 * MiB, PROT_READ | PROT_WRITE);
		strcpy(q + 1 * MiB, "from child");
		ASSERT_EQ(1, write(pfd[1], "x", 1));
		_exit(0);
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	ASSERT_STREQ("from child", p + 1 * MiB);
	wait_child_ok(_metadata, pid);
	ASSERT_EQ(1, st(_metadata, fd).mappings);
	munmap(p, 2 * MiB);
	close(fd);
	unlink(mpath("tp"));
}

TEST(fork_shares_mapping)
{
	unsigned int order;

	for (order = 0; order <= 2; order++) {
		uint64_t ext = order_size[order];
		int fd = fresh(mpath("fork"), ext);
		char *p;
		pid_t pid;

		ASSERT_LE(0, fd);
		p = map(_metadata, fd, ext, PROT_READ | PROT_WRITE);
		p[0] = 'A';
		pid = fork();
		if (pid == 0) {
			ASSERT_EQ('A', p[0]);
			p[ext - 1] = 'B';
			p[0] = 'C';
			_exit(0);
		}
		wait_child_ok(_metadata, pid);
		ASSERT_EQ('C', p[0]);
		ASSERT_EQ('B', p[ext - 1]);
		ASSERT_EQ(1, st(_metadata, fd).mappings);
		ASSERT_EQ(order ? 2 : 1, st(_metadata, fd).pages);
		munmap(p, ext);
		close(fd);
	}
	unlink(mpath("fork"));
}

TEST(kill9_keeps_morsel)
{
	int fd = fresh(mpath("k9"), 1 * GiB), pfd[2];
	long pages0;
	char c;
	pid_t pid;
	int i;

	ASSERT_LE(0, fd);
	pages0 = counter(_metadata, "pages");
	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	if (pid == 0) {
		char *q = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);

		for (i = 0; i < 64; i++)
			q[(uint64_t)i * 3 * MiB] = (char)i + 1;
		ASSERT_EQ(1, write(pfd[1], "r", 1));
		for (;;)
			q[5] = q[5] + 1;
	}
	ASSERT_EQ(1, read(pfd[0], &c, 1));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	ASSERT_EQ(0, st(_metadata, fd).mappings);
	ASSERT_EQ(64, st(_metadata, fd).pages);
	ASSERT_EQ(64, counter(_metadata, "pages") - pages0);
	{
		char *p = map(_metadata, fd, 1 * GiB, PROT_READ);

		for (i = 0; i < 64; i++) {
			ASSERT_EQ((char)i + 1, p[(uint64_t)i * 3 * MiB]);
		}
		munmap(p, 1 * GiB);
	}
	close(fd);
	unlink(mpath("k9"));
	ASSERT_EQ(pages0, counter(_metadata, "pages"));
}

TEST(fd_passing)
{
	int sv[2], fd;
	pid_t pid;
	char *p;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	if (pid == 0) {
		int mfd = fresh(mpath("pass"), 1 * GiB);
		char *q;

		ASSERT_LE(0, mfd);
		q = map(_metadata, mfd, 1 * GiB, PROT_READ | PROT_WRITE);
		strcpy(q + 700 * MiB, "passed");
		munmap(q, 1 * GiB);
		unlink(mpath("pass"));	/* only the fd keeps it now */
		ASSERT_EQ(0, morsel_send_fd(sv[0], mfd));
		_exit(0);
	}
	fd = morsel_recv_fd(sv[1]);
	ASSERT_LE(0, fd);
	wait_child_ok(_metadata, pid);
	p = map(_metadata, fd, 1 * GiB, PROT_READ);
	ASSERT_STREQ("passed", p + 700 * MiB);
	munmap(p, 1 * GiB);
	close(fd);
	/* recv on a message without a descriptor */
	ASSERT_EQ(1, write(sv[0], "x", 1));
	ASSERT_EQ(-EBADMSG, morsel_recv_fd(sv[1]));
}

/* ---- lifetime ---- */

TEST(unlink_keeps_alive_until_last_ref)
{
	long morsels0 = counter(_metadata, "morsels");
	long pages0 = counter(_metadata, "pages");
	long tables0 = counter(_metadata, "tables");
	int fd = fresh(mpath("ul"), 2 * MiB);
	char *p;

	ASSERT_LE(0, fd);
	p = map(_metadata, fd, 2 * MiB, PROT_READ | PROT_WRITE);
	p[0] = 'u';
	ASSERT_EQ(0, unlink(mpath("ul")));
	ASSERT_NE(0, access(mpath("ul"), F_OK));
	close(fd);
	ASSERT_EQ('u', p[0]);
	p[1 * MiB] = 'v';
	ASSERT_EQ(morsels0 + 1, counter(_metadata, "morsels"));
	ASSERT_EQ(pages0 + 2, counter(_metadata, "pages"));
	munmap(p, 2 * MiB);
	ASSERT_EQ(morsels0, counter(_metadata, "morsels"));
	ASSERT_EQ(pages0, counter(_metadata, "pages"));
	ASSERT_EQ(tables0, counter(_metadata, "tables"));
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

/* 3 rounds of 4 processes and 4 threads faulting the same 2560 pages. */
TEST_F_TIMEOUT(slow, concurrent_faults, 300)
{
	int round;

	for (round = 0; round < 3; round++) {
		int fd = fresh(mpath("conc"), 1 * GiB), i, go[2];
		char *p;
		struct worker w[WORKERS];
		pthread_t th[WORKERS];
		pthread_barrier_t bar;
		pid_t pids[WORKERS];
		struct morsel_stat s;
		uint64_t own_end;

		ASSERT_LE(0, fd);
		p = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE);
		ASSERT_EQ(0, pipe(go));
		/* WORKERS processes (each with its own mapping) ... */
		for (i = 0; i < WORKERS; i++) {
			pids[i] = fork();
			if (pids[i] == 0) {
				char *q = map(_metadata, fd, 1 * GiB, PROT_READ | PROT_WRITE), c;

				close(go[1]);
				ASSERT_EQ(0, read(go[0], &c, 1));
				touch_pages(q, WORKERS + i);
				_exit(0);
			}
		}
		/* ... and WORKERS threads on the parent's mapping. */
		pthread_barrier_init(&bar, NULL, WORKERS + 1);
		for (i = 0; i < WORKERS; i++) {
			w[i] = (struct worker){ p, i, &bar };
			ASSERT_EQ(0, pthread_create(&th[i], NULL, thread_fn, &w[i]));
		}
		close(go[1]);			/* releases the processes */
		pthread_barrier_wait(&bar);	/* and the threads */
		for (i = 0; i < WORKERS; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
		}
		for (i = 0; i < WORKERS; i++)
			wait_child_ok(_metadata, pids[i]);
		close(go[0]);
		/* Every increment landed: no page was lost or doubled. */
		for (i = 0; i < SHARED_PAGES; i++) {
			int k;

			for (k = 0; k < 2 * WORKERS; k++) {
				ASSERT_EQ(1, p[(uint64_t)i * 2 * MiB + 8 * k])
					TH_LOG("page %d, worker %d", i, k);
			}
		}
		s = st(_metadata, fd);
		ASSERT_EQ(SHARED_PAGES + 2 * WORKERS * OWN_PAGES, s.pages);
		/* PTE tables: one per shared page (2 MiB apart) + the own pages'. */
		own_end = (uint64_t)(2 * WORKERS * OWN_PAGES) * 3 * PG;
		ASSERT_EQ(SHARED_PAGES + (own_end + 2 * MiB - 1) / (2 * MiB), s.tables[0]);
		ASSERT_EQ(1, s.tables[1]);
		munmap(p, 1 * GiB);
		close(fd);
	}
	unlink(mpath("conc"));
}

/* ---- leaks ---- */

/* 150 morsels, each mapped and unlinked, every tenth touched by a child. */
TEST_F_TIMEOUT(slow, no_leaks_after_many_morsels, 300)
{
	long pages0 = counter(_metadata, "pages"), tables0 = counter(_metadata, "tables");
	long morsels0 = counter(_metadata, "morsels");
	int i;

	for (i = 0; i < 150; i++) {
		unsigned int order = i % 3;
		uint64_t ext = order_size[order];
		int fd = fresh(mpath("leak"), ext - (i % 7));
		char *p;

		ASSERT_LE(0, fd);
		p = map(_metadata, fd, ext - (i % 7), PROT_READ | PROT_WRITE);
		p[0] = 1;
		p[(ext / 3) & ~(PG - 1)] = 2;
		if (i % 10 == 0) {
			pid_t pid = fork();

			if (pid == 0) {
				p[ext / 2] = 3;
				_exit(0);
			}
			wait_child_ok(_metadata, pid);
		}
		if (i % 2) {
			ASSERT_EQ(0, munmap(p, ext));
		}
		ASSERT_EQ(0, unlink(mpath("leak")));
		close(fd);
		if (!(i % 2)) {
			ASSERT_EQ(0, munmap(p, ext));	/* last ref is the VMA */
		}
	}
	ASSERT_EQ(pages0, counter(_metadata, "pages"));
	ASSERT_EQ(tables0, counter(_metadata, "tables"));
	ASSERT_EQ(morsels0, counter(_metadata, "morsels"));
}

TEST_HARNESS_MAIN
