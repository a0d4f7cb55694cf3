// SPDX-License-Identifier: GPL-2.0
/* morsel: command-line tool for morselfs files. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "morsel.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: morsel create PATH SIZE   create a morsel of SIZE bytes (suffixes K M G T)\n"
		"       morsel stat PATH...       order, extent, size, pages, tables, mappings\n");
	exit(2);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end == 'i' && shift)
		end++;
	if (*end == 'B' && shift)
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}

static const char *human(uint64_t bytes, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (bytes >= 1024 && !(bytes % 1024) && i < 4) {
		bytes /= 1024;
		i++;
	}
	snprintf(buf, len, "%" PRIu64 " %s", bytes, unit[i]);
	return buf;
}

static int cmd_stat(const char *path)
{
	struct morsel_stat st;
	char b[32];
	int fd = morsel_open(path, O_RDONLY);
	int err;

	if (fd < 0) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-fd));
		return 1;
	}
	err = morsel_stat(fd, &st);
	close(fd);
	if (err) {
		fprintf(stderr, "morsel: %s: %s\n", path, strerror(-err));
		return 1;
	}
	printf("path:     %s\n", path);
	printf("order:    %" PRIu64 "\n", (uint64_t)st.order);
	printf("extent:   %" PRIu64 " (%s)\n", (uint64_t)st.extent, human(st.extent, b, sizeof(b)));
	printf("size:     %" PRIu64 "\n", (uint64_t)st.size);
	printf("pages:    %" PRIu64 "\n", (uint64_t)st.pages);
	printf("tables:   pte %" PRIu64 " pmd %" PRIu64 " pud %" PRIu64 " p4d %" PRIu64 "\n",
	       (uint64_t)st.tables[0], (uint64_t)st.tables[1],
	       (uint64_t)st.tables[2], (uint64_t)st.tables[3]);
	printf("mappings: %" PRIu64 "\n", (uint64_t)st.mappings);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t size;
	int fd, i, ret = 0;

	if (argc < 3)
		usage();
	if (!strcmp(argv[1], "create") && argc == 4) {
		if (parse_size(argv[3], &size)) {
			fprintf(stderr, "morsel: bad size '%s'\n", argv[3]);
			return 2;
		}
		fd = morsel_create(argv[2], size, 0644);
		if (fd < 0) {
			fprintf(stderr, "morsel: create %s: %s\n", argv[2], strerror(-fd));
			return 1;
		}
		close(fd);
		return 0;
	}
	if (!strcmp(argv[1], "stat")) {
		for (i = 2; i < argc; i++)
			ret |= cmd_stat(argv[i]);
		return ret;
	}
	usage();
	return 2;
}
