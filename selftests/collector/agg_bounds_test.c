// SPDX-License-Identifier: GPL-2.0
/*
 * agg_bounds_test - the aggregation's state and work are bounded per
 * producer and follow what changed (issue 17, review H4, M5, M9, M10, L2,
 * quotas):
 *   - dropping a process touches its own buckets and live allocations,
 *     never the other processes' (counted in drop_work, not timed);
 *   - `record`'s unbounded exited list costs O(1) per exit;
 *   - stacks no bucket uses are reclaimed: millions of distinct stacks
 *     streamed through exiting processes never blind the collector;
 *   - one uid's flood (buckets, live allocations, stacks, processes) is
 *     refused against that uid's quota, and another uid's records all go in;
 *   - an exited process has nothing in use (Go: a process that is gone has
 *     no heap), its allocations stay in alloc_*; `record` keeps the leak view;
 *   - a pid reused by a fork after a SIGKILL starts a new process;
 *   - one uid's exits keep the other uids' exited processes (a share of
 *     the exited FIFO per uid);
 *   - refusals are visible: the profile comment's line and the counters
 *     the collector publishes for `kpprof stat` (never through a symlink).
 */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <kselftest_harness.h>

#include "collector_stats.h"
#include "session.h"
#include "test_rec.h"
#include "view.h"

/* A record as the decoder gives it, without encoding: the big loops here. */
static struct kpp_rec rec(int kind, uint32_t pid, uint32_t uid, uint64_t cycle)
{
	struct kpp_rec r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.tgid = r.tid = pid;
	r.uid = uid;
	r.cycle = cycle;
	return r;
}

static int alloc(struct kpp_agg *a, uint32_t pid, uint32_t uid, uint64_t cycle,
		 uint64_t addr, uint64_t bytes, const uint64_t *pcs, unsigned int n)
{
	struct kpp_rec r = rec(KPPROF_REC_ALLOC, pid, uid, cycle);

	r.alloc.addr = addr;
	r.alloc.bytes = bytes;
	r.alloc.rate = 1;
	r.nr_pcs = n;
	r.pcs = pcs;
	return kpp_agg__add(a, &r);
}

static int comm(struct kpp_agg *a, uint32_t pid, uint32_t uid, uint32_t ppid,
		uint32_t reason, const char *name, uint64_t cycle)
{
	struct kpp_rec r = rec(KPPROF_REC_COMM, pid, uid, cycle);

	r.comm.reason = reason;
	r.comm.ppid = ppid;
	snprintf(r.comm.comm, sizeof(r.comm.comm), "%s", name);
	return kpp_agg__add(a, &r);
}

static int cycle(struct kpp_agg *a, uint64_t c)
{
	struct kpp_rec r = rec(KPPROF_REC_CYCLE, 0, 0, c);

	return kpp_agg__add(a, &r);
}

struct only_pid {
	uint32_t pid;
};

static bool is_pid(void *ctx, uint32_t pid)
{
	return pid == ((struct only_pid *)ctx)->pid;
}

/* Sum of heap view column @k (0 allocs, 1 alloc bytes, 2 inuse, 3 inuse bytes) for @pid. */
static double heap_col(struct kpp_agg *a, uint32_t pid, int k)
{
	struct only_pid o = { pid };
	struct kpp_view v;
	double t = 0;

	if (kpp_view__take(&v, a, KPP_HEAP, is_pid, &o))
		return -1;
	for (size_t i = 0; i < v.n; i++)
		t += v.s[i].v[k];
	kpp_view__release(&v);
	return t;
}

/*
 * H4: one big process (20 000 buckets, 20 000 live allocations) and short
 * processes exiting beyond the kept ones, plus EXIT+START pairs from one
 * pid (64-byte records any user may write).  Each drop may visit what it
 * drops and a constant more; before, each visited every bucket and every
 * slot of the live table (20 000 + 65 536 per drop).
 */
TEST(drop_costs_only_its_own_entries)
{
	struct kpp_agg_limits lim = { .max_exited = 4 };
	struct kpp_agg *a = kpp_agg__new(&lim);
	uint64_t pcs[4] = { 0x401000, 0x402000, 0x403000, 0x404000 };
	const int big = 20000, shorts = 200, pairs = 200;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, comm(a, 100, 1000, 1, KPPROF_COMM_START, "daemon", 1));
	for (int i = 0; i < big; i++) {
		pcs[1] = 0x500000 + i;
		ASSERT_EQ(0, alloc(a, 100, 1000, 1, 0x10000000 + 16 * i, 64, pcs, 4));
	}
	for (int p = 0; p < shorts; p++) {
		ASSERT_EQ(0, comm(a, 5000 + p, 1000, 1, KPPROF_COMM_START, "sh", 2));
		ASSERT_EQ(0, alloc(a, 5000 + p, 1000, 2, 0x5000, 32, pcs, 4));
		ASSERT_EQ(0, comm(a, 5000 + p, 1000, 1, KPPROF_COMM_EXIT, "sh", 2));
	}
	for (int i = 0; i < pairs; i++) {
		ASSERT_EQ(0, comm(a, 7777, 1000, 1, KPPROF_COMM_EXIT, "x", 3));
		ASSERT_EQ(0, comm(a, 7777, 1000, 1, KPPROF_COMM_START, "x", 3));
	}
	const struct kpp_agg_stats *st = kpp_agg__stats(a);

	EXPECT_LE((uint64_t)shorts + pairs - lim.max_exited, st->procs_dropped + st->images_ended);
	/* Each short process owns 1 bucket and 1 live allocation: a handful each. */
	EXPECT_GE(16u * (shorts + pairs), st->drop_work)
		TH_LOG("drop_work %llu for %d drops", (unsigned long long)st->drop_work,
		       shorts + pairs);
	/* The big process is untouched and its frees still find their buckets. */
	EXPECT_EQ((double)big, heap_col(a, 100, 2));
	kpp_agg__free(a);
}

/* L2: `record` keeps every exited process; an exit must not scan them all. */
TEST(unbounded_exited_list_is_linear)
{
	struct kpp_agg_limits lim = { .max_exited = SIZE_MAX };
	struct kpp_agg *a = kpp_agg__new(&lim);
	const int n = 5000;

	ASSERT_NE(NULL, a);
	for (int p = 0; p < n; p++) {
		ASSERT_EQ(0, comm(a, 10000 + p, 1000, 1, KPPROF_COMM_START, "cc", 1));
		ASSERT_EQ(0, comm(a, 10000 + p, 1000, 1, KPPROF_COMM_EXIT, "cc", 1));
	}
	EXPECT_EQ((size_t)n, kpp_agg__stats(a)->nr_procs);
	EXPECT_GE(4u * n, kpp_agg__stats(a)->drop_work)
		TH_LOG("drop_work %llu for %d exits",
		       (unsigned long long)kpp_agg__stats(a)->drop_work, n);
	kpp_agg__free(a);
}

/*
 * M5: 3M distinct stacks (3000 short processes of 1000 stacks each, at
 * their own ASLR base), default limits.  Before, the stack table filled
 * after ~1M and every later record was lost for ever.
 */
TEST(stacks_are_reclaimed)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	const int procs = 3000, per = 1000;
	uint64_t pcs[8];

	ASSERT_NE(NULL, a);
	for (int p = 0; p < procs; p++) {
		uint32_t pid = 20000 + p;
		uint64_t base = 0x550000000000ULL + (uint64_t)p * 0x1000000;

		ASSERT_EQ(0, comm(a, pid, 1000, 1, KPPROF_COMM_START, "job", p + 1));
		for (int s = 0; s < per; s++) {
			for (int k = 0; k < 8; k++)
				pcs[k] = base + 0x1000 * k + 8 * s;
			ASSERT_EQ(0, alloc(a, pid, 1000, p + 1, 0x1000 + 16 * s, 24, pcs, 8));
		}
		ASSERT_EQ(0, comm(a, pid, 1000, 1, KPPROF_COMM_EXIT, "job", p + 1));
	}
	const struct kpp_agg_stats *st = kpp_agg__stats(a);

	EXPECT_EQ(0u, st->over_stacks);
	EXPECT_EQ(0u, st->over_buckets);
	/* The last process's records all went in. */
	EXPECT_EQ((double)per, heap_col(a, 20000 + procs - 1, 0));
	/* Only the kept processes' stacks remain. */
	EXPECT_GE((size_t)(64 + 1) * per, st->nr_stacks);
	kpp_agg__free(a);
}

/*
 * Quotas: uid 1000 floods distinct stacks, live allocations and processes
 * past the global caps; uid 1001's process still gets every record in.
 */
TEST(one_uids_flood_costs_only_that_uid)
{
	struct kpp_agg_limits lim = { .max_buckets = 4096, .max_stacks = 4096,
				      .max_live = 4096 };
	struct kpp_agg *a = kpp_agg__new(&lim);
	uint64_t pcs[2] = { 0x1000, 0x2000 };
	const int good = 200;

	ASSERT_NE(NULL, a);
	/* one stack, many live allocations, from three processes */
	pcs[0] = 0x600000;
	for (int i = 0; i < 10000; i++)
		ASSERT_EQ(0, alloc(a, 51 + i % 3, 1000, 1, 0x100000 + 16 * i, 8, pcs, 2));
	/* distinct stacks from ten processes: buckets and stacks */
	for (int i = 0; i < 10000; i++) {
		pcs[0] = 0x700000 + 8 * i;
		ASSERT_EQ(0, alloc(a, 1000 + i / 1000, 1000, 1, 0x100000 + 16 * i, 8, pcs, 2));
	}
	/* many processes that never exit (killed: no EXIT record) */
	for (uint32_t pid = 100000; pid < 140000; pid++)
		ASSERT_EQ(0, comm(a, pid, 1000, 1, KPPROF_COMM_START, "fl", 1));

	ASSERT_EQ(0, comm(a, 60, 1001, 1, KPPROF_COMM_START, "good", 1));
	for (int i = 0; i < good; i++) {
		pcs[0] = 0x900000 + 8 * i;
		ASSERT_EQ(0, alloc(a, 60, 1001, 1, 0x200000 + 16 * i, 8, pcs, 2));
	}
	ASSERT_EQ(0, cycle(a, 2));
	EXPECT_EQ((double)good, heap_col(a, 60, 0));
	EXPECT_EQ((double)good, heap_col(a, 60, 2));
	/* The flood was refused, and the process table is bounded. */
	const struct kpp_agg_stats *st = kpp_agg__stats(a);

	/* The flood was refused against uid 1000's quotas, counted by reason. */
	EXPECT_LT(0u, st->over_uid_buckets + st->over_uid_stacks);
	EXPECT_LT(0u, st->over_proc_buckets);
	EXPECT_LT(0u, st->over_uid_live + st->over_proc_live);
	EXPECT_LT(0u, st->over_uid_procs);
	EXPECT_EQ(0u, st->over_buckets + st->over_stacks + st->over_live);
	EXPECT_GT((size_t)20000, st->nr_procs);
	kpp_agg__free(a);
}

/* M9: a process that exited has nothing in use; its allocations stay counted. */
TEST(exited_process_has_no_inuse)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	uint64_t pcs[2] = { 0x1000, 0x2000 };

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, comm(a, 42, 1000, 1, KPPROF_COMM_START, "leaker", 1));
	for (int i = 0; i < 100; i++)
		ASSERT_EQ(0, alloc(a, 42, 1000, 1, 0x10000 + 4096 * i, 4096, pcs, 2));
	ASSERT_EQ(0, cycle(a, 2));
	EXPECT_EQ(409600.0, heap_col(a, 42, 3));
	ASSERT_EQ(0, comm(a, 42, 1000, 1, KPPROF_COMM_EXIT, "leaker", 2));
	ASSERT_EQ(0, cycle(a, 3));
	ASSERT_NE(NULL, kpp_agg__proc(a, 42));
	EXPECT_EQ(0.0, heap_col(a, 42, 3));
	EXPECT_EQ(0.0, heap_col(a, 42, 2));
	EXPECT_EQ(100.0, heap_col(a, 42, 0));
	EXPECT_EQ(409600.0, heap_col(a, 42, 1));
	EXPECT_EQ(0u, kpp_agg__stats(a)->nr_live);
	kpp_agg__free(a);
}

/* M10: pid 500 was SIGKILLed (no EXIT record); a forked child gets pid 500. */
TEST(fork_into_a_used_pid_is_a_new_process)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	uint64_t pcs[2] = { 0x1000, 0x2000 };
	uint64_t serial;

	ASSERT_NE(NULL, a);
	ASSERT_EQ(0, comm(a, 500, 1000, 1, KPPROF_COMM_START, "worker", 1));
	for (int i = 0; i < 10; i++)
		ASSERT_EQ(0, alloc(a, 500, 1000, 1, 0x10000 + 4096 * i, 4096, pcs, 2));
	ASSERT_EQ(0, cycle(a, 2));
	ASSERT_NE(NULL, kpp_agg__proc(a, 500));
	serial = kpp_agg__proc(a, 500)->serial;
	ASSERT_EQ(0, comm(a, 500, 1000, 400, KPPROF_COMM_FORK, "httpd", 2));
	ASSERT_EQ(0, cycle(a, 3));
	ASSERT_NE(NULL, kpp_agg__proc(a, 500));
	EXPECT_STREQ("httpd", kpp_agg__proc(a, 500)->comm);
	EXPECT_NE(serial, kpp_agg__proc(a, 500)->serial);
	EXPECT_EQ(0.0, heap_col(a, 500, 3));
	EXPECT_EQ(0.0, heap_col(a, 500, 0));
	EXPECT_EQ(1u, kpp_agg__stats(a)->images_ended);
	kpp_agg__free(a);
}

TEST(refusals_are_visible)
{
	struct kpp_agg_limits lim = { .max_uid_buckets = 3, .max_proc_buckets = 100 };
	char dir[] = "/tmp/kpprof-agg-bounds.XXXXXX", link[64], line[512], *out = NULL;
	uint64_t pcs[1];
	struct kpp_session s;
	size_t outlen = 0;
	FILE *f;

	memset(&s, 0, sizeof(s));
	s.fd = -1;
	s.agg = kpp_agg__new(&lim);
	ASSERT_NE(NULL, s.agg);
	for (int i = 0; i < 5; i++) {
		pcs[0] = 0x1000 + i;
		ASSERT_EQ(0, alloc(s.agg, 7, 1000, 1, 0x100 + 16 * i, 8, pcs, 1));
	}
	EXPECT_EQ(2u, kpp_agg__stats(s.agg)->over_uid_buckets);
	ASSERT_TRUE(kpp_agg__refusals(kpp_agg__stats(s.agg), line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "uid buckets 2")) TH_LOG("%s", line);

	ASSERT_NE(NULL, mkdtemp(dir));
	ASSERT_EQ(0, chmod(dir, 0755));
	setenv("KPPROF_RUN_DIR", dir, 1);
	kpp_collector_stats__publish(&s.pub, &s);
	f = open_memstream(&out, &outlen);
	ASSERT_NE(NULL, f);
	kpp_collector_stats__print(f);
	fclose(f);
	EXPECT_NE(NULL, strstr(out, "over_uid_buckets")) TH_LOG("%s", out);
	snprintf(line, sizeof(line), "pid %d;", (int)getpid());
	EXPECT_NE(NULL, strstr(out, line)) TH_LOG("%s", out);
	free(out);
	kpp_collector_stats__close(&s.pub);

	/* A run directory that is a symlink is not used. */
	snprintf(link, sizeof(link), "%s.lnk", dir);
	ASSERT_EQ(0, symlink(dir, link));
	setenv("KPPROF_RUN_DIR", link, 1);
	memset(&s.pub, 0, sizeof(s.pub));
	kpp_collector_stats__publish(&s.pub, &s);
	EXPECT_TRUE(s.pub.disabled);
	snprintf(line, sizeof(line), "%s/collector", dir);
	EXPECT_NE(0, access(line, F_OK));
	unlink(link);
	rmdir(dir);
	unsetenv("KPPROF_RUN_DIR");
	kpp_agg__free(s.agg);
}

/*
 * The exited FIFO is global (64 by default): one uid running short
 * producers (any shell loop once `kpprof enable` preloads the shim) pushed
 * every other uid's exited processes out within 64 exits, before anyone
 * could scrape them.  A uid keeps at most a quarter of it: beyond, its own
 * oldest goes, counted.
 */
TEST(one_uids_exits_keep_the_others_exited)
{
	struct kpp_agg *a = kpp_agg__new(NULL);
	uint64_t pcs[2] = { 0x1000, 0x2000 };

	ASSERT_NE(NULL, a);
	for (uint32_t pid = 500; pid < 505; pid++) {
		ASSERT_EQ(0, comm(a, pid, 1001, 1, KPPROF_COMM_START, "job", 1));
		ASSERT_EQ(0, alloc(a, pid, 1001, 1, 0x100000, 64, pcs, 2));
		ASSERT_EQ(0, comm(a, pid, 1001, 1, KPPROF_COMM_EXIT, "job", 1));
	}
	for (uint32_t pid = 10000; pid < 10200; pid++) {
		ASSERT_EQ(0, comm(a, pid, 1000, 1, KPPROF_COMM_START, "churn", 1));
		ASSERT_EQ(0, comm(a, pid, 1000, 1, KPPROF_COMM_EXIT, "churn", 1));
	}
	for (uint32_t pid = 500; pid < 505; pid++) {
		EXPECT_NE(NULL, kpp_agg__proc(a, pid)) TH_LOG("uid 1001's exited %u dropped", pid);
	}
	EXPECT_EQ(64.0 * 5, heap_col(a, 500, 1) + heap_col(a, 501, 1) + heap_col(a, 502, 1) +
			    heap_col(a, 503, 1) + heap_col(a, 504, 1));
	/* The churn's own newest stay; its drops are counted. */
	EXPECT_NE(NULL, kpp_agg__proc(a, 10199));
	EXPECT_LE(200u - 64, kpp_agg__stats(a)->procs_dropped);
	kpp_agg__free(a);
}

TEST_HARNESS_MAIN
