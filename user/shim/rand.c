// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread random numbers for sampling decisions: xorshift64* (fast,
 * no locks, no shared state), seeded from the clock, the thread's stack
 * address and a process-wide counter so threads and forked children
 * diverge.  The child after fork reseeds (kpp_thread.rng_seeded = 0).
 */
#include <math.h>
#include "shim.h"

static _Atomic uint64_t seed_counter;

uint64_t kpp_rand64(struct kpp_thread *t)
{
	uint64_t x;

	if (unlikely(!t->rng_seeded)) {
		x = kpp_now_ns() ^ (uintptr_t)&x ^
		    (atomic_fetch_add(&seed_counter, 1) * 0x9E3779B97F4A7C15ULL);
		t->rng = x ? x : 0x2545F4914F6CDD1DULL;
		t->rng_seeded = 1;
	}
	x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t kpp_rand_exp(struct kpp_thread *t, uint64_t mean)
{
	/* u in (0, 1]: 53 random bits, never 0, so log(u) is finite. */
	double u = (double)((kpp_rand64(t) >> 11) + 1) * 0x1.0p-53;
	double v = -log(u) * (double)mean;

	if (v >= 0x1.0p63)
		return UINT64_C(1) << 63;
	return (uint64_t)v;
}

bool kpp_rand_chance(struct kpp_thread *t, uint64_t num, uint64_t den)
{
	if (num >= den)
		return true;
	/* Uniform in [0, den) with a 128-bit multiply (Lemire, no division). */
	return (uint64_t)(((unsigned __int128)kpp_rand64(t) * den) >> 64) < num;
}
