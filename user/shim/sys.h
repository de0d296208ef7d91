/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The shim's own system calls, made directly (x86-64), not through libc's
 * wrappers (issue 15).
 *
 * Every function the shim imports is bound when it loads (-z now: full
 * RELRO), one symbol look-up through every object of the process each:
 * an empty library that imports 65 of libc's functions started about
 * 10 us later than one that imports none (spawn to main, p10 of 2000,
 * these machines).  These 19 wrappers were a third of the shim's imports,
 * paid by every process, though a process without the module makes one of
 * these calls (the failed open of /dev/kpprof).  Same results as libc's:
 * -1 and errno on failure.  None is a cancellation point (libc's open,
 * read, write, close and nanosleep are; the shim must not be one).
 * Test mode's record writes stay libc's syscall(2) (emit.c): the tests
 * interpose it to emulate a full ring.
 *
 * Each is the system call glibc 2.36's wrapper makes (strace: readlink,
 * clock_nanosleep for nanosleep, newfstatat for fstat, prlimit64 for
 * getrlimit, openat for open), so a seccomp filter the shim cannot see,
 * written for what the program's libc calls, meets no other syscall.
 */
/* x32 defines __x86_64__ too, but its longs and pointers are 32 bits. */
#if !defined(__x86_64__) || defined(__ILP32__)
#error "sys.h: the shim's system calls are written for x86-64 (LP64) only"
#endif
#ifndef KPP_SYS_H
#define KPP_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

struct stat;
struct rlimit;
struct timespec;

static inline long kpp_sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile ("syscall"
			  : "=a"(ret)
			  : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			  : "rcx", "r11", "memory");
	return ret;
}

/* kpp_sys_ret - libc's convention: -1 and errno for -4095..-1. */
static inline long kpp_sys_ret(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

#define KPP_SYS(nr, a, b, c, d, e, f) \
	kpp_sys_ret(kpp_sys6((nr), (long)(a), (long)(b), (long)(c), (long)(d), \
			     (long)(e), (long)(f)))

static inline int kpp_open_mode(const char *path, int flags, unsigned int mode)
{
	return (int)KPP_SYS(SYS_openat, AT_FDCWD, path, flags, mode, 0, 0);
}

static inline int kpp_open(const char *path, int flags)
{
	return kpp_open_mode(path, flags, 0);
}

static inline ssize_t kpp_read(int fd, void *buf, size_t n)
{
	return KPP_SYS(SYS_read, fd, buf, n, 0, 0, 0);
}

static inline ssize_t kpp_write(int fd, const void *buf, size_t n)
{
	return KPP_SYS(SYS_write, fd, buf, n, 0, 0, 0);
}

static inline int kpp_close(int fd)
{
	return (int)KPP_SYS(SYS_close, fd, 0, 0, 0, 0, 0);
}

static inline void *kpp_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)KPP_SYS(SYS_mmap, addr, len, prot, flags, fd, off);
}

static inline int kpp_munmap(void *addr, size_t len)
{
	return (int)KPP_SYS(SYS_munmap, addr, len, 0, 0, 0, 0);
}

static inline int kpp_mprotect(void *addr, size_t len, int prot)
{
	return (int)KPP_SYS(SYS_mprotect, addr, len, prot, 0, 0, 0);
}

static inline int kpp_madvise(void *addr, size_t len, int advice)
{
	return (int)KPP_SYS(SYS_madvise, addr, len, advice, 0, 0, 0);
}

/*
 * For commands whose result is a descriptor, flags or 0 only: F_GETOWN's
 * -pgid would read as an error for a group id below 4096 (glibc's fcntl
 * asks F_GETOWN_EX for that one).  A negative int arg reaches the kernel
 * sign-extended, where libc's va_arg passes it zero-extended (strace:
 * F_DUPFD_CLOEXEC, -1 against 4294967295); the shim passes none.
 */
static inline int kpp_fcntl(int fd, int cmd, long arg)
{
	return (int)KPP_SYS(SYS_fcntl, fd, cmd, arg, 0, 0, 0);
}

static inline int kpp_fstat(int fd, struct stat *st)
{
	return (int)KPP_SYS(SYS_newfstatat, fd, "", st, AT_EMPTY_PATH, 0, 0);
}

static inline int kpp_ioctl(int fd, unsigned long req, const void *arg)
{
	return (int)KPP_SYS(SYS_ioctl, fd, req, arg, 0, 0, 0);
}

static inline pid_t kpp_getpid(void)
{
	return (pid_t)kpp_sys6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

static inline int kpp_getrlimit(int res, struct rlimit *rl)
{
	return (int)KPP_SYS(SYS_prlimit64, 0, res, 0, rl, 0, 0);
}

static inline ssize_t kpp_readlink(const char *path, char *buf, size_t n)
{
	return KPP_SYS(SYS_readlink, path, buf, n, 0, 0, 0);
}

static inline int kpp_nanosleep(const struct timespec *ts, struct timespec *rem)
{
	return (int)KPP_SYS(SYS_clock_nanosleep, CLOCK_REALTIME, 0, ts, rem, 0, 0);
}

/*
 * Where a filter the shim never saw may be in force, only through
 * kpp_wait_more() (wait.c), which yields when the seccomp probe says none.
 */
static inline int kpp_sched_yield(void)
{
	return (int)KPP_SYS(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static inline int kpp_ftruncate(int fd, off_t len)
{
	return (int)KPP_SYS(SYS_ftruncate, fd, len, 0, 0, 0, 0);
}

static inline int kpp_memfd_create(const char *name, unsigned int flags)
{
	return (int)KPP_SYS(SYS_memfd_create, name, flags, 0, 0, 0, 0);
}

/*
 * kpp_sigblock - block every signal but glibc's SIGSETXID, 33 (setuid()
 * in another thread waits for every thread to take it), and put the old
 * mask in @old; kpp_sigrestore puts it back.  SIGCANCEL, 32, too, which
 * glibc does not let a program block: an asynchronous cancellation would
 * end the thread where it stands (abandon_cancel.c); blocked, it acts at
 * the restore.  The kernel's mask is 64 bits.
 */
static inline void kpp_sigblock(unsigned long *old)
{
	unsigned long all = ~(1UL << (33 - 1));

	KPP_SYS(SYS_rt_sigprocmask, SIG_BLOCK, &all, old, sizeof(all), 0, 0);
}

static inline void kpp_sigrestore(const unsigned long *old)
{
	KPP_SYS(SYS_rt_sigprocmask, SIG_SETMASK, old, 0, sizeof(*old), 0, 0);
}

#endif
