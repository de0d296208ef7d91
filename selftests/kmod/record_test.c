// SPDX-License-Identifier: GPL-2.0
/*
 * record_test: a producer's record comes back out of the ring byte for
 * byte, with the kernel-owned fields stamped by the kernel: tgid, tid,
 * real uid, cpu, CLOCK_MONOTONIC time and cycle (and ppid/comm for COMM).
 * A record claiming any kernel-owned value is EINVAL and leaves prod_pos
 * alone; a producer running under another uid is stamped with its real
 * uid, whatever its effective uid.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/uio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

/* Bytes of the record the producer owns: all but the kernel-owned ones. */
static int same_user_bytes(const void *want, const void *got, size_t len)
{
	const unsigned char *a = want, *b = got;
	int comm = ((const struct kpprof_record *)want)->kind == KPPROF_REC_COMM;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i >= offsetof(struct kpprof_record, tgid) &&
		    i < sizeof(struct kpprof_record))
			continue;
		if (comm && i >= offsetof(struct kpprof_rec_comm, ppid))
			continue;
		if (a[i] != b[i])
			return 0;
	}
	return 1;
}

static __u64 current_cycle(int fd)
{
	struct kpprof_stats st;

	return dev__stats(fd, &st) ? ~0ULL : st.cycle;
}

/* Write each kind once and read it back. */
TEST_F(ring, round_trip_every_kind)
{
	unsigned int n, ncpu = (unsigned int)sysconf(_SC_NPROCESSORS_CONF);
	char comm[17] = { 0 };

	ASSERT_EQ(0, prctl(PR_SET_NAME, "kpp-roundtrip"));
	ASSERT_EQ(0, prctl(PR_GET_NAME, comm));
	for (n = 0; n < 7; n++) {
		const struct kpprof_record *got;
		size_t len = rec_build__any(self->e.buf, n, 1000 + n);
		__u16 kind = ((struct kpprof_record *)self->e.buf)->kind;
		__u64 cycle = current_cycle(self->e.cfd), t0, t1;
		__u32 glen;

		t0 = now_ns();
		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len)) TH_LOG("kind %u", kind);
		t1 = now_ns();
		ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen)) TH_LOG("kind %u", kind);
		EXPECT_EQ(len, glen);
		EXPECT_EQ(kind, got->kind);
		EXPECT_EQ(len, got->size);
		EXPECT_TRUE(same_user_bytes(self->e.buf, got, len)) TH_LOG("kind %u payload", kind);
		EXPECT_EQ((__u32)getpid(), got->tgid);
		EXPECT_EQ((__u32)gettid(), got->tid);
		EXPECT_EQ((__u32)getuid(), got->uid);
		EXPECT_GT(ncpu, got->cpu);
		EXPECT_LE(t0, got->time_ns);
		EXPECT_GE(t1, got->time_ns);
		EXPECT_EQ(cycle, got->cycle);
		if (kind == KPPROF_REC_COMM) {
			const struct kpprof_rec_comm *c = (const void *)got;

			EXPECT_EQ((__u32)getppid(), c->ppid);
			EXPECT_STREQ(comm, c->comm);
			/* no stale kernel bytes after the name */
			for (size_t k = strnlen(c->comm, sizeof(c->comm)); k < sizeof(c->comm); k++) {
				EXPECT_EQ(0, c->comm[k]) TH_LOG("comm[%zu]", k);
			}
		}
		ring_reader__consume(&self->e.rr);
	}
	EXPECT_EQ(0, ring_reader__drain(&self->e.rr));
}

/* The deepest stack and the longest path are accepted and come back intact. */
TEST_F(ring, round_trip_limits)
{
	const struct kpprof_record *got;
	char *path = malloc(KPPROF_PATH_MAX);
	__u32 glen;
	size_t len;

	ASSERT_NE(NULL, path);
	memset(path, 'p', KPPROF_PATH_MAX - 1);
	path[0] = '/';
	path[KPPROF_PATH_MAX - 1] = '\0';
	len = rec_build__mmap(self->e.buf, path, KPPROF_BUILD_ID_MAX);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
	EXPECT_EQ(len, glen);
	EXPECT_TRUE(same_user_bytes(self->e.buf, got, len));
	ring_reader__consume(&self->e.rr);

	len = rec_build__alloc(self->e.buf, KPPROF_STACK_DEPTH_MAX, 77);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
	EXPECT_EQ(len, glen);
	EXPECT_TRUE(same_user_bytes(self->e.buf, got, len));
	ring_reader__consume(&self->e.rr);
	free(path);
}

static void *thread_write(void *arg)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	int fd = *(int *)arg;
	size_t len = rec_build__alloc(buf, 3, 5);

	if (dev__write(fd, buf, len))
		return NULL;
	return (void *)(uintptr_t)gettid();
}

/* A record written by a second thread carries that thread's tid. */
TEST_F(ring, thread_gets_own_tid)
{
	const struct kpprof_record *got;
	pthread_t th;
	void *ret;
	__u32 glen;

	ASSERT_EQ(0, pthread_create(&th, NULL, thread_write, &self->e.pfd));
	ASSERT_EQ(0, pthread_join(th, &ret));
	ASSERT_NE(NULL, ret);
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
	EXPECT_EQ((__u32)(uintptr_t)ret, got->tid);
	EXPECT_EQ((__u32)getpid(), got->tgid);
	EXPECT_NE(got->tgid, got->tid);
	ring_reader__consume(&self->e.rr);
}

/*
 * Each kernel-owned field, set non-zero by the producer, is refused with
 * EINVAL and nothing enters the ring.
 */
TEST_F(ring, claimed_identity_einval)
{
	static const struct {
		const char *name;
		size_t off;
		size_t size;
	} owned[] = {
		{ "tgid", offsetof(struct kpprof_record, tgid), 4 },
		{ "tid", offsetof(struct kpprof_record, tid), 4 },
		{ "uid", offsetof(struct kpprof_record, uid), 4 },
		{ "cpu", offsetof(struct kpprof_record, cpu), 4 },
		{ "time_ns", offsetof(struct kpprof_record, time_ns), 8 },
		{ "cycle", offsetof(struct kpprof_record, cycle), 8 },
		/* the high byte alone: a check of only the low bits misses it */
		{ "time_ns high byte", offsetof(struct kpprof_record, time_ns) + 7, 1 },
		{ "comm.ppid", offsetof(struct kpprof_rec_comm, ppid), 4 },
		{ "comm.comm[0]", offsetof(struct kpprof_rec_comm, comm), 1 },
		{ "comm.comm[15]", offsetof(struct kpprof_rec_comm, comm) + 15, 1 },
	};
	struct kpprof_stats st0, st1;
	unsigned int i;

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
		__u64 prod = ring_reader__prod(&self->e.rr);
		size_t len = rec_build__comm(self->e.buf, KPPROF_COMM_START);
		/* a plausible claim: another process's pid */
		__u64 claim = (__u64)getpid() + 1;

		memcpy(self->e.buf + owned[i].off, &claim, owned[i].size);
		if (owned[i].size == 1)
			self->e.buf[owned[i].off] = 1;
		EXPECT_EQ(-EINVAL, dev__write(self->e.pfd, self->e.buf, len))
			TH_LOG("claimed %s", owned[i].name);
		EXPECT_EQ(prod, ring_reader__prod(&self->e.rr))
			TH_LOG("claimed %s: prod_pos moved", owned[i].name);
	}
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.rejected + i, st1.rejected);
	EXPECT_EQ(st0.accepted, st1.accepted);
	EXPECT_EQ(0, ring_reader__drain(&self->e.rr));
}

/*
 * A forked child switches to uid 4321 (real) and writes one record; with
 * @keep_root_euid it keeps euid 0, which must not leak into the stamp.
 */
static void other_uid_writes(struct __test_metadata *_metadata,
			     FIXTURE_DATA(ring) *self, uid_t euid)
{
	const struct kpprof_record *got;
	int status;
	__u32 glen;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char buf[KPP_REC_BUF_MAX];
		size_t len = rec_build__alloc(buf, 2, 9);
		int fd;

		if (setresgid(4321, 4321, 4321) || setresuid(4321, euid, euid))
			_exit(10);
		fd = dev__open();
		if (fd < 0)
			_exit(11);
		_exit(dev__write(fd, buf, len) ? 12 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d failed",
						 WEXITSTATUS(status));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
	EXPECT_EQ(4321, got->uid);
	EXPECT_EQ((__u32)pid, got->tgid);
	EXPECT_EQ((__u32)pid, got->tid);
	ring_reader__consume(&self->e.rr);
}

TEST_F(ring, other_uid_stamped)
{
	other_uid_writes(_metadata, self, 4321);
}

TEST_F(ring, real_uid_not_effective)
{
	other_uid_writes(_metadata, self, 0);
}

/* The cpu stamp follows the writer: pin to each CPU in turn. */
TEST_F(ring, cpu_stamp_follows_affinity)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long c;

	for (c = 0; c < ncpu && c < 4; c++) {
		const struct kpprof_record *got;
		cpu_set_t set;
		__u32 glen;
		size_t len;

		CPU_ZERO(&set);
		CPU_SET(c, &set);
		ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
		len = rec_build__free(self->e.buf, 0x1230, 8);
		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len));
		ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
		EXPECT_EQ((__u32)c, got->cpu);
		ring_reader__consume(&self->e.rr);
	}
}

/*
 * GET_STATS agrees with the ring: positions, accepted_bytes counting
 * header and padding, consumer_attached, reserved words zero.
 */
TEST_F(ring, stats_match_ring)
{
	struct kpprof_stats st0, st1;
	size_t len1 = rec_build__alloc(self->e.buf, 7, 1);
	size_t len2;

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	EXPECT_EQ(1, st0.consumer_attached);
	/* the default cap on producer rings is never reached here */
	EXPECT_EQ(0, st0.pring_refused);
	EXPECT_EQ(ring_reader__prod(&self->e.rr), st0.prod_pos);
	EXPECT_EQ(ring_reader__cons(&self->e.rr), st0.cons_pos);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len1));
	len2 = rec_build__mmap(self->e.buf, "/a", 0);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, len2));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.accepted + 2, st1.accepted);
	EXPECT_EQ(st0.accepted_bytes + 2 * sizeof(struct kpprof_ring_hdr) + len1 + len2,
		  st1.accepted_bytes);
	EXPECT_EQ(st0.prod_pos + 2 * sizeof(struct kpprof_ring_hdr) + len1 + len2,
		  st1.prod_pos);
	EXPECT_EQ(2, ring_reader__drain(&self->e.rr));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st1.prod_pos, st1.cons_pos);
	/* another file sees that a consumer is attached, too */
	ASSERT_EQ(0, dev__stats(self->e.pfd, &st1));
	EXPECT_EQ(1, st1.consumer_attached);
}

/* Stamps come from the initial pid namespace, whatever the writer's. */
static int ns_child_write(int flags, int sync_rd)
{
	unsigned char buf[KPP_REC_BUF_MAX];
	char c;
	int fd;

	if (unshare(flags))
		return 10;
	if (read(sync_rd, &c, 1) != 1)	/* the parent is ready */
		return 11;
	if (flags & CLONE_NEWPID) {
		/* the next child is pid 1 of the new namespace */
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 13;
		if (pid == 0) {
			fd = dev__open();
			_exit(fd < 0 || getpid() != 1 ||
			      dev__write(fd, buf, rec_build__alloc(buf, 2, 5)) ? 14 : 0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return 15;
		return WEXITSTATUS(status);
	}
	fd = dev__open();
	if (fd < 0)
		return 16;
	return dev__write(fd, buf, rec_build__alloc(buf, 2, 5)) ? 17 : 0;
}

static void ns_case(struct __test_metadata *_metadata, FIXTURE_DATA(ring) *self,
		    int flags)
{
	const struct kpprof_record *got;
	int sync[2], status;
	__u32 glen;
	pid_t pid;

	ASSERT_EQ(0, pipe(sync));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(sync[1]);
		_exit(ns_child_write(flags, sync[0]));
	}
	close(sync[0]);
	usleep(100000);
	ASSERT_EQ(1, write(sync[1], "x", 1));
	close(sync[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("child step %d", WEXITSTATUS(status));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &got, &glen));
	if (flags & CLONE_NEWPID) {
		/* pid 1 inside; a real pid outside, of a grandchild of ours */
		EXPECT_NE(1, got->tgid);
		EXPECT_LT((__u32)pid, got->tgid);
		EXPECT_EQ(got->tgid, got->tid);
	}
	ring_reader__consume(&self->e.rr);
}

TEST_F(ring, pid_namespace_stamps_initial_pid)
{
	ns_case(_metadata, self, CLONE_NEWPID);
}

/*
 * The user-namespace twin of this test (uid 0 inside mapped to 4321, the
 * stamp must say 4321) cannot run under scripts/vm-run: the guest command
 * runs in a chroot, where unshare(CLONE_NEWUSER) fails with EPERM.
 */

/* writev: each segment is its own write, so a split record is refused. */
TEST_F(ring, writev_split_record_einval)
{
	size_t len = rec_build__alloc(self->e.buf, 8, 1);
	struct iovec iov[2] = {
		{ self->e.buf, 40 }, { self->e.buf + 40, len - 40 },
	};
	__u64 prod = ring_reader__prod(&self->e.rr);

	EXPECT_EQ(-1, writev(self->e.pfd, iov, 2));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(prod, ring_reader__prod(&self->e.rr));
}

/*
 * A record of a profile whose KPPROF_CFG_* flag is off does not enter the
 * ring and is counted as dropped[KPPROF_DROP_DISABLED], neither accepted
 * nor rejected.  (What write(2) returns then is not in the header; the
 * test only logs it.)  Profiles still on are unaffected.
 */
TEST_F(ring, disabled_profile_dropped)
{
	struct kpprof_config cfg;
	struct kpprof_stats st0, st1;
	__u64 prod;
	int err;

	dev__test_config(&cfg);
	cfg.flags = KPPROF_CFG_BLOCK | KPPROF_CFG_MUTEX;
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	prod = ring_reader__prod(&self->e.rr);
	err = dev__write(self->e.pfd, self->e.buf, rec_build__alloc(self->e.buf, 3, 1));
	TH_LOG("write of a disabled-profile record returns %d (%s)", err,
	       err ? strerror(-err) : "success");
	EXPECT_NE(-EINVAL, err);
	err = dev__write(self->e.pfd, self->e.buf, rec_build__free(self->e.buf, 0x1000, 8));
	EXPECT_NE(-EINVAL, err);
	EXPECT_EQ(prod, ring_reader__prod(&self->e.rr));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.dropped[KPPROF_DROP_DISABLED] + 2, st1.dropped[KPPROF_DROP_DISABLED]);
	EXPECT_EQ(st0.accepted, st1.accepted);
	EXPECT_EQ(st0.rejected, st1.rejected);

	/* the block profile is still on */
	EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
				rec_build__contention(self->e.buf, KPPROF_REC_BLOCK, 2, 1)));
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
}

TEST_HARNESS_MAIN
