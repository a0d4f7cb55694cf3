// SPDX-License-Identifier: GPL-2.0
/*
 * Morsels as KVM guest memory: a tiny nested KVM guest (16-bit real mode)
 * whose data memory slot is a morsel mapping.  Run inside the VM (vm/run),
 * where QEMU's TCG emulates AMD-V and the guest kernel has CONFIG_KVM_AMD.
 *
 * Review 2026-11, C1 and C2 (../shared/research/review-2026-11.md):
 *
 *   readonly_write_*   (C2) a morsel opened O_RDONLY and mapped PROT_READ is a
 *                      memslot without KVM_MEM_READONLY; a guest write must be
 *                      refused (KVM_RUN -1/EFAULT, an MMIO exit, any error)
 *                      and the file must keep its content.
 *   evict_*            (C1) after the guest has read (read-only SPTE) or
 *                      incremented (writable SPTE) a page, the host evicts
 *                      it (MORSEL_IOC_EVICT, fallocate PUNCH_HOLE,
 *                      MADV_REMOVE); the guest must then read 0 like the
 *                      host, and host and guest must share the new page.
 *   migrate_*          (issue 24) the page the guest mapped moves to the
 *                      other NUMA node (MORSEL_IOC_MIGRATE): the guest
 *                      reads the same byte from the new page and shares it
 *                      with the host (needs vm/run --numa 2; else SKIP).
 *   guest_reads_and_writes  the guest program itself, as a sanity check.
 *   failed_page_sigbus_to_the_vcpu  a memory error in the page the guest
 *                      has mapped (docs/memory-errors.md): its next access
 *                      sends the vCPU thread SIGBUS, BUS_MCEERR_AR at the
 *                      page's host address (morsels only).
 *   kvm_huge.*         a morsel's 2 MiB leaf is mapped with a 2 MiB page in
 *                      the guest (KVM's pages_2m), a 1 GiB leaf with a
 *                      1 GiB page (pages_1g; an instance with huge1g=1, in
 *                      a VM of 8 GiB), 4 KiB leaves with 4 KiB pages; an
 *                      eviction inside the leaf splits it and the guest's
 *                      mapping goes with it.
 *
 * Every test also runs on a memfd (variant "memfd"): the reference
 * behaviour of ordinary shared memory, so a failure on a morsel variant is
 * attributable to morsels, not to nested KVM.  Without a usable /dev/kvm
 * (no SVM, KVM_CREATE_VM fails, a trivial guest does not run) the tests
 * SKIP with the reason; kvm_environment logs what the kernel said.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "morsel.h"

#ifndef KVM_EXIT_MEMORY_FAULT
#define KVM_EXIT_MEMORY_FAULT 39	/* Linux 6.8+; the host headers may be older */
#endif
#ifndef MADV_REMOVE
#define MADV_REMOVE 9
#endif

#define PG		4096UL
#define CODE_GPA	0x0UL		/* slot 0: 64 KiB of anonymous memory */
#define CODE_SIZE	0x10000UL
#define CODE_ENTRY	0x1000UL	/* the guest program is copied here */
#define DATA_GPA	0x10000UL	/* slot 1: one page of the memory under test */
#define DATA_SIZE	PG

/* Ports of the guest program. */
#define PORT_CMD	0xe0	/* in: the host hands out the next command */
#define PORT_ARG	0xe1	/* in: the byte for CMD_WRITE */
#define PORT_READ	0xe8	/* out: the byte CMD_READ read */
#define PORT_INC	0xe9	/* out: the byte after CMD_INC */
#define PORT_WRITE	0xea	/* out: the byte CMD_WRITE wrote */

enum { CMD_STOP = 0, CMD_READ = 1, CMD_INC = 2, CMD_WRITE = 3 };

/*
 * The guest: DS = 0x1000, so [0] is guest physical DATA_GPA, the first byte
 * of the page under test.  It waits for a command on PORT_CMD, touches
 * [0], reports the byte on an out port and waits again.  Nothing but the
 * commands touches the data page.
 */
asm(".pushsection .rodata.kvm_guest, \"a\"\n"
    ".globl kvm_guest_code\n"
    ".globl kvm_guest_code_end\n"
    "kvm_guest_code:\n"
    ".code16\n"
    "	mov $0x1000, %ax\n"
    "	mov %ax, %ds\n"
    "kvm_guest_loop:\n"
    "	in $0xe0, %al\n"
    "	cmp $1, %al\n"
    "	je kvm_guest_read\n"
    "	cmp $2, %al\n"
    "	je kvm_guest_inc\n"
    "	cmp $3, %al\n"
    "	je kvm_guest_write\n"
    "	hlt\n"
    "	jmp kvm_guest_loop\n"
    "kvm_guest_read:\n"
    "	movb 0, %al\n"
    "	out %al, $0xe8\n"
    "	jmp kvm_guest_loop\n"
    "kvm_guest_inc:\n"
    "	incb 0\n"
    "	movb 0, %al\n"
    "	out %al, $0xe9\n"
    "	jmp kvm_guest_loop\n"
    "kvm_guest_write:\n"
    "	in $0xe1, %al\n"
    "	movb %al, 0\n"
    "	out %al, $0xea\n"
    "	jmp kvm_guest_loop\n"
    ".code64\n"
    "kvm_guest_code_end:\n"
    ".popsection\n");
extern const unsigned char kvm_guest_code[], kvm_guest_code_end[];

/* What one command did. */
struct step {
	int value;		/* byte the guest reported, -1 if none */
	int ret, err;		/* the last KVM_RUN's return value and errno */
	char what[320];		/* how it ended, for the log */
};

/* Lines of the kernel log that mention KVM or SVM, for the log. */
static void log_kvm_dmesg(struct __test_metadata *_metadata)
{
	char rec[1024];
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0) {
		TH_LOG("cannot read /dev/kmsg: %s", strerror(errno));
		return;
	}
	while ((n = read(fd, rec, sizeof(rec) - 1)) != 0) {
		char *msg, *nl;

		if (n < 0) {
			if (errno == EPIPE)	/* record overwritten: go on */
				continue;
			break;
		}
		rec[n] = 0;
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		nl = strchr(msg, '\n');
		if (nl)
			*nl = 0;
		if (strcasestr(msg, "kvm") || strcasestr(msg, "svm") ||
		    strcasestr(msg, "virtualization"))
			TH_LOG("dmesg: %s", msg);
	}
	close(fd);
}

static const char *exit_name(unsigned int reason)
{
	switch (reason) {
	case KVM_EXIT_UNKNOWN: return "KVM_EXIT_UNKNOWN";
	case KVM_EXIT_EXCEPTION: return "KVM_EXIT_EXCEPTION";
	case KVM_EXIT_IO: return "KVM_EXIT_IO";
	case KVM_EXIT_HLT: return "KVM_EXIT_HLT";
	case KVM_EXIT_MMIO: return "KVM_EXIT_MMIO";
	case KVM_EXIT_SHUTDOWN: return "KVM_EXIT_SHUTDOWN";
	case KVM_EXIT_FAIL_ENTRY: return "KVM_EXIT_FAIL_ENTRY";
	case KVM_EXIT_INTR: return "KVM_EXIT_INTR";
	case KVM_EXIT_INTERNAL_ERROR: return "KVM_EXIT_INTERNAL_ERROR";
	case KVM_EXIT_MEMORY_FAULT: return "KVM_EXIT_MEMORY_FAULT";
	default: return "KVM_EXIT_?";
	}
}

/* Describe how KVM_RUN (@ret, @err) ended, with the exit's details. */
static void describe_exit(const struct kvm_run *run, int ret, int err,
			  char *buf, size_t len)
{
	const uint64_t *u = (const uint64_t *)&run->mmio; /* the exit union */
	int n;

	if (ret < 0)
		n = snprintf(buf, len, "KVM_RUN = -1, errno %s (%s), exit_reason %u %s",
			     strerrorname_np(err) ?: "?", strerror(err),
			     run->exit_reason, exit_name(run->exit_reason));
	else
		n = snprintf(buf, len, "KVM_RUN = %d, exit_reason %u %s", ret,
			     run->exit_reason, exit_name(run->exit_reason));
	if (n < 0 || (size_t)n >= len)
		return;
	buf += n;
	len -= n;
	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		snprintf(buf, len, " (%s port %#x size %u, data %#x)",
			 run->io.direction == KVM_EXIT_IO_IN ? "in" : "out",
			 run->io.port, run->io.size,
			 *((const uint8_t *)run + run->io.data_offset));
		break;
	case KVM_EXIT_MMIO:
		snprintf(buf, len, " (%s gpa %#llx len %u, data %#x)",
			 run->mmio.is_write ? "write" : "read",
			 (unsigned long long)run->mmio.phys_addr, run->mmio.len,
			 run->mmio.data[0]);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(buf, len, " (hardware_entry_failure_reason %#llx, cpu %u)",
			 (unsigned long long)run->fail_entry.hardware_entry_failure_reason,
			 run->fail_entry.cpu);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(buf, len, " (suberror %u, ndata %u, data %#llx %#llx %#llx %#llx)",
			 run->internal.suberror, run->internal.ndata,
			 (unsigned long long)run->internal.data[0],
			 (unsigned long long)run->internal.data[1],
			 (unsigned long long)run->internal.data[2],
			 (unsigned long long)run->internal.data[3]);
		break;
	case KVM_EXIT_MEMORY_FAULT:
		/* struct { __u64 flags, gpa, size; } memory_fault */
		snprintf(buf, len, " (flags %#llx gpa %#llx size %#llx)",
			 (unsigned long long)u[0], (unsigned long long)u[1],
			 (unsigned long long)u[2]);
		break;
	}
}

FIXTURE(kvm) {
	int kvm, vm, vcpu;
	struct kvm_run *run;
	size_t run_size;
	uint8_t *code;		/* slot 0 */
	int fd;			/* the memory under test, read-write */
	int rofd;		/* the same, opened O_RDONLY (readonly tests) */
	uint8_t *map;		/* its mapping; slot 1 is its first page */
	size_t map_len;
	bool parked;		/* the guest waits for a command on PORT_CMD */
	char path[256];		/* morsel file, "" for the memfd */
};

FIXTURE_VARIANT(kvm) {
	int order;		/* morsel order, -1: memfd */
	uint64_t size;		/* file size; chooses the order */
};

FIXTURE_VARIANT_ADD(kvm, memfd) { .order = -1, .size = PG };
FIXTURE_VARIANT_ADD(kvm, morsel_order0) { .order = 0, .size = PG };
FIXTURE_VARIANT_ADD(kvm, morsel_order1) { .order = 1, .size = 2UL << 20 };
FIXTURE_VARIANT_ADD(kvm, morsel_order2) { .order = 2, .size = 4UL << 20 };
FIXTURE_VARIANT_ADD(kvm, morsel_order3) { .order = 3, .size = 2UL << 30 };

/*
 * Hand the parked guest @cmd (and @arg for CMD_WRITE) and run it until it
 * has reported a byte and is parked again.  False, with s->what saying
 * what happened, if KVM_RUN failed or the guest exited in any other way.
 */
static bool guest_cmd(FIXTURE_DATA(kvm) *self, int cmd, int arg,
		      struct step *s)
{
	struct kvm_run *run = self->run;
	bool given = false;
	int i;

	s->value = -1;
	s->ret = 0;
	s->err = 0;
	snprintf(s->what, sizeof(s->what), "not run");
	if (!self->parked) {
		snprintf(s->what, sizeof(s->what), "guest is not waiting for a command");
		return false;
	}
	for (i = 0; i < 64; i++) {
		if (run->exit_reason == KVM_EXIT_IO) {
			uint8_t *data = (uint8_t *)run + run->io.data_offset;

			if (run->io.direction == KVM_EXIT_IO_IN &&
			    run->io.port == PORT_CMD) {
				if (given) {
					if (s->value >= 0)
						return true;
					snprintf(s->what, sizeof(s->what),
						 "guest asked for a command without reporting");
					return false;
				}
				*data = cmd;
				given = true;
			} else if (run->io.direction == KVM_EXIT_IO_IN &&
				   run->io.port == PORT_ARG) {
				*data = arg;
			} else if (run->io.direction == KVM_EXIT_IO_OUT &&
				   run->io.port >= PORT_READ &&
				   run->io.port <= PORT_WRITE) {
				s->value = *data;
			} else {
				goto other;
			}
		} else {
			goto other;
		}
		s->ret = ioctl(self->vcpu, KVM_RUN, 0);
		s->err = s->ret < 0 ? errno : 0;
		if (s->ret < 0)
			goto other;
	}
	snprintf(s->what, sizeof(s->what), "guest did not come back in %d exits", i);
	self->parked = false;
	return false;
other:
	describe_exit(run, s->ret, s->err, s->what, sizeof(s->what));
	self->parked = false;
	return false;
}

/* Map the memory under test (read-write, or the O_RDONLY fd PROT_READ) and
 * make its first page slot 1 at DATA_GPA, flags 0 (not KVM_MEM_READONLY). */
static void attach(struct __test_metadata *_metadata, FIXTURE_DATA(kvm) *self,
		   const FIXTURE_VARIANT(kvm) *variant, bool writable)
{
	int prot = writable ? PROT_READ | PROT_WRITE : PROT_READ;
	int fd = self->fd;
	struct kvm_userspace_memory_region r = {
		.slot = 1, .flags = 0, .guest_phys_addr = DATA_GPA,
		.memory_size = DATA_SIZE,
	};

	if (!writable) {
		char p[64];

		if (variant->order < 0) {
			snprintf(p, sizeof(p), "/proc/self/fd/%d", self->fd);
			self->rofd = open(p, O_RDONLY);
		} else {
			self->rofd = morsel_open(self->path, O_RDONLY);
		}
		ASSERT_LE(0, self->rofd) TH_LOG("open O_RDONLY: %s", strerror(errno));
		fd = self->rofd;
	}
	if (variant->order < 0) {
		self->map_len = PG;
		self->map = mmap(NULL, PG, prot, MAP_SHARED, fd, 0);
		ASSERT_NE(MAP_FAILED, self->map) TH_LOG("mmap: %s", strerror(errno));
	} else {
		void *a;
		int err = morsel_map(fd, NULL, prot, 0, &a, &self->map_len);

		ASSERT_EQ(0, err) TH_LOG("morsel_map: %s", strerror(-err));
		self->map = a;
	}
	r.userspace_addr = (uintptr_t)self->map;
	ASSERT_EQ(0, ioctl(self->vm, KVM_SET_USER_MEMORY_REGION, &r))
		TH_LOG("KVM_SET_USER_MEMORY_REGION(slot 1 at %p): %s",
		       self->map, strerror(errno));
}

static int file_byte(FIXTURE_DATA(kvm) *self)
{
	uint8_t c;

	if (pread(self->fd, &c, 1, 0) != 1)
		return -1;
	return c;
}

FIXTURE_SETUP(kvm)
{
	struct kvm_userspace_memory_region r0 = {
		.slot = 0, .guest_phys_addr = CODE_GPA, .memory_size = CODE_SIZE,
	};
	struct kvm_regs regs = { .rip = CODE_ENTRY, .rflags = 0x2 };
	struct kvm_sregs sregs;
	uint8_t page[PG];
	struct step s;
	int api;

	self->kvm = self->vm = self->vcpu = self->fd = self->rofd = -1;
	self->path[0] = 0;

	self->kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (self->kvm < 0)
		SKIP(return, "open /dev/kvm: %s (kernel without KVM, or no SVM/VMX; see kvm_environment)",
		     strerror(errno));
	api = ioctl(self->kvm, KVM_GET_API_VERSION, 0);
	if (api != KVM_API_VERSION)
		SKIP(return, "KVM_GET_API_VERSION = %d (%s), want %d", api,
		     api < 0 ? strerror(errno) : "", KVM_API_VERSION);
	self->vm = ioctl(self->kvm, KVM_CREATE_VM, 0);
	if (self->vm < 0)
		SKIP(return, "KVM_CREATE_VM: %s (see kvm_environment)", strerror(errno));

	self->code = mmap(NULL, CODE_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->code);
	memcpy(self->code + CODE_ENTRY, kvm_guest_code,
	       kvm_guest_code_end - kvm_guest_code);
	r0.userspace_addr = (uintptr_t)self->code;
	if (ioctl(self->vm, KVM_SET_USER_MEMORY_REGION, &r0))
		SKIP(return, "KVM_SET_USER_MEMORY_REGION(slot 0, anonymous): %s",
		     strerror(errno));
	self->vcpu = ioctl(self->vm, KVM_CREATE_VCPU, 0);
	if (self->vcpu < 0)
		SKIP(return, "KVM_CREATE_VCPU: %s", strerror(errno));
	self->run_size = ioctl(self->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	ASSERT_LT(0, (long)self->run_size);
	self->run = mmap(NULL, self->run_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->vcpu, 0);
	ASSERT_NE(MAP_FAILED, self->run);

	/* Real mode at 0000:1000. */
	ASSERT_EQ(0, ioctl(self->vcpu, KVM_GET_SREGS, &sregs));
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	ASSERT_EQ(0, ioctl(self->vcpu, KVM_SET_SREGS, &sregs));
	ASSERT_EQ(0, ioctl(self->vcpu, KVM_SET_REGS, &regs));

	/*
	 * A trivial guest first, on anonymous memory only: run to the first
	 * "in" on PORT_CMD.  If nested KVM cannot do that, nothing here is
	 * about morsels: skip.
	 */
	s.ret = ioctl(self->vcpu, KVM_RUN, 0);
	s.err = s.ret < 0 ? errno : 0;
	if (s.ret < 0 || self->run->exit_reason != KVM_EXIT_IO ||
	    self->run->io.direction != KVM_EXIT_IO_IN ||
	    self->run->io.port != PORT_CMD) {
		describe_exit(self->run, s.ret, s.err, s.what, sizeof(s.what));
		log_kvm_dmesg(_metadata);
		SKIP(return, "nested KVM cannot run a trivial real-mode guest: %s",
		     s.what);
	}
	self->parked = true;

	/* The memory under test, its first page filled with 'A'. */
	memset(page, 'A', sizeof(page));
	if (variant->order < 0) {
		self->fd = memfd_create("kvm_test", MFD_CLOEXEC);
		ASSERT_LE(0, self->fd);
		ASSERT_EQ(0, ftruncate(self->fd, variant->size));
	} else {
		const char *mnt = getenv("MORSEL_MNT");
		struct morsel_stat st;

		if (!mnt)
			SKIP(return, "MORSEL_MNT is not set (run under vm/run)");
		snprintf(self->path, sizeof(self->path), "%s/kvm_test.%d", mnt,
			 getpid());
		unlink(self->path);
		self->fd = morsel_create(self->path, variant->size, 0644);
		ASSERT_LE(0, self->fd) TH_LOG("morsel_create(%s): %s", self->path,
					      strerror(-self->fd));
		ASSERT_EQ(0, morsel_stat(self->fd, &st));
		ASSERT_EQ(variant->order, (int)st.order);
	}
	ASSERT_EQ((ssize_t)PG, pwrite(self->fd, page, PG, 0));
}

FIXTURE_TEARDOWN(kvm)
{
	if (self->vcpu >= 0)
		close(self->vcpu);
	if (self->vm >= 0)
		close(self->vm);
	if (self->kvm >= 0)
		close(self->kvm);
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, self->map_len);
	if (self->rofd >= 0)
		close(self->rofd);
	if (self->fd >= 0)
		close(self->fd);
	if (self->path[0])
		unlink(self->path);
}

/* Run a command that must complete; its reported byte. */
#define GUEST(cmd, arg) ({						\
	struct step _s;							\
	bool _ok = guest_cmd(self, (cmd), (arg), &_s);			\
	ASSERT_TRUE(_ok) TH_LOG("guest command %d did not complete: %s",	\
				(cmd), _s.what);			\
	_s.value;							\
})

/* 3: the guest program reads, increments and writes the page under test,
 * and host and guest see each other's writes. */
TEST_F_TIMEOUT(kvm, guest_reads_and_writes, 300)
{
	int g;

	attach(_metadata, self, variant, true);
	g = GUEST(CMD_READ, 0);
	TH_LOG("guest reads %#x, host mapping %#x (file 'A' = 0x41)", g, self->map[0]);
	ASSERT_EQ('A', g);
	g = GUEST(CMD_INC, 0);
	TH_LOG("guest increments to %#x; host mapping %#x, pread %#x", g,
	       self->map[0], file_byte(self));
	ASSERT_EQ('B', g);
	ASSERT_EQ('B', self->map[0]);
	ASSERT_EQ('B', file_byte(self));
	g = GUEST(CMD_WRITE, 'W');
	TH_LOG("guest writes %#x; host mapping %#x, pread %#x", g, self->map[0],
	       file_byte(self));
	ASSERT_EQ('W', self->map[0]);
	ASSERT_EQ('W', file_byte(self));
	self->map[0] = 'h';
	g = GUEST(CMD_READ, 0);
	TH_LOG("host writes 'h' (0x68); guest reads %#x", g);
	ASSERT_EQ('h', g);
}

/*
 * C2: the memory is opened O_RDONLY, mapped PROT_READ, slot flags 0.  The
 * guest write (after a read if @read_first) must not complete, and the file
 * must still hold 'A'.
 */
static void readonly_write(struct __test_metadata *_metadata,
			   FIXTURE_DATA(kvm) *self,
			   const FIXTURE_VARIANT(kvm) *variant, bool read_first)
{
	struct step s;
	bool done;
	int f, h;

	attach(_metadata, self, variant, false);
	if (read_first) {
		int g = GUEST(CMD_READ, 0);

		TH_LOG("guest reads %#x through the read-only slot, host mapping %#x", g,
		       self->map[0]);
		ASSERT_EQ('A', g);
	}
	done = guest_cmd(self, CMD_WRITE, 'X', &s);
	f = file_byte(self);
	h = self->map[0];
	if (done)
		TH_LOG("guest write of 'X' (0x58) COMPLETED (guest reported %#x); pread %#x, host mapping %#x",
		       s.value, f, h);
	else
		TH_LOG("guest write of 'X' (0x58) refused: %s; pread %#x, host mapping %#x",
		       s.what, f, h);
	EXPECT_FALSE(done);
	EXPECT_EQ('A', f);
	EXPECT_EQ('A', h);
}

TEST_F_TIMEOUT(kvm, readonly_write_refused, 300)
{
	readonly_write(_metadata, self, variant, false);
}

TEST_F_TIMEOUT(kvm, readonly_read_then_write_refused, 300)
{
	readonly_write(_metadata, self, variant, true);
}

/*
 * mprotect of the whole mapping to PROT_READ after the guest wrote through
 * it (KVM holds a writable copy of the entry): the next guest write must
 * not complete, and the file keeps the first one (the memfd variant is the
 * control: the same as for any file).
 */
TEST_F_TIMEOUT(kvm, mprotect_read_only_reaches_the_vcpu, 300)
{
	struct step s;
	bool done;

	attach(_metadata, self, variant, true);
	ASSERT_EQ('W', GUEST(CMD_WRITE, 'W'));
	ASSERT_EQ(0, mprotect(self->map, self->map_len, PROT_READ));
	done = guest_cmd(self, CMD_WRITE, 'X', &s);
	TH_LOG("guest write after mprotect(PROT_READ): %s; pread %#x",
	       done ? "COMPLETED" : s.what, file_byte(self));
	EXPECT_FALSE(done);
	EXPECT_EQ('W', file_byte(self));
	EXPECT_EQ('W', self->map[0]);
}

enum evict_how { EVICT_IOCTL, EVICT_PUNCH_HOLE, EVICT_MADV_REMOVE };
static const char *const evict_name[] = {
	"MORSEL_IOC_EVICT", "fallocate(PUNCH_HOLE)", "madvise(MADV_REMOVE)",
};

static int evict(FIXTURE_DATA(kvm) *self, enum evict_how how)
{
	switch (how) {
	case EVICT_IOCTL:
		return morsel_evict(self->fd, 0, PG);
	case EVICT_PUNCH_HOLE:
		return fallocate(self->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 0, PG) ? -errno : 0;
	case EVICT_MADV_REMOVE:
		return madvise(self->map, PG, MADV_REMOVE) ? -errno : 0;
	}
	return -EINVAL;
}

/*
 * C1: the guest has mapped the first page, only read it (@wrote false: a
 * read-only SPTE) or incremented it (@wrote true: a writable SPTE).  The
 * host evicts the page with @how while the guest is parked; the guest must
 * then read 0 like the host, see a host write into the new page, and the
 * host must see the guest's next increment.  Stops at the first stale read,
 * so the guest never writes a page that may have been freed.
 */
static void evict_test(struct __test_metadata *_metadata,
		       FIXTURE_DATA(kvm) *self,
		       const FIXTURE_VARIANT(kvm) *variant, enum evict_how how,
		       bool wrote)
{
	const char *tag = wrote ? "guest wrote" : "guest read";
	int g, h, f, err;

	if (how == EVICT_IOCTL && variant->order < 0)
		SKIP(return, "MORSEL_IOC_EVICT is for morsels only");
	attach(_metadata, self, variant, true);
	self->map[0] = 'A';
	if (wrote) {
		g = GUEST(CMD_INC, 0);
		TH_LOG("[%s] host 'A'; guest increments to %#x, host mapping %#x",
		       tag, g, self->map[0]);
		ASSERT_EQ('B', g);
		ASSERT_EQ('B', self->map[0]);
	} else {
		g = GUEST(CMD_READ, 0);
		TH_LOG("[%s] host 'A'; guest reads %#x", tag, g);
		ASSERT_EQ('A', g);
	}

	err = evict(self, how);
	ASSERT_EQ(0, err) TH_LOG("%s: %s", evict_name[how], strerror(-err));

	g = GUEST(CMD_READ, 0);
	h = self->map[0];
	f = file_byte(self);
	TH_LOG("[%s] after %s: guest reads %#x, host mapping %#x, pread %#x%s",
	       tag, evict_name[how], g, h, f,
	       g != h ? "  <-- guest still sees the evicted page" : "");
	ASSERT_EQ(0, h);
	ASSERT_EQ(0, f);
	ASSERT_EQ(h, g);

	self->map[0] = 0x5a;
	g = GUEST(CMD_READ, 0);
	TH_LOG("[%s] host writes 0x5a into the new page; guest reads %#x", tag, g);
	ASSERT_EQ(0x5a, g);
	g = GUEST(CMD_INC, 0);
	h = self->map[0];
	f = file_byte(self);
	TH_LOG("[%s] guest increments to %#x; host mapping %#x, pread %#x",
	       tag, g, h, f);
	ASSERT_EQ(0x5b, g);
	ASSERT_EQ(0x5b, h);
	ASSERT_EQ(0x5b, f);
}

#define EVICT_TEST(name, how, wrote)					\
	TEST_F_TIMEOUT(kvm, name, 300)					\
	{								\
		evict_test(_metadata, self, variant, how, wrote);	\
	}
EVICT_TEST(evict_ioctl_after_guest_read, EVICT_IOCTL, false)
EVICT_TEST(evict_ioctl_after_guest_write, EVICT_IOCTL, true)
EVICT_TEST(evict_punch_hole_after_guest_read, EVICT_PUNCH_HOLE, false)
EVICT_TEST(evict_punch_hole_after_guest_write, EVICT_PUNCH_HOLE, true)
EVICT_TEST(evict_madv_remove_after_guest_read, EVICT_MADV_REMOVE, false)
EVICT_TEST(evict_madv_remove_after_guest_write, EVICT_MADV_REMOVE, true)

/* The node page 0 of the file is on (NODE_PAGES), or -1. */
static int page0_node(int fd)
{
	struct morsel_node_pages np = { .offset = 0, .length = PG };
	int n;

	if (ioctl(fd, MORSEL_IOC_NODE_PAGES, &np))
		return -1;
	for (n = 0; n < MORSEL_MAX_NODES; n++)
		if (np.pages[n])
			return n;
	return -1;
}

/*
 * Migration (issue 24): the guest has read (read-only SPTE) or
 * incremented (writable SPTE) the first page; the host moves it to the
 * other node (MORSEL_IOC_MIGRATE).  The secondary MMU must drop the old
 * page: the guest reads the same byte from the new one, sees a host write
 * into it, and the host sees the guest's next increment.  Needs a guest
 * with two nodes (vm/run --numa 2; tests/run-all runs these two there).
 */
static void migrate_test(struct __test_metadata *_metadata,
			 FIXTURE_DATA(kvm) *self,
			 const FIXTURE_VARIANT(kvm) *variant, bool wrote)
{
	struct morsel_migrate r = { .offset = 0, .length = PG };
	int g, h, f, from;
	char want;

	if (variant->order < 0)
		SKIP(return, "MORSEL_IOC_MIGRATE is for morsels only");
	if (access("/sys/devices/system/node/node1/meminfo", F_OK))
		SKIP(return, "one NUMA node: vm/run --numa 2");
	attach(_metadata, self, variant, true);
	self->map[0] = 'A';
	g = GUEST(wrote ? CMD_INC : CMD_READ, 0);
	want = wrote ? 'B' : 'A';
	ASSERT_EQ(want, g);
	from = page0_node(self->fd);
	ASSERT_LE(0, from);
	r.node = !from;
	ASSERT_EQ(0, ioctl(self->fd, MORSEL_IOC_MIGRATE, &r))
		TH_LOG("MIGRATE: %s", strerror(errno));
	ASSERT_EQ(1, r.moved);
	ASSERT_EQ(!from, page0_node(self->fd));
	g = GUEST(CMD_READ, 0);
	TH_LOG("[%s] after the move: guest reads %#x, host %#x", wrote ?
	       "guest wrote" : "guest read", g, self->map[0]);
	ASSERT_EQ(want, g);
	ASSERT_EQ(want, self->map[0]);
	self->map[0] = 0x5a;
	g = GUEST(CMD_READ, 0);
	ASSERT_EQ(0x5a, g);
	g = GUEST(CMD_INC, 0);
	h = self->map[0];
	f = file_byte(self);
	ASSERT_EQ(0x5b, g);
	ASSERT_EQ(0x5b, h);
	ASSERT_EQ(0x5b, f);
}

TEST_F_TIMEOUT(kvm, migrate_after_guest_read, 300)
{
	migrate_test(_metadata, self, variant, false);
}

TEST_F_TIMEOUT(kvm, migrate_after_guest_write, 300)
{
	migrate_test(_metadata, self, variant, true);
}

static volatile siginfo_t vcpu_bus;

static void on_vcpu_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	memcpy((void *)&vcpu_bus, si, sizeof(*si));
}

/*
 * The page the guest has read fails (madvise(MADV_HWPOISON) on the host's
 * mapping): KVM lost its SPTE with the host's mappings, so the guest's
 * next read faults through GUP with FOLL_HWPOISON, and KVM sends the vCPU
 * thread SIGBUS (BUS_MCEERR_AR, the page's host address).  The guest never
 * reads the failed page again.
 */
TEST_F_TIMEOUT(kvm, failed_page_sigbus_to_the_vcpu, 300)
{
	struct sigaction sa = { .sa_sigaction = on_vcpu_sigbus, .sa_flags = SA_SIGINFO };
	struct step s;

	if (variant->order < 0)
		SKIP(return, "a memfd page fails through shmem's own path");
	attach(_metadata, self, variant, true);
	ASSERT_EQ('A', GUEST(CMD_READ, 0));
	ASSERT_EQ(0, madvise(self->map, PG, MADV_HWPOISON));
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, NULL));
	EXPECT_FALSE(guest_cmd(self, CMD_READ, 0, &s));
	signal(SIGBUS, SIG_DFL);
	TH_LOG("guest read after the failure: %s; SIGBUS code %d at %p",
	       s.what, vcpu_bus.si_code, vcpu_bus.si_addr);
	EXPECT_EQ(BUS_MCEERR_AR, vcpu_bus.si_code);
	EXPECT_EQ((void *)self->map, vcpu_bus.si_addr);
	EXPECT_NE('A', s.value);
}

/* The VM-wide KVM statistic @name (KVM_GET_STATS_FD), or -1. */
static long vm_stat(int vm, const char *name)
{
	struct kvm_stats_header h;
	struct kvm_stats_desc *d;
	size_t dsize;
	long val = -1;
	uint32_t i;
	int fd = ioctl(vm, KVM_GET_STATS_FD, NULL);
	char *descs;

	if (fd < 0 || pread(fd, &h, sizeof(h), 0) != sizeof(h))
		return -1;
	dsize = sizeof(*d) + h.name_size;
	descs = calloc(h.num_desc, dsize);
	if (descs && pread(fd, descs, h.num_desc * dsize, h.desc_offset) ==
	    (ssize_t)(h.num_desc * dsize)) {
		for (i = 0; i < h.num_desc; i++) {
			uint64_t v;

			d = (struct kvm_stats_desc *)(descs + i * dsize);
			if (strcmp(d->name, name) || d->size != 1)
				continue;
			if (pread(fd, &v, sizeof(v), h.data_offset + d->offset) ==
			    sizeof(v))
				val = v;
		}
	}
	free(descs);
	close(fd);
	return val;
}

#define GIB_DIR		"/tmp/morsel-kvm1g"

/*
 * A 2 MiB leaf of a morsel (huge.c) is a 2 MiB host mapping, and KVM maps
 * such memory with 2 MiB pages in the guest (pages_2m), as it does THP;
 * a 1 GiB leaf is a 1 GiB host mapping (a PUD leaf) and gets a 1 GiB page
 * (pages_1g), as hugetlbfs's 1 GiB pages do.  Here the whole guest
 * memory is one slot of the leaf's size on one morsel, its code at
 * CODE_ENTRY and its data at DATA_GPA.  @level: 1 for a 2 MiB leaf, 2
 * for a 1 GiB one (a 2 GiB file, order 3, on an instance of its own with
 * huge1g=1), 0 for the 2 MiB guest on 4 KiB leaves (no large page).
 */
static void run_on_one_slot(struct __test_metadata *_metadata, int level)
{
	FIXTURE_DATA(kvm) k = { .kvm = -1, .vm = -1, .vcpu = -1, .fd = -1 };
	struct morsel_huge h = { .mode = level ? MORSEL_HUGE_ALWAYS :
						  MORSEL_HUGE_NEVER };
	struct kvm_userspace_memory_region r = {
		.slot = 0, .guest_phys_addr = 0,
		.memory_size = level == 2 ? 1UL << 30 : 2UL << 20,
	};
	struct kvm_regs regs = { .rip = CODE_ENTRY, .rflags = 0x2 };
	const char *mnt = getenv("MORSEL_MNT");
	struct kvm_sregs sregs;
	struct morsel_stat st;
	long pages_2m, pages_1g;
	char path[256];
	struct step s;
	void *a;
	int err;

	k.kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (k.kvm < 0)
		SKIP(return, "open /dev/kvm: %s", strerror(errno));
	ASSERT_NE(NULL, mnt);
	if (level == 2) {
		mkdir(GIB_DIR, 0755);
		umount2(GIB_DIR, MNT_DETACH);
		ASSERT_EQ(0, mount("none", GIB_DIR, "morselfs", 0, "huge1g=1"))
			TH_LOG("huge1g=1: %s (tests/run-all gives 8 GiB)",
			       strerror(errno));
		mnt = GIB_DIR;
	}
	snprintf(path, sizeof(path), "%s/kvm_huge.%d", mnt, getpid());
	unlink(path);
	k.fd = morsel_create(path, level == 2 ? 2UL << 30 : 4UL << 20, 0644);
	ASSERT_LE(0, k.fd);
	unlink(path);
	ASSERT_EQ(0, ioctl(k.fd, MORSEL_IOC_SET_HUGE, &h));
	err = morsel_map(k.fd, NULL, PROT_READ | PROT_WRITE, 0, &a, &k.map_len);
	ASSERT_EQ(0, err);
	k.map = a;
	memcpy(k.map + CODE_ENTRY, kvm_guest_code,
	       kvm_guest_code_end - kvm_guest_code);
	k.map[DATA_GPA] = 'A';
	ASSERT_EQ(0, morsel_stat(k.fd, &st));
	ASSERT_EQ(level == 1 ? 1 : 0, (int)st.huge);
	ASSERT_EQ(level == 2 ? 1 : 0, (int)st.huge1g);
	k.vm = ioctl(k.kvm, KVM_CREATE_VM, 0);
	if (k.vm < 0)
		SKIP(goto out, "KVM_CREATE_VM: %s", strerror(errno));
	r.userspace_addr = (uintptr_t)k.map;
	ASSERT_EQ(0, ioctl(k.vm, KVM_SET_USER_MEMORY_REGION, &r));
	k.vcpu = ioctl(k.vm, KVM_CREATE_VCPU, 0);
	ASSERT_LE(0, k.vcpu);
	k.run_size = ioctl(k.kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	k.run = mmap(NULL, k.run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     k.vcpu, 0);
	ASSERT_NE(MAP_FAILED, k.run);
	ASSERT_EQ(0, ioctl(k.vcpu, KVM_GET_SREGS, &sregs));
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	ASSERT_EQ(0, ioctl(k.vcpu, KVM_SET_SREGS, &sregs));
	ASSERT_EQ(0, ioctl(k.vcpu, KVM_SET_REGS, &regs));
	s.ret = ioctl(k.vcpu, KVM_RUN, 0);
	if (s.ret < 0 || k.run->exit_reason != KVM_EXIT_IO ||
	    k.run->io.port != PORT_CMD) {
		describe_exit(k.run, s.ret, s.ret < 0 ? errno : 0, s.what,
			      sizeof(s.what));
		SKIP(goto out, "nested KVM cannot run the guest: %s", s.what);
	}
	k.parked = true;
	ASSERT_TRUE(guest_cmd(&k, CMD_READ, 0, &s)) TH_LOG("%s", s.what);
	EXPECT_EQ('A', s.value);
	ASSERT_TRUE(guest_cmd(&k, CMD_WRITE, 'g', &s)) TH_LOG("%s", s.what);
	EXPECT_EQ('g', k.map[DATA_GPA]);
	pages_2m = vm_stat(k.vm, "pages_2m");
	pages_1g = vm_stat(k.vm, "pages_1g");
	TH_LOG("%s leaf: KVM pages_1g = %ld, pages_2m = %ld, pages_4k = %ld",
	       level == 2 ? "1 GiB" : level ? "2 MiB" : "4 KiB", pages_1g,
	       pages_2m, vm_stat(k.vm, "pages_4k"));
	if (level == 2) {
		EXPECT_LE(1, pages_1g);
	} else if (level) {
		EXPECT_LE(1, pages_2m);
		EXPECT_EQ(0, pages_1g);
	} else {
		EXPECT_EQ(0, pages_2m);
	}
	/*
	 * Evicting the data page splits the leaf under the guest's large
	 * mapping (a 1 GiB leaf into 2 MiB ones, the first of them into
	 * 4 KiB ones); the invalidation drops that mapping, and the guest
	 * reads the hole (its code, in the same 2 MiB, stays).
	 */
	{
		struct morsel_range ev = { .offset = DATA_GPA, .length = PG };

		ASSERT_EQ(0, ioctl(k.fd, MORSEL_IOC_EVICT, &ev));
	}
	ASSERT_EQ(0, morsel_stat(k.fd, &st));
	EXPECT_EQ(level == 2 ? 511 : 0, (int)st.huge);
	EXPECT_EQ(0, (int)st.huge1g);
	ASSERT_TRUE(guest_cmd(&k, CMD_READ, 0, &s)) TH_LOG("%s", s.what);
	EXPECT_EQ(0, s.value);
	ASSERT_TRUE(guest_cmd(&k, CMD_WRITE, 'h', &s)) TH_LOG("%s", s.what);
	EXPECT_EQ('h', k.map[DATA_GPA]);
out:
	if (k.run && k.run != MAP_FAILED)
		munmap(k.run, k.run_size);
	if (k.vcpu >= 0)
		close(k.vcpu);
	if (k.vm >= 0)
		close(k.vm);
	munmap(k.map, k.map_len);
	close(k.fd);
	close(k.kvm);
	if (level == 2)
		umount2(GIB_DIR, 0);
}

/* For the timeout of nested KVM under TCG: holds nothing. */
FIXTURE(kvm_huge) {
	int unused;
};

FIXTURE_SETUP(kvm_huge)
{
}

FIXTURE_TEARDOWN(kvm_huge)
{
}

TEST_F_TIMEOUT(kvm_huge, guest_maps_a_2m_leaf_with_a_2m_page, 300)
{
	run_on_one_slot(_metadata, 1);
}

TEST_F_TIMEOUT(kvm_huge, guest_maps_a_1g_leaf_with_a_1g_page, 300)
{
	run_on_one_slot(_metadata, 2);
}

TEST_F_TIMEOUT(kvm_huge, guest_maps_4k_leaves_with_4k_pages, 300)
{
	run_on_one_slot(_metadata, 0);
}

/* Log what the kernel offers for nested KVM; never fails. */
TEST(kvm_environment)
{
	static const char *const params[] = {
		"npt", "nrips", "nested", "avic", "vgif", "vls", "lbrv",
		"tsc_scaling", "pause_filter_count",
	};
	char line[4096], p[128];
	FILE *f;
	unsigned int i;
	int fd;

	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "vendor_id", 9) || !strncmp(line, "model name", 10)) {
			line[strcspn(line, "\n")] = 0;
			TH_LOG("cpuinfo: %s", line);
		}
		if (!strncmp(line, "flags", 5)) {
			static const char *const want[] = {
				" svm", " npt", " nrip_save", " vmx", " la57",
				" flushbyasid", " decodeassists", " vgif",
			};
			char have[256] = "";
			unsigned int j;

			for (j = 0; j < sizeof(want) / sizeof(want[0]); j++) {
				char *q = strstr(line, want[j]);
				size_t l = strlen(want[j]);

				if (q && (q[l] == ' ' || q[l] == '\n'))
					strcat(have, want[j]);
			}
			TH_LOG("cpuinfo flags of interest:%s", have[0] ? have : " (none)");
			break;
		}
	}
	if (f)
		fclose(f);
	f = fopen("/proc/cmdline", "r");
	if (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		TH_LOG("cmdline: %s", line);
	}
	if (f)
		fclose(f);
	for (i = 0; i < sizeof(params) / sizeof(params[0]); i++) {
		snprintf(p, sizeof(p), "/sys/module/kvm_amd/parameters/%s", params[i]);
		f = fopen(p, "r");
		if (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			TH_LOG("kvm_amd.%s = %s", params[i], line);
		}
		if (f)
			fclose(f);
	}
	log_kvm_dmesg(_metadata);
	fd = open("/dev/kvm", O_RDWR);
	if (fd < 0)
		SKIP(return, "open /dev/kvm: %s", strerror(errno));
	TH_LOG("/dev/kvm: API version %d", ioctl(fd, KVM_GET_API_VERSION, 0));
	close(fd);
}

TEST_HARNESS_MAIN
