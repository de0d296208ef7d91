// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup_test: a consumer that poll()s with no timeout, with the cycle
 * timer off, is never left asleep past a record that must wake it.
 *
 * A producer writes a few records then ends the cycle (ADVANCE_CYCLE: a
 * cycle record always wakes the consumer), over and over, while a second
 * producer writes one record per round at the same time.  Both stay far
 * below the wake-up watermark, so that only the commits that must wake the
 * consumer can.  After each round the producer waits for
 * the consumer to read everything up to the cycle record; a watchdog fails
 * the round if the consumer is still asleep in poll() after 10 s (then
 * wakes it with another cycle record and ends the run).  The
 * race it looks for: the consumer checks the ring just before a commit and
 * goes to sleep just after the producer looked for sleepers.  To land the
 * commit there, the producer waits until the consumer is about to enter
 * poll(), then spins a varying few microseconds before committing.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

#define ROUND_TIMEOUT_NS	(10 * 1000 * 1000 * 1000ULL)
#define ROUNDS			300
/* a bound on the run, far above ROUNDS' few seconds even under TCG */
#define RUN_MAX_NS		(90 * 1000 * 1000 * 1000ULL)

struct shared {
	struct consumer_env *e;
	volatile int stop;
	volatile int in_poll;
	volatile int consumer_done;
	volatile __u64 round;
	volatile __u64 cycle_seen;	/* highest cycle record read */
	__u64 polls, records;
	long err;
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void *consumer(void *arg)
{
	struct shared *sh = arg;
	struct pollfd pfd = { .fd = sh->e->cfd, .events = POLLIN };
	const struct kpprof_record *rec;
	__u32 len;
	int n;

	pin(0);
	while (!sh->stop) {
		while ((n = ring_reader__peek(&sh->e->rr, &rec, &len)) == 1) {
			if (rec->kind == KPPROF_REC_CYCLE)
				__atomic_store_n(&sh->cycle_seen, rec->cycle, __ATOMIC_RELEASE);
			sh->records++;
			ring_reader__consume(&sh->e->rr);
		}
		if (n < 0) {
			sh->err = n;
			break;
		}
		sh->in_poll = 1;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR) {
			sh->err = -errno;
			break;
		}
		sh->in_poll = 0;
		sh->polls++;
	}
	sh->consumer_done = 1;
	return NULL;
}

static void *noise(void *arg)
{
	struct shared *sh = arg;
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 seq = 0;

	__u64 done = 0;

	pin(1);
	while (buf && !sh->stop) {
		if (sh->round == done) {
			sched_yield();
			continue;
		}
		done = sh->round;
		dev__write(sh->e->pfd, buf, rec_build__free(buf, 0x1000 + 16 * (seq++ & 0xffff), 8));
	}
	free(buf);
	return NULL;
}

TEST_F_TIMEOUT(ring, no_lost_wakeup, 300)
{
	struct shared sh = { .e = &self->e };
	pthread_t cth, nth;
	__u64 rounds = 0, lost = 0, end, c;
	int fd = dev__open();

	ASSERT_LE(0, fd);
	/* the fixture's config: cycle timer off */
	ASSERT_EQ(0, pthread_create(&cth, NULL, consumer, &sh));
	ASSERT_EQ(0, pthread_create(&nth, NULL, noise, &sh));
	pin(1);
	end = now_ns() + RUN_MAX_NS;
	while (rounds < ROUNDS && now_ns() < end && !sh.err) {
		unsigned int i, n = rounds % 3;
		__u64 deadline;

		for (i = 0; i < n; i++)
			dev__write(self->e.pfd, self->e.buf,
				   rec_build__alloc(self->e.buf, 4, rounds));
		/* sweep the commit across the consumer's way into poll() */
		deadline = now_ns() + 100 * 1000 * 1000ULL;
		while (!sh.in_poll && now_ns() < deadline)
			;
		deadline = now_ns() + (rounds * 7919) % 40000;
		while (now_ns() < deadline)
			;
		ASSERT_EQ(0, dev__advance(fd, &c));
		deadline = now_ns() + ROUND_TIMEOUT_NS;
		while (__atomic_load_n(&sh.cycle_seen, __ATOMIC_ACQUIRE) < c) {
			if (now_ns() > deadline) {
				TH_LOG("round %llu: consumer %s past cycle record %llu",
				       (unsigned long long)rounds,
				       sh.in_poll ? "asleep in poll()" : "stuck",
				       (unsigned long long)c);
				lost++;
				break;
			}
			sched_yield();
		}
		if (lost)
			break;
		rounds++;
		sh.round = rounds;
	}
	sh.stop = 1;
	pthread_join(nth, NULL);
	/*
	 * Wake-ups for the consumer to see stop, until it has.  After a lost
	 * round it may still be on its way into poll(), past the first one:
	 * a module that loses wake-ups loses that one too.  Under TCG's
	 * thread=single a window that spins on 'pause' lasts a vCPU time
	 * slice per pause while this thread spins, so the consumer could
	 * still be in it 10 s later.
	 */
	end = now_ns() + ROUND_TIMEOUT_NS;
	do {
		__u64 wait = now_ns() + 10 * 1000 * 1000ULL;

		ASSERT_EQ(0, dev__advance(fd, &c));
		while (!sh.consumer_done && now_ns() < wait)
			usleep(1000);
	} while (!sh.consumer_done && now_ns() < end);
	if (!sh.consumer_done) {
		TH_LOG("the consumer never saw stop: cancelled");
		lost++;
		pthread_cancel(cth);
	}
	pthread_join(cth, NULL);
	TH_LOG("%llu rounds, %llu polls, %llu records",
	       (unsigned long long)rounds, (unsigned long long)sh.polls,
	       (unsigned long long)sh.records);
	EXPECT_EQ(0, sh.err);
	EXPECT_EQ(0, lost);
	if (!lost)
		EXPECT_EQ(ROUNDS, rounds);
	close(fd);
}

TEST_HARNESS_MAIN
