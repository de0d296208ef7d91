// SPDX-License-Identifier: GPL-2.0
/*
 * raw_sandbox: a program that sandboxes itself the way Chromium's and
 * Firefox's sandboxes do, with its own `syscall` instruction, which the
 * shim's wrappers (user/shim/seccomp.c) cannot see (issue 15, finding 10).
 *
 *   raw_sandbox SECONDS [strict]
 *
 * 1. Allocates and contends unfiltered (at rate 1 its producer ring is
 *    mapped by now), blocks of PRE_BYTES.
 * 2. Forks a child (the zygote pattern: fork, sandbox, then allocate).
 *    Parent and child each install, by a raw syscall instruction, before
 *    anything else, a filter that traps (SIGSYS) open and any mmap of a
 *    file (the ring's set-up), and every syscall it does not list; it
 *    allows what this program needs itself (SECCOMP_ALLOW_ALLOCATING,
 *    threads, fork, write for its report), clock_gettime, which a sandbox
 *    allows and a guest whose clocksource the vDSO cannot read makes a
 *    syscall, and openat, ioctl and close (the shim's kick of a ring a
 *    quarter full was those three; now it is a read of a doorbell page:
 *    strict below traps them).
 * 3. For SECONDS, in each: two threads allocate blocks of POST_BYTES and
 *    contend on one mutex.  The child then exits 0; the parent waits for
 *    it.
 *
 * strict: the filter also traps openat, ioctl and close, as a sandbox that
 * allows a renderer no file at all: the shim's kick must then cost no
 * syscall (its doorbell, a page fault; before it, open + KPPROF_IOC_KICK
 * + close, and the first quarter-full ring was SIGSYS).
 *
 * The child is forked before the filter: a child forked under a filter
 * that traps open cannot get a ring of its own (user/shim/README.md,
 * "Known limits and hazards").
 *
 * Output: "parent PID", "child PID" and "child-status S" (S: the child's
 * exit status, or 128+signal).  A trapped syscall writes
 * "SIGSYS syscall N in PID" to stderr and exits 99.  Exit 0 when both
 * processes ran to the end.
 *
 * malloc is kept to the main arena (M_ARENA_MAX 1), as when openat was
 * trapped: a thread's own arena would be an anonymous mmap (allowed) and,
 * when it shrinks, a read of /proc/sys/vm/overcommit_memory.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "seccomp_allow.h"

#define PRE_BYTES	4001
#define POST_BYTES	4093

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stop;

static void say(const char *fmt, long v)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), fmt, v);

	if (n > 0)
		(void)!write(1, buf, (size_t)n);
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char buf[80];
	int n;

	(void)sig; (void)uc;
	n = snprintf(buf, sizeof(buf), "SIGSYS syscall %d in %d\n", si->si_syscall,
		     (int)raw_syscall(__NR_getpid, 0, 0, 0, 0, 0));
	(void)!write(2, buf, (size_t)n);
	_exit(99);
}

static int install_raw_filter(int strict)
{
	const struct sock_filter head[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		TRAP(__NR_open),
	};
	/* strict only: no file at all (each jump is relative: they concatenate) */
	const struct sock_filter no_files[] = {
		TRAP(__NR_openat), TRAP(__NR_ioctl), TRAP(__NR_close),
	};
	const struct sock_filter tail[] = {
		/* mmap: anonymous only (flags, the 4th argument, low word) */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		SECCOMP_ALLOW_ALLOCATING,
		ALLOW(__NR_clone), ALLOW(__NR_clone3), ALLOW(__NR_wait4), ALLOW(__NR_ioctl),
		ALLOW(__NR_write), ALLOW(__NR_getpid), ALLOW(__NR_clock_gettime),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_filter f[sizeof(head) / sizeof(head[0]) + sizeof(no_files) / sizeof(no_files[0]) +
			     sizeof(tail) / sizeof(tail[0])];
	struct sock_fprog prog = { 0, f };

	memcpy(f, head, sizeof(head));
	prog.len = sizeof(head) / sizeof(head[0]);
	if (strict) {
		memcpy(f + prog.len, no_files, sizeof(no_files));
		prog.len += sizeof(no_files) / sizeof(no_files[0]);
	}
	memcpy(f + prog.len, tail, sizeof(tail));
	prog.len += sizeof(tail) / sizeof(tail[0]);
	return raw_seccomp(&prog);
}

static void churn(size_t n)
{
	void *p[16];

	for (int i = 0; i < 16; i++) {
		p[i] = malloc(n);
		if (p[i])
			memset(p[i], i, 16);
	}
	for (int i = 0; i < 16; i++)
		free(p[i]);
}

static void *worker(void *arg)
{
	size_t n = (size_t)arg;

	while (!atomic_load(&stop)) {
		pthread_mutex_lock(&mu);
		churn(n);
		pthread_mutex_unlock(&mu);
		churn(n);
	}
	return NULL;
}

/* Two threads allocating @n-byte blocks and contending for @secs. */
static int run(size_t n, int secs)
{
	struct timespec ts = { .tv_sec = secs };
	pthread_t th[2];

	atomic_store(&stop, 0);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)n))
			return -1;
	nanosleep(&ts, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	int secs = argc > 1 ? atoi(argv[1]) : 3, st;
	int strict = argc > 2 && !strcmp(argv[2], "strict");
	struct sigaction sa;
	pid_t pid;

	if (secs < 1)
		secs = 1;
	mallopt(M_ARENA_MAX, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);

	say("parent %ld\n", (long)getpid());
	/* unfiltered: the first samples (the ring, the private stacks) */
	if (run(PRE_BYTES, 1))
		return 2;
	pid = fork();
	if (pid < 0)
		return 4;
	st = install_raw_filter(strict);
	if (st) {
		fprintf(stderr, "raw seccomp: %s\n", strerror(-st));
		return 2;
	}
	if (!pid) {
		say("child %ld\n", (long)getpid());
		exit(run(POST_BYTES, secs) ? 3 : 0);
	}
	if (run(POST_BYTES, secs))
		return 3;
	if (waitpid(pid, &st, 0) != pid)
		return 5;
	st = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	say("child-status %ld\n", st);
	return st ? 6 : 0;
}
