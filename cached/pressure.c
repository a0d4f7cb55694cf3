// SPDX-License-Identifier: GPL-2.0
/*
 * morsel-cached's memory-pressure watch: gives cached files back when the
 * machine, or the memory cgroup the daemon runs in, runs short.
 *
 * The kernel cannot reclaim a morsel, so a cache of them must shrink by
 * itself before the OOM killer picks a process.  One thread waits in
 * poll(2) on:
 *   - a PSI trigger on /proc/pressure/memory ("some STALL WINDOW": tasks
 *     stalled on memory for STALL within WINDOW), and the same on the
 *     daemon's cgroup's memory.pressure when it runs in one;
 *   - that cgroup's memory.events, which the kernel notifies whenever a
 *     counter changes (high, max, oom: the limit was hit), at once.
 * A stall needs something to stall on: with no swap and little page
 * cache, reclaim finds nothing at once and the OOM killer follows within
 * milliseconds, before any PSI window fills (measured: a guest went from
 * free memory to an OOM kill with no trigger firing).  So the thread also
 * wakes on a timer whose period shrinks as memory does, as earlyoom
 * does: the time the headroom above the floor lasts at 4 GiB/s of
 * allocation, between 10 ms and 1 s.
 * On a wake-up it measures how much memory is available, in every domain
 * that can run out: the machine (MemAvailable of MemTotal) and each
 * cgroup from the daemon's up to the root's child (the lower of
 * memory.high and memory.max, less memory.current).  If any has less than
 * the --pressure-free floor (of its own size, by default 10 %), the index
 * evicts the least recently used files nothing holds until the largest
 * shortfall is covered (index_shrink).  A mapped or held file is never
 * evicted: what clients map stays valid.  Pressure that the cache cannot
 * relieve (everything held) leaves it as it is.
 *
 * Locking: the thread owns every descriptor and the state here; main()
 * writes the configuration before pressure_start() and only reads after.
 * index_shrink() takes the index lock itself.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cached.h"

#define CGROUP_ROOT	"/sys/fs/cgroup"
#define MAX_LEVELS	16	/* cgroups above the daemon's that we measure */

static struct pressure_config pc;
static pthread_t thread;
static int running;
/* The daemon's cgroup and its ancestors below the root, deepest first. */
static char levels[MAX_LEVELS][PATH_MAX];
static int nlevels;
static int wake_pipe[2] = { -1, -1 };

/* A decimal file (memory.current, memory.max: "max" is UINT64_MAX). */
static int read_u64(const char *dir, const char *name, uint64_t *v)
{
	char path[PATH_MAX + 32], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	if (!strncmp(buf, "max", 3)) {
		*v = UINT64_MAX;
		return 0;
	}
	*v = strtoull(buf, NULL, 10);
	return 0;
}

/* MemAvailable and MemTotal, bytes. */
static int meminfo(uint64_t *avail, uint64_t *total)
{
	unsigned long long kb;
	char line[128];
	int got = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -errno;
	while (got != 3 && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
			*total = kb << 10;
			got |= 1;
		} else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			*avail = kb << 10;
			got |= 2;
		}
	}
	fclose(f);
	return got == 3 ? 0 : -EIO;
}

/* The floor of a domain of @size bytes. */
static uint64_t floor_of(uint64_t size)
{
	if (pc.free_bytes)
		return pc.free_bytes < size ? pc.free_bytes : size;
	return size / 1000 * pc.free_permille;
}

/*
 * One domain: @avail bytes available, @size in all.  Updates the largest
 * shortfall below the floor (*@need, *@where) and the smallest headroom
 * above it (*@margin).
 */
static void domain(uint64_t avail, uint64_t size, const char *name,
		   uint64_t *need, const char **where, uint64_t *margin)
{
	uint64_t fl = floor_of(size);

	if (avail < fl) {
		if (fl - avail > *need) {
			*need = fl - avail;
			*where = name;
		}
		*margin = 0;
	} else if (avail - fl < *margin) {
		*margin = avail - fl;
	}
}

/*
 * How many bytes the tightest domain lacks to its floor (0: none does);
 * *@where names it, for the log; *@margin: the least headroom above a
 * floor.
 */
static uint64_t shortfall(const char **where, uint64_t *margin)
{
	uint64_t avail = 0, total = 0, cur, high, max, lim, need = 0;
	int i;

	*where = "the machine";
	*margin = UINT64_MAX;
	if (!meminfo(&avail, &total))
		domain(avail, total, "the machine", &need, where, margin);
	for (i = 0; i < nlevels; i++) {
		if (read_u64(levels[i], "memory.current", &cur) ||
		    read_u64(levels[i], "memory.high", &high) ||
		    read_u64(levels[i], "memory.max", &max))
			continue;
		lim = high < max ? high : max;
		if (lim == UINT64_MAX)
			continue;
		domain(cur < lim ? lim - cur : 0, lim,
		       levels[i] + strlen(CGROUP_ROOT), &need, where, margin);
	}
	return need;
}

/* The timer's next period: how long @margin lasts at 4 GiB/s, ms. */
static int period_ms(uint64_t margin)
{
	uint64_t ms = margin / ((4ULL << 30) / 1000);

	return ms < 10 ? 10 : ms > 1000 ? 1000 : (int)ms;
}

/*
 * The daemon's cgroup (cgroup v2: "0::/path" in /proc/self/cgroup) and
 * its ancestors below the root, if they have the memory controller.
 */
static void find_levels(void)
{
	char line[PATH_MAX], path[PATH_MAX + 16], *p;
	FILE *f = fopen("/proc/self/cgroup", "re");
	size_t n;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::/", 4))
			continue;
		n = strcspn(line + 3, "\n");
		line[3 + n] = 0;
		snprintf(path, sizeof(path), "%s%s", CGROUP_ROOT, line + 3);
		while (nlevels < MAX_LEVELS && strlen(path) > strlen(CGROUP_ROOT)) {
			char probe[PATH_MAX + 48];

			snprintf(probe, sizeof(probe), "%s/memory.current", path);
			if (!access(probe, R_OK))
				snprintf(levels[nlevels++], PATH_MAX, "%.*s",
					 PATH_MAX - 1, path);
			p = strrchr(path, '/');
			if (!p)
				break;
			*p = 0;
		}
	}
	fclose(f);
}

/*
 * A PSI trigger on @path: "some STALL WINDOW" (microseconds).  Windows
 * that are not whole multiples of 2 s need CAP_SYS_RESOURCE; without it
 * the window is rounded up, and said so.  The descriptor or -errno.
 */
static int psi_trigger(const char *path)
{
	uint64_t window = pc.window_us;
	char spec[64];
	int fd, tries;

	for (tries = 0; tries < 2; tries++) {
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		snprintf(spec, sizeof(spec), "some %" PRIu64 " %" PRIu64,
			 pc.stall_us < window ? pc.stall_us : window, window);
		if (write(fd, spec, strlen(spec) + 1) >= 0) {
			if (window != pc.window_us)
				log_msg("pressure: %s: window rounded up to %"
					PRIu64 " ms (no CAP_SYS_RESOURCE)",
					path, window / 1000);
			return fd;
		}
		close(fd);
		if (errno != EINVAL || window % 2000000 == 0)
			break;
		window = (window / 2000000 + 1) * 2000000;
	}
	return -errno;
}

/*
 * Evict what the tightest domain lacks.  Returns the timer's next period.
 * Logs only what it did (a wake-up with every floor met does nothing).
 */
static int relieve(const char *why)
{
	const char *where;
	uint64_t margin, need = shortfall(&where, &margin), freed;
	unsigned int n;

	if (need) {
		freed = index_shrink(need, &n);
		if (n)
			log_msg("pressure (%s): %s lacks %" PRIu64
				" MiB; evicted %u files, %" PRIu64 " MiB", why,
				where, need >> 20, n, freed >> 20);
		/* What the eviction left: measure again. */
		shortfall(&where, &margin);
	}
	return period_ms(margin);
}

static void *watch(void *arg)
{
	struct pollfd pf[4];
	const char *why[4];
	char events[PATH_MAX + 32], buf[512];
	int n = 0, i, fd, r, period;

	(void)arg;
	pf[n].fd = wake_pipe[0];
	pf[n].events = POLLIN;
	why[n++] = "stop";
	fd = psi_trigger("/proc/pressure/memory");
	if (fd >= 0) {
		pf[n].fd = fd;
		pf[n].events = POLLPRI;
		why[n++] = "psi";
	} else {
		log_msg("pressure: /proc/pressure/memory: %s (no PSI)",
			strerror(-fd));
	}
	if (nlevels) {
		snprintf(events, sizeof(events), "%s/memory.pressure", levels[0]);
		fd = psi_trigger(events);
		if (fd >= 0) {
			pf[n].fd = fd;
			pf[n].events = POLLPRI;
			why[n++] = "cgroup psi";
		}
		snprintf(events, sizeof(events), "%s/memory.events", levels[0]);
		fd = open(events, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			pf[n].fd = fd;
			pf[n].events = POLLPRI;
			why[n++] = "cgroup events";
		}
	}
	/* What the daemon may have started into. */
	period = relieve("start");
	for (;;) {
		r = poll(pf, n, period);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			log_msg("pressure: poll: %s", strerror(errno));
			break;
		}
		if (!r) {
			period = relieve("low memory");
			continue;
		}
		if (pf[0].revents)
			break;
		for (i = 1; i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (pf[i].revents & (POLLERR | POLLNVAL) &&
			    strcmp(why[i], "cgroup events")) {
				log_msg("pressure: %s gone", why[i]);
				close(pf[i].fd);
				pf[i].fd = -1;	/* poll ignores it now */
				continue;
			}
			/* memory.events: read it to take the notification. */
			if (!strcmp(why[i], "cgroup events") &&
			    pread(pf[i].fd, buf, sizeof(buf), 0) < 0)
				log_msg("pressure: memory.events: %s",
					strerror(errno));
			period = relieve(why[i]);
		}
	}
	for (i = 1; i < n; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	return NULL;
}

int pressure_start(const struct pressure_config *c)
{
	int err;

	pc = *c;
	if (!pc.window_us)
		return 0;
	find_levels();
	if (pipe2(wake_pipe, O_CLOEXEC))
		return -errno;
	err = pthread_create(&thread, NULL, watch, NULL);
	if (err)
		return -err;
	running = 1;
	return 0;
}

void pressure_stop(void)
{
	char c = 0;

	if (!running)
		return;
	if (write(wake_pipe[1], &c, 1) != 1)
		log_msg("pressure: stop: %s", strerror(errno));
	pthread_join(thread, NULL);
	running = 0;
}
