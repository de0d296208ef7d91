// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the shim's internals that need no preload: the sampled
 * address set (filter + lock-free table), the random draws behind the
 * Poisson sampling and the probabilistic contention sampling, and the
 * environment parsing.  Built twice, plain and under ASan+UBSan.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include "kselftest_harness.h"
#include "seccomp_allow.h"
#include "shim.h"

/* The shim's TLS lives in heap.c, which is not linked here. */
KPP_TLS struct kpp_thread kpp_thread;

/*
 * seccomp.c is not linked here either: the set's growth asks the module's
 * seccomp probe first, and so does a long wait before it yields (wait.c);
 * a process without the module has none.
 */
bool kpp_filtered(bool note)
{
	(void)note;
	return false;
}

bool kpp_unfiltered(void)
{
	return false;
}

TEST(set_insert_remove)
{
	static char blocks[64][32];
	uint64_t size;

	ASSERT_EQ(0, kpp_set_init());
	for (int i = 0; i < 64; i++) {
		ASSERT_TRUE(kpp_set_insert(blocks[i], 100 + i));
		ASSERT_TRUE(kpp_set_maybe(blocks[i]));
	}
	for (int i = 0; i < 64; i++) {
		ASSERT_TRUE(kpp_set_remove(blocks[i], &size));
		EXPECT_EQ(100 + i, (int)size);
		/* A second remove finds nothing. */
		ASSERT_FALSE(kpp_set_remove(blocks[i], &size));
	}
	/* Every counter went back to zero: the fast path says "no". */
	for (int i = 0; i < 64; i++)
		EXPECT_FALSE(kpp_set_maybe(blocks[i]));
	EXPECT_FALSE(kpp_set_insert(NULL, 1));
}

/*
 * Until the first sample the level in force is the start level (2
 * counters in .data: an unsampled free reads no page of its own); the
 * static level takes over at the first insert (kpp_set_init) or at an
 * arena mark, whose block's free must reach the slow path.  Each TEST runs
 * in a child of a process that never touched the set.
 */
TEST(set_start_level_until_first_sample)
{
	static char blocks[8][32];
	struct kpp_set_stats st;
	uint64_t size;

	kpp_set_stats(&st);
	EXPECT_EQ(1u, st.filter_bits);
	for (uintptr_t a = 0x10000; a < 0x10000 + 16 * 1000; a += 16)
		ASSERT_FALSE(kpp_set_maybe((void *)a));
	ASSERT_TRUE(kpp_set_insert(blocks[0], 5));	/* the first sample */
	kpp_set_stats(&st);
	EXPECT_EQ(16u, st.filter_bits);
	EXPECT_TRUE(kpp_set_maybe(blocks[0]));
	EXPECT_TRUE(kpp_set_remove(blocks[0], &size));
	EXPECT_FALSE(kpp_set_maybe(blocks[0]));
}

TEST(set_mark_before_first_sample)
{
	static char a[16];
	struct kpp_set_stats st;
	int maybe = 0;

	kpp_set_mark(a);
	kpp_set_stats(&st);
	EXPECT_EQ(16u, st.filter_bits);
	EXPECT_TRUE(kpp_set_maybe(a));
	for (uintptr_t p = 0x10000; p < 0x10000 + 16 * 1000; p += 16)
		maybe += kpp_set_maybe((void *)p);
	EXPECT_GT(10, maybe);
	/* a fork child of a process that never sampled keeps the mark */
	kpp_set_reset();
	EXPECT_TRUE(kpp_set_maybe(a));
}

TEST(set_unknown_is_negative)
{
	uint64_t size;
	int maybe = 0;

	ASSERT_EQ(0, kpp_set_init());
	for (uintptr_t a = 0x10000; a < 0x10000 + 16 * 100000; a += 16)
		maybe += kpp_set_maybe((void *)a);
	EXPECT_EQ(0, maybe);
	EXPECT_FALSE(kpp_set_remove((void *)0x12340, &size));
}

/*
 * Heap-like addresses: 48-byte blocks from one base, the way an arena hands
 * them out; the filter must stay sparse and the table must hold them all.
 */
#define HEAP_BASE	0x555555560000ULL
#define HEAP_KEY(i)	((void *)(uintptr_t)(HEAP_BASE + 48 * (uint64_t)(i)))

/* Finding 9: 256 Ki live samples and more are kept, none lost. */
TEST(set_capacity_no_loss)
{
	uint64_t before = atomic_load(&kpp.table_full), size;
	const size_t n = 300000;
	size_t ok = 0, found = 0, maybe = 0;

	ASSERT_EQ(0, kpp_set_init());
	for (size_t i = 0; i < n; i++)
		ok += kpp_set_insert(HEAP_KEY(i), i + 1);
	EXPECT_EQ(n, ok);
	EXPECT_EQ(0, (long)(atomic_load(&kpp.table_full) - before));
	for (size_t i = 0; i < n; i++)
		maybe += kpp_set_maybe(HEAP_KEY(i));
	EXPECT_EQ(n, maybe);	/* no false negative */
	for (size_t i = 0; i < n; i++)
		if (kpp_set_remove(HEAP_KEY(i), &size) && size == i + 1)
			found++;
	EXPECT_EQ(n, found);
	maybe = 0;
	for (size_t i = 0; i < n; i++)
		maybe += kpp_set_maybe(HEAP_KEY(i));
	EXPECT_EQ(0, maybe);	/* every count went back */
}

/*
 * Finding 5: with 200K live samples, an unsampled free must still be
 * answered by the filter: at most 2% of other heap addresses may look
 * sampled (each such one costs a table lookup).
 */
TEST(set_filter_stays_sparse)
{
	const size_t n = 200000, probes = 1000000;
	size_t fp = 0, fp_rand = 0;
	uint64_t x = 88172645463325252ULL;

	ASSERT_EQ(0, kpp_set_init());
	for (size_t i = 0; i < n; i++)
		ASSERT_TRUE(kpp_set_insert(HEAP_KEY(2 * i), 64));
	/* The blocks in between (and far beyond) were never sampled. */
	for (size_t i = 0; i < probes; i++)
		fp += kpp_set_maybe(HEAP_KEY(2 * (i % n) + 1 + 2 * n * (i / n)));
	/* Nor were random 16-byte aligned addresses in the next GiB. */
	for (size_t i = 0; i < probes; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fp_rand += kpp_set_maybe((void *)(uintptr_t)(HEAP_BASE + (1ULL << 30) +
							     ((x >> 34) << 4)));
	}
	TH_LOG("false positives: neighbours %zu, random %zu of %zu each (%.2f%%)", fp,
	       fp_rand, probes, 100.0 * fp_rand / probes);
	EXPECT_LT(fp, probes / 50);
	EXPECT_LT(fp_rand, probes / 50);
}

/* The stats say what the set holds, and nothing is lost. */
TEST(set_stats)
{
	struct kpp_set_stats st;
	uint64_t size;

	ASSERT_EQ(0, kpp_set_init());
	for (size_t i = 0; i < 100000; i++)
		ASSERT_TRUE(kpp_set_insert(HEAP_KEY(i), 1));
	kpp_set_stats(&st);
	EXPECT_EQ(100000, (long)st.live);
	EXPECT_EQ(100000, (long)st.peak);
	EXPECT_GE(st.filter_bits, 22u);	/* 100K live: 4 Mi counters at least */
	EXPECT_GE(st.tables, 2u);
	EXPECT_EQ(0, (long)st.lost);
	for (size_t i = 0; i < 100000; i++)
		ASSERT_TRUE(kpp_set_remove(HEAP_KEY(i), &size));
	kpp_set_stats(&st);
	EXPECT_EQ(0, (long)st.live);
	EXPECT_EQ(100000, (long)st.peak);
}

/*
 * trap_yield - a filter, by a raw syscall as a sandbox installs one, that
 * makes sched_yield SIGSYS: a wait that yields kills this test's process
 * (the harness runs each test in a child of its own).
 */
static int trap_yield(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		TRAP(__NR_sched_yield),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return raw_seccomp(&prog);
}

struct grow_arg {
	int id;
	long false_neg, errors, skipped;
};

/*
 * Inserts grow the filter and add tables while other threads insert,
 * check and remove: no key inserted may ever look absent (a false
 * negative would lose a FREE record).
 */
static void *set_grow_churn(void *p)
{
	struct grow_arg *a = p;
	const size_t n = 60000;
	uint64_t size;

	static _Thread_local uint8_t in[60000];

	for (size_t i = 0; i < n; i++) {
		void *k = (void *)(uintptr_t)(((uint64_t)a->id << 36) + 0x10000 + 32 * i);

		/*
		 * A refused insert is a sample skipped, not lost: the grow lock
		 * is waited for a bounded time only (another thread may be
		 * stopped holding it), so a loaded machine may skip a few.
		 * Every insert that succeeded must be found and removed.
		 */
		in[i] = kpp_set_insert(k, i);
		a->skipped += !in[i];
		/* every 4096th: all of ours so far must still be seen */
		if (i % 4096 == 0)
			for (size_t j = 0; j <= i; j++)
				a->false_neg += in[j] && !kpp_set_maybe((void *)(uintptr_t)
					(((uint64_t)a->id << 36) + 0x10000 + 32 * j));
	}
	for (size_t i = 0; i < n; i++) {
		void *k = (void *)(uintptr_t)(((uint64_t)a->id << 36) + 0x10000 + 32 * i);

		if (!in[i])
			continue;
		a->false_neg += !kpp_set_maybe(k);
		if (!kpp_set_remove(k, &size) || size != i)
			a->errors++;
	}
	return NULL;
}

TEST(set_grow_concurrent)
{
	pthread_t t[4];
	struct grow_arg a[4];
	struct kpp_set_stats st;

	ASSERT_EQ(0, kpp_set_init());
	/* the grow lock's wait makes no syscall (wait.c) */
	ASSERT_EQ(0, trap_yield());
	for (int i = 0; i < 4; i++) {
		a[i] = (struct grow_arg){ .id = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, set_grow_churn, &a[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, a[i].false_neg);
		EXPECT_EQ(0, a[i].errors);
		/* Skips need a grow to outlast GROW_WAIT_NS (1 ms): rare. */
		EXPECT_GT(60000 / 100, a[i].skipped);
		if (a[i].skipped)
			TH_LOG("thread %d: %ld inserts skipped (grow lock busy)", i, a[i].skipped);
	}
	kpp_set_stats(&st);
	TH_LOG("filter 2^%u after %llu grows, %u tables", st.filter_bits,
	       (unsigned long long)st.filter_grows, st.tables);
	EXPECT_GE(st.filter_grows, 2u);
	EXPECT_EQ(0, (long)st.live);
}

/*
 * A wait for what never comes ends after its bound, with no yield under a
 * raw filter (no probe here, as in test mode: it cannot know), and at
 * once in a stopped shim.
 */
TEST(wait_is_bounded)
{
	const uint64_t max = 2000000;
	struct kpp_wait w = { 0 };
	uint64_t t0, ns;

	ASSERT_EQ(0, trap_yield());
	t0 = kpp_now_ns();
	while (kpp_wait_more(&w, max))
		;
	ns = kpp_now_ns() - t0;
	EXPECT_LE(max, ns);
	EXPECT_GT(100 * max, ns);	/* a loaded machine preempts the spinner */
	TH_LOG("%llu ns, %llu steps", (unsigned long long)ns, (unsigned long long)w.steps);
	atomic_store(&kpp.stopped, KPP_STOP_FD);
	w = (struct kpp_wait){ 0 };
	EXPECT_FALSE(kpp_wait_more(&w, max));
	atomic_store(&kpp.stopped, 0);
}

TEST(set_mark_sticks_and_reset)
{
	static char a[16], b[16];
	uint64_t size;

	ASSERT_EQ(0, kpp_set_init());
	kpp_set_mark(a);
	ASSERT_TRUE(kpp_set_insert(b, 7));
	kpp_set_reset();
	EXPECT_TRUE(kpp_set_maybe(a));		/* arena marks survive */
	EXPECT_FALSE(kpp_set_remove(b, &size));	/* entries do not */
}

struct churn_arg {
	int id;
	int errors;
};

static void *set_churn(void *p)
{
	struct churn_arg *a = p;
	uint64_t size;

	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < 100; i++) {
			uintptr_t k = ((uintptr_t)a->id << 32) | ((uintptr_t)i << 4) | 0x1000;

			if (!kpp_set_insert((void *)k, (uint64_t)k))
				a->errors++;
		}
		for (int i = 0; i < 100; i++) {
			uintptr_t k = ((uintptr_t)a->id << 32) | ((uintptr_t)i << 4) | 0x1000;

			if (!kpp_set_remove((void *)k, &size) || size != k)
				a->errors++;
		}
	}
	return NULL;
}

TEST(set_concurrent)
{
	pthread_t t[4];
	struct churn_arg a[4];

	ASSERT_EQ(0, kpp_set_init());
	for (int i = 0; i < 4; i++) {
		a[i].id = i + 1;
		a[i].errors = 0;
		ASSERT_EQ(0, pthread_create(&t[i], NULL, set_churn, &a[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, a[i].errors);
	}
}

TEST(rand_exp_mean)
{
	struct kpp_thread t = { .rng_seeded = 1, .rng = 12345 };
	const int n = 200000;
	double sum = 0, sumsq = 0;

	for (int i = 0; i < n; i++) {
		double v = (double)kpp_rand_exp(&t, 524288);

		sum += v;
		sumsq += v * v;
	}
	/* Mean 512 KiB; an exponential's standard deviation equals its mean,
	 * so the sample mean is within 1% at 4.5 sigma for n = 200000. */
	EXPECT_LT(fabs(sum / n - 524288.0) / 524288.0, 0.01);
	EXPECT_LT(fabs(sqrt(sumsq / n - (sum / n) * (sum / n)) - 524288.0) / 524288.0, 0.02);
}

TEST(rand_exp_is_not_a_stride)
{
	struct kpp_thread t = { .rng_seeded = 1, .rng = 99 };
	uint64_t a = kpp_rand_exp(&t, 1000), b = kpp_rand_exp(&t, 1000);
	int distinct = a != b;

	for (int i = 0; i < 100; i++)
		distinct += kpp_rand_exp(&t, 1000) != a;
	EXPECT_GT(distinct, 90);
}

TEST(rand_chance)
{
	struct kpp_thread t = { .rng_seeded = 1, .rng = 7 };
	int hits = 0;

	for (int i = 0; i < 100000; i++)
		hits += kpp_rand_chance(&t, 1, 4);
	EXPECT_LT(abs(hits - 25000), 600);	/* sigma ~137 */
	EXPECT_TRUE(kpp_rand_chance(&t, 5, 5));
	EXPECT_TRUE(kpp_rand_chance(&t, 9, 5));
	EXPECT_FALSE(kpp_rand_chance(&t, 0, 5));
}

TEST(env_parsing)
{
	setenv("KPP_T", "4096", 1);
	EXPECT_EQ(4096, kpp_env_u64("KPP_T", 1 << 20));
	/* base 10 only: a leading 0 is not octal, 0x is not a number */
	setenv("KPP_T", "010", 1);
	EXPECT_EQ(10, kpp_env_u64("KPP_T", 1 << 20));
	setenv("KPP_T", "0x10", 1);
	EXPECT_EQ(-1, kpp_env_u64("KPP_T", 1 << 20));
	setenv("KPP_T", "0", 1);
	EXPECT_EQ(0, kpp_env_u64("KPP_T", 1 << 20));
	setenv("KPP_T", "-1", 1);
	EXPECT_EQ(-1, kpp_env_u64("KPP_T", 1 << 20));
	setenv("KPP_T", "12abc", 1);
	EXPECT_EQ(-1, kpp_env_u64("KPP_T", 1 << 20));
	setenv("KPP_T", "2000000", 1);
	EXPECT_EQ(-1, kpp_env_u64("KPP_T", 1 << 20));
	unsetenv("KPP_T");
	EXPECT_EQ(-1, kpp_env_u64("KPP_T", 1 << 20));
}

TEST(config_without_page_is_off)
{
	struct kpp_thread t = { 0 };

	kpp.page = NULL;
	kpp_config_refresh(&t);
	EXPECT_EQ(0, (int)t.mem_rate);
	EXPECT_EQ(0, (int)t.block_rate);
	EXPECT_EQ(0, (int)t.mutex_fraction);
}

TEST(config_page_and_overrides)
{
	static struct kpprof_config_page pg = {
		.seq = 4, .abi_version = KPPROF_ABI_VERSION,
		.config = { .mem_rate = 1000, .block_rate = 50, .mutex_fraction = 3,
			    .max_stack_depth = 32, .flags = KPPROF_CFG_HEAP | KPPROF_CFG_MUTEX },
	};
	struct kpp_thread t = { 0 };

	kpp.page = &pg;
	kpp.env_mem_rate = kpp.env_block_rate = kpp.env_mutex_fraction = -1;
	kpp_config_refresh(&t);
	EXPECT_EQ(1000, (int)t.mem_rate);
	EXPECT_EQ(0, (int)t.block_rate);	/* flag off */
	EXPECT_EQ(3, (int)t.mutex_fraction);
	EXPECT_EQ(32, (int)t.max_depth);
	/* Unchanged seq: nothing re-read even if the bytes differ. */
	pg.config.mem_rate = 2000;
	kpp_config_refresh(&t);
	EXPECT_EQ(1000, (int)t.mem_rate);
	/* A new generation is seen. */
	pg.seq = 6;
	kpp_config_refresh(&t);
	EXPECT_EQ(2000, (int)t.mem_rate);
	/* The environment wins over the page, the flag still gates. */
	kpp.env_mem_rate = 1;
	kpp.env_block_rate = 7;
	pg.seq = 8;
	kpp_config_refresh(&t);
	EXPECT_EQ(1, (int)t.mem_rate);
	EXPECT_EQ(0, (int)t.block_rate);
	kpp.env_mem_rate = kpp.env_block_rate = -1;
	kpp.page = NULL;
}

/*
 * The start-up arena that serves dlsym's allocations before the real
 * functions are known, and the stubs kpp_real starts with.
 */
TEST(arena_blocks)
{
	char *a, *b, *c;

	ASSERT_EQ(0, kpp_set_init());
	a = kpp_arena_alloc(10, 1);
	b = kpp_arena_alloc(100, 64);
	c = kpp_arena_alloc(5000, 4096);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(0, (uintptr_t)a % 16);
	EXPECT_EQ(0, (uintptr_t)b % 64);
	EXPECT_EQ(0, (uintptr_t)c % 4096);
	EXPECT_EQ(10, (int)kpp_arena_size_of(a));
	EXPECT_EQ(5000, (int)kpp_arena_size_of(c));
	EXPECT_TRUE(kpp_in_arena(a) && kpp_in_arena(c + 4999));
	EXPECT_FALSE(kpp_in_arena(&a));
	/* zeroed (calloc relies on it) and non-overlapping */
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(0, b[i]);
	EXPECT_TRUE(a + 10 <= b && b + 100 <= c);
	/* free() of an arena block must reach the slow path */
	EXPECT_TRUE(kpp_set_maybe(a));
	EXPECT_TRUE(kpp_set_maybe(c));
	/* too big or a bad alignment: NULL, not a crash */
	EXPECT_EQ(NULL, kpp_arena_alloc(1 << 20, 16));
	EXPECT_EQ(NULL, kpp_arena_alloc(16, 48));
}

TEST(stubs_resolve_and_forward)
{
	void *(*stub_malloc)(size_t) = kpp_real.malloc;
	char *p;

	ASSERT_FALSE(kpp_resolving());
	p = kpp_real.malloc(100);	/* through the stub: resolves first */
	ASSERT_NE(NULL, p);
	EXPECT_FALSE(kpp_in_arena(p));
	EXPECT_NE((void *)stub_malloc, (void *)kpp_real.malloc);
	p[99] = 1;
	kpp_real.free(p);
	p = kpp_real.calloc(4, 8);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, p[31]);
	kpp_real.free(p);
}

TEST_HARNESS_MAIN
