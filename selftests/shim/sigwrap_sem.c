// SPDX-License-Identifier: GPL-2.0
/*
 * What a program sees of its signal handlers is what it installed, with
 * the shim wrapping them (sigwrap.c) as without it: sigaction() and
 * signal() report the program's handler and flags, never the shim's
 * trampoline; SA_SIGINFO handlers get the siginfo (a sigqueue value),
 * plain ones only the number; SA_RESETHAND still resets; SIG_IGN and
 * SIG_DFL round-trip; the mask is the one given.  And what the kernel
 * holds (one of the shim's entry points) means that handler however it
 * is read and passed on (review rsig F1 to F3): read with a raw
 * rt_sigaction and chained to from a newer handler, saved by sigset()
 * and put back with signal(), changed by a vfork child (the parent's
 * stays), set by two threads at once (never one's handler with the
 * other's flags).  Prints "ok NAME" or "FAIL NAME: why" per check and
 * exits 1 on any failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static int failed;
static volatile sig_atomic_t got, got_value, got_code;

#define CHECK(name, cond, ...) do {					\
	if (cond)							\
		printf("ok %s\n", name);				\
	else {								\
		printf("FAIL %s: ", name);				\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		failed = 1;						\
	}								\
} while (0)

static void plain(int sig)
{
	got = sig;
}

static void info(int sig, siginfo_t *si, void *uc)
{
	got = sig;
	got_value = si->si_value.sival_int;
	got_code = si->si_code;
	(void)uc;
}

static void other(int sig)
{
	got = -sig;
}

/* the kernel's struct sigaction */
struct raw_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};
static void (*chained)(int);
static volatile int depth, a_calls, c_calls;

static void count_a(int sig)
{
	(void)sig;
	a_calls++;
}

static void count_c(int sig)
{
	(void)sig;
	c_calls++;
}

/* a library's handler that calls the one it found installed */
static void chaining(int sig)
{
	if (++depth > 100) {
		static const char m[] = "FAIL chained handler: re-entered 100 times\n";

		(void)!write(1, m, sizeof(m) - 1);
		_exit(1);
	}
	if (chained != SIG_DFL && chained != SIG_IGN)
		chained(sig);
	depth--;
}

static pthread_barrier_t bar;

static void *install(void *resethand)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = resethand ? count_a : count_c;
	sa.sa_flags = resethand ? SA_RESETHAND : 0;
	pthread_barrier_wait(&bar);
	sigaction(SIGUSR1, &sa, NULL);
	return NULL;
}

/* the child changes SIGUSR1's handler, in the parent's memory */
static __attribute__((noinline)) pid_t vfork_changing_handler(void)
{
	pid_t pid = vfork();

	if (pid == 0) {
		signal(SIGUSR1, count_c);
		_exit(0);
	}
	return pid;
}

static void chains_and_copies(void)
{
	struct raw_sigaction k;
	struct sigaction sa, cur;
	void (*saved)(int);
	pid_t pid;
	int mixed = 0;

	signal(SIGUSR1, count_a);
	syscall(SYS_rt_sigaction, SIGUSR1, NULL, &k, sizeof(k.mask));
	chained = (void (*)(int))k.handler;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = chaining;
	sigaction(SIGUSR1, &sa, NULL);
	a_calls = 0;
	raise(SIGUSR1);
	CHECK("a raw-read handler, chained to", a_calls == 1, "ran %d times", a_calls);

	signal(SIGUSR1, count_a);
	saved = sigset(SIGUSR1, SIG_IGN);
	signal(SIGUSR1, saved);
	a_calls = 0;
	raise(SIGUSR1);
	CHECK("sigset() saved, signal() put back", a_calls == 1, "ran %d times", a_calls);

	signal(SIGUSR1, count_a);
	pid = vfork_changing_handler();
	a_calls = c_calls = 0;
	raise(SIGUSR1);
	CHECK("a vfork child's signal() leaves the parent's handler", pid > 0 &&
	      a_calls == 1 && c_calls == 0, "pid %d, parent's ran %d, child's %d",
	      (int)pid, a_calls, c_calls);

	for (int i = 0; i < 2000; i++) {
		pthread_t t1, t2;

		pthread_barrier_init(&bar, NULL, 2);
		pthread_create(&t1, NULL, install, (void *)1);
		pthread_create(&t2, NULL, install, NULL);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		pthread_barrier_destroy(&bar);
		sigaction(SIGUSR1, NULL, &cur);
		if ((cur.sa_handler == count_a) != !!(cur.sa_flags & SA_RESETHAND))
			mixed++;
	}
	CHECK("two threads' sigaction at once: one or the other", !mixed,
	      "%d of 2000 rounds mixed", mixed);
	signal(SIGUSR1, SIG_DFL);
}

int main(void)
{
	struct sigaction sa, old;
	void (*prev)(int);
	union sigval v = { .sival_int = 4242 };

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = info;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	CHECK("install siginfo", !sigaction(SIGUSR1, &sa, NULL), "%s", strerror(errno));
	CHECK("report siginfo", !sigaction(SIGUSR1, NULL, &old) && old.sa_sigaction == info &&
	      (old.sa_flags & SA_SIGINFO) && (old.sa_flags & SA_RESTART) &&
	      sigismember(&old.sa_mask, SIGTERM) && !sigismember(&old.sa_mask, SIGINT),
	      "handler %p (want %p) flags %#x", (void *)old.sa_sigaction, (void *)info, old.sa_flags);
	got = 0;
	CHECK("sigqueue value", !sigqueue(getpid(), SIGUSR1, v) && got == SIGUSR1 &&
	      got_value == 4242 && got_code == SI_QUEUE,
	      "got %d value %d code %d", got, got_value, got_code);

	sa.sa_handler = plain;
	sa.sa_flags = 0;
	CHECK("replace, old reported", !sigaction(SIGUSR1, &sa, &old) && old.sa_sigaction == info &&
	      (old.sa_flags & SA_SIGINFO), "old %p flags %#x", (void *)old.sa_sigaction, old.sa_flags);
	CHECK("report plain", !sigaction(SIGUSR1, NULL, &old) && old.sa_handler == plain &&
	      !(old.sa_flags & SA_SIGINFO), "handler %p flags %#x", (void *)old.sa_handler, old.sa_flags);
	got = 0;
	raise(SIGUSR1);
	CHECK("plain handler runs", got == SIGUSR1, "got %d", got);

	prev = signal(SIGUSR2, other);
	CHECK("signal() first", prev == SIG_DFL, "prev %p", (void *)prev);
	prev = signal(SIGUSR2, plain);
	CHECK("signal() returns the program's handler", prev == other, "prev %p (want %p)",
	      (void *)prev, (void *)other);
	CHECK("signal() keeps glibc's flags", !sigaction(SIGUSR2, NULL, &old) &&
	      old.sa_handler == plain && (old.sa_flags & SA_RESTART) &&
	      !(old.sa_flags & SA_SIGINFO), "handler %p flags %#x", (void *)old.sa_handler,
	      old.sa_flags);
	got = 0;
	raise(SIGUSR2);
	CHECK("signal() handler runs", got == SIGUSR2, "got %d", got);
	prev = signal(SIGUSR2, SIG_IGN);
	CHECK("SIG_IGN over a handler", prev == plain && signal(SIGUSR2, SIG_DFL) == SIG_IGN,
	      "prev %p", (void *)prev);

	sa.sa_handler = plain;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGHUP, &sa, NULL);
	got = 0;
	raise(SIGHUP);
	CHECK("SA_RESETHAND resets", got == SIGHUP && !sigaction(SIGHUP, NULL, &old) &&
	      old.sa_handler == SIG_DFL, "got %d now %p", got, (void *)old.sa_handler);

	sa.sa_handler = plain;
	sa.sa_flags = 0;
	CHECK("bad signal refused", sigaction(0, &sa, NULL) == -1 && errno == EINVAL &&
	      sigaction(SIGKILL, &sa, NULL) == -1 && errno == EINVAL, "errno %d", errno);
	CHECK("SIGKILL still default", !sigaction(SIGKILL, NULL, &old) && old.sa_handler == SIG_DFL,
	      "%p", (void *)old.sa_handler);
	/* many handlers: each reported as given */
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
		sa.sa_handler = (s & 1) ? plain : other;
		sigaction(s, &sa, NULL);
	}
	{
		int bad = 0;

		for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
			if (sigaction(s, NULL, &old) || old.sa_handler != ((s & 1) ? plain : other))
				bad++;
		CHECK("real-time signals", !bad, "%d wrong", bad);
	}
	chains_and_copies();
	return failed;
}
