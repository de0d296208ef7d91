// SPDX-License-Identifier: GPL-2.0
/*
 * What a conservative garbage collector (Boehm's libgc: guile, w3m,
 * inkscape...) does to stop the world, against threads that sample.  Its
 * collector sends each thread a signal; the handler saves its own stack
 * pointer and waits; the collector then scans that thread's stack from the
 * saved pointer up to the stack's top, as roots.  A handler that runs on
 * a stack other than the thread's (the shim's private stack, if the
 * signal lands in a sample) saves a pointer outside that range: the
 * collector scans the wrong memory (a crash), or none of the thread's
 * frames (its live objects freed under it: libgc's lists corrupted, a
 * segfault; foreign_suites.sh -s gc).
 *
 *   sigscan THREADS SECONDS [regs]
 *
 * THREADS workers allocate (malloc/free, every size from 16 bytes to
 * 4 KiB: at rate 1 each is a sample) with a canary on their own stack,
 * in the frame of the loop; the main thread stops each in turn with
 * SIGUSR2, as the collector does, and checks that the handler's stack
 * pointer lies between the thread's stack bottom (pthread_getattr_np)
 * and the canary, i.e. that a scan from it would reach the canary.
 * Prints "sigscan H handlers, F off the thread's stack, C missed the
 * canary" (F and C are 0 without the shim); exit 0 if both are 0.
 *
 * With "regs", the workers' loop is sigscan_regs.S's: it holds five
 * values in the callee-saved registers only, as compiled code keeps a
 * pointer across calls, and the scan must find all five in the thread's
 * stack (the kernel's signal frame, or whoever saved the registers on the
 * way down); "R missed a register" is added, and counts too.
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXT 16

struct worker {
	pthread_t th;
	unsigned long seed;		/* regs: the registers hold seed ^ K1..K5 */
	char *lo, *hi;			/* the thread's stack */
	char *volatile canary;		/* in the allocation loop's frame */
	char *volatile sp;		/* the handler's, at the last stop */
	sem_t resume;			/* its own: a token another stopped
					 * thread took would leave this one
					 * running while its stack is scanned */
};

static struct worker w[MAXT];
static _Thread_local struct worker *self;
static sem_t stopped;
static volatile int done;
static int regs;
void sigscan_regs_loop(volatile int *done, unsigned long seed);
static const unsigned long k[5] = {
	0x6b70707266310001UL, 0x6b70707266310002UL, 0x6b70707266310003UL,
	0x6b70707266310004UL, 0x6b70707266310005UL,
};

/* Does [from, to) hold all of seed ^ k[]? */
static int scan_finds(const char *from, const char *to, unsigned long seed)
{
	const unsigned long *p = (const unsigned long *)((unsigned long)from & ~7UL);
	int found = 0;

	for (; (const char *)(p + 1) <= to; p++)
		for (int j = 0; j < 5; j++)
			if (*p == (seed ^ k[j]))
				found |= 1 << j;
	return found == 31;
}

static void on_stop(int sig)
{
	char here;

	(void)sig;
	self->sp = &here;
	sem_post(&stopped);
	while (sem_wait(&self->resume))
		;
}

static void *work(void *arg)
{
	volatile char canary = 1;
	pthread_attr_t attr;
	size_t size;
	void *lo;

	self = arg;
	if (pthread_getattr_np(pthread_self(), &attr) ||
	    pthread_attr_getstack(&attr, &lo, &size)) {
		perror("pthread_getattr_np");
		exit(2);
	}
	pthread_attr_destroy(&attr);
	self->lo = lo;
	self->hi = (char *)lo + size;
	self->canary = (char *)&canary;
	if (regs) {
		sigscan_regs_loop(&done, self->seed);
		return NULL;
	}
	for (unsigned long i = 0; !done; i++) {
		void *volatile p = malloc(16 + (i * 37) % 4096);

		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int nt = argc > 1 ? atoi(argv[1]) : 2;
	long secs = argc > 2 ? atol(argv[2]) : 3;
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART };
	unsigned long handlers = 0, off = 0, missed = 0, regmissed = 0;
	struct timespec t0, t;

	if (nt < 1 || nt > MAXT)
		nt = 2;
	regs = argc > 3 && !strcmp(argv[3], "regs");
	for (int i = 0; i < nt; i++)
		w[i].seed = 0x1000000UL * (unsigned long)(i + 1) + (unsigned long)getpid();
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < nt; i++)
		if (sem_init(&w[i].resume, 0, 0))
			return 2;
	if (sem_init(&stopped, 0, 0) || sigaction(SIGUSR2, &sa, NULL)) {
		perror("setup");
		return 2;
	}
	for (int i = 0; i < nt; i++)
		if (pthread_create(&w[i].th, NULL, work, &w[i])) {
			perror("pthread_create");
			return 2;
		}
	for (int i = 0; i < nt; i++)
		while (!w[i].canary)
			sched_yield();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < nt; i++) {
			if (pthread_kill(w[i].th, SIGUSR2))
				return 2;
			while (sem_wait(&stopped))
				;
			/* the collector's scan: [sp, stack top) */
			handlers++;
			if (w[i].sp < w[i].lo || w[i].sp >= w[i].hi)
				off++;
			else if (w[i].sp >= w[i].canary)
				missed++;
			else if (regs && !scan_finds(w[i].sp, w[i].hi, w[i].seed))
				regmissed++;
			sem_post(&w[i].resume);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < secs);
	done = 1;
	for (int i = 0; i < nt; i++)
		pthread_join(w[i].th, NULL);
	printf("sigscan %lu handlers, %lu off the thread's stack, %lu missed the canary",
	       handlers, off, missed);
	if (regs)
		printf(", %lu missed a register", regmissed);
	printf("\n");
	return off || missed || regmissed;
}
