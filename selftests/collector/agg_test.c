// SPDX-License-Identifier: GPL-2.0
/*
 * agg_test - the aggregation's semantics: Go's cycle delay (nothing is
 * published before its cycle is complete; an allocation freed in its own
 * cycle never shows as live), unknown frees counted, contention unbiasing
 * (block CL 299991, mutex fraction), the bucket cap counted, and the
 * exited-process policy.
 */
#include <errno.h>
#include <kselftest_harness.h>

#include "test_rec.h"
#include "view.h"

FIXTURE(agg) {
	char *text;
	struct kpp_decoder *d;
	struct kpp_agg *a;
	struct test_buf b;
};

FIXTURE_SETUP(agg)
{
	char err[256] = "";

	self->text = test_format();
	ASSERT_NE(NULL, self->text);
	self->d = kpp_decoder__new(self->text, err, sizeof(err));
	ASSERT_NE(NULL, self->d) TH_LOG("%s", err);
	self->a = kpp_agg__new(NULL);
	ASSERT_NE(NULL, self->a);
}

FIXTURE_TEARDOWN(agg)
{
	kpp_agg__free(self->a);
	kpp_decoder__free(self->d);
	free(self->text);
}

static const uint64_t stack_a[2] = { 0x1111, 0x2222 };
static const uint64_t stack_b[2] = { 0x3333, 0x2222 };

/* Sum of one view column over all its samples. */
static double col(struct kpp_agg *a, int type, int k)
{
	struct kpp_view v;
	double t = 0;

	if (kpp_view__take(&v, a, type, NULL, NULL))
		return -1;
	for (size_t i = 0; i < v.n; i++)
		t += v.s[i].v[k];
	kpp_view__release(&v);
	return t;
}

#define FEED(expr) ASSERT_EQ(0, test_feed(self->d, self->a, &self->b, (expr)))

TEST_F(agg, cycle_delay)
{
	FEED(test_alloc(&self->b, 10, 1, 0x100, 64, 1, stack_a, 2));
	FEED(test_alloc(&self->b, 10, 1, 0x200, 64, 1, stack_a, 2));
	FEED(test_free(&self->b, 10, 1, 0x100, 64));
	/*
	 * Cycle 1 is not complete, and no cycle has completed yet: Go's
	 * fallback reports the incomplete cycle rather than nothing.
	 */
	EXPECT_EQ(2, col(self->a, KPP_HEAP, 0));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	FEED(test_cycle(&self->b, 2));
	/* Two allocations, one freed in the same cycle: one live. */
	EXPECT_EQ(2, col(self->a, KPP_HEAP, 0));
	EXPECT_EQ(128, col(self->a, KPP_HEAP, 1));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	EXPECT_EQ(64, col(self->a, KPP_HEAP, 3));
	/* A free in cycle 2 shows only once cycle 2 is complete. */
	FEED(test_free(&self->b, 10, 2, 0x200, 64));
	FEED(test_alloc(&self->b, 10, 2, 0x400, 64, 1, stack_a, 2));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	EXPECT_EQ(2, col(self->a, KPP_HEAP, 0));
	/* Any later record proves the cycle complete, cycle record or not. */
	FEED(test_alloc(&self->b, 10, 5, 0x300, 32, 1, stack_b, 2));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	EXPECT_EQ(3, col(self->a, KPP_HEAP, 0));
	EXPECT_EQ(5u, kpp_agg__first_incomplete(self->a));
}

TEST_F(agg, buckets_by_size_and_stack)
{
	FEED(test_alloc(&self->b, 10, 1, 0x100, 64, 1, stack_a, 2));
	FEED(test_alloc(&self->b, 10, 1, 0x200, 32, 1, stack_a, 2));
	FEED(test_alloc(&self->b, 10, 1, 0x300, 64, 1, stack_b, 2));
	FEED(test_alloc(&self->b, 11, 1, 0x300, 64, 1, stack_b, 2));
	FEED(test_alloc(&self->b, 10, 1, 0x400, 64, 1, stack_a, 2));
	EXPECT_EQ(4u, kpp_agg__nr_buckets(self->a));
	EXPECT_EQ(2u, kpp_agg__stats(self->a)->nr_stacks);
	EXPECT_EQ(5u, kpp_agg__stats(self->a)->nr_live);
}

TEST_F(agg, unknown_free_and_replaced_alloc)
{
	FEED(test_free(&self->b, 10, 1, 0x999, 8));
	EXPECT_EQ(1u, kpp_agg__stats(self->a)->unknown_frees);
	FEED(test_alloc(&self->b, 10, 1, 0x100, 64, 1, stack_a, 2));
	FEED(test_alloc(&self->b, 10, 1, 0x100, 64, 1, stack_a, 2));
	EXPECT_EQ(1u, kpp_agg__stats(self->a)->replaced_allocs);
	/* Same address in another process is another allocation. */
	FEED(test_free(&self->b, 11, 1, 0x100, 64));
	EXPECT_EQ(2u, kpp_agg__stats(self->a)->unknown_frees);
}

/*
 * A FREE lost in a full ring: when the address comes back in a new ALLOC,
 * the old allocation was freed, and its bucket stops counting it in use.
 */
TEST_F(agg, lost_free_counted_on_reuse)
{
	FEED(test_alloc(&self->b, 10, 1, 0x100, 64, 1, stack_a, 2));
	FEED(test_cycle(&self->b, 2));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	/* Same address, other stack and size, in cycle 2: FREE was lost. */
	FEED(test_alloc(&self->b, 10, 2, 0x100, 32, 1, stack_b, 2));
	FEED(test_cycle(&self->b, 3));
	EXPECT_EQ(1u, kpp_agg__stats(self->a)->replaced_allocs);
	/* Two allocations ever, one in use: the new one, 32 bytes. */
	EXPECT_EQ(2, col(self->a, KPP_HEAP, 0));
	EXPECT_EQ(1, col(self->a, KPP_HEAP, 2));
	EXPECT_EQ(32, col(self->a, KPP_HEAP, 3));
}

TEST_F(agg, block_unbiasing)
{
	/* d >= rate: one event of d.  d < rate: rate/d events, rate ns. */
	FEED(test_cont(&self->b, KPPROF_REC_BLOCK, 10, 1, 5000, 1000, stack_a, 2));
	FEED(test_cont(&self->b, KPPROF_REC_BLOCK, 10, 1, 250, 1000, stack_a, 2));
	EXPECT_EQ(5.0, col(self->a, KPP_BLOCK, 0));
	EXPECT_EQ(6000.0, col(self->a, KPP_BLOCK, 1));
}

TEST_F(agg, mutex_fraction)
{
	FEED(test_cont(&self->b, KPPROF_REC_MUTEX, 10, 1, 300, 8, stack_a, 2));
	EXPECT_EQ(8.0, col(self->a, KPP_MUTEX, 0));
	EXPECT_EQ(2400.0, col(self->a, KPP_MUTEX, 1));
	EXPECT_EQ(0.0, col(self->a, KPP_BLOCK, 0));
}

TEST(bucket_cap_counted)
{
	/* The global cap alone (the quotas would refuse first). */
	struct kpp_agg_limits lim = { .max_buckets = 2, .max_uid_buckets = 2,
				      .max_proc_buckets = 2 };
	struct kpp_agg *a = kpp_agg__new(&lim);
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct test_buf b;

	ASSERT_NE(NULL, d);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 10, 1, 0x100 + i, 8 * (i + 1), 1,
							    stack_a, 2)));
	EXPECT_EQ(2u, kpp_agg__nr_buckets(a));
	EXPECT_EQ(3u, kpp_agg__stats(a)->over_buckets);
	kpp_agg__free(a);
	kpp_decoder__free(d);
	free(text);
}

TEST(exited_processes_policy)
{
	/* Exited processes' memory kept in use (record's view): the live map is checked. */
	struct kpp_agg_limits lim = { .max_exited = 2, .max_uid_exited = 2,
				      .keep_exited_inuse = true };
	struct kpp_agg *a = kpp_agg__new(&lim);
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct test_buf b;

	ASSERT_NE(NULL, d);
	for (uint32_t pid = 100; pid < 104; pid++) {
		ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, pid, 1, KPPROF_COMM_START, "w", 1)));
		ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, pid, 1, 0x100, 8, 1, stack_a, 2)));
	}
	for (uint32_t pid = 100; pid < 104; pid++)
		ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, pid, 1, KPPROF_COMM_EXIT, "w", 1)));
	/* The two that exited first are gone with their buckets; the rest stay. */
	EXPECT_EQ(NULL, kpp_agg__proc(a, 100));
	EXPECT_EQ(NULL, kpp_agg__proc(a, 101));
	ASSERT_NE(NULL, kpp_agg__proc(a, 102));
	EXPECT_EQ(KPP_PROC_EXITED, kpp_agg__proc(a, 103)->state);
	EXPECT_EQ(2u, kpp_agg__stats(a)->nr_buckets);
	EXPECT_EQ(2u, kpp_agg__stats(a)->procs_dropped);
	EXPECT_EQ(2u, kpp_agg__stats(a)->nr_live);
	/* The survivors' live map still works after the renumbering. */
	ASSERT_EQ(0, test_feed(d, a, &b, test_free(&b, 103, 1, 0x100, 8)));
	EXPECT_EQ(0u, kpp_agg__stats(a)->unknown_frees);
	kpp_agg__free(a);
	kpp_decoder__free(d);
	free(text);
}

/*
 * A ?seconds= delta while processes are dropped (more than max_exited
 * exit): buckets are renumbered, but the delta matches them by content
 * (process, stack, size, rate), so it still works and is exact; and a
 * reused pid is a new process, never subtracted from the old one's counts.
 */
TEST(delta_survives_dropped_processes)
{
	/* Exited processes' memory kept in use (record's view): the live map is checked. */
	struct kpp_agg_limits lim = { .max_exited = 2, .max_uid_exited = 2,
				      .keep_exited_inuse = true };
	struct kpp_agg *a = kpp_agg__new(&lim);
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct kpp_view old, v;
	struct test_buf b;
	double t[4] = { 0 };

	ASSERT_NE(NULL, d);
	for (uint32_t pid = 100; pid < 104; pid++) {
		ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, pid, 1, KPPROF_COMM_START, "w", 1)));
		ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, pid, 1, 0x100, 8, 1, stack_a, 2)));
	}
	ASSERT_EQ(0, test_feed(d, a, &b, test_cycle(&b, 2)));
	ASSERT_EQ(0, kpp_view__take(&old, a, KPP_HEAP, NULL, NULL));
	/* In the window: 100..102 exit (100 is dropped), 103 allocates twice more. */
	for (uint32_t pid = 100; pid < 103; pid++)
		ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, pid, 1, KPPROF_COMM_EXIT, "w", 2)));
	ASSERT_EQ(NULL, kpp_agg__proc(a, 100));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 103, 2, 0x200, 8, 1, stack_a, 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 103, 2, 0x300, 8, 1, stack_a, 2)));
	/* pid 100 comes back as a new process with the same stack. */
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 100, 1, KPPROF_COMM_START, "w2", 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 100, 2, 0x100, 8, 1, stack_a, 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_cycle(&b, 3)));
	ASSERT_EQ(0, kpp_view__take(&v, a, KPP_HEAP, NULL, NULL));
	ASSERT_EQ(0, kpp_view__subtract(&v, &old));
	for (size_t i = 0; i < v.n; i++) {
		for (int k = 0; k < 4; k++)
			t[k] += v.s[i].v[k];
		if (v.s[i].pid == 100)
			EXPECT_EQ(1.0, v.s[i].v[0]);	/* the new process's own */
		if (v.s[i].pid == 101 || v.s[i].pid == 102)
			EXPECT_EQ(0.0, v.s[i].v[0]);
		if (v.s[i].pid == 103)
			EXPECT_EQ(2.0, v.s[i].v[0]);
	}
	/* Three allocations in the window, none freed. */
	EXPECT_EQ(3.0, t[0]);
	EXPECT_EQ(24.0, t[1]);
	EXPECT_EQ(3.0, t[2]);
	kpp_view__release(&v);
	kpp_view__release(&old);
	kpp_agg__free(a);
	kpp_decoder__free(d);
	free(text);
}

/*
 * exec ends the image that sampled (finding 5): its live allocations do
 * not stay in use under the new comm, whether the EXEC record arrived or
 * only the new image's START did (the EXEC lost in a full ring).
 */
TEST(exec_ends_the_old_image)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct test_buf b;
	struct kpp_view v;

	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 10, 1, KPPROF_COMM_START, "old", 1)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_mmap(&b, 10, 0x1000, 0x2000, 0, "/old")));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 10, 1, 0x100, 1000, 1, stack_a, 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 10, 1, KPPROF_COMM_EXEC, "old", 1)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 10, 1, KPPROF_COMM_START, "new", 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 10, 2, 0x180, 8, 1, stack_b, 2)));
	/* the new image execs again, and its EXEC record is lost */
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 10, 2, 0x200, 16, 1, stack_b, 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_cycle(&b, 3)));
	EXPECT_EQ(24.0, col(a, KPP_HEAP, 3));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 10, 1, KPPROF_COMM_START, "newer", 3)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_alloc(&b, 10, 3, 0x300, 4, 1, stack_a, 2)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_cycle(&b, 4)));
	ASSERT_EQ(0, kpp_view__take(&v, a, KPP_HEAP, NULL, NULL));
	/* Only the last image's allocation is in use (or counted at all). */
	double inuse = 0;

	for (size_t i = 0; i < v.n; i++)
		inuse += v.s[i].v[3];
	EXPECT_EQ(4.0, inuse);
	kpp_view__release(&v);
	ASSERT_NE(NULL, kpp_agg__proc(a, 10));
	EXPECT_STREQ("newer", kpp_agg__proc(a, 10)->comm);
	EXPECT_EQ(KPP_PROC_ALIVE, kpp_agg__proc(a, 10)->state);
	/* The old image's mappings went with it. */
	EXPECT_EQ(0u, kpp_agg__proc(a, 10)->nr_maps);
	/* A FREE of the old image's address finds nothing to free. */
	ASSERT_EQ(0, test_feed(d, a, &b, test_free(&b, 10, 4, 0x100, 1000)));
	EXPECT_EQ(1u, kpp_agg__stats(a)->unknown_frees);
	kpp_agg__free(a);
	kpp_decoder__free(d);
	free(text);
}

TEST(descendants)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	char err[256], *text = test_format();
	struct kpp_decoder *d = kpp_decoder__new(text, err, sizeof(err));
	struct test_buf b;

	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 200, 1, KPPROF_COMM_START, "sh", 1)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 201, 200, KPPROF_COMM_FORK, "sh", 1)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 202, 201, KPPROF_COMM_START, "cat", 1)));
	ASSERT_EQ(0, test_feed(d, a, &b, test_comm(&b, 300, 1, KPPROF_COMM_START, "other", 1)));
	EXPECT_TRUE(kpp_agg__descends_from(a, 202, 200));
	EXPECT_TRUE(kpp_agg__descends_from(a, 200, 200));
	EXPECT_FALSE(kpp_agg__descends_from(a, 300, 200));
	EXPECT_STREQ("cat", kpp_agg__proc(a, 202)->comm);
	kpp_agg__free(a);
	kpp_decoder__free(d);
	free(text);
}

TEST(scale_heap_sample)
{
	int64_t c, by;

	/* rate 1: exact. */
	kpp_scale_heap(3, 300, 1, &c, &by);
	EXPECT_EQ(3, c);
	EXPECT_EQ(300, by);
	/* 1 MiB objects at 512 KiB: scale 1/(1-e^-2) = 1.1565. */
	kpp_scale_heap(100, 100.0 * 1048576, 524288, &c, &by);
	EXPECT_EQ(115, c);
	EXPECT_EQ((int64_t)(100.0 * 1048576 / (1 - 0.1353352832366127)), by);
}

TEST_HARNESS_MAIN
