// SPDX-License-Identifier: GPL-2.0
/*
 * safety_workload: the shim's statistics and safety cases (issue 8), one
 * scenario per run, under LD_PRELOAD=libkpprof.so.  stdout: "ok ..." or
 * "fail ..."; stderr: what the checking script needs ("ADDR name p",
 * "STACK used N").  The scripts (safety_host_test.sh, safety_vm_test.sh)
 * judge the records the shim sent.
 *
 *   lockfirst N      N threads (64 at a time) each lock and unlock a mutex,
 *                    then malloc(4096) once (finding 2)
 *   rateswitch R [lock]  R rounds, 8 threads: at 512 KiB each thread
 *                    allocates one 65 MiB block (so its countdown is drawn
 *                    at 512 KiB), then at 64 MiB 4 MiB each in 4096-byte
 *                    blocks (after one lock call with "lock"); the rate is
 *                    written into the KPPROF_TEST_CONFIG file (host only;
 *                    finding 3)
 *   collide R        R rounds of waits on two mutexes whose wait-table
 *                    slots collide (finding 6)
 *   recursive R      R hand-offs of a recursive mutex locked twice; the
 *                    inner unlock must not count as one
 *   condwait R       R hand-offs made by pthread_cond_timedwait's unlock
 *   seccomp-prctl    install a seccomp allowlist without ioctl, write,
 *   seccomp-syscall  fstat, pipe2, mincore (prctl, or seccomp(2) with
 *                    TSYNC while a second thread allocates), then allocate
 *                    heavily; survive (finding 7)
 *   seccomp-exec     the same filter plus what a starting program needs,
 *                    then exec "seccomp-child": it starts filtered
 *   seccomp-full N [K]  N allocations into rings no one reads (run under
 *                    shim_reader --stall-until-signal), K failed execs
 *                    (two COMM records each), the filter (plus kill and
 *                    sigtimedwait), SIGUSR1 to the reader, its SIGUSR2
 *                    (drained), N allocations, exit: the NOTE went into a
 *                    full ring, and nothing may follow it
 *   dup2             put a regular file on the shim's /dev/kpprof number,
 *                    allocate; the file must stay empty
 *   dup2race MS      swap a regular file and the device on that number
 *                    for MS ms while two threads sample; the file must
 *                    stay empty
 *   fullring N       sample a block, N more allocations (the ring fills:
 *                    run under shim_reader --stall-until-signal), free
 *                    the block, SIGUSR1 to the parent (the reader), wait
 *                    for its SIGUSR2 (it has drained), allocate once more
 *   realloc-fail     a failed realloc of a sampled block
 *   forksig N        N forks from a SIGALRM handler while the main thread
 *                    samples every allocation; children exit(0) later
 *   altstack SIZE    a sampled malloc in a handler on a SIZE-byte
 *                    sigaltstack (guard page below); prints the stack used
 *   exec             execl a missing program (fails), then exec "alloc"
 *                    (exec wrappers: COMM EXEC first, START after a failure)
 *   alloc            one sampled-size malloc, then exit
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/types.h>
#include "kpprof.h"
#include "seccomp_allow.h"

static void *volatile sink;
static atomic_int stop_flag;

/* Use a block, then free it (the compiler may not drop the pair). */
static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

static void ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---------------------------------------------------------- lockfirst */

static pthread_mutex_t lf_lock = PTHREAD_MUTEX_INITIALIZER;

static void *lockfirst_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lf_lock);
	pthread_mutex_unlock(&lf_lock);
	keep(malloc(4096));
	return NULL;
}

static int do_lockfirst(int n)
{
	pthread_t t[64];

	for (int done = 0; done < n;) {
		int k = n - done < 64 ? n - done : 64;

		for (int i = 0; i < k; i++)
			if (pthread_create(&t[i], NULL, lockfirst_thread, NULL))
				return printf("fail pthread_create\n"), 1;
		for (int i = 0; i < k; i++)
			pthread_join(t[i], NULL);
		done += k;
	}
	printf("ok lockfirst %d\n", n);
	return 0;
}

/* ---------------------------------------------------------- rateswitch */

#define RS_THREADS 8
static pthread_barrier_t rs_bar;
static int rs_rounds, rs_lock;

static void *rateswitch_thread(void *arg)
{
	(void)arg;
	for (int r = 0; r < rs_rounds; r++) {
		pthread_barrier_wait(&rs_bar);	/* rate 512 KiB */
		keep(malloc(65 << 20));
		pthread_barrier_wait(&rs_bar);
		pthread_barrier_wait(&rs_bar);	/* rate 64 MiB */
		if (rs_lock) {	/* a lock call notices the new rate at once */
			pthread_mutex_lock(&lf_lock);
			pthread_mutex_unlock(&lf_lock);
		}
		for (int i = 0; i < 1024; i++)
			keep(malloc(4096));
		pthread_barrier_wait(&rs_bar);
	}
	return NULL;
}

static void set_mem_rate(struct kpprof_config_page *pg, __u64 rate)
{
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELEASE);
	pg->config.mem_rate = rate;
	__atomic_store_n(&pg->seq, pg->seq + 1, __ATOMIC_RELEASE);
}

static int do_rateswitch(int rounds, int lock)
{
	const char *path = getenv("KPPROF_TEST_CONFIG");
	struct kpprof_config_page *pg;
	pthread_t t[RS_THREADS];
	int fd;

	if (!path || (fd = open(path, O_RDWR)) < 0)
		return printf("fail rateswitch needs KPPROF_TEST_CONFIG\n"), 1;
	pg = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (pg == MAP_FAILED)
		return printf("fail mmap\n"), 1;
	rs_rounds = rounds;
	rs_lock = lock;
	pthread_barrier_init(&rs_bar, NULL, RS_THREADS + 1);
	for (int i = 0; i < RS_THREADS; i++)
		pthread_create(&t[i], NULL, rateswitch_thread, NULL);
	for (int r = 0; r < rounds; r++) {
		set_mem_rate(pg, 512 << 10);
		pthread_barrier_wait(&rs_bar);
		pthread_barrier_wait(&rs_bar);
		set_mem_rate(pg, 64 << 20);
		pthread_barrier_wait(&rs_bar);
		pthread_barrier_wait(&rs_bar);
	}
	for (int i = 0; i < RS_THREADS; i++)
		pthread_join(t[i], NULL);
	printf("ok rateswitch %d\n", rounds);
	return 0;
}

/* ---------------------------------------------------------- contention */

/* The shim's wait-table hash (lock.c), to find two colliding mutexes. */
static size_t wait_hash(const void *m)
{
	return (((uintptr_t)m >> 4) * 0x9E3779B97F4A7C15ULL) >> (64 - 8);
}

static pthread_mutex_t mutexes[512];

/*
 * Wake-up latency: from just before a holder's hand-off (its unlock) to the
 * waiter's return from the lock.  The shim charges a mutex wait at the
 * unlock (Go's mutex profile); the waiter's own blocked time (the block
 * profile) also holds this latency, which a loaded machine makes tens of
 * ms.  Printed as "wake_ns N" so the test compares the charge with the
 * wait up to the hand-off, not with the scheduler's delay after it.
 */
static _Atomic uint64_t wake_ns;
static _Atomic uint64_t released_at[2];	/* per mutex of a test, ns */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* release_mark - the holder of mutex @i hands it off now */
static void release_mark(int i)
{
	atomic_store(&released_at[i], mono_ns());
}

/*
 * woken - a waiter of mutex @i that called lock at @entered has it: add
 * its wake-up latency, if it was waiting when the hand-off came.  One that
 * arrived after it (late, on a loaded machine) took the mutex without a
 * wait, or waited for a later one: its delay since the mark is its own
 * lateness, in no blocked time, and would shrink the test's bound.
 */
static void woken(int i, uint64_t entered)
{
	uint64_t at = atomic_load(&released_at[i]), now = mono_ns();

	if (at && entered < at && now > at)
		atomic_fetch_add(&wake_ns, now - at);
}

struct waiter_arg {
	pthread_mutex_t *m;
	int i;		/* its released_at slot */
};

static void *lock_unlock(void *arg)
{
	struct waiter_arg *w = arg;
	uint64_t entered = mono_ns();

	pthread_mutex_lock(w->m);
	woken(w->i, entered);
	release_mark(w->i);	/* a second waiter gets it from us */
	pthread_mutex_unlock(w->m);
	return NULL;
}

static pthread_t spawn_waiter(struct waiter_arg *w)
{
	pthread_t t;

	pthread_create(&t, NULL, lock_unlock, w);
	ms_sleep(20);	/* it is blocked in the lock by then */
	return t;
}

/*
 * Two mutexes a, b whose wait-table slots collide (slot s for both): a
 * waiter of a takes s, then one of b takes s + 1; a's waiter leaves (s is
 * free again) and a second waiter of b arrives while the first still
 * waits.  Every wait must be charged to the unlock that hands b off.
 */
static int do_collide(int rounds)
{
	pthread_mutex_t *a = &mutexes[0], *b = NULL;

	for (int i = 0; i < 512; i++)
		pthread_mutex_init(&mutexes[i], NULL);
	for (int i = 1; i < 512 && !b; i++)
		if (wait_hash(&mutexes[i]) == wait_hash(a))
			b = &mutexes[i];
	if (!b)
		return printf("fail no colliding mutex\n"), 1;
	struct waiter_arg wa_arg = { a, 0 }, wb_arg = { b, 1 };

	for (int r = 0; r < rounds; r++) {
		pthread_t wa, wb1, wb2;

		atomic_store(&released_at[0], 0);
		atomic_store(&released_at[1], 0);
		pthread_mutex_lock(a);
		pthread_mutex_lock(b);
		wa = spawn_waiter(&wa_arg);
		wb1 = spawn_waiter(&wb_arg);
		release_mark(0);
		pthread_mutex_unlock(a);
		pthread_join(wa, NULL);
		wb2 = spawn_waiter(&wb_arg);
		ms_sleep(20);
		release_mark(1);
		pthread_mutex_unlock(b);
		pthread_join(wb1, NULL);
		pthread_join(wb2, NULL);
	}
	printf("ok collide %d\nwake_ns %llu\n", rounds, (unsigned long long)atomic_load(&wake_ns));
	return 0;
}

static pthread_mutex_t hm;
static pthread_cond_t hc = PTHREAD_COND_INITIALIZER;
static atomic_int waiter_go;

static void *handoff_waiter(void *arg)
{
	uint64_t entered;

	(void)arg;
	atomic_store(&waiter_go, 1);
	entered = mono_ns();
	pthread_mutex_lock(&hm);
	woken(0, entered);
	pthread_mutex_unlock(&hm);
	return NULL;
}

/* The holder takes the lock, a waiter blocks on it for ~20 ms, then the
 * holder's @how hands it off. */
static int handoffs(int rounds, int how)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	if (how == 'r')
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&hm, &a);
	for (int r = 0; r < rounds; r++) {
		pthread_t w;

		atomic_store(&waiter_go, 0);
		atomic_store(&released_at[0], 0);
		pthread_mutex_lock(&hm);
		if (how == 'r')
			pthread_mutex_lock(&hm);
		pthread_create(&w, NULL, handoff_waiter, NULL);
		while (!atomic_load(&waiter_go))
			sched_yield();
		ms_sleep(20);
		if (how == 'r') {
			pthread_mutex_unlock(&hm);	/* inner: no hand-off */
			ms_sleep(20);
			release_mark(0);
			pthread_mutex_unlock(&hm);
		} else {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 20 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			/* releases hm: the waiter gets it; times out, relocks */
			release_mark(0);
			pthread_cond_timedwait(&hc, &hm, &ts);
			pthread_mutex_unlock(&hm);
		}
		pthread_join(w, NULL);
	}
	printf("ok handoffs %c %d\nwake_ns %llu\n", how, rounds,
	       (unsigned long long)atomic_load(&wake_ns));
	return 0;
}

/* ---------------------------------------------------------- seccomp */

/* What allocating, threads exiting and exit need; no ioctl, write, fstat,
 * pipe2, mincore, fcntl.  With @exec, also what a program needs to start
 * (preloaded by absolute path: a relative one makes ld.so call getcwd). */
static int install_filter(int how, int exec)
{
	struct sock_filter f[] = {
		SECCOMP_ALLOW_ALLOCATING,
		/* starting a program (exec), nothing of the shim's own */
		ALLOW(exec ? __NR_execve : __NR_brk),
		ALLOW(exec ? __NR_newfstatat : __NR_brk),
		ALLOW(exec ? __NR_pread64 : __NR_brk),
		ALLOW(exec ? __NR_arch_prctl : __NR_brk),
		ALLOW(exec ? __NR_set_tid_address : __NR_brk),
		ALLOW(exec ? __NR_prlimit64 : __NR_brk),
		ALLOW(exec ? __NR_access : __NR_brk),
		ALLOW(exec ? __NR_getpid : __NR_brk),
		ALLOW(exec ? __NR_gettid : __NR_brk),
		ALLOW(exec ? __NR_rt_sigaction : __NR_brk),
		/* seccomp-full: tell the reader */
		ALLOW(how == 'f' ? __NR_kill : __NR_brk),
		ALLOW(how == 'f' ? __NR_getppid : __NR_brk),
		ALLOW(how == 'f' ? __NR_rt_sigtimedwait : __NR_brk),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	if (how != 's')
		return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_TSYNC, &prog);
}

static void churn(long total)
{
	void *keep[64] = { 0 };

	for (long done = 0, i = 0; done < total; i++) {
		size_t n = (size_t)16 << (i % 13);	/* 16 B .. 64 KiB */

		free(keep[i % 64]);
		keep[i % 64] = malloc(n);
		done += (long)n;
	}
	for (int i = 0; i < 64; i++)
		free(keep[i]);
}

static void *churn_thread(void *arg)
{
	(void)arg;
	atomic_store(&waiter_go, 1);
	while (!atomic_load(&stop_flag))
		churn(1 << 20);
	return NULL;
}

static int do_seccomp(int how)
{
	pthread_t t;

	fflush(stdout);
	if (how == 's') {	/* a thread samples while the filter goes in */
		pthread_create(&t, NULL, churn_thread, NULL);
		while (!atomic_load(&waiter_go))
			sched_yield();
	}
	churn(16 << 20);
	if (install_filter(how, 0))
		return printf("fail seccomp: %s\n", strerror(errno)), 1;
	churn(256 << 20);
	if (how == 's') {
		atomic_store(&stop_flag, 1);
		pthread_join(t, NULL);
	}
	exit(0);	/* destructors run, stdout is empty: no write */
}

/*
 * seccomp-full N K: the filter goes in while the rings are full (the
 * reader reads nothing before our SIGUSR1), so the shim's NOTE meets a
 * full ring and its bounded wait for a drain runs out; only room kept for
 * it (pring.c room_for()) lets it in.  With K, that many execs fail (no
 * such file) between the flood and the filter: each writes COMM EXEC, then
 * COMM START (exec.c), which may use that room too.  Once the reader has
 * drained everything (SIGUSR2) N more allocations: a sample made after
 * the stop would arrive after the NOTE, not be refused by a full ring and
 * counted as LOST, which the test cannot tell from the flood's.
 */
static int do_seccomp_full(long n, long k)
{
	char *argv[] = { "kpprof-no-such-program", NULL };
	struct timespec bound = { 300, 0 };	/* only a hung reader takes this */
	sigset_t usr2;
	int sig;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &usr2, NULL))
		return printf("fail sigprocmask: %s\n", strerror(errno)), 1;
	for (long i = 0; i < n; i++)
		keep(malloc(100));
	for (long i = 0; i < k; i++)
		if (execv("/nonexistent/kpprof-no-such-program", argv) == 0 ||
		    errno != ENOENT)
			return printf("fail exec: %s\n", strerror(errno)), 1;
	fflush(stdout);
	if (install_filter('f', 0))
		return printf("fail seccomp: %s\n", strerror(errno)), 1;
	/* no printf from here: the filter forbids write */
	if (kill(getppid(), SIGUSR1))
		exit(3);
	do
		sig = sigtimedwait(&usr2, NULL, &bound);
	while (sig < 0 && errno == EINTR);
	if (sig != SIGUSR2)
		exit(4);
	for (long i = 0; i < n; i++)
		keep(malloc(100));
	exit(0);
}

static int do_seccomp_exec(char *self)
{
	char *argv[] = { self, "seccomp-child", NULL };

	churn(16 << 20);
	fflush(stdout);
	if (install_filter('p', 1))
		return printf("fail seccomp: %s\n", strerror(errno)), 1;
	execv("/proc/self/exe", argv);
	return 1;
}

/* ---------------------------------------------------------- fds */

static int find_kpprof_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char link[256], path[300];
	int fd = -1;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			if (!strcmp(link, "/dev/kpprof"))
				fd = atoi(e->d_name);
		}
	}
	closedir(d);
	return fd;
}

static int do_dup2(void)
{
	char tmpl[] = "/tmp/safety-dup2.XXXXXX";
	int kfd = find_kpprof_fd(), fd;
	struct stat st;

	/*
	 * ABI 3: a shim that has sampled writes into its producer ring and
	 * has closed its descriptor: there is no number to dup2 onto.
	 */
	if (kfd < 0)
		return printf("ok dup2 (0 bytes: no /dev/kpprof descriptor, the producer ring)\n"), 0;
	fd = mkstemp(tmpl);
	if (fd < 0)
		return printf("fail mkstemp\n"), 1;
	unlink(tmpl);
	if (dup2(fd, kfd) < 0)
		return printf("fail dup2\n"), 1;
	churn(64 << 20);
	if (fstat(fd, &st))
		return printf("fail fstat\n"), 1;
	printf("%s dup2 (%lld bytes in the file)\n", st.st_size ? "fail" : "ok",
	       (long long)st.st_size);
	return st.st_size != 0;
}

/*
 * dup2race: one thread swaps a regular file and the device in and out of
 * the shim's descriptor number as fast as it can while two threads sample;
 * a check-then-write producer (fstat, write) loses the race now and then.
 */
static int race_kfd, race_kdup, race_file;

static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_flag)) {
		dup2(race_file, race_kfd);
		dup2(race_kdup, race_kfd);
	}
	return NULL;
}

static void *sampler(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_flag))
		churn(1 << 20);
	return NULL;
}

static int do_dup2race(int ms)
{
	char tmpl[] = "/tmp/safety-race.XXXXXX";
	pthread_t t[3];
	struct stat st;

	race_kfd = find_kpprof_fd();
	if (race_kfd < 0)	/* as in do_dup2() */
		return printf("ok dup2race (0 bytes: no /dev/kpprof descriptor, the producer ring)\n"), 0;
	race_kdup = dup(race_kfd);
	race_file = mkstemp(tmpl);
	if (race_kdup < 0 || race_file < 0)
		return printf("fail dup/mkstemp\n"), 1;
	unlink(tmpl);
	pthread_create(&t[0], NULL, swapper, NULL);
	pthread_create(&t[1], NULL, sampler, NULL);
	pthread_create(&t[2], NULL, sampler, NULL);
	ms_sleep(ms);
	atomic_store(&stop_flag, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	if (fstat(race_file, &st))
		return printf("fail fstat\n"), 1;
	printf("%s dup2race (%lld bytes in the file)\n", st.st_size ? "fail" : "ok",
	       (long long)st.st_size);
	return st.st_size != 0;
}

/*
 * fullring: the reader reads nothing until our SIGUSR1 (shim_reader
 * --stall-until-signal), so the rings fill and the FREE of a block sampled
 * before is refused (the shim holds the block); once the reader has
 * drained everything it sends SIGUSR2, and one more record is made: the
 * held FREE must go in before it.  A handshake, not a time: a busy machine
 * only makes it slower.
 */
static int do_fullring(int n)
{
	struct timespec bound = { 300, 0 };	/* only a hung reader takes this */
	sigset_t usr2;
	char *target;
	int sig;

	/* blocked before the reader can send it */
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (sigprocmask(SIG_BLOCK, &usr2, NULL))
		return printf("fail sigprocmask: %s\n", strerror(errno)), 1;
	target = malloc(4000);
	fprintf(stderr, "ADDR target %p\n", (void *)target);
	for (int i = 0; i < n; i++)
		keep(malloc(100));
	free(target);
	if (kill(getppid(), SIGUSR1))
		return printf("fail kill SIGUSR1: %s\n", strerror(errno)), 1;
	do
		sig = sigtimedwait(&usr2, NULL, &bound);
	while (sig < 0 && errno == EINTR);
	if (sig != SIGUSR2)
		return printf("fail fullring: no SIGUSR2 from the reader in %ld s: %s\n",
			      (long)bound.tv_sec, strerror(errno)), 1;
	keep(malloc(200));
	printf("ok fullring\n");
	return 0;
}

/* ---------------------------------------------------------- realloc */

static int do_realloc_fail(void)
{
	char *p = malloc(1000), *q;

	memset(p, 'x', 1000);
	errno = 0;
	q = realloc(p, PTRDIFF_MAX);
	if (q || errno != ENOMEM || p[999] != 'x')
		return printf("fail realloc did not fail cleanly\n"), 1;
	fprintf(stderr, "ADDR block %p\n", (void *)p);
	/* grows a sampled block for real: contents kept */
	q = realloc(p, 1 << 20);
	if (!q || q[0] != 'x' || q[999] != 'x')
		return printf("fail realloc lost the contents\n"), 1;
	free(q);
	printf("ok realloc-fail\n");
	return 0;
}

/* ---------------------------------------------------------- forksig */

static volatile sig_atomic_t in_child, forks_left;
static pid_t kids[1024];
static volatile int nkids;

static void forksig_handler(int sig)
{
	int saved = errno;
	pid_t p;

	(void)sig;
	if (in_child || forks_left <= 0)
		return;
	p = fork();
	if (p == 0) {
		in_child = 1;
	} else if (p > 0) {
		kids[nkids++] = p;
		forks_left--;
	}
	errno = saved;
}

static int do_forksig(int n)
{
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct sigaction sa;
	int bad = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forksig_handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	forks_left = n > 1024 ? 1024 : n;
	fflush(stdout);
	setitimer(ITIMER_REAL, &it, NULL);
	while (forks_left > 0 || in_child) {
		keep(malloc(64));
		if (in_child) {
			for (int i = 0; i < 100; i++)
				keep(malloc(64));
			exit(0);
		}
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < nkids; i++) {
		int st;

		while (waitpid(kids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	printf("%s forksig %d (%d children failed)\n", bad ? "fail" : "ok", nkids, bad);
	return bad != 0;
}

/* ---------------------------------------------------------- altstack */

static volatile int alt_ok;

static void alt_handler(int sig)
{
	(void)sig;
	for (int i = 0; i < 20; i++)
		keep(malloc(100));
	alt_ok = 1;
}

static int do_altstack(long size)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = ((size_t)size + (size_t)pg - 1) & ~((size_t)pg - 1);
	char *m = mmap(NULL, len + (size_t)pg, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct sigaction sa;
	stack_t ss;
	size_t used;

	if (m == MAP_FAILED)
		return printf("fail mmap\n"), 1;
	mprotect(m, (size_t)pg, PROT_NONE);	/* guard page below */
	ss.ss_sp = m + pg + len - (size_t)size;
	ss.ss_size = (size_t)size;
	ss.ss_flags = 0;
	memset(ss.ss_sp, 0xa5, ss.ss_size);
	if (sigaltstack(&ss, NULL))
		return printf("fail sigaltstack: %s\n", strerror(errno)), 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alt_handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	/*
	 * One sample on the main stack first: libunwind is loaded at a
	 * process's first stack, never from a handler on an alternate stack
	 * (user/shim/stack.c), so without it the handler's samples would be
	 * frame-pointer ones (or none) and the libunwind case untested.
	 */
	keep(malloc(100));
	for (int i = 0; i < 10; i++)
		raise(SIGUSR1);
	for (used = 0; used < ss.ss_size && ((unsigned char *)ss.ss_sp)[used] == 0xa5; used++)
		;
	fprintf(stderr, "STACK used %zu of %ld\n", ss.ss_size - used, size);
	printf("%s altstack\n", alt_ok ? "ok" : "fail");
	return !alt_ok;
}

/* ---------------------------------------------------------- exec */

static int do_exec(char *self)
{
	char *argv[] = { self, "alloc", NULL };

	sink = malloc(5000);	/* live across the exec */
	fflush(stdout);
	if (execl("/nonexistent/program", "x", (char *)NULL) != -1 || errno != ENOENT)
		return printf("fail exec of nothing\n"), 1;
	execv("/proc/self/exe", argv);
	return printf("fail exec: %s\n", strerror(errno)), 1;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (!strcmp(s, "lockfirst"))
		return do_lockfirst((int)n);
	if (!strcmp(s, "rateswitch"))
		return do_rateswitch((int)n, argc > 3 && !strcmp(argv[3], "lock"));
	if (!strcmp(s, "collide"))
		return do_collide((int)n);
	if (!strcmp(s, "recursive"))
		return handoffs((int)n, 'r');
	if (!strcmp(s, "condwait"))
		return handoffs((int)n, 'c');
	if (!strcmp(s, "seccomp-prctl"))
		return do_seccomp('p');
	if (!strcmp(s, "seccomp-syscall"))
		return do_seccomp('s');
	if (!strcmp(s, "seccomp-full"))
		return do_seccomp_full(n, argc > 3 ? atol(argv[3]) : 0);
	if (!strcmp(s, "seccomp-exec"))
		return do_seccomp_exec(argv[0]);
	if (!strcmp(s, "seccomp-child")) {
		churn(256 << 20);
		exit(0);
	}
	if (!strcmp(s, "dup2"))
		return do_dup2();
	if (!strcmp(s, "dup2race"))
		return do_dup2race((int)n);
	if (!strcmp(s, "fullring"))
		return do_fullring((int)n);
	if (!strcmp(s, "realloc-fail"))
		return do_realloc_fail();
	if (!strcmp(s, "forksig"))
		return do_forksig((int)n);
	if (!strcmp(s, "altstack"))
		return do_altstack(n);
	if (!strcmp(s, "exec"))
		return do_exec(argv[0]);
	if (!strcmp(s, "alloc")) {
		keep(malloc(5000));
		printf("ok alloc\n");
		return 0;
	}
	fprintf(stderr, "usage: safety_workload SCENARIO [N]\n");
	return 2;
}
