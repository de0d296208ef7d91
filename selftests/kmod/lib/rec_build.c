// SPDX-License-Identifier: GPL-2.0
/* rec_build: valid producer records for the selftests (see rec_build.h). */
#include <string.h>

#include "kpp_dev.h"
#include "rec_build.h"

__u64 rec_build__pc(__u64 seed, unsigned int i)
{
	/* splitmix64 of (seed, i): every frame differs, and is recomputable */
	__u64 z = seed * 0x9e3779b97f4a7c15ULL + i + 1;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	/* a plausible user-space return address: non-zero, below 1 << 46 */
	return (z & ((1ULL << 46) - 1)) | 0x400000;
}

static void rec_build__hdr(void *buf, __u16 kind, __u16 nr_pcs, size_t size)
{
	struct kpprof_record *hdr = buf;

	memset(buf, 0, KPP_REC_BUF_MAX);
	hdr->kind = kind;
	hdr->nr_pcs = nr_pcs;
	hdr->size = (__u32)size;
}

size_t rec_build__alloc(void *buf, unsigned int nr_pcs, __u64 seed)
{
	struct kpprof_rec_alloc *r = buf;
	size_t size = sizeof(*r) + nr_pcs * sizeof(__u64);
	unsigned int i;

	rec_build__hdr(buf, KPPROF_REC_ALLOC, nr_pcs, size);
	r->addr = 0x7f0000000000ULL | (seed << 4) | 0x10;
	r->bytes = 24 + seed % 4096;
	r->rate = KPPROF_MEM_RATE_DEFAULT;
	for (i = 0; i < nr_pcs; i++)
		r->pcs[i] = rec_build__pc(seed, i);
	return size;
}

size_t rec_build__free(void *buf, __u64 addr, __u64 bytes)
{
	struct kpprof_rec_free *r = buf;

	rec_build__hdr(buf, KPPROF_REC_FREE, 0, sizeof(*r));
	r->addr = addr;
	r->bytes = bytes;
	return sizeof(*r);
}

size_t rec_build__contention(void *buf, __u16 kind, unsigned int nr_pcs,
			     __u64 seed)
{
	struct kpprof_rec_contention *r = buf;
	size_t size = sizeof(*r) + nr_pcs * sizeof(__u64);
	unsigned int i;

	rec_build__hdr(buf, kind, nr_pcs, size);
	r->delay_ns = 1000 + seed;
	r->rate = kind == KPPROF_REC_MUTEX ? 5 : 10000;
	r->lock = 0x5000 + seed * 64;
	for (i = 0; i < nr_pcs; i++)
		r->pcs[i] = rec_build__pc(seed, i);
	return size;
}

size_t rec_build__mmap(void *buf, const char *path, unsigned int build_id_len)
{
	struct kpprof_rec_mmap *r = buf;
	size_t path_len = strlen(path) + 1;
	size_t size = (sizeof(*r) + path_len + 7) & ~(size_t)7;
	unsigned int i;

	rec_build__hdr(buf, KPPROF_REC_MMAP, 0, size);
	r->start = 0x555555554000ULL;
	r->end = 0x555555558000ULL;
	r->offset = 0x1000;
	for (i = 0; i < build_id_len; i++)
		r->build_id[i] = (__u8)(0xa0 + i);
	r->build_id_len = (__u8)build_id_len;
	r->path_len = (__u16)path_len;
	memcpy(r->path, path, path_len);
	return size;
}

size_t rec_build__munmap(void *buf)
{
	struct kpprof_rec_munmap *r = buf;

	rec_build__hdr(buf, KPPROF_REC_MUNMAP, 0, sizeof(*r));
	r->start = 0x555555554000ULL;
	r->end = 0x555555558000ULL;
	return sizeof(*r);
}

size_t rec_build__comm(void *buf, __u32 reason)
{
	struct kpprof_rec_comm *r = buf;

	rec_build__hdr(buf, KPPROF_REC_COMM, 0, sizeof(*r));
	r->reason = reason;
	return sizeof(*r);
}

size_t rec_build__any(void *buf, unsigned int n, __u64 seed)
{
	switch (KPPROF_REC_ALLOC + n % 7) {
	case KPPROF_REC_ALLOC:
		return rec_build__alloc(buf, 1 + seed % KPPROF_STACK_DEPTH_MAX, seed);
	case KPPROF_REC_FREE:
		return rec_build__free(buf, 0x1000 + seed * 16, 32);
	case KPPROF_REC_BLOCK:
		return rec_build__contention(buf, KPPROF_REC_BLOCK,
					     1 + seed % 64, seed);
	case KPPROF_REC_MUTEX:
		return rec_build__contention(buf, KPPROF_REC_MUTEX,
					     1 + seed % 64, seed);
	case KPPROF_REC_MMAP:
		return rec_build__mmap(buf, seed & 1 ? "/usr/lib/x86_64-linux-gnu/libc.so.6" :
				       "/bin/true", seed % (KPPROF_BUILD_ID_MAX + 1));
	case KPPROF_REC_MUNMAP:
		return rec_build__munmap(buf);
	default:
		return rec_build__comm(buf, KPPROF_COMM_FORK);
	}
}
