// SPDX-License-Identifier: GPL-2.0
/*
 * make bench, the persistence family: persistent morselfs (morselfs -o
 * pmem=DEV on the emulated NVDIMM $MORSEL_PMEM, docs/persistence.md)
 * against the volatile one ($MORSEL_MNT) and against ext4 -o dax on the
 * same device, side by side in one VM run.  Prints raw samples as
 * bench/bench does (csv,<bench>,<variant>,<param>,<iteration>,<metric>,
 * <value>; times in ms), for bench/report (bench/report_persist.py).
 *
 *   ops    persist-ops, variants volatile and persistent, param = the size
 *          S in bytes: create a morsel of S bytes (create_ms),
 *          MORSEL_IOC_POPULATE it (populate_ms), mmap it MAP_SHARED and
 *          write one byte per page (map_ms), munmap (munmap_ms), close +
 *          unlink (unlink_ms, where its pages are freed).  The two variants
 *          alternate within each iteration, in alternating order.
 *   dax    persist-dax, param = the file's size: a file on ext4 -o dax
 *          against a persistent morsel on the same device, per round:
 *          ext4-dax (mkfs.ext4 -E stride=512,stripe_width=512: 2 MiB
 *          aligned extents, for 2 MiB faults where its layout allows;
 *          mount -o dax, fallocate + write), then morsel (morsel mkfs, mount -o pmem=, create +
 *          MORSEL_IOC_POPULATE + write).  Per repetition: until the whole
 *          range is accessible (map_ms: ext4 mmap(MAP_POPULATE), the morsel
 *          mmap without it (which writes its one mount entry), both then
 *          read the first byte), a read of one byte per page
 *          (access_ms), munmap (unmap_ms), the minor faults of map + access
 *          (faults).
 *   mount  persist-mount, variant clean, param = bytes populated (0: an
 *          empty file system, the fixed cost): mkfs, populate that much in
 *          morsels of at most 1 GiB (populate_ms, once), then umount and
 *          time mount (mount_ms; the walk of every tree that rebuilds the
 *          allocator) and umount (umount_ms) per iteration.  Runs last and
 *          leaves the largest size on the device, cleanly unmounted.
 *
 * The power-cut half of the mount benchmark needs two boots (one killed);
 * bench/persist_powercut runs them with these modes:
 *
 *   --powercut-fill N   first times the boot's first mount of what the
 *                       device holds, cleanly unmounted (variant
 *                       cold-clean, iteration N: the main run's mount
 *                       benchmark, which runs last, or the last recovery
 *                       boot leaves persist-mount's largest size), as the
 *                       recovering mount will be its boot's first; then
 *                       mkfs, mount, populate that size in named morsels,
 *                       write the marker file "filled", hold an unlinked
 *                       populated morsel open (an orphan for the recovery
 *                       to free) and wait for vm/run --powercut.
 *   --powercut-mount N  time the recovering mount (variant powercut,
 *                       iteration N; metrics mount_ms, bytes: the data the
 *                       mount found, complete: 1 if the cut came after the
 *                       population, orphans: from the kernel's "recovered"
 *                       line), then umount + mount of the same contents
 *                       (variant powercut-clean, iterations N * 1000 + k).
 *
 * usage: persist [--quick] [--only ops|mount|dax]
 *        persist [--quick] --powercut-fill N | --powercut-mount N
 *
 * Locking: none.  One single-threaded process; it is the only user of the
 * device and of its mount point (/tmp/bench-persist), which it mounts and
 * unmounts itself; every morsel it creates is gone (or the device
 * reformatted) before the next measurement.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "morsel.h"
#include "common.h"

#define PG	4096ULL
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)
#define PMNT	"/tmp/bench-persist"

static int quick;
static const char *vol;		/* $MORSEL_MNT: the volatile morselfs */
static const char *dev;		/* $MORSEL_PMEM: the NVDIMM */

static char *path_in(const char *dir, const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

/* Run a shell command (with $MORSEL_PMEM in its environment); exit on failure. */
static void run(const char *cmd)
{
	int status = system(cmd);

	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "persist: `%s` failed\n", cmd);
		exit(1);
	}
}

static int mounted;	/* what PMNT holds: 0 nothing, 1 morselfs, 2 ext4 */

static void pm_umount(void)
{
	if (mounted && umount(PMNT))
		die("umount " PMNT, errno);
	mounted = 0;
}

/* Mount the persistent morselfs at PMNT; returns the time mount(2) took. */
static double pm_mount(void)
{
	char opts[300];
	double t0;

	snprintf(opts, sizeof(opts), "pmem=%s", dev);
	t0 = now_ms();
	if (mount("none", PMNT, "morselfs", 0, opts))
		die("mount -t morselfs -o pmem=", errno);
	mounted = 1;
	return now_ms() - t0;
}

/* A fresh, empty persistent morselfs at PMNT. */
static void pm_fresh(void)
{
	pm_umount();
	run("tools/morsel mkfs -f \"$MORSEL_PMEM\" > /dev/null");
	pm_mount();
}

/*
 * A fresh ext4 with DAX on the same device at PMNT, made for it: a 2 MiB
 * stride (-E stride=512,stripe_width=512) so that mballoc aligns extents
 * for 2 MiB faults (PMD entries; with mkfs's defaults a 64 MiB file took
 * only 4 KiB faults here).  Inode tables and journal are zeroed by mkfs,
 * so no lazy-init thread runs during the measurements.
 */
static void ext4_fresh(void)
{
	pm_umount();
	run("mkfs.ext4 -F -q -b 4096 -E stride=512,stripe_width=512,lazy_itable_init=0,"
	    "lazy_journal_init=0,nodiscard \"$MORSEL_PMEM\" > /dev/null");
	if (mount(dev, PMNT, "ext4", 0, "dax=always"))
		die("mount -t ext4 -o dax", errno);
	mounted = 2;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Write @len bytes of @byte to @fd from offset 0. */
static void fill(int fd, uint64_t len, int byte)
{
	static char *buf;
	uint64_t off;

	if (!buf) {
		buf = malloc(MiB);
		if (!buf)
			die("malloc", ENOMEM);
	}
	memset(buf, byte, MiB);
	for (off = 0; off < len; off += MiB) {
		size_t c = len - off < MiB ? len - off : MiB;

		if (pwrite(fd, buf, c, off) != (ssize_t)c)
			die("write", errno);
	}
}

/* Sum of the first byte of every page of [p, p + len). */
static uint64_t read_pages(const char *p, uint64_t len)
{
	uint64_t o, sum = 0;

	for (o = 0; o < len; o += PG)
		sum += ((volatile const unsigned char *)p)[o];
	return sum;
}

/* Populated data pages on PMNT (st_blocks of the root directory's files), in bytes. */
static uint64_t data_bytes(void)
{
	DIR *d = opendir(PMNT);
	struct dirent *e;
	uint64_t sum = 0;
	struct stat st;

	if (!d)
		die(PMNT, errno);
	while ((e = readdir(d)))
		if (e->d_type == DT_REG && !stat(path_in(PMNT, e->d_name), &st))
			sum += (uint64_t)st.st_blocks * 512;
	closedir(d);
	return sum;
}

/* Blocks in use on PMNT (statfs). */
static uint64_t used_blocks(void)
{
	struct statfs sf;

	if (statfs(PMNT, &sf))
		die("statfs " PMNT, errno);
	return sf.f_blocks - sf.f_bfree;
}

/* ---- ops: persistent against volatile morsels ---- */

static void bench_ops(void)
{
	static const uint64_t full[] = { 4 * MiB, 64 * MiB, GiB };
	static const uint64_t small[] = { 1 * MiB, 4 * MiB, 32 * MiB };
	static const int full_iters[] = { 11, 7, 5 };
	uint64_t used0;
	int s;

	pm_fresh();
	/* The root directory's first page stays (directories do not shrink). */
	s = morsel_create(PMNT "/ops", PG, 0600);
	if (s < 0)
		die("morsel_create", -s);
	close(s);
	unlink(PMNT "/ops");
	used0 = used_blocks();
	for (s = 0; s < 3; s++) {
		uint64_t size = quick ? small[s] : full[s];
		uint64_t ext = morsel_order_extent(morsel_order_for_size(size));
		int iters = quick ? 3 : full_iters[s], it, k;

		for (it = 0; it < iters; it++) {
			for (k = 0; k < 2; k++) {
				int pers = k ^ (it & 1);
				const char *variant = pers ? "persistent" : "volatile";
				const char *path = path_in(pers ? PMNT : vol, "ops");
				double t0, t1, t2, t3, t4, t5;
				uint64_t o;
				char *p;
				int fd, err;

				unlink(path);
				t0 = now_ms();
				fd = morsel_create(path, size, 0600);
				if (fd < 0)
					die("morsel_create", -fd);
				t1 = now_ms();
				err = morsel_populate(fd, 0, size);
				if (err)
					die("morsel_populate", -err);
				t2 = now_ms();
				p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
				if (p == MAP_FAILED)
					die("mmap", errno);
				for (o = 0; o < size; o += PG)
					((volatile char *)p)[o] = 1;
				t3 = now_ms();
				if (munmap(p, ext))
					die("munmap", errno);
				t4 = now_ms();
				close(fd);
				if (unlink(path))
					die("unlink", errno);
				t5 = now_ms();
				emit("persist-ops", variant, size, it, "create_ms", t1 - t0);
				emit("persist-ops", variant, size, it, "populate_ms", t2 - t1);
				emit("persist-ops", variant, size, it, "map_ms", t3 - t2);
				emit("persist-ops", variant, size, it, "munmap_ms", t4 - t3);
				emit("persist-ops", variant, size, it, "unlink_ms", t5 - t4);
			}
		}
	}
	/* Freed tables wait for an RCU grace period: give them a second. */
	for (s = 0; s < 100 && used_blocks() != used0; s++)
		usleep(10000);
	if (used_blocks() != used0)
		printf("persist: ops: %llu blocks in use on the device after unlinking everything, %llu before\n",
		       (unsigned long long)used_blocks(), (unsigned long long)used0);
	pm_umount();
}

/* ---- mount: the walk per populated GiB ---- */

static uint64_t mount_sizes(int i)
{
	static const uint64_t full[] = { 0, GiB, 2 * GiB };
	static const uint64_t small[] = { 0, 32 * MiB, 64 * MiB };

	return quick ? small[i] : full[i];
}

/* Populate @bytes on PMNT in morsels "fillN" of at most 1 GiB; returns ms. */
static double populate_fs(uint64_t bytes)
{
	double t0 = now_ms();
	uint64_t off;
	int i;

	for (i = 0, off = 0; off < bytes; i++, off += GiB) {
		uint64_t len = bytes - off < GiB ? bytes - off : GiB;
		char name[32];
		int fd, err;

		snprintf(name, sizeof(name), "fill%d", i);
		fd = morsel_create(path_in(PMNT, name), len, 0600);
		if (fd < 0)
			die("morsel_create", -fd);
		err = morsel_populate(fd, 0, len);
		if (err)
			die("morsel_populate", -err);
		close(fd);
	}
	return now_ms() - t0;
}

static void bench_mount(void)
{
	int iters = quick ? 3 : 7, s, it;

	for (s = 0; s < 3; s++) {
		uint64_t bytes = mount_sizes(s);

		pm_fresh();
		emit("persist-mount", "clean", bytes, 0, "populate_ms", populate_fs(bytes));
		if (data_bytes() != bytes)
			printf("persist: mount: %llu bytes populated, %llu asked for\n",
			       (unsigned long long)data_bytes(), (unsigned long long)bytes);
		for (it = 0; it < iters; it++) {
			double t0 = now_ms(), t1;

			pm_umount();
			t1 = now_ms();
			emit("persist-mount", "clean", bytes, it, "umount_ms", t1 - t0);
			emit("persist-mount", "clean", bytes, it, "mount_ms", pm_mount());
		}
		if (data_bytes() != bytes)
			printf("persist: mount: %llu bytes found after the mounts, %llu populated\n",
			       (unsigned long long)data_bytes(), (unsigned long long)bytes);
	}
	pm_umount();
}

/* ---- dax: a large persistent morsel against ext4 -o dax ---- */

static void dax_measure(int fd, uint64_t size, int morsel, int iter)
{
	const char *variant = morsel ? "morsel" : "ext4-dax";
	uint64_t ext = morsel ? morsel_order_extent(morsel_order_for_size(size)) : size;
	double t0, t1, t2, t3;
	long f0, f1;
	char *p;

	f0 = minflt();
	t0 = now_ms();
	p = mmap(NULL, size, PROT_READ, MAP_SHARED | (morsel ? 0 : MAP_POPULATE), fd, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	if (((volatile const char *)p)[0] != 7)
		die("first byte", EIO);
	t1 = now_ms();
	if (read_pages(p, size) != 7 * (size / PG))
		die("mapped data", EIO);
	t2 = now_ms();
	f1 = minflt();
	if (munmap(p, ext))
		die("munmap", errno);
	t3 = now_ms();
	emit("persist-dax", variant, size, iter, "map_ms", t1 - t0);
	emit("persist-dax", variant, size, iter, "access_ms", t2 - t1);
	emit("persist-dax", variant, size, iter, "unmap_ms", t3 - t2);
	emit("persist-dax", variant, size, iter, "faults", (double)(f1 - f0));
}

static void bench_dax(void)
{
	uint64_t size = quick ? 64 * MiB : GiB;
	int rounds = quick ? 2 : 3, reps = 3, r, v, k;

	for (r = 0; r < rounds; r++) {
		for (v = 0; v < 2; v++) {
			struct statx stx;
			int fd, err;

			if (!v) {
				ext4_fresh();
				fd = open(PMNT "/file", O_RDWR | O_CREAT | O_TRUNC, 0600);
				if (fd < 0)
					die(PMNT "/file", errno);
				if (fallocate(fd, 0, 0, size))
					die("fallocate", errno);
				fill(fd, size, 7);
				if (fsync(fd))
					die("fsync", errno);
				if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx))
					die("statx", errno);
				if (!(stx.stx_attributes & STATX_ATTR_DAX))
					die("ext4 file without DAX", EINVAL);
			} else {
				pm_fresh();
				fd = morsel_create(PMNT "/file", size, 0600);
				if (fd < 0)
					die("morsel_create", -fd);
				err = morsel_populate(fd, 0, size);
				if (err)
					die("morsel_populate", -err);
				fill(fd, size, 7);
			}
			for (k = 0; k < reps; k++)
				dax_measure(fd, size, v, r * reps + k);
			close(fd);
		}
	}
	pm_umount();
}

/* ---- the power cut (bench/persist_powercut boots twice) ---- */

/* Orphans freed by the last mount, from the kernel's "recovered" line; -1 if none. */
static long recovered_orphans(void)
{
	int len = klogctl(10, NULL, 0);	/* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf, *line, *hit = NULL;
	long orphans = -1;

	if (len <= 0 || !(buf = malloc(len + 1)))
		return -1;
	len = klogctl(3, buf, len);	/* SYSLOG_ACTION_READ_ALL */
	if (len < 0)
		len = 0;
	buf[len] = 0;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, "morselfs: ") && strstr(line, " recovered: "))
			hit = line;
	if (hit)
		sscanf(strstr(hit, " recovered: "), " recovered: %ld orphans", &orphans);
	free(buf);
	return orphans;
}

static void powercut_fill(int cycle)
{
	uint64_t bytes = mount_sizes(2), len = 4 * MiB;
	double t0 = now_ms(), t;
	char opts[300];
	int fd, err;
	char *p;

	/*
	 * What the last boot left, cleanly unmounted: the first mount of this
	 * boot, as the recovering one will be in the next.
	 */
	snprintf(opts, sizeof(opts), "pmem=%s", dev);
	t = now_ms();
	if (!mount("none", PMNT, "morselfs", 0, opts)) {
		t = now_ms() - t;
		mounted = 1;
		if (recovered_orphans() < 0) {
			emit("persist-mount", "cold-clean", bytes, cycle, "mount_ms", t);
			emit("persist-mount", "cold-clean", bytes, cycle, "bytes", (double)data_bytes());
			printf("persist: powercut-fill: the first mount of the boot (clean, %llu MiB) took %.1f ms\n",
			       (unsigned long long)(data_bytes() / MiB), t);
		} else {
			printf("persist: powercut-fill: the first mount recovered or relocated; not a clean mount\n");
		}
	}
	pm_fresh();
	t = populate_fs(bytes);
	fd = open(PMNT "/filled", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || dprintf(fd, "%llu\n", (unsigned long long)bytes) < 0)
		die(PMNT "/filled", errno);
	close(fd);
	/* The orphan: populated, unlinked, still open when the power goes. */
	fd = morsel_create(PMNT "/orphan", len, 0600);
	if (fd < 0)
		die("morsel_create", -fd);
	err = morsel_populate(fd, 0, len);
	if (err)
		die("morsel_populate", -err);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap", errno);
	memset(p, 1, len);
	if (unlink(PMNT "/orphan"))
		die("unlink", errno);
	printf("persist: powercut-fill: %llu MiB populated in %.1f s (%.1f s since start); waiting for the power cut\n",
	       (unsigned long long)(bytes / MiB), t / 1e3, (now_ms() - t0) / 1e3);
	fflush(stdout);
	sleep(600);
	fprintf(stderr, "persist: powercut-fill: no power cut within 600 s\n");
	exit(1);
}

static void powercut_mount(int cycle)
{
	uint64_t bytes = mount_sizes(2), found;
	int iters = quick ? 3 : 5, complete, it;
	double ms;
	long orphans;

	ms = pm_mount();
	complete = !access(PMNT "/filled", F_OK);
	found = data_bytes();
	orphans = recovered_orphans();
	printf("persist: powercut-mount: recovering mount %.1f ms, %llu MiB of data found (%s), %ld orphans recovered\n",
	       ms, (unsigned long long)(found / MiB),
	       complete ? "the cut came after the population" : "THE CUT CAME DURING THE POPULATION",
	       orphans);
	emit("persist-mount", "powercut", bytes, cycle, "mount_ms", ms);
	emit("persist-mount", "powercut", bytes, cycle, "bytes", (double)found);
	emit("persist-mount", "powercut", bytes, cycle, "complete", complete);
	emit("persist-mount", "powercut", bytes, cycle, "orphans", (double)orphans);
	for (it = 0; it < iters; it++) {
		pm_umount();
		emit("persist-mount", "powercut-clean", bytes, cycle * 1000 + it, "mount_ms",
		     pm_mount());
	}
	if (data_bytes() != found)
		printf("persist: powercut-mount: %llu bytes after the clean mounts, %llu after the recovery\n",
		       (unsigned long long)data_bytes(), (unsigned long long)found);
	pm_umount();
}

int main(int argc, char **argv)
{
	const char *only = NULL;
	int fill_mode = 0, cycle = -1, i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else if (!strcmp(argv[i], "--powercut-fill") && i + 1 < argc)
			fill_mode = 1, cycle = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--powercut-mount") && i + 1 < argc)
			cycle = atoi(argv[++i]);
		else
			die("usage: persist [--quick] [--only ops|mount|dax] [--powercut-fill N | --powercut-mount N]",
			    EINVAL);
	}
	vol = getenv("MORSEL_MNT");
	dev = getenv("MORSEL_PMEM");
	if (!vol || !dev || !*dev)
		die("needs $MORSEL_MNT and $MORSEL_PMEM (vm/run --pmem FILE:SIZE)", EINVAL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (mkdir(PMNT, 0755) && errno != EEXIST)
		die(PMNT, errno);
	if (fill_mode)
		powercut_fill(cycle);
	if (cycle >= 0) {
		powercut_mount(cycle);
		return 0;
	}
#define RUN(name, fn) do {						\
	if (!only || !strcmp(only, name)) {				\
		double t = now_ms();					\
		fn();							\
		printf("persist: %s done in %.1f s\n", name,		\
		       (now_ms() - t) / 1e3);				\
	}								\
} while (0)
	RUN("ops", bench_ops);
	RUN("dax", bench_dax);
	RUN("mount", bench_mount);	/* last: leaves the device populated */
	return 0;
}
