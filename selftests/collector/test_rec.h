/* SPDX-License-Identifier: GPL-2.0 */
/*
 * test_rec.h - build records as the kernel puts them in the ring (with the
 * UAPI structs, kernel-owned fields filled in), for the host tests.
 */
#ifndef KPPROF_TEST_REC_H
#define KPPROF_TEST_REC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <kpprof.h>

#include "agg.h"
#include "decode.h"

#define FIXTURE_FORMAT "selftests/collector/fixtures/format.txt"

static inline char *test_read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, n + 1);
	if (buf && fread(buf, 1, n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* The fixture, found from the repo root or from selftests/collector. */
static inline char *test_format(void)
{
	char *t = test_read_text(FIXTURE_FORMAT);

	return t ? t : test_read_text("fixtures/format.txt");
}

struct test_buf {
	union {
		struct kpprof_record hdr;
		struct kpprof_rec_alloc alloc;
		struct kpprof_rec_free free;
		struct kpprof_rec_contention cont;
		struct kpprof_rec_mmap mmap;
		struct kpprof_rec_comm comm;
		struct kpprof_rec_cycle cyc;
		struct kpprof_rec_munmap munmap;
		uint8_t bytes[8192];
	};
};

static inline void test_hdr(struct kpprof_record *h, int kind, size_t size,
			    uint32_t pid, uint64_t cycle)
{
	h->kind = kind;
	h->size = (size + 7) & ~7UL;
	h->tgid = pid;
	h->tid = pid;
	h->cycle = cycle;
	h->time_ns = 1000;
}

static inline size_t test_alloc(struct test_buf *b, uint32_t pid, uint64_t cycle,
				uint64_t addr, uint64_t bytes, uint64_t rate,
				const uint64_t *pcs, unsigned int n)
{
	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, KPPROF_REC_ALLOC, sizeof(b->alloc) + 8 * n, pid, cycle);
	b->hdr.nr_pcs = n;
	b->alloc.addr = addr;
	b->alloc.bytes = bytes;
	b->alloc.rate = rate;
	memcpy(b->alloc.pcs, pcs, 8 * n);
	return b->hdr.size;
}

static inline size_t test_free(struct test_buf *b, uint32_t pid, uint64_t cycle,
			       uint64_t addr, uint64_t bytes)
{
	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, KPPROF_REC_FREE, sizeof(b->free), pid, cycle);
	b->free.addr = addr;
	b->free.bytes = bytes;
	return b->hdr.size;
}

static inline size_t test_cont(struct test_buf *b, int kind, uint32_t pid, uint64_t cycle,
			       uint64_t delay, uint64_t rate, const uint64_t *pcs,
			       unsigned int n)
{
	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, kind, sizeof(b->cont) + 8 * n, pid, cycle);
	b->hdr.nr_pcs = n;
	b->cont.delay_ns = delay;
	b->cont.rate = rate;
	b->cont.lock = 0x1000;
	memcpy(b->cont.pcs, pcs, 8 * n);
	return b->hdr.size;
}

static inline size_t test_comm(struct test_buf *b, uint32_t pid, uint32_t ppid,
			       uint32_t reason, const char *comm, uint64_t cycle)
{
	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, KPPROF_REC_COMM, sizeof(b->comm), pid, cycle);
	b->comm.reason = reason;
	b->comm.ppid = ppid;
	size_t n = strlen(comm);

	memcpy(b->comm.comm, comm, n < sizeof(b->comm.comm) ? n : sizeof(b->comm.comm));
	return b->hdr.size;
}

static inline size_t test_cycle(struct test_buf *b, uint64_t cycle)
{
	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, KPPROF_REC_CYCLE, sizeof(b->cyc), 0, cycle);
	b->hdr.tid = 0;
	return b->hdr.size;
}

static inline size_t test_mmap(struct test_buf *b, uint32_t pid, uint64_t start,
			       uint64_t end, uint64_t offset, const char *path)
{
	size_t plen = strlen(path) + 1;

	memset(b, 0, sizeof(*b));
	test_hdr(&b->hdr, KPPROF_REC_MMAP, sizeof(b->mmap) + plen, pid, 0);
	b->mmap.start = start;
	b->mmap.end = end;
	b->mmap.offset = offset;
	b->mmap.path_len = plen;
	memcpy(b->mmap.path, path, plen);
	return b->hdr.size;
}

/* Decode then aggregate, as the ring callback does; the decode result. */
static inline int test_feed(const struct kpp_decoder *d, struct kpp_agg *a,
			    const struct test_buf *b, size_t len)
{
	struct kpp_rec r;
	int err = kpp_decoder__decode(d, b->bytes, len, &r);

	return err ? err : kpp_agg__add(a, &r);
}

#endif
