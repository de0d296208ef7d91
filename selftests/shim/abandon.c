// SPDX-License-Identifier: GPL-2.0
/*
 * Signal handlers that leave whatever their thread was doing -- at rate 1
 * usually a sampled malloc -- for good (abandon_host_test.sh):
 *
 *   abandon jump N      a SIGALRM handler siglongjmps out N times (never
 *                       out of libc: its malloc is not reentrant); then the
 *                       cancel state must be what it was (enabled) and a
 *                       seccomp filter (allow all) must install;
 *   abandon exit N      N threads allocating in a loop, each ended by a
 *                       handler that calls pthread_exit; then the main
 *                       thread allocates 1000 blocks of 12345 bytes (the
 *                       test counts their ALLOC records: every private
 *                       stack must have come back), then install a
 *                       seccomp filter;
 *   abandon inner N     the handler siglongjmps N times inside itself
 *                       (a jump that leaves no sample: nothing abandoned).
 *
 * Prints "ok: ..." lines; exit 0 if the program's own checks pass.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>
#include "seccomp_allow.h"

static sigjmp_buf jb;
static volatile sig_atomic_t armed;
static atomic_int inner_jumps;
static uintptr_t libc_lo, libc_hi;	/* libc's text */

/* Where is libc?  Leaving its malloc half-done would corrupt the heap
 * with or without the shim: the handler jumps only from elsewhere. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (!strstr(info->dlpi_name, "/libc.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			libc_lo = info->dlpi_addr + ph->p_vaddr;
			libc_hi = libc_lo + ph->p_memsz;
		}
	}
	return 1;
}

static void on_alarm(int sig, siginfo_t *si, void *uc)
{
	uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (armed && (pc < libc_lo || pc >= libc_hi)) {
		armed = 0;
		siglongjmp(jb, 1);
	}
}

static void churn(void)
{
	void *volatile p = malloc(64);

	free(p);
}

static void timer(long us)
{
	struct itimerval it = { { 0, us }, { 0, us } };

	setitimer(ITIMER_REAL, &it, NULL);
}

/* A filter that allows everything: the shim stops first (seccomp.c). */
static int filter(void)
{
	if (seccomp_allow_all())
		return 1;
	printf("ok: seccomp filter installed\n");
	return 0;
}

static int jump(int n)
{
	struct sigaction sa = { .sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO };
	int old;

	dl_iterate_phdr(find_libc, NULL);
	if (!libc_hi)
		return 1;
	sigaction(SIGALRM, &sa, NULL);
	timer(200);
	for (int i = 0; i < n; i++)
		if (sigsetjmp(jb, 1) == 0) {
			armed = 1;
			for (;;)
				churn();
		}
	timer(0);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	printf("%s: cancel state after %d jumps out of a handler\n",
	       old == PTHREAD_CANCEL_ENABLE ? "ok" : "FAIL", n);
	fflush(stdout);
	if (filter())
		return 1;
	return old == PTHREAD_CANCEL_ENABLE ? 0 : 1;
}

static atomic_int started, exiting;
static uintptr_t syscall_lo, syscall_hi;	/* libc's syscall(2) */

/*
 * Where is libc's syscall(2)?  It holds no lock, and it is where a thread
 * of this program spends most of its time in test mode: every record is
 * one write through it (emit.c).  Signals are mostly taken on the way
 * back from a system call, so a handler that left only from outside libc
 * needed up to 13000 signals for one thread (several seconds; the 200
 * threads then took past the test's bound at random).
 */
static int find_syscall(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *f;

	f = libc ? dlsym(libc, "syscall") : NULL;
	if (!f || !dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    !sym->st_size)
		return -1;
	syscall_lo = (uintptr_t)f;
	syscall_hi = syscall_lo + sym->st_size;
	return 0;
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	uintptr_t pc = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (pc >= libc_lo && pc < libc_hi && !(pc >= syscall_lo && pc < syscall_hi))
		return;		/* maybe in libc's malloc: the next signal */
	atomic_store(&exiting, 1);
	pthread_exit(NULL);
}

static void *allocator(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	for (;;)
		churn();
	return NULL;
}

static int exits(int n)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO };

	dl_iterate_phdr(find_libc, NULL);
	if (!libc_hi || find_syscall()) {
		fprintf(stderr, "abandon: libc or its syscall(2) not found\n");
		return 1;
	}
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < n; i++) {
		pthread_t th;
		int tries = 0;

		atomic_store(&started, 0);
		atomic_store(&exiting, 0);
		if (pthread_create(&th, NULL, allocator, NULL))
			return 1;
		while (!atomic_load(&started))
			sched_yield();
		for (int k = 0; k < 2000; k++)	/* let it allocate a while */
			churn();
		/* Until the handler ends the thread (bounded: 10 s). */
		while (!atomic_load(&exiting) && tries++ < 100000) {
			pthread_kill(th, SIGUSR1);
			usleep(100);
		}
		if (!atomic_load(&exiting))
			return 1;
		pthread_join(th, NULL);
	}
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(12345);

		free(p);
	}
	printf("ok: %d threads ended by pthread_exit in a handler\n", n);
	fflush(stdout);
	return filter();
}

static void inner_probe(void)
{
	sigjmp_buf in;

	if (sigsetjmp(in, 0) == 0)
		siglongjmp(in, 1);
	atomic_fetch_add(&inner_jumps, 1);
}

static void on_alarm_inner(int sig)
{
	(void)sig;
	inner_probe();
}

static int inner(int n)
{
	signal(SIGALRM, on_alarm_inner);
	timer(100);
	while (atomic_load(&inner_jumps) < n)
		churn();
	timer(0);
	printf("ok: %d jumps inside a handler\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[2]) : 100;

	if (argc > 1 && !strcmp(argv[1], "jump"))
		return jump(n);
	if (argc > 1 && !strcmp(argv[1], "exit"))
		return exits(n);
	if (argc > 1 && !strcmp(argv[1], "inner"))
		return inner(n);
	fprintf(stderr, "usage: abandon jump|exit|inner N\n");
	return 2;
}
