// SPDX-License-Identifier: GPL-2.0
/*
 * tests/fuzzer/report.c: what the fuzzer says.  note() records each
 * operation in the process's trace ring (printed at once with --trace),
 * check() compares a call's result with the errno expected and tallies it
 * (--stats), mismatch() counts a mismatch and prints it with the recent
 * operations of the process that saw it; also the deterministic bytes
 * that writes use (pattern).
 *
 * Rules: this file owns the calling process's trace ring and print budget
 * (W.trace, W.tpos, W.printed) and, in the shared region, its worker's
 * mismatch count (added to atomically: a child adds to its parent's) and
 * call tally (written by the worker only, never by its child).  Nothing
 * here draws from the PRNG, so reporting never changes the sequence.
 */
#include "fuzz.h"

/* Deterministic non-trivial bytes for a write. */
void pattern(uint8_t *buf, uint64_t len, uint64_t pat)
{
	uint64_t i, x = 0;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = mix(pat + i) | 0x0101010101010101ULL;
		buf[i] = (uint8_t)(x >> (8 * (i % 8)));
	}
}

/* ---- reporting ---- */

void note(const char *fmt, ...)
{
	va_list ap;
	char *t = W.trace[W.tpos++ % TRACE];
	int n;

	n = snprintf(t, sizeof(W.trace[0]), "%s#%" PRIu64 " ",
		     W.in_child ? "child " : "", W.op);
	va_start(ap, fmt);
	vsnprintf(t + n, sizeof(W.trace[0]) - n, fmt, ap);
	va_end(ap);
	if (trace_on)
		printf("w%d %s\n", W.id, t);
}

void mismatch(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	int n, i;

	__atomic_add_fetch(&sh->w[W.id].mismatches, 1, __ATOMIC_SEQ_CST);
	if (W.printed++ >= MAX_PRINTED)
		return;
	n = snprintf(buf, sizeof(buf), "fuzz: MISMATCH w%d%s op %" PRIu64 ": ",
		     W.id, W.in_child ? " child" : "", W.op);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	n += snprintf(buf + n, sizeof(buf) - n, "\n  recent ops of w%d%s:\n",
		      W.id, W.in_child ? " (child)" : "");
	for (i = W.tpos > TRACE ? W.tpos - TRACE : 0; i < W.tpos &&
	     n < (int)sizeof(buf) - 220; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "    %s\n",
			      W.trace[i % TRACE]);
	fflush(stdout);
	if (write(1, buf, n) < 0)
		_exit(3);
}

void fatal(const char *what)
{
	fprintf(stderr, "fuzz: w%d: %s: %s\n", W.id, what, strerror(errno));
	_exit(2);
}

const char *ename(int e)
{
	static char buf[4][16];
	static int i;

	switch (e) {
	case 0: return "ok";
	case EINVAL: return "EINVAL";
	case EACCES: return "EACCES";
	case EBUSY: return "EBUSY";
	case EFBIG: return "EFBIG";
	case EBADF: return "EBADF";
	case EFAULT: return "EFAULT";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	case ENOSPC: return "ENOSPC";
	case ENOTTY: return "ENOTTY";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	}
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "errno%d", e);
	return buf[i];
}

/*
 * The call returned @ret (-1 with errno set on failure); @want is the
 * errno expected (0: success), @want2 another acceptable one (or 0).
 * errno is read here, after the arguments (the call among them) were
 * evaluated.  Returns 1 if the call succeeded.
 */
void tally(const char *what, int err)
{
	struct wstat *ws = &sh->w[W.id];
	int i;

	if (W.in_child)
		return;
	for (i = 0; i < TALLY && ws->tally[i].what[0]; i++)
		if (ws->tally[i].err == err &&
		    !strncmp(ws->tally[i].what, what, sizeof(ws->tally[i].what) - 1))
			break;
	if (i == TALLY)
		return;
	if (!ws->tally[i].what[0]) {
		snprintf(ws->tally[i].what, sizeof(ws->tally[i].what), "%s", what);
		ws->tally[i].err = err;
	}
	ws->tally[i].n++;
}

int check(const char *what, long ret, int want, int want2)
{
	int got = ret == -1 ? errno : 0;

	tally(what, got);
	if (got != want && !(want2 && got == want2))
		mismatch("%s: got %s, want %s%s%s", what, ename(got),
			 ename(want), want2 ? " or " : "",
			 want2 ? ename(want2) : "");
	return got == 0;
}
