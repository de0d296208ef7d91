/* SPDX-License-Identifier: GPL-2.0 */
/*
 * agg.h - aggregation of decoded records into per-process buckets, with Go's
 * cycle-delayed heap accounting (runtime/mprof.go).  See agg.c for the data
 * model and the cycle timeline.
 */
#ifndef KPPROF_AGG_H
#define KPPROF_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

enum kpp_profile_type {
	KPP_HEAP = 0,
	KPP_BLOCK = 1,
	KPP_MUTEX = 2,
	KPP_TYPES
};

/* One heap cycle's worth of events, or their sum (Go's memRecordCycle). */
struct kpp_heap_counts {
	uint64_t allocs, frees;
	uint64_t alloc_bytes, free_bytes;
};

/*
 * struct kpp_bucket - one (process, stack, size, rate) heap bucket or one
 * (process, stack) contention bucket.  Created on first sight, never
 * changed in key; indices (not pointers) link buckets, since the array
 * grows by realloc.
 */
struct kpp_bucket {
	uint32_t next;		/* hash chain: index + 1, 0 ends */
	uint32_t pid;
	uint32_t stack;		/* id in the stack table */
	uint8_t type;		/* enum kpp_profile_type */
	uint8_t dirty;		/* bit s: future[s] holds something */
	uint16_t pad;
	uint64_t size;		/* heap: object size (bytes asked for) */
	uint64_t rate;		/* heap: mem_rate it was sampled at; else 0 */
	union {
		struct {
			struct kpp_heap_counts active;	 /* whole cycles */
			struct kpp_heap_counts future[3]; /* cycles not yet complete */
		} heap;
		struct {
			double count;	/* contentions, unbiased */
			double delay;	/* nanoseconds, unbiased */
		} cont;
	};
};

/* A mapped object of a process, from KPPROF_REC_MMAP or /proc/PID/maps. */
struct kpp_map {
	uint64_t start, end, offset;
	uint8_t build_id[KPPROF_BUILD_ID_MAX];
	uint8_t build_id_len;
	bool unmapped;		/* a MUNMAP was seen: kept for old stacks */
	char *path;
};

enum kpp_proc_state { KPP_PROC_ALIVE, KPP_PROC_EXITED };

struct kpp_proc {
	uint32_t pid, ppid;
	/* Unique per process seen (a reused pid gets a new one): delta key. */
	uint64_t serial;
	char comm[KPPROF_COMM_LEN + 1];
	enum kpp_proc_state state;
	uint64_t exit_seq;	/* order of exit, for the keep-N policy */
	bool maps_from_proc;	/* maps were read from /proc, not records */
	bool named;		/* a START/FORK/EXEC record named this image */
	bool seccomp_stopped;	/* KPPROF_NOTE_SECCOMP: its shim went quiet */
	uint64_t seccomp_unsent;	/* the note's value: events not sent by then */
	uint64_t lost;		/* KPPROF_REC_LOST: records its ring lost */
	size_t nr_maps, cap_maps;
	struct kpp_map *maps;
	struct kpp_proc *hnext;
};

/*
 * struct kpp_agg_limits - the memory bound.  What does not fit is counted
 * in struct kpp_agg_stats and reported, never silently lost.
 */
struct kpp_agg_limits {
	size_t max_buckets;
	size_t max_stacks;
	size_t max_live;	/* live sampled allocations remembered */
	size_t max_exited;	/* exited processes kept; older ones dropped */
};

struct kpp_agg_stats {
	uint64_t records[KPPROF_REC_KINDS];
	uint64_t unknown_frees;		/* FREE of an address we never saw sampled */
	uint64_t replaced_allocs;	/* ALLOC of an address already live */
	uint64_t late_records;		/* cycle already complete: put in active */
	uint64_t over_buckets;		/* records lost to max_buckets */
	uint64_t over_stacks;		/* records lost to max_stacks */
	uint64_t over_live;		/* allocations not remembered (max_live) */
	uint64_t procs_dropped;		/* exited processes dropped (max_exited) */
	uint64_t images_ended;		/* exec or pid reuse: the old image dropped */
	uint64_t bad_records;		/* decoder refused (counted by caller) */
	uint64_t lost_records;		/* KPPROF_REC_LOST: full + invalid */
	uint64_t lost_resets;		/* KPPROF_REC_LOST: rings emptied */
	uint64_t cycles_folded;
	uint64_t first_incomplete;	/* every cycle below it is complete */
	bool any_cycle;			/* first_incomplete is meaningful */
	size_t nr_buckets, nr_stacks, nr_live, nr_procs;
	size_t stack_bytes;		/* pcs arena in use */
};

struct kpp_agg;

/* kpp_agg__new - @lim NULL takes the defaults. */
struct kpp_agg *kpp_agg__new(const struct kpp_agg_limits *lim);
void kpp_agg__free(struct kpp_agg *a);
/* kpp_agg__add - account one record; 0 or -ENOMEM. */
int kpp_agg__add(struct kpp_agg *a, const struct kpp_rec *r);
const struct kpp_agg_stats *kpp_agg__stats(const struct kpp_agg *a);

/* The lowest cycle not yet known complete (0 before any record). */
uint64_t kpp_agg__first_incomplete(const struct kpp_agg *a);

struct kpp_proc *kpp_agg__proc(const struct kpp_agg *a, uint32_t pid);
/* Calls @fn for every process (any order); stops on non-zero. */
int kpp_agg__for_each_proc(const struct kpp_agg *a,
			   int (*fn)(void *ctx, struct kpp_proc *p), void *ctx);
/* true if @pid is @root or its descendant, by the ppids COMM records gave. */
bool kpp_agg__descends_from(const struct kpp_agg *a, uint32_t pid, uint32_t root);

/* kpp_agg__add_map - a mapping learnt elsewhere (/proc/PID/maps). */
int kpp_agg__add_map(struct kpp_agg *a, uint32_t pid, uint64_t start, uint64_t end,
		     uint64_t offset, const uint8_t *build_id, uint8_t build_id_len,
		     const char *path, bool from_proc);

size_t kpp_agg__nr_buckets(const struct kpp_agg *a);
const struct kpp_bucket *kpp_agg__bucket(const struct kpp_agg *a, size_t i);
/* The pcs of stack @id, leaf first. */
const uint64_t *kpp_agg__stack(const struct kpp_agg *a, uint32_t id, unsigned int *n);
/* Bumped whenever bucket indices change (processes dropped). */
uint64_t kpp_agg__generation(const struct kpp_agg *a);

/* kpp_agg__expire - apply the max_exited policy now. */
void kpp_agg__expire(struct kpp_agg *a);

#endif
