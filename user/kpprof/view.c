// SPDX-License-Identifier: GPL-2.0
/* view.c - snapshots of the aggregation, and Go's heap unbiasing. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "view.h"

void kpp_view__release(struct kpp_view *v)
{
	free(v->s);
	memset(v, 0, sizeof(*v));
}

/*
 * Go's fallback (memProfileInternal): when no bucket of the view has data
 * from a complete cycle (no cycle has completed since these processes
 * started), report the cycles not yet complete rather than nothing.
 * Unlike Go this does not fold them for good: the next view, once a cycle
 * is complete, is Go's usual one.
 */
static void add_pending(struct kpp_view *v, const struct kpp_agg *a)
{
	for (size_t i = 0; i < v->n; i++) {
		const struct kpp_bucket *b = kpp_agg__bucket(a, v->s[i].bucket);

		for (int k = 0; k < 3; k++) {
			const struct kpp_heap_counts *c = &b->heap.future[k];

			v->s[i].v[0] += c->allocs;
			v->s[i].v[1] += c->alloc_bytes;
			v->s[i].v[2] += (double)c->allocs - (double)c->frees;
			v->s[i].v[3] += (double)c->alloc_bytes - (double)c->free_bytes;
		}
	}
}

int kpp_view__take(struct kpp_view *v, const struct kpp_agg *a, int type,
		   kpp_pid_filter filter, void *ctx)
{
	size_t nb = kpp_agg__nr_buckets(a);
	struct timespec ts;
	bool clear = true;

	memset(v, 0, sizeof(*v));
	v->type = type;
	clock_gettime(CLOCK_REALTIME, &ts);
	v->time_ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
	for (size_t i = 0; i < nb; i++) {
		const struct kpp_bucket *b = kpp_agg__bucket(a, i);
		struct kpp_view_sample *s;

		/* NULL: a free slot (its process was dropped). */
		if (!b || b->type != type || (filter && !filter(ctx, b->pid)))
			continue;
		if (v->n == v->cap) {
			size_t cap = v->cap ? 2 * v->cap : 256;
			void *p = realloc(v->s, cap * sizeof(*v->s));

			if (!p) {
				kpp_view__release(v);
				return -ENOMEM;
			}
			v->s = p;
			v->cap = cap;
		}
		s = &v->s[v->n++];
		const struct kpp_proc *p = kpp_agg__proc(a, b->pid);

		s->bucket = i;
		s->pid = b->pid;
		s->proc = p ? p->serial : 0;
		s->stack = b->stack;
		s->size = b->size;
		s->rate = b->rate;
		if (type == KPP_HEAP) {
			const struct kpp_heap_counts *c = &b->heap.active;

			s->v[0] = c->allocs;
			s->v[1] = c->alloc_bytes;
			s->v[2] = (double)c->allocs - (double)c->frees;
			s->v[3] = (double)c->alloc_bytes - (double)c->free_bytes;
			clear &= !c->allocs && !c->frees;
		} else {
			s->v[0] = b->cont.count;
			s->v[1] = b->cont.delay;
			s->v[2] = s->v[3] = 0;
		}
	}
	if (type == KPP_HEAP && clear)
		add_pending(v, a);
	return 0;
}

struct kpp_agg *kpp_view__detach(struct kpp_view *v, const struct kpp_agg *a)
{
	struct kpp_agg *c = kpp_agg__new_copy();
	uint32_t *ids = malloc((v->n + 1) * sizeof(*ids));

	if (!c || !ids)
		goto fail;
	for (size_t i = 0; i < v->n; i++) {
		const struct kpp_proc *p = kpp_agg__proc(a, v->s[i].pid);
		const uint64_t *pcs;
		unsigned int n;
		int64_t id;

		if (p && !kpp_agg__proc(c, p->pid) && !kpp_agg__copy_proc(c, p))
			goto fail;
		pcs = kpp_agg__stack(a, v->s[i].stack, &n);
		id = kpp_agg__pin_stack(c, pcs, n);
		if (id < 0)
			goto fail;
		ids[i] = id;
	}
	/* Only now, so that a failure leaves @v as it was. */
	for (size_t i = 0; i < v->n; i++)
		v->s[i].stack = ids[i];
	free(ids);
	return c;
fail:
	free(ids);
	kpp_agg__free(c);
	return NULL;
}

static int sample_cmp(const void *x, const void *y)
{
	const struct kpp_view_sample *a = *(const struct kpp_view_sample * const *)x;
	const struct kpp_view_sample *b = *(const struct kpp_view_sample * const *)y;

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	if (a->rate != b->rate)
		return a->rate < b->rate ? -1 : 1;
	return 0;
}

int kpp_view__subtract(struct kpp_view *v, const struct kpp_view *old)
{
	const struct kpp_view_sample **idx;

	if (v->type != old->type)
		return -EINVAL;
	if (!old->n)
		return 0;
	/*
	 * Bucket indices change when a process is dropped, so match by the
	 * bucket's key; stack ids are never reused, process serials neither.
	 */
	idx = malloc(old->n * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < old->n; i++)
		idx[i] = &old->s[i];
	qsort(idx, old->n, sizeof(*idx), sample_cmp);
	for (size_t i = 0; i < v->n; i++) {
		const struct kpp_view_sample *key = &v->s[i], **hit;

		hit = bsearch(&key, idx, old->n, sizeof(*idx), sample_cmp);
		if (hit)
			for (int k = 0; k < 4; k++)
				v->s[i].v[k] -= (*hit)->v[k];
	}
	free(idx);
	return 0;
}

void kpp_scale_heap(double count, double bytes, uint64_t rate, int64_t *out_count,
		    int64_t *out_bytes)
{
	double avg, scale;

	if (count == 0 || bytes == 0) {
		*out_count = 0;
		*out_bytes = 0;
		return;
	}
	if (rate <= 1) {
		*out_count = (int64_t)count;
		*out_bytes = (int64_t)bytes;
		return;
	}
	avg = bytes / count;
	scale = 1 / (1 - exp(-avg / (double)rate));
	*out_count = (int64_t)(count * scale);
	*out_bytes = (int64_t)(bytes * scale);
}
