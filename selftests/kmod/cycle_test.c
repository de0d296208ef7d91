// SPDX-License-Identifier: GPL-2.0
/*
 * cycle_test: the global cycle.  ADVANCE_CYCLE returns cycle + 1 and puts
 * a KPPROF_REC_CYCLE record (reason 1, no identity) in the ring; records
 * after it carry the new cycle, records before it the old one; in ring
 * order cycles never decrease even with producers racing on every CPU
 * (what the collector's "cycle k complete" rule relies on).  The timer
 * advances cycles at cycle_period_ms (reason 0), starts at once when the
 * period drops from an hour, and stops with period 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

static __u64 stats_cycle(int fd)
{
	struct kpprof_stats st;

	return dev__stats(fd, &st) ? ~0ULL : st.cycle;
}

TEST_F(ring, advance_returns_next_and_publishes)
{
	long page = sysconf(_SC_PAGESIZE);
	const struct kpprof_config_page *pg;
	__u64 c0 = stats_cycle(self->e.cfd), c1 = 0, c2 = 0;

	pg = mmap(NULL, page, PROT_READ, MAP_SHARED, self->e.pfd, 0);
	ASSERT_NE(MAP_FAILED, pg);
	ASSERT_EQ(0, dev__advance(self->e.cfd, &c1));
	EXPECT_EQ(c0 + 1, c1);
	EXPECT_EQ(c1, stats_cycle(self->e.cfd));
	EXPECT_EQ(c1, __atomic_load_n(&pg->cycle, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, dev__advance(self->e.cfd, &c2));
	EXPECT_EQ(c1 + 1, c2);
	EXPECT_EQ(c2, __atomic_load_n(&pg->cycle, __ATOMIC_ACQUIRE));
	munmap((void *)pg, page);
	EXPECT_EQ(2, ring_reader__drain(&self->e.rr));
}

TEST_F(ring, cycle_record_between_old_and_new)
{
	const struct kpprof_record *r;
	const struct kpprof_rec_cycle *cy;
	__u64 c0 = stats_cycle(self->e.cfd), c1, t0, t1;
	__u32 len;

	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__alloc(self->e.buf, 3, 1)));
	t0 = now_ns();
	ASSERT_EQ(0, dev__advance(self->e.cfd, &c1));
	t1 = now_ns();
	ASSERT_EQ(c0 + 1, c1);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__alloc(self->e.buf, 3, 2)));

	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &r, &len));
	EXPECT_EQ(KPPROF_REC_ALLOC, r->kind);
	EXPECT_EQ(c0, r->cycle);
	ring_reader__consume(&self->e.rr);

	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &r, &len));
	cy = (const void *)r;
	ASSERT_EQ(KPPROF_REC_CYCLE, r->kind);
	EXPECT_EQ(sizeof(*cy), len);
	EXPECT_EQ(sizeof(*cy), r->size);
	EXPECT_EQ(0, r->nr_pcs);
	EXPECT_EQ(c1, r->cycle);
	EXPECT_EQ(1, cy->reason);
	EXPECT_EQ(0, cy->pad);
	EXPECT_EQ(0, r->tgid);
	EXPECT_EQ(0, r->tid);
	EXPECT_EQ(0, r->uid);
	EXPECT_LE(t0, r->time_ns);
	EXPECT_GE(t1, r->time_ns);
	ring_reader__consume(&self->e.rr);

	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &r, &len));
	EXPECT_EQ(KPPROF_REC_ALLOC, r->kind);
	EXPECT_EQ(c1, r->cycle);
	ring_reader__consume(&self->e.rr);
	EXPECT_EQ(0, ring_reader__drain(&self->e.rr));
}

struct racer {
	volatile int stop;
	int cpu;
	unsigned long written;
};

static void *racer_run(void *p)
{
	struct racer *rc = p;
	unsigned char buf[KPP_REC_BUF_MAX];
	cpu_set_t set;
	int fd = dev__open();

	CPU_ZERO(&set);
	CPU_SET(rc->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	/* capped well below a ring-full, so no cycle record can be dropped */
	while (fd >= 0 && !rc->stop && rc->written < 3000) {
		if (dev__write(fd, buf, rec_build__free(buf, 0x1000 + rc->written * 16, 8)) == 0)
			rc->written++;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * Producers on every CPU race with 30 advances.  In ring order: cycles
 * never decrease, each cycle record is exactly one more than the cycle
 * before it, and nothing after a cycle record is older than it.
 */
TEST_F(ring, cycles_monotonic_in_ring_order)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), i;
	struct racer rc[8] = { 0 };
	pthread_t th[8];
	__u64 c0 = stats_cycle(self->e.cfd), cur, n_cycle = 0, n_rec = 0;
	const struct kpprof_record *r;
	__u32 len;
	int ret;

	if (ncpu > 8)
		ncpu = 8;
	for (i = 0; i < ncpu; i++) {
		rc[i].cpu = (int)i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, racer_run, &rc[i]));
	}
	for (i = 0; i < 30; i++) {
		__u64 c;

		usleep(2000);
		ASSERT_EQ(0, dev__advance(self->e.cfd, &c));
		EXPECT_EQ(c0 + 1 + (__u64)i, c);
	}
	for (i = 0; i < ncpu; i++) {
		rc[i].stop = 1;
		pthread_join(th[i], NULL);
	}

	cur = c0;
	while ((ret = ring_reader__peek(&self->e.rr, &r, &len)) == 1) {
		if (r->kind == KPPROF_REC_CYCLE) {
			EXPECT_EQ(cur + 1, r->cycle);
			cur = r->cycle;
			n_cycle++;
		} else {
			EXPECT_EQ(cur, r->cycle) TH_LOG("record %llu", (unsigned long long)n_rec);
			n_rec++;
		}
		ring_reader__consume(&self->e.rr);
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(30, n_cycle);
	EXPECT_EQ(c0 + 30, cur);
	TH_LOG("%llu records across 30 cycles", (unsigned long long)n_rec);
	EXPECT_LT(0, n_rec);
}

struct cycle_watch {
	__u64 by_timer, by_ioctl, bad_seq;
	__u64 last;		/* the last cycle record's number */
	__u64 stamps[512];	/* time_ns of timer cycle records */
	unsigned int nstamps;
};

/* drain_cycles - consume what the ring holds now, noting every cycle record */
static void drain_cycles(struct consumer_env *e, struct cycle_watch *w)
{
	const struct kpprof_record *r;
	__u32 len;

	while (ring_reader__peek(&e->rr, &r, &len) == 1) {
		if (r->kind == KPPROF_REC_CYCLE) {
			const struct kpprof_rec_cycle *cy = (const void *)r;

			if (w->last && r->cycle != w->last + 1)
				w->bad_seq++;
			w->last = r->cycle;
			if (cy->reason == 0) {
				w->by_timer++;
				if (w->nstamps < 512)
					w->stamps[w->nstamps++] = r->time_ns;
			} else {
				w->by_ioctl++;
			}
		}
		ring_reader__consume(&e->rr);
	}
}

/* watch_cycles - drain for @ms, noting every cycle record */
static void watch_cycles(struct consumer_env *e, unsigned int ms, struct cycle_watch *w)
{
	__u64 end = now_ns() + ms * 1000000ULL;

	memset(w, 0, sizeof(*w));
	while (now_ns() < end) {
		drain_cycles(e, w);
		usleep(5000);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* median_gap_ms - median spacing of the timer's cycle records */
static double median_gap_ms(const struct cycle_watch *w)
{
	__u64 gaps[512];
	unsigned int i;

	if (w->nstamps < 2)
		return -1;
	for (i = 1; i < w->nstamps; i++)
		gaps[i - 1] = w->stamps[i] - w->stamps[i - 1];
	qsort(gaps, w->nstamps - 1, sizeof(gaps[0]), cmp_u64);
	return gaps[(w->nstamps - 1) / 2] / 1e6;
}

/*
 * The guest's own timer latency, measured beside the watch: a thread that
 * sleeps @period_ms at a time.  On a busy host the whole VM waits for a
 * CPU, and every timer of the guest fires late, the module's as much as
 * this thread's; the bound below is relative to what this thread saw.
 */
struct ref_sleeper {
	unsigned int period_ms, n;
	__u64 gaps[512];
	pthread_t tid;
};

static void *ref_sleep(void *arg)
{
	struct ref_sleeper *r = arg;
	struct timespec ts = { .tv_sec = r->period_ms / 1000,
			       .tv_nsec = (r->period_ms % 1000) * 1000000L };
	__u64 t0 = now_ns(), t1;

	while (r->n < 512) {
		nanosleep(&ts, NULL);
		t1 = now_ns();
		r->gaps[r->n++] = t1 - t0;
		t0 = t1;
		if (!__atomic_load_n(&r->period_ms, __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

static double ref_median_ms(struct ref_sleeper *r)
{
	if (!r->n)
		return -1;
	qsort(r->gaps, r->n, sizeof(r->gaps[0]), cmp_u64);
	return r->gaps[(r->n - 1) / 2] / 1e6;
}

/*
 * The timer's period, read from the kernel's own timestamps on its cycle
 * records: the median gap must be within [period / 2, max_factor * P],
 * P the larger of the period and the median time a @period_ms sleep of
 * the guest took during the watch (ref_sleep).  That tolerates a guest
 * descheduled on a loaded host (seen: a 10 ms period's gap 162.8 ms at a
 * host load of 10), yet catches a period taken in the wrong unit when the
 * guest's timers are on time: at 100 ms with factor 3, jiffies at HZ=250
 * (4x) or seconds (1000x); at the 10 ms minimum with factor 5, a minimum
 * clamped upwards.  Counting cycles in a wall-clock window would not.
 */
static void check_period(struct __test_metadata *_metadata, struct consumer_env *e,
			 unsigned int period_ms, unsigned int watch_ms, double max_factor)
{
	struct kpprof_config cfg;
	struct cycle_watch *w = calloc(1, sizeof(*w));
	struct ref_sleeper *ref = calloc(1, sizeof(*ref));
	__u64 c0, c1, live;
	double gap, ref_gap;

	ASSERT_NE(NULL, w);
	ASSERT_NE(NULL, ref);
	dev__test_config(&cfg);
	/* from an hour to @period_ms: the change must take effect now */
	cfg.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MAX;
	ASSERT_EQ(0, dev__set_config(e->cfd, &cfg));
	cfg.cycle_period_ms = period_ms;
	c0 = stats_cycle(e->cfd);
	ASSERT_EQ(0, dev__set_config(e->cfd, &cfg));
	ref->period_ms = period_ms;
	ASSERT_EQ(0, pthread_create(&ref->tid, NULL, ref_sleep, ref));
	watch_cycles(e, watch_ms, w);
	__atomic_store_n(&ref->period_ms, 0, __ATOMIC_RELEASE);
	pthread_join(ref->tid, NULL);
	cfg.cycle_period_ms = 0;
	ASSERT_EQ(0, dev__set_config(e->cfd, &cfg));
	c1 = stats_cycle(e->cfd);
	/*
	 * The timer ran on between the watch's end and its stop (on a loaded
	 * host for several periods): those advances' records are in the ring.
	 * Records seen only now do not count as seen while the timer ran (a
	 * module publishing them only at the config ioctl would pass).
	 */
	live = w->by_timer;
	drain_cycles(e, w);
	gap = median_gap_ms(w);
	ref_gap = ref_median_ms(ref);
	TH_LOG("period %u ms, %u ms watched: %llu cycles, median gap %.1f ms; a %u ms sleep beside it took %.1f ms (median of %u)",
	       period_ms, watch_ms, (unsigned long long)(c1 - c0), gap,
	       period_ms, ref_gap, ref->n);
	EXPECT_LE(3, live);
	EXPECT_EQ(0, w->by_ioctl);
	EXPECT_EQ(0, w->bad_seq);
	/* every advance in the window was the timer's, with its record */
	EXPECT_GE(w->by_timer + 1, c1 - c0);
	EXPECT_LE(period_ms / 2.0, gap);
	EXPECT_GE((ref_gap > period_ms ? ref_gap : period_ms) * max_factor, gap);
	free(w);
	free(ref);
}

TEST_F(ring, timer_advances_at_period)
{
	check_period(_metadata, &self->e, 100, 1000, 3.0);
}

TEST_F(ring, timer_min_period)
{
	check_period(_metadata, &self->e, KPPROF_CYCLE_PERIOD_MS_MIN, 500, 5.0);
}

TEST_F(ring, timer_off_stops_cycles)
{
	struct kpprof_config cfg;
	struct cycle_watch *w = calloc(1, sizeof(*w));
	__u64 c0;

	ASSERT_NE(NULL, w);
	dev__test_config(&cfg);
	cfg.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MIN;
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	usleep(100000);
	cfg.cycle_period_ms = 0;
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	ring_reader__drain(&self->e.rr);
	c0 = stats_cycle(self->e.cfd);
	watch_cycles(&self->e, 400, w);
	EXPECT_EQ(c0, stats_cycle(self->e.cfd));
	EXPECT_EQ(0, w->by_timer);
	free(w);
}

TEST_HARNESS_MAIN
