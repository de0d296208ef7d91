// SPDX-License-Identifier: GPL-2.0
/*
 * A SA_ONSTACK handler that allocates on the thread's sigaltstack,
 * interrupted by a second SA_ONSTACK signal.  Without the shim the kernel
 * puts the second frame below the first on the altstack (it is on it).
 * If the first handler's malloc ran a sample's body on the shim's private
 * stack, the kernel saw a stack pointer off the altstack and put the
 * second frame at the altstack's top, over the first handler's frames
 * (SIGSEGV, 3 of 3 runs at rate 1, before the fix).  The second handler
 * scribbles 6000 bytes of its frame; the first checks a canary.
 * With "raw" the altstack is set with a raw sigaltstack system call, as
 * Go's runtime sets its threads', which the shim's sigaltstack() wrapper
 * never sees (SIGSEGV 3 of 3 before the shim asked the kernel).  Two
 * raw cases the first way of asking missed (review helper-24, SIGSEGV 5
 * of 5 each): "small", a thread with a 256 KiB stack whose altstack,
 * mapped once it runs, lands just below its stack (within 8 MiB of its
 * top, taken for the stack itself); "reused", an altstack on memory a
 * coroutine sampled on before (a region remembered as not the altstack).
 * "ljmp": "small", whose first handler first raises a signal whose
 * handler siglongjmps back into it (review helper-25 M1: the nested
 * handler's mark, left below the live one, hid it; SIGSEGV 5 of 5).
 *
 *   altstack_nest SECONDS [raw|small|reused|ljmp]
 *
 * Prints "altstack_nest H1 first handlers, H2 second (N inside a first),
 * S canaries smashed"; exit 1 if S > 0.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile int stop, in1;
static volatile unsigned long n1, n2, nested, smashed;
static pthread_t main_th;

static void second(int sig)
{
	volatile char buf[6000];

	(void)sig;
	memset((char *)buf, 0x5a, sizeof(buf));
	n2++;
	if (in1)
		nested++;
}

static int ljmp;
static sigjmp_buf probe_env;

/* "ljmp": a nested handler that siglongjmps back, as a memory probe's SIGSEGV guard does. */
static void probe_fault(int sig)
{
	(void)sig;
	siglongjmp(probe_env, 1);
}

static void first(int sig)
{
	volatile unsigned long canary = 0x1234567812345678UL;

	(void)sig;
	if (ljmp && !sigsetjmp(probe_env, 1))
		raise(SIGURG);
	in1 = 1;
	for (int i = 0; i < 20000; i++) {
		void *volatile p = malloc(32 + i);

		free(p);
	}
	in1 = 0;
	if (canary != 0x1234567812345678UL)
		smashed++;
	n1++;
}

static void *sender(void *arg)
{
	(void)arg;
	while (!stop) {
		pthread_kill(main_th, SIGUSR1);
		for (int i = 0; i < 20 && !stop; i++)
			pthread_kill(main_th, SIGUSR2);
	}
	return NULL;
}

/* The nesting for @secs seconds against the calling thread, on the altstack @ss. */
static int nest(long secs, stack_t *ss, bool raw)
{
	struct sigaction sa = { .sa_flags = SA_ONSTACK };
	struct timespec t0, t;
	pthread_t th;

	sigemptyset(&sa.sa_mask);
	sa.sa_handler = first;
	if (raw ? syscall(SYS_sigaltstack, ss, NULL) : sigaltstack(ss, NULL))
		return 2;
	if (sigaction(SIGUSR1, &sa, NULL))
		return 2;
	sa.sa_handler = second;
	if (sigaction(SIGUSR2, &sa, NULL))
		return 2;
	main_th = pthread_self();
	if (pthread_create(&th, NULL, sender, NULL))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while (t.tv_sec - t0.tv_sec < secs);
	stop = 1;
	pthread_join(th, NULL);
	printf("altstack_nest %lu first handlers, %lu second (%lu inside a first), %lu canaries smashed\n",
	       n1, n2, nested, smashed);
	return smashed != 0;
}

static long secs;

/* "small": its altstack, mapped once it runs, lands just below its stack. */
static void *small_thread(void *arg)
{
	stack_t ss = { .ss_size = 1 << 16 };

	(void)arg;
	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED)
		exit(2);
	exit(nest(secs, &ss, true));
}

static void churn(void)
{
	for (int i = 0; i < 100; i++) {
		void *volatile p = malloc(64);

		free(p);
	}
}

static ucontext_t main_ctx, co_ctx;

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };

	secs = argc > 1 ? atol(argv[1]) : 2;
	if (!ss.ss_sp)
		return 2;
	ljmp = !strcmp(mode, "ljmp");
	if (ljmp) {
		struct sigaction sa = { .sa_flags = SA_ONSTACK, .sa_handler = probe_fault };

		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGURG, &sa, NULL))
			return 2;
	}
	if (!strcmp(mode, "small") || ljmp) {
		pthread_attr_t attr;
		pthread_t th;

		churn();	/* the shim's first sample (its set-up) on this thread */
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 << 10);
		if (pthread_create(&th, &attr, small_thread, NULL))
			return 2;
		pthread_join(th, NULL);
		return 2;	/* small_thread exits */
	}
	if (!strcmp(mode, "reused")) {
		/* a 64 KiB-aligned buffer: a coroutine samples on it first */
		char *m = mmap(NULL, 2 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return 2;
		ss.ss_sp = (void *)(((uintptr_t)m + 0xffff) & ~(uintptr_t)0xffff);
		churn();
		getcontext(&co_ctx);
		co_ctx.uc_stack = ss;
		co_ctx.uc_link = &main_ctx;
		makecontext(&co_ctx, churn, 0);
		swapcontext(&main_ctx, &co_ctx);
	}
	return nest(secs, &ss, !strcmp(mode, "raw") || !strcmp(mode, "reused"));
}
