// SPDX-License-Identifier: GPL-2.0
/*
 * serve_rules_test - rules of what serve publishes that no other test
 * guarded (the test audit changed each and every test still passed):
 *   - a delta (?seconds=) matches buckets by rate too: a bucket sampled at
 *     another rate in the window is new, not the old one's continuation;
 *   - every sample carries a comm label, "?" for a process whose comm was
 *     never told (README: pid and comm on every sample).
 *   - a client that may see no process gets an empty view (an empty pid
 *     set is a filter like any other: under UBSan, -asan, bsearch on its
 *     NULL array aborted the server);
 *   - a client's set names processes, not pids: a pid reused since by
 *     another user's process is not in it;
 *   - /symbol answers within a time budget, the rest counted.
 * The profile is read back with protobuf-c, not through go.
 */
#include <kselftest_harness.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "access.h"
#include "profile.pb-c.h"
#include "profile_write.h"
#include "symbolize.h"
#include "symbolz.h"
#include "test_rec.h"
#include "view.h"

FIXTURE(sr) {
	struct kpp_decoder *d;
	struct kpp_agg *a;
	struct test_buf b;
};

FIXTURE_SETUP(sr)
{
	char err[256], *fmt = test_format();

	ASSERT_NE(NULL, fmt);
	self->d = kpp_decoder__new(fmt, err, sizeof(err));
	free(fmt);
	ASSERT_NE(NULL, self->d) TH_LOG("%s", err);
	self->a = kpp_agg__new(NULL);
	ASSERT_NE(NULL, self->a);
}

FIXTURE_TEARDOWN(sr)
{
	kpp_agg__free(self->a);
	kpp_decoder__free(self->d);
}

/* The window saw one allocation at rate 1024 where the old view had one at 512. */
TEST_F(sr, delta_matches_by_rate)
{
	static const uint64_t st[2] = { 0x401000, 0x402000 };
	struct kpp_view old, v;
	double at512 = -1, at1024 = -1;

	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_alloc(&self->b, 4242, 1, 0x10000, 4096, 512, st, 2)));
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b, test_cycle(&self->b, 2)));
	ASSERT_EQ(0, kpp_view__take(&old, self->a, KPP_HEAP, NULL, NULL));
	/* Same process, stack and size; the rate changed (kpprof ctl --mem-rate). */
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_alloc(&self->b, 4242, 2, 0x20000, 4096, 1024, st, 2)));
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b, test_cycle(&self->b, 3)));
	ASSERT_EQ(0, kpp_view__take(&v, self->a, KPP_HEAP, NULL, NULL));
	ASSERT_EQ(0, kpp_view__subtract(&v, &old));
	for (size_t i = 0; i < v.n; i++) {
		if (v.s[i].rate == 512)
			at512 = v.s[i].v[0];
		else if (v.s[i].rate == 1024)
			at1024 = v.s[i].v[0];
	}
	/* The old bucket had nothing new; the new one is all the window's. */
	EXPECT_EQ(0, at512);
	EXPECT_EQ(1, at1024);
	kpp_view__release(&v);
	kpp_view__release(&old);
}

/* gunzip @gz into a malloc'd buffer. */
static uint8_t *gunzip(const uint8_t *gz, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream z = { .next_in = (uint8_t *)gz, .avail_in = len };

	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_out = out;
	z.avail_out = cap;
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	inflateEnd(&z);
	return out;
}

/* A process whose COMM record was never seen: comm "?" beside its pid. */
TEST_F(sr, comm_label_of_unnamed_process)
{
	static const uint64_t st[1] = { 0x401000 };
	struct kpp_write_opts o = { 0 };
	Perftools__Profiles__Profile *p;
	struct kpp_view v;
	uint8_t *gz, *raw;
	size_t gzlen, rawlen;
	int named = 0, pids = 0;

	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_cont(&self->b, KPPROF_REC_MUTEX, 777777, 1, 1000, 5, st, 1)));
	ASSERT_EQ(0, kpp_view__take(&v, self->a, KPP_MUTEX, NULL, NULL));
	ASSERT_EQ(1, v.n);
	ASSERT_EQ(0, kpp_profile__encode_gz(&v, self->a, NULL, &o, &gz, &gzlen));
	kpp_view__release(&v);
	raw = gunzip(gz, gzlen, &rawlen);
	free(gz);
	ASSERT_NE(NULL, raw);
	p = perftools__profiles__profile__unpack(NULL, rawlen, raw);
	free(raw);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(1, p->n_sample);
	for (size_t i = 0; i < p->sample[0]->n_label; i++) {
		const Perftools__Profiles__Label *l = p->sample[0]->label[i];
		const char *key = p->string_table[l->key];

		if (!strcmp(key, "pid"))
			pids += l->num == 777777;
		if (!strcmp(key, "comm"))
			named += !strcmp(p->string_table[l->str], "?");
	}
	EXPECT_EQ(1, pids);
	EXPECT_EQ(1, named);
	perftools__profiles__profile__free_unpacked(p, NULL);
}

/* A client of uid 4102, which wrote no record: an empty set, nothing passes. */
TEST_F(sr, empty_pid_set)
{
	static const uint64_t st[1] = { 0x401000 };
	struct kpp_peer peer = { .kind = KPP_PEER_UNIX, .known = true, .uid = 4102 };
	struct kpp_access *acc = kpp_access__new();
	struct kpp_pidset set;
	struct kpp_view v;

	ASSERT_NE(NULL, acc);
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_comm(&self->b, 777777, 1, KPPROF_COMM_START, "rootd", 1)));
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_cont(&self->b, KPPROF_REC_MUTEX, 777777, 1, 1000, 5, st, 1)));
	ASSERT_NE(NULL, kpp_agg__proc(self->a, 777777));
	/* The record's uid (0 here, as the kernel would stamp root's). */
	kpp_access__note(acc, 777777, kpp_agg__proc(self->a, 777777)->serial, 0);
	ASSERT_EQ(0, kpp_pidset__take(&set, acc, &peer, self->a));
	EXPECT_EQ(0, set.n);
	EXPECT_FALSE(kpp_pidset__has(&set, 777777));
	ASSERT_EQ(0, kpp_view__take(&v, self->a, KPP_MUTEX, kpp_pidset__has, &set));
	EXPECT_EQ(0, v.n);
	kpp_view__release(&v);
	kpp_pidset__release(&set);
	/* Root sees it. */
	peer.all = true;
	ASSERT_EQ(0, kpp_pidset__take(&set, acc, &peer, self->a));
	EXPECT_TRUE(kpp_pidset__has(&set, 777777));
	kpp_pidset__release(&set);
	kpp_access__free(acc);
}

/*
 * A client's set is taken once per request, the view later (after gc=1's
 * settle, at a delta's end): meanwhile its exited process's pid may have
 * gone to another user's new process.  The set names processes, not pids:
 * the new one under the same pid is not in it.
 */
TEST_F(sr, pidset_is_processes_not_pids)
{
	static const uint64_t st[1] = { 0x401000 };
	struct kpp_peer peer = { .kind = KPP_PEER_UNIX, .known = true, .uid = 4102 };
	struct kpp_access *acc = kpp_access__new();
	struct kpp_pidset set;
	struct kpp_proc *p;
	struct kpp_view v;
	uint64_t serial;

	ASSERT_NE(NULL, acc);
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_comm(&self->b, 777777, 1, KPPROF_COMM_START, "mine", 1)));
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_cont(&self->b, KPPROF_REC_MUTEX, 777777, 1, 1000, 5, st, 1)));
	p = kpp_agg__proc(self->a, 777777);
	ASSERT_NE(NULL, p);
	serial = p->serial;
	kpp_access__note(acc, 777777, serial, 4102);
	kpp_agg__proc_exited(self->a, p);
	ASSERT_EQ(0, kpp_pidset__take(&set, acc, &peer, self->a));
	ASSERT_TRUE(kpp_pidset__has(&set, 777777));
	/* The pid reused by root's new process, which writes its own records. */
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_comm(&self->b, 777777, 1, KPPROF_COMM_START, "rootd", 2)));
	ASSERT_EQ(0, test_feed(self->d, self->a, &self->b,
			       test_cont(&self->b, KPPROF_REC_MUTEX, 777777, 2, 9999, 5, st, 1)));
	p = kpp_agg__proc(self->a, 777777);
	ASSERT_NE(NULL, p);
	ASSERT_NE(serial, p->serial);
	kpp_access__note(acc, 777777, p->serial, 0);
	EXPECT_FALSE(kpp_pidset__has(&set, 777777)) TH_LOG("root's new process in the client's set");
	ASSERT_EQ(0, kpp_view__take(&v, self->a, KPP_MUTEX, kpp_pidset__has, &set));
	EXPECT_EQ(0, v.n) TH_LOG("root's samples in the client's view");
	kpp_view__release(&v);
	kpp_pidset__release(&set);
	kpp_access__free(acc);
}

/*
 * /symbol within a time budget: a 1 MiB body (~250k addresses) of lookups
 * into libc held the symbolizer for 23 s on this machine (88 us each), and
 * every profile and the drainer's prefetches with it.  Addresses past the
 * budget are not named, and counted.
 */
TEST_F(sr, symbol_answer_within_budget)
{
	struct kpp_session s = { 0 };
	struct kpp_pidset set = { .all = true };
	const struct kpp_proc *p;
	const struct kpp_map *m;
	struct timespec t0, t1;
	char *text, *buf = NULL;
	size_t len = 0, used = 0, cap = 1 << 20;
	uint64_t cut;
	double secs;
	FILE *f;

	s.sym = kpp_symbolizer__new();
	ASSERT_NE(NULL, s.sym);
	ASSERT_LT(0, kpp_proc__read_maps(self->a, getpid()));
	p = kpp_agg__proc(self->a, getpid());
	ASSERT_NE(NULL, p);
	m = kpp_proc__map_for((struct kpp_proc *)p, (uint64_t)(uintptr_t)&printf);
	ASSERT_NE(NULL, m);
	text = malloc(cap);
	ASSERT_NE(NULL, text);
	for (unsigned int i = 0; used + 40 < cap; i++)
		used += snprintf(text + used, cap - used, "%#llx+",
				 (unsigned long long)(m->start + 0x1000 +
						      (i * 4096ULL + i * 16) % (m->end - m->start - 0x2000)));
	f = open_memstream(&buf, &len);
	ASSERT_NE(NULL, f);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cut = kpp_symbolz__answer(&s, self->a, &set, text, 0, f, 300);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fclose(f);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	EXPECT_LT(secs, 3.0) TH_LOG("a 1 MiB /symbol body took %.1f s (budget 0.3 s)", secs);
	EXPECT_LT(0u, cut) TH_LOG("nothing was cut");
	EXPECT_LT(0u, len) TH_LOG("nothing was named within the budget");
	free(buf);
	free(text);
	kpp_symbolizer__free(s.sym);
}

TEST_HARNESS_MAIN
