// SPDX-License-Identifier: GPL-2.0
/*
 * pring_lost_test: a producer writes its ring's lost[] counters, and the
 * drain reports what moved: a producer may claim losses of its own, even
 * absurd ones, but never hide another's.  A counter written backwards, or
 * a claim that would wrap the sum, must not subtract from the losses
 * another producer counted, in GET_STATS (pring_lost) before the drain
 * or after it.  And a claim is believed only up to one record per
 * nanosecond since the ring was made: one producer claiming 2^64 - 1 must
 * not saturate the host-wide pring_lost, after which nobody's losses
 * would show; the claim it cut is counted once (pring_invalid).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "pring.h"

CONSUMER_FIXTURE(pl)

/*
 * A producer that, for each value it hears on its pipe, sets its
 * lost[KPPROF_REC_ALLOC] to it and acknowledges.
 */
struct prod {
	pid_t pid;
	int up[2], down[2];
};

static int prod__start(struct prod *pr)
{
	struct pring p;
	__u64 v;
	int fd;

	if (pipe(pr->up) || pipe(pr->down))
		return -1;
	pr->pid = fork();
	if (pr->pid)
		return pr->pid < 0 ? -1 : 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(pr->down[1]);
	fd = dev__open();
	if (fd < 0 || pring__map(&p, fd))
		_exit(80);
	while (read(pr->down[0], &v, sizeof(v)) == sizeof(v)) {
		__atomic_store_n(&p.hdr->lost[KPPROF_REC_ALLOC], v, __ATOMIC_RELAXED);
		if (write(pr->up[1], "r", 1) != 1)
			_exit(81);
	}
	_exit(0);
}

static int prod__set(struct prod *pr, __u64 v)
{
	char ch;

	if (write(pr->down[1], &v, sizeof(v)) != sizeof(v))
		return -1;
	return read(pr->up[0], &ch, 1) == 1 ? 0 : -1;
}

/* the later producers hold the earlier ones' pipes: no EOF, a kill */
static int prod__stop(struct prod *pr)
{
	int status;

	close(pr->down[1]);
	kill(pr->pid, SIGKILL);
	if (waitpid(pr->pid, &status, 0) != pr->pid)
		return -1;
	return WIFSIGNALED(status) ? 0 : WEXITSTATUS(status);
}

static __u64 pring_lost(struct __test_metadata *_metadata, int cfd)
{
	struct kpprof_stats st;

	EXPECT_EQ(0, dev__ioctl(cfd, KPPROF_IOC_GET_STATS, &st));
	return st.pring_lost;
}

static __u64 pring_invalid(struct __test_metadata *_metadata, int cfd)
{
	struct kpprof_stats st;

	EXPECT_EQ(0, dev__ioctl(cfd, KPPROF_IOC_GET_STATS, &st));
	return st.pring_invalid;
}

/* the kernel's ktime_get_ns() */
static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void drain(struct __test_metadata *_metadata, struct consumer_env *e)
{
	ASSERT_EQ(0, dev__ioctl(e->cfd, KPPROF_IOC_DRAIN, NULL));
	ring_reader__drain(&e->rr);
}

/* pring_lost now (before a drain: pending), then after one */
static void check(struct __test_metadata *_metadata, struct consumer_env *e,
		  __u64 want, const char *what)
{
	__u64 pending = pring_lost(_metadata, e->cfd), drained;

	ASSERT_EQ(0, dev__ioctl(e->cfd, KPPROF_IOC_DRAIN, NULL));
	ring_reader__drain(&e->rr);
	drained = pring_lost(_metadata, e->cfd);
	TH_LOG("%s: pring_lost %llu before the drain, %llu after; at least %llu expected",
	       what, (unsigned long long)pending, (unsigned long long)drained,
	       (unsigned long long)want);
	/* unsigned, no subtraction: a sum that wrapped reads as less */
	EXPECT_LE(want, pending);
	EXPECT_LE(want, drained);
}

TEST_F(pl, a_producer_cannot_hide_anothers_losses)
{
	struct prod honest, b, c;
	__u64 base;

	ASSERT_EQ(0, dev__ioctl(self->e.cfd, KPPROF_IOC_DRAIN, NULL));
	ring_reader__drain(&self->e.rr);
	base = pring_lost(_metadata, self->e.cfd);
	ASSERT_LT(base, (__u64)-1000) TH_LOG("pring_lost %llu already wrapped?",
					     (unsigned long long)base);
	ASSERT_EQ(0, prod__start(&honest));
	ASSERT_EQ(0, prod__start(&b));
	ASSERT_EQ(0, prod__start(&c));
	ASSERT_EQ(0, prod__set(&honest, 10));
	ASSERT_EQ(0, prod__set(&b, 20));
	check(_metadata, &self->e, base + 30, "10 and 20 lost");
	/* b writes its counter backwards: it took back 15 */
	ASSERT_EQ(0, prod__set(&b, 5));
	check(_metadata, &self->e, base + 30, "b's counter set back to 5");
	/* c claims 2^64 - 1 losses: the sum wraps */
	ASSERT_EQ(0, prod__set(&c, (__u64)-1));
	check(_metadata, &self->e, base + 30, "c claims 2^64 - 1");
	EXPECT_EQ(0, prod__stop(&honest));
	EXPECT_EQ(0, prod__stop(&b));
	EXPECT_EQ(0, prod__stop(&c));
}

TEST_F(pl, one_producers_claim_is_bounded)
{
	__u64 base, inv0, t0, t1, after_claim, after_honest;
	struct prod honest, c;

	drain(_metadata, &self->e);
	base = pring_lost(_metadata, self->e.cfd);
	inv0 = pring_invalid(_metadata, self->e.cfd);
	ASSERT_LT(base, (__u64)-1000) TH_LOG("pring_lost %llu saturated already",
					     (unsigned long long)base);
	ASSERT_EQ(0, prod__start(&honest));
	t0 = mono_ns();
	ASSERT_EQ(0, prod__start(&c));
	ASSERT_EQ(0, prod__set(&honest, 10));
	ASSERT_EQ(0, prod__set(&c, (__u64)-1));
	drain(_metadata, &self->e);
	after_claim = pring_lost(_metadata, self->e.cfd);
	t1 = mono_ns();
	TH_LOG("c claimed 2^64 - 1 %llu ns after its ring was made: pring_lost %llu -> %llu",
	       (unsigned long long)(t1 - t0), (unsigned long long)base,
	       (unsigned long long)after_claim);
	EXPECT_LE(base + 10, after_claim);
	/* believed: at most one per nanosecond of c's ring's life */
	EXPECT_GE(base + 10 + (t1 - t0), after_claim);
	/* the cut claim is counted, once */
	EXPECT_EQ(1, pring_invalid(_metadata, self->e.cfd) - inv0);
	/* and the honest producer's next 7 losses still show, exactly */
	ASSERT_EQ(0, prod__set(&honest, 17));
	drain(_metadata, &self->e);
	after_honest = pring_lost(_metadata, self->e.cfd);
	EXPECT_EQ(after_claim + 7, after_honest);
	EXPECT_EQ(1, pring_invalid(_metadata, self->e.cfd) - inv0);
	EXPECT_EQ(0, prod__stop(&honest));
	EXPECT_EQ(0, prod__stop(&c));
}

TEST_HARNESS_MAIN
