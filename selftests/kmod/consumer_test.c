// SPDX-License-Identifier: GPL-2.0
/*
 * consumer_test: what a consumer's life does to the ring and the mappings.
 *   - KPPROF_IOC_CONSUMER_DETACH ends it (EINVAL on a file that is not the
 *     consumer), and another file may attach;
 *   - a new consumer starts at the first entry nobody read, whatever the
 *     last one left in cons_pos (mid-entry, beyond prod_pos);
 *   - a fork()ed child of the consumer has no ring mapping (VM_DONTCOPY),
 *     the producer's config page mapping survives fork;
 *   - no mapping of the device can be executable: mmap(PROT_EXEC) is
 *     EPERM, mprotect(PROT_EXEC) EACCES, on a device node of a file system
 *     that allows exec (a tmpfs of our own: /dev may be noexec);
 *   - the cycle timer runs only while a consumer is attached;
 *   - the config page's cycle never goes backwards while the ioctl and the
 *     timer advance it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "rec_build.h"
#include "preempt_mode.h"

CONSUMER_FIXTURE(ring)

static int detach(int fd)
{
	return dev__ioctl(fd, KPPROF_IOC_CONSUMER_DETACH, NULL);
}

/*
 * leave - the fixture's consumer goes (closing its file, which old modules
 * understand too), leaving e->cfd a fresh file that is not the consumer.
 */
static int leave(struct consumer_env *e)
{
	ring_reader__unmap(&e->rr);
	close(e->cfd);
	e->cfd = dev__open();
	return e->cfd < 0 ? e->cfd : 0;
}

static __u32 attached(int fd)
{
	struct kpprof_stats st;

	return dev__stats(fd, &st) ? 99 : st.consumer_attached;
}

TEST_F(ring, detach_ends_the_consumer)
{
	int other = dev__open();

	ASSERT_LE(0, other);
	EXPECT_EQ(1, attached(self->e.cfd));
	/* not the consumer: EINVAL, and nothing changes */
	EXPECT_EQ(-EINVAL, detach(other));
	EXPECT_EQ(-EBUSY, dev__ioctl(other, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	EXPECT_EQ(0, detach(self->e.cfd));
	EXPECT_EQ(0, attached(self->e.cfd));
	EXPECT_EQ(-EINVAL, detach(self->e.cfd));
	/* the ring's pages are for the consumer only, once it is one again */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->e.info.page_size, PROT_READ | PROT_WRITE,
				   MAP_SHARED, self->e.cfd,
				   KPPROF_PGOFF_CONSUMER * self->e.info.page_size));
	EXPECT_EQ(0, dev__ioctl(other, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	EXPECT_EQ(1, attached(other));
	EXPECT_EQ(0, detach(other));
	/* the fixture's file attaches again for its teardown */
	EXPECT_EQ(0, dev__ioctl(self->e.cfd, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(other);
}

/*
 * Three records; the consumer reads one, scribbles cons_pos (@scribble:
 * into the middle of the second entry, or far beyond prod_pos) and leaves
 * (@by_close: closing its file, else DETACH).  The next consumer reads the
 * two unread records, exactly.
 */
static void leave_and_reattach(struct __test_metadata *_metadata,
			       struct consumer_env *e, __u64 scribble, bool by_close)
{
	const struct kpprof_record *rec;
	struct ring_reader rr2;
	__u64 start;
	__u32 len;
	int fd2, i;

	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, dev__write(e->pfd, e->buf, rec_build__free(e->buf, 0x1000 * (i + 1), 8)));
	ASSERT_EQ(1, ring_reader__peek(&e->rr, &rec, &len));
	EXPECT_EQ(0x1000, ((const struct kpprof_rec_free *)rec)->addr);
	ring_reader__consume(&e->rr);
	start = ring_reader__cons(&e->rr);
	__atomic_store_n(e->rr.cons_pos, start + scribble, __ATOMIC_RELEASE);
	ring_reader__unmap(&e->rr);
	if (by_close) {
		close(e->cfd);
		e->cfd = dev__open();
		ASSERT_LE(0, e->cfd);
		fd2 = e->cfd;
	} else {
		ASSERT_EQ(0, detach(e->cfd));
		fd2 = dev__open();
		ASSERT_LE(0, fd2);
	}
	ASSERT_EQ(0, ring_reader__attach(&rr2, fd2));
	EXPECT_EQ(start, ring_reader__cons(&rr2)) TH_LOG("cons_pos not reset on attach");
	for (i = 1; i < 3; i++) {
		ASSERT_EQ(1, ring_reader__peek(&rr2, &rec, &len)) TH_LOG("record %d", i);
		EXPECT_EQ(0x1000 * (i + 1), ((const struct kpprof_rec_free *)rec)->addr);
		ring_reader__consume(&rr2);
	}
	EXPECT_EQ(0, ring_reader__drain(&rr2));
	if (!by_close) {
		/* hand the consumer back to the fixture's file */
		ring_reader__unmap(&rr2);
		EXPECT_EQ(0, detach(fd2));
		close(fd2);
		ASSERT_EQ(0, ring_reader__attach(&e->rr, e->cfd));
	} else {
		e->rr = rr2;
	}
}

TEST_F(ring, attach_resets_mid_entry_cons_pos)
{
	leave_and_reattach(_metadata, &self->e, 12, false);
}

TEST_F(ring, attach_resets_cons_pos_beyond_prod_after_close)
{
	/* beyond prod_pos: the kernel takes it as "all read" up to prod */
	const struct kpprof_record *rec;
	__u32 len;

	leave_and_reattach(_metadata, &self->e, 0, true);
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__free(self->e.buf, 0x7000, 8)));
	__atomic_store_n(self->e.rr.cons_pos, ring_reader__prod(&self->e.rr) + (1 << 20),
			 __ATOMIC_RELEASE);
	ring_reader__unmap(&self->e.rr);
	close(self->e.cfd);
	self->e.cfd = dev__open();
	ASSERT_LE(0, self->e.cfd);
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	EXPECT_EQ(ring_reader__prod(&self->e.rr), ring_reader__cons(&self->e.rr));
	EXPECT_EQ(0, ring_reader__peek(&self->e.rr, &rec, &len));
	ASSERT_EQ(0, dev__write(self->e.pfd, self->e.buf, rec_build__free(self->e.buf, 0x8000, 8)));
	ASSERT_EQ(1, ring_reader__peek(&self->e.rr, &rec, &len));
	EXPECT_EQ(0x8000, ((const struct kpprof_rec_free *)rec)->addr);
	EXPECT_EQ(1, ring_reader__drain(&self->e.rr));
}

/* mapped - is [@addr, @addr + 1) in one of this process's mappings? */
static int mapped(const void *addr)
{
	unsigned long a = (unsigned long)addr, lo, hi;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a < hi)
			found = 1;
	fclose(f);
	return found;
}

TEST_F(ring, fork_child_has_no_ring_mapping)
{
	const struct kpprof_config_page *pg;
	int status;
	pid_t pid;

	pg = mmap(NULL, self->e.info.page_size, PROT_READ, MAP_SHARED, self->e.pfd, 0);
	ASSERT_NE(MAP_FAILED, pg);
	ASSERT_EQ(1, mapped(self->e.rr.cons_map));
	ASSERT_EQ(1, mapped(self->e.rr.data));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int code = 0;

		if (mapped(self->e.rr.cons_map) != 0)
			code |= 1;
		if (mapped(self->e.rr.data) != 0)
			code |= 2;
		/* a producer's child still reads its config */
		if (mapped(pg) != 1 || pg->abi_version != KPPROF_ABI_VERSION)
			code |= 4;
		_exit(code);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status) & 1) TH_LOG("child inherited the consumer page");
	EXPECT_EQ(0, WEXITSTATUS(status) & 2) TH_LOG("child inherited the ring");
	EXPECT_EQ(0, WEXITSTATUS(status) & 4) TH_LOG("child lost the config page");
	munmap((void *)pg, self->e.info.page_size);
}

/*
 * exec_node - a device node for /dev/kpprof on a fresh tmpfs (exec allowed),
 * opened read-write; -errno if the test cannot make one.
 */
static int exec_node(char *dir, size_t len)
{
	struct stat st;
	char node[256];
	int fd;

	snprintf(dir, len, "/tmp/kpp-exec-XXXXXX");
	if (!mkdtemp(dir))
		return -errno;
	if (mount("tmpfs", dir, "tmpfs", 0, "size=64k"))
		return -errno;
	if (stat(KPPROF_DEVICE_PATH, &st))
		return -errno;
	snprintf(node, sizeof(node), "%s/kpprof", dir);
	if (mknod(node, S_IFCHR | 0600, st.st_rdev))
		return -errno;
	fd = open(node, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

TEST_F(ring, no_mapping_is_executable)
{
	const size_t page = self->e.info.page_size;
	const struct { const char *name; off_t pgoff; size_t len; int prot; } maps[] = {
		{ "config page", KPPROF_PGOFF_CONFIG, page, PROT_READ },
		{ "consumer page", KPPROF_PGOFF_CONSUMER, page, PROT_READ | PROT_WRITE },
		{ "producer page and data", KPPROF_PGOFF_PRODUCER, 2 * page, PROT_READ },
	};
	char dir[64];
	unsigned int i;
	int fd = exec_node(dir, sizeof(dir));

	ASSERT_LE(0, fd) TH_LOG("device node on a tmpfs: %s", strerror(-fd));
	/* the ring's pages are for the consumer: this file becomes it */
	ASSERT_EQ(0, leave(&self->e));
	ASSERT_EQ(0, dev__ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		void *p = mmap(NULL, maps[i].len, maps[i].prot | PROT_EXEC, MAP_SHARED, fd,
			       maps[i].pgoff * page);

		int err = errno;

		EXPECT_EQ(MAP_FAILED, p) TH_LOG("%s mapped executable", maps[i].name);
		if (p != MAP_FAILED)
			munmap(p, maps[i].len);
		else
			EXPECT_EQ(EPERM, err) TH_LOG("%s", maps[i].name);
		p = mmap(NULL, maps[i].len, maps[i].prot, MAP_SHARED, fd, maps[i].pgoff * page);
		ASSERT_NE(MAP_FAILED, p) TH_LOG("%s: %s", maps[i].name, strerror(errno));
		EXPECT_EQ(-1, mprotect(p, maps[i].len, maps[i].prot | PROT_EXEC))
			TH_LOG("%s made executable by mprotect", maps[i].name);
		EXPECT_EQ(EACCES, errno) TH_LOG("%s", maps[i].name);
		munmap(p, maps[i].len);
	}
	close(fd);
	umount2(dir, MNT_DETACH);
	rmdir(dir);
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
}

static __u64 page_cycle(const struct kpprof_config_page *pg)
{
	return __atomic_load_n(&pg->cycle, __ATOMIC_ACQUIRE);
}

/* spin_until - busy-wait until @pred, or @ns have passed */
#define spin_until(pred, ns)						\
	({								\
		__u64 __end = now_ns() + (ns);				\
		while (!(pred) && now_ns() < __end)			\
			;						\
		(pred);							\
	})

TEST_F_TIMEOUT(ring, cycle_timer_only_with_consumer, 60)
{
	const struct kpprof_config_page *pg;
	struct kpprof_config cfg;
	__u64 c0;

	pg = mmap(NULL, self->e.info.page_size, PROT_READ, MAP_SHARED, self->e.pfd, 0);
	ASSERT_NE(MAP_FAILED, pg);
	dev__test_config(&cfg);
	cfg.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MIN;
	ASSERT_EQ(0, leave(&self->e));
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	/* no consumer: 50 periods pass without a cycle */
	c0 = page_cycle(pg);
	EXPECT_FALSE(spin_until(page_cycle(pg) != c0, 500 * 1000 * 1000ULL))
		TH_LOG("the timer ran with no consumer: cycle %llu -> %llu",
		       (unsigned long long)c0, (unsigned long long)page_cycle(pg));
	/* a consumer: the timer runs (generous bound: TCG on a busy host) */
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	c0 = page_cycle(pg);
	EXPECT_TRUE(spin_until(page_cycle(pg) >= c0 + 3, 20 * 1000 * 1000 * 1000ULL))
		TH_LOG("timer did not run with a consumer");
	/* gone again: it stops */
	ASSERT_EQ(0, leave(&self->e));
	c0 = page_cycle(pg);
	EXPECT_FALSE(spin_until(page_cycle(pg) != c0, 500 * 1000 * 1000ULL))
		TH_LOG("the timer kept running after detach");
	ASSERT_EQ(0, ring_reader__attach(&self->e.rr, self->e.cfd));
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	ring_reader__drain(&self->e.rr);
	munmap((void *)pg, self->e.info.page_size);
}

struct race {
	int fd;
	volatile int stop;
	const struct kpprof_config_page *pg;
	__u64 returned;	/* the highest cycle an ADVANCE_CYCLE returned */
	__u64 backwards, reads, advances;
	__u64 bad_page, bad_floor;	/* the first violation */
	int err;
};

/*
 * below_floor - count it if the page shows a cycle below one that an
 * ADVANCE_CYCLE already returned (@got, or any advancer's earlier one): the ioctl
 * publishes before it returns, so from then on the page shows that cycle
 * or a later one.  Checked by each advancer right after its ioctl, not
 * only by a reader that had seen the later cycle first: a stale
 * publication is seen when it lands, whichever vCPU runs then (under TCG's
 * thread=single the reader rarely runs between the two publications).
 */
static void below_floor(struct race *r, __u64 got)
{
	__u64 floor = __atomic_load_n(&r->returned, __ATOMIC_ACQUIRE), page;

	while (floor < got &&
	       !__atomic_compare_exchange_n(&r->returned, &floor, got, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	if (floor < got)
		floor = got;
	page = page_cycle(r->pg);
	if (page < floor && !__atomic_fetch_add(&r->backwards, 1, __ATOMIC_RELAXED)) {
		r->bad_page = page;
		r->bad_floor = floor;
	}
}

static void *advancer(void *arg)
{
	struct race *r = arg;
	__u64 c;

	while (!r->stop) {
		int err = dev__advance(r->fd, &c);

		if (err)
			r->err = err;
		else
			below_floor(r, c);
		__atomic_fetch_add(&r->advances, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Two threads advance the cycle, the timer too (10 ms), and a reader
 * watches the config page: the cycle there never goes backwards, nor below
 * a cycle an ioctl returned (below_floor()).  The race: an advancer
 * stopped between its advance and its publication (preempted, with full
 * preemption where the kernel offers it; its vCPU descheduled) while the
 * other advances and publishes a later cycle.
 */
TEST_F_TIMEOUT(ring, config_page_cycle_never_backwards, 60)
{
	pthread_t th[2];
	struct kpprof_config cfg;
	struct race r = { .fd = self->e.cfd };
	__u64 last = 0, end;
	char old[32] = "";
	int i, perr;

	r.pg = mmap(NULL, self->e.info.page_size, PROT_READ, MAP_SHARED, self->e.pfd, 0);
	ASSERT_NE(MAP_FAILED, r.pg);
	dev__test_config(&cfg);
	cfg.cycle_period_ms = KPPROF_CYCLE_PERIOD_MS_MIN;
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	perr = preempt_mode__set("full", old, sizeof(old));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, advancer, &r));
	end = now_ns() + 5000 * 1000 * 1000ULL;
	while (now_ns() < end) {
		__u64 c = page_cycle(r.pg);

		if (c < last && !__atomic_fetch_add(&r.backwards, 1, __ATOMIC_RELAXED)) {
			r.bad_page = c;
			r.bad_floor = last;
		}
		below_floor(&r, 0);
		last = c;
		r.reads++;
		/* the ring fills with cycle records: keep it drained */
		if (!(r.reads & 1023))
			ring_reader__drain(&self->e.rr);
	}
	r.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (!perr && old[0])
		preempt_mode__set(old, NULL, 0);
	TH_LOG("%llu advances, %llu reads of the page, preemption %s",
	       (unsigned long long)r.advances, (unsigned long long)r.reads,
	       perr ? "unchanged" : "full");
	EXPECT_EQ(0, r.err);
	EXPECT_EQ(0, r.backwards)
		TH_LOG("first: the page showed %llu after %llu was returned or read",
		       (unsigned long long)r.bad_page, (unsigned long long)r.bad_floor);
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(self->e.cfd, &cfg));
	ring_reader__drain(&self->e.rr);
	munmap((void *)r.pg, self->e.info.page_size);
}

TEST_HARNESS_MAIN
