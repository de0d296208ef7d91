// SPDX-License-Identifier: GPL-2.0
/*
 * The set of sampled, live allocations: address -> size asked for.
 *
 *   free(p) ──► filter[h(p)] == 0 ? ──yes──► real free (one load, no lock)
 *                    │ no
 *                    ▼
 *               table: buckets h2(p) .. h2(p)+PROBE-1, 4 slots each
 *
 * The filter is 32 KiB of 8-bit counters (small enough to stay cached),
 * incremented for each entry whose address hashes there and decremented
 * when it leaves; a counter that reaches 255 sticks (it never goes back to
 * zero, so it can only cost false positives).  Arena blocks are marked the
 * same way so their free comes to the slow path.
 *
 * The table is lock-free and needs no tombstones: an insert CASes an empty
 * slot's key from 0 to the address, a remove stores 0 back, and a lookup
 * always scans all PROBE buckets.  Operations on one key never overlap:
 * the insert runs inside the malloc that returns the address and the
 * remove inside the free of it, and the program must order those two (it
 * cannot free what it has not been given), which also makes the size
 * stored after the CAS visible to the remover.  Being lock-free, it is
 * safe from signal handlers and in a child after fork.
 *
 * 64 Ki buckets x 4 slots x 16 bytes = 4 MiB of address space, reserved
 * with MAP_NORESERVE: only pages holding live entries cost memory.  When
 * all PROBE buckets of an address are full the allocation is not sampled
 * (counted in kpp.table_full): 256 Ki live sampled objects fit.
 *
 * A page of the table is never read before it is first written: reading
 * an untouched anonymous page maps the shared zero page, and the write
 * that follows must then replace it (copy-on-write), which flushes the
 * TLB of every CPU running the process -- an IPI per sample in a
 * multi-threaded program (measured: 2 threads ran 4x slower).  So an
 * insert writes first (the CAS itself, no load before it), and lookups
 * skip pages that page_used[] says were never written (they hold no key).
 */
#include <string.h>
#include <sys/mman.h>
#include "shim.h"

#define TABLE_BITS	16
#define SLOTS		4
#define PROBE		8

struct slot {
	_Atomic uintptr_t key;
	uint64_t size;
};

struct bucket {
	struct slot slot[SLOTS];
};

_Atomic uint8_t kpp_set_filter[1 << KPP_FILTER_BITS];
static struct bucket *table;
#define BUCKETS_PER_PAGE	(4096 / sizeof(struct bucket))
static _Atomic uint8_t page_used[(1 << TABLE_BITS) / BUCKETS_PER_PAGE];

static size_t table_hash(const void *p)
{
	uintptr_t x = (uintptr_t)p;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 32;
	return x & ((1 << TABLE_BITS) - 1);
}

static size_t table_bytes(void)
{
	return sizeof(struct bucket) << TABLE_BITS;
}

int kpp_set_init(void)
{
	void *m = mmap(NULL, table_bytes(), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return -1;
	table = m;
	/*
	 * Write the filter's 8 pages now, while the process is most likely
	 * single-threaded: frees read it from the start, so its first writes
	 * later would replace zero pages, each a TLB-shootdown IPI.
	 */
	for (size_t i = 0; i < sizeof(kpp_set_filter); i += 4096)
		atomic_fetch_add_explicit(&kpp_set_filter[i], 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&page_used[0], 0, memory_order_relaxed);
	return 0;
}

static void filter_inc(const void *p)
{
	_Atomic uint8_t *c = &kpp_set_filter[kpp_set_hash(p)];
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	while (v != 255 &&
	       !atomic_compare_exchange_weak_explicit(c, &v, v + 1,
						      memory_order_release,
						      memory_order_relaxed))
		;
}

static void filter_dec(const void *p)
{
	_Atomic uint8_t *c = &kpp_set_filter[kpp_set_hash(p)];
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	while (v != 255 && v != 0 &&
	       !atomic_compare_exchange_weak_explicit(c, &v, v - 1,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

void kpp_set_mark(const void *p)
{
	atomic_store(&kpp_set_filter[kpp_set_hash(p)], 255);
}

bool kpp_set_insert(const void *p, uint64_t size)
{
	size_t h = table_hash(p);

	if (!table || !p)
		return false;
	for (size_t i = 0; i < PROBE; i++) {
		size_t bi = (h + i) & ((1 << TABLE_BITS) - 1);
		struct bucket *b = &table[bi];

		if (!atomic_load_explicit(&page_used[bi / BUCKETS_PER_PAGE],
					  memory_order_relaxed))
			atomic_store_explicit(&page_used[bi / BUCKETS_PER_PAGE], 1,
					      memory_order_relaxed);
		for (size_t s = 0; s < SLOTS; s++) {
			uintptr_t zero = 0;

			/* CAS without a load first: see the file comment. */
			if (!atomic_compare_exchange_strong(&b->slot[s].key, &zero,
							    (uintptr_t)p))
				continue;
			b->slot[s].size = size;
			filter_inc(p);
			return true;
		}
	}
	atomic_fetch_add_explicit(&kpp.table_full, 1, memory_order_relaxed);
	return false;
}

bool kpp_set_remove(const void *p, uint64_t *size)
{
	size_t h = table_hash(p);

	if (!table || !p)
		return false;
	for (size_t i = 0; i < PROBE; i++) {
		size_t bi = (h + i) & ((1 << TABLE_BITS) - 1);
		struct bucket *b = &table[bi];

		if (!atomic_load_explicit(&page_used[bi / BUCKETS_PER_PAGE],
					  memory_order_relaxed))
			continue;	/* never written: holds no key */
		for (size_t s = 0; s < SLOTS; s++) {
			if (atomic_load_explicit(&b->slot[s].key,
						 memory_order_acquire) != (uintptr_t)p)
				continue;
			*size = b->slot[s].size;
			atomic_store_explicit(&b->slot[s].key, 0, memory_order_release);
			filter_dec(p);
			return true;
		}
	}
	return false;
}

/*
 * kpp_set_reset - the child after fork starts with nothing sampled: its
 * frees of blocks the parent sampled are not its own allocations as far
 * as the profile goes.  Replacing the mapping is O(1); arena marks are
 * restored because arena blocks may still be freed.
 */
void kpp_set_reset(void)
{
	void *m;

	if (!table)
		return;
	m = mmap(table, table_bytes(), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	if (m == MAP_FAILED)
		memset(table, 0, table_bytes());
	else
		memset(page_used, 0, sizeof(page_used));
	for (size_t i = 0; i < (1 << KPP_FILTER_BITS); i++)
		if (atomic_load_explicit(&kpp_set_filter[i], memory_order_relaxed) != 255)
			atomic_store_explicit(&kpp_set_filter[i], 0, memory_order_relaxed);
}
