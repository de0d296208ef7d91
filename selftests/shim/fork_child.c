// SPDX-License-Identifier: GPL-2.0
/*
 * fork_child - what a fork child of a process with a producer ring meets
 * in the shim's atfork child handler (kpp_pring_fork_child(): the child
 * maps its own ring there).  Every mode first allocates until the ring is
 * mapped (a /dev/kpprof or kpprof-test-ring line in /proc/self/maps: the
 * module's ring or test mode's memfd), then:
 *
 *   errno-nofile   fills the descriptor table, sets errno to EDOM, forks:
 *                  the child's ring cannot be had (EMFILE); the child must
 *                  still see EDOM.  Prints "child-errno N".
 *   sandboxed      installs a seccomp filter with prctl() (seen by the
 *                  shim, which then stops) trapping openat, ioctl,
 *                  memfd_create and ftruncate, then forks: the child must
 *                  not die making the shim's syscalls.  Prints
 *                  "child-status N" (128+signal if killed).
 *   rate SECS      forks children that _exit(0) at once, waited for, for
 *                  SECS seconds: prints "forks-per-s N cpu-us-per-fork U"
 *                  (U: user+system time of parent and children per fork).
 *   seccomp-wait N [stalled]
 *                  installs N filters with prctl() from one thread; prints
 *                  "filters N ms M" (the time they took).  With "stalled"
 *                  (under shim_reader --stall-until-signal, which reads
 *                  nothing until our SIGUSR1): 60000 allocations kept,
 *                  then freed, first, so the ring has no room for a NOTE
 *                  when the first filter goes in, and SIGUSR1 to the
 *                  parent once the filters are in.
 *
 *   stacks         prints "stacks N kB K charged C kB": the anonymous
 *                  mappings of 8 to 9 MiB (the shim's private stacks at
 *                  their full size, premapped with the ring), their total
 *                  size, and how much of it is commit charge (no "nr",
 *                  VM_NORESERVE, in its smaps VmFlags).
 *
 * Exit 0 when the mode's check holds, 1 otherwise, 99 when the ring never
 * got mapped (except in rate mode, which also measures without the shim).
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static int has_ring(void)
{
	char line[512];
	int r = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/kpprof") || strstr(line, "kpprof-test-ring"))
			r = 1;
	fclose(f);
	return r;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double tv_us(const struct timeval *tv)
{
	return tv->tv_sec * 1e6 + tv->tv_usec;
}

#define TRAP(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP)

static int install_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		TRAP(__NR_openat), TRAP(__NR_open), TRAP(__NR_ioctl),
		TRAP(__NR_memfd_create), TRAP(__NR_ftruncate),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

static int wait_child(pid_t p)
{
	int st;

	if (p < 0 || waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int stacks(void)
{
	char line[512];
	unsigned long lo, hi, sz = 0, kb = 0, charged = 0, n = 0;
	bool cand = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char path[256] = "";

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %255s", &lo, &hi, path) >= 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			sz = (hi - lo) >> 10;
			cand = !path[0] && sz >= 8192 && sz < 9216;
			if (cand) {
				n++;
				kb += sz;
			}
		} else if (cand && !strncmp(line, "VmFlags:", 8)) {
			if (!strstr(line, " nr"))
				charged += sz;
			cand = false;
		}
	}
	fclose(f);
	printf("stacks %lu kB %lu charged %lu kB\n", n, kb, charged);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	pid_t p;
	int i;

	for (i = 0; i < (strcmp(mode, "rate") ? 200000 : 1000) && !has_ring(); i++)
		free(malloc(64 + i % 4096));
	if (!has_ring() && strcmp(mode, "rate")) {
		fprintf(stderr, "no producer ring after %d allocations\n", i);
		return 99;
	}
	if (!strcmp(mode, "stacks"))
		return stacks();
	if (!strcmp(mode, "errno-nofile")) {
		int e;

		while (open("/dev/null", O_RDONLY) >= 0)
			;
		errno = EDOM;
		p = fork();
		if (p == 0)
			_exit(errno == EDOM ? 0 : errno < 128 ? errno : 127);
		e = errno;
		i = wait_child(p);
		printf("parent-errno %d child-errno %d\n", e, i ? i : EDOM);
		return e == EDOM && i == 0 ? 0 : 1;
	}
	if (!strcmp(mode, "sandboxed")) {
		if (install_filter())
			return 1;
		p = fork();
		if (p == 0) {
			for (i = 0; i < 1000; i++)
				free(malloc(100));
			_exit(0);
		}
		i = wait_child(p);
		printf("child-status %d\n", i);
		return i == 0 ? 0 : 1;
	}
	if (!strcmp(mode, "rate") && argc > 2) {
		double secs = atof(argv[2]), t0 = now(), t, cpu0;
		struct rusage self, kids;
		long n = 0;

		getrusage(RUSAGE_SELF, &self);
		cpu0 = tv_us(&self.ru_utime) + tv_us(&self.ru_stime);

		do {
			p = fork();
			if (p == 0)
				_exit(0);
			if (wait_child(p) != 0)
				return 1;
			n++;
		} while ((t = now() - t0) < secs);
		getrusage(RUSAGE_SELF, &self);
		getrusage(RUSAGE_CHILDREN, &kids);	/* only these children */
		printf("forks-per-s %.0f cpu-us-per-fork %.1f ring %d\n", n / t,
		       (tv_us(&self.ru_utime) + tv_us(&self.ru_stime) - cpu0 +
			tv_us(&kids.ru_utime) + tv_us(&kids.ru_stime)) / n, has_ring());
		return 0;
	}
	if (!strcmp(mode, "seccomp-wait") && argc > 2) {
		int n = atoi(argv[2]);
		double t0 = now();
		struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
		struct sock_fprog prog = { .len = 1, .filter = f };

		bool stalled = argc > 3 && !strcmp(argv[3], "stalled");
		static void *kept[60000];
		sigset_t usr2;

		if (stalled) {
			/* the reader's SIGUSR2 (it has drained) must not kill us */
			sigemptyset(&usr2);
			sigaddset(&usr2, SIGUSR2);
			sigprocmask(SIG_BLOCK, &usr2, NULL);
			/* ALLOCs (80 bytes in the ring at depth 1) until the ring
			 * refuses, then FREEs (64, a NOTE's size) fill what is left */
			for (i = 0; i < 60000; i++)
				kept[i] = malloc(100);
			for (i = 0; i < 60000; i++)
				free(kept[i]);
			t0 = now();
		}
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return 1;
		for (i = 0; i < n; i++)
			if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
				return 1;
		printf("filters %d ms %.0f\n", n, (now() - t0) * 1e3);
		if (stalled && kill(getppid(), SIGUSR1))
			return 1;
		return 0;
	}
	fprintf(stderr, "usage: fork_child errno-nofile|sandboxed|rate SECS|seccomp-wait N [stalled]|stacks\n");
	return 2;
}
