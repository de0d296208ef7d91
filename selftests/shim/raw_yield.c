// SPDX-License-Identifier: GPL-2.0
/*
 * raw_yield: a filter, installed with the program's own `syscall`
 * instruction (the shim cannot see it), that traps sched_yield and allows
 * everything else; then the two waits of the shim that a sampling process
 * reaches with such a filter in force (issue 15, "the shim cannot hurt its
 * process"):
 *
 *   raw_yield [-n] grow THREADS BLOCKS
 *	THREADS threads, released together, each keep BLOCKS blocks live
 *	(at rate 1 each one is sampled, so each goes into the sampled-address
 *	set), then free them.  The set adds a table when its newest is half
 *	full (32 Ki, then 128 Ki live samples): every thread inserting then
 *	wants the table lock, and the losers wait (sampled_set.c,
 *	lock_table()).  Adding one takes microseconds, so the filter also
 *	traps the second table's mmap (its length, TABLE1_LEN, and fd -1):
 *	the handler sleeps HOLD_NS, then makes the same mmap (fd -2, which an
 *	anonymous map ignores and the filter lets through), so every thread
 *	that samples meanwhile waits for the lock.
 *   raw_yield exit THREADS
 *	THREADS threads malloc and free in a loop (at rate 1 each is inside a
 *	sampling path most of the time); the main thread lets them run for a
 *	moment and calls exit() while they still do: the shim's destructor
 *	waits for the threads inside a sampling path (init.c, kpp_fini()).
 *
 * -n: no filter (to time the same contended grows under any shim,
 * one that yields too).
 *
 * Output: "filtered 1" once the filter is in, "done N" (N: blocks
 * allocated after it) at the end; grow also prints "slowed N" (table adds
 * held, 1 expected), "grow_wall S" and "grow_cpu S", the seconds (wall,
 * and the process's CPU) from the threads' release to their last malloc.
 * Any other trapped syscall writes "SIGSYS syscall N" to stderr and exits
 * 99 (24 is sched_yield).
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "seccomp_allow.h"

/*
 * The sampled set's second table: 64 Ki buckets of 64 bytes, and a byte a
 * page (sampled_set.c, table_add()).  If that changes, "slowed 0" says so.
 */
#define TABLE1_LEN	((64u << 16) + 1024)
#define HOLD_NS		300000	/* the table add held: 0.3 ms */

static pthread_barrier_t go;
static atomic_long made;
static atomic_int slowed;
static int blocks;

static void say(const char *what, long v)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%s %ld\n", what, v);

	if (n > 0)
		(void)!write(1, buf, (size_t)n);
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	greg_t *r = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	struct timespec hold = { .tv_nsec = HOLD_NS };
	char buf[64];
	int n;

	(void)sig;
	if (si->si_syscall == __NR_mmap) {
		/* the table add, held with the lock; then done, as asked */
		nanosleep(&hold, NULL);
		r[REG_RAX] = (greg_t)mmap((void *)r[REG_RDI], (size_t)r[REG_RSI],
					  (int)r[REG_RDX], (int)r[REG_R10], -2,
					  (off_t)r[REG_R9]);
		atomic_fetch_add(&slowed, 1);
		return;
	}
	n = snprintf(buf, sizeof(buf), "SIGSYS syscall %d\n", si->si_syscall);
	(void)!write(2, buf, (size_t)n);
	_exit(99);
}

static int install_raw_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		TRAP(__NR_sched_yield),
		/* mmap(_, TABLE1_LEN, _, _, -1, _): trapped, to be held */
		TRAP_ANON_MMAP_OF_LEN_ELSE_ALLOW(TABLE1_LEN),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return raw_seccomp(&prog);
}

static void *grower(void *arg)
{
	void **p = arg;

	pthread_barrier_wait(&go);
	for (int i = 0; i < blocks; i++) {
		p[i] = malloc(16 + (size_t)(i & 63));
		/* escapes: the compiler keeps the malloc */
		__asm__ volatile("" : : "r"(p[i]) : "memory");
	}
	atomic_fetch_add(&made, blocks);
	pthread_barrier_wait(&go);
	for (int i = 0; i < blocks; i++)
		free(p[i]);
	return NULL;
}

static void *churner(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&go);
	for (;;) {
		void *p = malloc(32);

		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		atomic_fetch_add_explicit(&made, 1, memory_order_relaxed);
	}
	return NULL;
}

static double secs(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int nofilter = argc > 1 && !strcmp(argv[1], "-n");
	struct timespec ms = { .tv_nsec = 20 * 1000000 };
	double wall, cpu;
	struct sigaction sa;
	pthread_t th[64];
	int exiting, n;
	void **p;

	argc -= nofilter;
	argv += nofilter;
	exiting = argc > 1 && !strcmp(argv[1], "exit");
	n = argc > 2 ? atoi(argv[2]) : 4;
	blocks = argc > 3 ? atoi(argv[3]) : 20000;
	if (n < 1 || n > 64 || blocks < 1) {
		fprintf(stderr, "usage: raw_yield [-n] grow THREADS BLOCKS | exit THREADS\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	p = exiting ? NULL : calloc((size_t)n * (size_t)blocks, sizeof(*p));
	if ((!exiting && !p) || pthread_barrier_init(&go, NULL, (unsigned int)n + 1))
		return 2;
	if (!nofilter) {
		if (install_raw_filter()) {
			fprintf(stderr, "raw seccomp failed\n");
			return 2;
		}
		say("filtered", 1);
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, exiting ? churner : grower,
				   exiting ? NULL : p + (size_t)i * (size_t)blocks))
			return 3;
	pthread_barrier_wait(&go);
	if (exiting) {
		nanosleep(&ms, NULL);
		say("done", atomic_load(&made));
		exit(0);	/* the threads are still sampling */
	}
	wall = secs(CLOCK_MONOTONIC);
	cpu = secs(CLOCK_PROCESS_CPUTIME_ID);
	pthread_barrier_wait(&go);
	wall = secs(CLOCK_MONOTONIC) - wall;
	cpu = secs(CLOCK_PROCESS_CPUTIME_ID) - cpu;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("slowed %d\ngrow_wall %.4f s\ngrow_cpu %.4f s\n", atomic_load(&slowed), wall, cpu);
	fflush(stdout);
	say("done", atomic_load(&made));
	return 0;
}
