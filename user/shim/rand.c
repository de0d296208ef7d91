// SPDX-License-Identifier: GPL-2.0
/*
 * Per-thread random numbers for sampling decisions: xorshift64* (fast,
 * no locks, no shared state), seeded from the clock, the thread's stack
 * address and a process-wide counter so threads and forked children
 * diverge (once the shim has stopped for a seccomp filter, without the
 * clock: where the vDSO cannot serve it, it is a syscall).  The child after fork reseeds (kpp_thread.rng_seeded = 0).
 */
#include <string.h>
#include "shim.h"

static _Atomic uint64_t seed_counter;

uint64_t kpp_rand64(struct kpp_thread *t)
{
	uint64_t x;

	if (unlikely(!t->rng_seeded)) {
		/* Stopped (seccomp.c): no clock, it may be a syscall (lock.c) */
		x = (atomic_load_explicit(&kpp.stopped, memory_order_relaxed) ? 0 : kpp_now_ns()) ^
		    (uintptr_t)&x ^
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

/*
 * neg_log - -ln(u) for u in (0, 1], without libm: linking libm would load
 * it into every process at start (issue 11), for this one function.
 * u = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.172, whose odd series to s^21 is exact
 * to about 1e-16 relative: far below what sampling can tell apart.
 */
static double neg_log(double u)
{
	const double ln2 = 0.69314718055994530942;
	uint64_t bits;
	double m, s, s2, term, sum;
	int e;

	memcpy(&bits, &u, sizeof(bits));
	e = (int)((bits >> 52) & 0x7ff) - 1023;	/* u is normal: u >= 2^-53 */
	bits = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52);
	memcpy(&m, &bits, sizeof(m));		/* m in [1, 2) */
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	term = s;
	sum = 0;
	for (int k = 1; k <= 21; k += 2) {
		sum += term / k;
		term *= s2;
	}
	return -(e * ln2 + 2 * sum);
}

uint64_t kpp_rand_exp(struct kpp_thread *t, uint64_t mean)
{
	/* u in (0, 1]: 53 random bits, never 0, so ln(u) is finite. */
	double u = (double)((kpp_rand64(t) >> 11) + 1) * 0x1.0p-53;
	double v = neg_log(u) * (double)mean;

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
