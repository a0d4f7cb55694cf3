# Morsels: `make demo` and `make test` do all set-up themselves.
CC      ?= cc
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -std=gnu11 -Iinclude/uapi -Ilib
LDLIBS  += -lpthread

LIB     := lib/libmorsel.a
BINS    := tools/morsel tests/morsel_test bench/demo bench/bench

.PHONY: all build setup kernel module user test demo bench checkpatch clean

all: build

setup:
	@scripts/setup

kernel: setup
	@scripts/kernel-build > /dev/null

module: kernel
	@$(MAKE) -s -C "$$(scripts/kernel-build)" M=$(CURDIR)/module modules > /dev/null

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

bench/demo: bench/demo.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

bench/bench: bench/bench.c bench/common.h $(LIB)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lrt

test: build
	@tests/run-all

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
