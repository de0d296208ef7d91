// SPDX-License-Identifier: GPL-2.0
/*
 * stuck_grow: the thread that adds the sampled set's second table is held
 * inside the add (a signal handler that blocks: a GC's stop-the-world
 * handler, a debugger, a handler waiting for a lock) while the others
 * keep sampling; review of the two-lock split and wait.c (branch ryield).
 *
 *   stuck_grow [-f] K join|exit
 *
 * The filter (raw syscall, so the shim cannot see it) traps the second
 * table's mmap (raw_yield.c's trick); the handler blocks until released.
 * Thread A allocates (rate 1) until it is stuck there; then main makes K
 * sampled mallocs and prints their wall time ("k_wall_ms"), after which
 * it releases A and joins it (join), or calls exit() with A still held
 * inside its sampling path (exit: kpp_fini()'s wait; "exit_ms" is printed
 * by the parent wrapper, see the host test).
 *
 * -f: the program defines clock_gettime and the clock does not move
 * (a test binary's mock, libfaketime's absolute FAKETIME): the shim's
 * kpp_now_ns() resolves to it, as any undefined symbol of a preloaded
 * library does.  The program's own timings use the syscall.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "seccomp_allow.h"

#define TABLE1_LEN	((64u << 16) + 1024)

static atomic_int frozen, stuck, release_it;

/* a mock clock: stands still when -f */
int clock_gettime(clockid_t c, struct timespec *ts)
{
	if (atomic_load_explicit(&frozen, memory_order_relaxed)) {
		ts->tv_sec = 1000;
		ts->tv_nsec = 0;
		return 0;
	}
	return (int)syscall(SYS_clock_gettime, c, ts);
}

static double ms_now(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	greg_t *r = ((ucontext_t *)ucv)->uc_mcontext.gregs;
	struct timespec ms = { .tv_nsec = 1000000 };

	(void)sig;
	if (si->si_syscall != __NR_mmap) {
		(void)!write(2, "unexpected SIGSYS\n", 18);
		_exit(99);
	}
	atomic_store(&stuck, 1);
	while (!atomic_load(&release_it))
		syscall(SYS_nanosleep, &ms, NULL);
	r[REG_RAX] = (greg_t)mmap((void *)r[REG_RDI], (size_t)r[REG_RSI],
				  (int)r[REG_RDX], (int)r[REG_R10], -2, (off_t)r[REG_R9]);
}

static int install_raw_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		TRAP_ANON_MMAP_OF_LEN_ELSE_ALLOW(TABLE1_LEN),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return raw_seccomp(&prog);
}

static void *filler(void *arg)
{
	(void)arg;
	/* at rate 1 the 32 Ki-th live sample asks for the second table */
	for (int i = 0; i < 200000 && !atomic_load(&stuck); i++) {
		void *p = malloc(24);

		__asm__ volatile("" : : "r"(p) : "memory");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int fz = argc > 1 && !strcmp(argv[1], "-f");
	struct sigaction sa;
	pthread_t a;
	double t0;
	int k;

	argc -= fz;
	argv += fz;
	if (argc < 3) {
		fprintf(stderr, "usage: stuck_grow [-f] K join|exit\n");
		return 2;
	}
	k = atoi(argv[1]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	if (install_raw_filter()) {
		fprintf(stderr, "raw seccomp failed\n");
		return 2;
	}
	pthread_create(&a, NULL, filler, NULL);
	while (!atomic_load(&stuck))
		usleep(1000);
	atomic_store(&frozen, fz);
	t0 = ms_now();
	for (int i = 0; i < k; i++) {
		void *p = malloc(40);

		__asm__ volatile("" : : "r"(p) : "memory");
	}
	printf("k_wall_ms %.1f (%.3f ms a sample)\n", ms_now() - t0, (ms_now() - t0) / k);
	fflush(stdout);
	if (!strcmp(argv[2], "exit")) {
		t0 = ms_now();
		printf("exiting\n");
		fflush(stdout);
		exit(0);	/* A still inside its sample */
	}
	atomic_store(&release_it, 1);
	pthread_join(a, NULL);
	printf("done\n");
	return 0;
}
