// SPDX-License-Identifier: GPL-2.0
/*
 * probe_clonevm: the shim's double read (user/shim/seccomp.c kpp_filtered())
 * answered "no filter" to a thread that has one, when a task sharing the
 * mm outside the thread group (vfork child, clone(CLONE_VM) without
 * CLONE_THREAD; here an unfiltered one) faults the other page between
 * the two reads.
 *
 * Thread F installs a filter without TSYNC (only F has one); thread U,
 * unfiltered, clone(CLONE_VM)s a task C, which asks the probe in a loop
 * as the shim would.  F asks N times, exactly as kpp_filtered() does
 * (the shared counter, page n&1 then page ~n&1 when the first says 0),
 * with DELAY (0: none; else usleep(DELAY) between its two reads, as a
 * preemption there would).  Prints how many of F's questions were
 * answered "no filter" (each one a syscall the shim would make that F's
 * filter may forbid: SIGSYS, the process killed).
 *
 * usage: probe_clonevm N DELAY
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "kpprof.h"

static const char *probe;
static long pagesz;
static atomic_uint probe_reads;
static atomic_int stop;
static int delay;
static long first_nz;

static unsigned int rd(unsigned int i)
{
	return *(const volatile unsigned int *)(probe + (i & 1) * pagesz);
}

/* kpp_filtered()'s question; @yield between the reads */
static int filtered(int yield)
{
	unsigned int n = atomic_fetch_add_explicit(&probe_reads, 1, memory_order_relaxed);

	if (rd(n)) {
		if (yield >= 0)
			first_nz++;
		return 1;
	}
	if (yield > 0)
		usleep(yield);
	return rd(~n) != 0;
}

static atomic_long c_asked, c_zero;

static int clone_fn(void *p)
{
	(void)p;
	while (!atomic_load(&stop)) {
		if (!filtered(-1))
			atomic_fetch_add(&c_zero, 1);
		atomic_fetch_add(&c_asked, 1);
	}
	return 0;
}

static void *unfiltered_thread(void *p)
{
	char *stack = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t c = clone(clone_fn, stack + (1 << 16), CLONE_VM | SIGCHLD, NULL);

	(void)p;
	if (c < 0) {
		perror("clone");
		exit(2);
	}
	waitpid(c, NULL, __WALL);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct sock_filter insn[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = 1, .filter = insn };
	struct kpprof_info info;
	long wrong = 0;
	pthread_t u;
	int fd;

	delay = argc > 2 ? atoi(argv[2]) : 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pagesz = sysconf(_SC_PAGESIZE);
	fd = open(KPPROF_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	memset(&info, 0, sizeof(info));
	if (fd < 0 || ioctl(fd, KPPROF_IOC_GET_INFO, &info))
		return 2;
	probe = mmap(NULL, info.probe_map_len, PROT_READ, MAP_SHARED, fd,
		     (off_t)(info.probe_pgoff * info.page_size));
	if (probe == MAP_FAILED)
		return 2;
	if (pthread_create(&u, NULL, unfiltered_thread, NULL))
		return 2;
	/* this thread (F) only */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return 2;
	usleep(100000);
	for (long i = 0; i < n; i++) {
		usleep(200);	/* the shim asks now and then, not in a loop */
		if (!filtered(delay))
			wrong++;
	}
	atomic_store(&stop, 1);
	pthread_join(u, NULL);
	printf("# filtered thread asked %ld times (usleep between reads: %d us): %ld answered \"no filter\"\n",
	       n, delay, wrong);
	printf("# F's first read non-zero %ld times\n", first_nz);
	printf("# the clone(CLONE_VM) task asked %ld times, %ld answered \"no filter\"\n",
	       atomic_load(&c_asked), atomic_load(&c_zero));
	return wrong ? 1 : 0;
}
