// SPDX-License-Identifier: GPL-2.0
/*
 * mm_static: a statically linked program for mm_test.  A shim cannot
 * reach it; the kernel hook does.  It mallocs and touches 4 MiB (brk
 * fails under a memory manager, so malloc's heap comes from mmap) and
 * exits 0 if that memory lies in a mapping of a file on the file system
 * of directory argv[1] (its device in the maps line).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int main(int argc, char **argv)
{
	size_t len = 4 << 20;
	unsigned long a, lo, hi;
	char line[512], dev[32];
	char *p = malloc(len);
	struct stat st;
	int found = 0;
	FILE *f;

	if (argc != 2 || !p || stat(argv[1], &st))
		return 2;
	snprintf(dev, sizeof(dev), "%02x:%02x ", major(st.st_dev),
		 minor(st.st_dev));
	memset(p, 's', len);
	a = (unsigned long)p;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *d = line;
		int i;

		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2 || a < lo ||
		    a + len > hi)
			continue;
		for (i = 0; i < 3 && d; i++)
			d = strchr(d + 1, ' ');
		if (d && !strncmp(d + 1, dev, strlen(dev)))
			found = 1;
	}
	return found ? 0 : 1;
}
