// SPDX-License-Identifier: GPL-2.0
/*
 * The allocation wrappers and the heap sampling decision (tcmalloc's and
 * Go's MemProfileRate scheme).
 *
 * Each thread counts down the bytes left before its next sample; the
 * countdown is drawn from an exponential distribution with mean mem_rate,
 * so sample points form a Poisson process over allocated bytes (a fixed
 * stride would alias with regular allocation patterns).  An allocation of
 * n bytes with n >= countdown is sampled and a fresh countdown drawn.
 * The unsampled path is one thread-local compare and subtract.
 *
 * The config is re-read only when a countdown expires.  To bound how long
 * a new rate takes to reach a thread, a countdown longer than POLL_BYTES
 * is cut at POLL_BYTES and marked "poll only": when it expires we re-read
 * the config and draw again for the bytes beyond the poll point.  Because
 * the exponential distribution is memoryless this leaves the sampling
 * exactly Poisson.  With heap sampling off the thread polls every
 * POLL_BYTES; with no module it never comes back to the slow path.
 *
 * rate == 1 keeps the countdown at 0: every allocation is sampled.
 */
#include <errno.h>
#include <string.h>
#include <malloc.h>
#include "shim.h"

#define POLL_BYTES	(64ULL << 20)
#define OFF_POLL_BYTES	(KPPROF_MEM_RATE_DEFAULT)

KPP_TLS struct kpp_thread kpp_thread;

static void arm(struct kpp_thread *t, uint64_t next)
{
	if (next > POLL_BYTES) {
		t->countdown = POLL_BYTES;
		t->poll_only = 1;
	} else {
		t->countdown = next;
		t->poll_only = 0;
	}
}

/*
 * heap_tick - the countdown has expired for an allocation of @n bytes
 * (n >= countdown).  Decide whether it is sampled and re-arm.  Returns the
 * rate to sample with, or 0.
 */
__attribute__((noinline))
static uint64_t heap_tick(struct kpp_thread *t, size_t n)
{
	uint64_t overshoot, rate, d;
	int ready = atomic_load_explicit(&kpp.ready, memory_order_acquire);

	if (ready <= 0) {
		if (ready < 0)
			t->countdown = UINT64_MAX;	/* pass-through for good */
		return 0;
	}
	if (t->guard)
		return 0;
	overshoot = n - t->countdown;
	kpp_config_refresh(t);
	rate = t->mem_rate;
	/*
	 * A countdown drawn with another mean than the rate now in force
	 * (a new thread has drawn none; or the rate changed) does not mark a
	 * sample point of this rate: treat its end as a poll point and draw
	 * afresh, as Go's nextSample does.  Memorylessness keeps the sample
	 * points Poisson at the new rate from here on.
	 */
	if (rate != t->heap_rate) {
		t->poll_only = 1;
		t->heap_rate = rate;
	}
	if (!rate) {
		t->countdown = OFF_POLL_BYTES;
		t->poll_only = 1;
		return 0;
	}
	if (rate == 1) {
		t->countdown = 0;
		t->poll_only = 0;
		return 1;
	}
	if (t->poll_only) {
		/* No sample point yet: draw where it lies past the poll point. */
		d = kpp_rand_exp(t, rate);
		if (d > overshoot) {
			arm(t, d - overshoot);
			return 0;
		}
	}
	arm(t, kpp_rand_exp(t, rate));
	return rate;
}

/*
 * The entry points outside malloc's family.  When our malloc is not the
 * program's (alloc_check.c), they sample nothing either: a heap profile of
 * the C++ or jemalloc half of a program would mislead more than none.
 */
uint64_t kpp_heap_tick(struct kpp_thread *t, size_t n)
{
	if (unlikely(atomic_load_explicit(&kpp.no_heap, memory_order_relaxed))) {
		t->countdown = UINT64_MAX;
		return 0;
	}
	return heap_tick(t, n);
}

/* heap_take - account @n bytes; the rate to sample with, or 0. */
static inline uint64_t heap_take(struct kpp_thread *t, size_t n)
{
	if (likely(n < t->countdown)) {
		t->countdown -= n;
		return 0;
	}
	return heap_tick(t, n);
}

void kpp_heap_sampled(struct kpp_thread *t, void *p, size_t size)
{
	uint64_t rate = t->mem_rate;

	struct kpp_sample_frame sf;

	if (!p || !rate || !kpp_sample_begin(t, &sf))
		return;
	/* Remember the address first: a free racing with the record must
	 * find it.  No record went in (no stack, ring full, stopped): forget
	 * it again, its free needs no FREE record. */
	if (kpp_set_insert(p, size) && !kpp_emit_alloc(t, p, size, rate)) {
		uint64_t unused;

		kpp_set_remove(p, &unused);
	}
	kpp_sample_end(t, &sf);
}

__attribute__((noinline))
static void *malloc_slow(size_t n)
{
	struct kpp_thread *t = &kpp_thread;
	void *p = kpp_real.malloc(n);

	if (heap_tick(t, n))
		kpp_heap_sampled(t, p, n);
	return p;
}

KPP_EXPORT void *malloc(size_t n)
{
	struct kpp_thread *t = &kpp_thread;

	if (likely(n < t->countdown)) {
		t->countdown -= n;
		return kpp_real.malloc(n);
	}
	return malloc_slow(n);
}

__attribute__((noinline))
static void free_slow(void *p)
{
	uint64_t size;

	if (kpp_in_arena(p))
		return;		/* from the start-up arena: never freed */
	if (kpp_set_remove(p, &size) && !kpp_free_record(p, size))
		return;		/* held until its FREE goes in */
	kpp_real.free(p);
}

KPP_EXPORT void free(void *p)
{
	if (likely(!kpp_set_maybe(p))) {
		kpp_real.free(p);
		return;
	}
	free_slow(p);
}

KPP_EXPORT void *calloc(size_t n, size_t m)
{
	struct kpp_thread *t = &kpp_thread;
	size_t total;
	void *p;

	if (__builtin_mul_overflow(n, m, &total))
		return kpp_real.calloc(n, m);	/* fails with ENOMEM */
	if (likely(total < t->countdown)) {
		t->countdown -= total;
		return kpp_real.calloc(n, m);
	}
	p = kpp_real.calloc(n, m);
	if (heap_tick(t, total))
		kpp_heap_sampled(t, p, total);
	return p;
}

/*
 * move_held - realloc of a sampled block whose FREE the full ring refused:
 * the block must not go back to the allocator before its FREE goes in
 * (emit.c holds it), so it is moved by hand, with every byte the program
 * may use (malloc_usable_size, not the size it asked for: programs such as
 * systemd's greedy_realloc and redis write into the slack).  On failure
 * the block stays as it was, its ALLOC still standing (the FREE never went
 * in).
 */
static void *move_held(struct kpp_thread *t, void *p, uint64_t old, size_t n)
{
	size_t keep = malloc_usable_size(p);
	void *q = kpp_real.malloc(n);

	if (!q) {
		(void)kpp_set_insert(p, old);	/* a full table counts itself */
		return NULL;
	}
	memcpy(q, p, keep < n ? keep : n);
	if (!kpp_free_hold(p, old))
		kpp_real.free(p);		/* FREE lost, counted */
	if (heap_take(t, n))
		kpp_heap_sampled(t, q, n);
	return q;
}

/*
 * realloc_common - realloc and reallocarray.  A sampled block: its FREE is
 * written first (before another thread can get the address back from the
 * allocator), then the real realloc does the work, so the program keeps
 * the allocator's semantics: the usable slack is copied, a large block
 * grows in place with mremap(2) instead of being copied (large blocks are
 * nearly always sampled: p = 1 - exp(-size / rate)).  The result is an
 * allocation of the new size, sampled or not like any other.  If the real
 * realloc fails, the old block is still the program's: it is recorded
 * again, with this call's stack and the rate now in force.  A FREE the
 * full ring refused: move_held().  realloc(p, 0) of a sampled block is a
 * free.  reallocarray is checked for overflow here and then served by the
 * real realloc: glibc's reallocarray calls realloc through the PLT, which
 * would land in our wrapper and sample twice.
 */
static void *realloc_common(void *p, size_t n)
{
	struct kpp_thread *t = &kpp_thread;
	uint64_t old = 0;
	void *q;

	if (p && kpp_set_maybe(p)) {
		if (kpp_in_arena(p)) {
			size_t keep = kpp_arena_size_of(p);

			q = malloc(n);
			if (q)
				memcpy(q, p, keep < n ? keep : n);
			return q;
		}
		if (kpp_set_remove(p, &old)) {
			if (!n) {
				if (kpp_free_record(p, old))
					return kpp_real.realloc(p, 0);
				return NULL;	/* held: freed later */
			}
			if (kpp_free_submit(p, old) == ENOBUFS)
				return move_held(t, p, old, n);
			q = kpp_real.realloc(p, n);
			if (!q) {
				int saved = errno;

				kpp_heap_sampled(t, p, old);
				errno = saved;
				return NULL;
			}
			if (heap_take(t, n))
				kpp_heap_sampled(t, q, n);
			return q;
		}
	}
	q = kpp_real.realloc(p, n);
	if (q && heap_take(t, n))
		kpp_heap_sampled(t, q, n);
	return q;
}

KPP_EXPORT void *realloc(void *p, size_t n)
{
	struct kpp_thread *t = &kpp_thread;

	if (likely(!kpp_set_maybe(p) && n < t->countdown)) {
		t->countdown -= n;
		return kpp_real.realloc(p, n);
	}
	return realloc_common(p, n);
}

KPP_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t total;

	if (__builtin_mul_overflow(n, m, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

#define SAMPLE_AFTER(call, size)				\
	do {							\
		struct kpp_thread *t_ = &kpp_thread;		\
		void *p_ = (call);				\
		if (heap_take(t_, (size)))			\
			kpp_heap_sampled(t_, p_, (size));	\
		return p_;					\
	} while (0)

KPP_EXPORT void *memalign(size_t align, size_t n)
{
	SAMPLE_AFTER(kpp_real.memalign(align, n), n);
}

KPP_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	SAMPLE_AFTER(kpp_real.aligned_alloc(align, n), n);
}

KPP_EXPORT void *valloc(size_t n)
{
	SAMPLE_AFTER(kpp_real.valloc(n), n);
}

KPP_EXPORT void *pvalloc(size_t n)
{
	SAMPLE_AFTER(kpp_real.pvalloc(n), n);
}

KPP_EXPORT int posix_memalign(void **pp, size_t align, size_t n)
{
	struct kpp_thread *t = &kpp_thread;
	int r = kpp_real.posix_memalign(pp, align, n);

	if (heap_take(t, n) && r == 0)
		kpp_heap_sampled(t, *pp, n);
	return r;
}
