// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The size options of morsel-cached (--budget) and of the shim
 * (MORSEL_PRELOAD_MIN_SIZE): decimal digits and an optional K, M, G or T
 * (powers of 1024; "KiB" and "KB" too).  Built into those two programs
 * only, not into libmorsel (whose archive defines exactly the functions of
 * morsel.h).  No state, no locking.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "cache_proto.h"

int morsel_cache_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && *end == 'i')
		end++;
	if (shift && *end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}
