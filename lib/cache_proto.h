/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * The wire format between libmorsel's file-cache client (lib/cache.c) and
 * the morsel-cached daemon (cached/).  Private: not installed.
 *
 * The socket is AF_UNIX SOCK_SEQPACKET: one request, one reply, each a
 * single message of exactly the struct's size.  A GET request carries the
 * client's file descriptor (SCM_RIGHTS, exactly one); a successful GET reply
 * carries the morsel's descriptor, opened O_RDONLY by the daemon.  Errors
 * travel as a positive errno in the reply.  All fields are in host byte
 * order (both ends run on the same machine).  No locking: plain data.
 */
#ifndef MORSEL_CACHE_PROTO_H
#define MORSEL_CACHE_PROTO_H

#include <stdint.h>

#define MORSEL_CACHE_MAGIC	0x6d636163u	/* "mcac" */
#define MORSEL_CACHE_VERSION	1

enum morsel_cache_op {
	MORSEL_CACHE_OP_GET = 1,	/* the file behind the passed fd */
	MORSEL_CACHE_OP_STATS = 2,	/* the counters, no fd */
};

struct morsel_cache_req {
	uint32_t magic;		/* MORSEL_CACHE_MAGIC */
	uint16_t version;	/* MORSEL_CACHE_VERSION */
	uint16_t op;		/* enum morsel_cache_op */
	uint32_t flags;		/* must be 0 */
	uint32_t reserved[5];	/* must be 0 */
};

struct morsel_cache_reply {
	uint32_t magic;
	uint16_t version;
	uint16_t op;		/* the request's op */
	int32_t error;		/* 0 or a positive errno */
	uint32_t flags;		/* GET: MORSEL_CACHE_HIT */
	/* GET: */
	uint64_t size;
	uint64_t extent;
	uint32_t order;
	uint32_t reserved0;
	/* STATS: */
	uint64_t entries, bytes, budget, hits, loads, evictions, refusals;
	uint64_t reserved[4];
};

_Static_assert(sizeof(struct morsel_cache_req) == 32, "request size");
_Static_assert(sizeof(struct morsel_cache_reply) == 128, "reply size");

/*
 * Not wire format, but shared by the daemon and the shim like it: their size
 * options ("64M", "1G", ...).  0, or -1 for anything else or an overflow.
 * In lib/parse_size.c, built into the daemon and the shim, not libmorsel.
 */
int morsel_cache_parse_size(const char *s, uint64_t *out);

#endif /* MORSEL_CACHE_PROTO_H */
