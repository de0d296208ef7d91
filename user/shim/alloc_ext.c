// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation entry points beyond malloc's family that allocators export
 * and programs call directly, bypassing malloc/free:
 *
 *   C23        free_sized, free_aligned_sized
 *   jemalloc   mallocx, rallocx, xallocx, sdallocx, dallocx
 *              (nallocx and sallocx only compute sizes: not wrapped)
 *
 * Each forwards to the next definition (dlsym RTLD_NEXT, looked up at
 * start, kpp_next_resolve; a missing one is cached as absent, real.c,
 * so the fallbacks below cost no look-up per call, and an allocator
 * dlopen'ed later is never looked in).  These names are exported whether or not the
 * process has an allocator that defines them, so a wrapper whose next
 * definition is missing must still do the right thing: the frees free with
 * the real free(), mallocx/rallocx/xallocx fall back to malloc's family
 * with jemalloc's meaning of the flags (low 6 bits: log2 of the alignment,
 * 0x40: zeroed).  Only a program that goes looking for jemalloc by name
 * (dlsym "mallocx") can tell; one that checks mallctl, as folly does, sees
 * no jemalloc.
 *
 * Sampling is malloc's: allocations count against the thread's countdown,
 * frees of sampled blocks write a FREE record before the block goes back
 * (never held: a refused FREE is dropped and counted).  rallocx is realloc
 * (heap.c): the FREE of a sampled block, then the real rallocx, which keeps
 * the block's contents and grows it in place when it can; the result is an
 * allocation of the new size; on failure the old block is recorded again.
 * An xallocx that changed the block's real size (as
 * malloc_usable_size, jemalloc's when jemalloc is the allocator, tells)
 * resized it in place, which is counted the same way, with the real size
 * it returns.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

enum { FREE_SIZED, FREE_ALIGNED_SIZED, MALLOCX, RALLOCX, XALLOCX, SDALLOCX,
	DALLOCX, NR_FNS };

static const char *const names[NR_FNS] = {
	[FREE_SIZED] = "free_sized",
	[FREE_ALIGNED_SIZED] = "free_aligned_sized",
	[MALLOCX] = "mallocx",
	[RALLOCX] = "rallocx",
	[XALLOCX] = "xallocx",
	[SDALLOCX] = "sdallocx",
	[DALLOCX] = "dallocx",
};

static void *_Atomic alloc_ext_next_fns[NR_FNS] KPP_START_DATA;

const struct kpp_next_table kpp_alloc_ext_next = { alloc_ext_next_fns, names, NR_FNS, NULL, NULL };

static inline void *next_fn(int i)
{
	return kpp_next_cached(&alloc_ext_next_fns[i], names[i], NULL);
}

/*
 * Never held (emit.c): a held block is given back with the real free(),
 * which is not the release function of these entry points (operator
 * delete of an allocator whose blocks are not malloc's, sdallocx...).  A
 * FREE the full ring refused is dropped and counted (frees_lost).
 */
bool kpp_heap_forget(void *p)
{
	uint64_t size;

	if (kpp_in_arena(p))
		return true;	/* from the start-up arena: never freed */
	if (kpp_set_remove(p, &size))
		(void)kpp_free_record_now(p, size);
	return false;
}

static inline void account(struct kpp_thread *t, void *p, size_t n)
{
	if (likely(n < t->countdown)) {
		t->countdown -= n;
		return;
	}
	if (kpp_heap_tick(t, n))
		kpp_heap_sampled(t, p, n);
}

/* ------------------------------------------------------------ frees */

#define FREE_FN(sym, idx, PARAMS, ARGS)						\
KPP_EXPORT void sym PARAMS;							\
void sym PARAMS									\
{										\
	void (*fn) PARAMS;							\
	void *f;								\
										\
	if (unlikely(kpp_set_maybe(p)) && kpp_heap_forget(p))			\
		return;								\
	f = next_fn(idx);							\
	if (!f) {								\
		/* the sampled set is checked: straight to the real free */	\
		if (likely(!atomic_load_explicit(&kpp.no_heap,			\
						 memory_order_relaxed)))	\
			kpp_real.free(p);					\
		else								\
			free(p);	/* the program's own */			\
		return;								\
	}									\
	fn = (void (*) PARAMS)f;						\
	fn ARGS;								\
}

FREE_FN(free_sized, FREE_SIZED, (void *p, size_t n), (p, n))
FREE_FN(free_aligned_sized, FREE_ALIGNED_SIZED, (void *p, size_t a, size_t n), (p, a, n))
FREE_FN(sdallocx, SDALLOCX, (void *p, size_t n, int flags), (p, n, flags))
FREE_FN(dallocx, DALLOCX, (void *p, int flags), (p, flags))

/* ------------------------------------------------------------ jemalloc */

#define MALLOCX_LG_ALIGN_MASK	0x3f
#define MALLOCX_ZERO		0x40

static size_t flags_align(int flags)
{
	int lg = flags & MALLOCX_LG_ALIGN_MASK;

	return lg ? (size_t)1 << (lg < 63 ? lg : 63) : 0;
}

/*
 * mallocx without jemalloc: malloc's family, flags honoured.  The global
 * functions, i.e. our wrappers, which do the accounting (or, when another
 * malloc comes first, that one: the block must be the program's
 * allocator's either way).
 */
static void *fallback_mallocx(size_t n, int flags)
{
	size_t align = flags_align(flags);
	void *p = NULL;

	if (align > 16) {
		if (posix_memalign(&p, align, n))
			return NULL;
		if (p && (flags & MALLOCX_ZERO))
			memset(p, 0, n);
		return p;
	}
	return flags & MALLOCX_ZERO ? calloc(1, n) : malloc(n);
}

KPP_EXPORT void *mallocx(size_t n, int flags);
void *mallocx(size_t n, int flags)
{
	void *(*fn)(size_t, int) = (void *(*)(size_t, int))next_fn(MALLOCX);
	void *p;

	if (!fn)
		return fallback_mallocx(n, flags);
	p = fn(n, flags);
	if (p)
		account(&kpp_thread, p, n);
	return p;
}

static void *fallback_rallocx(void *p, size_t n, int flags)
{
	size_t old = malloc_usable_size(p);
	void *q;

	if (flags_align(flags) > 16) {
		q = fallback_mallocx(n, flags & ~MALLOCX_ZERO);
		if (!q)
			return NULL;
		memcpy(q, p, old < n ? old : n);
		free(p);
	} else {
		q = realloc(p, n);
		if (!q)
			return NULL;
	}
	if ((flags & MALLOCX_ZERO) && n > old)
		memset((char *)q + old, 0, n - old);
	return q;
}

KPP_EXPORT void *rallocx(void *p, size_t n, int flags);
void *rallocx(void *p, size_t n, int flags)
{
	void *(*fn)(void *, size_t, int) = (void *(*)(void *, size_t, int))next_fn(RALLOCX);
	struct kpp_thread *t = &kpp_thread;
	uint64_t old = 0;
	bool had = false;
	void *q;

	if (unlikely(kpp_set_maybe(p))) {
		if (kpp_in_arena(p)) {
			size_t keep = kpp_arena_size_of(p);

			q = mallocx(n, flags);
			if (q)
				memcpy(q, p, keep < n ? keep : n);
			return q;
		}
		/* FREE before the block can be handed to another thread;
		 * never held (a refused one is counted lost). */
		had = kpp_set_remove(p, &old);
		if (had)
			(void)kpp_free_record_now(p, old);
	}
	q = fn ? fn(p, n, flags) : fallback_rallocx(p, n, flags);
	if (!q) {
		/* The old block lives on: recorded again, as realloc does. */
		if (had) {
			int saved = errno;

			kpp_heap_sampled(t, p, old);
			errno = saved;
		}
		return NULL;
	}
	if (fn)
		account(t, q, n);	/* the fallback's realloc did */
	return q;
}

KPP_EXPORT size_t xallocx(void *p, size_t n, size_t extra, int flags);
size_t xallocx(void *p, size_t n, size_t extra, int flags)
{
	size_t (*fn)(void *, size_t, size_t, int) =
		(size_t (*)(void *, size_t, size_t, int))next_fn(XALLOCX);
	struct kpp_thread *t = &kpp_thread;
	size_t before = malloc_usable_size(p), r;
	uint64_t old;

	/* Without jemalloc nothing resizes in place: the size it has. */
	r = fn ? fn(p, n, extra, flags) : before;
	if (r == before)
		return r;	/* not resized: nothing changed */
	/* The block stays the caller's throughout: no race on its address. */
	if (unlikely(kpp_set_maybe(p)) && !kpp_in_arena(p) && kpp_set_remove(p, &old))
		(void)kpp_free_record_now(p, old);
	account(t, p, r);
	return r;
}
