// SPDX-License-Identifier: GPL-2.0
/*
 * What a program sees of its signal handlers is what it installed, with
 * the shim wrapping them (sigwrap.c) as without it: sigaction() and
 * signal() report the program's handler and flags, never the shim's
 * trampoline; SA_SIGINFO handlers get the siginfo (a sigqueue value),
 * plain ones only the number; SA_RESETHAND still resets; SIG_IGN and
 * SIG_DFL round-trip; the mask is the one given.  Prints "ok NAME" or
 * "FAIL NAME: why" per check and exits 1 on any failure.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	return failed;
}
