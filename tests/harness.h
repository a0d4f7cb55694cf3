/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny test harness: every TEST() runs in its own child process with a
 * time limit; CHECK() failures print the location and fail the test.  The
 * last line is "N passed, N failed".
 */
#ifndef MORSEL_HARNESS_H
#define MORSEL_HARNESS_H

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct test {
	const char *name;
	void (*fn)(void);
	struct test *next;
};

static struct test *tests_head, **tests_tail = &tests_head;

#define TEST(name)							\
	static void name(void);						\
	static struct test name##_t = { #name, name, NULL };		\
	__attribute__((constructor)) static void name##_reg(void)	\
	{ *tests_tail = &name##_t; tests_tail = &name##_t.next; }	\
	static void name(void)

#define FAIL(...) do {							\
	fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);		\
	fprintf(stderr, __VA_ARGS__);					\
	fprintf(stderr, "\n");						\
	exit(1);							\
} while (0)

#define CHECK(cond) do {						\
	if (!(cond))							\
		FAIL("CHECK(%s) failed (errno %d: %s)", #cond, errno,	\
		     strerror(errno));					\
} while (0)

#define CHECK_EQ(a, b) do {						\
	long long _a = (long long)(a), _b = (long long)(b);		\
	if (_a != _b)							\
		FAIL("%s == %lld, expected %s == %lld", #a, _a, #b, _b);\
} while (0)

/* A system call that must fail with @err. */
#define CHECK_ERR(call, err) do {					\
	errno = 0;							\
	long _r = (long)(call);						\
	if (_r != -1 || errno != (err))					\
		FAIL("%s returned %ld errno %d (%s), expected %s",	\
		     #call, _r, errno, strerror(errno), #err);		\
} while (0)

static int harness_run(int argc, char **argv, unsigned int timeout)
{
	int passed = 0, failed = 0;
	struct test *t;

	for (t = tests_head; t; t = t->next) {
		int i, status, want = argc < 2;
		pid_t pid;

		for (i = 1; i < argc; i++)
			want |= !strcmp(argv[i], t->name);
		if (!want)
			continue;
		fflush(NULL);
		pid = fork();
		if (pid == 0) {
			alarm(timeout);
			t->fn();
			fflush(NULL);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			printf("ok     %s\n", t->name);
			passed++;
		} else {
			if (WIFSIGNALED(status))
				printf("FAILED %s (signal %d%s)\n", t->name,
				       WTERMSIG(status),
				       WTERMSIG(status) == SIGALRM ? ", timeout" : "");
			else
				printf("FAILED %s\n", t->name);
			failed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#endif /* MORSEL_HARNESS_H */
