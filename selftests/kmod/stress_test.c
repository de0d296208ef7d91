// SPDX-License-Identifier: GPL-2.0
/*
 * stress_test: many producers, one consumer.  Threads of this process and
 * forked processes, pinned to every CPU, write alloc records whose every
 * word is derived from (writer, seq): the writer id in rate, seq in bytes
 * and addr, and pcs[i] = rec_build__pc(writer << 32 | seq, i), with the
 * depth varying per record.  Meanwhile the consumer sleeps in poll() and
 * drains.  Required: every accepted record is read exactly once and
 * intact, each writer's records arrive in its own order (strictly
 * increasing seq: no duplicate), the only missing ones are the drops the
 * writer itself counted, entries that wrap the ring end read intact, poll
 * woke the consumer, and the module's stats agree with all of it.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

#define NR_THREADS	2
#define NR_PROCS	2
#define NR_WRITERS	(NR_THREADS + NR_PROCS)
#define PER_WRITER	3000
#define MAX_DEPTH	KPPROF_STACK_DEPTH_MAX
#define DEADLINE_NS	(60 * 1000000000ULL)

struct writer_result {
	__u64 ok, dropped, other_err;
	__u32 tid;
	int done;
};

struct shared {
	struct writer_result w[NR_WRITERS];
};

static __u64 rec_seed(unsigned int id, __u64 seq)
{
	return (__u64)id << 32 | seq;
}

/* the shallowest stack written: 1, or deeper to fill the ring faster */
static unsigned int min_depth = 1;

static unsigned int rec_depth(unsigned int id, __u64 seq)
{
	return min_depth + (unsigned int)((seq * 7 + id * 3) % (MAX_DEPTH - min_depth + 1));
}

static void writer_run(struct shared *sh, unsigned int id)
{
	struct writer_result *res = &sh->w[id];
	unsigned char buf[KPP_REC_BUF_MAX];
	struct kpprof_rec_alloc *a = (void *)buf;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	__u64 seq;
	int fd;

	CPU_ZERO(&set);
	CPU_SET(id % ncpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	__atomic_store_n(&res->tid, (__u32)gettid(), __ATOMIC_RELEASE);
	fd = dev__open();
	for (seq = 0; seq < PER_WRITER; seq++) {
		size_t len = rec_build__alloc(buf, rec_depth(id, seq), rec_seed(id, seq));
		int err;

		a->addr = ((__u64)(id + 1) << 40) | seq << 4 | 0x10;
		a->bytes = seq;
		a->rate = id + 1;
		err = fd < 0 ? fd : dev__write(fd, buf, len);
		if (err == 0)
			res->ok++;
		else if (err == -ENOBUFS)
			res->dropped++;
		else
			res->other_err++;
	}
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&res->done, 1, __ATOMIC_RELEASE);
}

struct thread_arg {
	struct shared *sh;
	unsigned int id;
};

static void *writer_thread(void *p)
{
	struct thread_arg *ta = p;

	writer_run(ta->sh, ta->id);
	return NULL;
}

struct check_state {
	__s64 last_seq[NR_WRITERS];
	__u64 received[NR_WRITERS];
	__u32 tid[NR_WRITERS];
	__u64 wrapped, corrupt, foreign;
};

/* check_record - the whole record recomputed from its writer and seq */
static int check_record(struct check_state *cs, const struct kpprof_record *r,
			__u32 len)
{
	const struct kpprof_rec_alloc *a = (const void *)r;
	unsigned int id, i, depth;
	__u64 seq;

	if (r->kind != KPPROF_REC_ALLOC || a->rate < 1 || a->rate > NR_WRITERS) {
		cs->foreign++;
		return 0;
	}
	id = (unsigned int)a->rate - 1;
	seq = a->bytes;
	depth = rec_depth(id, seq);
	if (seq >= PER_WRITER || r->nr_pcs != depth ||
	    len != sizeof(*a) + 8 * depth || r->size != len ||
	    a->addr != (((__u64)(id + 1) << 40) | seq << 4 | 0x10))
		return -1;
	for (i = 0; i < depth; i++)
		if (a->pcs[i] != rec_build__pc(rec_seed(id, seq), i))
			return -1;
	if ((__s64)seq <= cs->last_seq[id])
		return -2;	/* duplicate or out of order */
	if (cs->received[id] == 0)
		cs->tid[id] = r->tid;
	else if (cs->tid[id] != r->tid)
		return -3;
	cs->last_seq[id] = (__s64)seq;
	cs->received[id]++;
	return 0;
}

FIXTURE_VARIANT(ring) {
	/*
	 * late: the consumer reads nothing until every writer is done, and
	 * records are deep enough that the ring must overflow: drops are
	 * certain and each writer's gaps must be exactly its drops.
	 */
	int late;
	unsigned int min_depth;
};

FIXTURE_VARIANT_ADD(ring, concurrent_consumer) { .late = 0, .min_depth = 1 };
FIXTURE_VARIANT_ADD(ring, late_consumer_overflow) { .late = 1, .min_depth = 64 };

TEST_F_TIMEOUT(ring, producers_threads_and_processes, 120)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct thread_arg ta[NR_THREADS];
	pthread_t th[NR_THREADS];
	pid_t pids[NR_PROCS];
	struct check_state cs = { 0 };
	struct kpprof_stats st0, st1;
	__u64 polls = 0, pollins = 0, total_ok = 0, total_drop = 0, deadline, start;
	struct pollfd pfd = { .fd = self->e.cfd, .events = POLLIN };
	unsigned int i;
	int all_done = 0;

	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	min_depth = variant->min_depth;
	for (i = 0; i < NR_WRITERS; i++)
		cs.last_seq[i] = -1;
	/*
	 * Start 32 KiB before the end of the ring, so the run (megabytes)
	 * surely crosses it while producers race.
	 */
	while ((ring_reader__prod(&self->e.rr) & self->e.rr.mask) < self->e.rr.ring_size - 32768) {
		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf,
					rec_build__alloc(self->e.buf, KPPROF_STACK_DEPTH_MAX, 1)));
		ASSERT_EQ(1, ring_reader__drain(&self->e.rr));
	}
	start = ring_reader__prod(&self->e.rr);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));

	for (i = 0; i < NR_PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			/* if the test dies on an ASSERT, its writers die too */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			writer_run(sh, NR_THREADS + i);
			_exit(0);
		}
	}
	for (i = 0; i < NR_THREADS; i++) {
		ta[i].sh = sh;
		ta[i].id = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, writer_thread, &ta[i]));
	}

	deadline = now_ns() + DEADLINE_NS;
	for (;;) {
		const struct kpprof_record *r;
		__u32 len;
		int ret, err;

		if (!all_done) {
			all_done = 1;
			for (i = 0; i < NR_WRITERS; i++)
				all_done &= __atomic_load_n(&sh->w[i].done, __ATOMIC_ACQUIRE);
		}
		if (variant->late && !all_done) {
			usleep(20000);
			continue;
		}
		ret = poll(&pfd, 1, 50);
		ASSERT_LE(0, ret);
		polls++;
		if (ret == 1 && (pfd.revents & POLLIN))
			pollins++;
		while ((ret = ring_reader__peek(&self->e.rr, &r, &len)) == 1) {
			if (self->e.rr.entry_wrapped)
				cs.wrapped++;
			err = check_record(&cs, r, len);
			ASSERT_EQ(0, err) TH_LOG("record at %llu: check %d",
						 (unsigned long long)ring_reader__cons(&self->e.rr),
						 err);
			ring_reader__consume(&self->e.rr);
		}
		ASSERT_LE(0, ret) TH_LOG("ring format broken");
		if (all_done && ring_reader__prod(&self->e.rr) == ring_reader__cons(&self->e.rr))
			break;
		ASSERT_GT(deadline, now_ns()) TH_LOG("consumer deadline passed");
	}

	for (i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NR_PROCS; i++) {
		int status;

		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}

	for (i = 0; i < NR_WRITERS; i++) {
		struct writer_result *w = &sh->w[i];

		TH_LOG("writer %u (%s, tid %u): %llu ok, %llu dropped, %llu read",
		       i, i < NR_THREADS ? "thread" : "process", w->tid,
		       (unsigned long long)w->ok, (unsigned long long)w->dropped,
		       (unsigned long long)cs.received[i]);
		EXPECT_EQ(0, w->other_err);
		EXPECT_EQ(PER_WRITER, w->ok + w->dropped);
		/* read exactly once each: no loss beyond the counted drops */
		EXPECT_EQ(w->ok, cs.received[i]);
		if (cs.received[i])
			EXPECT_EQ(w->tid, cs.tid[i]);
		total_ok += w->ok;
		total_drop += w->dropped;
	}
	EXPECT_EQ(0, cs.foreign);
	TH_LOG("%llu wrapped entries, %llu polls, %llu with POLLIN",
	       (unsigned long long)cs.wrapped, (unsigned long long)polls,
	       (unsigned long long)pollins);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(total_ok, st1.accepted - st0.accepted);
	/* one uid writes it all: its share can drop it before the ring fills */
	EXPECT_EQ(total_drop, st1.dropped[KPPROF_DROP_RING_FULL] -
		  st0.dropped[KPPROF_DROP_RING_FULL] +
		  st1.dropped[KPPROF_DROP_SHARE] - st0.dropped[KPPROF_DROP_SHARE]);
	EXPECT_EQ(0, st1.rejected - st0.rejected);
	/*
	 * The run crossed the end of the ring (entries that straddled it, if
	 * any, were checked word by word above; ring_full_test has the
	 * deterministic wrap case).
	 */
	EXPECT_LT(start | self->e.rr.mask, ring_reader__prod(&self->e.rr));
	EXPECT_LT(0, pollins);
	if (variant->late) {
		EXPECT_LT(0, total_drop);
	} else {
		/* the consumer slept in poll() and producers woke it */
		EXPECT_LT(0, st1.wakeups - st0.wakeups);
	}
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
