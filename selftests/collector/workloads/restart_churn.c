// SPDX-License-Identifier: GPL-2.0
/*
 * restart_churn - allocates and frees without pause, in one function per
 * phase, while its collector is stopped and started (restart_test.sh).
 *
 * Phase K runs phaseK() in a loop: one malloc(64 + 16 * K) and its free
 * each, so at KPPROF_MEM_RATE=1 two records an iteration, and each
 * phase's allocations are one bucket of their own.  At most about 2000
 * iterations a second (4 between 2 ms sleeps): as many samples as a busy
 * program sends, and no more than an attached collector drains, so what
 * it loses is lost for want of a collector, not of speed.  SIGUSR1 moves on to
 * the next phase; once a phase has run ACK iterations it says so on
 * stdout, with what the phase before it ran in all:
 *
 *   phase K running (phase K-1 ran N)
 *
 * ("phase K running" alone for the first phase, FIRST: argv[2], default
 * 0).  At phase LAST (argv[1], at most 7) it stops allocating, prints
 * "ran K N" for every phase it ran, and exits 0 at the next SIGUSR1.
 * Until LAST it never stops allocating.  Its own output goes by write(2)
 * from a stack buffer: no allocation outside the phases' own.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PHASES	8
#define ACK	2000
#define BURST	4

static volatile sig_atomic_t phase;
static long ran[PHASES];
/* A global the compiler must assume is read: no malloc/free pair elided. */
char *volatile last;

static void next(int sig)
{
	(void)sig;
	phase++;
}

#define PHASE(k)						\
	__attribute__((noinline)) void phase##k(void)		\
	{							\
		char *p = malloc(64 + 16 * (k));		\
								\
		if (!p)						\
			abort();				\
		memset(p, k, 8);				\
		last = p;					\
		free(last);					\
		ran[k]++;					\
	}
PHASE(0) PHASE(1) PHASE(2) PHASE(3) PHASE(4) PHASE(5) PHASE(6) PHASE(7)

static void (*const fn[PHASES])(void) = {
	phase0, phase1, phase2, phase3, phase4, phase5, phase6, phase7,
};

static void say(const char *buf, int n)
{
	if (n > 0 && write(STDOUT_FILENO, buf, n) != n)
		_exit(3);
}

int main(int argc, char *argv[])
{
	int last_phase = argc > 1 ? atoi(argv[1]) : 0;
	int first = argc > 2 ? atoi(argv[2]) : 0;
	struct sigaction sa = { .sa_handler = next, .sa_flags = SA_RESTART };
	const struct timespec nap = { 0, 2 * 1000 * 1000 };
	sigset_t usr1, old;
	char buf[128];
	int k, acked = -1;

	if (last_phase < 1 || last_phase >= PHASES || first < 0 || first >= last_phase) {
		fprintf(stderr, "usage: restart_churn LAST [FIRST] (0 <= FIRST < LAST < %d)\n",
			PHASES);
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	if (sigaction(SIGUSR1, &sa, NULL))
		return 2;
	phase = first;
	while ((k = phase) < last_phase) {
		fn[k]();
		if (!(ran[k] % BURST))
			nanosleep(&nap, NULL);
		if (k != acked && ran[k] >= ACK) {
			acked = k;
			say(buf, k > first ?
				 snprintf(buf, sizeof(buf), "phase %d running (phase %d ran %ld)\n",
					  k, k - 1, ran[k - 1]) :
				 snprintf(buf, sizeof(buf), "phase %d running\n", k));
		}
	}
	for (k = first; k < last_phase; k++)
		say(buf, snprintf(buf, sizeof(buf), "ran %d %ld\n", k, ran[k]));
	/* the counts stay as they are while the collector is asked */
	sigprocmask(SIG_BLOCK, &usr1, &old);
	while (phase == last_phase)
		sigsuspend(&old);
	return 0;
}
