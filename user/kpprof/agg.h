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
#include <stdio.h>

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

/* The type of a bucket slot that is free (its process was dropped). */
#define KPP_FREE_BUCKET 0xff

/*
 * struct kpp_bucket - one (process, stack, size, rate) heap bucket or one
 * (process, stack) contention bucket.  Created on first sight, never
 * changed in key; indices (not pointers) link buckets, since the array
 * grows by realloc.  A dropped process's slots are reused by new buckets:
 * kpp_agg__bucket() returns NULL for a free slot.
 */
struct kpp_bucket {
	uint32_t next;		/* hash chain (free list when free): index + 1, 0 ends */
	uint32_t pid;
	uint32_t stack;		/* id in the stack table */
	uint8_t type;		/* enum kpp_profile_type, or KPP_FREE_BUCKET */
	uint8_t dirty;		/* bit s: future[s] holds something */
	uint16_t pad;
	uint32_t pnext;		/* the process's own buckets: index + 1, 0 ends */
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
	/*
	 * The uid of its process's records: files are opened for it only
	 * while the process under its pid is still wholly that uid's (objopen.c).
	 */
	uint32_t uid;
	char *path;
};

enum kpp_proc_state { KPP_PROC_ALIVE, KPP_PROC_EXITED };

struct kpp_live_ent;
struct kpp_uid_acct;

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
	/* Mappings beyond KPP_MAX_MAPS_PER_PROC (agg.c): refused, counted here. */
	uint32_t maps_refused;
	uint64_t seccomp_unsent;	/* the note's value: events not sent by then */
	uint64_t lost;		/* KPPROF_REC_LOST: records its ring lost */
	size_t nr_maps, cap_maps;
	struct kpp_map *maps;
	struct kpp_proc *hnext;
	/*
	 * What this process owns, so that forgetting it costs what it owns
	 * (agg.c drop_proc): its buckets (a list through kpp_bucket.pnext),
	 * its live sampled allocations (its own table), its place in the
	 * exited FIFO, and the uid its state is charged to.
	 */
	uint32_t uid;		/* of the first record that named it */
	uint32_t buckets;	/* index + 1 of its newest bucket, 0: none */
	size_t nr_buckets;
	struct kpp_live_ent *live;
	size_t live_size, nr_live;
	struct kpp_proc *enext, *eprev;	/* exited FIFO, oldest first */
	struct kpp_proc *uenext, *ueprev;	/* its uid's exited FIFO */
	struct kpp_uid_acct *acct;
};

/*
 * struct kpp_agg_limits - the memory bound, in all and per producer.  What
 * does not fit is counted in struct kpp_agg_stats, by reason, and
 * reported, never silently lost.  0 takes the default (agg.c), SIZE_MAX
 * is no limit.  The per-uid and per-process quotas make one user's flood
 * cost only that user's records: a uid cannot take more than its share of
 * the global caps.
 */
struct kpp_agg_limits {
	size_t max_buckets;
	size_t max_stacks;
	size_t max_stack_pcs;	/* frames of all interned stacks */
	size_t max_live;	/* live sampled allocations remembered */
	size_t max_exited;	/* exited processes kept; older ones dropped */
	/*
	 * Of them, one uid's (default a quarter): a uid churning short-lived
	 * producers drops its own oldest, not everyone's exited profiles.
	 */
	size_t max_uid_exited;
	size_t max_uid_buckets, max_uid_stack_pcs, max_uid_live, max_uid_procs;
	size_t max_proc_buckets, max_proc_live;
	/*
	 * An exited process's unfreed allocations: false (serve, collect):
	 * freed at its exit, as in Go a process that is gone has no heap
	 * (its alloc_* stay while it is kept); true (record): kept in use,
	 * the "leaked at exit" view of one command.
	 */
	bool keep_exited_inuse;
};

struct kpp_agg_stats {
	uint64_t records[KPPROF_REC_KINDS];
	uint64_t unknown_frees;		/* FREE of an address we never saw sampled */
	uint64_t replaced_allocs;	/* ALLOC of an address already live */
	uint64_t late_records;		/* cycle already complete: put in active */
	uint64_t over_buckets;		/* records lost to max_buckets */
	uint64_t over_stacks;		/* records lost to max_stacks */
	uint64_t over_live;		/* allocations not remembered (max_live) */
	uint64_t over_stack_pcs;	/* records lost to max_stack_pcs */
	/* Refused against a producer's quota (struct kpp_agg_limits). */
	uint64_t over_uid_buckets, over_uid_stacks, over_uid_live, over_uid_procs;
	uint64_t over_uid_exited;	/* exited processes dropped for their uid's share */
	uint64_t over_proc_buckets, over_proc_live;
	uint64_t exit_freed;		/* allocations freed by their process's exit */
	uint64_t stacks_freed;		/* stacks reclaimed: no bucket used them */
	uint64_t procs_dropped;		/* exited processes dropped (max_exited) */
	uint64_t images_ended;		/* exec or pid reuse: the old image dropped */
	uint64_t bad_records;		/* decoder refused (counted by caller) */
	uint64_t lost_records;		/* KPPROF_REC_LOST: full + invalid */
	uint64_t lost_resets;		/* KPPROF_REC_LOST: rings emptied */
	uint64_t cycles_folded;
	/*
	 * Entries (buckets, live-table slots, processes) visited to drop
	 * processes or to apply the exited-process policy: the cost of
	 * forgetting, which must follow what is forgotten (tests check it).
	 */
	uint64_t drop_work;
	uint64_t first_incomplete;	/* every cycle below it is complete */
	bool any_cycle;			/* first_incomplete is meaningful */
	size_t nr_buckets, nr_stacks, nr_live, nr_procs, nr_uids;
	size_t stack_bytes;		/* stack table and frames in use */
};

struct kpp_agg;

/* kpp_agg__new - @lim NULL takes the defaults. */
struct kpp_agg *kpp_agg__new(const struct kpp_agg_limits *lim);
void kpp_agg__free(struct kpp_agg *a);
/* kpp_agg__add - account one record; 0 or -ENOMEM. */
int kpp_agg__add(struct kpp_agg *a, const struct kpp_rec *r);
const struct kpp_agg_stats *kpp_agg__stats(const struct kpp_agg *a);
/*
 * kpp_agg__refusals - one line of the records refused against a quota or
 * cap, by reason ("" when none), for profile comments; true if any.
 */
bool kpp_agg__refusals(const struct kpp_agg_stats *st, char *buf, size_t len);
/* kpp_agg__print_stats - every counter and size, "name value" per line. */
void kpp_agg__print_stats(const struct kpp_agg_stats *st, FILE *f);

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

/* The extent of bucket indices (some slots may be free). */
size_t kpp_agg__nr_buckets(const struct kpp_agg *a);
/* Bucket @i, or NULL for a free slot or beyond the extent. */
const struct kpp_bucket *kpp_agg__bucket(const struct kpp_agg *a, size_t i);
/* The pcs of stack @id, leaf first. */
const uint64_t *kpp_agg__stack(const struct kpp_agg *a, uint32_t id, unsigned int *n);
/* Bumped whenever buckets or stacks are freed (processes dropped). */
uint64_t kpp_agg__generation(const struct kpp_agg *a);

/*
 * kpp_agg__proc_exited - @p is gone without an EXIT record (found by
 * kill(pid, 0)): as an EXIT read now.  Does not drop anything, so it is
 * safe inside kpp_agg__for_each_proc; call kpp_agg__expire after.
 */
void kpp_agg__proc_exited(struct kpp_agg *a, struct kpp_proc *p);
/* kpp_agg__expire - apply the max_exited policy now. */
void kpp_agg__expire(struct kpp_agg *a);

/*
 * Copies for work done outside the lock the ring drainer needs
 * (symbolization, encoding, /debug/pprof/symbol): an aggregation with no
 * limits that holds only what is copied into it, freed with kpp_agg__free.
 */
struct kpp_agg *kpp_agg__new_copy(void);
/* kpp_agg__copy_proc - @src's identity, comm, state and mappings into @dst. */
struct kpp_proc *kpp_agg__copy_proc(struct kpp_agg *dst, const struct kpp_proc *src);
/* kpp_agg__pin_stack - intern @n pcs in @dst for its life: the id, or <0. */
int64_t kpp_agg__pin_stack(struct kpp_agg *dst, const uint64_t *pcs, unsigned int n);
/* kpp_agg__copy_procs - every process (or only @pid, if not 0) with its mappings. */
struct kpp_agg *kpp_agg__copy_procs(const struct kpp_agg *a, uint32_t pid);

#endif
