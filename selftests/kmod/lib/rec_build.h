/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rec_build: valid records of every producer kind, as a shim would write
 * them (kernel-owned fields zero).  Each builder zeroes @buf (at least
 * KPP_REC_BUF_MAX bytes), fills one record and returns its size.
 */
#ifndef REC_BUILD_H
#define REC_BUILD_H

#include <stddef.h>
#include <kpprof.h>

/* pcs[i] of the stack records below: a pattern a reader can recompute */
__u64 rec_build__pc(__u64 seed, unsigned int i);

size_t rec_build__alloc(void *buf, unsigned int nr_pcs, __u64 seed);
size_t rec_build__free(void *buf, __u64 addr, __u64 bytes);
size_t rec_build__contention(void *buf, __u16 kind, unsigned int nr_pcs,
			     __u64 seed);
size_t rec_build__mmap(void *buf, const char *path, unsigned int build_id_len);
size_t rec_build__munmap(void *buf);
size_t rec_build__comm(void *buf, __u32 reason);

/* rec_build__any - a valid record of kind KPPROF_REC_ALLOC + (n % 7) */
size_t rec_build__any(void *buf, unsigned int n, __u64 seed);

#endif /* REC_BUILD_H */
