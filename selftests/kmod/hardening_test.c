// SPDX-License-Identifier: GPL-2.0
/*
 * hardening_test: the review's medium and low findings (issue 16), one test
 * each, every one failing on the module before the fix:
 *   - an epoll set that registered the file before CONSUMER_ATTACH is woken
 *     by the ring like one registered after (poll_wait() always runs);
 *   - a detached consumer loses its ring mappings: touching them afterwards
 *     is SIGBUS, so it can neither read the next consumer's records nor
 *     write the shared cons_pos;
 *   - madvise(MADV_DOFORK) cannot make the consumer's mappings inheritable;
 *   - KPPROF_IOC_SUBMIT on an O_RDONLY descriptor fails as write(2) does
 *     (EBADF), and counts as rejected;
 *   - the device is a stream: lseek() is ESPIPE (no f_pos per write);
 *   - the record cache has no constructor, which would switch off the
 *     admin's init_on_alloc/init_on_free for it;
 *   - and one the fix of the first opened: a user who may not consume,
 *     sleeping in poll() on its own file, is not on the ring's waitqueue,
 *     so producers neither wake it nor walk its entries.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"

CONSUMER_FIXTURE(ring)

static int detach(int fd)
{
	return dev__ioctl(fd, KPPROF_IOC_CONSUMER_DETACH, NULL);
}

static int epoll_ready(int ep, int ms)
{
	struct epoll_event ev;

	return epoll_wait(ep, &ev, 1, ms);
}

TEST_F_TIMEOUT(ring, epoll_registered_before_attach_is_woken, 60)
{
	struct epoll_event ev = { .events = EPOLLIN };
	__u64 cycle;
	int before, after;

	/* the fixture's file stops being the consumer, and registers first */
	ring_reader__unmap(&self->e.rr);
	ASSERT_EQ(0, detach(self->e.cfd));
	before = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, before);
	ASSERT_EQ(0, epoll_ctl(before, EPOLL_CTL_ADD, self->e.cfd, &ev));
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	after = epoll_create1(EPOLL_CLOEXEC);
	ASSERT_LE(0, after);
	ASSERT_EQ(0, epoll_ctl(after, EPOLL_CTL_ADD, self->e.cfd, &ev));
	EXPECT_EQ(0, epoll_ready(before, 0));

	/* a cycle record always wakes the consumer's waiters */
	ASSERT_EQ(0, dev__advance(self->e.cfd, &cycle));
	EXPECT_EQ(1, epoll_ready(after, 10000)) TH_LOG("set added after attach not woken");
	EXPECT_EQ(1, epoll_ready(before, 10000)) TH_LOG("set added before attach not woken");
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
	close(before);
	close(after);
}

static sigjmp_buf touch_env;

static void touch_handler(int sig)
{
	siglongjmp(touch_env, sig);
}

/*
 * touch - read (or write) @addr here (a fork()ed child has no ring
 * mapping); the SIGBUS or SIGSEGV it raised, or 0
 */
static int touch(volatile __u64 *addr, bool write)
{
	struct sigaction sa = { .sa_handler = touch_handler }, old_bus, old_segv;
	volatile int sig;

	sigaction(SIGBUS, &sa, &old_bus);
	sigaction(SIGSEGV, &sa, &old_segv);
	sig = sigsetjmp(touch_env, 1);
	if (!sig) {
		if (write)
			*addr = 1ULL << 40;
		else
			(void)*addr;
	}
	sigaction(SIGBUS, &old_bus, NULL);
	sigaction(SIGSEGV, &old_segv, NULL);
	return sig;
}

TEST_F_TIMEOUT(ring, detached_consumer_loses_its_mappings, 60)
{
	struct ring_reader old = self->e.rr;
	const struct kpprof_record *rec;
	__u32 len;

	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__free(self->e.buf, 0xabc000, 8)));
	ASSERT_EQ(1, ring_reader__peek(&old, &rec, &len));
	/* mapped and working while attached */
	EXPECT_EQ(0, touch((volatile __u64 *)old.data, false));

	ASSERT_EQ(0, detach(self->e.cfd));
	/* another consumer attaches and a producer writes for it */
	ASSERT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	ASSERT_EQ(0, dev__write(self->e.cfd, self->e.buf, rec_build__free(self->e.buf, 0xdef000, 8)));

	EXPECT_EQ(SIGBUS, touch((volatile __u64 *)old.data, false))
		TH_LOG("the detached consumer still reads the ring");
	EXPECT_EQ(SIGBUS, touch((volatile __u64 *)old.prod_pos, false))
		TH_LOG("the detached consumer still reads prod_pos");
	EXPECT_EQ(SIGBUS, touch(old.cons_pos, true))
		TH_LOG("the detached consumer still writes cons_pos");
	/* and the producers are unharmed */
	EXPECT_EQ(0, dev__write(self->e.cfd, self->e.buf, rec_build__free(self->e.buf, 0xdef000, 8)));

	/* the fixture's file becomes the consumer again and reads both */
	ring_reader__unmap(&self->e.rr);
	ASSERT_EQ(0, detach(self->e.pfd));
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	EXPECT_EQ(3, ring_reader__drain(&self->e.rr));
}

TEST_F(ring, madv_dofork_refused_on_ring_mappings)
{
	size_t pg = self->e.info.page_size;

	errno = 0;
	EXPECT_EQ(-1, madvise(self->e.rr.cons_map, pg, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(-1, madvise(self->e.rr.prod_map, pg, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(ring, submit_needs_a_writable_descriptor)
{
	struct kpprof_stats st0, st1;
	size_t n = rec_build__free(self->e.buf, 0x1000, 8);
	int fd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	EXPECT_EQ(-1, write(fd, self->e.buf, n));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-EBADF, dev__ioctl(fd, KPPROF_IOC_SUBMIT, self->e.buf));
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	EXPECT_EQ(st0.prod_pos, st1.prod_pos);
	EXPECT_EQ(st0.rejected + 1, st1.rejected);
	/* the same record through a writable descriptor goes in */
	EXPECT_EQ(0, dev__ioctl(self->e.pfd, KPPROF_IOC_SUBMIT, self->e.buf));
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
	close(fd);
}

TEST_F(ring, device_is_a_stream)
{
	errno = 0;
	EXPECT_EQ(-1, lseek(self->e.pfd, 0, SEEK_CUR));
	EXPECT_EQ(ESPIPE, errno);
	errno = 0;
	EXPECT_EQ(-1, pwrite(self->e.pfd, self->e.buf, rec_build__free(self->e.buf, 0x1000, 8), 0));
	EXPECT_EQ(ESPIPE, errno);
}

TEST(record_cache_has_no_constructor)
{
	char ctor[256] = "";
	FILE *f = fopen("/sys/kernel/slab/kpprof_record/ctor", "r");

	if (!f)
		SKIP(return, "no /sys/kernel/slab/kpprof_record (not SLUB, or merged)");
	if (!fgets(ctor, sizeof(ctor), f))
		ctor[0] = '\0';
	fclose(f);
	EXPECT_STREQ("", ctor) TH_LOG("a constructor disables init_on_alloc/free");
}

/*
 * Any user may open the device and poll() it.  A poll() that lists its fd
 * POLL_ENTRIES times puts as many entries on whatever waitqueue ->poll
 * hooks (as many epoll sets, or threads, do the same).  On the ring's
 * waitqueue, each would make a sleeper for wq_has_sleeper(): every write
 * with the watermark's worth unread would wake, walking them all, in the
 * writer's write(2).  The fixture's consumer sleeps nowhere, so no write
 * should wake anyone.
 */
#define POLL_ENTRIES	100000
#define POLLER_UID	1000

static int stat_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : 0;
}

/* the module's wakeup_watermark, clamped as the ring clamps it */
static __u64 watermark(__u64 ring_size)
{
	FILE *f = fopen("/sys/module/kpprof/parameters/wakeup_watermark", "r");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	if (v < 8)
		v = 8;
	return v > ring_size / 2 ? ring_size / 2 : v;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

TEST_F_TIMEOUT(ring, unprivileged_poll_is_not_a_ring_sleeper, 300)
{
	struct rlimit rl = { POLL_ENTRIES + 16, POLL_ENTRIES + 16 };
	struct kpprof_stats st0, st1;
	int ready[2], status, i, writes = 0;
	double t0, over_ms = 0;
	__u64 unread, seq = 0, wm = watermark(self->e.info.ring_size);
	long drained;
	pid_t pid;
	char c;

	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	ASSERT_EQ(0, pipe(ready));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct pollfd *fds = calloc(POLL_ENTRIES, sizeof(*fds));
		int fd;

		close(ready[0]);
		if (!fds || setresgid(POLLER_UID, POLLER_UID, POLLER_UID) ||
		    setresuid(POLLER_UID, POLLER_UID, POLLER_UID))
			_exit(100);
		fd = dev__open();
		if (fd < 0)
			_exit(101);
		for (i = 0; i < POLL_ENTRIES; i++) {
			fds[i].fd = fd;
			fds[i].events = POLLIN;
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(102);
		/* sleeps: a non-consumer's file is never readable */
		poll(fds, POLL_ENTRIES, 200000);
		_exit(0);
	}
	close(ready[1]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	for (i = 0; i < 10000 && stat_state(pid) != 'S'; i++)
		usleep(1000);
	ASSERT_EQ('S', stat_state(pid));

	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	/* up to the watermark, then 50 writes over it */
	do {
		t0 = now_ms();
		ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf,
					rec_build__alloc(self->e.buf, 8, seq++)));
		unread = ring_reader__prod(&self->e.rr) - ring_reader__cons(&self->e.rr);
		if (unread >= wm) {
			over_ms += now_ms() - t0;
			writes++;
		}
	} while (writes < 50);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st1));
	TH_LOG("%d writes over the watermark: %.3f ms each; wake-ups: %llu",
	       writes, over_ms / writes, (unsigned long long)(st1.wakeups - st0.wakeups));
	EXPECT_EQ(st0.wakeups, st1.wakeups) TH_LOG("writes woke a non-consumer's poll()");

	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	drained = ring_reader__drain(&self->e.rr);
	EXPECT_EQ((long)seq, drained);
}

TEST_HARNESS_MAIN
