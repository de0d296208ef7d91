/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seccomp allow-list the shim's sandbox tests share (torture.c,
 * safety_workload.c): a filter that starts with SECCOMP_ALLOW_ALLOCATING
 * lets a process allocate, start and end threads and exit, and nothing of
 * the shim's own (no ioctl, write, fstat...); each test appends what it
 * needs on top, then its own verdict for the rest.  seccomp_allow_all()
 * installs a filter that allows everything, through libc's prctl (so the
 * shim sees it and stops first: abandon.c, abandon_ring.c); raw_syscall()
 * makes one the shim cannot see, raw_seccomp() installs a filter with it,
 * TRAP(nr) is a filter's SIGSYS for one syscall (raw_sandbox.c,
 * raw_early.c, raw_yield.c).
 */
#ifndef KPP_SECCOMP_ALLOW_H
#define KPP_SECCOMP_ALLOW_H

#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#define ALLOW(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

#define TRAP(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP)

/*
 * Ends a filter: an anonymous mmap (fd -1) of exactly @len bytes traps,
 * everything else is allowed.  The syscall number must be loaded.  The
 * sampled set's second table has a length of its own (raw_yield.c,
 * stuck_grow.c), so its mapping can be held in the SIGSYS handler.
 */
#define SECCOMP_ARG_LO(i)	(offsetof(struct seccomp_data, args[i]))
#define SECCOMP_ARG_HI(i)	(offsetof(struct seccomp_data, args[i]) + 4)
#define TRAP_ANON_MMAP_OF_LEN_ELSE_ALLOW(len) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 7), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_LO(1)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (len), 0, 5), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_HI(1)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_ARG_LO(4)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffu, 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* x86-64 only (anything else is killed), then the syscall number loaded */
#define SECCOMP_ALLOW_ALLOCATING \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS), \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
	ALLOW(__NR_brk), ALLOW(__NR_mmap), ALLOW(__NR_munmap), \
	ALLOW(__NR_mremap), ALLOW(__NR_madvise), ALLOW(__NR_mprotect), \
	ALLOW(__NR_futex), ALLOW(__NR_exit), ALLOW(__NR_exit_group), \
	ALLOW(__NR_rt_sigreturn), ALLOW(__NR_rt_sigprocmask), \
	ALLOW(__NR_sched_yield), ALLOW(__NR_clock_nanosleep), \
	ALLOW(__NR_nanosleep), ALLOW(__NR_getrandom), \
	/* glibc's malloc reads /proc/sys/vm/overcommit_memory */ \
	ALLOW(__NR_openat), ALLOW(__NR_read), ALLOW(__NR_close), \
	/* a thread's start */ \
	ALLOW(__NR_rseq), ALLOW(__NR_set_robust_list)

/* 0, or -1 with the reason on stderr */
static inline int seccomp_allow_all(void)
{
	struct sock_filter f[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return -1;
	}
	return 0;
}

/*
 * A syscall made by our own `syscall` instruction, as Chromium's and
 * Firefox's sandboxes make theirs: glibc's wrappers, and so the shim's,
 * never see it (raw_sandbox.c, raw_early.c, torture.c).
 */
static inline long raw_syscall(long nr, long a, long b, long c, long d, long e)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c),
			 "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return r;
}

/*
 * raw_seccomp - no_new_privs, then @prog, both by raw_syscall(): 0, or
 * -1 (no_new_privs) or the kernel's -errno (the filter).
 */
static inline int raw_seccomp(const struct sock_fprog *prog)
{
	if (raw_syscall(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)raw_syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)prog, 0, 0);
}

#endif
