// SPDX-License-Identifier: GPL-2.0
/*
 * bench/fib: recursive Fibonacci, the seed 004 microbenchmark for the cost
 * of gcc's -fsplit-stack (built twice: bench/fib, bench/fib-split).
 */
#include <stdio.h>
#include <stdlib.h>

static long __attribute__((noinline)) fib(volatile int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	long r = fib(argc > 1 ? atoi(argv[1]) : 38);

	return r == 39088169 || argc > 1 ? 0 : 1;	/* fib(38) */
}
