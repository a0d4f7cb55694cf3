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
 * - MORSEL_IOC_NODE_PAGES counts what the kernel's own per-node
 *   counters see; size= still limits.
 *
 * Each test mounts its own instance at /tmp/morsel-numa and unmounts it.
 * Runs in the VM as root, in a boot with two nodes (tests/run-all).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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

/* set_mempolicy(2)'s modes, without libnuma's header. */
#define SYS_MPOL_BIND	2

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

TEST_HARNESS_MAIN
