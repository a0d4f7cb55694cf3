// SPDX-License-Identifier: GPL-2.0
/*
 * numa_test: where a volatile morselfs puts its data pages on a NUMA
 * machine (issue 24; docs/design.md "Placement").
 *
 * - The guest: vm/run --numa 2 gives node 0 every CPU and node 1 only
 *   memory, as CXL memory appears.
 * - mpol= with tmpfs's syntax: parsed, refused when bad, shown in
 *   /proc/mounts, changed by remount for later allocations; refused on a
 *   persistent instance (pmem_test).
 * - Every way a page is allocated obeys it: a fault through a mapping,
 *   write(2), MORSEL_IOC_POPULATE, fallocate, 2 MiB leaves; bind, prefer,
 *   interleave and local; default follows the allocating task's own
 *   policy (set_mempolicy(2)).
 * - A file's own policy (MORSEL_IOC_SET_MPOL) wins over the instance's;
 *   INHERIT gives it back; GET_MPOL reads it; bad arguments get EINVAL,
 *   a read-only descriptor EBADF.
 * - MORSEL_IOC_NODE_PAGES agrees with move_pages(2)'s report; size=
 *   still limits.
 * - Migration (MORSEL_IOC_MIGRATE, morsel migrate): pages move while
 *   several processes map the file and keep writing and faulting, each
 *   seeing every write; 2 MiB leaves move whole; a pinned page stays and
 *   is counted, as is a page a clone shares; page-by-page mappings fault
 *   the new pages in; the memory cgroup charge stays with the cgroup that
 *   populated the pages; bad arguments get EINVAL; move_pages(2) with a
 *   target node cannot move morsel pages (EFAULT, EBUSY per page).
 * - Hot and cold (MORSEL_IOC_ACCESSED): one scan of a file's leaves
 *   sees what every process that maps it touched; clearing flushes the
 *   mappers, so the next access is seen again; a 2 MiB leaf has one bit;
 *   read(2) sets none; a migration keeps the bit; bad arguments get
 *   EINVAL, EBADF, EFAULT; MIGRATE with a bitmap moves only its pages.
 * - Tiering (tierd/morsel-tierd, driven round by round with --tick):
 *   the pages other processes keep touching end up on the CPU's node,
 *   within the budget, and follow when the hot set moves.
 *
 * Each test mounts its own instance at /tmp/morsel-numa and unmounts it.
 * Runs in the VM as root, in a boot with two nodes (tests/run-all).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"
#include "ksft_util.h"
#include "morsel_util.h"

#define NDIR	"/tmp/morsel-numa"
#define NPAGES	256		/* 1 MiB per check */

/* set_mempolicy(2)'s modes and mbind(2)'s flags, without libnuma's header. */
#define SYS_MPOL_BIND		2
#define SYS_MPOL_MF_STRICT	(1 << 0)
#define SYS_MPOL_MF_MOVE	(1 << 1)

/* Populated pages of [@off, @off + @len) on nodes 0 and 1. */
static void node_pages(struct __test_metadata *_metadata, int fd, uint64_t off,
		       uint64_t len, uint64_t out[2])
{
	struct morsel_node_pages np = { .offset = off, .length = len };

	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_NODE_PAGES, &np))
		TH_LOG("NODE_PAGES: %s", strerror(errno));
	out[0] = np.pages[0];
	out[1] = np.pages[1];
}

static int set_mpol(int fd, uint64_t mode, uint64_t nodes)
{
	struct morsel_mpol p = { .mode = mode, .nodes = nodes };

	return ioctl(fd, MORSEL_IOC_SET_MPOL, &p) ? -errno : 0;
}

/* "Node N MemUsed" of /sys/devices/system/node/nodeN/meminfo, in KiB. */
static long node_used_kb(int node)
{
	char path[64], line[128];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/meminfo",
		 node);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "MemUsed:"))
			kb = strtol(strchr(line, ':') + 1, NULL, 10);
	fclose(f);
	return kb;
}

/* The first line of @path, without its newline ("" if unreadable). */
static void first_line(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "r");

	out[0] = 0;
	if (f && fgets(out, len, f))
		out[strcspn(out, "\n")] = 0;
	if (f)
		fclose(f);
}

/* The mpol= token /proc/mounts shows for NDIR ("" if none). */
static void shown_mpol(char *out, size_t len)
{
	char opts[512], *tok, *save;

	proc_mount_opts(NDIR, opts, sizeof(opts));
	out[0] = 0;
	for (tok = strtok_r(opts, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strncmp(tok, "mpol=", 5))
			snprintf(out, len, "%s", tok);
}

/* Fill [@off, @off + @len) of @fd by way @how: fault, write, populate or fallocate. */
enum way { FAULT, WRITE, POPULATE, FALLOCATE, NR_WAYS };
static const char *const way_name[] = { "fault", "write", "populate", "fallocate" };

static void fill(struct __test_metadata *_metadata, int fd, uint64_t off,
		 uint64_t len, enum way how)
{
	static char buf[64 * 1024];
	uint64_t done;
	char *p;

	switch (how) {
	case FAULT:
		p = mmap(NULL, off + len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		for (done = 0; done < len; done += PG)
			p[off + done] = 1;
		munmap(p, off + len);
		break;
	case WRITE:
		memset(buf, 7, sizeof(buf));
		for (done = 0; done < len; done += sizeof(buf))
			ASSERT_EQ((ssize_t)sizeof(buf),
				  pwrite(fd, buf, sizeof(buf), off + done));
		break;
	case POPULATE:
		ASSERT_EQ(0, morsel_range_ioctl(fd, MORSEL_IOC_POPULATE, off, len, 0));
		break;
	default:
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_KEEP_SIZE, off, len))
			TH_LOG("fallocate: %s", strerror(errno));
		break;
	}
}

TEST(guest_has_a_memory_node_without_cpus)
{
	char s[64];

	first_line("/sys/devices/system/node/has_memory", s, sizeof(s));
	ASSERT_STREQ("0-1", s);
	first_line("/sys/devices/system/node/has_cpu", s, sizeof(s));
	ASSERT_STREQ("0", s);
	first_line("/sys/devices/system/node/node1/cpulist", s, sizeof(s));
	ASSERT_STREQ("", s);
	ASSERT_LT(0, node_used_kb(1));
}

TEST(mpol_parsed_and_shown_as_tmpfs_does)
{
	static const char *const cases[][2] = {
		{ "mpol=default", "" },
		{ "mpol=prefer:1", "mpol=prefer:1" },
		{ "mpol=prefer", "mpol=local" },
		{ "mpol=bind:0-1", "mpol=bind:0-1" },
		{ "mpol=bind:1,0", "mpol=bind:0-1" },
		{ "mpol=bind=static:1", "mpol=bind=static:1" },
		{ "mpol=interleave", "mpol=interleave:0-1" },
		{ "mpol=interleave=relative:0-1", "mpol=interleave=relative:0-1" },
		{ "mpol=local", "mpol=local" },
		{ "size=8m,mpol=bind:0,mpol=bind:1", "mpol=bind:1" },
		{ "mpol=bind:1,0,size=8m", "mpol=bind:0-1" },
	};
	char shown[128];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		ASSERT_EQ(0, mount_instance(NDIR, cases[i][0]))
			TH_LOG("%s: %s", cases[i][0], strerror(errno));
		shown_mpol(shown, sizeof(shown));
		EXPECT_STREQ(cases[i][1], shown) TH_LOG("mounted with %s", cases[i][0]);
		umount2(NDIR, 0);
	}
}

TEST(bad_mpol_refused)
{
	static const char *const bad[] = {
		"mpol=bind", "mpol=bind:", "mpol=bind:2", "mpol=bind:9",
		"mpol=bind:1-0", "mpol=prefer:0-1", "mpol=prefer:0,1",
		"mpol=local:0", "mpol=default:0", "mpol=default=static",
		"mpol=interleave=bogus:0", "mpol=interleave:0-7", "mpol=nope",
		"mpol=",
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		errno = 0;
		EXPECT_EQ(-1, mount_instance(NDIR, bad[i])) TH_LOG("%s mounted", bad[i]);
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s: %s", bad[i], strerror(errno));
		umount2(NDIR, 0);
	}
}

/* Every way of allocating puts every page on the bound node, 0 and 1. */
TEST(bind_places_every_allocation)
{
	uint64_t n[2];
	char opts[32];
	int node, fd;
	enum way w;

	for (node = 0; node < 2; node++) {
		snprintf(opts, sizeof(opts), "mpol=bind:%d", node);
		fd = instance_with_file(_metadata, NDIR, opts, NR_WAYS * NPAGES * PG);
		for (w = 0; w < NR_WAYS; w++) {
			fill(_metadata, fd, w * NPAGES * PG, NPAGES * PG, w);
			node_pages(_metadata, fd, w * NPAGES * PG, NPAGES * PG, n);
			EXPECT_EQ(NPAGES, n[node]) TH_LOG("%s, bind:%d", way_name[w], node);
			EXPECT_EQ(0, n[!node]) TH_LOG("%s, bind:%d", way_name[w], node);
		}
		instance_done(NDIR, fd);
	}
}

TEST(prefer_and_local_place_on_their_node)
{
	uint64_t n[2];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=prefer:1", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, WRITE);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[1]);
	instance_done(NDIR, fd);
	/* The CPUs are all node 0's. */
	fd = instance_with_file(_metadata, NDIR, "mpol=local", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	instance_done(NDIR, fd);
}

TEST(interleave_alternates_pages_and_2m_leaves)
{
	struct morsel_stat s;
	uint64_t n[2];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=interleave:0-1", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0] + n[1]);
	EXPECT_GE(1, llabs((long long)n[0] - (long long)n[1]))
		TH_LOG("node 0: %llu, node 1: %llu", (unsigned long long)n[0],
		       (unsigned long long)n[1]);
	instance_done(NDIR, fd);

	fd = instance_with_file(_metadata, NDIR, "mpol=interleave,huge=always", 8 * MiB);
	fill(_metadata, fd, 0, 8 * MiB, FAULT);
	s = st(_metadata, fd);
	ASSERT_EQ(4, s.huge);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(1024, n[0]);
	EXPECT_EQ(1024, n[1]);
	instance_done(NDIR, fd);
}

TEST(huge_leaves_follow_bind)
{
	uint64_t n[2];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:1,huge=always", 4 * MiB);
	fill(_metadata, fd, 0, 4 * MiB, WRITE);
	EXPECT_EQ(2, st(_metadata, fd).huge);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(1024, n[1]);
	EXPECT_EQ(0, n[0]);
	instance_done(NDIR, fd);
}

TEST(remount_places_later_allocations)
{
	char shown[64];
	uint64_t n[2];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", 2 * NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, WRITE);
	ASSERT_EQ(0, mount("none", NDIR, NULL, MS_REMOUNT, "mpol=bind:1"))
		TH_LOG("remount: %s", strerror(errno));
	shown_mpol(shown, sizeof(shown));
	EXPECT_STREQ("mpol=bind:1", shown);
	fill(_metadata, fd, NPAGES * PG, NPAGES * PG, WRITE);
	node_pages(_metadata, fd, 0, NPAGES * PG, n);
	EXPECT_EQ(NPAGES, n[0]);
	node_pages(_metadata, fd, NPAGES * PG, NPAGES * PG, n);
	EXPECT_EQ(NPAGES, n[1]);
	/* A remount without mpol= keeps it; a bad one changes nothing. */
	ASSERT_EQ(0, mount("none", NDIR, NULL, MS_REMOUNT, "size=64m"));
	shown_mpol(shown, sizeof(shown));
	EXPECT_STREQ("mpol=bind:1", shown);
	EXPECT_EQ(-1, mount("none", NDIR, NULL, MS_REMOUNT, "mpol=bind:5"));
	EXPECT_EQ(EINVAL, errno);
	shown_mpol(shown, sizeof(shown));
	EXPECT_STREQ("mpol=bind:1", shown);
	ASSERT_EQ(0, mount("none", NDIR, NULL, MS_REMOUNT, "mpol=default"));
	shown_mpol(shown, sizeof(shown));
	EXPECT_STREQ("", shown);
	instance_done(NDIR, fd);
}

TEST(file_policy_wins_over_the_instance)
{
	struct morsel_mpol got = { 0 };
	uint64_t n[2];
	int fd, other;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", 2 * NPAGES * PG);
	other = morsel_create(path_in(NDIR, "other"), NPAGES * PG, 0644);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_GET_MPOL, &got));
	EXPECT_EQ(MORSEL_MPOL_INHERIT, got.mode);
	ASSERT_EQ(0, set_mpol(fd, MORSEL_MPOL_BIND, 1 << 1));
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_GET_MPOL, &got));
	EXPECT_EQ(MORSEL_MPOL_BIND, got.mode);
	EXPECT_EQ(1 << 1, got.nodes);
	fill(_metadata, fd, 0, NPAGES * PG, FAULT);
	fill(_metadata, other, 0, NPAGES * PG, FAULT);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[1]);
	node_pages(_metadata, other, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	/* INHERIT: the instance's again, for later pages; old ones stay. */
	ASSERT_EQ(0, set_mpol(fd, MORSEL_MPOL_INHERIT, 0));
	fill(_metadata, fd, NPAGES * PG, NPAGES * PG, POPULATE);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	EXPECT_EQ(NPAGES, n[1]);
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_GET_MPOL, &got));
	EXPECT_EQ(MORSEL_MPOL_INHERIT, got.mode);
	EXPECT_EQ(0, got.nodes);
	close(other);
	instance_done(NDIR, fd);
}

TEST(set_mpol_and_node_pages_refuse_bad_arguments)
{
	struct morsel_mpol p = { .mode = MORSEL_MPOL_BIND, .nodes = 1 };
	struct morsel_node_pages np = { 0 };
	int fd, ro;

	fd = instance_with_file(_metadata, NDIR, "", NPAGES * PG);
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_LOCAL + 1, 0));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_BIND, 0));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_PREFERRED, 3));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_PREFERRED, 0));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_LOCAL, 1));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_DEFAULT, 2));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_INHERIT, 1));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_BIND, 1 << 5));
	EXPECT_EQ(-EINVAL, set_mpol(fd, MORSEL_MPOL_INTERLEAVE, 1ULL << 63));
	p.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_SET_MPOL, &p));
	p.flags = 0;
	p.reserved[4] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_SET_MPOL, &p));
	ro = open(path_in(NDIR, "f"), O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, set_mpol(ro, MORSEL_MPOL_BIND, 1));
	/* Reading the policy and the placement needs no write access. */
	p.reserved[4] = 0;
	ASSERT_EQ(0, ioctl(ro, MORSEL_IOC_GET_MPOL, &p));
	ASSERT_EQ(0, ioctl(ro, MORSEL_IOC_NODE_PAGES, &np));
	np.offset = 1;
	ASSERT_ERRNO(EINVAL, ioctl(ro, MORSEL_IOC_NODE_PAGES, &np));
	np.offset = 0;
	np.length = 100;
	ASSERT_ERRNO(EINVAL, ioctl(ro, MORSEL_IOC_NODE_PAGES, &np));
	np.length = 0;
	np.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(ro, MORSEL_IOC_NODE_PAGES, &np));
	np.flags = 0;
	np.offset = -PG;
	np.length = 2 * PG;
	ASSERT_ERRNO(EINVAL, ioctl(ro, MORSEL_IOC_NODE_PAGES, &np));
	close(ro);
	instance_done(NDIR, fd);
}

/* mpol=default: the allocating task's set_mempolicy(2) decides. */
static void fill_bound_to(struct __test_metadata *_metadata, int fd, int node,
			  uint64_t off, enum way how)
{
	unsigned long mask = 1UL << node;
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		if (syscall(SYS_set_mempolicy, SYS_MPOL_BIND, &mask, 8 * sizeof(mask)))
			_exit(2);
		fill(_metadata, fd, off, NPAGES * PG, how);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
}

TEST(default_follows_the_task_policy)
{
	uint64_t n[2];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=default", 4 * NPAGES * PG);
	fill_bound_to(_metadata, fd, 1, 0, WRITE);
	fill_bound_to(_metadata, fd, 1, NPAGES * PG, POPULATE);
	fill_bound_to(_metadata, fd, 0, 2 * NPAGES * PG, POPULATE);
	fill_bound_to(_metadata, fd, 1, 3 * NPAGES * PG, FAULT);
	node_pages(_metadata, fd, 0, 2 * NPAGES * PG, n);
	EXPECT_EQ(2 * NPAGES, n[1]);
	node_pages(_metadata, fd, 2 * NPAGES * PG, NPAGES * PG, n);
	EXPECT_EQ(NPAGES, n[0]);
	node_pages(_metadata, fd, 3 * NPAGES * PG, NPAGES * PG, n);
	EXPECT_EQ(NPAGES, n[1]);
	instance_done(NDIR, fd);
}

/*
 * The kernel's own view agrees: move_pages(2) without nodes reports where
 * the pages of a page-by-page mapping (MAP_PRIVATE, read) are.
 */
TEST(move_pages_query_agrees)
{
	void *addrs[NPAGES];
	int status[NPAGES], on[2] = { 0, 0 }, i;
	uint64_t n[2];
	char *p;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=interleave", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	p = mmap(NULL, NPAGES * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < NPAGES; i++) {
		read_byte(p + i * PG);
		addrs[i] = p + i * PG;
	}
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, NPAGES, addrs, NULL, status, 0))
		TH_LOG("move_pages: %s", strerror(errno));
	for (i = 0; i < NPAGES; i++) {
		ASSERT_TRUE(status[i] == 0 || status[i] == 1)
			TH_LOG("page %d: status %d", i, status[i]);
		on[status[i]]++;
	}
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(n[0], on[0]);
	EXPECT_EQ(n[1], on[1]);
	EXPECT_LT(0, on[0]);
	EXPECT_LT(0, on[1]);
	munmap(p, NPAGES * PG);
	instance_done(NDIR, fd);
}

TEST(size_limit_and_memcg_unchanged)
{
	static char buf[64 * 1024];
	uint64_t n[2], done = 0;
	ssize_t w;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "size=1m,mpol=bind:1", 0);
	memset(buf, 1, sizeof(buf));
	while ((w = pwrite(fd, buf, sizeof(buf), done)) > 0)
		done += w;
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_GE(1 * MiB, done);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(done / PG, n[1]);
	instance_done(NDIR, fd);
}

/*
 * mbind(2) on a mounted mapping sets the VMA's policy, which morsel
 * pages do not follow: the file's policy (or the instance's) decides
 * for every process mapping it.  On part of it: EINVAL, as mprotect on
 * part (the mounted VMA covers the morsel's extent and does not split).
 */
TEST(mbind_on_a_mapping_does_not_place_pages)
{
	unsigned long mask = 1UL << 1;
	uint64_t n[2];
	char *p;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	p = map(_metadata, fd, NPAGES * PG, PROT_READ | PROT_WRITE);
	ASSERT_EQ(2 * MiB, vma_len(_metadata, p));
	ASSERT_ERRNO(EINVAL, syscall(SYS_mbind, p, NPAGES * PG, SYS_MPOL_BIND,
				     &mask, 8 * sizeof(mask), 0));
	ASSERT_EQ(0, syscall(SYS_mbind, p, 2 * MiB, SYS_MPOL_BIND, &mask,
			     8 * sizeof(mask), 0)) TH_LOG("mbind: %s", strerror(errno));
	memset(p, 1, NPAGES * PG);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	munmap(p, NPAGES * PG);
	instance_done(NDIR, fd);
}

/* The morsel tool: mpol sets and prints the file's own, stat counts. */
TEST(cli)
{
	static const char want[] = "inherit\ninterleave:0-1\n";
	const char *f = NDIR "/f";
	char cmd[1024], out[4096];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", 2 * NPAGES * PG);
	snprintf(cmd, sizeof(cmd), "tools/morsel mpol %s && tools/morsel mpol %s interleave:0-1 && "
		 "tools/morsel mpol %s && tools/morsel populate %s 0 1M && "
		 "tools/morsel mpol %s bind:1 && tools/morsel populate %s 1M 1M && "
		 "tools/morsel stat %s", f, f, f, f, f, f, f);
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_EQ(0, strncmp(out, want, strlen(want))) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "nodes:    node 0 128 pages, node 1 384 pages\n"))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "mpol:     bind:1\n")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel mpol %s bind:5 2>&1", f);
	EXPECT_EQ(1, run_cmd(_metadata, cmd, out, sizeof(out)) >> 8) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "Invalid argument")) TH_LOG("%s", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel mpol %s sometimes 2>&1", f);
	EXPECT_EQ(2, run_cmd(_metadata, cmd, out, sizeof(out)) >> 8) TH_LOG("%s", out);
	instance_done(NDIR, fd);
}

static int migrate(int fd, uint64_t off, uint64_t len, int node,
		   struct morsel_migrate *r)
{
	memset(r, 0, sizeof(*r));
	r->offset = off;
	r->length = len;
	r->node = node;
	return ioctl(fd, MORSEL_IOC_MIGRATE, r) ? -errno : 0;
}

/* Byte @i of page @pg as fill() and check() expect it for round @round. */
static inline char stamp(uint64_t pg, uint64_t i, unsigned int round)
{
	return (char)(pg * 7 + i * 13 + round);
}

TEST(migrate_moves_pages_every_mapper_sees_them)
{
	struct morsel_migrate r;
	uint64_t n[2], i;
	char *p, *q;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", 4 * NPAGES * PG);
	p = map(_metadata, fd, 4 * NPAGES * PG, PROT_READ | PROT_WRITE);
	q = map(_metadata, fd, 4 * NPAGES * PG, PROT_READ | PROT_WRITE);
	for (i = 0; i < 2 * NPAGES * PG; i++)	/* half of it; the rest holes */
		p[i] = stamp(i / PG, i % PG, 0);
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(2 * NPAGES, r.moved);
	EXPECT_EQ(0, r.pinned + r.shared + r.failed);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(0, n[0]);
	EXPECT_EQ(2 * NPAGES, n[1]);
	for (i = 0; i < 2 * NPAGES * PG; i++)
		if (q[i] != stamp(i / PG, i % PG, 0))
			ASSERT_EQ(stamp(i / PG, i % PG, 0), q[i]) TH_LOG("byte %llu", (unsigned long long)i);
	/* A write through one mapping after the move reaches the other. */
	p[5 * PG + 1] = 42;
	EXPECT_EQ(42, q[5 * PG + 1]);
	/* Pages already on the node stay; and back, in part. */
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(0, r.moved);
	ASSERT_EQ(0, migrate(fd, NPAGES * PG, NPAGES * PG, 0, &r));
	EXPECT_EQ(NPAGES, r.moved);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	EXPECT_EQ(NPAGES, n[1]);
	EXPECT_EQ(42, q[5 * PG + 1]);
	EXPECT_EQ(NPAGES * 2, st(_metadata, fd).pages);
	munmap(p, 4 * NPAGES * PG);
	munmap(q, 4 * NPAGES * PG);
	instance_done(NDIR, fd);
}

/*
 * Writers in several processes store rounds of stamps into their own
 * pages (and fault holes in) and read them back, while the parent moves
 * the file between the nodes: no write may be lost, none may land in an
 * old page.
 */
#define WRITERS	3
#define MOVES	8

static int writer(char *p, volatile int *stop, int w, uint64_t pages)
{
	unsigned int round = 0;
	uint64_t pg, i;

	while (!*stop) {
		round++;
		for (pg = w; pg < pages; pg += WRITERS)
			for (i = 0; i < PG; i += 512)
				p[pg * PG + i] = stamp(pg, i, round);
		for (pg = w; pg < pages; pg += WRITERS)
			for (i = 0; i < PG; i += 512)
				if (p[pg * PG + i] != stamp(pg, i, round))
					return 1;
	}
	return 0;
}

TEST(migrate_under_writers_in_several_processes)
{
	const uint64_t pages = 2 * NPAGES;
	volatile int *stop;
	struct morsel_migrate r;
	pid_t pids[WRITERS];
	int fd, w, k, status;
	uint64_t moved = 0, n[2];
	char *p;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", pages * PG);
	stop = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, stop);
	*stop = 0;
	p = map(_metadata, fd, pages * PG, PROT_READ | PROT_WRITE);
	for (w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		ASSERT_LE(0, pids[w]);
		if (!pids[w])
			_exit(writer(p, stop, w, pages));
	}
	for (k = 0; k < MOVES; k++) {
		ASSERT_EQ(0, migrate(fd, 0, 0, (k + 1) % 2, &r));
		EXPECT_EQ(0, r.pinned + r.shared + r.failed);
		moved += r.moved;
	}
	*stop = 1;
	for (w = 0; w < WRITERS; w++) {
		ASSERT_EQ(pids[w], waitpid(pids[w], &status, 0));
		EXPECT_EQ(0, status) TH_LOG("writer %d saw a lost write", w);
	}
	EXPECT_LT(pages, moved);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(pages, n[0]);	/* the last move was to node 0 */
	munmap(p, pages * PG);
	munmap((void *)stop, PG);
	instance_done(NDIR, fd);
}

TEST(migrate_moves_2m_leaves_whole)
{
	struct morsel_migrate r;
	uint64_t n[2];
	char *p;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0,huge=always", 4 * MiB);
	p = map(_metadata, fd, 4 * MiB, PROT_READ | PROT_WRITE);
	memset(p, 3, 4 * MiB);
	ASSERT_EQ(2, st(_metadata, fd).huge);
	/* One page of the second leaf: that leaf moves. */
	ASSERT_EQ(0, migrate(fd, 3 * MiB, PG, 1, &r));
	EXPECT_EQ(512, r.moved);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(512, n[0]);
	EXPECT_EQ(512, n[1]);
	EXPECT_EQ(2, st(_metadata, fd).huge);
	EXPECT_EQ(3, p[2 * MiB]);
	EXPECT_EQ(3, p[4 * MiB - 1]);
	p[4 * MiB - 1] = 4;
	munmap(p, 4 * MiB);
	p = map(_metadata, fd, 4 * MiB, PROT_READ);
	EXPECT_EQ(4, p[4 * MiB - 1]);
	munmap(p, 4 * MiB);
	instance_done(NDIR, fd);
}

/* io_uring's registered buffers pin their pages for as long as they stay. */
static int pin_with_io_uring(struct __test_metadata *_metadata, void *buf, size_t len)
{
	struct io_uring_params prm = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int ring = syscall(__NR_io_uring_setup, 4, &prm);

	if (ring < 0)
		return ring;
	EXPECT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_REGISTER_BUFFERS, &iov, 1))
		TH_LOG("IORING_REGISTER_BUFFERS: %s", strerror(errno));
	return ring;
}

TEST(pinned_pages_stay_and_say_so)
{
	struct morsel_migrate r;
	uint64_t n[2];
	char *p;
	int fd, ring;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	p = map(_metadata, fd, NPAGES * PG, PROT_READ | PROT_WRITE);
	memset(p, 9, NPAGES * PG);
	ring = pin_with_io_uring(_metadata, p, 8 * PG);
	if (ring < 0)
		SKIP(goto out, "no io_uring in this kernel: %s", strerror(errno));
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(8, r.pinned);
	EXPECT_EQ(NPAGES - 8, r.moved);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(8, n[0]);
	EXPECT_EQ(9, p[0]);
	p[1] = 10;		/* the pinned page is still the file's */
	EXPECT_EQ(10, p[1]);
	ASSERT_EQ(0, syscall(__NR_io_uring_register, ring, IORING_UNREGISTER_BUFFERS, NULL, 0));
	close(ring);
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(8, r.moved);
	EXPECT_EQ(10, p[1]);
out:
	munmap(p, NPAGES * PG);
	instance_done(NDIR, fd);
}

/* Private and offset mappings map pages themselves: they fault the new ones. */
TEST(page_by_page_mappings_follow)
{
	struct morsel_migrate r;
	char *priv, *off, *cow;
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, WRITE);	/* bytes of 7 */
	priv = mmap(NULL, NPAGES * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	off = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 4 * PG);
	cow = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 8 * PG);
	ASSERT_NE(MAP_FAILED, priv);
	ASSERT_NE(MAP_FAILED, off);
	ASSERT_NE(MAP_FAILED, cow);
	EXPECT_EQ(7, priv[4 * PG]);
	cow[0] = 1;		/* a private copy: not the file's */
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(NPAGES, r.moved);
	EXPECT_EQ(0, r.pinned);
	off[0] = 5;		/* into the moved page */
	EXPECT_EQ(5, priv[4 * PG]);
	EXPECT_EQ(1, cow[0]);
	EXPECT_EQ(7, priv[8 * PG]);
	munmap(priv, NPAGES * PG);
	munmap(off, PG);
	munmap(cow, PG);
	instance_done(NDIR, fd);
}

TEST(a_clones_shared_pages_stay)
{
	struct morsel_migrate r;
	int fd, c;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, WRITE);
	c = morsel_create(path_in(NDIR, "c"), 0, 0644);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, ioctl(c, FICLONE, fd));
	fill(_metadata, c, 0, 16 * PG, WRITE);	/* these 16 become c's own */
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(16, r.moved);
	EXPECT_EQ(NPAGES - 16, r.shared);
	ASSERT_EQ(0, migrate(c, 0, 0, 1, &r));
	EXPECT_EQ(16, r.moved);
	EXPECT_EQ(NPAGES - 16, r.shared);
	close(c);
	instance_done(NDIR, fd);
}

TEST(migrate_refuses_bad_arguments)
{
	struct morsel_migrate r;
	int fd, ro;

	fd = instance_with_file(_metadata, NDIR, "", NPAGES * PG);
	EXPECT_EQ(-EINVAL, migrate(fd, 0, 0, 2, &r));	/* no memory there */
	EXPECT_EQ(-EINVAL, migrate(fd, 0, 0, 64, &r));
	EXPECT_EQ(-EINVAL, migrate(fd, 1, PG, 1, &r));
	EXPECT_EQ(-EINVAL, migrate(fd, 0, 100, 1, &r));
	EXPECT_EQ(-EINVAL, migrate(fd, 0, NPAGES * PG + PG, 1, &r));
	EXPECT_EQ(-EINVAL, migrate(fd, -PG, 2 * PG, 1, &r));
	memset(&r, 0, sizeof(r));
	r.node = 1;
	r.flags = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MIGRATE, &r));
	r.flags = 0;
	r.reserved[2] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MIGRATE, &r));
	ro = open(path_in(NDIR, "f"), O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, migrate(ro, 0, 0, 1, &r));
	close(ro);
	/* An empty range, or an empty file: nothing to move. */
	EXPECT_EQ(0, migrate(fd, 0, 0, 1, &r));
	EXPECT_EQ(0, r.moved);
	instance_done(NDIR, fd);
}

/*
 * move_pages(2) with a target node cannot move a morsel's pages: a
 * mounted mapping is VM_PFNMAP (EFAULT per page), a page-by-page one maps
 * pages that are on no LRU list (EBUSY).  The pages stay.
 */
TEST(move_pages_cannot_move_morsel_pages)
{
	int nodes[4] = { 1, 1, 1, 1 }, status[4];
	void *addrs[4];
	uint64_t n[2];
	char *mounted, *paged;
	int fd, i;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, WRITE);
	mounted = map(_metadata, fd, NPAGES * PG, PROT_READ | PROT_WRITE);
	for (i = 0; i < 4; i++) {
		read_byte(mounted + i * PG);
		addrs[i] = mounted + i * PG;
	}
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 4, addrs, nodes, status, 0))
		TH_LOG("move_pages: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(-EFAULT, status[i]);
	paged = mmap(NULL, NPAGES * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_NE(MAP_FAILED, paged);
	for (i = 0; i < 4; i++) {
		read_byte(paged + i * PG);
		addrs[i] = paged + i * PG;
	}
	ASSERT_EQ(0, syscall(SYS_move_pages, 0, 4, addrs, nodes, status, 0))
		TH_LOG("move_pages: %s", strerror(errno));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(-EBUSY, status[i]);
	/* mbind(MPOL_MF_MOVE) and migrate_pages(2) leave them too. */
	{
		unsigned long to = 1UL << 1, from = 1UL << 0;
		long left;

		EXPECT_EQ(0, syscall(SYS_mbind, paged, NPAGES * PG, SYS_MPOL_BIND, &to,
				     8 * sizeof(to), SYS_MPOL_MF_MOVE))
			TH_LOG("mbind: %s", strerror(errno));
		ASSERT_ERRNO(EIO, syscall(SYS_mbind, paged, NPAGES * PG, SYS_MPOL_BIND, &to,
					  8 * sizeof(to), SYS_MPOL_MF_MOVE | SYS_MPOL_MF_STRICT));
		left = syscall(SYS_migrate_pages, 0, 8 * sizeof(from), &from, &to);
		EXPECT_LE(0, left) TH_LOG("migrate_pages: %s", strerror(errno));
	}
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(NPAGES, n[0]);
	munmap(mounted, NPAGES * PG);
	munmap(paged, NPAGES * PG);
	instance_done(NDIR, fd);
}

/*
 * morsel migrate prints what moved (exit status 1 when some stayed);
 * morsel accessed what was accessed, on each node.
 */
TEST(cli_migrate)
{
	const char *f = NDIR "/f";
	char cmd[512], out[1024];
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	snprintf(cmd, sizeof(cmd), "tools/morsel migrate %s 0 512K 1", f);
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_STREQ("moved 128, pinned 0, shared 0, failed 0\n", out);
	snprintf(cmd, sizeof(cmd), "tools/morsel migrate %s 0 0 5 2>&1", f);
	EXPECT_EQ(1, run_cmd(_metadata, cmd, out, sizeof(out)) >> 8) TH_LOG("%s", out);
	/* Fresh leaves are accessed: all of them, on the nodes they are on. */
	snprintf(cmd, sizeof(cmd), "tools/morsel accessed --clear %s && tools/morsel accessed %s",
		 f, f);
	ASSERT_EQ(0, run_cmd(_metadata, cmd, out, sizeof(out))) TH_LOG("%s", out);
	EXPECT_STREQ("accessed 256 of 256 pages (cleared)\n"
		     "node 0: 128 accessed, 0 not\n"
		     "node 1: 128 accessed, 0 not\n"
		     "accessed 0 of 256 pages\n"
		     "node 0: 0 accessed, 128 not\n"
		     "node 1: 0 accessed, 128 not\n", out);
	instance_done(NDIR, fd);
}

static int scan(int fd, uint64_t off, uint64_t len, uint64_t *bitmap,
		int clear, struct morsel_accessed *a)
{
	memset(a, 0, sizeof(*a));
	a->offset = off;
	a->length = len;
	a->bitmap = (uintptr_t)bitmap;
	a->flags = clear ? MORSEL_ACCESSED_CLEAR : 0;
	return ioctl(fd, MORSEL_IOC_ACCESSED, a) ? -errno : 0;
}

static int bit(const uint64_t *bm, unsigned int i)
{
	return bm[i / 64] >> (i % 64) & 1;
}

/* A child that maps @fd and reads (or writes) pages [@first, @last). */
static void touch_in_child(struct __test_metadata *_metadata, int fd,
			   uint64_t len, int first, int last, int write)
{
	pid_t pid = fork();
	int status, i;

	ASSERT_LE(0, pid);
	if (!pid) {
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		if (p == MAP_FAILED)
			_exit(1);
		for (i = first; i < last; i++)
			if (write)
				p[i * PG] = 1;
			else
				read_byte(p + i * PG);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
}

TEST(accessed_bits_cover_every_mapper)
{
	uint64_t bm[NPAGES / 64];
	struct morsel_accessed a;
	char buf[16];
	char *p;
	int fd, i;

	fd = instance_with_file(_metadata, NDIR, "", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES / 2 * PG, POPULATE);
	p = map(_metadata, fd, NPAGES * PG, PROT_READ | PROT_WRITE);
	read_byte(p + 40 * PG);		/* in this process's TLB now */
	/* Fresh leaves are accessed; clearing reads them once. */
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 1, &a));
	EXPECT_EQ(NPAGES / 2, a.populated);
	EXPECT_EQ(NPAGES / 2, a.accessed);
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 0, &a));
	EXPECT_EQ(0, a.accessed);
	/* Two other processes, one read and one write, and this one again. */
	touch_in_child(_metadata, fd, NPAGES * PG, 0, 10, 0);
	touch_in_child(_metadata, fd, NPAGES * PG, 20, 30, 1);
	read_byte(p + 40 * PG);
	ASSERT_EQ(0, pread(fd, buf, sizeof(buf), 50 * PG) < 0);	/* not seen */
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 1, &a));
	EXPECT_EQ(21, a.accessed);
	for (i = 0; i < NPAGES; i++)
		EXPECT_EQ(i < 10 || (i >= 20 && i < 30) || i == 40, bit(bm, i))
			TH_LOG("page %d", i);
	/* A page faulted in past the populated half is accessed, counted. */
	p[200 * PG] = 1;
	ASSERT_EQ(0, scan(fd, 128 * PG, 128 * PG, bm, 0, &a));
	EXPECT_EQ(1, a.populated);
	EXPECT_EQ(1, a.accessed);
	EXPECT_EQ(1, bit(bm, 72));
	/* Counts alone. */
	ASSERT_EQ(0, scan(fd, 0, 0, NULL, 0, &a));
	EXPECT_EQ(NPAGES / 2 + 1, a.populated);
	munmap(p, NPAGES * PG);
	instance_done(NDIR, fd);
}

TEST(accessed_one_bit_per_2m_leaf_kept_by_migration)
{
	uint64_t bm[1024 / 64];
	struct morsel_accessed a;
	struct morsel_migrate r;
	char *p;
	int fd, i;

	fd = instance_with_file(_metadata, NDIR, "huge=always,mpol=bind:0", 4 * MiB);
	p = map(_metadata, fd, 4 * MiB, PROT_READ | PROT_WRITE);
	memset(p, 1, 4 * MiB);
	ASSERT_EQ(2, st(_metadata, fd).huge);
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 1, &a));
	EXPECT_EQ(1024, a.accessed);
	read_byte(p + 3 * MiB);
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 0, &a));
	EXPECT_EQ(512, a.accessed);
	for (i = 0; i < 1024; i++)
		ASSERT_EQ(i >= 512, bit(bm, i)) TH_LOG("page %d", i);
	/* Moved pages keep what the bit said: hot stays hot, cold cold. */
	ASSERT_EQ(0, migrate(fd, 0, 0, 1, &r));
	ASSERT_EQ(1024, r.moved);
	ASSERT_EQ(0, scan(fd, 0, 0, bm, 0, &a));
	EXPECT_EQ(512, a.accessed);
	EXPECT_EQ(0, bit(bm, 0));
	EXPECT_EQ(1, bit(bm, 1023));
	munmap(p, 4 * MiB);
	instance_done(NDIR, fd);
}

TEST(accessed_refuses_bad_arguments)
{
	struct morsel_accessed a;
	int fd, ro;

	fd = instance_with_file(_metadata, NDIR, "", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	EXPECT_EQ(-EINVAL, scan(fd, 1, PG, NULL, 0, &a));
	EXPECT_EQ(-EINVAL, scan(fd, 0, 100, NULL, 0, &a));
	EXPECT_EQ(-EINVAL, scan(fd, 0, NPAGES * PG + PG, NULL, 0, &a));
	EXPECT_EQ(-EINVAL, scan(fd, -PG, 2 * PG, NULL, 0, &a));
	EXPECT_EQ(-EFAULT, scan(fd, 0, 0, (uint64_t *)8, 0, &a));
	memset(&a, 0, sizeof(a));
	a.flags = 2;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_ACCESSED, &a));
	a.flags = 0;
	a.reserved[2] = 1;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_ACCESSED, &a));
	ro = open(path_in(NDIR, "f"), O_RDONLY);
	ASSERT_LE(0, ro);
	EXPECT_EQ(-EBADF, scan(ro, 0, 0, NULL, 0, &a));
	close(ro);
	instance_done(NDIR, fd);
}

TEST(migrate_with_a_bitmap_moves_only_its_pages)
{
	uint64_t bm[NPAGES / 64] = { 0 }, n[2];
	struct morsel_migrate r = { 0 };
	int fd;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", NPAGES * PG);
	fill(_metadata, fd, 0, NPAGES * PG, POPULATE);
	bm[0] = 0xff;			/* pages 0-7 */
	bm[2] = 1ULL << 63;		/* page 191 */
	r.length = NPAGES * PG;
	r.node = 1;
	r.bitmap = (uintptr_t)bm;
	ASSERT_EQ(0, ioctl(fd, MORSEL_IOC_MIGRATE, &r)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(9, r.moved);
	node_pages(_metadata, fd, 0, 8 * PG, n);
	EXPECT_EQ(8, n[1]);
	node_pages(_metadata, fd, 191 * PG, PG, n);
	EXPECT_EQ(1, n[1]);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_EQ(9, n[1]);
	/* A bitmap needs a length, at most MORSEL_MIGRATE_BITMAP_MAX. */
	r.length = 0;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MIGRATE, &r));
	r.length = MORSEL_MIGRATE_BITMAP_MAX + PG;
	ASSERT_ERRNO(EINVAL, ioctl(fd, MORSEL_IOC_MIGRATE, &r));
	r.length = NPAGES * PG;
	r.bitmap = 8;
	ASSERT_ERRNO(EFAULT, ioctl(fd, MORSEL_IOC_MIGRATE, &r));
	instance_done(NDIR, fd);
}

/*
 * Migration moves the memory cgroup charge with the pages: a cgroup that
 * populated a file keeps its charge when another task (here, outside
 * it) moves the pages, and the migrating task is charged nothing.
 */
TEST(migration_keeps_the_memcg_charge)
{
	const uint64_t size = 16 * MiB;
	struct morsel_migrate r;
	long a0, a1, b0, b1;
	int fd, status;
	pid_t pid;

	fresh_cgroup(_metadata, "numa-a");
	fresh_cgroup(_metadata, "numa-b");
	fd = instance_with_file(_metadata, NDIR, "mpol=bind:0", size);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(join_cgroup("numa-a") || morsel_populate(fd, 0, size) ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	a0 = cg_current("numa-a");
	b0 = cg_current("numa-b");
	EXPECT_LE((long)size, a0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(join_cgroup("numa-b") || migrate(fd, 0, 0, 1, &r) ||
		      r.moved != size / PG ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	a1 = cg_current("numa-a");
	b1 = cg_current("numa-b");
	TH_LOG("numa-a %ld -> %ld, numa-b %ld -> %ld", a0, a1, b0, b1);
	/* The old pages' charge went, the new ones' came: about even. */
	EXPECT_GE((long)(1 * MiB), labs(a1 - a0));
	EXPECT_GE((long)(1 * MiB), b1 - b0);
	instance_done(NDIR, fd);
	EXPECT_GE(a1 - (long)size + (long)(1 * MiB), cg_current("numa-a"));
	rmdir("/sys/fs/cgroup/numa-a");
	rmdir("/sys/fs/cgroup/numa-b");
}

/* One round of the daemon: a tick in, its line out. */
static void tier_round(struct __test_metadata *_metadata, int tick, FILE *out,
		       char *line, size_t len)
{
	ASSERT_EQ(1, write(tick, "t", 1));
	ASSERT_NE(NULL, fgets(line, len, out));
}

static void touch_pages(char *p, int first, int last)
{
	int i;

	for (i = first; i < last; i++)
		read_byte(p + i * PG);
}

TEST(tierd_keeps_the_hottest_pages_on_the_cpu_node)
{
	const int pages = 2048, budget = 512;
	int in[2], outp[2], fd, k, status;
	char line[256];
	uint64_t n[2];
	FILE *out;
	pid_t pid;
	char *p;

	fd = instance_with_file(_metadata, NDIR, "mpol=bind:1", pages * PG);
	fill(_metadata, fd, 0, pages * PG, POPULATE);
	p = map(_metadata, fd, pages * PG, PROT_READ);
	ASSERT_EQ(0, pipe(in));
	ASSERT_EQ(0, pipe(outp));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		dup2(in[0], 0);
		dup2(outp[1], 1);
		close(in[1]);
		close(outp[0]);
		execl("tierd/morsel-tierd", "morsel-tierd", "--fast", "0", "--slow", "1",
		      "--budget", "2M", "--tick", NDIR "/f", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(outp[1]);
	out = fdopen(outp[0], "r");
	ASSERT_NE(NULL, out);
	/* Every page is fresh, so as hot as any: the first 512 come. */
	tier_round(_metadata, in[1], out, line, sizeof(line));
	ASSERT_NE(NULL, strstr(line, " scan_ms")) TH_LOG("%s", line);
	*strstr(line, " scan_ms") = 0;	/* the times vary */
	EXPECT_STREQ("round 1: fast 512 slow 1536 promoted 512 demoted 0", line);
	/* Another process's working set: pages 1024-1279. */
	for (k = 0; k < 3; k++) {
		touch_in_child(_metadata, fd, pages * PG, 1024, 1280, 0);
		tier_round(_metadata, in[1], out, line, sizeof(line));
		TH_LOG("%s", line);
	}
	node_pages(_metadata, fd, 1024 * PG, 256 * PG, n);
	EXPECT_EQ(256, n[0]);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_GE(budget, n[0]);
	EXPECT_EQ(pages, n[0] + n[1]);
	/* It moves, to this process: pages 1536-1791. */
	for (k = 0; k < 3; k++) {
		touch_pages(p, 1536, 1792);
		tier_round(_metadata, in[1], out, line, sizeof(line));
		TH_LOG("%s", line);
	}
	node_pages(_metadata, fd, 1536 * PG, 256 * PG, n);
	EXPECT_EQ(256, n[0]);
	node_pages(_metadata, fd, 0, 0, n);
	EXPECT_GE(budget, n[0]);
	close(in[1]);
	fclose(out);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	munmap(p, pages * PG);
	instance_done(NDIR, fd);
}

TEST_HARNESS_MAIN
