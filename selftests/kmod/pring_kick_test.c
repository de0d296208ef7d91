// SPDX-License-Identifier: GPL-2.0
/*
 * pring_kick_test: who a KPPROF_IOC_KICK drains, now that it finds the
 * kicker's rings by mm (kpp_dev.prings_by_mm), as a hostile local user
 * would probe it:
 *   - a file passed over SCM_RIGHTS: its ring is the mapper's, whoever
 *     opened the file; the opener's kick drains none of it, and once the
 *     mapper exits (its mm gone, the opener still holding the file) no
 *     kick drains it, the opener's nor a new process's: it drains when the
 *     file is released;
 *   - after exec, the new image's kick drains none of the rings its old
 *     mm mapped (the descriptor survived the exec);
 *   - one mm holding as many rings as its uid may: one kick drains them
 *     all, in a time reported here (the mutex is held that long);
 *   - rings created and closed by threads and processes while others
 *     kick: every ring is freed in the end (for KASAN and lockdep on the
 *     debug kernel: a ring freed while still in the table is a
 *     use-after-free at the next kick).
 * No consumer attached: only kicks and releases drain.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "consumer_fixture.h"
#include "pring.h"
#include "tally.h"

CONSUMER_FIXTURE(kick)

#define EXEC_ENV	"PRING_KICK_TEST_FD"

static __u64 drained(struct __test_metadata *_metadata, int cfd)
{
	struct kpprof_stats st;

	EXPECT_EQ(0, dev__stats(cfd, &st));
	return st.pring_drained;
}

static int kick(int fd)
{
	return ioctl(fd, KPPROF_IOC_KICK) ? -errno : 0;
}

static void detach(struct __test_metadata *_metadata, struct consumer_env *e)
{
	ring_reader__unmap(&e->rr);
	ASSERT_EQ(0, dev__ioctl(e->cfd, KPPROF_IOC_CONSUMER_DETACH, NULL));
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

static char say_hear(int sock, char say)
{
	char ch = 0;

	if (say && write(sock, &say, 1) != 1)
		return 0;
	if (read(sock, &ch, 1) != 1)
		return 0;
	return ch;
}

/* the mapper of a file it received: 4 records, a kick on 'k', 4 more */
static int scm_mapper(int sock)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p;
	int fd, j;

	fd = recv_fd(sock);
	if (!buf || fd < 0 || pring__map(&p, fd))
		return 1;
	for (j = 0; j < 4; j++)
		if (pring__write(&p, buf, tally__rec(buf, j)))
			return 2;
	if (say_hear(sock, 'm') != 'k')
		return 3;
	if (kick(fd))
		return 4;
	for (j = 0; j < 4; j++)
		if (pring__write(&p, buf, tally__rec(buf, j)))
			return 5;
	if (say_hear(sock, 'd') != 'x')
		return 6;
	return 0;	/* exits with the ring mapped: its mm goes */
}

TEST_F(kick, scm_rights_ring_is_the_mappers)
{
	struct pring mine;
	int sv[2], fd, status;
	__u64 d0, d1;
	pid_t pid, grandchild;

	detach(_metadata, &self->e);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(sv[0]);
		_exit(scm_mapper(sv[1]));
	}
	close(sv[1]);
	fd = dev__open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, send_fd(sv[0], fd));
	ASSERT_EQ('m', say_hear(sv[0], 0));

	d0 = drained(_metadata, self->e.cfd);
	ASSERT_EQ(0, kick(fd));
	ASSERT_EQ(0, kick(self->e.pfd));
	d1 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(0, d1 - d0) TH_LOG("the opener's kick drained the mapper's ring");
	EXPECT_EQ(-EBUSY, pring__map(&mine, fd))
		TH_LOG("the opener mapped the mapper's ring");

	ASSERT_EQ('d', say_hear(sv[0], 'k'));
	d0 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(4, d0 - d1) TH_LOG("the mapper's kick drains its ring");

	/* the mapper exits with 4 records in; the opener keeps the file */
	ASSERT_EQ(1, write(sv[0], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(0, kick(fd));
	grandchild = fork();
	ASSERT_LE(0, grandchild);
	if (!grandchild)
		_exit(kick(fd) ? 1 : 0);
	ASSERT_EQ(grandchild, waitpid(grandchild, &status, 0));
	ASSERT_EQ(0, status);
	d1 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(0, d1 - d0)
		TH_LOG("a kick drained a ring whose mapper is gone");
	close(fd);
	d0 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(4, d0 - d1) TH_LOG("the file's release drains the ring");
	close(sv[0]);
}

/* the exec'd image (see main): kick, report, wait, exit */
static void __attribute__((constructor)) exec_image(void)
{
	const char *env = getenv(EXEC_ENV);
	int fd, sock;

	if (!env || sscanf(env, "%d,%d", &fd, &sock) != 2)
		return;
	if (kick(fd))
		_exit(10);
	if (say_hear(sock, 'e') != 'x')
		_exit(11);
	_exit(0);
}

TEST_F(kick, exec_leaves_old_rings_unkicked)
{
	char env[64];
	int sv[2], fd, status;
	__u64 d0, d1;
	pid_t pid;

	detach(_metadata, &self->e);
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	d0 = drained(_metadata, self->e.cfd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
		struct pring p;
		int j;

		close(sv[0]);
		/* without O_CLOEXEC, so that the file survives the exec */
		fd = dev__open();
		if (!buf || fd < 0 || pring__map(&p, fd) ||
		    fcntl(fd, F_SETFD, 0))
			_exit(1);
		for (j = 0; j < 4; j++)
			if (pring__write(&p, buf, tally__rec(buf, j)))
				_exit(2);
		snprintf(env, sizeof(env), "%d,%d", fd, sv[1]);
		setenv(EXEC_ENV, env, 1);
		execl("/proc/self/exe", "pring_kick_test", (char *)NULL);
		_exit(3);
	}
	close(sv[1]);
	ASSERT_EQ('e', say_hear(sv[0], 0));
	d1 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(0, d1 - d0)
		TH_LOG("the new image's kick drained its old mm's ring");
	ASSERT_EQ(1, write(sv[0], "x", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	d0 = drained(_metadata, self->e.cfd);
	EXPECT_EQ(4, d0 - d1) TH_LOG("the file's release drains the ring");
	close(sv[0]);
}

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define MANY_MAX	8192

/*
 * As many rings as one mm can hold (its uid's pring_uid_max, or the
 * global cap): one kick drains every one of them.  The kick's time with
 * a record in each, and with all empty, is reported: it holds prings_lock
 * that long, and it depends on the kicker's own rings only.
 */
TEST_F_TIMEOUT(kick, many_rings_one_mm, 300)
{
	struct pring *p = calloc(MANY_MAX, sizeof(*p));
	int *fd = calloc(MANY_MAX, sizeof(*fd));
	struct rlimit rl = { MANY_MAX + 64, MANY_MAX + 64 };
	double t0, full_ns, empty_ns = 0;
	int n, i, err = 0;
	__u64 d0, d1;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, fd);
	detach(_metadata, &self->e);
	setrlimit(RLIMIT_NOFILE, &rl);
	for (n = 0; n < MANY_MAX; n++) {
		fd[n] = dev__open();
		if (fd[n] < 0) {
			err = fd[n];
			break;
		}
		err = pring__map(&p[n], fd[n]);
		if (err) {
			close(fd[n]);
			break;
		}
		ASSERT_EQ(0, pring__write(&p[n], self->e.buf,
					  tally__rec(self->e.buf, n)));
	}
	TH_LOG("%d rings in one mm (then %s)", n, strerror(-err));
	ASSERT_LT(8, n);
	d0 = drained(_metadata, self->e.cfd);
	t0 = mono_ns();
	ASSERT_EQ(0, kick(self->e.pfd));
	full_ns = mono_ns() - t0;
	d1 = drained(_metadata, self->e.cfd);
	EXPECT_EQ((__u64)n, d1 - d0) TH_LOG("one kick drains every ring");
	for (i = 0; i < 16; i++) {
		t0 = mono_ns();
		ASSERT_EQ(0, kick(self->e.pfd));
		empty_ns += mono_ns() - t0;
	}
	TH_LOG("kick over %d rings: %.0f us with a record in each, %.0f us all empty",
	       n, full_ns / 1e3, empty_ns / 16 / 1e3);
	for (i = 0; i < n; i++) {
		pring__unmap(&p[i]);
		close(fd[i]);
	}
	free(p);
	free(fd);
}

struct churn {
	volatile int stop;
	int pfd;
	long kicks, rings;
};

static void *churn_rings(void *arg)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct churn *c = arg;
	struct pring p;
	int fd;

	while (buf && !c->stop) {
		fd = dev__open();
		if (fd < 0)
			continue;
		if (!pring__map(&p, fd)) {
			pring__write(&p, buf, tally__rec(buf, 1));
			pring__unmap(&p);
			__atomic_add_fetch(&c->rings, 1, __ATOMIC_RELAXED);
		}
		close(fd);
	}
	free(buf);
	return NULL;
}

static void *churn_kicks(void *arg)
{
	struct churn *c = arg;

	while (!c->stop) {
		kick(c->pfd);
		__atomic_add_fetch(&c->kicks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* a process that maps rings, kicks, and exits with them mapped */
static int churn_child(int pfd)
{
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	struct pring p[4];
	int i, fd;

	for (i = 0; buf && i < 4; i++) {
		fd = dev__open();
		if (fd < 0 || pring__map(&p[i], fd))
			return 0;
		pring__write(&p[i], buf, tally__rec(buf, i));
		kick(pfd);
	}
	return 0;
}

TEST_F_TIMEOUT(kick, churn_while_kicking, 120)
{
	struct churn c = { .pfd = self->e.pfd };
	pthread_t t[4];
	struct kpprof_stats st0, st;
	double end;
	int i, status, forks = 0;
	pid_t pid;

	detach(_metadata, &self->e);
	ASSERT_EQ(0, dev__stats(self->e.cfd, &st0));
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn_rings, &c));
	for (; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn_kicks, &c));
	end = mono_ns() + 3e9;
	while (mono_ns() < end) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(churn_child(self->e.pfd));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		forks++;
	}
	c.stop = 1;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	TH_LOG("%ld rings by threads, %d processes of 4, %ld kicks", c.rings,
	       forks, c.kicks);
	EXPECT_LT(0, c.rings);
	EXPECT_LT(0, c.kicks);
	/* every file is closed: no ring is left (no consumer: none refused) */
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, dev__stats(self->e.cfd, &st));
		if (st.pring_count == st0.pring_count)
			break;
		usleep(50000);
	}
	EXPECT_EQ(st0.pring_count, st.pring_count);
}

TEST_HARNESS_MAIN
