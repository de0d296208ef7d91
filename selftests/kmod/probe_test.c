// SPDX-License-Identifier: GPL-2.0
/*
 * probe_test: the seccomp probe (ioctl/kpprof.h, KPPROF_PGOFF_SECCOMP_PROBE;
 * kmod/probe.c), a question about the calling thread's seccomp filter that
 * is a page fault, not a syscall:
 *   - what GET_INFO advertises;
 *   - the mappings it refuses: MAP_PRIVATE, PROT_WRITE, PROT_EXEC, a
 *     length or offset other than the advertised ones; and what it
 *     refuses later: mprotect() to write or execute, mremap() to grow; a
 *     read-only file may map it;
 *   - the answer: 0 before the thread installs a filter, non-zero after
 *     (a filter that allows everything is enough to set the mode);
 *   - alternation: a read of the page mapped last is no new answer (it
 *     repeats the last fault's: unfiltered after the filter went in), a
 *     read of the other page is;
 *   - a fork child has the mapping at the same address, with neither page
 *     mapped in (the page its parent read last, unfiltered, answers
 *     "filtered" in a child that installed a filter), and gets its own
 *     answers (its filter, not its parent's), as does a filtered
 *     process's child;
 *   - a mapping moved by mremap() or cut by munmap() keeps answering;
 *   - the answer is the thread group's: a filter installed by one thread
 *     without TSYNC makes another thread's fault answer non-zero, and the
 *     page that fault mapped non-zero for the filtered thread (a fault of
 *     an unfiltered thread mapped 0 there, which the filtered thread then
 *     read as its own answer); so does a thread created later by an
 *     unfiltered one; with TSYNC, another thread reads non-zero.
 * Each test that installs a filter does it in a child process, so the
 * harness's other tests run unfiltered.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kpp_dev.h"

FIXTURE(probe) {
	int fd;
	long page;
	off_t off;
	size_t len;
};

FIXTURE_SETUP(probe)
{
	struct kpprof_info info;

	self->fd = dev__open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, dev__info(self->fd, &info));
	ASSERT_TRUE(info.features & KPPROF_FEAT_SECCOMP_PROBE);
	/* the group answer the tests below expect */
	ASSERT_TRUE(info.features & KPPROF_FEAT_SECCOMP_PROBE_GROUP);
	self->page = sysconf(_SC_PAGESIZE);
	self->off = (off_t)(info.probe_pgoff * info.page_size);
	self->len = info.probe_map_len;
}

FIXTURE_TEARDOWN(probe)
{
	close(self->fd);
}

static int map_errno(int fd, size_t len, int prot, int flags, off_t off)
{
	void *m = mmap(NULL, len, prot, flags, fd, off);

	if (m != MAP_FAILED) {
		munmap(m, len);
		return 0;
	}
	return -errno;
}

/* page @i's first word */
static unsigned int ask(const void *m, long page, int i)
{
	return *(const volatile unsigned int *)((const char *)m + i * page);
}

/* allow everything: enough to leave SECCOMP_MODE_DISABLED */
static int allow_all(unsigned int flags)
{
	struct sock_filter insn[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 1, .filter = insn };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

TEST_F(probe, advertised)
{
	EXPECT_EQ(KPPROF_PGOFF_SECCOMP_PROBE * self->page, self->off);
	EXPECT_EQ(2 * (size_t)self->page, self->len);
}

TEST_F(probe, refused_mappings)
{
	int rofd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);

	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_PRIVATE, self->off));
	EXPECT_EQ(-EPERM, map_errno(self->fd, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
				    self->off));
	EXPECT_EQ(-EPERM, map_errno(self->fd, self->len, PROT_READ | PROT_EXEC, MAP_SHARED,
				    self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->page, PROT_READ, MAP_SHARED, self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, 3 * self->page, PROT_READ, MAP_SHARED, self->off));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED,
				     self->off + self->page));
	EXPECT_EQ(-EINVAL, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED,
				     self->off - self->page));
	/* any file may ask: a read-only one too */
	ASSERT_LE(0, rofd);
	EXPECT_EQ(0, map_errno(rofd, self->len, PROT_READ, MAP_SHARED, self->off));
	close(rofd);
	EXPECT_EQ(0, map_errno(self->fd, self->len, PROT_READ, MAP_SHARED, self->off));
}

TEST_F(probe, no_write_exec_or_growth_later)
{
	void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(-1, mprotect(m, self->len, PROT_READ | PROT_WRITE));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(-1, mprotect(m, self->len, PROT_READ | PROT_EXEC));
	EXPECT_EQ(EACCES, errno);
	EXPECT_EQ(MAP_FAILED, mremap(m, self->len, 2 * self->len, MREMAP_MAYMOVE));
	EXPECT_EQ(MAP_FAILED, mremap(m, self->len, 2 * self->len, 0));
	EXPECT_EQ(0, munmap(m, self->len));
}

/* run @fn in a child process; its exit status (0: all well) */
static int in_child(int (*fn)(const void *, long), const void *m, long page)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(m, page));
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * The answer before and after a filter, and the alternation: the page
 * mapped in last repeats its answer (no fault), the other one faults.
 */
static int before_and_after(const void *m, long page)
{
	if (ask(m, page, 0) != 0)
		return 1;
	if (ask(m, page, 1) != 0)
		return 2;
	if (allow_all(0))
		return 3;
	/* page 1 is mapped in: a re-read is no new answer */
	if (ask(m, page, 1) != 0)
		return 4;
	if (ask(m, page, 0) == 0)
		return 5;
	if (ask(m, page, 0) == 0)
		return 6;
	if (ask(m, page, 1) == 0)
		return 7;
	return 0;
}

TEST_F(probe, answer_before_and_after_a_filter)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, in_child(before_and_after, m, self->page));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

/*
 * A fork child: the mapping is there, and neither page is mapped in: the
 * page its parent mapped last (page 1, read unfiltered) faults again, so
 * it answers for the child, filtered by now.
 */
static int fork_child(const void *m, long page)
{
	if (allow_all(0))
		return 1;
	if (ask(m, page, 1) == 0)
		return 2;
	if (ask(m, page, 0) == 0)
		return 3;
	return 0;
}

static int fork_child_unfiltered(const void *m, long page)
{
	return ask(m, page, 1) != 0 || ask(m, page, 0) != 0;
}

TEST_F(probe, fork_child_has_it)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, ask(m, self->page, 0));
	EXPECT_EQ(0, ask(m, self->page, 1));
	EXPECT_EQ(0, in_child(fork_child, m, self->page));
	EXPECT_EQ(0, in_child(fork_child_unfiltered, m, self->page));
	/* the child's filter is not ours, nor were its faults in our PTEs */
	EXPECT_EQ(0, ask(m, self->page, 1));
	EXPECT_EQ(0, ask(m, self->page, 0));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

/* a filtered child's child: filtered too (filters are inherited) */
static int grandchild(const void *m, long page)
{
	pid_t pid;
	int status;

	if (allow_all(0))
		return 1;
	if (ask(m, page, 0) == 0)
		return 2;
	pid = fork();
	if (pid == 0)
		_exit(ask(m, page, 0) == 0 ? 1 : 0);	/* page 0 again: a fresh fault */
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 3;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 4;
}

TEST_F(probe, filter_inherited_by_fork_child)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, in_child(grandchild, m, self->page));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

struct thread_arg {
	const void *m;
	long page;
	pthread_barrier_t *filtered, *asked;
	unsigned int answer;
};

static void *other_thread(void *p)
{
	struct thread_arg *a = p;

	pthread_barrier_wait(a->filtered);
	a->answer = ask(a->m, a->page, 1);	/* page 0 was the filter's */
	pthread_barrier_wait(a->asked);
	return NULL;
}

/* TSYNC: the filter goes on every thread; the other thread's answer */
static int with_tsync(const void *m, long page)
{
	pthread_barrier_t b1, b2;
	struct thread_arg a = { m, page, &b1, &b2, 99 };
	pthread_t th;

	pthread_barrier_init(&b1, NULL, 2);
	pthread_barrier_init(&b2, NULL, 2);
	if (pthread_create(&th, NULL, other_thread, &a))
		return 1;
	if (allow_all(SECCOMP_FILTER_FLAG_TSYNC) < 0)
		return 2;
	if (ask(m, page, 0) == 0)
		return 3;
	pthread_barrier_wait(&b1);
	pthread_barrier_wait(&b2);
	pthread_join(th, NULL);
	if (a.answer == 0)
		return 4;
	/* and this thread, asking again after the other: still filtered */
	if (ask(m, page, 0) == 0)
		return 5;
	return 0;
}

TEST_F(probe, tsync_filter_answers_for_every_thread)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, in_child(with_tsync, m, self->page));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

/*
 * Without TSYNC: one thread (the filtered one, F) installs a filter,
 * another (U) has none.  Lock-step, one read at a time, so which page
 * is mapped before each read is known (exactly one after any fault):
 *   F reads page 0: F's fault, non-zero;
 *   U reads page 1: U's fault, answered for the thread group: non-zero;
 *   F reads page 1: no fault, the answer U's fault mapped: non-zero (a
 *     fault answered for U alone mapped 0 there, and F, filtered, read
 *     "no filter": what let the shim make a syscall F's filter forbids);
 *   U reads page 0: U's fault again, non-zero;
 *   a thread U creates (no filter: it copies U's, not F's) reads page 1:
 *     its fault, non-zero.
 * Each step's answer goes into steps[]; 99 means the step never ran.
 */
enum { G_F0, G_U1, G_F1, G_U0, G_NEW1, G_STEPS };

struct group_arg {
	const void *m;
	long page;
	pthread_barrier_t b;
	unsigned int steps[G_STEPS];
};

static void *group_new_thread(void *p)
{
	struct group_arg *a = p;

	a->steps[G_NEW1] = ask(a->m, a->page, 1);
	return NULL;
}

static void *group_unfiltered(void *p)
{
	struct group_arg *a = p;
	pthread_t th;

	pthread_barrier_wait(&a->b);		/* F filtered, F read page 0 */
	a->steps[G_U1] = ask(a->m, a->page, 1);
	pthread_barrier_wait(&a->b);		/* U read page 1 */
	pthread_barrier_wait(&a->b);		/* F read page 1 */
	a->steps[G_U0] = ask(a->m, a->page, 0);
	if (pthread_create(&th, NULL, group_new_thread, a) == 0)
		pthread_join(th, NULL);
	return NULL;
}

static int group_without_tsync(const void *m, long page)
{
	struct group_arg a = { .m = m, .page = page };
	pthread_t th;
	int ret = 0;

	for (int i = 0; i < G_STEPS; i++)
		a.steps[i] = 99;
	pthread_barrier_init(&a.b, NULL, 2);
	/* unfiltered, and page 1 left mapped: the next read of 0 faults */
	if (ask(m, page, 0) != 0 || ask(m, page, 1) != 0)
		return 1;
	if (pthread_create(&th, NULL, group_unfiltered, &a))
		return 2;
	if (allow_all(0) < 0)
		return 3;
	a.steps[G_F0] = ask(m, page, 0);
	pthread_barrier_wait(&a.b);
	pthread_barrier_wait(&a.b);
	a.steps[G_F1] = ask(m, page, 1);
	pthread_barrier_wait(&a.b);
	pthread_join(th, NULL);
	for (int i = 0; i < G_STEPS; i++) {
		if (a.steps[i] == 0 || a.steps[i] == 99) {
			/* the first step that answered wrong, and what */
			fprintf(stderr, "# step %d answered %u\n", i, a.steps[i]);
			if (!ret)
				ret = 10 + i;
		}
	}
	return ret;
}

TEST_F(probe, group_answer_without_tsync)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(0, in_child(group_without_tsync, m, self->page));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

/* moved by mremap or cut by munmap: the other page is found, or absent */
TEST_F(probe, moved_and_cut)
{
	void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);
	void *hole = mmap(NULL, self->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *n;

	ASSERT_NE(MAP_FAILED, m);
	ASSERT_NE(MAP_FAILED, hole);
	EXPECT_EQ(0, ask(m, self->page, 0));
	n = mremap(m, self->len, self->len, MREMAP_MAYMOVE | MREMAP_FIXED, hole);
	ASSERT_EQ(hole, n);
	EXPECT_EQ(0, ask(n, self->page, 1));
	EXPECT_EQ(0, munmap((char *)n + self->page, self->page));
	EXPECT_EQ(0, ask(n, self->page, 0));
	EXPECT_EQ(0, munmap(n, self->page));
}

/*
 * Concurrent faults, as two threads of one process asking at once: the
 * two faults' zaps and inserts must not interleave into both pages
 * mapped, or no later read faults again and every answer is frozen (a
 * filter installed afterwards would never show).  Unfiltered threads
 * race; then this thread installs a filter and asks alternately: after
 * the first read (which may repeat the last answer) each must fault.
 */
static const void *race_m;
static long race_page;
static _Atomic unsigned int race_reads;
static _Atomic int race_stop;

static void *race_thread(void *p)
{
	(void)p;
	while (!atomic_load_explicit(&race_stop, memory_order_relaxed)) {
		unsigned int n = atomic_fetch_add(&race_reads, 1);

		ask(race_m, race_page, (int)(n & 1));
	}
	return NULL;
}

static int concurrent(const void *m, long page)
{
	pthread_t th[2];

	race_m = m;
	race_page = page;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, race_thread, NULL))
			return 1;
	usleep(3000000);
	atomic_store(&race_stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (allow_all(0))
		return 2;
	ask(m, page, 0);
	for (int i = 1; i < 4; i++)
		if (ask(m, page, i & 1) == 0)
			return 10 + i;
	return 0;
}

TEST_F(probe, concurrent_faults_keep_answering)
{
	const void *m = mmap(NULL, self->len, PROT_READ, MAP_SHARED, self->fd, self->off);

	ASSERT_NE(MAP_FAILED, m);
	for (int round = 0; round < 5; round++)
		ASSERT_EQ(0, in_child(concurrent, m, self->page));
	EXPECT_EQ(0, munmap((void *)m, self->len));
}

TEST_HARNESS_MAIN
