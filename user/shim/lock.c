// SPDX-License-Identifier: GPL-2.0
/*
 * Lock contention: Go's block and mutex profiles for pthread mutexes, and
 * the block profile for rwlocks.
 *
 * Lock: with contention profiling off (no module, or both rates 0) the
 * wrapper forwards at once.  Otherwise a free lock word (glibc's
 * __data.__lock == 0) is the uncontended case, forwarded as is; a held
 * one is tried once, and on EBUSY the wait is timed:
 *
 *  - block profile (block_rate in ns): a wait of d >= rate is recorded, a
 *    shorter one with probability d / rate: KPPROF_REC_BLOCK with the
 *    waiter's stack, delay_ns = d, rate = block_rate.  The collector
 *    applies Go's bias correction (count rate / d, delay rate).  Only a
 *    call that obtained the lock after waiting (0, EOWNERDEAD) or gave up
 *    waiting (ETIMEDOUT) is a wait: an error-checking relock's EDEADLK,
 *    EINVAL and the like return at once and are no contention.
 *  - mutex profile: the waiter writes its start time into a cell of a
 *    small side table keyed by the mutex address for the duration of its
 *    wait.  An unlocker that sees waiters in glibc's lock word (value 2,
 *    or FUTEX_WAITERS for robust/PI mutexes) is charged, for each cell of
 *    that mutex, the time since the cell's value and moves the cell to
 *    now (so no wait is charged twice); the hand-off is recorded with
 *    probability 1 / mutex_fraction as KPPROF_REC_MUTEX, the unlocker's
 *    stack, rate = mutex_fraction.  Go's semrelease charges the woken
 *    waiter's wait since the last hand-off; charging every current waiter
 *    is what Go does for its runtime-internal locks since 1.22, and is what
 *    a futex-based lock can measure (it does not know which waiter the
 *    kernel wakes).
 *
 * The side table takes no lock (design rule: a sampling path takes no lock
 * another thread or a signal handler can wait on).  A slot's key word
 * holds the mutex address and two small counts, waiters and chargers,
 * changed only by compare-and-swap; while either count is non-zero the
 * slot stays that mutex's.  Each waiter owns one start-time cell (claimed
 * by a swap of 0 for its start); an unlocker charges a cell by swapping
 * its value for now, and a leaving waiter empties its cell with an
 * exchange.  So a handler that interrupts any of these steps and locks
 * the same mutex finds nothing held.  A waiter that finds no room (every
 * slot of the probe window taken by other mutexes, or every cell of its
 * own) is not charged to anyone: it is counted, and KPPROF_DEBUG prints
 * the count at exit.  The clock is read before the table is touched.
 *
 * The unlock inside pthread_cond_*wait is charged by wrappers of those
 * (just before the real call); their re-lock is not timed.  A recursive
 * mutex's inner unlocks hand nothing off and charge nothing.  Not seen:
 * trylock, which never waits (it is not wrapped).  A waiter that registers
 * after the unlocker has looked is charged to the next hand-off.  The
 * child after fork clears the table.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include "shim.h"

#define WAIT_SLOTS	256
#define WAIT_PROBE	8
#define WAIT_CELLS	7	/* key + 7 cells: one cache line */

/*
 * Key word: mutex address << 16 | chargers << 8 | waiters, or 0 (free).
 * A mutex above 2^48 (5-level paging) cannot be keyed: its waits are
 * counted as not registered.
 */
#define KEY_WAITER	1ULL
#define KEY_CHARGER	(1ULL << 8)
#define KEY_COUNTS	0xffffULL
#define KEY_WAITERS(k)	((k) & 0xff)
#define KEY_CHARGERS(k)	(((k) >> 8) & 0xff)

struct wait_slot {
	_Atomic uint64_t key;
	_Atomic uint64_t start[WAIT_CELLS];	/* 0: empty */
} __attribute__((aligned(64)));

static struct wait_slot wait_table[WAIT_SLOTS];
static _Atomic uint64_t waits_unregistered;

static size_t wait_hash(const void *m)
{
	return (((uintptr_t)m >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - 8);
}

static inline uint64_t key_of(const void *m)
{
	uintptr_t a = (uintptr_t)m;

	return a >> 48 ? 0 : (uint64_t)a << 16;
}

static inline struct wait_slot *probe_slot(const void *m, size_t i)
{
	return &wait_table[(wait_hash(m) + i) % WAIT_SLOTS];
}

/*
 * slot_ref - add @one (a waiter or a charger) to @s if it is @mk's, or,
 * with @claim, if it is free (it becomes @mk's).  false: another mutex's,
 * or its count is full.  A failed compare-and-swap means another thread
 * changed the word meanwhile (it made progress): tried a few times, then
 * given up, never waited for.
 */
static bool slot_ref(struct wait_slot *s, uint64_t mk, uint64_t one, bool claim)
{
	uint64_t k = atomic_load_explicit(&s->key, memory_order_relaxed), nk;

	for (int tries = 0; tries < 8; tries++) {
		if (!k) {
			if (!claim)
				return false;
			nk = mk | one;
		} else if ((k & ~KEY_COUNTS) != mk) {
			return false;
		} else if (one == KEY_WAITER ? KEY_WAITERS(k) >= WAIT_CELLS :
			   KEY_CHARGERS(k) >= 0xff) {
			return false;
		} else {
			nk = k + one;
		}
		if (atomic_compare_exchange_weak_explicit(&s->key, &k, nk,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return true;
	}
	return false;
}

/* slot_unref - drop a reference taken by slot_ref; the last frees @s
 * (if a new one came in between, the slot stays: it frees it later). */
static void slot_unref(struct wait_slot *s, uint64_t one)
{
	uint64_t k = atomic_fetch_sub_explicit(&s->key, one, memory_order_acq_rel) - one;

	if (!(k & KEY_COUNTS))
		atomic_compare_exchange_strong_explicit(&s->key, &k, 0,
							memory_order_relaxed,
							memory_order_relaxed);
}

/* A waiter's registration: its slot and cell, or slot NULL. */
struct waiter {
	struct wait_slot *slot;
	_Atomic uint64_t *cell;
};

static bool take_cell(struct wait_slot *s, uint64_t t0, struct waiter *w)
{
	/* The waiter count reserved a cell: one is free or about to be
	 * (a leaver empties its cell before it drops its count). */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < WAIT_CELLS; i++) {
			uint64_t zero = 0;

			if (atomic_compare_exchange_strong_explicit(&s->start[i], &zero, t0,
								    memory_order_relaxed,
								    memory_order_relaxed)) {
				w->slot = s;
				w->cell = &s->start[i];
				return true;
			}
		}
	}
	return false;
}

/*
 * waiter_enter - register a wait on @m that started at @t0.  A slot
 * already @m's is preferred to a free one (searched first over the whole
 * probe window), so that @m rarely spreads over two; charge() sums them
 * all anyway.
 */
static void waiter_enter(const void *m, uint64_t t0, struct waiter *w)
{
	uint64_t mk = key_of(m);

	w->slot = NULL;
	if (mk) {
		for (int claim = 0; claim < 2; claim++) {
			for (size_t i = 0; i < WAIT_PROBE; i++) {
				struct wait_slot *s = probe_slot(m, i);

				if (!slot_ref(s, mk, KEY_WAITER, claim))
					continue;
				if (take_cell(s, t0, w))
					return;
				slot_unref(s, KEY_WAITER);
			}
		}
	}
	atomic_fetch_add_explicit(&waits_unregistered, 1, memory_order_relaxed);
}

static void waiter_leave(struct waiter *w)
{
	if (!w->slot)
		return;
	atomic_store_explicit(w->cell, 0, memory_order_release);
	slot_unref(w->slot, KEY_WAITER);
}

/*
 * charge - the wait accrued by @m's waiters since they started or since
 * the last charge, up to @now, in every slot that holds @m.  Each cell is
 * moved to @now by a compare-and-swap, so a wait is charged once: if its
 * waiter left (or another unlocker charged it) meanwhile, the swap fails
 * and this unlocker charges nothing for it.
 */
static uint64_t charge(const void *m, uint64_t now)
{
	uint64_t mk = key_of(m), delay = 0;

	if (!mk)
		return 0;
	for (size_t i = 0; i < WAIT_PROBE; i++) {
		struct wait_slot *s = probe_slot(m, i);

		if (!slot_ref(s, mk, KEY_CHARGER, false))
			continue;
		for (int c = 0; c < WAIT_CELLS; c++) {
			uint64_t v = atomic_load_explicit(&s->start[c], memory_order_relaxed);

			if (v && v < now &&
			    atomic_compare_exchange_strong_explicit(&s->start[c], &v, now,
								    memory_order_relaxed,
								    memory_order_relaxed))
				delay += now - v;
		}
		slot_unref(s, KEY_CHARGER);
	}
	return delay;
}

void kpp_locks_reset(void)
{
	memset(wait_table, 0, sizeof(wait_table));
}

__attribute__((destructor))
static void locks_report(void)
{
	/* kpp first: a pass-through process touches nothing else here */
	if (kpp.debug && kpp.page)
		kpp_debug("mutex waits not registered (wait table full) %llu",
			  (unsigned long long)atomic_load_explicit(&waits_unregistered,
								   memory_order_relaxed));
}

/*
 * contention_on - is any contention profile on for this thread?  One
 * relaxed load of the config page's seq (a line only the kernel writes, on
 * a config change) unless it moved.
 */
static inline bool contention_on(struct kpp_thread *t)
{
	const volatile struct kpprof_config_page *pg = kpp.page;

	if (likely(!pg))
		return false;
	if (unlikely(__atomic_load_n(&pg->seq, __ATOMIC_RELAXED) + 1 != t->cfg_seq))
		kpp_config_refresh(t);
	/* Stopped (seccomp, foreign fd): not even the clock is read. */
	return (t->block_rate | t->mutex_fraction) && !t->guard &&
		!atomic_load_explicit(&kpp.stopped, memory_order_relaxed);
}

/*
 * quick_pass - the fast test of every lock wrapper, inline and without a
 * call, so that the compiler saves no register before it: true when the
 * call can be forwarded as is (no page; or the config unchanged, and the
 * profiles off or, with @word, the lock free).  false sends it to the
 * slow function, which decides again with contention_on().
 */
static inline bool quick_pass(const struct kpp_thread *t, const int *word)
{
	const volatile struct kpprof_config_page *pg = kpp.page;

	if (likely(!pg))
		return true;
	if (unlikely(__atomic_load_n(&pg->seq, __ATOMIC_RELAXED) + 1 != t->cfg_seq))
		return false;
	return !(t->block_rate | t->mutex_fraction) ||
		(word && !__atomic_load_n(word, __ATOMIC_RELAXED));
}

static void block_event(struct kpp_thread *t, const void *lock, uint64_t d)
{
	uint64_t rate = t->block_rate;
	struct kpp_sample_frame sf;

	if (!rate || !d)
		return;
	if (d < rate && !kpp_rand_chance(t, d, rate))
		return;
	if (!kpp_sample_begin(t, &sf))
		return;
	kpp_emit_contention(t, KPPROF_REC_BLOCK, lock, d, rate);
	kpp_sample_end(t, &sf);
}

/* Did a lock call wait?  Obtained after waiting, or gave up waiting. */
static inline bool waited(int r)
{
	return r == 0 || r == ETIMEDOUT || r == EOWNERDEAD;
}

/* The wait itself: which real function, and its extra arguments. */
enum wait_kind { W_MUTEX, W_MUTEX_TIMED, W_MUTEX_CLOCK, W_RD, W_WR,
		 W_RD_TIMED, W_WR_TIMED, W_RD_CLOCK, W_WR_CLOCK };

/* Functions kpp_real does not hold (or glibc may lack: 2.30+), looked up
 * at start (kpp_next_resolve, from the constructor): at their wrapper's
 * first call, a thread holding a mutex in pthread_cond_timedwait waited
 * for the loader's lock that another thread's dlopen held while its
 * constructor waited for that mutex (loader_lock_host_test.sh). */
enum { F_MUTEX_CLOCK, F_RD_TIMED, F_WR_TIMED, F_RD_CLOCK, F_WR_CLOCK,
       F_COND_WAIT, F_COND_TIMED, F_COND_CLOCK, NR_F };

static const char *const fnames[NR_F] = {
	[F_MUTEX_CLOCK] = "pthread_mutex_clocklock",
	[F_RD_TIMED] = "pthread_rwlock_timedrdlock",
	[F_WR_TIMED] = "pthread_rwlock_timedwrlock",
	[F_RD_CLOCK] = "pthread_rwlock_clockrdlock",
	[F_WR_CLOCK] = "pthread_rwlock_clockwrlock",
	/* Unversioned dlsym gives the default version, GLIBC_2.3.2. */
	[F_COND_WAIT] = "pthread_cond_wait",
	[F_COND_TIMED] = "pthread_cond_timedwait",
	[F_COND_CLOCK] = "pthread_cond_clockwait",
};
static void *_Atomic lock_next_fns[NR_F] KPP_START_DATA;

const struct kpp_next_table kpp_lock_next = { lock_next_fns, fnames, NR_F, NULL, NULL };

static inline void *fn(int i)
{
	return kpp_next_cached(&lock_next_fns[i], fnames[i], NULL);
}

struct wait_args {
	clockid_t clock;
	const struct timespec *ts;
};

static int call_wait(enum wait_kind k, void *l, const struct wait_args *a)
{
	void *f;

	switch (k) {
	case W_MUTEX:
		return kpp_real.mutex_lock(l);
	case W_MUTEX_TIMED:
		return kpp_real.mutex_timedlock(l, a->ts);
	case W_RD:
		return kpp_real.rwlock_rdlock(l);
	case W_WR:
		return kpp_real.rwlock_wrlock(l);
	case W_MUTEX_CLOCK:
	case W_RD_CLOCK:
	case W_WR_CLOCK:
		f = fn(k == W_MUTEX_CLOCK ? F_MUTEX_CLOCK : k == W_RD_CLOCK ? F_RD_CLOCK : F_WR_CLOCK);
		return f ? ((int (*)(void *, clockid_t, const struct timespec *))f)(l, a->clock, a->ts)
			 : ENOSYS;
	case W_RD_TIMED:
	case W_WR_TIMED:
		f = fn(k == W_RD_TIMED ? F_RD_TIMED : F_WR_TIMED);
		return f ? ((int (*)(void *, const struct timespec *))f)(l, a->ts) : ENOSYS;
	}
	return EINVAL;
}

static int call_try(enum wait_kind k, void *l)
{
	switch (k) {
	case W_MUTEX:
	case W_MUTEX_TIMED:
	case W_MUTEX_CLOCK:
		return kpp_real.mutex_trylock(l);
	case W_RD:
	case W_RD_TIMED:
	case W_RD_CLOCK:
		return kpp_real.rwlock_tryrdlock(l);
	default:
		return kpp_real.rwlock_trywrlock(l);
	}
}

/*
 * clock_read - the clock for contention timing, unless the shim has
 * stopped (seccomp.c: a filter is going in).  Announced like a sample
 * (kpp_samplers(), which seccomp.c waits for), so the filter never goes in
 * between the check and the read: on a host whose clocksource the vDSO
 * cannot serve (some guests') the read is a clock_gettime syscall, which
 * the filter may forbid.  A wait that began before the stop and ends
 * after it is not timed.  Contended calls only: two atomic operations.
 */
static bool clock_read(uint64_t *now)
{
	bool on;

	kpp_samplers_enter();
	on = !atomic_load(&kpp.stopped);
	if (on)
		*now = kpp_now_ns();
	kpp_samplers_leave();
	return on;
}

/*
 * lock_slow - a lock call that the quick test did not forward: re-read
 * the config, and if a profile is on and the lock is held (a mutex's
 * lock word; an rwlock is tried), time the wait and record it.  A free
 * mutex goes straight to the real lock; if another thread takes it in
 * between, that one wait goes untimed, which sampling can afford.
 */
__attribute__((noinline))
static int lock_slow(enum wait_kind k, void *l, const struct wait_args *a)
{
	struct kpp_thread *t = &kpp_thread;
	bool mutex = k <= W_MUTEX_CLOCK;
	struct waiter w = { NULL, NULL };
	uint64_t t0, t1;
	int r;

	if (!contention_on(t) || (!mutex && !t->block_rate) ||
	    (mutex && !__atomic_load_n(&((pthread_mutex_t *)l)->__data.__lock,
				       __ATOMIC_RELAXED)))
		return call_wait(k, l, a);
	r = call_try(k, l);
	if (likely(r != EBUSY))
		return r;
	if (!clock_read(&t0))
		return call_wait(k, l, a);
	if (mutex && t->mutex_fraction)
		waiter_enter(l, t0, &w);
	r = call_wait(k, l, a);
	if (!clock_read(&t1)) {
		waiter_leave(&w);
		return r;
	}
	waiter_leave(&w);
	if (waited(r))
		block_event(t, l, t1 - t0);
	return r;
}

static inline const int *mutex_word(const pthread_mutex_t *m)
{
	return &m->__data.__lock;
}

KPP_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (likely(quick_pass(&kpp_thread, mutex_word(m))))
		return kpp_real.mutex_lock(m);
	return lock_slow(W_MUTEX, m, NULL);
}

KPP_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
	struct wait_args a = { 0, ts };

	if (likely(quick_pass(&kpp_thread, mutex_word(m))))
		return kpp_real.mutex_timedlock(m, ts);
	return lock_slow(W_MUTEX_TIMED, m, &a);
}

KPP_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
				       const struct timespec *ts)
{
	struct wait_args a = { clock, ts };

	return lock_slow(W_MUTEX_CLOCK, m, &a);
}

/* The lock word says someone may be waiting (see the file comment). */
static inline bool may_have_waiters(const pthread_mutex_t *m)
{
	int w = __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);

	return w == 2 || (w & (int)0x80000000);
}

/*
 * A recursive mutex's inner unlock only decrements its count (glibc's
 * __count, the lock depth): no hand-off, nothing to charge; the waiters'
 * time is charged in full at the unlock that releases it.
 */
#define KIND_MASK	3	/* glibc's PTHREAD_MUTEX_KIND_MASK_NP (internal) */

static inline bool inner_unlock(const pthread_mutex_t *m)
{
	return (m->__data.__kind & KIND_MASK) == PTHREAD_MUTEX_RECURSIVE_NP &&
		m->__data.__count > 1;
}

/* handoff_delay - the wait to charge to this unlock of @m (0: none), and
 * in *@n the mutex fraction. */
static uint64_t handoff_delay(struct kpp_thread *t, pthread_mutex_t *m, uint32_t *n)
{
	uint64_t now;

	if (!contention_on(t) || !(*n = t->mutex_fraction) || inner_unlock(m) ||
	    !clock_read(&now))
		return 0;
	return charge(m, now);
}

static void mutex_event(struct kpp_thread *t, pthread_mutex_t *m, uint64_t delay, uint32_t n)
{
	struct kpp_sample_frame sf;

	if (delay && kpp_rand_chance(t, 1, n) && kpp_sample_begin(t, &sf)) {
		kpp_emit_contention(t, KPPROF_REC_MUTEX, m, delay, n);
		kpp_sample_end(t, &sf);
	}
}

__attribute__((noinline))
static int unlock_slow(pthread_mutex_t *m)
{
	struct kpp_thread *t = &kpp_thread;
	uint32_t n = 0;
	uint64_t delay = handoff_delay(t, m, &n);
	int r = kpp_real.mutex_unlock(m);

	if (r == 0)
		mutex_event(t, m, delay, n);
	return r;
}

KPP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (likely(!may_have_waiters(m)) || likely(!kpp.page))
		return kpp_real.mutex_unlock(m);
	return unlock_slow(m);
}

/*
 * pthread_cond_*wait release the mutex inside glibc, out of our sight:
 * that is a hand-off like any unlock, charged here just before.  The
 * record (1 in mutex_fraction) is written with the mutex still held.
 */
__attribute__((noinline))
static void cond_handoff(pthread_mutex_t *m)
{
	struct kpp_thread *t = &kpp_thread;
	uint32_t n = 0;

	mutex_event(t, m, handoff_delay(t, m, &n), n);
}

KPP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int (*real)(pthread_cond_t *, pthread_mutex_t *) = fn(F_COND_WAIT);

	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(m);
	return real(c, m);
}

KPP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				      const struct timespec *ts)
{
	int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *) =
		fn(F_COND_TIMED);

	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(m);
	return real(c, m, ts);
}

KPP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
				      clockid_t clock, const struct timespec *ts)
{
	int (*real)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
		    const struct timespec *) = fn(F_COND_CLOCK);

	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(m);
	return real ? real(c, m, clock, ts) : ENOSYS;
}

KPP_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	if (likely(quick_pass(&kpp_thread, NULL)))
		return kpp_real.rwlock_rdlock(l);
	return lock_slow(W_RD, l, NULL);
}

KPP_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	if (likely(quick_pass(&kpp_thread, NULL)))
		return kpp_real.rwlock_wrlock(l);
	return lock_slow(W_WR, l, NULL);
}

KPP_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	struct wait_args a = { 0, ts };

	return lock_slow(W_RD_TIMED, l, &a);
}

KPP_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *ts)
{
	struct wait_args a = { 0, ts };

	return lock_slow(W_WR_TIMED, l, &a);
}

KPP_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *l, clockid_t clock,
					  const struct timespec *ts)
{
	struct wait_args a = { clock, ts };

	return lock_slow(W_RD_CLOCK, l, &a);
}

KPP_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *l, clockid_t clock,
					  const struct timespec *ts)
{
	struct wait_args a = { clock, ts };

	return lock_slow(W_WR_CLOCK, l, &a);
}
