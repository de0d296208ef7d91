// SPDX-License-Identifier: GPL-2.0
/*
 * pring_identity_test: a producer ring's records are stamped with the
 * identity of the process that mapped it, so nobody else may write in it.
 * A ring lives in an mm, not in a process: a child made with CLONE_VM (no
 * CLONE_THREAD) has a tgid of its own and the same address space.  If it
 * maps a ring and then execs another program, its old address space, with
 * the ring, stays with the parent, which could then write records the
 * kernel stamps with the tgid of that other program (a setuid one, say),
 * whose comm and ppid a COMM record would even read live.
 *   - a ring mapped by such a child delivers nothing as that child once the
 *     parent writes in it after the child's exec (counted, not delivered);
 *   - nor does a ring whose mm comes to be shared after the mmap, when the
 *     mapper execs and the other process writes in its old mm;
 *   - a process that shares its mm with another process cannot map a ring
 *     (EBUSY: it falls back to SUBMIT, which stamps the caller);
 *   - a vfork child, whose parent's threads run in its mm, cannot either.
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

CONSUMER_FIXTURE(pi)

#define STACK_SIZE	(256 * 1024)
#define MARK		0x4b505052ULL	/* bytes of the parent's records */

/* Written by the CLONE_VM child, read by its parent: one address space. */
static struct pring vm_ring;
static int vm_map_err;
static int vm_pipe[2];		/* O_CLOEXEC: EOF at the child's exec */

static int vm_child(void *arg)
{
	int fd = dev__open();
	char ok = 'm';

	(void)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	vm_map_err = fd < 0 ? fd : pring__map(&vm_ring, fd);
	if (vm_map_err)
		ok = 'f';
	if (write(vm_pipe[1], &ok, 1) != 1 || vm_map_err)
		_exit(80);
	/* the mapping stays in the shared mm; the child becomes sleep */
	execl("/bin/sleep", "sleep", "60", (char *)NULL);
	_exit(81);
}

/* records of kind @kind stamped with @tgid in the consumer's ring now */
static int count_stamped(struct ring_reader *rr, __u32 tgid, __u32 kind,
			 __u64 *other)
{
	const struct kpprof_record *rec;
	__u32 len;
	int n = 0;

	while (ring_reader__peek(rr, &rec, &len) == 1) {
		if (rec->tgid == tgid && rec->kind == kind)
			n++;
		else if (rec->tgid == tgid)
			(*other)++;
		ring_reader__consume(rr);
	}
	return n;
}

TEST_F_TIMEOUT(pi, clone_vm_child_exec_cannot_lend_its_tgid, 60)
{
	char *stack = malloc(STACK_SIZE);
	unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
	__u64 other = 0;
	pid_t pid;
	char ch;
	int n, status;

	ASSERT_NE(NULL, stack);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, pipe2(vm_pipe, O_CLOEXEC));
	pid = clone(vm_child, stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	ASSERT_LT(0, pid);
	close(vm_pipe[1]);
	ASSERT_EQ(1, read(vm_pipe[0], &ch, 1));
	/* with the fix the child's mmap may already be refused: also fine */
	if (ch == 'm') {
		/* EOF: the child has exec'd sleep, in an mm of its own */
		ASSERT_EQ(0, read(vm_pipe[0], &ch, 1));
		/* the parent writes in the ring the child mapped */
		for (int i = 0; i < 10; i++) {
			size_t len = rec_build__alloc(buf, 4, i);

			((struct kpprof_rec_alloc *)buf)->bytes = MARK;
			ASSERT_EQ(0, pring__write(&vm_ring, buf, len));
		}
		ASSERT_EQ(0, ioctl(self->e.cfd, KPPROF_IOC_DRAIN));
		n = count_stamped(&self->e.rr, pid, KPPROF_REC_ALLOC, &other);
		TH_LOG("records stamped as pid %d (now /bin/sleep): %d ALLOC, %llu other",
		       pid, n, (unsigned long long)other);
		EXPECT_EQ(0, n);
		EXPECT_EQ(0, other);
	} else {
		TH_LOG("the CLONE_VM child's mmap: %s", strerror(-vm_map_err));
		EXPECT_EQ(-EBUSY, vm_map_err);
	}
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(vm_pipe[0]);
	free(buf);
}

/* a child with CLONE_VM that maps nothing: the parent then shares its mm */
static int idle_child(void *arg)
{
	(void)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	pause();
	return 0;
}

TEST_F(pi, shared_mm_cannot_map)
{
	char *stack = malloc(STACK_SIZE);
	struct pring p;
	pid_t pid;
	int fd = dev__open(), status;

	ASSERT_NE(NULL, stack);
	ASSERT_LE(0, fd);
	pid = clone(idle_child, stack + STACK_SIZE, CLONE_VM | SIGCHLD, NULL);
	ASSERT_LT(0, pid);
	EXPECT_EQ(-EBUSY, pring__map(&p, fd));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(fd);
}

TEST_F(pi, vfork_child_cannot_map)
{
	static volatile int err;
	struct pring p;
	int fd = dev__open();
	pid_t pid;

	ASSERT_LE(0, fd);
	err = 1;
	pid = vfork();
	if (!pid) {
		err = pring__map(&p, fd);
		_exit(0);
	}
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, NULL, 0));
	EXPECT_EQ(-EBUSY, err);
	close(fd);
}

/*
 * The mm comes to be shared after the mmap: the mapper M clones G with
 * CLONE_VM, then execs sleep; G, in M's old mm, writes in the ring M
 * mapped.  Nothing may come out stamped with M's tgid.
 */
static struct pring late_ring;
static int late_exec[2];	/* O_CLOEXEC, made in M: EOF at M's exec */
static int late_up[2];		/* G -> the test */

static int late_writer(void *arg)
{
	unsigned char *buf = arg;
	char ch;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(late_exec[1]);
	if (read(late_exec[0], &ch, 1) != 0)
		_exit(80);
	for (int i = 0; i < 10; i++) {
		size_t len = rec_build__alloc(buf, 4, i);

		((struct kpprof_rec_alloc *)buf)->bytes = MARK;
		if (pring__write(&late_ring, buf, len))
			_exit(81);
	}
	if (write(late_up[1], "w", 1) != 1)
		_exit(82);
	pause();
	_exit(0);
}

TEST_F_TIMEOUT(pi, mm_shared_after_mmap_delivers_nothing, 60)
{
	__u64 other = 0;
	pid_t m, g = 0;
	int n, status;
	char ch = 0;

	ASSERT_EQ(0, pipe(late_up));
	m = fork();
	ASSERT_LE(0, m);
	if (!m) {
		char *stack = malloc(STACK_SIZE);
		unsigned char *buf = calloc(1, KPP_REC_BUF_MAX);
		int fd = dev__open();

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (!stack || !buf || fd < 0 || pring__map(&late_ring, fd) ||
		    pipe2(late_exec, O_CLOEXEC))
			_exit(80);
		g = clone(late_writer, stack + STACK_SIZE, CLONE_VM | SIGCHLD, buf);
		if (g < 0)
			_exit(81);
		execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(82);
	}
	close(late_up[1]);
	ASSERT_EQ(1, read(late_up[0], &ch, 1)) TH_LOG("the writer never wrote");
	ASSERT_EQ('w', ch);
	ASSERT_EQ(0, ioctl(self->e.cfd, KPPROF_IOC_DRAIN));
	n = count_stamped(&self->e.rr, m, KPPROF_REC_ALLOC, &other);
	TH_LOG("records stamped as pid %d (now /bin/sleep): %d ALLOC, %llu other",
	       m, n, (unsigned long long)other);
	EXPECT_EQ(0, n);
	EXPECT_EQ(0, other);
	/* G dies with M (PDEATHSIG), M with the kill */
	kill(m, SIGKILL);
	ASSERT_EQ(m, waitpid(m, &status, 0));
	close(late_up[0]);
}

TEST_HARNESS_MAIN
