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
 *    applies Go's bias correction (count rate / d, delay rate).
 *  - mutex profile: the waiter registers in a small side table keyed by
 *    the mutex address (start time, count of waiters) for the duration of
 *    its wait.  An unlocker that sees waiters in glibc's lock word (value
 *    2, or FUTEX_WAITERS for robust/PI mutexes) looks the mutex up and is
 *    charged the wait its waiters accrued since they started waiting or
 *    since the last charge, whichever is later (so no wait is charged
 *    twice); the hand-off is recorded with probability 1 / mutex_fraction
 *    as KPPROF_REC_MUTEX, the unlocker's stack, rate = mutex_fraction.
 *    Go's semrelease charges the woken waiter's wait since the last
 *    hand-off; charging every current waiter is what Go does for its
 *    runtime-internal locks since 1.22, and is what a futex-based lock can
 *    measure (it does not know which waiter the kernel wakes).
 *
 * The unlock inside pthread_cond_*wait is charged by wrappers of those
 * (just before the real call); their re-lock is not timed.  A recursive
 * mutex's inner unlocks hand nothing off and charge nothing.  Not seen:
 * trylock, which never waits (it is not wrapped).  A waiter that registers after the unlocker has looked is
 * charged to the next hand-off.  Side-table slots are tiny spinlocks held
 * only for a few instructions; the child after fork clears the table.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include "shim.h"

#define WAIT_SLOTS	256
#define WAIT_PROBE	8

struct wait_slot {
	_Atomic uintptr_t mutex;	/* 0: free */
	atomic_flag busy;		/* guards the fields below */
	uint32_t nwaiters;
	uint64_t sum_start;		/* sum of the waiters' effective start */
	uint64_t charged_at;		/* time of the last charge */
} __attribute__((aligned(64)));

static struct wait_slot wait_table[WAIT_SLOTS];

static size_t wait_hash(const void *m)
{
	return (((uintptr_t)m >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - 8);
}

static void slot_lock(struct wait_slot *s)
{
	while (atomic_flag_test_and_set_explicit(&s->busy, memory_order_acquire))
		sched_yield();
}

static void slot_unlock(struct wait_slot *s)
{
	atomic_flag_clear_explicit(&s->busy, memory_order_release);
}

/*
 * slot_get - the slot of @m, locked, or NULL.  With @claim, a free slot
 * is taken for @m when none holds it: only after the whole probe window
 * was searched, or @m could hold two slots at once (a free slot before
 * its own) and charge() would see only one.  Two waiters that claim at
 * the same moment can still end up in two slots; charge() sums them all.
 */
static struct wait_slot *slot_find(const void *m, size_t from)
{
	size_t h = wait_hash(m);

	for (size_t i = from; i < WAIT_PROBE; i++) {
		struct wait_slot *s = &wait_table[(h + i) % WAIT_SLOTS];

		if (atomic_load_explicit(&s->mutex, memory_order_relaxed) != (uintptr_t)m)
			continue;
		slot_lock(s);
		if (atomic_load_explicit(&s->mutex, memory_order_relaxed) == (uintptr_t)m)
			return s;
		slot_unlock(s);	/* freed meanwhile: keep looking */
	}
	return NULL;
}

static struct wait_slot *slot_get(const void *m, bool claim)
{
	size_t h = wait_hash(m);
	struct wait_slot *s = slot_find(m, 0);

	if (s || !claim)
		return s;
	for (size_t i = 0; i < WAIT_PROBE; i++) {
		uintptr_t zero = 0;

		s = &wait_table[(h + i) % WAIT_SLOTS];
		if (!atomic_compare_exchange_strong(&s->mutex, &zero, (uintptr_t)m)) {
			if (zero != (uintptr_t)m)
				continue;	/* another mutex's */
		}
		slot_lock(s);
		if (atomic_load_explicit(&s->mutex, memory_order_relaxed) == (uintptr_t)m)
			return s;
		slot_unlock(s);
	}
	return NULL;
}

static struct wait_slot *waiter_enter(const void *m, uint64_t t0)
{
	struct wait_slot *s = slot_get(m, true);

	if (!s)
		return NULL;
	s->nwaiters++;
	s->sum_start += t0;
	slot_unlock(s);
	return s;
}

static void waiter_leave(struct wait_slot *s, const void *m, uint64_t t0)
{
	slot_lock(s);
	if (atomic_load_explicit(&s->mutex, memory_order_relaxed) == (uintptr_t)m &&
	    s->nwaiters) {
		s->sum_start -= t0 > s->charged_at ? t0 : s->charged_at;
		if (--s->nwaiters == 0) {
			s->sum_start = 0;
			s->charged_at = 0;
			atomic_store_explicit(&s->mutex, 0, memory_order_relaxed);
		}
	}
	slot_unlock(s);
}

/* charge - the wait accrued by @m's waiters since the last charge, in
 * every slot that holds @m. */
static uint64_t charge(const void *m)
{
	uint64_t now = 0, total, delay = 0;
	struct wait_slot *s;
	size_t i = 0, h = wait_hash(m);

	while ((s = slot_find(m, i))) {
		i = ((size_t)(s - wait_table) + WAIT_SLOTS - h) % WAIT_SLOTS + 1;
		if (s->nwaiters) {
			if (!now)
				now = kpp_now_ns();
			total = now * s->nwaiters;
			delay += total > s->sum_start ? total - s->sum_start : 0;
			s->sum_start = total;
			s->charged_at = now;
		}
		slot_unlock(s);
	}
	return delay;
}

void kpp_locks_reset(void)
{
	memset(wait_table, 0, sizeof(wait_table));
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

static void block_event(struct kpp_thread *t, const void *lock, uint64_t d)
{
	uint64_t rate = t->block_rate;

	if (!rate || !d)
		return;
	if (d < rate && !kpp_rand_chance(t, d, rate))
		return;
	if (!kpp_sample_begin(t))
		return;
	kpp_emit_contention(t, KPPROF_REC_BLOCK, lock, d, rate);
	kpp_sample_end(t);
}

/* wait_timed - the contended path: wait with @wait, measure, record. */
__attribute__((noinline))
static int wait_timed(struct kpp_thread *t, void *lock, bool is_mutex,
		      int (*wait)(void *, const void *), const void *arg)
{
	uint64_t t0 = kpp_now_ns(), t1;
	struct wait_slot *s = NULL;
	int r;

	if (is_mutex && t->mutex_fraction)
		s = waiter_enter(lock, t0);
	r = wait(lock, arg);
	t1 = kpp_now_ns();
	if (s)
		waiter_leave(s, lock, t0);
	block_event(t, lock, t1 - t0);
	return r;
}

static int call_mutex_lock(void *m, const void *unused)
{
	(void)unused;
	return kpp_real.mutex_lock(m);
}

static int call_mutex_timedlock(void *m, const void *ts)
{
	return kpp_real.mutex_timedlock(m, ts);
}

static int call_rdlock(void *l, const void *unused)
{
	(void)unused;
	return kpp_real.rwlock_rdlock(l);
}

static int call_wrlock(void *l, const void *unused)
{
	(void)unused;
	return kpp_real.rwlock_wrlock(l);
}

/*
 * lock_word - glibc's lock word: 0 when the mutex is free.  A free mutex
 * goes straight to the real lock (the uncontended case costs one load);
 * if another thread takes it in between, that one wait goes untimed,
 * which sampling can afford.  A held one is tried, then timed.
 */
static inline int lock_word(const pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED);
}

KPP_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	struct kpp_thread *t = &kpp_thread;
	int r;

	if (likely(!contention_on(t)) || likely(!lock_word(m)))
		return kpp_real.mutex_lock(m);
	r = kpp_real.mutex_trylock(m);
	if (likely(r != EBUSY))
		return r;
	return wait_timed(t, m, true, call_mutex_lock, NULL);
}

KPP_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *ts)
{
	struct kpp_thread *t = &kpp_thread;
	int r;

	if (likely(!contention_on(t)) || likely(!lock_word(m)))
		return kpp_real.mutex_timedlock(m, ts);
	r = kpp_real.mutex_trylock(m);
	if (likely(r != EBUSY))
		return r;
	return wait_timed(t, m, true, call_mutex_timedlock, ts);
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

__attribute__((noinline))
static int unlock_slow(struct kpp_thread *t, pthread_mutex_t *m)
{
	uint64_t delay;
	uint32_t n;
	int r;

	if (!contention_on(t) || !(n = t->mutex_fraction) || inner_unlock(m))
		return kpp_real.mutex_unlock(m);
	delay = charge(m);
	r = kpp_real.mutex_unlock(m);
	if (delay && r == 0 && kpp_rand_chance(t, 1, n) && kpp_sample_begin(t)) {
		kpp_emit_contention(t, KPPROF_REC_MUTEX, m, delay, n);
		kpp_sample_end(t);
	}
	return r;
}

KPP_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (likely(!may_have_waiters(m)) || likely(!kpp.page))
		return kpp_real.mutex_unlock(m);
	return unlock_slow(&kpp_thread, m);
}

/*
 * pthread_cond_*wait release the mutex inside glibc, out of our sight:
 * that is a hand-off like any unlock, charged here just before.  The
 * record (1 in mutex_fraction) is written with the mutex still held.
 */
__attribute__((noinline))
static void cond_handoff(struct kpp_thread *t, pthread_mutex_t *m)
{
	uint64_t delay;
	uint32_t n;

	if (!contention_on(t) || !(n = t->mutex_fraction) || inner_unlock(m))
		return;
	delay = charge(m);
	if (delay && kpp_rand_chance(t, 1, n) && kpp_sample_begin(t)) {
		kpp_emit_contention(t, KPPROF_REC_MUTEX, m, delay, n);
		kpp_sample_end(t);
	}
}

/* glibc's current condition variables (the 2.2.5 ones are for binaries
 * older than 2003). */
static void *cond_sym(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");

	return p ? p : dlsym(RTLD_NEXT, name);
}

KPP_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *);

	if (unlikely(!real))
		*(void **)&real = cond_sym("pthread_cond_wait");
	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(&kpp_thread, m);
	return real(c, m);
}

KPP_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
				      const struct timespec *ts)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

	if (unlikely(!real))
		*(void **)&real = cond_sym("pthread_cond_timedwait");
	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(&kpp_thread, m);
	return real(c, m, ts);
}

KPP_EXPORT int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
				      clockid_t clock, const struct timespec *ts)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *, clockid_t,
			   const struct timespec *);

	if (unlikely(!real))
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_cond_clockwait");
	if (unlikely(may_have_waiters(m)) && kpp.page)
		cond_handoff(&kpp_thread, m);
	return real(c, m, clock, ts);
}

KPP_EXPORT int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
	struct kpp_thread *t = &kpp_thread;
	int r;

	if (likely(!contention_on(t)) || !t->block_rate)
		return kpp_real.rwlock_rdlock(l);
	r = kpp_real.rwlock_tryrdlock(l);
	if (likely(r != EBUSY))
		return r;
	return wait_timed(t, l, false, call_rdlock, NULL);
}

KPP_EXPORT int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
	struct kpp_thread *t = &kpp_thread;
	int r;

	if (likely(!contention_on(t)) || !t->block_rate)
		return kpp_real.rwlock_wrlock(l);
	r = kpp_real.rwlock_trywrlock(l);
	if (likely(r != EBUSY))
		return r;
	return wait_timed(t, l, false, call_wrlock, NULL);
}
