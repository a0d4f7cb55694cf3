# Morsels: `make demo` and `make test` do all set-up themselves.
CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -std=gnu11 -Iinclude/uapi -Ilib
LDLIBS  += -lpthread

LIB     := lib/libmorsel.a
BINS    := tools/morsel tests/morsel_test tests/safety_test tests/errors_test tests/fs_test tests/kvm_test bench/demo bench/bench
BINS    += tests/fuzz_bin
# New tests use the kernel's kselftest harness, from the built kernel tree.
KSFT     = $(shell scripts/kernel-build)/tools/testing/selftests

.PHONY: all build setup kernel module user test demo bench checkpatch clean

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

user: $(LIB) $(BINS)

build: module user

lib/morsel.o: lib/morsel.c lib/morsel.h include/uapi/linux/morsel.h
	$(CC) $(CFLAGS) -c -o $@ $<

$(LIB): lib/morsel.o
	$(AR) rcs $@ $^

tools/morsel: tools/morsel.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tests/morsel_test: tests/morsel_test.c tests/harness.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tests/fuzz_bin: tests/fuzz.c $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

tests/safety_test: tests/safety_test.c tests/ksft_util.h tests/probe/probe.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/errors_test: tests/errors_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/fs_test: tests/fs_test.c tests/ksft_util.h $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -Itests -o $@ $< $(LIB) $(LDLIBS)

tests/kvm_test: tests/kvm_test.c $(LIB)
	$(CC) $(CFLAGS) -isystem $(KSFT) -o $@ $< $(LIB) $(LDLIBS)

bench/demo: bench/demo.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

bench/bench: bench/bench.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

test: build
	@tests/run-all

.PHONY: fuzz
fuzz: build
	@vm/run --mem 3G --timeout 7200 -- tests/fuzz --ops 1000000

demo: build
	@vm/run --mem 4G -- bench/demo

bench: build
	@bench/run

checkpatch: kernel
	@"$$(scripts/kernel-build)"/scripts/checkpatch.pl --strict --no-tree --terse \
		-f $(filter-out %.mod.c,$(wildcard module/*.c)) module/*.h include/uapi/linux/morsel.h

clean:
	rm -f lib/*.o $(LIB) $(BINS)
	rm -f module/*.o module/*.ko module/*.mod* module/modules.order \
		module/Module.symvers module/.*.cmd
	rm -f tests/probe/*.o tests/probe/*.ko tests/probe/*.mod* \
		tests/probe/modules.order tests/probe/Module.symvers tests/probe/.*.cmd
	rm -rf .build
