// SPDX-License-Identifier: GPL-2.0
/*
 * privilege_test: privilege is per operation (the table at the top of
 * ioctl/kpprof.h).  A forked child without CAP_PERFMON and CAP_SYS_ADMIN
 * (as uid 65534, and as uid 0 with every capability dropped) may open,
 * write records, read info/config/format and map the config page, and
 * gets EPERM for attach, set_config, advance_cycle and stats; with
 * CAP_PERFMON alone, as uid 65534, those succeed.  One consumer at a time
 * (EBUSY), a new one after the first closes, none from a pid namespace of
 * its own (EXDEV); the config page and the ring are never writable, not
 * even through mprotect(); ring pages only for the attached consumer.
 *
 * Children cannot use the harness's ASSERT (it would longjmp inside the
 * child); they run a fixed list of steps and send each step's result
 * (0 or -errno) back through a pipe, and the parent checks them.
 */
#include <errno.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"
#include "ring_reader.h"
#include "rec_build.h"

enum step {
	S_OPEN, S_INFO, S_GET_CONFIG, S_FORMAT_PROBE, S_WRITE, S_MAP_CONFIG,
	S_ATTACH, S_SET_CONFIG, S_ADVANCE, S_STATS, S_MAP_CONSUMER,
	S_MAP_PRODUCER, S_COUNT
};

static const char *const step_name[S_COUNT] = {
	"open", "GET_INFO", "GET_CONFIG", "GET_FORMAT probe", "write record",
	"mmap config page", "CONSUMER_ATTACH", "SET_CONFIG", "ADVANCE_CYCLE",
	"GET_STATS", "mmap consumer page", "mmap producer pages",
};

enum cred_mode {
	AS_NOBODY,		/* setresuid(65534): no capabilities at all */
	AS_ROOT_NO_CAPS,	/* uid 0, every capability dropped */
	AS_NOBODY_PERFMON,	/* uid 65534 keeping CAP_PERFMON only */
};

static int set_caps(__u64 caps)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0,
	};
	struct __user_cap_data_struct data[2] = { { 0 } };

	data[0].effective = data[0].permitted = (__u32)caps;
	data[1].effective = data[1].permitted = (__u32)(caps >> 32);
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

static int drop_privileges(enum cred_mode mode)
{
	switch (mode) {
	case AS_NOBODY:
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			return -errno;
		return 0;
	case AS_ROOT_NO_CAPS:
		/* no ambient/bounding games needed: we exec nothing */
		return set_caps(0);
	case AS_NOBODY_PERFMON:
		if (prctl(PR_SET_KEEPCAPS, 1) ||
		    setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			return -errno;
		return set_caps(1ULL << CAP_PERFMON);
	}
	return -EINVAL;
}

/* run_steps - in the child: every step once, results into res[] */
static void run_steps(int res[S_COUNT], long page)
{
	struct kpprof_format_arg fa = { 0 };
	unsigned char buf[KPP_REC_BUF_MAX];
	struct kpprof_info info;
	struct kpprof_config cfg;
	struct kpprof_stats st;
	__u64 cycle;
	void *p;
	int fd;

	for (int i = 0; i < S_COUNT; i++)
		res[i] = -ENOSYS;
	fd = dev__open();
	res[S_OPEN] = fd < 0 ? fd : 0;
	if (fd < 0)
		return;
	res[S_INFO] = dev__info(fd, &info);
	res[S_GET_CONFIG] = dev__get_config(fd, &cfg);
	res[S_FORMAT_PROBE] = dev__ioctl(fd, KPPROF_IOC_GET_FORMAT, &fa);
	res[S_WRITE] = dev__write(fd, buf, rec_build__alloc(buf, 4, 3));
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	res[S_MAP_CONFIG] = p == MAP_FAILED ? -errno : 0;
	res[S_ATTACH] = dev__ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH, NULL);
	/* set the config it already has: harmless if it is allowed */
	res[S_SET_CONFIG] = dev__set_config(fd, &cfg);
	res[S_ADVANCE] = dev__advance(fd, &cycle);
	res[S_STATS] = dev__stats(fd, &st);
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 KPPROF_PGOFF_CONSUMER * page);
	res[S_MAP_CONSUMER] = p == MAP_FAILED ? -errno : 0;
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, KPPROF_PGOFF_PRODUCER * page);
	res[S_MAP_PRODUCER] = p == MAP_FAILED ? -errno : 0;
}

/* in_child - run the steps under @mode in a forked child, collect results */
static int in_child(enum cred_mode mode, int res[S_COUNT])
{
	int pipefd[2], status, err;
	pid_t pid;

	if (pipe(pipefd))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int r[S_COUNT];

		close(pipefd[0]);
		err = drop_privileges(mode);
		if (err)
			_exit(3);
		run_steps(r, sysconf(_SC_PAGESIZE));
		_exit(write(pipefd[1], r, sizeof(r)) == sizeof(r) ? 0 : 4);
	}
	close(pipefd[1]);
	err = read(pipefd[0], res, S_COUNT * sizeof(int)) == S_COUNT * sizeof(int) ? 0 : -EIO;
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -ECHILD;
	return err;
}

FIXTURE(priv) {
	int fd;
	struct kpprof_config saved;
};

FIXTURE_SETUP(priv)
{
	struct kpprof_config cfg;

	self->fd = dev__open();
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(-self->fd));
	ASSERT_EQ(0, dev__get_config(self->fd, &self->saved));
	dev__test_config(&cfg);
	ASSERT_EQ(0, dev__set_config(self->fd, &cfg));
}

FIXTURE_TEARDOWN(priv)
{
	EXPECT_EQ(0, dev__set_config(self->fd, &self->saved));
	close(self->fd);
}

static void expect_unprivileged(struct __test_metadata *_metadata, const int *res)
{
	static const int want[S_COUNT] = {
		[S_OPEN] = 0, [S_INFO] = 0, [S_GET_CONFIG] = 0,
		[S_FORMAT_PROBE] = -ENOSPC, [S_WRITE] = 0, [S_MAP_CONFIG] = 0,
		[S_ATTACH] = -EPERM, [S_SET_CONFIG] = -EPERM, [S_ADVANCE] = -EPERM,
		[S_STATS] = -EPERM, [S_MAP_CONSUMER] = -EPERM,
		[S_MAP_PRODUCER] = -EPERM,
	};

	for (int i = 0; i < S_COUNT; i++) {
		EXPECT_EQ(want[i], res[i]) TH_LOG("step %s", step_name[i]);
	}
}

TEST_F(priv, nobody_denied)
{
	int res[S_COUNT];

	ASSERT_EQ(0, in_child(AS_NOBODY, res));
	expect_unprivileged(_metadata, res);
}

TEST_F(priv, root_without_capabilities_denied)
{
	int res[S_COUNT];

	ASSERT_EQ(0, in_child(AS_ROOT_NO_CAPS, res));
	expect_unprivileged(_metadata, res);
}

TEST_F(priv, cap_perfmon_alone_suffices)
{
	int res[S_COUNT];

	ASSERT_EQ(0, in_child(AS_NOBODY_PERFMON, res));
	for (int i = 0; i < S_COUNT; i++) {
		int want = i == S_FORMAT_PROBE ? -ENOSPC : 0;

		EXPECT_EQ(want, res[i]) TH_LOG("step %s", step_name[i]);
	}
}

TEST_F(priv, second_consumer_ebusy)
{
	int a = dev__open(), b = dev__open(), c;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, dev__ioctl(a, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	EXPECT_EQ(-EBUSY, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	/* a dup of the consumer's fd is the same file, still the consumer */
	c = dup(a);
	ASSERT_LE(0, c);
	EXPECT_EQ(-EBUSY, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(a);
	EXPECT_EQ(-EBUSY, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(c);	/* the last reference: the file is released */
	EXPECT_EQ(0, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(b);
}

/* The consumer's mapping keeps its file: no second consumer until munmap. */
TEST_F(priv, mapped_consumer_stays_until_munmap)
{
	struct ring_reader rr;
	int a = dev__open(), b = dev__open();

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, ring_reader__attach(&rr, a));
	close(a);
	EXPECT_EQ(-EBUSY, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	ring_reader__unmap(&rr);
	EXPECT_EQ(0, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(b);
}

/* A process that dies attached frees the slot. */
TEST_F(priv, dead_consumer_frees_slot)
{
	int status, b;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ring_reader rr;
		int a = dev__open();

		_exit(a < 0 || ring_reader__attach(&rr, a) ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	b = dev__open();
	ASSERT_LE(0, b);
	EXPECT_EQ(0, dev__ioctl(b, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(b);
}

/*
 * A consumer in a pid namespace of its own is refused (EXDEV): records
 * carry the initial namespace's pids, which it would take for its own
 * processes.  The same file then attaches from the initial namespace, so
 * the refusal attached nothing.
 */
TEST_F(priv, consumer_in_child_pid_ns_exdev)
{
	int fd = dev__open(), status, res = 1;
	int p[2];
	pid_t pid;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		pid_t inner;
		int r = -EINVAL, st;

		close(p[0]);
		/* the caller stays where it is; its next child is pid 1 of the new one */
		if (unshare(CLONE_NEWPID)) {
			r = -errno;
		} else {
			inner = fork();
			if (inner == 0)
				_exit(getpid() == 1 &&
				      dev__ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH, NULL) == -EXDEV ? 0 : 3);
			if (inner < 0 || waitpid(inner, &st, 0) != inner)
				r = -ECHILD;
			else
				r = WIFEXITED(st) ? WEXITSTATUS(st) : 4;
		}
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 2);
	}
	close(p[1]);
	ASSERT_EQ(sizeof(res), read(p[0], &res, sizeof(res)));
	close(p[0]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(0, res) TH_LOG("unshare/fork -errno, or 3: the attach in the new namespace was not EXDEV");
	EXPECT_EQ(0, dev__ioctl(fd, KPPROF_IOC_CONSUMER_ATTACH, NULL));
	close(fd);
}

TEST_F(priv, config_page_never_writable)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, page, PROT_WRITE, MAP_SHARED, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* not even a private copy-on-write view */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	/* VM_MAYWRITE must be gone: mprotect cannot add write later */
	EXPECT_EQ(-1, mprotect(p, page, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	munmap(p, page);
}

TEST_F(priv, ring_never_writable)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ring_reader rr;
	int c = dev__open();
	void *p;

	ASSERT_LE(0, c);
	ASSERT_EQ(0, ring_reader__attach(&rr, c));
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, c,
		 KPPROF_PGOFF_PRODUCER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, mprotect(rr.prod_map, rr.prod_map_len, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	/* and the data pages alone, in the middle of the mapping */
	EXPECT_EQ(-1, mprotect((char *)rr.prod_map + page, page, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	ring_reader__unmap(&rr);
	close(c);
}

/* A file that is not the consumer cannot map ring pages, even as root. */
TEST_F(priv, ring_pages_only_for_consumer)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ring_reader rr;
	int c = dev__open();
	void *p;

	ASSERT_LE(0, c);
	/* no consumer at all */
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, KPPROF_PGOFF_PRODUCER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* another file is the consumer */
	ASSERT_EQ(0, ring_reader__attach(&rr, c));
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 KPPROF_PGOFF_CONSUMER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, self->fd, KPPROF_PGOFF_PRODUCER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	ring_reader__unmap(&rr);
	close(c);
}

/*
 * Mappings of the wrong size or place are malformed arguments (EINVAL):
 * the config and consumer pages are one page each, the producer mapping
 * at most a page plus twice the ring, nothing lies past it.
 */
TEST_F(priv, mapping_geometry_einval)
{
	long page = sysconf(_SC_PAGESIZE);
	struct kpprof_info info;
	struct ring_reader rr;
	int c = dev__open();
	void *p;

	ASSERT_LE(0, c);
	ASSERT_EQ(0, dev__info(c, &info));
	ASSERT_EQ(0, ring_reader__attach(&rr, c));
	p = mmap(NULL, 2 * page, PROT_READ, MAP_SHARED, c, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, c,
		 KPPROF_PGOFF_CONSUMER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* a private consumer page would never reach the kernel */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, c,
		 KPPROF_PGOFF_CONSUMER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, page + 2 * info.ring_size + page, PROT_READ, MAP_SHARED, c,
		 KPPROF_PGOFF_PRODUCER * page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, c, (off_t)page << 20);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	ring_reader__unmap(&rr);
	close(c);
}

struct churn {
	volatile int stop;
	unsigned long ok, dropped, other;
};

static void *churn_write(void *p)
{
	struct churn *ch = p;
	unsigned char buf[KPP_REC_BUF_MAX];
	int fd = dev__open();

	while (fd >= 0 && !ch->stop) {
		int err = dev__write(fd, buf, rec_build__alloc(buf, 16, ch->ok));

		if (err == 0)
			ch->ok++;
		else if (err == -ENOBUFS)
			ch->dropped++;
		else
			ch->other++;
	}
	if (fd >= 0)
		close(fd);
	return NULL;
}

/*
 * Consumers come and go (attach, map, read a little, unmap, close) while
 * producers keep writing: the ring stays well-formed for each new
 * consumer and producers only ever see success or ENOBUFS.  vm-run fails
 * the run on any oops or warning this provokes.
 */
TEST_F_TIMEOUT(priv, consumer_churn_under_load, 90)
{
	struct churn ch = { 0 };
	pthread_t th[2];
	int round, i;

	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_write, &ch));
	for (round = 0; round < 25; round++) {
		struct ring_reader rr;
		int c = dev__open(), k;

		ASSERT_LE(0, c);
		ASSERT_EQ(0, ring_reader__attach(&rr, c)) TH_LOG("round %d", round);
		for (k = 0; k < 3; k++) {
			ASSERT_LE(0, ring_reader__drain(&rr)) TH_LOG("round %d: ring broken", round);
			usleep(2000);
		}
		ring_reader__unmap(&rr);
		close(c);
	}
	ch.stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	TH_LOG("%lu written, %lu dropped", ch.ok, ch.dropped);
	EXPECT_EQ(0, ch.other);
	EXPECT_LT(0, ch.ok);
}

/* poll on a file that is not the consumer never reports data. */
TEST_F(priv, poll_not_consumer_no_pollin)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	unsigned char buf[KPP_REC_BUF_MAX];

	ASSERT_EQ(0, dev__write(self->fd, buf, rec_build__alloc(buf, 2, 1)));
	ASSERT_LE(0, poll(&pfd, 1, 0));
	EXPECT_EQ(0, pfd.revents & POLLIN);
}

TEST_HARNESS_MAIN
