# Morsels: `make demo` and `make test` do all set-up themselves.
CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -std=gnu11 -Iinclude/uapi -Ilib
LDLIBS  += -lpthread

LIB     := lib/libmorsel.a
# The shared library: SONAME libmorsel.so.$(SOMAJOR), only the public
# morsel_* functions exported (lib/libmorsel.map, version MORSEL_1.0).
VERSION := 1.0.0
SOMAJOR := 1
SOLIB   := lib/libmorsel.so.$(VERSION)
SOLINKS := lib/libmorsel.so.$(SOMAJOR) lib/libmorsel.so
BINS    := tools/morsel tests/safety_test tests/errors_test tests/fs_test tests/mapping_test tests/memerr_test tests/kvm_test bench/demo bench/bench bench/huge
BINS    += bench/trees bench/trees-split bench/fib bench/fib-split
# The primitive's suites, which replaced morsel_test: the morsel and its
# mappings, the ioctls and the morsel tool, file I/O, processes.
BINS    += tests/primitive_test tests/ioctl_test tests/io_test tests/lifecycle_test tests/huge_test
BINS    += tests/huge1g_test tests/clone_test tests/mm_test tests/mm_static
# Placement on NUMA nodes (issue 24; a boot with vm/run --numa 2).
BINS    += tests/numa_test
BINS    += tests/fuzz_bin cached/morsel-cached tests/cached_test bench/cache bench/pipeline
# Persistent morsels against volatile ones and ext4 -o dax (vm/run --pmem).
BINS    += bench/persist
# Copy-on-write clones against cp on tmpfs (issue 23).
BINS    += bench/clone bench/mm
# Migration between NUMA nodes against move_pages on tmpfs (issue 24),
# and the tiering policy over morsels' accessed bits.
BINS    += bench/numa bench/tier tierd/morsel-tierd
# tests/programs_test runs these from morselfs (a program and its own
# shared library, found through LD_LIBRARY_PATH).
BINS    += tests/programs/hello tests/programs/libmsl.so
BINS    += tests/preload_test tests/pmem_test tests/pmem_pin_test
# Every-prefix crash testing of persistent morselfs (vm/run --pmem).
BINS    += tests/pm_crash
# The persistent walk fuzzed in user space (libFuzzer, ASan, UBSan) and
# the program that writes its seed images.
BINS    += tests/pm_fuzz tests/pm_fuzz_seeds
# The LD_PRELOAD shim (preload/): libmorsel's code built into it, hidden,
# so it needs no libmorsel.so; it exports only the functions it interposes.
PRELOAD := preload/libmorsel-preload.so
PRELOAD_SRCS := preload/preload.c preload/table.c lib/morsel.c lib/cache.c lib/parse_size.c
# New tests use the kernel's kselftest harness, from the built kernel tree.
KSFT     = $(shell scripts/kernel-build)/tools/testing/selftests

.PHONY: all build setup kernel module user test demo bench checkpatch clean install uninstall

all: build

setup:
	@scripts/setup

kernel: setup
	@scripts/kernel-build > /dev/null

module: kernel
	@$(MAKE) -s -C "$$(scripts/kernel-build)" M=$(CURDIR)/module modules > /dev/null
	@$(MAKE) -s -C "$$(scripts/kernel-build)" M=$(CURDIR)/tests/probe modules > /dev/null

# The module for the debug kernel (vm/run --debug), kept apart from
# module/morsel.ko so both flavours' builds coexist.  Kbuild in 6.12 has no
# MO= (a separate object directory for M=, new in 6.13), so the build runs in
# .build/debug/module, which holds symlinks to module/'s sources (always
# current, no copies to go stale); .build/debug/include makes module/Kbuild's
# $(src)/../include resolve.  Here rather than in vm/run: beside `module`.
.PHONY: module-debug
module-debug: setup
	@mkdir -p .build/debug/module && ln -sfn ../../include .build/debug/include
	@ln -sf $(addprefix $(CURDIR)/,module/Kbuild $(wildcard module/*.h) \
		$(filter-out %.mod.c,$(wildcard module/*.c))) .build/debug/module/
	@$(MAKE) -s -C "$$(scripts/kernel-build --debug)" M=$(CURDIR)/.build/debug/module modules > /dev/null
	@mkdir -p .build/debug/probe && ln -sf $(addprefix $(CURDIR)/,tests/probe/Kbuild \
		tests/probe/probe.h tests/probe/morsel_probe.c) .build/debug/probe/
	@$(MAKE) -s -C "$$(scripts/kernel-build --debug)" M=$(CURDIR)/.build/debug/probe modules > /dev/null

user: $(LIB) $(SOLIB) $(SOLINKS) $(BINS) $(PRELOAD)

build: module user

LIBOBJS := lib/morsel.o lib/cache.o

lib/%.o: lib/%.c lib/morsel.h lib/cache_proto.h include/uapi/linux/morsel.h
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIBOBJS)
	$(AR) rcs $@ $^

lib/%.pic.o: lib/%.c lib/morsel.h lib/cache_proto.h include/uapi/linux/morsel.h
	$(CC) $(CFLAGS) -fPIC -c -o $@ $<

$(SOLIB): $(LIBOBJS:.o=.pic.o) lib/libmorsel.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libmorsel.so.$(SOMAJOR) \
		-Wl,--version-script=lib/libmorsel.map -Wl,--no-undefined \
		-o $@ $(LIBOBJS:.o=.pic.o)

lib/libmorsel.so.$(SOMAJOR): $(SOLIB)
	ln -sf $(notdir $<) $@

lib/libmorsel.so: lib/libmorsel.so.$(SOMAJOR)
	ln -sf $(notdir $<) $@

# The file-cache daemon (issue 10).
cached/morsel-cached: cached/morsel-cached.c cached/index.c cached/pressure.c cached/pool.c cached/cached.h lib/parse_size.c lib/cache_proto.h $(LIB)
	$(CC) $(CFLAGS) -o $@ cached/morsel-cached.c cached/index.c cached/pressure.c cached/pool.c lib/parse_size.c $(LIB) $(LDLIBS)

# The persistent format's checker (module/pm_check.c) is built into user
# space unchanged, with tools/pm.c as its environment.
PM_SRCS := tools/pm.c module/pm_check.c
PM_DEPS := $(PM_SRCS) tools/pm.h module/pm_check.h module/pm_env.h module/pm_format.h

tools/morsel: tools/morsel.c $(PM_DEPS) $(LIB)
	$(CC) $(CFLAGS) -Imodule -Itools -o $@ $< $(PM_SRCS) $(LIB) $(LDLIBS)

tests/pm_crash: tests/pm_crash.c $(PM_DEPS) $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -Imodule -Itools -o $@ $< $(PM_SRCS) $(LIB) $(LDLIBS)

FUZZ_CC     ?= clang
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -std=gnu11 -Iinclude/uapi -Imodule -Itools -Itests
tests/pm_fuzz: tests/pm_fuzz.c tests/pm_image.h $(PM_DEPS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(PM_SRCS)

tests/pm_fuzz_seeds: tests/pm_fuzz.c tests/pm_image.h $(PM_DEPS)
	$(CC) $(CFLAGS) -DPM_FUZZ_SEEDS -Imodule -Itools -Itests -o $@ $< $(PM_SRCS)

tests/primitive_test: tests/primitive_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/huge_test: tests/huge_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/numa_test: tests/numa_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/clone_test: tests/clone_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/mm_test: tests/mm_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS) -lpthread

tests/mm_static: tests/mm_static.c
	$(CC) $(CFLAGS) -static -o $@ $<

tests/huge1g_test: tests/huge1g_test.c tests/ksft_util.h tests/morsel_util.h tests/probe/probe.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/ioctl_test: tests/ioctl_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/io_test: tests/io_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/lifecycle_test: tests/lifecycle_test.c tests/ksft_util.h tests/morsel_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

# The morselfs fuzzer (tests/fuzz runs it in the VM), one file per area.
FUZZ_SRCS := tests/fuzzer/main.c tests/fuzzer/report.c tests/fuzzer/model.c \
	tests/fuzzer/names.c tests/fuzzer/files.c tests/fuzzer/maps.c \
	tests/fuzzer/procs.c
tests/fuzz_bin: $(FUZZ_SRCS) tests/fuzzer/fuzz.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $(FUZZ_SRCS) $(LIB) $(LDLIBS)

tests/safety_test: tests/safety_test.c tests/ksft_util.h tests/probe/probe.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/errors_test: tests/errors_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/fs_test: tests/fs_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/pmem_test: tests/pmem_test.c tests/ksft_util.h tests/pmem_util.h tests/pm_image.h tests/probe/probe.h $(PM_DEPS) $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -Imodule -Itools -o $@ $< $(PM_SRCS) $(LIB) $(LDLIBS)

tests/pmem_pin_test: tests/pmem_pin_test.c tests/ksft_util.h tests/pmem_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/memerr_test: tests/memerr_test.c tests/ksft_util.h tests/pmem_util.h tests/probe/probe.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/mapping_test: tests/mapping_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/cached_test: tests/cached_test.c tests/ksft_util.h lib/cache_proto.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/kvm_test: tests/kvm_test.c $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -o $@ $< $(LIB) $(LDLIBS)

$(PRELOAD): $(PRELOAD_SRCS) preload/preload.h lib/morsel.h lib/cache_proto.h include/uapi/linux/morsel.h
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden $(LDFLAGS) -Wl,--no-undefined \
		-o $@ $(PRELOAD_SRCS) $(LDLIBS)

tests/preload_test: tests/preload_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/programs/libmsl.so: tests/programs/libmsl.c
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $<

tests/programs/hello: tests/programs/hello.c tests/programs/libmsl.so
	$(CC) $(CFLAGS) -o $@ $< -Ltests/programs -lmsl

bench/demo: bench/demo.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

bench/bench: bench/bench.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

# Host programs (seed 004; bench/trees): arrays as trees, split stacks.
bench/trees: bench/trees.c bench/common.h treearray/treearray.c treearray/treearray.h
	$(CC) $(CFLAGS) -Itreearray -o $@ bench/trees.c treearray/treearray.c

bench/trees-split: bench/trees.c bench/common.h treearray/treearray.c treearray/treearray.h
	$(CC) $(CFLAGS) -fsplit-stack -Itreearray -o $@ bench/trees.c treearray/treearray.c

bench/fib: bench/fib.c
	$(CC) $(CFLAGS) -o $@ $<

bench/fib-split: bench/fib.c
	$(CC) $(CFLAGS) -fsplit-stack -o $@ $<

bench/huge: bench/huge.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

bench/cache: bench/cache.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench/pipeline: bench/pipeline.c bench/common.h lib/parse_size.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< lib/parse_size.c $(LIB) $(LDLIBS)

bench/persist: bench/persist.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench/clone: bench/clone.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tierd/morsel-tierd: tierd/morsel-tierd.c lib/parse_size.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< lib/parse_size.c $(LIB) $(LDLIBS)

bench/tier: bench/tier.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lm

bench/numa: bench/numa.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

bench/mm: bench/mm.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

test: build
	@tests/run-all

# 10^6 fuzzer operations with a random seed, FUZZ_RUNS times (each its own
# boot and seed; FUZZ_ARGS adds options such as --mm --mm-2m).  A guest
# that dies of a triple fault leaves its registers, page tables and memory
# in .build/fuzz-trap/runN (vm/run --trap-reset), every other run nothing.
FUZZ_RUNS ?= 1
FUZZ_ARGS ?=
.PHONY: fuzz
fuzz: build
	@fail=0; for i in $$(seq $(FUZZ_RUNS)); do \
		rm -rf .build/fuzz-trap/run$$i; \
		vm/run --mem 3G --numa 2 --timeout 7200 --trap-reset .build/fuzz-trap/run$$i -- \
			tests/fuzz --ops 1000000 $(FUZZ_ARGS) || fail=1; \
		[ -e .build/fuzz-trap/run$$i/vmcore ] || rm -rf .build/fuzz-trap/run$$i; \
	done; exit $$fail

# 100 power cuts of a persistent morselfs (tests/powercut: each a fresh
# NVDIMM image, a 3-process workload cut at a random time, recovery, and
# the survivors checked against the workload's model; two boots per run).
# About 30 s per run on an idle 2-core host, 40 s on a busy one: 50-70
# minutes.  tests/powercut --seed S --runs 100 repeats a sequence.
# The persistent walk fuzzed for an hour (tests/pm_fuzz_run; make test
# fuzzes it for 45 s), its corpus kept in .build/pm-fuzz-corpus between
# runs, on both cores.
.PHONY: pm-fuzz
pm-fuzz: build
	@tests/pm_fuzz_run --time $${PM_FUZZ_TIME:-3600} --jobs 2 --corpus .build/pm-fuzz-corpus

# 1000 rounds of bits flipped in a populated persistent device, each
# mount refused unchanged or walked (pmem_test; make test runs 40).
.PHONY: pmem-flips
pmem-flips: build
	@img=$$(mktemp -u /tmp/morsel-pmem.XXXXXX); \
	vm/run --mem 3G --pmem "$$img:64M" -- env PMEM_FLIPS=$${PMEM_FLIPS:-1000} \
		tests/pmem_test -t flipped_bits_refused_or_walkable; s=$$?; rm -f "$$img"; exit $$s

# The real-program check that grows a SQLite database past 1 GiB (order
# 2 -> 3 while two processes map it; about 6 minutes under TCG, so make
# test leaves it out).
.PHONY: programs-1g
programs-1g: build
	@vm/run --mem 3G -- tests/programs_test sqlite_grow_1g

# numpy, the gguf reader and llama.cpp over 2.5 GiB files without and with
# the file-cache shim (make test runs them over 256 MiB files).
.PHONY: cache-programs
cache-programs: build
	@vm/run --cpus 2 --mem 7G -- tests/cache_programs_test

.PHONY: powercut
powercut: build
	@tests/powercut --runs 100

# fstests (tests/fstests) on tmpfs, morselfs and morselfs on pmem in one VM
# run, printed side by side: GROUP (default quick) of the generic tests,
# PART=k/N of them (every Nth from the kth), CONFIGS to choose among the
# three, TESTS to name tests instead, DEBUG=1 for the debug kernel; then
# fsx, FSX_OPS operations (default 10^6, 0: none) per morselfs
# configuration.  Results in .build/fstests/GROUP[-k-of-N][-debug].
# PARALLEL=1 runs the three configurations at once (the default for
# GROUP=auto), SERIAL=1 one after the other.  LIMIT=MIN: a test still
# running after MIN minutes is cut and shown as "cut" (default 40, 0: none).
.PHONY: fstests
fstests: build
	@tests/fstests/vm-check --group $${GROUP:-quick} $${PART:+--part $$PART} $${FSX_OPS:+--fsx-ops $$FSX_OPS} \
		$${CONFIGS:+--configs $$CONFIGS} $${DEBUG:+--debug} $${PARALLEL:+--parallel} $${SERIAL:+--serial} $${LIMIT:+--limit $$LIMIT} \
		$${TESTS:-}

# stress-ng's file-system and VM stressors (tests/stress) on tmpfs, morselfs
# and morselfs on pmem, side by side, under the debug kernel (NORMAL=1: the
# normal one); STRESS_TIME seconds per stressor (default 10), STRESSORS to
# pick some (comma-separated names).
.PHONY: stress
stress: build
	@img=$$(mktemp -u /tmp/morsel-pmem.XXXXXX); \
	vm/run $$([ -n "$${NORMAL:-}" ] || echo --debug) --cpus 2 --mem 4G --timeout 10800 --pmem "$$img:1G" -- \
		tests/batch "tests/stress --time $${STRESS_TIME:-10}$${STRESSORS:+ --only $$STRESSORS}"; \
	s=$$?; rm -f "$$img"; exit $$s

demo: build
	@vm/run --mem 4G -- bench/demo

bench: build
	@bench/run

checkpatch: kernel
	@"$$(scripts/kernel-build)"/scripts/checkpatch.pl --strict --no-tree --terse \
		-f $(filter-out %.mod.c,$(wildcard module/*.c)) module/*.h include/uapi/linux/morsel.h

# make install [PREFIX=/usr/local] [DESTDIR=staging dir]: the libraries, the
# headers (<morsel.h> and the <linux/morsel.h> it includes), morsel.pc, the
# morsel tool, the morsel-cached daemon with its systemd unit, and the man
# pages.  Each directory can be overridden on its own.
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
SBINDIR      ?= $(PREFIX)/sbin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# systemd looks in /usr/local/lib/systemd/system too (and /etc/...).
UNITDIR      ?= $(LIBDIR)/systemd/system
INSTALL      ?= install
# man morsel_create etc.: one .so page per function of lib/morsel.h.
lparen       := (
MAN3_LINKS   := $(shell sed -n 's/^[a-z_0-9]*[ *]*\(morsel_[a-z_0-9]*\)[$(lparen)].*/\1/p' lib/morsel.h)

install: $(LIB) $(SOLIB) $(PRELOAD) tools/morsel cached/morsel-cached tierd/morsel-tierd
	$(INSTALL) -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(LIBDIR)" "$(DESTDIR)$(PKGCONFIGDIR)" \
		"$(DESTDIR)$(INCLUDEDIR)/linux" "$(DESTDIR)$(MANDIR)/man1" \
		"$(DESTDIR)$(MANDIR)/man3" "$(DESTDIR)$(MANDIR)/man5" \
		"$(DESTDIR)$(MANDIR)/man8" "$(DESTDIR)$(SBINDIR)" "$(DESTDIR)$(UNITDIR)"
	$(INSTALL) -m 755 tools/morsel "$(DESTDIR)$(BINDIR)/morsel"
	$(INSTALL) -m 755 cached/morsel-cached "$(DESTDIR)$(SBINDIR)/morsel-cached"
	sed 's|/usr/local/sbin/|$(SBINDIR)/|' cached/morsel-cached.service \
		> "$(DESTDIR)$(UNITDIR)/morsel-cached.service"
	$(INSTALL) -m 644 man/morsel-cached.8 "$(DESTDIR)$(MANDIR)/man8/morsel-cached.8"
	$(INSTALL) -m 755 tierd/morsel-tierd "$(DESTDIR)$(SBINDIR)/morsel-tierd"
	$(INSTALL) -m 644 man/morsel-tierd.8 "$(DESTDIR)$(MANDIR)/man8/morsel-tierd.8"
	$(INSTALL) -m 644 $(LIB) "$(DESTDIR)$(LIBDIR)/libmorsel.a"
	$(INSTALL) -m 755 $(SOLIB) "$(DESTDIR)$(LIBDIR)/libmorsel.so.$(VERSION)"
	ln -sf libmorsel.so.$(VERSION) "$(DESTDIR)$(LIBDIR)/libmorsel.so.$(SOMAJOR)"
	ln -sf libmorsel.so.$(SOMAJOR) "$(DESTDIR)$(LIBDIR)/libmorsel.so"
	$(INSTALL) -m 755 $(PRELOAD) "$(DESTDIR)$(LIBDIR)/libmorsel-preload.so"
	$(INSTALL) -m 644 lib/morsel.h "$(DESTDIR)$(INCLUDEDIR)/morsel.h"
	$(INSTALL) -m 644 include/uapi/linux/morsel.h "$(DESTDIR)$(INCLUDEDIR)/linux/morsel.h"
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
		lib/morsel.pc.in > "$(DESTDIR)$(PKGCONFIGDIR)/morsel.pc"
	$(INSTALL) -m 644 man/morsel.1 "$(DESTDIR)$(MANDIR)/man1/morsel.1"
	$(INSTALL) -m 644 man/libmorsel.3 "$(DESTDIR)$(MANDIR)/man3/libmorsel.3"
	$(INSTALL) -m 644 man/morselfs.5 "$(DESTDIR)$(MANDIR)/man5/morselfs.5"
	$(INSTALL) -m 644 man/libmorsel-preload.8 "$(DESTDIR)$(MANDIR)/man8/libmorsel-preload.8"
	for f in $(MAN3_LINKS); do \
		echo '.so man3/libmorsel.3' > "$(DESTDIR)$(MANDIR)/man3/$$f.3" || exit 1; \
	done

uninstall:
	rm -f "$(DESTDIR)$(BINDIR)/morsel" "$(DESTDIR)$(LIBDIR)/libmorsel.a" \
		"$(DESTDIR)$(SBINDIR)/morsel-cached" "$(DESTDIR)$(UNITDIR)/morsel-cached.service" \
		"$(DESTDIR)$(MANDIR)/man8/morsel-cached.8" \
		"$(DESTDIR)$(SBINDIR)/morsel-tierd" "$(DESTDIR)$(MANDIR)/man8/morsel-tierd.8" \
		"$(DESTDIR)$(LIBDIR)/libmorsel.so.$(VERSION)" \
		"$(DESTDIR)$(LIBDIR)/libmorsel.so.$(SOMAJOR)" "$(DESTDIR)$(LIBDIR)/libmorsel.so" \
		"$(DESTDIR)$(INCLUDEDIR)/morsel.h" "$(DESTDIR)$(INCLUDEDIR)/linux/morsel.h" \
		"$(DESTDIR)$(PKGCONFIGDIR)/morsel.pc" "$(DESTDIR)$(MANDIR)/man1/morsel.1" \
		"$(DESTDIR)$(MANDIR)/man3/libmorsel.3" "$(DESTDIR)$(MANDIR)/man5/morselfs.5" \
		"$(DESTDIR)$(LIBDIR)/libmorsel-preload.so" \
		"$(DESTDIR)$(MANDIR)/man8/libmorsel-preload.8" \
		$(foreach f,$(MAN3_LINKS),"$(DESTDIR)$(MANDIR)/man3/$(f).3")

clean:
	rm -f lib/*.o $(LIB) $(SOLIB) $(SOLINKS) $(BINS) $(PRELOAD)
	rm -f module/*.o module/*.ko module/*.mod* module/modules.order \
		module/Module.symvers module/.*.cmd
	rm -f tests/probe/*.o tests/probe/*.ko tests/probe/*.mod* \
		tests/probe/modules.order tests/probe/Module.symvers tests/probe/.*.cmd
	rm -rf .build
