// SPDX-License-Identifier: GPL-2.0
/*
 * preempt_test: a producer is never preempted while its entry is BUSY, so
 * a descheduled producer cannot stop the consumer and, once the ring
 * fills, every other producer.
 *
 * On CPU 1 a SCHED_IDLE producer writes records without pause beside a
 * busy task (SCHED_OTHER) that spins, bumping a counter, and sleeps 200 us
 * at a time: each time it wakes it preempts the idle producer at once,
 * wherever it is.  On CPU 0 the consumer watches the entry at cons_pos.
 * When it finds it BUSY it reads the busy task's counter, and keeps doing
 * so until the entry commits; if the entry belongs to the idle producer
 * and the counter moved while it was BUSY, the busy task ran on CPU 1
 * while the idle producer held the entry, that is, the producer was
 * preempted inside its reserve -> commit window.  Host load cannot fake
 * this (a descheduled vCPU stops both tasks), so the verdict is exact: no
 * such entry may be seen.  A producer on CPU 0 also writes meanwhile; the
 * longest time an entry stayed BUSY is logged.
 *
 * On a kernel with PREEMPT_DYNAMIC the test switches to full preemption
 * through debugfs (sched/preempt) for its duration, where kernel code is
 * preemptible; PREEMPT_RT always is.  When it can do neither, the window
 * cannot be preempted and the test has nothing to check: it reports a skip.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"
#include "preempt_mode.h"

CONSUMER_FIXTURE(ring)

#define RUN_NS		(5 * 1000 * 1000 * 1000ULL)
#define SPIN_NS		(1000 * 1000ULL)
#define MARGIN		100	/* counter steps that prove the busy task ran */

struct shared {
	struct consumer_env *e;
	volatile int stop;
	volatile __u64 hog;	/* the busy task's progress */
	volatile pid_t idle_tid;
	__u64 idle_written, other_written;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *hog(void *arg)
{
	struct shared *sh = arg;

	pin(1);
	while (!sh->stop) {
		__u64 end = now_ns() + SPIN_NS;

		while (now_ns() < end)
			__atomic_fetch_add(&sh->hog, 1, __ATOMIC_RELAXED);
		usleep(200);
	}
	return NULL;
}

static void *idle_producer(void *arg)
{
	struct shared *sh = arg;
	struct sched_param sp = { .sched_priority = 0 };
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 seq = 0;

	pin(1);
	sched_setscheduler(0, SCHED_IDLE, &sp);
	sh->idle_tid = syscall(SYS_gettid);
	while (buf && !sh->stop)
		if (!dev__write(sh->e->pfd, buf, rec_build__alloc(buf, 64, seq++)))
			sh->idle_written++;
	free(buf);
	return NULL;
}

static void *other_producer(void *arg)
{
	struct shared *sh = arg;
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 seq = 0;

	pin(0);
	while (buf && !sh->stop) {
		if (!dev__write(sh->e->pfd, buf, rec_build__alloc(buf, 8, seq++)))
			sh->other_written++;
		usleep(500);
	}
	free(buf);
	return NULL;
}

/* PREEMPT_RT kernels are always fully preemptible (and have no sched/preempt). */
static int preempt_rt(void)
{
	struct utsname u;

	return !uname(&u) && strstr(u.version, "PREEMPT_RT");
}

TEST_F_TIMEOUT(ring, busy_entry_never_spans_a_preemption, 120)
{
	struct shared sh = { .e = &self->e };
	pthread_t th[3];
	__u64 end, preempted = 0, busy_seen = 0, longest_ns = 0, entries = 0;
	char old[32] = "";
	int err, i;

	err = preempt_mode__set("full", old, sizeof(old));
	if (err && !preempt_rt()) {
		/* Voluntary preemption: the window cannot be preempted, nothing to test. */
		SKIP(return, "preemption: cannot switch to full (%s) and not PREEMPT_RT",
		     strerror(-err));
	}
	if (err)
		TH_LOG("preemption: PREEMPT_RT, always full");
	else
		TH_LOG("preemption: full for the test (was %s)", old);
	ASSERT_EQ(0, pthread_create(&th[0], NULL, hog, &sh));
	ASSERT_EQ(0, pthread_create(&th[1], NULL, idle_producer, &sh));
	ASSERT_EQ(0, pthread_create(&th[2], NULL, other_producer, &sh));
	pin(0);
	end = now_ns() + RUN_NS;
	while (now_ns() < end) {
		__u64 cons = ring_reader__cons(&self->e.rr), h0, hlast, t0;
		int n;
		const struct kpprof_ring_hdr *hdr;
		const struct kpprof_record *rec;
		__u32 len;

		if (cons == ring_reader__prod(&self->e.rr))
			continue;
		hdr = (const void *)(self->e.rr.data + (cons & self->e.rr.mask));
		if (__atomic_load_n(&hdr->len, __ATOMIC_ACQUIRE) & KPPROF_RING_BUSY) {
			busy_seen++;
			t0 = now_ns();
			h0 = hlast = sh.hog;
			for (;;) {
				__u64 h = sh.hog;

				if (!(__atomic_load_n(&hdr->len, __ATOMIC_ACQUIRE) &
				      KPPROF_RING_BUSY))
					break;
				hlast = h;
			}
			if (now_ns() - t0 > longest_ns)
				longest_ns = now_ns() - t0;
			ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &rec, &len));
			if ((pid_t)rec->tid == sh.idle_tid && hlast - h0 >= MARGIN) {
				if (!preempted)
					TH_LOG("entry at %llu BUSY while the busy task ran %llu steps, %llu us",
					       (unsigned long long)cons,
					       (unsigned long long)(hlast - h0),
					       (unsigned long long)(now_ns() - t0) / 1000);
				preempted++;
			}
		}
		n = ring_reader__peek(&self->e.rr, &rec, &len);
		ASSERT_LE(0, n);
		if (n == 1) {
			ring_reader__consume(&self->e.rr);
			entries++;
		}
	}
	sh.stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	if (!err && old[0])
		preempt_mode__set(old, NULL, 0);
	TH_LOG("%llu entries read, %llu found BUSY, longest BUSY %llu us; idle producer wrote %llu, other %llu",
	       (unsigned long long)entries, (unsigned long long)busy_seen,
	       (unsigned long long)longest_ns / 1000, (unsigned long long)sh.idle_written,
	       (unsigned long long)sh.other_written);
	EXPECT_EQ(0, preempted) TH_LOG("entries held BUSY across a preemption");
	EXPECT_LT(0, sh.idle_written);
	EXPECT_LT(0, sh.other_written);
	ring_reader__drain(&self->e.rr);
}

TEST_HARNESS_MAIN
