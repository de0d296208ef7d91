// SPDX-License-Identifier: GPL-2.0
/*
 * A handler installed with signal() (no SA_SIGINFO) that reads its second
 * and third arguments: on x86-64 the kernel passes &siginfo and
 * &ucontext to every handler, and such handlers exist (a SIGSEGV handler
 * that skips the faulting instruction, a SIGPROF sampler reading the pc).
 * Another thread signals the main thread every 50 us while it mallocs and
 * frees, so at rate 1 many signals land in a sample's body (the shim then
 * runs the handler on the program's stack, sigwrap.c) and many outside
 * one.  Review rres R1: the shim called such a handler with one argument,
 * and it read what the shim's code left in rsi and rdx (SIGSEGV 3 of 3).
 *
 *   sigwrap_args [ITERATIONS]
 *
 * (at least ITERATIONS, default 300000, and until 200 handlers ran, at
 * most 20 s)
 * Prints "sigwrap_args H handlers, B saw arguments that are not
 * (&siginfo, &ucontext)"; exit 1 if B > 0 or H is 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile long hits, bad;
static volatile int done;
static pthread_t main_th;

static void handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	/* without SA_SIGINFO the kernel leaves *si unwritten: only where */
	(void)sig;
	hits++;
	if ((uintptr_t)si < 4096 || (uintptr_t)uc < 4096 || (void *)uc == (void *)si ||
	    uc->uc_mcontext.gregs[REG_RSP] == 0)
		bad++;
}

static void *sender(void *arg)
{
	(void)arg;
	while (!done) {
		pthread_kill(main_th, SIGUSR1);
		usleep(50);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300000;
	struct timespec t0, t;
	pthread_t th;

	main_th = pthread_self();
	/* the cast is the point: a one-argument handler by its type */
	if (signal(SIGUSR1, (void (*)(int))(void (*)(void))handler) == SIG_ERR ||
	    pthread_create(&th, NULL, sender, NULL))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n || hits < 200; i++) {
		void *volatile p = malloc(64);

		free(p);
		if (i % 4096 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if (t.tv_sec - t0.tv_sec >= 20)
				break;
		}
	}
	done = 1;
	pthread_join(th, NULL);
	printf("sigwrap_args %ld handlers, %ld saw arguments that are not (&siginfo, &ucontext)\n",
	       hits, bad);
	return bad != 0 || hits == 0;
}
