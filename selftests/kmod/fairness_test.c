// SPDX-License-Identifier: GPL-2.0
/*
 * fairness_test: one user flooding the ring costs only that user records.
 * Each uid may hold info.producer_share bytes of unread records; beyond
 * that its writes fail with ENOBUFS and count in dropped[KPPROF_DROP_SHARE],
 * while other uids still find room.  The share comes back as the consumer
 * reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

#define FLOOD_UID	65534
#define NORMAL_UID	1000
#define NORMAL_RECORDS	300

struct writer {
	__u64 ok, dropped, other;
	int other_err;
};

struct flood_shared {
	volatile int flooding;	/* the flooder has been dropped already */
	volatile int stop;
	struct writer flooder, normal;
};

static int become(uid_t uid)
{
	return setresgid(uid, uid, uid) || setresuid(uid, uid, uid);
}

static void count(struct writer *w, int err)
{
	if (!err) {
		w->ok++;
	} else if (err == -ENOBUFS) {
		w->dropped++;
	} else {
		w->other++;
		w->other_err = err;
	}
}

static int flooder(int pfd, struct flood_shared *sh)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 seq = 0;

	if (!buf || become(FLOOD_UID))
		return 100;
	while (!sh->stop) {
		count(&sh->flooder, dev__write(pfd, buf, rec_build__alloc(buf, 8, seq++)));
		if (sh->flooder.dropped >= 100)
			sh->flooding = 1;
	}
	return 0;
}

static int normal(int pfd, struct flood_shared *sh)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	int i;

	if (!buf || become(NORMAL_UID))
		return 100;
	while (!sh->flooding && !sh->stop)
		sched_yield();
	for (i = 0; i < NORMAL_RECORDS; i++) {
		count(&sh->normal, dev__write(pfd, buf, rec_build__alloc(buf, 8, 1000000 + i)));
		sched_yield();
	}
	return 0;
}

TEST_F_TIMEOUT(ring, flood_costs_only_the_flooder, 120)
{
	struct flood_shared *sh;
	struct kpprof_stats st0, st1;
	const struct kpprof_record *rec;
	__u64 got_flood = 0, got_normal = 0, other = 0;
	pid_t fpid, npid;
	int status;
	__u32 len;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));

	/* the consumer reads nothing while they write: the worst case */
	fpid = fork();
	ASSERT_LE(0, fpid);
	if (fpid == 0)
		_exit(flooder(self->e.pfd, sh));
	npid = fork();
	ASSERT_LE(0, npid);
	if (npid == 0)
		_exit(normal(self->e.pfd, sh));
	ASSERT_EQ(npid, waitpid(npid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sh->stop = 1;
	ASSERT_EQ(fpid, waitpid(fpid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));

	TH_LOG("flooder: %llu accepted, %llu dropped; normal: %llu accepted, %llu dropped",
	       (unsigned long long)sh->flooder.ok, (unsigned long long)sh->flooder.dropped,
	       (unsigned long long)sh->normal.ok, (unsigned long long)sh->normal.dropped);
	EXPECT_EQ(0, sh->flooder.other) TH_LOG("flooder errno %d", sh->flooder.other_err);
	EXPECT_EQ(0, sh->normal.other) TH_LOG("normal errno %d", sh->normal.other_err);
	EXPECT_EQ(1, sh->flooding);
	/* the normal writer lost nothing */
	EXPECT_EQ(NORMAL_RECORDS, sh->normal.ok);
	EXPECT_EQ(0, sh->normal.dropped);
	/* the flooder's drops, all of them, are counted as over its share */
	EXPECT_EQ(sh->flooder.dropped,
		  st1.dropped[KPPROF_DROP_SHARE] - st0.dropped[KPPROF_DROP_SHARE]);
	EXPECT_EQ(0, st1.dropped[KPPROF_DROP_RING_FULL] - st0.dropped[KPPROF_DROP_RING_FULL]);
	/* and it holds no more than its share of the ring */
	EXPECT_GE(self->e.info.producer_share,
		  sh->flooder.ok * (sizeof(struct kpprof_ring_hdr) +
				    rec_build__alloc(self->e.buf, 8, 0)));

	while (ring_reader__peek(&self->e.rr, &rec, &len) == 1) {
		if (rec->uid == FLOOD_UID)
			got_flood++;
		else if (rec->uid == NORMAL_UID)
			got_normal++;
		else
			other++;
		ring_reader__consume(&self->e.rr);
	}
	EXPECT_EQ(NORMAL_RECORDS, got_normal);
	EXPECT_EQ(sh->flooder.ok, got_flood);
	EXPECT_EQ(0, other);
	munmap(sh, sizeof(*sh));
}

/* A uid over its share writes again once the consumer has read. */
TEST_F_TIMEOUT(ring, share_comes_back_when_read, 120)
{
	unsigned int round;

	for (round = 0; round < 3; round++) {
		__u64 ok = 0, dropped = 0, seq = 0;
		long read;

		while (dropped < 10) {
			int err = dev__write(self->e.pfd, self->e.buf,
					     rec_build__alloc(self->e.buf, 16, seq++));

			if (err == 0)
				ok++;
			else
				ASSERT_EQ(-ENOBUFS, err);
			dropped += err != 0;
			ASSERT_GT(4 * self->e.info.ring_size / 64, seq) TH_LOG("never dropped");
		}
		read = ring_reader__drain(&self->e.rr);
		EXPECT_EQ((long)ok, read) TH_LOG("round %u", round);
		/* exactly one share's worth, in every round */
		EXPECT_EQ(self->e.info.producer_share /
			  (sizeof(struct kpprof_ring_hdr) + rec_build__alloc(self->e.buf, 16, 0)), ok)
			TH_LOG("round %u", round);
		EXPECT_EQ(0, dev__write(self->e.pfd, self->e.buf,
					rec_build__alloc(self->e.buf, 16, 1)));
		EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
	}
}

/*
 * Many uids: each of @n flooders (uids @first_uid ..) writes 8-frame records,
 * one after the other, until it has been dropped 5 times; the consumer reads
 * nothing (the worst case).  ok[i] gets flooder i's accepted records.
 */
struct many_shared {
	__u64 ok[80];
	__u64 dropped[80];
	__u64 other[80];
};

/* flood_until_dropped - writer @i writes until 5 records are refused. */
static void flood_until_dropped(int pfd, unsigned char *buf, struct many_shared *sh,
				unsigned int i)
{
	__u64 seq = 0;

	while (sh->dropped[i] < 5 && sh->ok[i] < (1 << 20)) {
		int err = dev__write(pfd, buf, rec_build__alloc(buf, 8, seq++));

		if (!err)
			sh->ok[i]++;
		else if (err == -ENOBUFS)
			sh->dropped[i]++;
		else
			sh->other[i]++;
	}
}

static void flood_in_turn(struct __test_metadata *_metadata, int pfd,
			  struct many_shared *sh, unsigned int n, uid_t first_uid)
{
	unsigned int i;
	int status;

	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);

			if (!buf || become(first_uid + i))
				_exit(100);
			flood_until_dropped(pfd, buf, sh, i);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		EXPECT_EQ(0, sh->other[i]) TH_LOG("flooder %u", i);
	}
}

/* normal_writes - @n FREE records as @uid; how many went in */
static int normal_writes(int pfd, uid_t uid, unsigned int n)
{
	int status, ok = 0;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
		unsigned int i;

		if (!buf || become(uid))
			_exit(255);
		for (i = 0; i < n; i++)
			ok += !dev__write(pfd, buf, rec_build__free(buf, 0x1000 * (i + 1), 8));
		_exit(ok);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* read_all - drain the ring, counting each uid's records in @per_uid[uid - base] */
static __u64 read_all(struct ring_reader *rr, __u64 *per_uid, uid_t base, unsigned int n)
{
	const struct kpprof_record *rec;
	__u64 total = 0;
	__u32 len;

	while (ring_reader__peek(rr, &rec, &len) == 1) {
		if (rec->uid >= base && rec->uid < base + n)
			per_uid[rec->uid - base]++;
		total++;
		ring_reader__consume(rr);
	}
	return total;
}

/*
 * Two uids flooding (each up to the 50 % share on its own) leave room for a
 * third: the dynamic cap (min(share, free / (other active uids + 1))) keeps
 * the second flooder to a third of what the first left free.
 */
TEST_F_TIMEOUT(ring, two_flooders_leave_room, 180)
{
	struct many_shared *sh;
	struct kpprof_stats st0, st1;
	__u64 got[2] = { 0, 0 };
	int normal;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	flood_in_turn(_metadata, self->e.pfd, sh, 2, 2001);
	normal = normal_writes(self->e.pfd, NORMAL_UID, 100);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	TH_LOG("flooders: %llu and %llu accepted; normal uid: %d of 100",
	       (unsigned long long)sh->ok[0], (unsigned long long)sh->ok[1], normal);
	EXPECT_EQ(100, normal);
	/* every flooder drop is a share drop: the ring itself never filled */
	EXPECT_EQ(sh->dropped[0] + sh->dropped[1],
		  st1.dropped[KPPROF_DROP_SHARE] - st0.dropped[KPPROF_DROP_SHARE]);
	EXPECT_EQ(0, st1.dropped[KPPROF_DROP_RING_FULL] - st0.dropped[KPPROF_DROP_RING_FULL]);
	EXPECT_EQ(sh->ok[0] + sh->ok[1] + 100, read_all(&self->e.rr, got, 2001, 2));
	EXPECT_EQ(sh->ok[0], got[0]);
	EXPECT_EQ(sh->ok[1], got[1]);
	munmap(sh, sizeof(*sh));
}

/*
 * 65 flooding uids, more than the kernel tracks one by one (64 buckets): a
 * normal uid that already has records in the ring still gets its next ones
 * in, and the uids beyond the tracked ones are accounted together (one
 * overflow bucket, one share), never unaccounted.
 */
TEST_F_TIMEOUT(ring, sixty_five_flooders, 600)
{
	struct many_shared *sh;
	__u64 got[65], overflow, total = 0;
	unsigned int i;
	int normal;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	memset(got, 0, sizeof(got));
	/* a running service: it has a record unread when the flood starts */
	ASSERT_EQ(1, normal_writes(self->e.pfd, NORMAL_UID, 1));
	flood_in_turn(_metadata, self->e.pfd, sh, 65, 3000);
	normal = normal_writes(self->e.pfd, NORMAL_UID, 10);
	for (i = 0; i < 65; i++)
		total += sh->ok[i];
	/* with the normal uid's bucket, 63 flooders are tracked, 2 share one */
	overflow = sh->ok[63] + sh->ok[64];
	TH_LOG("flooders: first %llu, 63rd %llu, 64th+65th %llu, all %llu records; normal uid: %d of 10",
	       (unsigned long long)sh->ok[0], (unsigned long long)sh->ok[62],
	       (unsigned long long)overflow, (unsigned long long)total, normal);
	EXPECT_EQ(10, normal);
	/* the untracked uids hold no more than a tracked one could */
	EXPECT_GE(sh->ok[0], overflow);
	EXPECT_GE(self->e.info.producer_share,
		  overflow * (sizeof(struct kpprof_ring_hdr) + rec_build__alloc(self->e.buf, 8, 0)));
	EXPECT_EQ(total + 11, read_all(&self->e.rr, got, 3000, 65));
	for (i = 0; i < 65; i++)
		EXPECT_EQ(sh->ok[i], got[i]) TH_LOG("flooder %u", i);
	munmap(sh, sizeof(*sh));
}

/*
 * One local user with a user namespace (newuidmap, rootless containers)
 * has as many uids as its subuid range: here 70, more than the kernel
 * tracks one by one.  They are still one user: the kernel charges them to
 * the namespace's owner, so they hold one share between them, and a normal
 * uid with nothing in the ring (a service whose records were all read)
 * still gets every record in.  The records keep the writers' own uids.
 */
#define NS_OWNER_UID	1500
#define NS_FIRST_KUID	100000
#define NS_UIDS		70

/* ns_map - give @pid's user namespace uids and gids 0.. NS_UIDS - 1 */
static int ns_map(pid_t pid)
{
	static const char *const files[] = { "uid_map", "gid_map" };
	char path[64], map[64];
	unsigned int i;
	int fd, len, ok;

	len = snprintf(map, sizeof(map), "0 %d %d\n", NS_FIRST_KUID, NS_UIDS);
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", pid, files[i]);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			return -1;
		ok = write(fd, map, len) == len;
		close(fd);
		if (!ok)
			return -1;
	}
	return 0;
}

/*
 * leave_chroot - as root, back to the mount namespace's root: scripts/vm-run
 * runs the tests in a chroot, where no one may make a user namespace
 * (create_user_ns()), root included.  The device is already open.
 */
static int leave_chroot(void)
{
	char dir[] = "/tmp/kpprof-fairness-XXXXXX";
	int i;

	if (!mkdtemp(dir) || chroot(dir))
		return -1;
	rmdir(dir);
	for (i = 0; i < 64; i++)
		if (chdir(".."))
			return -1;
	return chroot(".");
}

/* ns_flood - in the namespace: each uid floods in turn until dropped 5 times */
static int ns_flood(int pfd, struct many_shared *sh)
{
	unsigned int i;
	int status;

	for (i = 0; i < NS_UIDS; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return 101;
		if (pid == 0) {
			unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);

			if (!buf || become(i))
				_exit(102);
			flood_until_dropped(pfd, buf, sh, i);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			return 103;
	}
	return 0;
}

TEST_F_TIMEOUT(ring, user_namespace_is_one_user, 600)
{
	struct many_shared *sh;
	__u64 got[NS_UIDS], total = 0, held, other = 0, bad_charge = 0;
	int go[2], ready[2], status, normal;
	const struct kpprof_record *rec;
	__u32 len;
	unsigned int i;
	char c = 0;
	pid_t pid;

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	memset(sh, 0, sizeof(*sh));
	memset(got, 0, sizeof(got));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(ready));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		close(ready[0]);
		close(go[1]);
		/* an unprivileged user makes its namespace */
		if (leave_chroot() || become(NS_OWNER_UID))
			_exit(100);
		if (unshare(CLONE_NEWUSER))
			_exit(errno == EPERM || errno == EINVAL || errno == ENOSPC ? 4 : 105);
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1 || c != 'g')
			_exit(106);
		_exit(ns_flood(self->e.pfd, sh));
	}
	close(ready[1]);
	close(go[0]);
	/* as newuidmap would, from the user's subuid range */
	if (read(ready[0], &c, 1) == 1) {
		c = ns_map(pid) ? 'x' : 'g';
		ASSERT_EQ(1, write(go[1], &c, 1));
	}
	close(ready[0]);
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	TH_LOG("namespace's creator: exit %d", WEXITSTATUS(status));
	if (WEXITSTATUS(status) == 4)
		SKIP(return, "no unprivileged user namespaces here");
	ASSERT_EQ('g', c) TH_LOG("cannot write the namespace's uid_map");
	ASSERT_EQ(0, WEXITSTATUS(status));

	normal = normal_writes(self->e.pfd, NORMAL_UID, 10);
	for (i = 0; i < NS_UIDS; i++) {
		total += sh->ok[i];
		EXPECT_EQ(0, sh->other[i]) TH_LOG("uid %u", i);
	}
	held = total * (sizeof(struct kpprof_ring_hdr) + rec_build__alloc(self->e.buf, 8, 0));
	TH_LOG("namespace uids: first %llu, 65th %llu, all %llu records (%llu bytes, share %llu); normal uid: %d of 10",
	       (unsigned long long)sh->ok[0], (unsigned long long)sh->ok[64],
	       (unsigned long long)total, (unsigned long long)held,
	       (unsigned long long)self->e.info.producer_share, normal);
	EXPECT_EQ(10, normal);
	/* one user, one share */
	EXPECT_GE(self->e.info.producer_share, held);
	/* every uid was dropped (it was over the share), none unaccounted */
	for (i = 0; i < NS_UIDS; i++)
		EXPECT_EQ(5, sh->dropped[i]) TH_LOG("uid %u", i);
	/*
	 * The records say who wrote them, as the consumer's namespace sees
	 * it; their headers, whom they were charged to.
	 */
	while (ring_reader__peek(&self->e.rr, &rec, &len) == 1) {
		const struct kpprof_ring_hdr *hdr = (const void *)rec - sizeof(*hdr);

		if (rec->uid >= NS_FIRST_KUID && rec->uid < NS_FIRST_KUID + NS_UIDS) {
			got[rec->uid - NS_FIRST_KUID]++;
			bad_charge += hdr->charge_uid != NS_OWNER_UID;
		} else {
			other++;
			bad_charge += rec->uid != NORMAL_UID || hdr->charge_uid != NORMAL_UID;
		}
		ring_reader__consume(&self->e.rr);
	}
	EXPECT_EQ(10, other);
	EXPECT_EQ(0, bad_charge);
	for (i = 0; i < NS_UIDS; i++)
		EXPECT_EQ(sh->ok[i], got[i]) TH_LOG("uid %u", i);
	munmap(sh, sizeof(*sh));
}

TEST_HARNESS_MAIN
