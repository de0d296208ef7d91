// SPDX-License-Identifier: GPL-2.0
/*
 * liblock_alloc.so: a malloc whose heap is guarded by one pthread mutex,
 * as jemalloc guards its arenas and bins.  Preloaded after the shim, it is
 * the next malloc; the shim's lock wrapper sees its mutex contended and
 * samples inside it, with the mutex held.  Before the fix a sample there
 * freed blocks held back from a full ring with this free(): a
 * self-deadlock (review helper-23, 3 of 3 at rate 1, and with jemalloc).
 * Size classes of powers of two with a free list each; memalign's blocks
 * are never reused.  Not thread-safe beyond its one mutex, which is the
 * point.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define CLASSES		24
#define ALIGNED		99	/* the class of a memalign block */

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static void *free_list[CLASSES];
static char *brk_cur, *brk_end;

static int class_of(size_t n)
{
	int c = 4;

	while (((size_t)1 << c) < n + 16)
		c++;
	return c;
}

/* with heap_lock held */
static void *carve(size_t size)
{
	void *p;

	if (!brk_cur || brk_cur + size > brk_end) {
		size_t chunk = size > (16u << 20) ? size : (16u << 20);

		brk_cur = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (brk_cur == MAP_FAILED) {
			brk_cur = NULL;
			return NULL;
		}
		brk_end = brk_cur + chunk;
	}
	p = brk_cur;
	brk_cur += size;
	return p;
}

void *malloc(size_t n)
{
	size_t *h = NULL;
	int c;

	if (n >= (size_t)1 << (CLASSES - 2)) {
		errno = ENOMEM;
		return NULL;
	}
	c = class_of(n);
	pthread_mutex_lock(&heap_lock);
	if (free_list[c]) {
		h = free_list[c];
		free_list[c] = *(void **)(h + 2);
	} else {
		h = carve((size_t)1 << c);
	}
	pthread_mutex_unlock(&heap_lock);
	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	h[0] = (size_t)c;
	return h + 2;
}

void free(void *p)
{
	size_t *h = (size_t *)p - 2;

	if (!p || h[0] == ALIGNED)
		return;
	pthread_mutex_lock(&heap_lock);
	*(void **)p = free_list[h[0]];
	free_list[h[0]] = h;
	pthread_mutex_unlock(&heap_lock);
}

size_t malloc_usable_size(void *p)
{
	const size_t *h = (const size_t *)p - 2;

	if (!p)
		return 0;
	return h[0] == ALIGNED ? h[1] : ((size_t)1 << h[0]) - 16;
}

void *calloc(size_t a, size_t b)
{
	size_t n;
	void *p;

	if (__builtin_mul_overflow(a, b, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	p = malloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

void *realloc(void *p, size_t n)
{
	size_t have = malloc_usable_size(p);
	void *q;

	if (!p)
		return malloc(n);
	if (n <= have)
		return p;
	q = malloc(n);
	if (q) {
		memcpy(q, p, have);
		free(p);
	}
	return q;
}

void *memalign(size_t align, size_t n)
{
	char *p;
	size_t *q;

	if (align <= 16)
		return malloc(n);
	p = malloc(n + align + 16);
	if (!p)
		return NULL;
	q = (size_t *)(((size_t)p + 16 + align - 1) & ~(align - 1));
	q[-2] = ALIGNED;
	q[-1] = n;
	return q;
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = memalign(align, n);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	return memalign(align, n);
}
