/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the persistent-morselfs suites (pmem_test, pmem_pin_test) share:
 * the device ($MORSEL_PMEM, vm/run --pmem), paths under DIR, mounting it
 * (also after a sized mkfs),
 * `morsel fsck`, small files, free pages, and the fixture "pm": a freshly
 * formatted device mounted at DIR, which every test must leave in a state
 * fsck finds clean.  No locking: each TEST is a process.  Include it after
 * kselftest_harness.h and ksft_util.h.
 */
#ifndef MORSEL_PMEM_UTIL_H
#define MORSEL_PMEM_UTIL_H

#include <sys/statfs.h>

#define MiB (1024ULL * 1024)
#define PG 4096ULL
#define DIR "/tmp/pmem-test"

static inline const char *dev(void)
{
	const char *d = getenv("MORSEL_PMEM");

	return d && *d ? d : NULL;
}

static inline const char *p(const char *name)
{
	static char buf[4][512];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), DIR "/%s", name);
	return buf[i];
}

static inline int run(const char *cmd)
{
	int status = system(cmd);

	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* `morsel fsck ARGS DEV`'s exit code (its output is dropped). */
static inline int fsck(const char *args)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "tools/morsel fsck %s %s > /dev/null", args, dev());
	return run(cmd);
}

/* `morsel fsck -n` of the unmounted device: @want in its output? */
static inline int fsck_says(const char *want)
{
	char cmd[256], out[4096];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "tools/morsel fsck -n %s 2>&1", dev());
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	if (pclose(f) || !strstr(out, want)) {
		fprintf(stderr, "  fsck: %s", out);
		return -1;
	}
	return 0;
}

static inline int do_mount(void)
{
	char opts[128];

	snprintf(opts, sizeof(opts), "pmem=%s", dev());
	return mount("none", DIR, "morselfs", 0, opts);
}

static inline int remount(void)
{
	if (umount(DIR))
		return -1;
	return do_mount();
}

/* Unmount, `morsel mkfs -s @size` (a file system smaller than the device), mount. */
static inline int remkfs_sized(const char *size)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "tools/morsel mkfs -f -s %s %s > /dev/null", size, dev());
	if (umount(DIR) || run(cmd))
		return -1;
	return do_mount();
}

static inline void put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd >= 0) {
		if (write(fd, s, strlen(s)) < 0)
			perror(path);
		close(fd);
	}
}

static inline char *get(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static inline unsigned long long free_pages(void)
{
	struct statfs s;

	return statfs(DIR, &s) ? 0 : s.f_bfree;
}

FIXTURE(pm) {
	int unused;
};

FIXTURE_SETUP(pm)
{
	if (!dev())
		SKIP(return, "no $MORSEL_PMEM (vm/run --pmem FILE:SIZE)");
	mkdir(DIR, 0755);
	umount(DIR);
	ASSERT_EQ(0, run("tools/morsel mkfs -f $MORSEL_PMEM > /dev/null"));
	ASSERT_EQ(0, do_mount()) TH_LOG("mount: %s", strerror(errno));
}

FIXTURE_TEARDOWN(pm)
{
	if (dev()) {
		umount(DIR);
		/* Every test leaves a device fsck finds clean. */
		EXPECT_EQ(0, fsck("-n"));
	}
}

#endif /* MORSEL_PMEM_UTIL_H */
