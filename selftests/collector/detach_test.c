// SPDX-License-Identifier: GPL-2.0
/*
 * detach_test - symbolization off the lock the ring drainer needs (review
 * M8), through the hooks serve uses:
 *   - kpp_view__detach copies what writing a view needs (processes,
 *     mappings, stacks): the profile is encoded from the copy after the
 *     aggregation changed or is gone (ASan build: no reference remains);
 *   - kpp_agg__copy_procs, the same for /debug/pprof/symbol scans;
 *   - with the symbolizer shared, the ring callback never waits for it: an
 *     MMAP record's prefetch finds it held, is queued, and runs at the next
 *     record once it is free; the queue is bounded and its losses counted;
 *   - (review L2) `record` keeps only its command's tree: COMM records of
 *     other processes cost no process-table entry.
 */
#include <kselftest_harness.h>

#include "profile_write.h"
#include "session.h"
#include "test_rec.h"
#include "view.h"

struct fx {
	char *text;
	struct kpp_decoder *d;
	struct test_buf b;
};

static void fx_init(struct __test_metadata *_metadata, struct fx *f)
{
	char err[256];

	f->text = test_format();
	ASSERT_NE(NULL, f->text);
	f->d = kpp_decoder__new(f->text, err, sizeof(err));
	ASSERT_NE(NULL, f->d) TH_LOG("%s", err);
}

TEST(encode_from_a_detached_copy)
{
	const uint64_t s1[3] = { 0x7e0000001010ULL, 0x7e0000002020ULL, 0x7e0000003030ULL };
	const uint64_t s2[2] = { 0x7e0000004040ULL, 0x7e0000001010ULL };
	struct kpp_agg *a = kpp_agg__new(NULL), *copy;
	struct kpp_symbolizer *sym = kpp_symbolizer__new();
	struct kpp_write_opts o = { 0 };
	const struct kpp_proc *p;
	struct kpp_view v;
	struct fx f;
	uint8_t *gz;
	size_t len;

	fx_init(_metadata, &f);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, sym);
	ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_comm(&f.b, 10, 1, KPPROF_COMM_START, "app", 1)));
	ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_mmap(&f.b, 10, 0x7e0000000000ULL,
						       0x7e0000100000ULL, 0, "/nonexistent/app")));
	ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_alloc(&f.b, 10, 1, 0x100, 64, 1, s1, 3)));
	ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_alloc(&f.b, 10, 1, 0x200, 32, 1, s2, 2)));
	ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_cycle(&f.b, 2)));
	ASSERT_EQ(0, kpp_view__take(&v, a, KPP_HEAP, NULL, NULL));
	ASSERT_EQ(2u, v.n);
	copy = kpp_view__detach(&v, a);
	ASSERT_NE(NULL, copy);
	/* The aggregation goes on (and here, goes away) meanwhile. */
	kpp_agg__free(a);
	p = kpp_agg__proc(copy, 10);
	ASSERT_NE(NULL, p);
	EXPECT_STREQ("app", p->comm);
	ASSERT_EQ(1u, p->nr_maps);
	EXPECT_STREQ("/nonexistent/app", p->maps[0].path);
	for (size_t i = 0; i < v.n; i++) {
		unsigned int n;
		const uint64_t *pcs = kpp_agg__stack(copy, v.s[i].stack, &n);
		const uint64_t *want = v.s[i].size == 64 ? s1 : s2;

		ASSERT_NE(NULL, pcs);
		ASSERT_EQ(v.s[i].size == 64 ? 3u : 2u, n);
		EXPECT_EQ(0, memcmp(pcs, want, 8 * n));
	}
	ASSERT_EQ(0, kpp_profile__encode_gz(&v, copy, sym, &o, &gz, &len));
	EXPECT_LT(0u, len);
	free(gz);
	kpp_view__release(&v);
	kpp_agg__free(copy);
	kpp_symbolizer__free(sym);
	kpp_decoder__free(f.d);
	free(f.text);
}

TEST(copy_procs_for_symbol_scans)
{
	struct kpp_agg *a = kpp_agg__new(NULL), *c;
	struct fx f;

	fx_init(_metadata, &f);
	for (uint32_t pid = 10; pid < 13; pid++)
		ASSERT_EQ(0, test_feed(f.d, a, &f.b, test_mmap(&f.b, pid, 0x1000, 0x2000, 0, "/x")));
	c = kpp_agg__copy_procs(a, 11);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(1u, kpp_agg__stats(c)->nr_procs);
	ASSERT_NE(NULL, kpp_agg__proc(c, 11));
	EXPECT_EQ(1u, kpp_agg__proc(c, 11)->nr_maps);
	kpp_agg__free(c);
	c = kpp_agg__copy_procs(a, 0);
	ASSERT_NE(NULL, c);
	EXPECT_EQ(3u, kpp_agg__stats(c)->nr_procs);
	kpp_agg__free(c);
	kpp_agg__free(a);
	kpp_decoder__free(f.d);
	free(f.text);
}

TEST(drainer_never_waits_for_the_symbolizer)
{
	struct kpp_session s;
	struct fx f;
	size_t len;

	fx_init(_metadata, &f);
	memset(&s, 0, sizeof(s));
	s.fd = -1;
	s.dec = f.d;
	s.agg = kpp_agg__new(NULL);
	s.sym = kpp_symbolizer__new();
	ASSERT_NE(NULL, s.agg);
	ASSERT_NE(NULL, s.sym);
	ASSERT_EQ(0, kpp_session__share_symbolizer(&s));

	/* A request thread symbolizes: the symbolizer is held. */
	kpp_session__sym_lock(&s);
	len = test_mmap(&f.b, 10, 0x1000, 0x2000, 0, "/nonexistent/lib.so");
	ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	EXPECT_EQ(1u, s.nr_pending);
	EXPECT_EQ(1u, s.prefetch_deferred);
	/* The queue is bounded, and what does not fit is counted. */
	for (int i = 0; i < KPP_PENDING_PREFETCH + 10; i++) {
		len = test_mmap(&f.b, 20 + i, 0x1000, 0x2000, 0, "/nonexistent/lib.so");
		ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	}
	EXPECT_EQ((size_t)KPP_PENDING_PREFETCH, s.nr_pending);
	EXPECT_EQ(11u, s.prefetch_lost);
	kpp_session__sym_unlock(&s);
	/* The next record finds it free and runs what waited. */
	len = test_cycle(&f.b, 2);
	ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	EXPECT_EQ(0u, s.nr_pending);
	s.dec = NULL;		/* the fixture's */
	kpp_session__close(&s);
	kpp_decoder__free(f.d);
	free(f.text);
}

TEST(record_keeps_only_its_tree)
{
	struct kpp_session s;
	struct fx f;
	size_t len;

	fx_init(_metadata, &f);
	memset(&s, 0, sizeof(s));
	s.fd = -1;
	s.dec = f.d;
	s.agg = kpp_agg__new(NULL);
	ASSERT_NE(NULL, s.agg);
	s.only_root = true;
	s.root = 100;
	len = test_comm(&f.b, 100, 1, KPPROF_COMM_START, "make", 1);
	ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	len = test_comm(&f.b, 101, 100, KPPROF_COMM_FORK, "make", 1);
	ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	len = test_comm(&f.b, 102, 101, KPPROF_COMM_START, "cc", 1);
	ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	/* The rest of the machine: starts, forks and exits of other trees. */
	for (uint32_t pid = 1000; pid < 3000; pid++) {
		len = test_comm(&f.b, pid, 1, KPPROF_COMM_START, "other", 1);
		ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
		len = test_comm(&f.b, pid, 1, KPPROF_COMM_EXIT, "other", 1);
		ASSERT_EQ(0, kpp_session__record(&s, f.b.bytes, len));
	}
	EXPECT_EQ(3u, kpp_agg__stats(s.agg)->nr_procs);
	EXPECT_EQ(4000u, s.skipped);
	EXPECT_TRUE(kpp_agg__descends_from(s.agg, 102, 100));
	s.dec = NULL;
	kpp_session__close(&s);
	kpp_decoder__free(f.d);
	free(f.text);
}

TEST_HARNESS_MAIN
