// SPDX-License-Identifier: GPL-2.0
/*
 * The set of sampled, live allocations: address -> size asked for.
 *
 *   free(p) ──► filter[index(p)] == 0 ? ──yes──► real free
 *                    │ no                       (two loads, no lock)
 *                    ▼
 *               tables, newest first: buckets h2(p) .. h2(p)+PROBE-1
 *
 * Filter.  8-bit counters, incremented for each entry whose address hashes
 * there and decremented when it leaves; a counter that reaches 255 sticks
 * (it can only cost false positives).  A false positive costs a table
 * lookup, so the filter must stay sparse however many samples are live:
 * it grows, 4x at a time, whenever the live count passes 1/64 of its
 * counters (from 64 Ki counters, static, to 64 Mi, mmap'ed with
 * MAP_NORESERVE), so at most about 1.6% of unsampled frees take the slow
 * path (the fixed 32 KiB filter before saturated: every free was slow
 * from about 100K live samples).  The index keeps the heap's locality
 * (kpp_set_index in shim.h): neighbouring blocks have neighbouring
 * counters, so a program's frees touch few cache lines and pages of even
 * the largest level, and never share a counter with a live neighbour;
 * large levels also sit on huge pages.  Readers find the filter in force in one
 * word, kpp_set_cur: its address (64-byte aligned) plus the shift that
 * turns the 64-bit hash into an index in its low 6 bits, so the pair is
 * read atomically.
 *
 * Before the first sample nothing is in the set, and the level in force is
 * start_cells: 2 counters, always 0, in .data (KPP_START_DATA), on the page
 * the loader has written at start anyway.  So a free in a process that
 * never samples (every process of a host without the module) reads no
 * page of its own: the static level's first read was a page fault (the
 * zero page) in every process that frees.  The first sample (kpp_set_init)
 * makes the static level the one in force before the first insert; an
 * arena mark (kpp_set_mark) does too, so its block's free finds it.
 *
 * Growing without stopping readers or losing an entry.  A false negative
 * (a sampled block whose free is not seen) must never happen; extra counts
 * only cost false positives.  The grower (one at a time, inside an insert):
 *   1. maps the new level and publishes it in `building`;
 *   2. counts every key present in the tables into it;
 *   3. publishes it as kpp_set_cur, then clears `building`.
 * An insert claims its slot (CAS) and then reads `building` and then the
 * current level, incrementing both.  All of these are sequentially
 * consistent: either the insert reads `building` after step 1 and counts
 * itself there, or its key was in the table before step 1 and step 2 sees
 * it; and reading `building` before the current level means it cannot
 * miss the new level both ways (it reads either `building` before step 3
 * clears it, or the current level after step 3 set it).  Both may count
 * it: one extra count.  A remove decrements only the current level: a key
 * removed during the build may stay counted in the new one (one extra
 * count again); a key the remove finds in the current level was counted
 * there, by the scan or by its insert.  Old levels are never unmapped (a
 * free may still be reading one it loaded a moment before); they cost
 * their touched pages, at most a third of the current level's size.
 *
 * Tables.  Lock-free, no tombstones: an insert CASes an empty slot's key
 * from 0 to the address, a remove stores 0 back, and a lookup always scans
 * all PROBE buckets.  Operations on one key never overlap: the insert runs
 * inside the malloc that returns the address and the remove inside the
 * free of it, and the program must order those two, which also makes the
 * size stored after the CAS visible to the remover.  Being lock-free, it
 * is safe from signal handlers and in a child after fork.  Inserts go to
 * the newest table; when it is half full (or an address's PROBE buckets
 * are) a table 4x larger is added (64 Ki slots first, up to 16 Mi; about
 * 21 million live samples in all).  Older tables drain as their blocks
 * are freed; a lookup skips the empty ones.  Each table is reserved with
 * MAP_NORESERVE, so only pages holding entries cost memory, and memory
 * grows with the number of live samples.  Only when every table is full
 * (or the address space is) is a sample not taken: counted in
 * kpp.table_full and said once under KPPROF_DEBUG.
 *
 * A page of a table or filter level is never read before it is first
 * written where that can be avoided: reading an untouched anonymous page
 * maps the shared zero page, and the write that follows must then replace
 * it (copy-on-write), which flushes the TLB of every CPU running the
 * process -- an IPI per sample in a multi-threaded program (measured: 2
 * threads ran 4x slower).  So an insert writes first (the CAS itself, no
 * load before it), and lookups skip table pages that page_used[] says
 * were never written.  Filter pages are read by every free: a page first
 * read and later written costs one such flush, once per 4 KiB of filter.
 *
 * Arena blocks (start-up allocations, never freed) are marked: their
 * counters set to 255 in every level, so their free comes to the slow
 * path, which recognises them.  The marks are remembered and applied to
 * each new level and again after a reset.
 */
#include <string.h>
#include <sys/mman.h>
#include "shim.h"

/* ------------------------------------------------------------ filter */

#define F0_BITS		16	/* 64 Ki counters, static */
#define START_BITS	1	/* 2 counters: the level before the first sample */
#define F_MAX_BITS	26	/* 64 Mi counters */
#define F_STEP		2	/* each level 4x the last */
#define F_LEVELS	((F_MAX_BITS - F0_BITS) / F_STEP + 1)
#define F_SPARSE	6	/* grow when live > counters >> F_SPARSE */

static _Atomic uint8_t filter0[1 << F0_BITS] KPP_PAGE_BSS;
/*
 * Never written: no sample, no mark has a counter in it.  2 counters, in
 * a cache line of its own (the tag, 63, must point inside the object).
 */
static _Atomic uint8_t start_cells[64] __attribute__((aligned(64))) KPP_START_DATA;
#define START_LEVEL	((uint8_t *)start_cells + (64 - START_BITS))
_Atomic(uint8_t *) kpp_set_cur = START_LEVEL;
static _Atomic(uint8_t *) building;
static uint8_t *flevel[F_LEVELS] = { (uint8_t *)filter0 + (64 - F0_BITS) };
static _Atomic int nr_flevels = 1;

static inline unsigned int level_bits(uint8_t *v)
{
	return 64 - (unsigned int)((uintptr_t)v & KPP_LEVEL_TAG);
}

static inline _Atomic uint8_t *level_cell(uint8_t *v, const void *p)
{
	_Atomic uint8_t *c = (_Atomic uint8_t *)((uintptr_t)v & ~KPP_LEVEL_TAG);

	return &c[kpp_set_index(p, (uintptr_t)v)];
}

static void cell_inc(_Atomic uint8_t *c)
{
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	while (v != 255 &&
	       !atomic_compare_exchange_weak_explicit(c, &v, v + 1,
						      memory_order_release,
						      memory_order_relaxed))
		;
}

static void cell_dec(_Atomic uint8_t *c)
{
	uint8_t v = atomic_load_explicit(c, memory_order_relaxed);

	while (v != 255 && v != 0 &&
	       !atomic_compare_exchange_weak_explicit(c, &v, v - 1,
						      memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* Arena marks: few (a handful of dlsym allocations at start-up). */
#define MAX_MARKS	256
static const void *marks[MAX_MARKS];
static _Atomic unsigned int nr_marks;

static void mark_level(uint8_t *v)
{
	unsigned int n = atomic_load(&nr_marks);

	for (unsigned int i = 0; i < n && i < MAX_MARKS; i++)
		atomic_store_explicit(level_cell(v, marks[i]), 255, memory_order_relaxed);
}

void kpp_set_mark(const void *p)
{
	unsigned int i = atomic_fetch_add(&nr_marks, 1);
	uint8_t *b;

	if (i < MAX_MARKS)
		marks[i] = p;
	/* Beyond MAX_MARKS the block is only marked in the levels that exist:
	 * an arena of 64 KiB holds fewer blocks than that in practice. */
	for (int l = 0; l < atomic_load(&nr_flevels); l++)
		atomic_store_explicit(level_cell(flevel[l], p), 255, memory_order_relaxed);
	b = atomic_load(&building);
	if (b)
		atomic_store_explicit(level_cell(b, p), 255, memory_order_relaxed);
	/* Frees still read the start level: from now on the static one, marked. */
	b = START_LEVEL;
	atomic_compare_exchange_strong(&kpp_set_cur, &b, flevel[0]);
}

/* ------------------------------------------------------------ tables */

#define T0_BITS		14	/* 16 Ki buckets = 64 Ki slots */
#define T_STEP		2
#define T_LEVELS	5	/* up to 4 Mi buckets = 16 Mi slots */
#define SLOTS		4
#define PROBE		8

struct slot {
	_Atomic uintptr_t key;
	uint64_t size;
};

struct bucket {
	struct slot slot[SLOTS];
};

#define BUCKETS_PER_PAGE	(4096 / sizeof(struct bucket))

struct table {
	struct bucket *b;
	_Atomic uint8_t *page_used;	/* one byte per page of b[] */
	unsigned int bits;
	uint64_t grow_at;		/* add a table past this many live */
};

/*
 * Each table's live count, on a cache line of its own: every sampled
 * malloc and free of every thread adds to or takes from it, and on the
 * line of the read-mostly struct table (or of nr_tables) that would take
 * the line every other CPU reads at each insert and remove away from it.
 * Their sum is the set's live count: no second counter (a global one was
 * two more locked operations on a shared line per sampled block).
 */
static struct {
	_Atomic uint64_t n;
} __attribute__((aligned(64))) table_live[T_LEVELS];

static struct table tables[T_LEVELS];
static _Atomic int nr_tables KPP_START_DATA;	/* set_report() reads it at exit */
static _Atomic uint64_t live_peak, filter_grows;

/* live_total - samples in the set: the tables' counts summed */
static uint64_t live_total(void)
{
	int n = atomic_load_explicit(&nr_tables, memory_order_relaxed);
	uint64_t live = 0;

	for (int i = 0; i < n; i++)
		live += atomic_load_explicit(&table_live[i].n, memory_order_relaxed);
	return live;
}

/*
 * Two grow locks, each taken by one thread at a time: table_lock to add a
 * table (5 to 30 us here) and filter_lock to grow the filter (its scan of
 * the tables and the new level's page faults: 6 to 17 ms on average, up
 * to 56 ms, with 8 threads sampling on 2 CPUs).  A sample that needs a
 * new table waits for table_lock only (lock_table()); the filter grows
 * only when its lock is free.  Under one lock, every sample that needed a
 * table during a filter's grow waited for it, and most gave up (skipped).
 * The two may overlap: a key of a table added after count_all() read
 * nr_tables was inserted after `building` was set, and counts itself
 * there (step 2 in the file comment); a table added before is scanned.
 */
/*
 * Each lock word is its holder's &kpp_thread, 0 when free: an abandoned
 * sample releases what its thread holds by that (kpp_set_abandon()), even
 * if the handler that left the path for good interrupted it between the
 * CAS and its note in kpp_thread.growing (the lock then stayed taken for
 * good) or between that note's clearing and the release.
 */
static _Atomic uintptr_t table_lock, filter_lock;
#define HOLDS_TABLE	1	/* kpp_thread.growing: the locks held */
#define HOLDS_FILTER	2

static size_t table_hash(const void *p)
{
	uintptr_t x = (uintptr_t)p;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 32;
	return x;
}

static size_t table_bytes(unsigned int bits)
{
	return sizeof(struct bucket) << bits;
}

static size_t table_pages(unsigned int bits)
{
	return table_bytes(bits) / 4096;
}

/* Map table number @i (its slot in tables[] is unused); 0 or -1. */
static int table_add(int i)
{
	unsigned int bits = T0_BITS + T_STEP * (unsigned int)i;
	size_t len = table_bytes(bits) + table_pages(bits);
	struct table *t = &tables[i];
	void *m;

	/* growth (not the first table: its sample asked already) is an
	 * mmap a filter the shim never saw may forbid: the probe first */
	if (i > 0 && kpp_filtered(true))
		return -1;
	m = kpp_mmap(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	t->b = m;
	t->page_used = (_Atomic uint8_t *)((char *)m + table_bytes(bits));
	t->bits = bits;
	t->grow_at = ((uint64_t)SLOTS << bits) / 2;
	atomic_store(&table_live[i].n, 0);
	atomic_store(&nr_tables, i + 1);
	return 0;
}

static _Atomic uint64_t grow_busy;	/* samples skipped: another thread grew */
static _Atomic uint64_t grow_waits;	/* lock_table() calls that waited */
static _Atomic uint64_t grow_spared;	/* put past grow_at: no wait for table_lock */
/*
 * A holder that never lets go (stopped in a handler for good, a lock
 * leaked): table_gen counts table_lock's acquisitions; table_stuck is the
 * number + 1 of the holder the last wait gave up on, stuck_since when a
 * wait first gave up on it.  Once waits have given up on it for STUCK_NS
 * (not a holder merely descheduled), a sample skips without a wait, but
 * for one wait in STUCK_SKIPS (with its table full past its half and its
 * holder stuck, every sample waited GROW_WAIT_NS and was lost,
 * selftests/shim/stuck_grow.c).
 */
static _Atomic uint64_t table_gen, table_stuck, stuck_since;
static _Atomic uint32_t stuck_sure, stuck_skips;
#define STUCK_NS	20000000ULL
#define STUCK_SKIPS	256

/* 1 ms: adding a table takes microseconds; a sample waits no longer (wait.c) */
#define GROW_WAIT_NS	1000000ULL

static bool trylock(_Atomic uintptr_t *lock, uint32_t holds)
{
	uintptr_t z = 0;

	if (!atomic_compare_exchange_strong(lock, &z, (uintptr_t)&kpp_thread))
		return false;
	kpp_thread.growing |= holds;
	return true;
}

static void unlock(_Atomic uintptr_t *lock, uint32_t holds)
{
	kpp_thread.growing &= ~holds;
	atomic_store(lock, 0);
}

/*
 * lock_table - bounded: the holder may be stopped in a signal handler for
 * any time (a sampling path never waits without bound); false after
 * GROW_WAIT_NS, and the caller skips its sample (counted).  The wait makes
 * no syscall a filter may forbid (kpp_wait_more()): this is a sampling
 * path, and with a ring it makes none (issue 15).  The lock is tried only
 * when it looks free: a failed CAS would take its line from the holder.
 */
static bool lock_table(void)
{
	struct kpp_wait w = { 0 };
	uint64_t gen;

	while (atomic_load_explicit(&table_lock, memory_order_relaxed) ||
	       !trylock(&table_lock, HOLDS_TABLE)) {
		gen = atomic_load_explicit(&table_gen, memory_order_relaxed);
		/* the same holder, which waits gave up on for STUCK_NS */
		if (!w.steps &&
		    atomic_load_explicit(&table_stuck, memory_order_relaxed) == gen + 1 &&
		    atomic_load_explicit(&stuck_sure, memory_order_relaxed) &&
		    atomic_fetch_add_explicit(&stuck_skips, 1, memory_order_relaxed) < STUCK_SKIPS) {
			atomic_fetch_add_explicit(&grow_busy, 1, memory_order_relaxed);
			return false;
		}
		if (!kpp_wait_more(&w, GROW_WAIT_NS)) {
			uint64_t now = kpp_now_ns();

			if (atomic_exchange(&table_stuck, gen + 1) != gen + 1) {
				atomic_store(&stuck_sure, 0);
				atomic_store(&stuck_since, now);
			} else if (now - atomic_load(&stuck_since) >= STUCK_NS) {
				atomic_store(&stuck_sure, 1);
			}
			atomic_store_explicit(&stuck_skips, 0, memory_order_relaxed);
			atomic_fetch_add_explicit(&grow_busy, 1, memory_order_relaxed);
			return false;
		}
	}
	atomic_fetch_add_explicit(&table_gen, 1, memory_order_relaxed);
	if (w.steps)
		atomic_fetch_add_explicit(&grow_waits, 1, memory_order_relaxed);
	return true;
}

void kpp_set_abandon(struct kpp_thread *t)
{
	uintptr_t me = (uintptr_t)t;

	atomic_compare_exchange_strong(&table_lock, &me, 0);
	me = (uintptr_t)t;
	atomic_compare_exchange_strong(&filter_lock, &me, 0);
	t->growing = 0;
}

int kpp_set_init(void)
{
	if (atomic_load(&nr_tables))
		return 0;
	/*
	 * Write the static filter's pages now, at the first sample, all at
	 * once, before frees read them (an arena mark's write may have put
	 * one in already): a page read first is the shared zero page, and
	 * writing them one at a time later would be a TLB-shootdown IPI each
	 * in a multi-threaded process.  Not at start (as before issue 11):
	 * 16 page faults in every process, most of which never sample.
	 */
	for (size_t i = 0; i < sizeof(filter0); i += 4096)
		atomic_fetch_add_explicit(&filter0[i], 0, memory_order_relaxed);
	/*
	 * The static level in force before the first table is published: a
	 * thread that finds a table (nr_tables) inserts into the level in
	 * force, which must then be this one, never the start level.
	 */
	atomic_store(&kpp_set_cur, flevel[0]);
	return table_add(0);
}

/* ------------------------------------------------------------ growing */

/* Count every key in the tables into filter level @v (step 2 above). */
static void count_all(uint8_t *v)
{
	int n = atomic_load(&nr_tables);

	for (int i = 0; i < n; i++) {
		struct table *t = &tables[i];

		if (!atomic_load(&table_live[i].n))
			continue;
		for (size_t pg = 0; pg < table_pages(t->bits); pg++) {
			if (!atomic_load_explicit(&t->page_used[pg], memory_order_relaxed))
				continue;
			for (size_t bi = pg * BUCKETS_PER_PAGE; bi < (pg + 1) * BUCKETS_PER_PAGE; bi++)
				for (int s = 0; s < SLOTS; s++) {
					uintptr_t k = atomic_load(&t->b[bi].slot[s].key);

					if (k)
						cell_inc(level_cell(v, (const void *)k));
				}
		}
	}
}

/* Grow the filter if it is too dense; skipped while another thread grows. */
static void filter_maybe_grow(uint64_t live)
{
	uint8_t *cur = atomic_load_explicit(&kpp_set_cur, memory_order_relaxed), *v;
	unsigned int bits = level_bits(cur);
	int n;
	void *m;

	if (likely(live <= (1ULL << bits) >> F_SPARSE) || bits >= F_MAX_BITS ||
	    !trylock(&filter_lock, HOLDS_FILTER))
		return;
	/* Re-check under the lock: another thread may have grown it. */
	cur = atomic_load(&kpp_set_cur);
	bits = level_bits(cur) + F_STEP;
	n = atomic_load(&nr_flevels);
	if (live <= (1ULL << (bits - F_STEP)) >> F_SPARSE || n >= F_LEVELS)
		goto out;
	/* an mmap and a madvise: the seccomp probe first (table_add()) */
	if (kpp_filtered(true))
		goto out;
	m = kpp_mmap(NULL, (size_t)1 << bits, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		goto out;
	/* Huge pages, where the kernel offers them: every free reads a
	 * random counter of this level, and 4 KiB pages would make most of
	 * those reads a TLB miss once the level outgrows the TLB's reach. */
	if (bits >= 21)
		kpp_madvise(m, (size_t)1 << bits, MADV_HUGEPAGE);
	v = (uint8_t *)m + (64 - bits);
	atomic_store(&building, v);		/* 1 */
	count_all(v);				/* 2 */
	mark_level(v);
	flevel[n] = v;
	atomic_store(&nr_flevels, n + 1);
	atomic_store(&kpp_set_cur, v);		/* 3 */
	atomic_store(&building, NULL);
	atomic_fetch_add_explicit(&filter_grows, 1, memory_order_relaxed);
out:
	unlock(&filter_lock, HOLDS_FILTER);
}

/* ------------------------------------------------------------ operations */

/* Claim a slot for @p in table @t; true if it is stored there. */
static bool table_put(int ti, const void *p, uint64_t size)
{
	struct table *t = &tables[ti];
	size_t h = table_hash(p), mask = ((size_t)1 << t->bits) - 1;

	for (size_t i = 0; i < PROBE; i++) {
		size_t bi = (h + i) & mask;
		struct bucket *b = &t->b[bi];
		_Atomic uint8_t *used = &t->page_used[bi / BUCKETS_PER_PAGE];
		/* A page written before may be read first: a taken slot is
		 * then skipped with a load, not a failed (locked) CAS. */
		bool written = atomic_load_explicit(used, memory_order_relaxed);

		if (!written)
			atomic_store_explicit(used, 1, memory_order_relaxed);
		for (size_t s = 0; s < SLOTS; s++) {
			uintptr_t zero = 0;

			/* Else CAS without a load first: see the file comment. */
			if ((written && atomic_load_explicit(&b->slot[s].key,
							     memory_order_relaxed)) ||
			    !atomic_compare_exchange_strong(&b->slot[s].key, &zero,
							    (uintptr_t)p))
				continue;
			b->slot[s].size = size;
			atomic_fetch_add_explicit(&table_live[ti].n, 1, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

bool kpp_set_insert(const void *p, uint64_t size)
{
	uint8_t *bl, *cur;
	uint64_t live, peak;
	int n = atomic_load(&nr_tables);

	if (!p)
		return false;
	if (unlikely(!n)) {
		/* The first sample of the process: its start did not pay. */
		if (!lock_table())
			return false;
		if (kpp_set_init())
			kpp_debug("cannot map the sampled-address table");
		unlock(&table_lock, HOLDS_TABLE);
		n = atomic_load(&nr_tables);
		if (!n)
			return false;
	}
	for (;;) {
		struct table *t = &tables[n - 1];
		int now;

		bool over = atomic_load_explicit(&table_live[n - 1].n,
						 memory_order_relaxed) >= t->grow_at;

		if (!over && table_put(n - 1, p, size))
			break;
		/*
		 * Newest table half full, or this address's buckets full.  Half
		 * full while another thread adds the next one: the half left
		 * here, no wait (a holder descheduled or stopped in a handler
		 * would cost every sample GROW_WAIT_NS, and lose it).
		 */
		if (over && atomic_load_explicit(&table_lock, memory_order_relaxed) &&
		    table_put(n - 1, p, size)) {
			atomic_fetch_add_explicit(&grow_spared, 1, memory_order_relaxed);
			break;
		}
		if (!lock_table())
			return false;
		now = atomic_load(&nr_tables);
		if (now == n && (n == T_LEVELS || table_add(n))) {
			unlock(&table_lock, HOLDS_TABLE);
			/* Every table full: last chance in the older ones. */
			for (int i = n - 1; i >= 0; i--)
				if (table_put(i, p, size))
					goto stored;
			if (atomic_fetch_add_explicit(&kpp.table_full, 1,
						      memory_order_relaxed) == 0)
				kpp_debug("sampled-address table full (%llu live): samples are being lost",
					  (unsigned long long)live_total());
			return false;
		}
		unlock(&table_lock, HOLDS_TABLE);
		n = atomic_load(&nr_tables);
	}
stored:
	/* Count it in the filter: `building` first, then the current level. */
	bl = atomic_load(&building);
	cur = atomic_load(&kpp_set_cur);
	cell_inc(level_cell(cur, p));
	if (bl && bl != cur)
		cell_inc(level_cell(bl, p));
	live = live_total();
	peak = atomic_load_explicit(&live_peak, memory_order_relaxed);
	while (live > peak && !atomic_compare_exchange_weak(&live_peak, &peak, live))
		;
	filter_maybe_grow(live);
	return true;
}

static bool table_take(int ti, const void *p, uint64_t *size)
{
	struct table *t = &tables[ti];
	size_t h = table_hash(p), mask = ((size_t)1 << t->bits) - 1;

	for (size_t i = 0; i < PROBE; i++) {
		size_t bi = (h + i) & mask;
		struct bucket *b = &t->b[bi];

		if (!atomic_load_explicit(&t->page_used[bi / BUCKETS_PER_PAGE],
					  memory_order_relaxed))
			continue;	/* never written: holds no key */
		for (size_t s = 0; s < SLOTS; s++) {
			if (atomic_load_explicit(&b->slot[s].key,
						 memory_order_acquire) != (uintptr_t)p)
				continue;
			*size = b->slot[s].size;
			atomic_store_explicit(&b->slot[s].key, 0, memory_order_release);
			atomic_fetch_sub_explicit(&table_live[ti].n, 1, memory_order_relaxed);
			return true;
		}
	}
	return false;
}

bool kpp_set_remove(const void *p, uint64_t *size)
{
	int n = atomic_load_explicit(&nr_tables, memory_order_acquire);

	if (!p)
		return false;
	for (int i = n - 1; i >= 0; i--) {
		if (!atomic_load_explicit(&table_live[i].n, memory_order_relaxed))
			continue;
		if (table_take(i, p, size)) {
			cell_dec(level_cell(atomic_load(&kpp_set_cur), p));
			return true;
		}
	}
	return false;
}

/*
 * kpp_set_reset - the child after fork starts with nothing sampled: its
 * frees of blocks the parent sampled are not its own allocations as far
 * as the profile goes.  Replacing each mapping is O(1); the filter levels
 * are cleared the same way and the arena marks put back, because arena
 * blocks may still be freed.  Fork handlers do not wait: a grow under way
 * in another thread at the fork is dropped with its locks (the child never
 * published its level or table).  A parent that never sampled has no
 * table, so no count in any level but the marks: nothing to clear (the
 * static level's 16 pages were written in each such child).
 */
void kpp_set_reset(void)
{
	int n = atomic_load(&nr_tables);

	if (!n)
		goto out;
	for (int i = 0; i < n; i++) {
		struct table *t = &tables[i];
		size_t len = table_bytes(t->bits) + table_pages(t->bits);

		if (kpp_mmap(t->b, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
			memset(t->b, 0, len);
		atomic_store(&table_live[i].n, 0);
	}
	for (int l = 0; l < atomic_load(&nr_flevels); l++) {
		uint8_t *v = flevel[l];
		void *c = (void *)((uintptr_t)v & ~KPP_LEVEL_TAG);
		size_t len = (size_t)1 << level_bits(v);

		if (l == 0 || kpp_mmap(c, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
				   -1, 0) == MAP_FAILED)
			memset(c, 0, len);
		mark_level(v);
	}
out:
	atomic_store(&building, NULL);
	atomic_store(&table_lock, 0);
	atomic_store(&filter_lock, 0);
}

void kpp_set_stats(struct kpp_set_stats *st)
{
	st->live = live_total();
	st->peak = atomic_load(&live_peak);
	st->filter_bits = level_bits(atomic_load(&kpp_set_cur));
	st->filter_grows = atomic_load(&filter_grows);
	st->tables = (unsigned int)atomic_load(&nr_tables);
	st->lost = atomic_load(&kpp.table_full);
}

__attribute__((destructor))
static void set_report(void)
{
	struct kpp_set_stats st;

	if (!atomic_load(&nr_tables))
		return;
	kpp_set_stats(&st);
	kpp_debug("sampled set: live %llu (peak %llu), filter 2^%u counters (grown %llu times), %u tables, samples lost (table full) %llu, skipped (another thread growing) %llu, waited for it %llu, spared a wait %llu",
		  (unsigned long long)st.live, (unsigned long long)st.peak, st.filter_bits,
		  (unsigned long long)st.filter_grows, st.tables, (unsigned long long)st.lost,
		  (unsigned long long)atomic_load(&grow_busy),
		  (unsigned long long)atomic_load(&grow_waits),
		  (unsigned long long)atomic_load(&grow_spared));
}
