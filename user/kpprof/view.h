/* SPDX-License-Identifier: GPL-2.0 */
/*
 * view.h - a snapshot of one profile type's buckets (raw, not yet scaled),
 * which can be subtracted from a later one for delta profiles.
 */
#ifndef KPPROF_VIEW_H
#define KPPROF_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agg.h"

/*
 * struct kpp_view_sample - one bucket.  Heap: v = {allocs, alloc_bytes,
 * inuse objects, inuse bytes} as sampled (scaled when written); block and
 * mutex: v = {count, delay ns}, already unbiased.
 */
struct kpp_view_sample {
	uint32_t bucket;
	uint32_t pid;
	uint32_t stack;
	uint64_t size, rate;
	uint64_t proc;		/* kpp_proc.serial: which process, pid reuse apart */
	double v[4];
};

struct kpp_view {
	int type;		/* enum kpp_profile_type */
	int64_t time_ns;	/* CLOCK_REALTIME when taken */
	size_t n, cap;
	struct kpp_view_sample *s;
};

/* Which processes a view takes; NULL takes all. */
typedef bool (*kpp_pid_filter)(void *ctx, uint32_t pid);

int kpp_view__take(struct kpp_view *v, const struct kpp_agg *a, int type,
		   kpp_pid_filter filter, void *ctx);
/*
 * kpp_view__subtract - @v -= @old, bucket by bucket (for ?seconds=).
 * Buckets are matched by what they are (process, stack, size, rate), not
 * by index, so processes dropped in between (indices renumbered) do not
 * matter.  0 or -ENOMEM.
 */
int kpp_view__subtract(struct kpp_view *v, const struct kpp_view *old);
void kpp_view__release(struct kpp_view *v);
/*
 * kpp_view__detach - what writing @v needs from @a, copied: @v's processes
 * (comm, state, mappings) and stacks; @v's stack ids are rewritten to the
 * copy's.  Take it under the lock the ring drainer needs, then symbolize
 * and encode with the copy (kpp_profile__encode_gz(v, copy, ...)) without
 * that lock; kpp_agg__free(copy) after.  NULL: out of memory (@v intact).
 */
struct kpp_agg *kpp_view__detach(struct kpp_view *v, const struct kpp_agg *a);

/* Go's scaleHeapSample: unbias @count objects of @bytes sampled at @rate. */
void kpp_scale_heap(double count, double bytes, uint64_t rate, int64_t *out_count,
		    int64_t *out_bytes);

#endif
