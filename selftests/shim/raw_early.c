// SPDX-License-Identifier: GPL-2.0
/*
 * raw_early: a program that installs a seccomp filter with its own
 * `syscall` instruction (which the shim's wrappers never see) and then
 * lets the shim meet it where it still makes syscalls of its own
 * (user/shim/README.md, "Known limits and hazards"): the ring's set-up at
 * the first sample, a fork child's set-up, a COMM record without a ring,
 * the getpid at exit.
 *
 *   raw_early early|late|quiet N
 *
 * The filter traps (SIGSYS) ioctl, openat, open, close, getpid and an
 * mmap of a file (fd != -1), and allows everything else.
 *   early: the filter goes in before the program's first sample (nothing
 *          allocated before it; mallopt only), so no ring is mapped yet.
 *   late:  N allocations first (at rate 1 the ring is mapped by then),
 *          then the filter, then N allocations of POST_BYTES (into the
 *          ring: no syscall).
 *   quiet: the filter, then exit(0) at once: no sample, no ring; the
 *          shim's exit path alone (getpid, COMM (EXIT) by SUBMIT).
 * Then (early, late): a fork() child and a raw clone() child (no handler
 * runs in it: the shim learns it is one at its first sample) each make N
 * allocations of POST_BYTES and exit() (destructors: the shim's exit
 * path); the parent waits for both, makes N allocations of POST_BYTES
 * and exit()s 0.
 *
 * Output: "parent PID" (before the filter), "fork-child PID",
 * "clone-child PID", "fork-status S", "clone-status S" (exit status or
 * 128+signal), "ring-before-filter R" (R: 1 if a producer ring of
 * /dev/kpprof was mapped when the filter went in).  A trapped syscall
 * writes "SIGSYS syscall N" to stderr and exits 99.
 */
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "seccomp_allow.h"
#include "kpprof.h"

#define PRE_BYTES	4001
#define POST_BYTES	4093

static void say(const char *what, long v)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%s %ld\n", what, v);

	if (n > 0)
		(void)!write(1, buf, (size_t)n);
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char buf[64];
	int n;

	(void)sig; (void)uc;
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
		TRAP(__NR_ioctl), TRAP(__NR_openat), TRAP(__NR_open),
		TRAP(__NR_close), TRAP(__NR_getpid),
		/* mmap: anonymous only (flags, the 4th argument, low word) */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MAP_ANONYMOUS, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return raw_seccomp(&prog);
}

/* the compiler may not drop a malloc whose block escapes */
static void *volatile sink;

static void churn(size_t bytes, int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(bytes);

		if (p)
			p[0] = (char)i;
		sink = p;
		free(sink);
	}
}

/* a producer ring of /dev/kpprof in /proc/self/maps (its pgoff) */
static int ring_mapped(void)
{
	static char buf[1 << 16];
	char pat[32];
	size_t len = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	snprintf(pat, sizeof(pat), " %08llx ",
		 (unsigned long long)KPPROF_PGOFF_PRING * (unsigned long long)getpagesize());
	for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		char *e = strchr(l, '\n');

		if (e)
			*e = 0;
		if (strstr(l, pat) && strstr(l, "kpprof"))
			return 1;
		if (e)
			*e = '\n';
	}
	return 0;
}

static int status_of(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	int late = argc > 1 && !strcmp(argv[1], "late");
	int quiet = argc > 1 && !strcmp(argv[1], "quiet");
	int n = argc > 2 ? atoi(argv[2]) : 100;
	struct sigaction sa;
	long fpid, cpid;

	mallopt(M_ARENA_MAX, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSYS, &sa, NULL);
	say("parent", (long)getpid());
	if (late)
		churn(PRE_BYTES, n);
	say("ring-before-filter", ring_mapped());
	if (install_raw_filter()) {
		(void)!write(2, "raw seccomp failed\n", 19);
		return 2;
	}
	if (quiet)
		return 0;
	if (late)
		churn(POST_BYTES, n);
	fpid = fork();
	if (fpid == 0) {
		churn(POST_BYTES, n);
		exit(0);
	}
	cpid = raw_syscall(__NR_clone, SIGCHLD, 0, 0, 0, 0);
	if (cpid == 0) {
		churn(POST_BYTES, n);
		exit(0);
	}
	say("fork-child", fpid);
	say("clone-child", cpid);
	if (fpid < 0 || cpid < 0)
		return 4;
	say("fork-status", status_of((pid_t)fpid));
	say("clone-status", status_of((pid_t)cpid));
	churn(POST_BYTES, n);
	return 0;
}
