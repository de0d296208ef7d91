// SPDX-License-Identifier: GPL-2.0
/*
 * pring_test: the producer ring (ABI 3).  A record costs its producer no
 * syscall; the kernel drains each process's ring into the consumer's, so a
 * flood or a scribble costs only the producer that makes it:
 *   - a producer that scribbles on its ring (a malformed record, a head it
 *     cannot believe) loses only its own records, counted in band
 *     (KPPROF_REC_LOST), while a producer beside it loses nothing;
 *   - two flooding uids, and 65 flooding uids, beside a normal producer
 *     that writes while the consumer reads nothing: it loses nothing;
 *   - N producers on every CPU with a consumer that reads and advances
 *     cycles: delivered + counted losses == written, per producer, in
 *     order, and no record of cycle c after the CYCLE record ending c;
 *   - a fork child has no mapping of its parent's ring (VM_DONTCOPY, and
 *     MADV_DOFORK cannot bring it back); another process's mmap of the
 *     same file's ring is EBUSY; an O_RDONLY file cannot map one;
 *   - a process's last records are drained at its exit, with no consumer
 *     attached and nobody polling;
 *   - KPPROF_IOC_KICK drains every ring of the caller's mm (a vfork
 *     child's: its parent's) and no one else's;
 *   - an entry reserved and never committed is skipped after a bound,
 *     counted, and does not block the records behind it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"
#include "pring.h"
#include "tally.h"

CONSUMER_FIXTURE(pr)

#define MAX_PROCS	TALLY_MAX

static int drain(int cfd)
{
	return ioctl(cfd, KPPROF_IOC_DRAIN) ? -errno : 0;
}

/* A child's side of a two-pipe handshake. */
struct chan {
	int up[2];	/* child -> parent */
	int down[2];	/* parent -> child */
};

static int chan__open(struct chan *c)
{
	return pipe(c->up) || pipe(c->down) ? -1 : 0;
}

static void chan__say(int fd, char ch)
{
	if (write(fd, &ch, 1) != 1)
		_exit(90);
}

static char chan__hear(int fd)
{
	char ch = 0;

	if (read(fd, &ch, 1) != 1)
		return 0;
	return ch;
}

/* children die with the test: none may keep the consumer's file open */
static void child_init(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static int become(uid_t uid)
{
	return setresgid(uid, uid, uid) || setresuid(uid, uid, uid);
}

/* ------------------------------------------------------------ scribble */

/*
 * The scribbler: 10 good records, one with a claimed tid (malformed), 10
 * good ones; then, when told, a head that is not a multiple of 8 and
 * garbage lengths.  Exit codes >= 80 are setup failures.
 */
static int scribbler(struct chan *c)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p;
	size_t len;
	int fd = dev__open(), i;

	if (!buf || fd < 0 || pring__map(&p, fd))
		return 80;
	for (i = 0; i < 21; i++) {
		len = tally__rec(buf, i);
		if (i == 10)
			((struct kpprof_record *)buf)->tid = 1234;
		if (pring__write(&p, buf, len))
			return 81;
	}
	chan__say(c->up[1], 'r');
	if (chan__hear(c->down[0]) != 's')
		return 82;
	/* a committed entry with a length beyond the ring, then a bad head */
	len = tally__rec(buf, 99);
	pring__write(&p, buf, len);
	*(volatile __u32 *)(p.data + (p.hdr->head & p.mask)) = 0x3ffffff0;
	memset(p.data, 0x5a, p.size);
	p.hdr->head += 3;
	chan__say(c->up[1], 'd');
	if (chan__hear(c->down[0]) != 'q')
		return 83;
	return 0;
}

static int normal_producer(struct chan *c, int count, uid_t uid)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p;
	int fd = dev__open(), i, lost = 0;

	if (!buf || fd < 0 || (uid && become(uid)) || pring__map(&p, fd))
		return 80;
	chan__say(c->up[1], 'r');
	if (chan__hear(c->down[0]) != 'g')
		return 82;
	for (i = 0; i < count; i++) {
		if (pring__write(&p, buf, tally__rec(buf, i)))
			lost++;
		sched_yield();
	}
	chan__say(c->up[1], 'd');
	if (chan__hear(c->down[0]) != 'q')
		return 83;
	return lost ? 1 : 0;
}

TEST_F_TIMEOUT(pr, scribbler_loses_only_its_own, 120)
{
	struct chan cs, cn;
	struct tally *t = calloc(1, sizeof(*t));
	pid_t pids[2];
	int status;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, chan__open(&cs));
	ASSERT_EQ(0, chan__open(&cn));
	pids[0] = fork();
	ASSERT_LE(0, pids[0]);
	if (!pids[0])
		child_init(), _exit(scribbler(&cs));
	pids[1] = fork();
	ASSERT_LE(0, pids[1]);
	if (!pids[1])
		child_init(), _exit(normal_producer(&cn, 200, 0));
	/* a child that dies early is an EOF, not a hang */
	close(cs.up[1]);
	close(cn.up[1]);
	ASSERT_EQ('r', chan__hear(cs.up[0]));
	ASSERT_EQ('r', chan__hear(cn.up[0]));
	chan__say(cn.down[1], 'g');
	ASSERT_EQ(0, drain(self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 2));
	/* the scribbler's 20 good records in, its malformed one counted */
	EXPECT_EQ(20, t->alloc[0]);
	EXPECT_EQ(1, t->invalid[0]);
	chan__say(cs.down[1], 's');
	ASSERT_EQ('d', chan__hear(cs.up[0]));
	ASSERT_EQ('d', chan__hear(cn.up[0]));
	ASSERT_EQ(0, drain(self->e.cfd));
	ASSERT_EQ(0, drain(self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 2));
	chan__say(cs.down[1], 'q');
	chan__say(cn.down[1], 'q');
	ASSERT_EQ(pids[0], waitpid(pids[0], &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(pids[1], waitpid(pids[1], &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the normal producer's ring was full");
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 2));
	TH_LOG("scribbler: %llu in, invalid %llu, resets %llu; normal: %llu in",
	       (unsigned long long)t->alloc[0], (unsigned long long)t->invalid[0],
	       (unsigned long long)t->resets[0], (unsigned long long)t->alloc[1]);
	EXPECT_EQ(20, t->alloc[0]) TH_LOG("nothing of the scribbled ring may come out");
	EXPECT_EQ(1, t->invalid[0]);
	EXPECT_LE(1, t->resets[0]);
	/* the normal producer: every record, in order, no loss reported */
	EXPECT_EQ(200, t->alloc[1]);
	EXPECT_EQ(0, t->full[1] + t->invalid[1] + t->resets[1]);
	EXPECT_EQ(0, t->out_of_order);
	free(t);
}

/* ------------------------------------------------------------ floods */

struct flood_ctl {
	volatile int stop;
	volatile __u64 written[MAX_PROCS];
	volatile __u64 lost[MAX_PROCS];
};

static int flooder(int idx, uid_t uid, struct flood_ctl *ctl, struct chan *c)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p;
	size_t len;
	__u64 seq = 0;
	int fd = dev__open();

	if (!buf || fd < 0 || become(uid) || pring__map(&p, fd))
		return 80;
	chan__say(c->up[1], 'r');
	len = tally__rec(buf, 0);
	while (!ctl->stop) {
		((struct kpprof_rec_alloc *)buf)->bytes = seq + 1;
		if (pring__write(&p, buf, len)) {
			ctl->lost[idx]++;
			/* full: let the others (and the normal producer) run */
			usleep(2000);
		} else {
			seq++;
			ctl->written[idx]++;
		}
	}
	return 0;
}

/*
 * flood - @nflood flooders, each its own uid, beside a normal producer
 * (index @nflood) that writes 300 records once they all lose records;
 * the consumer reads nothing until the normal producer is done.  Then it
 * reads and drains until the normal producer's 300 are all in.
 */
static void flood(struct __test_metadata *_metadata, struct consumer_env *e,
		  int nflood, bool keep_flooding)
{
	struct flood_ctl *ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct tally *t = calloc(1, sizeof(*t));
	pid_t pids[MAX_PROCS];
	struct chan c, cn;
	int i, status, waited;
	__u64 lost_total;

	ASSERT_NE(MAP_FAILED, ctl);
	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, chan__open(&c));
	ASSERT_EQ(0, chan__open(&cn));
	for (i = 0; i < nflood; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			child_init(), _exit(flooder(i, 20000 + i, ctl, &c));
	}
	close(c.up[1]);
	for (i = 0; i < nflood; i++)
		ASSERT_EQ('r', chan__hear(c.up[0]));
	/* every flooder has filled its own ring (and the consumer's share) */
	for (waited = 0; waited < 6000; waited++) {
		for (lost_total = 0, i = 0; i < nflood; i++)
			if (ctl->lost[i])
				lost_total++;
		if (lost_total == (__u64)nflood)
			break;
		usleep(10000);
	}
	EXPECT_EQ(nflood, lost_total);
	/* and their records fill the consumer's ring, which nobody reads */
	for (waited = 0; waited < 6000; waited++) {
		if (ring_reader__prod(&e->rr) - ring_reader__cons(&e->rr) >= e->info.ring_size / 4)
			break;
		usleep(10000);
	}
	EXPECT_LE(e->info.ring_size / 4, ring_reader__prod(&e->rr) - ring_reader__cons(&e->rr));
	TH_LOG("all %d flooders lose records, %llu bytes unread, after %d ms", nflood,
	       (unsigned long long)(ring_reader__prod(&e->rr) - ring_reader__cons(&e->rr)),
	       waited * 10);
	pids[nflood] = fork();
	ASSERT_LE(0, pids[nflood]);
	if (!pids[nflood])
		child_init(), _exit(normal_producer(&cn, 300, 1000));
	close(cn.up[1]);
	ASSERT_EQ('r', chan__hear(cn.up[0]));
	chan__say(cn.down[1], 'g');
	ASSERT_EQ('d', chan__hear(cn.up[0]));
	chan__say(cn.down[1], 'q');
	TH_LOG("the normal producer wrote its 300");
	ASSERT_EQ(pids[nflood], waitpid(pids[nflood], &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("the normal producer lost records");
	/*
	 * now read until its 300 are in: with two flooders still flooding;
	 * 65 of them are stopped first (under TCG the consumer would read
	 * their records at a few thousand a second), their backlog stays
	 */
	if (!keep_flooding)
		ctl->stop = 1;
	for (waited = 0; waited < 60000 && t->alloc[nflood] < 300; waited++) {
		ASSERT_EQ(0, tally__read(&e->rr, t, pids, nflood + 1));
		ASSERT_EQ(0, drain(e->cfd));
	}
	ctl->stop = 1;
	for (i = 0; i < nflood; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	for (lost_total = 0, i = 0; i < nflood; i++)
		lost_total += ctl->lost[i];
	TH_LOG("%d flooders lost %llu records; normal: %llu of 300 in, %llu reported lost",
	       nflood, (unsigned long long)lost_total,
	       (unsigned long long)t->alloc[nflood], (unsigned long long)t->full[nflood]);
	EXPECT_EQ(300, t->alloc[nflood]);
	EXPECT_EQ(0, t->full[nflood] + t->invalid[nflood] + t->resets[nflood]);
	EXPECT_EQ(0, t->out_of_order);
	munmap(ctl, sizeof(*ctl));
	free(t);
}

TEST_F_TIMEOUT(pr, two_flooding_uids, 300)
{
	flood(_metadata, &self->e, 2, true);
}

TEST_F_TIMEOUT(pr, sixty_five_flooding_uids, 600)
{
	flood(_metadata, &self->e, 65, false);
}

/* ------------------------------------------------------------ accounting */

#define ACC_PRODUCERS	4
#define ACC_RECORDS	20000

static int acc_producer(int idx, struct flood_ctl *ctl)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p;
	int fd = dev__open();

	if (!buf || fd < 0 || pring__map(&p, fd))
		return 80;
	for (__u64 seq = 0; seq < ACC_RECORDS; seq++) {
		if (pring__write(&p, buf, tally__rec(buf, seq)))
			ctl->lost[idx]++;
		else
			ctl->written[idx]++;
	}
	/* the header's count is what the kernel reports: it must match ours */
	return pring__lost(&p) == ctl->lost[idx] ? 0 : 1;
}

TEST_F_TIMEOUT(pr, every_record_accounted_and_cycles_exact, 600)
{
	struct flood_ctl *ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct tally *t = calloc(1, sizeof(*t));
	pid_t pids[ACC_PRODUCERS];
	bool done[ACC_PRODUCERS] = { false };
	int i, status, running = ACC_PRODUCERS;
	__u64 cycle, lost_total = 0, in_total = 0;

	ASSERT_NE(MAP_FAILED, ctl);
	ASSERT_NE(NULL, t);
	for (i = 0; i < ACC_PRODUCERS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			child_init(), _exit(acc_producer(i, ctl));
	}
	/* read and end cycles while they write */
	while (running) {
		ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, ACC_PRODUCERS));
		ASSERT_EQ(0, dev__advance(self->e.cfd, &cycle));
		for (i = 0; i < ACC_PRODUCERS; i++) {
			if (!done[i] && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
				EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("producer %d's lost[] count", i);
				done[i] = true;
				running--;
			}
		}
		usleep(1000);
	}
	/*
	 * their exits drained the rest, except what the consumer's ring had
	 * no room for then: orphan rings, which the next drains empty and free
	 */
	for (i = 0; i < 6000; i++) {
		struct kpprof_stats st;

		ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, ACC_PRODUCERS));
		ASSERT_EQ(0, dev__stats(self->e.cfd, &st));
		if (st.pring_count == 0)
			break;
		ASSERT_EQ(0, drain(self->e.cfd));
		usleep(10000);
	}
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, ACC_PRODUCERS));
	for (i = 0; i < ACC_PRODUCERS; i++) {
		TH_LOG("producer %d: wrote %llu, lost %llu; delivered %llu, reported lost %llu",
		       i, (unsigned long long)ctl->written[i], (unsigned long long)ctl->lost[i],
		       (unsigned long long)t->alloc[i], (unsigned long long)t->full[i]);
		EXPECT_EQ(ctl->written[i], t->alloc[i]);
		EXPECT_EQ(ctl->lost[i], t->full[i]);
		EXPECT_EQ(ACC_RECORDS, t->alloc[i] + t->full[i]);
		EXPECT_EQ(0, t->invalid[i] + t->resets[i]);
		lost_total += t->full[i];
		in_total += t->alloc[i];
	}
	TH_LOG("%d producers: %llu delivered, %llu lost (counted), %llu cycles",
	       ACC_PRODUCERS, (unsigned long long)in_total,
	       (unsigned long long)lost_total, (unsigned long long)t->cycles);
	EXPECT_EQ(0, t->out_of_order);
	EXPECT_EQ(0, t->cycle_violations);
	EXPECT_LT(1, t->cycles);
	munmap(ctl, sizeof(*ctl));
	free(t);
}

/* ------------------------------------------------------------ mapping */

TEST_F(pr, fork_child_has_no_mapping)
{
	struct pring p;
	pid_t pid;
	int status;

	ASSERT_EQ(0, pring__map(&p, self->e.pfd));
	/* VM_IO: MADV_DOFORK cannot undo VM_DONTCOPY */
	EXPECT_EQ(-1, madvise(p.hdr, p.map_len, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* the address is not mapped in the child: this faults */
		*(volatile __u64 *)&p.hdr->head = 8;
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		TH_LOG("the child wrote into its parent's ring");
	EXPECT_EQ(0, p.hdr->head);
	pring__unmap(&p);
}

TEST_F(pr, another_process_gets_ebusy)
{
	struct pring p, q;
	pid_t pid;
	int status;

	ASSERT_EQ(0, pring__map(&p, self->e.pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(pring__map(&q, self->e.pfd) == -EBUSY ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("a second process mapped the same ring");
	/* the mapper itself may map it again */
	EXPECT_EQ(0, pring__map(&q, self->e.pfd));
	pring__unmap(&q);
	pring__unmap(&p);
}

TEST_F(pr, read_only_file_cannot_map)
{
	struct pring p;
	int fd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	/* a read-only file cannot even map a shared writable page */
	EXPECT_GT(0, pring__map(&p, fd));
	close(fd);
}

TEST_F(pr, exit_drains_without_consumer)
{
	struct tally *t = calloc(1, sizeof(*t));
	pid_t pids[1];
	int status;

	ASSERT_NE(NULL, t);
	/* no consumer: no drain work, nobody polls */
	ring_reader__unmap(&self->e.rr);
	ASSERT_EQ(0, dev__ioctl(self->e.cfd, KPPROF_IOC_CONSUMER_DETACH, NULL));
	pids[0] = fork();
	ASSERT_LE(0, pids[0]);
	if (!pids[0]) {
		unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
		struct pring p;
		int fd = dev__open();

		if (!buf || fd < 0 || pring__map(&p, fd))
			_exit(80);
		close(fd);	/* the mapping keeps the file */
		for (int i = 0; i < 100; i++)
			if (pring__write(&p, buf, tally__rec(buf, i)))
				_exit(81);
		_exit(0);
	}
	ASSERT_EQ(pids[0], waitpid(pids[0], &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* no poll, no drain ioctl: only the exit can have drained them */
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 1));
	EXPECT_EQ(100, t->alloc[0]);
	EXPECT_EQ(0, t->out_of_order);
	free(t);
}

/*
 * An entry reserved and never committed (its writer jumped out of the
 * write, or is held) does not block its ring for good: after the module's
 * bound (2 s) it is skipped, counted as invalid, and the records behind it
 * come through while the process lives.
 */
static int abandoner(struct chan *c)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct kpprof_ring_hdr *e;
	struct pring p;
	size_t len;
	__u64 h;
	int fd = dev__open(), i;

	if (!buf || fd < 0 || pring__map(&p, fd))
		return 80;
	/* reserve one entry, mark it BUSY, never commit it */
	len = tally__rec(buf, 0);
	h = p.hdr->head;
	p.hdr->head = h + ((sizeof(*e) + len + 7) & ~7ULL);
	e = (struct kpprof_ring_hdr *)(p.data + (h & p.mask));
	__atomic_store_n(&e->len, (__u32)len | KPPROF_RING_BUSY, __ATOMIC_RELEASE);
	for (i = 1; i <= 10; i++)
		if (pring__write(&p, buf, tally__rec(buf, i)))
			return 81;
	chan__say(c->up[1], 'r');
	if (chan__hear(c->down[0]) != 'q')
		return 83;
	return 0;
}

TEST_F_TIMEOUT(pr, abandoned_entry_is_skipped, 120)
{
	struct tally *t = calloc(1, sizeof(*t));
	struct chan c;
	pid_t pids[1];
	int status, i;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, chan__open(&c));
	pids[0] = fork();
	ASSERT_LE(0, pids[0]);
	if (!pids[0]) {
		child_init();
		_exit(abandoner(&c));
	}
	ASSERT_EQ('r', chan__hear(c.up[0]));
	/* wait for the condition, bounded well past the module's 2 s */
	for (i = 0; i < 300 && t->alloc[0] < 10; i++) {
		ASSERT_EQ(0, drain(self->e.cfd));
		ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 1));
		if (t->alloc[0] < 10)
			usleep(100000);
	}
	chan__say(c.down[1], 'q');
	ASSERT_EQ(pids[0], waitpid(pids[0], &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, drain(self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 1));
	/* the 10 committed records behind it, in order; the abandoned one counted */
	EXPECT_EQ(10, t->alloc[0]);
	EXPECT_EQ(0, t->out_of_order);
	EXPECT_EQ(1, t->invalid[0]);
	EXPECT_EQ(0, t->resets[0]);
	free(t);
}

/*
 * KPPROF_IOC_KICK drains the caller's own rings, nobody else's: with no
 * consumer attached (no drain work), A kicks; A's records are in the
 * consumer's ring, B's are not until B exits.
 */
TEST_F(pr, kick_drains_only_own_ring)
{
	struct tally *t = calloc(1, sizeof(*t));
	struct kpprof_stats st0, st1;
	struct chan ca, cb;
	pid_t pids[2];
	int status, i;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	ring_reader__unmap(&self->e.rr);
	ASSERT_EQ(0, dev__ioctl(self->e.cfd, KPPROF_IOC_CONSUMER_DETACH, NULL));
	ASSERT_EQ(0, chan__open(&ca));
	ASSERT_EQ(0, chan__open(&cb));
	for (i = 0; i < 2; i++) {
		struct chan *c = i ? &cb : &ca;

		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i]) {
			unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
			struct pring p;
			int fd = dev__open();

			child_init();
			if (!buf || fd < 0 || pring__map(&p, fd))
				_exit(80);
			for (int j = 0; j < 10; j++)
				if (pring__write(&p, buf, tally__rec(buf, j)))
					_exit(81);
			if (!i && dev__ioctl(fd, KPPROF_IOC_KICK, NULL))
				_exit(82);
			chan__say(c->up[1], 'k');
			if (chan__hear(c->down[0]) != 'q')
				_exit(83);
			_exit(0);
		}
	}
	close(ca.up[1]);
	close(cb.up[1]);
	ASSERT_EQ('k', chan__hear(ca.up[0]));
	ASSERT_EQ('k', chan__hear(cb.up[0]));
	/* no consumer: nothing but the kick drained anything */
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(10, st1.pring_drained - st0.pring_drained)
		TH_LOG("a kick drains the kicker's 10 records and no one else's");
	chan__say(ca.down[1], 'q');
	chan__say(cb.down[1], 'q');
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 2));
	EXPECT_EQ(10, t->alloc[0]);
	EXPECT_EQ(10, t->alloc[1]);
	free(t);
}

/*
 * A kick finds the caller's rings by its mm (kpp_dev.prings_by_mm, not a
 * walk over every ring): all of them, on any file that may submit, after
 * one of them left (its file closed); a vfork child, on its parent's mm,
 * drains its parent's rings; a fork child, with an mm of its own, none.
 * No consumer attached: nothing else drains.
 */
TEST_F(pr, kick_drains_every_ring_of_its_mm)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct kpprof_stats st0, st1;
	struct pring p[3];
	int fd[3], i, j, status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ring_reader__unmap(&self->e.rr);
	ASSERT_EQ(0, dev__ioctl(self->e.cfd, KPPROF_IOC_CONSUMER_DETACH, NULL));
	for (i = 0; i < 3; i++) {
		fd[i] = dev__open();
		ASSERT_LE(0, fd[i]);
		ASSERT_EQ(0, pring__map(&p[i], fd[i]));
		for (j = 0; j < 4; j++)
			ASSERT_EQ(0, pring__write(&p[i], buf, tally__rec(buf, j)));
	}
	/* the middle ring's file goes: its release drains it */
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	pring__unmap(&p[1]);
	close(fd[1]);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(4, st1.pring_drained - st0.pring_drained);
	/* one kick, on a file without a ring, drains the two left */
	ASSERT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_KICK, NULL));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	EXPECT_EQ(8, st0.pring_drained - st1.pring_drained)
		TH_LOG("a kick drains every ring of the kicker's mm");

	for (j = 0; j < 4; j++)
		ASSERT_EQ(0, pring__write(&p[2], buf, tally__rec(buf, j)));
	pid = vfork();
	if (!pid)
		_exit(ioctl(self->e.pfd, KPPROF_IOC_KICK) ? 1 : 0);
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(4, st1.pring_drained - st0.pring_drained)
		TH_LOG("a vfork child's kick drains its parent's rings");

	for (j = 0; j < 4; j++)
		ASSERT_EQ(0, pring__write(&p[0], buf, tally__rec(buf, j)));
	pid = fork();
	if (!pid)
		_exit(ioctl(self->e.pfd, KPPROF_IOC_KICK) ? 1 : 0);
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	EXPECT_EQ(0, st0.pring_drained - st1.pring_drained)
		TH_LOG("a fork child's kick drains none of its parent's rings");
	ASSERT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_KICK, NULL));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(4, st1.pring_drained - st0.pring_drained);
	for (i = 0; i < 3; i += 2) {
		pring__unmap(&p[i]);
		close(fd[i]);
	}
	free(buf);
}

/*
 * ABI 3: a record of a version the kernel does not know (valid in every
 * byte as version 0) is skipped by the drain and counted as invalid, in
 * band and in GET_STATS; the records around it arrive.
 */
TEST_F(pr, unknown_version_skipped_and_counted)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct tally *t = calloc(1, sizeof(*t));
	struct kpprof_stats st0, st1;
	pid_t pids[1] = { getpid() };
	struct pring p;
	int fd = dev__open();

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, t);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pring__map(&p, fd));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (int i = 0; i < 5; i++) {
		size_t len = tally__rec(buf, i);

		if (i == 2)
			((struct kpprof_record *)buf)->version = 1;
		ASSERT_EQ(0, pring__write(&p, buf, len));
	}
	ASSERT_EQ(0, drain(self->e.cfd));
	ASSERT_EQ(0, tally__read(&self->e.rr, t, pids, 1));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(4, t->alloc[0]);
	EXPECT_EQ(1, t->invalid[0]);
	EXPECT_EQ(0, t->out_of_order);
	EXPECT_EQ(1, st1.pring_invalid - st0.pring_invalid);
	EXPECT_EQ(4, st1.pring_drained - st0.pring_drained);
	pring__unmap(&p);
	close(fd);
	free(t);
	free(buf);
}

TEST_HARNESS_MAIN
