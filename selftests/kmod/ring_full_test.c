// SPDX-License-Identifier: GPL-2.0
/*
 * ring_full_test: the ring fills while nobody drains it.  Producers never
 * block: every write returns at once, with ENOBUFS once the ring is full
 * or the writer's uid holds its share of it (min(producer_share, free /
 * (other uids holding records + 1))), and each drop is counted in
 * dropped[KPPROF_DROP_RING_FULL] or dropped[KPPROF_DROP_SHARE].  After
 * draining, the records read are exactly the records accepted, and
 * writes succeed again.  Also: an entry that wraps the end of the ring
 * reads intact through the second mapping of the data pages, and a
 * garbage cons_pos written by the consumer hurts nobody but itself.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

/* Far longer than any non-blocking write, even under TCG. */
#define WRITE_BOUND_NS	(200 * 1000 * 1000ULL)

/* one entry of a 128-frame alloc record: header + 1088 bytes */
#define BIG_ENTRY (sizeof(struct kpprof_ring_hdr) + sizeof(struct kpprof_rec_alloc) + \
		   8 * KPPROF_STACK_DEPTH_MAX)

/*
 * fill_share - in a child running as @uid, write big records until the
 * first drop and a few more; report the count accepted (exit status is
 * not wide enough: through @out), and fail if one is accepted after a drop
 * or a write blocks.  Returns the child's exit status.
 */
struct fill_result {
	__u64 accepted;
	__u64 dropped;
	__u64 accepted_after_drop;
	__u64 slowest_ns;
	int other_err;
};

static int fill_share(int pfd, uid_t uid, __u64 limit, struct fill_result *out)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 i, seq = uid * 1000000ULL;

	if (!buf || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		return 100;
	for (i = 0; i < limit; i++) {
		size_t len = rec_build__alloc(buf, KPPROF_STACK_DEPTH_MAX, seq++);
		__u64 t0 = now_ns(), dt;
		int err = dev__write(pfd, buf, len);

		dt = now_ns() - t0;
		if (dt > out->slowest_ns)
			out->slowest_ns = dt;
		if (err == 0) {
			out->accepted++;
			if (out->dropped)
				out->accepted_after_drop++;
		} else if (err == -ENOBUFS) {
			out->dropped++;
		} else {
			out->other_err = err;
		}
	}
	return 0;
}

/*
 * Fill the ring.  A uid alone takes exactly its share (producer_share, in
 * info.producer_share bytes); a second uid beside it at most half of what
 * is then free (min(share, free / (others + 1))); so no set of uids fills
 * the ring, and the kernel's own cycle records, which belong to no uid,
 * fill what is left, until one is dropped as RING_FULL.  Then a small
 * record of a third uid drops as RING_FULL too.
 */
TEST_F_TIMEOUT(ring, fill_drop_drain, 300)
{
	const __u64 share = self->e.info.producer_share;
	const __u64 size = self->e.info.ring_size;
	const __u64 cycle_entry = sizeof(struct kpprof_ring_hdr) + sizeof(struct kpprof_rec_cycle);
	struct kpprof_stats st0, st1;
	__u64 accepted = 0, dropped = 0, slowest = 0, cycles = 0, i;
	__u64 per_share = share / BIG_ENTRY;
	struct fill_result *res;
	unsigned int k;
	long read;

	ASSERT_LT(0, share);
	ASSERT_GE(size, share);
	res = mmap(NULL, 2 * sizeof(*res), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, res);
	memset(res, 0, 2 * sizeof(*res));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (k = 0; k < 2; k++) {
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0)
			_exit(fill_share(self->e.pfd, 3000 + k, per_share + 16, &res[k]));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		EXPECT_EQ(0, res[k].other_err);
		/* once dropped, nothing fits until the consumer moves */
		EXPECT_EQ(0, res[k].accepted_after_drop) TH_LOG("uid %u", 3000 + k);
		EXPECT_LT(0, res[k].dropped) TH_LOG("uid %u", 3000 + k);
		accepted += res[k].accepted;
		dropped += res[k].dropped;
		if (res[k].slowest_ns > slowest)
			slowest = res[k].slowest_ns;
	}
	/* alone: a whole share; beside it: at most half of what was free */
	EXPECT_EQ(per_share, res[0].accepted);
	EXPECT_LT(0, res[1].accepted);
	EXPECT_GE((size - res[0].accepted * BIG_ENTRY) / 2, res[1].accepted * BIG_ENTRY);
	TH_LOG("ring %llu bytes, share %llu: uids took %llu and %llu records, %llu dropped, slowest write %llu us",
	       (unsigned long long)size, (unsigned long long)share,
	       (unsigned long long)res[0].accepted, (unsigned long long)res[1].accepted,
	       (unsigned long long)dropped, (unsigned long long)slowest / 1000);
	EXPECT_GT(WRITE_BOUND_NS, slowest);
	EXPECT_EQ(accepted * BIG_ENTRY,
		  ring_reader__prod(&self->e.rr) - ring_reader__cons(&self->e.rr));
	munmap(res, 2 * sizeof(*res));

	/* cycle records, charged to nobody, fill the rest */
	for (i = 0; i < size / cycle_entry + 16; i++) {
		__u64 cycle, before = ring_reader__prod(&self->e.rr);

		ASSERT_EQ(0, dev__advance(self->e.cfd, &cycle));
		if (ring_reader__prod(&self->e.rr) == before)
			break;
		cycles++;
	}
	EXPECT_GT(cycle_entry, size - (ring_reader__prod(&self->e.rr) -
				       ring_reader__cons(&self->e.rr)));
	accepted += cycles;
	/* and a small record of another uid finds the ring itself full */
	EXPECT_EQ(-ENOBUFS, dev__write(self->e.pfd, self->e.buf,
				       rec_build__free(self->e.buf, 0x1000, 16)));

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	/* the cycle record that did not fit, and the small record */
	EXPECT_EQ(2, st1.dropped[KPPROF_DROP_RING_FULL] - st0.dropped[KPPROF_DROP_RING_FULL]);
	EXPECT_EQ(dropped, st1.dropped[KPPROF_DROP_SHARE] - st0.dropped[KPPROF_DROP_SHARE]);
	EXPECT_EQ(accepted, st1.accepted - st0.accepted);
	EXPECT_EQ(0, st1.rejected - st0.rejected);
	EXPECT_EQ(st1.prod_pos, ring_reader__prod(&self->e.rr));

	read = ring_reader__drain(&self->e.rr);
	EXPECT_EQ((long)accepted, read);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st1.prod_pos, st1.cons_pos);
	EXPECT_EQ(read, (long)(st1.accepted - st0.accepted));

	/* room again */
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__alloc(self->e.buf, 4, 1)));
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
}

/* Drops do not depend on O_NONBLOCK: a blocking fd never waits either. */
TEST_F_TIMEOUT(ring, full_ring_nonblocking_without_o_nonblock, 90)
{
	__u64 i, t0, worst = 0;
	int err = 0;

	for (i = 0; i < self->e.info.ring_size / 64 + 10 && err != -ENOBUFS; i++)
		err = dev__write(self->e.pfd, self->e.buf,
				 rec_build__free(self->e.buf, 0x2000, 16));
	ASSERT_EQ(-ENOBUFS, err);
	for (i = 0; i < 100; i++) {
		t0 = now_ns();
		EXPECT_EQ(-ENOBUFS, dev__write(self->e.pfd, self->e.buf,
					       rec_build__alloc(self->e.buf, 64, i)));
		if (now_ns() - t0 > worst)
			worst = now_ns() - t0;
	}
	EXPECT_GT(WRITE_BOUND_NS, worst);
	EXPECT_LT(0, ring_reader__drain(&self->e.rr));
}

/*
 * Entries of BIG_ENTRY bytes do not divide the ring: drain after each, and
 * within one lap an entry crosses the end.  It must read intact.
 */
TEST_F_TIMEOUT(ring, wrapped_entry_reads_intact, 90)
{
	__u64 laps_target = ring_reader__prod(&self->e.rr) + 3 * self->e.info.ring_size;
	__u64 seq = 0, wrapped = 0;

	while (ring_reader__prod(&self->e.rr) < laps_target) {
		const struct kpprof_record *got;
		const struct kpprof_rec_alloc *a;
		size_t len = rec_build__alloc(self->e.buf, KPPROF_STACK_DEPTH_MAX, seq);
		__u32 glen, k;

		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len));
		ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
		ASSERT_EQ(len, glen);
		a = (const void *)got;
		if (self->e.rr.entry_wrapped) {
			wrapped++;
			for (k = 0; k < KPPROF_STACK_DEPTH_MAX; k++)
				if (a->pcs[k] != rec_build__pc(seq, k))
					break;
			EXPECT_EQ(KPPROF_STACK_DEPTH_MAX, k)
				TH_LOG("wrapped entry at %llu: pc %u wrong",
				       (unsigned long long)ring_reader__cons(&self->e.rr), k);
			EXPECT_EQ(0, memcmp(self->e.buf + 40, (const char *)got + 40, len - 40));
		}
		ring_reader__consume(&self->e.rr);
		seq++;
	}
	/* 3 laps of entries that do not divide the ring: at most one lap end
	 * can fall exactly between two entries, so 2 wraps at least */
	EXPECT_LE(2, wrapped);
}

/*
 * cons_pos is the consumer's to write; nonsense there must neither crash
 * the kernel nor let a write escape the ring.  Then a sane value restores
 * service.  (vm-run fails the run on any oops or warning.)
 */
TEST_F(ring, garbage_cons_pos_is_harmless)
{
	static const __u64 bad[] = { ~0ULL, 1ULL << 63, 12345, 7 };
	unsigned int i, k;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		__u64 prod = ring_reader__prod(&self->e.rr);

		*self->e.rr.cons_pos = bad[i] == 12345 ? prod + 12345 : bad[i];
		for (k = 0; k < 200; k++) {
			int err = dev__write(self->e.pfd, self->e.buf,
					     rec_build__alloc(self->e.buf, 32, k));

			ASSERT_TRUE(err == 0 || err == -ENOBUFS) TH_LOG("errno %d", -err);
		}
		/* every producer position stays sane whatever we wrote */
		EXPECT_LE(prod, ring_reader__prod(&self->e.rr));
		EXPECT_GE(prod + 200 * (8 + 64 + 8 * 32), ring_reader__prod(&self->e.rr));
		*self->e.rr.cons_pos = ring_reader__prod(&self->e.rr);
	}
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__alloc(self->e.buf, 4, 1)));
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
}

/*
 * A consumer asleep in poll() on an empty ring is woken by producers:
 * a child starts writing 300 ms later and stops when the parent is awake
 * (or after half a ring, far more than any wake-up batch may hold back).
 */
TEST_F(ring, poll_sleeps_then_wakes)
{
	struct pollfd pfd = { .fd = self->e.cfd, .events = POLLIN };
	volatile int *woken = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	__u64 t0, slept;
	int status, ret;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, woken);
	*woken = 0;
	/* empty: not readable */
	ASSERT_EQ(0, poll(&pfd, 1, 0));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char buf[KPP_REC_BUF_MAX];
		size_t len = rec_build__alloc(buf, 64, 3), sent = 0;
		int fd = dev__open();

		usleep(300000);
		while (fd >= 0 && !*woken && sent < self->e.info.ring_size / 2) {
			if (dev__write(fd, buf, len))
				_exit(1);
			sent += len + 8;
			if (sent % (64 * (len + 8)) == 0)
				usleep(1000);	/* let the parent run */
		}
		_exit(0);
	}
	t0 = now_ns();
	ret = poll(&pfd, 1, 20000);
	slept = now_ns() - t0;
	*woken = 1;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(1, ret);
	EXPECT_TRUE(pfd.revents & POLLIN);
	TH_LOG("slept %llu ms in poll()", (unsigned long long)slept / 1000000);
	/* it did sleep (the writer waited 300 ms), and did not time out */
	EXPECT_LT(250000000ULL, slept);
	EXPECT_GT(20000000000ULL, slept);
	EXPECT_LT(0, ring_reader__drain(&self->e.rr));
	munmap((void *)woken, 4096);
}

TEST_HARNESS_MAIN
