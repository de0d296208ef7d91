// SPDX-License-Identifier: GPL-2.0
/*
 * The exec family: the image that sampled ends at an exec.  No destructor
 * runs, so without a word from us the collector would see no EXIT and
 * keep the old image's live heap in use under the new comm.  Just before
 * the real call, if this process has sent anything, the shim submits
 * KPPROF_REC_COMM with reason KPPROF_COMM_EXEC; the collector ends the old
 * image there.  If the exec then fails, the process goes on as a fresh
 * image: COMM START, and its mappings again before its next stack record
 * (the blocks it sampled before are gone from the profile with the old
 * image; their FREEs are ignored).
 *
 * The variadic execl* are rebuilt as argv arrays (on the stack, as glibc
 * does) and passed to the real execv/execvp/execve: glibc's execl* call
 * execve internally, so wrapping execve alone would miss them.  A vfork
 * child that execs sends nothing (before_exec).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>
#include "shim.h"

/*
 * The real functions, found at start with the other next definitions
 * (real.c), not at the first call: a child of _Fork() or clone() in a
 * threaded parent may inherit the loader's lock held by another thread,
 * and its exec would hang in dlsym.
 */
enum { R_EXECVE, R_EXECV, R_EXECVP, R_EXECVPE, R_FEXECVE, R_EXECVEAT, R_N };
static const char *const real_names[R_N] = {
	"execve", "execv", "execvp", "execvpe", "fexecve", "execveat",
};
static void *_Atomic real_fn[R_N] KPP_START_DATA;
const struct kpp_next_table kpp_exec_next = { real_fn, real_names, R_N, NULL, NULL };

/* NULL: no next definition (the wrapper fails with ENOSYS) */
#define REAL(type, name) \
	__typeof__(type) real = (__typeof__(type))kpp_next_cached(&real_fn[R_##name], \
								  real_names[R_##name], NULL); \
	if (unlikely(!real)) { \
		errno = ENOSYS; \
		return -1; \
	}

/*
 * before_exec - true if an EXEC record was sent (the image ended).  A
 * _Fork/clone child says FORK first (kpp_process_check).  A vfork child
 * (or clone(CLONE_VM)) sends nothing and writes nothing: its pid names no
 * image, and the memory it runs in, counters and all, is its parent's
 * (one getpid per exec tells).
 */
static bool before_exec(void)
{
	struct kpp_thread *t = &kpp_thread;
	uint32_t guard = t->guard;
	uint64_t sent;
	bool ended = false;

	if (atomic_load(&kpp.ready) != 1 || atomic_load(&kpp.stopped) || guard)
		return false;
	t->guard = 1;
	kpp_process_check();
	/* the getpid, and a SUBMIT without a ring: the seccomp probe first */
	if (!kpp_filtered(true) && !kpp_foreign_process()) {
		sent = kpp_writes_ok();
		if (sent) {
			t->probed = 1;
			kpp_emit_comm(KPPROF_COMM_EXEC);
			t->probed = 0;
			kpp_pring_flush(false);
			ended = kpp_writes_ok() != sent;
		}
	}
	t->guard = guard;
	return ended;
}

/* after_failed_exec - still this process: start a fresh image. */
static void after_failed_exec(bool ended)
{
	struct kpp_thread *t = &kpp_thread;
	int saved = errno;
	uint32_t guard = t->guard;

	if (!ended)
		return;
	t->guard = 1;
	kpp_emit_comm(KPPROF_COMM_START);
	kpp_maps_reset();	/* sent again with the next stacks */
	t->guard = guard;
	errno = saved;
}

KPP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(int (*)(const char *, char *const[], char *const[]), EXECVE);
	bool ended = before_exec();
	int r = real(path, argv, envp);

	after_failed_exec(ended);
	return r;
}

KPP_EXPORT int execv(const char *path, char *const argv[])
{
	REAL(int (*)(const char *, char *const[]), EXECV);
	bool ended = before_exec();
	int r = real(path, argv);

	after_failed_exec(ended);
	return r;
}

KPP_EXPORT int execvp(const char *file, char *const argv[])
{
	REAL(int (*)(const char *, char *const[]), EXECVP);
	bool ended = before_exec();
	int r = real(file, argv);

	after_failed_exec(ended);
	return r;
}

KPP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(int (*)(const char *, char *const[], char *const[]), EXECVPE);
	bool ended = before_exec();
	int r = real(file, argv, envp);

	after_failed_exec(ended);
	return r;
}

KPP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(int (*)(int, char *const[], char *const[]), FEXECVE);
	bool ended = before_exec();
	int r = real(fd, argv, envp);

	after_failed_exec(ended);
	return r;
}

KPP_EXPORT int execveat(int dirfd, const char *path, char *const argv[],
			char *const envp[], int flags)
{
	REAL(int (*)(int, const char *, char *const[], char *const[], int), EXECVEAT);
	bool ended;
	int r;

	if (!real) {	/* glibc < 2.34 has none */
		errno = ENOSYS;
		return -1;
	}
	ended = before_exec();
	r = real(dirfd, path, argv, envp, flags);
	after_failed_exec(ended);
	return r;
}

/* Count the arguments after @first up to the NULL (and envp for execle). */
static size_t count_args(const char *first, va_list ap)
{
	size_t n = 1;

	if (!first)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

#define BUILD_ARGV(argv, n, first, ap) \
	do { \
		(argv)[0] = (char *)(first); \
		for (size_t i_ = 1; i_ <= (n); i_++) \
			(argv)[i_] = (i_ < (n)) ? va_arg(ap, char *) : NULL; \
	} while (0)

KPP_EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = count_args(arg, ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg);
		BUILD_ARGV(argv, n, arg, ap);
		va_end(ap);
		return execv(path, argv);
	}
}

KPP_EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = count_args(arg, ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg);
		BUILD_ARGV(argv, n, arg, ap);
		va_end(ap);
		return execvp(file, argv);
	}
}

KPP_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	va_list ap;
	size_t n;

	va_start(ap, arg);
	n = count_args(arg, ap);
	va_end(ap);
	{
		char *argv[n + 1];

		va_start(ap, arg);
		BUILD_ARGV(argv, n, arg, ap);
		if (n)
			(void)va_arg(ap, char *);	/* the NULL */
		envp = va_arg(ap, char *const *);
		va_end(ap);
		return execve(path, argv, envp);
	}
}
